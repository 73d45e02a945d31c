/*
 * Capture input and output of `rxpath defrag` through libwiretap (see
 * defrag_io.h for why wiretap). Owns the wiretap handles, the record
 * buffers and the temporary output file; an output is either renamed onto
 * OUT whole or removed, also when the process is killed by a signal that
 * would end it, so OUT never holds a partial capture.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <pcap/pcap.h>
#include <wiretap/pcap-encap.h>
#include <wiretap/wtap.h>
#include <wsutil/wslog.h>

#include "defrag_io.h"

#define SNAP_MIN 262144 /* reassembled frames are longer than any fragment */
#define ENCAP_MAX 512 /* wiretap's encapsulations, for the DLT_ map */
#define DLT_SCAN 512 /* pcap link-type values looked up to build it */

struct dio_in {
	wtap *wth;
	wtap_rec rec;
	Buffer buf;
	/* A plain pcap file written as pcap is read with libpcap instead:
	 * wiretap makes and frees an options block per record (wtap_read:
	 * 900 instructions a record under callgrind, 27% of rxpath defrag's
	 * run on a 114 MB capture), libpcap hands out its own buffer. wth
	 * stays open for what the file is (format, link type, IDBs). */
	pcap_t *pc;
	const uint8_t *data; /* the record last read */
	char path[PATH_MAX];
	uint64_t count;
	enum dio_end end;
	char why[256];
	bool have_rec;
};

struct dio_out {
	wtap_dumper *wdh; /* pcapng, and pcap of link types with pseudo-headers */
	/* pcap of other link types: libpcap's writer on our own FILE, whose
	 * buffer is large (wiretap's is the FILE default, 4 KiB: a write(2)
	 * per 4 KiB, 27k calls for a 114 MB capture) */
	pcap_t *pdead;
	pcap_dumper_t *pd;
	FILE *f;
	char *fbuf;
	bool nsec;
	wtap_dump_params params;
	bool pcapng, to_stdout;
	uint64_t skipped;
	char final[PATH_MAX];
};

/* The temporary file being written, removed by the signal handler. */
static char tmp_path[PATH_MAX];
static volatile sig_atomic_t tmp_live;

static void on_fatal_signal(int sig)
{
	if (tmp_live)
		unlink(tmp_path);
	signal(sig, SIG_DFL);
	raise(sig);
}

/* wiretap's encapsulation -> the DLT_ value libpcap would report, built
 * from wiretap's own table (its reverse is not exported); the lowest DLT
 * for an encapsulation several map to (DLT_RAW 12 before 14 and 101). */
static int encap_dlt[ENCAP_MAX];

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
		encap_dlt[i] = -1;
	for (int d = DLT_SCAN - 1; d >= 0; d--) {
		int e = wtap_pcap_encap_to_wtap_encap(d);

		/* DLT values wiretap does not know map to WTAP_ENCAP_UNKNOWN,
		 * which must stay without one (it got DLT 4, unassigned) */
		if (e > WTAP_ENCAP_UNKNOWN && e < ENCAP_MAX)
			encap_dlt[e] = d;
	}
}

struct dio_in *dio_open_in(const char *path, char *err, size_t errlen)
{
	struct dio_in *in;
	int e = 0;
	gchar *info = NULL;

	struct stat st;

	wiretap_init_once();
	/* wiretap takes an empty file for an ERF capture with no records */
	if (strcmp(path, "-") && !stat(path, &st) && S_ISREG(st.st_mode) && !st.st_size) {
		snprintf(err, errlen, "empty file, not a capture");
		return NULL;
	}
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
	wtap_rec_init(&in->rec);
	ws_buffer_init(&in->buf, 2048);
	snprintf(in->path, sizeof(in->path), "%s", path);
	return in;
}

/* A pcap record's fraction of a second is a 32-bit field that may say
 * more than a second (a damaged file); both readers give it scaled to
 * nanoseconds in 32 bits (libpcap unsigned, wiretap in an int, negative
 * past 2^31). Read as unsigned and carried into the seconds, the two agree
 * and what is written out again is a valid timestamp. */
static void ts_carry(wtap_rec *rec)
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
	ts_carry(&in->rec);
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

/* Switch a plain pcap file not yet read from to libpcap; false if it is
 * not one (then wiretap goes on). */
static bool use_libpcap(struct dio_in *in)
{
	char err[PCAP_ERRBUF_SIZE];
	int ft = wtap_file_type_subtype(in->wth);

	if (in->count || !strcmp(in->path, "-") || wtap_get_compression_type(in->wth) ||
	    (ft != wtap_pcap_file_type_subtype() && ft != wtap_pcap_nsec_file_type_subtype()))
		return false;
	in->pc = pcap_open_offline_with_tstamp_precision(in->path, PCAP_TSTAMP_PRECISION_NANO, err);
	if (in->pc && pcap_datalink(in->pc) != encap_dlt[wtap_file_encap(in->wth)]) {
		pcap_close(in->pc); /* the two disagree on the link type: keep wiretap */
		in->pc = NULL;
	}
	if (in->pc)
		in->rec.rec_header.packet_header.pkt_encap = wtap_file_encap(in->wth);
	return in->pc != NULL;
}

int dio_read(struct dio_in *in, struct dio_rec *r)
{
	int e = 0;
	gchar *info = NULL;
	gint64 off;

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
	ts_carry(&in->rec);
	if (in->rec.presence_flags & WTAP_HAS_TS && in->rec.ts.secs >= 0)
		r->ts_ns = (uint64_t)in->rec.ts.secs * 1000000000ull + (uint64_t)in->rec.ts.nsecs;
	if (in->rec.rec_type == REC_TYPE_PACKET) {
		const wtap_packet_header *ph = &in->rec.rec_header.packet_header;

		r->packet = true;
		r->caplen = ph->caplen;
		r->len = ph->len;
		if (in->rec.presence_flags & WTAP_HAS_INTERFACE_ID)
			r->iface = ph->interface_id;
		if (ph->pkt_encap >= 0 && ph->pkt_encap < ENCAP_MAX)
			r->dlt = encap_dlt[ph->pkt_encap];
	}
	return 1;
}

enum dio_end dio_in_end(const struct dio_in *in, const char **why)
{
	if (why)
		*why = in->why;
	return in->end;
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
	wtap_rec_cleanup(&in->rec);
	ws_buffer_free(&in->buf);
	wtap_close(in->wth);
	free(in);
}

int dio_check_paths(const char *in, const char *out, char *err, size_t errlen)
{
	struct stat si, so;

	if (!strcmp(out, "-"))
		return 0;
	if (stat(out, &so)) /* does not exist yet (or cannot be seen): nothing to clobber */
		return 0;
	if (S_ISDIR(so.st_mode)) {
		snprintf(err, errlen, "%s is a directory", out);
		return -1;
	}
	if (strcmp(in, "-") && !stat(in, &si) && si.st_dev == so.st_dev && si.st_ino == so.st_ino) {
		snprintf(err, errlen,
			 "%s and %s are the same file: refusing to overwrite the input", in, out);
		return -1;
	}
	return 0;
}

/* Where OUT really is (a symlink is written through, to its target), and a
 * temporary file beside it. */
static int make_temp(struct dio_out *o, const char *path, char *err, size_t errlen)
{
	char dir[PATH_MAX];
	const char *base;
	struct stat st;
	mode_t mask;
	int fd;

	if (!lstat(path, &st) && S_ISLNK(st.st_mode) && realpath(path, o->final))
		;
	else if (snprintf(o->final, sizeof(o->final), "%s", path) >= (int)sizeof(o->final)) {
		snprintf(err, errlen, "%s: path too long", path);
		return -1;
	}
	base = strrchr(o->final, '/');
	if (base) {
		snprintf(dir, sizeof(dir), "%.*s", (int)(base - o->final), o->final);
		if (!dir[0])
			snprintf(dir, sizeof(dir), "/");
		base++;
	} else {
		snprintf(dir, sizeof(dir), ".");
		base = o->final;
	}
	if (snprintf(tmp_path, sizeof(tmp_path), "%s/.%s.rxpath-XXXXXX", dir, base) >=
	    (int)sizeof(tmp_path)) {
		snprintf(err, errlen, "%s: path too long", path);
		return -1;
	}
	fd = mkstemp(tmp_path);
	if (fd < 0) {
		snprintf(err, errlen, "cannot create a file in %s: %s", dir, strerror(errno));
		return -1;
	}
	tmp_live = 1;
	/* mkstemp makes it 0600; give it what creating OUT would have. */
	mask = umask(0);
	umask(mask);
	if (fchmod(fd, stat(o->final, &st) ? 0666 & ~mask : st.st_mode & 07777))
		(void)0; /* the data is what matters; keep 0600 */
	signal(SIGINT, on_fatal_signal);
	signal(SIGTERM, on_fatal_signal);
	signal(SIGHUP, on_fatal_signal);
	signal(SIGPIPE, on_fatal_signal);
	return fd;
}

#define OUT_BUF (1u << 20)

/* Open the libpcap writer on fd (or stdout) when OUT is pcap and its link
 * type is carried in the frame bytes alone. 1 done, 0 not applicable, -1
 * error (errno). */
static int pcap_writer_open(struct dio_out *o, struct dio_in *in, int ft, int fd)
{
	int encap = wtap_file_encap(in->wth);

	if (o->pcapng || encap < 0 || encap >= ENCAP_MAX || encap_dlt[encap] < 0 ||
	    wtap_encap_requires_phdr(encap))
		return 0;
	o->nsec = ft == wtap_pcap_nsec_file_type_subtype();
	o->pdead = pcap_open_dead_with_tstamp_precision(encap_dlt[encap], o->params.snaplen,
							o->nsec ? PCAP_TSTAMP_PRECISION_NANO
								: PCAP_TSTAMP_PRECISION_MICRO);
	o->f = fd >= 0 ? fdopen(fd, "wb") : stdout;
	o->fbuf = malloc(OUT_BUF);
	if (!o->pdead || !o->f || !o->fbuf) {
		errno = ENOMEM;
		return -1;
	}
	setvbuf(o->f, o->fbuf, _IOFBF, OUT_BUF);
	o->pd = pcap_dump_fopen(o->pdead, o->f);
	if (!o->pd) {
		errno = EIO;
		return -1;
	}
	return 1;
}

static int pcap_writer_close(struct dio_out *o);

/* Raise a snapshot length that reassembled frames would exceed (0 is "no
 * limit" and stays). */
static int snap_raise(int snap)
{
	return snap > 0 && snap < SNAP_MIN ? SNAP_MIN : snap;
}

/* wtap_dump_params_cleanup leaves idb_inf (from wtap_file_get_idb_info) to
 * the caller: its struct is ours to free, its array the reader's. */
static void params_free(wtap_dump_params *p)
{
	wtapng_iface_descriptions_t *idb = p->idb_inf;

	wtap_dump_params_cleanup(p);
	g_free(idb);
}

static int add_new_idbs(struct dio_out *o, struct dio_in *in)
{
	wtap_block_t idb;
	int e = 0;
	gchar *info = NULL;

	if (!o->pcapng)
		return 0;
	while ((idb = wtap_get_next_interface_description(in->wth))) {
		wtapng_if_descr_mandatory_t *m = wtap_block_get_mandatory_data(idb);

		if (m)
			m->snap_len = (guint32)snap_raise((int)m->snap_len);
		if (!wtap_dump_add_idb(o->wdh, idb, &e, &info)) {
			g_free(info);
			errno = e > 0 ? e : EINVAL;
			return -1;
		}
	}
	return 0;
}

struct dio_out *dio_open_out(const char *path, struct dio_in *in, bool pcapng, char *err,
			     size_t errlen)
{
	struct dio_out *o = calloc(1, sizeof(*o));
	int ft, e = 0, fd = -1;
	gchar *info = NULL;

	if (!o) {
		snprintf(err, errlen, "%s", strerror(errno));
		return NULL;
	}
	o->pcapng =
		pcapng || dio_in_is_pcapng(in) || wtap_file_encap(in->wth) == WTAP_ENCAP_PER_PACKET;
	if (o->pcapng) {
		ft = wtap_pcapng_file_type_subtype();
		wtap_dump_params_init_no_idbs(&o->params, in->wth);
	} else {
		ft = wtap_file_tsprec(in->wth) > WTAP_TSPREC_USEC
			     ? wtap_pcap_nsec_file_type_subtype()
			     : wtap_pcap_file_type_subtype();
		wtap_dump_params_init(&o->params, in->wth);
	}
	o->params.snaplen = snap_raise(o->params.snaplen ? o->params.snaplen : SNAP_MIN);
	o->to_stdout = !strcmp(path, "-");
	if (!o->to_stdout) {
		fd = make_temp(o, path, err, errlen);
		if (fd < 0)
			goto fail;
	}
	switch (pcap_writer_open(o, in, ft, fd)) {
	case 1:
		use_libpcap(in);
		return o;
	case -1:
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
		if (!o->f && fd >= 0)
			close(fd);
		goto fail;
	}
	if (o->to_stdout)
		o->wdh = wtap_dump_open_stdout(ft, WTAP_UNCOMPRESSED, &o->params, &e, &info);
	else
		o->wdh = wtap_dump_fdopen(fd, ft, WTAP_UNCOMPRESSED, &o->params, &e, &info);
	if (!o->wdh) {
		snprintf(err, errlen, "cannot write %s: %s%s%s", path,
			 e > 0 ? strerror(e) : wtap_strerror(e), info ? ": " : "",
			 info ? info : "");
		g_free(info);
		if (fd >= 0)
			close(fd);
		goto fail;
	}
	if (add_new_idbs(o, in)) {
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
		goto fail;
	}
	return o;
fail:
	if (o->wdh)
		wtap_dump_close(o->wdh, NULL, &e, &info);
	pcap_writer_close(o);
	if (tmp_live) {
		unlink(tmp_path);
		tmp_live = 0;
	}
	params_free(&o->params);
	free(o);
	return NULL;
}

/* 0, or -1 with errno. */
static int pcap_writer_close(struct dio_out *o)
{
	int rc = 0;

	if (o->pd) {
		if (pcap_dump_flush(o->pd) || ferror(o->f))
			rc = -1;
		if (o->f == stdout) {
			if (fflush(stdout))
				rc = -1;
			setvbuf(stdout, NULL, _IONBF, 0); /* fbuf is freed below */
		}
		pcap_dump_close(o->pd); /* fcloses o->f, stdout included */
		o->pd = NULL;
		o->f = NULL;
	} else if (o->f && o->f != stdout) {
		fclose(o->f);
		o->f = NULL;
	}
	if (o->pdead)
		pcap_close(o->pdead);
	o->pdead = NULL;
	free(o->fbuf);
	o->fbuf = NULL;
	return rc;
}

bool dio_out_is_pcapng(const struct dio_out *out)
{
	return out->pcapng;
}

static int dump(struct dio_out *o, const wtap_rec *rec, const uint8_t *data)
{
	int e = 0;
	gchar *info = NULL;

	if (o->pd) {
		struct pcap_pkthdr h;

		if (rec->rec_type != REC_TYPE_PACKET) {
			o->skipped++;
			return 0;
		}
		h.ts.tv_sec = rec->ts.secs;
		h.ts.tv_usec = (suseconds_t)(o->nsec ? rec->ts.nsecs : rec->ts.nsecs / 1000);
		h.caplen = rec->rec_header.packet_header.caplen;
		h.len = rec->rec_header.packet_header.len;
		pcap_dump((u_char *)o->pd, &h, data);
		if (ferror(o->f)) {
			errno = errno ? errno : EIO;
			return -1;
		}
		return 0;
	}
	if (wtap_dump(o->wdh, rec, data, &e, &info))
		return 0;
	g_free(info);
	if (e == WTAP_ERR_UNWRITABLE_REC_TYPE || e == WTAP_ERR_UNWRITABLE_ENCAP ||
	    e == WTAP_ERR_ENCAP_PER_PACKET_UNSUPPORTED) {
		o->skipped++;
		return 0;
	}
	errno = e > 0 ? e : EIO;
	return -1;
}

int dio_write_same(struct dio_out *out, struct dio_in *in)
{
	if (add_new_idbs(out, in))
		return -1;
	return dump(out, &in->rec, in->data);
}

int dio_write_frame(struct dio_out *out, struct dio_in *in, const uint8_t *data, uint32_t len,
		    uint64_t ts_ns)
{
	wtap_rec r = in->rec; /* shallow: nothing of it is freed through r */

	if (add_new_idbs(out, in))
		return -1;
	r.block = NULL; /* the fragment's comments and flags are not the datagram's */
	r.block_was_modified = FALSE;
	r.rec_header.packet_header.caplen = len;
	r.rec_header.packet_header.len = len;
	if (ts_ns) {
		r.ts.secs = (time_t)(ts_ns / 1000000000ull);
		r.ts.nsecs = (int)(ts_ns % 1000000000ull);
	}
	return dump(out, &r, data);
}

int dio_write_frame_on(struct dio_out *out, struct dio_in *in, uint32_t iface, int dlt,
		       const uint8_t *data, uint32_t len, uint64_t ts_ns)
{
	wtap_rec r = in->rec;

	if (add_new_idbs(out, in))
		return -1;
	r.rec_type = REC_TYPE_PACKET;
	r.block = NULL;
	r.block_was_modified = FALSE;
	r.rec_header.packet_header.caplen = len;
	r.rec_header.packet_header.len = len;
	if (out->pcapng) {
		r.presence_flags |= WTAP_HAS_INTERFACE_ID;
		r.rec_header.packet_header.interface_id = iface;
		if (dlt >= 0)
			r.rec_header.packet_header.pkt_encap = wtap_pcap_encap_to_wtap_encap(dlt);
	}
	if (ts_ns) {
		r.ts.secs = (time_t)(ts_ns / 1000000000ull);
		r.ts.nsecs = (int)(ts_ns % 1000000000ull);
	}
	return dump(out, &r, data);
}

uint64_t dio_out_skipped(const struct dio_out *out)
{
	return out->skipped;
}

int dio_close_out(struct dio_out *o, bool commit, char *err, size_t errlen)
{
	int e = 0, rc = 0;
	gchar *info = NULL;

	if (!o)
		return 0;
	if (o->pd) {
		if (pcap_writer_close(o)) {
			if (commit)
				snprintf(err, errlen, "cannot write %s: %s",
					 o->to_stdout ? "stdout" : o->final, strerror(errno));
			commit = false;
			rc = -1;
		}
	} else if (!wtap_dump_close(o->wdh, NULL, &e, &info)) {
		if (commit)
			snprintf(err, errlen, "cannot write %s: %s",
				 o->to_stdout ? "stdout" : o->final,
				 e > 0 ? strerror(e) : wtap_strerror(e));
		g_free(info);
		commit = false;
		rc = -1;
	}
	if (!o->to_stdout) {
		if (commit && rename(tmp_path, o->final)) {
			snprintf(err, errlen, "cannot write %s: %s", o->final, strerror(errno));
			rc = -1;
			commit = false;
		}
		if (!commit)
			unlink(tmp_path);
		tmp_live = 0;
	}
	params_free(&o->params);
	free(o);
	return rc;
}
