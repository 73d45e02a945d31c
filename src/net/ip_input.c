/*
 * IPv4/IPv6 input and UDP delivery (include/rxpath/net.h).
 *
 * Every function here that takes a packet consumes it: it is passed on
 * (reassembly, a UDP handler) or dropped with a reason, on every path.
 * Header reads go through rxp_pkt_header_pointer after the lengths they
 * depend on are checked, so a short or non-linear packet is never overread.
 */
#include <errno.h>
#include <string.h>

#include "rxpath/net.h"
#include "rxpath/wire.h"

#define IP6_MAX_EXTHDRS 16

int rxp_net_init(struct rxp_net *n, const struct rxp_defrag_config *defrag_cfg)
{
	struct rxp_defrag_config dc = {0};

	memset(n, 0, sizeof(*n));
	n->defrag = rxp_defrag_table_create(defrag_cfg ? defrag_cfg : &dc);
	return n->defrag ? 0 : -errno;
}

void rxp_net_fini(struct rxp_net *n)
{
	rxp_defrag_table_destroy(n->defrag);
	n->defrag = NULL;
}

int rxp_udp_bind(struct rxp_net *n, uint16_t port, rxp_udp_handler_fn fn, void *arg)
{
	if (port == 0) {
		if (n->any_fn)
			return -EEXIST;
		n->any_fn = fn;
		n->any_arg = arg;
		return 0;
	}
	for (unsigned i = 0; i < n->nbinds; i++)
		if (n->binds[i].port == port)
			return -EEXIST;
	if (n->nbinds == RXP_UDP_MAX_BINDS)
		return -ENOSPC;
	n->binds[n->nbinds].port = port;
	n->binds[n->nbinds].fn = fn;
	n->binds[n->nbinds].arg = arg;
	n->nbinds++;
	return 0;
}

/* IPv4 header checks as ip_rcv_core: RXP_DROP_NONE, or the drop reason. Trims link
 * padding past tot_len. */
static enum rxp_drop_reason ipv4_check(struct rxp_net *n, struct rxp_pkt *pkt)
{
	struct rxp_iphdr buf;
	const struct rxp_iphdr *ip = rxp_pkt_header_pointer(pkt, 0, sizeof(buf), &buf);
	uint8_t opt[60];
	const void *h;
	unsigned ihl, tot;

	if (!ip) {
		n->ip4.InTruncatedPkts++;
		return RXP_DROP_IP_TRUNCATED;
	}
	ihl = rxp_ip_hlen(ip);
	tot = ntohs(ip->tot_len);
	if (ihl < RXP_IPV4_HLEN || tot < ihl) {
		n->ip4.InHdrErrors++;
		return RXP_DROP_IP_HDR;
	}
	if (tot > pkt->len || ihl > pkt->len) {
		n->ip4.InTruncatedPkts++;
		return RXP_DROP_IP_TRUNCATED;
	}
	h = rxp_pkt_header_pointer(pkt, 0, ihl, opt);
	if (rxp_ip_csum(h, ihl) != 0) {
		n->ip4.InCsumErrors++;
		return RXP_DROP_IP_CSUM;
	}
	if (tot < pkt->len)
		rxp_pkt_trim(pkt, tot);
	return RXP_DROP_NONE;
}

static enum rxp_drop_reason ipv6_check(struct rxp_net *n, struct rxp_pkt *pkt)
{
	struct rxp_ipv6hdr buf;
	const struct rxp_ipv6hdr *ip6 = rxp_pkt_header_pointer(pkt, 0, sizeof(buf), &buf);
	uint32_t tot;

	if (!ip6) {
		n->ip6.InTruncatedPkts++;
		return RXP_DROP_IP_TRUNCATED;
	}
	/* A jumbogram (payload length 0 with a hop-by-hop option) is not
	 * supported: it cannot be fragmented, and no link here carries one. */
	tot = RXP_IPV6_HLEN + (uint32_t)ntohs(ip6->payload_len);
	if (ip6->payload_len == 0 && ip6->nexthdr != RXP_IPPROTO_NONE) {
		n->ip6.InHdrErrors++;
		return RXP_DROP_IP_HDR;
	}
	if (tot > pkt->len) {
		n->ip6.InTruncatedPkts++;
		return RXP_DROP_IP_TRUNCATED;
	}
	if (tot < pkt->len)
		rxp_pkt_trim(pkt, tot);
	return RXP_DROP_NONE;
}

void rxp_ip_rcv(struct rxp_net *n, struct rxp_pkt *pkt, uint64_t now_ns)
{
	uint8_t vbuf;
	const uint8_t *v = rxp_pkt_header_pointer(pkt, 0, 1, &vbuf);
	enum rxp_drop_reason r;
	unsigned ver = v ? *v >> 4 : 0;

	if (ver == 4) {
		n->ip4.InReceives++;
		r = ipv4_check(n, pkt);
	} else if (ver == 6) {
		n->ip6.InReceives++;
		r = ipv6_check(n, pkt);
	} else {
		n->ip4.InHdrErrors++;
		r = RXP_DROP_IP_HDR;
	}
	if (r) {
		rxp_pkt_drop(pkt, r);
		return;
	}
	pkt->network_off = (uint16_t)(pkt->data - pkt->head);
	pkt = rxp_defrag(n->defrag, pkt, now_ns);
	if (pkt)
		rxp_udp_rcv(n, pkt);
}

/* Find the upper-layer header of an IPv6 datagram: its protocol and offset,
 * or -1 for a malformed chain. */
static int ipv6_upper(const struct rxp_pkt *pkt, uint32_t *off, uint8_t *proto)
{
	struct rxp_ipv6hdr buf;
	const struct rxp_ipv6hdr *ip6 = rxp_pkt_header_pointer(pkt, 0, sizeof(buf), &buf);
	uint32_t o = RXP_IPV6_HLEN;
	uint8_t nh;

	if (!ip6)
		return -1;
	nh = ip6->nexthdr;

	for (unsigned i = 0; i < IP6_MAX_EXTHDRS; i++) {
		uint8_t eh[2];
		const uint8_t *e;
		uint32_t len;

		switch (nh) {
		case RXP_IPPROTO_HOPOPTS:
		case RXP_IPPROTO_ROUTING:
		case RXP_IPPROTO_DSTOPTS:
		case RXP_IPPROTO_AH:
			e = rxp_pkt_header_pointer(pkt, o, 2, eh);
			if (!e)
				return -1;
			len = rxp_ipv6_ext_len(nh, e);
			nh = e[0];
			o += len;
			if (o > pkt->len)
				return -1;
			break;
		case RXP_IPPROTO_FRAGMENT: /* left after reassembly: malformed */
			return -1;
		default:
			*off = o;
			*proto = nh;
			return 0;
		}
	}
	return -1;
}

static uint32_t pseudo_sum(const struct rxp_pkt *pkt, bool v6, uint32_t ulen)
{
	uint8_t buf[40];
	const uint8_t *h = rxp_pkt_header_pointer(pkt, 0, v6 ? 40 : 20, buf);

	return v6 ? rxp_pseudo_sum(h + 8, h + 24, 16, RXP_IPPROTO_UDP, ulen)
		  : rxp_pseudo_sum(h + 12, h + 16, 4, RXP_IPPROTO_UDP, ulen);
}

/* The checksum of a UDP datagram under the net's mode (see net.h). */
static bool udp_csum_ok(struct rxp_net *n, const struct rxp_pkt *pkt, const struct rxp_udphdr *uh,
			uint32_t off, uint32_t ulen, bool v6)
{
	struct rxp_udp_stats *u = &n->udp;
	uint32_t ps;
	int64_t sum;
	uint16_t partial;
	bool ok;

	if (n->udp_csum == RXP_UDP_CSUM_SKIP || u->csum_auto_off) {
		u->InCsumUnchecked++;
		return true;
	}
	ps = pseudo_sum(pkt, v6, ulen);
	sum = rxp_pkt_csum(pkt, off, ulen, ps);
	ok = sum >= 0 && rxp_csum_fold((uint32_t)sum) == 0 && !(v6 && !uh->check);
	if (n->udp_csum != RXP_UDP_CSUM_AUTO)
		return ok;
	/* Offloaded: the field holds the pseudo-header's folded sum, not
	 * complemented (what the stack leaves for the NIC to finish). */
	partial = (uint16_t)~rxp_csum_fold(ps);
	if (!ok && uh->check == partial) {
		u->InCsumOffload++;
		return true;
	}
	if (u->csum_sampled < RXP_UDP_CSUM_SAMPLE) {
		u->csum_sample_bad += !ok;
		if (++u->csum_sampled == RXP_UDP_CSUM_SAMPLE &&
		    u->csum_sample_bad * RXP_UDP_CSUM_BAD_RATIO > RXP_UDP_CSUM_SAMPLE)
			u->csum_auto_off = 1;
	}
	if (!ok && u->csum_auto_off) {
		u->InCsumUnchecked++;
		return true;
	}
	return ok;
}

void rxp_udp_rcv(struct rxp_net *n, struct rxp_pkt *pkt)
{
	uint8_t vbuf, proto;
	const uint8_t *v = rxp_pkt_header_pointer(pkt, 0, 1, &vbuf);
	bool v6 = v && (*v >> 4) == 6;
	struct rxp_ip_stats *ips = v6 ? &n->ip6 : &n->ip4;
	struct rxp_udphdr ubuf;
	const struct rxp_udphdr *uh;
	uint32_t off, ulen;
	uint16_t dport;

	if (v6) {
		if (ipv6_upper(pkt, &off, &proto)) {
			ips->InHdrErrors++;
			rxp_pkt_drop(pkt, RXP_DROP_IPV6_EXTHDR);
			return;
		}
	} else {
		struct rxp_iphdr ibuf;
		const struct rxp_iphdr *ip = rxp_pkt_header_pointer(pkt, 0, sizeof(ibuf), &ibuf);

		if (!ip) {
			ips->InTruncatedPkts++;
			rxp_pkt_drop(pkt, RXP_DROP_IP_TRUNCATED);
			return;
		}
		off = rxp_ip_hlen(ip);
		proto = ip->protocol;
	}
	if (proto != RXP_IPPROTO_UDP) {
		if (n->other_fn) {
			ips->InDelivers++;
			n->other_fn(n->other_arg, pkt, proto, off);
			return;
		}
		ips->InUnknownProtos++;
		rxp_pkt_drop(pkt, RXP_DROP_IP_PROTO);
		return;
	}
	ips->InDelivers++;
	uh = rxp_pkt_header_pointer(pkt, off, sizeof(ubuf), &ubuf);
	ulen = uh ? ntohs(uh->len) : 0;
	if (!uh || ulen < sizeof(*uh) || off + ulen > pkt->len) {
		n->udp.InErrors++;
		rxp_pkt_drop(pkt, RXP_DROP_UDP_HDR);
		return;
	}
	if ((uh->check || v6) && !udp_csum_ok(n, pkt, uh, off, ulen, v6)) {
		n->udp.InCsumErrors++;
		n->udp.InErrors++;
		rxp_pkt_drop(pkt, RXP_DROP_UDP_CSUM);
		return;
	}
	dport = ntohs(uh->dest);
	if (off + ulen < pkt->len)
		rxp_pkt_trim(pkt, off + ulen);
	pkt->transport_off = (uint16_t)(pkt->network_off + off);
	/* Hand the payload over: pull past IP and UDP headers. */
	if (!rxp_pkt_may_pull(pkt, off + sizeof(*uh))) {
		n->udp.InErrors++;
		rxp_pkt_drop(pkt, RXP_DROP_NOMEM);
		return;
	}
	rxp_pkt_pull(pkt, off + (uint32_t)sizeof(*uh));
	for (unsigned i = 0; i < n->nbinds; i++) {
		if (n->binds[i].port == dport) {
			n->udp.InDatagrams++;
			n->binds[i].fn(n->binds[i].arg, pkt);
			return;
		}
	}
	if (n->any_fn) {
		n->udp.InDatagrams++;
		n->any_fn(n->any_arg, pkt);
		return;
	}
	n->udp.NoPorts++;
	rxp_pkt_drop(pkt, RXP_DROP_UDP_NO_PORT);
}
