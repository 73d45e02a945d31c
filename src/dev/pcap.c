/*
 * pcap files through libpcap: a device that reads a capture (pcap or pcapng;
 * Ethernet, raw IPv4/IPv6, and the link types rxp_decap_link knows, whose
 * headers it takes off), a frame source for the sim NIC, and a writer.
 *
 * Owns: the pcap_t handle (and, for the writer, the dumper). The device
 * copies each record into a packet from the caller's pool; the record's
 * capture time becomes pkt->tstamp_ns. Truncated records (caplen < len) are
 * delivered as captured; records larger than the pool's biggest buffer are
 * dropped and counted (pkt_too_big).
 */
#include <errno.h>
#include <pcap/pcap.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "rxpath/decap.h"
#include "rxpath/dev.h"
#include "rxpath/log.h"
#include "rxpath/sim.h"
#include "rxpath/wire.h"

#ifndef DLT_IPV4
#define DLT_IPV4 228
#endif
#ifndef DLT_IPV6
#define DLT_IPV6 229
#endif

/* What is in front of the IP header: Ethernet (kept: the device's classify
 * reads it); nothing; or another link layer rxp_decap_link knows (Linux
 * cooked SLL and SLL2 from tcpdump -i any, BSD loopback NULL and LOOP,
 * PPP, Cisco HDLC, NFLOG, 802.11 and radiotap), which is taken off. */

/* Raw IP, under any of its link type values (DLT_RAW is 12, 14 on
 * OpenBSD; LINKTYPE_RAW 101; IPV4, IPV6). */
static bool raw_link(uint32_t lt)
{
	return lt == DLT_RAW || lt == 12 || lt == 14 || lt == RXP_LINKTYPE_RAW || lt == DLT_IPV4 ||
	       lt == DLT_IPV6;
}

/* Open a capture: the file with fopen, so that a missing or unreadable
 * file fails with its own errno (libpcap would report its text only), then
 * libpcap on the stream. "-" is standard input. The error logged names the
 * cause, not the path (the caller knows it). */
static int open_offline(const char *path, pcap_t **out, enum rxp_dev_link *kind, int *dltp)
{
	char err[PCAP_ERRBUF_SIZE];
	struct stat st;
	FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
	pcap_t *p;
	int dlt;

	if (!f)
		return -errno;
	if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
		fclose(f);
		return -EISDIR;
	}
	p = pcap_fopen_offline_with_tstamp_precision(f, PCAP_TSTAMP_PRECISION_NANO, err);
	if (!p) {
		if (f != stdin)
			fclose(f);
		rxp_log(RXP_LOG_ERR, "not a pcap or pcapng capture (%s)", err);
		return -EINVAL;
	}
	dlt = pcap_datalink(p);
	if (dlt == DLT_EN10MB ||
	    (dlt >= 0 && (raw_link((uint32_t)dlt) || rxp_decap_linktype_known((uint32_t)dlt)))) {
		*kind = rxp_dev_link_of((uint32_t)dlt);
	} else {
		const char *name = pcap_datalink_val_to_name(dlt);

		rxp_log(RXP_LOG_ERR,
			"link type %d%s%s%s not supported: Ethernet, raw IP, Linux cooked (SLL, "
			"SLL2), BSD loopback (NULL, LOOP), PPP, PPPoE, Cisco HDLC, NFLOG, 802.11 "
			"and radiotap are",
			dlt, name ? " (" : "", name ? name : "", name ? ")" : "");
		pcap_close(p);
		return -EPROTONOSUPPORT;
	}
	*dltp = dlt;
	*out = p;
	return 0;
}

/* A record's capture time in nanoseconds (the handle is opened with
 * nanosecond precision). A classic pcap file's seconds are an unsigned
 * 32-bit field, which libpcap reads as signed: times from 2038-01-19 on
 * come back negative, and are taken as the unsigned value, as Wireshark
 * reads them (fuzz_capture). */
static uint64_t ts_ns(const struct pcap_pkthdr *h)
{
	int64_t sec = (int64_t)h->ts.tv_sec;

	if (sec < 0 && sec >= INT32_MIN)
		sec += (int64_t)1 << 32;
	return (uint64_t)sec * 1000000000ull + (uint64_t)h->ts.tv_usec;
}

/* An Ethernet frame in which the classifier (IP behind at most two
 * 802.1Q/802.1ad tags) found no IP, kept whole in pkt: its IP packet found
 * through the wire layer (rxp_decap_link: behind more tags or 0x9100 ones,
 * MPLS labels or a PPPoE session), as rxpath defrag and tshark read such
 * frames, so the stack pulls to it and a capture written from the device
 * still has the frame. A payload that is not IP (ARP, a PPPoE session's
 * LCP, an MPLS pseudowire), or headers that do not parse, leave it not IP,
 * as a frame with a VLAN tag cut short is: a NIC delivers it, and the
 * stack counts it. */
static void eth_carried_ip(struct rxp_pkt *pkt, const uint8_t *frame, uint32_t len)
{
	struct rxp_decap d;

	if (rxp_decap_link(&d, RXP_LINKTYPE_ETHERNET, frame, len) != RXP_DECAP_OK)
		return;
	pkt->protocol = d.family == 4 ? RXP_ETH_P_IP : RXP_ETH_P_IPV6;
	pkt->network_off = (uint16_t)(pkt->data - pkt->head + d.ip_off);
	pkt->hash = rxp_rss_hash(frame + d.ip_off, len - d.ip_off, false);
}

struct rxp_pkt *rxp_dev_frame_pkt(struct rxp_pktpool *pp, uint32_t linktype, const uint8_t *frame,
				  uint32_t caplen, enum rxp_drop_reason *why)
{
	bool eth = linktype == RXP_LINKTYPE_ETHERNET, raw = raw_link(linktype);
	struct rxp_pkt *pkt;
	uint32_t skip = 0;
	uint16_t et = 0;

	if (!caplen) { /* (whatever the link type) */
		*why = RXP_DROP_PKT_TOO_SMALL;
		return NULL;
	}
	if (!eth && !raw) {
		int r;

		if (!rxp_decap_linktype_known(linktype)) {
			*why = RXP_DROP_LINKTYPE;
			return NULL;
		}
		r = rxp_decap_payload(linktype, frame, caplen, &et);
		if (r < 0) {
			*why = RXP_DROP_L2_MALFORMED;
			return NULL;
		}
		skip = (uint32_t)r;
	}
	pkt = rxp_pkt_alloc(pp, caplen - skip);
	if (!pkt) {
		*why = RXP_DROP_PKT_TOO_BIG;
		return NULL;
	}
	memcpy(rxp_pkt_put(pkt, caplen - skip), frame + skip, caplen - skip);
	if (et) {
		/* the protocol is the link header's: classified once */
		pkt->protocol = et;
		pkt->network_off = (uint16_t)(pkt->data - pkt->head);
		pkt->hash = rxp_rss_hash(pkt->data, rxp_pkt_headlen(pkt), false);
	} else {
		rxp_dev_classify(pkt, eth);
		if (!eth && !raw)
			pkt->protocol = 0; /* its link said nothing: not IP */
		else if (eth && !pkt->protocol)
			eth_carried_ip(pkt, frame, caplen);
	}
	return pkt;
}

/* ---- the device ----------------------------------------------------------- */

struct pcapdev {
	struct rxp_dev dev;
	pcap_t *p;
	enum rxp_dev_link kind;
	int dlt;
	bool eof, cut;
	uint64_t rx_packets, rx_bytes, dropped, tx_packets;
	uint64_t outgoing; /* frames the capturing host sent: skipped */
	uint64_t first_ns, last_ns;
};

static int pcapdev_rx(struct rxp_dev *d, unsigned q, struct rxp_pkt **pkts, unsigned n)
{
	struct pcapdev *pd = (struct pcapdev *)d;
	unsigned got = 0;

	if (q != 0)
		return -EINVAL;
	while (got < n && !pd->eof) {
		struct pcap_pkthdr *h;
		const u_char *data;
		int rc = pcap_next_ex(pd->p, &h, &data);
		enum rxp_drop_reason why;
		struct rxp_pkt *pkt;
		uint32_t len;

		if (rc != 1) {
			/* -2: the end; -1: a record cut short or corrupt
			 * (libpcap says which), after which nothing can be
			 * read: said once, and counted for the caller */
			if (rc == PCAP_ERROR) {
				const char *e = pcap_geterr(pd->p);

				pd->cut = true;
				/* not a damaged file: one libpcap cannot read */
				if (strstr(e, "different from the type of the first interface"))
					rxp_log(RXP_LOG_WARN,
						"read stopped after %llu frames: %s (libpcap reads "
						"no pcapng whose interfaces have different link "
						"types; rxpath run --pcap, capture --read and "
						"defrag do)",
						(unsigned long long)(pd->rx_packets + pd->dropped),
						e);
				else
					rxp_log(RXP_LOG_WARN,
						"input cut off or corrupt after %llu frames: %s",
						(unsigned long long)(pd->rx_packets + pd->dropped),
						e);
			}
			pd->eof = true;
			break;
		}
		/* as a live AF_PACKET device, which does not receive them */
		if (rxp_decap_outgoing((uint32_t)pd->dlt, data, h->caplen)) {
			pd->outgoing++;
			continue;
		}
		pkt = rxp_dev_frame_pkt(d->pp, (uint32_t)pd->dlt, data, h->caplen, &why);
		if (!pkt) {
			pd->dropped++;
			rxp_pktpool_count_drop(d->pp, why, 1);
			continue;
		}
		len = pkt->len;
		pkt->tstamp_ns = ts_ns(h);
		if (!pd->rx_packets)
			pd->first_ns = pkt->tstamp_ns;
		pd->last_ns = pkt->tstamp_ns;
		pd->rx_packets++;
		pd->rx_bytes += len;
		pkts[got++] = pkt;
	}
	if (!got && pd->eof)
		return -ENODATA;
	return (int)got;
}

static unsigned pcapdev_tx(struct rxp_dev *d, unsigned q, struct rxp_pkt **pkts, unsigned n)
{
	struct pcapdev *pd = (struct pcapdev *)d;

	/* A file has no wire to send on: count and consume. */
	for (unsigned i = 0; i < n; i++)
		rxp_pkt_consume(pkts[i]);
	pd->tx_packets += n;
	return n;
}

static void pcapdev_stats(struct rxp_dev *d, struct rxp_dev_stats *st)
{
	struct pcapdev *pd = (struct pcapdev *)d;

	st->rx_packets += pd->rx_packets;
	st->rx_bytes += pd->rx_bytes;
	st->rx_dropped += pd->dropped;
	st->tx_packets += pd->tx_packets;
	st->first_tstamp_ns = pd->first_ns;
	st->last_tstamp_ns = pd->last_ns;
	st->rx_input_cut += pd->cut;
	st->rx_outgoing += pd->outgoing;
}

static uint64_t pcapdev_close(struct rxp_dev *d)
{
	struct pcapdev *pd = (struct pcapdev *)d;

	pcap_close(pd->p);
	free(pd);
	return 0;
}

static enum rxp_dev_link pcapdev_link(const struct rxp_dev *d)
{
	return ((const struct pcapdev *)d)->kind;
}

static const struct rxp_dev_ops pcap_ops = {
	.kind = "pcap",
	.rx_burst = pcapdev_rx,
	.tx_burst = pcapdev_tx,
	.get_stats = pcapdev_stats,
	.close = pcapdev_close,
	.link = pcapdev_link,
};

struct rxp_dev *rxp_pcap_open(const char *path, struct rxp_pktpool *pp)
{
	struct pcapdev *pd = calloc(1, sizeof(*pd));
	int rc;

	if (!pd)
		return NULL;
	rc = open_offline(path, &pd->p, &pd->kind, &pd->dlt);
	if (rc) {
		free(pd);
		errno = -rc;
		return NULL;
	}
	pd->dev.ops = &pcap_ops;
	pd->dev.nqueues = 1;
	pd->dev.pp = pp;
	snprintf(pd->dev.name, sizeof(pd->dev.name), "pcap");
	return &pd->dev;
}

enum rxp_dev_link rxp_dev_link_of(uint32_t linktype)
{
	return linktype == RXP_LINKTYPE_ETHERNET ? RXP_DEV_LINK_ETH
	       : raw_link(linktype)		 ? RXP_DEV_LINK_RAW
						 : RXP_DEV_LINK_IP;
}

/* The innermost device's link. */
static enum rxp_dev_link dev_link(const struct rxp_dev *d)
{
	while (d && d->inner)
		d = d->inner;
	return d && d->ops->link ? d->ops->link(d) : RXP_DEV_LINK_ETH;
}

bool rxp_dev_is_raw_ip(const struct rxp_dev *d)
{
	return dev_link(d) != RXP_DEV_LINK_ETH;
}

bool rxp_dev_strips_link(const struct rxp_dev *d)
{
	return dev_link(d) == RXP_DEV_LINK_IP;
}

/* ---- the sim NIC's replay source ------------------------------------------ */

struct src_pcap {
	struct rxp_src src;
	pcap_t *p;
	enum rxp_dev_link kind;
	int dlt;
};

static int src_pcap_next(struct rxp_src *s, uint8_t *buf, uint32_t cap, uint32_t *len)
{
	struct src_pcap *sp = (struct src_pcap *)s;
	struct pcap_pkthdr *h;
	const u_char *data;
	uint32_t n, off = 0;

	if (pcap_next_ex(sp->p, &h, &data) != 1)
		return -ENODATA;
	n = h->caplen;
	if (rxp_decap_outgoing((uint32_t)sp->dlt, data, n))
		return RXP_SRC_OUTGOING;
	if (sp->kind != RXP_DEV_LINK_ETH) {
		/* Give raw IP an Ethernet header: the NIC sees frames. */
		uint16_t et = 0;
		int skip = sp->kind == RXP_DEV_LINK_RAW
				   ? 0
				   : rxp_decap_payload((uint32_t)sp->dlt, data, n, &et);

		if (skip < 0) { /* as the device drops it */
			*len = n ? RXP_DROP_L2_MALFORMED : RXP_DROP_PKT_TOO_SMALL;
			return RXP_SRC_SKIPPED;
		}
		data += skip;
		n -= (uint32_t)skip;
		/* (a frame that is not IP keeps its EtherType, or 0 when its
		 * link says none, as the device gives it) */
		if (sp->kind == RXP_DEV_LINK_RAW && n)
			et = (data[0] >> 4) == 6 ? RXP_ETH_P_IPV6 : RXP_ETH_P_IP;
		memset(buf, 0, 12);
		buf[0] = 0x02;
		buf[6] = 0x02;
		buf[12] = (uint8_t)(et >> 8);
		buf[13] = (uint8_t)et;
		off = RXP_ETH_HLEN;
	}
	if (!n || off + n > cap) { /* empty or larger than a jumbo frame */
		*len = n ? RXP_DROP_PKT_TOO_BIG : RXP_DROP_PKT_TOO_SMALL;
		return RXP_SRC_SKIPPED;
	}
	memcpy(buf + off, data, n);
	*len = off + n;
	return 0;
}

static void src_pcap_close(struct rxp_src *s)
{
	pcap_close(((struct src_pcap *)s)->p);
	free(s);
}

struct rxp_src *rxp_src_pcap(const char *path)
{
	struct src_pcap *sp = calloc(1, sizeof(*sp));
	int rc;

	if (!sp)
		return NULL;
	rc = open_offline(path, &sp->p, &sp->kind, &sp->dlt);
	if (rc) {
		free(sp);
		errno = -rc;
		return NULL;
	}
	sp->src.next = src_pcap_next;
	sp->src.close = src_pcap_close;
	return &sp->src;
}

/* ---- the writer ----------------------------------------------------------- */

struct rxp_pcap_writer {
	pcap_t *dead;
	pcap_dumper_t *d;
	pthread_mutex_t lock; /* several queues may capture at once */
	uint64_t count;
	uint8_t buf[65536 + 256];
};

struct rxp_pcap_writer *rxp_pcap_writer_open(const char *path, bool raw_ip)
{
	struct rxp_pcap_writer *w = calloc(1, sizeof(*w));
	FILE *f;
	int err;

	if (!w)
		return NULL;
	w->dead = pcap_open_dead_with_tstamp_precision(raw_ip ? DLT_RAW : DLT_EN10MB, 65535,
						       PCAP_TSTAMP_PRECISION_NANO);
	if (!w->dead) {
		free(w);
		errno = ENOMEM;
		return NULL;
	}
	/* Our own fopen, so that the failure keeps its errno ("-": stdout). */
	f = strcmp(path, "-") ? fopen(path, "wb") : stdout;
	w->d = f ? pcap_dump_fopen(w->dead, f) : NULL;
	if (!w->d) {
		err = f ? EIO : errno;
		if (f) {
			rxp_log(RXP_LOG_ERR, "%s", pcap_geterr(w->dead));
			if (f != stdout)
				fclose(f);
		}
		pcap_close(w->dead);
		free(w);
		errno = err;
		return NULL;
	}
	pthread_mutex_init(&w->lock, NULL);
	return w;
}

static void write_locked(struct rxp_pcap_writer *w, const uint8_t *data, uint32_t len, uint64_t ts)
{
	struct pcap_pkthdr h;

	h.ts.tv_sec = (time_t)(ts / 1000000000ull);
	h.ts.tv_usec = (suseconds_t)(ts % 1000000000ull); /* nanosecond file */
	h.caplen = h.len = len;
	pcap_dump((u_char *)w->d, &h, data);
	w->count++;
}

int rxp_pcap_writer_write(struct rxp_pcap_writer *w, const uint8_t *data, uint32_t len, uint64_t ts)
{
	if (len > 65535)
		return -E2BIG;
	pthread_mutex_lock(&w->lock);
	write_locked(w, data, len, ts);
	pthread_mutex_unlock(&w->lock);
	return 0;
}

int rxp_pcap_writer_write_from(struct rxp_pcap_writer *w, const struct rxp_pkt *pkt, uint32_t off)
{
	uint32_t n;
	int rc = 0;

	if (off > pkt->len)
		return -EINVAL;
	n = pkt->len - off;
	if (n > 65535)
		return -E2BIG;
	pthread_mutex_lock(&w->lock);
	if (rxp_pkt_copy_bits(pkt, off, w->buf, n) == 0)
		write_locked(w, w->buf, n, pkt->tstamp_ns);
	else
		rc = -EINVAL;
	pthread_mutex_unlock(&w->lock);
	return rc;
}

int rxp_pcap_writer_write_pkt(struct rxp_pcap_writer *w, const struct rxp_pkt *pkt)
{
	return rxp_pcap_writer_write_from(w, pkt, 0);
}

uint64_t rxp_pcap_writer_count(const struct rxp_pcap_writer *w)
{
	return w->count;
}

int rxp_pcap_writer_close(struct rxp_pcap_writer *w)
{
	int rc;

	if (!w)
		return 0;
	rc = pcap_dump_flush(w->d) ? -EIO : 0;
	pcap_dump_close(w->d);
	pcap_close(w->dead);
	pthread_mutex_destroy(&w->lock);
	free(w);
	return rc;
}
