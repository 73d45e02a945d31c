/*
 * The capture wrapper: every packet received from (and, if asked, sent to)
 * the wrapped device is written to a pcap file, then passed on unchanged
 * (smoltcp's PcapWriter, for rxp_dev).
 *
 * Owns: the pcap writer (which serialises queues with its lock). It never
 * takes a packet: it reads it and hands it on.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "rxpath/dev.h"
#include "rxpath/wire.h"

struct capture {
	struct rxp_dev dev;
	struct rxp_pcap_writer *w;
	unsigned what;
	/* the file is raw IP and the device's link headers were taken off,
	 * or its frames have several link types (RXP_DEV_LINK_IP): each IP
	 * packet is written from its network header, and a frame that is
	 * not IP, which the file cannot hold, is counted (a raw-IP input's
	 * records are copied whatever they hold, as they were) */
	bool strip;
	_Atomic uint64_t not_ip; /* packets the file could not hold */
};

/* Writes pkt, unless it is not IP where the file cannot hold it (ARP from
 * a Linux cooked capture, say): written, it would read back as garbage.
 * An Ethernet frame among frames of other link types goes in from its IP
 * header. */
static void cap_write(struct capture *c, const struct rxp_pkt *pkt)
{
	uint32_t at = (uint32_t)(pkt->data - pkt->head);

	if (!c->strip) {
		rxp_pcap_writer_write_pkt(c->w, pkt);
		return;
	}
	if ((pkt->protocol != RXP_ETH_P_IP && pkt->protocol != RXP_ETH_P_IPV6) ||
	    pkt->network_off == 0xffff || pkt->network_off < at) {
		atomic_fetch_add_explicit(&c->not_ip, 1, memory_order_relaxed);
		return;
	}
	rxp_pcap_writer_write_from(c->w, pkt, pkt->network_off - at);
}

static int cap_rx(struct rxp_dev *d, unsigned q, struct rxp_pkt **pkts, unsigned n)
{
	struct capture *c = (struct capture *)d;
	int rc = rxp_dev_rx_burst(d->inner, q, pkts, n);

	if (rc > 0 && (c->what & RXP_CAPTURE_RX))
		for (int i = 0; i < rc; i++)
			cap_write(c, pkts[i]);
	return rc;
}

static unsigned cap_tx(struct rxp_dev *d, unsigned q, struct rxp_pkt **pkts, unsigned n)
{
	struct capture *c = (struct capture *)d;

	if (c->what & RXP_CAPTURE_TX)
		for (unsigned i = 0; i < n; i++)
			cap_write(c, pkts[i]);
	return rxp_dev_tx_burst(d->inner, q, pkts, n);
}

static int cap_wait(struct rxp_dev *d, unsigned q, int ms)
{
	return rxp_dev_wait(d->inner, q, ms);
}

static void cap_stats(struct rxp_dev *d, struct rxp_dev_stats *st)
{
	struct capture *c = (struct capture *)d;

	d->inner->ops->get_stats(d->inner, st);
	st->captured += rxp_pcap_writer_count(c->w);
	st->capture_not_ip += atomic_load_explicit(&c->not_ip, memory_order_relaxed);
}

static uint64_t cap_close(struct rxp_dev *d)
{
	struct capture *c = (struct capture *)d;
	uint64_t out;

	rxp_pcap_writer_close(c->w);
	out = rxp_dev_close(d->inner);
	free(c);
	return out;
}

static const struct rxp_dev_ops cap_ops = {
	.kind = "capture",
	.rx_burst = cap_rx,
	.tx_burst = cap_tx,
	.wait = cap_wait,
	.get_stats = cap_stats,
	.close = cap_close,
};

struct rxp_dev *rxp_capture_wrap(struct rxp_dev *inner, const char *path, unsigned what)
{
	struct capture *c;
	int err;

	if (!inner)
		return NULL;
	c = calloc(1, sizeof(*c));
	if (!c) {
		rxp_dev_close(inner);
		return NULL;
	}
	c->strip = rxp_dev_strips_link(inner);
	c->w = rxp_pcap_writer_open(path, rxp_dev_is_raw_ip(inner));
	if (!c->w) {
		err = errno;
		free(c);
		rxp_dev_close(inner);
		errno = err;
		return NULL;
	}
	c->what = what ? what : RXP_CAPTURE_RX;
	c->dev.ops = &cap_ops;
	c->dev.nqueues = inner->nqueues;
	c->dev.pp = inner->pp;
	c->dev.inner = inner;
	snprintf(c->dev.name, sizeof(c->dev.name), "capture(%.48s)", inner->name);
	return &c->dev;
}
