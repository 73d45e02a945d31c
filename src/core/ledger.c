/*
 * The workload's ledger (include/rxpath/workload.h).
 *
 * Entries: one 16-bit word per payload sequence number (the workload's
 * producers use disjoint ranges, ledger_internal.h), in chunks of 2^16
 * made when a queue first sends into them and published with a release
 * store; a word's low byte holds flags, its high byte the drop reason that
 * cost it. Markers only OR flags in and CAS the reason, so any number of
 * threads mark at once without a lock.
 *
 * Identification of a dropped packet: the queue that received it (pkt->
 * queue) and its IP header (at network_off, or after the Ethernet header
 * when the packet never reached IP) name a producer by the address plane,
 * its flow by the low address bytes and the datagram by the IP ID, through
 * that queue's map, written when the frame was sent. An IPv6 datagram that
 * was not fragmented has no ID: its payload header names it. A TIPC packet
 * past its UDP header that lost its IP header is named by its payload
 * header. The maps remember the last 2^14 IP IDs of each flow (2^16 of
 * each TIPC peer): a packet dropped later than 2^14 datagrams of its flow
 * after it was sent is not placed (RXP_GEN_IN_FLIGHT_MAX spread over 64
 * flows is 2^14).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rxpath/dev.h"
#include "rxpath/pkt.h"
#include "rxpath/tipc.h"
#include "rxpath/wire.h"
#include "rxpath/worker.h"
#include "core/ledger_internal.h"

#define CHUNK_BITS 16
#define CHUNK (1u << CHUNK_BITS)
#define NCHUNKS (1u << (32 - CHUNK_BITS))
#define STD_SLOTS (1u << 14)
#define JUMBO_SLOTS (1u << 14)

enum { F_SENT = 1, F_WHOLE = 2, F_DELIV = 4, F_TWICE = 8 };

struct ledq {
	uint32_t *std; /* [flow][id % STD_SLOTS]: seq + 1, 0 for none */
	uint32_t *jumbo; /* [flow][id % JUMBO_SLOTS] */
	uint64_t *tipc; /* [peer][ip id]: first seq + 1 | count << 32 */
	uint64_t frames;
};

struct rxp_ledger {
	unsigned nq;
	uint64_t unidentified, phantom, nchunks;
	uint16_t *chunk[NCHUNKS];
	struct ledq q[];
};

struct rxp_ledger *rxp_ledger_create(unsigned nqueues)
{
	struct rxp_ledger *l;

	if (!nqueues || nqueues > RXP_WORKER_MAX) {
		errno = EINVAL;
		return NULL;
	}
	l = calloc(1, sizeof(*l) + nqueues * sizeof(l->q[0]));
	if (!l)
		return NULL;
	l->nq = nqueues;
	for (unsigned q = 0; q < nqueues; q++) {
		l->q[q].std = calloc((size_t)LED_STD_FLOWS * STD_SLOTS, sizeof(uint32_t));
		l->q[q].jumbo = calloc((size_t)LED_JUMBO_FLOWS * JUMBO_SLOTS, sizeof(uint32_t));
		l->q[q].tipc = calloc((size_t)LED_TIPC_PEERS * 65536, sizeof(uint64_t));
		if (!l->q[q].std || !l->q[q].jumbo || !l->q[q].tipc) {
			rxp_ledger_destroy(l);
			errno = ENOMEM;
			return NULL;
		}
		/* resident from the start: the maps' memory does not grow */
		memset(l->q[q].std, 0, (size_t)LED_STD_FLOWS * STD_SLOTS * sizeof(uint32_t));
		memset(l->q[q].jumbo, 0, (size_t)LED_JUMBO_FLOWS * JUMBO_SLOTS * sizeof(uint32_t));
		memset(l->q[q].tipc, 0, (size_t)LED_TIPC_PEERS * 65536 * sizeof(uint64_t));
	}
	return l;
}

void rxp_ledger_destroy(struct rxp_ledger *l)
{
	if (!l)
		return;
	for (unsigned q = 0; q < l->nq; q++) {
		free(l->q[q].std);
		free(l->q[q].jumbo);
		free(l->q[q].tipc);
	}
	for (unsigned c = 0; c < NCHUNKS; c++)
		free(l->chunk[c]);
	free(l);
}

/* The entry of seq; with make, its chunk is made if missing (NULL only when
 * out of memory); without, NULL means never sent. */
static uint16_t *entry(struct rxp_ledger *l, uint32_t seq, bool make)
{
	uint16_t **slot = &l->chunk[seq >> CHUNK_BITS];
	uint16_t *c = __atomic_load_n(slot, __ATOMIC_ACQUIRE);

	if (!c && make) {
		uint16_t *n = calloc(CHUNK, sizeof(uint16_t));

		if (!n)
			return NULL;
		if (__atomic_compare_exchange_n(slot, &c, n, false, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE)) {
			c = n;
			__atomic_fetch_add(&l->nchunks, 1, __ATOMIC_RELAXED);
		} else
			free(n); /* another queue made it first: c is theirs */
	}
	return c ? &c[seq & (CHUNK - 1)] : NULL;
}

static void mark(struct rxp_ledger *l, uint32_t seq, uint16_t flags)
{
	uint16_t *e = entry(l, seq, true);

	if (e)
		__atomic_fetch_or(e, flags, __ATOMIC_RELAXED);
	else
		__atomic_fetch_add(&l->unidentified, 1, __ATOMIC_RELAXED);
}

unsigned rxp_ledger_nqueues(const struct rxp_ledger *l)
{
	return l->nq;
}

bool rxp_ledger_ours(const struct rxp_ledger *l, unsigned q, const uint8_t *frame, uint32_t len)
{
	return l->nq == 1 || rxp_rss_hash(frame, len, true) % l->nq == q;
}

void rxp_ledger_sent_udp(struct rxp_ledger *l, unsigned q, enum led_kind kind, uint32_t seq,
			 uint32_t flow, uint32_t id, bool last)
{
	struct ledq *lq = &l->q[q];
	uint32_t *slot =
		kind == LED_JUMBO
			? &lq->jumbo[(flow % LED_JUMBO_FLOWS) * JUMBO_SLOTS + id % JUMBO_SLOTS]
			: &lq->std[(flow % LED_STD_FLOWS) * STD_SLOTS + id % STD_SLOTS];

	__atomic_store_n(slot, seq + 1, __ATOMIC_RELAXED);
	lq->frames++;
	mark(l, seq, F_SENT | (last ? F_WHOLE : 0));
}

void rxp_ledger_sent_tipc(struct rxp_ledger *l, unsigned q, unsigned peer, uint16_t ip_id,
			  uint32_t first, uint32_t n, bool whole)
{
	struct ledq *lq = &l->q[q];

	__atomic_store_n(&lq->tipc[(peer % LED_TIPC_PEERS) * 65536 + ip_id],
			 (uint64_t)(first + 1) | (uint64_t)n << 32, __ATOMIC_RELAXED);
	lq->frames++;
	for (uint32_t i = 0; i < n; i++)
		mark(l, first + i, F_SENT | (whole ? F_WHOLE : 0));
}

void rxp_ledger_sent_twin(struct rxp_ledger *l, unsigned q)
{
	l->q[q].frames++;
}

/* A generator payload header in these 8 bytes: its seq. */
static bool payload_seq(const uint8_t *h, uint32_t *seq)
{
	if (rxp_get_be32(h) != RXP_GEN_MAGIC)
		return false;
	*seq = rxp_get_be32(h + 4);
	return true;
}

void rxp_ledger_delivered(struct rxp_ledger *l, const uint8_t *payload, uint32_t len)
{
	uint32_t seq;
	uint16_t *e;

	if (len < 8 || !payload_seq(payload, &seq) || !(e = entry(l, seq, false)) ||
	    !(__atomic_load_n(e, __ATOMIC_RELAXED) & F_SENT)) {
		__atomic_fetch_add(&l->phantom, 1, __ATOMIC_RELAXED);
		return;
	}
	if (__atomic_fetch_or(e, F_DELIV, __ATOMIC_RELAXED) & F_DELIV)
		__atomic_fetch_or(e, F_TWICE, __ATOMIC_RELAXED);
}

/* How strongly a drop names the cause of a loss: an injected fault is the
 * root of what follows from it; a refused duplicate never costs a datagram
 * by itself, so any other reason replaces it; otherwise the first stays. */
static int rank(unsigned r)
{
	return r == RXP_DROP_FAULT_INJECT ? 3 : r == RXP_DROP_FRAG_DUP ? 1 : r ? 2 : 0;
}

/* seq's entry was hit by a drop for reason. */
static void lost(struct rxp_ledger *l, uint32_t seq, enum rxp_drop_reason reason)
{
	uint16_t *e = entry(l, seq, false);
	uint16_t old;

	if (!e)
		return;
	old = __atomic_load_n(e, __ATOMIC_RELAXED);
	for (;;) {
		uint16_t nw;

		if (rank(reason) <= rank(old >> 8u))
			return;
		nw = (uint16_t)((old & 0xff) | (unsigned)reason << 8);
		if (__atomic_compare_exchange_n(e, &old, nw, true, __ATOMIC_RELAXED,
						__ATOMIC_RELAXED))
			return;
	}
}

/* Up to n bytes of the packet from p, which lies in its data or before it
 * (the headroom of the same buffer), into out: how many there are. */
static uint32_t bytes_at(const struct rxp_pkt *pkt, const uint8_t *p, uint32_t n, uint8_t *out)
{
	if (p >= pkt->data && p <= pkt->data + pkt->len) {
		uint32_t off = (uint32_t)(p - pkt->data), have = pkt->len - off;

		if (have < n)
			n = have;
		return rxp_pkt_copy_bits(pkt, off, out, n) ? 0 : n;
	}
	if (p < pkt->head || p >= pkt->tail)
		return 0;
	if ((uint32_t)(pkt->tail - p) < n)
		n = (uint32_t)(pkt->tail - p);
	memcpy(out, p, n);
	return n;
}

/* Flow of a generator address (10.P.x.y / fdQQ::x:y): x * 256 + y - 1. */
static uint32_t flow_of(uint8_t x, uint8_t y)
{
	return (uint32_t)x * 256 + ((y + 255u) & 255u);
}

#define HDR_MAX (RXP_IPV6_HLEN + 8 + 8) /* IPv6, UDP, payload header's magic + seq */

/* The IPv4 header h (n bytes) of something queue q received. */
static bool place_v4(struct rxp_ledger *l, unsigned q, const uint8_t *h, uint32_t n,
		     enum rxp_drop_reason reason)
{
	const struct ledq *lq = &l->q[q % l->nq];
	uint32_t id, flow, v;
	uint64_t t;

	if (n < RXP_IPV4_HLEN || h[12] != 10)
		return false;
	id = (uint32_t)h[4] << 8 | h[5];
	flow = flow_of(h[14], h[15]);
	if (h[13] == 100 + LED_STD_NET && flow < LED_STD_FLOWS) {
		v = __atomic_load_n(&lq->std[flow * STD_SLOTS + id % STD_SLOTS], __ATOMIC_RELAXED);
	} else if (h[13] == 100 + LED_JUMBO_NET && flow < LED_JUMBO_FLOWS) {
		v = __atomic_load_n(&lq->jumbo[flow * JUMBO_SLOTS + id % JUMBO_SLOTS],
				    __ATOMIC_RELAXED);
	} else if (h[13] == 1 && h[14] == 0 && h[15] >= 1 && h[15] <= LED_TIPC_PEERS) {
		t = __atomic_load_n(&lq->tipc[(h[15] - 1u) * 65536 + id], __ATOMIC_RELAXED);
		if (!(uint32_t)t)
			return false;
		for (uint32_t i = 0; i < (uint32_t)(t >> 32); i++)
			lost(l, (uint32_t)t - 1 + i, reason);
		return true;
	} else {
		return false;
	}
	if (!v)
		return false;
	lost(l, v - 1, reason);
	return true;
}

static bool place_v6(struct rxp_ledger *l, unsigned q, const uint8_t *h, uint32_t n,
		     enum rxp_drop_reason reason)
{
	const struct ledq *lq = &l->q[q % l->nq];
	uint32_t flow, v, seq;

	if (n < RXP_IPV6_HLEN + 8 || h[8] != 0xfd)
		return false;
	flow = flow_of(h[22], h[23]);
	if (h[6] != RXP_IPPROTO_FRAGMENT) {
		/* not fragmented (or reassembled): the payload header */
		if (h[6] != RXP_IPPROTO_UDP || n < HDR_MAX ||
		    !payload_seq(h + RXP_IPV6_HLEN + 8, &seq))
			return false;
		lost(l, seq, reason);
		return true;
	}
	v = rxp_get_be32(h + RXP_IPV6_HLEN + 4);
	if (h[9] == 1 + 2 * LED_STD_NET && flow < LED_STD_FLOWS)
		v = __atomic_load_n(&lq->std[flow * STD_SLOTS + v % STD_SLOTS], __ATOMIC_RELAXED);
	else if (h[9] == 1 + 2 * LED_JUMBO_NET && flow < LED_JUMBO_FLOWS)
		v = __atomic_load_n(&lq->jumbo[flow * JUMBO_SLOTS + v % JUMBO_SLOTS],
				    __ATOMIC_RELAXED);
	else
		return false;
	if (!v)
		return false;
	lost(l, v - 1, reason);
	return true;
}

static bool place_ip(struct rxp_ledger *l, unsigned q, const uint8_t *h, uint32_t n,
		     enum rxp_drop_reason reason)
{
	if (!n)
		return false;
	return h[0] >> 4 == 4 ? place_v4(l, q, h, n, reason)
			      : h[0] >> 4 == 6 && place_v6(l, q, h, n, reason);
}

/* A TIPC message at data whose IP header is gone: its payload header. */
static bool place_tipc(struct rxp_ledger *l, const struct rxp_pkt *pkt, enum rxp_drop_reason reason)
{
	uint8_t h[RXP_TIPC_MIN_H_SIZE], ph[8];
	uint32_t seq;

	if (rxp_pkt_copy_bits(pkt, 0, h, sizeof(h)) ||
	    rxp_pkt_copy_bits(pkt, rxp_tipc_hsize(h), ph, sizeof(ph)) || !payload_seq(ph, &seq))
		return false;
	lost(l, seq, reason);
	return true;
}

void rxp_ledger_dropped(void *ledger, const struct rxp_pkt *pkt, enum rxp_drop_reason reason)
{
	struct rxp_ledger *l = ledger;
	const uint8_t *ip;
	uint8_t h[HDR_MAX];
	bool ok;

	/* at network_off (devices classify what they receive), or a frame */
	ip = pkt->network_off != 0xffff ? pkt->head + pkt->network_off : pkt->data + RXP_ETH_HLEN;
	ok = place_ip(l, pkt->queue, h, bytes_at(pkt, ip, sizeof(h), h), reason) ||
	     place_tipc(l, pkt, reason);
	if (!ok)
		__atomic_fetch_add(&l->unidentified, 1, __ATOMIC_RELAXED);
}

void rxp_ledger_frame_dropped(struct rxp_ledger *l, unsigned q, const uint8_t *frame, uint32_t len,
			      enum rxp_drop_reason reason)
{
	if (len <= RXP_ETH_HLEN ||
	    !place_ip(l, q, frame + RXP_ETH_HLEN,
		      len - RXP_ETH_HLEN < HDR_MAX ? len - RXP_ETH_HLEN : HDR_MAX, reason))
		__atomic_fetch_add(&l->unidentified, 1, __ATOMIC_RELAXED);
}

size_t rxp_ledger_entry_bytes(const struct rxp_ledger *l)
{
	return (size_t)__atomic_load_n(&l->nchunks, __ATOMIC_RELAXED) * CHUNK * sizeof(uint16_t);
}

void rxp_ledger_tally(const struct rxp_ledger *l, struct rxp_ledger_tally *t)
{
	memset(t, 0, sizeof(*t));
	for (unsigned q = 0; q < l->nq; q++)
		t->frames += l->q[q].frames;
	t->unidentified = l->unidentified;
	t->phantom = l->phantom;
	for (uint32_t c = 0; c < NCHUNKS; c++) {
		const uint16_t *ch = l->chunk[c];

		if (!ch)
			continue;
		for (uint32_t i = 0; i < CHUNK; i++) {
			uint16_t e = ch[i];
			bool msg = ((uint64_t)c << CHUNK_BITS | i) >= LED_TIPC_BASE;

			if (!(e & F_SENT))
				continue;
			if (msg)
				t->messages++;
			else
				t->datagrams++;
			if (e & F_DELIV) {
				if (msg)
					t->delivered_messages++;
				else
					t->delivered_datagrams++;
				t->delivered_twice += !!(e & F_TWICE);
			} else if (!(e & F_WHOLE)) {
				t->cut++;
			} else if (e >> 8) {
				t->lost[e >> 8]++;
				t->lost_total++;
			} else {
				t->unaccounted++;
			}
		}
	}
}
