/*
 * Link layers: from a captured frame of a given link type to its IP header
 * (see rxpath/decap.h for the list). Each parser checks the length of
 * every header before it reads it and pushes what it passed onto the
 * struct rxp_decap, so that the headers can be rewritten later for another
 * IP packet (rxp_decap_fixup, in decap_tunnel.c). Ethernet's ethertype
 * dispatch is shared with the tunnels that carry Ethernet.
 */
#include <string.h>

#include "decap_internal.h"
#include "rxpath/wire.h"

#define ETH_P_8021AD 0x88a8
#define ETH_P_QINQ 0x9100 /* older QinQ outer tag */
#define ETH_P_MPLS_UC 0x8847
#define ETH_P_MPLS_MC 0x8848
#define ETH_P_PPPOE_SESS 0x8864
#define PPP_IP 0x0021
#define PPP_IPV6 0x0057
#define MPLS_MAX_LABELS 16u
#define NFULA_PAYLOAD 9u
#define ARPHRD_NETLINK 824u
#define PACKET_OUTGOING 4u /* a cooked capture's packet type: sent by the host */

int dc_at_ip(struct rxp_decap *d, const struct dview *v, uint32_t off, uint8_t family)
{
	uint8_t ver;

	if (off >= v->len)
		return RXP_DECAP_MALFORMED;
	ver = v->b[off] >> 4;
	if ((ver != 4 && ver != 6) || (family && ver != family))
		return RXP_DECAP_MALFORMED;
	d->ip_off = v->base + off;
	d->family = ver;
	return 0;
}

static int mpls(struct rxp_decap *d, const struct dview *v, uint32_t off)
{
	uint32_t n;
	int r;

	for (n = 1; n <= MPLS_MAX_LABELS; n++) {
		uint32_t e = off + 4 * n;

		if (e > v->len)
			return RXP_DECAP_MALFORMED;
		if (!(v->b[e - 2] & 0x01)) /* bottom of stack not yet */
			continue;
		r = dc_push(d, v, RXP_LAYER_MPLS, off, 4 * n, 0, 0);
		if (r)
			return r;
		if (e >= v->len)
			return RXP_DECAP_MALFORMED;
		/* No protocol field: the payload's first nibble says; 0 is a
		 * pseudowire control word, not IP. */
		if ((v->b[e] >> 4) != 4 && (v->b[e] >> 4) != 6) {
			d->ethertype = 0; /* what follows the labels has none */
			return RXP_DECAP_NOT_IP;
		}
		return dc_at_ip(d, v, e, 0);
	}
	return RXP_DECAP_TOO_DEEP;
}

/* PPPoE session header (RFC 2516); its length field covers the PPP frame
 * behind it, which may be followed by padding. RFC 2516 forbids
 * compressing the PPP protocol field, but it is read either way. */
static int pppoe(struct rxp_decap *d, const struct dview *v, uint32_t off)
{
	const uint8_t *p = v->b + off;
	uint16_t plen;
	int r;

	if (off + 6 > v->len)
		return RXP_DECAP_MALFORMED;
	if (p[0] != 0x11 || p[1] != 0x00)
		return RXP_DECAP_MALFORMED;
	plen = rd16(p + 4);
	if (plen < 1 || (uint32_t)plen > v->len - off - 6)
		return RXP_DECAP_MALFORMED;
	r = dc_push(d, v, RXP_LAYER_PPPOE, off, 6, 0, 0);
	return r ? r : dc_ppp(d, v, off + 6, false);
}

int dc_ppp(struct rxp_decap *d, const struct dview *v, uint32_t off, bool acfc)
{
	uint32_t h = off;
	uint16_t proto;
	int r;

	if (acfc && h + 2 <= v->len && v->b[h] == 0xff && v->b[h + 1] == 0x03)
		h += 2;
	if (h >= v->len)
		return RXP_DECAP_MALFORMED;
	if (v->b[h] & 1) { /* protocol field compressed to one byte */
		proto = v->b[h];
		h += 1;
	} else {
		if (h + 2 > v->len || !(v->b[h + 1] & 1))
			return RXP_DECAP_MALFORMED;
		proto = rd16(v->b + h);
		h += 2;
	}
	r = dc_push(d, v, RXP_LAYER_PPP, off, h - off, 0, 0);
	if (r)
		return r;
	if (proto == PPP_IP)
		return dc_at_ip(d, v, h, 4);
	if (proto == PPP_IPV6)
		return dc_at_ip(d, v, h, 6);
	d->ethertype = 0; /* a PPP protocol (LCP, say) is no EtherType */
	return RXP_DECAP_NOT_IP;
}

int dc_ethertype(struct rxp_decap *d, const struct dview *v, uint32_t off, uint16_t type)
{
	int r;

	for (;;) {
		d->ethertype = type;
		switch (type) {
		case RXP_ETH_P_IP:
			return dc_at_ip(d, v, off, 4);
		case RXP_ETH_P_IPV6:
			return dc_at_ip(d, v, off, 6);
		case RXP_ETH_P_8021Q:
		case ETH_P_8021AD:
		case ETH_P_QINQ:
			if (off + 4 > v->len)
				return RXP_DECAP_MALFORMED;
			if (d->ctx.nvlan >= RXP_DECAP_MAX_VLANS)
				return RXP_DECAP_TOO_DEEP;
			r = dc_push(d, v, RXP_LAYER_VLAN, off, 4, 0, 0);
			if (r)
				return r;
			d->ctx.vlan[d->ctx.nvlan++] = rd16(v->b + off) & 0x0fff;
			type = rd16(v->b + off + 2);
			off += 4;
			break;
		case ETH_P_MPLS_UC:
		case ETH_P_MPLS_MC:
			return mpls(d, v, off);
		case ETH_P_PPPOE_SESS:
			return pppoe(d, v, off);
		default:
			return RXP_DECAP_NOT_IP;
		}
	}
}

int dc_ether(struct rxp_decap *d, const struct dview *v, uint32_t off)
{
	int r;

	if (off + RXP_ETH_HLEN > v->len)
		return RXP_DECAP_MALFORMED;
	r = dc_push(d, v, RXP_LAYER_ETH, off, RXP_ETH_HLEN, 0, 0);
	return r ? r : dc_ethertype(d, v, off + RXP_ETH_HLEN, rd16(v->b + off + 12));
}

static int sll(struct rxp_decap *d, const struct dview *v, bool v2)
{
	uint32_t hl = v2 ? 20 : 16;
	uint16_t hatype, proto;
	int r;

	if (v->len < hl)
		return RXP_DECAP_MALFORMED;
	hatype = rd16(v->b + (v2 ? 8 : 2));
	proto = rd16(v->b + (v2 ? 0 : 14));
	r = dc_push(d, v, v2 ? RXP_LAYER_SLL2 : RXP_LAYER_SLL, 0, hl, 0, 0);
	if (r)
		return r;
	/* A netlink socket's frames: the protocol field is a netlink family,
	 * not an EtherType. (ARPHRD_IPGRE's is a GRE protocol type, which is
	 * one: 0x0800 says IPv4 follows, as tshark reads it; a gre0
	 * device's frames are IP.) */
	if (hatype == ARPHRD_NETLINK)
		return RXP_DECAP_NOT_IP;
	return dc_ethertype(d, v, hl, proto);
}

/* BSD loopback: a 4-byte address family, in the capturing host's byte order
 * (NULL) or network order (LOOP). */
static int null_loop(struct rxp_decap *d, const struct dview *v, bool loop)
{
	uint32_t af;
	uint8_t fl = 0;
	int r;

	if (v->len < 4)
		return RXP_DECAP_MALFORMED;
	af = rd32(v->b);
	if (!loop) {
		uint32_t le = (uint32_t)v->b[0] | (uint32_t)v->b[1] << 8 | (uint32_t)v->b[2] << 16 |
			      (uint32_t)v->b[3] << 24;

		/* The family is small: the order that makes it so is the host's. */
		if (le <= 0xffff) {
			af = le;
			fl = RXP_LAYER_F_LE;
		}
	}
	r = dc_push(d, v, loop ? RXP_LAYER_LOOP : RXP_LAYER_NULL, 0, 4, fl, 0);
	if (r)
		return r;
	if (af == 2)
		return dc_at_ip(d, v, 4, 4);
	if (af == 10 || af == 24 || af == 28 || af == 30)
		return dc_at_ip(d, v, 4, 6);
	return RXP_DECAP_NOT_IP;
}

static int chdlc(struct rxp_decap *d, const struct dview *v)
{
	int r;

	if (v->len < 4)
		return RXP_DECAP_MALFORMED;
	r = dc_push(d, v, RXP_LAYER_CHDLC, 0, 4, 0, 0);
	if (r)
		return r;
	d->ethertype = rd16(v->b + 2); /* Cisco HDLC's protocol is one */
	switch (d->ethertype) {
	case RXP_ETH_P_IP:
		return dc_at_ip(d, v, 4, 4);
	case RXP_ETH_P_IPV6:
		return dc_at_ip(d, v, 4, 6);
	default:
		return RXP_DECAP_NOT_IP;
	}
}

/* Walks NFLOG's TLVs (lengths and types in the logging host's order, each
 * padded to 4 bytes) to the payload; 0 and its TLV's offset, or -1. */
static int nflog_walk(const struct dview *v, bool le, uint32_t *tlv)
{
	uint32_t off = 4;

	while (off + 4 <= v->len) {
		const uint8_t *p = v->b + off;
		uint32_t l = le ? (uint32_t)(p[0] | p[1] << 8) : rd16(p);
		uint32_t t = (le ? (uint32_t)(p[2] | p[3] << 8) : rd16(p + 2)) & 0x3fff;

		if (l < 4 || l > v->len - off)
			return -1;
		if (t == NFULA_PAYLOAD) {
			*tlv = off;
			return 0;
		}
		off += (l + 3) & ~3u;
	}
	return -1;
}

static int nflog(struct rxp_decap *d, const struct dview *v)
{
	uint32_t tlv;
	bool le = true;
	int r;

	if (v->len < 4 || v->b[1] != 0)
		return RXP_DECAP_MALFORMED;
	if (nflog_walk(v, true, &tlv)) {
		le = false;
		if (nflog_walk(v, false, &tlv))
			return RXP_DECAP_MALFORMED;
	}
	r = dc_push(d, v, RXP_LAYER_NFLOG, 0, tlv + 4, le ? RXP_LAYER_F_LE : 0, tlv);
	if (r)
		return r;
	switch (v->b[0]) {
	case 2:
		return dc_at_ip(d, v, tlv + 4, 4);
	case 10:
		return dc_at_ip(d, v, tlv + 4, 6);
	default:
		return RXP_DECAP_NOT_IP; /* bridge, ARP, ... */
	}
}

/* LLC/SNAP (RFC 1042 and 802.1H) with an ethertype. */
static int llc_snap(struct rxp_decap *d, const struct dview *v, uint32_t off)
{
	const uint8_t *p = v->b + off;
	int r;

	if (off + 8 > v->len)
		return RXP_DECAP_MALFORMED;
	if (p[0] != 0xaa || p[1] != 0xaa || p[2] != 0x03 || p[3] != 0 || p[4] != 0 ||
	    (p[5] != 0 && p[5] != 0xf8))
		return RXP_DECAP_NOT_IP;
	r = dc_push(d, v, RXP_LAYER_LLC, off, 8, 0, 0);
	if (r)
		return r;
	d->ethertype = rd16(p + 6);
	switch (d->ethertype) {
	case RXP_ETH_P_IP:
		return dc_at_ip(d, v, off + 8, 4);
	case RXP_ETH_P_IPV6:
		return dc_at_ip(d, v, off + 8, 6);
	default:
		return RXP_DECAP_NOT_IP;
	}
}

/* An 802.11 data frame at off; pad: radiotap says the header is padded to
 * 32 bits. */
static int ieee80211(struct rxp_decap *d, const struct dview *v, uint32_t off, bool pad)
{
	const uint8_t *p = v->b + off;
	uint32_t hl = 24;
	uint8_t fc0, fc1;
	int r;

	if (off + hl > v->len)
		return RXP_DECAP_MALFORMED;
	fc0 = p[0];
	fc1 = p[1];
	if ((fc0 & 0x03) != 0)
		return RXP_DECAP_MALFORMED; /* protocol version */
	if (((fc0 >> 2) & 0x03) != 2 || (fc0 & 0x40))
		return RXP_DECAP_NOT_IP; /* not data, or a subtype without a body */
	if (fc1 & 0x40)
		return RXP_DECAP_NOT_IP; /* protected: encrypted body */
	if ((fc1 & 0x04) || (p[22] & 0x0f))
		return RXP_DECAP_NOT_IP; /* an 802.11 fragment */
	if ((fc1 & 0x03) == 0x03)
		hl += 6; /* four addresses */
	if (fc0 & 0x80) { /* QoS data */
		if (off + hl + 2 > v->len)
			return RXP_DECAP_MALFORMED;
		if (p[hl] & 0x80)
			return RXP_DECAP_NOT_IP; /* A-MSDU */
		hl += 2;
		if (fc1 & 0x80)
			hl += 4; /* HT control */
	}
	if (pad)
		hl = (hl + 3) & ~3u;
	if (off + hl > v->len)
		return RXP_DECAP_MALFORMED;
	r = dc_push(d, v, RXP_LAYER_IEEE80211, off, hl, 0, 0);
	return r ? r : llc_snap(d, v, off + hl);
}

#define RT_FLAGS_FCS 0x10
#define RT_FLAGS_PAD 0x20

static int radiotap(struct rxp_decap *d, struct dview *v)
{
	uint32_t rlen, present, pos = 8, flags_off = 0;
	uint32_t p0;
	uint8_t flags = 0;
	int r;

	if (v->len < 8 || v->b[0] != 0)
		return RXP_DECAP_MALFORMED;
	rlen = (uint32_t)(v->b[2] | v->b[3] << 8);
	if (rlen < 8 || rlen > v->len)
		return RXP_DECAP_MALFORMED;
	p0 = present = (uint32_t)v->b[4] | (uint32_t)v->b[5] << 8 | (uint32_t)v->b[6] << 16 |
		       (uint32_t)v->b[7] << 24;
	while (present & 0x80000000u) { /* more present words */
		if (pos + 4 > rlen)
			return RXP_DECAP_MALFORMED;
		present = (uint32_t)v->b[pos + 3] << 24;
		pos += 4;
	}
	if (p0 & 0x01) /* TSFT: 8 bytes, 8-aligned */
		pos = ((pos + 7) & ~7u) + 8;
	if (p0 & 0x02) { /* flags: one byte */
		if (pos >= rlen)
			return RXP_DECAP_MALFORMED;
		flags_off = pos;
		flags = v->b[pos];
	}
	r = dc_push(d, v, RXP_LAYER_RADIOTAP, 0, rlen, 0, flags_off);
	if (r)
		return r;
	if (flags & RT_FLAGS_FCS) {
		if (v->len - rlen < 4)
			return RXP_DECAP_MALFORMED;
		v->len -= 4; /* the FCS is no part of the 802.11 frame's body */
	}
	return ieee80211(d, v, rlen, flags & RT_FLAGS_PAD);
}

bool rxp_decap_linktype_known(uint32_t linktype)
{
	switch (linktype) {
	case RXP_LINKTYPE_NULL:
	case RXP_LINKTYPE_ETHERNET:
	case RXP_LINKTYPE_PPP:
	case RXP_LINKTYPE_PPP_HDLC:
	case RXP_LINKTYPE_PPP_ETHER:
	case RXP_LINKTYPE_RAW:
	case 12: /* DLT_RAW on most platforms */
	case 14: /* DLT_RAW on OpenBSD */
	case RXP_LINKTYPE_C_HDLC:
	case RXP_LINKTYPE_IEEE802_11:
	case RXP_LINKTYPE_LOOP:
	case RXP_LINKTYPE_LINUX_SLL:
	case RXP_LINKTYPE_IEEE802_11_RADIOTAP:
	case RXP_LINKTYPE_IPV4:
	case RXP_LINKTYPE_IPV6:
	case RXP_LINKTYPE_NFLOG:
	case RXP_LINKTYPE_LINUX_SLL2:
		return true;
	default:
		return false;
	}
}

bool rxp_decap_outgoing(uint32_t linktype, const uint8_t *frame, uint32_t len)
{
	/* (the packet type: SLL's first two bytes, SLL2's eleventh byte) */
	if (linktype == RXP_LINKTYPE_LINUX_SLL)
		return len >= 16 && frame[0] == 0 && frame[1] == PACKET_OUTGOING;
	if (linktype == RXP_LINKTYPE_LINUX_SLL2)
		return len >= 20 && frame[10] == PACKET_OUTGOING;
	return false;
}

int rxp_decap_link(struct rxp_decap *d, uint32_t linktype, const uint8_t *frame, uint32_t len)
{
	struct dview v = {.b = frame, .len = len, .base = 0};

	memset(d, 0, offsetof(struct rxp_decap, layer));
	switch (linktype) {
	case RXP_LINKTYPE_ETHERNET:
		return dc_ether(d, &v, 0);
	case RXP_LINKTYPE_LINUX_SLL:
		return sll(d, &v, false);
	case RXP_LINKTYPE_LINUX_SLL2:
		return sll(d, &v, true);
	case RXP_LINKTYPE_NULL:
		return null_loop(d, &v, false);
	case RXP_LINKTYPE_LOOP:
		return null_loop(d, &v, true);
	case RXP_LINKTYPE_PPP:
	case RXP_LINKTYPE_PPP_HDLC:
		return dc_ppp(d, &v, 0, true);
	case RXP_LINKTYPE_PPP_ETHER:
		return pppoe(d, &v, 0);
	case RXP_LINKTYPE_C_HDLC:
		return chdlc(d, &v);
	case RXP_LINKTYPE_RAW:
	case 12:
	case 14:
		return dc_at_ip(d, &v, 0, 0);
	case RXP_LINKTYPE_IPV4:
		return dc_at_ip(d, &v, 0, 4);
	case RXP_LINKTYPE_IPV6:
		return dc_at_ip(d, &v, 0, 6);
	case RXP_LINKTYPE_NFLOG:
		return nflog(d, &v);
	case RXP_LINKTYPE_IEEE802_11:
		return ieee80211(d, &v, 0, false);
	case RXP_LINKTYPE_IEEE802_11_RADIOTAP:
		return radiotap(d, &v);
	default:
		return RXP_DECAP_UNKNOWN_LINK;
	}
}

int rxp_decap_payload(uint32_t linktype, const uint8_t *frame, uint32_t len, uint16_t *ethertype)
{
	struct rxp_decap d;
	uint32_t skip;
	int r = rxp_decap_link(&d, linktype, frame, len);

	*ethertype = 0;
	if (r == RXP_DECAP_OK) {
		*ethertype = d.family == 4 ? RXP_ETH_P_IP : RXP_ETH_P_IPV6;
		skip = d.ip_off;
	} else if (r == RXP_DECAP_NOT_IP) {
		const struct rxp_layer *l = d.nlayers ? &d.layer[d.nlayers - 1] : NULL;

		*ethertype = d.ethertype;
		skip = l ? l->off + l->len : 0;
	} else {
		return -1;
	}
	return skip < len ? (int)skip : -1;
}
