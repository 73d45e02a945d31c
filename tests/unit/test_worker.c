/* Unit tests for the worker poll loop (src/core/worker.c): delivery through
 * the whole pipeline, steering between workers, TIPC on port 6118 (also
 * from more peers than the worker has links for), and teardown with
 * nothing outstanding. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rxptest.h"
#include "tipctest.h"
#include "rxpath/ipid.h"
#include "rxpath/sim.h"
#include "rxpath/worker.h"
#include "rxpath/workload.h"

struct sinkstat {
	uint64_t datagrams, messages, bad;
	uint8_t buf[1 << 17];
};

static void on_dgram(void *arg, struct rxp_worker *w, struct rxp_pkt *pkt)
{
	struct sinkstat *s = arg;

	if (rxp_pkt_copy_bits(pkt, 0, s->buf, pkt->len) || rxp_gen_verify(s->buf, pkt->len))
		s->bad++;
	s->datagrams++;
	rxp_pkt_consume(pkt);
}

static void on_msg(void *arg, struct rxp_worker *w, struct rxp_pkt *pkt)
{
	struct sinkstat *s = arg;
	uint8_t h[24];
	uint32_t hs;

	assert_int_equal(rxp_pkt_copy_bits(pkt, 0, h, 24), 0);
	hs = rxp_tipc_hsize(h);
	if (rxp_pkt_copy_bits(pkt, hs, s->buf, pkt->len - hs) ||
	    rxp_gen_verify(s->buf, pkt->len - hs))
		s->bad++;
	s->messages++;
	rxp_pkt_consume(pkt);
}

static struct rxp_pktpool *mkpool(void)
{
	struct rxp_pktpool *pp = rxp_pktpool_create(&(struct rxp_pktpool_config){
		.name = "w", .n_pkts = 8192, .n_bufs = 4096, .n_large = 64});

	assert_non_null(pp);
	return pp;
}

/* Poll every worker from this thread until all report -ENODATA. */
static void poll_all(struct rxp_worker_group *g, unsigned n)
{
	unsigned done;

	do {
		done = 0;
		for (unsigned i = 0; i < n; i++)
			done += rxp_worker_poll(rxp_worker_get(g, i)) == -ENODATA;
	} while (done < n);
}

/* Plain generator traffic, no loss: every datagram arrives, intact. */
static void test_generator_all_delivered(void **state)
{
	static struct sinkstat s;
	struct rxp_pktpool *pp = mkpool();
	struct rxp_gen_config gc = {.seed = 7,
				    .count = 3000,
				    .min_payload = 16,
				    .max_payload = 20000,
				    .ipv6_pct = 40,
				    .mtu = 1500};
	struct rxp_sim_config sc = {.nqueues = 1, .ring_size = 512, .gen = &gc};
	struct rxp_dev *dev = rxp_sim_open(&sc, pp);
	struct rxp_worker_group *g;
	struct rxp_worker_stats st;
	struct rxp_ip_stats i4, i6;
	struct rxp_udp_stats u;
	struct rxp_defrag_counters rc;
	struct rxp_tipc_link_stats ts;

	memset(&s, 0, sizeof(s));
	assert_non_null(dev);
	g = rxp_worker_group_create(&(struct rxp_worker_config){
		.nworkers = 1, .dev = dev, .pp = pp, .on_datagram = on_dgram, .arg = &s});
	assert_non_null(g);
	poll_all(g, 1);
	rxp_worker_group_stats(g, &st, &i4, &i6, &u, &rc, &ts);
	assert_int_equal(s.datagrams, 3000);
	assert_int_equal(s.bad, 0);
	assert_int_equal(st.datagrams, 3000);
	assert_int_equal(u.InDatagrams, 3000);
	assert_true(rc.ReasmOKs > 0);
	assert_int_equal(rc.ReasmFails, 0);
	assert_true(i6.InReceives > 0 && i4.InReceives > 0);
	rxp_worker_group_destroy(g);
	assert_int_equal(rxp_dev_close(dev), 0);
	rxpt_pktpool_teardown(pp);
}

/* Two workers, one queue: worker 0 receives everything and steers half
 * (by L3 hash) to worker 1; nothing is lost or reassembled wrongly. */
static void test_steering(void **state)
{
	static struct sinkstat s;
	struct rxp_pktpool *pp = mkpool();
	struct rxp_gen_config gc = {.seed = 9,
				    .count = 2000,
				    .min_payload = 16,
				    .max_payload = 9000,
				    .mtu = 1500,
				    .flows = 32};
	struct rxp_sim_config sc = {.nqueues = 1, .ring_size = 512, .gen = &gc};
	struct rxp_dev *dev = rxp_sim_open(&sc, pp);
	struct rxp_worker_group *g;
	struct rxp_worker_stats st, w1;
	struct rxp_ip_stats i4, i6;
	struct rxp_udp_stats u;
	struct rxp_defrag_counters rc;
	struct rxp_tipc_link_stats ts;

	memset(&s, 0, sizeof(s));
	g = rxp_worker_group_create(&(struct rxp_worker_config){
		.nworkers = 2, .dev = dev, .pp = pp, .on_datagram = on_dgram, .arg = &s});
	assert_non_null(g);
	poll_all(g, 2);
	rxp_worker_group_stats(g, &st, &i4, &i6, &u, &rc, &ts);
	rxp_worker_get_stats(rxp_worker_get(g, 1), &w1);
	assert_int_equal(s.datagrams, 2000);
	assert_int_equal(s.bad, 0);
	assert_true(st.steered_out > 0);
	assert_int_equal(st.steered_out, st.steered_in);
	assert_true(w1.datagrams > 0); /* worker 1 polled no queue, yet delivered */
	assert_int_equal(w1.rx_frames, 0);
	rxp_worker_group_destroy(g);
	assert_int_equal(rxp_dev_close(dev), 0);
	rxpt_pktpool_teardown(pp);
}

static struct rxp_workload_config wl;

static struct rxp_src *open_wl(void *arg)
{
	return rxp_workload_src(&wl);
}

/* The mixed workload with faults: TIPC messages and datagrams arrive intact,
 * faults are counted, nothing is outstanding at the end. */
static void test_mixed_workload(void **state)
{
	static struct sinkstat s;
	struct rxp_pktpool *pp = mkpool();
	struct rxp_sim_config sc = {.nqueues = 2,
				    .ring_size = 512,
				    .zero_len_rate = 0.01,
				    .seed = 3,
				    .src_open = open_wl};
	struct rxp_dev *dev;
	struct rxp_worker_group *g;
	struct rxp_worker_stats st;
	struct rxp_ip_stats i4, i6;
	struct rxp_udp_stats u;
	struct rxp_defrag_counters rc;
	struct rxp_tipc_link_stats ts;
	struct rxp_dev_stats ds;

	memset(&s, 0, sizeof(s));
	wl = (struct rxp_workload_config){.seed = rxpt_seed("mixed_workload"), .frames = 30000};
	dev = rxp_sim_open(&sc, pp);
	assert_non_null(dev);
	g = rxp_worker_group_create(&(struct rxp_worker_config){.nworkers = 2,
								.dev = dev,
								.pp = pp,
								.tipc = true,
								.on_datagram = on_dgram,
								.on_message = on_msg,
								.arg = &s});
	assert_non_null(g);
	poll_all(g, 2);
	rxp_worker_group_stats(g, &st, &i4, &i6, &u, &rc, &ts);
	rxp_dev_get_stats(dev, &ds);
	assert_true(s.datagrams > 100);
	assert_true(s.messages > 100);
	assert_int_equal(s.bad, 0);
	assert_int_equal(ts.delivered, s.messages);
	assert_true(ts.bundles > 0 && ts.reassembled > 0);
	assert_true(ds.zero_len_descs > 0);
	rxp_worker_group_destroy(g);
	assert_int_equal(rxp_dev_close(dev), 0);
	rxpt_pktpool_teardown(pp);
}

/* ---- TIPC from more peers than links ------------------------------------- */

#define TP_PEERS (RXP_WORKER_TIPC_PEERS + 8)
#define TP_MSGS 12
#define TP_MAX_FRAMES (TP_PEERS * TP_MSGS * 8)

static struct {
	uint8_t f[TP_MAX_FRAMES][1600];
	uint32_t len[TP_MAX_FRAMES];
	unsigned n, next;
} tp;

static int tp_next(struct rxp_src *src, uint8_t *buf, uint32_t cap, uint32_t *len)
{
	if (tp.next == tp.n)
		return -ENODATA;
	assert_true(cap >= tp.len[tp.next]);
	memcpy(buf, tp.f[tp.next], tp.len[tp.next]);
	*len = tp.len[tp.next++];
	return 0;
}

static void tp_close(struct rxp_src *src)
{
}

static struct rxp_src tp_src = {.next = tp_next, .close = tp_close};

static struct rxp_src *tp_open(void *arg)
{
	tp.next = 0;
	return &tp_src;
}

/* Every peer sends TP_MSGS messages of 5000 bytes (four fragments each at
 * MTU 1500) over its own UDP bearer; frames of all peers interleave, a
 * datagram of each in turn, so each link reassembles while the others do.
 * Frames are Ethernet, as the sim NIC carries them. */
static void tp_build(struct rxp_pktpool *pp)
{
	struct rxp_pkt_queue out[TP_PEERS];
	unsigned left = 0;
	struct rxp_ipid_table *ids = rxp_ipid_create(&(struct rxp_ipid_config){.n_buckets = 64});

	assert_non_null(ids);
	tp.n = 0;
	for (unsigned p = 0; p < TP_PEERS; p++) {
		struct rxp_tipc_udp_peer peer = {.saddr = htonl(0x0a010000u + p + 1),
						 .daddr = htonl(0x0a020001u),
						 .mtu = 1500,
						 .ids = ids};
		struct rxp_pkt_queue msgs;
		static uint8_t b[5000];

		rxp_pkt_queue_init(&msgs);
		rxp_pkt_queue_init(&out[p]);
		for (unsigned m = 0; m < TP_MSGS; m++) {
			tt_write_msg(b, 0, 0, 24, sizeof(b), p * 100 + m);
			rxp_gen_fill_payload(b + 24, sizeof(b) - 24, p * 100 + m, p + 1);
			rxp_pkt_enqueue(&msgs, tt_raw(pp, b, sizeof(b)));
		}
		assert_true(rxp_tipc_udp_build(pp, &peer, &msgs, &out[p]) > 0);
		left += out[p].len;
	}
	rxp_ipid_destroy(ids);
	while (left)
		for (unsigned p = 0; p < TP_PEERS; p++) {
			struct rxp_pkt *d = rxp_pkt_dequeue(&out[p]);
			uint8_t *f = tp.f[tp.n];

			if (!d)
				continue;
			assert_true(tp.n < TP_MAX_FRAMES && d->len + 14 <= sizeof(tp.f[0]));
			memset(f, 0, 12);
			f[0] = 2;
			f[5] = 2;
			f[6] = 2;
			f[12] = 0x08;
			f[13] = 0x00;
			assert_int_equal(rxp_pkt_copy_bits(d, 0, f + 14, d->len), 0);
			tp.len[tp.n++] = d->len + 14;
			rxp_pkt_consume(d);
			left--;
		}
}

/* The worker has RXP_WORKER_TIPC_PEERS links: the first peers get them and
 * every message of theirs is reassembled and delivered while the others'
 * interleave; the peers past the limit are refused and counted, so goodput
 * is what the limit allows, never less, and nothing is left behind. */
static void test_tipc_more_peers_than_links(void **state)
{
	static struct sinkstat s;
	/* the messages' own buffers stay referenced until the frames are made */
	struct rxp_pktpool *pp = rxp_pktpool_create(&(struct rxp_pktpool_config){
		.name = "tp", .n_pkts = 8192, .n_bufs = 4096, .n_large = TP_PEERS * TP_MSGS + 64});
	struct rxp_sim_config sc = {.nqueues = 1, .ring_size = 512, .src_open = tp_open};
	struct rxp_dev *dev;
	struct rxp_worker_group *g;
	struct rxp_worker_stats st;
	struct rxp_ip_stats i4, i6;
	struct rxp_udp_stats u;
	struct rxp_defrag_counters rc;
	struct rxp_tipc_link_stats ts;
	struct rxp_pktpool_stats ps;

	memset(&s, 0, sizeof(s));
	tp_build(pp);
	dev = rxp_sim_open(&sc, pp);
	assert_non_null(dev);
	g = rxp_worker_group_create(&(struct rxp_worker_config){.nworkers = 1,
								.dev = dev,
								.pp = pp,
								.tipc = true,
								.on_message = on_msg,
								.arg = &s});
	assert_non_null(g);
	poll_all(g, 1);
	rxp_worker_group_stats(g, &st, &i4, &i6, &u, &rc, &ts);
	rxp_pktpool_get_stats(pp, &ps);
	assert_int_equal(s.bad, 0);
	assert_int_equal(s.messages, RXP_WORKER_TIPC_PEERS * TP_MSGS);
	assert_int_equal(ts.reassembled, RXP_WORKER_TIPC_PEERS * TP_MSGS);
	assert_int_equal(ps.drops[RXP_DROP_TIPC_NO_LINK],
			 (uint64_t)(TP_PEERS - RXP_WORKER_TIPC_PEERS) * (tp.n / TP_PEERS));
	assert_int_equal(ts.drop[RXP_DROP_TIPC_FRAG_SEQ], 0);
	rxp_worker_group_destroy(g);
	assert_int_equal(rxp_dev_close(dev), 0);
	rxpt_pktpool_teardown(pp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_generator_all_delivered),
		cmocka_unit_test(test_steering),
		cmocka_unit_test(test_mixed_workload),
		cmocka_unit_test(test_tipc_more_peers_than_links),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
