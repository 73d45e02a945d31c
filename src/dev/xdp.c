/*
 * Helpers an XDP program calls on a frame (bpf_xdp_adjust_head/tail).
 *
 * Owns nothing: the frame belongs to the clean loop. The one reference rule
 * here: a fragment removed by a tail shrink has its page reference put at
 * once (the clean loop then knows the buffer was handed out and gone, and
 * its refcount sample still says whether the page can be reused).
 */
#include <errno.h>

#include "rxpath/ring.h"
#include "rxpath/wire.h"

int rxp_xdp_adjust_head(struct rxp_xdp_buff *x, int delta)
{
	uint8_t *nd = x->data + delta;

	if (nd < x->data_hard_start || nd + RXP_ETH_HLEN > x->data_end)
		return -EINVAL;
	x->data = nd;
	return 0;
}

int rxp_xdp_adjust_tail(struct rxp_xdp_buff *x, int delta)
{
	uint32_t shrink;

	if (delta > 0) {
		/* Grow: only the linear part of a single-buffer frame. */
		if (x->mb || x->data_end + delta > x->data_hard_start + x->frame_sz)
			return -EINVAL;
		x->data_end += delta;
		return 0;
	}
	shrink = (uint32_t) - (int64_t)delta;
	if (shrink >= rxp_xdp_len(x) || rxp_xdp_len(x) - shrink < RXP_ETH_HLEN)
		return -EINVAL;
	while (shrink && x->mb && x->nr_frags) {
		struct rxp_frag *f = &x->frags[x->nr_frags - 1];

		if (f->size > shrink) {
			f->size -= shrink;
			x->frags_len -= shrink;
			return 0;
		}
		shrink -= f->size;
		x->frags_len -= f->size;
		rxp_page_put(f->page);
		x->nr_frags--;
	}
	if (x->mb && !x->nr_frags)
		x->mb = false;
	/* Any shrink left falls on the linear part, and every fragment is gone,
	 * so the length check above is the linear part's. The linear part may
	 * itself be shorter than 14 bytes (a short first buffer of a
	 * multi-buffer frame); a shrink that ended inside the fragments must
	 * not fail on that after it has changed them. */
	x->data_end -= shrink;
	return 0;
}
