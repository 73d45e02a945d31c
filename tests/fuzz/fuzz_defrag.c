/* libFuzzer target: an input is one configuration byte (bits 0-1: the
 * policy, of strict, bsd, last and windows; bit 2: forward mode; bit 3: the
 * Linux-like pressure policy instead of eviction; bits 4-6 all set:
 * destroy the table at the end, with whatever it holds, instead of
 * expiring everything; a table made again costs more than most inputs),
 * then a sequence of records
 *   [1 byte flags][2 bytes length][length bytes of IPv4/IPv6 packet]
 * (flags bit 0: run the timers after the packet; bits 3-7: how many 2 s
 * steps the clock moves first) fed through one table with a small memory
 * cap and queue cap, so eviction and timeouts run too. Nothing may crash
 * or leak.
 *
 * The pool and one table per configuration live as long as the process.
 * After an input its table is emptied by running the timers past every
 * queue's expiry, which must leave no queue and no memory charged; a table
 * left empty is equivalent to a fresh one (queues, timers and max_dist
 * counts are all relative to what the table holds), so an input behaves
 * the same whatever ran before it. */
#include "rxpath/defrag.h"
#include "fuzz.h"

#define FZ_NCFG 16

static struct rxp_defrag_table *tables[FZ_NCFG];

static struct rxp_defrag_table *table_for(unsigned cfg)
{
	static const enum rxp_defrag_policy pols[4] = {RXP_DEFRAG_STRICT, RXP_DEFRAG_BSD,
						       RXP_DEFRAG_LAST, RXP_DEFRAG_WINDOWS};
	struct rxp_defrag_config c = {.mem_limit = 64 * 1024, .max_queues = 16};

	if (!tables[cfg]) {
		c.policy = pols[cfg & 3];
		c.forward = cfg & 4;
		c.pressure = (cfg & 8) ? RXP_DEFRAG_PRESSURE_LINUX : RXP_DEFRAG_PRESSURE_EVICT;
		tables[cfg] = rxp_defrag_table_create(&c);
		FZ_CHECK(tables[cfg]);
	}
	return tables[cfg];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rxp_pktpool_config pc = {.name = "fz", .n_pkts = 512, .n_bufs = 512, .n_large = 8};
	struct rxp_pktpool *pp = fz_pool(&pc);
	struct rxp_defrag_table *t;
	struct rxp_defrag_counters ct;
	uint64_t now = 0;
	unsigned cfg;
	bool teardown;

	if (size < 1)
		return 0;
	cfg = data[0] & (FZ_NCFG - 1);
	teardown = (data[0] & 0x70) == 0x70;
	t = table_for(cfg);
	data++;
	size--;
	while (size >= 3) {
		uint8_t fl = data[0];
		size_t len = (size_t)data[1] << 8 | data[2];
		struct rxp_pkt *p, *r;

		data += 3;
		size -= 3;
		if (len > size)
			len = size;
		now += (uint64_t)(fl >> 3) * 2000000000ull;
		rxp_defrag_prefetch(t, data, len, 0); /* a hint: reads only */
		rxp_defrag_prefetch_queue(t, rxp_defrag_prefetch_slot(t, data, len, fl & 1));
		p = rxp_pkt_alloc(pp, (uint32_t)len);
		if (p) {
			memcpy(rxp_pkt_put(p, (uint32_t)len), data, len);
			r = rxp_defrag(t, p, now);
			if (r) {
				uint8_t tmp[64];

				/* Touch the result: a well-formed chain. */
				FZ_CHECK(!rxp_pkt_copy_bits(r, 0, tmp, r->len < 64 ? r->len : 64));
				rxp_pkt_consume(r);
			}
		}
		if (fl & 1)
			rxp_defrag_expire(t, now);
		data += len;
		size -= len;
	}
	if (teardown) {
		rxp_defrag_table_destroy(t);
		tables[cfg] = NULL;
	} else {
		rxp_defrag_expire(t, UINT64_MAX);
		rxp_defrag_get_counters(t, &ct);
		FZ_CHECK(ct.queues == 0 && ct.mem == 0);
	}
	fz_pool_quiet(pp);
	return 0;
}
