/*
 * Overload streams for reassembly (issue #16), shared by the property test,
 * the thread-001 scenario and `rxpath bench goodput`: the generator's
 * datagrams in flight round-robin (rxp_gen in_flight), optionally shuffled
 * and lossy, optionally mixed with a FragmentSmack-style attacker (another
 * source, fragments that never complete); a driver that feeds a stream to a
 * reassembly table and checks every datagram it delivers; and the reference
 * the policy is judged against: "finish what you started" (FWYS) simulated
 * over the same frames with the table's own memory charges.
 */
#ifndef RXPTEST_OVERLOAD_H
#define RXPTEST_OVERLOAD_H

#include <stdbool.h>
#include <stdint.h>

#include "rxpath/defrag.h"

struct ovl_config {
	uint64_t seed;
	unsigned dgrams; /* legitimate datagrams */
	unsigned frags; /* fragments each at MTU 1500 (the last one full too) */
	unsigned in_flight;
	unsigned ipv6_pct;
	bool shuffle;
	double loss; /* per legitimate frame */
	double attack; /* attacker fragments per legitimate one (0: none) */
	unsigned attack_ids; /* IDs the attacker cycles through (0: 4096) */
};

struct rxp_gen_config;
/* The generator config of c's legitimate traffic (for the sim NIC). */
void ovl_gen_config(const struct ovl_config *c, struct rxp_gen_config *gc);

struct ovl_stream;
struct ovl_stream *ovl_open(const struct ovl_config *c);
/* The next Ethernet frame into buf (at least 1600 bytes): 0, or -ENODATA at
 * the end. *attack says whose it is. */
int ovl_next(struct ovl_stream *s, uint8_t *buf, uint32_t *len, bool *attack);
/* Datagrams the generator damaged (lost a frame). */
uint64_t ovl_damaged(const struct ovl_stream *s);
void ovl_close(struct ovl_stream *s);
/* Write c's stream (the frames that were not lost) to a pcap at path, 1 us
 * apart; returns frames written, or -1 with errno. */
long ovl_write_pcap(const struct ovl_config *c, const char *path);

struct ovl_result {
	uint64_t delivered; /* legitimate datagrams reassembled and verified */
	uint64_t bad; /* delivered datagrams whose payload did not verify */
	uint64_t damaged; /* legitimate datagrams that lost a frame */
	uint64_t frames, attack_frames;
	uint64_t cap_exceeded; /* fragments after which memory was over the cap */
	uint64_t frag_truesize, qcharge; /* the table's charges, as measured */
	/* A legitimate source's standing was kept in an attacker's slot
	 * (DFR_SRC_SLOTS of them, under the table's random key: about 1 in
	 * 4096 per pair of sources), so the pressure policy judged the two as
	 * one. */
	bool src_shared;
	struct rxp_defrag_counters c;
};

/* Feed c's stream to a new table with dc (mem_limit must be set) and a pool
 * sized for it, 1 us per frame; checks after every frame that memory is
 * within the cap (EVICT), tears down and asserts nothing leaked (returns
 * -1 then). */
int ovl_run_table(const struct ovl_config *c, const struct rxp_defrag_config *dc,
		  struct ovl_result *r);

/* The reference: FWYS over the same frames, cap bytes, charging each
 * fragment frag_truesize and each queue qcharge (ovl_run_table measures
 * both). A fragment of an open datagram is admitted if it fits, else the
 * newest other open datagrams are given up until it does; a fragment that
 * would open one is admitted only if it fits; a frame lost on the wire
 * gives its datagram up at once (the reference knows, rxpath must find
 * out). Attack frames are ignored. Returns datagrams completed. */
uint64_t ovl_run_fwys(const struct ovl_config *c, uint64_t cap, uint64_t frag_truesize,
		      uint64_t qcharge);

#endif
