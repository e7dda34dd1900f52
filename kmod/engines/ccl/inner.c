// SPDX-License-Identifier: GPL-2.0
/*
 * DRAM inner nodes: a B+-tree over the buffer nodes' low fences with
 * optimistic lock coupling (Leis et al., DaMoN'16; the paper uses the
 * FAST&FAIR inner nodes, section 4.1: "lock-free search, node-level locks
 * for inserts").
 *
 * Readers take no lock: they read a node's version (waiting while a
 * writer holds it), read what they need, and check the version did not
 * change, restarting from the root otherwise; a child's version is taken
 * before the parent is re-checked, so a reader never follows a pointer
 * out of a node that changed under it. Writers upgrade a version they
 * read to locked with a compare-and-swap (restarting when it moved) and
 * bump it when they unlock. Inserts split full nodes on the way down,
 * holding the parent and the node, so a node is never full when its
 * child splits. Entries move with 8-byte atomic stores so that an
 * optimistic reader only ever sees pointers that were stored there.
 *
 * Every lock holder runs with preemption off (epoch sections; CHECK
 * disables it around each node it holds): spinners have preemption off
 * too, so a preempted holder would leave as many CPUs spinning as there
 * are waiters, and with all CPUs spinning it never runs again.
 *
 * Inner nodes are never freed before the index closes. A missing
 * separator (an insert that found no memory) is harmless: lookups land on
 * the left neighbour and follow the buffer nodes' links (buffer.c).
 */
#include <linux/delay.h>
#include <linux/lockdep.h>
#include <linux/preempt.h>
#include <linux/processor.h>
#include <linux/slab.h>
#include <linux/string.h>
#include "ccl.h"

#define IN_LOCKED	2ULL
#define BUILD_FILL	(CCL_FANOUT * 3 / 4)
/* what a search reads of an inner node: header, prefixes, children, hints */
#define IN_SEARCHED	offsetof(struct ccl_inode, fence)

static u64 in_read_begin(struct ccl_inode *n)
{
	u64 v;

	for (;;) {
		v = atomic64_read_acquire(&n->ver);
		if (!(v & IN_LOCKED))
			return v;
		cpu_relax();
	}
}

static bool in_valid(struct ccl_inode *n, u64 v)
{
	/* the node's reads complete before its version is checked */
	smp_rmb();
	return (u64)atomic64_read(&n->ver) == v;
}

static bool in_upgrade(struct ccl_inode *n, u64 v)
{
	s64 old = v;

	lockdep_assert_preemption_disabled();

	return atomic64_try_cmpxchg(&n->ver, &old, v + IN_LOCKED);
}

void ccl_inner_unlock(struct ccl_inode *n)
{
	atomic64_set_release(&n->ver, atomic64_read(&n->ver) + IN_LOCKED);
}

struct ccl_inode *ccl_inode_alloc(gfp_t gfp)
{
	return kzalloc(sizeof(struct ccl_inode), gfp);
}

/*
 * Start an optimistic descent: the root and its version. A root split
 * stores the new root before it unlocks the old one, so a reader that
 * sees the old root's new version also sees the new root, and retries.
 */
static struct ccl_inode *root_begin(struct ccl_tree *t, u64 *v)
{
	struct ccl_inode *n;

	for (;;) {
		/* pairs with the release in in_split() */
		n = smp_load_acquire(&t->iroot);
		*v = in_read_begin(n);
		/* pairs with the release in in_split() */
		if (smp_load_acquire(&t->iroot) == n)
			return n;
	}
}

/* Is entry @i <= the key? Safe on torn reads (validated later). */
static bool ent_le(struct ccl_inode *n, int i, u64 pfx, const u8 *k, u32 klen)
{
	u64 p = READ_ONCE(n->pfx[i]);
	const struct ccl_fence *f;

	if (p != pfx)
		return p < pfx;
	f = ccl_load_link(&n->fence[i]);
	if (!f)
		return true;
	if (f->len <= 8 && klen <= 8)
		return f->len <= klen;
	return pmidx_key_cmp(f->key, f->len, k, klen) <= 0;
}

/* A tie of prefixes: walk left from the last tied entry by the fences. */
static noinline int in_tie(struct ccl_inode *n, int base, u64 pfx,
			   const u8 *k, u32 klen)
{
	while (base > 0 && READ_ONCE(n->pfx[base]) == pfx &&
	       !ent_le(n, base, pfx, k, klen))
		base--;
	return base;
}

/* One halving step: @base + @step if that slot (at most @last) is <= the key. */
static __always_inline int in_step(struct ccl_inode *n, int base, int step,
				   int last, u64 pfx)
{
	int i = min(base + step, last);
	int le = READ_ONCE(n->pfx[i]) <= pfx;

	/* a mask, not ?: which the compiler turns into a branch */
	return base + ((i - base) & -le);
}

/*
 * The last entry <= the key (0 if none). The prefixes decide without a
 * branch: five halving steps of a fixed size over the node's 32 slots, a
 * masked add each (a branchy search mispredicts half its steps),
 * a step past the last entry testing the last entry instead. Only a key
 * that shares its first 8 bytes with a separator needs the fences
 * (in_tie()). A torn count still keeps every read in the node; torn
 * reads end somewhere in the node: the caller validates.
 */
static __always_inline int in_search(struct ccl_inode *n, u64 pfx,
				     const u8 *k, u32 klen)
{
	int last = clamp_t(int, READ_ONCE(n->count), 1, CCL_FANOUT) - 1;
	int base = 0;

	BUILD_BUG_ON(CCL_FANOUT != 32);
	base = in_step(n, base, 16, last, pfx);
	base = in_step(n, base, 8, last, pfx);
	base = in_step(n, base, 4, last, pfx);
	base = in_step(n, base, 2, last, pfx);
	base = in_step(n, base, 1, last, pfx);
	if (unlikely(base > 0 && READ_ONCE(n->pfx[base]) == pfx))
		return in_tie(n, base, pfx, k, klen);
	return base;
}

static void ent_copy(struct ccl_inode *d, int di, struct ccl_inode *s, int si)
{
	WRITE_ONCE(d->pfx[di], s->pfx[si]);
	ccl_store_link(&d->fence[di], s->fence[si]);
	WRITE_ONCE(d->lhint[di], s->lhint[si]);
	ccl_store_link(&d->child[di], s->child[si]);
}

/* The leaf hint of a last-level entry (struct ccl_inode): 0 for none. */
static u32 leaf_hint(struct ccl_inode *n, void *child)
{
	u64 off;

	if (n->level || !child)
		return 0;
	off = bn_leaf(atomic64_read(&((struct ccl_bnode *)child)->hdr)) >> 8;
	return off <= U32_MAX ? off : 0;
}

static void ent_set(struct ccl_inode *n, int i, u64 pfx,
		    const struct ccl_fence *f, void *child)
{
	WRITE_ONCE(n->pfx[i], pfx);
	ccl_store_link(&n->fence[i], f);
	WRITE_ONCE(n->lhint[i], leaf_hint(n, child));
	ccl_store_link(&n->child[i], child);
}

/* Insert an entry at @i of a locked, non-full node. */
static void ent_insert(struct ccl_inode *n, int i, u64 pfx,
		       const struct ccl_fence *f, void *child)
{
	int j;

	for (j = n->count; j > i; j--)
		ent_copy(n, j, n, j - 1);
	ent_set(n, i, pfx, f, child);
	WRITE_ONCE(n->count, n->count + 1);
}

void ccl_inner_remove(struct ccl_inode *n, int idx)
{
	int j;

	for (j = idx; j + 1 < n->count; j++)
		ent_copy(n, j, n, j + 1);
	WRITE_ONCE(n->count, n->count - 1);
}

/**
 * ccl_inner_find - the buffer node whose entry routes @k
 *
 * Its low fence is <= @k; a concurrent split may have moved @k further
 * right (callers check the right neighbour's fence).
 *
 * Context: inside an epoch section.
 */
struct ccl_bnode *ccl_inner_find(struct ccl_tree *t, const u8 *k, u32 klen)
{
	u64 pfx = ccl_pfx(k, klen), v, pv = 0;
	struct ccl_inode *n, *parent;
	void *c;
	u8 level;
	int i;

restart:
	parent = NULL;
	n = root_begin(t, &v);
	for (;;) {
		i = in_search(n, pfx, k, klen);
		c = ccl_load_link(&n->child[i]);
		level = READ_ONCE(n->level);
		/* a torn @c or hint is only prefetched: harmless */
		if (c && level)
			pmidx_prefetch_node(c, IN_SEARCHED);
		else if (c)
			pmidx_prefetch_node(c, ccl_bnode_size(t));
		if (c && !level && READ_ONCE(n->lhint[i]))
			pmidx_prefetch_node(ccl_ptr(t, (u64)READ_ONCE(n->lhint[i]) << 8),
					    sizeof(struct ccl_leaf));
		if (!in_valid(n, v) || !c)
			goto restart;
		if (parent && !in_valid(parent, pv))
			goto restart;
		if (!level)
			return c;
		parent = n;
		pv = v;
		n = c;
		v = in_read_begin(n);
	}
}

static struct ccl_inode *stash_pop(struct ccl_tree *t, struct ccl_stash *st)
{
	struct ccl_inode *n = NULL;

	if (st && st->cnt)
		n = st->n[--st->cnt];
	if (!n)
		n = ccl_inode_alloc(GFP_ATOMIC);
	if (n)
		atomic64_inc(&t->ninodes);
	return n;
}

/* Split locked @n (parent locked too, or @n is the root). */
static bool in_split(struct ccl_tree *t, struct ccl_inode *n,
		     struct ccl_inode *parent, struct ccl_stash *st)
{
	struct ccl_inode *right, *root;
	int i, mid = n->count / 2;

	right = stash_pop(t, st);
	if (!right)
		return false;
	root = parent ? NULL : stash_pop(t, st);
	if (!parent && !root) {
		atomic64_dec(&t->ninodes);
		ccl_stash_return(t, &(struct ccl_stash){ .cnt = 1, .n = { right } });
		return false;
	}
	right->level = n->level;
	for (i = mid; i < n->count; i++)
		ent_copy(right, i - mid, n, i);
	right->count = n->count - mid;
	/* complete before a parent or the root points to it: ent_set() */
	if (parent) {
		i = in_search(parent, right->pfx[0], right->fence[0]->key,
			      right->fence[0]->len);
		ent_insert(parent, i + 1, right->pfx[0], right->fence[0], right);
	} else {
		root->level = n->level + 1;
		ent_set(root, 0, n->pfx[0], n->fence[0], n);
		ent_set(root, 1, right->pfx[0], right->fence[0], right);
		root->count = 2;
		/* pairs with the acquires in root_begin() */
		smp_store_release(&t->iroot, root);
		atomic_inc(&t->height);
	}
	WRITE_ONCE(n->count, mid);
	return true;
}

/**
 * ccl_inner_insert - add the separator @f routing to new buffer node @child
 * @st: inner nodes set aside for splits (GFP_ATOMIC beyond them)
 *
 * Context: the left neighbour of @child is locked, inside an epoch section.
 */
void ccl_inner_insert(struct ccl_tree *t, const struct ccl_fence *f,
		      struct ccl_bnode *child, struct ccl_stash *st)
{
	u64 pfx = ccl_pfx(f->key, f->len), v, pv = 0;
	struct ccl_inode *n, *parent;
	void *c;
	int i;

restart:
	parent = NULL;
	n = root_begin(t, &v);
	for (;;) {
		if (READ_ONCE(n->count) >= CCL_FANOUT) {
			if (parent && !in_upgrade(parent, pv))
				goto restart;
			if (!in_upgrade(n, v)) {
				if (parent)
					ccl_inner_unlock(parent);
				goto restart;
			}
			if (!parent && n != t->iroot) {
				ccl_inner_unlock(n);
				goto restart;
			}
			if (!in_split(t, n, parent, st)) {
				ccl_inner_unlock(n);
				if (parent)
					ccl_inner_unlock(parent);
				pr_warn_once("pmidx: ccl: no memory for an inner node; lookups take a detour\n");
				return;
			}
			ccl_inner_unlock(n);
			if (parent)
				ccl_inner_unlock(parent);
			goto restart;
		}
		if (parent && !in_valid(parent, pv))
			goto restart;
		if (!READ_ONCE(n->level)) {
			if (!in_upgrade(n, v))
				goto restart;
			i = in_search(n, pfx, f->key, f->len);
			ent_insert(n, i + 1, pfx, f, child);
			ccl_inner_unlock(n);
			return;
		}
		i = in_search(n, pfx, f->key, f->len);
		c = ccl_load_link(&n->child[i]);
		if (!in_valid(n, v) || !c)
			goto restart;
		parent = n;
		pv = v;
		n = c;
		v = in_read_begin(n);
	}
}

/**
 * ccl_inner_lock_parent - lock the last-level node holding @b's entry
 * @idx: set to the entry's index
 *
 * Return: the locked node, or NULL when @b has no entry (a separator that
 * could not be inserted).
 */
struct ccl_inode *ccl_inner_lock_parent(struct ccl_tree *t,
					struct ccl_bnode *b, int *idx)
{
	const struct ccl_fence *f = b->low;
	u64 pfx = ccl_pfx(f->key, f->len), v, pv = 0;
	struct ccl_inode *n, *parent;
	void *c;
	int i;

restart:
	parent = NULL;
	n = root_begin(t, &v);
	for (;;) {
		if (parent && !in_valid(parent, pv))
			goto restart;
		if (!READ_ONCE(n->level)) {
			if (!in_upgrade(n, v))
				goto restart;
			i = in_search(n, pfx, f->key, f->len);
			if (n->child[i] != b) {
				ccl_inner_unlock(n);
				return NULL;
			}
			*idx = i;
			return n;
		}
		i = in_search(n, pfx, f->key, f->len);
		c = ccl_load_link(&n->child[i]);
		if (!in_valid(n, v) || !c)
			goto restart;
		parent = n;
		pv = v;
		n = c;
		v = in_read_begin(n);
	}
}

/* Free inner node @n and every inner node below it. Return: how many. */
static size_t free_rec(struct ccl_inode *n)
{
	size_t freed = 1;
	int i;

	if (n->level)
		for (i = 0; i < n->count; i++)
			freed += free_rec(n->child[i]);
	kfree(n);
	return freed;
}

/**
 * ccl_inner_build - bulk-load the inner levels over @n buffer nodes
 *
 * Context: process context, nothing else uses the tree.
 */
int ccl_inner_build(struct ccl_tree *t, struct ccl_bnode **bn, size_t n)
{
	void **cur = (void **)bn, **up = NULL;
	size_t cnt = n, i = 0, nn, freed = 0, adopted;
	u8 level = 0;

	for (;;) {
		nn = DIV_ROUND_UP(cnt, BUILD_FILL);
		i = 0;
		up = kvmalloc_array(nn, sizeof(*up), GFP_KERNEL);
		if (!up)
			goto err;
		for (i = 0; i < nn; i++) {
			struct ccl_inode *in = ccl_inode_alloc(GFP_KERNEL);
			size_t j, first = i * BUILD_FILL;

			if (!in)
				goto err;
			atomic64_inc(&t->ninodes);
			in->level = level;
			for (j = first; j < cnt && j < first + BUILD_FILL; j++) {
				const struct ccl_fence *f;

				if (level)
					f = ((struct ccl_inode *)cur[j])->fence[0];
				else
					f = ((struct ccl_bnode *)cur[j])->low;
				ent_set(in, j - first, ccl_pfx(f->key, f->len),
					f, cur[j]);
			}
			in->count = j - first;
			up[i] = in;
		}
		if (level)
			kvfree(cur);
		cur = up;
		cnt = nn;
		level++;
		if (cnt == 1)
			break;
	}
	t->iroot = cur[0];
	atomic_set(&t->height, level);
	kvfree(cur);
	return 0;
err:
	/*
	 * The new level's first @i nodes own the first i * BUILD_FILL of
	 * @cur, with all below them; the rest of @cur (inner nodes from
	 * level 1 up, the caller's buffer nodes at 0) own theirs.
	 */
	adopted = min_t(size_t, cnt, i * BUILD_FILL);
	while (i--)
		freed += free_rec(up[i]);
	kvfree(up);
	if (level) {
		for (i = adopted; i < cnt; i++)
			freed += free_rec(cur[i]);
		kvfree(cur);
	}
	atomic64_sub(freed, &t->ninodes);
	return -ENOMEM;
}


/* Context: nothing uses the tree any more. */
void ccl_inner_free_all(struct ccl_tree *t)
{
	if (t->iroot)
		free_rec(t->iroot);
	t->iroot = NULL;
}

struct icheck {
	struct ccl_tree		*t;
	const char		**why;
	struct ccl_bnode	*expect;	/* next buffer node in order */
	u64			nodes;
};

/* Lock @n for reading its entries consistently (spins past writers). */
static void in_lock(struct ccl_inode *n)
{
	while (!in_upgrade(n, in_read_begin(n)))
		cpu_relax();
}

static int check_rec(struct icheck *c, struct ccl_inode *n, int depth,
		     const struct ccl_fence *lo)
{
	void *child[CCL_FANOUT];
	const struct ccl_fence *fence[CCL_FANOUT];
	int i, cnt, ret = -EUCLEAN;
	u8 level;

	if (depth > 64) {
		*c->why = "inner tree too deep";
		return -EUCLEAN;
	}
	c->nodes++;
	preempt_disable();
	in_lock(n);
	cnt = n->count;
	level = n->level;
	if (cnt < 1 || cnt > CCL_FANOUT) {
		*c->why = "inner node entry count out of range";
		goto out;
	}
	if (lo && (n->fence[0] != lo &&
		   pmidx_key_cmp(n->fence[0]->key, n->fence[0]->len,
				 lo->key, lo->len))) {
		*c->why = "inner node low fence differs from its parent entry";
		goto out;
	}
	for (i = 0; i < cnt; i++) {
		const struct ccl_fence *f = n->fence[i];

		if (!f || !n->child[i] || n->pfx[i] != ccl_pfx(f->key, f->len)) {
			*c->why = "inner entry inconsistent";
			goto out;
		}
		if (i && pmidx_key_cmp(n->fence[i - 1]->key,
				       n->fence[i - 1]->len,
				       f->key, f->len) >= 0) {
			*c->why = "inner entries not sorted";
			goto out;
		}
		if (!level &&
		    ((struct ccl_bnode *)n->child[i])->low != f) {
			*c->why = "inner entry fence is not its buffer node's";
			goto out;
		}
		child[i] = n->child[i];
		fence[i] = f;
	}
	ret = 0;
out:
	ccl_inner_unlock(n);
	preempt_enable();
	if (ret || !level)
		return ret;
	for (i = 0; i < cnt; i++) {
		if (((struct ccl_inode *)child[i])->level != level - 1) {
			*c->why = "inner child at the wrong level";
			return -EUCLEAN;
		}
		ret = check_rec(c, child[i], depth + 1, fence[i]);
		if (ret)
			return ret;
	}
	return 0;
}

/**
 * ccl_inner_check - structural check of the inner levels
 *
 * Each node is checked under its lock; the order of the separators
 * against the buffer node chain is checked by the caller.
 *
 * Context: process context, may sleep.
 */
int ccl_inner_check(struct ccl_tree *t, const char **why)
{
	struct icheck c = { .t = t, .why = why };
	struct ccl_inode *root;
	int i;
	u64 v;

	/*
	 * A concurrent root split bumps the height just after the root (a
	 * writer between the two may be preempted in userspace builds);
	 * a mismatch that lasts is damage.
	 */
	for (i = 0; ; i++) {
		root = root_begin(t, &v);
		if (root->level + 1 == atomic_read(&t->height))
			break;
		if (i == 1000 + 20) {
			*why = "inner tree height mismatch";
			return -EUCLEAN;
		}
		if (i < 1000)
			cpu_relax();
		else
			usleep_range(1000, 2000);
	}
	if (root->fence[0] != t->bhead->low) {
		*why = "inner root does not start at the head";
		return -EUCLEAN;
	}
	return check_rec(&c, root, 0, NULL);
}
