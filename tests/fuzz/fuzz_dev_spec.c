/*
 * Fuzz rxp_dev_open()'s spec parser. Specs that would touch the outside
 * world (files, interfaces) or allocate without bound (ring/page sizes) are
 * skipped; the rest are opened, polled once and closed, leaking nothing.
 *
 * Speed: a sim queue with the default 512 descriptors costs a page pool of
 * 1280 pages (megabytes whose ASan shadow is written when they are
 * allocated and again when freed), made and destroyed per input. As the
 * input may not name ring or page-pool sizes (the words are skipped), the
 * target sets them: FZ_SIM_KEYS goes in front of a sim device's own keys,
 * so the keys the input gives are parsed exactly as they would be without.
 */
#include <errno.h>

#include "rxpath/dev.h"
#include "fuzz.h"

#define FZ_SIM_KEYS "ring=16,pages=24,"

/* The spec with FZ_SIM_KEYS at the start of a sim device's keys (the last
 * '+'-separated part, as rxp_dev_open reads it), or a copy. */
static char *with_keys(const char *s)
{
	const char *dev = strrchr(s, '+');
	size_t pre, n = strlen(s);
	char *o = malloc(n + sizeof(FZ_SIM_KEYS) + 2);

	FZ_CHECK(o);
	dev = dev ? dev + 1 : s;
	pre = (size_t)(dev - s);
	if (strncmp(dev, "sim", 3) || (dev[3] && dev[3] != ':')) {
		memcpy(o, s, n + 1);
		return o;
	}
	memcpy(o, s, pre);
	strcpy(o + pre, "sim:" FZ_SIM_KEYS);
	strcat(o, dev[3] ? dev + 4 : "");
	return o;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* inflight: the generator's slots times their fragment orders are
	 * sized by the spec alone (inflight=1048576 with mtu=68 asks for
	 * 8.5 GB), like ring, page and buf */
	static const char *const skip[] = {"capture", "pcap", "replay", "af",
					   "ring",    "page", "buf",	"inflight"};
	struct rxp_pktpool_config pc = {.name = "fuzz", .n_pkts = 256, .n_bufs = 64};
	struct rxp_pktpool *pp = fz_pool(&pc);
	struct rxp_dev *d;
	char *s, *spec;

	if (size > 256)
		return 0;
	s = malloc(size + 1);
	FZ_CHECK(s);
	memcpy(s, data, size);
	s[size] = 0;
	for (size_t i = 0; i < sizeof(skip) / sizeof(skip[0]); i++)
		if (strstr(s, skip[i])) {
			free(s);
			return 0;
		}
	spec = with_keys(s);
	d = rxp_dev_open(spec, pp);
	if (d) {
		/* one burst of two from the first and the last queue (more
		 * packets only cost the generator's time: the spec is what
		 * is fuzzed, and two show that the device it made works) */
		for (unsigned q = 0; q < d->nqueues; q += d->nqueues - 1) {
			struct rxp_pkt *pk[2];
			int n = rxp_dev_rx_burst(d, q, pk, 2);

			/* packets, or the end of a source that had none; a
			 * queue the device made never fails */
			FZ_CHECK((n >= 0 && n <= 2) || n == -ENODATA);
			for (int i = 0; i < n; i++)
				rxp_pkt_consume(pk[i]);
			if (d->nqueues == 1)
				break;
		}
		FZ_CHECK(rxp_dev_close(d) == 0);
	}
	fz_pool_quiet(pp);
	free(spec);
	free(s);
	return 0;
}
