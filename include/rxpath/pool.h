/*
 * rxp_pool: fixed-size objects carved from one allocation.
 *
 * A shared lock-free MPMC ring holds the free objects; each thread has a LIFO
 * cache in front of it (default 256), refilled and flushed in batches of half
 * the cache. What a thread's cache overflows with goes to that thread's
 * stash, a bitmap over the pool that refills hand back lowest address first,
 * so objects in use stay packed and are taken in address order however
 * scrambled the order they were freed in; a refill tries the stash, then the
 * ring, and when the ring is empty every thread's stash is emptied into it
 * (objects in a stash are never out of another thread's reach).
 * Each object remembers the thread that allocated it (its owner):
 *
 *   - freed on the owner thread: back into the owner's cache (thread 004);
 *   - freed on another thread: pushed onto the owner's lock-free deferred
 *     list, which the owner takes in one batch with rxp_pool_drain_deferred()
 *     from its poll loop; once that list holds defer_max objects (default
 *     128, like skb_defer_max) the freeing thread puts them on the shared ring
 *     itself, so a stalled owner cannot pin memory without bound. The freeing
 *     thread hands remote frees over in batches (up to 128 per owner, for up
 *     to 4 owners at once), when a batch is full or when it calls
 *     rxp_pool_drain_deferred() itself: a thread that frees other threads'
 *     objects should call it in its loop (rxpath's workers do) and before it
 *     idles, or up to 4 x 127 objects wait in its batches.
 *
 * Memory: n slots (reserved at creation but written only when first needed:
 * see rxp_pool_carved), each the object plus a 64-byte header rounded up to an odd
 * number of cache lines (so that objects a power-of-two count apart do not
 * share cache sets); a byte per object for the owner table; and, per thread
 * whose cache has overflowed, a stash bitmap of n/8 bytes (made then).
 *
 * Exhaustion returns NULL and counts alloc_fail; nothing blocks. Every object
 * is counted while outstanding, and rxp_pool_destroy() reports leaks (in
 * RXP_DEBUG builds with the file:line that allocated each one).
 *
 * Threads are told apart by their small ids (rxpath/thread.h): at most
 * RXP_MAX_THREADS at once have caches.
 *
 * The fast paths (a get from this thread's cache, a free into it or into
 * the batch for another thread's objects) are inline, as DPDK's are: their
 * bodies and the part of the pool's layout they read are in
 * rxpath/internal/pool.h, which is not an API.
 */
#ifndef RXPATH_POOL_H
#define RXPATH_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "rxpath/compiler.h"
#include "rxpath/thread.h"

RXP_BEGIN_DECLS

#define RXP_POOL_CACHE_DEFAULT 256
#define RXP_POOL_CACHE_MAX 1024
#define RXP_POOL_DEFER_MAX_DEFAULT 128

struct rxp_pool;

struct rxp_pool_config {
	const char *name; /* for reports; copied */
	size_t obj_size; /* usable bytes per object */
	unsigned n; /* number of objects */
	/* Per-thread cache size: 0 picks RXP_POOL_CACHE_DEFAULT, and
	 * RXP_POOL_NO_CACHE disables caches (every get/put hits the ring). */
	unsigned cache_size;
	/* Deferred-list cap per owner: 0 picks RXP_POOL_DEFER_MAX_DEFAULT. */
	unsigned defer_max;
	/* Optional: called once per object at creation (e.g. to lay out a
	 * header that survives get/put cycles). */
	void (*obj_init)(void *obj, unsigned idx, void *arg);
	void *obj_init_arg;
};
#define RXP_POOL_NO_CACHE (~0u)

struct rxp_pool_stats {
	uint64_t alloc; /* successful gets */
	uint64_t free; /* puts, wherever they went */
	uint64_t alloc_fail; /* gets that found the pool empty */
	uint64_t deferred; /* remote frees queued on an owner's list */
	uint64_t defer_overflow; /* remote frees past defer_max, sent to the ring */
	uint64_t drained; /* deferred objects taken back by their owner */
	uint64_t outstanding; /* alloc - free */
	unsigned n; /* objects in the pool */
};

/* NULL with errno set (EINVAL, ENOMEM) on failure. */
struct rxp_pool *rxp_pool_create(const struct rxp_pool_config *cfg);
/* Frees the pool; returns the number of objects still outstanding, after
 * reporting them through the log callback. Call when no thread uses it. */
size_t rxp_pool_destroy(struct rxp_pool *pool);

/* An object, or NULL (counted alloc_fail) when the pool is empty. */
#define rxp_pool_get(p) rxp_pool_get_inline_((p), __FILE__, __LINE__)
/* n objects into objs, all or nothing: 0, or -ENOMEM with nothing taken. */
#define rxp_pool_get_bulk(p, o, n) rxp_pool_get_bulk_inline_((p), (o), (n), __FILE__, __LINE__)
/* Free to the owner's cache, or its deferred list if we are not the owner. */
static inline void rxp_pool_put(struct rxp_pool *pool, void *obj);
static inline void rxp_pool_put_bulk(struct rxp_pool *pool, void *const *objs, unsigned n);
/* Free straight to the shared ring, bypassing caches and deferral (the
 * baseline the benchmarks compare against). */
void rxp_pool_put_shared(struct rxp_pool *pool, void *obj);

/* Owner side: take this thread's deferred frees into its cache (or the ring
 * when the cache is full). Returns how many. Cheap when the list is empty. */
unsigned rxp_pool_drain_deferred(struct rxp_pool *pool);
/* Return this thread's cache to the shared ring (e.g. before it exits). */
void rxp_pool_flush_cache(struct rxp_pool *pool);

void rxp_pool_get_stats(const struct rxp_pool *pool, struct rxp_pool_stats *st);
uint64_t rxp_pool_outstanding(const struct rxp_pool *pool);
/* Writes one line per outstanding object (with its allocation site in
 * RXP_DEBUG builds) to out; returns how many are outstanding. */
size_t rxp_pool_leak_report(const struct rxp_pool *pool, FILE *out);
/* The name the pool was created with (at most 31 bytes of it). */
const char *rxp_pool_name(const struct rxp_pool *pool);
bool rxp_pool_contains(const struct rxp_pool *pool, const void *obj);
/* The usable bytes per object asked for at creation. */
size_t rxp_pool_obj_size(const struct rxp_pool *pool);
/* Objects made so far: slots are carved lazily, when the free ones run out,
 * so a pool's memory is touched only as far as it was ever in use. */
uint32_t rxp_pool_carved(const struct rxp_pool *pool);

/* The out-of-line halves of the fast paths (not an API: use the macros
 * and functions above). */
void *rxp_pool_get_at(struct rxp_pool *pool, const char *file, int line);
int rxp_pool_get_bulk_at(struct rxp_pool *pool, void **objs, unsigned n, const char *file,
			 int line);
void rxp_pool_put_at_(struct rxp_pool *pool, void *obj);
void rxp_pool_put_bulk_at_(struct rxp_pool *pool, void *const *objs, unsigned n);

RXP_END_DECLS

#include "rxpath/internal/pool.h"

#endif
