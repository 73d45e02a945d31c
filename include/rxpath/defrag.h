/*
 * IPv4/IPv6 reassembly: one table per worker, no locks.
 *
 * rxp_defrag() takes a packet whose data starts at the IP header. A packet
 * that is not a fragment comes straight back; a fragment is queued and NULL
 * returned until the fragment that completes its datagram arrives, and then
 * the whole datagram comes back with its header fixed (total length, offset
 * and MF cleared, IPv4 checksum, IPv6 fragment header removed), data at the
 * IP header and network_off set. Every fragment that is refused is dropped
 * with a reason (rxp_pkt_drop) and counted here.
 *
 * Keys: IPv4 (src, dst, id, protocol, zone); IPv6 (src, dst, id, and zone
 * only for link-local or multicast destinations, unless zone_all_v6). A queue lives in its
 * key's slot of a direct-mapped table (a cheap hash of the key without the
 * id, plus the id, so that datagrams in flight from one sender sit side by
 * side) when the slot is free; a queue whose slot is taken goes in a table
 * hashed with SipHash (libsodium crypto_shorthash) under a random key per
 * table, so keys aimed at one slot cost a keyed lookup, never a long chain.
 *
 * Overlaps (config.policy):
 *   STRICT (default, Linux today): a fragment wholly inside data already
 *     queued is a duplicate and dropped alone (first data wins); any partial
 *     overlap kills the queue (ReasmOverlaps and ReasmFails) and later
 *     fragments with that key start a new queue.
 *   FIRST, LAST, BSD, BSD_RIGHT, LINUX, WINDOWS, SOLARIS: target-based
 *     policies for IDS users. Overlapping bytes are resolved at completion,
 *     pairwise between the arriving fragment and the fragment currently
 *     holding each byte, compared by their original offsets and ends:
 *       first     the earlier fragment wins
 *       last      the later fragment wins
 *       bsd       the later wins if it starts before the earlier
 *       bsd-right the later wins if it starts at or before and ends after
 *       linux     the later wins if it starts at or before the earlier
 *       windows   the later wins if it starts before and ends after
 *       solaris   the later wins if it starts before and ends at or after
 *     On the Sturges/Novak overlap pattern these give the bytes Suricata's
 *     tests expect for first, last, bsd, linux, windows and solaris
 *     (tests/unit/test_defrag_policy.c); bsd-right (which Suricata does not
 *     implement) follows Snort's description and is not checked against
 *     another implementation.
 *     Each overlap is counted (policy_overlaps) and reported to the optional
 *     overlap callback with its range and whether the bytes differ. Policy
 *     mode keeps fragments unmerged and builds a linear datagram by copying.
 *
 * Validation as Linux: zero-length fragment, an MF=0 fragment ending before
 * the known end, a second MF=0 with another end, data past the known end:
 * the queue is discarded (ReasmFails). An MF=1 length not a multiple of 8:
 * IPv4 rounds it down, IPv6 drops the fragment. A result over 65535 bytes
 * fails. IPv6: an atomic fragment bypasses the queues (its fragment header is
 * removed); a nested fragment header or a first fragment without the whole
 * upper-layer header (RFC 7112) drops. ECN is combined as RFC 3168 (CE with
 * ECT gives CE; Not-ECT mixed with ECT or CE drops the datagram); DF is set on
 * the result when the largest fragment had it (as Linux).
 *
 * Completion: local delivery (default) coalesces fragments into as few
 * buffers as possible (rxp_pkt_try_coalesce); forward mode keeps fragment
 * boundaries on the frag_list (rxp_pkt_chain) so it can be fragmented again.
 *
 * Limits and timers: memory is charged in truesize plus the queue struct
 * (mem_limit, default 4 MiB); at most max_queues queues; a timeout (IPv4
 * 30 s, IPv6 60 s) armed at queue creation and never extended; max_dist
 * (IPv4, default 64): when more than max_dist fragments from the same source
 * arrive between two additions to a queue, the queue is flushed and
 * restarted. Timeouts are a FIFO per family (the timeout is constant, so
 * expiry order is creation order): O(1) per queue, run by
 * rxp_defrag_expire() in the worker's timer pass (and lazily on lookup).
 *
 * Memory pressure (config.pressure):
 *   RXP_DEFRAG_PRESSURE_EVICT (default): finish what was started. A
 *     fragment is admitted while it fits under mem_limit (and, for a new
 *     queue, while one of max_queues is free). When it does not fit:
 *     1. stale queues go first: a queue is stale when it has gone longer
 *        without a fragment of its own than four times the longer of its
 *        own longest gap and the table's typical gap (both in fragments the
 *        table saw, refused ones included; the typical gap is a moving
 *        average of every queue's gaps, about the datagrams in flight, and
 *        while none has been seen, the number of queues). A lost fragment leaves such a
 *        queue; FragmentSmack's sparse queues become such queues. They are
 *        looked for oldest first, a few per fragment, with a cursor that
 *        walks each timer FIFO (evict_stale);
 *     2. a fragment that would open a new queue is refused (refused_new),
 *        and its datagram is remembered as given up;
 *     3. a fragment of an open queue evicts the newest queues, newer than
 *        its own, until it fits (evict_newest), so the oldest, most
 *        advanced datagrams finish; if its own queue is the newest, that
 *        queue is given up instead (refused_own). A fragment that completes
 *        its datagram may evict any other queue, newest first.
 *     Datagrams given up under pressure (2, 3) are remembered in a small
 *     table of keyed tags for as long as their fragments keep coming (each
 *     one refreshes it; four typical gaps without one forget it), and
 *     their later fragments are refused (refused_doomed), so memory goes
 *     to datagrams that can still complete. Memory never goes above
 *     mem_limit. Every eviction counts in evictions and ReasmFails, every
 *     refused fragment in mem_drops. Work per fragment is O(1) amortised:
 *     a bounded scan, and each eviction removes a queue some fragment made.
 *   RXP_DEFRAG_PRESSURE_LINUX: while memory is over the cap every fragment
 *     is dropped, even one that would complete a datagram (Linux's
 *     high_thresh behaviour; kept for comparison).
 *
 * Memory: the table reserves address space for max_queues queues and the
 * slot table, but touches only what the queues in use need, so a large
 * max_queues or mem_limit costs nothing until traffic fills it.
 *
 * The caller runs rxp_defrag_expire() with its clock (a worker does in its
 * timer pass; a capture reader with packet time), passes packets with data
 * at the IP header (link headers pulled), and consumes what comes back.
 */
#ifndef RXPATH_DEFRAG_H
#define RXPATH_DEFRAG_H

#include <stdbool.h>
#include <stdint.h>

#include "rxpath/compiler.h"
#include "rxpath/pkt.h"
#include "rxpath/pktpool.h"

RXP_BEGIN_DECLS

enum rxp_defrag_policy {
	RXP_DEFRAG_STRICT = 0,
	RXP_DEFRAG_FIRST,
	RXP_DEFRAG_LAST,
	RXP_DEFRAG_BSD,
	RXP_DEFRAG_BSD_RIGHT,
	RXP_DEFRAG_LINUX,
	RXP_DEFRAG_WINDOWS,
	RXP_DEFRAG_SOLARIS,
	RXP_DEFRAG_POLICY_MAX
};

enum rxp_defrag_pressure {
	RXP_DEFRAG_PRESSURE_EVICT = 0,
	RXP_DEFRAG_PRESSURE_LINUX,
};

/* One overlap in a target-based policy: payload byte range [start, end) of
 * the datagram received twice; differ when the bytes were not the same. */
struct rxp_defrag_overlap {
	int family; /* 4 or 6 */
	uint32_t id;
	uint32_t start, end;
	bool differ;
};
typedef void (*rxp_defrag_overlap_fn)(void *arg, const struct rxp_defrag_overlap *ov);

/* Called with each fragment the table is about to drop other than a
 * duplicate of bytes it holds (timeout, eviction, a killed queue, memory
 * refusal, table destroy), data at its IP header as received. It must not
 * keep or free pkt. For tools (rxpath defrag --keep-incomplete). */
typedef void (*rxp_defrag_discard_fn)(void *arg, const struct rxp_pkt *pkt);

/* Datagram events, for tools that report what happens to each datagram
 * (rxpath defrag --report). Called synchronously from rxp_defrag*(),
 * rxp_defrag_expire() and rxp_defrag_table_destroy(); the callee must not
 * call into the table. */
enum rxp_defrag_event_type {
	RXP_DEFRAG_EV_FRAG, /* a fragment entered queue qid */
	RXP_DEFRAG_EV_DONE, /* qid's datagram was reassembled */
	RXP_DEFRAG_EV_GIVEUP, /* qid was given up: reason */
	RXP_DEFRAG_EV_REFUSED, /* a fragment was refused (reason); qid 0 if no queue had it */
	RXP_DEFRAG_EV_OVERLAP, /* bytes [off, end) of qid arrived again (strict:
				* when the fragment comes; target policies: when
				* the datagram completes) */
};

struct rxp_defrag_event {
	enum rxp_defrag_event_type type;
	/* GIVEUP, REFUSED: FRAG_TIMEOUT, FRAG_OVERLAP, FRAG_EVICT,
	 * FRAG_MEM_LIMIT, FRAG_QUEUE_LIMIT, FRAG_MAX_DIST, FRAG_INVALID,
	 * FRAG_TOO_BIG, FRAG_ECN, FRAG_TOO_MANY, NOMEM, or TEARDOWN (the
	 * table was destroyed: end of input). */
	enum rxp_drop_reason reason;
	uint64_t qid; /* a queue's identity, unique for the table's life */
	uint8_t family, proto; /* proto: IPv4 only */
	uint32_t id, zone;
	const uint8_t *src, *dst; /* 4 or 16 bytes */
	uint32_t off, end; /* FRAG, REFUSED: the fragment's payload range;
			    * OVERLAP: the range received twice */
	uint32_t len; /* DONE: payload bytes */
	uint32_t nfrags; /* DONE, GIVEUP: fragments the queue held */
	bool mf, df; /* FRAG, REFUSED */
	bool differ; /* OVERLAP: the bytes were not the same */
	bool dup; /* OVERLAP: wholly inside data already held */
	const struct rxp_pkt *pkt; /* FRAG, REFUSED: the fragment, data at
				    * its IP header; else NULL */
};
typedef void (*rxp_defrag_event_fn)(void *arg, const struct rxp_defrag_event *ev);

struct rxp_defrag_config {
	enum rxp_defrag_policy policy;
	enum rxp_defrag_pressure pressure;
	bool forward; /* keep fragment boundaries (frag_list) */
	uint64_t mem_limit; /* bytes of truesize; 0: 4 MiB */
	uint32_t max_queues; /* 0: 8192 */
	uint64_t timeout_v4_ns; /* 0: 30 s */
	uint64_t timeout_v6_ns; /* 0: 60 s */
	int max_dist; /* IPv4 per source; 0: 64; <0: off */
	uint32_t zone; /* key zone for rxp_defrag() (VRF / VLAN / ifindex) */
	/* The zone keys every IPv6 datagram, not only those to link-local
	 * and multicast destinations (for zones that are tunnels or VLANs,
	 * where global addresses repeat). */
	bool zone_all_v6;
	rxp_defrag_overlap_fn overlap_cb;
	void *overlap_arg;
	rxp_defrag_discard_fn discard_cb;
	void *discard_arg;
	rxp_defrag_event_fn event_cb;
	void *event_arg;
	/* Which events event_cb gets: bits 1 << RXP_DEFRAG_EV_*; 0 for all.
	 * A caller that wants datagram outcomes only leaves out
	 * RXP_DEFRAG_EV_FRAG, an event per fragment. */
	uint32_t event_mask;
};

/* Names follow /proc/net/snmp where one exists. */
struct rxp_defrag_counters {
	uint64_t ReasmReqds; /* fragments received */
	uint64_t ReasmOKs; /* datagrams reassembled (and atomic v6) */
	uint64_t ReasmFails; /* datagrams given up, fragments refused for memory */
	uint64_t ReasmTimeout; /* queues expired */
	uint64_t ReasmOverlaps; /* queues killed by an overlap (strict) */
	uint64_t evictions; /* queues evicted under pressure (evict_stale +
			     * evict_newest + evict_rank, and their own queue
			     * for refused_own) */
	uint64_t duplicates; /* fragments dropped as duplicates */
	uint64_t policy_overlaps; /* overlaps resolved by a target policy */
	uint64_t invalid; /* malformed fragments dropped before queueing */
	uint64_t mem_drops; /* fragments refused for memory or queue cap */
	/* The pressure policy's decisions (RXP_DEFRAG_PRESSURE_EVICT): */
	uint64_t evict_stale; /* stale queues evicted */
	uint64_t evict_newest; /* queues evicted, newest first, for an older one */
	uint64_t evict_rank; /* queues evicted for a source of better standing */
	uint64_t refused_new; /* fragments refused that would open a queue */
	uint64_t refused_own; /* fragments refused with their own, newest queue */
	uint64_t refused_doomed; /* fragments of datagrams given up under pressure */
	uint64_t max_dist_flushes;
	uint64_t copied_out; /* fragments copied out of receive-ring buffers */
	uint64_t tiny_frags; /* fragments queued that are not the last and carry
			      * fewer than RXP_DEFRAG_TINY payload bytes */
	uint64_t df_frags; /* fragments queued with DF set (IPv4) */
	uint64_t gap; /* the typical gap between two fragments of a datagram,
		       * in fragments seen (about the datagrams in flight) */
	uint64_t queues; /* queues now */
	uint64_t mem; /* bytes charged now */
	uint64_t mem_high_water;
};

/* Fewer payload bytes than this in a fragment that is not the last make
 * it tiny (tiny_frags): what evasion tools send, and what Zeek calls an
 * excessively small fragment. */
#define RXP_DEFRAG_TINY 64u

struct rxp_defrag_table;

/* NULL with errno (EINVAL, ENOMEM). */
struct rxp_defrag_table *rxp_defrag_table_create(const struct rxp_defrag_config *cfg);
/* Drops every queued fragment (reason teardown; not a timeout or a failure). */
void rxp_defrag_table_destroy(struct rxp_defrag_table *t);

/* Consumes pkt (data at the IPv4 or IPv6 header). Returns pkt itself when it
 * is not a fragment (untouched), a complete datagram, or NULL. A datagram
 * may be the very packet passed in (when it completed its own datagram) and
 * may be non-linear (page frags, or frag_list in forward mode); its data is
 * at the IP header, network_off is set, transport_off unset, tstamp_ns is
 * the completing fragment's. ReasmReqds tells a caller whether pkt was a
 * fragment at all. */
struct rxp_pkt *rxp_defrag(struct rxp_defrag_table *t, struct rxp_pkt *pkt, uint64_t now_ns);

/* The same with the zone given per packet (VLAN, VRF or interface the
 * packet came in on) instead of config.zone. Consumes pkt. */
struct rxp_pkt *rxp_defrag_zone(struct rxp_defrag_table *t, struct rxp_pkt *pkt, uint32_t zone,
				uint64_t now_ns);

/* Expire queues whose timer has passed; returns how many. */
/* A hint, for a caller that sees packets before it feeds them (a burst,
 * a capture file read ahead): the IP packet at l3 (len bytes: at least its
 * IP header, or it is ignored) will soon be given to rxp_defrag_zone(t, ..,
 * zone), so the cache lines its lookup and insert touch first are fetched
 * now. Reads only, changes nothing; any bytes are safe. With thousands of
 * datagrams in flight, each fragment's queue is a cache miss: called a few
 * packets ahead, the miss overlaps the work on the packets between. IPv4,
 * and IPv6 whose fragment header comes first. */
void rxp_defrag_prefetch(const struct rxp_defrag_table *t, const void *l3, size_t len,
			 uint32_t zone);
/* rxp_defrag_prefetch in two steps, for a caller that sees packets far
 * enough ahead: the first fetches the line of the table's index that the
 * fragment at l3 looks up, and returns a hint (0: none); the second, a
 * few packets later, given that hint, fetches the fragment's queue, which
 * the index names. The first step's read of the index was itself a cache
 * miss. Reads only, changes nothing; any bytes, any hint are safe. */
uint32_t rxp_defrag_prefetch_slot(const struct rxp_defrag_table *t, const void *l3, size_t len,
				  uint32_t zone);
void rxp_defrag_prefetch_queue(const struct rxp_defrag_table *t, uint32_t hint);
unsigned rxp_defrag_expire(struct rxp_defrag_table *t, uint64_t now_ns);

void rxp_defrag_get_counters(const struct rxp_defrag_table *t, struct rxp_defrag_counters *c);

/* "strict", "first", ... ; parse returns -EINVAL for an unknown name. */
const char *rxp_defrag_policy_name(enum rxp_defrag_policy p);
int rxp_defrag_policy_parse(const char *name, enum rxp_defrag_policy *p);

/* ---- sizing (src/net/defrag_sizing.c) ---------------------------------- */

/* A program that feeds rxp_defrag() itself (examples/defrag_pcap.c), rather
 * than through rxpath's workers, owns two duties: it runs the timers, by
 * calling rxp_defrag_expire(t, now) with its clock (every packet, or every
 * few milliseconds), since the table has no thread of its own; and it hands
 * over packets whose data is at the IP header, link, VLAN and tunnel
 * headers stripped (rxp_pkt_pull) and frames cut short by a snaplen left
 * out (their fragments cannot complete). Its pool must hold what the cap
 * allows: */

#define RXP_DEFRAG_MEM_DEFAULT (4u << 20) /* mem_limit 0 */
#define RXP_DEFRAG_QUEUES_MAX (1u << 24) /* the largest max_queues */

struct rxp_pktpool_config;

/* Set pc's n_pkts, n_bufs and n_large so that a table with cfg's
 * mem_limit can fill to its cap from a pool made with pc (its buf_size,
 * large_size and headroom as set, 0 for the defaults), plus margin packets
 * for the caller's own use (frames being read, datagrams being written).
 * A pool carves objects lazily, so a big cap costs nothing until used. */
void rxp_defrag_pool_config(const struct rxp_defrag_config *cfg, unsigned margin,
			    struct rxp_pktpool_config *pc);
/* The most queues mem_limit can hold (each holds at least one packet of a
 * small buffer), at most RXP_DEFRAG_QUEUES_MAX: a max_queues that never
 * binds before memory does. */
uint32_t rxp_defrag_queues_for_mem(uint64_t mem_limit);

RXP_END_DECLS

#endif
