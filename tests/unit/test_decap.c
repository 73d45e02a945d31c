/*
 * Unit and property tests for decapsulation (src/wire/decap_*.c): every
 * link type and tunnel parses to the right IP header, layers and context;
 * a header stack rewritten for a longer packet has every length and
 * checksum right (checked here by independent sums); what cannot hold the
 * packet is refused and the tunnel stripped; and no frame, cut at any
 * length or with random bytes changed, makes a parser read past its end
 * (each is parsed from a heap copy of exactly its length, under ASan) or
 * return a layer outside it. Random cases scale with RXP_PROPERTY_SCALE.
 */
#include <stdlib.h>
#include <string.h>

#include "rxpath/decap.h"
#include "rxpath/wire.h"
#include "rxptest.h"

#define FMAX 70000u

struct fb {
	uint8_t b[FMAX];
	uint32_t n;
};

static void put(struct fb *f, const void *p, uint32_t n)
{
	assert_true(f->n + n <= FMAX);
	memcpy(f->b + f->n, p, n);
	f->n += n;
}

static void put8(struct fb *f, uint8_t v)
{
	put(f, &v, 1);
}

static void put16(struct fb *f, uint16_t v)
{
	uint8_t b[2] = {(uint8_t)(v >> 8), (uint8_t)v};

	put(f, b, 2);
}

static void put16le(struct fb *f, uint16_t v)
{
	uint8_t b[2] = {(uint8_t)v, (uint8_t)(v >> 8)};

	put(f, b, 2);
}

static void put32(struct fb *f, uint32_t v)
{
	put16(f, (uint16_t)(v >> 16));
	put16(f, (uint16_t)v);
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static const uint8_t MAC[12] = {2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1};

static void eth(struct fb *f, uint16_t type)
{
	put(f, MAC, 12);
	put16(f, type);
}

/* A plain one's-complement sum, 16 bits at a time: the independent check. */
static uint32_t sum16(const uint8_t *p, uint32_t n, uint32_t s)
{
	for (uint32_t i = 0; i + 1 < n; i += 2)
		s += (uint32_t)(p[i] << 8 | p[i + 1]);
	if (n & 1)
		s += (uint32_t)p[n - 1] << 8;
	return s;
}

static uint16_t fold(uint32_t s)
{
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)s;
}

/* An IPv4 packet with UDP, plen payload bytes, as a sender writes it. */
static void ip4udp(struct fb *f, uint32_t plen, uint16_t id)
{
	uint32_t s = f->n, tot = 28 + plen;

	put8(f, 0x45);
	put8(f, 0);
	put16(f, (uint16_t)tot);
	put16(f, id);
	put16(f, 0);
	put8(f, 64);
	put8(f, 17);
	put16(f, 0);
	put32(f, 0x0a000001);
	put32(f, 0x0a000002);
	put16(f, 1000);
	put16(f, 9999);
	put16(f, (uint16_t)(8 + plen));
	put16(f, 0);
	for (uint32_t i = 0; i < plen; i++)
		put8(f, (uint8_t)(i * 7 + id));
	f->b[s + 10] = (uint8_t)(~fold(sum16(f->b + s, 20, 0)) >> 8);
	f->b[s + 11] = (uint8_t)~fold(sum16(f->b + s, 20, 0));
}

static void ip6udp(struct fb *f, uint32_t plen)
{
	put32(f, 0x60000000);
	put16(f, (uint16_t)(8 + plen));
	put8(f, 17);
	put8(f, 64);
	for (int i = 0; i < 2; i++) {
		put32(f, 0x20010db8);
		put32(f, 0);
		put32(f, 0);
		put32(f, (uint32_t)(i + 1));
	}
	put16(f, 1000);
	put16(f, 9999);
	put16(f, (uint16_t)(8 + plen));
	put16(f, 0);
	for (uint32_t i = 0; i < plen; i++)
		put8(f, (uint8_t)(i * 3));
}

/* An outer IPv4 header for a payload of plen bytes of protocol proto. */
static void ip4hdr(struct fb *f, uint8_t proto, uint32_t plen, uint32_t src, uint32_t dst)
{
	uint32_t s = f->n;
	uint16_t c;

	put8(f, 0x45);
	put8(f, 0);
	put16(f, (uint16_t)(20 + plen));
	put16(f, 0x1234);
	put16(f, 0);
	put8(f, 64);
	put8(f, proto);
	put16(f, 0);
	put32(f, src);
	put32(f, dst);
	c = (uint16_t)~fold(sum16(f->b + s, 20, 0));
	f->b[s + 10] = (uint8_t)(c >> 8);
	f->b[s + 11] = (uint8_t)c;
}

static void ip6hdr(struct fb *f, uint8_t nh, uint32_t plen)
{
	put32(f, 0x60000000);
	put16(f, (uint16_t)plen);
	put8(f, nh);
	put8(f, 64);
	for (int i = 0; i < 2; i++) {
		put32(f, 0xfd000000);
		put32(f, 0);
		put32(f, 0);
		put32(f, (uint32_t)(0x10 + i));
	}
}

/* The inner packet a frame carries: an IPv4 UDP packet of 100 bytes. */
#define IN4 (28u + 72u)

static void inner4(struct fb *f)
{
	ip4udp(f, 72, 7);
}

struct want {
	int rc;
	uint32_t ip_off;
	uint8_t family;
	uint8_t nlayers;
};

static void expect(uint32_t lt, const struct fb *f, struct want w)
{
	struct rxp_decap d;
	uint8_t *copy = malloc(f->n ? f->n : 1);
	int rc;

	memcpy(copy, f->b, f->n);
	rc = rxp_decap_link(&d, lt, copy, f->n);
	free(copy);
	assert_int_equal(rc, w.rc);
	if (rc)
		return;
	assert_int_equal(d.ip_off, w.ip_off);
	assert_int_equal(d.family, w.family);
	assert_int_equal(d.nlayers, w.nlayers);
}

static void test_link_types(void **state)
{
	struct fb *f = calloc(1, sizeof(*f));
	struct rxp_decap d;

	(void)state;
	/* Ethernet, VLAN, QinQ (ids in the context), MPLS, PPPoE, ARP. */
	eth(f, 0x0800);
	inner4(f);
	expect(RXP_LINKTYPE_ETHERNET, f, (struct want){0, 14, 4, 1});
	f->n = 0;
	eth(f, 0x88a8);
	put16(f, 0x2000 | 10);
	put16(f, 0x8100);
	put16(f, 20);
	put16(f, 0x86dd);
	ip6udp(f, 10);
	expect(RXP_LINKTYPE_ETHERNET, f, (struct want){0, 22, 6, 3});
	assert_int_equal(rxp_decap_link(&d, RXP_LINKTYPE_ETHERNET, f->b, f->n), 0);
	assert_int_equal(d.ctx.nvlan, 2);
	assert_int_equal(d.ctx.vlan[0], 10);
	assert_int_equal(d.ctx.vlan[1], 20);
	assert_int_equal(d.ctx.tunnel, RXP_TUNNEL_NONE);
	f->n = 0;
	eth(f, 0x8847);
	put32(f, 100 << 12 | 64);
	put32(f, 200 << 12 | 0x100 | 64); /* bottom of stack */
	inner4(f);
	expect(RXP_LINKTYPE_ETHERNET, f, (struct want){0, 22, 4, 2});
	f->n = 0;
	eth(f, 0x8864);
	put8(f, 0x11);
	put8(f, 0);
	put16(f, 7);
	put16(f, 2 + IN4);
	put16(f, 0x0021);
	inner4(f);
	expect(RXP_LINKTYPE_ETHERNET, f, (struct want){0, 22, 4, 3});
	f->b[20] = 0x00; /* PPP protocol 0x0057 claims IPv6: the header says 4 */
	f->b[21] = 0x57;
	expect(RXP_LINKTYPE_ETHERNET, f, (struct want){.rc = RXP_DECAP_MALFORMED});
	f->n = 0;
	eth(f, 0x0806);
	put(f, MAC, 12);
	expect(RXP_LINKTYPE_ETHERNET, f, (struct want){.rc = RXP_DECAP_NOT_IP});

	/* Linux cooked v1 and v2. */
	f->n = 0;
	put16(f, 0);
	put16(f, 1);
	put16(f, 6);
	put(f, MAC, 8);
	put16(f, 0x0800);
	inner4(f);
	expect(RXP_LINKTYPE_LINUX_SLL, f, (struct want){0, 16, 4, 1});
	/* its packet type (bytes 0-1): received, then sent by the host */
	assert_false(rxp_decap_outgoing(RXP_LINKTYPE_LINUX_SLL, f->b, f->n));
	f->b[1] = 4;
	assert_true(rxp_decap_outgoing(RXP_LINKTYPE_LINUX_SLL, f->b, f->n));
	assert_false(rxp_decap_outgoing(RXP_LINKTYPE_LINUX_SLL, f->b, 15)); /* cut */
	assert_false(rxp_decap_outgoing(RXP_LINKTYPE_LINUX_SLL2, f->b, f->n)); /* byte 10 */
	assert_false(rxp_decap_outgoing(RXP_LINKTYPE_ETHERNET, f->b, f->n));
	f->b[0] = 1;
	assert_false(rxp_decap_outgoing(RXP_LINKTYPE_LINUX_SLL, f->b, f->n)); /* 0x104 */
	f->n = 0;
	put16(f, 0x86dd);
	put16(f, 0);
	put32(f, 3);
	put16(f, 1);
	put8(f, 0);
	put8(f, 6);
	put(f, MAC, 8);
	ip6udp(f, 10);
	expect(RXP_LINKTYPE_LINUX_SLL2, f, (struct want){0, 20, 6, 1});
	assert_false(rxp_decap_outgoing(RXP_LINKTYPE_LINUX_SLL2, f->b, f->n));
	f->b[10] = 4; /* its packet type */
	assert_true(rxp_decap_outgoing(RXP_LINKTYPE_LINUX_SLL2, f->b, f->n));
	assert_false(rxp_decap_outgoing(RXP_LINKTYPE_LINUX_SLL2, f->b, 19));
	expect(RXP_LINKTYPE_LINUX_SLL2, f, (struct want){0, 20, 6, 1}); /* read the same */

	/* NULL in both byte orders, LOOP, with the BSDs' AF_INET6 values. */
	f->n = 0;
	put16le(f, 2);
	put16le(f, 0);
	inner4(f);
	expect(RXP_LINKTYPE_NULL, f, (struct want){0, 4, 4, 1});
	f->n = 0;
	put32(f, 30);
	ip6udp(f, 4);
	expect(RXP_LINKTYPE_NULL, f, (struct want){0, 4, 6, 1});
	expect(RXP_LINKTYPE_LOOP, f, (struct want){0, 4, 6, 1});
	f->n = 0;
	put32(f, 17);
	inner4(f);
	expect(RXP_LINKTYPE_LOOP, f, (struct want){.rc = RXP_DECAP_NOT_IP});

	/* PPP: framed, unframed, protocol compressed; C-HDLC. */
	f->n = 0;
	put8(f, 0xff);
	put8(f, 0x03);
	put16(f, 0x0021);
	inner4(f);
	expect(RXP_LINKTYPE_PPP_HDLC, f, (struct want){0, 4, 4, 1});
	f->n = 0;
	put8(f, 0x57);
	ip6udp(f, 4);
	expect(RXP_LINKTYPE_PPP, f, (struct want){0, 1, 6, 1});
	f->n = 0;
	put16(f, 0xc021); /* LCP */
	put32(f, 0);
	expect(RXP_LINKTYPE_PPP, f, (struct want){.rc = RXP_DECAP_NOT_IP});
	f->n = 0;
	put8(f, 0x0f);
	put8(f, 0);
	put16(f, 0x0800);
	inner4(f);
	expect(RXP_LINKTYPE_C_HDLC, f, (struct want){0, 4, 4, 1});

	/* Raw IP: the version decides, or must agree with the link type. */
	f->n = 0;
	inner4(f);
	expect(RXP_LINKTYPE_RAW, f, (struct want){0, 0, 4, 0});
	expect(12, f, (struct want){0, 0, 4, 0});
	expect(RXP_LINKTYPE_IPV4, f, (struct want){0, 0, 4, 0});
	expect(RXP_LINKTYPE_IPV6, f, (struct want){.rc = RXP_DECAP_MALFORMED});
	expect(147, f, (struct want){.rc = RXP_DECAP_UNKNOWN_LINK});
	assert_false(rxp_decap_linktype_known(147));
	assert_true(rxp_decap_linktype_known(RXP_LINKTYPE_LINUX_SLL2));

	/* NFLOG, little- and big-endian TLVs, a prefix before the payload. */
	for (int le = 0; le < 2; le++) {
		void (*p16)(struct fb *, uint16_t) = le ? put16le : put16;

		f->n = 0;
		put8(f, 2);
		put8(f, 0);
		put16(f, 1);
		p16(f, 8);
		p16(f, 10);
		put(f, "rxp\0", 4);
		p16(f, (uint16_t)(4 + IN4));
		p16(f, 9);
		inner4(f);
		expect(RXP_LINKTYPE_NFLOG, f, (struct want){0, 16, 4, 1});
		assert_int_equal(rxp_decap_link(&d, RXP_LINKTYPE_NFLOG, f->b, f->n), 0);
		assert_int_equal(d.layer[0].aux, 12);
		assert_int_equal(!!(d.layer[0].flags & RXP_LAYER_F_LE), le);
	}

	/* 802.11: QoS data with LLC/SNAP, four addresses; protected, mgmt. */
	f->n = 0;
	put8(f, 0x88); /* data, QoS */
	put8(f, 0x03); /* to and from DS: four addresses */
	put16(f, 0);
	put(f, MAC, 12);
	put(f, MAC, 6);
	put16(f, 0); /* sequence control */
	put(f, MAC, 6);
	put16(f, 0); /* QoS control */
	put32(f, 0xaaaa0300);
	put16(f, 0x0000);
	put16(f, 0x0800);
	inner4(f);
	expect(RXP_LINKTYPE_IEEE802_11, f, (struct want){0, 40, 4, 2});
	f->b[1] |= 0x40;
	expect(RXP_LINKTYPE_IEEE802_11, f, (struct want){.rc = RXP_DECAP_NOT_IP});
	f->b[1] &= (uint8_t)~0x40;
	f->b[0] = 0x80; /* beacon */
	expect(RXP_LINKTYPE_IEEE802_11, f, (struct want){.rc = RXP_DECAP_NOT_IP});

	/* Radiotap with TSFT (8-aligned) and flags: FCS at the end. */
	f->n = 0;
	put8(f, 0);
	put8(f, 0);
	put16le(f, 24);
	put16le(f, 0x0003);
	put16le(f, 0);
	put(f, "\1\2\3\4\5\6\7\x8", 8); /* TSFT, at 8: aligned */
	put8(f, 0x10); /* flags: FCS */
	put(f, "\0\0\0\0\0\0\0", 7);
	put8(f, 0x08); /* data */
	put8(f, 0x01);
	put16(f, 0);
	put(f, MAC, 12);
	put(f, MAC, 6);
	put16(f, 0);
	put32(f, 0xaaaa0300);
	put16(f, 0);
	put16(f, 0x0800);
	inner4(f);
	put32(f, 0xdeadbeef);
	expect(RXP_LINKTYPE_IEEE802_11_RADIOTAP, f, (struct want){0, 24 + 24 + 8, 4, 3});
	assert_int_equal(rxp_decap_link(&d, RXP_LINKTYPE_IEEE802_11_RADIOTAP, f->b, f->n), 0);
	assert_int_equal(d.layer[0].aux, 16);
	free(f);
}

/* An Ethernet frame with an outer IPv4 header around what build() adds;
 * the outer length is fixed after. */
static void tunnel_frame(struct fb *f, uint8_t proto, void (*build)(struct fb *))
{
	uint32_t o;

	f->n = 0;
	eth(f, 0x0800);
	o = f->n;
	ip4hdr(f, proto, 0, 0xc0000201, 0xc0000202);
	build(f);
	f->b[o + 2] = (uint8_t)((f->n - o) >> 8);
	f->b[o + 3] = (uint8_t)(f->n - o);
}

static void b_ipip(struct fb *f)
{
	inner4(f);
}

static void b_gre_key(struct fb *f)
{
	put16(f, 0xb000); /* C K S */
	put16(f, 0x0800);
	put32(f, 0); /* checksum, reserved */
	put32(f, 77); /* key */
	put32(f, 5); /* sequence */
	inner4(f);
}

static void b_gre_teb_vlan(struct fb *f)
{
	put16(f, 0x2000);
	put16(f, 0x6558);
	put32(f, 9);
	eth(f, 0x8100);
	put16(f, 300);
	put16(f, 0x0800);
	inner4(f);
}

static void b_erspan2(struct fb *f)
{
	put16(f, 0x1000);
	put16(f, 0x88be);
	put32(f, 1);
	put32(f, 0x10000000 | 0x3ff); /* version 1, session 1023 */
	put32(f, 0);
	eth(f, 0x0800);
	inner4(f);
}

static void b_erspan3(struct fb *f)
{
	put16(f, 0x1000);
	put16(f, 0x22eb);
	put32(f, 1);
	put32(f, 0x20000000 | 6);
	put32(f, 0); /* timestamp */
	put16(f, 0); /* SGT */
	put8(f, 0);
	put8(f, 0x01); /* O: platform-specific subheader */
	put32(f, 0);
	put32(f, 0);
	eth(f, 0x0800);
	inner4(f);
}

static void b_pptp(struct fb *f)
{
	put16(f, 0x3001); /* K S, version 1 */
	put16(f, 0x880b);
	put16(f, 4 + IN4); /* payload length */
	put16(f, 42); /* call id */
	put32(f, 1);
	put32(f, 0xff030021);
	inner4(f);
}

static void b_vxlan(struct fb *f)
{
	put16(f, 40000);
	put16(f, 4789);
	put16(f, 8 + 8 + 14 + IN4);
	put16(f, 0); /* no checksum */
	put32(f, 0x08000000);
	put32(f, 0x00abcd00);
	eth(f, 0x0800);
	inner4(f);
}

static void b_geneve(struct fb *f)
{
	put16(f, 40000);
	put16(f, 6081);
	put16(f, 8 + 16 + IN4);
	put16(f, 0);
	put8(f, 2); /* two option words */
	put8(f, 0);
	put16(f, 0x0800);
	put32(f, 0x00000500);
	put32(f, 0x01020301);
	put32(f, 0xaabbccdd);
	inner4(f);
}

static void b_gtpu(struct fb *f)
{
	put16(f, 2152);
	put16(f, 2152);
	put16(f, 8 + 8 + 4 + 4 + IN4);
	put16(f, 0);
	put8(f, 0x34); /* version 1, PT, E */
	put8(f, 0xff);
	put16(f, 4 + 4 + IN4);
	put32(f, 0x11223344);
	put16(f, 0); /* sequence */
	put8(f, 0);
	put8(f, 0x85); /* PDU session container */
	put8(f, 1);
	put8(f, 0x10);
	put8(f, 5);
	put8(f, 0); /* no more */
	inner4(f);
}

struct tcase {
	const char *name;
	uint8_t proto;
	void (*build)(struct fb *);
	uint8_t tunnel;
	uint32_t key; /* UINT32_MAX: none */
	uint32_t inner_off; /* from the outer IP header */
	uint16_t vlan; /* 0: none */
};

static const struct tcase tcases[] = {
	{"ipip", 4, b_ipip, RXP_TUNNEL_IPIP, UINT32_MAX, 20, 0},
	{"gre", 47, b_gre_key, RXP_TUNNEL_GRE, 77, 36, 0},
	{"gre-teb", 47, b_gre_teb_vlan, RXP_TUNNEL_GRE, 9, 20 + 8 + 18, 300},
	{"erspan2", 47, b_erspan2, RXP_TUNNEL_ERSPAN, 1023, 20 + 8 + 8 + 14, 0},
	{"erspan3", 47, b_erspan3, RXP_TUNNEL_ERSPAN, 6, 20 + 8 + 20 + 14, 0},
	{"pptp", 47, b_pptp, RXP_TUNNEL_GRE, 42, 20 + 12 + 4, 0},
	{"vxlan", 17, b_vxlan, RXP_TUNNEL_VXLAN, 0xabcd, 20 + 16 + 14, 0},
	{"geneve", 17, b_geneve, RXP_TUNNEL_GENEVE, 5, 20 + 8 + 16, 0},
	{"gtpu", 17, b_gtpu, RXP_TUNNEL_GTPU, 0x11223344, 20 + 8 + 16, 0},
};

static void test_tunnels(void **state)
{
	struct fb *f = calloc(1, sizeof(*f));

	(void)state;
	for (unsigned i = 0; i < sizeof(tcases) / sizeof(tcases[0]); i++) {
		const struct tcase *c = &tcases[i];
		struct rxp_decap d, before;
		uint32_t iplen;
		bool frag;

		tunnel_frame(f, c->proto, c->build);
		assert_int_equal(rxp_decap_link(&d, RXP_LINKTYPE_ETHERNET, f->b, f->n), 0);
		assert_int_equal(rxp_decap_ip_info(f->b + 14, f->n - 14, &iplen, &frag), 0);
		assert_int_equal(iplen, f->n - 14);
		assert_false(frag);
		assert_int_equal(rxp_decap_tunnel(&d, f->b + 14, iplen), 1);
		assert_int_equal(d.ip_off, 14 + c->inner_off);
		assert_int_equal(d.family, 4);
		assert_int_equal(d.tunnels, 1);
		assert_int_equal(d.ctx.tunnel, c->tunnel);
		assert_int_equal(d.ctx.family, 4);
		assert_int_equal(d.ctx.has_key, c->key != UINT32_MAX);
		if (c->key != UINT32_MAX)
			assert_int_equal(d.ctx.key, c->key);
		assert_int_equal(d.ctx.nvlan, c->vlan ? 1 : 0);
		if (c->vlan)
			assert_int_equal(d.ctx.vlan[0], c->vlan);
		assert_memory_equal(d.ctx.dst, "\xc0\0\2\2", 4);
		assert_int_equal(d.layer[1].type, RXP_LAYER_IPV4);
		assert_int_equal(f->n - d.ip_off, IN4);
		/* The inner packet cut short: no tunnel entered, d as it was. */
		assert_int_equal(rxp_decap_link(&d, RXP_LINKTYPE_ETHERNET, f->b, f->n), 0);
		before = d;
		if (rxp_decap_tunnel(&d, f->b + 14, iplen - 1) > 0)
			fail_msg("%s: tunnel entered with its inner packet cut short", c->name);
		assert_memory_equal(&d, &before, offsetof(struct rxp_decap, layer));
	}
	/* Not tunnels: UDP to another port, TCP, an outer fragment. */
	tunnel_frame(f, 17, b_vxlan);
	f->b[14 + 22] = 0x20;
	{
		struct rxp_decap d;

		assert_int_equal(rxp_decap_link(&d, RXP_LINKTYPE_ETHERNET, f->b, f->n), 0);
		assert_int_equal(rxp_decap_tunnel(&d, f->b + 14, f->n - 14), 0);
		tunnel_frame(f, 6, b_ipip);
		assert_int_equal(rxp_decap_tunnel(&d, f->b + 14, f->n - 14), 0);
		tunnel_frame(f, 4, b_ipip);
		f->b[14 + 6] = 0x20; /* MF */
		assert_int_equal(rxp_decap_tunnel(&d, f->b + 14, f->n - 14), 0);
		/* ARP in VXLAN: a tunnel, but not IP inside. */
		tunnel_frame(f, 17, b_vxlan);
		f->b[14 + 36 + 12] = 0x08;
		f->b[14 + 36 + 13] = 0x06;
		assert_int_equal(rxp_decap_tunnel(&d, f->b + 14, f->n - 14), RXP_DECAP_NOT_IP);
	}
	free(f);
}

/* Checks the outer headers of frame f (Ethernet, IPv4, then the tunnel's)
 * against its length by independent sums. */
static void check_outer(const uint8_t *b, uint32_t n, uint8_t proto)
{
	const uint8_t *ip = b + 14;
	uint32_t s;

	assert_int_equal(get16(ip + 2), n - 14);
	assert_int_equal(fold(sum16(ip, 20, 0)), 0xffff);
	if (proto == 17) {
		const uint8_t *u = ip + 20;

		assert_int_equal(get16(u + 4), n - 34);
		if (get16(u + 6)) {
			s = sum16(ip + 12, 8, 17 + (n - 34));
			assert_int_equal(fold(sum16(u, n - 34, s)), 0xffff);
		}
		if (get16(u + 2) == 2152)
			assert_int_equal(get16(u + 8 + 2), n - 34 - 8 - 8);
	}
	if (proto == 47 && (ip[20] & 0x80))
		assert_int_equal(fold(sum16(ip + 20, n - 34, 0)), 0xffff);
}

static void test_fixup(void **state)
{
	struct fb *f = calloc(1, sizeof(*f)), *g = calloc(1, sizeof(*g));
	struct rxp_decap d;

	(void)state;
	for (unsigned i = 0; i < sizeof(tcases) / sizeof(tcases[0]); i++) {
		const struct tcase *c = &tcases[i];
		uint32_t sizes[] = {1, 3000, 65535 - 28 - c->inner_off};

		tunnel_frame(f, c->proto, c->build);
		if (c->proto == 17 && c->tunnel != RXP_TUNNEL_GTPU) {
			f->b[14 + 26] = 0x12; /* a UDP checksum (wrong): to be recomputed */
			f->b[14 + 27] = 0x34;
		}
		assert_int_equal(rxp_decap_link(&d, RXP_LINKTYPE_ETHERNET, f->b, f->n), 0);
		assert_int_equal(rxp_decap_tunnel(&d, f->b + 14, f->n - 14), 1);
		for (unsigned k = 0; k < 3; k++) {
			g->n = 0;
			put(g, f->b, d.ip_off);
			ip4udp(g, sizes[k], 9);
			assert_int_equal(rxp_decap_fixup(&d, g->b, g->n), 0);
			check_outer(g->b, g->n, c->proto);
			if (c->tunnel == RXP_TUNNEL_GRE && c->key == 42) /* PPTP length */
				assert_int_equal(get16(g->b + 34 + 4), g->n - 34 - 12);
		}
		/* One byte more than the outer length fields hold. */
		g->n = 0;
		put(g, f->b, d.ip_off);
		ip4udp(g, sizes[2] + 1, 9);
		assert_int_equal(rxp_decap_fixup(&d, g->b, g->n), -1);
		/* Then without the tunnel: the link header alone, set for IPv6. */
		assert_int_equal(rxp_decap_strip(&d, g->b, 6), 0);
		assert_int_equal(d.ip_off, 14);
		assert_int_equal(d.nlayers, 1);
		assert_int_equal(get16(g->b + 12), 0x86dd);
		assert_int_equal(rxp_decap_strip(&d, g->b, 4), -1); /* no tunnel left */
	}
	free(f);
	free(g);
}

/* Link-level length fields: PPPoE, NFLOG; radiotap loses its FCS flag. */
static void test_fixup_link(void **state)
{
	struct fb *f = calloc(1, sizeof(*f));
	struct rxp_decap d;

	(void)state;
	eth(f, 0x8864);
	put8(f, 0x11);
	put8(f, 0);
	put16(f, 7);
	put16(f, 2 + IN4);
	put16(f, 0x0021);
	inner4(f);
	assert_int_equal(rxp_decap_link(&d, RXP_LINKTYPE_ETHERNET, f->b, f->n), 0);
	f->n = d.ip_off;
	ip4udp(f, 5000, 1);
	assert_int_equal(rxp_decap_fixup(&d, f->b, f->n), 0);
	assert_int_equal(get16(f->b + 18), f->n - 20);
	f->n = d.ip_off;
	ip4udp(f, 65507, 1); /* a PPP frame of 65,537 bytes: PPPoE cannot say it */
	assert_int_equal(rxp_decap_fixup(&d, f->b, f->n), -1);
	assert_int_equal(rxp_decap_strip(&d, f->b, 4), -1); /* no tunnel to drop */

	f->n = 0;
	put8(f, 10);
	put8(f, 0);
	put16(f, 0);
	put16le(f, 4 + 40 + 8);
	put16le(f, 9);
	ip6udp(f, 0);
	put16le(f, 8); /* a TLV after the payload */
	put16le(f, 11);
	put32(f, 0);
	assert_int_equal(rxp_decap_link(&d, RXP_LINKTYPE_NFLOG, f->b, f->n), 0);
	assert_int_equal(d.family, 6);
	f->n = d.ip_off;
	ip6udp(f, 3000);
	assert_int_equal(rxp_decap_fixup(&d, f->b, f->n), 0);
	assert_int_equal(f->b[4] | f->b[5] << 8, 4 + 40 + 8 + 3000);
	free(f);
}

/* Every frame built above, for the robustness passes. */
static unsigned samples(struct fb *out, unsigned max, uint32_t *lt)
{
	unsigned n = 0;

	for (unsigned i = 0; i < sizeof(tcases) / sizeof(tcases[0]) && n < max; i++, n++) {
		tunnel_frame(&out[n], tcases[i].proto, tcases[i].build);
		lt[n] = RXP_LINKTYPE_ETHERNET;
	}
	out[n].n = 0;
	eth(&out[n], 0x88a8);
	put16(&out[n], 10);
	put16(&out[n], 0x8847);
	put32(&out[n], 100 << 12 | 0x100);
	inner4(&out[n]);
	lt[n++] = RXP_LINKTYPE_ETHERNET;
	out[n].n = 0;
	put8(&out[n], 0);
	put8(&out[n], 0);
	put16le(&out[n], 12);
	put16le(&out[n], 0x0002);
	put16le(&out[n], 0);
	put8(&out[n], 0x30);
	put8(&out[n], 0);
	put16(&out[n], 0);
	put8(&out[n], 0x88);
	put8(&out[n], 0x80);
	put16(&out[n], 0);
	put(&out[n], MAC, 12);
	put(&out[n], MAC, 6);
	put16(&out[n], 0); /* sequence control */
	put16(&out[n], 0); /* QoS control */
	put32(&out[n], 0); /* HT control */
	put16(&out[n], 0); /* radiotap's padding to 32 bits */
	put32(&out[n], 0xaaaa0300);
	put16(&out[n], 0);
	put16(&out[n], 0x86dd);
	ip6udp(&out[n], 20);
	put32(&out[n], 0);
	lt[n++] = RXP_LINKTYPE_IEEE802_11_RADIOTAP;
	out[n].n = 0;
	put8(&out[n], 2);
	put8(&out[n], 0);
	put16(&out[n], 0);
	put16le(&out[n], 4 + IN4);
	put16le(&out[n], 9);
	inner4(&out[n]);
	lt[n++] = RXP_LINKTYPE_NFLOG;
	return n;
}

/* Parses b (a heap copy of exactly len bytes) as far as it goes, checking
 * that every layer lies inside it. */
static void parse_all(uint32_t lt, const uint8_t *src, uint32_t len)
{
	uint8_t *b = malloc(len ? len : 1);
	struct rxp_decap d;
	uint32_t iplen;
	bool frag;

	memcpy(b, src, len);
	if (rxp_decap_link(&d, lt, b, len) == 0) {
		for (int depth = 0; depth < 8; depth++) {
			uint32_t prev = 0;

			assert_true(d.ip_off < len);
			assert_true(d.family == 4 || d.family == 6);
			for (unsigned i = 0; i < d.nlayers; i++) {
				assert_true(d.layer[i].off >= prev);
				assert_true(d.layer[i].off + d.layer[i].len <= d.ip_off);
				prev = d.layer[i].off;
			}
			if (rxp_decap_ip_info(b + d.ip_off, len - d.ip_off, &iplen, &frag) ||
			    iplen > len - d.ip_off || frag)
				break;
			if (rxp_decap_tunnel(&d, b + d.ip_off, iplen) != 1)
				break;
		}
		/* Rewriting for what is there never writes outside it. */
		rxp_decap_fixup(&d, b, len);
	}
	free(b);
}

static void test_truncated(void **state)
{
	static struct fb s[16];
	uint32_t lt[16];
	unsigned n = samples(s, 13, lt);

	(void)state;
	for (unsigned i = 0; i < n; i++)
		for (uint32_t len = 0; len <= s[i].n; len++)
			parse_all(lt[i], s[i].b, len);
}

static void test_random_bytes(void **state)
{
	static struct fb s[16], m;
	static const uint32_t lts[] = {RXP_LINKTYPE_ETHERNET, RXP_LINKTYPE_LINUX_SLL2,
				       RXP_LINKTYPE_NFLOG,    RXP_LINKTYPE_IEEE802_11_RADIOTAP,
				       RXP_LINKTYPE_PPP,      RXP_LINKTYPE_NULL};
	uint32_t lt[16];
	unsigned n = samples(s, 13, lt), cases = 20000;
	struct rxpt_rng r;
	const char *sc = getenv("RXP_PROPERTY_SCALE");

	(void)state;
	if (sc && atoi(sc) > 0)
		cases *= (unsigned)atoi(sc);
	rxpt_rng_seed(&r, rxpt_seed("decap_random_bytes"));
	for (unsigned c = 0; c < cases; c++) {
		const struct fb *f = &s[rxpt_rng_below(&r, n)];
		unsigned flips = 1 + (unsigned)rxpt_rng_below(&r, 4);

		m = *f;
		/* Header bytes mostly: that is where the parsers look. */
		for (unsigned k = 0; k < flips; k++)
			m.b[rxpt_rng_below(&r, m.n < 120 ? m.n : 120)] = (uint8_t)rxpt_rng_next(&r);
		if (rxpt_rng_below(&r, 4) == 0)
			m.n = (uint32_t)rxpt_rng_below(&r, m.n + 1);
		parse_all(rxpt_rng_below(&r, 3) ? lt[f - s] : lts[rxpt_rng_below(&r, 6)], m.b, m.n);
	}
}

static void test_ip_info(void **state)
{
	struct fb *f = calloc(1, sizeof(*f));
	uint32_t iplen;
	bool frag;

	(void)state;
	inner4(f);
	f->b[6] = 0x20; /* MF */
	assert_int_equal(rxp_decap_ip_info(f->b, f->n + 50, &iplen, &frag), 0);
	assert_int_equal(iplen, IN4);
	assert_true(frag);
	f->b[0] = 0x44; /* IHL 4 */
	assert_int_equal(rxp_decap_ip_info(f->b, f->n, &iplen, &frag), -1);
	/* IPv6: a fragment header behind a hop-by-hop header. */
	f->n = 0;
	ip6hdr(f, 0, 8 + 8 + 8);
	put8(f, 44);
	put8(f, 0);
	put16(f, 0);
	put32(f, 0);
	put8(f, 17);
	put8(f, 0);
	put16(f, 1);
	put32(f, 99);
	put32(f, 0);
	put32(f, 0);
	assert_int_equal(rxp_decap_ip_info(f->b, f->n, &iplen, &frag), 0);
	assert_int_equal(iplen, f->n);
	assert_true(frag);
	assert_int_equal(rxp_decap_ipv6_frag_off(f->b, f->n), 48);
	/* the fragment header's first two bytes are enough to find it */
	assert_int_equal(rxp_decap_ipv6_frag_off(f->b, 50), 48);
	assert_int_equal(rxp_decap_ipv6_frag_off(f->b, 49), 0);
	assert_int_equal(rxp_decap_ip_info(f->b, 39, &iplen, &frag), -1);
	/* behind a Destination Options header, Hop-by-Hop is no longer one
	 * that may come before the fragment header */
	f->b[6] = 60;
	f->b[40] = 0;
	assert_int_equal(rxp_decap_ipv6_frag_off(f->b, f->n), 0);
	assert_int_equal(rxp_decap_ip_info(f->b, f->n, &iplen, &frag), 0);
	assert_false(frag);
	/* the fragment header first; none at all (UDP) */
	f->b[6] = 44;
	assert_int_equal(rxp_decap_ipv6_frag_off(f->b, f->n), 40);
	f->b[6] = 17;
	assert_int_equal(rxp_decap_ipv6_frag_off(f->b, f->n), 0);
	free(f);
}

/* Every layer and tunnel type has a name (for reports), distinct, and
 * values out of the list get "?". */
static void test_names(void **state)
{
	(void)state;
	for (unsigned t = 1; t < RXP_LAYER_TYPE_MAX; t++) {
		assert_string_not_equal(rxp_decap_layer_name((enum rxp_layer_type)t), "?");
		for (unsigned u = 1; u < t; u++)
			assert_string_not_equal(rxp_decap_layer_name((enum rxp_layer_type)t),
						rxp_decap_layer_name((enum rxp_layer_type)u));
	}
	for (unsigned t = 0; t < RXP_TUNNEL_TYPE_MAX; t++)
		for (unsigned u = 0; u < t; u++)
			assert_string_not_equal(rxp_decap_tunnel_name((enum rxp_tunnel_type)t),
						rxp_decap_tunnel_name((enum rxp_tunnel_type)u));
	assert_string_equal(rxp_decap_layer_name(RXP_LAYER_VXLAN), "vxlan");
	assert_string_equal(rxp_decap_tunnel_name(RXP_TUNNEL_GTPU), "gtp-u");
	assert_string_equal(rxp_decap_tunnel_name(RXP_TUNNEL_NONE), "none");
	assert_string_equal(rxp_decap_layer_name((enum rxp_layer_type)0), "?");
	assert_string_equal(rxp_decap_layer_name(RXP_LAYER_TYPE_MAX), "?");
	assert_string_equal(rxp_decap_tunnel_name(RXP_TUNNEL_TYPE_MAX), "?");
}

/* rxp_decap_payload: what a device taking link headers off delivers. */
static void test_payload(void **state)
{
	uint8_t f[64] = {0};
	uint16_t et = 1;

	(void)state;
	/* Ethernet, IPv4: 14 bytes, IP */
	f[12] = 0x08;
	f[14] = 0x45;
	assert_int_equal(rxp_decap_payload(RXP_LINKTYPE_ETHERNET, f, 60, &et), 14);
	assert_int_equal(et, RXP_ETH_P_IP);
	/* SLL under which an ARP: its 16 bytes, the EtherType kept */
	memset(f, 0, sizeof(f));
	f[14] = 0x08;
	f[15] = 0x06;
	assert_int_equal(rxp_decap_payload(RXP_LINKTYPE_LINUX_SLL, f, 44, &et), 16);
	assert_int_equal(et, 0x0806);
	/* ... nothing after the header, or the header cut short */
	assert_int_equal(rxp_decap_payload(RXP_LINKTYPE_LINUX_SLL, f, 16, &et), -1);
	assert_int_equal(rxp_decap_payload(RXP_LINKTYPE_LINUX_SLL, f, 10, &et), -1);
	/* an IP EtherType whose header is not IP */
	f[15] = 0x00;
	f[16] = 0x55;
	assert_int_equal(rxp_decap_payload(RXP_LINKTYPE_LINUX_SLL, f, 44, &et), -1);
	/* BSD loopback of a family that is not IP: its 4 bytes, no EtherType */
	memset(f, 0, sizeof(f));
	f[0] = 7;
	et = 1;
	assert_int_equal(rxp_decap_payload(RXP_LINKTYPE_NULL, f, 40, &et), 4);
	assert_int_equal(et, 0);
	/* ... and of IPv6 (30: macOS) */
	f[0] = 30;
	f[4] = 0x60;
	assert_int_equal(rxp_decap_payload(RXP_LINKTYPE_NULL, f, 48, &et), 4);
	assert_int_equal(et, RXP_ETH_P_IPV6);
	/* an unknown link type */
	assert_int_equal(rxp_decap_payload(147, f, 48, &et), -1);
	/* SLL from a GRE device (ARPHRD_IPGRE): its protocol is a GRE
	 * protocol type, an EtherType: IP (tshark reads it so) */
	memset(f, 0, sizeof(f));
	f[2] = 0x03;
	f[3] = 0x0a; /* 778 */
	f[14] = 0x08;
	f[16] = 0x45;
	assert_int_equal(rxp_decap_payload(RXP_LINKTYPE_LINUX_SLL, f, 56, &et), 16);
	assert_int_equal(et, RXP_ETH_P_IP);
	/* ... from a netlink socket (824): a netlink family, not IP, but
	 * past the SLL header */
	f[2] = 0x03;
	f[3] = 0x38;
	assert_int_equal(rxp_decap_payload(RXP_LINKTYPE_LINUX_SLL, f, 56, &et), 16);
	assert_int_equal(et, 0);
	/* 802.11 data, LLC/SNAP carrying ARP: its EtherType said */
	memset(f, 0, sizeof(f));
	f[0] = 0x08; /* data */
	f[24] = 0xaa;
	f[25] = 0xaa;
	f[26] = 0x03;
	f[30] = 0x08;
	f[31] = 0x06;
	assert_int_equal(rxp_decap_payload(RXP_LINKTYPE_IEEE802_11, f, 60, &et), 32);
	assert_int_equal(et, 0x0806);
	/* PPPoE carrying LCP: no EtherType (not PPPoE's own) */
	memset(f, 0, sizeof(f));
	f[12] = 0x88;
	f[13] = 0x64;
	f[14] = 0x11;
	f[18] = 0;
	f[19] = 10;
	f[20] = 0xc0;
	f[21] = 0x21;
	assert_int_equal(rxp_decap_payload(RXP_LINKTYPE_ETHERNET, f, 40, &et), 22);
	assert_int_equal(et, 0);
	/* MPLS over a payload that is not IP (a pseudowire control word) */
	memset(f, 0, sizeof(f));
	f[12] = 0x88;
	f[13] = 0x47;
	f[16] = 0x01; /* bottom of stack */
	assert_int_equal(rxp_decap_payload(RXP_LINKTYPE_ETHERNET, f, 40, &et), 18);
	assert_int_equal(et, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_link_types), cmocka_unit_test(test_tunnels),
		cmocka_unit_test(test_fixup),	   cmocka_unit_test(test_fixup_link),
		cmocka_unit_test(test_truncated),  cmocka_unit_test(test_random_bytes),
		cmocka_unit_test(test_ip_info),	   cmocka_unit_test(test_names),
		cmocka_unit_test(test_payload),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
