/* SPDX-License-Identifier: GPL-2.0 */
/*
 * B^3-tree (Cha et al., ACM TOS 16(3), 2020) on-media format.
 *
 * Every page, internal and leaf, lives in the pool (paper §3.1): nothing
 * is rebuilt at attach. Everything is addressed by pool offsets and
 * stored little-endian.
 *
 *   index root (256 B, the core's per-index root object)
 *     magic | top | saved counters
 *              `-> root page (level h) -> BST -> pages of level h-1 ...
 *                                               -> leaf pages (level 0)
 *   each level is also a singly linked list through @sibling, in key
 *   order (B-link style), which is what makes split and merge logless.
 *
 * Page (4 KiB allocator object):
 *
 *   header   64 B: magic, level, low key length, root child word,
 *            sibling, owner, crc
 *   low key 256 B: the smallest key the page may hold (its fence; empty
 *            for the leftmost page of a level = minus infinity)
 *   nodes  118 x 32 B BST nodes, slots filled in order (append only
 *            between two copy-on-writes of the page)
 *
 * A child word is 0 (nil), 1..B3_SLOTS (the BST node in slot word - 1 of
 * the same page) or a pool offset (a page: offsets are far above
 * B3_SLOTS, paper §3.2.2). Leaf nodes keep their two in-page children as
 * 32-bit words (slot + 1 or 0); the page root word and the children of
 * internal nodes are 64-bit.
 *
 * Invariants a reader relies on (every single store keeps them):
 *  - the page of a child word has a low key <= the smallest key that can
 *    reach the word, and the page's sibling chain covers the rest: a
 *    reader moves right while key >= low(sibling) (paper Algorithm 2);
 *  - a node, once linked, never changes except its 8-byte value word
 *    (in-place update) and its child words; a slot is never reused while
 *    the page is live, so a lock-free reader never meets a recycled node;
 *  - header fields other than @root, @sibling and @lock never change.
 *
 * Leaf keys and values of up to 8 bytes are inline in their node words;
 * longer ones are blobs (core/blob.h) named by the word (paper §3.4.2).
 * Separator keys of internal nodes are inline or blobs owned by the node.
 * Low keys are inline in the page (no ownership to track).
 *
 * Nothing volatile lives in a page: write locks and slot counts are DRAM
 * (b3.h), so every store to a page is flushed and fenced before the
 * operation returns.
 */
#ifndef _PMIDX_B3_FORMAT_H
#define _PMIDX_B3_FORMAT_H

#include <linux/build_bug.h>
#include <linux/types.h>

#define B3_ROOT_MAGIC		0x3165657274334233ULL	/* "3B3tree1" */
#define B3_PAGE_MAGIC		0x65676150U		/* "Page" */

#define B3_PAGE_SIZE		4096
#define B3_HDR_SIZE		64
#define B3_LOW_MAX		256
#define B3_NODE_SIZE		32
#define B3_NODES_OFF		(B3_HDR_SIZE + B3_LOW_MAX)
#define B3_SLOTS		((B3_PAGE_SIZE - B3_NODES_OFF) / B3_NODE_SIZE)
#define B3_MAX_LEVEL		32

#define B3_INLINE_MAX		8

/* ---- nodes ------------------------------------------------------------ */

#define B3_M_KLEN_MASK		0xffU
#define B3_M_VLEN_SHIFT		8
#define B3_M_VLEN_MASK		0x1ffffU
#define B3_M_KBLOB		(1U << 25)
#define B3_M_VBLOB		(1U << 26)
#define B3_M_RESERVED		(~((1U << 27) - 1))

/* Leaf BST node: a key, its value, two in-page children. */
struct b3_lnode {
	__le64	key;		/* key bytes (klen <= 8) or a blob offset */
	__le64	val;		/* value bytes (vlen <= 8) or a blob offset */
	__le32	left;		/* slot + 1, 0 = nil */
	__le32	right;
	__le32	meta;		/* klen | vlen (inline only) | KBLOB | VBLOB */
	__le32	check;		/* b3_node_check(key, meta) */
};

/* Internal BST node: a separator, always two children (paper §3.1). */
struct b3_inode {
	__le64	key;		/* separator: bytes or a blob offset */
	__le64	left;		/* child word: keys < separator */
	__le64	right;		/* child word: keys >= separator */
	__le32	meta;		/* klen | KBLOB */
	__le32	check;
};

static inline u32 b3_meta_klen(u32 meta)
{
	return meta & B3_M_KLEN_MASK;
}

static inline u32 b3_meta_vlen(u32 meta)
{
	return (meta >> B3_M_VLEN_SHIFT) & B3_M_VLEN_MASK;
}

static inline u32 b3_meta_make(u32 klen, u32 vlen, bool kblob, bool vblob)
{
	return klen | (vblob ? 0 : vlen << B3_M_VLEN_SHIFT) |
	       (kblob ? B3_M_KBLOB : 0) | (vblob ? B3_M_VBLOB : 0);
}

/* Check word of a node: rejects garbage slots and stray child words. */
static inline u32 b3_node_check(u64 key, u32 meta)
{
	u64 x = (key * 0x9e3779b97f4a7c15ULL) ^ ((u64)meta << 32 | 0x62337472U);

	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 29;
	return (u32)(x ^ (x >> 32));
}

/* ---- child words -------------------------------------------------------- */

static inline bool b3_w_is_slot(u64 w)
{
	return w && w <= B3_SLOTS;
}

static inline bool b3_w_is_page(u64 w)
{
	return w > B3_SLOTS;
}

/* ---- page --------------------------------------------------------------- */

struct b3_page {
	__le32	magic;		/* B3_PAGE_MAGIC */
	u8	level;		/* 0: leaf page */
	u8	lowlen;		/* bytes of @low; 0: minus infinity */
	__le16	reserved0;
	__le64	root;		/* child word of the BST root */
	__le64	sibling;	/* right sibling page, 0: last of its level */
	__le64	reserved2;
	__le64	owner;		/* pool offset of the index root */
	__le32	crc;		/* crc32c of magic..lowlen, owner, low */
	__le32	reserved1;
	__le64	reserved[2];
	u8	low[B3_LOW_MAX];
	union {
		struct b3_lnode	l[B3_SLOTS];
		struct b3_inode	i[B3_SLOTS];
	};
};

/* ---- index root ------------------------------------------------------- */

struct b3_root {
	__le64	magic;		/* B3_ROOT_MAGIC, 0 while never used */
	__le64	top;		/* root page, 0: empty index */
	__le64	reserved0;
	__le64	saved;		/* 1: the counters below are from a clean close */
	__le64	keys;
	__le64	pages;
	__le64	blob_bytes;
	__le64	reserved[25];
};

static inline void b3_format_static_checks(void)
{
	BUILD_BUG_ON(sizeof(struct b3_lnode) != B3_NODE_SIZE);
	BUILD_BUG_ON(sizeof(struct b3_inode) != B3_NODE_SIZE);
	BUILD_BUG_ON(offsetof(struct b3_page, low) != B3_HDR_SIZE);
	BUILD_BUG_ON(offsetof(struct b3_page, l) != B3_NODES_OFF);
	BUILD_BUG_ON(sizeof(struct b3_page) != B3_PAGE_SIZE);
	BUILD_BUG_ON(sizeof(struct b3_root) != 256);
	BUILD_BUG_ON(B3_SLOTS != 118);
	BUILD_BUG_ON(B3_SLOTS > 0xff);
}

#endif /* _PMIDX_B3_FORMAT_H */
