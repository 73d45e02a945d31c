#!/bin/bash
# Every subcommand as a well-made Unix tool (issue #18): each bad usage
# exits 2 with one line "rxpath CMD: ..." on stderr and nothing on stdout;
# --help goes to stdout with exit 0; error messages carry the real cause
# and the path once; JSON summaries validate against docs/*.schema.json and
# every drop reason of include/rxpath/drop.h is documented there and in the
# man page; capture writes every frame of a 1-, 2- and 4-queue sim device,
# and with --write - nothing but the capture reaches stdout (read back by
# tshark); run --pcap counts ARP/ICMP/NDP/TCP apart from drops, takes rates
# from the capture's span, writes --write in time order and accepts
# offloaded UDP checksums in auto mode only.
# Needs no root; exits 77 when tshark, capinfos or scapy/jsonschema in
# /usr/bin/python3 are missing.
set -u
SRC=${RXP_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
RXPATH=${RXPATH:-$SRC/build/release/rxpath}
PY=/usr/bin/python3
for t in tshark capinfos mergecap editcap gzip script; do command -v $t >/dev/null || { echo "SKIP: $t missing"; exit 77; }; done
$PY -c 'import scapy, jsonschema' 2>/dev/null || { echo "SKIP: scapy or jsonschema missing in $PY"; exit 77; }
T=$(mktemp -d)
. "$SRC/tests/tools/sanitizer.sh"
rxpt_sanitizer_log "$T"
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail=0
bad() { echo "FAIL: $*"; fail=1; }
ok() { echo "ok: $*"; }

# usage CMD-NAME ARGS...: exit 2, one line "rxpath NAME: ..." on stderr, empty stdout
usage() {
	local name=$1
	shift
	timeout 20 "$RXPATH" "$@" >out 2>err </dev/null
	local rc=$?
	if [ $rc -eq 2 ] && [ ! -s out ] && [ "$(wc -l <err)" -eq 1 ] && grep -q "^rxpath $name: " err; then
		ok "$* -> 2: $(cat err)"
	else
		bad "$*: rc $rc, stdout $(wc -c <out) bytes, stderr:"; cat err
	fi
}
usage run run -n -5
usage run run -n 0
usage run run -n 99999999999999999999999
usage run run --mem-limit -1
usage run run --workers 0
usage run run --duration -1
usage run run --seed x
usage run run --udp-csum maybe
usage run run --bogus
usage run run extra
usage run run --pcap a.pcap --iface lo
usage run run --in-flight 5 --dev sim:count=100
usage run run --frames
usage capture capture --dev sim:count=10 --write x.pcap --count abc
usage capture capture --dev sim:count=10 --write x.pcap --mode bogus
usage capture capture --dev sim:count=10 --write x.pcap --idle-ms -5
usage capture capture --dev sim:count=10 --write x.pcap --count -1
usage capture capture --dev sim:count=10 --write x.pcap extra
usage capture capture --dev sim:count=10
usage capture capture --dev sim:count=10 --write x.pcap --queues 65
usage defrag defrag --policy nosuch a.pcap b.pcap
usage capture capture --dev sim:hw_burst=65537 --write x.pcap
grep -q "bad value '65537' for 'hw_burst'" err && ok "sim: a value out of range is named as such" ||
	bad "sim hw_burst=65537: $(cat err)"
usage capture capture --dev afxdp:lo,bogus=1 --write x.pcap
grep -q "'afxdp:lo,bogus=1' not understood" err && ok "a device spec is quoted whole" ||
	bad "afxdp:lo,bogus=1: $(cat err)"
usage tipc tipc pcap x.pcap --bogus
usage tipc tipc pcap x.pcap extra
usage tipc tipc pcap x.pcap --mtu abc
usage tipc tipc
usage tipc tipc write x.pcap
usage bench bench bogus
[ -e bench ] && bad "bench bogus created bench/" || ok "bench bogus created nothing"
usage bench bench --out
if [ -x "$(dirname "$RXPATH")/rxpath-bench-ring" ]; then # built with RXP_BENCH
	usage "bench ring" bench ring --runs abc
	usage "bench ring" bench ring --runs 7x
	usage "bench ring" bench ring --threads 0
	usage "bench ring" bench ring --bogus
	usage "bench ring" bench ring --runs
	# an --outdir that cannot be made is refused before any run
	: >afile
	usage "bench ring" bench ring --outdir afile/x
	"$RXPATH" bench tipc --quick --runs 5 --outdir new/sub >/dev/null 2>err &&
		[ -s new/sub/tipc.csv ] && ok "bench tipc --outdir new/sub made it and wrote tipc.csv" ||
		{ bad "bench tipc --outdir new/sub:"; cat err; }
fi
usage fragsend fragsend --if lo
usage fragsend fragsend --size abc --if lo --src 10.0.0.1 --dst 10.0.0.2 --dmac 00:00:00:00:00:01
# checked before the datagram is built: one line, nothing leaked
usage fragsend fragsend --if lo --src 10.0.0.1 --dst 10.0.0.2 --dmac zz
usage fragsend fragsend --if nosuch0 --src 10.0.0.1 --dst 10.0.0.2 --dmac 00:00:00:00:00:01
usage fragsend fragsend --if lo --src 10.0.0.1 --dst 10.0.0.2 --dmac 00:00:00:00:00:01 --bogus
grep -q "unknown option --bogus" err && ok "fragsend: a trailing unknown option is called unknown" ||
	bad "fragsend --bogus: $(cat err)"
usage fragsend fragsend --if=lo --src=10.0.0.1 --dst=10.0.0.2 --dmac=00:00:00:00:00:01 --mtu=20
usage defrag defrag --mem-limit -1 a b
timeout 5 "$RXPATH" >out 2>err; rc=$?
[ $rc -eq 2 ] && [ "$(wc -l <err)" -eq 1 ] && ok "no command -> 2" || bad "no command: rc $rc"
timeout 5 "$RXPATH" nosuch >out 2>err; rc=$?
[ $rc -eq 2 ] && [ "$(wc -l <err)" -eq 1 ] && grep -q "unknown command 'nosuch'" err &&
	ok "unknown command -> 2" || bad "unknown command: rc $rc"

# --help: stdout, exit 0, nothing on stderr, for every command
for c in "" run defrag capture tipc bench fragsend; do
	timeout 5 "$RXPATH" $c --help >out 2>err
	rc=$?
	if [ $rc -eq 0 ] && [ -s out ] && [ ! -s err ] && grep -q "usage: rxpath" out; then
		ok "rxpath $c --help"
	else bad "rxpath $c --help: rc $rc"; fi
done
timeout 5 "$RXPATH" help capture >out 2>err && grep -q "rxpath capture" out && ok "rxpath help capture" ||
	bad "rxpath help capture"
timeout 5 "$RXPATH" --help defrag >out 2>err && grep -q "usage: rxpath defrag" out &&
	ok "rxpath --help defrag" || bad "rxpath --help defrag: $(head -1 out)"
timeout 5 "$RXPATH" --version extra >out 2>err
[ $? -eq 2 ] && [ ! -s out ] && [ "$(wc -l <err)" -eq 1 ] && ok "rxpath --version extra -> 2" ||
	bad "rxpath --version extra accepted"

# error messages: the cause, the path once, one line, exit 2
cause() { # expect-substring path-that-must-appear-once ARGS...
	local want=$1 path=$2
	shift 2
	timeout 20 "$RXPATH" "$@" >out 2>err
	local rc=$?
	if [ $rc -eq 2 ] && [ "$(wc -l <err)" -eq 1 ] && grep -q "$want" err &&
		[ "$(grep -o -F "$path" err | wc -l)" -eq 1 ]; then ok "$*: $(cat err)"
	else bad "$*: rc $rc:"; cat err; fi
}
mkdir adir
echo "not a capture" >notpcap
cause "No such file or directory" /nonexistent.pcap run --pcap /nonexistent.pcap
cause "Is a directory" adir run --pcap adir
cause "not a capture file" notpcap run --pcap notpcap
cause "No such file or directory" /nonexistent/dir/x.pcap run -w 1 -n 100 --write /nonexistent/dir/x.pcap
# several workers write temporary files merged at the end: the output is
# still refused before the run (no summary), not after it with exit 1
cause "No such file or directory" /nonexistent/dir/x.pcap run -w 2 -n 100 --write /nonexistent/dir/x.pcap
[ -s out ] && { bad "run -w 2 --write /nonexistent/dir/x.pcap: ran before refusing it"; cat out; }
cause "No such file or directory" /nonexistent/x.pcap capture --dev sim:count=10 --write /nonexistent/x.pcap
cause "No such file or directory" /nonexistent.pcap capture --read /nonexistent.pcap --write x.pcap
cause "No such device" nosuch0 run --iface nosuch0 -d 1
cause "No such file or directory" /nonexistent/t.pcap tipc pcap /nonexistent/t.pcap

# an output that is the input under another name or through a link is
# refused before anything is written (it used to be truncated, exit 0)
"$RXPATH" capture --dev sim:count=200,seed=5 --write same.pcap >/dev/null 2>&1 || bad "capture same.pcap: exit $?"
cp same.pcap same.ref
ln -s same.pcap same.lnk
usage run run -q -w 1 --pcap same.pcap --write same.pcap
usage run run -q -w 2 --pcap same.pcap --write ./same.pcap
usage run run -q --dev "fault:loss=0.1+pcap:same.pcap" --write same.lnk
usage capture capture --read same.pcap --write same.lnk
usage capture capture --dev pcap:./same.pcap --write same.pcap
usage capture capture --dev "capture:same.pcap+pcap:same.pcap" --write other.pcap
[ -s same.pcap ] && cmp -s same.pcap same.ref && ok "the input is unchanged" ||
	bad "an input was overwritten"
[ -e other.pcap ] && bad "a refused capture created its output" || ok "nothing was created"

# a capture cut inside a record: what came before it is read, the cut is
# said in one line, and the command exits 1 (the man page's promise)
head -c $(($(stat -c %s same.pcap) - 30)) same.pcap >cut.pcap
for args in "run -q --pcap cut.pcap" "capture --read cut.pcap --write cutout.pcap"; do
	timeout 20 "$RXPATH" $args >out 2>err
	rc=$?
	[ $rc -eq 1 ] && grep -q "cut off or corrupt after 199 frames" err &&
		ok "$args: exit 1, $(grep 'cut off' err)" || { bad "$args: rc $rc"; cat err; }
done
[ "$(capinfos -c -M cutout.pcap 2>/dev/null | awk '/Number of packets/ {print $NF}')" = 199 ] &&
	ok "capture of a cut file kept the 199 whole frames" || bad "capture of a cut file"
# run --pcap and a sim replay read the link headers other tools write:
# tcpdump -i any's SLL2, BSD loopback (NULL, little-endian; LOOP): the
# same frames and datagrams as from the Ethernet capture they were made of
"$RXPATH" capture --dev sim:count=300,max=6000,v6=50,seed=9 --write eth9.pcap >/dev/null 2>&1 ||
	bad "capture eth9.pcap: exit $?"
dg() { $PY -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["frames"], d["datagrams"])' "$1"; }
"$RXPATH" run -q -w 1 --pcap eth9.pcap --json >e9.json 2>err || bad "run eth9.pcap: exit $?"
want=$(dg e9.json)
for k in sll2 null loop; do
	$PY "$SRC/tests/tools/relink_pcap.py" eth9.pcap "l_$k.pcap" $k || bad "relink $k"
	"$RXPATH" run -q -w 1 --pcap "l_$k.pcap" --json >"l_$k.json" 2>err || { bad "run --pcap $k: exit $?"; cat err; }
	"$RXPATH" run -q -w 1 --dev "sim:replay=l_$k.pcap" --json >"r_$k.json" 2>err ||
		{ bad "run sim:replay $k: exit $?"; cat err; }
	[ "$want" != "0 0" ] && [ "$(dg "l_$k.json")" = "$want" ] && [ "$(dg "r_$k.json")" = "$want" ] &&
		ok "$k link header: frames and datagrams $want as Ethernet" ||
		bad "$k: $(dg "l_$k.json") / replay $(dg "r_$k.json"), Ethernet $want"
done
# a file stopped by --timeout-ms before its end says so
"$RXPATH" capture --dev sim:count=200000,seed=6 --write big.pcap >/dev/null 2>&1 || bad "capture big.pcap: exit $?"
timeout 60 "$RXPATH" capture --read big.pcap --write bigout.pcap --timeout-ms 1 >out 2>err
rc=$?
[ $rc -eq 0 ] && grep -q "stopped at --timeout-ms 1 before the input ended" err &&
	ok "capture --timeout-ms on a file: $(grep stopped err)" || { bad "capture --timeout-ms 1: rc $rc"; cat err; }
rm -f big.pcap bigout.pcap

# capture: every frame of a multi-queue sim device, for 1, 2 and 4 queues
for q in 1 2 4; do
	"$RXPATH" capture --dev "sim:count=20000,max=4000,queues=$q,seed=3" --write "q$q.pcap" --json \
		>"q$q.json" 2>err
	rc=$?
	n=$(capinfos -c -M "q$q.pcap" 2>/dev/null | awk '/Number of packets/ {print $NF}')
	read -r fr wr of < <($PY -c 'import json,sys; j=json.load(open(sys.argv[1])); print(j["frames"], j["written"], j["offered"])' "q$q.json")
	if [ $rc -eq 0 ] && [ "$n" = "$wr" ] && [ "$wr" = "$of" ] && [ "$fr" = "$of" ] && [ "$of" -gt 20000 ]; then
		ok "capture $q queue(s): $n frames written of $of generated"
	else bad "capture $q queue(s): rc $rc, file $n, json $fr/$wr/$of"; cat err; fi
done
[ "$(capinfos -c -M q1.pcap | tail -1)" = "$(capinfos -c -M q4.pcap | tail -1)" ] &&
	ok "1 and 4 queues wrote the same number of frames" || bad "1 and 4 queues differ"

# capture --write -: stdout carries the capture alone, tshark reads it
"$RXPATH" capture --dev sim:count=500,seed=2 --write - 2>err >stdout.pcap
rc=$?
n=$(tshark -r stdout.pcap 2>/dev/null | wc -l)
if [ $rc -eq 0 ] && [ "$n" -eq 500 ] && grep -q "^frames 500 written 500" err; then
	ok "capture --write -: 500 frames through tshark, summary on stderr"
else bad "capture --write -: rc $rc, tshark read $n"; cat err; fi

# the JSON summaries validate against their schemas
validate() { # schema json-file label
	$PY - "$SRC/docs" "$1" "$2" <<'PY' && ok "$3 validates against $1" || bad "$3 does not validate against $1"
import json, sys, jsonschema
d, name, f = sys.argv[1:4]
store = {n: json.load(open(f"{d}/{n}")) for n in ("drops.schema.json", "run.schema.json", "capture.schema.json", "defrag.schema.json")}
res = jsonschema.RefResolver(base_uri="", referrer=store[name], store=store)
jsonschema.validate(json.load(open(f)), store[name], resolver=res)
PY
}
validate capture.schema.json q2.json "capture --json"
"$RXPATH" run -w 2 -n 30000 -q --json >run.json 2>err || { bad "run -n 30000: rc $?"; cat err; }
validate run.schema.json run.json "run --json (workload)"

# every drop reason documented in the schema and the man page
$PY - "$SRC" <<'PY' && ok "every drop reason is documented" || bad "drop reasons undocumented"
import json, re, sys
src = sys.argv[1]
names = [n for n in re.findall(r'X\(\w+, "(\w+)"\)', open(f"{src}/include/rxpath/drop.h").read()) if n != "none"]  # "none" is not a drop
sch = json.load(open(f"{src}/docs/drops.schema.json"))["properties"]
man = open(f"{src}/docs/rxpath.1").read().replace("\\-", "-").replace("\\_", "_")
missing = [n for n in names if n not in sch or not sch[n].get("description")]
unman = [n for n in names if not re.search(r"^\.B(R)? " + n + r"\b", man, re.M)]
extra = [n for n in sch if n not in names]
if missing or unman or extra or len(names) < 50:
    print("schema lacks", missing, "man page lacks", unman, "schema has unknown", extra)
    sys.exit(1)
PY

# run --pcap: not-for-us frames apart from drops, the capture's span,
# --write in time order across workers, offloaded checksums (auto only)
$PY - <<'PY' || { echo "FAIL: cannot make the capture"; exit 1; }
from scapy.all import Ether, IP, IPv6, UDP, TCP, ICMP, ARP, Raw, ICMPv6ND_NS, fragment, wrpcap
pk, t = [], 1700000000.0
def add(p, dt=0.001):
    global t
    p.time = t; t += dt; pk.append(p)
for i in range(200):  # fragmented datagrams from 8 sources: several workers
    p = Ether() / IP(src=f"10.0.{i % 8}.1", dst="10.9.0.2", id=i) / UDP(sport=1000, dport=9) / Raw(bytes([i % 256]) * 3000)
    for f in fragment(p, 1480):
        add(f)
add(Ether() / ARP())
add(Ether() / IP(src="10.0.0.1", dst="10.9.0.2") / ICMP())
add(Ether() / IPv6(src="fe80::1", dst="ff02::1") / ICMPv6ND_NS(tgt="fe80::2"))
add(Ether() / IP(src="10.0.0.3", dst="10.9.0.2") / TCP() / Raw(b"y" * 100))
wrpcap("mix.pcap", pk)
# a sender's own capture under checksum offload: the field holds the
# pseudo-header's sum only (what Linux leaves for the NIC)
import struct
def partial(src, dst, ulen):
    s = sum(struct.unpack("!HHHH", bytes(map(int, src.split("."))) + bytes(map(int, dst.split(".")))))
    s += 17 + ulen
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return s
off = []
for i in range(20):
    p = Ether() / IP(src="10.1.0.1", dst="10.1.0.2") / UDP(sport=5000, dport=9, chksum=partial("10.1.0.1", "10.1.0.2", 108)) / Raw(b"z" * 100)
    p.time = 1700000100.0 + i
    off.append(p)
wrpcap("offload.pcap", off)
PY
"$RXPATH" run --pcap mix.pcap -w 4 -q --json --write w.pcap >p.json 2>err || { bad "run --pcap: rc $?"; cat err; }
validate run.schema.json p.json "run --pcap --json"
$PY - p.json <<'PY' && ok "run --pcap: ARP, ICMP, NDP, TCP counted apart; 200 datagrams; span from the capture" || bad "run --pcap counts"
import json, sys
j = json.load(open(sys.argv[1]))
n = j["not_for_us"]
assert (n["arp"], n["not_ip"], n["icmp"], n["ndp"], n["tcp"]) == (1, 1, 1, 1, 1), n
assert j["datagrams"] == 200 and j["drops"] == {}, (j["datagrams"], j["drops"])
assert abs(j["capture_seconds"] - 0.603) < 0.01, j["capture_seconds"]
PY
n=$(tshark -r w.pcap -T fields -e frame.time_epoch 2>/dev/null | sort -c -g 2>&1 | wc -l)
c=$(capinfos -c -M w.pcap | awk '/Number of packets/ {print $NF}')
[ "$n" -eq 0 ] && [ "$c" -eq 200 ] && ok "run --write: 200 datagrams in time order from 4 workers" ||
	bad "run --write: $c datagrams, order: $n complaints"
# the same capture under tcpdump -i any's SLL2: its ARP still counted as
# ARP; capture --read writes raw IP, so the ARP is counted as not IP and
# not written (it would read back as a broken IP packet)
$PY "$SRC/tests/tools/relink_pcap.py" mix.pcap mix2.pcap sll2 || bad "relink mix.pcap"
"$RXPATH" run --pcap mix2.pcap -w 1 -q --json >p2.json 2>err || { bad "run --pcap mix2: rc $?"; cat err; }
$PY - p.json p2.json <<'PY' && ok "SLL2: the same counts as Ethernet, ARP included" || bad "SLL2 counts differ"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
assert a["not_for_us"] == b["not_for_us"] and a["datagrams"] == b["datagrams"], (a["not_for_us"], b["not_for_us"])
PY
"$RXPATH" capture --read mix2.pcap --write raw2.pcap --json >c2.json 2>err
rc=$?
validate capture.schema.json c2.json "capture --json (raw IP out)"
read -r fr wr ni < <($PY -c 'import json,sys; j=json.load(open(sys.argv[1])); print(j["frames"], j["written"], j["not_ip"])' c2.json)
c=$(capinfos -c -M raw2.pcap | awk '/Number of packets/ {print $NF}')
bogus=$(tshark -r raw2.pcap -Y '_ws.malformed || !ip && !ipv6' 2>/dev/null | wc -l)
[ $rc -eq 0 ] && [ "$ni" = 1 ] && [ "$wr" = $((fr - 1)) ] && [ "$c" = "$wr" ] && [ "$bogus" = 0 ] &&
	grep -q "1 frames not written: not IP" err &&
	ok "capture --read SLL2: $wr of $fr frames written as raw IP, the ARP counted as not_ip" ||
	{ bad "capture --read SLL2: rc $rc, frames $fr written $wr not_ip $ni file $c bogus $bogus"; cat err; }
# run --pcap reads what rxpath defrag reads (libwiretap): a gzip-compressed
# capture, and a pcapng whose interfaces have different link types, where a
# frame of a link type nothing here reads (USER0) is counted and said once
gzip -c mix.pcap >mix.pcap.gz
"$RXPATH" run --pcap mix.pcap.gz -w 1 -q --json >pz.json 2>err || { bad "run --pcap .gz: rc $?"; cat err; }
$PY - p.json pz.json <<'PY' && ok "run --pcap mix.pcap.gz: the same counts as mix.pcap" || bad "run --pcap .gz counts differ"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
assert a["not_for_us"] == b["not_for_us"] and a["datagrams"] == b["datagrams"] == 200, (a, b)
PY
$PY - <<'PY' || bad "write user0.pcap"
import struct
with open("user0.pcap", "wb") as f:
    f.write(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, 147))
    for i in range(3):
        f.write(struct.pack("<IIII", 1700000200 + i, 0, 40, 40) + bytes(40))
PY
mergecap -F pcapng -w mixu.pcapng mix.pcap user0.pcap 2>/dev/null || bad "mergecap mixu.pcapng"
"$RXPATH" run --pcap mixu.pcapng -w 1 -q --json >pu.json 2>err
rc=$?
$PY - pu.json <<'PY' && [ $rc -eq 0 ] && [ "$(grep -c 'frames of link type 147 are not read' err)" = 1 ] &&
import json, sys
j = json.load(open(sys.argv[1]))
assert j["datagrams"] == 200 and j["drops"] == {"unsupported_linktype": 3}, (j["datagrams"], j["drops"])
PY
	ok "run --pcap on Ethernet and USER0 interfaces: 200 datagrams, 3 frames unsupported_linktype, said once" ||
	{ bad "run --pcap mixu.pcapng: rc $rc"; cat pu.json err; }
# a capture cut by its snapshot length: run --pcap says why its IP is
# cut short (ip_truncated), once
$PY - <<'PY' || bad "write snap.pcap"
from scapy.all import Ether, IP, UDP, Raw, fragment, wrpcap
pk = [f for i in range(5) for f in fragment(Ether() / IP(src="10.3.0.1", dst="10.3.0.2", id=i) / UDP(sport=1, dport=9) / Raw(b"s" * 3000), 1480)]
wrpcap("snapfull.pcap", pk)
PY
editcap -s 100 snapfull.pcap snap.pcap 2>/dev/null || bad "editcap -s 100"
"$RXPATH" run -q -w 1 --pcap snap.pcap --json >ps.json 2>err
rc=$?
[ $rc -eq 0 ] && [ "$(grep -c '10 frames were cut short by the capture.s snapshot length' err)" = 1 ] &&
	$PY -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["drops"]["ip_truncated"] == 10 and d["datagrams"] == 0, d["drops"]' ps.json &&
	ok "run --pcap on a capture cut to 100 bytes: 10 frames ip_truncated, the snapshot length named once" ||
	{ bad "run --pcap snap.pcap: rc $rc"; cat err ps.json; }
# "-" (stdin) at a terminal: refused, not waited on (script(1) gives the
# command a terminal)
for args in "run -q --pcap -" "capture --read - --write tty.pcap" "defrag - tty.pcap"; do
	out=$(timeout 10 script -qec "'$RXPATH' $args; echo rc=\$?" /dev/null </dev/null | tr -d '\r')
	echo "$out" | grep -q "refusing to read a capture from a terminal" && echo "$out" | grep -q "rc=2" &&
		ok "$args at a terminal: refused, exit 2" || bad "$args at a terminal: $out"
done
# a text file wiretap takes for MP4 is not a capture to run --pcap either
echo hello >hello.txt
"$RXPATH" run -q --pcap hello.txt >/dev/null 2>err
rc=$?
[ $rc -eq 2 ] && grep -q "is it a capture?" err && ok "run --pcap on text read as MP4: exit 2, $(cat err)" ||
	{ bad "run --pcap hello.txt: rc $rc"; cat err; }
# capture --read of raw IP copies each record as it is, IP or not (only a
# frame whose link headers were taken off is refused as not IP)
$PY - <<'PY' || bad "write raw3.pcap"
import struct
ip = bytes([0x45, 0, 0, 20, 0, 1, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2])
with open("raw3.pcap", "wb") as f:
    f.write(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, 101))
    for r in (b"\x00\x01\x02", ip):
        f.write(struct.pack("<IIII", 1, 0, len(r), len(r)) + r)
PY
"$RXPATH" capture --read raw3.pcap --write raw3o.pcap --json >c3.json 2>err
rc=$?
read -r wr ni < <($PY -c 'import json,sys; j=json.load(open(sys.argv[1])); print(j["written"], j["not_ip"])' c3.json)
recs() { $PY -c 'import struct,sys
b = open(sys.argv[1], "rb").read(); i = 24; e = "<" if b[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
while i + 16 <= len(b):
    n = struct.unpack_from(e + "I", b, i + 8)[0]; print(b[i + 16:i + 16 + n].hex()); i += 16 + n' "$1"; }
[ $rc -eq 0 ] && [ "$wr $ni" = "2 0" ] && [ "$(recs raw3.pcap)" = "$(recs raw3o.pcap)" ] &&
	ok "capture --read of raw IP: both records copied, the one that is not IP too" ||
	{ bad "capture --read raw3.pcap: rc $rc, written $wr not_ip $ni"; cat err; }
# capture --read reads a pcapng of several link types (the same reader as
# run --pcap) and writes raw IP: each Ethernet frame's IP packet from its
# IP header, the ARP counted as not_ip,
# the USER0 frames as unsupported_linktype; run --pcap then finds the same
# 200 datagrams and the same ICMP, NDP and TCP in what it wrote
"$RXPATH" capture --read mixu.pcapng --write mixuo.pcap --json >cu.json 2>err
rc=$?
"$RXPATH" run --pcap mixuo.pcap -w 1 -q --json >puo.json 2>>err
$PY - cu.json puo.json p.json <<'PY' && [ $rc -eq 0 ] &&
import json, sys
c, r, p = (json.load(open(f)) for f in sys.argv[1:4])
assert c["not_ip"] == 1 and c["written"] == c["frames"] - 1, c
assert c["drops"] == {"unsupported_linktype": 3}, c["drops"]
n, m = r["not_for_us"], p["not_for_us"]
assert r["datagrams"] == 200 and r["drops"] == {}, (r["datagrams"], r["drops"])
assert all(n[k] == m[k] for k in ("icmp", "ndp", "tcp")) and n["arp"] == n["not_ip"] == 0, (n, m)
PY
	[ "$(tshark -r mixuo.pcap -Y '_ws.malformed || !ip && !ipv6' 2>/dev/null | wc -l)" = 0 ] &&
	ok "capture --read of a mixed-link pcapng: raw IP, the ARP not IP, 3 USER0 dropped; run finds 200 datagrams in it" ||
	{ bad "capture --read mixu.pcapng: rc $rc"; cat err cu.json puo.json; }
# a --write name that says pcapng or a compression: written as classic
# pcap all the same, and said once
"$RXPATH" capture --read mix.pcap --write named.pcapng >/dev/null 2>err
rc=$?
[ $rc -eq 0 ] && [ "$(grep -c 'named.pcapng is written as classic pcap' err)" = 1 ] &&
	capinfos -t named.pcapng | grep -q "nanosecond pcap" &&
	ok "capture --write named.pcapng: classic pcap, said once" ||
	{ bad "capture --write named.pcapng: rc $rc"; cat err; }
"$RXPATH" run -q -w 1 --pcap mix.pcap --write named.pcap.gz >/dev/null 2>err
rc=$?
[ $rc -eq 0 ] && [ "$(grep -c 'named.pcap.gz is written as classic pcap' err)" = 1 ] &&
	ok "run --write named.pcap.gz: classic pcap, said once" ||
	{ bad "run --write named.pcap.gz: rc $rc"; cat err; }
# a busy capture (1,500 datagrams in flight) meets run's reassembly memory
# cap (4 MiB per worker, as a host's): the drops are counted and the knob
# named once; with --mem-limit 64m every datagram is delivered
$PY - <<'PY' || bad "write busy.pcap"
from scapy.all import Ether, IP, UDP, Raw, fragment, wrpcap
fr = [fragment(Ether() / IP(src="10.7.%d.%d" % (i // 250, i % 250 + 1), dst="10.7.255.2", id=i) /
               UDP(sport=1, dport=9) / Raw(bytes([i % 256]) * 3000), 1480) for i in range(1500)]
out = [f[r] for r in range(3) for f in fr]
for k, f in enumerate(out):
    f.time = 1700000300 + k * 1e-5
wrpcap("busy.pcap", out)
PY
"$RXPATH" run -q -w 1 --pcap busy.pcap --json >pb.json 2>err
rc=$?
"$RXPATH" run -q -w 1 --pcap busy.pcap --mem-limit 64m --json >pb64.json 2>err64
$PY - pb.json pb64.json <<'PY' && [ $rc -eq 0 ] && [ "$(grep -c 'dropped at the reassembly memory cap' err)" = 1 ] &&
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
d = a["drops"]
assert a["datagrams"] < 1500 and d.get("frag_mem_limit", 0) + d.get("frag_evicted", 0) > 0, a
assert b["datagrams"] == 1500 and b["drops"] == {}, b
PY
	! grep -q "memory cap" err64 &&
	ok "run --pcap of 1,500 datagrams in flight: cap drops counted, --mem-limit named once; 64m delivers all" ||
	{ bad "run --pcap busy.pcap: rc $rc"; cat err err64; }
# the sim NIC replaying a capture with an empty record and a record too
# big for a jumbo frame: each a counted drop, offered and dropped, and
# capture's check that every frame is written or dropped still holds
# (2 queues: counted once)
$PY - <<'PY' || bad "write holes.pcap"
import struct
eth = bytes(12) + b"\x08\x00" + bytes([0x45, 0, 0, 20]) + bytes(16)
with open("holes.pcap", "wb") as f:
    f.write(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 262144, 1))
    for r in (eth, b"", eth, bytes(12) + b"\x08\x00" + bytes(20000), eth):
        f.write(struct.pack("<IIII", 1, 0, len(r), len(r)) + r)
PY
"$RXPATH" capture --dev "sim:queues=2,replay=holes.pcap" --write holeso.pcap --json >ch.json 2>err
rc=$?
$PY - ch.json <<'PY' && [ $rc -eq 0 ] &&
import json, sys
j = json.load(open(sys.argv[1]))
assert j["written"] == 3 and j["offered"] == 5, j
assert j["drops"] == {"pkt_too_small": 1, "pkt_too_big": 1}, j["drops"]
PY
	ok "capture of a sim replay with an empty and a too-big record: 3 written, 2 counted drops, exit 0" ||
	{ bad "capture sim:replay=holes.pcap: rc $rc"; cat err ch.json; }
# defrag --json: its summary on stdout (stderr when OUT is -), every key in
# docs/defrag.schema.json, with one policy and with all of them
"$RXPATH" defrag --json mix.pcap d.pcap >d.json 2>err || { bad "defrag --json: rc $?"; cat err; }
validate defrag.schema.json d.json "defrag --json"
"$RXPATH" defrag --json --policy all mix.pcap - >/dev/null 2>da.json || { bad "defrag --policy all --json: rc $?"; }
validate defrag.schema.json da.json "defrag --policy all --json (on stderr, OUT is -)"
"$RXPATH" run --pcap mix.pcap -w 1 -q >text 2>err || { bad "run --pcap mix.pcap (text): exit $?"; cat err; }
grep -q "the capture spans 0.60" text && grep -q "in capture time" text && ok "text summary gives the span and both rates" ||
	{ bad "text summary rates"; cat text; }
"$RXPATH" run --pcap offload.pcap -w 1 -q --json >a.json 2>err || bad "run offload auto: exit $?"
"$RXPATH" run --pcap offload.pcap -w 1 -q --json --udp-csum check >c.json 2>err ||
	bad "run offload check: exit $?"
"$RXPATH" run --pcap offload.pcap -w 1 -q --json --udp-csum skip >s.json 2>err ||
	bad "run offload skip: exit $?"
$PY - a.json c.json s.json <<'PY' && ok "offloaded checksums: accepted in auto, dropped in check, unchecked in skip" || bad "offloaded checksums"
import json, sys
a, c, s = (json.load(open(f)) for f in sys.argv[1:4])
assert a["datagrams"] == 20 and a["udp"]["InCsumOffload"] == 20, a["udp"]
assert c["datagrams"] == 0 and c["drops"].get("udp_bad_checksum") == 20, c["drops"]
assert s["datagrams"] == 20 and s["udp"]["InCsumUnchecked"] == 20, s["udp"]
PY
rxpt_sanitizer_reports "$T" || fail=1
exit $fail
