/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _SHIM_LINUX_STRING_H
#define _SHIM_LINUX_STRING_H

#include <string.h>
#include <linux/types.h>
#include <linux/errno.h>

#ifdef PMIDX_STORE_TRACE
/*
 * The prefix build: mem* calls with a variable size are library calls
 * the compiler does not instrument, so they report their stores here.
 */
#include <shim/store_trace.h>
#define memcpy(dst, src, n)	store_trace_memcpy(dst, src, n)
#define memmove(dst, src, n)	store_trace_memmove(dst, src, n)
#define memset(dst, c, n)	store_trace_memset(dst, c, n)
#endif

/* Copy with truncation; -E2BIG when @src did not fit. */
static inline ssize_t strscpy(char *dst, const char *src, size_t count)
{
	size_t len;

	if (!count)
		return -E2BIG;
	len = strnlen(src, count);
	if (len == count) {
		memcpy(dst, src, count - 1);
		dst[count - 1] = 0;
		return -E2BIG;
	}
	memcpy(dst, src, len + 1);
	return len;
}

static inline void *memchr_inv(const void *start, int c, size_t bytes)
{
	const u8 *p = start;
	size_t i;

	for (i = 0; i < bytes; i++)
		if (p[i] != (u8)c)
			return (void *)(p + i);
	return NULL;
}

static inline size_t str_has_prefix(const char *str, const char *prefix)
{
	size_t len = strlen(prefix);

	return strncmp(str, prefix, len) == 0 ? len : 0;
}

static inline void memzero_explicit(void *s, size_t count)
{
	memset(s, 0, count);
	barrier();
}

/* Non-temporal copy into pmem: the destination lines bypass the cache and
 * need only a fence (the shim reports them to the pmem backend as flushed). */
void memcpy_flushcache(void *dst, const void *src, size_t cnt);

#endif
