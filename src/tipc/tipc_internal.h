/* Private helpers shared by the TIPC files (not part of the public API). */
#ifndef RXP_TIPC_INTERNAL_H
#define RXP_TIPC_INTERNAL_H

#include "rxpath/pkt.h"

/*
 * Append bytes [off, off + len) of src to dst as page fragments that
 * reference src's head page and page frags (one reference taken per piece;
 * no byte copied). src must have no frag_list and dst must be able to take
 * page frags. 0, or -E2BIG / -EINVAL with dst possibly holding part of the
 * range (the caller then frees dst and copies instead).
 */
int tipc_pkt_add_range(struct rxp_pkt *dst, const struct rxp_pkt *src, uint32_t off,
		       uint32_t len);

#endif
