/*
 * Shared benchmark plumbing: options, clocks, medians, and the table every
 * benchmark prints (variant, median of N runs, unit, ratio to the row's
 * baseline) and writes as CSV.
 */
#ifndef RXP_BENCHLIB_H
#define RXP_BENCHLIB_H

#include <stdint.h>
#include <stdio.h>
#include <x86intrin.h>

struct bench_opts {
	int runs; /* repetitions; the median is reported (5 to BENCH_RUNS_MAX) */
	int quick; /* smaller iteration counts */
	const char *outdir; /* where CSV/PNG go; NULL: none */
	int threads_max; /* for scaling benchmarks; 0: online CPUs */
};

/* The benchmarks keep each variant's runs in arrays of this many. */
#define BENCH_RUNS_MAX 64

/* Parses --runs N, --quick, --outdir DIR, --threads N, --help. Exits on
 * --help (status 0) and on bad options (status 2). */
void bench_parse(int argc, char **argv, struct bench_opts *o, const char *name,
		 const char *description);

uint64_t bench_now_ns(void);
static inline uint64_t bench_cycles(void)
{
	return __rdtsc();
}
/* TSC cycles per ns, measured once. */
double bench_tsc_ghz(void);

double bench_median(double *v, int n);

struct bench_row {
	char group[48]; /* rows with the same group share a baseline */
	char variant[64];
	char unit[16];
	double median;
	double baseline; /* 0: this row is the baseline or has none */
	int lower_is_better;
};

struct bench_table {
	const char *name;
	struct bench_row rows[256];
	int n;
};

/* Add a row; baseline_variant names the row (same group) it is compared
 * with, or NULL. Returns the row. */
struct bench_row *bench_add(struct bench_table *t, const char *group, const char *variant,
			    const char *unit, double median, int lower_is_better,
			    const char *baseline_variant);
/* Print the table to stdout and, with an outdir, write <outdir>/<name>.csv. */
void bench_report(struct bench_table *t, const struct bench_opts *o);

/* Pin the calling thread to a CPU (mod online CPUs); ignores failure. */
void bench_pin(int cpu);

/* DPDK's EAL as the benchmarks start it: 512 MiB on hugepages, as DPDK is
 * deployed, when the host has at least 576 MiB of them free and
 * RXP_BENCH_DPDK_NO_HUGE is not set (--in-memory: no hugetlbfs mount
 * needed); otherwise on 4 KiB pages (--no-huge --no-shconf). No PCI, only
 * EAL errors logged, on lcores ("0-1"; NULL: EAL's default). Its run
 * directory, /var/run/dpdk/<prefix>, is removed at exit. 0, or -1 when EAL
 * does not start (or the build has no DPDK). */
int bench_eal_init(const char *prefix, const char *lcores);
/* Which memory that was, in words, for the bench's output. */
const char *bench_eal_memory(void);

/* Instructions executed inside function fn (callgrind --toggle-collect)
 * when this benchmark's own executable runs with args, environment
 * assignments env ("A=1 B=2", or "") added. With a key, a line "key V" on
 * its stdout sets *val to V (what the run counted, to divide by); other
 * output is discarded. -1 when valgrind is missing or the run fails.
 * Instruction counts are stable where times on a shared machine are not. */
long bench_callgrind(const char *fn, const char *env, const char *args, const char *key,
		     double *val);

#endif
