/*
 * Fuzz the two readers of capture files: the pcap device (rxp_pcap_open) and
 * the sim NIC's replay source (rxp_src_pcap). The input is a capture file
 * (pcap or pcapng, any link type). Both read the same file, and must agree:
 * the replay source gives the device's packets in order, as frames (raw IP
 * and Linux cooked records behind an Ethernet header carrying the
 * ethertype, the cooked header gone), leaving out only records too big for
 * a jumbo frame (and, both, cooked records the capturing host sent).
 * Nothing may leak.
 *
 * The replay source is read on its own rather than through a sim NIC made
 * per input: a sim's rings, page pools and TX rings cost several times the
 * reading, and rings are fuzz_ring's business.
 */
#define _GNU_SOURCE
#include <sys/mman.h>
#include <unistd.h>

#include "rxpath/dev.h"
#include "rxpath/sim.h"
#include "rxpath/wire.h"
#include "fuzz.h"

#define FZ_MAXREC 4096

struct rec {
	uint32_t len; /* device packet bytes */
	uint16_t proto; /* ethertype the device found (0: none) */
	uint64_t hash;
};

static uint64_t fnv(const uint8_t *p, uint32_t n, uint64_t h)
{
	for (uint32_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

static struct rec recs[FZ_MAXREC];
static uint8_t pbuf[65536 + 512];

/* Round 1: the device's packets, recorded and freed. Returns how many;
 * *opened if the file opened, *eof if it was read to its end. */
static unsigned read_dev(const char *path, struct rxp_pktpool *pp, bool *opened, bool *raw,
			 bool *eof)
{
	struct rxp_dev *d = rxp_pcap_open(path, pp);
	unsigned n = 0;

	*opened = d != NULL;
	*eof = false;
	if (!d)
		return 0;
	*raw = rxp_dev_is_raw_ip(d);
	while (n + 16 <= FZ_MAXREC) {
		struct rxp_pkt *pk[16];
		int got = rxp_dev_rx_burst(d, 0, pk, 16);

		if (got <= 0) {
			*eof = true;
			break;
		}
		for (int k = 0; k < got; k++) {
			struct rxp_pkt *p = pk[k];

			FZ_CHECK(p->len > 0 && p->len <= sizeof(pbuf));
			FZ_CHECK(!rxp_pkt_copy_bits(p, 0, pbuf, p->len));
			recs[n++] = (struct rec){p->len, p->protocol,
						 fnv(pbuf, p->len, 0xcbf29ce484222325ull)};
			rxp_pkt_consume(p);
		}
	}
	FZ_CHECK(rxp_dev_close(d) == 0);
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t frame[RXP_GEN_FRAME_MAX + 64];
	struct rxp_pktpool_config pc = {.name = "fuzz", .n_pkts = 256, .n_bufs = 64, .n_large = 4};
	struct rxp_pktpool *pp = fz_pool(&pc);
	int fd = memfd_create("fuzz.pcap", 0);
	char path[64];
	struct rxp_src *src;
	unsigned n, i = 0;
	bool opened, raw = false, eof;

	FZ_CHECK(fd >= 0 && write(fd, data, size) == (ssize_t)size);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = read_dev(path, pp, &opened, &raw, &eof);
	fz_pool_quiet(pp);

	/* Round 2: the replay source, frame by frame against the records. */
	src = rxp_src_pcap(path);
	FZ_CHECK(opened == (src != NULL));
	while (src) {
		uint32_t off = raw ? RXP_ETH_HLEN : 0, len;
		int rc = src->next(src, frame, sizeof(frame), &len);

		/* records the source leaves out: larger than a jumbo frame */
		while (i < n && recs[i].len + off > sizeof(frame))
			i++;
		if (rc == RXP_SRC_SKIPPED) { /* a record it made no frame of: said why */
			FZ_CHECK(len == RXP_DROP_L2_MALFORMED || len == RXP_DROP_PKT_TOO_SMALL ||
				 len == RXP_DROP_PKT_TOO_BIG);
			continue;
		}
		if (rc == RXP_SRC_OUTGOING) /* sent by the host: the device skips it too */
			continue;
		if (rc) {
			FZ_CHECK(i == n); /* it ended where the device did */
			break;
		}
		if (i == n) {
			FZ_CHECK(!eof); /* more than the device read */
			break;
		}
		FZ_CHECK(len == recs[i].len + off);
		FZ_CHECK(fnv(frame + off, recs[i].len, 0xcbf29ce484222325ull) == recs[i].hash);
		/* the ethertype in front of a raw or cooked record is the one
		 * the device found (the cooked header's, or the IP version's) */
		if (raw && recs[i].proto)
			FZ_CHECK((frame[12] << 8 | frame[13]) == recs[i].proto);
		i++;
	}
	if (src)
		src->close(src);
	close(fd);
	fz_pool_quiet(pp);
	return 0;
}
