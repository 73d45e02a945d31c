/*
 * Private to src/buf/pool*.c: the pool's layout and what its files share.
 *
 * Layout: one aligned allocation of n slots, each an odd number of cache
 * lines (see rxp_pool_create); each slot is a 64-byte header (in RXP_DEBUG
 * builds also the object's state and allocation site; always its owner)
 * followed by the object, so every object starts on a cache line (a
 * packet's first 64 bytes, what its hot path reads, are one line, and one
 * prefetch of the pointer covers them). A free object is in exactly one
 * place: a thread's cache, its owner's stash (pool_stash.c), the shared
 * MPMC ring, an owner's deferred ring, or a freeing thread's staging batch
 * for that owner.
 */
#ifndef RXP_BUF_POOL_INTERNAL_H
#define RXP_BUF_POOL_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rxpath/compiler.h"
#include "rxpath/pool.h"
#include "buf/mpmc.h"

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

#define stage rxp_pool_stage_ /* rxpath/internal/pool.h has the layout: the inline put stages */

struct tcache {
	/* The head is struct rxp_pool_cache_ (rxpath/internal/pool.h): the inline fast paths
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
	uint8_t *mem; /* rxp_mem_map: huge pages from 2 MiB up */
	size_t mem_len;
	_Atomic uint32_t carved; /* slots [0, carved) have been made */
	void (*obj_init)(void *obj, unsigned idx, void *arg);
	void *obj_init_arg;
	void **cache_mem;
	struct stage *stage_mem;
	struct tcache caches[RXP_MAX_THREADS + 1]; /* [TID_NONE] counts only, atomically */
	struct rxp_mpmc *defer[RXP_MAX_THREADS];
	struct rxp_mpmc *ring;
	/* Address-ordered stashes (pool_stash.c): per thread, a bitmap
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

static inline struct obj_hdr *hdr_of(void *obj)
{
	return (struct obj_hdr *)obj - 1;
}

static inline unsigned obj_index(const struct rxp_pool *p, const void *obj)
{
	return rxp_pool_index_(&p->head, obj);
}

static inline void to_ring(struct rxp_pool *p, void *const *objs, uint32_t n)
{
	/* Cannot fail: the ring holds every object of the pool. */
	rxp_mpmc_enqueue(p->ring, objs, n, true);
}

/* pool_stash.c: each thread's address-ordered store of its own objects. */
bool pool_stash_put(struct rxp_pool *p, unsigned tid, void *const *objs, uint32_t n);
uint32_t pool_stash_take(struct rxp_pool *p, struct stash *st, void **dst, uint32_t want);
uint32_t pool_stash_to_ring(struct rxp_pool *p, struct stash *st);
uint32_t pool_stash_spill_all(struct rxp_pool *p);

#endif
