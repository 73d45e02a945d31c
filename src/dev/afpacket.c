/*
 * The afpacket device: TPACKET_V3 receive rings, one AF_PACKET socket per
 * queue, joined in one PACKET_FANOUT_HASH group so the kernel spreads flows
 * over the queues (its flow hash keeps a datagram's fragments together as
 * long as they carry the same addresses).
 *
 * Owns, per queue: the socket, its mmapped ring of blocks and the position
 * in the block being read. A block belongs to us from the moment its status
 * says TP_STATUS_USER until we hand it back (TP_STATUS_KERNEL) after copying
 * every frame in it into packets; a burst may stop in the middle of a block
 * and the next one resumes there.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rxpath/dev.h"
#include "rxpath/log.h"

#ifndef PACKET_IGNORE_OUTGOING
#define PACKET_IGNORE_OUTGOING 23
#endif

struct apq {
	int fd;
	uint8_t *map;
	size_t map_len;
	uint32_t block_size, nblocks, cur;
	/* inside the current block */
	uint32_t left;
	struct tpacket3_hdr *next;
	uint64_t rx_packets, rx_bytes, kdrops, tx_packets, tx_bytes, tx_drop, nomem;
};

struct afpacket {
	struct rxp_dev dev;
	int ifindex;
	struct apq q[];
};

static int open_queue(struct afpacket *ap, struct apq *q, const struct rxp_afpacket_config *cfg,
		      uint16_t fanout_id)
{
	struct tpacket_req3 req;
	struct sockaddr_ll sll;
	int v = TPACKET_V3, one = 1, fanout;

	q->fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL));
	if (q->fd < 0)
		return -errno;
	if (setsockopt(q->fd, SOL_PACKET, PACKET_VERSION, &v, sizeof(v)))
		return -errno;
	memset(&req, 0, sizeof(req));
	req.tp_block_size = q->block_size;
	req.tp_block_nr = q->nblocks;
	req.tp_frame_size = 2048;
	req.tp_frame_nr = q->block_size / 2048 * q->nblocks;
	req.tp_retire_blk_tov = 2; /* ms: hand over part-filled blocks soon */
	if (setsockopt(q->fd, SOL_PACKET, PACKET_RX_RING, &req, sizeof(req)))
		return -errno;
	q->map_len = (size_t)q->block_size * q->nblocks;
	q->map = mmap(NULL, q->map_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_LOCKED, q->fd, 0);
	if (q->map == MAP_FAILED) {
		q->map = mmap(NULL, q->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, q->fd, 0);
		if (q->map == MAP_FAILED) {
			q->map = NULL;
			return -errno;
		}
	}
	/* Our own transmissions are not input. */
	setsockopt(q->fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one));
	memset(&sll, 0, sizeof(sll));
	sll.sll_family = AF_PACKET;
	sll.sll_protocol = htons(ETH_P_ALL);
	sll.sll_ifindex = ap->ifindex;
	if (bind(q->fd, (struct sockaddr *)&sll, sizeof(sll)))
		return -errno;
	/* No PACKET_FANOUT_FLAG_DEFRAG: frames must arrive as sent. */
	fanout = fanout_id | (PACKET_FANOUT_HASH << 16);
	if (setsockopt(q->fd, SOL_PACKET, PACKET_FANOUT, &fanout, sizeof(fanout)))
		return -errno;
	return 0;
}

static inline struct tpacket_block_desc *block(struct apq *q, uint32_t i)
{
	return (struct tpacket_block_desc *)(q->map + (size_t)i * q->block_size);
}

static int ap_rx(struct rxp_dev *d, unsigned qi, struct rxp_pkt **pkts, unsigned n)
{
	struct afpacket *ap = (struct afpacket *)d;
	struct apq *q;
	unsigned got = 0;

	if (qi >= d->nqueues)
		return -EINVAL;
	q = &ap->q[qi];
	while (got < n) {
		struct tpacket_block_desc *b = block(q, q->cur);
		struct tpacket3_hdr *h;
		struct rxp_pkt *pkt;

		if (!q->left) {
			if (!(__atomic_load_n(&b->hdr.bh1.block_status, __ATOMIC_ACQUIRE) &
			      TP_STATUS_USER))
				break;
			q->left = b->hdr.bh1.num_pkts;
			q->next = (struct tpacket3_hdr *)((uint8_t *)b +
							  b->hdr.bh1.offset_to_first_pkt);
			if (!q->left) {
				__atomic_store_n(&b->hdr.bh1.block_status, TP_STATUS_KERNEL,
						 __ATOMIC_RELEASE);
				q->cur = (q->cur + 1) % q->nblocks;
				continue;
			}
		}
		h = q->next;
		pkt = rxp_pkt_alloc(d->pp, h->tp_snaplen);
		if (pkt) {
			memcpy(rxp_pkt_put(pkt, h->tp_snaplen), (uint8_t *)h + h->tp_mac,
			       h->tp_snaplen);
			pkt->tstamp_ns = (uint64_t)h->tp_sec * 1000000000ull + h->tp_nsec;
			pkt->queue = (uint16_t)qi;
			rxp_dev_classify(pkt, true);
			pkts[got++] = pkt;
			q->rx_packets++;
			q->rx_bytes += h->tp_snaplen;
		} else {
			q->nomem++; /* counted by the pool (alloc_fail / nomem) */
			rxp_pktpool_count_drop(d->pp, RXP_DROP_NOMEM, 1);
		}
		q->next = (struct tpacket3_hdr *)((uint8_t *)h + h->tp_next_offset);
		if (--q->left == 0) {
			__atomic_store_n(&b->hdr.bh1.block_status, TP_STATUS_KERNEL,
					 __ATOMIC_RELEASE);
			q->cur = (q->cur + 1) % q->nblocks;
		}
	}
	return (int)got;
}

static int ap_wait(struct rxp_dev *d, unsigned qi, int ms)
{
	struct afpacket *ap = (struct afpacket *)d;
	struct apq *q = &ap->q[qi < d->nqueues ? qi : 0];
	struct pollfd p = {.fd = q->fd, .events = POLLIN};

	if (q->left || (block(q, q->cur)->hdr.bh1.block_status & TP_STATUS_USER))
		return 1;
	return poll(&p, 1, ms) < 0 ? -errno : 1;
}

static int ap_poll_fd(struct rxp_dev *d, unsigned qi)
{
	struct afpacket *ap = (struct afpacket *)d;

	return qi < d->nqueues ? ap->q[qi].fd : -1;
}

/* Consumes every packet. */
static unsigned ap_tx(struct rxp_dev *d, unsigned qi, struct rxp_pkt **pkts, unsigned n)
{
	struct afpacket *ap = (struct afpacket *)d;
	struct apq *q = &ap->q[qi < d->nqueues ? qi : 0];
	uint8_t buf[9216 + 64];
	unsigned sent = 0;

	for (unsigned i = 0; i < n; i++) {
		struct rxp_pkt *p = pkts[i];

		if (p->len > sizeof(buf) || rxp_pkt_copy_bits(p, 0, buf, p->len) ||
		    send(q->fd, buf, p->len, MSG_DONTWAIT) != (ssize_t)p->len) {
			q->tx_drop++;
			rxp_pkt_drop(p, RXP_DROP_TX_ERROR);
			continue;
		}
		q->tx_packets++;
		q->tx_bytes += p->len;
		sent++;
		rxp_pkt_consume(p);
	}
	return sent;
}

static void ap_stats(struct rxp_dev *d, struct rxp_dev_stats *st)
{
	struct afpacket *ap = (struct afpacket *)d;

	for (unsigned i = 0; i < d->nqueues; i++) {
		struct apq *q = &ap->q[i];
		struct tpacket_stats_v3 ks;
		socklen_t len = sizeof(ks);

		/* The kernel resets its counters on read: accumulate. */
		if (q->fd >= 0 && !getsockopt(q->fd, SOL_PACKET, PACKET_STATISTICS, &ks, &len))
			q->kdrops += ks.tp_drops;
		st->rx_packets += q->rx_packets;
		st->rx_bytes += q->rx_bytes;
		st->rx_no_buffer += q->kdrops;
		st->rx_dropped += q->kdrops + q->nomem;
		st->tx_packets += q->tx_packets;
		st->tx_bytes += q->tx_bytes;
		st->tx_dropped += q->tx_drop;
	}
}

static uint64_t ap_close(struct rxp_dev *d)
{
	struct afpacket *ap = (struct afpacket *)d;

	for (unsigned i = 0; i < d->nqueues; i++) {
		if (ap->q[i].map)
			munmap(ap->q[i].map, ap->q[i].map_len);
		if (ap->q[i].fd >= 0)
			close(ap->q[i].fd);
	}
	free(ap);
	return 0;
}

static const struct rxp_dev_ops ap_ops = {
	.kind = "afpacket",
	.rx_burst = ap_rx,
	.tx_burst = ap_tx,
	.wait = ap_wait,
	.poll_fd = ap_poll_fd,
	.get_stats = ap_stats,
	.close = ap_close,
};

struct rxp_dev *rxp_afpacket_open(const struct rxp_afpacket_config *cfg, struct rxp_pktpool *pp)
{
	unsigned nq = cfg->nqueues ? cfg->nqueues : 1;
	uint16_t fid = cfg->fanout_id ? cfg->fanout_id : (uint16_t)(getpid() ^ 0x5a5a);
	struct afpacket *ap;
	int rc = 0;

	if (!cfg->ifname || !pp || nq > 64) {
		errno = EINVAL;
		return NULL;
	}
	ap = calloc(1, sizeof(*ap) + nq * sizeof(ap->q[0]));
	if (!ap)
		return NULL;
	ap->dev.ops = &ap_ops;
	ap->dev.nqueues = nq;
	ap->dev.pp = pp;
	snprintf(ap->dev.name, sizeof(ap->dev.name), "afpacket:%s", cfg->ifname);
	ap->ifindex = (int)if_nametoindex(cfg->ifname);
	for (unsigned i = 0; i < nq; i++)
		ap->q[i].fd = -1;
	if (!ap->ifindex) {
		rc = -ENODEV;
		goto fail;
	}
	for (unsigned i = 0; i < nq; i++) {
		ap->q[i].block_size = cfg->block_size ? cfg->block_size : 1u << 20;
		ap->q[i].nblocks = cfg->nblocks ? cfg->nblocks : 8;
		rc = open_queue(ap, &ap->q[i], cfg, fid);
		if (rc)
			goto fail;
	}
	return &ap->dev;
fail:
	rxp_log(RXP_LOG_ERR, "AF_PACKET: %s", strerror(-rc));
	ap_close(&ap->dev);
	errno = -rc;
	return NULL;
}
