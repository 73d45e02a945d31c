/*
 * rxpath bench ring: the receive ring and its page recycling on one core.
 *
 * Rows:
 *   - sim NIC + XDP_DROP, frames of 64 bytes and 9000 bytes (multi-buffer
 *     over 2 KiB buffers), the program touching no data or reading every
 *     byte: Mpps and TSC cycles per frame. Each iteration the NIC's hardware
 *     side writes a burst of 64 prebuilt frames into the posted buffers (copy
 *     and descriptor write-back: the simulated NIC's own work is included)
 *     and the clean loop handles them.
 *   - XDP_PASS with packets freed one burst later (the stack holding
 *     buffers): pages cycle through the page pool; the fast-path share is
 *     fast / (fast + slow) page allocations.
 *   - AF_XDP vs AF_PACKET receive rate over a veth pair, one kernel sender
 *     (an AF_PACKET socket blasting UDP frames in another namespace), same
 *     run. Needs root; skipped with a message otherwise.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "benchlib.h"
#include "rxpath/dev.h"
#include "rxpath/ring.h"
#include "rxpath/sim.h"

#define BURST 64
#define NFRAMES 256

static uint8_t *frames[NFRAMES];
static uint32_t frame_len[NFRAMES];
static volatile uint64_t sink;

static enum rxp_xdp_action prog_drop(struct rxp_xdp_buff *x, void *ctx)
{
	return RXP_XDP_DROP;
}

static uint64_t sum_bytes(const uint8_t *p, uint32_t n)
{
	uint64_t s = 0, w;
	uint32_t i = 0;

	for (; i + 8 <= n; i += 8) {
		memcpy(&w, p + i, 8);
		s += w;
	}
	for (; i < n; i++)
		s += p[i];
	return s;
}

static enum rxp_xdp_action prog_read(struct rxp_xdp_buff *x, void *ctx)
{
	uint64_t s = sum_bytes(x->data, (uint32_t)(x->data_end - x->data));

	if (x->mb)
		for (unsigned k = 0; k < x->nr_frags; k++)
			s += sum_bytes(x->frags[k].page->addr + x->frags[k].off, x->frags[k].size);
	sink += s;
	return RXP_XDP_DROP;
}

static void make_frames(uint32_t size)
{
	struct rxp_gen_config gc = { .seed = 1, .mtu = 9000,
				     .min_payload = size > 42 ? size - 42 : 16,
				     .max_payload = size > 42 ? size - 42 : 16 };
	struct rxp_gen *g = rxp_gen_create(&gc);

	for (int i = 0; i < NFRAMES; i++) {
		free(frames[i]);
		frames[i] = malloc(RXP_GEN_FRAME_MAX);
		if (!g || rxp_gen_next(g, frames[i], RXP_GEN_FRAME_MAX, &frame_len[i])) {
			fprintf(stderr, "bench ring: generator failed\n");
			exit(1);
		}
	}
	rxp_gen_destroy(g);
}

struct result {
	double mpps, cycles;
	double fast_share;
};

/* One run: n frames through a fresh ring. hold: keep PASS packets one
 * burst before freeing them. */
static struct result run(struct rxp_pktpool *pp, rxp_xdp_prog_fn prog, uint64_t n, bool hold)
{
	struct rxp_rxring_config rc = { .count = 512, .buf_size = 2048, .pp = pp, .xdp = prog };
	struct rxp_rxring *r = rxp_rxring_create(&rc);
	struct rxp_pkt *out[BURST], *held[BURST];
	unsigned nheld = 0, fi = 0;
	uint64_t done = 0, t0, c0, c1, t1;
	struct rxp_page_pool_stats ps0, ps;
	struct result res;

	if (!r) {
		fprintf(stderr, "bench ring: ring: %s\n", strerror(errno));
		exit(1);
	}
	/* Warm up: one pass over the ring so every buffer is posted. */
	for (int w = 0; w < 64; w++) {
		unsigned nout = 0;

		for (int i = 0; i < BURST; i++, fi = (fi + 1) % NFRAMES)
			rxp_rxring_hw_write(r, frames[fi], frame_len[fi], 0, 0);
		rxp_rxring_clean(r, BURST, out, BURST, &nout);
		for (unsigned i = 0; i < nout; i++)
			rxp_pkt_consume(out[i]);
	}
	rxp_page_pool_get_stats(rxp_rxring_page_pool(r), &ps0);
	t0 = bench_now_ns();
	c0 = bench_cycles();
	while (done < n) {
		unsigned nout = 0;

		for (int i = 0; i < BURST; i++) {
			rxp_rxring_hw_write(r, frames[fi], frame_len[fi], 0, 0);
			if (++fi == NFRAMES)
				fi = 0;
		}
		done += rxp_rxring_clean(r, BURST, out, BURST, &nout);
		for (unsigned i = 0; i < nheld; i++)
			rxp_pkt_consume(held[i]);
		nheld = 0;
		for (unsigned i = 0; i < nout; i++) {
			if (hold)
				held[nheld++] = out[i];
			else
				rxp_pkt_consume(out[i]);
		}
	}
	c1 = bench_cycles();
	t1 = bench_now_ns();
	for (unsigned i = 0; i < nheld; i++)
		rxp_pkt_consume(held[i]);
	rxp_page_pool_get_stats(rxp_rxring_page_pool(r), &ps);
	res.mpps = (double)done / ((double)(t1 - t0) / 1e3);
	res.cycles = (double)(c1 - c0) / (double)done;
	res.fast_share = ps.fast - ps0.fast + ps.slow - ps0.slow
				 ? 100.0 * (double)(ps.fast - ps0.fast) /
					   (double)(ps.fast - ps0.fast + ps.slow - ps0.slow)
				 : 100.0;
	if (rxp_rxring_destroy(r))
		fprintf(stderr, "bench ring: pages outstanding after a run\n");
	return res;
}

static void variant(struct bench_table *t, const struct bench_opts *o, struct rxp_pktpool *pp,
		    const char *group, const char *name, rxp_xdp_prog_fn prog, uint64_t n,
		    bool hold, const char *baseline, bool share)
{
	double mpps[64], cyc[64], fs[64];

	for (int i = 0; i < o->runs && i < 64; i++) {
		struct result r = run(pp, prog, n, hold);

		mpps[i] = r.mpps;
		cyc[i] = r.cycles;
		fs[i] = r.fast_share;
	}
	char v[64];

	bench_add(t, group, name, "Mpps", bench_median(mpps, o->runs), 0, baseline);
	snprintf(v, sizeof(v), "%s cyc", name);
	bench_add(t, group, v, "cycles/frame", bench_median(cyc, o->runs), 1, NULL);
	if (share) {
		snprintf(v, sizeof(v), "%s pp-fast", name);
		bench_add(t, group, v, "% fast", bench_median(fs, o->runs), 0, NULL);
	}
}

int rxp_bench_veth(struct bench_table *t, const struct bench_opts *o);

int main(int argc, char **argv)
{
	struct bench_opts o;
	struct bench_table t = { .name = "ring" };
	struct rxp_pktpool_config pc = { .name = "bench", .n_pkts = 4096, .n_bufs = 64 };
	struct rxp_pktpool *pp;
	uint64_t n64, n9k;

	bench_parse(argc, argv, &o, "ring",
		    "sim NIC + rx ring: XDP_DROP Mpps and cycles/frame (64 B, 9000 B multi-buffer), "
		    "page-pool fast-path share, AF_XDP vs AF_PACKET over veth");
	bench_pin(0);
	pp = rxp_pktpool_create(&pc);
	if (!pp)
		return 1;
	n64 = o.quick ? 500000 : 4000000;
	n9k = o.quick ? 50000 : 400000;

	make_frames(64);
	variant(&t, &o, pp, "64B", "xdp_drop no-touch", prog_drop, n64, false, NULL, false);
	variant(&t, &o, pp, "64B", "xdp_drop read-data", prog_read, n64, false,
		"xdp_drop no-touch", false);
	variant(&t, &o, pp, "64B", "pass+free", NULL, n64, false, "xdp_drop no-touch", false);
	variant(&t, &o, pp, "64B", "pass+hold1burst", NULL, n64, true, "xdp_drop no-touch", true);
	make_frames(9000);
	variant(&t, &o, pp, "9000B", "xdp_drop no-touch", prog_drop, n9k, false, NULL, false);
	variant(&t, &o, pp, "9000B", "xdp_drop read-data", prog_read, n9k, false,
		"xdp_drop no-touch", false);
	variant(&t, &o, pp, "9000B", "pass+hold1burst", NULL, n9k, true, "xdp_drop no-touch",
		true);
	rxp_bench_veth(&t, &o);
	bench_report(&t, &o);
	if (rxp_pktpool_destroy(pp))
		fprintf(stderr, "bench ring: packets outstanding\n");
	for (int i = 0; i < NFRAMES; i++)
		free(frames[i]);
	return 0;
}

/* AF_XDP vs AF_PACKET over veth: filled in by the veth section below. */
int rxp_bench_veth(struct bench_table *t, const struct bench_opts *o)
{
	(void)t;
	(void)o;
	printf("# AF_XDP vs AF_PACKET over veth: not built yet\n");
	return 0;
}
