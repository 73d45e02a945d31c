/*
 * rxp_dev: one interface for every packet source and sink.
 *
 * A device has nqueues receive queues. rx_burst(q) hands the caller up to n
 * packets from queue q (the caller owns them); tx_burst(q) consumes every
 * packet it is given (sent, or dropped with a counted reason). Devices:
 *   sim      the software NIC playing the hardware side of rxp_rxring
 *            (include/rxpath/sim.h): generator or pcap replay traffic;
 *   pcap     a pcap/pcapng file read with libpcap (rxp_pcap_open);
 *   afpacket TPACKET_V3 rings with PACKET_FANOUT_HASH, one socket per queue;
 *   afxdp    AF_XDP sockets (libxdp), UMEM frames are page-pool pages.
 * Wrappers take any device and are devices themselves, so they compose the
 * same way with each (smoltcp's phy model):
 *   fault    loss, duplication and reordering within a window;
 *   capture  writes every received (and sent) packet to a pcap file.
 * Closing a wrapper closes what it wraps.
 *
 * Packets from Ethernet devices start at the Ethernet header; from raw-IP
 * captures, at the IP header. Either way pkt->protocol is the ethertype
 * (0x0800 / 0x86dd, host order) and pkt->network_off the L3 header's offset
 * from pkt->head; pkt->hash is the RSS hash of the L3 addresses
 * (rxp_rss_hash) and pkt->queue the queue.
 *
 * Threads: each queue is polled by one thread at a time; different queues
 * may be polled from different threads at once. The thread polling a ring
 * device's queue becomes the owner of that queue's page pool.
 */
#ifndef RXPATH_DEV_H
#define RXPATH_DEV_H

#include <stdbool.h>
#include <stdint.h>

#include "rxpath/compiler.h"
#include "rxpath/pkt.h"
#include "rxpath/pktpool.h"
#include "rxpath/ring.h"

RXP_BEGIN_DECLS

struct rxp_dev;
struct rxp_src; /* a frame source (rxpath/sim.h) */

struct rxp_dev_stats {
	uint64_t rx_packets, rx_bytes;
	/* frames the hardware side had for the host (sim: taken from its
	 * source for its queues); each became a packet or a counted drop */
	uint64_t rx_offered;
	uint64_t rx_dropped; /* frames lost inside the device, all reasons */
	uint64_t rx_no_buffer; /* no posted buffer / kernel ring drops */
	uint64_t tx_packets, tx_bytes, tx_dropped;
	uint64_t xdp_pass, xdp_drop, xdp_tx, xdp_redirect, xdp_aborted;
	uint64_t zero_len_descs, too_many_frags;
	/* page pools of ring devices, summed over queues; outstanding
	 * includes the pages posted in the rings themselves */
	uint64_t pp_fast, pp_slow, pp_recycled, pp_waived, pp_released, pp_outstanding;
	/* capture files: the first and last record's time (the span the
	 * capture covers; 0 when none was read) */
	uint64_t first_tstamp_ns, last_tstamp_ns;
	/* wrappers */
	uint64_t fault_lost, fault_duplicated, fault_reordered;
	uint64_t captured;
	/* capture wrapper writing raw IP over a device that took link
	 * headers off or has several link types (rxp_dev_strips_link): frames
	 * not written because they are not IP (ARP from a cooked capture) */
	uint64_t capture_not_ip;
	/* capture files: 1 when reading stopped at a cut or corrupt record
	 * (what came before it was delivered; the device then ends) */
	uint64_t rx_input_cut;
	/* capture files: frames the capturing host sent (rxp_decap_outgoing:
	 * a cooked capture's outgoing copies), skipped, as a live AF_PACKET
	 * device does not receive them; not in rx_packets or rx_dropped */
	uint64_t rx_outgoing;
};

/* How a capture of a device's frames is written (rxp_capture_wrap). */
enum rxp_dev_link {
	RXP_DEV_LINK_ETH = 0, /* Ethernet frames, whole */
	RXP_DEV_LINK_RAW, /* raw IP records, copied as they are */
	/* link headers taken off, or frames of several link types: a raw-IP
	 * capture of each IP packet, from its network header; anything else
	 * is not written (capture_not_ip) */
	RXP_DEV_LINK_IP,
};

struct rxp_dev_ops {
	const char *kind;
	/* >= 0: packets stored; -ENODATA: this queue's input is finished
	 * (file or generator done, nothing left); other -errno: error. */
	int (*rx_burst)(struct rxp_dev *dev, unsigned q, struct rxp_pkt **pkts, unsigned n);
	/* Consumes every packet; returns how many were sent. */
	unsigned (*tx_burst)(struct rxp_dev *dev, unsigned q, struct rxp_pkt **pkts, unsigned n);
	/* Optional: block up to timeout_ms for input on q (0: ready or not). */
	int (*wait)(struct rxp_dev *dev, unsigned q, int timeout_ms);
	/* Optional: a file descriptor that poll() reports readable (POLLIN)
	 * when q may have input, for a caller that sleeps on several things at
	 * once (a worker: its queues and its inbox); -1 if there is none. */
	int (*poll_fd)(struct rxp_dev *dev, unsigned q);
	/* Optional (ring devices): descriptor faults of the hardware side,
	 * set by the fault wrapper (rxp_fault_config.zero_len). */
	int (*set_rx_faults)(struct rxp_dev *dev, double zero_len_rate, uint64_t seed);
	/* Optional: install an XDP program on every queue's ring. */
	int (*set_xdp)(struct rxp_dev *dev, rxp_xdp_prog_fn prog, void *ctx);
	void (*get_stats)(struct rxp_dev *dev, struct rxp_dev_stats *st);
	/* Returns pages/buffers still outstanding after closing (0: clean). */
	uint64_t (*close)(struct rxp_dev *dev);
	/* Optional (capture files): how a capture of its frames is written;
	 * none: Ethernet. */
	enum rxp_dev_link (*link)(const struct rxp_dev *dev);
};

struct rxp_dev {
	const struct rxp_dev_ops *ops;
	char name[64];
	unsigned nqueues;
	struct rxp_pktpool *pp; /* where received packets come from */
	struct rxp_dev *inner; /* wrappers: the device wrapped (owned) */
	void *priv;
};

static inline int rxp_dev_rx_burst(struct rxp_dev *d, unsigned q, struct rxp_pkt **pkts, unsigned n)
{
	return d->ops->rx_burst(d, q, pkts, n);
}
/* Consumes every packet in pkts[0..n). */
static inline unsigned rxp_dev_tx_burst(struct rxp_dev *d, unsigned q, struct rxp_pkt **pkts,
					unsigned n)
{
	return d->ops->tx_burst(d, q, pkts, n);
}
int rxp_dev_wait(struct rxp_dev *d, unsigned q, int timeout_ms);
/* The fd to poll for q's input (through wrappers), or -1: a device without
 * one (sim, pcap) always has input or has finished. */
int rxp_dev_poll_fd(struct rxp_dev *d, unsigned q);
/* -EOPNOTSUPP for devices without rings. */
int rxp_dev_set_xdp(struct rxp_dev *d, rxp_xdp_prog_fn prog, void *ctx);
/* Zeroes st, then fills it (wrappers add their counters to the inner's). */
void rxp_dev_get_stats(struct rxp_dev *d, struct rxp_dev_stats *st);
/* Closes d and everything it wraps. NULL is a no-op. Free all packets
 * received from a ring device (sim, afxdp) before closing it. Returns the
 * pages (UMEM frames) still outstanding afterwards: 0 unless something
 * leaked or packets are still alive. */
uint64_t rxp_dev_close(struct rxp_dev *d);

/* The RSS hash of a frame's L3 source and destination addresses (not the
 * ports: fragments carry none), so every fragment of a datagram lands on one
 * queue. l2 = true: frame starts with Ethernet (VLAN tags skipped); false:
 * with the IP header. Non-IP frames hash to 0. */
uint32_t rxp_rss_hash(const uint8_t *frame, uint32_t len, bool l2);
/* Set pkt->protocol, network_off and hash from its bytes (devices that copy
 * frames into packets use it). l2 as above. Does not consume pkt. */
void rxp_dev_classify(struct rxp_pkt *pkt, bool l2);

/* A device (and wrappers) from a spec string, e.g.
 *   "sim:queues=2,count=100000,min=16,max=8000,v6=30,mtu=1500,loss=0.01,zl=0.01,seed=1"
 *   "sim:replay=in.pcap,queues=4"   "pcap:in.pcapng"
 *   "afpacket:eth0,queues=2"        "afxdp:veth0,queues=1"
 *   "capture:out.pcap+fault:loss=0.01,dup=0.01,reorder=8,zl=0.01,seed=3+sim:count=1000"
 * Wrappers come first, separated by '+', outermost first (src/dev/open.c
 * lists every key). NULL with errno set (EINVAL for a bad spec, with the
 * reason logged at RXP_LOG_ERR). */
struct rxp_dev *rxp_dev_open(const char *spec, struct rxp_pktpool *pp);

/* Frame sources an application offers to "sim:src=NAME" (the sim NIC then
 * replays NAME's frames, one copy per queue, instead of its generator). */
struct rxp_dev_source {
	const char *name;
	struct rxp_src *(*open)(void *arg); /* called once per queue */
	void *arg;
};
/* rxp_dev_open with the application's sources (n of them). */
struct rxp_dev *rxp_dev_open_with(const char *spec, struct rxp_pktpool *pp,
				  const struct rxp_dev_source *src, unsigned n);

/* ---- wrappers --------------------------------------------------------- */

struct rxp_fault_config {
	uint64_t seed;
	double loss; /* probability a received packet is dropped */
	/* probability of a zero-length descriptor before each buffer of a
	 * frame, written by the hardware side of the ring device under the
	 * wrapper (sim); EOPNOTSUPP where there is none */
	double zero_len;
	double duplicate; /* probability it is delivered twice (a copy) */
	unsigned reorder_window; /* hold up to this many (<= 64) and release
				  * in random order; 0 or 1: keep order */
	double tx_loss; /* probability a sent packet is dropped */
};
/* Wraps inner (taking ownership, also on failure: then inner is closed).
 * NULL with errno EINVAL for a probability outside [0, 1] (zero_len: [0, 1))
 * or a window over 64, EOPNOTSUPP for zero_len over a device without a
 * ring. Frame faults live here and only here: loss, duplication and
 * reordering of received packets, zero-length descriptors in the ring
 * below, loss of sent packets. */
struct rxp_dev *rxp_fault_wrap(struct rxp_dev *inner, const struct rxp_fault_config *cfg);

#define RXP_CAPTURE_RX 1
#define RXP_CAPTURE_TX 2
/* Writes received (and/or sent) packets to a pcap file; Ethernet link type
 * unless the wrapped device is raw-IP. Takes ownership of inner (closed on
 * failure). */
struct rxp_dev *rxp_capture_wrap(struct rxp_dev *inner, const char *path, unsigned what);

/* ---- pcap files ---------------------------------------------------------- */

/* Open a pcap or pcapng file as a one-queue device (Ethernet, raw IPv4/IPv6
 * and the other link types rxp_decap_link knows, whose headers it takes
 * off). NULL with errno set. */
struct rxp_dev *rxp_pcap_open(const char *path, struct rxp_pktpool *pp);
/* true if a capture of the device's frames (through wrappers) is raw IP:
 * its link (the ops' link) is not Ethernet. */
bool rxp_dev_is_raw_ip(const struct rxp_dev *d);
/* The link a capture of frames of one link type (a LINKTYPE_ or DLT_
 * value the pcap device reads) has: Ethernet, raw IP, or IP packets whose
 * link headers were taken off. */
enum rxp_dev_link rxp_dev_link_of(uint32_t linktype);
/* A captured frame as a packet from pp, as the pcap device gives a frame
 * of its file: linktype is the frame's (a LINKTYPE_ or DLT_ value), caplen
 * bytes at frame. Ethernet is kept whole and classified (where the
 * classifier finds no IP, rxp_decap_link looks behind more VLAN tags, MPLS
 * labels or a PPPoE session: network_off at the IP packet it finds; else
 * not IP); raw IP is kept as
 * it is; another link type rxp_decap_link knows has its headers taken off
 * (rxp_decap_payload: a frame that is not IP keeps the EtherType they say,
 * else protocol 0). NULL when there is no packet to give, with *why:
 * pkt_too_small (an empty frame), unsupported_linktype, l2_bad_header, or
 * pkt_too_big (no buffer that large); counting it is the caller's. The
 * timestamp is the caller's to set. */
struct rxp_pkt *rxp_dev_frame_pkt(struct rxp_pktpool *pp, uint32_t linktype, const uint8_t *frame,
				  uint32_t caplen, enum rxp_drop_reason *why);
/* true if the device's link (through wrappers) is RXP_DEV_LINK_IP: it
 * takes link headers off its frames, or gives frames of several link
 * types; a frame that is not IP then has no place in a raw-IP capture. */
bool rxp_dev_strips_link(const struct rxp_dev *d);

struct rxp_pcap_writer;
/* raw_ip: LINKTYPE_RAW instead of Ethernet. NULL with errno set. */
struct rxp_pcap_writer *rxp_pcap_writer_open(const char *path, bool raw_ip);
/* Does not consume pkt. 0 or -errno. */
int rxp_pcap_writer_write_pkt(struct rxp_pcap_writer *w, const struct rxp_pkt *pkt);
/* The same from pkt's byte off on (its IP header, say): -EINVAL when off
 * is past its end. */
int rxp_pcap_writer_write_from(struct rxp_pcap_writer *w, const struct rxp_pkt *pkt, uint32_t off);
int rxp_pcap_writer_write(struct rxp_pcap_writer *w, const uint8_t *data, uint32_t len,
			  uint64_t tstamp_ns);
uint64_t rxp_pcap_writer_count(const struct rxp_pcap_writer *w);
int rxp_pcap_writer_close(struct rxp_pcap_writer *w);

/* ---- kernel sockets ---------------------------------------------------- */

struct rxp_afpacket_config {
	const char *ifname;
	unsigned nqueues; /* sockets in the fanout group (default 1) */
	uint32_t block_size; /* TPACKET_V3 block (default 1 MiB) */
	uint32_t nblocks; /* per socket (default 8) */
	uint16_t fanout_id; /* 0: derived from the pid */
};
struct rxp_dev *rxp_afpacket_open(const struct rxp_afpacket_config *cfg, struct rxp_pktpool *pp);

struct rxp_afxdp_config {
	const char *ifname;
	unsigned nqueues; /* queue ids 0..n-1 (default 1) */
	uint32_t ring_size; /* rx/fill/tx/completion (default 2048) */
	uint32_t n_frames; /* UMEM frames per queue (default 4096) */
	bool zero_copy; /* default: copy mode */
};
struct rxp_dev *rxp_afxdp_open(const struct rxp_afxdp_config *cfg, struct rxp_pktpool *pp);

RXP_END_DECLS

#endif
