/*
 * Round trip through rxpath's own output and input: a UDP datagram is
 * fragmented by rxp_ip_fragment() and the fragments, in a random order, are
 * reassembled by rxp_defrag(); the datagram that comes back must carry the
 * same payload bytes and addresses, for sampled sizes 1..65507 and MTUs
 * 68..9000 (IPv4) or 1280..9000 (IPv6). Seeded; RXP_PROPERTY_SCALE scales.
 */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "rxptest.h"
#include "rxpath/defrag.h"
#include "rxpath/ip_output.h"
#include "rxpath/ipid.h"
#include "rxpath/wire.h"

static struct rxpt_rng rng;

/* A UDP datagram with plen payload bytes; linear, or with page frags. */
static struct rxp_pkt *mkdgram(struct rxp_pktpool *pp, bool v6, uint32_t plen, uint8_t *ref)
{
	uint32_t hl = v6 ? RXP_IPV6_HLEN : RXP_IPV4_HLEN, tot = hl + 8 + plen;
	bool frags = plen > 2000 && rxpt_rng_below(&rng, 2);
	uint32_t lin = frags ? hl + 8 + 1000 : tot;
	struct rxp_pkt *p = rxp_pkt_alloc(pp, lin);
	uint8_t *d;

	assert_non_null(p);
	d = rxp_pkt_put(p, lin);
	memset(ref, 0, hl + 8);
	if (v6) {
		uint8_t sa[16] = {0xfd}, da[16] = {0xfd};

		sa[15] = 1;
		da[15] = 2;
		rxp_ipv6_build(ref, 0, 0, (uint16_t)(8 + plen), RXP_IPPROTO_UDP, 64, sa, da);
	} else {
		rxp_ipv4_build(ref, RXP_IPPROTO_UDP, (uint16_t)tot, 0, 0, 64, htonl(0x0a000001),
			       htonl(0x0a000002));
	}
	ref[hl] = 0x12, ref[hl + 2] = 0x23; /* ports */
	ref[hl + 4] = (uint8_t)((8 + plen) >> 8), ref[hl + 5] = (uint8_t)(8 + plen);
	for (uint32_t i = 0; i < plen; i++)
		ref[hl + 8 + i] = (uint8_t)rxpt_rng_next(&rng);
	memcpy(d, ref, lin);
	for (uint32_t off = lin; off < tot;) {
		uint32_t n = tot - off < 6000 ? tot - off : 6000;
		struct rxp_page *pg = rxpt_page_new(n);

		memcpy(pg->addr, ref + off, n);
		assert_int_equal(rxp_pkt_add_frag(p, pg, 0, n, n), 0);
		off += n;
	}
	return p;
}

static void roundtrip(bool v6, unsigned cases)
{
	struct rxp_pktpool *pp = rxp_pktpool_create(&(struct rxp_pktpool_config){
		.name = "rt", .n_pkts = 4096, .n_bufs = 4096, .n_large = 128});
	struct rxp_ipid_table *ids = rxp_ipid_create(&(struct rxp_ipid_config){.n_buckets = 1024});
	struct rxp_defrag_table *t =
		rxp_defrag_table_create(&(struct rxp_defrag_config){.mem_limit = 64u << 20});
	static uint8_t ref[70000], got[70000];
	static struct rxp_pkt *frags[2048];
	unsigned long nfrags = 0;

	assert_non_null(pp);
	assert_non_null(ids);
	assert_non_null(t);
	for (unsigned c = 0; c < cases; c++) {
		uint32_t max = v6 ? 65535 - 48 : 65507;
		uint32_t plen = c % 5 == 0 ? max - (uint32_t)rxpt_rng_below(&rng, 8)
					   : 1 + (uint32_t)rxpt_rng_below(&rng, max);
		uint32_t mtu = v6 ? 1280 + (uint32_t)rxpt_rng_below(&rng, 9000 - 1280 + 1)
				  : 68 + (uint32_t)rxpt_rng_below(&rng, 9000 - 68 + 1);

		if (c % 7 == 0) /* the minimum MTUs, where fragments are most numerous */
			mtu = v6 ? 1280 : 68 + 8 * (uint32_t)rxpt_rng_below(&rng, 8);
		uint32_t hl = v6 ? RXP_IPV6_HLEN : RXP_IPV4_HLEN;
		struct rxp_pkt_queue q;
		struct rxp_pkt *p, *out = NULL;
		unsigned n = 0;

		rxp_pkt_queue_init(&q);
		p = mkdgram(pp, v6, plen, ref);
		{
			int rc = rxp_ip_fragment(p, mtu, ids, &q);

			if (rc <= 0)
				fail_msg("case %u: rxp_ip_fragment %d (%u bytes, mtu %u)", c, rc,
					 plen, mtu);
		}
		while ((p = rxp_pkt_dequeue(&q)))
			frags[n++] = p;
		nfrags += n;
		for (unsigned i = n; i > 1; i--) { /* shuffle */
			unsigned j = (unsigned)rxpt_rng_below(&rng, i);
			struct rxp_pkt *x = frags[i - 1];

			frags[i - 1] = frags[j];
			frags[j] = x;
		}
		for (unsigned i = 0; i < n; i++) {
			p = rxp_defrag(t, frags[i], (uint64_t)c * 1000);
			if (p) {
				assert_null(out);
				out = p;
			}
		}
		if (!out)
			fail_msg("case %u (%s, %u bytes, mtu %u): not reassembled", c,
				 v6 ? "v6" : "v4", plen, mtu);
		assert_int_equal(out->len, hl + 8 + plen);
		assert_int_equal(rxp_pkt_copy_bits(out, 0, got, out->len), 0);
		/* payload, UDP header and addresses as sent; IDs and checksum may differ */
		assert_memory_equal(got + hl, ref + hl, 8 + plen);
		if (v6) {
			assert_memory_equal(got + 8, ref + 8, 32);
			assert_int_equal(got[6], RXP_IPPROTO_UDP);
		} else {
			assert_memory_equal(got + 12, ref + 12, 8);
			assert_memory_equal(got + 2, ref + 2, 2); /* total length */
			assert_int_equal(rxp_ip_csum(got, 20), 0);
		}
		rxp_pkt_consume(out);
	}
	printf("[frag_roundtrip] %s: %u datagrams, %lu fragments, all reassembled byte-exact\n",
	       v6 ? "IPv6" : "IPv4", cases, nfrags);
	rxp_defrag_table_destroy(t);
	rxp_ipid_destroy(ids);
	rxpt_pktpool_teardown(pp);
}

static unsigned scaled(unsigned n)
{
	const char *s = getenv("RXP_PROPERTY_SCALE");

	return n * (s && atoi(s) > 0 ? (unsigned)atoi(s) : 1);
}

static void test_v4(void **state)
{
	rxpt_rng_seed(&rng, rxpt_seed("frag_roundtrip_v4"));
	roundtrip(false, scaled(300));
}

static void test_v6(void **state)
{
	rxpt_rng_seed(&rng, rxpt_seed("frag_roundtrip_v6"));
	roundtrip(true, scaled(300));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_v4),
		cmocka_unit_test(test_v6),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
