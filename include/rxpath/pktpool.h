/*
 * rxp_pktpool: where packets come from. Three object pools (rxpath/pool.h)
 * behind one handle: packet metadata (struct rxp_pkt), small head buffers
 * and large head buffers, each with per-thread caches and deferred remote
 * free, and the per-thread drop counters every rxp_pkt_drop() adds to.
 * A small head buffer's slot has room for a struct rxp_pkt too, and a
 * packet rxp_pkt_alloc makes with one keeps its metadata there (one object
 * to get and put, as an mbuf): the metadata pool serves the others
 * (rxp_pkt_build, clones, large heads). RXP_PKT_META_APART set in the
 * environment when a pool is made gives it two-object packets throughout.
 * rxp_pkt_alloc() and the other constructors of rxpath/pkt.h take their
 * objects from here; a packet goes back to the pool it came from, on any
 * thread.
 */
#ifndef RXPATH_PKTPOOL_H
#define RXPATH_PKTPOOL_H

#include <stdint.h>
#include <stdio.h>

#include "rxpath/compiler.h"
#include "rxpath/drop.h"
#include "rxpath/pool.h"

RXP_BEGIN_DECLS

struct rxp_pkt;

struct rxp_pktpool;

struct rxp_pktpool_config {
	const char *name;
	unsigned n_pkts; /* metadata objects, for packets without a small head
			  * buffer of their own (default 4096) */
	unsigned n_bufs; /* small head buffers (default n_pkts) */
	unsigned buf_size; /* bytes per small head buffer (default 2048) */
	unsigned n_large; /* large head buffers (default 16) */
	unsigned large_size; /* bytes per large buffer (default 65536 + 2*headroom) */
	unsigned headroom; /* reserved by rxp_pkt_alloc (default 128) */
	unsigned cache_size; /* per-thread cache of each pool (0: default 256) */
	unsigned defer_max; /* deferred-list cap (0: default 128) */
};

struct rxp_pktpool_stats {
	struct rxp_pool_stats pkts, bufs, large;
	uint64_t drops[RXP_DROP_MAX]; /* by reason, all threads */
	uint64_t consumed; /* rxp_pkt_consume() calls */
	/* packets made with their metadata in a small head buffer's slot, and
	 * freed: not in pkts, whose outstanding excludes them */
	uint64_t embedded_alloc, embedded_free;
};

struct rxp_pktpool *rxp_pktpool_create(const struct rxp_pktpool_config *cfg);
/* Returns packets + buffers still outstanding (0 means nothing leaked). */
size_t rxp_pktpool_destroy(struct rxp_pktpool *pp);
void rxp_pktpool_get_stats(const struct rxp_pktpool *pp, struct rxp_pktpool_stats *st);
/* Packets not yet freed, both kinds. */
uint64_t rxp_pktpool_pkts_outstanding(const struct rxp_pktpool *pp);
/* Head buffers not yet released; an embedded packet's slot is one. */
uint64_t rxp_pktpool_bufs_outstanding(const struct rxp_pktpool *pp);
/* Drain this thread's deferred frees in all of the pool's object pools. */
unsigned rxp_pktpool_drain_deferred(struct rxp_pktpool *pp);
void rxp_pktpool_flush_cache(struct rxp_pktpool *pp);
size_t rxp_pktpool_leak_report(const struct rxp_pktpool *pp, FILE *out);
unsigned rxp_pktpool_headroom(const struct rxp_pktpool *pp);
/* Bytes in a small head buffer (what rxp_pkt_alloc gives without falling
 * back to the large class). */
unsigned rxp_pktpool_buf_size(const struct rxp_pktpool *pp);
/* Count drops of frames that never became a packet (e.g. rx_no_buffer). */
void rxp_pktpool_count_drop(struct rxp_pktpool *pp, enum rxp_drop_reason r, uint64_t n);
/* Called by rxp_pkt_drop with each of the pool's packets it drops, before
 * it is freed, on the dropping thread (so it must be thread-safe); it may
 * read the packet, not keep or change it. For accounting (rxp_ledger):
 * set it before packets flow, NULL to remove. Drops counted without a
 * packet (rxp_pktpool_count_drop) do not call it. */
typedef void (*rxp_pkt_drop_hook_fn)(void *arg, const struct rxp_pkt *pkt,
				     enum rxp_drop_reason reason);
void rxp_pktpool_set_drop_hook(struct rxp_pktpool *pp, rxp_pkt_drop_hook_fn fn, void *arg);

RXP_END_DECLS

#endif
