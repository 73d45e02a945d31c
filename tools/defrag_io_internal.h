/*
 * What the three parts of rxpath defrag's capture I/O share (defrag_io.c:
 * opening and reading through wiretap or libpcap; defrag_io_fast.c: plain
 * pcap files parsed in place; defrag_io_out.c: writing). Private to them.
 */
#ifndef RXPATH_TOOLS_DEFRAG_IO_INTERNAL_H
#define RXPATH_TOOLS_DEFRAG_IO_INTERNAL_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include <pcap/pcap.h>
#include <wiretap/wtap.h>

#include "defrag_io.h"

struct fast_in;

#define SNAP_MIN 262144 /* reassembled frames are longer than any fragment */
#define ENCAP_MAX 512 /* wiretap's encapsulations, for the DLT_ map */

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
	char *path; /* IN's, for libpcap (malloc()ed: most are short) */
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

/* wiretap's encapsulation -> the DLT_ value libpcap would report, built
 * from wiretap's own table (its reverse is not exported); the lowest DLT
 * for an encapsulation several map to (DLT_RAW 12 before 14 and 101). */
extern int dio_encap_dlt[ENCAP_MAX];

/* A pcap record's fraction of a second carried into its seconds (see
 * defrag_io.c). */
void dio_ts_carry(wtap_rec *rec);

/* defrag_io_fast.c: take the plain pcap file in->pc opened over when
 * read_fast can read it as libpcap would (then in->fast is set and in->pc
 * closed); read its next record; let it go. */
void dio_fast_open(struct dio_in *in);
int dio_read_fast(struct dio_in *in, struct dio_rec *r);
void dio_fast_close(struct fast_in *f);
void dio_fast_refs(struct fast_in *f, uint64_t max_bytes);
/* Another thread takes the mapped file's upkeep over from its reader
 * thread (which ends): kick(arg) asks it, from the parser's thread, to
 * call dio_fast_serve soon. false (nothing changed) when f has no such
 * thread. */
bool dio_fast_take_service(struct fast_in *f, void (*kick)(void *), void *arg);
/* The upkeep due now, on the thread that took it over. */
void dio_fast_serve(struct fast_in *f);
/* That thread ends (on the parser's thread, before it is joined): no more
 * kicks; what is let go after stays mapped until dio_fast_close. */
void dio_fast_drop_service(struct fast_in *f);

/* Switch a plain pcap file not yet read from to libpcap (or read_fast);
 * false if it is not one (then wiretap goes on). */
bool dio_use_libpcap(struct dio_in *in);

/* Whether OUT is a pcap file written by rxpath's own record writer (with
 * libpcap's header), not by wiretap's: its records are the frames' bytes
 * alone, as libpcap reads them back (wiretap writes some link types'
 * pseudo-headers into the record). */
bool dio_out_by_libpcap(const struct dio_out *out);

#endif
