/* SPDX-License-Identifier: GPL-2.0 */
/*
 * On-media format of a pmidx pool. Everything here is little-endian and
 * addressed by byte offsets from the start of the pool, so an image is
 * position independent: the kernel maps it with dax_direct_access(), the
 * userspace build with mmap(), and both read the same bytes.
 *
 *   0        4K       8K            16K               data_off
 *   +--------+--------+-------------+-----------------+---------------...
 *   | sb A   | sb B   | index table | chunk headers   | chunks (chunk_size)
 *   +--------+--------+-------------+-----------------+---------------...
 *
 * Superblock: two copies, updated alternately with a rising sequence
 * number; attach picks the valid copy with the highest one, so a torn
 * superblock write can never lose the pool.
 *
 * Index table: PMIDX_MAX_INDEXES entries; an entry becomes live by one
 * 8-byte store of its commit word after the rest of it is persistent.
 *
 * Chunk headers: one per data chunk. The 8-byte descriptor word says what
 * the chunk holds and is updated atomically and persisted before any
 * object in the chunk is handed out. In traced chunks the allocation
 * bitmap and counts are written back only at clean detach; in
 * committed-mode chunks (SLAB_C, RUN_C) the bitmap is kept current by
 * every commit, with intent records covering the link stores in flight
 * (see alloc.c for why both are crash-safe).
 *
 * Offset 0 is never a valid object, so 0 serves as the null offset.
 */
#ifndef _PMIDX_FORMAT_H
#define _PMIDX_FORMAT_H

#include <linux/types.h>
#include <linux/build_bug.h>
#include <linux/pmidx.h>

#define PMIDX_SB_MAGIC		0x4c4f4f5058444d50ULL	/* "PMDXPOOL" */
#define PMIDX_FORMAT_VERSION	1
#define PMIDX_SB_COPIES		2
#define PMIDX_SB_STRIDE		4096

/*
 * Incompatible features: an attach that does not know one must refuse.
 * INTENTS: the pool has committed-mode chunks and an intent chunk
 * (alloc.c); set before the first one is made, so a module that cannot
 * recover them refuses the pool instead of calling them corrupt.
 */
#define PMIDX_FEAT_INCOMPAT_INTENTS	(1ULL << 0)
/*
 * COMMITTED_IDX: the index table may hold committed-mode indexes
 * (PMIDX_INDEX_F_COMMITTED) and DROPPING entries. A module without it
 * would take a DROPPING entry for a free slot and drop a committed index
 * by clearing its entry, leaking its objects for good; so it must
 * refuse. Set (with INTENTS, in one superblock write) before the first
 * committed-mode index is made; never cleared.
 */
#define PMIDX_FEAT_INCOMPAT_COMMITTED_IDX	(1ULL << 1)
#define PMIDX_FEAT_INCOMPAT_SUPP	(PMIDX_FEAT_INCOMPAT_INTENTS | \
					 PMIDX_FEAT_INCOMPAT_COMMITTED_IDX)
/* Read-only compatible features (none yet). */
#define PMIDX_FEAT_RO_COMPAT_SUPP	0ULL

#define PMIDX_CHUNK_SHIFT	18			/* 256 KiB chunks */
#define PMIDX_CHUNK_SIZE	(1U << PMIDX_CHUNK_SHIFT)
#define PMIDX_MIN_OBJ_SHIFT	8			/* 256-byte classes */
#define PMIDX_MIN_OBJ		(1U << PMIDX_MIN_OBJ_SHIFT)
#define PMIDX_SLOTS_MAX		(PMIDX_CHUNK_SIZE / PMIDX_MIN_OBJ)
#define PMIDX_INDEX_TABLE_OFF	(PMIDX_SB_COPIES * PMIDX_SB_STRIDE)
#define PMIDX_INDEX_ENTRY_SIZE	128
#define PMIDX_CHUNK_HDR_OFF	(16 * 1024)
#define PMIDX_CHUNK_HDR_SIZE	256

/* Smallest pool: metadata plus a handful of chunks. */
#define PMIDX_MIN_POOL_SIZE	(16ULL << 20)

struct pmidx_sb {
	__le64	magic;
	__le32	version;
	__le32	sb_size;		/* sizeof(struct pmidx_sb) */
	__le64	seq;			/* highest valid copy wins */
	__u8	uuid[16];
	__le64	size;			/* bytes of the pool */
	__le64	feat_incompat;
	__le64	feat_ro_compat;
	__le64	feat_compat;
	__le32	chunk_size;
	__le32	nr_chunks;
	__le64	index_table_off;
	__le32	index_slots;
	__le32	index_entry_size;
	__le64	chunk_hdr_off;
	__le64	data_off;
	__le64	format_time;		/* seconds since the epoch */
	__le64	attach_count;
	__le32	clean;			/* 1: detached cleanly, allocator state valid */
	__le32	crc;			/* crc32c of everything above */
};

/*
 * Index table entry. @commit is written last, by a single 8-byte store:
 * PMIDX_INDEX_LIVE plus the entry's generation. Everything else is
 * persistent before that, so a crash never leaves a half-made index.
 *
 * A committed-mode index (@flags PMIDX_INDEX_F_COMMITTED, needs
 * FEAT_INCOMPAT_COMMITTED_IDX) is dropped in two durable steps: @commit
 * := PMIDX_INDEX_DROPPING (the index is gone for every user, but attach
 * finishes freeing its objects), then @commit := 0 once every object's
 * commit bit is clear (index_table.c).
 */
#define PMIDX_INDEX_LIVE	0x4556494c00000000ULL	/* "\0\0\0\0LIVE" */
#define PMIDX_INDEX_DROPPING	0x504f524400000000ULL	/* "\0\0\0\0DROP" */
#define PMIDX_INDEX_LIVE_MASK	0xffffffff00000000ULL

/* @flags of an entry */
#define PMIDX_INDEX_F_COMMITTED	(1U << 0)	/* objects in committed mode */
#define PMIDX_INDEX_F_KNOWN	PMIDX_INDEX_F_COMMITTED

struct pmidx_index_entry {
	char	name[64];		/* NUL-padded */
	__le64	root;			/* pool offset of the engine's root object */
	__le64	create_seq;
	__le32	engine;			/* enum pmidx_engine_id */
	__le32	name_len;
	__le32	flags;			/* PMIDX_INDEX_F_* */
	__le32	crc;			/* crc32c of name..flags */
	__u8	reserved[24];
	__le64	commit;
};

/*
 * Chunk descriptor word (atomic, always valid):
 *   63..56 PMIDX_CHUNK_DESC_MAGIC, 55..48 type, 47..40 class,
 *   39..8 run length in chunks (RUN heads), 7..0 xor of bytes 1..7.
 * An all-zero word is a free chunk (what format writes).
 */
#define PMIDX_CHUNK_DESC_MAGIC	0xa5
enum pmidx_chunk_type {
	PMIDX_CHUNK_FREE = 0,
	PMIDX_CHUNK_SLAB = 1,		/* objects of one size class */
	PMIDX_CHUNK_RUN = 2,		/* head of a multi-chunk object */
	PMIDX_CHUNK_RUN_TAIL = 3,	/* continuation of a RUN (either mode) */
	/* committed mode (FEAT_INCOMPAT_INTENTS): @bitmap is always current */
	PMIDX_CHUNK_SLAB_C = 4,
	PMIDX_CHUNK_RUN_C = 5,
	PMIDX_CHUNK_INTENT = 6,		/* the pool's intent records */
};

/*
 * Intent record (one per in-flight link store of a committed-mode
 * engine, 128 bytes, in the one INTENT chunk). @hdr is valid when its
 * magic and crc32c (of @word, @val and the @obj words in use) match:
 *   63..48 PMIDX_INTENT_MAGIC, 47..44 width of the link word (4 or 8),
 *   43..40 objects allocated, 39..36 objects freed, 31..0 crc.
 * Recovery: with the word at pool offset @word equal to @val, the first
 * nalloc objects are committed and the next nfree are free; otherwise
 * the other way round (alloc.c).
 */
#define PMIDX_INTENT_MAGIC	0x1e17
#define PMIDX_INTENT_OBJS	13
#define PMIDX_INTENT_SIZE	128

struct pmidx_intent {
	__le64	hdr;
	__le64	word;
	__le64	val;
	__le64	obj[PMIDX_INTENT_OBJS];
};

struct pmidx_chunk_hdr {
	__le64	desc;
	__le32	live;			/* objects in use (clean detach only) */
	__le32	crc;			/* of desc, live, bitmap (clean only) */
	__le64	reserved[2];
	__le64	bitmap[PMIDX_SLOTS_MAX / 64];	/* clean detach only */
	__u8	pad[96];
};

static inline void pmidx_format_static_checks(void)
{
	BUILD_BUG_ON(sizeof(struct pmidx_sb) != 136);
	BUILD_BUG_ON(sizeof(struct pmidx_sb) > PMIDX_SB_STRIDE);
	BUILD_BUG_ON(sizeof(struct pmidx_index_entry) != PMIDX_INDEX_ENTRY_SIZE);
	BUILD_BUG_ON(sizeof(struct pmidx_chunk_hdr) != PMIDX_CHUNK_HDR_SIZE);
	BUILD_BUG_ON(sizeof(struct pmidx_intent) != PMIDX_INTENT_SIZE);
	BUILD_BUG_ON(PMIDX_INDEX_TABLE_OFF + 64 * PMIDX_INDEX_ENTRY_SIZE >
		     PMIDX_CHUNK_HDR_OFF);
}

#endif /* _PMIDX_FORMAT_H */
