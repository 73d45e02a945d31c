/*
 * Thread 001 on the sim NIC: 64 KiB datagrams (45 fragments at MTU 1500)
 * with 1% fragment loss cross a small ring (256 descriptors, 512 pages) into
 * a worker's reassembly table (4 MiB cap). Fragments whose datagram lost a
 * piece pin receive buffers until something frees them. rxpath copies ring
 * fragments out early and evicts stale queues, so goodput stays near what
 * loss alone allows; without coalescing and with Linux's "drop everything
 * while over the cap" the ring starves and goodput collapses.
 *
 * And thread 001's other collapse, overload: more datagrams in flight than
 * the cap holds (one IPv6 sender, 4 shuffled fragments, twice what 4 MiB
 * holds, through the same ring). rxpath finishes what it started and
 * delivers what the reference (tests/lib/overload.c, on the same frames)
 * does, within a margin; the Linux-like policy delivers nearly nothing.
 * Counts only, wide margins, no timing.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>

#include "overload.h"
#include "rxptest.h"
#include "rxpath/sim.h"
#include "rxpath/worker.h"

#define DGRAMS 1000

static uint64_t ok, bad;
static uint8_t buf[1 << 17];

static void on_dgram(void *arg, struct rxp_worker *w, struct rxp_pkt *pkt)
{
	if (rxp_pkt_copy_bits(pkt, 0, buf, pkt->len) || rxp_gen_verify(buf, pkt->len))
		bad++;
	else
		ok++;
	rxp_pkt_consume(pkt);
}

static uint64_t run_gen(const struct rxp_gen_config *gen, bool linux_like, uint64_t *no_buffer)
{
	struct rxp_pktpool *pp = rxp_pktpool_create(&(struct rxp_pktpool_config){
		.name = "s001", .n_pkts = 8192, .n_bufs = 4096, .n_large = 64});
	struct rxp_sim_config sc = {.nqueues = 1, .ring_size = 256, .n_pages = 512, .gen = gen};
	struct rxp_dev *dev = rxp_sim_open(&sc, pp);
	struct rxp_worker_group *g;
	struct rxp_dev_stats ds;

	assert_non_null(dev);
	g = rxp_worker_group_create(&(struct rxp_worker_config){
		.nworkers = 1,
		.dev = dev,
		.pp = pp,
		.defrag = {.pressure = linux_like ? RXP_DEFRAG_PRESSURE_LINUX
						  : RXP_DEFRAG_PRESSURE_EVICT,
			   .forward = linux_like},
		.on_datagram = on_dgram});
	assert_non_null(g);
	ok = bad = 0;
	while (rxp_worker_poll(rxp_worker_get(g, 0)) != -ENODATA)
		;
	rxp_dev_get_stats(dev, &ds);
	*no_buffer = ds.rx_no_buffer;
	rxp_worker_group_destroy(g);
	assert_int_equal(rxp_dev_close(dev), 0);
	rxpt_pktpool_teardown(pp);
	assert_int_equal(bad, 0);
	return ok;
}

static uint64_t run(bool linux_like, uint64_t *no_buffer)
{
	struct rxp_gen_config gc = {.seed = 1,
				    .count = DGRAMS,
				    .min_payload = 65000,
				    .max_payload = 65000,
				    .mtu = 1500,
				    .loss = 0.01,
				    .flows = 64};

	return run_gen(&gc, linux_like, no_buffer);
}

static void test_goodput_under_loss(void **state)
{
	double ideal = DGRAMS * pow(0.99, 45);
	uint64_t nb_r, nb_l, r = run(false, &nb_r), l = run(true, &nb_l);

	printf("[scenario_001] 1%% loss, %d datagrams: ideal %.0f, rxpath %llu (rx_no_buffer "
	       "%llu), "
	       "linux-like %llu (rx_no_buffer %llu)\n",
	       DGRAMS, ideal, (unsigned long long)r, (unsigned long long)nb_r,
	       (unsigned long long)l, (unsigned long long)nb_l);
	assert_true(r >= 0.8 * ideal);
	assert_true(l <= 0.3 * ideal);
}

static void test_goodput_under_overload(void **state)
{
	struct ovl_config c = {.seed = 4,
			       .dgrams = 3000,
			       .frags = 4,
			       .in_flight = 825,
			       .ipv6_pct = 100,
			       .shuffle = true};
	struct rxp_defrag_config dc = {.mem_limit = 4u << 20, .max_dist = -1};
	struct rxp_gen_config gc;
	struct ovl_result t;
	uint64_t ref, nb_r, nb_l, r, l;

	ovl_gen_config(&c, &gc);
	assert_int_equal(ovl_run_table(&c, &dc, &t), 0);
	ref = ovl_run_fwys(&c, 4u << 20, t.frag_truesize, t.qcharge);
	r = run_gen(&gc, false, &nb_r);
	l = run_gen(&gc, true, &nb_l);
	printf("[scenario_001] overload, 825 in flight (2x the cap), 3000 datagrams: reference "
	       "%llu, rxpath %llu (rx_no_buffer %llu), linux-like %llu (rx_no_buffer %llu)\n",
	       (unsigned long long)ref, (unsigned long long)r, (unsigned long long)nb_r,
	       (unsigned long long)l, (unsigned long long)nb_l);
	assert_true(ref >= 1000);
	assert_true(r >= 0.85 * ref);
	assert_true(l <= 0.1 * ref);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_goodput_under_loss),
		cmocka_unit_test(test_goodput_under_overload),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
