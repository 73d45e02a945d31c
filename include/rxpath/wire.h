/*
 * Packet formats on the wire, kept apart from protocol logic: Ethernet,
 * IPv4, IPv6 and its extension headers, UDP, and the Internet checksum,
 * with builders that write a header and accessors that read one.
 * All multi-byte fields are in network order; parsers take (pointer,
 * length) and check every length before reading these.
 */
#ifndef RXPATH_WIRE_H
#define RXPATH_WIRE_H

#include <arpa/inet.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "rxpath/compiler.h"

RXP_BEGIN_DECLS

/* A 32-bit big-endian field at any alignment (the generator's payload
 * header, which the sim NIC, the ledger and the workload all read). */
static inline uint32_t rxp_get_be32(const void *at)
{
	const uint8_t *p = (const uint8_t *)at;

	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline void rxp_put_be32(void *at, uint32_t v)
{
	uint8_t *p = (uint8_t *)at;

	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

#define RXP_ETH_HLEN 14
#define RXP_ETH_P_IP 0x0800
#define RXP_ETH_P_IPV6 0x86dd
#define RXP_ETH_P_8021Q 0x8100

struct rxp_ethhdr {
	uint8_t dst[6];
	uint8_t src[6];
	uint16_t proto;
} __attribute__((packed));

#define RXP_IPV4_HLEN 20
#define RXP_IP_DF 0x4000
#define RXP_IP_MF 0x2000
#define RXP_IP_OFFMASK 0x1fff

struct rxp_iphdr {
	uint8_t ver_ihl; /* version 4, header length in 32-bit words */
	uint8_t tos;
	uint16_t tot_len;
	uint16_t id;
	uint16_t frag_off; /* flags DF/MF and offset in 8-byte units */
	uint8_t ttl;
	uint8_t protocol;
	uint16_t check;
	uint32_t saddr;
	uint32_t daddr;
} __attribute__((packed, aligned(2)));

#define RXP_IPV6_HLEN 40
#define RXP_IPV6_FRAGHDR_LEN 8
#define RXP_IPPROTO_HOPOPTS 0
#define RXP_IPPROTO_TCP 6
#define RXP_IPPROTO_UDP 17
#define RXP_IPPROTO_ROUTING 43
#define RXP_IPPROTO_FRAGMENT 44
#define RXP_IPPROTO_ESP 50
#define RXP_IPPROTO_AH 51
#define RXP_IPPROTO_ICMPV6 58
#define RXP_IPPROTO_NONE 59
#define RXP_IPPROTO_DSTOPTS 60
#define RXP_IPPROTO_MH 135

struct rxp_ipv6hdr {
	uint32_t vtc_flow; /* version 6, traffic class, flow label */
	uint16_t payload_len;
	uint8_t nexthdr;
	uint8_t hop_limit;
	uint8_t saddr[16];
	uint8_t daddr[16];
} __attribute__((packed, aligned(2)));

struct rxp_frag6hdr {
	uint8_t nexthdr;
	uint8_t reserved;
	uint16_t frag_off; /* offset in 8-byte units << 3, M flag in bit 0 */
	uint32_t id;
} __attribute__((packed, aligned(2)));
#define RXP_IP6_MF 0x0001
#define RXP_IP6_OFFMASK 0xfff8

struct rxp_udphdr {
	uint16_t source;
	uint16_t dest;
	uint16_t len;
	uint16_t check;
} __attribute__((packed, aligned(2)));

static inline unsigned rxp_ip_hlen(const struct rxp_iphdr *ip)
{
	return (ip->ver_ihl & 0x0f) * 4u;
}

/* Ones'-complement sum of len bytes, folded into 32 bits (not inverted).
 * Words are added 8 bytes at a time into 128-bit accumulators, whose carries
 * are folded back at the end (an end-around carry sum). */
static inline uint32_t rxp_csum_partial(const void *buf, size_t len, uint32_t sum)
{
	const uint8_t *p = (const uint8_t *)buf;
	__extension__ unsigned __int128 a = sum, b = 0; /* (-Wpedantic: a GCC and clang type) */
	uint64_t s, hi;

	for (; len >= 16; p += 16, len -= 16) {
		uint64_t w0, w1;

		memcpy(&w0, p, 8);
		memcpy(&w1, p + 8, 8);
		a += w0;
		b += w1;
	}
	a += b;
	if (len >= 8) {
		uint64_t w;

		memcpy(&w, p, 8);
		a += w;
		p += 8;
		len -= 8;
	}
	if (len) {
		/* the last 1-7 bytes in place (little-endian), zero-padded; in
		 * pieces, as a memcpy of len bytes is `rep movsb` */
		uint64_t w = 0;
		unsigned sh = 0;

		if (len & 4) {
			uint32_t x;

			memcpy(&x, p, 4);
			w = x;
			p += 4;
			sh = 32;
		}
		if (len & 2) {
			uint16_t x;

			memcpy(&x, p, 2);
			w |= (uint64_t)x << sh;
			p += 2;
			sh += 16;
		}
		if (len & 1)
			w |= (uint64_t)*p << sh;
		a += w;
	}
	/* fold 128 -> 64 -> 32 bits, adding carries back in */
	s = (uint64_t)a;
	hi = (uint64_t)(a >> 64);
	s += hi;
	s += s < hi;
	s = (s & 0xffffffffu) + (s >> 32);
	s = (s & 0xffffffffu) + (s >> 32);
	return (uint32_t)s;
}

/* Fold a partial sum and invert: the value for a checksum field. */
static inline uint16_t rxp_csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* The checksum of a 20-byte IPv4 header: its five 32-bit words added in
 * 64 bits and folded, as Linux's ip_fast_csum (rxp_csum_partial's loop and
 * tail and rxp_csum_fold's loop cost twice as much for these 20 bytes). */
static inline uint16_t rxp_ip_csum20(const void *hdr)
{
	uint32_t w[5], x;
	uint64_t s;

	memcpy(w, hdr, sizeof(w));
	s = (uint64_t)w[0] + w[1] + w[2] + w[3] + w[4]; /* < 2^35 */
	s = (s & 0xffffffffu) + (s >> 32); /* < 2^32 + 8 */
	s = (s & 0xffffffffu) + (s >> 32);
	x = (uint32_t)s;
	x = (x & 0xffff) + (x >> 16);
	x = (x & 0xffff) + (x >> 16);
	return (uint16_t)~x;
}

/* The IPv4 header checksum (0 when a header with its checksum is valid). */
static inline uint16_t rxp_ip_csum(const void *hdr, unsigned hlen)
{
	if (hlen == RXP_IPV4_HLEN)
		return rxp_ip_csum20(hdr);
	return rxp_csum_fold(rxp_csum_partial(hdr, hlen, 0));
}

/* Rewrite the checksum of an IPv4 header of hlen bytes in place. The
 * usual 20-byte header is summed with a constant length, which the
 * compiler unrolls: no loop and no variable-length tail. */
static inline void rxp_ipv4_set_csum(struct rxp_iphdr *ip, unsigned hlen)
{
	ip->check = 0;
	ip->check = rxp_ip_csum(ip, hlen);
}

/* ---- builders ----------------------------------------------------------- */

/* The pseudo-header sum of an upper-layer checksum (UDP: RFC 768; IPv6:
 * RFC 8200 section 8.1): source and destination addresses of alen bytes
 * (4 or 16), the protocol and the upper-layer length. Partial: add the
 * upper-layer bytes to it, then fold. */
static inline uint32_t rxp_pseudo_sum(const void *saddr, const void *daddr, unsigned alen,
				      uint8_t proto, uint32_t len)
{
	uint32_t s = rxp_csum_partial(saddr, alen, 0);

	s = rxp_csum_partial(daddr, alen, s);
	if (alen == 16) {
		const uint32_t w[2] = {htonl(len), htonl(proto)};

		return rxp_csum_partial(w, sizeof(w), s);
	}
	{
		const uint16_t w[2] = {htons(proto), htons((uint16_t)len)};

		return rxp_csum_partial(w, sizeof(w), s);
	}
}

/* A UDP checksum field from a sum over the pseudo-header and the datagram:
 * a computed 0 is sent as 0xffff (0 means "no checksum", RFC 768). */
static inline uint16_t rxp_udp_csum_field(uint32_t sum)
{
	uint16_t c = rxp_csum_fold(sum);

	return c ? c : 0xffff;
}

/* Write a 20-byte IPv4 header (no options) with its checksum: tot_len,
 * id and frag_off (flags and offset in 8-byte units) in host order, the
 * addresses in network order. */
static inline void rxp_ipv4_build(void *hdr, uint8_t proto, uint16_t tot_len, uint16_t id,
				  uint16_t frag_off, uint8_t ttl, uint32_t saddr, uint32_t daddr)
{
	struct rxp_iphdr ip;

	/* field by field: C++ (these headers are C++-clean) has no
	 * out-of-order or partial designated initializers */
	ip.ver_ihl = 0x45;
	ip.tos = 0;
	ip.tot_len = htons(tot_len);
	ip.id = htons(id);
	ip.frag_off = htons(frag_off);
	ip.ttl = ttl;
	ip.protocol = proto;
	ip.check = 0;
	ip.saddr = saddr;
	ip.daddr = daddr;
	ip.check = rxp_ip_csum(&ip, RXP_IPV4_HLEN);
	memcpy(hdr, &ip, RXP_IPV4_HLEN);
}

/* ---- IPv6 and its extension headers (RFC 8200) ---------------------------- */

/* The version nibble of an IP header (4 or 6), from its first byte. */
static inline unsigned rxp_ip_version(const void *hdr)
{
	return *(const uint8_t *)hdr >> 4;
}

/* Traffic class (DSCP and ECN) of an IPv6 header. */
static inline uint8_t rxp_ipv6_tclass(const struct rxp_ipv6hdr *ip)
{
	return (uint8_t)(ntohl(ip->vtc_flow) >> 20);
}

/* Write a 40-byte IPv6 header: version 6, traffic class, the 20-bit flow
 * label and payload_len in host order, the addresses 16 bytes each. */
static inline void rxp_ipv6_build(void *hdr, uint8_t tclass, uint32_t flow, uint16_t payload_len,
				  uint8_t nexthdr, uint8_t hop_limit, const void *saddr,
				  const void *daddr)
{
	struct rxp_ipv6hdr ip;

	ip.vtc_flow = htonl(6u << 28 | (uint32_t)tclass << 20 | (flow & 0xfffffu));
	ip.payload_len = htons(payload_len);
	ip.nexthdr = nexthdr;
	ip.hop_limit = hop_limit;
	memcpy(ip.saddr, saddr, 16);
	memcpy(ip.daddr, daddr, 16);
	memcpy(hdr, &ip, RXP_IPV6_HLEN);
}

/* Write an 8-byte fragment header: offset in bytes (a multiple of 8), the
 * M flag and the identification, in host order. */
static inline void rxp_frag6_build(void *hdr, uint8_t nexthdr, uint16_t offset, int more,
				   uint32_t id)
{
	struct rxp_frag6hdr fh;

	fh.nexthdr = nexthdr;
	fh.reserved = 0;
	fh.frag_off = htons((uint16_t)((offset & RXP_IP6_OFFMASK) | (more ? RXP_IP6_MF : 0)));
	fh.id = htonl(id);
	memcpy(hdr, &fh, RXP_IPV6_FRAGHDR_LEN);
}

/* A fragment header's offset in bytes, its M flag and identification. */
static inline uint16_t rxp_frag6_offset(const struct rxp_frag6hdr *fh)
{
	return ntohs(fh->frag_off) & RXP_IP6_OFFMASK;
}

static inline int rxp_frag6_more(const struct rxp_frag6hdr *fh)
{
	return (ntohs(fh->frag_off) & RXP_IP6_MF) != 0;
}

static inline uint32_t rxp_frag6_id(const struct rxp_frag6hdr *fh)
{
	return ntohl(fh->id);
}

/* Write a Hop-by-Hop or Destination Options header of len bytes (8 to
 * 2048, a multiple of 8) whose options are one PadN covering the rest. */
static inline void rxp_ipv6_opts_build(void *hdr, uint8_t nexthdr, unsigned len)
{
	uint8_t *p = (uint8_t *)hdr;

	p[0] = nexthdr;
	p[1] = (uint8_t)(len / 8 - 1);
	p[2] = 1; /* PadN */
	p[3] = (uint8_t)(len - 4);
	memset(p + 4, 0, len - 4);
}

/* May nh, at offset off from the start of the IPv6 header, precede a
 * fragment header? Hop-by-Hop (only right after the fixed header),
 * Destination Options and Routing (RFC 8200 section 4.1's order). */
static inline int rxp_ipv6_ext_before_frag(uint8_t nh, uint32_t off)
{
	return nh == RXP_IPPROTO_ROUTING || nh == RXP_IPPROTO_DSTOPTS ||
	       (nh == RXP_IPPROTO_HOPOPTS && off == RXP_IPV6_HLEN);
}

/* The length in bytes of extension header nh from its first two bytes (e[0]
 * its next header, e[1] its length field): Hop-by-Hop, Routing and
 * Destination Options count 8-byte units past the first 8, AH 4-byte units
 * past the first 8 (RFC 4302), the fragment header is 8. 0 for anything
 * that is not an extension header walked by length (ESP, No Next Header,
 * an upper layer). */
static inline uint32_t rxp_ipv6_ext_len(uint8_t nh, const uint8_t *e)
{
	switch (nh) {
	case RXP_IPPROTO_HOPOPTS:
	case RXP_IPPROTO_ROUTING:
	case RXP_IPPROTO_DSTOPTS:
		return ((uint32_t)e[1] + 1) * 8;
	case RXP_IPPROTO_AH:
		return ((uint32_t)e[1] + 2) * 4;
	case RXP_IPPROTO_FRAGMENT:
		return RXP_IPV6_FRAGHDR_LEN;
	default:
		return 0;
	}
}

RXP_END_DECLS

#endif
