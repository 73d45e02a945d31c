/*
 * A bounded lock-free MPMC ring of pointers (the shared store behind a pool's
 * per-thread caches), in the style of rte_ring: producers and consumers each
 * claim a range by one CAS on their head, fill or read it, then publish by
 * moving their tail in order. Bulk operations are all-or-nothing; burst
 * operations take what there is. Private to src/buf.
 */
#ifndef RXP_BUF_MPMC_H
#define RXP_BUF_MPMC_H

#include <sched.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rxpath/compiler.h"

struct rxp_mpmc {
	uint32_t mask;
	uint32_t capacity;
	/* Heads are written by their own side only; tails are what the other
	 * side reads. Apart, so polling a tail does not steal the head's line. */
	_Alignas(64) _Atomic uint32_t prod_head;
	_Alignas(64) _Atomic uint32_t prod_tail;
	_Alignas(64) _Atomic uint32_t cons_head;
	_Alignas(64) _Atomic uint32_t cons_tail;
	_Alignas(64) void *slots[];
};

/* Wait for the operations before ours on this side to publish. Acquire: our
 * own publish (a release store) then carries theirs too, so the other side,
 * acquiring our tail, is ordered after their slot accesses as well as ours
 * (with a relaxed wait it was ordered after ours alone: a data race in the
 * C11 model, found by TSan with four threads dequeuing at once). */
static inline void rxp_mpmc_wait_tail(_Atomic uint32_t *tail, uint32_t expect)
{
	unsigned spins = 0;

	while (atomic_load_explicit(tail, memory_order_acquire) != expect) {
		if (++spins & 63)
			__builtin_ia32_pause();
		else
			sched_yield(); /* the thread we wait for may be preempted */
	}
}

/* An empty ring for at least capacity pointers (capacity exactly; slots a
 * power of two). NULL when out of memory. Free with free(). */
static inline struct rxp_mpmc *rxp_mpmc_create(uint32_t capacity)
{
	uint32_t size = 1;
	struct rxp_mpmc *r;

	while (size < capacity)
		size <<= 1;
	r = aligned_alloc(RXP_CACHELINE, RXP_ALIGN_UP(sizeof(*r) + (size_t)size * sizeof(void *),
						      (size_t)RXP_CACHELINE));
	if (r) {
		memset(r, 0, sizeof(*r));
		r->mask = size - 1;
		r->capacity = capacity;
	}
	return r;
}

/* Copy n pointers out of, or into, the slots from position head on: in at
 * most two runs (the second from slot 0 when the range wraps), by memcpy once
 * there are a few. With a loop of one load or store per pointer, the cost of
 * a 128-pointer batch was set by how many of its cache misses fit in the
 * out-of-order window, which the other thread on a distant core makes
 * expensive (bench/results/README.md, "pool"). */
#define RXP_MPMC_COPY_RUN 8 /* below this many, a loop beats a call */
static inline void rxp_mpmc_copy_out(const struct rxp_mpmc *r, void **objs, uint32_t head,
				     uint32_t n)
{
	uint32_t idx = head & r->mask, first = r->mask + 1 - idx;

	if (n < RXP_MPMC_COPY_RUN) {
		for (uint32_t i = 0; i < n; i++)
			objs[i] = r->slots[(head + i) & r->mask];
		return;
	}
	if (first > n)
		first = n;
	memcpy(objs, &r->slots[idx], first * sizeof(void *));
	if (n > first)
		memcpy(objs + first, &r->slots[0], (n - first) * sizeof(void *));
}

static inline void rxp_mpmc_copy_in(struct rxp_mpmc *r, void *const *objs, uint32_t head,
				    uint32_t n)
{
	uint32_t idx = head & r->mask, first = r->mask + 1 - idx;

	if (n < RXP_MPMC_COPY_RUN) {
		for (uint32_t i = 0; i < n; i++)
			r->slots[(head + i) & r->mask] = objs[i];
		return;
	}
	if (first > n)
		first = n;
	memcpy(&r->slots[idx], objs, first * sizeof(void *));
	if (n > first)
		memcpy(&r->slots[0], objs + first, (n - first) * sizeof(void *));
}

/* Enqueue n pointers; all or nothing when bulk, else as many as fit.
 * Returns how many were enqueued. */
static inline uint32_t rxp_mpmc_enqueue(struct rxp_mpmc *r, void *const *objs, uint32_t n,
					bool bulk)
{
	uint32_t head, next, room;

	head = atomic_load_explicit(&r->prod_head, memory_order_relaxed);
	do {
		uint32_t ctail = atomic_load_explicit(&r->cons_tail, memory_order_acquire);

		room = r->capacity + ctail - head;
		if (n > room) {
			if (bulk || room == 0)
				return 0;
			n = room;
		}
		next = head + n;
	} while (!atomic_compare_exchange_weak_explicit(
		&r->prod_head, &head, next, memory_order_relaxed, memory_order_relaxed));
	rxp_mpmc_copy_in(r, objs, head, n);
	rxp_mpmc_wait_tail(&r->prod_tail, head);
	atomic_store_explicit(&r->prod_tail, next, memory_order_release);
	return n;
}

static inline uint32_t rxp_mpmc_dequeue(struct rxp_mpmc *r, void **objs, uint32_t n, bool bulk)
{
	uint32_t head, next, avail;

	head = atomic_load_explicit(&r->cons_head, memory_order_relaxed);
	do {
		uint32_t ptail = atomic_load_explicit(&r->prod_tail, memory_order_acquire);

		avail = ptail - head;
		if (n > avail) {
			if (bulk || avail == 0)
				return 0;
			n = avail;
		}
		next = head + n;
	} while (!atomic_compare_exchange_weak_explicit(
		&r->cons_head, &head, next, memory_order_relaxed, memory_order_relaxed));
	rxp_mpmc_copy_out(r, objs, head, n);
	rxp_mpmc_wait_tail(&r->cons_tail, head);
	atomic_store_explicit(&r->cons_tail, next, memory_order_release);
	return n;
}

/* Dequeue for a ring with a single consumer (an owner's deferred ring):
 * no CAS, as many as there are up to n. */
static inline uint32_t rxp_mpmc_dequeue_sc(struct rxp_mpmc *r, void **objs, uint32_t n)
{
	uint32_t head = atomic_load_explicit(&r->cons_head, memory_order_relaxed);
	uint32_t avail = atomic_load_explicit(&r->prod_tail, memory_order_acquire) - head;

	if (n > avail)
		n = avail;
	rxp_mpmc_copy_out(r, objs, head, n);
	atomic_store_explicit(&r->cons_head, head + n, memory_order_relaxed);
	atomic_store_explicit(&r->cons_tail, head + n, memory_order_release);
	return n;
}

static inline uint32_t rxp_mpmc_count(struct rxp_mpmc *r)
{
	return atomic_load_explicit(&r->prod_tail, memory_order_acquire) -
	       atomic_load_explicit(&r->cons_tail, memory_order_acquire);
}

#endif
