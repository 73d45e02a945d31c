/*
 * The capture-file device of `rxpath run --pcap` (tools/capfile.c).
 */
#ifndef RXPATH_TOOLS_CAPFILE_H
#define RXPATH_TOOLS_CAPFILE_H

#include "rxpath/dev.h"

/* A one-queue device giving the frames of the capture at path ("-":
 * stdin), read through rxpath defrag's reader (libwiretap): pcap, pcapng
 * whose interfaces have different link types, gzip- or zstd-compressed
 * files and wiretap's other formats. NULL and one line in err when it
 * cannot be opened. */
struct rxp_dev *rxp_capfile_open(const char *path, struct rxp_pktpool *pp, char *err,
				 size_t errlen);

/* The format wiretap took d's file for ("pcap", "nsecpcap", "pcapng",
 * "modpcap", ...: its short names) and its compression ("gzip", "zstd",
 * "lz4" or NULL). */
const char *rxp_capfile_format(const struct rxp_dev *d);
const char *rxp_capfile_compression(const struct rxp_dev *d);

#endif
