/*
 * Unit tests for sizing a packet pool from the reassembly cap
 * (src/net/defrag_sizing.c) and for making a packet from bytes
 * (src/buf/pkt_bytes.c): a table fed datagrams that never complete fills to
 * its memory cap, not to the end of its pool, with small and with large
 * fragments; the queue cap derived from memory never binds first.
 */
#include <errno.h>

#include "defrag_test.h"

/* Feed first fragments of frag_len payload bytes of distinct datagrams until
 * the table refuses or evicts (it is full); returns how many it held. */
static uint64_t fill(uint64_t mem, uint32_t frag_len)
{
	struct rxp_defrag_config cfg = {.mem_limit = mem, .max_dist = -1};
	struct rxp_pktpool_config pc = {.name = "sizing"};
	struct rxp_pktpool *pp;
	struct rxp_defrag_table *t;
	struct rxp_defrag_counters k;
	struct rxp_pktpool_stats st;
	uint8_t *pl = malloc(frag_len);
	uint64_t held = 0;

	assert_non_null(pl);
	rxpt_fill(pl, frag_len, 1);
	cfg.max_queues = rxp_defrag_queues_for_mem(mem);
	rxp_defrag_pool_config(&cfg, 16, &pc);
	pp = rxp_pktpool_create(&pc);
	assert_non_null(pp);
	t = rxp_defrag_table_create(&cfg);
	assert_non_null(t);
	for (uint32_t i = 0;; i++) {
		struct dt4 d = {.id = (uint16_t)i, .src = htonl(0x0a000000u + (i >> 16) + 1)};
		struct rxp_pkt *p = dt_frag4(pp, &d, pl, 0, frag_len, true);

		assert_null(rxp_defrag(t, p, 1));
		rxp_defrag_get_counters(t, &k);
		if (k.mem_drops || k.evictions)
			break;
		held++;
		assert_true(held < 10000000);
	}
	rxp_pktpool_get_stats(pp, &st);
	/* the pool never ran dry before the table's cap bound */
	assert_int_equal(st.pkts.alloc_fail + st.bufs.alloc_fail + st.large.alloc_fail, 0);
	assert_true(k.mem_high_water <= mem);
	assert_true(k.mem_high_water > mem - mem / 8); /* filled to the cap */
	rxp_defrag_table_destroy(t);
	rxpt_pktpool_teardown(pp);
	free(pl);
	return held;
}

static void test_pool_follows_cap(void **state)
{
	(void)state;
	/* far past the 130 datagrams a default pool ran out at */
	assert_true(fill(16u << 20, 1400) > 5000);
	assert_true(fill(64u << 20, 1400) > 20000);
	/* fragments too big for a small buffer take large ones */
	assert_true(fill(16u << 20, 8000) > 200);
}

static void test_queues_for_mem(void **state)
{
	(void)state;
	assert_true(rxp_defrag_queues_for_mem(0) >= 1);
	assert_true(rxp_defrag_queues_for_mem(64 << 10) >= 1);
	assert_true(rxp_defrag_queues_for_mem(64u << 20) > rxp_defrag_queues_for_mem(16u << 20));
	assert_int_equal(rxp_defrag_queues_for_mem(1ull << 40), RXP_DEFRAG_QUEUES_MAX);
}

static void test_pkt_from_bytes(void **state)
{
	struct rxp_pktpool *pp = dt_pool();
	uint8_t b[3000];
	struct rxp_pkt *p;

	(void)state;
	rxpt_fill(b, sizeof(b), 7);
	p = rxp_pkt_from_bytes(pp, b, 100);
	assert_non_null(p);
	assert_int_equal(p->len, 100);
	assert_true(rxp_pkt_is_linear(p));
	assert_true(rxp_pkt_headroom(p) >= RXP_HEADROOM_DEFAULT);
	assert_memory_equal(p->data, b, 100);
	rxp_pkt_consume(p);
	p = rxp_pkt_from_bytes(pp, b, sizeof(b)); /* past a small buffer */
	assert_non_null(p);
	assert_int_equal(p->len, sizeof(b));
	assert_memory_equal(p->data, b, sizeof(b));
	rxp_pkt_consume(p);
	p = rxp_pkt_from_bytes(pp, NULL, 0);
	assert_non_null(p);
	assert_int_equal(p->len, 0);
	rxp_pkt_consume(p);
	errno = 0;
	assert_null(rxp_pkt_from_bytes(pp, b, 1u << 20)); /* larger than any buffer */
	assert_int_equal(errno, ENOMEM);
	errno = 0;
	assert_null(rxp_pkt_from_bytes(NULL, b, 10));
	assert_int_equal(errno, EINVAL);
	rxpt_pktpool_teardown(pp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pool_follows_cap),
		cmocka_unit_test(test_queues_for_mem),
		cmocka_unit_test(test_pkt_from_bytes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
