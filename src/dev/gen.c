/*
 * The UDP traffic generator (include/rxpath/sim.h) and the frame-source
 * wrapper the sim NIC replays.
 *
 * Owns: one datagram at a time (built whole in a 64 KiB buffer) and the
 * position of the next fragment in it. Everything random comes from one
 * xoshiro256** stream seeded from cfg->seed, consumed in a fixed order, so
 * two generators with one config emit identical frames (the sim NIC runs one
 * per queue and keeps the frames that hash to it).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rxpath/sim.h"
#include "rxpath/wire.h"
#include "buf/rng.h"

struct rxp_gen {
	struct rxp_gen_config cfg;
	uint64_t s[4];
	uint64_t emitted; /* datagrams started */
	uint16_t ip_id;
	uint32_t ip6_id;
	/* the datagram being emitted */
	bool v6;
	uint32_t flow;
	uint32_t l4_len; /* UDP header + payload */
	uint32_t pos; /* next byte of l4 to emit */
	uint32_t id;
	struct rxp_gen_stats st;
	uint8_t dgram[65536];
};

static uint64_t rnd(struct rxp_gen *g)
{
	return rxp_xoshiro_next(g->s);
}

static uint64_t below(struct rxp_gen *g, uint64_t n)
{
	return n ? rnd(g) % n : 0;
}

static double unit(struct rxp_gen *g)
{
	return (double)(rnd(g) >> 11) * (1.0 / 9007199254740992.0);
}

/* The payload check: four interleaved multiply-xor lanes over 64-bit
 * little-endian words (the lanes keep the multiplier pipeline busy; a
 * byte-wise FNV-1a cost the generator and the sink most of `rxpath run`),
 * seeded by the sequence number and length, folded to 32 bits. */
static inline uint64_t mix(uint64_t h, uint64_t w)
{
	h = (h ^ w) * 0x9e3779b97f4a7c15ull;
	return h ^ (h >> 29);
}

static uint32_t payload_hash(const uint8_t *p, uint32_t n, uint32_t seq)
{
	uint64_t h[4] = {0xcbf29ce484222325ull ^ seq, 0x84222325cbf29ce4ull ^ n, 0x100000001b3ull,
			 0x2545f4914f6cdd1dull};
	uint64_t w, t;

	for (; n >= 32; p += 32, n -= 32)
		for (int k = 0; k < 4; k++) {
			memcpy(&w, p + 8 * k, 8);
			h[k] = mix(h[k], w);
		}
	for (int k = 0; n >= 8; p += 8, n -= 8, k++) {
		memcpy(&w, p, 8);
		h[k] = mix(h[k], w);
	}
	w = 0;
	memcpy(&w, p, n);
	t = mix(mix(mix(mix(h[0], h[1]), h[2]), h[3]), w ^ ((uint64_t)n << 56));
	return (uint32_t)(t ^ (t >> 32));
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

struct rxp_gen *rxp_gen_create(const struct rxp_gen_config *cfg)
{
	struct rxp_gen *g;

	g = calloc(1, sizeof(*g));
	if (!g)
		return NULL;
	g->cfg = *cfg;
	if (!g->cfg.min_payload)
		g->cfg.min_payload = RXP_GEN_HDR_LEN;
	if (!g->cfg.max_payload)
		g->cfg.max_payload = 1472;
	if (!g->cfg.mtu)
		g->cfg.mtu = 1500;
	if (!g->cfg.flows)
		g->cfg.flows = 64;
	if (!g->cfg.dport)
		g->cfg.dport = 9;
	if (g->cfg.min_payload < RXP_GEN_HDR_LEN || g->cfg.max_payload > 65000 ||
	    g->cfg.min_payload > g->cfg.max_payload || g->cfg.mtu < 68 || g->cfg.mtu > 9200 ||
	    g->cfg.ipv6_pct > 100 || g->cfg.loss < 0 || g->cfg.loss > 1) {
		free(g);
		errno = EINVAL;
		return NULL;
	}
	if (g->cfg.ipv6_pct && g->cfg.mtu < 1280)
		g->cfg.mtu = 1280; /* IPv6's minimum link MTU */
	rxp_xoshiro_seed(g->s, cfg->seed);
	g->ip_id = (uint16_t)rnd(g);
	g->ip6_id = (uint32_t)rnd(g);
	return g;
}

void rxp_gen_destroy(struct rxp_gen *g)
{
	free(g);
}

void rxp_gen_get_stats(const struct rxp_gen *g, struct rxp_gen_stats *st)
{
	*st = g->st;
}

int rxp_gen_verify(const uint8_t *p, uint32_t len)
{
	if (len < RXP_GEN_HDR_LEN || get32(p) != RXP_GEN_MAGIC || get32(p + 8) != len)
		return -EBADMSG;
	if (payload_hash(p + RXP_GEN_HDR_LEN, len - RXP_GEN_HDR_LEN, get32(p + 4)) != get32(p + 12))
		return -EBADMSG;
	return 0;
}

static inline uint64_t xorshift(uint64_t *x)
{
	*x ^= *x >> 12;
	*x ^= *x << 25;
	*x ^= *x >> 27;
	return *x * 2685821657736338717ull;
}

/* Fill and hash in one pass: the same lanes and order as payload_hash (word
 * j goes to lane j % 4). */
void rxp_gen_fill_payload(uint8_t *p, uint32_t len, uint32_t seq, uint64_t x)
{
	uint8_t *b = p + RXP_GEN_HDR_LEN;
	uint32_t n = len - RXP_GEN_HDR_LEN, i = 0;
	uint64_t h[4] = {0xcbf29ce484222325ull ^ seq, 0x84222325cbf29ce4ull ^ n, 0x100000001b3ull,
			 0x2545f4914f6cdd1dull};
	uint64_t w, t;

	x |= 1; /* xorshift64* must not start at 0 */
	for (; i + 32 <= n; i += 32)
		for (int k = 0; k < 4; k++) {
			w = xorshift(&x);
			memcpy(b + i + 8 * k, &w, 8);
			h[k] = mix(h[k], w);
		}
	for (int k = 0; i + 8 <= n; i += 8, k++) {
		w = xorshift(&x);
		memcpy(b + i, &w, 8);
		h[k] = mix(h[k], w);
	}
	w = 0;
	for (uint32_t r = 0; i + r < n; r++) {
		b[i + r] = (uint8_t)(x >> (8 * r));
		w |= (uint64_t)b[i + r] << (8 * r);
	}
	t = mix(mix(mix(mix(h[0], h[1]), h[2]), h[3]), w ^ ((uint64_t)(n - i) << 56));
	put32(p, RXP_GEN_MAGIC);
	put32(p + 4, seq);
	put32(p + 8, len);
	put32(p + 12, (uint32_t)(t ^ (t >> 32)));
}

uint32_t rxp_gen_payload_seq(const uint8_t *p)
{
	return get32(p + 4);
}

/* Addresses of flow f: 10.x.y.z / fd00::x:y. */
static void addr4(uint32_t f, bool dst, uint8_t *a)
{
	a[0] = 10;
	a[1] = dst ? 200 : 100;
	a[2] = (uint8_t)(f >> 8);
	a[3] = (uint8_t)(f + 1);
}

static void addr6(uint32_t f, bool dst, uint8_t *a)
{
	memset(a, 0, 16);
	a[0] = 0xfd;
	a[1] = dst ? 2 : 1;
	a[14] = (uint8_t)(f >> 8);
	a[15] = (uint8_t)(f + 1);
}

static uint16_t udp_csum(struct rxp_gen *g, const uint8_t *src, const uint8_t *dst, unsigned alen)
{
	uint32_t sum = rxp_csum_partial(src, alen, 0);
	uint16_t w[2] = {htons(RXP_IPPROTO_UDP), htons((uint16_t)g->l4_len)};
	uint16_t c;

	sum = rxp_csum_partial(dst, alen, sum);
	if (alen == 16) {
		uint32_t l = htonl(g->l4_len), nh = htonl(RXP_IPPROTO_UDP);

		sum = rxp_csum_partial(&l, 4, sum);
		sum = rxp_csum_partial(&nh, 4, sum);
	} else {
		sum = rxp_csum_partial(w, 4, sum);
	}
	c = rxp_csum_fold(rxp_csum_partial(g->dgram, g->l4_len, sum));
	return c ? c : 0xffff;
}

/* Build the next datagram's UDP header and payload into g->dgram. */
static void new_datagram(struct rxp_gen *g)
{
	uint32_t plen = g->cfg.min_payload +
			(uint32_t)below(g, g->cfg.max_payload - g->cfg.min_payload + 1);
	uint32_t seq = (uint32_t)g->emitted++;
	uint8_t *u = g->dgram, *p = u + 8, src[16], dst[16];
	uint64_t x = rnd(g);
	uint16_t c;

	g->v6 = below(g, 100) < g->cfg.ipv6_pct;
	g->flow = (uint32_t)below(g, g->cfg.flows);
	g->l4_len = 8 + plen;
	g->pos = 0;
	g->id = g->v6 ? ++g->ip6_id : ++g->ip_id;
	u[0] = (uint8_t)((40000 + (g->flow & 0xfff)) >> 8);
	u[1] = (uint8_t)(40000 + (g->flow & 0xfff));
	u[2] = (uint8_t)(g->cfg.dport >> 8);
	u[3] = (uint8_t)g->cfg.dport;
	u[4] = (uint8_t)(g->l4_len >> 8);
	u[5] = (uint8_t)g->l4_len;
	u[6] = u[7] = 0;
	rxp_gen_fill_payload(p, plen, seq, x);
	if (g->v6) {
		addr6(g->flow, false, src);
		addr6(g->flow, true, dst);
		c = udp_csum(g, src, dst, 16);
	} else {
		addr4(g->flow, false, src);
		addr4(g->flow, true, dst);
		c = udp_csum(g, src, dst, 4);
	}
	memcpy(u + 6, &c, 2);
	g->st.datagrams++;
}

static uint32_t eth_header(struct rxp_gen *g, uint8_t *f)
{
	static const uint8_t dmac[6] = {0x02, 0, 0, 0, 0, 0x02};

	memcpy(f, dmac, 6);
	f[6] = 0x02;
	f[7] = 0;
	f[8] = 0;
	f[9] = 0;
	f[10] = (uint8_t)(g->flow >> 8);
	f[11] = (uint8_t)g->flow;
	f[12] = g->v6 ? 0x86 : 0x08;
	f[13] = g->v6 ? 0xdd : 0x00;
	return RXP_ETH_HLEN;
}

/* Emit the next fragment (or the whole datagram) as a frame. */
static uint32_t emit(struct rxp_gen *g, uint8_t *f)
{
	uint32_t off = eth_header(g, f), n, mtu = g->cfg.mtu;
	bool more;

	if (!g->v6) {
		struct rxp_iphdr ip;
		uint32_t room = mtu - RXP_IPV4_HLEN;

		n = g->l4_len - g->pos;
		more = false;
		if (g->pos || n > room) {
			room &= ~7u;
			if (n > room) {
				n = room;
				more = true;
			}
		}
		memset(&ip, 0, sizeof(ip));
		ip.ver_ihl = 0x45;
		ip.tot_len = htons((uint16_t)(RXP_IPV4_HLEN + n));
		ip.id = htons((uint16_t)g->id);
		ip.frag_off = htons((uint16_t)((more ? RXP_IP_MF : 0) | (g->pos >> 3)));
		ip.ttl = 64;
		ip.protocol = RXP_IPPROTO_UDP;
		addr4(g->flow, false, (uint8_t *)&ip.saddr);
		addr4(g->flow, true, (uint8_t *)&ip.daddr);
		ip.check = rxp_ip_csum(&ip, RXP_IPV4_HLEN);
		memcpy(f + off, &ip, RXP_IPV4_HLEN);
		off += RXP_IPV4_HLEN;
	} else {
		struct rxp_ipv6hdr ip6;
		uint32_t room = mtu - RXP_IPV6_HLEN;
		bool frag;

		n = g->l4_len - g->pos;
		frag = g->pos || n > room;
		more = false;
		if (frag) {
			room = (room - RXP_IPV6_FRAGHDR_LEN) & ~7u;
			if (n > room) {
				n = room;
				more = true;
			}
		}
		memset(&ip6, 0, sizeof(ip6));
		ip6.vtc_flow = htonl(6u << 28);
		ip6.payload_len = htons((uint16_t)(n + (frag ? RXP_IPV6_FRAGHDR_LEN : 0)));
		ip6.nexthdr = frag ? RXP_IPPROTO_FRAGMENT : RXP_IPPROTO_UDP;
		ip6.hop_limit = 64;
		addr6(g->flow, false, ip6.saddr);
		addr6(g->flow, true, ip6.daddr);
		memcpy(f + off, &ip6, RXP_IPV6_HLEN);
		off += RXP_IPV6_HLEN;
		if (frag) {
			struct rxp_frag6hdr fh = {
				.nexthdr = RXP_IPPROTO_UDP,
				.frag_off = htons((uint16_t)(g->pos | (more ? RXP_IP6_MF : 0))),
				.id = htonl(g->id),
			};

			memcpy(f + off, &fh, RXP_IPV6_FRAGHDR_LEN);
			off += RXP_IPV6_FRAGHDR_LEN;
		}
	}
	memcpy(f + off, g->dgram + g->pos, n);
	off += n;
	g->pos += n;
	if (off < 60) {
		memset(f + off, 0, 60 - off);
		off = 60;
	}
	return off;
}

int rxp_gen_next(struct rxp_gen *g, uint8_t *buf, uint32_t cap, uint32_t *len)
{
	if (cap < g->cfg.mtu + RXP_ETH_HLEN)
		return -ENOSPC;
	for (;;) {
		uint32_t n;

		if (g->pos >= g->l4_len) {
			if (g->cfg.count && g->emitted >= g->cfg.count)
				return -ENODATA;
			new_datagram(g);
		}
		n = emit(g, buf);
		g->st.frames++;
		/* Decide loss after building: the random stream stays the
		 * same whatever the loss rate. */
		if (unit(g) < g->cfg.loss) {
			g->st.lost++;
			continue;
		}
		g->st.bytes += n;
		*len = n;
		return 0;
	}
}

/* ---- as a frame source --------------------------------------------------- */

struct src_gen {
	struct rxp_src src;
	struct rxp_gen *g;
};

static int src_gen_next(struct rxp_src *s, uint8_t *buf, uint32_t cap, uint32_t *len)
{
	return rxp_gen_next(((struct src_gen *)s)->g, buf, cap, len);
}

static void src_gen_close(struct rxp_src *s)
{
	rxp_gen_destroy(((struct src_gen *)s)->g);
	free(s);
}

struct rxp_src *rxp_src_gen(const struct rxp_gen_config *cfg)
{
	struct src_gen *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->g = rxp_gen_create(cfg);
	if (!s->g) {
		free(s);
		return NULL;
	}
	s->src.next = src_gen_next;
	s->src.close = src_gen_close;
	return &s->src;
}
