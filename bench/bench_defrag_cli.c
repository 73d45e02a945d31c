/*
 * rxpath bench defrag-cli: `rxpath defrag` on one generated capture against
 * tshark reading it with reassembly on and against `cp` of the same file
 * (the I/O floor), in the same run, alternating, median of --runs. cp
 * copies in the kernel (copy_file_range). Two floors of a program that
 * writes bytes from user space are reported beside it: dd with 2 MiB
 * blocks (read(2) into user space, write(2) back), and this program's own
 * --floor-writev, which maps the capture as rxpath defrag does, walks its
 * records and hands each to writev(2) in batches of 1024, parsing nothing
 * else: what rxpath defrag would cost if reassembly took no time at all.
 * Every output is a new file (the old one is removed before the clock
 * starts): rewriting one in place costs every tool the release of its
 * page cache and an ext4 flush on close, which is not theirs.
 *
 * The capture: 100,000 UDP datagrams of 4 fragments of 1360 payload bytes
 * (564 MB as pcap, Ethernet), one sender, 10,000 datagrams in flight, their
 * fragments shuffled (--quick: 20,000 datagrams, 113 MB). Each run's wall
 * time and peak RSS (wait4) are measured; every run's output is checked:
 * rxpath must report 100,000 datagrams reassembled, tshark must show as
 * many. Writes defrag-cli.csv and defrag-cli.png (gnuplot) to --outdir.
 * Files go to $TMPDIR (default /tmp) and are removed at the end.
 * `--gen FILE` only writes the capture to FILE, for profiling rxpath defrag
 * on it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "benchlib.h"

#define FRAG_PAYLOAD 1360
#define NFRAG 4
#define IN_FLIGHT 10000

struct run_res {
	double s;
	double rss_mb;
	long long count; /* datagrams the run reported, -1 unknown */
};

static uint16_t csum16(const uint8_t *b, int n)
{
	uint32_t s = 0;

	for (int i = 0; i < n; i += 2)
		s += (uint32_t)(b[i] << 8 | b[i + 1]);
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

/* xorshift, for the shuffle and the payload bytes */
static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static int gen(const char *path, unsigned nd)
{
	pcap_t *p =
		pcap_open_dead_with_tstamp_precision(DLT_EN10MB, 65535, PCAP_TSTAMP_PRECISION_NANO);
	FILE *f = fopen(path, "wb");
	pcap_dumper_t *d = p && f ? pcap_dump_fopen(p, f) : NULL;
	unsigned *ord = malloc(sizeof(unsigned) * NFRAG * IN_FLIGHT);
	uint64_t ts = 1700000000ull * 1000000000ull, seed = 88172645463325252ull;
	uint8_t fr[14 + 20 + FRAG_PAYLOAD];

	if (!d || !ord) {
		fprintf(stderr, "bench defrag-cli: cannot write %s\n", path);
		return -1;
	}
	for (unsigned base = 0; base < nd; base += IN_FLIGHT) {
		unsigned n = (nd - base < IN_FLIGHT ? nd - base : IN_FLIGHT) * NFRAG;

		for (unsigned i = 0; i < n; i++)
			ord[i] = i;
		for (unsigned i = n - 1; i > 0; i--) {
			unsigned j = (unsigned)(rnd(&seed) % (i + 1)), t = ord[i];

			ord[i] = ord[j];
			ord[j] = t;
		}
		for (unsigned i = 0; i < n; i++) {
			unsigned dg = base + ord[i] / NFRAG, k = ord[i] % NFRAG;
			unsigned off = k * FRAG_PAYLOAD / 8, tl = 20 + FRAG_PAYLOAD;
			uint8_t *ip = fr + 14, *pl = ip + 20;
			struct pcap_pkthdr h = {.caplen = 14 + tl, .len = 14 + tl};
			uint16_t c;

			memset(fr, 0, 34);
			fr[0] = 2;
			fr[5] = 2;
			fr[6] = 2;
			fr[11] = 1;
			fr[12] = 8;
			ip[0] = 0x45;
			ip[2] = (uint8_t)(tl >> 8);
			ip[3] = (uint8_t)tl;
			ip[4] = (uint8_t)(dg >> 8);
			ip[5] = (uint8_t)dg;
			ip[6] = (uint8_t)((k < NFRAG - 1 ? 0x20 : 0) | off >> 8);
			ip[7] = (uint8_t)off;
			ip[8] = 64;
			ip[9] = 17;
			ip[12] = 10; /* 10.0.0.1 */
			ip[15] = 1;
			/* 10.1.x.y: a destination per 65536 datagrams keeps keys apart */
			ip[16] = 10;
			ip[17] = 1;
			ip[18] = (uint8_t)(dg >> 16);
			ip[19] = 2;
			c = csum16(ip, 20);
			ip[10] = (uint8_t)(c >> 8);
			ip[11] = (uint8_t)c;
			for (unsigned j = 0; j < FRAG_PAYLOAD; j += 8) {
				uint64_t v = rnd(&seed);

				memcpy(pl + j, &v, 8);
			}
			if (k == 0) { /* the UDP header, checksum 0 (none) */
				unsigned ul = 8 + NFRAG * FRAG_PAYLOAD - 8;

				pl[0] = 0x30;
				pl[1] = 0x39;
				pl[2] = 0x30;
				pl[3] = 0x3a;
				pl[4] = (uint8_t)(ul >> 8);
				pl[5] = (uint8_t)ul;
				pl[6] = pl[7] = 0;
			}
			ts += 1000;
			h.ts.tv_sec = (time_t)(ts / 1000000000ull);
			h.ts.tv_usec = (suseconds_t)(ts % 1000000000ull);
			pcap_dump((u_char *)d, &h, fr);
		}
	}
	pcap_dump_close(d);
	pcap_close(p);
	free(ord);
	return 0;
}

/* --floor-writev IN OUT: IN (a pcap file) mapped, each record handed to
 * writev(2), 1024 at a time, into a new OUT. 0, or 1 with a message. */
static int floor_writev(const char *inp, const char *outp)
{
	struct iovec iov[1024];
	struct stat st;
	int in = open(inp, O_RDONLY), out = -1, k = 0, bad = 1;
	uint8_t *m = MAP_FAILED;
	size_t pos = 24;

	if (in < 0 || fstat(in, &st) || st.st_size < 24)
		goto done;
	m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, in, 0);
	out = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (m == MAP_FAILED || out < 0)
		goto done;
	madvise(m, (size_t)st.st_size, MADV_SEQUENTIAL);
	iov[k++] = (struct iovec){m, 24};
	while (pos + 16 <= (size_t)st.st_size) {
		uint32_t caplen;

		memcpy(&caplen, m + pos + 8, 4);
		if (caplen > (size_t)st.st_size - pos - 16)
			goto done;
		iov[k++] = (struct iovec){m + pos, 16 + caplen};
		pos += 16 + caplen;
		if (k == 1024) {
			if (writev(out, iov, k) < 0)
				goto done;
			k = 0;
		}
	}
	bad = k && writev(out, iov, k) < 0;
done:
	if (bad)
		fprintf(stderr, "bench defrag-cli: --floor-writev %s %s: %s\n", inp, outp,
			strerror(errno));
	if (m != MAP_FAILED)
		munmap(m, (size_t)st.st_size);
	if (out >= 0 && close(out))
		bad = 1;
	if (in >= 0)
		close(in);
	return bad;
}

/* Flush what was written before, so that no earlier run's writeback
 * lands on the next run, then remove dir/name, so that it writes a new
 * file. In that order: on a VM with free page reporting (virtio-balloon,
 * as here), memory freed and left free for about 2 s is handed back to
 * the host, and whoever touches it next pays for the host to fault it in
 * again (a page-cache write then costs 1 s of system time instead of 0.1
 * s). Unlinked before a sync that writes back a few hundred MB, the old
 * OUT's pages were handed back while the sync ran, and the next run
 * wrote into them: rxpath, which ran after the two largest writes, was
 * hit in 6 of 7 runs. */
static void new_out(const char *dir, const char *name)
{
	char p[PATH_MAX + 64];

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	sync();
	unlink(p);
}

/* Run sh -c cmd, stdout to outf; wall time and peak RSS of the children. */
static int run(const char *cmd, const char *outf, struct run_res *r)
{
	uint64_t t0 = bench_now_ns();
	struct rusage ru;
	int st;
	pid_t pid;

	fflush(stdout); /* not twice through the child */
	pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (outf && !freopen(outf, "w", stdout))
			_exit(126);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	if (wait4(pid, &st, 0, &ru) < 0)
		return -1;
	r->s = (double)(bench_now_ns() - t0) / 1e9;
	r->rss_mb = (double)ru.ru_maxrss / 1024.0;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

static long long read_count(const char *path, const char *key)
{
	FILE *f = fopen(path, "r");
	char line[8192];
	long long v = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *at = key ? strstr(line, key) : line;

		if (key && at)
			v = atoll(at + strlen(key));
		else if (!key)
			v = atoll(line);
	}
	fclose(f);
	return v;
}

/* rxpath next to this program (build tree), or installed beside libexec. */
static int find_rxpath(char *out, size_t n)
{
	char self[PATH_MAX / 2];
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	const char *env = getenv("RXPATH");
	const char *fmts[] = {"%s/rxpath", "%s/../../bin/rxpath"};
	char *slash;

	if (env && access(env, X_OK) == 0)
		return snprintf(out, n, "%s", env) < (int)n ? 0 : -1;
	if (len <= 0)
		return -1;
	self[len] = 0;
	slash = strrchr(self, '/');
	if (slash)
		*slash = 0;
	for (size_t i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++) {
		if ((size_t)snprintf(out, n, fmts[i], self) >= n)
			return -1;
		if (access(out, X_OK) == 0)
			return 0;
	}
	return -1;
}

static void plot(const struct bench_opts *o, double mb, unsigned nd, double rx, double ts,
		 double cp)
{
	char cmd[4096];

	if (!o->outdir || system("command -v gnuplot >/dev/null 2>&1") != 0)
		return;
	snprintf(cmd, sizeof(cmd),
		 "gnuplot -e \"set terminal png size 800,480; set output '%s/defrag-cli.png';"
		 " set title 'rxpath defrag: %.0f MB capture, %u datagrams x 4 fragments';"
		 " set style fill solid; set boxwidth 0.6; set grid y; set yrange [0:*];"
		 " set ylabel 'seconds (median)';"
		 " plot '-' using 0:2:xtic(1) with boxes notitle, '' using 0:2:(sprintf('%%.2f s',"
		 " \\$2)) with labels offset 0,1 notitle\" <<'EOF'\n"
		 "cp %.3f\n\"rxpath defrag\" %.3f\n\"tshark (reassembly on)\" %.3f\ne\n"
		 "cp %.3f\n\"rxpath defrag\" %.3f\n\"tshark (reassembly on)\" %.3f\ne\nEOF",
		 o->outdir, mb, nd, cp, rx, ts, cp, rx, ts);
	if (system(cmd) != 0)
		fprintf(stderr, "bench defrag-cli: gnuplot failed\n");
}

int main(int argc, char **argv)
{
	struct bench_opts o;
	struct bench_table t = {.name = "defrag-cli"};
	char rx[PATH_MAX], dir[PATH_MAX], in[PATH_MAX + 32], cmd[4 * PATH_MAX], res[PATH_MAX + 32];
	double s_rx[BENCH_RUNS_MAX], s_ts[BENCH_RUNS_MAX], s_cp[BENCH_RUNS_MAX],
		s_dd[BENCH_RUNS_MAX], s_wv[BENCH_RUNS_MAX];
	char self[PATH_MAX];
	ssize_t sl;
	double m_rx[BENCH_RUNS_MAX], m_ts[BENCH_RUNS_MAX];
	const char *tmp = getenv("TMPDIR");
	unsigned nd;
	struct stat st;
	int bad = 0;

	if (argc == 4 && !strcmp(argv[1], "--floor-writev"))
		return floor_writev(argv[2], argv[3]);
	if (argc == 3 && !strcmp(argv[1], "--gen"))
		return gen(argv[2], 100000) ? 1 : 0;
	bench_parse(argc, argv, &o, "defrag-cli",
		    "rxpath defrag vs tshark with reassembly vs cp on one generated capture\n"
		    "(100k datagrams x 4 fragments, 564 MB; --quick: 20k, 113 MB)\n\n"
		    "Its own options:\n"
		    "  --gen FILE             only write that capture to FILE (the only argument)\n"
		    "  --floor-writev IN OUT  only the writev floor of IN into OUT (the bench\n"
		    "                         runs it itself; the only arguments)");
	nd = o.quick ? 20000 : 100000;
	if (find_rxpath(rx, sizeof(rx))) {
		fprintf(stderr, "bench defrag-cli: no rxpath binary found (set RXPATH)\n");
		return 2;
	}
	sl = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (sl <= 0) {
		fprintf(stderr, "bench defrag-cli: cannot find this program: %s\n",
			strerror(errno));
		return 2;
	}
	self[sl] = 0;
	if (system("command -v tshark >/dev/null 2>&1") != 0) {
		fprintf(stderr, "bench defrag-cli: tshark missing\n");
		return 2;
	}
	snprintf(dir, sizeof(dir), "%s/rxpath-bench-defrag-cli-XXXXXX", tmp ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		fprintf(stderr, "bench defrag-cli: mkdtemp: %s\n", strerror(errno));
		return 2;
	}
	snprintf(in, sizeof(in), "%s/in.pcap", dir);
	snprintf(res, sizeof(res), "%s/res", dir);
	if (gen(in, nd) || stat(in, &st)) {
		bad = 1;
		goto out;
	}
	printf("capture: %s, %.0f MB, %u datagrams x %d fragments, %d in flight\n", in,
	       (double)st.st_size / 1e6, nd, NFRAG, IN_FLIGHT);
	/* Once to warm the page cache. */
	snprintf(cmd, sizeof(cmd), "cat '%s' >/dev/null", in);
	if (system(cmd) != 0)
		bad = 1;
	for (int r = 0; r < o.runs && !bad; r++) {
		struct run_res x;

		new_out(dir, "out.pcap");
		snprintf(cmd, sizeof(cmd), "'%s' defrag --json '%s' '%s/out.pcap' 2>/dev/null", rx,
			 in, dir);
		if (run(cmd, res, &x) || read_count(res, "\"reassembled\":") != nd) {
			fprintf(stderr, "bench defrag-cli: rxpath run %d failed or miscounted\n",
				r);
			bad = 1;
		}
		s_rx[r] = x.s;
		m_rx[r] = x.rss_mb;
		snprintf(cmd, sizeof(cmd),
			 "tshark -r '%s' -o ip.defragment:TRUE -Y ip.reassembled.length -T fields "
			 "-e ip.reassembled.length 2>/dev/null | wc -l",
			 in);
		if (run(cmd, res, &x) || read_count(res, NULL) != nd) {
			fprintf(stderr,
				"bench defrag-cli: tshark run %d failed or miscounted (%lld)\n", r,
				read_count(res, NULL));
			bad = 1;
		}
		s_ts[r] = x.s;
		m_ts[r] = x.rss_mb;
		new_out(dir, "cp.pcap");
		snprintf(cmd, sizeof(cmd), "cp '%s' '%s/cp.pcap'", in, dir);
		if (run(cmd, NULL, &x))
			bad = 1;
		s_cp[r] = x.s;
		new_out(dir, "dd.pcap");
		snprintf(cmd, sizeof(cmd), "dd if='%s' of='%s/dd.pcap' bs=2M status=none", in, dir);
		if (run(cmd, NULL, &x))
			bad = 1;
		s_dd[r] = x.s;
		new_out(dir, "wv.pcap");
		snprintf(cmd, sizeof(cmd), "'%s' --floor-writev '%s' '%s/wv.pcap'", self, in, dir);
		if (run(cmd, NULL, &x))
			bad = 1;
		s_wv[r] = x.s;
		printf("run %d: rxpath %.3f s (%.0f MB), tshark %.3f s (%.0f MB), cp %.3f s, dd "
		       "%.3f s, mapped writev %.3f s\n",
		       r, s_rx[r], m_rx[r], s_ts[r], m_ts[r], s_cp[r], s_dd[r], s_wv[r]);
		fflush(stdout);
	}
	if (!bad) {
		double rxm = bench_median(s_rx, o.runs), tsm = bench_median(s_ts, o.runs);
		double cpm = bench_median(s_cp, o.runs), ddm = bench_median(s_dd, o.runs);
		double wvm = bench_median(s_wv, o.runs);

		bench_add(&t, "time", "tshark -o ip.defragment:TRUE", "s", tsm, 1, NULL);
		bench_add(&t, "time", "rxpath defrag", "s", rxm, 1, "tshark -o ip.defragment:TRUE");
		bench_add(&t, "floor", "cp", "s", cpm, 1, NULL);
		bench_add(&t, "floor", "rxpath defrag", "s", rxm, 1, "cp");
		bench_add(&t, "floor", "mapped input, writev per record", "s", wvm, 1, "cp");
		bench_add(&t, "user-space floor", "dd bs=2M", "s", ddm, 1, NULL);
		bench_add(&t, "user-space floor", "rxpath defrag", "s", rxm, 1, "dd bs=2M");
		bench_add(&t, "mapped floor", "mapped input, writev per record", "s", wvm, 1, NULL);
		bench_add(&t, "mapped floor", "rxpath defrag", "s", rxm, 1,
			  "mapped input, writev per record");
		bench_add(&t, "peak RSS", "tshark", "MB", bench_median(m_ts, o.runs), 1, NULL);
		bench_add(&t, "peak RSS", "rxpath defrag", "MB", bench_median(m_rx, o.runs), 1,
			  "tshark");
		bench_report(&t, &o);
		printf("rxpath is %.2fx tshark (target >= 8x) and %.2fx cp's time (target <= "
		       "1.5x); dd takes %.2fx cp's time, the mapped writev floor %.2fx\n",
		       tsm / rxm, rxm / cpm, ddm / cpm, wvm / cpm);
		plot(&o, (double)st.st_size / 1e6, nd, rxm, tsm, cpm);
	}
out:
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "bench defrag-cli: cannot remove %s\n", dir);
	return bad;
}
