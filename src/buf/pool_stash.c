/*
 * The stash (src/buf/pool_internal.h): where a thread's cache overflows to: its own objects, kept as a bitmap over
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
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "buf/pool_internal.h"

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
bool pool_stash_put(struct rxp_pool *p, unsigned tid, void *const *objs, uint32_t n)
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
uint32_t pool_stash_take(struct rxp_pool *p, struct stash *st, void **dst, uint32_t want)
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
uint32_t pool_stash_to_ring(struct rxp_pool *p, struct stash *st)
{
	void *tmp[256];
	uint32_t moved = 0, got;

	while ((got = pool_stash_take(p, st, tmp, RXP_ARRAY_SIZE(tmp)))) {
		to_ring(p, tmp, got);
		moved += got;
	}
	return moved;
}

/* Every stash into the shared ring (the ring ran dry); returns the objects
 * moved. */
uint32_t pool_stash_spill_all(struct rxp_pool *p)
{
	uint32_t moved = 0;

	for (unsigned t = 0; p->stash && t < RXP_MAX_THREADS; t++)
		moved += pool_stash_to_ring(p, &p->stash[t]);
	return moved;
}
