/*
 * Option values and usage errors for every subcommand (see opt.h). Numbers
 * are parsed by hand rather than with strtoull, which accepts a sign and
 * leading blanks and wraps "-1" to 2^64 - 1: that is how `--mem-limit -1`
 * used to pass.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd.h"
#include "opt.h"
#include "rxpath/log.h"

/* Digits of s into *v (no sign, no blanks); the end in *end. */
static int digits(const char *s, uint64_t *v, const char **end)
{
	uint64_t x = 0;
	const char *p = s;

	for (; *p >= '0' && *p <= '9'; p++) {
		unsigned d = (unsigned)(*p - '0');

		if (x > (UINT64_MAX - d) / 10)
			return -ERANGE;
		x = x * 10 + d;
	}
	if (p == s)
		return -EINVAL;
	*v = x;
	*end = p;
	return 0;
}

static uint64_t suffix_mult(char c, enum rxp_num_unit unit)
{
	static const char sfx[] = "kmg";
	const char *at;
	unsigned pos;

	if (unit == RXP_NUM_PLAIN || !c)
		return 0;
	at = strchr(sfx, c | 0x20);
	if (!at || (unit == RXP_NUM_COUNT && c != (c | 0x20)))
		return 0;
	pos = (unsigned)(at - sfx) + 1;
	if (unit == RXP_NUM_BYTES)
		return 1ull << (10 * pos);
	return pos == 1 ? 1000ull : pos == 2 ? 1000000ull : 1000000000ull;
}

int rxp_parse_u64(const char *s, enum rxp_num_unit unit, uint64_t min, uint64_t max, uint64_t *out,
		  const char **why)
{
	const char *end, *dummy;
	uint64_t v, m = 1;
	int r;

	if (!why)
		why = &dummy;
	if (!s || !*s) {
		*why = "empty";
		return -EINVAL;
	}
	if (*s == '-' || *s == '+') {
		*why = "a sign is not allowed";
		return -EINVAL;
	}
	r = digits(s, &v, &end);
	if (r == -EINVAL) {
		*why = "not a number";
		return r;
	}
	if (r == -ERANGE) {
		*why = "too large";
		return r;
	}
	if (*end) {
		m = suffix_mult(*end, unit);
		if (!m || end[1]) {
			*why = m ? "trailing characters" : "unknown suffix or trailing characters";
			return -EINVAL;
		}
		if (v > UINT64_MAX / m) {
			*why = "too large";
			return -ERANGE;
		}
		v *= m;
	}
	if (v < min || v > max) {
		*why = "out of range";
		return -ERANGE;
	}
	*out = v;
	return 0;
}

int rxp_parse_duration(const char *s, uint64_t min_ns, uint64_t max_ns, uint64_t *ns,
		       const char **why)
{
	const char *end, *dummy;
	uint64_t whole, frac = 0, fscale = 1, unit = 1000000000ull, v;
	int r;

	if (!why)
		why = &dummy;
	if (!s || !*s) {
		*why = "empty";
		return -EINVAL;
	}
	if (*s == '-' || *s == '+') {
		*why = "a sign is not allowed";
		return -EINVAL;
	}
	r = digits(s, &whole, &end);
	if (r) {
		*why = r == -ERANGE ? "too large" : "not a number";
		return r;
	}
	if (*end == '.') {
		const char *f = end + 1;

		for (end = f; *end >= '0' && *end <= '9'; end++)
			if (fscale < 1000000000ull) { /* digits past 1 ns are ignored */
				frac = frac * 10 + (uint64_t)(*end - '0');
				fscale *= 10;
			}
		if (end == f) {
			*why = "not a number";
			return -EINVAL;
		}
	}
	if (!strcmp(end, "ms"))
		unit = 1000000ull;
	else if (!strcmp(end, "us"))
		unit = 1000ull;
	else if (!strcmp(end, "ns"))
		unit = 1;
	else if (*end && strcmp(end, "s")) {
		*why = "unknown unit (s, ms, us, ns) or trailing characters";
		return -EINVAL;
	}
	if (whole > UINT64_MAX / unit) {
		*why = "too large";
		return -ERANGE;
	}
	v = whole * unit + frac * unit / fscale;
	if (v < whole * unit || v < min_ns || v > max_ns) {
		*why = "out of range";
		return -ERANGE;
	}
	*ns = v;
	return 0;
}

/* v with the largest suffix that divides it exactly ("64k", "1024g"). */
static void num_text(char *buf, size_t n, enum rxp_num_unit unit, uint64_t v)
{
	static const char sfx[] = "gmk";
	uint64_t base = unit == RXP_NUM_BYTES ? 1024 : 1000;

	if (unit != RXP_NUM_PLAIN && v)
		for (unsigned i = 0; i < 3; i++) {
			uint64_t m = base * (i < 2 ? base : 1) * (i < 1 ? base : 1);

			if (v % m == 0) {
				snprintf(buf, n, "%" PRIu64 "%c", v / m, sfx[i]);
				return;
			}
		}
	snprintf(buf, n, "%" PRIu64, v);
}

static void range_text(char *buf, size_t n, enum rxp_num_unit unit, uint64_t min, uint64_t max)
{
	char lo[32], hi[32];

	num_text(lo, sizeof(lo), unit, min);
	num_text(hi, sizeof(hi), unit, max);
	if (max == UINT64_MAX)
		snprintf(buf, n, "at least %s", lo);
	else
		snprintf(buf, n, "%s..%s", lo, hi);
}

int rxp_opt_u64(const char *cmd, const char *opt, const char *arg, enum rxp_num_unit unit,
		uint64_t min, uint64_t max, uint64_t *out)
{
	const char *why;
	char range[96];

	if (!rxp_parse_u64(arg, unit, min, max, out, &why))
		return 0;
	range_text(range, sizeof(range), unit, min, max);
	fprintf(stderr, "rxpath %s: bad %s '%s': %s (%s%s)\n", cmd, opt, arg, why, range,
		unit == RXP_NUM_BYTES	? ", suffix k, m or g"
		: unit == RXP_NUM_COUNT ? ", suffix k, m or g for 10^3, 10^6, 10^9"
					: "");
	return -1;
}

int rxp_opt_duration(const char *cmd, const char *opt, const char *arg, uint64_t min_ns,
		     uint64_t max_ns, uint64_t *ns)
{
	const char *why;

	if (!rxp_parse_duration(arg, min_ns, max_ns, ns, &why))
		return 0;
	fprintf(stderr, "rxpath %s: bad %s '%s': %s (seconds, %.9g..%.9g)\n", cmd, opt, arg, why,
		(double)min_ns / 1e9, (double)max_ns / 1e9);
	return -1;
}

int rxp_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "rxpath %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return RXP_EXIT_USAGE;
}

int rxp_opt_getopt_error(const char *cmd, int ret, int argc, char **argv)
{
	/* getopt_long has moved optind past the offending word (or, for a
	 * missing value at the end, to argc). */
	const char *word = optind > 0 && optind <= argc ? argv[optind - 1] : "?";
	char shortopt[3] = {'-', (char)optopt, 0};

	if (optopt && word[0] == '-' && word[1] != '-')
		word = shortopt; /* within a cluster like -xvf */
	if (ret == ':')
		return rxp_usage_error(cmd, "option %s needs a value (see rxpath %s --help)", word,
				       cmd);
	return rxp_usage_error(cmd, "unknown option %s (see rxpath %s --help)", word, cmd);
}

/* ---- the library's messages ---------------------------------------------- */

static const char *log_cmd = "";
static char last_err[512];

static void cli_log(enum rxp_log_level lvl, const char *msg, void *arg)
{
	(void)arg;
	if (lvl == RXP_LOG_ERR)
		snprintf(last_err, sizeof(last_err), "%s", msg);
	else if (lvl <= RXP_LOG_WARN)
		fprintf(stderr, "rxpath %s: %s\n", log_cmd, msg);
}

void rxp_cli_log_init(const char *cmd)
{
	log_cmd = cmd;
	last_err[0] = 0;
	rxp_set_log(cli_log, NULL);
}

void rxp_cli_cause_clear(void)
{
	last_err[0] = 0;
}

const char *rxp_cli_cause(int err)
{
	static char buf[sizeof(last_err)];
	static const int sys[] = {ENOENT, EACCES, EPERM, EISDIR, ENOTDIR, ENODEV,
				  ENXIO,  ENOSPC, EROFS, ELOOP,	 EBUSY,	  ENAMETOOLONG};
	bool plain = false;

	for (size_t i = 0; i < sizeof(sys) / sizeof(sys[0]); i++)
		plain |= err == sys[i];
	if (last_err[0] && !plain)
		snprintf(buf, sizeof(buf), "%s", last_err);
	else
		snprintf(buf, sizeof(buf), "%s", strerror(err ? err : EIO));
	last_err[0] = 0;
	return buf;
}

/* Where path is: realpath() of it when it exists, else of its directory
 * with its last component added; false when neither resolves. */
static bool canonical_once(const char *path, char *out)
{
	char dir[PATH_MAX], res[PATH_MAX];
	const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;

	if (realpath(path, out))
		return true;
	if (!*base || strlen(path) >= sizeof(dir))
		return false;
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == path)
		snprintf(dir, sizeof(dir), "/");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	if (!realpath(dir, res))
		return false;
	return snprintf(out, PATH_MAX, "%s/%s", strcmp(res, "/") ? res : "", base) < PATH_MAX;
}

/* canonical_once(), and a link to a file not made yet followed one step
 * (to where writing through it would create the file). */
static bool canonical(const char *path, char *out)
{
	const char *slash = strrchr(path, '/');
	char link[PATH_MAX], to[PATH_MAX];
	struct stat st;
	ssize_t n;

	if (realpath(path, out))
		return true;
	if (lstat(path, &st) || !S_ISLNK(st.st_mode) ||
	    (n = readlink(path, link, sizeof(link) - 1)) <= 0)
		return canonical_once(path, out);
	link[n] = 0;
	if (link[0] != '/' && slash) {
		if (snprintf(to, sizeof(to), "%.*s/%s", (int)(slash - path), path, link) >=
		    (int)sizeof(to))
			return false;
	} else {
		snprintf(to, sizeof(to), "%s", link);
	}
	return canonical_once(to, out);
}

bool rxp_same_path(const char *a, const char *b)
{
	char ca[PATH_MAX], cb[PATH_MAX];
	struct stat sa, sb;

	if (!a || !b || !strcmp(a, "-") || !strcmp(b, "-"))
		return false;
	if (!strcmp(a, b))
		return true;
	if (!stat(a, &sa) && !stat(b, &sb))
		return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
	return canonical(a, ca) && canonical(b, cb) && !strcmp(ca, cb);
}

const char *rxp_spec_pcap_path(const char *spec)
{
	const char *base = spec ? strrchr(spec, '+') : NULL;

	base = base ? base + 1 : spec;
	return base && !strncmp(base, "pcap:", 5) && base[5] ? base + 5 : NULL;
}

int rxp_refuse_overwrite(const char *cmd, const char *in, const char *out)
{
	if (!rxp_same_path(in, out))
		return 0;
	return rxp_usage_error(cmd, "%s and %s are the same file: refusing to overwrite the input",
			       in, out);
}

static bool ends_with(const char *s, const char *suf)
{
	size_t n = strlen(s), m = strlen(suf);

	return n > m && !strcasecmp(s + n - m, suf);
}

void rxp_note_pcap_name(const char *cmd, const char *path)
{
	static const char *const sufs[] = {".pcapng", ".gz", ".zst", ".lz4"};

	if (!path || !strcmp(path, "-"))
		return;
	for (size_t i = 0; i < sizeof(sufs) / sizeof(sufs[0]); i++)
		if (ends_with(path, sufs[i])) {
			fprintf(stderr,
				"rxpath %s: note: %s is written as classic pcap (nanosecond, "
				"uncompressed), whatever its name says\n",
				cmd, path);
			return;
		}
}

int rxp_refuse_spec_overwrite(const char *cmd, const char *spec, const char *out)
{
	const char *in = rxp_spec_pcap_path(spec), *l = spec;
	char path[PATH_MAX];

	if (!in)
		return 0;
	while (l && l < in) {
		const char *end = strchr(l, '+');

		if (!end)
			break;
		if (!strncmp(l, "capture:", 8) && (size_t)(end - l - 8) < sizeof(path)) {
			snprintf(path, sizeof(path), "%.*s", (int)(end - l - 8), l + 8);
			if (rxp_refuse_overwrite(cmd, in, path))
				return RXP_EXIT_USAGE;
		}
		l = end + 1;
	}
	return rxp_refuse_overwrite(cmd, in, out);
}
