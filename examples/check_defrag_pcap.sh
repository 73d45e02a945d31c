#!/bin/bash
# examples/defrag_pcap.c on a capture of the sim NIC's traffic (fragmented
# IPv4 and IPv6 datagrams, shuffled): it must reassemble exactly as many
# datagrams as rxpath defrag does, and end without a leak (exit 0).
set -u
RXPATH=${RXPATH:-$(dirname "$0")/../build/release/rxpath}
EX=${RXP_EXAMPLE:-$(dirname "$0")/../build/release/rxpath_example_defrag}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$RXPATH" capture --dev 'sim:count=600,max=20000' --write "$T/sim.pcap" >/dev/null 2>&1 ||
	{ echo "FAIL: capture"; exit 1; }
"$EX" "$T/sim.pcap" >"$T/out" || { echo "FAIL: example exit $?"; tail -3 "$T/out"; exit 1; }
"$RXPATH" defrag --json --mem-limit 64m "$T/sim.pcap" "$T/o.pcap" >"$T/j" 2>/dev/null ||
	{ echo "FAIL: rxpath defrag exit $?"; exit 1; }
want=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["reassembled"])' "$T/j")
got=$(tail -1 "$T/out" | cut -d' ' -f1)
if [ -n "$want" ] && [ "$want" -gt 0 ] && [ "$got" = "$want" ]; then
	echo "example/defrag_pcap: $got datagrams, as rxpath defrag"
	exit 0
fi
echo "FAIL: example $got datagrams, rxpath defrag $want"
exit 1
