/*
 * Fuzz the receive ring from the hardware side and the frame parsers.
 *
 * The input is a program: each op writes a frame (split, with zero-length
 * descriptors from a mask), writes single descriptors (frames left in
 * progress), or cleans with a budget; an XDP program driven by the input
 * passes, drops, transmits, moves the head and trims the tail. Every packet
 * is classified (rxp_dev_classify / rxp_rss_hash) and checked against its
 * length. At the end every page must be back: a leak aborts. The packet
 * pool lives as long as the process; the ring (its shape is input) is
 * made per input.
 */
#include "rxpath/dev.h"
#include "rxpath/ring.h"
#include "rxpath/sim.h"
#include "fuzz.h"
#include "fz_ring.h"

static struct fz_in *xin;

static enum rxp_xdp_action prog(struct rxp_xdp_buff *x, void *ctx)
{
	uint32_t op = fz_take(xin, 1);

	if (op & 0x10)
		rxp_xdp_adjust_head(x, (int)(fz_take(xin, 1)) - 128);
	if (op & 0x20)
		rxp_xdp_adjust_tail(x, -(int)fz_take(xin, 2));
	if (op & 0x40)
		x->redirect = ctx;
	switch (op & 7) {
	case 0:
		return RXP_XDP_DROP;
	case 1:
		return RXP_XDP_TX;
	case 2:
		return RXP_XDP_REDIRECT;
	case 3:
		return RXP_XDP_ABORTED;
	case 4:
		return (enum rxp_xdp_action)99;
	default:
		return RXP_XDP_PASS;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint32_t bufs[] = {512, 2048, 3072, 2048};
	/* Bytes past the first 64 of a frame are a fixed pattern, written once:
	 * filled per frame, they cost more than the ring. */
	static uint8_t frame[RXP_GEN_FRAME_MAX + 64];
	static bool patterned;
	struct fz_in in = {data, size};
	struct rxp_pktpool_config pc = {.name = "fuzz", .n_pkts = 256, .n_bufs = 64};
	struct rxp_pktpool *pp = fz_pool(&pc);
	struct rxp_txring *redir = rxp_txring_create(8);
	struct rxp_rxring_config rc = {0};
	struct fz_pages pages;
	struct rxp_rxring *r;
	uint32_t cfg = fz_take(&in, 2);

	if (!patterned) {
		for (uint32_t i = 64; i < sizeof(frame); i++)
			frame[i] = (uint8_t)(i * 7);
		patterned = true;
	}

	xin = &in;
	rc.count = 4 + (cfg & 0x3f);
	rc.buf_size = bufs[(cfg >> 7) & 3];
	rc.headroom = rc.buf_size == 512 ? 64 : 128;
	rc.page_size = (cfg >> 9) & 1 ? 8192 : 4096;
	/* Too few pages for the ring (refill runs dry), or enough (not the
	 * default's 256 spare pages, which only cost time here). */
	pages = fz_ring_pages(rc.page_size, (cfg >> 10) & 1 ? rc.count / 2 + 4 : rc.count + 8);
	rc.ppool = pages.pool;
	rc.tx_count = 1 + ((cfg >> 11) & 7);
	rc.pp = pp;
	rc.xdp = (cfg >> 14) & 1 ? prog : NULL;
	rc.xdp_ctx = redir;
	r = rxp_rxring_create(&rc);
	FZ_CHECK(r && redir);
	for (int ops = 0; in.n && ops < 200; ops++) {
		uint32_t op = fz_take(&in, 1);

		if (op < 100) {
			uint32_t len = fz_take(&in, 2) % sizeof(frame), zl = fz_take(&in, 1);

			fz_frame_head(&in, frame, len);
			rxp_rxring_hw_write(r, frame, len, len, zl << (op & 7));
		} else if (op < 160) {
			uint32_t len = fz_take(&in, 2) % (rxp_rxring_buf_len(r) + 2);

			fz_frame_head(&in, frame, len);
			rxp_rxring_hw_write_desc(r, frame, len, 0, op & 1);
		} else {
			struct rxp_pkt *out[64];
			unsigned n = 0;

			rxp_rxring_clean(r, 1 + (op & 63), out, 64, &n);
			for (unsigned i = 0; i < n; i++) {
				uint32_t hl = rxp_pkt_headlen(out[i]);

				FZ_CHECK(out[i]->len == hl + out[i]->data_len);
				rxp_dev_classify(out[i], op & 1);
				(void)rxp_rss_hash(out[i]->data, hl, !(op & 2));
				if (hl > RXP_GEN_HDR_LEN)
					(void)rxp_gen_verify(out[i]->data, hl);
				rxp_pkt_consume(out[i]);
			}
			if (op & 1) {
				rxp_txring_hw_send(rxp_rxring_txring(r), op & 15, NULL, NULL);
				rxp_txring_hw_send(redir, ~0u, NULL, NULL);
				rxp_txring_complete(redir, ~0u);
			}
		}
	}
	rxp_txring_destroy(redir);
	FZ_CHECK(rxp_rxring_destroy(r) == pages.held); /* a page leaked */
	fz_ring_pages_quiet(pages);
	fz_pool_quiet(pp);
	return 0;
}
