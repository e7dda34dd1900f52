/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Store tracing, for the crash simulator's prefix model (the "prefix"
 * build of tools/testing/user.mk, which defines PMIDX_STORE_TRACE).
 *
 * There kmod/core, kmod/engines and the tests are compiled with gcc's
 * -fsanitize=kernel-address, every check made a call and only stores
 * instrumented: the compiler calls __asan_store{1,2,4,8,16,N}_noabort()
 * before each store (plain, WRITE_ONCE, __atomic, struct copies). A
 * memcpy/memset/memmove with a variable size stays a library call that
 * nothing instruments, so <linux/string.h> routes them through the
 * wrappers below in that build.
 *
 * A callback runs before its store: a store into the traced range is
 * kept per thread and reported (its bytes are in memory by then) at that
 * thread's next callback (a lock release is one: it stores the lock's
 * owner), mem* call, store_trace_sync() (the crash simulator's flush and
 * fence hooks) or exit. Stores outside the range cost a thread-local test
 * and a range check. Reports are serialised by one lock, so the order of
 * two threads' stores is the order in which they were reported.
 */
#ifndef _SHIM_STORE_TRACE_H
#define _SHIM_STORE_TRACE_H

#include <stddef.h>

struct store_trace_ops {
	/* this thread stored [@addr, @addr + @len), within the range */
	void (*stored)(void *priv, void *addr, size_t len);
	void *priv;
};

#ifdef PMIDX_STORE_TRACE
/* Report stores into [@base, @base + @size) to @ops until stopped. */
void store_trace_start(void *base, size_t size, const struct store_trace_ops *ops);
/* No report reaches the ops once this returns. */
void store_trace_stop(void);
/* Report this thread's pending store now. */
void store_trace_sync(void);

void *store_trace_memcpy(void *dst, const void *src, size_t n);
void *store_trace_memmove(void *dst, const void *src, size_t n);
void *store_trace_memset(void *dst, int c, size_t n);
#else
static inline void store_trace_sync(void)
{
}
#endif

#endif
