#!/bin/bash
# AF_XDP and AF_PACKET devices on a veth inside a namespace: the kernel in
# another namespace sends UDP datagrams (some fragmented at MTU 1500), and
# every frame it sent must arrive byte-identical through each device.
# The oracle is dumpcap on the sender's side of the veth.
# Namespaces and links use the prefix rxp3; all are removed on exit.
set -u
# How a kernel that gives no AF_XDP here says so (EAFNOSUPPORT, EOPNOTSUPP,
# EPERM, EACCES, ENOSYS: no XDP sockets, no right to them, no bpf()): that
# part is skipped. Any other failure to start is rxpath's.
AFXDP_UNAVAILABLE="not supported|not permitted|Permission denied|Function not implemented"
RXPATH=${RXPATH:-$(dirname "$0")/../../build/release/rxpath}
PY=/usr/bin/python3
N=${RXP_NETNS_DATAGRAMS:-300}

if [ "$(id -u)" != 0 ]; then echo "SKIP: needs root"; exit 77; fi
for t in ip dumpcap "$PY"; do
	command -v "$t" >/dev/null || { echo "SKIP: $t missing"; exit 77; }
done
"$PY" -c 'import scapy' 2>/dev/null || { echo "SKIP: python3-scapy missing"; exit 77; }
[ -x "$RXPATH" ] || { echo "SKIP: $RXPATH not built"; exit 77; }

S=rxp3s$$ R=rxp3r$$
TMP=$(mktemp -d /tmp/rxp3.XXXXXX)
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	ip netns del "$S" 2>/dev/null
	ip netns del "$R" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT

ip netns add "$S" && ip netns add "$R" || { echo "SKIP: cannot create namespaces"; exit 77; }
ip link add rxp3s0 netns "$S" type veth peer name rxp3r0 netns "$R" || {
	echo "SKIP: cannot create veth"; exit 77; }
for ns in "$S" "$R"; do
	ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1
	ip netns exec "$ns" sysctl -qw net.ipv6.conf.default.disable_ipv6=1
done
ip -n "$S" addr add 10.203.0.1/24 dev rxp3s0
ip -n "$R" addr add 10.203.0.2/24 dev rxp3r0
ip -n "$S" link set rxp3s0 up
ip -n "$R" link set rxp3r0 up
ip -n "$S" link set lo up
ip -n "$R" link set lo up
MAC=$(ip -n "$R" -o link show rxp3r0 | grep -o 'link/ether [0-9a-f:]*' | cut -d' ' -f2)
# No ARP: with AF_XDP taking every frame the receiver's stack never answers.
ip -n "$S" neigh replace 10.203.0.2 lladdr "$MAC" dev rxp3s0 nud permanent

send() { # $1 = seed
	ip netns exec "$S" "$PY" - "$1" "$N" <<'PYEOF'
import random, socket, sys, time
rnd = random.Random(int(sys.argv[1]))
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(int(sys.argv[2])):
    n = rnd.choice([rnd.randint(1, 200), rnd.randint(1, 1472), rnd.randint(1473, 6000)])
    s.sendto(bytes(rnd.getrandbits(8) for _ in range(n)), ("10.203.0.2", 9999))
    if i % 32 == 31:
        time.sleep(0.002)
PYEOF
}

compare() { # sent.pcap got.pcap label [any-order]
	"$PY" - "$@" <<'PYEOF'
import sys
from scapy.all import rdpcap, IP
def udp_frames(path):
    return [bytes(p) for p in rdpcap(path) if IP in p and p[IP].dst == "10.203.0.2" and p[IP].proto == 17]
sent, got = udp_frames(sys.argv[1]), udp_frames(sys.argv[2])
if len(sys.argv) > 4:  # several queues: each keeps its order, the file interleaves them
    sent, got = sorted(sent), sorted(got)
if not sent:
    print(sys.argv[3], "FAIL: the sender capture is empty"); sys.exit(1)
if sent != got:
    missing = len([f for f in sent if f not in got])
    print(sys.argv[3], "FAIL: sent %d frames, got %d, %d missing or different" % (len(sent), len(got), missing))
    sys.exit(1)
print(sys.argv[3], "ok: %d frames byte-identical" % len(sent))
PYEOF
}

rc=0
seed=1
for run in afpacket afxdp afpacket:2; do
	mode=${run%%:*}
	queues=1
	[ "$run" != "$mode" ] && queues=${run#*:}
	mode_q=$mode-q$queues
	seed=$((seed + 1))
	ip netns exec "$S" dumpcap -q -i rxp3s0 -f "udp or (ip[6:2] & 0x1fff != 0)" -w "$TMP/sent-$mode_q.pcap" -P >/dev/null 2>&1 &
	PIDS+=($!)
	dpid=$!
	ip netns exec "$R" "$RXPATH" capture --iface rxp3r0 --mode "$mode" --queues "$queues" --write "$TMP/got-$mode_q.pcap" \
		--idle-ms 1500 --timeout-ms 60000 >"$TMP/cap-$mode_q.log" 2>&1 &
	PIDS+=($!)
	cpid=$!
	for _ in $(seq 50); do grep -q ready "$TMP/cap-$mode_q.log" && break; sleep 0.1; done
	if ! grep -q ready "$TMP/cap-$mode_q.log"; then
		cat "$TMP/cap-$mode_q.log"
		# a kernel without AF_XDP (or without the right to use it) is
		# skipped; any other failure to start is rxpath's
		if [ "$mode" = afxdp ] && grep -qE "$AFXDP_UNAVAILABLE" "$TMP/cap-$mode_q.log"; then
			echo "SKIP-PART: AF_XDP unavailable here"; kill $cpid $dpid 2>/dev/null; continue
		fi
		kill $cpid $dpid 2>/dev/null
		echo "FAIL: $mode capture did not start"; rc=1; continue
	fi
	sleep 0.5
	send "$seed"
	wait $cpid
	crc=$?
	sleep 0.3
	kill -INT $dpid 2>/dev/null
	wait $dpid 2>/dev/null
	cat "$TMP/cap-$mode_q.log"
	[ $crc = 0 ] || { echo "FAIL: $mode capture exited $crc"; rc=1; }
	if [ "$queues" = 1 ]; then
		compare "$TMP/sent-$mode_q.pcap" "$TMP/got-$mode_q.pcap" "$mode" || rc=1
	else
		compare "$TMP/sent-$mode_q.pcap" "$TMP/got-$mode_q.pcap" "$mode x$queues (fanout)" any || rc=1
	fi
done
exit $rc
