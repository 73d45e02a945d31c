#!/bin/bash
# rxpath defrag never refuses a capture for its link type, and passes what
# it cannot read through unchanged, counted: a link type it does not know
# (every frame written as it came, one warning), Ethernet frames whose
# VLAN, MPLS, PPPoE or tunnel headers are cut or broken (unchanged, counted
# as bad_link or bad_tunnel, while the good frames around them are still
# reassembled), and an IP fragment cut short by the snaplen (unchanged,
# counted as truncated). Needs scapy in /usr/bin/python3 (exits 77 without).
set -u -o pipefail
RXPATH=${RXPATH:-$(dirname "$0")/../../build/release/rxpath}
PY=/usr/bin/python3
if ! $PY -c 'import scapy' 2>/dev/null; then echo "SKIP: scapy missing in $PY"; exit 77; fi
T=$(mktemp -d)
. "${SRC:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/tools/sanitizer.sh"
rxpt_sanitizer_log "$T"
trap 'rm -rf "$T"' EXIT
$PY - "$T" 2>/dev/null <<'PYEOF' || { echo "FAIL: gen"; exit 1; }
import sys
from scapy.all import IP, UDP, Ether, Dot1Q, GRE, Raw, fragment, wrpcap
from scapy.utils import PcapWriter
d = sys.argv[1]
ip = IP(src="10.0.0.1", dst="10.0.0.2", id=77) / UDP(sport=1, dport=9) / Raw(bytes(range(256)) * 12)
frags = fragment(ip, fragsize=1000)
# A link type rxpath does not know (DLT_USER0): the fragments as they are.
wrpcap(f"{d}/user0.pcap", [Raw(bytes(f)) for f in frags], linktype=147)
eth = lambda p, t=0x0800: Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02", type=t) / p
bad = [
    bytes(eth(Raw(b"\x00\x64"), 0x8100)),                       # VLAN tag cut short
    bytes(eth(Raw(b"\x00\x01\x90\x40" * 17), 0x8847)),            # 17 labels, no bottom
    bytes(eth(Raw(b"\x11\x00\x00\x07\xff\xff\x00\x21"), 0x8864)), # PPPoE length past the end
    bytes(eth(IP(src="192.0.2.1", dst="192.0.2.2", proto=47) /  # GRE with routing
              Raw(b"\x40\x00\x08\x00" + bytes(4) + bytes(frags[0])))),
]
good = [bytes(eth(f)) for f in frags]
wrpcap(f"{d}/bad.pcap", [Raw(x) for x in [good[0], bad[0], good[1], bad[1], bad[2], bad[3]] + good[2:]])
# The last fragment cut short (captured 100 bytes of it).
w = PcapWriter(f"{d}/snap.pcap", linktype=1)
for x in good[:-1]:
    w.write(Raw(x))
p = Raw(good[-1][:100])
p.wirelen = len(good[-1])
w.write(p)
w.close()
PYEOF
[ -s "$T/snap.pcap" ] || { echo "FAIL: gen"; exit 1; }
fail=0
bytes_of() { $PY -c 'import sys; from scapy.all import rdpcap; print([bytes(p).hex() for p in rdpcap(sys.argv[1])])' "$1" | md5sum; }

"$RXPATH" defrag --json "$T/user0.pcap" "$T/out0.pcap" >"$T/err0" 2>&1 || { echo "FAIL: user0 refused"; cat "$T/err0"; fail=1; }
[ "$(grep -c 'link type 147 .* is not one rxpath reads' "$T/err0")" = 1 ] || { echo "FAIL: not one warning"; cat "$T/err0"; fail=1; }
[ "$(bytes_of "$T/user0.pcap")" = "$(bytes_of "$T/out0.pcap")" ] || { echo "FAIL: user0 frames changed"; fail=1; }
[ "$(od -An -tu4 -j20 -N4 "$T/out0.pcap" | tr -d ' ')" = 147 ] || { echo "FAIL: user0 link type lost"; fail=1; }
tail -1 "$T/err0" | $PY -c 'import json,sys; f=json.load(sys.stdin)["frames"]; assert f["unknown_link"]==4, f' ||
	{ echo "FAIL: unknown_link count"; fail=1; }

"$RXPATH" defrag --json "$T/bad.pcap" "$T/outb.pcap" >"$T/errb" 2>&1 || { echo "FAIL: bad.pcap"; cat "$T/errb"; fail=1; }
tail -1 "$T/errb" | $PY -c '
import json, sys
d = json.load(sys.stdin); f = d["frames"]
assert f["bad_link"] == 3 and f["bad_tunnel"] == 1, f
assert d["reassembled"] == 1 and d["passed"] == 4, d' || { echo "FAIL: bad.pcap counts"; tail -1 "$T/errb"; fail=1; }
$PY - "$T/bad.pcap" "$T/outb.pcap" <<'PYEOF' || { echo "FAIL: bad frames not passed unchanged"; fail=1; }
import sys
from scapy.all import rdpcap
i = [bytes(p) for p in rdpcap(sys.argv[1])]
o = [bytes(p) for p in rdpcap(sys.argv[2])]
# The four broken frames come out as they went in, in order, and one
# reassembled datagram after them.
assert o[:4] == [i[1], i[3], i[4], i[5]] and len(o) == 5, (len(o),)
assert len(o[4]) == 14 + 20 + 8 + 256 * 12
PYEOF

"$RXPATH" defrag --json --keep-incomplete "$T/snap.pcap" "$T/outs.pcap" >"$T/errs" 2>&1 || { echo "FAIL: snap.pcap"; fail=1; }
tail -1 "$T/errs" | $PY -c 'import json,sys; f=json.load(sys.stdin)["frames"]; assert f["truncated"]==1, f' ||
	{ echo "FAIL: truncated count"; tail -1 "$T/errs"; fail=1; }
$PY - "$T/snap.pcap" "$T/outs.pcap" <<'PYEOF' 2>/dev/null || { echo "FAIL: the cut fragment did not pass unchanged"; fail=1; }
import sys
from scapy.all import rdpcap
cut = bytes(rdpcap(sys.argv[1])[-1])
assert len(cut) == 100 and [bytes(p) for p in rdpcap(sys.argv[2])].count(cut) == 1
PYEOF
[ $fail -eq 0 ] && echo "defrag_passthrough: all passed"
rxpt_sanitizer_reports "$T" || fail=1
exit $fail
