/*
 * A decoding layer for the reassembly fuzz targets (fuzz_reasm.c,
 * fuzz_reasm_model.c): the input is not packets but a description of
 * datagrams and of how they are cut and sent, so that nearly every input
 * reaches completion, overlap, expiry and eviction rather than stopping at
 * a header check.
 *
 * Input: three configuration bytes (rp_config), then operations, each one
 * byte a (kind = a & 7, datagram slot d = (a >> 3) & 3, modifiers m = a >> 5)
 * and the bytes its kind reads:
 *   0 NEW      describe datagram d: family, ECN, DF, source, zone, length,
 *              cuts (equal, from input bytes, alternating, pseudo-random),
 *              send order (in order, reversed, evens then odds, shuffled;
 *              optionally the last first), id (fresh, another slot's, or
 *              one that lands in the same table slot), IPv4 options on the
 *              first fragment, IPv6 extension headers before the fragment
 *              header (hop-by-hop, destination options, routing, up to
 *              three) and the fragment header's next header
 *   1 NEXT     send d's next fragment in its order (m: ring buffer; skip it,
 *              a loss; send it twice)
 *   2 PICK     send fragment (byte % n) of d (m: ring buffer; other bytes;
 *              a mutation, see rp_mut)
 *   3 OVERLAP  send [8*byte, +8*(1+byte%32)) (m: other bytes; MF flipped;
 *              an odd length)
 *   4 END      send a last fragment (MF=0) ending elsewhere than d's end
 *   5 TIME     advance the clock by byte time units
 *   6 EXPIRE   run the timers
 *   7 MUTATE   send d's next fragment with mutation (byte % RP_NMUT)
 * A datagram's bytes depend on its family and addresses only (rp_pattern),
 * so two slots that share a key agree wherever they both have data unless
 * a fragment carries the other bytes (alt), and a result's header says what
 * its bytes must be.
 */
#ifndef RXP_REASM_PLAN_H
#define RXP_REASM_PLAN_H

#include "rxpath/defrag.h"
#include "rxpath/wire.h"
#include "fuzz.h"

#define RP_MAXD 4
#define RP_MAXF 64 /* planned fragments per datagram */
#define RP_MAXEXT 96 /* bytes of IPv6 unfragmentable extension headers */
#define RP_MAXOPS 512 /* operations per input */

/* The decoder's larger steps stay functions of their own: the coverage
 * ignorelist (tests/fuzz/coverage-ignore.txt) leaves rp_* uninstrumented,
 * as it does the targets' checks; inlined, their loops would be traced as
 * the target's, comparison by comparison (a fifth of fuzz_reasm's traced
 * comparisons came from them). */
#define RP_FN static __attribute__((noinline, unused))

struct rp_config {
	enum rxp_defrag_policy policy;
	bool forward, linux_pressure, max_dist, discard_cb, overlap_cb;
	uint64_t mem_limit; /* 0: the default */
	uint32_t max_queues; /* 0: the default */
	uint64_t unit_ns; /* one TIME step */
};

struct rp_dgram {
	bool live;
	int family; /* 4 or 6 */
	uint32_t len; /* payload bytes */
	uint32_t id;
	uint8_t src; /* source address index */
	uint32_t zone;
	uint8_t dst6; /* IPv6 destination: 0 global, 1 link-local (zone in the key) */
	uint8_t proto; /* IPv4 protocol */
	uint8_t ecn;
	bool df;
	uint8_t optlen; /* IPv4 option bytes on an offset-0 fragment */
	uint8_t ext[RP_MAXEXT]; /* IPv6 unfragmentable headers, in order */
	uint16_t extlen;
	uint8_t nh0; /* the IPv6 header's next header (RXP_IPPROTO_FRAGMENT if none) */
	uint16_t lastnh; /* offset in ext of the last header's next-header byte */
	bool hbh_late; /* a hop-by-hop header after the first: not a fragment */
	uint8_t fnh; /* the fragment header's next header */
	uint16_t need; /* upper-layer bytes a first fragment must carry (RFC 7112) */
	uint32_t cut[RP_MAXF + 1];
	int nfr;
	uint8_t order[RP_MAXF];
	int next;
	uint8_t *pl, *alt; /* payload bytes and the other bytes (65536 each) */
};

struct rp_plan {
	struct fz_in in;
	struct rp_config cfg;
	struct rp_dgram d[RP_MAXD];
	uint32_t next_id;
	uint64_t now;
	int ops;
};

/* One fragment to send. */
struct rp_frag {
	int d;
	uint32_t off, end; /* payload bytes [off, end) as sent */
	bool mf;
	bool alt; /* bytes from the other pattern */
	bool ringbuf;
	int mut; /* rp_mut, 0: none */
};

enum rp_mut {
	RP_MUT_NONE = 0,
	RP_MUT_PAD, /* trailing link padding: valid, trimmed */
	RP_MUT_TRUNC, /* the IP length says 8 bytes more than there are */
	RP_MUT_HDR, /* IPv4: ihl 4; IPv6: the fragment header's next header is 44 */
	RP_MUT_VERSION, /* a version that is neither 4 nor 6 */
	RP_MUT_TTL, /* another TTL and flow label: the same fragment */
	RP_NMUT
};

static inline void rp_patterns_init(void);

enum rp_kind { RP_NEW, RP_NEXT, RP_PICK, RP_OVERLAP, RP_END, RP_TIME, RP_EXPIRE, RP_MUTATE };

RP_FN void rp_init(struct rp_plan *p, const uint8_t *data, size_t size)
{
	static const uint64_t units[4] = {1000000ull, 100000000ull, 1000000000ull, 10000000000ull};
	uint32_t b0, b1, b2;

	memset(p, 0, sizeof(*p));
	p->in = (struct fz_in){data, size};
	b0 = fz_u8(&p->in);
	b1 = fz_u8(&p->in);
	b2 = fz_u8(&p->in);
	p->cfg.policy = (enum rxp_defrag_policy)(b0 & 7);
	p->cfg.forward = b0 & 8;
	p->cfg.linux_pressure = b0 & 16;
	p->cfg.max_dist = b0 & 32;
	p->cfg.discard_cb = b0 & 64;
	p->cfg.overlap_cb = b0 & 128;
	p->cfg.mem_limit = (b1 & 15) ? 1024ull << (b1 & 15) : 0;
	p->cfg.max_queues = b1 >> 4;
	p->cfg.unit_ns = units[b2 & 3];
	p->next_id = (b2 >> 2) * 4099u;
	rp_patterns_init();
}

static inline uint64_t rp_mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

/* Whether the zone is part of the datagram's key (as the engine keys). */
static inline bool rp_zoned(const struct rp_dgram *g)
{
	return g->family == 4 || g->dst6 == 1;
}

/* Two slots whose fragments go to one queue. */
static inline bool rp_same_key(const struct rp_dgram *a, const struct rp_dgram *b)
{
	return a->family == b->family && a->src == b->src && a->dst6 == b->dst6 &&
	       a->proto == b->proto && a->id == b->id && (!rp_zoned(a) || a->zone == b->zone);
}

/* Payload patterns, one per (family, source, destination): what a result
 * says about itself (its header) finds its pattern. pl is 8 bytes per step
 * of a mixer; alt is pl changed from byte 2 on (an IPv6 payload starts with
 * a two-byte extension-header stub, next header UDP and length 8, that must
 * stay so that the first fragment's header chain is the same). Made once. */
#define RP_NPAT 16
static uint8_t rp_pat[RP_NPAT][2][65536];

static inline int rp_pattern(int family, unsigned src, unsigned dst6)
{
	return (family == 6) << 3 | (int)(src & 3) << 1 | (int)(dst6 & 1);
}

static inline void rp_patterns_init(void)
{
	static bool done;

	if (done)
		return;
	for (int k = 0; k < RP_NPAT; k++) {
		uint8_t *pl = rp_pat[k][0], *alt = rp_pat[k][1];

		for (uint32_t i = 0; i < 65536; i += 8) {
			uint64_t w = rp_mix((uint64_t)k << 32 ^ i);

			memcpy(pl + i, &w, 8);
		}
		for (uint32_t i = 0; i < 65536; i++)
			alt[i] = pl[i] ^ (uint8_t)(0x5b + i);
		if (k & 8) {
			pl[0] = alt[0] = RXP_IPPROTO_UDP;
			pl[1] = alt[1] = 0;
		}
	}
	done = true;
}

static inline void rp_fill(struct rp_dgram *g)
{
	int k = rp_pattern(g->family, g->src, g->dst6);

	g->pl = rp_pat[k][0];
	g->alt = rp_pat[k][1];
}

/* Bytes of the upper-layer header(s) an IPv6 first fragment must carry,
 * given the stub rp_fill() writes. */
static inline uint16_t rp_need(uint8_t fnh)
{
	switch (fnh) {
	case RXP_IPPROTO_TCP:
		return 20;
	case RXP_IPPROTO_UDP:
	case RXP_IPPROTO_ICMPV6:
		return 8;
	case RXP_IPPROTO_NONE:
		return 0;
	case RXP_IPPROTO_HOPOPTS:
	case RXP_IPPROTO_ROUTING:
	case RXP_IPPROTO_DSTOPTS:
		return 16; /* the 8-byte stub, then UDP */
	case RXP_IPPROTO_AH:
		return 16; /* (0 + 2) * 4 bytes, then UDP */
	default:
		return 1;
	}
}

/* The highest payload end: headers plus payload stay within 65535. */
#define RP_MAXEND (65535u - 160u)

RP_FN void rp_cuts(struct rp_plan *p, struct rp_dgram *g, uint32_t unit, uint32_t mode,
		   uint32_t seed)
{
	uint64_t x = rp_mix(seed + 1);
	uint32_t off = 0;
	int n = 0;

	while (off < g->len && n < RP_MAXF) {
		uint32_t sz;

		switch (mode) {
		case 0:
			sz = unit;
			break;
		case 1:
			sz = 8 * (1 + fz_u8(&p->in));
			break;
		case 2:
			sz = n & 1 ? 8 : unit;
			break;
		default:
			x = rp_mix(x);
			sz = 8 * (1 + (uint32_t)(x % (unit / 8 + 1)));
			break;
		}
		g->cut[n++] = off;
		off = n == RP_MAXF || off + sz >= g->len ? g->len : off + sz;
	}
	if (!n)
		g->cut[n++] = 0; /* len 0: one empty fragment */
	g->cut[n] = g->len;
	g->nfr = n;
}

RP_FN void rp_order(struct rp_dgram *g, uint32_t mode, bool last_first, uint32_t seed)
{
	int n = g->nfr, k = 0;
	uint64_t x = rp_mix(seed + 7);

	for (int i = 0; i < n; i++)
		g->order[i] = (uint8_t)i;
	if (mode == 1) {
		for (int i = 0; i < n; i++)
			g->order[i] = (uint8_t)(n - 1 - i);
	} else if (mode == 2) {
		for (int i = 0; i < n; i += 2)
			g->order[k++] = (uint8_t)i;
		for (int i = 1; i < n; i += 2)
			g->order[k++] = (uint8_t)i;
	} else if (mode == 3) {
		for (int i = n - 1; i > 0; i--) {
			int j;
			uint8_t t;

			x = rp_mix(x);
			j = (int)(x % (uint64_t)(i + 1));
			t = g->order[i];
			g->order[i] = g->order[j];
			g->order[j] = t;
		}
	}
	if (last_first) {
		for (int i = 0; i < n; i++) {
			if (g->order[i] == n - 1) {
				memmove(g->order + 1, g->order, (size_t)i);
				g->order[0] = (uint8_t)(n - 1);
				break;
			}
		}
	}
	g->next = 0;
}

/* IPv6 extension headers before the fragment header: up to three, each
 * (1 + len) * 8 bytes of PadN. */
RP_FN void rp_ext(struct rp_plan *p, struct rp_dgram *g, unsigned count)
{
	static const uint8_t types[4] = {RXP_IPPROTO_HOPOPTS, RXP_IPPROTO_DSTOPTS,
					 RXP_IPPROTO_ROUTING, RXP_IPPROTO_DSTOPTS};
	uint8_t *prev = &g->nh0;

	g->extlen = 0;
	g->hbh_late = false;
	g->nh0 = RXP_IPPROTO_FRAGMENT;
	for (unsigned i = 0; i < count; i++) {
		uint32_t b = fz_u8(&p->in);
		uint8_t type = types[b & 3];
		unsigned sz = 8 * (1 + ((b >> 2) & 3));
		uint8_t *h = g->ext + g->extlen;

		if (g->extlen + sz > RP_MAXEXT)
			break;
		if (type == RXP_IPPROTO_HOPOPTS && i > 0)
			g->hbh_late = true;
		*prev = type;
		memset(h, 0, sz);
		h[0] = RXP_IPPROTO_FRAGMENT;
		h[1] = (uint8_t)(sz / 8 - 1);
		if (type != RXP_IPPROTO_ROUTING) {
			h[2] = 1; /* PadN */
			h[3] = (uint8_t)(sz - 4);
		}
		g->lastnh = g->extlen;
		prev = h;
		g->extlen = (uint16_t)(g->extlen + sz);
	}
}

RP_FN void rp_new(struct rp_plan *p, int di)
{
	static const uint8_t fnhs[8] = {
		RXP_IPPROTO_UDP,    RXP_IPPROTO_UDP,	 RXP_IPPROTO_TCP,     RXP_IPPROTO_NONE,
		RXP_IPPROTO_ICMPV6, RXP_IPPROTO_DSTOPTS, RXP_IPPROTO_ROUTING, RXP_IPPROTO_AH};
	struct rp_dgram *g = &p->d[di];
	uint32_t c0 = fz_u8(&p->in), len = fz_u16(&p->in), c3 = fz_u8(&p->in);
	uint32_t c4 = fz_u8(&p->in), c5 = fz_u8(&p->in), c6 = fz_u8(&p->in);
	memset(g, 0, sizeof(*g));
	g->live = true;
	g->family = c0 & 1 ? 6 : 4;
	g->ecn = (uint8_t)((c0 >> 1) & 3);
	g->df = c0 & 8;
	g->src = (uint8_t)((c0 >> 4) & 3);
	g->zone = (c0 >> 6) & 1;
	g->dst6 = g->family == 6 ? (uint8_t)(c0 >> 7) : 0;
	g->proto = RXP_IPPROTO_UDP;
	/* lengths: the top three bits pick a scale, so most datagrams are
	 * small (half up to 255 bytes, a quarter up to 1023, an eighth up to
	 * 4095) and an eighth go up to 65535 */
	{
		uint32_t sel = len >> 13, v = len & 0x1fff;

		len = sel < 4	 ? v & 255
		      : sel < 6	 ? v & 1023
		      : sel == 6 ? v & 4095
				 : v * 8 + (v & 7);
	}
	g->len = len > RP_MAXEND ? RP_MAXEND : len;
	/* id: fresh, another slot's (same key if the rest agrees), or 32 or
	 * 64 apart from it (the same slot of a small table's direct map) */
	switch (c6 & 3) {
	case 0:
		g->id = p->next_id++;
		break;
	default: {
		const struct rp_dgram *o = &p->d[(c6 >> 2) & 3];

		g->id = o->id + ((c6 & 3) == 1 ? 0 : (c6 & 3) == 2 ? 32 : 64);
		break;
	}
	}
	if (g->family == 4)
		g->id &= 0xffff;
	else
		g->fnh = fnhs[(c6 >> 4) & 7];
	g->need = g->family == 6 ? rp_need(g->fnh) : 0;
	g->optlen = g->family == 4 ? (uint8_t)(4 * ((c5 >> 4) % 11)) : 0;
	if (g->family == 6)
		rp_ext(p, g, (c5 >> 4) & 3);
	rp_fill(g);
	rp_cuts(p, g, 8 * (1 + c3), c4 & 3, c5);
	rp_order(g, (c4 >> 2) & 3, c4 & 16, c5 ^ c4);
}

/* Decode the next operation. Returns false at the end of the input. For
 * fragments *f is filled and RP_NEXT/RP_PICK/RP_OVERLAP/RP_END/RP_MUTATE
 * returned in *kind; TIME has already advanced p->now. */
RP_FN bool rp_next(struct rp_plan *p, enum rp_kind *kind, struct rp_frag *f, int *twice)
{
	uint32_t a, m;
	struct rp_dgram *g;

	*twice = 0;
	for (;;) {
		if (!p->in.n || p->ops++ >= RP_MAXOPS)
			return false;
		a = fz_u8(&p->in);
		*kind = (enum rp_kind)(a & 7);
		m = a >> 5;
		memset(f, 0, sizeof(*f));
		f->d = (int)((a >> 3) & 3);
		g = &p->d[f->d];
		switch (*kind) {
		case RP_NEW:
			rp_new(p, f->d);
			continue;
		case RP_TIME:
			p->now += (uint64_t)fz_u8(&p->in) * p->cfg.unit_ns;
			return true;
		case RP_EXPIRE:
			return true;
		default:
			break;
		}
		if (!g->live)
			continue;
		switch (*kind) {
		case RP_NEXT:
		case RP_MUTATE: {
			int i;

			if (g->next >= g->nfr)
				g->next = 0; /* round again: duplicates of everything */
			i = g->order[g->next++];
			f->off = g->cut[i];
			f->end = g->cut[i + 1];
			f->mf = i + 1 < g->nfr;
			if (*kind == RP_MUTATE) {
				f->mut = 1 + (int)(fz_u8(&p->in) % (RP_NMUT - 1));
				return true;
			}
			f->ringbuf = m & 1;
			if (m & 2)
				continue; /* lost */
			*twice = (m & 4) != 0;
			return true;
		}
		case RP_PICK: {
			int i = (int)(fz_u8(&p->in) % (uint32_t)g->nfr);

			f->off = g->cut[i];
			f->end = g->cut[i + 1];
			f->mf = i + 1 < g->nfr;
			f->ringbuf = m & 1;
			f->alt = m & 2;
			if (m & 4)
				f->mut = 1 + (int)(fz_u8(&p->in) % (RP_NMUT - 1));
			return true;
		}
		case RP_OVERLAP: {
			uint32_t blk = fz_u8(&p->in), n = fz_u8(&p->in);

			f->off = 8 * (blk % ((g->len + 7) / 8 + 1));
			f->end = f->off + 8 * (1 + n % 32);
			if (f->end >= g->len)
				f->end = g->len > f->off ? g->len : f->off + 8;
			if (f->end > RP_MAXEND)
				f->end = RP_MAXEND;
			f->mf = f->end < g->len;
			if (m & 2)
				f->mf = !f->mf;
			if ((m & 4) && f->end - f->off > 8)
				f->end -= 1 + (n >> 5) % 7; /* not a multiple of 8 */
			f->alt = m & 1;
			return true;
		}
		case RP_END: {
			uint32_t b = fz_u8(&p->in);
			int32_t end =
				(int32_t)g->len + 8 * ((int32_t)(b & 15) - 8) - (int32_t)(b >> 4);

			if (end <= 0)
				end = 8;
			if ((uint32_t)end > RP_MAXEND)
				end = RP_MAXEND;
			f->end = (uint32_t)end;
			f->off = f->end > 64 ? (f->end - 64) & ~7u : 0;
			f->mf = false;
			return true;
		}
		default:
			return true;
		}
	}
}

/* The IPv4 or IPv6 packet of fragment f, with its mutation. NULL when the
 * pool is out of packets. */
RP_FN struct rxp_pkt *rp_build(struct rxp_pktpool *pp, const struct rp_dgram *g,
			       const struct rp_frag *f)
{
	uint32_t flen = f->end - f->off, hl, tot, pad = f->mut == RP_MUT_PAD ? 5 : 0;
	const uint8_t *src = f->alt ? g->alt : g->pl;
	struct rxp_pkt *p;
	uint8_t *b;

	if (g->family == 4) {
		struct rxp_iphdr *ip;

		hl = 20 + (f->off == 0 ? g->optlen : 0);
		tot = hl + flen;
		p = rxp_pkt_alloc(pp, tot + pad);
		if (!p)
			return NULL;
		b = rxp_pkt_put(p, tot + pad);
		ip = (struct rxp_iphdr *)(void *)b;
		memset(b, 0, hl);
		ip->ver_ihl = (uint8_t)(0x40 | hl / 4);
		ip->tos = g->ecn;
		ip->tot_len = htons((uint16_t)(f->mut == RP_MUT_TRUNC ? tot + pad + 8 : tot));
		ip->id = htons((uint16_t)g->id);
		ip->frag_off = htons((uint16_t)((f->off / 8) | (f->mf ? RXP_IP_MF : 0) |
						(g->df ? RXP_IP_DF : 0)));
		ip->ttl = f->mut == RP_MUT_TTL ? 3 : 64;
		ip->protocol = g->proto;
		ip->saddr = htonl(0x0a000001u + g->src);
		ip->daddr = htonl(0x0a000101u);
		memset(b + 20, 1, hl - 20); /* NOP options */
		if (f->mut == RP_MUT_HDR)
			ip->ver_ihl = 0x44;
		if (f->mut == RP_MUT_VERSION)
			ip->ver_ihl = (uint8_t)(0x50 | (ip->ver_ihl & 15));
		ip->check = rxp_ip_csum(ip, hl);
		p->protocol = RXP_ETH_P_IP;
	} else {
		struct rxp_ipv6hdr *ip;
		struct rxp_frag6hdr *fh;

		hl = 40 + g->extlen + 8;
		tot = hl + flen;
		p = rxp_pkt_alloc(pp, tot + pad);
		if (!p)
			return NULL;
		b = rxp_pkt_put(p, tot + pad);
		ip = (struct rxp_ipv6hdr *)(void *)b;
		memset(b, 0, 40);
		ip->vtc_flow = htonl(0x60000000u | (uint32_t)g->ecn << 20 |
				     (f->mut == RP_MUT_TTL ? 0x12345u : 0));
		if (f->mut == RP_MUT_VERSION)
			ip->vtc_flow = htonl(0x70000000u);
		ip->payload_len = htons(
			(uint16_t)(g->extlen + 8 + flen + (f->mut == RP_MUT_TRUNC ? pad + 8 : 0)));
		ip->nexthdr = g->nh0;
		ip->hop_limit = f->mut == RP_MUT_TTL ? 3 : 64;
		ip->saddr[0] = 0x20;
		ip->saddr[1] = 0x01;
		ip->saddr[15] = (uint8_t)(1 + g->src);
		if (g->dst6 == 1) {
			ip->daddr[0] = 0xfe;
			ip->daddr[1] = 0x80;
		} else {
			ip->daddr[0] = 0x20;
			ip->daddr[1] = 0x01;
		}
		ip->daddr[15] = 0x42;
		memcpy(b + 40, g->ext, g->extlen);
		fh = (struct rxp_frag6hdr *)(void *)(b + 40 + g->extlen);
		fh->nexthdr = f->mut == RP_MUT_HDR ? RXP_IPPROTO_FRAGMENT : g->fnh;
		fh->reserved = 0;
		fh->frag_off = htons((uint16_t)(f->off | (f->mf ? RXP_IP6_MF : 0)));
		fh->id = htonl(g->id);
		p->protocol = RXP_ETH_P_IPV6;
	}
	memcpy(b + hl, src + f->off, flen);
	memset(b + tot, 0xee, pad);
	if (f->ringbuf)
		p->flags |= RXP_PKT_F_RINGBUF;
	return p;
}

/* The table for a configuration (the oracle overrides the caps). */
static inline struct rxp_defrag_config rp_defrag_config(const struct rp_config *c)
{
	struct rxp_defrag_config dc = {
		.policy = c->policy,
		.pressure =
			c->linux_pressure ? RXP_DEFRAG_PRESSURE_LINUX : RXP_DEFRAG_PRESSURE_EVICT,
		.forward = c->forward,
		.mem_limit = c->mem_limit,
		.max_queues = c->max_queues,
		.max_dist = c->max_dist ? 8 : -1,
	};

	return dc;
}

#endif
