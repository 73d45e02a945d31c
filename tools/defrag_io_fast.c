/*
 * rxpath defrag's reader of plain pcap files (version 2.4, either byte
 * order), records parsed in place with libpcap's own checks and messages
 * (1.10, sf-pcap.c pcap_next_packet): in the file mapped whole, whose pages
 * a reader thread maps ahead and lets go behind, or, for a file that
 * cannot be mapped, in 512 KiB chunks a reader thread reads ahead. Owns the
 * mapping, the chunks and that thread; the records it gives are valid
 * until the next read (see struct dio_in in defrag_io_internal.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rxpath/page.h"

#include "defrag_io_internal.h"

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
/* The reader maps pages ahead by reading a byte every IN_TOUCH: each read
 * faults, and the fault maps the page cache's pages around it (the
 * kernel's fault-around, 64 KiB by default). MADV_POPULATE_READ did the
 * same work through get_user_pages, a page walk per page on top: on the
 * bench capture the run's system time fell from 0.104 to 0.078 s with OUT
 * /dev/null (median of 11), and to a file from 0.210 to 0.187 s, wall
 * 0.236 -> 0.221 s (13). A read of every page instead cost more than it
 * saved (each a miss). Fault-around maps only what the page cache holds:
 * where the window is smaller, or the file is not cached yet, the parser
 * maps the rest by faults of its own (reading the disk there): slower,
 * the same. */
#define IN_TOUCH (64u << 10)

/* A record's bytes may outlive the next read (dio_rec.page): the mapping
 * is cut into regions of IN_REGION bytes, each an rxp_page over the map
 * from its start to the file's end (a record is its data's region's, and
 * may run past it). A region holds a reference of its own until the
 * parser has passed it, and one for each that its records gave out; when
 * the last goes (on the parser's thread: rxp_page_put) the region is let
 * go as a whole (MADV_DONTNEED by the reader thread), and not before, so
 * that a fragment held for reassembly is not faulted in again when its
 * datagram is written. What lies before the first region still held goes
 * IN_RELEASE behind the parser, as without references. A region let go
 * early that a held record runs into is only faulted in again: the map
 * is read-only, its pages come back from the page cache. */
#define IN_REGION (2u << 20)

#define PEEK_AHEAD 8u /* records dio_peek fetches ahead of itself */

struct fast_in {
	int fd;
	uint8_t *map; /* the mapped file, or NULL (chunks read) */
	size_t map_len;
	size_t released; /* map[0, released) let go (MADV_DONTNEED) */
	struct rxp_page *reg; /* the regions (IN_REGION), or NULL */
	size_t nreg;
	size_t reg_cur; /* the parser's region: it holds its own reference on it and after */
	size_t reg_live; /* the first region still held (main thread) */
	size_t keep; /* what the reader thread must keep: reg_live's start, as last told */
	size_t *pend; /* regions past keep let go but not yet released, for the reader */
	size_t npend;
	/* Regions the parser has passed that are still held, and how many
	 * may be before records come without a page (dio_in_refs): then a
	 * fragment is copied, and what one that never completes holds of
	 * the file stays within the reassembly cap. */
	size_t held, held_max;
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
	/* The reader thread's work is done by another thread
	 * (dio_fast_serve), which kick(kick_arg) wakes; the reader thread is
	 * gone (joined) once taken over, also after dio_fast_drop_service. */
	bool served, reader_gone;
	void (*kick)(void *);
	void *kick_arg;
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool usec; /* timestamps in microseconds (scaled to ns as libpcap does) */
	bool swapped; /* the other byte order than this machine's */
	uint32_t snapshot; /* libpcap's (adjusted) snapshot length */
	int dlt;
};

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

static __attribute__((noinline)) void fast_fill_more(struct fast_in *f, size_t need)
{
	while (f->end - f->pos < need && !f->eof)
		next_chunk(f);
}

/* At least need unread bytes at f->buf + f->pos (need <= IN_PAD) unless
 * the file ends first; how many there are. Inline, the rest apart: the
 * bytes are nearly always there already (a mapped file's are all), and
 * the call cost more than its test (28 instructions, twice a record,
 * under callgrind). */
static inline size_t fast_fill(struct fast_in *f, size_t need)
{
	if (rxp_unlikely(f->end - f->pos < need))
		fast_fill_more(f, need);
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

/* A region's last reference went (its release function, on the parser's
 * thread): the regions before the first one still held are let go
 * through keep (map_tell), others one by one through pend. */
static void region_released(struct rxp_page *pg)
{
	struct fast_in *f = pg->owner;
	size_t i = (size_t)(pg - f->reg);

	pg->priv = 1;
	f->held--;
	if (i != f->reg_live) {
		if (f->threaded) {
			pthread_mutex_lock(&f->mu);
			f->pend[f->npend++] = i;
			pthread_cond_signal(&f->cv);
			pthread_mutex_unlock(&f->mu);
			if (f->served)
				f->kick(f->kick_arg);
		}
		return;
	}
	while (f->reg_live < f->nreg && f->reg[f->reg_live].priv)
		f->reg_live++;
}

/* The parser reads a record of region i (>= reg_cur): its own references
 * on the regions before go. */
static void region_enter(struct fast_in *f, size_t i)
{
	while (f->reg_cur < i) {
		f->held++; /* (until its release, maybe just below) */
		rxp_page_put(&f->reg[f->reg_cur++]);
	}
}

void dio_fast_refs(struct fast_in *f, uint64_t max_bytes)
{
	f->held_max = (size_t)(max_bytes / IN_REGION > SIZE_MAX ? SIZE_MAX : max_bytes / IN_REGION);
}

/* Regions let go one by one (f->pend): released, at most one batch a call
 * (the lock is dropped meanwhile); whether there were any. */
static bool release_pending(struct fast_in *f, size_t page)
{
	size_t batch[16], n = 0;

	while (f->npend && n < 16) {
		size_t i = f->pend[--f->npend];

		if ((i + 1) * (size_t)IN_REGION > f->keep) /* (else keep covers it) */
			batch[n++] = i;
	}
	if (!n)
		return false;
	pthread_mutex_unlock(&f->mu);
	for (size_t k = 0; k < n; k++) {
		size_t a = batch[k] * (size_t)IN_REGION, b = a + IN_REGION;

		a = (a + page - 1) & ~(page - 1); /* (a record before may run into it) */
		b = b < f->map_len ? b & ~(page - 1) : f->map_len;
		if (b > a)
			madvise(f->map + a, b - a, MADV_DONTNEED);
	}
	pthread_mutex_lock(&f->mu);
	return true;
}

/* One step of the mapped file's upkeep (see IN_AHEAD): map a step ahead,
 * let go of what lies behind, or of regions released one by one. With
 * f->mu held, which it drops around the work; whether there was any. */
static bool map_work(struct fast_in *f, size_t page)
{
	size_t want = f->seen + IN_AHEAD < f->map_len ? f->seen + IN_AHEAD : f->map_len;
	size_t from = f->populated;
	size_t behind = (f->reg && f->keep < f->seen ? f->keep : f->seen) & ~(page - 1);

	if (from < want) {
		size_t to = want - from > IN_STEP ? from + IN_STEP : want;

		pthread_mutex_unlock(&f->mu);
		/* (a file that shrank: SIGBUS, as the parser would get) */
		for (size_t a = from & ~(size_t)(IN_TOUCH - 1); a < to; a += IN_TOUCH)
			(void)*(volatile const uint8_t *)(f->map + a);
		pthread_mutex_lock(&f->mu);
		f->populated = to;
		return true;
	}
	if (behind > f->released + IN_RELEASE) {
		/* records before the parser's are no longer used: the pages
		 * stay in the page cache, out of our resident set */
		pthread_mutex_unlock(&f->mu);
		madvise(f->map + f->released, behind - f->released, MADV_DONTNEED);
		pthread_mutex_lock(&f->mu);
		f->released = behind;
		return true;
	}
	return f->npend && release_pending(f, page);
}

/* The mapped file's reader thread (see IN_AHEAD). */
static void *map_main(void *arg)
{
	struct fast_in *f = arg;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	pthread_mutex_lock(&f->mu);
	while (!f->quit)
		if (!map_work(f, page))
			pthread_cond_wait(&f->cv, &f->mu);
	pthread_mutex_unlock(&f->mu);
	return NULL;
}

/* End the reader thread (once). */
static void reader_stop(struct fast_in *f)
{
	if (!f->threaded || f->reader_gone)
		return;
	pthread_mutex_lock(&f->mu);
	f->quit = true;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
	pthread_join(f->th, NULL);
	f->reader_gone = true;
}

bool dio_fast_take_service(struct fast_in *f, void (*kick)(void *), void *arg)
{
	if (!f || !f->map || !f->threaded || f->reader_gone)
		return false;
	reader_stop(f);
	pthread_mutex_lock(&f->mu);
	f->kick = kick;
	f->kick_arg = arg;
	f->served = true;
	pthread_mutex_unlock(&f->mu);
	return true;
}

void dio_fast_drop_service(struct fast_in *f)
{
	if (!f || !f->served)
		return;
	pthread_mutex_lock(&f->mu);
	f->served = false; /* what is released from now on stays mapped to the end */
	f->kick = NULL;
	pthread_mutex_unlock(&f->mu);
}

void dio_fast_serve(struct fast_in *f)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	if (!f)
		return;
	pthread_mutex_lock(&f->mu);
	while (f->served && map_work(f, page))
		;
	pthread_mutex_unlock(&f->mu);
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
	f->keep = f->reg_live * (size_t)IN_REGION;
	pthread_cond_signal(&f->cv);
	pthread_mutex_unlock(&f->mu);
	if (f->served)
		f->kick(f->kick_arg);
}

/* dio_read of a file fast_open took. */
int dio_read_fast(struct dio_in *in, struct dio_rec *r)
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
	dio_ts_carry(&in->rec);
	sec = (long)in->rec.ts.secs;
	frac = (long)in->rec.ts.nsecs;
	in->rec.rec_header.packet_header.caplen = caplen;
	in->rec.rec_header.packet_header.len = h[3];
	in->data = d;
	memset(r, 0, sizeof(*r));
	if (f->reg) {
		size_t at = (size_t)(d - f->map), i = at / IN_REGION;

		if (i != f->reg_cur)
			region_enter(f, i);
		if (f->held < f->held_max) {
			r->page = &f->reg[i];
			r->page_off = (uint32_t)(at - i * (size_t)IN_REGION);
		}
	}
	r->number = ++in->count;
	r->stable = f->map != NULL;
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
	/* Each peek's read of a header waits for the one before (where a
	 * record starts depends on the last one's length): fetch where the
	 * one PEEK_AHEAD records on would start if they were all this one's
	 * size (its header and the frame's first bytes, which the hint
	 * reads). perf, the bench capture: hint 9% -> 5% of the samples, the
	 * main thread's 373 -> 354 ms. */
	{
		size_t g = f->peek + PEEK_AHEAD * (PCAP_REC_HDR + (size_t)h[2]);

		if (g + 128 <= f->end) {
			__builtin_prefetch(f->buf + g);
			__builtin_prefetch(f->buf + g + 64);
		}
	}
	*caplen = h[2]; /* all of it, as read_fast gives it */
	*dlt = f->dlt;
	return d;
}

void dio_fast_close(struct fast_in *f)
{
	if (!f)
		return;
	reader_stop(f);
	if (f->started) {
		pthread_cond_destroy(&f->cv);
		pthread_mutex_destroy(&f->mu);
	}
	if (f->map) /* (after the thread that uses it) */
		munmap(f->map, f->map_len);
	free(f->reg); /* (no references left: dio_rec.page) */
	free(f->pend);
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
	if ((size_t)st->st_size > IN_AHEAD) /* read ahead by a thread (below) */
		madvise(m, (size_t)st->st_size, MADV_SEQUENTIAL);
	f->map = m;
	f->map_len = (size_t)st->st_size;
	f->nreg = f->map_len / IN_REGION + 1;
	f->reg = calloc(f->nreg, sizeof(*f->reg));
	f->pend = calloc(f->nreg, sizeof(*f->pend));
	if (!f->reg || !f->pend) { /* records are then only valid until the next read */
		free(f->reg);
		free(f->pend);
		f->reg = NULL;
		f->pend = NULL;
	}
	for (size_t i = 0; f->reg && i < f->nreg; i++) {
		struct rxp_page *pg = &f->reg[i];

		rxp_page_set_refcount(pg, 1);
		pg->addr = (uint8_t *)m + i * (size_t)IN_REGION;
		pg->size = (uint32_t)(f->map_len - i * (size_t)IN_REGION > UINT32_MAX
					      ? UINT32_MAX
					      : f->map_len - i * (size_t)IN_REGION);
		pg->release = region_released;
		pg->owner = f;
	}
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
void dio_fast_open(struct dio_in *in)
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
	/* The file libpcap opened (a descriptor of its own, not the path
	 * again), a regular file (what libpcap read of a FIFO is gone), its
	 * header what libpcap read; the records start after it. */
	f->fd = pcap_file(in->pc) ? fcntl(fileno(pcap_file(in->pc)), F_DUPFD_CLOEXEC, 0) : -1;
	if (f->fd < 0 || fstat(f->fd, &st) || !S_ISREG(st.st_mode)) {
		dio_fast_close(f);
		return;
	}
	if (!map_file(f, &st))
		memcpy(hdr, f->map, sizeof(hdr));
	else if (pread(f->fd, hdr, sizeof(hdr), 0) != (ssize_t)sizeof(hdr) ||
		 lseek(f->fd, PCAP_FILE_HDR, SEEK_SET) != (off_t)PCAP_FILE_HDR) {
		dio_fast_close(f);
		return;
	}
	memcpy(&magic, hdr, sizeof(magic));
	if (pcap_is_swapped(in->pc))
		magic = __builtin_bswap32(magic);
	if (magic != PCAP_MAGIC_USEC && magic != PCAP_MAGIC_NSEC) {
		dio_fast_close(f);
		return;
	}
	if (!f->map) { /* read in chunks */
		for (unsigned i = 0; i < IN_SLOTS; i++)
			if (!(f->slot[i].mem = malloc(IN_PAD + IN_CHUNK)))
				nomem = true;
		if (nomem) {
			dio_fast_close(f);
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
	 * (fuzz_dio reads a small file every input). */
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
