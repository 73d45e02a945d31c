/* IPv6 reassembly rules: extension headers, atomic fragments, RFC 7112,
 * nested fragment headers, MF length, overlaps, zones, ECN, timeouts. */
#include "defrag_test.h"

#define NS 1000000000ull

static struct rxp_pkt *in6(struct env *e, const struct dt6 *d, const uint8_t *pl, uint32_t off,
			   uint32_t len, bool mf, uint64_t now)
{
	return rxp_defrag(e->t, dt_frag6(e->pp, d, pl, off, len, mf), now);
}

static uint64_t drops(struct env *e, enum rxp_drop_reason r)
{
	struct rxp_pktpool_stats st;

	rxp_pktpool_get_stats(e->pp, &st);
	return st.drops[r];
}

/* With and without a Hop-by-Hop header: the fragment header goes, the
 * next-header chain is patched, payload_len fixed. */
static void test_basic_exthdr(void **state)
{
	struct env e;
	uint8_t *pl = dt_payload(3000, 9);

	env_up(&e, NULL);
	for (unsigned hbh = 0; hbh <= 16; hbh += 8) {
		struct dt6 d = {.id = 1000 + hbh, .hbh = hbh};
		struct rxp_pkt *r;
		const struct rxp_ipv6hdr *ip;

		assert_null(in6(&e, &d, pl, 1496, 1504, false, 0));
		r = in6(&e, &d, pl, 0, 1496, true, 0);
		assert_non_null(r);
		ip = (const void *)r->data;
		assert_int_equal(ntohs(ip->payload_len), hbh + 3000);
		if (hbh) {
			assert_int_equal(ip->nexthdr, RXP_IPPROTO_HOPOPTS);
			assert_int_equal(r->data[40], RXP_IPPROTO_UDP);
		} else {
			assert_int_equal(ip->nexthdr, RXP_IPPROTO_UDP);
		}
		dt_check_payload(r, 40 + hbh, pl, 3000);
		rxp_pkt_consume(r);
	}
	assert_int_equal(dt_ctr(e.t).ReasmOKs, 3);
	assert_int_equal(dt_ctr(e.t).ReasmReqds, 6);
	free(pl);
	env_down(&e);
}

/* An atomic fragment bypasses an open queue with the same id. */
static void test_atomic(void **state)
{
	struct env e;
	uint8_t *pl = dt_payload(64, 9);
	struct dt6 d = {.id = 7};
	struct rxp_pkt *r;

	env_up(&e, NULL);
	assert_null(in6(&e, &d, pl, 0, 32, true, 0));
	r = in6(&e, &d, pl, 0, 64, false, 0);
	assert_non_null(r);
	assert_int_equal(((struct rxp_ipv6hdr *)r->data)->nexthdr, RXP_IPPROTO_UDP);
	dt_check_payload(r, 40, pl, 64);
	rxp_pkt_consume(r);
	assert_int_equal(dt_ctr(e.t).queues, 1);
	r = in6(&e, &d, pl, 32, 32, false, 0);
	assert_non_null(r);
	dt_check_payload(r, 40, pl, 64);
	rxp_pkt_consume(r);
	assert_int_equal(dt_ctr(e.t).ReasmOKs, 2);
	free(pl);
	env_down(&e);
}

/* RFC 7112: the first fragment must hold the upper-layer header. */
static void test_truncated_upper(void **state)
{
	struct env e;
	uint8_t *pl = dt_payload(64, 9);
	struct dt6 tcp = {.id = 8, .nexthdr = RXP_IPPROTO_TCP};

	env_up(&e, NULL);
	assert_null(in6(&e, &tcp, pl, 0, 16, true, 0)); /* 16 < 20 bytes of TCP */
	assert_int_equal(drops(&e, RXP_DROP_FRAG_IPV6_INCOMPLETE), 1);
	assert_int_equal(dt_ctr(e.t).queues, 0);
	free(pl);
	env_down(&e);
}

/* An AH header in the first fragment is as long as its own length field
 * says in 4-byte units (RFC 4302), whatever follows it: AH of 16 bytes,
 * then UDP's 8, fit a first fragment of 24 bytes and not one of 16. */
static void test_ah_before_upper(void **state)
{
	struct env e;
	uint8_t *pl = dt_payload(64, 9);
	struct dt6 d = {.id = 12, .nexthdr = RXP_IPPROTO_AH};
	struct rxp_pkt *r;

	pl[0] = RXP_IPPROTO_UDP;
	pl[1] = 2; /* (2 + 2) * 4 = 16 bytes */
	env_up(&e, NULL);
	assert_null(in6(&e, &d, pl, 0, 16, true, 0));
	assert_int_equal(drops(&e, RXP_DROP_FRAG_IPV6_INCOMPLETE), 1);
	d.id = 13;
	assert_null(in6(&e, &d, pl, 0, 24, true, 0));
	assert_int_equal(drops(&e, RXP_DROP_FRAG_IPV6_INCOMPLETE), 1);
	r = in6(&e, &d, pl, 24, 40, false, 0);
	assert_non_null(r);
	assert_int_equal(((struct rxp_ipv6hdr *)r->data)->nexthdr, RXP_IPPROTO_AH);
	dt_check_payload(r, 40, pl, 64);
	rxp_pkt_consume(r);
	free(pl);
	env_down(&e);
}

static void test_nested_fraghdr(void **state)
{
	struct env e;
	uint8_t *pl = dt_payload(64, 9);
	struct dt6 d = {.id = 9, .nexthdr = RXP_IPPROTO_FRAGMENT};

	env_up(&e, NULL);
	assert_null(in6(&e, &d, pl, 0, 32, true, 0));
	assert_int_equal(drops(&e, RXP_DROP_FRAG_IPV6_NESTED), 1);
	assert_int_equal(dt_ctr(e.t).invalid, 1);
	free(pl);
	env_down(&e);
}

/* MF=1 with a length not a multiple of 8: the fragment drops, the queue stays. */
static void test_mf_len_drops(void **state)
{
	struct env e;
	uint8_t *pl = dt_payload(64, 9);
	struct dt6 d = {.id = 10};
	struct rxp_pkt *r;

	env_up(&e, NULL);
	assert_null(in6(&e, &d, pl, 0, 16, true, 0));
	assert_null(in6(&e, &d, pl, 16, 20, true, 0));
	assert_int_equal(drops(&e, RXP_DROP_FRAG_INVALID), 1);
	r = in6(&e, &d, pl, 16, 48, false, 0);
	assert_non_null(r);
	dt_check_payload(r, 40, pl, 64);
	rxp_pkt_consume(r);
	free(pl);
	env_down(&e);
}

static void test_overlap_and_dup(void **state)
{
	struct env e;
	uint8_t *pl = dt_payload(64, 9);
	struct dt6 d = {.id = 11};
	struct rxp_pkt *r;

	env_up(&e, NULL);
	assert_null(in6(&e, &d, pl, 0, 32, true, 0));
	assert_null(in6(&e, &d, pl, 8, 16, true, 0)); /* inside: dup */
	r = in6(&e, &d, pl, 32, 32, false, 0);
	assert_non_null(r);
	rxp_pkt_consume(r);
	d.id = 12;
	assert_null(in6(&e, &d, pl, 0, 32, true, 0));
	assert_null(in6(&e, &d, pl, 24, 40, false, 0)); /* partial: kill */
	struct rxp_defrag_counters c = dt_ctr(e.t);
	assert_int_equal(c.duplicates, 1);
	assert_int_equal(c.ReasmOverlaps, 1);
	assert_int_equal(c.queues, 0);
	free(pl);
	env_down(&e);
}

/* The offset-0 fragment's next header is the one used. */
static void test_nexthdr_from_first(void **state)
{
	struct env e;
	uint8_t *pl = dt_payload(64, 9);
	struct dt6 a = {.id = 13, .nexthdr = RXP_IPPROTO_UDP}, b = {.id = 13, .nexthdr = 99};
	struct rxp_pkt *r;

	env_up(&e, NULL);
	assert_null(in6(&e, &b, pl, 32, 32, false, 0));
	r = in6(&e, &a, pl, 0, 32, true, 0);
	assert_non_null(r);
	assert_int_equal(((struct rxp_ipv6hdr *)r->data)->nexthdr, RXP_IPPROTO_UDP);
	rxp_pkt_consume(r);
	free(pl);
	env_down(&e);
}

/* A link-local destination keys on the zone (the interface it came in
 * on): fragments of one datagram seen in two zones are two datagrams. A
 * global destination does not: they are one. */
static void test_zone(void **state)
{
	struct env e;
	uint8_t *pl = dt_payload(32, 9);
	struct dt6 ll = {.id = 14, .dst = {0xfe, 0x80, [15] = 2}};
	struct dt6 gl = {.id = 14, .dst = {0x20, 0x01, 0x0d, 0xb8, [15] = 2}};
	struct rxp_pkt *r;

	env_up(&e, NULL);
	assert_null(rxp_defrag_zone(e.t, dt_frag6(e.pp, &ll, pl, 0, 16, true), 1, 0));
	assert_null(rxp_defrag_zone(e.t, dt_frag6(e.pp, &ll, pl, 16, 16, false), 2, 0));
	assert_int_equal(dt_ctr(e.t).queues, 2);
	r = rxp_defrag_zone(e.t, dt_frag6(e.pp, &ll, pl, 16, 16, false), 1, 0);
	assert_non_null(r);
	rxp_pkt_consume(r);
	assert_int_equal(dt_ctr(e.t).queues, 1); /* zone 2's stays */

	assert_null(rxp_defrag_zone(e.t, dt_frag6(e.pp, &gl, pl, 0, 16, true), 1, 0));
	assert_int_equal(dt_ctr(e.t).queues, 2);
	r = rxp_defrag_zone(e.t, dt_frag6(e.pp, &gl, pl, 16, 16, false), 2, 0);
	assert_non_null(r);
	assert_int_equal(r->len, 40 + 32);
	rxp_pkt_consume(r);
	assert_int_equal(dt_ctr(e.t).queues, 1);
	free(pl);
	env_down(&e);
}

static void test_ecn_and_timeout(void **state)
{
	struct env e;
	uint8_t *pl = dt_payload(32, 9);
	struct dt6 n = {.id = 15, .tc = 0}, ce = {.id = 15, .tc = 3};
	struct dt6 e0 = {.id = 16, .tc = 2}, ce2 = {.id = 16, .tc = 3};
	struct rxp_pkt *r;

	env_up(&e, NULL);
	assert_null(in6(&e, &n, pl, 0, 16, true, 0));
	assert_null(in6(&e, &ce, pl, 16, 16, false, 0));
	assert_int_equal(drops(&e, RXP_DROP_FRAG_ECN), 2);
	assert_null(in6(&e, &e0, pl, 0, 16, true, 0));
	r = in6(&e, &ce2, pl, 16, 16, false, 0);
	assert_non_null(r);
	assert_int_equal((ntohl(((struct rxp_ipv6hdr *)r->data)->vtc_flow) >> 20) & 3, 3);
	rxp_pkt_consume(r);
	/* IPv6 timeout is 60 s. */
	n.id = 17;
	assert_null(in6(&e, &n, pl, 0, 16, true, 0));
	assert_int_equal(rxp_defrag_expire(e.t, 59 * NS), 0);
	assert_int_equal(rxp_defrag_expire(e.t, 60 * NS), 1);
	assert_int_equal(dt_ctr(e.t).ReasmTimeout, 1);
	free(pl);
	env_down(&e);
}

static void test_too_big(void **state)
{
	struct env e;
	uint8_t *pl = dt_payload(65600, 9);
	struct dt6 d = {.id = 18};

	env_up(&e, NULL);
	assert_null(in6(&e, &d, pl, 65528, 16, false, 0));
	assert_int_equal(drops(&e, RXP_DROP_FRAG_TOO_BIG), 1);
	free(pl);
	env_down(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_basic_exthdr),
		cmocka_unit_test(test_atomic),
		cmocka_unit_test(test_truncated_upper),
		cmocka_unit_test(test_ah_before_upper),
		cmocka_unit_test(test_nested_fraghdr),
		cmocka_unit_test(test_mf_len_drops),
		cmocka_unit_test(test_overlap_and_dup),
		cmocka_unit_test(test_nexthdr_from_first),
		cmocka_unit_test(test_zone),
		cmocka_unit_test(test_ecn_and_timeout),
		cmocka_unit_test(test_too_big),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
