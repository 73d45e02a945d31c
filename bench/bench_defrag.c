/*
 * rxpath bench defrag: reassembly throughput, single thread.
 *
 *  0. The headline rows (defrag_handover.c): rxpath vs DPDK in the handover
 *     of DPDK's examples/ip_reassembly (MTU-sized fragments, bursts of 32
 *     copied into fresh packets just before the timed call, no prefetch,
 *     round-robin with a per-datagram shuffle), 10k and 64 in flight, in
 *     ns/fragment and callgrind instructions per fragment; first, the same
 *     streams through a pcap (rxpath defrag, and libpcap into DPDK) must
 *     give the same datagrams. bench/defrag_stages.sh splits the
 *     instructions by stage.
 *  1. Secondary rows, the earlier shape: rxpath (strict, local delivery) vs DPDK 22.11 rte_ip_frag on identical
 *     IPv4 fragment sets: 2, 4, 6 and 8 fragments of 512 bytes per datagram,
 *     in order, reversed and shuffled within each datagram, 10k datagrams in
 *     flight (fragment r of every datagram is fed before fragment r+1 of
 *     any). Packets are built before the clock starts; the timed part is the
 *     reassembly call and freeing the result (and, for DPDK, its death row).
 *  2. 45-fragment datagrams (65 KB) for rxpath alone (DPDK's limit is 8),
 *     1000 in flight.
 *  3. FragmentSmack: cost per fragment for n never-completing 8-byte
 *     fragments in random order. One queue holds at most 8190 distinct
 *     8-byte slots below 65535, so for n beyond that the fragments are
 *     spread over ceil(n/8190) queues of that size. Times, and callgrind
 *     instructions per fragment (where valgrind is installed), which show
 *     the work's growth apart from the caches'.
 *
 * Rows are medians of --runs runs, after untimed runs of each side;
 * rxpath and DPDK alternate within a run.
 * RXP_BENCH_ND=n sets the datagrams in flight of rows 1 (default 10000).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "benchlib.h"
#include "defrag_handover.h"
#include "rxpath/defrag.h"
#include "rxpath/pkt.h"
#include "rxpath/wire.h"

#ifdef RXP_HAVE_DPDK
#include <rte_eal.h>
#include <rte_ip_frag.h>
#include <rte_mbuf.h>
#include <rte_cycles.h>
#endif

#define FRAG_PAY 512u
#define PF 4 /* prefetch distance, the same for rxpath and DPDK */

enum order { IN_ORDER, REVERSED, SHUFFLED };
static const char *const order_name[] = {"in-order", "reversed", "shuffled"};

struct fdesc {
	uint32_t dgram; /* datagram index */
	uint32_t off, len;
	bool mf;
};

static uint64_t rng_state = 88172645463325252ull;
static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* The feed: fragment r of each datagram, for r = 0..k-1. */
static struct fdesc *make_feed(uint32_t nd, uint32_t k, uint32_t pay, enum order o)
{
	struct fdesc *f = malloc(sizeof(*f) * nd * k);
	uint32_t perm[64];

	for (uint32_t d = 0; d < nd; d++) {
		for (uint32_t i = 0; i < k; i++)
			perm[i] = o == REVERSED ? k - 1 - i : i;
		if (o == SHUFFLED) {
			for (uint32_t i = k - 1; i > 0; i--) {
				uint32_t j = (uint32_t)(rnd() % (i + 1)), x = perm[i];

				perm[i] = perm[j];
				perm[j] = x;
			}
		}
		for (uint32_t r = 0; r < k; r++)
			f[(size_t)r * nd + d] =
				(struct fdesc){d, perm[r] * pay, pay, perm[r] != k - 1};
	}
	return f;
}

static void fill_ip(uint8_t *b, const struct fdesc *f)
{
	rxp_ipv4_build(b, RXP_IPPROTO_UDP, (uint16_t)(20 + f->len), (uint16_t)f->dgram,
		       (uint16_t)((f->off / 8) | (f->mf ? RXP_IP_MF : 0)), 64,
		       htonl(0x0a000000u + (f->dgram >> 16)) /* ids wrap at 65536 */,
		       htonl(0x0a800001u));
	memset(b + 20, (int)(f->dgram & 0xff), f->len);
}

/* ---- rxpath --------------------------------------------------------------- */

static struct rxp_pkt **rx_build(struct rxp_pktpool *pp, const struct fdesc *f, size_t n)
{
	struct rxp_pkt **v = malloc(sizeof(*v) * n);

	for (size_t i = 0; i < n; i++) {
		v[i] = rxp_pkt_alloc(pp, 20 + f[i].len);
		if (!v[i]) {
			fprintf(stderr, "bench defrag: rxpath pool exhausted\n");
			exit(1);
		}
		fill_ip(rxp_pkt_put(v[i], 20 + f[i].len), &f[i]);
	}
	return v;
}

/* The timed part alone (callgrind: --toggle-collect=rx_loop). */
static __attribute__((noinline)) uint32_t rx_loop(struct rxp_defrag_table *t, struct rxp_pkt **v,
						  size_t n)
{
	uint32_t done = 0;

	for (size_t i = 0; i < n; i++) {
		struct rxp_pkt *r;

		/* What a receive loop does (and DPDK's examples): metadata two
		 * ahead, headers one step behind it. */
		if (i + 2 * PF < n)
			__builtin_prefetch(v[i + 2 * PF]);
		if (i + PF < n)
			__builtin_prefetch(v[i + PF]->data);
		r = rxp_defrag(t, v[i], 0);
		if (r) {
			done++;
			rxp_pkt_consume(r);
		}
	}
	return done;
}

/* Returns seconds; checks every datagram completed. */
static double rx_run(struct rxp_pktpool *pp, struct rxp_defrag_table *t, const struct fdesc *f,
		     size_t n, uint32_t expect)
{
	struct rxp_pkt **v = rx_build(pp, f, n);
	uint64_t t0 = bench_now_ns();
	uint32_t done = rx_loop(t, v, n);
	uint64_t t1 = bench_now_ns();

	free(v);
	if (done != expect) {
		fprintf(stderr, "bench defrag: rxpath completed %u of %u\n", done, expect);
		exit(1);
	}
	return (double)(t1 - t0) / 1e9;
}

/* ---- DPDK ----------------------------------------------------------------- */

#ifdef RXP_HAVE_DPDK
static struct rte_mempool *dp_pool;
static struct rte_ip_frag_tbl *dp_tbl;
static struct rte_ip_frag_death_row dp_dr;

static int dp_init(void)
{
	if (bench_eal_init("rxpbenchdefrag", NULL))
		return -1;
	dp_pool = rte_pktmbuf_pool_create("dfr", 90000, 256, 0, RTE_PKTMBUF_HEADROOM + 1024,
					  SOCKET_ID_ANY);
	dp_tbl = rte_ip_frag_table_create(16384, 8, 16384 * 8, rte_get_tsc_hz() * 1000,
					  SOCKET_ID_ANY);
	return dp_pool && dp_tbl ? 0 : -1;
}

/* The timed part alone (callgrind: --toggle-collect=dp_loop). */
static __attribute__((noinline)) uint32_t dp_loop(struct rte_mbuf **v, size_t n)
{
	uint32_t done = 0;

	for (size_t i = 0; i < n; i++) {
		struct rte_mbuf *r;

		if (i + 2 * PF < n)
			rte_prefetch0(v[i + 2 * PF]);
		if (i + PF < n)
			rte_prefetch0(rte_pktmbuf_mtod(v[i + PF], void *));
		r = rte_ipv4_frag_reassemble_packet(dp_tbl, &dp_dr, v[i], 0,
						    rte_pktmbuf_mtod(v[i], struct rte_ipv4_hdr *));
		if (r) {
			done++;
			rte_pktmbuf_free(r);
		}
		if ((i & 31) == 31)
			rte_ip_frag_free_death_row(&dp_dr, 3);
	}
	rte_ip_frag_free_death_row(&dp_dr, 3);
	return done;
}

static double dp_run(const struct fdesc *f, size_t n, uint32_t expect)
{
	struct rte_mbuf **v = malloc(sizeof(*v) * n);

	for (size_t i = 0; i < n; i++) {
		v[i] = rte_pktmbuf_alloc(dp_pool);
		if (!v[i]) {
			fprintf(stderr, "bench defrag: DPDK pool exhausted\n");
			exit(1);
		}
		fill_ip((uint8_t *)rte_pktmbuf_append(v[i], (uint16_t)(20 + f[i].len)), &f[i]);
		v[i]->l2_len = 0;
		v[i]->l3_len = 20;
	}
	uint64_t t0 = bench_now_ns();
	uint32_t done = dp_loop(v, n);
	uint64_t t1 = bench_now_ns();

	free(v);
	if (done != expect) {
		fprintf(stderr, "bench defrag: DPDK completed %u of %u\n", done, expect);
		exit(1);
	}
	return (double)(t1 - t0) / 1e9;
}

static void dp_fini(void)
{
	rte_ip_frag_table_destroy(dp_tbl);
	rte_mempool_free(dp_pool);
	rte_eal_cleanup();
}
#endif

/* ---- FragmentSmack ---------------------------------------------------------- */

/* The measured part on its own, so callgrind can count just it:
 *   RXP_BENCH_SMACK_N=n valgrind --tool=callgrind --toggle-collect=smack_insert \
 *       rxpath-bench-defrag
 */
static __attribute__((noinline)) void smack_insert(struct rxp_defrag_table *t, struct rxp_pkt **v,
						   uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (rxp_defrag(t, v[i], 0))
			exit(1);
}

static double smack_run(struct rxp_pktpool *pp, uint32_t n)
{
	struct rxp_defrag_config c = {.mem_limit = 1ull << 32, .max_queues = 64, .max_dist = -1};
	struct rxp_defrag_table *t = rxp_defrag_table_create(&c);
	const uint32_t per = 8190;
	struct fdesc *f = malloc(sizeof(*f) * n);
	struct rxp_pkt **v;
	double s;

	for (uint32_t i = 0; i < n; i++)
		f[i] = (struct fdesc){i / per, 8 * (1 + i % per), 8, true};
	for (uint32_t i = n - 1; i > 0; i--) {
		uint32_t j = (uint32_t)(rnd() % (i + 1));
		struct fdesc x = f[i];

		f[i] = f[j];
		f[j] = x;
	}
	v = rx_build(pp, f, n);
	uint64_t t0 = bench_now_ns();

	smack_insert(t, v, n);
	s = (double)(bench_now_ns() - t0) / 1e9;
	rxp_defrag_table_destroy(t);
	free(v);
	free(f);
	return s;
}

int main(int argc, char **argv)
{
	struct bench_opts o;
	static struct bench_table tab = {.name = "defrag"};
	struct rxp_pktpool_config pc = {.name = "bench",
					.n_pkts = 90000,
					.n_bufs = 90000,
					.buf_size = 1024,
					.n_large = 4,
					.cache_size = 1024};
	struct rxp_pktpool_config pc45 = {.name = "bench45",
					  .n_pkts = 50000,
					  .n_bufs = 50000,
					  .buf_size = 2048,
					  .n_large = 4,
					  .cache_size = 1024};
	struct rxp_defrag_config dc = {
		.mem_limit = 1ull << 32, .max_queues = 16384, .max_dist = -1};
	struct rxp_pktpool *pp, *pp45;
	struct rxp_defrag_table *t;
	uint32_t nd;
	int have_dpdk = 0;

	bench_parse(argc, argv, &o, "defrag",
		    "IPv4 reassembly: rxpath vs DPDK rte_ip_frag (2-8 fragments, 10k in flight),\n"
		    "45-fragment datagrams, and FragmentSmack cost per fragment (time, and\n"
		    "callgrind instructions unless --quick).\n"
		    "RXP_BENCH_HEADLINE=1 runs the headline rows (DPDK's receive-loop handover)\n"
		    "alone (RXP_BENCH_NO_INSTR=1: without callgrind); RXP_BENCH_HO=stream,\n"
		    "inflight,r|d runs one pass of one side of them (stream 0-3).\n"
		    "RXP_BENCH_ND=n in the environment sets the datagrams in flight (1..10000)\n"
		    "of the secondary rows (and leaves the headline rows out);\n"
		    "RXP_BENCH_ONE=k,order (order 0 in order, 1 reversed, 2 shuffled) runs that\n"
		    "one comparison alone, RXP_BENCH_REPEAT=n times, and prints each run.");
	nd = o.quick ? 2000 : 10000;
	if (getenv("RXP_BENCH_ND")) {
		/* Datagrams in flight for the 2-8 fragment rows: fewer keeps
		 * everything in cache (what each side costs in instructions
		 * rather than in memory). At most 10000: the pools' size. */
		int v = atoi(getenv("RXP_BENCH_ND"));

		if (v < 1 || v > 10000) {
			fprintf(stderr, "bench defrag: RXP_BENCH_ND must be 1..10000\n");
			return 2;
		}
		nd = (uint32_t)v;
	}
	if (getenv("RXP_BENCH_HO")) {
		/* One side of one headline row (for callgrind), before the
		 * other rows' pools and tables are made: under valgrind, their
		 * setup took longer than the run. */
#ifdef RXP_HAVE_DPDK
		if (strstr(getenv("RXP_BENCH_HO"), ",d") &&
		    bench_eal_init("rxpbenchdefrag", NULL) == 0)
			have_dpdk = 1;
#endif
		int rc = ho_one(have_dpdk);

#ifdef RXP_HAVE_DPDK
		if (have_dpdk)
			rte_eal_cleanup();
#endif
		return rc;
	}
	pp = rxp_pktpool_create(&pc);
	if (getenv("RXP_BENCH_SMACK_N")) {
		uint32_t n = (uint32_t)atoi(getenv("RXP_BENCH_SMACK_N"));

		if (!pp || n < 1 || n > 80000)
			return 2;
		printf("fragmentsmack n=%u: %.1f ns/frag\n", n, smack_run(pp, n) * 1e9 / n);
		rxp_pktpool_destroy(pp);
		return 0;
	}
	pp45 = rxp_pktpool_create(&pc45);
	t = rxp_defrag_table_create(&dc);
	if (!pp || !pp45 || !t) {
		fprintf(stderr, "bench defrag: setup failed\n");
		return 1;
	}
#ifdef RXP_HAVE_DPDK
	if (getenv("RXP_BENCH_NO_DPDK"))
		fprintf(stderr, "bench defrag: RXP_BENCH_NO_DPDK set; rxpath rows only\n");
	else if (dp_init() == 0) {
		have_dpdk = 1;
		/* Both sides' memory, since it moves the rows with thousands in
		 * flight: rxpath's pools ask for transparent huge pages. */
		printf("memory: %s; rxpath's pools on transparent huge pages%s; its "
		       "packets %s\n",
		       bench_eal_memory(),
		       getenv("RXP_NO_HUGEPAGE") ? " not asked for (RXP_NO_HUGEPAGE set)"
						 : " where the system grants them",
		       getenv("RXP_PKT_META_APART")
			       ? "two objects, metadata apart (RXP_PKT_META_APART set)"
			       : "one object, metadata in the head buffer's slot, as an mbuf");
	} else
		fprintf(stderr, "bench defrag: DPDK EAL init failed; rxpath rows only\n");
#endif
	if (getenv("RXP_BENCH_ONE")) {
		/* One config, one run of each: for callgrind instruction counts
		 * (RXP_BENCH_ONE=k,order with order 0 in-order, 1 reversed, 2
		 * shuffled; RXP_BENCH_REPEAT=n runs each n times, with
		 * RXP_BENCH_FRESH_TABLE a new rxpath table each time). */
		unsigned k = 4, ord = 0;

		sscanf(getenv("RXP_BENCH_ONE"), "%u,%u", &k, &ord);
		if (k < 2 || k > 8 || ord > 2)
			return 2;
		struct fdesc *f = make_feed(nd, k, FRAG_PAY, (enum order)ord);
		int rep = getenv("RXP_BENCH_REPEAT") ? atoi(getenv("RXP_BENCH_REPEAT")) : 1;

		for (int r = 0; r < rep && r < 1000; r++) {
#ifdef RXP_HAVE_DPDK
			if (have_dpdk)
				printf("dpdk   %.1f ns/frag\n",
				       dp_run(f, (size_t)nd * k, nd) * 1e9 / (nd * k));
#endif
			if (getenv("RXP_BENCH_FRESH_TABLE")) {
				/* Tells table state from pool state across runs. */
				rxp_defrag_table_destroy(t);
				t = rxp_defrag_table_create(&dc);
			}
			printf("rxpath %.1f ns/frag\n",
			       rx_run(pp, t, f, (size_t)nd * k, nd) * 1e9 / (nd * k));
		}
		free(f);
		o.runs = 0;
	}
	if (o.runs && !getenv("RXP_BENCH_ND")) {
		if (ho_pcap_check(have_dpdk)) {
			fprintf(stderr, "bench defrag: rxpath and DPDK differ on a capture\n");
			return 1;
		}
		ho_rows(&tab, &o, have_dpdk);
		if (getenv("RXP_BENCH_HEADLINE")) {
			/* The headline rows alone. */
			bench_report(&tab, &o);
			o.runs = 0;
		}
	}
	for (uint32_t k = 2; k <= 8 && o.runs; k += 2) {
		for (int ord = 0; ord < 3; ord++) {
			struct fdesc *f = make_feed(nd, k, FRAG_PAY, (enum order)ord);
			size_t n = (size_t)nd * k;
			double rx[64], dp[64];
			char g[48];

			/* One untimed run of each first: the first touches of a
			 * pool's memory (page faults, the first pass through the
			 * caches) are not what the rows name. */
#ifdef RXP_HAVE_DPDK
			if (have_dpdk)
				dp_run(f, n, nd);
#endif
			rx_run(pp, t, f, n, nd);
			for (int r = 0; r < o.runs; r++) {
#ifdef RXP_HAVE_DPDK
				if (have_dpdk)
					dp[r] = (double)nd / dp_run(f, n, nd) / 1e6;
#endif
				rx[r] = (double)nd / rx_run(pp, t, f, n, nd) / 1e6;
			}
			free(f);
			snprintf(g, sizeof(g), "secondary: k=%u %s", k, order_name[ord]);
			double rm = bench_median(rx, o.runs);

			if (have_dpdk) {
				double dm = bench_median(dp, o.runs);

				bench_add(&tab, g, "dpdk-22.11 dgram/s", "M/s", dm, 0, NULL);
				bench_add(&tab, g, "rxpath dgram/s", "M/s", rm, 0,
					  "dpdk-22.11 dgram/s");
				bench_add(&tab, g, "dpdk-22.11 frag/s", "M/s", dm * k, 0, NULL);
				bench_add(&tab, g, "rxpath frag/s", "M/s", rm * k, 0,
					  "dpdk-22.11 frag/s");
			} else {
				bench_add(&tab, g, "rxpath dgram/s", "M/s", rm, 0, NULL);
				bench_add(&tab, g, "rxpath frag/s", "M/s", rm * k, 0, NULL);
			}
		}
	}
	if (o.runs) {
		uint32_t n45 = o.quick ? 200 : 1000;
		struct fdesc *f = make_feed(n45, 45, 1448, SHUFFLED);
		double rx[64];

		/* Untimed, as above; this pool is new here, and its first three
		 * runs (memory touched the first time, then the cache's and the
		 * stash's order settling) are slower than the runs after. */
		for (int r = 0; r < 3; r++)
			rx_run(pp45, t, f, (size_t)n45 * 45, n45);
		for (int r = 0; r < o.runs; r++)
			rx[r] = (double)n45 / rx_run(pp45, t, f, (size_t)n45 * 45, n45) / 1e6;
		free(f);
		double m = bench_median(rx, o.runs);

		bench_add(&tab, "k=45 (64KB) shuffled", "rxpath dgram/s", "M/s", m, 0, NULL);
		bench_add(&tab, "k=45 (64KB) shuffled", "rxpath frag/s", "M/s", m * 45, 0, NULL);
	}
	for (uint32_t n = 64; o.runs && n <= (o.quick ? 4096u : 65536u); n *= 4) {
		double ns[64];
		char v[64];

		for (int r = 0; r < o.runs; r++)
			ns[r] = smack_run(pp, n) * 1e9 / n;
		snprintf(v, sizeof(v), "n=%u ns/frag", n);
		bench_add(&tab, "fragmentsmack", v, "ns", bench_median(ns, o.runs), 1,
			  n == 64 ? NULL : "n=64 ns/frag");
	}
	/* Times grow with the queue's working set leaving the caches; the
	 * work itself is what should grow as log n: count it too. */
	double ir64 = 0, ir = 0;
	uint32_t nmax = 0;

	for (uint32_t n = 64; o.runs && !o.quick && n <= 65536u; n *= 4) {
		char env[64], v[64];
		long c;

		snprintf(env, sizeof(env), "RXP_BENCH_SMACK_N=%u", n);
		c = bench_callgrind("smack_insert", env, "", NULL, NULL);
		if (c <= 0) {
			fprintf(stderr, "bench defrag: no callgrind (valgrind); FragmentSmack "
					"instruction counts left out\n");
			break;
		}
		ir = (double)c / n;
		if (n == 64)
			ir64 = ir;
		nmax = n;
		snprintf(v, sizeof(v), "n=%u instr/frag", n);
		bench_add(&tab, "fragmentsmack instr", v, "instr", ir, 1,
			  n == 64 ? NULL : "n=64 instr/frag");
	}
	if (o.runs)
		bench_report(&tab, &o);
	if (nmax > 64)
		printf("fragmentsmack: instructions per fragment %.0f at n=64, %.0f at n=%u "
		       "(%.2fx) "
		       "while log2 n grows %.2fx\n",
		       ir64, ir, nmax, ir / ir64, log2((double)nmax) / 6.0);
	rxp_defrag_table_destroy(t);
	rxp_pktpool_destroy(pp);
	rxp_pktpool_destroy(pp45);
#ifdef RXP_HAVE_DPDK
	if (have_dpdk)
		dp_fini();
#endif
	return 0;
}
