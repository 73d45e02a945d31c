#!/bin/bash
# Differential test: rxpath's strict reassembly against this machine's Linux
# kernel. RXP_KDIFF_STREAMS (default 2000) random adversarial fragment
# streams (tests/tools/defrag_kdiff.py) are sent from namespace rxp4a over a
# veth into rxp4b, where a UDP socket records what the kernel delivers; the
# same frames go through `rxpath defrag` as a pcap. Per stream, the datagrams
# delivered (none, or which payloads) must agree 100%; the count is printed.
# Needs root, ip, /usr/bin/python3 with scapy; exits 77 otherwise.
set -u -o pipefail
RXPATH=${RXPATH:-$(dirname "$0")/../../build/release/rxpath}
SRC=${RXP_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
PY=/usr/bin/python3
N=${RXP_KDIFF_STREAMS:-2000}
SEED=${RXP_SEED:-$(date +%s)}
if [ "$(id -u)" != 0 ]; then echo "SKIP: needs root"; exit 77; fi
if ! command -v ip >/dev/null; then echo "SKIP: ip missing"; exit 77; fi
if ! $PY -c 'import scapy' 2>/dev/null; then echo "SKIP: scapy missing in $PY"; exit 77; fi
A=rxp4a B=rxp4b
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
ip link add rxp4a0 netns $A type veth peer name rxp4b0 netns $B || { echo "SKIP: no veth"; exit 77; }
ip -n $A link set rxp4a0 address 02:99:00:00:00:01 mtu 9000
ip -n $B link set rxp4b0 address 02:99:00:00:00:02 mtu 9000
ip -n $A addr add 10.99.0.1/24 dev rxp4a0
ip -n $B addr add 10.99.0.2/24 dev rxp4b0
ip -n $A addr add fd99::1/64 dev rxp4a0 nodad
ip -n $B addr add fd99::2/64 dev rxp4b0 nodad
ip -n $A link set lo up; ip -n $B link set lo up
ip -n $A link set rxp4a0 up; ip -n $B link set rxp4b0 up
# Kernel side as rxpath's defaults, except memory: streams use unique keys
# and leave incomplete queues behind, which must not push either side over
# its cap (rxpath gets --mem-limit 64m).
ip netns exec $B sysctl -qw net.ipv4.ipfrag_high_thresh=268435456
ip netns exec $B sysctl -qw net.ipv6.ip6frag_high_thresh=268435456
ip netns exec $B sysctl -qw net.ipv4.ipfrag_time=30 net.ipv6.ip6frag_time=60
ip netns exec $B sysctl -qw net.ipv4.ipfrag_max_dist=64


echo "seed $SEED (replay with RXP_SEED=$SEED), $N streams"
$PY "$SRC/tests/tools/defrag_kdiff.py" gen "$N" "$SEED" "$T" 2>/dev/null | tail -1 || exit 1
ip netns exec $B $PY "$SRC/tests/tools/defrag_kdiff.py" recv "$T/kernel.txt" &
RPID=$!
for _ in $(seq 100); do [ -e "$T/ready" ] && break; sleep 0.1; done
ip netns exec $A $PY "$SRC/tests/tools/defrag_kdiff.py" send "$T" rxp4a0 2>"$T/send.err" | tail -1 || { echo "FAIL: send"; tail -3 "$T/send.err"; exit 1; }
touch "$T/sent"
wait "$RPID"
RPID=
"$RXPATH" defrag --kernel --mem-limit 64m "$T/streams.pcap" "$T/rxpath.pcap" || exit 1
$PY "$SRC/tests/tools/defrag_kdiff.py" compare "$T" 2>/dev/null
rc=$?
[ -n "${RXP_KDIFF_DEBUG:-}" ] && { ip netns exec $B nstat -a 2>/dev/null | grep -Ei "reasm|udp|frag|InDis|Drop|Err" ; cp -r "$T" /tmp/kdiff_debug; }
exit $rc
