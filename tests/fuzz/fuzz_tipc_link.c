/*
 * libFuzzer target for the TIPC link receive entry point. One input is
 * several datagrams fed to one link, so reassembly state carries between
 * them. Format, repeated: a control byte, a 2-byte big-endian length, then
 * that many bytes. Control bit 0: deliver the datagram split into page
 * fragments (non-linear); bit 1: reset the link before it; bits 2-7: where
 * the linear part ends, in 4-byte units. After the input the link is torn
 * down and the pool must have nothing outstanding (else abort: a leak).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rxpath/tipc.h"

static struct rxp_pktpool *pp;

static void sink(void *arg, struct rxp_pkt *pkt)
{
	(void)arg;
	rxp_pkt_consume(pkt);
}

static void page_release(struct rxp_page *pg)
{
	free(pg);
}

static struct rxp_page *page_new(const uint8_t *d, uint32_t n)
{
	struct rxp_page *pg = malloc(sizeof(*pg) + n);

	pg->refcnt = 1;
	pg->size = n;
	pg->addr = (uint8_t *)(pg + 1);
	pg->release = page_release;
	pg->owner = NULL;
	pg->priv = 0;
	memcpy(pg->addr, d, n);
	return pg;
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
		pg = page_new(d + off, n);
		if (rxp_pkt_add_frag(p, pg, 0, n, n)) {
			rxp_page_put(pg);
			rxp_pkt_consume(p);
			return NULL;
		}
		off += n;
	}
	return p;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rxp_tipc_link l;
	size_t pos = 0;

	if (!pp) {
		struct rxp_pktpool_config c = {
			.name = "fuzz", .n_pkts = 4096, .n_bufs = 4096, .n_large = 64};

		pp = rxp_pktpool_create(&c);
		if (!pp)
			abort();
	}
	rxp_tipc_link_init(&l, pp);
	rxp_tipc_link_bind(&l, RXP_TIPC_PORT_ANY, sink, NULL);
	rxp_tipc_link_set_node_sink(&l, sink, NULL);
	if (size & 1)
		rxp_tipc_link_set_ctrl(&l, sink, NULL);
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
	rxp_tipc_link_fini(&l);
	if (rxp_pktpool_pkts_outstanding(pp) || rxp_pktpool_bufs_outstanding(pp))
		abort(); /* a leak */
	return 0;
}
