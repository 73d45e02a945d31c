/*
 * Overload streams, the table driver and the FWYS reference (overload.h).
 * The stream owns a generator and the attacker's state; the driver owns a
 * pool and a table for one run and tears both down; the reference owns
 * per-datagram state for one run.
 */
#include <errno.h>
#include <pcap/pcap.h>
#include <stdlib.h>
#include <string.h>

#include "overload.h"
#include "rxpath/sim.h"
#include "rxpath/wire.h"
#include "buf/rng.h"
#include "net/defrag_internal.h"

#define OVL_FRAME 1600u

struct ovl_stream {
	struct ovl_config c;
	struct rxp_gen *g;
	uint64_t s[4]; /* the attacker's randomness */
	double credit; /* attacker frames owed */
	uint32_t attack_id;
	bool done;
};

struct ovl_frame_info {
	struct rxp_gen_frame gf;
	bool attack;
};

void ovl_gen_config(const struct ovl_config *c, struct rxp_gen_config *gc)
{
	uint32_t plen = c->frags * 1448u - 8u;

	*gc = (struct rxp_gen_config){
		.seed = c->seed,
		.count = c->dgrams,
		.min_payload = plen > 65000 ? 65000 : plen,
		.max_payload = plen > 65000 ? 65000 : plen,
		.ipv6_pct = c->ipv6_pct,
		.mtu = 1500,
		.loss = c->loss,
		/* one sender, as the issue measured, with IPv4 IDs to spare */
		.flows = 1 + c->in_flight / 16384,
		.in_flight = c->in_flight,
		.shuffle = c->shuffle,
	};
}

struct ovl_stream *ovl_open(const struct ovl_config *c)
{
	struct ovl_stream *s = calloc(1, sizeof(*s));
	struct rxp_gen_config gc;

	ovl_gen_config(c, &gc);
	if (!s)
		return NULL;
	s->c = *c;
	if (!s->c.attack_ids)
		s->c.attack_ids = 4096;
	s->g = rxp_gen_create(&gc);
	if (!s->g) {
		free(s);
		return NULL;
	}
	rxp_xoshiro_seed(s->s, c->seed ^ 0xa77ac4ull);
	return s;
}

void ovl_close(struct ovl_stream *s)
{
	if (!s)
		return;
	rxp_gen_destroy(s->g);
	free(s);
}

uint64_t ovl_damaged(const struct ovl_stream *s)
{
	struct rxp_gen_stats st;

	rxp_gen_get_stats(s->g, &st);
	return st.damaged;
}

/* A FragmentSmack-style fragment from 10.66.0.1 / fd66::1: a few 8-byte
 * blocks at a random offset past 0 with MF set, of one of attack_ids IDs:
 * it can never complete. */
static uint32_t attack_frame(struct ovl_stream *s, uint8_t *f)
{
	uint64_t r = rxp_xoshiro_next(s->s);
	uint32_t id = (uint32_t)(r % s->c.attack_ids), n = 8u * (1 + (uint32_t)((r >> 20) % 8));
	uint32_t off = 8u * (1 + (uint32_t)((r >> 32) % 7000));
	bool v6 = (r >> 48) % 100 < s->c.ipv6_pct;
	uint32_t l = RXP_ETH_HLEN;

	memset(f, 0, 14);
	f[0] = 2;
	f[5] = 2;
	f[6] = 2;
	f[11] = 0x66;
	f[12] = v6 ? 0x86 : 0x08;
	f[13] = v6 ? 0xdd : 0x00;
	if (!v6) {
		struct rxp_iphdr ip = {.ver_ihl = 0x45, .ttl = 64, .protocol = RXP_IPPROTO_UDP};

		ip.tot_len = htons((uint16_t)(20 + n));
		ip.id = htons((uint16_t)id);
		ip.frag_off = htons((uint16_t)(RXP_IP_MF | (off >> 3)));
		ip.saddr = htonl(0x0a420001);
		ip.daddr = htonl(0x0ac80001);
		ip.check = rxp_ip_csum(&ip, 20);
		memcpy(f + l, &ip, 20);
		l += 20;
	} else {
		uint8_t sa[16] = {0xfd, 0x66}, da[16] = {0xfd, 2};

		sa[15] = da[15] = 1;
		rxp_ipv6_build(f + l, 0, 0, (uint16_t)(8 + n), RXP_IPPROTO_FRAGMENT, 64, sa, da);
		rxp_frag6_build(f + l + 40, RXP_IPPROTO_UDP, (uint16_t)off, 1, id);
		l += 48;
	}
	for (uint32_t i = 0; i < n; i += 8) {
		uint64_t w = rxp_xoshiro_next(s->s);

		memcpy(f + l + i, &w, 8);
	}
	return l + n;
}

/* The next frame, lost ones included (info says). */
static int next_frame(struct ovl_stream *s, uint8_t *buf, uint32_t *len, struct ovl_frame_info *fi)
{
	if (s->credit >= 1) {
		s->credit -= 1;
		fi->attack = true;
		*len = attack_frame(s, buf);
		return 0;
	}
	if (s->done)
		return -ENODATA;
	if (rxp_gen_next_ex(s->g, buf, OVL_FRAME, len, &fi->gf, true)) {
		s->done = true;
		s->credit = 0;
		return -ENODATA;
	}
	fi->attack = false;
	s->credit += s->c.attack;
	return 0;
}

int ovl_next(struct ovl_stream *s, uint8_t *buf, uint32_t *len, bool *attack)
{
	struct ovl_frame_info fi;
	int r;

	do
		r = next_frame(s, buf, len, &fi);
	while (!r && !fi.attack && fi.gf.lost);
	*attack = !r && fi.attack;
	return r;
}

long ovl_write_pcap(const struct ovl_config *c, const char *path)
{
	struct ovl_stream *s = ovl_open(c);
	pcap_t *p = pcap_open_dead(DLT_EN10MB, 65535);
	pcap_dumper_t *d = p ? pcap_dump_open(p, path) : NULL;
	uint8_t buf[OVL_FRAME];
	long n = 0;
	uint32_t len;
	bool attack;

	if (!s || !d) {
		if (p)
			pcap_close(p);
		ovl_close(s);
		errno = s ? EIO : ENOMEM;
		return -1;
	}
	while (ovl_next(s, buf, &len, &attack) == 0) {
		struct pcap_pkthdr h = {.caplen = len, .len = len};

		h.ts.tv_sec = 1000 + n / 1000000;
		h.ts.tv_usec = n % 1000000;
		pcap_dump((u_char *)d, &h, buf);
		n++;
	}
	pcap_dump_close(d);
	pcap_close(p);
	ovl_close(s);
	return n;
}

/* A delivered datagram (data at its IP header): its UDP payload verifies. */
static bool verify(const struct rxp_pkt *p, uint8_t *tmp)
{
	uint32_t hl;

	if (rxp_pkt_copy_bits(p, 0, tmp, p->len))
		return false;
	hl = (tmp[0] >> 4) == 4 ? (tmp[0] & 15u) * 4u : 40u;
	return p->len > hl + 8 && !rxp_gen_verify(tmp + hl + 8, p->len - hl - 8);
}

/* The pressure policy's source slot of the IPv4 or IPv6 frame f (Ethernet,
 * untagged, global addresses: zone 0), or -1. */
static int src_slot(const struct rxp_defrag_table *t, const uint8_t *f, uint32_t len)
{
	struct dfr_key k = {0};

	if (len >= RXP_ETH_HLEN + 20 && f[12] == 0x08 && f[13] == 0x00) {
		k.family = 4;
		memcpy(k.addr, f + RXP_ETH_HLEN + 12, 8);
	} else if (len >= RXP_ETH_HLEN + 40 && f[12] == 0x86 && f[13] == 0xdd) {
		k.family = 6;
		memcpy(k.addr, f + RXP_ETH_HLEN + 8, 32);
	} else {
		return -1;
	}
	return (int)dfr_src_slot(t, &k);
}

/* Whether slot is in set[0, *n) (up to max kept); adds it if not. */
static bool slot_seen(int *set, unsigned *n, unsigned max, int slot)
{
	for (unsigned i = 0; i < *n; i++)
		if (set[i] == slot)
			return true;
	if (*n < max)
		set[(*n)++] = slot;
	return false;
}

int ovl_run_table(const struct ovl_config *c, const struct rxp_defrag_config *dc,
		  struct ovl_result *r)
{
	int legit[8], bad[8];
	unsigned nl = 0, nb = 0;
	uint64_t np = dc->mem_limit / 2048 + 2048, now = 0;
	struct rxp_pktpool_config pc = {
		.name = "ovl", .n_pkts = (unsigned)np, .n_bufs = (unsigned)np, .n_large = 64};
	struct rxp_pktpool *pp = rxp_pktpool_create(&pc);
	struct rxp_defrag_table *t = rxp_defrag_table_create(dc);
	struct ovl_stream *s = ovl_open(c);
	uint8_t *tmp = malloc(65536 + 64), buf[OVL_FRAME];
	bool evict = dc->pressure == RXP_DEFRAG_PRESSURE_EVICT;
	int rc = 0;

	memset(r, 0, sizeof(*r));
	if (!pp || !t || !s || !tmp) {
		rc = -1;
		goto out;
	}
	for (;;) {
		struct rxp_defrag_counters k;
		struct rxp_pkt *p, *res;
		uint32_t len;
		bool attack;

		if (ovl_next(s, buf, &len, &attack))
			break;
		r->frames++;
		r->attack_frames += attack;
		{
			int sl = src_slot(t, buf, len);

			if (sl >= 0)
				slot_seen(attack ? bad : legit, attack ? &nb : &nl, 8, sl);
		}
		p = rxp_pkt_alloc(pp, len);
		if (!p) {
			rc = -1; /* the pool is sized for the cap: a leak */
			break;
		}
		memcpy(rxp_pkt_put(p, len), buf, len);
		rxp_pkt_pull(p, RXP_ETH_HLEN);
		now += 1000;
		p->tstamp_ns = now;
		if (!r->frag_truesize && !attack)
			r->frag_truesize = p->truesize;
		res = rxp_defrag(t, p, now);
		if (res) {
			if (verify(res, tmp))
				r->delivered++;
			else
				r->bad++;
			rxp_pkt_consume(res);
		}
		rxp_defrag_get_counters(t, &k);
		if (!r->qcharge && k.queues == 1 && k.mem > r->frag_truesize)
			r->qcharge = k.mem - r->frag_truesize;
		if (evict && k.mem > dc->mem_limit)
			r->cap_exceeded++;
		if ((r->frames & 1023) == 0)
			rxp_defrag_expire(t, now);
	}
	r->damaged = ovl_damaged(s);
	for (unsigned i = 0; i < nl; i++)
		r->src_shared |= slot_seen(bad, &nb, nb, legit[i]);
	rxp_defrag_get_counters(t, &r->c);
out:
	rxp_defrag_table_destroy(t);
	ovl_close(s);
	free(tmp);
	if (pp && rxp_pktpool_destroy(pp))
		rc = -1;
	return rc;
}

/* ---- the reference ------------------------------------------------------- */

enum { DG_IDLE, DG_OPEN, DG_DEAD, DG_DONE };

struct ref_dg {
	uint8_t st;
	uint16_t got;
	uint32_t prev, next; /* open list, by opening order; UINT32_MAX: none */
};

struct ref {
	struct ref_dg *d;
	uint32_t head, tail; /* oldest and newest open */
	uint64_t mem, cap, ts, qc, done;
};

static void ref_close(struct ref *r, uint32_t i, uint8_t st)
{
	struct ref_dg *d = &r->d[i];

	r->mem -= r->qc + (uint64_t)d->got * r->ts;
	if (d->prev != UINT32_MAX)
		r->d[d->prev].next = d->next;
	else
		r->head = d->next;
	if (d->next != UINT32_MAX)
		r->d[d->next].prev = d->prev;
	else
		r->tail = d->prev;
	d->st = st;
}

static void ref_open(struct ref *r, uint32_t i)
{
	struct ref_dg *d = &r->d[i];

	d->st = DG_OPEN;
	d->got = 0;
	d->prev = r->tail;
	d->next = UINT32_MAX;
	if (r->tail != UINT32_MAX)
		r->d[r->tail].next = i;
	else
		r->head = i;
	r->tail = i;
	r->mem += r->qc;
}

static void ref_frag(struct ref *r, const struct rxp_gen_frame *f)
{
	uint32_t i = (uint32_t)f->seq;
	struct ref_dg *d = &r->d[i];

	if (d->st == DG_DEAD || d->st == DG_DONE)
		return;
	if (f->lost) {
		if (d->st == DG_OPEN)
			ref_close(r, i, DG_DEAD);
		d->st = DG_DEAD;
		return;
	}
	if (d->st == DG_IDLE) {
		if (r->mem + r->qc + r->ts > r->cap) {
			d->st = DG_DEAD; /* refused: it cannot complete now */
			return;
		}
		ref_open(r, i);
	}
	/* Newer datagrams go for an older one; one whose fragment completes
	 * it may push out any other; the newest itself goes otherwise. */
	while (r->mem + r->ts > r->cap) {
		uint32_t v = r->tail;

		if (v == i)
			v = d->got + 1u == f->nfrags ? d->prev : UINT32_MAX;
		if (v == UINT32_MAX) {
			ref_close(r, i, DG_DEAD);
			return;
		}
		ref_close(r, v, DG_DEAD);
	}
	d->got++;
	r->mem += r->ts;
	if (d->got == f->nfrags) {
		ref_close(r, i, DG_DONE);
		r->done++;
	}
}

uint64_t ovl_run_fwys(const struct ovl_config *c, uint64_t cap, uint64_t frag_truesize,
		      uint64_t qcharge)
{
	struct ovl_stream *s = ovl_open(c);
	struct ref r = {.head = UINT32_MAX,
			.tail = UINT32_MAX,
			.cap = cap,
			.ts = frag_truesize,
			.qc = qcharge};
	uint8_t buf[OVL_FRAME];
	uint32_t len;
	struct ovl_frame_info fi;

	r.d = calloc(c->dgrams ? c->dgrams : 1, sizeof(r.d[0]));
	if (!s || !r.d) {
		ovl_close(s);
		free(r.d);
		return 0;
	}
	while (next_frame(s, buf, &len, &fi) == 0)
		if (!fi.attack)
			ref_frag(&r, &fi.gf);
	ovl_close(s);
	free(r.d);
	return r.done;
}
