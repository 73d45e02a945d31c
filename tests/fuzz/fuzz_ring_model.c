/*
 * Descriptor streams through the receive ring, against a model of what the
 * hardware wrote. The input configures a ring (descriptors, buffer and
 * page sizes, page-pool size, TX ring size, an XDP program or none) and
 * then writes whole frames (split at the buffer length, zero-length
 * descriptors where a mask says) and single descriptors (a frame left in
 * progress, continued by later writes, all zero-length, or longer than a
 * frame may be), cleans with a budget, and has the hardware send and
 * complete TX. The model keeps every frame the hardware finished, in
 * order; then:
 *   - the XDP program sees each frame that has a buffer and at most
 *     1 + RXP_MAX_FRAGS of them, in order, with exactly its bytes (linear
 *     part and frags);
 *   - after its verdict and its head and tail adjustments, a PASS frame
 *     comes out of the clean as a packet with the frame's bytes (those
 *     the adjustments kept; bytes they added from head- or tailroom are
 *     not compared), TX and REDIRECT frames are sent by the hardware side
 *     of the ring they went to, in order, with the same bytes, unless that
 *     ring was full; without a program every such frame passes;
 *   - frames without a buffer or with too many are dropped, and a clean
 *     handles as many frames as it says.
 * At the end every page must be back. Any difference traps.
 */
#include "rxpath/dev.h"
#include "rxpath/ring.h"
#include "rxpath/sim.h"
#include "fuzz.h"
#include "fz_ring.h"

#define MAXQ 256

struct mframe {
	uint8_t *b;
	uint32_t len;
	unsigned nbufs; /* non-empty descriptors */
};

/* What a frame must look like when it comes out: prefix unknown bytes,
 * then b[start, end), then suffix unknown bytes. */
struct expect {
	uint8_t *b;
	uint32_t start, end, prefix, suffix;
};

struct fifo {
	struct expect e[MAXQ];
	unsigned head, n;
};

static struct fz_in in;
static struct rxp_rxring *ring;
static struct rxp_txring *redir;
static struct mframe done_q[MAXQ], cur;
static unsigned dq_head, dq_n;
static struct fifo out_q, tx_own, tx_redir;
static unsigned processed; /* frames handled in the current clean */
/* The model's frame bytes, for one input: a frame in progress grows at the
 * top (it is the last thing put there), a finished one stays where it is.
 * 200 operations of at most RXP_GEN_FRAME_MAX + 64 bytes fit. With
 * realloc and free per descriptor instead, malloc (and libFuzzer's malloc
 * hooks) was a quarter of the target's time. */
static uint8_t arena[4u << 20];
static size_t arena_top;
static uint8_t xbuf[1 << 18];

static void fifo_push(struct fifo *f, struct expect e)
{
	FZ_CHECK(f->n < MAXQ);
	f->e[(f->head + f->n++) % MAXQ] = e;
}

static struct expect fifo_pop(struct fifo *f)
{
	struct expect e;

	FZ_CHECK(f->n);
	e = f->e[f->head];
	f->head = (f->head + 1) % MAXQ;
	f->n--;
	return e;
}

static bool eligible(const struct mframe *m)
{
	return m->nbufs >= 1 && m->nbufs <= 1 + RXP_MAX_FRAGS;
}

/* The hardware wrote a descriptor of the frame in progress. */
static void m_desc(const uint8_t *d, uint32_t len, bool eop)
{
	if (len) {
		if (!cur.b)
			cur.b = arena + arena_top;
		FZ_CHECK(arena_top + cur.len + len <= sizeof(arena));
		memcpy(cur.b + cur.len, d, len);
		cur.len += len;
		cur.nbufs++;
	}
	if (!eop)
		return;
	arena_top += cur.len;
	FZ_CHECK(dq_n < MAXQ);
	done_q[(dq_head + dq_n++) % MAXQ] = cur;
	memset(&cur, 0, sizeof(cur));
}

static struct mframe m_pop(void)
{
	struct mframe m;

	FZ_CHECK(dq_n);
	m = done_q[dq_head];
	dq_head = (dq_head + 1) % MAXQ;
	dq_n--;
	processed++;
	return m;
}

static void match(const struct expect *e, const uint8_t *b, uint32_t len)
{
	FZ_CHECK(len == e->prefix + (e->end - e->start) + e->suffix);
	FZ_CHECK(!memcmp(b + e->prefix, e->b + e->start, e->end - e->start));
}

static enum rxp_xdp_action prog(struct rxp_xdp_buff *x, void *ctx)
{
	uint32_t op = fz_u8(&in), lin = (uint32_t)(x->data_end - x->data), n = lin;
	struct mframe m;
	struct expect e;
	struct rxp_txring *tx;

	/* frames the ring drops without asking come first */
	while (dq_n && !eligible(&done_q[dq_head]))
		(void)m_pop();
	m = m_pop();
	FZ_CHECK(rxp_xdp_len(x) == m.len && m.len <= sizeof(xbuf));
	memcpy(xbuf, x->data, lin);
	for (unsigned k = 0; x->mb && k < x->nr_frags; k++) {
		memcpy(xbuf + n, x->frags[k].page->addr + x->frags[k].off, x->frags[k].size);
		n += x->frags[k].size;
	}
	FZ_CHECK(n == m.len && !memcmp(xbuf, m.b, n));
	FZ_CHECK(x->nr_frags + 1u == m.nbufs || (!x->mb && m.nbufs == 1));
	e = (struct expect){m.b, 0, m.len, 0, 0};
	if (op & 0x10) {
		int d = (int)fz_u8(&in) - 128;

		if (!rxp_xdp_adjust_head(x, d)) {
			if (d >= 0)
				e.start = (uint32_t)d;
			else
				e.prefix = (uint32_t)-d;
		}
	}
	if (op & 0x20) {
		int d = (op & 0x80) ? (int)fz_u8(&in) : -(int)fz_u16(&in);

		if (!rxp_xdp_adjust_tail(x, d)) {
			if (d > 0) {
				e.suffix = (uint32_t)d;
			} else {
				uint32_t s = (uint32_t)-d,
					 k = s < e.end - e.start ? s : e.end - e.start;

				e.end -= k;
				e.prefix -= s - k;
			}
		}
	}
	FZ_CHECK(rxp_xdp_len(x) == e.prefix + (e.end - e.start) + e.suffix);
	if (op & 0x40)
		x->redirect = ctx;
	switch (op & 7) {
	case 0:
		return RXP_XDP_DROP;
	case 1:
	case 2:
		tx = (op & 7) == 2 && x->redirect ? x->redirect : rxp_rxring_txring(ring);
		/* queued unless that ring is full (then dropped) */
		if (rxp_txring_space(tx))
			fifo_push(tx == redir ? &tx_redir : &tx_own, e);
		return (op & 7) == 1 ? RXP_XDP_TX : RXP_XDP_REDIRECT;
	case 3:
		return RXP_XDP_ABORTED;
	case 4:
		return (enum rxp_xdp_action)99;
	default:
		fifo_push(&out_q, e);
		return RXP_XDP_PASS;
	}
}

static void sink(void *ctx, const struct rxp_tx_seg *segs, unsigned nsegs, uint32_t len)
{
	struct fifo *f = ctx;
	struct expect e = fifo_pop(f);
	uint32_t n = 0;

	FZ_CHECK(len <= sizeof(xbuf));
	for (unsigned s = 0; s < nsegs; s++) {
		memcpy(xbuf + n, segs[s].page->addr + segs[s].off, segs[s].len);
		n += segs[s].len;
	}
	FZ_CHECK(n == len);
	match(&e, xbuf, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint32_t bufs[] = {512, 2048, 3072, 2048};
	static uint8_t frame[RXP_GEN_FRAME_MAX + 64];
	static bool patterned;
	struct rxp_pktpool_config pc = {.name = "fzrm", .n_pkts = 256, .n_bufs = 64};
	struct rxp_pktpool *pp = fz_pool(&pc);
	struct rxp_rxring_config rc = {0};
	struct fz_pages pages;
	uint32_t cfg;
	bool xdp;

	if (!patterned) {
		for (uint32_t i = 64; i < sizeof(frame); i++)
			frame[i] = (uint8_t)(i * 7);
		patterned = true;
	}
	in = (struct fz_in){data, size};
	cfg = fz_u16(&in);
	memset(&out_q, 0, sizeof(out_q));
	memset(&tx_own, 0, sizeof(tx_own));
	memset(&tx_redir, 0, sizeof(tx_redir));
	dq_head = dq_n = 0;
	memset(&cur, 0, sizeof(cur));
	arena_top = 0;
	redir = rxp_txring_create(8);
	rc.count = 4 + (cfg & 0x3f);
	rc.buf_size = bufs[(cfg >> 7) & 3];
	rc.headroom = rc.buf_size == 512 ? 64 : 128;
	rc.page_size = (cfg >> 9) & 1 ? 8192 : 4096;
	pages = fz_ring_pages(rc.page_size, (cfg >> 10) & 1 ? rc.count / 2 + 4 : rc.count + 8);
	rc.ppool = pages.pool;
	rc.tx_count = 1 + ((cfg >> 11) & 7);
	rc.pp = pp;
	xdp = (cfg >> 14) & 1;
	rc.xdp = xdp ? prog : NULL;
	rc.xdp_ctx = redir;
	ring = rxp_rxring_create(&rc);
	FZ_CHECK(ring && redir);
	for (int ops = 0; in.n && ops < 200; ops++) {
		uint32_t op = fz_u8(&in);

		if (op < 80) {
			uint32_t len = fz_u16(&in) % sizeof(frame), zl = fz_u8(&in) << (op & 7);
			uint32_t bl = rxp_rxring_buf_len(ring), pos = 0;
			unsigned nb;

			fz_frame_head(&in, frame, len);
			nb = len ? rxp_rxring_bufs_for(ring, len) : 0;
			if (rxp_rxring_hw_write(ring, frame, len, len, zl))
				continue; /* refused whole: nothing written */
			/* what the hardware wrote, descriptor by descriptor */
			if (nb < 31)
				zl &= (2u << nb) - 1;
			if (len <= bl && !(zl & 3))
				zl = 0;
			for (unsigned k = 0; k < nb; k++) {
				uint32_t c = len - pos < bl ? len - pos : bl;

				if (k < 32 && (zl >> k) & 1)
					m_desc(NULL, 0, false);
				m_desc(frame + pos, c, k == nb - 1 && !(nb < 32 && (zl >> nb) & 1));
				pos += c;
			}
			if (nb < 32 && (zl >> nb) & 1)
				m_desc(NULL, 0, true);
		} else if (op < 140) {
			uint32_t len = fz_u16(&in) % (rxp_rxring_buf_len(ring) + 2);

			fz_frame_head(&in, frame, len);
			if (!rxp_rxring_hw_write_desc(ring, frame, len, 0, op & 1))
				m_desc(frame, len, op & 1);
		} else if (op < 220) {
			struct rxp_pkt *out[64];
			unsigned nout = 0, done;

			processed = 0;
			done = rxp_rxring_clean(ring, 1 + (op & 63), out, 64, &nout);
			/* what the clean handled without the program */
			while (processed < done) {
				struct mframe m = m_pop();

				if (eligible(&m)) {
					FZ_CHECK(!xdp); /* the program should have seen it */
					fifo_push(&out_q, (struct expect){m.b, 0, m.len, 0, 0});
				}
			}
			FZ_CHECK(processed == done && nout == out_q.n);
			for (unsigned i = 0; i < nout; i++) {
				struct expect e = fifo_pop(&out_q);

				FZ_CHECK(out[i]->len <= sizeof(xbuf) &&
					 !rxp_pkt_copy_bits(out[i], 0, xbuf, out[i]->len));
				FZ_CHECK(out[i]->len == rxp_pkt_headlen(out[i]) + out[i]->data_len);
				match(&e, xbuf, out[i]->len);
				rxp_pkt_consume(out[i]);
			}
		} else {
			rxp_txring_hw_send(rxp_rxring_txring(ring), op & 15, sink, &tx_own);
			rxp_txring_hw_send(redir, ~0u, sink, &tx_redir);
			rxp_txring_complete(redir, ~0u);
		}
	}
	/* what the hardware side never sent is completed unsent */
	while (tx_own.n)
		(void)fifo_pop(&tx_own);
	while (tx_redir.n)
		(void)fifo_pop(&tx_redir);
	rxp_txring_destroy(redir);
	FZ_CHECK(rxp_rxring_destroy(ring) == pages.held); /* a page leaked */
	fz_ring_pages_quiet(pages);
	while (dq_n)
		(void)m_pop();
	fz_pool_quiet(pp);
	return 0;
}
