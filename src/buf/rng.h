/*
 * Small deterministic generators for simulation, traffic generation, fault
 * injection and tests: splitmix64, and xoshiro256** seeded by it. Not for
 * anything an attacker may see (hash keys and IP IDs come from libsodium).
 * Private to rxpath; the test library uses it too.
 */
#ifndef RXP_BUF_RNG_H
#define RXP_BUF_RNG_H

#include <stdint.h>

/* splitmix64: advances *x and returns the next value. */
static inline uint64_t rxp_splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* xoshiro256** state s[4], from seed through splitmix64. */
static inline void rxp_xoshiro_seed(uint64_t s[4], uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		s[i] = rxp_splitmix64(&seed);
}

static inline uint64_t rxp_rotl64(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static inline uint64_t rxp_xoshiro_next(uint64_t s[4])
{
	uint64_t r = rxp_rotl64(s[1] * 5, 7) * 9, t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rxp_rotl64(s[3], 45);
	return r;
}

#endif
