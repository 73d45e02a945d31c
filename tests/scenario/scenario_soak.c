/*
 * Soak: the mixed workload with faults (loss, reordering, duplicate and
 * overlapping fragments, zero-length descriptors, TIPC bundles and
 * fragments) for 10^7 frames on 2 worker threads. Asserts: no corrupted
 * payload, every datagram and message sent accounted for by the ledger
 * (delivered, cut by the end of the run, or lost to a counted drop:
 * unaccounted is 0), packets and pages outstanding back to 0, and resident
 * memory flat after warm-up (no growth beyond a small margin, less the
 * ledger's entries, which grow with what is sent). RXP_SOAK_FRAMES
 * overrides the frame count.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rxptest.h"
#include "rxpath/sim.h"
#include "rxpath/worker.h"
#include "rxpath/workload.h"

#define NW 2

struct sink {
	uint8_t *buf[NW];
	atomic_ulong bad, datagrams, messages;
};

static struct rxp_workload_config wl;
static struct rxp_ledger *ledger;
static unsigned next_queue; /* the sim opens its queues' sources in order */

static struct rxp_src *open_wl(void *arg)
{
	struct rxp_workload_config c = wl;

	(void)arg;
	c.ledger = ledger;
	c.queue = next_queue++;
	return rxp_workload_src(&c);
}

static void check(struct sink *s, unsigned wid, struct rxp_pkt *pkt, uint32_t off)
{
	uint32_t len = pkt->len - off;

	if (rxp_pkt_copy_bits(pkt, off, s->buf[wid], len) || rxp_gen_verify(s->buf[wid], len))
		atomic_fetch_add(&s->bad, 1);
	else
		rxp_ledger_delivered(ledger, s->buf[wid], len);
	rxp_pkt_consume(pkt);
}

static void on_dgram(void *arg, struct rxp_worker *w, struct rxp_pkt *pkt)
{
	struct sink *s = arg;

	atomic_fetch_add_explicit(&s->datagrams, 1, memory_order_relaxed);
	check(s, rxp_worker_id(w), pkt, 0);
}

static void on_msg(void *arg, struct rxp_worker *w, struct rxp_pkt *pkt)
{
	struct sink *s = arg;
	uint8_t h[24];

	atomic_fetch_add_explicit(&s->messages, 1, memory_order_relaxed);
	rxp_pkt_copy_bits(pkt, 0, h, sizeof(h));
	check(s, rxp_worker_id(w), pkt, rxp_tipc_hsize(h));
}

static long rss_kb(void)
{
	long pages = 0, res = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f) {
		if (fscanf(f, "%ld %ld", &pages, &res) != 2)
			res = 0;
		fclose(f);
	}
	return res * (sysconf(_SC_PAGESIZE) / 1024);
}

static struct rxp_worker_group *grp;
static volatile bool stop, done;

static void *runner(void *a)
{
	rxp_worker_group_run(grp, &stop);
	done = true;
	return NULL;
}

static void test_soak(void **state)
{
	static struct sink s;
	const char *env = getenv("RXP_SOAK_FRAMES");
	uint64_t total = env ? strtoull(env, NULL, 0) : 10000000ull;
	struct rxp_pktpool *pp = rxp_pktpool_create(&(struct rxp_pktpool_config){
		.name = "soak", .n_pkts = 32768, .n_bufs = 16384, .n_large = 128});
	struct rxp_sim_config sc = {
		.nqueues = NW, .ring_size = 1024, .seed = 11, .src_open = open_wl};
	/* frame faults from the fault wrapper, as `rxpath run` has them */
	struct rxp_fault_config fc = {.seed = 11, .loss = 0.001, .zero_len = 0.001};
	struct rxp_worker_stats st;
	struct rxp_ip_stats i4, i6;
	struct rxp_udp_stats u;
	struct rxp_defrag_counters rc;
	struct rxp_tipc_link_stats ts;
	struct rxp_dev *dev;
	pthread_t th;
	long rss_warm = 0, rss_max = 0;
	unsigned samples = 0; /* taken after warm-up while the run went on */

	struct rxp_ledger_tally lt;

	wl = (struct rxp_workload_config){.seed = rxpt_seed("soak"), .frames = total};
	ledger = rxp_ledger_create(NW);
	assert_non_null(ledger);
	rxp_pktpool_set_drop_hook(pp, rxp_ledger_dropped, ledger);
	for (int i = 0; i < NW; i++)
		s.buf[i] = malloc(1 << 17);
	dev = rxp_fault_wrap(rxp_sim_open(&sc, pp), &fc);
	assert_non_null(dev);
	grp = rxp_worker_group_create(&(struct rxp_worker_config){.nworkers = NW,
								  .dev = dev,
								  .pp = pp,
								  .tipc = true,
								  .on_datagram = on_dgram,
								  .on_message = on_msg,
								  .arg = &s});
	assert_non_null(grp);
	assert_int_equal(pthread_create(&th, NULL, runner, NULL), 0);
	for (;;) {
		usleep(20000);
		if (done)
			break;
		rxp_worker_group_stats(grp, &st, &i4, &i6, &u, &rc, &ts);
		long r = rss_kb() - (long)(rxp_ledger_entry_bytes(ledger) / 1024);

		/* warm-up: the first quarter (pools, rings, reassembly at its cap) */
		if (st.rx_frames < total / 4)
			continue;
		if (!rss_warm)
			rss_warm = r;
		if (r > rss_max)
			rss_max = r;
		samples++;
	}
	assert_int_equal(pthread_join(th, NULL), 0);
	if (rss_warm && rss_kb() - (long)(rxp_ledger_entry_bytes(ledger) / 1024) > rss_max)
		rss_max =
			rss_kb() - (long)(rxp_ledger_entry_bytes(ledger) / 1024); /* the end too */
	rxp_worker_group_stats(grp, &st, &i4, &i6, &u, &rc, &ts);
	printf("[soak] %llu frames, %lu datagrams, %lu messages, %lu corrupted; reasm OK %llu "
	       "fails %llu evictions %llu; RSS after warm-up %ld KiB, max %ld KiB (%u samples)\n",
	       (unsigned long long)st.rx_frames, atomic_load(&s.datagrams),
	       atomic_load(&s.messages), atomic_load(&s.bad), (unsigned long long)rc.ReasmOKs,
	       (unsigned long long)rc.ReasmFails, (unsigned long long)rc.evictions, rss_warm,
	       rss_max, samples);
	assert_int_equal(atomic_load(&s.bad), 0);
	assert_true(st.rx_frames >= total * 99 / 100); /* 0.1% lost in the fault wrapper */
	assert_true(atomic_load(&s.datagrams) > 0 && atomic_load(&s.messages) > 0);
	/* Flat means: sampled at least twice after warm-up while frames still
	 * flowed, and never grown past the margin. A run of the default length
	 * samples many times; a short one (RXP_SOAK_FRAMES) may not, and says
	 * so. */
	if (total >= 1000000)
		assert_true(samples >= 2);
	if (samples >= 2)
		assert_true(rss_max <= rss_warm + rss_warm / 10 + 8192);
	else
		printf("[soak] run too short to sample memory after warm-up: not checked\n");
	rxp_worker_group_destroy(grp);
	assert_int_equal(rxp_dev_close(dev), 0);
	/* Every drop has happened (teardown included): the ledger balances. */
	rxp_ledger_tally(ledger, &lt);
	printf("[soak] sent %llu datagrams, %llu messages, %llu frames; delivered %llu + %llu; "
	       "cut %llu; lost %llu (injected %llu, frag_timeout %llu, frag_overlap %llu); "
	       "unaccounted %llu, unidentified drops %llu, phantom %llu\n",
	       (unsigned long long)lt.datagrams, (unsigned long long)lt.messages,
	       (unsigned long long)lt.frames, (unsigned long long)lt.delivered_datagrams,
	       (unsigned long long)lt.delivered_messages, (unsigned long long)lt.cut,
	       (unsigned long long)lt.lost_total,
	       (unsigned long long)lt.lost[RXP_DROP_FAULT_INJECT],
	       (unsigned long long)lt.lost[RXP_DROP_FRAG_TIMEOUT],
	       (unsigned long long)lt.lost[RXP_DROP_FRAG_OVERLAP],
	       (unsigned long long)lt.unaccounted, (unsigned long long)lt.unidentified,
	       (unsigned long long)lt.phantom);
	assert_int_equal(lt.unaccounted, 0);
	assert_int_equal(lt.phantom, 0);
	assert_int_equal(lt.delivered_datagrams, atomic_load(&s.datagrams));
	assert_int_equal(lt.delivered_messages, atomic_load(&s.messages));
	assert_true(lt.lost[RXP_DROP_FAULT_INJECT] > 0); /* the fault wrapper's loss is seen */
	assert_int_equal(lt.delivered_twice, 0);
	rxp_pktpool_set_drop_hook(pp, NULL, NULL);
	rxp_ledger_destroy(ledger);
	for (int i = 0; i < NW; i++)
		free(s.buf[i]);
	rxpt_pktpool_teardown(pp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_soak),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
