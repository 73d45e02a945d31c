/*
 * IPv6 glue for reassembly: walk the extension headers to the fragment
 * header, parse it into a dfr_info, check that a first fragment carries the
 * whole header chain up to the upper-layer header (RFC 7112, 8200 4.5), and
 * remove the fragment header from a result or an atomic fragment (RFC 6946).
 * The walk is bounded (DFR_V6_MAX_EXT headers) and every read is checked
 * against the datagram's length. Nothing here owns a packet.
 */
#include <string.h>

#include "rxpath/wire.h"
#include "net/defrag_internal.h"

#define DFR_V6_MAX_EXT 16

static const uint8_t *rd(const struct rxp_pkt *pkt, uint32_t off, uint32_t len, uint32_t lim,
			 void *buf)
{
	if ((uint64_t)off + len > lim)
		return NULL;
	return rxp_pkt_header_pointer(pkt, off, len, buf);
}

/* true when the chain from nh at pos ends in an upper-layer header that is
 * wholly inside [0, lim); *nested when a second fragment header is seen. */
static int upper_complete(const struct rxp_pkt *pkt, uint8_t nh, uint32_t pos, uint32_t lim)
{
	uint8_t b[2];
	const uint8_t *p;

	for (int i = 0; i < DFR_V6_MAX_EXT; i++) {
		uint32_t need;

		switch (nh) {
		case RXP_IPPROTO_FRAGMENT:
			return -RXP_DROP_FRAG_IPV6_NESTED;
		case RXP_IPPROTO_HOPOPTS:
		case RXP_IPPROTO_ROUTING:
		case RXP_IPPROTO_DSTOPTS:
		case RXP_IPPROTO_AH:
			p = rd(pkt, pos, 2, lim, b);
			if (!p)
				return -RXP_DROP_FRAG_IPV6_INCOMPLETE;
			pos += rxp_ipv6_ext_len(nh, p); /* this header's length, by its type */
			nh = p[0];
			if (pos > lim)
				return -RXP_DROP_FRAG_IPV6_INCOMPLETE;
			continue;
		default:
			need = dfr_upper_need(nh);
			break;
		}
		return pos + need <= lim ? 0 : -RXP_DROP_FRAG_IPV6_INCOMPLETE;
	}
	return -RXP_DROP_IPV6_EXTHDR;
}

int dfr_ipv6_parse(const struct rxp_pkt *pkt, struct dfr_info *fi, uint32_t zone, bool zone_all,
		   bool *atomic)
{
	struct rxp_ipv6hdr buf;
	struct rxp_frag6hdr fbuf;
	const struct rxp_ipv6hdr *ip;
	const struct rxp_frag6hdr *fh;
	uint32_t pos = RXP_IPV6_HLEN, nhoff = 6, lim;
	uint8_t nh, b[2];
	int i;

	*atomic = false;
	ip = rxp_pkt_header_pointer(pkt, 0, sizeof(buf), &buf);
	if (!ip)
		return -RXP_DROP_IP_TRUNCATED;
	if (rxp_ip_version(ip) != 6)
		return -RXP_DROP_IP_HDR;
	lim = RXP_IPV6_HLEN + ntohs(ip->payload_len);
	/* Walk what is there; a truncated packet is our business only if it
	 * turns out to be a fragment. */
	if (lim > pkt->len)
		lim = pkt->len;
	nh = ip->nexthdr;
	for (i = 0; i < DFR_V6_MAX_EXT && nh != RXP_IPPROTO_FRAGMENT; i++) {
		const uint8_t *p;

		if (!rxp_ipv6_ext_before_frag(nh, pos))
			return 0;
		p = rd(pkt, pos, 2, lim, b);
		if (!p)
			return 0; /* not ours to judge: IP input drops it */
		nhoff = pos;
		pos += rxp_ipv6_ext_len(nh, p);
		nh = p[0];
	}
	if (nh != RXP_IPPROTO_FRAGMENT)
		return 0;
	if (RXP_IPV6_HLEN + (uint32_t)ntohs(ip->payload_len) > pkt->len)
		return -RXP_DROP_IP_TRUNCATED;
	if (ip->payload_len == 0)
		return -RXP_DROP_FRAG_INVALID;
	fh = (const void *)rd(pkt, pos, sizeof(fbuf), lim, &fbuf);
	if (!fh)
		return -RXP_DROP_IPV6_EXTHDR;
	memset(fi, 0, sizeof(*fi));
	fi->key.family = 6;
	fi->key.id = rxp_frag6_id(fh);
	fi->key.zone = dfr_ipv6_zone(ip->daddr, zone, zone_all);
	memcpy(fi->key.addr, ip->saddr, 16);
	memcpy(fi->key.addr + 16, ip->daddr, 16);
	fi->hdrlen = (uint16_t)(pos + RXP_IPV6_FRAGHDR_LEN);
	fi->nhoff = (uint16_t)nhoff;
	fi->nexthdr = fh->nexthdr;
	fi->off = rxp_frag6_offset(fh);
	fi->end = fi->off + (lim - fi->hdrlen);
	fi->mf = rxp_frag6_more(fh);
	fi->ecn = rxp_ipv6_tclass(ip) & 3;
	if (fi->off == 0 && !fi->mf) {
		*atomic = true;
		return 0;
	}
	if (fi->mf && ((fi->end - fi->off) & 7))
		return -RXP_DROP_FRAG_INVALID;
	if (fi->end > DFR_MAXLEN)
		return -RXP_DROP_FRAG_TOO_BIG;
	if (fi->off == 0) {
		int r = upper_complete(pkt, fi->nexthdr, fi->hdrlen, lim);

		if (r)
			return r;
	}
	return 1;
}

/* Remove the fragment header at hdrlen-8: the next-header byte at nhoff takes
 * its value, the unfragmentable part moves up 8 bytes. The header must be
 * linear and writable. */
static int strip(struct rxp_pkt *pkt, uint16_t hdrlen, uint16_t nhoff, uint8_t nexthdr,
		 uint32_t plen, uint8_t ecn)
{
	uint32_t unfrag = hdrlen - RXP_IPV6_FRAGHDR_LEN;
	struct rxp_ipv6hdr *ip;

	if (unfrag - RXP_IPV6_HLEN + plen > DFR_MAXLEN)
		return -RXP_DROP_FRAG_TOO_BIG;
	pkt->data[nhoff] = nexthdr;
	memmove(pkt->data + RXP_IPV6_FRAGHDR_LEN, pkt->data, unfrag);
	rxp_pkt_pull(pkt, RXP_IPV6_FRAGHDR_LEN);
	ip = (struct rxp_ipv6hdr *)(void *)pkt->data;
	ip->payload_len = htons((uint16_t)(unfrag - RXP_IPV6_HLEN + plen));
	ip->vtc_flow |= htonl((uint32_t)ecn << 20);
	return 0;
}

DFR_HOT int dfr_ipv6_finish(struct rxp_pkt *pkt, const struct dfr_queue *q, uint32_t plen,
			    uint8_t ecn)
{
	return strip(pkt, q->hdrlen, q->nhoff, q->nexthdr, plen, ecn);
}

int dfr_ipv6_strip(struct rxp_pkt *pkt, const struct dfr_info *fi)
{
	return strip(pkt, fi->hdrlen, fi->nhoff, fi->nexthdr, fi->end - fi->off, 0);
}
