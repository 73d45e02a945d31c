/*
 * Unit tests for the subcommands' number and duration parser (tools/opt.c):
 * plain numbers, bounds, both suffix kinds, and every malformed form that
 * strtoull would have accepted or wrapped (signs, blanks, overflow); and
 * the same-file test that keeps an output from overwriting the input.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd.h"
#include "opt.h"
#include "rxptest.h"

static uint64_t ok_u64(const char *s, enum rxp_num_unit unit, uint64_t min, uint64_t max)
{
	uint64_t v = 12345;
	const char *why = NULL;

	assert_int_equal(rxp_parse_u64(s, unit, min, max, &v, &why), 0);
	return v;
}

static int bad_u64(const char *s, enum rxp_num_unit unit, uint64_t min, uint64_t max)
{
	uint64_t v = 777;
	const char *why = NULL;
	int r = rxp_parse_u64(s, unit, min, max, &v, &why);

	assert_true(r == -EINVAL || r == -ERANGE);
	assert_non_null(why);
	assert_int_equal(v, 777); /* untouched on failure */
	return r;
}

static void test_plain(void **state)
{
	(void)state;
	assert_int_equal(ok_u64("0", RXP_NUM_PLAIN, 0, 10), 0);
	assert_int_equal(ok_u64("10", RXP_NUM_PLAIN, 0, 10), 10);
	assert_int_equal(ok_u64("007", RXP_NUM_PLAIN, 0, 10), 7);
	assert_true(ok_u64("18446744073709551615", RXP_NUM_PLAIN, 0, UINT64_MAX) == UINT64_MAX);
	assert_int_equal(bad_u64("18446744073709551616", RXP_NUM_PLAIN, 0, UINT64_MAX), -ERANGE);
	assert_int_equal(bad_u64("99999999999999999999", RXP_NUM_PLAIN, 0, UINT64_MAX), -ERANGE);
	assert_int_equal(bad_u64("11", RXP_NUM_PLAIN, 0, 10), -ERANGE);
	assert_int_equal(bad_u64("0", RXP_NUM_PLAIN, 1, 10), -ERANGE);
	assert_int_equal(bad_u64("", RXP_NUM_PLAIN, 0, 10), -EINVAL);
	assert_int_equal(bad_u64("-1", RXP_NUM_PLAIN, 0, UINT64_MAX), -EINVAL);
	assert_int_equal(bad_u64("+1", RXP_NUM_PLAIN, 0, 10), -EINVAL);
	assert_int_equal(bad_u64(" 1", RXP_NUM_PLAIN, 0, 10), -EINVAL);
	assert_int_equal(bad_u64("1 ", RXP_NUM_PLAIN, 0, 10), -EINVAL);
	assert_int_equal(bad_u64("abc", RXP_NUM_PLAIN, 0, 10), -EINVAL);
	assert_int_equal(bad_u64("1k", RXP_NUM_PLAIN, 0, 1u << 20), -EINVAL);
	assert_int_equal(bad_u64("0x10", RXP_NUM_PLAIN, 0, 100), -EINVAL);
	assert_int_equal(bad_u64("1.5", RXP_NUM_PLAIN, 0, 100), -EINVAL);
}

static void test_suffixes(void **state)
{
	(void)state;
	assert_int_equal(ok_u64("4k", RXP_NUM_BYTES, 1, UINT64_MAX), 4096);
	assert_int_equal(ok_u64("4K", RXP_NUM_BYTES, 1, UINT64_MAX), 4096);
	assert_int_equal(ok_u64("4m", RXP_NUM_BYTES, 1, UINT64_MAX), 4u << 20);
	assert_true(ok_u64("3G", RXP_NUM_BYTES, 1, UINT64_MAX) == 3ull << 30);
	assert_int_equal(ok_u64("2k", RXP_NUM_COUNT, 1, UINT64_MAX), 2000);
	assert_int_equal(ok_u64("2m", RXP_NUM_COUNT, 1, UINT64_MAX), 2000000);
	assert_true(ok_u64("2g", RXP_NUM_COUNT, 1, UINT64_MAX) == 2000000000ull);
	assert_int_equal(bad_u64("2K", RXP_NUM_COUNT, 1, UINT64_MAX), -EINVAL);
	assert_int_equal(bad_u64("4kb", RXP_NUM_BYTES, 1, UINT64_MAX), -EINVAL);
	assert_int_equal(bad_u64("4t", RXP_NUM_BYTES, 1, UINT64_MAX), -EINVAL);
	assert_int_equal(bad_u64("k", RXP_NUM_BYTES, 1, UINT64_MAX), -EINVAL);
	assert_int_equal(bad_u64("-1k", RXP_NUM_BYTES, 0, UINT64_MAX), -EINVAL);
	/* overflow through the multiplier, and the bound after it */
	assert_int_equal(bad_u64("17179869184g", RXP_NUM_BYTES, 0, UINT64_MAX), -ERANGE);
	assert_int_equal(bad_u64("2g", RXP_NUM_BYTES, 1, 1u << 30), -ERANGE);
	assert_int_equal(ok_u64("1g", RXP_NUM_BYTES, 1, 1u << 30), 1u << 30);
}

static void test_duration(void **state)
{
	uint64_t ns = 5;
	const char *why;

	(void)state;
	assert_int_equal(rxp_parse_duration("30", 1, UINT64_MAX, &ns, &why), 0);
	assert_true(ns == 30000000000ull);
	assert_int_equal(rxp_parse_duration("0.5", 1, UINT64_MAX, &ns, &why), 0);
	assert_int_equal(ns, 500000000);
	assert_int_equal(rxp_parse_duration("1.000000001", 1, UINT64_MAX, &ns, &why), 0);
	assert_int_equal(ns, 1000000001);
	assert_int_equal(rxp_parse_duration("250ms", 1, UINT64_MAX, &ns, &why), 0);
	assert_int_equal(ns, 250000000);
	assert_int_equal(rxp_parse_duration("1.5us", 1, UINT64_MAX, &ns, &why), 0);
	assert_int_equal(ns, 1500);
	assert_int_equal(rxp_parse_duration("7ns", 1, UINT64_MAX, &ns, &why), 0);
	assert_int_equal(ns, 7);
	assert_int_equal(rxp_parse_duration("2s", 1, UINT64_MAX, &ns, &why), 0);
	assert_true(ns == 2000000000ull);
	ns = 99;
	assert_int_equal(rxp_parse_duration("0", 1, UINT64_MAX, &ns, &why), -ERANGE);
	assert_int_equal(rxp_parse_duration("-1", 1, UINT64_MAX, &ns, &why), -EINVAL);
	assert_int_equal(rxp_parse_duration("1.", 1, UINT64_MAX, &ns, &why), -EINVAL);
	assert_int_equal(rxp_parse_duration(".5", 1, UINT64_MAX, &ns, &why), -EINVAL);
	assert_int_equal(rxp_parse_duration("5x", 1, UINT64_MAX, &ns, &why), -EINVAL);
	assert_int_equal(rxp_parse_duration("1e3", 1, UINT64_MAX, &ns, &why), -EINVAL);
	assert_int_equal(rxp_parse_duration("", 1, UINT64_MAX, &ns, &why), -EINVAL);
	assert_int_equal(rxp_parse_duration("99999999999999999999", 1, UINT64_MAX, &ns, &why),
			 -ERANGE);
	assert_int_equal(rxp_parse_duration("18446744074", 1, UINT64_MAX, &ns, &why), -ERANGE);
	assert_int_equal(rxp_parse_duration("11", 1, 10000000000ull, &ns, &why), -ERANGE);
	assert_int_equal(ns, 99);
}

/* In a fresh directory: names of one file (another spelling, a hard link,
 * a symlink, a link to a file not made yet, a path through the parent)
 * are the same path; other files, stdin/stdout and NULL are not. */
static void test_same_path(void **state)
{
	char dir[] = "/tmp/rxp-test-opt-XXXXXX", cwd[PATH_MAX], abs[PATH_MAX + 8],
	     up[PATH_MAX + 16];
	FILE *f;

	(void)state;
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_non_null(mkdtemp(dir));
	assert_int_equal(chdir(dir), 0);
	f = fopen("a", "w");
	assert_non_null(f);
	fclose(f);
	f = fopen("b", "w");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(link("a", "hard"), 0);
	assert_int_equal(symlink("a", "soft"), 0);
	assert_int_equal(symlink("later", "dangling"), 0);
	assert_int_equal(mkdir("sub", 0700), 0);
	snprintf(abs, sizeof(abs), "%s/a", dir);
	snprintf(up, sizeof(up), "sub/../%s", "a");

	assert_true(rxp_same_path("a", "a"));
	assert_true(rxp_same_path("a", "./a"));
	assert_true(rxp_same_path("a", abs));
	assert_true(rxp_same_path("a", up));
	assert_true(rxp_same_path("a", "hard"));
	assert_true(rxp_same_path("soft", "a"));
	assert_true(rxp_same_path("dangling", "later")); /* neither exists yet */
	assert_true(rxp_same_path("./later", "later"));
	assert_false(rxp_same_path("a", "b"));
	assert_false(rxp_same_path("later", "b"));
	assert_false(rxp_same_path("-", "-"));
	assert_false(rxp_same_path("a", NULL));
	assert_false(rxp_same_path(NULL, "a"));

	assert_string_equal(rxp_spec_pcap_path("pcap:x.pcap"), "x.pcap");
	assert_string_equal(rxp_spec_pcap_path("fault:loss=0.1+pcap:d/x.pcap"), "d/x.pcap");
	assert_null(rxp_spec_pcap_path("sim:count=10"));
	assert_null(rxp_spec_pcap_path("pcap:"));
	assert_null(rxp_spec_pcap_path(NULL));
	assert_int_equal(rxp_refuse_overwrite("t", "a", "b"), 0);
	assert_int_equal(rxp_refuse_overwrite("t", "a", "./a"), RXP_EXIT_USAGE);
	assert_int_equal(rxp_refuse_spec_overwrite("t", "capture:b+pcap:a", "c"), 0);
	assert_int_equal(rxp_refuse_spec_overwrite("t", "capture:hard+pcap:a", "c"),
			 RXP_EXIT_USAGE);
	assert_int_equal(rxp_refuse_spec_overwrite("t", "pcap:a", "soft"), RXP_EXIT_USAGE);
	assert_int_equal(rxp_refuse_spec_overwrite("t", "sim:count=1", "a"), 0);

	unlink("a");
	unlink("b");
	unlink("hard");
	unlink("soft");
	unlink("dangling");
	rmdir("sub");
	assert_int_equal(chdir(cwd), 0);
	assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain),
		cmocka_unit_test(test_suffixes),
		cmocka_unit_test(test_duration),
		cmocka_unit_test(test_same_path),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
