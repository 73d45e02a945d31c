/* Shared helpers for the reassembly tests: build IPv4/IPv6 fragments with a
 * known payload pattern and check reassembled datagrams. */
#ifndef RXP_DEFRAG_TEST_H
#define RXP_DEFRAG_TEST_H

#include <stdlib.h>
#include <string.h>

#include "rxptest.h"
#include "rxpath/defrag.h"
#include "rxpath/wire.h"
#include "defrag_model.h"

static inline struct rxp_pktpool *dt_pool(void)
{
	struct rxp_pktpool_config c = {
		.name = "dfr", .n_pkts = 4096, .n_bufs = 4096, .n_large = 16};
	struct rxp_pktpool *pp = rxp_pktpool_create(&c);

	assert_non_null(pp);
	return pp;
}

struct dt4 {
	uint32_t src, dst;
	uint16_t id;
	uint8_t proto, tos;
	bool df;
};

/* An IPv4 fragment: payload bytes [off, off+len) of pattern buffer pl. */
static inline struct rxp_pkt *dt_frag4(struct rxp_pktpool *pp, const struct dt4 *d,
				       const uint8_t *pl, uint32_t off, uint32_t len, bool mf)
{
	struct rxp_pkt *p = rxp_pkt_alloc(pp, 20 + len);
	struct rxp_iphdr *ip;

	assert_non_null(p);
	ip = (struct rxp_iphdr *)rxp_pkt_put(p, 20 + len);
	memset(ip, 0, 20);
	ip->ver_ihl = 0x45;
	ip->tos = d->tos;
	ip->tot_len = htons((uint16_t)(20 + len));
	ip->id = htons(d->id);
	ip->frag_off =
		htons((uint16_t)((off / 8) | (mf ? RXP_IP_MF : 0) | (d->df ? RXP_IP_DF : 0)));
	ip->ttl = 64;
	ip->protocol = d->proto ? d->proto : 17;
	ip->saddr = d->src ? d->src : htonl(0x0a000001);
	ip->daddr = d->dst ? d->dst : htonl(0x0a000002);
	ip->check = rxp_ip_csum(ip, 20);
	memcpy((uint8_t *)ip + 20, pl + off, len);
	p->protocol = RXP_ETH_P_IP;
	return p;
}

struct dt6 {
	uint8_t src[16], dst[16];
	uint32_t id;
	uint8_t nexthdr; /* in the fragment header (default UDP) */
	uint8_t tc;
	unsigned hbh; /* bytes of Hop-by-Hop header before the fragment header (0, 8, 16) */
};

static inline struct rxp_pkt *dt_frag6(struct rxp_pktpool *pp, const struct dt6 *d,
				       const uint8_t *pl, uint32_t off, uint32_t len, bool mf)
{
	uint32_t hl = 40 + d->hbh + 8;
	struct rxp_pkt *p = rxp_pkt_alloc(pp, hl + len);
	uint8_t *b;
	uint8_t sa[16] = {0x20, 0x01}, da[16] = {0x20, 0x01};

	assert_non_null(p);
	b = rxp_pkt_put(p, hl + len);
	sa[15] = 1;
	da[15] = 2;
	rxp_ipv6_build(b, d->tc, 0, (uint16_t)(hl - 40 + len),
		       d->hbh ? RXP_IPPROTO_HOPOPTS : RXP_IPPROTO_FRAGMENT, 64,
		       d->src[0] ? d->src : sa, d->dst[0] ? d->dst : da);
	if (d->hbh)
		rxp_ipv6_opts_build(b + 40, RXP_IPPROTO_FRAGMENT, d->hbh);
	rxp_frag6_build(b + 40 + d->hbh, d->nexthdr ? d->nexthdr : RXP_IPPROTO_UDP, (uint16_t)off,
			mf, d->id);
	memcpy(b + hl, pl + off, len);
	p->protocol = RXP_ETH_P_IPV6;
	return p;
}

static inline uint8_t *dt_payload(uint32_t len, uint32_t seed)
{
	uint8_t *b = malloc(len ? len : 1);

	rxpt_fill(b, len, seed);
	return b;
}

/* The datagram's bytes after hdrlen equal pl[0..len). */
static inline void dt_check_payload(const struct rxp_pkt *p, uint32_t hdrlen, const uint8_t *pl,
				    uint32_t len)
{
	uint8_t *buf = malloc(len + 1);

	assert_int_equal(p->len, hdrlen + len);
	assert_int_equal(rxp_pkt_copy_bits(p, hdrlen, buf, len), 0);
	assert_memory_equal(buf, pl, len);
	free(buf);
}

static inline struct rxp_defrag_counters dt_ctr(const struct rxp_defrag_table *t)
{
	struct rxp_defrag_counters c;

	rxp_defrag_get_counters(t, &c);
	return c;
}

/* t completed oks datagrams, failed none, and holds nothing. */
static inline void dt_assert_drained(const struct rxp_defrag_table *t, uint64_t oks)
{
	struct rxp_defrag_counters c = dt_ctr(t);

	assert_int_equal(c.ReasmOKs, oks);
	assert_int_equal(c.ReasmFails, 0);
	assert_int_equal(c.queues, 0);
	assert_int_equal(c.mem, 0);
}

/* A pool and a table for one test; env_down asserts nothing is left. */
struct env {
	struct rxp_pktpool *pp;
	struct rxp_defrag_table *t;
};

static inline void env_up(struct env *e, const struct rxp_defrag_config *c)
{
	e->pp = dt_pool();
	e->t = rxp_defrag_table_create(c);
	assert_non_null(e->t);
}

static inline void env_down(struct env *e)
{
	rxp_defrag_table_destroy(e->t);
	rxpt_pktpool_teardown(e->pp);
}

#endif
