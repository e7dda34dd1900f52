/* SPDX-License-Identifier: GPL-2.0 */
/*
 * CCL-BTree engine: DRAM structures and the internal interface between
 * the engine's files. See ccl.c for the design and the protocols.
 *
 * Coding conventions in this engine:
 *  - "word": a key or value word as stored in a slot (format.h): the raw
 *    8 bytes, or the little-endian offset of a blob; @flags (CCL_F_*)
 *    says which.
 *  - Every data-path operation runs inside an epoch section of the
 *    index's private epoch (t->epoch, preemption disabled): DRAM nodes,
 *    leaves and blobs unlinked by others stay readable until it ends.
 *    Nothing in a section sleeps; operations that need memory return
 *    CCL_NEEDRES with their needs in a struct ccl_res, the caller leaves
 *    the section, allocates and retries.
 *  - Buffer node locks are taken left to right only; a buffer node lock
 *    may be held while inner nodes are locked, never the reverse (merges
 *    use trylock for the left sibling).
 */
#ifndef _PMIDX_CCL_H
#define _PMIDX_CCL_H

#include <linux/atomic.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/types.h>
#include "core/engine.h"
#include "core/epoch.h"
#include "core/gc.h"
#include "core/pool.h"
#include "core/prefetch.h"
#include "core/wal.h"
#include "format.h"

#define CCL_NBATCH_MAX		7
#define CCL_FANOUT		32
/*
 * Timestamps (ccl.c): recovery refuses any above CCL_TS_LIMIT, so a write
 * is refused once its node's clock passes CCL_TS_LIMIT - CCL_TS_SLACK
 * (ccl_ts_near_limit()): the slack is for the timestamps the flush of
 * what it buffered, merges and the detach still take after the last
 * write let through. Collections flush such a node rather than copy its
 * buffered KVs to the new log side again and again (gc.c), so other
 * nodes' writes cannot walk its clock up.
 */
#define CCL_TS_LIMIT		(PMIDX_WAL_TS_MAX - (1ULL << 32))
#define CCL_TS_SLACK		(1ULL << 24)
#define CCL_TS_RESET		(1ULL << 46)
#define CCL_NEEDRES		1	/* positive: "allocate and retry" */
#define CCL_RETRY		2	/* positive: "call again" */

/* ---- keys ------------------------------------------------------------ */

/* An immutable key owned by a buffer node (its low fence). */
struct ccl_fence {
	u8	len;
	u8	key[];
};

/* ---- buffer nodes (buffer.c) ----------------------------------------- */

/*
 * The 8-byte header word of a buffer node (the paper's compressed header):
 *   bits  0..39  leaf offset >> 8
 *        40..46  epoch bits: the log side holding slot i's newest entry
 *        47..49  position counter: slots 0..pos-1 hold unflushed KVs
 *            50  obsolete (merged away; restart from the root)
 *            51  locked
 *        52..63  version, bumped by every unlock that changed something
 */
#define BN_LEAF_MASK		((1ULL << 40) - 1)
#define BN_EPOCH_SHIFT		40
#define BN_POS_SHIFT		47
#define BN_POS_MASK		(7ULL << BN_POS_SHIFT)
#define BN_OBSOLETE		(1ULL << 50)
#define BN_LOCKED		(1ULL << 51)
#define BN_VER_INC		(1ULL << 52)

struct ccl_kv {
	u64	key;
	u64	val;
};

/* One KV of a batch (flush, overflow, recovery); see leaf.c. */
struct ccl_ent {
	u64	key, val;
	u64	okey, oval;	/* words of the leaf slot it replaces */
	u64	ts;		/* recovered entries: their timestamp */
	u8	flags;		/* CCL_F_* */
	u8	fp;
	s8	lslot;		/* live leaf slot with this key, -1 if none */
	u8	oflags;		/* that slot's KIND/VIND flags */
};

/*
 * Does batch entry @e update its live leaf slot in place (leaf.c,
 * "Updates in place")? A put of an inline key and an inline value over an
 * inline value: only the slot's value word changes, and no blob is
 * involved. An indirect key takes a new slot, as the buffer node keeps
 * the batch's key blob as a read cache and the leaf must then name that
 * blob, not the slot's older one; so does a blob value, which a crash
 * before the commit would leave named both by the slot and by its own
 * log entry, newer than the leaf (recovery refuses a shared blob).
 */
static inline bool ccl_ent_in_place(const struct ccl_ent *e)
{
	return e->lslot >= 0 &&
	       !((e->flags | e->oflags) & (CCL_F_TOMB | CCL_F_KIND | CCL_F_VIND));
}

/*
 * Recovered KVs that did not fit the slots (see recovery.c): distinct
 * keys in ascending key order (scans merge them as they are), immutable
 * once published; a node with an overflow has no unflushed slots.
 */
struct ccl_ovf {
	u32		n;
	struct ccl_ent	e[];
};

/*
 * The leaf's sorted permutation (DRAM only, for scans). @perm lists the
 * leaf's live slots in ascending key order, 4 bits per slot (nibble i =
 * the i-th smallest), as many as the bitmap has bits. It is valid iff
 * @ptag equals ccl_perm_tag() of the leaf's meta word (bitmap and commit
 * sequence); CCL_PTAG_NONE matches no meta word.
 *
 * Rule: @perm and @ptag are written only with the buffer node locked:
 *  - a writer that changes the leaf (ccl_flush(): commit and split;
 *    merge_locked(): the left sibling) sets @ptag to CCL_PTAG_NONE before
 *    it unlocks, so no permutation outlives a commit even if the 10-bit
 *    commit sequence wraps to the same tag;
 *  - a scan that found it invalid sorts its own validated snapshot and
 *    installs the result only if it can lock the node with the very
 *    header word it validated (one compare-and-swap, never a wait), i.e.
 *    nothing changed since; it unlocks with a version bump, so readers
 *    that saw the old pair retry as after any write.
 * Readers read both words inside their optimistic section, like the
 * slots. Zeroed (a new node) matches only an empty leaf of sequence 0,
 * for which the empty permutation is right. Never persisted: the PM
 * layout and the crash protocol do not know it exists; recovery builds
 * nodes with it zeroed.
 */
#define CCL_PTAG_NONE		(1U << 31)

static inline u32 ccl_perm_tag(u64 meta)
{
	return meta & (CCL_BITMAP_MASK |
		       (u64)CCL_SEQ_MASK << CCL_SEQ_SHIFT);
}

static inline unsigned int ccl_perm_at(u64 perm, unsigned int i)
{
	return (perm >> (4 * i)) & 0xf;
}

/**
 * struct ccl_bnode - DRAM buffer node, one per PM leaf
 * @hdr:   the header word (above); everything below is written only
 *         with the lock held and read optimistically under the version
 * @sflag: per slot CCL_F_* of the KV in the slot
 * @cache: slots holding KVs already flushed to the leaf (read cache);
 *         always disjoint from 0..pos-1
 * @sfp:   per slot fingerprint of the key (as in the leaf)
 * @perm:  the leaf's live slots in key order, valid iff @ptag matches
 *         the leaf (see "sorted permutation" above)
 * @ptag:  ccl_perm_tag() of the leaf's meta word @perm was made for
 * @next:  right neighbour (same order as the leaf list); stored with
 *         release, loaded with acquire: a reader follows it to the
 *         neighbour's @low before its version check
 * @npfx:  ccl_pfx() of @next's @low (0 without @next), written with
 *         @next under the lock (ccl_bn_set_next()): a reader tells most
 *         keys apart from the neighbour's range without touching it
 * @ovf:   recovered KVs beyond the slots, drained before any write
 * @low:   low fence key, immutable (the head node's is empty)
 * @clock: the last timestamp handed out for this node's range, written
 *         under the lock (ccl_next_ts(); ccl.c, "Timestamps")
 * @slot:  t->nbatch slots
 */
struct ccl_bnode {
	atomic64_t		hdr;
	u8			sflag[CCL_NBATCH_MAX];
	u8			cache;
	u8			sfp[CCL_NBATCH_MAX];
	u8			pad;
	u64			perm;
	u32			ptag;
	struct ccl_bnode	*next;
	struct ccl_ovf		*ovf;
	const struct ccl_fence	*low;
	u64			npfx;
	u64			clock;
	struct ccl_kv		slot[];
};

static inline u64 bn_leaf(u64 h)
{
	return (h & BN_LEAF_MASK) << 8;
}

static inline unsigned int bn_pos(u64 h)
{
	return (h & BN_POS_MASK) >> BN_POS_SHIFT;
}

static inline u64 bn_set_pos(u64 h, unsigned int pos)
{
	return (h & ~BN_POS_MASK) | (u64)pos << BN_POS_SHIFT;
}

static inline unsigned int bn_ebit(u64 h, unsigned int i)
{
	return (h >> (BN_EPOCH_SHIFT + i)) & 1;
}

static inline u64 bn_set_ebit(u64 h, unsigned int i, unsigned int side)
{
	h &= ~(1ULL << (BN_EPOCH_SHIFT + i));
	return h | (u64)side << (BN_EPOCH_SHIFT + i);
}

/*
 * A pointer an optimistic reader follows before it validates the version
 * (struct ccl_bnode @next, struct ccl_inode @fence and @child): stored
 * with release, so what it names is complete first, and loaded with
 * acquire (the pair ThreadSanitizer can see; it ignores fences).
 */
#define ccl_store_link(p, v)	smp_store_release(p, v)
/* pairs with ccl_store_link() */
#define ccl_load_link(p)	smp_load_acquire(p)

/* ---- inner nodes (inner.c) ------------------------------------------- */

/*
 * An inner node: entry i routes keys in [fence[i], fence[i + 1]) to
 * child[i]; level 0 nodes point to buffer nodes. pfx[i] caches the first
 * 8 bytes of fence[i] big-endian, so most comparisons are one integer
 * compare. ver is an optimistic lock: bit 1 set while a writer holds it,
 * +4 per write (as in Leis et al., "Optimistic Lock Coupling").
 * fence[] and child[] are stored with release and loaded with acquire: an
 * optimistic reader follows them before it validates ver, so what they
 * name is complete before they can be seen (a dependency would do in the
 * kernel, not in the model ThreadSanitizer checks: it ignores fences).
 * A search reads the header, the prefixes and one child (fence[] only on
 * a prefix tie): child[] follows pfx[] so that one prefetch of the lines
 * up to fence[] covers them all (inner.c, IN_SEARCHED).
 * lhint[] (last level only): the leaf of each child buffer node, as its
 * header names it (offset >> 8; 0 past 1 TiB), so a lookup prefetches
 * the buffer node and its leaf at once instead of one after the other.
 * A hint only: written with the child, never trusted.
 */
struct ccl_inode {
	atomic64_t		ver;
	u16			count;
	u8			level;
	u64			pfx[CCL_FANOUT];
	void			*child[CCL_FANOUT];
	u32			lhint[CCL_FANOUT];
	const struct ccl_fence	*fence[CCL_FANOUT];
};

/* ---- resources for structure changes ---------------------------------- */

#define CCL_SPARE_INODES	32

/**
 * struct ccl_res - memory allocated outside epoch sections, for when an
 *                  atomic allocation inside one failed (see split.c)
 * @bn:      a spare buffer node
 * @fence:   a spare fence with room for PMIDX_KEY_MAX bytes
 * @want_bn, @want_fence: the splitter could not get one
 * @want_in: spare inner nodes the splitter wants in t->spare
 * @want_log: a log chunk could not get its DRAM side atomically (the log
 *           answered -ENOMEM): make one ready (pmidx_wal_reserve())
 * @want_room: this CPU's epoch list had no room for a DRAM retiree
 *           (pmidx_epoch_room()): free what was retired (a barrier)
 * @tries:   rounds so far, to give up under lasting memory pressure
 */
struct ccl_res {
	struct ccl_bnode	*bn;
	struct ccl_fence	*fence;
	bool			want_bn, want_fence, want_log, want_room;
	unsigned int		want_in;
	unsigned int		tries;
};

#define CCL_STASH_MAX		20

/* Inner nodes set aside by one splitter for its separator inserts. */
struct ccl_stash {
	unsigned int		cnt;
	struct ccl_inode	*n[CCL_STASH_MAX];
};

/* ---- the index --------------------------------------------------------- */

struct ccl_sbuf;

/*
 * Per-CPU statistics. @keys: the live key counter, moved by writes that
 * add or remove a key (buffer.c); CPU 0's also holds the count recovery
 * found. Their sum is the key count (ccl_sum_keys(), STATS). @stamps:
 * timestamps handed out (ccl_next_ts()); the checker's test for writes.
 */
struct ccl_pcpu {
	u64	get, put, del, scan;
	u64	buffer_hits;
	u64	leaf_flushes;
	u64	splits, merges;
	u64	log_appends;
	u64	stamps;
	s64	keys;
};

/**
 * struct ccl_tree - an open ccl index (DRAM)
 * @root:      the PM root object
 * @nbatch:    buffer slots per node (ccl_nbatch when opened)
 * @ready:     the root is initialised (else the index is empty and the
 *             first write initialises it under @init_lock)
 * @head:      PM offset of the first leaf
 * @bhead:     its buffer node (never merged away)
 * @iroot:     inner root; @height its level + 1
 * @epoch:     reclamation of DRAM nodes, leaves and blobs of this index
 * @ts_base:   the newest timestamp on media at attach (node clocks
 *             start there)
 * @side:      the GC epoch: log side new entries go to
 * @wal:       the per-CPU log
 * @gc:        the GC thread; @gc_lock serialises collections
 * @gc_live:   log bytes left by the last collection (all live)
 * @gc_full_flushes: buffer nodes collections flushed because the log had
 *             no chunk for their copies (gc.c; under @gc_lock)
 * @gc_failed: the last collection failed; the next one recycles the same
 *             old side without flipping (gc.c; under @gc_lock)
 * @spare:     inner nodes kept for splits (@spare_lock)
 * @sbuf:      a scan's record buffer kept for the next scan with a record
 *             larger than its stack buffer (ccl.c, scans; xchg/cmpxchg)
 */
struct ccl_tree {
	struct pmidx_index	*idx;
	struct pmidx_pool	*pool;
	struct pmidx_pmem	*pm;
	struct ccl_root		*root;
	unsigned int		nbatch;
	u32			wal_chunk;
	bool			ready;
	struct mutex		init_lock;
	u64			head;
	struct ccl_bnode	*bhead;
	struct ccl_inode	*iroot;
	atomic_t		height;
	struct pmidx_epoch	epoch;
	u64			ts_base;
	unsigned int		side;
	struct pmidx_wal	*wal;
	struct pmidx_gc		gc;
	struct mutex		gc_lock;
	atomic64_t		gc_runs;
	u64			gc_live;
	u64			gc_full_flushes;
	bool			gc_failed;
	atomic64_t		nleaves;
	atomic64_t		ninodes;
	atomic64_t		blob_bytes;
	atomic_t		ovf_nodes;
	spinlock_t		spare_lock;
	unsigned int		nspare;
	struct ccl_inode	*spare[CCL_SPARE_INODES];
	struct ccl_sbuf		*sbuf;
	struct ccl_pcpu __percpu *st;
	u64			recovery_ns;
	u64			replayed;
};

#define ccl_stat_inc(t, field)	this_cpu_inc((t)->st->field)

static inline void *ccl_ptr(struct ccl_tree *t, u64 off)
{
	return pmidx_ptr(t->pm, off);
}

static inline struct ccl_leaf *ccl_bn_leaf(struct ccl_tree *t, u64 h)
{
	return ccl_ptr(t, bn_leaf(h));
}

static inline size_t ccl_bnode_size(const struct ccl_tree *t)
{
	return sizeof(struct ccl_bnode) + t->nbatch * sizeof(struct ccl_kv);
}

/* The whole leaf: a lookup reads its meta line, then a slot's line. */
static inline void ccl_leaf_prefetch(struct ccl_tree *t, u64 h)
{
	pmidx_prefetch_node(ccl_bn_leaf(t, h), sizeof(struct ccl_leaf));
}

/* The root is initialised (and the DRAM tree built). */
static inline bool ccl_ready(struct ccl_tree *t)
{
	/* pairs with the release in tree_init() */
	return smp_load_acquire(&t->ready);
}

/* @b's writes are refused (ccl.h, CCL_TS_SLACK); @b locked. */
static inline bool ccl_ts_near_limit(const struct ccl_bnode *b)
{
	return b->clock > CCL_TS_LIMIT - CCL_TS_SLACK;
}

/*
 * A timestamp for a change to @b's range (a log entry, a leaf commit);
 * @b locked. @stamps counts them for the checker (check.c), which needs
 * the count visible before the key counter the change moves later: the
 * kernel build is x86-64 only (Kbuild), where stores are not reordered.
 */
static inline u64 ccl_next_ts(struct ccl_tree *t, struct ccl_bnode *b)
{
	this_cpu_inc(t->st->stamps);
	return ++b->clock;
}

/* kv.c */
u8 ccl_fp(const u8 *k, u32 len);

/*
 * The slots of @l whose fingerprint is @fp, live or not (the caller ANDs
 * the bitmap): the 14 fingerprints read as two words (the second ends
 * with vind, masked off) and compared bytewise at once, instead of a
 * load and a branch per live slot. An optimistic read like the others:
 * the caller validates the node before trusting it.
 */
static inline u32 ccl_fp_match(const struct ccl_leaf *l, u8 fp)
{
	const __le64 *w = (const __le64 *)l->fp;
	const u64 lo7 = 0x7f7f7f7f7f7f7f7fULL, rep = 0x0101010101010101ULL * fp;
	u64 x0 = le64_to_cpu(READ_ONCE(w[0])) ^ rep;
	u64 x1 = le64_to_cpu(READ_ONCE(w[1])) ^ rep;

	BUILD_BUG_ON(offsetof(struct ccl_leaf, fp) % 8 ||
		     offsetof(struct ccl_leaf, vind) != offsetof(struct ccl_leaf, fp) + 14 ||
		     CCL_LEAF_SLOTS != 14);
	/* 0x80 in each byte that is zero, exactly (no borrow between bytes) */
	x0 = ~(((x0 & lo7) + lo7) | x0 | lo7);
	x1 = ~(((x1 & lo7) + lo7) | x1 | lo7);
	/* byte i's 0x80 to bit i of the top byte */
	x0 = ((x0 >> 7) * 0x0102040810204080ULL) >> 56;
	x1 = ((x1 >> 7) * 0x0102040810204080ULL) >> 56;
	return (x0 | x1 << 8) & CCL_BITMAP_MASK;
}
u64 ccl_pfx(const u8 *k, u32 len);
const u8 *ccl_word_bytes(const struct ccl_tree *t, const u64 *w, bool ind,
			 u32 *len);
int ccl_word_read(struct ccl_tree *t, u64 w, bool ind, void *dst, u32 cap,
		  u32 *len);
bool ccl_key_eq(struct ccl_tree *t, u64 w, bool ind, const u8 *k, u32 klen);
int ccl_key_cmp_word(const struct ccl_tree *t, u64 w, bool ind, const u8 *k,
		     u32 klen);
int ccl_word_cmp(const struct ccl_tree *t, u64 a, bool aind, u64 b, bool bind);
int ccl_fence_cmp(const struct ccl_fence *f, const u8 *k, u32 klen);
int ccl_encode(struct ccl_tree *t, const u8 *p, u32 len, u64 *w, bool *ind);
void ccl_free_word(struct ccl_tree *t, u64 w);
void ccl_retire_word(struct ccl_tree *t, u64 w);
void ccl_release_word(void *ctx, u64 off);
void ccl_retire_dram(struct ccl_tree *t, void *p);

/*
 * Set @b's right neighbour, @b locked (or not yet published): @npfx first,
 * both read under @b's version, and @nx complete before it is linked.
 */
static inline void ccl_bn_set_next(struct ccl_bnode *b, struct ccl_bnode *nx)
{
	WRITE_ONCE(b->npfx, nx ? ccl_pfx(nx->low->key, nx->low->len) : 0);
	ccl_store_link(&b->next, nx);
}

/*
 * Does @k (prefix @kpfx) belong to the right neighbour @nx, or further
 * right? @nx and @npfx as read from one node under its version or lock.
 * Prefixes order keys as memcmp does, so only a tie reads @nx's fence.
 */
static inline bool ccl_bn_past(const struct ccl_bnode *nx, u64 npfx,
			       u64 kpfx, const u8 *k, u32 klen)
{
	if (!nx)
		return false;
	if (kpfx != npfx)
		return kpfx > npfx;
	return ccl_fence_cmp(nx->low, k, klen) <= 0;
}

static inline u64 ccl_w2off(u64 w)
{
	return le64_to_cpu((__force __le64)w);
}

static inline u64 ccl_off2w(u64 off)
{
	return (__force u64)cpu_to_le64(off);
}

/* buffer.c */
struct ccl_bnode *ccl_bnode_make(struct ccl_tree *t, struct ccl_bnode *bn,
				 struct ccl_fence *low, u64 leaf, u64 clock);
struct ccl_bnode *ccl_bnode_alloc(struct ccl_tree *t, gfp_t gfp);
void ccl_bnode_free(struct ccl_tree *t, struct ccl_bnode *b);
struct ccl_fence *ccl_fence_alloc(const u8 *k, u32 len, gfp_t gfp);
u64 ccl_bn_lock(struct ccl_bnode *b);
void ccl_bn_unlock(struct ccl_bnode *b, u64 h);
void ccl_bn_unlock_clean(struct ccl_bnode *b, u64 h);
u64 ccl_bn_read_begin(struct ccl_bnode *b);
bool ccl_bn_read_retry(struct ccl_bnode *b, u64 h);
struct ccl_bnode *ccl_find_lock(struct ccl_tree *t, struct ccl_bnode *from,
				const u8 *k, u32 klen, u64 *h);
int ccl_buf_find(struct ccl_tree *t, struct ccl_bnode *b, u64 h,
		 const u8 *k, u32 klen, u8 fp, bool unflushed);
void ccl_cache_drop(struct ccl_tree *t, struct ccl_bnode *b, u64 h,
		    const u8 *k, u32 klen, u8 fp);

/* The leaf changed under @b's lock: its permutation is stale. */
static inline void ccl_perm_drop(struct ccl_bnode *b)
{
	WRITE_ONCE(b->ptag, CCL_PTAG_NONE);
}

struct ccl_wreq {
	const u8	*key;
	u32		klen;
	u64		kw, vw;		/* encoded words (fresh blobs) */
	u8		flags;		/* CCL_F_* of kw/vw, TOMB for deletes */
	u8		fp;
	bool		insert;		/* PMIDX_PUT_INSERT */
	bool		nowait;		/* PMIDX_WRITE_NOWAIT */
	bool		kw_used, vw_used; /* ownership passed to the index */
};
int ccl_buf_write(struct ccl_tree *t, struct ccl_wreq *r, struct ccl_res *res);

/* leaf.c */
int ccl_leaf_find(struct ccl_tree *t, struct ccl_leaf *l, u32 bitmap,
		  const u8 *k, u32 klen, u8 fp);
void ccl_leaf_resolve(struct ccl_tree *t, struct ccl_leaf *l, u32 bitmap,
		      struct ccl_ent *e, unsigned int n);
void ccl_leaf_commit(struct ccl_tree *t, struct ccl_leaf *l, u32 bitmap,
		     struct ccl_ent *e, unsigned int n, u64 ts);
void ccl_leaf_put_slot(struct ccl_leaf *l, unsigned int s, u64 key, u64 val,
		       u8 fp, bool vind, u16 *vindw);
void ccl_leaf_switch(struct ccl_tree *t, struct ccl_leaf *l, u32 bitmap,
		     u64 next, u64 ts);
void ccl_leaf_publish(struct ccl_tree *t, struct ccl_leaf *l,
		      unsigned int lines, u16 vind, u64 ts, u32 bitmap,
		      u64 next);
void ccl_retire_replaced(struct ccl_tree *t, struct ccl_ent *e,
			 unsigned int n);
int ccl_flush(struct ccl_tree *t, struct ccl_bnode *b, u64 *h,
	      struct ccl_ent *extra, unsigned int nextra, struct ccl_res *res);
int ccl_log_trigger(struct ccl_tree *t, struct ccl_bnode *b,
		    struct ccl_ent *x, unsigned int n);

/* split.c */
int ccl_split(struct ccl_tree *t, struct ccl_bnode *b, u64 *h,
	      struct ccl_ent *e, unsigned int n, u64 ts, struct ccl_ent *trig,
	      unsigned int ntrig, struct ccl_res *res);

/* merge.c */
void ccl_try_merge(struct ccl_tree *t, struct ccl_bnode *b, u64 *h);

/* inner.c */
struct ccl_bnode *ccl_inner_find(struct ccl_tree *t, const u8 *k, u32 klen);
void ccl_inner_insert(struct ccl_tree *t, const struct ccl_fence *f,
		      struct ccl_bnode *child, struct ccl_stash *st);
struct ccl_inode *ccl_inner_lock_parent(struct ccl_tree *t,
					struct ccl_bnode *b, int *idx);
void ccl_inner_remove(struct ccl_inode *n, int idx);
void ccl_inner_unlock(struct ccl_inode *n);
int ccl_inner_build(struct ccl_tree *t, struct ccl_bnode **bn, size_t n);
void ccl_inner_free_all(struct ccl_tree *t);
int ccl_inner_check(struct ccl_tree *t, const char **why);
struct ccl_inode *ccl_inode_alloc(gfp_t gfp);

/* resources (ccl.c) */
int ccl_res_fill(struct ccl_tree *t, struct ccl_res *res);
void ccl_res_release(struct ccl_tree *t, struct ccl_res *res);
bool ccl_stash_fill(struct ccl_tree *t, struct ccl_stash *st, unsigned int n);
void ccl_stash_return(struct ccl_tree *t, struct ccl_stash *st);

/* walking every buffer node in key order (ccl.c) */
typedef int (*ccl_walk_fn)(struct ccl_tree *t, struct ccl_bnode *b, u64 *h,
			   void *ctx);
int ccl_walk(struct ccl_tree *t, ccl_walk_fn fn, void *ctx,
	     struct ccl_res *res);

/* gc.c */
void ccl_gc_work(void *arg);
int ccl_gc_run(struct ccl_tree *t);
bool ccl_gc_behind(struct ccl_tree *t);
void ccl_gc_throttle(struct ccl_tree *t);
bool ccl_gc_reclaim(struct ccl_tree *t);
void ccl_gc_maybe_kick(struct ccl_tree *t);
int ccl_flush_all(struct ccl_tree *t);

/* recovery.c */
int ccl_recover(struct ccl_tree *t, const struct pmidx_recover *rc);

/* How the index opens its log: blobs it retires come back to its epochs. */
static inline struct pmidx_wal_cfg ccl_wal_cfg(struct ccl_tree *t, bool trace)
{
	return (struct pmidx_wal_cfg){ .chunk_size = t->wal_chunk,
		.trace = trace, .release = ccl_release_word, .ctx = t };
}

/* check.c */
int ccl_check(struct ccl_tree *t, u64 *keys, const char **why);
s64 ccl_sum_keys(struct ccl_tree *t);

/* module parameters (ccl.c) */
extern unsigned int ccl_nbatch;
extern unsigned int ccl_log_chunk_kb;
extern unsigned int ccl_th_log;
extern bool ccl_gc_naive;
extern unsigned int ccl_gc_interval_ms;

#endif /* _PMIDX_CCL_H */
