/*
 * rxpath defrag: reassemble the IP fragments in a capture.
 *
 * Reads a capture (defrag_io*.c: pcap, pcapng with any mix of link types,
 * gzip or zstd, or stdin) and writes one (pcapng when IN is pcapng or OUT
 * ends in .pcapng, else pcap with IN's timestamp resolution) in which every
 * complete datagram appears once, reassembled, at the timestamp of the
 * fragment that completed it, behind that fragment's link and outer headers
 * (defrag_frame.c). Everything else passes through unchanged. Fragments of
 * datagrams that never complete are left out, or written as they were with
 * --keep-incomplete.
 *
 * Two profiles. The default is for files: everything in the capture, so no
 * max_dist, a memory cap of a quarter of RAM with a queue cap that never
 * binds before it, and no timeout (memory is the only bound, and stale
 * queues are evicted first when it binds), so timestamps cannot lose
 * anything; late duplicates of a completed datagram's fragments are dropped
 * (defrag_late.h). --kernel is "what would this Linux host have delivered": 4 MiB,
 * max_dist 64, 30/60 s, memory pressure as Linux, timers on the capture's
 * time as it comes (never going backwards: a timestamp behind the latest
 * counts as the latest, so timer order holds). In the file profile a
 * --timeout runs on a clock that follows the bulk of the packets instead:
 * the median of the last CLOCK_WIN timestamps, never going backwards, so
 * one timestamp far ahead does not expire what is in flight.
 *
 * Owns the capture handles, the packet pool, the table and the filters;
 * everything is released on every path, and OUT is either complete or not
 * there.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "defrag_frame.h"
#include "defrag_io.h"
#include "defrag_policies.h"
#include "defrag_report.h"
#include "opt.h"
#include "rxpath/defrag.h"
#include "rxpath/pkt.h"
#include "rxpath/wire.h"

#define CMD "defrag"
#define NO_TIMEOUT_NS (1ull << 62) /* 146 years past any capture's time: never */
#define CLOCK_WIN 7
#define MAX_FILTERS 16 /* link types a filter is compiled for */
/* packets beyond what the table can hold: frames being read, and the
 * datagrams OUT holds until its writer has copied them (dio_out_fill) */
#define POOL_MARGIN (4096 + DIO_OUT_NBUF * DIO_OUT_FILLS)
/* Header bytes a head of c.hp holds: the link and IP headers of nearly
 * every fragment (Ethernet, two VLAN tags and IPv4 with options: 82;
 * IPv6 with a fragment header: 62), 3 of alignment. */
#define HEAD_ROOM 192u

struct bulk_clock {
	bool median; /* else the latest timestamp */
	uint64_t win[CLOCK_WIN];
	unsigned n, pos;
	uint64_t now;
};

struct filter {
	const char *expr;
	struct {
		int dlt;
		bool ok;
		struct bpf_program prog;
	} by_dlt[MAX_FILTERS];
	unsigned n;
};

/* How many records ahead of the one processed a fragment is hinted to the
 * table: its index line first (rxp_defrag_prefetch_slot), its queue
 * HINT_QUEUE records later (rxp_defrag_prefetch_queue), so that the
 * queue's cache misses land while the records between are worked on, and
 * the lines are still there when it comes. */
#define HINT_AHEAD 6
#define HINT_QUEUE 3

struct dctx {
	uint32_t hints[HINT_AHEAD]; /* the last hints, by hint number */
	unsigned nhint;
	struct dio_in *in;
	struct dio_out *out;
	struct rxp_pktpool *pp;
	struct rxp_pktpool *hp; /* heads of fragments that reference IN (dfr_frames_set_refs) */
	struct dfr_frames *frames;
	struct dpol *pol; /* --policy all */
	struct drep *rep; /* the table's events: --report, the summary table */
	FILE *report; /* --report FILE, or NULL */
	struct filter flt;
	const char *out_name;
	bool out_pcapng; /* kept for the summary once out is closed */
	uint64_t out_skipped;
	int werr; /* errno of the first write that failed */
	bool keep; /* --keep-incomplete: the table's discard hook writes OUT */
	bool defer; /* datagrams' frames built a frame later (DFR_LATER) */
	uint64_t recs, passed, reasm, kept, filtered, pol_diff;
};

/* Settings as given (UNSET: the profile decides). */
#define UNSET UINT64_MAX
struct settings {
	bool kernel, keep, json, pcapng, all;
	const char *report;
	uint64_t mem_limit, max_queues, max_dist, timeout_ns;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: rxpath defrag [options] IN OUT\n"
		"\n"
		"Reassemble the IPv4/IPv6 fragments in capture IN and write capture OUT: each\n"
		"complete datagram once, at the time and behind the link header of the fragment\n"
		"that completed it; everything else unchanged. IN is pcap, pcapng (interfaces\n"
		"may have different link types) or any format libwiretap reads, plain or gzip-\n"
		"or zstd-compressed; '-' reads stdin. OUT is pcapng when IN is pcapng or OUT\n"
		"ends in .pcapng (interfaces, link types and timestamp resolution kept), else\n"
		"pcap with IN's resolution; '-' writes stdout. A file OUT is written to a\n"
		"temporary file beside it and renamed when done, so it is complete or\n"
		"untouched (a device or FIFO, /dev/null say, is written in place); OUT naming\n"
		"the same file as IN is refused.\n"
		"\n"
		"Link types: Ethernet (802.1Q/QinQ, MPLS, PPPoE), LINUX_SLL, LINUX_SLL2, NULL,\n"
		"LOOP, PPP, C_HDLC, RAW, IPV4, IPV6, NFLOG, IEEE 802.11 and radiotap; others\n"
		"pass through whole (one warning). Tunnels: IP in IP, GRE (ERSPAN I/II/III,\n"
		"PPP), VXLAN (udp 4789), GENEVE (6081), GTP-U (2152); outer fragments are\n"
		"reassembled first, each tunnel (endpoints, key/VNI/TEID) and VLAN apart,\n"
		"and the completing fragment's outer headers kept, lengths and checksums\n"
		"fixed (a datagram they cannot hold goes out behind the link header alone).\n"
		"\n"
		"Profiles:\n"
		"  (default)            for files: keep everything in the capture. No max_dist,\n"
		"                       memory cap a quarter of RAM (cgroup limit included),\n"
		"                       a queue cap that never binds before memory does, and\n"
		"                       no timeout: memory is the only bound (stale queues are\n"
		"                       evicted first), so clock skew cannot lose datagrams;\n"
		"                       and late duplicates are dropped (frames:\n"
		"                       late_duplicates): a copy of a fragment of a datagram\n"
		"                       just completed, the same bytes within 1 s, as\n"
		"                       tcpdump -i any on a forwarding host captures every\n"
		"                       frame twice, would start a stale datagram that the\n"
		"                       next one with that ID joins\n"
		"  --kernel             what Linux with its default sysctls would have\n"
		"                       delivered (the host's own settings are not read): 4m\n"
		"                       memory, 8192 queues, max_dist 64, timeouts 30 s (IPv4)\n"
		"                       / 60 s (IPv6), every fragment refused while memory is\n"
		"                       over the cap; timers run on the capture's time (never\n"
		"                       going back); late duplicates go to the table, as they\n"
		"                       would in Linux\n"
		"  A --timeout without --kernel runs on a clock that follows the bulk of the\n"
		"  packets (the median of the last %u timestamps, never going back): one\n"
		"  timestamp far ahead or behind its neighbours neither expires what is in\n"
		"  flight nor reorders the timers.\n"
		"\n"
		"Options (they override the profile):\n"
		"  --mem-limit BYTES    reassembly memory cap (suffix k, m, g)\n"
		"  --max-queues N       datagrams in reassembly at once (suffix k, m, g)\n"
		"  --max-dist N         IPv4: give a datagram up when more than N fragments\n"
		"                       from its source arrive between two of its own; 0: off\n"
		"  --timeout SECONDS    give a datagram up this long after its first fragment\n"
		"                       (both families; suffix s, ms, us, ns allowed); 'none':\n"
		"                       never\n"
		"  --policy P           overlap policy: strict (default, as Linux), first, last,\n"
		"                       bsd, bsd-right, linux, windows, solaris; or all: OUT\n"
		"                       as strict, and every datagram also reassembled under\n"
		"                       each target policy, the ones whose bytes differ\n"
		"                       reported on stderr (which targets see which payload,\n"
		"                       SHA-256), --mem-limit shared by the eight tables\n"
		"  --forward            the library's forwarding mode: a datagram keeps its\n"
		"                       fragments' boundaries, as a router's reassembly does\n"
		"                       before it fragments again; OUT is the same (datagrams\n"
		"                       are written whole), only the work inside differs\n"
		"  -f, --filter EXPR    reassemble only fragments matching the BPF expression\n"
		"                       (pcap-filter(7), per link type); the rest passes as is\n"
		"  IP fragments cut short by the capture's snaplen cannot be reassembled: they\n"
		"  pass unchanged and are counted (frames: truncated).\n"
		"  --keep-incomplete    also write the fragments of datagrams that never "
		"complete,\n"
		"                       when they are given up (timeout, overlap, eviction, end "
		"of\n"
		"                       input), with their own timestamps: OUT is then not in\n"
		"                       time order (reordercap sorts it)\n"
		"  --pcapng             write pcapng whatever OUT's name\n"
		"  --report FILE        one JSON object per line for every datagram event:\n"
		"                       reassembled (its fragments' frame numbers, first and\n"
		"                       last time), given_up (and why), overlap\n"
		"                       (fragment_overlap or fragment_inconsistency), refused,\n"
		"                       tiny_fragment (non-final, under 64 bytes), df_fragment,\n"
		"                       policy_difference (--policy all); '-' for stdout\n"
		"  --json               the summary as one JSON object on stdout (on stderr when\n"
		"                       OUT or --report is '-')\n"
		"  -h, --help           this text\n"
		"\n"
		"Whenever datagrams are lost to a limit, stderr says how many and which option\n"
		"keeps them. Exit status: 0 done; 1 IN was cut off or corrupt part way (OUT\n"
		"holds everything read before it), OUT could not be written (it is left\n"
		"untouched), or packets leaked; 2 bad usage, IN unreadable or OUT not creatable.\n",
		CLOCK_WIN);
}

/* ---- the clock ------------------------------------------------------------ */

static uint64_t clock_tick(struct bulk_clock *c, uint64_t ts)
{
	uint64_t s[CLOCK_WIN];
	unsigned n;

	if (!c->median) {
		if (ts > c->now)
			c->now = ts;
		return c->now;
	}
	c->win[c->pos] = ts;
	c->pos = (c->pos + 1) % CLOCK_WIN;
	if (c->n < CLOCK_WIN)
		c->n++;
	n = c->n;
	memcpy(s, c->win, sizeof(s));
	for (unsigned i = 1; i < n; i++) /* insertion sort of at most 7 */
		for (unsigned j = i; j && s[j - 1] > s[j]; j--) {
			uint64_t x = s[j];

			s[j] = s[j - 1];
			s[j - 1] = x;
		}
	if (s[n / 2] > c->now)
		c->now = s[n / 2];
	return c->now;
}

/* ---- the filter ----------------------------------------------------------- */

/* Compile expr for link type dlt; a usage error reads err. */
static int filter_compile(struct bpf_program *prog, const char *expr, int dlt, char *err,
			  size_t errlen)
{
	pcap_t *p = pcap_open_dead(dlt, 262144);
	int r;

	if (!p) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	r = pcap_compile(p, prog, expr, 1, PCAP_NETMASK_UNKNOWN);
	if (r)
		snprintf(err, errlen, "%s", pcap_geterr(p));
	pcap_close(p);
	return r ? -1 : 0;
}

/* Whether frame r is to be reassembled. A link type the expression cannot
 * be compiled for (one warning) passes all its frames. */
static bool filter_match(struct filter *f, const struct dio_rec *r)
{
	struct pcap_pkthdr h = {.caplen = r->caplen, .len = r->len};
	unsigned i;

	if (!f->expr)
		return true;
	for (i = 0; i < f->n && f->by_dlt[i].dlt != r->dlt; i++)
		;
	if (i == f->n) {
		char err[PCAP_ERRBUF_SIZE + 64];

		if (f->n == MAX_FILTERS || r->dlt < 0)
			return false;
		f->by_dlt[i].dlt = r->dlt;
		f->by_dlt[i].ok =
			!filter_compile(&f->by_dlt[i].prog, f->expr, r->dlt, err, sizeof(err));
		if (!f->by_dlt[i].ok)
			fprintf(stderr,
				"rxpath defrag: warning: filter not usable on link type %s (%s): "
				"its frames pass unreassembled\n",
				pcap_datalink_val_to_name(r->dlt)
					? pcap_datalink_val_to_name(r->dlt)
					: "?",
				err);
		f->n++;
	}
	return f->by_dlt[i].ok && pcap_offline_filter(&f->by_dlt[i].prog, &h, r->data);
}

static void filter_free(struct filter *f)
{
	for (unsigned i = 0; i < f->n; i++)
		if (f->by_dlt[i].ok)
			pcap_freecode(&f->by_dlt[i].prog);
}

/* ---- the profile ---------------------------------------------------------- */

/* Lower *lim to the limit in file under mount at rel and at each of its
 * ancestors up to the mount's root (one that is not there is skipped). */
static void cgroup_walk(const char *mount, const char *rel_in, const char *file, uint64_t *lim)
{
	char rel[PATH_MAX], path[2 * PATH_MAX];

	snprintf(rel, sizeof(rel), "%s", rel_in && strcmp(rel_in, "/") ? rel_in : "");
	for (;;) {
		unsigned long long v;
		char *slash;
		FILE *f;

		snprintf(path, sizeof(path), "%s%s/%s", mount, rel, file);
		f = fopen(path, "r");
		if (f) {
			if (fscanf(f, "%llu", &v) == 1 && v < *lim) /* "max": no number */
				*lim = v;
			fclose(f);
		}
		if (!rel[0])
			break;
		slash = strrchr(rel, '/');
		*(slash ? slash : rel) = 0;
	}
}

/* The lowest memory limit of this process's cgroups, ~0 for none: cgroup
 * v2's memory.max and v1's memory.limit_in_bytes, for the cgroup that
 * /proc/self/cgroup names and every ancestor, so that a limit set on a
 * systemd slice or a container's parent counts where the process sees the
 * whole tree (inside a cgroup namespace its own cgroup is the mount's
 * root, read as well). */
static uint64_t cgroup_max(void)
{
	char line[PATH_MAX], v1[PATH_MAX] = "", v2[PATH_MAX] = "";
	uint64_t lim = ~0ull;
	FILE *f = fopen("/proc/self/cgroup", "r");

	if (f) {
		while (fgets(line, sizeof(line), f)) {
			char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;

			if (!c2)
				continue;
			line[strcspn(line, "\n")] = 0;
			if (c2 == c1 + 1 && !strncmp(line, "0:", 2))
				snprintf(v2, sizeof(v2), "%s", c2 + 1);
			else if (c2 - c1 - 1 == 6 && !strncmp(c1 + 1, "memory", 6))
				snprintf(v1, sizeof(v1), "%s", c2 + 1);
		}
		fclose(f);
	}
	cgroup_walk("/sys/fs/cgroup", v2, "memory.max", &lim);
	cgroup_walk("/sys/fs/cgroup/unified", v2, "memory.max", &lim);
	cgroup_walk("/sys/fs/cgroup/memory", v1, "memory.limit_in_bytes", &lim);
	return lim;
}

/* A quarter of the memory this process may use: RAM, or its cgroups' cap
 * when lower. */
static uint64_t ram_quarter(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
	uint64_t ram = pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz : 1ull << 30;
	uint64_t cg = cgroup_max();

	if (cg < ram)
		ram = cg;
	return ram / 4 < (64u << 10) ? (64u << 10) : ram / 4;
}

static void apply_profile(const struct settings *s, struct rxp_defrag_config *cfg)
{
	if (s->kernel) {
		cfg->mem_limit = RXP_DEFRAG_MEM_DEFAULT;
		cfg->max_dist = 64;
		cfg->timeout_v4_ns = 30ull * 1000000000ull;
		cfg->timeout_v6_ns = 60ull * 1000000000ull;
		cfg->pressure = RXP_DEFRAG_PRESSURE_LINUX;
	} else {
		cfg->mem_limit = ram_quarter();
		cfg->max_dist = -1;
		cfg->timeout_v4_ns = cfg->timeout_v6_ns = NO_TIMEOUT_NS;
	}
	if (s->mem_limit != UNSET)
		cfg->mem_limit = s->mem_limit;
	if (s->all) /* eight tables share the cap */
		cfg->mem_limit = cfg->mem_limit / RXP_DEFRAG_POLICY_MAX < (64u << 10)
					 ? (64u << 10)
					 : cfg->mem_limit / RXP_DEFRAG_POLICY_MAX;
	if (s->max_dist != UNSET)
		cfg->max_dist = s->max_dist ? (int)s->max_dist : -1;
	if (s->timeout_ns != UNSET)
		cfg->timeout_v4_ns = cfg->timeout_v6_ns = s->timeout_ns;
	if (s->max_queues != UNSET)
		cfg->max_queues = (uint32_t)s->max_queues;
	else if (!s->kernel) /* the table's memory grows with the queues in use */
		cfg->max_queues = rxp_defrag_queues_for_mem(cfg->mem_limit);
	else
		cfg->max_queues = 8192;
}

/* ---- output --------------------------------------------------------------- */

static void note_werr(struct dctx *c)
{
	if (!c->werr)
		c->werr = errno ? errno : EIO;
}

/* The table hands us each fragment it gives up on; the frame layer rebuilds
 * the frame it came in. */
static void on_discard(void *arg, const struct rxp_pkt *pkt)
{
	struct dctx *c = arg;
	struct dfr_out o;

	if (c->werr || dfr_frame_discarded(c->frames, pkt, &o))
		return;
	if (dio_write_frame_on(c->out, c->in, o.iface, o.dlt, o.frame, o.len, pkt->tstamp_ns))
		note_werr(c);
	else
		c->kept++;
}

/* Write the datagrams DFR_LATER left, oldest first, until keep are left:
 * each frame's headers now, its datagram's bytes by OUT's writer
 * (dio_out_fill), which copies them on the other core. */
static void flush_later(struct dctx *c, unsigned keep)
{
	struct rxp_pkt *dgram;
	struct dfr_out o;
	uint8_t *room;

	while (dfr_frames_npending(c->frames) > keep &&
	       (room = dio_out_room(c->out, DFR_OUT_MAX)) &&
	       dfr_frames_pending_ref(c->frames, room, &o, &dgram)) {
		if (dio_write_frame_on(c->out, c->in, o.iface, o.dlt, o.frame, o.len, o.ts_ns)) {
			rxp_pkt_consume(dgram);
			note_werr(c);
		} else if (dio_out_fill(c->out, room + o.len - dgram->len, dgram)) {
			note_werr(c);
		}
	}
}

/* Hint the next record dio_peek gives, when it is an untagged Ethernet
 * frame (zone 0, as dfr_frame_process gives it) holding IP: its line of
 * the table's index now, and its queue HINT_QUEUE hints later (see
 * HINT_AHEAD). */
static void hint(struct dctx *c, const struct rxp_defrag_table *t)
{
	uint32_t n, h = 0;
	int dlt;
	const uint8_t *f = dio_peek(c->in, &n, &dlt);

	if (f && dlt == DLT_EN10MB && n >= RXP_ETH_HLEN + RXP_IPV4_HLEN &&
	    ((f[12] == 0x08 && f[13] == 0x00) || (f[12] == 0x86 && f[13] == 0xdd)))
		h = rxp_defrag_prefetch_slot(t, f + RXP_ETH_HLEN, n - RXP_ETH_HLEN, 0);
	c->hints[c->nhint++ % HINT_AHEAD] = h;
	if (c->nhint > HINT_QUEUE)
		rxp_defrag_prefetch_queue(t, c->hints[(c->nhint - 1 - HINT_QUEUE) % HINT_AHEAD]);
}

static void process(struct dctx *c, struct rxp_defrag_table *t, struct bulk_clock *clk,
		    const struct dio_rec *r)
{
	struct dfr_frame fr = {.dlt = r->dlt,
			       .iface = r->iface,
			       .data = r->data,
			       .caplen = r->caplen,
			       .ts_ns = r->ts_ns,
			       /* not while the discard hook may write OUT */
			       .room = c->keep ? NULL : dio_out_room(c->out, DFR_OUT_MAX),
			       .src = r->page,
			       .src_off = r->page_off,
			       .stable = r->stable,
			       .defer = c->defer,
			       .defer_copy = c->defer && dio_out_fill_ok(c->out)};
	struct dfr_out fo;
	uint64_t now;

	c->recs++;
	drep_frame(c->rep, r->number, r->ts_ns);
	if (!r->packet || !filter_match(&c->flt, r)) {
		c->filtered += r->packet;
		goto pass;
	}
	now = clock_tick(clk, r->ts_ns);
	rxp_defrag_expire(t, now);
	switch (dfr_frame_process(c->frames, t, &fr, now, &fo)) {
	case DFR_PASS:
		if (c->pol)
			dpol_frame(c->pol, r, &fr, now, NULL, stderr, c->report);
		goto pass;
	case DFR_HELD:
		if (c->pol)
			dpol_frame(c->pol, r, &fr, now, NULL, stderr, c->report);
		flush_later(c, 1);
		return;
	case DFR_DROPPED:
		flush_later(c, 1);
		return; /* a late duplicate: not for the policy tables either */
	case DFR_LATER:
		/* Written after the next record's table work (flush_later),
		 * when its payload, asked for now, is in: the copy out of a
		 * datagram's fragments was the main thread's largest stall. */
		c->reasm++;
		flush_later(c, 1);
		return;
	case DFR_OUT:
		if (c->pol)
			dpol_frame(c->pol, r, &fr, now, &fo, stderr, c->report);
		flush_later(c, 0);
		if (dio_write_frame(c->out, c->in, fo.frame, fo.len, 0))
			note_werr(c);
		c->reasm++;
		return;
	}
pass:
	flush_later(c, 0);
	if (dio_write_same(c->out, c->in))
		note_werr(c);
	c->passed++;
}

/* ---- the summary ---------------------------------------------------------- */

/* A byte count as an option would take it ("4m"), or rounded ("5.9g"). */
static void fmt_bytes(char *b, size_t n, uint64_t v)
{
	static const char sfx[] = "kmg";

	for (int i = 2; i >= 0; i--) {
		uint64_t unit = 1ull << (10 * (i + 1));

		if (v && !(v % unit)) {
			snprintf(b, n, "%" PRIu64 "%c", v / unit, sfx[i]);
			return;
		}
		if (v >= unit) {
			snprintf(b, n, "%.1f%c", (double)v / (double)unit, sfx[i]);
			return;
		}
	}
	snprintf(b, n, "%" PRIu64, v);
}

/* What was lost to a limit, and the option that keeps it: datagrams given
 * up, by reason, from the table's events. */
static void loss_hints(const struct drep *rep, const struct rxp_defrag_config *cfg,
		       const struct dfr_frame_stats *fst)
{
	struct drep_losses l;
	char mem[32];
	uint64_t cap;

	drep_losses(rep, &l);
	cap = l.evicted + l.memory + l.queue_limit;
	fmt_bytes(mem, sizeof(mem), cfg->mem_limit);
	if (cap || l.refused_memory)
		fprintf(stderr,
			"rxpath defrag: lost to the memory or queue cap: %" PRIu64
			" datagrams given up (%" PRIu64 " evicted), %" PRIu64
			" fragments refused (--mem-limit %s, --max-queues %" PRIu32
			"): a larger --mem-limit or --max-queues keeps them\n",
			cap, l.evicted, l.refused_memory, mem, cfg->max_queues);
	if (l.timeout)
		fprintf(stderr,
			"rxpath defrag: lost to the timeout: %" PRIu64
			" datagrams expired (%.3g s IPv4, %.3g s IPv6): --timeout none keeps "
			"them\n",
			l.timeout, (double)cfg->timeout_v4_ns / 1e9,
			(double)cfg->timeout_v6_ns / 1e9);
	if (l.max_dist)
		fprintf(stderr,
			"rxpath defrag: lost to max_dist: %" PRIu64
			" datagrams flushed (--max-dist %d): --max-dist 0 keeps them\n",
			l.max_dist, cfg->max_dist);
	if (fst->alloc_fail)
		fprintf(stderr,
			"rxpath defrag: %" PRIu64
			" frames passed unreassembled for lack of packet buffers\n",
			fst->alloc_fail);
}

static void summary_json(FILE *f, const struct dctx *c, const struct rxp_defrag_counters *k,
			 const struct rxp_defrag_config *cfg, const struct settings *s,
			 const struct dfr_frame_stats *fst, enum dio_end end)
{
	struct rxp_pktpool_stats st;
	bool first = true;

	rxp_pktpool_get_stats(c->pp, &st);
	fprintf(f,
		"{\"profile\":\"%s\",\"policy\":\"%s\",\"mem_limit\":%" PRIu64
		",\"max_queues\":%" PRIu32 ",\"max_dist\":%d,\"timeout_v4_ns\":%" PRIu64
		",\"timeout_v6_ns\":%" PRIu64
		",\"input_format\":\"%s\",\"input_compression\":%s%s%s"
		",\"output_format\":\"%s\",\"input_end\":\"%s\",\"records_in\":%" PRIu64
		",\"packets_in\":%" PRIu64 ",\"passed\":%" PRIu64 ",\"filtered_out\":%" PRIu64
		",\"reassembled\":%" PRIu64 ",\"kept_fragments\":%" PRIu64
		",\"not_written\":%" PRIu64 ",\"alloc_fail\":%" PRIu64 ",\"nonip\":%" PRIu64,
		s->kernel ? "kernel" : "file", s->all ? "all" : rxp_defrag_policy_name(cfg->policy),
		cfg->mem_limit, cfg->max_queues, cfg->max_dist > 0 ? cfg->max_dist : 0,
		cfg->timeout_v4_ns == NO_TIMEOUT_NS ? 0 : cfg->timeout_v4_ns,
		cfg->timeout_v6_ns == NO_TIMEOUT_NS ? 0 : cfg->timeout_v6_ns, dio_in_format(c->in),
		dio_in_compression(c->in) ? "\"" : "",
		dio_in_compression(c->in) ? dio_in_compression(c->in) : "null",
		dio_in_compression(c->in) ? "\"" : "", c->out_pcapng ? "pcapng" : "pcap",
		end == DIO_EOF	 ? "complete"
		: end == DIO_CUT ? "cut"
				 : "corrupt",
		c->recs, c->recs, c->passed, c->filtered, c->reasm, c->kept, c->out_skipped,
		fst->alloc_fail, fst->nonip);
	fprintf(f,
		",\"ReasmReqds\":%" PRIu64 ",\"ReasmOKs\":%" PRIu64 ",\"ReasmFails\":%" PRIu64
		",\"ReasmTimeout\":%" PRIu64 ",\"ReasmOverlaps\":%" PRIu64 ",\"evictions\":%" PRIu64
		",\"duplicates\":%" PRIu64 ",\"policy_overlaps\":%" PRIu64 ",\"invalid\":%" PRIu64
		",\"mem_drops\":%" PRIu64 ",\"max_dist_flushes\":%" PRIu64
		",\"mem_high_water\":%" PRIu64 ",\"policy_differences\":%" PRIu64,
		k->ReasmReqds, k->ReasmOKs, k->ReasmFails, k->ReasmTimeout, k->ReasmOverlaps,
		k->evictions, k->duplicates, k->policy_overlaps, k->invalid, k->mem_drops,
		k->max_dist_flushes, k->mem_high_water, c->pol_diff);
	drep_json(c->rep, f);
	fputs(",\"frames\":", f);
	dfr_frames_json(c->frames, f);
	fputs(",\"drops\":{", f);
	for (unsigned i = 0; i < RXP_DROP_MAX; i++) {
		if (!st.drops[i])
			continue;
		fprintf(f, "%s\"%s\":%" PRIu64, first ? "" : ",", rxp_drop_reason_name(i),
			st.drops[i]);
		first = false;
	}
	fprintf(f, "}}\n");
}

static void summary_text(const struct dctx *c, const struct rxp_defrag_counters *k,
			 const struct rxp_defrag_config *cfg, const struct settings *s,
			 const struct dfr_frame_stats *fst)
{
	struct rxp_pktpool_stats st;
	char mem[32];

	rxp_pktpool_get_stats(c->pp, &st);
	fmt_bytes(mem, sizeof(mem), cfg->mem_limit);
	fprintf(stderr,
		"rxpath defrag (%s, %s, mem %s): %" PRIu64 " records in; out: %" PRIu64
		" passed (%" PRIu64 " not matching the filter), %" PRIu64 " reassembled, %" PRIu64
		" incomplete fragments kept\n"
		"  ReasmReqds %" PRIu64 "  ReasmOKs %" PRIu64 "  ReasmFails %" PRIu64
		"  ReasmTimeout %" PRIu64 "  ReasmOverlaps %" PRIu64 "\n"
		"  evictions %" PRIu64 "  duplicates %" PRIu64 "  policy_overlaps %" PRIu64
		"  invalid %" PRIu64 "  mem_drops %" PRIu64 "  mem_high_water %" PRIu64 "\n",
		s->kernel ? "kernel" : "file", rxp_defrag_policy_name(cfg->policy), mem, c->recs,
		c->passed, c->filtered, c->reasm, c->kept, k->ReasmReqds, k->ReasmOKs,
		k->ReasmFails, k->ReasmTimeout, k->ReasmOverlaps, k->evictions, k->duplicates,
		k->policy_overlaps, k->invalid, k->mem_drops, k->mem_high_water);
	for (unsigned i = 0; i < RXP_DROP_MAX; i++)
		if (st.drops[i])
			fprintf(stderr, "  drop %s %" PRIu64 "\n", rxp_drop_reason_name(i),
				st.drops[i]);
	if (c->out_skipped)
		fprintf(stderr, "  %" PRIu64 " records OUT's format cannot hold were left out\n",
			c->out_skipped);
	if (s->all)
		fprintf(stderr, "  %" PRIu64 " datagrams differ between overlap policies\n",
			c->pol_diff);
	dfr_frames_summary(c->frames, stderr);
	drep_table(c->rep, stderr);

	(void)fst;
}

/* ---- options -------------------------------------------------------------- */

/* 0, or the exit status to return (help, usage errors). */
static int parse_args(int argc, char **argv, struct settings *s, struct rxp_defrag_config *cfg,
		      struct filter *flt)
{
	enum { O_KERNEL = 256, O_MAXQ, O_MAXD, O_PCAPNG, O_REPORT };
	static const struct option opts[] = {
		{"policy", required_argument, NULL, 'p'},
		{"forward", no_argument, NULL, 'F'},
		{"mem-limit", required_argument, NULL, 'm'},
		{"max-queues", required_argument, NULL, O_MAXQ},
		{"max-dist", required_argument, NULL, O_MAXD},
		{"timeout", required_argument, NULL, 't'},
		{"kernel", no_argument, NULL, O_KERNEL},
		{"filter", required_argument, NULL, 'f'},
		{"keep-incomplete", no_argument, NULL, 'k'},
		{"pcapng", no_argument, NULL, O_PCAPNG},
		{"json", no_argument, NULL, 'j'},
		{"report", required_argument, NULL, O_REPORT},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int o;

	optind = 1;
	opterr = 0;
	while ((o = getopt_long(argc, argv, ":hf:", opts, NULL)) != -1) {
		switch (o) {
		case 'p':
			s->all = !strcmp(optarg, "all");
			cfg->policy = RXP_DEFRAG_STRICT;
			if (!s->all && rxp_defrag_policy_parse(optarg, &cfg->policy)) {
				char names[160] = "";

				for (unsigned k = 0; k < RXP_DEFRAG_POLICY_MAX; k++) {
					strcat(names,
					       rxp_defrag_policy_name((enum rxp_defrag_policy)k));
					strcat(names, ", ");
				}
				return rxp_usage_error(CMD, "unknown --policy '%s' (%sall)", optarg,
						       names);
			}
			break;
		case 'F':
			cfg->forward = true;
			break;
		case 'm':
			if (rxp_opt_u64(CMD, "--mem-limit", optarg, RXP_NUM_BYTES, 64 << 10,
					1ull << 40, &s->mem_limit))
				return RXP_EXIT_USAGE;
			break;
		case O_MAXQ:
			if (rxp_opt_u64(CMD, "--max-queues", optarg, RXP_NUM_COUNT, 1,
					RXP_DEFRAG_QUEUES_MAX, &s->max_queues))
				return RXP_EXIT_USAGE;
			break;
		case O_MAXD:
			if (rxp_opt_u64(CMD, "--max-dist", optarg, RXP_NUM_COUNT, 0, 1u << 30,
					&s->max_dist))
				return RXP_EXIT_USAGE;
			break;
		case 't':
			if (!strcmp(optarg, "none"))
				s->timeout_ns = NO_TIMEOUT_NS;
			else if (rxp_opt_duration(CMD, "--timeout", optarg, 1000000ull,
						  1000000ull * 1000000000ull, &s->timeout_ns))
				return RXP_EXIT_USAGE;
			break;
		case O_KERNEL:
			s->kernel = true;
			break;
		case 'f':
			flt->expr = optarg;
			break;
		case 'k':
			s->keep = true;
			break;
		case O_PCAPNG:
			s->pcapng = true;
			break;
		case 'j':
			s->json = true;
			break;
		case O_REPORT:
			s->report = optarg;
			break;
		case 'h':
			usage(stdout);
			return -RXP_EXIT_OK - 1;
		default:
			return rxp_opt_getopt_error(CMD, o, argc, argv);
		}
	}
	if (argc - optind != 2)
		return rxp_usage_error(CMD, "%s (see rxpath defrag --help)",
				       argc - optind < 2 ? "needs IN and OUT"
							 : "takes only IN and OUT");
	if (flt->expr) {
		struct bpf_program prog;
		char err[PCAP_ERRBUF_SIZE + 64];

		/* Checked once up front; compiled per link type as frames come. */
		if (filter_compile(&prog, flt->expr, DLT_EN10MB, err, sizeof(err)) &&
		    filter_compile(&prog, flt->expr, DLT_RAW, err, sizeof(err)))
			return rxp_usage_error(CMD, "bad --filter '%s': %s", flt->expr, err);
		pcap_freecode(&prog);
	}
	return 0;
}

static bool ends_with(const char *s, const char *sfx)
{
	size_t a = strlen(s), b = strlen(sfx);

	return a >= b && !strcmp(s + a - b, sfx);
}

static int defrag_main(int argc, char **argv)
{
	struct settings s = {
		.mem_limit = UNSET, .max_queues = UNSET, .max_dist = UNSET, .timeout_ns = UNSET};
	struct rxp_defrag_config cfg = {0};
	struct dctx c = {0};
	struct rxp_defrag_table *t = NULL;
	struct rxp_defrag_counters k = {0};
	struct dfr_frame_stats fst = {0};
	struct bulk_clock clk = {0};
	struct dio_rec r;
	enum dio_end end = DIO_EOF;
	const char *inpath, *why;
	char err[PATH_MAX + 256];
	int rc;

	rc = parse_args(argc, argv, &s, &cfg, &c.flt);
	if (rc)
		return rc < 0 ? RXP_EXIT_OK : rc;
	inpath = argv[optind];
	c.out_name = argv[optind + 1];
	apply_profile(&s, &cfg);
	/* The median only matters to timers (none by default in the file
	 * profile): without them the clock is the latest timestamp. */
	clk.median = !s.kernel && cfg.timeout_v4_ns != NO_TIMEOUT_NS;
	if (!strcmp(c.out_name, "-") && isatty(STDOUT_FILENO))
		return rxp_usage_error(CMD, "refusing to write a capture to a terminal");
	if (!strcmp(inpath, "-") && isatty(STDIN_FILENO))
		return rxp_usage_error(CMD, "refusing to read a capture from a terminal");
	if (dio_check_paths(inpath, c.out_name, err, sizeof(err)))
		return rxp_usage_error(CMD, "%s", err);
	/* Before OUT is opened: a refused command writes nothing. OUT is
	 * written to a temporary file renamed over it at the end, so a
	 * report that is OUT under another name would be lost. */
	if (s.report &&
	    (!strcmp(s.report, "-")
		     ? !strcmp(c.out_name, "-")
		     : rxp_same_path(s.report, c.out_name) || rxp_same_path(s.report, inpath) ||
			       dio_check_paths(inpath, s.report, err, sizeof(err))))
		return rxp_usage_error(CMD, "--report %s would overwrite IN or OUT", s.report);
	c.in = dio_open_in(inpath, err, sizeof(err));
	if (!c.in)
		return rxp_usage_error(CMD, "cannot read %s: %s",
				       strcmp(inpath, "-") ? inpath : "stdin", err);
	rc = RXP_EXIT_USAGE;
	c.out = dio_open_out(c.out_name, c.in, s.pcapng || ends_with(c.out_name, ".pcapng"), err,
			     sizeof(err));
	if (!c.out) {
		rxp_usage_error(CMD, "%s", err);
		goto out;
	}
	if (s.report) {
		c.report = strcmp(s.report, "-") ? fopen(s.report, "w") : stdout;
		if (!c.report) {
			rxp_usage_error(CMD, "cannot write %s: %s", s.report, strerror(errno));
			goto out;
		}
	}
	c.rep = drep_create(c.report);
	cfg.event_cb = drep_event;
	cfg.event_mask = c.rep ? drep_event_mask(c.rep) : 0;
	cfg.event_arg = c.rep;
	{
		struct rxp_pktpool_config pc = {.name = "defrag"};
		struct rxp_pktpool_config hc = {.name = "defrag-heads",
						.buf_size = RXP_HEADROOM_DEFAULT + HEAD_ROOM,
						.headroom = RXP_HEADROOM_DEFAULT};
		struct rxp_defrag_config all = cfg;

		all.mem_limit *= s.all ? RXP_DEFRAG_POLICY_MAX : 1; /* every table's */
		rxp_defrag_pool_config(&all, POOL_MARGIN, &pc);
		c.pp = rxp_pktpool_create(&pc);
		/* Sized as pc is, for packets of its small buffers: a table
		 * at its cap holds no more of them (each costs at least its
		 * head, and references DFR_REF_MIN bytes more). */
		if (cfg.policy == RXP_DEFRAG_STRICT) {
			rxp_defrag_pool_config(&cfg, POOL_MARGIN, &hc);
			c.hp = rxp_pktpool_create(&hc);
		}
	}
	if (s.keep) {
		c.keep = true;
		cfg.discard_cb = on_discard;
		cfg.discard_arg = &c;
	}
	dfr_frame_table_config(&cfg);
	t = c.pp ? rxp_defrag_table_create(&cfg) : NULL;
	c.frames = c.pp ? dfr_frames_create(c.pp) : NULL;
	/* Without the head pool, every fragment is copied: the same output.
	 * What references hold of IN stays within the table's cap. */
	if (c.frames && c.hp && dfr_frames_set_refs(c.frames, c.hp)) {
		rxp_pktpool_destroy(c.hp);
		c.hp = NULL;
	}
	if (c.hp)
		dio_in_refs(c.in, cfg.mem_limit);
	if (c.frames && !s.kernel && dfr_frames_set_late(c.frames)) {
		dfr_frames_destroy(c.frames);
		c.frames = NULL;
	}
	if (s.all && t && c.frames)
		c.pol = dpol_create(&cfg, c.pp);
	if (!c.rep || !c.pp || !t || !c.frames || (s.all && !c.pol)) {
		fprintf(stderr, "rxpath defrag: cannot set up for --mem-limit %" PRIu64 ": %s\n",
			cfg.mem_limit, strerror(errno ? errno : ENOMEM));
		rc = RXP_EXIT_FAIL;
		goto out;
	}
	rc = RXP_EXIT_OK;
	c.defer = !c.keep && !c.pol; /* (whose hooks write or hash OUT's frames now) */
	for (int i = 0; i < HINT_AHEAD; i++)
		hint(&c, t);
	while (!c.werr && dio_read(c.in, &r) == 1) {
		hint(&c, t);
		process(&c, t, &clk, &r);
	}
	flush_later(&c, 0);
	end = dio_in_end(c.in, &why);
	/* End of input: what is left never completed (the hook sees it). */
	rxp_defrag_get_counters(t, &k);
	drep_counters(c.rep, &k);
	rxp_defrag_table_destroy(t);
	t = NULL;
	c.pol_diff = c.pol ? dpol_differences(c.pol) : 0;
	dpol_destroy(c.pol);
	c.pol = NULL;
	if (c.report && ((c.report != stdout && fclose(c.report)) ||
			 (c.report == stdout && fflush(stdout)) || drep_error(c.rep))) {
		fprintf(stderr, "rxpath defrag: cannot write %s: %s\n", s.report,
			strerror(drep_error(c.rep) ? drep_error(c.rep) : errno));
		rc = RXP_EXIT_FAIL;
	}
	if (c.report != stdout)
		c.report = NULL;
	dfr_frames_get_stats(c.frames, &fst);
	if (c.werr) {
		fprintf(stderr, "rxpath defrag: cannot write %s: %s (nothing written)\n",
			strcmp(c.out_name, "-") ? c.out_name : "stdout", strerror(c.werr));
		rc = RXP_EXIT_FAIL;
	}
	c.out_pcapng = dio_out_is_pcapng(c.out);
	c.out_skipped = dio_out_skipped(c.out);
	if (dio_close_out(c.out, !c.werr, err, sizeof(err))) {
		if (!c.werr)
			fprintf(stderr, "rxpath defrag: %s\n", err);
		rc = RXP_EXIT_FAIL;
	}
	c.out = NULL;
	if (!c.werr && end != DIO_EOF) {
		fprintf(stderr,
			"rxpath defrag: %s: %s after record %" PRIu64 " (%s): OUT holds "
			"everything before it\n",
			strcmp(inpath, "-") ? inpath : "stdin",
			end == DIO_CUT ? "cut off" : "unreadable", c.recs, why);
		rc = RXP_EXIT_FAIL;
	}
	loss_hints(c.rep, &cfg, &fst);
	dfr_frames_warnings(c.frames, stderr);
	if (s.json)
		summary_json(strcmp(c.out_name, "-") && !(s.report && !strcmp(s.report, "-"))
				     ? stdout
				     : stderr,
			     &c, &k, &cfg, &s, &fst, end);
	else
		summary_text(&c, &k, &cfg, &s, &fst);
out:
	rxp_defrag_table_destroy(t);
	dpol_destroy(c.pol);
	dfr_frames_destroy(c.frames);
	if (c.out)
		dio_close_out(c.out, false, err, sizeof(err));
	dio_close_in(c.in);
	filter_free(&c.flt);
	if (c.report && c.report != stdout)
		fclose(c.report);
	drep_destroy(c.rep);
	if ((c.pp ? rxp_pktpool_destroy(c.pp) : 0) + (c.hp ? rxp_pktpool_destroy(c.hp) : 0)) {
		fprintf(stderr, "rxpath defrag: packet leak\n");
		rc = RXP_EXIT_FAIL;
	}
	return rc;
}

RXP_COMMAND(defrag, "defrag", "reassemble IP fragments in a capture (pcap, pcapng, gz, zst)",
	    defrag_main);
