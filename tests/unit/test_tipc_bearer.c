/*
 * The TIPC UDP bearer's peer table (src/tipc/tipc_bearer.c): one link per
 * (source address, UDP source port), made on the first datagram; a peer
 * past the table is dropped as TIPC_NO_LINK and counted, never given
 * another peer's link; each link reassembles on its own (fragments of two
 * peers interleaved both complete); destroy resets the links, dropping a
 * partial message as TIPC_LINK_RESET. Every pool is torn down empty.
 */
#include <string.h>

#include "rxptest.h"
#include "rxpath/ipid.h"
#include "rxpath/tipc.h"
#include "rxpath/wire.h"

#define MSG_MAX 8000

struct sink {
	unsigned n;
	uint32_t len[64];
	uint8_t bytes[2][RXP_TIPC_NAMED_H_SIZE + MSG_MAX]; /* the first two messages */
};

static void on_msg(void *arg, struct rxp_pkt *pkt)
{
	struct sink *s = arg;

	if (s->n < 64)
		s->len[s->n] = pkt->len;
	if (s->n < 2 && pkt->len <= sizeof(s->bytes[0]))
		assert_int_equal(rxp_pkt_copy_bits(pkt, 0, s->bytes[s->n], pkt->len), 0);
	s->n++;
	rxp_pkt_consume(pkt);
}

/* The datagrams of one message of len bytes from peer (saddr, sport) as
 * rxpath's UDP delivery hands them over: headers located, data at TIPC.
 * The payload is the pattern rxpt_fill writes from seed. */
static void build(struct rxp_pktpool *pp, uint32_t saddr, uint16_t sport, uint32_t len,
		  uint32_t seed, struct rxp_pkt_queue *out)
{
	struct rxp_tipc_udp_peer peer = {
		.saddr = htonl(saddr),
		.daddr = htonl(0x0a000001),
		.sport = sport,
		.dport = RXP_TIPC_UDP_PORT,
		.mtu = 1500,
		.ids = rxp_ipid_create(&(struct rxp_ipid_config){.n_buckets = 64})};
	static uint8_t payload[MSG_MAX];
	struct rxp_pkt_queue msgs, dg;
	struct rxp_pkt *m, *d;

	assert_true(len <= MSG_MAX);
	rxpt_fill(payload, len, seed);
	rxp_pkt_queue_init(&msgs);
	rxp_pkt_queue_init(&dg);
	m = rxp_tipc_msg_new(pp, RXP_TIPC_LOW_IMPORTANCE, RXP_TIPC_NAMED_MSG, RXP_TIPC_NAMED_H_SIZE,
			     0x1001001, 0x1001002, 1000, payload, len);
	assert_non_null(m);
	rxp_pkt_enqueue(&msgs, m);
	assert_non_null(peer.ids);
	assert_true(rxp_tipc_udp_build(pp, &peer, &msgs, &dg) > 0);
	rxp_ipid_destroy(peer.ids);
	while ((d = rxp_pkt_dequeue(&dg))) {
		d->network_off = (uint16_t)(d->data - d->head);
		d->transport_off = (uint16_t)(d->network_off + RXP_IPV4_HLEN);
		rxp_pkt_pull(d, RXP_IPV4_HLEN + sizeof(struct rxp_udphdr));
		rxp_pkt_enqueue(out, d);
	}
}

static struct rxp_pktpool *pool(void)
{
	struct rxp_pktpool *pp = rxp_pktpool_create(&(struct rxp_pktpool_config){
		.name = "bearer", .n_pkts = 1024, .n_bufs = 512, .n_large = 8});

	assert_non_null(pp);
	return pp;
}

static void test_peers_and_full_table(void **state)
{
	struct rxp_pktpool *pp = pool();
	struct sink s = {0};
	struct rxp_tipc_bearer *b = rxp_tipc_bearer_create(pp, 2, on_msg, &s);
	struct rxp_tipc_link_stats ls;
	struct rxp_pktpool_stats ps;
	struct rxp_pkt_queue q;
	struct rxp_pkt *d;
	uint64_t full;
	unsigned npeers;

	(void)state;
	assert_non_null(b);
	assert_null(rxp_tipc_bearer_create(pp, 0, on_msg, &s));
	rxp_pkt_queue_init(&q);
	build(pp, 0x0a000002, 6118, 100, 1, &q); /* peer A */
	build(pp, 0x0a000002, 7000, 100, 2, &q); /* same address, another port: peer B */
	build(pp, 0x0a000003, 6118, 100, 3, &q); /* peer C: past the table */
	build(pp, 0x0a000002, 6118, 200, 4, &q); /* A again */
	while ((d = rxp_pkt_dequeue(&q)))
		rxp_tipc_bearer_rcv(b, d);
	rxp_tipc_bearer_stats(b, &ls, &full, &npeers);
	assert_int_equal(s.n, 3);
	assert_int_equal(npeers, 2);
	assert_int_equal(full, 1);
	assert_int_equal(ls.delivered, 3);
	assert_int_equal(ls.packets, 3);
	rxp_pktpool_get_stats(pp, &ps);
	assert_int_equal(ps.drops[RXP_DROP_TIPC_NO_LINK], 1);
	rxp_tipc_bearer_destroy(b);
	rxpt_pktpool_teardown(pp);
}

static void test_links_reassemble_apart(void **state)
{
	static uint8_t want[MSG_MAX];
	struct rxp_pktpool *pp = pool();
	struct sink s = {0};
	struct rxp_tipc_bearer *b = rxp_tipc_bearer_create(pp, 4, on_msg, &s);
	struct rxp_pkt_queue qa, qb, qc;
	struct rxp_pktpool_stats ps;
	struct rxp_pkt *a, *c;

	(void)state;
	assert_non_null(b);
	rxp_pkt_queue_init(&qa);
	rxp_pkt_queue_init(&qb);
	rxp_pkt_queue_init(&qc);
	build(pp, 0x0a000002, 6118, 5000, 0x11, &qa); /* fragmented */
	build(pp, 0x0a000004, 6118, 6000, 0x22, &qb);
	assert_true(qa.len > 1 && qb.len > 1);
	/* interleave the two peers' fragments */
	while (qa.len || qb.len) {
		if ((a = rxp_pkt_dequeue(&qa)))
			rxp_tipc_bearer_rcv(b, a);
		if ((a = rxp_pkt_dequeue(&qb)))
			rxp_tipc_bearer_rcv(b, a);
	}
	/* each message whole, with its own peer's bytes (A: 5000 from seed
	 * 0x11, B: 6000 from seed 0x22; the patterns differ at every byte) */
	assert_int_equal(s.n, 2);
	for (unsigned i = 0; i < 2; i++) {
		uint32_t len = s.len[i] - RXP_TIPC_NAMED_H_SIZE;

		assert_true(s.len[i] == RXP_TIPC_NAMED_H_SIZE + 5000 ||
			    s.len[i] == RXP_TIPC_NAMED_H_SIZE + 6000);
		rxpt_fill(want, len, len == 5000 ? 0x11 : 0x22);
		assert_memory_equal(s.bytes[i] + RXP_TIPC_NAMED_H_SIZE, want, len);
	}
	assert_int_not_equal(s.len[0], s.len[1]);
	/* a third peer's first fragment only: destroy drops it as a reset */
	build(pp, 0x0a000005, 6118, 5000, 0x33, &qc);
	c = rxp_pkt_dequeue(&qc);
	rxp_tipc_bearer_rcv(b, c);
	rxp_pkt_queue_purge(&qc, RXP_DROP_NOT_SPECIFIED);
	rxp_tipc_bearer_destroy(b);
	rxp_pktpool_get_stats(pp, &ps);
	assert_int_equal(ps.drops[RXP_DROP_TIPC_LINK_RESET], 1);
	assert_int_equal(s.n, 2);
	rxpt_pktpool_teardown(pp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_peers_and_full_table),
		cmocka_unit_test(test_links_reassemble_apart),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
