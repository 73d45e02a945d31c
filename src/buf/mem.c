/* SPDX-License-Identifier: MIT */
/* Large arrays on transparent huge pages: see mem.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "buf/mem.h"

#define HUGE_SZ ((size_t)2 << 20)
#define PAGE_SZ ((size_t)4096)

void *rxp_mem_map(size_t bytes, int lazy, size_t *maplen)
{
	int flags = MAP_PRIVATE | MAP_ANONYMOUS | (lazy ? MAP_NORESERVE : 0);
	size_t len, over;
	uint8_t *m, *a;

	if (!bytes || bytes > SIZE_MAX - 2 * HUGE_SZ) {
		errno = EINVAL;
		return NULL;
	}
	len = (bytes + PAGE_SZ - 1) & ~(PAGE_SZ - 1);
	if (len < HUGE_SZ && !lazy) {
		/* From the heap, which a program that makes and drops small
		 * pools over and over (a fuzzer) reuses without faults. */
		m = aligned_alloc(PAGE_SZ, len);
		if (!m)
			return NULL;
		memset(m, 0, len);
		*maplen = 0;
		return m;
	}
	if (len < HUGE_SZ) {
		m = mmap(NULL, len, PROT_READ | PROT_WRITE, flags, -1, 0);
		if (m == MAP_FAILED)
			return NULL;
		*maplen = len;
		return m;
	}
	/* Over-map by one huge page and trim both ends to the boundary. */
	over = len + HUGE_SZ;
	m = mmap(NULL, over, PROT_READ | PROT_WRITE, flags, -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	a = (uint8_t *)(((uintptr_t)m + HUGE_SZ - 1) & ~(uintptr_t)(HUGE_SZ - 1));
	if (a > m)
		munmap(m, (size_t)(a - m));
	if (a + len < m + over)
		munmap(a + len, (size_t)(m + over - (a + len)));
	if (!getenv("RXP_NO_HUGEPAGE"))
		(void)madvise(a, len, MADV_HUGEPAGE); /* a hint: "never" refuses it */
	*maplen = len;
	return a;
}

void rxp_mem_unmap(void *p, size_t maplen)
{
	if (p && maplen)
		munmap(p, maplen);
	else
		free(p);
}
