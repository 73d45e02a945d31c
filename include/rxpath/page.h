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

#include <stdatomic.h>
#include <stdint.h>

struct rxp_page;
typedef void (*rxp_page_release_fn)(struct rxp_page *pg);

struct rxp_page {
	_Atomic uint32_t refcnt;
	uint32_t size; /* bytes at addr */
	uint8_t *addr;
	rxp_page_release_fn release; /* called when refcnt reaches 0 */
	void *owner; /* what release returns it to */
	uint64_t priv; /* owner's own use */
};

static inline uint32_t rxp_page_refcount(struct rxp_page *pg)
{
	return atomic_load_explicit(&pg->refcnt, memory_order_acquire);
}

static inline void rxp_page_get(struct rxp_page *pg)
{
	atomic_fetch_add_explicit(&pg->refcnt, 1, memory_order_relaxed);
}

static inline void rxp_page_get_many(struct rxp_page *pg, uint32_t n)
{
	atomic_fetch_add_explicit(&pg->refcnt, n, memory_order_relaxed);
}

/* Drop one reference; the last one releases the page. A sole owner skips
 * the atomic read-modify-write (as DPDK's prefree_seg does). */
static inline void rxp_page_put(struct rxp_page *pg)
{
	if (atomic_load_explicit(&pg->refcnt, memory_order_acquire) == 1 ||
	    atomic_fetch_sub_explicit(&pg->refcnt, 1, memory_order_acq_rel) == 1) {
		atomic_store_explicit(&pg->refcnt, 0, memory_order_relaxed);
		pg->release(pg);
	}
}

#endif
