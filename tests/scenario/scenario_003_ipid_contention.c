/*
 * Seed 003: many CPUs reserving IP IDs on one shared counter. Linux's
 * 2016-2020 cmpxchg loop made every contended reservation retry; rxpath's
 * generator does one fetch-add per call. This scenario puts 8 threads on
 * one (src, dst, proto) bucket with GSO-sized reservations (segs 1..40),
 * starting just below the 32-bit wrap, and checks that nothing is lost or
 * handed out twice: the counter ends exactly at start + sum(segs) (the tick
 * stands still, so no idle jumps), and every reserved range is disjoint.
 * No timing is asserted (`rxpath bench ipid` measures cost).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "rxpath/ipid.h"
#include "rxptest.h"

/* Phase 1 counts every reservation (lost updates); phase 2 keeps the total
 * below 2^16 (at most NT * PER2 * MAXSEGS = 64000) to check that no 16-bit
 * ID is handed out twice. */
enum { NT = 8, PER1 = 20000, PER2 = 200, MAXSEGS = 40 };

struct arg {
	struct rxp_ipid_table *t;
	pthread_barrier_t *bar;
	uint64_t seed;
	unsigned per;
	uint32_t first[PER1], segs[PER1];
	uint64_t total;
};

static void *hammer(void *p)
{
	struct arg *a = p;
	struct rxpt_rng r;

	rxpt_rng_seed(&r, a->seed);
	pthread_barrier_wait(a->bar);
	for (unsigned i = 0; i < a->per; i++) {
		a->segs[i] = 1 + (uint32_t)rxpt_rng_below(&r, MAXSEGS);
		a->first[i] = rxp_ipid_reserve_at(a->t, 0x0100000a, 0x0200000a, 17, a->segs[i], 9);
		a->total += a->segs[i];
	}
	return NULL;
}

static uint64_t run_phase(struct rxp_ipid_table *t, struct arg *a, unsigned per, uint64_t seed)
{
	pthread_barrier_t bar;
	pthread_t th[NT];
	uint64_t total = 0;

	pthread_barrier_init(&bar, NULL, NT);
	for (int i = 0; i < NT; i++) {
		memset(&a[i], 0, sizeof(a[i]));
		a[i].t = t;
		a[i].bar = &bar;
		a[i].per = per;
		a[i].seed = seed + (uint64_t)i;
		assert_int_equal(pthread_create(&th[i], NULL, hammer, &a[i]), 0);
	}
	for (int i = 0; i < NT; i++) {
		assert_int_equal(pthread_join(th[i], NULL), 0);
		total += a[i].total;
	}
	pthread_barrier_destroy(&bar);
	return total;
}

static void test_one_bucket_many_threads(void **state)
{
	struct rxp_ipid_config c = {.n_buckets = 1u << 16};
	struct rxp_ipid_table *t = rxp_ipid_create(&c);
	uint64_t seed = rxpt_seed("scenario_003"), total;
	uint32_t b, start = UINT32_MAX - 100000;
	static struct arg a[NT];
	static uint8_t owner[1 << 16];

	assert_non_null(t);
	b = rxp_ipid_bucket_of(t, 0x0100000a, 0x0200000a, 17);

	/* nothing lost: one fetch-add per call, wrapping cleanly */
	rxp_ipid_bucket_set(t, b, start, 9);
	total = run_phase(t, a, PER1, seed);
	assert_int_equal(rxp_ipid_bucket_counter(t, b), (uint32_t)(start + total));
	print_message("scenario 003: %d threads, %llu IDs on one bucket across the wrap\n", NT,
		      (unsigned long long)total);

	/* nothing handed out twice */
	rxp_ipid_bucket_set(t, b, UINT32_MAX - 1000, 9);
	total = run_phase(t, a, PER2, seed ^ 0x5555);
	assert_true(total < (1u << 16));
	memset(owner, 0, sizeof(owner));
	for (int i = 0; i < NT; i++)
		for (unsigned k = 0; k < PER2; k++)
			for (uint32_t s = 0; s < a[i].segs[k]; s++) {
				uint16_t id = (uint16_t)(a[i].first[k] + s);

				if (owner[id])
					fail_msg("ID %u reserved twice (seed %llu)", id,
						 (unsigned long long)seed);
				owner[id] = 1;
			}
	print_message("scenario 003: %llu IDs from %d threads, none twice\n",
		      (unsigned long long)total, NT);
	rxp_ipid_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_bucket_many_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
