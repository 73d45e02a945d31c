/*
 * rxpath bench pool, shared between its files: the pools and allocators
 * every row uses (set up in bench_pool.c), the one-thread rows (rows 1 and
 * 3, and their callgrind counts: pool/single.c) and the two-thread row
 * (row 2: pool/cross.c).
 */
#ifndef RXP_BENCH_POOL_H
#define RXP_BENCH_POOL_H

#include <stddef.h>
#include <stdint.h>

#include "benchlib.h"
#include "rxpath/pool.h"

#ifdef RXP_HAVE_DPDK
#include <rte_mempool.h>
#endif

#define OBJ_SIZE 2048
#define NOBJ 8192
#define BULK 32

extern struct rxp_pool *pool;
/* The same pool shape, but another thread has allocated from it too, so
 * frees check each object's owner (the one-allocator shortcut is off). */
extern struct rxp_pool *pool_shared;
extern void *(*mi_malloc_fn)(size_t);
extern void (*mi_free_fn)(void *);
extern void *(*je_malloc_fn)(size_t);
extern void (*je_free_fn)(void *);
#ifdef RXP_HAVE_DPDK
extern struct rte_mempool *mp;
extern int have_dpdk;
#endif
extern volatile uintptr_t sink;

/* pool/single.c: rows 1 and 3, one thread (cycles per object into t, the
 * median of o->runs runs of n objects each); the loop named name, for
 * --callgrind-one (NULL if there is none); the callgrind rows (--instr). */
void pool_rows_single(struct bench_table *t, const struct bench_opts *o, long n);
void (*pool_loop_by_name(const char *name))(long);
void pool_rows_instr(const struct bench_opts *o);

/* pool/cross.c: row 2, allocation on A and free on B, into t; trip[r] gets
 * run r's cache-line round trip between the two threads. --row2: row 2
 * alone for secs seconds, by placement. */
void pool_row2(struct bench_table *t, const struct bench_opts *o, long n, double *trip);
void pool_row2_placements(double secs, long per, const struct bench_opts *o);

#endif
