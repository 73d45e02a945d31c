#!/bin/bash
# rxpath defrag on a large plain pcap file, which it maps: a fragment held
# for reassembly references its bytes in the mapping instead of a copy
# (dfr_frames_set_refs), and the mapping lets go of each 2 MiB region of
# the file once nothing references it. One fragment at the start that
# never completes holds its region to the end; the rest of the file must
# still be let go as it is read:
# - 30,000 datagrams of 4 fragments (169 MB, 1,000 in flight) after that
#   fragment all come out, and the one is given up at the end;
# - OUT is byte for byte what rxpath writes reading the same file from
#   stdin, where every fragment is copied; so with --keep-incomplete,
#   whose kept fragment is rebuilt from its references;
# - the peak resident set is within 24 MB of the same file's without the
#   held fragment (letting go only up to the first held region kept
#   nearly all of the file resident: 185 MB against 38 MB);
# - with one such fragment every 370 datagrams (one per region), what
#   references hold of the file stays within --mem-limit (16m): the peak
#   resident set is within 24 MB of the plain file's again, and OUT as
#   from stdin;
# - on ext4 or XFS, where OUT's blocks are reserved for IN's size first,
#   the ones OUT did not use are let go: it holds no more blocks than its
#   size needs (the plain run's OUT is 4 MB smaller than IN).
# Needs /usr/bin/python3 only.
set -u
RXPATH=${RXPATH:-$(dirname "$0")/../../build/release/rxpath}
SRC=${RXP_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
PY=/usr/bin/python3
GEN="$SRC/tests/tools/gen_flight_big.py"
N=30000
T=$(mktemp -d)
. "$SRC/tests/tools/sanitizer.sh"
rxpt_sanitizer_log "$T"
trap 'rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
ok() { echo "ok: $*"; }
D() { "$RXPATH" defrag --mem-limit 256m "$@"; }
# peak RSS of a command, in MB; its output to $T/stdout
rss() {
	$PY -c 'import resource, subprocess, sys
r = subprocess.run(sys.argv[2:], stdout=open(sys.argv[1], "w"), stderr=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024 if r.returncode == 0 else -1)' \
		"$T/stdout" "$@"
}
jget() { $PY -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$@"; }

$PY "$GEN" "$T/plain.pcap" $N 1000 0 && $PY "$GEN" "$T/held.pcap" $N 1000 1 ||
	{ echo "FAIL: gen"; exit 1; }
base=$(rss "$RXPATH" defrag --mem-limit 256m --json "$T/plain.pcap" "$T/o_plain.pcap")
held=$(rss "$RXPATH" defrag --mem-limit 256m --json "$T/held.pcap" "$T/o_held.pcap")
cp "$T/stdout" "$T/j_held"
if [ "${base:--1}" -lt 0 ] || [ "${held:--1}" -lt 0 ]; then
	bad "rxpath defrag failed"
else
	r=$(jget "$T/j_held" 'd["reassembled"]')
	g=$(jget "$T/j_held" 'd["given_up"].get("end_of_input", 0)')
	[ "$r" -eq $N ] && [ "$g" -eq 1 ] && ok "held: $r datagrams reassembled, $g given up at the end" ||
		bad "held: $r reassembled (want $N), $g given up at the end (want 1)"
	[ "$held" -le $((base + 24)) ] && ok "peak RSS $held MB with a fragment held, $base MB without" ||
		bad "peak RSS $held MB with a fragment held, $base MB without: the mapping was not let go"
fi
$PY "$GEN" "$T/sparse.pcap" $N 1000 370 || { echo "FAIL: gen"; exit 1; }
sparse=$(rss "$RXPATH" defrag --mem-limit 16m --json "$T/sparse.pcap" "$T/o_sparse.pcap")
cp "$T/stdout" "$T/j_sparse"
if [ "${sparse:--1}" -lt 0 ]; then
	bad "rxpath defrag failed on sparse"
else
	r=$(jget "$T/j_sparse" 'd["reassembled"]')
	g=$(jget "$T/j_sparse" 'd["given_up"].get("end_of_input", 0)')
	[ "$r" -eq $N ] && [ "$g" -eq 82 ] &&
		ok "sparse: $r datagrams reassembled, $g given up at the end" ||
		bad "sparse: $r reassembled (want $N), $g given up at the end (want 82)"
	[ "$sparse" -le $((base + 24)) ] &&
		ok "peak RSS $sparse MB with a fragment held every 2 MiB, --mem-limit 16m" ||
		bad "peak RSS $sparse MB with a fragment held every 2 MiB, --mem-limit 16m ($base MB plain): references held more than the cap"
fi
"$RXPATH" defrag --mem-limit 16m - "$T/o_sparse_stdin.pcap" <"$T/sparse.pcap" 2>/dev/null ||
	bad "sparse from stdin: exit $?"
cmp -s "$T/o_sparse.pcap" "$T/o_sparse_stdin.pcap" && ok "sparse: OUT as from stdin" ||
	bad "sparse: OUT differs from the stdin run's"
D - "$T/o_stdin.pcap" <"$T/held.pcap" 2>/dev/null || bad "held from stdin: exit $?"
cmp -s "$T/o_held.pcap" "$T/o_stdin.pcap" && ok "OUT as from stdin (every fragment copied)" ||
	bad "OUT differs from the stdin run's"
D --keep-incomplete "$T/held.pcap" "$T/o_keep.pcap" 2>/dev/null || bad "--keep-incomplete: exit $?"
D --keep-incomplete - "$T/o_keep_stdin.pcap" <"$T/held.pcap" 2>/dev/null ||
	bad "--keep-incomplete from stdin: exit $?"
cmp -s "$T/o_keep.pcap" "$T/o_keep_stdin.pcap" && [ -s "$T/o_keep.pcap" ] &&
	ok "--keep-incomplete: OUT as from stdin" || bad "--keep-incomplete: OUT differs from the stdin run's"
# the blocks reserved for OUT and not used are let go (ext4, XFS)
case $(stat -f -c %t "$T") in
ef53 | 58465342)
	sync "$T/o_plain.pcap"
	used=$(($(stat -c '%b * %B' "$T/o_plain.pcap")))
	size=$(stat -c %s "$T/o_plain.pcap")
	insize=$(stat -c %s "$T/plain.pcap")
	[ "$used" -le $((size + 1048576)) ] && [ "$size" -lt "$insize" ] &&
		ok "OUT holds $used bytes of blocks for $size bytes (IN $insize)" ||
		bad "OUT holds $used bytes of blocks for $size bytes: the reservation for IN's $insize stayed"
	;;
*) echo "skip: OUT's blocks (not ext4 or XFS)" ;;
esac
[ $fail -eq 0 ] && echo "defrag_mapped: all passed"
rxpt_sanitizer_reports "$T" || fail=1
exit $fail
