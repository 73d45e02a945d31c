/*
 * Structure-aware reassembly under pressure: the input describes datagrams
 * and how they are cut, ordered, duplicated, overlapped, lost, mutated and
 * timed (tests/fuzz/reasm_plan.h), and runs them through one table whose
 * policy, forward mode, pressure policy, max_dist, hooks, memory cap (1 KiB
 * to 1 MiB) and queue cap (1 to 64) the input also picks, so eviction,
 * refusal, max_dist flushes and timeouts run on most inputs.
 *
 * Checks, besides no crash and no leak: a packet that is not a fragment
 * comes back untouched; every datagram that comes back has a well-formed
 * header (IPv4: no offset or MF, total length, checksum; IPv6: payload
 * length, no fragment header left) and its payload is made of its pattern's
 * bytes: each byte is the pattern's or the other pattern's at that offset,
 * and exactly the pattern when no fragment of that pattern carried other
 * bytes in this input; the table never holds more queues than its cap, and
 * with eviction never more memory; emptied at the end it holds nothing.
 *
 * Tables are kept per configuration (up to NCACHE, by hash, a newer one
 * replacing an older in its place) and emptied after each input; an empty
 * table behaves as a fresh one (see fuzz_defrag.c).
 */
#include "reasm_plan.h"

#define NCACHE 512 /* tables, by configuration: a corpus holds hundreds */

struct cached {
	bool used;
	uint32_t key;
	struct rxp_defrag_table *t;
	struct rxp_defrag_config c;
};

static struct cached cache[NCACHE];
static bool dirty[RP_NPAT]; /* a fragment of this pattern carried alt bytes */
static uint8_t buf[65536 + 256];

static void on_discard(void *arg, const struct rxp_pkt *pkt)
{
	uint8_t v;

	(void)arg;
	/* as received: data at the IP header */
	FZ_CHECK(pkt->len >= 1 && !rxp_pkt_copy_bits(pkt, 0, &v, 1));
	FZ_CHECK((v >> 4) == 4 || (v >> 4) == 6);
}

static void on_overlap(void *arg, const struct rxp_defrag_overlap *ov)
{
	(void)arg;
	FZ_CHECK(ov->family == 4 || ov->family == 6);
	FZ_CHECK(ov->start < ov->end && ov->end <= 65535);
}

static struct rxp_defrag_table *table_for(const struct rp_config *rc, uint32_t key,
					  struct rxp_defrag_config *out)
{
	struct cached *c = &cache[(key * 2654435761u) >> 23];
	struct rxp_defrag_config dc = rp_defrag_config(rc);

	/* caps small enough for pressure; a table cheap to make */
	dc.mem_limit = rc->mem_limit ? rc->mem_limit : 64 * 1024;
	if (dc.mem_limit > (1u << 20))
		dc.mem_limit = 1u << 20;
	dc.max_queues = rc->max_queues ? rc->max_queues : 64;
	if (rc->discard_cb)
		dc.discard_cb = on_discard;
	if (rc->overlap_cb)
		dc.overlap_cb = on_overlap;
	if (!c->used || c->key != key) {
		rxp_defrag_table_destroy(c->t);
		c->t = rxp_defrag_table_create(&dc);
		FZ_CHECK(c->t);
		c->used = true;
		c->key = key;
		c->c = dc;
	}
	*out = c->c;
	return c->t;
}

/* The IPv6 unfragmentable part of a result at r: a chain of hop-by-hop,
 * destination-options and routing headers that is not followed by a
 * fragment header. Returns the candidate payload offsets as a bit mask of
 * 8-byte steps (bit k: payload at 40 + 8k) where the chain could end. */
static __attribute__((noinline)) uint32_t fz_v6_ends(const uint8_t *h, uint32_t len)
{
	uint32_t pos = 40, mask = 1;
	uint8_t nh = h[6];

	for (int i = 0; i < 4 && pos + 2 <= len; i++) {
		if (nh != RXP_IPPROTO_HOPOPTS && nh != RXP_IPPROTO_DSTOPTS &&
		    nh != RXP_IPPROTO_ROUTING)
			break;
		nh = h[pos];
		pos += (h[pos + 1] + 1u) * 8u;
		if (pos > len || pos - 40 > RP_MAXEXT)
			break;
		mask |= 1u << ((pos - 40) / 8);
	}
	return mask;
}

/* The payload from off must be pattern k's bytes (exactly, when clean). */
static __attribute__((noinline)) bool fz_payload_ok(const uint8_t *p, uint32_t off, uint32_t len,
						    int k)
{
	const uint8_t *pl = rp_pat[k][0], *alt = rp_pat[k][1];

	if (len - off > 65536)
		return false;
	if (!dirty[k])
		return !memcmp(p + off, pl, len - off);
	for (uint32_t i = 0; i < len - off; i++)
		if (p[off + i] != pl[i] && p[off + i] != alt[i])
			return false;
	return true;
}

static __attribute__((noinline)) void fz_check_result(const struct rxp_pkt *r)
{
	const uint8_t *h = buf;

	FZ_CHECK(r->len >= 20 && r->len <= sizeof(buf));
	FZ_CHECK(!rxp_pkt_copy_bits(r, 0, buf, r->len));
	if ((h[0] >> 4) == 4) {
		const struct rxp_iphdr *ip = (const void *)h;
		uint32_t ihl = rxp_ip_hlen(ip), src = ntohl(ip->saddr) - 0x0a000001u;

		FZ_CHECK(ihl >= 20 && ihl <= r->len);
		FZ_CHECK(ntohs(ip->tot_len) == r->len);
		FZ_CHECK(!(ntohs(ip->frag_off) & (RXP_IP_MF | RXP_IP_OFFMASK)));
		FZ_CHECK(rxp_ip_csum(ip, ihl) == 0);
		FZ_CHECK(src < 4);
		FZ_CHECK(fz_payload_ok(h, ihl, r->len, rp_pattern(4, src, 0)));
	} else {
		const struct rxp_ipv6hdr *ip = (const void *)h;
		uint32_t ends, src = ip->saddr[15] - 1u;
		int k;
		bool ok = false;

		FZ_CHECK((h[0] >> 4) == 6 && r->len >= 40);
		FZ_CHECK(ntohs(ip->payload_len) + 40u == r->len);
		FZ_CHECK(src < 4);
		k = rp_pattern(6, src, ip->daddr[0] == 0xfe);
		ends = fz_v6_ends(h, r->len);
		for (uint32_t e = 0; e < 32 && !ok; e++)
			if ((ends >> e) & 1 && 40 + 8 * e <= r->len)
				ok = fz_payload_ok(h, 40 + 8 * e, r->len, k);
		FZ_CHECK(ok);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rxp_pktpool_config pc = {
		.name = "fzr", .n_pkts = 2048, .n_bufs = 2048, .n_large = 32};
	struct rxp_pktpool *pp = fz_pool(&pc);
	static struct rp_plan p;
	struct rxp_defrag_table *t;
	struct rxp_defrag_config dc;
	struct rxp_defrag_counters ct;
	enum rp_kind kind;
	struct rp_frag f;
	int twice;

	if (size < 3)
		return 0;
	rp_init(&p, data, size);
	t = table_for(&p.cfg, (uint32_t)data[0] << 8 | data[1], &dc);
	memset(dirty, 0, sizeof(dirty));
	/* the counters before each packet are those after the last one (or
	 * after a timer run): one read per packet */
	rxp_defrag_get_counters(t, &ct);
	while (rp_next(&p, &kind, &f, &twice)) {
		const struct rp_dgram *g = &p.d[f.d];

		if (kind == RP_TIME)
			continue;
		if (kind == RP_EXPIRE) {
			rxp_defrag_expire(t, p.now);
			rxp_defrag_get_counters(t, &ct);
			continue;
		}
		if (f.alt)
			dirty[rp_pattern(g->family, g->src, g->dst6)] = true;
		for (int n = 0; n <= twice; n++) {
			struct rxp_pkt *pk = rp_build(pp, g, &f), *r;
			uint64_t reqds, invalid, len;

			if (!pk)
				break;
			reqds = ct.ReasmReqds;
			invalid = ct.invalid;
			len = pk->len;
			r = rxp_defrag_zone(t, pk, g->zone, p.now);
			rxp_defrag_get_counters(t, &ct);
			if (ct.invalid != invalid) /* refused before queueing */
				FZ_CHECK(!r && ct.invalid == invalid + 1 && ct.ReasmReqds == reqds);
			else if (ct.ReasmReqds == reqds) /* not a fragment: untouched */
				FZ_CHECK(r == pk && r->len == len);
			else if (r)
				fz_check_result(r);
			rxp_pkt_consume(r);
			FZ_CHECK(ct.queues <= dc.max_queues);
			if (!dc.pressure)
				FZ_CHECK(ct.mem <= dc.mem_limit);
		}
	}
	rxp_defrag_expire(t, UINT64_MAX);
	rxp_defrag_get_counters(t, &ct);
	FZ_CHECK(ct.queues == 0 && ct.mem == 0);
	fz_pool_quiet(pp);
	return 0;
}
