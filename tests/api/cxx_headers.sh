#!/bin/bash
# Every public header is usable from C++: g++ -fsyntax-only accepts each one
# on its own (C++11 and C++17, -Wall -Wextra -Wpedantic -Werror; and C11
# with the same), and a C++ program that
# includes them all links against librxpath.so and calls into it (which
# fails if a header leaves out extern "C": the names would be mangled).
set -u
SRC=${RXP_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${RXP_BUILD:-$SRC/build/release}
CXX=${CXX:-g++}
command -v "$CXX" >/dev/null || { echo "SKIP: no C++ compiler ($CXX)"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
n=0
for h in "$SRC"/include/rxpath/*.h; do
	name=rxpath/$(basename "$h")
	for std in c++11 c++17; do
		if ! echo "#include \"$name\"" |
			"$CXX" -std=$std -fsyntax-only -Wall -Wextra -Wpedantic -Werror -I"$SRC/include" \
				-x c++ - >"$T/err" 2>&1; then
			echo "FAIL: $name under $CXX -std=$std:"
			head -5 "$T/err"
			fail=1
		fi
	done
	# and from strict C (an integrator's -Wpedantic)
	if ! echo "#include \"$name\"" |
		${CC:-cc} -std=c11 -fsyntax-only -Wall -Wextra -Wpedantic -Werror -I"$SRC/include" \
			-x c - >"$T/err" 2>&1; then
		echo "FAIL: $name under ${CC:-cc} -std=c11 -Wpedantic:"
		head -5 "$T/err"
		fail=1
	fi
	echo "#include \"$name\"" >>"$T/all.cpp"
	n=$((n + 1))
done
[ $n -ge 20 ] || { echo "FAIL: only $n public headers found"; fail=1; }
cat >>"$T/all.cpp" <<'CPP'
#include <cstdio>
#include <cstring>
int main()
{
	struct rxp_pktpool_config c;
	std::memset(&c, 0, sizeof(c));
	c.name = "cxx";
	c.n_pkts = 64;
	struct rxp_pktpool *pp = rxp_pktpool_create(&c);
	if (!pp)
		return 1;
	struct rxp_pkt *p = rxp_pkt_alloc(pp, 100);
	if (!p || !rxp_pkt_put(p, 20))
		return 2;
	rxp_pkt_drop(p, RXP_DROP_IP_HDR);
	struct rxp_pktpool_stats st;
	rxp_pktpool_get_stats(pp, &st);
	if (st.drops[RXP_DROP_IP_HDR] != 1 ||
	    std::strcmp(rxp_drop_reason_name(RXP_DROP_IP_HDR), "ip_bad_header"))
		return 3;
	if (rxp_pktpool_destroy(pp) != 0)
		return 4;
	std::puts("ok");
	return 0;
}
CPP
lib=$(ls "$BUILD"/librxpath.so 2>/dev/null)
if [ -z "$lib" ]; then
	echo "FAIL: no librxpath.so in $BUILD"
	exit 1
fi
# The sanitizer builds' library needs the sanitizer runtimes at link time.
extra=
grep -q '^RXP_SANITIZE:BOOL=ON' "$BUILD/CMakeCache.txt" 2>/dev/null && extra=-fsanitize=address,undefined
if ! "$CXX" -std=c++17 -Wall -Wextra -Werror $extra -I"$SRC/include" "$T/all.cpp" \
	-L"$BUILD" -lrxpath -Wl,-rpath,"$BUILD" -o "$T/all" >"$T/err" 2>&1; then
	echo "FAIL: a C++ program with every header does not link against $lib:"
	head -10 "$T/err"
	exit 1
fi
out=$(ASAN_OPTIONS=detect_leaks=1 "$T/all") || { echo "FAIL: the C++ program failed ($?)"; fail=1; }
[ "$out" = ok ] || { echo "FAIL: the C++ program printed '$out'"; fail=1; }
[ $fail = 0 ] && echo "ok: $n public headers under $CXX, C++11 and C++17; linked and ran against librxpath.so"
exit $fail
