/* Shared benchmark plumbing (see benchlib.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <getopt.h>
#include <stdio.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "benchlib.h"

#ifdef RXP_HAVE_DPDK
#include <ftw.h>
#include <rte_eal.h>
#endif

/* mkdir -p dir: 0, or -1 with errno (a part that exists and is not a
 * directory: ENOTDIR). */
static int mkdir_p(const char *dir)
{
	char p[4096];
	struct stat st;
	size_t n = strlen(dir);

	if (!n || n >= sizeof(p)) {
		errno = n ? ENAMETOOLONG : ENOENT;
		return -1;
	}
	memcpy(p, dir, n + 1);
	for (size_t i = 1; i <= n; i++) {
		if (p[i] != '/' && p[i])
			continue;
		p[i] = 0;
		if (mkdir(p, 0755) && errno != EEXIST)
			return -1;
		if (stat(p, &st))
			return -1;
		if (!S_ISDIR(st.st_mode)) {
			errno = ENOTDIR;
			return -1;
		}
		p[i] = i < n ? '/' : 0;
	}
	return 0;
}

/* A whole decimal number in lo..hi, else the CLI's one-line usage error
 * ("rxpath bench NAME: ..." on stderr, exit 2). */
static int bench_int(const char *name, const char *opt, const char *v, long lo, long hi)
{
	char *end;
	long x;

	errno = 0;
	x = strtol(v, &end, 10);
	if (errno || end == v || *end || x < lo || x > hi) {
		fprintf(stderr, "rxpath bench %s: bad %s '%s' (%ld..%ld)\n", name, opt, v, lo, hi);
		exit(2);
	}
	return (int)x;
}

void bench_parse(int argc, char **argv, struct bench_opts *o, const char *name,
		 const char *description)
{
	static const struct option lo[] = {
		{"runs", required_argument, 0, 'r'},   {"quick", no_argument, 0, 'q'},
		{"outdir", required_argument, 0, 'o'}, {"threads", required_argument, 0, 't'},
		{"help", no_argument, 0, 'h'},	       {0, 0, 0, 0},
	};
	int c;

	o->runs = 7;
	o->quick = 0;
	o->outdir = NULL;
	o->threads_max = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":r:qo:t:h", lo, NULL)) != -1) {
		switch (c) {
		case 'r':
			o->runs = bench_int(name, "--runs", optarg, 5, BENCH_RUNS_MAX);
			break;
		case 'q':
			o->quick = 1;
			break;
		case 'o':
			o->outdir = optarg;
			break;
		case 't':
			o->threads_max = bench_int(name, "--threads", optarg, 1, 1024);
			break;
		case 'h':
			/* (a benchmark's own options, if any, are listed in its
			 * description) */
			printf("usage: rxpath bench %s [OPTIONS]\n\n%s\n\n"
			       "Options every benchmark takes:\n"
			       "  --runs N     repetitions per variant, median reported (default "
			       "7, 5 to 64)\n"
			       "  --quick      fewer iterations per run\n"
			       "  --outdir DIR write DIR/%s.csv (and plots); DIR is made if "
			       "missing\n"
			       "  --threads N  most threads for scaling rows (default: online "
			       "CPUs)\n",
			       name, description, name);
			exit(0);
		case ':':
			fprintf(stderr, "rxpath bench %s: %s needs a value\n", name,
				argv[optind - 1]);
			exit(2);
		default:
			fprintf(stderr,
				"rxpath bench %s: unknown option %s (see rxpath bench %s --help)\n",
				name, argv[optind - 1], name);
			exit(2);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "rxpath bench %s: unexpected argument '%s'\n", name, argv[optind]);
		exit(2);
	}
	if (!o->threads_max)
		o->threads_max = (int)sysconf(_SC_NPROCESSORS_ONLN);
	/* before any run: a benchmark takes minutes, and its files would be
	 * lost at the end */
	if (o->outdir && (mkdir_p(o->outdir) || access(o->outdir, W_OK))) {
		fprintf(stderr, "rxpath bench %s: cannot write to --outdir %s: %s\n", name,
			o->outdir, strerror(errno));
		exit(2);
	}
}

uint64_t bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

double bench_tsc_ghz(void)
{
	static double ghz;

	if (!ghz) {
		uint64_t t0 = bench_now_ns(), c0 = bench_cycles();

		while (bench_now_ns() - t0 < 50000000)
			;
		ghz = (double)(bench_cycles() - c0) / (double)(bench_now_ns() - t0);
	}
	return ghz;
}

static int cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double bench_median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(double), cmpd);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct bench_row *bench_add(struct bench_table *t, const char *group, const char *variant,
			    const char *unit, double median, int lower_is_better,
			    const char *baseline_variant)
{
	struct bench_row *r;

	if (t->n >= (int)(sizeof(t->rows) / sizeof(t->rows[0])))
		return NULL;
	r = &t->rows[t->n++];
	memset(r, 0, sizeof(*r));
	snprintf(r->group, sizeof(r->group), "%s", group);
	snprintf(r->variant, sizeof(r->variant), "%s", variant);
	snprintf(r->unit, sizeof(r->unit), "%s", unit);
	r->median = median;
	r->lower_is_better = lower_is_better;
	if (baseline_variant)
		for (int i = 0; i < t->n - 1; i++)
			if (!strcmp(t->rows[i].group, group) &&
			    !strcmp(t->rows[i].variant, baseline_variant))
				r->baseline = t->rows[i].median;
	return r;
}

/* A CSV field, quoted (RFC 4180) when it holds a comma or a quote. */
static void csv_field(FILE *f, const char *s)
{
	if (!strpbrk(s, ",\"\n")) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

void bench_report(struct bench_table *t, const struct bench_opts *o)
{
	FILE *csv = NULL;

	if (o->outdir) {
		char path[1024];

		snprintf(path, sizeof(path), "%s/%s.csv", o->outdir, t->name);
		csv = fopen(path, "w");
		if (csv)
			fprintf(csv, "group,variant,median,unit,ratio_to_baseline\n");
		else
			fprintf(stderr, "rxpath bench %s: cannot write %s: %s\n", t->name, path,
				strerror(errno));
	}
	printf("%-34s %-36s %12s %-8s %s\n", "group", "variant", "median", "unit", "vs baseline");
	for (int i = 0; i < t->n; i++) {
		struct bench_row *r = &t->rows[i];
		char ratio[48] = "-";

		if (r->baseline > 0) {
			double x = r->median / r->baseline;

			/* Always say how many times better (>1) or worse (<1). */
			snprintf(ratio, sizeof(ratio), "%.2fx %s", r->lower_is_better ? 1 / x : x,
				 "");
		}
		printf("%-34s %-36s %12.2f %-8s %s\n", r->group, r->variant, r->median, r->unit,
		       ratio);
		if (csv) {
			csv_field(csv, r->group);
			fputc(',', csv);
			csv_field(csv, r->variant);
			fprintf(csv, ",%.4f,", r->median);
			csv_field(csv, r->unit);
			fprintf(csv, ",%.4f\n",
				r->baseline > 0 ? (r->lower_is_better ? r->baseline / r->median
								      : r->median / r->baseline)
						: 0.0);
		}
	}
	printf("(ratio: how many times better than the group's baseline; >1 is better)\n");
	if (csv && fclose(csv))
		fprintf(stderr, "rxpath bench %s: cannot write %s/%s.csv: %s\n", t->name, o->outdir,
			t->name, strerror(errno));
	fflush(stdout);
}

void bench_pin(int cpu)
{
	cpu_set_t set;
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	CPU_ZERO(&set);
	CPU_SET(cpu % (n > 0 ? n : 1), &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

long bench_callgrind(const char *fn, const char *env, const char *args, const char *key,
		     double *val)
{
	char self[1024], cmd[3300], out[64] = "/tmp/rxpbench-cg.XXXXXX", line[512];
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	long total = -1;
	size_t klen = key ? strlen(key) : 0;
	int fd;
	FILE *f;

	if (len <= 0)
		return -1;
	self[len] = 0;
	fd = mkstemp(out);
	if (fd < 0)
		return -1;
	close(fd);
	snprintf(cmd, sizeof(cmd),
		 "env RXP_BENCH_DPDK_NO_HUGE=1 %s valgrind --tool=callgrind --toggle-collect=%s "
		 "--callgrind-out-file=%s "
		 "'%s' %s 2>/dev/null",
		 env, fn, out, self, args);
	f = popen(cmd, "r");
	if (f) {
		while (fgets(line, sizeof(line), f))
			if (key && !strncmp(line, key, klen) && line[klen] == ' ')
				*val = strtod(line + klen + 1, NULL);
		if (pclose(f) == 0 && (f = fopen(out, "r"))) {
			while (fgets(line, sizeof(line), f))
				if (!strncmp(line, "totals:", 7) || !strncmp(line, "summary:", 8))
					total = atol(strchr(line, ':') + 1);
			fclose(f);
		}
	}
	unlink(out);
	return total;
}

#ifdef RXP_HAVE_DPDK
static char eal_rundir[128];

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static void eal_rmdir(void)
{
	nftw(eal_rundir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}
#endif

#ifdef RXP_HAVE_DPDK
static const char *eal_memory = "no EAL";

/* Free hugepages of the default size, in bytes (0: none, or unreadable). */
static unsigned long long huge_free_bytes(void)
{
	unsigned long long nfree = 0, kb = 0;
	char line[128];
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		sscanf(line, "HugePages_Free: %llu", &nfree);
		sscanf(line, "Hugepagesize: %llu kB", &kb);
	}
	fclose(f);
	return nfree * kb * 1024;
}
#endif

const char *bench_eal_memory(void)
{
#ifdef RXP_HAVE_DPDK
	return eal_memory;
#else
	return "no DPDK";
#endif
}

int bench_eal_init(const char *prefix, const char *lcores)
{
#ifdef RXP_HAVE_DPDK
	static char desc[160];
	unsigned long long hfree = huge_free_bytes(), need = 512ull << 20;
	bool huge = hfree >= need + (64ull << 20) && !getenv("RXP_BENCH_DPDK_NO_HUGE");
	char *av[16];
	int ac = 0;

	av[ac++] = "rxpath-bench";
	if (lcores) {
		av[ac++] = "-l";
		av[ac++] = (char *)lcores;
	}
	/* DPDK as it is deployed: on hugepages (--in-memory takes them from
	 * hugetlbfs without a mount and leaves no files), when the host has
	 * them free; otherwise on 4 KiB pages, which costs it TLB misses
	 * with thousands of packets in flight. */
	if (huge) {
		av[ac++] = "--in-memory";
	} else {
		av[ac++] = "--no-huge";
		av[ac++] = "--no-shconf";
	}
	av[ac++] = "--no-pci";
	av[ac++] = "-m";
	av[ac++] = "512";
	av[ac++] = "--file-prefix";
	av[ac++] = (char *)prefix;
	av[ac++] = "--log-level";
	av[ac++] = "lib.eal:error";
	av[ac] = NULL;
	snprintf(eal_rundir, sizeof(eal_rundir), "/var/run/dpdk/%s", prefix);
	atexit(eal_rmdir); /* also on the benchmarks' exit(1) paths */
	if (huge)
		snprintf(desc, sizeof(desc), "DPDK on hugepages (%llu MiB free)", hfree >> 20);
	else
		snprintf(desc, sizeof(desc),
			 "DPDK on 4 KiB pages (--no-huge: %llu MiB of hugepages free, 576 "
			 "needed%s)",
			 hfree >> 20,
			 getenv("RXP_BENCH_DPDK_NO_HUGE") ? ", or RXP_BENCH_DPDK_NO_HUGE set" : "");
	eal_memory = desc;
	return rte_eal_init(ac, av) < 0 ? -1 : 0;
#else
	(void)prefix;
	(void)lcores;
	return -1;
#endif
}
