/*
 * Packet operations (include/rxpath/pkt.h); coalescing is in
 * pkt_coalesce.c.
 *
 * Invariants kept by every function here:
 *   - len == headlen + data_len, and data_len == sum(frags) + sum(frag_list lens);
 *   - frag_list members are never empty, so data_len == 0 means no
 *     frag_list (rxp_pkt_chain consumes an empty packet; trim and pulls
 *     free members they empty);
 *   - head <= data <= tail <= end;
 *   - a packet holds exactly one reference on head_page (when set: a
 *     packet whose head was stolen holds none) and on each frags[i].page;
 *     frag_list members are owned by the packet;
 *   - a cloned packet's head bytes are never written here (may_pull and
 *     linearize move to a private head first);
 *   - an embedded packet (RXP_PKT_F_EMBED: its metadata inside its small
 *     head buffer's pool slot, its "home") is never read after the last
 *     reference on its home goes. While the head is home, the head
 *     reference holds it; a head moved elsewhere leaves that reference
 *     with the packet (HOMEREF); a head stolen by another packet takes it
 *     along, so the shell may be read until it is freed, and its free
 *     gives nothing back (pkt_shell_free).
 */
#include <errno.h>
#include <string.h>

#include "rxpath/compiler.h"
#include "rxpath/pkt.h"
#include "rxpath/wire.h"
#include "buf/pkt_internal.h"

#define OFF_UNSET 0xffff
/* What rxp_pkt_may_pull leaves in front of data when it reuses headroom:
 * an Ethernet, IPv6 and UDP header (14 + 40 + 8) rounded up. */
#define PULL_KEEP_HEADROOM 64u

/* Freeing reads this thread's id once per packet and hands it down
 * (pkt_page_put_many_tid puts a packet pool's head buffer back inline). */
static void pkt_release_data(struct rxp_pkt *pkt, unsigned tid);
static inline void pkt_release_frags(struct rxp_pkt *pkt, unsigned tid);

/* An embedded packet: its data references go, then its home's (the head
 * reference while the head is home), which may free the slot holding pkt,
 * so everything is read first. */
static inline __attribute__((always_inline)) void pkt_free_embedded(struct rxp_pkt *pkt,
								    unsigned tid)
{
	struct rxp_page *head = pkt->head_page;
	bool homeref = pkt->flags & RXP_PKT_F_HOMEREF;

	pktpool_stat_add(tid, &pkt->pool->stats[tid].embed_free, 1);
	pkt_release_frags(pkt, tid);
	if (head)
		pkt_page_put_many_tid(head, 1, tid);
	if (homeref)
		pkt_page_put_many_tid(pkt_home(pkt), 1, tid);
}

static inline void pkt_free(struct rxp_pkt *pkt, unsigned tid)
{
	if (pkt->flags & RXP_PKT_F_EMBED) {
		pkt_free_embedded(pkt, tid);
		return;
	}
	pkt_release_data(pkt, tid);
	rxp_pool_put_tid_(pkt->pool->meta, pkt, tid);
}

static void frag_list_free(struct rxp_pkt *fl, unsigned tid)
{
	while (fl) {
		struct rxp_pkt *next = fl->next;

		pkt_free(fl, tid);
		fl = next;
	}
}

/* Drop the references of frags[0..n): a run of frags on one page (the
 * pieces of one message, a reassembled datagram's slices of one buffer)
 * costs one atomic subtraction instead of one per frag. */
static void frags_put(const struct rxp_frag *f, unsigned n, unsigned tid)
{
	unsigned i = 0;

	while (i < n) {
		struct rxp_page *pg = f[i].page;
		unsigned k = 1;

		while (i + k < n && f[i + k].page == pg)
			k++;
		pkt_page_put_many_tid(pg, k, tid);
		i += k;
	}
}

/* The references beyond the head: the frags' and the frag_list's. */
static inline void pkt_release_frags(struct rxp_pkt *pkt, unsigned tid)
{
	/* Read the fragment array only for multi-buffer packets (thread 002:
	 * touching it for every packet cost a cache miss). */
	if (rxp_unlikely(pkt->nr_frags || pkt->frag_list)) {
		frags_put(pkt->frags, pkt->nr_frags, tid);
		frag_list_free(pkt->frag_list, tid);
	}
}

static void pkt_release_data(struct rxp_pkt *pkt, unsigned tid)
{
	pkt_release_frags(pkt, tid);
	if (pkt->head_page)
		pkt_page_put_many_tid(pkt->head_page, 1, tid);
}

/*
 * Metadata straight from this thread's cache. Only what every packet reads
 * is initialised: the first line whole (zeroes but for owner and pool),
 * the frag_list links, the timestamp, the unset offsets, queue and
 * protocol. head, end, data, tail, head_page and page_bias are the
 * caller's to set; frags[] beyond nr_frags are never read; cb is the
 * owning layer's scratch and is not cleared (each layer writes the cb
 * fields it reads, as defrag does). Skipping the rest keeps a new packet to
 * two dirty cache lines instead of three.
 */
static inline void meta_init(struct rxp_pkt *pkt, struct rxp_pktpool *pp, unsigned tid)
{
	memset(pkt, 0, offsetof(struct rxp_pkt, head));
	pkt->owner = (uint16_t)tid;
	pkt->pool = pp;
	pkt->frag_list = NULL;
	pkt->frag_tail = NULL;
	pkt->tstamp_ns = 0;
	pkt->network_off = OFF_UNSET;
	pkt->transport_off = OFF_UNSET;
	pkt->queue = 0;
	pkt->protocol = 0;
}

static inline struct rxp_pkt *meta_get(struct rxp_pktpool *pp, const char *file, int line)
{
	struct rxp_pkt *pkt = rxp_pool_get_inline_(pp->meta, file, line);

	if (rxp_unlikely(!pkt))
		return NULL;
	meta_init(pkt, pp, rxp_thread_id());
	return pkt;
}

/* The head is [pg->addr + off, + size), data and tail at data_off in it. */
static inline void set_head_at(struct rxp_pkt *pkt, struct rxp_page *pg, uint8_t *head,
			       uint32_t off, uint32_t size, uint32_t data_off)
{
	pkt->head_page = pg;
	pkt->head = head;
	pkt->page_bias = off - (uint32_t)(uintptr_t)head;
	pkt->end = head + size;
	pkt->data = pkt->tail = head + data_off;
}

static void set_head(struct rxp_pkt *pkt, struct rxp_page *pg, uint32_t off, uint32_t size,
		     uint32_t data_off)
{
	set_head_at(pkt, pg, pg->addr + off, off, size, data_off);
}

/* A small head buffer's slot made into a packet whose metadata it holds:
 * pg has no references yet; the packet's head is the buffer. */
static inline struct rxp_pkt *embed_init(struct rxp_pktpool *pp, struct rxp_page *pg, unsigned tid,
					 uint32_t bs, uint32_t hr)
{
	struct rxp_pkt *pkt = (struct rxp_pkt *)(void *)((uint8_t *)pg + PKTPOOL_BUF_HDR);

	rxp_page_set_refcount(pg, 1);
	meta_init(pkt, pp, tid);
	pkt->flags = RXP_PKT_F_EMBED;
	/* the buffer's bytes follow the metadata (pg->addr, not read) */
	set_head_at(pkt, pg, (uint8_t *)pkt + PKTPOOL_META_SZ, 0, bs, hr);
	/* charged as a packet of two objects is: the pool's padding aside,
	 * the same bytes */
	pkt->truesize = RXP_PKT_META_TRUESIZE + PKTPOOL_BUF_HDR + bs;
	return pkt;
}

static struct rxp_pkt *alloc_headroom(struct rxp_pktpool *pp, uint32_t size, uint32_t headroom,
				      const char *file, int line)
{
	struct rxp_pkt *pkt;
	struct rxp_page *pg;
	uint32_t need;

	if (size > UINT32_MAX - headroom)
		return NULL;
	need = size + headroom;
	if (pp->buf_init.meta && need <= pp->buf_size) {
		pg = rxp_pool_get_at(pp->bufs, file, line);
		if (pg)
			return embed_init(pp, pg, rxp_thread_id(), pp->buf_size, headroom);
		/* the small buffers are out (counted once): a large one, with
		 * its metadata apart */
		need = pp->buf_size + 1;
		if (need > pp->large_size)
			return NULL;
	}
	pkt = meta_get(pp, file, line);
	if (!pkt)
		return NULL;
	pg = pktpool_buf_get(pp, need, file, line);
	if (!pg) {
		rxp_pool_put(pp->meta, pkt);
		return NULL;
	}
	set_head(pkt, pg, 0, pg->size, headroom);
	pkt->truesize = RXP_PKT_META_TRUESIZE + pktpool_buf_truesize(pg);
	return pkt;
}

/* rxp_pkt_alloc_at's fast path for a pool of two-object packets
 * (RXP_PKT_META_APART), out of line: the one-object path keeps its
 * registers. */
static __attribute__((noinline)) struct rxp_pkt *
alloc_apart(struct rxp_pktpool *pp, uint32_t size, unsigned tid, const char *file, int line)
{
	uint32_t hr = pp->headroom, bs = pp->buf_size;
	void *m, *b;

	if (rxp_pool_take_pair_(pp->meta, pp->bufs, tid, &m, &b)) {
		struct rxp_pkt *pkt = m;
		struct rxp_page *pg = b;

		rxp_page_set_refcount(pg, 1);
		meta_init(pkt, pp, tid);
		/* a small buffer's size is the pool's buf_size */
		set_head(pkt, pg, 0, bs, hr);
		pkt->truesize = RXP_PKT_META_TRUESIZE + PKTPOOL_BUF_HDR + bs;
		return pkt;
	}
	return alloc_headroom(pp, size, hr, file, line);
}

/* The common case in one piece, for a driver's or a reader's every
 * packet: a small head buffer's slot, with the metadata in it, from this
 * thread's cache, its id read once and no call (alloc_headroom reads the
 * id per pool and chooses the buffer's pool out of line; the reassembly
 * handover's get loop, callgrind, per packet: 111.6 instructions, 80.6
 * with this path for two objects, 66.6 for one). RXP_PKT_META_APART pools
 * take alloc_apart; anything else, a thread's first packet and RXP_DEBUG
 * builds take alloc_headroom. */
struct rxp_pkt *rxp_pkt_alloc_at(struct rxp_pktpool *pp, uint32_t size, const char *file, int line)
{
	int t = rxp_tid_; /* a thread still without its id: the slow path */
	uint32_t hr = pp->headroom, bs = pp->buf_size; /* read once: pkt may alias */
	void *b;

	/* (no call on this path, so no registers to save around one) */
	if (rxp_likely(t >= 0) && rxp_likely((uint64_t)size + hr <= bs)) {
		if (rxp_unlikely(pp->buf_init.meta == 0))
			return alloc_apart(pp, size, (unsigned)t, file, line);
		if (rxp_pool_take_one_(pp->bufs, (unsigned)t, &b))
			return embed_init(pp, b, (unsigned)t, bs, hr);
	}
	return alloc_headroom(pp, size, hr, file, line);
}

/* A refused build: the page references passed in go (frag_page may be
 * NULL), the reason is counted. Out of line so the fast paths need no saved
 * registers for it. */
__attribute__((noinline, cold)) static struct rxp_pkt *build_fail(struct rxp_pktpool *pp,
								  struct rxp_page *page,
								  struct rxp_page *frag_page,
								  enum rxp_drop_reason r, int err)
{
	rxp_page_put(page);
	if (frag_page)
		rxp_page_put(frag_page);
	rxp_pktpool_count_drop(pp, r, 1);
	errno = err;
	return NULL;
}

struct rxp_pkt *rxp_pkt_build(struct rxp_pktpool *pp, struct rxp_page *page, uint32_t buf_off,
			      uint32_t buf_size, uint32_t data_off, uint32_t len)
{
	struct rxp_pkt *pkt;

	if (rxp_unlikely((uint64_t)buf_off + buf_size > page->size ||
			 (uint64_t)data_off + len > buf_size))
		return build_fail(pp, page, NULL, RXP_DROP_RX_BAD_DESC, EINVAL);
	pkt = meta_get(pp, __FILE__, __LINE__);
	if (rxp_unlikely(!pkt))
		return build_fail(pp, page, NULL, RXP_DROP_NOMEM, ENOMEM);
	set_head(pkt, page, buf_off, buf_size, data_off);
	pkt->tail += len;
	pkt->len = len;
	pkt->flags = RXP_PKT_F_RINGBUF;
	pkt->truesize = RXP_PKT_META_TRUESIZE + buf_size;
	return pkt;
}

struct rxp_pkt *rxp_pkt_build_frag(struct rxp_pktpool *pp, struct rxp_page *page, uint32_t buf_off,
				   uint32_t buf_size, uint32_t data_off, uint32_t len,
				   struct rxp_page *pg, uint32_t off, uint32_t size)
{
	struct rxp_pkt *pkt;

	if (rxp_unlikely((uint64_t)buf_off + buf_size > page->size ||
			 (uint64_t)data_off + len > buf_size || !size ||
			 (uint64_t)off + size > pg->size || (uint64_t)len + size > UINT32_MAX))
		return build_fail(pp, page, pg, RXP_DROP_RX_BAD_DESC, EINVAL);
	pkt = meta_get(pp, __FILE__, __LINE__);
	if (rxp_unlikely(!pkt))
		return build_fail(pp, page, pg, RXP_DROP_NOMEM, ENOMEM);
	set_head(pkt, page, buf_off, buf_size, data_off);
	pkt->tail += len;
	pkt->len = len + size;
	pkt->data_len = size;
	pkt->nr_frags = 1;
	pkt->frags[0] = (struct rxp_frag){.page = pg, .off = off, .size = size};
	pkt->truesize = RXP_PKT_META_TRUESIZE + buf_size + size;
	return pkt;
}

void rxp_pkt_consume(struct rxp_pkt *pkt)
{
	unsigned tid;

	if (!pkt)
		return;
	tid = rxp_thread_id();
	pktpool_stat_add(tid, &pkt->pool->stats[tid].consumed, 1);
	pkt_free(pkt, tid);
}

void rxp_pkt_drop(struct rxp_pkt *pkt, enum rxp_drop_reason reason)
{
	unsigned tid;

	if (!pkt)
		return;
	if ((unsigned)reason - 1 >= RXP_DROP_MAX - 1) /* NONE or out of range */
		reason = RXP_DROP_NOT_SPECIFIED;
	tid = rxp_thread_id();
	pktpool_stat_add(tid, &pkt->pool->stats[tid].drops[reason], 1);
	if (rxp_unlikely(pkt->pool->drop_hook != NULL))
		pkt->pool->drop_hook(pkt->pool->drop_hook_arg, pkt, reason);
	pkt_free(pkt, tid);
}

void rxp_pkt_queue_purge(struct rxp_pkt_queue *q, enum rxp_drop_reason reason)
{
	struct rxp_pkt *p;

	while ((p = rxp_pkt_dequeue(q)))
		rxp_pkt_drop(p, reason);
}

/* ---- linear-part pointer operations -------------------------------------- */

void rxp_pkt_reserve(struct rxp_pkt *pkt, uint32_t len)
{
	if (pkt->len || len > (uint32_t)(pkt->end - pkt->tail))
		return;
	pkt->data += len;
	pkt->tail += len;
}

uint8_t *rxp_pkt_put(struct rxp_pkt *pkt, uint32_t len)
{
	uint8_t *old = pkt->tail;

	if (rxp_unlikely(len > rxp_pkt_tailroom(pkt)))
		return NULL;
	pkt->tail += len;
	pkt->len += len;
	return old;
}

uint8_t *rxp_pkt_push(struct rxp_pkt *pkt, uint32_t len)
{
	if (rxp_unlikely(len > rxp_pkt_headroom(pkt)))
		return NULL;
	pkt->data -= len;
	pkt->len += len;
	return pkt->data;
}

/* ---- reading across the non-linear parts --------------------------------- */

int rxp_pkt_copy_bits(const struct rxp_pkt *pkt, uint32_t off, void *to_, uint32_t len)
{
	uint8_t *to = to_;
	uint32_t hl = rxp_pkt_headlen(pkt), n;

	if ((uint64_t)off + len > pkt->len)
		return -EINVAL;
	if (off < hl) {
		n = hl - off < len ? hl - off : len;
		memcpy(to, pkt->data + off, n);
		to += n;
		len -= n;
		off += n;
	}
	off -= hl; /* now relative to the non-linear part */
	for (unsigned i = 0; len && i < pkt->nr_frags; i++) {
		const struct rxp_frag *f = &pkt->frags[i];

		if (off >= f->size) {
			off -= f->size;
			continue;
		}
		n = f->size - off < len ? f->size - off : len;
		memcpy(to, f->page->addr + f->off + off, n);
		to += n;
		len -= n;
		off = 0;
	}
	for (const struct rxp_pkt *m = pkt->frag_list; len && m; m = m->next) {
		if (off >= m->len) {
			off -= m->len;
			continue;
		}
		n = m->len - off < len ? m->len - off : len;
		if (rxp_pkt_copy_bits(m, off, to, n))
			return -EINVAL;
		to += n;
		len -= n;
		off = 0;
	}
	return len ? -EINVAL : 0;
}

const void *rxp_pkt_header_pointer(const struct rxp_pkt *pkt, uint32_t off, uint32_t len, void *buf)
{
	if ((uint64_t)off + len <= rxp_pkt_headlen(pkt))
		return pkt->data + off;
	return rxp_pkt_copy_bits(pkt, off, buf, len) ? NULL : buf;
}

/* Add a block's partial sum that starts at byte offset pos of the whole:
 * an odd start swaps the bytes of the block's sum (RFC 1071 property). */
static uint32_t csum_add_at(uint32_t sum, uint32_t block, uint32_t pos)
{
	uint64_t s;

	if (pos & 1)
		block = ((block & 0x00ff00ffu) << 8) | ((block >> 8) & 0x00ff00ffu);
	s = (uint64_t)sum + block;
	return (uint32_t)((s & 0xffffffffu) + (s >> 32));
}

static void csum_walk(const struct rxp_pkt *pkt, uint32_t off, uint32_t len, uint32_t *sum,
		      uint32_t *pos)
{
	uint32_t hl = rxp_pkt_headlen(pkt), n;

	if (off < hl) {
		n = hl - off < len ? hl - off : len;
		*sum = csum_add_at(*sum, rxp_csum_partial(pkt->data + off, n, 0), *pos);
		*pos += n;
		len -= n;
		off = 0;
	} else {
		off -= hl;
	}
	for (unsigned i = 0; len && i < pkt->nr_frags; i++) {
		const struct rxp_frag *f = &pkt->frags[i];

		if (off >= f->size) {
			off -= f->size;
			continue;
		}
		n = f->size - off < len ? f->size - off : len;
		*sum = csum_add_at(*sum, rxp_csum_partial(f->page->addr + f->off + off, n, 0),
				   *pos);
		*pos += n;
		len -= n;
		off = 0;
	}
	for (const struct rxp_pkt *m = pkt->frag_list; len && m; m = m->next) {
		if (off >= m->len) {
			off -= m->len;
			continue;
		}
		n = m->len - off < len ? m->len - off : len;
		csum_walk(m, off, n, sum, pos);
		len -= n;
		off = 0;
	}
}

int64_t rxp_pkt_csum(const struct rxp_pkt *pkt, uint32_t off, uint32_t len, uint32_t sum)
{
	uint32_t pos = 0;

	if ((uint64_t)off + len > pkt->len)
		return -1;
	csum_walk(pkt, off, len, &sum, &pos);
	return sum;
}

/* ---- reshaping ------------------------------------------------------------- */

/* Move the linear part into a private head buffer with room for extra more
 * bytes at the tail, keeping the headroom (so header offsets stay valid). */
static int expand_head(struct rxp_pkt *pkt, uint32_t extra)
{
	uint32_t hr = rxp_pkt_headroom(pkt), hl = rxp_pkt_headlen(pkt);
	uint64_t need = (uint64_t)hr + hl + extra;
	struct rxp_page *pg;

	if (need > UINT32_MAX)
		return -ENOMEM;
	pg = pktpool_buf_get(pkt->pool, (uint32_t)need, __FILE__, __LINE__);
	if (!pg)
		return -ENOMEM;
	memcpy(pg->addr + hr, pkt->data, hl);
	pkt->truesize = pkt->truesize - (uint32_t)(pkt->end - pkt->head) + pg->size;
	if ((pkt->flags & RXP_PKT_F_EMBED) && pkt->head_page == pkt_home(pkt))
		pkt->flags |= RXP_PKT_F_HOMEREF; /* the old head holds our metadata */
	else
		rxp_page_put(pkt->head_page);
	set_head(pkt, pg, 0, pg->size, hr);
	pkt->tail += hl;
	pkt->flags &= (uint8_t)~RXP_PKT_F_CLONED;
	return 0;
}

/* Remove k bytes from the front of p as a whole (linear part first). */
static void eat_front(struct rxp_pkt *p, uint32_t k);

/* Remove k bytes from the front of the non-linear part of p. */
static void eat_nonlinear(struct rxp_pkt *p, uint32_t k)
{
	unsigned i;

	p->len -= k;
	p->data_len -= k;
	/* Whole frags eaten go; the first one left may lose its front; the
	 * rest move down only if something went (usually nothing does: a
	 * header pulled out of the first frag). */
	for (i = 0; i < p->nr_frags && k >= p->frags[i].size; i++) {
		k -= p->frags[i].size;
		rxp_page_put(p->frags[i].page);
	}
	if (i < p->nr_frags && k) {
		p->frags[i].off += k;
		p->frags[i].size -= k;
		k = 0;
	}
	if (i) {
		memmove(p->frags, p->frags + i, (p->nr_frags - i) * sizeof(p->frags[0]));
		p->nr_frags = (uint8_t)(p->nr_frags - i);
	}
	while (k && p->frag_list) {
		struct rxp_pkt *m = p->frag_list;

		if (k >= m->len) {
			k -= m->len;
			p->frag_list = m->next;
			pkt_free(m, rxp_thread_id());
			continue;
		}
		eat_front(m, k);
		k = 0;
	}
	if (!p->frag_list)
		p->frag_tail = NULL;
}

static void eat_front(struct rxp_pkt *p, uint32_t k)
{
	uint32_t hl = rxp_pkt_headlen(p), n = k < hl ? k : hl;

	p->data += n;
	p->len -= n;
	if (k > n)
		eat_nonlinear(p, k - n);
}

bool rxp_pkt_may_pull(struct rxp_pkt *pkt, uint32_t len)
{
	uint32_t hl = rxp_pkt_headlen(pkt), need;

	if (rxp_likely(len <= hl))
		return true;
	if (len > pkt->len)
		return false;
	need = len - hl;
	if (rxp_pkt_cloned(pkt) || (uint32_t)(pkt->end - pkt->tail) < need) {
		/* An empty linear part may start anywhere in a private head:
		 * take the room from the headroom (its bytes are pulled-off
		 * headers no offset refers to) rather than a new buffer,
		 * keeping PULL_KEEP_HEADROOM for headers pushed later. A
		 * reassembled message whose header sits in its first frag
		 * (TIPC) needs this once per message. */
		if (!hl && !rxp_pkt_cloned(pkt) && pkt->network_off == OFF_UNSET &&
		    pkt->transport_off == OFF_UNSET &&
		    (uint64_t)need + PULL_KEEP_HEADROOM <= (uint64_t)(pkt->end - pkt->head)) {
			pkt->data = pkt->tail = pkt->end - need;
		} else if (expand_head(pkt, need)) {
			return false;
		}
	}
	/* Copy first, then drop what was copied from the non-linear part. */
	if (rxp_pkt_copy_bits(pkt, hl, pkt->tail, need))
		return false;
	pkt->tail += need;
	pkt->len += need; /* eat_nonlinear takes it back off len and data_len */
	eat_nonlinear(pkt, need);
	return true;
}

int rxp_pkt_linearize(struct rxp_pkt *pkt)
{
	if (rxp_pkt_is_linear(pkt))
		return 0;
	return rxp_pkt_may_pull(pkt, pkt->len) ? 0 : -ENOMEM;
}

int rxp_pkt_trim(struct rxp_pkt *pkt, uint32_t len)
{
	uint32_t hl = rxp_pkt_headlen(pkt), rem;
	struct rxp_pkt **link, *m;
	unsigned i;

	if (len > pkt->len)
		return -EINVAL;
	if (len == pkt->len)
		return 0;
	if (len <= hl) {
		pkt->tail = pkt->data + len;
		rem = 0;
	} else {
		rem = len - hl;
	}
	for (i = 0; i < pkt->nr_frags; i++) {
		struct rxp_frag *f = &pkt->frags[i];

		if (rem >= f->size) {
			rem -= f->size;
			continue;
		}
		if (rem) {
			f->size = rem;
			rem = 0;
			continue;
		}
		break;
	}
	for (unsigned k = i; k < pkt->nr_frags; k++)
		rxp_page_put(pkt->frags[k].page);
	pkt->nr_frags = (uint8_t)i;
	/* Frags whose size reached 0 above were cut to rem==0 only when i
	 * stopped there, so every kept frag is non-empty. */
	link = &pkt->frag_list;
	pkt->frag_tail = NULL;
	while ((m = *link)) {
		if (rem == 0) {
			*link = NULL;
			frag_list_free(m, rxp_thread_id());
			break;
		}
		if (m->len > rem)
			rxp_pkt_trim(m, rem);
		rem -= m->len;
		pkt->frag_tail = m;
		link = &m->next;
	}
	pkt->len = len;
	pkt->data_len = len - rxp_pkt_headlen(pkt);
	return 0;
}

int rxp_pkt_add_frag(struct rxp_pkt *pkt, struct rxp_page *page, uint32_t off, uint32_t size,
		     uint32_t truesize)
{
	struct rxp_frag *f;

	if (pkt->frag_list || !size || (uint64_t)off + size > page->size ||
	    (uint64_t)pkt->len + size > UINT32_MAX)
		return -EINVAL;
	if (pkt->nr_frags >= RXP_MAX_FRAGS)
		return -E2BIG;
	f = &pkt->frags[pkt->nr_frags++];
	f->page = page;
	f->off = off;
	f->size = size;
	pkt->len += size;
	pkt->data_len += size;
	pkt->truesize += truesize;
	return 0;
}

/* ---- clone and copy -------------------------------------------------------- */

struct rxp_pkt *rxp_pkt_clone(struct rxp_pkt *pkt)
{
	struct rxp_pkt *c = rxp_pool_get(pkt->pool->meta);

	if (!c)
		return NULL;
	memcpy(c, pkt, offsetof(struct rxp_pkt, frags));
	memcpy(c->frags, pkt->frags, pkt->nr_frags * sizeof(pkt->frags[0]));
	c->next = NULL;
	c->owner = (uint16_t)rxp_thread_id();
	c->frag_list = c->frag_tail = NULL;
	c->flags &= (uint8_t) ~(RXP_PKT_F_EMBED | RXP_PKT_F_HOMEREF); /* c's is its own */
	rxp_page_get(c->head_page);
	for (unsigned i = 0; i < c->nr_frags; i++)
		rxp_page_get(c->frags[i].page);
	for (struct rxp_pkt *m = pkt->frag_list; m; m = m->next) {
		struct rxp_pkt *mc = rxp_pkt_clone(m);

		if (!mc) {
			/* Keep c consistent for the free: only what it holds. */
			for (unsigned i = 0; i < c->nr_frags; i++)
				rxp_page_put(c->frags[i].page);
			c->nr_frags = 0;
			frag_list_free(c->frag_list, rxp_thread_id());
			c->frag_list = NULL;
			rxp_page_put(c->head_page);
			rxp_pool_put(pkt->pool->meta, c);
			return NULL;
		}
		if (c->frag_tail)
			c->frag_tail->next = mc;
		else
			c->frag_list = mc;
		c->frag_tail = mc;
	}
	pkt->flags |= RXP_PKT_F_CLONED;
	c->flags |= RXP_PKT_F_CLONED;
	return c;
}

struct rxp_pkt *rxp_pkt_copy(const struct rxp_pkt *pkt)
{
	uint32_t hr = rxp_pkt_headroom(pkt);
	struct rxp_pkt *c = alloc_headroom(pkt->pool, pkt->len, hr, __FILE__, __LINE__);

	if (!c)
		return NULL;
	if (rxp_pkt_copy_bits(pkt, 0, c->tail, pkt->len)) {
		rxp_pkt_consume(c);
		return NULL;
	}
	c->tail += pkt->len;
	c->len = pkt->len;
	c->network_off = pkt->network_off;
	c->transport_off = pkt->transport_off;
	c->hash = pkt->hash;
	c->queue = pkt->queue;
	c->protocol = pkt->protocol;
	c->tstamp_ns = pkt->tstamp_ns;
	memcpy(c->cb, pkt->cb, sizeof(c->cb));
	return c;
}

struct rxp_pkt *rxp_pkt_unshare(struct rxp_pkt *pkt)
{
	struct rxp_pkt *c;

	if (!rxp_pkt_cloned(pkt))
		return pkt;
	c = rxp_pkt_copy(pkt);
	if (!c) {
		rxp_pkt_drop(pkt, RXP_DROP_UNSHARE_FAIL);
		return NULL;
	}
	rxp_pkt_consume(pkt);
	return c;
}
