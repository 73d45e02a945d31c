/*
 * Reassemble the IPv4/IPv6 fragments of an Ethernet capture with libpcap and
 * rxp_defrag, and print one line per complete datagram. Build against an
 * installed rxpath with
 *   cc defrag_pcap.c $(pkg-config --cflags --libs rxpath libpcap) -o defrag_pcap
 * (libpcap too: this program calls it itself).
 */
#include <pcap/pcap.h>
#include <stdio.h>

#include <rxpath/defrag.h>

int main(int argc, char **argv)
{
	char err[PCAP_ERRBUF_SIZE];
	pcap_t *in = argc == 2 ? pcap_open_offline(argv[1], err) : NULL;
	struct rxp_defrag_config cfg = {.mem_limit = 64u << 20, .max_dist = -1};
	struct rxp_pktpool_config pc = {0};
	struct pcap_pkthdr *h;
	const u_char *frame;
	unsigned long n = 0;

	if (!in)
		return fprintf(stderr, "usage: defrag_pcap FILE.pcap\n"), 2;
	rxp_defrag_pool_config(&cfg, 256, &pc); /* a pool that holds what the cap allows */
	struct rxp_pktpool *pool = rxp_pktpool_create(&pc);
	struct rxp_defrag_table *t = rxp_defrag_table_create(&cfg);

	while (pool && t && pcap_next_ex(in, &h, &frame) == 1) {
		uint64_t now = (uint64_t)h->ts.tv_sec * 1000000000ull + h->ts.tv_usec * 1000ull;
		struct rxp_pkt *p, *d;

		if (h->caplen <= 14 || h->caplen < h->len || /* cut by the snaplen */
		    (frame[12] << 8 | frame[13]) != (frame[14] >> 4 == 4 ? 0x0800 : 0x86dd))
			continue; /* not IPv4 or IPv6 */
		rxp_defrag_expire(t, now); /* the caller runs the timers */
		p = rxp_pkt_from_bytes(pool, frame + 14, h->caplen - 14); /* at the IP header */
		d = p ? rxp_defrag(t, p, now) : NULL; /* consumes p */
		if (d && d->len != h->caplen - 14) /* a datagram made of fragments */
			printf("datagram %lu: %u bytes\n", ++n, d->len);
		rxp_pkt_consume(d);
	}
	rxp_defrag_table_destroy(t);
	pcap_close(in);
	printf("%lu datagrams reassembled\n", n);
	return pool && t && !rxp_pktpool_destroy(pool) ? 0 : 1;
}
