/*
 * rxpath bench pool: the buffer layer against its peers, in one run.
 *
 *  1. get+put on one thread, single and bulk 32: rxpath pool (cache 256),
 *     DPDK 22.11 rte_mempool (cache 256), glibc malloc, mimalloc, jemalloc.
 *     rxpath twice: a pool this thread alone allocates from (its frees then
 *     skip the per-object owner check) and one another thread has
 *     allocated from as well (each free reads the object's owner);
 *  2. allocate on thread A, free on thread B (handed over through the same
 *     SPSC ring for every variant): rxpath deferred free, rxpath freeing
 *     straight to the shared ring, DPDK mempool with cache, the mallocs, and
 *     the handover alone;
 *  3. thread 004's change: a same-thread free into the local cache vs into
 *     the shared ring.
 * Cycles per object (TSC), median of --runs; ratios against DPDK (rows 1, 2)
 * or the shared-ring free (row 3). --instr adds callgrind instruction counts
 * for the single-thread rows (stable on a noisy machine); --row2 S runs row 2
 * alone for S seconds and sorts its rounds by placement (see
 * row2_placements()).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "benchlib.h"
#include "rxpath/pool.h"

#ifdef RXP_HAVE_DPDK
#include <rte_eal.h>
#include <rte_lcore.h>
#include <rte_mempool.h>
#endif

#define OBJ_SIZE 2048
#define NOBJ 8192
#define BULK 32

static struct rxp_pool *pool;
/* The same pool shape, but another thread has allocated from it too, so
 * frees check each object's owner (the one-allocator shortcut is off). */
static struct rxp_pool *pool_shared;
static void *(*mi_malloc_fn)(size_t);
static void (*mi_free_fn)(void *);
static void *(*je_malloc_fn)(size_t);
static void (*je_free_fn)(void *);
#ifdef RXP_HAVE_DPDK
static struct rte_mempool *mp;
static int have_dpdk;
#endif
static volatile uintptr_t sink;

/* ---- single-thread loops (noinline: callgrind toggles on them) ---------- */

#define LOOP(name) __attribute__((noinline)) static void name(long n)

/* get+put one at a time, and in bursts, on pool p (inlined into the loops
 * below, so each loop is what callgrind and the clock see). */
static inline __attribute__((always_inline)) void rxp_single(struct rxp_pool *p, long n)
{
	for (long i = 0; i < n; i++) {
		void *o = rxp_pool_get(p);

		sink += (uintptr_t)o;
		rxp_pool_put(p, o);
	}
}

static inline __attribute__((always_inline)) void rxp_bulk(struct rxp_pool *p, long n)
{
	void *o[BULK];

	for (long i = 0; i < n / BULK; i++) {
		rxp_pool_get_bulk(p, o, BULK);
		sink += (uintptr_t)o[BULK - 1];
		rxp_pool_put_bulk(p, o, BULK);
	}
}

LOOP(loop_rxp_single)
{
	rxp_single(pool, n);
}

LOOP(loop_rxp_bulk)
{
	rxp_bulk(pool, n);
}

LOOP(loop_rxp_single_sh)
{
	rxp_single(pool_shared, n);
}

LOOP(loop_rxp_bulk_sh)
{
	rxp_bulk(pool_shared, n);
}

LOOP(loop_rxp_put_shared)
{
	for (long i = 0; i < n; i++) {
		void *o = rxp_pool_get(pool);

		sink += (uintptr_t)o;
		rxp_pool_put_shared(pool, o);
	}
}

LOOP(loop_glibc)
{
	for (long i = 0; i < n; i++) {
		void *o = malloc(OBJ_SIZE);

		sink += (uintptr_t)o;
		free(o);
	}
}

LOOP(loop_glibc_bulk)
{
	void *o[BULK];

	for (long i = 0; i < n / BULK; i++) {
		for (int k = 0; k < BULK; k++)
			o[k] = malloc(OBJ_SIZE);
		sink += (uintptr_t)o[BULK - 1];
		for (int k = 0; k < BULK; k++)
			free(o[k]);
	}
}

LOOP(loop_mimalloc)
{
	for (long i = 0; i < n; i++) {
		void *o = mi_malloc_fn(OBJ_SIZE);

		sink += (uintptr_t)o;
		mi_free_fn(o);
	}
}

LOOP(loop_mimalloc_bulk)
{
	void *o[BULK];

	for (long i = 0; i < n / BULK; i++) {
		for (int k = 0; k < BULK; k++)
			o[k] = mi_malloc_fn(OBJ_SIZE);
		sink += (uintptr_t)o[BULK - 1];
		for (int k = 0; k < BULK; k++)
			mi_free_fn(o[k]);
	}
}

LOOP(loop_jemalloc)
{
	for (long i = 0; i < n; i++) {
		void *o = je_malloc_fn(OBJ_SIZE);

		sink += (uintptr_t)o;
		je_free_fn(o);
	}
}

#ifdef RXP_HAVE_DPDK
LOOP(loop_dpdk_single)
{
	for (long i = 0; i < n; i++) {
		void *o;

		rte_mempool_get(mp, &o);
		sink += (uintptr_t)o;
		rte_mempool_put(mp, o);
	}
}

LOOP(loop_dpdk_bulk)
{
	void *o[BULK];

	for (long i = 0; i < n / BULK; i++) {
		rte_mempool_get_bulk(mp, o, BULK);
		sink += (uintptr_t)o[BULK - 1];
		rte_mempool_put_bulk(mp, o, BULK);
	}
}
#endif

struct variant {
	const char *group;
	const char *name;
	void (*loop)(long);
	int needs; /* 0 none, 1 dpdk, 2 mimalloc, 3 jemalloc */
	const char *baseline;
};

static const struct variant single_variants[] = {
	{"1 one thread, single", "dpdk mempool cache256", NULL, 1, NULL},
	{"1 one thread, single", "rxpath pool cache256", loop_rxp_single, 0,
	 "dpdk mempool cache256"},
	{"1 one thread, single", "rxpath pool, 2 allocating threads", loop_rxp_single_sh, 0,
	 "dpdk mempool cache256"},
	{"1 one thread, single", "glibc malloc", loop_glibc, 0, "dpdk mempool cache256"},
	{"1 one thread, single", "mimalloc", loop_mimalloc, 2, "dpdk mempool cache256"},
	{"1 one thread, single", "jemalloc", loop_jemalloc, 3, "dpdk mempool cache256"},
	{"1 one thread, bulk32", "dpdk mempool cache256", NULL, 1, NULL},
	{"1 one thread, bulk32", "rxpath pool cache256", loop_rxp_bulk, 0, "dpdk mempool cache256"},
	{"1 one thread, bulk32", "rxpath pool, 2 allocating threads", loop_rxp_bulk_sh, 0,
	 "dpdk mempool cache256"},
	{"1 one thread, bulk32", "glibc malloc", loop_glibc_bulk, 0, "dpdk mempool cache256"},
	{"1 one thread, bulk32", "mimalloc", loop_mimalloc_bulk, 2, "dpdk mempool cache256"},
	{"3 same-thread free (thread 004)", "free to shared ring", loop_rxp_put_shared, 0, NULL},
	{"3 same-thread free (thread 004)", "free to local cache", loop_rxp_single, 0,
	 "free to shared ring"},
};

static void fix_dpdk_loops(struct variant *v, size_t n)
{
#ifdef RXP_HAVE_DPDK
	for (size_t i = 0; i < n; i++)
		if (v[i].needs == 1)
			v[i].loop = strstr(v[i].group, "bulk") ? loop_dpdk_bulk : loop_dpdk_single;
#else
	(void)v;
	(void)n;
#endif
}

static int available(const struct variant *v)
{
	switch (v->needs) {
#ifdef RXP_HAVE_DPDK
	case 1:
		return have_dpdk;
#else
	case 1:
		return 0;
#endif
	case 2:
		return mi_malloc_fn != NULL;
	case 3:
		return je_malloc_fn != NULL;
	default:
		return 1;
	}
}

static double time_loop(void (*loop)(long), long n)
{
	loop(n / 10); /* warm caches */
	uint64_t c0 = bench_cycles();
	loop(n);
	return (double)(bench_cycles() - c0) / (double)n;
}

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
static void row2_placements(double secs, long per, const struct bench_opts *o)
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

static void load_allocators(void)
{
#ifdef RXP_MIMALLOC_LIB
	void *h = dlopen(RXP_MIMALLOC_LIB, RTLD_NOW | RTLD_LOCAL);

	if (h) {
		mi_malloc_fn = (void *(*)(size_t))dlsym(h, "mi_malloc");
		mi_free_fn = (void (*)(void *))dlsym(h, "mi_free");
	} else {
		fprintf(stderr, "bench pool: mimalloc not loaded (%s): its rows are left out\n",
			dlerror());
	}
#endif
#ifdef RXP_JEMALLOC_LIB
	void *j = dlopen(RXP_JEMALLOC_LIB, RTLD_NOW | RTLD_LOCAL);

	if (j) {
		je_malloc_fn = (void *(*)(size_t))dlsym(j, "malloc");
		je_free_fn = (void (*)(void *))dlsym(j, "free");
	} else {
		fprintf(stderr, "bench pool: jemalloc not loaded (%s): its rows are left out\n",
			dlerror());
	}
#endif
}

/* libjemalloc's thread-locals are initial-exec: dlopen() can place them only
 * in the static TLS surplus, which glibc's default leaves too small for it
 * ("cannot allocate memory in static TLS block"). The surplus is a tunable
 * read at process start: set it and start again, once. */
static void static_tls_for_jemalloc(char **argv)
{
#ifdef RXP_JEMALLOC_LIB
	static const char tun[] = "glibc.rtld.optional_static_tls=65536";
	const char *old = getenv("GLIBC_TUNABLES");
	char *v;

	if (old && strstr(old, "optional_static_tls"))
		return; /* set already (by us, before the exec, or by the user) */
	if (!old) {
		setenv("GLIBC_TUNABLES", tun, 1);
	} else if (asprintf(&v, "%s:%s", old, tun) >= 0) {
		setenv("GLIBC_TUNABLES", v, 1);
		free(v);
	} else {
		return;
	}
	execv("/proc/self/exe", argv);
	/* exec failed: go on, and jemalloc may not load (it says so) */
	if (old)
		setenv("GLIBC_TUNABLES", old, 1);
	else
		unsetenv("GLIBC_TUNABLES");
#else
	(void)argv;
#endif
}

static void *get_put_one(void *p)
{
	void *o = rxp_pool_get(p);

	rxp_pool_put(p, o);
	rxp_pool_flush_cache(p);
	return NULL;
}

static void setup_pools(int with_dpdk)
{
	struct rxp_pool_config pc = {
		.name = "bench", .obj_size = OBJ_SIZE, .n = NOBJ, .cache_size = 256};

	pool = rxp_pool_create(&pc);
	pool_shared = rxp_pool_create(&pc);
	if (!pool || !pool_shared) {
		perror("rxp_pool_create");
		exit(1);
	}
	{
		/* another thread allocates from pool_shared first (with an id
		 * of its own: ours is taken before it starts) */
		pthread_t t;

		(void)rxp_thread_id();
		pthread_create(&t, NULL, get_put_one, pool_shared);
		pthread_join(t, NULL);
	}
#ifdef RXP_HAVE_DPDK
	if (with_dpdk) {
		if (!bench_eal_init("rxpbenchpool",
				    sysconf(_SC_NPROCESSORS_ONLN) < 2 ? "0" : "0-1")) {
			mp = rte_mempool_create("bench", NOBJ, OBJ_SIZE, 256, 0, NULL, NULL, NULL,
						NULL, SOCKET_ID_ANY, 0);
			have_dpdk = mp != NULL;
		}
		if (!have_dpdk)
			fprintf(stderr,
				"bench pool: DPDK EAL or mempool unavailable; DPDK rows skipped\n");
	}
#else
	(void)with_dpdk;
#endif
}

static void teardown_pools(void)
{
	if (rxp_pool_outstanding(pool_shared))
		fprintf(stderr, "bench pool: shared pool has objects outstanding!\n");
	if (rxp_pool_outstanding(pool))
		fprintf(stderr, "bench pool: %llu objects outstanding!\n",
			(unsigned long long)rxp_pool_outstanding(pool));
	rxp_pool_destroy(pool);
	rxp_pool_destroy(pool_shared);
#ifdef RXP_HAVE_DPDK
	if (have_dpdk) {
		rte_mempool_free(mp);
		rte_eal_cleanup();
	}
#endif
}

int main(int argc, char **argv)
{
	struct variant v[sizeof(single_variants) / sizeof(single_variants[0])];
	size_t nv = sizeof(v) / sizeof(v[0]);
	struct bench_table t = {.name = "pool"};
	struct bench_opts o;
	int instr = 0;
	double row2_secs = 0;
	long n1, n2;

	static_tls_for_jemalloc(argv);
	memcpy(v, single_variants, sizeof(v));
	/* internal: run one loop under callgrind */
	if (argc == 4 && !strcmp(argv[1], "--callgrind-one")) {
		setup_pools(strstr(argv[2], "dpdk") != NULL);
		load_allocators();
		fix_dpdk_loops(v, nv);
		long n = atol(argv[3]);
		void (*fn)(long) = NULL;
		static const struct {
			const char *name;
			void (*fn)(long);
		} loops[] = {
			{"loop_rxp_single", loop_rxp_single},
			{"loop_rxp_bulk", loop_rxp_bulk},
			{"loop_rxp_single_sh", loop_rxp_single_sh},
			{"loop_rxp_bulk_sh", loop_rxp_bulk_sh},
			{"loop_rxp_put_shared", loop_rxp_put_shared},
			{"loop_glibc", loop_glibc},
			{"loop_glibc_bulk", loop_glibc_bulk},
			{"loop_mimalloc", loop_mimalloc},
			{"loop_mimalloc_bulk", loop_mimalloc_bulk},
			{"loop_jemalloc", loop_jemalloc},
#ifdef RXP_HAVE_DPDK
			{"loop_dpdk_single", loop_dpdk_single},
			{"loop_dpdk_bulk", loop_dpdk_bulk},
#endif
		};
		for (size_t i = 0; i < sizeof(loops) / sizeof(loops[0]); i++)
			if (!strcmp(loops[i].name, argv[2]))
				fn = loops[i].fn;
		if (!fn)
			return 2;
		fn(n);
		teardown_pools();
		return 0;
	}
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--instr")) {
			instr = 1;
			memmove(argv + i, argv + i + 1, (size_t)(argc - i) * sizeof(char *));
			argc--;
			i--;
		} else if (!strcmp(argv[i], "--row2")) {
			char *end = NULL;

			row2_secs = i + 1 < argc ? strtod(argv[i + 1], &end) : 0;
			if (!end || *end || !(row2_secs > 0) || row2_secs > 86400) {
				fprintf(stderr, "rxpath bench pool: --row2 wants seconds (0 < s <= "
						"86400)\n");
				return 2;
			}
			memmove(argv + i, argv + i + 2, (size_t)(argc - i - 1) * sizeof(char *));
			argc -= 2;
			i--;
		}
	bench_parse(
		argc, argv, &o, "pool",
		"Buffer pools: rxpath vs DPDK 22.11 rte_mempool vs glibc malloc, mimalloc and\n"
		"jemalloc; one thread, alloc/free across two threads, and same-thread free to\n"
		"the local cache vs the shared ring (thread 004). Cycles per object.\n"
		"  --instr      also callgrind instruction counts for the one-thread rows\n"
		"  --row2 S     only row 2 (hand-over, DPDK, rxpath deferred free), round after\n"
		"               round for S seconds, summarised by placement (how long a cache\n"
		"               line takes to go to the other core and back); every round to\n"
		"               pool_row2.csv with --outdir");
	n1 = o.quick ? 200000 : 4000000;
	n2 = o.quick ? 100000 : 1000000;
	setup_pools(1);
	load_allocators();
	fix_dpdk_loops(v, nv);
	bench_pin(0);
	if (row2_secs > 0) {
#ifdef RXP_HAVE_DPDK
		if (have_dpdk) {
			row2_placements(row2_secs, n2, &o);
			teardown_pools();
			return 0;
		}
#endif
		fprintf(stderr, "rxpath bench pool: --row2 needs DPDK, which this run lacks\n");
		teardown_pools();
		return 1;
	}

	printf("pool benchmark: %d-byte objects, %d per pool, TSC %.2f GHz, %d runs each\n",
	       OBJ_SIZE, NOBJ, bench_tsc_ghz(), o.runs);
	/* Rows 1 and 3: interleave variants run by run, so drift hits all alike. */
	{
		double res[16][64];

		for (int r = 0; r < o.runs; r++)
			for (size_t i = 0; i < nv; i++)
				if (available(&v[i]) && v[i].loop)
					res[i][r] = time_loop(v[i].loop, n1);
		for (size_t i = 0; i < nv; i++)
			if (available(&v[i]) && v[i].loop)
				bench_add(&t, v[i].group, v[i].name, "cycles/obj",
					  bench_median(res[i], o.runs), 1, v[i].baseline);
	}
	/* Row 2 */
	double trip[BENCH_RUNS_MAX];
	{
		int kinds[] = {X_HANDOFF, X_DPDK,     X_RXP_DEFER, X_RXP_SHARED,
			       X_GLIBC,	  X_MIMALLOC, X_JEMALLOC};
		double res[8][64];
		const char *g = "2 alloc on A, free on B";

		for (int r = 0; r < o.runs; r++) {
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
				res[k][r] = run_pair(kind, n2);
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
			if ((kind == X_MIMALLOC && !mi_malloc_fn) ||
			    (kind == X_JEMALLOC && !je_malloc_fn))
				continue;
			bench_add(&t, g, xnames[kind], "cycles/obj", bench_median(res[k], o.runs),
				  1,
				  kind == X_DPDK || kind == X_HANDOFF ? NULL
								      : "dpdk mempool cache256");
		}
		/* the target is stated against glibc too */
		for (size_t k = 0; k < 7; k++)
			if (kinds[k] == X_RXP_DEFER)
				bench_add(&t, "2 vs glibc malloc", "glibc malloc", "cycles/obj",
					  bench_median(res[4], o.runs), 1, NULL),
					bench_add(&t, "2 vs glibc malloc", "rxpath deferred free",
						  "cycles/obj", bench_median(res[k], o.runs), 1,
						  "glibc malloc");
	}
	{
		struct rxp_pool_stats st;

		rxp_pool_get_stats(pool, &st);
		printf("rxpath pool after the run: %llu allocs, %llu deferred, %llu past the cap, "
		       "%llu outstanding\n",
		       (unsigned long long)st.alloc, (unsigned long long)st.deferred,
		       (unsigned long long)st.defer_overflow, (unsigned long long)st.outstanding);
		printf("row 2 placement: a cache line's round trip between the two threads took "
		       "%.0f TSC cycles (median of the runs; near: < 400, far apart: >= 800)\n",
		       bench_median(trip, o.runs));
	}
	bench_report(&t, &o);
	teardown_pools();

	if (instr) {
		struct bench_table ti = {.name = "pool_instr"};
		long n = 100000;
		static const struct {
			const char *g, *name, *loop, *base;
		} iv[] = {
			{"1 single", "dpdk mempool cache256", "loop_dpdk_single", NULL},
			{"1 single", "rxpath pool cache256", "loop_rxp_single",
			 "dpdk mempool cache256"},
			{"1 single", "rxpath pool, 2 allocating threads", "loop_rxp_single_sh",
			 "dpdk mempool cache256"},
			{"1 single", "glibc malloc", "loop_glibc", "dpdk mempool cache256"},
			{"1 single", "mimalloc", "loop_mimalloc", "dpdk mempool cache256"},
			{"1 bulk32", "dpdk mempool cache256", "loop_dpdk_bulk", NULL},
			{"1 bulk32", "rxpath pool cache256", "loop_rxp_bulk",
			 "dpdk mempool cache256"},
			{"1 bulk32", "rxpath pool, 2 allocating threads", "loop_rxp_bulk_sh",
			 "dpdk mempool cache256"},
			{"3 same-thread free", "free to shared ring", "loop_rxp_put_shared", NULL},
			{"3 same-thread free", "free to local cache", "loop_rxp_single",
			 "free to shared ring"},
		};

		printf("\ncallgrind instructions per object (%ld objects):\n", n);
		for (size_t i = 0; i < sizeof(iv) / sizeof(iv[0]); i++) {
			char args[128];
			long ir;

			snprintf(args, sizeof(args), "--callgrind-one %s %ld", iv[i].loop, n);
			ir = bench_callgrind(iv[i].loop, "", args, NULL, NULL);
			if (ir > 0)
				bench_add(&ti, iv[i].g, iv[i].name, "instr/obj",
					  (double)ir / (double)n, 1, iv[i].base);
		}
		if (ti.n)
			bench_report(&ti, &o);
		else
			fprintf(stderr, "bench pool: no callgrind run succeeded (is valgrind "
					"installed?): instruction counts left out\n");
	}
	return 0;
}
