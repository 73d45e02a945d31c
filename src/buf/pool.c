/*
 * Fixed-size object pools with per-thread caches and deferred remote free.
 *
 * Layout: one aligned allocation of n slots; each slot is a 32-byte header
 * (owner thread, state, deferred-list link, allocation site) followed by the
 * object. Free objects live in exactly one place: a thread's cache, the
 * shared MPMC ring, or an owner's deferred list. Invariants:
 *   - only thread t touches caches[t] (no locks);
 *   - an object on defer[t] was allocated by t and is already released by its
 *     user; only t takes the list (all at once, so no ABA);
 *   - alloc - free per pool is the outstanding count; a slot's state says
 *     whether it is out, so a leak report can name each one.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "rxpath/compiler.h"
#include "rxpath/log.h"
#include "rxpath/pool.h"
#include "buf/ring.h"

#define STATE_FREE 0xf4eeu
#define STATE_USED 0x05edu
#define TID_NONE RXP_MAX_THREADS /* a thread past the limit: no cache */

struct obj_hdr {
	struct obj_hdr *next; /* deferred-list link while free */
	uint16_t owner;       /* thread that allocated it */
	uint16_t state;
	uint32_t line;
	const char *file;
	uint64_t pad;
};
_Static_assert(sizeof(struct obj_hdr) == 32, "object header keeps objects 32-byte aligned");

struct tcache {
	uint32_t len;
	void **objs;
	/* Counted by the thread itself, read (relaxed) by anyone. */
	uint64_t alloc, free, fail, deferred, overflow, drained;
} __rxp_cache_aligned;

struct defer_list {
	_Atomic(struct obj_hdr *) head;
	_Atomic uint32_t count;
} __rxp_cache_aligned;

struct rxp_pool {
	char name[32];
	size_t obj_size;
	size_t stride;
	unsigned n;
	unsigned cache_size; /* 0: no caches */
	unsigned batch;      /* refill/flush unit: half the cache */
	unsigned defer_max;
	uint8_t *mem;
	void **cache_mem;
	struct tcache caches[RXP_MAX_THREADS + 1]; /* [TID_NONE] counts only, atomically */
	struct defer_list defer[RXP_MAX_THREADS];
	struct rxp_mpmc *ring; /* last: it is large */
};

#define STAT_ADD(field, v) __atomic_store_n(&(field), (field) + (v), __ATOMIC_RELAXED)
#define STAT_READ(field) __atomic_load_n(&(field), __ATOMIC_RELAXED)

/* ---- thread ids ---------------------------------------------------------- */

static _Atomic uint64_t tid_bitmap;
static pthread_key_t tid_key;
static pthread_once_t tid_once = PTHREAD_ONCE_INIT;
static __thread int my_tid = -1;

static void tid_release(void *v)
{
	unsigned tid = (unsigned)(uintptr_t)v - 1;

	atomic_fetch_and(&tid_bitmap, ~(1ull << tid));
}

static void tid_key_init(void)
{
	pthread_key_create(&tid_key, tid_release);
}

static unsigned tid_assign(void)
{
	uint64_t used = atomic_load(&tid_bitmap);

	pthread_once(&tid_once, tid_key_init);
	for (;;) {
		if (used == ~0ull) {
			my_tid = TID_NONE;
			return TID_NONE;
		}
		unsigned tid = (unsigned)__builtin_ctzll(~used);

		if (atomic_compare_exchange_weak(&tid_bitmap, &used, used | (1ull << tid))) {
			my_tid = (int)tid;
			pthread_setspecific(tid_key, (void *)(uintptr_t)(tid + 1));
			return tid;
		}
	}
}

unsigned rxp_thread_id(void)
{
	if (rxp_likely(my_tid >= 0))
		return (unsigned)my_tid;
	return tid_assign();
}

/* ---- creation ------------------------------------------------------------ */

static inline struct obj_hdr *hdr_of(void *obj)
{
	return (struct obj_hdr *)obj - 1;
}

static inline void *obj_of(struct obj_hdr *h)
{
	return h + 1;
}

static uint32_t pow2_at_least(uint32_t v)
{
	uint32_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

struct rxp_pool *rxp_pool_create(const struct rxp_pool_config *cfg)
{
	struct rxp_pool *p;
	uint32_t ring_size;

	if (!cfg || !cfg->obj_size || !cfg->n || cfg->n > (1u << 30) ||
	    (cfg->cache_size != RXP_POOL_NO_CACHE && cfg->cache_size > RXP_POOL_CACHE_MAX)) {
		errno = EINVAL;
		return NULL;
	}
	p = aligned_alloc(RXP_CACHELINE, RXP_ALIGN_UP(sizeof(*p), RXP_CACHELINE));
	if (!p)
		return NULL;
	memset(p, 0, sizeof(*p));
	snprintf(p->name, sizeof(p->name), "%s", cfg->name ? cfg->name : "pool");
	p->obj_size = cfg->obj_size;
	p->stride = RXP_ALIGN_UP(sizeof(struct obj_hdr) + cfg->obj_size, (size_t)RXP_CACHELINE);
	p->n = cfg->n;
	if (cfg->cache_size == RXP_POOL_NO_CACHE)
		p->cache_size = 0;
	else
		p->cache_size = cfg->cache_size ? cfg->cache_size : RXP_POOL_CACHE_DEFAULT;
	p->batch = p->cache_size > 1 ? p->cache_size / 2 : p->cache_size;
	p->defer_max = cfg->defer_max ? cfg->defer_max : RXP_POOL_DEFER_MAX_DEFAULT;

	ring_size = pow2_at_least(cfg->n);
	p->ring = aligned_alloc(RXP_CACHELINE,
				RXP_ALIGN_UP(sizeof(struct rxp_mpmc) + ring_size * sizeof(void *),
					     (size_t)RXP_CACHELINE));
	p->mem = aligned_alloc(RXP_CACHELINE, p->stride * cfg->n);
	if (p->cache_size)
		p->cache_mem = calloc((size_t)RXP_MAX_THREADS * p->cache_size, sizeof(void *));
	if (!p->ring || !p->mem || (p->cache_size && !p->cache_mem)) {
		free(p->ring);
		free(p->mem);
		free(p->cache_mem);
		free(p);
		errno = ENOMEM;
		return NULL;
	}
	memset(p->ring, 0, sizeof(*p->ring));
	p->ring->mask = ring_size - 1;
	p->ring->capacity = cfg->n;
	for (unsigned t = 0; t < RXP_MAX_THREADS && p->cache_size; t++)
		p->caches[t].objs = p->cache_mem + (size_t)t * p->cache_size;

	for (unsigned i = 0; i < cfg->n; i++) {
		struct obj_hdr *h = (struct obj_hdr *)(p->mem + (size_t)i * p->stride);
		void *obj = obj_of(h);

		memset(h, 0, sizeof(*h));
		h->state = STATE_FREE;
		if (cfg->obj_init)
			cfg->obj_init(obj, i, cfg->obj_init_arg);
		p->ring->slots[i] = obj;
	}
	atomic_store(&p->ring->prod_head, cfg->n);
	atomic_store(&p->ring->prod_tail, cfg->n);
	return p;
}

static size_t count_used(const struct rxp_pool *p)
{
	size_t used = 0;

	for (unsigned i = 0; i < p->n; i++) {
		const struct obj_hdr *h = (const void *)(p->mem + (size_t)i * p->stride);

		used += h->state == STATE_USED;
	}
	return used;
}

size_t rxp_pool_leak_report(const struct rxp_pool *p, FILE *out)
{
	size_t used = 0;

	for (unsigned i = 0; i < p->n; i++) {
		const struct obj_hdr *h = (const void *)(p->mem + (size_t)i * p->stride);

		if (h->state != STATE_USED)
			continue;
		used++;
		if (!out)
			continue;
		if (h->file)
			fprintf(out, "pool %s: object %u (%p) outstanding, allocated at %s:%u by thread %u\n",
				p->name, i, (const void *)(h + 1), h->file, h->line, h->owner);
		else
			fprintf(out, "pool %s: object %u (%p) outstanding, allocated by thread %u "
				     "(build with RXP_DEBUG for the site)\n",
				p->name, i, (const void *)(h + 1), h->owner);
	}
	return used;
}

size_t rxp_pool_destroy(struct rxp_pool *p)
{
	size_t leaked;

	if (!p)
		return 0;
	leaked = count_used(p);
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
	free(p->ring);
	free(p->mem);
	free(p->cache_mem);
	free(p);
	return leaked;
}

/* ---- get ----------------------------------------------------------------- */

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
	h->file = file;
	h->line = (uint32_t)line;
#else
	(void)p;
	(void)file;
	(void)line;
#endif
	h->owner = (uint16_t)tid;
	h->state = STATE_USED;
}

static void *get_uncached(struct rxp_pool *p, unsigned tid, const char *file, int line)
{
	void *obj;

	if (!rxp_mpmc_dequeue(p->ring, &obj, 1, true)) {
		__atomic_fetch_add(&p->caches[tid].fail, 1, __ATOMIC_RELAXED);
		return NULL;
	}
	mark_used(p, obj, tid, file, line);
	__atomic_fetch_add(&p->caches[tid].alloc, 1, __ATOMIC_RELAXED);
	return obj;
}

/* Refill an empty cache: deferred frees first (they are ours and warm),
 * then a batch from the ring. */
static bool refill(struct rxp_pool *p, struct tcache *c, unsigned want)
{
	if (atomic_load_explicit(&p->defer[rxp_thread_id()].head, memory_order_relaxed))
		rxp_pool_drain_deferred(p);
	if (c->len < want)
		c->len += rxp_mpmc_dequeue(p->ring, c->objs + c->len, p->batch + want - c->len,
					   false);
	return c->len >= want;
}

void *rxp_pool_get_at(struct rxp_pool *p, const char *file, int line)
{
	unsigned tid = rxp_thread_id();
	struct tcache *c = &p->caches[tid];
	void *obj;

	if (rxp_unlikely(!p->cache_size || tid == TID_NONE))
		return get_uncached(p, tid, file, line);
	if (rxp_unlikely(c->len == 0) && !refill(p, c, 1)) {
		STAT_ADD(c->fail, 1);
		return NULL;
	}
	obj = c->objs[--c->len];
	mark_used(p, obj, tid, file, line);
	STAT_ADD(c->alloc, 1);
	return obj;
}

int rxp_pool_get_bulk_at(struct rxp_pool *p, void **objs, unsigned n, const char *file, int line)
{
	unsigned tid = rxp_thread_id();
	struct tcache *c = &p->caches[tid];

	if (!n)
		return 0;
	if (!p->cache_size || tid == TID_NONE || n > p->cache_size) {
		if (!rxp_mpmc_dequeue(p->ring, objs, n, true) &&
		    (!c->len || (rxp_pool_flush_cache(p), !rxp_mpmc_dequeue(p->ring, objs, n, true)))) {
			__atomic_fetch_add(&c->fail, 1, __ATOMIC_RELAXED);
			return -ENOMEM;
		}
	} else {
		if (rxp_unlikely(c->len < n) && !refill(p, c, n)) {
			STAT_ADD(c->fail, 1);
			return -ENOMEM;
		}
		c->len -= n;
		memcpy(objs, c->objs + c->len, n * sizeof(void *));
	}
	for (unsigned i = 0; i < n; i++)
		mark_used(p, objs[i], tid, file, line);
	if (tid == TID_NONE)
		__atomic_fetch_add(&c->alloc, n, __ATOMIC_RELAXED);
	else
		STAT_ADD(c->alloc, n);
	return 0;
}

/* ---- put ----------------------------------------------------------------- */

static inline void mark_free(struct rxp_pool *p, void *obj)
{
	struct obj_hdr *h = hdr_of(obj);

#ifdef RXP_DEBUG
	if (h->state != STATE_USED || !rxp_pool_contains(p, obj)) {
		rxp_log(RXP_LOG_ERR, "pool %s: double free or foreign object %p", p->name, obj);
		abort();
	}
#else
	(void)p;
#endif
	h->state = STATE_FREE;
}

static void to_ring(struct rxp_pool *p, void *const *objs, uint32_t n)
{
	/* Cannot fail: the ring holds every object of the pool. */
	rxp_mpmc_enqueue(p->ring, objs, n, true);
}

static void put_remote(struct rxp_pool *p, struct tcache *c, struct obj_hdr *h, bool counted)
{
	struct defer_list *d = &p->defer[h->owner];
	struct obj_hdr *head;

	if (atomic_load_explicit(&d->count, memory_order_relaxed) >= p->defer_max) {
		void *obj = obj_of(h);

		to_ring(p, &obj, 1);
		if (counted)
			STAT_ADD(c->overflow, 1);
		else
			__atomic_fetch_add(&c->overflow, 1, __ATOMIC_RELAXED);
		return;
	}
	atomic_fetch_add_explicit(&d->count, 1, memory_order_relaxed);
	head = atomic_load_explicit(&d->head, memory_order_relaxed);
	do
		h->next = head;
	while (!atomic_compare_exchange_weak_explicit(&d->head, &head, h, memory_order_release,
						      memory_order_relaxed));
	if (counted)
		STAT_ADD(c->deferred, 1);
	else
		__atomic_fetch_add(&c->deferred, 1, __ATOMIC_RELAXED);
}

static inline void put_one(struct rxp_pool *p, unsigned tid, struct tcache *c, void *obj)
{
	struct obj_hdr *h = hdr_of(obj);

	mark_free(p, obj);
	if (rxp_likely(h->owner == tid)) {
		if (rxp_unlikely(c->len == p->cache_size)) {
			/* Flush the older half; keep the warm top for LIFO reuse. */
			to_ring(p, c->objs, p->batch);
			memmove(c->objs, c->objs + p->batch,
				(c->len - p->batch) * sizeof(void *));
			c->len -= p->batch;
		}
		c->objs[c->len++] = obj;
		return;
	}
	if (h->owner == TID_NONE) {
		to_ring(p, &obj, 1);
		return;
	}
	put_remote(p, c, h, true);
}

void rxp_pool_put(struct rxp_pool *p, void *obj)
{
	unsigned tid = rxp_thread_id();
	struct tcache *c = &p->caches[tid];

	if (rxp_unlikely(!p->cache_size || tid == TID_NONE)) {
		mark_free(p, obj);
		to_ring(p, &obj, 1);
		__atomic_fetch_add(&c->free, 1, __ATOMIC_RELAXED);
		return;
	}
	put_one(p, tid, c, obj);
	STAT_ADD(c->free, 1);
}

void rxp_pool_put_bulk(struct rxp_pool *p, void *const *objs, unsigned n)
{
	unsigned tid = rxp_thread_id();
	struct tcache *c = &p->caches[tid];

	if (rxp_unlikely(!p->cache_size || tid == TID_NONE)) {
		for (unsigned i = 0; i < n; i++)
			mark_free(p, objs[i]);
		to_ring(p, objs, n);
		__atomic_fetch_add(&c->free, n, __ATOMIC_RELAXED);
		return;
	}
	for (unsigned i = 0; i < n; i++)
		put_one(p, tid, c, objs[i]);
	STAT_ADD(c->free, n);
}

void rxp_pool_put_shared(struct rxp_pool *p, void *obj)
{
	unsigned tid = rxp_thread_id();

	mark_free(p, obj);
	to_ring(p, &obj, 1);
	if (tid == TID_NONE)
		__atomic_fetch_add(&p->caches[tid].free, 1, __ATOMIC_RELAXED);
	else
		STAT_ADD(p->caches[tid].free, 1);
}

unsigned rxp_pool_drain_deferred(struct rxp_pool *p)
{
	unsigned tid = rxp_thread_id();
	struct defer_list *d;
	struct tcache *c;
	struct obj_hdr *h;
	void *spill[64];
	unsigned n = 0, ns = 0;

	if (tid == TID_NONE)
		return 0;
	d = &p->defer[tid];
	c = &p->caches[tid];
	if (!atomic_load_explicit(&d->head, memory_order_relaxed))
		return 0;
	h = atomic_exchange_explicit(&d->head, NULL, memory_order_acquire);
	while (h) {
		struct obj_hdr *next = h->next;

		if (c->len < p->cache_size) {
			c->objs[c->len++] = obj_of(h);
		} else {
			spill[ns++] = obj_of(h);
			if (ns == RXP_ARRAY_SIZE(spill)) {
				to_ring(p, spill, ns);
				ns = 0;
			}
		}
		n++;
		h = next;
	}
	if (ns)
		to_ring(p, spill, ns);
	atomic_fetch_sub_explicit(&d->count, n, memory_order_relaxed);
	STAT_ADD(c->drained, n);
	return n;
}

void rxp_pool_flush_cache(struct rxp_pool *p)
{
	unsigned tid = rxp_thread_id();
	struct tcache *c = &p->caches[tid];

	if (tid == TID_NONE || !p->cache_size)
		return;
	rxp_pool_drain_deferred(p);
	if (c->len)
		to_ring(p, c->objs, c->len);
	c->len = 0;
}

/* ---- accounting ------------------------------------------------------------ */

void rxp_pool_get_stats(const struct rxp_pool *p, struct rxp_pool_stats *st)
{
	memset(st, 0, sizeof(*st));
	for (unsigned t = 0; t <= RXP_MAX_THREADS; t++) {
		const struct tcache *c = &p->caches[t];

		st->alloc += STAT_READ(c->alloc);
		st->free += STAT_READ(c->free);
		st->alloc_fail += STAT_READ(c->fail);
		st->deferred += STAT_READ(c->deferred);
		st->defer_overflow += STAT_READ(c->overflow);
		st->drained += STAT_READ(c->drained);
	}
	st->outstanding = st->alloc - st->free;
	st->n = p->n;
}

uint64_t rxp_pool_outstanding(const struct rxp_pool *p)
{
	struct rxp_pool_stats st;

	rxp_pool_get_stats(p, &st);
	return st.outstanding;
}

const char *rxp_pool_name(const struct rxp_pool *p)
{
	return p->name;
}

size_t rxp_pool_obj_size(const struct rxp_pool *p)
{
	return p->obj_size;
}

bool rxp_pool_contains(const struct rxp_pool *p, const void *obj)
{
	const uint8_t *o = obj;

	return o >= p->mem && o < p->mem + (size_t)p->n * p->stride &&
	       (size_t)(o - p->mem) % p->stride == sizeof(struct obj_hdr);
}
