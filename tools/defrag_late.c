/*
 * Late duplicates (see defrag_late.h): a ring of the last DFR_LATE_SLOTS
 * completing fragments, found by key through a direct-mapped index (a
 * collision there forgets the older one: a late duplicate then goes to the
 * table as before).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "defrag_late.h"
#include "rxpath/decap.h"
#include "rxpath/wire.h"

#define LATE_BUCKETS (2 * DFR_LATE_SLOTS) /* a power of two */
/* An index entry is slot + 1 in its low LATE_SLOT_BITS, and above them a
 * tag: more bits of the key's hash. A fragment whose tag differs is no
 * late duplicate, found without reading the slot. Half the buckets are in
 * use, so half of all fragments used to read a slot of another datagram
 * (a cache miss): on the bench capture dfr_late_match's reads of the index
 * and the slot were about 30% of dfr_frame_process's samples (perf). */
#define LATE_SLOT_BITS 11u
#define LATE_SLOT_MASK ((1u << LATE_SLOT_BITS) - 1)
_Static_assert(DFR_LATE_SLOTS <= LATE_SLOT_MASK, "slot + 1 fits below the tag");

struct dfr_late_slot {
	struct dfr_late_key k;
	uint32_t off, len;
	bool mf, used;
	uint32_t bucket;
	uint64_t ts_ns;
	uint64_t sum; /* of the payload (sum_of), when at is NULL */
	const uint8_t *at; /* the payload, where it stays (dfr_late_frag.stable) */
	uint64_t dpos; /* the datagram's payload: at ring byte dpos % DFR_LATE_RING */
	uint32_t dlen; /* its length, 0 when not kept */
};

struct dfr_late {
	uint8_t *ring; /* DFR_LATE_RING bytes of payloads, made on first use */
	uint64_t w; /* bytes written to the ring (and skipped at its end) */
	uint64_t noted; /* datagrams noted */
	uint64_t seen; /* late duplicates found */
	uint32_t next; /* the slot written next */
	uint32_t index[LATE_BUCKETS]; /* tag | slot + 1 (LATE_SLOT_BITS), 0 for none */
	struct dfr_late_slot slot[DFR_LATE_SLOTS];
};

static uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The fragment at ip: 0, or -1 for a packet that is not one or does not
 * parse. */
static int parse(uint32_t zone, const uint8_t *ip, uint32_t len, struct dfr_late_frag *f)
{
	memset(&f->k, 0, sizeof(f->k));
	f->k.zone = zone;
	if (len >= RXP_IPV4_HLEN && (ip[0] >> 4) == 4) {
		uint32_t ihl = (ip[0] & 0x0f) * 4u;
		uint16_t fo = rd16(ip + 6);

		if (ihl < RXP_IPV4_HLEN || ihl > len || !(fo & (RXP_IP_MF | RXP_IP_OFFMASK)))
			return -1;
		f->k.family = 4;
		f->k.proto = ip[9];
		f->k.id = rd16(ip + 4);
		memcpy(f->k.src, ip + 12, 4);
		memcpy(f->k.dst, ip + 16, 4);
		f->off = (fo & RXP_IP_OFFMASK) * 8u;
		f->mf = fo & RXP_IP_MF;
		f->data = ip + ihl;
		f->len = len - ihl;
		return 0;
	}
	if (len >= RXP_IPV6_HLEN && (ip[0] >> 4) == 6) {
		/* where rxp_decap_ip_info found it a fragment */
		uint32_t pos = rxp_decap_ipv6_frag_off(ip, len);
		uint16_t fo;

		if (!pos || pos + RXP_IPV6_FRAGHDR_LEN > len)
			return -1;
		fo = rd16(ip + pos + 2);
		f->k.family = 6;
		f->k.id = rd32(ip + pos + 4);
		memcpy(f->k.src, ip + 8, 16);
		memcpy(f->k.dst, ip + 24, 16);
		f->off = fo & RXP_IP6_OFFMASK;
		f->mf = fo & RXP_IP6_MF;
		f->data = ip + pos + RXP_IPV6_FRAGHDR_LEN;
		f->len = len - pos - RXP_IPV6_FRAGHDR_LEN;
		f->unfrag = pos;
		return 0;
	}
	return -1;
}

/* A 64-bit hash of the n bytes at p: two CRC-32C lanes (SSE4.2, one
 * instruction per 8 bytes: the completing fragment's payload is hashed for
 * every datagram, 1,360 bytes about 0.1 us) where the CPU has it, else a
 * multiply-xor over 8-byte words (about 1.2 instructions a byte). Not
 * keyed: a match needs the key, place and length equal too, and payloads
 * made to collide only lose the second copy of a fragment. */
#if defined(__x86_64__) && defined(__GNUC__)
#include <nmmintrin.h>

__attribute__((target("sse4.2"))) static uint64_t sum_crc(const uint8_t *p, uint32_t n)
{
	uint64_t a = 0x6a09e667u ^ n, b = 0xbb67ae85u, w;
	uint32_t i = 0;

	for (; i + 16 <= n; i += 16) {
		memcpy(&w, p + i, 8);
		a = _mm_crc32_u64(a, w);
		memcpy(&w, p + i + 8, 8);
		b = _mm_crc32_u64(b, w);
	}
	for (; i < n; i++)
		a = _mm_crc32_u8((uint32_t)a, p[i]);
	return a << 32 | (uint32_t)b;
}
#endif

static uint64_t sum_mix(const uint8_t *p, uint32_t n)
{
	uint64_t a = n, w;
	uint32_t i = 0;

	for (; i + 8 <= n; i += 8) {
		memcpy(&w, p + i, 8);
		a = (a ^ w) * 0x9fb21c651e98df25ull;
		a ^= a >> 29;
	}
	for (; i < n; i++)
		a = (a ^ p[i]) * 0x100000001b3ull;
	return a;
}

static uint64_t sum_of(const uint8_t *p, uint32_t n)
{
#if defined(__x86_64__) && defined(__GNUC__)
	static int crc = -1;

	if (crc < 0)
		crc = __builtin_cpu_supports("sse4.2");
	if (crc)
		return sum_crc(p, n);
#endif
	return sum_mix(p, n);
}

/* The key's bucket in the index, with its tag (the bits above
 * LATE_SLOT_BITS) in *tag. */
static uint32_t bucket_of(const struct dfr_late_key *k, uint32_t *tag)
{
	uint64_t a, b, c;

	memcpy(&a, k->src + 8, 8); /* IPv4 addresses are in src[0..4) */
	memcpy(&b, k->src, 8);
	memcpy(&c, k->dst, 8);
	a ^= b * 0x9e3779b97f4a7c15ull ^ c * 0xc2b2ae3d27d4eb4full;
	a ^= ((uint64_t)k->id << 32 | k->zone) * 0x165667b19e3779f9ull;
	a ^= (uint64_t)k->proto << 8 | k->family;
	a *= 0xff51afd7ed558ccdull;
	*tag = (uint32_t)(a >> 8) & ~LATE_SLOT_MASK;
	return (uint32_t)(a >> 40) & (LATE_BUCKETS - 1);
}

struct dfr_late *dfr_late_create(void)
{
	struct dfr_late *l = calloc(1, sizeof(*l));

	if (!l)
		errno = ENOMEM;
	return l;
}

void dfr_late_destroy(struct dfr_late *l)
{
	if (l)
		free(l->ring);
	free(l);
}

void dfr_late_reset(struct dfr_late *l)
{
	uint8_t *ring = l->ring;

	memset(l, 0, sizeof(*l));
	l->ring = ring;
}

/* Keep dgram's payload (behind its IP header, and for IPv6 the part in
 * front of the fragment header that every fragment carries) for slot s:
 * written whole at the ring's position w, or from its start when it would
 * run past the end. */
static void keep_payload(struct dfr_late *l, struct dfr_late_slot *s, const struct dfr_late_frag *f,
			 const struct rxp_pkt *dgram)
{
	uint8_t b[1];
	const uint8_t *ip = rxp_pkt_header_pointer(dgram, 0, 1, b);
	uint32_t hdr, n, at;

	if (!ip) /* (s->dlen is 0: dfr_late_note) */
		return;
	hdr = f->k.family == 4 ? (ip[0] & 0x0fu) * 4u : f->unfrag;
	/* (an IPv6 datagram's part in front is its first fragment's: where the
	 * completing one is the last, its end must be the datagram's) */
	if (hdr >= dgram->len || dgram->len - hdr > DFR_LATE_RING ||
	    (!f->mf && dgram->len - hdr != f->off + f->len))
		return;
	n = dgram->len - hdr;
	if (!l->ring && !(l->ring = malloc(DFR_LATE_RING)))
		return;
	at = (uint32_t)(l->w % DFR_LATE_RING);
	if (at + n > DFR_LATE_RING)
		l->w += DFR_LATE_RING - at; /* skip the end */
	if (rxp_pkt_copy_bits(dgram, hdr, l->ring + l->w % DFR_LATE_RING, n))
		return;
	s->dpos = l->w;
	s->dlen = n;
	l->w += n;
}

void dfr_late_note(struct dfr_late *l, const struct dfr_late_frag *f, const struct rxp_pkt *dgram,
		   uint64_t ts_ns)
{
	struct dfr_late_slot *s = &l->slot[l->next];

	if (!f->ok)
		return;
	if (s->used && (l->index[s->bucket] & LATE_SLOT_MASK) == l->next + 1)
		l->index[s->bucket] = 0;
	s->k = f->k;
	s->off = f->off;
	s->len = f->len;
	s->mf = f->mf;
	s->used = true;
	s->bucket = f->bucket;
	s->ts_ns = ts_ns;
	/* Hashing a completing fragment was a DRAM read of its payload per
	 * datagram on a mapped input, 12% of the main thread's time on the
	 * bench capture; where its bytes stay, they are compared instead,
	 * only when a fragment with its key comes again. */
	s->at = f->stable ? f->data : NULL;
	s->sum = s->at ? 0 : sum_of(f->data, f->len);
	s->dlen = 0;
	if (l->noted++ < DFR_LATE_PROBE || l->seen)
		keep_payload(l, s, f, dgram);
	l->index[f->bucket] = f->tag | (l->next + 1);
	l->next = (l->next + 1) % DFR_LATE_SLOTS;
}

bool dfr_late_match(struct dfr_late *l, uint32_t zone, const uint8_t *ip, uint32_t len,
		    uint64_t ts_ns, bool stable, struct dfr_late_frag *f)
{
	const struct dfr_late_slot *s;
	uint32_t i;

	f->ok = !parse(zone, ip, len, f);
	f->stable = stable;
	if (!f->ok)
		return false;
	f->bucket = bucket_of(&f->k, &f->tag);
	i = l->index[f->bucket];
	if (!i || (i & ~LATE_SLOT_MASK) != f->tag)
		return false;
	s = &l->slot[(i & LATE_SLOT_MASK) - 1];
	/* within the window, either way (capture time may step back) */
	if ((ts_ns > s->ts_ns ? ts_ns - s->ts_ns : s->ts_ns - ts_ns) > DFR_LATE_WINDOW_NS ||
	    memcmp(&s->k, &f->k, sizeof(f->k)))
		return false;
	if (s->off == f->off && s->len == f->len && s->mf == f->mf &&
	    (s->at ? !memcmp(s->at, f->data, f->len) : s->sum == sum_of(f->data, f->len))) {
		l->seen++;
		return true;
	}
	/* Another fragment of that datagram: its bytes there, while they are
	 * still in the ring (nothing written over them since). A last
	 * fragment ends where the datagram ends; others end before. */
	if (s->dlen && l->w - s->dpos <= DFR_LATE_RING && f->off <= s->dlen &&
	    f->len <= s->dlen - f->off &&
	    (f->mf ? f->off + f->len < s->dlen : f->off + f->len == s->dlen) &&
	    !memcmp(f->data, l->ring + s->dpos % DFR_LATE_RING + f->off, f->len)) {
		l->seen++;
		return true;
	}
	return false;
}
