/*
 * rxpath bench goodput: reassembly goodput under loss, overload and attack.
 *
 * Loss (thread 001's picture on the sim NIC). 64 KiB UDP
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
 *
 * Overload (issue #16): one IPv6 sender, datagrams of 4 shuffled 1448-byte
 * fragments, W in flight round-robin, a 4 MiB cap, W from half to 100 times
 * what the cap holds (working set = W datagrams' truesize). Variants on the
 * same frames (tests/lib/overload.c): the reference (finish what you started,
 * knowing each loss at once), rxpath, the Linux-like policy, and the kernel
 * of this machine (the frames replayed into a namespace with its default
 * sysctls by bench/kernel_reasm.sh; needs root and tcpreplay, up to 20x).
 * Then other shapes (2, 8 and 45 fragments, IPv4 in order, 1% loss) against
 * the reference, and a FragmentSmack-style attacker at ten times the
 * legitimate fragment rate: legitimate goodput with it against alone.
 * Counts are deterministic (one run each). Writes overload.png.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "benchlib.h"
#include "overload.h"
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

static int loss_table(const struct bench_opts *o, struct bench_table *t)
{
	unsigned count;
	FILE *dat = NULL;
	char path[1024];

	count = o->quick ? 600 : DGRAMS;
	if (o->outdir) {
		snprintf(path, sizeof(path), "%s/goodput.dat", o->outdir);
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

		for (int k = 0; k < o->runs; k++) {
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
		bench_add(t, g, "ideal", "dgrams", ideal, 0, NULL);
		bench_add(t, g, "linux-like", "dgrams", (double)rl.delivered, 0, NULL);
		bench_add(t, g, "rxpath", "dgrams", (double)rr.delivered, 0, "linux-like");
		snprintf(g, sizeof(g), "loss %.1f%% rate", losses[i] * 100);
		bench_add(t, g, "linux-like", "dgram/s", bench_median(rate_l, o->runs), 0, NULL);
		bench_add(t, g, "rxpath", "dgram/s", bench_median(rate_r, o->runs), 0,
			  "linux-like");
		if (dat)
			fprintf(dat, "%.1f %.1f %llu %llu\n", losses[i] * 100, 100 * ideal / count,
				(unsigned long long)(100 * rr.delivered / count),
				(unsigned long long)(100 * rl.delivered / count));
	}
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
				 o->outdir, path);
			if (system(cmd))
				fprintf(stderr, "bench goodput: gnuplot failed\n");
		}
	}
	return 0;
}

/* ---- overload and attack ---------------------------------------------------- */

#define OVL_CAP (4u << 20)
#define OVL_KERNEL_MAX_RATIO 20

/* The kernel's reassembly on c's frames: datagrams it reassembled, or -1
 * when it could not be run (not root, no tcpreplay: said once). */
static long kernel_goodput(const struct bench_opts *o, const struct ovl_config *c)
{
	static int unavailable;
	const char *script = getenv("RXP_KREASM") ? getenv("RXP_KREASM") : RXP_KREASM_SCRIPT;
	char pcap[512], cmd[1200];
	unsigned long v[7];
	long r = -1;
	FILE *p;

	if (unavailable)
		return -1;
	snprintf(pcap, sizeof(pcap), "%s/overload-kernel.pcap", o->outdir ? o->outdir : "/tmp");
	if (ovl_write_pcap(c, pcap) < 0)
		return -1;
	snprintf(cmd, sizeof(cmd), "bash '%s' '%s' 2>&1", script, pcap);
	p = popen(cmd, "r");
	if (p) {
		char line[512] = "";

		if (fgets(line, sizeof(line), p) &&
		    sscanf(line, "%lu %lu %lu %lu %lu %lu %lu", &v[0], &v[1], &v[2], &v[3], &v[4],
			   &v[5], &v[6]) == 7) {
			r = (long)(v[1] + v[4]);
			if (v[6])
				fprintf(stderr,
					"bench goodput: the kernel's veth dropped %lu frames of "
					"the "
					"replay\n",
					v[6]);
		} else {
			fprintf(stderr, "bench goodput: no kernel column: %s", line);
			unavailable = 1;
		}
		pclose(p);
	}
	unlink(pcap);
	return r;
}

static unsigned w_for(double ratio, unsigned k)
{
	return (unsigned)(ratio * OVL_CAP / (k * 2544.0)) + 1;
}

static int overload_table(const struct bench_opts *o, struct bench_table *t)
{
	static const double ratios[] = {0.5, 1, 1.25, 2, 5, 10, 20, 50, 100};
	FILE *dat = NULL;
	char path[1024];

	if (o->outdir) {
		snprintf(path, sizeof(path), "%s/overload.dat", o->outdir);
		dat = fopen(path, "w");
	}
	printf("\noverload: one IPv6 sender, 4 shuffled fragments, %u MiB cap; datagrams "
	       "delivered\n",
	       OVL_CAP >> 20);
	printf("%-10s %7s %8s %10s %10s %12s %8s %7s\n", "set/cap", "in fl.", "datagr.",
	       "reference", "rxpath", "linux-like", "kernel", "r/ref");
	for (size_t i = 0; i < sizeof(ratios) / sizeof(ratios[0]); i++) {
		unsigned w = w_for(ratios[i], 4);
		struct ovl_config c = {
			.seed = 1, .frags = 4, .in_flight = w, .ipv6_pct = 100, .shuffle = true};
		struct rxp_defrag_config dc = {.mem_limit = OVL_CAP, .max_dist = -1};
		struct ovl_result r, l;
		uint64_t ref;
		long k = -1;
		char g[48];

		if (o->quick && ratios[i] > 10)
			break;
		c.dgrams = 3 * w > 6000 ? 3 * w : 6000;
		if (ovl_run_table(&c, &dc, &r))
			return 1;
		dc.pressure = RXP_DEFRAG_PRESSURE_LINUX;
		if (ovl_run_table(&c, &dc, &l))
			return 1;
		ref = ovl_run_fwys(&c, OVL_CAP, r.frag_truesize, r.qcharge);
		if (ratios[i] <= OVL_KERNEL_MAX_RATIO)
			k = kernel_goodput(o, &c);
		if (r.bad || r.cap_exceeded)
			fprintf(stderr, "bench goodput: corrupted datagrams or cap exceeded!\n");
		snprintf(g, sizeof(g), k < 0 ? "-" : "%ld", k);
		printf("%-10.2f %7u %8u %10llu %10llu %12llu %8s %7.2f\n", ratios[i], w, c.dgrams,
		       (unsigned long long)ref, (unsigned long long)r.delivered,
		       (unsigned long long)l.delivered, g, ref ? (double)r.delivered / ref : 0);
		snprintf(g, sizeof(g), "overload %gx delivered", ratios[i]);
		bench_add(t, g, "reference", "dgrams", (double)ref, 0, NULL);
		bench_add(t, g, "linux-like", "dgrams", (double)l.delivered, 0, NULL);
		if (k >= 0)
			bench_add(t, g, "kernel", "dgrams", (double)k, 0, NULL);
		bench_add(t, g, "rxpath", "dgrams", (double)r.delivered, 0, "reference");
		if (dat)
			fprintf(dat, "%g %.2f %.2f %.2f %s%.2f\n", ratios[i],
				100.0 * ref / c.dgrams, 100.0 * r.delivered / c.dgrams,
				100.0 * l.delivered / c.dgrams, k < 0 ? "NaN " : "",
				k < 0 ? 0 : 100.0 * k / c.dgrams);
	}
	if (dat) {
		char cmd[3000];

		fclose(dat);
		snprintf(
			cmd, sizeof(cmd),
			"command -v gnuplot >/dev/null 2>&1 && gnuplot -e \"set terminal png size "
			"900,520; set output '%s/overload.png';"
			" set title 'Reassembly under overload: one IPv6 sender, 4 shuffled "
			"fragments, 4 MiB cap';"
			" set xlabel 'working set / cap'; set ylabel 'datagrams delivered (%%)';"
			" set logscale x; set key top right; set grid; set yrange [0:105];"
			" plot '%s' u 1:2 w lp t 'finish what you started (reference)', '' u 1:3 w "
			"lp t 'rxpath', '' u 1:4 w lp t 'linux-like', '' u 1:5 w lp t 'Linux "
			"kernel (namespace)'\"",
			o->outdir, path);
		if (system(cmd))
			fprintf(stderr, "bench goodput: no overload.png (gnuplot)\n");
	}
	return 0;
}

/* Other shapes against the reference: IPv4 in order with 1% loss. */
static int shapes_table(const struct bench_opts *o, struct bench_table *t)
{
	static const unsigned ks[] = {2, 8, 45};
	static const double ratios[] = {2, 20, 100};

	printf("\nshapes: IPv4, in order, 1%% loss, %u MiB cap; datagrams delivered\n",
	       OVL_CAP >> 20);
	printf("%-6s %-8s %7s %10s %10s %7s\n", "frags", "set/cap", "in fl.", "reference", "rxpath",
	       "r/ref");
	for (size_t i = 0; i < 3; i++)
		for (size_t j = 0; j < 3; j++) {
			unsigned w = w_for(ratios[j], ks[i]);
			struct ovl_config c = {
				.seed = 2, .frags = ks[i], .in_flight = w, .loss = 0.01};
			struct rxp_defrag_config dc = {.mem_limit = OVL_CAP, .max_dist = -1};
			struct ovl_result r;
			uint64_t ref;
			char g[48];

			if (o->quick && ratios[j] > 20)
				continue;
			c.dgrams = 3 * w > 3000 ? 3 * w : 3000;
			if (ovl_run_table(&c, &dc, &r))
				return 1;
			ref = ovl_run_fwys(&c, OVL_CAP, r.frag_truesize, r.qcharge);
			printf("%-6u %-8g %7u %10llu %10llu %7.2f\n", ks[i], ratios[j], w,
			       (unsigned long long)ref, (unsigned long long)r.delivered,
			       ref ? (double)r.delivered / ref : 0);
			snprintf(g, sizeof(g), "%u frags %gx 1%% loss", ks[i], ratios[j]);
			bench_add(t, g, "reference", "dgrams", (double)ref, 0, NULL);
			bench_add(t, g, "rxpath", "dgrams", (double)r.delivered, 0, "reference");
		}
	return 0;
}

static int attack_table(const struct bench_opts *o, struct bench_table *t)
{
	static const unsigned ws[] = {100, 412, 1000};

	printf("\nattack: a second source sends never-completing fragments (4096 IDs) at 10x "
	       "the legitimate rate; 4 shuffled fragments, IPv6, %u MiB cap\n",
	       OVL_CAP >> 20);
	printf("%-7s %8s %10s %12s %14s %8s\n", "in fl.", "datagr.", "alone", "with attack",
	       "linux+attack", "ratio");
	for (size_t i = 0; i < 3; i++) {
		struct ovl_config c = {.seed = 3,
				       .dgrams = o->quick ? 5000 : 20000,
				       .frags = 4,
				       .in_flight = ws[i],
				       .ipv6_pct = 100,
				       .shuffle = true};
		struct rxp_defrag_config dc = {.mem_limit = OVL_CAP, .max_dist = -1};
		struct ovl_result a, m, l;
		char g[48];

		if (ovl_run_table(&c, &dc, &a))
			return 1;
		c.attack = 10;
		if (ovl_run_table(&c, &dc, &m))
			return 1;
		dc.pressure = RXP_DEFRAG_PRESSURE_LINUX;
		if (ovl_run_table(&c, &dc, &l))
			return 1;
		printf("%-7u %8u %10llu %12llu %14llu %8.3f\n", ws[i], c.dgrams,
		       (unsigned long long)a.delivered, (unsigned long long)m.delivered,
		       (unsigned long long)l.delivered,
		       a.delivered ? (double)m.delivered / a.delivered : 0);
		snprintf(g, sizeof(g), "attack 10x, %u in flight", ws[i]);
		bench_add(t, g, "alone", "dgrams", (double)a.delivered, 0, NULL);
		bench_add(t, g, "linux-like + attack", "dgrams", (double)l.delivered, 0, NULL);
		bench_add(t, g, "rxpath + attack", "dgrams", (double)m.delivered, 0, "alone");
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct bench_opts o;
	struct bench_table t = {.name = "goodput"};

	bench_parse(argc, argv, &o, "goodput",
		    "Reassembly goodput: 64 KiB datagrams vs fragment loss through the sim NIC\n"
		    "(rxpath vs a Linux-like policy); overload, from half to 100 times what a\n"
		    "4 MiB cap holds (reference, rxpath, Linux-like, and the kernel in a\n"
		    "namespace when run as root with tcpreplay); other shapes; an attacker at\n"
		    "ten times the legitimate rate.");
	if (loss_table(&o, &t) || overload_table(&o, &t) || shapes_table(&o, &t) ||
	    attack_table(&o, &t))
		return 1;
	bench_report(&t, &o);
	return 0;
}
