// SPDX-License-Identifier: GPL-2.0
/*
 * Direct calls (direct.h): the engine on the caller's buffers. The
 * arguments are checked here as the dispatcher checks a command's shape;
 * what the engine returns goes back unchanged.
 */
#include <linux/errno.h>
#include <linux/minmax.h>
#include <linux/pmidx.h>
#include "direct.h"
#include "engine.h"

static bool key_ok(const void *key, u32 key_len)
{
	return key && key_len && key_len <= PMIDX_KEY_MAX;
}

/**
 * pmidx_direct_get - look @key up
 * @val:     buffer for the value
 * @val_len: its size on input; the value length on output, also when the
 *           buffer is too small
 *
 * Return: 0; -ENOENT if absent; -ENOSPC if the value does not fit;
 * -EINVAL for a bad key.
 */
int pmidx_direct_get(struct pmidx_index *idx, const void *key, u32 key_len,
		     void *val, u32 *val_len)
{
	u32 cap = min_t(u32, *val_len, PMIDX_VALUE_MAX), len = cap;
	int ret;

	if (!key_ok(key, key_len) || (cap && !val))
		return -EINVAL;
	ret = idx->ops->get(idx, key, key_len, val, &len);
	if (ret)
		return ret;
	*val_len = len;
	return len > cap ? -ENOSPC : 0;
}

/**
 * pmidx_direct_put - insert or update @key; durable when it returns
 * @flags: 0 (upsert) or PMIDX_PUT_INSERT (-EEXIST if the key exists)
 *
 * Return: 0, -EEXIST, -EINVAL for a bad key or flag, -E2BIG for a value
 * over PMIDX_VALUE_MAX, -ENOSPC when the pool is full.
 */
int pmidx_direct_put(struct pmidx_index *idx, const void *key, u32 key_len,
		     const void *val, u32 val_len, u32 flags)
{
	if (!key_ok(key, key_len) || (val_len && !val) ||
	    (flags & ~PMIDX_PUT_INSERT))
		return -EINVAL;
	if (val_len > PMIDX_VALUE_MAX)
		return -E2BIG;
	return idx->ops->put(idx, key, key_len, val, val_len, flags);
}

/**
 * pmidx_direct_del - delete @key; durable when it returns
 *
 * Return: 0, -ENOENT if absent, -EINVAL for a bad key.
 */
int pmidx_direct_del(struct pmidx_index *idx, const void *key, u32 key_len)
{
	if (!key_ok(key, key_len))
		return -EINVAL;
	return idx->ops->del(idx, key, key_len, 0);
}

struct scan_cb {
	struct pmidx_scan_sink	sink;
	pmidx_direct_scan_fn	fn;
	void			*priv;
};

static int scan_emit(struct pmidx_scan_sink *sink, const u8 *key, u32 klen,
		     const u8 *val, u32 vlen)
{
	struct scan_cb *cb = container_of(sink, struct scan_cb, sink);

	return cb->fn(cb->priv, key, klen, val, vlen);
}

/**
 * pmidx_direct_scan - call @fn for each key in ascending order
 * @start: first key (@start_len 0: from the smallest key); with
 *         PMIDX_SCAN_AFTER in @flags the scan starts after it
 * @end:   exclusive upper bound (@end_len 0: unbounded)
 * @fn:    may run inside the engine's read-side section: it must not
 *         sleep nor call back into the same index
 *
 * Each record is a committed version; the scan is not a snapshot.
 *
 * Return: 0 at the end or when @fn returned 1, @fn's negative errno, or
 * -EINVAL for bad arguments.
 */
int pmidx_direct_scan(struct pmidx_index *idx, const void *start,
		      u32 start_len, const void *end, u32 end_len, u32 flags,
		      pmidx_direct_scan_fn fn, void *priv)
{
	struct scan_cb cb = { .sink.emit = scan_emit, .fn = fn, .priv = priv };
	int ret;

	if (!fn || (flags & ~PMIDX_SCAN_AFTER) ||
	    start_len > PMIDX_KEY_MAX || (start_len && !start) ||
	    end_len > PMIDX_KEY_MAX || (end_len && !end))
		return -EINVAL;
	ret = idx->ops->scan(idx, start, start_len, flags & PMIDX_SCAN_AFTER,
			     end, end_len, &cb.sink);
	return ret < 0 ? ret : 0;
}
