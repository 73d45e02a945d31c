/*
 * The receive descriptor ring and its clean loop (model: include/rxpath/ring.h).
 *
 * Owns: the descriptors, one rx_buf per descriptor (page, slice offset, the
 * driver's bias on that page, the refcount sampled at read time), the page
 * pool the pages come from, the frame in progress and the ring's own TX ring.
 *
 * Invariants (the eight of the ice/i40e reference, numbered as there):
 *   1. after each frame, every slot from first_desc to next_to_clean has been
 *      put exactly once (put_frame_walk; RXP_DEBUG asserts it), whatever the
 *      lengths and the verdict;
 *   2. a recycle writes the slot at next_to_alloc, which must be empty
 *      (counted nta_overwrite and asserted in RXP_DEBUG otherwise), and moves
 *      next_to_alloc once;
 *   3. references the driver holds on a page == its bias; a buffer is reused
 *      only when refcount - bias, sampled when the descriptor is read (before
 *      any hand-off), says so;
 *   4. the bias is restocked in bulk and drained whole on release;
 *   5. pages marked remote are never recycled;
 *   6. split mode flips halves only when the other half is free; walk mode
 *      moves forward and releases the page at its end;
 *   7. one slot stays empty and refill stops before first_desc;
 *   8. the hardware side writes only the bytes received (no sync to model
 *      beyond that: the CPU reads what the "device" wrote).
 * Zero-length descriptors hand nothing out and add nothing to the frame.
 */
#include <assert.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "rxpath/compiler.h"
#include "rxpath/log.h"
#include "rxpath/pktpool.h"
#include "rxpath/ring.h"
#include "rxpath/wire.h"

struct rx_buf {
	struct rxp_page *page;
	uint32_t off; /* slice start in the page */
	uint32_t bias; /* references the driver holds on page */
	uint32_t pgcnt; /* refcount sampled when the descriptor was read */
	uint32_t handed; /* one reference went to the frame */
#ifdef RXP_DEBUG
	uint64_t put_seq;
#endif
};

struct rxp_rxring {
	/* Hot: indices and geometry. */
	unsigned count, ntu, ntc, nta, first_desc, hw_head;
	uint32_t buf_size, headroom, buf_len, page_size;
	bool split, checked, own_ppool;
	uint16_t queue;
	struct rxp_rx_desc *desc;
	struct rx_buf *buf;
	struct rxp_page_pool *ppool;
	struct rxp_pktpool *pp;
	rxp_xdp_prog_fn xdp;
	void *xdp_ctx;
	struct rxp_txring *tx;
	rxp_rxring_put_frame_fn put_frame;
	/* The frame in progress (may span clean calls). */
	bool have_lin, too_many, bad;
	unsigned lin_slot;
	uint64_t frame_seq;
	struct rxp_rxring_stats st;
	uint64_t drops_flushed[8]; /* see flush_drops */
	uint16_t frag_slot[RXP_MAX_FRAGS];
	struct rxp_xdp_buff x;
};

/* Drop reasons the ring counts, and the stats field of each. */
static const struct {
	enum rxp_drop_reason reason;
	size_t field;
} drop_fields[] = {
	{RXP_DROP_XDP_DROP, offsetof(struct rxp_rxring_stats, xdp_drop)},
	{RXP_DROP_XDP_ABORTED, offsetof(struct rxp_rxring_stats, xdp_aborted)},
	{RXP_DROP_RX_TOO_MANY_FRAGS, offsetof(struct rxp_rxring_stats, too_many_frags)},
	{RXP_DROP_RX_BAD_DESC, offsetof(struct rxp_rxring_stats, bad_desc)},
	{RXP_DROP_TX_RING_FULL, offsetof(struct rxp_rxring_stats, tx_full)},
	{RXP_DROP_XDP_REDIRECT_XTHREAD, offsetof(struct rxp_rxring_stats, redirect_xthread)},
	{RXP_DROP_RX_NO_BUFFER, offsetof(struct rxp_rxring_stats, rx_no_buffer)},
};
_Static_assert(RXP_ARRAY_SIZE(drop_fields) <= 8, "drops_flushed has a slot per reason");

/* Frames dropped before they became packets are counted on the packet pool
 * once per clean call, not per frame (the per-frame call would cost the
 * XDP_DROP fast path a thread-id lookup each time). */
static void flush_drops(struct rxp_rxring *r)
{
	for (size_t i = 0; i < RXP_ARRAY_SIZE(drop_fields); i++) {
		uint64_t v = *(uint64_t *)((char *)&r->st + drop_fields[i].field);

		if (v != r->drops_flushed[i]) {
			rxp_pktpool_count_drop(r->pp, drop_fields[i].reason,
					       v - r->drops_flushed[i]);
			r->drops_flushed[i] = v;
		}
	}
}

static void put_frame_walk(struct rxp_rxring *r, unsigned first, unsigned nr_frags);

static unsigned desc_unused(const struct rxp_rxring *r)
{
	return (r->first_desc > r->ntu ? 0 : r->count) + r->first_desc - r->ntu - 1;
}

unsigned rxp_rxring_count(const struct rxp_rxring *r)
{
	return r->count;
}

uint32_t rxp_rxring_buf_len(const struct rxp_rxring *r)
{
	return r->buf_len;
}

struct rxp_page_pool *rxp_rxring_page_pool(struct rxp_rxring *r)
{
	return r->ppool;
}

struct rxp_txring *rxp_rxring_txring(struct rxp_rxring *r)
{
	return r->tx;
}

void rxp_rxring_set_xdp(struct rxp_rxring *r, rxp_xdp_prog_fn prog, void *ctx)
{
	r->xdp = prog;
	r->xdp_ctx = ctx;
}

void rxp_rxring_get_stats(const struct rxp_rxring *r, struct rxp_rxring_stats *st)
{
	*st = r->st;
}

struct rxp_rxring *rxp_rxring_create(const struct rxp_rxring_config *cfg)
{
	struct rxp_rxring *r;
	struct rxp_page_pool_config pc = {.name = "rxring"};
	unsigned count = cfg->count ? cfg->count : 512;

	if (!cfg->pp || count < 4 || count > 32768) {
		errno = EINVAL;
		return NULL;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->count = count;
	r->buf_size = cfg->buf_size ? cfg->buf_size : 2048;
	r->headroom = cfg->headroom ? cfg->headroom : RXP_HEADROOM_DEFAULT;
	r->page_size = cfg->page_size ? cfg->page_size : 4096;
	if (cfg->ppool) {
		struct rxp_page_pool_stats ps;

		rxp_page_pool_get_stats(cfg->ppool, &ps);
		if (cfg->page_size && cfg->page_size != ps.page_size) {
			free(r);
			errno = EINVAL;
			return NULL;
		}
		r->page_size = ps.page_size;
	}
	if (r->headroom + 64 > r->buf_size || r->buf_size > r->page_size || r->buf_size % 64) {
		free(r);
		errno = EINVAL;
		return NULL;
	}
	r->buf_len = r->buf_size - r->headroom;
	/* Exactly two slices in a page smaller than 8 KiB: flip halves. */
	r->split = r->page_size < 8192 && 2 * r->buf_size <= r->page_size &&
		   3 * r->buf_size > r->page_size;
	r->queue = cfg->queue;
	r->pp = cfg->pp;
	r->xdp = cfg->xdp;
	r->xdp_ctx = cfg->xdp_ctx;
	r->put_frame = cfg->put_frame ? cfg->put_frame : put_frame_walk;
	r->checked = !cfg->put_frame;
	pc.page_size = r->page_size;
	pc.n_pages = cfg->n_pages ? cfg->n_pages : 2 * count + 256;
	r->desc = calloc(count, sizeof(*r->desc));
	r->buf = calloc(count, sizeof(*r->buf));
	r->own_ppool = !cfg->ppool;
	r->ppool = cfg->ppool ? cfg->ppool : rxp_page_pool_create(&pc);
	r->tx = rxp_txring_create(cfg->tx_count ? cfg->tx_count : count);
	if (!r->desc || !r->buf || !r->ppool || !r->tx) {
		rxp_txring_destroy(r->tx);
		if (r->own_ppool)
			rxp_page_pool_destroy(r->ppool);
		free(r->desc);
		free(r->buf);
		free(r);
		errno = ENOMEM;
		return NULL;
	}
	rxp_rxring_refill(r);
	return r;
}

uint64_t rxp_rxring_destroy(struct rxp_rxring *r)
{
	uint64_t out;

	if (!r)
		return 0;
	rxp_txring_destroy(r->tx);
	for (unsigned i = 0; i < r->count; i++) {
		struct rx_buf *b = &r->buf[i];

		if (!b->page)
			continue;
		/* A frame in progress still has its references with us. */
		if (b->handed)
			b->bias++;
		rxp_page_put_many(b->page, b->bias);
		b->page = NULL;
	}
	flush_drops(r);
	out = r->own_ppool ? rxp_page_pool_destroy(r->ppool) : rxp_page_pool_outstanding(r->ppool);
	free(r->desc);
	free(r->buf);
	free(r);
	return out;
}

unsigned rxp_rxring_refill(struct rxp_rxring *r)
{
	unsigned n = desc_unused(r), i = r->ntu, done = 0;

	while (done < n) {
		struct rx_buf *b = &r->buf[i];
		struct rxp_rx_desc *d = &r->desc[i];

		/* A recycled buffer may already sit here (put at nta). */
		if (!b->page) {
			struct rxp_page *pg = rxp_page_pool_alloc(r->ppool);

			if (rxp_unlikely(!pg)) {
				r->st.alloc_fail++;
				break;
			}
			rxp_page_get_many(pg, RXP_PP_BIAS_MAX - 1);
			b->page = pg;
			b->off = 0;
			b->bias = RXP_PP_BIAS_MAX;
		}
#ifdef RXP_DEBUG
		/* Invariant 7: never a buffer of the frame in progress. */
		assert(!r->checked ||
		       (!b->handed && (i != r->first_desc || r->first_desc == r->ntc)));
#endif
		b->handed = 0;
		d->addr = b->page->addr + b->off + r->headroom;
		d->buf_len = r->buf_len;
		d->len = 0;
		d->flags = 0;
		if (++i == r->count)
			i = 0;
		done++;
	}
	r->ntu = i;
	/* The empty slot keeps the status of its last use: clear it, or the
	 * clean loop, catching up with the hardware, reads a stale DD. */
	r->desc[i].flags = 0;
	/* Every recycled slot lies before the new ntu (refill passed them
	 * without allocating), so the next recycle goes to the empty slot. */
	r->nta = i;
	return done;
}

/* ---- putting buffers ----------------------------------------------------- */

static bool can_reuse(struct rxp_rxring *r, struct rx_buf *b)
{
	if (rxp_unlikely(!rxp_page_pool_page_reusable(b->page)))
		return false;
	if (r->split) {
		/* The sample was taken before this buffer's reference went
		 * out: 1 means nobody but the frame holds the other half. */
		if ((int64_t)b->pgcnt - (int64_t)b->bias > 1)
			return false;
		if (b->handed) {
			b->off ^= r->buf_size;
			r->st.flip++;
		}
	} else if (b->handed) {
		/* Walk mode: slices already handed out are never revisited. */
		b->off += r->buf_size;
		if (b->off + r->buf_size > r->page_size)
			return false;
	}
	if (rxp_unlikely(b->bias == 1)) {
		rxp_page_get_many(b->page, RXP_PP_BIAS_MAX - 1);
		b->bias = RXP_PP_BIAS_MAX;
		r->st.restock++;
	}
	return true;
}

static inline void put_buf(struct rxp_rxring *r, unsigned idx)
{
	struct rx_buf *b = &r->buf[idx];

	if (rxp_unlikely(!b->page))
		return;
#ifdef RXP_DEBUG
	if (r->checked) {
		assert(b->put_seq != r->frame_seq && "buffer put twice in one frame");
		b->put_seq = r->frame_seq;
	}
#endif
	if (can_reuse(r, b)) {
		struct rx_buf *nb = &r->buf[r->nta];

		if (nb != b) {
			if (rxp_unlikely(nb->page != NULL)) {
				/* The source thread's bug: the old page is lost. */
				r->st.nta_overwrite++;
#ifdef RXP_DEBUG
				assert(!r->checked && "recycle onto an occupied slot");
#endif
			}
			nb->page = b->page;
			nb->off = b->off;
			nb->bias = b->bias;
			nb->handed = 0;
			b->page = NULL;
		}
		if (++r->nta == r->count)
			r->nta = 0;
		r->st.reuse++;
	} else {
		struct rxp_page *pg = b->page;

		b->page = NULL;
		rxp_page_put_many(pg, b->bias);
		r->st.release++;
	}
	b->handed = 0;
}

void rxp_rxring_put_buf(struct rxp_rxring *r, unsigned idx)
{
	put_buf(r, idx);
}

/* Invariant 1: walk the frame's slots, not its fragment count. */
static void put_frame_walk(struct rxp_rxring *r, unsigned first, unsigned nr_frags)
{
	unsigned i = first;

	while (i != r->ntc) {
		unsigned cur = i;

		if (++i == r->count)
			i = 0;
		put_buf(r, cur);
	}
#ifdef RXP_DEBUG
	for (i = first; i != r->ntc; i = i + 1 == r->count ? 0 : i + 1)
		assert(!r->buf[i].page || r->buf[i].put_seq == r->frame_seq ||
		       i == (r->nta ? r->nta - 1 : r->count - 1));
#endif
}

/* ---- the clean loop ------------------------------------------------------ */

static inline void frame_start(struct rxp_rxring *r, const struct rxp_rx_desc *d)
{
	r->x.mb = false;
	r->x.nr_frags = 0;
	r->x.frags_len = 0;
	r->x.redirect = NULL;
	r->x.rss_hash = d->rss;
	r->x.queue = r->queue;
	r->have_lin = false;
	r->too_many = false;
	r->bad = false;
}

static inline void add_buf(struct rxp_rxring *r, struct rx_buf *b, unsigned idx, uint32_t size)
{
	struct rxp_xdp_buff *x = &r->x;

	if (rxp_unlikely(size > r->buf_len)) {
		r->bad = true;
		return;
	}
	if (rxp_unlikely(r->too_many))
		return;
	if (rxp_likely(!r->have_lin)) {
		x->page = b->page;
		x->data_hard_start = b->page->addr + b->off;
		x->data = x->data_hard_start + r->headroom;
		x->data_end = x->data + size;
		x->frame_sz = r->buf_size;
		r->have_lin = true;
		r->lin_slot = idx;
	} else if (x->nr_frags < RXP_MAX_FRAGS) {
		struct rxp_frag *f = &x->frags[x->nr_frags];

		f->page = b->page;
		f->off = b->off + r->headroom;
		f->size = size;
		r->frag_slot[x->nr_frags++] = (uint16_t)idx;
		x->frags_len += size;
		x->mb = true;
	} else {
		r->too_many = true;
		return;
	}
	b->bias--;
	b->handed = 1;
}

/* The driver takes the frame's references back (no atomics). */
static void take_back(struct rxp_rxring *r)
{
	struct rx_buf *b;

	if (!r->have_lin)
		return;
	b = &r->buf[r->lin_slot];
	b->bias++;
	b->handed = 0;
	if (r->x.mb) {
		for (unsigned k = 0; k < r->x.nr_frags; k++) {
			b = &r->buf[r->frag_slot[k]];
			b->bias++;
			b->handed = 0;
		}
	}
}

static void build_pkt(struct rxp_rxring *r, struct rxp_pkt **out, unsigned *nout)
{
	struct rxp_xdp_buff *x = &r->x;
	struct rxp_pkt *pkt;
	uint32_t hoff = (uint32_t)(x->data_hard_start - x->page->addr);

	/* Consumes the linear part's reference, also on failure. */
	pkt = rxp_pkt_build(r->pp, x->page, hoff, x->frame_sz,
			    (uint32_t)(x->data - x->data_hard_start),
			    (uint32_t)(x->data_end - x->data));
	if (rxp_unlikely(!pkt)) {
		r->st.nomem++;
		if (x->mb)
			for (unsigned k = 0; k < x->nr_frags; k++)
				rxp_page_put(x->frags[k].page);
		return;
	}
	if (x->mb) {
		for (unsigned k = 0; k < x->nr_frags; k++) {
			struct rxp_frag *f = &x->frags[k];

			if (rxp_pkt_add_frag(pkt, f->page, f->off, f->size, r->buf_size))
				rxp_page_put(f->page); /* cannot happen: sizes > 0, <= MAX */
		}
	}
	pkt->hash = x->rss_hash;
	pkt->queue = r->queue;
	if (x->data_end - x->data >= RXP_ETH_HLEN) {
		uint16_t p;

		memcpy(&p, x->data + 12, 2);
		pkt->protocol = (uint16_t)((p >> 8) | (p << 8));
	}
	out[(*nout)++] = pkt;
	r->st.pass++;
	r->st.bytes += pkt->len;
}

static void finish_frame(struct rxp_rxring *r, struct rxp_pkt **out, unsigned *nout)
{
	enum rxp_xdp_action act;
	struct rxp_txring *tx;
	int rc;

	r->st.frames++;
	if (rxp_unlikely(r->bad || !r->have_lin)) {
		take_back(r);
		r->st.bad_desc++;
		return;
	}
	if (rxp_unlikely(r->too_many)) {
		take_back(r);
		r->st.too_many_frags++;
		return;
	}
	act = r->xdp ? r->xdp(&r->x, r->xdp_ctx) : RXP_XDP_PASS;
	switch (act) {
	case RXP_XDP_PASS:
		build_pkt(r, out, nout);
		break;
	case RXP_XDP_DROP:
		take_back(r);
		r->st.xdp_drop++;
		break;
	case RXP_XDP_TX:
	case RXP_XDP_REDIRECT:
		tx = act == RXP_XDP_REDIRECT && r->x.redirect ? r->x.redirect : r->tx;
		rc = rxp_txring_xmit_xdp(tx, &r->x);
		if (rc) {
			take_back(r);
			if (rc == -EXDEV)
				r->st.redirect_xthread++;
			else
				r->st.tx_full++;
		} else if (act == RXP_XDP_TX) {
			r->st.xdp_tx++;
		} else {
			r->st.xdp_redirect++;
		}
		break;
	default:
		take_back(r);
		r->st.xdp_aborted++;
		break;
	}
}

unsigned rxp_rxring_clean(struct rxp_rxring *r, unsigned budget, struct rxp_pkt **out,
			  unsigned max_out, unsigned *n_out)
{
	unsigned done = 0, nout = 0;

	if (budget > max_out)
		budget = max_out;
	rxp_txring_complete(r->tx, ~0u);
	while (done < budget) {
		unsigned i = r->ntc;
		struct rxp_rx_desc *d = &r->desc[i];
		struct rx_buf *b;
		uint32_t size, flags = d->flags;

		if (!(flags & RXP_RXD_DD))
			break;
		/* Read the rest of the descriptor only after DD. */
		atomic_thread_fence(memory_order_acquire);
		b = &r->buf[i];
		size = d->len;
		/* Invariant 3: sample before any hand-off (a redirect may
		 * free the page before we look again). */
		b->pgcnt = rxp_page_refcount(b->page);
		if (i == r->first_desc)
			frame_start(r, d);
		r->st.descs++;
		if (rxp_likely(size))
			add_buf(r, b, i, size);
		else
			r->st.zero_len_descs++;
		if (++i == r->count)
			i = 0;
		r->ntc = i;
		if (!(flags & RXP_RXD_EOP))
			continue;
		finish_frame(r, out, &nout);
		r->frame_seq++;
		/* The library's walk is called directly (inlined); tests may
		 * install another. */
		if (rxp_likely(r->checked))
			put_frame_walk(r, r->first_desc, 0);
		else
			r->put_frame(r, r->first_desc, r->x.mb ? r->x.nr_frags : 0);
		r->first_desc = r->ntc;
		done++;
	}
	rxp_rxring_refill(r);
	flush_drops(r);
	if (n_out)
		*n_out = nout;
	return done;
}

/* ---- the hardware side --------------------------------------------------- */

/* The common case (one buffer) without a division. */
static inline unsigned bufs_for(const struct rxp_rxring *r, uint32_t len)
{
	return len <= r->buf_len ? 1 : (len + r->buf_len - 1) / r->buf_len;
}

static inline unsigned hw_free(const struct rxp_rxring *r)
{
	return r->ntu >= r->hw_head ? r->ntu - r->hw_head : r->ntu + r->count - r->hw_head;
}

unsigned rxp_rxring_bufs_for(const struct rxp_rxring *r, uint32_t len)
{
	return bufs_for(r, len);
}

unsigned rxp_rxring_hw_free(const struct rxp_rxring *r)
{
	return hw_free(r);
}

static inline void hw_desc(struct rxp_rxring *r, uint32_t len, uint32_t rss, bool eop)
{
	struct rxp_rx_desc *d = &r->desc[r->hw_head];

	d->len = len;
	d->rss = rss;
	atomic_thread_fence(memory_order_release);
	d->flags = RXP_RXD_DD | (eop ? RXP_RXD_EOP : 0);
	if (++r->hw_head == r->count)
		r->hw_head = 0;
}

int rxp_rxring_hw_write_desc(struct rxp_rxring *r, const uint8_t *data, uint32_t len, uint32_t rss,
			     bool eop)
{
	if (len > r->buf_len)
		return -EINVAL;
	if (!hw_free(r))
		return -ENOBUFS;
	if (len)
		memcpy(r->desc[r->hw_head].addr, data, len);
	hw_desc(r, len, rss, eop);
	return 0;
}

int rxp_rxring_hw_write(struct rxp_rxring *r, const uint8_t *frame, uint32_t len, uint32_t rss,
			uint32_t zl_mask)
{
	unsigned nb, need;
	uint32_t pos = 0;

	if (rxp_unlikely(!len))
		return -EINVAL;
	/* Fast path: one buffer, no zero-length descriptor. */
	if (len <= r->buf_len && !(zl_mask & 3)) {
		if (rxp_unlikely(!hw_free(r))) {
			r->st.rx_no_buffer++;
			return -ENOBUFS;
		}
		memcpy(r->desc[r->hw_head].addr, frame, len);
		hw_desc(r, len, rss, true);
		return 0;
	}
	nb = bufs_for(r, len);
	if (nb < 31)
		zl_mask &= (2u << nb) - 1;
	need = nb + (zl_mask ? (unsigned)__builtin_popcount(zl_mask) : 0);
	if (rxp_unlikely(need > hw_free(r))) {
		r->st.rx_no_buffer++;
		return -ENOBUFS;
	}
	for (unsigned k = 0; k < nb; k++) {
		uint32_t chunk = len - pos < r->buf_len ? len - pos : r->buf_len;
		bool last = k == nb - 1 && !(nb < 32 && (zl_mask >> nb) & 1);

		if (k < 32 && (zl_mask >> k) & 1)
			hw_desc(r, 0, rss, false);
		memcpy(r->desc[r->hw_head].addr, frame + pos, chunk);
		pos += chunk;
		hw_desc(r, chunk, rss, last);
	}
	if (nb < 32 && (zl_mask >> nb) & 1)
		hw_desc(r, 0, rss, true);
	return 0;
}
