/*
 * IPv4 glue for reassembly: fix the header of a reassembled datagram (the
 * parser, which runs for every fragment, is inline in defrag_internal.h).
 * Nothing here owns a packet.
 */
#include "rxpath/wire.h"
#include "net/defrag_internal.h"

DFR_HOT int dfr_ipv4_finish(struct rxp_pkt *pkt, const struct dfr_queue *q, uint32_t plen,
			    uint8_t ecn, bool df)
{
	struct rxp_iphdr *ip = (struct rxp_iphdr *)(void *)pkt->data;
	unsigned ihl = q->hdrlen;

	if (ihl + plen > DFR_MAXLEN)
		return -RXP_DROP_FRAG_TOO_BIG;
	ip->tot_len = htons((uint16_t)(ihl + plen));
	ip->frag_off = df ? htons(RXP_IP_DF) : 0;
	ip->tos |= ecn;
	rxp_ipv4_set_csum(ip, ihl);
	return 0;
}
