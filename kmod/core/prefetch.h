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

/*
 * Every line of [@p, @p + @len): one prefetch a line's length apart, then
 * the last byte (a range that starts inside a line ends inside one more).
 * The step count does not depend on @p's alignment, so a constant @len
 * unrolls into that many prefetches: a loop would add three instructions
 * to each, at every level of a descent.
 */
static __always_inline void pmidx_prefetch_node(const void *p, size_t len)
{
	const char *cp = p;
	size_t off;

	_Pragma("GCC unroll 16")
	for (off = 0; off < len; off += L1_CACHE_BYTES)
		prefetch(cp + off);
	prefetch(cp + len - 1);
}

#endif
