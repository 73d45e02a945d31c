#!/bin/bash
# rxpath defrag --kernel against this machine's Linux kernel on both sides of
# the max_dist boundary (ipfrag_max_dist 64): groups of R interleaved
# two-fragment datagrams from one source (tests/tools/defrag_kdiff.py
# maxdist), R = 16, 63, 64, 65, 80, sent from namespace rxp5a over a veth
# into rxp5b, where a UDP socket records what the kernel delivers. The same
# frames go through `rxpath defrag --kernel` as a pcap: per datagram, both
# must agree, the kernel must deliver the groups with R <= 64 and lose those
# past it (else the test proves nothing), and the file profile (no
# max_dist) must deliver every datagram. Needs root, ip, /usr/bin/python3
# with scapy; exits 77 otherwise. Run it under flock /tmp/rxpath-netns.lock.
set -u -o pipefail
RXPATH=${RXPATH:-$(dirname "$0")/../../build/release/rxpath}
SRC=${RXP_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
PY=/usr/bin/python3
K="$SRC/tests/tools/defrag_kdiff.py"
if [ "$(id -u)" != 0 ]; then echo "SKIP: needs root"; exit 77; fi
if ! command -v ip >/dev/null; then echo "SKIP: ip missing"; exit 77; fi
if ! $PY -c 'import scapy' 2>/dev/null; then echo "SKIP: scapy missing in $PY"; exit 77; fi
A=rxp5a B=rxp5b
T=$(mktemp -d)
RPID=
cleanup() {
	[ -n "$RPID" ] && kill "$RPID" 2>/dev/null
	ip netns del $A 2>/dev/null
	ip netns del $B 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
ip netns del $A 2>/dev/null; ip netns del $B 2>/dev/null
ip netns add $A && ip netns add $B || { echo "SKIP: cannot create namespaces"; exit 77; }
ip link add rxp5a0 netns $A type veth peer name rxp5b0 netns $B || { echo "SKIP: no veth"; exit 77; }
ip -n $A link set rxp5a0 address 02:99:00:00:00:01 mtu 9000
ip -n $B link set rxp5b0 address 02:99:00:00:00:02 mtu 9000
ip -n $A addr add 10.99.0.1/24 dev rxp5a0
ip -n $B addr add 10.99.0.2/24 dev rxp5b0
ip -n $A link set lo up; ip -n $B link set lo up
ip -n $A link set rxp5a0 up; ip -n $B link set rxp5b0 up
ip netns exec $B sysctl -qw net.ipv4.ipfrag_high_thresh=268435456
ip netns exec $B sysctl -qw net.ipv4.ipfrag_time=30 net.ipv4.ipfrag_max_dist=64

$PY "$K" maxdist "$T" 2>/dev/null | tail -1 || exit 1
ip netns exec $B $PY "$K" recv "$T/kernel.txt" &
RPID=$!
for _ in $(seq 100); do [ -e "$T/ready" ] && break; sleep 0.1; done
ip netns exec $A $PY "$K" send "$T" rxp5a0 2>"$T/send.err" | tail -1 ||
	{ echo "FAIL: send"; tail -3 "$T/send.err"; exit 1; }
touch "$T/sent"
wait "$RPID"
RPID=
fail=0
"$RXPATH" defrag --kernel --mem-limit 64m "$T/streams.pcap" "$T/rxpath.pcap" 2>"$T/err" || exit 1
$PY "$K" compare "$T" 2>/dev/null | tee "$T/cmp" | head -7
grep -q "288/288 streams agree" "$T/cmp" || { echo "FAIL: rxpath --kernel and the kernel disagree"; fail=1; }
for r in 16 63 64; do
	grep -q "maxdist_$r  *$r/$r" "$T/cmp" || fail=1
done
# the kernel itself: groups up to 64 delivered, past it lost
kern=$(cut -d' ' -f2 "$T/kernel.txt" | sort -u | wc -l)
[ "$kern" -eq $((16 + 63 + 64)) ] && echo "ok: the kernel delivered the $kern datagrams of R <= 64 and none past it" ||
	{ echo "FAIL: the kernel delivered $kern datagrams (want $((16 + 63 + 64)))"; fail=1; }
grep -q "lost to max_dist: $((65 + 80)) datagrams flushed (--max-dist 64): --max-dist 0 keeps them" "$T/err" &&
	echo "ok: --kernel says what max_dist lost" || { echo "FAIL: no max_dist loss line"; cat "$T/err"; fail=1; }
# the file profile keeps everything
"$RXPATH" defrag --json "$T/streams.pcap" "$T/all.pcap" >"$T/j" 2>/dev/null
n=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["ReasmOKs"])' "$T/j")
[ "$n" -eq 288 ] && echo "ok: the file profile reassembles all 288" || { echo "FAIL: file profile $n"; fail=1; }
exit $fail
