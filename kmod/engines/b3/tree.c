// SPDX-License-Identifier: GPL-2.0
/*
 * B^3-tree: descents from the root (paper Algorithm 2 applied level by
 * level).
 *
 * At every page a descent first moves right while the key is at or
 * above the low key of the sibling, then searches the page's BST. In a
 * consistent tree a move right below the root never happens: a child
 * word always names the page whose low key is the low bound of the
 * word's range. A move right, or a page whose low key is not the range's
 * low bound, is a transient state: an SMO in flight (smo.c), or one a
 * crash cut short. Readers just follow it. Writers note it; under the
 * SMO mutex no SMO is in flight, so what they see then is a leftover and
 * they repair it (§3.3.2, lazily, when a writer meets it).
 *
 * Context: inside an epoch section (pages read stay mapped).
 */
#include <linux/err.h>
#include <linux/errno.h>
#include "b3.h"

/* Move right from @p while @k >= low(sibling) (or > with @strict). */
static struct b3_page *move_right(struct b3 *t, struct b3_page *p,
				  const struct b3_key *k, bool strict,
				  unsigned int *moves, int *err)
{
	struct b3_page *s;
	struct b3_key lk;
	u64 sib;
	int c;

	for (;;) {
		sib = b3_ld(&p->sibling);
		if (!sib)
			return p;
		if (!b3_page_ok(t, sib) || b3_pg(t, sib)->level != p->level)
			goto bad;
		s = b3_pg(t, sib);
		lk = b3_low(s);
		c = b3_cmp(k, &lk);
		if (c < 0 || (strict && !c))
			return p;
		if (++*moves > B3_MOVES_MAX)
			goto bad;
		p = s;
	}
bad:
	*err = -EUCLEAN;
	return NULL;
}

/**
 * b3_find_leaf - the leaf page for @k, lock free
 * @err:   -EUCLEAN when the structure is corrupt (NULL returned)
 * @moved: set when a move right was needed below the root (may be NULL)
 *
 * Return: the leaf, or NULL (empty index, or @err).
 */
struct b3_page *b3_find_leaf(struct b3 *t, const struct b3_key *k, int *err,
			     bool *moved)
{
	unsigned int moves = 0, n;
	struct b3_page *p;
	struct b3_key nk;
	u64 off, w;
	const struct b3_inode *node;

	*err = 0;
	off = b3_ld(&t->root->top);
	if (!off)
		return NULL;
	if (!b3_page_ok(t, off))
		goto bad;
	p = b3_pg(t, off);
	for (;;) {
		p = move_right(t, p, k, false, &moves, err);
		if (!p)
			return NULL;
		if (moved && moves)
			*moved = true;
		if (!p->level)
			return p;
		w = b3_ld(&p->root);
		n = 0;
		while (b3_w_is_slot(w)) {
			if (++n > B3_SLOTS)
				goto bad;
			node = &p->i[w - 1];
			nk = b3_node_key(t, &node->key,
					 le32_to_cpu(READ_ONCE(node->meta)));
			w = b3_ld(b3_cmp(k, &nk) < 0 ? &node->left : &node->right);
		}
		if (!b3_w_is_page(w) || !b3_page_ok(t, w) ||
		    b3_pg(t, w)->level != p->level - 1)
			goto bad;
		p = b3_pg(t, w);
	}
bad:
	*err = -EUCLEAN;
	return NULL;
}

/**
 * b3_descend - a writer's descent to @level, recording the path
 *
 * Return: 0 (@path filled from its top down to @level; @path->bad the
 * highest transient level or -1), -ENOENT for an empty index, -EUCLEAN.
 */
int b3_descend(struct b3 *t, const struct b3_key *k, int level,
	       struct b3_path *path)
{
	struct b3_key lo = {}, hi = {}, nk;
	struct b3_ref ref = {}, gref = {};
	struct b3_page *p, *x;
	unsigned int moves = 0, prev, n;
	struct b3_step *st;
	const struct b3_inode *node;
	bool first = true;
	u64 off, w;
	int err = 0, c;

	path->bad = -1;
	off = b3_ld(&t->root->top);
	if (!off)
		return -ENOENT;
	if (!b3_page_ok(t, off))
		return -EUCLEAN;
	x = b3_pg(t, off);
	path->top = x->level;
	if (x->level < level)
		return -EUCLEAN;
	lo.p = (const u8 *)"";
	for (;;) {
		prev = moves;
		p = move_right(t, x, k, false, &moves, &err);
		if (!p)
			return err;
		st = &path->lv[p->level];
		st->pg = p;
		st->ref = ref;
		st->gref = gref;
		st->lo = lo;
		st->hi = hi;
		nk = b3_low(x);
		st->transient = !first && (moves != prev || b3_cmp(&nk, &lo));
		if (st->transient && path->bad < p->level)
			path->bad = p->level;
		first = false;
		if (p->level == level)
			return 0;
		if (moves != prev) {
			/* inside @p, ranges narrow from @p's own */
			lo = b3_low(p);
			off = b3_ld(&p->sibling);
			hi.p = NULL;
			if (off)
				hi = b3_low(b3_pg(t, off));
		}
		/* the range of the page's root word: the page's own */
		gref.pg = p;
		gref.slot = -1;
		ref = gref;
		w = b3_ld(&p->root);
		n = 0;
		while (b3_w_is_slot(w)) {
			if (++n > B3_SLOTS)
				return -EUCLEAN;
			node = &p->i[w - 1];
			nk = b3_node_key(t, &node->key,
					 le32_to_cpu(READ_ONCE(node->meta)));
			c = b3_cmp(k, &nk);
			gref = ref;
			ref.pg = p;
			ref.slot = w - 1;
			ref.right = c >= 0;
			if (c < 0) {
				hi = nk;
				w = b3_ld(&node->left);
			} else {
				lo = nk;
				w = b3_ld(&node->right);
			}
		}
		if (!b3_w_is_page(w) || !b3_page_ok(t, w) ||
		    b3_pg(t, w)->level != p->level - 1)
			return -EUCLEAN;
		x = b3_pg(t, w);
	}
}

/**
 * b3_left_of - the page whose sibling is @p (its left neighbour on its
 *              level)
 *
 * Descends towards the largest key below low(@p), then walks the level.
 * Only the first page of a level has an empty low key; every other page
 * has a left neighbour, so not finding it is corruption.
 * Context: under t->smo (no SMO changes the levels meanwhile).
 * Return: the page, NULL when @p is the first of its level, or
 * ERR_PTR(-EUCLEAN).
 */
struct b3_page *b3_left_of(struct b3 *t, struct b3_page *p)
{
	struct b3_key low = b3_low(p), nk;
	unsigned int moves = 0, n;
	const struct b3_inode *node;
	struct b3_page *x;
	u64 off, w;
	int err = 0;

	if (!low.len)
		return NULL;
	off = b3_ld(&t->root->top);
	if (!off || !b3_page_ok(t, off))
		return ERR_PTR(-EUCLEAN);
	x = b3_pg(t, off);
	while (x->level > p->level) {
		x = move_right(t, x, &low, true, &moves, &err);
		if (!x)
			return ERR_PTR(-EUCLEAN);
		w = b3_ld(&x->root);
		n = 0;
		while (b3_w_is_slot(w)) {
			if (++n > B3_SLOTS)
				return ERR_PTR(-EUCLEAN);
			node = &x->i[w - 1];
			nk = b3_node_key(t, &node->key,
					 le32_to_cpu(READ_ONCE(node->meta)));
			/* strictly below low(@p): left at an equal separator */
			w = b3_ld(b3_cmp(&low, &nk) <= 0 ? &node->left : &node->right);
		}
		if (!b3_w_is_page(w) || !b3_page_ok(t, w))
			return ERR_PTR(-EUCLEAN);
		x = b3_pg(t, w);
	}
	for (n = 0; n < B3_MOVES_MAX; n++) {
		off = b3_ld(&x->sibling);
		if (off == b3_pgoff(t, p))
			return x;
		if (!off || !b3_page_ok(t, off))
			break;
		x = b3_pg(t, off);
	}
	return ERR_PTR(-EUCLEAN);
}
