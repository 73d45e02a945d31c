/*
 * Late duplicates for `rxpath defrag`: a copy of a datagram's completing
 * fragment that comes after the datagram was reassembled.
 *
 * Why: `tcpdump -i any` on a host that forwards (a router, a bridge, a
 * container host) captures every frame twice, once in and once out, the
 * second with its TTL (or hop limit) one lower. Copies that come while
 * their datagram is in flight are duplicates the table drops. The copy of
 * the fragment that completed it comes after: it starts a new datagram of
 * its own, which never completes (reported lost at the end) and which the
 * next datagram of that source with the same ID joins once IDs wrap (every
 * 65,536 datagrams): that one then completes with the stale fragment's
 * bytes in it, or is thrown away as an overlap. On a capture of 140,000
 * such datagrams, 74,464 came out with wrong bytes (tshark gives the same
 * wrong datagrams: checked on 10,000 with IDs wrapping at 4,096).
 *
 * What: the last DFR_LATE_SLOTS completing fragments are remembered (the
 * datagram's key, the fragment's place and length, and a 64-bit hash of
 * its payload, or where a mapped input holds its bytes), and a fragment
 * that is one of them again, the same bytes (by that hash, or compared),
 * within DFR_LATE_WINDOW_NS of capture time, is dropped as a late
 * duplicate. Its IP header (TTL, checksum, options) and link header are
 * not compared. The key is the table's: zone, family, addresses,
 * identification and (IPv4) protocol. A new datagram that reuses the ID
 * within the window with the same bytes in the same place loses that
 * fragment: the price of the rule, for a repeat of the same bytes.
 * Only fragments at the outer level (not inside a tunnel) are compared.
 *
 * A host that forwards a datagram's fragments only once it has them all
 * (seen for IPv6 through a veth router) puts the copies of every fragment,
 * not only the completing one's, after the datagram. So the datagrams'
 * payloads are kept too, in a ring of DFR_LATE_RING bytes, and a fragment
 * of a remembered datagram (the same key, within the window) whose bytes
 * are the datagram's at its place is a late duplicate as well. Keeping
 * them is a copy of every datagram: it is done for the first
 * DFR_LATE_PROBE datagrams, and after them only once the input has shown
 * a late duplicate (a capture with none pays nothing more).
 */
#ifndef RXPATH_TOOLS_DEFRAG_LATE_H
#define RXPATH_TOOLS_DEFRAG_LATE_H

#include <stdbool.h>
#include <stdint.h>

#include "rxpath/pkt.h"

#define DFR_LATE_SLOTS 1024u
#define DFR_LATE_WINDOW_NS 1000000000ull
#define DFR_LATE_RING (4u << 20)
#define DFR_LATE_PROBE 4096u

struct dfr_late;

/* NULL with errno ENOMEM. */
struct dfr_late *dfr_late_create(void);
void dfr_late_destroy(struct dfr_late *l);
/* Forget every fragment remembered. */
void dfr_late_reset(struct dfr_late *l);

/* The fragment a frame holds, as dfr_late_match parsed it: the caller
 * keeps it for dfr_late_note while the frame's bytes stay (one parse per
 * fragment). */
struct dfr_late_key {
	uint32_t zone;
	uint32_t id;
	uint8_t family;
	uint8_t proto; /* IPv4; 0 for IPv6, whose table key has none */
	uint8_t pad[2];
	uint8_t src[16], dst[16];
};

struct dfr_late_frag {
	struct dfr_late_key k;
	uint32_t off; /* in bytes */
	uint32_t len; /* of the payload after the IP (and fragment) header */
	uint32_t unfrag; /* IPv6: the bytes before the fragment header */
	bool mf;
	const uint8_t *data; /* the payload, in the caller's frame */
	bool stable; /* data stays until the layer is destroyed */
	uint32_t bucket; /* in the index */
	uint32_t tag; /* more of the key's hash, kept in the index entry */
	bool ok; /* a fragment that parsed */
};

/* Whether the IPv4 or IPv6 fragment at ip (len bytes: the IP packet, no
 * more) in zone, at capture time ts_ns, is a remembered one again (see
 * above). stable: ip's bytes stay readable, as they are, until l is
 * destroyed (a mapped input); a completing fragment's are then compared
 * where they are, not hashed. Fills *f (ok false for a packet that is not
 * a fragment that parses). */
bool dfr_late_match(struct dfr_late *l, uint32_t zone, const uint8_t *ip, uint32_t len,
		    uint64_t ts_ns, bool stable, struct dfr_late_frag *f);

/* The fragment f (from dfr_late_match, its frame's bytes still there)
 * completed datagram dgram (data at its IP header) at capture time ts_ns:
 * remember it, and the datagram's payload while payloads are kept (see
 * above). One that did not parse is not remembered. */
void dfr_late_note(struct dfr_late *l, const struct dfr_late_frag *f, const struct rxp_pkt *dgram,
		   uint64_t ts_ns);

#endif
