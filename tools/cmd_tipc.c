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
 * checks the same file independently (tests/cli/tipc_tshark.sh).
 */
#include <errno.h>
#include <getopt.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "opt.h"
#include "rxpath/ipid.h"
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
static void describe(FILE *out, unsigned frame, const uint8_t *t, uint32_t len, unsigned reasm)
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
		fprintf(out, "expect\t%u\t%s\t%s\t%u\t\t\n", frame, users, sizes,
			rxp_tipc_get(t, RXP_TIPC_F_MSGCNT));
		return;
	}
	if (user != RXP_TIPC_MSG_FRAGMENTER) {
		fprintf(out, "expect\t%u\t%s\t%s\t\t\t\n", frame, users, sizes);
		return;
	}
	/* Wireshark shows the message it reassembled in the LAST frame; we
	 * print the one our link delivered from the same frame. */
	if (reasm)
		fprintf(out, "expect\t%u\t%s,%u\t%s,%u\t\t%u\t%u\n", frame, users, last_user, sizes,
			last_size, rxp_tipc_get(t, RXP_TIPC_F_FRAGM_NO), rxp_tipc_type(t));
	else
		fprintf(out, "expect\t%u\t%s\t%s\t\t%u\t%u\n", frame, users, sizes,
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

#define CMD "tipc"

static void usage(FILE *f)
{
	fprintf(f, "usage: rxpath tipc pcap OUT [--mtu N]\n\n"
		   "Builds a fixed mix of TIPC messages (bundled small messages, fragmented\n"
		   "large ones, lone messages, CONN_MANAGER, NAME_DISTRIBUTOR), sends them\n"
		   "through rxpath's TIPC-over-UDP bearer to a peer with IP MTU N (576..65535,\n"
		   "default 1500) and writes the datagrams to OUT as an Ethernet pcap (- for\n"
		   "stdout). Each frame is received back through a TIPC link; a line per frame\n"
		   "says what rxpath's codec read (the fields of tshark -T fields), then the\n"
		   "link's counters (on stderr when OUT is -).\n\n"
		   "  --mtu N     the peer's IP MTU\n"
		   "  -h, --help  this text\n\n"
		   "Exit status: 0 ok; 1 a message was not delivered or a packet leaked; 2 bad\n"
		   "usage or OUT not writable.\n");
}

static int cmd_tipc(int argc, char **argv)
{
	static const struct option lo[] = {
		{"mtu", required_argument, 0, 'm'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
	struct rxp_pktpool_config c = {.name = "tipc", .n_pkts = 1024, .n_large = 32};
	struct rxp_tipc_udp_peer peer = {
		.saddr = htonl(0x0a000101), .daddr = htonl(0x0a000102), .mtu = 1500};
	struct rxp_pkt_queue msgs, outq;
	struct rxp_tipc_link l;
	struct rxp_pktpool *pp;
	pcap_dumper_t *dump;
	pcap_t *pc;
	struct rxp_pkt *d;
	unsigned frame = 0;
	int n;

	uint64_t mtu = 1500;
	const char *path;
	FILE *out = stdout;
	int o;

	opterr = 0;
	optind = 1;
	while ((o = getopt_long(argc, argv, ":h", lo, NULL)) != -1) {
		switch (o) {
		case 'm':
			if (rxp_opt_u64(CMD, "--mtu", optarg, RXP_NUM_PLAIN, 576, 65535, &mtu))
				return RXP_EXIT_USAGE;
			break;
		case 'h':
			usage(stdout);
			return RXP_EXIT_OK;
		default:
			return rxp_opt_getopt_error(CMD, o, argc, argv);
		}
	}
	if (optind >= argc)
		return rxp_usage_error(CMD, "which action? 'pcap OUT' (see rxpath tipc --help)");
	if (strcmp(argv[optind], "pcap"))
		return rxp_usage_error(CMD, "unknown action '%s' (see rxpath tipc --help)",
				       argv[optind]);
	if (optind + 2 != argc)
		return rxp_usage_error(
			CMD, optind + 2 > argc ? "pcap needs OUT" : "unexpected argument '%s'",
			argv[argc - 1]);
	path = argv[optind + 1];
	if (!strcmp(path, "-")) {
		if (isatty(STDOUT_FILENO))
			return rxp_usage_error(CMD, "refusing to write a capture to a terminal");
		out = stderr;
	}
	peer.mtu = (uint32_t)mtu;
	pp = rxp_pktpool_create(&c);
	/* the datagrams' IPv4 IDs, as a real sender's: a table of the smallest
	 * real size with a random key */
	peer.ids = rxp_ipid_create(&(struct rxp_ipid_config){.n_buckets = RXP_IPID_MIN_BUCKETS});
	if (!pp || !peer.ids) {
		fprintf(stderr, "rxpath tipc: cannot set up: %s\n", strerror(errno));
		rxp_ipid_destroy(peer.ids);
		rxp_pktpool_destroy(pp);
		return RXP_EXIT_FAIL;
	}
	rxp_pkt_queue_init(&msgs);
	rxp_pkt_queue_init(&outq);
	for (unsigned i = 0; i < 12; i++) /* bundled */
		add(pp, &msgs, i & 3, i & 1 ? 24 : 40, 40 + i * 7, 100 + i);
	add(pp, &msgs, 2, 40, 5000, 200); /* fragmented */
	add(pp, &msgs, 1, 40, 1300, 201); /* lone: no room to bundle */
	add(pp, &msgs, 3, 40, 20000, 202); /* fragmented */
	add(pp, &msgs, RXP_TIPC_CONN_MANAGER, 40, 8, 203); /* bundled */
	add(pp, &msgs, RXP_TIPC_NAME_DISTRIBUTOR, 40, 20, 0);
	add(pp, &msgs, 0, 24, 1400, 204); /* lone */
	n = rxp_tipc_udp_build(pp, &peer, &msgs, &outq);
	rxp_ipid_destroy(peer.ids);
	if (n < 0) {
		fprintf(stderr, "rxpath tipc: cannot build the datagrams: %s\n", strerror(-n));
		rxp_pkt_queue_purge(&outq, RXP_DROP_NOT_SPECIFIED);
		rxp_pktpool_destroy(pp);
		return RXP_EXIT_FAIL;
	}
	pc = pcap_open_dead(DLT_EN10MB, 65535);
	{
		FILE *f = strcmp(path, "-") ? fopen(path, "wb") : stdout;

		dump = pc && f ? pcap_dump_fopen(pc, f) : NULL;
		if (!dump) {
			fprintf(stderr, "rxpath tipc: cannot write %s: %s\n", path,
				strerror(f ? EIO : errno));
			if (f && f != stdout)
				fclose(f);
			if (pc)
				pcap_close(pc);
			rxp_pkt_queue_purge(&outq, RXP_DROP_NOT_SPECIFIED);
			rxp_pktpool_destroy(pp);
			return RXP_EXIT_USAGE;
		}
	}
	rxp_tipc_link_init(&l, pp);
	rxp_tipc_link_bind(&l, RXP_TIPC_PORT_ANY, sink, NULL);
	rxp_tipc_link_set_node_sink(&l, sink, NULL);
	while ((d = rxp_pkt_dequeue(&outq))) {
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
			rxp_tipc_link_rcv(&l, d);
			describe(out, ++frame, frameb + RXP_ETH_HLEN + 28,
				 ph.len - RXP_ETH_HLEN - 28, l.st.reassembled != before);
		}
	}
	pcap_dump_close(dump);
	pcap_close(pc);
	fprintf(out,
		"rx: packets=%lu bundles=%lu bundled_msgs=%lu fragments=%lu reassembled=%lu "
		"delivered=%u drops=%lu\n",
		(unsigned long)l.st.packets, (unsigned long)l.st.bundles,
		(unsigned long)l.st.bundled_msgs, (unsigned long)l.st.fragments,
		(unsigned long)l.st.reassembled, delivered, (unsigned long)l.st.drops);
	rxp_tipc_link_reset(&l);
	if (rxp_pktpool_destroy(pp)) {
		fprintf(stderr, "rxpath tipc: FAILED: packets leaked\n");
		return RXP_EXIT_FAIL;
	}
	if (delivered != 18) {
		fprintf(stderr, "rxpath tipc: FAILED: %u of 18 messages delivered\n", delivered);
		return RXP_EXIT_FAIL;
	}
	return RXP_EXIT_OK;
}

RXP_COMMAND(tipc, "tipc", "write TIPC-over-UDP traffic built by rxpath to a pcap", cmd_tipc);
