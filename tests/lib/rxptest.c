/* Test helpers (see rxptest.h). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "rxptest.h"
#include "buf/rng.h"

void rxpt_rng_seed(struct rxpt_rng *r, uint64_t seed)
{
	rxp_xoshiro_seed(r->s, seed);
}

uint64_t rxpt_rng_next(struct rxpt_rng *r)
{
	return rxp_xoshiro_next(r->s);
}

uint64_t rxpt_rng_below(struct rxpt_rng *r, uint64_t n)
{
	return n ? rxpt_rng_next(r) % n : 0;
}

uint64_t rxpt_seed(const char *test)
{
	const char *env = getenv("RXP_SEED");
	uint64_t seed;

	if (env)
		seed = strtoull(env, NULL, 0);
	else
		seed = (uint64_t)time(NULL) ^ ((uint64_t)clock() << 32);
	printf("[%s] seed %llu (replay with RXP_SEED=%llu)\n", test, (unsigned long long)seed,
	       (unsigned long long)seed);
	fflush(stdout);
	return seed;
}

static atomic_long pages_out;

static void page_release(struct rxp_page *pg)
{
	atomic_fetch_sub(&pages_out, 1);
	free(pg);
}

struct rxp_page *rxpt_page_new(uint32_t size)
{
	struct rxp_page *pg = malloc(sizeof(*pg) + size);

	if (!pg)
		abort();
	rxp_page_set_refcount(pg, 1);
	pg->size = size;
	pg->addr = (uint8_t *)(pg + 1);
	pg->release = page_release;
	pg->owner = NULL;
	pg->priv = 0;
	atomic_fetch_add(&pages_out, 1);
	return pg;
}

long rxpt_pages_outstanding(void)
{
	return atomic_load(&pages_out);
}

void rxpt_fill(uint8_t *p, uint32_t len, uint32_t seed)
{
	for (uint32_t i = 0; i < len; i++)
		p[i] = (uint8_t)(seed + i * 131u);
}

void rxpt_pktpool_teardown(struct rxp_pktpool *pp)
{
	assert_int_equal(rxp_pktpool_pkts_outstanding(pp), 0);
	assert_int_equal(rxp_pktpool_bufs_outstanding(pp), 0);
	assert_int_equal(rxp_pktpool_destroy(pp), 0);
	assert_int_equal(rxpt_pages_outstanding(), 0);
}
