// SPDX-License-Identifier: GPL-2.0
/*
 * Last-level internal nodes (§III-A) and the leaf-count-based flush
 * (§III-B). A node's slots hold the index part (sorted fences and leaf
 * offsets, 0..nidx-1) and, from buf_start == nidx, the buffer part
 * (unsorted KVs, at most one per key). leaf_count[i] is the number of
 * keys in leaf i for the index part and the target leaf's index for the
 * buffer part (Fig. 5); buf_ver[j] is the log holding buffered KV j.
 *
 * The flush runs when the buffer part is full. It walks the buffer from
 * left to right and groups KVs by target leaf; grouping stops when
 * t_node leaves are taken, or at a leaf that would go over t_split keys:
 * that leaf is then flushed alone (with a split) if it came first, else
 * left for the next flush (Fig. 6). Unlike the paper's figure, a leaf is
 * always flushed with *all* its buffered KVs: its ts can then say that
 * every logged write of its range up to ts is in it (lodge.h).
 *
 * Everything here runs with the node's lock held exclusively.
 */
#include <linux/errno.h>
#include <linux/slab.h>
#include "core/pmem.h"
#include "lodge.h"

struct lodge_lin *lodge_lin_alloc(struct lodge *t, u32 cap, gfp_t gfp)
{
	struct lodge_lin *x;
	size_t sz = sizeof(*x) + cap * (sizeof(struct lodge_slot) +
					sizeof(struct lodge_vlog *) + 1);

	x = kzalloc(sz, gfp);
	if (!x)
		return NULL;
	rwlock_init(&x->lock);
	x->cap = cap;
	x->msplit = 2;
	x->buf_ver = (struct lodge_vlog **)&x->slot[cap];
	x->leaf_count = (u8 *)&x->buf_ver[cap];
	atomic64_inc(&t->nlins);
	return x;
}

/* @keys: also the keys it owns (fences, buffered keys, lo, hi) */
void lodge_lin_free(struct lodge_lin *x, bool keys)
{
	unsigned int i;

	if (keys) {
		for (i = 0; i < x->nidx + x->nbuf; i++)
			kfree(x->slot[i].key);
		kfree(x->lo);
		kfree(x->hi);
	}
	kfree(x);
}

/* Return: the index part slot whose leaf holds @k. */
int lodge_lin_leaf(struct lodge_lin *x, const u8 *k, u32 klen)
{
	int lo = 1, hi = x->nidx - 1, mid, r = 0;

	while (lo <= hi) {
		mid = (lo + hi) / 2;
		if (lodge_kcmp(x->slot[mid].key, k, klen) <= 0) {
			r = mid;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	return r;
}

/* Return: the buffer slot holding @k, or -1. */
int lodge_buf_find(struct lodge_lin *x, const u8 *k, u32 klen)
{
	unsigned int j;

	for (j = x->nidx; j < x->nidx + x->nbuf; j++) {
		struct lodge_key *bk = x->slot[j].key;

		if (bk->len == klen && !memcmp(bk->b, k, klen))
			return j;
	}
	return -1;
}

/* Drop buffer slot @j (the caller owns its key and log reference now). */
void lodge_buf_remove(struct lodge *t, struct lodge_lin *x, int j)
{
	int last = x->nidx + x->nbuf - 1;

	if (j != last) {
		x->slot[j] = x->slot[last];
		x->buf_ver[j] = x->buf_ver[last];
		x->leaf_count[j] = x->leaf_count[last];
	}
	x->nbuf--;
}

static void item_sort(struct lodge_item *it, unsigned int n)
{
	unsigned int i, j;
	struct lodge_item v;

	for (i = 1; i < n; i++) {
		v = it[i];
		for (j = i; j > 0 && pmidx_key_cmp(it[j - 1].k, it[j - 1].klen,
						   v.k, v.klen) > 0; j--)
			it[j] = it[j - 1];
		it[j] = v;
	}
}

/* Insert @nn index entries after slot @li; the room is there. */
static void index_insert(struct lodge_lin *x, int li, struct lodge_key **f,
			 const u64 *leaf, const u8 *cnt, unsigned int nn)
{
	unsigned int nidx = x->nidx, nbuf = x->nbuf, c, src, dst, i;

	/* buffer KVs in the way go to the free slots past the buffer */
	dst = max(nidx + nbuf, nidx + nn);
	for (c = 0; c < min(nn, nbuf); c++) {
		src = nidx + c;
		x->slot[dst + c] = x->slot[src];
		x->buf_ver[dst + c] = x->buf_ver[src];
		x->leaf_count[dst + c] = x->leaf_count[src];
	}
	for (i = nidx; i-- > li + 1;) {
		x->slot[i + nn] = x->slot[i];
		x->leaf_count[i + nn] = x->leaf_count[i];
	}
	for (c = 0; c < nn; c++) {
		x->slot[li + 1 + c] = (struct lodge_slot){ .key = f[c],
							   .w = leaf[c] };
		x->leaf_count[li + 1 + c] = cnt[c];
	}
	x->nidx += nn;
	for (i = x->nidx; i < x->nidx + nbuf; i++)
		if (x->leaf_count[i] > li)
			x->leaf_count[i] += nn;
}

/* Remove index entry @li (> 0): its leaf is gone, no KV targets it. */
static void index_remove(struct lodge_lin *x, int li)
{
	unsigned int i, last;

	kfree(x->slot[li].key);
	for (i = li; i + 1 < x->nidx; i++) {
		x->slot[i] = x->slot[i + 1];
		x->leaf_count[i] = x->leaf_count[i + 1];
	}
	x->nidx--;
	last = x->nidx + x->nbuf;
	if (x->nbuf) {
		x->slot[x->nidx] = x->slot[last];
		x->buf_ver[x->nidx] = x->buf_ver[last];
		x->leaf_count[x->nidx] = x->leaf_count[last];
	}
	for (i = x->nidx; i < x->nidx + x->nbuf; i++)
		if (x->leaf_count[i] > li)
			x->leaf_count[i]--;
}

static bool targeted(struct lodge_lin *x, int li)
{
	unsigned int j;

	for (j = x->nidx; j < x->nidx + x->nbuf; j++)
		if (x->leaf_count[j] == li)
			return true;
	return false;
}

/**
 * lodge_fmem_fill - make the flush memory whole (struct lodge_fmem)
 *
 * Context: @t->fmem_lock held; may sleep.
 * Return: 0 or -ENOMEM.
 */
int lodge_fmem_fill(struct lodge *t)
{
	struct lodge_fmem *fm = &t->fmem;
	size_t n = LODGE_FMEM_ITEMS;

	lockdep_assert_held(&t->fmem_lock);
	if (!fm->it) {
		fm->it = kvmalloc_array(n, sizeof(*fm->it), GFP_KERNEL);
		fm->g = kvmalloc_array(n, sizeof(*fm->g), GFP_KERNEL);
		fm->newl = kvmalloc_array(n, sizeof(*fm->newl), GFP_KERNEL);
		fm->cnt = kvmalloc(n, GFP_KERNEL);
		fm->f = kvmalloc_array(n, sizeof(*fm->f), GFP_KERNEL);
		fm->blobs = kvmalloc_array(2 * n + 1, sizeof(*fm->blobs),
					   GFP_KERNEL);
		fm->vbuf = kvmalloc(PMIDX_VALUE_MAX, GFP_KERNEL);
		fm->keys = kvcalloc(n, sizeof(*fm->keys), GFP_KERNEL);
		if (!fm->it || !fm->g || !fm->newl || !fm->cnt || !fm->f ||
		    !fm->blobs || !fm->vbuf || !fm->keys) {
			lodge_fmem_free(t);
			return -ENOMEM;
		}
		fm->want = LODGE_FMEM_KEYS;
	}
	/* a split wanted more fences than there were: enough for any */
	if (fm->short_keys)
		fm->want = LODGE_FMEM_ITEMS;
	fm->short_keys = false;
	while (fm->nkeys < fm->want) {
		fm->keys[fm->nkeys] = kmalloc(sizeof(struct lodge_key) +
					      PMIDX_KEY_MAX, GFP_KERNEL);
		if (!fm->keys[fm->nkeys])
			return -ENOMEM;
		fm->nkeys++;
	}
	return 0;
}

/* Context: teardown, or lodge_fmem_fill() with @t->fmem_lock held. */
void lodge_fmem_free(struct lodge *t)
{
	struct lodge_fmem *fm = &t->fmem;

	kvfree(fm->it);
	kvfree(fm->g);
	kvfree(fm->newl);
	kvfree(fm->cnt);
	kvfree(fm->f);
	kvfree(fm->blobs);
	kvfree(fm->vbuf);
	while (fm->nkeys)
		kfree(fm->keys[--fm->nkeys]);
	kvfree(fm->keys);
	memset(fm, 0, sizeof(*fm));
}

/* A fence for a new leaf: atomic, or from the flush memory @fm. */
static struct lodge_key *fence_new(struct lodge_fmem *fm, const u8 *k,
				   u32 len)
{
	struct lodge_key *f;

	if (!fm)
		return lodge_key_new(k, len, GFP_ATOMIC | __GFP_NOWARN);
	if (!fm->nkeys) {
		fm->short_keys = true;
		return NULL;
	}
	f = fm->keys[--fm->nkeys];
	f->len = len;
	memcpy(f->b, k, len);
	return f;
}

/*
 * Flush every buffered KV of leaf @li into it, splitting it when the
 * result does not fit. Its arrays come from @fm when given, else
 * GFP_ATOMIC. Return: 0, LODGE_NEED_SPLIT (the node has no room for the
 * new leaves; nothing done) or < 0 (-ENOMEM: nothing done).
 */
static int flush_leaf(struct lodge *t, struct lodge_lin *x, int li,
		      struct lodge_fmem *fm)
{
	u64 loff = x->slot[li].w, ts = 0, bits;
	struct lodge_leaf *l = lodge_leaf_ptr(t, loff);
	unsigned int n = 0, ng = 0, writes = 0, keep, per, nn = 0, c, i, j;
	struct lodge_item *it;
	struct lodge_key **f = NULL;
	int *g, s, ret = -ENOMEM;
	u64 *newl = NULL;
	u8 *cnt = NULL;
	bool split;

	if (fm) {
		it = fm->it;
		g = fm->g;
	} else {
		it = kmalloc_array(t->slots + x->nbuf, sizeof(*it),
				   GFP_ATOMIC | __GFP_NOWARN);
		g = kmalloc_array(x->nbuf, sizeof(*g), GFP_ATOMIC | __GFP_NOWARN);
		if (!it || !g)
			goto out;
	}
	bits = le64_to_cpu(READ_ONCE(l->bitmap)) & lodge_bitmap_mask(t);
	for (; bits; bits &= bits - 1) {
		s = __ffs64(bits);
		it[n].k = lodge_slot_key(t, l, s, &it[n].klen);
		it[n].lslot = s;
		it[n++].b = NULL;
	}
	/* the group: every buffered KV of the leaf, in descending slots */
	for (j = x->nidx + x->nbuf; j-- > x->nidx;) {
		struct lodge_slot *b = &x->slot[j];
		struct lodge_key *bk = b->key;

		if (x->leaf_count[j] != li)
			continue;
		g[ng++] = j;
		ts = max(ts, b->seq);
		for (i = 0; i < n; i++)
			if (it[i].klen == bk->len &&
			    !memcmp(it[i].k, bk->b, bk->len))
				break;
		if (b->flags & LODGE_B_TOMB) {
			if (i < n)
				it[i] = it[--n];
			continue;
		}
		if (i == n) {
			it[n].k = bk->b;
			it[n].klen = bk->len;
			it[n++].lslot = -1;
		}
		it[i].b = b;
		writes++;
	}
	item_sort(it, n);
	/* fits: a merge; else a split into pieces of at most t_split */
	split = n > t->t_split ||
		writes > t->slots - hweight64(le64_to_cpu(l->bitmap) &
					      lodge_bitmap_mask(t));
	keep = n;
	per = n;
	if (split) {
		unsigned int pieces = max_t(unsigned int, 2,
					    DIV_ROUND_UP(n, t->t_split));
		unsigned int free = t->slots -
			hweight64(le64_to_cpu(l->bitmap) & lodge_bitmap_mask(t));

		per = DIV_ROUND_UP(n, pieces);
		keep = per;
		for (;;) {
			for (i = 0, c = 0; i < keep; i++)
				c += !!it[i].b;
			if (c <= free)
				break;
			keep--;
		}
		nn = DIV_ROUND_UP(n - keep, per);
		if (x->nidx + nn + x->nbuf - ng > x->cap) {
			ret = LODGE_NEED_SPLIT;
			goto out;
		}
		if (fm) {
			f = fm->f;
			newl = fm->newl;
			cnt = fm->cnt;
			/* as kcalloc() leaves them: leaf.c reads newl[] */
			memset(f, 0, nn * sizeof(*f));
			memset(newl, 0, nn * sizeof(*newl));
			memset(cnt, 0, nn);
		} else {
			f = kcalloc(nn, sizeof(*f), GFP_ATOMIC | __GFP_NOWARN);
			newl = kcalloc(nn, sizeof(*newl),
				       GFP_ATOMIC | __GFP_NOWARN);
			cnt = kcalloc(nn, 1, GFP_ATOMIC | __GFP_NOWARN);
			if (!f || !newl || !cnt)
				goto out;
		}
		for (c = 0; c < nn; c++) {
			struct lodge_item *fi = &it[keep + c * per];

			f[c] = fence_new(fm, fi->k, fi->klen);
			if (!f[c])
				goto out;
			cnt[c] = min(per, n - keep - c * per);
		}
	}
	ret = lodge_leaf_commit(t, loff, it, n, keep, ts, newl, &c, per, fm);
	if (ret)
		goto out;
	/* DRAM: the group leaves the buffer, the new leaves join the index */
	for (i = 0; i < ng; i++) {
		struct lodge_vlog *v = x->buf_ver[g[i]];

		kfree(x->slot[g[i]].key);
		lodge_buf_remove(t, x, g[i]);
		lodge_log_put(t, v);
	}
	x->leaf_count[li] = keep;
	lodge_stat_inc(t, leaf_writes);
	lodge_stat_add(t, kvs_flushed, ng);
	if (nn) {
		index_insert(x, li, f, newl, cnt, nn);
		nn = 0;		/* the fences are the index's now */
		lodge_stat_inc(t, leaf_splits);
	} else if (!keep && li > 0 && !targeted(x, li - 1)) {
		/* an emptied leaf gives its space back (README, deletes) */
		lodge_leaf_unlink(t, x->slot[li - 1].w, loff);
		index_remove(x, li);
		lodge_stat_inc(t, merges);
	}
out:
	if (f)
		for (c = 0; c < nn; c++)
			kfree(f[c]);
	if (!fm) {
		kfree(f);
		kfree(newl);
		kfree(cnt);
		kfree(g);
		kfree(it);
	}
	return ret;
}

/*
 * Leaf @li lost its last key to a direct delete (lodge.c): unlink and
 * free it now when neither it nor its left neighbour has a buffered
 * write (lodge_leaf_unlink()'s rule); else the flush of its buffered
 * writes does it. The head leaf (slot 0 of the first node) stays.
 */
void lodge_lin_emptied(struct lodge *t, struct lodge_lin *x, int li)
{
	struct lodge_leaf *l = lodge_leaf_ptr(t, x->slot[li].w);

	if (li == 0 || (le64_to_cpu(READ_ONCE(l->bitmap)) &
			lodge_bitmap_mask(t)) ||
	    targeted(x, li) || targeted(x, li - 1))
		return;
	lodge_leaf_unlink(t, x->slot[li - 1].w, x->slot[li].w);
	index_remove(x, li);
	lodge_stat_inc(t, merges);
}

static unsigned int puts_for(struct lodge_lin *x, int li)
{
	unsigned int j, n = 0;

	for (j = x->nidx; j < x->nidx + x->nbuf; j++)
		n += x->leaf_count[j] == li &&
		     !(x->slot[j].flags & LODGE_B_TOMB);
	return n;
}

/**
 * lodge_flush - one leaf-count-based flush of node @x (§III-B)
 * @cut: 0 for the paper's flush; else flush only one leaf, the first
 *       with a KV in a log of version <= @cut (a drain, lodge.c)
 * @fm:  the flush memory, held by the caller, or NULL (GFP_ATOMIC)
 *
 * Return: 0 (progress, or nothing to flush under @cut),
 * LODGE_NEED_SPLIT (no progress: the node must split first), or < 0.
 */
int lodge_flush(struct lodge *t, struct lodge_lin *x, u64 cut,
		struct lodge_fmem *fm)
{
	int tgt[8], ntgt = 0, i, li, ret, done = 0;
	unsigned int j, tmax = min_t(unsigned int, t->t_node, ARRAY_SIZE(tgt));

	lockdep_assert_preemption_disabled();
	for (j = x->nidx; j < x->nidx + x->nbuf; j++) {
		li = x->leaf_count[j];
		if (cut && x->buf_ver[j]->version > cut)
			continue;
		for (i = 0; i < ntgt && tgt[i] != li; i++)
			;
		if (i < ntgt)
			continue;
		if (x->leaf_count[li] + puts_for(x, li) > t->t_split) {
			if (!ntgt)
				tgt[ntgt++] = li;
			break;
		}
		tgt[ntgt++] = li;
		if (cut || ntgt == tmax)
			break;
	}
	/* highest leaf first: a split or an unlink shifts only later ones */
	while (ntgt) {
		int hi = 0;

		for (i = 1; i < ntgt; i++)
			if (tgt[i] > tgt[hi])
				hi = i;
		li = tgt[hi];
		tgt[hi] = tgt[--ntgt];
		ret = flush_leaf(t, x, li, fm);
		if (ret == LODGE_NEED_SPLIT && done)
			return 0;
		if (ret)
			return ret;
		done++;
		lodge_stat_inc(t, flushes);
	}
	return 0;
}

/* Flush every buffered KV in a log of version <= @cut (all: U64_MAX). */
int lodge_flush_all(struct lodge *t, struct lodge_lin *x, u64 cut)
{
	unsigned int j;
	int ret;

	for (;;) {
		for (j = x->nidx; j < x->nidx + x->nbuf; j++)
			if (x->buf_ver[j]->version <= cut)
				break;
		if (j == x->nidx + x->nbuf)
			return 0;
		ret = lodge_flush(t, x, cut, NULL);
		if (ret)
			return ret;
	}
}
