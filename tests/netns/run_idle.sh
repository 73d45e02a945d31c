#!/bin/bash
# The live path sleeps (issue #18): `rxpath run --iface` on a veth with no
# traffic, 2 workers, uses under 5% of a core, measured from the kernel's
# accounting of the process (utime + stime in /proc/PID/stat, what
# getrusage reports) over 3 s once it has started; for AF_XDP and
# AF_PACKET. Then traffic still flows: the kernel in the other namespace
# sends 200 fragmented datagrams, all delivered. Also: one line on stderr
# names the backend, and libxdp says nothing. Root only; namespaces use the
# prefix rxp9 and are removed on exit.
set -u
# How a kernel that gives no AF_XDP here says so (EAFNOSUPPORT, EOPNOTSUPP,
# EPERM, EACCES, ENOSYS: no XDP sockets, no right to them, no bpf()): that
# part is skipped. Any other failure to start is rxpath's.
AFXDP_UNAVAILABLE="not supported|not permitted|Permission denied|Function not implemented"
SRC=${RXP_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
RXPATH=${RXPATH:-$SRC/build/release/rxpath}
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
command -v ip >/dev/null || { echo "SKIP: needs iproute2"; exit 77; }
A=rxp9a$$ B=rxp9b$$
T=$(mktemp -d)
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	ip netns del "$A" 2>/dev/null
	ip netns del "$B" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
ip netns add "$A" && ip netns add "$B" || { echo "SKIP: cannot create namespaces"; exit 77; }
ip link add rxp9a0 netns "$A" type veth peer name rxp9b0 netns "$B" || { echo "SKIP: no veth"; exit 77; }
ip -n "$A" addr add 10.79.0.1/24 dev rxp9a0
ip -n "$B" addr add 10.79.0.2/24 dev rxp9b0
ip -n "$A" link set rxp9a0 up
ip -n "$B" link set rxp9b0 up
MAC=$(ip -n "$B" -o link show rxp9b0 | grep -o 'link/ether [0-9a-f:]*' | cut -d' ' -f2)
ip -n "$A" neigh replace 10.79.0.2 lladdr "$MAC" dev rxp9a0 nud permanent
HZ=$(getconf CLK_TCK)
fail=0

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

for mode in afxdp afpacket; do
	ip netns exec "$B" "$RXPATH" run --iface rxp9b0 --mode $mode --workers 2 --duration 8 \
		--quiet --json >"$T/$mode.json" 2>"$T/$mode.err" &
	pid=$!
	PIDS+=($pid)
	sleep 1.5
	if ! kill -0 $pid 2>/dev/null; then
		if [ $mode = afxdp ] && grep -qE "$AFXDP_UNAVAILABLE" "$T/$mode.err"; then
			echo "SKIP-PART: AF_XDP unavailable: $(cat "$T/$mode.err")"; continue
		fi
		echo "FAIL: $mode: rxpath run did not start"; cat "$T/$mode.err"; fail=1; continue
	fi
	c0=$(cpu_ticks $pid)
	sleep 3
	c1=$(cpu_ticks $pid)
	# traffic after the idle window: it must still be received
	ip netns exec "$A" python3 - <<'PY'
import socket, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(200):
    s.sendto(bytes([i % 256]) * 4000, ("10.79.0.2", 9000))
    if i % 32 == 31:
        time.sleep(0.002)
PY
	wait $pid
	rc=$?
	PIDS=()
	pct=$(awk -v a="$c0" -v b="$c1" -v hz="$HZ" 'BEGIN {printf "%.2f", (b - a) / hz / 3 * 100}')
	dg=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["datagrams"])' "$T/$mode.json" 2>/dev/null)
	echo "$mode: idle CPU $pct% of a core over 3 s (2 workers); then $dg of 200 datagrams; stderr:"
	sed 's/^/  /' "$T/$mode.err"
	if awk -v p="$pct" 'BEGIN {exit !(p < 5)}'; then echo "ok: $mode idle under 5%"
	else echo "FAIL: $mode idle at $pct% of a core"; fail=1; fi
	[ $rc -eq 0 ] && [ "$dg" = 200 ] && echo "ok: $mode delivered 200 of 200 after sleeping" ||
		{ echo "FAIL: $mode: rc $rc, $dg of 200 delivered"; fail=1; }
	grep -q "^rxpath run: rxp9b0: AF_" "$T/$mode.err" && [ "$(grep -c 'rxp9b0: AF_' "$T/$mode.err")" -eq 1 ] &&
		echo "ok: $mode: one line names the backend" || { echo "FAIL: $mode: no backend line"; fail=1; }
	grep -qi "libxdp\|libbpf" "$T/$mode.err" && { echo "FAIL: $mode: libxdp noise"; fail=1; }
done
exit $fail
