/*
 * rxpath bench: runs the component benchmarks (the rxpath-bench-* programs
 * built from bench/) and collects their tables under bench/results/<date>/:
 * one CSV per benchmark and a summary.md with the machine it ran on.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cmd.h"
#include "opt.h"

static const char *const known[] = {
	"pool", "ring", "defrag", "goodput", "ipid", "tipc", "defrag-cli",
};

/* What a full run adds to a benchmark's own defaults: callgrind instruction
 * counts, stable where this shared machine's times are not (left out of
 * --quick runs). */
static const char *extra_args(const char *name)
{
	if (!strcmp(name, "pool"))
		return " --instr";
	if (!strcmp(name, "tipc"))
		return " --callgrind";
	return "";
}

static int find_bench(const char *name, char *path, size_t n)
{
	char self[PATH_MAX / 2];
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	const char *fmts[] = {"%s/rxpath-bench-%s", "%s/../libexec/rxpath/rxpath-bench-%s"};
	char *slash;

	if (len <= 0)
		return -1;
	self[len] = 0;
	slash = strrchr(self, '/');
	if (slash)
		*slash = 0;
	for (size_t i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++) {
		if ((size_t)snprintf(path, n, fmts[i], self, name) >= n)
			return -1;
		if (access(path, X_OK) == 0)
			return 0;
	}
	return -1;
}

/* Run one benchmark program; used by `rxpath run` too. */
int rxp_bench_exec(const char *name, int argc, char **argv);
int rxp_bench_exec(const char *name, int argc, char **argv)
{
	char path[PATH_MAX];
	char **av = calloc((size_t)argc + 2, sizeof(char *));

	if (!av)
		return RXP_EXIT_FAIL;
	if (find_bench(name, path, sizeof(path))) {
		fprintf(stderr, "rxpath bench: no benchmark program for '%s' (rxpath-bench-%s)\n",
			name, name);
		free(av);
		return RXP_EXIT_USAGE;
	}
	av[0] = path;
	for (int i = 0; i < argc; i++)
		av[i + 1] = argv[i];
	execv(path, av);
	fprintf(stderr, "rxpath bench: cannot run %s: %s\n", path, strerror(errno));
	free(av);
	return RXP_EXIT_FAIL;
}

static int mkdirs(const char *dir)
{
	char tmp[PATH_MAX];

	snprintf(tmp, sizeof(tmp), "%s", dir);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(tmp, 0755) && errno != EEXIST)
			return -1;
		*p = '/';
	}
	return mkdir(tmp, 0755) && errno != EEXIST ? -1 : 0;
}

/* FragmentSmack's picture, cost per fragment against queue length, from
 * the defrag benchmark's CSV (when it ran and gnuplot is installed). */
static void plot_fragmentsmack(const char *out)
{
	char cmd[4 * PATH_MAX];

	snprintf(cmd, sizeof(cmd),
		 "test -s '%s/defrag.csv' && command -v gnuplot >/dev/null 2>&1 && "
		 "awk -F, '$1==\"fragmentsmack\" {split($2, a, \"[= ]\"); print a[2], $3}' "
		 "'%s/defrag.csv' > '%s/fragmentsmack.dat' && test -s '%s/fragmentsmack.dat' && "
		 "gnuplot -e \"set terminal png size 900,520; set output '%s/fragmentsmack.png';"
		 " set title 'FragmentSmack: never-completing 8-byte fragments in random order';"
		 " set logscale x 2; set grid; set xlabel 'fragments in the queue';"
		 " set ylabel 'ns per fragment'; plot '%s/fragmentsmack.dat' w lp t 'rxpath'\"",
		 out, out, out, out, out, out);
	if (system(cmd) != 0)
		return; /* no defrag run, no gnuplot: nothing to draw */
}

/* One benchmark with its own options: what this command took before them
 * (--quick, --out DIR) goes along, as --quick and --outdir DIR; without
 * --out (and no --outdir of its own) its CSV goes where a whole run's
 * would, bench/results/<date>. */
static int forward(const char *name, int argc, char **argv, int quick, const char *outp)
{
	char **av, out[PATH_MAX / 2];
	bool own = false;
	int n = 0, rc;

	snprintf(out, sizeof(out), "%s", outp);
	for (int i = 0; i < argc; i++)
		own |= !strcmp(argv[i], "--outdir") || !strncmp(argv[i], "--outdir=", 9);
	if (!out[0] && !own) {
		time_t t = time(NULL);
		struct tm tm;

		localtime_r(&t, &tm);
		strftime(out, sizeof(out), "bench/results/%Y-%m-%d", &tm);
	}

	if (out[0] && mkdirs(out)) {
		fprintf(stderr, "rxpath bench: cannot create %s: %s\n", out, strerror(errno));
		return RXP_EXIT_USAGE;
	}
	av = calloc((size_t)argc + 4, sizeof(char *));
	if (!av)
		return RXP_EXIT_FAIL;
	if (quick)
		av[n++] = "--quick";
	if (out[0]) {
		av[n++] = "--outdir";
		av[n++] = (char *)out;
	}
	for (int i = 0; i < argc; i++)
		av[n++] = argv[i];
	rc = rxp_bench_exec(name, n, av); /* returns only on failure */
	free(av);
	return rc;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: rxpath bench [--out DIR] [--quick] [NAME...]\n\n"
		   "Runs the component benchmarks (all that are built when no NAME is given:\n"
		   "pool, ring, defrag, goodput, ipid, tipc, defrag-cli), each comparing rxpath\n"
		   "with its baselines (DPDK, malloc, the kernel, tshark, cp) in the same run,\n"
		   "median of at least 5 runs.\n"
		   "Writes DIR/<name>.csv, DIR/summary.md and plots, where DIR defaults to\n"
		   "bench/results/<YYYY-MM-DD>.\n\n"
		   "  --out DIR   where to write results\n"
		   "  --quick     fewer iterations (a smoke run; numbers are rougher), and no\n"
		   "              callgrind instruction counts (pool and tipc add them otherwise)\n"
		   "`rxpath bench NAME --help` shows one benchmark's own options.\n");
}

static int bench_main(int argc, char **argv)
{
	char out[PATH_MAX / 2] = "", path[PATH_MAX], summary[PATH_MAX];
	const char *names[16];
	int nnames = 0, quick = 0, failed = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			/* After a single NAME: that benchmark's own help. */
			if (nnames == 1)
				return rxp_bench_exec(names[0], argc - i, argv + i);
			usage(stdout);
			return 0;
		} else if (!strcmp(argv[i], "--out")) {
			if (i + 1 >= argc)
				return rxp_usage_error("bench", "option --out needs a value (see "
								"rxpath bench --help)");
			snprintf(out, sizeof(out), "%s", argv[++i]);
		} else if (!strcmp(argv[i], "--quick")) {
			quick = 1;
		} else if (argv[i][0] == '-') {
			/* Options after a single NAME belong to that benchmark. */
			if (nnames == 1)
				return forward(names[0], argc - i, argv + i, quick, out);
			return rxp_usage_error(
				"bench", "unknown option %s (see rxpath bench --help)", argv[i]);
		} else if (nnames < 16) {
			names[nnames++] = argv[i];
		} else {
			return rxp_usage_error("bench", "at most 16 benchmarks at once");
		}
	}
	/* Every name must be a benchmark before anything is created. */
	for (int i = 0; i < nnames; i++) {
		bool ok = false;

		for (size_t k = 0; k < sizeof(known) / sizeof(known[0]); k++)
			ok |= !strcmp(names[i], known[k]);
		if (!ok)
			return rxp_usage_error(
				"bench",
				"no benchmark '%s' (pool, ring, defrag, goodput, ipid, "
				"tipc, defrag-cli)",
				names[i]);
		if (find_bench(names[i], path, sizeof(path)))
			return rxp_usage_error("bench",
					       "benchmark '%s' is not built (rxpath-bench-%s; "
					       "-DRXP_BENCH=ON)",
					       names[i], names[i]);
	}
	if (!nnames)
		for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
			if (!find_bench(known[i], path, sizeof(path)))
				names[nnames++] = known[i];
	if (!out[0]) {
		time_t t = time(NULL);
		struct tm tm;

		localtime_r(&t, &tm);
		strftime(out, sizeof(out), "bench/results/%Y-%m-%d", &tm);
	}
	if (mkdirs(out)) {
		fprintf(stderr, "rxpath bench: cannot create %s: %s\n", out, strerror(errno));
		return RXP_EXIT_USAGE;
	}
	snprintf(summary, sizeof(summary), "%s/summary.md", out);
	/* Append mode: every write must land at the end of the file. */
	FILE *sf = fopen(summary, "w");

	if (sf)
		sf = freopen(summary, "a", sf);
	if (!sf) {
		fprintf(stderr, "rxpath bench: cannot write %s: %s\n", summary, strerror(errno));
		return RXP_EXIT_USAGE;
	}
	{
		struct utsname u;
		char cpu[256] = "unknown CPU", line[512];
		FILE *ci = fopen("/proc/cpuinfo", "r");

		uname(&u);
		while (ci && fgets(line, sizeof(line), ci))
			if (!strncmp(line, "model name", 10)) {
				snprintf(cpu, sizeof(cpu), "%s", strchr(line, ':') + 2);
				cpu[strcspn(cpu, "\n")] = 0;
				break;
			}
		if (ci)
			fclose(ci);
		fprintf(sf, "# rxpath benchmarks\n\nMachine: %s, %ld CPUs, Linux %s\n\n", cpu,
			sysconf(_SC_NPROCESSORS_ONLN), u.release);
		fflush(sf);
	}
	for (int i = 0; i < nnames; i++) {
		char cmd[4 * PATH_MAX];

		if (find_bench(names[i], path, sizeof(path))) {
			fprintf(stderr, "rxpath bench: benchmark '%s' vanished\n", names[i]);
			failed = 1;
			continue;
		}
		fprintf(sf, "## %s\n\n```\n", names[i]);
		fflush(sf);
		snprintf(cmd, sizeof(cmd), "'%s' --outdir '%s'%s", path, out,
			 quick ? " --quick" : extra_args(names[i]));
		printf("== %s\n", names[i]);
		fflush(stdout);
		/* Its output to the terminal and the summary both (a tee of our
		 * own: through a shell pipe the status would be tee's). */
		int rc = -1;
		FILE *po = popen(cmd, "r");

		if (po) {
			char buf[4096];
			ssize_t n;

			/* read(), not fread(): pass on each table as it comes */
			while ((n = read(fileno(po), buf, sizeof(buf))) > 0 ||
			       (n < 0 && errno == EINTR)) {
				if (n <= 0)
					continue;
				fwrite(buf, 1, (size_t)n, stdout);
				fflush(stdout);
				fwrite(buf, 1, (size_t)n, sf);
			}
			rc = pclose(po);
		}
		if (rc != 0) {
			fprintf(stderr, "rxpath bench: %s failed (status %d)\n", names[i], rc);
			failed = 1;
		}
		fprintf(sf, "```\n\n");
		fflush(sf);
	}
	fclose(sf);
	plot_fragmentsmack(out);
	printf("results in %s\n", out);
	return failed ? RXP_EXIT_FAIL : 0;
}

RXP_COMMAND(bench, "bench", "run the benchmarks and write bench/results/<date>/", bench_main);
