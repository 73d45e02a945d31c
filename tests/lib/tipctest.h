/*
 * Test helpers for the TIPC layer: a recording sink, message and raw-packet
 * builders, and a bundle crafter that writes any bytes a peer could send.
 */
#ifndef TIPCTEST_H
#define TIPCTEST_H

#include "rxptest.h"
#include "rxpath/tipc.h"

#define TT_MAX_REC 4096

/* A sink that checks nothing, records what it got and consumes it. */
struct tt_sink {
	unsigned n;
	uint64_t bytes;
	uint32_t size[TT_MAX_REC];
	uint32_t user[TT_MAX_REC];
	uint32_t sum[TT_MAX_REC]; /* simple checksum of all bytes */
	unsigned nonlinear; /* messages that arrived with page frags */
};
void tt_sink_fn(void *arg, struct rxp_pkt *pkt);
uint32_t tt_sum(const uint8_t *p, uint32_t len);
uint32_t tt_pkt_sum(const struct rxp_pkt *pkt);

struct rxp_pktpool *tt_pool(void);
/* A link on pp with tt_sink_fn bound to RXP_TIPC_PORT_ANY and as node sink. */
void tt_link(struct rxp_tipc_link *l, struct rxp_pktpool *pp, struct tt_sink *s);

/* A message of total size `size` (header included), pattern payload. */
struct rxp_pkt *tt_msg(struct rxp_pktpool *pp, unsigned user, unsigned hsize, uint32_t port,
		       uint32_t size, uint32_t seed);
/* Write a message header into buf (hsize bytes, size field = size) and
 * pattern payload up to size; returns size. buf must hold size bytes. */
uint32_t tt_write_msg(uint8_t *buf, unsigned user, unsigned type, unsigned hsize, uint32_t size,
		      uint32_t seed);
/* A packet holding exactly these bytes (linear). */
struct rxp_pkt *tt_raw(struct rxp_pktpool *pp, const void *bytes, uint32_t len);
/* The same bytes split: first `head` bytes linear, the rest in page frags
 * of at most `chunk` bytes. */
struct rxp_pkt *tt_raw_split(struct rxp_pktpool *pp, const void *bytes, uint32_t len, uint32_t head,
			     uint32_t chunk);

/* Bundle crafting in a byte buffer: tt_bundle_begin writes a 40-byte
 * bundler header (hsize given), tt_bundle_put appends inner bytes at
 * ALIGN4 and updates size (msgcnt is set by the caller). */
struct tt_bundle {
	uint8_t buf[70000];
	uint32_t len;
	unsigned hsize;
};
void tt_bundle_begin(struct tt_bundle *b, unsigned hsize);
uint8_t *tt_bundle_put(struct tt_bundle *b, uint32_t len);
void tt_bundle_finish(struct tt_bundle *b, unsigned msgcnt);

/* A fragment packet: 40-byte (or hsize) FRAGMENTER header + data. */
struct rxp_pkt *tt_frag(struct rxp_pktpool *pp, unsigned type, unsigned fragm_no, const void *data,
			uint32_t len, unsigned hsize);

#endif
