/*
 * rxpath tipc: TIPC-over-UDP traffic built by rxpath's TIPC layer.
 *
 *   rxpath tipc pcap OUT.pcap [--mtu N]
 *
 * builds a fixed mix of messages (small data messages that get bundled, a
 * large one that gets fragmented, lone messages, CONN_MANAGER and
 * NAME_DISTRIBUTOR), sends them through rxp_tipc_udp_build() to a peer with
 * the given IP MTU (default 1500) and writes the datagrams as an Ethernet
 * pcap. It receives every datagram through a link and prints, per frame,
 * what its own codec read from the bytes written and what the link
 * reassembled ("expect", frame, users, sizes, msgcnt, fragm_no, fragment
 * type: the fields and list format of tshark -T fields), then the link's
 * counters. Wireshark
 * checks the same file independently (tests/netns/tipc_tshark.sh).
 */
#include <errno.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "rxpath/pktpool.h"
#include "rxpath/tipc.h"
#include "rxpath/wire.h"

static unsigned delivered, last_user, last_size;

static void sink(void *arg, struct rxp_pkt *pkt)
{
	uint8_t buf[RXP_TIPC_MIN_H_SIZE];
	const uint8_t *h = rxp_pkt_header_pointer(pkt, 0, sizeof(buf), buf);

	delivered++;
	last_user = rxp_tipc_user(h);
	last_size = pkt->len;
	rxp_pkt_consume(pkt);
}

/* One line in the order of tshark's fields: frame, users, sizes, msgcnt,
 * fragment number, fragment type (lists comma-separated like tshark's). */
static void describe(unsigned frame, const uint8_t *t, uint32_t len, unsigned reasm)
{
	char users[1024], sizes[1024];
	uint32_t size = rxp_tipc_size(t), pos;
	unsigned user = rxp_tipc_user(t);
	int nu, ns;

	nu = snprintf(users, sizeof(users), "%u", user);
	ns = snprintf(sizes, sizeof(sizes), "%u", size);
	if (user == RXP_TIPC_MSG_BUNDLER) {
		for (pos = rxp_tipc_hsize(t); pos + 24 <= size && nu < 1000 && ns < 1000;) {
			uint32_t isz = rxp_tipc_size(t + pos);

			if (isz < 24 || isz > len - pos)
				break;
			nu += snprintf(users + nu, sizeof(users) - (size_t)nu, ",%u",
				       rxp_tipc_user(t + pos));
			ns += snprintf(sizes + ns, sizeof(sizes) - (size_t)ns, ",%u", isz);
			pos += (isz + 3) & ~3u;
		}
		printf("expect\t%u\t%s\t%s\t%u\t\t\n", frame, users, sizes,
		       rxp_tipc_get(t, RXP_TIPC_F_MSGCNT));
		return;
	}
	if (user != RXP_TIPC_MSG_FRAGMENTER) {
		printf("expect\t%u\t%s\t%s\t\t\t\n", frame, users, sizes);
		return;
	}
	/* Wireshark shows the message it reassembled in the LAST frame; we
	 * print the one our link delivered from the same frame. */
	if (reasm)
		printf("expect\t%u\t%s,%u\t%s,%u\t\t%u\t%u\n", frame, users, last_user, sizes,
		       last_size, rxp_tipc_get(t, RXP_TIPC_F_FRAGM_NO), rxp_tipc_type(t));
	else
		printf("expect\t%u\t%s\t%s\t\t%u\t%u\n", frame, users, sizes,
		       rxp_tipc_get(t, RXP_TIPC_F_FRAGM_NO), rxp_tipc_type(t));
}

static void add(struct rxp_pktpool *pp, struct rxp_pkt_queue *q, unsigned user, unsigned hsize,
		uint32_t len, uint32_t port)
{
	static uint8_t payload[70000];
	struct rxp_pkt *m;

	for (uint32_t i = 0; i < len; i++)
		payload[i] = (uint8_t)(i * 13 + port);
	m = rxp_tipc_msg_new(pp, user, user < 4 ? RXP_TIPC_NAMED_MSG : 0, hsize, 0x1001001,
			     0x1001002, port, payload, len);
	if (m)
		rxp_pkt_enqueue(q, m);
}

static int cmd_tipc(int argc, char **argv)
{
	struct rxp_pktpool_config c = {.name = "tipc", .n_pkts = 1024, .n_large = 32};
	struct rxp_tipc_udp_peer peer = {
		.saddr = htonl(0x0a000101), .daddr = htonl(0x0a000102), .mtu = 1500};
	struct rxp_pkt_queue msgs, out;
	struct rxp_tipc_link l;
	struct rxp_pktpool *pp;
	pcap_dumper_t *dump;
	pcap_t *pc;
	struct rxp_pkt *d;
	unsigned frame = 0;
	int n;

	if (argc < 3 || strcmp(argv[1], "pcap")) {
		fprintf(stderr, "usage: rxpath tipc pcap OUT.pcap [--mtu N]\n");
		return RXP_EXIT_USAGE;
	}
	if (argc >= 5 && !strcmp(argv[3], "--mtu"))
		peer.mtu = (uint32_t)strtoul(argv[4], NULL, 0);
	pp = rxp_pktpool_create(&c);
	if (!pp)
		return RXP_EXIT_FAIL;
	rxp_pkt_queue_init(&msgs);
	rxp_pkt_queue_init(&out);
	for (unsigned i = 0; i < 12; i++) /* bundled */
		add(pp, &msgs, i & 3, i & 1 ? 24 : 40, 40 + i * 7, 100 + i);
	add(pp, &msgs, 2, 40, 5000, 200); /* fragmented */
	add(pp, &msgs, 1, 40, 1300, 201); /* lone: no room to bundle */
	add(pp, &msgs, 3, 40, 20000, 202); /* fragmented */
	add(pp, &msgs, RXP_TIPC_CONN_MANAGER, 40, 8, 203); /* bundled */
	add(pp, &msgs, RXP_TIPC_NAME_DISTRIBUTOR, 40, 20, 0);
	add(pp, &msgs, 0, 24, 1400, 204); /* lone */
	n = rxp_tipc_udp_build(pp, &peer, &msgs, &out);
	if (n < 0) {
		fprintf(stderr, "rxpath tipc: build failed: %s\n", strerror(-n));
		return RXP_EXIT_FAIL;
	}
	pc = pcap_open_dead(DLT_EN10MB, 65535);
	dump = pc ? pcap_dump_open(pc, argv[2]) : NULL;
	if (!dump) {
		fprintf(stderr, "rxpath tipc: %s: %s\n", argv[2], pc ? pcap_geterr(pc) : "pcap");
		return RXP_EXIT_USAGE;
	}
	rxp_tipc_link_init(&l, pp);
	rxp_tipc_link_bind(&l, RXP_TIPC_PORT_ANY, sink, NULL);
	rxp_tipc_link_set_node_sink(&l, sink, NULL);
	while ((d = rxp_pkt_dequeue(&out))) {
		static uint8_t frameb[RXP_ETH_HLEN + 65536];
		struct pcap_pkthdr ph = {.caplen = RXP_ETH_HLEN + d->len,
					 .len = RXP_ETH_HLEN + d->len};
		static const uint8_t eth[RXP_ETH_HLEN] = {2, 0, 0, 0, 0, 2,    2,
							  0, 0, 0, 0, 1, 0x08, 0x00};

		ph.ts.tv_sec = 1700000000;
		ph.ts.tv_usec = (suseconds_t)frame;
		memcpy(frameb, eth, sizeof(eth));
		rxp_pkt_copy_bits(d, 0, frameb + RXP_ETH_HLEN, d->len);
		pcap_dump((u_char *)dump, &ph, frameb);
		{
			uint64_t before = l.st.reassembled;

			rxp_pkt_pull(d, 28);
			rxp_tipc_udp_rcv(&l, d);
			describe(++frame, frameb + RXP_ETH_HLEN + 28, ph.len - RXP_ETH_HLEN - 28,
				 l.st.reassembled != before);
		}
	}
	pcap_dump_close(dump);
	pcap_close(pc);
	printf("rx: packets=%lu bundles=%lu bundled_msgs=%lu fragments=%lu reassembled=%lu "
	       "delivered=%u drops=%lu\n",
	       (unsigned long)l.st.packets, (unsigned long)l.st.bundles,
	       (unsigned long)l.st.bundled_msgs, (unsigned long)l.st.fragments,
	       (unsigned long)l.st.reassembled, delivered, (unsigned long)l.st.drops);
	rxp_tipc_link_reset(&l);
	if (rxp_pktpool_destroy(pp)) {
		fprintf(stderr, "rxpath tipc: leak\n");
		return RXP_EXIT_FAIL;
	}
	return delivered == 18 ? RXP_EXIT_OK : RXP_EXIT_FAIL;
}

RXP_COMMAND(tipc, "tipc", "write TIPC-over-UDP traffic built by rxpath to a pcap", cmd_tipc);
