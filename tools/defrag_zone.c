/*
 * The zone intern table (see defrag_zone.h): a red-black tree (libbsd)
 * keyed by whole, zero-padded keys compared with memcmp; numbers are handed
 * out from 1 in order of first use. Nothing is removed before destroy: a
 * zone may be named by queued fragments until the table is gone.
 */
#include <stdlib.h>
#include <string.h>
#ifndef __unused
#define __unused __attribute__((unused)) /* libbsd's RB_GENERATE_STATIC needs it */
#endif
#include <bsd/sys/tree.h>

#include "defrag_zone.h"

struct zkey {
	uint32_t parent;
	struct rxp_decap_ctx ctx;
};

struct znode {
	RB_ENTRY(znode) rb;
	struct zkey k;
	uint32_t zone;
};

static int zcmp(const struct znode *a, const struct znode *b)
{
	return memcmp(&a->k, &b->k, sizeof(a->k));
}

RB_HEAD(ztree, znode);
RB_GENERATE_STATIC(ztree, znode, rb, zcmp)

struct dfr_zones {
	struct ztree zones;
	uint32_t nzones;
	struct znode *zlast; /* the last one found: frames come in runs */
};

struct dfr_zones *dfr_zones_create(void)
{
	struct dfr_zones *zs = calloc(1, sizeof(*zs));

	if (zs)
		RB_INIT(&zs->zones);
	return zs;
}

void dfr_zones_reset(struct dfr_zones *zs)
{
	struct znode *z, *nz;

	RB_FOREACH_SAFE(z, ztree, &zs->zones, nz)
	{
		RB_REMOVE(ztree, &zs->zones, z);
		free(z);
	}
	zs->nzones = 0;
	zs->zlast = NULL;
}

void dfr_zones_destroy(struct dfr_zones *zs)
{
	if (!zs)
		return;
	dfr_zones_reset(zs);
	free(zs);
}

int dfr_zone_of(struct dfr_zones *zs, uint32_t parent, const struct rxp_decap_ctx *ctx,
		uint32_t *zone)
{
	struct znode key, *z;

	if (!parent && !ctx->tunnel && !ctx->nvlan) {
		*zone = 0;
		return 0;
	}
	key.k.parent = parent;
	key.k.ctx = *ctx;
	z = zs->zlast;
	if (!z || zcmp(&key, z))
		z = RB_FIND(ztree, &zs->zones, &key);
	if (!z) {
		if (zs->nzones >= DFR_MAX_ZONES || !(z = malloc(sizeof(*z))))
			return -1;
		z->k = key.k;
		z->zone = ++zs->nzones;
		RB_INSERT(ztree, &zs->zones, z);
	}
	zs->zlast = z;
	*zone = z->zone;
	return 0;
}

uint32_t dfr_zones_count(const struct dfr_zones *zs)
{
	return zs->nzones;
}
