/* SPDX-License-Identifier: GPL-2.0 */
/* Userspace shim: prefetch hints as <linux/prefetch.h> has them. */
#ifndef _SHIM_LINUX_PREFETCH_H
#define _SHIM_LINUX_PREFETCH_H

#include <linux/cache.h>
#include <linux/types.h>

/*
 * As x86's: volatile asm. GCC 12 drops __builtin_prefetch() from inlined
 * helpers (it found the calls free of side effects), so none was left.
 */
#if defined(__x86_64__)
#define prefetch(x)	asm volatile("prefetcht0 %0" : : "m" (*(const char *)(x)))
#define prefetchw(x)	asm volatile("prefetchw %0" : : "m" (*(const char *)(x)))
#else
#define prefetch(x)	__builtin_prefetch(x)
#define prefetchw(x)	__builtin_prefetch(x, 1)
#endif

/* as the kernel's: one prefetch per PREFETCH_STRIDE, not per line */
#define PREFETCH_STRIDE	(4 * L1_CACHE_BYTES)

static inline void prefetch_range(void *addr, size_t len)
{
	char *cp, *end = (char *)addr + len;

	for (cp = addr; cp < end; cp += PREFETCH_STRIDE)
		prefetch(cp);
}

#endif
