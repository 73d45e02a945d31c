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
 * runs:
 *   - one run, not recorded: it starts at q->first_off, its head is
 *     q->pf[0] (a datagram that arrives in order never leaves this form);
 *   - up to DFR_SMALL_RUNS: arrays in the queue (q->soff, q->send,
 *     q->stail), sorted by offset, searched by a scan of one cache line;
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
	uint32_t iplen; /* bytes of the packet that are the IP datagram */
	uint16_t hdrlen; /* bytes before the payload (v6: incl. the fragment header) */
	uint16_t nhoff; /* v6: offset of the next-header byte that says 44 */
	uint8_t nexthdr; /* v6: the fragment header's next header */
	uint8_t ecn; /* the two ECN bits */
	bool mf, df;
};

enum { DFR_F_FIRST = 1, DFR_F_LAST = 2 };

/* Laid out by how often a field is touched: lookup and every accepted
 * fragment read and write the first three cache lines (the key, the
 * per-fragment state, and the prefetch hints; the bucket chain and hash
 * only for a displaced queue); line 3 when a queue
 * is created, freed or restarted, in policy mode, and for each IPv4
 * fragment while max_dist is on (peer and rid); lines 4 and 5 (the small
 * run arrays) by fragments out of order; line 6 by the first DFR_PF
 * fragments and at completion. Queues are cache-line aligned in
 * the table's array. */
#define DFR_SMALL_RUNS 8u
#define DFR_DISPLACED UINT32_MAX /* dfr_queue.slot: in the SipHash table */
#define DFR_PF 7u
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
	struct rxp_pkt *tail; /* strict: last fragment of the last run */
	struct dfr_tree runs; /* strict, tree form */
	uint32_t last_seq; /* table fragment count at the last accept (mod 2^32) */
	uint32_t first_off; /* strict: where the first run starts (one run) */
	uint64_t mem;
	uint32_t tail_end; /* strict: where tail ends, and so the last run;
				    * kept here so that appending in order
				    * touches no older fragment's cb */
	uint32_t len, meat;
	uint16_t nfrags; /* at most 8192 (8-byte fragments below 65536) */
	uint8_t nsmall; /* strict: runs in the small arrays (0: not that form) */
	uint8_t spare;
	struct dfr_run *last_run; /* strict: the last run's node in tree form */
	/* Line 2: the first DFR_PF fragments in arrival order, so that
	 * completion can prefetch them all at once rather than meet one
	 * cache miss after another walking the runs (pf[0] is also the head
	 * of a first run not yet recorded); where the offset-0 fragment's
	 * header is, which completion rewrites. Hints, but for pf[0]. */
	struct rxp_pkt *pf[DFR_PF];
	uint8_t *hdr0;
	/* Line 3: creation, free, max_dist, policy. */
	TAILQ_ENTRY(dfr_queue) tq; /* timer FIFO of its family; free list */
	struct rxp_pkt *arr_head, *arr_tail; /* policy: arrival order */
	uint8_t *blocks; /* policy: 8-byte blocks received */
	uint32_t nblocks; /* policy: blocks set */
	uint32_t max_df_size;
	uint32_t rid;
	uint32_t peer; /* IPv4: slot of the source's max_dist counter */
	uint16_t nhoff; /* of the offset-0 fragment */
	uint8_t nexthdr;
	bool in_use;
	uint32_t slot; /* its slot in t->la, or DFR_DISPLACED */
	/* Lines 4-5: strict, small form: runs [soff, send) sorted by offset,
	 * and their tails (the last run's end and tail are tail_end and
	 * tail, copied here when read). Not cleared: nsmall says what is
	 * valid. */
	_Alignas(64) uint32_t soff[DFR_SMALL_RUNS];
	uint32_t send[DFR_SMALL_RUNS];
	struct rxp_pkt *stail[DFR_SMALL_RUNS];
	/* Line 6: the head pages of pf[], so that completion asks for the
	 * page headers (which freeing the datagram reads) with the
	 * fragments, not after them. Hints. */
	struct rxp_page *pg[DFR_PF];
	struct rxp_pkt *pkt0; /* the offset-0 fragment, once here: the
			       * result, whose second line and frag array
			       * completion writes (a hint) */
} __attribute__((aligned(64)));
_Static_assert(offsetof(struct dfr_queue, expires) == 64, "dfr_queue line 1 starts at expires");
_Static_assert(offsetof(struct dfr_queue, pf) == 128, "dfr_queue line 2 starts at pf");
_Static_assert(offsetof(struct dfr_queue, tq) == 192, "dfr_queue line 3 starts at tq");
_Static_assert(offsetof(struct dfr_queue, soff) == 256, "dfr_queue small runs start at line 4");
_Static_assert(offsetof(struct dfr_queue, pg) == 384, "dfr_queue page hints are line 6");
_Static_assert(sizeof(struct dfr_queue) == 448, "dfr_queue is seven cache lines");
#define DFR_QUEUE_HOT offsetof(struct dfr_queue, soff) /* what queue_new clears */

TAILQ_HEAD(dfr_fifo, dfr_queue);

#define DFR_PEER_SLOTS 4096u

struct rxp_defrag_table {
	struct rxp_defrag_config cfg;
	struct rxp_defrag_counters c;
	unsigned char hkey[crypto_shorthash_KEYBYTES];
	struct dfr_queue **buckets;
	uint32_t bmask;
	uint32_t lamask;
	uint32_t *la; /* slots: queue index + 1, 0 for none; see la_index() */
	uint32_t ndisplaced; /* queues in the SipHash table */
	struct dfr_queue *qarr;
	struct dfr_fifo freel; /* free queues, linked through tq */
	struct dfr_fifo fifo[2]; /* 0: IPv4, 1: IPv6 */
	uint64_t seq; /* fragments accepted so far */
	uint32_t *peer_rid;
	uint8_t *blockmem; /* policy: 1 KiB per queue */
	uint16_t *owner; /* policy: scratch, one entry per payload byte */
	struct rxp_pkt **fragv; /* policy: scratch, fragments in arrival order */
	uint8_t *pdata, *ptmp; /* policy: scratch, 64 KiB each */
	/* strict: free run nodes, a stack of pointers (popping one reads no
	 * node, so a cold node costs a write, not a stalled load) */
	struct dfr_run **runfree;
	uint32_t nrunfree, runcap; /* runcap: every node there is */
	struct dfr_run *runmem;
};

#define DFR_BLOCK_BYTES 1024u /* 65536 / 8 bits */
#define DFR_POLICY_MAX_FRAGS 8192u

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

	fi->iplen = tot;
	fi->hdrlen = (uint16_t)ihl;
	fi->mf = fo & RXP_IP_MF;
	fi->df = fo & RXP_IP_DF;
	fi->ecn = ip->tos & 3;
	fi->nhoff = 0;
	fi->nexthdr = 0;
	/* An MF fragment's length not a multiple of 8 is rounded down, as
	 * Linux does; the cut bytes are trimmed by the caller. */
	if (fi->mf)
		fi->end &= ~7u;
	return 1;
}

int dfr_ipv6_parse(const struct rxp_pkt *pkt, struct dfr_info *fi, uint32_t zone, bool *atomic);
/* Fix the header of a result whose data is at the IP header and whose
 * linear part holds the header; payload bytes = plen. 0 or -reason. */
int dfr_ipv4_finish(struct rxp_pkt *pkt, const struct dfr_queue *q, uint32_t plen, uint8_t ecn,
		    bool df);
int dfr_ipv6_finish(struct rxp_pkt *pkt, const struct dfr_queue *q, uint32_t plen, uint8_t ecn);
/* Remove the fragment header of a v6 atomic fragment in place. */
int dfr_ipv6_strip(struct rxp_pkt *pkt, const struct dfr_info *fi);

/* Queue storage (defrag_queue.c). insert returns DFR_OK (the queue owns
 * pkt), DFR_DUP, DFR_OVERLAP, DFR_NOMEM (strict: no run node left) or
 * DFR_TOO_MANY (policy: too many fragments); otherwise the caller keeps pkt. */
enum { DFR_OK = 0, DFR_DUP = 1, DFR_OVERLAP = 2, DFR_TOO_MANY = 3, DFR_NOMEM = 4 };
int dfr_runs_insert(struct rxp_defrag_table *t, struct dfr_queue *q, struct rxp_pkt *pkt,
		    uint32_t off, uint32_t end);
/* Make the table's run nodes (table create); free them (table destroy). */
int dfr_runs_init(struct rxp_defrag_table *t);
void dfr_runs_fini(struct rxp_defrag_table *t);
int dfr_policy_insert(struct rxp_defrag_table *t, struct dfr_queue *q, struct rxp_pkt *pkt);
bool dfr_policy_complete(const struct dfr_queue *q);
/* Build the datagram from a complete queue (which is left empty); the
 * result has data at the IP header (pushed back), or NULL after dropping
 * every fragment (RXP_DROP_NOMEM). */
struct rxp_pkt *dfr_runs_build(struct rxp_defrag_table *t, struct dfr_queue *q);
struct rxp_pkt *dfr_policy_build(struct rxp_defrag_table *t, struct dfr_queue *q);
/* Call fn on every fragment of q and empty it. */
void dfr_queue_for_each_drain(struct rxp_defrag_table *t, struct dfr_queue *q,
			      void (*fn)(void *, struct rxp_pkt *), void *arg);

#endif
