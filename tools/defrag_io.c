/*
 * Capture input and output of `rxpath defrag` through libwiretap (see
 * defrag_io.h for why wiretap). A plain pcap file in and pcap out, the
 * common case, take a shorter way: records parsed in place (libpcap's own
 * checks and messages) in the mapped file, whose pages a reader thread
 * maps ahead and lets go behind, or, for a file that cannot be mapped, in
 * 512 KiB chunks the reader thread reads ahead; written into one of two
 * 2 MiB buffers while a writer thread writes the other, the reassembled
 * ones built there (dio_out_room). Owns the
 * wiretap handles, the record buffers and the temporary output file; an
 * output is either renamed onto OUT whole or removed, also when the
 * process is killed by a signal that would end it, so OUT never holds a
 * partial capture (a device or FIFO OUT is written in place).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <pcap/pcap.h>
#include <wiretap/pcap-encap.h>
#include <wiretap/wtap.h>
#include <wsutil/wslog.h>

#include "defrag_frame.h"
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
	/* A plain pcap file of version 2.4 (either byte order) is read by
	 * us in large chunks, records parsed in place: libpcap reads it
	 * through a FILE of 4 KiB (a read(2) per 4 KiB, 138k calls for the
	 * 564 MB bench capture) and copies every record out of it (fread:
	 * 650 instructions a record). The checks and messages are libpcap's
	 * (1.10, sf-pcap.c pcap_next_packet), so where and why it ends is
	 * the same; a record longer than the snapshot length is given whole,
	 * as wiretap gives it (libpcap cuts it to the snapshot). */
	struct fast_in *fast;
	const uint8_t *data; /* the record last read */
	char path[PATH_MAX];
	uint64_t count;
	enum dio_end end;
	char why[256];
	bool have_rec;
};

#define PCAP_MAGIC_USEC 0xa1b2c3d4u
#define PCAP_MAGIC_NSEC 0xa1b23c4du
#define PCAP_FILE_HDR 24u
#define PCAP_REC_HDR 16u
#define PCAP_SNAP_MAX 262144u /* libpcap's largest caplen but for three link types */

/* The file is read in chunks by a reader thread, a few ahead of the
 * records being parsed, so the kernel's copy out of the page cache
 * overlaps the reassembly. A chunk has room in front of its data for the
 * part of a record the chunk before it ended in: records are contiguous. */
#define IN_CHUNK (512u << 10)
#define IN_PAD (PCAP_SNAP_MAX + 4096u) /* > the largest record, its header included */
#define IN_SLOTS 4

struct in_slot {
	uint8_t *mem; /* IN_PAD + IN_CHUNK */
	size_t len; /* bytes read into mem + IN_PAD */
	bool full; /* read, not yet released by the parser */
	bool last; /* the file ended (or failed: err) in this chunk */
	int err;
};

/* A regular file is mapped instead, whole: records are parsed where the
 * page cache holds them, with no copy out of it (the kernel's copy was
 * 0.13 s of CPU on the 564 MB bench capture). The reader thread then maps
 * the pages IN_AHEAD in front of the record being parsed (so that the
 * parser takes no page faults) and lets go of those more than IN_RELEASE
 * behind it, so that the mapping adds at most IN_AHEAD + IN_RELEASE to the
 * resident set. The parser tells it where it is every IN_STEP bytes. */
#define IN_AHEAD (4u << 20)
#define IN_RELEASE (4u << 20)
#define IN_STEP (1u << 20)

struct fast_in {
	int fd;
	uint8_t *map; /* the mapped file, or NULL (chunks read) */
	size_t map_len;
	size_t released; /* map[0, released) let go (MADV_DONTNEED) */
	size_t populated; /* map[.., populated) mapped ahead */
	size_t seen; /* the parser's position, as it last told */
	size_t tell_at; /* where the parser tells it next */
	size_t peek; /* dio_peek's next record */
	const uint8_t *buf;
	size_t pos, end; /* unread bytes are buf[pos, end) */
	bool eof;
	int err; /* errno of a failed read */
	struct in_slot slot[IN_SLOTS];
	unsigned cur; /* the slot buf is in (IN_SLOTS: none yet) */
	unsigned next_read; /* the reader's next slot */
	bool threaded, started, quit, ended;
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool usec; /* timestamps in microseconds (scaled to ns as libpcap does) */
	bool swapped; /* the other byte order than this machine's */
	uint32_t snapshot; /* libpcap's (adjusted) snapshot length */
	int dlt;
};

/* The writer thread of a pcap OUT: it writes one buffer while the main
 * thread fills the other, so the kernel's copy into the page cache and the
 * file system's work (a third of a run's time) overlap the reassembly. */
struct wthread {
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	const uint8_t *buf; /* posted: being written while busy */
	size_t len;
	bool started, busy, quit;
	int err; /* errno of its first failed write */
};

struct dio_out {
	wtap_dumper *wdh; /* pcapng, and pcap of link types with pseudo-headers */
	/* pcap of other link types: libpcap's file header, then our own
	 * records (wiretap writes through a FILE of 4 KiB: a write(2) per
	 * 4 KiB, 27k calls for a 114 MB capture) */
	pcap_t *pdead;
	pcap_dumper_t *pd; /* writes the file header; records go through wb */
	FILE *f;
	/* Records are written into wb, and wb to fd in write(2)s of up to
	 * wcap: no stdio call per record (pcap_dump: two fwrite()s). */
	int fd;
	uint8_t *wb; /* the buffer being filled: one of wbs */
	size_t wlen, wcap;
	uint8_t *wbs[2];
	bool grown; /* past the first buffer: OUT_BUF ones, and the writer */
	struct wthread wt;
	int werr; /* errno of a write that failed: every later one fails too */
	bool hdr_out; /* the FILE's header flushed: only wb writes to fd now */
	bool nsec;
	wtap_dump_params params;
	bool pcapng, to_stdout;
	bool direct; /* OUT is a device or FIFO: written in place, not renamed onto */
	uint64_t skipped;
	char final[PATH_MAX];
};

/* The temporary file being written, removed by the signal handler. */
static char tmp_path[PATH_MAX];
static volatile sig_atomic_t tmp_live;

static void on_fatal_signal(int sig)
{
	static const char bus[] = "rxpath defrag: the input file shrank while it was read\n";

	if (tmp_live)
		unlink(tmp_path);
	if (sig == SIGBUS && write(STDERR_FILENO, bus, sizeof(bus) - 1) < 0)
		sig = SIGBUS; /* nothing else to do; the status below says it */
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

/* Read the next chunk of the file into sl (a read error ends the file). */
static void chunk_read(struct fast_in *f, struct in_slot *sl)
{
	sl->len = 0;
	sl->last = false;
	sl->err = 0;
	while (sl->len < IN_CHUNK) {
		ssize_t n = read(f->fd, sl->mem + IN_PAD + sl->len, IN_CHUNK - sl->len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			sl->err = n < 0 ? errno : 0;
			sl->last = true;
			return;
		}
		sl->len += (size_t)n;
	}
}

static void *reader_main(void *arg)
{
	struct fast_in *f = arg;

	pthread_mutex_lock(&f->mu);
	while (!f->quit && !f->ended) {
		struct in_slot *sl = &f->slot[f->next_read];

		if (sl->full) {
			pthread_cond_wait(&f->cv, &f->mu);
			continue;
		}
		pthread_mutex_unlock(&f->mu);
		chunk_read(f, sl);
		pthread_mutex_lock(&f->mu);
		sl->full = true;
		f->ended = sl->last;
		f->next_read = (f->next_read + 1) % IN_SLOTS;
		pthread_cond_broadcast(&f->cv);
	}
	pthread_mutex_unlock(&f->mu);
	return NULL;
}

/* Move buf on to the next chunk, the unread part of the current one (a
 * record's beginning) copied in front of it. */
static void next_chunk(struct fast_in *f)
{
	unsigned n = f->cur == IN_SLOTS ? 0 : (f->cur + 1) % IN_SLOTS;
	struct in_slot *sl = &f->slot[n];
	size_t tail = f->end - f->pos;

	if (f->threaded) {
		pthread_mutex_lock(&f->mu);
		while (!sl->full)
			pthread_cond_wait(&f->cv, &f->mu);
		pthread_mutex_unlock(&f->mu);
	} else {
		chunk_read(f, sl);
	}
	if (tail) /* (none before the first chunk: buf is NULL) */
		memcpy(sl->mem + IN_PAD - tail, f->buf + f->pos, tail);
	if (f->cur != IN_SLOTS && f->threaded) {
		pthread_mutex_lock(&f->mu);
		f->slot[f->cur].full = false; /* the reader may fill it again */
		pthread_cond_broadcast(&f->cv);
		pthread_mutex_unlock(&f->mu);
	}
	f->cur = n;
	f->buf = sl->mem + IN_PAD - tail;
	f->pos = 0;
	f->end = tail + sl->len;
	if (sl->last) {
		f->eof = true;
		f->err = sl->err;
	}
}

/* At least need unread bytes at f->buf + f->pos (need <= IN_PAD) unless
 * the file ends first; how many there are. */
static size_t fast_fill(struct fast_in *f, size_t need)
{
	while (f->end - f->pos < need && !f->eof)
		next_chunk(f);
	return f->end - f->pos;
}

static int fast_end(struct dio_in *in, enum dio_end end, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fast_end(struct dio_in *in, enum dio_end end, const char *fmt, ...)
{
	va_list ap;

	if (in->fast->err) {
		in->end = DIO_BAD;
		snprintf(in->why, sizeof(in->why), "error reading dump file: %s",
			 strerror(in->fast->err));
		return 0;
	}
	in->end = end;
	va_start(ap, fmt);
	vsnprintf(in->why, sizeof(in->why), fmt, ap);
	va_end(ap);
	return 0;
}

/* The mapped file's reader thread (see IN_AHEAD). */
static void *map_main(void *arg)
{
	struct fast_in *f = arg;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	pthread_mutex_lock(&f->mu);
	while (!f->quit) {
		size_t want = f->seen + IN_AHEAD < f->map_len ? f->seen + IN_AHEAD : f->map_len;
		size_t from = f->populated, behind = f->seen & ~(page - 1);

		if (from < want) {
			size_t to = want - from > IN_STEP ? from + IN_STEP : want;

			pthread_mutex_unlock(&f->mu);
			/* (errors: the parser then faults the pages in itself) */
			madvise(f->map + (from & ~(page - 1)), to - (from & ~(page - 1)),
				MADV_POPULATE_READ);
			pthread_mutex_lock(&f->mu);
			f->populated = to;
		} else if (behind > f->released + IN_RELEASE) {
			/* records before the parser's are no longer used: the
			 * pages stay in the page cache, out of our resident set */
			pthread_mutex_unlock(&f->mu);
			madvise(f->map + f->released, behind - f->released, MADV_DONTNEED);
			pthread_mutex_lock(&f->mu);
			f->released = behind;
		} else {
			pthread_cond_wait(&f->cv, &f->mu);
		}
	}
	pthread_mutex_unlock(&f->mu);
	return NULL;
}

/* Tell the mapped file's reader thread where the parser is: what lies
 * before the record it reads next is no longer needed. */
static void map_tell(struct fast_in *f)
{
	f->tell_at = f->pos + IN_STEP;
	if (!f->threaded)
		return;
	pthread_mutex_lock(&f->mu);
	f->seen = f->pos;
	pthread_cond_signal(&f->cv);
	pthread_mutex_unlock(&f->mu);
}

/* dio_read of a file fast_open took. */
static int read_fast(struct dio_in *in, struct dio_rec *r)
{
	struct fast_in *f = in->fast;
	uint32_t h[4], caplen;
	size_t have;
	const uint8_t *d;
	long sec, frac;

	if (f->map && f->pos >= f->tell_at)
		map_tell(f);
	have = fast_fill(f, PCAP_REC_HDR);

	if (have < PCAP_REC_HDR) {
		if (!have && !f->err)
			return fast_end(in, DIO_EOF, "%s", "");
		return fast_end(in, DIO_CUT,
				"truncated dump file; tried to read %u header bytes, only got %zu",
				PCAP_REC_HDR, have);
	}
	memcpy(h, f->buf + f->pos, sizeof(h));
	if (f->swapped)
		for (int i = 0; i < 4; i++)
			h[i] = __builtin_bswap32(h[i]);
	caplen = h[2];
	if (caplen > PCAP_SNAP_MAX) {
		if (caplen > f->snapshot)
			return fast_end(
				in, DIO_BAD,
				"invalid packet capture length %u, bigger than snaplen of %u",
				caplen, f->snapshot);
		return fast_end(in, DIO_BAD,
				"invalid packet capture length %u, bigger than maximum of %u",
				caplen, PCAP_SNAP_MAX);
	}
	/* Longer than the snapshot: all its bytes, as wiretap gives them
	 * (libpcap keeps the snapshot's and skips the rest; use_libpcap does
	 * not take libpcap where it would). libpcap's message for a cut. */
	have = fast_fill(f, PCAP_REC_HDR + (size_t)caplen) - PCAP_REC_HDR;
	if (have < caplen) {
		uint32_t want = caplen > f->snapshot ? f->snapshot : caplen;

		return fast_end(
			in, DIO_CUT,
			"truncated dump file; tried to read %u captured bytes, only got %zu",
			have < want ? want : caplen, have);
	}
	d = f->buf + f->pos + PCAP_REC_HDR;
	f->pos += PCAP_REC_HDR + (size_t)caplen;
	/* as libpcap and wiretap give them (read_pcap, ts_carry): unsigned
	 * seconds, the fraction scaled to nanoseconds in 32 bits and carried */
	in->rec.rec_type = REC_TYPE_PACKET;
	in->rec.presence_flags = WTAP_HAS_TS | WTAP_HAS_CAP_LEN;
	in->rec.ts.secs = (time_t)h[0];
	in->rec.ts.nsecs = (int)(f->usec ? (uint32_t)((uint64_t)h[1] * 1000u) : h[1]);
	ts_carry(&in->rec);
	sec = (long)in->rec.ts.secs;
	frac = (long)in->rec.ts.nsecs;
	in->rec.rec_header.packet_header.caplen = caplen;
	in->rec.rec_header.packet_header.len = h[3];
	in->data = d;
	memset(r, 0, sizeof(*r));
	r->number = ++in->count;
	r->data = d;
	r->packet = true;
	r->caplen = caplen;
	r->len = h[3];
	r->dlt = f->dlt;
	r->ts_ns = sec >= 0 ? (uint64_t)sec * 1000000000ull + (uint64_t)frac : 0;
	return 1;
}

const uint8_t *dio_peek(struct dio_in *in, uint32_t *caplen, int *dlt)
{
	struct fast_in *f = in->fast;
	uint32_t h[4];
	const uint8_t *d;

	if (!f || !f->map)
		return NULL;
	if (f->peek < f->pos)
		f->peek = f->pos;
	if (f->end - f->peek < PCAP_REC_HDR)
		return NULL;
	memcpy(h, f->buf + f->peek, sizeof(h));
	if (f->swapped)
		h[2] = __builtin_bswap32(h[2]);
	if (h[2] > PCAP_SNAP_MAX || f->end - f->peek - PCAP_REC_HDR < h[2])
		return NULL;
	d = f->buf + f->peek + PCAP_REC_HDR;
	f->peek += PCAP_REC_HDR + (size_t)h[2];
	*caplen = h[2]; /* all of it, as read_fast gives it */
	*dlt = f->dlt;
	return d;
}

static void fast_close(struct fast_in *f)
{
	if (!f)
		return;
	if (f->threaded) {
		pthread_mutex_lock(&f->mu);
		f->quit = true;
		pthread_cond_broadcast(&f->cv);
		pthread_mutex_unlock(&f->mu);
		pthread_join(f->th, NULL);
	}
	if (f->started) {
		pthread_cond_destroy(&f->cv);
		pthread_mutex_destroy(&f->mu);
	}
	if (f->map) /* (after the thread that uses it) */
		munmap(f->map, f->map_len);
	if (f->fd >= 0)
		close(f->fd);
	for (unsigned i = 0; i < IN_SLOTS; i++)
		free(f->slot[i].mem);
	free(f);
}

/* Map the regular file f->fd whole, the records from after its header
 * on; 0, or -1 (then it is read in chunks). A file that shrinks while it
 * is read ends the run with SIGBUS (dio_open_out's handler removes the
 * temporary output); one that grows is read as it was when opened. */
static int map_file(struct fast_in *f, const struct stat *st)
{
	void *m;

	if (st->st_size <= (off_t)PCAP_FILE_HDR || (uint64_t)st->st_size > SIZE_MAX)
		return -1;
	m = mmap(NULL, (size_t)st->st_size, PROT_READ, MAP_PRIVATE, f->fd, 0);
	if (m == MAP_FAILED)
		return -1;
	madvise(m, (size_t)st->st_size, MADV_SEQUENTIAL);
	f->map = m;
	f->map_len = (size_t)st->st_size;
	f->buf = f->map;
	f->pos = PCAP_FILE_HDR;
	f->released = 0;
	f->end = f->map_len;
	f->eof = true;
	return 0;
}

/* Take the file libpcap opened as in->pc over when it is one read_fast
 * reads as libpcap would: either byte order, version 2.4 or later (older
 * ones may have caplen and len swapped), a link type whose largest
 * caplen is 262144, and the header libpcap read. */
static void fast_open(struct dio_in *in)
{
	uint8_t hdr[PCAP_FILE_HDR];
	uint32_t magic;
	struct fast_in *f;
	struct stat st;
	bool nomem = false;
	int dlt = pcap_datalink(in->pc);

	if (pcap_major_version(in->pc) != 2 || pcap_minor_version(in->pc) < 4 || dlt == DLT_DBUS ||
	    dlt == DLT_USBPCAP || dlt == 279 /* DLT_EBHSCR */ || pcap_snapshot(in->pc) <= 0)
		return;
	f = calloc(1, sizeof(*f));
	if (!f)
		return;
	f->cur = IN_SLOTS;
	f->fd = open(in->path, O_RDONLY | O_CLOEXEC);
	/* A regular file (a FIFO cannot be opened twice), its header what
	 * libpcap read; the records start after it. */
	if (f->fd < 0 || fstat(f->fd, &st) || !S_ISREG(st.st_mode) ||
	    pread(f->fd, hdr, sizeof(hdr), 0) != (ssize_t)sizeof(hdr) ||
	    lseek(f->fd, PCAP_FILE_HDR, SEEK_SET) != (off_t)PCAP_FILE_HDR) {
		fast_close(f);
		return;
	}
	memcpy(&magic, hdr, sizeof(magic));
	if (pcap_is_swapped(in->pc))
		magic = __builtin_bswap32(magic);
	if (magic != PCAP_MAGIC_USEC && magic != PCAP_MAGIC_NSEC) {
		fast_close(f);
		return;
	}
	if (map_file(f, &st)) {
		for (unsigned i = 0; i < IN_SLOTS; i++)
			if (!(f->slot[i].mem = malloc(IN_PAD + IN_CHUNK)))
				nomem = true;
		if (nomem) {
			fast_close(f);
			return;
		}
		posix_fadvise(f->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	}
	if (!pthread_mutex_init(&f->mu, NULL)) {
		if (pthread_cond_init(&f->cv, NULL))
			pthread_mutex_destroy(&f->mu);
		else
			f->started = true;
	}
	/* Without the thread, the parser faults the mapped pages in, or
	 * reads chunks as they are needed. A mapped file no longer than the
	 * thread would fault in ahead gets none: it would only cost its start
	 * (fuzz_dio opens a small file three times an input). */
	f->threaded = f->started && !(f->map && f->map_len <= IN_AHEAD) &&
		      !pthread_create(&f->th, NULL, f->map ? map_main : reader_main, f);
	f->usec = magic == PCAP_MAGIC_USEC;
	f->swapped = pcap_is_swapped(in->pc);
	f->snapshot = (uint32_t)pcap_snapshot(in->pc);
	f->dlt = dlt;
	in->fast = f;
	pcap_close(in->pc);
	in->pc = NULL;
}

/* Switch a plain pcap file not yet read from to libpcap (or read_fast);
 * false if it is not one (then wiretap goes on). */
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
	if (!in->pc)
		return false;
	in->rec.rec_header.packet_header.pkt_encap = wtap_file_encap(in->wth);
	fast_open(in);
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
		return read_fast(in, r);
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
	fast_close(in->fast);
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
	signal(SIGBUS, on_fatal_signal); /* a mapped IN that shrank (map_file) */
	return fd;
}

static void wt_start(struct dio_out *o);

/* A small OUT is written from one buffer of OUT_BUF0, at close, by this
 * thread; once OUT outgrows it, from two of OUT_BUF, one filled while a
 * writer thread writes the other. Both hold a frame of DFR_OUT_MAX. A
 * small capture then costs no 4 MiB of buffers and no thread (they were
 * most of fuzz_dio's time). */
#define OUT_BUF0 (512u << 10)
#define OUT_BUF (2u << 20)
_Static_assert(DFR_OUT_MAX + PCAP_REC_HDR <= OUT_BUF0, "a frame fits the first buffer");

/* The link type libpcap writes in a file's header for dlt (its DLT_ to
 * LINKTYPE_ map is not exported): -1 when it writes none. */
static int pcap_linktype_of(int dlt)
{
	pcap_t *p = pcap_open_dead(dlt, 65535);
	char *mem = NULL;
	size_t len = 0;
	FILE *m = p ? open_memstream(&mem, &len) : NULL;
	pcap_dumper_t *d = m ? pcap_dump_fopen(p, m) : NULL;
	uint32_t lt;
	int rc = -1;

	if (d) {
		pcap_dump_close(d); /* closes m: mem and len are final */
		if (len >= PCAP_FILE_HDR) {
			memcpy(&lt, mem + 20, sizeof(lt));
			rc = (int)lt;
		}
	} else if (m) {
		fclose(m);
	}
	free(mem);
	if (p)
		pcap_close(p);
	return rc;
}

/* Open the libpcap writer on fd (or stdout) when OUT is pcap, its link
 * type is carried in the frame bytes alone and the link type libpcap
 * writes for it is one wiretap reads as it (libpcap writes DLT_PPP_BSDOS,
 * 16, as LINKTYPE_PPP_BSDOS, 103, which wiretap does not know: wiretap's
 * writer keeps 16). 1 done, 0 not applicable, -1 error (errno). */
static int pcap_writer_open(struct dio_out *o, struct dio_in *in, int ft, int fd)
{
	int encap = wtap_file_encap(in->wth);

	if (o->pcapng || encap < 0 || encap >= ENCAP_MAX || encap_dlt[encap] < 0 ||
	    wtap_encap_requires_phdr(encap) ||
	    wtap_pcap_encap_to_wtap_encap(pcap_linktype_of(encap_dlt[encap])) != encap)
		return 0;
	o->nsec = ft == wtap_pcap_nsec_file_type_subtype();
	o->pdead = pcap_open_dead_with_tstamp_precision(encap_dlt[encap], o->params.snaplen,
							o->nsec ? PCAP_TSTAMP_PRECISION_NANO
								: PCAP_TSTAMP_PRECISION_MICRO);
	o->f = fd >= 0 ? fdopen(fd, "wb") : stdout;
	o->wb = o->wbs[0] = malloc(OUT_BUF0);
	o->wcap = OUT_BUF0;
	if (!o->pdead || !o->f || !o->wbs[0]) {
		errno = ENOMEM;
		return -1;
	}
	o->pd = pcap_dump_fopen(o->pdead, o->f);
	if (!o->pd) {
		errno = EIO;
		return -1;
	}
	o->fd = fileno(o->f); /* after the header, which wb_flush sends first */
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
	struct stat st;
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
	if (!o->to_stdout && !stat(path, &st) && !S_ISREG(st.st_mode)) {
		/* /dev/null, a FIFO: renaming a file onto it would replace it */
		o->direct = true;
		snprintf(o->final, sizeof(o->final), "%s", path);
		fd = open(path, O_WRONLY | O_CLOEXEC);
		if (fd < 0) {
			snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
			goto fail;
		}
	} else if (!o->to_stdout) {
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

/* Write all of b to o->fd. 0, or -1 with errno. */
static int write_all(struct dio_out *o, const uint8_t *b, size_t n)
{
	while (n) {
		ssize_t w = write(o->fd, b, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			errno = w < 0 ? errno : EIO;
			return -1;
		}
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

static void *wt_main(void *arg)
{
	struct dio_out *o = arg;
	struct wthread *w = &o->wt;

	pthread_mutex_lock(&w->mu);
	for (;;) {
		while (!w->busy && !w->quit)
			pthread_cond_wait(&w->cv, &w->mu);
		if (!w->busy)
			break;
		pthread_mutex_unlock(&w->mu);
		int rc = w->err ? 0 : write_all(o, w->buf, w->len), e = errno;
		pthread_mutex_lock(&w->mu);
		if (rc && !w->err)
			w->err = e;
		w->busy = false;
		pthread_cond_broadcast(&w->cv);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

static void wt_start(struct dio_out *o)
{
	struct wthread *w = &o->wt;

	if (pthread_mutex_init(&w->mu, NULL))
		return;
	if (pthread_cond_init(&w->cv, NULL)) {
		pthread_mutex_destroy(&w->mu);
		return;
	}
	if (pthread_create(&w->th, NULL, wt_main, o)) {
		pthread_cond_destroy(&w->cv);
		pthread_mutex_destroy(&w->mu);
		return; /* then the main thread writes */
	}
	w->started = true;
}

/* Until the writer is done with what it was given; its error becomes o's. */
static void wt_wait(struct dio_out *o)
{
	struct wthread *w = &o->wt;

	if (!w->started)
		return;
	pthread_mutex_lock(&w->mu);
	while (w->busy)
		pthread_cond_wait(&w->cv, &w->mu);
	if (w->err && !o->werr)
		o->werr = w->err;
	pthread_mutex_unlock(&w->mu);
}

static void wt_stop(struct dio_out *o)
{
	struct wthread *w = &o->wt;

	if (!w->started)
		return;
	wt_wait(o);
	pthread_mutex_lock(&w->mu);
	w->quit = true;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
	pthread_join(w->th, NULL);
	pthread_cond_destroy(&w->cv);
	pthread_mutex_destroy(&w->mu);
	w->started = false;
}

/* Send what wb holds: to the writer thread (and fill the other buffer
 * meanwhile), or write it here. 0, or -1 with errno (sticky). */
static int wb_flush(struct dio_out *o)
{
	struct wthread *w = &o->wt;

	/* The file header pcap_dump_fopen left in the FILE goes first. */
	if (!o->werr && !o->hdr_out && (pcap_dump_flush(o->pd) || ferror(o->f)))
		o->werr = errno ? errno : EIO;
	o->hdr_out = true;
	if (w->started) {
		wt_wait(o);
		if (!o->werr && o->wlen) {
			pthread_mutex_lock(&w->mu);
			w->buf = o->wb;
			w->len = o->wlen;
			w->busy = true;
			pthread_cond_broadcast(&w->cv);
			pthread_mutex_unlock(&w->mu);
			o->wb = o->wb == o->wbs[0] ? o->wbs[1] : o->wbs[0];
		}
	} else if (!o->werr && o->wlen && write_all(o, o->wb, o->wlen)) {
		o->werr = errno;
	}
	o->wlen = 0;
	errno = o->werr;
	return o->werr ? -1 : 0;
}

/* wb_flush while writing (not at close): the first time, OUT has outgrown
 * OUT_BUF0, so on with two buffers of OUT_BUF and the writer thread (when
 * there is no memory for them, or no thread, on as before). */
static int wb_make_room(struct dio_out *o)
{
	uint8_t *a, *b;

	if (wb_flush(o))
		return -1;
	if (o->grown)
		return 0;
	o->grown = true;
	a = malloc(OUT_BUF);
	b = a ? malloc(OUT_BUF) : NULL;
	if (!b) {
		free(a);
		return 0;
	}
	free(o->wbs[0]);
	o->wb = o->wbs[0] = a;
	o->wbs[1] = b;
	o->wcap = OUT_BUF;
	wt_start(o);
	return 0;
}

/* One pcap record, as pcap_dump writes it (32-bit seconds and fraction). */
static int wb_record(struct dio_out *o, const struct pcap_pkthdr *h, const uint8_t *data)
{
	uint32_t rh[4] = {(uint32_t)h->ts.tv_sec, (uint32_t)h->ts.tv_usec, h->caplen, h->len};
	size_t n = sizeof(rh) + h->caplen;
	uint8_t *at = o->wb + o->wlen;

	if (o->werr) {
		errno = o->werr;
		return -1;
	}
	if (data == at + sizeof(rh)) { /* built in dio_out_room's room */
		memcpy(at, rh, sizeof(rh));
		o->wlen += n;
		return 0;
	}
	if (o->wlen + n > o->wcap && wb_make_room(o))
		return -1;
	if (n > o->wcap) { /* larger than the buffer: straight out, after the rest */
		wt_wait(o);
		if (o->werr) {
			errno = o->werr;
			return -1;
		}
		if (write_all(o, (const uint8_t *)rh, sizeof(rh)) || write_all(o, data, h->caplen))
			o->werr = errno;
		return o->werr ? -1 : 0;
	}
	memcpy(o->wb + o->wlen, rh, sizeof(rh));
	memcpy(o->wb + o->wlen + sizeof(rh), data, h->caplen);
	o->wlen += n;
	return 0;
}

uint8_t *dio_out_room(struct dio_out *o, uint32_t max)
{
	if (!o->pd || (size_t)max + PCAP_REC_HDR > OUT_BUF0)
		return NULL;
	if (o->wlen + PCAP_REC_HDR + max > o->wcap && wb_make_room(o))
		return NULL;
	return o->wb + o->wlen + PCAP_REC_HDR;
}

/* 0, or -1 with errno. */
static int pcap_writer_close(struct dio_out *o)
{
	int rc = 0;

	if (o->pd) {
		if (wb_flush(o))
			rc = -1;
		wt_stop(o);
		if (o->werr || pcap_dump_flush(o->pd) || ferror(o->f)) {
			errno = o->werr ? o->werr : errno;
			rc = -1;
		}
		if (o->f == stdout) {
			if (fflush(stdout))
				rc = -1;
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
	wt_stop(o); /* a writer opened part way */
	free(o->wbs[0]);
	free(o->wbs[1]);
	o->wb = o->wbs[0] = o->wbs[1] = NULL;
	return rc;
}

bool dio_out_is_pcapng(const struct dio_out *out)
{
	return out->pcapng;
}

/* Write a record. A packet that holds more bytes than it says it had on
 * the wire (a damaged input, or a format that allows it) is written to
 * pcap with its length raised to its captured length: pcap readers take
 * caplen > len for a record header of another pcap variant (wiretap
 * guesses the variant from the first records so), and would read the
 * file written as something else. */
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
		if (h.len < h.caplen)
			h.len = h.caplen;
		return wb_record(o, &h, data);
	}
	if (!o->pcapng && rec->rec_type == REC_TYPE_PACKET &&
	    rec->rec_header.packet_header.len < rec->rec_header.packet_header.caplen) {
		wtap_rec r = *rec; /* shallow: nothing of it is freed through r */

		r.rec_header.packet_header.len = r.rec_header.packet_header.caplen;
		return dump(o, &r, data);
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
	if (!o->to_stdout && !o->direct) {
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
