/*
 * IPv4 glue for reassembly: parse a fragment into a dfr_info (key, payload
 * range, flags) and fix the header of a reassembled datagram. Reads go
 * through rxp_pkt_header_pointer with lengths checked first; nothing here
 * owns a packet.
 */
#include <string.h>

#include "rxpath/wire.h"
#include "net/defrag_internal.h"

int dfr_ipv4_parse(const struct rxp_pkt *pkt, struct dfr_info *fi, uint32_t zone)
{
	struct rxp_iphdr buf;
	const struct rxp_iphdr *ip;
	unsigned ihl, tot, fo;

	/* The header is nearly always in the linear part: no call then. */
	if (rxp_pkt_headlen(pkt) >= sizeof(buf))
		ip = (const struct rxp_iphdr *)(const void *)pkt->data;
	else
		ip = rxp_pkt_header_pointer(pkt, 0, sizeof(buf), &buf);
	if (!ip)
		return -RXP_DROP_IP_TRUNCATED;
	ihl = rxp_ip_hlen(ip);
	tot = ntohs(ip->tot_len);
	fo = ntohs(ip->frag_off);
	/* Not a fragment: not ours to judge, whatever else is wrong with it. */
	if (!(fo & (RXP_IP_MF | RXP_IP_OFFMASK)))
		return 0;
	if ((ip->ver_ihl >> 4) != 4 || ihl < RXP_IPV4_HLEN || tot < ihl)
		return -RXP_DROP_IP_HDR;
	if (tot > pkt->len)
		return -RXP_DROP_IP_TRUNCATED;
	/* Every field set (no memset): this runs for every fragment. The
	 * key's pad must be zero, as keys are compared whole. */
	fi->key.family = 4;
	fi->key.proto = ip->protocol;
	fi->key.pad = 0;
	fi->key.id = ntohs(ip->id);
	fi->key.zone = zone;
	memcpy(fi->key.addr, &ip->saddr, 4);
	memcpy(fi->key.addr + 4, &ip->daddr, 4);
	fi->off = (fo & RXP_IP_OFFMASK) * 8u;
	fi->end = fi->off + (tot - ihl);

	fi->iplen = tot;
	fi->hdrlen = (uint16_t)ihl;
	fi->mf = fo & RXP_IP_MF;
	fi->df = fo & RXP_IP_DF;
	fi->ecn = ip->tos & 3;
	fi->nhoff = 0;
	fi->nexthdr = 0;
	/* An MF fragment's length not a multiple of 8 is rounded down, as
	 * Linux does; the cut bytes are trimmed by the caller. */
	if (fi->mf)
		fi->end &= ~7u;
	return 1;
}

int dfr_ipv4_finish(struct rxp_pkt *pkt, const struct dfr_queue *q, uint32_t plen, uint8_t ecn,
		    bool df)
{
	struct rxp_iphdr *ip = (struct rxp_iphdr *)(void *)pkt->data;
	unsigned ihl = q->hdrlen;

	if (ihl + plen > DFR_MAXLEN)
		return -RXP_DROP_FRAG_TOO_BIG;
	ip->tot_len = htons((uint16_t)(ihl + plen));
	ip->frag_off = df ? htons(RXP_IP_DF) : 0;
	ip->tos |= ecn;
	ip->check = 0;
	ip->check = rxp_ip_csum(ip, ihl);
	return 0;
}
