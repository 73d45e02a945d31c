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

#endif
