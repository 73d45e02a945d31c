/*
 * The capture files of `rxpath defrag` (tools/defrag_io*.c): an input is a
 * file, read through libwiretap (pcap, pcapng with interfaces of several
 * link types, compressed files, every other format wiretap knows). Inputs
 * of odd size are written out as pcapng, even ones as pcap when the input
 * is a plain pcap (else pcapng, as dio_open_out decides). Three readings
 * must agree:
 *   A. the file read alone (wiretap), where B reads it with another
 *      reader (through the wiretap handle B opened and does not read
 *      from); where B reads with wiretap too, B's records stand for A's;
 *   B. the file read while each record is written out again (a plain pcap
 *      file is then read with libpcap instead, for speed: both readers
 *      must give the same records, bytes, lengths, link types, interfaces
 *      and timestamps, and stop at the same record), every third packet
 *      as a new frame of the same bytes (dio_write_frame), the other
 *      records as they were (dio_write_same); where pages are asked
 *      for (inputs of size 2 or 3 mod 4), a record that comes with a
 *      page (a mapped plain pcap) lies in it, and every other such
 *      record is held by a reference on it to the end of the reading,
 *      when its bytes must still be what they were;
 *   C. the file written, read back: exactly the packets written, A's in
 *      order, with the same bytes, link type and timestamp (exact from
 *      nanosecond pcap and pcapng, to the microsecond from other formats;
 *      records that are not packets may be left out of a pcap file). A
 *      pcap file written by rxpath's own writer is read back by libpcap,
 *      from memory; a pcapng made from a plain pcap is read by libpcap
 *      first and, unless libpcap reads all of it and agrees, by wiretap;
 *      every other file by wiretap.
 * OUT is written as "-", to fd 1, which is a file beside IN: no temporary
 * file, rename and unlink per input. One input in 256 (by a hash of its
 * bytes) writes OUT by name instead, through the temporary file renamed
 * onto it at close: then OUT must exist exactly when dio_close_out
 * succeeded, and no temporary file may be left either way. IN is one
 * file, rewritten in place.
 * (Reading C back, wiretap may guess a variant of pcap for a file of odd
 * records and stop early: what it read is checked.) Records are numbered
 * from 1. The first MAXREC records are compared.
 * A file that does not open ends the input (wiretap said no: nothing of
 * ours ran). Nothing may leak (LeakSanitizer). wiretap's large buffers are
 * kept from one open to the next (fz_wtap_alloc.c), as ASan would map and
 * unmap them on each.
 *
 * wiretap's JSON reader is deregistered here (not in rxpath): it is one of
 * the heuristic readers tried on every file no magic number matches, and
 * it callocs 50 MiB per try, about 6 ms under ASan against 0.5 ms for all
 * the other readers together. A mutated input that lost its magic number
 * paid that twice. The JSON reader makes one record of the whole file; the
 * paths of ours it would reach (a record of an encapsulation with no link
 * type) are reached by other formats too. So are four text readers' (an
 * input wiretap refuses tries each heuristic reader in turn; an open that
 * only one reader tries takes about 19 us under ASan here):
 *   Android Logcat Text formats: 7 regular expressions compiled per try,
 *     +133 us (its binary form, read by magic number, stays);
 *   K12 text file: +32 us, the encapsulations of the binary K12 reader;
 *   Candump log, Busmaster log: +23 and +22 us, SocketCAN, as in pcap's
 *     LINKTYPE_CAN_SOCKETCAN.
 * Without the last three, 40 s on the committed corpus ran 11,215 inputs
 * a second against 9,663, with the same coverage (cov 294, ft 702).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <glob.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <pcap/pcap.h>

#include <wiretap/pcap-encap.h>
#include <wiretap/wtap.h>

#include "defrag_io_internal.h"
#include "fuzz.h"
#include "rxpath/page.h"

#define MAXREC 512

struct seen {
	uint32_t caplen, len, iface, sum;
	int dlt;
	bool packet;
	uint64_t ts_ns;
};

static struct seen a[MAXREC], b[MAXREC];
/* Records of B held past the next read (dio_rec.page): their page, where
 * they lie in it, and which record they were. */
static struct {
	struct rxp_page *page;
	uint32_t off;
	int i;
} held[MAXREC];
static char dir[64], inpath[96], outpath[96], named[96], tmpglob[128];
static int in_fd = -1;
static size_t in_len; /* of the file at inpath */
static off_t out_len; /* of fd 1 */

static uint32_t fz_sum(const uint8_t *p, uint32_t n)
{
	uint32_t h = 2166136261u;

	for (uint32_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

static void fz_note(struct seen *s, const struct dio_rec *r)
{
	*s = (struct seen){r->caplen, r->len,	 r->iface, fz_sum(r->data, r->caplen),
			   r->dlt,    r->packet, r->ts_ns};
}

/* Timestamps equal as the output can hold them: a microsecond input is
 * written in microseconds (a damaged fraction, carried into the seconds,
 * may have said nanoseconds), and pcap's seconds are 32 bits (a carry may
 * have made 2^32). */
static bool fz_ts_eq(uint64_t x, uint64_t y, bool usec, bool pcap)
{
	uint64_t sx = x / 1000000000u, fx = x % 1000000000u;
	uint64_t sy = y / 1000000000u, fy = y % 1000000000u;

	if (usec) {
		fx /= 1000;
		fy /= 1000;
	}
	if (pcap) {
		sx &= 0xffffffffu;
		sy &= 0xffffffffu;
	}
	return sx == sy && fx == fy;
}

/* Read all of in into v (up to MAXREC records): the count; *end how it
 * ended. */
static int fz_read_in(struct dio_in *in, struct seen *v, enum dio_end *end)
{
	struct dio_rec r;
	int n = 0;

	while (n < MAXREC && dio_read(in, &r)) {
		FZ_CHECK(r.number == (uint64_t)n + 1);
		fz_note(&v[n++], &r);
	}
	*end = n < MAXREC ? dio_in_end(in, NULL) : DIO_EOF;
	return n;
}

/* The same for path, opened anew: the count, or -1 when it does not
 * open. */
static int fz_read_all(const char *path, struct seen *v, enum dio_end *end)
{
	char err[256];
	struct dio_in *in = dio_open_in(path, err, sizeof(err));
	int n;

	*end = DIO_BAD;
	if (!in)
		return -1;
	n = fz_read_in(in, v, end);
	dio_close_in(in);
	return n;
}

/* A through the wiretap handle that B opened (bin) and, having switched to
 * libpcap or read_fast, never reads from (it stays open for what the file
 * is): a reading of the file by wiretap alone, from its first record,
 * without opening it a third time. */
static int fz_read_wth(struct dio_in *bin, struct seen *v, enum dio_end *end)
{
	struct dio_in *w = calloc(1, sizeof(*w));
	int n;

	FZ_CHECK(w && bin->wth && !bin->count);
	w->wth = bin->wth;
	wtap_rec_init(&w->rec);
	ws_buffer_init(&w->buf, 2048);
	n = fz_read_in(w, v, end);
	if (w->have_rec)
		wtap_rec_reset(&w->rec);
	wtap_rec_cleanup(&w->rec);
	ws_buffer_free(&w->buf);
	free(w);
	return n;
}

/* OUT (fd 1) is what was written to it from offset 0: the rest of what
 * the last input wrote is cut off. */
static void fz_out_end(void)
{
	off_t end = lseek(STDOUT_FILENO, 0, SEEK_CUR);

	FZ_CHECK(end >= 0);
	if (end < out_len)
		FZ_CHECK(!ftruncate(STDOUT_FILENO, end));
	out_len = end;
}

/* C for a pcap OUT: the n bytes fd holds, read by libpcap from memory;
 * the count, or -1 when libpcap does not open it. */
static int fz_read_out_pcap(int fd, off_t n, struct seen *v, enum dio_end *end)
{
	char e[PCAP_ERRBUF_SIZE];
	uint8_t *m = n > 0 ? malloc((size_t)n) : NULL;
	FILE *f = NULL;
	pcap_t *p = NULL;
	struct pcap_pkthdr *h;
	const u_char *d;
	int c = 0, x = 0, enc, dlt;

	*end = DIO_BAD;
	FZ_CHECK(n >= 0 && (!n || m));
	if (m && pread(fd, m, (size_t)n, 0) == n && (f = fmemopen(m, (size_t)n, "rb")))
		p = pcap_fopen_offline_with_tstamp_precision(f, PCAP_TSTAMP_PRECISION_NANO, e);
	if (!p) {
		if (f)
			fclose(f);
		free(m);
		return -1;
	}
	/* the link type as wiretap would report it (the lowest DLT_ of its
	 * encapsulation), as A's are: wiretap's writer keeps link types
	 * libpcap reads as others (16, DLT_PPP_BSDOS, is LINKTYPE 103 to
	 * libpcap) */
	enc = wtap_pcap_encap_to_wtap_encap(pcap_datalink(p));
	dlt = enc >= 0 && enc < ENCAP_MAX ? dio_encap_dlt[enc] : -1;
	while (c < MAXREC && (x = pcap_next_ex(p, &h, &d)) == 1)
		v[c++] = (struct seen){h->caplen,
				       h->len,
				       0,
				       fz_sum(d, h->caplen),
				       dlt,
				       true,
				       (uint64_t)(uint32_t)h->ts.tv_sec * 1000000000ull +
					       (uint32_t)h->ts.tv_usec};
	*end = c == MAXREC || x == -2 ? DIO_EOF : DIO_BAD;
	pcap_close(p); /* and f */
	free(m);
	return c;
}

/* LeakSanitizer: leaks of wiretap's record buffers are not reported.
 * Debian's libwiretap 4.0.17 loses one 2 KiB buffer (ws_buffer_init under
 * wtap_read) on some damaged gzip-compressed pcapng files
 * (regress-leak-ba59dec6d0ace4e1 in the corpus); valgrind shows the same
 * loss in rxpath defrag itself, with no code of ours on the stack. ASan's
 * fast unwinder stops at ws_buffer_init (libwsutil has no frame pointers),
 * so "libwiretap" cannot be matched and the rule names ws_buffer_init: it
 * also hides a Buffer of ours left unfreed. Ours are in->buf and in->rec's
 * (made in dio_open_in, let go in dio_close_in) and fz_read_wth's two.
 * Every other leak is reported. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
	return "leak:ws_buffer_init\n";
}

static void fz_cleanup(void)
{
	unlink(inpath);
	unlink(outpath);
	unlink(named);
	rmdir(dir);
}

/* Mutation: a file that begins with the magic number of a format whose
 * readers are ours or lead to ours (pcap in its four forms, pcapng, gzip,
 * zstd) keeps it in 15 mutations of 16, and the rest of the file is
 * mutated. A mutated magic number mostly makes a file no reader takes,
 * after wiretap has tried each of its heuristic readers on it: the
 * costliest input there is, and one that reaches nothing of ours. */
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max, unsigned int seed);

static bool fz_known_magic(const uint8_t *d, size_t n)
{
	static const uint8_t m[][4] = {
		{0xd4, 0xc3, 0xb2, 0xa1}, {0xa1, 0xb2, 0xc3, 0xd4}, {0x4d, 0x3c, 0xb2, 0xa1},
		{0xa1, 0xb2, 0x3c, 0x4d}, {0x0a, 0x0d, 0x0d, 0x0a}, {0x28, 0xb5, 0x2f, 0xfd},
	};

	if (n >= 2 && d[0] == 0x1f && d[1] == 0x8b)
		return true; /* gzip */
	for (unsigned i = 0; n >= 4 && i < sizeof(m) / sizeof(m[0]); i++)
		if (!memcmp(d, m[i], 4))
			return true;
	return false;
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max, unsigned int seed)
{
	if (size > 4 && max > 4 && seed % 16 && fz_known_magic(data, size))
		return 4 + LLVMFuzzerMutate(data + 4, size - 4, max - 4);
	return LLVMFuzzerMutate(data, size, max);
}

static int fz_one(const uint8_t *data, size_t size);

/* wsutil keeps the 2 KiB buffers ws_buffer_free is given for the next
 * ws_buffer_init (ours, in struct dio_in, and wiretap's own): a buffer
 * that grew is freed instead, and the next input then mallocs one that
 * it leaves in the cache. libFuzzer takes an input with more mallocs than
 * frees for a possible leak and runs it again (5% of the time went to
 * that). Each input ends with the cache emptied. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fz_one(data, size);
	ws_buffer_cleanup();
	return 0;
}

/* Whether C's reading b[0, nc) (ended as ec) is A's packets a[0, na) in
 * order, all written of them when it read to the end. */
static bool fz_c_agrees(int nc, enum dio_end ec, int na, int written, bool usec_in, bool ng_out)
{
	int i = 0, got = 0;

	for (int j = 0; j < nc; j++) {
		if (!b[j].packet)
			continue;
		while (i < na && !a[i].packet)
			i++; /* other records may be left out (pcap) */
		if (i >= na || b[j].caplen != a[i].caplen || b[j].sum != a[i].sum ||
		    b[j].dlt != a[i].dlt || !fz_ts_eq(b[j].ts_ns, a[i].ts_ns, usec_in, !ng_out))
			return false;
		got++;
		i++;
	}
	return got == written || nc == MAXREC || ec != DIO_EOF;
}

/* wiretap readers not tried here (see the top of this file) */
static const char *const fz_dereg[] = {
	"JavaScript Object Notation",
	"Android Logcat Text formats",
	"K12 text file",
	"Candump log",
	"Busmaster log",
};

static int fz_one(const uint8_t *data, size_t size)
{
	char err[256];
	struct dio_in *in;
	struct dio_out *out;
	struct dio_rec r;
	enum dio_end ea, ec;
	bool ng_in, ng_out, want_ng = size & 1, stopped = false, usec_in, other, own, plain;
	/* one input in 256 writes OUT by name (a temporary file renamed onto
	 * it at close), the rest to "-" */
	bool by_name = (fz_sum(data, (uint32_t)size) & 255) == 0;
	int na, nb = 0, nc, pk = 0, written = 0, closed, fd = STDOUT_FILENO;
	unsigned nheld = 0;
	bool pages;
	off_t len;

	if (!dir[0]) {
		/* tmpfs where there is one: on ext4 each rewritten file was
		 * flushed to disk at close (auto_da_alloc) */
		snprintf(dir, sizeof(dir), "%s/fuzz_dio.%d",
			 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp", (int)getpid());
		FZ_CHECK(mkdir(dir, 0700) == 0 || access(dir, W_OK) == 0);
		snprintf(inpath, sizeof(inpath), "%s/in", dir);
		snprintf(outpath, sizeof(outpath), "%s/out", dir);
		snprintf(named, sizeof(named), "%s/named", dir);
		snprintf(tmpglob, sizeof(tmpglob), "%s/.named.rxpath-*", dir);
		atexit(fz_cleanup);
		in_fd = open(inpath, O_RDWR | O_CREAT | O_TRUNC, 0600);
		FZ_CHECK(in_fd >= 0);
		{
			int m = open(outpath, O_RDWR | O_CREAT | O_TRUNC, 0600);

			FZ_CHECK(m >= 0 && dup2(m, STDOUT_FILENO) == STDOUT_FILENO);
			close(m);
		}
		/* wiretap starts on the first open (this one fails) */
		FZ_CHECK(!dio_open_in(dir, err, sizeof(err)));
		for (unsigned i = 0; i < sizeof(fz_dereg) / sizeof(fz_dereg[0]); i++)
			if (wtap_has_open_info(fz_dereg[i]))
				wtap_deregister_open_info(fz_dereg[i]);
	}
	/* IN and OUT are truncated only where the last input's were longer
	 * (truncating tmpfs frees its pages: 4% of the time) */
	FZ_CHECK(pwrite(in_fd, data, size, 0) == (ssize_t)size);
	if (size < in_len)
		FZ_CHECK(!ftruncate(in_fd, (off_t)size));
	in_len = size;
	FZ_CHECK(!lseek(STDOUT_FILENO, 0, SEEK_SET));

	in = dio_open_in(inpath, err, sizeof(err));
	if (!in)
		return 0;
	pages = in_len & 2; /* records with pages, or not */
	dio_in_refs(in, pages ? UINT64_MAX : 0);
	if (by_name)
		unlink(named);
	out = dio_open_out(by_name ? named : "-", in, want_ng, err, sizeof(err));
	if (!out) {
		/* wiretap cannot write every link type to every format */
		fz_out_end();
		dio_close_in(in);
		return 0;
	}
	ng_in = dio_in_is_pcapng(in);
	/* A only where B reads with another reader (libpcap or read_fast):
	 * elsewhere B is wiretap too, A would be the same reading twice, and
	 * B's records stand for A's (a wiretap open is most of an input's
	 * cost under ASan) */
	other = in->pc || in->fast;
	na = other ? fz_read_wth(in, a, &ea) : MAXREC;
	ng_out = dio_out_is_pcapng(out);
	own = dio_out_by_libpcap(out);
	/* exact for nanosecond pcap and pcapng, to the microsecond from
	 * other formats (pcap and its variants, hcidump...) */
	usec_in = strcmp(dio_in_format(in), "nsecpcap") && strcmp(dio_in_format(in), "pcapng");
	plain = !strcmp(dio_in_format(in), "pcap") || !strcmp(dio_in_format(in), "nsecpcap");
	FZ_CHECK(ng_out || !(want_ng || ng_in));
	while (nb < MAXREC && dio_read(in, &r)) {
		FZ_CHECK(r.number == (uint64_t)nb + 1);
		fz_note(&b[nb], &r);
		FZ_CHECK(pages || !r.page);
		if (r.page) {
			/* the record lies in its page; every other one is held
			 * to the end of the reading, as a fragment would be */
			FZ_CHECK(r.page->addr + r.page_off == r.data);
			FZ_CHECK((uint64_t)r.page_off + r.caplen <= r.page->size);
			if (nb % 2 == 0) {
				rxp_page_get(r.page);
				held[nheld].page = r.page;
				held[nheld].off = r.page_off;
				held[nheld++].i = nb;
			}
		}
		if (!other)
			a[nb] = b[nb];
		/* the same records, whichever reader gave them */
		FZ_CHECK(nb < na);
		FZ_CHECK(b[nb].packet == a[nb].packet && b[nb].caplen == a[nb].caplen);
		FZ_CHECK(b[nb].sum == a[nb].sum && b[nb].len == a[nb].len);
		FZ_CHECK(b[nb].dlt == a[nb].dlt && b[nb].ts_ns == a[nb].ts_ns);
		FZ_CHECK(b[nb].iface == a[nb].iface);
		nb++;
		if (r.packet && ++pk % 3 == 0) {
			if (dio_write_frame(out, in, r.data, r.caplen, 0)) {
				stopped = true;
				break;
			}
		} else if (dio_write_same(out, in)) {
			/* a record the output cannot hold: stop writing */
			stopped = true;
			break;
		}
		written += r.packet;
	}
	if (!other)
		na = nb;
	else if (!stopped && nb < MAXREC)
		FZ_CHECK(nb == na); /* both readers stop at the same record */
	for (unsigned k = 0; k < nheld; k++) { /* still the bytes they were */
		FZ_CHECK(fz_sum(held[k].page->addr + held[k].off, b[held[k].i].caplen) ==
			 b[held[k].i].sum);
		rxp_page_put(held[k].page);
	}
	dio_close_in(in);
	closed = dio_close_out(out, true, err, sizeof(err));
	fz_out_end();
	if (by_name) {
		/* renamed onto OUT when it closed well; else no OUT at all; and
		 * no temporary file left either way */
		glob_t g;

		FZ_CHECK(glob(tmpglob, 0, NULL, &g) == GLOB_NOMATCH);
		globfree(&g);
		fd = open(named, O_RDONLY);
		FZ_CHECK(closed ? fd < 0 : fd >= 0);
		if (fd < 0)
			return 0;
		len = lseek(fd, 0, SEEK_END);
		FZ_CHECK(len >= 0);
	} else if (closed) {
		return 0;
	} else {
		len = out_len;
	}

	/* C: what was written, read back: A's packets, in order. A pcapng
	 * that wiretap wrote from a plain pcap (one interface, microsecond or
	 * nanosecond time) is first read by libpcap: when libpcap reads all
	 * of it and agrees, that stands for wiretap's reading (a wiretap open
	 * is a quarter of an input's time); anything else, and every other
	 * pcapng, is read by wiretap and must agree. */
	if (own) {
		nc = fz_read_out_pcap(fd, len, b, &ec);
	} else if (!plain || !ng_out || (nc = fz_read_out_pcap(fd, len, b, &ec)) < 0 ||
		   (nc < MAXREC && ec != DIO_EOF) ||
		   !fz_c_agrees(nc, ec, na, written, usec_in, ng_out)) {
		nc = fz_read_all(by_name ? named : outpath, b, &ec);
	}
	if (by_name)
		close(fd);
	/* it opens; wiretap may take a pcap file of odd records for one of
	 * pcap's variants (rh6_1pcap...) and stop early: what it read must
	 * still be right, and all of it when it read to the end */
	FZ_CHECK(nc >= 0);
	FZ_CHECK(fz_c_agrees(nc, ec, na, written, usec_in, ng_out));
	return 0;
}
