/*
 * The reassembly table's pressure policy: who goes when a fragment does not
 * fit under the memory cap or the queue cap (include/rxpath/defrag.h has the
 * rules). Finish what was started: stale queues go first, then a fragment
 * that would open a queue is refused, and a fragment of an open queue evicts
 * the newest queues (newer than its own) so that the oldest finish. What it
 * knows it learns from the table: each queue's gaps between its fragments,
 * the table's typical gap (about the number of datagrams in flight), and
 * the tags of datagrams given up under pressure.
 *
 * Invariants: memory never goes above mem_limit in EVICT mode (a fragment is
 * admitted only when it fits); each call does a bounded scan plus evictions,
 * and every eviction frees a queue some earlier fragment made, so the work
 * per fragment is O(1) amortised; the stale scan's cursors (t->scan) point
 * at a queue of their FIFO or are NULL (queue_unlink moves them on).
 */
#include "net/defrag_internal.h"

/* Queues the stale scan looks at per fragment that does not fit. */
#define DFR_SCAN 8
/* A queue is stale past this many times its expected gap; tags are
 * forgotten past this many typical gaps. */
#define DFR_STALE_GAPS 4u

/* The gap a datagram's fragments are expected to come at, in fragments
 * seen (t->seq: refused ones count, so that ages grow while everything is
 * refused): the table's moving average of gaps, or, before any gap is seen,
 * the number of queues (datagrams in flight take turns). */
static uint32_t typical_gap(const struct rxp_defrag_table *t, unsigned cls)
{
	uint32_t g = t->gap16[cls] >> 4;

	if (!g)
		g = t->seq < DFR_GAP_MAX ? (uint32_t)t->seq : DFR_GAP_MAX;
	return g ? g : 1;
}

/* q is overdue: it has gone longer without a fragment than the longer of
 * its own longest gap and the typical one, by more than the margin (four
 * typical deviations and an eighth of the gap, dfr_gap_margin). Datagrams taking turns come at a steady gap (little
 * deviation), so one that misses its turn is found within a turn or so;
 * with irregular arrivals the deviation is about the gap itself and the
 * margin grows to match. An overdue queue has most likely lost a fragment
 * (or was never meant to complete) and would only time out. */
static bool stale(const struct rxp_defrag_table *t, const struct dfr_queue *q)
{
	uint32_t typ = typical_gap(t, dfr_cls(q)), lim = q->gapmax > typ ? q->gapmax : typ;

	return (uint32_t)t->seq - q->last_seq > lim + dfr_gap_margin(t, dfr_cls(q), lim);
}

/* ---- tags of datagrams given up under pressure ------------------------------ */

/* The tags are sets of DFR_TOMB_WAYS, indexed and tagged by the key's
 * SipHash under the table's secret key: nobody can aim keys at another's
 * set. A full set replaces its longest-unseen tag (that datagram's later
 * fragments then open a queue that goes stale), and a false match needs 32
 * bits of tag to agree. */
static struct dfr_tomb *tomb_set(struct rxp_defrag_table *t, uint64_t h, uint32_t *tag)
{
	*tag = (uint32_t)(h >> 32) | 1u;
	return &t->tomb[h & t->tmask];
}

static uint32_t tomb_life(const struct rxp_defrag_table *t)
{
	uint32_t g = 0;

	for (unsigned c = 0; c < DFR_NCLS; c++)
		if (typical_gap(t, c) > g)
			g = typical_gap(t, c);
	return DFR_STALE_GAPS * g;
}

static void tomb_keep(struct rxp_defrag_table *t)
{
	t->tomb_until = t->seq + tomb_life(t) + 1;
}

static void tomb_add(struct rxp_defrag_table *t, uint64_t h)
{
	uint32_t tag, now = (uint32_t)t->seq, w = 0, oldest = 0;
	struct dfr_tomb *b = tomb_set(t, h, &tag);

	for (unsigned i = 0; i < DFR_TOMB_WAYS; i++) {
		uint32_t age = b->tag[i] ? now - b->seq[i] : UINT32_MAX;

		if (b->tag[i] == tag) {
			w = i;
			break;
		}
		if (age >= oldest) {
			oldest = age;
			w = i;
		}
	}
	b->tag[w] = tag;
	b->seq[w] = now;
	tomb_keep(t);
}

/* Whether k's datagram (SipHash h) was given up under pressure and its
 * fragments are still coming: each one keeps the tag alive, and its gap
 * since the last one teaches the gap of its source's class, so a table
 * that refuses everything still learns how often datagrams come back. */
static bool tomb_hit(struct rxp_defrag_table *t, const struct dfr_key *k, uint64_t h)
{
	uint32_t tag, gap;
	struct dfr_tomb *b = tomb_set(t, h, &tag);

	for (unsigned i = 0; i < DFR_TOMB_WAYS; i++) {
		if (b->tag[i] != tag)
			continue;
		gap = (uint32_t)t->seq - b->seq[i];
		if (gap > tomb_life(t)) /* forgotten */
			return false;
		dfr_gap_avg(t, dfr_src_class(t, &t->src[dfr_src_slot(t, k)]), gap);
		b->seq[i] = (uint32_t)t->seq;
		tomb_keep(t);
		return true;
	}
	return false;
}

/* Give q up under pressure: evicted, and remembered so that the rest of its
 * datagram is refused rather than queued again. */
static void doom(struct rxp_defrag_table *t, struct dfr_queue *q)
{
	tomb_add(t, dfr_key_hash(t, &q->key));
	dfr_queue_kill(t, q, RXP_DROP_FRAG_EVICT);
}

/* ---- the decisions ------------------------------------------------------------ */

static bool room(const struct rxp_defrag_table *t, uint32_t tsize, bool newq)
{
	return dfr_fits(t, tsize, newq);
}

/* Evict stale queues, a bounded look per FIFO from where the last look
 * stopped, until tsize (and a queue for newq) fit; keep is never evicted. */
static bool reap_stale(struct rxp_defrag_table *t, const struct dfr_queue *keep, uint32_t tsize,
		       bool newq)
{
	for (int f = 0; f < DFR_NFIFO; f++) {
		for (unsigned n = 0; n < DFR_SCAN; n++) {
			struct dfr_queue *q = t->scan[f] ? t->scan[f] : TAILQ_FIRST(&t->fifo[f]);

			if (!q)
				break;
			t->scan[f] = TAILQ_NEXT(q, tq);
			if (q == keep || !((q->pst & DFR_P_SKIPPED) || stale(t, q)))
				continue;
			t->c.evict_stale++;
			doom(t, q);
			if (room(t, tsize, newq))
				return true;
		}
	}
	return room(t, tsize, newq);
}

/* The newest queue (made last, of either family) of class cls other than
 * skip, or NULL. */
static struct dfr_queue *newest(struct rxp_defrag_table *t, unsigned cls,
				const struct dfr_queue *skip)
{
	struct dfr_queue *best = NULL;

	for (unsigned f = 2 * cls; f < 2 * cls + 2; f++) {
		struct dfr_queue *q = TAILQ_LAST(&t->fifo[f], dfr_fifo);

		if (q && q == skip)
			q = TAILQ_PREV(q, dfr_fifo, tq);
		if (q && (!best || q->born > best->born))
			best = q;
	}
	return best;
}

/* Evict queues of classes below cls, the lowest class first and newest
 * first within it, until tsize (and a queue for newq) fit. */
static bool evict_below(struct rxp_defrag_table *t, unsigned cls, uint32_t tsize, bool newq)
{
	for (unsigned c = 0; c < cls; c++) {
		struct dfr_queue *v;

		while (!room(t, tsize, newq) && (v = newest(t, c, NULL))) {
			t->c.evict_rank++;
			doom(t, v);
		}
	}
	return room(t, tsize, newq);
}

int dfr_pressure(struct rxp_defrag_table *t, struct dfr_queue **qp, const struct dfr_info *fi,
		 uint64_t h, bool hashed, uint32_t tsize)
{
	struct dfr_queue *q = *qp, *v;
	bool completes;
	unsigned cls;

	if (t->cfg.pressure == RXP_DEFRAG_PRESSURE_LINUX) {
		/* Linux's high_thresh: nothing while over the cap. */
		if (t->c.mem > t->cfg.mem_limit)
			return RXP_DROP_FRAG_MEM_LIMIT;
		return !q && !dfr_has_free(t) ? RXP_DROP_FRAG_QUEUE_LIMIT : 0;
	}
	if (!q) {
		if (!hashed)
			h = dfr_key_hash(t, &fi->key);
		if (dfr_tombs_live(t) && tomb_hit(t, &fi->key, h)) {
			t->c.refused_doomed++;
			return RXP_DROP_FRAG_EVICT;
		}
		if (room(t, tsize, true) || reap_stale(t, NULL, tsize, true))
			return 0;
		cls = dfr_src_class(t, &t->src[dfr_src_slot(t, &fi->key)]);
		if (evict_below(t, cls, tsize, true))
			return 0;
		/* Finish what was started: no new datagram while it does not
		 * fit, and this one cannot complete now. */
		t->c.refused_new++;
		tomb_add(t, h);
		return dfr_has_free(t) ? RXP_DROP_FRAG_MEM_LIMIT : RXP_DROP_FRAG_QUEUE_LIMIT;
	}
	if (reap_stale(t, q, tsize, false) || evict_below(t, dfr_cls(q), tsize, false))
		return 0;
	/* Newer queues of its class go for an older one; a fragment that
	 * completes its datagram (which then leaves at once) may push out any
	 * other of its class. */
	completes = t->cfg.policy == RXP_DEFRAG_STRICT && dfr_completes(q, fi);
	while (!room(t, tsize, false) && (v = newest(t, dfr_cls(q), q)) &&
	       (completes || v->born > q->born)) {
		t->c.evict_newest++;
		doom(t, v);
	}
	if (room(t, tsize, false))
		return 0;
	/* q is the newest of its class: it goes, rather than an older one. */
	t->c.refused_own++;
	doom(t, q);
	*qp = NULL;
	return RXP_DROP_FRAG_MEM_LIMIT;
}
