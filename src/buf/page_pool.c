/*
 * The page pool (see include/rxpath/page_pool.h for the model).
 *
 * Owns: the backing store (one allocation of n_pages pages and their struct
 * rxp_page descriptors), the owner's array cache, the return ring and the
 * store ring of never-used or released pages.
 *
 * Invariants:
 *   - a page is in exactly one place: the cache, the return ring, the store
 *     ring, or out (refcount > 0);
 *   - only the owner thread touches the cache and the owner-side counters;
 *     other threads only enqueue on the rings and bump atomic counters;
 *   - outstanding = handed out - came back, and is 0 when every user has
 *     put every reference.
 * priv bits of a page: bit 0 = not reusable (remote), bit 1 = fresh from the
 * store (so its first hand-out is counted slow).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rxpath/compiler.h"
#include "rxpath/log.h"
#include "rxpath/page_pool.h"
#include "rxpath/pool.h"
#include "buf/mem.h"
#include "buf/mpmc.h"

#define PG_REMOTE 1u
#define PG_FRESH 2u

struct rxp_page_pool {
	/* Owner side: one cache line of hot state, then the cache. */
	unsigned owner;
	uint32_t cache_n;
	uint64_t fast, slow, empty, recycled_local, waived_local, released_local;
	uint64_t handed, back_local;
	struct rxp_page *cache[RXP_PP_CACHE_SIZE];
	/* Shared side. */
	_Alignas(64) _Atomic uint64_t back_remote;
	_Atomic uint64_t recycled_ring;
	_Atomic uint64_t waived_remote;
	_Atomic uint64_t released_remote;
	char name[32];
	uint32_t page_size, n_pages;
	uint8_t *mem; /* rxp_mem_map: huge pages from 2 MiB up */
	struct rxp_page *pages;
	size_t mem_len, pages_len;
	struct rxp_mpmc *ring; /* returns */
	struct rxp_mpmc *store; /* fresh and released pages */
};

static void to_store(struct rxp_page_pool *pp, struct rxp_page *pg)
{
	void *obj = pg;

	pg->priv = PG_FRESH;
	/* The store holds every page, so this cannot fail. */
	rxp_mpmc_enqueue(pp->store, &obj, 1, true);
}

/* release(): the last reference is gone. Runs on any thread. */
static void page_back(struct rxp_page *pg)
{
	struct rxp_page_pool *pp = pg->owner;
	void *obj = pg;

	if (rxp_thread_id() == pp->owner) {
		pp->back_local++;
		if (rxp_unlikely(pg->priv & PG_REMOTE)) {
			pp->waived_local++;
			pp->released_local++;
			to_store(pp, pg);
		} else if (pp->cache_n < RXP_PP_CACHE_SIZE) {
			pp->recycled_local++;
			pp->cache[pp->cache_n++] = pg;
		} else if (rxp_mpmc_enqueue(pp->ring, &obj, 1, true)) {
			pp->recycled_local++;
		} else {
			pp->waived_local++;
			pp->released_local++;
			to_store(pp, pg);
		}
		return;
	}
	if (!(pg->priv & PG_REMOTE) && rxp_mpmc_enqueue(pp->ring, &obj, 1, true)) {
		atomic_fetch_add_explicit(&pp->recycled_ring, 1, memory_order_relaxed);
	} else {
		atomic_fetch_add_explicit(&pp->waived_remote, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&pp->released_remote, 1, memory_order_relaxed);
		to_store(pp, pg);
	}
	/* Last: once counted back, destroy may run. */
	atomic_fetch_add_explicit(&pp->back_remote, 1, memory_order_release);
}

struct rxp_page_pool *rxp_page_pool_create(const struct rxp_page_pool_config *cfg)
{
	struct rxp_page_pool *pp;
	uint32_t psize = cfg && cfg->page_size ? cfg->page_size : 4096;
	uint32_t n = cfg && cfg->n_pages ? cfg->n_pages : 1024;
	uint32_t rs = cfg && cfg->ring_size ? cfg->ring_size : RXP_PP_RING_DEFAULT;

	if (psize % 64 || psize > (1u << 20) || n > (1u << 22) || rs > 32768) {
		errno = EINVAL;
		return NULL;
	}
	pp = aligned_alloc(RXP_CACHELINE, RXP_ALIGN_UP(sizeof(*pp), (size_t)RXP_CACHELINE));
	if (!pp) {
		errno = ENOMEM;
		return NULL;
	}
	memset(pp, 0, sizeof(*pp));
	snprintf(pp->name, sizeof(pp->name), "%s", cfg && cfg->name ? cfg->name : "page_pool");
	pp->page_size = psize;
	pp->n_pages = n;
	pp->owner = rxp_thread_id();
	pp->mem = rxp_mem_map((size_t)psize * n, 0, &pp->mem_len);
	pp->pages = rxp_mem_map(n * sizeof(*pp->pages), 0, &pp->pages_len);
	pp->ring = rxp_mpmc_create(rs);
	pp->store = rxp_mpmc_create(n);
	if (!pp->mem || !pp->pages || !pp->ring || !pp->store) {
		rxp_mem_unmap(pp->mem, pp->mem_len);
		rxp_mem_unmap(pp->pages, pp->pages_len);
		free(pp->ring);
		free(pp->store);
		free(pp);
		errno = ENOMEM;
		return NULL;
	}
	for (uint32_t i = 0; i < n; i++) {
		struct rxp_page *pg = &pp->pages[i];

		rxp_page_set_refcount(pg, 0);
		pg->size = psize;
		pg->addr = pp->mem + (size_t)i * psize;
		pg->release = page_back;
		pg->owner = pp;
		to_store(pp, pg);
	}
	return pp;
}

uint64_t rxp_page_pool_outstanding(const struct rxp_page_pool *pp)
{
	return pp->handed - pp->back_local -
	       atomic_load_explicit(&pp->back_remote, memory_order_acquire);
}

uint64_t rxp_page_pool_destroy(struct rxp_page_pool *pp)
{
	uint64_t out;

	if (!pp)
		return 0;
	out = rxp_page_pool_outstanding(pp);
	if (out)
		rxp_log(RXP_LOG_ERR, "page pool %s: %llu pages outstanding at destroy", pp->name,
			(unsigned long long)out);
	rxp_mem_unmap(pp->mem, pp->mem_len);
	rxp_mem_unmap(pp->pages, pp->pages_len);
	free(pp->ring);
	free(pp->store);
	free(pp);
	return out;
}

void rxp_page_pool_set_owner(struct rxp_page_pool *pp)
{
	pp->owner = rxp_thread_id();
}

void rxp_page_pool_mark_remote(struct rxp_page *pg)
{
	pg->priv |= PG_REMOTE;
}

/* The cache is empty: take a batch from the return ring, else from the
 * store. Returns how many pages the cache now holds. */
static uint32_t refill(struct rxp_page_pool *pp)
{
	uint32_t n = rxp_mpmc_dequeue(pp->ring, (void **)pp->cache, RXP_PP_REFILL, false);

	if (!n)
		n = rxp_mpmc_dequeue(pp->store, (void **)pp->cache, RXP_PP_REFILL, false);
	/* LIFO: hand out in the order they came (the first page, hottest,
	 * at the top). */
	for (uint32_t i = 0; i < n / 2; i++) {
		struct rxp_page *t = pp->cache[i];

		pp->cache[i] = pp->cache[n - 1 - i];
		pp->cache[n - 1 - i] = t;
	}
	pp->cache_n = n;
	return n;
}

struct rxp_page *rxp_page_pool_alloc(struct rxp_page_pool *pp)
{
	struct rxp_page *pg;

	if (rxp_unlikely(!pp->cache_n) && !refill(pp)) {
		pp->empty++;
		return NULL;
	}
	pg = pp->cache[--pp->cache_n];
	if (rxp_unlikely(pg->priv & PG_FRESH)) {
		pg->priv = 0;
		pp->slow++;
	} else {
		pp->fast++;
	}
	pp->handed++;
	rxp_page_set_refcount(pg, 1);
	return pg;
}

void rxp_page_pool_get_stats(const struct rxp_page_pool *pp, struct rxp_page_pool_stats *st)
{
	uint64_t rr = atomic_load_explicit(&pp->recycled_ring, memory_order_relaxed);

	memset(st, 0, sizeof(*st));
	st->fast = pp->fast;
	st->slow = pp->slow;
	st->empty = pp->empty;
	st->recycled = pp->recycled_local + rr;
	st->recycled_ring = rr;
	st->waived =
		pp->waived_local + atomic_load_explicit(&pp->waived_remote, memory_order_relaxed);
	st->released = pp->released_local +
		       atomic_load_explicit(&pp->released_remote, memory_order_relaxed);
	st->outstanding = rxp_page_pool_outstanding(pp);
	st->n_pages = pp->n_pages;
	st->page_size = pp->page_size;
}

void rxp_page_pool_mem(const struct rxp_page_pool *pp, uint8_t **base, uint64_t *len)
{
	*base = pp->mem;
	*len = (uint64_t)pp->page_size * pp->n_pages;
}

struct rxp_page *rxp_page_pool_page_at(const struct rxp_page_pool *pp, uint64_t off)
{
	uint64_t i = off / pp->page_size;

	return i < pp->n_pages ? &pp->pages[i] : NULL;
}
