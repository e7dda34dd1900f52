/* SPDX-License-Identifier: GPL-2.0 */
/*
 * PFtree (Zhang et al., "PFtree: Optimizing Persistent Adaptive Radix Tree
 * for PM Systems on eADR Platform") on-media format. Its base is ROART.
 *
 * Everything lives in the pool (paper §3.1: inner nodes and leaf arrays
 * are persistent); only the per-leaf-array search metadata is DRAM and is
 * rebuilt at attach (§4.4). Pool offsets, little-endian.
 *
 *   index root (256 B, the core's per-index root object)
 *     magic | top | gen
 *             `-> node: an inner node (N4, N16, N48, N256) or a leaf array
 *
 * Inner node (ART, §2.2): path compression by a prefix of up to
 * PFART_PREFIX_MAX bytes stored whole in the node (a longer common prefix
 * is a chain of nodes); a node at @depth compares key[depth ..
 * depth + plen) with its prefix, dispatches on key[depth + plen], and a key
 * of exactly depth + plen bytes goes to @end. Child words are pool offsets
 * of nodes (0: none); the node type is in the child's first byte.
 *
 *   N4, N16   key[i], child[i]; slot i is in use iff child[i] != 0;
 *             unsorted (a reader sorts the <= 16 entries for a scan)
 *   N48       index[byte] = slot + 1 (0: none), child[48]; a slot is
 *             in use iff an index byte names it
 *   N256      child[byte]
 *
 * Leaf array (§3.1, Fig. 4): a 64-byte header, then records packed from
 * the start of the data area, 2-byte aligned:
 *
 *   | hdr (u16) | key (klen bytes) | value (vlen bytes, or an 8-byte blob
 *   offset when the vlen field is PFART_VBLOB) | pad to 2 |
 *
 *   hdr: bit 15 valid, bits 14..6 key length (1..255), bits 5..0 value
 *   length (0..62 inline; 63: blob). A zero hdr ends the records, and so
 *   does the end of the data area. A record, once its hdr is valid, never
 *   changes but for the valid bit, which only goes from 1 to 0.
 *
 * A leaf array has one of PFART_NR_CLASSES sizes (256 B .. 32 KiB): a
 * full one is rewritten into the next size, or split into an inner node
 * and leaf arrays when it is at the index's @leaf_max (2 KiB at most).
 * Sizes above @leaf_max (format version 2) hold keys that a split would
 * separate on their last byte, one key per new array for good: dense keys
 * such as sequential integers (README, "Dense keys").
 *
 * Commit stores (the protocols are in README.md, "Crash protocol"):
 *   - a record: its hdr, an aligned 2-byte store, after the body and the
 *     zero hdr slot behind it are durable;
 *   - a record's invalidation: the same hdr without the valid bit;
 *   - a structure change: one 8-byte child word (or @top), after every
 *     object it links is durable; or, for a slot of an N4/N16/N48 that a
 *     reader must see whole, the child word last (N4/N16) or the index
 *     byte last (N48).
 *
 * Volatile words in media: @lock of every node, and @count of a leaf
 * array beyond the records it was built with. A lock word carries the
 * generation of the open that wrote it: one of an older generation is
 * unlocked, whatever its bits say (§3.1 "Generation"); the root's @gen
 * rises at every open, above every generation recovery saw.
 */
#ifndef _PMIDX_PFART_FORMAT_H
#define _PMIDX_PFART_FORMAT_H

#include <linux/build_bug.h>
#include <linux/stddef.h>
#include <linux/types.h>

#define PFART_ROOT_MAGIC	0x3174726166504650ULL	/* "PFPfart1" */
/*
 * 2: leaf arrays above leaf_max. 3: an update's invalidation of the record
 * it replaces may be missing on media (leaf.c): a module that took every
 * valid record for live would bring a deleted key back.
 */
#define PFART_FORMAT_VERSION	3
#define PFART_FORMAT_V1		1	/* opened, and raised */
#define PFART_FORMAT_V2		2	/* opened, and raised */

/* node types: the first byte of every node */
enum pfart_type {
	PFART_N4 = 1,
	PFART_N16,
	PFART_N48,
	PFART_N256,
	PFART_LEAF,
};

#define PFART_HDR_SIZE		64
#define PFART_PREFIX_MAX	24	/* inner node prefix bytes */
#define PFART_LPREFIX_MAX	32	/* leaf array: path bytes kept */
#define PFART_N48_EMPTY		0

/*
 * The lock word (volatile, see above): generation | version | obsolete |
 * locked. Only the generation's meaning survives a restart.
 */
#define PFART_LK_LOCKED		1ULL
#define PFART_LK_OBSOLETE	2ULL
#define PFART_LK_VER_ONE	4ULL
#define PFART_LK_VER_MASK	0xfffffffcULL
#define PFART_LK_GEN_SHIFT	32

static inline u32 pfart_lk_gen(u64 w)
{
	return w >> PFART_LK_GEN_SHIFT;
}

/* ---- inner nodes ---------------------------------------------------------- */

struct pfart_inner {
	u8	type;		/* PFART_N4 .. PFART_N256 */
	u8	depth;		/* key bytes consumed before @prefix */
	u8	plen;		/* bytes of @prefix */
	u8	reserved0;
	__le32	check;		/* pfart_check_word() of the fixed fields */
	__le64	lock;		/* volatile: version lock, generation */
	__le64	owner;		/* pool offset of the index root */
	__le64	end;		/* the key of exactly depth + plen bytes */
	u8	prefix[PFART_PREFIX_MAX];
	__le64	reserved1;
};

struct pfart_n4 {
	struct pfart_inner	h;
	u8			key[4];
	u8			pad[4];
	__le64			child[4];
};

struct pfart_n16 {
	struct pfart_inner	h;
	u8			key[16];
	__le64			child[16];
};

struct pfart_n48 {
	struct pfart_inner	h;
	u8			index[256];
	__le64			child[48];
};

struct pfart_n256 {
	struct pfart_inner	h;
	__le64			child[256];
};

/* allocator object of each inner type (256-byte classes) */
#define PFART_N4_OBJ		256
#define PFART_N16_OBJ		256
#define PFART_N48_OBJ		1024
#define PFART_N256_OBJ		4096

/* ---- leaf arrays ---------------------------------------------------------- */

#define PFART_NR_CLASSES	8	/* 256 B .. 32 KiB */
#define PFART_LEAF_MIN		256
#define PFART_LEAF_MAX		2048	/* the largest @leaf_max */
#define PFART_LEAF_HUGE		(PFART_LEAF_MIN << (PFART_NR_CLASSES - 1))

struct pfart_leaf {
	u8	type;		/* PFART_LEAF */
	u8	depth;		/* key bytes every key shares with the path */
	u8	plen;		/* bytes of @prefix: min(depth, LPREFIX_MAX) */
	u8	klass;		/* size: PFART_LEAF_MIN << klass */
	__le32	check;		/* pfart_check_word() of the fixed fields */
	__le64	lock;		/* volatile: version lock, generation */
	__le64	owner;		/* pool offset of the index root */
	__le16	count;		/* records written when it was built */
	u8	reserved0[6];
	u8	prefix[PFART_LPREFIX_MAX];	/* key[0 .. plen) of every key */
	u8	data[];
};

#define PFART_R_VALID		0x8000U
#define PFART_R_KLEN_SHIFT	6
#define PFART_R_KLEN_MASK	0x1ffU
#define PFART_R_VLEN_MASK	0x3fU
#define PFART_VBLOB		0x3fU		/* vlen field: blob offset */
#define PFART_VINLINE_MAX	62

static inline u32 pfart_r_klen(u16 h)
{
	return (h >> PFART_R_KLEN_SHIFT) & PFART_R_KLEN_MASK;
}

static inline u32 pfart_r_vfield(u16 h)
{
	return h & PFART_R_VLEN_MASK;
}

static inline u16 pfart_r_make(u32 klen, u32 vfield)
{
	return PFART_R_VALID | klen << PFART_R_KLEN_SHIFT | vfield;
}

/* bytes of a record, hdr and padding included */
static inline u32 pfart_r_size(u32 klen, u32 vfield)
{
	u32 vbytes = vfield == PFART_VBLOB ? 8 : vfield;

	return (2 + klen + vbytes + 1) & ~1U;
}

/* ---- index root ----------------------------------------------------------- */

struct pfart_root {
	__le64	magic;		/* PFART_ROOT_MAGIC, stored last at first open */
	__le32	version;
	__le32	leaf_max;	/* largest leaf array, bytes: fixed at first open */
	__le64	top;		/* top node, 0: empty index */
	__le64	gen;		/* generation of the current (or last) open */
	__le64	reserved[28];
};

/*
 * Check word of a node header: what never changes after the node is built
 * (type, depth, plen, class, owner, prefix; @count of a leaf array).
 * Catches a child word naming something that is not a node of this index.
 */
static inline u32 pfart_check_word(const void *hdr, u64 owner)
{
	const u8 *b = hdr;
	u64 x = owner * 0x9e3779b97f4a7c15ULL ^
		((u64)b[0] | (u64)b[1] << 8 | (u64)b[2] << 16 | (u64)b[3] << 24);
	unsigned int i;

	/* leaf: count and the prefix (bytes 24..64); inner: the prefix */
	for (i = 24; i < PFART_HDR_SIZE; i++) {
		if (b[0] != PFART_LEAF && i < 32)
			continue;		/* @end changes */
		x = (x ^ b[i]) * 0x100000001b3ULL;
	}
	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 29;
	return (u32)(x ^ (x >> 32));
}

static inline void pfart_format_static_checks(void)
{
	BUILD_BUG_ON(sizeof(struct pfart_inner) != PFART_HDR_SIZE);
	BUILD_BUG_ON(sizeof(struct pfart_leaf) != PFART_HDR_SIZE);
	BUILD_BUG_ON(offsetof(struct pfart_inner, lock) != 8);
	BUILD_BUG_ON(offsetof(struct pfart_leaf, lock) != 8);
	BUILD_BUG_ON(offsetof(struct pfart_inner, prefix) != 32);
	BUILD_BUG_ON(offsetof(struct pfart_leaf, count) != 24);
	BUILD_BUG_ON(offsetof(struct pfart_leaf, prefix) != 32);
	BUILD_BUG_ON(sizeof(struct pfart_n4) > PFART_N4_OBJ);
	BUILD_BUG_ON(sizeof(struct pfart_n16) > PFART_N16_OBJ);
	BUILD_BUG_ON(sizeof(struct pfart_n48) > PFART_N48_OBJ);
	BUILD_BUG_ON(sizeof(struct pfart_n256) > PFART_N256_OBJ);
	BUILD_BUG_ON(sizeof(struct pfart_root) != 256);
	BUILD_BUG_ON(PFART_LEAF_HUGE != 32768);
	/* record offsets, tails and live bytes are u16 */
	BUILD_BUG_ON(PFART_LEAF_HUGE - PFART_HDR_SIZE > 0xffff);
	/* the largest record fits the second class: 2 + 255 + 62 + 2 */
	BUILD_BUG_ON(2 + 255 + PFART_VINLINE_MAX + 2 >
		     2 * PFART_LEAF_MIN - PFART_HDR_SIZE);
}

#endif /* _PMIDX_PFART_FORMAT_H */
