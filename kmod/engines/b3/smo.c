// SPDX-License-Identifier: GPL-2.0
/*
 * B^3-tree: structure modifications (SMOs), logless (paper §3.3).
 *
 * Every SMO runs under t->smo inside one epoch section, builds its new
 * pages off to the side (copy-on-write, each a complete BST: the lazy
 * rebalancing of §3.3.5), persists them, and then changes the index by
 * single 8-byte stores, each flushed and fenced before the next, each
 * leaving a consistent index (format.h). New pages and blobs not yet
 * linked when the power goes are not reachable and the allocator's trace
 * frees them.
 *
 * Replacing page m of a level by a chain c1..ck (swap_in(), the order of
 * Algorithm 3; k = 2 for a split, 1 for a defragmentation or a merge):
 *   1. the child word of m := l, m's left neighbour. Readers for m's
 *      range reach l and move right to m: l and m are one logical page;
 *   2. l->sibling := c1. One store swaps m out of the level for
 *      c1..ck, whose last sibling is m's sibling;
 *   3. the child word := the new page, or the new separator node (split:
 *      written and persisted in a free slot of the parent beforehand).
 * When m is the first page of its level no sibling word names it: 3
 * alone swaps it. The root page is replaced by storing b3_root.top.
 *
 * Merge (§3.3.3) of adjacent leaves A, B under one parent page, where
 * the separator node q between them has A as its left child or B as its
 * right child (every leaf has such a neighbour; the other shape needs a
 * rotation and is not merged, as in Algorithm 4's cases):
 *   A = q.left:  the child word of B := A; q's word := q.right;
 *   B = q.right: q's word := q.left;
 * after which one word names A with B's range as well (a split whose
 * node is not in yet), then swap_in() replaces A (and B behind it) by
 * the merged page.
 *
 * Redistribution (§3.3.4), when A and B do not fit in half a page: the
 * same q-removal stores, then swap_in() replaces A (and B) by n' and m',
 * A's and B's nodes shared out evenly (n'.sibling = m', m'.sibling =
 * B.sibling), with step 3 storing a new separator node q' (key low(m'),
 * children n' and m', written and persisted in a free slot of the parent
 * beforehand): from the q-removal on, this is exactly a split of one page
 * A|B, and every state a crash leaves is one fix_path() repairs (at most
 * two pages of the chain under one word).
 *
 * The same protocol runs at every level: an internal page P and its
 * neighbour under the same parent page merge (or share out) into pages
 * whose separators are P's, a new copy of q's key (= low(B): between
 * P's last child and B's first) and B's. The children do not move. A
 * page that is its parent's only child (no q) has its parent merged with
 * the parent's neighbour first, and a merge that leaves its parent under
 * B3_MERGE_UNDER separators merges the parent in turn; the root
 * collapses into its only child.
 *
 * Leftovers of a crash are the intermediate states above: a child word
 * naming a page to the left of its range, or a range spanning two pages
 * of a chain. Writers that meet one (tree.c) come here; b3_fix() puts
 * the chain pages of the word's range under it: the word := the one
 * page, or := new separator nodes for the pages (§3.3.2: a half-done
 * split is finished, a half-done merge is undone).
 *
 * A leftover word names a page l that keeps its own word too. Nobody
 * whose key is in l's range passes the leftover, so an SMO can retire l
 * through l's own word; the leftover would then name a retired page. So
 * before any SMO retires a page X, the word covering low(X's sibling) is
 * repaired (before_retire()): every leftover names the page just left of
 * its range, so that is the only other word that can name X. The SMO
 * then starts over from its own descent.
 *
 * What an SMO unlinks (the replaced pages, the blobs only they owned, a
 * removed separator's) comes from words of the media. On a corrupt
 * image those may name a freed object or one object twice, so all of an
 * SMO's txns are checked together before its first store
 * (b3_txn_check()): -EUCLEAN, the media unchanged by the SMO, its new
 * pages and blobs given back.
 */
#include <linux/err.h>
#include <linux/errno.h>
#include <linux/string.h>
#include "core/blob.h"
#include "b3.h"

#define FIX_MAX		4	/* pages under one child word in a leftover */
#define NEED_FIX	3	/* before_retire() found a leftover to repair */

/*
 * Retirees: an SMO step retires the pages it replaced and the blobs of
 * separators it removed inside its section, where a full epoch list
 * (atomic memory short) would abandon them until the next attach. So
 * each step that retires asks for room for its own retirees before it
 * changes anything, and without room the whole SMO is unwound to its
 * caller (B3_NO_ROOM), which frees the lists with a barrier where it may
 * sleep and runs the SMO again (b3.c smo_again()). The steps done before
 * each left a consistent index for the second run to start from (a
 * merge may then merge the merged page again: harmless). That run goes
 * on whatever the answers, so it is not bounded: the barrier left every
 * list empty and at least LIMBO_FIRST slots long, but a merge chain up a
 * deep tree can retire more, and other sections may refill the list of
 * the CPU we come back on. Abandoning stays the epoch's last resort.
 */
static int b3_smo_room(struct b3 *t, unsigned int n)
{
	if (pmidx_epoch_room(&t->pool->epoch, n) || t->smo_emptied)
		return 0;
	return B3_NO_ROOM;
}

static void persist_page(struct b3 *t, struct b3_page *p)
{
	pmidx_persist(t->pm, p, B3_NODES_OFF + b3_used(t, p) * B3_NODE_SIZE);
}

/* A page never linked: back to the allocator at once. */
static void page_drop(struct b3 *t, u64 off)
{
	if (!off)
		return;
	this_cpu_dec(t->pcpu->pages);
	pmidx_free(&t->pool->alloc, off);
}

/*
 * See the file comment. @l: the left neighbour of the replaced page, from
 * b3_left_of() (NULL: the first page of its level), looked up before the
 * SMO's first store, so that a failed lookup changes nothing: with a
 * wrong @l the replaced page would stay in its chain and the new ones
 * be reachable only through @ref, which the trace does not follow.
 *
 * Transactions (README): @sw, taken and filled by the caller, holds what
 * the swap links (the new pages c1..ck) and unlinks (the replaced pages
 * and the blobs only they owned); it goes on the store that takes the
 * replaced page out of its chain: step 2 (l->sibling), or step 3 when
 * there is no @l. @fin: what step 3 alone links when it follows step 2
 * (a split's new separator blob), NULL or empty when nothing; with no
 * @l, the caller put that into @sw too and passes no @fin.
 */
static void swap_in(struct b3 *t, struct b3_page *l, __le64 *ref, u64 first,
		    u64 final, struct pmidx_txn *sw, struct pmidx_txn *fin)
{
	if (l) {
		b3_commit(t, ref, b3_pgoff(t, l));
		b3_commit_txn(t, sw, &l->sibling, first);
		b3_commit_txn(t, fin, ref, final);
		return;
	}
	WARN_ON_ONCE(fin && fin->slot >= 0);
	b3_commit_txn(t, sw, ref, final);
}

/* The key blob of separator @n (if any) is unlinked (linked) by txn @x. */
static void txn_free_sep(struct b3 *t, struct pmidx_txn *x,
			 const struct b3_inode *n)
{
	if (le32_to_cpu(n->meta) & B3_M_KBLOB)
		b3_txn_blob_out(t, x, le64_to_cpu(n->key));
}

static void txn_alloc_sep(struct b3 *t, struct pmidx_txn *x,
			  const struct b3_inode *n)
{
	if (le32_to_cpu(n->meta) & B3_M_KBLOB)
		b3_txn_blob_in(t, x, le64_to_cpu(n->key));
}

/*
 * Before an SMO retires page @x (file comment): is the path to low(@x's
 * sibling) at @x's level free of leftovers? A lock-free descent; the
 * caller may hold page locks.
 * Return: 0 yes; NEED_FIX no (the key saved for @x's level: the caller
 * drops its locks, repairs with fix_saved(), starts over); < 0 an error.
 */
static int before_retire(struct b3 *t, struct b3_page *x)
{
	struct b3_scratch *s = t->scr;
	u64 sib = b3_ld(&x->sibling);
	struct b3_key lk;
	int ret;

	if (!sib)
		return 0;
	if (!b3_page_ok(t, sib))
		return -EUCLEAN;
	lk = b3_low(b3_pg(t, sib));
	ret = b3_descend(t, &lk, x->level, &s->check);
	if (ret)
		return ret == -ENOENT ? -EUCLEAN : ret;
	if (s->check.bad < 0)
		return 0;
	memcpy(s->fix_key[x->level], lk.p, lk.len);
	s->fix_len[x->level] = lk.len;
	s->fix_level = x->level;
	return NEED_FIX;
}

/* The live nodes of locked page @p into the scratch. Return: count. */
static int gather(struct b3 *t, struct b3_page *p, struct b3_lnode *ln,
		  struct b3_inode *in, u64 *child)
{
	struct b3_scratch *s = t->scr;
	int n, i;

	if (!p->level) {
		n = b3_leaf_inorder(t, p, s->slots);
		for (i = 0; i < n; i++)
			ln[i] = p->l[s->slots[i]];
	} else {
		n = b3_inner_inorder(t, p, child, s->slots);
		for (i = 0; i < n; i++)
			in[i] = p->i[s->slots[i]];
	}
	return n;
}

/* Copy-on-write of locked page @p at level @lvl into a complete BST. */
static int defrag(struct b3 *t, struct b3_path *path, int lvl)
{
	struct b3_scratch *s = t->scr;
	struct b3_page *p = path->lv[lvl].pg, *np, *l;
	struct b3_key low = b3_low(p);
	struct pmidx_txn sw, *xs[] = { &sw };
	s64 bytes = this_cpu_read(t->pcpu->blob_bytes);
	int n;
	u64 o;

	n = b3_smo_room(t, 1);		/* @p */
	if (n)
		return n;
	n = gather(t, p, s->ln, s->in, s->child);
	if (n < 0)
		return n;
	l = b3_left_of(t, p);
	if (IS_ERR(l))
		return PTR_ERR(l);
	o = b3_page_new(t, p->level, &low);
	if (!o)
		return -ENOSPC;
	np = b3_pg(t, o);
	if (!p->level)
		b3_build_leaf(t, np, s->ln, n);
	else
		b3_build_inner(t, np, s->child, s->in, n);
	np->sibling = cpu_to_le64(b3_ld(&p->sibling));
	persist_page(t, np);
	if (b3_txn_begin(t, &sw)) {
		page_drop(t, o);
		return -EBUSY;
	}
	pmidx_txn_alloc(&sw, o);
	pmidx_txn_free(&sw, b3_pgoff(t, p));
	if (b3_txn_check(t, xs, 1, bytes)) {
		page_drop(t, o);
		return -EUCLEAN;
	}
	swap_in(t, l, b3_ref_word(t, &path->lv[lvl].ref), o, o, &sw, NULL);
	b3_kill(t, p);
	b3_page_retire(t, b3_pgoff(t, p));
	this_cpu_inc(t->pcpu->defrags);
	return 0;
}

/*
 * Split locked page @p at level @lvl in two (Algorithm 3); the parent has a
 * free slot (or @p is the root, which grows a new root page).
 */
static int split(struct b3 *t, struct b3_path *path, int lvl)
{
	struct b3_scratch *s = t->scr;
	struct b3_page *p = path->lv[lvl].pg, *n1, *n2, *r = NULL, *par = NULL;
	struct b3_page *l = NULL;
	struct b3_key low = b3_low(p), k2, none = { (const u8 *)"", 0 };
	struct b3_inode median = {}, *sep;
	struct pmidx_txn sw, fin, *f = NULL, *xs[2] = { &sw };
	u64 o1 = 0, o2 = 0, orr = 0;
	int n, m, ret = -ENOSPC;
	u32 slot = 0;
	s64 bytes;

	n = b3_smo_room(t, 2);		/* @p, and the median's blob */
	if (n)
		return n;
	n = gather(t, p, s->ln, s->in, s->child);
	if (n < 0)
		return n;
	if (n < 3)
		return -EUCLEAN;	/* a full page holds more */
	m = n / 2;
	if (!p->level) {
		k2 = b3_node_key(t, &s->ln[m].key, le32_to_cpu(s->ln[m].meta));
	} else {
		median = s->in[m];
		k2 = b3_node_key(t, &median.key, le32_to_cpu(median.meta));
	}
	if (lvl != path->top) {
		l = b3_left_of(t, p);
		if (IS_ERR(l))
			return PTR_ERR(l);
	} else if (b3_pgoff(t, p) != b3_ld(&t->root->top) || b3_ld(&p->sibling)) {
		/*
		 * A root page never has a sibling (no SMO gives it one): a
		 * new root over a page reached by moving right would drop
		 * the pages left of it.
		 */
		return -EUCLEAN;
	}
	o1 = b3_page_new(t, p->level, &low);
	o2 = b3_page_new(t, p->level, &k2);
	if (!o1 || !o2)
		goto fail;
	if (lvl == path->top) {
		orr = b3_page_new(t, p->level + 1, &none);
		if (!orr)
			goto fail;
	}
	n1 = b3_pg(t, o1);
	n2 = b3_pg(t, o2);
	if (!p->level) {
		b3_build_leaf(t, n1, s->ln, m);
		b3_build_leaf(t, n2, s->ln + m, n - m);
	} else {
		b3_build_inner(t, n1, s->child, s->in, m);
		b3_build_inner(t, n2, s->child + m + 1, s->in + m + 1, n - m - 1);
	}
	n1->sibling = cpu_to_le64(o2);
	n2->sibling = cpu_to_le64(b3_ld(&p->sibling));
	persist_page(t, n1);
	persist_page(t, n2);
	if (orr) {
		/* root split: a new root page, linked by one store */
		r = b3_pg(t, orr);
		sep = &r->i[0];
	} else {
		par = path->lv[lvl + 1].pg;
		slot = b3_used(t, par);
		sep = &par->i[slot];
	}
	ret = b3_sep_make(t, sep, &k2, o1, o2);
	if (ret)
		goto fail;
	/* txns: the pages (and the new separator's blob) in, @p out */
	bytes = this_cpu_read(t->pcpu->blob_bytes);
	ret = b3_txn_begin(t, &sw);
	if (!ret && l) {
		ret = b3_txn_begin(t, &fin);
		if (ret)
			b3_txn_cancel(t, &sw);
		f = &fin;
	}
	if (ret) {
		b3_sep_free(t, sep, true);
		goto fail;
	}
	pmidx_txn_alloc(&sw, o1);
	pmidx_txn_alloc(&sw, o2);
	if (orr)
		pmidx_txn_alloc(&sw, orr);
	txn_alloc_sep(t, f ?: &sw, sep);
	pmidx_txn_free(&sw, b3_pgoff(t, p));
	if (p->level)
		txn_free_sep(t, &sw, &median);
	xs[1] = f;
	if (b3_txn_check(t, xs, f ? 2 : 1, bytes)) {
		b3_sep_free(t, sep, true);
		ret = -EUCLEAN;
		goto fail;
	}
	if (orr) {
		r->root = cpu_to_le64(1);
		b3_set_cnt(t, r, 1, 1);
		persist_page(t, r);
		b3_commit_txn(t, &sw, &t->root->top, orr);
		this_cpu_inc(t->pcpu->root_splits);
	} else {
		pmidx_persist(t->pm, sep, B3_NODE_SIZE);
		b3_set_cnt(t, par, slot + 1, b3_live(t, par) + 1);
		swap_in(t, l, b3_ref_word(t, &path->lv[lvl].ref), o1, slot + 1,
			&sw, f);
	}
	/* the median moved up as a new copy; @p's one goes with @p */
	if (p->level)
		b3_sep_free(t, &median, false);
	b3_kill(t, p);
	b3_page_retire(t, b3_pgoff(t, p));
	this_cpu_inc(t->pcpu->splits);
	return 0;
fail:
	page_drop(t, o1);
	page_drop(t, o2);
	page_drop(t, orr);
	return ret;
}

/*
 * Make room for @need nodes in the page at level @lvl of @path.
 * Return: 0 there is room, 1 an SMO ran (descend again), < 0 an error.
 */
static int room_at(struct b3 *t, struct b3_path *path, int lvl, u32 need)
{
	struct b3_page *p = path->lv[lvl].pg;
	int ret;

	ret = b3_lock(t, p);
	if (ret)
		return ret == -EAGAIN ? 1 : ret;
	if (b3_used(t, p) + need <= B3_CAP) {
		b3_unlock(t, p);
		return 0;
	}
	/* @p will be retired */
	ret = before_retire(t, p);
	if (ret) {
		b3_unlock(t, p);
		return ret;
	}
	if (b3_live(t, p) + need <= B3_DEFRAG_MAX) {
		ret = defrag(t, path, lvl);
	} else {
		ret = lvl < path->top ? room_at(t, path, lvl + 1, 1) : 0;
		if (!ret)
			ret = split(t, path, lvl);
		else if (ret == 1)
			ret = 2;
	}
	if (ret) {
		b3_unlock(t, p);
		return ret == 2 ? 1 : ret;
	}
	return 1;
}

/*
 * Put the pages of the range of the child word at the highest transient
 * level of @path under that word (file comment).
 * Return: 1 repaired (descend again), NEED_FIX (nothing done), < 0 an
 * error.
 */
static int fix_path(struct b3 *t, struct b3_path *path)
{
	struct b3_step *st = &path->lv[path->bad];
	struct b3_page *pages[FIX_MAX], *x, *sp, *par;
	unsigned int k = 0, moves = 0;
	struct pmidx_txn txn;
	struct b3_key lk;
	__le64 *ref;
	u32 base, j;
	u64 sib;
	int ret;

	if (!st->ref.pg)
		return -EUCLEAN;	/* the root is never transient */
	ref = b3_ref_word(t, &st->ref);
	if (!b3_page_ok(t, b3_ld(ref)))
		return -EUCLEAN;
	x = b3_pg(t, b3_ld(ref));
	/* the page holding the range's low bound... */
	for (;;) {
		sib = b3_ld(&x->sibling);
		if (!sib || ++moves > B3_MOVES_MAX)
			break;
		if (!b3_page_ok(t, sib))
			return -EUCLEAN;
		sp = b3_pg(t, sib);
		lk = b3_low(sp);
		if (b3_cmp(&lk, &st->lo) > 0)
			break;
		x = sp;
	}
	lk = b3_low(x);
	if (b3_cmp(&lk, &st->lo))
		return -EUCLEAN;	/* no SMO of ours leaves this */
	/* ...and those starting inside the range */
	pages[k++] = x;
	for (;;) {
		sib = b3_ld(&x->sibling);
		if (!sib)
			break;
		if (!b3_page_ok(t, sib))
			return -EUCLEAN;
		sp = b3_pg(t, sib);
		lk = b3_low(sp);
		if (st->hi.p && b3_cmp(&lk, &st->hi) >= 0)
			break;
		if (k == FIX_MAX)
			return -EUCLEAN;
		pages[k++] = x = sp;
	}
	if (k > 1) {
		ret = room_at(t, path, path->bad + 1, k - 1);
		if (ret)
			return ret;
	}
	par = st->ref.pg;
	base = b3_used(t, par);
	for (j = 0; j + 1 < k; j++) {
		lk = b3_low(pages[j + 1]);
		ret = b3_sep_make(t, &par->i[base + j], &lk,
				  b3_pgoff(t, pages[j]),
				  j + 2 < k ? base + j + 2 :
					      b3_pgoff(t, pages[k - 1]));
		if (ret)
			goto unwind;
	}
	/* txn: the new separators' blobs (the pages are in their chain) */
	ret = b3_txn_begin(t, &txn);
	if (ret)
		goto unwind;
	for (j = 0; j + 1 < k; j++)
		txn_alloc_sep(t, &txn, &par->i[base + j]);
	if (k > 1) {
		pmidx_persist(t->pm, &par->i[base], (k - 1) * B3_NODE_SIZE);
		b3_set_cnt(t, par, base + k - 1, b3_live(t, par) + k - 1);
	}
	b3_commit_txn(t, &txn, ref, k > 1 ? base + 1 : b3_pgoff(t, pages[0]));
	this_cpu_inc(t->pcpu->repairs);
	return 1;
unwind:
	while (j--)
		b3_sep_free(t, &par->i[base + j], true);
	return ret;
}

/*
 * Repair every leftover on the path to the key before_retire() saved for
 * @level. Nested repairs are for higher levels only (fix_path() makes
 * room above the leftover's level), so this recursion is bounded.
 * Return: 0, < 0 an error.
 */
static int fix_saved(struct b3 *t, int level)
{
	struct b3_scratch *s = t->scr;
	struct b3_key k = { s->fix_key[level], s->fix_len[level] };
	int ret;

	for (;;) {
		ret = b3_descend(t, &k, level, &s->path);
		if (ret)
			return ret == -ENOENT ? -EUCLEAN : ret;
		if (s->path.bad < 0)
			return 0;
		ret = fix_path(t, &s->path);
		if (ret == NEED_FIX)
			ret = s->fix_level > level ? fix_saved(t, s->fix_level) :
						     -EUCLEAN;
		if (ret < 0)
			return ret;
	}
}

/* An SMO step's result: NEED_FIX is repaired here. Return: 0 go on, < 0 */
static int settle(struct b3 *t, int ret)
{
	if (ret == NEED_FIX)
		return fix_saved(t, t->scr->fix_level);
	return min(ret, 0);
}

/**
 * b3_del_cow - delete @k from its leaf by copying the page without it
 * @kw, @vw, @meta: the deleted node's words (its blobs: the caller's)
 * @live: keys left in the page
 *
 * Context: under t->smo, inside an epoch section.
 * Return: 0, -ENOENT, -EAGAIN (look again: a simple delete may do now).
 */
int b3_del_cow(struct b3 *t, const struct b3_key *k, __le64 *kw, __le64 *vw,
	       u32 *meta, u32 *live)
{
	struct b3_scratch *s = t->scr;
	struct b3_path *path = &s->path;
	struct b3_lpos pos;
	struct b3_page *p, *np, *l;
	struct pmidx_txn sw, *xs[] = { &sw };
	struct b3_key low;
	int ret, n, i;
	s64 bytes;
	u64 o;

	for (;;) {
		ret = b3_descend(t, k, 0, path);
		if (ret)
			return ret;
		if (path->bad < 0)
			ret = before_retire(t, path->lv[0].pg);
		else
			ret = fix_path(t, path);
		if (!ret)
			break;
		ret = settle(t, ret);
		if (ret)
			return ret;
	}
	p = path->lv[0].pg;
	ret = b3_smo_room(t, 1);	/* @p: the node's blobs, the caller */
	if (ret)
		return ret;
	ret = b3_lock(t, p);
	if (ret)
		return ret;
	ret = b3_leaf_find(t, p, k, &pos);
	if (!ret && pos.slot < 0)
		ret = -ENOENT;
	if (ret)
		goto out;
	n = gather(t, p, s->ln, NULL, NULL);
	for (i = 0; i < n && s->slots[i] != pos.slot; i++)
		;
	ret = -EUCLEAN;
	if (n < 0 || i == n)
		goto out;
	*kw = s->ln[i].key;
	*vw = s->ln[i].val;
	*meta = le32_to_cpu(s->ln[i].meta);
	memmove(&s->ln[i], &s->ln[i + 1], (n - i - 1) * sizeof(s->ln[0]));
	l = b3_left_of(t, p);
	ret = PTR_ERR_OR_ZERO(l);
	if (ret)
		goto out;
	low = b3_low(p);
	/* a delete must work on a full pool: the index's reserve page */
	o = b3_page_new_reserve(t, 0, &low);
	ret = -ENOSPC;
	if (!o)
		goto out;
	np = b3_pg(t, o);
	b3_build_leaf(t, np, s->ln, n - 1);
	np->sibling = cpu_to_le64(b3_ld(&p->sibling));
	persist_page(t, np);
	/* txn: the copy in; the page and the deleted node's blobs out */
	bytes = this_cpu_read(t->pcpu->blob_bytes);
	ret = b3_txn_begin(t, &sw);
	if (ret) {
		page_drop(t, o);
		goto out;
	}
	pmidx_txn_alloc(&sw, o);
	pmidx_txn_free(&sw, b3_pgoff(t, p));
	if (*meta & B3_M_KBLOB)
		b3_txn_blob_out(t, &sw, le64_to_cpu(*kw));
	if (*meta & B3_M_VBLOB)
		b3_txn_blob_out(t, &sw, le64_to_cpu(*vw));
	ret = b3_txn_check(t, xs, 1, bytes);
	if (ret) {
		page_drop(t, o);
		goto out;
	}
	swap_in(t, l, b3_ref_word(t, &path->lv[0].ref), o, o, &sw, NULL);
	b3_kill(t, p);
	b3_page_retire(t, b3_pgoff(t, p));
	this_cpu_inc(t->pcpu->defrags);
	this_cpu_dec(t->pcpu->keys);
	*live = n - 1;
	return 0;
out:
	b3_unlock(t, p);
	return ret;
}

/* An empty index gets its first leaf: one store of b3_root.top. */
static int first_leaf(struct b3 *t)
{
	struct b3_key none = { (const u8 *)"", 0 };
	u64 o = b3_page_new(t, 0, &none);
	struct pmidx_txn txn;

	if (!o)
		return -ENOSPC;
	persist_page(t, b3_pg(t, o));
	if (b3_txn_begin(t, &txn)) {
		page_drop(t, o);
		return -EBUSY;
	}
	pmidx_txn_alloc(&txn, o);
	b3_commit_txn(t, &txn, &t->root->top, o);
	return 0;
}

/**
 * b3_make_room - room for one more node in the leaf of @k (and the index
 *                has a leaf at all): repairs, defragments, splits
 *
 * Context: under t->smo, inside an epoch section.
 */
int b3_make_room(struct b3 *t, const struct b3_key *k)
{
	struct b3_path *path = &t->scr->path;
	int ret;

	for (;;) {
		ret = b3_descend(t, k, 0, path);
		if (ret == -ENOENT)
			return first_leaf(t);
		if (ret)
			return ret;
		if (path->bad >= 0)
			ret = fix_path(t, path);
		else
			ret = room_at(t, path, 0, 1);
		if (ret == NEED_FIX)
			ret = settle(t, ret) ?: 1;
		if (ret <= 0)
			return ret;
	}
}

/**
 * b3_fix - repair every leftover on the path of @k
 * Context: under t->smo, inside an epoch section.
 */
int b3_fix(struct b3 *t, const struct b3_key *k)
{
	struct b3_path *path = &t->scr->path;
	int ret;

	for (;;) {
		ret = b3_descend(t, k, 0, path);
		if (ret)
			return ret == -ENOENT ? 0 : ret;
		if (path->bad < 0)
			return 0;
		ret = settle(t, fix_path(t, path));
		if (ret)
			return ret;
	}
}

/* A root page left with one child and no separator gives way to it. */
static void collapse_root(struct b3 *t)
{
	u64 off = b3_ld(&t->root->top), w;
	struct pmidx_txn txn, *xs[] = { &txn };
	struct b3_page *r;

	while (off) {
		r = b3_pg(t, off);
		w = b3_ld(&r->root);
		/* the new top must be a live page too (b3_recover()) */
		if (!r->level || !b3_w_is_page(w) || b3_ld(&r->sibling) ||
		    !b3_page_ok(t, w) || b3_ld(&b3_pg(t, w)->sibling) ||
		    !pmidx_alloc_media_committed(&t->pool->alloc, w))
			return;
		/* txn: the old root page out (a later merge tries again) */
		if (b3_smo_room(t, 1) || b3_txn_begin(t, &txn))
			return;
		pmidx_txn_free(&txn, off);
		if (b3_txn_check(t, xs, 1, this_cpu_read(t->pcpu->blob_bytes)))
			return;
		b3_commit_txn(t, &txn, &t->root->top, w);
		b3_page_retire(t, off);
		off = w;
	}
}

/* The level of the root page, -1 for an empty index. */
static int top_level(struct b3 *t)
{
	u64 off = b3_ld(&t->root->top);

	if (!off)
		return -1;
	if (!b3_page_ok(t, off))
		return -EUCLEAN;
	return b3_pg(t, off)->level;
}

#define MERGE_TRIES	4	/* descents per merge_at() (repairs between) */

/* A leaf merge refused: not tried again before it halves (b3.c). */
static int refuse(struct b3 *t, struct b3_page *x, int lvl)
{
	if (!lvl)
		b3_set_tried(t, x, b3_live(t, x));
	return 1;
}

/*
 * Merge page X at level @lvl (the page of @k there) with a neighbour A|B
 * under the same parent page, or share A and B out over two new pages
 * (file comment). An internal pair gets q's key between A's last child
 * and B's first, a new copy (q and its blob go with q's store).
 * Return: 0 done or nothing to do, 1 refused (the shape, nothing
 * under-full, a leftover in the way: the caller's hysteresis), < 0.
 */
static int merge_at(struct b3 *t, const struct b3_key *k, int lvl)
{
	struct b3_scratch *s = t->scr;
	struct b3_path *path = &s->path;
	struct b3_page *a, *b, *x, *par, *l, *n1, *n2 = NULL;
	struct b3_key low, k2 = {}, qk;
	struct b3_inode *q, qc = {}, *sep = NULL, med = {};
	struct pmidx_txn tq, sw, fin, *f = NULL, *xs[3] = { &tq, &sw };
	unsigned int tries = 0;
	int ret, na, nb, tot, m = 0, top;
	bool rule1, direct, redist, own_med = false;
	u64 w, o1 = 0, o2 = 0;
	s64 bytes;
	__le64 *wp, *gw;
	u32 slot = 0;

again:
	if (++tries > MERGE_TRIES)
		return 1;
	top = top_level(t);
	if (top < 0)
		return top == -1 ? 0 : top;
	if (lvl >= top)
		return 0;		/* the root: collapse_root()'s */
	ret = b3_descend(t, k, lvl, path);
	if (ret)
		return ret == -ENOENT ? 0 : ret;
	if (path->bad >= 0) {
		ret = settle(t, fix_path(t, path));
		if (ret)
			return ret;
		goto again;
	}
	x = path->lv[lvl].pg;
	if (path->lv[lvl].ref.slot < 0) {
		/* the only child of its parent: the parent merges first */
		if (lvl + 1 == path->top) {
			collapse_root(t);
			return 0;
		}
		ret = merge_at(t, k, lvl + 1);
		if (ret)
			return ret < 0 ? ret : refuse(t, x, lvl);
		goto again;
	}
	par = path->lv[lvl].ref.pg;
	q = &par->i[path->lv[lvl].ref.slot];
	rule1 = !path->lv[lvl].ref.right;
	/* the neighbour: leftmost of q.right, or rightmost of q.left */
	wp = rule1 ? &q->right : &q->left;
	w = b3_ld(wp);
	for (na = 0; b3_w_is_slot(w) && na <= B3_SLOTS; na++) {
		wp = rule1 ? &par->i[w - 1].left : &par->i[w - 1].right;
		w = b3_ld(wp);
	}
	if (!b3_w_is_page(w) || !b3_page_ok(t, w))
		return -EUCLEAN;
	a = rule1 ? x : b3_pg(t, w);
	b = rule1 ? b3_pg(t, w) : x;
	if (a == b)
		return -EUCLEAN;	/* a page its own sibling: corrupt */
	if (b3_ld(&a->sibling) != b3_pgoff(t, b) || a->level != lvl ||
	    b->level != lvl)
		return refuse(t, x, lvl);
	/* both are retired; the step-1 leftover of a crash may name either */
	ret = before_retire(t, a);
	if (!ret)
		ret = before_retire(t, b);
	if (ret) {
		ret = settle(t, ret);
		if (ret)
			return ret;
		goto again;
	}
	ret = b3_smo_room(t, 4);	/* @a, @b, q's and the median's blobs */
	if (ret)
		return ret;
	ret = b3_lock(t, par);
	if (ret)
		goto locked_none;
	ret = b3_lock(t, a);
	if (ret)
		goto out_par;
	ret = b3_lock(t, b);
	if (ret)
		goto out_a;
	/* A's and B's nodes (and q's key between them) in key order */
	na = gather(t, a, s->ln, s->in, s->child);
	if (na < 0) {
		ret = na;
		goto out_b;
	}
	if (lvl) {
		s->in[na] = *q;		/* replaced by a copy below */
		nb = gather(t, b, NULL, s->in + na + 1, s->child + na + 1);
		tot = na + nb + 1;
	} else {
		nb = gather(t, b, s->ln + na, NULL, NULL);
		tot = na + nb;
	}
	ret = nb < 0 ? nb : 0;
	if (ret)
		goto out_b;
	redist = tot > B3_MERGE_MAX;
	ret = 1;
	if (redist && min(na, nb) >= B3_MERGE_UNDER)
		goto out_b;		/* nothing under-full (any more) */
	if (redist && b3_used(t, par) >= B3_CAP) {
		/* no slot for the new separator: room in the parent first */
		b3_unlock(t, b);
		b3_unlock(t, a);
		b3_unlock(t, par);
		ret = settle(t, room_at(t, path, lvl + 1, 1));
		if (ret)
			return ret;
		goto again;
	}
	/* before the first store: q's removal is not undone on an error */
	l = b3_left_of(t, a);
	ret = PTR_ERR_OR_ZERO(l);
	if (ret)
		goto out_b;
	low = b3_low(a);
	if (lvl) {
		qk = b3_node_key(t, &q->key, le32_to_cpu(q->meta));
		k2 = b3_low(b);
		ret = -EUCLEAN;
		if (b3_cmp(&qk, &k2))
			goto out_b;	/* every separator is its page's low key */
		ret = b3_sep_make(t, &qc, &qk, 0, 0);
		if (ret)
			goto out_b;
		s->in[na] = qc;
	}
	if (redist) {
		m = tot / 2;
		if (lvl) {
			med = s->in[m];
			own_med = m != na;	/* A's or B's: goes with them */
			k2 = b3_node_key(t, &med.key, le32_to_cpu(med.meta));
		} else {
			k2 = b3_node_key(t, &s->ln[m].key,
					 le32_to_cpu(s->ln[m].meta));
		}
	}
	ret = -ENOSPC;
	o1 = b3_page_new(t, lvl, &low);
	if (!o1)
		goto fail;
	n1 = b3_pg(t, o1);
	if (redist) {
		o2 = b3_page_new(t, lvl, &k2);
		if (!o2)
			goto fail;
		n2 = b3_pg(t, o2);
		if (!lvl) {
			b3_build_leaf(t, n1, s->ln, m);
			b3_build_leaf(t, n2, s->ln + m, tot - m);
		} else {
			b3_build_inner(t, n1, s->child, s->in, m);
			b3_build_inner(t, n2, s->child + m + 1, s->in + m + 1,
				       tot - m - 1);
		}
		n1->sibling = cpu_to_le64(o2);
		n2->sibling = cpu_to_le64(b3_ld(&b->sibling));
		persist_page(t, n2);
		/* the new separator (a copy of low(n2)) in a free slot */
		slot = b3_used(t, par);
		sep = &par->i[slot];
		ret = b3_sep_make(t, sep, &k2, o1, o2);
		if (ret)
			goto fail;
	} else {
		if (!lvl)
			b3_build_leaf(t, n1, s->ln, tot);
		else
			b3_build_inner(t, n1, s->child, s->in, tot);
		n1->sibling = cpu_to_le64(b3_ld(&b->sibling));
	}
	persist_page(t, n1);
	/* every txn before the first store: none may fail after it */
	bytes = this_cpu_read(t->pcpu->blob_bytes);
	ret = b3_txn_begin(t, &tq);
	if (!ret) {
		ret = b3_txn_begin(t, &sw);
		if (ret)
			b3_txn_cancel(t, &tq);
	}
	if (!ret && redist && l) {
		ret = b3_txn_begin(t, &fin);
		if (ret) {
			b3_txn_cancel(t, &sw);
			b3_txn_cancel(t, &tq);
		}
		f = &fin;
	}
	if (ret) {
		if (sep)
			b3_sep_free(t, sep, true);
		goto fail;
	}
	txn_free_sep(t, &tq, q);		/* q's store unlinks q's key blob */
	/* the swap: the new pages in (with q's copy), A and B out */
	pmidx_txn_alloc(&sw, o1);
	if (o2)
		pmidx_txn_alloc(&sw, o2);
	if (lvl && (!redist || own_med))
		txn_alloc_sep(t, &sw, &qc);
	if (own_med)
		txn_free_sep(t, &sw, &med);
	if (sep)
		txn_alloc_sep(t, f ?: &sw, sep);	/* by step 3 */
	pmidx_txn_free(&sw, b3_pgoff(t, a));
	pmidx_txn_free(&sw, b3_pgoff(t, b));
	xs[2] = f;
	if (b3_txn_check(t, xs, f ? 3 : 2, bytes)) {
		if (sep)
			b3_sep_free(t, sep, true);
		ret = -EUCLEAN;
		goto fail;
	}
	if (sep)
		pmidx_persist(t->pm, sep, B3_NODE_SIZE);

	gw = b3_ref_word(t, &path->lv[lvl].gref);
	direct = wp == (rule1 ? &q->right : &q->left);
	if (rule1) {
		b3_commit(t, wp, b3_pgoff(t, a));
		b3_commit_txn(t, &tq, gw, b3_ld(&q->right));
	} else {
		b3_commit_txn(t, &tq, gw, b3_ld(&q->left));
	}
	/* one word now names A for A's and B's ranges: q's is gone */
	if (sep)
		b3_set_cnt(t, par, slot + 1, b3_live(t, par));
	else
		b3_set_cnt(t, par, b3_used(t, par), b3_live(t, par) - 1);
	swap_in(t, l, direct ? gw : wp, o1, sep ? slot + 1 : o1, &sw, f);
	b3_sep_free(t, q, false);
	if (own_med)
		b3_sep_free(t, &med, false);
	else if (lvl && redist)
		b3_sep_free(t, &qc, true);	/* never linked: sep is a copy */
	b3_kill(t, b);
	b3_kill(t, a);
	b3_unlock(t, par);
	b3_page_retire(t, b3_pgoff(t, a));
	b3_page_retire(t, b3_pgoff(t, b));
	this_cpu_inc(t->pcpu->merges);
	if (redist)
		this_cpu_inc(t->pcpu->redists);
	if (lvl)
		this_cpu_inc(t->pcpu->inner_merges);
	/* the parent lost a separator: its turn (plan item 7) */
	if (!redist && lvl + 1 < path->top && b3_live(t, par) < B3_MERGE_UNDER) {
		ret = merge_at(t, k, lvl + 1);
		if (ret < 0)
			return ret;
	}
	collapse_root(t);
	return 0;
fail:
	if (lvl)
		b3_sep_free(t, &qc, true);
	page_drop(t, o1);
	page_drop(t, o2);
	goto out_b;
out_b:
	b3_unlock(t, b);
out_a:
	b3_unlock(t, a);
out_par:
	b3_unlock(t, par);
locked_none:
	if (ret == -EAGAIN)
		goto again;
	return ret == 1 ? refuse(t, x, lvl) : ret;
}

/**
 * b3_try_merge - merge (or redistribute) the leaf of @k with a neighbour
 *                (file comment); a merge that leaves the parent page
 *                under-full merges it in turn, and so on up
 * Context: under t->smo, inside an epoch section.
 * Return: 0 (also when nothing was done), < 0 an error.
 */
int b3_try_merge(struct b3 *t, const struct b3_key *k)
{
	int ret = merge_at(t, k, 0);

	return min(ret, 0);
}
