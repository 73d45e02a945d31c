#!/bin/bash
# rxpath defrag on a kernel VXLAN tunnel, fragmented inside and outside.
# Namespaces rxp22a and rxp22b talk over a veth (MTU 1500) through VXLAN
# devices with an MTU of 3000 (over IPv4 and over IPv6, VNIs 42 and 43):
# the kernel fragments the inner datagrams at 3000 bytes, and then each
# VXLAN packet that carries a fragment again at 1500 bytes outside. tcpdump
# captures the veth. What tshark reassembles from the capture (UDP length
# and payload bytes of each inner datagram) must be exactly what rxpath
# writes, each still inside its VXLAN packet, with no fragment left and no
# checksum bad. Needs root, ip, tcpdump, tshark, ethtool and scapy in
# /usr/bin/python3: exits 77 without them.
set -u -o pipefail
RXPATH=${RXPATH:-$(dirname "$0")/../../build/release/rxpath}
SRC=${RXP_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
PY=/usr/bin/python3
LINKS="$SRC/tests/tools/defrag_links.py"
if [ "$(id -u)" != 0 ]; then echo "SKIP: needs root (network namespaces)"; exit 77; fi
for t in ip tcpdump tshark ethtool flock; do
	command -v $t >/dev/null || { echo "SKIP: $t missing (scripts/deps.sh)"; exit 77; }
done
if ! $PY -c 'import scapy' 2>/dev/null; then echo "SKIP: scapy missing in $PY"; exit 77; fi
if [ -z "${RXP_NETNS_LOCKED:-}" ]; then
	RXP_NETNS_LOCKED=1 exec flock -w 900 /tmp/rxpath-netns.lock bash "$0" "$@"
fi
A=rxp22a B=rxp22b
T=$(mktemp -d)
. "$SRC/tests/tools/sanitizer.sh"
rxpt_sanitizer_log "$T"
PID=
cleanup() {
	[ -n "$PID" ] && kill "$PID" 2>/dev/null
	ip netns del $A 2>/dev/null
	ip netns del $B 2>/dev/null
	if [ -n "${RXP_KEEP:-}" ]; then echo "kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT
ip netns del $A 2>/dev/null; ip netns del $B 2>/dev/null
ip netns add $A && ip netns add $B || { echo "SKIP: cannot create namespaces"; exit 77; }
ip link add rxp22a0 netns $A type veth peer name rxp22b0 netns $B || { echo "SKIP: no veth"; exit 77; }
n=0
for ns in $A $B; do
	n=$((n + 1))
	ip -n $ns link set rxp22${ns: -1}0 address 02:22:00:00:00:0$n up
	ip -n $ns addr add 10.22.0.$n/24 dev rxp22${ns: -1}0
	ip -n $ns addr add fd22::$n/64 dev rxp22${ns: -1}0 nodad
	ip netns exec $ns ethtool -K rxp22${ns: -1}0 tx off >/dev/null
	ip -n $ns link set lo up
	o=$((3 - n))
	ip -n $ns link add vx4 type vxlan id 42 local 10.22.0.$n remote 10.22.0.$o dstport 4789 ||
		{ echo "SKIP: no vxlan"; exit 77; }
	ip -n $ns link add vx6 type vxlan id 43 local fd22::$n remote fd22::$o dstport 4789
	ip -n $ns link set vx4 mtu 3000 address 02:22:04:00:00:0$n up
	ip -n $ns link set vx6 mtu 3000 address 02:22:06:00:00:0$n up
	ip -n $ns addr add 192.168.22.$n/24 dev vx4
	ip -n $ns addr add fd22:4::$n/64 dev vx4 nodad
	ip -n $ns addr add 192.168.23.$n/24 dev vx6
	ip -n $ns addr add fd22:6::$n/64 dev vx6 nodad
done
ip netns exec $B tcpdump -B 16384 --immediate-mode -U -i rxp22b0 -w "$T/vxlan.pcap" >"$T/td.log" 2>&1 &
PID=$!
for _ in $(seq 100); do grep -q "listening on" "$T/td.log" && break; sleep 0.1; done
# Over IPv4, each datagram is sent with the path MTU forgotten: the kernel
# fragments it at the tunnel's 3000 bytes, then each VXLAN packet again at
# the veth's 1500 (it lowers the tunnel's path MTU after the first). Over
# IPv6 it drops an oversized VXLAN packet instead of fragmenting it: a
# probe to another port teaches it the path MTU first, and the datagrams
# are then fragmented inside only.
ip netns exec $A $PY - <<'PYEOF' || { echo "FAIL: send"; exit 1; }
import socket, subprocess, time
for fam, dst, v6_under in ((socket.AF_INET, "192.168.22.2", 0), (socket.AF_INET6, "fd22:4::2", 0),
                           (socket.AF_INET, "192.168.23.2", 1), (socket.AF_INET6, "fd22:6::2", 1)):
    s = socket.socket(fam, socket.SOCK_DGRAM)
    if v6_under:
        s.sendto(bytes(2900), (dst, 9998))
        time.sleep(0.1)
    for i, n in enumerate((1000, 2500, 6000, 20000)):
        if not v6_under:
            subprocess.run(["ip", "-4", "route", "flush", "cache"])
            subprocess.run(["ip", "-6", "route", "flush", "cache"])
        s.sendto(bytes((i * 5 + j * 11 + n) & 255 for j in range(n)), (dst, 9999))
        time.sleep(0.05)
PYEOF
sleep 1
kill -INT $PID; wait $PID; PID=
ip netns del $A; ip netns del $B
fail=0
"$RXPATH" defrag --json "$T/vxlan.pcap" "$T/out.pcap" >"$T/json" 2>&1 || { echo "FAIL: rxpath defrag"; cat "$T/json"; exit 1; }
# 16 datagrams sent.
if res=$($PY "$LINKS" check "$T/vxlan.pcap" "$T/out.pcap" 16 vxlan.vni 2>&1); then
	echo "ok: kernel vxlan: $res"
else
	echo "FAIL: kernel vxlan: $res"; fail=1
fi
$PY - "$T/json" <<'PYEOF' || { echo "FAIL: counters"; cat "$T/json"; fail=1; }
import json, sys
d = json.loads(open(sys.argv[1]).read().splitlines()[-1])
f = d["frames"]
# Inside: at least the 6000- and 20000-byte datagrams in both tunnels and
# families; outside, over IPv4, the 2500-byte ones and the inner fragments
# over 1450 bytes (2 of the 6000-byte datagram's, 6 of the 20000's, both
# families). Zones: two tunnels, both ways (the ICMP errors come back).
n = f["tunnel_datagrams"]
assert n >= 8 and d["ReasmOKs"] - n >= 2 + 2 * (2 + 6) and f["zones"] == 4, d
assert f["bad_tunnel"] == 0 and f["too_big"] == 0, d
print(f"ok: counters: {d['ReasmOKs']} reassembled, {f['tunnel_datagrams']} inside the tunnels")
PYEOF
[ $fail -eq 0 ] && echo "defrag_vxlan: all passed"
rxpt_sanitizer_reports "$T" || fail=1
exit $fail
