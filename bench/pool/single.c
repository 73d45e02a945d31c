/*
 * rxpath bench pool, rows 1 and 3: get+put on one thread, single and in
 * bursts of 32, for rxpath, DPDK's mempool and the mallocs, and a
 * same-thread free to the local cache against one to the shared ring. The
 * loops are noinline so that callgrind counts each on its own
 * (--callgrind-one, --instr). Each copies the globals it uses into locals
 * first, so that calls out of the fast paths do not make it reload them.
 */
#include <stdlib.h>
#include <string.h>

#include "bench_pool.h"

#ifdef RXP_HAVE_DPDK
#include <rte_mempool.h>
#endif

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
	struct rxp_pool *p = pool;

	for (long i = 0; i < n; i++) {
		void *o = rxp_pool_get(p);

		sink += (uintptr_t)o;
		rxp_pool_put_shared(p, o);
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
	void *(*mi_malloc)(size_t) = mi_malloc_fn;
	void (*mi_free)(void *) = mi_free_fn;

	for (long i = 0; i < n; i++) {
		void *o = mi_malloc(OBJ_SIZE);

		sink += (uintptr_t)o;
		mi_free(o);
	}
}

LOOP(loop_mimalloc_bulk)
{
	void *(*mi_malloc)(size_t) = mi_malloc_fn;
	void (*mi_free)(void *) = mi_free_fn;
	void *o[BULK];

	for (long i = 0; i < n / BULK; i++) {
		for (int k = 0; k < BULK; k++)
			o[k] = mi_malloc(OBJ_SIZE);
		sink += (uintptr_t)o[BULK - 1];
		for (int k = 0; k < BULK; k++)
			mi_free(o[k]);
	}
}

LOOP(loop_jemalloc)
{
	void *(*je_malloc)(size_t) = je_malloc_fn;
	void (*je_free)(void *) = je_free_fn;

	for (long i = 0; i < n; i++) {
		void *o = je_malloc(OBJ_SIZE);

		sink += (uintptr_t)o;
		je_free(o);
	}
}

#ifdef RXP_HAVE_DPDK
LOOP(loop_dpdk_single)
{
	struct rte_mempool *m = mp;

	for (long i = 0; i < n; i++) {
		void *o;

		rte_mempool_get(m, &o);
		sink += (uintptr_t)o;
		rte_mempool_put(m, o);
	}
}

LOOP(loop_dpdk_bulk)
{
	struct rte_mempool *m = mp;
	void *o[BULK];

	for (long i = 0; i < n / BULK; i++) {
		rte_mempool_get_bulk(m, o, BULK);
		sink += (uintptr_t)o[BULK - 1];
		rte_mempool_put_bulk(m, o, BULK);
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

void (*pool_loop_by_name(const char *name))(long)
{
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
		if (!strcmp(loops[i].name, name))
			return loops[i].fn;
	return NULL;
}

void pool_rows_single(struct bench_table *t, const struct bench_opts *o, long n)
{
	struct variant v[sizeof(single_variants) / sizeof(single_variants[0])];
	size_t nv = sizeof(v) / sizeof(v[0]);

	memcpy(v, single_variants, sizeof(v));
	fix_dpdk_loops(v, nv);
	/* Rows 1 and 3: interleave variants run by run, so drift hits all alike. */
	{
		double res[16][64];

		for (int r = 0; r < o->runs; r++)
			for (size_t i = 0; i < nv; i++)
				if (available(&v[i]) && v[i].loop)
					res[i][r] = time_loop(v[i].loop, n);
		for (size_t i = 0; i < nv; i++)
			if (available(&v[i]) && v[i].loop)
				bench_add(t, v[i].group, v[i].name, "cycles/obj",
					  bench_median(res[i], o->runs), 1, v[i].baseline);
	}
}

void pool_rows_instr(const struct bench_opts *o)
{
	struct bench_table ti = {.name = "pool_instr"};
	long n = 100000;
	static const struct {
		const char *g, *name, *loop, *base;
	} iv[] = {
		{"1 single", "dpdk mempool cache256", "loop_dpdk_single", NULL},
		{"1 single", "rxpath pool cache256", "loop_rxp_single", "dpdk mempool cache256"},
		{"1 single", "rxpath pool, 2 allocating threads", "loop_rxp_single_sh",
		 "dpdk mempool cache256"},
		{"1 single", "glibc malloc", "loop_glibc", "dpdk mempool cache256"},
		{"1 single", "mimalloc", "loop_mimalloc", "dpdk mempool cache256"},
		{"1 bulk32", "dpdk mempool cache256", "loop_dpdk_bulk", NULL},
		{"1 bulk32", "rxpath pool cache256", "loop_rxp_bulk", "dpdk mempool cache256"},
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
			bench_add(&ti, iv[i].g, iv[i].name, "instr/obj", (double)ir / (double)n, 1,
				  iv[i].base);
	}
	if (ti.n)
		bench_report(&ti, o);
	else
		fprintf(stderr, "bench pool: no callgrind run succeeded (is valgrind "
				"installed?): instruction counts left out\n");
}
