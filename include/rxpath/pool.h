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
 * Thread ids: every thread that touches a pool gets a small id on first use
 * (rxp_thread_id()); at most RXP_MAX_THREADS threads live at once, and ids of
 * exited threads are reused.
 */
#ifndef RXPATH_POOL_H
#define RXPATH_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define RXP_MAX_THREADS 64
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

/* This thread's small id, assigned on first use; < RXP_MAX_THREADS (or
 * == RXP_MAX_THREADS for threads past the limit, which get no caches).
 * Inline: it is on every allocation and free. */
extern __thread int rxp_tid_ __attribute__((tls_model("initial-exec")));
unsigned rxp_thread_id_assign(void);
static inline unsigned rxp_thread_id(void)
{
	int t = rxp_tid_;

	return __builtin_expect(t >= 0, 1) ? (unsigned)t : rxp_thread_id_assign();
}

void *rxp_pool_get_at(struct rxp_pool *pool, const char *file, int line);
/* All or nothing: 0, or -ENOMEM with nothing taken. */
int rxp_pool_get_bulk_at(struct rxp_pool *pool, void **objs, unsigned n, const char *file,
			 int line);
/* Free to the owner's cache, or its deferred list if we are not the owner. */
void rxp_pool_put_at_(struct rxp_pool *pool, void *obj);
void rxp_pool_put_bulk_at_(struct rxp_pool *pool, void *const *objs, unsigned n);

/*
 * The fast paths, inline as DPDK's are (a call costs as much as the work):
 * a hit in this thread's cache; a free of our own object into it (without
 * reading the object while this thread alone has ever allocated from the
 * pool: sole); and a free of another thread's object into the batch for the
 * owner freed to last (hot). The layout below is the head of the pool's
 * private state; nothing outside the pool may touch it. RXP_DEBUG builds
 * (the sanitizer and fuzz builds) always take the calls, which track each
 * object's state and allocation site; `make test` also runs the sanitizers
 * on a build without RXP_DEBUG, for these paths.
 */
#define RXP_POOL_STAGE_ 128 /* remote frees handed over per batch (at most) */
struct rxp_pool_stage_ {
	uint16_t owner;
	uint32_t n;
	uint32_t lim; /* the inline put adds while n < lim (the pool's batch - 1) */
	/* At n == pf_at (3/4 of the batch) the put prefetches pf, the owner's
	 * deferred ring's consumer tail, which the hand-over reads first: the
	 * owner last wrote it when it drained the previous batch, so the read
	 * was a miss with nothing to overlap it, a whole line transfer per
	 * batch when the two cores are far apart (rxpath bench pool --row2,
	 * rounds alternating with and without it: 4.4% fewer cycles per object
	 * far apart, cheaper in 79% of pairs; at 1/2 of the batch 2.4% less
	 * gain, at 7/8 the same as 3/4). */
	uint32_t pf_at;
	const void *pf;
	void *objs[RXP_POOL_STAGE_];
};
struct rxp_pool_cache_ {
	uint32_t len;
	uint32_t cap;
	void **objs;
	uint64_t alloc, free;
	struct rxp_pool_stage_ *hot; /* the batch of remote frees used last, while open */
};
struct rxp_pool_head_ {
	struct rxp_pool_cache_ *caches;
	size_t cache_stride;
	/* While one thread alone has ever taken objects from the shared ring,
	 * its id: every object anyone holds is then that thread's, and its
	 * frees need not look at the objects. RXP_POOL_SOLE_NONE_ before any
	 * take, RXP_POOL_SOLE_MANY_ once a second thread has taken some
	 * (for good: ownership is per object from then on). */
	int sole;
	/* Owners, kept twice: in each object's header (RXP_POOL_OWNER_AT_
	 * before it), which bulk frees read (of objects their caller has just
	 * used, so a line already at hand), and in this table, a byte per
	 * object, which single frees read: a thread freeing other threads'
	 * objects one by one then reads a small table that stays in its cache
	 * instead of a line per object. An object's index is its offset from
	 * obj0 over the slot size, an exact division done as a shift and a
	 * multiply by the inverse of the slot size's odd part. Both change
	 * together, and only when an object changes threads. */
	unsigned owner_shift;
	const unsigned char *obj0;
	unsigned char *owners;
	unsigned long long owner_inv;
};
#define RXP_POOL_SOLE_NONE_ (-1)
#define RXP_POOL_SOLE_MANY_ (-2)
#define RXP_POOL_OWNER_AT_ 64 /* the header's owner id sits this far before an object */

static inline struct rxp_pool_cache_ *rxp_pool_cache_(struct rxp_pool *pool, unsigned tid)
{
	const struct rxp_pool_head_ *h = (const struct rxp_pool_head_ *)(const void *)pool;

	return (struct rxp_pool_cache_ *)(void *)((char *)h->caches + tid * h->cache_stride);
}

static inline uint32_t rxp_pool_index_(const struct rxp_pool_head_ *h, const void *obj)
{
	unsigned long long off = (unsigned long long)((const unsigned char *)obj - h->obj0);

	return (uint32_t)((off >> h->owner_shift) * h->owner_inv);
}

static inline unsigned rxp_pool_owner_(const struct rxp_pool_head_ *h, const void *obj)
{
	return h->owners[rxp_pool_index_(h, obj)];
}

static inline uint16_t rxp_pool_owner_hdr_(const void *obj)
{
	return *(const uint16_t *)(const void *)((const char *)obj - RXP_POOL_OWNER_AT_);
}

static inline void *rxp_pool_get_inline_(struct rxp_pool *pool, const char *file, int line)
{
#ifndef RXP_DEBUG
	struct rxp_pool_cache_ *c = rxp_pool_cache_(pool, rxp_thread_id());

	if (__builtin_expect(c->len != 0, 1)) {
		c->alloc++;
		return c->objs[--c->len];
	}
#endif
	return rxp_pool_get_at(pool, file, line);
}

static inline int rxp_pool_get_bulk_inline_(struct rxp_pool *pool, void **objs, unsigned n,
					    const char *file, int line)
{
#ifndef RXP_DEBUG
	struct rxp_pool_cache_ *c = rxp_pool_cache_(pool, rxp_thread_id());

	if (__builtin_expect(c->len >= n && n != 0, 1)) {
		c->len -= n;
		__builtin_memcpy(objs, c->objs + c->len, n * sizeof(void *));
		c->alloc += n;
		return 0;
	}
#endif
	return rxp_pool_get_bulk_at(pool, objs, n, file, line);
}

static inline void rxp_pool_put(struct rxp_pool *pool, void *obj)
{
#ifndef RXP_DEBUG
	unsigned tid = rxp_thread_id(), owner;
	struct rxp_pool_cache_ *c = rxp_pool_cache_(pool, tid);
	const struct rxp_pool_head_ *h = (const struct rxp_pool_head_ *)(const void *)pool;
	struct rxp_pool_stage_ *s;

	/* The owner is looked up once, and not at all while we are sole. */
	if (__builtin_expect(__atomic_load_n(&h->sole, __ATOMIC_RELAXED) == (int)tid, 1))
		owner = tid;
	else
		owner = rxp_pool_owner_(h, obj);
	if (__builtin_expect(owner == tid && c->len < c->cap, 1)) {
		c->objs[c->len++] = obj;
		c->free++;
		return;
	}
	/* Another thread's object, for the owner we batched for last (a
	 * batch's owner is never this thread). */
	s = c->hot;
	if (s && s->owner == owner && s->n < s->lim) {
		s->objs[s->n++] = obj;
		if (__builtin_expect(s->n == s->pf_at, 0))
			__builtin_prefetch(s->pf);
		c->free++;
		return;
	}
#endif
	rxp_pool_put_at_(pool, obj);
}

static inline __attribute__((always_inline)) void rxp_pool_put_bulk(struct rxp_pool *pool,
								    void *const *objs, unsigned n)
{
#ifndef RXP_DEBUG
	unsigned tid = rxp_thread_id(), i;
	struct rxp_pool_cache_ *c = rxp_pool_cache_(pool, tid);

	if (__builtin_expect(c->len + n <= c->cap, 1)) {
		void **dst = c->objs + c->len;
		const uint16_t me = (uint16_t)tid;
		const struct rxp_pool_head_ *h = (const struct rxp_pool_head_ *)(const void *)pool;

		if (__atomic_load_n(&h->sole, __ATOMIC_RELAXED) == (int)tid) {
			/* Only we have ever taken objects: these are ours. */
			__builtin_memcpy(dst, objs, n * sizeof(void *));
			c->len += n;
			c->free += n;
			return;
		}

		/* Check owners and copy pointers in one pass, four objects per
		 * branch (each pointer is loaded once). Slots past len are
		 * free space, so stopping at a foreign object leaves nothing
		 * to undo: the call then sorts the whole batch. */
#pragma GCC unroll 8 /* a burst of 32 in one straight run, whatever the caller's inlining */
		for (i = 0; i + 4 <= n; i += 4) {
			void *o0 = objs[i], *o1 = objs[i + 1], *o2 = objs[i + 2], *o3 = objs[i + 3];
			unsigned x =
				((rxp_pool_owner_hdr_(o0) ^ me) | (rxp_pool_owner_hdr_(o1) ^ me)) |
				((rxp_pool_owner_hdr_(o2) ^ me) | (rxp_pool_owner_hdr_(o3) ^ me));

			if (__builtin_expect(x != 0, 0))
				break;
			dst[i] = o0;
			dst[i + 1] = o1;
			dst[i + 2] = o2;
			dst[i + 3] = o3;
		}
		for (; i < n; i++) {
			void *o = objs[i];

			if (__builtin_expect(rxp_pool_owner_hdr_(o) != me, 0))
				break;
			dst[i] = o;
		}
		if (__builtin_expect(i == n, 1)) {
			c->len += n;
			c->free += n;
			return;
		}
	}
#endif
	rxp_pool_put_bulk_at_(pool, objs, n);
}

#define rxp_pool_get(p) rxp_pool_get_inline_((p), __FILE__, __LINE__)
#define rxp_pool_get_bulk(p, o, n) rxp_pool_get_bulk_inline_((p), (o), (n), __FILE__, __LINE__)
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
const char *rxp_pool_name(const struct rxp_pool *pool);
bool rxp_pool_contains(const struct rxp_pool *pool, const void *obj);
size_t rxp_pool_obj_size(const struct rxp_pool *pool);
/* Objects made so far: slots are carved lazily, when the free ones run out,
 * so a pool's memory is touched only as far as it was ever in use. */
uint32_t rxp_pool_carved(const struct rxp_pool *pool);

#endif
