/*
 * rxpath bench goodput: thread 001's picture on the sim NIC. 64 KiB UDP
 * datagrams (45 fragments at MTU 1500) cross a small receive ring and page
 * pool into one worker's reassembly table with a 4 MiB cap, at fragment loss
 * rates of 0 to 5%. Two variants, same traffic, same run:
 *   rxpath      local delivery (fragments coalesced), pressure policy that
 *               evicts stale and sparse queues and admits completing ones;
 *   linux-like  no coalescing (fragment boundaries kept) and "drop every
 *               fragment while over the cap" (Linux's high_thresh).
 * Goodput is the share of datagrams delivered intact; "ideal" is what loss
 * alone allows, (1 - loss)^45. The counts are deterministic from the seed;
 * the rates are medians of --runs. Writes goodput.csv and goodput.png.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "benchlib.h"
#include "rxpath/sim.h"
#include "rxpath/worker.h"

#define DGRAMS 3000
#define FRAGS 45

static const double losses[] = {0, 0.001, 0.005, 0.01, 0.02, 0.05};

struct result {
	uint64_t delivered, bad, rx_no_buffer, mem_drops, evictions;
	double secs;
};

static uint8_t vbuf[1 << 17];
static uint64_t ok, bad;

static void on_dgram(void *arg, struct rxp_worker *w, struct rxp_pkt *pkt)
{
	if (rxp_pkt_copy_bits(pkt, 0, vbuf, pkt->len) || rxp_gen_verify(vbuf, pkt->len))
		bad++;
	else
		ok++;
	rxp_pkt_consume(pkt);
}

static int run_one(double loss, bool linux_like, unsigned count, struct result *r)
{
	struct rxp_pktpool *pp = rxp_pktpool_create(&(struct rxp_pktpool_config){
		.name = "goodput", .n_pkts = 8192, .n_bufs = 4096, .n_large = 64});
	struct rxp_gen_config gc = {.seed = 1,
				    .count = count,
				    .min_payload = 65000,
				    .max_payload = 65000,
				    .mtu = 1500,
				    .loss = loss,
				    .flows = 64};
	struct rxp_sim_config sc = {.nqueues = 1, .ring_size = 256, .n_pages = 512, .gen = &gc};
	struct rxp_dev *dev;
	struct rxp_worker_group *g;
	struct rxp_worker_stats st;
	struct rxp_ip_stats i4, i6;
	struct rxp_udp_stats u;
	struct rxp_defrag_counters rc;
	struct rxp_tipc_link_stats ts;
	struct rxp_dev_stats ds;
	uint64_t t0;

	if (!pp)
		return -ENOMEM;
	dev = rxp_sim_open(&sc, pp);
	g = dev ? rxp_worker_group_create(&(struct rxp_worker_config){
			  .nworkers = 1,
			  .dev = dev,
			  .pp = pp,
			  .defrag = {.mem_limit = 4u << 20,
				     .pressure = linux_like ? RXP_DEFRAG_PRESSURE_LINUX
							    : RXP_DEFRAG_PRESSURE_EVICT,
				     .forward = linux_like},
			  .on_datagram = on_dgram})
		: NULL;
	if (!g) {
		rxp_dev_close(dev);
		rxp_pktpool_destroy(pp);
		return -ENOMEM;
	}
	ok = bad = 0;
	t0 = bench_now_ns();
	while (rxp_worker_poll(rxp_worker_get(g, 0)) != -ENODATA)
		;
	r->secs = (double)(bench_now_ns() - t0) / 1e9;
	rxp_worker_group_stats(g, &st, &i4, &i6, &u, &rc, &ts);
	rxp_dev_get_stats(dev, &ds);
	r->delivered = ok;
	r->bad = bad;
	r->rx_no_buffer = ds.rx_no_buffer;
	r->mem_drops = rc.mem_drops;
	r->evictions = rc.evictions;
	rxp_worker_group_destroy(g);
	if (rxp_dev_close(dev) || rxp_pktpool_destroy(pp))
		fprintf(stderr, "bench goodput: leak after a run!\n");
	return 0;
}

int main(int argc, char **argv)
{
	struct bench_opts o;
	struct bench_table t = {.name = "goodput"};
	unsigned count;
	FILE *dat = NULL;
	char path[1024];

	bench_parse(argc, argv, &o, "goodput",
		    "Thread 001's picture: goodput of 64 KiB datagrams vs fragment loss through\n"
		    "the sim NIC (ring 256, 512 pages) and a 4 MiB reassembly cap, rxpath vs a\n"
		    "Linux-like policy (no coalescing, drop everything while over the cap).");
	count = o.quick ? 600 : DGRAMS;
	if (o.outdir) {
		snprintf(path, sizeof(path), "%s/goodput.dat", o.outdir);
		dat = fopen(path, "w");
	}
	printf("goodput: %u datagrams of 65000 bytes (%d fragments), ring 256, 512 pages, 4 MiB "
	       "cap\n",
	       count, FRAGS);
	printf("%-8s %8s %10s %12s %10s %12s %12s\n", "loss", "ideal", "rxpath", "linux-like",
	       "ratio", "rx_no_buf(r)", "rx_no_buf(l)");
	for (size_t i = 0; i < sizeof(losses) / sizeof(losses[0]); i++) {
		double ideal = count * pow(1 - losses[i], FRAGS), rate_r[64], rate_l[64];
		struct result rr = {0}, rl = {0};
		char g[48];

		for (int k = 0; k < o.runs; k++) {
			if (run_one(losses[i], false, count, &rr) ||
			    run_one(losses[i], true, count, &rl))
				return 1;
			rate_r[k] = rr.delivered / rr.secs;
			rate_l[k] = rl.delivered / rl.secs;
		}
		if (rr.bad || rl.bad)
			fprintf(stderr, "bench goodput: corrupted datagrams!\n");
		printf("%-7.1f%% %8.0f %10llu %12llu %9.1fx %12llu %12llu\n", losses[i] * 100,
		       ideal, (unsigned long long)rr.delivered, (unsigned long long)rl.delivered,
		       rl.delivered ? (double)rr.delivered / rl.delivered : INFINITY,
		       (unsigned long long)rr.rx_no_buffer, (unsigned long long)rl.rx_no_buffer);
		snprintf(g, sizeof(g), "loss %.1f%% delivered", losses[i] * 100);
		bench_add(&t, g, "ideal", "dgrams", ideal, 0, NULL);
		bench_add(&t, g, "linux-like", "dgrams", (double)rl.delivered, 0, NULL);
		bench_add(&t, g, "rxpath", "dgrams", (double)rr.delivered, 0, "linux-like");
		snprintf(g, sizeof(g), "loss %.1f%% rate", losses[i] * 100);
		bench_add(&t, g, "linux-like", "dgram/s", bench_median(rate_l, o.runs), 0, NULL);
		bench_add(&t, g, "rxpath", "dgram/s", bench_median(rate_r, o.runs), 0,
			  "linux-like");
		if (dat)
			fprintf(dat, "%.1f %.1f %llu %llu\n", losses[i] * 100, 100 * ideal / count,
				(unsigned long long)(100 * rr.delivered / count),
				(unsigned long long)(100 * rl.delivered / count));
	}
	bench_report(&t, &o);
	if (dat) {
		char cmd[3000];

		fclose(dat);
		if (system("command -v gnuplot >/dev/null 2>&1") == 0) {
			snprintf(cmd, sizeof(cmd),
				 "gnuplot -e \"set terminal png size 900,520; set output "
				 "'%s/goodput.png';"
				 " set title 'Goodput of 64 KiB datagrams vs fragment loss (sim "
				 "NIC, 4 MiB cap)';"
				 " set xlabel 'fragment loss (%%)'; set ylabel 'datagrams "
				 "delivered (%%)';"
				 " set key top right; set grid; set yrange [0:105];"
				 " plot '%s' u 1:2 w lp t 'ideal (loss only)', '' u 1:3 w lp t "
				 "'rxpath',"
				 " '' u 1:4 w lp t 'linux-like (no coalescing, drop over cap)'\"",
				 o.outdir, path);
			if (system(cmd))
				fprintf(stderr, "bench goodput: gnuplot failed\n");
		}
	}
	return 0;
}
