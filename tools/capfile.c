/*
 * The capture-file device of `rxpath run --pcap` and `rxpath capture
 * --read`: the library's pcap device
 * reads through libpcap, which refuses a pcapng whose interfaces have
 * different link types (dumpcap -i any -i eth0 writes one) at the first
 * interface that differs, reads no compressed file, and no format but pcap
 * and pcapng. This one reads through rxpath defrag's reader (libwiretap,
 * defrag_io.c), which does all three, so that run reads every capture
 * defrag reads.
 *
 * Each frame by its own link type, made a packet as the library's pcap
 * device makes a frame of its file (rxp_dev_frame_pkt: Ethernet whole, raw
 * IP as it is, other link types' headers taken off); a frame of a link type
 * nothing reads is dropped and counted (unsupported_linktype), and said
 * once per link type. Records that are not packets (a pcapng's
 * statistics, say) are skipped, and so are frames a cooked capture says
 * the capturing host sent (counted: rx_outgoing), which a live AF_PACKET
 * device does not receive. capture --read reads through it too, and
 * writes a file of several link types as raw IP (cf_link). libpcap stays
 * behind `--dev pcap:PATH` and the sim NIC's replay source, which replay
 * one link type.
 *
 * Owns: the reader. Copies each frame into a packet from the caller's pool.
 */
#include <errno.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capfile.h"
#include "defrag_io.h"
#include "rxpath/decap.h"
#include "rxpath/log.h"
#include "rxpath/wire.h"

#define CF_SAID 8 /* link types said to be unread, at most */

struct capfile {
	struct rxp_dev dev;
	struct dio_in *in;
	bool eof, cut;
	uint64_t rx_packets, rx_bytes, dropped;
	uint64_t snapped; /* records shorter than on the wire (caplen < len) */
	uint64_t outgoing; /* frames the capturing host sent: skipped */
	uint64_t first_ns, last_ns;
	int said[CF_SAID];
	unsigned nsaid;
};

/* A frame of link type dlt that nothing here reads: said once per type. */
static void unread_type(struct capfile *cf, int dlt, uint64_t number)
{
	const char *name = dlt >= 0 ? pcap_datalink_val_to_name(dlt) : NULL;

	for (unsigned i = 0; i < cf->nsaid; i++)
		if (cf->said[i] == dlt)
			return;
	if (cf->nsaid == CF_SAID)
		return;
	cf->said[cf->nsaid++] = dlt;
	if (dlt < 0)
		rxp_log(RXP_LOG_WARN,
			"frames without a link type (record %llu on) are not read: "
			"counted as unsupported_linktype",
			(unsigned long long)number);
	else
		rxp_log(RXP_LOG_WARN,
			"frames of link type %d%s%s%s are not read: counted as "
			"unsupported_linktype",
			dlt, name ? " (" : "", name ? name : "", name ? ")" : "");
}

static void drop(struct capfile *cf, enum rxp_drop_reason r)
{
	cf->dropped++;
	rxp_pktpool_count_drop(cf->dev.pp, r, 1);
}

static int cf_rx(struct rxp_dev *d, unsigned q, struct rxp_pkt **pkts, unsigned n)
{
	struct capfile *cf = (struct capfile *)d;
	unsigned got = 0;

	if (q != 0)
		return -EINVAL;
	while (got < n && !cf->eof) {
		struct dio_rec r;
		struct rxp_pkt *pkt;
		enum rxp_drop_reason why;
		uint32_t len;

		if (dio_read(cf->in, &r) != 1) {
			const char *what;
			enum dio_end end = dio_in_end(cf->in, &what);

			/* as the pcap device: said once, counted for the caller */
			if (end != DIO_EOF) {
				cf->cut = true;
				rxp_log(RXP_LOG_WARN,
					"input cut off or corrupt after %llu frames (%s): %s",
					(unsigned long long)(cf->rx_packets + cf->dropped),
					end == DIO_CUT ? "cut inside a record" : "unreadable",
					what);
			}
			/* frames cut by the capture's snapshot length are read as
			 * they are; their IP is then cut short (ip_truncated),
			 * and the count alone does not say why: said once */
			if (cf->snapped)
				rxp_log(RXP_LOG_WARN,
					"%llu frames were cut short by the capture's snapshot "
					"length (fewer bytes captured than on the wire): IP "
					"packets and fragments among them are dropped as "
					"ip_truncated",
					(unsigned long long)cf->snapped);
			cf->eof = true;
			break;
		}
		if (!r.packet)
			continue;
		cf->snapped += r.caplen < r.len;
		/* as a live AF_PACKET device, which does not receive them */
		if (r.dlt >= 0 && rxp_decap_outgoing((uint32_t)r.dlt, r.data, r.caplen)) {
			cf->outgoing++;
			continue;
		}
		if (r.dlt < 0) {
			pkt = NULL;
			why = RXP_DROP_LINKTYPE;
		} else {
			pkt = rxp_dev_frame_pkt(d->pp, (uint32_t)r.dlt, r.data, r.caplen, &why);
		}
		if (!pkt) {
			if (why == RXP_DROP_LINKTYPE)
				unread_type(cf, r.dlt, r.number);
			drop(cf, why);
			continue;
		}
		len = pkt->len;
		pkt->tstamp_ns = r.ts_ns;
		if (!cf->rx_packets)
			cf->first_ns = pkt->tstamp_ns;
		cf->last_ns = pkt->tstamp_ns;
		cf->rx_packets++;
		cf->rx_bytes += len;
		pkts[got++] = pkt;
	}
	if (!got && cf->eof)
		return -ENODATA;
	return (int)got;
}

static unsigned cf_tx(struct rxp_dev *d, unsigned q, struct rxp_pkt **pkts, unsigned n)
{
	(void)d;
	(void)q;
	/* A file has no wire to send on: consumed. */
	for (unsigned i = 0; i < n; i++)
		rxp_pkt_consume(pkts[i]);
	return n;
}

static void cf_stats(struct rxp_dev *d, struct rxp_dev_stats *st)
{
	struct capfile *cf = (struct capfile *)d;

	st->rx_packets += cf->rx_packets;
	st->rx_bytes += cf->rx_bytes;
	st->rx_dropped += cf->dropped;
	st->first_tstamp_ns = cf->first_ns;
	st->last_tstamp_ns = cf->last_ns;
	st->rx_input_cut += cf->cut;
	st->rx_outgoing += cf->outgoing;
}

static uint64_t cf_close(struct rxp_dev *d)
{
	struct capfile *cf = (struct capfile *)d;

	dio_close_in(cf->in);
	free(cf);
	return 0;
}

/* A capture written from it: as the pcap device's for a file of one link
 * type; raw IP packets for a file of several. */
static enum rxp_dev_link cf_link(const struct rxp_dev *d)
{
	int dlt = dio_in_dlt(((const struct capfile *)d)->in);

	return dlt < 0 ? RXP_DEV_LINK_IP : rxp_dev_link_of((uint32_t)dlt);
}

static const struct rxp_dev_ops capfile_ops = {
	.kind = "capfile",
	.rx_burst = cf_rx,
	.tx_burst = cf_tx,
	.get_stats = cf_stats,
	.close = cf_close,
	.link = cf_link,
};

struct rxp_dev *rxp_capfile_open(const char *path, struct rxp_pktpool *pp, char *err, size_t errlen)
{
	struct capfile *cf = calloc(1, sizeof(*cf));
	int dlt;

	if (!cf) {
		snprintf(err, errlen, "%s", strerror(ENOMEM));
		return NULL;
	}
	cf->in = dio_open_in(path, err, errlen);
	if (!cf->in) {
		free(cf);
		return NULL;
	}
	/* A file of one link type nothing here reads is refused, as the
	 * pcap device refuses it (and rxpath defrag a file of none); a
	 * pcapng of several is read frame by frame. */
	dlt = dio_in_dlt(cf->in);
	if (dlt != DIO_DLT_PER_FRAME && (dlt < 0 || !rxp_decap_linktype_known((uint32_t)dlt))) {
		if (dlt < 0)
			snprintf(err, errlen,
				 "read as %s with link type '%s', it has no frames a pcap or "
				 "pcapng can hold (is it a capture?)",
				 dio_in_format(cf->in), dio_in_encap_name(cf->in));
		else
			snprintf(err, errlen, "its link type %d (%s) is not one rxpath reads", dlt,
				 dio_in_encap_name(cf->in));
		dio_close_in(cf->in);
		free(cf);
		return NULL;
	}
	cf->dev.ops = &capfile_ops;
	cf->dev.nqueues = 1;
	cf->dev.pp = pp;
	snprintf(cf->dev.name, sizeof(cf->dev.name), "pcap");
	return &cf->dev;
}

const char *rxp_capfile_format(const struct rxp_dev *d)
{
	return dio_in_format(((const struct capfile *)d)->in);
}

const char *rxp_capfile_compression(const struct rxp_dev *d)
{
	return dio_in_compression(((const struct capfile *)d)->in);
}
