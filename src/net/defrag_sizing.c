/*
 * Sizing a packet pool and a queue cap from a reassembly memory cap, so
 * that a caller who raises mem_limit does not run out of packets first.
 *
 * The table charges each packet it holds its truesize: the metadata plus
 * at least one head buffer (a small one for a fragment that fits in it,
 * else a large one). So a table at its cap holds at most
 * mem_limit / (metadata + small buffer) packets, and as many small head
 * buffers, or mem_limit / (large buffer) large ones; a queue holds at least
 * one packet. Pools carve their objects lazily (rxp_pool_carved), so a
 * pool sized for a big cap costs memory only for what is ever in use.
 */
#include "rxpath/defrag.h"
#include "rxpath/pkt.h"

#define BUF_HDR_COST 64 /* a head buffer's page header, one line (pktpool.c) */
#define POOL_OBJ_MAX (1u << 30) /* rxp_pool's limit */

static uint64_t mem_limit_of(const struct rxp_defrag_config *cfg)
{
	return cfg && cfg->mem_limit ? cfg->mem_limit : RXP_DEFRAG_MEM_DEFAULT;
}

static unsigned clamp_objs(uint64_t n)
{
	return n > POOL_OBJ_MAX ? POOL_OBJ_MAX : (unsigned)n;
}

void rxp_defrag_pool_config(const struct rxp_defrag_config *cfg, unsigned margin,
			    struct rxp_pktpool_config *pc)
{
	uint64_t mem = mem_limit_of(cfg);
	uint64_t small = (pc->buf_size ? pc->buf_size : 2048) + BUF_HDR_COST;
	uint64_t large = pc->large_size
				 ? pc->large_size
				 : 65536 + 2 * (uint64_t)(pc->headroom ? pc->headroom
								       : RXP_HEADROOM_DEFAULT);
	uint64_t n = mem / (RXP_PKT_META_TRUESIZE + small) + margin;

	pc->n_pkts = clamp_objs(n);
	pc->n_bufs = clamp_objs(n);
	pc->n_large =
		clamp_objs(mem / (large + BUF_HDR_COST) + (margin > 16 ? margin / 16 : 1) + 16);
}

uint32_t rxp_defrag_queues_for_mem(uint64_t mem_limit)
{
	uint64_t q = (mem_limit ? mem_limit : RXP_DEFRAG_MEM_DEFAULT) /
		     (RXP_PKT_META_TRUESIZE + 2048 + BUF_HDR_COST);

	if (q < 1)
		q = 1;
	return q > RXP_DEFRAG_QUEUES_MAX ? RXP_DEFRAG_QUEUES_MAX : (uint32_t)q;
}
