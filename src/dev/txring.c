/*
 * The transmit ring for XDP_TX and XDP_REDIRECT.
 *
 * Owns: its entries, each holding one page reference per segment of a queued
 * frame. Three free-running indices: prod (driver queued), hw (hardware
 * sent), cons (driver completed); cons <= hw <= prod <= cons + count.
 * Completion puts every reference of a sent frame exactly once, so the pages
 * go back to the receive ring's bias accounting (or their pool) only then.
 */
#include <errno.h>
#include <stdlib.h>

#include "rxpath/compiler.h"
#include "rxpath/pool.h"
#include "rxpath/ring.h"

struct tx_entry {
	uint32_t nsegs;
	uint32_t len;
	struct rxp_tx_seg segs[RXP_MAX_FRAGS + 1];
};

struct rxp_txring {
	uint32_t count, prod, hw, cons;
	_Atomic int owner; /* thread id that runs the ring; -1 before any use */
	struct rxp_txring_stats st;
	struct tx_entry *e;
};

struct rxp_txring *rxp_txring_create(unsigned count)
{
	struct rxp_txring *t;

	if (count < 1 || count > 65536) {
		errno = EINVAL;
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->e = calloc(count, sizeof(*t->e));
	if (!t->e) {
		free(t);
		return NULL;
	}
	t->count = count;
	t->owner = -1;
	return t;
}

void rxp_txring_destroy(struct rxp_txring *t)
{
	if (!t)
		return;
	rxp_txring_hw_send(t, ~0u, NULL, NULL);
	rxp_txring_complete(t, ~0u);
	free(t->e);
	free(t);
}

int rxp_txring_xmit_xdp(struct rxp_txring *t, const struct rxp_xdp_buff *x)
{
	struct tx_entry *e;
	int me = (int)rxp_thread_id(), owner = -1;

	if (rxp_unlikely(__atomic_load_n(&t->owner, __ATOMIC_RELAXED) != me) &&
	    !__atomic_compare_exchange_n(&t->owner, &owner, me, false, __ATOMIC_RELAXED,
					 __ATOMIC_RELAXED)) {
		__atomic_fetch_add(&t->st.foreign, 1, __ATOMIC_RELAXED); /* other threads */
		return -EXDEV;
	}
	if (rxp_unlikely(t->prod - t->cons >= t->count)) {
		t->st.full++;
		return -ENOSPC;
	}
	e = &t->e[t->prod % t->count];
	e->segs[0].page = x->page;
	e->segs[0].off = (uint32_t)(x->data - x->page->addr);
	e->segs[0].len = (uint32_t)(x->data_end - x->data);
	e->nsegs = 1;
	e->len = e->segs[0].len;
	if (x->mb) {
		for (unsigned k = 0; k < x->nr_frags; k++) {
			e->segs[e->nsegs].page = x->frags[k].page;
			e->segs[e->nsegs].off = x->frags[k].off;
			e->segs[e->nsegs].len = x->frags[k].size;
			e->len += x->frags[k].size;
			e->nsegs++;
		}
	}
	t->prod++;
	t->st.xmit++;
	return 0;
}

unsigned rxp_txring_hw_send(struct rxp_txring *t, unsigned n, rxp_tx_sink_fn sink, void *ctx)
{
	unsigned done = 0;

	while (done < n && t->hw != t->prod) {
		struct tx_entry *e = &t->e[t->hw % t->count];

		if (sink)
			sink(ctx, e->segs, e->nsegs, e->len);
		t->hw++;
		done++;
	}
	t->st.sent += done;
	return done;
}

unsigned rxp_txring_complete(struct rxp_txring *t, unsigned budget)
{
	unsigned done = 0;
	int me = (int)rxp_thread_id();

	if (__atomic_load_n(&t->owner, __ATOMIC_RELAXED) != me)
		__atomic_store_n(&t->owner, me, __ATOMIC_RELAXED);
	while (done < budget && t->cons != t->hw) {
		struct tx_entry *e = &t->e[t->cons % t->count];

		for (uint32_t s = 0; s < e->nsegs; s++)
			rxp_page_put(e->segs[s].page);
		t->cons++;
		done++;
	}
	t->st.completed += done;
	return done;
}

void rxp_txring_get_stats(const struct rxp_txring *t, struct rxp_txring_stats *st)
{
	*st = t->st;
}

unsigned rxp_txring_space(const struct rxp_txring *t)
{
	return t->count - (t->prod - t->cons);
}
