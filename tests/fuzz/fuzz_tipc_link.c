/*
 * libFuzzer target for the TIPC link receive entry point. One input is
 * several datagrams fed to one link, so reassembly state carries between
 * them. Format, repeated: a control byte, a 2-byte big-endian length, then
 * that many bytes. Control bit 0: deliver the datagram split into page
 * fragments (non-linear); bit 1: reset the link before it; bits 2-7: where
 * the linear part ends, in 4-byte units. When bit 1 of the input's size is
 * set, page fragments are slices of one arena page laid out in input order
 * (as a loopback sender's message pages), so a fragment's data may continue
 * the previous one's and reassembly extends a frag instead of adding one.
 * After the input the link is torn down and the pool must have nothing
 * outstanding, and the arena only our reference (else abort: a leak).
 */
#include "rxpath/tipc.h"
#include "fuzz.h"

static struct rxp_pktpool *pp;

static void sink(void *arg, struct rxp_pkt *pkt)
{
	(void)arg;
	rxp_pkt_consume(pkt);
}

/* A page of n bytes, a copy of d unless d is NULL. */
static struct rxp_page *page_new(const uint8_t *d, uint32_t n)
{
	struct rxp_page *pg = rxpt_page_new(n);

	if (d)
		memcpy(pg->addr, d, n);
	return pg;
}

/* This input's arena (NULL unless used) and how much of it is taken. */
static struct rxp_page *arena;
static uint32_t arena_used;

static struct rxp_page *piece(const uint8_t *d, uint32_t n, uint32_t *off)
{
	if (!arena) {
		*off = 0;
		return page_new(d, n);
	}
	*off = arena_used;
	memcpy(arena->addr + arena_used, d, n);
	arena_used += n;
	rxp_page_get(arena);
	return arena;
}

static struct rxp_pkt *mkpkt(const uint8_t *d, uint32_t len, uint8_t ctl)
{
	uint32_t head = len, off;
	struct rxp_pkt *p;

	if (ctl & 1) {
		head = (uint32_t)(ctl >> 2) * 4;
		if (head > len)
			head = len;
	}
	p = rxp_pkt_alloc(pp, head);
	if (!p)
		return NULL;
	memcpy(rxp_pkt_put(p, head), d, head);
	for (off = head; off < len;) {
		uint32_t n = len - off;
		struct rxp_page *pg;

		/* at most RXP_MAX_FRAGS pieces: the last one takes the rest */
		if (p->nr_frags < RXP_MAX_FRAGS - 1 && n > 97)
			n = 97;
		uint32_t poff;

		pg = piece(d + off, n, &poff);
		if (rxp_pkt_add_frag(p, pg, poff, n, n)) {
			rxp_page_put(pg);
			rxp_pkt_consume(p);
			return NULL;
		}
		off += n;
	}
	return p;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rxp_tipc_link l;
	size_t pos = 0;

	if (!pp) {
		struct rxp_pktpool_config c = {
			.name = "fuzz", .n_pkts = 4096, .n_bufs = 4096, .n_large = 64};

		pp = fz_pool(&c);
	}
	rxp_tipc_link_init(&l, pp);
	rxp_tipc_link_bind(&l, RXP_TIPC_PORT_ANY, sink, NULL);
	rxp_tipc_link_set_node_sink(&l, sink, NULL);
	if (size & 1)
		rxp_tipc_link_set_ctrl(&l, sink, NULL);
	arena = NULL;
	arena_used = 0;
	if (size & 2)
		arena = page_new(NULL, (uint32_t)size + 1);
	while (size - pos >= 3) {
		uint8_t ctl = data[pos];
		uint32_t len = (uint32_t)data[pos + 1] << 8 | data[pos + 2];
		struct rxp_pkt *p;

		pos += 3;
		if (len > size - pos)
			len = (uint32_t)(size - pos);
		if (ctl & 2)
			rxp_tipc_link_reset(&l);
		p = mkpkt(data + pos, len, ctl);
		if (p)
			rxp_tipc_link_rcv(&l, p);
		pos += len;
	}
	rxp_tipc_link_reset(&l);
	FZ_CHECK(!rxp_pktpool_pkts_outstanding(pp) &&
		 !rxp_pktpool_bufs_outstanding(pp)); /* a leak */
	if (arena) {
		FZ_CHECK(rxp_page_refcount(arena) == 1); /* a page reference leaked */
		rxp_page_put(arena);
		arena = NULL;
	}
	fz_pool_quiet(pp); /* and the pages of non-arena fragments */
	return 0;
}
