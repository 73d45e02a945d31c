/*
 * The network layer a worker runs: IPv4/IPv6 input (header checks, trim to
 * the IP length, reassembly) and UDP delivery by destination port.
 *
 * rxp_ip_rcv() consumes a packet whose data starts at the IP header and ends
 * with it delivered to a UDP handler or dropped with a reason. Checks, as
 * Linux's ip_rcv/ipv6_rcv and udp_rcv do: version, header length, total or
 * payload length within the packet (the rest is link padding and trimmed),
 * the IPv4 header checksum; UDP length within the IP payload and the UDP
 * checksum (optional for IPv4 when zero, required for IPv6). Fragments go
 * to the reassembly table first (include/rxpath/defrag.h). Counters carry
 * the names of /proc/net/snmp.
 */
#ifndef RXPATH_NET_H
#define RXPATH_NET_H

#include <stdint.h>

#include "rxpath/compiler.h"
#include "rxpath/defrag.h"
#include "rxpath/pkt.h"

RXP_BEGIN_DECLS

/* Receives a UDP datagram; consumes pkt. pkt->data is at the UDP payload,
 * pkt->network_off and transport_off locate the IP and UDP headers. */
typedef void (*rxp_udp_handler_fn)(void *arg, struct rxp_pkt *pkt);

/* Receives a complete IP datagram whose upper protocol is not UDP (ICMP,
 * ICMPv6 and NDP, TCP, ...): data at the IP header, the upper header at
 * l4_off. Consumes pkt. */
typedef void (*rxp_ip_other_fn)(void *arg, struct rxp_pkt *pkt, uint8_t proto, uint32_t l4_off);

/* UDP checksum validation. AUTO is Suricata's checksum-validation auto
 * mode for captures and live traffic taken on the sending host, where
 * checksum offload leaves the field unfinished: every checksum is checked,
 * and one that holds only the pseudo-header's sum (what Linux leaves for
 * the NIC, CHECKSUM_PARTIAL) is accepted and counted (InCsumOffload);
 * when more than 1 in 10 of the first 1000 checked datagrams are wrong,
 * checking stops (csum_auto_off) as offload is then the likely cause. */
enum rxp_udp_csum_mode {
	RXP_UDP_CSUM_CHECK = 0, /* always (Linux; the default) */
	RXP_UDP_CSUM_AUTO,
	RXP_UDP_CSUM_SKIP, /* never */
};
#define RXP_UDP_CSUM_SAMPLE 1000
#define RXP_UDP_CSUM_BAD_RATIO 10 /* 1 in 10 */

#define RXP_UDP_MAX_BINDS 16

struct rxp_ip_stats {
	uint64_t InReceives, InHdrErrors, InTruncatedPkts, InCsumErrors, InUnknownProtos,
		InDelivers;
};

struct rxp_udp_stats {
	uint64_t InDatagrams, NoPorts, InErrors, InCsumErrors;
	uint64_t InCsumOffload; /* AUTO: partial (offloaded) checksums accepted */
	uint64_t InCsumUnchecked; /* SKIP, or AUTO after it stopped checking */
	uint64_t csum_sampled, csum_sample_bad; /* AUTO's first datagrams */
	uint64_t csum_auto_off; /* 1 when AUTO stopped checking */
};

struct rxp_net {
	struct rxp_defrag_table *defrag; /* owned */
	struct {
		uint16_t port;
		rxp_udp_handler_fn fn;
		void *arg;
	} binds[RXP_UDP_MAX_BINDS];
	unsigned nbinds;
	rxp_udp_handler_fn any_fn; /* for ports nobody bound (NULL: NoPorts drop) */
	void *any_arg;
	/* for protocols other than UDP (NULL: dropped, ip_unknown_protocol) */
	rxp_ip_other_fn other_fn;
	void *other_arg;
	enum rxp_udp_csum_mode udp_csum;
	struct rxp_ip_stats ip4, ip6;
	struct rxp_udp_stats udp;
};

/* 0 or -errno (the reassembly table could not be made). */
int rxp_net_init(struct rxp_net *n, const struct rxp_defrag_config *defrag_cfg);
/* Frees the reassembly table and anything queued in it. */
void rxp_net_fini(struct rxp_net *n);
/* Deliver UDP datagrams for port (host order) to fn; port 0 catches every
 * port nobody bound. -ENOSPC past RXP_UDP_MAX_BINDS, -EEXIST if bound. */
int rxp_udp_bind(struct rxp_net *n, uint16_t port, rxp_udp_handler_fn fn, void *arg);

/* Consumes pkt (data at the IPv4 or IPv6 header). */
void rxp_ip_rcv(struct rxp_net *n, struct rxp_pkt *pkt, uint64_t now_ns);
/* The UDP step alone, for a complete datagram (data at the IP header);
 * consumes pkt. */
void rxp_udp_rcv(struct rxp_net *n, struct rxp_pkt *pkt);

RXP_END_DECLS

#endif
