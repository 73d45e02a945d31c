/* libFuzzer target for IPv4/IPv6 input and UDP delivery (src/net/ip_input.c):
 * an input is a sequence of records [1 byte flags][2 bytes length][bytes],
 * each an IP packet fed through one network stack (reassembly with a small
 * cap, UDP port 6118 and a catch-all port bound). Flag bit 0 marks the
 * packet as a receive-ring buffer (early coalescing), bits 1-7 advance the
 * clock. Delivered datagrams are read end to end. Nothing may crash or
 * leak; every packet must be delivered or dropped. The pool and the stack
 * live as long as the process; after an input the stack's reassembly table
 * is emptied by its timers, which must leave nothing queued or charged (an
 * empty table behaves as a fresh one: see fuzz_defrag.c). */
#include "rxpath/net.h"
#include "fuzz.h"

static uint64_t delivered;

static void sink(void *arg, struct rxp_pkt *pkt)
{
	uint8_t tmp[256];
	uint32_t n = pkt->len < sizeof(tmp) ? pkt->len : (uint32_t)sizeof(tmp);

	FZ_CHECK(!rxp_pkt_copy_bits(pkt, 0, tmp, n) &&
		 !rxp_pkt_copy_bits(pkt, pkt->len - n, tmp, n));
	delivered++;
	rxp_pkt_consume(pkt);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rxp_pktpool_config pc = {.name = "fzip", .n_pkts = 512, .n_bufs = 512, .n_large = 8};
	struct rxp_defrag_config dc = {.mem_limit = 256 * 1024, .max_queues = 32};
	struct rxp_pktpool *pp = fz_pool(&pc);
	static struct rxp_net n;
	static bool up;
	struct rxp_defrag_counters ct;
	uint64_t now = 0, fed = 0;

	if (!up) {
		FZ_CHECK(!rxp_net_init(&n, &dc) && !rxp_udp_bind(&n, 6118, sink, NULL) &&
			 !rxp_udp_bind(&n, 0, sink, NULL));
		up = true;
	}
	delivered = 0;
	while (size >= 3) {
		uint8_t fl = data[0];
		size_t len = (size_t)data[1] << 8 | data[2];
		struct rxp_pkt *p;

		data += 3;
		size -= 3;
		if (len > size)
			len = size;
		now += (uint64_t)(fl >> 1) * 100000000ull;
		p = rxp_pkt_alloc(pp, (uint32_t)len);
		if (p) {
			memcpy(rxp_pkt_put(p, (uint32_t)len), data, len);
			if (fl & 1)
				p->flags |= RXP_PKT_F_RINGBUF;
			fed++;
			rxp_ip_rcv(&n, p, now);
		}
		data += len;
		size -= len;
	}
	rxp_defrag_expire(n.defrag, UINT64_MAX);
	rxp_defrag_get_counters(n.defrag, &ct);
	FZ_CHECK(ct.queues == 0 && ct.mem == 0);
	/* every packet fed was delivered, dropped or merged into a datagram */
	FZ_CHECK(delivered <= fed);
	fz_pool_quiet(pp);
	return 0;
}
