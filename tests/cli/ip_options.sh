#!/bin/bash
# Fragments the kernel makes of datagrams with IP options and IPv6
# extension headers, judged three ways on one capture. Namespace rxp35a
# sends UDP datagrams to rxp35b over a veth: IPv4 with Record Route (an
# option the kernel leaves out of every fragment but the first) and with
# Router Alert (one it copies into each), IPv6 with Hop-by-Hop and
# Destination Options headers, and with Destination Options alone (without
# a Routing header Linux puts both before the fragment header, in every
# fragment). tcpdump captures the veth in
# rxp35b, whose kernel reassembles and delivers each datagram to a socket.
#   - rxpath run --pcap on the capture delivers the datagrams the kernel
#     delivered: the same count, and the same payload bytes (--write);
#   - rxpath defrag writes what tshark reassembles from it
#     (tests/tools/defrag_links.py check).
# Needs root, ip, tcpdump, tshark and scapy in /usr/bin/python3: exits 77
# without them.
set -u -o pipefail
RXPATH=${RXPATH:-$(dirname "$0")/../../build/release/rxpath}
SRC=${RXP_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
PY=/usr/bin/python3
if [ "$(id -u)" != 0 ]; then echo "SKIP: needs root (network namespaces)"; exit 77; fi
for t in ip tcpdump tshark flock; do
	command -v $t >/dev/null || { echo "SKIP: $t missing (scripts/deps.sh)"; exit 77; }
done
if ! $PY -c 'import scapy' 2>/dev/null; then echo "SKIP: scapy missing in $PY"; exit 77; fi
if [ -z "${RXP_NETNS_LOCKED:-}" ]; then
	RXP_NETNS_LOCKED=1 exec flock -w 900 /tmp/rxpath-netns.lock bash "$0" "$@"
fi
A=rxp35a B=rxp35b
T=$(mktemp -d)
RXPATH=$(cd "$(dirname "$RXPATH")" && pwd)/$(basename "$RXPATH")
. "$SRC/tests/tools/sanitizer.sh"
rxpt_sanitizer_log "$T"
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	ip netns del $A 2>/dev/null
	ip netns del $B 2>/dev/null
	if [ -n "${RXP_KEEP:-}" ]; then echo "kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT
ip netns del $A 2>/dev/null; ip netns del $B 2>/dev/null
ip netns add $A && ip netns add $B || { echo "SKIP: cannot create namespaces"; exit 77; }
ip link add rxp35a0 netns $A type veth peer name rxp35b0 netns $B || { echo "SKIP: no veth"; exit 77; }
ip -n $A addr add 10.35.0.1/24 dev rxp35a0
ip -n $B addr add 10.35.0.2/24 dev rxp35b0
ip -n $A addr add fd35::1/64 dev rxp35a0 nodad
ip -n $B addr add fd35::2/64 dev rxp35b0 nodad
ip -n $A link set rxp35a0 up; ip -n $B link set rxp35b0 up; ip -n $B link set lo up

# the kernel's side: each datagram it delivers, as the SHA-256 of its payload
ip netns exec $B $PY - "$T/kernel" <<'EOF' >"$T/recv.log" 2>&1 &
import hashlib, select, socket, sys, time
s4 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s4.bind(("0.0.0.0", 9999))
s6 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
s6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1); s6.bind(("::", 9999))
open(sys.argv[1] + ".ready", "w").close()
got, end = [], time.time() + 30
while time.time() < end:
    r, _, _ = select.select([s4, s6], [], [], 0.5)
    for s in r:
        got.append(hashlib.sha256(s.recv(70000)).hexdigest())
    if len(got) >= 16:
        break
open(sys.argv[1], "w").write("\n".join(sorted(got)) + "\n")
EOF
PIDS+=($!)
ip netns exec $B tcpdump -B 16384 --immediate-mode -U -i rxp35b0 -w "$T/cap.pcap" >"$T/td.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do
	[ -e "$T/kernel.ready" ] && grep -q "listening on" "$T/td.log" &&
		[ "$(ip netns exec $B cat /proc/net/packet | tail -n +2 | wc -l)" -ge 1 ] && break
	sleep 0.1
done
sleep 0.5
ip netns exec $A $PY - <<'EOF' || { echo "FAIL: send"; exit 1; }
import socket, time
def send(s, dst, sizes):
    for i, n in enumerate(sizes):
        s.sendto(bytes((i * 7 + j * 13 + n) & 255 for j in range(n)), (dst, 9999))
        time.sleep(0.05)
rr = bytes([7, 39, 4]) + bytes(36) + b"\x00"   # Record Route: first fragment only
ra = bytes([148, 4, 0, 0])                      # Router Alert: copied into each
for opt in (rr, ra):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_OPTIONS, opt)
    send(s, "10.35.0.2", (3000, 1200, 5000, 9000))
pad = bytes([0, 0, 1, 4, 0, 0, 0, 0])           # next header, length, PadN
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IPV6, 54, pad)      # IPV6_HOPOPTS
s.setsockopt(socket.IPPROTO_IPV6, 55, pad)      # IPV6_RTHDRDSTOPTS
send(s, "fd35::2", (3000, 1200, 5000, 9000))
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IPV6, 59, pad)      # IPV6_DSTOPTS
send(s, "fd35::2", (3000, 1200, 5000, 9000))
EOF
for _ in $(seq 50); do [ -s "$T/kernel" ] && break; sleep 0.1; done
sleep 1 # a TPACKET_V3 block not yet retired at SIGINT is lost
for p in "${PIDS[@]}"; do kill -INT "$p" 2>/dev/null; done
for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
PIDS=()
ip netns del $A; ip netns del $B

fail=0
nk=$(grep -c . "$T/kernel" 2>/dev/null)
[ "$nk" = 16 ] || { echo "FAIL: the kernel delivered $nk of 16 datagrams"; cat "$T/recv.log"; fail=1; }
# rxpath run: the kernel's datagrams, byte for byte
if "$RXPATH" run -q -w 1 --pcap "$T/cap.pcap" --write "$T/run.pcap" --json >"$T/run.json" 2>"$T/run.err"; then
	$PY - "$T/run.pcap" "$T/kernel" "$T/run.json" <<'EOF' && echo "ok: run --pcap: the kernel's 16 datagrams, byte for byte, no drop" || fail=1
import hashlib, json, sys
from scapy.all import IP, IPv6, UDP, PcapReader
got = []
for p in PcapReader(sys.argv[1]):
    ip = IP(bytes(p)) if bytes(p)[0] >> 4 == 4 else IPv6(bytes(p))
    if UDP in ip and ip[UDP].dport == 9999:
        got.append(hashlib.sha256(bytes(ip[UDP].payload)).hexdigest())
want = open(sys.argv[2]).read().split()
j = json.load(open(sys.argv[3]))
if sorted(got) != want or j["drops"] != {}:
    print(f"FAIL: run --pcap: {len(got)} datagrams, {sum(a == b for a, b in zip(sorted(got), want))} as the kernel's; drops {j['drops']}")
    sys.exit(1)
EOF
else
	echo "FAIL: run --pcap: exit $?"; cat "$T/run.err"; fail=1
fi
# rxpath defrag: what tshark reassembles
if "$RXPATH" defrag "$T/cap.pcap" "$T/out.pcap" 2>"$T/defrag.err"; then
	if res=$($PY "$SRC/tests/tools/defrag_links.py" check "$T/cap.pcap" "$T/out.pcap" 16 2>&1); then
		echo "ok: defrag: $res"
	else
		echo "FAIL: defrag: $res"; fail=1
	fi
else
	echo "FAIL: defrag: exit $?"; cat "$T/defrag.err"; fail=1
fi
# the options are where the kernel put them (else this test judges
# nothing): Record Route in the first fragment alone, Router Alert in each;
# Hop-by-Hop (then Destination Options) before every fragment header of
# the first IPv6 sender, Destination Options before the second's
$PY - "$T/cap.pcap" <<'EOF' && echo "ok: the capture holds the options as the kernel placed them" || fail=1
import sys
from scapy.all import IP, IPv6, IPv6ExtHdrFragment, PcapReader
rr = ra = hbh = dst = f6 = 0
for p in PcapReader(sys.argv[1]):
    if IP in p and (p[IP].flags.MF or p[IP].frag):
        o = bytes(p[IP])[20:p[IP].ihl * 4]
        rr += o[:1] == b"\x07"
        ra += o[:1] == b"\x94"
    if IPv6ExtHdrFragment in p:
        f6 += 1
        hbh += p[IPv6].nh == 0
        dst += p[IPv6].nh == 60
if not (rr == 3 and ra >= 9 and hbh >= 9 and dst >= 9 and hbh + dst == f6):
    print(f"FAIL: Record Route in {rr} fragments (want 3: the first of each of the 3 fragmented), "
          f"Router Alert in {ra}; IPv6: of {f6} fragments, {hbh} behind Hop-by-Hop and {dst} "
          f"behind Destination Options")
    sys.exit(1)
EOF
[ $fail -eq 0 ] && echo "ip_options: all passed"
rxpt_sanitizer_reports "$T" || fail=1
exit $fail
