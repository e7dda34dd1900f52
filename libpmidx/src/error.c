// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * pmidx_strerror(): what an errno means for pmidx operations, falling
 * back to the C library's description. Only static strings are
 * returned, so it is thread-safe.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "internal.h"

static const struct {
	int err;
	const char *msg;
} pmidx_errors[] = {
	{ ENOENT,	"No such key or index" },
	{ EEXIST,	"Key already exists" },
	{ ENOSPC,	"No space left in the pool, or a buffer too small for the value or record" },
	{ EOVERFLOW,	"Buffer too small for the value or record" },
	{ E2BIG,	"Value too large (at most 65536 bytes)" },
	{ EINVAL,	"Invalid argument (key length, flags or reserved field)" },
	{ EFAULT,	"Bad address (key, value or buffer pointer)" },
	{ ENXIO,	"No such index in the pool (stale index handle?)" },
	{ EOPNOTSUPP,	"Operation not supported (engine not built into the module?)" },
	{ ENOTTY,	"Not a pmidx device" },
	{ EUCLEAN,	"Index structure is damaged (details in the kernel log)" },
	{ EPROTO,	"Malformed reply from the pool" },
	{ EBUSY,	"Pool or index is busy" },
	{ ENODEV,	"No such pool" },
	{ ENOMEM,	"Out of memory" },
	{ EAGAIN,	"Value kept changing size; try again" },
};

const char *pmidx_strerror(int err)
{
	const char *s;
	size_t i;

	if (err < 0)
		err = -err;
	if (!err)
		return "Success";
	for (i = 0; i < PMIDX_ARRAY_SIZE(pmidx_errors); i++)
		if (pmidx_errors[i].err == err)
			return pmidx_errors[i].msg;
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 32)
	s = strerrordesc_np(err);
#else
	s = NULL;
#endif
	return s ? s : "Unknown error";
}
