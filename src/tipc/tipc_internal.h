/* Private helpers shared by the TIPC files (not part of the public API). */
#ifndef RXP_TIPC_INTERNAL_H
#define RXP_TIPC_INTERNAL_H

#include "rxpath/compiler.h"
#include "rxpath/pkt.h"
#include "rxpath/tipc.h"

/*
 * V1-V3 for a message with len bytes present, from its header's word 0
 * (w0, host order), which holds everything checked. The one implementation
 * behind rxp_tipc_validate_pkt and the link's per-packet fast path, which
 * reads the word once and keeps it in a register.
 */
static inline enum rxp_drop_reason tipc_validate_w0(uint32_t w0, uint32_t len)
{
	unsigned hsize = rxp_tipc_w0_hsize(w0);
	uint32_t size = rxp_tipc_w0_size(w0);

	/* V1 */
	if (len < RXP_TIPC_MIN_H_SIZE || rxp_tipc_w0_version(w0) != RXP_TIPC_VERSION)
		return RXP_DROP_TIPC_HDR;
	/* V2 */
	if (hsize < RXP_TIPC_MIN_H_SIZE || hsize > RXP_TIPC_MAX_H_SIZE || hsize > len)
		return RXP_DROP_TIPC_HDR;
	/* V3: size - hsize only after size >= hsize is known. */
	if (size < hsize || size > len || size - hsize > RXP_TIPC_MAX_USER_MSG_SIZE)
		return RXP_DROP_TIPC_HDR;
	return RXP_DROP_NONE;
}

/* The same on a header h of which at least RXP_TIPC_MIN_H_SIZE bytes are
 * readable (NULL when fewer are there). */
static inline enum rxp_drop_reason tipc_validate_hdr(const uint8_t *h, uint32_t len)
{
	if (!h)
		return RXP_DROP_TIPC_HDR;
	return tipc_validate_w0(rxp_tipc_word(h, 0), len);
}

/* The first 24 header bytes of pkt: in place when linear (the common
 * case, no call), else copied into buf; NULL when fewer bytes exist. */
static inline const uint8_t *tipc_hdr(const struct rxp_pkt *pkt, uint8_t *buf)
{
	if (rxp_likely(rxp_pkt_headlen(pkt) >= RXP_TIPC_MIN_H_SIZE))
		return pkt->data;
	if (pkt->len < RXP_TIPC_MIN_H_SIZE)
		return NULL;
	return rxp_pkt_header_pointer(pkt, 0, RXP_TIPC_MIN_H_SIZE, buf);
}

/*
 * Append bytes [off, off + len) of src to dst as page fragments that
 * reference src's head page and page frags (one reference taken per piece;
 * no byte copied). src must have no frag_list and dst must be able to take
 * page frags. 0, or -E2BIG / -EINVAL with dst possibly holding part of the
 * range (the caller then frees dst and copies instead).
 */
int tipc_pkt_add_range_any(struct rxp_pkt *dst, struct rxp_pkt *src, uint32_t off, uint32_t len);

/* The per-fragment case inline: bytes of a linear src are one piece of its
 * head page (one reference, no loop, no call but add_frag). */
static inline int tipc_pkt_add_range(struct rxp_pkt *dst, struct rxp_pkt *src, uint32_t off,
				     uint32_t len)
{
	int r;

	if (rxp_unlikely(src->data_len || src->frag_list || (uint64_t)off + len > src->len))
		return tipc_pkt_add_range_any(dst, src, off, len);
	/* src's head is now shared: src is marked as a clone's is, so nothing
	 * writes into it (push, may_pull into headroom) without unsharing. */
	src->flags |= RXP_PKT_F_CLONED;
	rxp_page_get(src->head_page);
	r = rxp_pkt_add_frag(dst, src->head_page, rxp_pkt_data_page_off(src) + off, len, len);
	if (r)
		rxp_page_put(src->head_page);
	return r;
}

#endif
