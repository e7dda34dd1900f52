/* SPDX-License-Identifier: GPL-2.0 */
/*
 * LodgeTree on-media format (paper §III-A, §III-B, §III-D). Little-endian
 * pool offsets; 8-byte keys and values are stored as their raw bytes.
 *
 * Root (the index's 256-byte root object, zero at creation): @magic is
 * stored last, by one 8-byte store, once the head leaf and the log
 * directory it names are durable. A zero magic is an empty index.
 * @vhwm: no log version above it was ever handed out (raised in steps of
 * LODGE_VER_STEP before use), so after a crash versions restart above
 * every version that may still lie in a freed log object's bytes.
 *
 * Leaf (one allocator object of @leaf_size bytes, 256, 512 or 1024; the
 * paper's 512 by default): a 64-byte header, then unsorted 16-byte slots
 * (key word, value word).
 *
 *   bitmap: bits 0..slots-1 live slots, bit 63 the use bit: next[use] is
 *           the current right neighbour. One 8-byte store of this word
 *           commits a merge (new slots on, replaced slots off), a direct
 *           delete (a slot off), a split (moved slots off, use flipped to
 *           the new leaf written into next[!use] before) and the unlink
 *           of an empty right neighbour (use flipped to its next).
 *   ts:     the newest log sequence applied to this leaf: every logged
 *           write of a key in the leaf's range with a sequence <= ts is
 *           in the leaf (see lodge.h, "Sequences"). Stored after bitmap
 *           in the same line, so a line written back as a prefix of its
 *           stores shows the new bitmap with the old ts (entries are
 *           replayed again: harmless) but never the new ts with the old
 *           bitmap.
 *   kind:   bit i: slot i's key word is a blob offset (key not 8 bytes)
 *   vind:   bit i: slot i's value word is a blob offset (value not 8 bytes)
 *   kind and vind bits of a slot are written while the slot is free and
 *   persisted before the bitmap store that makes it live.
 *   fence, flen: the leaf's low fence (the split key that made it), fixed
 *           for its life: inline when flen <= 8, else a blob the leaf
 *           owns; flen 0 for the head. Recovery needs the exact ranges
 *           the leaves' ts were kept for, not the keys they happen to hold.
 *
 * Log (§III-D): a directory object (64-byte header, then slots holding
 * the pool offset of a live log, 0 when empty) and fixed-size logs. A
 * log has a 64-byte header (magic, version) and records appended one
 * after the other by a single writer (its partition's owner). A record:
 *
 *   0        8          16     20   21    24     28     32
 *   | seqfl  | version  | vlen |klen| rsvd | crc  | rsvd | key | value |
 *
 *   seqfl:   bits 0..47 sequence, 48..55 flags (LODGE_R_*), rest 0
 *   version: the log's version: a record left over from an earlier log
 *            in the same bytes has another one
 *   crc:     crc32c over the record with crc 0; a torn or stale record
 *            fails it and ends the log
 * The record carries the key and value bytes themselves: log entries
 * name no other object, so a log can be freed the moment its last
 * buffered record is flushed (lodge.h, "Lifetime").
 */
#ifndef _PMIDX_LODGE_FORMAT_H
#define _PMIDX_LODGE_FORMAT_H

#include <linux/build_bug.h>
#include <linux/stddef.h>
#include <linux/types.h>

#define LODGE_ROOT_MAGIC	0x544f4f5245474f4cULL	/* "LOGEROOT" */
#define LODGE_FORMAT_VERSION	1
#define LODGE_DIR_MAGIC		0x5249444745474f4cULL	/* "LOGEDIR" */
#define LODGE_LOG_MAGIC		0x474f4c4745474f4cULL	/* "LOGELOG" */

struct lodge_root {
	__le64	magic;
	__le32	version;
	__le32	leaf_size;	/* fixed when the index is initialised */
	__le64	head;		/* first leaf; never changes */
	__le64	dir;		/* log directory */
	__le64	vhwm;		/* log versions handed out are <= vhwm */
	__le64	reserved[27];
};

#define LODGE_LEAF_HDR		64
#define LODGE_USE_BIT		(1ULL << 63)
#define LODGE_SLOTS_MAX		60	/* a 1024-byte leaf */
#define LODGE_TS_MASK		((1ULL << 48) - 1)

struct lodge_pslot {
	__le64	key;
	__le64	val;
};

struct lodge_leaf {
	__le64			bitmap;
	__le64			ts;
	__le64			next[2];
	__le64			kind;
	__le64			vind;
	__le64			fence;
	__le64			flen;
	struct lodge_pslot	slot[];
};

struct lodge_dir {
	__le64	magic;
	__le32	nslots;
	__le32	reserved0;
	__le64	reserved[6];
	__le64	slot[];
};

#define LODGE_DIR_SIZE		(64U << 10)
#define LODGE_DIR_SLOTS		((LODGE_DIR_SIZE - 64) / 8)

struct lodge_log {
	__le64	magic;
	__le64	version;
	__le32	size;		/* bytes of the object */
	__le32	part;		/* partition (CPU) that wrote it */
	__le64	reserved[5];
	u8	rec[];
};

#define LODGE_LOG_HDR		64
#define LODGE_R_TOMB		0x1	/* a delete */
#define LODGE_R_FLAGS_SHIFT	48

struct lodge_rec {
	__le64	seqfl;
	__le64	version;
	__le32	vlen;
	u8	klen;
	u8	reserved[3];
	__le32	crc;
	__le32	reserved2;
	u8	data[];
};

#define LODGE_REC_ALIGN		16

static inline u32 lodge_rec_size(u32 klen, u32 vlen)
{
	return (sizeof(struct lodge_rec) + klen + vlen + LODGE_REC_ALIGN - 1) &
	       ~(LODGE_REC_ALIGN - 1);
}

static inline void lodge_format_checks(void)
{
	BUILD_BUG_ON(sizeof(struct lodge_root) != 256);
	BUILD_BUG_ON(sizeof(struct lodge_leaf) != LODGE_LEAF_HDR);
	BUILD_BUG_ON(sizeof(struct lodge_pslot) != 16);
	BUILD_BUG_ON(sizeof(struct lodge_dir) != 64);
	BUILD_BUG_ON(sizeof(struct lodge_log) != LODGE_LOG_HDR);
	BUILD_BUG_ON(sizeof(struct lodge_rec) != 32);
	BUILD_BUG_ON((1024 - LODGE_LEAF_HDR) / 16 != LODGE_SLOTS_MAX);
	BUILD_BUG_ON(offsetof(struct lodge_leaf, ts) != 8);
}

#endif /* _PMIDX_LODGE_FORMAT_H */
