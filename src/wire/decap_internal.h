/*
 * Private to src/wire/decap_*.c: a view of the bytes being parsed and the
 * helpers both halves (link layers, tunnels) use. A view's b[0] is the
 * frame's byte at offset base; the parsers read b[0..len) only and record
 * absolute offsets (base + local) in the layers they push.
 */
#ifndef RXP_WIRE_DECAP_INTERNAL_H
#define RXP_WIRE_DECAP_INTERNAL_H

#include "rxpath/decap.h"

struct dview {
	const uint8_t *b;
	uint32_t len;
	uint32_t base;
};

static inline uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline void wr16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* Pushes a header at local offset off of v; RXP_DECAP_TOO_DEEP when d is
 * full, RXP_DECAP_MALFORMED for a header over 65,535 bytes. */
static inline int dc_push(struct rxp_decap *d, const struct dview *v, uint8_t type, uint32_t off,
			  uint32_t len, uint8_t flags, uint32_t aux)
{
	struct rxp_layer *l;

	if (d->nlayers >= RXP_DECAP_MAX_LAYERS)
		return RXP_DECAP_TOO_DEEP;
	if (len > UINT16_MAX)
		return RXP_DECAP_MALFORMED;
	l = &d->layer[d->nlayers++];
	l->type = type;
	l->flags = flags;
	l->len = (uint16_t)len;
	l->off = v->base + off;
	l->aux = aux;
	return 0;
}

/* The IP header at local offset off: its version must agree with family
 * (0: either). */
int dc_at_ip(struct rxp_decap *d, const struct dview *v, uint32_t off, uint8_t family);

/* An ethertype's payload at local offset off: VLAN tags, MPLS, PPPoE, then
 * IP. VLAN ids go to d->ctx. */
int dc_ethertype(struct rxp_decap *d, const struct dview *v, uint32_t off, uint16_t type);

/* An Ethernet frame at local offset off. */
int dc_ether(struct rxp_decap *d, const struct dview *v, uint32_t off);

/* A PPP frame: address and control (ff 03) optional when acfc, protocol
 * field compressed or not. */
int dc_ppp(struct rxp_decap *d, const struct dview *v, uint32_t off, bool acfc);

#endif
