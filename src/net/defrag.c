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
 * completion. A strict table's plain fragments take a fast path that does
 * the same with less (see dfr_frag_runs). Invariant: from lookup on, pkt
 * is owned by exactly one of the caller, its queue or a drop, and each
 * refusal returns NULL at once.
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
	if (c->mem > c->mem_high_water)
		c->mem_high_water = c->mem;
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

/* Linux's consistency rules on the datagram's end, applied to q for a
 * fragment of payload [off, end) (mf: more follow): false when q must be
 * discarded. */
static inline __attribute__((always_inline)) bool ends_ok(struct dfr_queue *q, uint32_t off,
							  uint32_t end, bool mf)
{
	uint32_t len = q->len;
	bool last = q->flags & DFR_F_LAST;
	/* !mf: it must end at or past the known end, and at it once the
	 * last is known; mf: it may not pass the end once that is known.
	 * Chosen without a branch, as the update: whether a fragment is the
	 * last is a coin toss in a shuffled order. */
	bool bad = mf ? end > len && last : end < len || (last && end != len);

	q->len = bad ? len : mf && end <= len ? len : end;
	q->flags |= (uint8_t)(!bad && !mf ? DFR_F_LAST : 0);
	return !bad && end != off;
}

/* pkt, payload [off, end) with its header pulled, is q's fragment number
 * q->nfrags (< DFR_PF): noted in line 6, so that completion can take it
 * without reading it when it is a packet at home of the table's home pool,
 * holding just that payload, linear. */
static inline __attribute__((always_inline)) void dfr_note_frag(const struct rxp_defrag_table *t,
								struct dfr_queue *q,
								struct rxp_pkt *pkt, uint32_t off,
								uint32_t end)
{
	const unsigned i = q->nfrags;
	/* zero when it is at home in the home pool, linear, just the payload
	 * (one value tested once, not a branch per condition) */
	const uint64_t away =
		(uint64_t)((pkt->flags & (RXP_PKT_F_EMBED | RXP_PKT_F_HOMEREF)) ^ RXP_PKT_F_EMBED) |
		((uintptr_t)pkt->pool ^ (uintptr_t)t->home_pool) | pkt->data_len | pkt->nr_frags |
		(pkt->len ^ (end - off));

	q->pf[i] = pkt;
	q->fdoff[i] = rxp_pkt_data_page_off(pkt);
	q->foff[i] = (uint16_t)(off / 8u | (away ? DFR_FOFF_AWAY : 0));
}

/* pkt, of tsize bytes, payload [off, end) behind hdrlen header bytes, is
 * now q's: the queue's accounting, its typical gap, and what the first
 * fragment (nhoff, nexthdr: IPv6) and the largest one tell. watch: the
 * table may be watching for pressure (dfr_watching), false only where it
 * is known not to be. */
static inline __attribute__((always_inline)) void
account(struct rxp_defrag_table *t, struct dfr_queue *q, struct rxp_pkt *pkt, uint32_t tsize,
	uint32_t off, uint32_t end, uint16_t hdrlen, uint16_t nhoff, uint8_t nexthdr, uint8_t ecn,
	bool mf, bool df, const bool strict, const bool watch)
{
	uint32_t seq = (uint32_t)t->seq, flen = end - off;

	if (q->nfrags < DFR_PF)
		dfr_note_frag(t, q, pkt, off, end);
	if (!watch) {
		/* dfr_gap_note's part that does not watch: the fast path
		 * runs only while the table does not */
		uint32_t gap = seq - q->last_seq;

		gap = gap > DFR_GAP_MAX ? DFR_GAP_MAX : gap;
		q->gapmax = q->nfrags && gap > q->gapmax ? gap : q->gapmax;
	} else if (q->nfrags) {
		dfr_gap_note(t, q, seq - q->last_seq);
	}
	q->nfrags++;
	q->last_seq = seq;
	q->mem += tsize;
	t->c.mem += tsize; /* (its high water: dfr_mem_fall) */
	q->meat = strict ? q->meat + flen : q->nblocks * 8u;
	if (off == 0 && !(q->flags & DFR_F_FIRST)) {
		q->flags |= DFR_F_FIRST;
		q->hdr0 = pkt->data - hdrlen;
		q->pkt0 = pkt;
		q->hdrlen = hdrlen;
		q->nhoff = nhoff;
		q->nexthdr = nexthdr;
	}
	q->ecn_mask |= (uint8_t)(1u << ecn);
	if (hdrlen + flen > q->max_size)
		q->max_size = hdrlen + flen;
	if (rxp_unlikely(df)) {
		t->c.df_frags++;
		if (hdrlen + flen > q->max_df_size)
			q->max_df_size = hdrlen + flen;
	}
	if (rxp_unlikely(flen < RXP_DEFRAG_TINY))
		t->c.tiny_frags += mf;
}

static inline __attribute__((always_inline)) void
accepted(struct rxp_defrag_table *t, struct dfr_queue *q, const struct dfr_info *fi,
	 struct rxp_pkt *pkt, uint32_t tsize, const bool strict)
{
	account(t, q, pkt, tsize, fi->off, fi->end, fi->hdrlen, fi->nhoff, fi->nexthdr, fi->ecn,
		fi->mf, fi->df, strict, true);
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
	if (!q) {
		q = dfr_queue_new(t, &fi->key, h, hashed, slot, now);
		if (rxp_unlikely(!t->home_pool))
			t->home_pool = pkt->pool; /* (copy_out copies into it) */
	}
	if (fi->key.family == 4 && t->cfg.max_dist > 0)
		max_dist_check(t, q, now);
	r = !ends_ok(q, fi->off, fi->end, fi->mf) ? RXP_DROP_FRAG_INVALID
	    : !strict && too_big(fi)		  ? RXP_DROP_FRAG_TOO_BIG
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
	if (rxp_unlikely(t->ev_frag))
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

/* ---- the strict entry's fast path ----------------------------------------- */

/*
 * Most fragments a strict table sees are plain: an IPv4 header of 20 bytes
 * or an IPv6 header with the fragment header next, all of it linear, the
 * IP length the packet's, a payload a multiple of 8 unless it is the last,
 * not in a receive-ring buffer (copy_out), a queue in its slot (or none
 * and nothing displaced), room under half the cap, nothing the pressure
 * policy watches. The fast path takes those with what it read of the
 * header in registers, and hands anything else, before it has changed
 * anything, to the general entry (frag_general), which judges it from the
 * start: so both take a fragment to the same state, and the cold paths (a
 * refused insert, an event) make its dfr_info (its queue's key, what was
 * read) only when they run. Handover rows (callgrind, 64 in flight),
 * instructions per fragment with the free: IPv4 4 shuffled 549 -> 501,
 * IPv6 8 shuffled 612 -> 520; fuzz_reasm_model checks both entries
 * against its model. While the table holds under DFR_PREFETCH_MEM it
 * does not look for a completing fragment to prefetch for (the same rows:
 * 20-26 fewer per fragment; no change in ns measurable on this machine,
 * in cache or with 10k in flight, where the prefetch stays).
 */

static __attribute__((noinline)) struct rxp_pkt *
frag_general(struct rxp_defrag_table *t, struct rxp_pkt *pkt, uint32_t zone, uint64_t now)
{
	return entry(t, pkt, zone, now, true);
}

/* What the fast path knows of a fragment. */
struct fast_frag {
	uint32_t off, end;
	uint16_t hdrlen, nhoff;
	uint8_t nexthdr, ecn;
	bool mf, df;
};

static inline uint32_t be16_at(const uint8_t *p)
{
	return (uint32_t)p[0] << 8 | p[1];
}

/* What the fast path read of a fragment it took (its header pulled off,
 * hdrlen bytes before pkt->data, as checked there), read again for a cold
 * path, so that the hot path need not keep its copy for them (2-4 fewer
 * instructions per fragment on the handover rows). */
static struct fast_frag fast_reread(const struct rxp_pkt *pkt, bool v4)
{
	struct fast_frag f;

	if (v4) {
		const uint8_t *b = pkt->data - RXP_IPV4_HLEN;
		uint32_t fo = be16_at(b + 6);

		f.off = (fo & RXP_IP_OFFMASK) * 8u;
		f.end = f.off + be16_at(b + 2) - RXP_IPV4_HLEN;
		f.hdrlen = RXP_IPV4_HLEN;
		f.nhoff = 0;
		f.nexthdr = 0;
		f.ecn = b[1] & 3;
		f.mf = fo & RXP_IP_MF;
		f.df = fo & RXP_IP_DF;
	} else {
		const uint8_t *b = pkt->data - RXP_IPV6_HLEN - RXP_IPV6_FRAGHDR_LEN;
		const uint8_t *fh = b + RXP_IPV6_HLEN;
		uint32_t fo = be16_at(fh + 2);

		f.off = fo & RXP_IP6_OFFMASK;
		f.end = f.off + be16_at(b + 4) - RXP_IPV6_FRAGHDR_LEN;
		f.hdrlen = RXP_IPV6_HLEN + RXP_IPV6_FRAGHDR_LEN;
		f.nhoff = 6;
		f.nexthdr = fh[0];
		f.ecn = (b[1] >> 4) & 3;
		f.mf = fo & RXP_IP6_MF;
		f.df = false;
	}
	return f;
}

/* The storage refused pkt (r), which the fast path took into q: as
 * frag_in does. Consumes pkt. */
static __attribute__((noinline, cold)) void
fast_refused(struct rxp_defrag_table *t, struct dfr_queue *q, struct rxp_pkt *pkt, bool v4, int r)
{
	struct fast_frag f = fast_reread(pkt, v4);
	struct dfr_info fi;

	fi.key = q->key;
	fi.off = f.off;
	fi.end = f.end;
	fi.hdrlen = f.hdrlen;
	fi.nhoff = f.nhoff;
	fi.nexthdr = f.nexthdr;
	fi.ecn = f.ecn;
	fi.mf = f.mf;
	fi.df = f.df;
	dfr_insert_failed(t, q, &fi, pkt, r);
}

/* The FRAG event of a fragment the fast path took (the table has a hook). */
static __attribute__((noinline)) void fast_event(struct rxp_defrag_table *t, struct dfr_queue *q,
						 struct rxp_pkt *pkt, bool v4)
{
	struct fast_frag f = fast_reread(pkt, v4);

	dfr_ev_frag_at(t, q, &q->key, f.off, f.end, f.mf, f.df, pkt, f.hdrlen, RXP_DEFRAG_EV_FRAG,
		       0);
}

/* Whether the fast path may take a fragment of tsize bytes for q (NULL:
 * it would make a queue): room under fast_mem, q not expired (or a queue
 * free), no datagram given up under pressure remembered. Reads only. */
static inline __attribute__((always_inline)) bool
fast_ok(const struct rxp_defrag_table *t, const struct dfr_queue *q, uint32_t tsize, uint64_t now)
{
	return rxp_likely(t->c.mem + tsize + (q ? 0 : t->qcharge) <= t->fast_mem &&
			  (q ? q->expires > now : dfr_has_free(t)) && !dfr_tombs_live(t));
}

/* The fast path once q, the fragment's queue, is found or made (new: it
 * holds nothing yet); tsize is pkt's truesize. As frag_in from there on,
 * knowing that no pressure decision is due. */
static inline __attribute__((always_inline)) struct rxp_pkt *
fast_take(struct rxp_defrag_table *t, struct rxp_pkt *pkt, struct dfr_queue *q, bool v4,
	  const struct fast_frag *f, uint32_t tsize, uint32_t zone, uint64_t now)
{
	/* With what the table holds in cache, nothing needs fetching */
	bool prefetched = t->c.mem <= DFR_PREFETCH_MEM;
	int r;

	if (t->cfg.discard_cb)
		dfr_cb(pkt)->hdrlen = 0; /* as classify: dropped now, it is as received */
	if (!prefetched && q->nfrags && dfr_completes_at(q, f->off, f->end, f->mf)) {
		/* as frag_in: fetch what completion reads, while the
		 * fragment is placed */
		dfr_prefetch_frags(q);
		__builtin_prefetch((const char *)pkt + 64);
		__builtin_prefetch(pkt->head_page);
		prefetched = true;
	}
	if (v4 && t->cfg.max_dist > 0)
		max_dist_check(t, q, now);
	if (rxp_unlikely(!ends_ok(q, f->off, f->end, f->mf))) {
		dfr_kill_with(t, q, pkt, RXP_DROP_FRAG_INVALID);
		return NULL;
	}
	pkt->data += f->hdrlen; /* the header is linear: checked */
	pkt->len -= f->hdrlen;
	if (t->cfg.discard_cb)
		dfr_cb(pkt)->hdrlen = f->hdrlen;
	r = dfr_runs_insert(t, q, pkt, f->off, f->end);
	if (rxp_unlikely(r != DFR_OK)) {
		fast_refused(t, q, pkt, v4, r);
		return NULL;
	}
	account(t, q, pkt, tsize, f->off, f->end, f->hdrlen, f->nhoff, f->nexthdr, f->ecn, f->mf,
		f->df, true, false);
	if (rxp_unlikely(t->ev_frag))
		fast_event(t, q, pkt, v4);
	if ((q->flags == (DFR_F_FIRST | DFR_F_LAST)) & (q->meat == q->len))
		return dfr_finish(t, q, pkt, prefetched);
	return NULL;
}

/* An IPv4 fragment's key as the words a queue's key is compared with
 * (dfr_key's first 20 bytes), read from its 20-byte header at b; returns
 * its slot. */
struct key4 {
	uint64_t w0, w1; /* family, protocol, id; zone, source */
	uint32_t da, id;
};
static inline __attribute__((always_inline)) uint32_t
key4_of(const struct rxp_defrag_table *t, const uint8_t *b, uint32_t zone, struct key4 *k)
{
	uint32_t sa;

	memcpy(&sa, b + 12, 4);
	memcpy(&k->da, b + 16, 4);
	k->id = be16_at(b + 4);
	k->w0 = 4u | (uint32_t)b[9] << 8 | (uint64_t)k->id << 32; /* (pad 0) */
	k->w1 = zone | (uint64_t)sa << 32;
	return dfr_slot_of(t, (uint32_t)k->w0, k->w1, k->da, k->id);
}

/* The same for IPv6 with the fragment header at b + 40: dfr_key's bytes
 * 8-43 (zone, then source and destination) as words. */
struct key6 {
	uint64_t w1, x2, x3, x4;
	uint32_t x5, id, zone;
};
static inline __attribute__((always_inline)) uint32_t
key6_of(const struct rxp_defrag_table *t, const uint8_t *b, uint32_t zone, struct key6 *k)
{
	uint32_t sa0;

	memcpy(&k->id, b + RXP_IPV6_HLEN + 4, 4);
	k->id = ntohl(k->id);
	k->zone = dfr_ipv6_zone(b + 24, zone, t->cfg.zone_all_v6);
	memcpy(&sa0, b + 8, 4);
	memcpy(&k->x2, b + 12, 8);
	memcpy(&k->x3, b + 20, 8);
	memcpy(&k->x4, b + 28, 8);
	memcpy(&k->x5, b + 36, 4);
	k->w1 = k->zone | (uint64_t)sa0 << 32;
	return dfr_slot_of(t, 6, k->w1, dfr_slot6_mix(k->x2, k->x3, k->x4, k->x5), k->id);
}

/* The fast path once the slot is read: q is the slot's queue when its key
 * is the fragment's, else NULL; a new queue gets key (family, proto, id,
 * kzone, and alen bytes of addresses at addr), made in memory only then.
 * f is filled. */
static inline __attribute__((always_inline)) struct rxp_pkt *
fast_queue(struct rxp_defrag_table *t, struct rxp_pkt *pkt, struct dfr_queue *q, uint32_t slot,
	   uint8_t family, uint8_t proto, uint32_t id, uint32_t kzone, const uint8_t *addr,
	   size_t alen, const struct fast_frag *f, uint32_t zone, uint64_t now)
{
	uint32_t tsize = pkt->truesize;

	/* (!q with queues displaced: it may be one of them) */
	if (rxp_unlikely((!q && t->ndisplaced) || !fast_ok(t, q, tsize, now)))
		return frag_general(t, pkt, zone, now);
	t->c.ReasmReqds++;
	t->seq++;
	if (!q) {
		/* field by field: an initializer zeroes all of it first, which
		 * GCC does with `rep stosq` */
		struct dfr_key key;

		key.family = family;
		key.proto = proto;
		key.pad = 0;
		key.id = id;
		key.zone = kzone;
		memcpy(key.addr, addr, alen);
		if (alen < sizeof(key.addr))
			memset(key.addr + alen, 0, sizeof(key.addr) - alen);
		q = dfr_queue_new(t, &key, 0, false, slot, now);
		if (rxp_unlikely(!t->home_pool))
			t->home_pool = pkt->pool;
	}
	return fast_take(t, pkt, q, family == 4, f, tsize, zone, now);
}

/* IPv4 with a 20-byte header. Its key is made in memory only for a new
 * queue: lookup reads what it needs of the header as words. */
static inline __attribute__((always_inline)) struct rxp_pkt *
fast_v4(struct rxp_defrag_table *t, struct rxp_pkt *pkt, uint32_t zone, uint64_t now)
{
	const uint8_t *b = pkt->data;
	uint32_t fo = be16_at(b + 6), tot = be16_at(b + 2), plen = tot - RXP_IPV4_HLEN;
	uint32_t slot, v;
	struct fast_frag f;
	struct dfr_queue *q = NULL;
	struct key4 k;

	if (!(fo & (RXP_IP_MF | RXP_IP_OFFMASK)))
		return pkt; /* not a fragment */
	f.mf = fo & RXP_IP_MF;
	if (rxp_unlikely(tot != pkt->len || tot <= RXP_IPV4_HLEN || (f.mf && (plen & 7)) ||
			 (pkt->flags & RXP_PKT_F_RINGBUF)))
		return frag_general(t, pkt, zone, now);
	slot = key4_of(t, b, zone, &k);
	v = t->slots[slot];
	if (v) {
		struct dfr_queue *c = &t->qarr[v - 1];
		uint64_t k0, k1;
		uint32_t k2;

		__builtin_prefetch((const char *)c + 64);
		memcpy(&k0, &c->key, 8);
		memcpy(&k1, (const uint8_t *)&c->key + 8, 8);
		memcpy(&k2, (const uint8_t *)&c->key + 16, 4);
		if (((k0 ^ k.w0) | (k1 ^ k.w1) | (k2 ^ k.da)) == 0)
			q = c;
	}
	f.off = (fo & RXP_IP_OFFMASK) * 8u;
	f.end = f.off + plen;
	f.hdrlen = RXP_IPV4_HLEN;
	f.nhoff = 0;
	f.nexthdr = 0;
	f.ecn = b[1] & 3;
	f.df = fo & RXP_IP_DF;
	return fast_queue(t, pkt, q, slot, 4, b[9], k.id, zone, b + 12, 8, &f, zone, now);
}

/* IPv6 whose fragment header follows the fixed header. As fast_v4, its
 * lookup reads the addresses as words from the header. */
static inline __attribute__((always_inline)) struct rxp_pkt *
fast_v6(struct rxp_defrag_table *t, struct rxp_pkt *pkt, uint32_t zone, uint64_t now)
{
	const uint8_t *b = pkt->data, *fh = b + RXP_IPV6_HLEN;
	uint32_t plen = be16_at(b + 4), fo = be16_at(fh + 2), need, slot, v;
	struct dfr_queue *q = NULL;
	struct fast_frag f;
	struct key6 k;

	f.mf = fo & RXP_IP6_MF;
	f.off = fo & RXP_IP6_OFFMASK;
	f.end = f.off + plen - RXP_IPV6_FRAGHDR_LEN;
	f.nexthdr = fh[0];
	/* the atomic fragment, a payload the IP length does not match, one
	 * not a multiple of 8, and a first fragment without the whole
	 * upper-layer header (RFC 7112), or with more extension headers, are
	 * for the general entry */
	need = dfr_upper_need(f.nexthdr);
	if (rxp_unlikely(RXP_IPV6_HLEN + plen != pkt->len || plen <= RXP_IPV6_FRAGHDR_LEN ||
			 (!f.mf && !f.off) || (f.mf && ((f.end - f.off) & 7)) ||
			 f.end > DFR_MAXLEN || (!f.off && f.end < need) ||
			 (pkt->flags & RXP_PKT_F_RINGBUF)))
		return frag_general(t, pkt, zone, now);
	slot = key6_of(t, b, zone, &k);
	v = t->slots[slot];
	if (v) {
		struct dfr_queue *c = &t->qarr[v - 1];
		const uint8_t *kb = (const uint8_t *)&c->key;
		uint64_t k0, k1, k2, k3, k4;
		uint32_t k5;

		__builtin_prefetch((const char *)c + 64);
		memcpy(&k0, kb, 8);
		memcpy(&k1, kb + 8, 8);
		memcpy(&k2, kb + 16, 8);
		memcpy(&k3, kb + 24, 8);
		memcpy(&k4, kb + 32, 8);
		memcpy(&k5, kb + 40, 4);
		if (((k0 ^ (6u | (uint64_t)k.id << 32)) | (k1 ^ k.w1) | (k2 ^ k.x2) | (k3 ^ k.x3) |
		     (k4 ^ k.x4) | (k5 ^ k.x5)) == 0)
			q = c;
	}
	f.hdrlen = RXP_IPV6_HLEN + RXP_IPV6_FRAGHDR_LEN;
	f.nhoff = 6;
	f.ecn = (b[1] >> 4) & 3;
	f.df = false;
	return fast_queue(t, pkt, q, slot, 6, 0, k.id, k.zone, b + 8, 32, &f, zone, now);
}

struct rxp_pkt *dfr_frag_runs(struct rxp_defrag_table *t, struct rxp_pkt *pkt, uint32_t zone,
			      uint64_t now)
{
	const uint8_t *b = pkt->data;
	uint32_t hl = (uint32_t)(pkt->tail - b);

	if (hl >= RXP_IPV4_HLEN && b[0] == 0x45)
		return fast_v4(t, pkt, zone, now);
	if (hl >= RXP_IPV6_HLEN + RXP_IPV6_FRAGHDR_LEN && (b[0] >> 4) == 6 &&
	    b[6] == RXP_IPPROTO_FRAGMENT)
		return fast_v6(t, pkt, zone, now);
	return frag_general(t, pkt, zone, now);
}

struct rxp_pkt *dfr_frag_policy(struct rxp_defrag_table *t, struct rxp_pkt *pkt, uint32_t zone,
				uint64_t now)
{
	return entry(t, pkt, zone, now, false);
}

/* The slot of the fragment at l3 (see rxp_defrag_prefetch), or
 * UINT32_MAX when it is not one the hint knows. */
static uint32_t hint_slot(const struct rxp_defrag_table *t, const uint8_t *b, size_t len,
			  uint32_t zone)
{
	if (len >= RXP_IPV4_HLEN && b[0] == 0x45 && ((b[6] & 0x3f) | b[7])) {
		struct key4 k;

		return key4_of(t, b, zone, &k);
	}
	if (len >= RXP_IPV6_HLEN + RXP_IPV6_FRAGHDR_LEN && b[0] >> 4 == 6 &&
	    b[6] == 44) { /* the fragment header first, as nearly always */
		struct key6 k;

		return key6_of(t, b, zone, &k);
	}
	return UINT32_MAX;
}

void rxp_defrag_prefetch(const struct rxp_defrag_table *t, const void *l3, size_t len,
			 uint32_t zone)
{
	uint32_t slot = hint_slot(t, l3, len, zone);

	if (slot != UINT32_MAX)
		dfr_prefetch(t, slot);
}

uint32_t rxp_defrag_prefetch_slot(const struct rxp_defrag_table *t, const void *l3, size_t len,
				  uint32_t zone)
{
	uint32_t slot = hint_slot(t, l3, len, zone);

	if (slot == UINT32_MAX)
		return 0;
	__builtin_prefetch(&t->slots[slot]);
	return slot + 1;
}

void rxp_defrag_prefetch_queue(const struct rxp_defrag_table *t, uint32_t hint)
{
	if (hint && hint - 1 <= t->smask)
		dfr_prefetch(t, hint - 1);
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
