/* Unit tests for the worker poll loop (src/core/worker.c): delivery through
 * the whole pipeline, steering between workers, TIPC on port 6118, and
 * teardown with nothing outstanding. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rxptest.h"
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_generator_all_delivered),
		cmocka_unit_test(test_steering),
		cmocka_unit_test(test_mixed_workload),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
