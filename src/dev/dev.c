/*
 * What every device shares: the generic entry points, the RSS hash and
 * classification of a frame's L3 header.
 *
 * Owns nothing. The RSS hash covers only the L3 source and destination
 * addresses, never the ports: IP fragments after the first carry none, and
 * every fragment of a datagram must land on the same queue (and worker).
 */
#include <errno.h>
#include <string.h>

#include "rxpath/dev.h"
#include "rxpath/wire.h"

int rxp_dev_wait(struct rxp_dev *d, unsigned q, int timeout_ms)
{
	return d->ops->wait ? d->ops->wait(d, q, timeout_ms) : 0;
}

int rxp_dev_poll_fd(struct rxp_dev *d, unsigned q)
{
	while (d && !d->ops->poll_fd)
		d = d->inner;
	return d ? d->ops->poll_fd(d, q) : -1;
}

int rxp_dev_set_xdp(struct rxp_dev *d, rxp_xdp_prog_fn prog, void *ctx)
{
	while (d && !d->ops->set_xdp)
		d = d->inner;
	return d ? d->ops->set_xdp(d, prog, ctx) : -EOPNOTSUPP;
}

void rxp_dev_get_stats(struct rxp_dev *d, struct rxp_dev_stats *st)
{
	memset(st, 0, sizeof(*st));
	d->ops->get_stats(d, st);
}

uint64_t rxp_dev_close(struct rxp_dev *d)
{
	return d ? d->ops->close(d) : 0;
}

/* Offset of the L3 header and its ethertype; -1 if not IP. */
static int l3_offset(const uint8_t *f, uint32_t len, bool l2, uint16_t *proto)
{
	uint32_t off = 0;
	uint16_t et;

	if (!l2) {
		if (len < 1)
			return -1;
		*proto = (f[0] >> 4) == 6 ? RXP_ETH_P_IPV6 : (f[0] >> 4) == 4 ? RXP_ETH_P_IP : 0;
		return *proto ? 0 : -1;
	}
	if (len < RXP_ETH_HLEN)
		return -1;
	et = (uint16_t)(f[12] << 8 | f[13]);
	off = RXP_ETH_HLEN;
	/* Up to two VLAN tags (802.1Q, 802.1ad). */
	for (int i = 0; i < 2 && (et == RXP_ETH_P_8021Q || et == 0x88a8); i++) {
		if (len < off + 4)
			return -1;
		et = (uint16_t)(f[off + 2] << 8 | f[off + 3]);
		off += 4;
	}
	if (et != RXP_ETH_P_IP && et != RXP_ETH_P_IPV6)
		return -1;
	*proto = et;
	return (int)off;
}

static inline uint32_t mix32(uint32_t h, uint32_t k)
{
	k *= 0xcc9e2d51u;
	k = (k << 15) | (k >> 17);
	k *= 0x1b873593u;
	h ^= k;
	h = (h << 13) | (h >> 19);
	return h * 5 + 0xe6546b64u;
}

uint32_t rxp_rss_hash(const uint8_t *f, uint32_t len, bool l2)
{
	uint16_t proto;
	int off = l3_offset(f, len, l2, &proto);
	uint32_t h = 0x9747b28cu, w, n, a;

	if (off < 0)
		return 0;
	if (proto == RXP_ETH_P_IP) {
		a = (uint32_t)off + 12;
		n = 8;
	} else {
		a = (uint32_t)off + 8;
		n = 32;
	}
	if (len < a + n)
		return 0;
	for (uint32_t i = 0; i < n; i += 4) {
		memcpy(&w, f + a + i, 4);
		h = mix32(h, w);
	}
	h ^= n;
	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	h ^= h >> 16;
	return h;
}

void rxp_dev_classify(struct rxp_pkt *pkt, bool l2)
{
	uint8_t buf[64];
	uint32_t n = pkt->len < sizeof(buf) ? pkt->len : sizeof(buf);
	const uint8_t *f = rxp_pkt_header_pointer(pkt, 0, n, buf);
	uint16_t proto = 0;
	int off;

	if (!f)
		return;
	off = l3_offset(f, n, l2, &proto);
	if (off < 0)
		return;
	pkt->protocol = proto;
	pkt->network_off = (uint16_t)(pkt->data - pkt->head + off);
	pkt->hash = rxp_rss_hash(f, n, l2);
}
