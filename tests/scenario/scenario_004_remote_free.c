/*
 * Thread 004 in the pipeline: one receive queue, two worker threads. Worker
 * 0 receives every frame and steers half of them (by L3 hash) to worker 1,
 * which frees packets and head buffers that worker 0 allocated. Those frees
 * must go back to worker 0 through its deferred list (or, past the cap, the
 * shared ring), worker 0's own frees must stay in its local cache, every
 * datagram must arrive intact, and nothing may be outstanding at the end.
 * A starved worker 1 holds pages, so the ring may run dry; the link then
 * pauses, as 802.3x flow control would: the frame the NIC could not place
 * is sent again at its next poll, so the dry ring costs time, never a
 * datagram.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rxptest.h"
#include "rxpath/sim.h"
#include "rxpath/worker.h"

#define COUNT 20000

static atomic_ulong delivered, bad;
static uint8_t bufs[2][1 << 17];

/* The generator behind a pausing link (touched only by the thread that
 * polls the queue; read after the workers are joined). */
struct paused_src {
	struct rxp_src src;
	struct rxp_src *gen;
	uint8_t frame[RXP_GEN_FRAME_MAX + 64];
	uint32_t len;
	bool again, wait;
};
static const struct rxp_gen_config *gen_cfg;
static uint64_t gen_frames, resent;

static int paused_next(struct rxp_src *s, uint8_t *buf, uint32_t cap, uint32_t *len)
{
	struct paused_src *p = (struct paused_src *)s;
	int rc;

	if (p->wait) { /* nothing more this poll */
		p->wait = false;
		return -EAGAIN;
	}
	if (p->again) {
		if (p->len > cap)
			return -ENOSPC;
		memcpy(buf, p->frame, p->len);
		*len = p->len;
		p->again = false;
		return 0;
	}
	rc = p->gen->next(p->gen, buf, cap, len);
	if (!rc)
		gen_frames++;
	return rc;
}

static void paused_dropped(struct rxp_src *s, const uint8_t *frame, uint32_t len,
			   enum rxp_drop_reason reason)
{
	struct paused_src *p = (struct paused_src *)s;

	/* on worker 0's thread: counted in bad, asserted by the test */
	if (reason != RXP_DROP_RX_NO_BUFFER || len > sizeof(p->frame)) {
		atomic_fetch_add(&bad, 1);
		return;
	}
	memcpy(p->frame, frame, len);
	p->len = len;
	p->again = p->wait = true;
	resent++;
}

static void paused_close(struct rxp_src *s)
{
	struct paused_src *p = (struct paused_src *)s;

	p->gen->close(p->gen);
	free(p);
}

static struct rxp_src *paused_open(void *arg)
{
	struct paused_src *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->gen = rxp_src_gen(gen_cfg);
	if (!p->gen) {
		free(p);
		return NULL;
	}
	p->src.next = paused_next;
	p->src.dropped = paused_dropped;
	p->src.close = paused_close;
	return &p->src;
}

static void on_dgram(void *arg, struct rxp_worker *w, struct rxp_pkt *pkt)
{
	uint8_t *b = bufs[rxp_worker_id(w)];

	if (rxp_pkt_copy_bits(pkt, 0, b, pkt->len) || rxp_gen_verify(b, pkt->len))
		atomic_fetch_add(&bad, 1);
	atomic_fetch_add(&delivered, 1);
	rxp_pkt_consume(pkt);
}

static void test_remote_frees_go_home(void **state)
{
	struct rxp_pktpool *pp = rxp_pktpool_create(&(struct rxp_pktpool_config){
		.name = "s004", .n_pkts = 8192, .n_bufs = 4096, .n_large = 64});
	struct rxp_gen_config gc = {.seed = 4,
				    .count = COUNT,
				    .min_payload = 16,
				    .max_payload = 6000,
				    .ipv6_pct = 30,
				    .mtu = 1500,
				    .flows = 64};
	struct rxp_sim_config sc = {.nqueues = 1, .ring_size = 1024, .src_open = paused_open};
	struct rxp_dev *dev;
	struct rxp_worker_group *g;
	struct rxp_pktpool_stats ps;
	struct rxp_worker_stats w0, w1;
	struct rxp_dev_stats ds;
	volatile bool stop = false;

	gen_cfg = &gc;
	assert_non_null(dev = rxp_sim_open(&sc, pp));
	g = rxp_worker_group_create(&(struct rxp_worker_config){
		.nworkers = 2, .dev = dev, .pp = pp, .on_datagram = on_dgram});
	assert_non_null(g);
	assert_int_equal(rxp_worker_group_run(g, &stop), 0);
	rxp_worker_get_stats(rxp_worker_get(g, 0), &w0);
	rxp_worker_get_stats(rxp_worker_get(g, 1), &w1);
	rxp_pktpool_get_stats(pp, &ps);
	printf("[scenario_004] delivered %lu (worker 1: %llu, all steered to it), metadata: "
	       "%llu allocs, %llu remote frees deferred, %llu past the cap, %llu drained by "
	       "the owner\n",
	       atomic_load(&delivered), (unsigned long long)w1.datagrams,
	       (unsigned long long)ps.pkts.alloc, (unsigned long long)ps.pkts.deferred,
	       (unsigned long long)ps.pkts.defer_overflow, (unsigned long long)ps.pkts.drained);
	for (unsigned r = 0; r < RXP_DROP_MAX; r++)
		if (ps.drops[r])
			printf("[scenario_004] drop %s: %llu\n", rxp_drop_reason_name(r),
			       (unsigned long long)ps.drops[r]);
	rxp_dev_get_stats(dev, &ds);
	printf("[scenario_004] device: %llu frames offered (%llu generated), rx_no_buffer %llu "
	       "(all sent again); worker 1 steered_in %llu, pkts free %llu\n",
	       (unsigned long long)ds.rx_offered, (unsigned long long)gen_frames,
	       (unsigned long long)ds.rx_no_buffer, (unsigned long long)w1.steered_in,
	       (unsigned long long)ps.pkts.free);
	/* every frame the dry ring refused came again, and every datagram
	 * arrived, intact */
	assert_int_equal(ds.rx_no_buffer, resent);
	assert_int_equal(ds.rx_offered, gen_frames + resent);
	assert_int_equal(atomic_load(&delivered), COUNT);
	assert_int_equal(atomic_load(&bad), 0);
	assert_int_equal(w1.rx_frames, 0);
	assert_true(w1.steered_in > 0 && w1.datagrams > 0);

	/* and worker 0's frees of its own packets stayed local: about the
	 * half of the traffic it kept */
	assert_true(ps.pkts.free - ps.pkts.deferred - ps.pkts.defer_overflow > ps.pkts.free / 4);
	rxp_worker_group_destroy(g);
	rxp_pktpool_drain_deferred(pp); /* hand over this thread's staged frees */
	/* worker 1 freed worker 0's packets: they went home through the
	 * deferred list or, past the cap, the shared ring, never lost */
	rxp_pktpool_get_stats(pp, &ps);
	assert_true(ps.pkts.deferred > 0);
	assert_true(ps.pkts.deferred + ps.pkts.defer_overflow >= w1.steered_in);
	assert_int_equal(rxp_dev_close(dev), 0);
	rxp_pktpool_drain_deferred(pp);
	rxpt_pktpool_teardown(pp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_remote_frees_go_home),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
