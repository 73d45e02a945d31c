/*
 * rxpath run: the main job. Workers run the receive path (device burst, XDP
 * hook, IPv4/IPv6 input, reassembly, UDP, TIPC on port 6118) over the
 * built-in mixed workload on the sim NIC, a pcap file, or a live interface,
 * and a sink checks every delivered datagram and message. Prints a live
 * line on a terminal and a summary at the end (JSON with --json); exits 1
 * if anything leaked or a payload was corrupted.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cmd.h"
#include "rxpath/log.h"
#include "rxpath/sim.h"
#include "rxpath/tipc.h"
#include "rxpath/worker.h"
#include "rxpath/workload.h"

static volatile bool stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = true;
}

struct run_ctx {
	uint8_t *buf[RXP_WORKER_MAX]; /* per worker: a payload copy to verify */
	uint64_t corrupted[RXP_WORKER_MAX];
	uint64_t unverified[RXP_WORKER_MAX]; /* pcap/iface traffic not ours */
	bool verify; /* every payload must carry the generator's check header */
	struct rxp_pcap_writer *writer;
	pthread_mutex_t wlock;
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
}

/* A delivered UDP datagram (data at the payload). Consumes pkt. */
static void on_datagram(void *arg, struct rxp_worker *w, struct rxp_pkt *pkt)
{
	struct run_ctx *c = arg;
	unsigned wid = rxp_worker_id(w);

	check_payload(c, wid, pkt, 0);
	if (c->writer) {
		/* record the whole datagram: from its IP header */
		uint32_t l4 = (uint32_t)(pkt->data - pkt->head) - pkt->network_off;

		if (!pkt->tstamp_ns) { /* the sim NIC stamps nothing: use the wall clock */
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			pkt->tstamp_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
		}
		if (rxp_pkt_push(pkt, l4)) {
			pthread_mutex_lock(&c->wlock);
			rxp_pcap_writer_write_pkt(c->writer, pkt);
			pthread_mutex_unlock(&c->wlock);
		}
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
		"2 KiB buffers, TIPC over UDP with bundles and fragmented messages, 0.1%% frame\n"
		"loss, reordering, duplicate and overlapping fragments, zero-length\n"
		"descriptors), deterministic from --seed; every payload is verified.\n\n"
		"  -w, --workers N     worker threads (default: online CPUs)\n"
		"  -n, --frames N      frames the workload sends (default 2000000)\n"
		"  -d, --duration SEC  stop after SEC seconds (default: when input ends; 10 with\n"
		"                      --iface)\n"
		"  -s, --seed N        workload seed (default 1)\n"
		"      --pcap FILE     read a pcap/pcapng capture instead (time from its stamps)\n"
		"      --iface IF      receive live from IF: AF_XDP, else AF_PACKET (root)\n"
		"      --write FILE    record delivered UDP datagrams to a pcap (raw IP)\n"
		"      --mem-limit B   reassembly memory per worker (default 4194304)\n"
		"  -q, --quiet         no live line\n"
		"      --json          print the summary as JSON on stdout\n"
		"  -h, --help          this text\n\n"
		"Exit status: 0 ok; 1 if packets or pages leaked or a payload was corrupted;\n"
		"2 for bad options or input.\n");
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct rxp_workload_config wl_cfg;
static struct rxp_worker_group *runner_group;
static volatile bool runner_done;

static void *runner_main(void *arg)
{
	(void)arg;
	rxp_worker_group_run(runner_group, &stop);
	runner_done = true;
	return NULL;
}

static struct rxp_src *open_workload(void *arg)
{
	(void)arg;
	return rxp_workload_src(&wl_cfg);
}

struct totals {
	struct rxp_worker_stats w;
	struct rxp_ip_stats ip4, ip6;
	struct rxp_udp_stats udp;
	struct rxp_defrag_counters reasm;
	struct rxp_tipc_link_stats tipc;
	struct rxp_dev_stats dev;
	struct rxp_pktpool_stats pool;
	uint64_t corrupted, unverified;
};

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

/* Every drop of a packet or of a frame a device saw is counted once, by
 * reason, on the packet pool (devices count their frame drops there too). */
static uint64_t drops_total(const struct totals *t)
{
	uint64_t d = 0;

	for (unsigned r = 0; r < RXP_DROP_MAX; r++)
		d += t->pool.drops[r];
	return d;
}

static void live_line(const struct totals *t, const struct totals *prev, double el, double dt)
{
	fprintf(stderr,
		"\r%6.1fs %9.0f frames/s %7.2f Gbit/s %8.0f dgram/s %8.0f msg/s drops %llu "
		"pkts %llu pages %llu   ",
		el, (double)(t->w.rx_frames - prev->w.rx_frames) / dt,
		(double)(t->w.rx_bytes - prev->w.rx_bytes) * 8 / dt / 1e9,
		(double)(t->w.datagrams - prev->w.datagrams) / dt,
		(double)(t->w.messages - prev->w.messages) / dt, (unsigned long long)drops_total(t),
		(unsigned long long)t->pool.pkts.outstanding,
		(unsigned long long)t->dev.pp_outstanding);
}

#define U(x) ((unsigned long long)(x))

static void summary_text(FILE *f, const struct totals *t, double el, uint64_t pkts_out,
			 uint64_t pages_out)
{
	fprintf(f, "rxpath run: %.2f s\n", el);
	fprintf(f, "  frames      %llu (%.0f/s, %.2f Gbit/s)\n", U(t->w.rx_frames),
		t->w.rx_frames / el, t->w.rx_bytes * 8 / el / 1e9);
	fprintf(f, "  datagrams   %llu (%.0f/s, %llu bytes)\n", U(t->w.datagrams),
		t->w.datagrams / el, U(t->w.datagram_bytes));
	fprintf(f, "  messages    %llu (%.0f/s, TIPC)\n", U(t->w.messages), t->w.messages / el);
	fprintf(f, "  corrupted   %llu%s\n", U(t->corrupted),
		t->unverified ? " (payloads without rxpath's check header are not checked)" : "");
	fprintf(f, "  steered     %llu between workers\n", U(t->w.steered_out));
	fprintf(f, "  device      rx_no_buffer %llu, zero-length descriptors %llu, dropped %llu\n",
		U(t->dev.rx_no_buffer), U(t->dev.zero_len_descs), U(t->dev.rx_dropped));
	fprintf(f, "  page pool   fast %llu, slow %llu, recycled %llu, waived %llu\n",
		U(t->dev.pp_fast), U(t->dev.pp_slow), U(t->dev.pp_recycled), U(t->dev.pp_waived));
	fprintf(f,
		"  reassembly  ReasmReqds %llu ReasmOKs %llu ReasmFails %llu ReasmTimeout %llu "
		"ReasmOverlaps %llu\n",
		U(t->reasm.ReasmReqds), U(t->reasm.ReasmOKs), U(t->reasm.ReasmFails),
		U(t->reasm.ReasmTimeout), U(t->reasm.ReasmOverlaps));
	fprintf(f, "              duplicates %llu evictions %llu mem_high_water %llu\n",
		U(t->reasm.duplicates), U(t->reasm.evictions), U(t->reasm.mem_high_water));
	fprintf(f,
		"  tipc        packets %llu bundles %llu bundled %llu fragments %llu "
		"reassembled %llu delivered %llu drops %llu\n",
		U(t->tipc.packets), U(t->tipc.bundles), U(t->tipc.bundled_msgs),
		U(t->tipc.fragments), U(t->tipc.reassembled), U(t->tipc.delivered),
		U(t->tipc.drops));
	fprintf(f, "  drops by reason:\n");
	for (unsigned r = 0; r < RXP_DROP_MAX; r++)
		if (t->pool.drops[r])
			fprintf(f, "    %-28s %llu\n", rxp_drop_reason_name(r),
				U(t->pool.drops[r]));
	fprintf(f, "  outstanding packets %llu, pages %llu\n", U(pkts_out), U(pages_out));
}

static void summary_json(FILE *f, const struct totals *t, double el, uint64_t pkts_out,
			 uint64_t pages_out)
{
	bool first = true;

	fprintf(f,
		"{\"seconds\":%.3f,\"frames\":%llu,\"rx_bytes\":%llu,\"datagrams\":%llu,"
		"\"datagram_bytes\":%llu,\"messages\":%llu,\"corrupted\":%llu,"
		"\"unverified\":%llu,\"packets_outstanding\":%llu,\"pages_outstanding\":%llu,",
		el, U(t->w.rx_frames), U(t->w.rx_bytes), U(t->w.datagrams), U(t->w.datagram_bytes),
		U(t->w.messages), U(t->corrupted), U(t->unverified), U(pkts_out), U(pages_out));
	fprintf(f, "\"drops\":{");
	for (unsigned r = 0; r < RXP_DROP_MAX; r++) {
		if (!t->pool.drops[r])
			continue;
		fprintf(f, "%s\"%s\":%llu", first ? "" : ",", rxp_drop_reason_name(r),
			U(t->pool.drops[r]));
		first = false;
	}
	fprintf(f, "},");
	fprintf(f,
		"\"reasm\":{\"ReasmReqds\":%llu,\"ReasmOKs\":%llu,\"ReasmFails\":%llu,"
		"\"ReasmTimeout\":%llu,\"ReasmOverlaps\":%llu,\"evictions\":%llu,"
		"\"duplicates\":%llu,\"policy_overlaps\":%llu,\"invalid\":%llu,"
		"\"mem_high_water\":%llu},",
		U(t->reasm.ReasmReqds), U(t->reasm.ReasmOKs), U(t->reasm.ReasmFails),
		U(t->reasm.ReasmTimeout), U(t->reasm.ReasmOverlaps), U(t->reasm.evictions),
		U(t->reasm.duplicates), U(t->reasm.policy_overlaps), U(t->reasm.invalid),
		U(t->reasm.mem_high_water));
	fprintf(f,
		"\"tipc\":{\"packets\":%llu,\"bundles\":%llu,\"bundled_msgs\":%llu,"
		"\"fragments\":%llu,\"reassembled\":%llu,\"delivered\":%llu,\"drops\":%llu},",
		U(t->tipc.packets), U(t->tipc.bundles), U(t->tipc.bundled_msgs),
		U(t->tipc.fragments), U(t->tipc.reassembled), U(t->tipc.delivered),
		U(t->tipc.drops));
	fprintf(f,
		"\"ip\":{\"InReceives\":%llu,\"InHdrErrors\":%llu,\"InCsumErrors\":%llu,"
		"\"InTruncatedPkts\":%llu,\"InDelivers\":%llu},",
		U(t->ip4.InReceives + t->ip6.InReceives),
		U(t->ip4.InHdrErrors + t->ip6.InHdrErrors), U(t->ip4.InCsumErrors),
		U(t->ip4.InTruncatedPkts + t->ip6.InTruncatedPkts),
		U(t->ip4.InDelivers + t->ip6.InDelivers));
	fprintf(f,
		"\"udp\":{\"InDatagrams\":%llu,\"NoPorts\":%llu,\"InErrors\":%llu,"
		"\"InCsumErrors\":%llu},",
		U(t->udp.InDatagrams), U(t->udp.NoPorts), U(t->udp.InErrors),
		U(t->udp.InCsumErrors));
	fprintf(f,
		"\"device\":{\"rx_no_buffer\":%llu,\"zero_len_descs\":%llu,\"pp_fast\":%llu,"
		"\"pp_slow\":%llu,\"pp_recycled\":%llu}}\n",
		U(t->dev.rx_no_buffer), U(t->dev.zero_len_descs), U(t->dev.pp_fast),
		U(t->dev.pp_slow), U(t->dev.pp_recycled));
}

static void log_to_stderr(enum rxp_log_level lvl, const char *msg, void *arg)
{
	(void)arg;
	if (lvl <= RXP_LOG_WARN)
		fprintf(stderr, "rxpath: %s\n", msg);
}

static struct rxp_dev *open_input(const char *pcap, const char *iface, unsigned nw, uint64_t seed,
				  struct rxp_pktpool *pp, bool *verify)
{
	struct rxp_dev *dev;

	*verify = false;
	if (pcap) {
		dev = rxp_pcap_open(pcap, pp);
		if (!dev)
			fprintf(stderr, "rxpath run: cannot read %s: %s\n", pcap, strerror(errno));
		return dev;
	}
	if (iface) {
		struct rxp_afxdp_config xc = {.ifname = iface, .nqueues = 1};
		struct rxp_afpacket_config ac = {.ifname = iface, .nqueues = nw};

		setenv("LIBXDP_SKIP_DISPATCHER", "1", 0);
		dev = rxp_afxdp_open(&xc, pp);
		if (dev)
			return dev;
		fprintf(stderr, "rxpath run: AF_XDP on %s failed (%s); falling back to AF_PACKET\n",
			iface, strerror(errno));
		dev = rxp_afpacket_open(&ac, pp);
		if (!dev)
			fprintf(stderr, "rxpath run: AF_PACKET on %s failed: %s\n", iface,
				strerror(errno));
		return dev;
	}
	{
		struct rxp_sim_config sc = {
			.nqueues = nw,
			.ring_size = 1024,
			.seed = seed,
			.zero_len_rate = 0.001,
			.src_open = open_workload,
		};

		*verify = true;
		dev = rxp_sim_open(&sc, pp);
		if (!dev)
			fprintf(stderr, "rxpath run: cannot start the sim NIC: %s\n",
				strerror(errno));
		return dev;
	}
}

static int run_main(int argc, char **argv)
{
	static const struct option lo[] = {
		{"workers", required_argument, 0, 'w'},	 {"frames", required_argument, 0, 'n'},
		{"duration", required_argument, 0, 'd'}, {"seed", required_argument, 0, 's'},
		{"pcap", required_argument, 0, 'P'},	 {"iface", required_argument, 0, 'I'},
		{"write", required_argument, 0, 'W'},	 {"mem-limit", required_argument, 0, 'M'},
		{"quiet", no_argument, 0, 'q'},		 {"json", no_argument, 0, 'J'},
		{"help", no_argument, 0, 'h'},		 {0, 0, 0, 0},
	};
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned nw = ncpu > 0 ? (unsigned)ncpu : 1;
	uint64_t frames = 2000000, seed = 1, mem_limit = 0;
	double duration = 0;
	const char *pcap = NULL, *iface = NULL, *write = NULL;
	bool quiet = false, json = false;
	struct run_ctx ctx = {.wlock = PTHREAD_MUTEX_INITIALIZER};
	struct rxp_pktpool *pp;
	struct rxp_dev *dev;
	struct rxp_worker_group *g;
	struct totals t, prev;
	pthread_t runner;
	uint64_t t0, tlast, pkts_out, pages_out;
	int c, rc = 0;
	char *end;

	optind = 1;
	while ((c = getopt_long(argc, argv, "w:n:d:s:qh", lo, NULL)) != -1) {
		switch (c) {
		case 'w':
			nw = (unsigned)strtoul(optarg, &end, 10);
			if (*end || nw < 1 || nw > RXP_WORKER_MAX) {
				fprintf(stderr, "rxpath run: --workers takes 1..%d\n",
					RXP_WORKER_MAX);
				return RXP_EXIT_USAGE;
			}
			break;
		case 'n':
			frames = strtoull(optarg, &end, 10);
			if (*end) {
				fprintf(stderr, "rxpath run: --frames takes a number\n");
				return RXP_EXIT_USAGE;
			}
			break;
		case 'd':
			duration = strtod(optarg, &end);
			if (*end || duration < 0) {
				fprintf(stderr, "rxpath run: --duration takes seconds\n");
				return RXP_EXIT_USAGE;
			}
			break;
		case 's':
			seed = strtoull(optarg, &end, 0);
			if (*end) {
				fprintf(stderr, "rxpath run: --seed takes a number\n");
				return RXP_EXIT_USAGE;
			}
			break;
		case 'P':
			pcap = optarg;
			break;
		case 'I':
			iface = optarg;
			break;
		case 'W':
			write = optarg;
			break;
		case 'M':
			mem_limit = strtoull(optarg, &end, 0);
			if (*end || !mem_limit) {
				fprintf(stderr, "rxpath run: --mem-limit takes bytes\n");
				return RXP_EXIT_USAGE;
			}
			break;
		case 'q':
			quiet = true;
			break;
		case 'J':
			json = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return RXP_EXIT_USAGE;
		}
	}
	if (optind < argc || (pcap && iface)) {
		fprintf(stderr, "rxpath run: %s\n",
			optind < argc ? "unexpected argument"
				      : "--pcap and --iface exclude each other");
		usage(stderr);
		return RXP_EXIT_USAGE;
	}
	if (iface && !duration)
		duration = 10; /* live input has no end */
	rxp_set_log(log_to_stderr, NULL);
	wl_cfg = (struct rxp_workload_config){.seed = seed, .frames = frames};
	pp = rxp_pktpool_create(&(struct rxp_pktpool_config){
		.name = "run", .n_pkts = 16384 * nw, .n_bufs = 8192 * nw, .n_large = 64 * nw});
	if (!pp) {
		fprintf(stderr, "rxpath run: cannot create the packet pool: %s\n", strerror(errno));
		return RXP_EXIT_FAIL;
	}
	dev = open_input(pcap, iface, nw, seed, pp, &ctx.verify);
	if (!dev) {
		rxp_pktpool_destroy(pp);
		return RXP_EXIT_USAGE;
	}
	if (write) {
		ctx.writer = rxp_pcap_writer_open(write, true);
		if (!ctx.writer) {
			fprintf(stderr, "rxpath run: cannot write %s: %s\n", write,
				strerror(errno));
			rxp_dev_close(dev);
			rxp_pktpool_destroy(pp);
			return RXP_EXIT_USAGE;
		}
	}
	for (unsigned i = 0; i < nw; i++)
		if (!(ctx.buf[i] = malloc(1 << 17)))
			return RXP_EXIT_FAIL;
	g = rxp_worker_group_create(&(struct rxp_worker_config){
		.nworkers = nw,
		.dev = dev,
		.pp = pp,
		.defrag = {.mem_limit = mem_limit},
		.tipc = true,
		.on_datagram = on_datagram,
		.on_message = on_message,
		.arg = &ctx,
		.wire_time = pcap != NULL,
	});
	if (!g) {
		fprintf(stderr, "rxpath run: cannot create workers: %s\n", strerror(errno));
		return RXP_EXIT_FAIL;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	t0 = tlast = now_ns();
	memset(&prev, 0, sizeof(prev));
	runner_group = g;
	if (pthread_create(&runner, NULL, runner_main, NULL)) {
		fprintf(stderr, "rxpath run: cannot start the workers\n");
		return RXP_EXIT_FAIL;
	}
	while (!runner_done) {
		uint64_t now;

		usleep(100000);
		now = now_ns();
		if (duration && (double)(now - t0) / 1e9 >= duration)
			stop = true;
		if (!quiet && isatty(STDERR_FILENO) && now - tlast >= 1000000000ull) {
			collect(g, dev, pp, &ctx, nw, &t);
			live_line(&t, &prev, (double)(now - t0) / 1e9, (double)(now - tlast) / 1e9);
			prev = t;
			tlast = now;
		}
	}
	pthread_join(runner, NULL);
	{
		double el = (double)(now_ns() - t0) / 1e9;

		if (!quiet && isatty(STDERR_FILENO))
			fputc('\n', stderr);
		collect(g, dev, pp, &ctx, nw, &t);
		/* Tear down in order: workers (queued fragments, partial TIPC
		 * messages), the device (posted buffers, page pool), then count
		 * what is still out. */
		rxp_worker_group_destroy(g);
		rxp_pktpool_drain_deferred(pp);
		pages_out = rxp_dev_close(dev);
		pkts_out = rxp_pktpool_pkts_outstanding(pp) + rxp_pktpool_bufs_outstanding(pp);
		rxp_pktpool_get_stats(pp, &t.pool); /* the teardown's drops too */
		if (ctx.writer)
			rxp_pcap_writer_close(ctx.writer);
		if (json)
			summary_json(stdout, &t, el, pkts_out, pages_out);
		else
			summary_text(stdout, &t, el, pkts_out, pages_out);
		if (pkts_out || pages_out || t.corrupted) {
			fprintf(stderr,
				"rxpath run: FAILED: %llu packets and %llu pages outstanding, "
				"%llu corrupted payloads\n",
				U(pkts_out), U(pages_out), U(t.corrupted));
			rc = RXP_EXIT_FAIL;
		}
		rxp_pktpool_destroy(pp);
	}
	for (unsigned i = 0; i < nw; i++)
		free(ctx.buf[i]);
	return rc;
}

RXP_COMMAND(run, "run", "the main job: receive, reassemble and deliver, checked", run_main);
