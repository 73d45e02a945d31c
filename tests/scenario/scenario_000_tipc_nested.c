/*
 * Thread 000 through the whole receive path: crafted TIPC-over-UDP traffic
 * (a bundle hiding an inner MSG_BUNDLER between two data messages, and a
 * fragment pair whose reassembled message is itself a MSG_FRAGMENTER) is
 * written to a pcap, read by the pcap device and run through a worker: IPv4
 * input, UDP port 6118, the TIPC link. In the kernel thread each such packet
 * leaked a buffer. Here: the siblings are delivered, each control user is
 * dropped with its own reason, and after ROUNDS of it nothing is outstanding.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tipctest.h"
#include "rxpath/dev.h"
#include "rxpath/wire.h"
#include "rxpath/worker.h"

#define ROUNDS 2000

static uint64_t delivered;

static void on_msg(void *arg, struct rxp_worker *w, struct rxp_pkt *pkt)
{
	delivered++;
	rxp_pkt_consume(pkt);
}

/* Ethernet + IPv4 + UDP (6118 -> 6118) around a TIPC payload. */
static uint32_t frame(uint8_t *f, const uint8_t *tipc, uint32_t tlen, uint16_t id)
{
	struct rxp_iphdr *ip = (struct rxp_iphdr *)(void *)(f + RXP_ETH_HLEN);
	struct rxp_udphdr *uh = (struct rxp_udphdr *)(void *)(f + RXP_ETH_HLEN + 20);

	memcpy(f, "\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01\x08\x00", RXP_ETH_HLEN);
	memset(ip, 0, 20);
	ip->ver_ihl = 0x45;
	ip->tot_len = htons((uint16_t)(28 + tlen));
	ip->id = htons(id);
	ip->ttl = 64;
	ip->protocol = RXP_IPPROTO_UDP;
	ip->saddr = htonl(0x0a010001);
	ip->daddr = htonl(0x0a020001);
	ip->check = rxp_ip_csum(ip, 20);
	uh->source = htons(RXP_TIPC_UDP_PORT);
	uh->dest = htons(RXP_TIPC_UDP_PORT);
	uh->len = htons((uint16_t)(8 + tlen));
	uh->check = 0; /* optional over IPv4 */
	memcpy(f + RXP_ETH_HLEN + 28, tipc, tlen);
	return RXP_ETH_HLEN + 28 + tlen;
}

static void put_msg(struct tt_bundle *b, unsigned user, uint32_t size, uint32_t seed)
{
	tt_write_msg(tt_bundle_put(b, size), user, 0, 40, size, seed);
}

static void test_nested_users_through_the_pipeline(void **state)
{
	char path[] = "/tmp/rxp-s000-XXXXXX";
	int fd = mkstemp(path);
	struct rxp_pcap_writer *wr;
	struct rxp_pktpool *pp = tt_pool();
	static struct tt_bundle b;
	static uint8_t f[2048], inner[600];
	struct rxp_worker_group *g;
	struct rxp_dev *dev;
	struct rxp_worker_stats st;
	struct rxp_ip_stats i4, i6;
	struct rxp_udp_stats u;
	struct rxp_defrag_counters rc;
	struct rxp_tipc_link_stats ts;
	uint16_t id = 1;

	assert_true(fd >= 0);
	close(fd);
	wr = rxp_pcap_writer_open(path, false);
	assert_non_null(wr);
	for (unsigned r = 0; r < ROUNDS; r++) {
		struct rxp_pkt *p;
		uint8_t tb[700];

		/* a bundle: data, an inner BUNDLER, data */
		tt_bundle_begin(&b, 40);
		put_msg(&b, RXP_TIPC_LOW_IMPORTANCE, 60, r);
		put_msg(&b, RXP_TIPC_MSG_BUNDLER, 64, r);
		put_msg(&b, RXP_TIPC_HIGH_IMPORTANCE, 300, r); /* above the copy break */
		tt_bundle_finish(&b, 3);
		assert_int_equal(
			rxp_pcap_writer_write(wr, f, frame(f, b.buf, b.len, id++), 1000000ull * r),
			0);
		/* a FIRST and LAST fragment pair carrying a MSG_FRAGMENTER message */
		tt_write_msg(inner, RXP_TIPC_MSG_FRAGMENTER, 0, 40, sizeof(inner), r);
		p = tt_frag(pp, RXP_TIPC_FIRST_FRAGMENT, 1, inner, 300, 40);
		assert_int_equal(rxp_pkt_copy_bits(p, 0, tb, p->len), 0);
		assert_int_equal(rxp_pcap_writer_write(wr, f, frame(f, tb, p->len, id++),
						       1000000ull * r + 1),
				 0);
		rxp_pkt_consume(p);
		p = tt_frag(pp, RXP_TIPC_LAST_FRAGMENT, 2, inner + 300, sizeof(inner) - 300, 40);
		assert_int_equal(rxp_pkt_copy_bits(p, 0, tb, p->len), 0);
		assert_int_equal(rxp_pcap_writer_write(wr, f, frame(f, tb, p->len, id++),
						       1000000ull * r + 2),
				 0);
		rxp_pkt_consume(p);
	}
	assert_int_equal(rxp_pcap_writer_close(wr), 0);

	dev = rxp_pcap_open(path, pp);
	assert_non_null(dev);
	g = rxp_worker_group_create(&(struct rxp_worker_config){.nworkers = 1,
								.dev = dev,
								.pp = pp,
								.tipc = true,
								.on_message = on_msg,
								.wire_time = true});
	assert_non_null(g);
	while (rxp_worker_poll(rxp_worker_get(g, 0)) != -ENODATA)
		;
	rxp_worker_group_stats(g, &st, &i4, &i6, &u, &rc, &ts);
	printf("[scenario_000] %u rounds: %llu messages delivered, nested bundler drops %llu, "
	       "nested fragmenter drops %llu, packets outstanding before teardown %llu\n",
	       ROUNDS, (unsigned long long)delivered,
	       (unsigned long long)ts.drop[RXP_DROP_TIPC_NESTED_BUNDLE],
	       (unsigned long long)ts.drop[RXP_DROP_TIPC_NESTED_FRAGMENT],
	       (unsigned long long)rxp_pktpool_pkts_outstanding(pp));
	assert_int_equal(delivered, 2 * ROUNDS);
	assert_int_equal(ts.drop[RXP_DROP_TIPC_NESTED_BUNDLE], ROUNDS);
	assert_int_equal(ts.drop[RXP_DROP_TIPC_NESTED_FRAGMENT], ROUNDS);
	assert_int_equal(ts.reassembled, ROUNDS);
	/* every crafted packet is gone already, not just at teardown */
	assert_int_equal(rxp_pktpool_pkts_outstanding(pp), 0);
	rxp_worker_group_destroy(g);
	assert_int_equal(rxp_dev_close(dev), 0);
	unlink(path);
	rxpt_pktpool_teardown(pp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nested_users_through_the_pipeline),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
