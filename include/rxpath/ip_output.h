/*
 * IP output: fragmenting an IPv4 or IPv6 datagram to fit a link MTU.
 *
 * rxp_ip_fragment() takes a packet whose data starts at the IP header and
 * appends to a caller's queue either the packet itself (it fits) or its
 * fragments, in order:
 *
 *   IPv4 (RFC 791): every fragment but the last carries a multiple of 8
 *   payload bytes; the first keeps all options, later ones only those with
 *   the copy flag (bit 0x80), padded with End-of-Options to a 4-byte
 *   boundary; a packet with DF set that does not fit is refused (dropped,
 *   counted as frag_needed_df, -EMSGSIZE), as a router would answer with
 *   ICMP "fragmentation needed". A whole datagram gets a fresh ID from the
 *   ID table; a packet that is already a fragment keeps its ID and offset
 *   base, and its last piece keeps its MF flag.
 *
 *   IPv6 (RFC 8200 §4.5): the unfragmentable part (the IPv6 header,
 *   Hop-by-Hop options, and extension headers up to and including the last
 *   Routing header) is repeated in every fragment, followed by a fragment
 *   header and a multiple of 8 payload bytes (all but the last). The ID is a
 *   random non-zero 32-bit value (rxp_ipid_v6()). MTUs below 1280 are
 *   refused; a packet that already has a fragment header is refused.
 *
 * Zero copy: payload bytes that lie in the original's page frags, or in its
 * frag_list members, are referenced from the fragments (rxp_page refs taken,
 * rxp_pkt_add_frag); only bytes in the original's linear part are copied.
 * When one fragment would need more than RXP_MAX_FRAGS references, that
 * fragment is copied instead. The original's bytes are never written.
 *
 * A packet that fits is passed on unchanged (its ID is the caller's choice;
 * see rxp_ipid_select_v4() and RFC 6864 for atomic datagrams).
 */
#ifndef RXPATH_IP_OUTPUT_H
#define RXPATH_IP_OUTPUT_H

#include <stdint.h>

#include "rxpath/compiler.h"
#include "rxpath/pkt.h"

RXP_BEGIN_DECLS

#define RXP_IPV4_MIN_MTU 68
#define RXP_IPV6_MIN_MTU 1280
#define RXP_IP_MAX_MTU 65535
/* Longest IPv6 unfragmentable part accepted (it is repeated per fragment). */
#define RXP_IPV6_UNFRAG_MAX 1024

struct rxp_ipid_table;

/*
 * Fragment pkt (data at the IP header) for a link MTU of mtu bytes and
 * append the result to out. ids gives IPv4 IDs (required for IPv4, unused
 * for IPv6). Consumes pkt on every path.
 *
 * Returns the number of packets appended (1 when pkt fit), or a negative
 * errno after dropping pkt with a counted reason and appending nothing:
 *   -EINVAL    malformed header (ip_bad_header, ipv6_bad_exthdr,
 *              ip_truncated), already an IPv6 fragment (ipv6_bad_exthdr),
 *              an IPv4 datagram to cut and no ID table (not_specified)
 *   -EMSGSIZE  DF set and too big (frag_needed_df); MTU below the
 *              family's minimum or too small for the headers
 *              (frag_out_bad_mtu)
 *   -ENOMEM    out of packets or buffers (nomem)
 *   -EOPNOTSUPP a frag_list member that has its own frag_list
 *              (not_specified)
 * A packet that fits is still checked: its IPv4 header and options, or its
 * IPv6 header and length, must be well formed (its IPv6 extension headers
 * are only walked when it has to be cut). A fitting DF packet passes.
 */
int rxp_ip_fragment(struct rxp_pkt *pkt, uint32_t mtu, struct rxp_ipid_table *ids,
		    struct rxp_pkt_queue *out);

RXP_END_DECLS

#endif
