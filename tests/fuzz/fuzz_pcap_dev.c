/*
 * Fuzz the pcap device and the sim NIC's pcap replay: the input is a capture
 * file (pcap or pcapng, any link type). Every packet read is classified and
 * freed; the sim replays the same file through its rings. Nothing may leak.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rxpath/dev.h"
#include "rxpath/sim.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rxp_pktpool_config pc = {.name = "fuzz", .n_pkts = 256, .n_bufs = 64, .n_large = 4};
	struct rxp_pktpool *pp = rxp_pktpool_create(&pc);
	int fd = memfd_create("fuzz.pcap", 0);
	char path[64];
	struct rxp_dev *d;

	if (fd < 0 || !pp || write(fd, data, size) != (ssize_t)size)
		abort();
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	d = rxp_pcap_open(path, pp);
	for (int round = 0; d && round < 2; round++) {
		for (int i = 0; i < 1000; i++) {
			struct rxp_pkt *pk[16];
			int n = rxp_dev_rx_burst(d, 0, pk, 16);

			if (n <= 0)
				break;
			for (int k = 0; k < n; k++)
				rxp_pkt_consume(pk[k]);
		}
		if (rxp_dev_close(d))
			abort();
		/* Round two: the same file replayed through the sim NIC. */
		struct rxp_sim_config sc = {
			.nqueues = 2, .ring_size = 64, .pcap_path = path, .zero_len_rate = 0.1};

		d = round == 0 ? rxp_sim_open(&sc, pp) : NULL;
	}
	close(fd);
	if (rxp_pktpool_destroy(pp))
		abort();
	return 0;
}
