/*
 * struct rxp_page: a refcounted buffer that packet data lives in.
 *
 * Head buffers from a packet pool and pages from a page pool are both
 * rxp_pages; a packet holds one reference on its head's page and one per page
 * fragment. When the last reference goes, release() hands the page back to
 * whoever owns it (a pool, or a page pool that may recycle it).
 */
#ifndef RXPATH_PAGE_H
#define RXPATH_PAGE_H

#include <stdint.h>

#include "rxpath/compiler.h"

RXP_BEGIN_DECLS

struct rxp_page;
typedef void (*rxp_page_release_fn)(struct rxp_page *pg);

struct rxp_page {
	/* Atomic: read and written only through the functions below (and
	 * the __atomic builtins they use), never as a plain field. */
	uint32_t refcnt;
	uint32_t size; /* bytes at addr */
	uint8_t *addr;
	rxp_page_release_fn release; /* called when refcnt reaches 0 */
	void *owner; /* what release returns it to */
	uint64_t priv; /* owner's own use */
};

static inline uint32_t rxp_page_refcount(struct rxp_page *pg)
{
	return __atomic_load_n(&pg->refcnt, __ATOMIC_ACQUIRE);
}

/* For the page's owner, while no one else holds it: start it with n
 * references (as a pool does when it hands a page out). */
static inline void rxp_page_set_refcount(struct rxp_page *pg, uint32_t n)
{
	__atomic_store_n(&pg->refcnt, n, __ATOMIC_RELAXED);
}

static inline void rxp_page_get(struct rxp_page *pg)
{
	__atomic_fetch_add(&pg->refcnt, 1, __ATOMIC_RELAXED);
}

static inline void rxp_page_get_many(struct rxp_page *pg, uint32_t n)
{
	__atomic_fetch_add(&pg->refcnt, n, __ATOMIC_RELAXED);
}

/* Drop one reference; the last one releases the page. A sole owner skips
 * the atomic read-modify-write (as DPDK's prefree_seg does). */
static inline void rxp_page_put(struct rxp_page *pg)
{
	if (__atomic_load_n(&pg->refcnt, __ATOMIC_ACQUIRE) == 1 ||
	    __atomic_fetch_sub(&pg->refcnt, 1, __ATOMIC_ACQ_REL) == 1) {
		__atomic_store_n(&pg->refcnt, 0, __ATOMIC_RELAXED);
		pg->release(pg);
	}
}

RXP_END_DECLS

#endif
