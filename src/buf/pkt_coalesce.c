/*
 * Coalescing (include/rxpath/pkt.h): rxp_pkt_chain, rxp_pkt_try_coalesce
 * and its batched and list forms, and page batches.
 *
 * Invariants, as in pkt.c: a packet holds one reference per frag page and
 * on its head page; references move between packets (to a batch when a
 * freed head's or an extended frag's reference goes), never get copied;
 * from is consumed on every path and to's len, data_len and truesize
 * include everything it now holds (frag_list members included).
 */
#include <stdlib.h>
#include <string.h>

#include "rxpath/compiler.h"
#include "rxpath/log.h"
#include "rxpath/pkt.h"
#include "buf/pkt_internal.h"

/* ---- coalescing -------------------------------------------------------------- */

void rxp_pkt_chain(struct rxp_pkt *to, struct rxp_pkt *from)
{
	if (!from->len) {
		rxp_pkt_consume(from); /* frag_list members are never empty */
		return;
	}
	from->next = NULL;
	if (to->frag_tail)
		to->frag_tail->next = from;
	else
		to->frag_list = from;
	to->frag_tail = from;
	to->len += from->len;
	to->data_len += from->len;
	to->truesize += from->truesize;
}

/* Merge from into t if t has no frag_list: copy when everything fits in t's
 * tailroom, else move from's head and frags over as t's frags. false leaves
 * both untouched. Consumes from when it returns true. */
static bool merge(struct rxp_pkt *t, struct rxp_pkt *from, enum rxp_coalesce *how)
{
	uint32_t hl = rxp_pkt_headlen(from), delta;
	unsigned need;

	if (t->frag_list || rxp_pkt_cloned(t))
		return false;
	if (from->len <= rxp_pkt_tailroom(t)) {
		rxp_pkt_copy_bits(from, 0, t->tail, from->len);
		t->tail += from->len;
		t->len += from->len;
		rxp_pkt_consume(from);
		*how = RXP_COALESCE_COPIED;
		return true;
	}
	if (from->frag_list)
		return false;
	need = from->nr_frags + (hl ? 1u : 0u);
	if (t->nr_frags + need > RXP_MAX_FRAGS)
		return false;
	/* Each packet owns its own references, clone or not, so they can move. */
	if (hl) {
		struct rxp_frag *f = &t->frags[t->nr_frags++];

		f->page = from->head_page;
		f->off = rxp_pkt_data_page_off(from);
		f->size = hl;
	}
	/* (an empty head's reference goes with from, at its free below: it
	 * may hold from's metadata) */
	for (unsigned i = 0; i < from->nr_frags; i++) /* (a memcpy here is `rep movsq`) */
		t->frags[t->nr_frags + i] = from->frags[i];
	t->nr_frags = (uint8_t)(t->nr_frags + from->nr_frags);
	t->len += from->len;
	t->data_len += from->len;
	delta = pkt_stolen_truesize(from, hl != 0);
	t->truesize += delta;
	if (hl)
		from->head_page = NULL;
	from->nr_frags = 0;
	from->data_len = 0;
	rxp_pkt_consume(from);
	*how = RXP_COALESCE_STOLEN;
	return true;
}

void rxp_page_batch_evict_(struct rxp_page_batch *pb)
{
	if (pb->page[1] && pb->n[1])
		pkt_page_put_many(pb->page[1], pb->n[1]);
	pb->page[1] = NULL;
	pb->n[1] = 0;
}

void rxp_page_batch_flush(struct rxp_page_batch *pb)
{
	rxp_page_batch_evict_(pb);
	if (pb->page[0] && pb->n[0])
		pkt_page_put_many(pb->page[0], pb->n[0]);
	pb->page[0] = NULL;
	pb->n[0] = 0;
}

enum rxp_coalesce rxp_pkt_try_coalesce(struct rxp_pkt *to, struct rxp_pkt *from)
{
	struct rxp_page_batch pb = {{NULL, NULL}, {0, 0}};
	enum rxp_coalesce how = rxp_pkt_try_coalesce_batch(to, from, &pb);

	rxp_page_batch_flush(&pb);
	return how;
}

/* Everything but try_coalesce_batch's fast path: merge into to (or its last
 * frag_list member), else chain. Out of line, so that the fast path is a
 * small function. Consumes from. */
static __attribute__((noinline)) enum rxp_coalesce coalesce_general(struct rxp_pkt *to,
								    struct rxp_pkt *from)
{
	struct rxp_pkt *t = to->frag_list ? to->frag_tail : to;
	enum rxp_coalesce how;

	if (!to->frag_list) {
		if (merge(to, from, &how))
			return how;
	} else {
		uint32_t len = from->len, ts = t->truesize;

		if (merge(t, from, &how)) {
			to->len += len;
			to->data_len += len;
			to->truesize += t->truesize - ts;
			return how;
		}
	}
	rxp_pkt_chain(to, from);
	return RXP_COALESCE_CHAINED;
}

enum rxp_coalesce rxp_pkt_try_coalesce_batch(struct rxp_pkt *to, struct rxp_pkt *from,
					     struct rxp_page_batch *pb)
{
	struct rxp_pkt *t = to->frag_list ? to->frag_tail : to;

	/*
	 * The cases every reassembler hits per fragment: from is one piece of
	 * data, either a fragment whose header was pulled (nothing linear
	 * left, one page frag) or a linear packet (an IP fragment with its
	 * header pulled), and t is private, too full to take a copy, with a
	 * free frag slot (or a last frag that from's piece continues).
	 * merge() would steal the same way; this is it without the general
	 * bookkeeping: one frag moved (or the last one grown), from's
	 * metadata freed. Of a linear from it reads the first cache line
	 * alone: frag_list members are never empty, so data_len == 0 says
	 * there is no frag_list, and page_bias gives the offset.
	 */
	if (rxp_likely(!t->frag_list && !rxp_pkt_cloned(t) && from->len > rxp_pkt_tailroom(t))) {
		struct rxp_page *pg, *extra = NULL;
		uint32_t off, size = from->len, ts;
		unsigned tid;

		if (!from->data_len && !from->nr_frags && from->data != from->tail) {
			pg = from->head_page;
			off = rxp_pkt_data_page_off(from);
			ts = pkt_stolen_truesize(from, true);
		} else if (from->data == from->tail && from->nr_frags == 1 &&
			   from->data_len == from->frags[0].size) {
			pg = from->frags[0].page;
			off = from->frags[0].off;
			extra = from->head_page;
			ts = pkt_stolen_truesize(from, false);
		} else {
			goto general;
		}
		if (t->nr_frags && t->frags[t->nr_frags - 1].page == pg &&
		    t->frags[t->nr_frags - 1].off + t->frags[t->nr_frags - 1].size == off) {
			/* The next slice of the same buffer: one frag grows
			 * (as skb_can_coalesce), from's reference goes. */
			t->frags[t->nr_frags - 1].size += size;
			rxp_page_batch_add(pb, pg);
		} else if (t->nr_frags < RXP_MAX_FRAGS) {
			t->frags[t->nr_frags++] = (struct rxp_frag){pg, off, size};
		} else {
			goto general;
		}
		tid = rxp_thread_id();
		t->len += size;
		t->data_len += size;
		t->truesize += ts;
		if (t != to) {
			to->len += size;
			to->data_len += size;
			to->truesize += ts;
		}
		pktpool_stat_add(tid, &from->pool->stats[tid].consumed, 1);
		pkt_shell_free(from, tid);
		/* (after: an embedded from's head may be the slot holding it) */
		if (extra)
			rxp_page_batch_add(pb, extra);
		return RXP_COALESCE_STOLEN;
	}
general:
	return coalesce_general(to, from);
}

/* Whether the lists' fast loops may make p's data a frag as it is: linear
 * and of pool, whose metadata they put back in one batch. (They also
 * refuse the next slice of the frag before it, and a packet that fits in
 * the tailroom, each in its own walking order.) */
static inline bool frag_as_is(const struct rxp_pkt *p, const struct rxp_pktpool *pool)
{
	return !(p->data_len | p->nr_frags) && p->pool == pool;
}

/* What both fast loops end with: to now holds nf frags, len bytes and ts
 * of truesize more, and the ns shells whose data became frags are freed:
 * those with metadata apart go back to pool in one batch, the embedded
 * ones stay in the slots their heads, now to's frags, hold (but for a
 * reference of their own on the slot, which goes). fall and fany are the
 * shells' flags ANDed and ORed: when all are embedded at home, as every
 * fragment read from a capture is, no shell is looked at again. */
static inline __attribute__((always_inline)) void
frags_taken(struct rxp_pkt *to, struct rxp_pktpool *pool, void **shells, unsigned ns, unsigned nf,
	    uint32_t len, uint32_t ts, uint8_t fall, uint8_t fany)
{
	unsigned tid = rxp_thread_id(), napart = 0;

	if (ns > RXP_MAX_FRAGS) /* (the callers' arrays: for the compiler) */
		__builtin_unreachable();
	to->nr_frags = (uint8_t)nf;
	to->len += len;
	to->data_len += len;
	to->truesize += ts;
	pktpool_stat_add(tid, &pool->stats[tid].consumed, ns);
	if (rxp_likely((fall & RXP_PKT_F_EMBED) && !(fany & RXP_PKT_F_HOMEREF))) {
		pktpool_stat_add(tid, &pool->stats[tid].embed_free, ns);
		return;
	}
	for (unsigned i = 0; i < ns; i++) {
		struct rxp_pkt *p = shells[i];

		if (!(p->flags & RXP_PKT_F_EMBED))
			shells[napart++] = p;
		else if (rxp_unlikely(p->flags & RXP_PKT_F_HOMEREF))
			pkt_page_put_many_tid(pkt_home(p), 1, tid);
	}
	if (napart > RXP_MAX_FRAGS)
		__builtin_unreachable();
	if (ns > napart)
		pktpool_stat_add(tid, &pool->stats[tid].embed_free, ns - napart);
	if (napart)
		rxp_pool_put_bulk(pool->meta, shells, napart);
}

/* The packets are walked from the last run's tail backwards, each frag
 * placed at its position from the end, so no forward list is built and
 * each packet is read once (a reassembled datagram's completion walked
 * them twice: reversing the runs, then coalescing). */
bool rxp_pkt_coalesce_runs(struct rxp_pkt *to, struct rxp_pkt *const *tails, unsigned nruns,
			   unsigned n)
{
	struct rxp_pktpool *pool = to->pool;
	void *shells[RXP_MAX_FRAGS];
	const struct rxp_page *npg = NULL; /* the page and offset of the packet */
	uint32_t noff = 0; /* after this one (none yet) */
	uint32_t len = 0, ts = 0;
	unsigned pos = n - 1;
	bool at_to = false;
	uint8_t fall = 0xff, fany = 0;

	if (n < 2 || n - 1 > RXP_MAX_FRAGS || (to->data_len | to->nr_frags) || to->frag_list ||
	    rxp_pkt_cloned(to))
		return false;
	for (unsigned r = nruns; r-- > 0 && !at_to;) {
		for (struct rxp_pkt *p = tails[r]; p; p = p->next) {
			struct rxp_page *pg = p->head_page;
			uint32_t off, plen;

			if (p == to) {
				/* run 0's first packet, with all the others placed */
				if (r || p->next || pos)
					return false;
				at_to = true;
				break;
			}
			off = rxp_pkt_data_page_off(p);
			plen = p->len;
			if (!pos || !frag_as_is(p, pool) || !plen ||
			    (npg == pg && off + plen == noff))
				return false;
			pos--;
			to->frags[pos] = (struct rxp_frag){pg, off, plen};
			shells[pos] = p;
			fall &= p->flags;
			fany |= p->flags;
			len += plen;
			ts += pkt_stolen_truesize(p, true);
			npg = pg;
			noff = off;
		}
	}
	/* (frags[0] is the packet after to: copied into its tailroom if it
	 * fits, which is rxp_pkt_coalesce_list's other path) */
	if (!at_to || to->frags[0].size <= (uint32_t)(to->end - to->tail))
		return false;
	/* (the shells' next is stale: a packet's first line is cleared
	 * when it is allocated) */
	frags_taken(to, pool, shells, n - 1, n - 1, len, ts, fall, fany);
	return true;
}

#ifdef RXP_DEBUG
/* What rxp_pkt_coalesce_homes is told, checked against the packets. */
static void homes_check(const struct rxp_pkt *to, struct rxp_pkt *const *pkts, const uint32_t *doff,
			const uint32_t *size, unsigned n, uint32_t len, uint32_t ts)
{
	uint32_t l = 0, t = 0;

	for (unsigned k = 0; k < n; k++) {
		const struct rxp_pkt *p = pkts[k];

		if (!rxp_pkt_at_home(p) || p->pool != to->pool || !frag_as_is(p, to->pool) ||
		    p->head_page != pkt_home(p) || rxp_pkt_data_page_off(p) != doff[k] ||
		    p->len != size[k] || !size[k] || p == to) {
			rxp_log(RXP_LOG_ERR,
				"rxp_pkt_coalesce_homes: note %u of %u is not its packet", k, n);
			abort();
		}
		l += size[k];
		t += pkt_stolen_truesize(p, true);
	}
	if (l != len || t != ts) {
		rxp_log(RXP_LOG_ERR, "rxp_pkt_coalesce_homes: %u bytes, %u truesize noted; %u, %u",
			len, ts, l, t);
		abort();
	}
}
#endif

bool rxp_pkt_coalesce_homes(struct rxp_pkt *to, struct rxp_pkt *const *pkts, const uint32_t *doff,
			    const uint32_t *size, unsigned n, uint32_t len, uint32_t ts)
{
	if (!n || n > RXP_MAX_FRAGS)
		return false;
#ifdef RXP_DEBUG
	homes_check(to, pkts, doff, size, n, len, ts); /* (also those refused below) */
#endif
	if ((to->data_len | to->nr_frags) || to->frag_list || rxp_pkt_cloned(to) ||
	    size[0] <= (uint32_t)(to->end - to->tail))
		return false;
	for (unsigned k = 0; k < n; k++)
		to->frags[k] = (struct rxp_frag){pkt_home(pkts[k]), doff[k], size[k]};
	/* (all embedded at home: no shell is looked at) */
	frags_taken(to, to->pool, NULL, n, n, len, ts, RXP_PKT_F_EMBED, 0);
	return true;
}

void rxp_pkt_coalesce_list(struct rxp_pkt *to, struct rxp_pkt *list, struct rxp_page_batch *pb)
{
	struct rxp_pkt *p = list, *pn;

	/*
	 * The leading run of what try_coalesce_batch's fast path does to a
	 * linear packet, once per list instead of once per packet: its data
	 * becomes a new frag of to (its head page reference moves) and its
	 * metadata is freed, here with the others, in one bulk put. The first
	 * packet that would take another path (a copy into tailroom, the next
	 * slice of to's last frag, a packet that is not linear, from another
	 * pool, or no frag slot left) ends the run; it and the rest go one by
	 * one, which gives the same outcome as if all had.
	 */
	if (p && !to->frag_list && !rxp_pkt_cloned(to)) {
		struct rxp_pktpool *pool = p->pool;
		void *shells[RXP_MAX_FRAGS];
		unsigned ns = 0, nf = to->nr_frags;
		uint32_t len = 0, ts = 0;
		uint8_t fall = 0xff, fany = 0;
		/* What the loop tests against, in registers: the tailroom a
		 * first packet could be copied into (none once one is a frag),
		 * and where to's last frag ends (no page: none yet). */
		uint32_t room = to->data_len ? 0 : (uint32_t)(to->end - to->tail);
		const struct rxp_page *lpg = nf ? to->frags[nf - 1].page : NULL;
		uint32_t lend = nf ? to->frags[nf - 1].off + to->frags[nf - 1].size : 0;

		for (; p && nf < RXP_MAX_FRAGS; p = pn) {
			struct rxp_page *pg = p->head_page;
			uint32_t off = rxp_pkt_data_page_off(p), plen = p->len;

			/* (an empty packet is plen <= room: linear, its len is
			 * tail - data) */
			if (!frag_as_is(p, pool) || plen <= room || (lpg == pg && lend == off))
				break;
			pn = p->next;
			p->next = NULL;
			to->frags[nf++] = (struct rxp_frag){pg, off, plen};
			len += plen;
			ts += pkt_stolen_truesize(p, true);
			shells[ns++] = p;
			fall &= p->flags;
			fany |= p->flags;
			room = 0;
			lpg = pg;
			lend = off + plen;
		}
		if (ns)
			frags_taken(to, pool, shells, ns, nf, len, ts, fall, fany);
	}
	for (; p; p = pn) {
		pn = p->next;
		p->next = NULL;
		rxp_pkt_try_coalesce_batch(to, p, pb);
	}
}
