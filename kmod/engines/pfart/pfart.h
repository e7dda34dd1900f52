/* SPDX-License-Identifier: GPL-2.0 */
/*
 * PFtree engine: DRAM state and the interfaces between its files.
 *
 *   format.h    on-media layout (root, inner nodes, leaf arrays, records)
 *   persist.h   the adaptive flush (paper Algorithm 1)
 *   lock.h      version locks in the node headers, with the generation
 *   meta.c      the DRAM metadata of leaf arrays, found by offset, and
 *               the reserves of pre-zeroed leaf arrays (bulk allocation)
 *   leaf.c      one leaf array: find, append, invalidate, build, parse
 *   node.c      one inner node: find, add, remove, entries, build
 *   tree.c      descents (optimistic for readers, with a path for SMOs)
 *   scan.c      range scans (optimistic, leaf array by leaf array)
 *   walk.c      the walk over every reachable node (recovery, check, drop)
 *   smo.c       structure modifications (split, grow, prefix split,
 *               prune, shrink, collapse)
 *   recovery.c  the walk at attach: validate, mark, rebuild the metadata
 *   check.c     the structural checker and the writer gate it uses
 *   pfart.c     get/put/del/scan/stats and the ops table
 *
 * Concurrency. Every operation runs inside a pool epoch section
 * (preemption off). Readers take no lock: optimistic lock coupling over
 * the nodes' version words (lock.h), restart from the root when a version
 * moved. A put or delete that fits in its leaf array locks only that leaf
 * array. Every write to an inner node or to root->top is a structure
 * modification (SMO): it runs under @smo, which makes inner nodes stable
 * for it, and locks every node it writes and every node it replaces
 * (parent before child), so readers and leaf writers see their versions
 * move; a replaced node stays locked and is marked obsolete.
 *
 * Lock order: @smo -> @gate -> epoch section -> node locks -> pool
 * allocator. Only the SMO (one at a time) locks inner nodes, so it takes
 * them and the leaf arrays it replaces in whatever order it meets them; a
 * leaf writer holds one leaf array's lock and waits for nothing while it
 * holds it, so an SMO spinning on that array cannot deadlock. Node locks
 * spin (holders are in sections and never sleep; allocations under them
 * are GFP_ATOMIC).
 *
 * Lifetime (who may name what, and when it is freed):
 *  - a leaf array is allocated zeroed and persisted into a reserve (meta.c;
 *    unreachable: a crash frees it through the recovery trace), published
 *    by one persisted store of its offset into a child word or root->top,
 *    named by exactly that word from then on, unpublished by the store
 *    that replaces or clears the word, and retired through the epochs
 *    right after that store is durable, with its DRAM metadata; one built
 *    but never published is freed at once. Reserves are freed at close;
 *  - an inner node: the same, allocated directly by the SMO that builds it;
 *  - a blob (a value over PFART_VINLINE_MAX bytes) is written and persisted
 *    before the record naming it is committed, named by exactly one valid
 *    record of a reachable leaf array (a rewrite of the leaf array moves
 *    the record: the old array is unreachable after the swap), and
 *    retired right after its record stops being the key's: a delete's
 *    persisted invalidation, an update's durable commit of the later
 *    record (its invalidation of the old one may never reach the media:
 *    the old record still names the blob there, and every attach drops
 *    such a superseded record before it marks or claims a blob, leaf.c),
 *    or a rewrite applying an update. One whose record never committed
 *    is freed at once;
 *  - DRAM metadata of a leaf array: allocated with the array in a reserve,
 *    installed in the directory before the array is published, freed by
 *    the array's epoch callback.
 */
#ifndef _PMIDX_PFART_H
#define _PMIDX_PFART_H

#include <linux/atomic.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/types.h>
#include "core/engine.h"
#include "core/pool.h"
#include "format.h"

/* ---- tunables ------------------------------------------------------------- */

/*
 * Largest leaf array of new indexes (module parameter pfart_leaf_bytes:
 * 512, 1024 or 2048; fixed in the root at the first open). The userspace
 * tests lower it to make deep trees of a few hundred keys.
 */
extern unsigned int pfart_leaf_bytes;

#define PFART_RES_TARGET	16	/* leaf arrays kept per size class */
#define PFART_RES_LOW		8	/* refill below this */
#define PFART_RES_HUGE		4	/* the same above leaf_max, once wanted */
#define PFART_RES_BOOST_MAX	5	/* reserve doublings under memory pressure */
#define PFART_SMO_MEM_TRIES	8	/* SMO rounds short of atomic memory */
#define PFART_SMO_PUT_RETIRES	1	/* the node or array a put's SMO replaces */
#define PFART_MAX_ENTRIES	511	/* entries of one leaf array */
#define PFART_ENTRIES_LEAF_MAX	255	/* ... of one of leaf_max or less */
#define PFART_PATH_MAX		(PMIDX_KEY_MAX + 2)
/*
 * Restarts of one operation: every PFART_SPIN it leaves its section and
 * reschedules, every PFART_SPIN_SLEEP it sleeps 1-2 ms; past
 * PFART_RETRY_MAX (over a minute asleep) a node stays locked for good (a
 * bug, not a damaged image: generations unlock what an image left
 * locked). The sleeps matter where a lock holder can be preempted (the
 * userspace build, or a kernel with more writers than CPUs in sections).
 */
#define PFART_SPIN		256
#define PFART_SPIN_SLEEP	(16 * PFART_SPIN)
#define PFART_RETRY_MAX		(1U << 28)
/* an N256 shrinks to N48 at this many children, N48 to N16, N16 to N4 */
#define PFART_SHRINK_256	37
#define PFART_SHRINK_48		12
#define PFART_SHRINK_16		3

/* ---- DRAM metadata of a leaf array (§3.1: KeyPos, KeyLen, fingerprints) --- */

/**
 * struct pfart_meta - the volatile part of one leaf array
 * @cap:   entries the arrays below hold
 * @n:     live records (entries 0..n-1)
 * @tail:  data offset where the next record goes
 * @live:  bytes of the live records
 * @pruned: @live when a prune last left the array as it was (0: never):
 *         deletes ask for the next one at half of it (hysteresis)
 * @media_bad: a reader's copy out of the array hit poison: the next put
 *         rewrites it, copying the records machine-check safe (smo.c)
 * @fp:    fingerprint of each entry's key, 8-byte aligned and padded
 *         to a multiple of 8 entries: a lookup compares eight at once
 * @klen:  key length of each entry (KeyLen)
 * @pos:   data offset of each entry's record (KeyPos)
 * @order: entries in key order (the paper's slot array): u8 up to
 *         PFART_ENTRIES_LEAF_MAX, u16 above (pfart_order())
 *
 * Written under the array's lock; read by readers without it
 * (READ_ONCE, bounds-checked, then the array's version validated).
 */
struct pfart_meta {
	u16	cap;
	u16	n;
	u16	tail;
	u16	live;
	u16	pruned;
	bool	media_bad;
	u8	*fp;
	u8	*klen;
	u16	*pos;
	void	*order;
};

/* Directory: per data chunk, one metadata pointer per 256 bytes. */
#define PFART_MDIR_SHIFT	PMIDX_MIN_OBJ_SHIFT
#define PFART_MDIR_SLOTS	(PMIDX_CHUNK_SIZE >> PFART_MDIR_SHIFT)

/* A pre-zeroed leaf array with its metadata (meta.c). */
struct pfart_spare {
	u64			off;
	struct pfart_meta	*m;
};

/*
 * Per size class; taken and refilled under pfart.smo only. A class above
 * leaf_max is kept only once an SMO wanted one (@wanted): most indexes
 * never build one. @boost doubles the target while SMOs fail short of
 * atomic memory for more arrays than it holds (pfart.c, smo_put());
 * @s grows to fit (@cap entries).
 */
struct pfart_reserve {
	u32			n, cap;
	u8			boost;
	bool			wanted;
	struct pfart_spare	*s;
};

struct pfart_pcpu {
	u64	ops_get, ops_put, ops_del, ops_scan;
	s64	keys, leaves, inners, leaf_bytes, inner_bytes, blob_bytes;
	u64	restarts;
	u64	appends, compacts, grows, splits;
	u64	dense_builds;		/* arrays built above leaf_max */
	u64	leaf_shrinks;		/* arrays moved to a smaller class */
	u64	node_adds, node_grows, node_shrinks, prefix_splits;
	u64	prunes, collapses;
	u64	res_takes, res_fills, direct_allocs;
	u64	eadr_skips;		/* writes left to the persistent cache */
	u64	nofence_wbs;		/* writes flushed without a fence */
};

#define pfart_stat_inc(t, f)	this_cpu_inc((t)->pcpu->f)
#define pfart_stat_add(t, f, n)	this_cpu_add((t)->pcpu->f, (n))

/* A record to write (build or append): key, and value bytes or a blob. */
struct pfart_rec {
	const u8	*key;
	u32		klen;
	u32		vfield;		/* 0..62 inline, PFART_VBLOB */
	const u8	*val;		/* inline value bytes */
	u64		blob;		/* vfield == PFART_VBLOB */
};

/* One step of a path kept by an SMO (tree.c pfart_path_to()). */
struct pfart_step {
	u64		off;		/* the node */
	__le64		*word;		/* the word naming it */
	u64		parent;		/* node holding @word, 0: root->top */
	u8		byte;		/* reached by this byte, or @end */
	bool		end;
};

struct pfart_path {
	int			n;	/* steps; s[n - 1] is where it stopped */
	u32			depth;	/* key bytes consumed before s[n - 1] */
	u8			byte;	/* PFART_NO_CHILD: the missing child, */
	bool			end;	/* or the missing end child */
	struct pfart_step	s[PFART_PATH_MAX];
};

/* where pfart_path_to() stopped */
enum {
	PFART_AT_EMPTY,
	PFART_AT_LEAF,
	PFART_NO_CHILD,
	PFART_MISMATCH,
};

/* SMO scratch (under pfart.smo): records and build tasks. */
#define PFART_REC_MAX		(2 * PFART_MAX_ENTRIES + 2)
#define PFART_BUILD_MAX		4096

struct pfart_task {
	u32		lo, hi;		/* records [lo, hi) */
	u32		depth;		/* key bytes the path fixes */
	__le64		*dest;		/* word of an unpublished node, NULL: top */
};

struct pfart_scratch {
	struct pfart_path	path;
	struct pfart_rec	rec[PFART_REC_MAX];
	struct pfart_task	task[PFART_BUILD_MAX];
	u64			built[PFART_BUILD_MAX];
	u8			keys[256];
	u64			child[256];
	u64			kids[257];	/* collapse: end child, children */
	u8			stage[PFART_LEAF_HUGE];	/* records read safely */
};

/**
 * struct pfart - one open PFtree index
 * @root:    the pmem root (inside idx->root)
 * @gen:     generation of this open (format.h, lock.h)
 * @eadr:    the pool's persistence mode, read at open: selects the
 *           adaptive flush (persist.h)
 * @leaf_max: largest leaf array, bytes, but for dense keys (smo.c);
 *           @max_class its class; @top_class the largest class an
 *           array of this index may have (@max_class in version 1)
 * @data_off: pool offset of the allocator's first chunk
 * @mdir:    metadata directory, one array per data chunk (meta.c)
 * @res:     reserves of leaf arrays, per class (meta.c), under @smo
 * @smo:     serialises structure modifications
 * @gate:    held by the checker; with @frozen it keeps writers out
 * @scr:     the running SMO's scratch, under @smo
 */
struct pfart {
	struct pmidx_index	*idx;
	struct pmidx_pool	*pool;
	struct pmidx_pmem	*pm;
	struct pfart_root	*root;
	u64			root_off;
	u64			top;	/* readers' root->top: pfart_publish() */
	u32			gen;
	bool			eadr;
	u32			leaf_max;
	u8			max_class;
	u8			top_class;
	u64			data_off;
	u64			nchunks;
	struct pfart_meta	***mdir;
	struct pfart_reserve	res[PFART_NR_CLASSES];
	struct mutex		smo;
	struct mutex		gate;
	bool			frozen;
	struct pfart_scratch	*scr;
	atomic64_t		dram_bytes;
	u64			recovery_ns, meta_ns;
	u32			recovery_threads;
	struct pfart_pcpu __percpu *pcpu;
};

/* ---- small helpers ------------------------------------------------------ */

static inline void *pfart_ptr(const struct pfart *t, u64 off)
{
	return pmidx_ptr(t->pm, off);
}

static inline u64 pfart_off(const struct pfart *t, const void *p)
{
	return pmidx_off(t->pm, p);
}

/* the top node for a lock-free reader; 0: the index is empty */
static inline u64 pfart_top(const struct pfart *t)
{
	return smp_load_acquire(&t->top);	/* pfart_publish() */
}

/* a child word; acquire: the node it names is read after */
static inline u64 pfart_ld(const __le64 *w)
{
	/* pairs with the release in pfart_publish() */
	return le64_to_cpu(smp_load_acquire(w));
}

static inline u32 pfart_leaf_size(u8 klass)
{
	return PFART_LEAF_MIN << klass;
}

static inline u32 pfart_data_size(u8 klass)
{
	return pfart_leaf_size(klass) - PFART_HDR_SIZE;
}

/*
 * Entries of an array: one per 4 data bytes (the smallest record), at
 * most 255 up to PFART_LEAF_MAX, where the metadata of most arrays is
 * (its DRAM is per entry of the capacity); 511 above, for the 256 dense
 * keys of one array and more (smo.c split_scatters()).
 */
static inline u32 pfart_cap(u8 klass)
{
	u32 max = pfart_leaf_size(klass) > PFART_LEAF_MAX ?
		  PFART_MAX_ENTRIES : PFART_ENTRIES_LEAF_MAX;

	return min_t(u32, max, pfart_data_size(klass) / 4);
}

/* Entry @i of @m's order array, and its store (a reader may race it). */
static inline u32 pfart_order(const struct pfart_meta *m, u32 i)
{
	if (m->cap > PFART_ENTRIES_LEAF_MAX)
		return READ_ONCE(((const u16 *)m->order)[i]);
	return READ_ONCE(((const u8 *)m->order)[i]);
}

static inline void pfart_order_set(struct pfart_meta *m, u32 i, u32 e)
{
	if (m->cap > PFART_ENTRIES_LEAF_MAX)
		WRITE_ONCE(((u16 *)m->order)[i], e);
	else
		WRITE_ONCE(((u8 *)m->order)[i], e);
}

/* One-byte fingerprint of a key (§3.1). */
static inline u8 pfart_fp(const u8 *k, u32 len)
{
	u32 h = 2166136261U;

	while (len--)
		h = (h ^ *k++) * 16777619U;
	return h ^ h >> 8 ^ h >> 16 ^ h >> 24;
}

/* Is @off a plausible node of @size bytes (inside the data area)? */
static inline bool pfart_off_ok(const struct pfart *t, u64 off, u32 size)
{
	return off >= t->data_off && !(off & (PMIDX_MIN_OBJ - 1)) &&
	       off + size <= t->pm->size && off + size > off;
}

/* ---- meta.c --------------------------------------------------------------- */

struct pfart_meta *pfart_meta_of(const struct pfart *t, u64 off);
void pfart_meta_set(struct pfart *t, u64 off, struct pfart_meta *m);
struct pfart_meta *pfart_meta_alloc(struct pfart *t, u8 klass, gfp_t gfp);
void pfart_meta_free(struct pfart *t, struct pfart_meta *m);
int pfart_mdir_ensure(struct pfart *t, u64 off, gfp_t gfp);
int pfart_mdir_init(struct pfart *t);
void pfart_mdir_free(struct pfart *t);
int pfart_reserve_fill(struct pfart *t);
void pfart_reserve_settle(struct pfart *t);
void pfart_reserve_drain(struct pfart *t);
struct pfart_leaf *pfart_leaf_take(struct pfart *t, u8 klass,
				   struct pfart_meta **m);
void pfart_leaf_drop(struct pfart *t, struct pfart_leaf *l);
void pfart_leaf_retire(struct pfart *t, struct pfart_leaf *l);
void pfart_inner_retire(struct pfart *t, u64 off);

/* ---- leaf.c --------------------------------------------------------------- */

/* A record of a leaf array, decoded (pointers into the array). */
struct pfart_view {
	const u8	*key;
	u32		klen;
	u32		vfield;
	const u8	*val;		/* inline bytes, or the blob word */
};

u32 pfart_rec_bytes(const struct pfart_rec *r);
int pfart_leaf_view(const struct pfart_leaf *l, const struct pfart_meta *m,
		    u32 leaf_size, int e, struct pfart_view *v);
int pfart_leaf_view_pos(const struct pfart_leaf *l, u32 pos,
			struct pfart_view *v);
int pfart_leaf_find(const struct pfart *t, const struct pfart_leaf *l,
		    const struct pfart_meta *m, const u8 *key, u32 klen);
bool pfart_leaf_fits(const struct pfart_leaf *l, const struct pfart_meta *m,
		     u32 bytes, bool entry);
u64 pfart_leaf_append(struct pfart *t, struct pfart_leaf *l,
		      struct pfart_meta *m, const struct pfart_rec *r, int old);
u32 pfart_leaf_live_after(struct pfart_leaf *l, struct pfart_meta *m, int e);
u64 pfart_leaf_invalidate(struct pfart *t, struct pfart_leaf *l,
			  struct pfart_meta *m, int e);
void pfart_leaf_init(struct pfart *t, struct pfart_leaf *l, u8 klass,
		     u32 depth, const u8 *path);
void pfart_leaf_fill(struct pfart *t, struct pfart_leaf *l,
		     struct pfart_meta *m, const struct pfart_rec *r, u32 n);
void pfart_rec_of_view(const struct pfart_view *v, struct pfart_rec *r);
int pfart_read_value(struct pfart *t, const struct pfart_view *v, u8 *dst,
		     u32 cap, u32 *vlen);
u64 pfart_view_blob(const struct pfart_view *v);

/* recovery and check: parse the records into @m */
struct pfart_parse {
	u32		records;	/* valid ones */
	u32		dups;		/* earlier copies invalidated */
	u64		blob_bytes;
	const char	*why;
};

int pfart_leaf_parse(struct pfart *t, struct pfart_leaf *l,
		     struct pfart_meta *m, bool fix, struct pfart_parse *p);

/* ---- node.c --------------------------------------------------------------- */

u32 pfart_inner_obj(u8 type);
u32 pfart_inner_cap(u8 type);
u8 pfart_inner_type_for(u32 n);
__le64 *pfart_child_word(struct pfart_inner *n, u8 b);
u64 pfart_child(const struct pfart_inner *n, u8 b);
u64 pfart_child_after(const struct pfart_inner *n, int b, u8 *kb);
u32 pfart_inner_count(const struct pfart_inner *n);
u32 pfart_inner_entries(const struct pfart_inner *n, u8 *keys, u64 *child);
int pfart_inner_add(struct pfart *t, struct pfart_inner *n, u8 b, u64 child);
void pfart_inner_remove(struct pfart *t, struct pfart_inner *n, u8 b);
struct pfart_inner *pfart_inner_new(struct pfart *t, u8 type, u32 depth,
				    const u8 *prefix, u32 plen);
__le64 *pfart_inner_slot(struct pfart_inner *n, u32 i, u8 b);
void pfart_inner_seal(struct pfart *t, struct pfart_inner *n);
void pfart_inner_drop(struct pfart *t, struct pfart_inner *n);
bool pfart_inner_ok(const struct pfart *t, const struct pfart_inner *n);
bool pfart_leaf_hdr_ok(const struct pfart *t, const struct pfart_leaf *l);
void pfart_publish(struct pfart *t, __le64 *word, u64 val);

/* ---- tree.c --------------------------------------------------------------- */

int pfart_find_leaf(struct pfart *t, const u8 *key, u32 klen,
		    struct pfart_leaf **lp, u64 *ver);
int pfart_path_to(struct pfart *t, const u8 *key, u32 klen,
		  struct pfart_path *p, u32 *mismatch);

/* ---- smo.c ---------------------------------------------------------------- */

struct pfart_put {
	const u8	*key;
	u32		klen;
	struct pfart_rec rec;
	u32		flags;
	u64		old_blob;	/* out: to retire */
	bool		added;		/* out: a new key */
};

int pfart_smo_put(struct pfart *t, struct pfart_put *pp);
int pfart_smo_prune(struct pfart *t, const u8 *key, u32 klen);

/* ---- recovery.c ----------------------------------------------------------- */

int pfart_recover(struct pfart *t, const struct pmidx_recover *rc);

/* the walk of every reachable node (recovery, check, drop-index) */
struct pfart_walk {
	/* each node's offset before it is read (a trace marks it here) */
	int	(*node)(struct pfart *t, struct pfart_walk *w, u64 off);
	/* each leaf array once checked, with its path */
	int	(*leaf)(struct pfart *t, struct pfart_walk *w, u64 off,
			const u8 *path, u32 depth);
	void	*ctx;
	bool	validate;	/* check every word before following it */
	bool	fix;		/* clear N48 slots no index byte names */
	u32	maxgen;		/* highest generation of a lock word seen */
	u64	inners, leaves, inner_bytes;
	const char *why;
};

int pfart_walk(struct pfart *t, struct pfart_walk *w);

/* ---- scan.c / pfart.c / check.c ------------------------------------------- */

int pfart_scan(struct pfart *t, const u8 *start, u32 start_len, bool after,
	       const u8 *end, u32 end_len, struct pmidx_scan_sink *sink);

s64 pfart_sum(struct pfart *t, size_t field);
int pfart_writer_enter(struct pfart *t, bool nowait);
bool pfart_retry(struct pfart *t, unsigned int *tries, bool writer);
void pfart_freeze(struct pfart *t);
void pfart_thaw(struct pfart *t);
int pfart_check(struct pfart *t, u64 *keys, const char **why);

#endif /* _PMIDX_PFART_H */
