/*
 * Workers: the poll loop that runs the receive path, one per core.
 *
 * A worker owns its receive queue, its network stack (reassembly table,
 * UDP ports) and its TIPC links; it shares the packet pool with the other
 * workers of its group (the pool's per-thread caches and deferred free keep
 * that lock-free). One rxp_worker_poll() is a NAPI-style iteration:
 *
 *   1. receive a burst (at most budget frames) from the worker's queue;
 *   2. steer: a packet whose L3 hash belongs to another worker is handed to
 *      it through its inbox (a bounded lock-free ring), so all fragments of
 *      a datagram meet in one reassembly table whatever the device;
 *   3. process its own packets and its inbox: L2 -> IPv4/IPv6 input ->
 *      reassembly -> UDP -> TIPC link receive (port 6118) or the
 *      application's datagram sink;
 *   4. drain the deferred frees other workers left for it and run due timers
 *      (reassembly expiry).
 *
 * Every packet a worker takes is consumed by exactly one of: a sink, a
 * counted drop. A full inbox drops with RXP_DROP_STEER_FULL.
 */
#ifndef RXPATH_WORKER_H
#define RXPATH_WORKER_H

#include <stdbool.h>
#include <stdint.h>

#include "rxpath/compiler.h"
#include "rxpath/defrag.h"
#include "rxpath/dev.h"
#include "rxpath/net.h"
#include "rxpath/pkt.h"
#include "rxpath/pktpool.h"
#include "rxpath/tipc.h"

RXP_BEGIN_DECLS

#define RXP_WORKER_MAX 64
#define RXP_WORKER_BUDGET_DEFAULT 64
#define RXP_WORKER_INBOX_DEFAULT 4096
#define RXP_WORKER_TIPC_PEERS 16

struct rxp_worker;
struct rxp_worker_group;

/* A complete UDP datagram for a port other than TIPC's (data at the UDP
 * payload); consumes pkt. */
typedef void (*rxp_worker_datagram_fn)(void *arg, struct rxp_worker *w, struct rxp_pkt *pkt);
/* A complete TIPC data message (data at its TIPC header); consumes pkt. */
typedef void (*rxp_worker_message_fn)(void *arg, struct rxp_worker *w, struct rxp_pkt *pkt);

struct rxp_worker_config {
	unsigned nworkers; /* 1..RXP_WORKER_MAX */
	struct rxp_dev *dev; /* polled: worker i takes queues i, i + n, i + 2n, ... (up to 32) */
	struct rxp_pktpool *pp; /* shared packet pool */
	unsigned budget; /* frames per poll (default 64) */
	unsigned inbox; /* steering inbox size (default 4096) */
	struct rxp_defrag_config defrag; /* per-worker reassembly table */
	bool tipc; /* deliver UDP port 6118 to TIPC links */
	rxp_worker_datagram_fn on_datagram;
	rxp_worker_message_fn on_message;
	void *arg;
	/* true: time comes from packet timestamps (pcap input, as on the
	 * wire); false: the monotonic clock. */
	bool wire_time;
	enum rxp_udp_csum_mode udp_csum; /* default CHECK (rxpath/net.h) */
};

struct rxp_worker_stats {
	uint64_t polls, rx_frames, rx_bytes;
	uint64_t steered_out, steered_in;
	uint64_t datagrams, datagram_bytes; /* delivered to on_datagram */
	uint64_t messages, message_bytes; /* delivered to on_message */
	uint64_t tipc_peers_full; /* TIPC traffic from a peer past the table */
	/* Frames not for this path, consumed and counted, not drops (as the
	 * kernel hands them to other protocols): not IP by ethertype (arp
	 * among them), and IP datagrams of other protocols (ndp: ICMPv6
	 * types 133..137, counted apart from icmpv6). */
	uint64_t not_ip, arp;
	uint64_t icmp, icmpv6, ndp, tcp, other_proto;
	uint64_t timer_runs;
	uint64_t sleeps; /* times the worker slept in poll() when idle */
};

/* Creates the group and its workers (not their threads). NULL with errno. */
struct rxp_worker_group *rxp_worker_group_create(const struct rxp_worker_config *cfg);
/* Frees everything the workers hold (queued fragments, partial TIPC
 * messages, inbox packets). Call after every worker stopped polling. */
void rxp_worker_group_destroy(struct rxp_worker_group *g);
struct rxp_worker *rxp_worker_get(struct rxp_worker_group *g, unsigned i);
unsigned rxp_worker_id(const struct rxp_worker *w);

/* One iteration. Returns the packets processed (0: idle), or -ENODATA once
 * the worker's queue reported its input finished and its inbox is empty. */
int rxp_worker_poll(struct rxp_worker *w);

/* Runs every worker's poll loop on its own thread (worker i on CPU i mod
 * online CPUs) until all inputs are finished or *stop becomes true. A
 * worker busy-polls while traffic flows; once its queues and inbox have
 * been empty for 200 us it sleeps in poll() on its queues' descriptors
 * (live sockets: AF_XDP, AF_PACKET) and its inbox's eventfd, up to 10 ms
 * at a time, so an idle live interface costs next to no CPU. */
int rxp_worker_group_run(struct rxp_worker_group *g, volatile bool *stop);

void rxp_worker_get_stats(const struct rxp_worker *w, struct rxp_worker_stats *st);
/* Sums over the group. */
void rxp_worker_group_stats(struct rxp_worker_group *g, struct rxp_worker_stats *st,
			    struct rxp_ip_stats *ip4, struct rxp_ip_stats *ip6,
			    struct rxp_udp_stats *udp, struct rxp_defrag_counters *reasm,
			    struct rxp_tipc_link_stats *tipc);

RXP_END_DECLS

#endif
