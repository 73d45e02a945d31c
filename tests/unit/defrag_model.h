/* The reference model of one datagram's reassembly, written plainly: a byte
 * map plus the rules (Linux's end and run rules, dt_model_end and
 * dt_model_runs, also used by the stress test's model, and the target
 * policies' pairwise rule), for the property test and the differential fuzz
 * target (tests/fuzz/fuzz_reasm_model.c). No cmocka here: the fuzz target
 * traps on a difference instead. */
#ifndef RXP_DEFRAG_MODEL_H
#define RXP_DEFRAG_MODEL_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "rxpath/defrag.h"

/* The reference models' rules (Linux's ip_frag_queue), written once for
 * the property and stress tests. End: an MF=0 fragment that ends before
 * the known end, or elsewhere than an earlier MF=0 one, and data past a
 * known end kill the datagram (false); else *len and *last follow. */
static inline bool dt_model_end(bool *last, uint32_t *len, uint32_t end, bool mf)
{
	if (!mf) {
		if (end < *len || (*last && end != *len))
			return false;
		*last = true;
		*len = end;
	} else if (end > *len) {
		if (*last)
			return false;
		*len = end;
	}
	return true;
}

enum { DT_RUN_OK, DT_RUN_DUP, DT_RUN_OVL };

/* Runs (inet_frag_queue_insert): [off, end) extends the last run when it
 * starts where that ends, or starts a run after it; otherwise, against the
 * runs: inside one is a duplicate, across one an overlap, and in a gap a
 * run of its own. rs[], re[] hold *n runs and room for one more. */
static inline int dt_model_runs(uint32_t *rs, uint32_t *re, int *n, uint32_t off, uint32_t end)
{
	int last = -1;

	for (int i = 0; i < *n; i++)
		if (last < 0 || rs[i] > rs[last])
			last = i;
	if (last >= 0 && off == re[last]) {
		re[last] = end;
		return DT_RUN_OK;
	}
	if (last >= 0 && off < re[last]) {
		for (int i = 0; i < *n; i++) {
			if (end <= rs[i] || off >= re[i])
				continue;
			return off >= rs[i] && end <= re[i] ? DT_RUN_DUP : DT_RUN_OVL;
		}
	}
	rs[*n] = off;
	re[(*n)++] = end;
	return DT_RUN_OK;
}

/* In the fuzz build the model runs next to the engine on every input, and
 * its byte loops, checked by ASan, cost as much as the engine: there they
 * go unchecked (the engine is what is under test, and a fault in the model
 * still shows as a difference). The unit tests' sanitizer build checks the
 * model whole. */
#ifdef RXP_FUZZING
#define DM_UNCHECKED __attribute__((no_sanitize("address")))
#else
#define DM_UNCHECKED
#endif

#define DM_MAXACC 64 /* fragments a model datagram may accept */

struct dm_frag {
	uint32_t off, end;
	bool mf;
	const uint8_t *src; /* bytes at src[off..end) */
};

struct dm_model {
	enum rxp_defrag_policy pol;
	bool open, first, last;
	uint32_t len;
	/* strict: runs; policy: fragments in arrival order */
	uint32_t rs[DM_MAXACC + 1], re[DM_MAXACC + 1];
	int nruns;
	struct dm_frag acc[DM_MAXACC];
	int nacc;
	uint32_t nblk; /* covered[] is clear from here on */
	uint32_t ncov; /* blocks set in covered[] */
	uint8_t covered[65536 / 8];
};

/* What a fragment did to the model. */
enum dm_result {
	DM_QUEUED, /* kept, the datagram is not complete */
	DM_DONE, /* completed the datagram: out[0..*olen) */
	DM_PASS, /* not a fragment (IPv4) or an atomic one (IPv6): out is it */
	DM_DUP, /* strict: inside data already held, dropped alone */
	DM_OVERLAP, /* strict: a partial overlap killed the datagram */
	DM_BAD, /* the end rules or a zero length killed the datagram */
};

static inline void dm_reset(struct dm_model *m)
{
	m->open = m->first = m->last = false;
	m->len = 0;
	m->nruns = m->nacc = 0;
	memset(m->covered, 0, m->nblk);
	m->nblk = m->ncov = 0;
}

/* Target policies: does n (later) win the bytes it shares with o? */
static inline bool dm_wins(enum rxp_defrag_policy p, const struct dm_frag *n,
			   const struct dm_frag *o)
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

/* One fragment in. out needs room for the datagram (at most 65535 bytes).
 * A fragment that would make the model accept more than DM_MAXACC fragments
 * must not be given. Not inlined, so that the fuzz build can leave it out
 * of coverage by name (tests/fuzz/coverage-ignore.txt). */
static __attribute__((noinline, unused)) DM_UNCHECKED enum dm_result
dm_input(struct dm_model *m, const struct dm_frag *f, uint8_t *out, uint32_t *olen)
{
	if (f->off == 0 && !f->mf) {
		/* Not a fragment (IPv4) or an atomic one (IPv6): passes by. */
		memcpy(out, f->src, f->end);
		*olen = f->end;
		return DM_PASS;
	}
	if (!m->open) {
		dm_reset(m);
		m->open = true;
	}
	if (!dt_model_end(&m->last, &m->len, f->end, f->mf) || f->end == f->off) {
		m->open = false;
		return DM_BAD;
	}
	if (m->pol == RXP_DEFRAG_STRICT) {
		int r = dt_model_runs(m->rs, m->re, &m->nruns, f->off, f->end);

		if (r == DT_RUN_OVL) {
			m->open = false;
			return DM_OVERLAP;
		}
		if (r == DT_RUN_DUP)
			return DM_DUP;
	}
	m->acc[m->nacc++] = *f;
	if (f->off == 0)
		m->first = true;
	for (uint32_t b = f->off / 8; b < (f->end + 7) / 8; b++) {
		m->ncov += !m->covered[b];
		m->covered[b] = 1;
	}
	if ((f->end + 7) / 8 > m->nblk)
		m->nblk = (f->end + 7) / 8;
	if (!m->first || !m->last)
		return DM_QUEUED;
	/* every block below the end covered: with none past it (nblk), a
	 * count says so; else look */
	if (m->nblk <= (m->len + 7) / 8) {
		if (m->ncov < (m->len + 7) / 8)
			return DM_QUEUED;
	} else {
		for (uint32_t b = 0; b < (m->len + 7) / 8; b++)
			if (!m->covered[b])
				return DM_QUEUED;
	}
	/* Complete: resolve bytes in arrival order. Each fragment meets the
	 * bytes it covers as runs of one owner (or none), decided once. */
	static int owner[65536];
	memset(owner, 0xff, m->len * sizeof(owner[0])); /* -1: no owner */
	for (int i = 0; i < m->nacc; i++) {
		const struct dm_frag *a = &m->acc[i];

		for (uint32_t b = a->off, e; b < a->end; b = e) {
			int o = owner[b];

			for (e = b + 1; e < a->end && owner[e] == o;)
				e++;
			if (o < 0 || dm_wins(m->pol, a, &m->acc[o])) {
				for (uint32_t k = b; k < e; k++)
					owner[k] = i;
				memcpy(out + b, a->src + b, e - b);
			}
		}
	}
	*olen = m->len;
	m->open = false;
	return DM_DONE;
}

#endif
