/*
 * IP fragmentation on output (see include/rxpath/ip_output.h).
 *
 * Owns nothing between calls. One call reads the original's headers into a
 * stack copy (so the original is never pulled or written), then cuts its
 * payload into consecutive slices with a forward cursor over the original's
 * segments (linear part, page frags, then each frag_list member's linear
 * part and frags). Each slice becomes a new packet from the original's
 * pool: header bytes written into its linear part, then the slice's bytes
 * copied (from the original's linear part) or referenced (everything else).
 *
 * Invariants:
 *   - fragments are built on a private queue; only a complete set reaches
 *     the caller's queue, and on failure the partial set is freed, so the
 *     caller never sees half a datagram;
 *   - every page reference a fragment holds was taken with rxp_page_get()
 *     before rxp_pkt_add_frag(), so the original can be consumed at the end
 *     whatever its refcounts;
 *   - payload slices are multiples of 8 bytes except the last, and the sum
 *     of slices is the original's payload, exactly once each byte.
 */
#include <errno.h>
#include <string.h>

#include "rxpath/compiler.h"
#include "rxpath/ip_output.h"
#include "rxpath/ipid.h"
#include "rxpath/wire.h"

/* ---- cursor over the original's bytes ------------------------------------ */

struct cursor {
	const struct rxp_pkt *src; /* the packet being fragmented */
	const struct rxp_pkt *m; /* src or one of its frag_list members */
	int idx; /* -1: m's linear part; else m->frags[idx] */
	uint32_t pos; /* bytes of that segment already taken */
};

/* One run of contiguous bytes: copy from ptr (page NULL), or reference
 * page at off. */
struct piece {
	struct rxp_page *page;
	uint32_t off;
	const uint8_t *ptr;
	uint32_t size;
};

static uint32_t seg_size(const struct cursor *c)
{
	return c->idx < 0 ? rxp_pkt_headlen(c->m) : c->m->frags[c->idx].size;
}

static void seg_next(struct cursor *c)
{
	c->pos = 0;
	if (++c->idx < (int)c->m->nr_frags)
		return;
	c->m = c->m == c->src ? c->src->frag_list : c->m->next;
	c->idx = -1;
}

/* Take up to want bytes as one piece; false when the packet is exhausted
 * (cannot happen for lengths checked against pkt->len). */
static bool take(struct cursor *c, uint32_t want, struct piece *pc)
{
	while (c->m && c->pos == seg_size(c))
		seg_next(c);
	if (!c->m)
		return false;
	pc->size = seg_size(c) - c->pos;
	if (pc->size > want)
		pc->size = want;
	if (c->idx >= 0) {
		pc->page = c->m->frags[c->idx].page;
		pc->off = c->m->frags[c->idx].off + c->pos;
		pc->ptr = NULL;
	} else if (c->m == c->src || !c->m->head_page) {
		pc->page = NULL;
		pc->ptr = c->m->data + c->pos;
	} else {
		pc->page = c->m->head_page;
		pc->off = rxp_pkt_data_page_off(c->m) + c->pos;
		pc->ptr = NULL;
	}
	c->pos += pc->size;
	return true;
}

static void skip(struct cursor *c, uint32_t n)
{
	struct piece pc;

	while (n && take(c, n, &pc))
		n -= pc.size;
}

/*
 * How a slice of n bytes at the cursor would be built: bytes to copy into
 * the linear part (they must all come before the first reference, since a
 * packet's linear part precedes its frags) and references. Returns false
 * when the slice cannot be built by reference (too many pieces, or a copy
 * after a reference); the caller then copies it whole.
 */
static bool plan(struct cursor c, uint32_t n, uint32_t *copy, unsigned *refs)
{
	struct piece pc;

	*copy = 0;
	*refs = 0;
	while (n) {
		if (!take(&c, n, &pc))
			return false;
		if (!pc.page) {
			if (*refs)
				return false;
			*copy += pc.size;
		} else if (++*refs > RXP_MAX_FRAGS) {
			return false;
		}
		n -= pc.size;
	}
	return true;
}

/*
 * A new packet holding hdr[0..hlen) followed by the next n bytes at the
 * cursor (advanced past them). NULL when out of memory.
 */
static struct rxp_pkt *build(struct cursor *c, const uint8_t *hdr, uint32_t hlen, uint32_t n)
{
	const struct rxp_pkt *src = c->src;
	uint32_t copy, payload_off = 0;
	unsigned refs;
	bool by_ref = plan(*c, n, &copy, &refs);
	struct rxp_pkt *f = rxp_pkt_alloc(src->pool, hlen + (by_ref ? copy : n));
	struct piece pc;
	uint8_t *d;

	if (!f)
		return NULL;
	f->protocol = src->protocol;
	f->hash = src->hash;
	f->queue = src->queue;
	f->tstamp_ns = src->tstamp_ns;
	f->network_off = (uint16_t)rxp_pkt_headroom(f);
	d = rxp_pkt_put(f, hlen + (by_ref ? copy : n));
	memcpy(d, hdr, hlen);
	d += hlen;
	while (n) {
		if (!take(c, n, &pc))
			goto fail;
		if (!pc.page) {
			memcpy(d + payload_off, pc.ptr, pc.size);
			payload_off += pc.size;
		} else if (!by_ref) {
			memcpy(d + payload_off, pc.page->addr + pc.off, pc.size);
			payload_off += pc.size;
		} else {
			rxp_page_get(pc.page);
			if (rxp_pkt_add_frag(f, pc.page, pc.off, pc.size, pc.size)) {
				rxp_page_put(pc.page);
				goto fail;
			}
		}
		n -= pc.size;
	}
	return f;
fail:
	rxp_pkt_consume(f);
	return NULL;
}

/* ---- IPv4 ------------------------------------------------------------------ */

/*
 * The header later fragments carry: the fixed part and the options with the
 * copy flag, padded with EOL to 4 bytes. Returns its length, or 0 when the
 * options are malformed. h holds hlen (20..60) valid bytes.
 */
static uint32_t v4_copied_header(const uint8_t *h, uint32_t hlen, uint8_t *out)
{
	uint32_t i = RXP_IPV4_HLEN, o = RXP_IPV4_HLEN;

	memcpy(out, h, RXP_IPV4_HLEN);
	while (i < hlen) {
		uint8_t type = h[i], olen;

		if (type == 0) /* End of Option List */
			break;
		if (type == 1) { /* No Operation: not copied */
			i++;
			continue;
		}
		if (i + 1 >= hlen)
			return 0;
		olen = h[i + 1];
		if (olen < 2 || i + olen > hlen)
			return 0;
		if (type & 0x80) {
			memcpy(out + o, h + i, olen);
			o += olen;
		}
		i += olen;
	}
	while (o & 3)
		out[o++] = 0;
	out[0] = (uint8_t)(0x40 | (o / 4));
	return o;
}

static enum rxp_drop_reason fragment_v4(struct rxp_pkt *pkt, uint32_t mtu,
					struct rxp_ipid_table *ids, struct rxp_pkt_queue *q)
{
	uint8_t h1[60], h2[60];
	struct rxp_iphdr ip;
	uint32_t hlen, hlen2, tot, base, left, pos = 0;
	uint16_t frag, id;
	struct cursor c;

	if (pkt->len < RXP_IPV4_HLEN || rxp_pkt_copy_bits(pkt, 0, h1, RXP_IPV4_HLEN))
		return RXP_DROP_IP_HDR;
	memcpy(&ip, h1, sizeof(ip));
	hlen = rxp_ip_hlen(&ip);
	tot = ntohs(ip.tot_len);
	if (hlen < RXP_IPV4_HLEN || tot < hlen || pkt->len < hlen ||
	    rxp_pkt_copy_bits(pkt, 0, h1, hlen))
		return RXP_DROP_IP_HDR;
	if (tot > pkt->len)
		return RXP_DROP_IP_TRUNCATED;
	hlen2 = v4_copied_header(h1, hlen, h2);
	if (!hlen2)
		return RXP_DROP_IP_HDR;
	if (tot < pkt->len && rxp_pkt_trim(pkt, tot)) /* link padding */
		return RXP_DROP_IP_HDR;
	if (tot <= mtu)
		return RXP_DROP_NONE; /* fits: passed on as is */
	frag = ntohs(ip.frag_off);
	if ((uint32_t)(frag & RXP_IP_OFFMASK) * 8u + (tot - hlen) > 65535u)
		return RXP_DROP_IP_HDR; /* offsets would not fit 13 bits */
	if (frag & RXP_IP_DF)
		return RXP_DROP_FRAG_NEEDED_DF;
	if (!ids)
		return RXP_DROP_NOT_SPECIFIED;
	/* A whole datagram gets a fresh ID; a fragment being cut again keeps
	 * its ID, its offset base and, on its last piece, its MF flag. */
	base = (uint32_t)(frag & RXP_IP_OFFMASK) * 8u;
	if (!(frag & (RXP_IP_MF | RXP_IP_OFFMASK)))
		id = htons(rxp_ipid_reserve(ids, ip.saddr, ip.daddr, ip.protocol, 1));
	else
		id = ip.id;

	c = (struct cursor){.src = pkt, .m = pkt, .idx = -1};
	skip(&c, hlen);
	left = tot - hlen;
	while (left) {
		uint8_t *h = pos ? h2 : h1;
		uint32_t hl = pos ? hlen2 : hlen, n = left, max = (mtu - hl) & ~7u;
		struct rxp_iphdr *fh = (struct rxp_iphdr *)h;
		struct rxp_pkt *f;
		uint16_t off;

		if (hl + n > mtu)
			n = max;
		off = (uint16_t)(((base + pos) / 8) |
				 (n < left || (frag & RXP_IP_MF) ? RXP_IP_MF : 0));
		fh->tot_len = htons((uint16_t)(hl + n));
		fh->id = id;
		fh->frag_off = htons(off);
		fh->check = 0;
		fh->check = rxp_ip_csum(h, hl);
		f = build(&c, h, hl, n);
		if (!f)
			return RXP_DROP_NOMEM;
		rxp_pkt_enqueue(q, f);
		pos += n;
		left -= n;
	}
	return RXP_DROP_NONE;
}

/* ---- IPv6 ------------------------------------------------------------------ */

/*
 * Find the unfragmentable part in p[0..len): the IPv6 header, Hop-by-Hop,
 * and headers up to the last Routing header (Destination Options before a
 * Routing header belong to it, later ones do not). Sets *unfrag to its
 * length and *nh_off to the offset of the Next Header byte that will name
 * the fragment header. Returns RXP_DROP_NONE, or why not.
 */
static enum rxp_drop_reason v6_unfragmentable(const uint8_t *p, uint32_t len, uint32_t *unfrag,
					      uint32_t *nh_off)
{
	uint32_t off = RXP_IPV6_HLEN;
	uint8_t nh = p[6];

	*unfrag = RXP_IPV6_HLEN;
	*nh_off = 6;
	for (unsigned n = 0; n < 32; n++) { /* bounded chain walk */
		uint32_t hl;

		if (nh == RXP_IPPROTO_FRAGMENT)
			return RXP_DROP_IPV6_EXTHDR; /* already fragmented */
		if (nh != RXP_IPPROTO_HOPOPTS && nh != RXP_IPPROTO_ROUTING &&
		    nh != RXP_IPPROTO_DSTOPTS)
			return RXP_DROP_NONE;
		if (nh == RXP_IPPROTO_HOPOPTS && off != RXP_IPV6_HLEN)
			return RXP_DROP_IPV6_EXTHDR; /* only first */
		/* Every header of the chain we walk must lie within what
		 * we copied: a longer unfragmentable part is refused. */
		if (off + 2 > len)
			return RXP_DROP_IPV6_EXTHDR;
		hl = rxp_ipv6_ext_len(nh, p + off);
		if (off + hl > len)
			return RXP_DROP_IPV6_EXTHDR;
		if (nh != RXP_IPPROTO_DSTOPTS) {
			*unfrag = off + hl;
			*nh_off = off;
		}
		nh = p[off];
		off += hl;
	}
	return RXP_DROP_IPV6_EXTHDR;
}

static enum rxp_drop_reason fragment_v6(struct rxp_pkt *pkt, uint32_t mtu, struct rxp_pkt_queue *q)
{
	uint8_t h[RXP_IPV6_UNFRAG_MAX + RXP_IPV6_FRAGHDR_LEN];
	struct rxp_ipv6hdr ip6;
	uint32_t seen, tot, unfrag, nh_off, left, max, pos = 0, id;
	uint8_t nexthdr;
	struct cursor c;
	enum rxp_drop_reason r;

	if (pkt->len < RXP_IPV6_HLEN)
		return RXP_DROP_IP_HDR;
	seen = pkt->len < RXP_IPV6_UNFRAG_MAX ? pkt->len : RXP_IPV6_UNFRAG_MAX;
	if (rxp_pkt_copy_bits(pkt, 0, h, seen))
		return RXP_DROP_IP_HDR;
	memcpy(&ip6, h, sizeof(ip6));
	tot = RXP_IPV6_HLEN + ntohs(ip6.payload_len);
	if (!ip6.payload_len && pkt->len > RXP_IPV6_HLEN)
		return RXP_DROP_IPV6_EXTHDR; /* jumbogram: cannot be fragmented */
	if (tot > pkt->len)
		return RXP_DROP_IP_TRUNCATED;
	if (tot < seen)
		seen = tot;
	if (tot < pkt->len && rxp_pkt_trim(pkt, tot))
		return RXP_DROP_IP_HDR;
	if (tot <= mtu)
		return RXP_DROP_NONE; /* fits: passed on as is, even if already a fragment */
	r = v6_unfragmentable(h, seen, &unfrag, &nh_off);
	if (r)
		return r;
	if (unfrag + RXP_IPV6_FRAGHDR_LEN + 8 > mtu)
		return RXP_DROP_FRAG_OUT_BAD_MTU;
	max = (mtu - unfrag - RXP_IPV6_FRAGHDR_LEN) & ~7u;
	id = rxp_ipid_v6();
	nexthdr = h[nh_off];
	h[nh_off] = RXP_IPPROTO_FRAGMENT;

	c = (struct cursor){.src = pkt, .m = pkt, .idx = -1};
	skip(&c, unfrag);
	left = tot - unfrag;
	while (left) {
		uint32_t n = left > max ? max : left;
		uint16_t plen = (uint16_t)(unfrag - RXP_IPV6_HLEN + RXP_IPV6_FRAGHDR_LEN + n);
		struct rxp_pkt *f;

		rxp_frag6_build(h + unfrag, nexthdr, (uint16_t)pos, n < left, id);
		memcpy(h + 4, &(uint16_t){htons(plen)}, 2);
		f = build(&c, h, unfrag + RXP_IPV6_FRAGHDR_LEN, n);
		if (!f)
			return RXP_DROP_NOMEM;
		rxp_pkt_enqueue(q, f);
		pos += n;
		left -= n;
	}
	return RXP_DROP_NONE;
}

/* ---- entry ----------------------------------------------------------------- */

static int reason_errno(enum rxp_drop_reason reason)
{
	switch (reason) {
	case RXP_DROP_FRAG_NEEDED_DF:
	case RXP_DROP_FRAG_OUT_BAD_MTU:
		return -EMSGSIZE;
	case RXP_DROP_NOMEM:
		return -ENOMEM;
	default:
		return -EINVAL;
	}
}

int rxp_ip_fragment(struct rxp_pkt *pkt, uint32_t mtu, struct rxp_ipid_table *ids,
		    struct rxp_pkt_queue *out)
{
	struct rxp_pkt_queue q;
	uint8_t ver = 0;
	enum rxp_drop_reason r;
	int n;

	rxp_pkt_queue_init(&q);
	for (const struct rxp_pkt *m = pkt->frag_list; m; m = m->next)
		if (m->frag_list) {
			rxp_pkt_drop(pkt, RXP_DROP_NOT_SPECIFIED);
			return -EOPNOTSUPP;
		}
	if (mtu > RXP_IP_MAX_MTU)
		mtu = RXP_IP_MAX_MTU;
	if (rxp_pkt_copy_bits(pkt, 0, &ver, 1)) {
		r = RXP_DROP_IP_HDR;
	} else if ((ver >> 4) == 4) {
		r = mtu < RXP_IPV4_MIN_MTU ? RXP_DROP_FRAG_OUT_BAD_MTU
					   : fragment_v4(pkt, mtu, ids, &q);
	} else if ((ver >> 4) == 6) {
		r = mtu < RXP_IPV6_MIN_MTU ? RXP_DROP_FRAG_OUT_BAD_MTU : fragment_v6(pkt, mtu, &q);
	} else {
		r = RXP_DROP_IP_HDR;
	}
	if (r) {
		struct rxp_pkt *f;

		/* Half a datagram is useless to the peer: free what was built
		 * (not drops of their own), drop the original once. */
		while ((f = rxp_pkt_dequeue(&q)))
			rxp_pkt_consume(f);
		rxp_pkt_drop(pkt, r);
		return reason_errno(r);
	}
	if (!q.len) {
		rxp_pkt_enqueue(out, pkt);
		return 1;
	}
	rxp_pkt_consume(pkt);
	n = (int)q.len;
	rxp_pkt_queue_splice(out, &q);
	return n;
}
