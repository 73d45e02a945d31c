/*
 * The page pools behind the ring targets' rings (fuzz_ring, fuzz_ring_model).
 *
 * A ring's shape is input, so the ring is made per input; its page pool is
 * not. A pool made and destroyed per input is one allocation of up to 600
 * KiB, which ASan maps and unmaps each time and whose pages fault in again:
 * that cost most of these targets' time. So there is one pool per page size
 * for the process (rxp_rxring_config.ppool), and each input starts it as a
 * fresh pool of n pages would start: every page back and zeroed, the n the
 * ring may use handed out in address order (the last page of the backing
 * store among them, where ASan sees an overrun), the rest held here until
 * the input ends.
 */
#ifndef RXP_FZ_RING_H
#define RXP_FZ_RING_H

#include "rxpath/page_pool.h"
#include "fuzz.h"

#define FZ_RING_PAGES 80 /* the most any input asks for (75), rounded up */
_Static_assert(FZ_RING_PAGES <= RXP_PP_CACHE_SIZE, "every page returned fits the cache");

struct fz_pages {
	struct rxp_page_pool *pool;
	struct rxp_page **pg; /* the pool's pages in address order */
	uint32_t held; /* pg[0..held-1]: out, the ring may not have them */
};

__attribute__((noinline, unused)) static struct fz_pages fz_ring_pages(uint32_t page_size,
								       uint32_t n)
{
	static struct rxp_page_pool *pools[2];
	static struct rxp_page *pages[2][FZ_RING_PAGES];
	unsigned k = page_size == 8192;
	struct fz_pages p = {.pg = pages[k]};
	uint8_t *base;
	uint64_t len;

	FZ_CHECK(n <= FZ_RING_PAGES && (page_size == 4096 || page_size == 8192));
	if (!pools[k]) {
		struct rxp_page_pool_config c = {
			.name = "fzring", .page_size = page_size, .n_pages = FZ_RING_PAGES};

		pools[k] = rxp_page_pool_create(&c);
		FZ_CHECK(pools[k]);
		for (uint32_t i = 0; i < FZ_RING_PAGES; i++)
			pages[k][i] = rxp_page_pool_page_at(pools[k], (uint64_t)i * page_size);
	}
	p.pool = pools[k];
	/* every page out, then the ring's share back, the highest first (so
	 * the lowest comes out first, as from a fresh pool) */
	for (uint32_t i = 0; i < FZ_RING_PAGES; i++)
		FZ_CHECK(rxp_page_pool_alloc(p.pool));
	rxp_page_pool_mem(p.pool, &base, &len);
	p.held = FZ_RING_PAGES - n;
	memset(base + (size_t)p.held * page_size, 0, (size_t)n * page_size);
	for (uint32_t i = FZ_RING_PAGES; i-- > p.held;)
		rxp_page_put(p.pg[i]);
	return p;
}

/* The first bytes of a frame (at most 64) from the input, zero once it
 * runs out; the rest of frame stays the fixed pattern. A function of its
 * own (fz_*: not traced) so that its loop is not compared step by step. */
__attribute__((noinline, unused)) static void fz_frame_head(struct fz_in *in, uint8_t *frame,
							    uint32_t len)
{
	for (uint32_t i = 0; i < len && i < 64; i++)
		frame[i] = (uint8_t)fz_take(in, 1);
}

/* The held pages back; then nothing of the pool may be out. */
__attribute__((noinline, unused)) static void fz_ring_pages_quiet(struct fz_pages p)
{
	for (uint32_t i = 0; i < p.held; i++)
		rxp_page_put(p.pg[i]);
	FZ_CHECK(rxp_page_pool_outstanding(p.pool) == 0); /* a page leaked */
}

#endif
