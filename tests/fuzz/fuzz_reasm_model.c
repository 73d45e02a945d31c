/*
 * Differential reassembly: the engine against the reference model of the
 * property tests (tests/unit/defrag_model.h), fragment by fragment, on the
 * structured inputs of reasm_plan.h, for every policy (strict against
 * Linux's end and run rules, the target policies against the byte map),
 * IPv4 and IPv6, local delivery and forward mode. Any difference traps:
 *   - what each fragment did: queued, completed (the datagram's bytes, its
 *     length and its header: no offset or MF, lengths, checksum, DF as the
 *     largest fragment had it, IPv6 extension headers kept and the fragment
 *     header gone), passed by untouched, refused as invalid, dropped as a
 *     duplicate, or killed the datagram (overlap, the end rules, a zero
 *     length, ECN that cannot be combined), with the engine's counters
 *     moving to match;
 *   - timeouts: each datagram the model expires is one the engine expires,
 *     lazily or from its timer run, and the discard hook sees every
 *     fragment of every datagram given up;
 *   - policy overlaps: counted when a fragment lands on bytes the model
 *     already holds.
 * The strict entry's fast path and its general entry are each checked
 * (table_for). What the engine refuses before queueing is predicted from the rules in
 * defrag.h (IPv6: an MF length not a multiple of 8, a first fragment
 * without its upper-layer header, a nested fragment header; a truncated
 * packet); IPv4 MF lengths are rounded down first. The caps are large and
 * max_dist is off, so no fragment is refused for memory.
 */
#include "reasm_plan.h"
#include "../unit/defrag_model.h"
#include "net/defrag_internal.h"

#define NMODEL 16
#define NS 1000000000ull

struct mstate {
	bool used;
	struct rp_dgram key; /* the slot that made it (its key fields) */
	struct dm_model m;
	uint64_t t0; /* when the model (the engine's queue) was made */
	uint8_t ecn_mask;
	uint32_t max_size, max_df_size;
	struct rp_dgram hdr0; /* the slot whose offset-0 fragment came first */
	bool have0;
};

static struct mstate models[NMODEL];
static struct rxp_defrag_table *tables[RXP_DEFRAG_POLICY_MAX][2][2];
static uint8_t mout[65536], eout[65536 + 256];
static uint64_t discards;
static bool debug; /* FZ_DEBUG set: a line per fragment on stderr */

static void on_discard(void *arg, const struct rxp_pkt *pkt)
{
	(void)arg;
	(void)pkt;
	discards++;
}

static __attribute__((noinline)) struct mstate *fz_model_for(const struct rp_dgram *g,
							     enum rxp_defrag_policy pol)
{
	struct mstate *free_m = NULL;

	for (int i = 0; i < NMODEL; i++) {
		if (models[i].used && rp_same_key(&models[i].key, g))
			return &models[i];
		if (!models[i].used && !free_m)
			free_m = &models[i];
	}
	if (!free_m)
		return NULL;
	free_m->used = true;
	free_m->m.open = false;
	free_m->key = *g;
	free_m->m.pol = pol;
	return free_m;
}

/* Whether f lands on a block the model holds. */
static __attribute__((noinline)) bool fz_covered(const struct dm_model *m, const struct dm_frag *f)
{
	for (uint32_t b = f->off / 8; b < (f->end + 7) / 8; b++)
		if (m->covered[b])
			return true;
	return false;
}

static __attribute__((noinline)) uint64_t fz_timeout_of(const struct rp_dgram *g)
{
	return g->family == 6 ? 60 * NS : 30 * NS;
}

/* Expire every open model whose time has come; returns how many, and the
 * fragments they held (for the discard hook). */
static __attribute__((noinline)) unsigned fz_expire_models(uint64_t now, uint64_t *held,
							   const struct rp_dgram *only)
{
	unsigned n = 0;

	for (int i = 0; i < NMODEL; i++) {
		struct mstate *s = &models[i];

		if (!s->used || !s->m.open || now < s->t0 + fz_timeout_of(&s->key))
			continue;
		if (only && !rp_same_key(&s->key, only))
			continue;
		s->m.open = false;
		*held += (uint64_t)s->m.nacc;
		n++;
	}
	return n;
}

/* The header of a datagram that came back: as the model's first offset-0
 * fragment had it, with the lengths and flags a result must have. */
static __attribute__((noinline)) void fz_check_header(const struct rp_dgram *g,
						      const struct rp_dgram *key, const uint8_t *h,
						      uint32_t rlen, uint32_t plen, bool df)
{
	if (g->family == 4) {
		const struct rxp_iphdr *ip = (const void *)h;
		uint32_t ihl = 20 + g->optlen;
		uint16_t fo = ntohs(ip->frag_off);

		FZ_CHECK(ip->ver_ihl == (0x40 | ihl / 4));
		FZ_CHECK(rlen == ihl + plen && ntohs(ip->tot_len) == rlen);
		FZ_CHECK(!(fo & (RXP_IP_MF | RXP_IP_OFFMASK)));
		FZ_CHECK(!!(fo & RXP_IP_DF) == df);
		FZ_CHECK(rxp_ip_csum(ip, ihl) == 0);
		FZ_CHECK(ip->id == htons((uint16_t)key->id) && ip->protocol == key->proto);
		FZ_CHECK(ntohl(ip->saddr) == 0x0a000001u + key->src);
	} else {
		const struct rxp_ipv6hdr *ip = (const void *)h;

		FZ_CHECK((h[0] >> 4) == 6);
		FZ_CHECK(rlen == 40u + g->extlen + plen);
		FZ_CHECK(ntohs(ip->payload_len) == g->extlen + plen);
		if (!g->extlen) {
			FZ_CHECK(ip->nexthdr == g->fnh);
		} else {
			FZ_CHECK(ip->nexthdr == g->nh0);
			FZ_CHECK(!memcmp(h + 40, g->ext, g->lastnh));
			FZ_CHECK(h[40 + g->lastnh] == g->fnh);
			FZ_CHECK(!memcmp(h + 40 + g->lastnh + 1, g->ext + g->lastnh + 1,
					 g->extlen - g->lastnh - 1u));
		}
	}
}

static uint8_t ecn_combine(uint8_t m)
{
	if ((m & 1) && (m & ~1u))
		return 0xff;
	return 0;
}

/* Every table here has a discard hook, so the configuration's discard bit
 * picks the strict entry instead: its fast path where it applies (the
 * bit clear), or the general entry alone (set: fast_mem 0, which the fast
 * path never fits under). Both must match the model. */
static struct rxp_defrag_table *table_for(const struct rp_config *c)
{
	struct rxp_defrag_table **t = &tables[c->policy][c->forward][c->discard_cb];

	if (!*t) {
		struct rxp_defrag_config dc = {
			.policy = c->policy,
			.forward = c->forward,
			.mem_limit = 1ull << 32,
			.max_queues = 64,
			.max_dist = -1,
			.discard_cb = on_discard,
		};

		*t = rxp_defrag_table_create(&dc);
		FZ_CHECK(*t);
		if (c->discard_cb)
			(*t)->fast_mem = 0;
	}
	return *t;
}

/* What the engine must do with f before any queue sees it: 'p' passes it
 * by untouched, 'i' refuses it as invalid, 'a' is an IPv6 atomic fragment,
 * 'q' goes to its queue (with its model fragment in *mf). */
static __attribute__((noinline)) char fz_predict(const struct rp_dgram *g, const struct rp_frag *f,
						 struct dm_frag *mf)
{
	uint32_t flen = f->end - f->off;

	*mf = (struct dm_frag){f->off, f->end, f->mf, f->alt ? g->alt : g->pl};
	if (f->mut == RP_MUT_VERSION)
		return 'p';
	if (g->family == 4) {
		if (!f->off && !f->mf)
			return 'p'; /* not a fragment, whatever else is wrong */
		if (f->mut == RP_MUT_HDR || f->mut == RP_MUT_TRUNC)
			return 'i';
		if (f->mf)
			mf->end = f->off + (flen & ~7u);
		return 'q';
	}
	if (g->hbh_late)
		return 'p'; /* a hop-by-hop header not first: not a fragment */
	if (f->mut == RP_MUT_TRUNC)
		return 'i';
	if (!f->off && !f->mf)
		return 'a';
	if (f->mf && (flen & 7))
		return 'i';
	if (!f->off && (f->mut == RP_MUT_HDR || flen < g->need))
		return 'i';
	return 'q';
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* Large buffers for every fragment the models can hold at once (a
	 * fragment over a small buffer takes one) and the results a policy
	 * table builds in one: with 96, 61 fragments of 1,976 bytes and a
	 * duplicate each left none for a policy result, whose NOMEM the model
	 * cannot predict. Slots are carved when first used. */
	struct rxp_pktpool_config pc = {
		.name = "fzm", .n_pkts = 4096, .n_bufs = 4096, .n_large = NMODEL * DM_MAXACC + 16};
	struct rxp_pktpool *pp = fz_pool(&pc);
	static struct rp_plan p;
	struct rxp_defrag_table *t;
	struct rxp_defrag_counters c0, c1, start;
	uint64_t timeouts = 0, fails = 0, d0;
	enum rp_kind kind;
	struct rp_frag f;
	int twice;

	if (size < 3)
		return 0;
	debug = getenv("FZ_DEBUG");
	rp_init(&p, data, size);
	t = table_for(&p.cfg);
	for (int i = 0; i < NMODEL; i++)
		models[i].used = false;
	rxp_defrag_get_counters(t, &start);
	/* the counters before each packet are those after the last one (or
	 * after a timer run): one read per packet */
	c1 = start;
	while (rp_next(&p, &kind, &f, &twice)) {
		const struct rp_dgram *g = &p.d[f.d];

		if (kind == RP_TIME)
			continue;
		if (kind == RP_EXPIRE) {
			uint64_t h = 0;
			unsigned n = fz_expire_models(p.now, &h, NULL);

			d0 = discards;
			FZ_CHECK(rxp_defrag_expire(t, p.now) == n);
			FZ_CHECK(discards - d0 == h);
			timeouts += n;
			rxp_defrag_get_counters(t, &c1);
			continue;
		}
		for (int rep = 0; rep <= twice; rep++) {
			struct dm_frag mf;
			char what = fz_predict(g, &f, &mf);
			struct mstate *s = NULL;
			struct rxp_pkt *pk, *r;
			enum dm_result res = DM_QUEUED;
			uint32_t olen = 0, hl;
			uint64_t expired = 0, h = 0;
			bool overlap = false;

			if (what == 'q') {
				s = fz_model_for(g, p.cfg.policy);
				if (!s || (s->m.open && s->m.nacc >= DM_MAXACC))
					goto out; /* past what the model holds */
			}
			pk = rp_build(pp, g, &f);
			if (!pk)
				goto out;
			hl = g->family == 4 ? 20 + (f.off ? 0 : g->optlen) : 40 + g->extlen + 8;
			if (s) {
				/* the engine expires the key's queue on lookup */
				expired = fz_expire_models(p.now, &h, g);
				if (!s->m.open) {
					s->t0 = p.now;
					s->ecn_mask = 0;
					s->max_size = s->max_df_size = 0;
					s->have0 = false;
				}
				if (s->m.open && p.cfg.policy != RXP_DEFRAG_STRICT)
					overlap = fz_covered(&s->m, &mf);
				res = dm_input(&s->m, &mf, mout, &olen);
			}
			c0 = c1;
			d0 = discards;
			r = rxp_defrag_zone(t, pk, g->zone, p.now);
			rxp_defrag_get_counters(t, &c1);
			timeouts += expired;
			if (debug)
				fprintf(stderr,
					"d%d fam %d id %u off %u end %u mf %d alt %d mut %d what "
					"%c res %d r %p "
					"fails %lu inv %lu dup %lu ovl %lu oks %lu now %lu\n",
					f.d, g->family, g->id, mf.off, mf.end, mf.mf, f.alt, f.mut,
					what, res, (void *)r, c1.ReasmFails - c0.ReasmFails,
					c1.invalid - c0.invalid, c1.duplicates - c0.duplicates,
					c1.ReasmOverlaps - c0.ReasmOverlaps,
					c1.ReasmOKs - c0.ReasmOKs, p.now);
			FZ_CHECK(c1.ReasmTimeout - c0.ReasmTimeout == expired);
			if (what != 'q')
				FZ_CHECK(c1.ReasmFails == c0.ReasmFails);
			switch (what) {
			case 'p':
				FZ_CHECK(r == pk && c1.ReasmReqds == c0.ReasmReqds);
				break;
			case 'i':
				FZ_CHECK(!r && c1.invalid == c0.invalid + 1);
				FZ_CHECK(c1.ReasmReqds == c0.ReasmReqds);
				break;
			case 'a': {
				uint32_t flen = f.end - f.off;
				static struct rp_dgram a;

				a = *g;
				a.fnh = f.mut == RP_MUT_HDR ? RXP_IPPROTO_FRAGMENT : g->fnh;
				FZ_CHECK(r && c1.ReasmOKs == c0.ReasmOKs + 1);
				FZ_CHECK(r->len <= sizeof(eout) &&
					 !rxp_pkt_copy_bits(r, 0, eout, r->len));
				fz_check_header(&a, g, eout, r->len, flen, false);
				FZ_CHECK(!memcmp(eout + 40 + g->extlen, mf.src, flen));
				break;
			}
			default: {
				uint64_t dq = res == DM_BAD || res == DM_OVERLAP ? 1 : 0;
				bool ecnfail;

				FZ_CHECK(c1.ReasmReqds == c0.ReasmReqds + 1);
				if (res == DM_QUEUED || res == DM_DONE) {
					uint32_t sz = hl + (mf.end - mf.off);

					s->ecn_mask |= (uint8_t)(1u << g->ecn);
					if (sz > s->max_size)
						s->max_size = sz;
					if (g->family == 4 && g->df && sz > s->max_df_size)
						s->max_df_size = sz;
					if (!mf.off && !s->have0) {
						s->hdr0 = *g;
						s->have0 = true;
					}
					FZ_CHECK(c1.policy_overlaps - c0.policy_overlaps ==
						 (uint64_t)overlap);
				}
				ecnfail = res == DM_DONE && ecn_combine(s->ecn_mask) == 0xff;
				if (res != DM_DONE || ecnfail)
					FZ_CHECK(!r);
				if (res == DM_DUP)
					FZ_CHECK(c1.duplicates == c0.duplicates + 1);
				if (res == DM_OVERLAP)
					FZ_CHECK(c1.ReasmOverlaps == c0.ReasmOverlaps + 1);
				/* the key's expired queue, and this datagram if it
				 * was given up */
				FZ_CHECK(c1.ReasmFails - c0.ReasmFails == expired + dq + ecnfail);
				fails += dq + ecnfail;
				/* the discard hook: every fragment of a queue given
				 * up (those the model held, and the arriving one
				 * when it killed the queue) */
				FZ_CHECK(discards - d0 ==
					 h + (dq || ecnfail ? dq + (uint64_t)s->m.nacc : 0));
				if (res != DM_DONE || ecnfail)
					break;
				FZ_CHECK(r && c1.ReasmOKs == c0.ReasmOKs + 1);
				FZ_CHECK(r->len <= sizeof(eout) &&
					 !rxp_pkt_copy_bits(r, 0, eout, r->len));
				fz_check_header(&s->hdr0, &s->key, eout, r->len, olen,
						s->max_df_size && s->max_df_size == s->max_size);
				FZ_CHECK(!memcmp(eout + r->len - olen, mout, olen));
				break;
			}
			}
			rxp_pkt_consume(r);
		}
	}
out:
	d0 = discards;
	{
		uint64_t h = 0;

		timeouts += fz_expire_models(UINT64_MAX, &h, NULL);
		rxp_defrag_expire(t, UINT64_MAX);
		FZ_CHECK(discards - d0 == h);
	}
	rxp_defrag_get_counters(t, &c1);
	FZ_CHECK(c1.queues == 0 && c1.mem == 0);
	FZ_CHECK(c1.ReasmTimeout - start.ReasmTimeout == timeouts);
	FZ_CHECK(c1.ReasmFails - start.ReasmFails == fails + timeouts);
	FZ_CHECK(c1.mem_drops == start.mem_drops && c1.evictions == start.evictions);
	fz_pool_quiet(pp);
	return 0;
}
