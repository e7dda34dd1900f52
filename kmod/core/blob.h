/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Blob heap: out-of-line keys and values (anything an engine cannot keep
 * in an 8-byte word). A blob is an allocator object holding
 * struct pmidx_blob and the bytes; engines store its pool offset as an
 * indirection word. Blobs are immutable: an update writes a new blob and
 * retires the old one through the pool's epochs.
 */
#ifndef _PMIDX_BLOB_H
#define _PMIDX_BLOB_H

#include "pool.h"

struct pmidx_blob {
	__le32	len;
	__le32	len_check;	/* ~len: catches a stray offset */
	u8	data[];
};

u64 pmidx_blob_write(struct pmidx_pool *pool, const void *data, u32 len);
const u8 *pmidx_blob_data(struct pmidx_pool *pool, u64 off, u32 *len);
void pmidx_blob_retire(struct pmidx_pool *pool, u64 off);
int pmidx_blob_mark(struct pmidx_pool *pool, u64 off);

#endif /* _PMIDX_BLOB_H */
