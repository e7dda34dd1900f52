/* SPDX-License-Identifier: GPL-2.0 */
/*
 * CCL-BTree on-media format (Li et al., EuroSys'24, Fig. 7b). Little-endian
 * pool offsets; key and value words are stored as raw bytes.
 *
 * Root (the index's 256-byte root object, zero at creation):
 *   magic is written last, by one 8-byte store, when the head leaf and the
 *   log directory it names are durable. A zero magic is an empty index.
 *
 * Leaf (one 256-byte allocator object = one XPLine):
 *
 *   0      8      16             30    32                              256
 *   +------+------+--------------+-----+-------------------------------+
 *   | meta |  ts  | fp[14]       |vind | slot[14]: key word, val word  |
 *   +------+------+--------------+-----+-------------------------------+
 *
 *   meta: bits 0..13 bitmap of live slots, 14..23 commit sequence,
 *         24..63 pool offset of the next leaf >> 8 (0 = last). One atomic
 *         8-byte word: a batch of inserts, a split (link a new leaf) and a
 *         merge (unlink the right sibling) each commit with a single store
 *         of it.
 *   ts:   bits 0..47 timestamp of the newest write applied to the leaf
 *         (see ccl.c), 48..57 the commit sequence of the meta word it
 *         goes with, 58..63 zero.
 *
 * A commit stores meta (sequence + 1), then ts (with the same sequence),
 * in line 0, and persists the line. Under ADR the line may reach media
 * holding only a prefix of those stores: the new meta with the old ts.
 * The sequences then differ, and recovery knows the commit was cut short
 * after its meta word: the leaf holds the newest version of every key in
 * it (the commit ran under the node lock, with every unflushed KV of the
 * node in the batch), so no log entry may override it (recovery.c). The
 * other order (new ts, old meta) cannot reach media: ts is stored after
 * meta in the same line. Without the sequence, the old ts would let
 * stale log entries override keys the commit wrote unlogged (the trigger
 * put, keys a merge moved).
 *   fp:   per slot, bits 0..6 a hash of the key, bit 7 set when the key
 *         word is an indirection (the key is not exactly 8 bytes long).
 *   vind: bit i set when slot i's value word is an indirection.
 *
 * Key and value words: a key or value of exactly 8 bytes is stored inline
 * (its bytes, memcmp order preserved); anything else (keys of 1..7 or
 * 9..255 bytes, values of 0..7 or 9..65536 bytes) lives in the pool's
 * blob heap and the word holds the blob's offset. 8-byte slots have no
 * room for lengths or flags, so the indirection flags live in the leaf
 * header: the key flag in the fingerprint byte's top bit (which makes it
 * part of the fingerprint: an 8-byte search key only matches inline keys)
 * and the value flags in the 16-bit vind word that pads the header to 32
 * bytes. The encoding is canonical (inline if and only if 8 bytes), so
 * equal keys have equal flags.
 *
 * Log entries (kmod/core/wal.h, 32 bytes): key word, value word, and the
 * meta word's timestamp and flags CCL_LOG_* (same bits as the DRAM buffer
 * slot flags).
 */
#ifndef _PMIDX_CCL_FORMAT_H
#define _PMIDX_CCL_FORMAT_H

#include <linux/build_bug.h>
#include <linux/types.h>

#define CCL_ROOT_MAGIC		0x544f4f524c434350ULL	/* "PCCLROOT" */
#define CCL_FORMAT_VERSION	2	/* 2: commit sequence in meta and ts */

struct ccl_root {
	__le64	magic;
	__le32	version;
	__le32	flags;
	__le64	head;		/* first leaf; never changes */
	__le64	wal_dir;	/* log directory (kmod/core/wal.h) */
	__le64	reserved[28];
};

#define CCL_LEAF_SLOTS		14
#define CCL_LEAF_HALF		(CCL_LEAF_SLOTS / 2)
#define CCL_BITMAP_MASK		((1U << CCL_LEAF_SLOTS) - 1)
#define CCL_SEQ_SHIFT		14
#define CCL_SEQ_MASK		0x3ffU
#define CCL_NEXT_SHIFT		24
#define CCL_TS_SEQ_SHIFT	48
#define CCL_TS_MASK		((1ULL << CCL_TS_SEQ_SHIFT) - 1)
#define CCL_TS_RSVD		(~0ULL << (CCL_TS_SEQ_SHIFT + 10))
#define CCL_FP_IND		0x80

struct ccl_pslot {
	__le64	key;
	__le64	val;
};

struct ccl_leaf {
	__le64		meta;
	__le64		ts;
	u8		fp[CCL_LEAF_SLOTS];
	__le16		vind;
	struct ccl_pslot slot[CCL_LEAF_SLOTS];
};

/* Slot, buffer and log flags. */
#define CCL_F_KIND		0x1	/* key word is an indirection */
#define CCL_F_VIND		0x2	/* value word is an indirection */
#define CCL_F_TOMB		0x4	/* tombstone (delete) */
#define CCL_F_MASK		0x7

static inline u64 ccl_meta_next(u64 meta)
{
	return meta >> CCL_NEXT_SHIFT << 8;
}

static inline u32 ccl_meta_bitmap(u64 meta)
{
	return meta & CCL_BITMAP_MASK;
}

static inline u32 ccl_meta_seq(u64 meta)
{
	return (meta >> CCL_SEQ_SHIFT) & CCL_SEQ_MASK;
}

/* @next: a 256-byte aligned pool offset below 2^48 */
static inline u64 ccl_meta(u32 bitmap, u64 next, u32 seq)
{
	return (u64)bitmap | (u64)(seq & CCL_SEQ_MASK) << CCL_SEQ_SHIFT |
	       next >> 8 << CCL_NEXT_SHIFT;
}

static inline u64 ccl_ts_word(u64 ts, u32 seq)
{
	return ts | (u64)(seq & CCL_SEQ_MASK) << CCL_TS_SEQ_SHIFT;
}

static inline u64 ccl_ts_val(u64 w)
{
	return w & CCL_TS_MASK;
}

static inline u32 ccl_ts_seq(u64 w)
{
	return (w >> CCL_TS_SEQ_SHIFT) & CCL_SEQ_MASK;
}

/* The 64-byte line of the leaf that holds slot @s (line 0 holds the header). */
static inline unsigned int ccl_slot_line(unsigned int s)
{
	return (32 + 16 * s) / 64;
}

static inline void ccl_format_checks(void)
{
	BUILD_BUG_ON(sizeof(struct ccl_root) != 256);
	BUILD_BUG_ON(sizeof(struct ccl_leaf) != 256);
	BUILD_BUG_ON(offsetof(struct ccl_leaf, slot) != 32);
}

#endif /* _PMIDX_CCL_FORMAT_H */
