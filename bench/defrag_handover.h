/*
 * The headline rows of `rxpath bench defrag`: reassembly in the handover a
 * DPDK receive loop has (examples/ip_reassembly), rxpath and DPDK 22.11 on
 * the same streams. See defrag_handover.c.
 */
#ifndef RXP_BENCH_DEFRAG_HANDOVER_H
#define RXP_BENCH_DEFRAG_HANDOVER_H

#include "benchlib.h"

/* Adds the headline rows (ns/fragment, median of o->runs, both sides in the
 * same run; callgrind instructions per fragment unless o->quick) to tab.
 * have_dpdk: EAL is up. */
void ho_rows(struct bench_table *tab, const struct bench_opts *o, int have_dpdk);

/* RXP_BENCH_HO=stream,inflight,side (side r or d): one pass of that stream
 * on that side, for callgrind (functions ho_rx_burst / ho_dp_burst: the
 * timed part; ho_rx_alloc / ho_dp_alloc: pool get). Prints "frags N".
 * Returns the exit status, or -1 when the variable is not set. */
int ho_one(int have_dpdk);

/* RXP_BENCH_HO_PCAP=1 (and ho_rows): the same streams through a pcap, read
 * by `rxpath defrag` and by libpcap into DPDK; both must give the same
 * datagrams. 0 when they agree on every stream, 1 otherwise. */
int ho_pcap_check(int have_dpdk);

#endif
