#!/bin/bash
# Fragments built by rxpath are reassembled by the Linux kernel.
#
# `rxpath fragsend` builds one UDP datagram, cuts it with rxp_ip_fragment()
# (IDs from rxpath's generator, payload referenced as page frags) and sends
# the fragments over AF_PACKET from namespace rxp5a over a veth pair; the
# kernel in rxp5b reassembles them and a UDP socket (/usr/bin/python3) must
# receive exactly the datagram's payload. IPv4 and IPv6, several sizes and
# MTUs, in order and in reverse. Needs root; exits 77 (skipped) otherwise.
set -u

PFX=rxp5
NSA=${PFX}a NSB=${PFX}b
RXPATH=${RXPATH:-}
PY=/usr/bin/python3

skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root for network namespaces"
command -v ip >/dev/null || skip "iproute2 (ip) missing"
[ -x "$PY" ] || skip "$PY missing"
if [ -z "$RXPATH" ]; then
	for c in ./rxpath ./build/release/rxpath; do [ -x "$c" ] && RXPATH=$c && break; done
fi
[ -n "$RXPATH" ] && [ -x "$RXPATH" ] || skip "rxpath binary not found (set RXPATH)"
"$RXPATH" fragsend --help >/dev/null 2>&1 || skip "rxpath has no fragsend command"

TMP=$(mktemp -d /tmp/${PFX}-ipfrag.XXXXXX)
RXPID=
cleanup() {
	[ -n "$RXPID" ] && kill "$RXPID" 2>/dev/null
	ip netns del $NSA 2>/dev/null
	ip netns del $NSB 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

ip netns del $NSA 2>/dev/null
ip netns del $NSB 2>/dev/null
ip netns add $NSA && ip netns add $NSB || skip "cannot create namespaces"
ip link add ${PFX}a0 netns $NSA type veth peer name ${PFX}b0 netns $NSB || skip "cannot create veth"
for ns in $NSA $NSB; do
	ip -n $ns link set lo up
	ip -n $ns link set ${ns}0 mtu 9000 up
done
ip -n $NSA addr add 10.55.5.1/24 dev ${PFX}a0
ip -n $NSB addr add 10.55.5.2/24 dev ${PFX}b0
ip -n $NSA addr add fd55:5::1/64 dev ${PFX}a0 nodad
ip -n $NSB addr add fd55:5::2/64 dev ${PFX}b0 nodad
MACB=$(ip netns exec $NSB cat /sys/class/net/${PFX}b0/address)

cat >"$TMP/recv.py" <<'PYEOF'
import socket, sys
fam, addr, port, size, seed, ready = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
s = socket.socket(socket.AF_INET6 if fam == "6" else socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
s.bind((addr, port))
s.settimeout(5.0)
open(ready, "w").close()
try:
    data, peer = s.recvfrom(70000)
except socket.timeout:
    print("receiver: timeout, nothing delivered"); sys.exit(1)
want = bytes(((seed + i * 131) & 0xff) for i in range(size))
if data != want:
    bad = next((i for i in range(min(len(data), size)) if data[i] != want[i]), None)
    print("receiver: payload mismatch: got %d bytes, want %d, first bad byte %s" % (len(data), size, bad))
    sys.exit(1)
print("receiver: %d bytes OK from %s" % (len(data), peer[0]))
PYEOF

fail=0 n=0
run_case() { # family size mtu [--reverse]
	local fam=$1 size=$2 mtu=$3 extra=${4:-} src dst seed=$((n * 7 + 3)) port=$((5000 + n))
	if [ "$fam" = 4 ]; then src=10.55.5.1 dst=10.55.5.2; else src=fd55:5::1 dst=fd55:5::2; fi
	rm -f "$TMP/ready"
	ip netns exec $NSB $PY "$TMP/recv.py" $fam $dst $port $size $seed "$TMP/ready" >"$TMP/out" 2>&1 &
	RXPID=$!
	for _ in $(seq 50); do [ -e "$TMP/ready" ] && break; sleep 0.1; done
	ip netns exec $NSA "$RXPATH" fragsend --if ${PFX}a0 --src $src --dst $dst --dmac "$MACB" \
		--dport $port --size $size --mtu $mtu --seed $seed $extra >"$TMP/send" 2>&1
	local src_rc=$?
	wait $RXPID
	local rc=$?
	RXPID=
	if [ $src_rc = 0 ] && [ $rc = 0 ]; then
		echo "ok   IPv$fam size=$size mtu=$mtu $extra: $(cat "$TMP/send") / $(cat "$TMP/out")"
	else
		echo "FAIL IPv$fam size=$size mtu=$mtu $extra: $(cat "$TMP/send") / $(cat "$TMP/out")"
		fail=$((fail + 1))
	fi
	n=$((n + 1))
}

run_case 4 1000 576
run_case 4 4000 1500
run_case 4 4000 1500 --reverse
run_case 4 20000 9000
run_case 4 30000 68
run_case 4 65507 1500
run_case 6 3000 1280
run_case 6 9000 1500 --reverse
run_case 6 20000 9000
run_case 6 65487 1280
run_case 6 65527 1500

echo "$((n - fail))/$n cases delivered intact"
[ $fail = 0 ]
