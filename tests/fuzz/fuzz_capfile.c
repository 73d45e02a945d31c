/*
 * Fuzz run --pcap's capture-file device (tools/capfile.c: libwiretap,
 * through rxpath defrag's reader) against the library's pcap device
 * (libpcap) on the same file. The input is a capture file.
 *
 * The capfile device must account for every packet record it read: each
 * delivered or dropped with a reason (its rx_packets and rx_dropped, and
 * the pool's drop counts), every delivered packet non-empty, a cut or
 * corrupt end counted once. Where both readers read the whole file (libpcap
 * opened it, neither saw a cut or corrupt record) and the file is a plain
 * pcap or pcapng, libpcap's packets must be wiretap's, in order: each a
 * prefix of one of them, with its protocol when it is all of it (both take
 * link headers off with rxp_decap_payload). Not more: libpcap cuts a
 * record longer than the file's snapshot length to it (wiretap gives it
 * whole, as tshark shows it), and a record cut inside its link headers is
 * then dropped (l2_bad_header) where wiretap's whole one is delivered.
 * Nothing may leak.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "capfile.h"
#include "rxpath/dev.h"
#include "rxpath/drop.h"
#include "fuzz.h"

#define FZ_MAXREC 4096

#define FZ_ARENA (8u << 20)

struct rec {
	uint32_t len;
	uint16_t proto;
	uint32_t at; /* its bytes in arena (UINT32_MAX: not kept) */
};

static struct rec a[FZ_MAXREC], b[FZ_MAXREC];
static uint8_t arena[FZ_ARENA];
static uint32_t used;

/* libwiretap loses a 2 KiB Buffer (ws_buffer_init, from wtap_read) on some
 * damaged gzip-compressed pcapng files, with no code of ours on the stack:
 * fuzz_dio's rule (see there, and its corpus's regress-leak-ba59dec6d0ace4e1),
 * which also hides a Buffer of the reader's own left unfreed (in->buf and
 * in->rec's, made in dio_open_in and let go in dio_close_in). Every other
 * leak is reported. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
	return "leak:ws_buffer_init\n";
}

/* Every packet of d, recorded in r and freed; how many (at most FZ_MAXREC,
 * *all when the device ended), its stats in *st. Closes d. */
static unsigned drain(struct rxp_dev *d, struct rec *r, bool *all, struct rxp_dev_stats *st)
{
	unsigned n = 0;

	*all = false;
	while (n + 16 <= FZ_MAXREC) {
		struct rxp_pkt *pk[16];
		int got = rxp_dev_rx_burst(d, 0, pk, 16);

		if (got <= 0) {
			FZ_CHECK(got == -ENODATA);
			*all = true;
			break;
		}
		for (int k = 0; k < got; k++) {
			struct rxp_pkt *p = pk[k];

			uint32_t at = UINT32_MAX;

			FZ_CHECK(p->len > 0 && p->len <= 65536 + 512);
			if (p->len <= FZ_ARENA - used) {
				FZ_CHECK(!rxp_pkt_copy_bits(p, 0, arena + used, p->len));
				at = used;
				used += p->len;
			}
			r[n++] = (struct rec){p->len, p->protocol, at};
			rxp_pkt_consume(p);
		}
	}
	rxp_dev_get_stats(d, st);
	FZ_CHECK(rxp_dev_close(d) == 0);
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rxp_pktpool_config pc = {.name = "fzcf", .n_pkts = 256, .n_bufs = 64, .n_large = 4};
	struct rxp_pktpool *pp = fz_pool(&pc);
	struct rxp_pktpool_stats ps0, ps1;
	struct rxp_dev_stats sa, sb;
	int fd = memfd_create("fuzz.cap", 0);
	bool all_a, all_b, plain;
	struct rxp_dev *d;
	unsigned na, nb;
	uint64_t drops = 0;
	char path[64], err[256];

	FZ_CHECK(fd >= 0 && write(fd, data, size) == (ssize_t)size);
	used = 0;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	/* a plain pcap (either order and resolution) or pcapng, not
	 * compressed: what libpcap also reads */
	plain = size >= 4 &&
		(!memcmp(data, "\xd4\xc3\xb2\xa1", 4) || !memcmp(data, "\xa1\xb2\xc3\xd4", 4) ||
		 !memcmp(data, "\x4d\x3c\xb2\xa1", 4) || !memcmp(data, "\xa1\xb2\x3c\x4d", 4) ||
		 !memcmp(data, "\x0a\x0d\x0d\x0a", 4));
	rxp_pktpool_get_stats(pp, &ps0);
	d = rxp_capfile_open(path, pp, err, sizeof(err));
	if (!d) {
		FZ_CHECK(err[0]); /* a reason, said */
		close(fd);
		return 0;
	}
	/* wiretap's reading of a plain pcap or pcapng (not one of the
	 * variants it also knows by the same magic number, which libpcap
	 * reads as plain pcap, and not compressed) */
	plain = plain && !rxp_capfile_compression(d) &&
		(!strcmp(rxp_capfile_format(d), "pcap") ||
		 !strcmp(rxp_capfile_format(d), "nsecpcap") ||
		 !strcmp(rxp_capfile_format(d), "pcapng"));
	na = drain(d, a, &all_a, &sa);
	rxp_pktpool_get_stats(pp, &ps1);
	for (unsigned r = 0; r < RXP_DROP_MAX; r++)
		drops += ps1.drops[r] - ps0.drops[r];
	FZ_CHECK(sa.rx_packets == na || !all_a);
	FZ_CHECK(drops == sa.rx_dropped);
	FZ_CHECK(sa.rx_input_cut <= 1);
	fz_pool_quiet(pp);

	d = plain && all_a && !sa.rx_input_cut ? rxp_pcap_open(path, pp) : NULL;
	if (d) {
		nb = drain(d, b, &all_b, &sb);
		for (unsigned j = 0, i = 0; all_b && !sb.rx_input_cut && j < nb; j++, i++) {
			if (b[j].at == UINT32_MAX)
				break; /* past what was kept */
			for (;; i++) {
				FZ_CHECK(i < na); /* libpcap gave one wiretap did not */
				if (a[i].at == UINT32_MAX)
					goto done;
				if (b[j].len <= a[i].len &&
				    !memcmp(arena + b[j].at, arena + a[i].at, b[j].len))
					break;
			}
			if (b[j].len == a[i].len)
				FZ_CHECK(b[j].proto == a[i].proto);
		}
	done:
		fz_pool_quiet(pp);
	}
	close(fd);
	return 0;
}
