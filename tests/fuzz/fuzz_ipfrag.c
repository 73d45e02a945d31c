/*
 * libFuzzer target for rxp_ip_fragment()'s input parsing and slicing.
 *
 * Input: 2 bytes MTU (big-endian), 1 byte layout (how many page frags the
 * bytes after the first 64 are split into), then the packet itself, taken as
 * an IPv4 or IPv6 datagram. Whatever comes back must fit the MTU when it
 * was fragmented, and every packet and page must be returned afterwards:
 * the target aborts on a leak.
 */
#include "rxpath/ip_output.h"
#include "rxpath/ipid.h"
#include "fuzz.h"

static struct rxp_pktpool *pp;
static struct rxp_ipid_table *ids;
/* A page holding a copy of data (the test library counts what is out). */
static struct rxp_page *page_new(const uint8_t *data, uint32_t size)
{
	struct rxp_page *pg = rxpt_page_new(size);

	memcpy(pg->addr, data, size);
	return pg;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rxp_pkt_queue q;
	struct rxp_pkt *p, *f;
	uint32_t mtu, lin, nfr;
	int rc;

	if (!pp) {
		struct rxp_pktpool_config c = {
			.name = "fuzz", .n_pkts = 4096, .n_bufs = 4096, .n_large = 64};
		struct rxp_ipid_config ic = {.n_buckets = 1024};

		pp = fz_pool(&c);
		ids = rxp_ipid_create(&ic);
		FZ_CHECK(ids);
	}
	if (size < 3 || size > 65535 + 3)
		return 0;
	mtu = (uint32_t)data[0] << 8 | data[1];
	nfr = data[2] % (RXP_MAX_FRAGS + 1);
	data += 3;
	size -= 3;
	lin = nfr && size > 64 ? 64 : (uint32_t)size;
	p = rxp_pkt_alloc(pp, lin);
	FZ_CHECK(p);
	memcpy(rxp_pkt_put(p, lin), data, lin);
	for (uint32_t i = 0, off = lin; off < size; i++) {
		uint32_t left = (uint32_t)size - off;
		uint32_t sz = i + 1 >= nfr ? left : (left + nfr - 1) / nfr;
		struct rxp_page *pg = page_new(data + off, sz);

		FZ_CHECK(!rxp_pkt_add_frag(p, pg, 0, sz, sz));
		off += sz;
	}
	rxp_pkt_queue_init(&q);
	rc = rxp_ip_fragment(p, mtu, ids, &q);
	FZ_CHECK(rc >= 0 || !q.len);
	FZ_CHECK(rc <= 0 || (uint32_t)rc == q.len);
	while ((f = rxp_pkt_dequeue(&q))) {
		FZ_CHECK(rc <= 1 || f->len <= (mtu > RXP_IP_MAX_MTU ? RXP_IP_MAX_MTU : mtu));
		rxp_pkt_consume(f);
	}
	fz_pool_quiet(pp);
	return 0;
}
