/*
 * IP identification generator (see include/rxpath/ipid.h for the design).
 *
 * Owns: the bucket array of one table, its SipHash key, and per-thread
 * random state for the idle jumps and for IPv6 IDs.
 *
 * Invariants:
 *   - n_buckets is a power of two and mask = n_buckets - 1;
 *   - a bucket's counter is changed only by one atomic fetch-add per
 *     reservation (relaxed: IDs need uniqueness, not ordering with other
 *     memory), so concurrent reservations on one bucket get disjoint ranges
 *     until the 32-bit counter wraps;
 *   - a bucket's stamp only moves by a single compare-exchange from the
 *     value that thread read; the winner alone adds a random delta, so a
 *     bucket jumps at most once per tick however many threads race;
 *   - all counter arithmetic is on uint32_t: wrapping is defined behaviour,
 *     so UBSan has nothing to report (the 2016 cmpxchg loop existed only to
 *     silence a signed-overflow report).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "rxpath/compiler.h"
#include "rxpath/ipid.h"
#include "rxpath/log.h"

struct ipid_bucket {
	_Atomic uint32_t counter;
	_Atomic uint32_t stamp; /* tick of the last use */
};

struct rxp_ipid_table {
	uint32_t mask;
	uint64_t gen; /* unique per table ever created: keys the bucket cache */
	rxp_ipid_clock_fn clock;
	void *clock_arg;
	unsigned char key[crypto_shorthash_KEYBYTES];
	struct ipid_bucket *buckets;
};

_Static_assert(crypto_shorthash_KEYBYTES == RXP_IPID_KEY_LEN, "SipHash key is 128 bits");

static _Atomic uint64_t table_gen;

/* ---- per-thread randomness ---------------------------------------------- */

/*
 * The idle jump only has to be unguessable to someone who cannot read this
 * process's memory, like Linux's prandom for the same purpose: a per-thread
 * wyrand stream seeded from the OS CSPRNG keeps a getrandom() call off the
 * hot path (one per bucket per tick would be thousands per second).
 */
static __thread uint64_t rng_state;
static __thread bool rng_seeded;

#define V6_BATCH 64
static __thread uint32_t v6_buf[V6_BATCH];
static __thread unsigned v6_left;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

/* A forked child inherits the forking thread's random state: without this
 * it would repeat the parent's next IPv6 IDs and jumps. */
static void atfork_child(void)
{
	rng_seeded = false;
	v6_left = 0;
	sodium_memzero(v6_buf, sizeof(v6_buf));
}

static void atfork_register(void)
{
	pthread_atfork(NULL, NULL, atfork_child);
}

static uint32_t rng_u32(void)
{
	if (rxp_unlikely(!rng_seeded)) {
		pthread_once(&atfork_once, atfork_register);
		randombytes_buf(&rng_state, sizeof(rng_state));
		rng_seeded = true;
	}
	rng_state += 0xa0761d6478bd642full;
	__uint128_t m = (__uint128_t)rng_state * (rng_state ^ 0xe7037ed1a0b428dbull);
	return (uint32_t)((uint64_t)(m >> 64) ^ (uint64_t)m);
}

/* Uniform enough in [0, n) without a division (Lemire's multiply-shift). */
static uint32_t rng_below(uint32_t n)
{
	return (uint32_t)(((uint64_t)rng_u32() * n) >> 32);
}

/* ---- clock and sizing ----------------------------------------------------- */

static uint32_t default_clock(void *arg)
{
	struct timespec ts;

	(void)arg;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint32_t)((uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u);
}

static uint32_t buckets_from_memory(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
	uint64_t want = RXP_IPID_MIN_BUCKETS, n = 1;

	if (pages > 0 && psz > 0)
		want = (uint64_t)pages * (uint64_t)psz / 65536u;
	while (n * 2 <= want)
		n *= 2;
	if (n < RXP_IPID_MIN_BUCKETS)
		n = RXP_IPID_MIN_BUCKETS;
	if (n > RXP_IPID_MAX_BUCKETS)
		n = RXP_IPID_MAX_BUCKETS;
	return (uint32_t)n;
}

/* ---- table ---------------------------------------------------------------- */

struct rxp_ipid_table *rxp_ipid_create(const struct rxp_ipid_config *cfg)
{
	struct rxp_ipid_config def = {0};
	struct rxp_ipid_table *t;
	uint32_t n, now;

	if (!cfg)
		cfg = &def;
	n = cfg->n_buckets ? cfg->n_buckets : buckets_from_memory();
	if (n & (n - 1) || n > (1u << 24)) {
		errno = EINVAL;
		return NULL;
	}
	if (sodium_init() < 0) {
		errno = EIO;
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->buckets =
		aligned_alloc(RXP_CACHELINE, RXP_ALIGN_UP((size_t)n * sizeof(struct ipid_bucket),
							  (size_t)RXP_CACHELINE));
	if (!t->buckets) {
		free(t);
		errno = ENOMEM;
		return NULL;
	}
	t->mask = n - 1;
	t->gen = atomic_fetch_add(&table_gen, 1) + 1;
	t->clock = cfg->clock ? cfg->clock : default_clock;
	t->clock_arg = cfg->clock_arg;
	if (cfg->key)
		memcpy(t->key, cfg->key, sizeof(t->key));
	else
		crypto_shorthash_keygen(t->key);

	/* Random starting counters: the first ID to a destination says
	 * nothing about the table, the boot, or the other buckets. */
	now = t->clock(t->clock_arg);
	for (uint32_t i = 0; i < n;) {
		uint32_t r[256], k = n - i < 256 ? n - i : 256;

		randombytes_buf(r, k * sizeof(r[0]));
		for (uint32_t j = 0; j < k; j++, i++) {
			atomic_init(&t->buckets[i].counter, r[j]);
			atomic_init(&t->buckets[i].stamp, now);
		}
	}
	return t;
}

void rxp_ipid_destroy(struct rxp_ipid_table *t)
{
	if (!t)
		return;
	sodium_memzero(t->key, sizeof(t->key));
	free(t->buckets);
	free(t);
}

uint32_t rxp_ipid_n_buckets(const struct rxp_ipid_table *t)
{
	return t->mask + 1;
}

uint32_t rxp_ipid_bucket_of(const struct rxp_ipid_table *t, uint32_t saddr, uint32_t daddr,
			    uint8_t proto)
{
	unsigned char in[9], out[crypto_shorthash_BYTES];
	uint64_t h;

	memcpy(in, &saddr, 4);
	memcpy(in + 4, &daddr, 4);
	in[8] = proto;
	crypto_shorthash(out, in, sizeof(in), t->key);
	memcpy(&h, out, sizeof(h));
	return (uint32_t)h & t->mask;
}

static uint32_t reserve_bucket(struct ipid_bucket *b, uint32_t segs, uint32_t now)
{
	uint32_t old = atomic_load_explicit(&b->stamp, memory_order_relaxed);
	uint32_t delta = 0;

	/* One try, not a loop: whoever loses the race saw the stamp move to
	 * this tick already, and the winner's jump covers both. */
	if (old != now && atomic_compare_exchange_strong_explicit(
				  &b->stamp, &old, now, memory_order_relaxed, memory_order_relaxed))
		delta = rng_below(now - old);
	return atomic_fetch_add_explicit(&b->counter, segs + delta, memory_order_relaxed) + delta;
}

/*
 * SipHash is most of a reservation's cost, and a sender reserves IDs for
 * the same few (src, dst, proto) over and over (Linux keeps the ID in the
 * socket for the same reason). Each thread keeps the buckets it looked up
 * last in a small direct-mapped cache keyed by the whole tuple and the
 * table's generation. It holds nothing the thread could not recompute, so
 * it changes nothing about what IDs reveal.
 */
#define BCACHE 512 /* 12 KiB per thread */
struct bcache_ent {
	uint64_t gen;
	uint32_t saddr, daddr;
	uint32_t bucket;
	uint8_t proto;
};
static __thread struct bcache_ent bcache[BCACHE];

static inline uint32_t bucket_cached(const struct rxp_ipid_table *t, uint32_t saddr, uint32_t daddr,
				     uint8_t proto)
{
	struct bcache_ent *e =
		&bcache[((saddr * 0x9e3779b1u) ^ (daddr * 0x85ebca77u) ^ proto) >> 23];

	if (rxp_likely(e->gen == t->gen && e->saddr == saddr && e->daddr == daddr &&
		       e->proto == proto))
		return e->bucket;
	e->bucket = rxp_ipid_bucket_of(t, saddr, daddr, proto);
	e->gen = t->gen;
	e->saddr = saddr;
	e->daddr = daddr;
	e->proto = proto;
	return e->bucket;
}

uint16_t rxp_ipid_reserve_at(struct rxp_ipid_table *t, uint32_t saddr, uint32_t daddr,
			     uint8_t proto, uint32_t segs, uint32_t now)
{
	uint32_t i = bucket_cached(t, saddr, daddr, proto);

	return (uint16_t)reserve_bucket(&t->buckets[i], segs, now);
}

uint16_t rxp_ipid_reserve(struct rxp_ipid_table *t, uint32_t saddr, uint32_t daddr, uint8_t proto,
			  uint32_t segs)
{
	return rxp_ipid_reserve_at(t, saddr, daddr, proto, segs, t->clock(t->clock_arg));
}

uint16_t rxp_ipid_select_v4(struct rxp_ipid_table *t, uint32_t saddr, uint32_t daddr, uint8_t proto,
			    bool atomic)
{
	return atomic ? 0 : rxp_ipid_reserve(t, saddr, daddr, proto, 1);
}

void rxp_ipid_bucket_set(struct rxp_ipid_table *t, uint32_t bucket, uint32_t counter,
			 uint32_t stamp)
{
	bucket &= t->mask;
	atomic_store_explicit(&t->buckets[bucket].counter, counter, memory_order_relaxed);
	atomic_store_explicit(&t->buckets[bucket].stamp, stamp, memory_order_relaxed);
}

uint32_t rxp_ipid_bucket_counter(const struct rxp_ipid_table *t, uint32_t bucket)
{
	return atomic_load_explicit(&t->buckets[bucket & t->mask].counter, memory_order_relaxed);
}

/* ---- IPv6 ----------------------------------------------------------------- */

/*
 * IPv6 IDs come from the OS CSPRNG (libsodium randombytes), V6_BATCH at a
 * time per thread (the buffer is above) so that one datagram does not cost
 * one getrandom() call.
 */
uint32_t rxp_ipid_v6(void)
{
	uint32_t id;

	do {
		if (rxp_unlikely(!v6_left)) {
			pthread_once(&atfork_once, atfork_register);
			/* Idempotent; libsodium's randombytes
			 * works (and aborts itself without
			 * entropy) even if this failed. */
			if (sodium_init() < 0)
				rxp_log(RXP_LOG_WARN, "ipid: sodium_init failed");
			randombytes_buf(v6_buf, sizeof(v6_buf));
			v6_left = V6_BATCH;
		}
		id = v6_buf[--v6_left];
	} while (!id);
	return id;
}
