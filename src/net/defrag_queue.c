/*
 * Fragment storage inside one reassembly queue, and building the datagram.
 *
 * Strict mode keeps a red-black tree of runs (Linux's layout): each tree
 * node heads a run of contiguous fragments, and its run_end says where the
 * run stops. A fragment that starts where the last fragment ended is
 * appended in O(1); one after a gap starts a new rightmost run; anything
 * else is placed by a descent that also finds a duplicate (wholly inside a
 * run) or an overlap (anything else that touches a run). Runs never
 * overlap, so the descent is O(log runs).
 *
 * A run is linked backwards through pkt->next, from its last fragment to
 * its head, so that appending in order writes only the new fragment (the
 * previous one, long out of cache with many datagrams in flight, is not
 * touched). The last run's tail is q->tail; a closed run's head keeps its
 * tail in its own next pointer (set when the run is closed). run_list()
 * turns a run into a forward list.
 *
 * Policy mode keeps fragments unmerged in arrival order and a bitmap of the
 * 8-byte blocks received (offsets are multiples of 8 and so is every end
 * but the last, so blocks are exact); bytes are resolved at completion.
 *
 * The queue owns every fragment in it; these functions move ownership only
 * as their comments say.
 */
#include <errno.h>
#include <string.h>

#include "net/defrag_internal.h"

static int cb_cmp(struct dfr_cb *a, struct dfr_cb *b)
{
	return a->off < b->off ? -1 : a->off > b->off;
}

RB_GENERATE_STATIC(dfr_tree, dfr_cb, rb, cb_cmp)

/* Consumes pkt on DFR_OK (the queue owns it); otherwise the caller keeps it.
 * Only a fragment that heads a run gets its cb written (off, end, run_end):
 * nothing reads a run member's, and so an in-order append leaves the cache
 * line that holds cb alone. */
int dfr_runs_insert(struct dfr_queue *q, struct rxp_pkt *pkt, uint32_t off, uint32_t end)
{
	struct dfr_cb *cb = dfr_cb(pkt), *n;

	if (q->tail && q->tail_end == off) {
		/* The common case: in order, extend the last run (its
		 * run_end is written back before anyone reads it). */
		pkt->next = q->tail;
		q->tail = pkt;
		q->tail_end = end;
		return DFR_OK;
	}
	if (!q->tail) {
		cb->off = off;
		cb->end = cb->run_end = end;
		pkt->next = NULL;
		RB_INSERT(dfr_tree, &q->runs, cb);
		q->last_run = cb;
		q->tail = pkt;
		q->tail_end = end;
		return DFR_OK;
	}
	/* Out of order: what follows reads run heads' cbs (and may close the
	 * last run), each in another fragment's metadata and likely out of
	 * cache. Ask for the queue's first fragments all at once instead of
	 * meeting the misses one by one down the tree. */
	for (uint32_t i = 0; i < q->nfrags && i < DFR_PF; i++) {
		const char *m = (const char *)q->pf[i];

		__builtin_prefetch(m);
		__builtin_prefetch(m + offsetof(struct rxp_pkt, cb));
		__builtin_prefetch(m + offsetof(struct rxp_pkt, cb) + sizeof(struct dfr_cb) - 1);
	}
	q->last_run->run_end = q->tail_end;
	if (q->tail_end < off) {
		/* Close the last run: its head remembers its tail. */
		dfr_pkt(q->last_run)->next = q->tail;
		pkt->next = NULL;
		cb->off = off;
		cb->end = cb->run_end = end;
		RB_INSERT(dfr_tree, &q->runs, cb);
		q->last_run = cb;
		q->tail = pkt;
		q->tail_end = end;
		return DFR_OK;
	}
	n = RB_ROOT(&q->runs);
	while (n) {
		if (end <= n->off)
			n = RB_LEFT(n, rb);
		else if (off >= n->run_end)
			n = RB_RIGHT(n, rb);
		else if (off >= n->off && end <= n->run_end)
			return DFR_DUP;
		else
			return DFR_OVERLAP;
	}
	pkt->next = pkt; /* a closed run of one */
	cb->off = off;
	cb->end = cb->run_end = end;
	RB_INSERT(dfr_tree, &q->runs, cb);
	return DFR_OK;
}

/* The fragments of the run headed by h, in offset order, linked forward
 * through next and ending in NULL; *last gets its last fragment. */
static struct rxp_pkt *run_list(const struct dfr_queue *q, struct dfr_cb *h, struct rxp_pkt **last)
{
	struct rxp_pkt *head = dfr_pkt(h), *p, *prev, *list = NULL;

	p = h == q->last_run ? q->tail : head->next;
	*last = p;
	for (;;) {
		/* Coalescing reads each fragment's page header next. */
		__builtin_prefetch(p->head_page);
		prev = p->next;
		p->next = list;
		list = p;
		if (p == head)
			return list;
		p = prev;
	}
}

/* Consumes pkt on DFR_OK; otherwise the caller keeps it. */
int dfr_policy_insert(struct rxp_defrag_table *t, struct dfr_queue *q, struct rxp_pkt *pkt)
{
	struct dfr_cb *cb = dfr_cb(pkt);
	bool overlap = false;

	if (q->nfrags >= DFR_POLICY_MAX_FRAGS)
		return DFR_TOO_MANY;
	for (uint32_t b = cb->off / 8; b < (cb->end + 7) / 8; b++) {
		uint8_t bit = (uint8_t)(1u << (b & 7));

		if (q->blocks[b >> 3] & bit) {
			overlap = true;
		} else {
			q->blocks[b >> 3] |= bit;
			q->nblocks++;
		}
	}
	if (overlap)
		t->c.policy_overlaps++;
	pkt->next = NULL;
	if (q->arr_tail)
		q->arr_tail->next = pkt;
	else
		q->arr_head = pkt;
	q->arr_tail = pkt;
	return DFR_OK;
}

bool dfr_policy_complete(const struct dfr_queue *q)
{
	return q->nblocks == (q->len + 7) / 8;
}

/* Run fn on every fragment in q (which takes it over), leaving q empty. */
void dfr_queue_for_each_drain(struct dfr_queue *q, void (*fn)(void *, struct rxp_pkt *), void *arg)
{
	struct dfr_cb *n, *nx;
	struct rxp_pkt *p, *pn;

	for (n = RB_MIN(dfr_tree, &q->runs); n; n = nx) {
		struct rxp_pkt *last;

		nx = RB_NEXT(dfr_tree, &q->runs, n);
		p = run_list(q, n, &last);
		RB_REMOVE(dfr_tree, &q->runs, n);
		for (; p; p = pn) {
			pn = p->next;
			p->next = NULL;
			fn(arg, p);
		}
	}
	for (p = q->arr_head; p; p = pn) {
		pn = p->next;
		p->next = NULL;
		fn(arg, p);
	}
	RB_INIT(&q->runs);
	q->tail = NULL;
	q->last_run = NULL;
	q->arr_head = q->arr_tail = NULL;
}

static void drop_nomem(void *arg, struct rxp_pkt *p)
{
	rxp_pkt_drop(p, RXP_DROP_NOMEM);
}

struct rxp_pkt *dfr_runs_build(struct rxp_defrag_table *t, struct dfr_queue *q)
{
	struct dfr_cb *first = RB_MIN(dfr_tree, &q->runs), *n;
	struct rxp_pkt *head = dfr_pkt(first), *p, *pn, *rest = NULL, **link = &rest, *last;

	/* Every fragment after the head, in order, on rest. */
	for (n = first; n; n = RB_NEXT(dfr_tree, &q->runs, n)) {
		*link = run_list(q, n, &last);
		link = &last->next;
	}
	rest = head->next;
	head->next = NULL;
	RB_INIT(&q->runs);
	q->tail = NULL;
	q->last_run = NULL;

	rxp_pkt_push(head, q->hdrlen);
	head = rxp_pkt_unshare(head);
	if (!head) {
		for (p = rest; p; p = pn) {
			pn = p->next;
			p->next = NULL;
			rxp_pkt_drop(p, RXP_DROP_NOMEM);
		}
		return NULL;
	}
	for (p = rest; p; p = pn) {
		pn = p->next;
		p->next = NULL;
		if (t->cfg.forward)
			rxp_pkt_chain(head, p);
		else
			rxp_pkt_try_coalesce(head, p);
	}
	return head;
}

static bool later_wins(enum rxp_defrag_policy pol, const struct dfr_cb *nw,
		       const struct dfr_cb *old)
{
	switch (pol) {
	case RXP_DEFRAG_FIRST:
		return false;
	case RXP_DEFRAG_LAST:
		return true;
	case RXP_DEFRAG_BSD:
		return nw->off < old->off;
	case RXP_DEFRAG_BSD_RIGHT:
		return nw->off <= old->off && nw->end > old->end;
	case RXP_DEFRAG_LINUX:
		return nw->off <= old->off;
	case RXP_DEFRAG_WINDOWS:
		return nw->off < old->off && nw->end > old->end;
	case RXP_DEFRAG_SOLARIS:
		return nw->off < old->off && nw->end >= old->end;
	default:
		return false;
	}
}

struct rxp_pkt *dfr_policy_build(struct rxp_defrag_table *t, struct dfr_queue *q)
{
	uint32_t n = 0, total = q->len, i, b;
	struct rxp_pkt *p, *first = NULL, *out;

	for (p = q->arr_head; p; p = p->next)
		t->fragv[n++] = p;
	memset(t->owner, 0xff, total * sizeof(t->owner[0]));
	for (i = 0; i < n; i++) {
		struct dfr_cb *cb = dfr_cb(t->fragv[i]);
		uint32_t lo = UINT32_MAX, hi = 0;
		bool differ = false;

		if (!first && cb->off == 0)
			first = t->fragv[i];
		rxp_pkt_copy_bits(t->fragv[i], 0, t->ptmp, cb->end - cb->off);
		for (b = cb->off; b < cb->end; b++) {
			uint16_t o = t->owner[b];
			uint8_t v = t->ptmp[b - cb->off];

			if (o == 0xffff) {
				t->owner[b] = (uint16_t)i;
				t->pdata[b] = v;
				continue;
			}
			if (b < lo)
				lo = b;
			hi = b + 1;
			differ |= v != t->pdata[b];
			if (later_wins(t->cfg.policy, cb, dfr_cb(t->fragv[o]))) {
				t->owner[b] = (uint16_t)i;
				t->pdata[b] = v;
			}
		}
		if (hi && t->cfg.overlap_cb) {
			struct rxp_defrag_overlap ov = {
				.family = q->key.family,
				.id = q->key.id,
				.start = lo,
				.end = hi,
				.differ = differ,
			};
			t->cfg.overlap_cb(t->cfg.overlap_arg, &ov);
		}
	}
	out = rxp_pkt_alloc(first->pool, q->hdrlen + total);
	if (out) {
		uint8_t *d = rxp_pkt_put(out, q->hdrlen + total);

		memcpy(d, first->data - q->hdrlen, q->hdrlen);
		memcpy(d + q->hdrlen, t->pdata, total);
		out->tstamp_ns = first->tstamp_ns;
		out->protocol = first->protocol;
	}
	for (i = 0; i < n; i++) {
		t->fragv[i]->next = NULL;
		if (out)
			rxp_pkt_consume(t->fragv[i]);
		else
			rxp_pkt_drop(t->fragv[i], RXP_DROP_NOMEM);
	}
	q->arr_head = q->arr_tail = NULL;
	(void)drop_nomem;
	return out;
}
