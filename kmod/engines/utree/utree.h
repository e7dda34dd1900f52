/* SPDX-License-Identifier: GPL-2.0 */
/*
 * uTree engine: DRAM state and the interfaces between its files.
 *
 *   format.h    on-media layout (list nodes, chunks, root, trackers, image)
 *   list.c      the PM list layer: node init, embedded-version reads,
 *               marking, linking CAS
 *   tree.c      the DRAM B+-tree (inner nodes + tree-leaf arrays) with
 *               optimistic version locks, bulk loading and iteration
 *   alloc.c     chunk-based list-node allocation with per-CPU caches and
 *               epoch-deferred reuse
 *   recovery.c  open: saved-image reload or (parallel, tracker split)
 *               list walk; close: image save
 *   check.c     the structural checker and the writer gate it uses
 *   utree.c     get/put/del/scan/stats and the ops table
 *
 * Concurrency (paper §3.2, "coordinated concurrency control"): every
 * operation runs inside a pool epoch section (preemption off). Writers
 * read the tree optimistically, do their pmem work (node persist, CAS on
 * the predecessor's next word, persist) without any tree lock, and take
 * one tree-leaf lock only to publish the result in DRAM. Any
 * disagreement between the layers sends the writer back to the tree,
 * never along the list, so a writer only ever acts on persisted links.
 *
 * Lock order: checker gate (mutex) -> per-CPU node cache -> alloc_lock
 * -> pool allocator locks. Tree node version locks nest parent before
 * child, and the tree meta lock (root pointer) before the root; no pmem
 * store and no allocator call happen under a tree lock.
 */
#ifndef _PMIDX_UTREE_H
#define _PMIDX_UTREE_H

#include <linux/atomic.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include "core/engine.h"
#include "core/pool.h"
#include "format.h"

/* ---- tunables -------------------------------------------------------- */

#define UT_LEAF_CAP		64	/* entries per tree leaf (paper: 64) */
#define UT_INNER_CAP		64	/* separators per inner node */
#define UT_SCAN_AHEAD		16	/* list nodes a scan prefetches ahead */
#define UT_LEAF_FILL		48	/* bulk loads leave room for inserts */
#define UT_INNER_FILL		48
#define UT_TRACKER_INTERVAL	4096	/* inserts per CPU between trackers */
#define UT_MAG_SIZE		64	/* per-CPU free node cache */
#define UT_MAG_BATCH		32	/* nodes moved per refill / drain */
#define UT_BACKOFF_TRIES	64	/* retries before leaving the section */
#define UT_STUCK_TRIES		1024	/* retries between two stuck checks */
#define UT_STUCK_ROUNDS		2	/* unchanged stuck checks: corrupt */
#define UT_STASH_MAX		4	/* spare tree blocks for splits */
#define UT_DIR_L2		1024	/* chunk directory: 4M chunks of 64 KiB */
#define UT_DIR_L1		4096
#define UT_DIR_MAX		(UT_DIR_L1 * UT_DIR_L2)

/* ---- DRAM B+-tree ---------------------------------------------------- */

/* A search key: bytes plus their first 8 bytes as a big-endian number. */
struct ut_skey {
	const u8	*key;
	u32		len;
	u64		pfx;
};

/*
 * Tree entries pack the list node's pool offset with the key length;
 * with the 8-byte prefix next to it, keys of up to 8 bytes compare
 * without touching pmem.
 */
#define UT_ENT_LEN_SHIFT	48

static inline u64 ut_ent_make(u64 node, u32 klen)
{
	return node | (u64)klen << UT_ENT_LEN_SHIFT;
}

static inline u64 ut_ent_node(u64 ent)
{
	return ent & UT_PTR_MASK;
}

static inline u32 ut_ent_len(u64 ent)
{
	return (ent >> UT_ENT_LEN_SHIFT) & 0xff;
}

/*
 * Version lock (OLC): bit 0 set while a writer holds the node; every
 * unlock advances the counter, so an optimistic reader that sees the
 * same even version before and after its reads saw no modification.
 */
struct ut_tnode {
	u64	version;
	u16	count;
	u8	leaf;
	u8	over_leaves;	/* an inner node whose children are leaves */
};

/*
 * A word an optimistic reader follows before its version check (struct
 * ut_leaf): stored with release, so what it names is complete first,
 * and loaded with acquire (the pair ThreadSanitizer can see).
 */
#define ut_store_link(p, v)	smp_store_release(p, v)
/* pairs with ut_store_link() */
#define ut_load_link(p)		smp_load_acquire(p)

/* An immutable separator key of an inner node (freed with the tree). */
struct ut_ikey {
	u64	pfx;
	u32	len;
	u8	bytes[];
};

/*
 * Tree leaf ("array layer"): sorted entries pointing at list nodes.
 * @next is written under this leaf's lock, @prev under the lock of the
 * leaf to its left (the only one that splits into it). Leaves are never
 * freed while the index is open, so a leaf pointer read in any section
 * stays dereferenceable.
 *
 * An optimistic reader follows what it reads (@ent to a list node and its
 * key blob, @next/@prev to a leaf, an inner node's key and child) before
 * its version check can tell it the read was torn, so every such word is
 * stored with release and loaded with acquire, moved entries included:
 * what it names is complete before the word can be seen. Plain moves on
 * x86; an address dependency alone would do in the kernel, but not in
 * the memory model ThreadSanitizer checks (it ignores fences).
 *
 * @left and @left_seq, written under this leaf's lock, read under its
 * version: when ut_tree.refill was @left_seq, @left was the nearest
 * non-empty leaf to the left and every leaf between was empty. Only a
 * split or an insert into an empty leaf can make a leaf between
 * non-empty, and both bump refill, so while it stays @left_seq the
 * leaves between are still empty (@left itself may have emptied since:
 * the walk then goes on from it). Emptied leaves are never removed, so
 * without it finding the predecessor of the first key of a leaf walks
 * every emptied leaf to its left: deletes in key order were quadratic.
 */
struct ut_leaf {
	struct ut_tnode	h;
	struct ut_leaf	*next;
	struct ut_leaf	*prev;
	struct ut_leaf	*left;
	u64		left_seq;
	u64		pfx[UT_LEAF_CAP];
	u64		ent[UT_LEAF_CAP];
};

/* child[i] holds keys in [key[i-1], key[i]) */
struct ut_inner {
	struct ut_tnode	h;
	u64		pfx[UT_INNER_CAP];
	struct ut_ikey	*key[UT_INNER_CAP];
	struct ut_tnode	*child[UT_INNER_CAP + 1];
};

/* What the tree allocates: nodes from their caches, separators kmalloc'd */
enum ut_mem {
	UT_MEM_LEAF,
	UT_MEM_INNER,
	UT_MEM_KEY,
	UT_MEM_KINDS
};

/**
 * struct ut_tree - the volatile B+-tree
 * @meta:       version lock guarding @root
 * @root:       root node (a leaf while the tree is small)
 * @refill:     bumped by every leaf split and insert into an empty leaf
 *              (struct ut_leaf, @left)
 * @stash_lock: protects @stash and @nstash
 * @stash:      blocks of each kind allocated in sleepable context, for
 *              splits that run out of atomic memory (a separator's block
 *              fits the longest key)
 */
struct ut_tree {
	u64			meta;
	struct ut_tnode		*root;
	atomic64_t		refill;
	spinlock_t		stash_lock;
	unsigned int		nstash[UT_MEM_KINDS];
	void			*stash[UT_MEM_KINDS][UT_STASH_MAX];
};

/* Copy of one leaf, taken under its version, for scans. */
struct ut_iter {
	struct ut_leaf	*next;
	int		n, i;
	u64		pfx[UT_LEAF_CAP];
	u64		ent[UT_LEAF_CAP];
};

/* Bulk loading: a chain of leaves filled in key order. */
struct ut_builder {
	struct ut_leaf	*first, *last;
	u64		count;
};

/* ---- node allocator -------------------------------------------------- */

/**
 * struct ut_chunk - DRAM state of one node chunk
 * @used:    node slot taken (live, retired, or in a per-CPU cache);
 *           protected by utree.alloc_lock once the index is open
 * @nfree:   clear bits in @used
 * @partial: on utree.partial while @nfree
 */
struct ut_chunk {
	u64			off;
	u32			id;
	u32			nfree;
	u32			hint;
	struct list_head	partial;
	unsigned long		used[BITS_TO_LONGS(UT_CHUNK_NODES)];
};

/* a per-CPU cache of free nodes */
struct ut_mag {
	spinlock_t	lock;		/* protects n and off */
	u32		n;
	u64		off[UT_MAG_SIZE];
};

struct ut_pcpu {
	u64	ops_get, ops_put, ops_del, ops_scan;
	s64	keys;
	s64	blob_bytes;
	u64	inserts;	/* since this CPU's last tracker */
};

/**
 * struct utree - one open uTree index
 * @root:        the pmem root (struct ut_root inside idx->root)
 * @alloc_lock:  protects @partial, @dir growth, chunk bitmaps, and the
 *               lazy first-use initialisation of the root
 * @dir:         chunk id -> DRAM chunk, two levels of UT_DIR_L2
 * @nr_chunks:   ids in use (directory bound)
 * @spare:       a chunk's DRAM side set aside where we could sleep, for
 *               a growth that finds atomic memory short (alloc.c)
 * @trackers:    the pmem tracker table, NULL until the first chunk
 * @gate:        held by the checker; with @frozen it keeps writers out
 * @stragglers:  writers that left their section with a committed list
 *               change not yet in the tree (memory shortage)
 */
struct utree {
	struct pmidx_index		*idx;
	struct pmidx_pool		*pool;
	struct pmidx_pmem		*pm;
	struct ut_root			*root;
	u64				root_off;
	struct ut_tree			tree;

	spinlock_t			alloc_lock;
	struct list_head		partial;
	struct ut_chunk			***dir;
	u32				nr_chunks;
	u32				live_chunks;
	struct ut_chunk			*spare;
	struct ut_mag __percpu		*mag;
	struct ut_trackers		*trackers;
	atomic_t			tracker_seq;

	struct ut_pcpu __percpu		*pcpu;
	atomic64_t			dram_bytes;

	struct mutex			gate;
	bool				frozen;
	atomic_t			stragglers;
	unsigned int			open_segments;	/* 0: image or empty */
	u64				old_image;	/* loaded at open */
};

/* ---- utree.c: restarts ---------------------------------------------- */

/**
 * struct ut_retry - restart state of one operation (see backoff())
 * @off:     node whose next word made the last round fail (0: the head)
 * @w:       that next word
 * @changed: a round since the last stuck check failed on another word
 * @seen_off, @seen_w: @off and @w at the last stuck check
 * @stuck:   stuck checks in a row that found the same word
 */
struct ut_retry {
	unsigned int	tries;
	unsigned int	stuck;
	bool		changed;
	bool		nowait;		/* PMIDX_WRITE_NOWAIT: never let go */
	u64		off, w;
	u64		seen_off, seen_w;
};

static inline void ut_retry_note(struct ut_retry *r, u64 off, u64 w)
{
	if (off != r->off || w != r->w)
		r->changed = true;
	r->off = off;
	r->w = w;
}

/* ---- list.c ---------------------------------------------------------- */

/* A value as read under the node's Version: a blob, or inline bytes. */
struct ut_val {
	u64		blob;		/* blob offset, 0: inline in @buf */
	u32		len;		/* inline length */
	u8		buf[UT_INLINE_MAX];
};

static inline struct ut_lnode *ut_node(const struct utree *t, u64 off)
{
	return pmidx_ptr(t->pm, off);
}

/* Load a next word; acquire: the node it points to is read after it. */
static inline u64 ut_ld(__le64 *w)
{
	/* acquire: pairs with the fully ordered CAS that linked the node */
	return le64_to_cpu(smp_load_acquire(w));
}

static inline bool ut_cas(__le64 *w, u64 old, u64 new)
{
	return cmpxchg(w, cpu_to_le64(old), cpu_to_le64(new)) ==
	       cpu_to_le64(old);
}

/* The next word of list position @pred (0: the list head in the root). */
static inline __le64 *ut_nextw(const struct utree *t, u64 pred)
{
	return pred ? &ut_node(t, pred)->next : &t->root->head;
}

u64 ut_pfx(const u8 *key, u32 len);
void ut_skey_init(struct ut_skey *k, const u8 *key, u32 len);
const u8 *ut_blob(const struct utree *t, u64 off, u32 *len);
int ut_blob_read(const struct utree *t, u64 off, void *dst, u32 cap, u32 *len);
const u8 *ut_node_key(const struct utree *t, const struct ut_lnode *n,
		      u32 *len);
int ut_node_cmp(const struct utree *t, u64 off, const struct ut_skey *k);
void ut_node_init(struct utree *t, u64 off, __le64 key, __le64 val,
		  u32 meta, u64 next);
bool ut_link(__le64 *w, u64 expect, u64 ptr);
void ut_unmark(struct utree *t, struct ut_lnode *n);
void ut_ver_release(struct utree *t, struct ut_lnode *n);
int ut_read_val(const struct utree *t, struct ut_lnode *n, struct ut_val *v,
		bool live, u64 *w);
int ut_val_copy(const struct utree *t, const struct ut_val *v, void *dst,
		u32 cap, u32 *len);

/* ---- tree.c ---------------------------------------------------------- */

int ut_tree_global_init(void);
void ut_tree_global_exit(void);
int ut_tree_init(struct utree *t);
void ut_tree_free(struct utree *t);
int ut_tree_reserve(struct utree *t);
bool ut_tree_stash_full(struct utree *t);
u64 ut_tree_get(struct utree *t, const struct ut_skey *k);
u64 ut_tree_find(struct utree *t, const struct ut_skey *k, u64 *pred);
int ut_tree_insert(struct utree *t, const struct ut_skey *k, u64 node);
bool ut_tree_replace(struct utree *t, const struct ut_skey *k, u64 old,
		     u64 node);
bool ut_tree_remove(struct utree *t, const struct ut_skey *k, u64 node);
void ut_iter_seek(struct utree *t, struct ut_iter *it,
		  const struct ut_skey *k, bool after);
bool ut_iter_next_leaf(struct utree *t, struct ut_iter *it);
struct ut_leaf *ut_leaf_first(struct utree *t);
int ut_build_add(struct utree *t, struct ut_builder *b, u64 pfx, u64 ent);
void ut_build_append(struct ut_builder *to, struct ut_builder *from);
void ut_build_discard(struct utree *t, struct ut_builder *b);
int ut_tree_build(struct utree *t, struct ut_builder *b);
int ut_tree_verify(struct utree *t, u64 *entries, const char **why);

/* ---- alloc.c --------------------------------------------------------- */

bool ut_in_data(const struct utree *t, u64 off, u64 size);
int ut_alloc_init(struct utree *t);
void ut_alloc_free(struct utree *t);
int ut_node_alloc(struct utree *t, u64 *off);
int ut_alloc_reserve(struct utree *t);
void ut_node_free(struct utree *t, u64 off);
void ut_node_retire(struct utree *t, u64 off);
struct ut_chunk *ut_chunk_of(const struct utree *t, u64 off, u32 *slot);
struct ut_chunk *ut_chunk_get(const struct utree *t, u32 id);
int ut_chunk_register(struct utree *t, u64 off, u32 id);
void ut_alloc_rebuild(struct utree *t);
void ut_chunks_trim(struct utree *t);
u32 ut_chunk_hdr_crc(const struct ut_chunk_hdr *h);
u64 ut_blob_write(struct utree *t, const void *data, u32 len);
void ut_blob_free(struct utree *t, u64 off);
void ut_blob_retire(struct utree *t, u64 off);

/* ---- recovery.c ------------------------------------------------------ */

int ut_recover(struct utree *t, const struct pmidx_recover *rc);
void ut_save_image(struct utree *t);
void ut_trackers_refresh(struct utree *t);

/* ---- check.c --------------------------------------------------------- */

void ut_freeze(struct utree *t);
void ut_thaw(struct utree *t);
int ut_check(struct utree *t, u64 *keys, const char **why);

/* ---- utree.c --------------------------------------------------------- */

s64 ut_sum_keys(struct utree *t);

#endif /* _PMIDX_UTREE_H */
