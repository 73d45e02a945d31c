#!/bin/bash
# Two builds of the reassembly bench compared on the handover rows, in
# alternating runs (A, B, A, B, ...), as bench/results/README.md reports
# variants: this host is shared and noisy, so only ratios to DPDK from the
# same run are compared, and each build's spread over the runs is shown.
#
#   bench/defrag_ab.sh A B [PAIRS] [RUNS]
#
# A, B: rxpath-bench-defrag binaries (copy each build aside first);
# PAIRS: alternations (default 5); RUNS: the bench's --runs (5-64, default
# 5).
# Each bench run takes about 10 s (RXP_BENCH_NO_INSTR=1: no callgrind).
# Prints, for each build and headline row, the ratio to DPDK (DPDK's
# ns/fragment over rxpath's; higher is better for rxpath) as min-max and
# median over the runs, then each run's ratios.
set -euo pipefail
a=${1:?usage: defrag_ab.sh A B [PAIRS] [RUNS]}
b=${2:?usage: defrag_ab.sh A B [PAIRS] [RUNS]}
pairs=${3:-5}
runs=${4:-5}
for x in "$a" "$b"; do
	[ -x "$x" ] || { echo "defrag_ab: $x is not an executable" >&2; exit 2; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for i in $(seq 1 "$pairs"); do
	for s in a b; do
		bin=$a
		[ $s = b ] && bin=$b
		RXP_BENCH_HEADLINE=1 RXP_BENCH_NO_INSTR=1 "$bin" --runs "$runs" \
			--outdir "$tmp/$s.$i" >/dev/null 2>"$tmp/$s.$i.err" ||
			{ echo "defrag_ab: $bin failed:" >&2; cat "$tmp/$s.$i.err" >&2; exit 1; }
	done
done
/usr/bin/env python3 - "$tmp" "$pairs" "$a" "$b" <<'EOF'
import csv, statistics, sys

tmp, pairs, names = sys.argv[1], int(sys.argv[2]), {'a': sys.argv[3], 'b': sys.argv[4]}
runs = {}
for s in 'ab':
    for i in range(1, pairs + 1):
        rows = [r for r in csv.DictReader(open('%s/%s.%d/defrag.csv' % (tmp, s, i)))
                if r['variant'] == 'rxpath ns/frag']
        if not rows or any(float(r['ratio_to_baseline']) <= 0 for r in rows):
            sys.exit('defrag_ab: no DPDK ratio in the bench output (built without DPDK?)')
        runs.setdefault(s, []).append([(r['group'], float(r['ratio_to_baseline'])) for r in rows])
groups = [g for g, _ in runs['a'][0]]
for s in 'ab':
    print('%s: %s' % (s.upper(), names[s]))
print('%-36s %-24s %-24s' % ('row (ratio to DPDK)', 'A: min-max (median)', 'B: min-max (median)'))
for k, g in enumerate(groups):
    cells = []
    for s in 'ab':
        v = [run[k][1] for run in runs[s]]
        cells.append('%.2f-%.2fx (%.2fx)' % (min(v), max(v), statistics.median(v)))
    print('%-36s %-24s %-24s' % (g, cells[0], cells[1]))
print('each run, in order:')
for i in range(pairs):
    for s in 'ab':
        print('  %s%-3d %s' % (s.upper(), i + 1, ' '.join('%.2fx' % r for _, r in runs[s][i])))
EOF
