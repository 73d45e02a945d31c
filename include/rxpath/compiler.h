/* Small compiler helpers shared by every rxpath module. */
#ifndef RXPATH_COMPILER_H
#define RXPATH_COMPILER_H

#include <stddef.h>

#define rxp_likely(x) __builtin_expect(!!(x), 1)
#define rxp_unlikely(x) __builtin_expect(!!(x), 0)
#define RXP_CACHELINE 64
#define __rxp_cache_aligned __attribute__((aligned(RXP_CACHELINE)))
#define RXP_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define rxp_container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))
#define RXP_ALIGN_UP(x, a) (((x) + ((a)-1)) & ~((__typeof__(x))(a)-1))

/*
 * Every public header puts its declarations between RXP_BEGIN_DECLS and
 * RXP_END_DECLS (after its own #includes). They give C++ callers C
 * linkage, and they are the library's export list: librxpath is built with
 * -fvisibility=hidden, so what these bracket (declared in include/rxpath/)
 * is all that the shared library exports. Internal headers under src/ do
 * not use them, so nothing they declare leaves the library.
 */
#ifdef __cplusplus
#define RXP_BEGIN_DECLS \
	extern "C" {    \
	_Pragma("GCC visibility push(default)")
#define RXP_END_DECLS                 \
	_Pragma("GCC visibility pop") \
	}
#else
#define RXP_BEGIN_DECLS _Pragma("GCC visibility push(default)")
#define RXP_END_DECLS _Pragma("GCC visibility pop")
#endif

#endif
