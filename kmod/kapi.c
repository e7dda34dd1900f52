// SPDX-License-Identifier: GPL-2.0
/*
 * The in-kernel API (include/linux/pmidx_kapi.h): index handles for
 * kernel clients. A handle pins its pool (the pin /dev/pmidxN opens take:
 * no detach) and holds its index (pmidx_index_hold(): drop-index answers
 * -EBUSY), so the operations need no per-call reference: they call the
 * engine directly on the caller's buffers (core/direct.c, shared with the
 * userspace build).
 */
#include <linux/err.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/pmidx_kapi.h>
#include "core/direct.h"
#include "core/engine.h"
#include "pool_dev.h"

struct pmidx_handle {
	struct pmidx_pool_dev	*dev;
	struct pmidx_index	*idx;
};

/* @pool is "pmidxN" or the device path given at attach. */
static struct pmidx_pool_dev *find_pool(const char *pool)
{
	if (pool[0] == '/')
		return pmidx_dev_find(-1, NULL, pool);
	return pmidx_dev_find(-1, pool, NULL);
}

/**
 * pmidx_index_open - open index @index of the attached pool @pool
 * @pool:  the pool's name ("pmidx0") or the device path it was attached by
 * @index: the index name
 *
 * Context: process context; takes pmidx_devs_lock.
 * Return: a handle, or ERR_PTR(-ENODEV) when no such pool is attached
 * (or it is being detached), -ENOENT when it has no such index,
 * -EOPNOTSUPP when the index's engine is not available, -EINVAL for a
 * malformed name, -ENOMEM.
 */
struct pmidx_handle *pmidx_index_open(const char *pool, const char *index)
{
	struct pmidx_pool_dev *d;
	struct pmidx_handle *h;
	int ret;

	if (!pool || !index || !*index || strlen(index) > PMIDX_NAME_MAX)
		return ERR_PTR(-EINVAL);
	h = kzalloc(sizeof(*h), GFP_KERNEL);
	if (!h)
		return ERR_PTR(-ENOMEM);
	mutex_lock(&pmidx_devs_lock);
	d = find_pool(pool);
	if (!d) {
		ret = -ENODEV;
		goto err_unlock;
	}
	ret = pmidx_dev_pin(d);
	if (ret)
		goto err_unlock;
	h->idx = pmidx_index_hold(d->pool, index);
	if (IS_ERR(h->idx)) {
		ret = PTR_ERR(h->idx);
		goto err_unpin;
	}
	h->dev = d;
	mutex_unlock(&pmidx_devs_lock);
	return h;

err_unpin:
	pmidx_dev_unpin(d);
err_unlock:
	mutex_unlock(&pmidx_devs_lock);
	kfree(h);
	return ERR_PTR(ret);
}
EXPORT_SYMBOL_GPL(pmidx_index_open);

/**
 * pmidx_index_close - release a handle from pmidx_index_open()
 * @h: the handle (NULL or an ERR_PTR is ignored)
 *
 * Once the last handle and char-device file of a pool are closed, the
 * pool may be detached again.
 */
void pmidx_index_close(struct pmidx_handle *h)
{
	if (IS_ERR_OR_NULL(h))
		return;
	pmidx_index_release(h->idx);
	pmidx_dev_unpin(h->dev);
	kfree(h);
}
EXPORT_SYMBOL_GPL(pmidx_index_close);

/**
 * pmidx_index_engine - the engine serving @h's index
 *
 * Return: an enum pmidx_engine_id.
 */
u32 pmidx_index_engine(const struct pmidx_handle *h)
{
	return h->idx->engine;
}
EXPORT_SYMBOL_GPL(pmidx_index_engine);

/**
 * pmidx_get - look @key up
 * @val:     buffer for the value
 * @val_len: its size on input; the value length on output, also when the
 *           buffer is too small
 *
 * Return: 0; -ENOENT if absent; -ENOSPC if the value does not fit;
 * -EINVAL for a bad key.
 */
int pmidx_get(struct pmidx_handle *h, const void *key, u32 key_len,
	      void *val, u32 *val_len)
{
	return pmidx_direct_get(h->idx, key, key_len, val, val_len);
}
EXPORT_SYMBOL_GPL(pmidx_get);

/**
 * pmidx_put - insert or update @key; durable when it returns
 * @flags: 0 (upsert) or PMIDX_PUT_INSERT (-EEXIST if the key exists)
 *
 * Return: 0, -EEXIST, -EINVAL for a bad key or flag, -E2BIG for a value
 * over PMIDX_VALUE_MAX, -ENOSPC when the pool is full.
 */
int pmidx_put(struct pmidx_handle *h, const void *key, u32 key_len,
	      const void *val, u32 val_len, u32 flags)
{
	return pmidx_direct_put(h->idx, key, key_len, val, val_len, flags);
}
EXPORT_SYMBOL_GPL(pmidx_put);

/**
 * pmidx_del - delete @key; durable when it returns
 *
 * Return: 0, -ENOENT if absent, -EINVAL for a bad key.
 */
int pmidx_del(struct pmidx_handle *h, const void *key, u32 key_len)
{
	return pmidx_direct_del(h->idx, key, key_len);
}
EXPORT_SYMBOL_GPL(pmidx_del);

/**
 * pmidx_scan - visit keys in ascending order
 * @start:   first key (@start_len 0: from the smallest key); with
 *           PMIDX_SCAN_AFTER in @flags the scan starts after it
 * @end:     exclusive upper bound (@end_len 0: unbounded)
 * @fn:      called per record; its buffers are valid only during the call
 *
 * Each record is a committed version; the scan is not a snapshot. @fn
 * may run inside the engine's read-side section: it must not sleep nor
 * call back into the same index.
 *
 * Return: 0 at the end or when @fn returned 1, @fn's negative errno, or
 * -EINVAL for bad arguments.
 */
int pmidx_scan(struct pmidx_handle *h, const void *start, u32 start_len,
	       const void *end, u32 end_len, u32 flags,
	       pmidx_scan_fn fn, void *priv)
{
	return pmidx_direct_scan(h->idx, start, start_len, end, end_len, flags,
				 fn, priv);
}
EXPORT_SYMBOL_GPL(pmidx_scan);
