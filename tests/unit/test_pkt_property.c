/*
 * Property test: random sequences of packet operations checked against a
 * byte-array model after every step. Seeded (printed; replay with
 * RXP_SEED=N); RXP_PROPERTY_SCALE multiplies the number of sequences.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rxptest.h"

#define MAXLEN 60000

struct model {
	uint8_t b[MAXLEN + 4096];
	uint32_t len;
};

static struct rxpt_rng rng;
static struct rxp_pktpool *pp;
static uint8_t scratch[MAXLEN + 4096];

static void rnd_bytes(uint8_t *p, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		p[i] = (uint8_t)rxpt_rng_next(&rng);
}

static void check(const struct rxp_pkt *p, const struct model *m, const char *op, unsigned step)
{
	if (p->len != m->len)
		fail_msg("after %s (step %u): len %u, model %u", op, step, p->len, m->len);
	if (p->len != rxp_pkt_headlen(p) + p->data_len)
		fail_msg("after %s: len %u != headlen %u + data_len %u", op, p->len,
			 rxp_pkt_headlen(p), p->data_len);
	assert_int_equal(rxp_pkt_copy_bits(p, 0, scratch, p->len), 0);
	if (memcmp(scratch, m->b, m->len))
		fail_msg("after %s (step %u): bytes differ", op, step);
	/* a random window through header_pointer */
	if (m->len) {
		uint32_t off = (uint32_t)rxpt_rng_below(&rng, m->len);
		uint32_t n = (uint32_t)rxpt_rng_below(&rng, m->len - off + 1);
		uint8_t tmp[MAXLEN];
		const uint8_t *h = rxp_pkt_header_pointer(p, off, n, tmp);

		assert_non_null(h);
		assert_memory_equal(h, m->b + off, n);
	}
}

/* A fresh packet of n random bytes, sometimes split linear + frags. */
static struct rxp_pkt *fresh(uint32_t n, uint8_t *bytes)
{
	uint32_t lin = n, fragsz = 0;
	struct rxp_pkt *p;

	rnd_bytes(bytes, n);
	if (n > 1500 || rxpt_rng_below(&rng, 3) == 0) {
		lin = n > 1500 ? 1500 : (uint32_t)rxpt_rng_below(&rng, n + 1);
		fragsz = n - lin;
	}
	p = rxp_pkt_alloc(pp, lin);
	assert_non_null(p);
	memcpy(rxp_pkt_put(p, lin), bytes, lin);
	for (uint32_t off = lin; off < n;) {
		uint32_t s = n - off < 4000 ? n - off : 4000;
		struct rxp_page *pg = rxpt_page_new(s + 16);

		memcpy(pg->addr + 8, bytes + off, s);
		if (rxp_pkt_add_frag(p, pg, 8, s, s + 16) != 0) {
			rxp_page_put(pg);
			break; /* out of frag slots: shorter packet */
		}
		off += s;
		(void)fragsz;
	}
	return p;
}

/*
 * A fragment as a reassembler sees it: a small head (its header, pulled
 * off) and n bytes of src at soff, built in one step. Consecutive calls
 * with consecutive soff give slices that continue each other on one page
 * (try_coalesce's fast path extends the last frag); gaps give new frags.
 */
static struct rxp_pkt *slice(struct rxp_page *src, uint32_t soff, uint32_t n)
{
	struct rxp_page *hp = rxpt_page_new(64);
	struct rxp_pkt *f;

	memset(hp->addr, 0, 64);
	rxp_page_get(src);
	f = rxp_pkt_build_frag(pp, hp, 0, 64, 32, 8, src, soff, n);
	assert_non_null(f);
	assert_non_null(rxp_pkt_pull(f, 8));
	return f;
}

static void one_sequence(unsigned steps)
{
	static struct model m;
	struct rxp_pkt *p = fresh((uint32_t)rxpt_rng_below(&rng, 3000), m.b);
	uint8_t add[8192];
	struct rxp_page *src = rxpt_page_new(16384);
	struct rxp_page_batch pb = {{NULL, NULL}, {0, 0}};
	uint32_t soff = 0;

	rnd_bytes(src->addr, src->size);
	m.len = p->len;
	for (unsigned s = 0; s < steps; s++) {
		unsigned op = (unsigned)rxpt_rng_below(&rng, 15);
		const char *name = "?";
		uint32_t n;

		switch (op) {
		case 0: /* put */
			name = "put";
			p = rxp_pkt_unshare(p);
			assert_non_null(p);
			n = (uint32_t)rxpt_rng_below(&rng, 300);
			if (rxp_pkt_tailroom(p) >= n && m.len + n <= MAXLEN) {
				uint8_t *d = rxp_pkt_put(p, n);

				assert_non_null(d);
				rnd_bytes(d, n);
				memcpy(m.b + m.len, d, n);
				m.len += n;
			} else if (rxp_pkt_tailroom(p) < n) {
				/* refused, nothing changed */
				uint32_t len = p->len;

				assert_null(rxp_pkt_put(p, n));
				assert_int_equal(p->len, len);
			}
			break;
		case 1: /* push */
			name = "push";
			p = rxp_pkt_unshare(p);
			assert_non_null(p);
			n = (uint32_t)rxpt_rng_below(&rng, 64);
			if (rxp_pkt_headroom(p) >= n && m.len + n <= MAXLEN) {
				uint8_t *d = rxp_pkt_push(p, n);

				rnd_bytes(d, n);
				memmove(m.b + n, m.b, m.len);
				memcpy(m.b, d, n);
				m.len += n;
			}
			break;
		case 2: /* pull */
			name = "pull";
			n = (uint32_t)rxpt_rng_below(&rng, rxp_pkt_headlen(p) + 1);
			assert_non_null(rxp_pkt_pull(p, n));
			memmove(m.b, m.b + n, m.len - n);
			m.len -= n;
			break;
		case 3: /* add_frag */
			name = "add_frag";
			n = 1 + (uint32_t)rxpt_rng_below(&rng, 3000);
			if (!p->frag_list && p->nr_frags < RXP_MAX_FRAGS && m.len + n <= MAXLEN) {
				struct rxp_page *pg = rxpt_page_new(n);

				rnd_bytes(pg->addr, n);
				assert_int_equal(rxp_pkt_add_frag(p, pg, 0, n, n), 0);
				memcpy(m.b + m.len, pg->addr, n);
				m.len += n;
			}
			break;
		case 4: /* chain */
		case 5: /* coalesce */
			n = (uint32_t)rxpt_rng_below(&rng, 4000);
			if (m.len + n > MAXLEN)
				break;
			{
				struct rxp_pkt *f = fresh(n, add);

				n = f->len;
				if (op == 4) {
					name = "chain";
					rxp_pkt_chain(p, f);
				} else {
					name = "coalesce";
					p = rxp_pkt_unshare(p);
					assert_non_null(p);
					rxp_pkt_try_coalesce(p, f);
				}
				memcpy(m.b + m.len, add, n);
				m.len += n;
			}
			break;
		case 6: /* trim */
			name = "trim";
			n = (uint32_t)rxpt_rng_below(&rng, m.len + 1);
			assert_int_equal(rxp_pkt_trim(p, n), 0);
			m.len = n;
			break;
		case 7: /* may_pull */
			name = "may_pull";
			n = (uint32_t)rxpt_rng_below(&rng, m.len + 2);
			if (rxp_pkt_may_pull(p, n))
				assert_true(rxp_pkt_headlen(p) >= n);
			else
				assert_true(n > m.len);
			break;
		case 8: /* linearize */
			name = "linearize";
			assert_int_equal(rxp_pkt_linearize(p), 0);
			assert_true(rxp_pkt_is_linear(p));
			break;
		case 9: { /* clone, keep one */
			struct rxp_pkt *c = rxp_pkt_clone(p);

			name = "clone";
			assert_non_null(c);
			check(c, &m, "clone(copy)", s);
			if (rxpt_rng_below(&rng, 2)) {
				rxp_pkt_consume(p);
				p = c;
			} else {
				rxp_pkt_consume(c);
			}
			break;
		}
		case 10: { /* copy, keep one */
			struct rxp_pkt *c = rxp_pkt_copy(p);

			name = "copy";
			assert_non_null(c);
			assert_true(rxp_pkt_is_linear(c));
			check(c, &m, "copy(copy)", s);
			if (rxpt_rng_below(&rng, 2)) {
				rxp_pkt_consume(p);
				p = c;
			} else {
				rxp_pkt_consume(c);
			}
			break;
		}
		case 11: /* clone kept alive across a write to the original */
		{
			struct rxp_pkt *c = rxp_pkt_clone(p);
			static struct model keep;

			name = "clone+write";
			memcpy(keep.b, m.b, m.len);
			keep.len = m.len;
			p = rxp_pkt_unshare(p);
			assert_non_null(p);
			if (m.len && rxp_pkt_headlen(p)) {
				p->data[0] ^= 0xff;
				m.b[0] ^= 0xff;
			}
			check(c, &keep, "clone untouched", s);
			rxp_pkt_consume(c);
			break;
		}
		case 13: /* coalesce header-stripped slices of one page */
			name = "coalesce slice";
			n = 1 + (uint32_t)rxpt_rng_below(&rng, 3000);
			if (m.len + n > MAXLEN)
				break;
			if (soff + n > src->size || rxpt_rng_below(&rng, 5) == 0)
				soff = (uint32_t)rxpt_rng_below(&rng, src->size - n + 1);
			p = rxp_pkt_unshare(p);
			assert_non_null(p);
			rxp_pkt_try_coalesce_batch(p, slice(src, soff, n), &pb);
			memcpy(m.b + m.len, src->addr + soff, n);
			m.len += n;
			soff += n;
			if (rxpt_rng_below(&rng, 8) == 0)
				rxp_page_batch_flush(&pb);
			break;
		default: /* reshape: pull everything into the head then cut */
			name = "may_pull+trim";
			if (rxp_pkt_may_pull(p, m.len / 2)) {
				n = m.len / 2 + (uint32_t)rxpt_rng_below(&rng, m.len / 2 + 1);
				assert_int_equal(rxp_pkt_trim(p, n), 0);
				m.len = n;
			}
			break;
		}
		check(p, &m, name, s);
	}
	if (rxpt_rng_below(&rng, 2))
		rxp_pkt_consume(p);
	else
		rxp_pkt_drop(p, RXP_DROP_NOT_SPECIFIED);
	rxp_page_batch_flush(&pb);
	rxp_page_put(src);
}

static void test_random_sequences(void **state)
{
	const char *sc = getenv("RXP_PROPERTY_SCALE");
	unsigned scale = sc ? (unsigned)atoi(sc) : 1, seqs = 20000 * (scale ? scale : 1);
	unsigned long ops = 0;

	rxpt_rng_seed(&rng, rxpt_seed("pkt_property"));
	pp = rxp_pktpool_create(&(struct rxp_pktpool_config){.n_pkts = 512, .n_large = 16});
	assert_non_null(pp);
	for (unsigned i = 0; i < seqs; i++) {
		unsigned steps = 5 + (unsigned)rxpt_rng_below(&rng, 40);

		one_sequence(steps);
		ops += steps;
		assert_int_equal(rxp_pktpool_pkts_outstanding(pp), 0);
		assert_int_equal(rxpt_pages_outstanding(), 0);
	}
	printf("[pkt_property] %u sequences, %lu operations checked against the model\n", seqs,
	       ops);
	rxpt_pktpool_teardown(pp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_sequences),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
