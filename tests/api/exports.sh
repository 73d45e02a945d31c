#!/bin/bash
# The shared library exports only rxp_ names (nm -D), and does export the
# public API (a few names every user needs, and the inline fast paths'
# out-of-line halves).
set -u
SRC=${RXP_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${RXP_BUILD:-$SRC/build/release}
command -v nm >/dev/null || { echo "SKIP: nm missing"; exit 77; }
lib=$BUILD/librxpath.so
[ -e "$lib" ] || { echo "FAIL: no $lib"; exit 1; }
syms=$(nm -D --defined-only "$lib" | awk '{print $3}' | sed 's/@.*//' | sort -u)
# ASan's ODR indicators (__odr_asan.NAME, one per instrumented global)
# are the sanitizer's, not the library's: a sanitizer build names them.
bad=$(echo "$syms" | grep -v '^rxp_' | grep -v '^__odr_asan\.rxp_')
fail=0
if [ -n "$bad" ]; then
	echo "FAIL: $(echo "$bad" | wc -l) exported names without the rxp_ prefix:"
	echo "$bad" | head -20
	fail=1
fi
for s in rxp_pktpool_create rxp_pkt_drop rxp_pool_get_at rxp_pool_put_at_ rxp_tid_ \
	rxp_thread_id_assign rxp_defrag rxp_ip_rcv rxp_tipc_link_rcv rxp_dev_close \
	rxp_decap_link rxp_worker_poll; do
	echo "$syms" | grep -qx "$s" || { echo "FAIL: $s is not exported"; fail=1; }
done
[ $fail = 0 ] && echo "ok: $(echo "$syms" | wc -l) exported names, all rxp_"
exit $fail
