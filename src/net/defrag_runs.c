/*
 * Runs storage (strict mode, Linux's rules): the fragments of a queue as
 * runs, as Linux keeps them (a red-black tree of runs), and building the
 * datagram from them. Each run is a stretch of contiguous fragments. A
 * fragment that starts where the last fragment ended is appended to the
 * last run in O(1); one after a gap starts a new rightmost run; anything
 * else is placed by a search that also finds a duplicate (wholly inside a
 * run) or an overlap (anything else that touches a run), and becomes a run
 * of its own. Runs never overlap. As in Linux, only the last run grows,
 * and runs are never joined: whether a fragment is a duplicate or an
 * overlap depends on the run boundaries, and strict mode must judge as
 * Linux does. The one exception cannot be seen: where a run more would
 * cost a tree node (or the small form), a fragment that completes its
 * datagram joins the run before it (or, at offset 0, the one after it),
 * since no fragment comes after it to meet the boundary.
 *
 * Runs are queue memory (up to DFR_SMALL_RUNS, in arrays tested all at
 * once by vector compares) or, past that, table memory (struct dfr_run
 * nodes in a tree, searched in O(log runs)): see defrag_internal.h. A
 * run's fragments are linked backwards through pkt->next, from its tail
 * to its head; list_from_tail() turns a run into a forward list. Out of
 * order, a queue of fewer than DFR_PF fragments keeps their ranges
 * instead, and makes its runs only when a fragment meets one of them, or
 * more come, or completion or a drain needs them (DFR_NOTES).
 *
 * The queue owns every fragment in it; these functions move ownership only
 * as their comments say.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rxpath/compiler.h"
#include "rxpath/log.h"

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "net/defrag_internal.h"

static int run_cmp(struct dfr_run *a, struct dfr_run *b)
{
	return a->off < b->off ? -1 : a->off > b->off;
}

RB_GENERATE_STATIC(dfr_tree, dfr_run, rb, run_cmp)

/* All run nodes are reserved with the table (no allocation on the data
 * path): as many as the fragments the memory cap can hold (each run holds
 * one at least, and a fragment is charged its metadata at least), within
 * [DFR_RUNS_MIN, DFR_RUNS_MAX]. They are handed out in address order the
 * first time (runnext) and then reused from a free stack, so a table that
 * never needs many touches few of them. Past that a fragment that needs a
 * node is refused as one over the cap would be (mem_drops). */
static int runs_init(struct rxp_defrag_table *t)
{
	uint64_t n = t->cfg.mem_limit / RXP_PKT_META_TRUESIZE;

	n = n < DFR_RUNS_MIN ? DFR_RUNS_MIN : n > DFR_RUNS_MAX ? DFR_RUNS_MAX : n;
	t->runmem = aligned_alloc(64, (size_t)n * sizeof(t->runmem[0]));
	t->runfree = malloc((size_t)n * sizeof(t->runfree[0]));
	if (!t->runmem || !t->runfree)
		return -ENOMEM;
	t->nrunfree = t->runnext = 0;
	t->runcap = (uint32_t)n;
	return 0;
}

static inline uint32_t runs_left(const struct rxp_defrag_table *t)
{
	return t->nrunfree + (t->runcap - t->runnext);
}

/* A node from the table's free stack (most recently freed first, so likely
 * still in cache), else one never used; NULL when none is left. */
static inline struct dfr_run *run_get(struct rxp_defrag_table *t)
{
	if (rxp_likely(t->nrunfree))
		return t->runfree[--t->nrunfree];
	if (rxp_unlikely(t->runnext == t->runcap))
		return NULL;
	return &t->runmem[t->runnext++];
}

static inline void run_put(struct rxp_defrag_table *t, struct dfr_run *n)
{
	t->runfree[t->nrunfree++] = n; /* the stack has room for every node */
}

static void runs_fini(struct rxp_defrag_table *t)
{
	free(t->runmem);
	free(t->runfree);
	t->runmem = NULL;
	t->runfree = NULL;
	t->nrunfree = t->runcap = t->runnext = 0;
}

/* The head of the run whose tail is p: its fragments are linked backwards. */
static struct rxp_pkt *run_head(struct rxp_pkt *p)
{
	while (p->next)
		p = p->next;
	return p;
}

/* Small form to tree form, when a run beyond DFR_SMALL_RUNS is needed: a
 * node per run. DFR_NOMEM (nothing changed) when the table has too few. */
static __attribute__((noinline, cold)) int small_to_tree(struct rxp_defrag_table *t,
							 struct dfr_queue *q)
{
	unsigned last = q->nsmall - 1u;

	if (runs_left(t) < q->nsmall)
		return DFR_NOMEM;
	q->send[last] = q->tail_end;
	q->stail[last] = q->tail;
	for (unsigned i = 0; i <= last; i++) {
		struct dfr_run *n = run_get(t);

		n->off = q->soff[i];
		n->end = q->send[i];
		n->tail = q->stail[i];
		n->head = run_head(n->tail);
		RB_INSERT(dfr_tree, &q->runs, n);
		q->last_run = n;
	}
	q->nsmall = 0;
	return DFR_OK;
}

/* The small arrays are tested eight runs at a time, as two vectors of four
 * (SSE2 on x86-64), without a branch on any run. Offsets are below 2^17,
 * so signed compares are right, and an entry past the last run starts at
 * INT32_MAX (small_start): it never touches a fragment nor starts below a
 * run. */
typedef int32_t dfr_v4 __attribute__((vector_size(16)));

static inline dfr_v4 v4_load(const uint32_t *p)
{
	dfr_v4 v;

	__builtin_memcpy(&v, p, sizeof(v));
	return v;
}

/* The lanes of v (each 0 or -1) that are true, as bits 0-3. */
static inline unsigned v4_mask(dfr_v4 v)
{
#ifdef __SSE2__
	return (unsigned)_mm_movemask_ps(_mm_castsi128_ps((__m128i)v));
#else
	return (v[0] & 1u) | (v[1] & 2u) | (v[2] & 4u) | (v[3] & 8u);
#endif
}

/* Set bits in a nibble. */
static const uint8_t pop4[16] = {0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4};

/* How many lanes of v are true. */
static inline unsigned v4_count(dfr_v4 v)
{
	return pop4[v4_mask(v)];
}

/* v with lane l (counting from base, the index of v's lane 0) set to x:
 * an entry the vector tests must see as it is now, without storing it
 * first (a store of four bytes is not forwarded to a load of sixteen that
 * holds it: the load waits until the store is written to the cache). */
static inline dfr_v4 v4_with(dfr_v4 v, int32_t base, unsigned l, int32_t x)
{
	const dfr_v4 lane = {0, 1, 2, 3};
	const dfr_v4 m = lane + base == (int32_t)l;

	return (v & ~m) | (x & m);
}

/* The first run, recorded: the small form with one run. Each half is
 * written whole, so that small_place's loads of them are forwarded. */
static void small_start(struct dfr_queue *q)
{
	const dfr_v4 none = {INT32_MAX, INT32_MAX, INT32_MAX, INT32_MAX};
	const dfr_v4 first = {(int32_t)q->first_off, INT32_MAX, INT32_MAX, INT32_MAX};

	__builtin_memcpy(&q->soff[0], &first, sizeof(first));
	__builtin_memcpy(&q->soff[4], &none, sizeof(none));
	q->nsmall = 1;
}

/* What [off, end) meets in the small form, whose last run (entry l) ends
 * at te (not yet in send[]): DFR_OK nothing, DFR_DUP a run that holds it
 * whole, DFR_OVERLAP any other byte shared with a run (runs are
 * disjoint). Two vector compares, no branch on any run. */
static inline __attribute__((always_inline)) int small_test(const struct dfr_queue *q, unsigned l,
							    uint32_t te, uint32_t off, uint32_t end)
{
	const int32_t so = (int32_t)off, se = (int32_t)end;
	const dfr_v4 o0 = v4_load(&q->soff[0]), o1 = v4_load(&q->soff[4]);
	const dfr_v4 e0 = v4_with(v4_load(&q->send[0]), 0, l, (int32_t)te);
	const dfr_v4 e1 = v4_with(v4_load(&q->send[4]), 4, l, (int32_t)te);
	dfr_v4 in0 = (se > o0) & (so < e0), in1 = (se > o1) & (so < e1);

	_Static_assert(DFR_SMALL_RUNS == 8, "small_test tests eight runs");
	if (rxp_likely(!v4_mask(in0 | in1)))
		return DFR_OK;
	in0 &= (so >= o0) & (se <= e0);
	in1 &= (so >= o1) & (se <= e1);
	return v4_mask(in0 | in1) ? DFR_DUP : DFR_OVERLAP;
}

/* Small form with no room for another run (DFR_SMALL_RUNS runs): pkt,
 * [off, end) with off < q->tail_end, is a duplicate, an overlap, or, when
 * it fills the datagram's last gap, joins a neighbour run; -1 otherwise
 * (the caller goes to the tree). */
static int small_full(struct dfr_queue *q, struct rxp_pkt *pkt, uint32_t off, uint32_t end)
{
	const unsigned n = DFR_SMALL_RUNS;
	int r = small_test(q, n - 1, q->tail_end, off, end);

	if (r != DFR_OK)
		return r;
	/* (the joins below read the last run's entry) */
	q->send[n - 1] = q->tail_end;
	q->stail[n - 1] = q->tail;
	if ((q->flags & DFR_F_LAST) && q->meat + (end - off) == q->len) {
		/* pkt fills the last gap: the datagram completes now, so no
		 * fragment will test the run boundary this would make, and
		 * pkt can join the run that ends at off (not the last run, as
		 * off < tail_end) or, at offset 0, the run that starts at end.
		 * So completing never needs the tree and its nodes. */
		for (unsigned i = 0; i < n; i++) {
			if (q->send[i] == off) {
				pkt->next = q->stail[i];
				q->stail[i] = pkt;
				q->send[i] = end;
				return DFR_OK;
			}
		}
		for (unsigned i = 0; off == 0 && i < n; i++) {
			if (q->soff[i] == end) {
				run_head(q->stail[i])->next = pkt;
				pkt->next = NULL;
				q->soff[i] = 0;
				return DFR_OK;
			}
		}
	}
	return -1;
}

/* Small form with room for a run more (nsmall below DFR_SMALL_RUNS):
 * place pkt, [off, end), whichever of three it is: the last run's next
 * fragment (off == tail_end), a new last run after a gap (off > tail_end),
 * or a new run in a gap before the last run (off < tail_end), which takes
 * the last run's entry while the last run moves up one. The three are
 * chosen by selects, not branches: in a shuffled arrival order which one
 * a fragment is, is a coin toss. The duplicate and overlap test is made
 * for all three; it finds nothing for the first two (every run ends at or
 * before tail_end). A fragment that completes the datagram in a gap makes
 * a run of its own here, where small_full joins it to a neighbour: with
 * room for the run that changes nothing, as no fragment comes after it. */
static inline __attribute__((always_inline)) int
small_place(struct dfr_queue *q, struct rxp_pkt *pkt, uint32_t off, uint32_t end)
{
	const unsigned n = q->nsmall, l = n - 1;
	const uint32_t te = q->tail_end, lo = q->soff[l];
	struct rxp_pkt *const tl = q->tail;
	const bool app = off == te, gap = off < te;
	int r = small_test(q, l, te, off, end);

	if (rxp_unlikely(r != DFR_OK))
		return r;
	/* Entry l: the new run (gap), else the last run, closed (after) or
	 * not (its end and tail are read from the queue, not from here). */
	q->soff[l] = gap ? off : lo;
	q->send[l] = gap ? end : te;
	q->stail[l] = gap ? pkt : tl;
	/* Entry n: the last run (gap), the new last run (after), or unused
	 * still (appended). */
	q->soff[n] = app ? (uint32_t)INT32_MAX : gap ? lo : off;
	q->tail = gap ? tl : pkt;
	q->tail_end = gap ? te : end;
	pkt->next = app ? tl : NULL;
	q->nsmall = (uint8_t)(n + !app);
	return DFR_OK;
}

/* The tails of the small form's runs in offset order: q->stail itself
 * when it is in that order, else out (DFR_SMALL_RUNS entries), filled;
 * the queue is not changed but for the last run's tail, written back.
 * With two runs the order is already right (the last run is last). Else
 * each run's place is the number of runs that start below it, counted in
 * two vector compares: no branch on the order, which is the arrival
 * order. Starts are distinct (runs are disjoint and not empty). */
static struct rxp_pkt *const *small_order(struct dfr_queue *q, struct rxp_pkt **out)
{
	const unsigned n = q->nsmall;
	dfr_v4 o0, o1;

	q->stail[n - 1] = q->tail;
	if (n <= 2)
		return q->stail;
	o0 = v4_load(&q->soff[0]);
	o1 = v4_load(&q->soff[4]);
	for (unsigned i = 0; i < n; i++) {
		const int32_t b = (int32_t)q->soff[i];

		out[v4_count(o0 < b) + v4_count(o1 < b)] = q->stail[i];
	}
	return out;
}

/*
 * Notes form: while a queue out of order holds fewer than DFR_PF
 * fragments, the first of them noted at home, it keeps no runs. Its first
 * k fragments, which came in order, are entry 0 of the small arrays,
 * [soff[0], send[0]), as the one run they made; each later one, pf[i], is
 * entry i - k + 1, its own range.
 * An arriving fragment is tested against all eight entries at once; one
 * that meets none takes the next entry and is linked to nothing. The runs
 * are what decides a duplicate against an overlap (Linux's rule: inside
 * one run is a duplicate), so anything the notes cannot decide turns them
 * into runs first, by placing the fragments again in their arrival order
 * (notes_to_runs): a fragment that meets an entry, a ninth fragment,
 * completion that cannot take the fragments from their notes, and a
 * drain. The runs made so are the ones placing them as they came would
 * have made: each was placed without meeting another. In this form nsmall
 * is DFR_NOTES | k, tail is still a fragment (the queue is not empty) and
 * tail_end DFR_NOTES_END, which no fragment starts at, so the in-order
 * test fails without a test of its own. (Testing for the form first, as
 * the small form is, ran fewer instructions and slower: see
 * bench/results, 2026-12-06, stop 46.)
 */
#define DFR_NOTES 0x80u
#define DFR_NOTES_END UINT32_MAX

static int notes_hit(struct rxp_defrag_table *t, struct dfr_queue *q, struct rxp_pkt *pkt,
		     uint32_t off, uint32_t end);

/* Notes form: pkt, [off, end), is fragment q->nfrags (< DFR_PF). */
static inline __attribute__((always_inline)) int notes_place(struct rxp_defrag_table *t,
							     struct dfr_queue *q,
							     struct rxp_pkt *pkt, uint32_t off,
							     uint32_t end)
{
	const unsigned i = q->nfrags + 1u - (q->nsmall & ~DFR_NOTES);
	const int32_t so = (int32_t)off, se = (int32_t)end;
	const dfr_v4 o0 = v4_load(&q->soff[0]), o1 = v4_load(&q->soff[4]);
	const dfr_v4 e0 = v4_load(&q->send[0]), e1 = v4_load(&q->send[4]);

	if (rxp_unlikely(v4_mask(((se > o0) & (so < e0)) | ((se > o1) & (so < e1)))))
		return notes_hit(t, q, pkt, off, end);
	q->soff[i] = off;
	q->send[i] = end;
	pkt->next = NULL;
	return DFR_OK;
}

/* The notes form from the one run (not recorded) of q->nfrags fragments,
 * and pkt, [off, end), which does not continue it, placed in it. Each half
 * of the arrays is written whole, and pkt tested against the run alone.
 * When pkt meets the run, the small form instead, which judges it. */
static inline __attribute__((always_inline)) int
notes_start(struct dfr_queue *q, struct rxp_pkt *pkt, uint32_t off, uint32_t end)
{
	const int32_t fo = (int32_t)q->first_off, te = (int32_t)q->tail_end;
	const dfr_v4 none = {INT32_MAX, INT32_MAX, INT32_MAX, INT32_MAX};
	const dfr_v4 o = {fo, (int32_t)off, INT32_MAX, INT32_MAX}, e = {te, (int32_t)end, 0, 0};

	if (rxp_unlikely(off < q->tail_end && end > q->first_off)) {
		small_start(q);
		return small_place(q, pkt, off, end);
	}
	__builtin_memcpy(&q->soff[0], &o, sizeof(o));
	__builtin_memcpy(&q->soff[4], &none, sizeof(none));
	__builtin_memcpy(&q->send[0], &e, sizeof(e));
	q->nsmall = (uint8_t)(DFR_NOTES | q->nfrags);
	q->tail_end = DFR_NOTES_END;
	pkt->next = NULL;
	return DFR_OK;
}

/* Tree form: place pkt, [off, end) with off < q->tail_end. */
static int tree_insert(struct rxp_defrag_table *t, struct dfr_queue *q, struct rxp_pkt *pkt,
		       uint32_t off, uint32_t end)
{
	struct dfr_run *n, *nw, *pred = NULL, *succ = NULL;

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
		/* pkt fills the last gap: the datagram completes now, so no
		 * fragment will test the run boundary this would make, and
		 * pkt can join a neighbour run instead of costing a node and
		 * a tree insert. The bytes before and after are accounted
		 * for (meat), so the gap is exactly [off, end) with its
		 * neighbours touching. */
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
	nw = run_get(t);
	if (!nw)
		return DFR_NOMEM;
	nw->off = off;
	nw->end = end;
	nw->head = nw->tail = pkt;
	pkt->next = NULL;
	RB_INSERT(dfr_tree, &q->runs, nw);
	return DFR_OK;
}

/* pkt comes after a gap past the end of q's last run: a new last run (the
 * old one is closed). Tree form (a small form with room takes this in
 * small_place; a full one is made a tree first). */
static int append_run(struct rxp_defrag_table *t, struct dfr_queue *q, struct rxp_pkt *pkt,
		      uint32_t off, uint32_t end)
{
	struct dfr_run *nw;
	int r;

	if (q->nsmall && (r = small_to_tree(t, q)) != DFR_OK)
		return r;
	nw = run_get(t);
	if (!nw)
		return DFR_NOMEM;
	q->last_run->end = q->tail_end;
	q->last_run->tail = q->tail;
	nw->off = off;
	nw->head = pkt;
	RB_INSERT(dfr_tree, &q->runs, nw);
	q->last_run = nw;
	pkt->next = NULL;
	q->tail = pkt;
	q->tail_end = end;
	return DFR_OK;
}

/* dfr_runs_insert; notes: whether a queue may take the notes form. */
static inline __attribute__((always_inline)) int runs_insert(struct rxp_defrag_table *t,
							     struct dfr_queue *q,
							     struct rxp_pkt *pkt, uint32_t off,
							     uint32_t end, const bool notes)
{
	int r;

	if (q->nsmall - 1u < DFR_SMALL_RUNS - 1u)
		return small_place(q, pkt, off, end);
	if (rxp_likely(q->tail && q->tail_end == off)) {
		/* The common case: in order, extend the last run (its end is
		 * written back when the run is closed). */
		pkt->next = q->tail;
		q->tail = pkt;
		q->tail_end = end;
		return DFR_OK;
	}
	if (!q->tail) {
		/* The first fragment: the first run, not recorded until
		 * another run needs it. Its head stays pf[0]. */
		pkt->next = NULL;
		q->first_off = off;
		q->tail = pkt;
		q->tail_end = end;
		return DFR_OK;
	}
	/* The small arrays' ranges, asked for while the form is decided (the
	 * notes form reads and writes no other line of them). */
	__builtin_prefetch(&q->soff[0]);
	if (!q->nsmall && !q->last_run) {
		if (off == 0 && end == q->first_off && (q->flags & DFR_F_LAST) &&
		    q->meat + (end - off) == q->len) {
			/* The first run is the only one and pkt is exactly
			 * what is missing before it: the datagram completes
			 * now. Join the run at its start instead of making a
			 * run of one: run boundaries decide duplicate against
			 * overlap (as in Linux, which would make a run of
			 * one), but no fragment will come to see this one. */
			q->pf[0]->next = pkt;
			pkt->next = NULL;
			q->first_off = 0;
			return DFR_OK;
		}
		/* (only where the first fragment is noted at home: completion
		 * walks the runs of fragments not at home, and would have to
		 * make them first; rxpath defrag's, in its mapped capture,
		 * cost 64 instructions more each so) */
		if (notes && q->nfrags < DFR_PF && !(q->foff[0] & DFR_FOFF_AWAY))
			return notes_start(q, pkt, off, end);
		small_start(q);
		return small_place(q, pkt, off, end);
	}
	if (q->nsmall & DFR_NOTES) {
		if (rxp_likely(q->nfrags < DFR_PF))
			return notes_place(t, q, pkt, off, end);
		return notes_hit(t, q, pkt, off, end); /* a ninth */
	}
	if (off > q->tail_end)
		return append_run(t, q, pkt, off, end);
	/* Somewhere before the end: a duplicate, an overlap or a new run in
	 * a gap. */
	if (q->nsmall) {
		r = small_full(q, pkt, off, end);
		if (r >= 0)
			return r;
		/* Room for no more runs: the search found neither a
		 * duplicate nor an overlap, so the tree's will not either. */
		r = small_to_tree(t, q);
		if (r != DFR_OK)
			return r;
	}
	return tree_insert(t, q, pkt, off, end);
}

/* Consumes pkt on DFR_OK (the queue owns it); otherwise the caller keeps it.
 * While the queue holds one run, an in-order append writes only pkt->next
 * (the first cache line of pkt's metadata) and the queue's line 1; once it
 * holds more, every fragment is noted in the notes form (line 4 too)
 * while it holds fewer than DFR_PF, then placed in the small form until
 * eight runs are not enough. */
DFR_HOT int dfr_runs_insert(struct rxp_defrag_table *t, struct dfr_queue *q, struct rxp_pkt *pkt,
			    uint32_t off, uint32_t end)
{
	return runs_insert(t, q, pkt, off, end, true);
}

/* The notes form's fragments placed again, in arrival order, as runs (see
 * DFR_NOTES). None completed the datagram when it came, so none may join a
 * neighbour run as one that completes it does: the last fragment is not
 * known while they are placed (the fragment being judged may have made it
 * known, and the fragments here may then cover it: fuzz_reasm_model found
 * [504, 512), [0, 504), then [456, 512) the last, judged a duplicate). Eight
 * fragments make eight runs at most, which the small form holds. */
static __attribute__((noinline, cold)) void notes_to_runs(struct rxp_defrag_table *t,
							  struct dfr_queue *q)
{
	const unsigned n = q->nfrags, k = q->nsmall & ~DFR_NOTES;
	const uint8_t flags = q->flags;
	uint32_t o[DFR_PF], e[DFR_PF];

	/* the first k as they came: one after another, from entry 0's
	 * start to its end */
	for (unsigned i = 0; i < k; i++) {
		o[i] = i ? e[i - 1] : q->soff[0];
		e[i] = i + 1 < k ? (q->foff[i + 1] & ~DFR_FOFF_AWAY) * 8u : q->send[0];
	}
	for (unsigned i = k; i < n; i++) {
		o[i] = q->soff[i + 1 - k];
		e[i] = q->send[i + 1 - k];
	}
	q->nsmall = 0;
	q->tail = NULL;
	q->flags = (uint8_t)(flags & ~DFR_F_LAST);
	for (unsigned i = 0; i < n; i++) {
		int r = runs_insert(t, q, q->pf[i], o[i], e[i], false);

#ifdef RXP_DEBUG
		if (r != DFR_OK) {
			rxp_log(RXP_LOG_ERR, "notes_to_runs: fragment %u of %u refused (%d)", i, n,
				r);
			abort();
		}
#endif
		(void)r;
	}
	q->flags = flags;
}

/* Notes form: pkt, [off, end), met a fragment noted, or is a ninth: the
 * runs judge it. */
static int notes_hit(struct rxp_defrag_table *t, struct dfr_queue *q, struct rxp_pkt *pkt,
		     uint32_t off, uint32_t end)
{
	notes_to_runs(t, q);
	return runs_insert(t, q, pkt, off, end, false);
}

/* The fragments of the run whose tail is p, in offset order, linked forward
 * through next and ending in NULL; *last gets its last fragment. */
static struct rxp_pkt *list_from_tail(struct rxp_pkt *p, struct rxp_pkt **last)
{
	struct rxp_pkt *prev, *list = NULL;

	*last = p;
	while (p) {
		/* Freeing the datagram reads each fragment's page header:
		 * asked for here too, for fragments past the queue's hints. */
		__builtin_prefetch(p->head_page);
		prev = p->next;
		p->next = list;
		list = p;
		p = prev;
	}
	return list;
}

/* Every fragment of a strict queue, in offset order, as one forward list
 * (NULL for none); the runs are gone and their nodes back in the table. */
static struct rxp_pkt *runs_take_all(struct rxp_defrag_table *t, struct dfr_queue *q)
{
	struct rxp_pkt *rest = NULL, **link = &rest, *last;
	struct dfr_run *n, *nx;

	if (q->nsmall & DFR_NOTES)
		notes_to_runs(t, q);
	if (!q->tail) {
		/* empty */
	} else if (q->nsmall) {
		struct rxp_pkt *out[DFR_SMALL_RUNS], *const *tails = small_order(q, out);
		unsigned k = q->nsmall - 1u;

		for (unsigned i = 0; i <= k; i++) {
			*link = list_from_tail(tails[i], &last);
			link = &last->next;
		}
	} else if (!q->last_run) {
		rest = list_from_tail(q->tail, &last);
	} else {
		q->last_run->tail = q->tail;
		for (n = RB_MIN(dfr_tree, &q->runs); n; n = nx) {
			nx = RB_NEXT(dfr_tree, &q->runs, n);
			*link = list_from_tail(n->tail, &last);
			link = &last->next;
			run_put(t, n);
		}
	}
	RB_INIT(&q->runs);
	q->nsmall = 0;
	q->tail = NULL;
	q->last_run = NULL;
	return rest;
}

/* One run for dfr_runs_compare: its fragments p (tail first, linked
 * backwards) end at rend; widen [*lo, *hi) by what they share with
 * [off, end) of pkt and say whether any shared byte differs. */
static bool run_compare(const struct rxp_pkt *p, uint32_t rend, const struct rxp_pkt *pkt,
			uint32_t off, uint32_t end, uint32_t *lo, uint32_t *hi)
{
	uint8_t a[256], b[256];
	bool differ = false;

	for (uint32_t cur = rend; p; cur -= p->len, p = p->next) {
		uint32_t ps = cur - p->len, s = ps > off ? ps : off, e = cur < end ? cur : end;

		if (s >= e)
			continue;
		if (s < *lo)
			*lo = s;
		if (e > *hi)
			*hi = e;
		for (uint32_t x = s; x < e && !differ; x += sizeof(a)) {
			uint32_t k = e - x < sizeof(a) ? e - x : (uint32_t)sizeof(a);

			if (rxp_pkt_copy_bits(p, x - ps, a, k) ||
			    rxp_pkt_copy_bits(pkt, x - off, b, k))
				break;
			differ = memcmp(a, b, k) != 0;
		}
	}
	return differ;
}

bool dfr_runs_compare(const struct dfr_queue *q, const struct rxp_pkt *pkt, uint32_t off,
		      uint32_t end, uint32_t *lo, uint32_t *hi)
{
	bool differ = false;

	*lo = UINT32_MAX;
	*hi = 0;
#ifdef RXP_DEBUG
	if (q->nsmall & DFR_NOTES) { /* (notes_hit makes runs before a refusal) */
		rxp_log(RXP_LOG_ERR, "dfr_runs_compare: a queue in the notes form");
		abort();
	}
#endif
	if (!q->tail) {
		/* empty */
	} else if (q->nsmall) {
		unsigned last = q->nsmall - 1u;

		for (unsigned i = 0; i <= last; i++)
			differ |= run_compare(i == last ? q->tail : q->stail[i],
					      i == last ? q->tail_end : q->send[i], pkt, off, end,
					      lo, hi);
	} else if (!q->last_run) {
		differ = run_compare(q->tail, q->tail_end, pkt, off, end, lo, hi);
	} else {
		struct dfr_run *n;

		RB_FOREACH(n, dfr_tree, (struct dfr_tree *)&q->runs)
		{
			bool l = n == q->last_run;

			differ |= run_compare(l ? q->tail : n->tail, l ? q->tail_end : n->end, pkt,
					      off, end, lo, hi);
		}
	}
	if (*lo > *hi)
		*lo = *hi = off;
	return differ;
}

typedef int16_t dfr_v8 __attribute__((vector_size(16)));

/* How many of the 16-bit lanes of v (each 0 or -1) are true. */
static inline unsigned v8_count(dfr_v8 v)
{
#ifdef __SSE2__
	const unsigned m =
		(unsigned)_mm_movemask_epi8(_mm_packs_epi16((__m128i)v, (__m128i)v)) & 0xffu;

	return pop4[m & 15u] + pop4[m >> 4];
#else
	unsigned c = 0;

	for (unsigned i = 0; i < 8; i++)
		c += v[i] & 1;
	return c;
#endif
}

/* A datagram of n (2 to DFR_PF) fragments, all noted at home (line 6):
 * taken as frags of head, the offset-0 fragment, in offset order, each
 * placed by how many start below it; no fragment but head is read. False,
 * with nothing changed, when rxp_pkt_coalesce_homes will not take them. */
static bool frag_home(struct dfr_queue *q, struct rxp_pkt *head, unsigned n)
{
	struct rxp_pkt *pkts[DFR_PF];
	uint32_t doff[DFR_PF], off[DFR_PF + 1], size[DFR_PF];
	const dfr_v8 lane = {0, 1, 2, 3, 4, 5, 6, 7};
	dfr_v8 o, valid;

	if (n < 2 || n > DFR_PF)
		__builtin_unreachable();
	if (n == 2) {
		/* the other one: its offset is head's length */
		const unsigned i = q->pf[0] == head;
		const uint32_t at = q->foff[i] * 8u;

		size[0] = q->len - at;
		return rxp_pkt_coalesce_homes(head, &q->pf[i], &q->fdoff[i], size, 1, size[0],
					      q->mem - head->truesize);
	}
	/* (lanes past n: never below any; offsets are under 0x8000) */
	__builtin_memcpy(&o, q->foff, sizeof(o));
	valid = lane < (int16_t)n;
	o = (o & valid) | (INT16_MAX & ~valid);
	for (unsigned i = 0; i < n; i++) {
		const uint16_t b = q->foff[i];
		const unsigned r = v8_count(o < (int16_t)b);

		/* (strict: the offsets are distinct, so r is a permutation;
		 * r == 0 is head, which is noted too) */
		pkts[r] = q->pf[i];
		doff[r] = q->fdoff[i];
		off[r] = b * 8u;
	}
	off[n] = q->len;
	for (unsigned k = 1; k < n; k++)
		size[k] = off[k + 1] - off[k];
	return rxp_pkt_coalesce_homes(head, pkts + 1, doff + 1, size + 1, n - 1, q->len - off[1],
				      q->mem - head->truesize);
}

static struct rxp_pkt *runs_build(struct rxp_defrag_table *t, struct dfr_queue *q)
{
	struct rxp_pkt *head = q->pkt0, *p, *pn, *rest;

	/* A datagram of a few fragments at home, as rxp_pkt_alloc makes
	 * them: taken from the notes, not the runs. */
	if (!t->cfg.forward && head && q->nfrags - 2u <= DFR_PF - 2u && !q->last_run &&
	    dfr_frags_home(q, q->nfrags) && frag_home(q, head, q->nfrags)) {
		q->nsmall = 0;
		q->tail = NULL;
		rxp_pkt_push(head, q->hdrlen);
		return head;
	}
	/* The usual datagram, whose runs are in the queue (small form, or
	 * one run): coalesced in one walk of the runs. Anything that walk
	 * does not take (it changes nothing then) goes the general way. */
	if (q->nsmall & DFR_NOTES)
		notes_to_runs(t, q);
	if (!t->cfg.forward && head && q->tail && !q->last_run) {
		struct rxp_pkt *sorted[DFR_SMALL_RUNS];
		struct rxp_pkt *const *tails = &q->tail;
		unsigned nr = 1;

		if (q->nsmall) {
			tails = small_order(q, sorted);
			nr = q->nsmall;
		}
		if (rxp_pkt_coalesce_runs(head, tails, nr, q->nfrags)) {
			q->nsmall = 0;
			q->tail = NULL;
			rxp_pkt_push(head, q->hdrlen);
			return head;
		}
	}

	/* Every fragment, in order; the nodes go back as we pass. */
	head = runs_take_all(t, q);
	rest = head->next;
	head->next = NULL;

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

		rxp_pkt_coalesce_list(head, rest, &pb);
		rxp_page_batch_flush(&pb);
	}
	return head;
}

/* Run fn on every fragment of q (which takes it over), leaving q empty. */
static void runs_drain(struct rxp_defrag_table *t, struct dfr_queue *q,
		       void (*fn)(void *, struct rxp_pkt *), void *arg)
{
	struct rxp_pkt *p, *pn;

	for (p = runs_take_all(t, q); p; p = pn) {
		pn = p->next;
		p->next = NULL;
		fn(arg, p);
	}
}

/* A new queue is all zeros but for its tree's root, which is too. */
_Static_assert(offsetof(struct dfr_queue, runs) + sizeof(struct dfr_tree) <= 128,
	       "the runs' root is in a line dfr_queue_new clears");
static void runs_reset(struct rxp_defrag_table *t, struct dfr_queue *q)
{
	RB_INIT(&q->runs);
}

const struct dfr_storage dfr_runs_storage = {
	.qcharge = 0,
	.init = runs_init,
	.fini = runs_fini,
	.reset = runs_reset,
	.reset_by_clear = true, /* the tree's root is in line 1 */
	.build = runs_build,
	.drain = runs_drain,
};
