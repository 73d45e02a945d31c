/*
 * Device tests: the sim NIC against its own generator (every delivered frame
 * byte-identical to the reference stream of its queue), the generator's
 * payload check, the fault and capture wrappers over the sim device, and
 * the pcap device reading back what capture wrote (pcap), a raw-IP file and
 * a pcapng file.
 */
#include <errno.h>
#include <math.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rxpath/dev.h"
#include "rxpath/sim.h"
#include "rxpath/wire.h"
#include "rxptest.h"

static struct rxp_pktpool *mkpool(void)
{
	struct rxp_pktpool_config c = {
		.name = "dev", .n_pkts = 2048, .n_bufs = 1024, .n_large = 64};
	struct rxp_pktpool *pp = rxp_pktpool_create(&c);

	assert_non_null(pp);
	return pp;
}

static uint8_t ref[RXP_GEN_FRAME_MAX + 64], got[70000];

/* The UDP payload of an unfragmented frame, or NULL. */
static const uint8_t *udp_payload(const uint8_t *f, uint32_t len, uint32_t *plen)
{
	uint16_t et = (uint16_t)(f[12] << 8 | f[13]);
	uint32_t off;

	if (et == RXP_ETH_P_IP) {
		const struct rxp_iphdr *ip = (const void *)(f + 14);

		if (ntohs(ip->frag_off) & (RXP_IP_MF | RXP_IP_OFFMASK))
			return NULL;
		off = 14 + rxp_ip_hlen(ip);
		*plen = ntohs(ip->tot_len) - rxp_ip_hlen(ip) - 8;
	} else {
		const struct rxp_ipv6hdr *ip6 = (const void *)(f + 14);

		if (ip6->nexthdr != RXP_IPPROTO_UDP)
			return NULL;
		off = 14 + 40;
		*plen = ntohs(ip6->payload_len) - 8;
	}
	return off + 8 + *plen <= len ? f + off + 8 : NULL;
}

/* Receive everything from every queue of d (round robin); check each
 * packet against ref generators (one per queue) when gcfg is given.
 * Returns packets received. */
static uint64_t drain(struct rxp_dev *d, const struct rxp_gen_config *gcfg, bool exact,
		      uint64_t *verified)
{
	struct rxp_gen *g[8] = {0};
	bool done[8] = {0};
	unsigned ndone = 0;
	uint64_t total = 0;

	for (unsigned q = 0; gcfg && q < d->nqueues; q++)
		g[q] = rxp_gen_create(gcfg);
	while (ndone < d->nqueues) {
		for (unsigned q = 0; q < d->nqueues; q++) {
			struct rxp_pkt *pk[32];
			int n;

			if (done[q])
				continue;
			n = rxp_dev_rx_burst(d, q, pk, 32);
			if (n == -ENODATA) {
				done[q] = true;
				ndone++;
				continue;
			}
			assert_true(n >= 0);
			for (int i = 0; i < n; i++) {
				const uint8_t *pl;
				uint32_t plen;

				assert_int_equal(pk[i]->queue, q);
				assert_int_equal(rxp_pkt_copy_bits(pk[i], 0, got, pk[i]->len), 0);
				if (exact) {
					uint32_t rlen;

					do
						assert_int_equal(
							rxp_gen_next(g[q], ref, sizeof(ref), &rlen),
							0);
					while (d->nqueues > 1 &&
					       rxp_rss_hash(ref, rlen, true) % d->nqueues != q);
					assert_int_equal(pk[i]->len, rlen);
					assert_memory_equal(got, ref, rlen);
				}
				pl = udp_payload(got, pk[i]->len, &plen);
				if (pl) {
					assert_int_equal(rxp_gen_verify(pl, plen), 0);
					(*verified)++;
				}
				assert_true(pk[i]->protocol == RXP_ETH_P_IP ||
					    pk[i]->protocol == RXP_ETH_P_IPV6);
				assert_int_equal(pk[i]->network_off,
						 pk[i]->data - pk[i]->head + 14);
				rxp_pkt_consume(pk[i]);
				total++;
			}
		}
	}
	for (unsigned q = 0; q < 8; q++)
		rxp_gen_destroy(g[q]);
	return total;
}

static void test_gen_verify(void **state)
{
	struct rxp_gen_config gc = {.seed = 3, .count = 50, .max_payload = 1400};
	struct rxp_gen *g = rxp_gen_create(&gc);
	uint32_t len, plen;
	const uint8_t *pl;
	int n = 0;

	while (rxp_gen_next(g, ref, sizeof(ref), &len) == 0) {
		pl = udp_payload(ref, len, &plen);
		assert_non_null(pl);
		assert_int_equal(rxp_gen_verify(pl, plen), 0);
		((uint8_t *)pl)[plen - 1] ^= 1;
		assert_int_equal(rxp_gen_verify(pl, plen), -EBADMSG); /* the header hash too */
		n++;
	}
	assert_int_equal(n, 50);
	rxp_gen_destroy(g);
	gc.min_payload = 8;
	assert_null(rxp_gen_create(&gc));
}

/* One fragment or datagram of the generator, parsed: which datagram (family,
 * flow address, id), where its bytes go, and whether more follow. */
struct gfrag {
	bool v6, mf;
	uint32_t flow, id, off, n;
	const uint8_t *data;
};

static bool gen_parse(const uint8_t *f, uint32_t len, struct gfrag *g)
{
	uint16_t et = (uint16_t)(f[12] << 8 | f[13]);

	if (et == RXP_ETH_P_IP) {
		const struct rxp_iphdr *ip = (const void *)(f + 14);
		uint16_t fo = ntohs(ip->frag_off);

		g->v6 = false;
		g->flow = f[14 + 12 + 2] << 8 | f[14 + 12 + 3];
		g->id = ntohs(ip->id);
		g->off = (fo & RXP_IP_OFFMASK) * 8u;
		g->mf = fo & RXP_IP_MF;
		g->n = ntohs(ip->tot_len) - 20u;
		g->data = f + 34;
	} else {
		const struct rxp_ipv6hdr *ip6 = (const void *)(f + 14);

		g->v6 = true;
		g->flow = ip6->saddr[14] << 8 | ip6->saddr[15];
		g->n = ntohs(ip6->payload_len);
		g->data = f + 54;
		g->off = 0;
		g->mf = false;
		g->id = 0;
		if (ip6->nexthdr == RXP_IPPROTO_FRAGMENT) {
			const struct rxp_frag6hdr *fh = (const void *)(f + 54);

			g->off = ntohs(fh->frag_off) & ~7u;
			g->mf = ntohs(fh->frag_off) & RXP_IP6_MF;
			g->id = ntohl(fh->id);
			g->n -= 8;
			g->data += 8;
		}
	}
	return g->data + g->n <= f + len;
}

/* in_flight datagrams take turns a frame each: every datagram's next
 * fragment comes in_flight frames after its last while all are open, and
 * shuffled datagrams come in another order than by offset. Whatever the
 * order and loss, the datagrams whose fragments all arrived reassemble
 * (by a byte map here) into payloads that verify, and the datagrams that
 * lost a fragment are the generator's "damaged" count. */
static void run_in_flight(unsigned w, bool shuffle, double loss)
{
	enum { N = 600, MAXD = 64 };
	struct rxp_gen_config gc = {.seed = 77,
				    .count = N,
				    .min_payload = 1500,
				    .max_payload = 9000,
				    .ipv6_pct = 30,
				    .loss = loss,
				    .flows = 8,
				    .in_flight = w,
				    .shuffle = shuffle};
	struct asm_dg {
		bool v6, live;
		uint32_t flow, id, got, len;
		uint64_t last_frame;
		uint8_t buf[9100];
	} *dg = calloc(MAXD * 2, sizeof(*dg));
	struct rxp_gen *g = rxp_gen_create(&gc);
	struct rxp_gen_stats st;
	uint64_t frame = 0, pairs = 0, spaced = 0, done = 0, out_of_order = 0;
	uint32_t len;

	assert_non_null(g);
	assert_true(w <= MAXD);
	while (rxp_gen_next(g, ref, sizeof(ref), &len) == 0) {
		struct gfrag f;
		struct asm_dg *d = NULL, *fr = NULL;

		frame++;
		assert_true(gen_parse(ref, len, &f));
		for (unsigned i = 0; i < MAXD * 2; i++) {
			if (dg[i].live && dg[i].v6 == f.v6 && dg[i].flow == f.flow &&
			    dg[i].id == f.id)
				d = &dg[i];
			if (!dg[i].live && !fr)
				fr = &dg[i];
		}
		if (!d) {
			assert_non_null(fr);
			d = fr;
			memset(d, 0, offsetof(struct asm_dg, buf));
			d->live = true;
			d->v6 = f.v6;
			d->flow = f.flow;
			d->id = f.id;
		} else {
			pairs++;
			spaced += frame - d->last_frame == w;
			assert_true(loss > 0 || frame - d->last_frame <= w);
		}
		if (f.off && !d->got)
			out_of_order++;
		d->last_frame = frame;
		assert_true(f.off + f.n <= sizeof(d->buf));
		memcpy(d->buf + f.off, f.data, f.n);
		d->got += f.n;
		if (!f.mf)
			d->len = f.off + f.n;
		if (d->len && d->got == d->len) {
			assert_int_equal(rxp_gen_verify(d->buf + 8, d->len - 8), 0);
			d->live = false;
			done++;
		}
		/* a datagram that lost a fragment never completes: forget it
		 * once its slot has surely moved on */
		for (unsigned i = 0; i < MAXD * 2; i++)
			if (dg[i].live && frame - dg[i].last_frame > 4u * w + 8)
				dg[i].live = false;
	}
	rxp_gen_get_stats(g, &st);
	assert_int_equal(st.datagrams, N);
	assert_int_equal(done, N - st.damaged);
	if (loss == 0) {
		assert_int_equal(st.damaged, 0);
		assert_true(spaced * 10 >= pairs * 9); /* all but the last round */
	} else {
		assert_true(st.damaged > 0 && st.lost >= st.damaged);
	}
	if (shuffle)
		assert_true(out_of_order > N / 4);
	else
		assert_int_equal(out_of_order, 0);
	rxp_gen_destroy(g);
	free(dg);
}

static void test_gen_in_flight(void **state)
{
	run_in_flight(1, false, 0);
	run_in_flight(5, false, 0);
	run_in_flight(40, true, 0);
	run_in_flight(40, true, 0.02);
	struct rxp_gen_config bad = {.in_flight = RXP_GEN_IN_FLIGHT_MAX + 1};

	assert_null(rxp_gen_create(&bad));
}

static void run_sim(unsigned nq, uint32_t mtu, uint32_t maxp, double zl, unsigned v6)
{
	struct rxp_pktpool *pp = mkpool();
	struct rxp_gen_config gc = {.seed = 11,
				    .count = 3000,
				    .max_payload = maxp,
				    .ipv6_pct = v6,
				    .mtu = mtu,
				    .loss = 0.01};
	struct rxp_sim_config sc = {.nqueues = nq, .seed = 5, .zero_len_rate = zl, .gen = &gc};
	struct rxp_dev *d = rxp_sim_open(&sc, pp);
	struct rxp_dev_stats st;
	struct rxp_gen *g = rxp_gen_create(&gc);
	struct rxp_gen_stats gs;
	uint64_t n, verified = 0;
	uint32_t len;

	assert_non_null(d);
	n = drain(d, &gc, true, &verified);
	while (rxp_gen_next(g, ref, sizeof(ref), &len) == 0)
		;
	rxp_gen_get_stats(g, &gs);
	rxp_gen_destroy(g);
	assert_int_equal(n, gs.frames - gs.lost);
	assert_true(verified > 0);
	rxp_dev_get_stats(d, &st);
	assert_int_equal(st.rx_packets, n);
	assert_int_equal(st.rx_no_buffer, 0);
	if (zl > 0)
		assert_true(st.zero_len_descs > 0);
	printf("sim q=%u mtu=%u: %llu frames, %llu payloads verified, %llu zero-length descs, "
	       "pp fast %llu slow %llu\n",
	       nq, mtu, (unsigned long long)n, (unsigned long long)verified,
	       (unsigned long long)st.zero_len_descs, (unsigned long long)st.pp_fast,
	       (unsigned long long)st.pp_slow);
	assert_int_equal(rxp_dev_close(d), 0);
	rxpt_pktpool_teardown(pp);
}

static void test_sim_basic(void **state)
{
	run_sim(1, 1500, 1472, 0, 0);
}

static void test_sim_frag_v6_queues(void **state)
{
	run_sim(4, 1500, 6000, 0.05, 50);
}

static void test_sim_jumbo_zero_len(void **state)
{
	run_sim(2, 9000, 8972, 0.1, 30);
}

static enum rxp_xdp_action drop_all(struct rxp_xdp_buff *x, void *ctx)
{
	(*(uint64_t *)ctx)++;
	return RXP_XDP_DROP;
}

static void test_sim_xdp_drop(void **state)
{
	struct rxp_pktpool *pp = mkpool();
	struct rxp_gen_config gc = {.seed = 1, .count = 500, .max_payload = 8000, .mtu = 9000};
	struct rxp_sim_config sc = {.gen = &gc};
	struct rxp_dev *d = rxp_sim_open(&sc, pp);
	struct rxp_dev_stats st;
	struct rxp_pktpool_stats ps;
	uint64_t seen = 0, v = 0;

	assert_non_null(d);
	assert_int_equal(rxp_dev_set_xdp(d, drop_all, &seen), 0);
	assert_int_equal(drain(d, NULL, false, &v), 0);
	assert_int_equal(seen, 500);
	rxp_dev_get_stats(d, &st);
	assert_int_equal(st.xdp_drop, 500);
	rxp_pktpool_get_stats(pp, &ps);
	assert_int_equal(ps.drops[RXP_DROP_XDP_DROP], 500);
	assert_int_equal(rxp_dev_close(d), 0);
	rxpt_pktpool_teardown(pp);
}

static void test_fault_wrapper(void **state)
{
	struct rxp_pktpool *pp = mkpool();
	struct rxp_gen_config gc = {.seed = 21, .count = 4000, .max_payload = 1400};
	struct rxp_sim_config sc = {.nqueues = 2, .gen = &gc};
	struct rxp_fault_config fc = {
		.seed = 9, .loss = 0.1, .duplicate = 0.1, .reorder_window = 8};
	struct rxp_dev *d = rxp_fault_wrap(rxp_sim_open(&sc, pp), &fc);
	struct rxp_dev_stats st;
	struct rxp_pktpool_stats ps;
	uint64_t n, v = 0;

	assert_non_null(d);
	n = drain(d, NULL, false, &v);
	rxp_dev_get_stats(d, &st);
	assert_int_equal(n, 4000 - st.fault_lost + st.fault_duplicated);
	assert_true(st.fault_lost > 200 && st.fault_duplicated > 200 && st.fault_reordered > 200);
	assert_int_equal(v, n); /* every payload intact, copies included */
	rxp_pktpool_get_stats(pp, &ps);
	assert_int_equal(ps.drops[RXP_DROP_FAULT_INJECT], st.fault_lost);
	assert_int_equal(rxp_dev_close(d), 0);
	rxpt_pktpool_teardown(pp);
}

/* Probabilities outside [0, 1] (and NaN) are refused, the inner device
 * closed with them. */
static void test_fault_bad_config(void **state)
{
	struct rxp_pktpool *pp = mkpool();
	struct rxp_gen_config gc = {.seed = 1, .count = 10};
	struct rxp_sim_config sc = {.gen = &gc};
	const struct rxp_fault_config bad[] = {
		{.loss = 1.5},	  {.loss = -0.1}, {.duplicate = 2},
		{.tx_loss = 5.1}, {.loss = NAN},  {.reorder_window = 65},
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		assert_null(rxp_fault_wrap(rxp_sim_open(&sc, pp), &bad[i]));
		assert_int_equal(errno, EINVAL);
	}
	assert_null(rxp_dev_open("fault:loss=5.1+sim", pp));
	rxpt_pktpool_teardown(pp);
}

/* A frame source that counts what is read from it: one flow, so every
 * frame hashes to one queue of many. */
struct counted_src {
	struct rxp_src src;
	struct rxp_src *inner;
	uint64_t *reads;
};

static uint64_t src_reads;

static int counted_next(struct rxp_src *s, uint8_t *buf, uint32_t cap, uint32_t *len)
{
	struct counted_src *c = (struct counted_src *)s;

	(*c->reads)++;
	return c->inner->next(c->inner, buf, cap, len);
}

static void counted_close(struct rxp_src *s)
{
	struct counted_src *c = (struct counted_src *)s;

	c->inner->close(c->inner);
	free(c);
}

static struct rxp_src *counted_open(void *arg)
{
	struct counted_src *c = calloc(1, sizeof(*c));

	assert_non_null(c);
	c->inner = rxp_src_gen(arg);
	assert_non_null(c->inner);
	c->src.next = counted_next;
	c->src.close = counted_close;
	c->reads = &src_reads;
	return &c->src;
}

/* Every queue reads its own copy of the source and keeps the frames RSS
 * gives it: a queue no flow hashes to must not read its whole source in
 * one poll. Each poll skips at most 64 frames per queue of the device, and
 * polling on still delivers everything, each frame on one queue. */
static void test_sim_poll_bounded(void **state)
{
	struct rxp_pktpool *pp = mkpool();
	struct rxp_gen_config gc = {.seed = 5, .count = 20000, .flows = 1, .max_payload = 64};
	struct rxp_sim_config sc = {.nqueues = 8, .src_open = counted_open, .src_arg = &gc};
	struct rxp_dev *d = rxp_sim_open(&sc, pp);
	uint64_t first = 0, verified = 0, before;

	assert_non_null(d);
	for (unsigned q = 0; q < 8; q++) {
		struct rxp_pkt *pk[8];
		int n;

		before = src_reads;
		n = rxp_dev_rx_burst(d, q, pk, 8);
		assert_true(src_reads - before <= 8 + 64 * 8 + 1);
		for (int i = 0; i < n; i++)
			rxp_pkt_consume(pk[i]);
		first += n > 0 ? (uint64_t)n : 0;
	}
	/* The rest, every payload checked: one flow, one queue, each frame
	 * once (a datagram of at most 64 bytes is one frame). */
	assert_int_equal(first + drain(d, NULL, false, &verified), 20000);
	assert_int_equal(verified, 20000 - first);
	assert_int_equal(rxp_dev_close(d), 0);
	rxpt_pktpool_teardown(pp);
}

/* A generator that loses every frame and never ends (loss=1, count=0)
 * answers -EAGAIN after a bounded run of lost frames instead of looping
 * for ever, and a sim NIC on it returns from each poll with nothing, so
 * a worker's poll loop (and --duration) keeps going. Found by reading a
 * fuzz_dev_spec process stuck in one input ("sim:loss=1"). */
static void test_gen_all_lost_bounded(void **state)
{
	struct rxp_pktpool *pp = mkpool();
	struct rxp_gen_config gc = {.seed = 9, .loss = 1.0};
	struct rxp_gen *g = rxp_gen_create(&gc);
	struct rxp_gen_stats st;
	struct rxp_dev *d;
	uint8_t buf[RXP_GEN_FRAME_MAX];
	uint32_t len;

	(void)state;
	assert_non_null(g);
	for (int i = 0; i < 3; i++)
		assert_int_equal(rxp_gen_next(g, buf, sizeof(buf), &len), -EAGAIN);
	rxp_gen_get_stats(g, &st);
	assert_int_equal(st.lost, 3 * RXP_GEN_LOST_RUN_MAX);
	assert_int_equal(st.frames, st.lost);
	rxp_gen_destroy(g);
	d = rxp_dev_open("sim:loss=1,count=0", pp);
	assert_non_null(d);
	for (int i = 0; i < 4; i++) {
		struct rxp_pkt *pk[8];

		assert_int_equal(rxp_dev_rx_burst(d, 0, pk, 8), 0);
	}
	assert_int_equal(rxp_dev_close(d), 0);
	rxpt_pktpool_teardown(pp);
}

/* capture(sim) writes a pcap; the pcap device and the sim's pcap replay
 * both read back exactly the generator's frames. */
static void test_capture_and_pcap(void **state)
{
	struct rxp_pktpool *pp = mkpool();
	struct rxp_gen_config gc = {.seed = 33, .count = 700, .max_payload = 4000, .ipv6_pct = 40};
	struct rxp_sim_config sc = {.gen = &gc};
	char path[] = "/tmp/rxp_test_dev_XXXXXX";
	int fd = mkstemp(path);
	struct rxp_dev *d;
	struct rxp_dev_stats st;
	uint64_t n, v = 0;

	assert_true(fd >= 0);
	close(fd);
	d = rxp_capture_wrap(rxp_sim_open(&sc, pp), path, RXP_CAPTURE_RX);
	assert_non_null(d);
	n = drain(d, &gc, true, &v);
	rxp_dev_get_stats(d, &st);
	assert_int_equal(st.captured, n);
	assert_int_equal(rxp_dev_close(d), 0);

	d = rxp_pcap_open(path, pp);
	assert_non_null(d);
	assert_int_equal(drain(d, &gc, true, &v), n);
	assert_int_equal(rxp_dev_close(d), 0);

	sc.gen = NULL;
	sc.pcap_path = path;
	sc.nqueues = 3;
	d = rxp_sim_open(&sc, pp);
	assert_non_null(d);
	assert_int_equal(drain(d, &gc, true, &v), n);
	assert_int_equal(rxp_dev_close(d), 0);
	unlink(path);
	rxpt_pktpool_teardown(pp);
}

/* A classic pcap file's seconds are unsigned 32 bits: a time after
 * 2038-01-19 (which libpcap hands over as negative seconds) reads back as
 * written, as Wireshark reads it (fuzz_capture found it wrapped to a time
 * centuries ahead). */
static void test_pcap_time_after_2038(void **state)
{
	struct rxp_pktpool *pp = mkpool();
	char path[] = "/tmp/rxp_test_2038_XXXXXX";
	int fd = mkstemp(path);
	uint64_t ts = 3707764736ull * 1000000000ull + 5000;
	uint8_t ip[60] = {0x45, 0, 0, 60, 0, 1, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2};
	struct rxp_pcap_writer *w;
	struct rxp_dev *d;
	struct rxp_pkt *pk[2];

	assert_true(fd >= 0);
	close(fd);
	w = rxp_pcap_writer_open(path, true);
	assert_non_null(w);
	assert_int_equal(rxp_pcap_writer_write(w, ip, 60, ts), 0);
	assert_int_equal(rxp_pcap_writer_close(w), 0);
	d = rxp_pcap_open(path, pp);
	assert_non_null(d);
	assert_int_equal(rxp_dev_rx_burst(d, 0, pk, 2), 1);
	assert_int_equal(pk[0]->tstamp_ns, ts);
	rxp_pkt_consume(pk[0]);
	assert_int_equal(rxp_dev_close(d), 0);
	unlink(path);
	rxpt_pktpool_teardown(pp);
}

static void test_pcap_raw_and_pcapng(void **state)
{
	struct rxp_pktpool *pp = mkpool();
	char path[] = "/tmp/rxp_test_raw_XXXXXX";
	int fd = mkstemp(path);
	struct rxp_pcap_writer *w;
	struct rxp_dev *d;
	struct rxp_pkt *pk[4];
	uint8_t ip[60] = {0x45, 0, 0, 60, 0, 1, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2};
	FILE *f;

	assert_true(fd >= 0);
	close(fd);
	w = rxp_pcap_writer_open(path, true);
	assert_non_null(w);
	assert_int_equal(rxp_pcap_writer_write(w, ip, 60, 1000000123), 0);
	assert_int_equal(rxp_pcap_writer_close(w), 0);
	d = rxp_pcap_open(path, pp);
	assert_non_null(d);
	assert_true(rxp_dev_is_raw_ip(d));
	assert_int_equal(rxp_dev_rx_burst(d, 0, pk, 4), 1);
	assert_int_equal(pk[0]->protocol, RXP_ETH_P_IP);
	assert_int_equal(pk[0]->network_off, pk[0]->data - pk[0]->head);
	assert_int_equal(pk[0]->tstamp_ns, 1000000123);
	assert_memory_equal(pk[0]->data, ip, 60);
	rxp_pkt_consume(pk[0]);
	assert_int_equal(rxp_dev_rx_burst(d, 0, pk, 4), -ENODATA);
	assert_int_equal(rxp_dev_close(d), 0);

	/* A minimal pcapng: section header, Ethernet interface, one packet. */
	f = fopen(path, "wb");
	assert_non_null(f);
	{
		uint32_t shb[] = {0x0a0d0d0a, 28,	  0x1a2b3c4d, 0x00000001,
				  0xffffffff, 0xffffffff, 28};
		uint32_t idb[] = {1, 20, 1 | (0 << 16), 65535, 20};
		uint8_t frame[64] = {0};
		uint32_t epb_len = 32 + 64;
		uint32_t epb[] = {6, epb_len, 0, 0, 5, 64, 64};

		shb[3] = 0x00000001; /* version 1.0 */
		memcpy(frame + 14, ip, 50);
		frame[12] = 0x08;
		fwrite(shb, sizeof(shb), 1, f);
		fwrite(idb, sizeof(idb), 1, f);
		fwrite(epb, sizeof(epb), 1, f);
		fwrite(frame, 64, 1, f);
		fwrite(&epb_len, 4, 1, f);
	}
	fclose(f);
	d = rxp_pcap_open(path, pp);
	assert_non_null(d);
	assert_false(rxp_dev_is_raw_ip(d));
	assert_int_equal(rxp_dev_rx_burst(d, 0, pk, 4), 1);
	assert_int_equal(pk[0]->len, 64);
	assert_int_equal(pk[0]->protocol, RXP_ETH_P_IP);
	rxp_pkt_consume(pk[0]);
	assert_int_equal(rxp_dev_close(d), 0);
	unlink(path);
	assert_null(rxp_pcap_open("/nonexistent/x.pcap", pp));
	rxpt_pktpool_teardown(pp);
}

/* A capture of link type dlt (libpcap's writer) holding n records. */
static void write_link_pcap(const char *path, int dlt, const uint8_t *const *rec,
			    const uint32_t *len, unsigned n)
{
	pcap_t *dead = pcap_open_dead(dlt, 65535);
	pcap_dumper_t *dp;

	assert_non_null(dead);
	dp = pcap_dump_open(dead, path);
	assert_non_null(dp);
	for (unsigned i = 0; i < n; i++) {
		struct pcap_pkthdr h = {.ts = {.tv_sec = 1, .tv_usec = (suseconds_t)i},
					.caplen = len[i],
					.len = len[i]};

		pcap_dump((u_char *)dp, &h, rec[i]);
	}
	pcap_dump_close(dp);
	pcap_close(dead);
}

/* Link headers the device takes off (rxp_decap_link's): a Linux cooked
 * capture's IP under a VLAN tag, its ARP (not IP, its EtherType kept), a
 * record cut inside its header and one whose IP version is wrong (both
 * l2_bad_header), an empty one (pkt_too_small, as for any link), and a
 * frame the capturing host sent (skipped, counted in rx_outgoing); a PPP
 * capture. A capture wrapper over it writes raw IP:
 * the ARP is counted as not IP, not written. */
static void test_pcap_link_headers(void **state)
{
	struct rxp_pktpool *pp = mkpool();
	char path[] = "/tmp/rxp_test_sll_XXXXXX", out[] = "/tmp/rxp_test_sllw_XXXXXX";
	uint8_t ip[40] = {0x45, 0, 0, 40, 0, 1, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2};
	uint8_t vlan_ip[16 + 4 + 40] = {0, 0, 0, 1, 0,	  6,	2, 0, 0,    0,
					0, 1, 0, 0, 0x81, 0x00, 0, 7, 0x08, 0x00};
	uint8_t arp[16 + 28] = {0, 0, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0, 0x08, 0x06, 0, 1};
	uint8_t badver[16 + 40] = {0, 0, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0, 0x08, 0x00, 0x55};
	uint8_t ppp[4 + 40] = {0xff, 0x03, 0x00, 0x21};
	uint8_t sent[sizeof(vlan_ip)];
	const uint8_t *recs[6] = {vlan_ip, arp, arp, badver, arp, sent};
	uint32_t lens[6] = {sizeof(vlan_ip), sizeof(arp), 10, sizeof(badver), 0, sizeof(sent)};
	struct rxp_pktpool_stats ps;
	struct rxp_dev_stats st;
	struct rxp_pkt *pk[8];
	struct rxp_dev *d;
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	close(fd);
	fd = mkstemp(out);
	assert_true(fd >= 0);
	close(fd);
	memcpy(vlan_ip + 20, ip, 40);
	memcpy(ppp + 4, ip, 40);
	memcpy(sent, vlan_ip, sizeof(sent));
	sent[1] = 4; /* PACKET_OUTGOING */
	write_link_pcap(path, 113, recs, lens, 6);
	d = rxp_capture_wrap(rxp_pcap_open(path, pp), out, RXP_CAPTURE_RX);
	assert_non_null(d);
	assert_true(rxp_dev_is_raw_ip(d->inner));
	assert_int_equal(rxp_dev_rx_burst(d, 0, pk, 8), 2);
	assert_int_equal(pk[0]->protocol, RXP_ETH_P_IP);
	assert_int_equal(pk[0]->len, 40);
	assert_memory_equal(pk[0]->data, ip, 40);
	assert_int_equal(pk[0]->network_off, pk[0]->data - pk[0]->head);
	assert_int_equal(pk[1]->protocol, 0x0806);
	assert_int_equal(pk[1]->len, 28);
	rxp_pkt_consume(pk[0]);
	rxp_pkt_consume(pk[1]);
	assert_int_equal(rxp_dev_rx_burst(d, 0, pk, 8), -ENODATA);
	rxp_dev_get_stats(d, &st);
	rxp_pktpool_get_stats(pp, &ps);
	assert_int_equal(st.rx_packets, 2);
	assert_int_equal(st.rx_dropped, 3);
	assert_int_equal(st.rx_outgoing, 1);
	assert_int_equal(ps.drops[RXP_DROP_L2_MALFORMED], 2);
	assert_int_equal(ps.drops[RXP_DROP_PKT_TOO_SMALL], 1); /* the empty one */
	assert_int_equal(st.captured, 1);
	assert_int_equal(st.capture_not_ip, 1);
	assert_int_equal(rxp_dev_close(d), 0);
	/* the sim NIC's replay source: the same records, the last one sent by
	 * the host (said, for the sim to count, as no NIC receives it) */
	{
		static const int want[6] = {
			0, 0, RXP_SRC_SKIPPED, RXP_SRC_SKIPPED, RXP_SRC_SKIPPED, RXP_SRC_OUTGOING};
		struct rxp_src *src = rxp_src_pcap(path);
		uint8_t frame[RXP_GEN_FRAME_MAX];
		uint32_t flen;

		assert_non_null(src);
		for (unsigned i = 0; i < 6; i++)
			assert_int_equal(src->next(src, frame, sizeof(frame), &flen), want[i]);
		assert_int_equal(src->next(src, frame, sizeof(frame), &flen), -ENODATA);
		src->close(src);
	}

	recs[0] = ppp;
	lens[0] = sizeof(ppp);
	write_link_pcap(path, 9, recs, lens, 1);
	d = rxp_pcap_open(path, pp);
	assert_non_null(d);
	assert_int_equal(rxp_dev_rx_burst(d, 0, pk, 8), 1);
	assert_int_equal(pk[0]->protocol, RXP_ETH_P_IP);
	assert_memory_equal(pk[0]->data, ip, 40);
	rxp_pkt_consume(pk[0]);
	assert_int_equal(rxp_dev_close(d), 0);
	/* Ethernet: an MPLS (two labels) and a PPPoE session frame stay
	 * whole, with network_off at their IP packet; one whose label stack
	 * is cut short is delivered whole as not IP, as a NIC would */
	{
		uint8_t mpls[14 + 8 + 40] = {0,	   0,	 0, 0,	  0,	2,    0, 0,
					     0,	   0,	 0, 1,	  0x88, 0x47, 0, 0x06,
					     0x40, 0x40, 0, 0x0c, 0x81, 0x40};
		uint8_t pppoe[14 + 8 + 40] = {0, 0,    0,    0,	   0, 2, 0, 0, 0,  0, 0,
					      1, 0x88, 0x64, 0x11, 0, 0, 7, 0, 42, 0, 0x21};
		uint8_t cut[14 + 4] = {0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 1, 0x88, 0x47, 0, 0x06};

		memcpy(mpls + 22, ip, 40);
		memcpy(pppoe + 22, ip, 40);
		recs[0] = mpls;
		lens[0] = sizeof(mpls);
		recs[1] = pppoe;
		lens[1] = sizeof(pppoe);
		recs[2] = cut;
		lens[2] = sizeof(cut);
		write_link_pcap(path, 1, recs, lens, 3);
		d = rxp_capture_wrap(rxp_pcap_open(path, pp), out, RXP_CAPTURE_RX);
		assert_non_null(d);
		assert_int_equal(rxp_dev_rx_burst(d, 0, pk, 8), 3);
		for (int i = 0; i < 2; i++) {
			assert_int_equal(pk[i]->protocol, RXP_ETH_P_IP);
			assert_int_equal(pk[i]->len, lens[i]);
			assert_memory_equal(pk[i]->data, recs[i], lens[i]);
			assert_int_equal(pk[i]->network_off, pk[i]->data - pk[i]->head + 22);
			rxp_pkt_consume(pk[i]);
		}
		assert_int_equal(pk[2]->protocol, 0);
		assert_int_equal(pk[2]->len, sizeof(cut));
		rxp_pkt_consume(pk[2]);
		rxp_dev_get_stats(d, &st);
		assert_int_equal(st.captured, 3); /* written as they came */
		assert_int_equal(rxp_dev_close(d), 0);
		rxp_pktpool_get_stats(pp, &ps);
		assert_int_equal(ps.drops[RXP_DROP_L2_MALFORMED], 2); /* as before */
		recs[0] = ppp; /* (these records end with the block) */
		lens[0] = sizeof(ppp);
	}
	/* a link type nothing here knows is refused at open */
	write_link_pcap(path, 147, recs, lens, 1);
	errno = 0;
	assert_null(rxp_pcap_open(path, pp));
	assert_int_equal(errno, EPROTONOSUPPORT);
	unlink(path);
	unlink(out);
	rxpt_pktpool_teardown(pp);
}

/* The sim NIC's replay source counts what it makes no frame of (an SLL
 * record whose IP version is wrong, an empty one), once however many
 * queues read the file, with the reasons the pcap device gives. */
static void test_sim_replay_skips(void **state)
{
	struct rxp_pktpool *pp = mkpool();
	char path[] = "/tmp/rxp_test_simsk_XXXXXX";
	uint8_t ip[16 + 40] = {0, 0,  0, 1, 0, 6, 2,  0,  0, 0, 0,  1, 0, 0, 0x08, 0x00, 0x45, 0,
			       0, 40, 0, 1, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10,   0,	 0,    2};
	uint8_t badver[16 + 40] = {0, 0, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0, 0x08, 0x00, 0x55};
	const uint8_t *recs[4] = {ip, badver, ip, ip};
	uint32_t lens[4] = {sizeof(ip), sizeof(badver), 0, sizeof(ip)};
	struct rxp_sim_config sc = {.nqueues = 2};
	struct rxp_pktpool_stats ps0, ps;
	struct rxp_dev_stats st = {0};
	struct rxp_pkt *pk[8];
	struct rxp_dev *d;
	unsigned delivered = 0;
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	write_link_pcap(path, 113, recs, lens, 4);
	sc.pcap_path = path;
	rxp_pktpool_get_stats(pp, &ps0);
	d = rxp_sim_open(&sc, pp);
	assert_non_null(d);
	for (int idle = 0; idle < 2;) {
		int n = 0;

		idle++;
		for (unsigned q = 0; q < 2; q++) {
			int r = rxp_dev_rx_burst(d, q, pk, 8);

			for (int i = 0; i < r; i++) {
				assert_int_equal(pk[i]->protocol, RXP_ETH_P_IP);
				rxp_pkt_consume(pk[i]);
			}
			n += r > 0 ? r : 0;
			if (r != -ENODATA)
				idle = 0;
		}
		delivered += (unsigned)n;
	}
	assert_int_equal(delivered, 2);
	rxp_dev_get_stats(d, &st);
	rxp_pktpool_get_stats(pp, &ps);
	assert_int_equal(ps.drops[RXP_DROP_L2_MALFORMED] - ps0.drops[RXP_DROP_L2_MALFORMED], 1);
	assert_int_equal(ps.drops[RXP_DROP_PKT_TOO_SMALL] - ps0.drops[RXP_DROP_PKT_TOO_SMALL], 1);
	assert_int_equal(st.rx_dropped, 2);
	assert_int_equal(rxp_dev_close(d), 0);
	unlink(path);
	rxpt_pktpool_teardown(pp);
}

static void test_dev_open_spec(void **state)
{
	struct rxp_pktpool *pp = mkpool();
	char path[] = "/tmp/rxp_test_spec_XXXXXX", spec[256];
	int fd = mkstemp(path);
	struct rxp_dev *d;
	struct rxp_dev_stats st;
	uint64_t v = 0, n;

	assert_true(fd >= 0);
	close(fd);
	snprintf(spec, sizeof(spec),
		 "capture:%s+fault:loss=0.05,dup=0.05,reorder=4,zl=0.02,seed=2+sim:queues=2,"
		 "count=500,max=3000,v6=50,seed=4",
		 path);
	d = rxp_dev_open(spec, pp);
	assert_non_null(d);
	assert_int_equal(d->nqueues, 2);
	n = drain(d, NULL, false, &v);
	rxp_dev_get_stats(d, &st);
	assert_int_equal(st.captured, n);
	assert_true(st.fault_lost > 0 && st.fault_duplicated > 0);
	assert_true(st.zero_len_descs > 0); /* the fault wrapper's zl, written by the sim */
	assert_int_equal(rxp_dev_close(d), 0);
	snprintf(spec, sizeof(spec), "pcap:%s", path);
	d = rxp_dev_open(spec, pp);
	assert_non_null(d);
	assert_int_equal(drain(d, NULL, false, &v), n);
	assert_int_equal(rxp_dev_close(d), 0);
	snprintf(spec, sizeof(spec), "sim:replay=%s,queues=3", path);
	d = rxp_dev_open(spec, pp);
	assert_non_null(d);
	assert_int_equal(drain(d, NULL, false, &v), n);
	assert_int_equal(rxp_dev_close(d), 0);
	unlink(path);
	assert_null(rxp_dev_open("sim:bogus=1", pp));
	assert_int_equal(errno, EINVAL);
	/* one poll's frames are bounded: an endless source and a burst of
	 * 4e9 would spend minutes generating drops (fuzz_dev_spec's find) */
	errno = 0;
	assert_null(rxp_dev_open("sim:count=0,hw_burst=4000000000", pp));
	assert_int_equal(errno, EINVAL);
	d = rxp_dev_open("sim:count=10,hw_burst=65536", pp);
	assert_non_null(d);
	assert_int_equal(drain(d, NULL, false, &v), 10);
	assert_int_equal(rxp_dev_close(d), 0);
	{
		struct rxp_gen_config gc = {.seed = 1, .count = 10};
		struct rxp_sim_config sc = {.gen = &gc, .hw_burst = RXP_SIM_HW_BURST_MAX + 1};

		errno = 0;
		assert_null(rxp_sim_open(&sc, pp));
		assert_int_equal(errno, EINVAL);
	}
	assert_null(rxp_dev_open("fault:loss=x+sim", pp));
	assert_null(rxp_dev_open("nosuch:thing", pp));
	assert_null(rxp_dev_open("afpacket:", pp));
	rxpt_pktpool_teardown(pp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gen_verify),
		cmocka_unit_test(test_gen_in_flight),
		cmocka_unit_test(test_sim_basic),
		cmocka_unit_test(test_sim_frag_v6_queues),
		cmocka_unit_test(test_sim_jumbo_zero_len),
		cmocka_unit_test(test_sim_xdp_drop),
		cmocka_unit_test(test_fault_wrapper),
		cmocka_unit_test(test_fault_bad_config),
		cmocka_unit_test(test_sim_poll_bounded),
		cmocka_unit_test(test_gen_all_lost_bounded),
		cmocka_unit_test(test_capture_and_pcap),
		cmocka_unit_test(test_pcap_raw_and_pcapng),
		cmocka_unit_test(test_pcap_link_headers),
		cmocka_unit_test(test_pcap_time_after_2038),
		cmocka_unit_test(test_sim_replay_skips),
		cmocka_unit_test(test_dev_open_spec),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
