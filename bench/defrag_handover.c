/*
 * Reassembly in the handover a DPDK receive loop has, after DPDK's own
 * examples/ip_reassembly: fragments of an MTU of 1500 (1480 payload bytes
 * for IPv4, 1448 for IPv6), each burst of 32 written into fresh packets
 * just before it is handed over, no prefetch, and only the reassembly call
 * and the freeing of each result timed. rxpath: rxp_pkt_alloc, copy, pull
 * the Ethernet header, rxp_defrag, rxp_pkt_consume of the datagram. DPDK:
 * rte_pktmbuf_alloc, copy, rte_ipv4/ipv6_frag_reassemble_packet,
 * rte_pktmbuf_free and the death row.
 *
 * The stream: nd slots served round-robin, each sending its datagrams one
 * after another, a datagram's fragments in a fresh random order (or in
 * order); slot i starts i mod k rounds late, so that datagrams end all the
 * time rather than all in one round. About nd datagrams are open at once.
 *
 * Times are TSC cycles around each burst's handover, so the frame writing
 * and copies around it are not in them.
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <pcap/pcap.h>

#include "defrag_handover.h"
#include "rxpath/defrag.h"
#include "rxpath/pkt.h"
#include "rxpath/pktpool.h"
#include "rxpath/wire.h"

#ifdef RXP_HAVE_DPDK
#include <rte_ip_frag.h>
#include <rte_mbuf.h>
#include <rte_cycles.h>
#endif

#define HO_BURST 32u
#define HO_FRAME_MAX 1536u
#define HO_POOL 60000u

struct ho_spec {
	const char *name;
	int v6;
	unsigned k;
	bool shuffle;
};

static const struct ho_spec specs[] = {
	{"IPv4 2 in order", 0, 2, false},
	{"IPv4 4 shuffled", 0, 4, true},
	{"IPv4 8 shuffled", 0, 8, true},
	{"IPv6 8 shuffled", 1, 8, true},
};
#define NSPEC (sizeof(specs) / sizeof(specs[0]))
static const unsigned inflight[] = {10000, 64};

struct ho_frag {
	uint32_t dgram;
	uint8_t idx;
};

static uint64_t ho_rng = 0x9e3779b97f4a7c15ull;
static uint64_t ho_rnd(void)
{
	ho_rng ^= ho_rng << 13;
	ho_rng ^= ho_rng >> 7;
	ho_rng ^= ho_rng << 17;
	return ho_rng;
}

static unsigned pay_of(const struct ho_spec *s)
{
	return s->v6 ? 1448 : 1480;
}

/* Datagrams in a stream: at least three per slot, and enough fragments
 * that a run is not all start-up. */
static unsigned dgrams_of(const struct ho_spec *s, unsigned nd)
{
	unsigned d = 160000 / s->k;

	return d > 3 * nd ? d : 3 * nd;
}

static struct ho_frag *ho_stream(const struct ho_spec *s, unsigned nd, unsigned D, size_t *n)
{
	const uint32_t none = UINT32_MAX, done = UINT32_MAX - 1;
	struct ho_frag *f = malloc(sizeof(*f) * (size_t)D * s->k);
	uint32_t *cur = malloc(sizeof(*cur) * nd);
	uint8_t *pos = malloc(nd), *perm = malloc((size_t)nd * 8);
	uint32_t next = 0;
	size_t o = 0;

	if (!f || !cur || !pos || !perm) {
		fprintf(stderr, "bench defrag: out of memory\n");
		exit(1);
	}
	for (unsigned i = 0; i < nd; i++)
		cur[i] = none;
	for (unsigned r = 0;; r++) {
		bool any = false;

		for (unsigned i = 0; i < nd; i++) {
			uint8_t *p = perm + (size_t)i * 8;

			if (cur[i] == done)
				continue;
			any = true;
			if (r < i % s->k)
				continue;
			if (cur[i] == none || pos[i] == s->k) {
				if (next >= D) {
					cur[i] = done;
					continue;
				}
				cur[i] = next++;
				pos[i] = 0;
				for (unsigned j = 0; j < s->k; j++)
					p[j] = (uint8_t)j;
				for (unsigned j = s->k - 1; s->shuffle && j > 0; j--) {
					unsigned x = (unsigned)(ho_rnd() % (j + 1));
					uint8_t t = p[j];

					p[j] = p[x];
					p[x] = t;
				}
			}
			f[o++] = (struct ho_frag){cur[i], p[pos[i]++]};
		}
		if (!any)
			break;
	}
	free(cur);
	free(pos);
	free(perm);
	*n = o;
	return f;
}

/* One fragment as it comes off the wire, Ethernet header first. The UDP
 * ports carry the datagram number, so every datagram's bytes differ. */
static uint32_t ho_frame(uint8_t *b, const struct ho_spec *s, const struct ho_frag *f)
{
	static const uint8_t mac[12] = {2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1};
	unsigned pay = pay_of(s), off = f->idx * pay, l3 = s->v6 ? 48 : 20;
	bool mf = f->idx != s->k - 1;
	uint8_t *p = b + 14 + l3;

	memcpy(b, mac, 12);
	if (s->v6) {
		struct rxp_ipv6hdr *ip = (struct rxp_ipv6hdr *)(b + 14);
		struct rxp_frag6hdr *fh = (struct rxp_frag6hdr *)(ip + 1);

		b[12] = 0x86, b[13] = 0xdd;
		ip->vtc_flow = htonl(6u << 28);
		ip->payload_len = htons((uint16_t)(8 + pay));
		ip->nexthdr = RXP_IPPROTO_FRAGMENT;
		ip->hop_limit = 64;
		memset(ip->saddr, 0, 32);
		ip->saddr[0] = ip->daddr[0] = 0x20;
		ip->saddr[1] = ip->daddr[1] = 0x01;
		ip->saddr[15] = 1;
		ip->daddr[15] = 2;
		fh->nexthdr = RXP_IPPROTO_UDP;
		fh->reserved = 0;
		fh->frag_off = htons((uint16_t)(off | (mf ? RXP_IP6_MF : 0)));
		fh->id = htonl(f->dgram);
	} else {
		b[12] = 0x08, b[13] = 0x00;
		rxp_ipv4_build(b + 14, RXP_IPPROTO_UDP, (uint16_t)(20 + pay), (uint16_t)f->dgram,
			       (uint16_t)((off / 8) | (mf ? RXP_IP_MF : 0)), 64,
			       htonl(0x0a000000u + (f->dgram >> 16)), htonl(0x0a800001u));
	}
	memset(p, (int)((f->dgram * 7 + f->idx) & 0xff), pay);
	if (f->idx == 0) {
		struct rxp_udphdr *u = (struct rxp_udphdr *)p;

		u->source = htons((uint16_t)f->dgram);
		u->dest = htons((uint16_t)(f->dgram >> 16));
		u->len = htons((uint16_t)(s->k * pay));
		u->check = 0;
	}
	return 14 + l3 + pay;
}

static unsigned pow2_above(unsigned n)
{
	unsigned p = 16;

	while (p < n)
		p <<= 1;
	return p;
}

/* Queues (rxpath) and buckets (DPDK, 8 entries each) for nd in flight. */
static unsigned table_size(unsigned nd)
{
	return pow2_above(nd + nd / 2);
}

/* ---- rxpath --------------------------------------------------------------- */

struct ho_rx {
	struct rxp_pktpool *pp;
	struct rxp_defrag_table *t;
};

static int ho_rx_open(struct ho_rx *c, unsigned nd)
{
	struct rxp_pktpool_config pc = {.name = "handover",
					.n_pkts = HO_POOL,
					.n_bufs = HO_POOL,
					.buf_size = 2048,
					.n_large = 4,
					.cache_size = 512};
	struct rxp_defrag_config dc = {
		.mem_limit = 1ull << 32, .max_queues = table_size(nd), .max_dist = -1};

	c->pp = rxp_pktpool_create(&pc);
	c->t = rxp_defrag_table_create(&dc);
	return c->pp && c->t ? 0 : -1;
}

static void ho_rx_close(struct ho_rx *c)
{
	size_t left;

	rxp_defrag_table_destroy(c->t);
	left = rxp_pktpool_destroy(c->pp);
	if (left) {
		fprintf(stderr, "bench defrag: rxpath leaked %zu\n", left);
		exit(1);
	}
}

/* Pool get for a burst (callgrind: --toggle-collect=ho_rx_alloc). */
static __attribute__((noinline)) void ho_rx_alloc(struct rxp_pktpool *pp, struct rxp_pkt **v,
						  unsigned b)
{
	for (unsigned j = 0; j < b; j++) {
		v[j] = rxp_pkt_alloc(pp, HO_FRAME_MAX);
		if (!v[j]) {
			fprintf(stderr, "bench defrag: rxpath pool exhausted\n");
			exit(1);
		}
	}
}

/* The timed part (callgrind: --toggle-collect=ho_rx_burst). */
static __attribute__((noinline)) uint32_t ho_rx_burst(struct rxp_defrag_table *t,
						      struct rxp_pkt **v, unsigned b)
{
	uint32_t done = 0;

	for (unsigned j = 0; j < b; j++) {
		struct rxp_pkt *r = rxp_defrag(t, v[j], 0);

		if (r) {
			done++;
			rxp_pkt_consume(r);
		}
	}
	return done;
}

/* One pass over the stream; returns TSC cycles in the handover. */
static uint64_t ho_rx_run(struct ho_rx *c, const struct ho_spec *s, const struct ho_frag *f,
			  size_t n, uint32_t expect)
{
	static uint8_t stage[HO_BURST][HO_FRAME_MAX];
	struct rxp_pkt *v[HO_BURST];
	uint32_t len[HO_BURST], done = 0;
	uint64_t cyc = 0;

	for (size_t i = 0; i < n; i += HO_BURST) {
		unsigned b = n - i < HO_BURST ? (unsigned)(n - i) : HO_BURST;

		for (unsigned j = 0; j < b; j++)
			len[j] = ho_frame(stage[j], s, &f[i + j]);
		ho_rx_alloc(c->pp, v, b);
		for (unsigned j = 0; j < b; j++) {
			memcpy(rxp_pkt_put(v[j], len[j]), stage[j], len[j]);
			rxp_pkt_pull(v[j], RXP_ETH_HLEN);
		}
		uint64_t t0 = bench_cycles();

		done += ho_rx_burst(c->t, v, b);
		cyc += bench_cycles() - t0;
	}
	if (done != expect) {
		fprintf(stderr, "bench defrag: rxpath completed %u of %u (%s)\n", done, expect,
			s->name);
		exit(1);
	}
	return cyc;
}

/* ---- DPDK ----------------------------------------------------------------- */

#ifdef RXP_HAVE_DPDK
struct ho_dp {
	struct rte_mempool *mp;
	struct rte_ip_frag_tbl *tbl;
	struct rte_ip_frag_death_row dr;
};

static int ho_dp_open(struct ho_dp *c, unsigned nd)
{
	unsigned nb = table_size(nd);

	memset(c, 0, sizeof(*c));
	c->mp = rte_pktmbuf_pool_create("handover", HO_POOL, 256, 0, RTE_PKTMBUF_HEADROOM + 2048,
					SOCKET_ID_ANY);
	c->tbl = rte_ip_frag_table_create(nb, 8, nb * 8, rte_get_tsc_hz() * 1000, SOCKET_ID_ANY);
	return c->mp && c->tbl ? 0 : -1;
}

static void ho_dp_close(struct ho_dp *c)
{
	rte_ip_frag_table_destroy(c->tbl);
	rte_mempool_free(c->mp);
}

static __attribute__((noinline)) void ho_dp_alloc(struct rte_mempool *mp, struct rte_mbuf **v,
						  unsigned b)
{
	for (unsigned j = 0; j < b; j++) {
		v[j] = rte_pktmbuf_alloc(mp);
		if (!v[j]) {
			fprintf(stderr, "bench defrag: DPDK pool exhausted\n");
			exit(1);
		}
	}
}

static inline struct rte_mbuf *ho_dp_one(struct ho_dp *c, struct rte_mbuf *m)
{
	if (m->l3_len == sizeof(struct rte_ipv4_hdr))
		return rte_ipv4_frag_reassemble_packet(
			c->tbl, &c->dr, m, 0,
			rte_pktmbuf_mtod_offset(m, struct rte_ipv4_hdr *, m->l2_len));
	struct rte_ipv6_hdr *ip6 = rte_pktmbuf_mtod_offset(m, struct rte_ipv6_hdr *, m->l2_len);

	return rte_ipv6_frag_reassemble_packet(c->tbl, &c->dr, m, 0, ip6,
					       rte_ipv6_frag_get_ipv6_fragment_header(ip6));
}

/* The timed part (callgrind: --toggle-collect=ho_dp_burst). */
static __attribute__((noinline)) uint32_t ho_dp_burst(struct ho_dp *c, struct rte_mbuf **v,
						      unsigned b)
{
	uint32_t done = 0;

	for (unsigned j = 0; j < b; j++) {
		struct rte_mbuf *r = ho_dp_one(c, v[j]);

		if (r) {
			done++;
			rte_pktmbuf_free(r);
		}
	}
	rte_ip_frag_free_death_row(&c->dr, 3);
	return done;
}

static void ho_dp_fill(struct rte_mbuf *m, const void *frame, uint32_t len, int v6)
{
	memcpy(rte_pktmbuf_append(m, (uint16_t)len), frame, len);
	m->l2_len = RXP_ETH_HLEN;
	m->l3_len = v6 ? 48 : 20;
}

static uint64_t ho_dp_run(struct ho_dp *c, const struct ho_spec *s, const struct ho_frag *f,
			  size_t n, uint32_t expect)
{
	static uint8_t stage[HO_BURST][HO_FRAME_MAX];
	struct rte_mbuf *v[HO_BURST];
	uint32_t len[HO_BURST], done = 0;
	uint64_t cyc = 0;

	for (size_t i = 0; i < n; i += HO_BURST) {
		unsigned b = n - i < HO_BURST ? (unsigned)(n - i) : HO_BURST;

		for (unsigned j = 0; j < b; j++)
			len[j] = ho_frame(stage[j], s, &f[i + j]);
		ho_dp_alloc(c->mp, v, b);
		for (unsigned j = 0; j < b; j++)
			ho_dp_fill(v[j], stage[j], len[j], s->v6);
		uint64_t t0 = bench_cycles();

		done += ho_dp_burst(c, v, b);
		cyc += bench_cycles() - t0;
	}
	if (done != expect) {
		fprintf(stderr, "bench defrag: DPDK completed %u of %u (%s)\n", done, expect,
			s->name);
		exit(1);
	}
	return cyc;
}
#endif

/* ---- rows ----------------------------------------------------------------- */

int ho_one(int have_dpdk)
{
	const char *e = getenv("RXP_BENCH_HO");
	unsigned si, nd;
	char side = 0;
	size_t n;

	if (!e)
		return -1;
	if (sscanf(e, "%u,%u,%c", &si, &nd, &side) != 3 || si >= NSPEC || nd < 1 || nd > 10000 ||
	    (side != 'r' && side != 'd'))
		return 2;
	const struct ho_spec *s = &specs[si];
	unsigned D = dgrams_of(s, nd);
	struct ho_frag *f = ho_stream(s, nd, D, &n);

	if (side == 'r') {
		struct ho_rx c;

		if (ho_rx_open(&c, nd))
			return 1;
		ho_rx_run(&c, s, f, n, D);
		ho_rx_close(&c);
	} else {
#ifdef RXP_HAVE_DPDK
		struct ho_dp c;

		if (!have_dpdk || ho_dp_open(&c, nd))
			return 1;
		ho_dp_run(&c, s, f, n, D);
		ho_dp_close(&c);
#else
		(void)have_dpdk;
		return 1;
#endif
	}
	printf("frags %zu\n", n);
	free(f);
	return 0;
}

static double instr(const char *fn, unsigned si, unsigned nd, char side)
{
	char env[64];
	double frags = 0;
	long c;

	snprintf(env, sizeof(env), "RXP_BENCH_HO=%u,%u,%c", si, nd, side);
	c = bench_callgrind(fn, env, "", "frags", &frags);
	return c > 0 && frags > 0 ? (double)c / frags : -1;
}

void ho_rows(struct bench_table *tab, const struct bench_opts *o, int have_dpdk)
{
	double ghz = bench_tsc_ghz();

	for (unsigned w = 0; w < sizeof(inflight) / sizeof(inflight[0]); w++) {
		unsigned nd = o->quick && inflight[w] > 2000 ? 2000 : inflight[w];

		for (unsigned si = 0; si < NSPEC; si++) {
			const struct ho_spec *s = &specs[si];
			unsigned D = dgrams_of(s, nd);
			size_t n;
			struct ho_frag *f = ho_stream(s, nd, D, &n);
			double rx[BENCH_RUNS_MAX], dp[BENCH_RUNS_MAX];
			char g[48];
			struct ho_rx rc;

			if (ho_rx_open(&rc, nd)) {
				fprintf(stderr, "bench defrag: rxpath setup failed\n");
				exit(1);
			}
#ifdef RXP_HAVE_DPDK
			struct ho_dp dc;

			if (have_dpdk && ho_dp_open(&dc, nd)) {
				fprintf(stderr, "bench defrag: DPDK setup failed\n");
				exit(1);
			}
			if (have_dpdk)
				ho_dp_run(&dc, s, f, n, D);
#endif
			ho_rx_run(&rc, s, f, n, D);
			for (int r = 0; r < o->runs; r++) {
#ifdef RXP_HAVE_DPDK
				if (have_dpdk)
					dp[r] = (double)ho_dp_run(&dc, s, f, n, D) / ghz /
						(double)n;
#endif
				rx[r] = (double)ho_rx_run(&rc, s, f, n, D) / ghz / (double)n;
			}
			ho_rx_close(&rc);
#ifdef RXP_HAVE_DPDK
			if (have_dpdk)
				ho_dp_close(&dc);
#endif
			free(f);
			snprintf(g, sizeof(g), "%s, %u in flight", s->name, nd);
			if (have_dpdk)
				bench_add(tab, g, "dpdk-22.11 ns/frag", "ns",
					  bench_median(dp, o->runs), 1, NULL);
			bench_add(tab, g, "rxpath ns/frag", "ns", bench_median(rx, o->runs), 1,
				  have_dpdk ? "dpdk-22.11 ns/frag" : NULL);
			if (o->quick || getenv("RXP_BENCH_NO_INSTR"))
				continue;
			double ir = instr("ho_rx_burst", si, nd, 'r');
			double ia = instr("ho_rx_alloc", si, nd, 'r');

			if (ir < 0) {
				fprintf(stderr, "bench defrag: no callgrind (valgrind); handover "
						"instruction counts left out\n");
				continue;
			}
			if (have_dpdk) {
				double id = instr("ho_dp_burst", si, nd, 'd');
				double ida = instr("ho_dp_alloc", si, nd, 'd');

				bench_add(tab, g, "dpdk-22.11 instr/frag", "instr", id, 1, NULL);
				bench_add(tab, g, "rxpath instr/frag", "instr", ir, 1,
					  "dpdk-22.11 instr/frag");
				bench_add(tab, g, "dpdk-22.11 instr/frag +get", "instr", id + ida,
					  1, NULL);
				bench_add(tab, g, "rxpath instr/frag +get", "instr", ir + ia, 1,
					  "dpdk-22.11 instr/frag +get");
			} else {
				bench_add(tab, g, "rxpath instr/frag", "instr", ir, 1, NULL);
				bench_add(tab, g, "rxpath instr/frag +get", "instr", ir + ia, 1,
					  NULL);
			}
		}
	}
}

/* ---- the same streams through a pcap --------------------------------------- */

static uint64_t fnv(const uint8_t *b, size_t n, uint64_t h)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

/* A datagram's hash: its addresses and its bytes past the IP header (the
 * fragment header too for IPv6: reassembly removes it). 0 when the packet
 * is not a datagram of the stream. */
static uint64_t dgram_hash(const uint8_t *l3, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;

	if (len >= 20 && (l3[0] >> 4) == 4) {
		size_t hl = (size_t)(l3[0] & 15) * 4, tot = (size_t)(l3[2] << 8 | l3[3]);

		if (tot > len || hl > tot || (l3[6] & 0x3f) || l3[7])
			return 0;
		h = fnv(l3 + 12, 8, h);
		return fnv(l3 + hl, tot - hl, h) | 1;
	}
	if (len >= 40 && (l3[0] >> 4) == 6) {
		size_t pl = (size_t)(l3[4] << 8 | l3[5]);

		if (40 + pl > len || l3[6] != RXP_IPPROTO_UDP)
			return 0;
		h = fnv(l3 + 8, 32, h);
		return fnv(l3 + 40, pl, h) | 1;
	}
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int write_pcap(const char *path, const struct ho_spec *s, const struct ho_frag *f, size_t n)
{
	pcap_t *p = pcap_open_dead(DLT_EN10MB, 65535);
	pcap_dumper_t *d = p ? pcap_dump_open(p, path) : NULL;
	uint8_t fr[HO_FRAME_MAX];

	if (!d)
		return -1;
	for (size_t i = 0; i < n; i++) {
		struct pcap_pkthdr h = {.ts = {.tv_sec = 1700000000 + (time_t)(i / 1000000),
					       .tv_usec = (suseconds_t)(i % 1000000)}};

		h.caplen = h.len = ho_frame(fr, s, &f[i]);
		pcap_dump((u_char *)d, &h, fr);
	}
	pcap_dump_close(d);
	pcap_close(p);
	return 0;
}

/* Hashes of the datagrams in a capture of reassembled datagrams. */
static size_t read_dgrams(const char *path, uint64_t *out, size_t max)
{
	char err[PCAP_ERRBUF_SIZE];
	pcap_t *p = pcap_open_offline(path, err);
	struct pcap_pkthdr *h;
	const u_char *b;
	size_t n = 0;
	int dl;

	if (!p) {
		fprintf(stderr, "bench defrag: %s\n", err);
		return 0;
	}
	dl = pcap_datalink(p);
	while (pcap_next_ex(p, &h, &b) == 1 && n < max) {
		size_t l2 = dl == DLT_EN10MB ? 14 : 0;

		if (h->caplen > l2 && (out[n] = dgram_hash(b + l2, h->caplen - l2)))
			n++;
	}
	pcap_close(p);
	return n;
}

static int find_rxpath(char *out, size_t n)
{
	char self[2048];
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	const char *env = getenv("RXPATH");
	char *slash;

	if (env && access(env, X_OK) == 0)
		return snprintf(out, n, "%s", env) < (int)n ? 0 : -1;
	if (len <= 0)
		return -1;
	self[len] = 0;
	slash = strrchr(self, '/');
	if (slash)
		*slash = 0;
	if ((size_t)snprintf(out, n, "%s/rxpath", self) < n && access(out, X_OK) == 0)
		return 0;
	if ((size_t)snprintf(out, n, "%s/../../bin/rxpath", self) < n && access(out, X_OK) == 0)
		return 0;
	return -1;
}

#ifdef RXP_HAVE_DPDK
/* DPDK's side: the capture read with libpcap into mbufs, reassembled. */
static size_t dp_dgrams(const char *path, unsigned nd, uint64_t *out, size_t max)
{
	static uint8_t buf[65536];
	char err[PCAP_ERRBUF_SIZE];
	pcap_t *p = pcap_open_offline(path, err);
	struct pcap_pkthdr *h;
	const u_char *b;
	struct ho_dp c;
	size_t n = 0;

	if (!p || ho_dp_open(&c, nd))
		return 0;
	while (pcap_next_ex(p, &h, &b) == 1) {
		struct rte_mbuf *m = rte_pktmbuf_alloc(c.mp), *r;

		if (!m || h->caplen < 14 + 48)
			break;
		ho_dp_fill(m, b, h->caplen, b[12] == 0x86);
		r = ho_dp_one(&c, m);
		rte_ip_frag_free_death_row(&c.dr, 3);
		if (!r)
			continue;
		const uint8_t *l3 = rte_pktmbuf_read(r, r->l2_len, r->pkt_len - r->l2_len, buf);

		if (l3 && n < max && (out[n] = dgram_hash(l3, r->pkt_len - r->l2_len)))
			n++;
		rte_pktmbuf_free(r);
	}
	pcap_close(p);
	ho_dp_close(&c);
	return n;
}
#endif

int ho_pcap_check(int have_dpdk)
{
	const char *tmp = getenv("TMPDIR");
	char rx[2048], dir[256], in[300], out[300], cmd[5000];
	const unsigned nd = 1000;
	int bad = 0;

	if (find_rxpath(rx, sizeof(rx))) {
		fprintf(stderr,
			"bench defrag: no rxpath binary (set RXPATH); pcap check skipped\n");
		return 0;
	}
	snprintf(dir, sizeof(dir), "%s/rxpath-bench-ho-XXXXXX", tmp ? tmp : "/tmp");
	if (!mkdtemp(dir))
		return 1;
	snprintf(in, sizeof(in), "%s/in.pcap", dir);
	snprintf(out, sizeof(out), "%s/out.pcap", dir);
	for (unsigned si = 0; si < NSPEC; si++) {
		const struct ho_spec *s = &specs[si];
		unsigned D = 3 * nd;
		size_t n, nr, ndp = 0;
		struct ho_frag *f = ho_stream(s, nd, D, &n);
		uint64_t *hr = malloc(sizeof(uint64_t) * (D + 1)),
			 *hd = malloc(sizeof(uint64_t) * (D + 1));

		if (!hr || !hd || write_pcap(in, s, f, n))
			return 1;
		snprintf(cmd, sizeof(cmd), "'%s' defrag '%s' '%s' >/dev/null 2>&1", rx, in, out);
		nr = system(cmd) == 0 ? read_dgrams(out, hr, D + 1) : 0;
		qsort(hr, nr, sizeof(*hr), cmp_u64);
#ifdef RXP_HAVE_DPDK
		if (have_dpdk) {
			ndp = dp_dgrams(in, nd, hd, D + 1);
			qsort(hd, ndp, sizeof(*hd), cmp_u64);
		}
#endif
		if (nr != D || (have_dpdk && (ndp != D || memcmp(hr, hd, sizeof(*hr) * D)))) {
			bad = 1;
			printf("pcap %s, %u in flight: rxpath %zu, dpdk %zu datagrams of %u: "
			       "DIFFER\n",
			       s->name, nd, nr, ndp, D);
		} else {
			printf("pcap %s, %u in flight: %u datagrams, rxpath defrag%s agree "
			       "byte for byte\n",
			       s->name, nd, D, have_dpdk ? " and DPDK" : " and the stream");
		}
		free(hr);
		free(hd);
		free(f);
		unlink(in);
		unlink(out);
	}
	rmdir(dir);
	(void)have_dpdk;
	return bad;
}
