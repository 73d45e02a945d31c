/*
 * The frame layer of `rxpath defrag` (see defrag_frame.h): finds the IP
 * packet in a captured frame, hands it to the reassembly table in its zone,
 * and builds the output frame for a datagram it completes.
 *
 * A frame becomes one packet from the pool holding the whole frame, its
 * data pulled to the IP header: the link header stays in the headroom in
 * front of it, so the table's discard hook (which sees only the packet) can
 * still write the frame a fragment came in. Outer headers are copied out
 * before the table consumes the packet, because the datagram it returns is
 * not necessarily this packet. Owns two frame buffers and nothing else.
 */
#include <errno.h>
#include <pcap/pcap.h>
#include <stdlib.h>
#include <string.h>

#include "defrag_frame.h"
#include "rxpath/wire.h"

#ifndef DLT_IPV4
#define DLT_IPV4 228
#endif
#ifndef DLT_IPV6
#define DLT_IPV6 229
#endif

/* Largest frame read (libpcap's snaplen cap); an output frame is at most
 * the headers of one plus a datagram of up to 64 KiB. */
#define DFR_FRAME_MAX 262144u
#define DFR_OUT_MAX (DFR_FRAME_MAX + 65536u)

struct dfr_frames {
	struct rxp_pktpool *pp;
	unsigned headroom;
	struct dfr_frame_stats st;
	struct rxp_pkt *last; /* the datagram handed out in dfr_out.dgram */
	uint8_t *obuf; /* dfr_frame_process output */
	uint8_t *dbuf; /* dfr_frame_discarded output */
};

struct dfr_frames *dfr_frames_create(struct rxp_pktpool *pp)
{
	struct dfr_frames *fs = calloc(1, sizeof(*fs));

	if (!fs)
		return NULL;
	fs->pp = pp;
	fs->headroom = rxp_pktpool_headroom(pp);
	fs->obuf = malloc(DFR_OUT_MAX);
	fs->dbuf = malloc(DFR_OUT_MAX);
	if (!fs->obuf || !fs->dbuf) {
		dfr_frames_destroy(fs);
		errno = ENOMEM;
		return NULL;
	}
	return fs;
}

void dfr_frames_destroy(struct dfr_frames *fs)
{
	if (!fs)
		return;
	if (fs->last)
		rxp_pkt_consume(fs->last);
	free(fs->obuf);
	free(fs->dbuf);
	free(fs);
}

int dfr_frame_dlt_known(int dlt)
{
	return dlt == DLT_EN10MB || dlt == DLT_RAW || dlt == DLT_IPV4 || dlt == DLT_IPV6;
}

/* Link header length of an Ethernet frame carrying IP, or -1; *zone gets
 * the outer VLAN id (0 untagged), which keys reassembly. */
static int eth_l2len(const uint8_t *b, uint32_t len, uint32_t *zone)
{
	uint32_t off = 12;

	*zone = 0;
	for (int tags = 0; tags < 3; tags++) {
		uint16_t et;

		if (off + 2 > len)
			return -1;
		et = (uint16_t)(b[off] << 8 | b[off + 1]);
		if (et == RXP_ETH_P_IP || et == RXP_ETH_P_IPV6)
			return (int)off + 2;
		if (et != RXP_ETH_P_8021Q && et != 0x88a8)
			return -1;
		if (off + 4 > len)
			return -1;
		if (!*zone)
			*zone = ((uint32_t)(b[off + 2] & 0x0f) << 8 | b[off + 3]) + 1;
		off += 4;
	}
	return -1;
}

enum dfr_verdict dfr_frame_process(struct dfr_frames *fs, struct rxp_defrag_table *t, int dlt,
				   const uint8_t *frame, uint32_t caplen, uint64_t now_ns,
				   struct dfr_out *out)
{
	struct rxp_defrag_counters k;
	struct rxp_pkt *p, *res;
	uint64_t reqds;
	uint32_t zone = 0;
	int l2 = 0;

	if (fs->last) {
		rxp_pkt_consume(fs->last);
		fs->last = NULL;
	}
	if (dlt == DLT_EN10MB)
		l2 = eth_l2len(frame, caplen, &zone);
	else if (!dfr_frame_dlt_known(dlt))
		l2 = -1;
	if (l2 < 0 || (uint32_t)l2 >= caplen) {
		fs->st.nonip++;
		return DFR_PASS;
	}
	p = rxp_pkt_alloc(fs->pp, caplen);
	if (!p) {
		fs->st.alloc_fail++;
		return DFR_PASS;
	}
	memcpy(rxp_pkt_put(p, caplen), frame, caplen);
	rxp_pkt_pull(p, (uint32_t)l2);
	p->tstamp_ns = now_ns;
	p->network_off = (uint16_t)(p->data - p->head);
	rxp_defrag_get_counters(t, &k);
	reqds = k.ReasmReqds;
	res = rxp_defrag_zone(t, p, zone, now_ns);
	if (!res)
		return DFR_HELD;
	rxp_defrag_get_counters(t, &k);
	if (k.ReasmReqds == reqds) {
		/* Not a fragment: the frame as it came. */
		rxp_pkt_consume(res);
		return DFR_PASS;
	}
	memcpy(fs->obuf, frame, (size_t)l2);
	rxp_pkt_copy_bits(res, 0, fs->obuf + l2, res->len);
	out->frame = fs->obuf;
	out->len = (uint32_t)l2 + res->len;
	out->dgram = fs->last = res;
	return DFR_OUT;
}

int dfr_frame_discarded(struct dfr_frames *fs, const struct rxp_pkt *pkt, struct dfr_out *out)
{
	const uint8_t *mac = pkt->head + fs->headroom;
	uint32_t l2 = (uint32_t)(pkt->data - mac);

	if (pkt->data < mac || (uint64_t)l2 + pkt->len > DFR_OUT_MAX ||
	    rxp_pkt_copy_bits(pkt, 0, fs->dbuf + l2, pkt->len))
		return -1;
	memcpy(fs->dbuf, mac, l2);
	out->frame = fs->dbuf;
	out->len = l2 + pkt->len;
	out->dgram = NULL;
	return 0;
}

void dfr_frames_get_stats(const struct dfr_frames *fs, struct dfr_frame_stats *st)
{
	*st = fs->st;
}
