/*
 * Structure-aware TIPC: the input describes messages, bundles (with inner
 * messages of any user, bundles of bundles, fragmenters inside, sizes and
 * headers broken at a chosen inner, wrong message counts, trailing bytes),
 * fragment chains of any message made by rxp_tipc_fragment (sent in order,
 * or with a fragment lost, repeated, swapped, retyped, a stray FIRST or a
 * link reset in the middle, or cut short), control messages and link
 * resets, each laid out linear, split into page fragments, or as slices of
 * one page. A model of the link (shared/reference/tipc.md's dispatch table
 * and rules B1-B5, R1-R8, written plainly here) says what must be
 * delivered, to which sink, with which bytes, and how many packets are
 * dropped; any difference traps. The sender is checked too: a bundle made
 * by rxp_tipc_bundle_add must be byte for byte the one written here, and
 * a message's fragments must carry its bytes in order, each within the
 * MTU, numbered from 1 and typed FIRST, FRAGMENT..., LAST.
 *
 * Input: one configuration byte (bit 0: a port-0 catch-all is bound; bit
 * 1: a node sink; bit 2: a control sink), then operations (op & 7):
 *   0 MSG    one message at the top level
 *   1 BUNDLE up to 8 inner messages, with a corruption (op >> 3 & 7)
 *   2 FRAG   a message (or a bundle, op bit 3) fragmented at an MTU, with
 *            a plan (op >> 4, 8 and up: in order)
 *   3 RESET  link reset
 *   4 LAYOUT how later packets are laid out
 * and the bytes each reads.
 */
#include "rxpath/tipc.h"
#include "fuzz.h"

#define MAXREC 1024
#define NS_USERS 16

static const uint8_t users[NS_USERS] = {0, 1, 2, 3, 8, 9, 11, 11, 7, 13, 5, 10, 4, 14, 15, 6};

struct rec {
	char kind; /* 'p' port, 'n' node, 'c' control */
	uint32_t len;
	uint64_t hash;
};

/* What the sinks got, and what the model expects, per operation. */
static struct rec got[MAXREC], want[MAXREC];
static unsigned ngot, nwant;
static uint64_t want_drops;

static __attribute__((noinline)) uint64_t fz_hash(const uint8_t *p, uint32_t n)
{
	uint64_t h = 0xcbf29ce484222325ull ^ n, w;
	uint32_t i = 0;

	for (; i + 8 <= n; i += 8) {
		memcpy(&w, p + i, 8);
		h = (h ^ w) * 0x100000001b3ull;
		h ^= h >> 29;
	}
	for (; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

static uint8_t pbuf[70000];

static void record(char kind, struct rxp_pkt *pkt)
{
	FZ_CHECK(pkt->len <= sizeof(pbuf) && !rxp_pkt_copy_bits(pkt, 0, pbuf, pkt->len));
	/* what a sink gets is a valid message of exactly its size */
	FZ_CHECK(rxp_tipc_valid(pbuf, pkt->len) && rxp_tipc_size(pbuf) == pkt->len);
	if (ngot < MAXREC)
		got[ngot++] = (struct rec){kind, pkt->len, fz_hash(pbuf, pkt->len)};
	rxp_pkt_consume(pkt);
}

static void port_sink(void *arg, struct rxp_pkt *pkt)
{
	(void)arg;
	record('p', pkt);
}

static void node_sink(void *arg, struct rxp_pkt *pkt)
{
	(void)arg;
	record('n', pkt);
}

static void ctrl_sink(void *arg, struct rxp_pkt *pkt)
{
	(void)arg;
	record('c', pkt);
}

/* ---- the model of the link ------------------------------------------------ */

/* Not inlined, so the fuzz build leaves the model out of coverage by name
 * (tm_*, tests/fuzz/coverage-ignore.txt). */
#define TM_FN __attribute__((noinline))

struct model {
	bool any, node, ctrl;
	bool active; /* a message is being reassembled */
	uint32_t next; /* fragm_no expected */
	uint32_t acc_len;
	uint8_t acc[70000];
};

static struct model M;

static TM_FN void tm_expect(char kind, const uint8_t *m, uint32_t len)
{
	if (nwant < MAXREC)
		want[nwant++] = (struct rec){kind, len, fz_hash(m, len)};
}

static TM_FN bool tm_valid(const uint8_t *m, uint32_t len)
{
	unsigned hsize;
	uint32_t size;

	if (len < 24 || rxp_tipc_bits(m, 0, 31, 29) != RXP_TIPC_VERSION)
		return false;
	hsize = rxp_tipc_hsize(m);
	size = rxp_tipc_size(m);
	return hsize >= 24 && hsize <= len && size >= hsize && size <= len &&
	       size - hsize <= RXP_TIPC_MAX_USER_MSG_SIZE;
}

static TM_FN bool tm_data_user(unsigned u)
{
	return u <= 3 || u == 8 || u == 9;
}

static TM_FN void tm_port(const uint8_t *m, uint32_t len)
{
	uint32_t port = rxp_tipc_word(m, 5);

	if (port == 5 || port == 7 || M.any)
		tm_expect('p', m, len);
	else
		want_drops++;
}

static TM_FN void tm_frag(const uint8_t *m, uint32_t len);
static TM_FN void tm_bundle(const uint8_t *m, uint32_t len);

/* dispatch() of a valid message of exactly len bytes; top: at the top
 * level (else inside a bundle or out of reassembly). */
static TM_FN void tm_dispatch(const uint8_t *m, uint32_t len, bool top)
{
	unsigned u = rxp_tipc_user(m);

	if (tm_data_user(u)) {
		tm_port(m, len);
		return;
	}
	if (u == RXP_TIPC_NAME_DISTRIBUTOR) {
		if (M.node)
			tm_expect('n', m, len);
		else
			want_drops++;
		return;
	}
	if (!top) {
		want_drops++; /* nested: bundle, fragment, tunnel, control */
		return;
	}
	if (u == RXP_TIPC_MSG_BUNDLER)
		tm_bundle(m, len);
	else if (u == RXP_TIPC_MSG_FRAGMENTER)
		tm_frag(m, len);
	else if ((u == 5 || u == 7 || u == 13) && M.ctrl)
		tm_expect('c', m, len);
	else
		want_drops++;
}

/* A top-level packet of len bytes (trailing bytes allowed). */
static TM_FN void tm_rcv(const uint8_t *m, uint32_t len)
{
	if (!tm_valid(m, len)) {
		want_drops++;
		return;
	}
	tm_dispatch(m, rxp_tipc_size(m), true);
}

static TM_FN void tm_bundle(const uint8_t *m, uint32_t len)
{
	uint32_t pos = rxp_tipc_hsize(m);

	while (len - pos >= 24) {
		uint32_t isz = rxp_tipc_size(m + pos);

		if (isz < 24 || isz > len - pos) {
			want_drops++; /* the bundle */
			return;
		}
		if (!tm_valid(m + pos, isz)) {
			want_drops += 2; /* the inner message and the bundle */
			return;
		}
		tm_dispatch(m + pos, isz, false);
		pos += (isz + 3) & ~3u;
		if (pos > len)
			pos = len;
	}
}

static TM_FN void tm_reasm_free(void)
{
	if (M.active)
		want_drops++;
	M.active = false;
}

/* A valid top-level fragment of len bytes (len == size). */
static TM_FN void tm_frag(const uint8_t *m, uint32_t len)
{
	unsigned hsize = rxp_tipc_hsize(m), type = rxp_tipc_type(m);
	uint32_t no = rxp_tipc_word(m, 4) >> 16, n = len - hsize;
	const uint8_t *d = m + hsize;

	if (type > RXP_TIPC_LAST_FRAGMENT) {
		tm_reasm_free();
		want_drops++;
		return;
	}
	if (type == RXP_TIPC_FIRST_FRAGMENT) {
		if (M.active || no != 1 || n < 24 ||
		    rxp_tipc_bits(d, 0, 31, 29) != RXP_TIPC_VERSION || rxp_tipc_hsize(d) < 24 ||
		    rxp_tipc_hsize(d) > n) {
			tm_reasm_free();
			want_drops++;
			return;
		}
		M.active = true;
		M.next = 2;
		memcpy(M.acc, d, n);
		M.acc_len = n;
		return;
	}
	if (!M.active || no != M.next || n > RXP_TIPC_MAX_MSG_SIZE - M.acc_len) {
		tm_reasm_free();
		want_drops++;
		return;
	}
	memcpy(M.acc + M.acc_len, d, n);
	M.acc_len += n;
	if (type == RXP_TIPC_FRAGMENT) {
		if (++M.next == 0x10000) {
			M.active = false;
			want_drops++;
		}
		return;
	}
	M.active = false;
	if (!tm_valid(M.acc, M.acc_len)) {
		want_drops++;
		return;
	}
	tm_dispatch(M.acc, rxp_tipc_size(M.acc), false);
}

/* ---- building ------------------------------------------------------------- */

static struct rxp_pktpool *pp;
static struct rxp_tipc_link L;
static unsigned layout; /* 0 linear, 1 page frags, 2 slices of one page, 3 short head */
static uint32_t seq;
/* Work done by this input: bytes sent plus WORK_PKT per packet made. An
 * input stops taking operations once it has done WORK_BUDGET (the one
 * that crosses it runs whole: a chain of 500 fragments or a 64 KiB
 * message still can): time goes with packets, and 64 operations of
 * chains made one input cost as much as fifty short ones. */
static uint32_t work;
#define WORK_PKT 1024
#define WORK_BUDGET 32768

/* A packet of these bytes in the current layout. */
static struct rxp_pkt *mk(const uint8_t *b, uint32_t len)
{
	uint32_t head = len, off;
	struct rxp_pkt *p;
	struct rxp_page *arena = NULL;
	uint32_t aoff = 0;

	work += len + WORK_PKT;
	if (layout == 1 || layout == 2)
		head = len < 40 ? len : 40;
	else if (layout == 3)
		head = len < 8 ? len : 8;
	p = rxp_pkt_alloc(pp, head);
	FZ_CHECK(p);
	memcpy(rxp_pkt_put(p, head), b, head);
	if (layout == 2 && head < len) {
		arena = rxpt_page_new(len - head);
		memcpy(arena->addr, b + head, len - head);
	}
	for (off = head; off < len;) {
		uint32_t n = len - off;
		struct rxp_page *pg;
		uint32_t po = 0;

		if (p->nr_frags < RXP_MAX_FRAGS - 1 && n > 97)
			n = 97;
		if (arena) {
			pg = arena;
			po = aoff;
			aoff += n;
			if (off + n < len)
				rxp_page_get(arena);
		} else {
			pg = rxpt_page_new(n);
			memcpy(pg->addr, b + off, n);
		}
		FZ_CHECK(!rxp_pkt_add_frag(p, pg, po, n, n));
		off += n;
	}
	return p;
}

/* Payload bytes: a pattern shifted by the message's sequence number. */
static __attribute__((noinline)) void fz_fill(uint8_t *b, uint32_t len, uint32_t seed)
{
	static uint8_t pat[65536 + 256];

	if (!pat[1]) {
		for (uint32_t i = 0; i < sizeof(pat); i++)
			pat[i] = (uint8_t)(i * 131);
	}
	memcpy(b, pat + (seed & 255), len);
}

/* A message into b from a description; returns its length (size field;
 * *trail: bytes written past it). */
static uint32_t msg_desc(struct fz_in *in, uint8_t *b, uint32_t room, uint32_t *trail)
{
	uint32_t b0 = fz_u8(in), raw = fz_u16(in), b3 = fz_u8(in), b4 = fz_u8(in);
	unsigned user = users[b0 & 15], hsize = 24 + 4 * ((b0 >> 4) % 10);
	uint32_t sel = raw >> 13, v = raw & 0x1fff, len, port;

	len = sel < 5 ? v & 127 : sel < 7 ? v & 2047 : v * 8;
	if (hsize + len + 8 > room)
		len = room - hsize - 8;
	if (hsize + len > 65000)
		len = 65000 - hsize;
	port = b3 == 0 ? 5 : b3 == 1 ? 7 : b3 == 2 ? 99 : b3;
	rxp_tipc_hdr_init(b, user, b4 & 7, hsize, 0x1001001, 0x1001002);
	rxp_tipc_set(b, RXP_TIPC_F_SIZE, hsize + len);
	if (user == RXP_TIPC_MSG_FRAGMENTER)
		rxp_tipc_set(b, RXP_TIPC_F_FRAGM_NO, 1 + (b4 >> 4));
	else
		rxp_tipc_set_word(b, 5, port);
	fz_fill(b + hsize, len, ++seq);
	*trail = (b4 & 8) ? 5 : 0;
	memset(b + hsize + len, 0xee, *trail);
	return hsize + len;
}

static uint8_t mb[70000], bb[70000];

/* A bundle in bb: up to 8 inner messages, broken as corrupt says at inner
 * k: 1 a wrong msgcnt, 2 a size below a header, 3 a size past the end,
 * 4 a bad version, 5 the outer size cut inside inner k, 6 trailing bytes
 * after the last, 7 an inner bundle. Returns its length. With no
 * corruption and only users rxp_tipc_bundle_add takes, the same bundle is
 * also made with rxp_tipc_bundle_add and must be byte for byte this one. */
static uint32_t bundle_desc(struct fz_in *in, unsigned corrupt)
{
	uint32_t n = 1 + fz_u8(in) % 8, k = fz_below(in, n), pos = 40, cnt = 0, imp = 0;
	uint32_t ends[8];
	bool addable = !corrupt;

	rxp_tipc_hdr_init(bb, RXP_TIPC_MSG_BUNDLER, 0, 40, 0x1001001, 0x1001002);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t trail, len, aligned = (pos + 3) & ~3u;
		unsigned u;

		/* at most 65000 bytes: rxp_tipc_bundle_add's MTU is 65535 */
		if (aligned + 40 + 60 + 16 > 65000)
			break;
		memset(bb + pos, 0, aligned - pos);
		if (corrupt == 7 && i == k) {
			/* an inner bundle holding one message */
			rxp_tipc_hdr_init(bb + aligned, RXP_TIPC_MSG_BUNDLER, 0, 40, 1, 2);
			uint32_t room = 65000 - aligned - 40;

			len = msg_desc(in, bb + aligned + 40, room < 2048 ? room : 2048, &trail) +
			      40;
			rxp_tipc_set(bb + aligned, RXP_TIPC_F_SIZE, len);
			rxp_tipc_set(bb + aligned, RXP_TIPC_F_MSGCNT, 1);
		} else {
			len = msg_desc(in, bb + aligned, 65000 - aligned, &trail);
		}
		u = rxp_tipc_user(bb + aligned);
		if (u == RXP_TIPC_MSG_FRAGMENTER || u == RXP_TIPC_TUNNEL_PROTOCOL ||
		    u == RXP_TIPC_BCAST_PROTOCOL || u == RXP_TIPC_MSG_BUNDLER)
			addable = false;
		if (!cnt)
			imp = u < 4 ? u : 4;
		ends[cnt++] = aligned + len;
		pos = aligned + len;
	}
	rxp_tipc_set(bb, RXP_TIPC_F_MSGCNT, cnt);
	rxp_tipc_set_word(bb, 9, rxp_tipc_word(bb, 9) | (imp & 7));
	if (k >= cnt)
		k = cnt - 1;
	{
		uint32_t start = k ? (ends[k - 1] + 3) & ~3u : 40;

		switch (corrupt) {
		case 1:
			rxp_tipc_set(bb, RXP_TIPC_F_MSGCNT, cnt + 1);
			break;
		case 2:
			rxp_tipc_set(bb + start, RXP_TIPC_F_SIZE, 20);
			break;
		case 3:
			rxp_tipc_set(bb + start, RXP_TIPC_F_SIZE, pos - start + 4);
			break;
		case 4:
			bb[start] = (uint8_t)((bb[start] & 0x1f) | 3 << 5);
			break;
		case 5:
			pos = start + (ends[k] - start) / 2;
			break;
		case 6:
			memset(bb + pos, 0x11, 23);
			rxp_tipc_set(bb, RXP_TIPC_F_SIZE, pos + 23);
			return pos + 23;
		default:
			break;
		}
	}
	rxp_tipc_set(bb, RXP_TIPC_F_SIZE, pos);
	if (addable) {
		struct rxp_pkt *b = rxp_tipc_bundle_new(pp, 65535, 0x1001001, 0x1001002);
		uint32_t p2 = 40;

		FZ_CHECK(b);
		for (uint32_t i = 0; i < cnt; i++) {
			uint32_t at = (p2 + 3) & ~3u;
			struct rxp_pkt *m = mk(bb + at, ends[i] - at);

			FZ_CHECK(rxp_tipc_bundle_add(b, m, 65535) == 0);
			rxp_pkt_consume(m);
			p2 = ends[i];
		}
		FZ_CHECK(b->len == pos && !rxp_pkt_copy_bits(b, 0, mb, pos));
		FZ_CHECK(!memcmp(mb, bb, pos));
		rxp_pkt_consume(b);
	}
	return pos;
}

static void send(const uint8_t *b, uint32_t len)
{
	tm_rcv(b, len);
	rxp_tipc_link_rcv(&L, mk(b, len));
}

/* The sender: FIRST.. LAST numbered from 1 carrying the message (a lone
 * fragment: the message itself). A helper (fz_*, not traced): it checks
 * every fragment of every chain, and what it compares is the sender's
 * output. */
static __attribute__((noinline)) void fz_check_frags(uint8_t (*fb)[4100], const uint32_t *flen,
						     uint32_t n, const uint8_t *src, uint32_t len)
{
	uint32_t off = 0;

	if (n == 1) {
		FZ_CHECK(flen[0] == len && !memcmp(fb[0], src, len));
		return;
	}
	for (uint32_t i = 0; i < n; i++) {
		unsigned type = i == 0 ? 0 : i + 1 == n ? 2 : 1;

		FZ_CHECK(rxp_tipc_valid(fb[i], flen[i]) && rxp_tipc_size(fb[i]) == flen[i]);
		FZ_CHECK(rxp_tipc_user(fb[i]) == RXP_TIPC_MSG_FRAGMENTER);
		FZ_CHECK(rxp_tipc_type(fb[i]) == type);
		FZ_CHECK(rxp_tipc_word(fb[i], 4) >> 16 == i + 1);
		FZ_CHECK(!memcmp(fb[i] + 40, src + off, flen[i] - 40));
		off += flen[i] - 40;
	}
	FZ_CHECK(off == len);
}

/* What the sinks got is what the model expects, and the drops match. */
static __attribute__((noinline)) void fz_check_op(uint64_t drops)
{
	FZ_CHECK(ngot == nwant);
	for (unsigned i = 0; i < ngot; i++)
		FZ_CHECK(got[i].kind == want[i].kind && got[i].len == want[i].len &&
			 got[i].hash == want[i].hash);
	FZ_CHECK(drops == want_drops);
}

static struct rxp_pkt *fr[512];

/* A message (or bundle) fragmented at an MTU, sent by plan: 0 in order,
 * 1 fragment k lost, 2 repeated, 3 swapped with the next, 4 retyped 3,
 * 5 a stray FIRST before it, 6 a link reset before it, 7 the rest cut. */
static void frag_op(struct fz_in *in, bool bundle, unsigned plan)
{
	uint32_t trail, len = bundle ? bundle_desc(in, 0) : msg_desc(in, mb, sizeof(mb), &trail);
	const uint8_t *src = bundle ? bb : mb;
	uint32_t m = fz_u16(in), mtu, n = 0, k;
	struct rxp_pkt_queue q;
	struct rxp_pkt *msg, *f;
	static uint8_t fb[512][4100];
	uint32_t flen[512];
	int rc;

	/* One chain in 16 at any MTU from 45 to 4044, the rest in 2 to 9
	 * fragments, a quarter of them in 10 to 32 (past RXP_MAX_FRAGS
	 * pieces), or as few as an MTU of 4044 allows. Never more than 64
	 * fragments (a lower MTU is raised), but for one chain in 256: up to
	 * 500, which only a long chain of tiny pieces reaches (a reassembled
	 * bundle past RXP_MAX_FRAGS pieces, the pool's stash). Time goes with
	 * fragments; up to 500 in every chain at a low MTU, they were nine
	 * tenths of all fragments made. */
	if (m < 0x1000) {
		mtu = 45 + m % 4000;
	} else {
		uint32_t nf = (m >> 3 & 3) == 3 ? 10 + (m >> 5 & 15) + (m & 7) : 2 + (m & 7);
		uint32_t per = (len + nf - 1) / nf;

		mtu = per > 4000 ? 4044 : 45 + per;
	}
	if (len / (mtu - 44) > (m < 0x100 ? 500u : 64u))
		mtu = len / (m < 0x100 ? 500 : 64) + 48;
	msg = rxp_pkt_alloc(pp, len);
	FZ_CHECK(msg);
	memcpy(rxp_pkt_put(msg, len), src, len);
	rxp_pkt_queue_init(&q);
	rc = rxp_tipc_fragment(pp, msg, mtu, &q);
	FZ_CHECK(rc > 0 && (uint32_t)rc == q.len && rc <= 512);
	work += len + (uint32_t)rc * WORK_PKT;
	while ((f = rxp_pkt_dequeue(&q))) {
		FZ_CHECK(f->len <= mtu && f->len <= sizeof(fb[0]));
		FZ_CHECK(!rxp_pkt_copy_bits(f, 0, fb[n], f->len));
		flen[n] = f->len;
		fr[n++] = f;
	}
	fz_check_frags(fb, flen, n, src, len);
	k = fz_below(in, n);
	for (uint32_t i = 0; i < n; i++) {
		struct rxp_pkt *p = fr[i];
		uint32_t j = i;

		fr[i] = NULL;
		if (i == k) {
			if (plan == 1) {
				rxp_pkt_consume(p);
				continue;
			}
			if (plan == 4) {
				rxp_tipc_set_bits(fb[i], 1, 31, 29, 3);
				rxp_pkt_consume(p);
				p = mk(fb[i], flen[i]);
			}
			if (plan == 5) {
				uint8_t first[64];

				rxp_tipc_hdr_init(first, RXP_TIPC_MSG_FRAGMENTER, 0, 40, 1, 2);
				rxp_tipc_set(first, RXP_TIPC_F_SIZE, 64);
				rxp_tipc_set(first, RXP_TIPC_F_FRAGM_NO, 1);
				rxp_tipc_hdr_init(first + 40, 0, 0, 24, 1, 2);
				rxp_tipc_set(first + 40, RXP_TIPC_F_SIZE, 24);
				send(first, 64);
			}
			if (plan == 6) {
				tm_reasm_free();
				rxp_tipc_link_reset(&L);
			}
			if (plan == 7) {
				for (; i < n; i++) {
					rxp_pkt_consume(i == k ? p : fr[i]);
					fr[i] = NULL;
				}
				break;
			}
			if (plan == 3 && i + 1 < n) {
				/* the next one first */
				tm_rcv(fb[i + 1], flen[i + 1]);
				rxp_tipc_link_rcv(&L, fr[i + 1]);
				fr[i + 1] = p;
				continue;
			}
		}
		if (plan == 3 && i == k + 1 && i < n)
			j = k; /* the swapped one: its own bytes */
		tm_rcv(fb[j], flen[j]);
		rxp_tipc_link_rcv(&L, p);
		if (plan == 2 && i == k) {
			tm_rcv(fb[i], flen[i]);
			rxp_tipc_link_rcv(&L, mk(fb[i], flen[i]));
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rxp_pktpool_config pc = {
		.name = "fzt", .n_pkts = 8192, .n_bufs = 8192, .n_large = 64};
	struct fz_in in = {data, size};
	uint32_t cfg = fz_u8(&in);
	int ops = 0;

	pp = fz_pool(&pc);
	work = 0;
	memset(&M, 0, offsetof(struct model, acc));
	M.any = cfg & 1;
	M.node = cfg & 2;
	M.ctrl = cfg & 4;
	layout = 0;
	rxp_tipc_link_init(&L, pp);
	FZ_CHECK(!rxp_tipc_link_bind(&L, 5, port_sink, NULL));
	FZ_CHECK(!rxp_tipc_link_bind(&L, 7, port_sink, NULL));
	if (M.any)
		FZ_CHECK(!rxp_tipc_link_bind(&L, RXP_TIPC_PORT_ANY, port_sink, NULL));
	if (M.node)
		rxp_tipc_link_set_node_sink(&L, node_sink, NULL);
	if (M.ctrl)
		rxp_tipc_link_set_ctrl(&L, ctrl_sink, NULL);
	while (in.n && ops++ < 64 && work < WORK_BUDGET) {
		uint32_t op = fz_u8(&in), trail, len;
		uint64_t drops0 = L.st.drops;

		ngot = nwant = 0;
		want_drops = 0;
		switch (op & 7) {
		case 0:
			len = msg_desc(&in, mb, sizeof(mb), &trail);
			send(mb, len + trail);
			break;
		case 1:
			len = bundle_desc(&in, (op >> 3) & 7);
			send(bb, len);
			break;
		case 2:
			/* half the chains go in order */
			frag_op(&in, op & 8, op >> 7 ? 0 : op >> 4 & 7);
			break;
		case 3:
			tm_reasm_free();
			rxp_tipc_link_reset(&L);
			break;
		default:
			layout = fz_u8(&in) & 3;
			break;
		}
		fz_check_op(L.st.drops - drops0);
	}
	rxp_tipc_link_reset(&L);
	fz_pool_quiet(pp);
	return 0;
}
