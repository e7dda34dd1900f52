/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Prefetching a node before searching it.
 *
 * A lookup's binary search in a node touches its lines one after the
 * other, each address depending on the last compare: one cache miss
 * after another. Asking for all of the node's lines as soon as its
 * address is known overlaps those misses (Chen, Gibbons, Mowry,
 * "Improving Index Performance through Prefetching", SIGMOD'01).
 * prefetch_range() steps by PREFETCH_STRIDE (4 lines on x86, for
 * streams): a node wants every line.
 */
#ifndef _PMIDX_PREFETCH_H
#define _PMIDX_PREFETCH_H

#include <linux/cache.h>
#include <linux/prefetch.h>

static inline void pmidx_prefetch_node(const void *p, size_t len)
{
	const char *cp = (const char *)((unsigned long)p & ~(L1_CACHE_BYTES - 1UL));
	const char *end = (const char *)p + len;

	for (; cp < end; cp += L1_CACHE_BYTES)
		prefetch(cp);
}

#endif
