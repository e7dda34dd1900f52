// SPDX-License-Identifier: GPL-2.0
/*
 * The one walk over every reachable node (recovery, CHECK, drop-index),
 * depth first in key order, with the path of key bytes to each node.
 *
 * With @validate every word is checked before it is followed: an offset
 * inside the data area, 256-byte aligned, inside an allocated object of
 * the node's size (after w->node, which may mark it: a trace marks before
 * the allocator calls it valid), a header whose type, owner and check
 * word hold, the depth of the path, a stored prefix equal to the path,
 * N48 index bytes naming distinct slots (with @fix, a slot no index byte
 * names is cleared: an add cut short by a crash, node.c), N4/N16 keys
 * distinct, end children that are leaf arrays. Visits are bounded by the
 * number of objects the pool can hold, so a node named twice (or a
 * cycle) ends the walk instead of spinning.
 */
#include <linux/errno.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/vmalloc.h>
#include "persist.h"
#include "pfart.h"

struct wlevel {
	u64	off;
	u32	q;		/* path bytes up to the children's byte */
	u32	n, i;		/* children, the next one */
	u64	end;
	bool	end_done;
	u8	keys[256];
	u64	child[256];
};

struct wstate {
	int		top;
	u64		visits;
	u8		path[PMIDX_KEY_MAX + 1];
	struct wlevel	lv[PFART_PATH_MAX];
};

static int bad(struct pfart_walk *w, const char *why)
{
	w->why = why;
	return -EUCLEAN;
}

static bool obj_ok(struct pfart *t, struct pfart_walk *w, u64 off, u32 size)
{
	return !w->validate || pmidx_alloc_valid(&t->pool->alloc, off, size);
}

static void see_gen(struct pfart_walk *w, const __le64 *lk)
{
	u32 g = pfart_lk_gen(le64_to_cpu(*lk));

	w->maxgen = max(w->maxgen, g);
}

/* N48 index bytes: distinct slots, each with a child; strays cleared */
static int n48_check(struct pfart *t, struct pfart_walk *w,
		     struct pfart_n48 *n)
{
	u64 named = 0;
	u32 i;

	for (i = 0; i < 256; i++) {
		u8 s = n->index[i];

		if (!s)
			continue;
		if (s > 48 || named & BIT_ULL(s - 1) || !n->child[s - 1])
			return bad(w, "N48 index byte naming a bad slot");
		named |= BIT_ULL(s - 1);
	}
	for (i = 0; i < 48; i++) {
		if (!n->child[i] || named & BIT_ULL(i))
			continue;
		if (!w->fix)
			return bad(w, "N48 child in a slot no index byte names");
		/* an add cut short (node.c): the object goes with the trace */
		n->child[i] = 0;
		pfart_persist(t, &n->child[i], sizeof(n->child[i]));
	}
	return 0;
}

static int small_check(struct pfart_walk *w, const u8 *keys, u32 n)
{
	u32 i;

	for (i = 1; i < n; i++)
		if (keys[i] == keys[i - 1])
			return bad(w, "N4/N16 with one key byte twice");
	return 0;
}

/* Visit the node at @off, reached with @depth path bytes. */
static int visit(struct pfart *t, struct pfart_walk *w, struct wstate *ws,
		 u64 off, u32 depth, bool end)
{
	struct pfart_inner *n;
	struct pfart_leaf *l;
	struct wlevel *lv;
	u32 cnt;
	int ret;

	if (++ws->visits > t->pm->size / PMIDX_MIN_OBJ)
		return bad(w, "a node named twice");
	if (!pfart_off_ok(t, off, PFART_LEAF_MIN))
		return bad(w, "node offset outside the data area");
	if (w->node) {
		ret = w->node(t, w, off);
		if (ret)
			return ret;
	}
	if (!obj_ok(t, w, off, PFART_LEAF_MIN))
		return bad(w, "node not allocated");
	l = pfart_ptr(t, off);
	if (l->type == PFART_LEAF) {
		if (w->validate &&
		    (!pfart_leaf_hdr_ok(t, l) || l->depth != depth ||
		     memcmp(l->prefix, ws->path, l->plen) ||
		     !obj_ok(t, w, off, pfart_leaf_size(l->klass))))
			return bad(w, "bad leaf array");
		see_gen(w, &l->lock);
		w->leaves++;
		return w->leaf ? w->leaf(t, w, off, ws->path, depth) : 0;
	}
	n = (struct pfart_inner *)l;
	if (end)
		return bad(w, "an end child that is no leaf array");
	if (w->validate &&
	    (!pfart_inner_ok(t, n) || n->depth != depth ||
	     depth + n->plen > PMIDX_KEY_MAX ||
	     !pfart_off_ok(t, off, pfart_inner_obj(n->type)) ||
	     !obj_ok(t, w, off, pfart_inner_obj(n->type))))
		return bad(w, "bad inner node");
	see_gen(w, &n->lock);
	w->inners++;
	w->inner_bytes += pfart_inner_obj(n->type);
	if (w->validate && n->type == PFART_N48) {
		ret = n48_check(t, w, (struct pfart_n48 *)n);
		if (ret)
			return ret;
	}
	if (ws->top + 1 >= PFART_PATH_MAX)
		return bad(w, "path too deep");
	lv = &ws->lv[++ws->top];
	memcpy(ws->path + depth, n->prefix, n->plen);
	lv->off = off;
	lv->q = depth + n->plen;
	cnt = pfart_inner_entries(n, lv->keys, lv->child);
	lv->n = cnt;
	lv->i = 0;
	lv->end = le64_to_cpu(n->end);
	lv->end_done = false;
	if (w->validate && (n->type == PFART_N4 || n->type == PFART_N16)) {
		ret = small_check(w, lv->keys, cnt);
		if (ret)
			return ret;
	}
	if (cnt && lv->q >= PMIDX_KEY_MAX)
		return bad(w, "children below the longest key");
	return 0;
}

/**
 * pfart_walk - visit every node reachable from root->top
 *
 * w->node (if set) sees each node's offset before it is read, w->leaf
 * each leaf array once it is checked, with its path.
 * Return: 0, or the first error (w->why says what).
 */
int pfart_walk(struct pfart *t, struct pfart_walk *w)
{
	struct wstate *ws;
	struct wlevel *lv;
	u64 top = le64_to_cpu(t->root->top);
	int ret;

	if (!top)
		return 0;
	ws = kvmalloc(sizeof(*ws), GFP_KERNEL);
	if (!ws) {
		w->why = "out of memory";
		return -ENOMEM;
	}
	ws->top = -1;
	ws->visits = 0;
	ret = visit(t, w, ws, top, 0, false);
	while (!ret && ws->top >= 0) {
		lv = &ws->lv[ws->top];
		if (!lv->end_done) {
			lv->end_done = true;
			if (lv->end)
				ret = visit(t, w, ws, lv->end, lv->q, true);
		} else if (lv->i < lv->n) {
			ws->path[lv->q] = lv->keys[lv->i];
			ret = visit(t, w, ws, lv->child[lv->i++], lv->q + 1,
				    false);
		} else {
			ws->top--;
		}
	}
	kvfree(ws);
	return ret;
}
