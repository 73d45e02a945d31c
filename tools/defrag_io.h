/*
 * Capture files for `rxpath defrag`, through libwiretap (what tshark and
 * editcap use): read pcap, pcapng (interfaces of different link types
 * included) and the other formats wiretap knows, gzip- or zstd-compressed,
 * from a file or stdin ("-"); write pcap or pcapng to a temporary file
 * beside OUT that is renamed onto OUT only when the run succeeds, or to
 * stdout ("-").
 *
 * Measured on a 570 MB capture of 400k frames (2-vCPU VM, page cache warm,
 * read + write of every frame): libpcap 0.49-1.05 s, libwiretap 0.52-1.07 s,
 * the same within this machine's noise; reading alone 0.13 s and 0.12-0.14 s.
 * libpcap cannot read a pcapng whose interfaces have different link types
 * nor write pcapng, and reads no compressed file; wiretap does all three,
 * so it is the one used.
 */
#ifndef RXPATH_TOOLS_DEFRAG_IO_H
#define RXPATH_TOOLS_DEFRAG_IO_H

#include <stdbool.h>
#include <stdint.h>

struct dio_in;
struct dio_out;
struct rxp_page;

/* One record read. data is valid until the next dio_read(). */
struct dio_rec {
	const uint8_t *data;
	uint32_t caplen; /* bytes in data */
	uint32_t len; /* bytes on the wire */
	int dlt; /* the frame's link type (DLT_ value), -1 when it has none */
	bool packet; /* a packet (else another record type, written as it is) */
	uint64_t ts_ns; /* its timestamp */
	uint64_t number; /* 1 for the first record, as tshark's frame.number */
	uint32_t iface; /* its interface (pcapng), 0 otherwise */
	/* NULL, or a page data lies in, at page_off (a plain pcap file read
	 * mapped, after dio_in_refs): a reference taken on it (rxp_page_get)
	 * keeps the record's bytes readable past the next dio_read, until it
	 * is put back; every reference must be gone before dio_close_in */
	struct rxp_page *page;
	uint32_t page_off;
	/* data stays readable, as it is, until dio_close_in (a plain pcap
	 * file read mapped), with or without a page */
	bool stable;
};

/* How a read ended. */
enum dio_end {
	DIO_EOF = 0, /* the whole input was read */
	DIO_CUT, /* cut off inside a record */
	DIO_BAD, /* a record that does not parse, or a read error */
};

/* Open IN ("-": stdin). NULL and one line in err (no prefix) on failure. */
struct dio_in *dio_open_in(const char *path, char *err, size_t errlen);
/* 1 and *r filled, or 0 at the end of input (dio_in_end tells how). */
int dio_read(struct dio_in *in, struct dio_rec *r);
/* Look ahead, for hints only: the record after the one dio_peek gave
 * last (at first, after the one last read), without reading it; NULL when
 * IN is not a mapped plain pcap, or the record is not there or looks
 * wrong (dio_read is what judges it). Valid until that record is read. */
const uint8_t *dio_peek(struct dio_in *in, uint32_t *caplen, int *dlt);
enum dio_end dio_in_end(const struct dio_in *in, const char **why);
/* Give records a page (dio_rec.page) from now on where IN is read mapped,
 * while the parts of the file behind the record being read that references
 * still hold (2 MiB each) come to at most max_bytes; 0 (the default): no
 * pages. */
void dio_in_refs(struct dio_in *in, uint64_t max_bytes);
bool dio_in_is_pcapng(const struct dio_in *in);
/* IN's link type (DLT_ value) when its frames all have one, as a pcap's
 * do; DIO_DLT_PER_FRAME when each frame has its own (a pcapng of several);
 * -1 when it has none a pcap can hold (a file wiretap took for another
 * format: a text file can pass for MP4). dio_in_encap_name: wiretap's
 * words for it. */
#define DIO_DLT_PER_FRAME (-2)
int dio_in_dlt(const struct dio_in *in);
const char *dio_in_encap_name(const struct dio_in *in);
/* Name of the input's format ("pcap", "pcapng", ...) and compression
 * ("gzip", "zstd", "lz4" or NULL). */
const char *dio_in_format(const struct dio_in *in);
const char *dio_in_compression(const struct dio_in *in);
void dio_close_in(struct dio_in *in);

/* Refuse OUT when it is a directory, or names the same file as IN
 * (rxp_same_path: by device and inode through links, or by resolved place
 * when one does not exist yet): 0, or -1 with a line in err. */
int dio_check_paths(const char *in, const char *out, char *err, size_t errlen);

/* Open OUT ("-": stdout) for records of in: pcapng when pcapng is set, IN
 * is pcapng or its link types differ per packet, else pcap with IN's
 * timestamp resolution (microseconds or nanoseconds). A file is written to
 * a temporary beside OUT (removed if the process is killed by SIGINT,
 * SIGTERM, SIGHUP or SIGPIPE). NULL and a line in err on failure. */
struct dio_out *dio_open_out(const char *path, struct dio_in *in, bool pcapng, char *err,
			     size_t errlen);
bool dio_out_is_pcapng(const struct dio_out *out);
/* The record last read from in, as it was (options and all). 0 or -1. */
int dio_write_same(struct dio_out *out, struct dio_in *in);
/* A new frame in place of the record last read from in: same interface,
 * link type and timestamp (ts_ns when not 0), these bytes. 0 or -1. */
int dio_write_frame(struct dio_out *out, struct dio_in *in, const uint8_t *data, uint32_t len,
		    uint64_t ts_ns);
/* Room for a frame of up to max bytes inside OUT's own write buffer: a
 * frame built there and given to dio_write_frame is not copied again.
 * Valid until the next write to out; NULL when OUT has no such buffer
 * (pcapng) or cannot be written. */
uint8_t *dio_out_room(struct dio_out *out, uint32_t max);
/* The same for a frame of another interface than the record last read (a
 * fragment given up on later, written with --keep-incomplete): interface
 * iface, link type dlt (DLT_), timestamp ts_ns. */
int dio_write_frame_on(struct dio_out *out, struct dio_in *in, uint32_t iface, int dlt,
		       const uint8_t *data, uint32_t len, uint64_t ts_ns);
/* The dgram->len bytes at dst, inside the frame just written from
 * dio_out_room's room (dio_write_frame_on), are dgram's: copied there by
 * OUT's writer thread just before it writes the buffer (its reading of
 * them then overlaps the parse, on the other core), or here when OUT has
 * no writer thread or DIO_OUT_FILLS are waiting. Consumes dgram (on this
 * thread, once its buffer is written). 0, or -1 when dgram is shorter
 * than it says. */
#define DIO_OUT_NBUF 3u /* OUT's buffers, one filled while the writer has the others */
#define DIO_OUT_FILLS 1024u /* per buffer: datagrams OUT holds DIO_OUT_NBUF times this at most */
struct rxp_pkt;
int dio_out_fill(struct dio_out *out, uint8_t *dst, struct rxp_pkt *dgram);
/* Whether dio_out_fill would leave the copy to the writer now. */
bool dio_out_fill_ok(const struct dio_out *out);
/* Records written that OUT's format cannot hold (other record types to
 * pcap), skipped. */
uint64_t dio_out_skipped(const struct dio_out *out);
/* Finish: commit renames the temporary onto OUT, else it is removed.
 * 0, or -1 with a line in err (OUT then does not exist or is unchanged). */
int dio_close_out(struct dio_out *out, bool commit, char *err, size_t errlen);

#endif
