/*
 * rxp_dev_open(): devices and wrappers from one spec string, so a command
 * line can say what to receive from without knowing the constructors.
 *
 *   spec    := [wrapper "+"]... device
 *   device  := "sim" [":" kv ("," kv)...]  |  "pcap:" PATH
 *            | "afpacket:" IF ["," kv]...   |  "afxdp:" IF ["," kv]...
 *   wrapper := "fault:" kv ("," kv)...      |  "capture:" PATH
 *
 * sim keys: queues ring buf page pages seed hw_burst count min max v6 mtu
 * loss flows dport inflight shuffle replay=PATH src=NAME (pages: page-pool
 * pages per queue; src: an application's source, rxp_dev_open_with);
 * afpacket/afxdp keys: queues; fault keys: seed loss dup reorder zl
 * tx_loss. Wrappers apply left to right outermost first:
 * "capture:x.pcap+fault:loss=0.1+sim" captures what the fault injector
 * delivers. Owns nothing after returning: the device owns the copies.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rxpath/dev.h"
#include "rxpath/log.h"
#include "rxpath/sim.h"

/* Split "k=v" at '='; numbers parsed by the caller. */
static int kv_next(char **s, char **k, char **v)
{
	char *p = *s, *e;

	if (!p || !*p)
		return 0;
	e = strchr(p, ',');
	if (e)
		*e++ = 0;
	*s = e;
	*k = p;
	*v = strchr(p, '=');
	if (!*v)
		return -1;
	*(*v)++ = 0;
	return 1;
}

static int num(const char *v, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(v, &end);
	return errno || end == v || *end ? -1 : 0;
}

struct open_ctx {
	const struct rxp_dev_source *src;
	unsigned nsrc;
};

#define SIM_KEYS                                                                          \
	"queues ring buf page pages seed hw_burst count min max v6 mtu loss flows dport " \
	"inflight shuffle replay src"

/* Whether k is one of SIM_KEYS (a whole word). */
static bool sim_key(const char *k)
{
	static const char keys[] = SIM_KEYS;
	size_t n = strlen(k);

	for (const char *p = keys; n && (p = strstr(p, k)); p += n)
		if ((p == keys || p[-1] == ' ') && (p[n] == ' ' || !p[n]))
			return true;
	return false;
}

static struct rxp_dev *open_sim(char *args, struct rxp_pktpool *pp, const struct open_ctx *ctx)
{
	struct rxp_gen_config gc = {.count = 100000};
	struct rxp_sim_config sc = {.gen = &gc};
	char *k = NULL, *v;
	double x;
	int rc;

	while ((rc = kv_next(&args, &k, &v)) > 0) {
		if (!strcmp(k, "replay")) {
			sc.pcap_path = v;
			sc.gen = NULL;
			continue;
		}
		if (!strcmp(k, "src")) {
			unsigned i;

			for (i = 0; i < ctx->nsrc && strcmp(ctx->src[i].name, v); i++)
				;
			if (i == ctx->nsrc) {
				rxp_log(RXP_LOG_ERR, "sim: no source '%s'", v);
				errno = EINVAL;
				return NULL;
			}
			sc.src_open = ctx->src[i].open;
			sc.src_arg = ctx->src[i].arg;
			sc.gen = NULL;
			continue;
		}
		/* every key is a count or a rate: finite, >= 0, and small enough
		 * for the 32-bit fields (converting more would be undefined) */
		if (num(v, &x) || !(x >= 0) || x > 4294967295.0)
			goto bad;
		if (!strcmp(k, "queues"))
			sc.nqueues = (unsigned)x;
		else if (!strcmp(k, "ring"))
			sc.ring_size = (unsigned)x;
		else if (!strcmp(k, "buf"))
			sc.buf_size = (uint32_t)x;
		else if (!strcmp(k, "page"))
			sc.page_size = (uint32_t)x;
		else if (!strcmp(k, "pages"))
			sc.n_pages = (uint32_t)x;
		else if (!strcmp(k, "seed"))
			sc.seed = gc.seed = (uint64_t)x;
		else if (!strcmp(k, "hw_burst") && x <= RXP_SIM_HW_BURST_MAX)
			sc.hw_burst = (unsigned)x;
		else if (!strcmp(k, "count"))
			gc.count = (uint64_t)x;
		else if (!strcmp(k, "min"))
			gc.min_payload = (uint32_t)x;
		else if (!strcmp(k, "max"))
			gc.max_payload = (uint32_t)x;
		else if (!strcmp(k, "v6"))
			gc.ipv6_pct = (unsigned)x;
		else if (!strcmp(k, "mtu"))
			gc.mtu = (uint32_t)x;
		else if (!strcmp(k, "loss"))
			gc.loss = x;
		else if (!strcmp(k, "flows"))
			gc.flows = (unsigned)x;
		else if (!strcmp(k, "dport") && x <= 65535)
			gc.dport = (uint16_t)x;
		else if (!strcmp(k, "inflight"))
			gc.in_flight = (unsigned)x;
		else if (!strcmp(k, "shuffle"))
			gc.shuffle = x != 0;
		else
			goto bad;
	}
	if (rc < 0)
		goto bad;
	return rxp_sim_open(&sc, pp);
bad:
	/* the key, and its value when the key is one sim knows */
	if (k && v && sim_key(k))
		rxp_log(RXP_LOG_ERR, "sim: bad value '%s' for '%s'%s", v, k,
			!strcmp(k, "hw_burst") ? " (at most 65536)"
			: !strcmp(k, "dport")  ? " (at most 65535)"
					       : " (a number, 0 or more)");
	else
		rxp_log(RXP_LOG_ERR, "sim: bad option '%s' (keys: %s)", k ? k : "", SIM_KEYS);
	errno = EINVAL;
	return NULL;
}

/* "IF[,queues=N]" */
static int iface_args(char *args, const char **ifname, unsigned *nq)
{
	char *rest = strchr(args, ','), *k, *v;
	double x;
	int rc;

	if (rest)
		*rest++ = 0;
	*ifname = args;
	while ((rc = kv_next(&rest, &k, &v)) > 0) {
		if (strcmp(k, "queues") || num(v, &x) || x < 1 || x > 64)
			return -1;
		*nq = (unsigned)x;
	}
	return rc < 0 || !**ifname ? -1 : 0;
}

static struct rxp_dev *open_device(char *s, struct rxp_pktpool *pp, const struct open_ctx *ctx)
{
	char *args = strchr(s, ':'), whole[256];
	unsigned nq = 1;

	snprintf(whole, sizeof(whole), "%s", s); /* for the message: args is cut up */

	if (args)
		*args++ = 0;
	if (!strcmp(s, "sim"))
		return open_sim(args, pp, ctx);
	if (args && !strcmp(s, "pcap"))
		return rxp_pcap_open(args, pp);
	if (args && !strcmp(s, "afpacket")) {
		struct rxp_afpacket_config c = {0};

		if (iface_args(args, &c.ifname, &nq))
			goto bad;
		c.nqueues = nq;
		return rxp_afpacket_open(&c, pp);
	}
	if (args && !strcmp(s, "afxdp")) {
		struct rxp_afxdp_config c = {0};

		if (iface_args(args, &c.ifname, &nq))
			goto bad;
		c.nqueues = nq;
		return rxp_afxdp_open(&c, pp);
	}
bad:
	if (args && (!strcmp(s, "afpacket") || !strcmp(s, "afxdp")))
		rxp_log(RXP_LOG_ERR, "device spec '%s' not understood (%s:IF[,queues=N])", whole,
			s);
	else
		rxp_log(RXP_LOG_ERR, "device spec '%s' not understood (sim, pcap, afpacket, afxdp)",
			whole);
	errno = EINVAL;
	return NULL;
}

static struct rxp_dev *wrap(char *w, struct rxp_dev *inner)
{
	char *args = strchr(w, ':'), *k = NULL, *v;
	struct rxp_fault_config fc = {0};
	double x;
	int rc;

	if (!args)
		goto bad;
	*args++ = 0;
	if (!strcmp(w, "capture"))
		return rxp_capture_wrap(inner, args, RXP_CAPTURE_RX);
	if (strcmp(w, "fault"))
		goto bad;
	while ((rc = kv_next(&args, &k, &v)) > 0) {
		if (num(v, &x) || !(x >= 0) || x > 4294967295.0)
			goto bad;
		if (!strcmp(k, "seed"))
			fc.seed = (uint64_t)x;
		else if (!strcmp(k, "loss"))
			fc.loss = x;
		else if (!strcmp(k, "dup"))
			fc.duplicate = x;
		else if (!strcmp(k, "reorder"))
			fc.reorder_window = (unsigned)x;
		else if (!strcmp(k, "tx_loss"))
			fc.tx_loss = x;
		else if (!strcmp(k, "zl"))
			fc.zero_len = x;
		else
			goto bad;
	}
	if (rc < 0)
		goto bad;
	return rxp_fault_wrap(inner, &fc);
bad:
	rxp_log(RXP_LOG_ERR, "wrapper spec '%s' not understood", w);
	rxp_dev_close(inner);
	errno = EINVAL;
	return NULL;
}

struct rxp_dev *rxp_dev_open(const char *spec, struct rxp_pktpool *pp)
{
	return rxp_dev_open_with(spec, pp, NULL, 0);
}

struct rxp_dev *rxp_dev_open_with(const char *spec, struct rxp_pktpool *pp,
				  const struct rxp_dev_source *src, unsigned nsrc)
{
	struct open_ctx ctx = {.src = src, .nsrc = src ? nsrc : 0};
	char *s = spec ? strdup(spec) : NULL, *parts[16], *p;
	unsigned n = 0;
	struct rxp_dev *d;
	int err;

	if (!s || !pp) {
		free(s);
		errno = EINVAL;
		return NULL;
	}
	/* Wrappers are the parts that start with a wrapper's name; the rest,
	 * '+' included, is the device (a capture's path may hold one). */
	for (p = s; n < 15 && (!strncmp(p, "fault:", 6) || !strncmp(p, "capture:", 8));) {
		char *e = strchr(p, '+');

		if (!e)
			break;
		*e = 0;
		parts[n++] = p;
		p = e + 1;
	}
	parts[n++] = p;
	if (!strncmp(p, "fault:", 6) || !strncmp(p, "capture:", 8)) {
		rxp_log(RXP_LOG_ERR,
			"spec '%s': a wrapper needs a device after it (WRAPPER+DEVICE)", spec);
		free(s);
		errno = EINVAL;
		return NULL;
	}
	d = open_device(parts[n - 1], pp, &ctx);
	for (unsigned i = n - 1; d && i-- > 0;)
		d = wrap(parts[i], d);
	err = errno;
	free(s);
	errno = err;
	return d;
}
