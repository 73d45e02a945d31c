/*
 * Tunnels, and the way back: rxp_decap_tunnel() enters the tunnel an IP
 * packet carries (IP in IP, GRE with ERSPAN and PPP, VXLAN, GENEVE, GTP-U),
 * rxp_decap_fixup() rewrites a header stack's lengths and checksums for a
 * new innermost packet, rxp_decap_strip() drops the tunnels from a stack.
 *
 * rxp_decap_tunnel() changes d only when it reaches a complete inner IP
 * packet: on any other outcome d is as it was, so a caller can always use
 * the outer packet instead.
 */
#include <stddef.h>
#include <string.h>

#include "decap_internal.h"
#include "rxpath/wire.h"

#define GRE_C 0x8000
#define GRE_R 0x4000
#define GRE_K 0x2000
#define GRE_S 0x1000
#define GRE_A 0x0080 /* version 1: acknowledgment number present */
#define GRE_V0_MUST_BE_ZERO 0x4ff8 /* routing, strict route, recursion, flags */
#define GRE_V1_MUST_BE_ZERO 0xcf78
#define ETH_P_TEB 0x6558
#define ETH_P_PPP 0x880b
#define ETH_P_ERSPAN 0x88be
#define ETH_P_ERSPAN3 0x22eb
#define ETH_P_MPLS_UC 0x8847
#define ETH_P_MPLS_MC 0x8848
#define UDP_VXLAN 4789
#define UDP_GENEVE 6081
#define UDP_GTPU 2152
#define GTPU_G_PDU 0xff
#define GTPU_MAX_EXT 16u
#define IPV6_MAX_EXT 8u

uint32_t rxp_decap_ipv6_frag_off(const uint8_t *ip, uint32_t avail)
{
	uint32_t pos = RXP_IPV6_HLEN;
	uint8_t nh = ip[6];

	for (unsigned i = 0; i < IPV6_MAX_EXT && pos + 2 <= avail; i++) {
		uint32_t el;

		if (nh == RXP_IPPROTO_FRAGMENT)
			return pos;
		if (!rxp_ipv6_ext_before_frag(nh, pos))
			return 0;
		el = rxp_ipv6_ext_len(nh, ip + pos); /* at least 8 for these */
		nh = ip[pos];
		pos += el;
	}
	return 0;
}

int rxp_decap_ip_info(const uint8_t *ip, uint32_t avail, uint32_t *iplen, bool *frag)
{
	if (avail < 1)
		return -1;
	if ((ip[0] >> 4) == 4) {
		uint32_t ihl = (ip[0] & 0x0f) * 4u, tot;

		if (avail < RXP_IPV4_HLEN || ihl < RXP_IPV4_HLEN)
			return -1;
		tot = rd16(ip + 2);
		if (tot < ihl)
			return -1;
		*iplen = tot;
		*frag = (rd16(ip + 6) & (RXP_IP_MF | RXP_IP_OFFMASK)) != 0;
		return 0;
	}
	if ((ip[0] >> 4) == 6) {
		uint32_t pl;

		if (avail < RXP_IPV6_HLEN)
			return -1;
		pl = rd16(ip + 4);
		*iplen = pl || ip[6] != RXP_IPPROTO_HOPOPTS ? RXP_IPV6_HLEN + pl : avail;
		*frag = rxp_decap_ipv6_frag_off(ip, avail) != 0;
		return 0;
	}
	return -1;
}

static int erspan(struct rxp_decap *d, const struct dview *v, uint32_t off, bool v3)
{
	const uint8_t *p = v->b + off;
	uint32_t hl = v3 ? 12 : 8;
	int r;

	if (off + hl > v->len)
		return RXP_DECAP_MALFORMED;
	if ((p[0] >> 4) != (v3 ? 2 : 1))
		return RXP_DECAP_MALFORMED;
	d->ctx.has_key = 1;
	d->ctx.key = (uint32_t)(p[2] & 0x03) << 8 | p[3]; /* session id */
	if (v3) {
		uint8_t ft = (p[10] >> 2) & 0x1f;

		if (p[11] & 0x01) /* platform-specific subheader */
			hl += 8;
		if (off + hl > v->len)
			return RXP_DECAP_MALFORMED;
		r = dc_push(d, v, RXP_LAYER_ERSPAN, off, hl, 0, 0);
		if (r)
			return r;
		if (ft == 2)
			return dc_at_ip(d, v, off + hl, 0);
		if (ft != 0)
			return RXP_DECAP_NOT_IP;
		return dc_ether(d, v, off + hl);
	}
	r = dc_push(d, v, RXP_LAYER_ERSPAN, off, hl, 0, 0);
	return r ? r : dc_ether(d, v, off + hl);
}

static int gre(struct rxp_decap *d, const struct dview *v, uint32_t off)
{
	const uint8_t *p = v->b + off;
	uint32_t hl = 4, keyoff = 0;
	uint16_t fl, proto;
	int r;

	if (off + 4 > v->len)
		return RXP_DECAP_MALFORMED;
	fl = rd16(p);
	proto = rd16(p + 2);
	switch (fl & 0x7) {
	case 0:
		if (fl & GRE_V0_MUST_BE_ZERO)
			return RXP_DECAP_MALFORMED;
		if (fl & GRE_C)
			hl += 4;
		if (fl & GRE_K)
			keyoff = hl, hl += 4;
		if (fl & GRE_S)
			hl += 4;
		break;
	case 1: /* enhanced GRE (RFC 2637): key = payload length, call id */
		if ((fl & GRE_V1_MUST_BE_ZERO) || !(fl & GRE_K) || proto != ETH_P_PPP)
			return RXP_DECAP_MALFORMED;
		keyoff = 4;
		hl = 8 + (fl & GRE_S ? 4 : 0) + (fl & GRE_A ? 4 : 0);
		break;
	default:
		return RXP_DECAP_MALFORMED;
	}
	if (off + hl > v->len)
		return RXP_DECAP_MALFORMED;
	if ((fl & 0x7) == 1) {
		if (rd16(p + 4) > v->len - off - hl)
			return RXP_DECAP_MALFORMED;
		if (!rd16(p + 4))
			return RXP_DECAP_NOT_IP; /* an acknowledgment alone */
		d->ctx.has_key = 1;
		d->ctx.key = rd16(p + 6);
	} else if (keyoff) {
		d->ctx.has_key = 1;
		d->ctx.key = rd32(p + keyoff);
	}
	if (proto == ETH_P_ERSPAN || proto == ETH_P_ERSPAN3)
		d->ctx.tunnel = RXP_TUNNEL_ERSPAN; /* its session id is the key */
	r = dc_push(d, v, RXP_LAYER_GRE, off, hl, 0, 0);
	if (r)
		return r;
	off += hl;
	switch (proto) {
	case RXP_ETH_P_IP:
		return dc_at_ip(d, v, off, 4);
	case RXP_ETH_P_IPV6:
		return dc_at_ip(d, v, off, 6);
	case ETH_P_TEB:
		return dc_ether(d, v, off);
	case ETH_P_PPP:
		return dc_ppp(d, v, off, true);
	case ETH_P_ERSPAN:
		/* Type I has no sequence number and no header of its own. */
		return fl & GRE_S ? erspan(d, v, off, false) : dc_ether(d, v, off);
	case ETH_P_ERSPAN3:
		return erspan(d, v, off, true);
	case ETH_P_MPLS_UC:
	case ETH_P_MPLS_MC:
		return dc_ethertype(d, v, off, proto);
	default:
		return RXP_DECAP_NOT_IP;
	}
}

static int vxlan(struct rxp_decap *d, const struct dview *v, uint32_t off)
{
	const uint8_t *p = v->b + off;
	int r;

	if (off + 8 > v->len)
		return RXP_DECAP_MALFORMED;
	if (!(p[0] & 0x08)) /* the VNI is not valid */
		return RXP_DECAP_MALFORMED;
	d->ctx.has_key = 1;
	d->ctx.key = (uint32_t)p[4] << 16 | (uint32_t)p[5] << 8 | p[6];
	r = dc_push(d, v, RXP_LAYER_VXLAN, off, 8, 0, 0);
	return r ? r : dc_ether(d, v, off + 8);
}

static int geneve(struct rxp_decap *d, const struct dview *v, uint32_t off)
{
	const uint8_t *p = v->b + off;
	uint32_t hl;
	int r;

	if (off + 8 > v->len)
		return RXP_DECAP_MALFORMED;
	if (p[0] >> 6) /* version */
		return RXP_DECAP_MALFORMED;
	hl = 8 + (p[0] & 0x3f) * 4u;
	if (off + hl > v->len)
		return RXP_DECAP_MALFORMED;
	d->ctx.has_key = 1;
	d->ctx.key = (uint32_t)p[4] << 16 | (uint32_t)p[5] << 8 | p[6];
	r = dc_push(d, v, RXP_LAYER_GENEVE, off, hl, 0, 0);
	if (r)
		return r;
	switch (rd16(p + 2)) {
	case ETH_P_TEB:
		return dc_ether(d, v, off + hl);
	case RXP_ETH_P_IP:
		return dc_at_ip(d, v, off + hl, 4);
	case RXP_ETH_P_IPV6:
		return dc_at_ip(d, v, off + hl, 6);
	default:
		return RXP_DECAP_NOT_IP;
	}
}

/* A GTPv1-U G-PDU (3GPP TS 29.281): its length field counts what follows
 * the first 8 bytes, optional fields and extension headers included. */
static int gtpu(struct rxp_decap *d, const struct dview *v, uint32_t off)
{
	const uint8_t *p = v->b + off;
	uint32_t hl = 8;
	int r;

	if (off + 8 > v->len)
		return RXP_DECAP_MALFORMED;
	if ((p[0] >> 5) != 1 || !(p[0] & 0x10))
		return RXP_DECAP_NOT_IP; /* not GTPv1, or GTP' */
	if (p[1] != GTPU_G_PDU)
		return RXP_DECAP_NOT_IP; /* echo, error indication, ... */
	if (rd16(p + 2) > v->len - off - 8)
		return RXP_DECAP_MALFORMED;
	if (p[0] & 0x07) { /* sequence number, N-PDU number, next extension type */
		uint8_t next;

		if (off + 12 > v->len)
			return RXP_DECAP_MALFORMED;
		next = p[0] & 0x04 ? p[11] : 0;
		hl = 12;
		for (unsigned i = 0; next; i++) {
			uint32_t el;

			if (i == GTPU_MAX_EXT || off + hl + 1 > v->len)
				return RXP_DECAP_MALFORMED;
			el = p[hl] * 4u;
			if (!el || off + hl + el > v->len)
				return RXP_DECAP_MALFORMED;
			next = p[hl + el - 1];
			hl += el;
		}
	}
	d->ctx.has_key = 1;
	d->ctx.key = rd32(p + 4);
	r = dc_push(d, v, RXP_LAYER_GTPU, off, hl, 0, 0);
	if (r)
		return r;
	if (off + hl >= v->len)
		return RXP_DECAP_MALFORMED;
	if ((p[hl] >> 4) != 4 && (p[hl] >> 4) != 6)
		return RXP_DECAP_NOT_IP; /* an Ethernet or unstructured PDU */
	return dc_at_ip(d, v, off + hl, 0);
}

/* 1 when the datagram is not a tunnel's (by port), else as the others. */
static int udp(struct rxp_decap *d, struct dview *v, uint32_t off)
{
	const uint8_t *p = v->b + off;
	uint32_t ulen;
	int r;

	if (off + 8 > v->len)
		return 1;
	ulen = rd16(p + 4);
	if (ulen < 8 || ulen > v->len - off)
		return 1; /* not ours to judge */
	switch (rd16(p + 2)) {
	case UDP_VXLAN:
		d->ctx.tunnel = RXP_TUNNEL_VXLAN;
		break;
	case UDP_GENEVE:
		d->ctx.tunnel = RXP_TUNNEL_GENEVE;
		break;
	case UDP_GTPU:
		d->ctx.tunnel = RXP_TUNNEL_GTPU;
		break;
	default:
		return 1;
	}
	v->len = off + ulen; /* what follows the datagram is not the tunnel's */
	r = dc_push(d, v, RXP_LAYER_UDP, off, 8, 0, 0);
	if (r)
		return r;
	switch (d->ctx.tunnel) {
	case RXP_TUNNEL_VXLAN:
		r = vxlan(d, v, off + 8);
		break;
	case RXP_TUNNEL_GENEVE:
		r = geneve(d, v, off + 8);
		break;
	default:
		r = gtpu(d, v, off + 8);
		break;
	}
	return r;
}

/* The outer header: its length (with IPv6 extension headers) and the
 * protocol it carries, or -1 for one that cannot carry a tunnel. */
static int outer_ip(const struct dview *v, uint32_t *hl, uint8_t *proto)
{
	const uint8_t *ip = v->b;

	if ((ip[0] >> 4) == 4) {
		if (v->len < RXP_IPV4_HLEN || (ip[0] & 0x0f) * 4u < RXP_IPV4_HLEN ||
		    (ip[0] & 0x0f) * 4u > v->len || (rd16(ip + 6) & (RXP_IP_MF | RXP_IP_OFFMASK)))
			return -1;
		*hl = (ip[0] & 0x0f) * 4u;
		*proto = ip[9];
		return 0;
	}
	if ((ip[0] >> 4) == 6 && v->len >= RXP_IPV6_HLEN) {
		uint32_t pos = RXP_IPV6_HLEN;
		uint8_t nh = ip[6];

		for (unsigned i = 0; i <= IPV6_MAX_EXT; i++) {
			uint32_t el;

			if (!rxp_ipv6_ext_before_frag(nh, pos) && nh != RXP_IPPROTO_AH) {
				*hl = pos;
				*proto = nh;
				return 0;
			}
			if (pos + 2 > v->len)
				return -1;
			el = rxp_ipv6_ext_len(nh, ip + pos);
			nh = ip[pos];
			pos += el;
			if (pos > v->len)
				return -1;
		}
	}
	return -1;
}

int rxp_decap_tunnel(struct rxp_decap *d, const uint8_t *ip, uint32_t len)
{
	struct rxp_decap save;
	struct dview v = {.b = ip, .len = len, .base = d->ip_off};
	uint32_t hl;
	uint8_t proto;
	int r;

	if (!len || outer_ip(&v, &hl, &proto))
		return 0;
	if (proto != 4 && proto != 41 && proto != 47 && proto != RXP_IPPROTO_UDP)
		return 0;
	/* Only what is pushed and the context change: save those to undo. */
	memcpy(&save, d, offsetof(struct rxp_decap, layer));
	memset(&d->ctx, 0, sizeof(d->ctx));
	d->ctx.family = ip[0] >> 4;
	if (d->ctx.family == 4) {
		memcpy(d->ctx.src, ip + 12, 4);
		memcpy(d->ctx.dst, ip + 16, 4);
	} else {
		memcpy(d->ctx.src, ip + 8, 16);
		memcpy(d->ctx.dst, ip + 24, 16);
	}
	r = dc_push(d, &v, d->ctx.family == 4 ? RXP_LAYER_IPV4 : RXP_LAYER_IPV6, 0, hl, 0, 0);
	if (!r) {
		switch (proto) {
		case 4:
		case 41:
			d->ctx.tunnel = RXP_TUNNEL_IPIP;
			r = dc_at_ip(d, &v, hl, proto == 4 ? 4 : 6);
			break;
		case 47:
			d->ctx.tunnel = RXP_TUNNEL_GRE;
			r = gre(d, &v, hl);
			break;
		default:
			r = udp(d, &v, hl); /* 1: not a tunnel after all */
			break;
		}
	}
	if (!r) {
		/* The inner packet must be all there (within the outer one, and
		 * the UDP datagram that carries it). */
		uint32_t off = d->ip_off - v.base, iplen;
		bool frag;

		if (rxp_decap_ip_info(ip + off, v.len - off, &iplen, &frag) || iplen > v.len - off)
			r = RXP_DECAP_MALFORMED;
	}
	if (r) {
		memcpy(d, &save, offsetof(struct rxp_decap, layer));
		return r > 0 ? 0 : r;
	}
	d->tunnels++;
	return 1;
}
