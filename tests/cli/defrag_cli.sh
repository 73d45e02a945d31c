#!/bin/bash
# rxpath defrag on captures made with scapy (tests/tools/defrag_pcap.py):
# Ethernet pcap, raw-IP pcap and pcapng in; tshark reads the output and the
# datagram lengths and payload digests must match what was fragmented. Both
# profiles (the file default reassembles the datagram whose last fragment
# comes after 30 s; --kernel loses it to the timeout). Also
# --keep-incomplete, --forward, a target policy, and bad input/options.
# Needs no root: exits 77 when scapy (/usr/bin/python3) or tshark is missing.
set -u
RXPATH=${RXPATH:-$(dirname "$0")/../../build/release/rxpath}
SRC=${RXP_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
PY=/usr/bin/python3
if ! $PY -c 'import scapy' 2>/dev/null; then echo "SKIP: scapy missing in $PY"; exit 77; fi
if ! command -v tshark >/dev/null; then echo "SKIP: tshark missing"; exit 77; fi
T=$(mktemp -d)
. "$SRC/tests/tools/sanitizer.sh"
rxpt_sanitizer_log "$T"
trap 'rm -rf "$T"' EXIT
fail=0
$PY "$SRC/tests/tools/defrag_pcap.py" gen "$T" >/dev/null 2>&1 || { echo "FAIL: gen"; exit 1; }
for f in in_eth.pcap in_raw.pcap in_eth.pcapng; do
	for opts in "" "--kernel" "--forward" "--kernel --policy bsd" "--mem-limit 64k --json"; do
		# shellcheck disable=SC2086
		if ! "$RXPATH" defrag $opts "$T/$f" "$T/out.pcap" >/dev/null 2>"$T/err"; then
			echo "FAIL: rxpath defrag $opts $f"; cat "$T/err"; fail=1; continue
		fi
		extra=0 prof=file
		case "$opts" in *policy*) extra=1 ;; esac
		case "$opts" in *kernel*) prof=kernel ;; esac
		if ! $PY "$SRC/tests/tools/defrag_pcap.py" check "$T" "$T/out.pcap" 0 $extra $prof >"$T/res"; then
			echo "FAIL: $f $opts"; cat "$T/res"; fail=1
		else
			echo "ok: $f $opts: $(head -1 "$T/res")"
		fi
	done
	for prof in file kernel; do
		popt=; [ $prof = kernel ] && popt=--kernel
		# shellcheck disable=SC2086
		"$RXPATH" defrag $popt --keep-incomplete "$T/$f" "$T/outk.pcap" 2>/dev/null
		if ! $PY "$SRC/tests/tools/defrag_pcap.py" check "$T" "$T/outk.pcap" -1 0 $prof >"$T/res"; then
			echo "FAIL: $f $popt --keep-incomplete"; cat "$T/res"; fail=1
		else
			echo "ok: $f $popt --keep-incomplete: $(head -1 "$T/res")"
		fi
	done
done
# --json is on stdout; the file profile reassembles the late datagram, the
# kernel's loses it to the timeout and says so on stderr
"$RXPATH" defrag --json "$T/in_eth.pcap" "$T/out.pcap" >"$T/json" 2>"$T/err"
$PY -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["ReasmOKs"]==5 and d["ReasmOverlaps"]==1 and d["duplicates"]==1 and d["ReasmTimeout"]==0 and d["profile"]=="file", d' "$T/json" \
	|| { echo "FAIL: json summary"; cat "$T/json"; fail=1; }
"$RXPATH" defrag --kernel --json "$T/in_eth.pcap" "$T/out.pcap" >"$T/json" 2>"$T/err"
$PY -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["ReasmOKs"]==4 and d["ReasmTimeout"]==2 and d["profile"]=="kernel" and d["mem_limit"]==4<<20, d' "$T/json" \
	|| { echo "FAIL: json summary --kernel"; cat "$T/json"; fail=1; }
grep -q "lost to the timeout: 2 datagrams expired.*--timeout none keeps them" "$T/err" \
	|| { echo "FAIL: --kernel does not say what the timeout lost"; cat "$T/err"; fail=1; }
echo garbage >"$T/bad.pcap"
for args in "--policy nope $T/in_eth.pcap $T/x" "--mem-limit x $T/in_eth.pcap $T/x" \
	    "--timeout 0 $T/in_eth.pcap $T/x" "$T/missing.pcap $T/x" "$T/bad.pcap $T/x" \
	    "$T/in_eth.pcap" "$T/in_eth.pcap /nonexistent-dir/x.pcap"; do
	# shellcheck disable=SC2086
	"$RXPATH" defrag $args 2>"$T/err"
	rc=$?
	if [ $rc -eq 0 ] || ! [ -s "$T/err" ]; then echo "FAIL: '$args' rc=$rc"; fail=1; fi
done
# The default cap is a quarter of what the process may use: its cgroup's
# limit counts, read through /proc/self/cgroup (v1 or v2), here a child
# memory cgroup of this shell's own with 1 GiB: "mem 256m". Where no child
# cgroup can be made (no root, a read-only tree), said and skipped.
cg=
v2=$(awk -F: '$1 == "0" {print $3}' /proc/self/cgroup)
v1=$(awk -F: '$2 == "memory" {print $3}' /proc/self/cgroup)
if [ -n "$v1" ] && [ -d "/sys/fs/cgroup/memory$v1" ] && mkdir "/sys/fs/cgroup/memory$v1/rxp-t$$" 2>/dev/null; then
	cg=/sys/fs/cgroup/memory$v1/rxp-t$$
	echo 1073741824 >"$cg/memory.limit_in_bytes" 2>/dev/null || cg=
elif [ -n "$v2" ] && [ -f /sys/fs/cgroup/cgroup.controllers ] &&
	mkdir "/sys/fs/cgroup${v2%/}/rxp-t$$" 2>/dev/null; then
	cg=/sys/fs/cgroup${v2%/}/rxp-t$$
	echo 1073741824 >"$cg/memory.max" 2>/dev/null || cg=
fi
if [ -n "$cg" ]; then
	bash -c 'echo $$ >"$1/cgroup.procs" && exec "$2" defrag "$3" "$4"' _ "$cg" "$RXPATH" \
		"$T/in_eth.pcap" "$T/out.pcap" 2>"$T/err" >/dev/null
	grep -q "mem 256m" "$T/err" && echo "ok: a 1 GiB cgroup limit gives the default cap 256m" ||
		{ echo "FAIL: default cap under a 1 GiB cgroup: $(head -1 "$T/err")"; fail=1; }
	rmdir "$cg" 2>/dev/null
else
	echo "skip: no child memory cgroup could be made here"
fi
rxpt_sanitizer_reports "$T" || fail=1
[ $fail -eq 0 ] && echo "defrag_cli: all passed"
exit $fail
