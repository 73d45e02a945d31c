/*
 * Unit tests for the packet layer's per-fragment fast paths (src/buf/pkt.c):
 * rxp_pkt_build_frag, the try_coalesce fast path (steal, extend a frag that
 * continues on the same page, fall back when frags are full), coalescing a
 * whole list (the same outcome as one packet at a time), page batches,
 * may_pull reusing headroom, and the partial initialisation of new metadata.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rxptest.h"

static struct rxp_pktpool *mkpool(void)
{
	struct rxp_pktpool_config c = {.name = "t", .n_pkts = 64, .n_bufs = 64, .n_large = 4};
	struct rxp_pktpool *pp = rxp_pktpool_create(&c);

	assert_non_null(pp);
	return pp;
}

static uint64_t drops(struct rxp_pktpool *pp, enum rxp_drop_reason r)
{
	struct rxp_pktpool_stats st;

	rxp_pktpool_get_stats(pp, &st);
	return st.drops[r];
}

/* A fragment as a reassembler sees it: an 8-byte header in a head slice of
 * hp (pulled off), then n bytes of src at off (one reference taken). */
static struct rxp_pkt *frag(struct rxp_pktpool *pp, struct rxp_page *hp, uint32_t slot,
			    struct rxp_page *src, uint32_t off, uint32_t n)
{
	struct rxp_pkt *f;

	rxp_page_get(hp);
	rxp_page_get(src);
	f = rxp_pkt_build_frag(pp, hp, slot * 64, 64, 32, 8, src, off, n);
	assert_non_null(f);
	assert_non_null(rxp_pkt_pull(f, 8));
	return f;
}

static void check_src(const struct rxp_pkt *p, const struct rxp_page *src, uint32_t off)
{
	uint8_t *buf = malloc(p->len + 1);

	assert_int_equal(rxp_pkt_copy_bits(p, 0, buf, p->len), 0);
	assert_memory_equal(buf, src->addr + off, p->len);
	free(buf);
}

static void test_build_frag(void **state)
{
	struct rxp_pktpool *pp = mkpool();
	struct rxp_page *hp = rxpt_page_new(256), *src = rxpt_page_new(4096);
	struct rxp_pkt *f;

	rxpt_fill(src->addr, 4096, 3);
	memset(hp->addr, 0xee, 256);
	rxp_page_get(hp);
	rxp_page_get(src);
	f = rxp_pkt_build_frag(pp, hp, 64, 64, 32, 8, src, 100, 1000);
	assert_non_null(f);
	assert_ptr_equal(f->head, hp->addr + 64);
	assert_ptr_equal(f->data, hp->addr + 96);
	assert_int_equal(rxp_pkt_headlen(f), 8);
	assert_int_equal(f->len, 1008);
	assert_int_equal(f->data_len, 1000);
	assert_int_equal(f->nr_frags, 1);
	assert_ptr_equal(f->frags[0].page, src);
	assert_int_equal(f->frags[0].off, 100);
	assert_false(f->flags & RXP_PKT_F_RINGBUF); /* the caller's own buffer */
	assert_int_equal(f->truesize, RXP_PKT_META_TRUESIZE + 64 + 1000);
	assert_int_equal(rxp_page_refcount(hp), 2);
	assert_int_equal(rxp_page_refcount(src), 2);
	rxp_pkt_pull(f, 8);
	check_src(f, src, 100);
	rxp_pkt_consume(f);
	assert_int_equal(rxp_page_refcount(hp), 1);
	assert_int_equal(rxp_page_refcount(src), 1);

	/* Bad ranges: both references consumed, counted rx_bad_desc. */
	const struct {
		uint32_t buf_off, buf_size, data_off, len, off, size;
	} bad[] = {
		{200, 64, 0, 0, 0, 10}, /* head past the page */
		{0, 64, 60, 8, 0, 10}, /* data past the head */
		{0, 64, 0, 8, 0, 0}, /* empty piece */
		{0, 64, 0, 8, 4000, 200}, /* piece past its page */
	};
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		rxp_page_get(hp);
		rxp_page_get(src);
		errno = 0;
		assert_null(rxp_pkt_build_frag(pp, hp, bad[i].buf_off, bad[i].buf_size,
					       bad[i].data_off, bad[i].len, src, bad[i].off,
					       bad[i].size));
		assert_int_equal(errno, EINVAL);
		assert_int_equal(rxp_page_refcount(hp), 1);
		assert_int_equal(rxp_page_refcount(src), 1);
	}
	assert_int_equal(drops(pp, RXP_DROP_RX_BAD_DESC), 4);

	/* No metadata left (clones take it, where a small packet may keep its
	 * own in its buffer): both references consumed, counted nomem. */
	struct rxp_pkt *all[65], *base = rxp_pkt_alloc(pp, 10);
	unsigned n = 0;

	assert_non_null(base);
	while (n < 65 && (all[n] = rxp_pkt_clone(base)))
		n++;
	assert_true(n > 0 && n < 65);
	rxp_page_get(hp);
	rxp_page_get(src);
	assert_null(rxp_pkt_build_frag(pp, hp, 0, 64, 0, 8, src, 0, 10));
	assert_int_equal(errno, ENOMEM);
	assert_int_equal(drops(pp, RXP_DROP_NOMEM), 1);
	assert_int_equal(rxp_page_refcount(hp), 1);
	assert_int_equal(rxp_page_refcount(src), 1);
	while (n)
		rxp_pkt_consume(all[--n]);
	rxp_pkt_consume(base);
	rxp_page_put(hp);
	rxp_page_put(src);
	rxpt_pktpool_teardown(pp);
	assert_int_equal(rxpt_pages_outstanding(), 0);
}

/* A recycled metadata object comes back with its hot fields reset. */
static void test_meta_reinit(void **state)
{
	struct rxp_pktpool *pp = mkpool();
	struct rxp_pkt *p = rxp_pkt_alloc(pp, 100), *q;

	assert_non_null(p);
	p->hash = 0xdeadbeef;
	p->queue = 7;
	p->protocol = 0x800;
	p->tstamp_ns = 123;
	p->network_off = 14;
	p->transport_off = 34;
	p->flags |= RXP_PKT_F_RINGBUF;
	p->next = p;
	rxp_pkt_consume(p);
	q = rxp_pkt_alloc(pp, 100);
	/* The same object, back from this thread's cache (LIFO): recycled
	 * metadata, which must come back cleared. */
	assert_ptr_equal(q, p);
	assert_int_equal(q->hash, 0);
	assert_int_equal(q->queue, 0);
	assert_int_equal(q->protocol, 0);
	assert_int_equal(q->tstamp_ns, 0);
	assert_int_equal(q->network_off, 0xffff);
	assert_int_equal(q->transport_off, 0xffff);
	/* (but for the pool's own mark of where the metadata lives) */
	assert_int_equal(q->flags, getenv("RXP_PKT_META_APART") ? 0 : RXP_PKT_F_EMBED);
	assert_int_equal(q->nr_frags, 0);
	assert_int_equal(q->len, 0);
	assert_int_equal(q->data_len, 0);
	assert_null(q->next);
	assert_null(q->frag_list);
	assert_null(q->frag_tail);
	rxp_pkt_consume(q);
	rxpt_pktpool_teardown(pp);
}

/* rxp_pkt_alloc's one-piece path (metadata and a small buffer from this
 * thread's caches) gives the packet the general path gives; with the small
 * buffers gone it falls back to a large one, and with none left it fails,
 * counted. Freeing puts each object back where it came from. */
static void test_alloc_paths(void **state)
{
	struct rxp_pktpool_config c = {.name = "t", .n_pkts = 16, .n_bufs = 4, .n_large = 2};
	struct rxp_pktpool *pp = rxp_pktpool_create(&c);
	struct rxp_pkt *v[6], *cp;
	struct rxp_pktpool_stats st;
	unsigned hr, bs;

	assert_non_null(pp);
	hr = rxp_pktpool_headroom(pp);
	bs = rxp_pktpool_buf_size(pp);
	for (int i = 0; i < 4; i++) {
		if (i == 3) {
			/* rxp_pkt_copy allocates through the general path
			 * (alloc_headroom): with a small buffer left, the
			 * same buffer class, truesize and room as the cache
			 * path's packets */
			memset(rxp_pkt_put(v[0], 60), 0xab, 60);
			rxp_pkt_pull(v[0], 10);
			cp = rxp_pkt_copy(v[0]);
			assert_non_null(cp);
			assert_int_equal(cp->truesize, v[1]->truesize);
			assert_int_equal(rxp_pkt_headroom(cp), hr + 10);
			assert_int_equal(rxp_pkt_headroom(cp) + cp->len + rxp_pkt_tailroom(cp), bs);
			assert_int_equal(rxp_page_refcount(cp->head_page), 1);
			rxp_pkt_consume(cp);
			cp = NULL;
		}
		v[i] = rxp_pkt_alloc(pp, 100);
		assert_non_null(v[i]);
		assert_int_equal(rxp_pkt_headroom(v[i]), hr);
		assert_int_equal(rxp_pkt_tailroom(v[i]), bs - hr);
		assert_int_equal(v[i]->len, 0);
		assert_int_equal(rxp_page_refcount(v[i]->head_page), 1);
		assert_ptr_equal(v[i]->pool, pp);
		assert_int_equal(v[i]->network_off, 0xffff);
	}
	/* no small buffer is left: a copy holds a large one */
	cp = rxp_pkt_copy(v[0]);
	assert_non_null(cp);
	assert_true(cp->truesize > v[0]->truesize);
	rxp_pkt_consume(cp);
	cp = NULL;
	/* the small buffers are all out: a large one, as the general path
	 * falls back to */
	v[4] = rxp_pkt_alloc(pp, 100);
	assert_non_null(v[4]);
	assert_int_equal(rxp_pkt_headroom(v[4]), hr);
	assert_true(rxp_pkt_tailroom(v[4]) > bs - hr);
	assert_true(v[4]->truesize > v[1]->truesize);
	v[5] = rxp_pkt_alloc(pp, 100);
	assert_non_null(v[5]);
	rxp_pktpool_get_stats(pp, &st);
	assert_int_equal(st.large.alloc_fail, 0);
	/* nothing left at all */
	assert_null(rxp_pkt_alloc(pp, 100));
	rxp_pktpool_get_stats(pp, &st);
	assert_true(st.large.alloc_fail >= 1);
	/* freed, each to its own pool; a small one comes back first */
	rxp_pkt_consume(v[1]);
	cp = rxp_pkt_alloc(pp, 100);
	assert_non_null(cp);
	assert_int_equal(rxp_pkt_tailroom(cp), bs - hr);
	assert_int_equal(cp->truesize, v[2]->truesize);
	rxp_pkt_consume(cp);
	for (int i = 0; i < 6; i++)
		if (i != 1)
			rxp_pkt_consume(v[i]);
	assert_int_equal(rxp_pktpool_pkts_outstanding(pp), 0);
	assert_int_equal(rxp_pktpool_bufs_outstanding(pp), 0);
	rxpt_pktpool_teardown(pp);
}

/* Fragments of one message joined the way a reassembler joins them. */
static void test_coalesce_fast(void **state)
{
	struct rxp_pktpool *pp = mkpool();
	struct rxp_page *hp = rxpt_page_new(64 * 32), *src = rxpt_page_new(65536);
	struct rxp_page_batch pb = {{NULL, NULL}, {0, 0}};
	static uint8_t want[65536];
	struct rxp_pkt *to, *f;
	uint32_t ts, wl = 0;

#define WANT(o, n) (memcpy(want + wl, src->addr + (o), (n)), wl += (n))
	rxpt_fill(src->addr, 65536, 9);
	memset(hp->addr, 0, 64 * 32);
	to = frag(pp, hp, 0, src, 0, 1000);
	WANT(0, 1000);
	/* The next slice continues the last frag: it grows, no slot taken. */
	ts = to->truesize;
	f = frag(pp, hp, 1, src, 1000, 500);
	WANT(1000, 500);
	assert_int_equal(rxp_pkt_try_coalesce_batch(to, f, &pb), RXP_COALESCE_STOLEN);
	assert_int_equal(to->nr_frags, 1);
	assert_int_equal(to->frags[0].size, 1500);
	assert_int_equal(to->len, 1500);
	assert_int_equal(to->data_len, 1500);
	assert_int_equal(to->truesize, ts + 64 + 500);
	/* The batch holds f's head and data references until flushed. */
	assert_ptr_equal(pb.page[0], hp);
	assert_int_equal(pb.n[0], 1);
	assert_ptr_equal(pb.page[1], src);
	assert_int_equal(pb.n[1], 1);
	assert_int_equal(rxp_page_refcount(hp), 3);
	assert_int_equal(rxp_page_refcount(src), 3);
	assert_int_equal(rxp_pktpool_pkts_outstanding(pp), 1);
	/* A gap: a new frag. */
	f = frag(pp, hp, 2, src, 2000, 100);
	WANT(2000, 100);
	assert_int_equal(rxp_pkt_try_coalesce_batch(to, f, &pb), RXP_COALESCE_STOLEN);
	assert_int_equal(to->nr_frags, 2);
	assert_int_equal(to->len, 1600);
	assert_int_equal(pb.n[0] + pb.n[1], 3);
	rxp_page_batch_flush(&pb);
	assert_null(pb.page[0]);
	assert_null(pb.page[1]);
	assert_int_equal(rxp_page_refcount(hp), 2); /* ours + to's head */
	assert_int_equal(rxp_page_refcount(src), 3); /* ours + to's two frags */
	/* Fill every frag slot with gapped slices; the next one is chained,
	 * and later ones join the chained member. */
	uint32_t off = 2200, slot = 3, len = to->len;

	while (to->nr_frags < RXP_MAX_FRAGS) {
		f = frag(pp, hp, slot++, src, off, 100);
		WANT(off, 100);
		assert_int_equal(rxp_pkt_try_coalesce(to, f), RXP_COALESCE_STOLEN);
		off += 200;
		len += 100;
	}
	f = frag(pp, hp, slot++, src, off, 100);
	WANT(off, 100);
	assert_int_equal(rxp_pkt_try_coalesce(to, f), RXP_COALESCE_CHAINED);
	off += 100;
	len += 100;
	f = frag(pp, hp, slot++, src, off, 300); /* continues the member's frag */
	WANT(off, 300);
	assert_int_equal(rxp_pkt_try_coalesce_batch(to, f, &pb), RXP_COALESCE_STOLEN);
	len += 300;
	assert_int_equal(to->len, len);
	assert_non_null(to->frag_list);
	assert_int_equal(to->frag_list->nr_frags, 1);
	assert_int_equal(to->frag_list->frags[0].size, 400);
	assert_int_equal(to->frag_list->len, 400);
	rxp_page_batch_flush(&pb);
	assert_int_equal(wl, to->len);
	{
		uint8_t *got = malloc(wl);

		assert_int_equal(rxp_pkt_copy_bits(to, 0, got, wl), 0);
		assert_memory_equal(got, want, wl);
		free(got);
	}
#undef WANT
	rxp_pkt_consume(to);
	assert_int_equal(rxp_page_refcount(hp), 1);
	assert_int_equal(rxp_page_refcount(src), 1);
	rxp_page_put(hp);
	rxp_page_put(src);
	rxpt_pktpool_teardown(pp);
	assert_int_equal(rxpt_pages_outstanding(), 0);
}

/* What the fast path leaves to the general one, with the outcomes the API
 * defines: a linear to with tailroom (copied), a cloned from (its frag is
 * stolen, its clone keeps its own reference), a from whose header is still
 * linear (head and frag both taken as frags). */
static void test_coalesce_fast_refusals(void **state)
{
	struct rxp_pktpool *pp = mkpool();
	struct rxp_page *hp = rxpt_page_new(64 * 8), *src = rxpt_page_new(8192);
	struct rxp_pkt *to, *f, *c;

	rxpt_fill(src->addr, 8192, 1);
	memset(hp->addr, 0, 64 * 8);
	/* Linear to with room: copied. */
	to = rxp_pkt_alloc(pp, 2000);
	memcpy(rxp_pkt_put(to, 100), src->addr, 100);
	f = frag(pp, hp, 0, src, 100, 200);
	assert_int_equal(rxp_pkt_try_coalesce(to, f), RXP_COALESCE_COPIED);
	check_src(to, src, 0);
	rxp_pkt_consume(to);
	/* A cloned from: its frag is stolen, its clone keeps its own. */
	to = frag(pp, hp, 1, src, 0, 100);
	f = frag(pp, hp, 2, src, 100, 100);
	c = rxp_pkt_clone(f);
	assert_int_equal(rxp_pkt_try_coalesce(to, f), RXP_COALESCE_STOLEN);
	assert_int_equal(to->nr_frags, 1);
	check_src(to, src, 0);
	check_src(c, src, 100);
	rxp_pkt_consume(c);
	rxp_pkt_consume(to);
	/* from with its header still linear: the general path (head stolen). */
	to = frag(pp, hp, 3, src, 0, 100);
	rxp_page_get(hp);
	rxp_page_get(src);
	f = rxp_pkt_build_frag(pp, hp, 4 * 64, 64, 32, 8, src, 108, 100);
	memcpy(f->data, src->addr + 100, 8);
	assert_int_equal(rxp_pkt_try_coalesce(to, f), RXP_COALESCE_STOLEN);
	assert_int_equal(to->nr_frags, 3);
	check_src(to, src, 0);
	rxp_pkt_consume(to);
	rxp_page_put(hp);
	rxp_page_put(src);
	rxpt_pktpool_teardown(pp);
	assert_int_equal(rxpt_pages_outstanding(), 0);
}

static void test_page_batch(void **state)
{
	struct rxp_page *a = rxpt_page_new(8), *b = rxpt_page_new(8), *c = rxpt_page_new(8);
	struct rxp_page_batch pb = {{NULL, NULL}, {0, 0}};

	for (int i = 0; i < 3; i++) {
		rxp_page_get(a);
		rxp_page_batch_add(&pb, a);
		rxp_page_get(b);
		rxp_page_batch_add(&pb, b);
	}
	assert_int_equal(rxp_page_refcount(a), 4);
	assert_int_equal(rxp_page_refcount(b), 4);
	/* A third page evicts the older one (a), whose references go. */
	rxp_page_get(c);
	rxp_page_batch_add(&pb, c);
	assert_int_equal(rxp_page_refcount(a), 1);
	assert_int_equal(rxp_page_refcount(b), 4);
	/* The last references: the batch releases the pages. */
	rxp_page_batch_add(&pb, c);
	rxp_page_batch_flush(&pb);
	assert_int_equal(rxp_page_refcount(b), 1);
	rxp_page_batch_flush(&pb); /* empty: nothing */
	rxp_page_put(a);
	rxp_page_put(b);
	assert_int_equal(rxpt_pages_outstanding(), 0);
}

/* An empty linear part takes the bytes into its headroom, not a new head
 * buffer, unless a header offset or a clone forbids writing there. */
static void test_may_pull_headroom(void **state)
{
	struct rxp_pktpool *pp = mkpool();
	struct rxp_page *hp = rxpt_page_new(64 * 8), *src = rxpt_page_new(8192);
	struct rxp_pkt *p, *c;
	uint64_t bufs;

	rxpt_fill(src->addr, 8192, 5);
	memset(hp->addr, 0, 64 * 8);
	/* 40 bytes into a 64-byte head with nothing linear and 24 bytes of
	 * tailroom: no room for the 64 kept, so a new head. */
	p = frag(pp, hp, 0, src, 0, 1000);
	bufs = rxp_pktpool_bufs_outstanding(pp);
	assert_true(rxp_pkt_may_pull(p, 40));
	assert_int_equal(rxp_pktpool_bufs_outstanding(pp), bufs + 1);
	check_src(p, src, 0);
	rxp_pkt_consume(p);

	/* A 128-byte head: 40 bytes fit before the 64 kept. */
	rxp_page_get(hp);
	rxp_page_get(src);
	p = rxp_pkt_build_frag(pp, hp, 128, 128, 96, 8, src, 0, 1000);
	rxp_pkt_pull(p, 8);
	bufs = rxp_pktpool_bufs_outstanding(pp);
	assert_true(rxp_pkt_may_pull(p, 40));
	assert_int_equal(rxp_pktpool_bufs_outstanding(pp), bufs);
	assert_int_equal(rxp_pkt_headlen(p), 40);
	assert_ptr_equal(p->tail, p->end);
	assert_int_equal(rxp_pkt_headroom(p), 88);
	assert_int_equal(p->frags[0].off, 40);
	assert_int_equal(p->nr_frags, 1);
	check_src(p, src, 0);
	rxp_pkt_consume(p);

	/* The same with a network header offset set: a new head. */
	rxp_page_get(hp);
	rxp_page_get(src);
	p = rxp_pkt_build_frag(pp, hp, 128, 128, 96, 8, src, 0, 1000);
	rxp_pkt_pull(p, 8);
	p->network_off = 80;
	bufs = rxp_pktpool_bufs_outstanding(pp);
	assert_true(rxp_pkt_may_pull(p, 40));
	assert_int_equal(rxp_pktpool_bufs_outstanding(pp), bufs + 1);
	assert_int_equal(rxp_pkt_headroom(p), 104);
	check_src(p, src, 0);
	rxp_pkt_consume(p);

	/* Cloned: a private head; the clone keeps its view. */
	rxp_page_get(hp);
	rxp_page_get(src);
	p = rxp_pkt_build_frag(pp, hp, 128, 128, 96, 8, src, 0, 1000);
	rxp_pkt_pull(p, 8);
	c = rxp_pkt_clone(p);
	bufs = rxp_pktpool_bufs_outstanding(pp);
	assert_true(rxp_pkt_may_pull(p, 40));
	assert_int_equal(rxp_pktpool_bufs_outstanding(pp), bufs + 1);
	check_src(p, src, 0);
	check_src(c, src, 0);
	rxp_pkt_consume(c);
	rxp_pkt_consume(p);

	/* Pulling across whole frags: eaten ones go, the rest move down. */
	p = frag(pp, hp, 0, src, 0, 10);
	for (uint32_t i = 0; i < 4; i++) {
		struct rxp_pkt *f = frag(pp, hp, 1 + i, src, 20 + 20 * i, 10);

		assert_int_equal(rxp_pkt_try_coalesce(p, f), RXP_COALESCE_STOLEN);
	}
	assert_int_equal(p->nr_frags, 5);
	assert_true(rxp_pkt_may_pull(p, 25));
	assert_int_equal(rxp_pkt_headlen(p), 25);
	assert_int_equal(p->nr_frags, 3);
	assert_int_equal(p->frags[0].size, 5);
	assert_int_equal(p->len, 50);
	{
		uint8_t want[50], got[50];

		for (uint32_t i = 0; i < 5; i++)
			memcpy(want + 10 * i, src->addr + (i ? 20 * i : 0), 10);
		assert_int_equal(rxp_pkt_copy_bits(p, 0, got, 50), 0);
		assert_memory_equal(got, want, 50);
	}
	rxp_pkt_consume(p);
	rxp_page_put(hp);
	rxp_page_put(src);
	rxpt_pktpool_teardown(pp);
	assert_int_equal(rxpt_pages_outstanding(), 0);
}

/* One side of test_coalesce_list: its pools and pages. */
struct clist_side {
	struct rxp_pktpool *pp, *pp2;
	struct rxp_page *pg, *hp;
	struct rxp_pkt *to, *list;
	struct rxp_pkt *clones[32]; /* the other halves of cloned members */
	unsigned nclones;
};

#define CLIST_PG 65536u

/* A side's two pools and its two test pages. */
static void clist_side_init(struct clist_side *sd)
{
	struct rxp_pktpool_config c = {.name = "t2", .n_pkts = 64, .n_bufs = 8};

	sd->pp = mkpool();
	sd->pp2 = rxp_pktpool_create(&c);
	assert_non_null(sd->pp2);
	sd->pg = rxpt_page_new(CLIST_PG);
	sd->hp = rxpt_page_new(64 * 64);
}

/* to (linear, a fragment, or with a frag_list member) and a list of
 * packets, all from the seed, of the kinds a coalescing caller meets:
 * linear slices of one page (continuing the last slice or after a gap),
 * small pool packets (copied into tailroom while to has some), fragments
 * with a header slice and one data frag, pool packets of their own buffer,
 * linear slices made by a second pool, empty packets, and cloned slices. */
static void clist_make_kinds(struct clist_side *sd, uint64_t seed, bool plain)
{
	struct rxpt_rng r;
	struct rxp_pkt **link = &sd->list;
	uint32_t cursor = 0, slot = 0, n;

	rxpt_rng_seed(&r, seed);
	clist_side_init(sd);
	rxpt_fill(sd->pg->addr, CLIST_PG, (uint32_t)seed);
	memset(sd->hp->addr, 0, 64 * 64);
	if (plain || rxpt_rng_below(&r, 3)) {
		/* (plain: little tailroom, as a full-size first fragment) */
		uint32_t l = plain ? 1800 + (uint32_t)rxpt_rng_below(&r, 101)
				   : 1 + (uint32_t)rxpt_rng_below(&r, 1900);

		sd->to = rxp_pkt_alloc(sd->pp, l);
		assert_non_null(sd->to);
		rxpt_fill(rxp_pkt_put(sd->to, l), l, (uint32_t)seed + 1);
	} else {
		sd->to = frag(sd->pp, sd->hp, slot++, sd->pg, 0, 100);
		cursor = 100;
	}
	if (!plain && rxpt_rng_below(&r, 4) == 0) {
		struct rxp_pkt *m = rxp_pkt_alloc(sd->pp, 50);

		assert_non_null(m);
		rxpt_fill(rxp_pkt_put(m, 50), 50, (uint32_t)seed + 2);
		rxp_pkt_chain(sd->to, m);
		assert_non_null(sd->to->frag_list);
	}
	n = 1 + (uint32_t)rxpt_rng_below(&r, 30);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t kind = (uint32_t)rxpt_rng_below(&r, plain ? 7 : 12), len;
		struct rxp_pkt *p;

		if (kind < 5 || kind == 9 || kind == 11) {
			/* a slice of pg: [cursor, + len), its head starting
			 * up to 40 bytes before data */
			uint32_t pre = (uint32_t)rxpt_rng_below(&r, 41);

			len = 1 + (uint32_t)rxpt_rng_below(&r, 600);
			if (plain ? rxpt_rng_below(&r, 8) != 0 : rxpt_rng_below(&r, 3) == 0)
				cursor += 8 * ((uint32_t)plain + (uint32_t)rxpt_rng_below(&r, 20));
			if (cursor < pre || cursor + len > CLIST_PG)
				cursor = 64;
			rxp_page_get(sd->pg);
			p = rxp_pkt_build(kind == 9 ? sd->pp2 : sd->pp, sd->pg, cursor - pre,
					  pre + len, pre, len);
			cursor += len;
			if (kind == 11) {
				assert_non_null(p);
				sd->clones[sd->nclones] = rxp_pkt_clone(p);
				assert_non_null(sd->clones[sd->nclones++]);
			}
		} else if (kind == 10) {
			p = rxp_pkt_alloc(sd->pp, 0); /* empty */
		} else if (kind < 7) {
			len = 1 + (uint32_t)rxpt_rng_below(&r, kind == 5 ? 64 : 1500);
			p = rxp_pkt_alloc(sd->pp, len);
			assert_non_null(p);
			rxpt_fill(rxp_pkt_put(p, len), len, (uint32_t)seed + i);
		} else {
			len = 1 + (uint32_t)rxpt_rng_below(&r, 400);
			if (cursor + len > CLIST_PG)
				cursor = 64;
			p = frag(sd->pp, sd->hp, slot++ % 64, sd->pg, cursor, len);
			cursor += len;
		}
		assert_non_null(p);
		*link = p;
		link = &p->next;
	}
	*link = NULL;
}

/* Any of those kinds, or (plain) to linear and no frag_list, and only
 * slices and pool packets: what a reassembler's fragments are. */
static void clist_make(struct clist_side *sd, uint64_t seed)
{
	clist_make_kinds(sd, seed, false);
}

static uint64_t consumed(struct rxp_pktpool *pp)
{
	struct rxp_pktpool_stats st;

	rxp_pktpool_get_stats(pp, &st);
	return st.consumed;
}

/* Free what a side holds; its pools are torn down once both sides' pages
 * are back (the teardown assertion counts every test page). */
static void clist_release(struct clist_side *sd)
{
	for (unsigned i = 0; i < sd->nclones; i++)
		rxp_pkt_consume(sd->clones[i]);
	rxp_pkt_consume(sd->to);
	assert_int_equal(rxp_page_refcount(sd->pg), 1);
	rxp_page_put(sd->pg);
	rxp_page_put(sd->hp);
}

static void clist_teardown(struct clist_side *sd)
{
	rxpt_pktpool_teardown(sd->pp);
	rxpt_pktpool_teardown(sd->pp2);
}

/* Two sides that coalesced the same packets the same: the same bytes, the
 * same frags (page, offset, size), the same frag_list, len, data_len and
 * truesize, the same page references and the same packets consumed. */
static void clist_compare(struct clist_side *a_, struct clist_side *b_)
{
	struct clist_side a = *a_, b = *b_;
	struct rxp_pkt *ma, *mb;
	uint8_t *ba, *bb;

	assert_int_equal(a.to->len, b.to->len);
	assert_int_equal(a.to->data_len, b.to->data_len);
	assert_int_equal(a.to->truesize, b.to->truesize);
	assert_int_equal(rxp_pkt_headlen(a.to), rxp_pkt_headlen(b.to));
	for (ma = a.to, mb = b.to; ma && mb; ma = ma == a.to ? a.to->frag_list : ma->next,
	    mb = mb == b.to ? b.to->frag_list : mb->next) {
		assert_int_equal(ma->len, mb->len);
		assert_int_equal(ma->nr_frags, mb->nr_frags);
		for (unsigned i = 0; i < ma->nr_frags; i++) {
			assert_int_equal(ma->frags[i].page == a.pg, mb->frags[i].page == b.pg);
			assert_int_equal(ma->frags[i].page == a.hp, mb->frags[i].page == b.hp);
			assert_int_equal(ma->frags[i].off, mb->frags[i].off);
			assert_int_equal(ma->frags[i].size, mb->frags[i].size);
		}
	}
	assert_null(ma);
	assert_null(mb);
	ba = malloc(a.to->len + 1);
	bb = malloc(b.to->len + 1);
	assert_int_equal(rxp_pkt_copy_bits(a.to, 0, ba, a.to->len), 0);
	assert_int_equal(rxp_pkt_copy_bits(b.to, 0, bb, b.to->len), 0);
	assert_memory_equal(ba, bb, a.to->len);
	free(ba);
	free(bb);
	assert_int_equal(rxp_page_refcount(a.pg), rxp_page_refcount(b.pg));
	assert_int_equal(rxp_page_refcount(a.hp), rxp_page_refcount(b.hp));
	assert_int_equal(consumed(a.pp), consumed(b.pp));
	assert_int_equal(consumed(a.pp2), consumed(b.pp2));
	assert_int_equal(rxp_pktpool_pkts_outstanding(a.pp), rxp_pktpool_pkts_outstanding(b.pp));
	assert_int_equal(rxp_pktpool_pkts_outstanding(a.pp2), rxp_pktpool_pkts_outstanding(b.pp2));
}

/* b's packets coalesced by rxp_pkt_coalesce_list, and a (whose batch is
 * pa) compared with it; both sides then freed and torn down. */
static void clist_against_list(struct clist_side *a, struct clist_side *b,
			       struct rxp_page_batch *pa)
{
	struct rxp_page_batch pb = {{NULL, NULL}, {0, 0}};

	rxp_pkt_coalesce_list(b->to, b->list, &pb);
	rxp_page_batch_flush(pa);
	rxp_page_batch_flush(&pb);
	clist_compare(a, b);
	clist_release(a);
	clist_release(b);
	clist_teardown(a);
	clist_teardown(b);
}

/* rxp_pkt_coalesce_list against try_coalesce_batch one packet at a time, on
 * the same lists from a seed: the same bytes, the same frags (page, offset,
 * size), the same frag_list, len, data_len and truesize, the same page
 * references and the same packets consumed. */
static void test_coalesce_list(void **state)
{
	uint64_t seed = rxpt_seed("coalesce_list");

	for (unsigned trial = 0; trial < 400; trial++) {
		struct clist_side a = {0}, b = {0};
		struct rxp_page_batch pa = {{NULL, NULL}, {0, 0}}, pb = {{NULL, NULL}, {0, 0}};
		struct rxp_pkt *p, *pn;

		clist_make(&a, seed + trial);
		clist_make(&b, seed + trial);
		rxp_pkt_coalesce_list(a.to, a.list, &pa);
		for (p = b.list; p; p = pn) {
			pn = p->next;
			p->next = NULL;
			rxp_pkt_try_coalesce_batch(b.to, p, &pb);
		}
		rxp_page_batch_flush(&pa);
		rxp_page_batch_flush(&pb);
		clist_compare(&a, &b);
		clist_release(&a);
		clist_release(&b);
		clist_teardown(&a);
		clist_teardown(&b);
	}
	assert_int_equal(rxpt_pages_outstanding(), 0);
}

/* rxp_pkt_coalesce_runs against rxp_pkt_coalesce_list, on the same
 * packets from a seed, the first side's cut into 1-8 runs linked backwards
 * (to first in run 0): when it takes them, the outcome is the list's;
 * when it does not, nothing has changed (to, and every run's links), and
 * the list form then gives the same outcome. Both ways are taken. */
static void test_coalesce_runs(void **state)
{
	uint64_t seed = rxpt_seed("coalesce_runs");
	unsigned taken = 0, refused = 0;

	for (unsigned trial = 0; trial < 600; trial++) {
		struct clist_side a = {0}, b = {0};
		struct rxp_page_batch pa = {{NULL, NULL}, {0, 0}};
		struct rxp_pkt *el[64], *tails[8], *p;
		unsigned n = 0, nr, cut[9], len0, dl0, ts0, nf0;
		struct rxpt_rng r;

		rxpt_rng_seed(&r, seed + trial + 1000);
		/* every other trial of a reassembler's kinds only, which
		 * the walk takes unless a slice continues the last or the
		 * first packet fits in to's tailroom */
		clist_make_kinds(&a, seed + trial, trial & 1);
		clist_make_kinds(&b, seed + trial, trial & 1);
		el[n++] = a.to;
		for (p = a.list; p; p = p->next)
			el[n++] = p;
		/* runs: [cut[i], cut[i + 1]), none empty, to first */
		nr = 1 + (unsigned)rxpt_rng_below(&r, n < 8 ? n : 8);
		cut[0] = 0;
		cut[nr] = n;
		for (unsigned i = 1; i < nr; i++)
			cut[i] = cut[i - 1] + 1 +
				 (unsigned)rxpt_rng_below(&r, n - cut[i - 1] - (nr - i));
		for (unsigned i = 0; i < nr; i++) {
			for (unsigned j = cut[i]; j < cut[i + 1]; j++)
				el[j]->next = j == cut[i] ? NULL : el[j - 1];
			tails[i] = el[cut[i + 1] - 1];
		}
		len0 = a.to->len;
		dl0 = a.to->data_len;
		ts0 = a.to->truesize;
		nf0 = a.to->nr_frags;
		if (rxp_pkt_coalesce_runs(a.to, tails, nr, n)) {
			taken++;
		} else {
			refused++;
			assert_int_equal(a.to->len, len0);
			assert_int_equal(a.to->data_len, dl0);
			assert_int_equal(a.to->truesize, ts0);
			assert_int_equal(a.to->nr_frags, nf0);
			for (unsigned i = 0; i < nr; i++)
				for (unsigned j = cut[i]; j < cut[i + 1]; j++)
					assert_ptr_equal(el[j]->next,
							 j == cut[i] ? NULL : el[j - 1]);
			/* the general way, as one forward list */
			for (unsigned j = 1; j < n; j++)
				el[j]->next = j + 1 < n ? el[j + 1] : NULL;
			el[0]->next = NULL;
			rxp_pkt_coalesce_list(a.to, n > 1 ? el[1] : NULL, &pa);
		}
		clist_against_list(&a, &b, &pa);
	}
	print_message("coalesce_runs: %u taken, %u refused\n", taken, refused);
	assert_true(taken >= 20);
	assert_true(refused >= 20);
	assert_int_equal(rxpt_pages_outstanding(), 0);
}

/* to and a list of 1-20 linear packets of 1-1900 bytes, all made by
 * rxp_pkt_alloc from one pool (at home unless RXP_PKT_META_APART), from
 * the seed; to is sometimes small (the first packet fits its tailroom) and
 * sometimes cloned (the clone kept in clones[]). */
static void clist_make_homes(struct clist_side *sd, uint64_t seed)
{
	struct rxpt_rng r;
	struct rxp_pkt **link = &sd->list;
	uint32_t n, l;

	rxpt_rng_seed(&r, seed);
	clist_side_init(sd);
	l = rxpt_rng_below(&r, 4) ? 1800 + (uint32_t)rxpt_rng_below(&r, 101)
				  : 1 + (uint32_t)rxpt_rng_below(&r, 1900);
	sd->to = rxp_pkt_alloc(sd->pp, l);
	assert_non_null(sd->to);
	rxpt_fill(rxp_pkt_put(sd->to, l), l, (uint32_t)seed + 1);
	if (rxpt_rng_below(&r, 10) == 0) {
		sd->clones[sd->nclones] = rxp_pkt_clone(sd->to);
		assert_non_null(sd->clones[sd->nclones]);
		sd->nclones++;
	}
	n = 1 + (uint32_t)rxpt_rng_below(&r, rxpt_rng_below(&r, 8) ? RXP_MAX_FRAGS : 20);
	for (uint32_t i = 0; i < n; i++) {
		struct rxp_pkt *p;

		l = 1 + (uint32_t)rxpt_rng_below(&r, 1900);
		p = rxp_pkt_alloc(sd->pp, l);
		assert_non_null(p);
		rxpt_fill(rxp_pkt_put(p, l), l, (uint32_t)seed + 10 + i);
		if (rxpt_rng_below(&r, 2))
			rxp_pkt_pull(p,
				     (uint32_t)rxpt_rng_below(&r, l)); /* data not at the start */
		*link = p;
		link = &p->next;
	}
}

/* rxp_pkt_coalesce_homes against rxp_pkt_coalesce_list, on the same
 * packets at home from a seed, told what a reassembler notes of each (its
 * data's offset in its buffer, its length, the truesize): when it takes
 * them, the outcome is the list's (the same frags, bytes, truesize,
 * consumed counts); when it does not (a cloned or linear-full to, the
 * first packet fitting to's tailroom, more than RXP_MAX_FRAGS packets),
 * nothing has changed, and the list form then gives the same outcome. */
static void test_coalesce_homes(void **state)
{
	uint64_t seed = rxpt_seed("coalesce_homes");
	bool apart = getenv("RXP_PKT_META_APART") != NULL;
	unsigned taken = 0, refused = 0;

	for (unsigned trial = 0; trial < 400; trial++) {
		struct clist_side a = {0}, b = {0};
		struct rxp_page_batch pa = {{NULL, NULL}, {0, 0}};
		struct rxp_pkt *pkts[24], *p;
		uint32_t doff[24], size[24], len = 0, ts = 0, len0, ts0;
		unsigned n = 0;

		clist_make_homes(&a, seed + trial);
		clist_make_homes(&b, seed + trial);
		for (p = a.list; p; p = p->next) {
			assert_int_equal(rxp_pkt_at_home(p), !apart);
			pkts[n] = p;
			doff[n] = rxp_pkt_data_page_off(p);
			size[n] = p->len;
			len += p->len;
			ts += p->truesize;
			n++;
		}
		len0 = a.to->len;
		ts0 = a.to->truesize;
		if (!apart && rxp_pkt_coalesce_homes(a.to, pkts, doff, size, n, len, ts)) {
			taken++;
			assert_int_equal(a.to->nr_frags, n);
			for (unsigned k = 0; k < n; k++)
				assert_ptr_equal((uint8_t *)a.to->frags[k].page,
						 (uint8_t *)pkts[k] - RXP_PKT_HOME_OFF);
		} else {
			refused += !apart;
			assert_int_equal(a.to->len, len0);
			assert_int_equal(a.to->truesize, ts0);
			assert_int_equal(a.to->nr_frags, 0);
			for (unsigned k = 0; k + 1 < n; k++)
				assert_ptr_equal(pkts[k]->next, pkts[k + 1]);
			rxp_pkt_coalesce_list(a.to, a.list, &pa);
		}
		clist_against_list(&a, &b, &pa);
	}
	print_message("coalesce_homes: %u taken, %u refused\n", taken, refused);
	if (!apart) {
		assert_true(taken >= 20);
		assert_true(refused >= 20);
	}
	assert_int_equal(rxpt_pages_outstanding(), 0);
}

/* What the list form does in one batch: gapped linear slices of one page
 * each become a frag of to (no byte copied), their metadata goes back to
 * the pool and counts as consumed; a slice that continues the last one
 * grows that frag. */
static void test_coalesce_list_batch(void **state)
{
	struct rxp_pktpool *pp = mkpool();
	struct rxp_page *pg = rxpt_page_new(8192);
	struct rxp_page_batch pb = {{NULL, NULL}, {0, 0}};
	struct rxp_pkt *to = rxp_pkt_alloc(pp, 1900), *list = NULL, **link = &list;
	uint64_t c0 = consumed(pp);
	uint8_t want[1900 + 6 * 100], got[sizeof(want)];

	assert_non_null(to);
	rxpt_fill(pg->addr, 8192, 4);
	rxpt_fill(rxp_pkt_put(to, 1900), 1900, 8);
	memcpy(want, to->data, 1900);
	for (uint32_t i = 0; i < 6; i++) {
		/* slices at 0, 200, 400, 600, 800, and 900 (continuing 800) */
		uint32_t off = i < 5 ? 200 * i : 900;
		struct rxp_pkt *p;

		rxp_page_get(pg);
		p = rxp_pkt_build(pp, pg, off, 100, 0, 100);
		assert_non_null(p);
		memcpy(want + 1900 + 100 * i, pg->addr + off, 100);
		*link = p;
		link = &p->next;
	}
	rxp_pkt_coalesce_list(to, list, &pb);
	rxp_page_batch_flush(&pb);
	assert_int_equal(to->nr_frags, 5);
	assert_int_equal(to->frags[4].off, 800);
	assert_int_equal(to->frags[4].size, 200);
	assert_int_equal(to->len, sizeof(want));
	assert_int_equal(to->data_len, 600);
	assert_int_equal(rxp_pktpool_pkts_outstanding(pp), 1);
	assert_int_equal(consumed(pp) - c0, 6);
	assert_int_equal(rxp_page_refcount(pg), 6); /* ours + five frags */
	assert_int_equal(rxp_pkt_copy_bits(to, 0, got, sizeof(got)), 0);
	assert_memory_equal(got, want, sizeof(want));
	rxp_pkt_consume(to);
	assert_int_equal(rxp_page_refcount(pg), 1);
	rxp_page_put(pg);
	rxpt_pktpool_teardown(pp);
	assert_int_equal(rxpt_pages_outstanding(), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_build_frag),
		cmocka_unit_test(test_meta_reinit),
		cmocka_unit_test(test_alloc_paths),
		cmocka_unit_test(test_coalesce_fast),
		cmocka_unit_test(test_coalesce_fast_refusals),
		cmocka_unit_test(test_coalesce_list),
		cmocka_unit_test(test_coalesce_list_batch),
		cmocka_unit_test(test_coalesce_runs),
		cmocka_unit_test(test_coalesce_homes),
		cmocka_unit_test(test_page_batch),
		cmocka_unit_test(test_may_pull_headroom),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
