/*
 * rxpath defrag's output (see defrag_io.h): pcap or pcapng through
 * wiretap, or for a pcap of most link types libpcap's file header then our
 * own records, written into one of two 2 MiB buffers while a writer thread
 * writes the other (the reassembled frames built there, dio_out_room).
 * Owns the dumpers, those buffers and thread, and the temporary output
 * file: it is either renamed onto OUT whole or removed, also when the
 * process is killed by a signal that would end it, so OUT never holds a
 * partial capture (a device or FIFO OUT is written in place).
 */
#define _GNU_SOURCE /* fallocate */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <pcap/pcap.h>
#include <wiretap/pcap-encap.h>
#include <wiretap/wtap.h>

#include "defrag_frame.h"
#include "rxpath/pkt.h"
#include "defrag_io_internal.h"
#include "opt.h"

/* The writer thread of a pcap OUT: it writes the buffers the main thread
 * has filled, in turn, while that thread fills the next, so the kernel's
 * copy into the page cache and the file system's work (a third of a run's
 * time) overlap the reassembly. */
struct wthread {
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	size_t lens[DIO_OUT_NBUF]; /* of each posted buffer */
	unsigned wr; /* the next buffer to write (the writer's) */
	/* buffers posted and not yet written: wr, wr + 1, ... (atomic: the
	 * parser reads it unlocked, wb_flush, and the writer, steal) */
	unsigned pend;
	bool started;
	bool quit; /* (atomic, as kicked: steal reads them unlocked) */
	/* It also keeps IN's mapping (dio_fast_take_service): kicked when
	 * the parser asks for that. Two threads on two cores, not three:
	 * see wt_start. */
	struct fast_in *in;
	bool kicked;
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
	uint8_t *wb; /* the buffer being filled: wbs[cur] */
	size_t wlen, wcap;
	uint8_t *wbs[DIO_OUT_NBUF];
	unsigned cur;
	struct dio_in *in; /* what OUT's records come from (its mapping's upkeep) */
	bool grown; /* past the first buffer: OUT_BUF ones, and the writer */
	struct wthread wt;
	int werr; /* errno of a write that failed: every later one fails too */
	off_t wpos; /* fd's offset after write_all's writes; -1 before the first */
	bool hdr_out; /* the FILE's header flushed: only wb writes to fd now */
	bool nsec;
	wtap_dump_params params;
	bool pcapng, to_stdout;
	bool direct; /* OUT is a device or FIFO: written in place, not renamed onto */
	bool prealloc; /* the temporary has blocks past its end to let go (prealloc) */
	/* Per wbs[i], the datagrams whose bytes are still to be copied into it
	 * (dio_out_fill), consumed here once it is written. fw[i] (atomic) is
	 * front << 32 | back: fills[i][front, back) are still to copy. The
	 * parser adds at the back and, when it copies one itself, takes it
	 * from there (wb_flush); the writer takes from the front, of the
	 * buffers it writes and, while it has none, of the one being filled
	 * (fill_take). [0, front) are copied, or taken to be copied. */
	struct out_fill *fills[DIO_OUT_NBUF];
	uint64_t fw[DIO_OUT_NBUF];
	struct out_piece *pcs[DIO_OUT_NBUF];
	unsigned npcs[DIO_OUT_NBUF];
	uint64_t skipped;
	char final[PATH_MAX];
};

/* A datagram whose bytes go at dst, as pieces p0.. (np of them) of its
 * buffer's pieces: where they lie, worked out by the parser when it hands
 * the datagram over, so that the writer reads no packet or page header
 * (the parser writes those: a page header's reference count, next to the
 * address, bounced between the cores). */
struct out_fill {
	uint8_t *dst;
	struct rxp_pkt *dgram;
	uint32_t p0, np;
};
struct out_piece {
	const uint8_t *p;
	size_t n;
};
#define OUT_PIECES (8 * DIO_OUT_FILLS) /* per buffer; past it, copied at once */

/* The temporary file being written, removed by the signal handler. */
static char tmp_path[PATH_MAX];
static volatile sig_atomic_t tmp_live;
static bool handlers_set;

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

int dio_check_paths(const char *in, const char *out, char *err, size_t errlen)
{
	struct stat so;

	if (!strcmp(out, "-"))
		return 0;
	if (!stat(out, &so) && S_ISDIR(so.st_mode)) {
		snprintf(err, errlen, "%s is a directory", out);
		return -1;
	}
	/* as the other commands judge it (a link, another name for it) */
	if (rxp_same_path(in, out)) {
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
	if (!handlers_set) { /* they stay until one fires, and it ends the process */
		signal(SIGINT, on_fatal_signal);
		signal(SIGTERM, on_fatal_signal);
		signal(SIGHUP, on_fatal_signal);
		signal(SIGPIPE, on_fatal_signal);
		signal(SIGBUS, on_fatal_signal); /* a mapped IN that shrank (map_file) */
		handlers_set = true;
	}
	return fd;
}

static void wt_start(struct dio_out *o);

/* Reserve the temporary's blocks for as many bytes as IN holds (what OUT
 * comes to at most, for a plain capture: a datagram's frame is shorter
 * than its fragments' records), past its end (FALLOC_FL_KEEP_SIZE), on
 * ext4 and XFS, which then write into the reserved (unwritten) extents in
 * place. A buffered write into a new file otherwise reserves and accounts
 * each block as it is written (ext4's delayed allocation: block
 * reservation, quota, extent status per 4 KiB): on the 564 MB bench
 * capture the run's system time fell from 0.215 to 0.162 s and its wall
 * time from 0.244 to 0.216 s (median of 13, alternating). What is not
 * used is let go at close (dio_close_out). Not on other file systems
 * (tmpfs would allocate and clear the memory now). Whether it did. */
static bool prealloc(int fd, struct dio_in *in)
{
	struct statfs sf;
	struct stat si;

	if (fstatfs(fd, &sf) ||
	    (sf.f_type != 0xEF53 /* ext2/3/4 */ && sf.f_type != 0x58465342 /* XFS */))
		return false;
	if (!in->path || stat(in->path, &si) || !S_ISREG(si.st_mode) || si.st_size <= 0)
		return false;
	return !fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, si.st_size);
}

/* A small OUT is written from one buffer, at close, by this thread; once
 * OUT outgrows it, from two of OUT_BUF, one filled while a writer thread
 * writes the other. The one buffer is OUT_BUF_SMALL until a frame is to be
 * built in it (dio_out_room), then OUT_BUF0; OUT_BUF0 and OUT_BUF hold a
 * frame of DFR_OUT_MAX. A small capture then costs no 4 MiB of buffers and
 * no thread (they were most of fuzz_dio's time), and one copied through
 * (fuzz_dio's) not even the 512 KiB: under ASan a buffer over 128 KiB is
 * mapped and unmapped each time. */
#define OUT_BUF_SMALL (64u << 10)
#define OUT_BUF0 (512u << 10)
#define OUT_BUF (2u << 20)
_Static_assert(DFR_OUT_MAX + PCAP_REC_HDR <= OUT_BUF0, "a frame fits the first buffer");

/* The link type libpcap writes in a file's header for dlt (its DLT_ to
 * LINKTYPE_ map is not exported): -1 when it writes none. Asked by
 * writing a header into memory, once per dlt below LT_CACHE (each output
 * asks: fuzz_dio opens one per input). */
#define LT_CACHE 1024

static int pcap_linktype_ask(int dlt)
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

static int pcap_linktype_of(int dlt)
{
	static int cache[LT_CACHE]; /* the answer + 2; 0: not asked yet */

	if (dlt < 0 || dlt >= LT_CACHE)
		return pcap_linktype_ask(dlt);
	if (!cache[dlt])
		cache[dlt] = pcap_linktype_ask(dlt) + 2;
	return cache[dlt] - 2;
}

/* Open the libpcap writer on fd (or stdout) when OUT is pcap, its link
 * type is carried in the frame bytes alone and the link type libpcap
 * writes for it is one wiretap reads as it (libpcap writes DLT_PPP_BSDOS,
 * 16, as LINKTYPE_PPP_BSDOS, 103, which wiretap does not know: wiretap's
 * writer keeps 16). 1 done, 0 not applicable, -1 error (errno). */
static int pcap_writer_open(struct dio_out *o, struct dio_in *in, int ft, int fd)
{
	int encap = wtap_file_encap(in->wth);

	if (o->pcapng || encap < 0 || encap >= ENCAP_MAX || dio_encap_dlt[encap] < 0 ||
	    wtap_encap_requires_phdr(encap) ||
	    wtap_pcap_encap_to_wtap_encap(pcap_linktype_of(dio_encap_dlt[encap])) != encap)
		return 0;
	o->nsec = ft == wtap_pcap_nsec_file_type_subtype();
	o->pdead = pcap_open_dead_with_tstamp_precision(dio_encap_dlt[encap], o->params.snaplen,
							o->nsec ? PCAP_TSTAMP_PRECISION_NANO
								: PCAP_TSTAMP_PRECISION_MICRO);
	if (fd < 0) {
		/* stdout, through a descriptor of its own: closing the writer
		 * (which fcloses its FILE) leaves fd 1 open, as wiretap's
		 * wtap_dump_open_stdout does with its dup */
		fflush(stdout);
		fd = dup(STDOUT_FILENO);
		if (fd < 0)
			return -1;
		if (!(o->f = fdopen(fd, "wb")))
			close(fd); /* the caller's fd is -1: ours to close */
	} else {
		o->f = fdopen(fd, "wb");
	}
	o->wb = o->wbs[0] = malloc(OUT_BUF_SMALL);
	o->wcap = OUT_BUF_SMALL;
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

	if (o)
		o->in = in;
	struct stat st;
	int ft, e = 0, fd = -1;
	gchar *info = NULL;

	if (!o) {
		snprintf(err, errlen, "%s", strerror(errno));
		return NULL;
	}
	o->wpos = -1;
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
		o->prealloc = prealloc(fd, in);
	}
	switch (pcap_writer_open(o, in, ft, fd)) {
	case 1:
		dio_use_libpcap(in);
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
		if (e == WTAP_ERR_UNWRITABLE_ENCAP || e == WTAP_ERR_ENCAP_PER_PACKET_UNSUPPORTED)
			/* the input's fault, not OUT's: a file libwiretap took
			 * for another format (a text file can pass for MP4) */
			snprintf(err, errlen,
				 "%s, read as %s with link type '%s', has no frames a pcap or "
				 "pcapng can hold (is it a capture?)",
				 in->path && strcmp(in->path, "-") ? in->path : "the input",
				 dio_in_format(in),
				 wtap_encap_description(wtap_file_encap(in->wth)));
		else
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

/* The most one write(2) is given, and the file offsets writes end at.
 * Linux sizes the page-cache folios of a buffered write from its length
 * and offset: writes of 256 KiB or 2 MiB into a new ext4 file took twice
 * the system time on every other run (dd bs=2M to a new 564 MB file: 0.18
 * s or 0.53 s, alternating), while aligned writes of 64 KiB took 0.19 s
 * every time, as cp's in-kernel copy does (32 KiB: 0.24 s every time).
 * Unaligned 64 KiB writes took 0.29 s every time. */
#define WRITE_MAX (64u << 10)

/* Write all of b to o->fd, in write(2)s that end on WRITE_MAX boundaries
 * of the file. 0, or -1 with errno. */
static int write_all(struct dio_out *o, const uint8_t *b, size_t n)
{
	if (o->wpos < 0) { /* where the file header left it; not a file: 0 */
		off_t at = lseek(o->fd, 0, SEEK_CUR);

		o->wpos = at < 0 ? 0 : at;
	}
	while (n) {
		size_t room = WRITE_MAX - (size_t)(o->wpos % WRITE_MAX);
		ssize_t w = write(o->fd, b, n < room ? n : room);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			errno = w < 0 ? errno : EIO;
			return -1;
		}
		b += w;
		n -= (size_t)w;
		o->wpos += w;
	}
	return 0;
}

/* Fill f of buffer i: its datagram's pieces at its dst. */
static void fill_copy(const struct dio_out *o, unsigned i, const struct out_fill *f)
{
	const struct out_piece *pc = o->pcs[i] + f->p0;
	uint8_t *d = f->dst;

	for (uint32_t j = 0; j < f->np; j++) {
		memcpy(d, pc[j].p, pc[j].n);
		d += pc[j].n;
	}
}

/* The first lines of fill f's pieces: a datagram's payload lies far away
 * (the mapped input, its fragments long read), asked for while the one
 * before is copied. */
static void fill_prefetch(const struct dio_out *o, unsigned i, const struct out_fill *f)
{
	const struct out_piece *pc = o->pcs[i] + f->p0;

	for (uint32_t j = 0; j < f->np; j++) {
		__builtin_prefetch(pc[j].p);
		__builtin_prefetch(pc[j].p + 64);
	}
}

static uint32_t fw_back(const struct dio_out *o, unsigned i)
{
	return (uint32_t)__atomic_load_n(&o->fw[i], __ATOMIC_RELAXED);
}

/* The writer: take the front fill of buffer i and copy it (skip it when
 * copy is false: OUT has failed). Whether there was one. */
static bool fill_take(struct dio_out *o, unsigned i, bool copy)
{
	uint64_t w = __atomic_load_n(&o->fw[i], __ATOMIC_ACQUIRE);
	uint32_t fr;

	do {
		fr = (uint32_t)(w >> 32);
		if (fr >= (uint32_t)w)
			return false;
	} while (!__atomic_compare_exchange_n(&o->fw[i], &w, w + (1ull << 32), true,
					      __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE));
	if (copy) {
		if (fr + 1 < (uint32_t)w)
			fill_prefetch(o, i, &o->fills[i][fr + 1]);
		fill_copy(o, i, &o->fills[i][fr]);
	}
	return true;
}

/* The parser: take the back fill of buffer i to copy it here. */
static struct out_fill *fill_take_back(struct dio_out *o, unsigned i)
{
	uint64_t w = __atomic_load_n(&o->fw[i], __ATOMIC_ACQUIRE);

	do {
		if ((uint32_t)(w >> 32) >= (uint32_t)w)
			return NULL;
	} while (!__atomic_compare_exchange_n(&o->fw[i], &w, w - 1, true, __ATOMIC_ACQ_REL,
					      __ATOMIC_ACQUIRE));
	return &o->fills[i][(uint32_t)w - 1];
}

/* The bytes of buffer i's datagrams into it (the writer, just before it
 * writes it): what is left of them. With copy false, only marked taken. */
static void fills_copy(struct dio_out *o, unsigned i, bool copy)
{
	while (fill_take(o, i, copy))
		;
}

/* Buffer i is written (or never will be): its datagrams go, on the
 * parser's thread, whose pools they came from. The writer took every
 * one (front == back), or has stopped. */
static void fills_done(struct dio_out *o, unsigned i)
{
	uint32_t n = (uint32_t)__atomic_exchange_n(&o->fw[i], 0, __ATOMIC_ACQ_REL);

	for (unsigned k = 0; k < n; k++)
		rxp_pkt_consume(o->fills[i][k].dgram);
	o->npcs[i] = 0;
}

bool dio_out_fill_ok(const struct dio_out *o)
{
	return o->wt.started && !o->werr && fw_back(o, o->cur) < DIO_OUT_FILLS;
}

int dio_out_fill(struct dio_out *o, uint8_t *dst, struct rxp_pkt *dgram)
{
	unsigned i = o->cur;
	uint32_t hl = rxp_pkt_headlen(dgram);
	int rc;

	if (dio_out_fill_ok(o) && !dgram->frag_list &&
	    o->npcs[i] + 1u + dgram->nr_frags <= OUT_PIECES &&
	    (o->fills[i] || (o->fills[i] = malloc(DIO_OUT_FILLS * sizeof(struct out_fill)))) &&
	    (o->pcs[i] || (o->pcs[i] = malloc(OUT_PIECES * sizeof(struct out_piece))))) {
		struct out_fill *f = &o->fills[i][fw_back(o, i)];
		struct out_piece *pc = o->pcs[i];

		*f = (struct out_fill){dst, dgram, o->npcs[i], 0};
		if (hl)
			pc[f->p0 + f->np++] = (struct out_piece){dgram->data, hl};
		for (unsigned j = 0; j < dgram->nr_frags; j++)
			pc[f->p0 + f->np++] =
				(struct out_piece){dgram->frags[j].page->addr + dgram->frags[j].off,
						   dgram->frags[j].size};
		o->npcs[i] += f->np;
		/* published: the writer may take it from here on */
		__atomic_fetch_add(&o->fw[i], 1, __ATOMIC_RELEASE);
		return 0;
	}
	rc = rxp_pkt_copy_bits(dgram, 0, dst, dgram->len);
	rxp_pkt_consume(dgram);
	return rc;
}

/* The writer has nothing to write: it copies the datagrams of the buffer
 * being filled, from the front, while the parser adds more at the back,
 * for as long as it finds some to copy within STEAL_SPIN checks, and
 * nothing comes for it to write. With w->mu held, which it drops around
 * the work; whether it copied any. Without it the writer sat idle for
 * 0.02-0.03 s of a 0.23 s run while the parser copied about half of the
 * datagrams itself. */
#define STEAL_SPIN 4096
static bool steal(struct dio_out *o)
{
	struct wthread *w = &o->wt;
	bool any = false;

	pthread_mutex_unlock(&w->mu);
	for (unsigned spin = 0; spin < STEAL_SPIN; spin++) {
		if (__atomic_load_n(&w->pend, __ATOMIC_ACQUIRE) ||
		    __atomic_load_n(&w->kicked, __ATOMIC_RELAXED) ||
		    __atomic_load_n(&w->quit, __ATOMIC_RELAXED))
			break;
		if (fill_take(o, __atomic_load_n(&o->cur, __ATOMIC_ACQUIRE), true)) {
			any = true;
			spin = 0;
		} else {
			__builtin_ia32_pause();
		}
	}
	pthread_mutex_lock(&w->mu);
	return any;
}

static void *wt_main(void *arg)
{
	struct dio_out *o = arg;
	struct wthread *w = &o->wt;

	pthread_mutex_lock(&w->mu);
	for (;;) {
		while (!w->pend && !w->quit && !w->kicked) {
			/* (steal drops w->mu: what came meanwhile is
			 * looked at again before waiting) */
			if (!w->err && steal(o))
				continue;
			if (!w->pend && !w->quit && !w->kicked)
				pthread_cond_wait(&w->cv, &w->mu);
		}
		if (w->kicked) { /* IN's upkeep first: the parser waits on it */
			__atomic_store_n(&w->kicked, false, __ATOMIC_RELAXED);
			pthread_mutex_unlock(&w->mu);
			dio_fast_serve(w->in);
			pthread_mutex_lock(&w->mu);
			continue;
		}
		if (!w->pend)
			break;
		unsigned i = w->wr;
		size_t len = w->lens[i];

		pthread_mutex_unlock(&w->mu);
		fills_copy(o, i, !w->err);
		int rc = w->err ? 0 : write_all(o, o->wbs[i], len), e = errno;
		pthread_mutex_lock(&w->mu);
		if (rc && !w->err)
			w->err = e;
		w->wr = (i + 1) % DIO_OUT_NBUF;
		__atomic_store_n(&w->pend, w->pend - 1, __ATOMIC_RELEASE);
		pthread_cond_broadcast(&w->cv);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

/* IN's parser asks for its upkeep (dio_fast_take_service). */
static void wt_kick(void *arg)
{
	struct wthread *w = &((struct dio_out *)arg)->wt;

	pthread_mutex_lock(&w->mu);
	__atomic_store_n(&w->kicked, true, __ATOMIC_RELAXED);
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
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
	/* This thread takes over what IN's reader thread does for a mapped
	 * file (map ahead, let go behind), which then ends: on two cores, the
	 * parser, the writer and the reader ran as three threads, and the
	 * parser (the run's bound) shared its core part of the time. */
	w->in = o->in->fast; /* (set once IN is read: dio_use_libpcap) */
	dio_fast_take_service(w->in, wt_kick, o);
}

/* Until the writer is done with what it was given; its error becomes o's. */
static void wt_wait(struct dio_out *o)
{
	struct wthread *w = &o->wt;

	if (!w->started)
		return;
	pthread_mutex_lock(&w->mu);
	while (w->pend)
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
	dio_fast_drop_service(w->in);
	wt_wait(o);
	pthread_mutex_lock(&w->mu);
	__atomic_store_n(&w->quit, true, __ATOMIC_RELAXED);
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
		unsigned i = o->cur;

		/* While the writer still holds every other buffer (so none
		 * would be free to fill next), this thread copies this one's
		 * datagrams, the last first, instead of waiting: the writer
		 * copies what is left. So the copying goes to whichever thread
		 * has the time for it, and with more than two buffers the
		 * writer can fall a buffer behind without the parser taking
		 * its copies over. */
		while (__atomic_load_n(&w->pend, __ATOMIC_ACQUIRE) >= DIO_OUT_NBUF - 1) {
			struct out_fill *f = fill_take_back(o, i);

			if (!f)
				break;
			fill_copy(o, i, f);
			o->npcs[i] = f->p0;
			rxp_pkt_consume(f->dgram);
		}
		pthread_mutex_lock(&w->mu);
		while (w->pend >= DIO_OUT_NBUF - 1)
			pthread_cond_wait(&w->cv, &w->mu);
		if (w->err && !o->werr)
			o->werr = w->err;
		if (!o->werr && o->wlen) {
			w->lens[i] = o->wlen;
			__atomic_store_n(&w->pend, w->pend + 1, __ATOMIC_RELEASE);
			pthread_cond_broadcast(&w->cv);
			pthread_mutex_unlock(&w->mu);
			/* The next buffer is not among the posted (at most
			 * DIO_OUT_NBUF - 1 of them, this one the last): its
			 * datagrams are written, and go. */
			unsigned n = (i + 1) % DIO_OUT_NBUF;

			fills_done(o, n);
			o->wb = o->wbs[n];
			__atomic_store_n(&o->cur, n, __ATOMIC_RELEASE);
		} else {
			pthread_mutex_unlock(&w->mu);
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
	uint8_t *b[DIO_OUT_NBUF];

	if (wb_flush(o))
		return -1;
	if (o->grown)
		return 0;
	o->grown = true;
	for (unsigned i = 0; i < DIO_OUT_NBUF; i++) {
		b[i] = malloc(OUT_BUF);
		if (!b[i]) {
			while (i--)
				free(b[i]);
			return 0;
		}
	}
	free(o->wbs[0]);
	memcpy(o->wbs, b, sizeof(b));
	o->cur = 0;
	o->wb = o->wbs[0];
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
	if (!o->grown && o->wcap < OUT_BUF0) {
		uint8_t *b = realloc(o->wbs[0], OUT_BUF0);

		if (!b)
			return NULL;
		o->wb = o->wbs[0] = b;
		o->wcap = OUT_BUF0;
	}
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
		pcap_dump_close(o->pd); /* fcloses o->f */
		o->pd = NULL;
		o->f = NULL;
	} else if (o->f) {
		fclose(o->f);
		o->f = NULL;
	}
	if (o->pdead)
		pcap_close(o->pdead);
	o->pdead = NULL;
	wt_stop(o); /* a writer opened part way */
	for (unsigned i = 0; i < DIO_OUT_NBUF; i++) {
		fills_done(o, i);
		free(o->fills[i]);
		free(o->pcs[i]);
		free(o->wbs[i]);
		o->fills[i] = NULL;
		o->pcs[i] = NULL;
		o->wbs[i] = NULL;
	}
	o->wb = NULL;
	return rc;
}

bool dio_out_by_libpcap(const struct dio_out *out)
{
	return out->pd != NULL;
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
		struct stat st;

		/* its own size: the blocks reserved past it go (prealloc) */
		if (commit && o->prealloc && !stat(tmp_path, &st))
			(void)truncate(tmp_path, st.st_size);
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
