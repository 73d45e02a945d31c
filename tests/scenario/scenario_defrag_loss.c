/*
 * The source thread's scenario at the library level: 64 KiB UDP datagrams
 * over a 1500-byte MTU (45 fragments each), a fixed loss rate per fragment,
 * a 4 MiB reassembly cap and the 30 s timeout (which never fires within
 * the run, as on a fast link). Lost fragments leave stale queues behind.
 * With rxpath's pressure policy (evict stale and sparse queues, always
 * admit completing fragments) the delivered datagrams stay near the ideal
 * (1 - loss)^45; with the Linux-like policy (drop everything while over the
 * cap) they collapse once stale queues fill the cap. Asserted on counts with
 * a wide margin (six standard deviations); the table for 0..5% loss is
 * printed. (The full scenario with the simulated NIC ring and page pool
 * needs the sim NIC: not here.)
 */
#include <math.h>
#include <stdio.h>

#include "../unit/defrag_test.h"

#define NFRAG 45
#define FPAY 1448u /* 45 * 1448 = 65160 payload bytes */

static uint64_t run(enum rxp_defrag_pressure pr, double loss, uint32_t ndg, struct rxpt_rng *rng)
{
	struct rxp_pktpool_config pc = {
		.name = "loss", .n_pkts = 8192, .n_bufs = 8192, .n_large = 4};
	struct rxp_pktpool *pp = rxp_pktpool_create(&pc);
	struct rxp_defrag_config c = {.pressure = pr, .max_dist = -1};
	struct rxp_defrag_table *t = rxp_defrag_table_create(&c);
	static uint8_t pl[NFRAG * FPAY];
	uint64_t now = 0, ok;

	assert_non_null(pp);
	assert_non_null(t);
	rxpt_fill(pl, sizeof(pl), 1);
	for (uint32_t d = 0; d < ndg; d++) {
		struct dt4 h = {.id = (uint16_t)d, .src = htonl(0x0a000000u + (d >> 16))};

		for (uint32_t i = 0; i < NFRAG; i++) {
			struct rxp_pkt *r;

			now += 1000; /* 1 us per fragment: ~12 Gbit/s */
			if (rxpt_rng_below(rng, 1000000) < (uint64_t)(loss * 1e6))
				continue;
			r = rxp_defrag(t, dt_frag4(pp, &h, pl, i * FPAY, FPAY, i + 1 < NFRAG), now);
			if (r) {
				/* only the fragment that completes d delivers,
				 * and then d whole */
				struct rxp_iphdr ip;

				assert_int_equal(i, NFRAG - 1);
				assert_int_equal(rxp_pkt_copy_bits(r, 0, &ip, sizeof(ip)), 0);
				assert_int_equal(ntohs(ip.id), h.id);
				dt_check_payload(r, 20, pl, sizeof(pl));
				rxp_pkt_consume(r);
			}
		}
		rxp_defrag_expire(t, now);
	}
	ok = dt_ctr(t).ReasmOKs;
	rxp_defrag_table_destroy(t);
	rxpt_pktpool_teardown(pp);
	return ok;
}

static void test_goodput_vs_loss(void **state)
{
	static const double losses[] = {0, 0.001, 0.005, 0.01, 0.02, 0.05};
	const uint32_t ndg = 2000;
	struct rxpt_rng rng;

	rxpt_rng_seed(&rng, rxpt_seed("defrag_loss"));
	printf("%-8s %10s %14s %14s\n", "loss", "ideal", "rxpath-evict", "linux-like");
	for (unsigned i = 0; i < sizeof(losses) / sizeof(losses[0]); i++) {
		double ideal = ndg * pow(1 - losses[i], NFRAG);
		uint64_t ev = run(RXP_DEFRAG_PRESSURE_EVICT, losses[i], ndg, &rng);
		uint64_t lx = run(RXP_DEFRAG_PRESSURE_LINUX, losses[i], ndg, &rng);

		printf("%6.1f%% %10.0f %14lu %14lu\n", losses[i] * 100, ideal, ev, lx);
		/* rxpath stays near the ideal at every loss rate: within six
		 * standard deviations of the binomial count (a bound a correct
		 * run misses about once in 10^9), and never below half. */
		assert_true(ev >= ideal - 6 * sqrt(ideal) && ev >= 0.5 * ideal);
		/* From 1% on, stale queues fill the cap and Linux-like collapses. */
		if (losses[i] >= 0.01)
			assert_true(lx < 0.5 * ideal);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_goodput_vs_loss),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
