/* libFuzzer target: an input is one configuration byte (bits 0-1: the
 * policy, of strict, bsd, last and windows; bit 2: forward mode; bit 3: the
 * Linux-like pressure policy instead of eviction), then a sequence of
 * records
 *   [1 byte flags][2 bytes length][length bytes of IPv4/IPv6 packet]
 * (flags bit 0: run the timers after the packet; bits 3-7: how many 2 s
 * steps the clock moves first) fed through one table with a small memory
 * cap and queue cap, so eviction and timeouts run too. Nothing may crash
 * or leak. */
#include <stdint.h>
#include <string.h>

#include "rxpath/defrag.h"
#include "rxpath/pkt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum rxp_defrag_policy pols[4] = {RXP_DEFRAG_STRICT, RXP_DEFRAG_BSD,
						       RXP_DEFRAG_LAST, RXP_DEFRAG_WINDOWS};
	struct rxp_pktpool_config pc = {.name = "fz", .n_pkts = 512, .n_bufs = 512, .n_large = 8};
	struct rxp_pktpool *pp;
	struct rxp_defrag_table *t;
	struct rxp_defrag_config c = {.mem_limit = 64 * 1024, .max_queues = 16};
	uint64_t now = 0;

	if (size < 1)
		return 0;
	c.policy = pols[data[0] & 3];
	c.forward = data[0] & 4;
	c.pressure = (data[0] & 8) ? RXP_DEFRAG_PRESSURE_LINUX : RXP_DEFRAG_PRESSURE_EVICT;
	data++;
	size--;
	pp = rxp_pktpool_create(&pc);
	t = rxp_defrag_table_create(&c);
	if (!pp || !t)
		__builtin_trap();
	while (size >= 3) {
		uint8_t fl = data[0];
		size_t len = (size_t)data[1] << 8 | data[2];
		struct rxp_pkt *p, *r;

		data += 3;
		size -= 3;
		if (len > size)
			len = size;
		now += (uint64_t)(fl >> 3) * 2000000000ull;
		p = rxp_pkt_alloc(pp, (uint32_t)len);
		if (p) {
			memcpy(rxp_pkt_put(p, (uint32_t)len), data, len);
			r = rxp_defrag(t, p, now);
			if (r) {
				uint8_t tmp[64];

				/* Touch the result: a well-formed chain. */
				if (rxp_pkt_copy_bits(r, 0, tmp, r->len < 64 ? r->len : 64))
					__builtin_trap();
				rxp_pkt_consume(r);
			}
		}
		if (fl & 1)
			rxp_defrag_expire(t, now);
		data += len;
		size -= len;
	}
	rxp_defrag_table_destroy(t);
	if (rxp_pktpool_destroy(pp))
		__builtin_trap();
	return 0;
}
