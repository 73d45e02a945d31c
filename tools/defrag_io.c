/*
 * Capture input of `rxpath defrag` through libwiretap (see defrag_io.h for
 * why wiretap): opens IN, tells its format, and reads it record by record.
 * A plain pcap file written as pcap takes a shorter way: libpcap, or our
 * own parser (defrag_io_fast.c) where it reads the file as libpcap would.
 * Owns the wiretap handle and record buffer of IN; the output side is
 * defrag_io_out.c.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <pcap/pcap.h>
#include <wiretap/pcap-encap.h>
#include <wiretap/wtap.h>
#include <wsutil/wslog.h>

#include "defrag_io_internal.h"

#define TS_SECS_MAX 18446744072ll /* whole seconds pcapng holds in nanoseconds */
#define DLT_SCAN 512 /* pcap link-type values looked up to build the map */

int dio_encap_dlt[ENCAP_MAX];

static const int written_as[][2] = {
	{WTAP_ENCAP_IEEE_802_11_WITH_RADIO, 105 /* DLT_IEEE802_11 */},
	{WTAP_ENCAP_FRELAY_WITH_PHDR, 107 /* DLT_FRELAY */},
	{WTAP_ENCAP_FDDI_BITSWAPPED, 10 /* DLT_FDDI */},
	{WTAP_ENCAP_NETTL_FDDI, 10},
};

static void wiretap_init_once(void)
{
	static bool done;

	if (done)
		return;
	done = true;
	ws_log_init("rxpath", NULL);
	ws_log_set_level(LOG_LEVEL_WARNING); /* wiretap's pcapng writer logs per packet */
	wtap_init(FALSE);
	for (int i = 0; i < ENCAP_MAX; i++)
		dio_encap_dlt[i] = -1;
	for (int d = DLT_SCAN - 1; d >= 0; d--) {
		int e = wtap_pcap_encap_to_wtap_encap(d);

		/* DLT values wiretap does not know map to WTAP_ENCAP_UNKNOWN,
		 * which must stay without one (it got DLT 4, unassigned) */
		if (e > WTAP_ENCAP_UNKNOWN && e < ENCAP_MAX)
			dio_encap_dlt[e] = d;
	}
	/* Encapsulations no link type reads as, which wiretap's pcap and
	 * pcapng writers write as another, dropping their pseudo-header (its
	 * wtap_wtap_encap_to_pcap_encap, not exported): their frames are that
	 * link type's, and OUT says so. fuzz_dio found 802.11 with radio
	 * information (a Savvius capture) reported as no link type and read
	 * back as DLT_IEEE802_11. */
	for (unsigned i = 0; i < sizeof(written_as) / sizeof(written_as[0]); i++)
		if (dio_encap_dlt[written_as[i][0]] < 0)
			dio_encap_dlt[written_as[i][0]] = written_as[i][1];
}

struct dio_in *dio_open_in(const char *path, char *err, size_t errlen)
{
	struct dio_in *in;
	int e = 0;
	gchar *info = NULL;

	struct stat st;

	wiretap_init_once();
	in = calloc(1, sizeof(*in));
	if (!in) {
		snprintf(err, errlen, "%s", strerror(errno));
		return NULL;
	}
	in->wth = wtap_open_offline(path, WTAP_TYPE_AUTO, &e, &info, FALSE);
	if (!in->wth) {
		if (e > 0)
			snprintf(err, errlen, "%s", strerror(e));
		else if (e == WTAP_ERR_FILE_UNKNOWN_FORMAT)
			snprintf(err, errlen, "not a capture file wiretap knows");
		else
			snprintf(err, errlen, "%s%s%s", wtap_strerror(e), info ? ": " : "",
				 info ? info : "");
		g_free(info);
		free(in);
		return NULL;
	}
	/* wiretap takes an empty file for an ERF capture with no records
	 * (asked only of those: a stat per open saved) */
	if (wtap_file_type_subtype(in->wth) == wtap_name_to_file_type_subtype("erf") &&
	    strcmp(path, "-") && !stat(path, &st) && S_ISREG(st.st_mode) && !st.st_size) {
		snprintf(err, errlen, "empty file, not a capture");
		goto fail;
	}
	in->path = strdup(path);
	if (!in->path) {
		snprintf(err, errlen, "%s", strerror(errno));
		goto fail;
	}
	wtap_rec_init(&in->rec);
	ws_buffer_init(&in->buf, 2048);
	return in;
fail:
	wtap_close(in->wth);
	free(in);
	return NULL;
}

/* A pcap record's fraction of a second is a 32-bit field that may say
 * more than a second (a damaged file); both readers give it scaled to
 * nanoseconds in 32 bits (libpcap unsigned, wiretap in an int, negative
 * past 2^31). Read as unsigned and carried into the seconds, the two agree
 * and what is written out again is a valid timestamp. */
void dio_ts_carry(wtap_rec *rec)
{
	uint32_t f = (uint32_t)rec->ts.nsecs;

	rec->ts.secs += f / 1000000000u;
	rec->ts.nsecs = (int)(f % 1000000000u);
}

/* dio_read through libpcap: in->rec gets what the writers read of it. */
static int read_pcap(struct dio_in *in, struct dio_rec *r)
{
	struct pcap_pkthdr *h;
	const u_char *d;
	int x = pcap_next_ex(in->pc, &h, &d);

	if (x != 1) {
		in->end = x == -2 ? DIO_EOF : DIO_CUT;
		if (x == -1) {
			const char *why = pcap_geterr(in->pc);

			/* libpcap says "truncated dump file" for a cut record */
			in->end = strstr(why, "truncated") ? DIO_CUT : DIO_BAD;
			snprintf(in->why, sizeof(in->why), "%s", why);
		}
		return 0;
	}
	in->rec.rec_type = REC_TYPE_PACKET;
	in->rec.presence_flags = WTAP_HAS_TS | WTAP_HAS_CAP_LEN;
	/* the file's seconds are unsigned 32 bits (as wiretap reads them);
	 * libpcap sign-extends them, past 2038 to before 1970 */
	in->rec.ts.secs = (time_t)(uint32_t)h->ts.tv_sec;
	in->rec.ts.nsecs = (int)(uint32_t)h->ts.tv_usec; /* opened with nanosecond precision */
	dio_ts_carry(&in->rec);
	in->rec.rec_header.packet_header.caplen = h->caplen;
	in->rec.rec_header.packet_header.len = h->len;
	in->data = d;
	memset(r, 0, sizeof(*r));
	r->number = ++in->count;
	r->data = d;
	r->packet = true;
	r->caplen = h->caplen;
	r->len = h->len;
	r->dlt = pcap_datalink(in->pc);
	r->ts_ns = in->rec.ts.secs >= 0
			   ? (uint64_t)in->rec.ts.secs * 1000000000ull + (uint64_t)in->rec.ts.nsecs
			   : 0;
	return 1;
}

/* Switch a plain pcap file not yet read from to libpcap (or read_fast);
 * false if it is not one (then wiretap goes on). */
bool dio_use_libpcap(struct dio_in *in)
{
	char err[PCAP_ERRBUF_SIZE];
	int ft = wtap_file_type_subtype(in->wth);

	if (in->count || !strcmp(in->path, "-") || wtap_get_compression_type(in->wth) ||
	    (ft != wtap_pcap_file_type_subtype() && ft != wtap_pcap_nsec_file_type_subtype()))
		return false;
	in->pc = pcap_open_offline_with_tstamp_precision(in->path, PCAP_TSTAMP_PRECISION_NANO, err);
	if (in->pc && pcap_datalink(in->pc) != dio_encap_dlt[wtap_file_encap(in->wth)]) {
		pcap_close(in->pc); /* the two disagree on the link type: keep wiretap */
		in->pc = NULL;
	}
	if (!in->pc)
		return false;
	in->rec.rec_header.packet_header.pkt_encap = wtap_file_encap(in->wth);
	dio_fast_open(in);
	/* libpcap cuts a record longer than the file's snapshot length to
	 * it, wiretap (and read_fast) give all its bytes: libpcap only where
	 * the snapshot is the largest record it reads (262144 but for three
	 * link types, which read_fast leaves to it), else wiretap goes on. */
	if (in->pc) {
		int dlt = pcap_datalink(in->pc);

		if (pcap_snapshot(in->pc) < (int)PCAP_SNAP_MAX || dlt == DLT_DBUS ||
		    dlt == DLT_USBPCAP || dlt == 279 /* DLT_EBHSCR */) {
			pcap_close(in->pc);
			in->pc = NULL;
			return false;
		}
	}
	return true;
}

int dio_read(struct dio_in *in, struct dio_rec *r)
{
	int e = 0;
	gchar *info = NULL;
	gint64 off;

	if (in->fast)
		return dio_read_fast(in, r);
	if (in->pc)
		return read_pcap(in, r);
	if (in->have_rec)
		wtap_rec_reset(&in->rec);
	in->have_rec = false;
	if (!wtap_read(in->wth, &in->rec, &in->buf, &e, &info, &off)) {
		in->end = e == 0 ? DIO_EOF : e == WTAP_ERR_SHORT_READ ? DIO_CUT : DIO_BAD;
		if (e > 0)
			snprintf(in->why, sizeof(in->why), "%s", strerror(e));
		else if (e)
			snprintf(in->why, sizeof(in->why), "%s%s%s", wtap_strerror(e),
				 info ? ": " : "", info ? info : "");
		g_free(info);
		return 0;
	}
	g_free(info); /* some readers leave a message on success too */
	in->have_rec = true;
	memset(r, 0, sizeof(*r));
	r->number = ++in->count;
	r->data = in->data = ws_buffer_start_ptr(&in->buf);
	r->dlt = -1;
	dio_ts_carry(&in->rec);
	/* pcap and pcapng count time from 1970 and cannot hold an earlier
	 * one (a Savvius classic capture's 1904, a damaged file), nor pcapng
	 * one past its 64-bit count of nanoseconds (2554; a damaged Savvius
	 * record said the year 584180): written as it was, it came back as
	 * another time. Such a record is read, written and reported at 0. */
	if (in->rec.ts.secs < 0 || in->rec.ts.secs > TS_SECS_MAX) {
		in->rec.ts.secs = 0;
		in->rec.ts.nsecs = 0;
	}
	if (in->rec.presence_flags & WTAP_HAS_TS)
		r->ts_ns = (uint64_t)in->rec.ts.secs * 1000000000ull + (uint64_t)in->rec.ts.nsecs;
	if (in->rec.rec_type == REC_TYPE_PACKET) {
		const wtap_packet_header *ph = &in->rec.rec_header.packet_header;

		r->packet = true;
		r->caplen = ph->caplen;
		r->len = ph->len;
		if (in->rec.presence_flags & WTAP_HAS_INTERFACE_ID)
			r->iface = ph->interface_id;
		if (ph->pkt_encap >= 0 && ph->pkt_encap < ENCAP_MAX)
			r->dlt = dio_encap_dlt[ph->pkt_encap];
	}
	return 1;
}

void dio_in_refs(struct dio_in *in, uint64_t max_bytes)
{
	if (in->fast)
		dio_fast_refs(in->fast, max_bytes);
}

enum dio_end dio_in_end(const struct dio_in *in, const char **why)
{
	if (why)
		*why = in->why;
	return in->end;
}

int dio_in_dlt(const struct dio_in *in)
{
	int e = wtap_file_encap(in->wth);

	if (e == WTAP_ENCAP_PER_PACKET)
		return DIO_DLT_PER_FRAME;
	return e >= 0 && e < ENCAP_MAX ? dio_encap_dlt[e] : -1;
}

const char *dio_in_encap_name(const struct dio_in *in)
{
	return wtap_encap_description(wtap_file_encap(in->wth));
}

bool dio_in_is_pcapng(const struct dio_in *in)
{
	return wtap_file_type_subtype(in->wth) == wtap_pcapng_file_type_subtype();
}

const char *dio_in_format(const struct dio_in *in)
{
	return wtap_file_type_subtype_name(wtap_file_type_subtype(in->wth));
}

const char *dio_in_compression(const struct dio_in *in)
{
	switch (wtap_get_compression_type(in->wth)) {
	case WTAP_GZIP_COMPRESSED:
		return "gzip";
	case WTAP_ZSTD_COMPRESSED:
		return "zstd";
	case WTAP_LZ4_COMPRESSED:
		return "lz4";
	default:
		return NULL;
	}
}

void dio_close_in(struct dio_in *in)
{
	if (!in)
		return;
	if (in->pc)
		pcap_close(in->pc);
	dio_fast_close(in->fast);
	wtap_rec_cleanup(&in->rec);
	ws_buffer_free(&in->buf);
	wtap_close(in->wth);
	free(in->path);
	free(in);
}
