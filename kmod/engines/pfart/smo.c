// SPDX-License-Identifier: GPL-2.0
/*
 * Structure modifications (SMOs): every change to an inner node or to
 * root->top. One runs at a time (@smo) inside a writer section. Each one
 * builds every new object first (written back, never reachable yet), then
 * fences once and commits with one store (README "Crash protocol"):
 *
 *   put_first         top := a new leaf array
 *   put_new_child     a new leaf array as a node's child (in place:
 *                     node.c), or grow the node: copy into the next type
 *   put_prefix_split  the key leaves a node's prefix: a new N4 over a copy
 *                     of the node (shorter prefix) and a new leaf array
 *   put_leaf          a full leaf array: rewritten with the put applied
 *                     into one array of the size it needs (compact, grow)
 *                     or split into an inner node over new arrays (build())
 *   prune             after deletes: an empty array leaves its node, an
 *                     under-full one moves to a smaller size; then its
 *                     node: collapsed into one array when its children are
 *                     all small arrays, else shrunk to a smaller type, or
 *                     merged into its only inner child (path compression)
 *
 * Locks: inner nodes are written by SMOs only, so an SMO's locks on them
 * only move their versions for readers (no one else takes them); leaf
 * arrays it replaces are locked too (a leaf writer holds at most one and
 * waits for nothing). Replaced nodes stay locked, marked obsolete, and go
 * through the epochs once the commit store is durable.
 *
 * Retirees: a put's SMO retires one object; the caller made room for it
 * in this CPU's epoch list (pfart.c, smo_room()), as for a prune's first
 * step. A prune's later steps ask for their own (collapse: the children
 * and the node; shrink: two) and are skipped without it (a collapse then
 * leaves its turn to a shrink), the space given back by a later prune.
 */
#include <linux/errno.h>
#include <linux/string.h>
#include "lock.h"
#include "persist.h"
#include "pfart.h"

static struct pfart_inner *inner_of(struct pfart *t, u64 off)
{
	return pfart_ptr(t, off);
}

static u8 type_of(struct pfart *t, u64 off)
{
	return *(u8 *)pfart_ptr(t, off);
}

/*
 * The smallest leaf class holding @n records of @bytes with a quarter of
 * it free (room for the next inserts): up to leaf_max, or with @dense up
 * to PFART_LEAF_HUGE; -1 when none does.
 */
static int class_for(struct pfart *t, u32 bytes, u32 n, bool dense)
{
	int k, last = dense ? PFART_NR_CLASSES - 1 : t->max_class;

	for (k = 0; k <= last; k++)
		if (bytes * 4 <= pfart_data_size(k) * 3 &&
		    n * 4 <= pfart_cap(k) * 3)
			return k;
	return -1;
}

static u32 rec_sum(const struct pfart_rec *r, u32 n)
{
	u32 b = 0;

	while (n--)
		b += pfart_rec_bytes(r++);
	return b;
}

/* ---- build: new subtrees out of sorted records ------------------------------ */

static int build_leaf(struct pfart *t, int k, const struct pfart_rec *r,
		      u32 n, u32 depth, u64 *off)
{
	struct pfart_meta *m;
	struct pfart_leaf *l = pfart_leaf_take(t, k, &m);

	if (IS_ERR(l))
		return PTR_ERR(l);
	pfart_leaf_init(t, l, k, depth, r[0].key);
	pfart_leaf_fill(t, l, m, r, n);
	*off = pfart_off(t, l);
	return 0;
}

/*
 * The key byte an inner node over records [tk->lo, tk->hi) (two or more)
 * dispatches on: past their longest common prefix after tk->depth, which
 * is the node's prefix (at most PFART_PREFIX_MAX bytes: longer is a chain).
 */
static u32 split_byte(const struct pfart_scratch *sc,
		      const struct pfart_task *tk)
{
	const struct pfart_rec *a = &sc->rec[tk->lo], *z = &sc->rec[tk->hi - 1];
	u32 lcp = 0, maxl = min(a->klen, z->klen) - tk->depth;

	while (lcp < maxl && a->key[tk->depth + lcp] == z->key[tk->depth + lcp])
		lcp++;
	return tk->depth + min_t(u32, lcp, PFART_PREFIX_MAX);
}

/*
 * Would an inner node over records [tk->lo, tk->hi) leave most of them
 * alone in an array for good? It would when three quarters of their keys
 * end right after the byte it dispatches on: each goes to an array at the
 * depth of its whole key, which only longer keys can join. Dense keys
 * (sequential integers: 256 keys differ in their last byte) do that, at
 * 256 B of array per key; they get an array above leaf_max instead.
 */
static bool split_scatters(const struct pfart_scratch *sc,
			   const struct pfart_task *tk)
{
	u32 q = split_byte(sc, tk), i, last = 0;

	for (i = tk->lo; i < tk->hi; i++)
		last += sc->rec[i].klen == q + 1;
	return last * 4 >= (tk->hi - tk->lo) * 3;
}

/*
 * An inner node over records [tk->lo, tk->hi): its prefix is their
 * longest common prefix past tk->depth (split_byte()), its children the
 * groups by the next byte, the key that ends there its end child. The
 * groups become tasks.
 */
static u64 build_inner(struct pfart *t, const struct pfart_task *tk,
		       u32 *ntask)
{
	struct pfart_scratch *sc = t->scr;
	const struct pfart_rec *a = &sc->rec[tk->lo];
	u32 plen, q, i, g, ngroups = 0;
	struct pfart_inner *n;

	if (tk->hi - tk->lo < 2)
		return 0;	/* one record always fits a leaf array */
	q = split_byte(sc, tk);
	plen = q - tk->depth;
	for (i = tk->lo; i < tk->hi; i++)
		if (sc->rec[i].klen > q &&
		    (i == tk->lo || sc->rec[i - 1].klen == q ||
		     sc->rec[i - 1].key[q] != sc->rec[i].key[q]))
			ngroups++;
	if (*ntask + ngroups + 1 > PFART_BUILD_MAX)
		return 0;
	n = pfart_inner_new(t, pfart_inner_type_for(ngroups), tk->depth,
			    a->key + tk->depth, plen);
	if (!n)
		return 0;
	i = tk->lo;
	if (a->klen == q) {	/* the shortest sorts first */
		sc->task[(*ntask)++] = (struct pfart_task){
			i, i + 1, q, &n->end,
		};
		i++;
	}
	for (g = 0; i < tk->hi; g++) {
		u32 lo = i;
		u8 b = sc->rec[i].key[q];

		while (i < tk->hi && sc->rec[i].key[q] == b)
			i++;
		sc->task[(*ntask)++] = (struct pfart_task){
			lo, i, q + 1, pfart_inner_slot(n, g, b),
		};
	}
	return pfart_off(t, n);
}

static void drop_built(struct pfart *t, u64 off)
{
	if (type_of(t, off) == PFART_LEAF)
		pfart_leaf_drop(t, pfart_ptr(t, off));
	else
		pfart_inner_drop(t, inner_of(t, off));
}

/*
 * Build the subtree of scratch records [0, @n) (sorted, distinct keys
 * sharing key[0, @depth)): one leaf array when they fit one of leaf_max
 * with a quarter free, or one above leaf_max when an inner node would
 * scatter them (split_scatters()), else an inner node and so on below.
 * Everything is written back, nothing fenced, nothing reachable.
 * Return: 0 with *@out, or (all dropped) -ENOSPC when the pool is full,
 * -ENOMEM when a leaf array's metadata found atomic memory short.
 */
static int build(struct pfart *t, u32 n, u32 depth, u64 *out)
{
	struct pfart_scratch *sc = t->scr;
	u32 ntask = 0, nbuilt = 0, i;
	int ret;

	sc->task[ntask++] = (struct pfart_task){ 0, n, depth, NULL };
	while (ntask) {
		struct pfart_task tk = sc->task[--ntask];
		u32 cnt = tk.hi - tk.lo, bytes = rec_sum(&sc->rec[tk.lo], cnt);
		int k = class_for(t, bytes, cnt, false);
		u64 off = 0;

		if (k < 0 && cnt > 1 && split_scatters(sc, &tk))
			k = class_for(t, bytes, cnt, true);
		if (k >= 0) {
			ret = build_leaf(t, k, &sc->rec[tk.lo], cnt, tk.depth,
					 &off);
		} else {
			off = build_inner(t, &tk, &ntask);
			ret = off ? 0 : -ENOSPC;
		}
		if (ret)
			goto fail;
		if (k > t->max_class)
			pfart_stat_inc(t, dense_builds);
		if (nbuilt == PFART_BUILD_MAX) {
			drop_built(t, off);
			ret = -ENOSPC;
			goto fail;
		}
		sc->built[nbuilt++] = off;
		if (tk.dest)
			*tk.dest = cpu_to_le64(off);
		else
			*out = off;
	}
	/* child words are in: seal the inner nodes */
	for (i = 0; i < nbuilt; i++)
		if (type_of(t, sc->built[i]) != PFART_LEAF)
			pfart_inner_seal(t, inner_of(t, sc->built[i]));
	return 0;
fail:
	for (i = 0; i < nbuilt; i++)
		drop_built(t, sc->built[i]);
	return ret;
}

/* A copy of inner node @n (unpublished): another type, depth, prefix. */
static struct pfart_inner *copy_inner(struct pfart *t, struct pfart_inner *n,
				      u8 type, u32 depth, const u8 *prefix,
				      u32 plen, int add_b, u64 add_c)
{
	struct pfart_scratch *sc = t->scr;
	u32 cnt = pfart_inner_entries(n, sc->keys, sc->child), i, j;
	struct pfart_inner *c;

	if (add_b >= 0) {	/* a new child, in byte order */
		for (j = cnt; j && sc->keys[j - 1] > add_b; j--) {
			sc->keys[j] = sc->keys[j - 1];
			sc->child[j] = sc->child[j - 1];
		}
		sc->keys[j] = add_b;
		sc->child[j] = add_c;
		cnt++;
	}
	c = pfart_inner_new(t, type, depth, prefix, plen);
	if (!c)
		return NULL;
	for (i = 0; i < cnt; i++)
		*pfart_inner_slot(c, i, sc->keys[i]) = cpu_to_le64(sc->child[i]);
	c->end = n->end;
	pfart_inner_seal(t, c);
	return c;
}

/* ---- the commit ------------------------------------------------------------- */

static struct pfart_inner *parent_of(struct pfart *t, const struct pfart_step *s)
{
	return s->parent ? inner_of(t, s->parent) : NULL;
}

static bool lock_parent(struct pfart *t, const struct pfart_step *s)
{
	return !s->parent || pfart_lock(t, pfart_lk(parent_of(t, s)));
}

static void unlock_parent(struct pfart *t, const struct pfart_step *s)
{
	if (s->parent)
		pfart_unlock(t, pfart_lk(parent_of(t, s)));
}

/*
 * Step @s's node is replaced by @new (0: by nothing). Context: its parent
 * and the node locked; every new object written back. The node is left
 * obsolete (still locked); the caller retires it.
 */
static void swap_in(struct pfart *t, const struct pfart_step *s, u64 new)
{
	struct pfart_inner *p = parent_of(t, s);

	pfart_fence(t);		/* the new objects are durable ... */
	if (new || !p || s->end)
		pfart_publish(t, s->word, new);	/* ... before the commit */
	else
		pfart_inner_remove(t, p, s->byte);
	pfart_obsolete(t, pfart_lk(pfart_ptr(t, s->off)));
}

static void retire(struct pfart *t, u64 off)
{
	if (type_of(t, off) == PFART_LEAF)
		pfart_leaf_retire(t, pfart_ptr(t, off));
	else
		pfart_inner_retire(t, off);
}

/* Replace step @s's node by @new under the locks; retire the old one. */
static int replace(struct pfart *t, const struct pfart_step *s, u64 new)
{
	if (!lock_parent(t, s))
		return -EUCLEAN;
	if (!pfart_lock(t, pfart_lk(pfart_ptr(t, s->off)))) {
		unlock_parent(t, s);
		return -EUCLEAN;
	}
	swap_in(t, s, new);
	unlock_parent(t, s);
	retire(t, s->off);
	return 0;
}

/* ---- gathering the records of leaf arrays --------------------------------- */

/*
 * Record @o of @l copied machine-check safe into the scratch stage (an
 * array a reader saw poison in): *@r names the copy. Return: 0, -EIO.
 */
static int stage(struct pfart *t, struct pfart_leaf *l, struct pfart_meta *m,
		 u32 o, u32 *staged, struct pfart_rec *r)
{
	u8 *dst = t->scr->stage + *staged;
	u32 pos = m->pos[o], vbytes;
	__le16 h;
	__le64 w;

	if (pmidx_read_data(t->pm, &h, l->data + pos, sizeof(h)))
		return -EIO;
	r->klen = pfart_r_klen(le16_to_cpu(h));
	r->vfield = pfart_r_vfield(le16_to_cpu(h));
	vbytes = r->vfield == PFART_VBLOB ? 8 : r->vfield;
	if (!r->klen || pos + 2 + r->klen + vbytes > pfart_data_size(l->klass) ||
	    *staged + r->klen + vbytes > sizeof(t->scr->stage))
		return -EUCLEAN;
	if (pmidx_read_data(t->pm, dst, l->data + pos + 2, r->klen + vbytes))
		return -EIO;
	r->key = dst;
	r->val = dst + r->klen;
	r->blob = 0;
	if (r->vfield == PFART_VBLOB) {
		memcpy(&w, r->val, sizeof(w));
		r->blob = le64_to_cpu(w);
	}
	*staged += r->klen + vbytes;
	return 0;
}

/*
 * Append the live records of locked array @l to the scratch records from
 * *@n on, in key order; @put (or NULL) replaces the record of entry @e,
 * or is merged in at its place when @e < 0. With @safe every record but
 * the replaced one is copied first (stage()), none is read in place.
 */
static int gather(struct pfart *t, struct pfart_leaf *l, struct pfart_meta *m,
		  const struct pfart_put *put, int e, u32 *n, bool safe)
{
	struct pfart_scratch *sc = t->scr;
	u32 size = pfart_leaf_size(l->klass), i, staged = 0;
	bool placed = !put || e >= 0;
	struct pfart_view v;
	struct pfart_rec r;
	int ret;

	if (*n + m->n + 1 > PFART_REC_MAX)
		return -E2BIG;
	for (i = 0; i < m->n; i++) {
		u32 o = pfart_order(m, i);

		if (o >= m->n)
			return -EUCLEAN;
		if (put && o == e) {
			sc->rec[(*n)++] = put->rec;
			continue;
		}
		if (safe) {
			ret = stage(t, l, m, o, &staged, &r);
			if (ret)
				return ret;
		} else if (pfart_leaf_view(l, m, size, o, &v)) {
			return -EUCLEAN;
		} else {
			pfart_rec_of_view(&v, &r);
		}
		if (!placed && pmidx_key_cmp(put->key, put->klen, r.key,
					     r.klen) < 0) {
			sc->rec[(*n)++] = put->rec;
			placed = true;
		}
		sc->rec[(*n)++] = r;
	}
	if (!placed)
		sc->rec[(*n)++] = put->rec;
	return 0;
}

/* ---- puts ----------------------------------------------------------------- */

static int put_first(struct pfart *t, struct pfart_put *pp)
{
	u64 off;
	int ret;

	t->scr->rec[0] = pp->rec;
	ret = build(t, 1, 0, &off);
	if (ret)
		return ret;
	pfart_fence(t);
	pfart_publish(t, &t->root->top, off);
	pp->added = true;
	return 0;
}

/* Node @s->off is full: a copy of the next type with @c as child @b. */
static int grow(struct pfart *t, const struct pfart_step *s, u8 b, u64 c)
{
	struct pfart_inner *n = inner_of(t, s->off), *g;

	g = copy_inner(t, n, pfart_inner_type_for(pfart_inner_cap(n->type) + 1),
		       n->depth, n->prefix, n->plen, b, c);
	if (!g)
		return -ENOSPC;
	if (!lock_parent(t, s)) {
		pfart_inner_drop(t, g);
		return -EUCLEAN;
	}
	swap_in(t, s, pfart_off(t, g));	/* @n is locked by the caller */
	unlock_parent(t, s);
	pfart_inner_retire(t, s->off);
	pfart_stat_inc(t, node_grows);
	return 0;
}

static int put_new_child(struct pfart *t, struct pfart_put *pp,
			 struct pfart_path *p)
{
	const struct pfart_step *s = &p->s[p->n - 1];
	struct pfart_inner *n = inner_of(t, s->off);
	u32 depth = p->depth + n->plen + !p->end;
	u64 off;
	int ret;

	t->scr->rec[0] = pp->rec;
	ret = build(t, 1, depth, &off);
	if (ret)
		return ret;
	pfart_fence(t);		/* the new array is durable before its word */
	if (!pfart_lock(t, pfart_lk(n))) {
		pfart_leaf_drop(t, pfart_ptr(t, off));
		return -EUCLEAN;
	}
	if (p->end) {
		pfart_publish(t, &n->end, off);
	} else {
		bool grown = false;

		ret = pfart_inner_add(t, n, p->byte, off);
		if (ret == -ENOSPC) {
			ret = grow(t, s, p->byte, off);
			grown = !ret;
		}
		if (ret) {
			pfart_unlock(t, pfart_lk(n));
			pfart_leaf_drop(t, pfart_ptr(t, off));
			return ret;
		}
		if (grown) {		/* @n is retired, and stays locked */
			pp->added = true;
			return 0;
		}
	}
	pfart_unlock(t, pfart_lk(n));
	pfart_stat_inc(t, node_adds);
	pp->added = true;
	return 0;
}

/*
 * The key leaves node N's prefix at index @i (or ends there): an N4 M of
 * the common part over N' (N with the rest of its prefix, deeper) and a
 * new leaf array holding the key, swapped in for N.
 */
static int put_prefix_split(struct pfart *t, struct pfart_put *pp,
			    struct pfart_path *p, u32 i)
{
	const struct pfart_step *s = &p->s[p->n - 1];
	struct pfart_inner *n = inner_of(t, s->off), *m, *nn;
	u32 d = p->depth, kd = d + i;
	bool ends = pp->klen == kd;
	u8 nb = n->prefix[i];
	__le64 *w;
	u64 leaf;
	int ret;

	t->scr->rec[0] = pp->rec;
	ret = build(t, 1, ends ? kd : kd + 1, &leaf);
	if (ret)
		return ret;
	nn = copy_inner(t, n, n->type, kd + 1, n->prefix + i + 1,
			n->plen - i - 1, -1, 0);
	m = nn ? pfart_inner_new(t, PFART_N4, d, n->prefix, i) : NULL;
	if (!m) {
		if (nn)
			pfart_inner_drop(t, nn);
		pfart_leaf_drop(t, pfart_ptr(t, leaf));
		return -ENOSPC;
	}
	if (ends) {
		m->end = cpu_to_le64(leaf);
		w = pfart_inner_slot(m, 0, nb);
		*w = cpu_to_le64(pfart_off(t, nn));
	} else {
		bool first = pp->key[kd] < nb;

		*pfart_inner_slot(m, !first, pp->key[kd]) = cpu_to_le64(leaf);
		*pfart_inner_slot(m, first, nb) = cpu_to_le64(pfart_off(t, nn));
	}
	pfart_inner_seal(t, m);
	ret = replace(t, s, pfart_off(t, m));
	if (ret) {
		pfart_inner_drop(t, m);
		pfart_inner_drop(t, nn);
		pfart_leaf_drop(t, pfart_ptr(t, leaf));
		return ret;
	}
	pfart_stat_inc(t, prefix_splits);
	pp->added = true;
	return 0;
}

/*
 * The blob word of entry @e, read machine-check safe; 0 when the value is
 * inline or the word lies in poison (the blob then stays allocated until
 * a recovery trace frees it).
 */
static u64 old_blob(struct pfart *t, struct pfart_leaf *l,
		    struct pfart_meta *m, int e)
{
	u32 pos = m->pos[e], klen;
	__le16 h;
	__le64 w;

	if (pmidx_read_data(t->pm, &h, l->data + pos, sizeof(h)) ||
	    pfart_r_vfield(le16_to_cpu(h)) != PFART_VBLOB)
		return 0;
	klen = pfart_r_klen(le16_to_cpu(h));
	if (pos + 2 + klen + sizeof(w) > pfart_data_size(l->klass) ||
	    pmidx_read_data(t->pm, &w, l->data + pos + 2 + klen, sizeof(w)))
		return 0;
	return le64_to_cpu(w);
}

/*
 * The put's leaf array has no room, or a reader saw poison in it: rewrite
 * it with the put applied.
 */
static int put_leaf(struct pfart *t, struct pfart_put *pp, struct pfart_path *p)
{
	const struct pfart_step *s = &p->s[p->n - 1];
	struct pfart_leaf *l = pfart_ptr(t, s->off), *nl;
	struct pfart_meta *m = pfart_meta_of(t, s->off);
	u64 off, old;
	u32 n = 0;
	int e, ret;

	if (!m || !pfart_lock(t, pfart_lk(l)))
		return -EUCLEAN;
	e = pfart_leaf_find(t, l, m, pp->key, pp->klen);
	if (e >= 0 && pp->flags & PMIDX_PUT_INSERT) {
		ret = -EEXIST;
		goto unlock;
	}
	/* a leaf writer may have been slower than this SMO's own test */
	if (!m->media_bad &&
	    pfart_leaf_fits(l, m, pfart_rec_bytes(&pp->rec), e < 0)) {
		pp->old_blob = pfart_leaf_append(t, l, m, &pp->rec, e);
		pp->added = e < 0;
		ret = 0;
		goto unlock;
	}
	old = e >= 0 ? old_blob(t, l, m, e) : 0;
	ret = gather(t, l, m, pp, e, &n, m->media_bad);
	if (!ret)
		ret = build(t, n, l->depth, &off);
	if (ret)
		goto unlock;
	if (!lock_parent(t, s)) {
		drop_built(t, off);
		ret = -EUCLEAN;
		goto unlock;
	}
	swap_in(t, s, off);
	unlock_parent(t, s);
	nl = pfart_ptr(t, off);
	if (nl->type != PFART_LEAF)
		pfart_stat_inc(t, splits);
	else if (nl->klass > l->klass)
		pfart_stat_inc(t, grows);
	else
		pfart_stat_inc(t, compacts);
	pp->old_blob = old;
	pp->added = e < 0;
	pfart_leaf_retire(t, l);
	return 0;
unlock:
	pfart_unlock(t, pfart_lk(l));
	return ret;
}

/**
 * pfart_smo_put - a put that needs the structure to change
 *
 * Context: under @smo, inside a writer section; the reserves filled.
 * Return: 0 (pp->added, pp->old_blob set), -EEXIST, -ENOSPC, -EUCLEAN;
 * -ENOMEM (atomic memory short for a leaf array's metadata) having
 * changed nothing.
 */
int pfart_smo_put(struct pfart *t, struct pfart_put *pp)
{
	struct pfart_path *p = &t->scr->path;
	u32 mis = 0;
	int kind;

	kind = pfart_path_to(t, pp->key, pp->klen, p, &mis);
	switch (kind) {
	case PFART_AT_EMPTY:
		return put_first(t, pp);
	case PFART_AT_LEAF:
		return put_leaf(t, pp, p);
	case PFART_NO_CHILD:
		return put_new_child(t, pp, p);
	case PFART_MISMATCH:
		return put_prefix_split(t, pp, p, mis);
	}
	return kind;
}

/* ---- prune, shrink, collapse -------------------------------------------------- */

/*
 * Node @s->off, when all its children are leaf arrays holding together
 * at most half of the largest one: one leaf array in its place (the
 * reverse of a split; nothing in its place when they are all empty).
 * Return: 1 when it did, 0 when not, < 0 an error.
 */
static int collapse(struct pfart *t, const struct pfart_step *s)
{
	struct pfart_scratch *sc = t->scr;
	struct pfart_inner *n = inner_of(t, s->off);
	u32 nk, bytes = 0, recs = 0, i, r = 0;
	u64 *kids = sc->kids, off = 0;
	int ret = 0;

	/* the end child first: it sorts before every other key */
	nk = !!n->end;
	kids[0] = le64_to_cpu(n->end);
	nk += pfart_inner_entries(n, sc->keys, kids + nk);
	/*
	 * Every delete that prunes comes here for the node above its array:
	 * stop at the first child that rules it out, and read the children's
	 * headers in pmem only when the metadata allows a collapse (a miss
	 * apiece, for up to 256 children).
	 */
	for (i = 0; i < nk; i++) {
		struct pfart_meta *m = pfart_meta_of(t, kids[i]);

		if (!m || READ_ONCE(m->media_bad))
			return 0;	/* poison: only a put rewrites it */
		bytes += READ_ONCE(m->live);
		recs += READ_ONCE(m->n);
		if (bytes * 2 > pfart_data_size(t->max_class) ||
		    recs * 2 > pfart_cap(t->max_class))
			return 0;
	}
	for (i = 0; i < nk; i++)
		if (type_of(t, kids[i]) != PFART_LEAF)
			return 0;
	if (!pmidx_epoch_room(&t->pool->epoch, nk + 1))
		return 0;
	if (!lock_parent(t, s))
		return -EUCLEAN;
	if (!pfart_lock(t, pfart_lk(n))) {
		unlock_parent(t, s);
		return -EUCLEAN;
	}
	for (i = 0; i < nk; i++)
		if (!pfart_lock(t, pfart_lk(pfart_ptr(t, kids[i]))))
			break;
	if (i < nk) {
		ret = -EUCLEAN;
		goto unlock;
	}
	/* exact now that the arrays are locked: end child, then bytes */
	for (i = 0; i < nk && !ret; i++)
		ret = gather(t, pfart_ptr(t, kids[i]), pfart_meta_of(t, kids[i]),
			     NULL, -1, &r, false);
	i = nk;
	if (ret == -E2BIG)
		ret = 0;	/* grown meanwhile: not now */
	if (ret || r > PFART_REC_MAX / 2 ||
	    rec_sum(sc->rec, r) * 2 > pfart_data_size(t->max_class) ||
	    r * 2 > pfart_cap(t->max_class))
		goto unlock;
	if (r) {
		ret = build(t, r, n->depth, &off);
		if (ret)
			goto unlock;
	}
	swap_in(t, s, off);
	for (i = 0; i < nk; i++) {
		pfart_obsolete(t, pfart_lk(pfart_ptr(t, kids[i])));
		pfart_leaf_retire(t, pfart_ptr(t, kids[i]));
	}
	unlock_parent(t, s);
	pfart_inner_retire(t, s->off);
	pfart_stat_inc(t, collapses);
	return 1;
unlock:
	while (i--)
		pfart_unlock(t, pfart_lk(pfart_ptr(t, kids[i])));
	pfart_unlock(t, pfart_lk(n));
	unlock_parent(t, s);
	return ret;
}

/*
 * Node @s->off after a child left: nothing left, it leaves its parent;
 * an N4 with one inner child and no end merges into the child (their
 * prefixes joined, when they fit); a node under its type's threshold is
 * copied into the smaller type.
 */
static int shrink(struct pfart *t, const struct pfart_step *s)
{
	struct pfart_inner *n = inner_of(t, s->off), *c, *g;
	u32 cnt = pfart_inner_count(n);
	u8 pre[PFART_PREFIX_MAX];
	bool small;

	/* the node, and the child an N4 merges with */
	if (!pmidx_epoch_room(&t->pool->epoch, 2))
		return 0;
	if (!cnt && !n->end)
		return replace(t, s, 0);
	if (n->type == PFART_N4 && cnt == 1 && !n->end) {
		pfart_inner_entries(n, t->scr->keys, t->scr->child);
		c = inner_of(t, t->scr->child[0]);
		if (c->type == PFART_LEAF ||
		    n->plen + 1 + c->plen > PFART_PREFIX_MAX)
			return 0;
		memcpy(pre, n->prefix, n->plen);
		pre[n->plen] = t->scr->keys[0];
		memcpy(pre + n->plen + 1, c->prefix, c->plen);
		g = copy_inner(t, c, c->type, n->depth, pre,
			       n->plen + 1 + c->plen, -1, 0);
		if (!g)
			return -ENOSPC;
		if (replace(t, s, pfart_off(t, g))) {
			pfart_inner_drop(t, g);
			return -EUCLEAN;
		}
		/* the child is named by nothing now; no one else locks it */
		pfart_lock(t, pfart_lk(c));
		pfart_obsolete(t, pfart_lk(c));
		pfart_inner_retire(t, pfart_off(t, c));
		pfart_stat_inc(t, node_shrinks);
		return 1;
	}
	small = (n->type == PFART_N256 && cnt <= PFART_SHRINK_256) ||
		(n->type == PFART_N48 && cnt <= PFART_SHRINK_48) ||
		(n->type == PFART_N16 && cnt <= PFART_SHRINK_16);
	if (!small)
		return 0;
	g = copy_inner(t, n, pfart_inner_type_for(cnt), n->depth, n->prefix,
		       n->plen, -1, 0);
	if (!g)
		return -ENOSPC;
	if (replace(t, s, pfart_off(t, g))) {
		pfart_inner_drop(t, g);
		return -EUCLEAN;
	}
	pfart_stat_inc(t, node_shrinks);
	return 1;
}

/* The leaf array of step @s: empty, it leaves; under-full, it shrinks. */
static int prune_leaf(struct pfart *t, const struct pfart_step *s)
{
	struct pfart_leaf *l = pfart_ptr(t, s->off);
	struct pfart_meta *m = pfart_meta_of(t, s->off);
	u32 n = 0;
	u64 off;
	int k, ret;

	if (!m || !pfart_lock(t, pfart_lk(l)))
		return -EUCLEAN;
	if (!m->n) {
		if (!lock_parent(t, s)) {
			pfart_unlock(t, pfart_lk(l));
			return -EUCLEAN;
		}
		swap_in(t, s, 0);
		unlock_parent(t, s);
		pfart_leaf_retire(t, l);
		return 0;
	}
	k = class_for(t, m->live, m->n, l->klass > t->max_class);
	if (k < 0 || k >= l->klass || m->media_bad) {
		WRITE_ONCE(m->pruned, max_t(u16, m->live, 1));
		pfart_unlock(t, pfart_lk(l));
		return 0;
	}
	ret = gather(t, l, m, NULL, -1, &n, false);
	if (!ret)
		ret = build(t, n, l->depth, &off);
	if (ret || !lock_parent(t, s)) {
		if (!ret)
			drop_built(t, off);
		pfart_unlock(t, pfart_lk(l));
		return ret ?: -EUCLEAN;
	}
	swap_in(t, s, off);
	unlock_parent(t, s);
	pfart_leaf_retire(t, l);
	pfart_stat_inc(t, compacts);
	pfart_stat_inc(t, leaf_shrinks);
	return 0;
}

/**
 * pfart_smo_prune - give space back after deletes around @key
 *
 * The leaf array of @key (empty: it leaves its node; under-full: a
 * smaller one), then the nodes above it, deepest first, for as long as
 * one changes (collapse, else shrink): an emptied subtree goes all the
 * way up. Context: as pfart_smo_put(). Return: 0 or an error (nothing
 * lost).
 */
int pfart_smo_prune(struct pfart *t, const u8 *key, u32 klen)
{
	struct pfart_path *p = &t->scr->path;
	const struct pfart_step *s;
	int kind, ret, rounds;
	u32 mis;

	kind = pfart_path_to(t, key, klen, p, &mis);
	if (kind != PFART_AT_LEAF)
		return min(kind, 0);
	ret = prune_leaf(t, &p->s[p->n - 1]);
	pfart_stat_inc(t, prunes);
	for (rounds = 0; !ret && rounds < PFART_PATH_MAX; rounds++) {
		/* a fresh path: what the last round changed is gone */
		kind = pfart_path_to(t, key, klen, p, &mis);
		if (kind < 0)
			return kind;
		if (kind == PFART_AT_LEAF)
			p->n--;
		if (kind == PFART_AT_EMPTY || !p->n)
			return 0;
		s = &p->s[p->n - 1];
		ret = collapse(t, s);
		if (!ret)
			ret = shrink(t, s);
		if (ret <= 0)
			return ret;
		ret = 0;
	}
	return ret;
}
