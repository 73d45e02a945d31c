/*
 * IP identification: IDs that do not repeat too soon for one (src, dst,
 * proto), cost one atomic add on the hot path, and tell an observer nothing
 * about other traffic or about the host.
 *
 * IPv4 (the design Linux reached in 2020-2021, see reference §4):
 *
 *   - A table (rxp_ipid_table, one per context, as Linux has one key per
 *     network namespace) holds a power-of-two array of buckets, each a 32-bit
 *     counter and a 32-bit last-use tick. The default size is one bucket per
 *     64 KiB of RAM, clamped to [64K, 1M] buckets; every counter starts at a
 *     random value.
 *   - The bucket for a datagram is SipHash-2-4 (libsodium crypto_shorthash)
 *     over (src, dst, proto) with a 128-bit random key per table. The key is
 *     never derived from anything in memory (CVE-2019-10639) and the table is
 *     large enough that bucket collisions do not leak it (CVE-2019-10638).
 *     Each thread caches the bucket of the last 512-odd tuples it saw (keyed
 *     by the whole tuple and the table), so a flow pays for SipHash once,
 *     not per datagram; the cache holds nothing the thread could not
 *     recompute.
 *   - rxp_ipid_reserve() returns the first of segs consecutive IDs with one
 *     atomic fetch-add of (segs + delta). delta is 0 except on a bucket's
 *     first use in a new tick, where it is a random value in [0, elapsed
 *     ticks): an idle bucket then jumps by an amount an observer cannot tell
 *     apart from traffic, so probing one bucket twice does not count what
 *     other hosts were sent in between. Which thread gets to draw delta is
 *     decided by one compare-exchange on the stamp (never retried); the
 *     counter itself is never in a CAS loop, which is what made Linux's
 *     reservation collapse under many cores (seed 003). Arithmetic is
 *     unsigned and wraps.
 *
 * IPv6: rxp_ipid_v6() returns a random non-zero 32-bit ID per datagram (as
 * Linux does since 2021): no shared counter at all, so nothing to predict
 * and nothing to contend on. At 100 IDs in flight to one peer the chance
 * that two collide is about 1 in 850,000.
 *
 * Atomic datagrams (DF set, not fragmented; RFC 6864 §4.1): the ID has no
 * meaning and receivers must ignore it. rxpath writes 0 for them
 * (rxp_ipid_select_v4() with atomic = true), as Linux does for unconnected
 * sockets: it costs nothing, consumes no counter value, and so leaks nothing
 * about the bucket's traffic. Non-atomic datagrams (DF clear, or ones that
 * are fragmented) always take an ID from the table (RFC 6864 §4.2-4.3).
 *
 * Ticks: the table reads its clock callback (default: CLOCK_MONOTONIC_COARSE
 * in milliseconds); tests pass explicit ticks with the *_at() variants.
 */
#ifndef RXPATH_IPID_H
#define RXPATH_IPID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rxpath/compiler.h"

RXP_BEGIN_DECLS

#define RXP_IPID_KEY_LEN 16
#define RXP_IPID_MIN_BUCKETS (1u << 16)
#define RXP_IPID_MAX_BUCKETS (1u << 20)

struct rxp_ipid_table;

/* Returns the current tick (wrapping 32-bit). */
typedef uint32_t (*rxp_ipid_clock_fn)(void *arg);

struct rxp_ipid_config {
	/* Power of two, 1 .. 2^24; 0: sized from memory (one bucket per
	 * 64 KiB of RAM, within [RXP_IPID_MIN_BUCKETS, RXP_IPID_MAX_BUCKETS]).
	 * Sizes below the minimum are for tests. */
	uint32_t n_buckets;
	/* NULL: a random key (the only sane choice outside tests). */
	const uint8_t *key; /* RXP_IPID_KEY_LEN bytes */
	/* NULL: milliseconds of CLOCK_MONOTONIC_COARSE. */
	rxp_ipid_clock_fn clock;
	void *clock_arg;
};

/* NULL with errno set (EINVAL, ENOMEM, or libsodium failing to start). */
struct rxp_ipid_table *rxp_ipid_create(const struct rxp_ipid_config *cfg);
void rxp_ipid_destroy(struct rxp_ipid_table *t);
uint32_t rxp_ipid_n_buckets(const struct rxp_ipid_table *t);

/* The first of segs (>= 1) consecutive IPv4 IDs for (saddr, daddr, proto),
 * addresses in network order. Thread-safe; lock-free. The *_at variant
 * takes the tick instead of reading the clock. The result is the low 16
 * bits of the 32-bit bucket counter. */
uint16_t rxp_ipid_reserve(struct rxp_ipid_table *t, uint32_t saddr, uint32_t daddr, uint8_t proto,
			  uint32_t segs);
uint16_t rxp_ipid_reserve_at(struct rxp_ipid_table *t, uint32_t saddr, uint32_t daddr,
			     uint8_t proto, uint32_t segs, uint32_t now);

/* The ID to write into one IPv4 header: 0 for an atomic datagram (DF set
 * and not to be fragmented, RFC 6864), else one ID from the table. */
uint16_t rxp_ipid_select_v4(struct rxp_ipid_table *t, uint32_t saddr, uint32_t daddr, uint8_t proto,
			    bool atomic);

/* A random non-zero 32-bit IPv6 fragment identification (host order). */
uint32_t rxp_ipid_v6(void);

/* Tests and benchmarks: the bucket index of a tuple, and raw access to a
 * bucket's counter and stamp (for starting a counter just below the wrap). */
uint32_t rxp_ipid_bucket_of(const struct rxp_ipid_table *t, uint32_t saddr, uint32_t daddr,
			    uint8_t proto);
void rxp_ipid_bucket_set(struct rxp_ipid_table *t, uint32_t bucket, uint32_t counter,
			 uint32_t stamp);
uint32_t rxp_ipid_bucket_counter(const struct rxp_ipid_table *t, uint32_t bucket);

RXP_END_DECLS

#endif
