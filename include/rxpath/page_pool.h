/*
 * rxp_page_pool: the page pool behind one receive ring (Linux page_pool).
 *
 * Pages come from one allocation made at creation (the backing store). The
 * owner thread (the one polling the ring) allocates from a lockless array
 * cache of up to 128 pages, refilled 64 at a time: first from the return
 * ring, where pages released on other threads (and overflow from a full
 * cache) wait, then from the backing store. A page handed out has refcount 1;
 * when its last reference goes (rxp_page_put), release() brings it back:
 * into the cache when that happens on the owner thread, else onto the return
 * ring, else (ring full, or a page marked not reusable) to the backing store.
 *
 * Counters: fast = allocations served by a recycled page (cache or return
 * ring); slow = allocations that took a fresh page from the backing store;
 * recycled = pages that came back for reuse (cache or ring); waived = pages
 * that came back but could not be reused (marked remote, or no room);
 * released = pages given back to the backing store; outstanding = pages
 * handed out and not yet back. The driver's own reuse of a page (the bias
 * scheme, src/dev/rxring.c) never passes through the pool and is counted by
 * the ring.
 */
#ifndef RXPATH_PAGE_POOL_H
#define RXPATH_PAGE_POOL_H

#include <stdbool.h>
#include <stdint.h>

#include "rxpath/compiler.h"
#include "rxpath/page.h"

RXP_BEGIN_DECLS

#define RXP_PP_CACHE_SIZE 128
#define RXP_PP_REFILL 64
#define RXP_PP_RING_DEFAULT 1024
/* References a driver takes at once (USHRT_MAX, as ice/i40e do). */
#define RXP_PP_BIAS_MAX 65535u

struct rxp_page_pool;

struct rxp_page_pool_config {
	const char *name;
	uint32_t page_size; /* bytes per page (default 4096; multiple of 64) */
	uint32_t n_pages; /* pages in the backing store (default 1024) */
	uint32_t ring_size; /* return ring (default 1024, at most 32768) */
};

struct rxp_page_pool_stats {
	uint64_t fast;
	uint64_t slow;
	uint64_t empty; /* allocations that failed: every page is out */
	uint64_t recycled;
	uint64_t recycled_ring; /* of recycled: through the return ring */
	uint64_t waived;
	uint64_t released;
	uint64_t outstanding;
	uint32_t n_pages;
	uint32_t page_size;
};

/* NULL with errno set on failure. The calling thread becomes the owner. */
struct rxp_page_pool *rxp_page_pool_create(const struct rxp_page_pool_config *cfg);
/* Frees everything; returns the pages still outstanding (logged). */
uint64_t rxp_page_pool_destroy(struct rxp_page_pool *pp);
/* Make the calling thread the owner (a worker adopting the ring). */
void rxp_page_pool_set_owner(struct rxp_page_pool *pp);

/* Owner thread only: a page with refcount 1, or NULL (counted empty). */
struct rxp_page *rxp_page_pool_alloc(struct rxp_page_pool *pp);

void rxp_page_pool_get_stats(const struct rxp_page_pool *pp, struct rxp_page_pool_stats *st);
uint64_t rxp_page_pool_outstanding(const struct rxp_page_pool *pp);

/* The backing store: n_pages * page_size bytes at *base, page-aligned (an
 * AF_XDP UMEM can be registered over it). */
void rxp_page_pool_mem(const struct rxp_page_pool *pp, uint8_t **base, uint64_t *len);
/* The page holding byte off of the backing store (NULL if out of range). */
struct rxp_page *rxp_page_pool_page_at(const struct rxp_page_pool *pp, uint64_t off);

/* Mark a page as never reusable (the analogue of a remote-NUMA or
 * pfmemalloc page): drivers release it instead of recycling it, and the
 * pool waives it when it comes back. */
void rxp_page_pool_mark_remote(struct rxp_page *pg);
static inline bool rxp_page_pool_page_reusable(const struct rxp_page *pg)
{
	return !(pg->priv & 1);
}

/* Drop n references at once (a driver draining its bias); the last one
 * releases the page. */
static inline void rxp_page_put_many(struct rxp_page *pg, uint32_t n)
{
	if (!n)
		return;
	if (__atomic_fetch_sub(&pg->refcnt, n, __ATOMIC_ACQ_REL) == n)
		pg->release(pg);
}

RXP_END_DECLS

#endif
