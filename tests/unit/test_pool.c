/* Unit tests for rxp_pool (src/buf/pool.c): caches, deferred remote free,
 * the deferred-list cap, exhaustion, bulk operations and the leak report. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rxptest.h"
#include "rxpath/compiler.h"
#include "rxpath/log.h"

static struct rxp_pool *mk(unsigned n, unsigned cache, unsigned defer_max)
{
	struct rxp_pool_config c = {
		.name = "tp", .obj_size = 100, .n = n, .cache_size = cache, .defer_max = defer_max};
	struct rxp_pool *p = rxp_pool_create(&c);

	assert_non_null(p);
	return p;
}

static void teardown(struct rxp_pool *p)
{
	assert_int_equal(rxp_pool_outstanding(p), 0);
	assert_int_equal(rxp_pool_destroy(p), 0);
}

/* THPeligible of the mapping that holds addr in /proc/self/smaps: 1 or 0,
 * -1 when the kernel does not say. */
static int thp_eligible(const void *addr)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[256];
	int in = 0, r = -1;
	unsigned long lo, hi, a = (unsigned long)addr;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 &&
		    strchr(line, '-') < strchr(line, ' '))
			in = a >= lo && a < hi;
		else if (in && sscanf(line, "THPeligible: %d", &r) == 1)
			break;
	}
	fclose(f);
	return r;
}

/* The system's transparent huge page mode: 'a'lways, 'm'advise, 'n'ever. */
static char thp_mode(void)
{
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
	char buf[128] = "";

	if (f) {
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = 0;
		fclose(f);
	}
	return strstr(buf, "[always]") ? 'a' : strstr(buf, "[madvise]") ? 'm' : 'n';
}

/* THPeligible of a pool made from c, read at its first object (which is
 * written, so its page is there); the pool is torn down. */
static int pool_thp_eligible(const struct rxp_pool_config *c)
{
	struct rxp_pool *p = rxp_pool_create(c);
	void *o;
	int r;

	assert_non_null(p);
	o = rxp_pool_get(p);
	assert_non_null(o);
	memset(o, 0xa5, c->obj_size);
	r = thp_eligible(o);
	rxp_pool_put(p, o);
	teardown(p);
	return r;
}

/* A pool of 2 MiB and more lies on memory marked for transparent huge
 * pages, so that a walk over its objects is not a TLB miss per 4 KiB; with
 * RXP_NO_HUGEPAGE set it is not marked. Under 2 MiB it comes from the heap
 * and is not marked either. */
static void test_large_pool_on_huge_pages(void **state)
{
	struct rxp_pool_config big = {.name = "big", .obj_size = 2000, .n = 4096},
			       small = {.name = "small", .obj_size = 100, .n = 64};
	char mode = thp_mode();
	int r;

	(void)state;
	unsetenv("RXP_NO_HUGEPAGE");
	r = pool_thp_eligible(&big);
	if (r < 0 || mode == 'n')
		skip(); /* no THPeligible line, or no transparent huge pages */
	assert_int_equal(r, 1);

	setenv("RXP_NO_HUGEPAGE", "1", 1);
	r = pool_thp_eligible(&big);
	unsetenv("RXP_NO_HUGEPAGE");
	if (mode == 'm')
		assert_int_equal(r, 0);
	r = pool_thp_eligible(&small);
	if (mode == 'm')
		assert_int_equal(r, 0);
}

static void test_single_thread(void **state)
{
	struct rxp_pool *p = mk(1000, 0, 0);
	void *objs[1000];
	struct rxp_pool_stats st;

	/* What the pool was made with. */
	assert_string_equal(rxp_pool_name(p), "tp");
	assert_int_equal(rxp_pool_obj_size(p), 100);
	for (int i = 0; i < 1000; i++) {
		objs[i] = rxp_pool_get(p);
		assert_non_null(objs[i]);
		assert_true(rxp_pool_contains(p, objs[i]));
		assert_true(((uintptr_t)objs[i] & 63) == 0); /* line-aligned */
		memset(objs[i], i & 0xff, 100);
	}
	/* all distinct: each carries its own fill */
	for (int i = 0; i < 1000; i++)
		assert_int_equal(((uint8_t *)objs[i])[99], i & 0xff);
	assert_null(rxp_pool_get(p)); /* exhausted: NULL, counted, no block */
	rxp_pool_get_stats(p, &st);
	assert_int_equal(st.alloc, 1000);
	assert_int_equal(st.alloc_fail, 1);
	assert_int_equal(st.outstanding, 1000);
	for (int i = 0; i < 1000; i++)
		rxp_pool_put(p, objs[i]);
	/* LIFO: the last freed is the first handed out again */
	void *o = rxp_pool_get(p);
	assert_ptr_equal(o, objs[999]);
	rxp_pool_put(p, o);
	teardown(p);
}

static void test_bulk_and_nocache(void **state)
{
	struct rxp_pool *p = mk(100, RXP_POOL_NO_CACHE, 0);
	void *objs[128]; /* room for the refused 41 below */

	assert_int_equal(rxp_pool_get_bulk(p, objs, 60), 0);
	assert_int_equal(rxp_pool_get_bulk(p, objs + 60, 41), -ENOMEM); /* all or nothing */
	assert_int_equal(rxp_pool_outstanding(p), 60);
	assert_int_equal(rxp_pool_get_bulk(p, objs + 60, 40), 0);
	rxp_pool_put_bulk(p, objs, 100);
	teardown(p);

	p = mk(600, 256, 0);
	assert_int_equal(rxp_pool_get_bulk(p, objs, 32), 0);
	rxp_pool_put_bulk(p, objs, 32);
	/* bulk larger than the cache goes to the ring directly */
	void **big = calloc(600, sizeof(void *));
	assert_int_equal(rxp_pool_get_bulk(p, big, 300), 0);
	assert_int_equal(rxp_pool_get_bulk(p, big + 300, 300), 0);
	assert_null(rxp_pool_get(p));
	rxp_pool_put_bulk(p, big, 600);
	free(big);
	teardown(p);
}

static void test_bad_config(void **state)
{
	struct rxp_pool_config c = {.obj_size = 0, .n = 10};

	assert_null(rxp_pool_create(&c));
	c.obj_size = 8;
	c.n = 0;
	assert_null(rxp_pool_create(&c));
	c.n = 10;
	c.cache_size = RXP_POOL_CACHE_MAX + 1;
	assert_null(rxp_pool_create(&c));
	/* Names: none gives "pool", a long one is cut to 31 bytes. */
	c.cache_size = 0;
	{
		struct rxp_pool *p = rxp_pool_create(&c);

		assert_non_null(p);
		assert_string_equal(rxp_pool_name(p), "pool");
		assert_int_equal(rxp_pool_obj_size(p), 8);
		teardown(p);
		c.name = "a-pool-name-longer-than-thirty-one-bytes";
		p = rxp_pool_create(&c);
		assert_non_null(p);
		assert_string_equal(rxp_pool_name(p), "a-pool-name-longer-than-thirty-");
		teardown(p);
	}
}

/* ---- two threads: allocate on A, free on B through A's deferred list ---- */

struct xfer {
	struct rxp_pool *p;
	void *_Atomic slot[64];
	atomic_int done_alloc;
	long rounds;
	atomic_long freed;
	atomic_long fails;
};

static void *consumer(void *arg)
{
	struct xfer *x = arg;
	long freed = 0;

	for (;;) {
		/* Read before the scan: the producer sets it after its last
		 * store, so a scan that follows a set flag sees every object
		 * left. Read after the scan, it could come from a store made
		 * behind the scan, and the objects of that store were lost
		 * (seen under load: 59 of 200,000 never freed). */
		int done = atomic_load(&x->done_alloc), any = 0;

		for (int i = 0; i < 64; i++) {
			void *o = atomic_exchange(&x->slot[i], NULL);

			if (o) {
				rxp_pool_put(x->p, o); /* remote: A owns it */
				freed++;
				any = 1;
			}
		}
		if (!any && done)
			break;
	}
	rxp_pool_drain_deferred(x->p); /* hand over staged remote frees, as a poll loop does */
	atomic_store(&x->freed, freed);
	return NULL;
}

static void run_xfer(unsigned defer_max, struct rxp_pool_stats *st)
{
	struct xfer x = {.rounds = 200000};
	pthread_t t;
	long sent = 0;

	x.p = mk(4096, 256, defer_max);
	assert_int_equal(pthread_create(&t, NULL, consumer, &x), 0);
	for (long r = 0; r < x.rounds; r++) {
		void *o = rxp_pool_get(x.p);

		if (!o) {
			/* our objects may sit on our deferred list: take them back */
			rxp_pool_drain_deferred(x.p);
			atomic_fetch_add(&x.fails, 1);
			continue;
		}
		*(long *)o = r;
		for (int i = (int)(r & 63);; i = (i + 1) & 63) {
			void *expect = NULL;

			if (atomic_compare_exchange_strong(&x.slot[i], &expect, o))
				break;
		}
		sent++;
		if ((r & 31) == 0)
			rxp_pool_drain_deferred(x.p); /* the poll loop's drain */
	}
	atomic_store(&x.done_alloc, 1);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(atomic_load(&x.freed), sent);
	rxp_pool_drain_deferred(x.p);
	rxp_pool_get_stats(x.p, st);
	assert_int_equal(st->outstanding, 0);
	assert_int_equal(st->deferred + st->defer_overflow, sent);
	/* everything deferred was drained by its owner */
	assert_int_equal(st->drained, st->deferred);
	teardown(x.p);
}

static void test_remote_free_deferred(void **state)
{
	struct rxp_pool_stats st;

	run_xfer(1u << 20, &st); /* cap never reached: every remote free deferred */
	assert_true(st.deferred > 0);
	assert_int_equal(st.defer_overflow, 0);
}

static void test_remote_free_cap_overflow(void **state)
{
	struct rxp_pool_stats st;
	struct rxp_pool *p = mk(1024, 256, 16);
	void *objs[100];
	pthread_t t;

	/* Allocate 100 here, free them on another thread while we never
	 * drain: 16 fit on our deferred list, the rest go to the ring. */
	for (int i = 0; i < 100; i++)
		objs[i] = rxp_pool_get(p);
	struct xfer x = {.p = p};
	for (int i = 0; i < 64; i++)
		atomic_store(&x.slot[i], objs[i]);
	atomic_store(&x.done_alloc, 1);
	assert_int_equal(pthread_create(&t, NULL, consumer, &x), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	for (int i = 64; i < 100; i++)
		atomic_store(&x.slot[i - 64], objs[i]);
	assert_int_equal(pthread_create(&t, NULL, consumer, &x), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	rxp_pool_get_stats(p, &st);
	assert_int_equal(st.deferred, 16);
	assert_int_equal(st.defer_overflow, 84);
	assert_int_equal(st.outstanding, 0);
	assert_int_equal(rxp_pool_drain_deferred(p), 16);
	teardown(p);

	/* the same traffic through the steady two-thread path */
	run_xfer(8, &st);
}

/* A freeing thread that runs commands one at a time, so a test can
 * interleave its frees with the owner's drains. */
struct remote {
	struct rxp_pool *p;
	void **objs;
	atomic_int cmd; /* 0 idle, 1 free objs[from, to), 2 hand over (drain), 3 exit */
	int from, to;
	pthread_t th;
};

static void *remote_main(void *arg)
{
	struct remote *r = arg;

	for (;;) {
		int c = atomic_load(&r->cmd);

		if (c == 1)
			for (int i = r->from; i < r->to; i++)
				rxp_pool_put(r->p, r->objs[i]);
		else if (c == 2)
			rxp_pool_drain_deferred(r->p);
		else if (c == 3)
			return NULL;
		if (c)
			atomic_store(&r->cmd, 0);
	}
}

static void remote_do(struct remote *r, int cmd, int from, int to)
{
	r->from = from;
	r->to = to;
	atomic_store(&r->cmd, cmd);
	while (atomic_load(&r->cmd))
		;
}

/* Remote frees go over in batches: a full batch onto the owner's list, what
 * does not fit there onto the shared ring at once (nothing waits on the
 * freeing thread for the owner), and a partial batch when the freeing
 * thread calls rxp_pool_drain_deferred() itself. */
static void test_remote_free_batches(void **state)
{
	struct rxp_pool *p = mk(1024, 256, 16); /* batches of 16 */
	void *objs[40];
	struct remote r = {.p = p, .objs = objs};
	struct rxp_pool_stats st;

	for (int i = 0; i < 40; i++)
		assert_non_null(objs[i] = rxp_pool_get(p));
	assert_int_equal(pthread_create(&r.th, NULL, remote_main, &r), 0);
	remote_do(&r, 1, 0, 16); /* a full batch: onto our list */
	rxp_pool_get_stats(p, &st);
	assert_int_equal(st.deferred, 16);
	remote_do(&r, 1, 16, 32); /* our list is full: the shared ring */
	rxp_pool_get_stats(p, &st);
	assert_int_equal(st.deferred, 16);
	assert_int_equal(st.defer_overflow, 16);
	assert_int_equal(rxp_pool_drain_deferred(p), 16);
	remote_do(&r, 1, 32, 40); /* a partial batch stays over there */
	rxp_pool_get_stats(p, &st);
	assert_int_equal(st.deferred + st.defer_overflow, 32);
	assert_int_equal(st.outstanding, 0); /* freed, if not yet handed over */
	assert_int_equal(rxp_pool_drain_deferred(p), 0);
	remote_do(&r, 2, 0, 0); /* until that thread drains */
	rxp_pool_get_stats(p, &st);
	assert_int_equal(st.deferred, 24);
	assert_int_equal(st.defer_overflow, 16);
	assert_int_equal(rxp_pool_drain_deferred(p), 8);
	atomic_store(&r.cmd, 3);
	assert_int_equal(pthread_join(r.th, NULL), 0);
	teardown(p);
}

/* A pool one thread alone allocates from lets that thread's frees skip the
 * owner check; once a second thread allocates, ownership is per object
 * again: an object of the second thread freed here goes to its list. */
static void *get_one(void *arg)
{
	return rxp_pool_get(arg);
}

static void test_second_allocator_ends_sole_fast_path(void **state)
{
	struct rxp_pool *p = mk(1024, 64, 0);
	struct rxp_pool_stats st;
	void *mine[8], *theirs = NULL;
	pthread_t th;

	assert_int_equal(rxp_pool_get_bulk(p, mine, 8), 0);
	rxp_pool_put_bulk(p, mine, 8); /* ours, no check */
	assert_int_equal(rxp_pool_get_bulk(p, mine, 8), 0);
	assert_int_equal(pthread_create(&th, NULL, get_one, p), 0);
	assert_int_equal(pthread_join(th, &theirs), 0);
	assert_non_null(theirs);
	/* Theirs, in the middle of a bulk free of ours. */
	void *mix[9] = {mine[0], mine[1], mine[2], mine[3], theirs,
			mine[4], mine[5], mine[6], mine[7]};

	rxp_pool_put_bulk(p, mix, 9);
	rxp_pool_drain_deferred(p); /* hands our staged remote free over */
	rxp_pool_get_stats(p, &st);
	assert_int_equal(st.deferred, 1);
	assert_int_equal(st.outstanding, 0);
	/* and a single free of theirs, likewise */
	assert_int_equal(pthread_create(&th, NULL, get_one, p), 0);
	assert_int_equal(pthread_join(th, &theirs), 0);
	rxp_pool_put(p, theirs);
	rxp_pool_drain_deferred(p);
	rxp_pool_get_stats(p, &st);
	assert_int_equal(st.deferred, 2);
	teardown(p);
}

static void test_same_thread_free_stays_local(void **state)
{
	struct rxp_pool *p = mk(1024, 64, 0);
	struct rxp_pool_stats st;
	void *a = rxp_pool_get(p);

	rxp_pool_put(p, a);
	assert_ptr_equal(rxp_pool_get(p), a); /* straight back from the cache */
	rxp_pool_put(p, a);
	rxp_pool_get_stats(p, &st);
	assert_int_equal(st.deferred, 0);
	assert_int_equal(st.defer_overflow, 0);
	/* put_shared bypasses the cache: the next get does not return the
	 * object (a put into the cache would: LIFO), and it is free. */
	a = rxp_pool_get(p);
	rxp_pool_put_shared(p, a);
	assert_int_equal(rxp_pool_outstanding(p), 0);
	{
		void *b = rxp_pool_get(p);

		assert_ptr_not_equal(b, a);
		rxp_pool_put(p, b);
	}
	rxp_pool_flush_cache(p);
	teardown(p);
}

/* ---- the stash: a thread's overflow, handed back in address order ---- */

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void shuffle(void **v, unsigned n, uint64_t *seed)
{
	for (unsigned i = n - 1; i > 0; i--) {
		unsigned j = (unsigned)(rng_next(seed) % (i + 1));
		void *x = v[i];

		v[i] = v[j];
		v[j] = x;
	}
}

/* Free v's n objects in a random order, then take n back into out (which
 * may be v): the pool must then be empty. */
static void put_scrambled_take_back(struct rxp_pool *p, void **v, void **out, unsigned n,
				    uint64_t *seed)
{
	shuffle(v, n, seed);
	for (unsigned i = 0; i < n; i++)
		rxp_pool_put(p, v[i]);
	for (unsigned i = 0; i < n; i++)
		assert_non_null(out[i] = rxp_pool_get(p));
	assert_null(rxp_pool_get(p));
}

/* How many of v's last entries are in ascending address order. */
static unsigned ascending_tail(void *const *v, unsigned n)
{
	unsigned asc = 1;

	while (asc < n && (uintptr_t)v[n - 1 - asc] < (uintptr_t)v[n - asc])
		asc++;
	return asc;
}

static int ptr_cmp(const void *a, const void *b)
{
	const void *pa = *(void *const *)a, *pb = *(void *const *)b;
	uintptr_t x = (uintptr_t)pa, y = (uintptr_t)pb;

	return x < y ? -1 : x > y;
}

/* Free every object in a random order, then take them all again: past what
 * the cache kept (at most its size), refills come lowest address first, so
 * the rest arrive in ascending order. A FIFO store would hand them back in
 * the order they were freed. Several object sizes, for the index the stash
 * computes from an address (the stride's odd part: 3, 33, 1). */
static void test_stash_refills_in_address_order(void **state)
{
	const size_t sizes[] = {100, 2000, 448};
	enum { N = 9000, CACHE = 64 };

	for (unsigned z = 0; z < RXP_ARRAY_SIZE(sizes); z++) {
		struct rxp_pool_config cfg = {
			.name = "tp", .obj_size = sizes[z], .n = N, .cache_size = CACHE};
		struct rxp_pool *p = rxp_pool_create(&cfg);
		void **o = calloc(N, sizeof(void *));
		uint64_t seed = 0x9e3779b97f4a7c15ull + z;
		unsigned asc;

		assert_non_null(p);
		assert_non_null(o);
		for (unsigned i = 0; i < N; i++)
			assert_non_null(o[i] = rxp_pool_get(p));
		put_scrambled_take_back(p, o, o, N, &seed);
		/* the stash counts as free: holding one back is one leak */
		rxp_pool_put(p, o[N - 1]);
		assert_int_equal(rxp_pool_leak_report(p, NULL), N - 1);
		assert_ptr_equal(rxp_pool_get(p), o[N - 1]);
		asc = ascending_tail(o, N);
		print_message("object size %zu: %u of %u taken in ascending order\n", sizes[z], asc,
			      N);
		assert_true(asc >= N - CACHE);
		{ /* and all distinct */
			void **sorted = malloc(N * sizeof(void *));

			assert_non_null(sorted);
			memcpy(sorted, o, N * sizeof(void *));
			qsort(sorted, N, sizeof(void *), ptr_cmp);
			for (unsigned i = 1; i < N; i++)
				assert_ptr_not_equal(sorted[i - 1], sorted[i]);
			free(sorted);
		}
		/* Sparse: every 37th object back, scrambled, across several
		 * summary words; the same set returns, the stash's part in
		 * ascending order. */
		{
			enum { STEP = 37, M = (N + STEP - 1) / STEP };
			void *back[M], *again[M + 1];
			unsigned m = 0;

			for (unsigned i = 0; i < N; i += STEP)
				back[m++] = o[i];
			put_scrambled_take_back(p, back, again, m, &seed);
			assert_true(ascending_tail(again, m) >= m - CACHE);
			for (unsigned i = 0; i < m; i++) { /* the same set */
				bool found = false;

				for (unsigned j = 0; j < m && !found; j++)
					found = again[j] == back[i];
				assert_true(found);
			}
		}
		for (unsigned i = 0; i < N; i++)
			rxp_pool_put(p, o[i]);
		teardown(p);
		free(o);
	}
}

struct take_arg {
	struct rxp_pool *p;
	unsigned want, got;
	void **objs;
};

static void *take_all(void *arg)
{
	struct take_arg *a = arg;
	void *o;

	while (a->got < a->want && (o = rxp_pool_get(a->p)))
		a->objs[a->got++] = o;
	return NULL;
}

/* Objects in one thread's stash are not lost to the others: a thread that
 * finds the shared ring empty gets them (every stash is spilled into the
 * ring), and only what the owner's cache holds stays out of reach, as
 * before. */
static void test_stash_spills_to_other_threads(void **state)
{
	enum { N = 2048, CACHE = 64 };
	struct rxp_pool *p = mk(N, CACHE, 0);
	void **mine = calloc(N, sizeof(void *)), **theirs = calloc(N, sizeof(void *));
	struct take_arg a = {.p = p, .want = N, .objs = theirs};
	struct rxp_pool_stats st;
	pthread_t th;

	assert_non_null(mine);
	assert_non_null(theirs);
	for (unsigned i = 0; i < N; i++)
		assert_non_null(mine[i] = rxp_pool_get(p));
	for (unsigned i = 0; i < N; i++)
		rxp_pool_put(p, mine[i]); /* all but at most CACHE go to our stash */
	assert_int_equal(pthread_create(&th, NULL, take_all, &a), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	print_message("the other thread took %u of %u\n", a.got, N);
	assert_true(a.got >= N - CACHE);
	rxp_pool_get_stats(p, &st);
	assert_int_equal(st.outstanding, a.got);
	assert_int_equal(st.alloc_fail, 1);
	for (unsigned i = 0; i < a.got; i++)
		rxp_pool_put_shared(p, theirs[i]);
	/* with our cache flushed (stash included), another thread gets all */
	rxp_pool_flush_cache(p);
	a.got = 0;
	assert_int_equal(pthread_create(&th, NULL, take_all, &a), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(a.got, N);
	for (unsigned i = 0; i < a.got; i++)
		rxp_pool_put_shared(p, theirs[i]);
	teardown(p);
	free(mine);
	free(theirs);
}

/* Several threads allocate and free (some of it on other threads) from a
 * pool too small for all of them, so the ring keeps running dry and stashes
 * are spilled while their owners use them. Each object carries a flag set
 * while it is held: an object handed out twice, or freed while free, trips
 * it; at the end everything is back. The test itself holds all but
 * CH_LEFT objects meanwhile: fewer than one thread wants to hold, so every
 * thread runs the pool dry even when the threads happen to run one after
 * another (a loaded machine: CI saw 0 refusals when all 256 were free). */
enum { CH_THREADS = 4, CH_HOLD = 192, CH_SLOTS = 64, CH_N = 256, CH_LEFT = 160 };
struct churn {
	struct rxp_pool *p;
	void *_Atomic *slots; /* shared: objects left here are freed by another thread */
	uint64_t seed;
	long iters, got, fails;
	atomic_int *bad;
};

static void flag_init(void *obj, unsigned idx, void *arg)
{
	(void)idx;
	(void)arg;
	atomic_init((atomic_int *)obj, 0);
}

static void churn_free(struct churn *c, void *o)
{
	if (atomic_exchange((atomic_int *)o, 0) != 1)
		atomic_fetch_add(c->bad, 1);
	rxp_pool_put(c->p, o);
}

static void *churn_thread(void *arg)
{
	struct churn *c = arg;
	void *held[CH_HOLD];
	unsigned nh = 0;

	for (long it = 0; it < c->iters; it++) {
		uint64_t r = rng_next(&c->seed);
		unsigned k = 1 + (unsigned)(r >> 8) % 32;

		if (r & 1) {
			while (k-- && nh < CH_HOLD) {
				void *o = rxp_pool_get(c->p);

				if (!o) {
					c->fails++;
					break;
				}
				if (atomic_exchange((atomic_int *)o, 1) != 0)
					atomic_fetch_add(c->bad, 1);
				held[nh++] = o;
				c->got++;
			}
		} else {
			while (k-- && nh) {
				void *o = held[--nh];

				if ((r >> 40) & 1) /* leave it for whoever takes the slot */
					o = atomic_exchange(&c->slots[(r >> 41) % CH_SLOTS], o);
				if (o)
					churn_free(c, o);
			}
		}
		if ((it & 15) == 0)
			rxp_pool_drain_deferred(c->p);
	}
	while (nh)
		churn_free(c, held[--nh]);
	rxp_pool_drain_deferred(c->p);
	rxp_pool_flush_cache(c->p);
	return NULL;
}

static void test_stash_churn_threads(void **state)
{
	struct rxp_pool_config cfg = {
		.name = "tp", .obj_size = 64, .n = CH_N, .cache_size = 32, .obj_init = flag_init};
	struct rxp_pool *p = rxp_pool_create(&cfg);
	void *_Atomic slots[CH_SLOTS] = {NULL};
	void *mine[CH_N - CH_LEFT];
	atomic_int bad = 0;
	struct churn c[CH_THREADS];
	pthread_t th[CH_THREADS];
	long got = 0, fails[CH_THREADS] = {0};

	assert_non_null(p);
	for (int i = 0; i < CH_N - CH_LEFT; i++) {
		assert_non_null(mine[i] = rxp_pool_get(p));
		atomic_store((atomic_int *)mine[i], 1);
	}
	for (int i = 0; i < CH_THREADS; i++) {
		c[i] = (struct churn){.p = p,
				      .slots = slots,
				      .seed = 0x5eed + (uint64_t)i * 7919,
				      .iters = 20000,
				      .bad = &bad};
		assert_int_equal(pthread_create(&th[i], NULL, churn_thread, &c[i]), 0);
	}
	for (int i = 0; i < CH_THREADS; i++) {
		assert_int_equal(pthread_join(th[i], NULL), 0);
		got += c[i].got;
		fails[i] = c[i].fails;
	}
	for (int i = 0; i < CH_SLOTS; i++) {
		void *o = atomic_exchange(&slots[i], NULL);

		if (o) {
			if (atomic_exchange((atomic_int *)o, 0) != 1)
				bad++;
			rxp_pool_put_shared(p, o);
		}
	}
	for (int i = 0; i < CH_N - CH_LEFT; i++)
		churn_free(&c[0], mine[i]);
	rxp_pool_flush_cache(p);
	print_message("%ld objects taken; refused while the pool was empty: %ld %ld %ld %ld\n", got,
		      fails[0], fails[1], fails[2], fails[3]);
	assert_int_equal(atomic_load(&bad), 0);
	for (int i = 0; i < CH_THREADS; i++)
		assert_true(fails[i] > 0); /* each thread ran the pool dry */
	teardown(p);
}

/* ---- leak report ---------------------------------------------------------- */

static char logbuf[8192];
static size_t loglen;

static void capture(enum rxp_log_level lvl, const char *msg, void *arg)
{
	loglen += (size_t)snprintf(logbuf + loglen, sizeof(logbuf) - loglen, "%s\n", msg);
}

static void test_leak_report_catches_injected_leak(void **state)
{
	struct rxp_pool *p = mk(64, 0, 0);
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	void *keep[3];

	for (int i = 0; i < 3; i++)
		keep[i] = rxp_pool_get(p);
	rxp_pool_put(p, keep[0]);
	rxp_pool_put(p, keep[2]);
	/* keep[1] is the injected leak */
	f = open_memstream(&buf, &len);
	assert_int_equal(rxp_pool_leak_report(p, f), 1);
	fclose(f);
	assert_non_null(strstr(buf, "pool tp: object"));
	assert_non_null(strstr(buf, "outstanding"));
#ifdef RXP_DEBUG
	assert_non_null(strstr(buf, "test_pool.c")); /* the allocation site */
#endif
	free(buf);
	loglen = 0;
	rxp_set_log(capture, NULL);
	assert_int_equal(rxp_pool_destroy(p), 1);
	rxp_set_log(NULL, NULL);
	assert_non_null(strstr(logbuf, "1 of 64 objects leaked"));

	/* and through a packet pool: a forgotten packet is reported, as one
	 * object (its buffer's slot, which holds its metadata) or, with the
	 * metadata apart, two */
	for (int apart = 0; apart < 2; apart++) {
		if (apart)
			setenv("RXP_PKT_META_APART", "1", 1);
		else
			unsetenv("RXP_PKT_META_APART");
		struct rxp_pktpool *pp =
			rxp_pktpool_create(&(struct rxp_pktpool_config){.n_pkts = 16});
		unsetenv("RXP_PKT_META_APART");
		assert_non_null(pp);
		struct rxp_pkt *pkt = rxp_pkt_alloc(pp, 10);
		assert_non_null(pkt);
		assert_int_equal(rxp_pktpool_pkts_outstanding(pp), 1);
		assert_int_equal(rxp_pktpool_bufs_outstanding(pp), 1);
		assert_int_equal(rxp_pktpool_leak_report(pp, NULL), apart ? 2 : 1);
		rxp_pkt_consume(pkt);
		rxpt_pktpool_teardown(pp);
	}
}

/* ---- packets freed on another thread go home through the deferred list ---- */

static struct rxp_pktpool *pool_of_q;

static void *free_pkts(void *arg)
{
	struct rxp_pkt_queue *q = arg;
	struct rxp_pkt *p;

	while ((p = rxp_pkt_dequeue(q)))
		rxp_pkt_consume(p);
	/* a worker's poll loop hands staged remote frees over like this */
	rxp_pktpool_drain_deferred(pool_of_q);
	return NULL;
}

static void remote_free(bool apart)
{
	struct rxp_pktpool *pp;
	struct rxp_pkt_queue q;
	struct rxp_pktpool_stats st;
	pthread_t t;

	if (apart)
		setenv("RXP_PKT_META_APART", "1", 1);
	else
		unsetenv("RXP_PKT_META_APART");
	pp = rxp_pktpool_create(&(struct rxp_pktpool_config){.n_pkts = 512});
	unsetenv("RXP_PKT_META_APART");
	assert_non_null(pp);
	pool_of_q = pp;
	rxp_pkt_queue_init(&q);
	for (int i = 0; i < 100; i++) {
		struct rxp_pkt *p = rxp_pkt_alloc(pp, 100);

		assert_non_null(p);
		rxpt_fill(rxp_pkt_put(p, 100), 100, (uint32_t)i);
		rxp_pkt_enqueue(&q, p);
	}
	assert_int_equal(pthread_create(&t, NULL, free_pkts, &q), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	rxp_pktpool_get_stats(pp, &st);
	/* head buffers went to our deferred lists, and the metadata with
	 * them: inside them, or to its own list */
	assert_int_equal(st.pkts.deferred + st.pkts.defer_overflow, apart ? 100 : 0);
	assert_int_equal(st.bufs.deferred + st.bufs.defer_overflow, 100);
	assert_int_equal(st.embedded_alloc, apart ? 0 : 100);
	assert_int_equal(st.embedded_free, apart ? 0 : 100);
	assert_int_equal(st.consumed, 100);
	assert_true(rxp_pktpool_drain_deferred(pp) > 0);
	rxpt_pktpool_teardown(pp);
}

static void test_pkt_remote_free(void **state)
{
	(void)state;
	remote_free(false);
	remote_free(true);
}

/* Review D2: a bulk get whose refill drains the deferred ring first must
 * not write past the cache. Thread A takes the last thread id, so an
 * overrun would leave the allocation (ASan), and every object handed out
 * must be distinct. */
static struct rxp_pool *bulk_p;
static pthread_barrier_t bulk_hold, bulk_ph1, bulk_ph2;
static void *bulk_objs[150];
static int bulk_rc;
static void *bulk_big[200];

static void *bulk_holder(void *a)
{
	(void)rxp_thread_id();
	pthread_barrier_wait(&bulk_hold);
	pthread_barrier_wait(&bulk_hold);
	return NULL;
}

static void *bulk_a(void *a)
{
	for (int i = 0; i < 150; i++)
		bulk_objs[i] = rxp_pool_get(bulk_p);
	rxp_pool_flush_cache(bulk_p);
	pthread_barrier_wait(&bulk_ph1);
	pthread_barrier_wait(&bulk_ph2); /* freed remotely: our deferred ring is full */
	bulk_rc = rxp_pool_get_bulk(bulk_p, bulk_big, 200);
	if (!bulk_rc)
		rxp_pool_put_bulk(bulk_p, bulk_big, 200);
	rxp_pool_flush_cache(bulk_p);
	return NULL;
}

static void test_bulk_get_after_drain(void **state)
{
	unsigned nh = RXP_MAX_THREADS - 2 - rxp_thread_id();
	pthread_t h[RXP_MAX_THREADS], a;

	bulk_p = mk(4096, 256, 0);
	pthread_barrier_init(&bulk_hold, NULL, nh + 1);
	pthread_barrier_init(&bulk_ph1, NULL, 2);
	pthread_barrier_init(&bulk_ph2, NULL, 2);
	for (unsigned i = 0; i < nh; i++)
		assert_int_equal(pthread_create(&h[i], NULL, bulk_holder, NULL), 0);
	pthread_barrier_wait(&bulk_hold);
	assert_int_equal(pthread_create(&a, NULL, bulk_a, NULL), 0);
	pthread_barrier_wait(&bulk_ph1);
	for (int i = 0; i < 150; i++)
		rxp_pool_put(bulk_p, bulk_objs[i]);
	rxp_pool_drain_deferred(bulk_p); /* hand the staged frees over */
	pthread_barrier_wait(&bulk_ph2);
	assert_int_equal(pthread_join(a, NULL), 0);
	pthread_barrier_wait(&bulk_hold);
	for (unsigned i = 0; i < nh; i++)
		assert_int_equal(pthread_join(h[i], NULL), 0);
	assert_int_equal(bulk_rc, 0);
	for (int i = 0; i < 200; i++)
		for (int j = i + 1; j < 200; j++)
			assert_ptr_not_equal(bulk_big[i], bulk_big[j]);
	rxp_pool_flush_cache(bulk_p);
	teardown(bulk_p);
}

/* Frees from another thread into a pool without caches go to the ring. */
static struct rxp_pool *nc_pool;
static void *nc_objs[100];

static void *nc_free(void *arg)
{
	for (int i = 0; i < 100; i++)
		rxp_pool_put(nc_pool, nc_objs[i]);
	return NULL;
}

static void test_nocache_remote_free(void **state)
{
	pthread_t t;

	nc_pool = mk(128, RXP_POOL_NO_CACHE, 0);
	for (int i = 0; i < 100; i++)
		assert_non_null(nc_objs[i] = rxp_pool_get(nc_pool));
	assert_int_equal(pthread_create(&t, NULL, nc_free, NULL), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	{
		struct rxp_pool_stats st;

		rxp_pool_get_stats(nc_pool, &st);
		assert_int_equal(st.free, 100);
		assert_int_equal(st.deferred, 0); /* no owner cache to defer to */
		assert_int_equal(st.defer_overflow, 0);
		assert_int_equal(st.outstanding, 0);
	}
	teardown(nc_pool);
}

static long rss_kib(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	long pages = 0, rss = 0;

	assert_non_null(f);
	assert_int_equal(fscanf(f, "%ld %ld", &pages, &rss), 2);
	fclose(f);
	return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

static void count_init(void *obj, unsigned idx, void *arg)
{
	(void)obj;
	(void)idx;
	(*(unsigned *)arg)++;
}

/* A pool is made lazily: a 2 GiB pool costs no memory until used, its
 * objects are made (obj_init) only as they are first needed, and a pool used to its end hands out every object once. */
static void test_lazy_carving(void **state)
{
	unsigned inits = 0;
	struct rxp_pool_config c = {.name = "lazy",
				    .obj_size = 4000,
				    .n = 1u << 19,
				    .obj_init = count_init,
				    .obj_init_arg = &inits};
	long before = rss_kib();
	struct rxp_pool *p = rxp_pool_create(&c);
	void *objs[300];

	(void)state;
	assert_non_null(p);
	assert_int_equal(rxp_pool_carved(p), 0);
	assert_int_equal(inits, 0);
	assert_true(rss_kib() - before < 16 * 1024); /* not the 2 GiB reserved */
	for (unsigned i = 0; i < 300; i++) {
		objs[i] = rxp_pool_get(p);
		assert_non_null(objs[i]);
		assert_true(rxp_pool_contains(p, objs[i]));
	}
	assert_true(rxp_pool_carved(p) >= 300 && rxp_pool_carved(p) <= 300 + 256);
	assert_int_equal(inits, rxp_pool_carved(p));
	assert_true(rss_kib() - before < 16 * 1024);
	for (unsigned i = 0; i < 300; i++)
		rxp_pool_put(p, objs[i]);
	/* reused, not carved again */
	for (unsigned round = 0; round < 10; round++) {
		for (unsigned i = 0; i < 300; i++)
			objs[i] = rxp_pool_get(p);
		for (unsigned i = 0; i < 300; i++)
			rxp_pool_put(p, objs[i]);
	}
	assert_true(rxp_pool_carved(p) <= 300 + 256);
	teardown(p);

	/* small pools, cached and uncached, singly and in bulk: all n objects
	 * and then exhaustion */
	for (unsigned cache = 0; cache < 2; cache++) {
		struct rxp_pool *q = mk(1000, cache ? 0 : RXP_POOL_NO_CACHE, 0);
		void *all[1001];

		assert_int_equal(rxp_pool_get_bulk(q, all, 100), 0);
		for (unsigned i = 100; i < 1000; i++) {
			all[i] = rxp_pool_get(q);
			assert_non_null(all[i]);
		}
		assert_null(rxp_pool_get(q));
		assert_int_equal(rxp_pool_carved(q), 1000);
		assert_int_equal(rxp_pool_leak_report(q, NULL), 1000);
		for (unsigned i = 0; i < 1000; i++)
			rxp_pool_put(q, all[i]);
		assert_int_equal(rxp_pool_leak_report(q, NULL), 0);
		teardown(q);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_single_thread),
		cmocka_unit_test(test_lazy_carving),
		cmocka_unit_test(test_large_pool_on_huge_pages),
		cmocka_unit_test(test_bulk_and_nocache),
		cmocka_unit_test(test_bad_config),
		cmocka_unit_test(test_remote_free_deferred),
		cmocka_unit_test(test_remote_free_cap_overflow),
		cmocka_unit_test(test_remote_free_batches),
		cmocka_unit_test(test_second_allocator_ends_sole_fast_path),
		cmocka_unit_test(test_same_thread_free_stays_local),
		cmocka_unit_test(test_stash_refills_in_address_order),
		cmocka_unit_test(test_stash_spills_to_other_threads),
		cmocka_unit_test(test_stash_churn_threads),
		cmocka_unit_test(test_leak_report_catches_injected_leak),
		cmocka_unit_test(test_pkt_remote_free),
		cmocka_unit_test(test_bulk_get_after_drain),
		cmocka_unit_test(test_nocache_remote_free),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
