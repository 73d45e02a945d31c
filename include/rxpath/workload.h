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
#include "rxpath/sim.h"

RXP_BEGIN_DECLS

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
};

/* Fill in the defaults for fields left 0 (a negative double keeps 0). */
void rxp_workload_defaults(struct rxp_workload_config *cfg);
/* NULL with errno. The source is independent and deterministic from seed. */
struct rxp_src *rxp_workload_src(const struct rxp_workload_config *cfg);

RXP_END_DECLS

#endif
