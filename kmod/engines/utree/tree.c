// SPDX-License-Identifier: GPL-2.0
/*
 * uTree volatile B+-tree: inner nodes and tree-leaf arrays in DRAM.
 *
 * Concurrency is optimistic lock coupling (Leis et al., the scheme the
 * paper borrows from Masstree/FAST&FAIR for its lock-free reads): every
 * node carries a version word; readers never write, they re-check the
 * versions they passed; writers lock one leaf (CAS on the version they
 * read) and, for a split, its parent first. Splits are eager: a full
 * inner node met on the way down is split before descending, so the
 * parent of a splitting node always has room. Nodes are never merged or
 * freed while the index is open (emptied leaves stay in place), so any
 * node pointer read inside an epoch section can be dereferenced; torn
 * reads are caught by the version re-check.
 *
 * Leaf entries point at list nodes. A node referenced by a slot that a
 * reader loads inside its section cannot be freed before the reader
 * leaves (it is retired only after the writer removed it from the leaf),
 * so comparing long keys through the node's key blob is safe too.
 *
 * All modifications happen inside epoch sections (preemption off), so a
 * lock holder never sleeps: spinning on a locked node is bounded.
 */
#include <linux/errno.h>
#include <linux/lockdep.h>
#include <linux/preempt.h>
#include <linux/processor.h>
#include <linux/slab.h>
#include <linux/string.h>
#include "core/prefetch.h"
#include "utree.h"

/* ---- version locks --------------------------------------------------- */

static inline u64 ver_read(u64 *ver)
{
	u64 v;

	/* acquire: the node's contents are read after its version */
	while ((v = smp_load_acquire(ver)) & 1)
		cpu_relax();
	return v;
}

static inline bool ver_check(u64 *ver, u64 v)
{
	/* the optimistic reads complete before the version is re-read */
	smp_rmb();
	return READ_ONCE(*ver) == v;
}

static inline bool ver_upgrade(u64 *ver, u64 v)
{
	/* a preempted holder would leave its spinners spinning for good */
	lockdep_assert_preemption_disabled();
	return cmpxchg(ver, v, v + 1) == v;
}

static inline void ver_unlock(u64 *ver)
{
	/* release: the modifications are visible before the new version */
	smp_store_release(ver, READ_ONCE(*ver) + 1);
}

/* ---- memory ---------------------------------------------------------- */

/*
 * Leaves and inner nodes come from their own caches (kmalloc would put a
 * 1,072-byte leaf in a 2 KiB object), separators of any length from
 * kmalloc. A split runs inside a section, so it allocates atomically;
 * when that fails it takes a block of the kind it needs from the stash,
 * which ut_tree_reserve() refills where it may sleep.
 */
static struct kmem_cache *node_cache[UT_MEM_KEY];

#define UT_IKEY_MAX	(sizeof(struct ut_ikey) + PMIDX_KEY_MAX)

static void *mem_alloc(enum ut_mem kind, size_t size, gfp_t gfp)
{
	if (kind == UT_MEM_KEY)
		return kzalloc(size, gfp);
	return kmem_cache_zalloc(node_cache[kind], gfp);
}

static void mem_free(enum ut_mem kind, void *p)
{
	if (kind == UT_MEM_KEY)
		kfree(p);
	else
		kmem_cache_free(node_cache[kind], p);
}

static void *t_alloc(struct utree *t, enum ut_mem kind, size_t size,
		     gfp_t gfp)
{
	struct ut_tree *tr = &t->tree;
	void *p = mem_alloc(kind, size, gfp | __GFP_NOWARN);
	unsigned int n;

	if (!p && !gfpflags_allow_blocking(gfp)) {
		spin_lock(&tr->stash_lock);
		n = tr->nstash[kind];
		if (n) {
			/* WRITE_ONCE: ut_tree_stash_full() reads it unlocked */
			WRITE_ONCE(tr->nstash[kind], n - 1);
			p = tr->stash[kind][n - 1];
		}
		spin_unlock(&tr->stash_lock);
		if (p)
			memset(p, 0, size);
	}
	if (p)
		atomic64_add(size, &t->dram_bytes);
	return p;
}

static void t_free(struct utree *t, enum ut_mem kind, void *p, size_t size)
{
	if (!p)
		return;
	atomic64_sub(size, &t->dram_bytes);
	mem_free(kind, p);
}

/**
 * ut_tree_reserve - refill the split stash in sleepable context
 *
 * Context: outside any epoch section; may sleep.
 */
int ut_tree_reserve(struct utree *t)
{
	struct ut_tree *tr = &t->tree;
	enum ut_mem kind;
	bool full;
	void *p;

	for (kind = 0; kind < UT_MEM_KINDS; kind++) {
		for (full = false; !full; ) {
			/* the size is a separator's: nodes have their cache's */
			p = mem_alloc(kind, UT_IKEY_MAX, GFP_KERNEL);
			if (!p)
				return -ENOMEM;
			spin_lock(&tr->stash_lock);
			full = tr->nstash[kind] == UT_STASH_MAX;
			if (!full) {
				tr->stash[kind][tr->nstash[kind]] = p;
				WRITE_ONCE(tr->nstash[kind], tr->nstash[kind] + 1);
			}
			spin_unlock(&tr->stash_lock);
			if (full)
				mem_free(kind, p);
		}
	}
	return 0;
}

/* Is the split stash full (what ut_tree_reserve() leaves)? */
bool ut_tree_stash_full(struct utree *t)
{
	enum ut_mem kind;

	for (kind = 0; kind < UT_MEM_KINDS; kind++)
		if (READ_ONCE(t->tree.nstash[kind]) != UT_STASH_MAX)
			return false;
	return true;
}

static size_t ikey_size(u32 len)
{
	return sizeof(struct ut_ikey) + len;
}

/* A separator holding the full key of entry (@pfx, @ent). */
static struct ut_ikey *ikey_from_ent(struct utree *t, u64 pfx, u64 ent,
				     gfp_t gfp)
{
	u32 len = ut_ent_len(ent), l2;
	struct ut_ikey *ik;
	const u8 *src;
	__be64 b;

	if (len > UT_INLINE_MAX) {
		src = ut_node_key(t, ut_node(t, ut_ent_node(ent)), &l2);
		if (!src || l2 != len)
			return NULL;
	} else {
		b = cpu_to_be64(pfx);
		src = (const u8 *)&b;
	}
	ik = t_alloc(t, UT_MEM_KEY, ikey_size(len), gfp);
	if (!ik)
		return NULL;
	ik->pfx = pfx;
	ik->len = len;
	memcpy(ik->bytes, src, len);
	return ik;
}

static void ikey_free(struct utree *t, struct ut_ikey *ik)
{
	if (ik)
		t_free(t, UT_MEM_KEY, ik, ikey_size(ik->len));
}

/* ---- comparisons ----------------------------------------------------- */

/* Leaf entry (@pfx, @ent) against @k. */
static int ent_cmp(const struct utree *t, u64 pfx, u64 ent,
		   const struct ut_skey *k)
{
	u32 len = ut_ent_len(ent);

	if (pfx != k->pfx)
		return pfx < k->pfx ? -1 : 1;
	/* a key of up to 8 bytes is a prefix of the other one here */
	if (len <= UT_INLINE_MAX || k->len <= UT_INLINE_MAX)
		return (len > k->len) - (len < k->len);
	return ut_node_cmp(t, ut_ent_node(ent), k);
}

static int sep_cmp(u64 pfx, const struct ut_ikey *s, const struct ut_skey *k)
{
	if (pfx != k->pfx)
		return pfx < k->pfx ? -1 : 1;
	if (unlikely(!s))
		return 0;
	return pmidx_key_cmp(s->bytes, s->len, k->key, k->len);
}

/*
 * First of @pfx[0, n) that is >= @x, without a branch on the data (a
 * conditional move per halving: a branchy binary search mispredicts half
 * its steps). Torn reads end somewhere in [0, n]: callers validate.
 */
static unsigned int pfx_lower_bound(const u64 *pfx, unsigned int n, u64 x)
{
	unsigned int base = 0, half;

	if (!n)
		return 0;
	while (n > 1) {
		half = n / 2;
		base = READ_ONCE(pfx[base + half]) < x ? base + half : base;
		n -= half;
	}
	return base + (READ_ONCE(pfx[base]) < x);
}

/*
 * First slot of @l[0, n) whose key is >= @k (> @k with @upper); @eq
 * tells whether that slot holds @k itself. The prefixes place @k; keys
 * that share its prefix are compared in full, in order.
 */
static unsigned int leaf_bound(const struct utree *t, struct ut_leaf *l,
			       unsigned int n, const struct ut_skey *k,
			       bool upper, bool *eq)
{
	unsigned int i = pfx_lower_bound(l->pfx, n, k->pfx);
	int c;

	*eq = false;
	for (; i < n && READ_ONCE(l->pfx[i]) == k->pfx; i++) {
		c = ent_cmp(t, k->pfx, ut_load_link(&l->ent[i]), k);
		if (c > 0 || (!upper && !c)) {
			*eq = !c;
			break;
		}
	}
	return i;
}

/* Child of @in (with @n separators) whose range holds @k. */
static unsigned int inner_pos(struct ut_inner *in, unsigned int n,
			      const struct ut_skey *k)
{
	unsigned int i = pfx_lower_bound(in->pfx, n, k->pfx);

	while (i < n && READ_ONCE(in->pfx[i]) == k->pfx &&
	       sep_cmp(k->pfx, ut_load_link(&in->key[i]), k) <= 0)
		i++;
	return i;
}

/* ---- lookups --------------------------------------------------------- */

/*
 * Prefetch what a descent reads of @c, a child of @in: a leaf whole (the
 * prefixes searched, then the entry found and its neighbour), an inner
 * node's prefixes and children (its keys only break ties of prefixes).
 * A stale @c or flag (validated later) is only prefetched: harmless.
 */
static void prefetch_child(const struct ut_inner *in, const struct ut_tnode *c)
{
	const struct ut_inner *ci = container_of(c, struct ut_inner, h);

	if (READ_ONCE(in->h.over_leaves)) {
		pmidx_prefetch_node(c, sizeof(struct ut_leaf));
		return;
	}
	pmidx_prefetch_node(ci, offsetof(struct ut_inner, key));
	pmidx_prefetch_node(ci->child, sizeof(ci->child));
}

/* Optimistic descent to the leaf covering @k; *@lv := its version. */
static struct ut_leaf *descend(struct utree *t, const struct ut_skey *k,
			       u64 *lv)
{
	struct ut_tnode *n, *c;
	unsigned int cnt;
	u64 mv, v, cv;

restart:
	mv = ver_read(&t->tree.meta);
	n = ut_load_link(&t->tree.root);
	v = ver_read(&n->version);
	if (!ver_check(&t->tree.meta, mv))
		goto restart;
	while (!n->leaf) {
		struct ut_inner *in = container_of(n, struct ut_inner, h);

		cnt = READ_ONCE(in->h.count);
		c = cnt <= UT_INNER_CAP ?
		    ut_load_link(&in->child[inner_pos(in, cnt, k)]) : NULL;
		if (!c) {
			cpu_relax();
			goto restart;
		}
		prefetch_child(in, c);
		cv = ver_read(&c->version);
		if (!ver_check(&n->version, v))
			goto restart;
		n = c;
		v = cv;
	}
	*lv = v;
	return container_of(n, struct ut_leaf, h);
}

/**
 * ut_tree_get - the list node holding @k, or 0
 *
 * Context: inside an epoch section.
 */
u64 ut_tree_get(struct utree *t, const struct ut_skey *k)
{
	struct ut_leaf *l;
	unsigned int n, pos;
	u64 v, e;
	bool eq;

	for (;;) {
		l = descend(t, k, &v);
		n = READ_ONCE(l->h.count);
		if (n <= UT_LEAF_CAP) {
			pos = leaf_bound(t, l, n, k, false, &eq);
			e = eq ? ut_load_link(&l->ent[pos]) : 0;
			if (ver_check(&l->h.version, v))
				return ut_ent_node(e);
		}
		cpu_relax();
	}
}

/*
 * Where the walk to the left of @leaf (version @v) may start: its @left
 * while ut_tree.refill has not moved (struct ut_leaf), else NULL, the
 * walk then starting at @leaf->prev. *@seq: refill, read first.
 */
static struct ut_leaf *left_hint(struct utree *t, struct ut_leaf *leaf,
				 u64 v, u64 *seq)
{
	struct ut_leaf *p;

	*seq = atomic64_read_acquire(&t->tree.refill);
	p = READ_ONCE(leaf->left);
	if (!p || READ_ONCE(leaf->left_seq) != *seq)
		return NULL;
	/* @left and @left_seq are one pair: written together under the lock */
	return ver_check(&leaf->h.version, v) ? p : NULL;
}

/*
 * A walk over emptied leaves ended at @p (non-empty, or the first leaf):
 * save it for the next one, unless @leaf changed since @v (its lock is
 * taken only if it did not) or a leaf between may have been refilled
 * meanwhile (@seq old). The only write of a reader, and a rare one.
 */
static void left_hint_set(struct utree *t, struct ut_leaf *leaf, u64 v,
			  struct ut_leaf *p, u64 seq)
{
	/* the walk's reads complete before refill is read again */
	smp_rmb();
	if (atomic64_read(&t->tree.refill) != seq ||
	    !ver_upgrade(&leaf->h.version, v))
		return;
	WRITE_ONCE(leaf->left, p);
	WRITE_ONCE(leaf->left_seq, seq);
	ver_unlock(&leaf->h.version);
}

/**
 * ut_tree_find - optimistic_get() of the paper: node of @k and its
 *                predecessor
 * @pred: the list node with the largest key below @k, 0 for the head
 *
 * Both are hints that the caller checks against the list (adjacency).
 * Return: the node holding @k, or 0.
 * Context: inside an epoch section.
 */
u64 ut_tree_find(struct utree *t, const struct ut_skey *k, u64 *pred)
{
	struct ut_leaf *leaf, *l, *p, *hint;
	unsigned int n, pos, c, steps;
	u64 v, pv, cur, e, seq;
	bool eq, jump;

	for (;;) {
		leaf = descend(t, k, &v);
		n = READ_ONCE(leaf->h.count);
		if (n > UT_LEAF_CAP)
			goto retry;
		pos = leaf_bound(t, leaf, n, k, false, &eq);
		cur = eq ? ut_ent_node(ut_load_link(&leaf->ent[pos])) : 0;
		e = pos ? ut_load_link(&leaf->ent[pos - 1]) : 0;
		if (!ver_check(&leaf->h.version, v))
			goto retry;
		if (pos) {
			*pred = ut_ent_node(e);
			return cur;
		}
		/* first of its leaf: last key of the nearest non-empty left leaf */
		hint = left_hint(t, leaf, v, &seq);
		for (l = leaf, steps = 0;; l = p, steps++) {
			jump = l == leaf && hint;
			p = jump ? hint : ut_load_link(&l->prev);
			if (!p) {
				/* all empty to the left: jump to the first leaf */
				if (steps > 1)
					left_hint_set(t, leaf, v, l, seq);
				*pred = 0;
				return cur;
			}
			pv = ver_read(&p->h.version);
			c = READ_ONCE(p->h.count);
			e = c && c <= UT_LEAF_CAP ? ut_load_link(&p->ent[c - 1]) : 0;
			if (!ver_check(&p->h.version, pv) || c > UT_LEAF_CAP)
				goto retry;
			/*
			 * A split of @p moves l->prev before it unlocks; a jump
			 * holds while no leaf between was refilled (and split()
			 * bumps refill before it moves anything).
			 */
			if (jump ? atomic64_read(&t->tree.refill) != seq :
			    READ_ONCE(l->prev) != p)
				goto retry;
			if (c) {
				if (steps > 1)
					left_hint_set(t, leaf, v, p, seq);
				*pred = ut_ent_node(e);
				return cur;
			}
		}
retry:
		cpu_relax();
	}
}

/* ---- modifications --------------------------------------------------- */

/*
 * Split @n (version @v) under its @parent (version @pv), or under the
 * tree meta lock (version @mv) when @n is the root.
 * Return: 0 (split done), -EAGAIN (raced: restart), -ENOMEM.
 */
static int split(struct utree *t, struct ut_inner *parent, u64 pv, u64 mv,
		 struct ut_tnode *n, u64 v)
{
	enum ut_mem kind = n->leaf ? UT_MEM_LEAF : UT_MEM_INNER;
	size_t nsize = n->leaf ? sizeof(struct ut_leaf) : sizeof(struct ut_inner);
	u64 *upper = parent ? &parent->h.version : &t->tree.meta;
	struct ut_inner *root = NULL;
	struct ut_tnode *sib;
	struct ut_ikey *sep;
	unsigned int cnt, m, i, pc;
	u64 seppfx;
	int ret = -ENOMEM;

	sib = t_alloc(t, kind, nsize, GFP_ATOMIC);
	if (!parent)
		root = t_alloc(t, UT_MEM_INNER, sizeof(*root), GFP_ATOMIC);
	if (!sib || (!parent && !root))
		goto out_free;
	ret = -EAGAIN;
	if (!ver_upgrade(upper, parent ? pv : mv))
		goto out_free;
	if (!ver_upgrade(&n->version, v))
		goto out_unlock_upper;
	cnt = n->count;
	if (cnt < 2)
		goto out_unlock;
	m = cnt / 2;
	if (n->leaf) {
		struct ut_leaf *l = container_of(n, struct ut_leaf, h);
		struct ut_leaf *r = container_of(sib, struct ut_leaf, h);

		sep = ikey_from_ent(t, l->pfx[m], l->ent[m], GFP_ATOMIC);
		if (!sep) {
			ret = -ENOMEM;
			goto out_unlock;
		}
		seppfx = l->pfx[m];
		atomic64_inc(&t->tree.refill);
		/* the bump before @r can be seen: jumps must see it (left_hint) */
		smp_mb__after_atomic();
		r->h.leaf = 1;
		r->h.count = cnt - m;
		memcpy(r->pfx, l->pfx + m, (cnt - m) * sizeof(u64));
		memcpy(r->ent, l->ent + m, (cnt - m) * sizeof(u64));
		r->prev = l;
		r->next = l->next;
		/* release: @r complete before anyone can reach it */
		if (l->next)
			ut_store_link(&l->next->prev, r);
		ut_store_link(&l->next, r);
		WRITE_ONCE(l->h.count, m);
	} else {
		struct ut_inner *in = container_of(n, struct ut_inner, h);
		struct ut_inner *r = container_of(sib, struct ut_inner, h);

		sep = in->key[m];
		seppfx = in->pfx[m];
		r->h.count = cnt - m - 1;
		r->h.over_leaves = in->h.over_leaves;
		memcpy(r->pfx, in->pfx + m + 1, (cnt - m - 1) * sizeof(u64));
		memcpy(r->key, in->key + m + 1, (cnt - m - 1) * sizeof(r->key[0]));
		memcpy(r->child, in->child + m + 1, (cnt - m) * sizeof(r->child[0]));
		/* @r is linked below, with release (under the locks) */
		WRITE_ONCE(in->h.count, m);
	}
	if (parent) {
		pc = parent->h.count;
		for (i = 0; i < pc && parent->child[i] != n; i++)
			;
		ut_store_link(&parent->child[pc + 1], parent->child[pc]);
		for (m = pc; m > i; m--) {
			WRITE_ONCE(parent->pfx[m], parent->pfx[m - 1]);
			ut_store_link(&parent->key[m], parent->key[m - 1]);
			if (m > i + 1)
				ut_store_link(&parent->child[m], parent->child[m - 1]);
		}
		WRITE_ONCE(parent->pfx[i], seppfx);
		ut_store_link(&parent->key[i], sep);
		ut_store_link(&parent->child[i + 1], sib);
		WRITE_ONCE(parent->h.count, pc + 1);
	} else {
		root->h.count = 1;
		root->h.over_leaves = n->leaf;
		root->pfx[0] = seppfx;
		root->key[0] = sep;
		root->child[0] = n;
		root->child[1] = sib;
		/* release: the new root is complete before readers find it */
		ut_store_link(&t->tree.root, &root->h);
	}
	ver_unlock(&n->version);
	ver_unlock(upper);
	return 0;

out_unlock:
	ver_unlock(&n->version);
out_unlock_upper:
	ver_unlock(upper);
out_free:
	t_free(t, kind, sib, nsize);
	t_free(t, UT_MEM_INNER, root, sizeof(*root));
	return ret;
}

static void leaf_insert_locked(struct utree *t, struct ut_leaf *l,
			       const struct ut_skey *k, u64 node)
{
	unsigned int cnt = l->h.count, pos, i;
	bool eq;

	pos = leaf_bound(t, l, cnt, k, false, &eq);
	if (eq) {
		ut_store_link(&l->ent[pos], ut_ent_make(node, k->len));
		return;
	}
	if (!cnt) {
		atomic64_inc(&t->tree.refill);
		/* the bump before the entry: jumps over @l see it (left_hint) */
		smp_mb__after_atomic();
	}
	for (i = cnt; i > pos; i--) {
		WRITE_ONCE(l->pfx[i], l->pfx[i - 1]);
		ut_store_link(&l->ent[i], l->ent[i - 1]);
	}
	WRITE_ONCE(l->pfx[pos], k->pfx);
	ut_store_link(&l->ent[pos], ut_ent_make(node, k->len));
	WRITE_ONCE(l->h.count, cnt + 1);
}

/**
 * ut_tree_insert - publish the (already linked and durable) node @node
 *                  for @k in its tree leaf
 *
 * Context: inside an epoch section.
 * Return: 0, or -ENOMEM when a split found no atomic memory (the caller
 * refills the stash with ut_tree_reserve() outside its section and
 * retries).
 */
int ut_tree_insert(struct utree *t, const struct ut_skey *k, u64 node)
{
	struct ut_inner *parent;
	struct ut_tnode *n, *c;
	unsigned int cnt;
	u64 mv, v, pv, cv;
	int ret;

restart:
	mv = ver_read(&t->tree.meta);
	n = ut_load_link(&t->tree.root);
	v = ver_read(&n->version);
	if (!ver_check(&t->tree.meta, mv))
		goto restart;
	parent = NULL;
	pv = 0;
	while (!n->leaf) {
		struct ut_inner *in = container_of(n, struct ut_inner, h);

		cnt = READ_ONCE(n->count);
		if (cnt >= UT_INNER_CAP)
			goto split;
		c = ut_load_link(&in->child[inner_pos(in, cnt, k)]);
		if (!c) {
			cpu_relax();
			goto restart;
		}
		prefetch_child(in, c);
		cv = ver_read(&c->version);
		if (!ver_check(&n->version, v))
			goto restart;
		parent = in;
		pv = v;
		n = c;
		v = cv;
	}
	if (READ_ONCE(n->count) >= UT_LEAF_CAP)
		goto split;
	if (!ver_upgrade(&n->version, v)) {
		cpu_relax();
		goto restart;
	}
	leaf_insert_locked(t, container_of(n, struct ut_leaf, h), k, node);
	ver_unlock(&n->version);
	return 0;

split:
	ret = split(t, parent, pv, mv, n, v);
	if (ret == -ENOMEM)
		return ret;
	goto restart;
}

/* Lock the leaf covering @k. */
static struct ut_leaf *lock_leaf(struct utree *t, const struct ut_skey *k)
{
	struct ut_leaf *l;
	u64 v;

	for (;;) {
		l = descend(t, k, &v);
		if (ver_upgrade(&l->h.version, v))
			return l;
		cpu_relax();
	}
}

/**
 * ut_tree_replace - point @k's entry at @node instead of @old
 * Return: false if the entry was not @old (no change).
 */
bool ut_tree_replace(struct utree *t, const struct ut_skey *k, u64 old,
		     u64 node)
{
	struct ut_leaf *l = lock_leaf(t, k);
	unsigned int pos;
	bool eq, ok;

	pos = leaf_bound(t, l, l->h.count, k, false, &eq);
	ok = eq && ut_ent_node(l->ent[pos]) == old;
	if (ok)
		ut_store_link(&l->ent[pos], ut_ent_make(node, k->len));
	ver_unlock(&l->h.version);
	return ok;
}

/**
 * ut_tree_remove - drop @k's entry, if it points at @node
 * Return: false if it did not (no change).
 */
bool ut_tree_remove(struct utree *t, const struct ut_skey *k, u64 node)
{
	struct ut_leaf *l = lock_leaf(t, k);
	unsigned int pos, cnt = l->h.count, i;
	bool eq, ok;

	pos = leaf_bound(t, l, cnt, k, false, &eq);
	ok = eq && ut_ent_node(l->ent[pos]) == node;
	if (ok) {
		for (i = pos; i + 1 < cnt; i++) {
			WRITE_ONCE(l->pfx[i], l->pfx[i + 1]);
			ut_store_link(&l->ent[i], l->ent[i + 1]);
		}
		WRITE_ONCE(l->h.count, cnt - 1);
	}
	ver_unlock(&l->h.version);
	return ok;
}

/* ---- iteration (scans) ----------------------------------------------- */

/* Optimistic copy of slots [@from, @to) (validated by the caller). */
static void leaf_copy(struct ut_iter *it, struct ut_leaf *l, unsigned int from,
		      unsigned int to)
{
	unsigned int i;

	for (i = from; i < to; i++) {
		it->pfx[i - from] = READ_ONCE(l->pfx[i]);
		it->ent[i - from] = ut_load_link(&l->ent[i]);
	}
}

/**
 * ut_iter_seek - copy the entries of the leaf covering @k from the first
 *                key >= @k (> @k with @after)
 *
 * Context: inside an epoch section (the copied nodes live until its end).
 */
void ut_iter_seek(struct utree *t, struct ut_iter *it,
		  const struct ut_skey *k, bool after)
{
	unsigned int n, pos;
	struct ut_leaf *l;
	u64 v;
	bool eq;

	for (;;) {
		l = descend(t, k, &v);
		n = READ_ONCE(l->h.count);
		if (n <= UT_LEAF_CAP) {
			pos = leaf_bound(t, l, n, k, after, &eq);
			it->n = n - pos;
			leaf_copy(it, l, pos, n);
			it->next = ut_load_link(&l->next);
			it->i = 0;
			if (ver_check(&l->h.version, v))
				return;
		}
		cpu_relax();
	}
}

/*
 * ut_iter_next_leaf - copy the whole next leaf
 *
 * A leaf only loses keys to a new right sibling, which it links as its
 * next, so following the saved next pointer neither repeats nor skips
 * any key that stays in the tree meanwhile.
 * Return: false at the end of the tree.
 */
bool ut_iter_next_leaf(struct utree *t, struct ut_iter *it)
{
	struct ut_leaf *l = it->next, *next;
	unsigned int n;
	u64 v;

	it->n = 0;
	it->i = 0;
	if (!l)
		return false;
	for (;;) {
		v = ver_read(&l->h.version);
		n = READ_ONCE(l->h.count);
		if (n <= UT_LEAF_CAP) {
			leaf_copy(it, l, 0, n);
			next = ut_load_link(&l->next);
			if (ver_check(&l->h.version, v)) {
				it->n = n;
				it->next = next;
				return true;
			}
		}
		cpu_relax();
	}
}

/* Leftmost leaf. Context: the tree is quiescent (open, close, check). */
struct ut_leaf *ut_leaf_first(struct utree *t)
{
	struct ut_tnode *n = t->tree.root;

	while (!n->leaf)
		n = container_of(n, struct ut_inner, h)->child[0];
	return container_of(n, struct ut_leaf, h);
}

/* ---- bulk loading ---------------------------------------------------- */

/* Append an entry (keys must come in ascending order). */
int ut_build_add(struct utree *t, struct ut_builder *b, u64 pfx, u64 ent)
{
	struct ut_leaf *l = b->last;

	if (!l || l->h.count == UT_LEAF_FILL) {
		l = t_alloc(t, UT_MEM_LEAF, sizeof(*l), GFP_KERNEL);
		if (!l)
			return -ENOMEM;
		l->h.leaf = 1;
		l->prev = b->last;
		if (b->last)
			b->last->next = l;
		else
			b->first = l;
		b->last = l;
	}
	l->pfx[l->h.count] = pfx;
	l->ent[l->h.count++] = ent;
	b->count++;
	return 0;
}

void ut_build_append(struct ut_builder *to, struct ut_builder *from)
{
	if (!from->first)
		return;
	if (to->last) {
		to->last->next = from->first;
		from->first->prev = to->last;
	} else {
		to->first = from->first;
	}
	to->last = from->last;
	to->count += from->count;
	memset(from, 0, sizeof(*from));
}

void ut_build_discard(struct utree *t, struct ut_builder *b)
{
	struct ut_leaf *l, *next;

	for (l = b->first; l; l = next) {
		next = l->next;
		t_free(t, UT_MEM_LEAF, l, sizeof(*l));
	}
	memset(b, 0, sizeof(*b));
}

struct build_item {
	struct ut_tnode	*node;
	struct ut_ikey	*min;	/* smallest key below @node (NULL: leftmost) */
};

/**
 * ut_tree_build - make the leaves of @b the tree, building inner levels
 *
 * Replaces the empty tree made by ut_tree_init(). On failure nothing is
 * changed and @b still owns its leaves.
 * Context: open(), no concurrent user.
 */
int ut_tree_build(struct utree *t, struct ut_builder *b)
{
	struct build_item *items;
	struct ut_inner **inners;
	unsigned int nl = 0, ni = 0, n, m, i, j, groups, take;
	struct ut_leaf *l;
	int ret = -ENOMEM;

	if (!b->first)
		return 0;
	for (l = b->first; l; l = l->next)
		nl++;
	items = kvcalloc(nl, sizeof(*items), GFP_KERNEL);
	inners = kvcalloc(nl, sizeof(*inners), GFP_KERNEL);
	if (!items || !inners)
		goto out;
	for (i = 0, l = b->first; l; l = l->next, i++) {
		items[i].node = &l->h;
		if (!i)
			continue;
		items[i].min = ikey_from_ent(t, l->pfx[0], l->ent[0], GFP_KERNEL);
		if (!items[i].min)
			goto unwind;
	}
	for (n = nl; n > 1; n = m) {
		groups = DIV_ROUND_UP(n, UT_INNER_FILL + 1);
		for (i = 0, m = 0; m < groups; m++, i += take) {
			struct ut_inner *in;

			take = n / groups + (m < n % groups);
			in = t_alloc(t, UT_MEM_INNER, sizeof(*in), GFP_KERNEL);
			if (!in)
				goto unwind;
			inners[ni++] = in;
			in->h.count = take - 1;
			in->h.over_leaves = n == nl;
			for (j = 0; j < take; j++) {
				in->child[j] = items[i + j].node;
				if (!j)
					continue;
				in->key[j - 1] = items[i + j].min;
				in->pfx[j - 1] = items[i + j].min->pfx;
				items[i + j].min = NULL;	/* owned by @in */
			}
			items[m].node = &in->h;
			/* moved, not copied: the unwind frees each key once */
			swap(items[m].min, items[i].min);
		}
	}
	t_free(t, UT_MEM_LEAF, t->tree.root, sizeof(struct ut_leaf));
	t->tree.root = items[0].node;
	memset(b, 0, sizeof(*b));
	ret = 0;
	goto out;

unwind:
	/* inner nodes own separators already moved into them */
	for (i = 0; i < ni; i++) {
		for (j = 0; j < inners[i]->h.count; j++)
			ikey_free(t, inners[i]->key[j]);
		t_free(t, UT_MEM_INNER, inners[i], sizeof(*inners[i]));
	}
	for (i = 0; i < nl; i++)
		ikey_free(t, items[i].min);
out:
	kvfree(items);
	kvfree(inners);
	return ret;
}

/* ---- setup / teardown ------------------------------------------------ */

int ut_tree_init(struct utree *t)
{
	struct ut_leaf *l;

	spin_lock_init(&t->tree.stash_lock);
	atomic64_set(&t->tree.refill, 0);
	l = t_alloc(t, UT_MEM_LEAF, sizeof(*l), GFP_KERNEL);
	if (!l)
		return -ENOMEM;
	l->h.leaf = 1;
	t->tree.root = &l->h;
	return 0;
}

static void tnode_free(struct utree *t, struct ut_tnode *n)
{
	struct ut_inner *in;
	unsigned int i;

	if (n->leaf) {
		t_free(t, UT_MEM_LEAF, n, sizeof(struct ut_leaf));
		return;
	}
	in = container_of(n, struct ut_inner, h);
	for (i = 0; i <= in->h.count; i++)
		tnode_free(t, in->child[i]);
	for (i = 0; i < in->h.count; i++)
		ikey_free(t, in->key[i]);
	t_free(t, UT_MEM_INNER, in, sizeof(*in));
}

/* Context: no concurrent user. */
void ut_tree_free(struct utree *t)
{
	struct ut_tree *tr = &t->tree;
	enum ut_mem kind;

	if (tr->root)
		tnode_free(t, tr->root);
	tr->root = NULL;
	for (kind = 0; kind < UT_MEM_KINDS; kind++)
		while (tr->nstash[kind])
			mem_free(kind, tr->stash[kind][--tr->nstash[kind]]);
}

/* Module load: the node caches (engine global_init). */
int ut_tree_global_init(void)
{
	node_cache[UT_MEM_LEAF] = kmem_cache_create("pmidx_ut_leaf",
						    sizeof(struct ut_leaf), 0,
						    SLAB_HWCACHE_ALIGN, NULL);
	if (!node_cache[UT_MEM_LEAF])
		return -ENOMEM;
	node_cache[UT_MEM_INNER] = kmem_cache_create("pmidx_ut_inner",
						     sizeof(struct ut_inner), 0,
						     SLAB_HWCACHE_ALIGN, NULL);
	if (!node_cache[UT_MEM_INNER]) {
		kmem_cache_destroy(node_cache[UT_MEM_LEAF]);
		return -ENOMEM;
	}
	return 0;
}

/* Module unload: every index is closed, so every node is freed. */
void ut_tree_global_exit(void)
{
	kmem_cache_destroy(node_cache[UT_MEM_INNER]);
	kmem_cache_destroy(node_cache[UT_MEM_LEAF]);
}

/* ---- verification ---------------------------------------------------- */

struct verify {
	struct utree	*t;
	int		leaf_depth;
	struct ut_leaf	*last;
	u64		entries;
	const char	*why;
};

/* The key of entry (@pfx, @ent) as a search key (@buf: inline bytes). */
static bool ent_skey(struct utree *t, u64 pfx, u64 ent, struct ut_skey *k,
		     __be64 *buf)
{
	u32 len = ut_ent_len(ent), l2;

	k->len = len;
	k->pfx = pfx;
	if (len <= UT_INLINE_MAX) {
		*buf = cpu_to_be64(pfx);
		k->key = (const u8 *)buf;
		return len != 0;
	}
	k->key = ut_node_key(t, ut_node(t, ut_ent_node(ent)), &l2);
	return k->key && l2 == len && ut_pfx(k->key, len) == pfx;
}

static bool sep_skey(struct ut_inner *in, unsigned int i, struct ut_skey *k)
{
	struct ut_ikey *ik = in->key[i];

	if (!ik || !ik->len || ik->len > PMIDX_KEY_MAX || ik->pfx != in->pfx[i] ||
	    ik->pfx != ut_pfx(ik->bytes, ik->len))
		return false;
	k->key = ik->bytes;
	k->len = ik->len;
	k->pfx = ik->pfx;
	return true;
}

static bool key_in_range(const struct ut_skey *k, const struct ut_skey *lo,
		     const struct ut_skey *hi)
{
	if (lo && pmidx_key_cmp(k->key, k->len, lo->key, lo->len) < 0)
		return false;
	return !hi || pmidx_key_cmp(k->key, k->len, hi->key, hi->len) < 0;
}

static int verify_inner(struct verify *c, struct ut_inner *in, int depth,
			const struct ut_skey *lo, const struct ut_skey *hi);

static int verify_node(struct verify *c, struct ut_tnode *n, int depth,
		       const struct ut_skey *lo, const struct ut_skey *hi)
{
	struct ut_skey k, prev = {};
	unsigned int i;
	__be64 buf, pbuf;

	if (n->version & 1) {
		c->why = "tree node left locked";
		return -EUCLEAN;
	}
	if (n->leaf) {
		struct ut_leaf *l = container_of(n, struct ut_leaf, h);

		if (c->leaf_depth >= 0 && c->leaf_depth != depth) {
			c->why = "tree leaves at different depths";
			return -EUCLEAN;
		}
		c->leaf_depth = depth;
		if (l->h.count > UT_LEAF_CAP || l->prev != c->last ||
		    (c->last && c->last->next != l)) {
			c->why = "tree leaf chain or count inconsistent";
			return -EUCLEAN;
		}
		c->last = l;
		for (i = 0; i < l->h.count; i++) {
			if (!ent_skey(c->t, l->pfx[i], l->ent[i], &k, &buf) ||
			    !ut_ent_node(l->ent[i])) {
				c->why = "tree entry key unreadable";
				return -EUCLEAN;
			}
			if (!key_in_range(&k, lo, hi)) {
				c->why = "tree entry outside its leaf's range";
				return -EUCLEAN;
			}
			if (i && pmidx_key_cmp(prev.key, prev.len, k.key, k.len) >= 0) {
				c->why = "tree leaf entries out of order";
				return -EUCLEAN;
			}
			prev = k;
			pbuf = buf;
			if (k.key == (const u8 *)&buf)
				prev.key = (const u8 *)&pbuf;
		}
		c->entries += l->h.count;
		return 0;
	}
	return verify_inner(c, container_of(n, struct ut_inner, h), depth, lo, hi);
}

static int verify_inner(struct verify *c, struct ut_inner *in, int depth,
			const struct ut_skey *lo, const struct ut_skey *hi)
{
	struct ut_skey a, b, *l = NULL, *r = NULL;
	unsigned int i;
	int ret;

	if (!in->h.count || in->h.count > UT_INNER_CAP) {
		c->why = "tree inner node count out of range";
		return -EUCLEAN;
	}
	for (i = 0; i <= in->h.count; i++) {
		/* child i lies in [key[i - 1], key[i]) */
		if (i < in->h.count) {
			r = l == &a ? &b : &a;
			if (!sep_skey(in, i, r) || !key_in_range(r, lo, hi) ||
			    (l && pmidx_key_cmp(l->key, l->len, r->key, r->len) >= 0)) {
				c->why = "tree separator corrupt or out of order";
				return -EUCLEAN;
			}
		} else {
			r = NULL;
		}
		if (!in->child[i]) {
			c->why = "tree inner node lacks a child";
			return -EUCLEAN;
		}
		if (in->h.over_leaves != in->child[i]->leaf) {
			c->why = "tree inner node's over_leaves wrong";
			return -EUCLEAN;
		}
		ret = verify_node(c, in->child[i], depth + 1, l ? l : lo,
				  r ? r : hi);
		if (ret)
			return ret;
		l = r;
	}
	return 0;
}

/**
 * ut_tree_verify - check the tree's shape and order
 * @entries: number of leaf entries
 *
 * Context: writers are held off (ut_freeze()).
 */
int ut_tree_verify(struct utree *t, u64 *entries, const char **why)
{
	struct verify c = { .t = t, .leaf_depth = -1 };
	int ret;

	ret = verify_node(&c, t->tree.root, 0, NULL, NULL);
	if (!ret && c.last && c.last->next) {
		c.why = "tree leaf chain runs past the last leaf";
		ret = -EUCLEAN;
	}
	if (ret)
		*why = c.why;
	*entries = c.entries;
	return ret;
}
