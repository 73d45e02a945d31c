/* libFuzzer target for decapsulation (src/wire/decap_*.c). An input is
 * [1 byte link type selector][2 bytes new inner length][frame]. The frame
 * is parsed as the selected link type (a known one, or the byte itself),
 * then into every tunnel it carries, as `rxpath defrag` does; then its
 * headers are rewritten for an inner IP packet of the given length
 * (rxp_decap_fixup), and stripped of their tunnels when that fails.
 * Traps on: a layer outside the frame or out of order, a tunnel parse that
 * fails but changes the stack, a fix-up that succeeds with a length or a
 * checksum wrong (checked by an independent sum), or one that fails when
 * every length fits. ASan catches any read past the frame. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rxpath/decap.h"
#include "fz_linktypes.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint16_t g16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t sum16(const uint8_t *p, uint32_t n, uint32_t s)
{
	for (uint32_t i = 0; i + 1 < n; i += 2)
		s += (uint32_t)(p[i] << 8 | p[i + 1]);
	if (n & 1)
		s += (uint32_t)p[n - 1] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return s;
}

static void check_layers(const struct rxp_decap *d, uint32_t len)
{
	uint32_t prev = 0;

	if (d->ip_off >= len || (d->family != 4 && d->family != 6) ||
	    d->nlayers > RXP_DECAP_MAX_LAYERS)
		__builtin_trap();
	for (unsigned i = 0; i < d->nlayers; i++) {
		const struct rxp_layer *l = &d->layer[i];

		if (l->off < prev || l->off + l->len > d->ip_off || l->type == 0 ||
		    l->type >= RXP_LAYER_TYPE_MAX)
			__builtin_trap();
		prev = l->off;
	}
}

/* After a successful fix-up over b[0, n): every IPv4 and UDP header in the
 * stack says the right length and has a valid checksum, and so on. */
static void check_fixed(const struct rxp_decap *d, const uint8_t *b, uint32_t n)
{
	for (unsigned i = 0; i < d->nlayers; i++) {
		const struct rxp_layer *l = &d->layer[i];
		const uint8_t *p = b + l->off;

		switch (l->type) {
		case RXP_LAYER_IPV4:
			if (g16(p + 2) != n - l->off || sum16(p, l->len, 0) != 0xffff)
				__builtin_trap();
			break;
		case RXP_LAYER_IPV6:
			if (g16(p + 4) != n - l->off - 40)
				__builtin_trap();
			break;
		case RXP_LAYER_UDP:
			if (g16(p + 4) != n - l->off)
				__builtin_trap();
			if (g16(p + 6)) {
				const struct rxp_layer *ip = NULL;
				uint32_t s;

				for (unsigned j = i; j-- > 0;)
					if (d->layer[j].type == RXP_LAYER_IPV4 ||
					    d->layer[j].type == RXP_LAYER_IPV6) {
						ip = &d->layer[j];
						break;
					}
				if (!ip)
					__builtin_trap();
				s = ip->type == RXP_LAYER_IPV4 ? sum16(b + ip->off + 12, 8, 0)
							       : sum16(b + ip->off + 8, 32, 0);
				if (sum16(p, n - l->off, s + 17 + (n - l->off)) != 0xffff)
					__builtin_trap();
			}
			break;
		case RXP_LAYER_GTPU:
			if (g16(p + 2) != n - l->off - 8)
				__builtin_trap();
			break;
		case RXP_LAYER_PPPOE:
			if (g16(p + 4) != n - l->off - 6)
				__builtin_trap();
			break;
		default:
			break;
		}
	}
}

/* Whether every length field in d's stack can say a packet ending at n
 * (GRE's own, in PPTP, always says less than the IP header around it). */
static int fits(const struct rxp_decap *d, uint32_t n)
{
	for (unsigned i = 0; i < d->nlayers; i++) {
		const struct rxp_layer *l = &d->layer[i];
		uint32_t need = n - l->off;

		if (l->type == RXP_LAYER_NFLOG)
			need = n - l->aux;
		else if (l->type == RXP_LAYER_IPV6)
			need -= 40;
		else if (l->type == RXP_LAYER_PPPOE)
			need -= 6;
		else if (l->type == RXP_LAYER_GTPU)
			need -= 8;
		else if (l->type != RXP_LAYER_IPV4 && l->type != RXP_LAYER_UDP)
			continue;
		if (need > 65535)
			return 0;
	}
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rxp_decap d, save;
	uint32_t lt, len, newlen, iplen, n;
	uint8_t *frame, *out;
	bool frag;

	if (size < 3 || size > 70000)
		return 0;
	lt = data[0] < 2 * FZ_NLT ? fz_linktypes[data[0] % FZ_NLT] : data[0];
	newlen = g16(data + 1);
	len = (uint32_t)size - 3;
	frame = malloc(len ? len : 1); /* exactly len bytes: ASan sees overreads */
	memcpy(frame, data + 3, len);
	if (rxp_decap_link(&d, lt, frame, len)) {
		free(frame);
		return 0;
	}
	check_layers(&d, len);
	for (int depth = 0; depth < 8; depth++) {
		int r;

		if (rxp_decap_ip_info(frame + d.ip_off, len - d.ip_off, &iplen, &frag) ||
		    iplen > len - d.ip_off || frag)
			break;
		save = d;
		r = rxp_decap_tunnel(&d, frame + d.ip_off, iplen);
		if (r <= 0) {
			if (memcmp(&d, &save, offsetof(struct rxp_decap, layer)))
				__builtin_trap();
			break;
		}
		check_layers(&d, len);
		if (d.ip_off <= save.ip_off || d.tunnels != save.tunnels + 1)
			__builtin_trap();
	}
	/* The headers in front of a new inner IPv4 packet of newlen bytes. */
	if (newlen < 20)
		newlen = 20;
	n = d.ip_off + newlen;
	out = calloc(1, n);
	memcpy(out, frame, d.ip_off);
	out[d.ip_off] = 0x45;
	out[d.ip_off + 2] = (uint8_t)(newlen >> 8);
	out[d.ip_off + 3] = (uint8_t)newlen;
	if (rxp_decap_fixup(&d, out, n) == 0) {
		check_fixed(&d, out, n);
	} else {
		if (fits(&d, n))
			__builtin_trap(); /* refused what every field could say */
		if (d.tunnels && rxp_decap_strip(&d, out, 4) == 0) {
			memmove(out + d.ip_off, out + (n - newlen), newlen);
			check_layers(&d, d.ip_off + newlen);
			if (rxp_decap_fixup(&d, out, d.ip_off + newlen) == 0)
				check_fixed(&d, out, d.ip_off + newlen);
		}
	}
	free(out);
	free(frame);
	return 0;
}
