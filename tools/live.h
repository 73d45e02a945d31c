/*
 * Opening a live interface for a subcommand (rxpath run --iface, rxpath
 * capture --iface): AF_XDP zero-copy, then AF_XDP copy mode, then AF_PACKET,
 * saying once on stderr which one is in use and why the ones before it were
 * not.
 */
#ifndef RXPATH_TOOLS_LIVE_H
#define RXPATH_TOOLS_LIVE_H

#include "rxpath/dev.h"

enum rxp_live_mode {
	RXP_LIVE_AUTO = 0, /* AF_XDP zero-copy, AF_XDP copy, AF_PACKET */
	RXP_LIVE_AFXDP, /* AF_XDP only (zero-copy, then copy) */
	RXP_LIVE_AFPACKET, /* AF_PACKET only */
};

/* "auto", "afxdp", "afpacket": 0, or -1 for another name. */
int rxp_live_mode_parse(const char *s, enum rxp_live_mode *m);

/* Open ifname with nqueues queues. On success one line on stderr,
 * "rxpath CMD: IF: BACKEND, MODE, N queue(s) (why not the others)";
 * on failure NULL with errno set and nothing printed but the caller's
 * message (see rxp_cli_cause for the cause). */
struct rxp_dev *rxp_live_open(const char *cmd, const char *ifname, unsigned nqueues,
			      enum rxp_live_mode mode, struct rxp_pktpool *pp);

#endif
