#!/bin/bash
# The long fuzz campaign (make fuzz-long): every libFuzzer target in turn,
# one process at a time, until it has run FUZZ_RUNS inputs (default 10^7)
# or, when FUZZ_SECONDS is set, for that long instead. Then its corpus is
# merged and minimised back into tests/fuzz/corpus/TARGET/: inputs libFuzzer
# named (40 hex digits) are replaced by the smallest set that keeps the
# coverage of everything seen; other files there (hand-written seeds,
# regression inputs) are always kept. A crash, leak, timeout or OOM stops
# that target and its input is copied there as regress-KIND-HASH, so every
# later run (and the CI pass) replays it; the run goes on with the next
# target and exits 1 at the end. Artifacts land in BUILD/fuzz-artifacts/,
# never at the repository root.
#
# Usage: scripts/fuzz-long.sh [BUILD] [TARGET...]   (BUILD: build/fuzz)
# Environment: FUZZ_RUNS, FUZZ_SECONDS (both set: whichever comes first),
# FUZZ_NICE (default 10), FUZZ_JOBS (targets run at once, default 1: a
# machine's cores, or fewer, each target being one process).
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build/fuzz}
[ $# -gt 0 ] && shift
build=$(cd "$build" && pwd) || exit 2
runs=${FUZZ_RUNS:-10000000}
nicev=${FUZZ_NICE:-10}
jobs=${FUZZ_JOBS:-1}
art=$build/fuzz-artifacts
top=$build/fuzz-long
mkdir -p "$art" "$top"
if [ $# -gt 0 ]; then
	targets=$*
else
	targets=$(cd "$src/tests/fuzz" && ls fuzz_*.c | sed 's/\.c$//')
fi
status=0
# One summary per run of this script: two runs on one build directory
# (other targets, started apart) each keep their own.
summary=$top/summary-$$.txt
: >"$summary"

opts_of() {
	f=$src/tests/fuzz/$1.options
	[ -f "$f" ] && grep '^-' "$f" | tr '\n' ' '
}

# One target: run, keep what it found, merge its corpus. 0, or 1 when it
# found something or could not run or merge.
run_one() {
	local t=$1 st=0 bin corpus work log before limit start rc secs execs rate found a kind h fresh f n after
	bin=$build/$t
	corpus=$src/tests/fuzz/corpus/$t
	work=$top/$t/work
	log=$top/$t/log
	if [ ! -x "$bin" ]; then
		echo "fuzz-long: $bin is not built" >&2
		return 1
	fi
	mkdir -p "$corpus" "$work"
	cp -r "$corpus"/. "$work"/
	before=$(ls "$corpus" | wc -l)
	# FUZZ_SECONDS alone: time only; with FUZZ_RUNS too: whichever first
	if [ -n "${FUZZ_SECONDS:-}" ] && [ -z "${FUZZ_RUNS:-}" ]; then
		limit="-max_total_time=$FUZZ_SECONDS"
	elif [ -n "${FUZZ_SECONDS:-}" ]; then
		limit="-runs=$runs -max_total_time=$FUZZ_SECONDS"
	else
		limit="-runs=$runs"
	fi
	start=$(date +%s)
	rm -f "$art/$t-"*
	echo "== $t: $limit (corpus $before inputs)"
	# shellcheck disable=SC2046,SC2086
	ASAN_OPTIONS=detect_leaks=1 nice -n "$nicev" "$bin" $limit -rss_limit_mb=2048 \
		-print_final_stats=1 -artifact_prefix="$art/$t-" $(opts_of "$t") "$work" >"$log" 2>&1
	rc=$?
	secs=$(($(date +%s) - start))
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
	found=""
	for a in "$art/$t-"*; do
		[ -f "$a" ] || continue
		kind=$(basename "$a" | sed "s/^$t-//; s/-.*//")
		h=$(sha1sum "$a" | cut -c1-16)
		cp "$a" "$corpus/regress-$kind-$h"
		found="$found regress-$kind-$h"
	done
	if [ $rc -ne 0 ] || [ -n "$found" ]; then
		st=1
		echo "   $t FOUND (exit $rc):$found; see $log" | tee -a "$summary"
		grep -m3 -E 'ERROR|fuzz check failed|SUMMARY' "$log"
	fi
	# merge and minimise: keep named files, then add what adds coverage
	fresh=$top/$t/merged
	rm -rf "$fresh"
	mkdir -p "$fresh"
	for f in "$corpus"/*; do
		[ -f "$f" ] || continue
		n=$(basename "$f")
		if [ ${#n} -ne 40 ] || [ -n "$(printf %s "$n" | tr -d 0-9a-f)" ]; then
			cp "$f" "$fresh"/
		fi
	done
	# shellcheck disable=SC2046
	if ASAN_OPTIONS=detect_leaks=1 nice -n "$nicev" "$bin" -merge=1 -rss_limit_mb=2048 \
		-artifact_prefix="$art/$t-merge-" $(opts_of "$t") "$fresh" "$work" \
		>"$top/$t/merge.log" 2>&1; then
		find "$corpus" -maxdepth 1 -type f -regextype posix-extended \
			-regex '.*/[0-9a-f]{40}' -delete
		for f in "$fresh"/*; do
			[ -f "$f" ] && [ ! -e "$corpus/$(basename "$f")" ] && cp "$f" "$corpus"/
		done
	else
		echo "   $t: merge failed, corpus left as it was; see $top/$t/merge.log" |
			tee -a "$summary"
		st=1
	fi
	after=$(ls "$corpus" | wc -l)
	printf '%-22s %12s execs %8s exec/s %6ss  corpus %s -> %s\n' "$t" "${execs:-?}" \
		"${rate:-?}" "$secs" "$before" "$after" | tee -a "$summary"
	return $st
}

running=0
for t in $targets; do
	if [ "$jobs" -le 1 ]; then
		run_one "$t" || status=1
		continue
	fi
	run_one "$t" &
	running=$((running + 1))
	if [ $running -ge "$jobs" ]; then
		wait -n || status=1
		running=$((running - 1))
	fi
done
while [ $running -gt 0 ]; do
	wait -n || status=1
	running=$((running - 1))
done
echo "== fuzz-long summary ($summary)"
cat "$summary"
exit $status
