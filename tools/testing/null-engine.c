// SPDX-License-Identifier: GPL-2.0
/*
 * Null engines: every engine of kmod/core/engine.c's table, replaced by
 * one that stores nothing. Linked into libpmidx-core.a (instead of
 * kmod/engines/), so the tests of the pool, index table and allocator
 * see the core alone: an index is exactly its root object, and they do
 * not change when an engine is added or is half-way through development.
 * null-engines.inc (generated from engine.c by user.mk) lists them as
 * NULL_ENGINE(id, symbol).
 */
#include <linux/errno.h>
#include "core/engine.h"

static int null_open(struct pmidx_index *idx, const struct pmidx_recover *rc)
{
	return 0;
}

static void null_close(struct pmidx_index *idx, bool clean)
{
}

static void null_destroy(struct pmidx_index *idx)
{
}

static int null_get(struct pmidx_index *idx, const u8 *key, u32 klen,
		    u8 *val, u32 *vlen)
{
	return -ENOENT;
}

static int null_put(struct pmidx_index *idx, const u8 *key, u32 klen,
		    const u8 *val, u32 vlen, u32 flags)
{
	return -EOPNOTSUPP;
}

static int null_del(struct pmidx_index *idx, const u8 *key, u32 klen,
		    u32 flags)
{
	return -ENOENT;
}

static int null_scan(struct pmidx_index *idx, const u8 *start, u32 start_len,
		     bool after, const u8 *end, u32 end_len,
		     struct pmidx_scan_sink *sink)
{
	return 0;
}

static int null_check(struct pmidx_index *idx, u64 *keys, const char **why)
{
	*keys = 0;
	return 0;
}

#define NULL_ENGINE(eid, sym)						\
	const struct pmidx_engine_ops sym = {				\
		.id = eid, .name = "null", .open = null_open,		\
		.close = null_close, .destroy = null_destroy,		\
		.get = null_get, .put = null_put, .del = null_del,	\
		.scan = null_scan, .check = null_check,			\
	};
#include "null-engines.inc"
