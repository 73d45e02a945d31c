/*
 * rxpath capture: receive from a device and write what arrives to a pcap
 * file, through the capture wrapper (so it works with every device).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd.h"
#include "rxpath/dev.h"
#include "rxpath/sim.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: rxpath capture --iface IF --write FILE [options]\n"
		   "       rxpath capture --read FILE --write FILE [options]\n"
		   "       rxpath capture --dev SPEC --write FILE [options]\n\n"
		   "Receive frames and write them to a pcap file.\n\n"
		   "  --iface IF       interface to receive on (needs root)\n"
		   "  --mode M         afpacket (default) or afxdp (copy mode)\n"
		   "  --read FILE      read a pcap/pcapng file instead (pcap device)\n"
		   "  --dev SPEC       any device spec: 'sim:count=1000,max=8000',\n"
		   "                   'fault:loss=0.01+afpacket:eth0,queues=2', ...\n"
		   "  --write FILE     pcap file to write (required)\n"
		   "  --count N        stop after N frames (default: no limit)\n"
		   "  --idle-ms MS     stop after MS ms without a frame once one arrived\n"
		   "                   (default 2000)\n"
		   "  --timeout-ms MS  stop after MS ms in all (default 30000)\n"
		   "  --queues N       queues to open (default 1)\n"
		   "Prints the frames written and the device counters.\n");
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int capture_main(int argc, char **argv)
{
	static const struct option opts[] = {{"iface", required_argument, 0, 'i'},
					     {"mode", required_argument, 0, 'm'},
					     {"read", required_argument, 0, 'r'},
					     {"write", required_argument, 0, 'w'},
					     {"count", required_argument, 0, 'c'},
					     {"idle-ms", required_argument, 0, 'I'},
					     {"timeout-ms", required_argument, 0, 'T'},
					     {"queues", required_argument, 0, 'q'},
					     {"dev", required_argument, 0, 'd'},
					     {"help", no_argument, 0, 'h'},
					     {0, 0, 0, 0}};
	const char *iface = NULL, *mode = "afpacket", *rd = NULL, *wr = NULL, *spec = NULL;
	uint64_t count = 0, got = 0, idle = 2000, timeout = 30000, t0, last = 0;
	unsigned nq = 1;
	struct rxp_pktpool_config pc = {.name = "capture", .n_pkts = 4096};
	struct rxp_pktpool *pp;
	struct rxp_dev *d;
	struct rxp_dev_stats st;
	int c, rc = RXP_EXIT_OK;
	bool eof = false;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'i':
			iface = optarg;
			break;
		case 'm':
			mode = optarg;
			break;
		case 'r':
			rd = optarg;
			break;
		case 'd':
			spec = optarg;
			break;
		case 'w':
			wr = optarg;
			break;
		case 'c':
			count = strtoull(optarg, NULL, 10);
			break;
		case 'I':
			idle = strtoull(optarg, NULL, 10);
			break;
		case 'T':
			timeout = strtoull(optarg, NULL, 10);
			break;
		case 'q':
			nq = (unsigned)atoi(optarg);
			break;
		case 'h':
			usage(stdout);
			return RXP_EXIT_OK;
		default:
			usage(stderr);
			return RXP_EXIT_USAGE;
		}
	}
	if (!wr || (!!iface + !!rd + !!spec) != 1 || nq < 1 || nq > 64) {
		usage(stderr);
		return RXP_EXIT_USAGE;
	}
	pp = rxp_pktpool_create(&pc);
	if (!pp)
		return RXP_EXIT_FAIL;
	if (spec) {
		d = rxp_dev_open(spec, pp);
		if (d)
			nq = d->nqueues;
	} else if (rd) {
		d = rxp_pcap_open(rd, pp);
	} else if (!strcmp(mode, "afxdp")) {
		struct rxp_afxdp_config xc = {.ifname = iface, .nqueues = nq};

		d = rxp_afxdp_open(&xc, pp);
	} else if (!strcmp(mode, "afpacket")) {
		struct rxp_afpacket_config ac = {.ifname = iface, .nqueues = nq};

		d = rxp_afpacket_open(&ac, pp);
	} else {
		usage(stderr);
		rxp_pktpool_destroy(pp);
		return RXP_EXIT_USAGE;
	}
	if (!d) {
		fprintf(stderr, "rxpath capture: cannot open %s: %s\n",
			spec ? spec
			: rd ? rd
			     : iface,
			strerror(errno));
		rxp_pktpool_destroy(pp);
		return RXP_EXIT_USAGE;
	}
	d = rxp_capture_wrap(d, wr, RXP_CAPTURE_RX);
	if (!d) {
		fprintf(stderr, "rxpath capture: cannot write %s: %s\n", wr, strerror(errno));
		rxp_pktpool_destroy(pp);
		return RXP_EXIT_USAGE;
	}
	printf("rxpath capture: ready on %s\n", d->name);
	fflush(stdout);
	t0 = now_ms();
	while (!eof && (!count || got < count)) {
		uint64_t t = now_ms();

		if (t - t0 > timeout || (last && t - last > idle))
			break;
		uint64_t before = got;

		for (unsigned q = 0; q < nq; q++) {
			struct rxp_pkt *pk[64];
			unsigned want = count && count - got < 64 ? (unsigned)(count - got) : 64;
			int n = rxp_dev_rx_burst(d, q, pk, want);

			if (n == -ENODATA) {
				eof = true;
				break;
			}
			for (int i = 0; i < n; i++)
				rxp_pkt_consume(pk[i]);
			if (n > 0) {
				got += (uint64_t)n;
				last = now_ms();
			}
		}
		if (got == before && !eof)
			rxp_dev_wait(d, 0, nq == 1 ? 10 : 1);
	}
	rxp_dev_get_stats(d, &st);
	printf("frames %llu written %llu rx_dropped %llu rx_no_buffer %llu\n",
	       (unsigned long long)got, (unsigned long long)st.captured,
	       (unsigned long long)st.rx_dropped, (unsigned long long)st.rx_no_buffer);
	if (rxp_dev_close(d)) {
		fprintf(stderr, "rxpath capture: pages outstanding at close\n");
		rc = RXP_EXIT_FAIL;
	}
	if (rxp_pktpool_destroy(pp)) {
		fprintf(stderr, "rxpath capture: packets outstanding at exit\n");
		rc = RXP_EXIT_FAIL;
	}
	if (count && got < count)
		rc = RXP_EXIT_FAIL;
	return rc;
}

RXP_COMMAND(capture, "capture",
	    "receive from an interface (afpacket/afxdp) or file and write a pcap", capture_main);
