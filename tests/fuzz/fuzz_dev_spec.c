/*
 * Fuzz rxp_dev_open()'s spec parser. Specs that would touch the outside
 * world (files, interfaces) or allocate without bound (ring/page sizes) are
 * skipped; the rest are opened, polled once and closed, leaking nothing.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rxpath/dev.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const skip[] = {"capture", "pcap", "replay", "af",
					   "ring",    "page", "buf"};
	struct rxp_pktpool_config pc = {.name = "fuzz", .n_pkts = 256, .n_bufs = 64};
	struct rxp_pktpool *pp;
	struct rxp_dev *d;
	char *s;

	if (size > 256)
		return 0;
	s = malloc(size + 1);
	if (!s)
		abort();
	memcpy(s, data, size);
	s[size] = 0;
	for (size_t i = 0; i < sizeof(skip) / sizeof(skip[0]); i++)
		if (strstr(s, skip[i])) {
			free(s);
			return 0;
		}
	pp = rxp_pktpool_create(&pc);
	d = rxp_dev_open(s, pp);
	if (d) {
		for (unsigned q = 0; q < d->nqueues; q++) {
			struct rxp_pkt *pk[8];
			int n = rxp_dev_rx_burst(d, q, pk, 8);

			for (int i = 0; i < n; i++)
				rxp_pkt_consume(pk[i]);
		}
		if (rxp_dev_close(d))
			abort();
	}
	if (rxp_pktpool_destroy(pp))
		abort();
	free(s);
	return 0;
}
