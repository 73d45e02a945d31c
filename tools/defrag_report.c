/*
 * The datagram report of `rxpath defrag` (see defrag_report.h). Owns a
 * red-black tree (libbsd tree.h) of the queues the table holds, keyed by
 * qid, each with the frame numbers of its fragments: events come
 * synchronously from inside the table while a frame is fed to it, so the
 * current frame number is the fragment's. A queue's node lives from its
 * first FRAG event to its DONE or GIVEUP, so the tree holds at most what
 * the table does. Without a report file nothing per queue is kept: the
 * summary needs only counts (the tree cost 25M instructions in a run of
 * 80k fragments, 10% of it).
 */
#include <arpa/inet.h>
#ifndef __unused
#define __unused __attribute__((unused)) /* libbsd's RB_GENERATE_STATIC needs it */
#endif
#include <bsd/sys/tree.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "defrag_report.h"

struct qnode {
	RB_ENTRY(qnode) rb;
	uint64_t qid;
	uint64_t first_ns, last_ns;
	uint32_t n, cap;
	uint64_t *frames;
};

static int qcmp(const struct qnode *a, const struct qnode *b)
{
	return a->qid < b->qid ? -1 : a->qid > b->qid;
}

RB_HEAD(qtree, qnode);
RB_GENERATE_STATIC(qtree, qnode, rb, qcmp)

struct fam_stats {
	uint64_t frags, dgrams, frag_sum, frag_max;
};

struct drep {
	FILE *out;
	struct qtree q;
	uint64_t frame, ts;
	struct fam_stats fam[2]; /* IPv4, IPv6 */
	uint64_t overlaps, inconsistent, tiny, df;
	struct drep_losses lost;
	uint64_t giveup_by[RXP_DROP_MAX], refused_by[RXP_DROP_MAX];
	int err;
};

uint32_t drep_event_mask(const struct drep *d)
{
	uint32_t all = (1u << RXP_DEFRAG_EV_FRAG) | (1u << RXP_DEFRAG_EV_DONE) |
		       (1u << RXP_DEFRAG_EV_GIVEUP) | (1u << RXP_DEFRAG_EV_REFUSED) |
		       (1u << RXP_DEFRAG_EV_OVERLAP);

	return d->out ? all : all & ~(1u << RXP_DEFRAG_EV_FRAG);
}

void drep_counters(struct drep *d, const struct rxp_defrag_counters *k)
{
	d->tiny = k->tiny_frags;
	d->df = k->df_frags;
}

struct drep *drep_create(FILE *report)
{
	struct drep *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->out = report;
	RB_INIT(&d->q);
	return d;
}

void drep_frame(struct drep *d, uint64_t number, uint64_t ts_ns)
{
	d->frame = number;
	d->ts = ts_ns;
}

/* The queue's node; only kept for a report (the counts need none). */
static struct qnode *qget(struct drep *d, uint64_t qid, bool make)
{
	struct qnode key = {.qid = qid}, *n;

	if (!d->out)
		return NULL;
	n = RB_FIND(qtree, &d->q, &key);

	if (n || !make)
		return n;
	n = calloc(1, sizeof(*n));
	if (!n) {
		d->err = ENOMEM;
		return NULL;
	}
	n->qid = qid;
	n->first_ns = d->ts;
	RB_INSERT(qtree, &d->q, n);
	return n;
}

static void qdrop(struct drep *d, struct qnode *n)
{
	if (!n)
		return;
	RB_REMOVE(qtree, &d->q, n);
	free(n->frames);
	free(n);
}

static void qadd(struct drep *d, struct qnode *n)
{
	if (n->n == n->cap) {
		uint32_t cap = n->cap ? 2 * n->cap : 4;
		uint64_t *f = realloc(n->frames, cap * sizeof(*f));

		if (!f) {
			d->err = ENOMEM;
			return;
		}
		n->frames = f;
		n->cap = cap;
	}
	/* a frame may carry two fragments of one queue (tunnels): once */
	if (!n->n || n->frames[n->n - 1] != d->frame)
		n->frames[n->n++] = d->frame;
	n->last_ns = d->ts;
}

static const char *reason_name(enum rxp_drop_reason r)
{
	switch (r) {
	case RXP_DROP_FRAG_TIMEOUT:
		return "timeout";
	case RXP_DROP_FRAG_OVERLAP:
		return "overlap";
	case RXP_DROP_FRAG_EVICT:
		return "eviction";
	case RXP_DROP_FRAG_MEM_LIMIT:
		return "memory";
	case RXP_DROP_FRAG_QUEUE_LIMIT:
		return "queue_limit";
	case RXP_DROP_FRAG_MAX_DIST:
		return "max_dist";
	case RXP_DROP_TEARDOWN:
		return "end_of_input";
	default:
		return rxp_drop_reason_name(r);
	}
}

/* "family":4,"src":"..","dst":"..","id":N[,"protocol":P][,"zone":Z] */
static void identity(const struct drep *d, FILE *f, const struct rxp_defrag_event *ev)
{
	char s[INET6_ADDRSTRLEN] = "?", t[INET6_ADDRSTRLEN] = "?";
	int af = ev->family == 6 ? AF_INET6 : AF_INET;
	if (ev->src)
		inet_ntop(af, ev->src, s, sizeof(s));
	if (ev->dst)
		inet_ntop(af, ev->dst, t, sizeof(t));
	fprintf(f, "\"family\":%u,\"src\":\"%s\",\"dst\":\"%s\",\"id\":%" PRIu32, ev->family, s, t,
		ev->id);
	if (ev->family == 4)
		fprintf(f, ",\"protocol\":%u", ev->proto);
	if (ev->zone)
		fprintf(f, ",\"zone\":%" PRIu32, ev->zone);
}

static void frames(FILE *f, const struct qnode *n)
{
	fputs(",\"frames\":[", f);
	for (uint32_t i = 0; n && i < n->n; i++)
		fprintf(f, "%s%" PRIu64, i ? "," : "", n->frames[i]);
	fprintf(f, "],\"first_time_ns\":%" PRIu64 ",\"last_time_ns\":%" PRIu64, n ? n->first_ns : 0,
		n ? n->last_ns : 0);
}

static void count_loss(struct drep *d, enum rxp_drop_reason r)
{
	switch (r) {
	case RXP_DROP_FRAG_TIMEOUT:
		d->lost.timeout++;
		break;
	case RXP_DROP_FRAG_OVERLAP:
		d->lost.overlap++;
		break;
	case RXP_DROP_FRAG_EVICT:
		d->lost.evicted++;
		break;
	case RXP_DROP_FRAG_MEM_LIMIT:
		d->lost.memory++;
		break;
	case RXP_DROP_FRAG_QUEUE_LIMIT:
		d->lost.queue_limit++;
		break;
	case RXP_DROP_FRAG_MAX_DIST:
		d->lost.max_dist++;
		break;
	case RXP_DROP_TEARDOWN:
		d->lost.end_of_input++;
		break;
	default:
		d->lost.other++;
		break;
	}
}

static void ev_frag(struct drep *d, const struct rxp_defrag_event *ev, struct fam_stats *fs)
{
	struct qnode *n = qget(d, ev->qid, true);

	fs->frags++;
	if (n)
		qadd(d, n);
	if (ev->mf && ev->end - ev->off < RXP_DEFRAG_TINY) {
		if (d->out) {
			fprintf(d->out, "{\"event\":\"tiny_fragment\",\"frame\":%" PRIu64 ",",
				d->frame);
			identity(d, d->out, ev);
			fprintf(d->out, ",\"off\":%" PRIu32 ",\"end\":%" PRIu32 "}\n", ev->off,
				ev->end);
		}
	}
	if (ev->df) {
		if (d->out) {
			fprintf(d->out, "{\"event\":\"df_fragment\",\"frame\":%" PRIu64 ",",
				d->frame);
			identity(d, d->out, ev);
			fprintf(d->out, ",\"off\":%" PRIu32 ",\"end\":%" PRIu32 "}\n", ev->off,
				ev->end);
		}
	}
}

void drep_event(void *arg, const struct rxp_defrag_event *ev)
{
	struct drep *d = arg;
	struct fam_stats *fs = &d->fam[ev->family == 6];
	struct qnode *n;

	switch (ev->type) {
	case RXP_DEFRAG_EV_FRAG:
		ev_frag(d, ev, fs);
		break;
	case RXP_DEFRAG_EV_DONE:
		n = qget(d, ev->qid, false);
		fs->dgrams++;
		fs->frag_sum += ev->nfrags;
		if (!d->out) /* (no FRAG events: see drep_event_mask) */
			fs->frags += ev->nfrags;
		if (ev->nfrags > fs->frag_max)
			fs->frag_max = ev->nfrags;
		if (d->out) {
			fputs("{\"event\":\"reassembled\",", d->out);
			identity(d, d->out, ev);
			fprintf(d->out, ",\"length\":%" PRIu32 ",\"fragments\":%" PRIu32, ev->len,
				ev->nfrags);
			frames(d->out, n);
			fputs("}\n", d->out);
		}
		qdrop(d, n);
		break;
	case RXP_DEFRAG_EV_GIVEUP:
		n = qget(d, ev->qid, false);
		count_loss(d, ev->reason);
		if (!d->out)
			fs->frags += ev->nfrags;
		if ((unsigned)ev->reason < RXP_DROP_MAX)
			d->giveup_by[ev->reason]++;
		if (d->out) {
			fprintf(d->out, "{\"event\":\"given_up\",\"reason\":\"%s\",",
				reason_name(ev->reason));
			identity(d, d->out, ev);
			fprintf(d->out, ",\"fragments\":%" PRIu32, ev->nfrags);
			frames(d->out, n);
			fputs("}\n", d->out);
		}
		qdrop(d, n);
		break;
	case RXP_DEFRAG_EV_REFUSED:
		d->lost.refused++;
		if (ev->reason == RXP_DROP_FRAG_MEM_LIMIT ||
		    ev->reason == RXP_DROP_FRAG_QUEUE_LIMIT)
			d->lost.refused_memory++;
		if ((unsigned)ev->reason < RXP_DROP_MAX)
			d->refused_by[ev->reason]++;
		if (d->out) {
			fprintf(d->out,
				"{\"event\":\"refused\",\"reason\":\"%s\",\"frame\":%" PRIu64 ",",
				reason_name(ev->reason), d->frame);
			identity(d, d->out, ev);
			fprintf(d->out, ",\"off\":%" PRIu32 ",\"end\":%" PRIu32 "}\n", ev->off,
				ev->end);
		}
		break;
	case RXP_DEFRAG_EV_OVERLAP:
		/* the fragment is the datagram's too, kept or not (as tshark
		 * lists an overlapping fragment among the datagram's) */
		n = qget(d, ev->qid, false);
		if (n)
			qadd(d, n);
		d->overlaps++;
		d->inconsistent += ev->differ;
		if (d->out) {
			fprintf(d->out,
				"{\"event\":\"overlap\",\"kind\":\"%s\",\"frame\":%" PRIu64 ",",
				ev->differ ? "fragment_inconsistency" : "fragment_overlap",
				d->frame);
			identity(d, d->out, ev);
			fprintf(d->out,
				",\"off\":%" PRIu32 ",\"end\":%" PRIu32
				",\"dup\":%s,\"differ\":%s}\n",
				ev->off, ev->end, ev->dup ? "true" : "false",
				ev->differ ? "true" : "false");
		}
		break;
	}
	if (d->out && ferror(d->out) && !d->err)
		d->err = errno ? errno : EIO;
}

void drep_losses(const struct drep *d, struct drep_losses *l)
{
	*l = d->lost;
}

int drep_error(const struct drep *d)
{
	return d->err;
}

void drep_table(const struct drep *d, FILE *f)
{
	static const char *const fam[2] = {"IPv4", "IPv6"};
	bool any = false;

	fprintf(f, "===================================================================\n"
		   "IP reassembly statistics:\n"
		   "Family   Fragments  Datagrams  Frags/datagram (mean)  (max)\n");
	for (int i = 0; i < 2; i++)
		fprintf(f, "%-8s %9" PRIu64 "  %9" PRIu64 "  %21.2f  %5" PRIu64 "\n", fam[i],
			d->fam[i].frags, d->fam[i].dgrams,
			d->fam[i].dgrams ? (double)d->fam[i].frag_sum / (double)d->fam[i].dgrams
					 : 0.0,
			d->fam[i].frag_max);
	fprintf(f,
		"Overlaps: %" PRIu64 " (%" PRIu64 " with different bytes); tiny fragments: %" PRIu64
		"; DF set: %" PRIu64 "\n",
		d->overlaps, d->inconsistent, d->tiny, d->df);
	fprintf(f, "Datagrams given up, by reason:");
	for (unsigned r = 0; r < RXP_DROP_MAX; r++)
		if (d->giveup_by[r]) {
			fprintf(f, " %s %" PRIu64, reason_name(r), d->giveup_by[r]);
			any = true;
		}
	fprintf(f, "%s\nFragments refused, by reason:", any ? "" : " none");
	any = false;
	for (unsigned r = 0; r < RXP_DROP_MAX; r++)
		if (d->refused_by[r]) {
			fprintf(f, " %s %" PRIu64, reason_name(r), d->refused_by[r]);
			any = true;
		}
	fprintf(f, "%s\n===================================================================\n",
		any ? "" : " none");
}

void drep_json(const struct drep *d, FILE *f)
{
	bool first = true;

	fprintf(f, ",\"families\":{");
	for (int i = 0; i < 2; i++)
		fprintf(f,
			"%s\"ipv%d\":{\"fragments\":%" PRIu64 ",\"datagrams\":%" PRIu64
			",\"frags_per_datagram_mean\":%.3f,\"frags_per_datagram_max\":%" PRIu64 "}",
			i ? "," : "", i ? 6 : 4, d->fam[i].frags, d->fam[i].dgrams,
			d->fam[i].dgrams ? (double)d->fam[i].frag_sum / (double)d->fam[i].dgrams
					 : 0.0,
			d->fam[i].frag_max);
	fprintf(f,
		"},\"overlaps\":%" PRIu64 ",\"overlaps_differ\":%" PRIu64
		",\"tiny_fragments\":%" PRIu64 ",\"df_fragments\":%" PRIu64 ",\"given_up\":{",
		d->overlaps, d->inconsistent, d->tiny, d->df);
	for (unsigned r = 0; r < RXP_DROP_MAX; r++)
		if (d->giveup_by[r]) {
			fprintf(f, "%s\"%s\":%" PRIu64, first ? "" : ",", reason_name(r),
				d->giveup_by[r]);
			first = false;
		}
	fprintf(f, "},\"refused\":{");
	first = true;
	for (unsigned r = 0; r < RXP_DROP_MAX; r++)
		if (d->refused_by[r]) {
			fprintf(f, "%s\"%s\":%" PRIu64, first ? "" : ",", reason_name(r),
				d->refused_by[r]);
			first = false;
		}
	fputc('}', f);
}

void drep_destroy(struct drep *d)
{
	struct qnode *n, *nx;

	if (!d)
		return;
	for (n = RB_MIN(qtree, &d->q); n; n = nx) {
		nx = RB_NEXT(qtree, &d->q, n);
		qdrop(d, n);
	}
	free(d);
}
