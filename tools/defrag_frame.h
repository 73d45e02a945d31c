/*
 * The frame layer of `rxpath defrag`: from a captured frame (its link type,
 * bytes and captured length) to the IP packet to reassemble and its
 * reassembly zone, and from a reassembled datagram back to an output frame
 * with the completing fragment's outer headers, lengths fixed.
 *
 * cmd_defrag.c's main loop calls dfr_frame_process() once per frame and
 * writes what it says; it never looks inside a frame itself. The contract
 * is written down for the other side in notes/link-interface.md.
 */
#ifndef RXPATH_TOOLS_DEFRAG_FRAME_H
#define RXPATH_TOOLS_DEFRAG_FRAME_H

#include <stdint.h>
#include <stdio.h>

#include "rxpath/defrag.h"
#include "rxpath/pkt.h"

struct dfr_frames;

/* What became of one frame. */
enum dfr_verdict {
	DFR_PASS, /* write the input frame unchanged (not a fragment, not IP, unparsable) */
	DFR_HELD, /* a fragment the table keeps: write nothing now */
	DFR_OUT, /* write dfr_out.frame: a datagram this frame completed */
	DFR_DROPPED, /* a late duplicate (defrag_late.h): write nothing, counted */
	/* with dfr_frame.defer: a datagram this frame completed (dfr_out.dgram,
	 * until its frame is built), whose frame dfr_frames_pending builds
	 * later (write nothing now) */
	DFR_LATER,
};

/* One captured frame. */
struct dfr_frame {
	int dlt; /* its link type (DLT_ value), per interface in pcapng */
	uint32_t iface; /* its interface (0 for pcap) */
	const uint8_t *data; /* only read */
	uint32_t caplen;
	uint64_t ts_ns; /* its own time: kept with its fragments (tstamp_ns) */
	/* NULL, or DFR_OUT_MAX bytes the output frame is built in (OUT's own
	 * buffer: then writing it copies nothing); they must not change while
	 * the call runs */
	uint8_t *room;
	/* NULL, or a page that holds data at src_off, whose bytes stay as
	 * they are while it has references: a layer given a head pool
	 * (dfr_frames_set_refs) then makes a fragment's packet of its
	 * headers alone and references its payload there (rxp_page_get)
	 * instead of copying it */
	struct rxp_page *src;
	uint32_t src_off;
	/* data stays readable, as it is, until the layer is destroyed (a
	 * mapped input): the late duplicates' rule then compares a fragment
	 * with the completing one's bytes there instead of hashing each
	 * completing fragment (defrag_late.h) */
	bool stable;
	/* the caller takes DFR_LATER: a datagram completed outside a tunnel
	 * (and with a timestamp), for a frame with a room, may have its frame
	 * built later, by dfr_frames_pending, after the caller's next
	 * dfr_frame_process; then room is not used for it */
	bool defer;
	/* with defer: the caller copies the datagram's bytes itself, later
	 * (dfr_frames_pending_ref): its payload is not asked for now */
	bool defer_copy;
};

/* Largest frame read (libpcap's snaplen cap); an output frame is at most
 * the headers of one plus a datagram of up to 64 KiB. */
#define DFR_FRAME_MAX 262144u
#define DFR_OUT_MAX (DFR_FRAME_MAX + 65536u)

struct dfr_out {
	const uint8_t *frame; /* DFR_OUT: the frame to write (valid until the next call) */
	uint32_t len;
	int dlt; /* the link type and interface of the frame to write: the */
	uint32_t iface; /* input frame's (DFR_OUT), the fragment's own (discarded) */
	/* DFR_OUT: the datagram, data at its IP header; the frame layer keeps
	 * it until its next call (or dfr_frames_destroy) */
	const struct rxp_pkt *dgram;
	uint64_t ts_ns; /* dfr_frames_pending: the completing frame's time */
};

/* What the frame layer saw. A frame counted in nonip, bad_link,
 * unknown_link, truncated or alloc_fail passed through unchanged without
 * reaching the table. */
struct dfr_frame_stats {
	uint64_t nonip; /* a link layer that carries something else (ARP, ...) */
	uint64_t bad_link; /* a link header or IP header that does not parse */
	uint64_t unknown_link; /* frames of link types the frame layer does not know */
	uint64_t truncated; /* IP fragments cut short by the snaplen */
	uint64_t alloc_fail; /* out of packet buffers: passed unprocessed */
	uint64_t tunnel_pkts; /* inner IP packets taken out of tunnels */
	uint64_t bad_tunnel; /* tunnel headers that do not parse: the outer packet is used */
	uint64_t tunnel_datagrams; /* datagrams reassembled inside a tunnel */
	uint64_t zones_full; /* tunnels past DFR_MAX_ZONES (defrag_zone.h): not entered */
	uint64_t too_big; /* datagrams the outer headers cannot hold (over 65,535 bytes) */
	uint64_t stripped; /* of those, written behind the link header alone */
	uint64_t zones; /* distinct VLAN and tunnel contexts seen */
	uint64_t late_duplicates; /* copies of a completing fragment after its
				   * datagram, dropped (dfr_frames_set_late) */
};

/* pp: the pool packets are made from; it must outlive the frame layer. NULL
 * with errno ENOMEM. dfr_frames_destroy lets go of what the layer holds:
 * the last datagram, references on a source page (dfr_frame.src). */
struct dfr_frames *dfr_frames_create(struct rxp_pktpool *pp);
void dfr_frames_destroy(struct dfr_frames *fs);

/* Forget every frame seen, as if just made: stats, zones (their numbers
 * are given again from 1, so the table must hold nothing of them) and the
 * late duplicates remembered; the datagram last handed out, and every
 * reference on a source page the layer holds, are let go. The
 * late-duplicate setting stays, and so does each link type's one
 * warning. */
void dfr_frames_reset(struct dfr_frames *fs);

/* Drop late duplicates (defrag_late.h) from now on: 0, or -1 with errno
 * ENOMEM. Off until called. */
int dfr_frames_set_late(struct dfr_frames *fs);

/* From now on, a fragment of a frame that comes with a source page
 * (dfr_frame.src) and has at least DFR_REF_MIN payload bytes is made in
 * hp: its link and IP headers copied into a small head, its payload a
 * page frag referencing the frame (reassembly then joins the references,
 * and only the output frame copies the bytes). For the strict policy's
 * table only (target policies may rewrite a fragment's bytes). The layer
 * takes references on a source page DFR_REF_STOCK at a time and holds the
 * rest until a frame comes with another page, or it is reset or
 * destroyed: every source page must outlive that. hp must have the
 * headroom of the layer's pool and outlive the layer: 0, or -1 with errno
 * EINVAL. Off until called (every fragment copied). */
#define DFR_REF_MIN 256u
#define DFR_REF_STOCK 64u
int dfr_frames_set_refs(struct dfr_frames *fs, struct rxp_pktpool *hp);

/* Takes one frame and feeds what it carries to t, on the table's clock
 * now_ns (which may differ from the frame's own time). */
enum dfr_verdict dfr_frame_process(struct dfr_frames *fs, struct rxp_defrag_table *t,
				   const struct dfr_frame *f, uint64_t now_ns, struct dfr_out *out);

/* The frame of the oldest datagram DFR_LATER left, built in room (at least
 * DFR_OUT_MAX bytes): frame, len, dlt, iface and ts_ns (its completing
 * frame's) filled, dgram NULL; false when none is left. Its payload was
 * asked for from memory when the datagram completed, so that it comes in
 * while the next frame is processed: the caller calls this after each
 * dfr_frame_process, before it writes anything else, and until false
 * at the end. At most two are held (dfr_frames_npending). */
bool dfr_frames_pending(struct dfr_frames *fs, uint8_t *room, struct dfr_out *out);
/* The same without the datagram's bytes: room gets the frame's headers,
 * *dgram the datagram itself (data at its IP header, now the caller's),
 * whose dgram->len bytes belong at out->frame + out->len - dgram->len. */
bool dfr_frames_pending_ref(struct dfr_frames *fs, uint8_t *room, struct dfr_out *out,
			    struct rxp_pkt **dgram);
unsigned dfr_frames_npending(const struct dfr_frames *fs);

/* For the table's discard hook (rxp_defrag_config.discard_cb): the frame a
 * fragment the table gives up on came in, rebuilt from the outer headers
 * kept in front of it, with its interface and link type; its time is
 * pkt->tstamp_ns. Fills out (frame and len valid until the next call of
 * this function; dgram NULL) and returns 0, or -1 when pkt holds no such
 * headers. May be called from inside dfr_frame_process(). */
int dfr_frame_discarded(struct dfr_frames *fs, const struct rxp_pkt *pkt, struct dfr_out *out);

/* What the frame layer needs of the table: call on its config before
 * rxp_defrag_table_create() (zones key every IPv6 datagram: zone_all_v6). */
void dfr_frame_table_config(struct rxp_defrag_config *cfg);

/* Whether the frame layer parses link type dlt. */
int dfr_frame_dlt_known(int dlt);

void dfr_frames_get_stats(const struct dfr_frames *fs, struct dfr_frame_stats *st);

/* The stats as one JSON object (every field), and as a summary line of the
 * nonzero ones; a warning line for each kind of loss (too_big, zones_full). */
void dfr_frames_json(const struct dfr_frames *fs, FILE *f);
void dfr_frames_summary(const struct dfr_frames *fs, FILE *f);
void dfr_frames_warnings(const struct dfr_frames *fs, FILE *f);

#endif
