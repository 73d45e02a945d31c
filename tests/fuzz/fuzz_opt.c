/*
 * The command line's number parsers (tools/opt.c) against a reference
 * built on strtoull and the rules opt.h documents. An input is
 * [1 byte: unit and bound selectors][8 bytes min][8 bytes max][text]; the
 * text (up to its first NUL) goes to rxp_parse_u64 in that unit and to
 * rxp_parse_duration, each with those bounds, and the results must be the
 * reference's exactly: the return (0, -EINVAL or -ERANGE), the value, and
 * a reason on every error.
 *
 * Reference rules: the text starts with a decimal digit (no blanks, no
 * sign; strtoull would take both); digits that do not fit in 64 bits are
 * -ERANGE, whatever follows. A number is then complete, or followed by one
 * suffix character and nothing else: k m g (10^3, 10^6, 10^9) for counts,
 * k m g in either case (2^10, 2^20, 2^30) for bytes, none for plain
 * numbers; anything else -EINVAL. A product past 2^64 - 1 and a value out
 * of [min, max] are -ERANGE. A duration is digits, optionally '.' and at
 * least one digit, then nothing, "s", "ms", "us" or "ns"; its value in
 * nanoseconds is rounded down (computed here exactly, from up to 18
 * fraction digits in 128 bits: more cannot change the floor).
 *
 * rxp_opt_u64 and rxp_opt_duration must agree with the parsers, and on an
 * error print exactly one line, "rxpath fz: bad --n 'TEXT': WHY (RANGE...)",
 * whose bounds, parsed back in the same unit, are min and max.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "opt.h"
#include "fuzz.h"

#define TEXTMAX 256

static int errfd = -1; /* a memfd stderr is pointed at around rxp_opt_*() */

static bool isdig(char c)
{
	return c >= '0' && c <= '9';
}

/* The reference for rxp_parse_u64. */
static int ref_u64(const char *s, enum rxp_num_unit unit, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;
	uint64_t m = 1;

	if (!isdig(s[0]))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	FZ_CHECK(errno == 0 && end > s);
	if (*end) {
		if (end[1] || unit == RXP_NUM_PLAIN)
			return -EINVAL;
		switch (*end) {
		case 'k':
			m = unit == RXP_NUM_COUNT ? 1000ull : 1ull << 10;
			break;
		case 'm':
			m = unit == RXP_NUM_COUNT ? 1000000ull : 1ull << 20;
			break;
		case 'g':
			m = unit == RXP_NUM_COUNT ? 1000000000ull : 1ull << 30;
			break;
		case 'K':
			m = unit == RXP_NUM_BYTES ? 1ull << 10 : 0;
			break;
		case 'M':
			m = unit == RXP_NUM_BYTES ? 1ull << 20 : 0;
			break;
		case 'G':
			m = unit == RXP_NUM_BYTES ? 1ull << 30 : 0;
			break;
		default:
			m = 0;
		}
		if (!m)
			return -EINVAL;
	}
	if ((unsigned __int128)v * m > UINT64_MAX)
		return -ERANGE;
	v *= m;
	if (v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

/* The reference for rxp_parse_duration. */
static int ref_duration(const char *s, uint64_t min, uint64_t max, uint64_t *ns)
{
	char *end;
	unsigned long long whole;
	unsigned __int128 f = 0, fs = 1, unit = 1000000000u, v;
	unsigned nd = 0;

	if (!isdig(s[0]))
		return -EINVAL;
	errno = 0;
	whole = strtoull(s, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	if (*end == '.') {
		end++;
		if (!isdig(*end))
			return -EINVAL;
		for (; isdig(*end); end++)
			if (nd++ < 18) {
				f = f * 10 + (unsigned)(*end - '0');
				fs *= 10;
			}
	}
	if (!strcmp(end, "ms"))
		unit = 1000000u;
	else if (!strcmp(end, "us"))
		unit = 1000u;
	else if (!strcmp(end, "ns"))
		unit = 1;
	else if (*end && strcmp(end, "s"))
		return -EINVAL;
	v = (unsigned __int128)whole * unit + f * unit / fs;
	if (v > UINT64_MAX || v < min || v > max)
		return -ERANGE;
	*ns = (uint64_t)v;
	return 0;
}

/* stderr into errfd until capture_end(); the descriptor to restore. */
static int capture_begin(void)
{
	int saved;

	fflush(stderr);
	saved = dup(2);
	FZ_CHECK(saved >= 0 && dup2(errfd, 2) == 2);
	return saved;
}

/* What rxp_opt_*() printed on stderr since capture_begin(), as a string
 * (empty when nothing); stderr is back as it was. */
static const char *capture_end(int saved, char *buf, size_t n)
{
	ssize_t got;

	fflush(stderr);
	FZ_CHECK(dup2(saved, 2) == 2);
	close(saved);
	got = pread(errfd, buf, n - 1, 0);
	FZ_CHECK(got >= 0);
	buf[got] = 0;
	/* stderr's descriptor shares errfd's file offset */
	FZ_CHECK(ftruncate(errfd, 0) == 0 && lseek(errfd, 0, SEEK_SET) == 0);
	return buf;
}

/* Bound text from the message ("64k", up to ')' ',' or ".."), parsed back. */
static uint64_t bound_back(const char **p, enum rxp_num_unit unit)
{
	char tok[32];
	size_t i = 0;
	uint64_t v = 0;

	while (**p && **p != ')' && **p != ',' && **p != '.' && i + 1 < sizeof(tok))
		tok[i++] = *(*p)++;
	tok[i] = 0;
	FZ_CHECK(rxp_parse_u64(tok, unit, 0, UINT64_MAX, &v, NULL) == 0);
	return v;
}

static void check_opt_u64(const char *s, enum rxp_num_unit unit, uint64_t min, uint64_t max,
			  int want, uint64_t wantv, const char *why)
{
	static char msg[2 * TEXTMAX + 256];
	char head[TEXTMAX + 128];
	const char *p;
	uint64_t v = ~wantv;
	int saved, r;

	saved = capture_begin();
	r = rxp_opt_u64("fz", "--n", s, unit, min, max, &v);
	p = capture_end(saved, msg, sizeof(msg));
	if (want == 0) {
		FZ_CHECK(r == 0 && v == wantv && !*p);
		return;
	}
	FZ_CHECK(r == -1);
	snprintf(head, sizeof(head), "rxpath fz: bad --n '%s': %s (", s, why);
	FZ_CHECK(!strncmp(p, head, strlen(head)));
	p += strlen(head);
	if (max == UINT64_MAX) {
		FZ_CHECK(!strncmp(p, "at least ", 9));
		p += 9;
		FZ_CHECK(bound_back(&p, unit) == min);
	} else {
		FZ_CHECK(bound_back(&p, unit) == min);
		FZ_CHECK(!strncmp(p, "..", 2));
		p += 2;
		FZ_CHECK(bound_back(&p, unit) == max);
	}
	if (unit != RXP_NUM_PLAIN) {
		FZ_CHECK(!strncmp(p, ", suffix k, m or g", 18));
		p = strchr(p, ')');
		FZ_CHECK(p);
	}
	FZ_CHECK(!strcmp(p, ")\n"));
}

static void check_opt_duration(const char *s, uint64_t min, uint64_t max, int want, uint64_t wantv,
			       const char *why)
{
	static char msg[2 * TEXTMAX + 256];
	char head[TEXTMAX + 128];
	const char *p;
	uint64_t v = ~wantv;
	int saved, r;

	saved = capture_begin();
	r = rxp_opt_duration("fz", "--n", s, min, max, &v);
	p = capture_end(saved, msg, sizeof(msg));
	if (want == 0) {
		FZ_CHECK(r == 0 && v == wantv && !*p);
		return;
	}
	FZ_CHECK(r == -1);
	snprintf(head, sizeof(head), "rxpath fz: bad --n '%s': %s (seconds, ", s, why);
	FZ_CHECK(!strncmp(p, head, strlen(head)));
	p += strlen(head);
	FZ_CHECK(strlen(p) >= 2 && !strcmp(p + strlen(p) - 2, ")\n") && !strchr(p, '\n')[1]);
}

/* Bounds worth hitting exactly: 0, powers, the largest value, and what
 * the input gives. */
static uint64_t bound(uint64_t raw, unsigned sel)
{
	switch (sel & 7) {
	case 0:
		return 0;
	case 1:
		return UINT64_MAX;
	case 2:
		return 1ull << (raw & 63);
	case 3:
		return raw % 100000;
	default:
		return raw;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_in in = {data, size};
	char s[TEXTMAX + 1];
	unsigned sel = fz_u8(&in);
	enum rxp_num_unit unit = (enum rxp_num_unit)(sel % 3);
	uint64_t rmin = (uint64_t)fz_take(&in, 4) << 32, rmax, min, max;
	uint64_t v = 0, rv = 0;
	const char *why = NULL;
	size_t n;
	int r, rr;

	rmin |= fz_take(&in, 4);
	rmax = (uint64_t)fz_take(&in, 4) << 32;
	rmax |= fz_take(&in, 4);
	min = bound(rmin, sel >> 2);
	max = bound(rmax, sel >> 5) | (sel & 0x80 ? 0 : min); /* mostly min <= max */
	if (errfd < 0) {
		errfd = memfd_create("fuzz_opt_stderr", 0);
		FZ_CHECK(errfd >= 0);
	}
	n = in.n < TEXTMAX ? in.n : TEXTMAX;
	memcpy(s, in.p, n);
	s[n] = 0; /* the text ends at the first NUL, as argv's do */

	rr = ref_u64(s, unit, min, max, &rv);
	r = rxp_parse_u64(s, unit, min, max, &v, &why);
	FZ_CHECK(r == rr);
	FZ_CHECK(r ? why && *why : v == rv);
	FZ_CHECK(s[0] || !strcmp(why, "empty"));
	FZ_CHECK((s[0] != '-' && s[0] != '+') || strstr(why, "sign"));
	FZ_CHECK(rxp_parse_u64(s, unit, min, max, &v, NULL) == r); /* why is optional */
	check_opt_u64(s, unit, min, max, r, rv, why);

	why = NULL;
	rr = ref_duration(s, min, max, &rv);
	r = rxp_parse_duration(s, min, max, &v, &why);
	FZ_CHECK(r == rr);
	FZ_CHECK(r ? why && *why : v == rv);
	check_opt_duration(s, min, max, r, rv, why);
	return 0;
}
