/*
 * rxpath bench pool, row 2: objects allocated on thread A and freed on
 * thread B, handed over through the same SPSC ring for every variant
 * (rxpath's deferred free, rxpath freeing straight to the shared ring,
 * DPDK's mempool with its cache, the mallocs, the hand-over alone), and
 * --row2, which runs this row alone and sorts its rounds by how far apart
 * the host placed the two threads.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_pool.h"

#ifdef RXP_HAVE_DPDK
#include <rte_eal.h>
#include <rte_lcore.h>
#include <rte_mempool.h>
#endif

/* ---- two threads: A allocates, B frees ---------------------------------- */

/*
 * The hand-over is a ring of SPSC slots, NULL when free. B hands slots back
 * in batches of ZERO_BATCH (two cache lines), last slot first, as Linux's
 * ptr_ring consumer does: with the ring full, A polls the next slot, and a
 * slot freed one at a time put A's poll on the very line B was clearing,
 * so every free paid a line transfer whenever B was the slower side. With
 * the two vCPUs far apart that cost depended on which side a variant made
 * the slower, so it penalised rxpath's deferred free, whose allocations are
 * cheaper, more than DPDK (bench/results/README.md, "pool").
 */
#define SPSC 1024
#define ZERO_BATCH 16
struct handover {
	/* Read-only, then each side's own line, apart from the slots: a
	 * counter sharing a line with the other side's would make every
	 * variant pay a line transfer per object. */
	long n;
	int kind;
	_Alignas(64) uint32_t head; /* A only */
	_Alignas(64) uint32_t tail; /* B only */
	_Alignas(64) atomic_int go;
	_Alignas(64) atomic_int done;
	_Alignas(64) void *_Atomic slot[SPSC];
};

enum { X_HANDOFF, X_RXP_DEFER, X_RXP_SHARED, X_DPDK, X_GLIBC, X_MIMALLOC, X_JEMALLOC };
static const char *const xnames[] = {"handover only (no alloc)",
				     "rxpath deferred free",
				     "rxpath free to shared ring",
				     "dpdk mempool cache256",
				     "glibc malloc",
				     "mimalloc",
				     "jemalloc"};

static void x_free(int kind, void *o)
{
	switch (kind) {
	case X_RXP_DEFER:
		rxp_pool_put(pool, o);
		break;
	case X_RXP_SHARED:
		rxp_pool_put_shared(pool, o);
		break;
#ifdef RXP_HAVE_DPDK
	case X_DPDK:
		rte_mempool_put(mp, o);
		break;
#endif
	case X_GLIBC:
		free(o);
		break;
	case X_MIMALLOC:
		mi_free_fn(o);
		break;
	case X_JEMALLOC:
		je_free_fn(o);
		break;
	default:
		break;
	}
}

static void *x_alloc(int kind)
{
	void *o = NULL;

	switch (kind) {
	case X_HANDOFF:
		return (void *)(uintptr_t)0x1000;
	case X_RXP_DEFER:
	case X_RXP_SHARED:
		while (!(o = rxp_pool_get(pool)))
			rxp_pool_drain_deferred(pool);
		return o;
#ifdef RXP_HAVE_DPDK
	case X_DPDK:
		while (rte_mempool_get(mp, &o))
			;
		return o;
#endif
	case X_GLIBC:
		return malloc(OBJ_SIZE);
	case X_MIMALLOC:
		return mi_malloc_fn(OBJ_SIZE);
	case X_JEMALLOC:
		return je_malloc_fn(OBJ_SIZE);
	}
	return NULL;
}

static int consumer(void *arg)
{
	struct handover *h = arg;
	long freed = 0;
	uint32_t taken = h->tail; /* slots up to tail are read, not yet handed back */

	while (!atomic_load(&h->go))
		;
	while (freed < h->n) {
		void *o =
			atomic_load_explicit(&h->slot[h->tail & (SPSC - 1)], memory_order_acquire);

		if (!o) {
			__builtin_ia32_pause();
			continue;
		}
		h->tail++;
		if (h->tail - taken == ZERO_BATCH || freed + 1 == h->n) {
			for (uint32_t k = h->tail; k-- != taken;)
				atomic_store_explicit(&h->slot[k & (SPSC - 1)], NULL,
						      memory_order_relaxed);
			taken = h->tail;
		}
		x_free(h->kind, o);
		freed++;
	}
	if (h->kind == X_RXP_DEFER)
		rxp_pool_drain_deferred(pool); /* hand over staged frees, as a poll loop does */
	atomic_store(&h->done, 1);
	return 0;
}

/* Thread B runs fn(arg) on the second core: an EAL lcore when DPDK is up,
 * else a pinned pthread. */
struct on_b {
	int (*fn)(void *);
	void *arg;
	pthread_t t;
};

static void *on_b_pthread(void *arg)
{
	struct on_b *b = arg;

	bench_pin(1);
	b->fn(b->arg);
	return NULL;
}

static void b_start(struct on_b *b, int (*fn)(void *), void *arg)
{
	b->fn = fn;
	b->arg = arg;
#ifdef RXP_HAVE_DPDK
	if (have_dpdk && rte_lcore_count() > 1) {
		rte_eal_remote_launch(fn, arg, rte_get_next_lcore(-1, 1, 0));
		return;
	}
#endif
	pthread_create(&b->t, NULL, on_b_pthread, b);
}

static void b_wait(struct on_b *b)
{
#ifdef RXP_HAVE_DPDK
	if (have_dpdk && rte_lcore_count() > 1) {
		rte_eal_mp_wait_lcore();
		return;
	}
#endif
	pthread_join(b->t, NULL);
}

static double run_pair(int kind, long n)
{
	struct handover *h = aligned_alloc(64, sizeof(*h));
	struct on_b b;
	uint64_t c0;
	double r;

	memset(h, 0, sizeof(*h));
	h->n = n;
	h->kind = kind;
	b_start(&b, consumer, h);
	atomic_store(&h->go, 1);
	c0 = bench_cycles();
	for (long i = 0; i < n; i++) {
		void *o = x_alloc(kind);
		void *_Atomic *s = &h->slot[h->head & (SPSC - 1)];

		while (atomic_load_explicit(s, memory_order_relaxed))
			__builtin_ia32_pause();
		atomic_store_explicit(s, o, memory_order_release);
		h->head++;
		if (kind == X_RXP_DEFER && (i & 63) == 0)
			rxp_pool_drain_deferred(pool); /* once per poll (budget 64) */
	}
	while (!atomic_load(&h->done))
		__builtin_ia32_pause();
	r = (double)(bench_cycles() - c0) / (double)n;
	b_wait(&b);
	rxp_pool_drain_deferred(pool);
	free(h);
	return r;
}

/* How far apart the two cores are: TSC cycles for one cache line to go from
 * A to B and back, the median of batches of PING round trips. On this
 * machine it is bimodal as the host moves the vCPUs: about 120 near and about
 * 1,000 far apart. */
#define PING 2000
static _Alignas(64) _Atomic long ping_line;

static int ping_b(void *arg)
{
	long rounds = *(const long *)arg;

	for (long i = 1; i <= rounds; i++) {
		while (atomic_load_explicit(&ping_line, memory_order_acquire) != 2 * i - 1)
			__builtin_ia32_pause();
		atomic_store_explicit(&ping_line, 2 * i, memory_order_release);
	}
	return 0;
}

static double line_round_trip(void)
{
	long rounds = 5 * PING;
	double v[5];
	struct on_b b;

	atomic_store(&ping_line, 0);
	b_start(&b, ping_b, &rounds);
	for (int k = 0; k < 5; k++) {
		uint64_t c0 = bench_cycles();

		for (long i = k * PING + 1; i <= (k + 1) * PING; i++) {
			atomic_store_explicit(&ping_line, 2 * i - 1, memory_order_release);
			while (atomic_load_explicit(&ping_line, memory_order_acquire) != 2 * i)
				__builtin_ia32_pause();
		}
		v[k] = (double)(bench_cycles() - c0) / PING;
	}
	b_wait(&b);
	return bench_median(v, 5);
}

/*
 * --row2 SECONDS: row 2 alone, again and again for that long. Each round
 * measures how far apart the two cores are (line_round_trip()), then runs the
 * hand-over alone, DPDK and rxpath's deferred free back to back; the summary
 * sorts the rounds by that distance. The host moves this machine's two vCPUs
 * between placements within minutes, and far apart every variant costs more
 * (one full run lands in whichever placement it gets). pool_row2.csv has
 * every round.
 */
void pool_row2_placements(double secs, long per, const struct bench_opts *o)
{
	enum { MAXR = 1 << 17, COLS = 5 };
	static const struct {
		const char *name;
		double lo, hi;
	} bins[] = {{"near (round trip < 400)", 0, 400},
		    {"in between (400-800)", 400, 800},
		    {"far apart (>= 800)", 800, 1e300}};
	/* per round: round trip, hand-over, dpdk, rxpath, past the cap */
	double(*r)[COLS] = malloc(MAXR * sizeof(*r));
	double *col = malloc(COLS * (size_t)MAXR * sizeof(double));
	double ghz = bench_tsc_ghz();
	uint64_t t0 = bench_cycles();
	size_t n = 0;
	FILE *csv = NULL;

	if (!r || !col) {
		fprintf(stderr, "bench pool: out of memory\n");
		exit(1);
	}
	while (n < MAXR && (double)(bench_cycles() - t0) / (ghz * 1e9) < secs) {
		struct rxp_pool_stats s0, s1;

		r[n][0] = line_round_trip();
		r[n][1] = run_pair(X_HANDOFF, per);
		r[n][2] = run_pair(X_DPDK, per);
		rxp_pool_get_stats(pool, &s0);
		r[n][3] = run_pair(X_RXP_DEFER, per);
		rxp_pool_get_stats(pool, &s1);
		r[n][4] = (double)(s1.defer_overflow - s0.defer_overflow) / (double)per;
		n++;
	}
	printf("row 2 alone for %.0f s: %zu rounds of %ld objects per variant\n", secs, n, per);
	printf("%-26s %7s %10s %9s %8s %8s %7s %9s\n", "placement", "rounds", "round trip",
	       "hand-over", "dpdk", "rxpath", "ratio", "past cap");
	for (size_t k = 0; k < sizeof(bins) / sizeof(bins[0]); k++) {
		size_t m = 0;
		double med[COLS];

		for (size_t i = 0; i < n; i++)
			if (r[i][0] >= bins[k].lo && r[i][0] < bins[k].hi) {
				for (int j = 0; j < COLS; j++)
					col[j * MAXR + m] = r[i][j];
				m++;
			}
		if (!m) {
			printf("%-26s %7d\n", bins[k].name, 0);
			continue;
		}
		for (int j = 0; j < COLS; j++)
			med[j] = bench_median(col + j * MAXR, (int)m);
		printf("%-26s %7zu %10.0f %9.2f %8.2f %8.2f %6.2fx %8.1f%%\n", bins[k].name, m,
		       med[0], med[1], med[2], med[3], med[2] / med[3], 100 * med[4]);
	}
	printf("(medians; round trip: TSC cycles for a cache line to go to the other core and\n"
	       "back; the rest cycles per object; ratio > 1: rxpath is cheaper; past cap: remote\n"
	       "frees that found the owner's deferred list full)\n");
	if (o->outdir) {
		char path[4096];

		snprintf(path, sizeof(path), "%s/pool_row2.csv", o->outdir);
		csv = fopen(path, "w");
		if (!csv)
			fprintf(stderr, "bench pool: cannot write %s\n", path);
	}
	if (csv) {
		fprintf(csv, "round,round_trip_cycles,handover_cycles,dpdk_cycles,rxpath_cycles,"
			     "past_cap_fraction\n");
		for (size_t i = 0; i < n; i++)
			fprintf(csv, "%zu,%.0f,%.3f,%.3f,%.3f,%.4f\n", i, r[i][0], r[i][1], r[i][2],
				r[i][3], r[i][4]);
		fclose(csv);
	}
	free(r);
	free(col);
}

void pool_row2(struct bench_table *t, const struct bench_opts *o, long n, double *trip)
{
	int kinds[] = {X_HANDOFF, X_DPDK,     X_RXP_DEFER, X_RXP_SHARED,
		       X_GLIBC,	  X_MIMALLOC, X_JEMALLOC};
	double res[8][64];
	const char *g = "2 alloc on A, free on B";

	for (int r = 0; r < o->runs; r++) {
		trip[r] = line_round_trip();
		for (size_t k = 0; k < 7; k++) {
			int kind = kinds[k];
#ifdef RXP_HAVE_DPDK
			if (kind == X_DPDK && !have_dpdk)
				continue;
#else
			if (kind == X_DPDK)
				continue;
#endif
			if ((kind == X_MIMALLOC && !mi_malloc_fn) ||
			    (kind == X_JEMALLOC && !je_malloc_fn))
				continue;
			res[k][r] = run_pair(kind, n);
		}
	}
	for (size_t k = 0; k < 7; k++) {
		int kind = kinds[k];
#ifdef RXP_HAVE_DPDK
		if (kind == X_DPDK && !have_dpdk)
			continue;
#else
		if (kind == X_DPDK)
			continue;
#endif
		if ((kind == X_MIMALLOC && !mi_malloc_fn) || (kind == X_JEMALLOC && !je_malloc_fn))
			continue;
		bench_add(t, g, xnames[kind], "cycles/obj", bench_median(res[k], o->runs), 1,
			  kind == X_DPDK || kind == X_HANDOFF ? NULL : "dpdk mempool cache256");
	}
	/* the target is stated against glibc too */
	for (size_t k = 0; k < 7; k++)
		if (kinds[k] == X_RXP_DEFER)
			bench_add(t, "2 vs glibc malloc", "glibc malloc", "cycles/obj",
				  bench_median(res[4], o->runs), 1, NULL),
				bench_add(t, "2 vs glibc malloc", "rxpath deferred free",
					  "cycles/obj", bench_median(res[k], o->runs), 1,
					  "glibc malloc");
}
