/*
 * Small thread ids (include/rxpath/thread.h). A 64-bit map says which ids
 * are taken; a thread takes the lowest free one with one CAS and gives it
 * back from a pthread key destructor when it exits. Invariant: a set bit is
 * the id of exactly one live thread (whose rxp_tid_ holds it).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "rxpath/thread.h"

_Static_assert(RXP_MAX_THREADS == 64, "the id map is one 64-bit word");

static _Atomic uint64_t tid_bitmap;
static pthread_key_t tid_key;
static pthread_once_t tid_once = PTHREAD_ONCE_INIT;
__thread int rxp_tid_ __attribute__((tls_model("initial-exec"))) = -1;

static void tid_release(void *v)
{
	unsigned tid = (unsigned)(uintptr_t)v - 1;

	atomic_fetch_and(&tid_bitmap, ~(1ull << tid));
}

static void tid_key_init(void)
{
	pthread_key_create(&tid_key, tid_release);
}

__attribute__((noinline, cold)) unsigned rxp_thread_id_assign(void)
{
	uint64_t used = atomic_load(&tid_bitmap);

	pthread_once(&tid_once, tid_key_init);
	for (;;) {
		if (used == ~0ull) {
			rxp_tid_ = RXP_MAX_THREADS;
			return RXP_MAX_THREADS;
		}
		unsigned tid = (unsigned)__builtin_ctzll(~used);

		if (atomic_compare_exchange_weak(&tid_bitmap, &used, used | (1ull << tid))) {
			rxp_tid_ = (int)tid;
			pthread_setspecific(tid_key, (void *)(uintptr_t)(tid + 1));
			return tid;
		}
	}
}
