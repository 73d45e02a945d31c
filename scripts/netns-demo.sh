#!/usr/bin/env bash
# rxpath on real traffic: two network namespaces joined by a veth pair. The
# kernel in namespace A sends fragmented UDP (a Python socket: COUNT datagrams
# of SIZE bytes over MTU 1500) to namespace B, where `rxpath run --iface`
# receives it (AF_XDP, or AF_PACKET when AF_XDP cannot bind). Then the same
# traffic is sent again with a UDP socket listening in B, so the kernel's own
# reassembly handles it, and the two are printed side by side.
# Needs root, iproute2 and python3. Everything is removed on exit, Ctrl-C too.
#   usage: scripts/netns-demo.sh [COUNT [SIZE]]   (default 2000 8000)
set -u
COUNT=${1:-2000}
SIZE=${2:-8000}
RXPATH=${RXPATH:-$(cd "$(dirname "$0")/.." && pwd)/build/release/rxpath}
PFX=${RXP_DEMO_PREFIX:-rxpdemo}
A=${PFX}a
B=${PFX}b
T=$(mktemp -d)
PIDS=()

cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	ip netns del "$A" 2>/dev/null
	ip netns del "$B" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

die() { echo "netns-demo: $*" >&2; exit "${2:-1}"; }
[ "$(id -u)" -eq 0 ] || die "needs root (network namespaces)" 77
command -v ip >/dev/null || die "needs iproute2 (ip)" 77
[ -x "$RXPATH" ] || die "no rxpath binary at $RXPATH (make release first)" 77

ip netns add "$A" && ip netns add "$B" || die "cannot create namespaces" 77
ip link add "${PFX}0" netns "$A" type veth peer name "${PFX}1" netns "$B" || die "cannot create veth" 77
ip -n "$A" addr add 10.77.0.1/24 dev "${PFX}0"
ip -n "$B" addr add 10.77.0.2/24 dev "${PFX}1"
ip -n "$A" link set "${PFX}0" up
ip -n "$B" link set "${PFX}1" up
ip -n "$A" link set lo up
ip -n "$B" link set lo up
# no ARP in the way of the first datagrams
MACB=$(ip -n "$B" -o link show "${PFX}1" | sed -n 's/.*link\/ether \([0-9a-f:]*\).*/\1/p')
ip -n "$A" neigh add 10.77.0.2 lladdr "$MACB" dev "${PFX}0" nud permanent

send() { # datagrams of SIZE bytes, numbered, from A to B port 9000
	ip netns exec "$A" python3 - "$COUNT" "$SIZE" <<'PY'
import os, socket, struct, sys, time
n, size = int(sys.argv[1]), int(sys.argv[2])
body = os.urandom(size - 16)
M = (1 << 64) - 1
def mix(h, w):
    h = ((h ^ w) * 0x9e3779b97f4a7c15) & M
    return h ^ (h >> 29)
def phash(b, seq):
    # the payload hash of src/dev/gen.c (payload_hash)
    n = len(b)
    h = [0xcbf29ce484222325 ^ seq, 0x84222325cbf29ce4 ^ n, 0x100000001b3, 0x2545f4914f6cdd1d]
    w = [x[0] for x in struct.iter_unpack("<Q", b[: n - n % 8])]
    q = len(w) // 4 * 4
    for i in range(0, q, 4):
        for k in range(4):
            h[k] = mix(h[k], w[i + k])
    for k, x in enumerate(w[q:]):
        h[k] = mix(h[k], x)
    t = mix(mix(mix(mix(h[0], h[1]), h[2]), h[3]), int.from_bytes(b[n - n % 8:], "little") ^ ((n % 8) << 56))
    return (t ^ (t >> 32)) & 0xffffffff
def payload(seq):
    # rxpath's check header (magic, seq, length, hash of the rest), so
    # `rxpath run` verifies every datagram it delivers
    return b"RXPG" + seq.to_bytes(4, "big") + size.to_bytes(4, "big") + phash(body, seq).to_bytes(4, "big") + body
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 22)
msgs = [payload(i) for i in range(n)]
for i in range(n):
    s.sendto(msgs[i], ("10.77.0.2", 9000))
    if i % 64 == 63:
        time.sleep(0.002)  # the veth peer's backlog is 1000 frames
PY
}

# ReasmReqds ReasmOKs ReasmFails of namespace B
snmp() { ip netns exec "$B" awk '/^Ip: [0-9]/ {print $15, $16, $17}' /proc/net/snmp; }

# 1. rxpath receives on B's interface
ip netns exec "$B" "$RXPATH" run --iface "${PFX}1" --workers 2 \
	--duration 600 --quiet --json >"$T/rxpath.json" 2>"$T/rxpath.err" &
RX=$!
PIDS+=("$RX")
sleep 1.5
kill -0 "$RX" 2>/dev/null || { cat "$T/rxpath.err" >&2; die "rxpath run did not start"; }
send
sleep 1
kill -INT "$RX"
wait "$RX"
RC=$?
PIDS=()
# rxpath names its backend on one line: "IF: AF_XDP, copy mode, ..." or "IF: AF_PACKET, ..."
mode=$(sed -n 's/^rxpath run: [^:]*: \(AF_XDP\|AF_PACKET\).*/\1/p' "$T/rxpath.err" | head -1)

# 2. the kernel receives on a socket, with its own reassembly
before=$(snmp)
ip netns exec "$B" python3 - "$COUNT" >"$T/kernel.txt" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 24)
s.bind(("10.77.0.2", 9000))
s.settimeout(3)
n = 0
try:
    while True:
        s.recv(65535); n += 1
except socket.timeout:
    pass
print(n)
PY
KP=$!
PIDS+=("$KP")
sleep 0.5
send
wait "$KP"
PIDS=()
after=$(snmp)

python3 - "$T/rxpath.json" "$COUNT" "$SIZE" "$(cat "$T/kernel.txt")" "$before" "$after" "$mode" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
n, size, kdel = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
b = [int(x) for x in sys.argv[5].split()]; a = [int(x) for x in sys.argv[6].split()]
rq, ok, fail = (a[i] - b[i] for i in range(3))
print(f"netns demo: {n} UDP datagrams of {size} bytes from the kernel in A, MTU 1500")
print(f"{'':26}{'rxpath (' + sys.argv[7] + ')':>18}{'kernel':>12}")
print(f"{'datagrams sent':26}{n:>18}{n:>12}")
print(f"{'datagrams delivered':26}{j['datagrams']:>18}{kdel:>12}")
print(f"{'fragments received':26}{j['reasm']['ReasmReqds']:>18}{rq:>12}")
print(f"{'reassembled (ReasmOKs)':26}{j['reasm']['ReasmOKs']:>18}{ok:>12}")
print(f"{'ReasmFails':26}{j['reasm']['ReasmFails']:>18}{fail:>12}")
print(f"{'payloads verified':26}{j['datagrams'] - j['unverified']:>18}{'-':>12}")
print(f"{'corrupted payloads':26}{j['corrupted']:>18}{'-':>12}")
print(f"{'packets/pages leaked':26}{str(j['packets_outstanding']) + '/' + str(j['pages_outstanding']):>18}{'-':>12}")
PY
cp "$T/rxpath.json" "${RXP_DEMO_JSON:-/dev/null}" 2>/dev/null
exit $RC
