/*
 * Drop reasons: the one list of why rxpath discards a packet.
 *
 * Every discard goes through rxp_pkt_drop(pkt, RXP_DROP_<REASON>), which
 * counts the reason on the packet's pool (per thread, summed on read).
 * Frames lost before they became a packet (no posted buffer, say) are counted
 * by the device with rxp_pktpool_count_drop(), against the same reasons.
 * Add a reason by adding one line here; names are what the CLI and JSON print.
 * SINK is reserved, never counted today, kept so that the values after it
 * stay as they were. LINKTYPE is counted per frame by a device that reads
 * captures whose frames have their own link types (`rxpath run --pcap`);
 * the library's pcap device refuses a file of a link type it does not read
 * when it opens it.
 *
 * RXP_DROP_NONE (0) is not a reason: it is what a check returns when it
 * finds nothing wrong ("valid"), so that every real reason is nonzero and
 * `if (r)` reads as "rejected". Functions that may fail return a negative
 * errno; those that judge a packet return an enum rxp_drop_reason (NONE or
 * why), a separate value, never folded into the errno. A drop counted
 * with NONE (or a value past the list) is counted as NOT_SPECIFIED.
 */
#ifndef RXPATH_DROP_H
#define RXPATH_DROP_H

#include "rxpath/compiler.h"

RXP_BEGIN_DECLS

#define RXP_DROP_REASONS(X)                                   \
	X(NONE, "none") /* not a drop: the check passed */    \
	X(NOT_SPECIFIED, "not_specified")                     \
	X(NOMEM, "nomem")                                     \
	X(PKT_TOO_SMALL, "pkt_too_small")                     \
	X(PKT_TOO_BIG, "pkt_too_big")                         \
	X(UNSHARE_FAIL, "unshare_fail")                       \
	/* dev */                                             \
	X(RX_NO_BUFFER, "rx_no_buffer")                       \
	X(RX_TOO_MANY_FRAGS, "rx_too_many_frags")             \
	X(RX_BAD_DESC, "rx_bad_desc")                         \
	X(XDP_DROP, "xdp_drop")                               \
	X(XDP_ABORTED, "xdp_aborted")                         \
	X(TX_RING_FULL, "tx_ring_full")                       \
	X(LINKTYPE, "unsupported_linktype")                   \
	X(L2_UNKNOWN, "l2_unknown_ethertype")                 \
	X(FAULT_INJECT, "fault_injected")                     \
	X(TX_ERROR, "tx_error")                               \
	/* net: IP input */                                   \
	X(IP_HDR, "ip_bad_header")                            \
	X(IP_CSUM, "ip_bad_checksum")                         \
	X(IP_TRUNCATED, "ip_truncated")                       \
	X(IP_PROTO, "ip_unknown_protocol")                    \
	X(IPV6_EXTHDR, "ipv6_bad_exthdr")                     \
	/* net: reassembly */                                 \
	X(FRAG_INVALID, "frag_invalid")                       \
	X(FRAG_DUP, "frag_duplicate")                         \
	X(FRAG_OVERLAP, "frag_overlap")                       \
	X(FRAG_TOO_BIG, "frag_too_big")                       \
	X(FRAG_ECN, "frag_ecn_mismatch")                      \
	X(FRAG_TIMEOUT, "frag_timeout")                       \
	X(FRAG_EVICT, "frag_evicted")                         \
	X(FRAG_MEM_LIMIT, "frag_mem_limit")                   \
	X(FRAG_QUEUE_LIMIT, "frag_queue_limit")               \
	X(FRAG_MAX_DIST, "frag_max_dist")                     \
	X(FRAG_TOO_MANY, "frag_too_many")                     \
	X(FRAG_IPV6_NESTED, "frag_ipv6_nested")               \
	X(FRAG_IPV6_INCOMPLETE, "frag_ipv6_incomplete_chain") \
	/* net: output and UDP */                             \
	X(FRAG_NEEDED_DF, "frag_needed_df")                   \
	X(FRAG_OUT_BAD_MTU, "frag_out_bad_mtu")               \
	X(UDP_HDR, "udp_bad_header")                          \
	X(UDP_CSUM, "udp_bad_checksum")                       \
	X(UDP_NO_PORT, "udp_no_port")                         \
	/* tipc */                                            \
	X(TIPC_HDR, "tipc_bad_header")                        \
	X(TIPC_BUNDLE, "tipc_bad_bundle")                     \
	X(TIPC_NESTED_BUNDLE, "tipc_nested_bundle")           \
	X(TIPC_NESTED_FRAGMENT, "tipc_nested_fragment")       \
	X(TIPC_NESTED_TUNNEL, "tipc_nested_tunnel")           \
	X(TIPC_NESTED_BCAST, "tipc_nested_bcast")             \
	X(TIPC_NESTED_LINK, "tipc_nested_link_user")          \
	X(TIPC_FRAG_SEQ, "tipc_frag_out_of_sequence")         \
	X(TIPC_FRAG_TYPE, "tipc_frag_bad_type")               \
	X(TIPC_FRAG_TOO_BIG, "tipc_frag_too_big")             \
	X(TIPC_FRAG_INVALID, "tipc_frag_invalid")             \
	X(TIPC_LINK_RESET, "tipc_link_reset")                 \
	X(TIPC_USER, "tipc_unknown_user")                     \
	X(TIPC_NO_PORT, "tipc_no_port")                       \
	X(TIPC_TUNNEL, "tipc_tunnel_unsupported")             \
	X(TIPC_UNHANDLED, "tipc_link_proto_unhandled")        \
	/* core */                                            \
	X(STEER_FULL, "steer_queue_full")                     \
	X(TIPC_NO_LINK, "tipc_no_link")                       \
	X(TEARDOWN, "teardown")                               \
	X(SINK, "sink_rejected") /* reserved */               \
	/* appended (values stay stable) */                   \
	X(XDP_REDIRECT_XTHREAD, "xdp_redirect_other_thread")  \
	X(L2_MALFORMED, "l2_bad_header")

enum rxp_drop_reason {
#define RXP_DROP_ENUM(name, str) RXP_DROP_##name,
	RXP_DROP_REASONS(RXP_DROP_ENUM)
#undef RXP_DROP_ENUM
		RXP_DROP_MAX
};

/* The stable, printable name of a reason ("frag_overlap"); "?" if out of range. */
const char *rxp_drop_reason_name(unsigned reason);

RXP_END_DECLS

#endif
