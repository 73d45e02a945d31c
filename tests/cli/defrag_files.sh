#!/bin/bash
# rxpath defrag as a file tool (issue #21 items 1, 4, 5): each case compares
# what rxpath wrote with tshark's own reassembly of the input (the sorted
# SHA-256 of every complete UDP payload, tests/tools/defrag_files.py).
#   OUT=IN refused (same name, symlink, hard link) with IN untouched;
#   a capture cut off mid-record (editcap/head) keeps what was read, exit 1;
#   snaplen-truncated fragments (editcap -s) pass unchanged and are counted;
#   clock skew: one timestamp 1000 s ahead / behind; gzip and zstd input;
#   stdin and stdout; tcpdump -i any's second copy of each frame (late
#   duplicates dropped, --kernel keeps them); pcapng with two link types (mergecap) round trip,
#   interfaces and timestamp resolutions kept; --filter; a queue cap that
#   loses datagrams says so; a failed write leaves no OUT; pcap in either
#   byte order (both read by rxpath's own reader) gives the same OUT, exit
#   status and reason, whole, cut or with oversized records; OUT a FIFO
#   is written in place.
# Needs no root: exits 77 when scapy (/usr/bin/python3), tshark, editcap,
# mergecap, capinfos, gzip or zstd is missing.
set -u
RXPATH=${RXPATH:-$(dirname "$0")/../../build/release/rxpath}
SRC=${RXP_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
PY=/usr/bin/python3
H="$SRC/tests/tools/defrag_files.py"
if ! $PY -c 'import scapy' 2>/dev/null; then echo "SKIP: scapy missing in $PY"; exit 77; fi
for t in tshark editcap mergecap capinfos gzip zstd; do
	command -v $t >/dev/null || { echo "SKIP: $t missing"; exit 77; }
done
T=$(mktemp -d)
. "$SRC/tests/tools/sanitizer.sh"
rxpt_sanitizer_log "$T"
trap 'rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
ok() { echo "ok: $*"; }
# The default memory cap (a quarter of RAM) makes the pools reserve that much;
# cheap in a normal build, but ASan maps shadow for all of it at every run.
# Cases where the cap does not matter run with a small one; the first and
# the JSON profile checks use the default.
D() { "$RXPATH" defrag --mem-limit 256m "$@"; }
D0() { "$RXPATH" defrag "$@"; }
tsh() { $PY "$H" payloads "$1" defrag; } # tshark reassembling IN
got() { $PY "$H" payloads "$1"; }        # complete datagrams in OUT
jget() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }

$PY "$H" gen "$T" || { echo "FAIL: gen"; exit 1; }
cd "$T" || exit 1

# the same datagrams as tshark, IPv4 (nanosecond pcap) and IPv6 (microsecond)
for f in flight flight6; do
	D0 "$f.pcap" "o_$f.pcap" 2>err || bad "$f: rc $?"
	n=$(tsh "$f.pcap" | wc -l)
	if [ "$n" -gt 0 ] && [ "$(tsh "$f.pcap")" = "$(got "o_$f.pcap")" ]; then
		ok "$f: $n datagrams, as tshark"
	else bad "$f: differs from tshark ($n)"; fi
done
[ "$(capinfos -M -r o_flight6.pcap 2>/dev/null | grep -c 'microseconds')" -ge 1 ] &&
	[ "$(capinfos -M -r o_flight.pcap 2>/dev/null | grep -c 'nanoseconds')" -ge 1 ] &&
	ok "pcap out keeps IN's timestamp resolution" || bad "pcap timestamp resolution not kept"

# tcpdump -i any on a router: every frame twice, IDs wrapping. The file
# profile drops each late copy of a completing fragment, and every datagram
# comes out right; the kernel's hands them to the table, where each starts a
# stale datagram that the next one with its ID joins, with wrong bytes (as
# tshark shows them too).
jfr() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["frames"]["late_duplicates"])' "$1"; }
D --json anydup.pcap o_any.pcap >j 2>err || bad "anydup: rc $?"
n=$(wc -l <anydup.pcap.truth)
if [ "$(got o_any.pcap)" = "$(cat anydup.pcap.truth)" ] && [ "$(jfr j)" -eq "$n" ] &&
	[ "$(jget j reassembled)" -eq "$n" ]; then
	ok "tcpdump -i any copies: $n datagrams right, $n late duplicates dropped"
else bad "anydup: late_duplicates $(jfr j), reassembled $(jget j reassembled) of $n"; cat err; fi
# The same where every third datagram's copies go out only after both of
# its fragments came in: the first fragment's copy is late too, and is
# found by the datagram's bytes (kept while the input shows late copies).
D --json anydup_batch.pcap o_anyb.pcap >j 2>err || bad "anydup_batch: rc $?"
nb=$((n + (n + 2) / 3))
if [ "$(got o_anyb.pcap)" = "$(cat anydup_batch.pcap.truth)" ] && [ "$(jfr j)" -eq "$nb" ] &&
	[ "$(jget j reassembled)" -eq "$n" ] && [ "$($PY -c 'import json,sys; print(sum(json.load(open(sys.argv[1]))["given_up"].values()))' j)" -eq 0 ]; then
	ok "copies forwarded after the whole datagram: $n datagrams right, $nb late duplicates dropped"
else bad "anydup_batch: late_duplicates $(jfr j) (want $nb), reassembled $(jget j reassembled) of $n"; cat err; fi
D --kernel --json anydup.pcap o_anyk.pcap >j 2>err || bad "line 80: rxpath defrag exit $?"
wrong=$(got o_anyk.pcap | comm -23 - anydup.pcap.truth | wc -l)
tw=$(tsh anydup.pcap | comm -23 - anydup.pcap.truth | wc -l)
if [ "$(jfr j)" -eq 0 ] && [ "$wrong" -gt 0 ]; then
	ok "--kernel keeps late duplicates: $wrong datagrams with stale bytes (tshark: $tw)"
else bad "--kernel anydup: late_duplicates $(jfr j), wrong $wrong"; fi

# OUT = IN, by name, through a symlink and a hard link: refused, IN untouched
cp flight.pcap same.pcap
ln -s same.pcap link.pcap
ln same.pcap hard.pcap
for out in same.pcap link.pcap hard.pcap "./same.pcap"; do
	D same.pcap "$out" 2>err
	rc=$?
	if [ $rc -eq 2 ] && cmp -s same.pcap flight.pcap && [ "$(wc -l <err)" -eq 1 ] &&
		grep -q "same file" err; then ok "OUT=IN ($out) refused"
	else bad "OUT=IN ($out): rc $rc"; cat err; fi
done
ls -a | grep -q rxpath- && bad "a temporary file was left behind"

# an empty IN is not a capture (wiretap would take it for ERF): exit 2, no OUT
: >empty.pcap
D empty.pcap o_empty.pcap 2>err
[ $? -eq 2 ] && [ ! -e o_empty.pcap ] && [ "$(wc -l <err)" -eq 1 ] && ok "empty IN refused" ||
	{ bad "empty IN"; cat err; }
# a text file libwiretap takes for MP4: the input is blamed, not OUT
printf 'hello\n' >hello.pcap
D hello.pcap o_hello.pcap 2>err
[ $? -eq 2 ] && [ ! -e o_hello.pcap ] && [ "$(wc -l <err)" -eq 1 ] && grep -q "^rxpath defrag: hello.pcap, read as" err &&
	! grep -q "cannot write" err && ok "a non-capture IN named as the fault: $(cat err)" ||
	{ bad "hello IN"; cat err; }

# cut off mid-record: what was read is written, a warning, exit 1
size=$(stat -c %s flight.pcap)
head -c $((size / 2 + 77)) flight.pcap >cut.pcap
D --keep-incomplete --json cut.pcap o_cut.pcap >j 2>err
rc=$?
read_n=$(tshark -r cut.pcap 2>/dev/null | wc -l)
out_n=$(tshark -r o_cut.pcap 2>/dev/null | wc -l)
sum=$(( $(jget j passed) + $(jget j reassembled) + $(jget j kept_fragments) ))
if [ $rc -eq 1 ] && grep -q "cut off after record $read_n" err && [ "$(jget j input_end)" = cut ] &&
	[ "$(jget j records_in)" -eq "$read_n" ] && [ "$out_n" -eq "$sum" ] && [ "$out_n" -gt 0 ]; then
	ok "cut capture: $read_n records read, $out_n frames written, exit 1"
else bad "cut capture: rc $rc read $read_n out $out_n sum $sum"; cat err; fi

# snaplen-truncated fragments pass unchanged and are counted
editcap -F pcap -s 200 flight.pcap snap.pcap
D --json snap.pcap o_snap.pcap >j 2>err || bad "snap: rc $?"
if [ "$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["frames"]["truncated"])' j)" -eq 800 ] &&
	[ "$(jget j reassembled)" -eq 0 ] &&
	[ "$(tshark -r snap.pcap -T fields -e frame.len -e frame.cap_len -e frame.time_epoch 2>/dev/null | md5sum)" = \
	  "$(tshark -r o_snap.pcap -T fields -e frame.len -e frame.cap_len -e frame.time_epoch 2>/dev/null | md5sum)" ]; then
	ok "snaplen-cut fragments: 800 passed unchanged, counted"
else bad "snaplen-cut fragments"; cat j; fi

# clock skew: a lone timestamp 1000 s ahead or behind loses nothing in the
# file profile, also with a timeout (the clock follows the bulk of the
# packets); tshark agrees. After the jump back a real 31 s gap still
# expires the stale queue (timer order intact).
for f in skew_fwd skew_back; do
	for opts in "" "--timeout 30"; do
		# shellcheck disable=SC2086
		D $opts --json "$f.pcap" "o_$f.pcap" >j 2>err || bad "$f $opts: rc $?"
		if [ "$(tsh "$f.pcap")" = "$(got "o_$f.pcap")" ] && [ "$(jget j ReasmOKs)" -eq 100 ]; then
			ok "$f $opts: 100 datagrams, as tshark"
		else bad "$f $opts: $(jget j ReasmOKs) datagrams"; fi
	done
done
[ "$(jget j ReasmTimeout)" -eq 1 ] && grep -q "lost to the timeout: 1 datagrams" err &&
	ok "skew_back --timeout 30: the stale queue still expires, and stderr says so" ||
	bad "skew_back: ReasmTimeout $(jget j ReasmTimeout)"
# --kernel is the live host: its timers follow the capture's time, so the
# jump ahead expires everything in flight, and the jump back changes nothing
D --kernel --max-dist 0 --json skew_fwd.pcap o.pcap >j 2>err || bad "line 153: rxpath defrag exit $?"
[ "$(jget j ReasmTimeout)" -ge 50 ] && ok "skew_fwd --kernel: $(jget j ReasmTimeout) expired by the jump" ||
	bad "skew_fwd --kernel: ReasmTimeout $(jget j ReasmTimeout)"
D --kernel --max-dist 0 --json skew_back.pcap o.pcap >j 2>err || bad "line 156: rxpath defrag exit $?"
[ "$(jget j ReasmOKs)" -eq 100 ] && [ "$(jget j ReasmTimeout)" -eq 1 ] &&
	ok "skew_back --kernel: 100 datagrams, the stale queue expired" ||
	bad "skew_back --kernel: $(jget j ReasmOKs) OK, $(jget j ReasmTimeout) expired"

# gzip and zstd input, stdin and stdout: the same bytes as from the file
D flight.pcap o_plain.pcap 2>/dev/null || bad "line 162: rxpath defrag exit $?"
gzip -c flight.pcap >flight.pcap.gz
zstd -q -c flight.pcap >flight.pcap.zst
for f in flight.pcap.gz flight.pcap.zst; do
	D "$f" o_c.pcap 2>/dev/null && cmp -s o_c.pcap o_plain.pcap && ok "$f read" || bad "$f"
done
D - - <flight.pcap.zst >o_pipe.pcap 2>err && cmp -s o_pipe.pcap o_plain.pcap &&
	ok "stdin to stdout" || bad "stdin to stdout"
D --json - - <flight.pcap >o_pipe.pcap 2>err
$PY -c 'import json,sys; json.loads(open(sys.argv[1]).read().splitlines()[-1])' err 2>/dev/null &&
	cmp -s o_pipe.pcap o_plain.pcap && ok "--json on stderr when OUT is stdout" ||
	bad "--json with OUT '-'"
D0 --json flight.pcap o.pcap >j 2>/dev/null || bad "line 174: rxpath defrag exit $?"
[ "$(jget j ReasmOKs)" -eq 200 ] && [ "$(jget j profile)" = file ] && [ "$(jget j max_dist)" -eq 0 ] &&
	[ "$(jget j timeout_v4_ns)" -eq 0 ] && [ "$(jget j mem_limit)" -ge $((64 << 20)) ] &&
	ok "--json on stdout; the file profile: no max_dist, no timeout, $(jget j mem_limit) bytes" ||
	bad "--json on stdout"

# pcapng with two link types (Ethernet and raw IP, nanosecond and microsecond
# interfaces), merged by mergecap: read whole, written back as pcapng with
# both interfaces, their link types and resolutions, tshark's datagrams
mergecap -F pcapng -w mixed.pcapng flight.pcap raw6.pcap
D mixed.pcapng o_mixed.pcapng 2>err || bad "mixed: rc $?"
ifs_in=$(capinfos -M mixed.pcapng | grep -E "Encapsulation =|Time precision =" | sort | uniq -c)
ifs_out=$(capinfos -M o_mixed.pcapng | grep -E "Encapsulation =|Time precision =" | sort | uniq -c)
if [ "$(tsh mixed.pcapng)" = "$(got o_mixed.pcapng)" ] && [ "$(tsh mixed.pcapng | wc -l)" -eq 260 ] &&
	[ "$ifs_in" = "$ifs_out" ] && [ "$(capinfos -M o_mixed.pcapng | grep -c 'Interface #')" -eq 2 ]; then
	ok "mixed-link pcapng: 260 datagrams as tshark, 2 interfaces kept"
else bad "mixed-link pcapng"; echo "$ifs_in"; echo "$ifs_out"; cat err; fi
D flight.pcap o_ng.pcapng 2>/dev/null || bad "line 191: rxpath defrag exit $?"
[ "$(head -c 4 o_ng.pcapng | od -An -tx1 | tr -d ' ')" = 0a0d0d0a ] && ok "OUT *.pcapng is pcapng" ||
	bad "OUT .pcapng not pcapng"

# --filter: only matching fragments are reassembled, the rest pass as they are
D --json -f "src host 10.8.0.1" twosrc.pcap o_f.pcap >j 2>err || bad "filter: rc $?"
n1=$(tshark -r o_f.pcap -o ip.defragment:FALSE -Y "ip.src==10.8.0.1 and udp" 2>/dev/null | wc -l)
n2=$(tshark -r o_f.pcap -o ip.defragment:FALSE -Y "ip.src==10.8.0.2" 2>/dev/null | wc -l)
[ "$n1" -eq 30 ] && [ "$n2" -eq 120 ] && [ "$(jget j filtered_out)" -eq 120 ] &&
	[ "$(tsh twosrc.pcap)" = "$(tsh o_f.pcap)" ] &&
	ok "--filter: 30 datagrams reassembled, 120 fragments passed" || bad "--filter: $n1 $n2"
D -f "not a filter((" flight.pcap o.pcap 2>err
[ $? -eq 2 ] && [ "$(wc -l <err)" -eq 1 ] && ok "bad --filter: one line, exit 2" || bad "bad --filter"

# --policy all: OUT as strict, also for datagram 5, which strict delivers
# and solaris (the last policy run) sees otherwise; the datagrams the
# policies see differently are named, with which targets see which bytes;
# the one without overlap is not
D --policy all --json overlap.pcap o_all.pcap >j 2>err || bad "--policy all: rc $?"
D overlap.pcap o_strict.pcap 2>/dev/null || bad "line 210: rxpath defrag exit $?"
if cmp -s o_all.pcap o_strict.pcap && [ "$(jget j policy_differences)" -eq 4 ] &&
	[ "$(jget j policy)" = all ] && [ "$(grep -c 'policies differ' err)" -eq 4 ] &&
	grep -q "id 5 proto 17, 92 bytes: strict,first,windows see [0-9a-f]* (92 bytes); .*bsd,solaris see" err &&
	grep -q "id 2 proto 17, 92 bytes: first,bsd,bsd-right,linux,windows,solaris see [0-9a-f]* (92 bytes); last see [0-9a-f]* (92 bytes); strict delivers nothing" err &&
	grep -q "2001:db8::5 > 2001:db8::99 .*; last see" err &&
	grep -q "id 4 proto 17, 92 bytes: first,last,bsd,bsd-right,linux,windows,solaris see [0-9a-f]* (92 bytes); strict delivers nothing" err &&
	! grep -q "id 1 " err; then
	ok "--policy all: 4 datagrams differ (last vs the rest, strict drops overlaps or keeps the first bytes), OUT as strict"
else bad "--policy all"; cat err; fi

# --report: one of each event, the reassembled datagrams' frames as tshark's
D --timeout 30 --report rep.jsonl --json events.pcap o_ev.pcap >j 2>err || bad "--report: rc $?"
if $PY "$H" report events.pcap rep.jsonl >res; then ok "--report: $(tail -1 res)"
else bad "--report"; cat res; fi
D --timeout 30 events.pcap o.pcap 2>err || bad "line 225: rxpath defrag exit $?"
grep -q "IP reassembly statistics" err && grep -q "^IPv4 " err &&
	grep -q "Datagrams given up, by reason: overlap 1 timeout 2 end_of_input 2" err && grep -q "^IPv4 *12 *3 *2.33 *3$" err &&
	ok "summary table" || { bad "summary table"; cat err; }
[ "$(jget j overlaps)" -eq 2 ] && [ "$(jget j overlaps_differ)" -eq 1 ] && [ "$(jget j tiny_fragments)" -eq 7 ] && [ "$(jget j df_fragments)" -eq 2 ] &&
	ok "--json families, overlaps, tiny, DF" || bad "--json report counts"
# without --report the table gets no event per fragment (the counts come
# from its counters and the datagrams' events): the same counts
D --timeout 30 --json events.pcap o_ev2.pcap >j2 2>/dev/null || bad "--json without --report: rc $?"
for k in tiny_fragments df_fragments overlaps overlaps_differ; do
	[ "$(jget j $k)" = "$(jget j2 $k)" ] || bad "--json $k: $(jget j $k) with --report, $(jget j2 $k) without"
done
grep -o '"ipv[46]":{[^}]*}' j >f1; grep -o '"ipv[46]":{[^}]*}' j2 >f2
cmp -s f1 f2 && [ -s f1 ] && cmp -s o_ev.pcap o_ev2.pcap &&
	ok "--json families, tiny and DF the same without --report" || { bad "--json without --report"; cat f1 f2; }
D --report events.pcap events.pcap o.pcap 2>err
[ $? -eq 2 ] && grep -q "would overwrite" err && ok "--report IN refused" || bad "--report IN"
# OUT under another name, or a link to where OUT will be: refused before
# OUT is opened (OUT's rename would have replaced the report)
rm -f o_new.pcap rl
ln -s o_new.pcap rl
for r in ./o_new.pcap rl; do
	D --report "$r" events.pcap o_new.pcap >out 2>err
	rc=$?
	[ $rc -eq 2 ] && grep -q "would overwrite" err && [ ! -e o_new.pcap ] && [ ! -s out ] &&
		ok "--report $r (OUT o_new.pcap) refused, nothing written" ||
		{ bad "--report $r as OUT: rc $rc"; cat err; }
done
D --report - events.pcap - >out 2>err
[ $? -eq 2 ] && [ ! -s out ] && ok "--report - with OUT - refused, stdout empty" ||
	bad "--report - with OUT -: stdout $(wc -c <out) bytes"

# a limit that loses datagrams says how many and which option keeps them
D --max-queues 10 --json flight.pcap o.pcap >j 2>err || bad "line 258: rxpath defrag exit $?"
grep -q -- "--max-queues 10): a larger --mem-limit or --max-queues keeps them" err &&
	[ "$(jget j ReasmOKs)" -lt 200 ] && ok "--max-queues 10 loses $((200 - $(jget j ReasmOKs))) and says so" ||
	bad "--max-queues loss not reported"; cat err | head -2
D --max-queues 60 flight.pcap o.pcap 2>err
rc=$?
[ $rc -eq 0 ] && [ -s err ] && ! grep -q "lost" err && ok "--max-queues 60: nothing lost, nothing said" ||
	{ bad "--max-queues 60 (rc $rc) should lose nothing"; cat err; }

# plain pcap (version 2.4) is read by rxpath itself, in either byte
# order: both give the same OUT, exit status and reason for stopping, on
# whole captures (nanoseconds and micro-) and on broken ones: cut in a
# record header, cut in its data, a record longer than the snaplen (all
# of it, as wiretap gives it), one longer than the snaplen and than 262144
# bytes. (fuzz_dio compares this reader with wiretap's on every input.)
$PY - flight.pcap flight6.pcap <<'EOF'
import struct, sys
def recs(path):
    b = open(path, 'rb').read()
    hdr, out, i = list(struct.unpack('<IHHiIII', b[:24])), [], 24
    while i < len(b):
        h = list(struct.unpack('<IIII', b[i:i + 16]))
        out.append((h, b[i + 16:i + 16 + h[2]]))
        i += 16 + h[2]
    return hdr, out
def write(name, hdr, rs, tail=b''):
    for e, tag in (('<', 'n'), ('>', 's')):
        o = [struct.pack(e + 'IHHiIII', *hdr)]
        for h, d in rs:
            o.append(struct.pack(e + 'IIII', *h) + d)
        if tail:
            o.append(struct.pack(e + 'IIII', *tail[0]) + tail[1])
        open('%s_%s.pcap' % (tag, name), 'wb').write(b''.join(o)[:len(b''.join(o)) - tail[2] if tail else None])
h4, r4 = recs(sys.argv[1])
h6, r6 = recs(sys.argv[2])
write('whole4', h4, r4)
write('whole6', h6, r6)
write('cuthdr', h4, r4[:50], ([1, 0, 100, 100], b'x' * 100, 110))
write('cutdata', h4, r4[:50], ([1, 0, 100, 100], b'x' * 100, 40))
snap = list(h4); snap[5] = 1000
write('oversnap', snap, r4[:60])
write('huge', h4, r4[:50], ([1, 0, 300000, 300000], b'x' * 300000, 0))
big = list(h4); big[5] = 0x7fffffff
write('hugemax', big, r4[:50], ([1, 0, 300000, 300000], b'x' * 300000, 0))
EOF
for f in whole4 whole6 cuthdr cutdata oversnap huge hugemax; do
	D "n_$f.pcap" "on_$f.pcap" 2>en; rn=$?
	D "s_$f.pcap" "os_$f.pcap" 2>es; rs=$?
	wn=$(grep "after record" en | sed 's/[ns]_'$f'.pcap//'); ws=$(grep "after record" es | sed 's/[ns]_'$f'.pcap//')
	[ -s "on_$f.pcap" ] && cmp -s "on_$f.pcap" "os_$f.pcap" && [ $rn -eq $rs ] && [ "$wn" = "$ws" ] &&
		ok "$f: rc $rn, the same from either byte order${wn:+ ($wn)}" ||
		{ bad "$f: the two byte orders differ (rc $rn/$rs)"; echo "$wn"; echo "$ws"; }
done

# OUT a FIFO (as /dev/null): written in place, not replaced by a file
mkfifo fifo
timeout 60 cat fifo >from_fifo &
cpid=$!
D flight.pcap fifo 2>err
rc=$?
wait $cpid
D flight.pcap o_file.pcap 2>/dev/null || bad "line 317: rxpath defrag exit $?"
[ $rc -eq 0 ] && [ -p fifo ] && [ -s o_file.pcap ] && cmp -s from_fifo o_file.pcap && ok "OUT a FIFO: written in place" ||
	{ bad "OUT a FIFO: rc $rc"; cat err; }

# a write that fails leaves no OUT (a full device)
if [ -w /dev/full ]; then
	D flight.pcap - >/dev/full 2>err
	[ $? -eq 1 ] && grep -q "cannot write stdout" err && ok "write to a full device: exit 1" ||
		bad "write to /dev/full"; cat err | head -1
fi
[ $fail -eq 0 ] && echo "defrag_files: all passed"
rxpt_sanitizer_reports "$T" || fail=1
exit $fail
