/*
 * Unit and property tests for rxp_ip_fragment() (src/net/ip_output.c).
 *
 * The property tests build IPv4 and IPv6 datagrams of sampled sizes (1 to
 * 65535 bytes of payload, as far as the total length allows) in three
 * layouts (all linear; header linear and payload in page frags; payload in
 * frag_list members), fragment them for a random MTU (68..9000 for IPv4,
 * 1280..9000 for IPv6), and check every fragment's header and that the
 * payloads, laid into a byte map at their offsets, cover the original
 * exactly once and equal it. (The round trip through rxpath's reassembly
 * engine lives with that engine.) Case counts scale with
 * RXP_PROPERTY_SCALE (default 1: 2000 datagrams per family).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rxpath/ip_output.h"
#include "rxpath/ipid.h"
#include "rxpath/wire.h"
#include "rxptest.h"

static unsigned scale(void)
{
	const char *s = getenv("RXP_PROPERTY_SCALE");
	long v = s ? strtol(s, NULL, 10) : 1;

	return v > 0 && v < 1000 ? (unsigned)v : 1;
}

static struct rxp_pktpool *mkpool(unsigned n)
{
	struct rxp_pktpool_config c = {
		.name = "frag",
		.n_pkts = n,
		.n_bufs = n,
		.n_large = 48,
	};
	struct rxp_pktpool *pp = rxp_pktpool_create(&c);

	assert_non_null(pp);
	return pp;
}

static struct rxp_ipid_table *mkids(void)
{
	struct rxp_ipid_config c = {.n_buckets = 1u << 16};
	struct rxp_ipid_table *t = rxp_ipid_create(&c);

	assert_non_null(t);
	return t;
}

enum layout { LINEAR, PAGE_FRAGS, FRAG_LIST, N_LAYOUTS };

/*
 * A packet holding hdr[0..hlen) then payload[0..plen), laid out as asked.
 * Payload chunk sizes are random so slices cross segment boundaries.
 */
static struct rxp_pkt *mkpkt(struct rxp_pktpool *pp, struct rxpt_rng *r, enum layout lay,
			     const uint8_t *hdr, uint32_t hlen, const uint8_t *payload,
			     uint32_t plen)
{
	uint32_t lin =
		lay == LINEAR ? plen : (uint32_t)rxpt_rng_below(r, plen < 64 ? plen + 1 : 64);
	struct rxp_pkt *p = rxp_pkt_alloc(pp, hlen + lin);
	uint32_t done = lin;

	assert_non_null(p);
	memcpy(rxp_pkt_put(p, hlen), hdr, hlen);
	memcpy(rxp_pkt_put(p, lin), payload, lin);
	if (lay == PAGE_FRAGS) {
		for (unsigned i = 0; done < plen; i++) {
			uint32_t left = plen - done, k = RXP_MAX_FRAGS - i;
			uint32_t sz =
				k == 1 ? left
				       : 1 + (uint32_t)rxpt_rng_below(r, left < 8000 ? left : 8000);
			struct rxp_page *pg = rxpt_page_new(sz + 16);

			memcpy(pg->addr + 16, payload + done, sz);
			assert_int_equal(rxp_pkt_add_frag(p, pg, 16, sz, sz + 16), 0);
			done += sz;
		}
	} else if (lay == FRAG_LIST) {
		while (done < plen) {
			uint32_t left = plen - done;
			uint32_t sz = 1 + (uint32_t)rxpt_rng_below(r, left < 1900 ? left : 1900);
			struct rxp_pkt *m = rxp_pkt_alloc(pp, sz);

			assert_non_null(m);
			memcpy(rxp_pkt_put(m, sz), payload + done, sz);
			/* some members carry a page frag too */
			if (left > sz && rxpt_rng_below(r, 2)) {
				uint32_t s2 = 1 + (uint32_t)rxpt_rng_below(
							  r, left - sz < 3000 ? left - sz : 3000);
				struct rxp_page *pg = rxpt_page_new(s2);

				memcpy(pg->addr, payload + done + sz, s2);
				assert_int_equal(rxp_pkt_add_frag(m, pg, 0, s2, s2), 0);
				sz += s2;
			}
			rxp_pkt_chain(p, m);
			done += sz;
		}
	}
	assert_int_equal(p->len, hlen + plen);
	return p;
}

static void *xcopy(const struct rxp_pkt *p)
{
	uint8_t *b = malloc(p->len ? p->len : 1);

	assert_int_equal(rxp_pkt_copy_bits(p, 0, b, p->len), 0);
	return b;
}

/* Check fragments against the byte-map model; consumes the queue. */
struct expect {
	int v6;
	uint32_t mtu;
	const uint8_t *hdr1; /* header of the first fragment (v4) / unfrag part (v6) */
	uint32_t hlen1;
	const uint8_t *hdr2; /* v4: header of later fragments */
	uint32_t hlen2;
	uint32_t nh_off; /* v6 */
	const uint8_t *payload;
	uint32_t plen;
	uint32_t base; /* v4: offset of the original (refragmenting) */
	int orig_mf;
	int keep_id;
	uint16_t id;
};

static unsigned check_frags(struct rxp_pkt_queue *q, const struct expect *e)
{
	uint8_t *map = calloc(e->plen + 1, 1);
	uint8_t *got = calloc(e->plen + 1, 1);
	uint32_t id = 0, covered = 0;
	unsigned n = 0, refs = 0;
	struct rxp_pkt *f;
	int saw_last = 0;

	while ((f = rxp_pkt_dequeue(q))) {
		uint8_t *b = xcopy(f);
		uint32_t off, plen, hl;
		int mf;

		refs += f->nr_frags;
		assert_true(f->len <= e->mtu);
		assert_false(saw_last);
		if (!e->v6) {
			struct rxp_iphdr ip;

			memcpy(&ip, b, sizeof(ip));
			hl = rxp_ip_hlen(&ip);
			assert_int_equal(hl, n ? e->hlen2 : e->hlen1);
			assert_int_equal(ntohs(ip.tot_len), f->len);
			assert_int_equal(rxp_ip_csum(b, hl), 0);
			/* every other header byte as in the original (or the
			 * copied-options header) */
			const uint8_t *ref = n ? e->hdr2 : e->hdr1;
			assert_memory_equal(b, ref, 2);
			assert_memory_equal(b + 8, ref + 8, 2);
			assert_memory_equal(b + 12, ref + 12, hl - 12);
			if (!n)
				id = ip.id;
			assert_int_equal(ip.id, id);
			if (e->keep_id)
				assert_int_equal(ip.id, e->id);
			assert_false(ntohs(ip.frag_off) & RXP_IP_DF);
			off = (ntohs(ip.frag_off) & RXP_IP_OFFMASK) * 8u;
			assert_true(off >= e->base);
			off -= e->base;
			mf = !!(ntohs(ip.frag_off) & RXP_IP_MF);
		} else {
			struct rxp_frag6hdr fh;

			hl = e->hlen1 + RXP_IPV6_FRAGHDR_LEN;
			assert_true(f->len >= hl);
			assert_int_equal(ntohs(*(uint16_t *)(b + 4)), f->len - RXP_IPV6_HLEN);
			assert_memory_equal(b, e->hdr1, 4);
			for (uint32_t i = 6; i < e->hlen1; i++)
				if (i == e->nh_off)
					assert_int_equal(b[i], RXP_IPPROTO_FRAGMENT);
				else
					assert_int_equal(b[i], e->hdr1[i]);
			memcpy(&fh, b + e->hlen1, sizeof(fh));
			assert_int_equal(fh.nexthdr, e->hdr1[e->nh_off]);
			assert_int_equal(fh.reserved, 0);
			if (!n)
				id = fh.id;
			assert_int_not_equal(fh.id, 0);
			assert_int_equal(fh.id, id);
			off = ntohs(fh.frag_off) & RXP_IP6_OFFMASK;
			mf = ntohs(fh.frag_off) & RXP_IP6_MF;
		}
		plen = f->len - hl;
		assert_true(plen > 0);
		assert_true(off + plen <= e->plen);
		int is_end = off + plen == e->plen;

		if (e->orig_mf)
			assert_true(mf);
		else
			assert_int_equal(mf, !is_end);
		if (!is_end)
			assert_int_equal(plen % 8, 0);
		saw_last = is_end;
		for (uint32_t i = 0; i < plen; i++) {
			assert_int_equal(map[off + i], 0);
			map[off + i] = 1;
		}
		memcpy(got + off, b + hl, plen);
		covered += plen;
		free(b);
		rxp_pkt_consume(f);
		n++;
	}
	assert_true(saw_last);
	assert_int_equal(covered, e->plen);
	assert_memory_equal(got, e->payload, e->plen);
	free(map);
	free(got);
	(void)refs;
	return n;
}

/* Sampled total sizes: small, around the MTU, and up to the maximum. */
static uint32_t sample_plen(struct rxpt_rng *r, uint32_t mtu, uint32_t hlen, uint32_t max)
{
	uint32_t v;

	switch (rxpt_rng_below(r, 4)) {
	case 0:
		v = 1 + (uint32_t)rxpt_rng_below(r, 200);
		break;
	case 1:
		v = mtu - hlen - 16 + (uint32_t)rxpt_rng_below(r, 32);
		break;
	case 2:
		v = max - (uint32_t)rxpt_rng_below(r, 64);
		break;
	default:
		v = 1 + (uint32_t)rxpt_rng_below(r, max);
	}
	return v < 1 ? 1 : v > max ? max : v;
}

/* An IPv4 header with options (one copied source route, a NOP, record
 * route which is not copied, router alert which is) or none. */
static uint32_t v4_header(uint8_t *h, struct rxpt_rng *r, uint32_t plen, uint8_t *h2,
			  uint32_t *hlen2)
{
	static const uint8_t opts[20] = {0x83, 7, 4, 10, 0, 0,	  9, 1, 0x07, 7,
					 4,    0, 0, 0,	 0, 0x94, 4, 0, 0,    0};
	static const uint8_t copied[12] = {0x83, 7, 4, 10, 0, 0, 9, 0x94, 4, 0, 0, 0};
	uint32_t hlen = rxpt_rng_below(r, 2) ? 40 : 20;
	struct rxp_iphdr ip = {
		.ver_ihl = (uint8_t)(0x40 | hlen / 4),
		.tos = 0x10,
		.tot_len = htons((uint16_t)(hlen + plen)),
		.id = htons(0x1234),
		.ttl = 64,
		.protocol = 17,
		.saddr = htonl(0x0a000001),
		.daddr = htonl(0x0a000002 + (uint32_t)rxpt_rng_below(r, 8)),
	};

	memcpy(h, &ip, sizeof(ip));
	if (hlen > 20)
		memcpy(h + 20, opts, sizeof(opts));
	memcpy(h2, h, 20);
	*hlen2 = 20;
	if (hlen > 20) {
		memcpy(h2 + 20, copied, sizeof(copied));
		*hlen2 = 32;
		h2[0] = 0x48;
	}
	return hlen;
}

static void test_property_v4(void **state)
{
	uint64_t seed = rxpt_seed("ipfrag_v4");
	struct rxpt_rng r;
	struct rxp_pktpool *pp = mkpool(4096);
	struct rxp_ipid_table *ids = mkids();
	unsigned cases = 2000 * scale(), frags = 0;
	uint8_t *payload = malloc(65536);

	rxpt_rng_seed(&r, seed);
	for (unsigned i = 0; i < cases; i++) {
		uint8_t h[60], h2[60];
		uint32_t hlen2, mtu = 68 + (uint32_t)rxpt_rng_below(&r, 9000 - 68 + 1);
		uint32_t hlen = rxpt_rng_below(&r, 2) ? 40 : 20;
		uint32_t plen = sample_plen(&r, mtu, hlen, 65535 - hlen);
		struct rxp_pkt_queue q;
		int rc;

		hlen = v4_header(h, &r, plen, h2, &hlen2);
		if (plen > 65535 - hlen)
			plen = 65535 - hlen;
		((struct rxp_iphdr *)h)->tot_len = htons((uint16_t)(hlen + plen));
		rxpt_fill(payload, plen, i);
		struct rxp_pkt *p =
			mkpkt(pp, &r, (enum layout)(i % N_LAYOUTS), h, hlen, payload, plen);
		rxp_pkt_queue_init(&q);
		rc = rxp_ip_fragment(p, mtu, ids, &q);
		if (hlen + plen <= mtu) {
			assert_int_equal(rc, 1);
			rxp_pkt_consume(rxp_pkt_dequeue(&q));
			continue;
		}
		if (rc < 0)
			fail_msg("case %u: rc %d (seed %llu)", i, rc, (unsigned long long)seed);
		assert_int_equal((unsigned)rc, q.len);
		struct expect e = {.mtu = mtu,
				   .hdr1 = h,
				   .hlen1 = hlen,
				   .hdr2 = h2,
				   .hlen2 = hlen2,
				   .payload = payload,
				   .plen = plen};
		frags += check_frags(&q, &e);
	}
	print_message("ipfrag v4: %u datagrams, %u fragments checked\n", cases, frags);
	free(payload);
	rxp_ipid_destroy(ids);
	rxpt_pktpool_teardown(pp);
}

/* IPv6 with a random chain of extension headers before the payload. */
static uint32_t v6_header(uint8_t *h, struct rxpt_rng *r, uint32_t *nh_off, uint32_t *unfrag)
{
	static const uint8_t kinds[] = {RXP_IPPROTO_HOPOPTS, RXP_IPPROTO_DSTOPTS,
					RXP_IPPROTO_ROUTING, RXP_IPPROTO_DSTOPTS};
	uint32_t off = RXP_IPV6_HLEN, last_nh = 6;
	unsigned n = (unsigned)rxpt_rng_below(r, 5);

	memset(h, 0, RXP_IPV6_HLEN);
	h[0] = 0x60;
	h[1] = 0x01;
	h[7] = 64;
	h[8] = 0x20;
	h[23] = 1;
	h[24] = 0x20;
	h[39] = 2;
	*nh_off = 6;
	*unfrag = RXP_IPV6_HLEN;
	for (unsigned i = 0; i < n && i < sizeof(kinds); i++) {
		uint32_t len = 8 * (1 + (uint32_t)rxpt_rng_below(r, 3));

		h[last_nh] = kinds[i];
		memset(h + off, 0x5a, len);
		h[off + 1] = (uint8_t)(len / 8 - 1);
		if (kinds[i] != RXP_IPPROTO_DSTOPTS) {
			*nh_off = off;
			*unfrag = off + len;
		}
		last_nh = off;
		off += len;
	}
	h[last_nh] = RXP_IPPROTO_UDP;
	return off;
}

static void test_property_v6(void **state)
{
	uint64_t seed = rxpt_seed("ipfrag_v6");
	struct rxpt_rng r;
	struct rxp_pktpool *pp = mkpool(4096);
	unsigned cases = 2000 * scale(), frags = 0;
	uint8_t *payload = malloc(65536 + 256);

	rxpt_rng_seed(&r, seed);
	for (unsigned i = 0; i < cases; i++) {
		uint8_t h[256];
		uint32_t nh_off, unfrag, mtu = 1280 + (uint32_t)rxpt_rng_below(&r, 9000 - 1280 + 1);
		uint32_t hlen = v6_header(h, &r, &nh_off, &unfrag);
		/* payload here = everything after the unfragmentable part
		 * (fragmentable extension headers included) */
		uint32_t tail = sample_plen(&r, mtu, hlen, 65535 - (hlen - RXP_IPV6_HLEN));
		uint32_t plen = hlen - unfrag + tail;
		struct rxp_pkt_queue q;
		int rc;

		uint16_t pl = htons((uint16_t)(hlen - RXP_IPV6_HLEN + tail));
		memcpy(h + 4, &pl, 2);
		memcpy(payload, h + unfrag, hlen - unfrag);
		rxpt_fill(payload + (hlen - unfrag), tail, i);
		struct rxp_pkt *p =
			mkpkt(pp, &r, (enum layout)(i % N_LAYOUTS), h, unfrag, payload, plen);
		rxp_pkt_queue_init(&q);
		rc = rxp_ip_fragment(p, mtu, NULL, &q);
		if (unfrag + plen <= mtu) {
			assert_int_equal(rc, 1);
			rxp_pkt_consume(rxp_pkt_dequeue(&q));
			continue;
		}
		if (rc < 0)
			fail_msg("case %u: rc %d (seed %llu)", i, rc, (unsigned long long)seed);
		struct expect e = {.v6 = 1,
				   .mtu = mtu,
				   .hdr1 = h,
				   .hlen1 = unfrag,
				   .nh_off = nh_off,
				   .payload = payload,
				   .plen = plen};
		frags += check_frags(&q, &e);
	}
	print_message("ipfrag v6: %u datagrams, %u fragments checked\n", cases, frags);
	free(payload);
	rxpt_pktpool_teardown(pp);
}

/* Payload in page frags is referenced, not copied. */
static void test_zero_copy(void **state)
{
	struct rxp_pktpool *pp = mkpool(256);
	struct rxp_ipid_table *ids = mkids();
	struct rxpt_rng r;
	uint8_t h[60], h2[60], *payload = malloc(20000);
	uint32_t hl2, plen = 20000;
	struct rxp_pkt_queue q;
	unsigned refs = 0, n = 0;

	rxpt_rng_seed(&r, 1);
	uint32_t hlen = v4_header(h, &r, plen, h2, &hl2);
	rxpt_fill(payload, plen, 7);
	struct rxp_pkt *p = mkpkt(pp, &r, PAGE_FRAGS, h, hlen, payload, plen);
	struct rxp_page *pages[RXP_MAX_FRAGS];
	unsigned np = p->nr_frags;

	for (unsigned i = 0; i < np; i++)
		pages[i] = p->frags[i].page;
	rxp_pkt_queue_init(&q);
	assert_true(rxp_ip_fragment(p, 1500, ids, &q) > 1);
	for (struct rxp_pkt *f = q.head; f; f = f->next, n++)
		for (unsigned k = 0; k < f->nr_frags; k++) {
			int found = 0;

			for (unsigned i = 0; i < np; i++)
				found |= f->frags[k].page == pages[i];
			assert_true(found);
			refs++;
		}
	assert_true(refs >= n - 1);
	rxp_pkt_queue_purge(&q, RXP_DROP_NOT_SPECIFIED);
	free(payload);
	rxp_ipid_destroy(ids);
	rxpt_pktpool_teardown(pp);
}

static struct rxp_pkt *v4_simple(struct rxp_pktpool *pp, uint32_t plen, uint16_t frag_off)
{
	struct rxp_pkt *p = rxp_pkt_alloc(pp, 20 + plen);
	struct rxp_iphdr ip = {.ver_ihl = 0x45,
			       .tot_len = htons((uint16_t)(20 + plen)),
			       .id = htons(0x4242),
			       .frag_off = htons(frag_off),
			       .ttl = 1,
			       .protocol = 17,
			       .saddr = 1,
			       .daddr = 2};

	memcpy(rxp_pkt_put(p, 20), &ip, 20);
	rxpt_fill(rxp_pkt_put(p, plen), plen, 3);
	return p;
}

static uint64_t drops(struct rxp_pktpool *pp, enum rxp_drop_reason why)
{
	struct rxp_pktpool_stats st;

	rxp_pktpool_get_stats(pp, &st);
	return st.drops[why];
}

static void test_refusals(void **state)
{
	struct rxp_pktpool *pp = mkpool(64);
	struct rxp_ipid_table *ids = mkids();
	struct rxp_pkt_queue q;
	struct rxp_pkt *p;

	rxp_pkt_queue_init(&q);
	/* DF and too big: refused, counted */
	assert_int_equal(rxp_ip_fragment(v4_simple(pp, 1500, RXP_IP_DF), 1500, ids, &q), -EMSGSIZE);
	assert_int_equal(drops(pp, RXP_DROP_FRAG_NEEDED_DF), 1);
	/* DF and fits: passed on unchanged */
	p = v4_simple(pp, 1480, RXP_IP_DF);
	assert_int_equal(rxp_ip_fragment(p, 1500, ids, &q), 1);
	assert_ptr_equal(rxp_pkt_dequeue(&q), p);
	rxp_pkt_consume(p);
	/* MTU below 68 */
	assert_int_equal(rxp_ip_fragment(v4_simple(pp, 100, 0), 67, ids, &q), -EMSGSIZE);
	assert_int_equal(drops(pp, RXP_DROP_FRAG_OUT_BAD_MTU), 1);
	/* no ID table for IPv4 */
	assert_int_equal(rxp_ip_fragment(v4_simple(pp, 100, 0), 68, NULL, &q), -EINVAL);
	/* truncated: tot_len beyond the packet */
	p = v4_simple(pp, 100, 0);
	rxp_pkt_trim(p, 60);
	assert_int_equal(rxp_ip_fragment(p, 68, ids, &q), -EINVAL);
	assert_int_equal(drops(pp, RXP_DROP_IP_TRUNCATED), 1);
	/* bad IHL */
	p = v4_simple(pp, 100, 0);
	p->data[0] = 0x44;
	assert_int_equal(rxp_ip_fragment(p, 68, ids, &q), -EINVAL);
	/* malformed option */
	p = rxp_pkt_alloc(pp, 200);
	{
		uint8_t h[24] = {0x46, 0, 0, 124, 0, 0, 0, 0, 1,    17, 0, 0,
				 1,    0, 0, 0,	  2, 0, 0, 0, 0x83, 9,	0, 0};
		memcpy(rxp_pkt_put(p, 24), h, 24);
		memset(rxp_pkt_put(p, 100), 0, 100);
	}
	assert_int_equal(rxp_ip_fragment(p, 68, ids, &q), -EINVAL);
	/* not IP at all, and empty */
	p = rxp_pkt_alloc(pp, 10);
	memset(rxp_pkt_put(p, 10), 0x25, 10);
	assert_int_equal(rxp_ip_fragment(p, 68, ids, &q), -EINVAL);
	assert_int_equal(rxp_ip_fragment(rxp_pkt_alloc(pp, 0), 68, ids, &q), -EINVAL);
	assert_int_equal(q.len, 0);
	rxp_ipid_destroy(ids);
	rxpt_pktpool_teardown(pp);
}

static void test_v6_refusals(void **state)
{
	struct rxp_pktpool *pp = mkpool(64);
	struct rxp_pkt_queue q;
	struct rxp_pkt *p;
	uint8_t h[48] = {0x60};

	rxp_pkt_queue_init(&q);
	/* MTU below 1280 */
	h[4] = 0x07;
	h[5] = 0xd0; /* 2000 */
	h[6] = RXP_IPPROTO_UDP;
	p = rxp_pkt_alloc(pp, 2040);
	memcpy(rxp_pkt_put(p, 40), h, 40);
	memset(rxp_pkt_put(p, 2000), 1, 2000);
	assert_int_equal(rxp_ip_fragment(p, 1279, NULL, &q), -EMSGSIZE);
	/* already a fragment */
	h[6] = RXP_IPPROTO_FRAGMENT;
	p = rxp_pkt_alloc(pp, 2040);
	memcpy(rxp_pkt_put(p, 40), h, 40);
	memset(rxp_pkt_put(p, 2000), 1, 2000);
	assert_int_equal(rxp_ip_fragment(p, 1280, NULL, &q), -EINVAL);
	assert_int_equal(drops(pp, RXP_DROP_IPV6_EXTHDR), 1);
	/* truncated extension header chain */
	h[6] = RXP_IPPROTO_HOPOPTS;
	p = rxp_pkt_alloc(pp, 2040);
	memcpy(rxp_pkt_put(p, 40), h, 40);
	memset(rxp_pkt_put(p, 2000), 0xff, 2000); /* hop-by-hop of 2048 bytes */
	assert_int_equal(rxp_ip_fragment(p, 1280, NULL, &q), -EINVAL);
	assert_int_equal(q.len, 0);
	rxpt_pktpool_teardown(pp);
}

/* Cutting a fragment again keeps its ID, offset base and MF. */
static void test_refragment(void **state)
{
	struct rxp_pktpool *pp = mkpool(64);
	struct rxp_ipid_table *ids = mkids();
	struct rxp_pkt_queue q;
	struct rxp_pkt *p = v4_simple(pp, 1000, RXP_IP_MF | 100);
	uint8_t *payload = malloc(1000), h[20];

	memcpy(h, p->data, 20);
	memcpy(payload, p->data + 20, 1000);
	rxp_pkt_queue_init(&q);
	assert_int_equal(rxp_ip_fragment(p, 300, ids, &q), 4);
	struct expect e = {.mtu = 300,
			   .hdr1 = h,
			   .hlen1 = 20,
			   .hdr2 = h,
			   .hlen2 = 20,
			   .payload = payload,
			   .plen = 1000,
			   .base = 800,
			   .orig_mf = 1,
			   .keep_id = 1,
			   .id = htons(0x4242)};
	assert_int_equal(check_frags(&q, &e), 4);
	free(payload);
	rxp_ipid_destroy(ids);
	rxpt_pktpool_teardown(pp);
}

static uint32_t fixed_tick(void *arg)
{
	return *(uint32_t *)arg;
}

/* A whole datagram's fragments carry the next ID of its (src, dst, proto)
 * bucket in the generator. */
static void test_id_from_generator(void **state)
{
	static uint32_t tick = 77;
	struct rxp_ipid_config ic = {
		.n_buckets = 1u << 16, .clock = fixed_tick, .clock_arg = &tick};
	struct rxp_ipid_table *ids = rxp_ipid_create(&ic);
	struct rxp_pktpool *pp = mkpool(64);
	struct rxp_pkt_queue q;
	uint32_t b = rxp_ipid_bucket_of(ids, 1, 2, 17);

	assert_non_null(ids);
	rxp_ipid_bucket_set(ids, b, 0x1234fffe, tick);
	rxp_pkt_queue_init(&q);
	for (int k = 0; k < 3; k++) {
		struct rxp_pkt *f;

		assert_int_equal(rxp_ip_fragment(v4_simple(pp, 2000, 0), 1500, ids, &q), 2);
		while ((f = rxp_pkt_dequeue(&q))) {
			assert_int_equal(ntohs(((struct rxp_iphdr *)f->data)->id),
					 (uint16_t)(0xfffe + k));
			rxp_pkt_consume(f);
		}
	}
	assert_int_equal(rxp_ipid_bucket_counter(ids, b), 0x12350001);
	rxp_ipid_destroy(ids);
	rxpt_pktpool_teardown(pp);
}

/* Out of packets half way: nothing reaches the caller, nothing leaks. */
static void test_nomem(void **state)
{
	struct rxp_pktpool_config c = {.name = "tiny",
				       .n_pkts = 8,
				       .n_bufs = 8,
				       .n_large = 2,
				       .cache_size = RXP_POOL_NO_CACHE};
	struct rxp_pktpool *pp = rxp_pktpool_create(&c);
	struct rxp_ipid_table *ids = mkids();
	struct rxp_pkt_queue q;

	assert_non_null(pp);
	rxp_pkt_queue_init(&q);
	assert_int_equal(rxp_ip_fragment(v4_simple(pp, 3000, 0), 68, ids, &q), -ENOMEM);
	assert_int_equal(q.len, 0);
	assert_int_equal(drops(pp, RXP_DROP_NOMEM) >= 1, 1);
	rxp_ipid_destroy(ids);
	rxpt_pktpool_teardown(pp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_property_v4),	  cmocka_unit_test(test_property_v6),
		cmocka_unit_test(test_zero_copy),	  cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_v6_refusals),	  cmocka_unit_test(test_refragment),
		cmocka_unit_test(test_id_from_generator), cmocka_unit_test(test_nomem),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
