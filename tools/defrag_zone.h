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

/* Zones the table tells apart; past it, new ones are refused (the caller
 * counts that and leaves those tunnels' inner packets alone). */
#define DFR_MAX_ZONES (1u << 20)

struct dfr_zones;

struct dfr_zones *dfr_zones_create(void);
void dfr_zones_destroy(struct dfr_zones *zs);
/* Forget every zone: numbers start again from 1. */
void dfr_zones_reset(struct dfr_zones *zs);

/* The zone of ctx inside parent: 0 for the untagged link level (parent 0,
 * no tunnel, no VLAN), else a number of its own, the same every time. 0,
 * or -1 when the table is full or out of memory. */
int dfr_zone_of(struct dfr_zones *zs, uint32_t parent, const struct rxp_decap_ctx *ctx,
		uint32_t *zone);

uint32_t dfr_zones_count(const struct dfr_zones *zs);

#endif
