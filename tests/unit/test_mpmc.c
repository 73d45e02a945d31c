/*
 * The MPMC pointer ring behind the pools (src/buf/mpmc.h): FIFO order, exact
 * capacity, all-or-nothing bulk and partial burst operations, ranges that
 * wrap past the end of the slots at every offset (copied in two runs), and
 * several producers and consumers at once handing over every pointer exactly
 * once.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "rxptest.h"
#include "buf/mpmc.h"

static void *tok(uint64_t v)
{
	return (void *)(uintptr_t)(v * 64 + 64); /* never NULL, aligned as pool objects are */
}

static uint64_t untok(void *p)
{
	return ((uint64_t)(uintptr_t)p - 64) / 64;
}

/* Random enqueues and dequeues of 0-40 pointers against a model FIFO, on
 * rings whose capacity is and is not a power of two, so that ranges start
 * at every slot and wrap at every split. */
static void one_model_run(struct rxpt_rng *rng, uint32_t capacity)
{
	struct rxp_mpmc *r = rxp_mpmc_create(capacity);
	uint64_t *model = calloc(capacity, sizeof(*model));
	uint64_t next = 0, mhead = 0, mtail = 0; /* model: [mtail, mhead) */
	void *buf[64];

	assert_non_null(r);
	assert_non_null(model);
	for (int step = 0; step < 20000; step++) {
		uint32_t n = (uint32_t)rxpt_rng_below(rng, 41);
		uint32_t held = (uint32_t)(mhead - mtail), got;
		bool bulk = rxpt_rng_below(rng, 2);

		switch (rxpt_rng_below(rng, 3)) {
		case 0: /* enqueue */
			for (uint32_t i = 0; i < n; i++)
				buf[i] = tok(next + i);
			got = rxp_mpmc_enqueue(r, buf, n, bulk);
			if (bulk)
				assert_int_equal(got, n <= capacity - held ? n : 0);
			else
				assert_int_equal(got, n <= capacity - held ? n : capacity - held);
			for (uint32_t i = 0; i < got; i++)
				model[(mhead + i) % capacity] = next + i;
			mhead += got;
			next += got;
			break;
		case 1: /* dequeue, multi-consumer */
			memset(buf, 0, sizeof(buf));
			got = rxp_mpmc_dequeue(r, buf, n, bulk);
			if (bulk)
				assert_int_equal(got, n <= held ? n : 0);
			else
				assert_int_equal(got, n <= held ? n : held);
			for (uint32_t i = 0; i < got; i++)
				assert_int_equal(untok(buf[i]), model[(mtail + i) % capacity]);
			mtail += got;
			break;
		default: /* dequeue, single consumer: a burst */
			memset(buf, 0, sizeof(buf));
			got = rxp_mpmc_dequeue_sc(r, buf, n);
			assert_int_equal(got, n <= held ? n : held);
			for (uint32_t i = 0; i < got; i++)
				assert_int_equal(untok(buf[i]), model[(mtail + i) % capacity]);
			mtail += got;
			break;
		}
		assert_int_equal(rxp_mpmc_count(r), mhead - mtail);
	}
	/* what is left comes out in order, and then the ring is empty */
	while (mtail != mhead) {
		void *one = NULL;

		assert_int_equal(rxp_mpmc_dequeue(r, &one, 1, true), 1);
		assert_int_equal(untok(one), model[mtail % capacity]);
		mtail++;
	}
	assert_int_equal(rxp_mpmc_count(r), 0);
	free(model);
	free(r);
}

static void test_mpmc_model(void **state)
{
	struct rxpt_rng rng;
	static const uint32_t caps[] = {1, 7, 8, 9, 40, 64, 100, 128};

	(void)state;
	rxpt_rng_seed(&rng, rxpt_seed("mpmc_model"));
	for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++)
		one_model_run(&rng, caps[i]);
}

/* Each start slot and each length that crosses the copy's run threshold,
 * including ranges that end exactly at the last slot and that wrap. */
static void test_mpmc_wrap_every_offset(void **state)
{
	enum { CAP = 32 };
	struct rxp_mpmc *r = rxp_mpmc_create(CAP);
	void *in[CAP], *out[CAP];
	uint64_t v = 0;

	(void)state;
	assert_non_null(r);
	for (uint32_t off = 0; off < CAP; off++) {
		for (uint32_t n = 1; n <= CAP; n++) {
			for (uint32_t i = 0; i < n; i++)
				in[i] = tok(v + i);
			assert_int_equal(rxp_mpmc_enqueue(r, in, n, true), n);
			memset(out, 0, sizeof(out));
			assert_int_equal(rxp_mpmc_dequeue(r, out, n, true), n);
			for (uint32_t i = 0; i < n; i++)
				assert_int_equal(untok(out[i]), v + i);
			v += n;
		}
		/* move the start one slot on */
		in[0] = tok(0);
		assert_int_equal(rxp_mpmc_enqueue(r, in, 1, true), 1);
		assert_int_equal(rxp_mpmc_dequeue_sc(r, out, 1), 1);
	}
	assert_int_equal(rxp_mpmc_count(r), 0);
	free(r);
}

/* Two producers and two consumers move 400,000 distinct pointers in batches
 * of 1-40 through a ring of 64: every one comes out exactly once. */
enum { MT_PER_PROD = 200000, MT_PRODS = 2, MT_CONS = 2 };
struct mt {
	struct rxp_mpmc *r;
	atomic_uchar *seen;
	atomic_long taken;
};
struct mt_arg {
	struct mt *m;
	int id;
};

static void *mt_prod(void *arg)
{
	struct mt_arg *a = arg;
	uint64_t v = (uint64_t)a->id * MT_PER_PROD, end = v + MT_PER_PROD;
	uint32_t seed = (uint32_t)a->id * 2654435761u + 1;
	void *buf[40];

	while (v < end) {
		uint32_t n, got;

		seed = seed * 1103515245u + 12345u;
		n = 1 + (seed >> 16) % 40;
		if (n > end - v)
			n = (uint32_t)(end - v);
		for (uint32_t i = 0; i < n; i++)
			buf[i] = tok(v + i);
		got = rxp_mpmc_enqueue(a->m->r, buf, n, (seed >> 8) & 1);
		if (!got)
			sched_yield();
		v += got;
	}
	return NULL;
}

static void *mt_cons(void *arg)
{
	struct mt_arg *a = arg;
	uint32_t seed = (uint32_t)a->id * 40503u + 7;
	void *buf[40];

	while (atomic_load(&a->m->taken) < (long)MT_PER_PROD * MT_PRODS) {
		uint32_t n, got;

		seed = seed * 1103515245u + 12345u;
		n = 1 + (seed >> 16) % 40;
		got = rxp_mpmc_dequeue(a->m->r, buf, n, (seed >> 8) & 1);
		if (!got) {
			sched_yield();
			continue;
		}
		for (uint32_t i = 0; i < got; i++)
			atomic_fetch_add(&a->m->seen[untok(buf[i])], 1);
		atomic_fetch_add(&a->m->taken, got);
	}
	return NULL;
}

static void test_mpmc_threads(void **state)
{
	struct mt m = {.r = rxp_mpmc_create(64)};
	struct mt_arg args[MT_PRODS + MT_CONS];
	pthread_t th[MT_PRODS + MT_CONS];
	long dup = 0, missing = 0;

	(void)state;
	assert_non_null(m.r);
	m.seen = calloc((size_t)MT_PER_PROD * MT_PRODS, 1);
	assert_non_null(m.seen);
	for (int i = 0; i < MT_PRODS + MT_CONS; i++) {
		args[i] = (struct mt_arg){.m = &m, .id = i};
		assert_int_equal(
			pthread_create(&th[i], NULL, i < MT_PRODS ? mt_prod : mt_cons, &args[i]),
			0);
	}
	for (int i = 0; i < MT_PRODS + MT_CONS; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);
	for (long i = 0; i < (long)MT_PER_PROD * MT_PRODS; i++) {
		dup += m.seen[i] > 1;
		missing += m.seen[i] == 0;
	}
	assert_int_equal(dup, 0);
	assert_int_equal(missing, 0);
	assert_int_equal(atomic_load(&m.taken), (long)MT_PER_PROD * MT_PRODS);
	assert_int_equal(rxp_mpmc_count(m.r), 0);
	free(m.seen);
	free(m.r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mpmc_model),
		cmocka_unit_test(test_mpmc_wrap_every_offset),
		cmocka_unit_test(test_mpmc_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
