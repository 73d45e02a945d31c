/*
 * struct rxp_pkt: rxpath's sk_buff.
 *
 * Metadata (this struct) is separate from data. A packet of rxp_pkt_alloc
 * with a small head buffer has its metadata in that buffer's pool slot,
 * [page header | struct rxp_pkt | bytes], one object as a DPDK mbuf is
 * (RXP_PKT_F_EMBED); the others (built around a driver's buffer, clones,
 * large heads) take it from the packet pool's metadata pool. The linear
 * part lives in a head buffer, an rxp_page: head <= data <= tail <= end, with
 * headroom before data (default 128 bytes) and tailroom after tail. Beyond the
 * linear part a packet may hold up to RXP_MAX_FRAGS page fragments and a
 * frag_list chain of further packets, in that order:
 *
 *   bytes = linear [data, tail) ++ frags[0..nr_frags) ++ frag_list ...
 *
 *   len      = all bytes;  data_len = bytes outside the linear part
 *   truesize = memory charged to this packet (metadata, head buffer, frags,
 *              frag_list members); reassembly memory caps use it.
 *
 * Ownership (docs/design.md rule 1): a function that takes a packet either
 * consumes it on every path or does not take it at all; its comment says
 * "consumes pkt". Packets leave through rxp_pkt_consume() (normal end of
 * life) or rxp_pkt_drop() (counted by reason). Clones share the head buffer
 * (refcounted); a cloned packet's head must not be written until
 * rxp_pkt_unshare().
 *
 * A packet is freed to the pool of the thread that allocated it: on that
 * thread into its cache, elsewhere through the owner's deferred list, and
 * only after its head, page and frag_list references are released.
 */
#ifndef RXPATH_PKT_H
#define RXPATH_PKT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rxpath/compiler.h"
#include "rxpath/drop.h"
#include "rxpath/page.h"

RXP_BEGIN_DECLS

#define RXP_MAX_FRAGS 17
#define RXP_PKT_CB_SIZE 48
#define RXP_HEADROOM_DEFAULT 128

struct rxp_pktpool;

struct rxp_frag {
	struct rxp_page *page; /* one reference held by the packet */
	uint32_t off; /* from page->addr */
	uint32_t size;
};

enum {
	RXP_PKT_F_CLONED = 1 << 0, /* head shared with a clone: copy before writing */
	RXP_PKT_F_RINGBUF = 1 << 1, /* built around a driver's receive buffer
				     * (rxp_pkt_build): holding it long starves
				     * the ring, so layers that queue copy out */
	/* Set by the packet pool, for it alone: the metadata lives in its
	 * head buffer's slot (EMBED), and, once the head moved to another
	 * buffer, the packet keeps a reference on that slot (HOMEREF). */
	RXP_PKT_F_EMBED = 1 << 2,
	RXP_PKT_F_HOMEREF = 1 << 3,
};

/* How far before an embedded packet its slot's page header lies: the head
 * buffer it was made with, which is still its head while the packet is at
 * home, (flags & (EMBED | HOMEREF)) == EMBED. */
#define RXP_PKT_HOME_OFF RXP_ALIGN_UP(sizeof(struct rxp_page), (size_t)RXP_CACHELINE)

struct rxp_pkt {
	/* First cache line: what the hot path reads, and all that freeing a
	 * linear packet or moving its bytes into another packet (coalescing,
	 * as reassembly does per fragment) needs, so that a layer holding
	 * packets reads one line of each when it finishes with them. */
	struct rxp_pkt *next; /* for the owning layer's queues */
	uint8_t *data;
	uint8_t *tail;
	uint32_t len;
	uint32_t data_len;
	uint8_t nr_frags;
	uint8_t flags;
	uint16_t owner; /* thread id that allocated the metadata */
	uint32_t truesize;
	uint32_t hash; /* RSS / steering hash */
	/* data's offset in head_page is (uint32_t)(uintptr_t)data + page_bias
	 * (mod 2^32): the head's offset there less the low bits of head, so
	 * that neither head nor the page header is read to find it */
	uint32_t page_bias;
	struct rxp_page *head_page; /* one reference held by the packet */
	struct rxp_pktpool *pool;
	/* Second line. */
	uint8_t *head;
	uint8_t *end;
	struct rxp_pkt *frag_list; /* members are never empty */
	struct rxp_pkt *frag_tail;
	uint64_t tstamp_ns; /* receive time (wire time for pcap input) */
	uint16_t network_off; /* from head; 0xffff = unset */
	uint16_t transport_off; /* from head; 0xffff = unset */
	uint16_t queue; /* receive queue */
	uint16_t protocol; /* ethertype, host order; 0 if unknown */
	/* The owning layer's scratch. Not cleared when a packet is made (nor
	 * frags[] past nr_frags): a layer writes the cb bytes it reads. */
	uint8_t cb[RXP_PKT_CB_SIZE] __attribute__((aligned(8)));
	struct rxp_frag frags[RXP_MAX_FRAGS];
};

/* The metadata size charged to truesize per packet. */
#define RXP_PKT_META_TRUESIZE ((uint32_t)sizeof(struct rxp_pkt))

/* A packet with an empty linear part that can hold at least size bytes after
 * the default headroom; NULL (counted alloc_fail) when the pool is empty or
 * size exceeds the largest buffer class. */
struct rxp_pkt *rxp_pkt_alloc_at(struct rxp_pktpool *pp, uint32_t size, const char *file, int line);
#define rxp_pkt_alloc(pp, size) rxp_pkt_alloc_at((pp), (size), __FILE__, __LINE__)

/* A linear packet holding a copy of len bytes at data (after the pool's
 * headroom, so layers may push headers): data is at the first byte,
 * network_off and transport_off unset, tstamp_ns 0. NULL with errno
 * ENOMEM when the pool is empty or len exceeds its largest buffer (counted
 * alloc_fail), EINVAL without a pool. The caller owns the packet. */
struct rxp_pkt *rxp_pkt_from_bytes_at(struct rxp_pktpool *pp, const void *data, uint32_t len,
				      const char *file, int line);
#define rxp_pkt_from_bytes(pp, data, len) \
	rxp_pkt_from_bytes_at((pp), (data), (len), __FILE__, __LINE__)

/* Build a packet around an existing buffer (what a driver does with a
 * received buffer): the head is [page->addr + buf_off, + buf_size), data at
 * data_off within it, len bytes. Consumes one reference on page, also on
 * failure: NULL with errno EINVAL for a head outside the page or data
 * outside the head (counted rx_bad_desc), ENOMEM when no metadata is left
 * (counted nomem). */
struct rxp_pkt *rxp_pkt_build(struct rxp_pktpool *pp, struct rxp_page *page, uint32_t buf_off,
			      uint32_t buf_size, uint32_t data_off, uint32_t len);

/* rxp_pkt_build plus one page fragment, in one step: the linear part as
 * rxp_pkt_build's (not marked RXP_PKT_F_RINGBUF: the caller's own buffer),
 * then bytes [off, off + size) of pg charged as size bytes of truesize.
 * What a sender builds per fragment: its header in a slice of a head
 * buffer, its data a piece of the message. Consumes one reference on page
 * and one on pg, also on failure (NULL: bad ranges counted rx_bad_desc, no
 * metadata counted nomem). */
struct rxp_pkt *rxp_pkt_build_frag(struct rxp_pktpool *pp, struct rxp_page *page, uint32_t buf_off,
				   uint32_t buf_size, uint32_t data_off, uint32_t len,
				   struct rxp_page *pg, uint32_t off, uint32_t size);

/* End of life, not a drop (delivered, merged). Consumes pkt. NULL is a no-op. */
void rxp_pkt_consume(struct rxp_pkt *pkt);
/* Discard and count the reason. Consumes pkt. NULL is a no-op. */
void rxp_pkt_drop(struct rxp_pkt *pkt, enum rxp_drop_reason reason);

static inline uint32_t rxp_pkt_headlen(const struct rxp_pkt *p)
{
	return (uint32_t)(p->tail - p->data);
}
/* Where data sits in head_page (from head_page->addr), without reading the
 * page header or head: what a page frag of the linear part starts at. */
static inline uint32_t rxp_pkt_data_page_off(const struct rxp_pkt *p)
{
	return (uint32_t)(uintptr_t)p->data + p->page_bias;
}
static inline uint32_t rxp_pkt_headroom(const struct rxp_pkt *p)
{
	return (uint32_t)(p->data - p->head);
}
static inline uint32_t rxp_pkt_tailroom(const struct rxp_pkt *p)
{
	/* Only a linear packet can grow its tail. */
	return p->data_len ? 0 : (uint32_t)(p->end - p->tail);
}
static inline bool rxp_pkt_is_linear(const struct rxp_pkt *p)
{
	return p->data_len == 0;
}
static inline bool rxp_pkt_cloned(const struct rxp_pkt *p)
{
	return p->flags & RXP_PKT_F_CLONED;
}

/* Whether p's metadata is in its head buffer's slot, that buffer still its
 * head: its page header is then RXP_PKT_HOME_OFF bytes before p. */
static inline bool rxp_pkt_at_home(const struct rxp_pkt *p)
{
	return (p->flags & (RXP_PKT_F_EMBED | RXP_PKT_F_HOMEREF)) == RXP_PKT_F_EMBED;
}

/* Empty packet only: move data and tail len bytes on. */
void rxp_pkt_reserve(struct rxp_pkt *pkt, uint32_t len);
/* Add len bytes at the tail of a linear packet; NULL without tailroom. */
uint8_t *rxp_pkt_put(struct rxp_pkt *pkt, uint32_t len);
/* Prepend len bytes; NULL without headroom. Returns the new data. */
uint8_t *rxp_pkt_push(struct rxp_pkt *pkt, uint32_t len);
/* Remove len bytes from the front of the linear part; NULL if the linear
 * part is shorter (see rxp_pkt_may_pull). Returns the new data. Inline:
 * every layer pulls its header off every packet. */
static inline uint8_t *rxp_pkt_pull(struct rxp_pkt *pkt, uint32_t len)
{
	if (__builtin_expect(len > rxp_pkt_headlen(pkt), 0))
		return NULL;
	pkt->data += len;
	pkt->len -= len;
	return pkt->data;
}
/* Make the first len bytes linear, copying from frags/frag_list into
 * tailroom (the head is reallocated if needed; an empty linear part of a
 * private head with no header offset set may instead move back into its
 * headroom, keeping 64 bytes of it). false if len > pkt->len or no
 * memory. */
bool rxp_pkt_may_pull(struct rxp_pkt *pkt, uint32_t len);
/* Cut the packet to len bytes (len <= pkt->len), releasing trailing frags
 * and frag_list members. -EINVAL if len > pkt->len. */
int rxp_pkt_trim(struct rxp_pkt *pkt, uint32_t len);
/* Make all data linear (reallocating the head from a larger class if
 * needed). 0, or -ENOMEM with the packet unchanged. */
int rxp_pkt_linearize(struct rxp_pkt *pkt);
/* Copy len bytes from offset off, across linear, frags and frag_list.
 * 0, or -EINVAL if the range is out of bounds. */
int rxp_pkt_copy_bits(const struct rxp_pkt *pkt, uint32_t off, void *to, uint32_t len);
/* Pointer to len bytes at off: into the packet if contiguous there, else
 * copied into buf. NULL if out of bounds. */
const void *rxp_pkt_header_pointer(const struct rxp_pkt *pkt, uint32_t off, uint32_t len,
				   void *buf);

/* Ones'-complement sum (unfolded, as rxp_csum_partial) of len bytes at off,
 * across linear, frags and frag_list; segment boundaries at odd offsets are
 * handled. -1 (all ones, never a partial sum's value here) if out of range. */
int64_t rxp_pkt_csum(const struct rxp_pkt *pkt, uint32_t off, uint32_t len, uint32_t sum);

/* A new packet sharing pkt's data (head and page references taken, frag_list
 * members cloned). Both are marked cloned. NULL when out of metadata. */
struct rxp_pkt *rxp_pkt_clone(struct rxp_pkt *pkt);
/* A private, linear copy of all of pkt's bytes, same headroom. NULL on
 * failure. Does not consume pkt. */
struct rxp_pkt *rxp_pkt_copy(const struct rxp_pkt *pkt);
/* Returns a packet whose head may be written: pkt itself if not cloned,
 * else a private copy (pkt consumed). NULL if the copy failed, in which case
 * pkt was dropped (RXP_DROP_UNSHARE_FAIL). Consumes pkt. */
struct rxp_pkt *rxp_pkt_unshare(struct rxp_pkt *pkt);

/* Attach a page fragment at the end (the packet must have no frag_list).
 * Takes over one reference on page; on -E2BIG (already RXP_MAX_FRAGS) or
 * -EINVAL (empty fragment, out of the page, after a frag_list) the
 * reference stays with the caller. truesize is what the
 * fragment's buffer costs in memory. */
int rxp_pkt_add_frag(struct rxp_pkt *pkt, struct rxp_page *page, uint32_t off, uint32_t size,
		     uint32_t truesize);

enum rxp_coalesce {
	RXP_COALESCE_COPIED, /* from's bytes copied into to's tailroom */
	RXP_COALESCE_STOLEN, /* from's head and frags became to's frags */
	RXP_COALESCE_CHAINED, /* from appended to to's frag_list */
};
/* Append from's bytes to to without copying where possible: a small linear
 * part is copied into tailroom, otherwise from's head and page frags become
 * frags of to (references move, no byte copied); when neither fits, from is
 * chained on to's frag_list (and later packets coalesce into that member).
 * A stolen page frag that continues the previous frag on the same page
 * (the next slice of one buffer) extends it instead of taking a slot.
 * Consumes from on every path; the result only says how. to must not be
 * cloned (unshare it first). */
enum rxp_coalesce rxp_pkt_try_coalesce(struct rxp_pkt *to, struct rxp_pkt *from);
/*
 * Page references to drop later, in one atomic subtraction per run of the
 * same page: what a reassembler collects while it joins the fragments of
 * one message, whose heads are usually slices of one buffer. The batch
 * holds the references it counts; rxp_page_batch_flush() drops them and
 * must run before the batch is forgotten (the owner's reset and teardown
 * paths), else the pages leak.
 */
struct rxp_page_batch {
	struct rxp_page *page[2]; /* two: fragments' heads and their data pages */
	uint32_t n[2];
};
void rxp_page_batch_flush(struct rxp_page_batch *pb);
/* Drop the references held in slot 1 and clear it (rxp_page_batch_add then
 * moves slot 0 there). */
void rxp_page_batch_evict_(struct rxp_page_batch *pb);
/* Take over one reference on pg. */
static inline void rxp_page_batch_add(struct rxp_page_batch *pb, struct rxp_page *pg)
{
	if (pb->page[0] == pg) {
		pb->n[0]++;
		return;
	}
	if (pb->page[1] == pg) {
		pb->n[1]++;
		return;
	}
	if (pb->page[1])
		rxp_page_batch_evict_(pb);
	pb->page[1] = pb->page[0];
	pb->n[1] = pb->n[0];
	pb->page[0] = pg;
	pb->n[0] = 1;
}
/* rxp_pkt_try_coalesce, except that the page references from's freed head
 * would drop are handed to pb instead. Consumes from. */
enum rxp_coalesce rxp_pkt_try_coalesce_batch(struct rxp_pkt *to, struct rxp_pkt *from,
					     struct rxp_page_batch *pb);

/* rxp_pkt_try_coalesce_batch() of each packet of list (linked through
 * next, NULL-terminated) in turn, with the same outcome; the metadata of
 * the linear packets whose data become frags goes back to its pool in one
 * batch. What a reassembler does to the fragments of a complete message.
 * Consumes every packet of list. */
void rxp_pkt_coalesce_list(struct rxp_pkt *to, struct rxp_pkt *list, struct rxp_page_batch *pb);

/* A reassembler's runs in one walk: tails[0..nruns) are the last packets
 * of nruns runs in ascending order, each run linked backwards through next
 * (its first packet's next is NULL), n packets in all, and to is the first
 * packet of run 0. When every other packet would become a frag of to by
 * rxp_pkt_coalesce_list's leading loop (linear, of to's pool, not the next
 * slice of the one before it, not copied into to's tailroom) and to is
 * linear, has no frag, frag_list or clone and room for them all, they
 * become its frags, their metadata goes back to the pool, and true is
 * returned: the outcome rxp_pkt_coalesce_list would give with the runs as
 * one forward list. Otherwise false: no packet, link or count has changed
 * (to's frag slots past nr_frags may have been written). */
bool rxp_pkt_coalesce_runs(struct rxp_pkt *to, struct rxp_pkt *const *tails, unsigned nruns,
			   unsigned n);

/* The same outcome from what a reassembler noted of each packet when it
 * took it, without reading them: pkts[0..n) follow to in this order, each
 * linear (no frags), of to's pool and at home (rxp_pkt_at_home), its data
 * size[k] bytes at offset doff[k] of its head buffer; len is the sum of
 * size[] and ts of the packets' truesize. When to is linear, has no frag,
 * frag_list or clone, room for n frags and not for size[0] in its tailroom
 * (which rxp_pkt_coalesce_list would copy into), their head buffers become
 * its frags and true is returned; their metadata stays in those buffers.
 * Otherwise false, and nothing has changed. RXP_DEBUG builds check each
 * note against its packet. */
bool rxp_pkt_coalesce_homes(struct rxp_pkt *to, struct rxp_pkt *const *pkts, const uint32_t *doff,
			    const uint32_t *size, unsigned n, uint32_t len, uint32_t ts);

/* Append from to to's frag_list as is, keeping its boundaries (forwarding);
 * an empty from is consumed instead (frag_list members are never empty).
 * Consumes from. */
void rxp_pkt_chain(struct rxp_pkt *to, struct rxp_pkt *from);

/* A simple FIFO of packets linked through pkt->next. */
struct rxp_pkt_queue {
	struct rxp_pkt *head, *tail;
	uint32_t len;
};
static inline void rxp_pkt_queue_init(struct rxp_pkt_queue *q)
{
	q->head = q->tail = NULL;
	q->len = 0;
}
/* Consumes pkt (the queue owns it). */
static inline void rxp_pkt_enqueue(struct rxp_pkt_queue *q, struct rxp_pkt *pkt)
{
	pkt->next = NULL;
	if (q->tail)
		q->tail->next = pkt;
	else
		q->head = pkt;
	q->tail = pkt;
	q->len++;
}
/* Move everything queued on from to the end of to, in order (from ends up
 * empty). */
static inline void rxp_pkt_queue_splice(struct rxp_pkt_queue *to, struct rxp_pkt_queue *from)
{
	if (!from->head)
		return;
	if (to->tail)
		to->tail->next = from->head;
	else
		to->head = from->head;
	to->tail = from->tail;
	to->len += from->len;
	rxp_pkt_queue_init(from);
}
static inline struct rxp_pkt *rxp_pkt_dequeue(struct rxp_pkt_queue *q)
{
	struct rxp_pkt *p = q->head;

	if (p) {
		q->head = p->next;
		if (!q->head)
			q->tail = NULL;
		p->next = NULL;
		q->len--;
	}
	return p;
}
/* Drop everything queued with one reason. */
void rxp_pkt_queue_purge(struct rxp_pkt_queue *q, enum rxp_drop_reason reason);

RXP_END_DECLS

#endif
