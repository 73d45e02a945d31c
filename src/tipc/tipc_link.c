/*
 * TIPC link receive: the one entry point (rxp_tipc_link_rcv), bundle
 * extraction, per-link reassembly and dispatch by user
 * (include/rxpath/tipc.h, docs/design.md, TIPC receive rules).
 *
 * Invariants:
 *   - every function here that takes a packet consumes it on every path:
 *     it is delivered to a sink, kept as l->reasm, or dropped through
 *     link_drop(), which counts the reason on the link and on the pool.
 *     Nothing returns "not consumed" (seed thread 000's leak);
 *   - dispatch() knows where a message came from (top level, inside a
 *     bundle, out of reassembly); only the top level unbundles or
 *     reassembles, so nesting depth is 1 (B5) and recursion is bounded;
 *   - bundles are walked by inner sizes with pos <= end always, never by
 *     msgcnt (B1-B4); each inner message is validated before dispatch;
 *   - l->reasm is NULL or the partial message (header stripped) whose
 *     length never exceeds RXP_TIPC_MAX_MSG_SIZE (R4), and l->reasm_next
 *     is the fragm_no expected next (R3);
 *   - l->reasm_pages holds page references of fragments already joined
 *     into l->reasm; it is flushed whenever reassembly ends (message
 *     done, error, reset), so it never holds a page past them.
 */
#include <errno.h>
#include <string.h>

#include "rxpath/compiler.h"
#include "rxpath/tipc.h"
#include "tipc/tipc_internal.h"

enum ctx { CTX_TOP, CTX_BUNDLE, CTX_REASM };

static void link_drop(struct rxp_tipc_link *l, struct rxp_pkt *pkt, enum rxp_drop_reason r)
{
	l->st.drops++;
	l->st.drop[r]++;
	rxp_pkt_drop(pkt, r);
}

void rxp_tipc_link_init(struct rxp_tipc_link *l, struct rxp_pktpool *pp)
{
	memset(l, 0, sizeof(*l));
	l->pp = pp;
}

static void reasm_free(struct rxp_tipc_link *l, enum rxp_drop_reason r)
{
	rxp_page_batch_flush(&l->reasm_pages);
	if (l->reasm)
		link_drop(l, l->reasm, r);
	l->reasm = NULL;
	l->reasm_next = 0;
}

void rxp_tipc_link_reset(struct rxp_tipc_link *l)
{
	reasm_free(l, RXP_DROP_TIPC_LINK_RESET);
}

int rxp_tipc_link_bind(struct rxp_tipc_link *l, uint32_t port, rxp_tipc_sink_fn fn, void *arg)
{
	for (unsigned i = 0; i < l->n_ports; i++)
		if (l->ports[i].port == port)
			return -EEXIST;
	if (l->n_ports >= RXP_TIPC_MAX_PORTS)
		return -ENOSPC;
	l->ports[l->n_ports++] = (struct rxp_tipc_port){port, fn, arg};
	return 0;
}

void rxp_tipc_link_set_node_sink(struct rxp_tipc_link *l, rxp_tipc_sink_fn fn, void *arg)
{
	l->node_fn = fn;
	l->node_arg = arg;
}

void rxp_tipc_link_set_ctrl(struct rxp_tipc_link *l, rxp_tipc_sink_fn fn, void *arg)
{
	l->ctrl_fn = fn;
	l->ctrl_arg = arg;
}

/* ---- delivery -------------------------------------------------------------------- */

/* A data message for a port; consumes pkt. The header (>= 24 bytes, all
 * users 0-3, 8, 9 have word 5) is linear because dispatch made it so. */
static void deliver_port(struct rxp_tipc_link *l, struct rxp_pkt *pkt)
{
	uint32_t port = rxp_tipc_destport(pkt->data);
	const struct rxp_tipc_port *any = NULL;

	for (unsigned i = 0; i < l->n_ports; i++) {
		const struct rxp_tipc_port *p = &l->ports[i];

		if (p->port == port) {
			l->st.delivered++;
			p->fn(p->arg, pkt);
			return;
		}
		if (p->port == RXP_TIPC_PORT_ANY)
			any = p;
	}
	if (any) {
		l->st.delivered++;
		any->fn(any->arg, pkt);
		return;
	}
	link_drop(l, pkt, RXP_DROP_TIPC_NO_PORT);
}

static void deliver_fn(struct rxp_tipc_link *l, struct rxp_pkt *pkt, rxp_tipc_sink_fn fn, void *arg,
		       uint64_t *counter, enum rxp_drop_reason none)
{
	if (!fn) {
		link_drop(l, pkt, none);
		return;
	}
	(*counter)++;
	fn(arg, pkt);
}

/* The reason a user is refused inside a bundle or a reassembled message. */
static enum rxp_drop_reason nested_reason(unsigned user)
{
	switch (user) {
	case RXP_TIPC_MSG_BUNDLER:
		return RXP_DROP_TIPC_NESTED_BUNDLE;
	case RXP_TIPC_MSG_FRAGMENTER:
		return RXP_DROP_TIPC_NESTED_FRAGMENT;
	case RXP_TIPC_TUNNEL_PROTOCOL:
		return RXP_DROP_TIPC_NESTED_TUNNEL;
	case RXP_TIPC_BCAST_PROTOCOL:
		return RXP_DROP_TIPC_NESTED_BCAST;
	case RXP_TIPC_SYSTEM_IMPORTANCE:
		return RXP_DROP_TIPC_USER;
	default:
		return RXP_DROP_TIPC_NESTED_LINK; /* 7, 13, 14, 15 */
	}
}

static void bundle_extract(struct rxp_tipc_link *l, struct rxp_pkt *pkt);
static inline __attribute__((always_inline)) void reasm_rcv(struct rxp_tipc_link *l,
							    struct rxp_pkt *pkt);

/*
 * Route a validated message (pkt->data at its header, pkt->len == size)
 * by context and user, as the reference's dispatch table says. Consumes pkt.
 */
static void dispatch(struct rxp_tipc_link *l, struct rxp_pkt *pkt, enum ctx ctx)
{
	uint8_t buf[RXP_TIPC_MIN_H_SIZE];
	uint32_t hl = rxp_pkt_headlen(pkt);
	unsigned user;

	/* Validated, so 24 <= hsize <= len: make the header linear once, and
	 * the handlers read it in place. Nearly every packet already is (the
	 * test reads word 0 in place only when 24 bytes are linear). */
	if (rxp_unlikely(hl < RXP_TIPC_MIN_H_SIZE || hl < rxp_tipc_hsize(pkt->data))) {
		const uint8_t *h = rxp_pkt_header_pointer(pkt, 0, sizeof(buf), buf);

		if (!rxp_pkt_may_pull(pkt, rxp_tipc_hsize(h))) {
			link_drop(l, pkt, RXP_DROP_NOMEM);
			return;
		}
	}
	user = rxp_tipc_user(pkt->data);
	switch (user) {
	case RXP_TIPC_LOW_IMPORTANCE:
	case RXP_TIPC_MEDIUM_IMPORTANCE:
	case RXP_TIPC_HIGH_IMPORTANCE:
	case RXP_TIPC_CRITICAL_IMPORTANCE:
	case RXP_TIPC_CONN_MANAGER:
	case RXP_TIPC_GROUP_PROTOCOL:
		deliver_port(l, pkt);
		return;
	case RXP_TIPC_NAME_DISTRIBUTOR:
		deliver_fn(l, pkt, l->node_fn, l->node_arg, &l->st.delivered,
			   RXP_DROP_TIPC_NO_PORT);
		return;
	default:
		break;
	}
	if (ctx != CTX_TOP) {
		link_drop(l, pkt, nested_reason(user));
		return;
	}
	switch (user) {
	case RXP_TIPC_MSG_BUNDLER:
		bundle_extract(l, pkt);
		return;
	case RXP_TIPC_MSG_FRAGMENTER:
		reasm_rcv(l, pkt);
		return;
	case RXP_TIPC_TUNNEL_PROTOCOL:
		link_drop(l, pkt, RXP_DROP_TIPC_TUNNEL);
		return;
	case RXP_TIPC_BCAST_PROTOCOL:
	case RXP_TIPC_LINK_PROTOCOL:
	case RXP_TIPC_LINK_CONFIG:
		deliver_fn(l, pkt, l->ctrl_fn, l->ctrl_arg, &l->st.ctrl, RXP_DROP_TIPC_UNHANDLED);
		return;
	default: /* 4, 14, 15 */
		link_drop(l, pkt, RXP_DROP_TIPC_USER);
		return;
	}
}

void rxp_tipc_link_rcv(struct rxp_tipc_link *l, struct rxp_pkt *pkt)
{
	uint8_t buf[RXP_TIPC_MIN_H_SIZE];
	const uint8_t *h = tipc_hdr(pkt, buf);
	enum rxp_drop_reason r;
	uint32_t w0, size;

	l->st.packets++;
	if (rxp_unlikely(!h)) {
		link_drop(l, pkt, RXP_DROP_TIPC_HDR);
		return;
	}
	/* Word 0 read once: every store below may alias the header bytes. */
	w0 = rxp_tipc_word(h, 0);
	r = tipc_validate_w0(w0, pkt->len); /* V1-V3 */
	if (rxp_unlikely(r)) {
		link_drop(l, pkt, r);
		return;
	}
	/* Trailing bytes beyond size are ignored (case 9): from here on
	 * pkt->len == size. */
	size = rxp_tipc_w0_size(w0);
	if (rxp_unlikely(size < pkt->len))
		rxp_pkt_trim(pkt, size);
	/* A fragment whose header is linear goes straight to reassembly, as
	 * dispatch() would send it at the top level. */
	if (h == pkt->data && rxp_tipc_w0_user(w0) == RXP_TIPC_MSG_FRAGMENTER &&
	    rxp_pkt_headlen(pkt) >= rxp_tipc_w0_hsize(w0)) {
		reasm_rcv(l, pkt);
		return;
	}
	dispatch(l, pkt, CTX_TOP);
}

/* ---- bundles ---------------------------------------------------------------------- */

/*
 * A new packet holding bytes [off, off + len) of src. Small messages are
 * copied; larger ones reference src's pages without copying, with only the
 * header pulled into the new packet's own head. Falls back to a copy when
 * src's bytes sit in a frag_list or span more than RXP_MAX_FRAGS pieces.
 * NULL when out of memory.
 */
static struct rxp_pkt *pkt_range(struct rxp_pktpool *pp, struct rxp_pkt *src, uint32_t off,
				 uint32_t len)
{
	struct rxp_pkt *p;

	if (len > RXP_TIPC_COPY_BREAK && !src->frag_list) {
		p = rxp_pkt_alloc(pp, RXP_TIPC_MAX_H_SIZE);
		if (!p)
			return NULL;
		if (!tipc_pkt_add_range(p, src, off, len) &&
		    rxp_pkt_may_pull(p, RXP_TIPC_MIN_H_SIZE))
			return p;
		rxp_pkt_consume(p);
	}
	p = rxp_pkt_alloc(pp, len);
	if (!p)
		return NULL;
	rxp_pkt_copy_bits(src, off, rxp_pkt_put(p, len), len);
	return p;
}

/* Walk a validated bundle (len == size) by inner sizes; consumes pkt. */
static void bundle_extract(struct rxp_tipc_link *l, struct rxp_pkt *pkt)
{
	uint8_t buf[RXP_TIPC_INT_H_SIZE];
	const uint8_t *h;
	uint32_t pos, end = pkt->len, cnt = 0, msgcnt = 0;
	enum rxp_drop_reason stop = RXP_DROP_NONE;

	pos = rxp_tipc_hsize(pkt->data); /* V4: inner messages start at hsize */
	if (pos >= RXP_TIPC_INT_H_SIZE) {
		h = rxp_pkt_header_pointer(pkt, 0, RXP_TIPC_INT_H_SIZE, buf);
		msgcnt = rxp_tipc_get(h, RXP_TIPC_F_MSGCNT);
	}
	/* B2: pos <= end holds, so end - pos cannot wrap. */
	while (end - pos >= RXP_TIPC_MIN_H_SIZE) {
		struct rxp_pkt *in;
		uint32_t isz;

		h = rxp_pkt_header_pointer(pkt, pos, RXP_TIPC_MIN_H_SIZE, buf);
		isz = rxp_tipc_size(h);
		/* B3: a size below a header would loop forever; above the
		 * rest would read past the bundle. */
		if (isz < RXP_TIPC_MIN_H_SIZE || isz > end - pos) {
			stop = RXP_DROP_TIPC_BUNDLE;
			break;
		}
		in = pkt_range(l->pp, pkt, pos, isz);
		if (!in) {
			stop = RXP_DROP_NOMEM;
			break;
		}
		if (rxp_tipc_validate_pkt(in)) {
			link_drop(l, in, RXP_DROP_TIPC_HDR);
			stop = RXP_DROP_TIPC_BUNDLE;
			break;
		}
		cnt++;
		l->st.bundled_msgs++;
		dispatch(l, in, CTX_BUNDLE);
		/* B1; isz <= end - pos, and ALIGN4 adds at most 3. */
		pos += RXP_ALIGN_UP(isz, 4u);
		if (pos > end)
			pos = end;
	}
	if (stop) {
		link_drop(l, pkt, stop);
		return;
	}
	l->st.bundles++;
	if (cnt != msgcnt)
		l->st.msgcnt_mismatch++; /* B4: advisory only */
	rxp_pkt_consume(pkt);
}

/* ---- reassembly ---------------------------------------------------------------------- */

/* Error: R7 frees the partial message and this fragment, and resets. */
static void reasm_fail(struct rxp_tipc_link *l, struct rxp_pkt *pkt, enum rxp_drop_reason r)
{
	reasm_free(l, r);
	link_drop(l, pkt, r);
}

/* FIRST_FRAGMENT, header pulled: starts a message (R3, R5); consumes pkt. */
__attribute__((noinline)) static void reasm_first(struct rxp_tipc_link *l, struct rxp_pkt *pkt,
						  uint32_t no)
{
	uint8_t ibuf[RXP_TIPC_MIN_H_SIZE];
	const uint8_t *ih;

	if (l->reasm || no != 1) { /* FIRST during reassembly; R3 */
		reasm_fail(l, pkt, RXP_DROP_TIPC_FRAG_SEQ);
		return;
	}
	/* R5: the inner header must be there and pass V1-V2 now. */
	ih = pkt->len >= RXP_TIPC_MIN_H_SIZE
		     ? rxp_pkt_header_pointer(pkt, 0, RXP_TIPC_MIN_H_SIZE, ibuf)
		     : NULL;
	if (!ih || rxp_tipc_bits(ih, 0, 31, 29) != RXP_TIPC_VERSION ||
	    rxp_tipc_hsize(ih) < RXP_TIPC_MIN_H_SIZE || rxp_tipc_hsize(ih) > pkt->len) {
		reasm_fail(l, pkt, RXP_DROP_TIPC_FRAG_INVALID);
		return;
	}
	/* try_coalesce needs a head it may write. */
	pkt = rxp_pkt_unshare(pkt);
	if (!pkt)
		return; /* dropped and counted by unshare */
	l->reasm = pkt;
	l->reasm_next = 2;
	l->st.fragments++;
}

/* After LAST_FRAGMENT was joined: R6, then dispatch the message. */
__attribute__((noinline)) static void reasm_done(struct rxp_tipc_link *l)
{
	uint8_t buf[RXP_TIPC_MIN_H_SIZE];
	struct rxp_pkt *pkt = l->reasm;
	const uint8_t *h;

	l->reasm = NULL;
	l->reasm_next = 0;
	rxp_page_batch_flush(&l->reasm_pages);
	/* R6: the whole message passes V1-V3; excess bytes are cut (case 19). */
	if (rxp_tipc_validate_pkt(pkt)) {
		link_drop(l, pkt, RXP_DROP_TIPC_FRAG_INVALID);
		return;
	}
	h = rxp_pkt_header_pointer(pkt, 0, RXP_TIPC_MIN_H_SIZE, buf);
	rxp_pkt_trim(pkt, rxp_tipc_size(h));
	l->st.reassembled++;
	dispatch(l, pkt, CTX_REASM);
}

/*
 * A validated MSG_FRAGMENTER packet (len == size) whose header is linear;
 * consumes pkt. The next fragment of the message being joined costs the
 * checks, a pull and a coalesce; FIRST and the end of a message are out of
 * line.
 */
static inline __attribute__((always_inline)) void reasm_rcv(struct rxp_tipc_link *l,
							    struct rxp_pkt *pkt)
{
	/* Words read once into registers (stores below may alias them);
	 * fragm_no lives in word 4, inside every valid header. */
	const uint8_t *h = pkt->data;
	unsigned hsize = rxp_tipc_hsize(h), type = rxp_tipc_type(h);
	uint32_t no = rxp_tipc_word(h, 4) >> 16; /* RXP_TIPC_F_FRAGM_NO */
	struct rxp_pkt *m;

	if (rxp_unlikely(type > RXP_TIPC_LAST_FRAGMENT)) { /* R2 */
		reasm_fail(l, pkt, RXP_DROP_TIPC_FRAG_TYPE);
		return;
	}
	/* V4: the fragment's data starts at its own hsize. */
	rxp_pkt_pull(pkt, hsize);
	if (type == RXP_TIPC_FIRST_FRAGMENT) {
		reasm_first(l, pkt, no);
		return;
	}
	m = l->reasm;
	if (rxp_unlikely(!m || no != l->reasm_next)) { /* R3; cases 10, 12, 13 */
		reasm_fail(l, pkt, RXP_DROP_TIPC_FRAG_SEQ);
		return;
	}
	if (rxp_unlikely(pkt->len > RXP_TIPC_MAX_MSG_SIZE - m->len)) { /* R4 */
		reasm_fail(l, pkt, RXP_DROP_TIPC_FRAG_TOO_BIG);
		return;
	}
	l->st.fragments++;
	/* Consumes pkt; its head's reference joins the batch (fragment heads
	 * are mostly slices of one buffer: one atomic per buffer, not per
	 * fragment). */
	rxp_pkt_try_coalesce_batch(m, pkt, &l->reasm_pages);
	if (type != RXP_TIPC_LAST_FRAGMENT) {
		if (rxp_unlikely(++l->reasm_next == 0)) /* 65535 fragments: cannot continue */
			reasm_free(l, RXP_DROP_TIPC_FRAG_TOO_BIG);
		return;
	}
	reasm_done(l);
}
