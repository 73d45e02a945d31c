/* Property test: random fragment streams (fragmentations, permutations,
 * duplicates, overlaps with other bytes, losses) through the engine and
 * through the reference model (defrag_model.h: a byte map plus the rules,
 * written plainly), for every policy, IPv4 and IPv6; outputs must be
 * identical and nothing may leak. Cases per (policy, family) = 10000 *
 * RXP_PROPERTY_SCALE. */
#include <stdio.h>

#include "defrag_test.h"

#define NS 1000000000ull
#define MAXF 32

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
	struct dm_model *m = calloc(1, sizeof(*m));

	assert_non_null(t);
	m->pol = pol;
	for (uint64_t c = 0; c < cases; c++) {
		uint32_t L = 8 + (uint32_t)rxpt_rng_below(rng, 3000);
		struct dm_frag fr[MAXF];
		int n = 0;

		rxpt_fill(pl, L, (uint32_t)c);
		rxpt_fill(alt, L + 8, (uint32_t)c * 7 + 1);
		/* a fragmentation */
		for (uint32_t off = 0; off < L && n < 12;) {
			uint32_t len = 8 * (1 + (uint32_t)rxpt_rng_below(rng, 64));

			if (off + len >= L || n == 11)
				len = L - off;
			fr[n++] = (struct dm_frag){off, off + len, off + len < L, pl};
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
				fr[n++] = (struct dm_frag){off, off + len, mf,
							   rxpt_rng_below(rng, 2) ? alt : pl};
			}
		}
		/* a permutation */
		for (int i = n - 1; i > 0; i--) {
			int j = (int)rxpt_rng_below(rng, (uint64_t)i + 1);
			struct dm_frag x = fr[i];

			fr[i] = fr[j];
			fr[j] = x;
		}
		dm_reset(m);
		uint16_t id = (uint16_t)c;
		for (int i = 0; i < n; i++) {
			uint32_t mlen = 0;
			enum dm_result mr = dm_input(m, &fr[i], mout, &mlen);
			bool mdone = mr == DM_DONE || mr == DM_PASS;
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
