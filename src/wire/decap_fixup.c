/*
 * The way back from decapsulation: a header stack that rxp_decap_link()
 * and rxp_decap_tunnel() recorded, put in front of another IP packet
 * (a reassembled datagram), gets every length field and checksum rewritten
 * to match it; or loses its tunnels when they cannot hold it. Headers are
 * rewritten innermost first, so that an outer checksum covers inner
 * headers already fixed.
 */
#include <string.h>

#include "decap_internal.h"
#include "rxpath/wire.h"

#define RT_FLAGS_FCS 0x10

static void wr16le(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

/* The pseudo-header sum for the UDP header at layer i: from the nearest IP
 * header outside it. */
static int udp_pseudo(const struct rxp_decap *d, unsigned i, const uint8_t *f, uint32_t ulen,
		      uint32_t *sum)
{
	while (i-- > 0) {
		const struct rxp_layer *l = &d->layer[i];
		uint8_t ph[8] = {0, 0, 0, RXP_IPPROTO_UDP};

		if (l->type != RXP_LAYER_IPV4 && l->type != RXP_LAYER_IPV6)
			continue;
		wr16(ph + 4, (uint16_t)ulen);
		if (l->type == RXP_LAYER_IPV4) {
			*sum = rxp_csum_partial(f + l->off + 12, 8, 0);
			*sum = rxp_csum_partial(ph + 2, 4, *sum); /* zero, protocol, length */
		} else {
			*sum = rxp_csum_partial(f + l->off + 8, 32, 0);
			*sum = rxp_csum_partial(ph, 8, *sum); /* the same words, reordered */
		}
		return 0;
	}
	return -1;
}

/* Writes a 16-bit length field; -1 when the length does not fit. */
static int set_len(uint8_t *p, uint32_t v)
{
	if (v > UINT16_MAX)
		return -1;
	wr16(p, (uint16_t)v);
	return 0;
}

static int fix_ipv4(uint8_t *p, uint32_t hlen, uint32_t tot)
{
	uint16_t c;

	if (set_len(p + 2, tot))
		return -1;
	wr16(p + 10, 0);
	c = rxp_ip_csum(p, hlen);
	memcpy(p + 10, &c, 2); /* rxp_csum_fold's value is in wire order */
	return 0;
}

static int fix_udp(const struct rxp_decap *d, unsigned i, uint8_t *f, uint8_t *p, uint32_t ulen)
{
	uint32_t sum;
	uint16_t c;

	if (set_len(p + 4, ulen))
		return -1;
	if (!p[6] && !p[7])
		return 0; /* no checksum: keep none */
	if (udp_pseudo(d, i, f, ulen, &sum))
		return -1;
	wr16(p + 6, 0);
	c = rxp_udp_csum_field(rxp_csum_partial(p, ulen, sum));
	memcpy(p + 6, &c, 2);
	return 0;
}

/* GRE: enhanced GRE (version 1) carries the payload length; the classic
 * header may carry a checksum over itself and what follows. */
static int fix_gre(uint8_t *p, uint32_t glen, uint32_t after)
{
	if ((p[1] & 0x07) == 1)
		return set_len(p + 4, after);
	if (p[0] & 0x80) {
		uint16_t c;

		wr16(p + 4, 0);
		c = rxp_csum_fold(rxp_csum_partial(p, glen, 0));
		memcpy(p + 4, &c, 2);
	}
	return 0;
}

static int fix_nflog(const struct rxp_layer *l, uint8_t *f, uint32_t len)
{
	uint32_t tl = len - l->aux;

	if (tl > UINT16_MAX)
		return -1;
	if (l->flags & RXP_LAYER_F_LE)
		wr16le(f + l->aux, (uint16_t)tl);
	else
		wr16(f + l->aux, (uint16_t)tl);
	return 0;
}

static int fix_one(const struct rxp_decap *d, unsigned i, uint8_t *f, uint32_t len)
{
	const struct rxp_layer *l = &d->layer[i];
	uint8_t *p = f + l->off;
	uint32_t rest = len - l->off; /* this header and what follows */

	switch (l->type) {
	case RXP_LAYER_IPV4:
		return fix_ipv4(p, l->len, rest);
	case RXP_LAYER_IPV6:
		return set_len(p + 4, rest - RXP_IPV6_HLEN);
	case RXP_LAYER_UDP:
		return fix_udp(d, i, f, p, rest);
	case RXP_LAYER_GRE:
		return fix_gre(p, rest, rest - l->len);
	case RXP_LAYER_GTPU:
		return set_len(p + 2, rest - 8);
	case RXP_LAYER_PPPOE:
		return set_len(p + 4, rest - 6);
	case RXP_LAYER_NFLOG:
		return fix_nflog(l, f, len);
	case RXP_LAYER_RADIOTAP:
		if (l->aux)
			f[l->aux] &= (uint8_t)~RT_FLAGS_FCS;
		return 0;
	default:
		return 0; /* no length field */
	}
}

int rxp_decap_fixup(const struct rxp_decap *d, uint8_t *frame, uint32_t len)
{
	if (len < d->ip_off)
		return -1;
	for (unsigned i = d->nlayers; i-- > 0;)
		if (fix_one(d, i, frame, len))
			return -1;
	return 0;
}

/* Sets the protocol field of link header l for an IP packet of family. */
static int set_family(const struct rxp_layer *l, uint8_t *f, uint8_t family)
{
	uint8_t *p = f + l->off;
	uint16_t et = family == 4 ? RXP_ETH_P_IP : RXP_ETH_P_IPV6;
	uint8_t ppp = family == 4 ? 0x21 : 0x57;
	uint32_t af;

	switch (l->type) {
	case RXP_LAYER_ETH:
		wr16(p + 12, et);
		return 0;
	case RXP_LAYER_VLAN:
	case RXP_LAYER_CHDLC:
		wr16(p + 2, et);
		return 0;
	case RXP_LAYER_SLL:
		wr16(p + 14, et);
		return 0;
	case RXP_LAYER_SLL2:
		wr16(p, et);
		return 0;
	case RXP_LAYER_LLC:
		wr16(p + 6, et);
		return 0;
	case RXP_LAYER_PPP:
		if (p[l->len - 1] == 0x21 || p[l->len - 1] == 0x57) {
			p[l->len - 1] = ppp; /* the low byte, compressed or not */
			return 0;
		}
		return -1;
	case RXP_LAYER_NULL:
	case RXP_LAYER_LOOP: {
		bool le = l->flags & RXP_LAYER_F_LE;
		uint32_t cur = le ? (uint32_t)(p[0] | p[1] << 8) : rd32(p);

		/* An IPv6 value already there is the capturing system's own. */
		af = family == 4 ? 2 : (cur != 2 ? cur : 24);
		if (le) {
			wr16le(p, (uint16_t)af);
			wr16le(p + 2, 0);
		} else {
			wr16(p, 0);
			wr16(p + 2, (uint16_t)af);
		}
		return 0;
	}
	case RXP_LAYER_NFLOG:
		p[0] = family == 4 ? 2 : 10;
		return 0;
	case RXP_LAYER_MPLS:
		return 0; /* the payload's version nibble says */
	default:
		return -1;
	}
}

int rxp_decap_strip(struct rxp_decap *d, uint8_t *frame, uint8_t family)
{
	unsigned i;

	for (i = 0; i < d->nlayers; i++)
		if (d->layer[i].type == RXP_LAYER_IPV4 || d->layer[i].type == RXP_LAYER_IPV6)
			break;
	if (i == d->nlayers || (family != 4 && family != 6))
		return -1;
	if (i > 0 && set_family(&d->layer[i - 1], frame, family))
		return -1;
	d->ip_off = d->layer[i].off;
	d->nlayers = (uint8_t)i;
	d->family = family;
	d->tunnels = 0;
	return 0;
}

const char *rxp_decap_tunnel_name(enum rxp_tunnel_type t)
{
	static const char *const n[RXP_TUNNEL_TYPE_MAX] = {
		[RXP_TUNNEL_NONE] = "none",   [RXP_TUNNEL_IPIP] = "ipip",
		[RXP_TUNNEL_GRE] = "gre",     [RXP_TUNNEL_ERSPAN] = "erspan",
		[RXP_TUNNEL_VXLAN] = "vxlan", [RXP_TUNNEL_GENEVE] = "geneve",
		[RXP_TUNNEL_GTPU] = "gtp-u",
	};

	return (unsigned)t < RXP_TUNNEL_TYPE_MAX ? n[t] : "?";
}

const char *rxp_decap_layer_name(enum rxp_layer_type t)
{
	static const char *const n[RXP_LAYER_TYPE_MAX] = {
		[RXP_LAYER_ETH] = "eth",	[RXP_LAYER_VLAN] = "vlan",
		[RXP_LAYER_MPLS] = "mpls",	[RXP_LAYER_PPPOE] = "pppoe",
		[RXP_LAYER_PPP] = "ppp",	[RXP_LAYER_CHDLC] = "chdlc",
		[RXP_LAYER_NULL] = "null",	[RXP_LAYER_LOOP] = "loop",
		[RXP_LAYER_SLL] = "sll",	[RXP_LAYER_SLL2] = "sll2",
		[RXP_LAYER_NFLOG] = "nflog",	[RXP_LAYER_RADIOTAP] = "radiotap",
		[RXP_LAYER_IEEE80211] = "wlan", [RXP_LAYER_LLC] = "llc",
		[RXP_LAYER_IPV4] = "ipv4",	[RXP_LAYER_IPV6] = "ipv6",
		[RXP_LAYER_UDP] = "udp",	[RXP_LAYER_GRE] = "gre",
		[RXP_LAYER_ERSPAN] = "erspan",	[RXP_LAYER_VXLAN] = "vxlan",
		[RXP_LAYER_GENEVE] = "geneve",	[RXP_LAYER_GTPU] = "gtp-u",
	};

	return (unsigned)t < RXP_LAYER_TYPE_MAX && n[t] ? n[t] : "?";
}
