# Sourced by the shell tests once they have their temporary directory.
# Under a sanitizer build, every report of every program a test runs is
# written to a file in that directory, whatever the test does with the
# program's exit status or standard error (a leak is reported only at
# exit, after the output the test checks was written): rxpt_sanitizer_log
# DIR sets that up; rxpt_sanitizer_reports DIR prints each report and
# returns 1 when there is one. In a release build nothing is written.

rxpt_sanitizer_log() {
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}log_path=$1/asan-report"
	export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}log_path=$1/ubsan-report"
}

rxpt_sanitizer_reports() {
	local f found=0

	for f in "$1"/asan-report.* "$1"/ubsan-report.*; do
		[ -e "$f" ] || continue
		echo "FAIL: sanitizer report ${f##*/}:"
		head -40 "$f"
		found=1
	done
	return $found
}
