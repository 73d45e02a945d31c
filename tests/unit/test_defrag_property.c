/* Property test: random fragment streams (fragmentations, permutations,
 * duplicates, overlaps with other bytes, losses) through the engine and
 * through a reference model (a byte map plus the rules, written plainly),
 * for every policy, IPv4 and IPv6; outputs must be identical and nothing
 * may leak. Cases per (policy, family) = 10000 * RXP_PROPERTY_SCALE. */
#include <stdio.h>

#include "defrag_test.h"

#define NS 1000000000ull
#define MAXF 32

struct mfrag {
	uint32_t off, end;
	bool mf;
	const uint8_t *src; /* bytes at src[off..end) */
};

/* ---- reference model --------------------------------------------------- */

struct model {
	enum rxp_defrag_policy pol;
	bool open, first, last;
	uint32_t len;
	/* strict: runs; policy: fragments in arrival order */
	uint32_t rs[MAXF * 2], re[MAXF * 2];
	int nruns;
	struct mfrag acc[MAXF * 2];
	int nacc;
	uint8_t covered[65536 / 8];
};

static void m_reset(struct model *m)
{
	m->open = m->first = m->last = false;
	m->len = 0;
	m->nruns = m->nacc = 0;
	memset(m->covered, 0, sizeof(m->covered));
}

static bool m_wins(enum rxp_defrag_policy p, const struct mfrag *n, const struct mfrag *o)
{
	switch (p) {
	case RXP_DEFRAG_FIRST:
		return false;
	case RXP_DEFRAG_LAST:
		return true;
	case RXP_DEFRAG_BSD:
		return n->off < o->off;
	case RXP_DEFRAG_BSD_RIGHT:
		return n->off <= o->off && n->end > o->end;
	case RXP_DEFRAG_LINUX:
		return n->off <= o->off;
	case RXP_DEFRAG_WINDOWS:
		return n->off < o->off && n->end > o->end;
	case RXP_DEFRAG_SOLARIS:
		return n->off < o->off && n->end >= o->end;
	default:
		return false;
	}
}

/* Returns true with out[0..len) when f completes a datagram. */
static bool m_input(struct model *m, const struct mfrag *f, uint8_t *out, uint32_t *olen)
{
	if (f->off == 0 && !f->mf) {
		/* Not a fragment (IPv4) or an atomic one (IPv6): passes by. */
		memcpy(out, f->src, f->end);
		*olen = f->end;
		return true;
	}
	if (!m->open) {
		m_reset(m);
		m->open = true;
	}
	if (!dt_model_end(&m->last, &m->len, f->end, f->mf)) {
		m->open = false;
		return false;
	}
	if (m->pol == RXP_DEFRAG_STRICT) {
		int r = dt_model_runs(m->rs, m->re, &m->nruns, f->off, f->end);

		if (r == DT_RUN_OVL)
			m->open = false;
		if (r != DT_RUN_OK)
			return false; /* a duplicate, or an overlap */
	}
	m->acc[m->nacc++] = *f;
	if (f->off == 0)
		m->first = true;
	for (uint32_t b = f->off / 8; b < (f->end + 7) / 8; b++)
		m->covered[b] = 1;
	if (!m->first || !m->last)
		return false;
	for (uint32_t b = 0; b < (m->len + 7) / 8; b++)
		if (!m->covered[b])
			return false;
	/* Complete: resolve bytes in arrival order. */
	static int owner[65536];
	for (uint32_t i = 0; i < m->len; i++)
		owner[i] = -1;
	for (int i = 0; i < m->nacc; i++) {
		const struct mfrag *a = &m->acc[i];

		for (uint32_t b = a->off; b < a->end; b++) {
			if (owner[b] < 0 || m_wins(m->pol, a, &m->acc[owner[b]])) {
				owner[b] = i;
				out[b] = a->src[b];
			}
		}
	}
	*olen = m->len;
	m->open = false;
	return true;
}

/* ---- the test ------------------------------------------------------------ */

static uint64_t scale(void)
{
	const char *s = getenv("RXP_PROPERTY_SCALE");
	long v = s ? atol(s) : 1;

	return v > 0 ? (uint64_t)v : 1;
}

static void run_policy(enum rxp_defrag_policy pol, int fam, uint64_t cases, struct rxpt_rng *rng,
		       uint64_t *completed)
{
	struct rxp_pktpool *pp = dt_pool();
	struct rxp_defrag_config cfg = {.policy = pol, .max_dist = -1, .max_queues = 64};
	struct rxp_defrag_table *t = rxp_defrag_table_create(&cfg);
	static uint8_t pl[4096], alt[4096], mout[4096], eout[4096 + 64];
	uint64_t now = 0;
	struct model *m = calloc(1, sizeof(*m));

	assert_non_null(t);
	m->pol = pol;
	for (uint64_t c = 0; c < cases; c++) {
		uint32_t L = 8 + (uint32_t)rxpt_rng_below(rng, 3000);
		struct mfrag fr[MAXF];
		int n = 0;

		rxpt_fill(pl, L, (uint32_t)c);
		rxpt_fill(alt, L + 8, (uint32_t)c * 7 + 1);
		/* a fragmentation */
		for (uint32_t off = 0; off < L && n < 12;) {
			uint32_t len = 8 * (1 + (uint32_t)rxpt_rng_below(rng, 64));

			if (off + len >= L || n == 11)
				len = L - off;
			fr[n++] = (struct mfrag){off, off + len, off + len < L, pl};
			off += len;
		}
		/* losses */
		for (int i = 0; i < n; i++) {
			if (rxpt_rng_below(rng, 20) == 0) {
				fr[i] = fr[n - 1];
				n--;
			}
		}
		/* duplicates and overlaps with other bytes */
		int extra = (int)rxpt_rng_below(rng, 5);
		for (int i = 0; i < extra && n > 0 && n < MAXF; i++) {
			if (rxpt_rng_below(rng, 2)) {
				fr[n] = fr[rxpt_rng_below(rng, (uint64_t)n)];
				n++;
			} else {
				uint32_t off = 8 * (uint32_t)rxpt_rng_below(rng, (L + 7) / 8);
				uint32_t len = 8 * (1 + (uint32_t)rxpt_rng_below(rng, 16));
				bool mf = true;

				if (off >= L)
					off = 0;
				if (off + len >= L) {
					len = L - off;
					mf = false;
				}
				fr[n++] = (struct mfrag){off, off + len, mf,
							 rxpt_rng_below(rng, 2) ? alt : pl};
			}
		}
		/* a permutation */
		for (int i = n - 1; i > 0; i--) {
			int j = (int)rxpt_rng_below(rng, (uint64_t)i + 1);
			struct mfrag x = fr[i];

			fr[i] = fr[j];
			fr[j] = x;
		}
		m_reset(m);
		uint16_t id = (uint16_t)c;
		for (int i = 0; i < n; i++) {
			uint32_t mlen = 0;
			bool mdone = m_input(m, &fr[i], mout, &mlen);
			struct rxp_pkt *p, *r;
			uint32_t hl = fam == 4 ? 20 : 48;

			if (fam == 4) {
				struct dt4 d = {.id = id};

				p = dt_frag4(pp, &d, fr[i].src, fr[i].off, fr[i].end - fr[i].off,
					     fr[i].mf);
			} else {
				struct dt6 d = {.id = id};

				p = dt_frag6(pp, &d, fr[i].src, fr[i].off, fr[i].end - fr[i].off,
					     fr[i].mf);
			}
			r = rxp_defrag(t, p, now);
			if (!mdone && r)
				fail_msg("case %lu frag %d: engine completed, model did not", c, i);
			if (mdone && !r)
				fail_msg("case %lu frag %d: model completed, engine did not", c, i);
			if (r) {
				assert_int_equal(r->len, (fam == 4 ? 20 : 40) + mlen);
				assert_int_equal(
					rxp_pkt_copy_bits(r, fam == 4 ? 20 : 40, eout, mlen), 0);
				if (memcmp(eout, mout, mlen))
					fail_msg("case %lu: payload differs", c);
				rxp_pkt_consume(r);
				(*completed)++;
			}
			(void)hl;
		}
		now += 100 * NS; /* everything left times out before the next case */
		rxp_defrag_expire(t, now);
	}
	assert_int_equal(dt_ctr(t).queues, 0);
	free(m);
	rxp_defrag_table_destroy(t);
	rxpt_pktpool_teardown(pp);
}

static void test_property(void **state)
{
	struct rxpt_rng rng;
	uint64_t cases = 10000 * scale(), total = 0, completed = 0;

	rxpt_rng_seed(&rng, rxpt_seed("defrag_property"));
	for (int p = 0; p < RXP_DEFRAG_POLICY_MAX; p++) {
		for (int fam = 4; fam <= 6; fam += 2) {
			run_policy((enum rxp_defrag_policy)p, fam, cases, &rng, &completed);
			total += cases;
		}
	}
	printf("defrag property: %lu cases (%lu datagrams completed) across %d policies x 2 "
	       "families\n",
	       total, completed, RXP_DEFRAG_POLICY_MAX);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_property),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
