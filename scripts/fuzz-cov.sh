#!/bin/sh
# Fuzz coverage (make fuzz-cov): every libFuzzer target, built with clang's
# source-based coverage (-fprofile-instr-generate -fcoverage-mapping, no
# sanitizers), runs once over its corpus (tests/fuzz/corpus/TARGET, and
# what the last fuzz-long run found in the fuzz build, if any); the
# profiles are merged with llvm-profdata and llvm-cov prints line,
# function and region coverage for every file under src/, and for
# tools/opt.c, tools/defrag_io*.c, the frame layer of rxpath defrag
# (defrag_frame.c, defrag_late.c, defrag_zone.c) and run --pcap's device
# (capfile.c): the number parser, the capture files, the frames and the
# capture-file device, which fuzz_opt, fuzz_dio, fuzz_frame and
# fuzz_capfile link.
#
# Usage: scripts/fuzz-cov.sh [COVBUILD] [FUZZBUILD]
#   (defaults build/fuzz-cov, build/fuzz; COVBUILD must be configured with
#   -DRXP_FUZZ_COV=ON, as make fuzz-cov does)
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
cov=${1:-$src/build/fuzz-cov}
fz=${2:-$src/build/fuzz}
profdata=$(command -v llvm-profdata || command -v llvm-profdata-14)
llvmcov=$(command -v llvm-cov || command -v llvm-cov-14)
prof=$cov/fuzz-cov-profiles
rm -rf "$prof"
mkdir -p "$prof"
objs=""
first=""
for c in "$src"/tests/fuzz/fuzz_*.c; do
	t=$(basename "$c" .c)
	bin=$cov/$t
	[ -x "$bin" ] || { echo "fuzz-cov: $bin is not built" >&2; exit 2; }
	dirs=$src/tests/fuzz/corpus/$t
	[ -d "$fz/fuzz-long/$t/work" ] && dirs="$dirs $fz/fuzz-long/$t/work"
	mkdir -p "$src/tests/fuzz/corpus/$t"
	# -runs=0: execute every input of the corpus once, then stop
	# shellcheck disable=SC2086
	LLVM_PROFILE_FILE="$prof/$t-%p.profraw" "$bin" -runs=0 -rss_limit_mb=4096 \
		-artifact_prefix="$prof/$t-" $dirs >"$prof/$t.log" 2>&1 ||
		echo "fuzz-cov: $t exited $? over its corpus (see $prof/$t.log)" >&2
	if [ -z "$first" ]; then first=$bin; else objs="$objs -object=$bin"; fi
done
"$profdata" merge -sparse -o "$prof/all.profdata" "$prof"/*.profraw
# shellcheck disable=SC2086
"$llvmcov" report -instr-profile="$prof/all.profdata" "$first" $objs \
	-show-region-summary=false -show-branch-summary=false \
	-ignore-filename-regex='(tests|bench|examples)/' "$src/src" "$src/tools/opt.c" \
	"$src/tools/defrag_io.c" "$src/tools/defrag_io_fast.c" "$src/tools/defrag_io_out.c" \
	"$src/tools/defrag_frame.c" "$src/tools/defrag_late.c" "$src/tools/defrag_zone.c" \
	"$src/tools/capfile.c" >"$prof/report.txt"
echo "line coverage of src/, tools/opt.c, tools/defrag_io*.c, the frame layer and tools/capfile.c by the fuzz corpora (llvm-cov report: $prof/report.txt)"
awk 'NR > 2 && $1 !~ /^-/ && NF >= 7 {
	printf "%-26s %6d of %6d lines  %7s\n", $1, $5 - $6, $5, $7 }' "$prof/report.txt"
