/*
 * Small thread ids: what every per-thread structure of rxpath is indexed
 * by (pool caches, drop counters, ring ownership).
 *
 * Every thread that touches a pool gets a small id on first use
 * (rxp_thread_id()); at most RXP_MAX_THREADS threads hold one at once, and
 * the ids of exited threads are reused. Threads past the limit all get
 * RXP_MAX_THREADS, which has no cache of its own (every structure indexed
 * by id keeps one shared, atomically updated slot for it).
 */
#ifndef RXPATH_THREAD_H
#define RXPATH_THREAD_H

#include "rxpath/compiler.h"

RXP_BEGIN_DECLS

#define RXP_MAX_THREADS 64

/* Not an API: the id cache behind rxp_thread_id(), -1 until assigned. */
extern __thread int rxp_tid_ __attribute__((tls_model("initial-exec")));
/* Not an API: assigns this thread's id (rxp_thread_id's slow path). */
unsigned rxp_thread_id_assign(void);

/* This thread's small id, assigned on first use; < RXP_MAX_THREADS, or
 * == RXP_MAX_THREADS for threads past the limit. Inline: it is on every
 * allocation and free. */
static inline unsigned rxp_thread_id(void)
{
	int t = rxp_tid_;

	return __builtin_expect(t >= 0, 1) ? (unsigned)t : rxp_thread_id_assign();
}

RXP_END_DECLS

#endif
