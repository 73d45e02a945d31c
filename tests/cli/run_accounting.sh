#!/bin/bash
# rxpath run accounts for every datagram and message of its built-in
# workload (issue #16): the JSON summary has sent, delivered, lost by cause
# and unaccounted, which is 0, with the exit status 0, in the plain run and
# in the overload case (--in-flight past the --mem-limit cap), where the
# losses sit under the memory reasons; the text summary shows the same.
set -u
SRC=${RXP_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
RXPATH=${RXPATH:-$SRC/build/release/rxpath}
T=$(mktemp -d)
. "$SRC/tests/tools/sanitizer.sh"
rxpt_sanitizer_log "$T"
trap 'rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
ok() { echo "ok: $*"; }

# check NAME JSON-FILE PYTHON-CONDITION: the summary balances, and the condition holds
check() {
	python3 - "$2" "$3" <<'PY' && ok "$1" || bad "$1"
import json, sys
d = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
s, dl, l = d["sent"], d["delivered"], d["lost"]
total_lost = sum(l.values())
print(f"  sent {s}, delivered {dl}, lost {l}, unaccounted {d['unaccounted']}")
assert d["unaccounted"] == 0, "unaccounted"
assert s["datagrams"] + s["messages"] == dl["datagrams"] + dl["messages"] + total_lost, "balance"
assert dl["datagrams"] == d["datagrams"] and dl["messages"] == d["messages"], "delivered"
assert d["packets_outstanding"] == 0 and d["pages_outstanding"] == 0
assert eval(sys.argv[2], {}, {"d": d, "s": s, "l": l}), sys.argv[2]
PY
}

$RXPATH run -q -w 2 -n 200000 --json >"$T/plain.json"
rc=$?
[ $rc = 0 ] && ok "plain run exits 0" || bad "plain run exits $rc"
check "plain run balances, loss injected and overlaps named" "$T/plain.json" \
	'l["injected_loss"] > 0 and l.get("frag_overlap", 0) > 0 and s["frames"] == 200000'

$RXPATH run -q -w 2 -n 300000 --in-flight 3000 --mem-limit 2m --json >"$T/over.json"
rc=$?
[ $rc = 0 ] && ok "overload run exits 0" || bad "overload run exits $rc"
check "overload balances, losses under the memory reasons" "$T/over.json" \
	'l.get("frag_mem_limit", 0) + l.get("frag_evicted", 0) > 0 and l["cut_at_end"] > 0'

$RXPATH run -q -w 1 -n 50000 >"$T/text" 2>&1 || bad "run -n 50000 (text): exit $?"
grep -q '^  sent ' "$T/text" && grep -q '^  unaccounted 0$' "$T/text" &&
	ok "the text summary shows sent and unaccounted 0" || { bad "text summary"; cat "$T/text"; }
rxpt_sanitizer_reports "$T" || fail=1
exit $fail
