/*
 * fuzz_dio only: wiretap's large per-open buffers kept for the next open,
 * instead of going back to ASan's allocator.
 *
 * Why: every wtap_open_offline allocates a 128 KiB and a 256 KiB file
 * buffer (g_try_malloc) and a 96 KiB zstd context (ZSTD_createDCtx), and
 * frees them at close. Under ASan a block over 128 KiB is mmap()ed,
 * touched, munmap()ed and its shadow released each time: one open and
 * close of a small pcap took 96 us under ASan against 11 us without it, and
 * fuzz_dio opens wiretap up to twice per input. With these blocks kept,
 * an open takes about 22 us.
 *
 * How: libwiretap reaches glib's allocator and libzstd through the PLT, so
 * the definitions below, exported by the executable, take their place for
 * it (glib's own g_malloc is plain malloc, and g_free plain free, so memory
 * from either side may be freed by the other). Requests of BIG bytes or
 * more are served from a few blocks kept by exact size; everything else
 * goes to malloc as before.
 *
 * What ASan still sees: each kept block is a real malloc() of exactly the
 * requested size, so its redzones catch an overflow as before. While a
 * block is not handed out it is poisoned, so a use after g_free is
 * reported (as use-after-poison). A block handed out again has its first
 * 4 KiB filled with 0xbe, as ASan fills a new allocation, and g_malloc0's
 * are zeroed. A g_free of a kept block that is not handed out traps as the
 * double free it is. The zstd context is reset to a new context's state
 * when handed out again (zstd's own way to reuse one). A kept block is
 * reachable from slot[], so LeakSanitizer does not see one that is never
 * given back; a wiretap handle left open is still reported, through its
 * own struct and its other buffers, which are ordinary allocations.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sanitizer/asan_interface.h>

#include "fuzz.h"

#define BIG (64 * 1024)
#define SLOTS 16
#define FILL 4096 /* ASan's max_malloc_fill_size */

static struct {
	void *p;
	size_t n;
	int busy;
} slot[SLOTS];

static int fz_slot_of(const void *p)
{
	for (int i = 0; i < SLOTS; i++)
		if (p && slot[i].p == p)
			return i;
	return -1;
}

static void *fz_big_get(size_t n)
{
	int i;

	for (i = 0; i < SLOTS; i++)
		if (slot[i].p && !slot[i].busy && slot[i].n == n) {
			slot[i].busy = 1;
			ASAN_UNPOISON_MEMORY_REGION(slot[i].p, n);
			memset(slot[i].p, 0xbe, n < FILL ? n : FILL);
			return slot[i].p;
		}
	for (i = 0; i < SLOTS; i++)
		if (!slot[i].p) {
			slot[i].p = malloc(n);
			if (!slot[i].p)
				return NULL;
			slot[i].n = n;
			slot[i].busy = 1;
			return slot[i].p;
		}
	return malloc(n); /* every slot kept: an ordinary block */
}

void *g_try_malloc(size_t n);
void *g_malloc(size_t n);
void *g_malloc0(size_t n);
void *g_malloc_n(size_t count, size_t size);
void *g_realloc(void *p, size_t n);
void g_free(void *p);

void *g_try_malloc(size_t n)
{
	if (n >= BIG)
		return fz_big_get(n);
	return n ? malloc(n) : NULL;
}

void *g_malloc(size_t n)
{
	void *p = g_try_malloc(n);

	FZ_CHECK(p || !n); /* glib aborts here */
	return p;
}

void *g_malloc0(size_t n)
{
	void *p;

	if (n < BIG)
		p = n ? calloc(1, n) : NULL;
	else if ((p = fz_big_get(n)))
		memset(p, 0, n);
	FZ_CHECK(p || !n);
	return p;
}

void *g_malloc_n(size_t count, size_t size)
{
	size_t n;

	FZ_CHECK(!__builtin_mul_overflow(count, size, &n));
	return g_malloc(n);
}

void *g_realloc(void *p, size_t n)
{
	int i = fz_slot_of(p);
	void *q;

	if (i < 0) {
		if (!n) {
			free(p);
			return NULL;
		}
		q = realloc(p, n);
		FZ_CHECK(q);
		return q;
	}
	FZ_CHECK(slot[i].busy);
	q = n ? g_malloc(n) : NULL;
	if (q)
		memcpy(q, p, n < slot[i].n ? n : slot[i].n);
	g_free(p);
	return q;
}

void g_free(void *p)
{
	int i = fz_slot_of(p);

	if (i < 0) {
		free(p);
		return;
	}
	FZ_CHECK(slot[i].busy); /* a double free of a kept block */
	slot[i].busy = 0;
	ASAN_POISON_MEMORY_REGION(p, slot[i].n);
}

/* One zstd decompression context, kept. libzstd is wiretap's dependency,
 * not ours: its functions are looked up where wiretap loaded them, and the
 * context is opaque (no header needed). */
typedef struct ZSTD_DCtx_s ZSTD_DCtx;
ZSTD_DCtx *ZSTD_createDCtx(void);
size_t ZSTD_freeDCtx(ZSTD_DCtx *dctx);
#define ZSTD_RESET_SESSION_AND_PARAMETERS 3 /* ZSTD_reset_session_and_parameters */

static ZSTD_DCtx *kept_dctx;
static int dctx_busy;

ZSTD_DCtx *ZSTD_createDCtx(void)
{
	static ZSTD_DCtx *(*real)(void);
	static size_t (*reset)(ZSTD_DCtx *, int);

	if (!real) {
		real = (ZSTD_DCtx * (*)(void)) dlsym(RTLD_NEXT, "ZSTD_createDCtx");
		reset = (size_t(*)(ZSTD_DCtx *, int))dlsym(RTLD_NEXT, "ZSTD_DCtx_reset");
	}
	FZ_CHECK(real && reset);
	if (dctx_busy)
		return real();
	if (!kept_dctx && !(kept_dctx = real()))
		return NULL;
	FZ_CHECK(reset(kept_dctx, ZSTD_RESET_SESSION_AND_PARAMETERS) == 0);
	dctx_busy = 1;
	return kept_dctx;
}

size_t ZSTD_freeDCtx(ZSTD_DCtx *dctx)
{
	static size_t (*real)(ZSTD_DCtx *);

	if (dctx && dctx == kept_dctx) {
		FZ_CHECK(dctx_busy);
		dctx_busy = 0;
		return 0;
	}
	if (!real)
		real = (size_t(*)(ZSTD_DCtx *))dlsym(RTLD_NEXT, "ZSTD_freeDCtx");
	FZ_CHECK(real);
	return real(dctx);
}
