// SPDX-License-Identifier: GPL-2.0
/*
 * The DRAM levels above the last-level nodes, and the hotness-aware
 * multiple split of a last-level node (§III-C).
 *
 * Upper nodes are plain B+-tree nodes of t->cap children, changed only
 * with t->tree held for writing (a node split), read with it held for
 * reading (every operation). key[0] of a node is unused.
 *
 * Multiple split (Fig. 7, 8, Formula 1): each node remembers the global
 * counter (the log sequence) at its penultimate (ps) and last (ls)
 * split, and M, the pieces of that split. When it splits again,
 * interval_lp = ls - ps is compared with interval_nl = now - ls: lp >
 * t * nl is a write burst (M + 1 pieces), lp * t < nl a cool-down
 * (M - 1), else M. The parent's free slots X then bound it: N = M when
 * M <= X, X when M > X and X != 1, 2 when X <= 1 (the parent splits).
 */
#include <linux/errno.h>
#include <linux/slab.h>
#include "lodge.h"

static int inode_child(struct lodge_inode *in, const u8 *k, u32 klen)
{
	int lo = 1, hi = in->count - 1, mid, r = 0;

	if (!k)
		return 0;
	while (lo <= hi) {
		mid = (lo + hi) / 2;
		if (lodge_kcmp(in->key[mid], k, klen) <= 0) {
			r = mid;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	return r;
}

/* The node for @k (NULL @k: the leftmost). Context: t->tree held. */
struct lodge_lin *lodge_find(struct lodge *t, const u8 *k, u32 klen)
{
	void *n = t->top;
	int h;

	for (h = t->height; h > 0; h--) {
		struct lodge_inode *in = n;

		n = in->child[inode_child(in, k, klen)];
	}
	return n;
}

struct lodge_path {
	struct lodge_inode	*n[16];
	int			i[16];
};

/* Upper nodes from the top down to level 1 on @k's way. */
static void find_path(struct lodge *t, const u8 *k, u32 klen,
		      struct lodge_path *p)
{
	void *n = t->top;
	int h;

	for (h = t->height; h > 0; h--) {
		struct lodge_inode *in = n;

		p->n[h] = in;
		p->i[h] = inode_child(in, k, klen);
		n = in->child[p->i[h]];
	}
}

/* Upper nodes allocated before a split changes anything. */
struct lodge_stash {
	unsigned int		n;
	struct lodge_inode	*in[LODGE_MSPLIT_MAX * 18];
};

static bool stash_fill(struct lodge *t, struct lodge_stash *st,
		       unsigned int want)
{
	while (st->n < want) {
		st->in[st->n] = kzalloc(sizeof(struct lodge_inode), GFP_KERNEL);
		if (!st->in[st->n])
			return false;
		st->n++;
	}
	return true;
}

static struct lodge_inode *stash_take(struct lodge *t, struct lodge_stash *st)
{
	atomic64_inc(&t->ninodes);
	return st->in[--st->n];
}

static void stash_free(struct lodge_stash *st)
{
	while (st->n)
		kfree(st->in[--st->n]);
}

/*
 * Insert (@sep, @child) into the level-1 node on @sep's way, splitting
 * nodes upwards as needed, with nodes from @st (height + 1 at most).
 */
static void inner_insert(struct lodge *t, struct lodge_key *sep, void *child,
			 struct lodge_stash *st)
{
	struct lodge_inode *in, *r, *top;
	struct lodge_path p;
	int h, i, half;

	find_path(t, sep->b, sep->len, &p);
	for (h = 1; h <= t->height; h++) {
		in = p.n[h];
		i = p.i[h] + 1;
		memmove(&in->key[i + 1], &in->key[i],
			(in->count - i) * sizeof(in->key[0]));
		memmove(&in->child[i + 1], &in->child[i],
			(in->count - i) * sizeof(in->child[0]));
		in->key[i] = sep;
		in->child[i] = child;
		in->count++;
		if (in->count <= t->cap)
			return;
		r = stash_take(t, st);
		half = in->count / 2;
		r->count = in->count - half;
		memcpy(r->key, &in->key[half], r->count * sizeof(r->key[0]));
		memcpy(r->child, &in->child[half],
		       r->count * sizeof(r->child[0]));
		in->count = half;
		sep = r->key[0];
		r->key[0] = NULL;
		child = r;
	}
	top = stash_take(t, st);
	top->count = 2;
	top->child[0] = t->top;
	top->key[1] = sep;
	top->child[1] = child;
	t->top = top;
	t->height++;
}

static struct lodge_inode *inode_alloc(struct lodge *t)
{
	struct lodge_inode *in = kzalloc(sizeof(*in), GFP_KERNEL);

	if (in)
		atomic64_inc(&t->ninodes);
	return in;
}

static struct lodge_key *key_dup(const struct lodge_key *k)
{
	return k ? lodge_key_new(k->b, k->len, GFP_KERNEL) : NULL;
}

/* How many pieces (§III-C, Formula 1) */
static unsigned int split_pieces(struct lodge *t, struct lodge_lin *x,
				 unsigned int xfree, bool *capped)
{
	u64 now = atomic64_read(&t->seq);
	u64 lp = x->ls - x->ps, nl = now - x->ls;
	unsigned int m = x->msplit;

	if (!t->multi)
		return 2;
	if (lp > t->hotness * nl)
		m++;
	else if (t->hotness * lp < nl)
		m--;
	m = clamp_t(unsigned int, m, 2, LODGE_MSPLIT_MAX);
	if (m <= xfree)
		return m;
	*capped = true;
	return xfree > 1 ? xfree : 2;
}

/**
 * lodge_split_lin - split the last-level node holding @k
 *
 * Takes t->tree for writing (no node lock is held by anyone then). A
 * node with a single leaf is rebuilt with more slots instead.
 *
 * Return: 0 or -ENOMEM.
 */
int lodge_split_lin(struct lodge *t, const u8 *k, u32 klen)
{
	struct lodge_lin *x, *y[LODGE_MSPLIT_MAX];
	struct lodge_key *sep[LODGE_MSPLIT_MAX] = {};
	unsigned int n, p, b, e, j, xfree, nb, cap;
	struct lodge_stash *st;
	struct lodge_path path;
	bool capped = false;
	int ret = -ENOMEM;

	st = kzalloc(sizeof(*st), GFP_KERNEL);
	if (!st)
		return -ENOMEM;

	percpu_down_write(&t->tree);
	x = lodge_find(t, k, klen);
	find_path(t, k, klen, &path);
	if (x->nidx + x->nbuf < x->cap) {	/* someone did it already */
		percpu_up_write(&t->tree);
		kfree(st);
		return 0;
	}
	xfree = t->height ? t->cap - path.n[1]->count : t->cap - 1;
	n = x->nidx < 2 ? 1 : min_t(unsigned int,
				    split_pieces(t, x, xfree, &capped),
				    x->nidx);
	memset(y, 0, sizeof(y));
	for (p = 0; p < n; p++) {
		b = x->nidx * p / n;
		e = x->nidx * (p + 1) / n;
		for (j = x->nidx, nb = 0; j < x->nidx + x->nbuf; j++)
			nb += x->leaf_count[j] >= b && x->leaf_count[j] < e;
		cap = max_t(unsigned int, t->cap, e - b + nb + 2);
		if (n == 1)
			cap = x->cap + 4;
		y[p] = lodge_lin_alloc(t, min_t(unsigned int, cap,
						LODGE_CAP_MAX), GFP_KERNEL);
		if (!y[p] || e - b + nb >= y[p]->cap)
			goto fail;
		y[p]->hi = p + 1 < n ? key_dup(x->slot[x->nidx * (p + 1) / n].key)
				     : key_dup(x->hi);
		if ((p + 1 < n || x->hi) && !y[p]->hi)
			goto fail;
	}
	/* the new low keys and separators, and the upper nodes they need */
	for (p = 1; p < n; p++) {
		y[p]->lo = key_dup(x->slot[x->nidx * p / n].key);
		sep[p] = key_dup(x->slot[x->nidx * p / n].key);
		if (!y[p]->lo || !sep[p])
			goto fail;
	}
	if (!stash_fill(t, st, (n - 1) * (t->height + n + 1)))
		goto fail;
	/* nothing can fail past here */
	for (p = 0; p < n; p++) {
		struct lodge_lin *z = y[p];

		b = x->nidx * p / n;
		e = x->nidx * (p + 1) / n;
		for (j = b; j < e; j++) {
			z->slot[j - b] = x->slot[j];
			z->leaf_count[j - b] = x->leaf_count[j];
		}
		if (p > 0) {
			/* slot 0's fence is the node's low bound: lo has it */
			kfree(z->slot[0].key);
			z->slot[0].key = NULL;
		}
		z->nidx = e - b;
		for (j = x->nidx; j < x->nidx + x->nbuf; j++) {
			int li = x->leaf_count[j];

			if (li < b || li >= e)
				continue;
			z->slot[z->nidx + z->nbuf] = x->slot[j];
			z->buf_ver[z->nidx + z->nbuf] = x->buf_ver[j];
			z->leaf_count[z->nidx + z->nbuf] = li - b;
			z->nbuf++;
		}
		z->msplit = n;
		z->ps = x->ls;
		z->ls = atomic64_read(&t->seq);
	}
	y[0]->lo = x->lo;
	x->lo = NULL;
	if (t->height == 0)
		t->top = y[0];
	else
		path.n[1]->child[path.i[1]] = y[0];
	for (p = 1; p < n; p++)
		inner_insert(t, sep[p], y[p], st);
	kfree(x->hi);
	lodge_lin_free(x, false);
	atomic64_dec(&t->nlins);
	lodge_stat_inc(t, lin_splits);
	lodge_stat_inc(t, pieces[n]);
	if (capped)
		lodge_stat_inc(t, capped);
	percpu_up_write(&t->tree);
	stash_free(st);
	kfree(st);
	return 0;
fail:
	stash_free(st);
	kfree(st);
	for (p = 0; p < n; p++)
		kfree(sep[p]);
	for (p = 0; p < n; p++) {
		if (!y[p])
			continue;
		kfree(y[p]->lo);
		kfree(y[p]->hi);
		kfree(y[p]);
		atomic64_dec(&t->nlins);
	}
	percpu_up_write(&t->tree);
	return ret;
}

/*
 * Build the upper levels over @n nodes in key order (open). Each node's
 * lo must be set (NULL for the first).
 */
int lodge_build(struct lodge *t, struct lodge_lin **lins, size_t n)
{
	void **lvl = (void **)lins, **up;
	struct lodge_key **keys, **ukeys;
	size_t cnt = n, i, m, fill = max_t(u32, 2, t->cap * 3 / 4);
	int h = 0;

	keys = kvcalloc(n, sizeof(*keys), GFP_KERNEL);
	if (!keys)
		return -ENOMEM;
	for (i = 1; i < n; i++) {
		keys[i] = key_dup(lins[i]->lo);
		if (!keys[i])
			goto nomem;
	}
	lvl = kvmalloc_array(n, sizeof(*lvl), GFP_KERNEL);
	if (!lvl)
		goto nomem;
	memcpy(lvl, lins, n * sizeof(*lvl));
	while (cnt > 1) {
		m = DIV_ROUND_UP(cnt, fill);
		up = kvmalloc_array(m, sizeof(*up), GFP_KERNEL);
		ukeys = kvcalloc(m, sizeof(*ukeys), GFP_KERNEL);
		if (!up || !ukeys) {
			kvfree(up);
			kvfree(ukeys);
			goto nomem_lvl;
		}
		for (i = 0; i < m; i++) {
			struct lodge_inode *in = inode_alloc(t);
			size_t b = cnt * i / m, e = cnt * (i + 1) / m, j;

			if (!in) {
				kvfree(ukeys);
				kvfree(up);
				goto nomem_lvl;
			}
			for (j = b; j < e; j++) {
				in->child[j - b] = lvl[j];
				in->key[j - b] = j > b ? keys[j] : NULL;
			}
			in->count = e - b;
			ukeys[i] = keys[b];
			up[i] = in;
		}
		kvfree(lvl);
		kvfree(keys);
		lvl = up;
		keys = ukeys;
		cnt = m;
		h++;
	}
	t->top = lvl[0];
	t->height = h;
	kvfree(lvl);
	kvfree(keys);
	return 0;
nomem_lvl:
	/* partial upper levels leak on this path only under -ENOMEM */
	kvfree(lvl);
nomem:
	for (i = 0; i < n; i++)
		kfree(keys[i]);
	kvfree(keys);
	return -ENOMEM;
}

static void free_rec(struct lodge *t, void *n, int h)
{
	struct lodge_inode *in = n;
	int i;

	if (!h) {
		lodge_lin_free(n, true);
		return;
	}
	for (i = 0; i < in->count; i++) {
		free_rec(t, in->child[i], h - 1);
		kfree(in->key[i]);
	}
	kfree(in);
}

/* Free every DRAM node (close, destroy). Buffer slots are dropped. */
void lodge_tree_free(struct lodge *t)
{
	if (t->top)
		free_rec(t, t->top, t->height);
	t->top = NULL;
	t->height = 0;
}

static int each_rec(struct lodge *t, void *n, int h, lodge_visit_t fn,
		    void *ctx)
{
	struct lodge_inode *in = n;
	int i, ret;

	if (!h)
		return fn(t, n, ctx);
	for (i = 0; i < in->count; i++) {
		ret = each_rec(t, in->child[i], h - 1, fn, ctx);
		if (ret)
			return ret;
	}
	return 0;
}

/* Every last-level node in key order. Context: t->tree held. */
int lodge_walk_lins(struct lodge *t, lodge_visit_t fn, void *ctx)
{
	return t->top ? each_rec(t, t->top, t->height, fn, ctx) : 0;
}
