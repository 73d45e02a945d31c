/*
 * Live interfaces for the subcommands (see live.h). AF_XDP comes first
 * because it takes frames without a copy into the socket (zero-copy) or
 * with one (copy mode); AF_PACKET's TPACKET_V3 ring works everywhere
 * root does. libxdp wants a BPF filesystem at /sys/fs/bpf and says so on
 * every open when it is missing: as root we mount one there (in a network
 * namespace entered with `ip netns exec` that is the namespace's own mount
 * of /sys), and say nothing more about it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "live.h"
#include "opt.h"

#ifndef BPF_FS_MAGIC
#define BPF_FS_MAGIC 0xcafe4a11
#endif

int rxp_live_mode_parse(const char *s, enum rxp_live_mode *m)
{
	if (!strcmp(s, "auto"))
		*m = RXP_LIVE_AUTO;
	else if (!strcmp(s, "afxdp"))
		*m = RXP_LIVE_AFXDP;
	else if (!strcmp(s, "afpacket"))
		*m = RXP_LIVE_AFPACKET;
	else
		return -1;
	return 0;
}

/* A bpffs at /sys/fs/bpf, mounted if missing and we may (root). */
static void ensure_bpffs(void)
{
	struct statfs sf;

	if (statfs("/sys/fs/bpf", &sf) == 0 && (unsigned long)sf.f_type == BPF_FS_MAGIC)
		return;
	if (geteuid() == 0)
		(void)mount("bpf", "/sys/fs/bpf", "bpf", 0, "mode=0700");
}

struct rxp_dev *rxp_live_open(const char *cmd, const char *ifname, unsigned nq,
			      enum rxp_live_mode mode, struct rxp_pktpool *pp)
{
	char why[256] = "";
	size_t w = 0;
	struct rxp_dev *d = NULL;
	int err = 0;

	if (mode != RXP_LIVE_AFPACKET) {
		struct rxp_afxdp_config xc = {.ifname = ifname, .nqueues = nq, .zero_copy = true};

		setenv("LIBXDP_SKIP_DISPATCHER", "1", 0);
		ensure_bpffs();
		d = rxp_afxdp_open(&xc, pp);
		if (d) {
			fprintf(stderr, "rxpath %s: %s: AF_XDP, zero-copy, %u queue%s\n", cmd,
				ifname, nq, nq == 1 ? "" : "s");
			return d;
		}
		err = errno;
		rxp_cli_cause_clear();
		w += (size_t)snprintf(why + w, sizeof(why) - w, "zero-copy: %s", strerror(err));
		xc.zero_copy = false;
		d = rxp_afxdp_open(&xc, pp);
		if (d) {
			fprintf(stderr, "rxpath %s: %s: AF_XDP, copy mode, %u queue%s (%s)\n", cmd,
				ifname, nq, nq == 1 ? "" : "s", why);
			return d;
		}
		err = errno;
		if (w < sizeof(why))
			w += (size_t)snprintf(why + w, sizeof(why) - w, "; copy mode: %s",
					      strerror(err));
		if (mode == RXP_LIVE_AFXDP || err == ENODEV) {
			errno = err;
			return NULL; /* no such interface: AF_PACKET would say the same */
		}
	}
	{
		struct rxp_afpacket_config ac = {.ifname = ifname, .nqueues = nq};

		d = rxp_afpacket_open(&ac, pp);
		if (!d)
			return NULL;
		fprintf(stderr, "rxpath %s: %s: AF_PACKET, TPACKET_V3 ring, %u socket%s%s%s%s\n",
			cmd, ifname, nq, nq == 1 ? "" : "s in a fanout group",
			why[0] ? " (AF_XDP " : "", why, why[0] ? ")" : "");
	}
	return d;
}
