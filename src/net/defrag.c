/*
 * The reassembly entry point: rxp_defrag_zone() parses a packet and hands
 * a fragment to the table's entry for its strategy, chosen once when the
 * table is made (t->frag: strict runs or a target policy). Both entries
 * are one body (frag_in) specialised on the strategy, so neither tests the
 * strategy per fragment. The entry decides and the table
 * (defrag_table.c) acts: every outcome of a queue or of a queued or
 * refused fragment is counted there. Counted here: what the parse finds
 * (invalid, ReasmReqds, a fragment that cannot be trimmed or made linear,
 * an atomic fragment's ReasmOKs) and copied_out.
 *
 * A fragment's way: classify (parse, trim to its IP length, header made
 * linear), lookup (an expired queue is given up first), the pressure
 * policy when it does not fit or tags of given-up datagrams may be alive,
 * a new queue if it has none, max_dist (IPv4), the end rules, the copy out
 * of a receive buffer (strict), insert into the storage, accounting,
 * completion. Invariant: from lookup on, pkt is owned by exactly one of
 * the caller, its queue or a drop, and each refusal returns NULL at once.
 */
#include <errno.h>
#include <string.h>

#include "rxpath/compiler.h"
#include "rxpath/wire.h"
#include "net/defrag_internal.h"

static const char *const policy_names[RXP_DEFRAG_POLICY_MAX] = {
	"strict", "first", "last", "bsd", "bsd-right", "linux", "windows", "solaris",
};

const char *rxp_defrag_policy_name(enum rxp_defrag_policy p)
{
	return (unsigned)p < RXP_DEFRAG_POLICY_MAX ? policy_names[p] : "?";
}

int rxp_defrag_policy_parse(const char *name, enum rxp_defrag_policy *p)
{
	for (unsigned i = 0; i < RXP_DEFRAG_POLICY_MAX; i++) {
		if (!strcmp(name, policy_names[i])) {
			*p = (enum rxp_defrag_policy)i;
			return 0;
		}
	}
	return -EINVAL;
}

void rxp_defrag_get_counters(const struct rxp_defrag_table *t, struct rxp_defrag_counters *c)
{
	*c = t->c;
	c->gap = t->gap16[DFR_CLS_GOOD] >> 4;
	for (int i = DFR_CLS_GOOD - 1; !c->gap && i >= 0; i--)
		c->gap = t->gap16[i] >> 4;
}

/*
 * Local delivery copies a fragment out of a driver's receive buffer before
 * queueing it (RXP_PKT_F_RINGBUF, set by rxp_pkt_build) and frees the
 * original, so the ring gets its buffer back now rather than when (or if)
 * the datagram completes: thread 001's collapse was fragments of datagrams
 * that lost a piece pinning receive buffers until the ring starved. The copy
 * goes into a packet-pool buffer of its size, so memory is charged as
 * before (truesize), and completion still coalesces the copies without
 * copying again. Not done in forward mode, with the Linux-like pressure
 * policy (kept as the comparison), when a discard hook wants the original
 * fragments, or when the fragment would need a large buffer (a jumbo
 * fragment); then, or when no buffer is left, the original is queued.
 * Consumes pkt: returns what to queue.
 */
static inline __attribute__((always_inline)) struct rxp_pkt *
copy_out(struct rxp_defrag_table *t, struct rxp_pkt *pkt, uint32_t *tsize)
{
	struct rxp_pkt *c;

	if (!(pkt->flags & RXP_PKT_F_RINGBUF) || t->cfg.forward || t->cfg.discard_cb ||
	    t->cfg.pressure == RXP_DEFRAG_PRESSURE_LINUX ||
	    rxp_pkt_headroom(pkt) + pkt->len > rxp_pktpool_buf_size(pkt->pool))
		return pkt;
	c = rxp_pkt_copy(pkt);
	if (!c)
		return pkt;
	t->c.copied_out++;
	*tsize = c->truesize;
	rxp_pkt_consume(pkt);
	return c;
}

/* Parse pkt: 1 for a fragment (fi filled, trimmed to its IP length, header
 * linear), 0 for a packet that is not one (the caller returns it), -1 when
 * pkt was consumed (dropped, or an atomic fragment; *out then says what to
 * return). */
static inline __attribute__((always_inline)) int classify(struct rxp_defrag_table *t,
							  struct rxp_pkt *pkt, struct dfr_info *fi,
							  uint32_t zone, struct rxp_pkt **out)
{
	uint8_t vbuf;
	const uint8_t *v =
		rxp_pkt_headlen(pkt) ? pkt->data : rxp_pkt_header_pointer(pkt, 0, 1, &vbuf);
	bool atomic = false;
	uint32_t flen;
	int r;

	*out = NULL;
	if (!v)
		return 0;
	if ((*v >> 4) == 4)
		r = dfr_ipv4_parse(pkt, fi, zone);
	else if ((*v >> 4) == 6)
		r = dfr_ipv6_parse(pkt, fi, zone, t->cfg.zone_all_v6, &atomic);
	else
		return 0;
	if (r < 0) {
		t->c.invalid++;
		rxp_pkt_drop(pkt, (enum rxp_drop_reason) - r);
		return -1;
	}
	if (r == 0 && !atomic)
		return 0;
	t->c.ReasmReqds++;
	/* cb->hdrlen is read only by the discard hook (frag_drop); without
	 * one, a fragment appended in order never touches the cache line of
	 * its metadata that holds cb. */
	if (t->cfg.discard_cb)
		dfr_cb(pkt)->hdrlen = 0; /* the rest of cb is set on insert */
	flen = fi->end - fi->off;
	if ((pkt->len != fi->hdrlen + flen && rxp_pkt_trim(pkt, fi->hdrlen + flen)) ||
	    (rxp_pkt_headlen(pkt) < fi->hdrlen && !rxp_pkt_may_pull(pkt, fi->hdrlen))) {
		t->c.ReasmFails++;
		rxp_pkt_drop(pkt, RXP_DROP_NOMEM);
		return -1;
	}
	if (!atomic)
		return 1;
	pkt = rxp_pkt_unshare(pkt);
	if (!pkt)
		return -1;
	r = dfr_ipv6_strip(pkt, fi);
	if (r) {
		rxp_pkt_drop(pkt, (enum rxp_drop_reason) - r);
		return -1;
	}
	pkt->network_off = (uint16_t)(pkt->data - pkt->head);
	t->c.ReasmOKs++;
	*out = pkt;
	return -1;
}

/* max_dist (IPv4): the fragment counts against q's source; when more than
 * max_dist of its fragments came since q's last one, q is likely stale and
 * starts again. */
static inline __attribute__((always_inline)) void max_dist_check(struct rxp_defrag_table *t,
								 struct dfr_queue *q, uint64_t now)
{
	uint32_t start, end;

	end = ++t->src[q->src].rid;
	start = q->rid;
	q->rid = end;
	if (rxp_unlikely(q->nfrags && end - start > (uint32_t)t->cfg.max_dist))
		dfr_queue_restart(t, q, now);
}

/* Linux's consistency rules on the datagram's end, applied to q for fi:
 * false when q must be discarded. */
static inline __attribute__((always_inline)) bool end_ok(struct dfr_queue *q,
							 const struct dfr_info *fi)
{
	if (!fi->mf) {
		if (fi->end < q->len || ((q->flags & DFR_F_LAST) && fi->end != q->len))
			return false;
		q->flags |= DFR_F_LAST;
		q->len = fi->end;
	} else if (fi->end > q->len) {
		if (q->flags & DFR_F_LAST)
			return false;
		q->len = fi->end;
	}
	return fi->end != fi->off;
}

/* pkt, of tsize bytes, is now q's: the queue's accounting, its typical
 * gap, and what the first fragment and the largest one tell. */
static inline __attribute__((always_inline)) void
accepted(struct rxp_defrag_table *t, struct dfr_queue *q, const struct dfr_info *fi,
	 struct rxp_pkt *pkt, uint32_t tsize, const bool strict)
{
	uint32_t seq = (uint32_t)t->seq, flen = fi->end - fi->off;

	if (q->nfrags < DFR_PF) {
		q->pf[q->nfrags] = pkt;
		q->pg[q->nfrags] = pkt->head_page;
	}
	if (q->nfrags)
		dfr_gap_note(t, q, seq - q->last_seq);
	q->nfrags++;
	q->last_seq = seq;
	q->mem += tsize;
	t->c.mem += tsize;
	if (t->c.mem > t->c.mem_high_water)
		t->c.mem_high_water = t->c.mem;
	q->meat = strict ? q->meat + flen : q->nblocks * 8u;
	if (fi->off == 0 && !(q->flags & DFR_F_FIRST)) {
		q->flags |= DFR_F_FIRST;
		q->hdr0 = pkt->data - fi->hdrlen;
		q->pkt0 = pkt;
		q->hdrlen = fi->hdrlen;
		q->nhoff = fi->nhoff;
		q->nexthdr = fi->nexthdr;
	}
	q->ecn_mask |= (uint8_t)(1u << fi->ecn);
	if (fi->hdrlen + flen > q->max_size)
		q->max_size = fi->hdrlen + flen;
	if (fi->df && fi->hdrlen + flen > q->max_df_size)
		q->max_df_size = fi->hdrlen + flen;
}

/* Policy mode must refuse a datagram over 65535 bytes now (strict mode
 * fails it when it completes, as Linux does), because its block map and
 * build buffers are sized for 65535. What may not pass 65535 is IPv4's
 * total length, but IPv6's payload length: the extension headers and the
 * payload, not the fixed header or the fragment header
 * (fuzz_frag_roundtrip: 65532 payload bytes were refused). */
static bool too_big(const struct dfr_info *fi)
{
	return fi->hdrlen - (fi->key.family == 6 ? RXP_IPV6_HLEN + RXP_IPV6_FRAGHDR_LEN : 0) +
		       fi->end >
	       DFR_MAXLEN;
}

/* The fragment fi (pkt, parsed) for the table's storage: strict (runs) or
 * a target policy, a constant in each specialisation. Consumes pkt;
 * returns a datagram it completed, or NULL. */
static inline __attribute__((always_inline)) struct rxp_pkt *
frag_in(struct rxp_defrag_table *t, struct rxp_pkt *pkt, const struct dfr_info *fi, uint64_t now,
	const bool strict)
{
	bool prefetched = false, hashed;
	struct dfr_queue *q;
	uint32_t tsize, slot;
	uint64_t h = 0;
	int r;

	t->seq++; /* the table's clock for gaps and ages: fragments seen */
	q = dfr_lookup(t, &fi->key, &h, &hashed, &slot);
	if (q && q->expires <= now) {
		dfr_queue_kill(t, q, RXP_DROP_FRAG_TIMEOUT);
		q = NULL;
	}
	tsize = pkt->truesize;
	if (strict && q && dfr_completes(q, fi)) {
		/* This fragment will most likely complete the datagram: start
		 * fetching the others (and its own second line, which building
		 * reads, and page header, which freeing the datagram reads)
		 * now, while it is checked and placed. */
		dfr_prefetch_frags(q);
		__builtin_prefetch((const char *)pkt + 64);
		__builtin_prefetch(pkt->head_page);
		prefetched = true;
	}
	/* Under pressure (or while datagrams given up under it may still be
	 * coming back, or when this fragment shows its datagram missed a
	 * turn at such a time) the pressure policy decides. */
	if (rxp_unlikely(!dfr_fits(t, tsize, !q) ||
			 (dfr_tombs_live(t) &&
			  (!q || dfr_gap_skips(t, q, (uint32_t)t->seq - q->last_seq))))) {
		r = dfr_pressure(t, &q, fi, h, hashed, tsize);
		if (r) {
			dfr_refuse(t, q, fi, pkt, 0, (enum rxp_drop_reason)r);
			return NULL;
		}
	}
	if (!q)
		q = dfr_queue_new(t, &fi->key, h, hashed, slot, now);
	if (fi->key.family == 4 && t->cfg.max_dist > 0)
		max_dist_check(t, q, now);
	r = !end_ok(q, fi)	     ? RXP_DROP_FRAG_INVALID
	    : !strict && too_big(fi) ? RXP_DROP_FRAG_TOO_BIG
				     : 0;
	if (r) {
		dfr_kill_with(t, q, pkt, (enum rxp_drop_reason)r);
		return NULL;
	}
	if (strict)
		pkt = copy_out(t, pkt, &tsize);
	rxp_pkt_pull(pkt, fi->hdrlen);
	if (t->cfg.discard_cb)
		dfr_cb(pkt)->hdrlen = fi->hdrlen;
	if (!strict) {
		dfr_cb(pkt)->off = fi->off;
		dfr_cb(pkt)->end = fi->end;
	}
	r = strict ? dfr_runs_insert(t, q, pkt, fi->off, fi->end) : dfr_policy_insert(t, q, pkt);
	if (rxp_unlikely(r != DFR_OK)) {
		dfr_insert_failed(t, q, fi, pkt, r);
		return NULL;
	}
	accepted(t, q, fi, pkt, tsize, strict);
	if (rxp_unlikely(t->cfg.event_cb))
		dfr_ev_frag(t, q, fi, pkt, fi->hdrlen, RXP_DEFRAG_EV_FRAG, 0);
	/* Strict: one test (&), not two branches that each mispredict in a
	 * shuffled order. */
	if (strict ? (q->flags == (DFR_F_FIRST | DFR_F_LAST)) & (q->meat == q->len)
		   : q->flags == (DFR_F_FIRST | DFR_F_LAST) && dfr_policy_complete(q))
		return dfr_finish(t, q, pkt, prefetched);
	return NULL;
}

/* rxp_defrag_zone() for the table's storage: a packet that is not a
 * fragment is returned as it is. */
static inline __attribute__((always_inline)) struct rxp_pkt *entry(struct rxp_defrag_table *t,
								   struct rxp_pkt *pkt,
								   uint32_t zone, uint64_t now,
								   const bool strict)
{
	struct rxp_pkt *out;
	struct dfr_info fi;
	int r = classify(t, pkt, &fi, zone, &out);

	if (r <= 0)
		return r ? out : pkt;
	return frag_in(t, pkt, &fi, now, strict);
}

struct rxp_pkt *dfr_frag_runs(struct rxp_defrag_table *t, struct rxp_pkt *pkt, uint32_t zone,
			      uint64_t now)
{
	return entry(t, pkt, zone, now, true);
}

struct rxp_pkt *dfr_frag_policy(struct rxp_defrag_table *t, struct rxp_pkt *pkt, uint32_t zone,
				uint64_t now)
{
	return entry(t, pkt, zone, now, false);
}

/* The strategy's entry, chosen with the table. */
void rxp_defrag_prefetch(const struct rxp_defrag_table *t, const void *l3, size_t len,
			 uint32_t zone)
{
	const uint8_t *b = l3;
	struct dfr_key k = {0};

	if (len >= RXP_IPV4_HLEN && b[0] == 0x45 && ((b[6] & 0x3f) | b[7])) {
		k.family = 4;
		k.proto = b[9];
		k.id = (uint32_t)b[4] << 8 | b[5];
		k.zone = zone;
		memcpy(k.addr, b + 12, 8);
	} else if (len >= RXP_IPV6_HLEN + RXP_IPV6_FRAGHDR_LEN && b[0] >> 4 == 6 &&
		   b[6] == 44) { /* the fragment header first, as nearly always */
		k.family = 6;
		k.id = (uint32_t)b[44] << 24 | (uint32_t)b[45] << 16 | (uint32_t)b[46] << 8 | b[47];
		k.zone = dfr_ipv6_zone(b + 24, zone, t->cfg.zone_all_v6);
		memcpy(k.addr, b + 8, 32);
	} else {
		return;
	}
	dfr_prefetch(t, &k);
}

struct rxp_pkt *rxp_defrag_zone(struct rxp_defrag_table *t, struct rxp_pkt *pkt, uint32_t zone,
				uint64_t now_ns)
{
	return t->frag(t, pkt, zone, now_ns);
}

struct rxp_pkt *rxp_defrag(struct rxp_defrag_table *t, struct rxp_pkt *pkt, uint64_t now_ns)
{
	return t->frag(t, pkt, t->cfg.zone, now_ns);
}
