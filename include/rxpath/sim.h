/*
 * The software NIC (sim device) and its traffic sources.
 *
 * rxp_gen: a deterministic UDP traffic generator (IPv4 and IPv6, sizes in a
 * range, fragmentation at an MTU, frame loss), usable on its own. Every UDP
 * payload starts with a 16-byte header (magic, datagram sequence, length,
 * a 32-bit hash of the rest) that rxp_gen_verify() checks, and the UDP checksum is
 * valid, so a sink can prove each delivered datagram intact.
 *
 * rxp_sim: a NIC with nqueues receive rings (include/rxpath/ring.h). On each
 * rx_burst(q) its hardware side writes frames whose RSS hash (rxp_rss_hash of
 * the L3 addresses) selects queue q into q's posted buffers (splitting jumbo
 * frames over several, with DD and EOP, zero-length descriptors at a set
 * rate), counting rx_no_buffer when none are posted; then the driver side
 * cleans the ring (XDP hook, packets). Each queue runs its own copy of the
 * source and keeps only its frames, so queues can be polled from different
 * threads and the whole run is deterministic from the seed. A poll skips no
 * more than 64 frames of other queues per queue of the device before it
 * returns (a queue that few or no flows hash to would otherwise read its
 * whole source in one poll); the rest come on later polls.
 */
#ifndef RXPATH_SIM_H
#define RXPATH_SIM_H

#include <stdbool.h>
#include <stdint.h>

#include "rxpath/compiler.h"
#include "rxpath/dev.h"

RXP_BEGIN_DECLS

#define RXP_GEN_HDR_LEN 16
#define RXP_GEN_MAGIC 0x52585047u /* "RXPG" */
#define RXP_GEN_FRAME_MAX 9216

struct rxp_gen_config {
	uint64_t seed;
	uint64_t count; /* datagrams to generate; 0: no end */
	uint32_t min_payload; /* UDP payload bytes (>= 16; default 16) */
	uint32_t max_payload; /* (default 1472; at most 65000) */
	unsigned ipv6_pct; /* share of IPv6 datagrams, 0..100 */
	uint32_t mtu; /* IP bytes per frame; larger datagrams are
				* fragmented (default 1500, 68..9200) */
	double loss; /* probability each frame is lost */
	unsigned flows; /* address pairs (default 64) */
	uint16_t dport; /* default 9 (discard) */
	/* Datagrams in flight (0 or 1: one at a time): that many are open at
	 * once and take turns, a frame each, round-robin, so a datagram's
	 * fragments arrive in_flight frames apart. Each flow numbers its
	 * datagrams (IPv4: 16 bits), so keep in_flight / flows well under
	 * 65536 for IPv4. */
	unsigned in_flight;
	bool shuffle; /* each datagram's fragments in a random order */
	/* Address plane: flow f's addresses are 10.(100+net).x.y -> 10.(200+net).x.y,
	 * fd(01+2net)::x:y -> fd(02+2net)::x:y (default 0), so generators
	 * that share a stream keep their flows apart. */
	uint8_t net; /* 0..50 */
	uint32_t seq_base; /* the payload header's seq is seq_base + the datagram's number */
};

#define RXP_GEN_IN_FLIGHT_MAX (1u << 20)

struct rxp_gen_stats {
	uint64_t datagrams, frames, lost, bytes;
	uint64_t damaged; /* datagrams of which a frame was lost */
};

struct rxp_gen;
/* NULL with errno set (EINVAL). */
struct rxp_gen *rxp_gen_create(const struct rxp_gen_config *cfg);
void rxp_gen_destroy(struct rxp_gen *g);
/* The next Ethernet frame (padded to 60 bytes) into buf: 0, -ENODATA when
 * count datagrams are done, -ENOSPC if cap is too small, -EAGAIN after
 * RXP_GEN_LOST_RUN_MAX frames in a row were lost (the loss rate: nothing
 * this time, the stream goes on at the next call). */
int rxp_gen_next(struct rxp_gen *g, uint8_t *buf, uint32_t cap, uint32_t *len);
#define RXP_GEN_LOST_RUN_MAX 4096u
void rxp_gen_get_stats(const struct rxp_gen *g, struct rxp_gen_stats *st);
/* What a frame is, for sources that account for every datagram. */
struct rxp_gen_frame {
	uint64_t seq; /* its datagram's number (0, 1, ...) */
	uint32_t flow, id; /* its flow (address pair) and IP ID */
	uint16_t frag, nfrags; /* which fragment (by offset) of how many */
	bool lost; /* lost on the way (frame loss) */
	bool last; /* its datagram's last frame to be emitted */
};
/* rxp_gen_next, saying what the frame is; with report_lost a lost frame is
 * returned too (info->lost) rather than skipped. */
int rxp_gen_next_ex(struct rxp_gen *g, uint8_t *buf, uint32_t cap, uint32_t *len,
		    struct rxp_gen_frame *info, bool report_lost);
/* Check a UDP payload made by a generator: 0, or -EBADMSG. */
int rxp_gen_verify(const uint8_t *payload, uint32_t len);
/* Write a verifiable payload of len (>= RXP_GEN_HDR_LEN) bytes: the
 * header (magic, seq, len, hash) and pseudo-random bytes from x. Other
 * traffic sources (TIPC messages in `rxpath run`) use it so one check
 * covers every payload. */
void rxp_gen_fill_payload(uint8_t *p, uint32_t len, uint32_t seq, uint64_t x);

/* A frame source the sim NIC can replay: the generator or a pcap file. */
struct rxp_src {
	/* 0 and a frame; RXP_SRC_SKIPPED: a record it could make no frame of
	 * (*len is why, an enum rxp_drop_reason: its link headers do not
	 * parse, it is empty, or larger than a jumbo frame), which the sim NIC
	 * counts as a drop and asks again; RXP_SRC_OUTGOING: a frame the
	 * capturing host sent (rxp_decap_outgoing), which no NIC receives:
	 * counted (rx_outgoing), not offered; -EAGAIN: none this time (the sim
	 * NIC asks again at its next poll); another negative errno: the
	 * source's end or error. */
	int (*next)(struct rxp_src *s, uint8_t *buf, uint32_t cap, uint32_t *len);
	void (*close)(struct rxp_src *s);
	/* Optional: the frame next() gave last was dropped by the sim NIC's
	 * hardware side before it became a packet (no posted buffer), for
	 * sources that account for what they send (the workload's ledger). */
	void (*dropped)(struct rxp_src *s, const uint8_t *frame, uint32_t len,
			enum rxp_drop_reason reason);
};
#define RXP_SRC_SKIPPED 1
#define RXP_SRC_OUTGOING 2
struct rxp_src *rxp_src_gen(const struct rxp_gen_config *cfg);
/* Frames of a pcap/pcapng file; raw-IP frames get an Ethernet header. */
struct rxp_src *rxp_src_pcap(const char *path);

/* The most frames one rx_burst writes (hw_burst): a receive ring drops
 * what it has no room for, so more only spends time generating drops. */
#define RXP_SIM_HW_BURST_MAX 65536u

struct rxp_sim_config {
	unsigned nqueues; /* default 1 */
	unsigned ring_size; /* descriptors per queue (default 512) */
	uint32_t buf_size; /* default 2048 */
	uint32_t page_size; /* default 4096 */
	uint32_t n_pages; /* page-pool pages per queue (default 2*ring+256) */
	uint64_t seed; /* zero-length descriptor placement */
	double zero_len_rate; /* probability of a zero-length descriptor
				  * before each buffer of a frame */
	unsigned hw_burst; /* frames written per rx_burst (0: n; at most
			    * RXP_SIM_HW_BURST_MAX) */
	rxp_xdp_prog_fn xdp; /* NULL: pass everything */
	void *xdp_ctx;
	/* Traffic: a generator config, or a pcap file to replay. */
	const struct rxp_gen_config *gen;
	const char *pcap_path;
	/* Or any source: called once per queue (each keeps only its frames). */
	struct rxp_src *(*src_open)(void *arg);
	void *src_arg;
};

/* NULL with errno set. */
struct rxp_dev *rxp_sim_open(const struct rxp_sim_config *cfg, struct rxp_pktpool *pp);

RXP_END_DECLS

#endif
