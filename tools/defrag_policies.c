/*
 * rxpath defrag --policy all (see defrag_policies.h). Owns one table and one
 * frame layer per target policy. Target policies differ only in which
 * bytes win an overlap, so they complete a datagram at the same frame;
 * strict completes it there too unless an overlap killed it. So the
 * datagrams are compared frame by frame: at each frame where any table
 * completed one, the payloads (SHA-256 of the output frame) are grouped,
 * and a frame where they are not all the same, or where some table made
 * none, is a difference.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "defrag_policies.h"
#include "rxpath/wire.h"

#define NPOL RXP_DEFRAG_POLICY_MAX /* strict (the caller's) and the targets */
#define PRINT_MAX 50

struct dpol {
	struct rxp_defrag_table *t[NPOL]; /* [0]: strict, the caller's own */
	struct dfr_frames *fs[NPOL];
	uint64_t differences;
};

struct dpol *dpol_create(const struct rxp_defrag_config *base, struct rxp_pktpool *pp)
{
	struct dpol *p = calloc(1, sizeof(*p));

	if (!p || sodium_init() < 0)
		goto fail;
	for (unsigned k = 1; k < NPOL; k++) {
		struct rxp_defrag_config c = *base;

		c.policy = (enum rxp_defrag_policy)k;
		c.discard_cb = NULL; /* only the strict table's fragments are kept */
		c.overlap_cb = NULL;
		c.event_cb = NULL; /* the report follows the strict table */
		p->t[k] = rxp_defrag_table_create(&c);
		p->fs[k] = dfr_frames_create(pp);
		if (!p->t[k] || !p->fs[k])
			goto fail;
	}
	return p;
fail:
	dpol_destroy(p);
	errno = errno ? errno : ENOMEM;
	return NULL;
}

void dpol_destroy(struct dpol *p)
{
	if (!p)
		return;
	for (unsigned k = 1; k < NPOL; k++)
		rxp_defrag_table_destroy(p->t[k]);
	for (unsigned k = 1; k < NPOL; k++)
		dfr_frames_destroy(p->fs[k]);
	free(p);
}

uint64_t dpol_differences(const struct dpol *p)
{
	return p->differences;
}

/* Family, addresses, id and protocol of a datagram, data at its IP header. */
static void describe(const struct rxp_pkt *d, char *b, size_t n, char *json, size_t jn)
{
	uint8_t h[40];
	char s[INET6_ADDRSTRLEN], t[INET6_ADDRSTRLEN];

	if (!d || rxp_pkt_copy_bits(d, 0, h, d->len < 40 ? d->len : 40) || d->len < 20) {
		snprintf(b, n, "?");
		snprintf(json, jn, "\"family\":null");
		return;
	}
	if (h[0] >> 4 == 4) {
		unsigned id = (unsigned)(h[4] << 8 | h[5]);

		inet_ntop(AF_INET, h + 12, s, sizeof(s));
		inet_ntop(AF_INET, h + 16, t, sizeof(t));
		snprintf(b, n, "%s > %s id %u proto %u, %u bytes", s, t, id, h[9], d->len);
		snprintf(json, jn,
			 "\"family\":4,\"src\":\"%s\",\"dst\":\"%s\",\"id\":%u,\"protocol\":%u,"
			 "\"length\":%u",
			 s, t, id, h[9], d->len);
	} else if (d->len >= 40) {
		inet_ntop(AF_INET6, h + 8, s, sizeof(s));
		inet_ntop(AF_INET6, h + 24, t, sizeof(t));
		snprintf(b, n, "%s > %s next header %u, %u bytes", s, t, h[6], d->len);
		snprintf(json, jn,
			 "\"family\":6,\"src\":\"%s\",\"dst\":\"%s\",\"next_header\":%u,"
			 "\"length\":%u",
			 s, t, h[6], d->len);
	}
}

static void hex(char *out, const uint8_t *d, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", d[i]);
}

void dpol_frame(struct dpol *p, const struct dio_rec *r, const struct dfr_frame *fr, uint64_t now,
		const struct dfr_out *main, FILE *out, FILE *report)
{
	uint8_t dig[NPOL][crypto_hash_sha256_BYTES];
	bool made[NPOL] = {false};
	uint32_t len[NPOL] = {0};
	const struct rxp_pkt *any = NULL;
	unsigned nmade = 0;
	bool same = true;
	/* The other policies' frames are built in their layers' own buffers:
	 * in fr's room (OUT's buffer) they were built over main's frame,
	 * which is written after this, and OUT got the last policy's bytes
	 * (solaris') where they differed from strict's. */
	struct dfr_frame f = *fr;

	f.room = NULL;
	f.defer = false; /* (their frames are hashed now) */
	for (unsigned k = 0; k < NPOL; k++) {
		struct dfr_out fo;
		const struct dfr_out *o = main;

		if (k) {
			rxp_defrag_expire(p->t[k], now);
			o = dfr_frame_process(p->fs[k], p->t[k], &f, now, &fo) == DFR_OUT ? &fo
											  : NULL;
		}
		if (!o)
			continue;
		crypto_hash_sha256(dig[k], o->frame, o->len);
		len[k] = o->dgram ? o->dgram->len : o->len;
		made[k] = true;
		if (!any)
			any = o->dgram;
		nmade++;
	}
	if (!nmade)
		return;
	for (unsigned k = 0; k < NPOL; k++)
		if (made[k] && memcmp(dig[k], dig[0], sizeof(dig[0])))
			same = false;
	if (nmade == NPOL && same)
		return;
	p->differences++;
	{
		char what[160], json[400], views[2048] = "", jviews[4096] = "", none[200] = "",
					   jnone[300] = "";
		bool done[NPOL] = {false};
		size_t vl = 0, jl = 0, nl = 0, njl = 0;

		describe(any, what, sizeof(what), json, sizeof(json));
		for (unsigned k = 0; k < NPOL; k++) {
			char h[2 * crypto_hash_sha256_BYTES + 1];
			bool first = true;

			if (!made[k]) {
				nl += (size_t)snprintf(none + nl, sizeof(none) - nl, "%s%s",
						       nl ? "," : "", rxp_defrag_policy_name(k));
				njl += (size_t)snprintf(jnone + njl, sizeof(jnone) - njl,
							"%s\"%s\"", njl ? "," : "",
							rxp_defrag_policy_name(k));
				continue;
			}
			if (done[k])
				continue;
			hex(h, dig[k], sizeof(dig[k]));
			vl += (size_t)snprintf(views + vl, sizeof(views) - vl, "%s",
					       vl ? "; " : "");
			jl += (size_t)snprintf(jviews + jl, sizeof(jviews) - jl,
					       "%s{\"policies\":[", jl ? "," : "");
			for (unsigned j = k; j < NPOL; j++) {
				if (!made[j] || memcmp(dig[j], dig[k], sizeof(dig[k])))
					continue;
				done[j] = true;
				vl += (size_t)snprintf(views + vl, sizeof(views) - vl, "%s%s",
						       first ? "" : ",", rxp_defrag_policy_name(j));
				jl += (size_t)snprintf(jviews + jl, sizeof(jviews) - jl, "%s\"%s\"",
						       first ? "" : ",", rxp_defrag_policy_name(j));
				first = false;
			}
			vl += (size_t)snprintf(views + vl, sizeof(views) - vl,
					       " see %.16s (%" PRIu32 " bytes)", h, len[k]);
			jl += (size_t)snprintf(jviews + jl, sizeof(jviews) - jl,
					       "],\"sha256\":\"%s\",\"length\":%" PRIu32 "}", h,
					       len[k]);
		}
		if (out && p->differences <= PRINT_MAX)
			fprintf(out,
				"rxpath defrag: policies differ at frame %" PRIu64
				", %s: %s%s%s%s\n",
				r->number, what, views, nl ? "; " : "", none,
				!nl		    ? ""
				: strchr(none, ',') ? " deliver nothing"
						    : " delivers nothing");
		if (out && p->differences == PRINT_MAX + 1)
			fprintf(out, "rxpath defrag: more policy differences: see the summary\n");
		if (report)
			fprintf(report,
				"{\"event\":\"policy_difference\",\"frame\":%" PRIu64
				",\"time_ns\":%" PRIu64 ",%s,\"views\":[%s],\"none\":[%s]}\n",
				r->number, r->ts_ns, json, jviews, jnone);
	}
}
