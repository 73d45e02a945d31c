/*
 * Zone and IPv6 stand-in intern tables (see defrag_zone.h): red-black
 * trees (libbsd) keyed by whole, zero-padded keys compared with memcmp;
 * numbers are handed out from 1 in order of first use, and a stand-in's
 * number is its index in an array of the real sources, so putting one
 * back is a bounds check and a copy. Nothing is removed before destroy:
 * a zone may be named by queued fragments until the table is gone.
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

struct skey {
	uint32_t zone;
	uint8_t src[16];
};

struct snode {
	RB_ENTRY(snode) rb;
	struct skey k;
	uint32_t n; /* its number */
};

static int zcmp(const struct znode *a, const struct znode *b)
{
	return memcmp(&a->k, &b->k, sizeof(a->k));
}

static int scmp(const struct snode *a, const struct snode *b)
{
	return memcmp(&a->k, &b->k, sizeof(a->k));
}

RB_HEAD(ztree, znode);
RB_GENERATE_STATIC(ztree, znode, rb, zcmp)
RB_HEAD(stree, snode);
RB_GENERATE_STATIC(stree, snode, rb, scmp)

struct dfr_zones {
	struct ztree zones;
	uint32_t nzones;
	struct znode *zlast; /* the last one found: frames come in runs */
	struct stree standins;
	struct snode **sv; /* stand-in n is sv[n - 1] */
	uint32_t ns, scap;
};

struct dfr_zones *dfr_zones_create(void)
{
	struct dfr_zones *zs = calloc(1, sizeof(*zs));

	if (zs) {
		RB_INIT(&zs->zones);
		RB_INIT(&zs->standins);
	}
	return zs;
}

void dfr_zones_destroy(struct dfr_zones *zs)
{
	struct znode *z, *nz;

	if (!zs)
		return;
	RB_FOREACH_SAFE(z, ztree, &zs->zones, nz)
	{
		RB_REMOVE(ztree, &zs->zones, z);
		free(z);
	}
	for (uint32_t i = 0; i < zs->ns; i++)
		free(zs->sv[i]);
	free(zs->sv);
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

static void standin_addr(uint8_t *a, uint32_t n)
{
	memset(a, 0, 16);
	a[0] = 0x01; /* 100::/64 */
	a[12] = (uint8_t)(n >> 24);
	a[13] = (uint8_t)(n >> 16);
	a[14] = (uint8_t)(n >> 8);
	a[15] = (uint8_t)n;
}

int dfr_zones_v6_standin(struct dfr_zones *zs, uint32_t zone, uint8_t *src)
{
	struct snode key, *s;

	key.k.zone = zone;
	memcpy(key.k.src, src, 16);
	s = RB_FIND(stree, &zs->standins, &key);
	if (!s) {
		if (zs->ns >= DFR_MAX_ZONES)
			return -1;
		if (zs->ns == zs->scap) {
			uint32_t cap = zs->scap ? 2 * zs->scap : 64;
			struct snode **v = realloc(zs->sv, cap * sizeof(*v));

			if (!v)
				return -1;
			zs->sv = v;
			zs->scap = cap;
		}
		if (!(s = malloc(sizeof(*s))))
			return -1;
		s->k = key.k;
		RB_INSERT(stree, &zs->standins, s);
		zs->sv[zs->ns++] = s;
		s->n = zs->ns;
	}
	standin_addr(src, s->n);
	return 0;
}

void dfr_zones_v6_restore(const struct dfr_zones *zs, uint8_t *src)
{
	static const uint8_t pfx[12] = {0x01};
	uint32_t n;

	if (memcmp(src, pfx, 12))
		return;
	n = (uint32_t)src[12] << 24 | (uint32_t)src[13] << 16 | (uint32_t)src[14] << 8 | src[15];
	if (n == 0 || n > zs->ns)
		return;
	memcpy(src, zs->sv[n - 1]->k.src, 16);
}
