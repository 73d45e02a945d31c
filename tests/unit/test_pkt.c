/* Unit tests for struct rxp_pkt operations (src/buf/pkt.c). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rxptest.h"
#include "rxpath/wire.h"

static struct rxp_pktpool *mkpool(void)
{
	struct rxp_pktpool_config c = {.name = "t", .n_pkts = 256, .n_bufs = 256, .n_large = 8};
	struct rxp_pktpool *pp = rxp_pktpool_create(&c);

	assert_non_null(pp);
	return pp;
}

/* A linear packet holding len pattern bytes. */
static struct rxp_pkt *mkpkt(struct rxp_pktpool *pp, uint32_t len, uint32_t seed)
{
	struct rxp_pkt *p = rxp_pkt_alloc(pp, len);

	assert_non_null(p);
	uint8_t *d = rxp_pkt_put(p, len);
	assert_non_null(d);
	rxpt_fill(d, len, seed);
	return p;
}

/* Append a page frag with pattern bytes continuing the sequence at pos. */
static void addfrag(struct rxp_pkt *p, uint32_t size, uint32_t seed, uint32_t pos)
{
	struct rxp_page *pg = rxpt_page_new(size + 64);

	for (uint32_t i = 0; i < size; i++)
		pg->addr[32 + i] = (uint8_t)(seed + (pos + i) * 131u);
	assert_int_equal(rxp_pkt_add_frag(p, pg, 32, size, size + 64), 0);
}

static void check_bytes(const struct rxp_pkt *p, uint32_t seed, uint32_t from)
{
	uint8_t *buf = malloc(p->len + 1);

	assert_int_equal(rxp_pkt_copy_bits(p, 0, buf, p->len), 0);
	for (uint32_t i = 0; i < p->len; i++)
		if (buf[i] != (uint8_t)(seed + (from + i) * 131u))
			fail_msg("byte %u: %#x != %#x", i, buf[i],
				 (uint8_t)(seed + (from + i) * 131u));
	free(buf);
}

static void test_alloc_headroom_tailroom(void **state)
{
	struct rxp_pktpool *pp = mkpool();
	struct rxp_pkt *p = rxp_pkt_alloc(pp, 100);

	assert_non_null(p);
	assert_int_equal(rxp_pkt_headroom(p), RXP_HEADROOM_DEFAULT);
	assert_int_equal(p->len, 0);
	assert_true(rxp_pkt_tailroom(p) >= 100);
	assert_int_equal(rxp_pkt_tailroom(p) + RXP_HEADROOM_DEFAULT, 2048);
	assert_true(p->truesize >= sizeof(struct rxp_pkt) + 2048);
	/* put beyond the end fails and changes nothing */
	assert_null(rxp_pkt_put(p, 2048));
	assert_non_null(rxp_pkt_put(p, 10));
	assert_int_equal(p->len, 10);
	/* push within headroom, not beyond */
	assert_non_null(rxp_pkt_push(p, 28));
	assert_int_equal(rxp_pkt_headroom(p), RXP_HEADROOM_DEFAULT - 28);
	assert_null(rxp_pkt_push(p, RXP_HEADROOM_DEFAULT));
	assert_int_equal(p->len, 38);
	/* pull */
	assert_non_null(rxp_pkt_pull(p, 8));
	assert_int_equal(p->len, 30);
	assert_null(rxp_pkt_pull(p, 31));
	rxp_pkt_consume(p);

	/* reserve on an empty packet */
	p = rxp_pkt_alloc(pp, 10);
	rxp_pkt_reserve(p, 64);
	assert_int_equal(rxp_pkt_headroom(p), RXP_HEADROOM_DEFAULT + 64);
	rxp_pkt_consume(p);

	/* a large allocation comes from the large class; too large fails */
	p = rxp_pkt_alloc(pp, 60000);
	assert_non_null(p);
	assert_true(rxp_pkt_tailroom(p) >= 60000);
	rxp_pkt_consume(p);
	assert_null(rxp_pkt_alloc(pp, 200000));
	rxpt_pktpool_teardown(pp);
}

static void test_copy_bits_across_boundaries(void **state)
{
	struct rxp_pktpool *pp = mkpool();
	struct rxp_pkt *p = mkpkt(pp, 100, 7), *m;
	uint8_t buf[700];

	addfrag(p, 50, 7, 100);
	addfrag(p, 70, 7, 150);
	m = mkpkt(pp, 0, 0);
	rxpt_fill(m->data, 0, 0);
	rxp_pkt_consume(m);
	/* frag_list member: linear 40 + a frag of 60, continuing the pattern */
	m = rxp_pkt_alloc(pp, 40);
	for (uint32_t i = 0; i < 40; i++)
		rxp_pkt_put(m, 1)[0] = (uint8_t)(7 + (220 + i) * 131u);
	addfrag(m, 60, 7, 260);
	rxp_pkt_chain(p, m);
	assert_int_equal(p->len, 320);
	assert_int_equal(p->data_len, 220);
	check_bytes(p, 7, 0);
	/* every window, every start */
	for (uint32_t off = 0; off < 320; off += 13)
		for (uint32_t len = 0; off + len <= 320; len += 37) {
			assert_int_equal(rxp_pkt_copy_bits(p, off, buf, len), 0);
			for (uint32_t i = 0; i < len; i++)
				assert_int_equal(buf[i], (uint8_t)(7 + (off + i) * 131u));
		}
	assert_int_equal(rxp_pkt_copy_bits(p, 300, buf, 21), -EINVAL);
	assert_int_equal(rxp_pkt_copy_bits(p, UINT32_MAX, buf, 2), -EINVAL);
	/* header_pointer: direct in the linear part, copied across */
	assert_ptr_equal(rxp_pkt_header_pointer(p, 10, 20, buf), p->data + 10);
	assert_ptr_equal(rxp_pkt_header_pointer(p, 90, 20, buf), buf);
	assert_int_equal(buf[0], (uint8_t)(7 + 90 * 131u));
	assert_null(rxp_pkt_header_pointer(p, 310, 20, buf));
	rxp_pkt_drop(p, RXP_DROP_NOT_SPECIFIED);
	rxpt_pktpool_teardown(pp);
}

static void test_clone_refcounts(void **state)
{
	struct rxp_pktpool *pp = mkpool();
	struct rxp_pkt *p = mkpkt(pp, 200, 3), *c, *u;
	struct rxp_page *fp;

	addfrag(p, 100, 3, 200);
	fp = p->frags[0].page;
	rxp_pkt_chain(p, mkpkt(pp, 50, 3 + 300 * 131u));
	c = rxp_pkt_clone(p);
	assert_non_null(c);
	assert_true(rxp_pkt_cloned(p) && rxp_pkt_cloned(c));
	assert_ptr_equal(c->data, p->data);
	assert_int_equal(rxp_page_refcount(p->head_page), 2);
	assert_int_equal(rxp_page_refcount(fp), 2);
	assert_non_null(c->frag_list);
	assert_ptr_not_equal(c->frag_list, p->frag_list);
	check_bytes(c, 3, 0);
	assert_int_equal(rxp_pktpool_pkts_outstanding(pp), 4);

	/* unshare gives a private linear copy and releases the clone */
	u = rxp_pkt_unshare(c);
	assert_non_null(u);
	assert_ptr_not_equal(u->data, p->data);
	assert_false(rxp_pkt_cloned(u));
	assert_true(rxp_pkt_is_linear(u));
	assert_int_equal(u->len, 350);
	check_bytes(u, 3, 0);
	assert_int_equal(rxp_page_refcount(p->head_page), 1);
	assert_int_equal(rxp_page_refcount(fp), 1);
	/* an unshared packet is returned as is */
	assert_ptr_equal(rxp_pkt_unshare(u), u);
	rxp_pkt_consume(u);

	/* copy does not consume */
	c = rxp_pkt_copy(p);
	assert_non_null(c);
	assert_int_equal(rxp_pkt_headroom(c), rxp_pkt_headroom(p));
	check_bytes(c, 3, 0);
	rxp_pkt_consume(c);
	rxp_pkt_consume(p);
	rxpt_pktpool_teardown(pp);
}

static void test_trim(void **state)
{
	struct rxp_pktpool *pp = mkpool();
	uint32_t cuts[] = {349, 300, 260, 250, 220, 200, 150, 100, 50, 1, 0};

	for (unsigned k = 0; k < sizeof(cuts) / sizeof(cuts[0]); k++) {
		struct rxp_pkt *p = mkpkt(pp, 100, 9);

		addfrag(p, 100, 9, 100);
		addfrag(p, 50, 9, 200);
		rxp_pkt_chain(p, mkpkt(pp, 100, 9 + 250 * 131u));
		assert_int_equal(p->len, 350);
		assert_int_equal(rxp_pkt_trim(p, 351), -EINVAL);
		assert_int_equal(rxp_pkt_trim(p, cuts[k]), 0);
		assert_int_equal(p->len, cuts[k]);
		check_bytes(p, 9, 0);
		assert_int_equal(p->len, rxp_pkt_headlen(p) + p->data_len);
		if (cuts[k] <= 250)
			assert_null(p->frag_list);
		if (cuts[k] <= 100)
			assert_int_equal(p->nr_frags, 0);
		rxp_pkt_consume(p);
		assert_int_equal(rxpt_pages_outstanding(), 0);
	}
	rxpt_pktpool_teardown(pp);
}

static void test_may_pull_and_linearize(void **state)
{
	struct rxp_pktpool *pp = mkpool();
	struct rxp_pkt *p = mkpkt(pp, 10, 5), *c;

	addfrag(p, 30, 5, 10);
	addfrag(p, 30, 5, 40);
	rxp_pkt_chain(p, mkpkt(pp, 30, 5 + 70 * 131u));
	assert_false(rxp_pkt_may_pull(p, 101));
	assert_true(rxp_pkt_may_pull(p, 50));
	assert_int_equal(rxp_pkt_headlen(p), 50);
	assert_int_equal(p->nr_frags, 1);
	assert_int_equal(p->frags[0].size, 20);
	assert_int_equal(p->len, 100);
	check_bytes(p, 5, 0);
	assert_true(rxp_pkt_may_pull(p, 80)); /* into the frag_list */
	check_bytes(p, 5, 0);
	assert_int_equal(rxp_pkt_headlen(p), 80);

	/* a cloned packet pulls into a private head, leaving the clone intact */
	c = rxp_pkt_clone(p);
	assert_true(rxp_pkt_may_pull(c, 90));
	assert_ptr_not_equal(c->head_page, p->head_page);
	check_bytes(c, 5, 0);
	check_bytes(p, 5, 0);
	rxp_pkt_consume(c);

	assert_int_equal(rxp_pkt_linearize(p), 0);
	assert_true(rxp_pkt_is_linear(p));
	assert_null(p->frag_list);
	assert_int_equal(p->len, 100);
	check_bytes(p, 5, 0);
	rxp_pkt_consume(p);

	/* linearizing a 60000-byte packet needs the large class */
	p = mkpkt(pp, 1000, 1);
	for (uint32_t pos = 1000; pos < 60000; pos += 3500)
		addfrag(p, 3500, 1, pos);
	assert_int_equal(p->len, 1000 + RXP_MAX_FRAGS * 3500);
	assert_int_equal(rxp_pkt_linearize(p), 0);
	check_bytes(p, 1, 0);
	rxp_pkt_consume(p);
	rxpt_pktpool_teardown(pp);
}

static void test_add_frag_limits(void **state)
{
	struct rxp_pktpool *pp = mkpool();
	struct rxp_pkt *p = mkpkt(pp, 10, 0);
	struct rxp_page *pg;

	for (int i = 0; i < RXP_MAX_FRAGS; i++)
		addfrag(p, 8, 0, 10 + 8 * i);
	pg = rxpt_page_new(64);
	assert_int_equal(rxp_pkt_add_frag(p, pg, 0, 8, 64), -E2BIG);
	assert_int_equal(rxp_pkt_add_frag(p, pg, 60, 8, 64), -EINVAL);
	assert_int_equal(rxp_pkt_tailroom(p), 0); /* non-linear: no tail growth */
	assert_null(rxp_pkt_put(p, 1));
	rxp_page_put(pg); /* the reference stayed with us */
	check_bytes(p, 0, 0);
	rxp_pkt_consume(p);
	p = mkpkt(pp, 10, 0);
	pg = rxpt_page_new(64);
	assert_int_equal(rxp_pkt_add_frag(p, pg, 0, 0, 64), -EINVAL); /* empty */
	rxp_page_put(pg);
	rxp_pkt_consume(p);
	rxpt_pktpool_teardown(pp);
}

static void test_coalesce(void **state)
{
	struct rxp_pktpool *pp = mkpool();
	struct rxp_pkt *to = mkpkt(pp, 100, 11), *from;
	uint32_t ts;

	/* small: copied into tailroom, shell freed */
	from = mkpkt(pp, 200, 11 + 100 * 131u);
	assert_int_equal(rxp_pkt_try_coalesce(to, from), RXP_COALESCE_COPIED);
	assert_int_equal(to->len, 300);
	assert_true(rxp_pkt_is_linear(to));
	assert_int_equal(rxp_pktpool_pkts_outstanding(pp), 1);
	check_bytes(to, 11, 0);

	/* does not fit: from's head and frags are stolen, no copy */
	from = mkpkt(pp, 1900, 11 + 300 * 131u);
	addfrag(from, 100, 11, 2200);
	struct rxp_page *hp = from->head_page, *fp = from->frags[0].page;
	ts = to->truesize;
	assert_int_equal(rxp_pkt_try_coalesce(to, from), RXP_COALESCE_STOLEN);
	assert_int_equal(to->len, 2300);
	assert_int_equal(to->nr_frags, 2);
	assert_ptr_equal(to->frags[0].page, hp);
	assert_ptr_equal(to->frags[1].page, fp);
	assert_int_equal(rxp_page_refcount(hp), 1);
	assert_true(to->truesize > ts);
	assert_int_equal(rxp_pktpool_pkts_outstanding(pp), 1);
	check_bytes(to, 11, 0);

	/* fill the frags, then the next one is chained... */
	uint32_t pos = 2300;
	while (to->nr_frags < RXP_MAX_FRAGS - 1) {
		from = mkpkt(pp, 1000, 11 + pos * 131u);
		from->data += 0;
		addfrag(from, 10, 11, pos + 1000);
		/* 2 frags each time: head and one page; stop before overflow */
		if (to->nr_frags + 2 > RXP_MAX_FRAGS) {
			rxp_pkt_consume(from);
			break;
		}
		assert_int_equal(rxp_pkt_try_coalesce(to, from), RXP_COALESCE_STOLEN);
		pos += 1010;
	}
	from = mkpkt(pp, 1000, 11 + pos * 131u);
	addfrag(from, 10, 11, pos + 1000);
	assert_int_equal(rxp_pkt_try_coalesce(to, from), RXP_COALESCE_CHAINED);
	pos += 1010;
	/* ...and later ones coalesce into that frag_list member */
	from = mkpkt(pp, 1500, 11 + pos * 131u);
	assert_int_equal(rxp_pkt_try_coalesce(to, from), RXP_COALESCE_STOLEN);
	pos += 1500;
	assert_int_equal(to->len, pos);
	assert_non_null(to->frag_list);
	assert_null(to->frag_list->next);
	check_bytes(to, 11, 0);
	rxp_pkt_consume(to);
	rxpt_pktpool_teardown(pp);
}

static void test_coalesce_cloned_from(void **state)
{
	struct rxp_pktpool *pp = mkpool();
	struct rxp_pkt *to = mkpkt(pp, 1000, 2), *from = mkpkt(pp, 1500, 2 + 1000 * 131u), *c;

	c = rxp_pkt_clone(from);
	assert_int_equal(rxp_pkt_try_coalesce(to, from), RXP_COALESCE_STOLEN);
	check_bytes(to, 2, 0);
	check_bytes(c, 2, 1000); /* the clone still sees its bytes */
	rxp_pkt_consume(c);
	rxp_pkt_consume(to);
	rxpt_pktpool_teardown(pp);
}

/* The fast path for a linear from (an IP fragment with its header pulled):
 * its head becomes one of to's frags at data's offset in its page, and a
 * slice that continues to's last frag in the same buffer grows that frag
 * instead, its reference dropped. */
static void test_coalesce_linear_slices(void **state)
{
	struct rxp_pktpool *pp = mkpool();
	struct rxp_page *pg = rxpt_page_new(4096);
	struct rxp_pkt *to = mkpkt(pp, 1900, 5), *a, *b; /* no room to copy */
	uint32_t ts;

	for (uint32_t i = 0; i < 4096; i++)
		pg->addr[i] = (uint8_t)(5 + (1900 + i - 120) * 131u);
	/* a: bytes [120, 600) of pg after a 20-byte pull; b: [600, 900) from
	 * a head that starts 600 bytes into pg */
	rxp_page_get(pg);
	a = rxp_pkt_build(pp, pg, 0, 600, 100, 500);
	b = rxp_pkt_build(pp, pg, 600, 1000, 0, 300);
	assert_non_null(a);
	assert_non_null(b);
	assert_non_null(rxp_pkt_pull(a, 20));
	assert_int_equal((uint32_t)(uintptr_t)b->data + b->page_bias, 600);

	ts = to->truesize;
	assert_int_equal(rxp_pkt_try_coalesce(to, a), RXP_COALESCE_STOLEN);
	assert_int_equal(to->nr_frags, 1);
	assert_ptr_equal(to->frags[0].page, pg);
	assert_int_equal(to->frags[0].off, 120);
	assert_int_equal(to->frags[0].size, 480);
	assert_int_equal(to->truesize, ts + 600);
	assert_int_equal(rxp_page_refcount(pg), 2);

	assert_int_equal(rxp_pkt_try_coalesce(to, b), RXP_COALESCE_STOLEN);
	assert_int_equal(to->nr_frags, 1);
	assert_int_equal(to->frags[0].size, 780);
	assert_int_equal(to->len, 2680);
	assert_int_equal(to->data_len, 780);
	assert_int_equal(to->truesize, ts + 1600);
	assert_int_equal(rxp_page_refcount(pg), 1);
	assert_int_equal(rxp_pktpool_pkts_outstanding(pp), 1);
	check_bytes(to, 5, 0);
	rxp_pkt_consume(to);
	rxpt_pktpool_teardown(pp);
}

/* frag_list members are never empty: chaining an empty packet consumes it,
 * so a packet whose bytes are all linear (data_len 0) has no frag_list,
 * which coalescing relies on. */
static void test_chain_empty_consumed(void **state)
{
	struct rxp_pktpool *pp = mkpool();
	struct rxp_pkt *to = mkpkt(pp, 100, 3), *e = rxp_pkt_alloc(pp, 10), *m;

	assert_non_null(e);
	rxp_pkt_chain(to, e);
	assert_null(to->frag_list);
	assert_int_equal(to->data_len, 0);
	assert_int_equal(rxp_pktpool_pkts_outstanding(pp), 1);
	m = mkpkt(pp, 50, 3 + 100 * 131u);
	rxp_pkt_chain(to, m);
	assert_ptr_equal(to->frag_list, m);
	assert_int_equal(to->data_len, 50);
	/* trimming the member away frees it and leaves no frag_list */
	assert_int_equal(rxp_pkt_trim(to, 100), 0);
	assert_null(to->frag_list);
	assert_int_equal(to->data_len, 0);
	check_bytes(to, 3, 0);
	rxp_pkt_consume(to);
	rxpt_pktpool_teardown(pp);
}

static void test_build_and_drop_counts(void **state)
{
	struct rxp_pktpool *pp = mkpool();
	struct rxp_page *pg = rxpt_page_new(4096);
	struct rxp_pktpool_stats st;
	struct rxp_pkt *p;

	rxpt_fill(pg->addr + 2048 + 128, 1000, 4);
	p = rxp_pkt_build(pp, pg, 2048, 2048, 128, 1000);
	assert_non_null(p);
	assert_int_equal(p->len, 1000);
	assert_int_equal(rxp_pkt_headroom(p), 128);
	check_bytes(p, 4, 0);
	rxp_pkt_drop(p, RXP_DROP_FRAG_OVERLAP);
	pg = rxpt_page_new(100);
	assert_null(rxp_pkt_build(pp, pg, 0, 200, 0, 10)); /* reference consumed */
	assert_int_equal(rxpt_pages_outstanding(), 0);
	p = mkpkt(pp, 1, 0);
	rxp_pkt_drop(p, RXP_DROP_FRAG_OVERLAP);
	p = mkpkt(pp, 1, 0);
	rxp_pkt_drop(p, (enum rxp_drop_reason)9999); /* out of range: counted as unspecified */
	p = mkpkt(pp, 1, 0);
	rxp_pkt_drop(p, RXP_DROP_NONE); /* "valid" is no reason: counted as unspecified */
	rxp_pktpool_count_drop(pp, RXP_DROP_NONE, 3);
	rxp_pkt_consume(mkpkt(pp, 1, 0));
	rxp_pktpool_get_stats(pp, &st);
	assert_int_equal(st.drops[RXP_DROP_FRAG_OVERLAP], 2);
	assert_int_equal(st.drops[RXP_DROP_NOT_SPECIFIED], 5);
	assert_int_equal(st.drops[RXP_DROP_NONE], 0);
	assert_int_equal(RXP_DROP_NONE, 0);
	assert_int_not_equal(RXP_DROP_NOT_SPECIFIED, 0);
	assert_string_equal(rxp_drop_reason_name(RXP_DROP_NONE), "none");
	assert_int_equal(st.consumed, 1);
	assert_string_equal(rxp_drop_reason_name(RXP_DROP_FRAG_OVERLAP), "frag_overlap");
	assert_string_equal(rxp_drop_reason_name(RXP_DROP_MAX), "?");
	rxpt_pktpool_teardown(pp);
}

static void test_exhaustion(void **state)
{
	struct rxp_pktpool_config c = {
		.name = "x", .n_pkts = 8, .n_bufs = 8, .n_large = 1, .cache_size = 4};
	struct rxp_pktpool *pp = rxp_pktpool_create(&c);
	struct rxp_pkt *p[9];
	struct rxp_pktpool_stats st;
	int i, n = 8;

	for (i = 0; i < 8; i++)
		assert_non_null(p[i] = rxp_pkt_alloc(pp, 64));
	if (!getenv("RXP_PKT_META_APART")) {
		/* Eight one-object packets took the small buffers and no
		 * metadata: the ninth gets the large buffer, metadata apart. */
		rxp_pktpool_get_stats(pp, &st);
		assert_int_equal(st.embedded_alloc, 8);
		assert_int_equal(st.pkts.alloc, 0);
		assert_non_null(p[n++] = rxp_pkt_alloc(pp, 64));
		assert_false(p[8]->flags & RXP_PKT_F_EMBED);
		assert_true(rxp_pkt_tailroom(p[8]) > c.buf_size);
		rxp_pktpool_get_stats(pp, &st);
		assert_int_equal(st.bufs.alloc_fail, 1);
		assert_int_equal(st.pkts.alloc, 1);
		assert_int_equal(rxp_pktpool_pkts_outstanding(pp), 9);
		assert_null(rxp_pkt_alloc(pp, 64));
		rxp_pktpool_get_stats(pp, &st);
		assert_true(st.large.alloc_fail >= 1);
	} else {
		assert_null(rxp_pkt_alloc(pp, 64));
		rxp_pktpool_get_stats(pp, &st);
		assert_true(st.pkts.alloc_fail >= 1);
	}
	for (i = 0; i < n; i++)
		rxp_pkt_consume(p[i]);
	rxpt_pktpool_teardown(pp);
}

/* A small packet is one object: its metadata sits in its head buffer's
 * slot, between the page header and the bytes, and lives as long as
 * anything holds that slot: its head moved elsewhere, a clone that
 * outlives it, a packet that took its data. (ASan builds check that
 * nothing reads a slot after it went back.) */
static void test_embedded_lifetimes(void **state)
{
	struct rxp_pktpool *pp = mkpool();
	struct rxp_pktpool_stats st;
	struct rxp_pkt *p, *c, *to;
	struct rxp_page *home;
	uint32_t ts;

	p = mkpkt(pp, 100, 21);
	if (getenv("RXP_PKT_META_APART")) {
		assert_false(p->flags & RXP_PKT_F_EMBED);
		rxp_pkt_consume(p);
		rxpt_pktpool_teardown(pp);
		return;
	}
	home = p->head_page;
	assert_true(p->flags & RXP_PKT_F_EMBED);
	assert_true((uint8_t *)p > (uint8_t *)home && (uint8_t *)p < p->head);
	assert_true((uint8_t *)(p + 1) <= home->addr);
	rxp_pktpool_get_stats(pp, &st);
	assert_int_equal(st.pkts.alloc, 0);
	assert_int_equal(st.embedded_alloc, 1);
	assert_int_equal(rxp_pktpool_pkts_outstanding(pp), 1);
	assert_int_equal(rxp_pktpool_bufs_outstanding(pp), 1);

	/* Its head moves (linearizing past the buffer): the old head stays
	 * held, as the metadata's home, until the packet goes. */
	addfrag(p, 3000, 21, 100);
	assert_int_equal(rxp_pkt_linearize(p), 0);
	assert_ptr_not_equal(p->head_page, home);
	assert_true(p->flags & RXP_PKT_F_HOMEREF);
	assert_int_equal(rxp_page_refcount(home), 1);
	assert_int_equal(rxp_pktpool_bufs_outstanding(pp), 2);
	check_bytes(p, 21, 0);
	rxp_pkt_consume(p);
	assert_int_equal(rxp_pktpool_pkts_outstanding(pp), 0);
	assert_int_equal(rxp_pktpool_bufs_outstanding(pp), 0);
	assert_int_equal(rxpt_pages_outstanding(), 0);

	/* A clone outlives it: the clone's metadata is apart, and its head
	 * reference keeps the slot (with the dead metadata) alive. */
	p = mkpkt(pp, 300, 22);
	c = rxp_pkt_clone(p);
	assert_non_null(c);
	assert_false(c->flags & (RXP_PKT_F_EMBED | RXP_PKT_F_HOMEREF));
	rxp_pkt_consume(p);
	assert_int_equal(rxp_pktpool_pkts_outstanding(pp), 1);
	assert_int_equal(rxp_pktpool_bufs_outstanding(pp), 1);
	check_bytes(c, 22, 0);
	rxp_pkt_consume(c);
	assert_int_equal(rxp_pktpool_bufs_outstanding(pp), 0);

	/* Its data taken by another packet: the slot goes with the frag, and
	 * the taker's truesize carries all of it, metadata included. */
	to = mkpkt(pp, 1800, 23);
	p = mkpkt(pp, 1000, 23 + 1800 * 131u);
	home = p->head_page;
	ts = to->truesize + p->truesize;
	assert_int_equal(rxp_pkt_try_coalesce(to, p), RXP_COALESCE_STOLEN);
	assert_ptr_equal(to->frags[0].page, home);
	assert_int_equal(to->truesize, ts);
	assert_int_equal(rxp_pktpool_pkts_outstanding(pp), 1);
	assert_int_equal(rxp_pktpool_bufs_outstanding(pp), 2);
	check_bytes(to, 23, 0);

	/* and one whose head had moved: its own hold on its slot goes with
	 * it, and the truesize it passes on is without its metadata */
	p = mkpkt(pp, 100, 23 + 2800 * 131u);
	addfrag(p, 2000, 23, 2900);
	assert_int_equal(rxp_pkt_linearize(p), 0);
	assert_true(p->flags & RXP_PKT_F_HOMEREF);
	assert_int_equal(rxp_pktpool_bufs_outstanding(pp), 4);
	ts = to->truesize + p->truesize - RXP_PKT_META_TRUESIZE;
	assert_int_equal(rxp_pkt_try_coalesce(to, p), RXP_COALESCE_STOLEN);
	assert_int_equal(to->truesize, ts);
	assert_int_equal(rxp_pktpool_bufs_outstanding(pp), 3);
	assert_int_equal(to->len, 4900);
	check_bytes(to, 23, 0);
	rxp_pkt_consume(to);
	rxp_pktpool_get_stats(pp, &st);
	assert_int_equal(st.embedded_alloc, st.embedded_free);
	rxpt_pktpool_teardown(pp);
}

static void test_queue(void **state)
{
	struct rxp_pktpool *pp = mkpool();
	struct rxp_pkt_queue q;
	struct rxp_pktpool_stats st;

	rxp_pkt_queue_init(&q);
	for (int i = 0; i < 5; i++)
		rxp_pkt_enqueue(&q, mkpkt(pp, 10, 0));
	assert_int_equal(q.len, 5);
	rxp_pkt_consume(rxp_pkt_dequeue(&q));
	rxp_pkt_queue_purge(&q, RXP_DROP_FRAG_TIMEOUT);
	assert_int_equal(q.len, 0);
	assert_null(rxp_pkt_dequeue(&q));
	rxp_pktpool_get_stats(pp, &st);
	assert_int_equal(st.drops[RXP_DROP_FRAG_TIMEOUT], 4);
	rxpt_pktpool_teardown(pp);
}

/* rxp_csum_partial against the RFC 1071 definition, 16 bits at a time. */
static void test_csum_partial_reference(void **state)
{
	struct rxpt_rng r;
	uint8_t buf[300];

	rxpt_rng_seed(&r, 42);
	for (int iter = 0; iter < 20000; iter++) {
		uint32_t len = (uint32_t)rxpt_rng_below(&r, sizeof(buf));
		uint32_t init = (uint32_t)rxpt_rng_next(&r);
		uint64_t ref = init;

		for (uint32_t i = 0; i < len; i++)
			buf[i] = (uint8_t)(iter % 3 ? rxpt_rng_next(&r) : 0xff);
		for (uint32_t i = 0; i + 1 < len; i += 2)
			ref += (uint32_t)buf[i] | (uint32_t)buf[i + 1] << 8;
		if (len & 1)
			ref += buf[len - 1];
		while (ref >> 32)
			ref = (ref & 0xffffffffu) + (ref >> 32);
		assert_int_equal(rxp_csum_fold(rxp_csum_partial(buf, len, init)),
				 rxp_csum_fold((uint32_t)ref));
	}
}

static void test_csum_odd_boundaries(void **state)
{
	struct rxp_pktpool *pp = mkpool();
	struct rxp_pkt *p = mkpkt(pp, 13, 21);
	uint8_t flat[600];

	addfrag(p, 7, 21, 13);
	addfrag(p, 100, 21, 20);
	rxp_pkt_chain(p, mkpkt(pp, 33, 21 + 120 * 131u));
	assert_int_equal(rxp_pkt_copy_bits(p, 0, flat, p->len), 0);
	for (uint32_t off = 0; off < p->len; off += 3)
		for (uint32_t len = 0; off + len <= p->len; len += 5) {
			int64_t s = rxp_pkt_csum(p, off, len, 0);

			assert_true(s >= 0);
			assert_int_equal(rxp_csum_fold((uint32_t)s),
					 rxp_csum_fold(rxp_csum_partial(flat + off, len, 0)));
		}
	assert_int_equal(rxp_pkt_csum(p, 100, p->len, 0), -1);
	rxp_pkt_consume(p);
	rxpt_pktpool_teardown(pp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_alloc_headroom_tailroom),
		cmocka_unit_test(test_copy_bits_across_boundaries),
		cmocka_unit_test(test_clone_refcounts),
		cmocka_unit_test(test_trim),
		cmocka_unit_test(test_may_pull_and_linearize),
		cmocka_unit_test(test_add_frag_limits),
		cmocka_unit_test(test_coalesce),
		cmocka_unit_test(test_coalesce_cloned_from),
		cmocka_unit_test(test_coalesce_linear_slices),
		cmocka_unit_test(test_chain_empty_consumed),
		cmocka_unit_test(test_build_and_drop_counts),
		cmocka_unit_test(test_exhaustion),
		cmocka_unit_test(test_embedded_lifetimes),
		cmocka_unit_test(test_queue),
		cmocka_unit_test(test_csum_odd_boundaries),
		cmocka_unit_test(test_csum_partial_reference),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
