/*
 * rxpath fragsend: build one UDP datagram, fragment it with rxpath's
 * rxp_ip_fragment() (IDs from rxpath's generator) and send the fragments as
 * Ethernet frames over AF_PACKET. A test helper (tests/netns/ipfrag_kernel.sh
 * uses it so that the Linux kernel reassembles what rxpath cut); it needs
 * CAP_NET_RAW. Payload byte i is (seed + i * 131) & 0xff.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cmd.h"
#include "opt.h"
#include "rxpath/ip_output.h"
#include "rxpath/ipid.h"
#include "rxpath/pkt.h"
#include "rxpath/pktpool.h"
#include "rxpath/wire.h"

struct fs_opts {
	const char *ifname, *src, *dst, *dmac;
	unsigned sport, dport, size, mtu, seed, reverse;
};

static void usage(FILE *f)
{
	fprintf(f, "usage: rxpath fragsend --if IFNAME --src ADDR --dst ADDR --dmac MAC\n"
		   "                       [--sport N] [--dport N] [--size BYTES] [--mtu N]\n"
		   "                       [--seed N] [--reverse]\n\n"
		   "Builds one UDP datagram of BYTES payload (IPv4 or IPv6 by the address\n"
		   "form), fragments it with rxp_ip_fragment() for MTU N and sends the\n"
		   "fragments over AF_PACKET on IFNAME to MAC (in reverse order with\n"
		   "--reverse). Payload byte i is (seed + i*131) & 0xff. Needs CAP_NET_RAW.\n"
		   "Defaults: --sport 4000, --dport 5000, --size 4000, --mtu 1500, --seed 1.\n"
		   "Options take their value as the next word or after '='.\n");
}

static int parse_mac(const char *s, uint8_t mac[6])
{
	unsigned v[6];

	if (sscanf(s, "%x:%x:%x:%x:%x:%x", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]) != 6)
		return -1;
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)v[i];
	return 0;
}

static uint16_t udp_csum(const void *saddr, const void *daddr, unsigned alen, const uint8_t *udp,
			 uint32_t len)
{
	return rxp_udp_csum_field(rxp_csum_partial(
		udp, len, rxp_pseudo_sum(saddr, daddr, alen, RXP_IPPROTO_UDP, len)));
}

/* The whole IP datagram (header + UDP + payload) in buf; returns its length. */
static uint32_t build_datagram(const struct fs_opts *o, uint8_t *buf, int *v6)
{
	uint8_t s6[16], d6[16];
	uint32_t s4, d4, ulen = 8 + o->size;
	uint8_t *udp;
	struct rxp_udphdr uh = {.source = htons((uint16_t)o->sport),
				.dest = htons((uint16_t)o->dport),
				.len = htons((uint16_t)(ulen > 65535 ? 0 : ulen))};

	*v6 = strchr(o->src, ':') != NULL;
	if (!*v6 && 20 + ulen > 65535)
		return 0;
	if (*v6) {
		if (inet_pton(AF_INET6, o->src, s6) != 1 || inet_pton(AF_INET6, o->dst, d6) != 1)
			return 0;
		rxp_ipv6_build(buf, 0, 0, (uint16_t)ulen, RXP_IPPROTO_UDP, 64, s6, d6);
		udp = buf + RXP_IPV6_HLEN;
	} else {
		if (inet_pton(AF_INET, o->src, &s4) != 1 || inet_pton(AF_INET, o->dst, &d4) != 1)
			return 0;
		rxp_ipv4_build(buf, RXP_IPPROTO_UDP, (uint16_t)(20 + ulen), 0, 0, 64, s4, d4);
		udp = buf + RXP_IPV4_HLEN;
	}
	memcpy(udp, &uh, sizeof(uh));
	for (uint32_t i = 0; i < o->size; i++)
		udp[8 + i] = (uint8_t)(o->seed + i * 131u);
	uh.check = *v6 ? udp_csum(s6, d6, 16, udp, ulen) : udp_csum(&s4, &d4, 4, udp, ulen);
	memcpy(udp, &uh, sizeof(uh));
	return (uint32_t)(udp - buf) + ulen;
}

static int send_frames(const struct fs_opts *o, struct rxp_pkt_queue *q, int v6)
{
	struct sockaddr_ll sll = {.sll_family = AF_PACKET, .sll_halen = 6};
	struct rxp_pkt *f, *arr[2048];
	uint8_t frame[65536 + RXP_ETH_HLEN];
	struct rxp_ethhdr eh = {.src = {0x02, 0, 0, 0, 0, 5}};
	unsigned n = 0;
	int fd, rc = 0;

	if (parse_mac(o->dmac, eh.dst)) { /* (checked before: not reached) */
		rxp_pkt_queue_purge(q, RXP_DROP_NOT_SPECIFIED);
		return rxp_usage_error("fragsend", "bad --dmac '%s' (xx:xx:xx:xx:xx:xx)", o->dmac);
	}
	eh.proto = htons(v6 ? RXP_ETH_P_IPV6 : RXP_ETH_P_IP);
	sll.sll_ifindex = (int)if_nametoindex(o->ifname);
	memcpy(sll.sll_addr, eh.dst, 6);
	fd = socket(AF_PACKET, SOCK_RAW, 0);
	if (fd < 0 || !sll.sll_ifindex) {
		fprintf(stderr, "rxpath fragsend: cannot send on %s: %s\n", o->ifname,
			strerror(fd < 0 ? errno : ENODEV));
		if (fd >= 0)
			close(fd);
		rxp_pkt_queue_purge(q, RXP_DROP_NOT_SPECIFIED);
		return RXP_EXIT_USAGE;
	}
	while ((f = rxp_pkt_dequeue(q)))
		if (n < 2048)
			arr[n++] = f;
		else
			rxp_pkt_consume(f);
	for (unsigned k = 0; k < n; k++) {
		struct rxp_pkt *p = arr[o->reverse ? n - 1 - k : k];

		memcpy(frame, &eh, RXP_ETH_HLEN);
		rxp_pkt_copy_bits(p, 0, frame + RXP_ETH_HLEN, p->len);
		if (sendto(fd, frame, RXP_ETH_HLEN + p->len, 0, (struct sockaddr *)&sll,
			   sizeof(sll)) < 0) {
			fprintf(stderr, "rxpath fragsend: sendto: %s\n", strerror(errno));
			rc = RXP_EXIT_FAIL;
		}
	}
	for (unsigned k = 0; k < n; k++)
		rxp_pkt_consume(arr[k]);
	close(fd);
	printf("rxpath fragsend: %u fragment(s) sent\n", n);
	return rc;
}

static struct rxp_page static_pg;

static void static_release(struct rxp_page *pg)
{
	(void)pg; /* the datagram buffer is static */
}

#define CMD "fragsend"

static int fragsend_main(int argc, char **argv)
{
	struct fs_opts o = {.sport = 4000, .dport = 5000, .size = 4000, .mtu = 1500, .seed = 1};
	static uint8_t dgram[65536 + 64];
	struct rxp_pktpool_config pc = {
		.name = "fragsend", .n_pkts = 2048, .n_bufs = 2048, .n_large = 32};
	struct rxp_pktpool *pp;
	struct rxp_ipid_table *ids;
	struct rxp_pkt_queue q;
	struct rxp_pkt *p;
	uint8_t mac[6];
	uint32_t len;
	int v6, rc;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = NULL, *eq;
		const struct {
			const char *name;
			unsigned *dst;
			uint64_t min, max;
		} nums[] = {{"--sport", &o.sport, 0, 65535},
			    {"--dport", &o.dport, 0, 65535},
			    {"--size", &o.size, 0, 65535 - 8},
			    {"--mtu", &o.mtu, 68, 65535},
			    {"--seed", &o.seed, 0, 255}};
		const struct {
			const char *name;
			const char **dst;
		} strs[] = {{"--if", &o.ifname},
			    {"--src", &o.src},
			    {"--dst", &o.dst},
			    {"--dmac", &o.dmac}};
		char name[16];
		int num = -1, str = -1;

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(a, "--reverse")) {
			o.reverse = 1;
			continue;
		} else if (a[0] != '-') {
			return rxp_usage_error(CMD,
					       "unexpected argument '%s' (see rxpath fragsend "
					       "--help)",
					       a);
		}
		/* --opt VALUE or --opt=VALUE, as the other commands take */
		eq = strchr(a, '=');
		snprintf(name, sizeof(name), "%.*s", eq ? (int)(eq - a) : (int)strlen(a), a);
		for (size_t k = 0; k < sizeof(nums) / sizeof(nums[0]); k++)
			if (!strcmp(name, nums[k].name))
				num = (int)k;
		for (size_t k = 0; k < sizeof(strs) / sizeof(strs[0]); k++)
			if (!strcmp(name, strs[k].name))
				str = (int)k;
		if (num < 0 && str < 0)
			return rxp_usage_error(CMD,
					       "unknown option %s (see rxpath fragsend --help)", a);
		if (eq)
			v = eq + 1;
		else if (i + 1 < argc)
			v = argv[++i];
		else
			return rxp_usage_error(CMD,
					       "option %s needs a value (see rxpath fragsend "
					       "--help)",
					       a);
		if (num >= 0) {
			uint64_t x;

			if (rxp_opt_u64(CMD, name, v, RXP_NUM_PLAIN, nums[num].min, nums[num].max,
					&x))
				return RXP_EXIT_USAGE;
			*nums[num].dst = (unsigned)x;
		} else {
			*strs[str].dst = v;
		}
	}
	if (!o.ifname || !o.src || !o.dst || !o.dmac)
		return rxp_usage_error(CMD, "--if, --src, --dst and --dmac are required");
	/* Checked before anything is built, so that a refusal is one line
	 * and nothing is left to free. */
	if (parse_mac(o.dmac, mac))
		return rxp_usage_error(CMD, "bad --dmac '%s' (xx:xx:xx:xx:xx:xx)", o.dmac);
	if (!if_nametoindex(o.ifname))
		return rxp_usage_error(CMD, "cannot send on %s: %s", o.ifname, strerror(ENODEV));
	len = build_datagram(&o, dgram, &v6);
	if (!len)
		return rxp_usage_error(CMD, "bad --src/--dst (IPv4 or IPv6, both the same family) "
					    "or a --size too big for IPv4");
	pp = rxp_pktpool_create(&pc);
	ids = rxp_ipid_create(NULL);
	if (!pp || !ids) {
		fprintf(stderr, "rxpath fragsend: out of memory\n");
		rxp_ipid_destroy(ids);
		if (pp)
			rxp_pktpool_destroy(pp);
		return RXP_EXIT_FAIL;
	}
	p = rxp_pkt_alloc(pp, len);
	if (!p) {
		rc = RXP_EXIT_FAIL;
		goto out;
	}
	/* Headers in the linear part, the UDP payload as up to 16 page frags
	 * over dgram, so the kernel sees what the zero-copy path built. */
	{
		uint32_t hl = len - o.size, chunk = (o.size + 15) / 16, off = hl;

		memcpy(rxp_pkt_put(p, hl), dgram, hl);
		rxp_page_set_refcount(&static_pg, 1);
		static_pg.addr = dgram;
		static_pg.size = len;
		static_pg.release = static_release;
		while (off < len) {
			uint32_t sz = len - off < chunk ? len - off : chunk;

			rxp_page_get(&static_pg);
			rxp_pkt_add_frag(p, &static_pg, off, sz, sz);
			off += sz;
		}
	}
	rxp_pkt_queue_init(&q);
	rc = rxp_ip_fragment(p, o.mtu, ids, &q);
	if (rc < 0) {
		fprintf(stderr, "rxpath fragsend: cannot fragment: %s\n", strerror(-rc));
		rc = RXP_EXIT_FAIL;
		goto out;
	}
	rc = send_frames(&o, &q, v6);
out:
	if (static_pg.release && rxp_page_refcount(&static_pg) != 1) {
		fprintf(stderr, "rxpath fragsend: FAILED: page references leaked\n");
		rc = RXP_EXIT_FAIL;
	}
	rxp_ipid_destroy(ids);
	if (rxp_pktpool_destroy(pp)) {
		fprintf(stderr, "rxpath fragsend: FAILED: packets leaked\n");
		rc = RXP_EXIT_FAIL;
	}
	return rc;
}

RXP_COMMAND(fragsend, "fragsend",
	    "(test helper) fragment a UDP datagram and send it over AF_PACKET", fragsend_main);
