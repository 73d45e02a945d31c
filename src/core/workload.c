/*
 * The mixed workload source (include/rxpath/workload.h).
 *
 * Three producers feed one frame stream, picked per frame by a seeded PRNG:
 * two UDP generators (standard MTU, jumbo) and a TIPC sender that builds
 * IPv4/UDP datagrams with the TIPC layer's own bundling and fragmentation.
 * Only faults that need IP knowledge are made here, on IP fragments: a
 * fragment delayed past the next frame, followed by a duplicate, or
 * followed by an overlapping twin. Frame faults (loss, zero-length
 * descriptors, reordering of any frame) belong to the fault wrapper
 * (rxp_fault_wrap), which `rxpath run` puts over the sim NIC. Frames waiting to be emitted sit in a
 * small FIFO; the TIPC sender's packets come from a private pool and are
 * copied out as frames, so the source holds no packet between calls except
 * its own queue, which close() frees.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rxpath/ipid.h"
#include "rxpath/tipc.h"
#include "rxpath/wire.h"
#include "rxpath/workload.h"
#include "buf/rng.h"
#include "core/ledger_internal.h"

#define PENDING 8
#define TIPC_PEERS LED_TIPC_PEERS

/* What a frame carries, for the ledger. */
struct finfo {
	uint8_t kind; /* enum led_kind */
	bool twin; /* a duplicate or overlapping copy: nothing of its own */
	bool last; /* UDP: its datagram's last frame; TIPC: its messages are whole */
	uint16_t ip_id; /* TIPC */
	uint32_t seq, flow, id; /* UDP: payload seq, flow, IP ID; TIPC: first message */
	uint32_t n; /* TIPC: messages */
	unsigned peer;
};

struct frame {
	uint32_t len;
	struct finfo fi;
	uint8_t b[RXP_GEN_FRAME_MAX];
};

struct wl {
	struct rxp_src src;
	struct rxp_workload_config cfg;
	uint64_t rng, emitted;
	struct rxp_gen *std, *jumbo;
	struct rxp_pktpool *tpp;
	struct rxp_tipc_udp_peer peers[TIPC_PEERS];
	struct rxp_ipid_table *ids; /* the peers' IPv4 IDs */
	struct rxp_pkt_queue tipc_out; /* built datagrams not yet emitted */
	uint32_t tipc_seq;
	unsigned tipc_peer; /* of the datagrams in tipc_out */
	uint32_t tipc_frag_seq; /* the message a fragment chain carries */
	struct finfo fi; /* of the frame being made */
	struct frame pend[PENDING];
	unsigned phead, pcount;
	struct frame held; /* a fragment delayed past the next frame */
	bool holding;
};

static uint64_t rnd(struct wl *w)
{
	return rxp_splitmix64(&w->rng);
}

static uint64_t below(struct wl *w, uint64_t n)
{
	return n ? rnd(w) % n : 0;
}

static bool chance(struct wl *w, double p)
{
	return p > 0 && (double)(rnd(w) >> 11) * 0x1.0p-53 < p;
}

void rxp_workload_defaults(struct rxp_workload_config *c)
{
	if (!c->ipv6_pct)
		c->ipv6_pct = 30;
	if (!c->jumbo_pct)
		c->jumbo_pct = 10;
	if (!c->tipc_pct)
		c->tipc_pct = 20;
	if (c->dup_frag == 0)
		c->dup_frag = 0.001;
	if (c->overlap_frag == 0)
		c->overlap_frag = 0.0005;
	if (c->reorder == 0)
		c->reorder = 0.01;
	if (c->reorder < 0)
		c->reorder = 0;
	if (c->dup_frag < 0)
		c->dup_frag = 0;
	if (c->overlap_frag < 0)
		c->overlap_frag = 0;
	if (!c->udp_port)
		c->udp_port = 9;
}

static struct frame *pend_push(struct wl *w)
{
	struct frame *f;

	if (w->pcount == PENDING)
		return NULL;
	f = &w->pend[(w->phead + w->pcount) % PENDING];
	w->pcount++;
	return f;
}

/* An IPv4 fragment frame (Ethernet, no VLAN)? */
static bool is_v4_fragment(const uint8_t *f, uint32_t len)
{
	uint16_t fo;

	if (len < RXP_ETH_HLEN + RXP_IPV4_HLEN || f[12] != 0x08 || f[13] != 0x00)
		return false;
	memcpy(&fo, f + RXP_ETH_HLEN + 6, 2);
	return ntohs(fo) & (RXP_IP_MF | RXP_IP_OFFMASK);
}

static bool is_fragment(const uint8_t *f, uint32_t len)
{
	if (is_v4_fragment(f, len))
		return true;
	/* IPv6 with a fragment header right after the fixed header */
	return len >= RXP_ETH_HLEN + RXP_IPV6_HLEN + 8 && f[12] == 0x86 && f[13] == 0xdd &&
	       f[RXP_ETH_HLEN + 6] == RXP_IPPROTO_FRAGMENT;
}

/* A twin of an IPv4 fragment moved 8 bytes on: it partly overlaps the
 * original (and maybe the next fragment). */
static void make_overlap(struct frame *t, const uint8_t *f, uint32_t len)
{
	struct rxp_iphdr *ip;
	uint16_t fo;

	memcpy(t->b, f, len);
	t->len = len;
	ip = (struct rxp_iphdr *)(void *)(t->b + RXP_ETH_HLEN);
	fo = ntohs(ip->frag_off);
	if ((fo & RXP_IP_OFFMASK) < RXP_IP_OFFMASK)
		fo++;
	ip->frag_off = htons(fo | RXP_IP_MF);
	ip->check = 0;
	ip->check = rxp_ip_csum(ip, rxp_ip_hlen(ip));
}

/* Build the next TIPC burst for a random peer: either a bundle-sized run of
 * small messages or one large fragmented message. */
static int tipc_refill(struct wl *w)
{
	unsigned pi = (unsigned)below(w, TIPC_PEERS);
	struct rxp_tipc_udp_peer *peer = &w->peers[pi];
	struct rxp_pkt_queue msgs;
	unsigned n = below(w, 4) ? 4 + (unsigned)below(w, 28) : 1;
	uint8_t buf[60000];

	rxp_pkt_queue_init(&msgs);
	for (unsigned i = 0; i < n; i++) {
		uint32_t len =
			n > 1 ? 16 + (uint32_t)below(w, 200) : 2000 + (uint32_t)below(w, 58000);
		struct rxp_pkt *m;

		rxp_gen_fill_payload(buf, len, w->tipc_seq++, rnd(w));
		m = rxp_tipc_msg_new(w->tpp, RXP_TIPC_LOW_IMPORTANCE + (unsigned)below(w, 4),
				     RXP_TIPC_NAMED_MSG, RXP_TIPC_NAMED_H_SIZE, 0x1001001,
				     0x1001002, 1000 + (uint32_t)below(w, 8), buf, len);
		if (!m) {
			rxp_pkt_queue_purge(&msgs, RXP_DROP_NOMEM);
			return -ENOMEM;
		}
		rxp_pkt_enqueue(&msgs, m);
	}
	w->tipc_peer = pi;
	return rxp_tipc_udp_build(w->tpp, peer, &msgs, &w->tipc_out) < 0 ? -ENOMEM : 0;
}

/* The messages a TIPC frame (at its TIPC header, n bytes) carries, for the
 * ledger: a bundle's, a fragment chain's one (named by its first
 * fragment), or a message's own. Each payload begins with its header. */
static void tipc_info(struct wl *w, const uint8_t *t, uint32_t n, struct finfo *fi)
{
	unsigned hs = rxp_tipc_hsize(t);

	fi->kind = LED_TIPC;
	fi->n = 0;
	fi->last = true;
	if (rxp_tipc_user(t) == RXP_TIPC_MSG_BUNDLER) {
		for (uint32_t off = hs; off + RXP_TIPC_MIN_H_SIZE <= n;) {
			const uint8_t *m = t + off;
			uint32_t sz = rxp_tipc_size(m);

			if (sz < rxp_tipc_hsize(m) + 8 || off + sz > n ||
			    rxp_get_be32(m + rxp_tipc_hsize(m)) != RXP_GEN_MAGIC)
				break;
			if (!fi->n++)
				fi->seq = rxp_get_be32(m + rxp_tipc_hsize(m) + 4);
			off += (sz + 3) & ~3u;
		}
	} else if (rxp_tipc_user(t) == RXP_TIPC_MSG_FRAGMENTER) {
		unsigned type = rxp_tipc_type(t);

		if (type == RXP_TIPC_FIRST_FRAGMENT && n >= hs + RXP_TIPC_MIN_H_SIZE &&
		    n >= hs + rxp_tipc_hsize(t + hs) + 8 &&
		    rxp_get_be32(t + hs + rxp_tipc_hsize(t + hs)) == RXP_GEN_MAGIC)
			w->tipc_frag_seq = rxp_get_be32(t + hs + rxp_tipc_hsize(t + hs) + 4);
		fi->seq = w->tipc_frag_seq;
		fi->n = 1;
		fi->last = type == RXP_TIPC_LAST_FRAGMENT;
	} else if (n >= hs + 8 && rxp_get_be32(t + hs) == RXP_GEN_MAGIC) {
		fi->seq = rxp_get_be32(t + hs + 4);
		fi->n = 1;
	}
}

static int tipc_next(struct wl *w, uint8_t *b, uint32_t cap, uint32_t *len)
{
	struct rxp_pkt *p;

	if (!w->tipc_out.len && tipc_refill(w))
		return -ENOMEM;
	p = rxp_pkt_dequeue(&w->tipc_out);
	if (!p)
		return -ENOMEM;
	if (p->len + RXP_ETH_HLEN > cap) {
		rxp_pkt_drop(p, RXP_DROP_PKT_TOO_BIG);
		return -ENOSPC;
	}
	memcpy(b, "\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01\x08\x00", RXP_ETH_HLEN);
	rxp_pkt_copy_bits(p, 0, b + RXP_ETH_HLEN, p->len);
	*len = p->len + RXP_ETH_HLEN;
	if (w->cfg.ledger) {
		const uint8_t *ip = b + RXP_ETH_HLEN;
		uint32_t l3 = (uint32_t)(ip[0] & 0xf) * 4 + 8;

		w->fi.peer = w->tipc_peer;
		w->fi.ip_id = (uint16_t)(ip[4] << 8 | ip[5]);
		tipc_info(w, ip + l3, p->len - l3, &w->fi);
	}
	if (*len < 60) {
		memset(b + *len, 0, 60 - *len);
		*len = 60;
	}
	rxp_pkt_consume(p);
	return 0;
}

/* The frame in buf goes out: tell the ledger, if this queue keeps it. */
static void account(struct wl *w, const uint8_t *buf, uint32_t len, const struct finfo *fi)
{
	struct rxp_ledger *l = w->cfg.ledger;
	unsigned q = w->cfg.queue;

	if (!l || !rxp_ledger_ours(l, q, buf, len))
		return;
	if (fi->twin)
		rxp_ledger_sent_twin(l, q);
	else if (fi->kind == LED_TIPC)
		rxp_ledger_sent_tipc(l, q, fi->peer, fi->ip_id, fi->seq, fi->n, fi->last);
	else
		rxp_ledger_sent_udp(l, q, (enum led_kind)fi->kind, fi->seq, fi->flow, fi->id,
				    fi->last);
}

/* The next frame of generator g (kind LED_STD or LED_JUMBO), with its finfo. */
static int gen_next(struct wl *w, struct rxp_gen *g, enum led_kind kind, uint8_t *buf, uint32_t cap,
		    uint32_t *len)
{
	struct rxp_gen_frame gf;
	int rc = rxp_gen_next_ex(g, buf, cap, len, &gf, false);

	if (rc)
		return rc;
	w->fi = (struct finfo){.kind = (uint8_t)kind,
			       .last = gf.last,
			       .seq = (kind == LED_JUMBO ? LED_JUMBO_BASE : LED_STD_BASE) +
				      (uint32_t)gf.seq,
			       .flow = gf.flow,
			       .id = gf.id};
	return 0;
}

static int wl_next(struct rxp_src *s, uint8_t *buf, uint32_t cap, uint32_t *len)
{
	struct wl *w = (struct wl *)s;

	for (;;) {
		struct frame *t0;
		uint64_t pick;
		int rc;

		if (w->cfg.frames && w->emitted >= w->cfg.frames)
			return -ENODATA;
		if (w->pcount) {
			struct frame *f = &w->pend[w->phead];

			if (f->len > cap)
				return -ENOSPC;
			memcpy(buf, f->b, f->len);
			*len = f->len;
			w->phead = (w->phead + 1) % PENDING;
			w->pcount--;
			w->emitted++;
			account(w, buf, *len, &f->fi);
			return 0;
		}
		pick = below(w, 100);
		if (pick < w->cfg.tipc_pct)
			rc = tipc_next(w, buf, cap, len);
		else if (pick < w->cfg.tipc_pct + w->cfg.jumbo_pct)
			rc = gen_next(w, w->jumbo, LED_JUMBO, buf, cap, len);
		else
			rc = gen_next(w, w->std, LED_STD, buf, cap, len);
		if (rc)
			return rc;
		if (is_fragment(buf, *len)) {
			struct frame *t;

			/* Reordering, for IP fragments only: the TIPC link protocol
			 * (not implemented) is what would put TIPC frames back in
			 * order, so they are sent in order. */
			if (!w->holding && chance(w, w->cfg.reorder)) {
				memcpy(w->held.b, buf, *len);
				w->held.len = *len;
				w->held.fi = w->fi;
				w->holding = true;
				continue;
			}

			if (chance(w, w->cfg.dup_frag) && (t = pend_push(w))) {
				memcpy(t->b, buf, *len);
				t->len = *len;
				t->fi = (struct finfo){.twin = true};
			}
			if (is_v4_fragment(buf, *len) && chance(w, w->cfg.overlap_frag) &&
			    (t = pend_push(w))) {
				make_overlap(t, buf, *len);
				t->fi = (struct finfo){.twin = true};
			}
		}
		if (w->holding && (t0 = pend_push(w))) {
			*t0 = w->held;
			w->holding = false;
		}
		w->emitted++;
		account(w, buf, *len, &w->fi);
		return 0;
	}
}

static void wl_dropped(struct rxp_src *s, const uint8_t *frame, uint32_t len,
		       enum rxp_drop_reason reason)
{
	struct wl *w = (struct wl *)s;

	if (w->cfg.ledger)
		rxp_ledger_frame_dropped(w->cfg.ledger, w->cfg.queue, frame, len, reason);
}

static void wl_close(struct rxp_src *s)
{
	struct wl *w = (struct wl *)s;

	rxp_pkt_queue_purge(&w->tipc_out, RXP_DROP_NOT_SPECIFIED);
	rxp_gen_destroy(w->std);
	rxp_gen_destroy(w->jumbo);
	rxp_pktpool_destroy(w->tpp);
	rxp_ipid_destroy(w->ids);
	free(w);
}

static uint32_t ids_clock(void *arg)
{
	(void)arg;
	return 0; /* one tick forever: no idle jumps, IDs follow from the seed */
}

/* The TIPC peers' IPv4 IDs come from the project's generator, as a real
 * bearer's do; for a source deterministic from its seed, its table has a
 * key and starting counters drawn from the seed and a clock that never
 * moves. A key is kept only if every peer has a bucket of its own: the
 * ledger tells a peer's frames apart by ID, so each peer keeps a counter
 * of 65536 IDs to itself. */
static int tipc_ids(struct wl *w)
{
	uint8_t key[RXP_IPID_KEY_LEN];
	struct rxp_ipid_config c = {.n_buckets = 1024, .key = key, .clock = ids_clock};

	for (int tries = 0; tries < 64; tries++) {
		uint32_t b[TIPC_PEERS];
		bool distinct = true;

		for (unsigned i = 0; i < sizeof(key); i += 8) {
			uint64_t r = rnd(w);

			memcpy(key + i, &r, 8);
		}
		rxp_ipid_destroy(w->ids);
		w->ids = rxp_ipid_create(&c);
		if (!w->ids)
			return -1;
		for (unsigned i = 0; i < TIPC_PEERS && distinct; i++) {
			b[i] = rxp_ipid_bucket_of(w->ids, w->peers[i].saddr, w->peers[i].daddr,
						  RXP_IPPROTO_UDP);
			for (unsigned j = 0; j < i; j++)
				distinct = distinct && b[j] != b[i];
		}
		if (!distinct)
			continue;
		for (unsigned i = 0; i < TIPC_PEERS; i++) {
			rxp_ipid_bucket_set(w->ids, b[i], (uint32_t)rnd(w), 0);
			w->peers[i].ids = w->ids;
		}
		return 0;
	}
	return -1;
}

struct rxp_src *rxp_workload_src(const struct rxp_workload_config *cfg_in)
{
	struct rxp_workload_config cfg = *cfg_in;
	struct wl *w;

	rxp_workload_defaults(&cfg);
	if (cfg.tipc_pct + cfg.jumbo_pct > 100 ||
	    (cfg.ledger && cfg.queue >= rxp_ledger_nqueues(cfg.ledger))) {
		errno = EINVAL;
		return NULL;
	}
	w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->src.next = wl_next;
	w->src.close = wl_close;
	w->src.dropped = wl_dropped;
	w->cfg = cfg;
	w->rng = cfg.seed ^ 0x5258504154485755ull;
	w->tipc_seq = LED_TIPC_BASE;
	rxp_pkt_queue_init(&w->tipc_out);
	{
		struct rxp_gen_config g = {
			.seed = cfg.seed,
			.min_payload = 16,
			.max_payload = 65000,
			.ipv6_pct = cfg.ipv6_pct,
			.mtu = 1500,
			.flows = LED_STD_FLOWS,
			.dport = cfg.udp_port,
			.in_flight = cfg.in_flight,
			.shuffle = cfg.shuffle,
			.net = LED_STD_NET,
			.seq_base = LED_STD_BASE,
		};
		struct rxp_gen_config j = g;

		j.seed = cfg.seed + 1;
		j.min_payload = 1500;
		j.max_payload = 8900;
		j.mtu = 9000;
		j.flows = LED_JUMBO_FLOWS;
		j.net = LED_JUMBO_NET;
		j.seq_base = LED_JUMBO_BASE;
		j.in_flight = 0;
		j.shuffle = false;
		w->std = rxp_gen_create(&g);
		w->jumbo = rxp_gen_create(&j);
	}
	w->tpp = rxp_pktpool_create(&(struct rxp_pktpool_config){
		.name = "wl.tipc", .n_pkts = 512, .n_bufs = 512, .n_large = 8});
	if (!w->std || !w->jumbo || !w->tpp) {
		wl_close(&w->src);
		errno = ENOMEM;
		return NULL;
	}
	for (unsigned i = 0; i < TIPC_PEERS; i++) {
		w->peers[i].saddr = htonl(0x0a010001u + i); /* 10.1.0.1.. */
		w->peers[i].daddr = htonl(0x0a020001u);
		w->peers[i].sport = RXP_TIPC_UDP_PORT;
		w->peers[i].dport = RXP_TIPC_UDP_PORT;
		w->peers[i].mtu = 1500;
	}
	if (tipc_ids(w)) {
		wl_close(&w->src);
		errno = ENOMEM;
		return NULL;
	}
	return &w->src;
}
