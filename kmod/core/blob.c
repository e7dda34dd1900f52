// SPDX-License-Identifier: GPL-2.0
/*
 * Blob heap. Persistence: the whole blob (header and bytes) is durable
 * before its offset is returned, so an engine can publish the offset with
 * its usual commit store. Reclamation: retired blobs are freed by the
 * pool's epoch machinery once no reader can hold the old offset.
 */
#include <linux/errno.h>
#include "blob.h"
#include "epoch.h"

/**
 * pmidx_blob_write - store @len bytes out of line
 *
 * Return: the blob's pool offset, or 0 when the pool is full.
 */
u64 pmidx_blob_write(struct pmidx_pool *pool, const void *data, u32 len)
{
	struct pmidx_blob *b;
	u64 off;

	off = pmidx_alloc(&pool->alloc, sizeof(*b) + len);
	if (!off)
		return 0;
	b = pmidx_ptr(&pool->pm, off);
	b->len = cpu_to_le32(len);
	b->len_check = cpu_to_le32(~len);
	memcpy(b->data, data, len);
	pmidx_persist(&pool->pm, b, sizeof(*b) + len);
	return off;
}

/**
 * pmidx_blob_data - the bytes of the blob at @off
 *
 * Trusts @off (taken from a structure the engine already validated);
 * pmidx_blob_mark() is the validating path used by recovery.
 */
const u8 *pmidx_blob_data(struct pmidx_pool *pool, u64 off, u32 *len)
{
	struct pmidx_blob *b = pmidx_ptr(&pool->pm, off);

	*len = le32_to_cpu(READ_ONCE(b->len));
	return b->data;
}

/** pmidx_blob_retire - free the blob once epoch readers are done with it */
void pmidx_blob_retire(struct pmidx_pool *pool, u64 off)
{
	pmidx_epoch_retire(&pool->epoch, off);
}

/**
 * pmidx_blob_mark - recovery: validate the blob at @off and keep it
 *
 * Return: 0, or -EUCLEAN when @off is not a well-formed blob.
 */
int pmidx_blob_mark(struct pmidx_pool *pool, u64 off)
{
	struct pmidx_blob *b;
	u32 len;
	int ret;

	ret = pmidx_alloc_mark(&pool->alloc, off);
	if (ret)
		return ret;
	b = pmidx_ptr(&pool->pm, off);
	len = le32_to_cpu(b->len);
	if (le32_to_cpu(b->len_check) != ~len || len > PMIDX_VALUE_MAX ||
	    sizeof(*b) + len > pmidx_alloc_size(&pool->alloc, off))
		return -EUCLEAN;
	return 0;
}
