/*
 * Fixed-size object pools with per-thread caches and deferred remote free.
 *
 * Layout: one aligned allocation of n slots, each an odd number of cache
 * lines (see rxp_pool_create); each slot is a 64-byte header (in RXP_DEBUG
 * builds also the object's state and allocation site; always its owner)
 * followed by the object, so every object starts on a cache line (a
 * packet's first 64 bytes, what its hot path reads, are one line, and one
 * prefetch of the pointer covers them; with a 32-byte header they straddled
 * two lines, which cost reassembly 10-20% at 4-8 fragments per datagram).
 * A free object is in exactly one place: a thread's cache, its owner's
 * stash, the shared MPMC ring, an owner's deferred ring, or a freeing
 * thread's staging batch for that owner. Invariants:
 *   - only thread t touches caches[t] (no locks); stash[t] holds only
 *     objects owned by t, and others take its lock only to empty it into
 *     the ring when the ring is empty;
 *   - defer[t] holds only objects allocated by t, already released by their
 *     user; other threads add batches, only t takes them out;
 *   - the fast paths write nothing into the object, and single frees
 *     read nothing of it: its owner is a byte in the pool's owner table
 *     (pool.h), so a remote free reads a small table that stays in the
 *     freeing thread's cache, not a line per object (DPDK's mempool never
 *     touches objects either); bulk frees read the copy in the header.
 *     Both are rewritten only when the object changes threads. With the
 *     owner read from each object's header, a free on another thread
 *     cost 25-26.5 cycles with the two vCPUs far apart, against 18.5-20
 *     with no read at all (DPDK: 16-19);
 *   - alloc - free summed over threads is the outstanding count; a leak
 *     report finds the outstanding objects as those in none of the places
 *     above (so it needs no per-object state in release builds);
 *   - objects are carved lazily: slots [carved, n) have never been handed
 *     out and their memory has never been written, so a pool sized for the
 *     worst case (rxpath defrag sizes its pool from a memory cap of a
 *     quarter of RAM) costs memory only for what was ever in use at once.
 *     A slot is carved (header and obj_init written) when the shared ring
 *     is empty, in batches, into the ring, before other threads' stashes
 *     are spilled.
 */
#include <errno.h>
#include <stddef.h>
#include <pthread.h>
#include <sched.h>
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
#define STAGE RXP_POOL_STAGE_ /* remote frees handed over per batch */
#define NSTAGE 4 /* owners a thread batches for at once */

struct obj_hdr {
	uint16_t owner; /* the thread that owns it; also in the pool's owner table */
	uint16_t state; /* RXP_DEBUG only */
	uint32_t line; /* RXP_DEBUG only */
	const char *file;
	uint64_t pad[6];
};
_Static_assert(sizeof(struct obj_hdr) == 64, "object header keeps objects line-aligned");
_Static_assert(sizeof(struct obj_hdr) == RXP_POOL_OWNER_AT_ && offsetof(struct obj_hdr, owner) == 0,
	       "rxp_pool_owner_hdr_() reads the owner where it is");

#define stage rxp_pool_stage_ /* pool.h has the layout: the inline put stages */

struct tcache {
	/* The head is struct rxp_pool_cache_ (pool.h): the inline fast paths
	 * read and write these six. */
	uint32_t len;
	uint32_t cap; /* 0 for the shared TID_NONE slot and uncached pools */
	void **objs;
	uint64_t alloc, free; /* counted by the thread itself, read (relaxed) by anyone */
	struct stage *hot; /* the slot used last while it is in use, else NULL */
	struct stage *stage; /* [NSTAGE]: remote frees batched by owner */
	uint32_t staged; /* bit per stage slot in use */
	uint64_t fail, deferred, overflow, drained;
} __rxp_cache_aligned;
_Static_assert(offsetof(struct tcache, len) == offsetof(struct rxp_pool_cache_, len) &&
		       offsetof(struct tcache, cap) == offsetof(struct rxp_pool_cache_, cap) &&
		       offsetof(struct tcache, objs) == offsetof(struct rxp_pool_cache_, objs) &&
		       offsetof(struct tcache, alloc) == offsetof(struct rxp_pool_cache_, alloc) &&
		       offsetof(struct tcache, free) == offsetof(struct rxp_pool_cache_, free) &&
		       offsetof(struct tcache, hot) == offsetof(struct rxp_pool_cache_, hot),
	       "the inline fast paths see the head of struct tcache");

struct rxp_pool {
	struct rxp_pool_head_ head; /* first: the inline fast paths find the caches here */
	char name[32];
	size_t obj_size;
	size_t stride;
	unsigned n;
	unsigned cache_size; /* 0: no caches */
	unsigned batch; /* refill/flush unit: half the cache */
	unsigned defer_max;
	unsigned stage_lim; /* a stage is handed over at this many: min(STAGE, defer_max) */
	uint8_t *mem;
	_Atomic uint32_t carved; /* slots [0, carved) have been made */
	void (*obj_init)(void *obj, unsigned idx, void *arg);
	void *obj_init_arg;
	void **cache_mem;
	struct stage *stage_mem;
	struct tcache caches[RXP_MAX_THREADS + 1]; /* [TID_NONE] counts only, atomically */
	struct rxp_mpmc *defer[RXP_MAX_THREADS];
	struct rxp_mpmc *ring;
	/* Address-ordered stashes (see "stash" below): per thread, a bitmap
	 * over the pool's objects. */
	struct stash *stash;
	unsigned nwords; /* 64-bit words per bitmap */
	unsigned nsum; /* words of its summary */
};

struct stash {
	_Atomic int lock;
	uint32_t count; /* objects in it */
	uint32_t lo; /* no set bit in sum below word lo */
	uint64_t *bits; /* a bit per object, made on the first put */
	uint64_t *sum; /* a bit per word of bits, set while that word is not 0 */
	uint64_t pad[4]; /* one line each: threads take their own locks */
};
_Static_assert(sizeof(struct stash) == 64, "a stash per cache line");

#define STAT_READ(field) __atomic_load_n(&(field), __ATOMIC_RELAXED)

/* ---- thread ids ---------------------------------------------------------- */

static _Atomic uint64_t tid_bitmap;
static pthread_key_t tid_key;
static pthread_once_t tid_once = PTHREAD_ONCE_INIT;
__thread int rxp_tid_ __attribute__((tls_model("initial-exec"))) = -1;

static void tid_release(void *v)
{
	unsigned tid = (unsigned)(uintptr_t)v - 1;

	atomic_fetch_and(&tid_bitmap, ~(1ull << tid));
}

static void tid_key_init(void)
{
	pthread_key_create(&tid_key, tid_release);
}

__attribute__((noinline, cold)) unsigned rxp_thread_id_assign(void)
{
	uint64_t used = atomic_load(&tid_bitmap);

	pthread_once(&tid_once, tid_key_init);
	for (;;) {
		if (used == ~0ull) {
			rxp_tid_ = TID_NONE;
			return TID_NONE;
		}
		unsigned tid = (unsigned)__builtin_ctzll(~used);

		if (atomic_compare_exchange_weak(&tid_bitmap, &used, used | (1ull << tid))) {
			rxp_tid_ = (int)tid;
			pthread_setspecific(tid_key, (void *)(uintptr_t)(tid + 1));
			return tid;
		}
	}
}

static inline unsigned tid_fast(void)
{
	return rxp_thread_id();
}

/* ---- creation ------------------------------------------------------------ */

static inline struct obj_hdr *hdr_of(void *obj)
{
	return (struct obj_hdr *)obj - 1;
}

static void pool_free_mem(struct rxp_pool *p)
{
	for (unsigned t = 0; t < RXP_MAX_THREADS; t++)
		free(p->defer[t]);
	free(p->ring);
	free(p->mem);
	free(p->cache_mem);
	free(p->stage_mem);
	for (unsigned t = 0; p->stash && t < RXP_MAX_THREADS; t++)
		free(p->stash[t].bits); /* sum lives in the same allocation */
	free(p->stash);
	free(p->head.owners);
	free(p);
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
	p->stride = RXP_ALIGN_UP(sizeof(struct obj_hdr) + cfg->obj_size, (size_t)RXP_CACHELINE);
	/* An odd number of lines per slot, as DPDK's mempool pads its objects
	 * unless told not to: with an even number, objects taken in address
	 * order and used a fixed count apart (fragment r of datagram d sits
	 * r x in-flight slots from fragment 0) land a multiple of 4 KiB apart,
	 * in one L1 set. 45-fragment reassembly went from about 220 to 145 ns
	 * per fragment, 2-8 fragments 2-5% faster. */
	if (!((p->stride / RXP_CACHELINE) & 1))
		p->stride += RXP_CACHELINE;
	p->n = cfg->n;
	if (cfg->cache_size == RXP_POOL_NO_CACHE)
		p->cache_size = 0;
	else
		p->cache_size = cfg->cache_size ? cfg->cache_size : RXP_POOL_CACHE_DEFAULT;
	p->batch = p->cache_size > 1 ? p->cache_size / 2 : p->cache_size;
	p->defer_max = cfg->defer_max ? cfg->defer_max : RXP_POOL_DEFER_MAX_DEFAULT;
	p->stage_lim = p->defer_max < STAGE ? p->defer_max : STAGE;

	p->ring = rxp_mpmc_create(cfg->n);
	p->mem = aligned_alloc(RXP_CACHELINE, p->stride * cfg->n);
	p->head.owners = malloc(cfg->n);
	ok = p->ring && p->mem && p->head.owners;
	if (ok) {
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
	if (ok && p->cache_size) {
		/* Untouched parts of these stay unbacked: only threads that use
		 * the pool, and owners they free to, cost memory. */
		p->cache_mem = calloc((size_t)RXP_MAX_THREADS * p->cache_size, sizeof(void *));
		p->stage_mem = calloc((size_t)RXP_MAX_THREADS * NSTAGE, sizeof(struct stage));
		p->nwords = (cfg->n + 63) / 64;
		p->nsum = (p->nwords + 63) / 64;
		p->stash = calloc(RXP_MAX_THREADS, sizeof(struct stash));
		ok = p->cache_mem && p->stage_mem && p->stash;
		for (unsigned t = 0; ok && t < RXP_MAX_THREADS; t++) {
			p->defer[t] = rxp_mpmc_create(p->defer_max);
			ok = p->defer[t] != NULL;
			p->caches[t].objs = p->cache_mem + (size_t)t * p->cache_size;
			p->caches[t].stage = p->stage_mem + (size_t)t * NSTAGE;
			p->caches[t].cap = p->cache_size;
			/* the inline put stages while n < lim, then the call
			 * hands the batch over */
			for (unsigned k = 0; k < NSTAGE; k++) {
				p->caches[t].stage[k].lim = p->stage_lim - 1;
				p->caches[t].stage[k].pf_at = p->stage_lim * 3 / 4;
			}
		}
	}
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

static void to_ring(struct rxp_pool *p, void *const *objs, uint32_t n);

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

/* ---- leak accounting ------------------------------------------------------ */

static unsigned obj_index(const struct rxp_pool *p, const void *obj)
{
	return rxp_pool_index_(&p->head, obj);
}

static void mark_ring(const struct rxp_pool *p, const struct rxp_mpmc *r, uint8_t *isfree)
{
	uint32_t t = atomic_load(&r->cons_tail), h = atomic_load(&r->prod_tail);

	for (; t != h; t++)
		isfree[obj_index(p, r->slots[t & r->mask])] = 1;
}

/* Which objects are free: in the ring, a cache, a deferred ring or a stage.
 * Only meaningful while no thread uses the pool. */
static uint8_t *free_map(const struct rxp_pool *p)
{
	uint8_t *isfree = calloc(p->n, 1);

	/* Slots never carved are free; marked so that the loops over the
	 * pool need not know about carving. */
	if (isfree)
		memset(isfree + rxp_pool_carved(p), 1, p->n - rxp_pool_carved(p));

	if (!isfree)
		return NULL;
	mark_ring(p, p->ring, isfree);
	for (unsigned t = 0; t < RXP_MAX_THREADS && p->cache_size; t++) {
		const struct tcache *c = &p->caches[t];

		for (uint32_t i = 0; i < c->len; i++)
			isfree[obj_index(p, c->objs[i])] = 1;
		for (unsigned o = 0; o < NSTAGE; o++)
			for (uint32_t i = 0; i < c->stage[o].n; i++)
				isfree[obj_index(p, c->stage[o].objs[i])] = 1;
		mark_ring(p, p->defer[t], isfree);
		for (uint32_t w = 0; p->stash[t].bits && w < p->nwords; w++)
			for (uint64_t b = p->stash[t].bits[w]; b; b &= b - 1)
				isfree[w * 64 + (uint32_t)__builtin_ctzll(b)] = 1;
	}
	return isfree;
}

size_t rxp_pool_leak_report(const struct rxp_pool *p, FILE *out)
{
	uint8_t *isfree = free_map(p);
	size_t used = 0;

	if (!isfree)
		return (size_t)rxp_pool_outstanding(p);
	for (unsigned i = 0; i < rxp_pool_carved(p); i++) {
		const struct obj_hdr *h = (const void *)(p->mem + (size_t)i * p->stride);

		if (isfree[i])
			continue;
		used++;
		if (!out)
			continue;
		if (h->file)
			fprintf(out,
				"pool %s: object %u (%p) outstanding, allocated at %s:%u by thread "
				"%u\n",
				p->name, i, (const void *)(h + 1), h->file, h->line,
				p->head.owners[i]);
		else
			fprintf(out,
				"pool %s: object %u (%p) outstanding, allocated by thread %u "
				"(build with RXP_DEBUG for the site)\n",
				p->name, i, (const void *)(h + 1), p->head.owners[i]);
	}
	free(isfree);
	return used;
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
 * size, which the compiler inlines (a libc call costs more than the copy). */
static inline void copy_objs(void **dst, void *const *src, unsigned n)
{
	if (n == 32)
		memcpy(dst, src, 32 * sizeof(void *));
	else if (n == 64)
		memcpy(dst, src, 64 * sizeof(void *));
	else
		memcpy(dst, src, n * sizeof(void *));
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

/* ---- stash ----------------------------------------------------------------
 *
 * Where a thread's cache overflows to: its own objects, kept as a bitmap over
 * the pool and handed back lowest address first. A workload that holds
 * objects a while and frees them in another order than it took them
 * (reassembly queues, retransmit lists) scrambles a FIFO store: after a few
 * rounds every refill is a batch of objects from all over the pool, and a
 * burst of packets touches as many pages and cache lines as it has objects.
 * From the stash a refill gets the lowest-addressed free objects in address
 * order, so the objects in use stay packed at the bottom of the pool and a
 * burst reads memory in order (what slab allocators get from per-page free
 * lists, and DPDK's bucket mempool from per-bucket stacks).
 *
 * The owner alone puts and takes, under the stash's lock, which another
 * thread takes only when the shared ring has run dry: then every stash is
 * emptied into the ring, so objects in stashes are never lost to others.
 */

static inline void *stash_obj(const struct rxp_pool *p, uint32_t idx)
{
	return p->mem + (size_t)idx * p->stride + sizeof(struct obj_hdr);
}

static inline void stash_lock(struct stash *st)
{
	unsigned spins = 0;

	while (atomic_exchange_explicit(&st->lock, 1, memory_order_acquire))
		while (atomic_load_explicit(&st->lock, memory_order_relaxed)) {
			if (++spins & 63)
				__builtin_ia32_pause();
			else
				sched_yield(); /* the holder may be preempted, as in ring.h */
		}
}

static inline void stash_unlock(struct stash *st)
{
	atomic_store_explicit(&st->lock, 0, memory_order_release);
}

/* Thread tid's own objects into its stash; false (nothing done) if the
 * bitmap cannot be made. */
static bool stash_put(struct rxp_pool *p, unsigned tid, void *const *objs, uint32_t n)
{
	struct stash *st = &p->stash[tid];
	uint32_t lo;

	if (rxp_unlikely(!st->bits)) {
		uint64_t *b = calloc((size_t)p->nwords + p->nsum, sizeof(uint64_t));

		if (!b)
			return false;
		stash_lock(st);
		st->bits = b;
		st->sum = b + p->nwords;
		st->lo = p->nsum;
		stash_unlock(st);
	}
	stash_lock(st);
	lo = st->lo;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t idx = obj_index(p, objs[i]), w = idx >> 6;

		if (!st->bits[w]) {
			st->sum[w >> 6] |= 1ull << (w & 63);
			lo = w >> 6 < lo ? w >> 6 : lo;
		}
		st->bits[w] |= 1ull << (idx & 63);
	}
	st->lo = lo;
	__atomic_store_n(&st->count, st->count + n, __ATOMIC_RELAXED); /* read unlocked */
	stash_unlock(st);
	return true;
}

/* Up to want objects from stash st, lowest address first, written so that
 * popping from the end of dst gives them in that order. The summary finds
 * the next word with objects in it, so however sparse the stash a take
 * reads at most one summary word per 4096 objects of the pool. */
static uint32_t stash_take(struct rxp_pool *p, struct stash *st, void **dst, uint32_t want)
{
	uint32_t got = 0, s;

	if (!__atomic_load_n(&st->count, __ATOMIC_RELAXED))
		return 0;
	stash_lock(st);
	if (want > st->count)
		want = st->count;
	for (s = st->lo; got < want && s < p->nsum; s++) {
		uint64_t sm = st->sum[s];

		while (sm && got < want) {
			uint32_t w = s * 64 + (uint32_t)__builtin_ctzll(sm);
			uint64_t b = st->bits[w];

			while (b && got < want) {
				dst[want - 1 - got++] =
					stash_obj(p, w * 64 + (uint32_t)__builtin_ctzll(b));
				b &= b - 1;
			}
			st->bits[w] = b;
			if (!b)
				sm &= sm - 1;
		}
		st->sum[s] = sm;
		if (sm)
			break;
	}
	st->lo = s;
	__atomic_store_n(&st->count, st->count - got, __ATOMIC_RELAXED);
	stash_unlock(st);
	if (rxp_unlikely(got < want)) /* cannot happen while count is right */
		memmove(dst, dst + (want - got), got * sizeof(void *));
	return got;
}

/* All of stash st into the shared ring; returns the objects moved. */
static uint32_t stash_to_ring(struct rxp_pool *p, struct stash *st)
{
	void *tmp[256];
	uint32_t moved = 0, got;

	while ((got = stash_take(p, st, tmp, RXP_ARRAY_SIZE(tmp)))) {
		to_ring(p, tmp, got);
		moved += got;
	}
	return moved;
}

/* Every stash into the shared ring (the ring ran dry); returns the objects
 * moved. */
static uint32_t stash_spill_all(struct rxp_pool *p)
{
	uint32_t moved = 0;

	for (unsigned t = 0; p->stash && t < RXP_MAX_THREADS; t++)
		moved += stash_to_ring(p, &p->stash[t]);
	return moved;
}

/* Refill: up to want objects into dst (popped from its end), from this
 * thread's stash, else the shared ring, else the ring after every stash
 * was spilled into it. */
static uint32_t refill(struct rxp_pool *p, unsigned tid, void **dst, uint32_t want)
{
	uint32_t got = stash_take(p, &p->stash[tid], dst, want);

	if (got)
		return got; /* our own: no adopt */
	got = rxp_mpmc_dequeue(p->ring, dst, want, false);
	if (!got && (carve_to_ring(p, want) || stash_spill_all(p)))
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
		    ((!carve_to_ring(p, 1) && !stash_spill_all(p)) ||
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
	unsigned tid = tid_fast();
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
	unsigned tid = tid_fast();
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
		memcpy(objs, c->objs + c->len, n * sizeof(void *));
	} else {
		bool got = rxp_mpmc_dequeue(p->ring, objs, n, true);

		while (!got && carve_to_ring(p, n)) /* n may be more than one carving */
			got = rxp_mpmc_dequeue(p->ring, objs, n, true);
		if (!got) {
			rxp_pool_flush_cache(p);
			stash_spill_all(p);
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

static void to_ring(struct rxp_pool *p, void *const *objs, uint32_t n)
{
	/* Cannot fail: the ring holds every object of the pool. */
	rxp_mpmc_enqueue(p->ring, objs, n, true);
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
		if (!stash_put(p, tid, c->objs, p->batch))
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
	unsigned tid = tid_fast();
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
	unsigned tid = tid_fast();
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
	unsigned tid = tid_fast();

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
		if (!stash_put(p, tid, spill, got))
			to_ring(p, spill, got);
		n += got;
	}
	c->drained += n;
	return n;
}

unsigned rxp_pool_drain_deferred(struct rxp_pool *p)
{
	unsigned tid = tid_fast();

	if (tid == TID_NONE || !p->cache_size)
		return 0;
	return drain(p, tid, &p->caches[tid]);
}

void rxp_pool_flush_cache(struct rxp_pool *p)
{
	unsigned tid = tid_fast();
	struct tcache *c = &p->caches[tid];

	if (tid == TID_NONE || !p->cache_size)
		return;
	drain(p, tid, c);
	if (c->len)
		to_ring(p, c->objs, c->len);
	c->len = 0;
	stash_to_ring(p, &p->stash[tid]);
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
