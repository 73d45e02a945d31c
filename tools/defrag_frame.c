/*
 * The frame layer of `rxpath defrag` (see defrag_frame.h): finds the IP
 * packet in a captured frame (rxp_decap_link), hands it to the reassembly
 * table in its zone, enters the tunnel that what comes back carries
 * (rxp_decap_tunnel) and hands the inner packet to the table in the
 * tunnel's zone, and so on; then builds the output frame for the datagram
 * the frame completed, its outer headers fixed (rxp_decap_fixup).
 *
 * Invariants:
 *   - A packet given to the table holds the frame's headers in its
 *     headroom, in front of its IP header, and ends where that IP packet
 *     ends (bytes after it, an FCS or padding, are cut and the headers
 *     fixed to match), so that the discard hook can write the frame a
 *     fragment came in from the packet alone.
 *   - fs->d always describes the headers in front of the current IP packet,
 *     and those bytes are in a buffer that outlives the table's call: the
 *     input frame itself until a tunnel is entered, then fs->wbuf (whose
 *     prefix they stay, level after level).
 *   - Zones are exact: the intern table maps each (parent zone, context)
 *     to its own number, compared whole; 0 is the untagged link level.
 */
#include <errno.h>
#include <stddef.h>
#include <inttypes.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "defrag_frame.h"
#include "defrag_late.h"
#include "defrag_zone.h"
#include "rxpath/decap.h"
#include "rxpath/wire.h"

#define DFR_MAX_TUNNELS 8u /* tunnels entered per frame */
#define DFR_PEND_HDR 128u /* link headers a deferred datagram's frame may have */

/* A datagram whose frame is built later (DFR_LATER): its link headers,
 * already fixed for its length. */
struct dfr_pending {
	struct rxp_pkt *res;
	uint32_t hlen, total;
	int dlt;
	uint32_t iface;
	uint64_t ts_ns;
	uint8_t hdr[DFR_PEND_HDR];
};

struct dfr_frames {
	struct rxp_pktpool *pp;
	struct rxp_pktpool *hp; /* heads of fragments referencing their frame, or NULL */
	unsigned headroom;
	unsigned hp_room; /* the most header bytes (and 3 of alignment) a head of hp holds */
	/* References on ref_pg taken ahead in one atomic add, handed to
	 * packets one by one: a locked add per fragment waited for the
	 * header copy before it (5% of the run) */
	struct rxp_page *ref_pg;
	unsigned ref_stock;
	struct dfr_frame_stats st;
	struct rxp_decap d;
	struct dfr_zones *zones;
	struct dfr_late *late; /* NULL: late duplicates go to the table */
	struct rxp_pkt *last; /* the datagram handed out in dfr_out.dgram */
	struct dfr_pending pend[2]; /* DFR_LATER's, oldest first */
	unsigned npend;
	uint8_t *wbuf; /* headers, then the packet being decapsulated; the output */
	uint8_t *w; /* what the call uses for it: wbuf, or the frame's room */
	uint8_t *dbuf; /* dfr_frame_discarded output */
	uint8_t warned[65536 / 8]; /* link types warned about */
};

struct dfr_frames *dfr_frames_create(struct rxp_pktpool *pp)
{
	struct dfr_frames *fs = calloc(1, sizeof(*fs));

	if (!fs)
		return NULL;
	fs->pp = pp;
	fs->headroom = rxp_pktpool_headroom(pp);
	fs->zones = dfr_zones_create();
	fs->wbuf = malloc(DFR_OUT_MAX);
	fs->dbuf = malloc(DFR_OUT_MAX);
	if (!fs->zones || !fs->wbuf || !fs->dbuf) {
		dfr_frames_destroy(fs);
		errno = ENOMEM;
		return NULL;
	}
	return fs;
}

/* Give back the references taken ahead (the source page may go). */
static void ref_stock_drop(struct dfr_frames *fs)
{
	for (; fs->ref_stock; fs->ref_stock--)
		rxp_page_put(fs->ref_pg);
	fs->ref_pg = NULL;
}

/* One reference on pg for a packet, from the stock. */
static void ref_take(struct dfr_frames *fs, struct rxp_page *pg)
{
	if (pg != fs->ref_pg) {
		ref_stock_drop(fs);
		fs->ref_pg = pg;
	}
	if (!fs->ref_stock) {
		rxp_page_get_many(pg, DFR_REF_STOCK);
		fs->ref_stock = DFR_REF_STOCK;
	}
	fs->ref_stock--;
}

static void pend_drop(struct dfr_frames *fs)
{
	for (unsigned i = 0; i < fs->npend; i++)
		rxp_pkt_consume(fs->pend[i].res);
	fs->npend = 0;
}

void dfr_frames_destroy(struct dfr_frames *fs)
{
	if (!fs)
		return;
	if (fs->last)
		rxp_pkt_consume(fs->last);
	pend_drop(fs);
	ref_stock_drop(fs);
	dfr_zones_destroy(fs->zones);
	dfr_late_destroy(fs->late);
	free(fs->wbuf);
	free(fs->dbuf);
	free(fs);
}

void dfr_frames_reset(struct dfr_frames *fs)
{
	if (fs->last)
		rxp_pkt_consume(fs->last);
	fs->last = NULL;
	pend_drop(fs);
	ref_stock_drop(fs);
	memset(&fs->st, 0, sizeof(fs->st));
	dfr_zones_reset(fs->zones);
	if (fs->late)
		dfr_late_reset(fs->late);
}

int dfr_frames_set_late(struct dfr_frames *fs)
{
	if (!fs->late && !(fs->late = dfr_late_create()))
		return -1;
	return 0;
}

int dfr_frames_set_refs(struct dfr_frames *fs, struct rxp_pktpool *hp)
{
	if (rxp_pktpool_headroom(hp) != fs->headroom ||
	    rxp_pktpool_buf_size(hp) < fs->headroom + 64u) {
		errno = EINVAL;
		return -1;
	}
	fs->hp = hp;
	fs->hp_room = rxp_pktpool_buf_size(hp) - fs->headroom;
	return 0;
}

void dfr_frame_table_config(struct rxp_defrag_config *cfg)
{
	cfg->zone_all_v6 = true; /* zones are VLANs and tunnels, for every destination */
}

int dfr_frame_dlt_known(int dlt)
{
	return dlt >= 0 && rxp_decap_linktype_known((uint32_t)dlt);
}

static int zone_of(struct dfr_frames *fs, uint32_t parent, const struct rxp_decap_ctx *ctx,
		   uint32_t *zone)
{
	if (!parent && !ctx->tunnel && !ctx->nvlan) {
		*zone = 0; /* the untagged link level, most frames: no lookup */
		return 0;
	}
	if (!dfr_zone_of(fs->zones, parent, ctx, zone))
		return 0;
	fs->st.zones_full++;
	return -1;
}

static void link_failed(struct dfr_frames *fs, int dlt, int r)
{
	switch (r) {
	case RXP_DECAP_NOT_IP:
		fs->st.nonip++;
		return;
	case RXP_DECAP_UNKNOWN_LINK:
		fs->st.unknown_link++;
		if (dlt >= 0 && dlt < 65536 && !(fs->warned[dlt / 8] & (1u << (dlt % 8)))) {
			const char *n = pcap_datalink_val_to_name(dlt);

			fs->warned[dlt / 8] |= (uint8_t)(1u << (dlt % 8));
			fprintf(stderr,
				"rxpath defrag: warning: link type %d (%s) is not one rxpath "
				"reads: "
				"its frames pass through unchanged\n",
				dlt, n ? n : "unknown");
		}
		return;
	default:
		fs->st.bad_link++;
		return;
	}
}

/* Where a frame's packets came from, kept at the start of their headroom
 * (in front of the frame's bytes, which nothing else writes to); pad: the
 * bytes between the headroom and the frame's first byte. */
struct pkt_origin {
	uint32_t magic;
	int32_t dlt;
	uint32_t iface;
	uint32_t pad;
};
#define ORIGIN_MAGIC 0x72786672u

/* A packet of pool holding bytes [0, n) of b, its data at the IP header
 * at fs->d.ip_off, which lands on a 4-byte boundary (the table reads IP
 * headers as structs), where it came from in its headroom; NULL when the
 * pool has none left. */
static struct rxp_pkt *head_pkt(struct dfr_frames *fs, struct rxp_pktpool *pool,
				const struct dfr_frame *f, const uint8_t *b, uint32_t n)
{
	struct rxp_pkt *p = rxp_pkt_alloc(pool, n + 3);
	struct pkt_origin o = {ORIGIN_MAGIC, f->dlt, f->iface, 0};

	if (!p)
		return NULL;
	o.pad = (uint32_t)(-(uintptr_t)(p->data + fs->d.ip_off) & 3);
	rxp_pkt_reserve(p, o.pad);
	memcpy(rxp_pkt_put(p, n), b, n);
	if (fs->headroom >= sizeof(o))
		memcpy(p->head, &o, sizeof(o));
	rxp_pkt_pull(p, fs->d.ip_off);
	p->tstamp_ns = f->ts_ns;
	p->network_off = (uint16_t)(p->data - p->head);
	return p;
}

/* The packet of bytes [0, n) of b (head_pkt, from the layer's pool). When
 * the frame went on past the packet (trail), the headers in the packet's
 * headroom are fixed for the packet as it is. */
static struct rxp_pkt *make_pkt(struct dfr_frames *fs, const struct dfr_frame *f, const uint8_t *b,
				uint32_t n, bool trail)
{
	struct rxp_pkt *p = head_pkt(fs, fs->pp, f, b, n);

	if (!p) {
		fs->st.alloc_fail++;
		return NULL;
	}
	if (trail) /* lengths only shrink: cannot fail */
		rxp_decap_fixup(&fs->d, p->data - fs->d.ip_off, n);
	return p;
}

/* The packet of the fragment in frame f (its IP packet, of iplen bytes,
 * at fs->d.ip_off, nothing after it) without copying its payload: the
 * link and IP headers (for IPv6, up to the end of the fragment header) in
 * a head of fs->hp, the rest a frag referencing f->src. NULL when it does
 * not qualify or no head is left: then make_pkt copies it. */
static struct rxp_pkt *make_ref_pkt(struct dfr_frames *fs, const struct dfr_frame *f,
				    uint32_t iplen)
{
	const uint8_t *ip = f->data + fs->d.ip_off;
	uint32_t hlen, n = fs->d.ip_off + iplen;
	struct rxp_pkt *p;

	if ((ip[0] >> 4) == 4) {
		hlen = (ip[0] & 0x0fu) * 4u;
	} else {
		hlen = rxp_decap_ipv6_frag_off(ip, iplen);
		if (!hlen)
			return NULL;
		hlen += RXP_IPV6_FRAGHDR_LEN;
	}
	hlen += fs->d.ip_off;
	if (hlen + 3 > fs->hp_room || hlen > n || n - hlen < DFR_REF_MIN)
		return NULL;
	p = head_pkt(fs, fs->hp, f, f->data, hlen);
	if (!p)
		return NULL;
	ref_take(fs, f->src);
	if (rxp_pkt_add_frag(p, f->src, f->src_off + hlen, n - hlen, n - hlen)) {
		fs->ref_stock++; /* (the reference stays ours) */
		rxp_pkt_consume(p);
		return NULL;
	}
	return p;
}

/* Feeds p to the table; *frag says whether it was a fragment there. */
static struct rxp_pkt *reassemble(struct rxp_defrag_table *t, struct rxp_pkt *p, uint32_t zone,
				  uint64_t now_ns, bool *frag)
{
	struct rxp_defrag_counters k;
	uint64_t reqds;

	rxp_defrag_get_counters(t, &k);
	reqds = k.ReasmReqds;
	p = rxp_defrag_zone(t, p, zone, now_ns);
	rxp_defrag_get_counters(t, &k);
	*frag = k.ReasmReqds != reqds;
	return p;
}

/* Whether the IP packet res may carry a tunnel rxp_decap_tunnel enters, by
 * its protocol (and UDP port) alone: most do not, and then neither the
 * stack nor the packet's bytes need copying. IPv6 extension headers: yes. */
static bool may_tunnel(const struct rxp_pkt *res)
{
	uint8_t buf[64];
	const uint8_t *ip = rxp_pkt_header_pointer(res, 0, res->len < 64 ? res->len : 64, buf);
	uint32_t n = res->len < 64 ? res->len : 64, l4;
	uint8_t proto;

	if (!ip || n < RXP_IPV4_HLEN)
		return false;
	if ((ip[0] >> 4) == 4) {
		l4 = (ip[0] & 0x0f) * 4u;
		proto = ip[9];
	} else if ((ip[0] >> 4) == 6 && n >= RXP_IPV6_HLEN) {
		l4 = RXP_IPV6_HLEN;
		proto = ip[6];
		if (proto == RXP_IPPROTO_HOPOPTS || proto == RXP_IPPROTO_ROUTING ||
		    proto == RXP_IPPROTO_DSTOPTS || proto == RXP_IPPROTO_AH)
			return true;
	} else {
		return false;
	}
	if (proto == 4 || proto == 41 || proto == 47)
		return true;
	if (proto == RXP_IPPROTO_UDP && l4 + 4 <= n) {
		uint16_t dport = (uint16_t)(ip[l4 + 2] << 8 | ip[l4 + 3]);

		return dport == 4789 || dport == 6081 || dport == 2152;
	}
	return false;
}

/* res came back from the table for the IP packet behind fs->d's hlen
 * header bytes (at hdr, or already in wbuf when in_w). If it carries a
 * tunnel, makes the packet of the inner IP packet (res itself when it is
 * the untouched packet that went in, else a new one: res is then
 * consumed), moves fs->d and *zone on, and returns it; NULL otherwise,
 * with res left alone. */
static struct rxp_pkt *enter_tunnel(struct dfr_frames *fs, const struct dfr_frame *f,
				    struct rxp_pkt *res, bool frag, bool *in_w, uint32_t *zone)
{
	const uint8_t *hdr = f->data;
	struct rxp_decap save;
	uint32_t hlen = fs->d.ip_off, local, iplen, inner_zone;
	const uint8_t *b;
	bool ifrag;
	int r;

	if (fs->d.tunnels >= DFR_MAX_TUNNELS || !may_tunnel(res))
		return NULL;
	if (!frag) {
		b = res->data; /* linear: we made it, and the table did not touch it */
	} else {
		if (!*in_w)
			memcpy(fs->w, hdr, hlen);
		*in_w = true;
		if (rxp_pkt_copy_bits(res, 0, fs->w + hlen, res->len))
			return NULL;
		b = fs->w + hlen;
	}
	memcpy(&save, &fs->d, offsetof(struct rxp_decap, layer));
	r = rxp_decap_tunnel(&fs->d, b, res->len);
	if (r <= 0) {
		if (r < 0 && r != RXP_DECAP_NOT_IP)
			fs->st.bad_tunnel++; /* ARP in VXLAN is no fault */
		return NULL;
	}
	local = fs->d.ip_off - hlen;
	/* rxp_decap_tunnel checked the inner packet is all there. */
	rxp_decap_ip_info(b + local, res->len - local, &iplen, &ifrag);
	if (zone_of(fs, *zone, &fs->d.ctx, &inner_zone))
		goto undo;
	if (!*in_w)
		memcpy(fs->w, hdr, hlen);
	*in_w = true;
	if (!frag && ((uintptr_t)(b + local) & 3) == 0) {
		/* In place: the headers stay in the packet's headroom. */
		memcpy(fs->w + hlen, b, local);
		rxp_pkt_pull(res, local);
		if (res->len > iplen) {
			rxp_pkt_trim(res, iplen);
			rxp_decap_fixup(&fs->d, res->data - fs->d.ip_off, fs->d.ip_off + iplen);
		}
	} else {
		struct rxp_pkt *np;

		if (!frag)
			memcpy(fs->w + hlen, b, res->len);
		np = make_pkt(fs, f, fs->w, fs->d.ip_off + iplen, res->len > local + iplen);
		if (!np)
			goto undo;
		rxp_pkt_consume(res);
		res = np;
	}
	fs->st.tunnel_pkts++;
	*zone = inner_zone;
	return res;
undo:
	memcpy(&fs->d, &save, offsetof(struct rxp_decap, layer));
	return NULL;
}

/* Ask for every line of res's page frags at once, before they are copied
 * out. A datagram's fragments came far apart (its payload is not in cache:
 * referenced in a mapped input, or in buffers written long ago), and a
 * copy frag by frag met one ramp of misses after another: with the lines
 * asked for first, they come in parallel. rxpath defrag on the bench
 * capture, main thread alone (OUT /dev/null): median user time 0.226 ->
 * 0.214 s (13 runs, alternating), memmove 19% -> 13% of its samples. */
static void prefetch_frags(const struct rxp_pkt *res)
{
	for (unsigned i = 0; i < res->nr_frags; i++) {
		uintptr_t a = (uintptr_t)(res->frags[i].page->addr + res->frags[i].off);
		uintptr_t end = a + res->frags[i].size;

		for (a &= ~(uintptr_t)63; a < end; a += 64)
			__builtin_prefetch((const void *)a);
	}
}

/* Keep res for dfr_frames_pending, with fs->d's headers (hdr) fixed for
 * it, its payload asked for: false when it cannot be (a tunnel's headers
 * hold a checksum over the payload, or too long headers). Consumes res
 * when true. */
static bool defer_out(struct dfr_frames *fs, struct rxp_pkt *res, const uint8_t *hdr,
		      const struct dfr_frame *f)
{
	struct dfr_pending *p = &fs->pend[fs->npend];
	uint32_t hlen = fs->d.ip_off;

	if (!f->room || fs->npend == 2 || fs->d.tunnels || hlen > DFR_PEND_HDR || !f->ts_ns)
		return false;
	memcpy(p->hdr, hdr, hlen);
	/* outside a tunnel, the link headers' fields are all in front */
	if (rxp_decap_fixup(&fs->d, p->hdr, hlen + res->len))
		return false;
	if (!f->defer_copy)
		prefetch_frags(res);
	p->res = res;
	p->hlen = hlen;
	p->total = hlen + res->len;
	p->dlt = f->dlt;
	p->iface = f->iface;
	p->ts_ns = f->ts_ns;
	fs->npend++;
	return true;
}

unsigned dfr_frames_npending(const struct dfr_frames *fs)
{
	return fs->npend;
}

/* The oldest pending datagram's frame headers into room, out filled; the
 * datagram, no longer held, returned. */
static struct rxp_pkt *pending_take(struct dfr_frames *fs, uint8_t *room, struct dfr_out *out)
{
	struct dfr_pending *p = &fs->pend[0];
	struct rxp_pkt *res = p->res;

	memcpy(room, p->hdr, p->hlen);
	out->frame = room;
	out->len = p->total;
	out->dlt = p->dlt;
	out->iface = p->iface;
	out->ts_ns = p->ts_ns;
	out->dgram = NULL;
	if (--fs->npend)
		fs->pend[0] = fs->pend[1];
	return res;
}

bool dfr_frames_pending(struct dfr_frames *fs, uint8_t *room, struct dfr_out *out)
{
	while (fs->npend) {
		struct rxp_pkt *res = pending_take(fs, room, out);
		bool ok = !rxp_pkt_copy_bits(res, 0, room + out->len - res->len, res->len);

		rxp_pkt_consume(res);
		if (ok) /* (a datagram shorter than it says is not written) */
			return true;
	}
	return false;
}

bool dfr_frames_pending_ref(struct dfr_frames *fs, uint8_t *room, struct dfr_out *out,
			    struct rxp_pkt **dgram)
{
	if (!fs->npend)
		return false;
	*dgram = pending_take(fs, room, out);
	return true;
}

/* The output frame for datagram res behind fs->d's headers; false when it
 * cannot be written (then the input frame passes as it came). */
static bool build_out(struct dfr_frames *fs, const struct rxp_pkt *res, const uint8_t *hdr,
		      bool in_w, struct dfr_out *out)
{
	uint32_t hlen = fs->d.ip_off, total = hlen + res->len;
	uint8_t fam;

	prefetch_frags(res);
	if (!in_w)
		memcpy(fs->w, hdr, hlen);
	if (rxp_pkt_copy_bits(res, 0, fs->w + hlen, res->len))
		return false;
	if (!rxp_decap_fixup(&fs->d, fs->w, total))
		goto done;
	/* Too big for an outer length field: keep the link header only. */
	fs->st.too_big++;
	fam = fs->w[hlen] >> 4;
	if (!fs->d.tunnels || rxp_decap_strip(&fs->d, fs->w, fam))
		return false;
	memmove(fs->w + fs->d.ip_off, fs->w + hlen, res->len);
	total = fs->d.ip_off + res->len;
	if (rxp_decap_fixup(&fs->d, fs->w, total))
		return false;
	fs->st.stripped++;
done:
	out->frame = fs->w;
	out->len = total;
	return true;
}

enum dfr_verdict dfr_frame_process(struct dfr_frames *fs, struct rxp_defrag_table *t,
				   const struct dfr_frame *f, uint64_t now_ns, struct dfr_out *out)
{
	const uint8_t *frame = f->data;
	uint32_t caplen = f->caplen;
	int dlt = f->dlt;
	struct rxp_decap *d = &fs->d;
	struct rxp_pkt *p, *res;
	struct dfr_late_frag lf; /* what dfr_late_match parsed (ok says whether) */
	uint32_t zone, iplen;
	bool frag, changed = false, in_w = false;
	int r;

	lf.ok = false; /* (not the whole struct: set per frame, read only when ok) */
	if (fs->last) {
		rxp_pkt_consume(fs->last);
		fs->last = NULL;
	}
	/* (room is for a frame dfr_frames_pending builds there first) */
	fs->w = f->room && !fs->npend ? f->room : fs->wbuf;
	r = dlt < 0 ? RXP_DECAP_UNKNOWN_LINK : rxp_decap_link(d, (uint32_t)dlt, frame, caplen);
	if (r) {
		link_failed(fs, dlt, r);
		return DFR_PASS;
	}
	if (rxp_decap_ip_info(frame + d->ip_off, caplen - d->ip_off, &iplen, &frag)) {
		fs->st.bad_link++;
		return DFR_PASS;
	}
	if (iplen > caplen - d->ip_off) {
		if (frag)
			fs->st.truncated++;
		return DFR_PASS; /* cut by the snaplen: what is there goes out as it is */
	}
	if (d->ip_off + fs->headroom + 3 > UINT16_MAX || zone_of(fs, 0, &d->ctx, &zone)) {
		fs->st.bad_link++;
		return DFR_PASS;
	}
	if (frag && fs->late &&
	    dfr_late_match(fs->late, zone, frame + d->ip_off, iplen, f->ts_ns, f->stable, &lf)) {
		fs->st.late_duplicates++;
		return DFR_DROPPED;
	}
	p = frag && f->src && fs->hp && d->ip_off + iplen == caplen ? make_ref_pkt(fs, f, iplen)
								    : NULL;
	if (!p)
		p = make_pkt(fs, f, frame, d->ip_off + iplen, d->ip_off + iplen < caplen);
	if (!p)
		return DFR_PASS;
	for (bool outer = true;; outer = false) {
		struct rxp_pkt *in;

		res = reassemble(t, p, zone, now_ns, &frag);
		if (!res)
			return DFR_HELD;
		if (outer && frag && fs->late)
			dfr_late_note(fs->late, &lf, res, f->ts_ns); /* it completed one */
		changed |= frag;
		if (frag && d->tunnels)
			fs->st.tunnel_datagrams++;
		in = enter_tunnel(fs, f, res, frag, &in_w, &zone);
		if (!in)
			break;
		p = in;
	}
	if (changed && f->defer && !in_w && defer_out(fs, res, frame, f)) {
		out->dgram = res;
		return DFR_LATER;
	}
	if (!changed || !build_out(fs, res, frame, in_w, out)) {
		rxp_pkt_consume(res);
		return DFR_PASS;
	}
	out->dgram = fs->last = res;
	out->dlt = f->dlt;
	out->iface = f->iface;
	return DFR_OUT;
}

int dfr_frame_discarded(struct dfr_frames *fs, const struct rxp_pkt *pkt, struct dfr_out *out)
{
	struct pkt_origin o;
	const uint8_t *mac;
	uint32_t l2;

	if (fs->headroom < sizeof(o))
		return -1;
	memcpy(&o, pkt->head, sizeof(o));
	if (o.magic != ORIGIN_MAGIC || o.pad > 3)
		return -1; /* not a packet of ours */
	mac = pkt->head + fs->headroom + o.pad;
	l2 = (uint32_t)(pkt->data - mac);
	if (pkt->data < mac || (uint64_t)l2 + pkt->len > DFR_OUT_MAX ||
	    rxp_pkt_copy_bits(pkt, 0, fs->dbuf + l2, pkt->len))
		return -1;
	memcpy(fs->dbuf, mac, l2);
	out->frame = fs->dbuf;
	out->len = l2 + pkt->len;
	out->dgram = NULL;
	out->dlt = o.dlt;
	out->iface = o.iface;
	return 0;
}

void dfr_frames_get_stats(const struct dfr_frames *fs, struct dfr_frame_stats *st)
{
	*st = fs->st;
	st->zones = dfr_zones_count(fs->zones);
}

/* Names as in struct dfr_frame_stats, for the summary and JSON. */
static const struct {
	const char *name;
	size_t off;
} stat_fields[] = {
	{"nonip", offsetof(struct dfr_frame_stats, nonip)},
	{"bad_link", offsetof(struct dfr_frame_stats, bad_link)},
	{"unknown_link", offsetof(struct dfr_frame_stats, unknown_link)},
	{"truncated", offsetof(struct dfr_frame_stats, truncated)},
	{"alloc_fail", offsetof(struct dfr_frame_stats, alloc_fail)},
	{"tunnel_pkts", offsetof(struct dfr_frame_stats, tunnel_pkts)},
	{"bad_tunnel", offsetof(struct dfr_frame_stats, bad_tunnel)},
	{"tunnel_datagrams", offsetof(struct dfr_frame_stats, tunnel_datagrams)},
	{"zones_full", offsetof(struct dfr_frame_stats, zones_full)},
	{"too_big", offsetof(struct dfr_frame_stats, too_big)},
	{"stripped", offsetof(struct dfr_frame_stats, stripped)},
	{"zones", offsetof(struct dfr_frame_stats, zones)},
	{"late_duplicates", offsetof(struct dfr_frame_stats, late_duplicates)},
};

static uint64_t stat_value(const struct dfr_frame_stats *st, unsigned i)
{
	uint64_t v;

	memcpy(&v, (const char *)st + stat_fields[i].off, sizeof(v));
	return v;
}

void dfr_frames_json(const struct dfr_frames *fs, FILE *f)
{
	struct dfr_frame_stats st;

	dfr_frames_get_stats(fs, &st);
	for (unsigned i = 0; i < sizeof(stat_fields) / sizeof(stat_fields[0]); i++)
		fprintf(f, "%s\"%s\":%" PRIu64, i ? "," : "{", stat_fields[i].name,
			stat_value(&st, i));
	fputc('}', f);
}

void dfr_frames_summary(const struct dfr_frames *fs, FILE *f)
{
	struct dfr_frame_stats st;
	bool any = false;

	dfr_frames_get_stats(fs, &st);
	for (unsigned i = 0; i < sizeof(stat_fields) / sizeof(stat_fields[0]); i++) {
		if (!stat_value(&st, i))
			continue;
		fprintf(f, "%s %s %" PRIu64, any ? "" : "  frames:", stat_fields[i].name,
			stat_value(&st, i));
		any = true;
	}
	if (any)
		fputc('\n', f);
}

void dfr_frames_warnings(const struct dfr_frames *fs, FILE *f)
{
	struct dfr_frame_stats st;

	dfr_frames_get_stats(fs, &st);
	if (st.too_big)
		fprintf(f,
			"rxpath defrag: warning: %" PRIu64 " datagrams reassembled in tunnels "
			"were too big for their outer headers (over 65,535 bytes): %" PRIu64
			" written behind the link header alone, without the tunnel; %" PRIu64
			" passed as the last fragment's frame\n",
			st.too_big, st.stripped, st.too_big - st.stripped);
	if (st.zones_full)
		fprintf(f,
			"rxpath defrag: warning: more than %u distinct VLAN/tunnel contexts: "
			"%" PRIu64 " packets inside new ones were not reassembled\n",
			DFR_MAX_ZONES, st.zones_full);
}
