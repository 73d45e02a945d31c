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

#include "rxpath/defrag.h"
#include "rxpath/pkt.h"

struct dfr_frames;

/* What became of one frame. */
enum dfr_verdict {
	DFR_PASS, /* write the input frame unchanged (not a fragment, not IP, unparsable) */
	DFR_HELD, /* a fragment the table keeps: write nothing now */
	DFR_OUT, /* write dfr_out.frame: a datagram this frame completed */
};

struct dfr_out {
	const uint8_t *frame; /* DFR_OUT: the frame to write (valid until the next call) */
	uint32_t len;
	/* DFR_OUT: the datagram, data at its IP header; the frame layer keeps
	 * it until its next call (or dfr_frames_destroy) */
	const struct rxp_pkt *dgram;
};

/* Why frames passed through without reaching the table, and other counts
 * of the frame layer. */
struct dfr_frame_stats {
	uint64_t nonip; /* not IP, or a link header that does not parse */
	uint64_t alloc_fail; /* out of packet buffers: passed unprocessed */
};

/* pp: the pool packets are made from; it must outlive the frame layer. NULL
 * with errno ENOMEM. */
struct dfr_frames *dfr_frames_create(struct rxp_pktpool *pp);
void dfr_frames_destroy(struct dfr_frames *fs);

/* Takes one frame of link type dlt (a DLT_ value) and feeds what it carries
 * to t at time now_ns. The frame's bytes are only read. */
enum dfr_verdict dfr_frame_process(struct dfr_frames *fs, struct rxp_defrag_table *t, int dlt,
				   const uint8_t *frame, uint32_t caplen, uint64_t now_ns,
				   struct dfr_out *out);

/* For the table's discard hook (rxp_defrag_config.discard_cb): the frame a
 * fragment the table gives up on came in, rebuilt from the outer headers
 * kept in front of it. Fills out.frame/len (valid until the next call of
 * this function; out.dgram NULL) and returns 0, or -1 when pkt holds no
 * such headers. May be called from inside dfr_frame_process(). */
int dfr_frame_discarded(struct dfr_frames *fs, const struct rxp_pkt *pkt, struct dfr_out *out);

/* Whether the frame layer parses link type dlt. */
int dfr_frame_dlt_known(int dlt);

void dfr_frames_get_stats(const struct dfr_frames *fs, struct dfr_frame_stats *st);

#endif
