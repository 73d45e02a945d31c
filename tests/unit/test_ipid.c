/*
 * Unit tests for the IP ID generator (src/net/ipid.c): uniqueness within a
 * window (one thread and several at once), unpredictability (no shared
 * counter across destinations, random starts, key-dependent mapping, idle
 * jumps bounded by elapsed ticks), clean unsigned wrap, and IPv6 IDs.
 * Ticks are passed explicitly (rxp_ipid_reserve_at) so nothing depends on
 * the wall clock. Case counts scale with RXP_PROPERTY_SCALE (default 1).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rxpath/ipid.h"
#include "rxptest.h"

#define SRC 0x0100000au /* 10.0.0.1 in network order on little-endian */
#define DST 0x0200000au

static unsigned scale(void)
{
	const char *s = getenv("RXP_PROPERTY_SCALE");
	long v = s ? strtol(s, NULL, 10) : 1;

	return v > 0 && v < 1000 ? (unsigned)v : 1;
}

static struct rxp_ipid_table *mktable(uint32_t n, const uint8_t *key)
{
	struct rxp_ipid_config c = {.n_buckets = n, .key = key};
	struct rxp_ipid_table *t = rxp_ipid_create(&c);

	assert_non_null(t);
	return t;
}

static void test_create_sizes(void **state)
{
	struct rxp_ipid_table *t = rxp_ipid_create(NULL);
	struct rxp_ipid_config bad = {.n_buckets = 1000};

	assert_non_null(t);
	assert_true(rxp_ipid_n_buckets(t) >= RXP_IPID_MIN_BUCKETS);
	assert_true(rxp_ipid_n_buckets(t) <= RXP_IPID_MAX_BUCKETS);
	assert_int_equal(rxp_ipid_n_buckets(t) & (rxp_ipid_n_buckets(t) - 1), 0);
	/* the real clock path works: each reservation returns the first of
	 * its IDs and leaves the bucket's counter just past the last, so two
	 * in a row differ (the second may have jumped, by less than the
	 * milliseconds between them) */
	uint32_t bkt = rxp_ipid_bucket_of(t, SRC, DST, 17);
	uint16_t a = rxp_ipid_reserve(t, SRC, DST, 17, 1);

	assert_int_equal((uint16_t)rxp_ipid_bucket_counter(t, bkt), (uint16_t)(a + 1));
	uint16_t b = rxp_ipid_reserve(t, SRC, DST, 17, 3);

	assert_int_not_equal(b, a);
	assert_int_equal((uint16_t)rxp_ipid_bucket_counter(t, bkt), (uint16_t)(b + 3));
	rxp_ipid_destroy(t);
	errno = 0;
	assert_null(rxp_ipid_create(&bad));
	assert_int_equal(errno, EINVAL);
}

/* One tuple, one thread: a window of consecutive reservations (random segs,
 * ticks moving on by small steps so idle jumps happen but stay small) never
 * hands out a 16-bit ID twice. */
static void test_unique_window_one_thread(void **state)
{
	uint64_t seed = rxpt_seed("ipid_unique_one");
	struct rxpt_rng r;
	unsigned rounds = 20 * scale(), cases = 0;

	rxpt_rng_seed(&r, seed);
	for (unsigned round = 0; round < rounds; round++) {
		struct rxp_ipid_table *t = mktable(1u << 16, NULL);
		static uint8_t seen[65536];
		uint32_t now = (uint32_t)rxpt_rng_next(&r), used = 0;

		memset(seen, 0, sizeof(seen));
		/* Budget: IDs plus the largest possible jumps stay < 2^16. */
		while (used < 40000) {
			uint32_t segs = 1 + (uint32_t)rxpt_rng_below(&r, 8);
			uint32_t step = rxpt_rng_below(&r, 64) == 0
						? 1 + (uint32_t)rxpt_rng_below(&r, 4)
						: 0;
			uint16_t id;

			now += step;
			used += segs + (step ? step - 1 : 0);
			id = rxp_ipid_reserve_at(t, SRC, DST, 17, segs, now);
			for (uint32_t k = 0; k < segs; k++) {
				uint16_t v = (uint16_t)(id + k);

				if (seen[v])
					fail_msg("ID %u repeated after %u IDs (seed %llu)", v, used,
						 (unsigned long long)seed);
				seen[v] = 1;
				cases++;
			}
		}
		rxp_ipid_destroy(t);
	}
	print_message("ipid unique one thread: %u IDs checked\n", cases);
}

static uint32_t fixed_clock(void *arg)
{
	return *(const uint32_t *)arg;
}

struct mt_arg {
	struct rxp_ipid_table *t;
	pthread_barrier_t *bar;
	uint16_t *out;
	unsigned n;
};

static void *mt_worker(void *p)
{
	struct mt_arg *a = p;

	pthread_barrier_wait(a->bar);
	for (unsigned i = 0; i < a->n; i++)
		a->out[i] = rxp_ipid_reserve_at(a->t, SRC, DST, 17, 1, 12345);
	return NULL;
}

/* Several threads reserving on one tuple at once get disjoint IDs. */
static void test_unique_threads(void **state)
{
	enum { NT = 4 };
	unsigned per = 15000, rounds = 4 * scale();
	pthread_barrier_t bar;

	for (unsigned round = 0; round < rounds; round++) {
		/* The table's clock stands at the tick the workers pass, so
		 * no bucket jumps: a jump of up to 2^32 between two racing
		 * first calls would (correctly) break 16-bit uniqueness
		 * across it, which is not what this test is about. */
		static uint32_t tick = 12345;
		struct rxp_ipid_config cfg = {
			.n_buckets = 1u << 16, .clock = fixed_clock, .clock_arg = &tick};
		struct rxp_ipid_table *t = rxp_ipid_create(&cfg);
		struct mt_arg a[NT];
		pthread_t th[NT];
		static uint8_t seen[65536];

		assert_non_null(t);
		memset(seen, 0, sizeof(seen));
		pthread_barrier_init(&bar, NULL, NT);
		for (int i = 0; i < NT; i++) {
			a[i] = (struct mt_arg){.t = t, .bar = &bar, .n = per};
			a[i].out = malloc(per * sizeof(uint16_t));
			assert_int_equal(pthread_create(&th[i], NULL, mt_worker, &a[i]), 0);
		}
		for (int i = 0; i < NT; i++)
			assert_int_equal(pthread_join(th[i], NULL), 0);
		pthread_barrier_destroy(&bar);
		for (int i = 0; i < NT; i++) {
			for (unsigned k = 0; k < per; k++) {
				if (seen[a[i].out[k]])
					fail_msg("ID %u handed out twice", a[i].out[k]);
				seen[a[i].out[k]] = 1;
			}
			free(a[i].out);
		}
		rxp_ipid_destroy(t);
	}
	print_message("ipid unique threads: %u x %d threads x %u IDs\n", rounds, NT, per);
}

/* Traffic to one destination does not move another's IDs: with a shared
 * counter the step between successive IDs to d1 would equal 1 + (IDs sent
 * to d2 in between); here it is always 1 while the tick stands still. */
static void test_no_shared_counter(void **state)
{
	uint64_t seed = rxpt_seed("ipid_no_shared");
	struct rxpt_rng r;
	struct rxp_ipid_table *t = mktable(1u << 16, NULL);
	uint32_t d2 = DST + 0x01000000u;
	uint16_t prev;

	rxpt_rng_seed(&r, seed);
	while (rxp_ipid_bucket_of(t, SRC, d2, 17) == rxp_ipid_bucket_of(t, SRC, DST, 17))
		d2 += 0x01000000u;
	prev = rxp_ipid_reserve_at(t, SRC, DST, 17, 1, 7);
	for (int i = 0; i < 1000; i++) {
		unsigned k = (unsigned)rxpt_rng_below(&r, 5);
		uint16_t id;

		for (unsigned j = 0; j < k; j++)
			(void)rxp_ipid_reserve_at(t, SRC, d2, 17, 1, 7);
		id = rxp_ipid_reserve_at(t, SRC, DST, 17, 1, 7);
		assert_int_equal((uint16_t)(id - prev), 1);
		prev = id;
	}
	/* starting values of different buckets are unrelated: of 64
	 * destinations, the (ID - index) values are not all one number */
	{
		uint16_t first = rxp_ipid_reserve_at(t, SRC, 0x0a0b0c00u, 6, 1, 7);
		int same = 0;

		for (uint32_t i = 1; i < 64; i++)
			same += (uint16_t)(rxp_ipid_reserve_at(t, SRC, 0x0a0b0c00u + (i << 24), 6,
							       1, 7) -
					   i) == first;
		assert_true(same < 8);
	}
	rxp_ipid_destroy(t);
}

/* Same key, same tuple, two tables: the same bucket, unrelated counters. */
static void test_tables_start_apart(void **state)
{
	uint8_t key[RXP_IPID_KEY_LEN] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
	struct rxp_ipid_table *a = mktable(1u << 16, key), *b = mktable(1u << 16, key);
	int equal = 0;

	for (uint32_t i = 0; i < 32; i++) {
		uint32_t d = DST + (i << 24);

		assert_int_equal(rxp_ipid_bucket_of(a, SRC, d, 17),
				 rxp_ipid_bucket_of(b, SRC, d, 17));
		equal += rxp_ipid_reserve_at(a, SRC, d, 17, 1, 1) ==
			 rxp_ipid_reserve_at(b, SRC, d, 17, 1, 1);
	}
	assert_true(equal < 4); /* expected 32 / 65536 */
	rxp_ipid_destroy(a);
	rxp_ipid_destroy(b);
}

/* Another key, another mapping; and the mapping covers the table. */
static void test_key_changes_mapping(void **state)
{
	uint8_t k1[RXP_IPID_KEY_LEN] = {1}, k2[RXP_IPID_KEY_LEN] = {2};
	struct rxp_ipid_table *a = mktable(1u << 16, k1), *b = mktable(1u << 16, k2);
	struct rxp_ipid_table *c = mktable(1u << 16, k1);
	unsigned same_ab = 0, n = 4096;
	static uint8_t hit[1u << 16];
	unsigned distinct = 0;

	memset(hit, 0, sizeof(hit));
	for (uint32_t i = 0; i < n; i++) {
		uint32_t d = 0x0000000au | (i << 16), ba = rxp_ipid_bucket_of(a, SRC, d, 17);

		same_ab += ba == rxp_ipid_bucket_of(b, SRC, d, 17);
		assert_int_equal(ba, rxp_ipid_bucket_of(c, SRC, d, 17));
		distinct += !hit[ba];
		hit[ba] = 1;
	}
	assert_true(same_ab < 8); /* expected n / 65536 < 1 */
	assert_true(distinct > n * 9 / 10); /* expected ~ n - n^2/2^17 */
	rxp_ipid_destroy(a);
	rxp_ipid_destroy(b);
	rxp_ipid_destroy(c);
}

/* An idle bucket jumps by a random amount in [0, elapsed): never more, and
 * not always the same (so the jump does not count anything). */
static void test_idle_jump(void **state)
{
	struct rxp_ipid_table *t = mktable(1u << 16, NULL);
	uint32_t b = rxp_ipid_bucket_of(t, SRC, DST, 17);
	unsigned distinct_steps = 0, n = 2000 * scale();
	uint32_t last_step = ~0u;

	for (unsigned i = 0; i < n; i++) {
		uint32_t elapsed = 1 + (uint32_t)(i % 1000);
		uint32_t c0 = (uint32_t)i * 977u;

		rxp_ipid_bucket_set(t, b, c0, 100);
		uint32_t id = rxp_ipid_reserve_at(t, SRC, DST, 17, 3, 100 + elapsed);
		uint32_t step = (uint16_t)(id - (uint16_t)c0);

		assert_true(step < elapsed);
		assert_int_equal(rxp_ipid_bucket_counter(t, b), c0 + step + 3);
		/* same tick again: no jump */
		assert_int_equal(rxp_ipid_reserve_at(t, SRC, DST, 17, 1, 100 + elapsed),
				 (uint16_t)(c0 + step + 3));
		distinct_steps += step != last_step;
		last_step = step;
	}
	assert_true(distinct_steps > n / 2);
	rxp_ipid_destroy(t);
}

/* Counters just below the 32-bit and the 16-bit wrap wrap cleanly (this
 * test runs under UBSan in the sanitizer build). */
static void test_wrap(void **state)
{
	struct rxp_ipid_table *t = mktable(1u << 4, NULL);
	uint32_t b = rxp_ipid_bucket_of(t, SRC, DST, 17);

	rxp_ipid_bucket_set(t, b, UINT32_MAX - 2, 50);
	assert_int_equal(rxp_ipid_reserve_at(t, SRC, DST, 17, 5, 50), 0xfffd);
	assert_int_equal(rxp_ipid_bucket_counter(t, b), 2);
	assert_int_equal(rxp_ipid_reserve_at(t, SRC, DST, 17, 1, 50), 2);

	rxp_ipid_bucket_set(t, b, 0xfffe, 50);
	assert_int_equal(rxp_ipid_reserve_at(t, SRC, DST, 17, 4, 50), 0xfffe);
	assert_int_equal(rxp_ipid_reserve_at(t, SRC, DST, 17, 1, 50), 2);
	assert_int_equal(rxp_ipid_bucket_counter(t, b), 0x10003);

	/* a jump across the wrap, with the tick itself wrapping */
	rxp_ipid_bucket_set(t, b, UINT32_MAX, UINT32_MAX - 10);
	uint16_t id = rxp_ipid_reserve_at(t, SRC, DST, 17, UINT16_MAX, 5);
	assert_true((uint16_t)(id - 0xffff) < 16);
	rxp_ipid_destroy(t);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static void test_atomic_and_v6(void **state)
{
	struct rxp_ipid_table *t = mktable(1u << 16, NULL);
	unsigned n = 20000, dups = 0;
	uint32_t *v = malloc(n * sizeof(*v));

	uint32_t bkt = rxp_ipid_bucket_of(t, SRC, DST, 17);
	uint32_t before = rxp_ipid_bucket_counter(t, bkt);
	uint16_t id;

	/* atomic: 0, and no counter value consumed */
	assert_int_equal(rxp_ipid_select_v4(t, SRC, DST, 17, true), 0);
	assert_int_equal(rxp_ipid_bucket_counter(t, bkt), before);
	/* not atomic: one ID from the table, the counter just past it */
	id = rxp_ipid_select_v4(t, SRC, DST, 17, false);
	assert_int_equal((uint16_t)rxp_ipid_bucket_counter(t, bkt), (uint16_t)(id + 1));
	assert_int_not_equal(rxp_ipid_bucket_counter(t, bkt), before);
	for (unsigned i = 0; i < n; i++) {
		v[i] = rxp_ipid_v6();
		assert_int_not_equal(v[i], 0);
	}
	/* sort and count repeats: expected n^2 / 2^33 ~ 0.05 */
	qsort(v, n, sizeof(*v), cmp_u32);
	for (unsigned i = 1; i < n; i++)
		dups += v[i] == v[i - 1];
	assert_true(dups < 3);
	free(v);
	rxp_ipid_destroy(t);
}

/* A forked child does not repeat the parent's next IPv6 IDs. */
static void test_v6_fork(void **state)
{
	uint32_t mine[4], theirs[4] = {0};
	int fd[2], same = 0;
	pid_t pid;

	(void)rxp_ipid_v6(); /* fill this thread's batch */
	assert_int_equal(pipe(fd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		for (int i = 0; i < 4; i++)
			theirs[i] = rxp_ipid_v6();
		_exit(write(fd[1], theirs, sizeof(theirs)) == sizeof(theirs) ? 0 : 1);
	}
	for (int i = 0; i < 4; i++)
		mine[i] = rxp_ipid_v6();
	assert_int_equal(read(fd[0], theirs, sizeof(theirs)), sizeof(theirs));
	waitpid(pid, NULL, 0);
	close(fd[0]);
	close(fd[1]);
	for (int i = 0; i < 4; i++)
		same += mine[i] == theirs[i];
	assert_int_equal(same, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create_sizes),
		cmocka_unit_test(test_unique_window_one_thread),
		cmocka_unit_test(test_unique_threads),
		cmocka_unit_test(test_no_shared_counter),
		cmocka_unit_test(test_tables_start_apart),
		cmocka_unit_test(test_key_changes_mapping),
		cmocka_unit_test(test_idle_jump),
		cmocka_unit_test(test_wrap),
		cmocka_unit_test(test_atomic_and_v6),
		cmocka_unit_test(test_v6_fork),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
