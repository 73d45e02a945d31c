/*
 * The built-in mixed workload of `rxpath run`: a deterministic frame source
 * (struct rxp_src, include/rxpath/sim.h) for the sim NIC that mixes
 *   - IPv4 and IPv6 UDP datagrams from 16 to 65000 payload bytes,
 *     fragmented at MTU 1500;
 *   - 9000-byte class jumbo frames (unfragmented, MTU 9000), which the sim
 *     NIC splits over several 2 KiB buffers;
 *   - TIPC over UDP (port 6118) from a few peers: bundles of small messages
 *     and large messages split into MSG_FRAGMENTER fragments;
 *   - the faults that need IP knowledge: reordered IP fragments (TIPC
 *     frames stay in order: the TIPC link protocol that would reorder
 *     them is not implemented), exact duplicate fragments and partially
 *     overlapping IPv4 fragments (which strict reassembly must refuse).
 *     Frame loss and zero-length descriptors come from the fault wrapper
 *     over the sim NIC (rxp_fault_wrap; `rxpath run` puts one there).
 * Every UDP and TIPC payload carries the generator's verifiable header
 * (rxp_gen_verify), so a sink can prove each delivered one intact.
 */
#ifndef RXPATH_WORKLOAD_H
#define RXPATH_WORKLOAD_H

#include <stdint.h>

#include "rxpath/compiler.h"
#include "rxpath/drop.h"
#include "rxpath/sim.h"

RXP_BEGIN_DECLS

struct rxp_pkt;
struct rxp_ledger;

struct rxp_workload_config {
	uint64_t seed;
	uint64_t frames; /* frames to emit; 0: no end */
	unsigned ipv6_pct; /* of UDP datagrams (default 30) */
	unsigned jumbo_pct; /* of frames (default 10) */
	unsigned tipc_pct; /* of frames (default 20) */
	double dup_frag; /* a fragment sent twice (default 0.001) */
	double overlap_frag; /* an IPv4 fragment followed by an overlapping twin (default 0.0005) */
	double reorder; /* an IP fragment swapped with the frame after it (default 0.01) */
	uint16_t udp_port; /* destination of the UDP datagrams (default 9) */
	/* The standard-MTU generator's datagrams in flight, round-robin a
	 * frame each (rxp_gen_config.in_flight; 0: one at a time), and their
	 * fragments shuffled: the overload case of reassembly. */
	unsigned in_flight;
	bool shuffle;
	/* Accounting (optional): the ledger the source reports what it sends
	 * to, and the sim NIC queue it is opened for (the sim opens one source
	 * per queue, in queue order; each keeps the frames RSS steers to it). */
	struct rxp_ledger *ledger;
	unsigned queue;
};

/* Fill in the defaults for fields left 0 (a negative double keeps 0). */
void rxp_workload_defaults(struct rxp_workload_config *cfg);
/* NULL with errno. The source is independent and deterministic from seed. */
struct rxp_src *rxp_workload_src(const struct rxp_workload_config *cfg);

/*
 * The ledger: every datagram and message the workload sent, and what
 * became of it. The workload marks what each queue's source emits (sent,
 * and sent whole once its last frame is out); the sink marks what it
 * delivers (rxp_ledger_delivered, after rxp_gen_verify); the packet pool's
 * drop hook (rxp_pktpool_set_drop_hook(pp, rxp_ledger_dropped, ledger))
 * marks what a drop cost, found from the dropped packet's IP header (the
 * workload's flows, IP IDs and TIPC peers identify it) or its payload
 * header. A datagram is then exactly one of: delivered; cut (the run ended
 * before it was sent whole); lost to the first drop that hit it (a fault
 * injected below the stack, RXP_DROP_FAULT_INJECT, wins over what followed
 * from it, and a refused duplicate, which costs nothing by itself, gives
 * way to any other reason); or unaccounted, which is a bug. Thread-safe: many queues and
 * workers mark at once. Memory: 7 MiB per queue for the IP ID maps, resident
 * from creation, and 2 bytes per datagram or message sent
 * (rxp_ledger_entry_bytes).
 */
struct rxp_ledger_tally {
	uint64_t datagrams, messages, frames; /* sent (frames: with twins) */
	uint64_t delivered_datagrams, delivered_messages;
	uint64_t delivered_twice; /* delivered more than once (counted once) */
	uint64_t cut; /* not sent whole: the run ended mid-datagram or mid-message */
	uint64_t lost[RXP_DROP_MAX]; /* datagrams + messages, by the drop that cost them */
	uint64_t lost_total;
	uint64_t unaccounted; /* sent - delivered - cut - lost_total; must be 0 */
	uint64_t unidentified; /* dropped packets the ledger could not place */
	uint64_t phantom; /* delivered payloads the workload never sent */
};

/* NULL with errno. nqueues: the sim NIC's queues (1..RXP_WORKER_MAX). */
struct rxp_ledger *rxp_ledger_create(unsigned nqueues);
void rxp_ledger_destroy(struct rxp_ledger *l);
/* A delivered payload, verified (rxp_gen_verify): its sequence number. */
void rxp_ledger_delivered(struct rxp_ledger *l, const uint8_t *payload, uint32_t len);
/* A dropped packet (an rxp_pkt_drop_hook_fn; arg is the ledger). */
void rxp_ledger_dropped(void *ledger, const struct rxp_pkt *pkt, enum rxp_drop_reason reason);
/* The entries' memory so far (it grows with what is sent). */
size_t rxp_ledger_entry_bytes(const struct rxp_ledger *l);
/* Count every entry. Call when nothing is marking any more. */
void rxp_ledger_tally(const struct rxp_ledger *l, struct rxp_ledger_tally *t);

RXP_END_DECLS

#endif
