/*
 * What a pool tells about itself (rxpath/pool.h): its counters, summed over
 * the threads that keep them, and the leak report, which finds the
 * outstanding objects as those in none of the places a free object can be
 * (src/buf/pool_internal.h), so it needs no per-object state in release
 * builds. Reads only; the report is meaningful while no thread uses the
 * pool.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf/pool_internal.h"

/* Mark object i free in a map of the n carved ones (a free object always
 * is one: only those were ever handed out or put back). */
static void mark(uint8_t *isfree, uint32_t n, unsigned i)
{
	if (i < n)
		isfree[i] = 1;
}

static void mark_ring(const struct rxp_pool *p, const struct rxp_mpmc *r, uint8_t *isfree,
		      uint32_t n)
{
	uint32_t t = atomic_load(&r->cons_tail), h = atomic_load(&r->prod_tail);

	for (; t != h; t++)
		mark(isfree, n, obj_index(p, r->slots[t & r->mask]));
}

/* Which of the carved objects are free: in the ring, a cache, a deferred
 * ring or a stage. Only meaningful while no thread uses the pool. Slots
 * never carved are not in it: a pool sized to a large cap (rxpath
 * defrag's, to a quarter of RAM) carves few of its p->n, and a map of
 * them all, zeroed and set, was 41M instructions and fresh pages at every
 * rxpath defrag's exit (4.5% of its main thread's instructions on the
 * bench capture). *np: how many it holds. */
static uint8_t *free_map(const struct rxp_pool *p, uint32_t *np)
{
	uint32_t n = *np = rxp_pool_carved(p);
	uint8_t *isfree = calloc(n ? n : 1, 1);

	if (!isfree)
		return NULL;
	mark_ring(p, p->ring, isfree, n);
	for (unsigned t = 0; t < RXP_MAX_THREADS && p->cache_size; t++) {
		const struct tcache *c = &p->caches[t];

		for (uint32_t i = 0; i < c->len; i++)
			mark(isfree, n, obj_index(p, c->objs[i]));
		for (unsigned o = 0; o < NSTAGE; o++)
			for (uint32_t i = 0; i < c->stage[o].n; i++)
				mark(isfree, n, obj_index(p, c->stage[o].objs[i]));
		mark_ring(p, p->defer[t], isfree, n);
		for (uint32_t w = 0; p->stash[t].bits && w < p->nwords; w++)
			for (uint64_t b = p->stash[t].bits[w]; b; b &= b - 1)
				mark(isfree, n, w * 64 + (unsigned)__builtin_ctzll(b));
	}
	return isfree;
}

size_t rxp_pool_leak_report(const struct rxp_pool *p, FILE *out)
{
	uint32_t n;
	uint8_t *isfree = free_map(p, &n);
	size_t used = 0;

	if (!isfree)
		return (size_t)rxp_pool_outstanding(p);
	for (unsigned i = 0; i < n; i++) {
		const struct obj_hdr *h = (const void *)(p->mem + (size_t)i * p->stride);

		if (isfree[i])
			continue;
		used++;
		if (!out)
			continue;
		if (h->file)
			fprintf(out,
				"pool %s: object %u (%p) outstanding, allocated at %s:%u by thread "
				"%u\n",
				p->name, i, (const void *)(h + 1), h->file, h->line,
				p->head.owners[i]);
		else
			fprintf(out,
				"pool %s: object %u (%p) outstanding, allocated by thread %u "
				"(build with RXP_DEBUG for the site)\n",
				p->name, i, (const void *)(h + 1), p->head.owners[i]);
	}
	free(isfree);
	return used;
}

void rxp_pool_get_stats(const struct rxp_pool *p, struct rxp_pool_stats *st)
{
	memset(st, 0, sizeof(*st));
	for (unsigned t = 0; t <= RXP_MAX_THREADS; t++) {
		const struct tcache *c = &p->caches[t];

		st->alloc += STAT_READ(c->alloc);
		st->free += STAT_READ(c->free);
		st->alloc_fail += STAT_READ(c->fail);
		st->deferred += STAT_READ(c->deferred);
		st->defer_overflow += STAT_READ(c->overflow);
		st->drained += STAT_READ(c->drained);
	}
	st->outstanding = st->alloc - st->free;
	st->n = p->n;
}

uint64_t rxp_pool_outstanding(const struct rxp_pool *p)
{
	struct rxp_pool_stats st;

	rxp_pool_get_stats(p, &st);
	return st.outstanding;
}

const char *rxp_pool_name(const struct rxp_pool *p)
{
	return p->name;
}

size_t rxp_pool_obj_size(const struct rxp_pool *p)
{
	return p->obj_size;
}

bool rxp_pool_contains(const struct rxp_pool *p, const void *obj)
{
	const uint8_t *o = obj;

	return o >= p->mem && o < p->mem + (size_t)p->n * p->stride &&
	       (size_t)(o - p->mem) % p->stride == sizeof(struct obj_hdr);
}
