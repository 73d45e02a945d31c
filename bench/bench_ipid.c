/*
 * rxpath bench ipid: the cost of reserving an IPv4 ID, per call, as threads
 * are added, with every thread on one bucket (one destination: the worst
 * case of seed 003) or on spread buckets (each thread cycling through 256
 * destinations). Three variants in the same run:
 *
 *   (a) linux-2016-cmpxchg: Linux's ip_idents_reserve() of 2016-2020 (a
 *       stamp check with one cmpxchg, then a cmpxchg loop on the counter to
 *       avoid a signed-overflow report); bucket precomputed, no hash;
 *   (b) fetch-add: one bare atomic fetch-add on the bucket, nothing else;
 *   (a2) the same cmpxchg loop, with the bucket chosen by the same SipHash
 *       as (c): isolates the counter update (CAS loop vs one fetch-add) at
 *       equal hashing, since the kernel of that time hashed too (jhash);
 *   (c) rxpath: rxp_ipid_reserve(): SipHash-2-4 of (src, dst, proto), the
 *       stamp check, one fetch-add; the tick from the same coarse clock (a)
 *       reads.
 *
 * (a) and (b) do not hash, so (c)'s cost includes SipHash that (a) would
 * also pay (as jhash) in the kernel: the comparison is conservative for (c).
 * Ratios are against (a). With --outdir, writes ipid.csv, ipid_threads.dat
 * and (when gnuplot is installed) ipid_threads.png.
 *
 * --callgrind-one a|b|c runs 1,000,000 reservations of one variant on one
 * thread with a fixed tick, in a function named cg_loop_<v>, for
 *   valgrind --tool=callgrind --toggle-collect='cg_loop_*' \
 *     rxpath-bench-ipid --callgrind-one c
 * (instructions per call = Ir / 1,000,000).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sys/stat.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "benchlib.h"
#include "rxpath/ipid.h"

#define NB (1u << 16)
#define SPREAD 256

/* ---- (a) and (b): a plain bucket array ------------------------------------ */

struct lbucket {
	_Atomic uint32_t id;
	_Atomic uint32_t stamp;
};
static struct lbucket lbuckets[NB] __attribute__((aligned(64)));

static __thread uint64_t xs = 0x9e3779b97f4a7c15ull;

static uint32_t xrand_below(uint32_t n)
{
	xs ^= xs << 13;
	xs ^= xs >> 7;
	xs ^= xs << 17;
	return (uint32_t)(((xs >> 32) * (uint64_t)n) >> 32);
}

static uint32_t coarse_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint32_t)((uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u);
}

/* The 2016-2020 kernel algorithm, written from its description. */
static uint32_t reserve_cmpxchg(uint32_t bucket, uint32_t segs, uint32_t now)
{
	struct lbucket *b = &lbuckets[bucket];
	uint32_t old = atomic_load_explicit(&b->stamp, memory_order_relaxed), nv, delta = 0;

	if (old != now && atomic_compare_exchange_strong(&b->stamp, &old, now))
		delta = xrand_below(now - old);
	old = atomic_load_explicit(&b->id, memory_order_relaxed);
	do {
		nv = old + delta + segs;
	} while (!atomic_compare_exchange_weak(&b->id, &old, nv));
	return nv - segs;
}

static uint32_t reserve_fetch_add(uint32_t bucket, uint32_t segs)
{
	return atomic_fetch_add(&lbuckets[bucket].id, segs);
}

/* ---- the measured loops --------------------------------------------------- */

enum variant { VA, VA2, VB, VC, NV };
static const char *const vname[NV] = {"a linux-2016-cmpxchg", "a2 cmpxchg+siphash", "b fetch-add",
				      "c rxpath-siphash"};

static unsigned char a2_key[crypto_shorthash_KEYBYTES];

static uint32_t siphash_bucket(uint32_t saddr, uint32_t daddr, uint8_t proto)
{
	unsigned char in[9], out[crypto_shorthash_BYTES];
	uint32_t h;

	memcpy(in, &saddr, 4);
	memcpy(in + 4, &daddr, 4);
	in[8] = proto;
	crypto_shorthash(out, in, sizeof(in), a2_key);
	memcpy(&h, out, sizeof(h));
	return h & (NB - 1);
}

struct work {
	enum variant v;
	bool spread;
	unsigned tid;
	uint64_t iters;
	struct rxp_ipid_table *t;
	pthread_barrier_t *bar;
	uint32_t sink;
	uint64_t t0, t1; /* this thread's own start and end */
	uint32_t buckets[SPREAD]; /* (a), (b) */
	uint32_t daddrs[SPREAD]; /* (c) */
};

static void *worker(void *p)
{
	struct work *w = p;
	uint32_t acc = 0, mask = w->spread ? SPREAD - 1 : 0;

	bench_pin((int)w->tid);
	pthread_barrier_wait(w->bar);
	w->t0 = bench_now_ns();
	switch (w->v) {
	case VA:
		for (uint64_t i = 0; i < w->iters; i++)
			acc += reserve_cmpxchg(w->buckets[i & mask], 1, coarse_ms());
		break;
	case VA2:
		for (uint64_t i = 0; i < w->iters; i++)
			acc += reserve_cmpxchg(siphash_bucket(0x0100000a, w->daddrs[i & mask], 17),
					       1, coarse_ms());
		break;
	case VB:
		for (uint64_t i = 0; i < w->iters; i++)
			acc += reserve_fetch_add(w->buckets[i & mask], 1);
		break;
	default:
		for (uint64_t i = 0; i < w->iters; i++)
			acc += rxp_ipid_reserve(w->t, 0x0100000a, w->daddrs[i & mask], 17, 1);
		break;
	}
	w->t1 = bench_now_ns();
	w->sink = acc;
	return NULL;
}

/*
 * ns of CPU per reservation: the window from the first thread's start to the
 * last one's end (timed inside the threads, so a slow wake-up of the main
 * thread does not matter), times the CPUs the threads could use, over all
 * reservations. With no more threads than CPUs this is the time one call
 * takes as each thread sees it; with more (--threads past the online CPUs)
 * it stays a CPU cost instead of counting the time a thread sat preempted.
 */
static double run_once(enum variant v, bool spread, int nthreads, uint64_t iters,
		       struct rxp_ipid_table *t)
{
	pthread_barrier_t bar;
	pthread_t th[64];
	struct work *w = calloc((size_t)nthreads, sizeof(*w));
	uint64_t first = UINT64_MAX, last = 0;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	pthread_barrier_init(&bar, NULL, (unsigned)nthreads);
	for (int i = 0; i < nthreads; i++) {
		w[i] = (struct work){.v = v,
				     .spread = spread,
				     .tid = (unsigned)i,
				     .iters = iters,
				     .t = t,
				     .bar = &bar};
		for (unsigned k = 0; k < SPREAD; k++) {
			uint32_t r = (uint32_t)rand();

			/* one bucket: everyone on bucket 0 / one destination */
			w[i].buckets[k] = spread ? r & (NB - 1) : 0;
			w[i].daddrs[k] = spread ? (r << 8) | (uint32_t)i : 0x0200000a;
		}
	}
	for (int i = 0; i < nthreads; i++)
		pthread_create(&th[i], NULL, worker, &w[i]);
	for (int i = 0; i < nthreads; i++) {
		pthread_join(th[i], NULL);
		first = w[i].t0 < first ? w[i].t0 : first;
		last = w[i].t1 > last ? w[i].t1 : last;
	}
	pthread_barrier_destroy(&bar);
	free(w);
	if (ncpu < 1)
		ncpu = 1;
	return (double)(last - first) * (double)(nthreads < ncpu ? nthreads : ncpu) /
	       ((double)iters * nthreads);
}

/* ---- callgrind mode ------------------------------------------------------- */

#define CG_N 1000000u

__attribute__((noinline)) static uint32_t cg_loop_a(void)
{
	uint32_t acc = 0;

	for (uint32_t i = 0; i < CG_N; i++)
		acc += reserve_cmpxchg(i & 255, 1, 1000);
	return acc;
}

__attribute__((noinline)) static uint32_t cg_loop_b(void)
{
	uint32_t acc = 0;

	for (uint32_t i = 0; i < CG_N; i++)
		acc += reserve_fetch_add(i & 255, 1);
	return acc;
}

__attribute__((noinline)) static uint32_t cg_loop_c(struct rxp_ipid_table *t)
{
	uint32_t acc = 0;

	for (uint32_t i = 0; i < CG_N; i++)
		acc += rxp_ipid_reserve_at(t, 0x0100000a, 0x0200000a + ((i & 255) << 24), 17, 1,
					   1000);
	return acc;
}

static int callgrind_one(const char *v)
{
	struct rxp_ipid_table *t = rxp_ipid_create(NULL);
	uint32_t r;

	if (!t)
		return 1;
	/* warm the buckets so no call draws a jump */
	if (!strcmp(v, "a"))
		r = cg_loop_a();
	else if (!strcmp(v, "b"))
		r = cg_loop_b();
	else if (!strcmp(v, "c"))
		r = cg_loop_c(t);
	else {
		fprintf(stderr, "--callgrind-one takes a, b or c\n");
		rxp_ipid_destroy(t);
		return 2;
	}
	printf("callgrind-one %s: %u calls (checksum %u); instructions per call = Ir of "
	       "cg_loop_%s / %u\n",
	       v, CG_N, r, v, CG_N);
	rxp_ipid_destroy(t);
	return 0;
}

/* ---- plot ----------------------------------------------------------------- */

static void plot(const struct bench_opts *o, const int *tc, int ntc, double res[][2][NV])
{
	char path[1024], cmd[3000];
	FILE *f;

	snprintf(path, sizeof(path), "%s/ipid_threads.dat", o->outdir);
	f = fopen(path, "w");
	if (!f)
		return;
	fprintf(f, "# threads a_one b_one c_one a_spread b_spread c_spread a2_one a2_spread"
		   " (ns/reservation)\n");
	for (int i = 0; i < ntc; i++)
		fprintf(f, "%d %.3f %.3f %.3f %.3f %.3f %.3f %.3f %.3f\n", tc[i], res[i][0][VA],
			res[i][0][VB], res[i][0][VC], res[i][1][VA], res[i][1][VB], res[i][1][VC],
			res[i][0][VA2], res[i][1][VA2]);
	fclose(f);
	if (system("command -v gnuplot >/dev/null 2>&1"))
		return;
	snprintf(cmd, sizeof(cmd),
		 "gnuplot -e \"set terminal png size 1100,560; set output '%s/ipid_threads.png';"
		 " set title 'IPv4 ID reservation cost'; set xlabel 'threads';"
		 " set ylabel 'ns per reservation'; set key outside right; set logscale x 2;"
		 " plot '%s' u 1:2 w lp t '(a) cmpxchg, one bucket',"
		 " '' u 1:3 w lp t '(b) fetch-add, one bucket',"
		 " '' u 1:4 w lp t '(c) rxpath, one bucket',"
		 " '' u 1:5 w lp dt 2 t '(a) cmpxchg, spread',"
		 " '' u 1:6 w lp dt 2 t '(b) fetch-add, spread',"
		 " '' u 1:7 w lp dt 2 t '(c) rxpath, spread',"
		 " '' u 1:8 w lp t '(a2) cmpxchg+siphash, one bucket',"
		 " '' u 1:9 w lp dt 2 t '(a2) cmpxchg+siphash, spread'\"",
		 o->outdir, path);
	if (system(cmd))
		fprintf(stderr, "bench ipid: gnuplot failed\n");
}

int main(int argc, char **argv)
{
	static struct bench_table tab = {.name = "ipid"};
	struct bench_opts o;
	struct rxp_ipid_table *t;
	static const int all_tc[] = {1, 2, 4, 8, 16};
	int tc[5], ntc = 0;
	double res[5][2][NV];
	uint64_t iters;

	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--callgrind-one"))
			return callgrind_one(i + 1 < argc ? argv[i + 1] : "");
	bench_parse(argc, argv, &o, "ipid",
		    "ns per IPv4 ID reservation, 1..N threads, one bucket vs spread:\n"
		    "(a) Linux 2016-2020 cmpxchg loop, (b) bare fetch-add, (c) rxpath\n"
		    "(SipHash + fetch-add). Also: --callgrind-one a|b|c for instruction counts.");
	iters = o.quick ? 200000 : 2000000;
	t = rxp_ipid_create(NULL);
	crypto_shorthash_keygen(a2_key);
	if (!t) {
		fprintf(stderr, "bench ipid: cannot create the ID table\n");
		return 1;
	}
	srand(1);
	for (int i = 0; i < 5; i++)
		if (all_tc[i] <= o.threads_max && all_tc[i] <= 64)
			tc[ntc++] = all_tc[i];
	printf("ipid: %d runs of %llu reservations per thread per variant, threads:", o.runs,
	       (unsigned long long)iters);
	for (int i = 0; i < ntc; i++)
		printf(" %d", tc[i]);
	printf(" (%ld CPUs online)\n", sysconf(_SC_NPROCESSORS_ONLN));
	for (int i = 0; i < ntc; i++) {
		for (int s = 0; s < 2; s++) {
			char group[48];
			double v[NV][64];

			/* Interleave the variants run by run so drift hits all. */
			for (int r = 0; r < o.runs && r < 64; r++)
				for (int k = 0; k < NV; k++)
					v[k][r] = run_once((enum variant)k, s, tc[i], iters, t);
			snprintf(group, sizeof(group), "%s %dT", s ? "spread" : "one-bucket",
				 tc[i]);
			for (int k = 0; k < NV; k++) {
				res[i][s][k] = bench_median(v[k], o.runs < 64 ? o.runs : 64);
				bench_add(&tab, group, vname[k], "ns/op", res[i][s][k], 1,
					  k ? vname[VA] : NULL);
			}
			/* the same (c), against the same hash with a CAS loop */
			bench_add(&tab, group, "c vs a2 (same hash)", "ns/op", res[i][s][VC], 1,
				  vname[VA2]);
		}
	}
	bench_report(&tab, &o);
	if (o.outdir)
		plot(&o, tc, ntc, res);
	rxp_ipid_destroy(t);
	return 0;
}
