/*
 * Packet pools: the metadata pool and the head-buffer pools a packet is
 * built from, plus the per-thread drop counters.
 *
 * A head buffer is an rxp_pool object laid out as [struct rxp_page | bytes],
 * a small one as [struct rxp_page | struct rxp_pkt | bytes] (the packet
 * rxp_pkt_alloc makes of it keeps its metadata there; RXP_PKT_META_APART
 * in the environment when the pool is made leaves that out):
 * the page header is initialised once, when the pool first carves the
 * buffer (so an unused part of a big pool is never touched), its refcount
 * set to 1 when handed out, and release() returns the object to its pool (through
 * the owner's deferred list when another thread drops the last reference).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rxpath/compiler.h"
#include "buf/pkt_internal.h"

#define BUF_HDR PKTPOOL_BUF_HDR

void pktpool_buf_release(struct rxp_page *pg)
{
	rxp_pool_put(pg->owner, pg);
}

static void buf_init(void *obj, unsigned idx, void *arg)
{
	const struct pktpool_buf_init *a = arg;
	struct rxp_page *pg = obj;

	(void)idx;
	rxp_page_set_refcount(pg, 0);
	pg->size = a->size;
	pg->addr = (uint8_t *)obj + BUF_HDR + a->meta;
	pg->release = pktpool_buf_release;
	pg->owner = a->pool;
	pg->priv = 0;
}

/* The pool makes each buffer's header when it first hands the buffer out
 * (slots are carved lazily), from *a, which lives in the packet pool. */
static struct rxp_pool *buf_pool_create(const char *base, const char *suffix, unsigned n,
					uint32_t size, const struct rxp_pktpool_config *cfg,
					struct pktpool_buf_init *a)
{
	char name[32];
	struct rxp_pool_config pc = {
		.name = name,
		.obj_size = BUF_HDR + a->meta + size,
		.n = n,
		.cache_size = cfg->cache_size,
		.defer_max = cfg->defer_max,
		.obj_init = buf_init,
		.obj_init_arg = a,
	};

	snprintf(name, sizeof(name), "%s.%s", base, suffix);
	a->size = size;
	a->pool = rxp_pool_create(&pc);
	return a->pool;
}

struct rxp_pktpool *rxp_pktpool_create(const struct rxp_pktpool_config *cfg_in)
{
	struct rxp_pktpool_config cfg = cfg_in ? *cfg_in : (struct rxp_pktpool_config){0};
	struct rxp_pktpool *pp;
	char name[24];

	if (!cfg.n_pkts)
		cfg.n_pkts = 4096;
	if (!cfg.n_bufs)
		cfg.n_bufs = cfg.n_pkts;
	if (!cfg.buf_size)
		cfg.buf_size = 2048;
	if (!cfg.headroom)
		cfg.headroom = RXP_HEADROOM_DEFAULT;
	if (!cfg.n_large)
		cfg.n_large = 16;
	if (!cfg.large_size)
		cfg.large_size = 65536 + 2 * cfg.headroom;
	if (cfg.headroom >= cfg.buf_size || cfg.large_size < cfg.buf_size) {
		errno = EINVAL;
		return NULL;
	}
	pp = aligned_alloc(RXP_CACHELINE, RXP_ALIGN_UP(sizeof(*pp), (size_t)RXP_CACHELINE));
	if (!pp)
		return NULL;
	memset(pp, 0, sizeof(*pp));
	snprintf(name, sizeof(name), "%s", cfg.name ? cfg.name : "pkt");
	snprintf(pp->name, sizeof(pp->name), "%s", name);
	pp->headroom = cfg.headroom;
	pp->buf_size = cfg.buf_size;
	pp->large_size = cfg.large_size;
	{
		char mname[32];
		struct rxp_pool_config mc = {
			.name = mname,
			.obj_size = sizeof(struct rxp_pkt),
			.n = cfg.n_pkts,
			.cache_size = cfg.cache_size,
			.defer_max = cfg.defer_max,
		};

		snprintf(mname, sizeof(mname), "%s.meta", name);
		pp->meta = rxp_pool_create(&mc);
	}
	pp->buf_init.meta = getenv("RXP_PKT_META_APART") ? 0 : PKTPOOL_META_SZ;
	pp->bufs = buf_pool_create(name, "buf", cfg.n_bufs, cfg.buf_size, &cfg, &pp->buf_init);
	pp->large =
		buf_pool_create(name, "large", cfg.n_large, cfg.large_size, &cfg, &pp->large_init);
	if (!pp->meta || !pp->bufs || !pp->large) {
		rxp_pool_destroy(pp->meta);
		rxp_pool_destroy(pp->bufs);
		rxp_pool_destroy(pp->large);
		free(pp);
		errno = ENOMEM;
		return NULL;
	}
	return pp;
}

size_t rxp_pktpool_destroy(struct rxp_pktpool *pp)
{
	size_t leaked;

	if (!pp)
		return 0;
	/* (an embedded packet is its small buffer, counted there) */
	leaked = rxp_pool_destroy(pp->meta);
	leaked += rxp_pool_destroy(pp->bufs);
	leaked += rxp_pool_destroy(pp->large);
	free(pp);
	return leaked;
}

void rxp_pktpool_get_stats(const struct rxp_pktpool *pp, struct rxp_pktpool_stats *st)
{
	uint64_t plain = 0;

	memset(st, 0, sizeof(*st));
	rxp_pool_get_stats(pp->meta, &st->pkts);
	rxp_pool_get_stats(pp->bufs, &st->bufs);
	rxp_pool_get_stats(pp->large, &st->large);
	for (unsigned t = 0; t <= RXP_MAX_THREADS; t++) {
		for (unsigned r = 0; r < RXP_DROP_MAX; r++)
			st->drops[r] += __atomic_load_n(&pp->stats[t].drops[r], __ATOMIC_RELAXED);
		st->consumed += __atomic_load_n(&pp->stats[t].consumed, __ATOMIC_RELAXED);
		st->embedded_free += __atomic_load_n(&pp->stats[t].embed_free, __ATOMIC_RELAXED);
		plain += __atomic_load_n(&pp->stats[t].plain_small, __ATOMIC_RELAXED);
	}
	/* (read while other threads run, the counts may be a get apart) */
	if (pp->buf_init.meta && st->bufs.alloc > plain)
		st->embedded_alloc = st->bufs.alloc - plain;
}

uint64_t rxp_pktpool_pkts_outstanding(const struct rxp_pktpool *pp)
{
	struct rxp_pktpool_stats st;

	if (!pp->buf_init.meta)
		return rxp_pool_outstanding(pp->meta);
	rxp_pktpool_get_stats(pp, &st);
	return st.pkts.outstanding +
	       (st.embedded_alloc > st.embedded_free ? st.embedded_alloc - st.embedded_free : 0);
}

uint64_t rxp_pktpool_bufs_outstanding(const struct rxp_pktpool *pp)
{
	return rxp_pool_outstanding(pp->bufs) + rxp_pool_outstanding(pp->large);
}

unsigned rxp_pktpool_drain_deferred(struct rxp_pktpool *pp)
{
	return rxp_pool_drain_deferred(pp->meta) + rxp_pool_drain_deferred(pp->bufs) +
	       rxp_pool_drain_deferred(pp->large);
}

void rxp_pktpool_flush_cache(struct rxp_pktpool *pp)
{
	rxp_pool_flush_cache(pp->meta);
	rxp_pool_flush_cache(pp->bufs);
	rxp_pool_flush_cache(pp->large);
}

size_t rxp_pktpool_leak_report(const struct rxp_pktpool *pp, FILE *out)
{
	return rxp_pool_leak_report(pp->meta, out) + rxp_pool_leak_report(pp->bufs, out) +
	       rxp_pool_leak_report(pp->large, out);
}

unsigned rxp_pktpool_headroom(const struct rxp_pktpool *pp)
{
	return pp->headroom;
}

unsigned rxp_pktpool_buf_size(const struct rxp_pktpool *pp)
{
	return pp->buf_size;
}

void rxp_pktpool_set_drop_hook(struct rxp_pktpool *pp, rxp_pkt_drop_hook_fn fn, void *arg)
{
	pp->drop_hook_arg = arg;
	pp->drop_hook = fn;
}

void rxp_pktpool_count_drop(struct rxp_pktpool *pp, enum rxp_drop_reason r, uint64_t n)
{
	if ((unsigned)r - 1 >= RXP_DROP_MAX - 1) /* NONE or out of range */
		r = RXP_DROP_NOT_SPECIFIED;
	unsigned tid = rxp_thread_id();

	pktpool_stat_add(tid, &pp->stats[tid].drops[r], n);
}

struct rxp_page *pktpool_buf_get(struct rxp_pktpool *pp, uint32_t need, const char *file, int line)
{
	struct rxp_pool *p;
	struct rxp_page *pg;

	if (need <= pp->buf_size)
		p = pp->bufs;
	else if (need <= pp->large_size)
		p = pp->large;
	else
		return NULL;
	pg = rxp_pool_get_at(p, file, line);
	if (pg && p == pp->bufs && pp->buf_init.meta) {
		unsigned tid = rxp_thread_id();

		pktpool_stat_add(tid, &pp->stats[tid].plain_small, 1);
	} else if (rxp_unlikely(!pg && p == pp->bufs)) {
		pg = rxp_pool_get_at(pp->large, file, line); /* fall back to a large one */
	}
	if (pg)
		rxp_page_set_refcount(pg, 1);
	return pg;
}

uint32_t pktpool_buf_truesize(const struct rxp_page *pg)
{
	return (uint32_t)(pg->size + BUF_HDR);
}
