/*
 * A packet made from bytes the caller has (a frame read from a file, a
 * datagram built in a buffer): what a program that does not own a receive
 * ring needs first. The bytes are copied into one head buffer, small or
 * large as they need, behind the pool's headroom.
 */
#include <errno.h>
#include <string.h>

#include "rxpath/pkt.h"

struct rxp_pkt *rxp_pkt_from_bytes_at(struct rxp_pktpool *pp, const void *data, uint32_t len,
				      const char *file, int line)
{
	struct rxp_pkt *p;

	if (!pp || (!data && len)) {
		errno = EINVAL;
		return NULL;
	}
	p = rxp_pkt_alloc_at(pp, len, file, line);
	if (!p) {
		errno = ENOMEM;
		return NULL;
	}
	if (len)
		memcpy(rxp_pkt_put(p, len), data, len);
	return p;
}
