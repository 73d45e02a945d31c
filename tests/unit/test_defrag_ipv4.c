/* IPv4 reassembly rules (src/net/defrag*.c): one test per rule, each checks
 * the counters and that the pool is empty at the end. */
#include "defrag_test.h"

#define NS 1000000000ull

static struct rxp_pkt *in4(struct env *e, const struct dt4 *d, const uint8_t *pl, uint32_t off,
			   uint32_t len, bool mf, uint64_t now)
{
	return rxp_defrag(e->t, dt_frag4(e->pp, d, pl, off, len, mf), now);
}

static void check_hdr(const struct rxp_pkt *r, uint32_t plen)
{
	const struct rxp_iphdr *ip = (const void *)r->data;

	assert_int_equal(ntohs(ip->tot_len), 20 + plen);
	assert_int_equal(ntohs(ip->frag_off) & (RXP_IP_MF | RXP_IP_OFFMASK), 0);
	assert_int_equal(rxp_ip_csum(ip, 20), 0);
	assert_int_equal(r->network_off, r->data - r->head);
}

/* In order, reversed, and shuffled: one datagram each, payload intact. */
static void test_orders(void **state)
{
	static const int ord[3][4] = {{0, 1, 2, 3}, {3, 2, 1, 0}, {2, 0, 3, 1}};
	struct env e;
	uint8_t *pl = dt_payload(3000, 7);

	env_up(&e, NULL);
	for (int o = 0; o < 3; o++) {
		struct dt4 d = {.id = (uint16_t)(100 + o)};
		struct rxp_pkt *r = NULL;

		for (int i = 0; i < 4; i++) {
			int k = ord[o][i];
			uint32_t off = (uint32_t)k * 800, len = k == 3 ? 600 : 800;

			assert_null(r);
			r = in4(&e, &d, pl, off, len, k != 3, 1);
		}
		assert_non_null(r);
		check_hdr(r, 3000);
		dt_check_payload(r, 20, pl, 3000);
		rxp_pkt_consume(r);
	}
	struct rxp_defrag_counters c = dt_ctr(e.t);
	assert_int_equal(c.ReasmReqds, 12);
	assert_int_equal(c.ReasmOKs, 3);
	assert_int_equal(c.ReasmFails, 0);
	assert_int_equal(c.queues, 0);
	assert_int_equal(c.mem, 0);
	assert_true(c.mem_high_water > 0);
	free(pl);
	env_down(&e);
}

static void test_not_fragment_passes(void **state)
{
	struct env e;
	uint8_t *pl = dt_payload(100, 1);
	struct dt4 d = {.id = 1};

	env_up(&e, NULL);
	struct rxp_pkt *p = dt_frag4(e.pp, &d, pl, 0, 100, false);
	assert_ptr_equal(rxp_defrag(e.t, p, 0), p);
	rxp_pkt_consume(p);
	assert_int_equal(dt_ctr(e.t).ReasmReqds, 0);
	free(pl);
	env_down(&e);
}

/* Exact duplicates of first, middle and last: still one datagram. */
static void test_duplicates(void **state)
{
	struct env e;
	uint8_t *pl = dt_payload(24, 3);
	struct dt4 d = {.id = 5};

	env_up(&e, NULL);
	assert_null(in4(&e, &d, pl, 0, 8, true, 0));
	assert_null(in4(&e, &d, pl, 0, 8, true, 0));
	assert_null(in4(&e, &d, pl, 16, 8, false, 0));
	assert_null(in4(&e, &d, pl, 16, 8, false, 0));
	assert_null(in4(&e, &d, pl, 0, 8, true, 0));
	struct rxp_pkt *r = in4(&e, &d, pl, 8, 8, true, 0);
	assert_non_null(r);
	dt_check_payload(r, 20, pl, 24);
	rxp_pkt_consume(r);
	/* A duplicate after completion opens a new queue, which times out. */
	assert_null(in4(&e, &d, pl, 8, 8, true, 1));
	assert_int_equal(rxp_defrag_expire(e.t, 31 * NS), 1);
	struct rxp_defrag_counters c = dt_ctr(e.t);
	assert_int_equal(c.duplicates, 3);
	assert_int_equal(c.ReasmOKs, 1);
	assert_int_equal(c.ReasmTimeout, 1);
	assert_int_equal(c.ReasmFails, 1);
	free(pl);
	env_down(&e);
}

/* A fragment inside a run with different bytes is a duplicate: first wins. */
static void test_contained_differs_is_dup(void **state)
{
	struct env e;
	uint8_t *pl = dt_payload(32, 3), *other = dt_payload(32, 99);
	struct dt4 d = {.id = 6};

	env_up(&e, NULL);
	assert_null(in4(&e, &d, pl, 0, 16, true, 0));
	assert_null(in4(&e, &d, pl, 16, 8, true, 0));
	assert_null(in4(&e, &d, other, 8, 16, true, 0)); /* spans two fragments of one run */
	struct rxp_pkt *r = in4(&e, &d, pl, 24, 8, false, 0);
	assert_non_null(r);
	dt_check_payload(r, 20, pl, 32);
	rxp_pkt_consume(r);
	assert_int_equal(dt_ctr(e.t).duplicates, 1);
	assert_int_equal(dt_ctr(e.t).ReasmOverlaps, 0);
	free(pl);
	free(other);
	env_down(&e);
}

/* A partial overlap kills the queue; later fragments start a new queue. */
static void test_overlap_strict(void **state)
{
	struct env e;
	uint8_t *pl = dt_payload(48, 3);
	struct dt4 d = {.id = 7};

	env_up(&e, NULL);
	assert_null(in4(&e, &d, pl, 0, 16, true, 0));
	assert_null(in4(&e, &d, pl, 8, 16, true, 0));
	struct rxp_defrag_counters c = dt_ctr(e.t);
	assert_int_equal(c.ReasmOverlaps, 1);
	assert_int_equal(c.ReasmFails, 1);
	assert_int_equal(c.queues, 0);
	/* The rest completes nothing: offset 0 is gone with the old queue. */
	assert_null(in4(&e, &d, pl, 24, 24, false, 0));
	assert_int_equal(dt_ctr(e.t).queues, 1);
	assert_int_equal(rxp_defrag_expire(e.t, 30 * NS), 1);
	free(pl);
	env_down(&e);
}

/* Fragment i of a 20 x 64-byte datagram. */
static struct rxp_pkt *in64(struct env *e, const struct dt4 *d, const uint8_t *pl, unsigned i)
{
	return in4(e, d, pl, i * 64u, 64, i != 19, 0);
}

/* Runs move from the queue's small arrays (up to 8) to a tree of table
 * nodes, once through each path that can need a ninth run: a fragment in
 * a gap, and one after a gap past the end. Duplicates and overlaps are
 * judged by the run boundaries in both forms. */
static void test_run_forms(void **state)
{
	static const unsigned fill[] = {17, 15, 13, 11, 9, 7, 3};
	struct env e;
	uint8_t *pl = dt_payload(20 * 64, 9);
	struct dt4 d = {.id = 80}, x = {.id = 81}, y = {.id = 82};
	struct rxp_pkt *r;

	env_up(&e, NULL);
	/* d: the even fragments 0..14 make 8 runs; a duplicate of one; 5
	 * falls in a gap and needs a ninth run: the tree. */
	for (unsigned i = 0; i <= 14; i += 2)
		assert_null(in64(&e, &d, pl, i));
	assert_null(in64(&e, &d, pl, 4));
	assert_int_equal(dt_ctr(e.t).duplicates, 1);
	assert_null(in64(&e, &d, pl, 5));
	assert_null(in4(&e, &d, pl, 16, 48, true, 0)); /* inside run 0: a duplicate */
	assert_int_equal(dt_ctr(e.t).duplicates, 2);
	assert_null(in64(&e, &d, pl, 16));
	assert_null(in64(&e, &d, pl, 18));
	assert_null(in64(&e, &d, pl, 19)); /* appended to the last run */
	assert_null(in64(&e, &d, pl, 16));
	assert_int_equal(dt_ctr(e.t).duplicates, 3);
	for (unsigned i = 0; i < sizeof(fill) / sizeof(fill[0]); i++)
		assert_null(in64(&e, &d, pl, fill[i]));
	r = in64(&e, &d, pl, 1); /* the last gap */
	assert_non_null(r);
	check_hdr(r, 20 * 64);
	dt_check_payload(r, 20, pl, 20 * 64);
	rxp_pkt_consume(r);
	assert_int_equal(dt_ctr(e.t).ReasmOverlaps, 0);

	/* x: an overlap across two runs of the small form */
	for (unsigned i = 0; i <= 4; i += 2)
		assert_null(in64(&e, &x, pl, i));
	assert_null(in4(&e, &x, pl, 2 * 64 + 32, 64, true, 0));
	assert_int_equal(dt_ctr(e.t).ReasmOverlaps, 1);
	/* y: 10 runs after gaps (the tree from the ninth), then an overlap
	 * of one fragment's end and a gap */
	for (unsigned i = 0; i <= 18; i += 2)
		assert_null(in64(&e, &y, pl, i));
	assert_null(in4(&e, &y, pl, 4 * 64 + 32, 64, true, 0));

	struct rxp_defrag_counters c = dt_ctr(e.t);
	assert_int_equal(c.ReasmOverlaps, 2);
	assert_int_equal(c.ReasmOKs, 1);
	assert_int_equal(c.ReasmFails, 2);
	assert_int_equal(c.queues, 0);
	assert_int_equal(c.mem, 0);
	free(pl);
	env_down(&e);
}

/* Nine fragments in reverse: eight runs fill the small form, and the one at
 * offset 0 completes the datagram by joining the run after it, with no
 * ninth run (and so no tree, whose nodes could have run out). */
static void test_reverse_fills_small_form(void **state)
{
	struct env e;
	uint8_t *pl = dt_payload(9 * 64, 6);
	struct dt4 d = {.id = 90};
	struct rxp_pkt *r = NULL;

	env_up(&e, NULL);
	for (int i = 8; i >= 0; i--) {
		assert_null(r);
		r = in4(&e, &d, pl, (uint32_t)i * 64, 64, i != 8, 0);
	}
	assert_non_null(r);
	check_hdr(r, 9 * 64);
	dt_check_payload(r, 20, pl, 9 * 64);
	rxp_pkt_consume(r);
	assert_int_equal(dt_ctr(e.t).ReasmOKs, 1);
	assert_int_equal(dt_ctr(e.t).queues, 0);
	assert_int_equal(dt_ctr(e.t).mem, 0);
	free(pl);
	env_down(&e);
}

/* Keys whose slots collide: with 1024 queues the slot table has 2048
 * slots and the slot is a hash of the rest of the key plus the id, so ids
 * 2048 apart from one source share a slot. The first queue holds it, the
 * others are displaced into the SipHash table; each is found again
 * whichever leaves first, a new queue takes the slot its holder freed, and
 * everything completes intact. */
static void test_slot_collisions(void **state)
{
	struct rxp_defrag_config c = {.max_queues = 1024};
	struct env e;
	uint8_t *pl = dt_payload(3 * 64, 4);
	struct dt4 d[4];
	struct rxp_pkt *r;

	for (unsigned i = 0; i < 4; i++)
		d[i] = (struct dt4){.id = (uint16_t)(7 + 2048 * i)};
	env_up(&e, &c);
	/* first fragments of 0, 1 and 2: 0 holds the slot */
	for (unsigned i = 0; i < 3; i++)
		assert_null(in4(&e, &d[i], pl, 0, 64, true, 0));
	assert_int_equal(dt_ctr(e.t).queues, 3);
	/* the holder completes first; 1 and 2 are still found */
	assert_null(in4(&e, &d[0], pl, 128, 64, false, 0));
	r = in4(&e, &d[0], pl, 64, 64, true, 0);
	assert_non_null(r);
	dt_check_payload(r, 20, pl, 3 * 64);
	rxp_pkt_consume(r);
	assert_null(in4(&e, &d[1], pl, 64, 64, true, 0));
	/* 3 takes the free slot; 2 is still displaced and found */
	assert_null(in4(&e, &d[3], pl, 64, 64, true, 0));
	assert_null(in4(&e, &d[2], pl, 128, 64, false, 0));
	r = in4(&e, &d[2], pl, 64, 64, true, 0);
	assert_non_null(r);
	dt_check_payload(r, 20, pl, 3 * 64);
	rxp_pkt_consume(r);
	r = in4(&e, &d[1], pl, 128, 64, false, 0);
	assert_non_null(r);
	dt_check_payload(r, 20, pl, 3 * 64);
	rxp_pkt_consume(r);
	assert_null(in4(&e, &d[3], pl, 0, 64, true, 0));
	r = in4(&e, &d[3], pl, 128, 64, false, 0);
	assert_non_null(r);
	dt_check_payload(r, 20, pl, 3 * 64);
	rxp_pkt_consume(r);

	struct rxp_defrag_counters ct = dt_ctr(e.t);
	assert_int_equal(ct.ReasmOKs, 4);
	assert_int_equal(ct.ReasmFails, 0);
	assert_int_equal(ct.queues, 0);
	assert_int_equal(ct.mem, 0);
	free(pl);
	env_down(&e);
}

static void test_conflicting_ends(void **state)
{
	struct env e;
	uint8_t *pl = dt_payload(64, 3);
	struct dt4 d = {.id = 8};

	env_up(&e, NULL);
	/* Two MF=0 with different ends. */
	assert_null(in4(&e, &d, pl, 16, 8, false, 0));
	assert_null(in4(&e, &d, pl, 16, 16, false, 0));
	assert_int_equal(dt_ctr(e.t).ReasmFails, 1);
	/* An MF=0 fragment ending before data already seen. */
	d.id = 9;
	assert_null(in4(&e, &d, pl, 32, 16, true, 0));
	assert_null(in4(&e, &d, pl, 8, 8, false, 0));
	assert_int_equal(dt_ctr(e.t).ReasmFails, 2);
	/* Data past the known end. */
	d.id = 10;
	assert_null(in4(&e, &d, pl, 16, 8, false, 0));
	assert_null(in4(&e, &d, pl, 24, 8, true, 0));
	assert_int_equal(dt_ctr(e.t).ReasmFails, 3);
	/* A zero-length fragment. */
	d.id = 11;
	assert_null(in4(&e, &d, pl, 0, 8, true, 0));
	assert_null(in4(&e, &d, pl, 8, 0, true, 0));
	assert_int_equal(dt_ctr(e.t).ReasmFails, 4);
	assert_int_equal(dt_ctr(e.t).queues, 0);
	free(pl);
	env_down(&e);
}

/* MF=1 length not a multiple of 8 is rounded down. */
static void test_mf_len_rounded(void **state)
{
	struct env e;
	uint8_t *pl = dt_payload(40, 3);
	struct dt4 d = {.id = 12};

	env_up(&e, NULL);
	assert_null(in4(&e, &d, pl, 0, 21, true, 0)); /* counts as [0,16) */
	struct rxp_pkt *r = in4(&e, &d, pl, 16, 24, false, 0);
	assert_non_null(r);
	check_hdr(r, 40);
	dt_check_payload(r, 20, pl, 40);
	rxp_pkt_consume(r);
	free(pl);
	env_down(&e);
}

/* A result over 65535 bytes fails. */
static void test_too_big(void **state)
{
	struct env e;
	uint8_t *pl = dt_payload(65600, 3);
	struct dt4 d = {.id = 13};
	struct rxp_pktpool_stats st;

	env_up(&e, NULL);
	assert_null(in4(&e, &d, pl, 0, 1480, true, 0));
	for (uint32_t off = 1480; off < 63640; off += 1480)
		assert_null(in4(&e, &d, pl, off, 1480, true, 0));
	/* last: offset 63640 + 1900 = 65540 payload bytes > 65515 */
	assert_null(in4(&e, &d, pl, 63640, 1900, false, 0));
	assert_int_equal(dt_ctr(e.t).ReasmFails, 1);
	assert_int_equal(dt_ctr(e.t).ReasmOKs, 0);
	rxp_pktpool_get_stats(e.pp, &st);
	assert_int_equal(st.drops[RXP_DROP_FRAG_TOO_BIG], 1);
	free(pl);
	env_down(&e);
}

static void test_ecn_df(void **state)
{
	struct env e;
	uint8_t *pl = dt_payload(32, 3);
	struct rxp_pkt *r;

	env_up(&e, NULL);
	/* Not-ECT with CE: drop. */
	struct dt4 a = {.id = 20, .tos = 0}, b = {.id = 20, .tos = 3};
	assert_null(in4(&e, &a, pl, 0, 16, true, 0));
	assert_null(in4(&e, &b, pl, 16, 16, false, 0));
	assert_int_equal(dt_ctr(e.t).ReasmFails, 1);
	/* ECT(0) with CE: CE. */
	struct dt4 c0 = {.id = 21, .tos = 2}, c1 = {.id = 21, .tos = 3};
	assert_null(in4(&e, &c0, pl, 0, 16, true, 0));
	r = in4(&e, &c1, pl, 16, 16, false, 0);
	assert_non_null(r);
	assert_int_equal(((struct rxp_iphdr *)r->data)->tos & 3, 3);
	check_hdr(r, 32);
	rxp_pkt_consume(r);
	/* DF only on the smaller fragment: no DF; on the larger: DF. */
	struct dt4 n = {.id = 22}, f = {.id = 22, .df = true};
	assert_null(in4(&e, &n, pl, 0, 24, true, 0));
	r = in4(&e, &f, pl, 24, 8, false, 0);
	assert_non_null(r);
	assert_int_equal(ntohs(((struct rxp_iphdr *)r->data)->frag_off), 0);
	rxp_pkt_consume(r);
	n.id = f.id = 23;
	assert_null(in4(&e, &f, pl, 0, 24, true, 0));
	r = in4(&e, &n, pl, 24, 8, false, 0);
	assert_non_null(r);
	assert_int_equal(ntohs(((struct rxp_iphdr *)r->data)->frag_off), RXP_IP_DF);
	rxp_pkt_consume(r);
	/* every fragment but the last ones was tiny (under 64 bytes); two had DF */
	assert_int_equal(dt_ctr(e.t).tiny_frags, 4);
	assert_int_equal(dt_ctr(e.t).df_frags, 2);
	free(pl);
	env_down(&e);
}

/* Timer armed at creation, not extended; a late last fragment starts anew. */
static void test_timeout_not_extended(void **state)
{
	struct env e;
	uint8_t *pl = dt_payload(32, 3);
	struct dt4 d = {.id = 30};

	env_up(&e, NULL);
	assert_null(in4(&e, &d, pl, 0, 8, true, 0));
	assert_null(in4(&e, &d, pl, 8, 8, true, 29 * NS));
	assert_int_equal(rxp_defrag_expire(e.t, 29 * NS + 1), 0);
	/* The last fragment lands just after the timeout (lazy expiry). */
	assert_null(in4(&e, &d, pl, 16, 16, false, 30 * NS));
	struct rxp_defrag_counters c = dt_ctr(e.t);
	assert_int_equal(c.ReasmTimeout, 1);
	assert_int_equal(c.queues, 1);
	assert_int_equal(rxp_defrag_expire(e.t, 60 * NS), 1);
	free(pl);
	env_down(&e);
}

/* rxp_defrag_expire reads no queue before its lower bound on the earliest
 * expiry: a bound left stale by a queue that completed, a queue made after
 * a scan that found nothing, and one made with time gone back (clamped to
 * its FIFO's order) all still expire at their own time, no sooner. */
static void test_expire_bound(void **state)
{
	struct env e;
	uint8_t *pl = dt_payload(16, 4);
	struct dt4 a = {.id = 40}, b = {.id = 41}, c = {.id = 42};
	struct rxp_pkt *r;

	env_up(&e, NULL);
	assert_null(in4(&e, &a, pl, 0, 8, true, 0)); /* expires at 30 s */
	assert_int_equal(rxp_defrag_expire(e.t, 1 * NS), 0);
	r = in4(&e, &a, pl, 8, 8, false, 2 * NS); /* a completes: the bound is stale */
	assert_non_null(r);
	rxp_pkt_consume(r);
	assert_null(in4(&e, &b, pl, 0, 8, true, 10 * NS)); /* 40 s */
	assert_int_equal(rxp_defrag_expire(e.t, 35 * NS), 0); /* scans: b is not due */
	assert_null(in4(&e, &c, pl, 0, 8, true, 5 * NS)); /* back in time: clamped to 40 s */
	assert_int_equal(rxp_defrag_expire(e.t, 40 * NS - 1), 0);
	assert_int_equal(dt_ctr(e.t).queues, 2);
	assert_int_equal(rxp_defrag_expire(e.t, 40 * NS), 2);
	assert_int_equal(dt_ctr(e.t).ReasmTimeout, 2);
	/* Empty again: the next queue sets the bound afresh. */
	assert_null(in4(&e, &a, pl, 0, 8, true, 50 * NS)); /* 80 s */
	assert_int_equal(rxp_defrag_expire(e.t, 79 * NS), 0);
	assert_int_equal(rxp_defrag_expire(e.t, 80 * NS), 1);
	assert_int_equal(dt_ctr(e.t).queues, 0);
	free(pl);
	env_down(&e);
}

/* Key separation: protocol, reversed addresses, zone; ID reuse after completion. */
static void test_keys(void **state)
{
	struct env e;
	uint8_t *pl = dt_payload(16, 3);
	struct dt4 a = {.id = 40, .proto = 17}, b = {.id = 40, .proto = 6};
	struct dt4 rev = {
		.id = 40, .proto = 17, .src = htonl(0x0a000002), .dst = htonl(0x0a000001)};
	struct rxp_pkt *r;

	env_up(&e, NULL);
	assert_null(in4(&e, &a, pl, 0, 8, true, 0));
	assert_null(in4(&e, &b, pl, 8, 8, false, 0));
	assert_null(in4(&e, &rev, pl, 8, 8, false, 0));
	assert_int_equal(dt_ctr(e.t).queues, 3);
	r = in4(&e, &a, pl, 8, 8, false, 0);
	assert_non_null(r);
	rxp_pkt_consume(r);
	/* Another zone (VLAN) is another datagram. */
	assert_null(rxp_defrag_zone(e.t, dt_frag4(e.pp, &a, pl, 0, 8, true), 7, 0));
	assert_null(rxp_defrag_zone(e.t, dt_frag4(e.pp, &a, pl, 8, 8, false), 8, 0));
	r = rxp_defrag_zone(e.t, dt_frag4(e.pp, &a, pl, 8, 8, false), 7, 0);
	assert_non_null(r);
	rxp_pkt_consume(r);
	r = in4(&e, &a, pl, 0, 8, true, 0); /* reuse */
	assert_null(r);
	r = in4(&e, &a, pl, 8, 8, false, 0);
	assert_non_null(r);
	rxp_pkt_consume(r);
	assert_int_equal(dt_ctr(e.t).ReasmOKs, 3);
	free(pl);
	env_down(&e);
}

/* Forward mode keeps fragment boundaries on the frag_list. */
static void test_forward_keeps_boundaries(void **state)
{
	struct env e;
	struct rxp_defrag_config c = {.forward = true};
	uint8_t *pl = dt_payload(4000, 3);
	struct dt4 d = {.id = 50};
	struct rxp_pkt *r = NULL, *m;
	int n = 0;

	env_up(&e, &c);
	for (uint32_t off = 0; off < 4000; off += 1000)
		r = in4(&e, &d, pl, off, 1000, off + 1000 < 4000, 0);
	assert_non_null(r);
	for (m = r->frag_list; m; m = m->next) {
		assert_int_equal(m->len, 1000);
		n++;
	}
	assert_int_equal(n, 3);
	dt_check_payload(r, 20, pl, 4000);
	rxp_pkt_consume(r);
	free(pl);
	env_down(&e);
}

/* Memory pressure: sparse queues that never get another fragment fill the
 * cap. Evict mode learns the gap at which datagrams come back (from the
 * ones it had to refuse), finds the sparse queues overdue, reaps them, and
 * completes what follows; the first new datagram, refused while nothing was
 * known, stays refused to the end (its datagram is remembered as given up).
 * Linux mode drops every fragment while over the cap. Memory never goes
 * over the cap in evict mode. */
static void pressure_run(enum rxp_defrag_pressure pr, uint64_t *oks, uint64_t *stale)
{
	struct env e;
	struct rxp_defrag_config c = {.pressure = pr, .mem_limit = 64 * 1024};
	uint8_t *pl = dt_payload(1600, 3);

	env_up(&e, &c);
	for (uint16_t id = 0; id < 200; id++) {
		struct dt4 s = {.id = id, .src = htonl(0x0b000000u + id)};

		assert_null(in4(&e, &s, pl, 8, 8, true, id));
	}
	for (uint16_t id = 1000; id < 1050; id++) {
		struct dt4 d = {.id = id};
		struct rxp_pkt *r;

		assert_null(in4(&e, &d, pl, 0, 800, true, 1000));
		r = in4(&e, &d, pl, 800, 800, false, 1000);
		if (r) {
			dt_check_payload(r, 20, pl, 1600);
			rxp_pkt_consume(r);
		}
		if (pr == RXP_DEFRAG_PRESSURE_EVICT)
			assert_true(dt_ctr(e.t).mem <= 64 * 1024);
	}
	*oks = dt_ctr(e.t).ReasmOKs;
	*stale = dt_ctr(e.t).evict_stale;
	assert_true(dt_ctr(e.t).mem_drops > 0);
	assert_true(dt_ctr(e.t).mem_high_water <= 64 * 1024 + 4096);
	free(pl);
	env_down(&e);
}

static void test_pressure_policy(void **state)
{
	uint64_t oks, stale;

	pressure_run(RXP_DEFRAG_PRESSURE_EVICT, &oks, &stale);
	assert_int_equal(oks, 49);
	assert_true(stale > 0);
	pressure_run(RXP_DEFRAG_PRESSURE_LINUX, &oks, &stale);
	assert_int_equal(oks, 0);
	assert_int_equal(stale, 0);
}

/* Finish what was started: an open queue still being fed is not pushed out
 * by newcomers that do not fit; they go instead, once overdue (the open
 * queue sets the gap: a fragment every four), and its last fragment
 * completes it. */
static void test_pressure_protects_open_queue(void **state)
{
	struct env e;
	struct rxp_defrag_config c = {.mem_limit = 40 * 1024};
	uint8_t *pl = dt_payload(12000, 3);
	struct dt4 d = {.id = 1};
	struct rxp_pkt *r = NULL;
	uint16_t id = 100;

	env_up(&e, &c);
	/* 8 fragments of a 12000-byte datagram, three newcomers after each. */
	for (uint32_t off = 0; off < 11968; off += 1496) {
		r = in4(&e, &d, pl, off, 1496, off + 1496 < 11968, 0);
		if (off + 1496 < 11968)
			assert_null(r);
		for (int i = 0; i < 3; i++, id++) {
			struct dt4 s = {.id = id, .src = htonl(0x0c000000u + id)};

			assert_null(in4(&e, &s, pl, 8, 8, true, 1));
		}
		assert_true(dt_ctr(e.t).mem <= 40 * 1024);
	}
	assert_non_null(r);
	dt_check_payload(r, 20, pl, 11968);
	rxp_pkt_consume(r);
	assert_true(dt_ctr(e.t).evict_stale > 0);
	assert_int_equal(dt_ctr(e.t).evict_newest + dt_ctr(e.t).refused_own, 0);
	free(pl);
	env_down(&e);
}

static void test_queue_limit(void **state)
{
	struct env e;
	struct rxp_defrag_config c = {.max_queues = 4, .pressure = RXP_DEFRAG_PRESSURE_LINUX};
	uint8_t *pl = dt_payload(16, 3);
	struct rxp_pktpool_stats st;

	env_up(&e, &c);
	for (uint16_t id = 0; id < 6; id++) {
		struct dt4 s = {.id = id};

		assert_null(in4(&e, &s, pl, 0, 8, true, 0));
	}
	assert_int_equal(dt_ctr(e.t).queues, 4);
	rxp_pktpool_get_stats(e.pp, &st);
	assert_int_equal(st.drops[RXP_DROP_FRAG_QUEUE_LIMIT], 2);
	free(pl);
	env_down(&e);
}

/* max_dist: more than 64 fragments from the source between two additions. */
static void test_max_dist(void **state)
{
	struct env e;
	uint8_t *pl = dt_payload(16, 3);
	struct dt4 d = {.id = 1};
	struct rxp_pkt *r;

	env_up(&e, NULL);
	assert_null(in4(&e, &d, pl, 0, 8, true, 0));
	for (int i = 0; i < 70; i++) {
		struct dt4 o = {.id = (uint16_t)(1000 + i)};

		assert_null(in4(&e, &o, pl, 0, 8, true, 0));
	}
	/* The queue was flushed: the last fragment alone does not complete. */
	assert_null(in4(&e, &d, pl, 8, 8, false, 0));
	assert_int_equal(dt_ctr(e.t).max_dist_flushes, 1);
	r = in4(&e, &d, pl, 0, 8, true, 0);
	assert_non_null(r);
	rxp_pkt_consume(r);
	free(pl);
	env_down(&e);
}

/* Many never-completing 8-byte fragments in random order: bounded memory,
 * drained by the timer. */
static void test_fragmentsmack_churn(void **state)
{
	struct env e;
	struct rxp_defrag_config c = {.mem_limit = 1 << 20};
	uint8_t *pl = dt_payload(65536, 3);
	struct rxpt_rng rng;

	rxpt_rng_seed(&rng, rxpt_seed("fragmentsmack"));
	env_up(&e, &c);
	for (int i = 0; i < 3000; i++) {
		struct dt4 s = {.id = (uint16_t)rxpt_rng_below(&rng, 8)};
		uint32_t off = (uint32_t)rxpt_rng_below(&rng, 8000) * 8 + 8;

		assert_null(in4(&e, &s, pl, off, 8, true, 0));
		assert_true(dt_ctr(e.t).mem <= (1 << 20) + 8192);
	}
	rxp_defrag_expire(e.t, 30 * NS);
	assert_int_equal(dt_ctr(e.t).queues, 0);
	assert_int_equal(dt_ctr(e.t).mem, 0);
	free(pl);
	env_down(&e);
}

/* RFC 1858: an FO=1 fragment overwriting the TCP header overlaps: strict drops. */
static void test_tiny_fragment_overlap(void **state)
{
	struct env e;
	uint8_t *pl = dt_payload(64, 3);
	struct dt4 d = {.id = 60, .proto = 6};

	env_up(&e, NULL);
	assert_null(in4(&e, &d, pl, 0, 24, true, 0));
	assert_null(in4(&e, &d, pl, 8, 56, false, 0));
	assert_int_equal(dt_ctr(e.t).ReasmOverlaps, 1);
	free(pl);
	env_down(&e);
}

/* 64 KiB datagram at a 1280-byte MTU: 53 fragments, shuffled. */
static void test_many_fragments(void **state)
{
	struct env e;
	uint32_t plen = 65000, step = 1232, n = (plen + step - 1) / step, order[64];
	uint8_t *pl = dt_payload(plen, 5);
	struct dt4 d = {.id = 70};
	struct rxpt_rng rng;
	struct rxp_pkt *r = NULL;

	rxpt_rng_seed(&rng, rxpt_seed("many"));
	for (uint32_t i = 0; i < n; i++)
		order[i] = i;
	for (uint32_t i = n - 1; i > 0; i--) {
		uint32_t j = (uint32_t)rxpt_rng_below(&rng, i + 1), x = order[i];

		order[i] = order[j];
		order[j] = x;
	}
	env_up(&e, NULL);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t off = order[i] * step, len = off + step > plen ? plen - off : step;

		assert_null(r);
		r = in4(&e, &d, pl, off, len, off + len < plen, 0);
	}
	assert_non_null(r);
	check_hdr(r, plen);
	dt_check_payload(r, 20, pl, plen);
	rxp_pkt_consume(r);
	free(pl);
	env_down(&e);
}

/* One datagram of n fragments fed in order ord[], fragment k carrying
 * sizes[k] payload bytes; fragment odd_k (when below n) is made odd: a clone
 * whose original is gone (metadata apart) when odd_pp is NULL, else from
 * odd_pp. The result is intact and holds the fragments after the first as
 * frags (each is larger than the first's tailroom). */
static void notes_datagram(struct env *e, uint16_t id, const uint32_t *sizes, const uint32_t *ord,
			   uint32_t n, uint32_t odd_k, struct rxp_pktpool *odd_pp)
{
	uint32_t offs[9], plen = 0;
	struct dt4 d = {.id = id};
	struct rxp_pkt *r = NULL;
	uint8_t *pl;

	for (uint32_t k = 0; k < n; k++) {
		offs[k] = plen;
		plen += sizes[k];
	}
	pl = dt_payload(plen, id);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t k = ord[i];
		struct rxp_pkt *f;

		f = dt_frag4(k == odd_k && odd_pp ? odd_pp : e->pp, &d, pl, offs[k], sizes[k],
			     k != n - 1);
		if (k == odd_k && !odd_pp) {
			struct rxp_pkt *c = rxp_pkt_clone(f);

			assert_non_null(c);
			rxp_pkt_consume(f);
			f = c;
		}
		assert_null(r);
		r = rxp_defrag(e->t, f, 1);
	}
	assert_non_null(r);
	check_hdr(r, plen);
	dt_check_payload(r, 20, pl, plen);
	if (odd_k >= n)
		assert_int_equal(r->nr_frags, n - 1);
	rxp_pkt_consume(r);
	free(pl);
}

/* Datagrams of at most eight fragments made by rxp_pkt_alloc complete from
 * what their queue noted of each fragment, without the runs: every order
 * of 2-4 fragments of unequal sizes and random orders of 5-8, each intact
 * with its fragments as frags in order. With one fragment a clone or from
 * another pool (not noted at home), and with nine fragments, the runs are
 * walked instead: the same bytes. Counters and both pools end empty. */
static void test_taken_from_notes(void **state)
{
	static const uint32_t sizes[9] = {1200, 1208, 1464, 1480, 1216, 1304, 1400, 1232, 1001};
	struct rxp_pktpool_config c2 = {.name = "dfr2", .n_pkts = 64, .n_bufs = 64, .n_large = 4};
	struct rxp_pktpool *pp2;
	struct rxpt_rng rng;
	struct env e;
	uint32_t ord[9], ndg = 0, nfr = 0;
	uint16_t id = 1000;

	rxpt_rng_seed(&rng, rxpt_seed("notes"));
	env_up(&e, NULL);
	pp2 = rxp_pktpool_create(&c2);
	assert_non_null(pp2);
	for (uint32_t n = 2; n <= 9; n++) {
		uint32_t sz[9];

		memcpy(sz, sizes + 9 - n, n * sizeof(sz[0])); /* the last is odd-sized */
		for (uint32_t trial = 0; trial < 24; trial++) {
			for (uint32_t i = 0; i < n; i++)
				ord[i] = i;
			if (n <= 4) {
				/* the trial-th permutation (all of them for n <= 4) */
				uint32_t x = trial;

				for (uint32_t i = 0; i < n; i++) {
					uint32_t j = i + x % (n - i), t = ord[i];

					x /= n - i;
					ord[i] = ord[j];
					ord[j] = t;
				}
			} else {
				for (uint32_t i = n - 1; i > 0; i--) {
					uint32_t j = (uint32_t)rxpt_rng_below(&rng, i + 1),
						 t = ord[i];

					ord[i] = ord[j];
					ord[j] = t;
				}
			}
			notes_datagram(&e, id++, sz, ord, n, n <= 8 ? UINT32_MAX : 0, NULL);
			notes_datagram(&e, id++, sz, ord, n, trial % n, NULL);
			notes_datagram(&e, id++, sz, ord, n, (trial + 1) % n, pp2);
			ndg += 3;
			nfr += 3 * n;
		}
	}
	dt_assert_drained(e.t, ndg);
	assert_int_equal(dt_ctr(e.t).ReasmReqds, nfr);
	rxpt_pktpool_teardown(pp2);
	env_down(&e);
}

/* A datagram being probed: the model's runs, the 8-byte blocks it holds,
 * duplicates so far, whether its end is known, the counters before it. */
struct probe {
	struct env *e;
	struct dt4 d;
	const uint8_t *pl;
	uint32_t plen, rs[24], re[24], have;
	int nr;
	uint64_t dups;
	bool last;
	struct rxp_defrag_counters c0;
};

/* Payload [off, end) of p's datagram in, checked against Linux's run rule
 * (dt_model_runs): false for an overlap, which must kill the datagram;
 * else a duplicate is dropped and counted, anything else taken, and *done
 * says whether the datagram completed (intact), as it must when a
 * fragment taken leaves the model's blocks covering it and its end
 * known. */
static bool probe_in(struct probe *p, uint32_t off, uint32_t end, bool mf, bool *done)
{
	const uint32_t all = (uint32_t)((1ull << (p->plen / 8)) - 1);
	int m = dt_model_runs(p->rs, p->re, &p->nr, off, end);
	struct rxp_pkt *r = in4(p->e, &p->d, p->pl, off, end - off, mf, 0);

	if (m == DT_RUN_OVL) {
		assert_null(r);
		assert_int_equal(dt_ctr(p->e->t).ReasmOverlaps, p->c0.ReasmOverlaps + 1);
		return false;
	}
	p->dups += m == DT_RUN_DUP;
	assert_int_equal(dt_ctr(p->e->t).duplicates, p->c0.duplicates + p->dups);
	if (m == DT_RUN_OK)
		p->have |=
			(uint32_t)((1ull << (end / 8)) - 1) & ~(uint32_t)((1ull << (off / 8)) - 1);
	p->last |= !mf; /* (a duplicate makes the end known too) */
	/* (but only a fragment taken completes: Linux drops a duplicate
	 * before it looks, so a duplicate that made the end known leaves a
	 * full datagram to expire) */
	*done = m == DT_RUN_OK && p->last && p->have == all;
	assert_true(!r == !*done);
	if (r) {
		check_hdr(r, p->plen);
		dt_check_payload(r, 20, p->pl, p->plen);
		rxp_pkt_consume(r);
	}
	return true;
}

/* One datagram of n (at most 7) 16-byte fragments fed in order ord[], the
 * last with MF set when last_mf, with probes (payload [ps[j], pe[j]), MF
 * unless they end the datagram) fed after pos[j] of them, each fragment
 * checked by probe_in; nothing more is fed after an overlap. Returns
 * whether it completed. */
static bool probe_datagram(struct env *e, uint16_t id, const uint32_t *ord, uint32_t n,
			   const uint32_t *ps, const uint32_t *pe, const uint32_t *pos,
			   uint32_t nprobe, bool last_mf)
{
	struct probe p = {.e = e, .d = {.id = id}, .plen = n * 16, .c0 = dt_ctr(e->t)};
	uint8_t *pl = dt_payload(p.plen, id);
	bool done = false, alive = true;
	uint32_t j = 0;

	p.pl = pl;
	for (uint32_t i = 0; i <= n && alive && !done; i++) {
		for (; j < nprobe && pos[j] == i && alive && !done; j++)
			alive = probe_in(&p, ps[j], pe[j], pe[j] != p.plen, &done);
		if (i < n && alive && !done)
			alive = probe_in(&p, ord[i] * 16, ord[i] * 16 + 16,
					 ord[i] != n - 1 || last_mf, &done);
	}
	if (alive)
		assert_int_equal(dt_ctr(e->t).ReasmOverlaps, p.c0.ReasmOverlaps);
	free(pl);
	return done;
}

/* Out of order, a queue of fewer than eight fragments keeps only their
 * ranges (the notes form) and makes the runs, which judge duplicate
 * against overlap, when it needs them. Duplicates and overlaps against
 * runs of several fragments, in gaps, and as a ninth fragment are judged
 * as Linux's run rule (the model) judges them: every order of four
 * fragments with a probe of every 8-byte-aligned range (but the whole
 * datagram, which is not a fragment) after each of the first three, and
 * random orders of seven with three random probes; with the last
 * fragment's end known from it, or only from a probe that ends the
 * datagram. Counters and pool end empty. */
static void test_notes_form_judged_as_runs(void **state)
{
	struct rxpt_rng rng;
	uint32_t ord[7], ps[3], pe[3], pos[3], ok = 0, ndg = 0;
	uint16_t id = 2000;
	struct env e;

	rxpt_rng_seed(&rng, rxpt_seed("notes-form"));
	/* (room for every datagram left: none given up under pressure) */
	struct rxp_defrag_config cfg = {.max_queues = 4096, .mem_limit = 256u << 20};

	env_up(&e, &cfg);
	for (uint32_t perm = 0; perm < 24; perm++) {
		for (uint32_t a = 0; a < 8; a++) {
			for (uint32_t b = a + 1; b <= 8; b++) {
				for (uint32_t at = 1; at <= 3 && b - a < 8; at++) {
					uint32_t x = perm;

					for (uint32_t i = 0; i < 4; i++)
						ord[i] = i;
					for (uint32_t i = 0; i < 4; i++) {
						uint32_t k = i + x % (4 - i), t = ord[i];

						x /= 4 - i;
						ord[i] = ord[k];
						ord[k] = t;
					}
					ps[0] = a * 8;
					pe[0] = b * 8;
					pos[0] = at;
					ok += probe_datagram(&e, id++, ord, 4, ps, pe, pos, 1,
							     false);
					ok += probe_datagram(&e, id++, ord, 4, ps, pe, pos, 1,
							     true);
					ndg += 2;
				}
			}
		}
	}
	for (uint32_t trial = 0; trial < 400; trial++) {
		for (uint32_t i = 0; i < 7; i++)
			ord[i] = i;
		for (uint32_t i = 6; i > 0; i--) {
			uint32_t k = (uint32_t)rxpt_rng_below(&rng, i + 1), t = ord[i];

			ord[i] = ord[k];
			ord[k] = t;
		}
		for (uint32_t j = 0; j < 3; j++) {
			uint32_t a = (uint32_t)rxpt_rng_below(&rng, 14);

			ps[j] = a * 8;
			pe[j] = (a + 1 + (uint32_t)rxpt_rng_below(&rng, 14 - a - !a)) * 8;
			pos[j] = 1 + (uint32_t)rxpt_rng_below(&rng, 6);
		}
		/* (in the order they are fed) */
		for (uint32_t j = 1; j < 3; j++)
			for (uint32_t k = j; k > 0 && pos[k] < pos[k - 1]; k--) {
				uint32_t t = pos[k];

				pos[k] = pos[k - 1];
				pos[k - 1] = t;
			}
		ok += probe_datagram(&e, id++, ord, 7, ps, pe, pos, 3, trial & 1);
		ndg++;
	}
	/* each datagram is fed whole: it completes unless an overlap killed
	 * it or its end never came (given up at expiry) */
	uint32_t ovl = (uint32_t)dt_ctr(e.t).ReasmOverlaps, left = ndg - ok - ovl;

	assert_int_equal(dt_ctr(e.t).queues, left);
	assert_int_equal(rxp_defrag_expire(e.t, 31 * NS), left);
	struct rxp_defrag_counters c = dt_ctr(e.t);
	assert_int_equal(c.ReasmOKs, ok);
	assert_int_equal(c.ReasmFails, ovl + left);
	assert_true(ok > ndg / 8 && ovl > ndg / 4 && left > ndg / 16 && c.duplicates > ndg / 8);
	assert_int_equal(c.queues, 0);
	assert_int_equal(c.mem, 0);
	env_down(&e);
}

/* Many datagrams in flight, fed fragment r of every datagram before
 * fragment r+1 of any (as the benchmark does), half in order and half
 * reversed: keys that differ only in id, and pairs that differ only in
 * source. Every datagram completes once, intact. */
static void test_many_in_flight(void **state)
{
	struct rxp_defrag_config c = {.max_queues = 1024,
				      .mem_limit = 64u << 20,
				      .max_dist = -1 /* 500 datagrams per source */};
	enum { ND = 1000, K = 3, FL = 400 };
	uint8_t *pl = dt_payload(K * FL, 9);
	struct env e;
	uint32_t done = 0;

	env_up(&e, &c);
	for (uint32_t r = 0; r < K; r++) {
		for (uint32_t i = 0; i < ND; i++) {
			struct dt4 d = {.src = 0x0a000001u + (i & 1),
					.dst = 0x0a000063u,
					.id = (uint16_t)(i / 2),
					.proto = 17};
			/* odd datagrams reversed, even in order */
			uint32_t k = (i & 1) ? K - 1 - r : r;
			struct rxp_pkt *res = in4(&e, &d, pl, k * FL, FL, k != K - 1, 1);

			if (r < K - 1) {
				assert_null(res);
				continue;
			}
			assert_non_null(res);
			check_hdr(res, K * FL);
			dt_check_payload(res, 20, pl, K * FL);
			rxp_pkt_consume(res);
			done++;
		}
	}
	assert_int_equal(done, ND);
	dt_assert_drained(e.t, ND);
	free(pl);
	env_down(&e);
}

/* rxp_defrag_prefetch, and its two steps, are hints: on a fragment of a
 * held datagram, on one of a new datagram, on IPv6, on any bytes of any
 * length and (the second step) on any hint they change no counter and no
 * outcome. The first step's hint is 0 for what is not a fragment it
 * knows, and the same for fragments of one datagram. */
static void test_prefetch_changes_nothing(void **state)
{
	struct env e;
	struct dt4 d = {.id = 77};
	uint8_t *pl = dt_payload(1600, 3), b[128];
	struct rxp_defrag_counters c0, c1;
	struct rxp_pkt *f1, *r;
	uint64_t x = 0x9e3779b97f4a7c15ull;
	uint32_t h;

	env_up(&e, NULL);
	assert_null(in4(&e, &d, pl, 0, 800, true, 1));
	f1 = dt_frag4(e.pp, &d, pl, 800, 800, false);
	assert_int_equal(rxp_pkt_copy_bits(f1, 0, b, 64), 0);
	c0 = dt_ctr(e.t);
	rxp_defrag_prefetch(e.t, b, 64, 0); /* its queue */
	rxp_defrag_prefetch(e.t, b, 64, 5); /* another zone: no queue */
	rxp_defrag_prefetch(e.t, b, 19, 0); /* too short */
	b[7] ^= 0x40;
	rxp_defrag_prefetch(e.t, b, 64, 0); /* another offset, a new datagram */
	b[7] ^= 0x40;
	h = rxp_defrag_prefetch_slot(e.t, b, 64, 0);
	assert_int_not_equal(h, 0);
	rxp_defrag_prefetch_queue(e.t, h); /* its queue */
	b[7] ^= 0x40; /* another fragment of the same datagram: the same line */
	assert_int_equal(rxp_defrag_prefetch_slot(e.t, b, 64, 0), h);
	b[7] ^= 0x40;
	assert_int_equal(rxp_defrag_prefetch_slot(e.t, b, 19, 0), 0); /* too short */
	b[6] &= 0xc0, b[7] = 0;
	assert_int_equal(rxp_defrag_prefetch_slot(e.t, b, 64, 0), 0); /* not a fragment */
	assert_int_equal(rxp_pkt_copy_bits(f1, 0, b, 64), 0);
	for (uint32_t v = 0; v < 64; v++) /* any hint, made up or stale */
		rxp_defrag_prefetch_queue(e.t, v * 0x9e3779b9u);
	rxp_defrag_prefetch_queue(e.t, UINT32_MAX);
	for (unsigned len = 0; len <= sizeof(b); len++) {
		uint8_t junk[128];

		for (unsigned i = 0; i < sizeof(junk); i++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			junk[i] = (uint8_t)x;
		}
		junk[0] = (uint8_t)(len & 1 ? 0x45 : 0x60); /* IPv4 or IPv6 */
		junk[6] = len & 2 ? 44 : junk[6]; /* IPv6 fragment header first */
		rxp_defrag_prefetch(e.t, junk, len, 0);
		rxp_defrag_prefetch_queue(e.t, rxp_defrag_prefetch_slot(e.t, junk, len, 0));
	}
	c1 = dt_ctr(e.t);
	assert_memory_equal(&c0, &c1, sizeof(c0));
	r = rxp_defrag(e.t, f1, 1);
	assert_non_null(r);
	dt_check_payload(r, 20, pl, 1600);
	rxp_pkt_consume(r);
	assert_int_equal(dt_ctr(e.t).queues, 0);
	free(pl);
	env_down(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_orders),
		cmocka_unit_test(test_prefetch_changes_nothing),
		cmocka_unit_test(test_not_fragment_passes),
		cmocka_unit_test(test_duplicates),
		cmocka_unit_test(test_contained_differs_is_dup),
		cmocka_unit_test(test_overlap_strict),
		cmocka_unit_test(test_run_forms),
		cmocka_unit_test(test_reverse_fills_small_form),
		cmocka_unit_test(test_slot_collisions),
		cmocka_unit_test(test_conflicting_ends),
		cmocka_unit_test(test_mf_len_rounded),
		cmocka_unit_test(test_too_big),
		cmocka_unit_test(test_ecn_df),
		cmocka_unit_test(test_timeout_not_extended),
		cmocka_unit_test(test_expire_bound),
		cmocka_unit_test(test_keys),
		cmocka_unit_test(test_forward_keeps_boundaries),
		cmocka_unit_test(test_pressure_policy),
		cmocka_unit_test(test_pressure_protects_open_queue),
		cmocka_unit_test(test_queue_limit),
		cmocka_unit_test(test_max_dist),
		cmocka_unit_test(test_fragmentsmack_churn),
		cmocka_unit_test(test_tiny_fragment_overlap),
		cmocka_unit_test(test_many_fragments),
		cmocka_unit_test(test_taken_from_notes),
		cmocka_unit_test(test_notes_form_judged_as_runs),
		cmocka_unit_test(test_many_in_flight),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
