/*
 * Receive and transmit descriptor rings, the driver clean loop and the
 * XDP-style verdict hook, modelled on Intel ice/i40e.
 *
 * Receive ring. Software posts buffers (slices of page-pool pages) into
 * descriptors; the hardware side (the sim NIC, or a test) writes a frame
 * into one or more posted buffers, setting each descriptor's length, DD and,
 * on the last, EOP. The clean loop (rxp_rxring_clean) walks descriptors with
 * DD from next_to_clean, collecting one frame from first_desc to EOP: the
 * first non-empty buffer becomes the linear part, the rest page fragments;
 * zero-length descriptors add nothing. It runs the XDP hook, acts on the
 * verdict, then puts every buffer from first_desc to next_to_clean exactly
 * once: recycled into the slot at next_to_alloc (which must be empty) or
 * released.
 *
 * Pages use the driver bias scheme: a page arrives with RXP_PP_BIAS_MAX
 * references, each handed-out buffer costs one (bias--, no atomic), a frame
 * the driver takes back (drop) gives it back (bias++). refcount - bias is
 * sampled when a descriptor is read, before any hand-off; the buffer is
 * reused only when that says the driver is the sole owner of the part it
 * will use next. Split mode (two slices per page, page < 8 KiB) flips
 * halves; walk mode (any other layout) moves forward through the page and
 * releases it at its end. Release drains the whole bias.
 *
 * One slot always stays empty; refill never touches buffers of a frame in
 * progress (first_desc..next_to_clean).
 *
 * Transmit ring (XDP_TX, XDP_REDIRECT): an entry holds one page reference per
 * segment of a frame; the hardware side sends entries, and completion puts
 * the references.
 *
 * One thread polls a ring (and owns its page pool); the hardware side of a
 * ring runs on that same thread.
 */
#ifndef RXPATH_RING_H
#define RXPATH_RING_H

#include <stdbool.h>
#include <stdint.h>

#include "rxpath/compiler.h"
#include "rxpath/page_pool.h"
#include "rxpath/pkt.h"

RXP_BEGIN_DECLS

struct rxp_rxring;
struct rxp_txring;

enum rxp_xdp_action {
	RXP_XDP_ABORTED = 0,
	RXP_XDP_DROP,
	RXP_XDP_PASS,
	RXP_XDP_TX,
	RXP_XDP_REDIRECT,
};

/* What an XDP program sees (struct xdp_buff). Linear part: [data, data_end)
 * inside [data_hard_start, data_hard_start + frame_sz). frags/nr_frags are
 * meaningful only when mb is set: read them only then. */
struct rxp_xdp_buff {
	struct rxp_page *page; /* the linear part's page (one reference) */
	uint8_t *data_hard_start;
	uint8_t *data;
	uint8_t *data_end;
	uint32_t frame_sz;
	bool mb;
	uint8_t nr_frags;
	uint16_t queue;
	uint32_t rss_hash;
	uint32_t frags_len; /* bytes in frags (mb only) */
	struct rxp_txring *redirect; /* REDIRECT target; NULL: the ring's own TX */
	struct rxp_frag frags[RXP_MAX_FRAGS]; /* one page reference each (mb only) */
};

typedef enum rxp_xdp_action (*rxp_xdp_prog_fn)(struct rxp_xdp_buff *xdp, void *ctx);

static inline uint32_t rxp_xdp_len(const struct rxp_xdp_buff *x)
{
	return (uint32_t)(x->data_end - x->data) + (x->mb ? x->frags_len : 0);
}
/* Move data by delta (negative grows the headroom side). -EINVAL if it
 * would leave the buffer or leave fewer than 14 bytes of linear data. */
int rxp_xdp_adjust_head(struct rxp_xdp_buff *xdp, int delta);
/* Shrink the frame by bytes from its tail, releasing fragments emptied (their
 * page references are put), or grow the linear part of a single-buffer
 * frame into its tailroom (negative bytes). -EINVAL when impossible. */
int rxp_xdp_adjust_tail(struct rxp_xdp_buff *xdp, int delta);

/* ---- receive ring ------------------------------------------------------- */

#define RXP_RXD_DD 0x1
#define RXP_RXD_EOP 0x2

struct rxp_rx_desc {
	uint8_t *addr; /* written at refill: where the hardware writes */
	uint32_t buf_len; /* written at refill: room at addr */
	uint32_t len; /* written back by the hardware */
	uint32_t rss; /* written back */
	uint32_t flags; /* DD, EOP: written back; cleared at refill */
};

/* Put the buffers of the frame that ends at next_to_clean. The library's
 * one walks first_desc..next_to_clean; tests may install another (the
 * source thread's buggy one) through rxp_rxring_config.put_frame. */
typedef void (*rxp_rxring_put_frame_fn)(struct rxp_rxring *r, unsigned first,
					unsigned nr_frags_after_xdp);

struct rxp_rxring_config {
	unsigned count; /* descriptors (>= 4, default 512) */
	uint32_t buf_size; /* slice of a page per buffer (default 2048) */
	uint32_t headroom; /* reserved at the front of each slice (default 128) */
	uint32_t page_size; /* page-pool page size (default 4096) */
	uint32_t n_pages; /* page-pool pages (default 2 * count + 256) */
	/* Pages from this pool instead of one of the ring's own (n_pages is
	 * then unused, page_size must be 0 or the pool's): the pool stays the
	 * caller's, outlives the ring and may serve several rings polled by
	 * the same thread. */
	struct rxp_page_pool *ppool;
	uint16_t queue;
	struct rxp_pktpool *pp; /* packet metadata for PASS (required) */
	rxp_xdp_prog_fn xdp; /* NULL: every frame passes */
	void *xdp_ctx;
	unsigned tx_count; /* own TX ring for XDP_TX (0: count, as the receive ring) */
	rxp_rxring_put_frame_fn put_frame; /* tests only; NULL: the library's */
};

struct rxp_rxring_stats {
	uint64_t frames, bytes, descs, zero_len_descs;
	uint64_t pass, xdp_drop, xdp_tx, xdp_redirect, xdp_aborted;
	uint64_t too_many_frags, bad_desc, tx_full, nomem;
	uint64_t redirect_xthread; /* REDIRECT to a TX ring another thread runs */
	uint64_t reuse, flip, release, restock;
	uint64_t alloc_fail; /* refill found the page pool empty */
	uint64_t rx_no_buffer; /* hardware side: frames with no posted buffer */
	uint64_t nta_overwrite; /* recycles onto an occupied slot (a leak) */
};

struct rxp_rxring *rxp_rxring_create(const struct rxp_rxring_config *cfg);
/* Releases every buffer still posted, drains the TX ring, destroys the page
 * pool (unless it is the caller's: rxp_rxring_config.ppool). Returns the
 * pages outstanding afterwards (0 unless packets are still alive, something
 * leaked, or the caller's pool has other pages out). */
uint64_t rxp_rxring_destroy(struct rxp_rxring *r);
void rxp_rxring_set_xdp(struct rxp_rxring *r, rxp_xdp_prog_fn prog, void *ctx);

/* Clean up to budget frames; PASS frames become packets stored in out (at
 * most max_out; the budget is also capped by max_out). Refills afterwards.
 * Returns the frames handled (any verdict). */
unsigned rxp_rxring_clean(struct rxp_rxring *r, unsigned budget, struct rxp_pkt **out,
			  unsigned max_out, unsigned *n_out);
/* Post as many buffers as allowed (called by create and clean). */
unsigned rxp_rxring_refill(struct rxp_rxring *r);

void rxp_rxring_get_stats(const struct rxp_rxring *r, struct rxp_rxring_stats *st);
struct rxp_page_pool *rxp_rxring_page_pool(struct rxp_rxring *r);
struct rxp_txring *rxp_rxring_txring(struct rxp_rxring *r);
/* Bytes the hardware may write per buffer (buf_size - headroom). */
uint32_t rxp_rxring_buf_len(const struct rxp_rxring *r);
/* Descriptors posted to the hardware and not yet written. */
unsigned rxp_rxring_hw_free(const struct rxp_rxring *r);

/* Hardware side: write one frame into posted buffers, splitting it at
 * buf_len. zl_mask bit i (i < 32) puts a zero-length descriptor before the
 * i-th data buffer; bit nbufs puts one after the last (it then carries
 * EOP). Returns 0, or -ENOBUFS when too few buffers are posted (the frame
 * is dropped and counted rx_no_buffer), -EINVAL for len 0. */
int rxp_rxring_hw_write(struct rxp_rxring *r, const uint8_t *frame, uint32_t len, uint32_t rss,
			uint32_t zl_mask);
/* Hardware side, one descriptor at a time (a frame whose later buffers
 * the NIC has not written yet): len bytes (0 allowed, <= buf_len) into the
 * next posted buffer. -ENOBUFS when none is posted (nothing counted: the
 * caller decides), -EINVAL when len > buf_len. */
int rxp_rxring_hw_write_desc(struct rxp_rxring *r, const uint8_t *data, uint32_t len, uint32_t rss,
			     bool eop);
/* Buffers a frame of len bytes needs (without zero-length ones). */
unsigned rxp_rxring_bufs_for(const struct rxp_rxring *r, uint32_t len);

/* For put_frame replacements (tests): put the buffer at slot idx, after
 * the driver has finished with it. */
void rxp_rxring_put_buf(struct rxp_rxring *r, unsigned idx);
unsigned rxp_rxring_count(const struct rxp_rxring *r);

/* ---- transmit ring ------------------------------------------------------ */

struct rxp_tx_seg {
	struct rxp_page *page; /* one reference */
	uint32_t off; /* from page->addr */
	uint32_t len;
};

/* Hardware side's view of a sent frame. */
typedef void (*rxp_tx_sink_fn)(void *ctx, const struct rxp_tx_seg *segs, unsigned nsegs,
			       uint32_t len);

struct rxp_txring_stats {
	uint64_t xmit, sent, completed, full;
	uint64_t foreign; /* xmits refused: not on the thread that runs the ring */
};

struct rxp_txring *rxp_txring_create(unsigned count);
/* Completes everything (sending what is queued first). */
void rxp_txring_destroy(struct rxp_txring *t);
/* Queue an XDP frame; the ring takes its page references (one for the
 * linear part, one per frag). -ENOSPC (references untouched) when full.
 * A TX ring is single-threaded: the thread that last ran its completion
 * (or, before any, queued on it first) runs it, and a frame queued from
 * another thread (an XDP_REDIRECT across workers) is refused with -EXDEV,
 * references untouched. A guard against the common mistake, not a lock:
 * threads past RXP_MAX_THREADS share one id and are not told apart. */
int rxp_txring_xmit_xdp(struct rxp_txring *t, const struct rxp_xdp_buff *xdp);
/* Hardware side: send up to n queued frames (each passed to sink if set). */
unsigned rxp_txring_hw_send(struct rxp_txring *t, unsigned n, rxp_tx_sink_fn sink, void *ctx);
/* Driver side: put the references of sent frames; returns frames done.
 * The calling thread becomes the ring's. */
unsigned rxp_txring_complete(struct rxp_txring *t, unsigned budget);
void rxp_txring_get_stats(const struct rxp_txring *t, struct rxp_txring_stats *st);
/* Entries free for rxp_txring_xmit_xdp. */
unsigned rxp_txring_space(const struct rxp_txring *t);

RXP_END_DECLS

#endif
