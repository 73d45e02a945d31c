/*
 * Unit tests for the TIPC codec, validation, bundling, extraction,
 * fragmentation and reassembly (src/tipc/), and a property test of the UDP
 * sender against the link receiver with a list of sent messages as the model.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tipctest.h"
#include "rxpath/compiler.h"
#include "rxpath/ipid.h"
#include "rxpath/wire.h"

/* Every field: set a random value, read it back, and check no bit outside
 * the field moved. */
static void test_codec_every_field(void **state)
{
	struct rxpt_rng r;
	uint8_t h[RXP_TIPC_MAX_H_SIZE], before[RXP_TIPC_MAX_H_SIZE];

	rxpt_rng_seed(&r, rxpt_seed("tipc_codec"));
	for (int iter = 0; iter < 2000; iter++) {
		for (unsigned f = 0; f < RXP_TIPC_F_MAX; f++) {
			const struct rxp_tipc_field_desc *d = &rxp_tipc_fields[f];
			unsigned width = d->hi - d->lo + 1;
			uint32_t mask = width == 32 ? ~0u : (1u << width) - 1;
			uint32_t v = (uint32_t)rxpt_rng_next(&r) & mask;

			assert_true(d->word <= 10);
			for (unsigned i = 0; i < sizeof(h); i++)
				h[i] = (uint8_t)rxpt_rng_next(&r);
			memcpy(before, h, sizeof(h));
			rxp_tipc_set(h, f, v);
			assert_int_equal(rxp_tipc_get(h, f), v);
			for (unsigned w = 0; w < sizeof(h) / 4; w++) {
				uint32_t keep = w == d->word ? ~(mask << d->lo) : ~0u;

				assert_int_equal(rxp_tipc_word(h, w) & keep,
						 rxp_tipc_word(before, w) & keep);
			}
		}
	}
	/* The named accessors agree with the table. */
	memset(h, 0, sizeof(h));
	rxp_tipc_hdr_init(h, RXP_TIPC_CONN_MANAGER, 3, 44, 0x1002003, 0x1002004);
	assert_int_equal(rxp_tipc_user(h), RXP_TIPC_CONN_MANAGER);
	assert_int_equal(rxp_tipc_hsize(h), 44);
	assert_int_equal(rxp_tipc_size(h), 44);
	assert_int_equal(rxp_tipc_type(h), 3);
	assert_int_equal(rxp_tipc_get(h, RXP_TIPC_F_VERSION), 2);
	assert_int_equal(rxp_tipc_orignode(h), 0x1002003);
	assert_int_equal(rxp_tipc_get(h, RXP_TIPC_F_DESTNODE), 0x1002004);
	rxp_tipc_set_hsize(h, 24);
	rxp_tipc_set_word(h, 6, 0xdead);
	assert_int_equal(rxp_tipc_orignode(h), 0x1002003); /* short: prevnode */
	assert_int_equal(rxp_tipc_importance(h), RXP_TIPC_SYSTEM_IMPORTANCE);
	rxp_tipc_set(h, RXP_TIPC_F_USER, RXP_TIPC_HIGH_IMPORTANCE);
	assert_int_equal(rxp_tipc_importance(h), 2);
	rxp_tipc_set(h, RXP_TIPC_F_USER, RXP_TIPC_MSG_BUNDLER);
	rxp_tipc_set(h, RXP_TIPC_F_IMPORTANCE, 3);
	assert_int_equal(rxp_tipc_importance(h), 3);
}

static void test_header_sizes_and_validation(void **state)
{
	static const unsigned sizes[] = {RXP_TIPC_SHORT_H_SIZE, RXP_TIPC_BASIC_H_SIZE,
					 RXP_TIPC_NAMED_H_SIZE, RXP_TIPC_MCAST_H_SIZE,
					 RXP_TIPC_MAX_H_SIZE};
	static uint8_t m[RXP_TIPC_MAX_MSG_SIZE + 8];

	assert_int_equal(RXP_TIPC_MAX_MSG_SIZE, 66060);
	for (unsigned i = 0; i < 5; i++) {
		tt_write_msg(m, 0, 0, sizes[i], sizes[i] + 10, 1);
		assert_int_equal(rxp_tipc_validate(m, sizes[i] + 10), 0);
		/* trailing bytes are allowed */
		assert_int_equal(rxp_tipc_validate(m, sizes[i] + 13), 0);
		/* V3: fewer bytes than size */
		assert_int_equal(rxp_tipc_validate(m, sizes[i] + 9), RXP_DROP_TIPC_HDR);
	}
	/* V1 */
	tt_write_msg(m, 0, 0, 24, 24, 1);
	assert_int_equal(rxp_tipc_validate(m, 23), RXP_DROP_TIPC_HDR);
	rxp_tipc_set(m, RXP_TIPC_F_VERSION, 3);
	assert_int_equal(rxp_tipc_validate(m, 24), RXP_DROP_TIPC_HDR);
	/* V2 */
	tt_write_msg(m, 0, 0, 24, 24, 1);
	rxp_tipc_set(m, RXP_TIPC_F_HSIZE_WORDS, 5);
	assert_int_equal(rxp_tipc_validate(m, 24), RXP_DROP_TIPC_HDR);
	rxp_tipc_set(m, RXP_TIPC_F_HSIZE_WORDS, 15);
	rxp_tipc_set(m, RXP_TIPC_F_SIZE, 60);
	assert_int_equal(rxp_tipc_validate(m, 60), 0);
	assert_int_equal(rxp_tipc_validate(m, 59), RXP_DROP_TIPC_HDR);
	/* V3: size below hsize; the 66000 payload limit */
	tt_write_msg(m, 0, 0, 40, 40, 1);
	rxp_tipc_set(m, RXP_TIPC_F_SIZE, 39);
	assert_int_equal(rxp_tipc_validate(m, 100), RXP_DROP_TIPC_HDR);
	tt_write_msg(m, 0, 0, 60, RXP_TIPC_MAX_MSG_SIZE, 1);
	assert_int_equal(rxp_tipc_validate(m, RXP_TIPC_MAX_MSG_SIZE), 0);
	tt_write_msg(m, 0, 0, 40, RXP_TIPC_MAX_MSG_SIZE - 19, 1);
	assert_int_equal(rxp_tipc_validate(m, sizeof(m)), RXP_DROP_TIPC_HDR);
	/* size field is 17 bits: 131071 fits in the field, fails validation */
	rxp_tipc_set(m, RXP_TIPC_F_SIZE, 131071);
	assert_int_equal(rxp_tipc_size(m), 131071);
	assert_int_equal(rxp_tipc_validate(m, sizeof(m)), RXP_DROP_TIPC_HDR);
}

/* Validation on packets whose header is split across page fragments. */
static void test_validate_nonlinear(void **state)
{
	struct rxp_pktpool *pp = tt_pool();
	uint8_t m[200];
	struct rxp_pkt *p;

	tt_write_msg(m, 1, 0, 44, 150, 9);
	for (uint32_t head = 0; head <= 60; head += 4) {
		p = tt_raw_split(pp, m, 150, head, 10);
		assert_int_equal(rxp_tipc_validate_pkt(p), 0);
		rxp_pkt_trim(p, 149);
		assert_int_equal(rxp_tipc_validate_pkt(p), RXP_DROP_TIPC_HDR);
		rxp_pkt_consume(p);
	}
	rxpt_pktpool_teardown(pp);
}

static void test_bundle_build(void **state)
{
	struct rxp_pktpool *pp = tt_pool();
	struct rxp_pkt *b = rxp_tipc_bundle_new(pp, 1500, 0x1001001, 0x1001002), *m;
	uint32_t expect = 40;
	unsigned n = 0;

	assert_non_null(b);
	assert_int_equal(rxp_tipc_user(b->data), RXP_TIPC_MSG_BUNDLER);
	assert_int_equal(rxp_tipc_hsize(b->data), 40);
	for (;;) {
		uint32_t size = 61 + n * 3; /* odd sizes exercise the padding */

		m = tt_msg(pp, n == 0 ? 2 : 0, 40, 5, size, n);
		if (rxp_tipc_bundle_add(b, m, 1500)) {
			assert_true(RXP_ALIGN_UP(expect, 4u) + size > 1500);
			rxp_pkt_consume(m);
			break;
		}
		rxp_pkt_consume(m);
		expect = RXP_ALIGN_UP(expect, 4u) + size;
		n++;
		assert_int_equal(rxp_tipc_size(b->data), expect);
	}
	assert_int_equal(rxp_tipc_get(b->data, RXP_TIPC_F_MSGCNT), n);
	assert_int_equal(rxp_tipc_importance(b->data), 2); /* copied from the first */
	assert_int_equal(b->len, expect);
	/* refused users */
	static const unsigned refused[] = {RXP_TIPC_MSG_FRAGMENTER, RXP_TIPC_TUNNEL_PROTOCOL,
					   RXP_TIPC_BCAST_PROTOCOL, RXP_TIPC_MSG_BUNDLER};
	rxp_pkt_consume(b);
	b = rxp_tipc_bundle_new(pp, 1500, 1, 2);
	for (unsigned i = 0; i < 4; i++) {
		m = tt_msg(pp, refused[i], 40, 5, 60, 1);
		assert_int_equal(rxp_tipc_bundle_add(b, m, 1500), -EINVAL);
		rxp_pkt_consume(m);
	}
	m = tt_msg(pp, 0, 40, 5, 1461, 1);
	assert_int_equal(rxp_tipc_bundle_add(b, m, 1500), -EMSGSIZE);
	rxp_pkt_consume(m);
	assert_int_equal(rxp_tipc_get(b->data, RXP_TIPC_F_MSGCNT), 0);
	rxp_pkt_consume(b);
	rxpt_pktpool_teardown(pp);
}

/* Build a bundle with small (copied) and large (page-shared) messages,
 * extract through the link from linear and non-linear outers. */
static void test_bundle_extract(void **state)
{
	struct rxp_pktpool *pp = tt_pool();
	static const uint32_t sizes[] = {24, 100, 257, 1000, 33, 3000, 40, 700};
	struct tt_sink s;
	struct rxp_tipc_link l;
	struct rxp_pkt *b, *m;
	uint32_t sums[8];

	for (int split = 0; split < 2; split++) {
		memset(&s, 0, sizeof(s));
		tt_link(&l, pp, &s);
		b = rxp_tipc_bundle_new(pp, 8000, 1, 2);
		for (unsigned i = 0; i < 8; i++) {
			m = tt_msg(pp, i & 3, sizes[i] < 40 ? 24 : 40, 9, sizes[i], i * 7);
			sums[i] = tt_pkt_sum(m);
			assert_int_equal(rxp_tipc_bundle_add(b, m, 8000), 0);
			rxp_pkt_consume(m);
		}
		if (split) {
			struct rxp_pkt *nb = tt_raw_split(pp, b->data, b->len, 100, 1500);

			rxp_pkt_consume(b);
			b = nb;
		}
		rxp_tipc_link_rcv(&l, b);
		assert_int_equal(s.n, 8);
		for (unsigned i = 0; i < 8; i++) {
			assert_int_equal(s.size[i], sizes[i]);
			assert_int_equal(s.sum[i], sums[i]);
		}
		/* the four messages above the copy break share the outer's pages */
		assert_int_equal(s.nonlinear, 4);
		assert_int_equal(l.st.bundles, 1);
		assert_int_equal(l.st.bundled_msgs, 8);
		assert_int_equal(l.st.msgcnt_mismatch, 0);
		assert_int_equal(l.st.drops, 0);
		rxp_tipc_link_reset(&l);
	}
	rxpt_pktpool_teardown(pp);
}

static void test_fragment_and_reassemble(void **state)
{
	struct rxp_pktpool *pp = tt_pool();
	static const uint32_t mtus[] = {100, 1472, 9000};
	struct tt_sink s;
	struct rxp_tipc_link l;

	for (unsigned k = 0; k < 3; k++) {
		uint32_t size = 65536 + 40, sum, chunk = (mtus[k] - 40) & ~3u;
		struct rxp_pkt_queue q;
		struct rxp_pkt *m = tt_msg(pp, 3, 40, 7, size, k), *f;
		unsigned no = 1;
		int n;

		sum = tt_pkt_sum(m);
		rxp_pkt_queue_init(&q);
		n = rxp_tipc_fragment(pp, m, mtus[k], &q);
		assert_int_equal(n, (size + chunk - 1) / chunk);
		assert_int_equal(q.len, (unsigned)n);
		memset(&s, 0, sizeof(s));
		tt_link(&l, pp, &s);
		while ((f = rxp_pkt_dequeue(&q))) {
			const uint8_t *h = f->data;

			assert_true(f->len <= mtus[k]);
			assert_int_equal(rxp_tipc_user(h), RXP_TIPC_MSG_FRAGMENTER);
			assert_int_equal(rxp_tipc_hsize(h), 40);
			assert_int_equal(rxp_tipc_type(h), no == 1	? RXP_TIPC_FIRST_FRAGMENT
							   : q.len == 0 ? RXP_TIPC_LAST_FRAGMENT
									: RXP_TIPC_FRAGMENT);
			assert_int_equal(rxp_tipc_get(h, RXP_TIPC_F_FRAGM_NO), no);
			assert_int_equal(rxp_tipc_get(h, RXP_TIPC_F_NOF_FRAGMS), 0);
			assert_int_equal(rxp_tipc_importance(h), 3);
			no++;
			rxp_tipc_link_rcv(&l, f);
		}
		assert_int_equal(s.n, 1);
		assert_int_equal(s.size[0], size);
		assert_int_equal(s.sum[0], sum);
		assert_int_equal(l.st.fragments, (unsigned)n);
		assert_int_equal(l.st.reassembled, 1);
		assert_null(l.reasm);
		rxp_tipc_link_reset(&l);
	}
	/* A message that fits is queued as is. */
	{
		struct rxp_pkt_queue q;
		struct rxp_pkt *m = tt_msg(pp, 0, 24, 7, 500, 1);

		rxp_pkt_queue_init(&q);
		assert_int_equal(rxp_tipc_fragment(pp, m, 1500, &q), 1);
		assert_ptr_equal(q.head, m);
		rxp_pkt_queue_purge(&q, RXP_DROP_NOT_SPECIFIED);
	}
	rxpt_pktpool_teardown(pp);
}

/* Fragment heads are slices of shared blocks and page references are taken
 * in bulk: every slice's headroom may be written without touching another
 * fragment's header, fragments freed in any order leave nothing behind, and
 * running out of metadata half way returns every reference taken. */
static void test_fragment_shared_heads(void **state)
{
	struct rxp_pktpool *pp = tt_pool();
	struct rxp_pktpool_config c = {
		.name = "tipc_small", .n_pkts = 12, .n_bufs = 12, .n_large = 2};
	struct rxp_pktpool *small = rxp_pktpool_create(&c);
	struct rxp_pkt *frags[700], *m, *f;
	struct rxp_pkt_queue q;
	unsigned n = 0, no = 1;

	/* mtu 140: 100 data bytes a fragment, 400 fragments over ~20 blocks. */
	m = tt_msg(pp, 1, 40, 7, 40000, 3);
	rxp_pkt_queue_init(&q);
	assert_true(rxp_tipc_fragment(pp, m, 140, &q) > 300);
	while ((f = rxp_pkt_dequeue(&q))) {
		assert_true(n < 700);
		assert_false(rxp_pkt_cloned(f));
		assert_false(f->flags & RXP_PKT_F_RINGBUF);
		assert_true(rxp_pkt_headroom(f) >= 28);
		frags[n++] = f;
	}
	/* Scribble over every headroom (what a bearer's push does). */
	for (unsigned i = 0; i < n; i++) {
		uint32_t hr = rxp_pkt_headroom(frags[i]);

		memset(rxp_pkt_push(frags[i], hr), 0xa5, hr);
		rxp_pkt_pull(frags[i], hr);
	}
	for (unsigned i = 0; i < n; i++, no++) {
		assert_int_equal(rxp_tipc_validate_pkt(frags[i]), 0);
		assert_int_equal(rxp_tipc_user(frags[i]->data), RXP_TIPC_MSG_FRAGMENTER);
		assert_int_equal(rxp_tipc_get(frags[i]->data, RXP_TIPC_F_FRAGM_NO), no);
	}
	/* Free odd ones first, then even ones backwards. */
	for (unsigned i = 1; i < n; i += 2)
		rxp_pkt_consume(frags[i]);
	for (unsigned i = n; i-- > 0;)
		if (!(i & 1))
			rxp_pkt_consume(frags[i]);
	/* Out of metadata half way: -ENOMEM, nothing queued, nothing kept. */
	assert_non_null(small);
	m = tt_msg(small, 0, 40, 7, 30000, 4);
	assert_non_null(m);
	rxp_pkt_queue_init(&q);
	assert_int_equal(rxp_tipc_fragment(small, m, 1472, &q), -ENOMEM);
	assert_int_equal(q.len, 0);
	assert_null(q.head);
	rxpt_pktpool_teardown(small);
	rxpt_pktpool_teardown(pp);
}

/* Strip IPv4+UDP from a datagram built by the sender, checking both. */
static struct rxp_pkt *strip_udp(struct rxp_pkt *d)
{
	const struct rxp_iphdr *ip = (const void *)d->data;
	const struct rxp_udphdr *uh = (const void *)(d->data + RXP_IPV4_HLEN);

	assert_int_equal(ip->ver_ihl, 0x45);
	assert_int_equal(ntohs(ip->tot_len), d->len);
	assert_int_equal(rxp_ip_csum(ip, RXP_IPV4_HLEN), 0);
	assert_int_equal(ntohs(uh->dest), RXP_TIPC_UDP_PORT);
	assert_int_equal(ntohs(uh->len), d->len - RXP_IPV4_HLEN);
	rxp_pkt_pull(d, RXP_IPV4_HLEN + 8);
	return d;
}

/* Property: random message sizes and MTUs through rxp_tipc_udp_build and
 * back through the link arrive complete, in order, byte for byte (model: the
 * list of sums sent). RXP_PROPERTY_SCALE multiplies the 1000 rounds. */
static void test_property_udp_roundtrip(void **state)
{
	struct rxp_pktpool *pp = tt_pool();
	struct rxpt_rng r;
	const char *sc = getenv("RXP_PROPERTY_SCALE");
	unsigned rounds = 1000 * (sc ? (unsigned)atoi(sc) : 1), total = 0;
	static struct tt_sink s;
	static uint32_t sums[64], sizes[64];
	struct rxp_ipid_table *ids = rxp_ipid_create(&(struct rxp_ipid_config){.n_buckets = 64});

	assert_non_null(ids);
	rxpt_rng_seed(&r, rxpt_seed("tipc_udp_roundtrip"));
	for (unsigned round = 0; round < rounds; round++) {
		struct rxp_tipc_udp_peer peer = {.saddr = htonl(0x0a000001),
						 .daddr = htonl(0x0a000002),
						 .mtu = 200 + (uint32_t)rxpt_rng_below(&r, 9000),
						 .ids = ids};
		struct rxp_pkt_queue msgs, out;
		struct rxp_tipc_link l;
		unsigned n = 1 + (unsigned)rxpt_rng_below(&r, 40), i;
		struct rxp_pkt *d;

		rxp_pkt_queue_init(&msgs);
		rxp_pkt_queue_init(&out);
		for (i = 0; i < n; i++) {
			uint32_t size = 24 + (uint32_t)rxpt_rng_below(
						     &r, rxpt_rng_below(&r, 4) ? 400 : 20000);
			struct rxp_pkt *m = tt_msg(pp, (unsigned)rxpt_rng_below(&r, 4),
						   size < 40 ? 24 : 40, i, size, round + i);

			sizes[i] = size;
			sums[i] = tt_pkt_sum(m);
			rxp_pkt_enqueue(&msgs, m);
		}
		assert_true(rxp_tipc_udp_build(pp, &peer, &msgs, &out) > 0);
		assert_int_equal(msgs.len, 0);
		memset(&s, 0, sizeof(s));
		tt_link(&l, pp, &s);
		while ((d = rxp_pkt_dequeue(&out))) {
			assert_true(d->len <= peer.mtu);
			rxp_tipc_link_rcv(&l, strip_udp(d));
		}
		assert_int_equal(s.n, n);
		for (i = 0; i < n; i++) {
			assert_int_equal(s.size[i], sizes[i]);
			assert_int_equal(s.sum[i], sums[i]);
		}
		assert_int_equal(l.st.drops, 0);
		rxp_tipc_link_reset(&l);
		total += n;
	}
	printf("tipc udp round trip: %u rounds, %u messages\n", rounds, total);
	rxp_ipid_destroy(ids);
	rxpt_pktpool_teardown(pp);
}

static void test_port_binding(void **state)
{
	struct rxp_pktpool *pp = tt_pool();
	struct tt_sink a, b;
	struct rxp_tipc_link l;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	rxp_tipc_link_init(&l, pp);
	assert_int_equal(rxp_tipc_link_bind(&l, 10, tt_sink_fn, &a), 0);
	assert_int_equal(rxp_tipc_link_bind(&l, 10, tt_sink_fn, &b), -EEXIST);
	assert_int_equal(rxp_tipc_link_bind(&l, 11, tt_sink_fn, &b), 0);
	for (unsigned p = 12; p < 12 + RXP_TIPC_MAX_PORTS - 2; p++)
		assert_int_equal(rxp_tipc_link_bind(&l, p, tt_sink_fn, &b), 0);
	assert_int_equal(rxp_tipc_link_bind(&l, 999, tt_sink_fn, &b), -ENOSPC);
	rxp_tipc_link_rcv(&l, tt_msg(pp, 0, 40, 10, 50, 1));
	rxp_tipc_link_rcv(&l, tt_msg(pp, 1, 40, 11, 50, 1));
	rxp_tipc_link_rcv(&l, tt_msg(pp, 1, 40, 5000, 50, 1)); /* unbound, no ANY */
	rxp_tipc_link_rcv(&l,
			  tt_msg(pp, RXP_TIPC_NAME_DISTRIBUTOR, 40, 0, 50, 1)); /* no node sink */
	assert_int_equal(a.n, 1);
	assert_int_equal(b.n, 1);
	assert_int_equal(l.st.drop[RXP_DROP_TIPC_NO_PORT], 2);
	rxp_tipc_link_reset(&l);
	rxpt_pktpool_teardown(pp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_codec_every_field),
		cmocka_unit_test(test_header_sizes_and_validation),
		cmocka_unit_test(test_validate_nonlinear),
		cmocka_unit_test(test_bundle_build),
		cmocka_unit_test(test_bundle_extract),
		cmocka_unit_test(test_fragment_and_reassemble),
		cmocka_unit_test(test_fragment_shared_heads),
		cmocka_unit_test(test_property_udp_roundtrip),
		cmocka_unit_test(test_port_binding),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
