/*
 * What every libFuzzer target here shares: a check that traps (libFuzzer
 * saves the input as a crash, whatever the build's assert settings), a
 * reader that turns the input into numbers (zero once it runs out, so every
 * input decodes to something), and the packet pool made once per process.
 *
 * Speed: a pool or a device made and destroyed per input costs far more
 * than the code under test (a 512-packet pool with large buffers is
 * megabytes of memory touched under ASan), so long-lived state is made on
 * first use and each input ends by asserting that it gave everything back:
 * fz_pool_quiet() traps on any packet, buffer or test page still out, which
 * catches a leak at the input that caused it.
 */
#ifndef RXP_FUZZ_H
#define RXP_FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rxpath/pkt.h"
#include "rxptest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Trap with a line saying which check failed. */
#define FZ_CHECK(cond)                                                                        \
	do {                                                                                  \
		if (__builtin_expect(!(cond), 0)) {                                           \
			fprintf(stderr, "fuzz check failed: %s:%d: %s\n", __FILE__, __LINE__, \
				#cond);                                                       \
			__builtin_trap();                                                     \
		}                                                                             \
	} while (0)

struct fz_in {
	const uint8_t *p;
	size_t n;
};

/* fz_take and fz_bytes stay functions of their own (noinline): the
 * coverage ignorelist leaves fz_* uninstrumented, but once inlined their
 * loops would be traced as the caller's, comparison by comparison. */
__attribute__((noinline, unused)) static uint32_t fz_take(struct fz_in *in, unsigned bytes)
{
	uint32_t v = 0;

	for (unsigned i = 0; i < bytes; i++) {
		v <<= 8;
		if (in->n) {
			v |= *in->p++;
			in->n--;
		}
	}
	return v;
}
static inline uint32_t fz_u8(struct fz_in *in)
{
	return fz_take(in, 1);
}
static inline uint32_t fz_u16(struct fz_in *in)
{
	return fz_take(in, 2);
}
static inline uint32_t fz_u32(struct fz_in *in)
{
	return fz_take(in, 4);
}
/* A number in [0, n) (0 when n is 0), from one byte when n <= 256. */
static inline uint32_t fz_below(struct fz_in *in, uint32_t n)
{
	if (n <= 1)
		return 0;
	return (n <= 256 ? fz_u8(in) : n <= 65536 ? fz_u16(in) : fz_u32(in)) % n;
}
/* Up to len bytes of input copied to out, the rest filled from a pattern
 * (so a short input still describes long packets). */
__attribute__((noinline, unused)) static void fz_bytes(struct fz_in *in, uint8_t *out, size_t len,
						       uint32_t seed)
{
	size_t k = len < in->n ? len : in->n, i;

	memcpy(out, in->p, k);
	in->p += k;
	in->n -= k;
	/* out[i] = seed + 131 i repeats every 256 bytes: one period, then
	 * copies of it */
	for (i = k; i < len && i < k + 256; i++)
		out[i] = (uint8_t)(seed + i * 131u);
	for (; i < len; i += 256)
		memcpy(out + i, out + i - 256, len - i < 256 ? len - i : 256);
}

/* The process's packet pool: made by the first call with cfg (later calls
 * get the same pool, whatever cfg says). */
static inline struct rxp_pktpool *fz_pool(const struct rxp_pktpool_config *cfg)
{
	static struct rxp_pktpool *pp;

	if (!pp) {
		pp = rxp_pktpool_create(cfg);
		FZ_CHECK(pp);
	}
	return pp;
}

/* Nothing the input took is still out: packets, head buffers, and the
 * standalone pages of the test library. */
static inline void fz_pool_quiet(struct rxp_pktpool *pp)
{
	if (rxp_pktpool_pkts_outstanding(pp) || rxp_pktpool_bufs_outstanding(pp) ||
	    rxpt_pages_outstanding()) {
		rxp_pktpool_leak_report(pp, stderr);
		fprintf(stderr, "fuzz: leak: %llu packets, %llu buffers, %ld pages outstanding\n",
			(unsigned long long)rxp_pktpool_pkts_outstanding(pp),
			(unsigned long long)rxp_pktpool_bufs_outstanding(pp),
			rxpt_pages_outstanding());
		__builtin_trap();
	}
}

#endif
