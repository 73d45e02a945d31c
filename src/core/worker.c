/*
 * Workers and their poll loop (include/rxpath/worker.h).
 *
 * Each worker owns: its network stack (reassembly table, UDP ports), a TIPC
 * bearer (its links, one per peer: src/tipc/tipc_bearer.c) bound to UDP port
 * 6118, and an inbox ring that other workers steer packets into. Invariants:
 *   - a packet taken from a queue or an inbox is consumed before the next
 *     one is looked at (delivered to a sink or dropped with a reason);
 *   - worker i polls the queues q with q % nworkers == i, and only worker i
 *     dequeues its inbox (other workers only enqueue);
 *   - a worker announces its input finished only after every packet it
 *     received was processed or steered, so "all inputs finished and my
 *     inbox empty" means nothing more can arrive.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "rxpath/compiler.h"
#include "rxpath/wire.h"
#include "rxpath/worker.h"
#include "buf/mpmc.h"

#ifndef RXP_IPPROTO_ICMP
#define RXP_IPPROTO_ICMP 1
#endif
#ifndef RXP_ETH_P_ARP
#define RXP_ETH_P_ARP 0x0806
#endif
#define TIMER_PERIOD_NS 1000000ull /* reassembly expiry at most once a ms */
#define STASH_MAX 256 /* >= the largest budget */
/* Sleeping, as NAPI does: a worker keeps polling while traffic flows, and
 * after its queues and inbox have been empty this long it sleeps in poll()
 * on its queues' descriptors and its wake-up eventfd, re-arming the way an
 * interrupt would. The sleep is bounded, so timers still run. */
#define BUSY_POLL_NS 200000ull
#define SLEEP_MS 10

struct rxp_worker {
	struct rxp_worker_group *g;
	unsigned id;
	unsigned nq; /* queues this worker polls: id, id + n, id + 2n, ... */
	unsigned qnext; /* round robin among them */
	uint32_t qdone; /* bit per own queue that reported -ENODATA */
	bool input_done; /* all of them did */
	uint64_t now, last_timer;
	struct rxp_net net;
	struct rxp_mpmc *inbox;
	int wake_fd; /* eventfd: another worker put packets in the inbox */
	atomic_bool sleeping; /* in poll(): steering must write wake_fd */
	struct rxp_worker_stats st;
	/* Packets for a worker whose inbox was full, in arrival order. While
	 * any wait here this worker polls no queue: back-pressure, so a slow
	 * worker stalls the ring (where a device counts what it must drop)
	 * instead of losing packets between workers. */
	struct rxp_pkt *stash[STASH_MAX];
	unsigned nstash;
	struct rxp_tipc_bearer *tipc; /* NULL without cfg.tipc */
} __rxp_cache_aligned;

struct rxp_worker_group {
	struct rxp_worker_config cfg;
	unsigned n;
	unsigned with_queues; /* workers that poll at least one queue */
	atomic_uint inputs_done; /* of those, how many finished */
	struct rxp_worker *w[RXP_WORKER_MAX];
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- delivery ------------------------------------------------------------ */

/* A TIPC message for any port. Consumes pkt. */
static void on_tipc_msg(void *arg, struct rxp_pkt *pkt)
{
	struct rxp_worker *w = arg;

	w->st.messages++;
	w->st.message_bytes += pkt->len;
	if (w->g->cfg.on_message)
		w->g->cfg.on_message(w->g->cfg.arg, w, pkt);
	else
		rxp_pkt_consume(pkt);
}

/* Every other UDP port: the application. Consumes pkt. */
static void on_udp(void *arg, struct rxp_pkt *pkt)
{
	struct rxp_worker *w = arg;

	w->st.datagrams++;
	w->st.datagram_bytes += pkt->len;
	if (w->g->cfg.on_datagram)
		w->g->cfg.on_datagram(w->g->cfg.arg, w, pkt);
	else
		rxp_pkt_consume(pkt);
}

/* An IP datagram of another protocol than UDP: counted, consumed. */
static void on_other(void *arg, struct rxp_pkt *pkt, uint8_t proto, uint32_t l4_off)
{
	struct rxp_worker *w = arg;
	uint8_t t;

	switch (proto) {
	case RXP_IPPROTO_ICMP:
		w->st.icmp++;
		break;
	case RXP_IPPROTO_ICMPV6:
		if (rxp_pkt_copy_bits(pkt, l4_off, &t, 1) == 0 && t >= 133 && t <= 137)
			w->st.ndp++;
		else
			w->st.icmpv6++;
		break;
	case RXP_IPPROTO_TCP:
		w->st.tcp++;
		break;
	default:
		w->st.other_proto++;
	}
	rxp_pkt_consume(pkt);
}

/* ---- the pipeline ---------------------------------------------------------- */

/* L2 to L3. Consumes pkt. */
static void process(struct rxp_worker *w, struct rxp_pkt *pkt)
{
	uint32_t cur = (uint32_t)(pkt->data - pkt->head);

	if (pkt->protocol != RXP_ETH_P_IP && pkt->protocol != RXP_ETH_P_IPV6) {
		uint8_t et[2];

		/* Not for this path (ARP, LLDP, ...): counted, not a drop. The
		 * ethertype is read where classification left it unknown. */
		w->st.not_ip++;
		if (pkt->protocol == RXP_ETH_P_ARP ||
		    (!pkt->protocol && rxp_pkt_copy_bits(pkt, 12, et, 2) == 0 &&
		     (et[0] << 8 | et[1]) == RXP_ETH_P_ARP))
			w->st.arp++;
		rxp_pkt_consume(pkt);
		return;
	}
	if (pkt->network_off == 0xffff || pkt->network_off < cur ||
	    !rxp_pkt_pull(pkt, pkt->network_off - cur)) {
		rxp_pkt_drop(pkt, RXP_DROP_L2_UNKNOWN);
		return;
	}
	if (w->g->cfg.wire_time && pkt->tstamp_ns > w->now)
		w->now = pkt->tstamp_ns;
	rxp_ip_rcv(&w->net, pkt, w->now);
}

/* After putting packets in t's inbox: if t sleeps (or is about to), wake
 * it. Pairs with the fence in idle_sleep: either t sees the packets when it
 * looks again, or we see it sleeping. */
static inline void wake(struct rxp_worker *t)
{
	atomic_thread_fence(memory_order_seq_cst);
	if (rxp_unlikely(atomic_load_explicit(&t->sleeping, memory_order_relaxed)) &&
	    atomic_exchange(&t->sleeping, false)) {
		uint64_t one = 1;

		(void)!write(t->wake_fd, &one, sizeof(one));
	}
}

static unsigned target_of(const struct rxp_worker *w, const struct rxp_pkt *pkt)
{
	return w->g->n > 1 ? pkt->hash % w->g->n : w->id;
}

/* Consumes pkt: processed here, handed to the worker its hash names, or
 * stashed until that worker's inbox has room (dropped only if the stash is
 * full too, which the budget prevents). */
static void steer_or_process(struct rxp_worker *w, struct rxp_pkt *pkt)
{
	unsigned target = target_of(w, pkt);
	void *obj = pkt;

	if (target == w->id) {
		process(w, pkt);
		return;
	}
	if (!w->nstash && rxp_mpmc_enqueue(w->g->w[target]->inbox, &obj, 1, true)) {
		w->st.steered_out++;
		wake(w->g->w[target]);
		return;
	}
	if (w->nstash == STASH_MAX) {
		rxp_pkt_drop(pkt, RXP_DROP_STEER_FULL);
		return;
	}
	w->stash[w->nstash++] = pkt;
}

/* Retry the stash in order; true when it is empty. */
static bool stash_flush(struct rxp_worker *w)
{
	unsigned i = 0, j = 0;

	for (; i < w->nstash; i++) {
		void *obj = w->stash[i];

		struct rxp_worker *t = w->g->w[target_of(w, w->stash[i])];

		if (!rxp_mpmc_enqueue(t->inbox, &obj, 1, true))
			break;
		w->st.steered_out++;
		wake(t);
	}
	for (; i < w->nstash; i++)
		w->stash[j++] = w->stash[i];
	w->nstash = j;
	return j == 0;
}

static int poll_queues(struct rxp_worker *w, unsigned budget)
{
	struct rxp_worker_group *g = w->g;
	struct rxp_pkt *pkts[256];
	unsigned done = 0;
	int total = 0;

	if (budget > RXP_ARRAY_SIZE(pkts))
		budget = RXP_ARRAY_SIZE(pkts);
	for (unsigned k = 0; k < w->nq && (unsigned)total < budget; k++) {
		unsigned idx = (w->qnext + k) % w->nq, q = w->id + idx * g->n;
		int n;

		if (w->qdone & (1u << idx))
			continue;
		n = rxp_dev_rx_burst(g->cfg.dev, q, pkts, budget - (unsigned)total);
		if (n == -ENODATA) {
			w->qdone |= 1u << idx;
			continue;
		}
		if (n < 0)
			continue; /* the device counted it; try again next poll */
		for (int i = 0; i < n; i++) {
			w->st.rx_frames++;
			w->st.rx_bytes += pkts[i]->len;
			steer_or_process(w, pkts[i]);
		}
		total += n;
	}
	w->qnext++;
	for (unsigned idx = 0; idx < w->nq; idx++)
		done += !!(w->qdone & (1u << idx));
	if (w->nq && done == w->nq && !w->nstash && !w->input_done) {
		w->input_done = true;
		atomic_fetch_add(&g->inputs_done, 1);
	}
	return total;
}

int rxp_worker_poll(struct rxp_worker *w)
{
	struct rxp_worker_group *g = w->g;
	unsigned budget = g->cfg.budget, chunk;
	void *objs[64];
	int total;
	uint32_t got;

	w->st.polls++;
	if (!g->cfg.wire_time)
		w->now = mono_ns();
	/* Back-pressure: while packets wait for another worker's inbox, leave
	 * our queues alone (see the stash). */
	total = stash_flush(w) ? poll_queues(w, budget) : 0;
	/* Then what other workers steered to us, within the same budget. */
	chunk = budget < RXP_ARRAY_SIZE(objs) ? budget : (unsigned)RXP_ARRAY_SIZE(objs);
	while ((unsigned)total < 2 * budget &&
	       (got = rxp_mpmc_dequeue(w->inbox, objs, chunk, false)) > 0) {
		for (uint32_t i = 0; i < got; i++)
			process(w, objs[i]);
		w->st.steered_in += got;
		total += (int)got;
	}
	rxp_pktpool_drain_deferred(g->cfg.pp);
	if (w->now - w->last_timer >= TIMER_PERIOD_NS || w->now < w->last_timer) {
		rxp_defrag_expire(w->net.defrag, w->now);
		w->last_timer = w->now;
		w->st.timer_runs++;
	}
	if (total == 0 && atomic_load(&g->inputs_done) == g->with_queues &&
	    rxp_mpmc_count(w->inbox) == 0)
		return -ENODATA;
	return total;
}

/* ---- group ------------------------------------------------------------------- */

static void worker_free(struct rxp_worker *w)
{
	void *obj;

	if (!w)
		return;
	if (w->inbox)
		while (rxp_mpmc_dequeue(w->inbox, &obj, 1, false))
			rxp_pkt_drop(obj, RXP_DROP_TEARDOWN);
	for (unsigned i = 0; i < w->nstash; i++)
		rxp_pkt_drop(w->stash[i], RXP_DROP_TEARDOWN);
	rxp_tipc_bearer_destroy(w->tipc);
	if (w->net.defrag)
		rxp_net_fini(&w->net);
	free(w->inbox);
	if (w->wake_fd >= 0)
		close(w->wake_fd);
	free(w);
}

struct rxp_worker_group *rxp_worker_group_create(const struct rxp_worker_config *cfg)
{
	struct rxp_worker_group *g;
	unsigned nq;

	if (!cfg || !cfg->pp || cfg->nworkers == 0 || cfg->nworkers > RXP_WORKER_MAX) {
		errno = EINVAL;
		return NULL;
	}
	nq = cfg->dev ? cfg->dev->nqueues : 0;
	if (nq > 32 * cfg->nworkers) {
		errno = EINVAL; /* a worker tracks at most 32 queues */
		return NULL;
	}
	g = calloc(1, sizeof(*g));
	if (!g)
		return NULL;
	g->cfg = *cfg;
	if (!g->cfg.budget)
		g->cfg.budget = RXP_WORKER_BUDGET_DEFAULT;
	if (!g->cfg.inbox)
		g->cfg.inbox = RXP_WORKER_INBOX_DEFAULT;
	g->n = cfg->nworkers;
	for (unsigned i = 0; i < g->n; i++) {
		struct rxp_worker *w = aligned_alloc(
			RXP_CACHELINE, RXP_ALIGN_UP(sizeof(*w), (size_t)RXP_CACHELINE));

		if (!w)
			goto fail;
		memset(w, 0, sizeof(*w));
		w->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		g->w[i] = w;
		w->g = g;
		w->id = i;
		w->nq = nq > i ? (nq - i + g->n - 1) / g->n : 0;
		w->inbox = rxp_mpmc_create(g->cfg.inbox);
		if (!w->inbox || w->wake_fd < 0 || rxp_net_init(&w->net, &g->cfg.defrag))
			goto fail;
		if (g->cfg.tipc &&
		    (!(w->tipc = rxp_tipc_bearer_create(g->cfg.pp, RXP_WORKER_TIPC_PEERS,
							on_tipc_msg, w)) ||
		     rxp_udp_bind(&w->net, RXP_TIPC_UDP_PORT, rxp_tipc_bearer_rcv, w->tipc)))
			goto fail;
		if (rxp_udp_bind(&w->net, 0, on_udp, w))
			goto fail;
		w->net.other_fn = on_other;
		w->net.other_arg = w;
		w->net.udp_csum = g->cfg.udp_csum;
		g->with_queues += w->nq > 0;
	}
	return g;
fail:
	rxp_worker_group_destroy(g);
	errno = ENOMEM;
	return NULL;
}

void rxp_worker_group_destroy(struct rxp_worker_group *g)
{
	if (!g)
		return;
	for (unsigned i = 0; i < g->n; i++)
		worker_free(g->w[i]);
	free(g);
}

struct rxp_worker *rxp_worker_get(struct rxp_worker_group *g, unsigned i)
{
	return i < g->n ? g->w[i] : NULL;
}

unsigned rxp_worker_id(const struct rxp_worker *w)
{
	return w->id;
}

struct run_arg {
	struct rxp_worker *w;
	volatile bool *stop;
	atomic_uint *ready;
	unsigned expected;
};

/* Whether a worker may sleep: its queues that are still open all have a
 * descriptor to wake it (live sockets), or it polls none that are open. A
 * sim or pcap queue always has input until it ends: it is polled. */
static bool can_sleep(struct rxp_worker *w)
{
	struct rxp_dev *d = w->g->cfg.dev;

	for (unsigned idx = 0; idx < w->nq; idx++)
		if (!(w->qdone & (1u << idx)) && rxp_dev_poll_fd(d, w->id + idx * w->g->n) < 0)
			return false;
	return true;
}

/* Sleep until a queue has input, a packet was steered here, or SLEEP_MS
 * (timers, the group's end). */
static void idle_sleep(struct rxp_worker *w)
{
	struct pollfd pf[33];
	unsigned n = 0;

	if (!can_sleep(w)) {
		sched_yield();
		return;
	}
	for (unsigned idx = 0; idx < w->nq && n < 32; idx++)
		if (!(w->qdone & (1u << idx))) {
			pf[n].fd = rxp_dev_poll_fd(w->g->cfg.dev, w->id + idx * w->g->n);
			pf[n++].events = POLLIN;
		}
	pf[n].fd = w->wake_fd;
	pf[n++].events = POLLIN;
	atomic_store(&w->sleeping, true);
	atomic_thread_fence(memory_order_seq_cst);
	if (rxp_mpmc_count(w->inbox) == 0 && !w->nstash) {
		w->st.sleeps++;
		(void)poll(pf, n, SLEEP_MS);
	}
	atomic_store(&w->sleeping, false);
	if (pf[n - 1].revents & POLLIN) {
		uint64_t v;

		(void)!read(w->wake_fd, &v, sizeof(v));
	}
}

static void *run_thread(void *a)
{
	struct run_arg *ra = a;
	struct rxp_worker *w = ra->w;
	struct rxp_worker_group *g = w->g;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	uint64_t idle_since = 0;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(w->id % (ncpu > 0 ? (unsigned)ncpu : 1u), &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	/* Every worker takes its thread id before any of them can finish: a
	 * worker that exited early would free its id for another to inherit,
	 * and with it the ownership of its objects. */
	(void)rxp_thread_id();
	atomic_fetch_add(ra->ready, 1);
	while (atomic_load(ra->ready) < ra->expected && !*ra->stop)
		sched_yield();
	while (!*ra->stop) {
		int n = rxp_worker_poll(w);

		if (n == -ENODATA)
			break;
		if (n > 0) {
			idle_since = 0;
			continue;
		}
		if (!idle_since)
			idle_since = mono_ns();
		else if (mono_ns() - idle_since >= BUSY_POLL_NS)
			idle_sleep(w);
		else if (!can_sleep(w))
			sched_yield();
	}
	/* Hand back what this thread still holds before it goes. */
	rxp_pktpool_drain_deferred(g->cfg.pp);
	rxp_pktpool_flush_cache(g->cfg.pp);
	return NULL;
}

int rxp_worker_group_run(struct rxp_worker_group *g, volatile bool *stop)
{
	pthread_t th[RXP_WORKER_MAX];
	struct run_arg ra[RXP_WORKER_MAX];
	atomic_uint ready = 0;
	unsigned started = 0;
	int err = 0;

	for (unsigned i = 0; i < g->n; i++) {
		ra[i].w = g->w[i];
		ra[i].stop = stop;
		ra[i].ready = &ready;
		ra[i].expected = g->n;
		if (pthread_create(&th[i], NULL, run_thread, &ra[i])) {
			err = -EAGAIN;
			*stop = true; /* the started ones stop waiting and return */
			break;
		}
		started++;
	}
	for (unsigned i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	return err;
}

void rxp_worker_get_stats(const struct rxp_worker *w, struct rxp_worker_stats *st)
{
	*st = w->st;
}

/* The stats structs are all uint64_t counters: add them field by field. */
static void add_u64s(void *dst, const void *src, size_t bytes)
{
	uint64_t *d = dst;
	const uint64_t *s = src;

	for (size_t i = 0; i < bytes / sizeof(uint64_t); i++)
		d[i] += s[i];
}

void rxp_worker_group_stats(struct rxp_worker_group *g, struct rxp_worker_stats *st,
			    struct rxp_ip_stats *ip4, struct rxp_ip_stats *ip6,
			    struct rxp_udp_stats *udp, struct rxp_defrag_counters *reasm,
			    struct rxp_tipc_link_stats *tipc)
{
	memset(st, 0, sizeof(*st));
	memset(ip4, 0, sizeof(*ip4));
	memset(ip6, 0, sizeof(*ip6));
	memset(udp, 0, sizeof(*udp));
	memset(reasm, 0, sizeof(*reasm));
	memset(tipc, 0, sizeof(*tipc));
	for (unsigned i = 0; i < g->n; i++) {
		struct rxp_worker *w = g->w[i];
		struct rxp_defrag_counters c;
		uint64_t hw = reasm->mem_high_water;

		add_u64s(st, &w->st, sizeof(*st));
		add_u64s(ip4, &w->net.ip4, sizeof(*ip4));
		add_u64s(ip6, &w->net.ip6, sizeof(*ip6));
		add_u64s(udp, &w->net.udp, sizeof(*udp));
		rxp_defrag_get_counters(w->net.defrag, &c);
		add_u64s(reasm, &c, sizeof(c));
		/* the high-water mark is a maximum, not a sum */
		reasm->mem_high_water = hw > c.mem_high_water ? hw : c.mem_high_water;
		if (w->tipc) {
			struct rxp_tipc_link_stats ls;
			uint64_t full;

			rxp_tipc_bearer_stats(w->tipc, &ls, &full, NULL);
			add_u64s(tipc, &ls, sizeof(ls));
			st->tipc_peers_full += full;
		}
	}
}
