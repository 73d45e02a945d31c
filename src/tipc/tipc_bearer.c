/*
 * The TIPC UDP bearer's receive side (include/rxpath/tipc.h): a table of
 * links keyed by peer (source address, UDP source port).
 *
 * Owns: the links, each made on its peer's first datagram and reset when
 * the bearer is destroyed. The table is small (a worker's few peers) and
 * searched linearly; a peer past it is refused with a counted drop, never
 * made to share another peer's link, whose reassembly it would corrupt.
 * The IP and UDP headers are read where rxpath's UDP delivery left them
 * (linear, at network_off and transport_off), so nothing above the UDP
 * layer is parsed here.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rxpath/tipc.h"
#include "rxpath/wire.h"

#define BEARER_MAX_PEERS 4096

_Static_assert(sizeof(struct rxp_tipc_link_stats) % sizeof(uint64_t) == 0,
	       "the link counters are summed as an array of uint64_t");

struct peer {
	uint8_t addr[16]; /* IPv4 in the first 4 bytes, the rest 0 */
	uint16_t port; /* network order */
	struct rxp_tipc_link link;
};

struct rxp_tipc_bearer {
	struct rxp_pktpool *pp;
	rxp_tipc_sink_fn sink;
	void *arg;
	unsigned max, n;
	uint64_t peers_full;
	struct peer peers[];
};

struct rxp_tipc_bearer *rxp_tipc_bearer_create(struct rxp_pktpool *pp, unsigned npeers,
					       rxp_tipc_sink_fn sink, void *arg)
{
	struct rxp_tipc_bearer *b;

	if (!pp || !sink || !npeers || npeers > BEARER_MAX_PEERS) {
		errno = EINVAL;
		return NULL;
	}
	b = calloc(1, sizeof(*b) + npeers * sizeof(b->peers[0]));
	if (!b)
		return NULL;
	b->pp = pp;
	b->sink = sink;
	b->arg = arg;
	b->max = npeers;
	return b;
}

void rxp_tipc_bearer_destroy(struct rxp_tipc_bearer *b)
{
	if (!b)
		return;
	for (unsigned i = 0; i < b->n; i++)
		rxp_tipc_link_reset(&b->peers[i].link);
	free(b);
}

/* The link of pkt's sender, made if new; NULL when the table is full. */
static struct rxp_tipc_link *link_of(struct rxp_tipc_bearer *b, const struct rxp_pkt *pkt)
{
	const uint8_t *ip = pkt->head + pkt->network_off;
	const struct rxp_udphdr *uh = (const void *)(pkt->head + pkt->transport_off);
	uint8_t addr[16] = {0};
	struct peer *p;

	if ((ip[0] >> 4) == 4)
		memcpy(addr, ip + 12, 4);
	else
		memcpy(addr, ip + 8, 16);
	for (unsigned i = 0; i < b->n; i++)
		if (b->peers[i].port == uh->source && !memcmp(b->peers[i].addr, addr, 16))
			return &b->peers[i].link;
	if (b->n == b->max)
		return NULL;
	p = &b->peers[b->n++];
	memcpy(p->addr, addr, 16);
	p->port = uh->source;
	rxp_tipc_link_init(&p->link, b->pp);
	rxp_tipc_link_bind(&p->link, RXP_TIPC_PORT_ANY, b->sink, b->arg);
	return &p->link;
}

void rxp_tipc_bearer_rcv(void *bearer, struct rxp_pkt *pkt)
{
	struct rxp_tipc_bearer *b = bearer;
	struct rxp_tipc_link *l = link_of(b, pkt);

	if (!l) {
		b->peers_full++;
		rxp_pkt_drop(pkt, RXP_DROP_TIPC_NO_LINK);
		return;
	}
	rxp_tipc_link_rcv(l, pkt);
}

void rxp_tipc_bearer_stats(const struct rxp_tipc_bearer *b, struct rxp_tipc_link_stats *links,
			   uint64_t *peers_full, unsigned *npeers)
{
	if (links) {
		uint64_t *d = (uint64_t *)links;

		memset(links, 0, sizeof(*links));
		for (unsigned i = 0; i < b->n; i++) {
			const uint64_t *s = (const uint64_t *)&b->peers[i].link.st;

			for (size_t k = 0; k < sizeof(*links) / sizeof(uint64_t); k++)
				d[k] += s[k];
		}
	}
	if (peers_full)
		*peers_full = b->peers_full;
	if (npeers)
		*npeers = b->n;
}
