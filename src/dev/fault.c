/*
 * The fault-injection wrapper: loss, duplication and reordering within a
 * window, on top of any device (smoltcp's FaultInjector, for rxp_dev), and
 * zero-length descriptors, which it has the ring device below write.
 *
 * Owns, per queue: a PRNG (deterministic from the seed and the queue) and the
 * window of held packets. Packets lost here are dropped with
 * RXP_DROP_FAULT_INJECT; duplicates are private copies (rxp_pkt_copy), so
 * the two can be changed independently. When the wrapped queue reports the
 * end of its input, the window is emitted before -ENODATA is passed on, so
 * nothing is held at the end and nothing leaks.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rxpath/dev.h"
#include "rxpath/log.h"
#include "buf/rng.h"

#define WIN_MAX 64

struct faultq {
	uint64_t s;
	unsigned nheld;
	struct rxp_pkt *held[WIN_MAX];
	uint64_t lost, dup, reordered, tx_lost;
};

struct fault {
	struct rxp_dev dev;
	struct rxp_fault_config cfg;
	uint64_t loss_t, dup_t, txloss_t; /* probabilities scaled to 2^64 - 1 */
	struct faultq q[];
};

static uint64_t scale(double p)
{
	if (p <= 0)
		return 0;
	if (p >= 1)
		return UINT64_MAX;
	return (uint64_t)(p * 18446744073709551616.0);
}

/* Put pkt into the window (consumes pkt: the window holds it); returns the
 * packet to emit now (maybe pkt itself) or NULL. */
static struct rxp_pkt *window(struct fault *f, struct faultq *fq, struct rxp_pkt *pkt)
{
	unsigned w = f->cfg.reorder_window, i;
	struct rxp_pkt *out;

	if (w <= 1)
		return pkt;
	fq->held[fq->nheld++] = pkt;
	if (fq->nheld < w)
		return NULL;
	i = (unsigned)(rxp_splitmix64(&fq->s) % fq->nheld);
	out = fq->held[i];
	if (i != 0)
		fq->reordered++;
	/* Keep arrival order among the rest. */
	memmove(&fq->held[i], &fq->held[i + 1], (fq->nheld - i - 1) * sizeof(fq->held[0]));
	fq->nheld--;
	return out;
}

static int fault_rx(struct rxp_dev *d, unsigned q, struct rxp_pkt **pkts, unsigned n)
{
	struct fault *f = (struct fault *)d;
	struct faultq *fq;
	struct rxp_pkt *in[64];
	unsigned got = 0;
	int rc;

	if (q >= d->nqueues)
		return -EINVAL;
	fq = &f->q[q];
	/* Ask for half: each packet may come out twice. */
	rc = rxp_dev_rx_burst(d->inner, q, in, n / 2 ? (n / 2 < 64 ? n / 2 : 64) : 1);
	if (rc == -ENODATA) {
		while (fq->nheld && got < n) {
			pkts[got++] = fq->held[0];
			memmove(&fq->held[0], &fq->held[1], --fq->nheld * sizeof(fq->held[0]));
		}
		return got ? (int)got : -ENODATA;
	}
	if (rc < 0)
		return rc;
	for (int i = 0; i < rc; i++) {
		struct rxp_pkt *p = in[i], *o;

		if (rxp_splitmix64(&fq->s) < f->loss_t) {
			fq->lost++;
			rxp_pkt_drop(p, RXP_DROP_FAULT_INJECT);
			continue;
		}
		/* a duplicate only while both copies fit in what was asked */
		if (rxp_splitmix64(&fq->s) < f->dup_t && got + 2 <= n) {
			struct rxp_pkt *c = rxp_pkt_copy(p);

			if (c) {
				fq->dup++;
				o = window(f, fq, c);
				if (o)
					pkts[got++] = o;
			}
		}
		o = window(f, fq, p);
		if (o)
			pkts[got++] = o;
	}
	return (int)got;
}

/* Consumes every packet. */
static unsigned fault_tx(struct rxp_dev *d, unsigned q, struct rxp_pkt **pkts, unsigned n)
{
	struct fault *f = (struct fault *)d;
	struct faultq *fq = &f->q[q < d->nqueues ? q : 0];
	unsigned k = 0;

	for (unsigned i = 0; i < n; i++) {
		if (rxp_splitmix64(&fq->s) < f->txloss_t) {
			fq->tx_lost++;
			rxp_pkt_drop(pkts[i], RXP_DROP_FAULT_INJECT);
		} else {
			pkts[k++] = pkts[i];
		}
	}
	return k ? rxp_dev_tx_burst(d->inner, q, pkts, k) : 0;
}

static void fault_stats(struct rxp_dev *d, struct rxp_dev_stats *st)
{
	struct fault *f = (struct fault *)d;

	d->inner->ops->get_stats(d->inner, st);
	for (unsigned q = 0; q < d->nqueues; q++) {
		st->fault_lost += f->q[q].lost;
		st->fault_duplicated += f->q[q].dup;
		st->fault_reordered += f->q[q].reordered;
		st->tx_dropped += f->q[q].tx_lost;
	}
}

static uint64_t fault_close(struct rxp_dev *d)
{
	struct fault *f = (struct fault *)d;
	uint64_t out;

	for (unsigned q = 0; q < d->nqueues; q++)
		for (unsigned i = 0; i < f->q[q].nheld; i++)
			rxp_pkt_drop(f->q[q].held[i], RXP_DROP_FAULT_INJECT);
	out = rxp_dev_close(d->inner);
	free(f);
	return out;
}

static int fault_wait(struct rxp_dev *d, unsigned q, int ms)
{
	return rxp_dev_wait(d->inner, q, ms);
}

static const struct rxp_dev_ops fault_ops = {
	.kind = "fault",
	.rx_burst = fault_rx,
	.tx_burst = fault_tx,
	.wait = fault_wait,
	.get_stats = fault_stats,
	.close = fault_close,
};

struct rxp_dev *rxp_fault_wrap(struct rxp_dev *inner, const struct rxp_fault_config *cfg)
{
	struct fault *f;

	if (!inner)
		return NULL;
	/* Probabilities in [0, 1] (NaN fails every comparison, so is refused). */
	if (cfg->reorder_window > WIN_MAX || !(cfg->loss >= 0 && cfg->loss <= 1) ||
	    !(cfg->duplicate >= 0 && cfg->duplicate <= 1) ||
	    !(cfg->tx_loss >= 0 && cfg->tx_loss <= 1) ||
	    !(cfg->zero_len >= 0 && cfg->zero_len < 1)) {
		rxp_log(RXP_LOG_ERR,
			"fault: probabilities must be in [0, 1] (zl below 1), the window at most "
			"%u",
			WIN_MAX);
		rxp_dev_close(inner);
		errno = EINVAL;
		return NULL;
	}
	if (cfg->zero_len > 0) {
		struct rxp_dev *r = inner;
		int rc;

		while (r && !r->ops->set_rx_faults)
			r = r->inner;
		rc = r ? r->ops->set_rx_faults(r, cfg->zero_len, cfg->seed) : -EOPNOTSUPP;
		if (rc) {
			rxp_log(RXP_LOG_ERR, "fault: zl needs a device with a receive ring (sim)");
			rxp_dev_close(inner);
			errno = -rc;
			return NULL;
		}
	}
	f = calloc(1, sizeof(*f) + inner->nqueues * sizeof(f->q[0]));
	if (!f) {
		rxp_dev_close(inner);
		return NULL;
	}
	f->dev.ops = &fault_ops;
	f->dev.nqueues = inner->nqueues;
	f->dev.pp = inner->pp;
	f->dev.inner = inner;
	snprintf(f->dev.name, sizeof(f->dev.name), "fault(%.50s)", inner->name);
	f->cfg = *cfg;
	f->loss_t = scale(cfg->loss);
	f->dup_t = scale(cfg->duplicate);
	f->txloss_t = scale(cfg->tx_loss);
	for (unsigned q = 0; q < inner->nqueues; q++)
		f->q[q].s = cfg->seed * 0x100000001b3ull + q;
	return &f->dev;
}
