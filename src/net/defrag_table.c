/*
 * The reassembly table: where queues live and how they end. Lookup (the
 * slot table and the keyed hash), a queue's life (made, restarted by
 * max_dist, unlinked, released), the timer FIFOs, every outcome of a
 * datagram or of a refused fragment, the events, and the sources that
 * max_dist and the pressure policy count. The fragment entry is in
 * defrag.c, the storages in defrag_runs.c and defrag_policy.c, the
 * pressure policy in defrag_pressure.c.
 *
 * Owns: an array of max_queues queues and (strict mode) the run nodes,
 * reserved with the table and touched as they are first used (no allocation
 * on the data path), the slot table and a
 * bucket array of chains keyed by SipHash under a random per-table key (see
 * slot_index), one timer FIFO per family and class (the timeout is fixed per
 * family and armed at creation, so creation order is expiry order), and
 * per-source counters for max_dist. Invariants: every queue in use is either
 * in its slot (q->slot) or in exactly one bucket chain (displaced, counted by
 * ndisplaced), and in one FIFO, except between queue_unlink and
 * queue_release while dfr_finish() builds its datagram; c.mem is the sum over
 * queues of (queue charge + truesize of its fragments); a fragment is owned
 * by exactly one queue or by the caller.
 * Each datagram given up is counted in one place, count_giveup(); each
 * refused fragment in dfr_refuse(); each completed one in dfr_finish().
 * See include/rxpath/defrag.h for the rules and the pressure policy.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rxpath/compiler.h"
#include "rxpath/wire.h"
#include "buf/mem.h"
#include "net/defrag_internal.h"

static void table_free(struct rxp_defrag_table *t)
{
	free(t->buckets);
	free(t->slots);
	rxp_mem_unmap(t->qarr, t->qarr_bytes);
	rxp_mem_unmap(t->tomb, t->tomb_bytes);
	free(t->src);
	if (t->st)
		t->st->fini(t);
	free(t);
}

/* Zeroed address space of at least bytes, untouched until used (huge
 * pages asked for where it spans them); NULL on failure. From a huge page
 * up it is rounded up to whole huge pages; less is not rounded up to one:
 * a small table (64 queues: 28 KiB of queues) would take a huge page for
 * each array, which the first queue made faults in and the kernel clears
 * whole (2 MiB). */
static void *lazy_alloc(size_t bytes, size_t *got)
{
	size_t huge = (size_t)2 << 20;

	if (bytes >= huge)
		bytes = (bytes + huge - 1) & ~(huge - 1);
	return rxp_mem_map(bytes, 1, got);
}

struct rxp_defrag_table *rxp_defrag_table_create(const struct rxp_defrag_config *cfg)
{
	struct rxp_defrag_config c = cfg ? *cfg : (struct rxp_defrag_config){0};
	struct rxp_defrag_table *t;
	uint32_t nb = 1;

	if ((unsigned)c.policy >= RXP_DEFRAG_POLICY_MAX || c.max_queues > (1u << 24)) {
		errno = EINVAL;
		return NULL;
	}
	if (sodium_init() < 0) {
		errno = ENOMEM;
		return NULL;
	}
	if (!c.mem_limit)
		c.mem_limit = 4u << 20;
	if (!c.max_queues)
		c.max_queues = 8192;
	if (!c.timeout_v4_ns)
		c.timeout_v4_ns = 30ull * 1000000000ull;
	if (!c.timeout_v6_ns)
		c.timeout_v6_ns = 60ull * 1000000000ull;
	if (!c.max_dist)
		c.max_dist = 64;
	if (!c.event_mask)
		c.event_mask = ~0u;
	t = calloc(1, sizeof(*t));
	if (!t)
		goto nomem;
	t->cfg = c;
	/* The storage, chosen once: runs for Linux's rules, arrival order and
	 * a block map for the target policies. */
	t->st = c.policy == RXP_DEFRAG_STRICT ? &dfr_runs_storage : &dfr_policy_storage;
	t->frag = c.policy == RXP_DEFRAG_STRICT ? dfr_frag_runs : dfr_frag_policy;
	t->qcharge = (uint32_t)sizeof(struct dfr_queue) + t->st->qcharge;
	t->watch_mem = c.mem_limit / 2;
	t->ev_frag = dfr_wants(t, RXP_DEFRAG_EV_FRAG);
	if (c.policy == RXP_DEFRAG_STRICT && !c.forward && c.pressure == RXP_DEFRAG_PRESSURE_EVICT)
		t->fast_mem = t->watch_mem;
	randombytes_buf(t->hkey, sizeof(t->hkey));
	while (nb < c.max_queues)
		nb <<= 1;
	t->bmask = nb - 1;
	t->buckets = calloc(nb, sizeof(t->buckets[0]));
	/* Twice the buckets: few queues are displaced from their slot. */
	t->smask = 2 * nb - 1;
	t->slots = calloc(2 * (size_t)nb, sizeof(t->slots[0]));
	/* Every fragment reads its queue, one of up to max_queues spread over
	 * megabytes: huge pages spare the TLB misses. Touched as used, so a
	 * large max_queues costs what is in flight. */
	t->qarr = lazy_alloc((size_t)c.max_queues * sizeof(struct dfr_queue), &t->qarr_bytes);
	t->src = calloc(DFR_SRC_SLOTS, sizeof(t->src[0]));
	randombytes_buf(t->skey, sizeof(t->skey));
	for (int i = 0; i < 3; i++)
		t->skey[i] |= 1; /* odd multipliers */
	/* Tags of datagrams given up under pressure, which outnumber queues
	 * by as much as the working set exceeds the cap: 32 per queue, in
	 * sets of 8 (mapped, touched as used). */
	t->tmask = 4 * nb - 1;
	t->tomb = lazy_alloc((size_t)4 * nb * sizeof(t->tomb[0]), &t->tomb_bytes);
	if (!t->buckets || !t->slots || !t->qarr || !t->src || !t->tomb)
		goto nomem;
	if (t->st->init(t))
		goto nomem;
	TAILQ_INIT(&t->freel);
	for (int f = 0; f < DFR_NFIFO; f++)
		TAILQ_INIT(&t->fifo[f]);
	t->exp_min = UINT64_MAX;
	return t;
nomem:
	if (t)
		table_free(t);
	errno = ENOMEM;
	return NULL;
}

/* SipHash works in 8-byte blocks plus one final block that takes the last
 * 0-7 bytes and the length: an IPv4 key packed into 15 bytes (addresses, id,
 * protocol, zone) costs two blocks where its 20-byte struct form costs three.
 * The family need not be hashed: IPv4 and IPv6 inputs differ in length, and
 * lookup compares whole keys. */
uint64_t dfr_key_hash(const struct rxp_defrag_table *t, const struct dfr_key *k)
{
	uint64_t h;

	if (k->family == 4) {
		unsigned char b[15];
		uint16_t id = (uint16_t)k->id;

		memcpy(b, k->addr, 8);
		memcpy(b + 8, &id, 2);
		b[10] = k->proto;
		memcpy(b + 11, &k->zone, 4);
		crypto_shorthash((unsigned char *)&h, b, sizeof(b), t->hkey);
	} else {
		crypto_shorthash((unsigned char *)&h, (const unsigned char *)k, dfr_key_len(k),
				 t->hkey);
	}
	return h;
}

/* Whole-key equality; IPv4 keys (20 bytes) without a call. */
static inline __attribute__((always_inline)) bool key_eq(const struct dfr_key *a,
							 const struct dfr_key *b)
{
	uint64_t a0, a1, b0, b1;
	uint32_t a2, b2;

	if (a->family != 4 || b->family != 4)
		return a->family == b->family && !memcmp(a, b, dfr_key_len(a));
	memcpy(&a0, a, 8);
	memcpy(&b0, b, 8);
	memcpy(&a1, (const uint8_t *)a + 8, 8);
	memcpy(&b1, (const uint8_t *)b + 8, 8);
	memcpy(&a2, (const uint8_t *)a + 16, 4);
	memcpy(&b2, (const uint8_t *)b + 16, 4);
	return ((a0 ^ b0) | (a1 ^ b1) | (a2 ^ b2)) == 0;
}

static struct dfr_queue **bucket(struct rxp_defrag_table *t, uint64_t h)
{
	return &t->buckets[h & t->bmask];
}

/*
 * Where queues are found. The slot table (t->slots) is a direct-mapped array
 * of queue indices, indexed by a cheap unkeyed hash of the key: a new queue
 * takes its key's slot when the slot is free, and then lookup finds it
 * there, and nothing else is needed: no SipHash, no bucket chain. A queue
 * whose slot is taken (by a queue of another key) goes in the SipHash table
 * instead, displaced, and lookups that miss the slot search that table
 * while any queue is displaced. So an attacker who knows the cheap hash and
 * aims many keys at one slot gains nothing: one of them holds the slot, the
 * others are in the keyed table, where chains stay short and each costs the
 * SipHash lookup it would have cost anyway. A slot is freed with its queue.
 */
static uint32_t slot_index(const struct rxp_defrag_table *t, const struct dfr_key *k)
{
	const uint8_t *b = (const uint8_t *)k;
	uint64_t w0, w1, w2;

	memcpy(&w0, b, 8); /* family, proto, id */
	memcpy(&w1, b + 8, 8); /* zone, first 4 address bytes */
	memcpy(&w2, b + 16, 8); /* IPv4: destination (and 4 bytes not hashed) */
	w0 &= 0xffffffffu; /* the id is added, not mixed: see below */
	if (rxp_likely(k->family == 4)) {
		w2 &= 0xffffffffu;
	} else {
		uint64_t x3, x4;
		uint32_t x5;

		memcpy(&x3, b + 24, 8);
		memcpy(&x4, b + 32, 8);
		memcpy(&x5, b + 40, 4); /* the destination's last bytes */
		w2 = dfr_slot6_mix(w2, x3, x4, x5);
	}
	/* Senders number datagrams to one destination in sequence (Linux's
	 * IP ID counters, most stacks'), so the datagrams in flight between
	 * two hosts have ids close together: adding the id to a hash of the
	 * rest puts their slots side by side, sixteen to a cache line, where
	 * a hash of the id too would spend a cache miss on each. */
	return dfr_slot_of(t, w0, w1, w2, k->id);
}

DFR_HOT struct dfr_queue *dfr_lookup(struct rxp_defrag_table *t, const struct dfr_key *k,
				     uint64_t *h, bool *hashed, uint32_t *slot)
{
	struct dfr_queue *q;

	*slot = slot_index(t, k);
	*hashed = false;
	if (t->slots[*slot]) {
		q = &t->qarr[t->slots[*slot] - 1];
		/* The per-fragment line with the key's, not after it. */
		__builtin_prefetch((const char *)q + 64);
		if (key_eq(&q->key, k))
			return q;
	}
	if (!t->ndisplaced)
		return NULL;
	*h = dfr_key_hash(t, k);
	*hashed = true;
	for (q = *bucket(t, *h); q; q = q->hnext)
		if (q->hash == (uint32_t)*h && key_eq(&q->key, k))
			return q;
	return NULL;
}

/* rxp_defrag_prefetch's part: a slot, and every line of its queue.
 * An accepted fragment writes lines 1, 2 (pf) and 6 (pg) besides reading
 * line 0, one out of order the small runs (4-5), and completion reads them
 * all: fetching only lines 0-1 left the others to miss on the spot
 * (the small form's first read of soff and dfr_prefetch_frags' of pf and pg
 * were half of dfr_frag_runs' samples in rxpath defrag on the bench
 * capture, 10,000 datagrams of 4 shuffled fragments in flight). All seven:
 * that run's main thread 0.204 -> 0.178 s of user time (median of 13,
 * alternating). Reads only; the write hint is for the lines written. */
void dfr_prefetch(const struct rxp_defrag_table *t, uint32_t slot)
{
	uint32_t v = t->slots[slot];

	if (v) {
		const char *q = (const char *)&t->qarr[v - 1];

		for (size_t off = 0; off < sizeof(struct dfr_queue); off += 64)
			__builtin_prefetch(q + off, 1);
	}
}

/* What a drop of a fragment we hold looks like: the discard hook first sees
 * it as received (header pushed back), then the drop is counted. Consumes pkt. */
static void frag_drop(struct rxp_defrag_table *t, struct rxp_pkt *pkt, enum rxp_drop_reason r)
{
	struct dfr_cb *cb = dfr_cb(pkt);

	if (t->cfg.discard_cb) {
		if (cb->hdrlen) {
			rxp_pkt_push(pkt, cb->hdrlen);
			cb->hdrlen = 0;
		}
		t->cfg.discard_cb(t->cfg.discard_arg, pkt);
	}
	rxp_pkt_drop(pkt, r);
}

/* ---- events --------------------------------------------------------------- */

static void ev_key(struct rxp_defrag_event *ev, const struct dfr_key *k)
{
	ev->family = k->family;
	ev->proto = k->family == 4 ? k->proto : 0;
	ev->id = k->id;
	ev->zone = k->zone;
	ev->src = k->addr;
	ev->dst = k->addr + (k->family == 4 ? 4 : 16);
}

/* A queue-level event (DONE, GIVEUP) for q. */
static __attribute__((cold)) void ev_queue(struct rxp_defrag_table *t, const struct dfr_queue *q,
					   enum rxp_defrag_event_type type, enum rxp_drop_reason r)
{
	struct rxp_defrag_event ev = {.type = type, .reason = r, .qid = q->qid};

	ev_key(&ev, &q->key);
	ev.len = q->len;
	ev.nfrags = q->nfrags;
	t->cfg.event_cb(t->cfg.event_arg, &ev);
}

void dfr_ev_frag_at(struct rxp_defrag_table *t, const struct dfr_queue *q, const struct dfr_key *k,
		    uint32_t off, uint32_t end, bool mf, bool df, struct rxp_pkt *pkt,
		    uint32_t hdrlen, enum rxp_defrag_event_type type, enum rxp_drop_reason r)
{
	struct rxp_defrag_event ev = {
		.type = type,
		.reason = r,
		.qid = q ? q->qid : 0,
		.off = off,
		.end = end,
		.mf = mf,
		.df = df,
		.pkt = pkt,
	};

	ev_key(&ev, k);
	rxp_pkt_push(pkt, hdrlen);
	t->cfg.event_cb(t->cfg.event_arg, &ev);
	rxp_pkt_pull(pkt, hdrlen);
}

void dfr_ev_frag(struct rxp_defrag_table *t, const struct dfr_queue *q, const struct dfr_info *fi,
		 struct rxp_pkt *pkt, uint32_t hdrlen, enum rxp_defrag_event_type type,
		 enum rxp_drop_reason r)
{
	dfr_ev_frag_at(t, q, &fi->key, fi->off, fi->end, fi->mf, fi->df, pkt, hdrlen, type, r);
}

void dfr_ev_overlap(struct rxp_defrag_table *t, const struct dfr_queue *q, uint32_t start,
		    uint32_t end, bool differ, bool dup)
{
	struct rxp_defrag_event ev = {.type = RXP_DEFRAG_EV_OVERLAP,
				      .qid = q->qid,
				      .off = start,
				      .end = end,
				      .differ = differ,
				      .dup = dup};

	ev_key(&ev, &q->key);
	t->cfg.event_cb(t->cfg.event_arg, &ev);
}

/* ---- outcomes, each counted here and only here ----------------------------- */

/* A fragment refused before any queue took it (memory, queue cap, a
 * datagram given up under pressure, no run node): a failed reassembly and
 * a memory drop. q is its queue if it has one (for the event). Consumes
 * pkt, whose data is hdrlen bytes past its IP header. */
void dfr_refuse(struct rxp_defrag_table *t, struct dfr_queue *q, const struct dfr_info *fi,
		struct rxp_pkt *pkt, uint32_t hdrlen, enum rxp_drop_reason r)
{
	t->c.ReasmFails++;
	t->c.mem_drops++;
	if (dfr_wants(t, RXP_DEFRAG_EV_REFUSED))
		dfr_ev_frag(t, q, fi, pkt, hdrlen, RXP_DEFRAG_EV_REFUSED, r);
	frag_drop(t, pkt, r);
}

struct drain_arg {
	struct rxp_defrag_table *t;
	enum rxp_drop_reason r;
};

static void drain_drop(void *arg, struct rxp_pkt *p)
{
	struct drain_arg *a = arg;

	frag_drop(a->t, p, a->r);
}

/* Count q as given up for r, with its event; its fragments are the
 * caller's to drop. */
static void count_giveup(struct rxp_defrag_table *t, const struct dfr_queue *q,
			 enum rxp_drop_reason r)
{
	switch (r) {
	case RXP_DROP_TEARDOWN:
		break; /* not a failure */
	case RXP_DROP_FRAG_TIMEOUT:
		t->c.ReasmTimeout++;
		t->c.ReasmFails++;
		break;
	case RXP_DROP_FRAG_OVERLAP:
		t->c.ReasmOverlaps++;
		t->c.ReasmFails++;
		break;
	case RXP_DROP_FRAG_EVICT:
		t->c.evictions++;
		t->c.ReasmFails++;
		break;
	case RXP_DROP_FRAG_MAX_DIST:
		t->c.max_dist_flushes++;
		t->c.ReasmFails++;
		break;
	default:
		t->c.ReasmFails++;
		break;
	}
	if (dfr_wants(t, RXP_DEFRAG_EV_GIVEUP))
		ev_queue(t, q, RXP_DEFRAG_EV_GIVEUP, r);
}

/* Give q up for r: counted, its fragments dropped; q stays in the table,
 * empty. */
static void giveup(struct rxp_defrag_table *t, struct dfr_queue *q, enum rxp_drop_reason r)
{
	struct drain_arg a = {t, r};

	count_giveup(t, q, r);
	t->st->drain(t, q, drain_drop, &a);
	dfr_mem_fall(t, q->mem);
	q->mem = 0;
	q->nfrags = 0;
}

/* Take q out of its slot (or bucket chain) and timer FIFO: it can no
 * longer be found or expire. queue_release() must follow. */
static void queue_unlink(struct rxp_defrag_table *t, struct dfr_queue *q)
{
	unsigned f = q->fifo;

	if (q->slot != DFR_DISPLACED) {
		t->slots[q->slot] = 0;
	} else {
		struct dfr_queue **pp = bucket(t, q->hash);

		while (*pp != q)
			pp = &(*pp)->hnext;
		*pp = q->hnext;
		t->ndisplaced--;
	}
	if (rxp_unlikely(t->scan[f] == q))
		t->scan[f] = TAILQ_NEXT(q, tq);
	TAILQ_REMOVE(&t->fifo[f], q, tq);
}

/* An unlinked queue, its fragments gone, back to the free list. */
static void queue_release(struct rxp_defrag_table *t, struct dfr_queue *q)
{
	dfr_mem_fall(t, q->mem + t->qcharge);
	t->c.queues--;
	if (q->pst & DFR_P_TRACKED)
		t->src[q->src].nq--;
	q->key.family = 0; /* no key matches it */
	TAILQ_INSERT_HEAD(&t->freel, q, tq);
}

/* Remove q from the table; its fragments must be gone already. */
static void queue_free(struct rxp_defrag_table *t, struct dfr_queue *q)
{
	queue_unlink(t, q);
	queue_release(t, q);
}

void dfr_queue_kill(struct rxp_defrag_table *t, struct dfr_queue *q, enum rxp_drop_reason r)
{
	giveup(t, q, r);
	queue_free(t, q);
}

/* Kill q and the arriving fragment pkt (data past its header, which its
 * discard hook gets back) for r. Consumes pkt. */
void dfr_kill_with(struct rxp_defrag_table *t, struct dfr_queue *q, struct rxp_pkt *pkt,
		   enum rxp_drop_reason r)
{
	dfr_queue_kill(t, q, r);
	frag_drop(t, pkt, r);
}

static void arm(struct rxp_defrag_table *t, struct dfr_queue *q, uint64_t now)
{
	struct dfr_fifo *f = &t->fifo[q->fifo];
	struct dfr_queue *last = TAILQ_LAST(f, dfr_fifo);

	q->expires = now + (q->key.family == 6 ? t->cfg.timeout_v6_ns : t->cfg.timeout_v4_ns);
	/* Time going backwards must not break the FIFO order. */
	if (last && last->expires > q->expires)
		q->expires = last->expires;
	TAILQ_INSERT_TAIL(f, q, tq);
	if (q->expires < t->exp_min)
		t->exp_min = q->expires;
}

/* The slot of k's source: a keyed multiply-xorshift hash of its address
 * and zone under the table's secret multipliers (random per table), so
 * nobody can aim sources at another's slot; collisions only share one. */
uint32_t dfr_src_slot(const struct rxp_defrag_table *t, const struct dfr_key *k)
{
	uint64_t x = (t->skey[0] ^ k->zone ^ ((uint64_t)k->family << 32)) * t->skey[1];
	uint32_t w;

	if (rxp_likely(k->family == 4)) {
		memcpy(&w, k->addr, 4);
		x = (x ^ w) * t->skey[2];
	} else {
		for (unsigned i = 0; i < 16; i += 4) {
			memcpy(&w, k->addr + i, 4);
			x = (x ^ w) * t->skey[2];
			x ^= x >> 29;
		}
	}
	return (uint32_t)((x ^ (x >> 31)) * t->skey[1] >> 52) % DFR_SRC_SLOTS;
}

/* A source's standing now (see DFR_CLS_*). */
uint8_t dfr_src_class(const struct rxp_defrag_table *t, const struct dfr_src *s)
{
	uint64_t horizon = 2 * (t->life16 >> 4) + 2 * (uint64_t)(t->gap16[DFR_CLS_GOOD] >> 4) + 1;

	if (s->last_ok && t->seq + 1 - s->last_ok <= horizon)
		return DFR_CLS_GOOD;
	if (t->life16 && s->nq && t->seq - s->since > horizon)
		return DFR_CLS_SUSPECT;
	return DFR_CLS_NEW;
}

/* q's datagram completed: its source's standing, and the typical lifetime. */
static void src_done(struct rxp_defrag_table *t, const struct dfr_queue *q)
{
	uint64_t life = t->seq - q->born;

	t->src[q->src].last_ok = t->seq + 1;
	if (!t->life16)
		t->life16 = life << 4;
	else
		t->life16 += life - (t->life16 >> 4);
}

/* Zero line i of q. */
static inline void queue_clear_line(struct dfr_queue *q, unsigned i)
{
	typedef uint64_t v2 __attribute__((vector_size(16), may_alias));
	v2 *l = (v2 *)(void *)((char *)q + 64 * i);

	l[0] = l[1] = l[2] = l[3] = (v2){0, 0};
}

/* A queue to use: the one freed last (likely still in cache), else one never
 * used. The caller has checked that one is free. */
static struct dfr_queue *queue_take(struct rxp_defrag_table *t)
{
	struct dfr_queue *q = TAILQ_FIRST(&t->freel);

	if (q) {
		TAILQ_REMOVE(&t->freel, q, tq);
		return q;
	}
	return &t->qarr[t->nused++];
}

/* A new queue for k, in k's slot if that is free, else displaced into the
 * SipHash table (*h is the key's SipHash if hashed, computed here if not).
 * The caller has checked that a queue is free. */
DFR_HOT struct dfr_queue *dfr_queue_new(struct rxp_defrag_table *t, const struct dfr_key *k,
					uint64_t h, bool hashed, uint32_t slot, uint64_t now)
{
	struct dfr_queue *q = queue_take(t);

	/* Lines 0, 1 and 3; the prefetch hints (line 2) are read only below
	 * nfrags. Cleared a line at a time by plain vector stores: as one
	 * memset GCC makes a rep stos, whose start-up is as costly as the
	 * clearing. */
	queue_clear_line(q, 0);
	queue_clear_line(q, 1);
	queue_clear_line(q, 3);
	q->key = *k;
	if (!t->slots[slot]) {
		t->slots[slot] = (uint32_t)(q - t->qarr) + 1;
		q->slot = slot;
	} else {
		struct dfr_queue **b;

		if (!hashed)
			h = dfr_key_hash(t, k);
		b = bucket(t, h);
		q->hash = (uint32_t)h;
		q->slot = DFR_DISPLACED;
		q->hnext = *b;
		*b = q;
		t->ndisplaced++;
	}
	/* The source's slot for max_dist, and, while the table watches for
	 * pressure, its standing (the queue's class); otherwise NEW. */
	if (dfr_watching(t) || (k->family == 4 && t->cfg.max_dist > 0))
		q->src = dfr_src_slot(t, k);
	if (rxp_unlikely(dfr_watching(t))) {
		struct dfr_src *s = &t->src[q->src];

		q->pst = (uint8_t)(dfr_src_class(t, s) << 1 | DFR_P_TRACKED);
		if (!s->nq++)
			s->since = t->seq;
	} else {
		q->pst = DFR_CLS_NEW << 1;
	}
	q->fifo = dfr_fifo_of(k->family, dfr_cls(q));
	if (!t->st->reset_by_clear)
		t->st->reset(t, q);
	arm(t, q, now);
	q->last_seq = (uint32_t)t->seq;
	q->born = t->seq;
	q->qid = ++t->next_qid;
	t->c.queues++;
	t->c.mem += t->qcharge;
	return q;
}

/* max_dist found q stale: too many fragments from its source since its
 * last one. Give it up and restart it, timer included (as Linux), as a new
 * datagram. */
void dfr_queue_restart(struct rxp_defrag_table *t, struct dfr_queue *q, uint64_t now)
{
	giveup(t, q, RXP_DROP_FRAG_MAX_DIST);
	q->meat = q->len = q->max_size = q->max_df_size = q->gapmax = 0;
	q->flags = q->ecn_mask = 0;
	q->pst &= (uint8_t)~DFR_P_SKIPPED;
	t->st->reset(t, q);
	q->born = t->seq;
	q->qid = ++t->next_qid;
	if (t->scan[q->fifo] == q)
		t->scan[q->fifo] = TAILQ_NEXT(q, tq);
	TAILQ_REMOVE(&t->fifo[q->fifo], q, tq);
	arm(t, q, now);
}

/* The result's ECN field from the codepoints its fragments carried (mask
 * of 1 << codepoint, RFC 3168 5.3 as Linux applies it): 0xff when they
 * may not be combined. */
static uint8_t ecn_combine(uint8_t m)
{
	if ((m & 1) && (m & ~1u))
		return 0xff; /* Not-ECT mixed with ECT or CE */
	if ((m & 8) && (m & 6))
		return 3; /* CE with ECT: CE */
	return 0;
}

/* Complete q, whose last fragment was last: build, fix the header, free
 * the queue. prefetched: the fragments were asked for already (or, with
 * the table all in cache, need not be). */
DFR_HOT struct rxp_pkt *dfr_finish(struct rxp_defrag_table *t, struct dfr_queue *q,
				   const struct rxp_pkt *last, bool prefetched)
{
	uint8_t ecn = ecn_combine(q->ecn_mask);
	enum rxp_drop_reason fail = RXP_DROP_NOMEM;
	struct rxp_pkt *res;
	uint64_t tstamp;
	int r;

	if (ecn == 0xff) {
		dfr_queue_kill(t, q, RXP_DROP_FRAG_ECN);
		return NULL;
	}
	if (!prefetched)
		dfr_prefetch_frags(q);
	/* Unlinking meets misses of its own (the slot, the FIFO neighbours):
	 * they overlap the fragments', asked for above. */
	queue_unlink(t, q);
	tstamp = last->tstamp_ns; /* before building may free last */
	res = t->st->build(t, q);
	dfr_mem_fall(t, q->mem);
	q->mem = 0;
	if (!res)
		goto failed; /* its fragments are dropped (NOMEM) */
	if (q->key.family == 4)
		r = dfr_ipv4_finish(res, q, q->len, ecn, q->max_df_size == q->max_size);
	else
		r = dfr_ipv6_finish(res, q, q->len, ecn);
	if (r) {
		fail = (enum rxp_drop_reason) - r;
		rxp_pkt_drop(res, fail);
		goto failed;
	}
	if (dfr_wants(t, RXP_DEFRAG_EV_DONE))
		ev_queue(t, q, RXP_DEFRAG_EV_DONE, 0);
	if (q->pst & DFR_P_TRACKED)
		src_done(t, q);
	q->nfrags = 0;
	queue_release(t, q);
	res->network_off = (uint16_t)(res->data - res->head);
	res->transport_off = 0xffff;
	res->tstamp_ns = tstamp;
	t->c.ReasmOKs++;
	return res;
failed:
	count_giveup(t, q, fail);
	q->nfrags = 0;
	queue_release(t, q);
	return NULL;
}

/* What a refused insert (dfr_runs_insert / dfr_policy_insert result r)
 * does to the fragment and its queue. Consumes pkt (data past its header). */
void dfr_insert_failed(struct rxp_defrag_table *t, struct dfr_queue *q, const struct dfr_info *fi,
		       struct rxp_pkt *pkt, int r)
{
	if ((r == DFR_DUP || r == DFR_OVERLAP) && dfr_wants(t, RXP_DEFRAG_EV_OVERLAP)) {
		uint32_t lo, hi;
		bool differ = dfr_runs_compare(q, pkt, fi->off, fi->end, &lo, &hi);

		dfr_ev_overlap(t, q, lo, hi, differ, r == DFR_DUP);
	}
	switch (r) {
	case DFR_DUP:
		/* Not for the discard hook: its bytes are already queued. */
		t->c.duplicates++;
		rxp_pkt_drop(pkt, RXP_DROP_FRAG_DUP);
		return;
	case DFR_OVERLAP:
		dfr_kill_with(t, q, pkt, RXP_DROP_FRAG_OVERLAP);
		return;
	case DFR_NOMEM:
		/* No run node: refused like a fragment over the memory cap;
		 * a queue this fragment created goes with it. */
		if (!q->nfrags) {
			queue_free(t, q);
			q = NULL;
		}
		dfr_refuse(t, q, fi, pkt, fi->hdrlen, RXP_DROP_NOMEM);
		return;
	default: /* DFR_TOO_MANY */
		dfr_kill_with(t, q, pkt, RXP_DROP_FRAG_TOO_MANY);
		return;
	}
}

/* Each FIFO is in expiry order, so only their heads are read; and none
 * while now_ns is before exp_min, a lower bound that queues leaving keep
 * valid (they only raise the earliest expiry), made exact again by each
 * scan. Called per packet, the scan of six FIFOs was 61 instructions of
 * rxpath defrag's per fragment under callgrind. */
unsigned rxp_defrag_expire(struct rxp_defrag_table *t, uint64_t now_ns)
{
	uint64_t next = UINT64_MAX;
	unsigned n = 0;

	if (now_ns < t->exp_min)
		return 0;
	for (int f = 0; f < DFR_NFIFO; f++) {
		struct dfr_queue *q;

		while ((q = TAILQ_FIRST(&t->fifo[f])) && q->expires <= now_ns) {
			dfr_queue_kill(t, q, RXP_DROP_FRAG_TIMEOUT);
			n++;
		}
	}
	/* (after every kill: a hook may have made queues meanwhile) */
	for (int f = 0; f < DFR_NFIFO; f++) {
		struct dfr_queue *q = TAILQ_FIRST(&t->fifo[f]);

		if (q && q->expires < next)
			next = q->expires;
	}
	t->exp_min = next;
	return n;
}

void rxp_defrag_table_destroy(struct rxp_defrag_table *t)
{
	if (!t)
		return;
	for (int f = 0; f < DFR_NFIFO; f++) {
		struct dfr_queue *q;

		while ((q = TAILQ_FIRST(&t->fifo[f])))
			dfr_queue_kill(t, q, RXP_DROP_TEARDOWN);
	}
	table_free(t);
}
