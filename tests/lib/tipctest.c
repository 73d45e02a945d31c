/* TIPC test helpers (tipctest.h). */
#include <stdlib.h>
#include <string.h>

#include "tipctest.h"

uint32_t tt_sum(const uint8_t *p, uint32_t len)
{
	uint32_t s = 2166136261u;

	for (uint32_t i = 0; i < len; i++)
		s = (s ^ p[i]) * 16777619u;
	return s;
}

uint32_t tt_pkt_sum(const struct rxp_pkt *pkt)
{
	uint8_t *b = malloc(pkt->len + 1);
	uint32_t s;

	assert_non_null(b);
	assert_int_equal(rxp_pkt_copy_bits(pkt, 0, b, pkt->len), 0);
	s = tt_sum(b, pkt->len);
	free(b);
	return s;
}

void tt_sink_fn(void *arg, struct rxp_pkt *pkt)
{
	struct tt_sink *s = arg;
	uint8_t buf[RXP_TIPC_MIN_H_SIZE];
	const uint8_t *h = rxp_pkt_header_pointer(pkt, 0, sizeof(buf), buf);

	assert_non_null(h);
	if (s->n < TT_MAX_REC) {
		s->size[s->n] = pkt->len;
		s->user[s->n] = rxp_tipc_user(h);
		s->sum[s->n] = tt_pkt_sum(pkt);
	}
	/* The delivered message is exactly its size field. */
	assert_int_equal(pkt->len, rxp_tipc_size(h));
	if (!rxp_pkt_is_linear(pkt))
		s->nonlinear++;
	s->n++;
	s->bytes += pkt->len;
	rxp_pkt_consume(pkt);
}

struct rxp_pktpool *tt_pool(void)
{
	struct rxp_pktpool_config c = {
		.name = "tipc", .n_pkts = 2048, .n_bufs = 2048, .n_large = 128};
	struct rxp_pktpool *pp = rxp_pktpool_create(&c);

	assert_non_null(pp);
	return pp;
}

void tt_link(struct rxp_tipc_link *l, struct rxp_pktpool *pp, struct tt_sink *s)
{
	rxp_tipc_link_init(l, pp);
	assert_int_equal(rxp_tipc_link_bind(l, RXP_TIPC_PORT_ANY, tt_sink_fn, s), 0);
	rxp_tipc_link_set_node_sink(l, tt_sink_fn, s);
}

uint32_t tt_write_msg(uint8_t *buf, unsigned user, unsigned type, unsigned hsize, uint32_t size,
		      uint32_t seed)
{
	rxp_tipc_hdr_init(buf, user, type, hsize, 0x1001001, 0x1001002);
	rxp_tipc_set(buf, RXP_TIPC_F_SIZE, size);
	rxp_tipc_set_word(buf, 5, 77);
	if (size > hsize)
		rxpt_fill(buf + hsize, size - hsize, seed);
	return size;
}

struct rxp_pkt *tt_msg(struct rxp_pktpool *pp, unsigned user, unsigned hsize, uint32_t port,
		       uint32_t size, uint32_t seed)
{
	struct rxp_pkt *p = rxp_pkt_alloc(pp, size);
	uint8_t *d;

	assert_non_null(p);
	d = rxp_pkt_put(p, size);
	assert_non_null(d);
	tt_write_msg(d, user, 0, hsize, size, seed);
	rxp_tipc_set_word(d, 5, port);
	return p;
}

struct rxp_pkt *tt_raw(struct rxp_pktpool *pp, const void *bytes, uint32_t len)
{
	struct rxp_pkt *p = rxp_pkt_alloc(pp, len);

	assert_non_null(p);
	memcpy(rxp_pkt_put(p, len), bytes, len);
	return p;
}

struct rxp_pkt *tt_raw_split(struct rxp_pktpool *pp, const void *bytes, uint32_t len, uint32_t head,
			     uint32_t chunk)
{
	const uint8_t *b = bytes;
	struct rxp_pkt *p;
	uint32_t off;

	head = head < len ? head : len;
	p = tt_raw(pp, b, head);
	for (off = head; off < len;) {
		uint32_t n = len - off < chunk ? len - off : chunk;
		struct rxp_page *pg = rxpt_page_new(n + 16);

		memcpy(pg->addr + 8, b + off, n);
		assert_int_equal(rxp_pkt_add_frag(p, pg, 8, n, n + 16), 0);
		off += n;
	}
	return p;
}

void tt_bundle_begin(struct tt_bundle *b, unsigned hsize)
{
	memset(b->buf, 0, hsize);
	rxp_tipc_hdr_init(b->buf, RXP_TIPC_MSG_BUNDLER, 0, hsize, 0x1001001, 0x1001002);
	b->len = hsize;
	b->hsize = hsize;
}

uint8_t *tt_bundle_put(struct tt_bundle *b, uint32_t len)
{
	uint32_t pos = (b->len + 3) & ~3u;
	uint8_t *p;

	assert_true(pos + len <= sizeof(b->buf));
	memset(b->buf + b->len, 0, pos - b->len);
	p = b->buf + pos;
	b->len = pos + len;
	rxp_tipc_set(b->buf, RXP_TIPC_F_SIZE, b->len);
	return p;
}

void tt_bundle_finish(struct tt_bundle *b, unsigned msgcnt)
{
	if (b->hsize >= 40)
		rxp_tipc_set(b->buf, RXP_TIPC_F_MSGCNT, msgcnt);
}

struct rxp_pkt *tt_frag(struct rxp_pktpool *pp, unsigned type, unsigned fragm_no, const void *data,
			uint32_t len, unsigned hsize)
{
	struct rxp_pkt *p = rxp_pkt_alloc(pp, hsize + len);
	uint8_t *h;

	assert_non_null(p);
	h = rxp_pkt_put(p, hsize + len);
	rxp_tipc_hdr_init(h, RXP_TIPC_MSG_FRAGMENTER, type, hsize, 0x1001001, 0x1001002);
	rxp_tipc_set(h, RXP_TIPC_F_SIZE, hsize + len);
	rxp_tipc_set(h, RXP_TIPC_F_FRAGM_NO, fragm_no);
	if (len)
		memcpy(h + hsize, data, len);
	return p;
}
