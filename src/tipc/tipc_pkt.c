/*
 * Zero-copy byte ranges for the TIPC layer: a bundle's inner message or a
 * fragment's data as page references into the packet that holds the bytes
 * (src/tipc/tipc_internal.h).
 *
 * Invariant: every piece appended to dst holds its own page reference, so
 * dst and src are freed independently; the shared bytes are never written
 * (neither packet writes into another's page: may_pull copies the header
 * into dst's own head, and src, whose head is now shared, is marked cloned
 * so that nothing writes into its head without unsharing first).
 */
#include <errno.h>

#include "rxpath/pkt.h"
#include "tipc/tipc_internal.h"

static int add_piece(struct rxp_pkt *dst, struct rxp_page *pg, uint32_t off, uint32_t n)
{
	int r;

	rxp_page_get(pg);
	r = rxp_pkt_add_frag(dst, pg, off, n, n);
	if (r)
		rxp_page_put(pg);
	return r;
}

int tipc_pkt_add_range_any(struct rxp_pkt *dst, struct rxp_pkt *src, uint32_t off, uint32_t len)
{
	uint32_t hl = rxp_pkt_headlen(src), end = off + len, pos;
	int r;

	if (src->frag_list || (uint64_t)off + len > src->len)
		return -EINVAL;
	if (off < hl) {
		uint32_t n = (end < hl ? end : hl) - off;

		src->flags |= RXP_PKT_F_CLONED; /* its head is shared from here on */
		r = add_piece(dst, src->head_page, rxp_pkt_data_page_off(src) + off, n);
		if (r)
			return r;
	}
	pos = hl;
	for (unsigned i = 0; i < src->nr_frags && pos < end; i++) {
		const struct rxp_frag *f = &src->frags[i];
		uint32_t s = pos > off ? pos : off;
		uint32_t e = pos + f->size < end ? pos + f->size : end;

		if (e > s) {
			r = add_piece(dst, f->page, f->off + (s - pos), e - s);
			if (r)
				return r;
		}
		pos += f->size;
	}
	return 0;
}
