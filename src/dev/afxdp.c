/*
 * The afxdp device: one AF_XDP socket per queue (libxdp's xsk API), copy
 * mode by default, libxdp's default redirect program attached without the
 * multi-program dispatcher (LIBXDP_SKIP_DISPATCHER=1).
 *
 * Owns, per queue: a page pool whose backing store is registered as the
 * UMEM (one 4 KiB page = one frame), the socket and its four rings. UMEM
 * frames follow the same ownership accounting as ring pages: a frame is a
 * page-pool page, posted to the fill ring with its one reference; a received
 * frame becomes a packet with rxp_pkt_build() (the reference moves to the
 * packet, no copy), and when the packet is freed the page goes back to the
 * pool (on the polling thread into its cache, elsewhere through the return
 * ring) and is posted again. Frames sent through the TX ring hold one
 * reference until the completion ring returns them. posted/in_tx remember
 * which frames the kernel holds, so close() can take them back and the pool
 * can report exactly what is still outstanding.
 */
#include <errno.h>
#include <linux/if_link.h>
#include <linux/if_xdp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>
#include <xdp/xsk.h>

#include "rxpath/dev.h"
#include "rxpath/log.h"
#include "rxpath/page_pool.h"
#include "rxpath/pool.h"

#define FRAME 4096u
#define FILL_BATCH 64

struct xq {
	struct xsk_ring_prod fill, tx;
	struct xsk_ring_cons comp, rx;
	struct xsk_umem *umem;
	struct xsk_socket *xsk;
	struct rxp_page_pool *ppool;
	uint8_t *base;
	uint32_t nframes;
	unsigned owner;
	uint8_t *posted; /* per frame: 1 = in the kernel's fill/rx rings */
	uint8_t *in_tx; /* per frame: 1 = queued for transmit */
	uint64_t rx_packets, rx_bytes, tx_packets, tx_bytes, tx_drop, fill_empty;
};

struct afxdp {
	struct rxp_dev dev;
	uint32_t ring_size;
	struct xq q[];
};

static int xdp_print(enum libxdp_print_level level, const char *fmt, va_list ap)
{
	char buf[256];

	vsnprintf(buf, sizeof(buf), fmt, ap);
	buf[strcspn(buf, "\n")] = 0;
	/* libxdp's warnings describe what it tries and gives up on (a missing
	 * bpffs, a mode the driver lacks); the open's own error says what
	 * failed. Information, not warnings, for the application. */
	rxp_log(level == LIBXDP_WARN ? RXP_LOG_INFO : RXP_LOG_DEBUG, "libxdp: %s", buf);
	return 0;
}

static int bpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char buf[256];

	vsnprintf(buf, sizeof(buf), fmt, ap);
	buf[strcspn(buf, "\n")] = 0;
	rxp_log(level == LIBBPF_WARN ? RXP_LOG_INFO : RXP_LOG_DEBUG, "libbpf: %s", buf);
	return 0;
}

static uint32_t frame_of(struct xq *q, uint64_t addr)
{
	return (uint32_t)(addr / FRAME);
}

/* Post free pages to the fill ring, in batches. */
static void refill(struct afxdp *ax, struct xq *q)
{
	uint32_t idx, n = xsk_prod_nb_free(&q->fill, ax->ring_size);

	if (n < FILL_BATCH)
		return;
	n = xsk_ring_prod__reserve(&q->fill, n, &idx);
	for (uint32_t i = 0; i < n; i++) {
		struct rxp_page *pg = rxp_page_pool_alloc(q->ppool);

		if (!pg) {
			q->fill_empty++;
			/* Give back the slots we cannot fill. */
			q->fill.cached_prod -= n - i;
			n = i;
			break;
		}
		*xsk_ring_prod__fill_addr(&q->fill, idx + i) = (uint64_t)(pg->addr - q->base);
		q->posted[frame_of(q, (uint64_t)(pg->addr - q->base))] = 1;
	}
	if (n)
		xsk_ring_prod__submit(&q->fill, n);
}

static void complete_tx(struct xq *q)
{
	uint32_t idx, n = xsk_ring_cons__peek(&q->comp, 256, &idx);

	for (uint32_t i = 0; i < n; i++) {
		uint64_t a = *xsk_ring_cons__comp_addr(&q->comp, idx + i);
		uint32_t f = frame_of(q, a);

		if (f < q->nframes && q->in_tx[f]) {
			q->in_tx[f] = 0;
			rxp_page_put(rxp_page_pool_page_at(q->ppool, a));
		}
	}
	if (n)
		xsk_ring_cons__release(&q->comp, n);
}

static int ax_rx(struct rxp_dev *d, unsigned qi, struct rxp_pkt **pkts, unsigned n)
{
	struct afxdp *ax = (struct afxdp *)d;
	struct xq *q;
	uint32_t idx, got, out = 0;

	if (qi >= d->nqueues)
		return -EINVAL;
	q = &ax->q[qi];
	if (q->owner != rxp_thread_id()) {
		q->owner = rxp_thread_id();
		rxp_page_pool_set_owner(q->ppool);
	}
	complete_tx(q);
	got = xsk_ring_cons__peek(&q->rx, n, &idx);
	for (uint32_t i = 0; i < got; i++) {
		const struct xdp_desc *desc = xsk_ring_cons__rx_desc(&q->rx, idx + i);
		uint64_t a = xsk_umem__add_offset_to_addr(desc->addr);
		struct rxp_page *pg = rxp_page_pool_page_at(q->ppool, a);
		uint32_t off = (uint32_t)(a % FRAME);
		struct rxp_pkt *pkt;

		/* A frame the kernel does not hold (never posted, or given back
		 * twice) must not become a second owner of its page. */
		if (!pg || off + desc->len > FRAME || !q->posted[frame_of(q, a)]) {
			rxp_pktpool_count_drop(d->pp, RXP_DROP_RX_BAD_DESC, 1);
			continue; /* never ours: leave it */
		}
		q->posted[frame_of(q, a)] = 0;
		/* The page's reference moves to the packet (also on failure). */
		pkt = rxp_pkt_build(d->pp, pg, 0, FRAME, off, desc->len);
		if (!pkt)
			continue;
		pkt->queue = (uint16_t)qi;
		rxp_dev_classify(pkt, true);
		q->rx_packets++;
		q->rx_bytes += desc->len;
		pkts[out++] = pkt;
	}
	if (got)
		xsk_ring_cons__release(&q->rx, got);
	refill(ax, q);
	if (xsk_ring_prod__needs_wakeup(&q->fill))
		recvfrom(xsk_socket__fd(q->xsk), NULL, 0, MSG_DONTWAIT, NULL, NULL);
	return (int)out;
}

static int ax_wait(struct rxp_dev *d, unsigned qi, int ms)
{
	struct afxdp *ax = (struct afxdp *)d;
	struct pollfd p = {.fd = xsk_socket__fd(ax->q[qi < d->nqueues ? qi : 0].xsk),
			   .events = POLLIN};

	return poll(&p, 1, ms) < 0 ? -errno : 1;
}

static int ax_poll_fd(struct rxp_dev *d, unsigned qi)
{
	struct afxdp *ax = (struct afxdp *)d;

	return qi < d->nqueues && ax->q[qi].xsk ? xsk_socket__fd(ax->q[qi].xsk) : -1;
}

/* Consumes every packet: each is copied into a UMEM frame. */
static unsigned ax_tx(struct rxp_dev *d, unsigned qi, struct rxp_pkt **pkts, unsigned n)
{
	struct afxdp *ax = (struct afxdp *)d;
	struct xq *q = &ax->q[qi < d->nqueues ? qi : 0];
	unsigned sent = 0;

	complete_tx(q);
	for (unsigned i = 0; i < n; i++) {
		struct rxp_pkt *p = pkts[i];
		struct rxp_page *pg = NULL;
		uint32_t idx;

		if (p->len > FRAME || xsk_ring_prod__reserve(&q->tx, 1, &idx) != 1 ||
		    !(pg = rxp_page_pool_alloc(q->ppool))) {
			if (pg)
				rxp_page_put(pg);
			q->tx_drop++;
			rxp_pkt_drop(p, RXP_DROP_TX_RING_FULL);
			continue;
		}
		rxp_pkt_copy_bits(p, 0, pg->addr, p->len);
		xsk_ring_prod__tx_desc(&q->tx, idx)->addr = (uint64_t)(pg->addr - q->base);
		xsk_ring_prod__tx_desc(&q->tx, idx)->len = p->len;
		xsk_ring_prod__tx_desc(&q->tx, idx)->options = 0;
		xsk_ring_prod__submit(&q->tx, 1);
		q->in_tx[frame_of(q, (uint64_t)(pg->addr - q->base))] = 1;
		q->tx_packets++;
		q->tx_bytes += p->len;
		sent++;
		rxp_pkt_consume(p);
	}
	if (sent)
		sendto(xsk_socket__fd(q->xsk), NULL, 0, MSG_DONTWAIT, NULL, 0);
	return sent;
}

static void ax_stats(struct rxp_dev *d, struct rxp_dev_stats *st)
{
	struct afxdp *ax = (struct afxdp *)d;

	for (unsigned i = 0; i < d->nqueues; i++) {
		struct xq *q = &ax->q[i];
		struct xdp_statistics xs;
		socklen_t len = sizeof(xs);
		struct rxp_page_pool_stats ps;

		st->rx_packets += q->rx_packets;
		st->rx_bytes += q->rx_bytes;
		st->tx_packets += q->tx_packets;
		st->tx_bytes += q->tx_bytes;
		st->tx_dropped += q->tx_drop;
		if (q->xsk &&
		    !getsockopt(xsk_socket__fd(q->xsk), SOL_XDP, XDP_STATISTICS, &xs, &len)) {
			st->rx_no_buffer += xs.rx_fill_ring_empty_descs + xs.rx_ring_full;
			st->rx_dropped += xs.rx_dropped + xs.rx_ring_full;
		}
		rxp_page_pool_get_stats(q->ppool, &ps);
		st->pp_fast += ps.fast;
		st->pp_slow += ps.slow;
		st->pp_recycled += ps.recycled;
		st->pp_waived += ps.waived;
		st->pp_released += ps.released;
		st->pp_outstanding += ps.outstanding;
	}
}

static uint64_t ax_close(struct rxp_dev *d)
{
	struct afxdp *ax = (struct afxdp *)d;
	uint64_t out = 0;

	for (unsigned i = 0; i < d->nqueues; i++) {
		struct xq *q = &ax->q[i];

		if (q->xsk)
			xsk_socket__delete(q->xsk);
		if (q->umem)
			xsk_umem__delete(q->umem);
		/* The kernel is gone: take back what it held. */
		for (uint32_t f = 0; q->ppool && f < q->nframes; f++) {
			if (q->posted[f] || q->in_tx[f])
				rxp_page_put(rxp_page_pool_page_at(q->ppool, (uint64_t)f * FRAME));
		}
		if (q->ppool)
			out += rxp_page_pool_destroy(q->ppool);
		free(q->posted);
		free(q->in_tx);
	}
	free(ax);
	return out;
}

static const struct rxp_dev_ops ax_ops = {
	.kind = "afxdp",
	.rx_burst = ax_rx,
	.tx_burst = ax_tx,
	.wait = ax_wait,
	.poll_fd = ax_poll_fd,
	.get_stats = ax_stats,
	.close = ax_close,
};

static int open_queue(struct afxdp *ax, struct xq *q, const struct rxp_afxdp_config *cfg,
		      unsigned qid)
{
	struct rxp_page_pool_config pc = {.name = "umem", .page_size = FRAME};
	struct xsk_umem_config uc = {0};
	struct xsk_socket_config sc = {0};
	uint64_t len;
	int rc;

	q->nframes = cfg->n_frames ? cfg->n_frames : 4096;
	pc.n_pages = q->nframes;
	q->ppool = rxp_page_pool_create(&pc);
	q->posted = calloc(q->nframes, 1);
	q->in_tx = calloc(q->nframes, 1);
	if (!q->ppool || !q->posted || !q->in_tx)
		return -ENOMEM;
	q->owner = rxp_thread_id();
	rxp_page_pool_mem(q->ppool, &q->base, &len);
	uc.fill_size = ax->ring_size;
	uc.comp_size = ax->ring_size;
	uc.frame_size = FRAME;
	uc.frame_headroom = 0;
	rc = xsk_umem__create(&q->umem, q->base, len, &q->fill, &q->comp, &uc);
	if (rc)
		return rc;
	sc.rx_size = ax->ring_size;
	sc.tx_size = ax->ring_size;
	sc.xdp_flags = cfg->zero_copy ? XDP_FLAGS_DRV_MODE : XDP_FLAGS_SKB_MODE;
	sc.bind_flags = (cfg->zero_copy ? XDP_ZEROCOPY : XDP_COPY) | XDP_USE_NEED_WAKEUP;
	/* Right after a previous socket on this queue closed, the kernel may
	 * still hold the queue: bind fails with EBUSY for a moment. */
	for (int tries = 0;; tries++) {
		rc = xsk_socket__create(&q->xsk, cfg->ifname, qid, q->umem, &q->rx, &q->tx, &sc);
		if (rc != -EBUSY || tries >= 50)
			break;
		nanosleep(&(struct timespec){0, 100 * 1000 * 1000}, NULL);
	}
	if (rc) {
		q->xsk = NULL;
		return rc;
	}
	refill(ax, q);
	return 0;
}

struct rxp_dev *rxp_afxdp_open(const struct rxp_afxdp_config *cfg, struct rxp_pktpool *pp)
{
	unsigned nq = cfg->nqueues ? cfg->nqueues : 1;
	struct afxdp *ax;
	int rc = 0;

	if (!cfg->ifname || !pp || nq > 64) {
		errno = EINVAL;
		return NULL;
	}
	/* One program per interface, no dispatcher (needs no bpffs). */
	setenv("LIBXDP_SKIP_DISPATCHER", "1", 0);
	libxdp_set_print(xdp_print);
	libbpf_set_print(bpf_print);
	ax = calloc(1, sizeof(*ax) + nq * sizeof(ax->q[0]));
	if (!ax)
		return NULL;
	ax->dev.ops = &ax_ops;
	ax->dev.nqueues = nq;
	ax->dev.pp = pp;
	ax->ring_size = cfg->ring_size ? cfg->ring_size : 2048;
	snprintf(ax->dev.name, sizeof(ax->dev.name), "afxdp:%s", cfg->ifname);
	for (unsigned i = 0; i < nq; i++) {
		rc = open_queue(ax, &ax->q[i], cfg, i);
		if (rc)
			break;
	}
	if (rc) {
		rxp_log(RXP_LOG_ERR, "AF_XDP%s: %s", cfg->zero_copy ? " zero-copy" : "",
			strerror(-rc));
		ax_close(&ax->dev);
		errno = -rc;
		return NULL;
	}
	return &ax->dev;
}
