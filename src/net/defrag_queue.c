/*
 * Fragment storage inside one reassembly queue, and building the datagram.
 *
 * Strict mode keeps a red-black tree of runs (Linux's layout): each tree
 * node is a run of contiguous fragments. A fragment that starts where the
 * last fragment ended is appended to the last run in O(1); one after a gap
 * starts a new rightmost run; anything else is placed by a descent that
 * also finds a duplicate (wholly inside a run) or an overlap (anything else
 * that touches a run), and becomes a run of its own. Runs never overlap, so
 * the descent is O(log runs). As in Linux, only the last run grows, and
 * runs are never joined: whether a fragment is a duplicate or an overlap
 * depends on the run boundaries, and strict mode must judge as Linux does.
 * The one exception cannot be seen: a fragment that completes its datagram
 * joins the run before or after it, since no fragment comes after it to
 * meet the boundary.
 *
 * Run nodes are table memory (struct dfr_run), not the fragments' cb: see
 * defrag_internal.h. A run's fragments are linked backwards through
 * pkt->next, from its tail to its head; run_list() turns a run into a
 * forward list.
 *
 * Policy mode keeps fragments unmerged in arrival order and a bitmap of the
 * 8-byte blocks received (offsets are multiples of 8 and so is every end
 * but the last, so blocks are exact); bytes are resolved at completion.
 *
 * The queue owns every fragment in it; these functions move ownership only
 * as their comments say.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rxpath/compiler.h"

#include "net/defrag_internal.h"

static int run_cmp(struct dfr_run *a, struct dfr_run *b)
{
	return a->off < b->off ? -1 : a->off > b->off;
}

RB_GENERATE_STATIC(dfr_tree, dfr_run, rb, run_cmp)

/* All run nodes are made with the table (no allocation on the data path):
 * as many as the fragments the memory cap can hold (each run holds one at
 * least, and a fragment is charged its metadata at least), within
 * [DFR_RUNS_MIN, DFR_RUNS_MAX]. Past that a fragment that needs a node is
 * refused as one over the cap would be (mem_drops). */
int dfr_runs_init(struct rxp_defrag_table *t)
{
	uint64_t n = t->cfg.mem_limit / RXP_PKT_META_TRUESIZE;

	n = n < DFR_RUNS_MIN ? DFR_RUNS_MIN : n > DFR_RUNS_MAX ? DFR_RUNS_MAX : n;
	t->runmem = aligned_alloc(64, (size_t)n * sizeof(t->runmem[0]));
	t->runfree = malloc((size_t)n * sizeof(t->runfree[0]));
	if (!t->runmem || !t->runfree)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++)
		t->runfree[i] = &t->runmem[n - 1 - i];
	t->nrunfree = t->runcap = (uint32_t)n;
	return 0;
}

/* One of the queue's own nodes, else one from the table's free stack (most
 * recently freed first, so likely still in cache); NULL when none is left. */
static inline struct dfr_run *run_get(struct rxp_defrag_table *t, struct dfr_queue *q)
{
	if (q->inl_used != (1u << DFR_INL_RUNS) - 1) {
		unsigned i = (unsigned)__builtin_ctz(~(unsigned)q->inl_used);

		q->inl_used |= (uint8_t)(1u << i);
		return &q->inl[i];
	}
	if (rxp_unlikely(!t->nrunfree))
		return NULL;
	return t->runfree[--t->nrunfree];
}

static inline void run_put(struct rxp_defrag_table *t, struct dfr_queue *q, struct dfr_run *n)
{
	if (n >= q->inl && n < q->inl + DFR_INL_RUNS)
		return; /* the caller clears q->inl_used */
	t->runfree[t->nrunfree++] = n; /* the stack has room for every node */
}

void dfr_runs_fini(struct rxp_defrag_table *t)
{
	free(t->runmem);
	free(t->runfree);
	t->runmem = NULL;
	t->runfree = NULL;
	t->nrunfree = t->runcap = 0;
}

/* A new run of pkt alone, [off, end), in the tree. */
static void run_new(struct dfr_queue *q, struct dfr_run *n, struct rxp_pkt *pkt, uint32_t off,
		    uint32_t end)
{
	n->off = off;
	n->end = end;
	n->head = n->tail = pkt;
	pkt->next = NULL;
	RB_INSERT(dfr_tree, &q->runs, n);
}

/* Consumes pkt on DFR_OK (the queue owns it); otherwise the caller keeps it.
 * An in-order append writes only pkt->next (the first cache line of pkt's
 * metadata) and the queue. */
int dfr_runs_insert(struct rxp_defrag_table *t, struct dfr_queue *q, struct rxp_pkt *pkt,
		    uint32_t off, uint32_t end)
{
	struct dfr_run *n, *nw, *pred = NULL, *succ = NULL;

	if (rxp_likely(q->tail && q->tail_end == off)) {
		/* The common case: in order, extend the last run (its end is
		 * written back when the run is closed). */
		pkt->next = q->tail;
		q->tail = pkt;
		q->tail_end = end;
		return DFR_OK;
	}
	if (!q->tail) {
		/* The first fragment: the first run, without a node until
		 * another run needs the tree (a datagram that arrives in
		 * order never touches the node lines). Its head stays pf[0]. */
		pkt->next = NULL;
		q->first_off = off;
		q->tail = pkt;
		q->tail_end = end;
		return DFR_OK;
	}
	if (!q->last_run && off == 0 && end == q->first_off && (q->flags & DFR_F_LAST) &&
	    q->meat + (end - off) == q->len) {
		/* The first run is the only one and pkt is exactly what is
		 * missing before it: the datagram completes now. Join the
		 * run at its start instead of making a run of one: run
		 * boundaries decide duplicate against overlap (as in Linux,
		 * which would make a run of one), but no fragment will come
		 * to see this one. */
		q->pf[0]->next = pkt;
		pkt->next = NULL;
		q->first_off = 0;
		return DFR_OK;
	}
	if (!q->last_run) {
		nw = run_get(t, q);
		if (!nw)
			return DFR_NOMEM;
		nw->off = q->first_off;
		nw->head = q->pf[0];
		RB_INSERT(dfr_tree, &q->runs, nw);
		q->last_run = nw;
	}
	if (off < q->tail_end) {
		/* Somewhere before the end: a duplicate, an overlap or a new
		 * run in a gap. The last run's node must be current for the
		 * descent. The queue's own nodes are asked for together, not
		 * one after another down the tree. */
		__builtin_prefetch(&q->inl[0]);
		__builtin_prefetch(&q->inl[1]);
		if (q->inl_used > 3) {
			__builtin_prefetch(&q->inl[2]);
			__builtin_prefetch(&q->inl[3]);
		}
		q->last_run->end = q->tail_end;
		q->last_run->tail = q->tail;
		n = RB_ROOT(&q->runs);
		while (n) {
			if (end <= n->off) {
				succ = n;
				n = RB_LEFT(n, rb);
			} else if (off >= n->end) {
				pred = n;
				n = RB_RIGHT(n, rb);
			} else if (off >= n->off && end <= n->end) {
				return DFR_DUP;
			} else {
				return DFR_OVERLAP;
			}
		}
		if ((q->flags & DFR_F_LAST) && q->meat + (end - off) == q->len) {
			/* pkt fills the last gap: the datagram completes now,
			 * so no fragment will test the run boundary this would
			 * make, and pkt can join a neighbour run instead of
			 * costing a node and a tree insert. The bytes before
			 * and after are accounted for (meat), so the gap is
			 * exactly [off, end) with its neighbours touching. */
			if (pred && pred->end == off) {
				pkt->next = pred->tail;
				pred->tail = pkt;
				pred->end = end;
				return DFR_OK;
			}
			if (off == 0 && succ && succ->off == end) {
				succ->head->next = pkt;
				pkt->next = NULL;
				succ->head = pkt;
				succ->off = 0; /* still below every other run */
				return DFR_OK;
			}
		}
		nw = run_get(t, q);
		if (!nw)
			return DFR_NOMEM;
		run_new(q, nw, pkt, off, end);
		return DFR_OK;
	}
	/* After a gap past the end: a new last run (the old one is closed). */
	nw = run_get(t, q);
	if (!nw)
		return DFR_NOMEM;
	q->last_run->end = q->tail_end;
	q->last_run->tail = q->tail;
	run_new(q, nw, pkt, off, end);
	q->last_run = nw;
	q->tail = pkt;
	q->tail_end = end;
	return DFR_OK;
}

/* The fragments of run n (NULL: the queue's first run while it has no node),
 * in offset order, linked forward through next and ending in NULL; *last
 * gets its last fragment. */
static struct rxp_pkt *run_list(const struct dfr_queue *q, struct dfr_run *n, struct rxp_pkt **last)
{
	struct rxp_pkt *p, *prev, *list = NULL;

	p = n == q->last_run ? q->tail : n->tail;
	*last = p;
	while (p) {
		/* Coalescing reads each fragment's page header next. */
		__builtin_prefetch(p->head_page);
		prev = p->next;
		p->next = list;
		list = p;
		p = prev;
	}
	return list;
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
void dfr_queue_for_each_drain(struct rxp_defrag_table *t, struct dfr_queue *q,
			      void (*fn)(void *, struct rxp_pkt *), void *arg)
{
	struct dfr_run *n, *nx;
	struct rxp_pkt *p, *pn, *last;

	if (q->tail && !q->last_run) {
		for (p = run_list(q, NULL, &last); p; p = pn) {
			pn = p->next;
			p->next = NULL;
			fn(arg, p);
		}
	}
	for (n = RB_MIN(dfr_tree, &q->runs); n; n = nx) {
		nx = RB_NEXT(dfr_tree, &q->runs, n);
		p = run_list(q, n, &last);
		run_put(t, q, n);
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
	q->inl_used = 0;
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
	struct dfr_run *n, *nx;
	struct rxp_pkt *head = NULL, *p, *pn, *rest = NULL, **link = &rest, *last;

	/* Every fragment, in order, on rest; the nodes go back as we pass.
	 * One run (no node, or the queue's first node alone) needs no walk
	 * of the tree. */
	if (!q->last_run) {
		rest = run_list(q, NULL, &last);
	} else if (q->inl_used == 1) {
		rest = run_list(q, &q->inl[0], &last);
	} else {
		for (n = RB_MIN(dfr_tree, &q->runs); n; n = nx) {
			nx = RB_NEXT(dfr_tree, &q->runs, n);
			*link = run_list(q, n, &last);
			link = &last->next;
			run_put(t, q, n);
		}
	}
	head = rest;
	rest = head->next;
	head->next = NULL;
	RB_INIT(&q->runs);
	q->inl_used = 0;
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
	if (t->cfg.forward) {
		for (p = rest; p; p = pn) {
			pn = p->next;
			p->next = NULL;
			rxp_pkt_chain(head, p);
		}
	} else {
		struct rxp_page_batch pb = {{NULL, NULL}, {0, 0}};

		for (p = rest; p; p = pn) {
			pn = p->next;
			p->next = NULL;
			rxp_pkt_try_coalesce_batch(head, p, &pb);
		}
		rxp_page_batch_flush(&pb);
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
