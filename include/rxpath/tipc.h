/*
 * TIPC v2 message layer: header codec, validation, bundling, fragmentation,
 * per-link reassembly, link receive dispatch and the UDP bearer.
 *
 * The link-level protocol (sequence numbers, acknowledgements,
 * retransmission, the RESET/ACTIVATE handshake, discovery) is NOT
 * implemented: LINK_PROTOCOL, LINK_CONFIG and BCAST_PROTOCOL packets that
 * arrive at the top level are handed to an optional control callback, or
 * dropped with a counted reason when there is none.
 *
 * Ownership (docs/design.md rule 1): every function here that takes a
 * struct rxp_pkt * consumes it on every path (delivers it to a sink, keeps
 * it in the reassembly context, or drops it with a reason). None returns
 * "whether the caller still owns it": that is the leak of seed thread 000.
 *
 * Field layout, users, types and the rules V1-V5, B1-B5 and R1-R8 follow
 * docs/design.md (TIPC receive rules).
 */
#ifndef RXPATH_TIPC_H
#define RXPATH_TIPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rxpath/compiler.h"
#include "rxpath/drop.h"
#include "rxpath/pkt.h"

RXP_BEGIN_DECLS

/* Header sizes in bytes. */
#define RXP_TIPC_SHORT_H_SIZE 24
#define RXP_TIPC_BASIC_H_SIZE 32
#define RXP_TIPC_NAMED_H_SIZE 40
#define RXP_TIPC_MCAST_H_SIZE 44
#define RXP_TIPC_GROUP_H_SIZE 44
#define RXP_TIPC_INT_H_SIZE 40
#define RXP_TIPC_MIN_H_SIZE 24
#define RXP_TIPC_MAX_H_SIZE 60
#define RXP_TIPC_MAX_USER_MSG_SIZE 66000u
#define RXP_TIPC_MAX_MSG_SIZE (RXP_TIPC_MAX_H_SIZE + RXP_TIPC_MAX_USER_MSG_SIZE) /* 66060 */
#define RXP_TIPC_VERSION 2
#define RXP_TIPC_UDP_PORT 6118

/* Message users (word 0, bits 28:25). */
enum rxp_tipc_user {
	RXP_TIPC_LOW_IMPORTANCE = 0,
	RXP_TIPC_MEDIUM_IMPORTANCE = 1,
	RXP_TIPC_HIGH_IMPORTANCE = 2,
	RXP_TIPC_CRITICAL_IMPORTANCE = 3,
	RXP_TIPC_SYSTEM_IMPORTANCE = 4, /* an importance level, not a wire user */
	RXP_TIPC_BCAST_PROTOCOL = 5,
	RXP_TIPC_MSG_BUNDLER = 6,
	RXP_TIPC_LINK_PROTOCOL = 7,
	RXP_TIPC_CONN_MANAGER = 8,
	RXP_TIPC_GROUP_PROTOCOL = 9,
	RXP_TIPC_TUNNEL_PROTOCOL = 10,
	RXP_TIPC_NAME_DISTRIBUTOR = 11,
	RXP_TIPC_MSG_FRAGMENTER = 12,
	RXP_TIPC_LINK_CONFIG = 13,
	RXP_TIPC_MSG_CRYPTO = 14,
	RXP_TIPC_TOP_SRV = 15, /* pseudo user, never on the wire */
};

/* Message types (word 1, bits 31:29), per user. */
enum {
	RXP_TIPC_FIRST_FRAGMENT = 0, /* MSG_FRAGMENTER */
	RXP_TIPC_FRAGMENT = 1,
	RXP_TIPC_LAST_FRAGMENT = 2,
	RXP_TIPC_STATE_MSG = 0, /* LINK_PROTOCOL */
	RXP_TIPC_RESET_MSG = 1,
	RXP_TIPC_ACTIVATE_MSG = 2,
	RXP_TIPC_SYNCH_MSG = 0, /* TUNNEL_PROTOCOL */
	RXP_TIPC_FAILOVER_MSG = 1,
	RXP_TIPC_DSC_REQ_MSG = 0, /* LINK_CONFIG */
	RXP_TIPC_DSC_RESP_MSG = 1,
	RXP_TIPC_DSC_TRIAL_MSG = 2,
	RXP_TIPC_DSC_TRIAL_FAIL_MSG = 3,
	RXP_TIPC_CONN_MSG = 0, /* data users */
	RXP_TIPC_MCAST_MSG = 1,
	RXP_TIPC_NAMED_MSG = 2,
	RXP_TIPC_DIRECT_MSG = 3,
};

/*
 * Every header field of words 0-10 (and the internal overlays), as
 * (word, high bit, low bit). Overlays share bits with data fields; which one
 * applies depends on the user, as in the kernel's msg.h.
 */
#define RXP_TIPC_FIELDS(X)                                            \
	X(VERSION, 0, 31, 29)                                         \
	X(USER, 0, 28, 25)                                            \
	X(HSIZE_WORDS, 0, 24, 21)                                     \
	X(NON_SEQ, 0, 20, 20)                                         \
	X(DEST_DROPPABLE, 0, 19, 19)                                  \
	X(SRC_DROPPABLE, 0, 18, 18)                                   \
	X(SYN, 0, 17, 17)                                             \
	X(SIZE, 0, 16, 0)                                             \
	X(KEEPALIVE, 0, 19, 19) /* internal overlay */                \
	X(ACK_REQUIRED, 0, 18, 18) /* internal overlay (nagle_ack) */ \
	X(TYPE, 1, 31, 29)                                            \
	X(ERRCODE, 1, 28, 25)                                         \
	X(REROUTE_CNT, 1, 24, 21)                                     \
	X(LOOKUP_SCOPE, 1, 20, 19)                                    \
	X(BCAST_ACK, 1, 15, 0)                                        \
	X(SEQ_GAP, 1, 28, 16) /* LINK_PROTOCOL */                     \
	X(NODE_CAPABILITIES, 1, 27, 15) /* LINK_CONFIG */             \
	X(NODE_SIG, 1, 15, 0) /* LINK_CONFIG */                       \
	X(DEST_SESSION_VALID, 1, 16, 16) /* ACTIVATE */               \
	X(DEST_SESSION, 1, 15, 0) /* ACTIVATE */                      \
	X(ACK, 2, 31, 16)                                             \
	X(SEQNO, 2, 15, 0)                                            \
	X(DEST_DOMAIN, 2, 31, 0) /* LINK_CONFIG */                    \
	X(PREVNODE, 3, 31, 0)                                         \
	X(ORIGPORT, 4, 31, 0)                                         \
	X(FRAGM_NO, 4, 31, 16) /* MSG_FRAGMENTER */                   \
	X(NOF_FRAGMS, 4, 15, 0) /* MSG_FRAGMENTER (tunnel only) */    \
	X(NEXT_SENT, 4, 15, 0) /* LINK_PROTOCOL */                    \
	X(BC_NETID, 4, 31, 0) /* LINK_CONFIG */                       \
	X(DESTPORT, 5, 31, 0)                                         \
	X(SESSION, 5, 31, 16) /* LINK_PROTOCOL */                     \
	X(BEARER_ID, 5, 11, 9)                                        \
	X(LINKPRIO, 5, 8, 4)                                          \
	X(NET_PLANE, 5, 3, 1)                                         \
	X(PROBE, 5, 0, 0)                                             \
	X(ORIGNODE, 6, 31, 0)                                         \
	X(DESTNODE, 7, 31, 0)                                         \
	X(NAMETYPE, 8, 31, 0)                                         \
	X(NAMEINST, 9, 31, 0) /* also the lower bound */              \
	X(NAMEUPPER, 10, 31, 0)                                       \
	X(MSGCNT, 9, 31, 16) /* MSG_BUNDLER */                        \
	X(MAX_PKT_DIV4, 9, 31, 16) /* LINK_PROTOCOL */                \
	X(LINK_TOLERANCE, 9, 15, 0) /* LINK_PROTOCOL */               \
	X(IMPORTANCE, 9, 2, 0) /* internal users */

enum rxp_tipc_field {
#define RXP_TIPC_FIELD_ENUM(name, w, hi, lo) RXP_TIPC_F_##name,
	RXP_TIPC_FIELDS(RXP_TIPC_FIELD_ENUM)
#undef RXP_TIPC_FIELD_ENUM
		RXP_TIPC_F_MAX
};

struct rxp_tipc_field_desc {
	const char *name;
	uint8_t word, hi, lo;
};
extern const struct rxp_tipc_field_desc rxp_tipc_fields[RXP_TIPC_F_MAX];

/* Raw big-endian word w of a header (the caller guarantees 4*(w+1) bytes). */
static inline uint32_t rxp_tipc_word(const uint8_t *h, unsigned w)
{
	const uint8_t *p = h + 4 * w;

	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static inline void rxp_tipc_set_word(uint8_t *h, unsigned w, uint32_t v)
{
	uint8_t *p = h + 4 * w;

	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}
static inline uint32_t rxp_tipc_bits(const uint8_t *h, unsigned w, unsigned hi, unsigned lo)
{
	uint32_t mask = hi - lo == 31 ? ~0u : ((1u << (hi - lo + 1)) - 1);

	return (rxp_tipc_word(h, w) >> lo) & mask;
}
static inline void rxp_tipc_set_bits(uint8_t *h, unsigned w, unsigned hi, unsigned lo, uint32_t v)
{
	uint32_t mask = hi - lo == 31 ? ~0u : ((1u << (hi - lo + 1)) - 1);
	uint32_t x = rxp_tipc_word(h, w) & ~(mask << lo);

	rxp_tipc_set_word(h, w, x | (v & mask) << lo);
}

/* Generic field access. The header must hold the field's word; values
 * wider than the field are truncated to it. */
uint32_t rxp_tipc_get(const uint8_t *h, enum rxp_tipc_field f);
void rxp_tipc_set(uint8_t *h, enum rxp_tipc_field f, uint32_t v);

/* Word 0's fields from the word itself, for code that reads it once
 * (stores to the packet may alias the header bytes). */
static inline unsigned rxp_tipc_w0_version(uint32_t w0)
{
	return w0 >> 29;
}
static inline unsigned rxp_tipc_w0_user(uint32_t w0)
{
	return (w0 >> 25) & 15u;
}
static inline unsigned rxp_tipc_w0_hsize(uint32_t w0)
{
	return ((w0 >> 21) & 15u) * 4;
}
static inline uint32_t rxp_tipc_w0_size(uint32_t w0)
{
	return w0 & 0x1ffffu;
}

/* The hot fields, inline (h holds at least 24 bytes). */
static inline unsigned rxp_tipc_user(const uint8_t *h)
{
	return rxp_tipc_w0_user(rxp_tipc_word(h, 0));
}
static inline unsigned rxp_tipc_hsize(const uint8_t *h)
{
	return rxp_tipc_w0_hsize(rxp_tipc_word(h, 0));
}
static inline uint32_t rxp_tipc_size(const uint8_t *h)
{
	return rxp_tipc_w0_size(rxp_tipc_word(h, 0));
}
static inline unsigned rxp_tipc_type(const uint8_t *h)
{
	return rxp_tipc_bits(h, 1, 31, 29);
}
static inline uint32_t rxp_tipc_destport(const uint8_t *h)
{
	return rxp_tipc_word(h, 5);
}
/* Importance: the user for data users, word 9 bits 2:0 for internal ones
 * (h must hold 40 bytes for those). */
unsigned rxp_tipc_importance(const uint8_t *h);
/* orignode: word 6 when hsize > 24, else prevnode. */
uint32_t rxp_tipc_orignode(const uint8_t *h);
void rxp_tipc_set_hsize(uint8_t *h, unsigned bytes);

/* Lay out a fresh header: zeroes hsize bytes, sets version 2, user, type,
 * hsize, size = hsize, prevnode; for hsize > 24 orignode = prevnode and
 * destnode. hsize must be a multiple of 4 in 24..60. */
void rxp_tipc_hdr_init(uint8_t *h, unsigned user, unsigned type, unsigned hsize, uint32_t prevnode,
		       uint32_t destnode);

/*
 * Validation V1-V3 of a message at p with len bytes present (trailing bytes
 * beyond the size field are allowed). RXP_DROP_NONE, or the drop reason
 * RXP_DROP_TIPC_HDR. Arithmetic is unsigned with explicit bounds (V5).
 */
enum rxp_drop_reason rxp_tipc_validate(const uint8_t *p, size_t len);
/* The same on a packet whose message starts at pkt->data (any layout). */
enum rxp_drop_reason rxp_tipc_validate_pkt(const struct rxp_pkt *pkt);
static inline bool rxp_tipc_valid(const uint8_t *p, size_t len)
{
	return rxp_tipc_validate(p, len) == RXP_DROP_NONE;
}

/* ---- building messages (sender side) -------------------------------------- */

/* A data message: header of hsize bytes (24, 32, 40 or 44) for user 0-3
 * (or another user), destport, then len payload bytes copied from payload.
 * NULL on bad arguments or no memory. */
struct rxp_pkt *rxp_tipc_msg_new(struct rxp_pktpool *pp, unsigned user, unsigned type,
				 unsigned hsize, uint32_t prevnode, uint32_t destnode,
				 uint32_t destport, const void *payload, uint32_t len);

/* An empty MSG_BUNDLER packet (40-byte header, msgcnt 0) with room for mtu
 * bytes. NULL on no memory or mtu out of 64..65535. */
struct rxp_pkt *rxp_tipc_bundle_new(struct rxp_pktpool *pp, uint32_t mtu, uint32_t prevnode,
				    uint32_t destnode);
/* Append a copy of msg (the message at msg->data, msg unchanged and not
 * taken) at ALIGN4(bundle size). The first message sets the importance.
 * -EINVAL for FRAGMENTER, TUNNEL and BCAST_PROTOCOL or an invalid message,
 * -EMSGSIZE when it does not fit in mtu. */
int rxp_tipc_bundle_add(struct rxp_pkt *bundle, const struct rxp_pkt *msg, uint32_t mtu);

/* Split msg into MSG_FRAGMENTER packets of at most mtu bytes (FIRST,
 * FRAGMENT..., LAST, fragm_no 1, 2, ...; nof_fragms 0) appended to out. A
 * message that fits in mtu is queued as is. Fragment data larger than
 * RXP_TIPC_COPY_BREAK references msg's pages (no copy), smaller is copied.
 * Each fragment's linear part is only its 40-byte header, in a slice of a
 * head buffer shared with its siblings (not cloned: each may write its own
 * slice), with 64 bytes of headroom for a bearer's headers.
 * Consumes msg. Returns the number of packets queued, or -errno with
 * nothing queued (msg dropped, counted). */
int rxp_tipc_fragment(struct rxp_pktpool *pp, struct rxp_pkt *msg, uint32_t mtu,
		      struct rxp_pkt_queue *out);

/* ---- link receive ------------------------------------------------------------ */

/* Receives one message; consumes pkt (pkt->data at its TIPC header). */
typedef void (*rxp_tipc_sink_fn)(void *arg, struct rxp_pkt *pkt);

#define RXP_TIPC_MAX_PORTS 64
#define RXP_TIPC_PORT_ANY 0 /* bind port 0: receives data for unbound ports */
#define RXP_TIPC_COPY_BREAK 256 /* inner messages up to this are copied */

struct rxp_tipc_link_stats {
	uint64_t packets; /* top-level packets received */
	uint64_t bundles; /* valid bundles extracted */
	uint64_t bundled_msgs; /* inner messages extracted (valid ones) */
	uint64_t msgcnt_mismatch; /* bundles whose msgcnt != messages found (B4) */
	uint64_t fragments; /* fragments accepted into reassembly */
	uint64_t reassembled; /* messages completed by reassembly */
	uint64_t delivered; /* messages given to a port or node sink */
	uint64_t ctrl; /* top-level link/bcast messages given to ctrl */
	uint64_t drops; /* packets dropped, all reasons */
	uint64_t drop[RXP_DROP_MAX]; /* packets dropped, by reason */
};

struct rxp_tipc_port {
	uint32_t port;
	rxp_tipc_sink_fn fn;
	void *arg;
};

/* One link's receive state. Owned by one worker; not thread-safe. */
struct rxp_tipc_link {
	struct rxp_pktpool *pp; /* where extracted inner messages come from */
	struct rxp_pkt *reasm; /* R1: the one reassembly context */
	uint16_t reasm_next; /* fragm_no expected next */
	/* Head references of joined fragments, dropped in bulk when the
	 * message completes or reassembly is reset (never outlives reasm). */
	struct rxp_page_batch reasm_pages;
	unsigned n_ports;
	struct rxp_tipc_port ports[RXP_TIPC_MAX_PORTS];
	rxp_tipc_sink_fn node_fn; /* NAME_DISTRIBUTOR */
	void *node_arg;
	rxp_tipc_sink_fn ctrl_fn; /* top-level LINK_PROTOCOL, LINK_CONFIG, BCAST */
	void *ctrl_arg;
	struct rxp_tipc_link_stats st;
};

void rxp_tipc_link_init(struct rxp_tipc_link *l, struct rxp_pktpool *pp);
/* Link reset: frees the partial message, counted as TIPC_LINK_RESET (R8).
 * A link holds nothing else, so this is also its teardown: call it before
 * the link is forgotten. The link stays usable (bindings kept). */
void rxp_tipc_link_reset(struct rxp_tipc_link *l);
/* Deliver data (users 0-3, CONN_MANAGER, GROUP_PROTOCOL) for destport to fn.
 * 0, -EEXIST (already bound) or -ENOSPC (RXP_TIPC_MAX_PORTS). */
int rxp_tipc_link_bind(struct rxp_tipc_link *l, uint32_t port, rxp_tipc_sink_fn fn, void *arg);
void rxp_tipc_link_set_node_sink(struct rxp_tipc_link *l, rxp_tipc_sink_fn fn, void *arg);
void rxp_tipc_link_set_ctrl(struct rxp_tipc_link *l, rxp_tipc_sink_fn fn, void *arg);

/* The link receive entry point: validates, unbundles, reassembles and
 * dispatches by user (reference table). Consumes pkt on every path. */
void rxp_tipc_link_rcv(struct rxp_tipc_link *l, struct rxp_pkt *pkt);

/* ---- UDP bearer ---------------------------------------------------------------- */

/*
 * The bearer's receive side: one link per peer (source address, UDP
 * source port), made when a peer's first datagram arrives, in a table of
 * npeers links; a datagram from a peer past the table is dropped
 * (TIPC_NO_LINK) and counted (peers_full). Every link delivers data to the
 * one sink given at creation. Not thread-safe: one per worker.
 */
struct rxp_tipc_bearer;
/* NULL with errno (EINVAL: npeers 0 or above 4096). */
struct rxp_tipc_bearer *rxp_tipc_bearer_create(struct rxp_pktpool *pp, unsigned npeers,
					       rxp_tipc_sink_fn sink, void *arg);
/* Resets every link (partial messages dropped as TIPC_LINK_RESET), frees. */
void rxp_tipc_bearer_destroy(struct rxp_tipc_bearer *b);
/* A UDP datagram for the TIPC port, as rxpath's UDP delivery hands it
 * (pkt->data at the TIPC header; the IP and UDP headers linear at
 * network_off and transport_off): to its peer's link. An rxp_udp_handler_fn
 * (arg: the bearer). Consumes pkt. */
void rxp_tipc_bearer_rcv(void *bearer, struct rxp_pkt *pkt);
/* The links' counters summed into *links; datagrams refused for a full
 * table in *peers_full; live links in *npeers. Any may be NULL. */
void rxp_tipc_bearer_stats(const struct rxp_tipc_bearer *b, struct rxp_tipc_link_stats *links,
			   uint64_t *peers_full, unsigned *npeers);

struct rxp_ipid_table;

/* Where a sender's datagrams go. Each datagram's IPv4 ID comes from ids
 * (rxpath/ipid.h) for (saddr, daddr, UDP), DF set or not: Linux's UDP
 * tunnels (iptunnel_xmit) take theirs from the hashed generator too, not
 * the 0 of an unconnected socket's atomic datagram. */
struct rxp_tipc_udp_peer {
	uint32_t saddr, daddr; /* IPv4, network order */
	uint16_t sport, dport; /* host order; 0 picks RXP_TIPC_UDP_PORT */
	uint32_t mtu; /* IP MTU of the path (>= 128) */
	struct rxp_ipid_table *ids; /* required; not owned */
};
/* The TIPC MTU for a peer: IP MTU minus IPv4 and UDP headers. */
uint32_t rxp_tipc_udp_tipc_mtu(const struct rxp_tipc_udp_peer *peer);

/* Build IPv4/UDP datagrams (pkt->data at the IPv4 header, IPv4 and UDP
 * headers linear, checksums set; data may sit in page fragments)
 * carrying msgs for peer: consecutive messages that fit are bundled (a lone
 * message is sent unbundled), messages larger than the TIPC MTU are
 * fragmented. Consumes every packet of msgs (the queue is left empty).
 * Returns the number of datagrams appended to out, or -errno (the
 * messages not yet sent are dropped and counted; -EINVAL without
 * peer->ids or with an MTU too small). */
int rxp_tipc_udp_build(struct rxp_pktpool *pp, struct rxp_tipc_udp_peer *peer,
		       struct rxp_pkt_queue *msgs, struct rxp_pkt_queue *out);

RXP_END_DECLS

#endif
