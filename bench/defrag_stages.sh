#!/bin/bash
# The handover rows' cost by stage (parse, lookup, insert, complete, free),
# in callgrind instructions per fragment, rxpath and DPDK on one stream:
#
#   bench/defrag_stages.sh [BENCH] [STREAM] [INFLIGHT]
#
# BENCH: rxpath-bench-defrag (default build/release/rxpath-bench-defrag);
# STREAM: 0 IPv4 2 in order, 1 IPv4 4 shuffled, 2 IPv4 8 shuffled, 3 IPv6 8
# shuffled (default 1); INFLIGHT: datagrams in flight (default 64).
#
# Each side runs once under callgrind, collecting inside the timed function
# (ho_rx_burst, ho_dp_burst: reassembly and freeing the result). rxpath is
# built with LTO, so its functions are mostly inlined into one: each
# instruction is given to the source function its line lies in (callgrind's
# per-line costs with the inlined file), and functions map to stages by the
# table below. Debian's DPDK library has no symbols for its static
# functions, so its stages come from the call graph, whose shape is DPDK
# 22.11's lib/ip_frag: rte_ipv{4,6}_frag_reassemble_packet (parse) calls
# ip_frag_find (lookup; it calls ip_frag_lookup) and then ip_frag_process
# (insert; it calls ipv{4,6}_frag_reassemble on the last fragment:
# complete); rte_pktmbuf_free and the death row are free.
# SIDES="r" or "d" runs one side; RXP_STAGES_DETAIL=insert,complete (any
# stages) also lists rxpath's source functions within each;
# RXP_STAGES_MAP=from=to reads a binary's sources under to when they have
# moved from from (another commit's tree).
set -euo pipefail
bench=${1:-build/release/rxpath-bench-defrag}
stream=${2:-1}
nd=${3:-64}
src=$(cd "$(dirname "$0")/.." && pwd)
command -v valgrind >/dev/null || { echo "defrag_stages: no valgrind" >&2; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for side in ${SIDES:-r d}; do
	fn=ho_rx_burst
	[ $side = d ] && fn=ho_dp_burst
	# (DPDK on 4 KiB pages: its EAL cannot map hugepages under valgrind)
	RXP_BENCH_DPDK_NO_HUGE=1 RXP_BENCH_HO=$stream,$nd,$side valgrind --tool=callgrind --toggle-collect=$fn \
		--callgrind-out-file="$tmp/cg.$side" "$bench" >"$tmp/out.$side" 2>/dev/null ||
		{ echo "defrag_stages: side $side failed (no DPDK?)" >&2; rm -f "$tmp/cg.$side"; }
done
/usr/bin/python3 - "$src" "$tmp" <<'EOF'
import os, re, sys
from collections import defaultdict

src, tmp = sys.argv[1], sys.argv[2]

# rxpath source functions by stage; anything else in src/net is "other".
STAGES = {
    # (the fast path's fast_v4/fast_v6 read the header and compare the
    # slot's key in one function: counted as parse)
    'parse': r'^(rxp_defrag|rxp_defrag_zone|entry|classify|dfr_ipv4_parse|dfr_ipv6_parse|'
             r'ipv4_csum.*|csum.*|rd|upper_complete|zone_scoped|too_big|rxp_ip_hlen|rxp_csum.*|'
             r'dfr_frag_runs|dfr_frag_policy|dfr_watching|dfr_ev_.*|__bswap_.*|'
             r'fast_v4|fast_v6|key4_of|key6_of|be16_at|frag_general)$',
    'lookup': r'^(dfr_key_hash|key_eq|key4_words|bucket|slot_index|dfr_lookup.*|lookup.*|find.*|'
              r'queue_new|queue_get|queue_make.*|queue_init|queue_clear_line|arm|dfr_find.*|'
              r'src_.*|max_dist_check|slot_.*|hash.*|dfr_queue_new|queue_take|dfr_fifo_of|'
              r'dfr_slot_of|dfr_slot6_mix)$',
    'insert': r'^(frag_in|accepted|account|end_ok|ends_ok|copy_out|dfr_runs_insert|small_place|small_full|small_test|'
              r'small_start|append_run|tree_insert|run_.*|small_to_tree|dfr_pressure|room|'
              r'rxp_pkt_truesize|dfr_charge.*|dfr_completes|dfr_completes_at|dfr_gap_note|'
              r'dfr_fits|ecn_combine|fast_take|fast_ok|dfr_tombs_live|dfr_has_free|v4_load|v4_mask|v4_with|'
              r'dfr_note_frag|runs_insert|notes_start|notes_place|notes_meet|notes_hit)$',
    'complete': r'^(dfr_finish|runs_build|runs_take_all|notes_to_runs|small_order|v4_count|list_from_tail|run_head|'
                r'frag_home|v8_count|dfr_frags_home|_mm_packs_epi16|_mm_movemask_epi8|'
                r'queue_unlink|queue_release|rxp_pkt_coalesce.*|coalesce.*|'
                r'rxp_pkt_add_.*|dfr_ipv6_strip|strip|fix_header.*|finish.*|dfr_ipv[46]_finish|dfr_prefetch_frags)$',
}

def parse_funcs(path):
    """(start line, name) of each function definition in a C file."""
    out = []
    try:
        lines = open(path, errors='replace').read().split('\n')
    except OSError:
        return out
    for i, l in enumerate(lines):
        if not l or l[0] in ' \t#/*}{' or l.rstrip().endswith(';'):
            continue
        l = re.sub(r'__attribute__\s*\(\(.*?\)\)', '', l)
        m = re.search(r'\b([A-Za-z_]\w*)\s*\(', l)
        if not m or m.group(1) in ('if', 'while', 'for', 'switch', 'return', 'sizeof'):
            continue
        j = i
        while j < len(lines) and j < i + 8 and '{' not in lines[j] and not lines[j].rstrip().endswith(';'):
            j += 1
        if j < len(lines) and lines[j].startswith('{') or (j < len(lines) and lines[j].rstrip().endswith('{') and ';' not in lines[j]):
            out.append((i + 1, m.group(1)))
    return out

fcache = {}
# RXP_STAGES_MAP=from=to: read the sources of a binary built elsewhere
# (or from another commit) under to instead of from.
smap = os.environ.get('RXP_STAGES_MAP', '').split('=', 1)
def func_of(file, line):
    if len(smap) == 2 and file.startswith(smap[0]):
        file = smap[1] + file[len(smap[0]):]
    if file not in fcache:
        fcache[file] = parse_funcs(file)
    name = None
    for start, n in fcache[file]:
        if start <= line:
            name = n
        else:
            break
    return name

def load(path):
    """Self cost per (object, file, fn, line); call edges with inclusive cost."""
    names = {'fl': {}, 'fn': {}, 'ob': {}}
    self_cost = defaultdict(int)
    calls = defaultdict(lambda: [0, 0])  # (caller fn, callee fn) -> [count, incl]
    ob = fl = fi = fn = cfn = None
    line = 0
    pending = None
    def name(kind, v):
        m = re.match(r'\((\d+)\)(?: (.*))?', v)
        if not m:
            return v
        if m.group(2) is not None:
            names[kind][m.group(1)] = m.group(2)
        return names[kind].get(m.group(1), v)
    for raw in open(path, errors='replace'):
        raw = raw.rstrip('\n')
        if not raw:
            continue
        c = raw[0]
        if c.isdigit() or c in '+-*':
            parts = raw.split()
            p = parts[0]
            if p == '*':
                pass
            elif p[0] in '+-':
                line += int(p)
            else:
                line = int(p)
            cost = int(parts[1]) if len(parts) > 1 else 0
            if pending is not None:
                calls[(fn, cfn)][0] += pending
                calls[(fn, cfn)][1] += cost
                pending = None
            else:
                self_cost[(ob, fi or fl, fn, line)] += cost
            continue
        k, _, v = raw.partition('=')
        if k == 'ob':
            ob = name('ob', v)
        elif k == 'fl':
            fl = name('fl', v); fi = None
        elif k in ('fi', 'fe'):
            fi = name('fl', v)
        elif k == 'fn':
            fn = name('fn', v); fi = None
        elif k in ('cob', 'cfi', 'cfl'):
            name('ob' if k == 'cob' else 'fl', v)
        elif k == 'cfn':
            cfn = name('fn', v)
        elif k == 'calls':
            pending = int(v.split()[0])
    return self_cost, calls

def frags(side):
    for l in open(os.path.join(tmp, 'out.' + side)):
        if l.startswith('frags '):
            return int(l.split()[1])
    return 0

by_fn = defaultdict(lambda: defaultdict(int))

def rx_split():
    sc, _ = load(os.path.join(tmp, 'cg.r'))
    st = defaultdict(int)
    other = defaultdict(int)
    for (ob, file, fn, line), cost in sc.items():
        f = func_of(file, line) if file and file.startswith('/') else None
        stage = None
        if file and ('/src/buf/' in file or '/internal/pool.h' in file or 'pkt.h' in file or
                     'thread.h' in file or 'page.h' in file):
            # pool and packet code: freeing, except the coalescing of
            # fragments into the datagram (complete)
            stage = 'complete' if (f or '').startswith(('rxp_pkt_coalesce', 'coalesce')) or \
                'pkt_coalesce.c' in file else 'free'
        elif file and file.endswith('bench/defrag_handover.c'):
            stage = 'bench loop'
        else:
            for s, rx in STAGES.items():
                if f and re.match(rx, f):
                    stage = s
                    break
        if stage is None:
            stage = 'other'
            other['%s:%s' % (os.path.basename(file or '?'), f or fn)] += cost
        st[stage] += cost
        by_fn[stage]['%s:%s' % (os.path.basename(file or '?'), f or fn)] += cost
    return st, other

def dp_split():
    sc, calls = load(os.path.join(tmp, 'cg.d'))
    selfc = defaultdict(int)
    for (ob, file, fn, line), cost in sc.items():
        selfc[fn] += cost
    incl = {}
    def inclusive(f, seen=()):
        if f in incl:
            return incl[f]
        t = selfc[f] + sum(v[1] for (a, b), v in calls.items() if a == f and b != f)
        incl[f] = t
        return t
    st = defaultdict(int)
    entry = [f for f in selfc if f and re.match(r'rte_ipv[46]_frag_reassemble_packet', f)]
    for e in entry:
        st['parse'] += selfc[e]
        for (a, b), (cnt, inc) in calls.items():
            if a != e:
                continue
            sub = [(bb, v) for (aa, bb), v in calls.items() if aa == b]
            # ip_frag_find calls ip_frag_lookup for every fragment;
            # ip_frag_process calls the reassembly for the last ones
            if sub and all(v[0] == cnt for _, v in sub):
                st['lookup'] += inc
            else:
                st['insert'] += selfc[b]
                for bb, v in sub:
                    st['complete'] += v[1]
    for f in selfc:
        if f and ('free' in f or 'mempool' in f):
            st['free'] += selfc[f]
    st['bench loop'] = sum(selfc.values()) - sum(st.values())
    return st

order = ['parse', 'lookup', 'insert', 'complete', 'free', 'bench loop', 'other']
rows = {}
if os.path.exists(os.path.join(tmp, 'cg.r')):
    rows['rxpath'], other = rx_split()
    n = frags('r')
    print('rxpath, %d fragments' % n)
if os.path.exists(os.path.join(tmp, 'cg.d')):
    rows['dpdk-22.11'] = dp_split()
print('%-12s' % 'stage' + ''.join('%14s' % k for k in rows))
nfr = {k: frags('r' if k == 'rxpath' else 'd') for k in rows}
for s in order + ['total']:
    vals = [(sum(v.values()) if s == 'total' else v.get(s, 0)) / max(nfr[k], 1) for k, v in rows.items()]
    if s in ('other', 'bench loop') and not any(vals):
        continue
    print('%-12s' % s + ''.join('%14.1f' % x for x in vals))
for s in [x for x in os.environ.get('RXP_STAGES_DETAIL', '').split(',') if x]:
    if 'rxpath' in rows:
        print('rxpath %s by source function (instr/frag):' % s)
        for k, v in sorted(by_fn[s].items(), key=lambda x: -x[1])[:16]:
            print('  %-48s %6.1f' % (k, v / max(nfr['rxpath'], 1)))
if 'rxpath' in rows and other:
    print('rxpath "other" (instr/frag):', ', '.join('%s %.1f' % (k, v / max(nfr['rxpath'], 1))
          for k, v in sorted(other.items(), key=lambda x: -x[1])[:8]))
EOF
