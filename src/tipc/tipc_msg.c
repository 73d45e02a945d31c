/*
 * TIPC v2 header codec and validation, and the sender-side builders:
 * plain messages, bundles and fragments (include/rxpath/tipc.h).
 *
 * Invariants: every read of a header is preceded by a length check against
 * the bytes actually present (callers pass pointer and length, or a packet
 * read through rxp_pkt_header_pointer); sizes are uint32_t with explicit
 * bounds, so "remaining = len - 24" is never computed when len < 24 (V5);
 * offsets into a message come from its hsize, never from a constant (V4).
 * The builders never take ownership of a message they only copy from.
 */
#include <errno.h>
#include <string.h>

#include "rxpath/compiler.h"
#include "rxpath/page_pool.h"
#include "rxpath/tipc.h"
#include "tipc/tipc_internal.h"

const struct rxp_tipc_field_desc rxp_tipc_fields[RXP_TIPC_F_MAX] = {
#define FIELD_DESC(name, w, hi, lo) [RXP_TIPC_F_##name] = {#name, w, hi, lo},
	RXP_TIPC_FIELDS(FIELD_DESC)
#undef FIELD_DESC
};

uint32_t rxp_tipc_get(const uint8_t *h, enum rxp_tipc_field f)
{
	const struct rxp_tipc_field_desc *d = &rxp_tipc_fields[f];

	return rxp_tipc_bits(h, d->word, d->hi, d->lo);
}

void rxp_tipc_set(uint8_t *h, enum rxp_tipc_field f, uint32_t v)
{
	const struct rxp_tipc_field_desc *d = &rxp_tipc_fields[f];

	rxp_tipc_set_bits(h, d->word, d->hi, d->lo, v);
}

void rxp_tipc_set_hsize(uint8_t *h, unsigned bytes)
{
	rxp_tipc_set_bits(h, 0, 24, 21, bytes / 4);
}

unsigned rxp_tipc_importance(const uint8_t *h)
{
	unsigned user = rxp_tipc_user(h);

	/* Data users carry their importance as the user itself; internal
	 * carriers (bundles, fragments) copy it into word 9. */
	if (user < RXP_TIPC_SYSTEM_IMPORTANCE)
		return user;
	if (user == RXP_TIPC_MSG_BUNDLER || user == RXP_TIPC_MSG_FRAGMENTER)
		return rxp_tipc_bits(h, 9, 2, 0);
	return RXP_TIPC_SYSTEM_IMPORTANCE;
}

uint32_t rxp_tipc_orignode(const uint8_t *h)
{
	/* A short header has no word 6: the message originates at prevnode. */
	if (rxp_tipc_hsize(h) > RXP_TIPC_SHORT_H_SIZE)
		return rxp_tipc_word(h, 6);
	return rxp_tipc_word(h, 3);
}

void rxp_tipc_hdr_init(uint8_t *h, unsigned user, unsigned type, unsigned hsize, uint32_t prevnode,
		       uint32_t destnode)
{
	/* Whole words: this runs once per fragment on the send path. */
	memset(h, 0, hsize);
	rxp_tipc_set_word(h, 0,
			  (uint32_t)RXP_TIPC_VERSION << 29 | (user & 15u) << 25 |
				  ((hsize / 4) & 15u) << 21 | (hsize & 0x1ffffu));
	rxp_tipc_set_word(h, 1, (type & 7u) << 29);
	rxp_tipc_set_word(h, 3, prevnode);
	if (hsize > RXP_TIPC_SHORT_H_SIZE) {
		rxp_tipc_set_word(h, 6, prevnode);
		rxp_tipc_set_word(h, 7, destnode);
	}
}

enum rxp_drop_reason rxp_tipc_validate(const uint8_t *p, size_t len)
{
	/* V1: fewer than 24 bytes hold no word 0 to read; the rest of V1-V3
	 * is the one check every path uses (tipc_internal.h). */
	if (len < RXP_TIPC_MIN_H_SIZE)
		return RXP_DROP_TIPC_HDR;
	return tipc_validate_w0(rxp_tipc_word(p, 0), len > UINT32_MAX ? UINT32_MAX : (uint32_t)len);
}

enum rxp_drop_reason rxp_tipc_validate_pkt(const struct rxp_pkt *pkt)
{
	uint8_t buf[RXP_TIPC_MIN_H_SIZE];

	/* Word 0 holds everything V1-V3 need: only the minimal header is read
	 * (in place when linear), the rest is checked by length. */
	return tipc_validate_hdr(tipc_hdr(pkt, buf), pkt->len);
}

/* ---- builders ------------------------------------------------------------------ */

static bool hsize_ok(unsigned hsize)
{
	return hsize >= RXP_TIPC_MIN_H_SIZE && hsize <= RXP_TIPC_MAX_H_SIZE && !(hsize & 3);
}

struct rxp_pkt *rxp_tipc_msg_new(struct rxp_pktpool *pp, unsigned user, unsigned type,
				 unsigned hsize, uint32_t prevnode, uint32_t destnode,
				 uint32_t destport, const void *payload, uint32_t len)
{
	struct rxp_pkt *pkt;
	uint8_t *h;

	if (!hsize_ok(hsize) || user > 15 || type > 7 || len > RXP_TIPC_MAX_USER_MSG_SIZE)
		return NULL;
	pkt = rxp_pkt_alloc(pp, hsize + len);
	if (!pkt)
		return NULL;
	h = rxp_pkt_put(pkt, hsize + len);
	rxp_tipc_hdr_init(h, user, type, hsize, prevnode, destnode);
	rxp_tipc_set(h, RXP_TIPC_F_SIZE, hsize + len);
	rxp_tipc_set_word(h, 5, destport);
	if (len)
		memcpy(h + hsize, payload, len);
	return pkt;
}

struct rxp_pkt *rxp_tipc_bundle_new(struct rxp_pktpool *pp, uint32_t mtu, uint32_t prevnode,
				    uint32_t destnode)
{
	struct rxp_pkt *b;

	if (mtu < 64 || mtu > 65535)
		return NULL;
	b = rxp_pkt_alloc(pp, mtu);
	if (!b)
		return NULL;
	rxp_tipc_hdr_init(rxp_pkt_put(b, RXP_TIPC_INT_H_SIZE), RXP_TIPC_MSG_BUNDLER, 0,
			  RXP_TIPC_INT_H_SIZE, prevnode, destnode);
	return b;
}

int rxp_tipc_bundle_add(struct rxp_pkt *b, const struct rxp_pkt *msg, uint32_t mtu)
{
	uint8_t mbuf[RXP_TIPC_MAX_H_SIZE], *bh = b->data;
	const uint8_t *mh;
	uint32_t bsize, msize, pos;
	unsigned cnt, user;

	if (msg->len < RXP_TIPC_MIN_H_SIZE || !rxp_pkt_is_linear(b) ||
	    rxp_pkt_headlen(b) < RXP_TIPC_INT_H_SIZE)
		return -EINVAL;
	mh = rxp_pkt_header_pointer(msg, 0, RXP_TIPC_MIN_H_SIZE, mbuf);
	if (!mh || rxp_tipc_validate_pkt(msg))
		return -EINVAL;
	user = rxp_tipc_user(mh);
	/* Never build what the receiver must drop (the kernel's try_bundle
	 * refuses the same users). */
	if (user == RXP_TIPC_MSG_FRAGMENTER || user == RXP_TIPC_TUNNEL_PROTOCOL ||
	    user == RXP_TIPC_BCAST_PROTOCOL || user == RXP_TIPC_MSG_BUNDLER)
		return -EINVAL;
	msize = rxp_tipc_size(mh);
	bsize = rxp_tipc_size(bh);
	pos = RXP_ALIGN_UP(bsize, 4u);
	if ((uint64_t)pos + msize > mtu || pos + msize > rxp_pkt_headlen(b) + rxp_pkt_tailroom(b))
		return -EMSGSIZE;
	cnt = rxp_tipc_get(bh, RXP_TIPC_F_MSGCNT);
	if (cnt == 0xffff)
		return -EMSGSIZE;
	/* Zero the alignment padding so the wire carries no stale bytes. */
	if (pos > bsize)
		memset(rxp_pkt_put(b, pos - bsize), 0, pos - bsize);
	rxp_pkt_copy_bits(msg, 0, rxp_pkt_put(b, msize), msize);
	/* Bundlers and fragmenters were refused, so 24 bytes suffice here. */
	if (cnt == 0)
		rxp_tipc_set(bh, RXP_TIPC_F_IMPORTANCE, rxp_tipc_importance(mh));
	rxp_tipc_set(bh, RXP_TIPC_F_MSGCNT, cnt + 1);
	rxp_tipc_set(bh, RXP_TIPC_F_SIZE, pos + msize);
	return 0;
}

/*
 * Fragment headers of one message share head buffers: each fragment's head
 * is its own FRAG_SLOT-byte slice [FRAG_HEADROOM for a bearer's IPv4/UDP
 * (and Ethernet) headers, then the 40-byte TIPC header] of a block, built
 * with rxp_pkt_build around a page reference. A fragment then costs one
 * metadata object instead of a metadata object and a head buffer, and
 * freeing it drops a page reference instead of returning a buffer.
 * Slices never overlap and no fragment is marked cloned, so each may write
 * its own head (the UDP bearer pushes its headers there) and nothing else.
 *
 * Page references are taken in bulk (a driver's "bias"): one atomic add
 * for all of a block's slices and one for all of a linear message's
 * pieces, instead of a locked add per fragment; what is left unused goes
 * back in one subtraction when the message is done.
 */
#define FRAG_HEADROOM 64u
#define FRAG_SLOT (FRAG_HEADROOM + RXP_TIPC_INT_H_SIZE)

struct frag_ctx {
	struct rxp_pkt *blk; /* holds the block's buffer while slices are cut */
	uint32_t off, end; /* next free slice, end of the buffer (page offsets) */
	uint32_t blk_bias; /* references taken on blk's page for its slices */
	struct rxp_page *src; /* a linear message's head page, or NULL */
	uint32_t src_off; /* the message's first byte in src */
	uint32_t src_bias; /* references taken on src for the pieces */
};

/* Give back the references not handed to fragments, and the block. */
static void frag_ctx_done(struct frag_ctx *fc)
{
	if (fc->blk) {
		rxp_page_put_many(fc->blk->head_page, fc->blk_bias);
		rxp_pkt_consume(fc->blk);
		fc->blk = NULL;
	}
	if (fc->src)
		rxp_page_put_many(fc->src, fc->src_bias);
	fc->src = NULL;
}

/* A new block for the slices (the old one's unused references go back);
 * false when out of memory. */
__attribute__((noinline)) static bool frag_block(struct rxp_pktpool *pp, struct frag_ctx *fc)
{
	if (fc->blk) {
		rxp_page_put_many(fc->blk->head_page, fc->blk_bias);
		rxp_pkt_consume(fc->blk);
	}
	fc->blk = rxp_pkt_alloc(pp, RXP_TIPC_INT_H_SIZE);
	fc->blk_bias = 0;
	if (!fc->blk)
		return false;
	fc->off = (uint32_t)(fc->blk->head - fc->blk->head_page->addr);
	fc->end = fc->off + (uint32_t)(fc->blk->end - fc->blk->head);
	if (fc->end - fc->off < FRAG_SLOT) {
		rxp_pkt_consume(fc->blk);
		fc->blk = NULL;
		return false;
	}
	fc->blk_bias = (fc->end - fc->off) / FRAG_SLOT;
	rxp_page_get_many(fc->blk->head_page, fc->blk_bias);
	return true;
}

/* Make sure the current block has a free slice (one page reference of its
 * bias each); false when out of memory. */
static inline bool frag_slot(struct rxp_pktpool *pp, struct frag_ctx *fc)
{
	if (rxp_likely(fc->blk && fc->end - fc->off >= FRAG_SLOT))
		return true;
	return frag_block(pp, fc);
}

/* A head of FRAG_SLOT bytes with the 40-byte header in place (uninitialised,
 * the caller writes it); NULL when out of memory. */
static struct rxp_pkt *frag_head(struct rxp_pktpool *pp, struct frag_ctx *fc)
{
	struct rxp_pkt *f;

	if (!frag_slot(pp, fc))
		return NULL;
	/* rxp_pkt_build consumes one reference, also when it fails. */
	fc->blk_bias--;
	f = rxp_pkt_build(pp, fc->blk->head_page, fc->off, FRAG_SLOT, FRAG_HEADROOM,
			  RXP_TIPC_INT_H_SIZE);
	fc->off += FRAG_SLOT;
	/* The block is a pool head buffer, not a driver's ring buffer: holding
	 * a fragment starves no ring, so layers need not copy it out. */
	if (f)
		f->flags &= (uint8_t)~RXP_PKT_F_RINGBUF;
	return f;
}

/*
 * A fragment packet: its 40-byte header in its own head, then bytes
 * [off, off + n) of msg. Large pieces reference msg's pages (no copy;
 * msg's bytes are never written afterwards), small ones are copied.
 */
static struct rxp_pkt *frag_new(struct rxp_pktpool *pp, struct frag_ctx *fc, struct rxp_pkt *msg,
				uint32_t off, uint32_t n)
{
	struct rxp_pkt *f;

	if (n > RXP_TIPC_COPY_BREAK && !msg->frag_list) {
		/* A piece of a linear message: the slice and the piece in one
		 * step, one reference out of each bias (both are consumed,
		 * also when it fails). */
		if (rxp_likely(fc->src && fc->src_bias)) {
			if (!frag_slot(pp, fc))
				return NULL;
			fc->blk_bias--;
			fc->src_bias--;
			f = rxp_pkt_build_frag(pp, fc->blk->head_page, fc->off, FRAG_SLOT,
					       FRAG_HEADROOM, RXP_TIPC_INT_H_SIZE, fc->src,
					       fc->src_off + off, n);
			fc->off += FRAG_SLOT;
			return f;
		}
		if (!fc->src) {
			f = frag_head(pp, fc);
			if (!f)
				return NULL;
			if (!tipc_pkt_add_range(f, msg, off, n))
				return f;
			rxp_pkt_consume(f);
		}
	}
	f = rxp_pkt_alloc(pp, RXP_TIPC_INT_H_SIZE + n);
	if (!f)
		return NULL;
	rxp_pkt_put(f, RXP_TIPC_INT_H_SIZE + n);
	rxp_pkt_copy_bits(msg, off, f->data + RXP_TIPC_INT_H_SIZE, n);
	return f;
}

int rxp_tipc_fragment(struct rxp_pktpool *pp, struct rxp_pkt *msg, uint32_t mtu,
		      struct rxp_pkt_queue *out)
{
	uint8_t mbuf[RXP_TIPC_MAX_H_SIZE], tmpl[RXP_TIPC_INT_H_SIZE];
	const uint8_t *mh;
	struct rxp_pkt_queue q;
	uint32_t chunk, off, total, prevnode, destnode, w0;
	struct frag_ctx fc = {0};
	unsigned imp, no = 1;
	int rc;

	if (mtu <= RXP_TIPC_INT_H_SIZE + 4 || mtu > 65535 || rxp_tipc_validate_pkt(msg)) {
		rxp_pkt_drop(msg, RXP_DROP_TIPC_HDR);
		return -EINVAL;
	}
	mh = rxp_pkt_header_pointer(msg, 0, RXP_TIPC_MIN_H_SIZE, mbuf);
	total = rxp_tipc_size(mh);
	if (total <= mtu) {
		rxp_pkt_trim(msg, total);
		rxp_pkt_enqueue(out, msg);
		return 1;
	}
	/* total > mtu > 44: 40 bytes are there for word 9 and word 7. */
	mh = rxp_pkt_header_pointer(msg, 0, RXP_TIPC_INT_H_SIZE, mbuf);
	imp = rxp_tipc_importance(mh);
	prevnode = rxp_tipc_word(mh, 3);
	destnode = rxp_tipc_hsize(mh) > RXP_TIPC_SHORT_H_SIZE ? rxp_tipc_word(mh, 7) : 0;
	chunk = (mtu - RXP_TIPC_INT_H_SIZE) & ~3u;
	/* One template per message; each fragment copies it whole and sets
	 * only size, type and fragm_no (nof_fragms stays 0). */
	rxp_tipc_hdr_init(tmpl, RXP_TIPC_MSG_FRAGMENTER, 0, RXP_TIPC_INT_H_SIZE, prevnode,
			  destnode);
	rxp_tipc_set_word(tmpl, 9, imp & 7u);
	w0 = rxp_tipc_word(tmpl, 0);
	if (rxp_pkt_is_linear(msg) && !msg->frag_list) {
		fc.src = msg->head_page;
		fc.src_off = rxp_pkt_data_page_off(msg);
		fc.src_bias = (total + chunk - 1) / chunk;
		rxp_page_get_many(fc.src, fc.src_bias);
	}
	rxp_pkt_queue_init(&q);
	for (off = 0; off < total; off += chunk, no++) {
		uint32_t n = total - off < chunk ? total - off : chunk;
		unsigned type = off == 0	   ? RXP_TIPC_FIRST_FRAGMENT
				: off + n == total ? RXP_TIPC_LAST_FRAGMENT
						   : RXP_TIPC_FRAGMENT;
		struct rxp_pkt *f = frag_new(pp, &fc, msg, off, n);
		uint8_t *h;

		if (!f || no > 0xffff) {
			rxp_pkt_consume(f);
			frag_ctx_done(&fc);
			rxp_pkt_queue_purge(&q, RXP_DROP_NOMEM);
			rxp_pkt_drop(msg, RXP_DROP_NOMEM);
			return -ENOMEM;
		}
		h = f->data;
		memcpy(h, tmpl, RXP_TIPC_INT_H_SIZE);
		rxp_tipc_set_word(h, 0, w0 + n); /* size = 40 + n < 2^17 */
		rxp_tipc_set_word(h, 1, (uint32_t)type << 29);
		rxp_tipc_set_word(h, 4, no << 16);
		rxp_pkt_enqueue(&q, f);
	}
	frag_ctx_done(&fc);
	rxp_pkt_consume(msg);
	rc = (int)q.len;
	rxp_pkt_queue_splice(out, &q); /* all or nothing reaches out */
	return rc;
}
