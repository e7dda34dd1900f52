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

static u64 blob_write(struct pmidx_pool *pool, const void *data, u32 len,
		      bool committed)
{
	struct pmidx_blob *b;
	size_t size = sizeof(*b) + len;
	u64 off;

	off = committed ? pmidx_alloc_committed(&pool->alloc, size) :
			  pmidx_alloc(&pool->alloc, size);
	if (!off)
		return 0;
	b = pmidx_ptr(&pool->pm, off);
	b->len = cpu_to_le32(len);
	b->len_check = cpu_to_le32(~len);
	memcpy(b->data, data, len);
	pmidx_persist(&pool->pm, b, size);
	return off;
}

/**
 * pmidx_blob_write - store @len bytes out of line (a traced object)
 *
 * Return: the blob's pool offset, or 0 when the pool is full.
 */
u64 pmidx_blob_write(struct pmidx_pool *pool, const void *data, u32 len)
{
	return blob_write(pool, data, len, false);
}

/**
 * pmidx_blob_write_committed - pmidx_blob_write() for a committed-mode
 *                              engine: the blob is a pending allocation
 *
 * Durable like pmidx_blob_write(), but allocated with
 * pmidx_alloc_committed(): a crash frees it until a pmidx_txn that names
 * it in pmidx_txn_alloc() ends. Free a blob that never got linked with
 * pmidx_free(); one a txn committed is freed by a txn (pmidx_txn_free(),
 * then the epochs) or by pmidx_free_committed_now() at drop-index.
 *
 * Return: the blob's pool offset, or 0 when the pool is full.
 */
u64 pmidx_blob_write_committed(struct pmidx_pool *pool, const void *data,
			       u32 len)
{
	return blob_write(pool, data, len, true);
}

/**
 * pmidx_blob_data - the bytes of the blob at @off
 *
 * Trusts @off (taken from a structure the engine already validated);
 * pmidx_blob_mark() is the validating path used by recovery. The bytes
 * are read in place: readers that hand them out copy them with
 * pmidx_blob_read() instead, which survives media errors.
 */
const u8 *pmidx_blob_data(struct pmidx_pool *pool, u64 off, u32 *len)
{
	struct pmidx_blob *b = pmidx_ptr(&pool->pm, off);

	*len = le32_to_cpu(READ_ONCE(b->len));
	return b->data;
}

/**
 * pmidx_blob_read_len - the length of the blob at @off, read machine-check
 *                       safe (the header shares its line with the first
 *                       bytes, so a reader must not load it in place)
 *
 * Trusts @off like pmidx_blob_data(); checks the header's ~len word.
 *
 * Return: 0, -EIO on a media error, -EUCLEAN for a header that is not one.
 */
int pmidx_blob_read_len(struct pmidx_pool *pool, u64 off, u32 *len)
{
	struct pmidx_blob hdr;
	int ret;

	ret = pmidx_read_data(&pool->pm, &hdr, pmidx_ptr(&pool->pm, off),
			      sizeof(hdr));
	if (ret)
		return ret;
	*len = le32_to_cpu(hdr.len);
	if (le32_to_cpu(hdr.len_check) != ~*len || *len > PMIDX_VALUE_MAX)
		return -EUCLEAN;
	return 0;
}

/**
 * pmidx_blob_read_data - copy @len bytes of the blob at @off into @dst,
 *                        machine-check safe (the data path's one copy)
 *
 * Return: 0, or -EIO on a media error.
 */
int pmidx_blob_read_data(struct pmidx_pool *pool, u64 off, void *dst, u32 len)
{
	const struct pmidx_blob *b = pmidx_ptr(&pool->pm, off);

	return pmidx_read_data(&pool->pm, dst, b->data, len);
}

/**
 * pmidx_blob_read - the blob at @off into @dst when it fits in @cap bytes
 * @len: the blob's length, also when it does not fit (nothing copied)
 *
 * The header, then the bytes straight into @dst: no bounce buffer.
 *
 * Return: 0, -EIO on a media error, -EUCLEAN for a bad header.
 */
int pmidx_blob_read(struct pmidx_pool *pool, u64 off, void *dst, u32 cap,
		    u32 *len)
{
	int ret = pmidx_blob_read_len(pool, off, len);

	if (ret || *len > cap)
		return ret;
	return pmidx_blob_read_data(pool, off, dst, *len);
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
