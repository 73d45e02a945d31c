/*
 * Fixed-size object pools with per-thread caches and deferred remote free
 * (rxpath/pool.h): creation, carving, get, put and the deferred hand-over.
 * The layout is in pool_internal.h, the stash in pool_stash.c, counters and
 * the leak report in pool_report.c. Invariants:
 *   - only thread t touches caches[t] (no locks); stash[t] holds only
 *     objects owned by t, and others take its lock only to empty it into
 *     the ring when the ring is empty;
 *   - defer[t] holds only objects allocated by t, already released by their
 *     user; other threads add batches, only t takes them out;
 *   - the fast paths write nothing into the object, and single frees
 *     read nothing of it: its owner is a byte in the pool's owner table
 *     (rxpath/internal/pool.h), so a remote free reads a small table that
 *     stays in the freeing thread's cache, not a line per object (DPDK's
 *     mempool never touches objects either); bulk frees read the copy in
 *     the header. Both are rewritten only when the object changes threads;
 *   - alloc - free summed over threads is the outstanding count;
 *   - objects are carved lazily: slots [carved, n) have never been handed
 *     out and their memory has never been written, so a pool sized for the
 *     worst case (rxpath defrag sizes its pool from a memory cap of a
 *     quarter of RAM) costs memory only for what was ever in use at once.
 *     A slot is carved (header and obj_init written) when the shared ring
 *     is empty, in batches, into the ring, before other threads' stashes
 *     are spilled.
 * Why the layout is as it is (header size, odd slot sizes, the owner
 * table) was measured: bench/results/README.md, "pool".
 */
#include <errno.h>
#include <stddef.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "rxpath/compiler.h"
#include "rxpath/log.h"
#include "rxpath/pool.h"
#include "buf/mem.h"
#include "buf/pool_internal.h"

/* ---- creation ------------------------------------------------------------ */

static void pool_free_mem(struct rxp_pool *p)
{
	for (unsigned t = 0; t < RXP_MAX_THREADS; t++)
		free(p->defer[t]);
	free(p->ring);
	rxp_mem_unmap(p->mem, p->mem_len);
	free(p->cache_mem);
	free(p->stage_mem);
	for (unsigned t = 0; p->stash && t < RXP_MAX_THREADS; t++)
		free(p->stash[t].bits); /* sum lives in the same allocation */
	free(p->stash);
	free(p->head.owners);
	free(p);
}

/* The slot stride: header and object in whole cache lines. */
static void pool_set_stride(struct rxp_pool *p, size_t obj_size)
{
	p->stride = RXP_ALIGN_UP(sizeof(struct obj_hdr) + obj_size, (size_t)RXP_CACHELINE);
	/* An odd number of lines per slot, as DPDK's mempool pads its objects
	 * unless told not to: with an even number, objects taken in address
	 * order and used a fixed count apart (fragment r of datagram d sits
	 * r x in-flight slots from fragment 0) land a multiple of 4 KiB apart,
	 * in one L1 set. */
	if (!((p->stride / RXP_CACHELINE) & 1))
		p->stride += RXP_CACHELINE;
}

/* The owner table's divisor: a slot's index is its offset from obj0,
 * shifted by the stride's power of two and multiplied by the inverse of
 * its odd part. */
static void pool_set_owner_div(struct rxp_pool *p)
{
	size_t odd = p->stride;
	uint64_t inv = 1;

	p->head.obj0 = p->mem + sizeof(struct obj_hdr);
	p->head.owner_shift = (unsigned)__builtin_ctzll(odd);
	odd >>= p->head.owner_shift;
	for (int i = 0; i < 6; i++) /* Newton: inverse of odd mod 2^64 */
		inv *= 2 - odd * inv;
	p->head.owner_inv = inv;
	/* owners[] entries are written as their slots are carved */
}

/* The per-thread caches, their staging areas, stashes and deferred-free
 * rings; false when out of memory (pool_free_mem frees what was made). */
static bool pool_alloc_caches(struct rxp_pool *p, uint32_t n)
{
	bool ok;

	/* Untouched parts of these stay unbacked: only threads that use
	 * the pool, and owners they free to, cost memory. */
	p->cache_mem = calloc((size_t)RXP_MAX_THREADS * p->cache_size, sizeof(void *));
	p->stage_mem = calloc((size_t)RXP_MAX_THREADS * NSTAGE, sizeof(struct stage));
	p->nwords = (n + 63) / 64;
	p->nsum = (p->nwords + 63) / 64;
	p->stash = calloc(RXP_MAX_THREADS, sizeof(struct stash));
	ok = p->cache_mem && p->stage_mem && p->stash;
	for (unsigned t = 0; ok && t < RXP_MAX_THREADS; t++) {
		p->defer[t] = rxp_mpmc_create(p->defer_max);
		ok = p->defer[t] != NULL;
		p->caches[t].objs = p->cache_mem + (size_t)t * p->cache_size;
		p->caches[t].stage = p->stage_mem + (size_t)t * NSTAGE;
		p->caches[t].cap = p->cache_size;
		/* the inline put stages while n < lim, then the call hands the
		 * batch over */
		for (unsigned k = 0; k < NSTAGE; k++) {
			p->caches[t].stage[k].lim = p->stage_lim - 1;
			p->caches[t].stage[k].pf_at = p->stage_lim * 3 / 4;
		}
	}
	return ok;
}

struct rxp_pool *rxp_pool_create(const struct rxp_pool_config *cfg)
{
	struct rxp_pool *p;
	bool ok;

	if (!cfg || !cfg->obj_size || !cfg->n || cfg->n > (1u << 30) ||
	    (cfg->cache_size != RXP_POOL_NO_CACHE && cfg->cache_size > RXP_POOL_CACHE_MAX)) {
		errno = EINVAL;
		return NULL;
	}
	p = aligned_alloc(RXP_CACHELINE, RXP_ALIGN_UP(sizeof(*p), (size_t)RXP_CACHELINE));
	if (!p)
		return NULL;
	memset(p, 0, sizeof(*p));
	p->head.caches = (struct rxp_pool_cache_ *)(void *)p->caches;
	p->head.cache_stride = sizeof(struct tcache);
	p->head.sole = RXP_POOL_SOLE_NONE_;
	snprintf(p->name, sizeof(p->name), "%s", cfg->name ? cfg->name : "pool");
	p->obj_size = cfg->obj_size;
	pool_set_stride(p, cfg->obj_size);
	p->n = cfg->n;
	if (cfg->cache_size == RXP_POOL_NO_CACHE)
		p->cache_size = 0;
	else
		p->cache_size = cfg->cache_size ? cfg->cache_size : RXP_POOL_CACHE_DEFAULT;
	p->batch = p->cache_size > 1 ? p->cache_size / 2 : p->cache_size;
	p->defer_max = cfg->defer_max ? cfg->defer_max : RXP_POOL_DEFER_MAX_DEFAULT;
	p->stage_lim = p->defer_max < STAGE ? p->defer_max : STAGE;

	p->ring = rxp_mpmc_create(cfg->n);
	p->mem = rxp_mem_map(p->stride * cfg->n, 0, &p->mem_len);
	p->head.owners = malloc(cfg->n);
	ok = p->ring && p->mem && p->head.owners;
	if (ok)
		pool_set_owner_div(p);
	if (ok && p->cache_size)
		ok = pool_alloc_caches(p, cfg->n);
	if (!ok) {
		pool_free_mem(p);
		errno = ENOMEM;
		return NULL;
	}
	p->obj_init = cfg->obj_init;
	p->obj_init_arg = cfg->obj_init_arg;
	return p;
}

/* ---- carving -------------------------------------------------------------- */

#define CARVE_MIN 32 /* slots made at once, at least */
#define CARVE_MAX 256

/* Make up to want never-used slots (at least CARVE_MIN) and put them on the
 * shared ring, lowest address first; returns how many (0: all carved). */
__attribute__((noinline)) static uint32_t carve_to_ring(struct rxp_pool *p, uint32_t want)
{
	uint32_t first = atomic_load_explicit(&p->carved, memory_order_relaxed), k;
	void *objs[CARVE_MAX];

	want = want < CARVE_MIN ? CARVE_MIN : want > CARVE_MAX ? CARVE_MAX : want;
	do {
		if (first >= p->n)
			return 0;
		k = p->n - first < want ? p->n - first : want;
	} while (!atomic_compare_exchange_weak_explicit(
		&p->carved, &first, first + k, memory_order_relaxed, memory_order_relaxed));
	for (uint32_t i = 0; i < k; i++) {
		struct obj_hdr *h = (struct obj_hdr *)(p->mem + (size_t)(first + i) * p->stride);

		memset(h, 0, sizeof(*h));
		h->owner = TID_NONE;
		h->state = STATE_FREE;
		p->head.owners[first + i] = TID_NONE;
		if (p->obj_init)
			p->obj_init(h + 1, first + i, p->obj_init_arg);
		objs[i] = h + 1;
	}
	to_ring(p, objs, k);
	return k;
}

uint32_t rxp_pool_carved(const struct rxp_pool *p)
{
	return atomic_load_explicit(&p->carved, memory_order_relaxed);
}

size_t rxp_pool_destroy(struct rxp_pool *p)
{
	size_t leaked;

	if (!p)
		return 0;
	leaked = rxp_pool_leak_report(p, NULL);
	if (leaked) {
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);

		rxp_log(RXP_LOG_ERR, "pool %s: %zu of %u objects leaked", p->name, leaked, p->n);
		if (f) {
			rxp_pool_leak_report(p, f);
			fclose(f);
			for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n"))
				rxp_log(RXP_LOG_ERR, "%s", line);
			free(buf);
		}
	}
	pool_free_mem(p);
	return leaked;
}

/* ---- get ----------------------------------------------------------------- */

/* Copy n object pointers. The usual burst sizes get a copy of constant
 * size, which the compiler inlines; others go a pointer at a time up to
 * RXP_POOL_COPY_LOOP_, as a variable-sized memcpy is `rep movsq`. */
static inline void copy_objs(void **dst, void *const *src, unsigned n)
{
	if (n == 32)
		memcpy(dst, src, 32 * sizeof(void *));
	else if (n == 64)
		memcpy(dst, src, 64 * sizeof(void *));
	else
		rxp_pool_copy_ptrs_(dst, src, n);
}

static inline void mark_used(struct rxp_pool *p, void *obj, unsigned tid, const char *file,
			     int line)
{
	struct obj_hdr *h = hdr_of(obj);

#ifdef RXP_DEBUG
	if (h->state != STATE_FREE) {
		rxp_log(RXP_LOG_ERR, "pool %s: handing out object %p in state %#x", p->name, obj,
			h->state);
		abort();
	}
	h->state = STATE_USED;
	h->file = file;
	h->line = (uint32_t)line;
#else
	(void)p;
	(void)h;
	(void)file;
	(void)line;
#endif
	(void)tid;
}

/* The first time a thread takes objects from the shared ring, record it:
 * the inline frees skip the owner check while one thread alone ever has.
 * This happens before the objects leave get, so a thread that is handed one
 * of them (through a queue, which orders the two) also sees the change. */
__attribute__((noinline, cold)) static void sole_update(struct rxp_pool *p, unsigned tid)
{
	int cur = RXP_POOL_SOLE_NONE_;

	if (!__atomic_compare_exchange_n(&p->head.sole, &cur, (int)tid, false, __ATOMIC_SEQ_CST,
					 __ATOMIC_SEQ_CST) &&
	    cur != (int)tid)
		__atomic_store_n(&p->head.sole, RXP_POOL_SOLE_MANY_, __ATOMIC_SEQ_CST);
}

/* Objects entering a thread's hands from the shared ring become its own.
 * Everything in caches[t] already has owner t, so get never writes it. */
static inline void adopt(struct rxp_pool *p, void *const *objs, uint32_t n, unsigned tid)
{
	int sole = __atomic_load_n(&p->head.sole, __ATOMIC_RELAXED);

	if (rxp_unlikely(sole != (int)tid && sole != RXP_POOL_SOLE_MANY_ && n))
		sole_update(p, tid);
	for (uint32_t i = 0; i < n; i++) {
		unsigned char *o = &p->head.owners[rxp_pool_index_(&p->head, objs[i])];

		if (*o != tid) { /* a write only on a change keeps the lines shared */
			*o = (unsigned char)tid;
			hdr_of(objs[i])->owner = (uint16_t)tid;
		}
	}
}

static unsigned drain(struct rxp_pool *p, unsigned tid, struct tcache *c);

/* Refill: up to want objects into dst (popped from its end), from this
 * thread's stash, else the shared ring, else the ring after every stash
 * was spilled into it. */
static uint32_t refill(struct rxp_pool *p, unsigned tid, void **dst, uint32_t want)
{
	uint32_t got = pool_stash_take(p, &p->stash[tid], dst, want);

	if (got)
		return got; /* our own: no adopt */
	got = rxp_mpmc_dequeue(p->ring, dst, want, false);
	if (!got && (carve_to_ring(p, want) || pool_stash_spill_all(p)))
		got = rxp_mpmc_dequeue(p->ring, dst, want, false);
	adopt(p, dst, got, tid);
	return got;
}

/* Slow path of get: uncached pool, thread past the limit, or empty cache. */
__attribute__((noinline)) static void *get_slow(struct rxp_pool *p, unsigned tid, struct tcache *c,
						const char *file, int line)
{
	void *obj;

	if (!c->cap) {
		if (!rxp_mpmc_dequeue(p->ring, &obj, 1, true) &&
		    ((!carve_to_ring(p, 1) && !pool_stash_spill_all(p)) ||
		     !rxp_mpmc_dequeue(p->ring, &obj, 1, true))) {
			__atomic_fetch_add(&c->fail, 1, __ATOMIC_RELAXED);
			return NULL;
		}
		adopt(p, &obj, 1, tid);
		mark_used(p, obj, tid, file, line);
		__atomic_fetch_add(&c->alloc, 1, __ATOMIC_RELAXED);
		return obj;
	}
	/* Our own deferred frees first (they are ours and warm), then the ring. */
	drain(p, tid, c);
	if (!c->len)
		c->len = refill(p, tid, c->objs, p->batch ? p->batch : 1);
	if (!c->len) {
		c->fail++;
		return NULL;
	}
	obj = c->objs[--c->len];
	mark_used(p, obj, tid, file, line);
	c->alloc++;
	return obj;
}

void *rxp_pool_get_at(struct rxp_pool *p, const char *file, int line)
{
	unsigned tid = rxp_thread_id();
	struct tcache *c = &p->caches[tid];
	void *obj;

	if (rxp_unlikely(c->len == 0))
		return get_slow(p, tid, c, file, line);
	obj = c->objs[--c->len];
	mark_used(p, obj, tid, file, line);
	c->alloc++;
	return obj;
}

int rxp_pool_get_bulk_at(struct rxp_pool *p, void **objs, unsigned n, const char *file, int line)
{
	unsigned tid = rxp_thread_id();
	struct tcache *c = &p->caches[tid];

	if (!n)
		return 0;
	if (rxp_likely(c->len >= n)) {
		c->len -= n;
		copy_objs(objs, c->objs + c->len, n);
	} else if (c->cap && n <= c->cap) {
		unsigned want;

		drain(p, tid, c);
		/* sized after the drain, which may have filled the cache */
		want = n > c->len ? n - c->len + p->batch : 0;
		if (want > c->cap - c->len)
			want = c->cap - c->len;
		while (c->len < n) {
			uint32_t got = refill(p, tid, c->objs + c->len, want);

			if (!got)
				break;
			c->len += got;
			want -= got;
		}
		if (c->len < n) {
			c->fail++;
			return -ENOMEM;
		}
		c->len -= n;
		rxp_pool_copy_ptrs_(objs, c->objs + c->len, n);
	} else {
		bool got = rxp_mpmc_dequeue(p->ring, objs, n, true);

		while (!got && carve_to_ring(p, n)) /* n may be more than one carving */
			got = rxp_mpmc_dequeue(p->ring, objs, n, true);
		if (!got) {
			rxp_pool_flush_cache(p);
			pool_stash_spill_all(p);
			got = rxp_mpmc_dequeue(p->ring, objs, n, true);
		}
		if (!got) {
			__atomic_fetch_add(&c->fail, 1, __ATOMIC_RELAXED);
			return -ENOMEM;
		}
		adopt(p, objs, n, tid);
	}
#ifdef RXP_DEBUG
	for (unsigned i = 0; i < n; i++)
		mark_used(p, objs[i], tid, file, line);
#endif
	if (rxp_likely(tid != TID_NONE))
		c->alloc += n;
	else
		__atomic_fetch_add(&c->alloc, n, __ATOMIC_RELAXED);
	return 0;
}

/* ---- put ----------------------------------------------------------------- */

static inline void mark_free(struct rxp_pool *p, void *obj)
{
#ifdef RXP_DEBUG
	struct obj_hdr *h = hdr_of(obj);

	if (!rxp_pool_contains(p, obj) || h->state != STATE_USED) {
		rxp_log(RXP_LOG_ERR, "pool %s: double free or foreign object %p", p->name, obj);
		abort();
	}
	h->state = STATE_FREE;
#else
	(void)p;
	(void)obj;
#endif
}

/* Hand stage slot k's batch over: onto its owner's deferred ring, and what
 * does not fit (the ring holds defer_max) onto the shared ring, counted as
 * past the cap. Nothing stays behind: a batch that waited here for the
 * owner's next drain would wait for this thread's next free instead, and a
 * thread that stops freeing would strand it. all: the slot is released too
 * (a drain, or the slot taken for another owner). */
static void stage_offer(struct rxp_pool *p, struct tcache *c, unsigned k, bool all)
{
	struct stage *s = &c->stage[k];
	uint32_t done;

	if (s->n) {
		done = rxp_mpmc_enqueue(p->defer[s->owner], s->objs, s->n, false);
		c->deferred += done;
		if (done < s->n) {
			to_ring(p, s->objs + done, s->n - done);
			c->overflow += s->n - done;
		}
	}
	s->n = 0;
	if (all) {
		c->staged &= ~(1u << k);
		if (c->hot == s)
			c->hot = NULL;
	}
}

/* Hand a freeing thread's batch in stage slot k over whole: onto its
 * owner's deferred ring, or, past that ring's cap, onto the shared ring. */
static void stage_flush(struct rxp_pool *p, struct tcache *c, unsigned k)
{
	stage_offer(p, c, k, true);
}

/* The stage slot batching frees for owner: its own, a free one, or one
 * emptied for it (a thread frees to few owners at a time, so a handful of
 * slots serves, instead of one per possible owner). */
static unsigned stage_slot(struct rxp_pool *p, struct tcache *c, unsigned owner)
{
	unsigned k;

	for (k = 0; k < NSTAGE; k++)
		if ((c->staged & (1u << k)) && c->stage[k].owner == owner) {
			c->hot = &c->stage[k];
			return k;
		}
	k = c->staged == (1u << NSTAGE) - 1 ? owner % NSTAGE : (unsigned)__builtin_ctz(~c->staged);
	stage_flush(p, c, k);
	c->stage[k].owner = (uint16_t)owner;
	c->stage[k].pf = (const void *)&p->defer[owner]->cons_tail;
	c->staged |= 1u << k;
	c->hot = &c->stage[k];
	return k;
}

__attribute__((noinline)) static void put_slow(struct rxp_pool *p, unsigned tid, struct tcache *c,
					       void *obj)
{
	unsigned owner = rxp_pool_owner_(&p->head, obj);

	if (!c->cap || owner >= TID_NONE) {
		/* no cache here, or an owner without one: the shared ring */
		to_ring(p, &obj, 1);
	} else if (owner == tid) {
		/* cache full: stash the older half, keep the warm top (LIFO) */
		if (!pool_stash_put(p, tid, c->objs, p->batch))
			to_ring(p, c->objs, p->batch);
		memmove(c->objs, c->objs + p->batch, (c->len - p->batch) * sizeof(void *));
		c->len -= p->batch;
		c->objs[c->len++] = obj;
	} else {
		unsigned k = stage_slot(p, c, owner);
		struct stage *s = &c->stage[k];

		s->objs[s->n++] = obj;
		if (s->n > s->lim)
			stage_offer(p, c, k, false);
	}
}

void rxp_pool_put_at_(struct rxp_pool *p, void *obj)
{
	unsigned tid = rxp_thread_id();
	struct tcache *c = &p->caches[tid];

	unsigned owner;

	mark_free(p, obj); /* first: RXP_DEBUG refuses a foreign object before it is looked up */
	owner = rxp_pool_owner_(&p->head, obj);
	if (rxp_likely(owner == tid && c->len < c->cap)) {
		c->objs[c->len++] = obj;
	} else if (c->hot && c->hot->owner == owner && c->hot->n < c->hot->lim) {
		/* a remote free for the owner we batched for last: stage it */
		c->hot->objs[c->hot->n++] = obj;
		if (c->hot->n == c->hot->pf_at) /* as the inline put does */
			__builtin_prefetch(c->hot->pf);
	} else {
		put_slow(p, tid, c, obj);
	}
	if (rxp_likely(tid != TID_NONE))
		c->free++;
	else
		__atomic_fetch_add(&c->free, 1, __ATOMIC_RELAXED);
}

void rxp_pool_put_bulk_at_(struct rxp_pool *p, void *const *objs, unsigned n)
{
	unsigned tid = rxp_thread_id();
	struct tcache *c = &p->caches[tid];

	unsigned foreign = 0;

	for (unsigned i = 0; i < n; i++) /* first, as in put_at_ */
		mark_free(p, objs[i]);
#pragma GCC unroll 8
	/* Common case: all ours and the cache has room: one check pass, one copy. */
	for (unsigned i = 0; i < n; i++)
		foreign |= hdr_of(objs[i])->owner ^ tid;
	if (rxp_likely(!foreign && c->len + n <= c->cap)) {
		copy_objs(c->objs + c->len, objs, n);
		c->len += n;
	} else {
		for (unsigned i = 0; i < n; i++) {
			void *obj = objs[i];

			if (hdr_of(obj)->owner == tid && c->len < c->cap)
				c->objs[c->len++] = obj;
			else
				put_slow(p, tid, c, obj);
		}
	}
	if (rxp_likely(tid != TID_NONE))
		c->free += n;
	else
		__atomic_fetch_add(&c->free, n, __ATOMIC_RELAXED);
}

void rxp_pool_put_shared(struct rxp_pool *p, void *obj)
{
	unsigned tid = rxp_thread_id();

	mark_free(p, obj);
	to_ring(p, &obj, 1);
	if (tid != TID_NONE)
		p->caches[tid].free++;
	else
		__atomic_fetch_add(&p->caches[tid].free, 1, __ATOMIC_RELAXED);
}

/* Take this thread's deferred ring into its cache (the rest to its stash),
 * and hand over this thread's own staged remote frees. */
static unsigned drain(struct rxp_pool *p, unsigned tid, struct tcache *c)
{
	struct rxp_mpmc *d = p->defer[tid];
	unsigned n = 0, got;
	void *spill[64];

	while (rxp_unlikely(c->staged))
		stage_flush(p, c, (unsigned)__builtin_ctz(c->staged));
	/* Only we consume d, so our cons_head is current: one shared read. */
	if (atomic_load_explicit(&d->prod_tail, memory_order_relaxed) ==
	    atomic_load_explicit(&d->cons_head, memory_order_relaxed))
		return 0;
	if (c->len < c->cap) {
		got = rxp_mpmc_dequeue_sc(d, c->objs + c->len, c->cap - c->len);
		c->len += got;
		n += got;
	}
	while ((got = rxp_mpmc_dequeue_sc(d, spill, RXP_ARRAY_SIZE(spill)))) {
		if (!pool_stash_put(p, tid, spill, got))
			to_ring(p, spill, got);
		n += got;
	}
	c->drained += n;
	return n;
}

unsigned rxp_pool_drain_deferred(struct rxp_pool *p)
{
	unsigned tid = rxp_thread_id();

	if (tid == TID_NONE || !p->cache_size)
		return 0;
	return drain(p, tid, &p->caches[tid]);
}

void rxp_pool_flush_cache(struct rxp_pool *p)
{
	unsigned tid = rxp_thread_id();
	struct tcache *c = &p->caches[tid];

	if (tid == TID_NONE || !p->cache_size)
		return;
	drain(p, tid, c);
	if (c->len)
		to_ring(p, c->objs, c->len);
	c->len = 0;
	pool_stash_to_ring(p, &p->stash[tid]);
}
