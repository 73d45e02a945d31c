/*
 * rxpath capture: receive from a device and write what arrives to a pcap
 * file, through the capture wrapper (so it works with every device).
 *
 * Every queue is read until it ends (or the count, idle time or timeout
 * is reached): a queue that finishes early does not stop the others, so a
 * multi-queue sim device has every frame written, or counted as dropped by
 * reason. The summary goes to stdout, or to stderr when the capture does
 * (--write -); "ready" and the backend line always go to stderr.
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "capfile.h"
#include "cmd.h"
#include "live.h"
#include "opt.h"
#include "rxpath/dev.h"
#include "rxpath/sim.h"

#define CMD "capture"

static void usage(FILE *f)
{
	fprintf(f, "usage: rxpath capture --iface IF --write FILE [options]\n"
		   "       rxpath capture --read FILE --write FILE [options]\n"
		   "       rxpath capture --dev SPEC --write FILE [options]\n\n"
		   "Receive frames and write them to a pcap file (- for stdout).\n\n"
		   "  --iface IF       interface to receive on (needs root)\n"
		   "  --mode M         auto (default: AF_XDP zero-copy, copy mode, then\n"
		   "                   AF_PACKET), afxdp or afpacket\n"
		   "  --read FILE      read a capture file instead: pcap, pcapng (link types\n"
		   "                   may differ by interface), gzip or zstd, other wiretap\n"
		   "                   formats; '-' for stdin. Frames an SLL/SLL2 capture\n"
		   "                   says the host sent are skipped and counted (outgoing)\n"
		   "  --dev SPEC       any device spec: 'sim:count=1000,max=8000',\n"
		   "                   'fault:loss=0.01+afpacket:eth0,queues=2', ...\n"
		   "  --write FILE     pcap file to write (required); - for stdout. Classic\n"
		   "                   pcap: Ethernet, or raw IP when the frames read are of\n"
		   "                   another link type or of several (a frame whose link\n"
		   "                   headers were taken off and that is not IP is then\n"
		   "                   counted as not_ip, not written)\n"
		   "  --count N        stop after N frames (default: no limit; suffix k m g)\n"
		   "  --idle-ms MS     stop after MS ms without a frame once one arrived\n"
		   "                   (default 2000)\n"
		   "  --timeout-ms MS  stop after MS ms in all (default 30000)\n"
		   "  --queues N       queues to open with --iface, 1..64 (default 1)\n"
		   "  --json           the summary as JSON (keys: docs/capture.schema.json)\n"
		   "  -h, --help       this text\n\n"
		   "Prints the frames received and written and the drops by reason, on stdout\n"
		   "(stderr with --write -). Exit status: 0 ok; 1 packets or pages leaked, or\n"
		   "a frame neither written nor counted as dropped; 2 bad usage or input.\n");
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

struct cap_opts {
	const char *iface, *rd, *wr, *spec;
	enum rxp_live_mode mode;
	uint64_t count, idle, timeout, nq;
	bool json;
};

static int parse(int argc, char **argv, struct cap_opts *o)
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
					     {"json", no_argument, 0, 'J'},
					     {"help", no_argument, 0, 'h'},
					     {0, 0, 0, 0}};
	int c;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 'i':
			o->iface = optarg;
			break;
		case 'm':
			if (rxp_live_mode_parse(optarg, &o->mode))
				return rxp_usage_error(
					CMD, "bad --mode '%s' (auto, afxdp, afpacket)", optarg);
			break;
		case 'r':
			o->rd = optarg;
			break;
		case 'd':
			o->spec = optarg;
			break;
		case 'w':
			o->wr = optarg;
			break;
		case 'c':
			if (rxp_opt_u64(CMD, "--count", optarg, RXP_NUM_COUNT, 1,
					1000000000000000ull, &o->count))
				return RXP_EXIT_USAGE;
			break;
		case 'I':
			if (rxp_opt_u64(CMD, "--idle-ms", optarg, RXP_NUM_PLAIN, 1, 86400000,
					&o->idle))
				return RXP_EXIT_USAGE;
			break;
		case 'T':
			if (rxp_opt_u64(CMD, "--timeout-ms", optarg, RXP_NUM_PLAIN, 1,
					86400000ull * 365, &o->timeout))
				return RXP_EXIT_USAGE;
			break;
		case 'q':
			if (rxp_opt_u64(CMD, "--queues", optarg, RXP_NUM_PLAIN, 1, 64, &o->nq))
				return RXP_EXIT_USAGE;
			break;
		case 'J':
			o->json = true;
			break;
		case 'h':
			usage(stdout);
			return -1;
		default:
			return rxp_opt_getopt_error(CMD, c, argc, argv);
		}
	}
	if (optind < argc)
		return rxp_usage_error(CMD, "unexpected argument '%s' (see rxpath capture --help)",
				       argv[optind]);
	if (!o->wr)
		return rxp_usage_error(CMD, "--write FILE is required (see rxpath capture --help)");
	if (!!o->iface + !!o->rd + !!o->spec != 1)
		return rxp_usage_error(CMD, "give one of --iface, --read and --dev");
	if (!strcmp(o->wr, "-") && isatty(STDOUT_FILENO))
		return rxp_usage_error(CMD, "refusing to write a capture to a terminal");
	/* (libpcap would wait for a capture typed in) */
	if (o->rd && !strcmp(o->rd, "-") && isatty(STDIN_FILENO))
		return rxp_usage_error(CMD, "refusing to read a capture from a terminal");
	if (rxp_refuse_overwrite(CMD, o->rd, o->wr) ||
	    rxp_refuse_spec_overwrite(CMD, o->spec, o->wr))
		return RXP_EXIT_USAGE;
	return 0;
}

static struct rxp_dev *open_dev(const struct cap_opts *o, struct rxp_pktpool *pp)
{
	struct rxp_dev *d;
	char spec[4096];

	if (o->iface) {
		d = rxp_live_open(CMD, o->iface, (unsigned)o->nq, o->mode, pp);
		if (!d)
			fprintf(stderr, "rxpath capture: cannot receive on %s: %s\n", o->iface,
				rxp_cli_cause(errno));
		return d;
	}
	if (o->rd) {
		d = rxp_capfile_open(o->rd, pp, spec, sizeof(spec));
		if (!d)
			fprintf(stderr, "rxpath capture: cannot read %s: %s\n", o->rd, spec);
		return d;
	}
	d = rxp_dev_open(o->spec, pp);
	if (!d)
		fprintf(stderr, "rxpath capture: cannot open --dev '%s': %s\n", o->spec,
			rxp_cli_cause(errno));
	return d;
}

/* Read every queue until each has ended (*ended), or a limit is reached. */
static uint64_t capture_loop(const struct cap_opts *o, struct rxp_dev *d, bool *ended,
			     bool *timed_out)
{
	uint64_t done = 0, got = 0, t0 = now_ms(), last = 0;
	uint64_t all = d->nqueues >= 64 ? ~0ull : (1ull << d->nqueues) - 1;

	while (done != all && (!o->count || got < o->count)) {
		uint64_t t = now_ms(), before = got;
		struct pollfd pf[64];
		unsigned npf = 0;

		if (t - t0 > o->timeout || (last && t - last > o->idle)) {
			*timed_out = t - t0 > o->timeout;
			break;
		}
		for (unsigned q = 0; q < d->nqueues; q++) {
			struct rxp_pkt *pk[64];
			unsigned want =
				o->count && o->count - got < 64 ? (unsigned)(o->count - got) : 64;
			int n;

			if (done & (1ull << q) || !want)
				continue;
			n = rxp_dev_rx_burst(d, q, pk, want);
			if (n == -ENODATA) {
				done |= 1ull << q;
				continue;
			}
			for (int i = 0; i < n; i++)
				rxp_pkt_consume(pk[i]);
			if (n > 0) {
				got += (uint64_t)n;
				last = now_ms();
			}
		}
		if (got != before || done == all)
			continue;
		/* Nothing came: sleep on the queues that have a descriptor. */
		for (unsigned q = 0; q < d->nqueues && npf < 64; q++) {
			int fd = rxp_dev_poll_fd(d, q);

			if (fd >= 0 && !(done & (1ull << q)))
				pf[npf++] = (struct pollfd){.fd = fd, .events = POLLIN};
		}
		if (npf)
			(void)poll(pf, npf, 10);
	}
	*ended = done == all;
	return got;
}

static int capture_main(int argc, char **argv)
{
	struct cap_opts o = {.idle = 2000, .timeout = 30000, .nq = 1};
	struct rxp_pktpool_config pc = {.name = "capture", .n_pkts = 4096};
	struct rxp_pktpool_stats ps;
	struct rxp_pktpool *pp;
	struct rxp_dev *d;
	struct rxp_dev_stats st;
	uint64_t got, drops = 0;
	int rc = RXP_EXIT_OK;
	bool ended, timed_out = false;
	FILE *out;

	rc = parse(argc, argv, &o);
	if (rc)
		return rc < 0 ? RXP_EXIT_OK : rc;
	out = strcmp(o.wr, "-") ? stdout : stderr;
	rxp_cli_log_init(CMD);
	pp = rxp_pktpool_create(&pc);
	if (!pp) {
		fprintf(stderr, "rxpath capture: cannot create the packet pool: %s\n",
			strerror(errno));
		return RXP_EXIT_FAIL;
	}
	d = open_dev(&o, pp);
	if (!d) {
		rxp_pktpool_destroy(pp);
		return RXP_EXIT_USAGE;
	}
	d = rxp_capture_wrap(d, o.wr, RXP_CAPTURE_RX);
	if (!d) {
		fprintf(stderr, "rxpath capture: cannot write %s: %s\n", o.wr,
			rxp_cli_cause(errno));
		rxp_pktpool_destroy(pp);
		return RXP_EXIT_USAGE;
	}
	rxp_note_pcap_name(CMD, o.wr);
	fprintf(stderr, "rxpath capture: ready on %s\n", d->name);
	got = capture_loop(&o, d, &ended, &timed_out);
	rxp_dev_get_stats(d, &st);
	rxp_pktpool_get_stats(pp, &ps);
	for (unsigned r = 0; r < RXP_DROP_MAX; r++)
		drops += ps.drops[r];
	if (o.json) {
		bool first = true;

		fprintf(out,
			"{\"device\":\"%s\",\"frames\":%llu,\"written\":%llu,\"not_ip\":%llu,"
			"\"offered\":%llu,\"rx_dropped\":%llu,\"rx_no_buffer\":%llu,"
			"\"rx_outgoing\":%llu,\"drops\":{",
			d->name, (unsigned long long)got, (unsigned long long)st.captured,
			(unsigned long long)st.capture_not_ip, (unsigned long long)st.rx_offered,
			(unsigned long long)st.rx_dropped, (unsigned long long)st.rx_no_buffer,
			(unsigned long long)st.rx_outgoing);
		for (unsigned r = 0; r < RXP_DROP_MAX; r++)
			if (ps.drops[r]) {
				fprintf(out, "%s\"%s\":%llu", first ? "" : ",",
					rxp_drop_reason_name(r), (unsigned long long)ps.drops[r]);
				first = false;
			}
		fprintf(out, "}}\n");
	} else {
		fprintf(out, "frames %llu written %llu", (unsigned long long)got,
			(unsigned long long)st.captured);
		if (st.capture_not_ip)
			fprintf(out, " not_ip %llu", (unsigned long long)st.capture_not_ip);
		fprintf(out, " rx_dropped %llu rx_no_buffer %llu",
			(unsigned long long)st.rx_dropped, (unsigned long long)st.rx_no_buffer);
		if (st.rx_outgoing)
			fprintf(out, " outgoing %llu", (unsigned long long)st.rx_outgoing);
		for (unsigned r = 0; r < RXP_DROP_MAX; r++)
			if (ps.drops[r])
				fprintf(out, " %s %llu", rxp_drop_reason_name(r),
					(unsigned long long)ps.drops[r]);
		fputc('\n', out);
	}
	/* A sim device knows what it offered: each frame was written or
	 * dropped with a reason (the count, a timeout or the idle time may
	 * stop the capture before the device ends: then fewer were taken). */
	/* a raw-IP file holds IP alone: what else the input had is said */
	if (st.capture_not_ip)
		fprintf(stderr,
			"rxpath capture: %llu frames not written: not IP, and %s is raw IP (the "
			"input's link headers are taken off)\n",
			(unsigned long long)st.capture_not_ip, o.wr);
	if (ended && st.rx_offered &&
	    st.captured + st.capture_not_ip + drops != st.rx_offered + st.fault_duplicated) {
		fprintf(stderr,
			"rxpath capture: FAILED: %llu frames offered, %llu written, %llu dropped\n",
			(unsigned long long)st.rx_offered, (unsigned long long)st.captured,
			(unsigned long long)drops);
		rc = RXP_EXIT_FAIL;
	}
	if (o.count && got < o.count && ended)
		fprintf(stderr, "rxpath capture: stopped after %llu of %llu frames (input ended)\n",
			(unsigned long long)got, (unsigned long long)o.count);
	/* A file or device that has an end, stopped before it: said, as the
	 * count is (a live interface has no end; the timeout is its stop). */
	if (timed_out && !ended && !o.iface)
		fprintf(stderr,
			"rxpath capture: stopped at --timeout-ms %llu before the input ended "
			"(%llu frames)\n",
			(unsigned long long)o.timeout, (unsigned long long)got);
	/* the library said where and why (a warning above) */
	if (st.rx_input_cut)
		rc = RXP_EXIT_FAIL;
	if (rxp_dev_close(d)) {
		fprintf(stderr, "rxpath capture: FAILED: pages outstanding at close\n");
		rc = RXP_EXIT_FAIL;
	}
	if (rxp_pktpool_destroy(pp)) {
		fprintf(stderr, "rxpath capture: FAILED: packets outstanding at exit\n");
		rc = RXP_EXIT_FAIL;
	}
	return rc;
}

RXP_COMMAND(capture, "capture",
	    "receive from an interface (afpacket/afxdp), file or device spec and write a pcap",
	    capture_main);
