#!/bin/bash
# rxpath defrag on what `tcpdump -i any` captures on a router: every
# forwarded frame twice, once as it came in and once as it went out with
# its TTL (or hop limit) one lower. The kernel in namespace rxp22a sends
# IPv4 and IPv6 UDP datagrams of three fragments to rxp22b through rxp22r,
# which forwards them as they are (no conntrack: no defragmentation
# there); tcpdump -i any in rxp22r writes LINUX_SLL2. Each fragment's copy
# going out follows the one coming in, so the copy of a datagram's
# completing fragment comes after the datagram completed.
# - The file profile: every datagram comes out once, with the payload
#   tshark reassembles (defrag_links.py check), each datagram's late copy
#   is counted as a late duplicate (exactly one per datagram), and no queue
#   is left at the end.
# - --kernel leaves those copies to the table, as Linux would: the same
#   datagrams come out, and each copy is a queue that never completes,
#   given up at the end of the input.
# Needs root, ip, tcpdump, tshark and scapy in /usr/bin/python3: exits 77
# without them.
set -u -o pipefail
RXPATH=${RXPATH:-$(dirname "$0")/../../build/release/rxpath}
SRC=${RXP_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
PY=/usr/bin/python3
LINKS="$SRC/tests/tools/defrag_links.py"
N4=300
N6=300
N=$((N4 + N6))
if [ "$(id -u)" != 0 ]; then echo "SKIP: needs root (network namespaces)"; exit 77; fi
for t in ip tcpdump tshark flock; do
	command -v $t >/dev/null || { echo "SKIP: $t missing (scripts/deps.sh)"; exit 77; }
done
if ! $PY -c 'import scapy' 2>/dev/null; then echo "SKIP: scapy missing in $PY"; exit 77; fi
if [ -z "${RXP_NETNS_LOCKED:-}" ]; then
	RXP_NETNS_LOCKED=1 exec flock -w 900 /tmp/rxpath-netns.lock bash "$0" "$@"
fi
A=rxp22a R=rxp22r B=rxp22b
T=$(mktemp -d)
. "$SRC/tests/tools/sanitizer.sh"
rxpt_sanitizer_log "$T"
PID=
cleanup() {
	[ -n "$PID" ] && kill "$PID" 2>/dev/null
	for n in $A $R $B; do ip netns del $n 2>/dev/null; done
	if [ -n "${RXP_KEEP:-}" ]; then echo "kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT
for n in $A $R $B; do ip netns del $n 2>/dev/null; done
for n in $A $R $B; do ip netns add $n || { echo "SKIP: cannot create namespaces"; exit 77; }; done
# No duplicate address detection: while a link-local address is tentative
# the router cannot resolve its IPv6 neighbours, and queues what it
# forwards (dropping past unres_qlen_bytes, about 140 fragments) until it
# can. That queue was why most outgoing IPv6 fragments were missing and
# the rest went out only after all of their datagram had come in.
for n in $A $R $B; do ip netns exec $n sysctl -qw net.ipv6.conf.default.accept_dad=0; done
ip link add rxp22a0 netns $A type veth peer name rxp22r0 netns $R || { echo "SKIP: no veth"; exit 77; }
ip link add rxp22r1 netns $R type veth peer name rxp22b0 netns $B
ip -n $A addr add 10.22.1.1/24 dev rxp22a0
ip -n $R addr add 10.22.1.2/24 dev rxp22r0
ip -n $R addr add 10.22.2.1/24 dev rxp22r1
ip -n $B addr add 10.22.2.2/24 dev rxp22b0
ip -n $A addr add fd22:1::1/64 dev rxp22a0 nodad
ip -n $R addr add fd22:1::2/64 dev rxp22r0 nodad
ip -n $R addr add fd22:2::1/64 dev rxp22r1 nodad
ip -n $B addr add fd22:2::2/64 dev rxp22b0 nodad
for n in $A $R $B; do ip -n $n link set lo up; done
ip -n $A link set rxp22a0 up; ip -n $B link set rxp22b0 up
ip -n $R link set rxp22r0 up; ip -n $R link set rxp22r1 up
ip -n $A route add default via 10.22.1.2
ip -n $B route add default via 10.22.2.1
ip -n $A -6 route add default via fd22:1::2
ip -n $B -6 route add default via fd22:2::1
ip netns exec $R sysctl -qw net.ipv4.ip_forward=1
ip netns exec $R sysctl -qw net.ipv6.conf.all.forwarding=1
# Neighbours known before the capture: no datagram waits on ARP.
ip netns exec $A $PY -c 'import socket
socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"hello", ("10.22.2.2", 9998))
socket.socket(socket.AF_INET6, socket.SOCK_DGRAM).sendto(b"hello", ("fd22:2::2", 9998))' ||
	{ echo "FAIL: warm-up"; exit 1; }
# Both hops' neighbours resolved, in both families, before the capture.
resolved() { ip -n $1 neigh show $2 | grep -q lladdr; }
for _ in $(seq 50); do
	resolved $A 10.22.1.2 && resolved $A fd22:1::2 && resolved $R 10.22.2.2 &&
		resolved $R fd22:2::2 && break
	sleep 0.1
done
resolved $R 10.22.2.2 && resolved $R fd22:2::2 ||
	{ echo "FAIL: the router did not resolve its neighbours"; ip -n $R neigh; exit 1; }
ip netns exec $R tcpdump -B 32768 -U -i any -w "$T/any.pcap" udp \
	>"$T/tcpdump.log" 2>&1 &
PID=$!
sock() { ip netns exec $R cat /proc/net/packet | tail -n +2 | wc -l; }
for _ in $(seq 100); do [ "$(sock)" -ge 1 ] && break; sleep 0.1; done
[ "$(sock)" -ge 1 ] || { echo "FAIL: the capture did not start"; cat "$T/tcpdump.log"; exit 1; }
sleep 0.5
ip netns exec $A $PY - $N4 $N6 <<'EOF' || { echo "FAIL: send"; exit 1; }
import socket, sys, time
def send(fam, dst, n):
    s = socket.socket(fam, socket.SOCK_DGRAM)
    for i in range(n):
        # three fragments at MTU 1500; a payload of its own per datagram
        s.sendto(bytes((i * 7 + j * 13 + fam) & 255 for j in range(3500 + i % 97)), (dst, 9999))
        if i % 5 == 4:
            time.sleep(0.01)  # let tcpdump keep up
send(socket.AF_INET, "10.22.2.2", int(sys.argv[1]))
send(socket.AF_INET6, "fd22:2::2", int(sys.argv[2]))
EOF
sleep 2 # a TPACKET_V3 block not yet retired at SIGINT is lost
kill -INT $PID; wait $PID 2>/dev/null; PID=
grep -q "^0 packets dropped by kernel" "$T/tcpdump.log" ||
	{ echo "FAIL: tcpdump dropped packets"; cat "$T/tcpdump.log"; exit 1; }
for n in $A $R $B; do ip netns del $n; done

fail=0
jf() { $PY -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$@"; }
# One profile: rxpath writes what tshark reassembles, with LATE late
# duplicates counted and LEFT queues given up at the end of the input.
profile() { # name, late, left, rxpath defrag options...
	local name=$1 want_late=$2 want_left=$3 late left
	shift 3
	if ! "$RXPATH" defrag --json "$@" "$T/any.pcap" "$T/out_$name.pcap" >"$T/j_$name" 2>"$T/err_$name"; then
		echo "FAIL: $name: rxpath defrag failed"; cat "$T/err_$name"; fail=1; return
	fi
	if res=$($PY "$LINKS" check "$T/any.pcap" "$T/out_$name.pcap" $N 2>&1); then
		echo "ok: $name: $res"
	else
		echo "FAIL: $name: $res"; fail=1
	fi
	late=$(jf "$T/j_$name" 'd["frames"]["late_duplicates"]')
	left=$(jf "$T/j_$name" 'sum(d["given_up"].values())')
	[ "$late" -eq "$want_late" ] && [ "$left" -eq "$want_left" ] &&
		echo "ok: $name: $late late duplicates, $left queues given up" ||
		{ echo "FAIL: $name: late_duplicates $late (want $want_late), $left queues given up (want $want_left)"; cat "$T/j_$name"; fail=1; }
}
profile file $N 0
profile kernel 0 $N --kernel
# rxpath run on the same capture, through each of its three readers
# (--pcap: libwiretap; --dev pcap: libpcap; the sim NIC's replay): the
# router's outgoing copies (SLL2 packet type 4, as tshark reads them) are
# skipped and counted, as a live AF_PACKET device does not receive them;
# every datagram is then delivered once, with no duplicate and no queue
# left.
recs=$(capinfos -c -M "$T/any.pcap" 2>/dev/null | awk '/Number of packets/ {print $NF}')
out=$(tshark -r "$T/any.pcap" -Y "sll.pkttype == 4" 2>/dev/null | wc -l)
k=0
for input in "--pcap $T/any.pcap" "--dev pcap:$T/any.pcap" "--dev sim:replay=$T/any.pcap"; do
	k=$((k + 1))
	# (word splitting wanted: an option and its value; $T has no spaces)
	# shellcheck disable=SC2086
	if "$RXPATH" run -q -w 1 $input --json >"$T/run$k.json" 2>"$T/run$k.err"; then
		res=$(jf "$T/run$k.json" '" ".join(str(x) for x in (d["frames"], d["device"]["rx_outgoing"], d["datagrams"], sum(d["drops"].values()), d["reasm"]["ReasmFails"]))')
		want="$((recs - out)) $out $N 0 0"
		[ "$out" -gt 0 ] && [ "$res" = "$want" ] &&
			echo "ok: run ${input%% *} ${input#* }: $N datagrams once, $out outgoing copies skipped of $recs frames" ||
			{ echo "FAIL: run $input: frames, outgoing, datagrams, drops, ReasmFails $res; want $want (outgoing > 0)"; cat "$T/run$k.json"; fail=1; }
	else
		echo "FAIL: run $input: exit $?"; cat "$T/run$k.err"; fail=1
	fi
done
[ $fail -eq 0 ] && echo "defrag_router: all passed"
rxpt_sanitizer_reports "$T" || fail=1
exit $fail
