// SPDX-License-Identifier: GPL-2.0
/*
 * Store tracing (see <shim/store_trace.h>): the callbacks that gcc's
 * -fsanitize=kernel-address emits, and the mem* wrappers of the prefix
 * build. Linked into that build only, and never instrumented itself.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <shim/store_trace.h>

static uintptr_t trace_lo, trace_len;		/* [lo, lo + len): 0 when off */
static const struct store_trace_ops *trace_ops;	/* under trace_lock */
static pthread_mutex_t trace_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t trace_key;
static pthread_once_t trace_once = PTHREAD_ONCE_INIT;

/* the store this thread announced and has not reported yet */
static __thread uintptr_t pend_addr;
static __thread size_t pend_len;
static __thread bool pend_key_set;

static bool in_range(uintptr_t a, size_t len)
{
	uintptr_t lo = __atomic_load_n(&trace_lo, __ATOMIC_RELAXED);
	uintptr_t n = __atomic_load_n(&trace_len, __ATOMIC_RELAXED);

	return a < lo + n && a + len > lo;
}

static void report(uintptr_t a, size_t len)
{
	uintptr_t lo, end;

	pthread_mutex_lock(&trace_lock);
	lo = trace_lo;
	end = lo + trace_len;
	if (trace_ops && a < end && a + len > lo) {
		if (a < lo) {
			len -= lo - a;
			a = lo;
		}
		if (a + len > end)
			len = end - a;
		trace_ops->stored(trace_ops->priv, (void *)a, len);
	}
	pthread_mutex_unlock(&trace_lock);
}

void store_trace_sync(void)
{
	size_t len = pend_len;

	if (!len)
		return;
	pend_len = 0;
	report(pend_addr, len);
}

/* a thread that exits right after a store: report it */
static void thread_exit(void *unused)
{
	store_trace_sync();
}

static void key_init(void)
{
	pthread_key_create(&trace_key, thread_exit);
}

static inline void note(uintptr_t a, size_t len)
{
	if (pend_len)
		store_trace_sync();
	if (!in_range(a, len))
		return;
	if (!pend_key_set) {
		pend_key_set = true;
		pthread_once(&trace_once, key_init);
		pthread_setspecific(trace_key, &pend_key_set);
	}
	pend_addr = a;
	pend_len = len;
}

void store_trace_start(void *base, size_t size, const struct store_trace_ops *ops)
{
	pthread_mutex_lock(&trace_lock);
	trace_ops = ops;
	__atomic_store_n(&trace_lo, (uintptr_t)base, __ATOMIC_RELAXED);
	__atomic_store_n(&trace_len, size, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&trace_lock);
}

void store_trace_stop(void)
{
	store_trace_sync();
	pthread_mutex_lock(&trace_lock);
	__atomic_store_n(&trace_len, 0, __ATOMIC_RELAXED);
	trace_ops = NULL;
	pthread_mutex_unlock(&trace_lock);
}

/* ---- the mem* wrappers (<linux/string.h>) ------------------------------ */

void *store_trace_memcpy(void *dst, const void *src, size_t n)
{
	store_trace_sync();
	memcpy(dst, src, n);
	if (n && in_range((uintptr_t)dst, n))
		report((uintptr_t)dst, n);
	return dst;
}

void *store_trace_memmove(void *dst, const void *src, size_t n)
{
	store_trace_sync();
	memmove(dst, src, n);
	if (n && in_range((uintptr_t)dst, n))
		report((uintptr_t)dst, n);
	return dst;
}

void *store_trace_memset(void *dst, int c, size_t n)
{
	store_trace_sync();
	memset(dst, c, n);
	if (n && in_range((uintptr_t)dst, n))
		report((uintptr_t)dst, n);
	return dst;
}

/* ---- the compiler's callbacks ------------------------------------------ */

/*
 * All that the instrumented objects reference (nm, gcc 12): the store
 * checks (16: 128-bit stores) and __asan_handle_no_return. Loads are not
 * instrumented, the stack and globals have no redzones.
 */

void __asan_store1_noabort(uintptr_t addr)
{
	note(addr, 1);
}

void __asan_store2_noabort(uintptr_t addr)
{
	note(addr, 2);
}

void __asan_store4_noabort(uintptr_t addr)
{
	note(addr, 4);
}

void __asan_store8_noabort(uintptr_t addr)
{
	note(addr, 8);
}

void __asan_store16_noabort(uintptr_t addr)
{
	note(addr, 16);
}

void __asan_storeN_noabort(uintptr_t addr, size_t size)
{
	if (size)
		note(addr, size);
}

/* before a noreturn call (BUG, a test's longjmp): the last store is done */
void __asan_handle_no_return(void)
{
	store_trace_sync();
}
