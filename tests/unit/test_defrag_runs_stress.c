/* Strict mode, many datagrams in flight at once: each datagram has many
 * small fragments (so the small run arrays overflow into the tree), random
 * duplicates, overlaps and losses, and ids chosen so that their slots
 * collide (displaced queues; with 2 in flight the count of displaced
 * queues goes through 0 and 1). An incomplete datagram times out (1 s or
 * 200 ms, at 1 ms a fragment) long before its id comes back. Every
 * datagram and the duplicate/overlap counts are checked against a
 * reference model of Linux's run rules. Datagrams per (family, width) =
 * 2000 * RXP_PROPERTY_SCALE. */
#include <stdio.h>

#include "defrag_test.h"

#define NS 1000000000ull
#define MAXF 64
#define NDG 6 /* at most */

struct mfrag {
	uint32_t off, end;
	bool mf;
	const uint8_t *src;
};

struct model {
	bool open, first, last;
	uint32_t len, meat;
	uint32_t rs[MAXF * 2], re[MAXF * 2];
	int nruns;
	uint8_t out[4096];
};

static void m_reset(struct model *m)
{
	m->open = m->first = m->last = false;
	m->len = m->meat = 0;
	m->nruns = 0;
}

enum { M_NONE, M_DONE, M_DUP, M_OVL, M_BAD };

static int m_input(struct model *m, const struct mfrag *f)
{
	if (!m->open) {
		m_reset(m);
		m->open = true;
	}
	if (!dt_model_end(&m->last, &m->len, f->end, f->mf)) {
		m->open = false;
		return M_BAD;
	}
	switch (dt_model_runs(m->rs, m->re, &m->nruns, f->off, f->end)) {
	case DT_RUN_DUP:
		return M_DUP;
	case DT_RUN_OVL:
		m->open = false;
		return M_OVL;
	default:
		break;
	}
	memcpy(m->out + f->off, f->src + f->off, f->end - f->off);
	m->meat += f->end - f->off;
	if (f->off == 0)
		m->first = true;
	if (m->first && m->last && m->meat == m->len) {
		m->open = false;
		return M_DONE;
	}
	return M_NONE;
}

struct dg {
	struct model m;
	struct mfrag fr[MAXF];
	int n, next;
	uint16_t id;
	uint32_t L;
};

static void dg_make(struct dg *g, struct rxpt_rng *rng, const uint8_t *pl, const uint8_t *alt)
{
	uint32_t L = 8 * (9 + (uint32_t)rxpt_rng_below(rng, 40)) + (uint32_t)rxpt_rng_below(rng, 8);
	int n = 0;

	g->L = L;
	for (uint32_t off = 0; off < L;) {
		uint32_t len = 8 * (1 + (uint32_t)rxpt_rng_below(rng, 3));

		if (off + len >= L || n == 40)
			len = L - off;
		g->fr[n++] = (struct mfrag){off, off + len, off + len < L, pl};
		off += len;
	}
	for (int i = 0; i < n; i++)
		if (rxpt_rng_below(rng, 300) == 0)
			g->fr[i] = g->fr[--n];
	int extra = (int)rxpt_rng_below(rng, 4);
	for (int i = 0; i < extra && n > 0 && n < MAXF; i++) {
		if (rxpt_rng_below(rng, 3)) {
			g->fr[n] = g->fr[rxpt_rng_below(rng, (uint64_t)n)];
			n++;
		} else {
			uint32_t off = 8 * (uint32_t)rxpt_rng_below(rng, (L + 7) / 8);
			uint32_t len = 8 * (1 + (uint32_t)rxpt_rng_below(rng, 4));
			bool mf = true;

			if (off >= L)
				off = 0;
			if (off + len >= L) {
				len = L - off;
				mf = false;
			}
			g->fr[n++] = (struct mfrag){off, off + len, mf, alt};
		}
	}
	/* a mostly-shuffled order: many runs */
	for (int i = n - 1; i > 0; i--) {
		int j = (int)rxpt_rng_below(rng, (uint64_t)i + 1);
		struct mfrag x = g->fr[i];

		g->fr[i] = g->fr[j];
		g->fr[j] = x;
	}
	g->n = n;
	g->next = 0;
	m_reset(&g->m);
}

static void run(int fam, uint64_t cases, struct rxpt_rng *rng, int ndg, uint64_t timeout)
{
	struct rxp_pktpool *pp = dt_pool();
	/* 64 queues: 128 slots; ids 128 apart from one source share a slot. */
	struct rxp_defrag_config cfg = {.max_dist = -1,
					.max_queues = 64,
					.mem_limit = 64u << 20,
					.timeout_v4_ns = timeout,
					.timeout_v6_ns = timeout};
	uint64_t now = 0;
	struct rxp_defrag_table *t = rxp_defrag_table_create(&cfg);
	static uint8_t pl[4096], alt[4096], eout[4096];
	struct dg *g = calloc(NDG, sizeof(*g));
	uint64_t done = 0, dups = 0, ovl = 0, seq = 0;
	struct rxp_defrag_counters c0;

	assert_non_null(t);
	rxpt_fill(pl, sizeof(pl), 3);
	rxpt_fill(alt, sizeof(alt), 77);
	for (int k = 0; k < ndg; k++) {
		g[k].id = (uint16_t)(5 + 128 * (seq++ % 500));
		dg_make(&g[k], rng, pl, alt);
	}
	for (uint64_t c = 0; c < cases;) {
		int k = (int)rxpt_rng_below(rng, (uint64_t)ndg);
		struct dg *d = &g[k];

		if (d->next == d->n) {
			/* finished feeding: whatever is left must go before the id
			 * is reused; a new datagram with a new id */
			c++;
			d->id = (uint16_t)(5 + 128 * (seq++ % 500));
			dg_make(d, rng, pl, alt);
			continue;
		}
		const struct mfrag *f = &d->fr[d->next++];
		int mr = m_input(&d->m, f);
		struct rxp_pkt *p, *r;

		if (fam == 4) {
			struct dt4 h = {.id = d->id};

			p = dt_frag4(pp, &h, f->src, f->off, f->end - f->off, f->mf);
		} else {
			struct dt6 h = {.id = d->id};

			p = dt_frag6(pp, &h, f->src, f->off, f->end - f->off, f->mf);
		}
		now += NS / 1000;
		rxp_defrag_expire(t, now);
		r = rxp_defrag(t, p, now);
		if (mr == M_DUP)
			dups++;
		if (mr == M_OVL)
			ovl++;
		if ((mr == M_DONE) != (r != NULL))
			fail_msg("fam %d id %u frag %d [%u,%u): model %d engine %p", fam, d->id,
				 d->next - 1, f->off, f->end, mr, (void *)r);
		if (r) {
			uint32_t hl = fam == 4 ? 20 : 40;

			assert_int_equal(r->len, hl + d->m.len);
			assert_int_equal(rxp_pkt_copy_bits(r, hl, eout, d->m.len), 0);
			if (memcmp(eout, d->m.out, d->m.len))
				fail_msg("id %u: payload differs", d->id);
			rxp_pkt_consume(r);
			done++;
		}
	}
	rxp_defrag_get_counters(t, &c0);
	assert_int_equal(c0.duplicates, dups);
	assert_int_equal(c0.ReasmOverlaps, ovl);
	assert_int_equal(c0.ReasmOKs, done);
	rxp_defrag_expire(t, now + 10 * NS);
	rxp_defrag_get_counters(t, &c0);
	assert_int_equal(c0.queues, 0);
	assert_int_equal(c0.mem, 0);
	printf("runs stress v%d x%d: %lu datagrams, %lu completed, %lu dups, %lu overlaps\n", fam,
	       ndg, (unsigned long)cases, (unsigned long)done, (unsigned long)dups,
	       (unsigned long)ovl);
	free(g);
	rxp_defrag_table_destroy(t);
	rxpt_pktpool_teardown(pp);
}

static void test_runs_stress(void **state)
{
	struct rxpt_rng rng;
	const char *s = getenv("RXP_PROPERTY_SCALE");
	uint64_t sc = s && atol(s) > 0 ? (uint64_t)atol(s) : 1;

	rxpt_rng_seed(&rng, rxpt_seed("defrag_runs_stress"));
	/* many queues on one slot; then few, so that the count of displaced
	 * queues goes through 0 and 1 */
	run(4, 2000 * sc, &rng, NDG, NS);
	run(6, 2000 * sc, &rng, NDG, NS);
	run(4, 2000 * sc, &rng, 2, NS / 5);
	run(6, 2000 * sc, &rng, 2, NS / 5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_runs_stress),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
