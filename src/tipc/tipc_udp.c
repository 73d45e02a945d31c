/*
 * TIPC UDP bearer (include/rxpath/tipc.h): TIPC messages as the bare
 * payload of UDP datagrams, port 6118 by default.
 *
 * Receive is the bearer's peer table (tipc_bearer.c). Send:
 * rxp_tipc_udp_build() turns a queue of messages into IPv4/UDP datagrams
 * for one peer, bundling what fits the path MTU and fragmenting what does
 * not. IPv4 IDs come from the peer's IP ID table (rxpath/ipid.h).
 *
 * Not implemented: the link protocol (sequence numbers, acknowledgements,
 * retransmission, RESET/ACTIVATE, discovery over LINK_CONFIG), multicast and
 * replicast peer learning, IPv6. Messages go out with seqno 0.
 *
 * Invariants: every message taken from the input queue is either part of a
 * datagram on the output queue or dropped with a counted reason; datagrams
 * on the output queue have their IPv4 and UDP headers in the linear part,
 * valid checksums, and may carry the message data as page fragments
 * (zero-copy fragments reference the sender's message).
 */
#include <errno.h>
#include <string.h>

#include "rxpath/compiler.h"
#include "rxpath/ipid.h"
#include "rxpath/tipc.h"
#include "rxpath/wire.h"

#define ENCAP_LEN (RXP_IPV4_HLEN + sizeof(struct rxp_udphdr))

uint32_t rxp_tipc_udp_tipc_mtu(const struct rxp_tipc_udp_peer *peer)
{
	uint32_t mtu = peer->mtu > 65535 ? 65535 : peer->mtu;

	return mtu > ENCAP_LEN ? mtu - (uint32_t)ENCAP_LEN : 0;
}

/* Prepend IPv4 and UDP headers to a TIPC message and queue it on out.
 * Consumes pkt. 0 or -ENOMEM (pkt dropped). */
static int encap(struct rxp_pktpool *pp, struct rxp_tipc_udp_peer *peer, struct rxp_pkt *pkt,
		 struct rxp_pkt_queue *out)
{
	struct rxp_udphdr *uh;
	struct rxp_iphdr *ip;
	uint32_t len = pkt->len, sum;

	int64_t csum;

	/* Headers go in front of the linear part, which must be ours to
	 * write; page fragments (zero-copy fragment data) stay as they are. */
	if (rxp_pkt_cloned(pkt) || rxp_pkt_headroom(pkt) < ENCAP_LEN) {
		struct rxp_pkt *c = rxp_pkt_alloc(pp, len);

		if (!c) {
			rxp_pkt_drop(pkt, RXP_DROP_NOMEM);
			return -ENOMEM;
		}
		rxp_pkt_copy_bits(pkt, 0, rxp_pkt_put(c, len), len);
		rxp_pkt_consume(pkt);
		pkt = c;
	}
	uh = (struct rxp_udphdr *)rxp_pkt_push(pkt, sizeof(*uh));
	uh->source = htons(peer->sport ? peer->sport : RXP_TIPC_UDP_PORT);
	uh->dest = htons(peer->dport ? peer->dport : RXP_TIPC_UDP_PORT);
	uh->len = htons((uint16_t)(len + sizeof(*uh)));
	uh->check = 0;
	ip = (struct rxp_iphdr *)rxp_pkt_push(pkt, RXP_IPV4_HLEN);
	rxp_ipv4_build(ip, RXP_IPPROTO_UDP, (uint16_t)(len + ENCAP_LEN),
		       rxp_ipid_reserve(peer->ids, peer->saddr, peer->daddr, RXP_IPPROTO_UDP, 1),
		       RXP_IP_DF, 64, peer->saddr, peer->daddr);
	/* UDP checksum over the pseudo header, UDP header and payload. */
	sum = rxp_pseudo_sum(&ip->saddr, &ip->daddr, 4, RXP_IPPROTO_UDP,
			     len + (uint32_t)sizeof(*uh));
	csum = rxp_pkt_csum(pkt, RXP_IPV4_HLEN, len + (uint32_t)sizeof(*uh), sum);
	if (csum < 0) {
		rxp_pkt_drop(pkt, RXP_DROP_NOT_SPECIFIED);
		return -EINVAL;
	}
	uh->check = rxp_udp_csum_field((uint32_t)csum);
	rxp_pkt_enqueue(out, pkt);
	return 0;
}

static unsigned msg_size(const struct rxp_pkt *m)
{
	uint8_t buf[RXP_TIPC_MIN_H_SIZE];
	const uint8_t *h = rxp_pkt_header_pointer(m, 0, sizeof(buf), buf);

	return h ? rxp_tipc_size(h) : 0;
}

struct sender {
	struct rxp_pktpool *pp;
	struct rxp_tipc_udp_peer *peer;
	struct rxp_pkt_queue *out;
	uint32_t tmtu;
	struct rxp_pkt *lone; /* one message waiting for company */
	struct rxp_pkt *bundle; /* a bundle still accepting messages */
	int n, err;
};

static void emit(struct sender *s, struct rxp_pkt *pkt)
{
	int r = encap(s->pp, s->peer, pkt, s->out);

	if (r)
		s->err = r;
	else
		s->n++;
}

static void flush(struct sender *s)
{
	if (s->lone)
		emit(s, s->lone);
	if (s->bundle)
		emit(s, s->bundle);
	s->lone = s->bundle = NULL;
}

/* Consumes m. */
static void send_one(struct sender *s, struct rxp_pkt *m)
{
	uint32_t size = msg_size(m);

	if (rxp_tipc_validate_pkt(m)) {
		rxp_pkt_drop(m, RXP_DROP_TIPC_HDR);
		s->err = -EINVAL;
		return;
	}
	if (size > s->tmtu) {
		struct rxp_pkt_queue frags;
		int r;

		flush(s);
		rxp_pkt_queue_init(&frags);
		r = rxp_tipc_fragment(s->pp, m, s->tmtu, &frags);
		if (r < 0) {
			s->err = r;
			return;
		}
		while (frags.head)
			emit(s, rxp_pkt_dequeue(&frags));
		return;
	}
	if (s->bundle) {
		if (rxp_tipc_bundle_add(s->bundle, m, s->tmtu) == 0) {
			rxp_pkt_consume(m);
			return;
		}
		flush(s);
	} else if (s->lone) {
		struct rxp_pkt *b = rxp_tipc_bundle_new(s->pp, s->tmtu, 0, 0);

		if (b && rxp_tipc_bundle_add(b, s->lone, s->tmtu) == 0 &&
		    rxp_tipc_bundle_add(b, m, s->tmtu) == 0) {
			rxp_pkt_consume(s->lone);
			rxp_pkt_consume(m);
			s->lone = NULL;
			s->bundle = b;
			return;
		}
		rxp_pkt_consume(b); /* an unsent, empty builder: no message lost */
		flush(s);
	}
	s->lone = m;
}

int rxp_tipc_udp_build(struct rxp_pktpool *pp, struct rxp_tipc_udp_peer *peer,
		       struct rxp_pkt_queue *msgs, struct rxp_pkt_queue *out)
{
	struct sender s = {.pp = pp, .peer = peer, .out = out};
	struct rxp_pkt *m;

	s.tmtu = rxp_tipc_udp_tipc_mtu(peer);
	if (!peer->ids) {
		rxp_pkt_queue_purge(msgs, RXP_DROP_NOT_SPECIFIED); /* a caller's mistake */
		return -EINVAL;
	}
	if (s.tmtu < 88) {
		rxp_pkt_queue_purge(msgs, RXP_DROP_PKT_TOO_BIG);
		return -EINVAL;
	}
	while ((m = rxp_pkt_dequeue(msgs)))
		send_one(&s, m);
	flush(&s);
	return s.err ? s.err : s.n;
}
