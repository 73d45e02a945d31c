/*
 * The sim device: a software NIC in front of rxp_rxring (model in
 * include/rxpath/sim.h).
 *
 * Owns, per queue: a receive ring (with its page pool and TX ring), a copy of
 * the traffic source, a staging buffer for one frame and the PRNG that places
 * zero-length descriptors. A frame the hardware could not place for lack of
 * posted buffers is dropped and counted (rx_no_buffer), as a NIC does.
 *
 * Invariant: queue q's state is touched only by the thread polling q; the
 * first rx_burst on a new thread makes that thread the page pool's owner.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rxpath/compiler.h"
#include "rxpath/pool.h"
#include "rxpath/sim.h"
#include "buf/rng.h"

struct simq {
	struct rxp_rxring *ring;
	struct rxp_src *src;
	unsigned owner;
	bool eof;
	uint32_t len, rss;
	uint64_t s; /* zero-length PRNG */
	uint64_t pending; /* frames written, not yet cleaned */
	uint64_t tx_packets, tx_bytes, rx_packets, rx_bytes, offered;
	uint64_t skipped; /* records the source made no frame of (queue 0) */
	uint64_t outgoing; /* frames the capturing host sent (queue 0) */
	uint8_t buf[RXP_GEN_FRAME_MAX + 64];
};

struct sim {
	struct rxp_dev dev;
	struct rxp_sim_config cfg;
	struct rxp_gen_config gen;
	char *pcap_path;
	struct rxp_src *(*src_open)(void *arg);
	void *src_arg;
	uint32_t zl_thresh; /* zero_len_rate scaled to 2^32 */
	struct simq *q[];
};

static struct rxp_src *open_src(struct sim *s)
{
	if (s->src_open)
		return s->src_open(s->src_arg);
	return s->pcap_path ? rxp_src_pcap(s->pcap_path) : rxp_src_gen(&s->gen);
}

/* The next frame of this queue's source that RSS steers to q (0), skipping
 * no more than *budget frames of other queues (SKIP_SPENT when they are
 * spent: the frames skipped are the other queues', nothing is lost); a
 * source's own error or end (negative) otherwise. A record the source made
 * no frame of is a drop of the reason it gives, and a frame the capturing
 * host sent is skipped, each counted by queue 0 alone (every queue reads a
 * source of its own). */
#define SKIP_SPENT 2
static int next_frame(struct sim *s, struct simq *sq, unsigned q, unsigned *budget)
{
	for (;;) {
		int rc = sq->src->next(sq->src, sq->buf, sizeof(sq->buf), &sq->len);

		if (rc == RXP_SRC_SKIPPED) {
			if (q == 0) {
				sq->skipped++;
				rxp_pktpool_count_drop(s->dev.pp, (enum rxp_drop_reason)sq->len, 1);
			}
			continue;
		}
		if (rc == RXP_SRC_OUTGOING) {
			sq->outgoing += q == 0;
			continue;
		}
		if (rc)
			return rc;
		sq->rss = rxp_rss_hash(sq->buf, sq->len, true);
		if (s->dev.nqueues == 1 || sq->rss % s->dev.nqueues == q)
			return 0;
		if (!*budget)
			return SKIP_SPENT;
		(*budget)--;
	}
}

static uint32_t zl_mask(struct sim *s, struct simq *sq, uint32_t len)
{
	unsigned nb;
	uint32_t m = 0;

	if (!s->zl_thresh)
		return 0;
	nb = rxp_rxring_bufs_for(sq->ring, len);
	for (unsigned k = 0; k <= nb && k < 32; k++)
		if ((uint32_t)rxp_splitmix64(&sq->s) < s->zl_thresh)
			m |= 1u << k;
	return m;
}

/* The hardware side: write up to n frames into q's posted buffers. */
static void hw_rx(struct sim *s, struct simq *sq, unsigned q, unsigned n)
{
	unsigned budget = 64 * s->dev.nqueues;

	for (unsigned i = 0; i < n && !sq->eof; i++) {
		int rc;

		rc = next_frame(s, sq, q, &budget);
		if (rc == SKIP_SPENT || rc == -EAGAIN)
			break; /* nothing more this poll; the source goes on */
		if (rc) {
			sq->eof = true;
			break;
		}
		sq->offered++;
		rc = rxp_rxring_hw_write(sq->ring, sq->buf, sq->len, sq->rss,
					 zl_mask(s, sq, sq->len));
		if (rc == 0)
			sq->pending++;
		/* -ENOBUFS: dropped and counted by the ring, as on a NIC; the
		 * source hears of it if it keeps accounts. */
		else if (sq->src->dropped)
			sq->src->dropped(sq->src, sq->buf, sq->len, RXP_DROP_RX_NO_BUFFER);
	}
}

static int sim_rx_burst(struct rxp_dev *d, unsigned q, struct rxp_pkt **pkts, unsigned n)
{
	struct sim *s = (struct sim *)d;
	struct simq *sq;
	unsigned nout = 0, done;

	if (q >= d->nqueues)
		return -EINVAL;
	sq = s->q[q];
	if (rxp_unlikely(sq->owner != rxp_thread_id())) {
		sq->owner = rxp_thread_id();
		rxp_page_pool_set_owner(rxp_rxring_page_pool(sq->ring));
	}
	/* Transmit what XDP_TX queued last time; the clean loop completes it. */
	rxp_txring_hw_send(rxp_rxring_txring(sq->ring), ~0u, NULL, NULL);
	hw_rx(s, sq, q, s->cfg.hw_burst ? s->cfg.hw_burst : n);
	done = rxp_rxring_clean(sq->ring, n, pkts, n, &nout);
	sq->pending -= done < sq->pending ? done : sq->pending;
	for (unsigned i = 0; i < nout; i++) {
		rxp_dev_classify(pkts[i], true);
		sq->rx_bytes += pkts[i]->len;
	}
	sq->rx_packets += nout;
	if (!nout && !done && sq->eof && !sq->pending)
		return -ENODATA;
	return (int)nout;
}

/* The sim NIC's wire goes nowhere: count and consume. */
static unsigned sim_tx_burst(struct rxp_dev *d, unsigned q, struct rxp_pkt **pkts, unsigned n)
{
	struct sim *s = (struct sim *)d;
	struct simq *sq = s->q[q < d->nqueues ? q : 0];

	for (unsigned i = 0; i < n; i++) {
		sq->tx_packets++;
		sq->tx_bytes += pkts[i]->len;
		rxp_pkt_consume(pkts[i]);
	}
	return n;
}

static int sim_set_xdp(struct rxp_dev *d, rxp_xdp_prog_fn prog, void *ctx)
{
	struct sim *s = (struct sim *)d;

	for (unsigned q = 0; q < d->nqueues; q++)
		rxp_rxring_set_xdp(s->q[q]->ring, prog, ctx);
	return 0;
}

static void sim_stats(struct rxp_dev *d, struct rxp_dev_stats *st)
{
	struct sim *s = (struct sim *)d;

	for (unsigned q = 0; q < d->nqueues; q++) {
		struct simq *sq = s->q[q];
		struct rxp_rxring_stats r;
		struct rxp_page_pool_stats p;

		rxp_rxring_get_stats(sq->ring, &r);
		rxp_page_pool_get_stats(rxp_rxring_page_pool(sq->ring), &p);
		st->rx_packets += sq->rx_packets;
		st->rx_bytes += sq->rx_bytes;
		st->rx_offered += sq->offered + sq->skipped; /* (skipped: dropped) */
		st->rx_outgoing += sq->outgoing;
		st->tx_packets += sq->tx_packets;
		st->tx_bytes += sq->tx_bytes;
		st->rx_no_buffer += r.rx_no_buffer;
		st->rx_dropped += r.rx_no_buffer + r.xdp_drop + r.xdp_aborted + r.too_many_frags +
				  r.bad_desc + r.tx_full + r.redirect_xthread + r.nomem +
				  sq->skipped;
		st->xdp_pass += r.pass;
		st->xdp_drop += r.xdp_drop;
		st->xdp_tx += r.xdp_tx;
		st->xdp_redirect += r.xdp_redirect;
		st->xdp_aborted += r.xdp_aborted;
		st->zero_len_descs += r.zero_len_descs;
		st->too_many_frags += r.too_many_frags;
		st->pp_fast += p.fast;
		st->pp_slow += p.slow;
		st->pp_recycled += p.recycled;
		st->pp_waived += p.waived;
		st->pp_released += p.released;
		st->pp_outstanding += p.outstanding;
	}
}

static uint64_t sim_close(struct rxp_dev *d)
{
	struct sim *s = (struct sim *)d;
	uint64_t out = 0;

	for (unsigned q = 0; q < d->nqueues; q++) {
		struct simq *sq = s->q[q];

		if (!sq)
			continue;
		if (sq->src)
			sq->src->close(sq->src);
		if (sq->ring)
			out += rxp_rxring_destroy(sq->ring);
		free(sq);
	}
	free(s->pcap_path);
	free(s);
	return out;
}

/* The fault wrapper's zero-length descriptors (rxp_fault_config.zero_len):
 * a property of the hardware side, so it is set here, before traffic. */
static int sim_set_rx_faults(struct rxp_dev *d, double rate, uint64_t seed)
{
	struct sim *s = (struct sim *)d;

	if (!(rate >= 0 && rate < 1))
		return -EINVAL;
	s->zl_thresh = (uint32_t)(rate * 4294967296.0);
	for (unsigned q = 0; q < d->nqueues; q++)
		s->q[q]->s = seed ^ (0x51u + q);
	return 0;
}

static const struct rxp_dev_ops sim_ops = {
	.kind = "sim",
	.set_rx_faults = sim_set_rx_faults,
	.rx_burst = sim_rx_burst,
	.tx_burst = sim_tx_burst,
	.set_xdp = sim_set_xdp,
	.get_stats = sim_stats,
	.close = sim_close,
};

struct rxp_dev *rxp_sim_open(const struct rxp_sim_config *cfg, struct rxp_pktpool *pp)
{
	unsigned nq = cfg->nqueues ? cfg->nqueues : 1;
	struct sim *s;
	int err = ENOMEM;

	if (!pp || nq > 64 || (!cfg->gen && !cfg->pcap_path && !cfg->src_open) ||
	    cfg->zero_len_rate < 0 || cfg->zero_len_rate >= 1 ||
	    cfg->hw_burst > RXP_SIM_HW_BURST_MAX) {
		errno = EINVAL;
		return NULL;
	}
	s = calloc(1, sizeof(*s) + nq * sizeof(s->q[0]));
	if (!s)
		return NULL;
	s->dev.ops = &sim_ops;
	s->dev.nqueues = nq;
	s->dev.pp = pp;
	snprintf(s->dev.name, sizeof(s->dev.name), "sim");
	s->cfg = *cfg;
	if (cfg->gen)
		s->gen = *cfg->gen;
	s->cfg.gen = NULL;
	s->src_open = cfg->src_open;
	s->src_arg = cfg->src_arg;
	if (cfg->pcap_path && !(s->pcap_path = strdup(cfg->pcap_path)))
		goto fail;
	s->zl_thresh = (uint32_t)(cfg->zero_len_rate * 4294967296.0);
	for (unsigned q = 0; q < nq; q++) {
		struct rxp_rxring_config rc = {
			.count = cfg->ring_size,
			.buf_size = cfg->buf_size,
			.page_size = cfg->page_size,
			.n_pages = cfg->n_pages,
			.queue = (uint16_t)q,
			.pp = pp,
			.xdp = cfg->xdp,
			.xdp_ctx = cfg->xdp_ctx,
		};
		struct simq *sq = calloc(1, sizeof(*sq));

		if (!sq)
			goto fail;
		s->q[q] = sq;
		sq->owner = rxp_thread_id();
		sq->s = cfg->seed ^ (0x51u + q);
		sq->ring = rxp_rxring_create(&rc);
		if (!sq->ring) {
			err = errno;
			goto fail;
		}
		sq->src = open_src(s);
		if (!sq->src) {
			err = errno ? errno : EINVAL;
			goto fail;
		}
	}
	return &s->dev;
fail:
	sim_close(&s->dev);
	errno = err;
	return NULL;
}
