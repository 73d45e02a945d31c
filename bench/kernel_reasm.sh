#!/usr/bin/env bash
# The kernel as a reassembly baseline: replay a capture of generator frames
# (Ethernet to 02:00:00:00:00:02, 10.200.0.1 / fd02::1, as rxp_gen and
# tests/lib/overload.c make them) from one namespace into another over a
# veth, the receiving kernel with its default reassembly sysctls, and print
# what its reassembly counted:
#   ReasmReqds ReasmOKs ReasmFails Ip6ReasmReqds Ip6ReasmOKs Ip6ReasmFails RxDropped
# RxDropped is what the receiving veth dropped (the replay was too fast for
# it, not a reassembly decision). Needs root, iproute2 and tcpreplay; exits
# 77 with a reason otherwise. usage: bench/kernel_reasm.sh PCAP [PPS]
set -u
PCAP=$1
PPS=${2:-200000}
PFX=${RXP_KREASM_PREFIX:-rxpkr}
A=${PFX}a
B=${PFX}b

die() { echo "kernel_reasm: $*" >&2; exit "${2:-1}"; }
[ "$(id -u)" -eq 0 ] || die "needs root (network namespaces)" 77
command -v ip >/dev/null || die "needs iproute2" 77
command -v tcpreplay >/dev/null || die "needs tcpreplay" 77
[ -r "$PCAP" ] || die "cannot read $PCAP"

cleanup() {
	ip netns del "$A" 2>/dev/null
	ip netns del "$B" 2>/dev/null
}
trap cleanup EXIT
cleanup
ip netns add "$A" && ip netns add "$B" || die "cannot create namespaces" 77
ip link add "${PFX}0" netns "$A" type veth peer name "${PFX}1" netns "$B" || die "no veth" 77
ip -n "$B" link set "${PFX}1" address 02:00:00:00:00:02
ip -n "$A" link set "${PFX}0" mtu 1500 up
ip -n "$B" link set "${PFX}1" mtu 1500 up
ip -n "$B" link set lo up
ip -n "$B" addr add 10.200.0.1/16 dev "${PFX}1"
ip -n "$B" addr add fd02::1/64 dev "${PFX}1" nodad
# Frames come from sources the receiver has no route back to: accept them
# (reverse-path filtering) and do not answer (no ICMP to slow anyone down).
ip netns exec "$B" sysctl -qw net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0 \
	"net.ipv4.conf.${PFX}1.rp_filter=0" net.ipv4.icmp_ratelimit=1000000 2>/dev/null
# A bigger backlog, so that the replay is not dropped before IP input.
ip netns exec "$B" sysctl -qw net.core.netdev_max_backlog=100000 2>/dev/null
ip netns exec "$A" tcpreplay -q -i "${PFX}0" --pps="$PPS" "$PCAP" >/dev/null 2>&1 ||
	die "tcpreplay failed"
sleep 0.5
snmp() { ip netns exec "$B" awk -v k="$1" '$1 == "Ip:" && !h { for (i = 2; i <= NF; i++) n[i] = $i; h = 1; next }
	$1 == "Ip:" { for (i = 2; i <= NF; i++) if (n[i] == k) print $i }' /proc/net/snmp; }
snmp6() { ip netns exec "$B" awk -v k="$1" '$1 == k { print $2 }' /proc/net/snmp6; }
drop=$(ip netns exec "$B" cat /sys/class/net/${PFX}1/statistics/rx_dropped)
echo "$(snmp ReasmReqds) $(snmp ReasmOKs) $(snmp ReasmFails) $(snmp6 Ip6ReasmReqds) $(snmp6 Ip6ReasmOKs) $(snmp6 Ip6ReasmFails) $drop"
