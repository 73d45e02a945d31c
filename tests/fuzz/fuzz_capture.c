/*
 * Structure-aware capture files for the two readers of src/dev/pcap.c (the
 * pcap device and the sim NIC's replay source). The input describes a file:
 * classic pcap (either byte order, micro- or nanosecond) or pcapng with
 * several sections and interfaces of several link types (Ethernet, raw IP,
 * IPv6, Linux cooked SLL and SLL2, BSD loopback, 802.11, and one rxpath
 * does not read), snapshot
 * lengths and timestamp resolutions, and its blocks: enhanced, simple and
 * obsolete packet blocks for any interface (some that do not exist),
 * statistics, name-resolution, custom and unknown blocks, a block whose
 * lengths disagree, a file cut short. libpcap parses the file; rxpath maps
 * link types, strips cooked headers, converts timestamps and classifies
 * (finding the IP packet of an Ethernet record that is MPLS or PPPoE).
 *
 * The target knows every packet record it wrote, so what the device gives
 * must be those records, in order, as far as libpcap reads (it may stop at
 * a block it refuses, may cut a record to the snapshot length, and turns
 * a cooked SocketCAN record's CAN ID to this machine's byte order): each
 * packet a prefix of its record (without its link headers), with the
 * record's timestamp in nanoseconds and, for a link whose headers are
 * taken off, the protocol they say; records whose link headers do not
 * parse are left out; the replay source gives the same records as frames
 * (an Ethernet header in front of the others), but for those too big for
 * a jumbo frame. A file of a link type rxpath does not read opens in
 * neither. Nothing may leak.
 */
#define _GNU_SOURCE
#include <sys/mman.h>
#include <unistd.h>

#include "rxpath/decap.h"
#include "rxpath/dev.h"
#include "rxpath/sim.h"
#include "rxpath/wire.h"
#include "fuzz.h"

#define MAXREC 256
#define FILEMAX (1u << 20)

/* Link types: what the file says, and how rxpath reads it (0 Ethernet,
 * 1 raw IP, 2 a link whose headers the device takes off, -1 not at all). */
static const struct {
	uint16_t lt;
	int kind;
} links[8] = {{1, 0}, {101, 1}, {147, -1}, {229, 1}, {113, 2}, {0, 2}, {105, 2}, {276, 2}};

/* The model of the pcap device for a kind 2 link type lt: for a record's
 * first n bytes, whether it is delivered, the bytes before its packet
 * (*skip) and the EtherType the device gives it (*et). The link parsers
 * are fuzz_decap's to check; this checks what the device makes of what
 * they say: the IP packet, or what follows the link headers of a frame
 * that is not IP, and something after them. */
static bool link_model(uint32_t lt, const uint8_t *r, uint32_t n, uint32_t *skip, uint16_t *et)
{
	struct rxp_decap dc;
	int rc = rxp_decap_link(&dc, lt, r, n);

	if (rc == RXP_DECAP_OK) {
		*skip = dc.ip_off;
		*et = dc.family == 4 ? RXP_ETH_P_IP : RXP_ETH_P_IPV6;
	} else if (rc == RXP_DECAP_NOT_IP) {
		*skip = dc.nlayers ? dc.layer[dc.nlayers - 1].off + dc.layer[dc.nlayers - 1].len
				   : 0;
		*et = dc.ethertype;
	} else {
		return false;
	}
	return *skip < n;
}
/* The model of the pcap device for an Ethernet record, delivered whole:
 * *et and *l3, the protocol and network offset it must have (0 and 0: not
 * IP). IP behind at most two 802.1Q/802.1ad tags is the classifier's;
 * where it finds none, the wire layer looks further (more tags, MPLS, a
 * PPPoE session), and *deep says so (the hash is then the IP header's). */
static void eth_model(const uint8_t *r, uint32_t n, uint16_t *et, uint32_t *l3, bool *deep)
{
	uint32_t off = RXP_ETH_HLEN;
	struct rxp_decap dc;
	uint16_t t;

	*et = 0;
	*l3 = 0;
	*deep = false;
	if (n < RXP_ETH_HLEN)
		return;
	t = (uint16_t)(r[12] << 8 | r[13]);
	for (int i = 0; i < 2 && (t == 0x8100 || t == 0x88a8); i++) {
		if (n < off + 4)
			return;
		t = (uint16_t)(r[off + 2] << 8 | r[off + 3]);
		off += 4;
	}
	if (t == RXP_ETH_P_IP || t == RXP_ETH_P_IPV6) {
		*et = t;
		*l3 = off;
	} else if (rxp_decap_link(&dc, RXP_LINKTYPE_ETHERNET, r, n) == RXP_DECAP_OK) {
		*et = dc.family == 4 ? RXP_ETH_P_IP : RXP_ETH_P_IPV6;
		*l3 = dc.ip_off;
		*deep = true;
	}
}

static const uint32_t snaps[8] = {65535, 262144, 128, 9000, 64, 0, 1500, 65535};

struct rec {
	uint32_t off, caplen; /* bytes in file[] */
	uint64_t ts_ns; /* UINT64_MAX: not checked */
	bool swapped; /* in a section of the other byte order than this machine's */
	/* the model's (link_model): delivered, bytes skipped, EtherType; and
	 * whether the device may leave it out */
	bool ok, may_drop;
	uint32_t skip;
	uint16_t et;
	uint32_t l3; /* Ethernet: the network offset it must have, or 0 */
	bool deep; /* Ethernet: IP found past the classifier (eth_model) */
	bool out; /* a cooked record of a frame the capturing host sent */
};

static uint8_t file[FILEMAX];
static uint32_t flen;
static bool be; /* the current section's byte order */
static struct rec recs[MAXREC];
static unsigned nrec;

static void put(const void *p, uint32_t n)
{
	if (flen + n > FILEMAX)
		n = FILEMAX - flen;
	memcpy(file + flen, p, n);
	flen += n;
}

static void put16(uint32_t v)
{
	uint8_t b[2] = {(uint8_t)(be ? v >> 8 : v), (uint8_t)(be ? v : v >> 8)};

	put(b, 2);
}

static void put32(uint32_t v)
{
	uint8_t b[4];

	for (int i = 0; i < 4; i++)
		b[i] = (uint8_t)(v >> (be ? 24 - 8 * i : 8 * i));
	put(b, 4);
}

static void pad4(void)
{
	static const uint8_t z[4];

	put(z, (4 - (flen & 3)) & 3);
}

/* Record bytes: the input's first ones, then a pattern; with an Ethernet
 * or IP looking start so that classification has work to do. */
static void put_data(struct fz_in *in, uint32_t caplen, int kind, uint32_t lt, uint64_t ts_ns)
{
	uint32_t at = flen;
	uint8_t *r = file + at;

	if (flen + caplen > FILEMAX)
		caplen = FILEMAX - flen;
	fz_bytes(in, r, caplen, flen);
	if (kind == 1 && caplen)
		r[0] = (uint8_t)((r[0] & 0x0f) | ((r[0] & 1) ? 0x60 : 0x40));
	/* most cooked and loopback records say IP, with an IP version after */
	if (kind == 2 && lt == 113 && caplen > 16 && (r[2] & 3)) {
		r[14] = (r[2] & 1) ? 0x86 : 0x08;
		r[15] = (r[2] & 1) ? 0xdd : 0x00;
		r[16] = (uint8_t)((r[16] & 0x0f) | ((r[2] & 1) ? 0x60 : 0x40));
	} else if (kind == 2 && lt == 276 && caplen > 20 && (r[8] & 3)) {
		r[0] = (r[8] & 1) ? 0x86 : 0x08;
		r[1] = (r[8] & 1) ? 0xdd : 0x00;
		r[20] = (uint8_t)((r[20] & 0x0f) | ((r[8] & 1) ? 0x60 : 0x40));
	} else if (kind == 0 && caplen > 24 && (r[0] & 7) == 1) {
		/* MPLS, one label, bottom of stack, then IP */
		r[12] = 0x88;
		r[13] = 0x47;
		r[16] |= 1;
		r[18] = (uint8_t)((r[18] & 0x0f) | ((r[1] & 1) ? 0x60 : 0x40));
	} else if (kind == 0 && caplen > 24 && (r[0] & 7) == 2) {
		/* a PPPoE session (version 1, type 1, code 0) with IP in PPP */
		r[12] = 0x88;
		r[13] = 0x64;
		r[14] = 0x11;
		r[15] = 0;
		r[18] = (uint8_t)((caplen - 20) >> 8); /* its length: the rest */
		r[19] = (uint8_t)(caplen - 20);
		r[20] = 0;
		r[21] = (r[1] & 1) ? 0x57 : 0x21;
		r[22] = (uint8_t)((r[22] & 0x0f) | ((r[1] & 1) ? 0x60 : 0x40));
	} else if (kind == 0 && caplen > 24 && (r[0] & 7) == 3) {
		/* IP behind a 0x9100 tag, which the classifier does not read */
		r[12] = 0x91;
		r[13] = 0x00;
		r[16] = (r[1] & 1) ? 0x86 : 0x08;
		r[17] = (r[1] & 1) ? 0xdd : 0x00;
		r[18] = (uint8_t)((r[18] & 0x0f) | ((r[1] & 1) ? 0x60 : 0x40));
	} else if (kind == 2 && lt == 0 && caplen > 4 && (r[1] & 3)) {
		r[0] = (r[1] & 1) ? 10 : 2;
		r[1] = r[2] = r[3] = 0;
		r[4] = (uint8_t)((r[4] & 0x0f) | (r[0] == 10 ? 0x60 : 0x40));
	}
	flen += caplen;
	if (nrec < MAXREC)
		recs[nrec++] =
			(struct rec){.off = at,
				     .caplen = caplen,
				     .ts_ns = ts_ns,
				     .swapped = be != (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__)};
}

/* A pcapng block: type, body, lengths (bad: the trailing length is off). */
static uint32_t blk_start(uint32_t type)
{
	uint32_t at = flen;

	put32(type);
	put32(0); /* length, patched */
	return at;
}

static void blk_end(uint32_t at, bool bad)
{
	uint32_t len;

	pad4();
	len = flen - at + 4;
	flen = at + 4;
	put32(len);
	flen = at + len - 4;
	put32(bad ? len + 4 : len);
}

static uint64_t ts_of(struct fz_in *in, uint64_t *units)
{
	*units = (uint64_t)fz_u32(in) << 8 | fz_u8(in);
	return *units;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t frame[RXP_GEN_FRAME_MAX + 64];
	static uint8_t pbuf[65536 + 512];
	struct rxp_pktpool_config pc = {.name = "fzc", .n_pkts = 256, .n_bufs = 64, .n_large = 4};
	struct rxp_pktpool *pp = fz_pool(&pc);
	struct fz_in in = {data, size};
	uint32_t b0 = fz_u8(&in), b1 = fz_u8(&in);
	bool ng = b0 & 1, ns = b0 & 4;
	int kind = links[(b0 >> 3) & 7].kind, nidb = 0;
	uint32_t lt0 = links[(b0 >> 3) & 7].lt, lt, min_snap = UINT32_MAX;
	unsigned out_sure = 0, out_any = 0; /* records the host sent: uncut, all */
	uint32_t tsmul[16];
	int fd = memfd_create("fuzz.cap", 0);
	char path[64];
	struct rxp_dev *d;
	struct rxp_src *src;
	unsigned k = 0;
	int first_lt = -1; /* pcapng: the first interface's link type */

	FZ_CHECK(fd >= 0);
	flen = 0;
	nrec = 0;
	be = b0 & 2;
	if (!ng) {
		put32(ns ? 0xa1b23c4d : 0xa1b2c3d4);
		put16(2);
		put16(4);
		put32(0);
		put32(0);
		put32(snaps[b1 & 7] ? snaps[b1 & 7] : 65535);
		min_snap = snaps[b1 & 7] ? snaps[b1 & 7] : 65535;
		put32(links[(b0 >> 3) & 7].lt);
	} else {
		uint32_t at = blk_start(0x0a0d0d0a);

		put32(0x1a2b3c4d);
		put16(1);
		put16(0);
		put32(0xffffffff);
		put32(0xffffffff);
		blk_end(at, false);
	}
	for (int ops = 0; in.n && ops < 64; ops++) {
		uint32_t op = fz_u8(&in), caplen = fz_u16(&in) % 2048, at;
		uint64_t units;

		if (op & 0x80)
			caplen = caplen * 32 % 65536; /* now and then a big one */
		if (!ng) {
			uint32_t sec = fz_u32(&in),
				 frac = fz_u32(&in) % (ns ? 1000000000u : 1000000u);
			uint32_t orig = (op & 1) ? caplen + fz_u8(&in) : caplen;

			put32(sec);
			put32(frac);
			put32(caplen);
			put32(orig);
			put_data(&in, caplen, kind, lt0,
				 (uint64_t)sec * 1000000000ull + (uint64_t)frac * (ns ? 1 : 1000));
			continue;
		}
		switch (op & 7) {
		case 0: /* an interface: link type, snapshot, timestamp resolution */
		case 1: {
			uint32_t b = fz_u8(&in), res = (b & 0xc0) == 0xc0 ? 9 : 6;

			at = blk_start(1);
			put16(links[(op >> 3) & 7].lt);
			put16(0);
			put32(snaps[b & 7]);
			if (snaps[b & 7] && snaps[b & 7] < min_snap)
				min_snap = snaps[b & 7];
			if (b & 0x80) {
				uint8_t r = (uint8_t)res;

				put16(9); /* if_tsresol */
				put16(1);
				put(&r, 1);
				pad4();
				put16(0);
				put16(0);
			}
			blk_end(at, false);
			if (first_lt < 0)
				first_lt = (int)((op >> 3) & 7);
			if (nidb < 16)
				tsmul[nidb++] = res == 9 ? 1 : 1000;
			break;
		}
		case 2: /* an enhanced packet block */
		case 3: {
			uint32_t ifc = fz_u8(&in) % (uint32_t)(nidb + 1);
			uint32_t orig = (op & 8) ? caplen + fz_u8(&in) : caplen;
			uint64_t ts = ts_of(&in, &units);

			at = blk_start(6);
			put32(ifc);
			put32((uint32_t)(ts >> 32));
			put32((uint32_t)ts);
			put32(caplen);
			put32(orig);
			put_data(&in, caplen, kind, lt0,
				 (int)ifc < nidb ? units * tsmul[ifc] : UINT64_MAX);
			blk_end(at, op & 0x40);
			break;
		}
		case 4: /* a simple packet block (interface 0) */
			at = blk_start(3);
			put32(caplen);
			put_data(&in, caplen, kind, lt0, UINT64_MAX);
			blk_end(at, false);
			break;
		case 5: { /* the obsolete packet block */
			uint64_t ts = ts_of(&in, &units);

			at = blk_start(2);
			put16(fz_u8(&in) % (uint32_t)(nidb + 1));
			put16(0);
			put32((uint32_t)(ts >> 32));
			put32((uint32_t)ts);
			put32(caplen);
			put32(caplen);
			put_data(&in, caplen, kind, lt0, UINT64_MAX);
			blk_end(at, false);
			break;
		}
		case 6: { /* statistics, name resolution, custom, unknown */
			static const uint32_t types[4] = {5, 4, 0xbad, 0x12345678};

			at = blk_start(types[(op >> 3) & 3]);
			for (uint32_t i = 0; i < caplen % 64; i++)
				put32(fz_u8(&in));
			blk_end(at, false);
			break;
		}
		default: /* a new section, maybe in the other byte order */
			be = (op >> 3) & 1;
			at = blk_start(0x0a0d0d0a);
			put32(0x1a2b3c4d);
			put16(1);
			put16(0);
			put32(0xffffffff);
			put32(0xffffffff);
			blk_end(at, false);
			nidb = 0;
			break;
		}
	}
	if (b1 & 0x80 && flen > 8)
		flen -= 1 + b1 % 7; /* cut short */
	FZ_CHECK(write(fd, file, flen) == (ssize_t)flen);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);

	/* How rxpath reads the file: by its link type (pcapng: the first
	 * interface's; libpcap refuses any other). */
	lt = lt0;
	if (ng) {
		kind = first_lt < 0 ? -1 : links[first_lt].kind;
		lt = first_lt < 0 ? 0 : links[first_lt].lt;
	}
	/* libpcap gives a cooked SocketCAN record (protocol CAN or CAN FD)
	 * of a file in the other byte order with its CAN ID in this
	 * machine's (pcap_post_process, swap_linux_sll_socketcan_header):
	 * what it reads is those 4 bytes reversed, from here on what the
	 * records are compared with. (SLL2 the same, its header 20 bytes.) */
	for (uint32_t i = 0; (lt == 113 || lt == 276) && i < nrec; i++) {
		uint32_t hl = lt == 113 ? 16 : 20;
		uint8_t *r = file + recs[i].off, *id = r + hl, t;
		uint16_t proto = recs[i].caplen < hl ? 0
				 : lt == 113	     ? (uint16_t)(r[14] << 8 | r[15])
						     : (uint16_t)(r[0] << 8 | r[1]);

		if (!recs[i].swapped || recs[i].caplen < hl + 4 ||
		    (proto != 0x000c && proto != 0x000d))
			continue;
		t = id[0], id[0] = id[3], id[3] = t;
		t = id[1], id[1] = id[2], id[2] = t;
	}
	/* What the device makes of each record as written: delivered or
	 * not, bytes skipped, EtherType. A record it leaves out is one it
	 * drops, or one libpcap may have cut to the snapshot length (which
	 * may cut its link headers). */
	for (uint32_t i = 0; i < nrec; i++) {
		struct rec *r = &recs[i];

		r->skip = 0;
		r->et = 0;
		r->l3 = 0;
		r->ok = kind == 2 ? link_model(lt, file + r->off, r->caplen, &r->skip, &r->et)
				  : r->caplen > 0;
		r->deep = false;
		if (kind == 0)
			eth_model(file + r->off, r->caplen, &r->et, &r->l3, &r->deep);
		/* a cooked record the capturing host sent: left out, counted */
		r->out = kind == 2 && rxp_decap_outgoing(lt, file + r->off, r->caplen);
		r->ok &= !r->out;
		out_sure += r->out && r->caplen <= min_snap;
		out_any += r->out;
		r->may_drop = !r->ok || r->caplen > min_snap;
	}

	/* the device: records in order, each a prefix of what was written */
	d = rxp_pcap_open(path, pp);
	if (kind < 0 && first_lt >= 0)
		FZ_CHECK(!d); /* a link type rxpath does not read */
	while (d) {
		struct rxp_pkt *pk[16];
		int n = rxp_dev_rx_burst(d, 0, pk, 16);

		if (n <= 0)
			break;
		FZ_CHECK(rxp_dev_is_raw_ip(d) == (kind > 0));
		for (int i = 0; i < n; i++) {
			struct rxp_pkt *p = pk[i];
			const struct rec *r;

			FZ_CHECK(p->len <= sizeof(pbuf) && !rxp_pkt_copy_bits(p, 0, pbuf, p->len));
			for (;; k++) {
				FZ_CHECK(k < nrec);
				r = &recs[k];
				if (r->ok && p->len > 0 && p->len + r->skip <= r->caplen &&
				    !memcmp(pbuf, file + r->off + r->skip, p->len))
					break;
				FZ_CHECK(r->may_drop); /* a record it may leave out */
			}
			if (r->ts_ns != UINT64_MAX)
				FZ_CHECK(p->tstamp_ns == r->ts_ns);
			if (kind == 2)
				FZ_CHECK(p->protocol == r->et);
			/* an Ethernet record read whole: IP where the model
			 * finds it (the classifier's, or behind MPLS, PPPoE or
			 * more tags), else not IP */
			if (kind == 0 && p->len == r->caplen) {
				FZ_CHECK(p->protocol == r->et);
				if (r->l3)
					FZ_CHECK(p->network_off == (p->data - p->head) + r->l3);
				if (r->deep)
					FZ_CHECK(p->hash == rxp_rss_hash(file + r->off + r->l3,
									 r->caplen - r->l3, false));
			}
			k++;
			rxp_pkt_consume(p);
		}
	}
	if (d) {
		/* each skipped record the host sent counted, no other (one cut
		 * by the snapshot length may no longer say it) */
		struct rxp_dev_stats st;

		rxp_dev_get_stats(d, &st);
		FZ_CHECK(st.rx_outgoing <= out_any);
		FZ_CHECK(st.rx_outgoing >= out_sure || st.rx_input_cut);
	}
	src = rxp_src_pcap(path);
	FZ_CHECK(!d == !src);
	if (d)
		FZ_CHECK(rxp_dev_close(d) == 0);
	/* the replay source: frames of the same records, but for those a
	 * jumbo frame cannot hold; a record it leaves out is said, with a
	 * reason the device gives too */
	k = 0;
	for (uint32_t len; src; k++) {
		uint32_t off = kind > 0 ? RXP_ETH_HLEN : 0;
		int rc = src->next(src, frame, sizeof(frame), &len);
		const struct rec *r;

		if (rc == RXP_SRC_SKIPPED || rc == RXP_SRC_OUTGOING) {
			FZ_CHECK(rc == RXP_SRC_OUTGOING || len == RXP_DROP_L2_MALFORMED ||
				 len == RXP_DROP_PKT_TOO_SMALL || len == RXP_DROP_PKT_TOO_BIG);
			k--;
			continue;
		}
		if (rc)
			break;

		for (;; k++) {
			FZ_CHECK(k < nrec);
			r = &recs[k];
			if (r->ok && len > off && len - off + r->skip <= r->caplen &&
			    !memcmp(frame + off, file + r->off + r->skip, len - off))
				break;
			FZ_CHECK(r->may_drop || r->caplen - r->skip + off > sizeof(frame));
		}
		if (kind > 0) {
			uint16_t et = (uint16_t)(frame[12] << 8 | frame[13]);

			if (kind == 2)
				FZ_CHECK(et == r->et);
			else
				FZ_CHECK(et ==
					 ((frame[off] >> 4) == 6 ? RXP_ETH_P_IPV6 : RXP_ETH_P_IP));
		}
	}
	if (src)
		src->close(src);
	close(fd);
	fz_pool_quiet(pp);
	return 0;
}
