/*
 * Decapsulation: from a captured frame to the IP packet it carries, through
 * link layers and tunnels, and back (the headers' length fields and
 * checksums fixed for a new IP packet). Packet formats only, no protocol
 * state: every parser takes (pointer, length), checks every length before
 * it reads, and never writes outside the buffer it is given.
 *
 * Link types (LINKTYPE_ values of pcap and pcapng files; DLT_RAW's platform
 * values 12 and 14 are taken as RAW):
 *   ETHERNET, with 802.1Q / 802.1ad / QinQ tags (0x8100, 0x88a8, 0x9100),
 *     MPLS label stacks (0x8847, 0x8848) and PPPoE sessions (0x8864)
 *   LINUX_SLL, LINUX_SLL2 (then an ethertype, VLAN tags included)
 *   NULL (host byte order, either), LOOP (network order): AF_INET and the
 *     AF_INET6 values of Linux, the BSDs and Darwin (10, 24, 28, 30)
 *   PPP, PPP_HDLC (address and control optional, protocol field compressed
 *     or not), PPP_ETHER (PPPoE without Ethernet), C_HDLC
 *   RAW, IPV4, IPV6
 *   NFLOG (TLVs in either byte order; the payload TLV)
 *   IEEE802_11 and IEEE802_11_RADIOTAP: data frames (QoS, four addresses,
 *     HT control, radiotap's padding flag), LLC/SNAP; protected frames,
 *     A-MSDUs and frames without a body carry no IP we can read
 * Tunnels, from a complete IP packet that is not a fragment:
 *   IP in IP (4in4, 6in4, 4in6, 6in6); GRE (RFC 2784/2890: checksum, key,
 *   sequence) carrying IPv4, IPv6, MPLS, Ethernet (0x6558), PPP (0x880b,
 *   also enhanced GRE version 1 as PPTP uses it) or ERSPAN type I and II
 *   (0x88be) and III (0x22eb); VXLAN (UDP 4789), GENEVE (UDP 6081),
 *   GTP-U G-PDUs (UDP 2152, extension headers included). The inner frame of
 *   an Ethernet-carrying tunnel is parsed as ETHERNET above.
 *
 * What tells two tunnels apart (struct rxp_decap_ctx) is the tunnel type,
 * its endpoints (the outer IP addresses), its key (GRE key, PPTP call id,
 * ERSPAN session, VXLAN/GENEVE VNI, GTP-U TEID) and the VLAN ids met inside
 * it; for the link level, its VLAN ids. Ports are not part of it (VXLAN
 * and GENEVE put flow entropy in the source port).
 */
#ifndef RXPATH_DECAP_H
#define RXPATH_DECAP_H

#include <stdbool.h>
#include <stdint.h>

#include "rxpath/compiler.h"

RXP_BEGIN_DECLS

#define RXP_LINKTYPE_NULL 0
#define RXP_LINKTYPE_ETHERNET 1
#define RXP_LINKTYPE_PPP 9
#define RXP_LINKTYPE_PPP_HDLC 50
#define RXP_LINKTYPE_PPP_ETHER 51
#define RXP_LINKTYPE_RAW 101
#define RXP_LINKTYPE_C_HDLC 104
#define RXP_LINKTYPE_IEEE802_11 105
#define RXP_LINKTYPE_LOOP 108
#define RXP_LINKTYPE_LINUX_SLL 113
#define RXP_LINKTYPE_IEEE802_11_RADIOTAP 127
#define RXP_LINKTYPE_IPV4 228
#define RXP_LINKTYPE_IPV6 229
#define RXP_LINKTYPE_NFLOG 239
#define RXP_LINKTYPE_LINUX_SLL2 276

enum rxp_layer_type {
	RXP_LAYER_ETH = 1,
	RXP_LAYER_VLAN,
	RXP_LAYER_MPLS, /* the whole label stack */
	RXP_LAYER_PPPOE, /* the session header; a PPP layer follows */
	RXP_LAYER_PPP, /* address and control if there, protocol field */
	RXP_LAYER_CHDLC,
	RXP_LAYER_NULL, /* host byte order */
	RXP_LAYER_LOOP,
	RXP_LAYER_SLL,
	RXP_LAYER_SLL2,
	RXP_LAYER_NFLOG, /* header and TLVs up to the payload's value */
	RXP_LAYER_RADIOTAP,
	RXP_LAYER_IEEE80211,
	RXP_LAYER_LLC, /* LLC/SNAP */
	RXP_LAYER_IPV4, /* an outer IP header (options, extension headers included) */
	RXP_LAYER_IPV6,
	RXP_LAYER_UDP,
	RXP_LAYER_GRE,
	RXP_LAYER_ERSPAN,
	RXP_LAYER_VXLAN,
	RXP_LAYER_GENEVE,
	RXP_LAYER_GTPU,
	RXP_LAYER_TYPE_MAX
};

enum rxp_tunnel_type {
	RXP_TUNNEL_NONE = 0,
	RXP_TUNNEL_IPIP, /* IPv4 or IPv6 in IPv4 or IPv6 */
	RXP_TUNNEL_GRE,
	RXP_TUNNEL_ERSPAN,
	RXP_TUNNEL_VXLAN,
	RXP_TUNNEL_GENEVE,
	RXP_TUNNEL_GTPU,
	RXP_TUNNEL_TYPE_MAX
};

/* What the parsers return (negative) when they cannot reach an IP header. */
enum rxp_decap_status {
	RXP_DECAP_OK = 0,
	RXP_DECAP_NOT_IP = -1, /* well formed, but carries something else (ARP, ...) */
	RXP_DECAP_MALFORMED = -2, /* a header that does not parse, or cut short */
	RXP_DECAP_UNKNOWN_LINK = -3, /* a link type this module does not know */
	RXP_DECAP_TOO_DEEP = -4, /* more headers than RXP_DECAP_MAX_LAYERS */
};

/* One header before the IP packet. Offsets are from the frame's first byte. */
struct rxp_layer {
	uint8_t type; /* enum rxp_layer_type */
	uint8_t flags; /* RXP_LAYER_F_* */
	uint16_t len; /* bytes of this header */
	uint32_t off;
	uint32_t aux; /* radiotap: offset of the flags byte (0: none); NFLOG: of
		       * the payload TLV */
};
#define RXP_LAYER_F_LE 0x01 /* NULL, NFLOG: little-endian fields */

#define RXP_DECAP_MAX_LAYERS 32
#define RXP_DECAP_MAX_VLANS 4

/* Compared as bytes: the parsers clear it whole before they fill it. */
struct rxp_decap_ctx {
	uint8_t tunnel; /* enum rxp_tunnel_type */
	uint8_t family; /* the tunnel's outer IP family (4 or 6); 0 at the link level */
	uint8_t nvlan;
	uint8_t has_key;
	uint32_t key;
	uint16_t vlan[RXP_DECAP_MAX_VLANS]; /* VLAN ids, outermost first */
	uint8_t src[16], dst[16]; /* tunnel endpoints (IPv4: first 4 bytes) */
};

struct rxp_decap {
	uint32_t ip_off; /* the IP header reached */
	uint8_t family; /* of that header: 4 or 6 */
	uint8_t nlayers; /* headers in front of it */
	uint8_t tunnels; /* tunnels entered */
	/* The last EtherType a header gave for what follows it (0: none):
	 * for RXP_DECAP_NOT_IP, what the frame carries instead of IP when a
	 * header says so (ARP: 0x0806). */
	uint16_t ethertype;
	struct rxp_decap_ctx ctx; /* of the innermost tunnel (or the link level) */
	struct rxp_layer layer[RXP_DECAP_MAX_LAYERS];
};

/* Parses a frame of link type linktype, len bytes, to its IP header: 0 with
 * d filled in (ctx: the VLAN ids), or a negative enum rxp_decap_status. */
int rxp_decap_link(struct rxp_decap *d, uint32_t linktype, const uint8_t *frame, uint32_t len);

/* What a device that takes link headers off delivers of a frame of link
 * type linktype (len bytes at frame): the bytes before its payload, and in
 * *ethertype the payload's EtherType. The payload is the IP packet
 * (0x0800 or 0x86dd), or, for a frame that carries something else, what
 * follows its link headers (*ethertype what they say it is, ARP say, or 0
 * when they say nothing). -1 when the headers do not parse (cut short, a
 * length or IP version they cannot have) or leave nothing after them. */
int rxp_decap_payload(uint32_t linktype, const uint8_t *frame, uint32_t len, uint16_t *ethertype);

/* Whether rxp_decap_link knows linktype. */
bool rxp_decap_linktype_known(uint32_t linktype);

/* Whether a frame of link type linktype (len bytes at frame) says that the
 * capturing host sent it: a Linux cooked capture's (SLL, SLL2: tcpdump or
 * dumpcap -i any) packet type PACKET_OUTGOING. Such a frame is a copy of
 * one going out (everything the host sends; on a router, each forwarded
 * frame again), which a live AF_PACKET socket that ignores outgoing
 * frames, as rxpath's does, never receives. (libpcap leaves loopback's
 * outgoing copies out of an -i any capture itself.) False for every other
 * link type and for a frame too short to say. */
bool rxp_decap_outgoing(uint32_t linktype, const uint8_t *frame, uint32_t len);

/* ip: the IP packet at d->ip_off, its whole length (len: what its header
 * says), complete and not a fragment. If it carries a tunnel the inner IP
 * packet of which is all there, pushes the outer IP header and the tunnel's
 * headers onto d, moves d->ip_off to the inner IP header, sets d->ctx to the
 * tunnel's and returns 1. 0: no tunnel; negative: a tunnel whose headers do
 * not parse (d is left as it was). */
int rxp_decap_tunnel(struct rxp_decap *d, const uint8_t *ip, uint32_t len);

/* The length of the IP packet at ip (avail bytes there) as its header says,
 * in *iplen, and whether it is a fragment (IPv4 MF or offset; an IPv6
 * fragment header among the first extension headers). 0, or -1 for a header
 * that does not parse. An IPv6 jumbogram's length is taken as avail. */
int rxp_decap_ip_info(const uint8_t *ip, uint32_t avail, uint32_t *iplen, bool *frag);

/* Where the IPv6 packet at ip (avail bytes there, at least the fixed
 * header) has its fragment header: its offset from ip when one comes among
 * the extension headers that may precede it (Hop-by-Hop first, Routing,
 * Destination Options; at most 8 walked), else 0. The walk of
 * rxp_decap_ip_info, which calls it a fragment exactly then; the fragment
 * header itself may run past avail. */
uint32_t rxp_decap_ipv6_frag_off(const uint8_t *ip, uint32_t avail);

/* frame: d's headers followed by a new IP packet, len bytes in all (the
 * packet ends at len). Sets every length field in those headers to cover
 * it and recomputes their checksums (IPv4 header; UDP where nonzero; GRE
 * where present), innermost first; clears radiotap's FCS-present flag (the
 * frame then has none). 0, or -1 when a length field cannot hold the new
 * length (past 65,535 bytes): frame may then be partly rewritten. */
int rxp_decap_fixup(const struct rxp_decap *d, uint8_t *frame, uint32_t len);

/* Drops d's tunnel headers, keeping the link layer: d->ip_off becomes where
 * the first IP header was, and the link header's protocol field is set for
 * an IP packet of the given family. 0, or -1 when d has no tunnel or the
 * link layer cannot say that family. frame: d's headers (only the link
 * header is rewritten). */
int rxp_decap_strip(struct rxp_decap *d, uint8_t *frame, uint8_t family);

const char *rxp_decap_tunnel_name(enum rxp_tunnel_type t);
const char *rxp_decap_layer_name(enum rxp_layer_type t);

RXP_END_DECLS

#endif
