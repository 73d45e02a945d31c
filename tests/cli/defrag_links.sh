#!/bin/bash
# rxpath defrag on every link type and tunnel it reads, against tshark.
# The kernel in namespace rxp21a sends UDP datagrams (IPv4 and IPv6, some
# fragmented, one of 65,500 bytes) over a veth to rxp21b and over its own
# loopback; real tools capture them: tcpdump -i any (LINUX_SLL2), tcpdump -y
# LINUX_SLL, tcpdump on the veth (Ethernet) and on lo, dumpcap (pcapng) on
# the veth and on any (cooked frames in pcapng),
# tcpdump on nflog:21, which an nftables log rule in rxp21b feeds (NFLOG),
# and dumpcap on nflog:22 (the same rule's) and lo at once: a pcapng whose two interfaces
# have different link types (NFLOG, Ethernet), which libpcap refuses; rxp21b
# sends datagrams of its own over its lo for the second, once the other
# captures have stopped.
# tests/tools/defrag_links.py then wraps the veth capture's packets in every
# other link layer and tunnel (scapy), writes captures where the same
# fragments travel through two tunnels (or VLANs) that differ only in key,
# VNI, TEID, session or endpoint,
# and a pcapng whose interfaces have different link types. rxpath run
# --pcap, a host's receive path, then reads every capture whose link it
# takes off, MPLS and PPPoE over Ethernet too (not the tunnels: a host
# opens none).
# For each capture: what tshark reassembles from it (UDP length and payload
# bytes of each datagram) must be exactly what rxpath writes, with no
# fragment left and no bad checksum it made; per tunnel for the others.
# Needs root, ip, tcpdump, dumpcap, tshark, ethtool, nft and scapy in
# /usr/bin/python3: exits 77 without them.
set -u -o pipefail
RXPATH=${RXPATH:-$(dirname "$0")/../../build/release/rxpath}
SRC=${RXP_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
PY=/usr/bin/python3
LINKS="$SRC/tests/tools/defrag_links.py"
if [ "$(id -u)" != 0 ]; then echo "SKIP: needs root (network namespaces)"; exit 77; fi
for t in ip tcpdump dumpcap tshark ethtool flock nft; do
	command -v $t >/dev/null || { echo "SKIP: $t missing (scripts/deps.sh)"; exit 77; }
done
if ! $PY -c 'import scapy' 2>/dev/null; then echo "SKIP: scapy missing in $PY"; exit 77; fi
# Namespace names are fixed: one such test at a time on the machine.
if [ -z "${RXP_NETNS_LOCKED:-}" ]; then
	RXP_NETNS_LOCKED=1 exec flock -w 900 /tmp/rxpath-netns.lock bash "$0" "$@"
fi
A=rxp21a B=rxp21b
T=$(mktemp -d)
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
ip link add rxp21a0 netns $A type veth peer name rxp21b0 netns $B || { echo "SKIP: no veth"; exit 77; }
ip -n $A link set rxp21a0 address 02:21:00:00:00:01
ip -n $B link set rxp21b0 address 02:21:00:00:00:02
ip -n $A addr add 10.21.0.1/24 dev rxp21a0
ip -n $B addr add 10.21.0.2/24 dev rxp21b0
ip -n $A addr add fd21::1/64 dev rxp21a0 nodad
ip -n $B addr add fd21::2/64 dev rxp21b0 nodad
# Checksums filled in by the sender, not left to an offload that a veth
# never does: the captures then hold valid ones.
ip netns exec $A ethtool -K rxp21a0 tx off >/dev/null
ip netns exec $B ethtool -K rxp21b0 tx off >/dev/null
ip -n $A link set lo mtu 1500 up; ip -n $B link set lo up
ip -n $A link set rxp21a0 up; ip -n $B link set rxp21b0 up

capture() { # namespace, log name, tool and arguments
	local ns=$1 log=$2
	shift 2
	ip netns exec "$ns" "$@" >"$T/$log.log" 2>&1 &
	PIDS+=($!)
}
TD="tcpdump -B 16384 --immediate-mode -U"
capture $B eth $TD -i rxp21b0 -w "$T/eth.pcap"
capture $B sll2 $TD -i any -w "$T/sll2.pcap"
capture $B sll $TD -i any -y LINUX_SLL -w "$T/sll.pcap"
capture $B dumpcap dumpcap -q -B 16 -i rxp21b0 -w "$T/dumpcap.pcapng"
capture $B dumpcap_any dumpcap -q -B 16 -i any -w "$T/dumpcap_any.pcapng"
capture $A lo $TD -i lo -w "$T/lo.pcap"
# NFLOG: every IP packet B receives, logged before the kernel reassembles
# it (priority -450 runs before conntrack's defrag at -400)
ip netns exec $B nft -f - <<'NFT' || { echo "FAIL: nft log rule"; exit 1; }
table inet rxp21 {
	chain pre {
		type filter hook prerouting priority -450;
		iifname "rxp21b0" log group 21;
		iifname "rxp21b0" log group 22; # (a group has one listener)
	}
}
NFT
capture $B nflog $TD -i nflog:21 -w "$T/nflog.pcap"
capture $B dumpcap2 dumpcap -q -B 16 -i nflog:22 -i lo -w "$T/nflog_lo.pcapng"
MIXPID=${PIDS[-1]}
for _ in $(seq 100); do
	n=$(grep -lE "listening on|Capturing on" "$T"/*.log 2>/dev/null | wc -l)
	[ "$n" -ge 8 ] && break
	sleep 0.1
done
[ "$n" -ge 8 ] || { echo "FAIL: captures did not start"; tail -n 3 "$T"/*.log; exit 1; }
# A tool's "listening on" or "Capturing on" line does not prove that its
# socket is open and its ring set up: CI once saw dumpcap miss a datagram
# the other captures had. Wait for the packet sockets themselves: five in
# B (and dumpcap's on lo), one in A (/proc/net/packet is per namespace;
# its first line is a header).
socks() { ip netns exec "$1" cat /proc/net/packet | tail -n +2 | wc -l; }
for _ in $(seq 100); do
	[ "$(socks $B)" -ge 6 ] && [ "$(socks $A)" -ge 1 ] && break
	sleep 0.1
done
[ "$(socks $B)" -ge 6 ] && [ "$(socks $A)" -ge 1 ] ||
	{ echo "FAIL: capture sockets did not open ($(socks $B) in B, $(socks $A) in A)"; exit 1; }
sleep 0.5 # each tool sets its ring up after it binds
ip netns exec $A $PY - <<'EOF' || { echo "FAIL: send"; exit 1; }
import socket, time
def send(fam, dst, sizes):
    s = socket.socket(fam, socket.SOCK_DGRAM)
    for i, n in enumerate(sizes):
        s.sendto(bytes((i * 7 + j * 13 + n + fam) & 255 for j in range(n)), (dst, 9999))
        time.sleep(0.05)  # five captures at once: give each time to keep up
send(socket.AF_INET, "10.21.0.2", (3000, 4000, 1200, 5000, 65500))
send(socket.AF_INET6, "fd21::2", (3000, 4000, 1200, 5000, 20000))
send(socket.AF_INET, "127.0.0.1", (3000, 1200, 9000))
send(socket.AF_INET6, "::1", (3000, 1200, 9000))
EOF
sleep 2 # a TPACKET_V3 block not yet retired at SIGINT is lost
for p in "${PIDS[@]}"; do [ "$p" = "$MIXPID" ] || kill -INT "$p" 2>/dev/null; done
for p in "${PIDS[@]}"; do [ "$p" = "$MIXPID" ] || wait "$p" 2>/dev/null; done
# B's own datagrams over its lo, for dumpcap's second interface alone
ip -n $B link set lo mtu 1500
ip netns exec $B $PY - <<'EOF' || { echo "FAIL: send on B's lo"; exit 1; }
import socket, time
for fam, dst in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
    s = socket.socket(fam, socket.SOCK_DGRAM)
    for i, n in enumerate((2500, 6000)):
        s.sendto(bytes((i * 5 + j * 11 + n) & 255 for j in range(n)), (dst, 9999))
        time.sleep(0.05)
EOF
sleep 2
kill -INT "$MIXPID" 2>/dev/null
wait "$MIXPID" 2>/dev/null
PIDS=()
ip netns del $A; ip netns del $B

fail=0
linktype() { od -An -tu4 -j20 -N4 "$1" | tr -d ' '; } # a pcap file's header
# Each capture through rxpath now; the comparisons, two at a time, after.
# Frames a capture tool says it dropped (tcpdump's "dropped by kernel",
# dumpcap's received/dropped per interface): on a loaded machine (CI's
# ASan run beside other tests) dumpcap's NFLOG socket once lost a fragment.
lost() { # tool's log
	{ grep -o '^[0-9]* packets dropped by kernel' "$1" | cut -d' ' -f1
	  grep -o "': [0-9]*/[0-9]*" "$1" | cut -d/ -f2; } 2>/dev/null | awk '{s += $1} END {print s + 0}'
}
declare -A LOSSY
# A capture whose tool dropped frames cannot hold every datagram sent:
# rxpath is then judged against tshark alone (said), and run --pcap's
# count of it is not checked.
# A live capture (one with a tool's log) that lacks datagrams which tshark
# does not find in it either, while rxpath gives exactly what tshark does,
# lost or cut a frame its tool did not count (dumpcap's NFLOG socket in
# CI's ASan run once did so silently): "short", judged against tshark.
run() { # kind, capture, datagrams sent in it, tool's log name (live captures)
	local k=$1 in=$2 out="$T/out_$1.pcap" sent=$3 n
	if ! "$RXPATH" defrag "$in" "$out" 2>"$T/err_$k"; then
		echo "FAIL: $k: rxpath defrag failed"; cat "$T/err_$k"; fail=1; return
	fi
	if [ -n "${4:-}" ]; then
		n=$(lost "$T/$4.log")
		if [ "$n" -gt 0 ]; then
			echo "note: $k: the capture tool dropped $n frames: judged against tshark alone"
			LOSSY[$k]=1
			sent=
		else
			sent="$sent~"
		fi
	fi
	echo "$k $in $out $sent" >>"$T/checks"
}
# The real tools' link types are what this test says they are.
[ "$(linktype "$T/sll2.pcap")" = 276 ] || { echo "FAIL: tcpdump -i any did not write LINUX_SLL2 ($(linktype "$T/sll2.pcap"))"; fail=1; }
[ "$(linktype "$T/sll.pcap")" = 113 ] || { echo "FAIL: tcpdump -y LINUX_SLL did not write LINUX_SLL"; fail=1; }
# Every datagram sent must be in every capture (10 over the veth, 6 on lo).
run tcpdump_eth "$T/eth.pcap" 10 eth
run tcpdump_any_sll2 "$T/sll2.pcap" 10 sll2
run tcpdump_sll "$T/sll.pcap" 10 sll
run dumpcap_pcapng "$T/dumpcap.pcapng" 10 dumpcap
# dumpcap on "any": a pcapng of Linux cooked frames
[ "$(tshark -r "$T/dumpcap_any.pcapng" -T fields -e frame.encap_type 2>/dev/null | sort -u)" = 25 ] ||
	{ echo "FAIL: dumpcap -i any did not write Linux cooked frames"; fail=1; }
run dumpcap_any "$T/dumpcap_any.pcapng" 10 dumpcap_any
run tcpdump_lo "$T/lo.pcap" 6 lo
[ "$(linktype "$T/nflog.pcap")" = 239 ] || { echo "FAIL: tcpdump -i nflog did not write NFLOG"; fail=1; }
run tcpdump_nflog "$T/nflog.pcap" 10 nflog
# (two interfaces, NFLOG and Ethernet, each with frames: libpcap refuses it)
[ "$(tshark -r "$T/nflog_lo.pcapng" -T fields -e frame.interface_id -e frame.encap_type 2>/dev/null |
	sort -u | wc -l)" = 2 ] || { echo "FAIL: dumpcap -i nflog:22 -i lo: not two link types"; fail=1; }
run dumpcap_nflog_lo "$T/nflog_lo.pcapng" 14 dumpcap2
mkdir "$T/w"
kinds=$($PY "$LINKS" wrap "$T/eth.pcap" "$T/w" 2>/dev/null) || { echo "FAIL: wrap"; exit 1; }
for k in $kinds; do
	case $k in ipv4 | ipv6) n=5 ;; *) n=10 ;; esac
	run "$k" "$T/w/$k.pcap" $n
done
$PY "$LINKS" check-list "$T/checks" >"$T/checked" 2>&1 || fail=1
grep -v '^Running as user' "$T/checked"
for k in $(sed -n 's/^short: \([^:]*\):.*/\1/p' "$T/checked"); do
	LOSSY[$k]=1
done
# every kind the tool knows must be made: a tool that failed before it
# printed any would otherwise leave this loop empty and the test green
ckinds=$($PY "$LINKS" collide "$T/eth.pcap" "$T/w") || { echo "FAIL: collide"; fail=1; }
want_c=$($PY -c 'import sys; sys.path.insert(0, sys.argv[1]); import defrag_links as d; print(len(d.COLLIDE_FIELD))' "$(dirname "$LINKS")")
[ "$(echo $ckinds | wc -w)" = "$want_c" ] && [ "$want_c" -gt 0 ] ||
	{ echo "FAIL: collide made $(echo $ckinds | wc -w) of $want_c kinds"; fail=1; }
for k in $ckinds; do
	"$RXPATH" defrag "$T/w/$k.pcap" "$T/out_$k.pcap" 2>"$T/err_$k" || { echo "FAIL: $k"; fail=1; continue; }
	if res=$($PY "$LINKS" check-collide "$T/w" "$T/out_$k.pcap" "${k#collide_}" 2>&1); then
		echo "ok: $k: $res"
	else
		echo "FAIL: $k: $res"; fail=1
	fi
done
# rxpath run --pcap: the same datagrams from each capture whose link
# headers the pcap device takes off, every record read (none dropped as a
# bad header) but those a cooked capture says B sent (its ARP, NDP, MLD
# and ICMP port-unreachable messages: skipped and counted, as a live
# AF_PACKET device does not receive them), nothing dropped. Tunnels are
# left out (a host opens none); MPLS and PPPoE over Ethernet are read, as
# a host with those links up would.
runpcap() { # kind, capture, datagrams sent in it
	local k=$1 in=$2 recs out res
	if [ -n "${LOSSY[$k]:-}" ]; then
		echo "SKIP-PART: run --pcap $k: the capture lost frames"; return
	fi
	recs=$(capinfos -c -M "$in" 2>/dev/null | awk '/Number of packets/ {print $NF}')
	out=$(tshark -r "$in" -Y "sll.pkttype == 4" 2>/dev/null | wc -l)
	if ! "$RXPATH" run -q -w 1 --pcap "$in" --json >"$T/run_$k.json" 2>"$T/rerr_$k"; then
		echo "FAIL: run --pcap $k: exit $?"; cat "$T/rerr_$k"; fail=1; return
	fi
	res=$($PY -c 'import json,sys; d=json.load(open(sys.argv[1]))
print(d["frames"], d["device"]["rx_outgoing"], d["datagrams"], sum(d["drops"].values()))' "$T/run_$k.json")
	if [ "$res" = "$((recs - out)) $out $3 0" ]; then
		echo "ok: run --pcap $k: $3 datagrams, $recs frames ($out outgoing, skipped), no drop"
	else
		echo "FAIL: run --pcap $k: frames, outgoing, datagrams, drops $res; want $((recs - out)) $out $3 0"; fail=1
	fi
}
for k in tcpdump_eth:eth.pcap tcpdump_any_sll2:sll2.pcap tcpdump_sll:sll.pcap \
	dumpcap_pcapng:dumpcap.pcapng dumpcap_any:dumpcap_any.pcapng tcpdump_lo:lo.pcap tcpdump_nflog:nflog.pcap \
	dumpcap_nflog_lo:nflog_lo.pcapng; do
	case $k in tcpdump_lo:*) n=6 ;; dumpcap_nflog_lo:*) n=14 ;; *) n=10 ;; esac
	runpcap "${k%%:*}" "$T/${k#*:}" $n
done
for k in vlan qinq mpls pppoe ppp ppp_hdlc chdlc null loop raw ipv4 ipv6 nflog wlan radiotap; do
	case $k in ipv4 | ipv6) n=5 ;; *) n=10 ;; esac
	runpcap "wrap_$k" "$T/w/$k.pcap" $n
done
# A pcapng whose six interfaces have six link types: each frame is read with
# its own. (libpcap refuses such files; until the reader that reads them is
# in, this case says so and is left out.)
$PY "$LINKS" mixed "$T/eth.pcap" "$T/mixed.pcapng" 2>/dev/null || { echo "FAIL: mixed"; fail=1; }
if ! "$RXPATH" defrag "$T/mixed.pcapng" "$T/out_mixed.pcapng" 2>"$T/err_mixed"; then
	if grep -q "different from the type of the first interface" "$T/err_mixed"; then
		echo "SKIP: mixed-link pcapng: this rxpath's reader refuses it ($(tail -1 "$T/err_mixed"))"
	else
		echo "FAIL: mixed-link pcapng"; cat "$T/err_mixed"; fail=1
	fi
elif res=$($PY "$LINKS" check "$T/mixed.pcapng" "$T/out_mixed.pcapng" 10 2>&1); then
	echo "ok: mixed-link pcapng: $res"
else
	echo "FAIL: mixed-link pcapng: $res"; fail=1
fi
runpcap mixed "$T/mixed.pcapng" 10
# capture --read of the real NFLOG-and-loopback pcapng writes raw IP (the
# same reader): every datagram is still in what it wrote
if "$RXPATH" capture --read "$T/nflog_lo.pcapng" --write "$T/nflog_lo_raw.pcap" >"$T/cap.out" 2>&1; then
	[ -n "${LOSSY[dumpcap_nflog_lo]:-}" ] && LOSSY[capture_read_nflog_lo]=1
	runpcap capture_read_nflog_lo "$T/nflog_lo_raw.pcap" 14
else
	echo "FAIL: capture --read nflog_lo.pcapng: exit $?"; cat "$T/cap.out"; fail=1
fi
# The 65,500-byte datagram does not fit back into its tunnel: said and counted.
"$RXPATH" defrag --json "$T/w/vxlan.pcap" "$T/out.pcap" >"$T/json" 2>&1 ||
	{ echo "FAIL: rxpath defrag vxlan.pcap: exit $?"; fail=1; }
$PY -c 'import json,sys
d = json.loads(open(sys.argv[1]).read().splitlines()[-1])["frames"]
assert d["too_big"] == 1 and d["stripped"] == 1 and d["tunnel_datagrams"] >= 8, d' "$T/json" \
	|| { echo "FAIL: vxlan too_big"; cat "$T/json"; fail=1; }
grep -q "too big for their outer headers" "$T/json" || { echo "FAIL: no too-big warning"; fail=1; }
[ $fail -eq 0 ] && echo "defrag_links: all passed"
rxpt_sanitizer_reports "$T" || fail=1
exit $fail
