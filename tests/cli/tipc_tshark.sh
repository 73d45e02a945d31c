#!/bin/bash
# Wireshark as an independent decoder of rxpath's TIPC-over-UDP output:
# `rxpath tipc pcap` builds bundles, fragments and plain data messages,
# writes them as a pcap and prints, per frame, the users, sizes, msgcnt,
# fragment numbers and types its own codec reads (and the message its link
# reassembled); tshark decodes the same file with -d udp.port==6118,tipc and
# must report the same fields, including the message it reassembles itself.
# Needs no root and no namespaces; exit 77 (skipped) when tshark is missing.
set -u
if ! command -v tshark >/dev/null 2>&1; then
	echo "tipc_tshark: tshark not installed, skipping"
	exit 77
fi
RXPATH=${RXPATH:-$(dirname "$0")/../../build/release/rxpath}
if [ ! -x "$RXPATH" ]; then
	echo "tipc_tshark: rxpath binary not found ($RXPATH), skipping"
	exit 77
fi
tmp=$(mktemp -d /tmp/rxp_tipc_tshark.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. "${RXP_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/tools/sanitizer.sh"
rxpt_sanitizer_log "$tmp"
fail=0
for mtu in 1500 576 9000; do
	if ! "$RXPATH" tipc pcap "$tmp/t.pcap" --mtu "$mtu" >"$tmp/out.txt"; then
		echo "tipc_tshark: rxpath tipc pcap failed (mtu $mtu)"
		cat "$tmp/out.txt"
		exit 1
	fi
	grep '^expect' "$tmp/out.txt" | cut -f2- >"$tmp/expect.txt"
	# HOME points at the temp dir so no personal Wireshark profile applies.
	HOME=$tmp tshark -n -r "$tmp/t.pcap" -d udp.port==6118,tipc -T fields \
		-e frame.number -e tipc.usr -e tipc.msg_size -e tipcv2.msg_count \
		-e tipcv2.fragment_number -e tipcv2.fragmenter_msg_type \
		2>"$tmp/tshark.err" >"$tmp/tshark.txt" ||
		{ echo "tipc_tshark: mtu $mtu: tshark failed"; cat "$tmp/tshark.err"; fail=1; continue; }
	if ! diff -u "$tmp/expect.txt" "$tmp/tshark.txt"; then
		echo "tipc_tshark: mtu $mtu: tshark disagrees with rxpath (diff above)"
		fail=1
		continue
	fi
	frames=$(wc -l <"$tmp/expect.txt")
	if [ "$frames" -eq 0 ]; then
		echo "tipc_tshark: mtu $mtu: rxpath listed no frames (nothing compared)"
		fail=1
		continue
	fi
	# Our IPv4 and UDP checksums, verified by Wireshark (status 1 = good, 0 = bad, 2 = unverified);
	# tshark's own failure is not a pass
	if ! HOME=$tmp tshark -n -r "$tmp/t.pcap" -o ip.check_checksum:TRUE \
		-o udp.check_checksum:TRUE -Y 'ip.checksum.status != 1 || udp.checksum.status != 1' \
		>"$tmp/badsum.txt" 2>"$tmp/tshark.err"; then
		echo "tipc_tshark: mtu $mtu: tshark failed on the checksum pass"
		cat "$tmp/tshark.err"
		fail=1
		continue
	fi
	bad=$(wc -l <"$tmp/badsum.txt")
	if [ "$bad" != 0 ]; then
		echo "tipc_tshark: mtu $mtu: $bad frames with bad or unchecked IP/UDP checksums"
		fail=1
		continue
	fi
	bundles=$(awk -F'\t' '$4 != ""' "$tmp/tshark.txt" | wc -l)
	frags=$(awk -F'\t' '$5 != ""' "$tmp/tshark.txt" | wc -l)
	echo "tipc_tshark: mtu $mtu: $frames frames ($bundles bundles, $frags fragments) agree; $(grep '^rx:' "$tmp/out.txt")"
done
rxpt_sanitizer_reports "$tmp" || fail=1
exit $fail
