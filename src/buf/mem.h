/* SPDX-License-Identifier: MIT */
#ifndef RXP_BUF_MEM_H
#define RXP_BUF_MEM_H
#include <stddef.h>

/*
 * Large arrays that are touched at random (a pool's objects, a page pool's
 * pages, the reassembly table's queues) are mapped at a 2 MiB boundary and
 * marked MADV_HUGEPAGE, so that with the system's transparent huge pages
 * in "madvise" mode (Debian's default) a walk over thousands of objects
 * costs one TLB entry per 2 MiB rather than one per 4 KiB page. DPDK gets
 * the same from its hugepages. Below 2 MiB the marking is not made: a
 * small pool would take a whole huge page for a few objects.
 *
 * rxp_mem_map() returns zeroed memory of at least bytes (rounded up to
 * 4 KiB), aligned to 4 KiB (to 2 MiB from 2 MiB up), or NULL with errno
 * set; *maplen is what rxp_mem_unmap() needs. Under 2 MiB it comes from
 * the heap, unless lazy: mapped with MAP_NORESERVE, for arrays sized for a
 * cap and touched only as they fill. Nothing is marked while
 * RXP_NO_HUGEPAGE is set in the environment (to measure what the marking
 * is worth).
 */
void *rxp_mem_map(size_t bytes, int lazy, size_t *maplen);
void rxp_mem_unmap(void *p, size_t maplen);

#endif
