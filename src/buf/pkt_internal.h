/* Private to src/buf: the packet pool's layout, shared by pkt.c and pktpool.c. */
#ifndef RXP_BUF_PKT_INTERNAL_H
#define RXP_BUF_PKT_INTERNAL_H

#include "rxpath/compiler.h"
#include "rxpath/pkt.h"
#include "rxpath/pktpool.h"
#include "rxpath/pool.h"
#include "rxpath/thread.h"

struct pktpool_tstats {
	uint64_t drops[RXP_DROP_MAX];
	uint64_t consumed;
	/* Packets with their metadata in their slot that were freed, and
	 * small buffers taken without a packet in them (expand_head's):
	 * the small pool's gets less the second are the packets made, so
	 * that making one counts nothing here. */
	uint64_t embed_free, plain_small;
} __rxp_cache_aligned;

/* What a head buffer's header is made from when its pool carves it (which
 * happens after the pool exists, so the pool pointer can be in it). */
struct pktpool_buf_init {
	struct rxp_pool *pool;
	uint32_t size;
	uint32_t meta; /* bytes kept for an embedded rxp_pkt before addr */
};

struct rxp_pktpool {
	struct rxp_pool *meta; /* struct rxp_pkt */
	struct rxp_pool *bufs; /* small head buffers */
	struct rxp_pool *large; /* large head buffers */
	uint32_t headroom, buf_size, large_size;
	struct pktpool_buf_init buf_init, large_init;
	char name[24];
	rxp_pkt_drop_hook_fn drop_hook; /* rxp_pktpool_set_drop_hook */
	void *drop_hook_arg;
	/* [RXP_MAX_THREADS] is shared by threads past the limit: atomics. */
	struct pktpool_tstats stats[RXP_MAX_THREADS + 1];
};

/* Each thread bumps only its own counters (stats[tid]), so a relaxed
 * load-add-store is enough, except in the shared overflow slot. */
static inline void pktpool_stat_add(unsigned tid, uint64_t *c, uint64_t n)
{
	if (rxp_likely(tid < RXP_MAX_THREADS))
		__atomic_store_n(c, *c + n, __ATOMIC_RELAXED);
	else
		__atomic_fetch_add(c, n, __ATOMIC_RELAXED);
}

/* A head buffer's header, before its bytes (pg->addr), in its pool slot. */
#define PKTPOOL_BUF_HDR ((uint32_t)RXP_ALIGN_UP(sizeof(struct rxp_page), (size_t)RXP_CACHELINE))

/* A small head buffer's slot is [rxp_page | rxp_pkt | bytes] unless the
 * pool was made with RXP_PKT_META_APART set (pp->buf_init.meta == 0). */
#define PKTPOOL_META_SZ ((uint32_t)RXP_ALIGN_UP(sizeof(struct rxp_pkt), (size_t)RXP_CACHELINE))

/* An embedded packet's slot, as a page: its head buffer when it was made. */
_Static_assert(RXP_PKT_HOME_OFF == PKTPOOL_BUF_HDR, "rxpath/pkt.h says where the home page is");
static inline struct rxp_page *pkt_home(const struct rxp_pkt *pkt)
{
	return (struct rxp_page *)(void *)((uint8_t *)(uintptr_t)pkt - PKTPOOL_BUF_HDR);
}

/* A head buffer's release function: back to its pool (pg->owner). */
void pktpool_buf_release(struct rxp_page *pg);

/* Drop n references held by the caller (tid: this thread's id); as
 * rxp_page_put, a sole owner (all references are ours) skips the atomic
 * read-modify-write. A packet pool's head buffer whose last reference
 * goes is put back to its pool inline, not through its release pointer
 * (every fragment's buffer in a reassembled datagram: 5-6 fewer
 * instructions per fragment in the reassembly handover, callgrind). */
static inline void pkt_page_put_many_tid(struct rxp_page *pg, uint32_t n, unsigned tid)
{
	if (__atomic_load_n(&pg->refcnt, __ATOMIC_ACQUIRE) == n ||
	    __atomic_fetch_sub(&pg->refcnt, n, __ATOMIC_ACQ_REL) == n) {
		__atomic_store_n(&pg->refcnt, 0, __ATOMIC_RELAXED);
		if (rxp_likely(pg->release == pktpool_buf_release))
			rxp_pool_put_tid_(pg->owner, pg, tid);
		else
			pg->release(pg);
	}
}

static inline void pkt_page_put_many(struct rxp_page *pg, uint32_t n)
{
	pkt_page_put_many_tid(pg, n, rxp_thread_id());
}

/* The metadata of a packet whose data references all went to another
 * packet (coalescing): to the metadata pool, or, for an embedded packet,
 * nowhere (its slot lives on with the stolen head) but its own reference
 * on the slot when it holds one. Reads nothing of pkt after that. */
static inline void pkt_shell_free(struct rxp_pkt *pkt, unsigned tid)
{
	if (rxp_likely(!(pkt->flags & RXP_PKT_F_EMBED))) {
		rxp_pool_put_tid_(pkt->pool->meta, pkt, tid);
		return;
	}
	pktpool_stat_add(tid, &pkt->pool->stats[tid].embed_free, 1);
	if (pkt->flags & RXP_PKT_F_HOMEREF)
		pkt_page_put_many_tid(pkt_home(pkt), 1, tid);
}

/* What p, whose data another packet takes, adds to that packet's
 * truesize: all of it when the reference taken is p's head and the head
 * is p's home (its metadata stays in the slot that reference holds), its
 * metadata's share less otherwise. */
static inline uint32_t pkt_stolen_truesize(const struct rxp_pkt *p, bool head_taken)
{
	bool pinned =
		head_taken && (p->flags & (RXP_PKT_F_EMBED | RXP_PKT_F_HOMEREF)) == RXP_PKT_F_EMBED;

	return p->truesize - (pinned ? 0 : RXP_PKT_META_TRUESIZE);
}

/* A head buffer with at least need bytes, refcount 1; NULL if none. */
struct rxp_page *pktpool_buf_get(struct rxp_pktpool *pp, uint32_t need, const char *file, int line);
uint32_t pktpool_buf_truesize(const struct rxp_page *pg);

#endif
