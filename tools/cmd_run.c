/*
 * rxpath run: the main job. Workers run the receive path (device burst, XDP
 * hook, IPv4/IPv6 input, reassembly, UDP, TIPC on port 6118) over the
 * built-in mixed workload on the sim NIC, a pcap file, a device spec or a
 * live interface, and a sink checks every delivered datagram and message.
 * Prints a live line on a terminal and a summary at the end (JSON with
 * --json; on stderr when --write - puts the capture on stdout); exits 1 if
 * anything leaked, a payload was corrupted or a datagram went unaccounted.
 *
 * Devices are opened through the spec path (rxp_dev_open_with): the
 * built-in workload is "fault:loss=0.001,zl=0.001,seed=S+sim:...,src=workload",
 * so frame faults come from the fault wrapper alone, and --dev composes
 * any other wrapper with any device. --write records each worker's
 * deliveries in a file of its own (each in time order), merged by time at
 * the end.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <pcap/pcap.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "capfile.h"
#include "cmd.h"
#include "live.h"
#include "opt.h"
#include "run_report.h"
#include "rxpath/sim.h"
#include "rxpath/tipc.h"
#include "rxpath/worker.h"
#include "rxpath/workload.h"

#define CMD "run"

static volatile bool stop; /* the workers stop */
static volatile sig_atomic_t interrupted; /* SIGINT, SIGTERM: stop as at --duration */

static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

struct run_ctx {
	uint8_t *buf[RXP_WORKER_MAX]; /* per worker: a payload copy to verify */
	uint64_t corrupted[RXP_WORKER_MAX];
	uint64_t unverified[RXP_WORKER_MAX]; /* pcap/iface traffic not ours */
	bool verify; /* every payload must carry the generator's check header */
	/* --write: one writer per worker (its own file, in time order) */
	struct rxp_pcap_writer *writer[RXP_WORKER_MAX];
	char *wpath[RXP_WORKER_MAX];
	struct rxp_pcap_writer *out; /* with several: the merged output */
	bool stamp_wall; /* the device stamps nothing: use the wall clock */
	struct rxp_ledger *ledger; /* the built-in workload's accounting */
};

static void check_payload(struct run_ctx *c, unsigned wid, const struct rxp_pkt *pkt, uint32_t off)
{
	uint32_t len = pkt->len - off;
	uint8_t magic[4];

	/* Live or captured traffic is checked when it carries the generator's
	 * header (scripts/netns-demo.sh sends it); the workload's always must. */
	if (!c->verify && (rxp_pkt_copy_bits(pkt, off, magic, 4) ||
			   ((uint32_t)magic[0] << 24 | (uint32_t)magic[1] << 16 |
			    (uint32_t)magic[2] << 8 | magic[3]) != RXP_GEN_MAGIC)) {
		c->unverified[wid]++;
		return;
	}
	if (rxp_pkt_copy_bits(pkt, off, c->buf[wid], len) || rxp_gen_verify(c->buf[wid], len))
		c->corrupted[wid]++;
	else if (c->ledger)
		rxp_ledger_delivered(c->ledger, c->buf[wid], len);
}

/* A delivered UDP datagram (data at the payload). Consumes pkt. */
static void on_datagram(void *arg, struct rxp_worker *w, struct rxp_pkt *pkt)
{
	struct run_ctx *c = arg;
	unsigned wid = rxp_worker_id(w);

	check_payload(c, wid, pkt, 0);
	if (c->writer[wid]) {
		/* record the whole datagram: from its IP header */
		uint32_t l4 = (uint32_t)(pkt->data - pkt->head) - pkt->network_off;

		if (c->stamp_wall || !pkt->tstamp_ns) {
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			pkt->tstamp_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
		}
		if (rxp_pkt_push(pkt, l4))
			rxp_pcap_writer_write_pkt(c->writer[wid], pkt);
	}
	rxp_pkt_consume(pkt);
}

/* A delivered TIPC message (data at its header). Consumes pkt. */
static void on_message(void *arg, struct rxp_worker *w, struct rxp_pkt *pkt)
{
	struct run_ctx *c = arg;
	uint8_t h[RXP_TIPC_MIN_H_SIZE];

	if (rxp_pkt_copy_bits(pkt, 0, h, sizeof(h)) == 0)
		check_payload(c, rxp_worker_id(w), pkt, rxp_tipc_hsize(h));
	else
		c->corrupted[rxp_worker_id(w)]++;
	rxp_pkt_consume(pkt);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: rxpath run [options]\n\n"
		"Runs the receive path on worker threads and checks what it delivers.\n"
		"Default input: the built-in sim NIC with a mixed workload (IPv4/IPv6 UDP\n"
		"datagrams of 16 B..64 KiB fragmented at MTU 1500, 9000-byte jumbo frames over\n"
		"2 KiB buffers, TIPC over UDP with bundles and fragmented messages; reordered,\n"
		"duplicate and overlapping fragments), under the fault wrapper (0.1%% frame\n"
		"loss, zero-length descriptors), deterministic from --seed; every payload is\n"
		"verified, and every datagram and message the workload sends is accounted\n"
		"for: delivered, cut by the end of the run, or lost to a counted drop\n"
		"(sent, lost by cause, unaccounted in the summary).\n\n"
		"  -w, --workers N       worker threads, 1..%d (default: online CPUs)\n"
		"  -n, --frames N        frames the workload sends (default 2000000; suffix k m "
		"g)\n"
		"  -d, --duration SEC    stop after SEC seconds (suffix ms, us, ns allowed;\n"
		"                        default: when the input ends; 10 with --iface); the\n"
		"                        workload stops sending and what is in flight is finished\n"
		"  -s, --seed N          workload seed (default 1)\n"
		"      --in-flight N     datagrams in flight at once, fragments shuffled (the\n"
		"                        overload case; default 1)\n"
		"      --pcap FILE       read a capture instead (time from its stamps): pcap,\n"
		"                        pcapng (link types may differ by interface), gzip or\n"
		"                        zstd, other wiretap formats; '-' for stdin. Ethernet\n"
		"                        (VLAN, MPLS, PPPoE), raw IP, SLL, SLL2, NULL, LOOP,\n"
		"                        PPP, PPPoE, C_HDLC, NFLOG, 802.11, radiotap; frames\n"
		"                        an SLL/SLL2 capture says the host sent are skipped\n"
		"                        and counted (outgoing), as AF_PACKET skips them\n"
		"      --iface IF        receive live from IF (root): AF_XDP zero-copy, AF_XDP\n"
		"                        copy mode, else AF_PACKET; says which on stderr\n"
		"      --mode M          --iface backend: auto (default), afxdp or afpacket\n"
		"      --dev SPEC        any device spec, e.g. 'fault:loss=0.01+pcap:in.pcap',\n"
		"                        'sim:queues=2,src=workload' (see rxpath(1))\n"
		"      --write FILE      record delivered UDP datagrams to a pcap (raw IP), in "
		"time\n"
		"                        order; - for stdout (the summary then goes to stderr)\n"
		"      --mem-limit B     reassembly memory per worker (default 4m; suffix k m g)\n"
		"      --udp-csum M      UDP checksums: check, skip, or auto (offload detection,\n"
		"                        as Suricata's; default auto for --pcap/--iface, else "
		"check)\n"
		"  -q, --quiet           no live line\n"
		"      --json            print the summary as JSON (keys: docs/run.schema.json)\n"
		"  -h, --help            this text\n\n"
		"Exit status: 0 ok; 1 if packets or pages leaked, a payload was corrupted or a\n"
		"datagram went unaccounted; 2 for bad options or input.\n",
		RXP_WORKER_MAX);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct rxp_workload_config wl_cfg;
static unsigned wl_next_queue; /* the sim opens its queues' sources in order */
static struct rxp_worker_group *runner_group;
static volatile bool runner_done;
static uint64_t runner_end_ns;

static void *runner_main(void *arg)
{
	(void)arg;
	rxp_worker_group_run(runner_group, &stop);
	runner_end_ns = now_ns();
	runner_done = true;
	return NULL;
}

/* The workload stops when the run does: a source past its end (or told to
 * stop) returns -ENODATA, so what is in flight still completes. */
static volatile bool src_stop;

struct stop_src {
	struct rxp_src src;
	struct rxp_src *inner;
};

static int stop_next(struct rxp_src *s, uint8_t *buf, uint32_t cap, uint32_t *len)
{
	struct stop_src *ss = (struct stop_src *)s;

	if (src_stop)
		return -ENODATA;
	return ss->inner->next(ss->inner, buf, cap, len);
}

static void stop_dropped(struct rxp_src *s, const uint8_t *frame, uint32_t len,
			 enum rxp_drop_reason reason)
{
	struct stop_src *ss = (struct stop_src *)s;

	if (ss->inner->dropped)
		ss->inner->dropped(ss->inner, frame, len, reason);
}

static void stop_close(struct rxp_src *s)
{
	struct stop_src *ss = (struct stop_src *)s;

	ss->inner->close(ss->inner);
	free(ss);
}

static struct rxp_src *open_workload(void *arg)
{
	struct stop_src *ss = calloc(1, sizeof(*ss));

	struct rxp_workload_config c = wl_cfg;

	(void)arg;
	if (!ss)
		return NULL;
	c.queue = wl_next_queue++;
	ss->inner = rxp_workload_src(&c);
	if (!ss->inner) {
		free(ss);
		return NULL;
	}
	ss->src.next = stop_next;
	ss->src.close = stop_close;
	ss->src.dropped = stop_dropped;
	return &ss->src;
}

static void collect(struct rxp_worker_group *g, struct rxp_dev *dev, struct rxp_pktpool *pp,
		    struct run_ctx *c, unsigned nw, struct totals *t)
{
	memset(t, 0, sizeof(*t));
	rxp_worker_group_stats(g, &t->w, &t->ip4, &t->ip6, &t->udp, &t->reasm, &t->tipc);
	rxp_dev_get_stats(dev, &t->dev);
	rxp_pktpool_get_stats(pp, &t->pool);
	for (unsigned i = 0; i < nw; i++) {
		t->corrupted += c->corrupted[i];
		t->unverified += c->unverified[i];
	}
}

struct run_opts {
	unsigned nw;
	uint64_t frames, seed, mem_limit, duration_ns, in_flight;
	const char *pcap, *iface, *spec, *write;
	enum rxp_live_mode mode;
	enum rxp_udp_csum_mode csum;
	bool csum_set, quiet, json;
	bool drains; /* the input is the workload: stopping it lets the rest finish */
};

/* 0, RXP_EXIT_USAGE after printing why, or -1 for --help (printed). */
static int parse(int argc, char **argv, struct run_opts *o)
{
	static const struct option lo[] = {
		{"workers", required_argument, 0, 'w'},
		{"frames", required_argument, 0, 'n'},
		{"duration", required_argument, 0, 'd'},
		{"seed", required_argument, 0, 's'},
		{"pcap", required_argument, 0, 'P'},
		{"iface", required_argument, 0, 'I'},
		{"write", required_argument, 0, 'W'},
		{"mem-limit", required_argument, 0, 'M'},
		{"dev", required_argument, 0, 'D'},
		{"mode", required_argument, 0, 'm'},
		{"in-flight", required_argument, 0, 'F'},
		{"udp-csum", required_argument, 0, 'C'},
		{"quiet", no_argument, 0, 'q'},
		{"json", no_argument, 0, 'J'},
		{"help", no_argument, 0, 'h'},
		{0, 0, 0, 0},
	};
	uint64_t v;
	int c;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":w:n:d:s:qh", lo, NULL)) != -1) {
		switch (c) {
		case 'w':
			if (rxp_opt_u64(CMD, "--workers", optarg, RXP_NUM_PLAIN, 1, RXP_WORKER_MAX,
					&v))
				return RXP_EXIT_USAGE;
			o->nw = (unsigned)v;
			break;
		case 'n':
			if (rxp_opt_u64(CMD, "--frames", optarg, RXP_NUM_COUNT, 1,
					1000000000000000ull, &o->frames))
				return RXP_EXIT_USAGE;
			break;
		case 'd':
			if (rxp_opt_duration(CMD, "--duration", optarg, 1000000ull,
					     86400ull * 365 * 1000000000ull, &o->duration_ns))
				return RXP_EXIT_USAGE;
			break;
		case 's':
			if (rxp_opt_u64(CMD, "--seed", optarg, RXP_NUM_PLAIN, 0, UINT64_MAX,
					&o->seed))
				return RXP_EXIT_USAGE;
			break;
		case 'F':
			if (rxp_opt_u64(CMD, "--in-flight", optarg, RXP_NUM_COUNT, 1,
					RXP_GEN_IN_FLIGHT_MAX, &o->in_flight))
				return RXP_EXIT_USAGE;
			break;
		case 'M':
			if (rxp_opt_u64(CMD, "--mem-limit", optarg, RXP_NUM_BYTES, 64 << 10,
					1ull << 40, &o->mem_limit))
				return RXP_EXIT_USAGE;
			break;
		case 'P':
			o->pcap = optarg;
			break;
		case 'I':
			o->iface = optarg;
			break;
		case 'D':
			o->spec = optarg;
			break;
		case 'W':
			o->write = optarg;
			break;
		case 'm':
			if (rxp_live_mode_parse(optarg, &o->mode))
				return rxp_usage_error(
					CMD, "bad --mode '%s' (auto, afxdp, afpacket)", optarg);
			break;
		case 'C':
			o->csum_set = true;
			if (!strcmp(optarg, "check"))
				o->csum = RXP_UDP_CSUM_CHECK;
			else if (!strcmp(optarg, "skip"))
				o->csum = RXP_UDP_CSUM_SKIP;
			else if (!strcmp(optarg, "auto"))
				o->csum = RXP_UDP_CSUM_AUTO;
			else
				return rxp_usage_error(
					CMD, "bad --udp-csum '%s' (check, skip, auto)", optarg);
			break;
		case 'q':
			o->quiet = true;
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
		return rxp_usage_error(CMD, "unexpected argument '%s' (see rxpath run --help)",
				       argv[optind]);
	if (!!o->pcap + !!o->iface + !!o->spec > 1)
		return rxp_usage_error(CMD, "--pcap, --iface and --dev exclude each other");
	if (o->in_flight && (o->pcap || o->iface))
		return rxp_usage_error(CMD, "--in-flight shapes the built-in workload: not with "
					    "--pcap or --iface");
	if (o->in_flight && o->spec && !strstr(o->spec, "src=workload"))
		return rxp_usage_error(CMD, "--in-flight shapes the built-in workload: with --dev "
					    "only for a spec with src=workload");
	if (!o->csum_set)
		o->csum = o->pcap || o->iface ? RXP_UDP_CSUM_AUTO : RXP_UDP_CSUM_CHECK;
	o->drains = !o->pcap && !o->iface && (!o->spec || strstr(o->spec, "src=workload"));
	return 0;
}

static struct rxp_dev *open_input(const struct run_opts *o, struct rxp_pktpool *pp,
				  const char **input)
{
	const struct rxp_dev_source src = {.name = "workload", .open = open_workload};
	struct rxp_dev *dev;
	char spec[512];

	if (o->iface) {
		*input = "iface";
		dev = rxp_live_open(CMD, o->iface, o->mode == RXP_LIVE_AFPACKET ? o->nw : 1,
				    o->mode, pp);
		if (!dev)
			fprintf(stderr, "rxpath run: cannot receive on %s: %s\n", o->iface,
				rxp_cli_cause(errno));
		return dev;
	}
	if (o->pcap) {
		char err[256];

		*input = "pcap";
		dev = rxp_capfile_open(o->pcap, pp, err, sizeof(err));
		if (!dev)
			fprintf(stderr, "rxpath run: cannot read %s: %s\n",
				strcmp(o->pcap, "-") ? o->pcap : "stdin", err);
		return dev;
	}
	if (o->spec) {
		*input = "dev";
		dev = rxp_dev_open_with(o->spec, pp, &src, 1);
		if (!dev)
			fprintf(stderr, "rxpath run: cannot open --dev '%s': %s\n", o->spec,
				rxp_cli_cause(errno));
		return dev;
	}
	*input = "workload";
	snprintf(spec, sizeof(spec),
		 "fault:loss=0.001,zl=0.001,seed=%llu+sim:queues=%u,ring=1024,src=workload",
		 U(o->seed & 0xffffffffull), o->nw);
	dev = rxp_dev_open_with(spec, pp, &src, 1);
	if (!dev)
		fprintf(stderr, "rxpath run: cannot start the sim NIC: %s\n", rxp_cli_cause(errno));
	return dev;
}

/* ---- --write: a file per worker, merged by time ------------------------- */

static int open_writers(struct run_ctx *c, const char *path, unsigned nw, const char **what)
{
	const char *tmp = getenv("TMPDIR");

	*what = path;
	if (nw == 1) {
		c->writer[0] = rxp_pcap_writer_open(path, true);
		return c->writer[0] ? 0 : -errno;
	}
	*what = "a temporary file";
	for (unsigned i = 0; i < nw; i++) {
		int fd, err;

		if (asprintf(&c->wpath[i], "%s/rxpath-run-XXXXXX", tmp && *tmp ? tmp : "/tmp") < 0)
			return -ENOMEM;
		fd = mkstemp(c->wpath[i]);
		if (fd < 0) {
			err = errno;
			free(c->wpath[i]);
			c->wpath[i] = NULL;
			return -err;
		}
		close(fd);
		c->writer[i] = rxp_pcap_writer_open(c->wpath[i], true);
		if (!c->writer[i])
			return -errno;
	}
	/* The merged output now, not after the run: a path that cannot be
	 * written is refused before any work. */
	*what = path;
	c->out = rxp_pcap_writer_open(path, true);
	return c->out ? 0 : -errno;
}

/* Merge the per-worker files into path by timestamp (each is in order). */
static int merge_writers(struct run_ctx *c, unsigned nw)
{
	pcap_t *in[RXP_WORKER_MAX] = {0};
	struct pcap_pkthdr *h[RXP_WORKER_MAX];
	const u_char *d[RXP_WORKER_MAX];
	bool live[RXP_WORKER_MAX] = {0};
	char err[PCAP_ERRBUF_SIZE];
	struct rxp_pcap_writer *out = c->out;
	int rc = 0;

	for (unsigned i = 0; i < nw; i++) {
		in[i] = pcap_open_offline_with_tstamp_precision(c->wpath[i],
								PCAP_TSTAMP_PRECISION_NANO, err);
		live[i] = in[i] && pcap_next_ex(in[i], &h[i], &d[i]) == 1;
		if (!in[i])
			rc = -EIO;
	}
	for (;;) {
		int best = -1;
		uint64_t bt = 0;

		for (unsigned i = 0; i < nw; i++) {
			uint64_t t;

			if (!live[i])
				continue;
			t = (uint64_t)h[i]->ts.tv_sec * 1000000000ull + (uint64_t)h[i]->ts.tv_usec;
			if (best < 0 || t < bt) {
				best = (int)i;
				bt = t;
			}
		}
		if (best < 0)
			break;
		if (rxp_pcap_writer_write(out, d[best], h[best]->caplen, bt))
			rc = -EIO;
		live[best] = pcap_next_ex(in[best], &h[best], &d[best]) == 1;
	}
	for (unsigned i = 0; i < nw; i++)
		if (in[i])
			pcap_close(in[i]);
	return rc;
}

/* Close the writers: merge when there are several; 0 or -errno. */
static int close_writers(struct run_ctx *c, const char *path, unsigned nw)
{
	int rc = 0;

	for (unsigned i = 0; i < nw; i++)
		if (c->writer[i] && rxp_pcap_writer_close(c->writer[i]))
			rc = -EIO;
	if (nw > 1 && path && !rc && c->wpath[nw - 1])
		rc = merge_writers(c, nw);
	if (c->out && rxp_pcap_writer_close(c->out) && !rc)
		rc = -EIO;
	c->out = NULL;
	for (unsigned i = 0; i < nw; i++)
		if (c->wpath[i]) {
			unlink(c->wpath[i]);
			free(c->wpath[i]);
		}
	return rc;
}

/* ---- the run ------------------------------------------------------------- */

static int run_workers(const struct run_opts *o, struct rxp_worker_group *g, struct rxp_dev *dev,
		       struct rxp_pktpool *pp, struct run_ctx *ctx, uint64_t *t0)
{
	struct totals t, prev;
	pthread_t runner;
	uint64_t tlast, duration = o->duration_ns, stop_at = 0;
	bool tty = !o->quiet && isatty(STDERR_FILENO);

	if (o->iface && !duration)
		duration = 10 * 1000000000ull; /* live input has no end */
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	*t0 = tlast = now_ns();
	memset(&prev, 0, sizeof(prev));
	runner_group = g;
	if (pthread_create(&runner, NULL, runner_main, NULL)) {
		fprintf(stderr, "rxpath run: cannot start the workers: %s\n", strerror(EAGAIN));
		return -1;
	}
	while (!runner_done) {
		uint64_t now;

		usleep(20000);
		now = now_ns();
		/* The built-in workload stops sending and finishes what is in
		 * flight; live input and files stop where they are. */
		if ((duration && now - *t0 >= duration) || interrupted) {
			if (!stop_at)
				stop_at = now;
			src_stop = true;
			if (!o->drains || now - stop_at >= 2000000000ull)
				stop = true;
		}
		if (tty && now - tlast >= 1000000000ull) {
			collect(g, dev, pp, ctx, o->nw, &t);
			run_live_line(&t, &prev, (double)(now - *t0) / 1e9,
				      (double)(now - tlast) / 1e9);
			prev = t;
			tlast = now;
		}
	}
	pthread_join(runner, NULL);
	if (tty)
		fputc('\n', stderr);
	return 0;
}

static int run_main(int argc, char **argv)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	struct run_opts o = {.nw = ncpu > 0 ? (unsigned)ncpu : 1, .frames = 2000000, .seed = 1};
	struct run_ctx ctx = {0};
	struct rxp_pktpool *pp;
	struct rxp_dev *dev;
	struct rxp_worker_group *g;
	struct result r = {0};
	struct totals t;
	const char *what;
	FILE *out;
	uint64_t t0;
	int rc;

	if (o.nw > RXP_WORKER_MAX)
		o.nw = RXP_WORKER_MAX;
	rc = parse(argc, argv, &o);
	if (rc)
		return rc < 0 ? RXP_EXIT_OK : rc;
	rxp_cli_log_init(CMD);
	/* The capture on stdout leaves it to the capture alone. */
	out = o.write && !strcmp(o.write, "-") ? stderr : stdout;
	if (out == stderr && isatty(STDOUT_FILENO))
		return rxp_usage_error(CMD, "refusing to write a capture to a terminal");
	if (o.pcap && !strcmp(o.pcap, "-") && isatty(STDIN_FILENO))
		return rxp_usage_error(CMD, "refusing to read a capture from a terminal");
	if ((rc = rxp_refuse_overwrite(CMD, o.pcap, o.write)) ||
	    (rc = rxp_refuse_spec_overwrite(CMD, o.spec, o.write)))
		return rc;
	wl_cfg = (struct rxp_workload_config){.seed = o.seed,
					      .frames = o.frames,
					      .in_flight = (unsigned)o.in_flight,
					      .shuffle = o.in_flight > 1};
	pp = rxp_pktpool_create(&(struct rxp_pktpool_config){.name = "run",
							     .n_pkts = 16384 * o.nw,
							     .n_bufs = 8192 * o.nw,
							     .n_large = 64 * o.nw});
	if (!pp) {
		fprintf(stderr, "rxpath run: cannot create the packet pool: %s\n", strerror(errno));
		return RXP_EXIT_FAIL;
	}
	/* The built-in workload accounts for every datagram it sends. */
	if (!o.iface && !o.pcap && !o.spec) {
		ctx.ledger = rxp_ledger_create(o.nw);
		if (!ctx.ledger) {
			fprintf(stderr, "rxpath run: cannot create the ledger: %s\n",
				strerror(errno));
			rxp_pktpool_destroy(pp);
			return RXP_EXIT_FAIL;
		}
		wl_cfg.ledger = ctx.ledger;
		rxp_pktpool_set_drop_hook(pp, rxp_ledger_dropped, ctx.ledger);
	}
	dev = open_input(&o, pp, &r.input);
	if (!dev) {
		rxp_pktpool_destroy(pp);
		rxp_ledger_destroy(ctx.ledger);
		return RXP_EXIT_USAGE;
	}
	ctx.verify = !strcmp(r.input, "workload");
	ctx.stamp_wall = !o.pcap;
	if (o.write && (rc = open_writers(&ctx, o.write, o.nw, &what)) != 0) {
		fprintf(stderr, "rxpath run: cannot write %s: %s\n", what, rxp_cli_cause(-rc));
		close_writers(&ctx, NULL, o.nw);
		rxp_dev_close(dev);
		rxp_pktpool_destroy(pp);
		return RXP_EXIT_USAGE;
	}
	rxp_note_pcap_name(CMD, o.write);
	for (unsigned i = 0; i < o.nw; i++)
		if (!(ctx.buf[i] = malloc(1 << 17))) {
			fprintf(stderr, "rxpath run: %s\n", strerror(ENOMEM));
			return RXP_EXIT_FAIL;
		}
	g = rxp_worker_group_create(&(struct rxp_worker_config){
		.nworkers = o.nw,
		.dev = dev,
		.pp = pp,
		.defrag = {.mem_limit = o.mem_limit},
		.tipc = true,
		.on_datagram = on_datagram,
		.on_message = on_message,
		.arg = &ctx,
		.wire_time = o.pcap != NULL,
		.udp_csum = o.csum,
	});
	if (!g) {
		fprintf(stderr, "rxpath run: cannot create the workers: %s\n", strerror(errno));
		return RXP_EXIT_FAIL;
	}
	rc = RXP_EXIT_OK;
	if (run_workers(&o, g, dev, pp, &ctx, &t0))
		return RXP_EXIT_FAIL;
	r.wall = (double)(runner_end_ns - t0) / 1e9;
	collect(g, dev, pp, &ctx, o.nw, &t);
	if (t.dev.last_tstamp_ns > t.dev.first_tstamp_ns)
		r.span = (double)(t.dev.last_tstamp_ns - t.dev.first_tstamp_ns) / 1e9;
	/* Tear down in order: workers (queued fragments, partial TIPC
	 * messages), the device (posted buffers, page pool), then count what
	 * is still out. */
	rxp_worker_group_destroy(g);
	rxp_pktpool_drain_deferred(pp);
	r.pages_out = rxp_dev_close(dev);
	r.pkts_out = rxp_pktpool_pkts_outstanding(pp) + rxp_pktpool_bufs_outstanding(pp);
	rxp_pktpool_get_stats(pp, &t.pool); /* the teardown's drops too */
	if (ctx.ledger) {
		/* every drop has happened, the teardown's too: the ledger balances */
		rxp_ledger_tally(ctx.ledger, &r.acct);
		r.ledger = true;
	}
	if (o.write) {
		int wr = close_writers(&ctx, o.write, o.nw);

		if (wr) {
			fprintf(stderr, "rxpath run: cannot write %s: %s\n", o.write,
				rxp_cli_cause(-wr));
			rc = RXP_EXIT_FAIL;
		}
	}
	if (o.json)
		run_summary_json(out, &t, &r);
	else
		run_summary_text(out, &t, &r);
	if (r.pkts_out || r.pages_out || t.corrupted) {
		fprintf(stderr,
			"rxpath run: FAILED: %llu packets and %llu pages outstanding, "
			"%llu corrupted payloads\n",
			U(r.pkts_out), U(r.pages_out), U(t.corrupted));
		rc = RXP_EXIT_FAIL;
	}
	if (t.dev.rx_input_cut)
		rc = RXP_EXIT_FAIL; /* the library said where and why (a warning) */
	if (r.ledger && (r.acct.unaccounted || r.acct.phantom)) {
		fprintf(stderr,
			"rxpath run: FAILED: %llu datagrams or messages unaccounted (sent, "
			"neither delivered nor lost to a counted drop), %llu delivered that "
			"were never sent\n",
			U(r.acct.unaccounted), U(r.acct.phantom));
		rc = RXP_EXIT_FAIL;
	}
	/* Traffic not of our making (a capture, an interface) that met the
	 * reassembly memory cap: say which knob it was, once. (The built-in
	 * workload's --in-flight rows meet it on purpose.) */
	if ((o.iface || o.pcap || o.spec) &&
	    t.pool.drops[RXP_DROP_FRAG_MEM_LIMIT] + t.pool.drops[RXP_DROP_FRAG_EVICT]) {
		uint64_t cap = o.mem_limit ? o.mem_limit : 4u << 20;

		fprintf(stderr,
			"rxpath run: %llu fragments were dropped at the reassembly memory cap "
			"(frag_mem_limit %llu, frag_evicted %llu; %llu KiB per worker, as a "
			"host's ipfrag_high_thresh): --mem-limit raises it\n",
			U(t.pool.drops[RXP_DROP_FRAG_MEM_LIMIT] +
			  t.pool.drops[RXP_DROP_FRAG_EVICT]),
			U(t.pool.drops[RXP_DROP_FRAG_MEM_LIMIT]),
			U(t.pool.drops[RXP_DROP_FRAG_EVICT]), U(cap >> 10));
	}
	if (t.udp.csum_auto_off)
		fprintf(stderr,
			"rxpath run: over 1 in 10 of the first %u UDP checksums were wrong: taken "
			"for checksum offload and no longer checked (--udp-csum check keeps "
			"checking)\n",
			RXP_UDP_CSUM_SAMPLE);
	rxp_pktpool_destroy(pp);
	rxp_ledger_destroy(ctx.ledger);
	for (unsigned i = 0; i < o.nw; i++)
		free(ctx.buf[i]);
	return rc;
}

RXP_COMMAND(run, "run", "the main job: receive, reassemble and deliver, checked", run_main);
