/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Blob heap: out-of-line keys and values (anything an engine cannot keep
 * in an 8-byte word). A blob is an allocator object holding
 * struct pmidx_blob and the bytes; engines store its pool offset as an
 * indirection word. Blobs are immutable: an update writes a new blob and
 * retires the old one.
 *
 * Lifetime rule. A freed blob keeps a valid-looking header until its
 * slot is reused, and a reused one is a valid blob of someone else, so
 * nothing that recovery takes for live may name a blob after it is freed
 * (a record recovery reads but drops by a rule of its engine, such as
 * pfart's superseded records, may):
 *  - a blob no persistent structure has named yet (a failed write) is
 *    freed at once with pmidx_free();
 *  - a blob only persistent structures that stop naming it atomically
 *    (a slot, a list node, then the commit store) and DRAM readers can
 *    name is retired with pmidx_blob_retire() (epochs);
 *  - a blob a log entry may name (it was ever logged, or an entry names
 *    it through a slot it was copied from) is retired with
 *    pmidx_wal_retire(), which holds it until no entry can name it (the
 *    rule in core/wal.h), then retires it through the epochs.
 * The blob header itself carries no generation: reuse rewrites it anyway.
 * A committed-mode engine writes its blobs with
 * pmidx_blob_write_committed() and links them inside a pmidx_txn; the
 * rules above hold as they are (a retired blob's commit bit was cleared
 * by the txn that unlinked it).
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
u64 pmidx_blob_write_committed(struct pmidx_pool *pool, const void *data,
			       u32 len);
const u8 *pmidx_blob_data(struct pmidx_pool *pool, u64 off, u32 *len);
int pmidx_blob_read_len(struct pmidx_pool *pool, u64 off, u32 *len);
int pmidx_blob_read_data(struct pmidx_pool *pool, u64 off, void *dst, u32 len);
int pmidx_blob_read(struct pmidx_pool *pool, u64 off, void *dst, u32 cap,
		    u32 *len);
void pmidx_blob_retire(struct pmidx_pool *pool, u64 off);
int pmidx_blob_mark(struct pmidx_pool *pool, u64 off);

#endif /* _PMIDX_BLOB_H */
