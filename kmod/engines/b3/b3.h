/* SPDX-License-Identifier: GPL-2.0 */
/*
 * B^3-tree engine: DRAM state and the interfaces between its files.
 *
 *   format.h    on-media layout (pages, BST nodes, child words, root)
 *   page.c      one page: keys, the lock word, BST search and in-order
 *               walks, building a page as a complete BST (copy-on-write)
 *   tree.c      descents from the root: lock-free for readers, with the
 *               path and the transient states for writers
 *   smo.c       structure modifications: split, merge, defragmentation,
 *               root growth, and the lazy repair of half-done ones
 *   walk.c      the one walk over every reachable object (recovery marks,
 *               drop-index frees, counts)
 *   check.c     the structural checker and the writer gate it uses
 *   b3.c        get/put/del/scan/stats and the ops table
 *
 * Concurrency (paper §3.5). Every operation runs inside a pool epoch
 * section (preemption off). Readers take no lock at all: every store a
 * writer makes keeps the index consistent (format.h), child words are
 * published with a release store after the node they name is written,
 * and pages and blobs are freed through the epochs (§3.5.1), so a reader
 * holding a stale offset still reads a frozen, consistent page.
 *
 * Writers take the write lock of the one leaf page they change (its lock
 * word). Anything that replaces a page or writes an internal page is a
 * structure modification (SMO) and runs under @smo; an SMO then locks the
 * leaves it replaces, left to right, and marks them DEAD before it
 * unlocks them, which sends writers waiting on them back to the root.
 *
 * Lock order: @smo -> @gate -> epoch section -> page locks -> pool
 * allocator locks.
 *  - @gate: the checker holds it while writers are frozen and takes
 *    nothing else but the epoch barrier; a writer takes it (and drops it
 *    at once) in writer_enter(), outside any section, possibly holding
 *    @smo (smo_call(), b3_del()).
 *  - A writer outside an SMO holds at most one page lock, a leaf's, and
 *    waits for nothing while it holds it; it drops it before @smo.
 *  - Internal pages are locked and written only by SMOs, under @smo. An
 *    SMO locks the page it replaces, then its parent when the parent
 *    needs room, and so on up (child -> parent, room_at()); a merge
 *    locks parent -> A -> B. These orders differ, but no two SMOs run at
 *    once, and the only other holder an SMO can wait for is a writer
 *    holding one leaf, which waits for nothing: no cycle.
 *  - Page locks spin: every holder is inside a section (preemption off)
 *    and does not sleep; allocations there are GFP_ATOMIC (b3_lt_fill()
 *    retries a failed one outside).
 */
#ifndef _PMIDX_B3_H
#define _PMIDX_B3_H

#include <linux/atomic.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/types.h>
#include "core/engine.h"
#include "core/pool.h"
#include "format.h"

/* ---- tunables --------------------------------------------------------- */

/*
 * The slots a page fills before it counts as full: B3_SLOTS. The
 * userspace test build can lower it (b3_test_slots, before an index is
 * opened) so that a few hundred keys make a tree of 3 or 4 levels, and
 * the crash simulator reaches internal-page SMOs in a short history.
 */
#ifdef PMIDX_TEST_ENGINES
extern unsigned int b3_test_slots;
#define B3_CAP			(b3_test_slots)
/*
 * Called after every commit store (page.c b3_commit*(), b3_leaf_link()):
 * a test widens the windows between an SMO's stores, and after a leaf's
 * link store, for its lock-free readers.
 */
extern void (*b3_test_store_hook)(void);
static inline void b3_test_store(void)
{
	if (b3_test_store_hook)
		b3_test_store_hook();
}
/*
 * Called between a txn's arm and its link store (page.c link_store()): a
 * test keeps records in flight longer while it takes crash images.
 */
extern void (*b3_test_arm_hook)(void);
static inline void b3_test_armed(void)
{
	if (b3_test_arm_hook)
		b3_test_arm_hook();
}
#else
#define B3_CAP			B3_SLOTS
static inline void b3_test_store(void) { }
static inline void b3_test_armed(void) { }
#endif
/* a full page with at most this many live nodes is defragmented, not split */
#define B3_DEFRAG_MAX		(B3_CAP - B3_CAP / 4)
/*
 * A page with fewer live nodes (keys; separators in an internal page)
 * tries to merge with a neighbour (§3.3.3) ...
 */
#define B3_MERGE_UNDER		(B3_CAP / 4)
/* ... when both fit in this many, else the two share out (§3.3.4) */
#define B3_MERGE_MAX		(B3_CAP / 2)
#define B3_MOVES_MAX		(1U << 20)	/* sibling moves: a cycle */
/* a writer re-descending past replaced pages: repair, then give up */
#define B3_RETRY_SPIN		8
#define B3_RETRY_MAX		64

struct b3_pcpu {
	u64	ops_get, ops_put, ops_del, ops_scan;
	s64	keys;
	s64	pages;
	s64	blob_bytes;
	u64	splits, merges, defrags, repairs, root_splits;
	u64	redists, inner_merges;	/* of the merges: internal pages */
};

/*
 * Page states (DRAM), one u64 per 4 KiB of the pool's data area, in
 * leaves of B3_LT_LEAF words allocated when a page there is first locked
 * or built: merge refused at (8, bits 32..39) | used slots (8) |
 * reachable nodes (8) | flags (16). A zero word is a page not counted
 * yet in this open: the first lock counts it.
 */
#define B3_LT_SHIFT		9
#define B3_LT_LEAF		(1U << B3_LT_SHIFT)
#define B3_LK_USED_SHIFT	24
#define B3_LK_LIVE_SHIFT	16
#define B3_LK_CNT_MASK		0xffULL
#define B3_LK_LOCKED		1ULL
#define B3_LK_DEAD		2ULL	/* replaced by an SMO: writers retry */
#define B3_LK_VALID		4ULL	/* counts are set */
#define B3_LK_GONE		8ULL	/* retired: a second retire is corruption */
/* bits 32..39: live nodes + 1 when a merge of the page was refused */
#define B3_LK_TRIED_SHIFT	32

/* Working space of the one SMO running (under b3.smo). */
struct b3_scratch;

/**
 * struct b3 - one open B^3-tree index
 * @root:   the pmem root (struct b3_root inside idx->root)
 * @locks:  page states by page number (see above), @nlocks leaves
 * @lt_want: a leaf a section failed to allocate (page.c lk_word())
 * @lt_misses: such failures so far; an operation that failed with
 *          -ENOSPC or -ENOMEM retries (b3.c lt_retry()) only when it
 *          moved since the round began: @lt_want alone is one word that
 *          another writer's fill may clear, or overwrite, meanwhile
 * @smo:    serialises structure modifications (and so every internal
 *          page write); sleeps, so it is taken outside epoch sections
 * @smo_emptied: under @smo, the SMO running emptied the epoch lists for
 *          want of room and goes on without it (smo.c b3_smo_room())
 * @gate:   held by the checker; with @frozen it keeps writers out
 * @reserve: a pending page for a delete on a full pool (page.c), 0: none
 * @approx: the key, page and byte counters are deltas since a crash
 *          attach that counted nothing (walk.c b3_recover()): STATS
 *          leaves them out, CHECK sets them from its walk
 */
struct b3 {
	struct pmidx_index	*idx;
	struct pmidx_pool	*pool;
	struct pmidx_pmem	*pm;
	struct b3_root		*root;
	u64			root_off;
	u64			**locks;
	u64			nlocks;
	u64			lt_want;	/* leaf index + 1, page.c */
	atomic64_t		lt_misses;
	atomic64_t		dram_bytes;
	struct mutex		smo;
	struct mutex		gate;
	bool			smo_emptied;
	bool			frozen;
	bool			approx;
	u64			reserve;
	struct b3_scratch	*scr;
	struct b3_pcpu __percpu	*pcpu;
};

/* A search key. */
struct b3_key {
	const u8	*p;
	u32		len;
};

/*
 * Where a child word lives: the index root's @top (@pg NULL), a page's
 * root word (@slot -1), or the left/right word of node @slot of @pg.
 */
struct b3_ref {
	struct b3_page	*pg;
	int		slot;
	bool		right;
};

/*
 * A writer's descent: per level, the page reached, the child word that
 * led there and the low bound of that word's range. @transient: the page
 * of the word was not the page of the range (a move right was needed, or
 * the page's low key differs from the range's): a half-done SMO.
 */
struct b3_step {
	struct b3_page	*pg;
	struct b3_ref	ref;
	struct b3_ref	gref;		/* the word naming @ref's node */
	struct b3_key	lo;
	struct b3_key	hi;		/* @hi.p NULL: plus infinity */
	bool		transient;
};

struct b3_path {
	int		top;		/* level of the root page */
	int		bad;		/* highest transient level, -1: none */
	struct b3_step	lv[B3_MAX_LEVEL];
};

/* A leaf search result: the node (slot or -1) and the word naming it. */
struct b3_lpos {
	int		slot;
	int		parent;		/* -1: the page root word */
	bool		right;
};

/*
 * @check: before_retire()'s descent (smo.c); @fix_key: per level, the key
 * whose path must be repaired before an SMO at that level goes on.
 */
struct b3_scratch {
	struct b3_path	path;
	struct b3_path	check;
	u8		fix_key[B3_MAX_LEVEL][B3_LOW_MAX];
	u8		fix_len[B3_MAX_LEVEL];
	int		fix_level;
	struct b3_lnode	ln[2 * B3_SLOTS];
	struct b3_inode	in[2 * B3_SLOTS + 1];	/* two pages and a separator */
	u64		child[2 * B3_SLOTS + 2];
	u8		slots[B3_SLOTS];
};

/* ---- page.c ------------------------------------------------------------- */

static inline struct b3_page *b3_pg(const struct b3 *t, u64 off)
{
	return pmidx_ptr(t->pm, off);
}

static inline u64 b3_pgoff(const struct b3 *t, const struct b3_page *p)
{
	return pmidx_off(t->pm, p);
}

/* Load a child word; acquire: the node or page it names is read after. */
static inline u64 b3_ld(const __le64 *w)
{
	/* acquire: pairs with the release in b3_commit() */
	return le64_to_cpu(smp_load_acquire(w));
}

static inline u32 b3_ld32(const __le32 *w)
{
	/* acquire: pairs with the release in b3_leaf_link() */
	return le32_to_cpu(smp_load_acquire(w));
}

static inline struct b3_key b3_low(const struct b3_page *p)
{
	struct b3_key k = { p->low, p->lowlen };

	return k;
}

static inline int b3_cmp(const struct b3_key *a, const struct b3_key *b)
{
	return pmidx_key_cmp(a->p, a->len, b->p, b->len);
}

bool b3_page_ok(const struct b3 *t, u64 off);
u32 b3_page_crc(const struct b3_page *p);
struct b3_key b3_node_key(const struct b3 *t, const __le64 *kw, u32 meta);
int b3_lock(struct b3 *t, struct b3_page *p);
void b3_unlock(struct b3 *t, struct b3_page *p);
void b3_kill(struct b3 *t, struct b3_page *p);
int b3_locks_init(struct b3 *t);
int b3_lt_fill(struct b3 *t);
void b3_locks_free(struct b3 *t);
u32 b3_used(struct b3 *t, const struct b3_page *p);
u32 b3_live(struct b3 *t, const struct b3_page *p);
void b3_set_cnt(struct b3 *t, struct b3_page *p, u32 used, u32 live);
u32 b3_tried(struct b3 *t, const struct b3_page *p);
void b3_set_tried(struct b3 *t, struct b3_page *p, u32 live);
int b3_leaf_find(const struct b3 *t, const struct b3_page *p,
		 const struct b3_key *k, struct b3_lpos *pos);
int b3_leaf_inorder(const struct b3 *t, const struct b3_page *p, u8 *slots);
int b3_inner_inorder(const struct b3 *t, const struct b3_page *p,
		     u64 *child, u8 *sep);
int b3_reach(const struct b3 *t, const struct b3_page *p, u32 *used,
	     u32 *live);
int b3_txn_begin(struct b3 *t, struct pmidx_txn *x);
void b3_txn_cancel(struct b3 *t, struct pmidx_txn *x);
int b3_txn_check(struct b3 *t, struct pmidx_txn *const *x, unsigned int n,
		 s64 bytes);
void b3_txn_blob_in(struct b3 *t, struct pmidx_txn *x, u64 off);
void b3_txn_blob_out(struct b3 *t, struct pmidx_txn *x, u64 off);
void b3_commit_txn(struct b3 *t, struct pmidx_txn *x, __le64 *w, u64 val);
void b3_leaf_link(struct b3 *t, struct b3_page *p, int parent, bool right,
		  u32 val, struct pmidx_txn *x);
int b3_blob_read(struct b3 *t, u64 off, void *dst, u32 cap, u32 *len);
u64 b3_blob_write(struct b3 *t, const void *data, u32 len);
void b3_blob_free(struct b3 *t, u64 off);
void b3_blob_retire(struct b3 *t, u64 off);
__le64 *b3_ref_word(struct b3 *t, const struct b3_ref *r);
void b3_commit(struct b3 *t, __le64 *w, u64 val);
u64 b3_page_new(struct b3 *t, u8 level, const struct b3_key *low);
u64 b3_page_new_reserve(struct b3 *t, u8 level, const struct b3_key *low);
void b3_reserve_fill(struct b3 *t, bool wait);
void b3_page_retire(struct b3 *t, u64 off);
void b3_build_leaf(struct b3 *t, struct b3_page *dst, const struct b3_lnode *src,
		   u32 n);
void b3_build_inner(struct b3 *t, struct b3_page *dst, const u64 *child,
		    const struct b3_inode *sep, u32 n);
int b3_sep_make(struct b3 *t, struct b3_inode *n, const struct b3_key *k,
		u64 left, u64 right);
void b3_sep_free(struct b3 *t, const struct b3_inode *n, bool now);

/* ---- tree.c ------------------------------------------------------------- */

struct b3_page *b3_find_leaf(struct b3 *t, const struct b3_key *k, int *err,
			     bool *moved);
int b3_descend(struct b3 *t, const struct b3_key *k, int level,
	       struct b3_path *path);
struct b3_page *b3_left_of(struct b3 *t, struct b3_page *p);

/* ---- smo.c -------------------------------------------------------------- */

/* An SMO found no room on the epoch list for a step's retirees (smo.c) */
#define B3_NO_ROOM	(-ENOBUFS)

int b3_make_room(struct b3 *t, const struct b3_key *k);
int b3_fix(struct b3 *t, const struct b3_key *k);
int b3_try_merge(struct b3 *t, const struct b3_key *k);
int b3_del_cow(struct b3 *t, const struct b3_key *k, __le64 *kw, __le64 *vw,
	       u32 *meta, u32 *live);

/* ---- walk.c ------------------------------------------------------------- */

/**
 * struct b3_walk - what to do with every reachable object
 * @page:  each page once (level chains), NULL to skip
 * @blob:  each blob a reachable node owns, once
 */
struct b3_walk {
	int	(*page)(struct b3 *t, struct b3_walk *w, u64 off);
	int	(*blob)(struct b3 *t, struct b3_walk *w, u64 off);
	void	*ctx;
	u64	pages, keys, blobs, blob_bytes;
	bool	validate;	/* check every object before following it */
	const char *why;
};

/* A growable array of pool offsets (the checker's and the walk's). */
struct b3_offs {
	u64	*off;
	u64	n, cap;
};

int b3_offs_add(struct b3_offs *a, u64 v);
void b3_offs_sort(struct b3_offs *a);
int b3_walk(struct b3 *t, struct b3_walk *w);
int b3_recover(struct b3 *t, const struct pmidx_recover *rc);

/* ---- b3.c ---- */

s64 b3_sum_keys(struct b3 *t);
void b3_counters_set(struct b3 *t, u64 keys, u64 pages, u64 bytes);

/* ---- check.c ------------------------------------------------------------ */

void b3_freeze(struct b3 *t);
void b3_thaw(struct b3 *t);
int b3_check(struct b3 *t, u64 *keys, const char **why);

#endif /* _PMIDX_B3_H */
