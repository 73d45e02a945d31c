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
 * RXP_BENCH_RING_ONLY="<group> <variant>" runs one sim variant alone (for
 * valgrind --tool=callgrind instruction counts per frame).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
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
	struct rxp_gen_config gc = {.seed = 1,
				    .mtu = 9000,
				    .min_payload = size > 42 ? size - 42 : 16,
				    .max_payload = size > 42 ? size - 42 : 16};
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
	struct rxp_rxring_config rc = {.count = 512, .buf_size = 2048, .pp = pp, .xdp = prog};
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
	const char *only = getenv("RXP_BENCH_RING_ONLY");
	char full[128];

	/* RXP_BENCH_RING_ONLY="64B xdp_drop no-touch" runs one variant (for
	 * callgrind instruction counts). */
	snprintf(full, sizeof(full), "%s %s", group, name);
	if (only && strcmp(only, full))
		return;
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
	struct bench_table t = {.name = "ring"};
	struct rxp_pktpool_config pc = {.name = "bench", .n_pkts = 4096, .n_bufs = 64};
	struct rxp_pktpool *pp;
	uint64_t n64, n9k;

	bench_parse(
		argc, argv, &o, "ring",
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
	variant(&t, &o, pp, "64B", "xdp_drop read-data", prog_read, n64, false, "xdp_drop no-touch",
		false);
	variant(&t, &o, pp, "64B", "pass+free", NULL, n64, false, "xdp_drop no-touch", false);
	variant(&t, &o, pp, "64B", "pass+hold1burst", NULL, n64, true, "xdp_drop no-touch", true);
	make_frames(9000);
	variant(&t, &o, pp, "9000B", "xdp_drop no-touch", prog_drop, n9k, false, NULL, false);
	variant(&t, &o, pp, "9000B", "xdp_drop read-data", prog_read, n9k, false,
		"xdp_drop no-touch", false);
	variant(&t, &o, pp, "9000B", "pass+hold1burst", NULL, n9k, true, "xdp_drop no-touch", true);
	rxp_bench_veth(&t, &o);
	bench_report(&t, &o);
	if (rxp_pktpool_destroy(pp))
		fprintf(stderr, "bench ring: packets outstanding\n");
	for (int i = 0; i < NFRAMES; i++)
		free(frames[i]);
	return 0;
}

/* ---- AF_XDP vs AF_PACKET over veth ------------------------------------------ */

static char ns_s[32], ns_r[32];

static void veth_teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "ip netns del %s 2>/dev/null; ip netns del %s 2>/dev/null", ns_s,
		 ns_r);
	if (system(cmd))
		return;
}

static int enter_ns(const char *ns)
{
	char path[64];
	int fd, rc;

	snprintf(path, sizeof(path), "/var/run/netns/%s", ns);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	rc = setns(fd, CLONE_NEWNET);
	close(fd);
	return rc;
}

/* The sender: in its own namespace, blast one 64-byte frame through an
 * AF_PACKET socket (qdisc bypassed) for ms milliseconds; exit status 0 and
 * the count written to fd. */
static void sender(int fd, const uint8_t *dmac, unsigned ms)
{
	struct sockaddr_ll sll = {.sll_family = AF_PACKET};
	uint8_t frame[64];
	uint32_t len;
	struct rxp_gen_config gc = {.seed = 7, .min_payload = 18, .max_payload = 18};
	struct rxp_gen *g = rxp_gen_create(&gc);
	struct mmsghdr msgs[64];
	struct iovec iov = {frame, 0};
	uint64_t sent = 0, t0;
	int s, one = 1;

	if (enter_ns(ns_s) || !g || rxp_gen_next(g, frame, sizeof(frame) + 9000, &len))
		_exit(1);
	memcpy(frame, dmac, 6);
	iov.iov_len = len;
	s = socket(AF_PACKET, SOCK_RAW, 0);
	sll.sll_ifindex = (int)if_nametoindex("rxp3s0");
	sll.sll_halen = 6;
	memcpy(sll.sll_addr, dmac, 6);
	if (s < 0 || !sll.sll_ifindex)
		_exit(1);
	setsockopt(s, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof(one));
	for (int i = 0; i < 64; i++) {
		memset(&msgs[i], 0, sizeof(msgs[i]));
		msgs[i].msg_hdr.msg_name = &sll;
		msgs[i].msg_hdr.msg_namelen = sizeof(sll);
		msgs[i].msg_hdr.msg_iov = &iov;
		msgs[i].msg_hdr.msg_iovlen = 1;
	}
	t0 = bench_now_ns();
	while (bench_now_ns() - t0 < (uint64_t)ms * 1000000) {
		int n = sendmmsg(s, msgs, 64, 0);

		if (n > 0)
			sent += (uint64_t)n;
	}
	if (write(fd, &sent, sizeof(sent)) != sizeof(sent))
		_exit(1);
	_exit(0);
}

/* One measurement: open the device, run the sender, count what arrives. */
static int veth_run(struct rxp_pktpool *pp, bool xdp, const uint8_t *dmac, unsigned ms,
		    double *rx_mpps, double *tx_mpps)
{
	struct rxp_afxdp_config xc = {.ifname = "rxp3r0"};
	struct rxp_afpacket_config ac = {.ifname = "rxp3r0", .nblocks = 64};
	struct rxp_dev *d = xdp ? rxp_afxdp_open(&xc, pp) : rxp_afpacket_open(&ac, pp);
	uint64_t got = 0, sent = 0, t0, t1;
	int pfd[2], status;
	pid_t pid;

	if (!d)
		return -1;
	if (pipe(pfd)) {
		rxp_dev_close(d);
		return -1;
	}
	pid = fork();
	if (pid == 0)
		sender(pfd[1], dmac, ms);
	t0 = bench_now_ns();
	t1 = t0 + (uint64_t)(ms + 300) * 1000000;
	while (bench_now_ns() < t1) {
		struct rxp_pkt *pk[64];
		int n = rxp_dev_rx_burst(d, 0, pk, 64);

		for (int i = 0; i < n; i++)
			rxp_pkt_consume(pk[i]);
		if (n > 0)
			got += (uint64_t)n;
	}
	waitpid(pid, &status, 0);
	if (read(pfd[0], &sent, sizeof(sent)) != sizeof(sent))
		sent = 0;
	close(pfd[0]);
	close(pfd[1]);
	rxp_dev_close(d);
	*rx_mpps = (double)got / ((double)ms * 1e3);
	*tx_mpps = (double)sent / ((double)ms * 1e3);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static int veth_setup(uint8_t *mac)
{
	char cmd[1024];
	FILE *f;
	unsigned m[6];

	snprintf(ns_s, sizeof(ns_s), "rxp3bs%d", (int)getpid());
	snprintf(ns_r, sizeof(ns_r), "rxp3br%d", (int)getpid());
	atexit(veth_teardown);
	snprintf(cmd, sizeof(cmd),
		 "ip netns add %1$s && ip netns add %2$s && "
		 "ip link add rxp3s0 netns %1$s type veth peer name rxp3r0 netns %2$s && "
		 "ip -n %1$s link set rxp3s0 up && ip -n %2$s link set rxp3r0 up && "
		 "ip netns exec %1$s sysctl -qw net.ipv6.conf.all.disable_ipv6=1 && "
		 "ip netns exec %2$s sysctl -qw net.ipv6.conf.all.disable_ipv6=1",
		 ns_s, ns_r);
	if (system(cmd))
		return -1;
	snprintf(cmd, sizeof(cmd), "ip -n %s -o link show rxp3r0 | grep -o 'ether [0-9a-f:]*'",
		 ns_r);
	f = popen(cmd, "r");
	if (!f ||
	    fscanf(f, "ether %x:%x:%x:%x:%x:%x", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5]) != 6) {
		if (f)
			pclose(f);
		return -1;
	}
	pclose(f);
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)m[i];
	return enter_ns(ns_r);
}

int rxp_bench_veth(struct bench_table *t, const struct bench_opts *o)
{
	struct rxp_pktpool_config pc = {.name = "veth", .n_pkts = 8192};
	struct rxp_pktpool *pp;
	uint8_t mac[6];
	unsigned ms = o->quick ? 300 : 1000;
	double rx[2][64], tx[2][64];
	int orig = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);

	if (getenv("RXP_BENCH_RING_ONLY"))
		return 0;
	if (geteuid() != 0) {
		printf("# AF_XDP vs AF_PACKET over veth: skipped (needs root for namespaces)\n");
		return 0;
	}
	if (veth_setup(mac)) {
		printf("# AF_XDP vs AF_PACKET over veth: skipped (cannot create "
		       "namespaces/veth)\n");
		veth_teardown();
		return 0;
	}
	pp = rxp_pktpool_create(&pc);
	for (int r = 0; pp && r < o->runs && r < 64; r++) {
		for (int m = 0; m < 2; m++) {
			if (veth_run(pp, m == 1, mac, ms, &rx[m][r], &tx[m][r])) {
				printf("# AF_XDP vs AF_PACKET over veth: skipped (%s failed)\n",
				       m ? "AF_XDP" : "AF_PACKET");
				goto out;
			}
		}
	}
	if (pp) {
		bench_add(t, "veth 64B", "afpacket rx", "Mpps", bench_median(rx[0], o->runs), 0,
			  NULL);
		bench_add(t, "veth 64B", "afxdp rx", "Mpps", bench_median(rx[1], o->runs), 0,
			  "afpacket rx");
		bench_add(t, "veth 64B", "sender (afpacket runs)", "Mpps",
			  bench_median(tx[0], o->runs), 0, NULL);
		bench_add(t, "veth 64B", "sender (afxdp runs)", "Mpps",
			  bench_median(tx[1], o->runs), 0, NULL);
	}
out:
	if (orig >= 0) {
		if (setns(orig, CLONE_NEWNET))
			perror("setns");
		close(orig);
	}
	veth_teardown();
	if (pp && rxp_pktpool_destroy(pp))
		fprintf(stderr, "bench ring: veth packets outstanding\n");
	return 0;
}
