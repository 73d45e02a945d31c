/*
 * Reassembly zones for `rxpath defrag`: every distinct (parent zone, VLAN
 * or tunnel context) gets its own zone number, so that fragments with the
 * same addresses and ID on different VLANs or in different tunnels never
 * meet in the reassembly table. Exact: contexts are compared whole, never
 * by a hash alone.
 */
#ifndef RXPATH_TOOLS_DEFRAG_ZONE_H
#define RXPATH_TOOLS_DEFRAG_ZONE_H

#include <stdint.h>

#include "rxpath/decap.h"

/* Zones and IPv6 stand-in sources each table tells apart; past it, new ones
 * are refused (the caller counts that and does without). */
#define DFR_MAX_ZONES (1u << 20)

struct dfr_zones;

struct dfr_zones *dfr_zones_create(void);
void dfr_zones_destroy(struct dfr_zones *zs);

/* The zone of ctx inside parent: 0 for the untagged link level (parent 0,
 * no tunnel, no VLAN), else a number of its own, the same every time. 0,
 * or -1 when the table is full or out of memory. */
int dfr_zone_of(struct dfr_zones *zs, uint32_t parent, const struct rxp_decap_ctx *ctx,
		uint32_t *zone);

uint32_t dfr_zones_count(const struct dfr_zones *zs);

/*
 * IPv6 stand-in sources. rxp_defrag keys an IPv6 datagram by its zone only
 * when its destination is link-local or multicast (asked of the library in
 * notes/requests-link.md). Until it can be told to use the zone always, an
 * IPv6 fragment in a nonzero zone goes to the table with its source
 * replaced by a stand-in from the discard-only block 100::/64 (RFC 6666),
 * one per (zone, source), so that the table's (source, destination, ID)
 * key tells zones apart exactly; the real source is put back in every
 * header that leaves the frame layer. A real source inside 100::/64 is
 * replaced too (in any zone), so a stand-in can never meet a real address.
 */

/* Whether an IPv6 fragment from src in zone needs a stand-in. */
static inline int dfr_v6_needs_standin(uint32_t zone, const uint8_t *src)
{
	static const uint8_t pfx[8] = {0x01, 0, 0, 0, 0, 0, 0, 0};

	return zone || !__builtin_memcmp(src, pfx, 8);
}

/* Replaces src (16 bytes) with its stand-in for zone: 0, or -1 when full. */
int dfr_zones_v6_standin(struct dfr_zones *zs, uint32_t zone, uint8_t *src);

/* If src is a stand-in, puts the real source back. */
void dfr_zones_v6_restore(const struct dfr_zones *zs, uint8_t *src);

#endif
