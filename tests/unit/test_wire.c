/*
 * Unit tests for the packet format builders and parsers of rxpath/wire.h:
 * each builder byte for byte against a packet made by scapy (the bytes are
 * pasted below, with the scapy line that made them), each parser on those
 * packets, and the extension-header walk's lengths.
 */
#include <string.h>

#include "rxpath/wire.h"
#include "rxptest.h"

static const uint8_t SRC6[16] = {0x20, 0x01, 0x0d, 0xb8, [15] = 1};
static const uint8_t DST6[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 1, [15] = 2};

/* IPv6(src="2001:db8::1", dst="2001:db8:0:1::2", tc=0xb9, fl=0xabcde,
 *      hlim=63, nh=0, plen=36)
 * / IPv6ExtHdrHopByHop(nh=44, options=[PadN(optdata=b'\0'*12)])
 * / IPv6ExtHdrFragment(nh=17, offset=185, m=1, id=0x89abcdef)
 * / UDP(sport=1000, dport=2000, len=12, chksum=0) / b'abcd' */
static const uint8_t FRAG_PKT[76] = {
	0x6b, 0x9a, 0xbc, 0xde, 0x00, 0x24, 0x00, 0x3f, 0x20, 0x01, 0x0d, 0xb8, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x20, 0x01,
	0x0d, 0xb8, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x02, 0x2c, 0x01, 0x01, 0x0c, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x11, 0x00, 0x05, 0xc9, 0x89, 0xab, 0xcd, 0xef, 0x03,
	0xe8, 0x07, 0xd0, 0x00, 0x0c, 0x00, 0x00, 0x61, 0x62, 0x63, 0x64};

/* IPv6(src="2001:db8::1", dst="2001:db8:0:1::2", hlim=64)
 * / IPv6ExtHdrDestOpt(options=[PadN(optdata=b'\0'*4)])
 * / UDP(sport=1000, dport=2000) / b'abcd'  (scapy's UDP checksum 0xd3e1) */
static const uint8_t DST_PKT[60] = {
	0x60, 0x00, 0x00, 0x00, 0x00, 0x14, 0x3c, 0x40, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00,
	0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x11, 0x00, 0x01, 0x04, 0x00,
	0x00, 0x00, 0x00, 0x03, 0xe8, 0x07, 0xd0, 0x00, 0x0c, 0xd3, 0xe1, 0x61, 0x62, 0x63, 0x64};

static void put_udp(uint8_t *u, uint16_t sport, uint16_t dport, uint16_t len)
{
	struct rxp_udphdr uh = {htons(sport), htons(dport), htons(len), 0};

	memcpy(u, &uh, sizeof(uh));
}

static void test_build_fragment(void **state)
{
	uint8_t b[sizeof(FRAG_PKT)];

	(void)state;
	memset(b, 0xa5, sizeof(b)); /* every byte must be written */
	rxp_ipv6_build(b, 0xb9, 0xabcde, 36, RXP_IPPROTO_HOPOPTS, 63, SRC6, DST6);
	rxp_ipv6_opts_build(b + 40, RXP_IPPROTO_FRAGMENT, 16);
	rxp_frag6_build(b + 56, RXP_IPPROTO_UDP, 185 * 8, 1, 0x89abcdef);
	put_udp(b + 64, 1000, 2000, 12);
	memcpy(b + 72, "abcd", 4);
	assert_memory_equal(b, FRAG_PKT, sizeof(FRAG_PKT));
	/* the flow label keeps to its 20 bits, the offset to its 13 */
	rxp_ipv6_build(b, 0xb9, 0xfffabcde, 36, RXP_IPPROTO_HOPOPTS, 63, SRC6, DST6);
	rxp_frag6_build(b + 56, RXP_IPPROTO_UDP, 185 * 8 + 7, 1, 0x89abcdef);
	assert_memory_equal(b, FRAG_PKT, sizeof(FRAG_PKT));
	/* the last fragment: M clear */
	rxp_frag6_build(b + 56, RXP_IPPROTO_UDP, 185 * 8, 0, 0x89abcdef);
	assert_int_equal(b[59], 0xc8);
}

static void test_build_dstopts_udp(void **state)
{
	uint8_t b[sizeof(DST_PKT)];
	uint32_t sum;
	uint16_t c;

	(void)state;
	memset(b, 0xa5, sizeof(b));
	rxp_ipv6_build(b, 0, 0, 20, RXP_IPPROTO_DSTOPTS, 64, SRC6, DST6);
	rxp_ipv6_opts_build(b + 40, RXP_IPPROTO_UDP, 8);
	put_udp(b + 48, 1000, 2000, 12);
	memcpy(b + 56, "abcd", 4);
	sum = rxp_pseudo_sum(SRC6, DST6, 16, RXP_IPPROTO_UDP, 12);
	c = rxp_udp_csum_field(rxp_csum_partial(b + 48, 12, sum));
	memcpy(b + 54, &c, 2);
	assert_memory_equal(b, DST_PKT, sizeof(DST_PKT));
	/* and the datagram with its checksum sums to zero */
	assert_int_equal(rxp_csum_fold(rxp_csum_partial(b + 48, 12, sum)), 0);
}

static void test_parse(void **state)
{
	const struct rxp_ipv6hdr *ip = (const void *)FRAG_PKT;
	const struct rxp_frag6hdr *fh = (const void *)(FRAG_PKT + 56);

	(void)state;
	assert_int_equal(rxp_ip_version(FRAG_PKT), 6);
	assert_int_equal(rxp_ipv6_tclass(ip), 0xb9);
	assert_int_equal(rxp_frag6_offset(fh), 1480);
	assert_true(rxp_frag6_more(fh));
	assert_int_equal(rxp_frag6_id(fh), 0x89abcdef);
	assert_int_equal(fh->nexthdr, RXP_IPPROTO_UDP);
	assert_int_equal(rxp_ip_version((const uint8_t[]){0x45}), 4);
}

/* Walk FRAG_PKT's chain as the walkers in src/ do: Hop-by-Hop 16 bytes,
 * the fragment header 8, then UDP at 64. */
static void test_ext_walk(void **state)
{
	static const uint8_t ah[2] = {RXP_IPPROTO_UDP, 4}; /* (4 + 2) * 4 */
	static const uint8_t rt[2] = {RXP_IPPROTO_UDP, 4}; /* (4 + 1) * 8 */
	uint32_t pos = RXP_IPV6_HLEN;
	uint8_t nh = FRAG_PKT[6];
	unsigned n = 0;

	(void)state;
	while (rxp_ipv6_ext_len(nh, FRAG_PKT + pos)) {
		uint32_t el = rxp_ipv6_ext_len(nh, FRAG_PKT + pos);

		nh = FRAG_PKT[pos];
		pos += el;
		n++;
	}
	assert_int_equal(n, 2);
	assert_int_equal(pos, 64);
	assert_int_equal(nh, RXP_IPPROTO_UDP);

	assert_int_equal(rxp_ipv6_ext_len(RXP_IPPROTO_AH, ah), 24);
	assert_int_equal(rxp_ipv6_ext_len(RXP_IPPROTO_ROUTING, rt), 40);
	assert_int_equal(rxp_ipv6_ext_len(RXP_IPPROTO_DSTOPTS, rt), 40);
	assert_int_equal(rxp_ipv6_ext_len(RXP_IPPROTO_FRAGMENT, rt), 8);
	assert_int_equal(rxp_ipv6_ext_len(RXP_IPPROTO_ESP, rt), 0);
	assert_int_equal(rxp_ipv6_ext_len(RXP_IPPROTO_NONE, rt), 0);
	assert_int_equal(rxp_ipv6_ext_len(RXP_IPPROTO_UDP, rt), 0);

	/* Hop-by-Hop only right after the fixed header */
	assert_true(rxp_ipv6_ext_before_frag(RXP_IPPROTO_HOPOPTS, RXP_IPV6_HLEN));
	assert_false(rxp_ipv6_ext_before_frag(RXP_IPPROTO_HOPOPTS, RXP_IPV6_HLEN + 8));
	assert_true(rxp_ipv6_ext_before_frag(RXP_IPPROTO_ROUTING, RXP_IPV6_HLEN + 8));
	assert_true(rxp_ipv6_ext_before_frag(RXP_IPPROTO_DSTOPTS, RXP_IPV6_HLEN));
	assert_false(rxp_ipv6_ext_before_frag(RXP_IPPROTO_FRAGMENT, RXP_IPV6_HLEN));
	assert_false(rxp_ipv6_ext_before_frag(RXP_IPPROTO_AH, RXP_IPV6_HLEN));
}

/* The IPv4 builder and rxp_ipv4_set_csum against scapy:
 * IP(src="10.0.0.1", dst="10.0.0.2", id=0x1234, flags="MF", frag=185,
 *    ttl=64, proto=17, len=1500) */
static void test_ipv4(void **state)
{
	static const uint8_t want[20] = {0x45, 0x00, 0x05, 0xdc, 0x12, 0x34, 0x20,
					 0xb9, 0x40, 0x11, 0x2e, 0x22, 0x0a, 0x00,
					 0x00, 0x01, 0x0a, 0x00, 0x00, 0x02};
	uint8_t b[24];

	(void)state;
	rxp_ipv4_build(b, RXP_IPPROTO_UDP, 1500, 0x1234, RXP_IP_MF | 185, 64, htonl(0x0a000001),
		       htonl(0x0a000002));
	assert_memory_equal(b, want, 20);
	assert_int_equal(rxp_ip_csum(b, 20), 0);
	/* rewritten in place after a change, as reassembly does */
	b[6] = 0;
	b[7] = 0;
	rxp_ipv4_set_csum((struct rxp_iphdr *)(void *)b, 20);
	assert_int_equal(rxp_ip_csum(b, 20), 0);
	/* a header with options goes through the general sum */
	memcpy(b + 20, (const uint8_t[]){1, 1, 1, 0}, 4); /* NOP NOP NOP EOL */
	b[0] = 0x46;
	rxp_ipv4_set_csum((struct rxp_iphdr *)(void *)b, 24);
	assert_int_equal(rxp_ip_csum(b, 24), 0);
	assert_int_not_equal(rxp_ip_csum(b, 20), 0);
}

/* rxp_ip_csum20 is the general sum's answer for every 20-byte header:
 * random ones, all-ones (the carries), all-zeros, and with a valid
 * checksum in place (then 0). */
static void test_ip_csum20(void **state)
{
	uint8_t h[20];
	uint64_t x = 0x9e3779b97f4a7c15ull;

	(void)state;
	for (int k = 0; k < 100000; k++) {
		for (int i = 0; i < 20; i++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			h[i] = k == 0 ? 0xff : k == 1 ? 0 : (uint8_t)x;
		}
		assert_int_equal(rxp_ip_csum20(h), rxp_csum_fold(rxp_csum_partial(h, 20, 0)));
		h[10] = h[11] = 0;
		{
			uint16_t c = rxp_ip_csum20(h);

			memcpy(h + 10, &c, 2);
			assert_int_equal(rxp_ip_csum20(h), 0);
		}
	}
}

/* rxp_csum_partial against RFC 1071's sum of 16-bit words (read in host
 * order, as the function adds them; an odd last byte is the low one), for
 * every length up to 80 from every alignment of an 8-byte word: the 16-byte
 * loop, the 8-byte step and each 1-7 byte tail. All-ones bytes test the
 * carries. */
static void test_csum_partial_lengths(void **state)
{
	uint8_t buf[96];
	uint64_t x = 0x243f6a8885a308d3ull;

	(void)state;
	for (int round = 0; round < 3; round++) {
		for (size_t i = 0; i < sizeof(buf); i++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			buf[i] = round == 0 ? 0xff : (uint8_t)x;
		}
		for (size_t a = 0; a < 8; a++) {
			for (size_t len = 0; len <= 80; len++) {
				const uint8_t *p = buf + a;
				uint32_t ref = round == 2 ? 0x1234u : 0, got;
				size_t i;

				got = rxp_csum_partial(p, len, ref);
				for (i = 0; i + 1 < len; i += 2) {
					uint16_t w;

					memcpy(&w, p + i, 2);
					ref += w;
				}
				if (len & 1)
					ref += p[len - 1];
				assert_int_equal(rxp_csum_fold(got), rxp_csum_fold(ref));
			}
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_build_fragment),
		cmocka_unit_test(test_build_dstopts_udp),
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_ext_walk),
		cmocka_unit_test(test_ipv4),
		cmocka_unit_test(test_ip_csum20),
		cmocka_unit_test(test_csum_partial_lengths),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
