/* SPDX-License-Identifier: GPL-2.0 */
/*
 * uTree (Chen et al., PVLDB 2020) on-media format.
 *
 * Only the list layer lives on pmem; the B+-tree above it is DRAM and is
 * rebuilt (or reloaded from a saved image) at open. Everything is
 * addressed by pool offsets and stored little-endian.
 *
 *   index root (256 B, the core's per-index root object)
 *     magic | head | chunks | trackers | image
 *       |      |       |         |        `-> saved tree image (clean close)
 *       |      |       |         `-> tracker table (64 node offsets)
 *       |      |       `-> newest node chunk -> older chunk -> ... -> 0
 *       |      `-> first list node -> ... (ascending keys) -> 0
 *
 * List node (32 bytes, 32-byte aligned, so one node never straddles a
 * cache line and the node plus its next word persist with one flush):
 *
 *   next  D:1 | Version:15 | pointer:48   (the paper's Figure 7)
 *   key   key bytes (klen <= 8, zero padded) or a blob offset
 *   val   value bytes (vlen <= 8, zero padded) or a blob offset
 *   meta  klen:8 | vlen:17 (inline values only) | KBLOB | VBLOB
 *   check hash of (node offset, key word, meta): rejects stray pointers
 *
 * The key word and meta never change while a node is allocated; the
 * value word changes in place only under an odd Version (8-byte inline
 * value of the same length, or a blob-to-blob swap), and the next word
 * by CAS. A set Deleted bit freezes the next word: nothing is linked
 * after a node being removed (Harris' marking, the paper's Put-Delete
 * rule). A reachable node is live whatever its D bit or Version says:
 * a removal commits only when the predecessor's next word changes, and
 * an odd Version only fences readers; every open clears both (an odd
 * Version may outlive a clean detach: list.c, ut_ver_release()).
 *
 * Node chunks (64 KiB allocator objects) hold a 64-byte header and 2046
 * nodes. They form a persistent singly linked list from the root, newest
 * first; a chunk is linked before any of its nodes is handed out, and
 * one without live nodes is unlinked and freed at a clean close.
 */
#ifndef _PMIDX_UTREE_FORMAT_H
#define _PMIDX_UTREE_FORMAT_H

#include <linux/build_bug.h>
#include <linux/types.h>

#define UT_ROOT_MAGIC		0x3176656572745475ULL	/* "uTtree\x76\x31" */
#define UT_CHUNK_MAGIC		0x6b6e686365657274ULL
#define UT_IMAGE_MAGIC		0x6567616d49657254ULL

/* ---- next word ------------------------------------------------------- */

#define UT_NEXT_DEL		(1ULL << 63)
#define UT_VER_SHIFT		48
#define UT_VER_MASK		(0x7fffULL << UT_VER_SHIFT)
#define UT_VER_ONE		(1ULL << UT_VER_SHIFT)
#define UT_PTR_MASK		((1ULL << UT_VER_SHIFT) - 1)

static inline u64 ut_w_ptr(u64 w)
{
	return w & UT_PTR_MASK;
}

static inline bool ut_w_del(u64 w)
{
	return w & UT_NEXT_DEL;
}

static inline bool ut_w_odd(u64 w)
{
	return w & UT_VER_ONE;
}

/* Version + 1, wrapping inside its 15 bits. */
static inline u64 ut_w_bump(u64 w)
{
	return (w & ~UT_VER_MASK) | ((w + UT_VER_ONE) & UT_VER_MASK);
}

/* Same Deleted bit and Version, another pointer. */
static inline u64 ut_w_repoint(u64 w, u64 ptr)
{
	return (w & ~UT_PTR_MASK) | ptr;
}

/* ---- list node ------------------------------------------------------- */

#define UT_INLINE_MAX		8
#define UT_M_KLEN_MASK		0xffU
#define UT_M_VLEN_SHIFT		8
#define UT_M_VLEN_MASK		0x1ffffU
#define UT_M_KBLOB		(1U << 25)
#define UT_M_VBLOB		(1U << 26)
#define UT_M_RESERVED		(~((1U << 27) - 1))

struct ut_lnode {
	__le64	next;
	__le64	key;
	__le64	val;
	__le32	meta;
	__le32	check;
};

#define UT_NODE_SIZE		32
#define UT_CHUNK_SHIFT		16
#define UT_CHUNK_SIZE		(1U << UT_CHUNK_SHIFT)	/* 64 KiB */
#define UT_CHUNK_HDR		64
#define UT_CHUNK_NODES		((UT_CHUNK_SIZE - UT_CHUNK_HDR) / UT_NODE_SIZE)

static inline u32 ut_meta_klen(u32 meta)
{
	return meta & UT_M_KLEN_MASK;
}

static inline u32 ut_meta_vlen(u32 meta)
{
	return (meta >> UT_M_VLEN_SHIFT) & UT_M_VLEN_MASK;
}

static inline u32 ut_meta_make(u32 klen, u32 vlen, bool kblob, bool vblob)
{
	return klen | (vblob ? 0 : vlen << UT_M_VLEN_SHIFT) |
	       (kblob ? UT_M_KBLOB : 0) | (vblob ? UT_M_VBLOB : 0);
}

/* Check word of a node at pool offset @off: a 64-bit mix folded to 32. */
static inline u32 ut_node_check(u64 off, u64 key, u32 meta)
{
	u64 x = off ^ (key * 0x9e3779b97f4a7c15ULL) ^
		((u64)meta << 32 | 0x75747265U);

	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 29;
	return (u32)(x ^ (x >> 32));
}

/* ---- node chunk header ----------------------------------------------- */

struct ut_chunk_hdr {
	__le64	magic;
	__le64	prev;		/* next older chunk, 0 = oldest */
	__le64	owner;		/* pool offset of the index root */
	__le32	id;		/* dense number inside the index */
	/*
	 * crc32c of magic, owner, id (not prev: it changes when an emptied
	 * chunk behind is unlinked, by one atomic store)
	 */
	__le32	crc;
	__le64	reserved[4];
};

/* ---- index root ------------------------------------------------------ */

struct ut_root {
	__le64	magic;		/* UT_ROOT_MAGIC, 0 while never used */
	__le64	head;		/* next word of the list head */
	__le64	chunks;		/* newest node chunk */
	__le64	trackers;	/* struct ut_trackers */
	__le64	image;		/* struct ut_image_hdr of a clean close, or 0 */
	__le64	reserved[27];
};

/*
 * Trackers: list nodes recorded while inserting, so recovery can split
 * the list walk between threads (paper §3.3). Slots 0..UT_TRACK_FIXED-1
 * are rewritten evenly over the key space at every open and clean close;
 * the others take a new node every UT_TRACKER_INTERVAL inserts on a CPU,
 * round robin. A slot may go stale (its node deleted): recovery checks
 * every tracker against the walk and ignores the stale ones.
 */
#define UT_TRACKERS		64
#define UT_TRACK_FIXED		32

struct ut_trackers {
	__le64	node[UT_TRACKERS];
};

/*
 * Saved tree image (instant restart after a clean close): the tree-leaf
 * entries in key order. @crc covers the entries, @hdr_crc the header.
 */
struct ut_image_ent {
	__le64	pfx;		/* first 8 key bytes, big-endian number */
	__le64	ent;		/* node offset | klen << 48 */
};

struct ut_image_hdr {
	__le64	magic;
	__le64	count;
	__le64	blob_bytes;	/* informational: an open counts its own */
	__le64	owner;
	__le32	crc;
	__le32	hdr_crc;	/* crc32c of the header up to here */
	__le64	reserved[3];
	struct ut_image_ent e[];
};

static inline void ut_format_static_checks(void)
{
	BUILD_BUG_ON(sizeof(struct ut_lnode) != UT_NODE_SIZE);
	BUILD_BUG_ON(sizeof(struct ut_chunk_hdr) != UT_CHUNK_HDR);
	BUILD_BUG_ON(sizeof(struct ut_root) != 256);
	BUILD_BUG_ON(sizeof(struct ut_trackers) != 512);
	BUILD_BUG_ON(sizeof(struct ut_image_hdr) != 64);
	BUILD_BUG_ON(sizeof(struct ut_image_ent) != 16);
	BUILD_BUG_ON(UT_CHUNK_NODES != 2046);
}

#endif /* _PMIDX_UTREE_FORMAT_H */
