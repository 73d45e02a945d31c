/*
 * Not an API: the part of struct rxp_pool's layout that the inline fast
 * paths of rxpath/pool.h read, and their bodies. Include rxpath/pool.h; no
 * code outside src/buf/pool*.c may touch these fields, and they may change
 * in any release.
 *
 * The fast paths: a hit in this thread's cache; a free of our own object
 * into it (without reading the object while this thread alone has ever
 * allocated from the pool: sole); and a free of another thread's object
 * into the batch for the owner freed to last (hot). RXP_DEBUG builds (the
 * sanitizer and fuzz builds) always take the calls, which track each
 * object's state and allocation site; `make test` also runs the sanitizers
 * on a build without RXP_DEBUG, for these paths.
 */
#ifndef RXPATH_INTERNAL_POOL_H
#define RXPATH_INTERNAL_POOL_H

#ifndef RXPATH_POOL_H
#error "include rxpath/pool.h, not rxpath/internal/pool.h"
#endif

RXP_BEGIN_DECLS

#define RXP_POOL_STAGE_ 128 /* remote frees handed over per batch (at most) */
struct rxp_pool_stage_ {
	uint16_t owner;
	uint32_t n;
	uint32_t lim; /* the inline put adds while n < lim (the pool's batch - 1) */
	/* At n == pf_at (3/4 of the batch) the put prefetches pf, the owner's
	 * deferred ring's consumer tail, which the hand-over reads first: the
	 * owner last wrote it when it drained the previous batch, so the read
	 * would be a miss with nothing to overlap it, a whole line transfer
	 * per batch when the two cores are far apart (measured in
	 * bench/results/README.md, "pool"). */
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

/* Copy n object pointers between a cache and a caller's array. GCC (-O2)
 * makes a __builtin_memcpy of a variable number of pointers `rep movsq`,
 * whose start-up costs tens of cycles however few there are: the 1-7
 * metadata shells a reassembled datagram frees took 45-60 cycles in this
 * copy (rdtsc, handover rows). Up to RXP_POOL_COPY_LOOP_ pointers are
 * copied one at a time instead; the index made opaque to the compiler
 * keeps it from turning the loop back into a memcpy. */
#define RXP_POOL_COPY_LOOP_ 32u
static inline __attribute__((always_inline)) void rxp_pool_copy_ptrs_(void **dst, void *const *src,
								      unsigned n)
{
	if (__builtin_expect(n > RXP_POOL_COPY_LOOP_, 0)) {
		__builtin_memcpy(dst, src, n * sizeof(void *));
		return;
	}
	for (unsigned i = 0; i < n; i++) {
		__asm__("" : "+r"(i));
		dst[i] = src[i];
	}
}

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

/* An object from this thread's cache (tid: rxp_thread_id()), true, or
 * nothing, false: the cache is empty, or an RXP_DEBUG build (whose
 * callers take the tracked calls). */
static inline __attribute__((always_inline)) bool rxp_pool_take_one_(struct rxp_pool *a,
								     unsigned tid, void **oa)
{
#ifndef RXP_DEBUG
	struct rxp_pool_cache_ *ca = rxp_pool_cache_(a, tid);
	uint32_t la = ca->len;

	if (__builtin_expect(la != 0, 1)) {
		ca->len = la - 1;
		*oa = ca->objs[la - 1];
		ca->alloc++;
		return true;
	}
#else
	(void)a;
	(void)tid;
	(void)oa;
#endif
	return false;
}

static inline void *rxp_pool_get_inline_(struct rxp_pool *pool, const char *file, int line)
{
	void *o;

	if (rxp_pool_take_one_(pool, rxp_thread_id(), &o))
		return o;
	return rxp_pool_get_at(pool, file, line);
}

/* For a caller that takes from two pools at once (a packet: its metadata
 * and its buffer) with this thread's id (tid) read once: an object from
 * each pool's cache for this thread, both (true) or neither (false: a
 * cache is empty, or an RXP_DEBUG build, whose callers then take the
 * tracked calls). */
static inline __attribute__((always_inline)) bool
rxp_pool_take_pair_(struct rxp_pool *a, struct rxp_pool *b, unsigned tid, void **oa, void **ob)
{
#ifndef RXP_DEBUG
	struct rxp_pool_cache_ *ca = rxp_pool_cache_(a, tid), *cb = rxp_pool_cache_(b, tid);
	uint32_t la = ca->len, lb = cb->len;

	if (__builtin_expect(la != 0 && lb != 0, 1)) {
		ca->len = la - 1;
		cb->len = lb - 1;
		*oa = ca->objs[la - 1];
		*ob = cb->objs[lb - 1];
		ca->alloc++;
		cb->alloc++;
		return true;
	}
#else
	(void)a;
	(void)b;
	(void)tid;
	(void)oa;
	(void)ob;
#endif
	return false;
}

static inline int rxp_pool_get_bulk_inline_(struct rxp_pool *pool, void **objs, unsigned n,
					    const char *file, int line)
{
#ifndef RXP_DEBUG
	struct rxp_pool_cache_ *c = rxp_pool_cache_(pool, rxp_thread_id());

	if (__builtin_expect(c->len >= n && n != 0, 1)) {
		c->len -= n;
		rxp_pool_copy_ptrs_(objs, c->objs + c->len, n);
		c->alloc += n;
		return 0;
	}
#endif
	return rxp_pool_get_bulk_at(pool, objs, n, file, line);
}

/* rxp_pool_put for a caller that has this thread's id at hand (tid:
 * rxp_thread_id()), so that freeing several objects reads it once. */
static inline __attribute__((always_inline)) void rxp_pool_put_tid_(struct rxp_pool *pool,
								    void *obj, unsigned tid)
{
#ifndef RXP_DEBUG
	unsigned owner;
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
#else
	(void)tid;
#endif
	rxp_pool_put_at_(pool, obj);
}

static inline void rxp_pool_put(struct rxp_pool *pool, void *obj)
{
	rxp_pool_put_tid_(pool, obj, rxp_thread_id());
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
			rxp_pool_copy_ptrs_(dst, objs, n);
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

RXP_END_DECLS

#endif
