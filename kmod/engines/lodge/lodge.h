/* SPDX-License-Identifier: GPL-2.0 */
/*
 * LodgeTree engine (Wang et al., "LodgeTree: A Last-level Distributed and
 * Surrogate Buffer Tree"): DRAM structures and the interfaces between its
 * files.
 *
 *   format.h    on-media layout (root, leaves, log directory, logs)
 *   pvl.c       partitioned version log: per-CPU partitions of fixed-size
 *               logs, per-version valid counts, log reclamation
 *   leaf.c      PM leaves: search, merge, direct delete, logless split
 *               and unlink (next0/next1 + use bit)
 *   lin.c       last-level internal nodes: index part + buffer part,
 *               leaf_count, the leaf-count-based flush
 *   tree.c      upper DRAM internal nodes, descents, the hotness-aware
 *               multiple split of a last-level node
 *   recovery.c  open: rebuild the DRAM levels from the leaf list, replay
 *               the live log records, rebuild the valid counts (in
 *               parallel steps)
 *   check.c     the structural checker
 *   lodge.c     get/put/del/scan/stats, lifecycle, ops table, parameters
 *
 * Locking. @tree (a percpu_rw_semaphore) is held for reading by every
 * operation for its whole length and for writing by a last-level node
 * split (which changes the upper levels) and by the checker. Per-CPU:
 * a reader only touches its CPU's counter, so the operations share no
 * written cache line above the last-level nodes; a writer pays an RCU
 * grace period (unless one is still in effect) and waits the readers
 * out, which node splits (one per ~t->cap leaf splits) afford (README,
 * "Upper levels"). Each last-level node
 * (struct lodge_lin) has an rwlock covering it, its buffer and its
 * leaves (§III-A): readers take it shared, writers exclusive. A leaf is
 * only read or written under its node's lock; a node is only freed under
 * @tree held for writing, when no operation holds any node lock.
 * Lock order: @fmem_lock -> @tree -> node lock -> partition lock ->
 * @log_lock -> allocator. Node locks spin (preemption off): nothing
 * under them sleeps; allocations there are GFP_ATOMIC and fail the
 * operation cleanly, and a blocking write then runs again with what
 * they wanted made beforehand (struct lodge_fmem).
 *
 * Sequences. Every logged write takes the next value of @seq while it
 * holds its node's lock, so for the keys of one node, sequence order is
 * buffer order. A leaf's ts says: every logged write of a key in the
 * leaf's range with a sequence <= ts is in the leaf. It holds because a
 * flush always takes all the buffered writes of its leaf (lin.c) and
 * stores the newest sequence it applied after the bitmap commit. Recovery
 * replays only the records newer than the ts of the leaf covering the
 * key, newest per key: log versions can then be freed in any order.
 *
 * Lifetime (who may still name what, and when it is freed):
 *  - a leaf is named by its left neighbour's current next word and by
 *    its node's index part; it is freed (pmidx_free) right after the
 *    persisted store that unlinks it (leaf.c lodge_leaf_unlink()), under
 *    the node lock, so neither recovery nor a reader can reach it;
 *  - a blob is named by exactly one live leaf slot (a split's new leaf
 *    takes over the slot's words, the old slot goes off in the same
 *    commit store); it is freed right after the persisted store that
 *    drops the slot, under the node lock. Log records hold bytes, never
 *    blob offsets, so no log entry can name a blob;
 *  - a log is named by its directory slot, its partition (while current)
 *    and the buffer slots holding its records; its valid count is the
 *    number of such buffer slots, plus one while it is current. At zero,
 *    the directory slot is cleared and persisted, then the object is
 *    freed (pvl.c lodge_log_put()): every record it holds is then in a
 *    leaf or superseded by a newer record, so recovery needs none.
 */
#ifndef _PMIDX_LODGE_H
#define _PMIDX_LODGE_H

#include <linux/atomic.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/percpu-rwsem.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include "core/engine.h"
#include "core/pool.h"
#include "format.h"

#define LODGE_CAP_MAX		250	/* leaf_count is a byte */
#define LODGE_MSPLIT_MAX	8
#define LODGE_VER_STEP		1024
#define LODGE_NEED_SPLIT	1	/* positive: split the node, retry */

/* An immutable key (fences, buffered keys), owned by one DRAM place. */
struct lodge_key {
	u16	len;
	u8	b[];
};

/*
 * What one leaf flush allocates (lin.c flush_leaf(), leaf.c
 * lodge_leaf_commit()), made where a writer may sleep: a blocking write
 * whose flush found no atomic memory takes @lodge.fmem_lock, fills this
 * and runs again with it (lodge.c write_reserved()). Arrays are sized
 * for the most a flush can hold, LODGE_FMEM_ITEMS: a leaf's slots plus a
 * node's (a node may hold more than lodge_node_slots: one rebuilt over a
 * single leaf grows, a recovered one keeps its size). @keys are fences
 * for the leaves a split makes (PMIDX_KEY_MAX bytes each), which the
 * index then owns: @want of them, LODGE_FMEM_KEYS at first, all the
 * items once a split has run short (@short).
 */
#define LODGE_FMEM_ITEMS	(LODGE_SLOTS_MAX + LODGE_CAP_MAX)
#define LODGE_FMEM_KEYS		16

struct lodge_item;

struct lodge_fmem {
	struct lodge_item	*it;
	int			*g;
	u64			*newl;
	u8			*cnt;
	struct lodge_key	**f;
	u64			*blobs;
	u8			*vbuf;		/* PMIDX_VALUE_MAX bytes */
	struct lodge_key	**keys;		/* LODGE_FMEM_ITEMS slots */
	unsigned int		nkeys, want;
	bool			short_keys;
};

/* DRAM state of one log (one version). See "Lifetime" above. */
struct lodge_vlog {
	struct list_head	node;	/* t->logs, by version (@log_lock) */
	u64			off;
	u64			version;
	u32			size;
	u32			used;	/* appended bytes (partition lock) */
	u32			slot;	/* directory slot */
	atomic_t		valid;
	bool			bad;	/* a read of it hit poison (pvl.c) */
};

struct lodge_part {
	spinlock_t		lock;	/* protects @cur and its appends */
	struct lodge_vlog	*cur;
};

/*
 * A slot of a last-level node. Index part: @key the leaf's low fence
 * (NULL in slot 0: the node's own low bound), @w the leaf's pool offset.
 * Buffer part: @key the buffered key, @w the value when @vlen <= 8 (its
 * bytes, zero padded), @rec the pool offset of the log record holding
 * it, @seq the record's sequence, @flags LODGE_B_*. Everything but a
 * value over 8 bytes is in DRAM: the record is user data in pmem and is
 * only ever read machine-check safe (its value, by get, scan and flush).
 */
struct lodge_slot {
	struct lodge_key	*key;
	u64			w;
	u64			rec;
	u64			seq;
	u32			vlen;
	u32			flags;
};

#define LODGE_B_TOMB		0x1	/* a buffered delete */

/**
 * struct lodge_lin - a last-level internal node (§III-A, Fig. 4)
 * @lock:       covers the node, its buffer and its leaves
 * @cap:        slots (index part + buffer part)
 * @nidx:       index part: slots 0..nidx-1; the buffer part starts at
 *              buf_start == nidx and holds @nbuf unsorted KVs
 * @msplit:     pieces of the split that made it (M, §III-C)
 * @ps, @ls:    global counter at the penultimate and last split
 * @lo, @hi:    the node's range [lo, hi) (NULL: unbounded); @lo is the
 *              paper's split_key
 * @leaf_count: index part: keys in the leaf; buffer part: index of the
 *              leaf the buffered KV goes to (§III-B, Fig. 5)
 * @buf_ver:    buffer part: the log (version) holding the KV's record
 */
struct lodge_lin {
	rwlock_t		lock;
	u16			cap, nidx, nbuf;
	u8			msplit;
	u64			ps, ls;
	struct lodge_key	*lo, *hi;
	u8			*leaf_count;
	struct lodge_vlog	**buf_ver;
	struct lodge_slot	slot[];
};

/* Upper internal nodes (DRAM): child[i] holds keys in [key[i], key[i+1]). */
struct lodge_inode {
	u16			count;
	struct lodge_key	*key[LODGE_CAP_MAX + 1];
	void			*child[LODGE_CAP_MAX + 1];
};

/*
 * Per-CPU counters (stats, and the structure tests of lodge-crash.c):
 * @pieces[n] node splits into n pieces, @capped those whose M the
 * parent's free slots bounded (Formula 1), @log_frees logs freed,
 * @log_frees_ooo those that were not the oldest live one, @drains runs
 * of the oldest-half flush, or of the full one of a full pool (lodge.c
 * drain()); for the measurements
 * (ccl-xpline): @kvs_flushed buffered KVs taken to leaves, @rounds
 * flushes that made room in a full buffer part (lodge.c lodge_write())
 * and @round_buf the KVs their buffer parts held, @absorbed writes that
 * replaced a buffered write of their key.
 */
struct lodge_pcpu {
	u64	get, put, del, scan;
	u64	buffer_hits, flushes, leaf_writes, leaf_splits, lin_splits;
	u64	log_bytes, merges;
	u64	kvs_flushed, rounds, round_buf, absorbed;
	u64	pieces[LODGE_MSPLIT_MAX + 1], capped;
	u64	log_frees, log_frees_ooo, drains;
	s64	keys;
};

/**
 * struct lodge - an open LodgeTree index
 * @tree:      see "Locking"; protects @top, @height, @ready
 * @seq:       last log sequence handed out (the global counter of §III-C)
 * @parts:     per-CPU log partitions
 * @log_lock:  protects @logs, @dir_map, @nlogs, @next_ver, @spare_log
 * @spare_log: a log's DRAM side made where a writer could sleep, for a
 *             new log that finds atomic memory short (pvl.c)
 * @drain:     one writer at a time drains old logs (lodge.c)
 */
struct lodge {
	struct pmidx_index	*idx;
	struct pmidx_pool	*pool;
	struct pmidx_pmem	*pm;
	struct lodge_root	*root;
	struct percpu_rw_semaphore tree;
	bool			ready;
	void			*top;
	int			height;		/* 0: @top is a lodge_lin */
	u32			leaf_size, slots;
	u32			cap;		/* node slots (lodge_node_slots) */
	u32			t_node, t_split;
	u32			hotness;	/* Formula 1's t */
	bool			multi;
	u64			head;
	atomic64_t		seq;
	struct lodge_part __percpu *parts;
	struct lodge_dir	*dir;
	spinlock_t		log_lock;
	struct list_head	logs;
	struct list_head	dead;		/* unnamed logs to free after open */
	unsigned long		*dir_map;
	u32			nlogs;
	u64			next_ver;
	u32			log_size;
	struct mutex		drain;
	atomic64_t		nleaves, nlins, ninodes;
	atomic64_t		blob_bytes, log_bytes_live;
	struct lodge_pcpu __percpu *st;
	u64			recovery_ns;
	u64			replayed;
	u32			recovery_threads;	/* the most one step ran */
	/* cold: only a write short of atomic memory uses them */
	struct lodge_vlog	*spare_log;
	struct mutex		fmem_lock;
	struct lodge_fmem	fmem;
};

#define lodge_stat_inc(t, f)	this_cpu_inc((t)->st->f)
#define lodge_stat_add(t, f, n)	this_cpu_add((t)->st->f, (n))

static inline struct lodge_leaf *lodge_leaf_ptr(struct lodge *t, u64 off)
{
	return pmidx_ptr(t->pm, off);
}

static inline u64 lodge_bitmap_mask(struct lodge *t)
{
	return (1ULL << t->slots) - 1;
}

static inline int lodge_kcmp(const struct lodge_key *a, const u8 *k, u32 len)
{
	return pmidx_key_cmp(a->b, a->len, k, len);
}

/* The bytes of an 8-byte word: keys and values of 8 bytes are inline. */
static inline u64 lodge_word(const u8 *p)
{
	u64 w;

	memcpy(&w, p, 8);
	return w;
}

/* lodge.c */
struct lodge_key *lodge_key_new(const u8 *k, u32 len, gfp_t gfp);
s64 lodge_sum_keys(struct lodge *t);
extern unsigned int lodge_leaf_bytes, lodge_node_slots, lodge_t_node;
extern unsigned int lodge_t_split, lodge_hot_t, lodge_log_kb;
extern unsigned int lodge_log_max, lodge_recovery_threads;
extern bool lodge_multi_split;

/* pvl.c */
int lodge_log_reserve(struct lodge *t);
int lodge_log_append(struct lodge *t, u8 flags, const u8 *k, u32 klen,
		     const u8 *v, u32 vlen, struct lodge_vlog **vl, u64 *rec,
		     u64 *seq);
void lodge_log_put(struct lodge *t, struct lodge_vlog *v);
u64 lodge_log_cut(struct lodge *t, u32 skip);
void lodge_log_seal_all(struct lodge *t);
void lodge_log_free_all(struct lodge *t, bool persist);
const u8 *lodge_rec_key(struct lodge *t, u64 rec, u32 *klen);
int lodge_rec_value(struct lodge *t, const struct lodge_slot *b,
		    struct lodge_vlog *v, u8 *dst);

/* leaf.c */
struct lodge_item {
	const u8	*k;
	u32		klen;
	int		lslot;		/* leaf slot holding the key, -1: none */
	struct lodge_slot *b;		/* buffered write, NULL: leaf KV kept */
};

const u8 *lodge_slot_key(struct lodge *t, struct lodge_leaf *l, int s,
			 u32 *len);
int lodge_leaf_find(struct lodge *t, struct lodge_leaf *l, const u8 *k,
		    u32 klen);
int lodge_leaf_value(struct lodge *t, struct lodge_leaf *l, int s, u8 *dst,
		     u32 cap, u32 *vlen);
int lodge_leaf_commit(struct lodge *t, u64 loff, struct lodge_item *it,
		      unsigned int n, unsigned int keep, u64 ts, u64 *newl,
		      unsigned int *nnew, unsigned int per,
		      struct lodge_fmem *fm);
int lodge_leaf_delete(struct lodge *t, u64 loff, int s);
void lodge_leaf_unlink(struct lodge *t, u64 prev, u64 loff);
u64 lodge_leaf_new_head(struct lodge *t);
void lodge_leaf_free_blobs(struct lodge *t, struct lodge_leaf *l, u64 bits);
u64 lodge_leaf_next(struct lodge_leaf *l);
const u8 *lodge_leaf_fence(struct lodge *t, struct lodge_leaf *l, u32 *len);

/* lin.c */
struct lodge_lin *lodge_lin_alloc(struct lodge *t, u32 cap, gfp_t gfp);
void lodge_lin_free(struct lodge_lin *x, bool keys);
int lodge_lin_leaf(struct lodge_lin *x, const u8 *k, u32 klen);
int lodge_buf_find(struct lodge_lin *x, const u8 *k, u32 klen);
void lodge_buf_remove(struct lodge *t, struct lodge_lin *x, int j);
void lodge_lin_emptied(struct lodge *t, struct lodge_lin *x, int li);
int lodge_flush(struct lodge *t, struct lodge_lin *x, u64 cut,
		struct lodge_fmem *fm);
int lodge_fmem_fill(struct lodge *t);
void lodge_fmem_free(struct lodge *t);
int lodge_flush_all(struct lodge *t, struct lodge_lin *x, u64 cut);

/* tree.c */
struct lodge_lin *lodge_find(struct lodge *t, const u8 *k, u32 klen);
int lodge_split_lin(struct lodge *t, const u8 *k, u32 klen);
int lodge_build(struct lodge *t, struct lodge_lin **lins, size_t n);
void lodge_tree_free(struct lodge *t);
typedef int (*lodge_visit_t)(struct lodge *t, struct lodge_lin *x, void *ctx);
int lodge_walk_lins(struct lodge *t, lodge_visit_t fn, void *ctx);

/* recovery.c */
int lodge_recover(struct lodge *t, const struct pmidx_recover *rc);

/* check.c */
int lodge_check(struct lodge *t, u64 *keys, const char **why);

#endif /* _PMIDX_LODGE_H */
