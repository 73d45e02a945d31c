/*
 * libFuzzer target for the frame layer of `rxpath defrag`
 * (tools/defrag_frame.c, with defrag_late.c and defrag_zone.c): captured
 * frames of every link type rxpath reads, through the link and tunnel
 * decapsulation, into a reassembly table, and back out as frames.
 *
 * An input is one configuration byte (bit 0: late duplicates dropped, as
 * in the file profile; bit 1: output frames built in the caller's room;
 * bits 2-3: the table's policy, of strict, bsd, last and windows; bit 4:
 * the Linux-like pressure policy; bit 5, under the strict policy: frames
 * come with a source page, the input itself, that fragments reference
 * rather than copy, as rxpath defrag's mapped input does; bit 6: frames
 * are stable, their bytes there until the input ends, as a mapped input's
 * are, so that late duplicates are compared with the completing
 * fragment's bytes, not its hash; bit 7, with bit 1: datagrams' frames may
 * be built later (DFR_LATER, dfr_frames_pending), as rxpath defrag does),
 * then records
 *   [1 byte link type][1 byte flags][2 bytes length][length bytes of frame]
 * (link type: an index into the link types rxpath reads, else the byte
 * itself; flags bits 0-2: how far capture time moves first, of 0, 1 ms,
 * 0.1 s, 0.9 s, 1.1 s, 10 s, 31 s and 61 s; bit 3: run the table's timers
 * after the frame; bit 4: interface 1; bits 5-6: which second copy of a
 * frame that completed a datagram is sent, see below).
 *
 * Checks, beyond no crash and no leak:
 *   - DFR_OUT: the output frame parses as its link type, with the IP header
 *     where the input frame had it; its length field ends that IP packet
 *     where the frame ends; an IPv4 one is not a fragment and its header
 *     checksum is right; the frame ends with the datagram's bytes.
 *   - DFR_DROPPED only where late duplicates are on.
 *   - Late duplicates: after a frame whose fragment at the link's level
 *     completed a datagram (the table's ReasmOKs rose by more than the
 *     datagrams done inside tunnels), the same frame at the same time is
 *     DFR_DROPPED, and so is a copy with its TTL or hop limit one lower
 *     (a forwarded copy, as `tcpdump -i any` sees it). Then, by the flags:
 *     a copy with the last payload byte changed (where the payload's place
 *     is known: IPv4, or IPv6 with the fragment header first; and under
 *     the strict policy, where the datagram holds the completing
 *     fragment's own bytes, which the rule also compares a copy with), or
 *     the same frame 1.5 s later (past DFR_LATE_WINDOW_NS), is not
 *     dropped.
 *   - The discard hook: every fragment the table gives up on rebuilds
 *     (dfr_frame_discarded) into a frame that ends with its bytes.
 *   - At the end of an input the timers run past every queue: no queue and
 *     no memory left in the table, nothing out of either pool once the
 *     frame layer is reset, and no reference left on the source page.
 *
 * The seeds are real captures cut into inputs (gen_frame_corpus.py, on
 * what tests/cli/defrag_links.sh captured from the kernel and wrapped in
 * every link layer and tunnel).
 *
 * The pools, one table per (policy, pressure) and four frame layers
 * (with and without late duplicates and references) live as long as the
 * process: after an
 * input its table is emptied (see fuzz_defrag.c: an emptied table is a
 * fresh one) and then its frame layer is reset (dfr_frames_reset), so an
 * input behaves the same whatever ran before it. (Made per input, the
 * frame layer's buffers, 0.7 MiB, were mapped, faulted in and unmapped
 * each time under ASan: a third of the time.)
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "defrag_frame.h"
#include "defrag_late.h"
#include "fuzz.h"
#include "fz_linktypes.h"
#include "rxpath/decap.h"
#include "rxpath/defrag.h"
#include "rxpath/wire.h"

#define NCFG 8u
#define MS 1000000ull

static const uint64_t steps[8] = {0,	     MS,	 100 * MS,   900 * MS,
				  1100 * MS, 10000 * MS, 31000 * MS, 61000 * MS};

static struct rxp_defrag_table *tables[NCFG];
static struct dfr_frames *layers[2][2]; /* [late duplicates][references] */
static struct rxp_pktpool *heads; /* the heads of fragments that reference the input */
static struct rxp_page in_page; /* the input, as the frames' source page */

static void in_page_released(struct rxp_page *pg)
{
	(void)pg;
	FZ_CHECK(!"the input page lost its own reference");
}
static struct dfr_frames *cur; /* the frame layer of the input running */
static uint8_t room[DFR_OUT_MAX];
static uint8_t copy[65536];

static void fz_discarded(void *arg, const struct rxp_pkt *pkt)
{
	struct dfr_out o;
	uint8_t tail[64];
	uint32_t n = pkt->len < sizeof(tail) ? pkt->len : (uint32_t)sizeof(tail);

	(void)arg;
	/* every packet in the table was made by the frame layer */
	FZ_CHECK(cur && !dfr_frame_discarded(cur, pkt, &o));
	FZ_CHECK(o.len >= pkt->len && !o.dgram);
	FZ_CHECK(!rxp_pkt_copy_bits(pkt, pkt->len - n, tail, n));
	FZ_CHECK(!memcmp(o.frame + o.len - n, tail, n));
}

static struct rxp_defrag_table *table_for(unsigned cfg)
{
	static const enum rxp_defrag_policy pols[4] = {RXP_DEFRAG_STRICT, RXP_DEFRAG_BSD,
						       RXP_DEFRAG_LAST, RXP_DEFRAG_WINDOWS};
	struct rxp_defrag_config c = {.mem_limit = 256 * 1024, .max_queues = 16};

	if (!tables[cfg]) {
		c.policy = pols[cfg & 3];
		c.pressure = (cfg & 4) ? RXP_DEFRAG_PRESSURE_LINUX : RXP_DEFRAG_PRESSURE_EVICT;
		c.discard_cb = fz_discarded;
		dfr_frame_table_config(&c);
		tables[cfg] = rxp_defrag_table_create(&c);
		FZ_CHECK(tables[cfg]);
	}
	return tables[cfg];
}

/* What a datagram's frame must show (see the top): for DFR_OUT at once,
 * for DFR_LATER when dfr_frames_pending builds it (then the datagram is
 * gone: its last bytes are kept here, oldest first). */
struct want {
	int dlt;
	uint32_t iface, ip_off, glen, n;
	uint8_t tail[64];
};
static struct want later[2];
static unsigned nlater;

static void want_of(const struct dfr_frame *f, uint32_t in_ip_off, const struct rxp_pkt *g,
		    struct want *w)
{
	FZ_CHECK(g);
	w->dlt = f->dlt;
	w->iface = f->iface;
	w->ip_off = in_ip_off;
	w->glen = g->len;
	w->n = g->len < sizeof(w->tail) ? g->len : (uint32_t)sizeof(w->tail);
	FZ_CHECK(!rxp_pkt_copy_bits(g, g->len - w->n, w->tail, w->n));
}

static void check_want(const struct want *w, const struct dfr_out *o)
{
	struct rxp_decap d;
	uint32_t iplen;
	bool frag;

	FZ_CHECK(o->frame && o->len >= w->glen && o->len <= DFR_OUT_MAX);
	FZ_CHECK(o->dlt == w->dlt && o->iface == w->iface);
	FZ_CHECK(!memcmp(o->frame + o->len - w->n, w->tail, w->n));
	FZ_CHECK(!rxp_decap_link(&d, (uint32_t)w->dlt, o->frame, o->len));
	FZ_CHECK(d.ip_off == w->ip_off);
	FZ_CHECK(!rxp_decap_ip_info(o->frame + d.ip_off, o->len - d.ip_off, &iplen, &frag));
	FZ_CHECK((d.family == 6 || !frag) && iplen == o->len - d.ip_off);
	if (d.family == 4)
		FZ_CHECK(rxp_ip_csum(o->frame + d.ip_off, (o->frame[d.ip_off] & 0x0f) * 4u) == 0);
}

/* Build the frames DFR_LATER left until keep are left, and check each. */
static void drain_later(unsigned keep)
{
	struct dfr_out o;

	FZ_CHECK(dfr_frames_npending(cur) == nlater && nlater <= 2);
	while (nlater > keep) {
		FZ_CHECK(dfr_frames_pending(cur, room, &o));
		check_want(&later[0], &o);
		later[0] = later[1];
		nlater--;
	}
	FZ_CHECK(dfr_frames_npending(cur) == nlater);
}

/* The checks on a frame written for a datagram (see the top). */
static void check_out(const struct dfr_frame *f, uint32_t in_ip_off, const struct dfr_out *o)
{
	struct rxp_decap d;
	const struct rxp_pkt *g = o->dgram;
	uint8_t tail[64];
	uint32_t iplen, n;
	bool frag;

	FZ_CHECK(g && o->frame && o->len >= g->len && o->len <= DFR_OUT_MAX);
	FZ_CHECK(o->dlt == f->dlt && o->iface == f->iface);
	n = g->len < sizeof(tail) ? g->len : (uint32_t)sizeof(tail);
	FZ_CHECK(!rxp_pkt_copy_bits(g, g->len - n, tail, n));
	FZ_CHECK(!memcmp(o->frame + o->len - n, tail, n));
	FZ_CHECK(!rxp_decap_link(&d, (uint32_t)f->dlt, o->frame, o->len));
	FZ_CHECK(d.ip_off == in_ip_off);
	FZ_CHECK(!rxp_decap_ip_info(o->frame + d.ip_off, o->len - d.ip_off, &iplen, &frag));
	/* (an IPv6 datagram may carry another fragment header in what was its
	 * fragmentable part: that is its payload, written as it came) */
	FZ_CHECK((d.family == 6 || !frag) && iplen == o->len - d.ip_off);
	if (d.family == 4)
		FZ_CHECK(rxp_ip_csum(o->frame + d.ip_off, (o->frame[d.ip_off] & 0x0f) * 4u) == 0);
}

/* One frame through the frame layer and its checks: its verdict, and in
 * *done whether its fragment at the link's level completed a datagram. */
static enum dfr_verdict fz_frame(struct rxp_defrag_table *t, const struct dfr_frame *f, bool late,
				 uint32_t *ip_off, bool *done)
{
	struct rxp_defrag_counters k0, k1;
	struct dfr_frame_stats s0, s1;
	struct rxp_decap d;
	struct dfr_out o;
	enum dfr_verdict v;

	*ip_off = 0;
	if (f->dlt >= 0 && !rxp_decap_link(&d, (uint32_t)f->dlt, f->data, f->caplen))
		*ip_off = d.ip_off;
	/* (only a cooked capture says a frame went out, and reading it stays
	 * inside the frame: ASan) */
	FZ_CHECK(f->dlt < 0 || !rxp_decap_outgoing((uint32_t)f->dlt, f->data, f->caplen) ||
		 f->dlt == RXP_LINKTYPE_LINUX_SLL || f->dlt == RXP_LINKTYPE_LINUX_SLL2);
	rxp_defrag_get_counters(t, &k0);
	dfr_frames_get_stats(cur, &s0);
	v = dfr_frame_process(cur, t, f, f->ts_ns, &o);
	rxp_defrag_get_counters(t, &k1);
	dfr_frames_get_stats(cur, &s1);
	FZ_CHECK(v == DFR_PASS || v == DFR_HELD || v == DFR_OUT || v == DFR_DROPPED ||
		 (v == DFR_LATER && f->defer));
	FZ_CHECK(v != DFR_DROPPED || (late && s1.late_duplicates == s0.late_duplicates + 1));
	if (v == DFR_OUT) {
		drain_later(0); /* (the caller writes what came before first) */
		check_out(f, *ip_off, &o);
	}
	if (v == DFR_LATER) {
		FZ_CHECK(nlater < 2);
		want_of(f, *ip_off, o.dgram, &later[nlater++]);
	}
	drain_later(v == DFR_PASS ? 0 : 1);
	*done = k1.ReasmOKs - k0.ReasmOKs > s1.tunnel_datagrams - s0.tunnel_datagrams;
	return v;
}

/* Copies of f, whose fragment at the link's level (at ip_off) completed a
 * datagram (see the top); which: the flags' bits 5-6. */
static void fz_copies(struct rxp_defrag_table *t, struct dfr_frame *f, uint32_t ip_off,
		      unsigned which, bool strict)
{
	struct dfr_frame c = *f;
	uint32_t ipo, iplen, pay;
	uint8_t *ip, *hop;
	bool frag, done;

	FZ_CHECK(f->caplen <= sizeof(copy) && ip_off < f->caplen);
	memcpy(copy, f->data, f->caplen);
	c.data = copy;
	c.src = NULL; /* (the copy is not in the input) */
	c.stable = false; /* (nor does it stay: the next copy is written over it) */
	ip = copy + ip_off;
	hop = ip + ((ip[0] >> 4) == 4 ? 8 : 7); /* TTL, hop limit */
	FZ_CHECK(fz_frame(t, &c, true, &ipo, &done) == DFR_DROPPED); /* the same frame */
	(*hop)--; /* forwarded */
	FZ_CHECK(fz_frame(t, &c, true, &ipo, &done) == DFR_DROPPED);
	(*hop)++;
	FZ_CHECK(!rxp_decap_ip_info(ip, f->caplen - ip_off, &iplen, &frag) && frag);
	if (which == 1 && strict) {
		/* where the payload starts, when that is known without a walk */
		if ((ip[0] >> 4) == 4)
			pay = (ip[0] & 0x0f) * 4u;
		else
			pay = ip[6] == RXP_IPPROTO_FRAGMENT ? RXP_IPV6_HLEN + 8 : iplen;
		if (pay < iplen) {
			ip[iplen - 1] ^= 0x5a;
			FZ_CHECK(fz_frame(t, &c, true, &ipo, &done) != DFR_DROPPED);
		}
	} else if (which == 2) {
		c.ts_ns += DFR_LATE_WINDOW_NS + DFR_LATE_WINDOW_NS / 2;
		f->ts_ns = c.ts_ns; /* the clock moves on with it */
		FZ_CHECK(fz_frame(t, &c, true, &ipo, &done) != DFR_DROPPED);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rxp_defrag_config dc = {.mem_limit = 256 * 1024, .max_queues = 16};
	struct rxp_pktpool_config pc = {.name = "fz"};
	struct rxp_pktpool *pp;
	struct rxp_defrag_table *t;
	struct rxp_defrag_counters ct;
	struct dfr_frame f = {0};
	const uint8_t *base = data;
	bool late, refs;
	unsigned cfg;

	if (size < 1)
		return 0;
	rxp_defrag_pool_config(&dc, 64, &pc);
	pp = fz_pool(&pc);
	late = data[0] & 1;
	f.room = (data[0] & 2) ? room : NULL;
	cfg = (data[0] >> 2) & (NCFG - 1);
	refs = (data[0] & 0x20) && (cfg & 3) == 0; /* as rxpath defrag: strict only */
	t = table_for(cfg);
	if (!heads) {
		struct rxp_pktpool_config hc = {.name = "fz-heads",
						.buf_size = RXP_HEADROOM_DEFAULT + 192,
						.headroom = RXP_HEADROOM_DEFAULT};

		rxp_defrag_pool_config(&dc, 64, &hc);
		heads = rxp_pktpool_create(&hc);
		FZ_CHECK(heads);
	}
	if (!layers[late][refs]) {
		struct dfr_frames *fs = dfr_frames_create(pp);

		FZ_CHECK(fs && (!late || !dfr_frames_set_late(fs)) &&
			 (!refs || !dfr_frames_set_refs(fs, heads)));
		layers[late][refs] = fs;
	}
	cur = layers[late][refs];
	rxp_page_set_refcount(&in_page, 1);
	in_page.addr = (uint8_t *)(uintptr_t)data;
	in_page.size = (uint32_t)size;
	in_page.release = in_page_released;
	f.src = refs ? &in_page : NULL;
	f.stable = data[0] & 0x40;
	f.defer = (data[0] & 0x80) && f.room;
	data++;
	size--;
	while (size >= 4) {
		uint8_t lt = data[0], fl = data[1];
		size_t len = (size_t)data[2] << 8 | data[3];
		uint32_t ip_off;
		bool done;

		data += 4;
		size -= 4;
		if (len > size)
			len = size;
		f.dlt = lt < FZ_NLT ? (int)fz_linktypes[lt] : lt;
		f.iface = (fl >> 4) & 1;
		f.data = data;
		f.src_off = (uint32_t)(data - base);
		f.caplen = (uint32_t)len;
		f.ts_ns += steps[fl & 7];
		fz_frame(t, &f, late, &ip_off, &done);
		if (done && late)
			fz_copies(t, &f, ip_off, (fl >> 5) & 3, (cfg & 3) == 0);
		if (fl & 8)
			rxp_defrag_expire(t, f.ts_ns);
		data += len;
		size -= len;
	}
	drain_later(0);
	rxp_defrag_expire(t, UINT64_MAX);
	rxp_defrag_get_counters(t, &ct);
	FZ_CHECK(ct.queues == 0 && ct.mem == 0);
	dfr_frames_reset(cur);
	cur = NULL;
	fz_pool_quiet(pp);
	fz_pool_quiet(heads);
	FZ_CHECK(rxp_page_refcount(&in_page) == 1);
	return 0;
}
