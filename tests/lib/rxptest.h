/*
 * Test helpers: a seeded PRNG whose seed is printed so a failing run can be
 * replayed (RXP_SEED=N), a source of standalone refcounted pages that counts
 * what is outstanding, and the teardown assertion every test ends with.
 */
#ifndef RXPTEST_H
#define RXPTEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "rxpath/page.h"
#include "rxpath/pkt.h"
#include "rxpath/pktpool.h"

/* xoshiro256** seeded by splitmix64. */
struct rxpt_rng {
	uint64_t s[4];
};
void rxpt_rng_seed(struct rxpt_rng *r, uint64_t seed);
uint64_t rxpt_rng_next(struct rxpt_rng *r);
/* Uniform in [0, n). */
uint64_t rxpt_rng_below(struct rxpt_rng *r, uint64_t n);
/* The seed for this run: $RXP_SEED if set, else from the clock; printed. */
uint64_t rxpt_seed(const char *test);

/* Standalone pages (malloc), for page fragments in tests. */
struct rxp_page *rxpt_page_new(uint32_t size);
/* Pages handed out and not yet released. */
long rxpt_pages_outstanding(void);

/* Fill a packet's bytes from a pattern: byte i = (seed + i * 131) & 0xff. */
void rxpt_fill(uint8_t *p, uint32_t len, uint32_t seed);

/* Destroy the pool, asserting nothing is outstanding. */
void rxpt_pktpool_teardown(struct rxp_pktpool *pp);

#endif
