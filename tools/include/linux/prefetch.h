/* SPDX-License-Identifier: GPL-2.0 */
/* Userspace shim: prefetch hints as <linux/prefetch.h> has them. */
#ifndef _SHIM_LINUX_PREFETCH_H
#define _SHIM_LINUX_PREFETCH_H

#include <linux/cache.h>
#include <linux/types.h>

#define prefetch(x)	__builtin_prefetch(x)
#define prefetchw(x)	__builtin_prefetch(x, 1)

static inline void prefetch_range(void *addr, size_t len)
{
	char *cp, *end = (char *)addr + len;

	for (cp = addr; cp < end; cp += L1_CACHE_BYTES)
		prefetch(cp);
}

#endif
