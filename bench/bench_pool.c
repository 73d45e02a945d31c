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
 * pool_row2_placements()).
 *
 * This file: the pools and allocators every row uses, the command line, and
 * the run in order; rows 1 and 3 are in pool/single.c, row 2 in
 * pool/cross.c, what they share in pool/bench_pool.h.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "benchlib.h"
#include "pool/bench_pool.h"
#include "rxpath/pool.h"

#ifdef RXP_HAVE_DPDK
#include <rte_eal.h>
#include <rte_lcore.h>
#include <rte_mempool.h>
#endif

struct rxp_pool *pool;
struct rxp_pool *pool_shared;
void *(*mi_malloc_fn)(size_t);
void (*mi_free_fn)(void *);
void *(*je_malloc_fn)(size_t);
void (*je_free_fn)(void *);
#ifdef RXP_HAVE_DPDK
struct rte_mempool *mp;
int have_dpdk;
#endif
volatile uintptr_t sink;

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
	struct bench_table t = {.name = "pool"};
	struct bench_opts o;
	int instr = 0;
	double row2_secs = 0;
	long n1, n2;

	static_tls_for_jemalloc(argv);
	/* internal: run one loop under callgrind */
	if (argc == 4 && !strcmp(argv[1], "--callgrind-one")) {
		setup_pools(strstr(argv[2], "dpdk") != NULL);
		load_allocators();
		long n = atol(argv[3]);
		void (*fn)(long) = pool_loop_by_name(argv[2]);

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
		"the local cache vs the shared ring (thread 004). Cycles per object.\n\n"
		"Its own options:\n"
		"  --instr      also callgrind instruction counts for the one-thread rows\n"
		"  --row2 S     only row 2 (hand-over, DPDK, rxpath deferred free), round after\n"
		"               round for S seconds, summarised by placement (how long a cache\n"
		"               line takes to go to the other core and back); every round to\n"
		"               pool_row2.csv with --outdir");
	n1 = o.quick ? 200000 : 4000000;
	n2 = o.quick ? 100000 : 1000000;
	setup_pools(1);
	load_allocators();
	bench_pin(0);
	if (row2_secs > 0) {
#ifdef RXP_HAVE_DPDK
		if (have_dpdk) {
			pool_row2_placements(row2_secs, n2, &o);
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
	pool_rows_single(&t, &o, n1);
	/* Row 2 */
	double trip[BENCH_RUNS_MAX];
	pool_row2(&t, &o, n2, trip);
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

	if (instr)
		pool_rows_instr(&o);
	return 0;
}
