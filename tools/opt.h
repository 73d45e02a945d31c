/*
 * The subcommands' shared option handling (issue #18): one number parser
 * with bounds and k/m/g suffixes, one error style. A usage error is one
 * line on stderr, "rxpath CMD: what is wrong", and exit status 2
 * (RXP_EXIT_USAGE); --help goes to stdout with status 0.
 */
#ifndef RXPATH_TOOLS_OPT_H
#define RXPATH_TOOLS_OPT_H

#include <stdbool.h>
#include <stdint.h>

/* Suffixes a number may carry. */
enum rxp_num_unit {
	RXP_NUM_PLAIN = 0, /* no suffix */
	RXP_NUM_COUNT, /* k m g: 10^3, 10^6, 10^9 */
	RXP_NUM_BYTES, /* k m g: 2^10, 2^20, 2^30 (either case) */
};

/* Parse s as an unsigned decimal integer (optionally with a suffix of unit)
 * in [min, max]. 0; -EINVAL (*why says what is wrong: empty, sign, not a
 * number, unknown suffix, trailing characters) or -ERANGE (overflow or out
 * of bounds). Leading and trailing blanks are refused, as is a sign. */
int rxp_parse_u64(const char *s, enum rxp_num_unit unit, uint64_t min, uint64_t max, uint64_t *out,
		  const char **why);

/* Seconds, a decimal fraction allowed ("0.5", "30"), also with a suffix
 * ms, us or ns, into nanoseconds in [min_ns, max_ns]. Same returns. */
int rxp_parse_duration(const char *s, uint64_t min_ns, uint64_t max_ns, uint64_t *ns,
		       const char **why);

/* Parse the value of option opt of command cmd; on error print the one
 * line "rxpath CMD: bad OPT 'ARG': WHY (MIN..MAX)" and return -1. */
int rxp_opt_u64(const char *cmd, const char *opt, const char *arg, enum rxp_num_unit unit,
		uint64_t min, uint64_t max, uint64_t *out);
int rxp_opt_duration(const char *cmd, const char *opt, const char *arg, uint64_t min_ns,
		     uint64_t max_ns, uint64_t *ns);

/* Print "rxpath CMD: <message>" on stderr (one line); returns
 * RXP_EXIT_USAGE so that callers can `return rxp_usage_error(...)`. */
int rxp_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* For getopt_long() run with opterr = 0 and an optstring starting with ':':
 * the one-line error for what it returned ('?' unknown option, ':' missing
 * value), naming the option as typed. Returns RXP_EXIT_USAGE. */
int rxp_opt_getopt_error(const char *cmd, int ret, int argc, char **argv);

/* The library's log for a subcommand: warnings go to stderr as one line
 * "rxpath CMD: message" each; errors are kept (the last one) rather than
 * printed, so that the command can say what failed and why in one line of
 * its own (rxp_cli_cause). Call once, early. */
void rxp_cli_log_init(const char *cmd);
/* Why the last library call failed: the library's own last error message
 * when it gave one and err is not a plain system error (ENOENT, EACCES,
 * EPERM, EISDIR, ENOTDIR, ENODEV, ENXIO, ENOSPC, EROFS, ELOOP,
 * ENAMETOOLONG, EBUSY), else strerror(err). Clears the kept message. */
const char *rxp_cli_cause(int err);
/* Forget a kept library error (after a failure that was handled, such as a
 * device fallback). */
void rxp_cli_cause_clear(void);

/* Whether paths a and b name one file: the same device and inode when both
 * exist, else the same place once the directories (and a final symlink)
 * are resolved ("./x" and "x", a link to x and x, x not yet made). "-"
 * (stdin or stdout) is no file. */
bool rxp_same_path(const char *a, const char *b);
/* The file a device spec reads: the PATH of its base device when that is
 * "pcap:PATH" (the last '+' layer); NULL for any other device. */
const char *rxp_spec_pcap_path(const char *spec);
/* The one-line refusal when the output file out is the input file in:
 * RXP_EXIT_USAGE after the message, 0 when they differ (or either is NULL). */
int rxp_refuse_overwrite(const char *cmd, const char *in, const char *out);
/* One line on stderr when the name of path, a pcap file about to be
 * written (classic pcap, nanosecond, uncompressed), says otherwise: it
 * ends in .pcapng, .gz, .zst or .lz4. The file is written all the same
 * (tools read it by its contents). */
void rxp_note_pcap_name(const char *cmd, const char *path);
/* The same for a device spec's own files: each "capture:FILE" layer
 * against the pcap file the spec reads, and out (NULL: none) against it. */
int rxp_refuse_spec_overwrite(const char *cmd, const char *spec, const char *out);

#endif
