/*
 * Private to the reassembly engine (src/net/defrag*.c): the table, the
 * queue, the per-fragment control block kept in pkt->cb, and the split
 * between family glue (parse a fragment, fix the header of a result) and
 * family-independent queue logic.
 */
#ifndef RXP_NET_DEFRAG_INTERNAL_H
#define RXP_NET_DEFRAG_INTERNAL_H

#include <stddef.h>
#include <sys/queue.h>
#ifndef __unused
#define __unused __attribute__((unused)) /* libbsd's RB_GENERATE_STATIC needs it */
#endif
#include <bsd/sys/tree.h>
#include <sodium.h>

#include <string.h>

#include "rxpath/compiler.h"
#include "rxpath/defrag.h"
#include "rxpath/wire.h"

#define DFR_MAXLEN 65535u

/* What a fragment's cb holds while it is queued: its header length for the
 * discard hook (written only when there is one) and, in policy mode, its
 * payload range. Strict mode keeps nothing else per fragment, so that a
 * fragment's metadata beyond its first cache line (next, data, len) is not
 * touched between its arrival and completion. */
struct dfr_cb {
	uint32_t off, end; /* policy: payload offsets of this fragment */
	uint16_t hdrlen; /* header bytes pulled off at insert */
};
_Static_assert(sizeof(struct dfr_cb) <= RXP_PKT_CB_SIZE, "dfr_cb too big");

static inline struct dfr_cb *dfr_cb(struct rxp_pkt *p)
{
	return (struct dfr_cb *)(void *)p->cb;
}

/* A run of contiguous fragments (strict mode). Its fragments are linked
 * backwards through pkt->next from tail to head (head->next is NULL), so
 * appending writes only the new fragment. Runs are kept in the queue, never
 * in the fragments: finding and placing a fragment reads the queue (and with
 * many runs a few nodes), never another fragment's metadata, which with
 * many datagrams in flight is long out of cache. For the queue's last run,
 * end and tail are kept in the queue (tail_end, tail) and written back when
 * the run is closed or the runs are searched. Three forms, by the number of
 * runs, and a fourth without runs:
 *   - one run, not recorded: it starts at q->first_off, its head is
 *     q->pf[0] (a datagram that arrives in order never leaves this form);
 *   - notes (out of order, fewer than DFR_PF fragments, the first at
 *     home): no runs, only the fragments' ranges in q->soff and q->send,
 *     tested all at once; the runs are made from them when they are
 *     needed (defrag_runs.c, DFR_NOTES);
 *   - up to DFR_SMALL_RUNS: arrays in the queue (q->soff, q->send,
 *     q->stail) in arrival order but for the last run, always the last
 *     entry; tested all at once (two vector compares of one cache line),
 *     put in offset order only at completion (into a copy);
 *   - more: a red-black tree of struct dfr_run nodes keyed by off, nodes
 *     from the table (dfr_run_get), one cache line each. */
struct dfr_run {
	uint32_t off, end;
	RB_ENTRY(dfr_run) rb;
	struct rxp_pkt *head, *tail;
} __attribute__((aligned(64)));

RB_HEAD(dfr_tree, dfr_run);

/* Nodes are made with the table: see dfr_runs_init(). */
#define DFR_RUNS_MIN 256u
#define DFR_RUNS_MAX 131072u

/* Only the first dfr_key_len() bytes are meaningful (and hashed and
 * compared): IPv4 addresses sit packed at the start of addr, so an IPv4 key
 * is 20 bytes, which halves the SipHash work per fragment. */
struct dfr_key {
	uint8_t family; /* 4 or 6 */
	uint8_t proto; /* IPv4 only */
	uint16_t pad;
	uint32_t id;
	uint32_t zone;
	uint8_t addr[32]; /* IPv4: src[4] dst[4]; IPv6: src[16] dst[16] */
};

static inline size_t dfr_key_len(const struct dfr_key *k)
{
	return offsetof(struct dfr_key, addr) + (k->family == 4 ? 8u : 32u);
}

/* Parsed fragment, from the family glue. */
struct dfr_info {
	struct dfr_key key;
	uint32_t off, end; /* payload bytes [off, end) */
	uint16_t hdrlen; /* bytes before the payload (v6: incl. the fragment header) */
	uint16_t nhoff; /* v6: offset of the next-header byte that says 44 */
	uint8_t nexthdr; /* v6: the fragment header's next header */
	uint8_t ecn; /* the two ECN bits */
	bool mf, df;
};

enum { DFR_F_FIRST = 1, DFR_F_LAST = 2 };

/* Laid out by how often a field is touched: lookup and every accepted
 * fragment read and write the first three cache lines (the key, the
 * per-fragment state with the storage's own, and the prefetch hints; the
 * bucket chain and hash only for a displaced queue); line 3 when a queue
 * is created, freed or restarted, for each IPv4 fragment while max_dist
 * is on (src and rid), and by the pressure policy and events; line 4
 * (runs storage: the notes form's ranges, the small form's) by fragments
 * out of order, and line 5 (the small form's tails) by those past DFR_PF
 * or meeting another; line 6 by the first DFR_PF fragments and at
 * completion. Queues are cache-line aligned in the table's array. The
 * storage's fields (a union: runs or policy, chosen with the table) are
 * the storage's alone. */
#define DFR_SMALL_RUNS 8u
#define DFR_DISPLACED UINT32_MAX /* dfr_queue.slot: in the SipHash table */
#define DFR_PF 8u
#define DFR_FOFF_AWAY 0x8000u /* dfr_queue.foff: not at home */
struct dfr_queue {
	/* Line 0: lookup. */
	struct dfr_queue *hnext; /* displaced: SipHash bucket chain */
	uint32_t hash; /* displaced: low bits of the key's SipHash */
	struct dfr_key key; /* 44 bytes */
	uint32_t max_size;
	uint8_t flags;
	uint8_t ecn_mask;
	uint16_t hdrlen; /* of the offset-0 fragment */
	/* Line 1: per accepted fragment. */
	uint64_t expires;
	uint32_t last_seq; /* t->seq at its last fragment (mod 2^32) */
	uint32_t mem; /* truesize of its fragments (at most 8192 of them) */
	uint32_t gapmax; /* its longest gap between two fragments, in t->seq */
	uint32_t len, meat;
	uint16_t nfrags; /* at most 8192 (8-byte fragments below 65536) */
	uint8_t pst; /* pressure: its class (DFR_CLS_*) << 1 | DFR_P_* */
	uint8_t nsmall; /* runs: runs in the small arrays (0: not that form;
			 * DFR_NOTES set: the notes form) */
	union {
		struct { /* runs storage (defrag_runs.c) */
			struct rxp_pkt *tail; /* last fragment of the last run */
			struct dfr_tree runs; /* tree form */
			struct dfr_run *last_run; /* the last run's node, tree form */
			uint32_t first_off; /* where the first run starts (one run) */
			uint32_t tail_end; /* where tail ends, and so the last run;
					    * kept here so that appending in order
					    * touches no older fragment's cb */
		};
		struct { /* policy storage (defrag_policy.c) */
			struct rxp_pkt *arr_head, *arr_tail; /* arrival order */
			uint8_t *blocks; /* 8-byte blocks received */
			uint32_t nblocks; /* blocks set */
		};
	};
	/* Line 2: the first DFR_PF fragments in arrival order, so that
	 * completion can prefetch them all at once rather than meet one
	 * cache miss after another walking the runs (pf[0] is also the head
	 * of a first run not yet recorded), and take them by what line 6
	 * says of them without reading them. */
	struct rxp_pkt *pf[DFR_PF];
	/* Line 3: creation, free, max_dist, pressure, events. */
	TAILQ_ENTRY(dfr_queue) tq; /* timer FIFO of its family; free list */
	uint64_t born; /* t->seq when it was made: pressure's age order */
	uint64_t qid; /* for events */
	uint32_t max_df_size;
	uint32_t rid;
	uint32_t src; /* its source's slot in t->src */
	uint16_t nhoff; /* of the offset-0 fragment */
	uint8_t nexthdr;
	uint8_t fifo; /* its timer FIFO in t->fifo (family and class) */
	uint32_t slot; /* its slot in t->slots, or DFR_DISPLACED */
	/* Lines 4-5: runs storage, small form: runs [soff, send) in arrival
	 * order, the last run last, and their tails (the last run's end and
	 * tail are tail_end and tail, copied here when read); notes form:
	 * the fragments' ranges in line 4, line 5 unused. Not cleared with
	 * the queue: nsmall says what is valid, and each form's start sets
	 * soff past its entries to INT32_MAX for the vector tests. */
	_Alignas(64) uint32_t soff[DFR_SMALL_RUNS];
	uint32_t send[DFR_SMALL_RUNS];
	struct rxp_pkt *stail[DFR_SMALL_RUNS];
	/* Line 6: what each of pf[] was when it was taken, so that a
	 * datagram of at most DFR_PF fragments completes without reading
	 * any fragment but the first (frag_home, defrag_runs.c): its data's
	 * offset in its head buffer, and its offset in the datagram in
	 * 8-byte units, with DFR_FOFF_AWAY set when it is not a packet at
	 * home in the table's home pool (dfr_note_frag). Exact, as pf[] is:
	 * a queued fragment does not change. Then the offset-0 fragment,
	 * once here: the result, whose second line and frag array
	 * completion writes; and where its IP header is, which completion
	 * rewrites (a hint). */
	uint32_t fdoff[DFR_PF];
	uint16_t foff[DFR_PF];
	struct rxp_pkt *pkt0;
	uint8_t *hdr0;
} __attribute__((aligned(64)));
_Static_assert(offsetof(struct dfr_queue, expires) == 64, "dfr_queue line 1 starts at expires");
_Static_assert(offsetof(struct dfr_queue, pf) == 128, "dfr_queue line 2 starts at pf");
_Static_assert(offsetof(struct dfr_queue, tq) == 192, "dfr_queue line 3 starts at tq");
_Static_assert(offsetof(struct dfr_queue, soff) == 256, "dfr_queue small runs start at line 4");
_Static_assert(offsetof(struct dfr_queue, fdoff) == 384, "dfr_queue fragment notes are line 6");
_Static_assert(sizeof(struct dfr_queue) == 448, "dfr_queue is seven cache lines");
#define DFR_QUEUE_HOT offsetof(struct dfr_queue, soff) /* what queue_new clears */

TAILQ_HEAD(dfr_fifo, dfr_queue);

/* Sources, by a keyed hash of (family, address, zone) into DFR_SRC_SLOTS
 * (collisions only share a slot): each one's max_dist counter, how many
 * queues it holds, and when it last completed a datagram. Pressure ranks
 * queues by the standing of their source when they were made (cls):
 *   GOOD     the source completed a datagram within the horizon (two
 *            typical lifetimes of a completed queue, and two gaps);
 *   SUSPECT  it has held queues for longer than the horizon and completed
 *            nothing in it;
 *   NEW      anything else: a source that just started, or any source
 *            before the table has completed a datagram (no horizon yet).
 * A FragmentSmack sender becomes SUSPECT a horizon after it starts; a
 * sender whose datagrams complete is GOOD. Queues are kept in one timer FIFO per
 * family and class, so each FIFO is in creation (and expiry) order. */
#define DFR_SRC_SLOTS 4096u
enum { DFR_CLS_SUSPECT, DFR_CLS_NEW, DFR_CLS_GOOD, DFR_NCLS };
#define DFR_NFIFO (2 * DFR_NCLS)
struct dfr_src {
	uint32_t rid; /* IPv4 fragments seen from it (max_dist) */
	uint32_t nq; /* queues it holds */
	uint64_t last_ok; /* t->seq at its last completion + 1; 0: never */
	uint64_t since; /* t->seq when it last went from no queue to one */
};

#define DFR_P_SKIPPED 1u /* a gap longer than its others: it missed a turn */
#define DFR_P_TRACKED 8u /* counted in its source's nq (made while watching) */

/* q's class: its source's standing when it was made. */
static inline unsigned dfr_cls(const struct dfr_queue *q)
{
	return (q->pst >> 1) & 3u;
}

/* Which timer FIFO a queue of family and class cls goes in. */
static inline uint8_t dfr_fifo_of(uint8_t family, unsigned cls)
{
	return (uint8_t)((family == 6) + 2u * cls);
}

/* Datagrams given up under pressure, a set of DFR_TOMB_WAYS per cache
 * line: keyed tags of their keys and when a fragment of each was last seen
 * (t->seq). See defrag_pressure.c. */
#define DFR_TOMB_WAYS 8
struct dfr_tomb {
	uint32_t tag[DFR_TOMB_WAYS]; /* 0: empty */
	uint32_t seq[DFR_TOMB_WAYS];
} __attribute__((aligned(64)));

struct rxp_defrag_table {
	struct rxp_defrag_config cfg;
	struct rxp_defrag_counters c;
	unsigned char hkey[crypto_shorthash_KEYBYTES];
	struct dfr_queue **buckets;
	uint32_t bmask;
	uint32_t smask;
	uint32_t *slots; /* queue index + 1, 0 for none; see slot_index() */
	uint32_t ndisplaced; /* queues in the SipHash table */
	struct dfr_queue *qarr; /* max_queues, mapped; touched as used */
	size_t qarr_bytes;
	uint32_t nused; /* queues of qarr handed out at least once */
	struct dfr_fifo freel; /* released queues, linked through tq */
	struct dfr_fifo fifo[DFR_NFIFO]; /* by dfr_fifo_of(): family, class */
	/* At most the earliest expiry of a queue in the FIFOs (UINT64_MAX:
	 * none was armed since the last scan), so that rxp_defrag_expire,
	 * called per packet, reads no FIFO before anything is due. */
	uint64_t exp_min;
	uint32_t qcharge; /* what a queue costs beyond its fragments */
	uint64_t watch_mem; /* half the cap: see dfr_watching() */
	/* The fast path (defrag.c) takes a fragment only while the table's
	 * memory with it stays within this: the lower of the cap and
	 * watch_mem, so that nothing the pressure policy decides or watches
	 * can happen on it; 0 (never) unless the table is strict, local and
	 * with the evicting pressure policy. */
	uint64_t fast_mem;
	/* The packet pool of the first fragment the table took: fragments of
	 * it at home can be noted in their queue's line 6 (dfr_note_frag).
	 * One pool, so that a queue's noted fragments share their pool. */
	const struct rxp_pktpool *home_pool;
	bool ev_frag; /* dfr_wants(t, RXP_DEFRAG_EV_FRAG): tested per fragment */
	uint64_t seq; /* fragments seen so far (atomic ones aside): the clock of
		       * gaps, ages and pressure's order */
	uint64_t next_qid;
	/* Per class: moving averages of queues' gaps, and of |gap - average|,
	 * times 16. */
	uint32_t gap16[DFR_NCLS];
	uint32_t dev16[DFR_NCLS];
	/* Pressure (defrag_pressure.c): the stale scan's place in each FIFO,
	 * and the tags of datagrams given up under pressure. */
	struct dfr_queue *scan[DFR_NFIFO];
	struct dfr_tomb *tomb;
	size_t tomb_bytes;
	uint32_t tmask;
	uint64_t tomb_until; /* t->seq past which no tag can be alive */
	struct dfr_src *src;
	uint64_t skey[3]; /* the source hash's secret multipliers */
	uint64_t life16; /* moving average of completed queues' lifetimes, x16 */
	const struct dfr_storage *st; /* chosen with the table (config.policy) */
	/* rxp_defrag_zone() for the storage (defrag.c), chosen with it. */
	struct rxp_pkt *(*frag)(struct rxp_defrag_table *t, struct rxp_pkt *pkt, uint32_t zone,
				uint64_t now);
	union { /* the storage's own */
		struct { /* runs (defrag_runs.c) */
			/* free run nodes, a stack of pointers (popping one
			 * reads no node, so a cold node costs a write, not a
			 * stalled load) */
			struct dfr_run **runfree;
			uint32_t nrunfree, runcap; /* runcap: every node there is */
			uint32_t runnext; /* nodes below this were handed out */
			struct dfr_run *runmem;
		};
		struct { /* policy (defrag_policy.c) */
			uint8_t *blockmem; /* 1 KiB per queue */
			uint16_t *owner; /* scratch, one entry per 8-byte payload block */
			struct rxp_pkt **fragv; /* scratch, fragments in arrival order */
			uint8_t *pdata, *ptmp; /* scratch, 64 KiB each */
		};
	};
};

/* Whether the event hook takes events of type ty (config.event_mask,
 * made all types at create when 0). */
static inline bool dfr_wants(const struct rxp_defrag_table *t, enum rxp_defrag_event_type ty)
{
	return t->cfg.event_cb && ((t->cfg.event_mask >> ty) & 1u);
}

static inline bool dfr_has_free(const struct rxp_defrag_table *t)
{
	return !TAILQ_EMPTY(&t->freel) || t->nused < t->cfg.max_queues;
}

/* Whether tsize more bytes (and, for newq, a new queue) fit under the cap. */
static inline bool dfr_fits(const struct rxp_defrag_table *t, uint64_t tsize, bool newq)
{
	if (!newq)
		return t->c.mem + tsize <= t->cfg.mem_limit;
	return t->c.mem + tsize + t->qcharge <= t->cfg.mem_limit && dfr_has_free(t);
}

/* Whether a fragment of payload [off, end) (mf: more follow) would
 * complete strict queue q (no overlap in it). */
static inline bool dfr_completes_at(const struct dfr_queue *q, uint32_t off, uint32_t end, bool mf)
{
	uint8_t fl = q->flags | (off == 0 ? DFR_F_FIRST : 0) | (!mf ? DFR_F_LAST : 0);
	uint32_t len = !mf || end > q->len ? end : q->len;

	/* & rather than &&: in a shuffled order neither half is predictable,
	 * and one branch mispredicts less than two (callgrind --branch-sim). */
	return (fl == (DFR_F_FIRST | DFR_F_LAST)) & (q->meat + (end - off) == len);
}

static inline bool dfr_completes(const struct dfr_queue *q, const struct dfr_info *fi)
{
	return dfr_completes_at(q, fi->off, fi->end, fi->mf);
}

/* A key's slot in t->slots from its words (slot_index in defrag_table.c
 * makes them from a key; the fast path in defrag.c from the header): w0
 * family and protocol, w1 zone and the source's first four bytes, w2 the
 * IPv4 destination (IPv6: a mix of the rest of both addresses). The id is
 * added, not mixed: see slot_index. */
/* w2 for an IPv6 key: a mix of its bytes 16-43 (the addresses but for the
 * source's first four), taken as words x2, x3, x4 (8 bytes each) and x5
 * (the last 4). */
static inline uint64_t dfr_slot6_mix(uint64_t x2, uint64_t x3, uint64_t x4, uint32_t x5)
{
	uint64_t w2 = (x2 ^ x3) * 0xff51afd7ed558ccdull;

	w2 = (w2 ^ x4) * 0xff51afd7ed558ccdull;
	return (w2 ^ x5) * 0xff51afd7ed558ccdull;
}

static inline uint32_t dfr_slot_of(const struct rxp_defrag_table *t, uint64_t w0, uint64_t w1,
				   uint64_t w2, uint32_t id)
{
	w0 = (w0 ^ (w1 * 0x9e3779b97f4a7c15ull) ^ (w2 << 21)) * 0xc4ceb9fe1a85ec53ull;
	return ((uint32_t)(w0 >> 32) + id) & t->smask;
}

/* Gaps are counted in fragments the table saw (t->seq); longer ones count
 * as this long (a datagram that waited that long is stale whatever else). */
#define DFR_GAP_MAX (1u << 24)

/* Whether a datagram given up under pressure may still be remembered, so
 * that a fragment without a queue must be looked up in the tags. */
static inline bool dfr_tombs_live(const struct rxp_defrag_table *t)
{
	return t->seq < t->tomb_until;
}

/* Whether the table keeps what pressure decisions need (sources' standing,
 * the classes' gaps): while memory is past half the cap, or datagrams given
 * up under pressure may be coming back. Below that nothing can be short of
 * memory soon, and the work is not done: half a cap of traffic is time
 * enough to learn the gaps and standings again before the cap is reached. */
static inline bool dfr_watching(const struct rxp_defrag_table *t)
{
	return t->c.mem > t->watch_mem || dfr_tombs_live(t);
}

/* How far a gap of about g may stray, in class cls, before it is not the
 * steady gap of datagrams taking turns: four typical deviations, and an
 * eighth of g (the deviation is a moving average, and turns shift a little
 * as datagrams of other sizes come and go). */
static inline uint32_t dfr_gap_margin(const struct rxp_defrag_table *t, unsigned cls, uint32_t g)
{
	return 4 * (t->dev16[cls] >> 4) + g / 8 + 1;
}

/* A gap seen in class c (a queue's, or a datagram's that was given up
 * under pressure and is remembered): the class's moving averages of gaps
 * and of their deviation (1/16 per gap; the first gap seen sets the
 * average). Returns gap, at most DFR_GAP_MAX. dfr_gap_note(): a fragment
 * came gap fragments (t->seq) after q's previous one: q's
 * longest gap, its class's moving averages of gaps and of their deviation
 * from the average (1/16 per gap; the first gap seen sets the average), and
 * whether this gap is longer than q's earlier ones by more than the margin:
 * datagrams that take turns with the others come at a steady gap, and one
 * that skips a turn has most likely lost a fragment (a shuffled order does
 * not change the gap, only which fragment comes). Classes keep their own
 * averages, so a flood's irregular gaps do not blur a sender's steady ones. */
static inline uint32_t dfr_gap_avg(struct rxp_defrag_table *t, unsigned c, uint32_t gap)
{
	uint32_t avg, dev;

	if (gap > DFR_GAP_MAX)
		gap = DFR_GAP_MAX;
	if (rxp_unlikely(!t->gap16[c]))
		t->gap16[c] = gap << 4;
	avg = t->gap16[c] >> 4;
	dev = gap > avg ? gap - avg : avg - gap;
	t->gap16[c] += gap - avg;
	t->dev16[c] += dev - (t->dev16[c] >> 4);
	return gap;
}

/* Whether a gap of gap after q's earlier ones (at most gapmax) says q has
 * skipped a turn: longer than any before by more than the margin. (Shorter
 * gaps say nothing: turns come faster as the datagrams in flight thin out.) */
static inline bool dfr_gap_skips(const struct rxp_defrag_table *t, const struct dfr_queue *q,
				 uint32_t gap)
{
	return q->gapmax && gap > q->gapmax + dfr_gap_margin(t, dfr_cls(q), q->gapmax);
}

static inline void dfr_gap_note(struct rxp_defrag_table *t, struct dfr_queue *q, uint32_t gap)
{
	if (gap > DFR_GAP_MAX)
		gap = DFR_GAP_MAX;
	if (rxp_unlikely(dfr_watching(t))) {
		dfr_gap_avg(t, dfr_cls(q), gap);
		if (dfr_gap_skips(t, q, gap))
			q->pst |= DFR_P_SKIPPED;
	}
	/* a store either way, so no branch: whether this gap is the
	 * longest is a coin toss in a shuffled order */
	q->gapmax = gap > q->gapmax ? gap : q->gapmax;
}

/* The table releases n bytes. Its high water is taken here, where the
 * memory held falls, and when the counters are read, rather than each
 * time it rises: once per queue or so instead of once per fragment, for
 * the same figure (the peak is always just before a fall or now). */
static inline void dfr_mem_fall(struct rxp_defrag_table *t, uint64_t n)
{
	if (t->c.mem > t->c.mem_high_water)
		t->c.mem_high_water = t->c.mem;
	t->c.mem -= n;
}

/* Below this much memory held by the table (its fragments, at about
 * 2.4 KiB each with 1500-byte frames, and queues), the fast path does not
 * prefetch what completion reads: it is all in this core's caches, and
 * finding out whether a fragment completes its datagram, to ask for it
 * early, costs instructions for nothing (see dfr_frag_runs). */
#define DFR_PREFETCH_MEM (1024u * 1024u)

/* Whether q's first n (at most DFR_PF) fragments are all noted at home
 * (dfr_note_frag): completion can then take them without reading them. */
static inline bool dfr_frags_home(const struct dfr_queue *q, uint32_t n)
{
	uint64_t w0, w1, m0, m1;

	__builtin_memcpy(&w0, &q->foff[0], 8);
	__builtin_memcpy(&w1, &q->foff[4], 8);
	/* the DFR_FOFF_AWAY bit of each of the first n (n <= 8) */
	m0 = n >= 4 ? 0x8000800080008000ull : ((1ull << (16 * n)) - 1) & 0x8000800080008000ull;
	m1 = n >= 8  ? 0x8000800080008000ull
	     : n > 4 ? ((1ull << (16 * (n - 4))) - 1) & 0x8000800080008000ull
		     : 0;
	return !((w0 & m0) | (w1 & m1));
}

/* Building touches every fragment (but for those noted at home, whose
 * notes it reads instead) and the result's second line and frag array,
 * freeing the datagram their page headers, and finishing it the first
 * fragment's IP header, each long out of cache with many datagrams in
 * flight: ask for them all at once. A fragment at home has its page
 * header in the line before it (RXP_PKT_HOME_OFF), which is asked for
 * without reading the fragment; for one not at home that line is only a
 * guess. Always inlined: as a function of its own, GCC finds it free of
 * side effects and drops the call (it did, and k=8 in order lost a third
 * of its speed). */
static inline __attribute__((always_inline)) void dfr_prefetch_frags(const struct dfr_queue *q)
{
	const uint32_t n = q->nfrags < DFR_PF ? q->nfrags : DFR_PF;
	const bool home = dfr_frags_home(q, n) && q->nfrags <= DFR_PF;

	for (uint32_t i = 0; i < n; i++) {
		if (!home)
			__builtin_prefetch(q->pf[i]);
		__builtin_prefetch((const char *)q->pf[i] - RXP_PKT_HOME_OFF);
	}
	if (q->flags & DFR_F_FIRST) {
		/* The result: its header, its second line and the start of
		 * its frag array are written. */
		const char *h = (const char *)q->pkt0;

		__builtin_prefetch(q->hdr0, 1);
		__builtin_prefetch(h + 64, 1);
		__builtin_prefetch(h + 128, 1);
		__builtin_prefetch(h + 192, 1);
	}
}

/* How many bytes of an upper-layer header of protocol nh a first IPv6
 * fragment must carry (RFC 7112, 8200 4.5): what the general parse and
 * the fast path both ask. UINT32_MAX for an extension header or a
 * fragment header, which are not upper-layer. */
static inline uint32_t dfr_upper_need(uint8_t nh)
{
	switch (nh) {
	case RXP_IPPROTO_HOPOPTS:
	case RXP_IPPROTO_ROUTING:
	case RXP_IPPROTO_DSTOPTS:
	case RXP_IPPROTO_AH:
	case RXP_IPPROTO_FRAGMENT:
		return UINT32_MAX;
	case RXP_IPPROTO_TCP:
		return 20;
	case RXP_IPPROTO_UDP:
	case RXP_IPPROTO_ICMPV6:
		return 8;
	case RXP_IPPROTO_NONE:
		return 0;
	default:
		return 1;
	}
}

/* An IPv6 queue's zone: the caller's for a link-local or multicast
 * destination (or every one, zone_all), else 0. */
static inline uint32_t dfr_ipv6_zone(const uint8_t *daddr, uint32_t zone, bool zone_all)
{
	bool scoped = daddr[0] == 0xff || (daddr[0] == 0xfe && (daddr[1] & 0xc0) == 0x80);

	return zone_all || scoped ? zone : 0;
}

/* Family glue. parse returns 1 for a fragment, 0 for a packet that is not
 * one (or a v6 atomic fragment: *atomic set), -reason for a bad one. The
 * IPv4 parser is here, inline, because it runs for every fragment and the
 * caller reads only some of what it fills in. Reads go through
 * rxp_pkt_header_pointer when the header is not linear. */
static inline int dfr_ipv4_parse(const struct rxp_pkt *pkt, struct dfr_info *fi, uint32_t zone)
{
	struct rxp_iphdr buf;
	const struct rxp_iphdr *ip;
	unsigned ihl, tot, fo;

	/* The header is nearly always in the linear part: no call then. */
	if (rxp_pkt_headlen(pkt) >= sizeof(buf))
		ip = (const struct rxp_iphdr *)(const void *)pkt->data;
	else
		ip = rxp_pkt_header_pointer(pkt, 0, sizeof(buf), &buf);
	if (!ip)
		return -RXP_DROP_IP_TRUNCATED;
	ihl = rxp_ip_hlen(ip);
	tot = ntohs(ip->tot_len);
	fo = ntohs(ip->frag_off);
	/* Not a fragment: not ours to judge, whatever else is wrong with it. */
	if (!(fo & (RXP_IP_MF | RXP_IP_OFFMASK)))
		return 0;
	if ((ip->ver_ihl >> 4) != 4 || ihl < RXP_IPV4_HLEN || tot < ihl)
		return -RXP_DROP_IP_HDR;
	if (tot > pkt->len)
		return -RXP_DROP_IP_TRUNCATED;
	/* Every field set (no memset): this runs for every fragment. The
	 * key's pad must be zero, as keys are compared whole. */
	fi->key.family = 4;
	fi->key.proto = ip->protocol;
	fi->key.pad = 0;
	fi->key.id = ntohs(ip->id);
	fi->key.zone = zone;
	memcpy(fi->key.addr, &ip->saddr, 4);
	memcpy(fi->key.addr + 4, &ip->daddr, 4);
	fi->off = (fo & RXP_IP_OFFMASK) * 8u;
	fi->end = fi->off + (tot - ihl);

	fi->hdrlen = (uint16_t)ihl;
	fi->mf = fo & RXP_IP_MF;
	fi->df = fo & RXP_IP_DF;
	fi->ecn = ip->tos & 3;
	fi->nhoff = 0;
	fi->nexthdr = 0;
	/* An MF fragment's length not a multiple of 8 is rounded down, as
	 * Linux does; the cut bytes are trimmed by the caller. */
	fi->end &= fi->mf ? ~7u : ~0u;
	return 1;
}

int dfr_ipv6_parse(const struct rxp_pkt *pkt, struct dfr_info *fi, uint32_t zone, bool zone_all,
		   bool *atomic);
/* Fix the header of a result whose data is at the IP header and whose
 * linear part holds the header; payload bytes = plen. 0 or -reason. */
int dfr_ipv4_finish(struct rxp_pkt *pkt, const struct dfr_queue *q, uint32_t plen, uint8_t ecn,
		    bool df);
int dfr_ipv6_finish(struct rxp_pkt *pkt, const struct dfr_queue *q, uint32_t plen, uint8_t ecn);
/* Remove the fragment header of a v6 atomic fragment in place. */
int dfr_ipv6_strip(struct rxp_pkt *pkt, const struct dfr_info *fi);

/* On the definition of a function declared here that the fragment entry
 * (defrag.c) calls for every fragment or datagram: builds that optimise
 * across files (LTO: release) inline it there, as if it were the entry's
 * own; others call it. */
#define DFR_HOT inline __attribute__((always_inline))

/* The table (defrag_table.c). */
uint64_t dfr_key_hash(const struct rxp_defrag_table *t, const struct dfr_key *k);
/* The queue of key k or NULL. *slot gets the key's slot; *h the key's
 * SipHash, when it was computed (*hashed). */
struct dfr_queue *dfr_lookup(struct rxp_defrag_table *t, const struct dfr_key *k, uint64_t *h,
			     bool *hashed, uint32_t *slot);
/* A new queue for k in its slot (or displaced; h as from dfr_lookup). The
 * caller has checked that a queue is free (dfr_fits). */
struct dfr_queue *dfr_queue_new(struct rxp_defrag_table *t, const struct dfr_key *k, uint64_t h,
				bool hashed, uint32_t slot, uint64_t now);
/* Give q up for max_dist and start it again, empty, as a new datagram. */
__attribute__((cold)) void dfr_queue_restart(struct rxp_defrag_table *t, struct dfr_queue *q,
					     uint64_t now);
/* Give q up for r (counted once, its event, its fragments dropped) and free it. */
void dfr_queue_kill(struct rxp_defrag_table *t, struct dfr_queue *q, enum rxp_drop_reason r);
/* Kill q and the arriving fragment pkt (data past its header) for r.
 * Consumes pkt. */
__attribute__((cold)) void dfr_kill_with(struct rxp_defrag_table *t, struct dfr_queue *q,
					 struct rxp_pkt *pkt, enum rxp_drop_reason r);
/* Refuse fi's fragment pkt (data hdrlen bytes past its IP header) for r
 * before any queue took it; q is its queue or NULL. Consumes pkt. */
__attribute__((cold)) void dfr_refuse(struct rxp_defrag_table *t, struct dfr_queue *q,
				      const struct dfr_info *fi, struct rxp_pkt *pkt,
				      uint32_t hdrlen, enum rxp_drop_reason r);
/* What the storage's refusal r (DFR_DUP...) of pkt (data past its header)
 * does to it and to q. Consumes pkt. */
__attribute__((noinline, cold)) void dfr_insert_failed(struct rxp_defrag_table *t,
						       struct dfr_queue *q,
						       const struct dfr_info *fi,
						       struct rxp_pkt *pkt, int r);
/* Complete q, whose last fragment was last: the datagram, or NULL when it
 * failed (counted). prefetched: dfr_prefetch_frags(q) was called. */
struct rxp_pkt *dfr_finish(struct rxp_defrag_table *t, struct dfr_queue *q,
			   const struct rxp_pkt *last, bool prefetched);
/* A fragment-level event (FRAG, REFUSED) for fi's fragment pkt, whose
 * data is hdrlen bytes past its IP header (the caller checked that there
 * is an event hook). */
__attribute__((cold)) void dfr_ev_frag(struct rxp_defrag_table *t, const struct dfr_queue *q,
				       const struct dfr_info *fi, struct rxp_pkt *pkt,
				       uint32_t hdrlen, enum rxp_defrag_event_type type,
				       enum rxp_drop_reason r);
/* The same from its parts: a fragment of key k, payload [off, end). */
void dfr_ev_frag_at(struct rxp_defrag_table *t, const struct dfr_queue *q, const struct dfr_key *k,
		    uint32_t off, uint32_t end, bool mf, bool df, struct rxp_pkt *pkt,
		    uint32_t hdrlen, enum rxp_defrag_event_type type, enum rxp_drop_reason r);
/* k's source's slot in t->src, and a source's standing now (DFR_CLS_*). */
uint32_t dfr_src_slot(const struct rxp_defrag_table *t, const struct dfr_key *k);
uint8_t dfr_src_class(const struct rxp_defrag_table *t, const struct dfr_src *s);
/* An OVERLAP event for q (the caller checked that there is an event hook). */
void dfr_ev_overlap(struct rxp_defrag_table *t, const struct dfr_queue *q, uint32_t start,
		    uint32_t end, bool differ, bool dup);

/* rxp_defrag_zone() specialised for each storage (defrag.c): t->frag. */
void dfr_prefetch(const struct rxp_defrag_table *t, uint32_t slot);
struct rxp_pkt *dfr_frag_runs(struct rxp_defrag_table *t, struct rxp_pkt *pkt, uint32_t zone,
			      uint64_t now);
struct rxp_pkt *dfr_frag_policy(struct rxp_defrag_table *t, struct rxp_pkt *pkt, uint32_t zone,
				uint64_t now);

/* The pressure policy (defrag_pressure.c), for a fragment fi of tsize bytes
 * that does not fit, or, while tags of datagrams given up may be alive,
 * that would open a queue or shows that its queue missed a turn; *qp is
 * its queue or NULL; h is the key's SipHash
 * when hashed. Returns 0 when it may be queued (room was made; a new queue
 * may be made), or the drop reason for it; *qp is then NULL if its queue
 * was given up. */
int dfr_pressure(struct rxp_defrag_table *t, struct dfr_queue **qp, const struct dfr_info *fi,
		 uint64_t h, bool hashed, uint32_t tsize);

/*
 * Queue storage: how a queue holds its fragments, chosen once with the
 * table. Runs (strict: Linux's rules, defrag_runs.c) keep contiguous
 * fragments as runs and judge duplicates and overlaps as they come;
 * policy (the target-based policies, defrag_policy.c) keeps fragments in
 * arrival order with a map of the 8-byte blocks received and resolves
 * overlaps at completion. The hot operations (insert, complete) are called
 * by name in the entry point's specialisations (defrag.c); the rest
 * through the table's st.
 *
 * insert returns DFR_OK (the queue owns pkt, whose data is at its payload
 * and, in policy mode, whose cb holds off and end), DFR_DUP, DFR_OVERLAP,
 * DFR_NOMEM (runs: no run node left) or DFR_TOO_MANY (policy: too many
 * fragments); otherwise the caller keeps pkt.
 */
enum { DFR_OK = 0, DFR_DUP = 1, DFR_OVERLAP = 2, DFR_TOO_MANY = 3, DFR_NOMEM = 4 };

struct dfr_storage {
	uint32_t qcharge; /* bytes charged per queue beyond struct dfr_queue */
	/* The table's storage memory, at create; freed at destroy. */
	int (*init)(struct rxp_defrag_table *t);
	void (*fini)(struct rxp_defrag_table *t);
	/* A queue (new, or restarted by max_dist) holds nothing. */
	void (*reset)(struct rxp_defrag_table *t, struct dfr_queue *q);
	/* A new queue's cleared lines (0, 1, 3) already reset it: no call
	 * then, which would make the fast path save its registers around it. */
	bool reset_by_clear;
	/* Build the datagram from a complete queue (which is left empty): data
	 * at the IP header (pushed back), or NULL after dropping every
	 * fragment (RXP_DROP_NOMEM). */
	struct rxp_pkt *(*build)(struct rxp_defrag_table *t, struct dfr_queue *q);
	/* Call fn on every fragment of q, which takes it, and empty q. */
	void (*drain)(struct rxp_defrag_table *t, struct dfr_queue *q,
		      void (*fn)(void *, struct rxp_pkt *), void *arg);
};

extern const struct dfr_storage dfr_runs_storage, dfr_policy_storage;

int dfr_runs_insert(struct rxp_defrag_table *t, struct dfr_queue *q, struct rxp_pkt *pkt,
		    uint32_t off, uint32_t end);
/* Runs q, against the fragment pkt (payload [off, end), data at its
 * payload) that the runs found a duplicate or overlap: the range both hold
 * ([*lo, *hi)) and whether their bytes there differ. Reads only. */
bool dfr_runs_compare(const struct dfr_queue *q, const struct rxp_pkt *pkt, uint32_t off,
		      uint32_t end, uint32_t *lo, uint32_t *hi);

int dfr_policy_insert(struct rxp_defrag_table *t, struct dfr_queue *q, struct rxp_pkt *pkt);
static inline bool dfr_policy_complete(const struct dfr_queue *q)
{
	return q->nblocks == (q->len + 7) / 8;
}

#endif
