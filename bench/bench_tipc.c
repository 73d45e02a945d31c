/*
 * rxpath bench tipc: the TIPC message layer on one thread.
 *
 *   - bundling: 64-byte messages appended into 1500-byte bundles (msgs/s);
 *   - extraction: those bundles through rxp_tipc_link_rcv() to a port sink
 *     (msgs/s);
 *   - fragmentation + reassembly of 64 KiB messages through the link, at a
 *     1472-byte and a 9000-byte TIPC MTU (GB/s of message bytes), beside
 *     memcpy of the same 64 KiB in the same run (the reference: the
 *     physical limit for moving the bytes once). The rxpath side builds the
 *     fragments from the sender's message (zero-copy: each references the
 *     message's pages), passes each through rxp_tipc_link_rcv, and the port
 *     sink receives the reassembled message. Two deliveries, in separate
 *     rows: "zero-copy", where the sink consumes the message as rxpath hands
 *     it over (what the library does: no byte of the payload is copied), and
 *     "+ copy to app", where the sink also copies its 64 KiB into one
 *     application buffer, as recvmsg would, the same destination the memcpy
 *     baseline copies into (source and destination together, 128 KiB,
 *     exceed L1d on both sides, so both copies stream from L2 alike).
 *     Sender and receiver share the thread and no bearer sits between them
 *     (no UDP/IP headers, no checksums). Read the copy-out with this in
 *     mind: the 46 fragments (MTU 1472) are consecutive slices of the
 *     sender's message, so rxp_pkt_try_coalesce joins them back into one
 *     page frag (a frag that continues the last one on the same page extends
 *     it) and the sink's copy is one memcpy. Fragments received from a NIC
 *     sit in separate buffers and stay 46 pieces, and copying 64 KiB out of
 *     1432-byte pieces costs more than one memcpy;
 *   - with --callgrind, also the instructions per fragment of fragmenting
 *     and reassembling one 64 KiB message at MTU 1472 (the copy-out
 *     excluded: only the per-fragment work);
 *   - with --callgrind: instructions per message (valgrind callgrind, stable
 *     on a noisy machine) of two builds of the bundle dispatch loop kept in
 *     this file only: "checked" consumes every inner message on every path
 *     (drops nested BUNDLER/FRAGMENTER/TUNNEL/BCAST and link users with
 *     their own counters), "unchecked" is the seed thread's shape (returns
 *     "not consumed" for those users, and its caller ignores it). Only data
 *     messages are fed, so the unchecked loop leaks nothing here; the
 *     difference is the price of the checks. Also the library's own
 *     rxp_tipc_link_rcv per extracted message.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "benchlib.h"
#include "rxpath/pktpool.h"
#include "rxpath/tipc.h"

#define MTU 1500
#define MSG 64

static struct rxp_pktpool *pp;
static uint64_t sunk;

static void sink(void *arg, struct rxp_pkt *pkt)
{
	sunk += pkt->len;
	rxp_pkt_consume(pkt);
}

/* The application's receive buffer: the frag+reasm sink copies each
 * reassembled message here, as the memcpy baseline does. */
static uint8_t app_buf[65536];

static void sink_copy(void *arg, struct rxp_pkt *pkt)
{
	uint32_t n = pkt->len < sizeof(app_buf) ? pkt->len : (uint32_t)sizeof(app_buf);

	if (rxp_pkt_copy_bits(pkt, 0, app_buf, n))
		abort();
	__asm__ volatile("" : : "r"(app_buf) : "memory");
	sunk += n;
	rxp_pkt_consume(pkt);
}

static struct rxp_pkt *msg64(uint32_t port)
{
	static uint8_t payload[MSG];

	return rxp_tipc_msg_new(pp, 0, RXP_TIPC_DIRECT_MSG, 40, 1, 2, port, payload, MSG - 40);
}

/* One full bundle of 64-byte messages; returns it and its count. */
static struct rxp_pkt *make_bundle(struct rxp_pkt *m, unsigned *cnt)
{
	struct rxp_pkt *b = rxp_tipc_bundle_new(pp, MTU, 1, 2);

	*cnt = 0;
	while (b && rxp_tipc_bundle_add(b, m, MTU) == 0)
		(*cnt)++;
	return b;
}

static double run_bundle(unsigned iters, uint64_t *msgs)
{
	struct rxp_pkt *m = msg64(7);
	uint64_t t0 = bench_now_ns(), n = 0;

	for (unsigned i = 0; i < iters; i++) {
		unsigned c;

		rxp_pkt_consume(make_bundle(m, &c));
		n += c;
	}
	*msgs = n;
	rxp_pkt_consume(m);
	return (double)n / ((double)(bench_now_ns() - t0) / 1e9);
}

static double run_extract(unsigned iters)
{
	struct rxp_tipc_link l;
	struct rxp_pkt *m = msg64(7), *b;
	unsigned c;
	uint64_t t0;

	b = make_bundle(m, &c);
	rxp_tipc_link_init(&l, pp);
	rxp_tipc_link_bind(&l, RXP_TIPC_PORT_ANY, sink, NULL);
	t0 = bench_now_ns();
	for (unsigned i = 0; i < iters; i++)
		rxp_tipc_link_rcv(&l, rxp_pkt_clone(b)); /* shares the bundle's bytes */
	t0 = bench_now_ns() - t0;
	rxp_tipc_link_reset(&l);
	rxp_pkt_consume(b);
	rxp_pkt_consume(m);
	return (double)iters * c / ((double)t0 / 1e9);
}

/* One message: fragments built from (a clone of) msg, each received by the
 * link; the sink gets the reassembled message. */
__attribute__((noinline)) void bench_tipc_frag_one(struct rxp_tipc_link *l, struct rxp_pkt *msg,
						   uint32_t mtu);
__attribute__((noinline)) void bench_tipc_frag_one(struct rxp_tipc_link *l, struct rxp_pkt *msg,
						   uint32_t mtu)
{
	struct rxp_pkt_queue q;
	struct rxp_pkt *m = rxp_pkt_clone(msg), *f;

	rxp_pkt_queue_init(&q);
	if (!m || rxp_tipc_fragment(pp, m, mtu, &q) < 0)
		abort();
	while ((f = rxp_pkt_dequeue(&q)))
		rxp_tipc_link_rcv(l, f);
}

/* Fragment and reassemble one 64 KiB message, iters times, delivering
 * zero-copy or with a copy into app_buf; GB/s. */
static double run_frag(unsigned iters, uint32_t mtu, bool copy)
{
	static uint8_t payload[65536 - 40];
	struct rxp_tipc_link l;
	uint64_t t0, bytes = 0;

	struct rxp_pkt *msg;

	memset(payload, 0x5a, sizeof(payload));
	/* Built once: the sender's message exists before it is fragmented. */
	msg = rxp_tipc_msg_new(pp, 0, RXP_TIPC_DIRECT_MSG, 40, 1, 2, 7, payload, sizeof(payload));
	rxp_tipc_link_init(&l, pp);
	rxp_tipc_link_bind(&l, RXP_TIPC_PORT_ANY, copy ? sink_copy : sink, NULL);
	t0 = bench_now_ns();
	for (unsigned i = 0; i < iters; i++) {
		bench_tipc_frag_one(&l, msg, mtu);
		bytes += 65536;
	}
	t0 = bench_now_ns() - t0;
	if (l.st.reassembled != iters)
		abort();
	rxp_tipc_link_reset(&l);
	rxp_pkt_consume(msg);
	return (double)bytes / (double)t0;
}

/* The physical limit: the application's copy of a 64 KiB message from
 * where it arrived (a 64 KiB source, like the sender's message pages the
 * rxpath side copies from) into app_buf, the same destination. */
static double run_memcpy(unsigned iters)
{
	static uint8_t src[65536];
	uint64_t t0 = bench_now_ns();

	memset(src, 1, sizeof(src));
	for (unsigned i = 0; i < iters; i++) {
		src[i & 0xffff] = (uint8_t)i;
		memcpy(app_buf, src, sizeof(src));
		__asm__ volatile("" : : "r"(app_buf) : "memory");
	}
	return (double)iters * 65536 / (double)(bench_now_ns() - t0);
}

/* ---- the two dispatch loops for callgrind --------------------------------------- */

static uint64_t drops[RXP_DROP_MAX];

static void drop(struct rxp_pkt *p, enum rxp_drop_reason r)
{
	drops[r]++;
	rxp_pkt_drop(p, r);
}

/* Consumes every inner message on every path. */
static void checked_dispatch(struct rxp_pkt *in)
{
	switch (rxp_tipc_user(in->data)) {
	case 0:
	case 1:
	case 2:
	case 3:
	case 8:
	case 9:
	case 11:
		sink(NULL, in);
		return;
	case RXP_TIPC_MSG_BUNDLER:
		drop(in, RXP_DROP_TIPC_NESTED_BUNDLE);
		return;
	case RXP_TIPC_MSG_FRAGMENTER:
		drop(in, RXP_DROP_TIPC_NESTED_FRAGMENT);
		return;
	case RXP_TIPC_TUNNEL_PROTOCOL:
		drop(in, RXP_DROP_TIPC_NESTED_TUNNEL);
		return;
	case RXP_TIPC_BCAST_PROTOCOL:
		drop(in, RXP_DROP_TIPC_NESTED_BCAST);
		return;
	default:
		drop(in, RXP_DROP_TIPC_NESTED_LINK);
		return;
	}
}

/* The seed thread's shape: "consumed?" with false for control users. */
static bool unchecked_data_input(struct rxp_pkt *in)
{
	switch (rxp_tipc_user(in->data)) {
	case 0:
	case 1:
	case 2:
	case 3:
	case 8:
	case 9:
	case 11:
		sink(NULL, in);
		return true;
	case RXP_TIPC_MSG_BUNDLER:
	case RXP_TIPC_MSG_FRAGMENTER:
	case RXP_TIPC_TUNNEL_PROTOCOL:
	case RXP_TIPC_BCAST_PROTOCOL:
		return false;
	default:
		rxp_pkt_drop(in, RXP_DROP_TIPC_USER);
		return true;
	}
}

/* Walk a linear bundle, copy out and validate each inner message, dispatch.
 * Identical in both variants except for the dispatch call. */
#define EXTRACT_LOOP(name, DISPATCH)                                                  \
	__attribute__((noinline)) void name(struct rxp_pkt *b);                       \
	__attribute__((noinline)) void name(struct rxp_pkt *b)                        \
	{                                                                             \
		uint32_t pos = rxp_tipc_hsize(b->data), end = rxp_tipc_size(b->data); \
		while (end - pos >= RXP_TIPC_MIN_H_SIZE) {                            \
			uint32_t isz = rxp_tipc_size(b->data + pos);                  \
			struct rxp_pkt *in;                                           \
			if (isz < RXP_TIPC_MIN_H_SIZE || isz > end - pos)             \
				break;                                                \
			in = rxp_pkt_alloc(pp, isz);                                  \
			if (!in)                                                      \
				break;                                                \
			memcpy(rxp_pkt_put(in, isz), b->data + pos, isz);             \
			if (rxp_tipc_validate(in->data, in->len)) {                   \
				rxp_pkt_drop(in, RXP_DROP_TIPC_HDR);                  \
				break;                                                \
			}                                                             \
			DISPATCH;                                                     \
			pos += (isz + 3) & ~3u;                                       \
			if (pos > end)                                                \
				pos = end;                                            \
		}                                                                     \
		rxp_pkt_consume(b);                                                   \
	}

EXTRACT_LOOP(bench_tipc_extract_checked, checked_dispatch(in))
EXTRACT_LOOP(bench_tipc_extract_unchecked, (void)unchecked_data_input(in))

__attribute__((noinline)) void bench_tipc_library(struct rxp_tipc_link *l, struct rxp_pkt *b);
__attribute__((noinline)) void bench_tipc_library(struct rxp_tipc_link *l, struct rxp_pkt *b)
{
	rxp_tipc_link_rcv(l, b);
}

/* The child run under callgrind: iters bundles through one variant. */
static int callgrind_child(const char *variant, unsigned iters)
{
	struct rxp_tipc_link l;
	struct rxp_pkt *m, *b;
	unsigned c;

	if (!strcmp(variant, "frag")) {
		static uint8_t payload[65536 - 40];

		m = rxp_tipc_msg_new(pp, 0, RXP_TIPC_DIRECT_MSG, 40, 1, 2, 7, payload,
				     sizeof(payload));
		rxp_tipc_link_init(&l, pp);
		rxp_tipc_link_bind(&l, RXP_TIPC_PORT_ANY, sink, NULL);
		for (unsigned i = 0; i < iters; i++)
			bench_tipc_frag_one(&l, m, 1472);
		rxp_tipc_link_reset(&l);
		rxp_pkt_consume(m);
		/* "msgs" here counts fragments */
		printf("msgs %llu\n", (unsigned long long)l.st.fragments);
		return 0;
	}
	m = msg64(7);
	b = make_bundle(m, &c);
	rxp_tipc_link_init(&l, pp);
	rxp_tipc_link_bind(&l, RXP_TIPC_PORT_ANY, sink, NULL);
	for (unsigned i = 0; i < iters; i++) {
		struct rxp_pkt *x = rxp_pkt_copy(b);

		if (!strcmp(variant, "checked"))
			bench_tipc_extract_checked(x);
		else if (!strcmp(variant, "unchecked"))
			bench_tipc_extract_unchecked(x);
		else
			bench_tipc_library(&l, x);
	}
	rxp_tipc_link_reset(&l);
	rxp_pkt_consume(b);
	rxp_pkt_consume(m);
	printf("msgs %u\n", iters * c);
	return 0;
}

/* Instructions per message of one variant, or -1 without valgrind. */
static double callgrind_ir(const char *variant, const char *fn, unsigned iters)
{
	char args[128];
	double msgs = 0;
	long ir;

	snprintf(args, sizeof(args), "--callgrind-child %s %u", variant, iters);
	ir = bench_callgrind(fn, "", args, "msgs", &msgs);
	return ir > 0 && msgs > 0 ? (double)ir / msgs : -1;
}

static void pool_init(void)
{
	struct rxp_pktpool_config c = {
		.name = "bench_tipc", .n_pkts = 8192, .n_bufs = 8192, .n_large = 64};

	pp = rxp_pktpool_create(&c);
	if (!pp)
		abort();
}

int main(int argc, char **argv)
{
	struct bench_opts o;
	struct bench_table t = {.name = "tipc"};
	int callgrind = 0;
	double v[11][64];

	if (argc == 4 && !strcmp(argv[1], "--callgrind-child")) {
		pool_init();
		return callgrind_child(argv[2], (unsigned)atoi(argv[3]));
	}
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--callgrind")) {
			callgrind = 1;
			memmove(&argv[i], &argv[i + 1], (size_t)(argc - i) * sizeof(*argv));
			argc--;
			break;
		}
	bench_parse(argc, argv, &o, "tipc",
		    "TIPC bundling/extraction of 64-byte messages (msgs/s), fragmentation +\n"
		    "reassembly of 64 KiB messages (GB/s) beside memcpy, and with --callgrind\n"
		    "the instructions per message of the dispatch with and without the\n"
		    "consumption checks.\n\n"
		    "Its own options:\n"
		    "  --callgrind  add the instruction counts (a full `rxpath bench` does)");
	if (o.runs > 64)
		o.runs = 64;
	pool_init();
	bench_pin(0);
	{
		unsigned ib = o.quick ? 2000 : 20000, ie = o.quick ? 2000 : 20000;
		unsigned ifr = o.quick ? 200 : 2000;
		uint64_t msgs;

		for (int r = 0; r < o.runs; r++) {
			v[0][r] = run_bundle(ib, &msgs) / 1e6;
			v[1][r] = run_extract(ie) / 1e6;
			v[2][r] = run_memcpy(ifr * 4);
			v[3][r] = run_frag(ifr, 1472, false);
			v[4][r] = run_frag(ifr, 9000, false);
			v[5][r] = run_frag(ifr, 1472, true);
			v[6][r] = run_frag(ifr, 9000, true);
			/* The machine is noisy and its memcpy speed jumps between
			 * runs: a ratio taken within each run, then its median, is
			 * steadier than a ratio of medians. */
			for (int k = 0; k < 4; k++)
				v[7 + k][r] = v[3 + k][r] / v[2][r];
		}
		bench_add(&t, "bundle 64B msgs (mtu 1500)", "rxp_tipc_bundle_add", "Mmsg/s",
			  bench_median(v[0], o.runs), 0, NULL);
		bench_add(&t, "extract 64B msgs (mtu 1500)", "rxp_tipc_link_rcv", "Mmsg/s",
			  bench_median(v[1], o.runs), 0, NULL);
		bench_add(&t, "64KiB frag+reasm", "memcpy 64KiB", "GB/s",
			  bench_median(v[2], o.runs), 0, NULL);
		bench_add(&t, "64KiB frag+reasm", "zero-copy mtu 1472", "GB/s",
			  bench_median(v[3], o.runs), 0, "memcpy 64KiB");
		bench_add(&t, "64KiB frag+reasm", "zero-copy mtu 9000", "GB/s",
			  bench_median(v[4], o.runs), 0, "memcpy 64KiB");
		bench_add(&t, "64KiB frag+reasm", "+ copy to app mtu 1472", "GB/s",
			  bench_median(v[5], o.runs), 0, "memcpy 64KiB");
		bench_add(&t, "64KiB frag+reasm", "+ copy to app mtu 9000", "GB/s",
			  bench_median(v[6], o.runs), 0, "memcpy 64KiB");
		bench_add(&t, "64KiB frag+reasm per-run", "zero-copy mtu 1472 / memcpy", "x",
			  bench_median(v[7], o.runs), 0, NULL);
		bench_add(&t, "64KiB frag+reasm per-run", "zero-copy mtu 9000 / memcpy", "x",
			  bench_median(v[8], o.runs), 0, NULL);
		bench_add(&t, "64KiB frag+reasm per-run", "+ copy mtu 1472 / memcpy", "x",
			  bench_median(v[9], o.runs), 0, NULL);
		bench_add(&t, "64KiB frag+reasm per-run", "+ copy mtu 9000 / memcpy", "x",
			  bench_median(v[10], o.runs), 0, NULL);
	}
	if (callgrind) {
		unsigned n = o.quick ? 200 : 2000;
		double un = callgrind_ir("unchecked", "bench_tipc_extract_unchecked", n);
		double ch = callgrind_ir("checked", "bench_tipc_extract_checked", n);
		double lib = callgrind_ir("library", "bench_tipc_library", n);
		double fr = callgrind_ir("frag", "bench_tipc_frag_one", n / 10);

		if (un < 0 || ch < 0 || lib < 0 || fr < 0) {
			fprintf(stderr,
				"bench tipc: callgrind run failed (is valgrind installed?)\n");
		} else {
			bench_add(&t, "dispatch Ir/msg (callgrind)", "unchecked (seed shape)",
				  "Ir/msg", un, 1, NULL);
			bench_add(&t, "dispatch Ir/msg (callgrind)", "checked (consumes all)",
				  "Ir/msg", ch, 1, "unchecked (seed shape)");
			bench_add(&t, "dispatch Ir/msg (callgrind)", "library rxp_tipc_link_rcv",
				  "Ir/msg", lib, 1, "unchecked (seed shape)");
			bench_add(&t, "64KiB frag+reasm Ir (callgrind)", "per fragment, mtu 1472",
				  "Ir/frag", fr, 1, NULL);
			printf("callgrind: checks cost %+.2f%% instructions per message "
			       "(%.1f vs %.1f Ir/msg); library link_rcv %.1f Ir/msg\n",
			       100.0 * (ch - un) / un, ch, un, lib);
		}
	}
	bench_report(&t, &o);
	if (rxp_pktpool_destroy(pp)) {
		fprintf(stderr, "bench tipc: leak\n");
		return 1;
	}
	return 0;
}
