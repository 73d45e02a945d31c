/*
 * Policy storage (the target-based overlap policies for IDS users): the
 * fragments of a queue unmerged, in arrival order, with a map of the 8-byte
 * blocks received (offsets are multiples of 8 and so is every end but the
 * last, so blocks are exact); the bytes are resolved at completion, pairwise
 * between each fragment and the one holding each byte, by the policy
 * (later_wins), and the datagram is built linear by copying.
 *
 * The queue owns every fragment in it; these functions move ownership only
 * as their comments say.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rxpath/compiler.h"

#include "net/defrag_internal.h"

#define DFR_BLOCK_BYTES 1024u /* 65536 / 8 bits */
#define DFR_POLICY_MAX_FRAGS 8192u

/* Consumes pkt on DFR_OK; otherwise the caller keeps it. */
int dfr_policy_insert(struct rxp_defrag_table *t, struct dfr_queue *q, struct rxp_pkt *pkt)
{
	struct dfr_cb *cb = dfr_cb(pkt);
	bool overlap = false;

	if (q->nfrags >= DFR_POLICY_MAX_FRAGS)
		return DFR_TOO_MANY;
	for (uint32_t b = cb->off / 8; b < (cb->end + 7) / 8; b++) {
		uint8_t bit = (uint8_t)(1u << (b & 7));

		if (q->blocks[b >> 3] & bit) {
			overlap = true;
		} else {
			q->blocks[b >> 3] |= bit;
			q->nblocks++;
		}
	}
	if (overlap)
		t->c.policy_overlaps++;
	pkt->next = NULL;
	if (q->arr_tail)
		q->arr_tail->next = pkt;
	else
		q->arr_head = pkt;
	q->arr_tail = pkt;
	return DFR_OK;
}

static bool later_wins(enum rxp_defrag_policy pol, const struct dfr_cb *nw,
		       const struct dfr_cb *old)
{
	switch (pol) {
	case RXP_DEFRAG_FIRST:
		return false;
	case RXP_DEFRAG_LAST:
		return true;
	case RXP_DEFRAG_BSD:
		return nw->off < old->off;
	case RXP_DEFRAG_BSD_RIGHT:
		return nw->off <= old->off && nw->end > old->end;
	case RXP_DEFRAG_LINUX:
		return nw->off <= old->off;
	case RXP_DEFRAG_WINDOWS:
		return nw->off < old->off && nw->end > old->end;
	case RXP_DEFRAG_SOLARIS:
		return nw->off < old->off && nw->end >= old->end;
	default:
		return false;
	}
}

static struct rxp_pkt *policy_build(struct rxp_defrag_table *t, struct dfr_queue *q)
{
	uint32_t n = 0, total = q->len, i, b, be;
	struct rxp_pkt *p, *first = NULL, *out;

	for (p = q->arr_head; p; p = p->next)
		t->fragv[n++] = p;
	/* blocks are exact (see the top): each 8-byte block, the last one
	 * ending at total, is held whole by every fragment that holds any of
	 * it, so ownership and the overlap checks go block by block */
	memset(t->owner, 0xff, (total + 7) / 8 * sizeof(t->owner[0]));
	for (i = 0; i < n; i++) {
		struct dfr_cb *cb = dfr_cb(t->fragv[i]);
		uint32_t lo = UINT32_MAX, hi = 0, fresh = 0;
		bool differ = false;

		if (!first && cb->off == 0)
			first = t->fragv[i];
		rxp_pkt_copy_bits(t->fragv[i], 0, t->ptmp, cb->end - cb->off);
		/* runs of blocks with one owner (or none): decided, copied and
		 * compared once */
		for (b = cb->off / 8; b * 8 < cb->end; b = be) {
			uint16_t o = t->owner[b];
			uint32_t s = b * 8, e;
			const uint8_t *v = t->ptmp + (s - cb->off);

			for (be = b + 1; be * 8 < cb->end && t->owner[be] == o;)
				be++;
			e = be * 8 < cb->end ? be * 8 : cb->end;
			if (o == 0xffff) {
				for (uint32_t k = b; k < be; k++)
					t->owner[k] = (uint16_t)i;
				memcpy(t->pdata + s, v, e - s);
				fresh += e - s;
				continue;
			}
			if (s < lo)
				lo = s;
			hi = e;
			differ |= memcmp(v, t->pdata + s, e - s) != 0;
			if (later_wins(t->cfg.policy, cb, dfr_cb(t->fragv[o]))) {
				for (uint32_t k = b; k < be; k++)
					t->owner[k] = (uint16_t)i;
				memcpy(t->pdata + s, v, e - s);
			}
		}
		if (hi && t->cfg.overlap_cb) {
			struct rxp_defrag_overlap ov = {
				.family = q->key.family,
				.id = q->key.id,
				.start = lo,
				.end = hi,
				.differ = differ,
			};
			t->cfg.overlap_cb(t->cfg.overlap_arg, &ov);
		}
		if (hi && dfr_wants(t, RXP_DEFRAG_EV_OVERLAP))
			dfr_ev_overlap(t, q, lo, hi, differ, !fresh);
	}
	out = rxp_pkt_alloc(first->pool, q->hdrlen + total);
	if (out) {
		uint8_t *d = rxp_pkt_put(out, q->hdrlen + total);

		memcpy(d, first->data - q->hdrlen, q->hdrlen);
		memcpy(d + q->hdrlen, t->pdata, total);
		out->tstamp_ns = first->tstamp_ns;
		out->protocol = first->protocol;
	}
	for (i = 0; i < n; i++) {
		t->fragv[i]->next = NULL;
		if (out)
			rxp_pkt_consume(t->fragv[i]);
		else
			rxp_pkt_drop(t->fragv[i], RXP_DROP_NOMEM);
	}
	q->arr_head = q->arr_tail = NULL;
	return out;
}

static int policy_init(struct rxp_defrag_table *t)
{
	/* calloc: the block maps are zero pages until their queue is used */
	t->blockmem = calloc(t->cfg.max_queues, DFR_BLOCK_BYTES);
	t->owner = malloc(65536 / 8 * sizeof(t->owner[0]));
	t->fragv = malloc(DFR_POLICY_MAX_FRAGS * sizeof(t->fragv[0]));
	t->pdata = malloc(65536);
	t->ptmp = malloc(65536);
	return t->blockmem && t->owner && t->fragv && t->pdata && t->ptmp ? 0 : -ENOMEM;
}

static void policy_fini(struct rxp_defrag_table *t)
{
	free(t->blockmem);
	free(t->owner);
	free(t->fragv);
	free(t->pdata);
	free(t->ptmp);
}

/* q's block map, cleared; no fragments. */
static void policy_reset(struct rxp_defrag_table *t, struct dfr_queue *q)
{
	q->blocks = t->blockmem + (size_t)(q - t->qarr) * DFR_BLOCK_BYTES;
	memset(q->blocks, 0, DFR_BLOCK_BYTES);
	q->nblocks = 0;
	q->arr_head = q->arr_tail = NULL;
}

/* Run fn on every fragment of q (which takes it over), leaving q empty. */
static void policy_drain(struct rxp_defrag_table *t, struct dfr_queue *q,
			 void (*fn)(void *, struct rxp_pkt *), void *arg)
{
	struct rxp_pkt *p, *pn;

	for (p = q->arr_head; p; p = pn) {
		pn = p->next;
		p->next = NULL;
		fn(arg, p);
	}
	q->arr_head = q->arr_tail = NULL;
}

const struct dfr_storage dfr_policy_storage = {
	.qcharge = DFR_BLOCK_BYTES,
	.init = policy_init,
	.fini = policy_fini,
	.reset = policy_reset,
	.build = policy_build,
	.drain = policy_drain,
};
