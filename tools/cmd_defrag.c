/*
 * rxpath defrag: reassemble the IP fragments in a capture.
 *
 * Reads pcap or pcapng (Ethernet, with up to two VLAN tags, or raw IP link
 * types) through libpcap and writes a pcap (same link type, nanosecond
 * timestamps) in which every complete datagram appears once, reassembled
 * (fragments on different VLANs are different datagrams),
 * at the timestamp of the fragment that completed it, behind that
 * fragment's link header. Unfragmented frames pass through unchanged.
 * Fragments of datagrams that never complete are left out, or written as
 * they were with --keep-incomplete (when the table drops them: timeout,
 * overlap, eviction, end of input). Time comes from the packet timestamps,
 * so timeouts behave as on the wire. Owns the pcap handles, the packet pool
 * and the table; everything is released on every exit path.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "defrag_frame.h"
#include "opt.h"
#include "rxpath/defrag.h"
#include "rxpath/pkt.h"
#include "rxpath/wire.h"

struct dctx {
	pcap_dumper_t *dump;
	struct rxp_pktpool *pp;
	struct dfr_frames *frames;
	uint64_t in, out_pass, out_reasm, out_kept;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: rxpath defrag [--policy P] [--forward] [--mem-limit BYTES]\n"
		"                     [--timeout SECONDS] [--keep-incomplete] [--json] IN OUT\n\n"
		"Reassemble IPv4/IPv6 fragments in IN (pcap or pcapng; Ethernet or raw IP)\n"
		"and write OUT (pcap): each complete datagram once, at the time of the\n"
		"fragment that completed it; unfragmented packets unchanged.\n\n"
		"  --policy P         overlap policy: strict (default, as Linux), first, last,\n"
		"                     bsd, bsd-right, linux, windows, solaris\n"
		"  --forward          keep fragment boundaries (forwarding mode)\n"
		"  --mem-limit BYTES  reassembly memory cap (suffix k, m, g; default 4m)\n"
		"  --timeout SECONDS  reassembly timeout (default 30 for IPv4, 60 for IPv6)\n"
		"  --keep-incomplete  also write the fragments of datagrams that never complete,\n"
		"                     when the table gives them up (timeout, overlap, eviction,\n"
		"                     end of input) and with their own timestamps, so OUT is\n"
		"                     then not in time order (reordercap sorts it)\n"
		"  --json             counters summary on stderr as JSON\n");
}

static void write_frame(struct dctx *c, uint64_t ts_ns, const uint8_t *b, uint32_t len)
{
	struct pcap_pkthdr h;

	h.ts.tv_sec = (time_t)(ts_ns / 1000000000ull);
	h.ts.tv_usec = (suseconds_t)(ts_ns % 1000000000ull); /* nanoseconds: see pcap_open_dead */
	h.caplen = h.len = len;
	pcap_dump((u_char *)c->dump, &h, b);
}

/* The table hands us each fragment it gives up on; the frame layer rebuilds
 * the frame it came in. */
static void on_discard(void *arg, const struct rxp_pkt *pkt)
{
	struct dctx *c = arg;
	struct dfr_out o;

	if (dfr_frame_discarded(c->frames, pkt, &o))
		return;
	write_frame(c, pkt->tstamp_ns, o.frame, o.len);
	c->out_kept++;
}

static void summary(const struct rxp_defrag_counters *kp, const struct dctx *c, bool json,
		    enum rxp_defrag_policy pol)
{
	struct rxp_defrag_counters k = *kp;
	struct rxp_pktpool_stats st;
	struct dfr_frame_stats fst;

	rxp_pktpool_get_stats(c->pp, &st);
	dfr_frames_get_stats(c->frames, &fst);
	if (json) {
		fprintf(stderr,
			"{\"policy\":\"%s\",\"packets_in\":%" PRIu64 ",\"passed\":%" PRIu64
			",\"reassembled\":%" PRIu64 ",\"kept_fragments\":%" PRIu64
			",\"alloc_fail\":%" PRIu64 ",\"ReasmReqds\":%" PRIu64
			",\"ReasmOKs\":%" PRIu64 ",\"ReasmFails\":%" PRIu64
			",\"ReasmTimeout\":%" PRIu64 ",\"ReasmOverlaps\":%" PRIu64
			",\"evictions\":%" PRIu64 ",\"duplicates\":%" PRIu64
			",\"policy_overlaps\":%" PRIu64 ",\"invalid\":%" PRIu64
			",\"mem_drops\":%" PRIu64 ",\"max_dist_flushes\":%" PRIu64
			",\"mem_high_water\":%" PRIu64 ",\"drops\":{",
			rxp_defrag_policy_name(pol), c->in, c->out_pass, c->out_reasm, c->out_kept,
			fst.alloc_fail, k.ReasmReqds, k.ReasmOKs, k.ReasmFails, k.ReasmTimeout,
			k.ReasmOverlaps, k.evictions, k.duplicates, k.policy_overlaps, k.invalid,
			k.mem_drops, k.max_dist_flushes, k.mem_high_water);
		bool first = true;
		for (unsigned i = 0; i < RXP_DROP_MAX; i++) {
			if (!st.drops[i])
				continue;
			fprintf(stderr, "%s\"%s\":%" PRIu64, first ? "" : ",",
				rxp_drop_reason_name(i), st.drops[i]);
			first = false;
		}
		fprintf(stderr, "}}\n");
		return;
	}
	fprintf(stderr,
		"rxpath defrag (%s): %" PRIu64 " packets in; out: %" PRIu64 " passed, %" PRIu64
		" reassembled, %" PRIu64 " incomplete fragments kept\n"
		"  ReasmReqds %" PRIu64 "  ReasmOKs %" PRIu64 "  ReasmFails %" PRIu64
		"  ReasmTimeout %" PRIu64 "  ReasmOverlaps %" PRIu64 "\n"
		"  evictions %" PRIu64 "  duplicates %" PRIu64 "  policy_overlaps %" PRIu64
		"  invalid %" PRIu64 "  mem_drops %" PRIu64 "  mem_high_water %" PRIu64 "\n",
		rxp_defrag_policy_name(pol), c->in, c->out_pass, c->out_reasm, c->out_kept,
		k.ReasmReqds, k.ReasmOKs, k.ReasmFails, k.ReasmTimeout, k.ReasmOverlaps,
		k.evictions, k.duplicates, k.policy_overlaps, k.invalid, k.mem_drops,
		k.mem_high_water);
	for (unsigned i = 0; i < RXP_DROP_MAX; i++)
		if (st.drops[i])
			fprintf(stderr, "  drop %s %" PRIu64 "\n", rxp_drop_reason_name(i),
				st.drops[i]);
	if (fst.alloc_fail)
		fprintf(stderr, "  %" PRIu64 " packets passed unprocessed (out of buffers)\n",
			fst.alloc_fail);
}

static int defrag_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"policy", required_argument, NULL, 'p'},
		{"forward", no_argument, NULL, 'f'},
		{"mem-limit", required_argument, NULL, 'm'},
		{"timeout", required_argument, NULL, 't'},
		{"keep-incomplete", no_argument, NULL, 'k'},
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct rxp_defrag_config cfg = {0};
	struct dctx c = {0};
	bool json = false, keep = false;
	char errbuf[PCAP_ERRBUF_SIZE];
	pcap_t *in = NULL, *outp = NULL;
	struct rxp_defrag_table *t = NULL;
	struct pcap_pkthdr *h;
	const u_char *frame;
	int o, dlt, rc = RXP_EXIT_USAGE, r;

	optind = 1;
	opterr = 0;
	while ((o = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (o) {
		case 'p':
			if (rxp_defrag_policy_parse(optarg, &cfg.policy))
				return rxp_usage_error("defrag", "unknown --policy '%s'", optarg);
			break;
		case 'f':
			cfg.forward = true;
			break;
		case 'm':
			if (rxp_opt_u64("defrag", "--mem-limit", optarg, RXP_NUM_BYTES, 64 << 10,
					1ull << 40, &cfg.mem_limit))
				return RXP_EXIT_USAGE;
			break;
		case 't':
			if (rxp_opt_duration("defrag", "--timeout", optarg, 1000000ull,
					     1000000ull * 1000000000ull, &cfg.timeout_v4_ns))
				return RXP_EXIT_USAGE;
			cfg.timeout_v6_ns = cfg.timeout_v4_ns;
			break;
		case 'k':
			keep = true;
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			usage(stdout);
			return RXP_EXIT_OK;
		default:
			return rxp_opt_getopt_error("defrag", o, argc, argv);
		}
	}
	if (argc - optind != 2)
		return rxp_usage_error("defrag", "%s (see rxpath defrag --help)",
				       argc - optind < 2 ? "needs IN and OUT"
							 : "takes only IN and OUT");
	in = pcap_open_offline_with_tstamp_precision(argv[optind], PCAP_TSTAMP_PRECISION_NANO,
						     errbuf);
	if (!in) {
		fprintf(stderr, "rxpath defrag: cannot read %s: %s\n", argv[optind], errbuf);
		return RXP_EXIT_USAGE;
	}
	dlt = pcap_datalink(in);
	if (!dfr_frame_dlt_known(dlt)) {
		fprintf(stderr,
			"rxpath defrag: %s: unsupported link type %s (need Ethernet or raw IP)\n",
			argv[optind],
			pcap_datalink_val_to_name(dlt) ? pcap_datalink_val_to_name(dlt) : "?");
		goto out;
	}
	outp = pcap_open_dead_with_tstamp_precision(dlt, 262144, PCAP_TSTAMP_PRECISION_NANO);
	if (!outp || !(c.dump = pcap_dump_open(outp, argv[optind + 1]))) {
		fprintf(stderr, "rxpath defrag: cannot write %s: %s\n", argv[optind + 1],
			outp ? pcap_geterr(outp) : "out of memory");
		goto out;
	}
	{
		/* Enough packets for what the cap can hold (a fragment costs at
		 * least a 2 KiB buffer), at most 256K (about 600 MB): past that
		 * a frame is passed through unprocessed and counted. */
		uint64_t ml = cfg.mem_limit ? cfg.mem_limit : (4u << 20);
		uint64_t np = ml / 2048 + 4096;
		struct rxp_pktpool_config pc = {
			.name = "defrag",
			.n_pkts = (unsigned)(np > (1u << 18) ? (1u << 18) : np),
			.n_large = 256,
		};

		c.pp = rxp_pktpool_create(&pc);
	}
	if (keep) {
		cfg.discard_cb = on_discard;
		cfg.discard_arg = &c;
	}
	t = c.pp ? rxp_defrag_table_create(&cfg) : NULL;
	c.frames = c.pp ? dfr_frames_create(c.pp) : NULL;
	if (!c.pp || !t || !c.frames) {
		fprintf(stderr, "rxpath defrag: out of memory\n");
		rc = RXP_EXIT_FAIL;
		goto out;
	}
	while ((r = pcap_next_ex(in, &h, &frame)) == 1) {
		uint64_t now = (uint64_t)h->ts.tv_sec * 1000000000ull + (uint64_t)h->ts.tv_usec;
		struct dfr_out fo;

		c.in++;
		rxp_defrag_expire(t, now);
		switch (dfr_frame_process(c.frames, t, dlt, frame, h->caplen, now, &fo)) {
		case DFR_PASS:
			c.out_pass++;
			write_frame(&c, now, frame, h->caplen);
			break;
		case DFR_HELD:
			break;
		case DFR_OUT:
			c.out_reasm++;
			write_frame(&c, now, fo.frame, fo.len);
			break;
		}
	}
	if (r == -1) {
		fprintf(stderr, "rxpath defrag: %s: %s\n", argv[optind], pcap_geterr(in));
		rc = RXP_EXIT_USAGE;
		goto out;
	}
	/* End of input: what is left never completed (the hook sees it). */
	{
		struct rxp_defrag_counters k;

		rxp_defrag_get_counters(t, &k);
		rxp_defrag_table_destroy(t);
		t = NULL;
		summary(&k, &c, json, cfg.policy);
	}
	rc = RXP_EXIT_OK;
out:
	rxp_defrag_table_destroy(t);
	dfr_frames_destroy(c.frames);
	if (c.dump)
		pcap_dump_close(c.dump);
	if (outp)
		pcap_close(outp);
	if (in)
		pcap_close(in);
	if (c.pp && rxp_pktpool_destroy(c.pp)) {
		fprintf(stderr, "rxpath defrag: packet leak\n");
		rc = RXP_EXIT_FAIL;
	}
	return rc;
}

RXP_COMMAND(defrag, "defrag", "reassemble IP fragments in a pcap/pcapng file", defrag_main);
