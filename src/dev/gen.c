/*
 * The UDP traffic generator (include/rxpath/sim.h) and the frame-source
 * wrapper the sim NIC replays.
 *
 * Owns: the datagrams in flight (config in_flight, one by default), each a
 * slot that keeps its headers and payload seed and emits its fragments in
 * turn with the other slots; payload bytes are a function of the seed and
 * the offset, so a fragment is made without its datagram stored. The
 * 64 KiB scratch holds a new datagram while its checksum and payload hash
 * are computed. Everything random comes from one
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

/* One datagram being emitted. Its bytes are not stored: the UDP and
 * payload headers are, and the rest is regenerated per fragment from the
 * payload seed (payload_word), so thousands can be in flight in little
 * memory. */
struct gen_slot {
	uint64_t x; /* payload seed */
	uint64_t seq; /* datagram number */
	uint32_t l4_len; /* UDP header + payload */
	uint32_t id;
	uint32_t flow;
	uint16_t nfr, next; /* fragments; how many emitted */
	bool v6, live, damaged;
	uint8_t hdr[8 + RXP_GEN_HDR_LEN]; /* UDP header, payload header */
	uint16_t *order; /* fragment emission order: nfr entries */
};

struct rxp_gen {
	struct rxp_gen_config cfg;
	uint64_t s[4];
	uint64_t emitted; /* datagrams started */
	uint32_t *ids; /* per flow: the last IP ID (IPv4 uses its low 16 bits) */
	unsigned nslots, cur; /* in_flight; the slot emitting next */
	unsigned live; /* slots with a datagram */
	uint16_t maxfr; /* fragments of the largest datagram */
	struct gen_slot *slot;
	uint16_t *orders;
	struct rxp_gen_stats st;
	uint8_t dgram[]; /* scratch: a whole UDP datagram (8 + max_payload) */
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

/* Payload bytes per fragment of a datagram of family v6 that does not fit
 * one frame (a multiple of 8), and whether l4_len bytes need fragments. */
static uint32_t frag_room(const struct rxp_gen *g, bool v6)
{
	return v6 ? (g->cfg.mtu - RXP_IPV6_HLEN - RXP_IPV6_FRAGHDR_LEN) & ~7u
		  : (g->cfg.mtu - RXP_IPV4_HLEN) & ~7u;
}

static bool needs_frags(const struct rxp_gen *g, bool v6, uint32_t l4_len)
{
	return l4_len > g->cfg.mtu - (v6 ? RXP_IPV6_HLEN : RXP_IPV4_HLEN);
}

struct rxp_gen *rxp_gen_create(const struct rxp_gen_config *cfg)
{
	struct rxp_gen_config c = *cfg;
	struct rxp_gen *g;

	if (!c.min_payload)
		c.min_payload = RXP_GEN_HDR_LEN;
	if (!c.max_payload)
		c.max_payload = 1472;
	if (!c.mtu)
		c.mtu = 1500;
	if (!c.flows)
		c.flows = 64;
	if (!c.dport)
		c.dport = 9;
	if (c.min_payload < RXP_GEN_HDR_LEN || c.max_payload > 65000 ||
	    c.min_payload > c.max_payload || c.mtu < 68 || c.mtu > 9200 || c.ipv6_pct > 100 ||
	    c.loss < 0 || c.loss > 1 || c.in_flight > RXP_GEN_IN_FLIGHT_MAX || c.flows > 65536 ||
	    c.net > 50) {
		errno = EINVAL;
		return NULL;
	}
	/* the scratch as large as the largest datagram, not 64 KiB always:
	 * the sim NIC runs a generator per queue */
	g = calloc(1, sizeof(*g) + 8 + c.max_payload);
	if (!g)
		return NULL;
	g->cfg = c;
	if (g->cfg.ipv6_pct && g->cfg.mtu < 1280)
		g->cfg.mtu = 1280; /* IPv6's minimum link MTU */
	rxp_xoshiro_seed(g->s, cfg->seed);
	g->ids = malloc((size_t)g->cfg.flows * sizeof(g->ids[0]));
	g->nslots = g->cfg.in_flight ? g->cfg.in_flight : 1;
	{
		uint32_t l4max = 8 + g->cfg.max_payload, r4 = frag_room(g, false),
			 r6 = frag_room(g, true);
		uint32_t f4 = (l4max + r4 - 1) / r4, f6 = (l4max + r6 - 1) / r6;

		g->maxfr = (uint16_t)(f4 > f6 ? f4 : f6);
	}
	g->slot = calloc(g->nslots, sizeof(g->slot[0]));
	g->orders = calloc((size_t)g->nslots * g->maxfr, sizeof(g->orders[0]));
	if (!g->slot || !g->orders || !g->ids) {
		rxp_gen_destroy(g);
		errno = ENOMEM;
		return NULL;
	}
	for (unsigned i = 0; i < g->cfg.flows; i++)
		g->ids[i] = (uint32_t)rnd(g);
	for (unsigned i = 0; i < g->nslots; i++)
		g->slot[i].order = g->orders + (size_t)i * g->maxfr;
	return g;
}

void rxp_gen_destroy(struct rxp_gen *g)
{
	if (!g)
		return;
	free(g->slot);
	free(g->orders);
	free(g->ids);
	free(g);
}

void rxp_gen_get_stats(const struct rxp_gen *g, struct rxp_gen_stats *st)
{
	*st = g->st;
}

int rxp_gen_verify(const uint8_t *p, uint32_t len)
{
	if (len < RXP_GEN_HDR_LEN || rxp_get_be32(p) != RXP_GEN_MAGIC || rxp_get_be32(p + 8) != len)
		return -EBADMSG;
	if (payload_hash(p + RXP_GEN_HDR_LEN, len - RXP_GEN_HDR_LEN, rxp_get_be32(p + 4)) !=
	    rxp_get_be32(p + 12))
		return -EBADMSG;
	return 0;
}

/* Word i of the payload body seeded by x: a counter-based mix, so that any
 * fragment's bytes can be made again without the ones before it. */
static inline uint64_t payload_word(uint64_t x, uint64_t i)
{
	uint64_t z = x + (i + 1) * 0x9e3779b97f4a7c15ull;

	z = (z ^ (z >> 32)) * 0xd6e8feb86659fd93ull;
	return z ^ (z >> 32);
}

/* Bytes [from, from + n) of the body (the payload after its header) seeded
 * by x, into d; from is a multiple of 8 or the body's tail is short. */
static void payload_range(uint8_t *d, uint32_t from, uint32_t n, uint64_t x)
{
	uint64_t i = from / 8, w;
	uint32_t skip = from % 8;

	if (skip) {
		uint32_t k = 8 - skip < n ? 8 - skip : n;

		w = payload_word(x, i++);
		memcpy(d, (const uint8_t *)&w + skip, k);
		d += k;
		n -= k;
	}
	for (; n >= 8; d += 8, n -= 8) {
		w = payload_word(x, i++);
		memcpy(d, &w, 8);
	}
	if (n) {
		w = payload_word(x, i);
		memcpy(d, &w, n);
	}
}

/* Fill and hash in one pass: the same lanes and order as payload_hash (word
 * j goes to lane j % 4). Little-endian words, as payload_hash reads them. */
void rxp_gen_fill_payload(uint8_t *p, uint32_t len, uint32_t seq, uint64_t x)
{
	uint8_t *b = p + RXP_GEN_HDR_LEN;
	uint32_t n = len - RXP_GEN_HDR_LEN, i = 0;
	uint64_t h[4] = {0xcbf29ce484222325ull ^ seq, 0x84222325cbf29ce4ull ^ n, 0x100000001b3ull,
			 0x2545f4914f6cdd1dull};
	uint64_t w, t, j = 0;

	for (; i + 32 <= n; i += 32)
		for (int k = 0; k < 4; k++) {
			w = payload_word(x, j++);
			memcpy(b + i + 8 * k, &w, 8);
			h[k] = mix(h[k], w);
		}
	for (int k = 0; i + 8 <= n; i += 8, k++) {
		w = payload_word(x, j++);
		memcpy(b + i, &w, 8);
		h[k] = mix(h[k], w);
	}
	w = 0;
	if (i < n) {
		uint64_t last = payload_word(x, j);

		memcpy(b + i, &last, n - i);
		memcpy(&w, b + i, n - i);
	}
	t = mix(mix(mix(mix(h[0], h[1]), h[2]), h[3]), w ^ ((uint64_t)(n - i) << 56));
	rxp_put_be32(p, RXP_GEN_MAGIC);
	rxp_put_be32(p + 4, seq);
	rxp_put_be32(p + 8, len);
	rxp_put_be32(p + 12, (uint32_t)(t ^ (t >> 32)));
}

/* Addresses of flow f: 10.x.y.z / fd00::x:y. */
static void addr4(const struct rxp_gen *g, uint32_t f, bool dst, uint8_t *a)
{
	a[0] = 10;
	a[1] = (uint8_t)((dst ? 200 : 100) + g->cfg.net);
	a[2] = (uint8_t)(f >> 8);
	a[3] = (uint8_t)(f + 1);
}

static void addr6(const struct rxp_gen *g, uint32_t f, bool dst, uint8_t *a)
{
	memset(a, 0, 16);
	a[0] = 0xfd;
	a[1] = (uint8_t)((dst ? 2 : 1) + 2 * g->cfg.net);
	a[14] = (uint8_t)(f >> 8);
	a[15] = (uint8_t)(f + 1);
}

static uint16_t udp_csum(const uint8_t *l4, uint32_t l4_len, const uint8_t *src, const uint8_t *dst,
			 unsigned alen)
{
	return rxp_udp_csum_field(rxp_csum_partial(
		l4, l4_len, rxp_pseudo_sum(src, dst, alen, RXP_IPPROTO_UDP, l4_len)));
}

/* Start the next datagram in slot sl: its UDP header and payload made
 * once in g->dgram, for the checksum and the payload hash; only the
 * headers are kept. */
static void new_datagram(struct rxp_gen *g, struct gen_slot *sl)
{
	uint32_t plen = g->cfg.min_payload +
			(uint32_t)below(g, g->cfg.max_payload - g->cfg.min_payload + 1);
	uint32_t seq = g->cfg.seq_base + (uint32_t)g->emitted;
	uint8_t *u = g->dgram, src[16], dst[16];
	uint16_t c;

	sl->seq = g->emitted++;
	sl->x = rnd(g);
	sl->v6 = below(g, 100) < g->cfg.ipv6_pct;
	sl->flow = (uint32_t)below(g, g->cfg.flows);
	sl->l4_len = 8 + plen;
	sl->id = ++g->ids[sl->flow];
	if (!sl->v6)
		sl->id &= 0xffff;
	sl->nfr =
		(uint16_t)(needs_frags(g, sl->v6, sl->l4_len)
				   ? (sl->l4_len + frag_room(g, sl->v6) - 1) / frag_room(g, sl->v6)
				   : 1);
	sl->next = 0;
	sl->live = true;
	sl->damaged = false;
	for (unsigned i = 0; i < sl->nfr; i++)
		sl->order[i] = (uint16_t)i;
	if (g->cfg.shuffle)
		for (unsigned i = sl->nfr - 1; i > 0; i--) {
			unsigned j = (unsigned)below(g, i + 1);
			uint16_t t = sl->order[i];

			sl->order[i] = sl->order[j];
			sl->order[j] = t;
		}
	u[0] = (uint8_t)((40000 + (sl->flow & 0xfff)) >> 8);
	u[1] = (uint8_t)(40000 + (sl->flow & 0xfff));
	u[2] = (uint8_t)(g->cfg.dport >> 8);
	u[3] = (uint8_t)g->cfg.dport;
	u[4] = (uint8_t)(sl->l4_len >> 8);
	u[5] = (uint8_t)sl->l4_len;
	u[6] = u[7] = 0;
	rxp_gen_fill_payload(u + 8, plen, seq, sl->x);
	if (sl->v6) {
		addr6(g, sl->flow, false, src);
		addr6(g, sl->flow, true, dst);
	} else {
		addr4(g, sl->flow, false, src);
		addr4(g, sl->flow, true, dst);
	}
	c = udp_csum(u, sl->l4_len, src, dst, sl->v6 ? 16 : 4);
	memcpy(u + 6, &c, 2);
	memcpy(sl->hdr, u, sizeof(sl->hdr));
	g->live++;
	g->st.datagrams++;
}

static uint32_t eth_header(const struct gen_slot *sl, uint8_t *f)
{
	static const uint8_t dmac[6] = {0x02, 0, 0, 0, 0, 0x02};

	memcpy(f, dmac, 6);
	f[6] = 0x02;
	f[7] = 0;
	f[8] = 0;
	f[9] = 0;
	f[10] = (uint8_t)(sl->flow >> 8);
	f[11] = (uint8_t)sl->flow;
	f[12] = sl->v6 ? 0x86 : 0x08;
	f[13] = sl->v6 ? 0xdd : 0x00;
	return RXP_ETH_HLEN;
}

/* UDP bytes [pos, pos + n) of slot sl's datagram into d. With one
 * datagram in flight the scratch still holds it whole: copied, not made
 * again (a quarter of the generator's instructions). */
static void l4_bytes(const struct rxp_gen *g, const struct gen_slot *sl, uint32_t pos, uint32_t n,
		     uint8_t *d)
{
	if (g->nslots == 1) {
		memcpy(d, g->dgram + pos, n);
		return;
	}
	if (pos < sizeof(sl->hdr)) {
		uint32_t k =
			(uint32_t)sizeof(sl->hdr) - pos < n ? (uint32_t)sizeof(sl->hdr) - pos : n;

		memcpy(d, sl->hdr + pos, k);
		d += k;
		pos += k;
		n -= k;
	}
	if (n)
		payload_range(d, pos - (uint32_t)sizeof(sl->hdr), n, sl->x);
}

/* Emit fragment j of slot sl (or the whole datagram) as a frame. */
static uint32_t emit(const struct rxp_gen *g, const struct gen_slot *sl, unsigned j, uint8_t *f)
{
	uint32_t off = eth_header(sl, f), n, pos = 0;
	bool frag = sl->nfr > 1, more = false;

	n = sl->l4_len;
	if (frag) {
		uint32_t room = frag_room(g, sl->v6);

		pos = j * room;
		n = sl->l4_len - pos < room ? sl->l4_len - pos : room;
		more = pos + n < sl->l4_len;
	}
	if (!sl->v6) {
		uint32_t sa, da;

		addr4(g, sl->flow, false, (uint8_t *)&sa);
		addr4(g, sl->flow, true, (uint8_t *)&da);
		rxp_ipv4_build(f + off, RXP_IPPROTO_UDP, (uint16_t)(RXP_IPV4_HLEN + n),
			       (uint16_t)sl->id, (uint16_t)((more ? RXP_IP_MF : 0) | (pos >> 3)),
			       64, sa, da);
		off += RXP_IPV4_HLEN;
	} else {
		uint8_t sa[16], da[16];

		addr6(g, sl->flow, false, sa);
		addr6(g, sl->flow, true, da);
		rxp_ipv6_build(f + off, 0, 0, (uint16_t)(n + (frag ? RXP_IPV6_FRAGHDR_LEN : 0)),
			       frag ? RXP_IPPROTO_FRAGMENT : RXP_IPPROTO_UDP, 64, sa, da);
		off += RXP_IPV6_HLEN;
		if (frag) {
			rxp_frag6_build(f + off, RXP_IPPROTO_UDP, (uint16_t)pos, more, sl->id);
			off += RXP_IPV6_FRAGHDR_LEN;
		}
	}
	l4_bytes(g, sl, pos, n, f + off);
	off += n;
	if (off < 60) {
		memset(f + off, 0, 60 - off);
		off = 60;
	}
	return off;
}

/* The slot whose turn it is, with a datagram (a new one if it had none and
 * count allows); NULL when every datagram is done. Slots take turns, one
 * frame each. */
static struct gen_slot *turn(struct rxp_gen *g)
{
	for (unsigned tries = 0; tries <= g->nslots; tries++) {
		struct gen_slot *sl = &g->slot[g->cur];

		if (sl->live)
			return sl;
		if (!g->cfg.count || g->emitted < g->cfg.count) {
			new_datagram(g, sl);
			return sl;
		}
		if (!g->live)
			return NULL;
		g->cur = g->cur + 1 == g->nslots ? 0 : g->cur + 1;
	}
	return NULL;
}

int rxp_gen_next_ex(struct rxp_gen *g, uint8_t *buf, uint32_t cap, uint32_t *len,
		    struct rxp_gen_frame *info, bool report_lost)
{
	unsigned skipped = 0;

	if (cap < g->cfg.mtu + RXP_ETH_HLEN)
		return -ENOSPC;
	for (;;) {
		struct gen_slot *sl = turn(g);
		unsigned j;
		uint32_t n;
		bool lost;

		if (!sl)
			return -ENODATA;
		j = sl->order[sl->next++];
		n = emit(g, sl, j, buf);
		g->st.frames++;
		/* Decide loss after building: the random stream stays the
		 * same whatever the loss rate. */
		lost = unit(g) < g->cfg.loss;
		if (lost) {
			g->st.lost++;
			sl->damaged = true;
		}
		if (info) {
			info->seq = sl->seq;
			info->flow = sl->flow;
			info->id = sl->id;
			info->frag = (uint16_t)j;
			info->nfrags = sl->nfr;
			info->lost = lost;
			info->last = sl->next == sl->nfr;
		}
		if (sl->next == sl->nfr) {
			sl->live = false;
			g->live--;
			if (sl->damaged)
				g->st.damaged++;
		}
		g->cur = g->cur + 1 == g->nslots ? 0 : g->cur + 1;
		/* A high loss rate (1: all) must not make one call endless:
		 * after a run of lost frames the caller hears -EAGAIN and may
		 * come back (a sim NIC: at its next poll). */
		if (lost && !report_lost) {
			if (++skipped == RXP_GEN_LOST_RUN_MAX)
				return -EAGAIN;
			continue;
		}
		if (!lost)
			g->st.bytes += n;
		*len = n;
		return 0;
	}
}

int rxp_gen_next(struct rxp_gen *g, uint8_t *buf, uint32_t cap, uint32_t *len)
{
	return rxp_gen_next_ex(g, buf, cap, len, NULL, false);
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
