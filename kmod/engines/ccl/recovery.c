// SPDX-License-Identifier: GPL-2.0
/*
 * Opening an index: rebuild the DRAM levels from the leaf list and replay
 * the log (paper section 3.3, "Failure recovery"). The same code serves a
 * clean attach (the log is then normally empty) and crash recovery, where
 * every object still referenced is marked for the allocator exactly once
 * and nothing is allocated from the pool.
 *
 *   A. walk the leaf list from the head (pointers range-checked, cycles
 *      caught by a length bound), reading only the meta words;
 *   B. in parallel per leaf: validate and mark the leaf and its blobs,
 *      check fingerprints and encodings, find its smallest and largest
 *      key, make its buffer node with the smallest key as low fence;
 *   C. check that the leaves are in key order, unlink empty leaves other
 *      than the head (their range goes to the left neighbour), build the
 *      inner levels;
 *   D. scan the log chunks in parallel, route each entry to the leaf
 *      whose range holds its key, and per leaf (in parallel) keep the
 *      newest entry per key if it is newer than what the leaf holds:
 *      - the key is in the leaf: the entry wins iff its timestamp is
 *        above the leaf's (the leaf timestamp covers every KV flushed);
 *      - the key is in no leaf: a put wins, a tombstone is dropped. This
 *        is what makes the separators safe to re-derive from smallest
 *        keys, which moves the boundary between two leaves anywhere in
 *        the gap of absent keys: see ccl.c, "Deletes and recovery";
 *   E. the winners become the leaf's unflushed buffered KVs (side 0 of
 *      the log, which now holds the old chunks, sealed), beyond the slots
 *      an overflow array drained by the first writer or the GC thread;
 *      their blobs are marked as owned. When tracing, the blobs that only
 *      older entries name (replaced or deleted since) are marked as named
 *      and held by the log until it is recycled (core/wal.h, "Lifetime
 *      rule"): otherwise the trace would free them while the sealed
 *      entries still name them;
 *   F. every buffer node's clock starts at the newest timestamp seen.
 *
 * Nothing is flushed to leaves during recovery (that could need a split,
 * hence an allocation); the first GC after attach copies the replayed KVs
 * into a fresh log side and recycles the old chunks.
 *
 * Every pointer read from media is checked before use and a bad one fails
 * the attach with -EUCLEAN; media errors read as -EIO.
 */
#include <linux/bitops.h>
#include <linux/ktime.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/string.h>
#include "core/blob.h"
#include "core/parallel.h"
#include "ccl.h"

struct rleaf {
	u64			off;
	u64			meta;
	u64			ts;		/* U64_MAX: torn commit */
	bool			torn;
	struct ccl_bnode	*bn;
	struct ccl_fence	*max;
};

struct rent {
	u64	w0, w1, ts;
	u32	leaf;
	u8	flags, fp;
	bool	win;		/* the newest entry of its key, and it counts */
};

struct rvec {
	struct rent	*v;
	size_t		n, cap;
};

struct rctx {
	struct ccl_tree		*t;
	bool			trace;
	unsigned int		workers;
	struct rleaf		*lv;		/* kept leaves, in order */
	size_t			nl;
	u64			*empty;		/* unlinked empty leaves */
	size_t			nempty, empty_cap;
	struct rvec		*wv;		/* log entries per worker */
	struct rent		*all;		/* all entries, by leaf */
	size_t			nall;
	size_t			*lstart;	/* per leaf: first in @all */
	atomic64_t		maxts;
	atomic64_t		replayed;
	atomic64_t		blob_bytes;
	atomic64_t		keys;		/* live keys, for the counter */
	/*
	 * Why a corrupt image was refused. Serial steps store it plainly;
	 * parallel workers keep their own and publish it with xchg().
	 */
	const char		*why;
};

static void ts_max(atomic64_t *m, u64 ts)
{
	s64 cur = atomic64_read(m);

	while ((u64)cur < ts && !atomic64_try_cmpxchg(m, &cur, ts))
		;
}

static bool off_ok(struct ccl_tree *t, u64 off, u64 len)
{
	const struct pmidx_alloc *a = &t->pool->alloc;

	return off >= a->data_off && !(off & (PMIDX_MIN_OBJ - 1)) &&
	       off + len <= t->pm->size && off + len > off;
}

/*
 * Validate the blob at @off (and mark it when tracing and @mark); copy up
 * to @cap bytes of it to @buf when given.
 */
static int blob_check(struct rctx *rc, u64 off, bool mark, u8 *buf, u32 cap,
		      u32 *len)
{
	struct ccl_tree *t = rc->t;
	struct pmidx_alloc *a = &t->pool->alloc;
	struct pmidx_blob hdr;
	size_t size;
	int ret;

	if (!off_ok(t, off, sizeof(hdr)))
		return -EUCLEAN;
	/* owned: marked by a trace, claimed at a clean attach (core/alloc.c) */
	if (mark) {
		ret = rc->trace ? pmidx_alloc_mark(a, off) :
				  pmidx_alloc_claim(a, off);
		if (ret)
			return ret;
	}
	size = pmidx_alloc_size(a, off);
	if (!size || (mark && !pmidx_alloc_valid(a, off, size)))
		return -EUCLEAN;
	ret = pmidx_read_media(&hdr, ccl_ptr(t, off), sizeof(hdr));
	if (ret)
		return ret;
	*len = le32_to_cpu(hdr.len);
	if (le32_to_cpu(hdr.len_check) != ~*len || *len > PMIDX_VALUE_MAX ||
	    sizeof(hdr) + *len > size)
		return -EUCLEAN;
	if (mark)
		atomic64_add(size, &rc->blob_bytes);
	if (buf) {
		if (*len > cap)
			return -EUCLEAN;
		return pmidx_read_media(buf, ccl_ptr(t, off) + sizeof(hdr), *len);
	}
	return 0;
}

/* A key word read from media: its bytes into @buf (>= 256 bytes). */
static int key_check(struct rctx *rc, u64 w, bool ind, bool mark, u8 *buf,
		     u32 *len)
{
	int ret;

	if (!ind) {
		memcpy(buf, &w, 8);
		*len = 8;
		return 0;
	}
	ret = blob_check(rc, ccl_w2off(w), mark, buf, PMIDX_KEY_MAX, len);
	if (!ret && (!*len || *len == 8))
		ret = -EUCLEAN;
	return ret;
}

static int val_check(struct rctx *rc, u64 w, bool ind)
{
	u32 len;
	int ret;

	if (!ind)
		return 0;
	ret = blob_check(rc, ccl_w2off(w), true, NULL, 0, &len);
	if (!ret && len == 8)
		ret = -EUCLEAN;
	return ret;
}

/* ---- A: the leaf list -------------------------------------------------- */

/* A clean attach frees unlinked empty leaves (tracing just skips them). */
static int remember_empty(struct rctx *rc, u64 off)
{
	u64 *nv;

	if (rc->nempty == rc->empty_cap) {
		rc->empty_cap = rc->empty_cap ? 2 * rc->empty_cap : 16;
		nv = kvmalloc_array(rc->empty_cap, sizeof(*nv), GFP_KERNEL);
		if (!nv)
			return -ENOMEM;
		if (rc->nempty)
			memcpy(nv, rc->empty, rc->nempty * sizeof(*nv));
		kvfree(rc->empty);
		rc->empty = nv;
	}
	rc->empty[rc->nempty++] = off;
	return 0;
}

static int walk_list(struct rctx *rc, u64 head)
{
	struct ccl_tree *t = rc->t;
	size_t cap = 64, n = 0, seen = 0;
	size_t limit = t->pm->size / sizeof(struct ccl_leaf);
	struct rleaf *lv, *nv;
	u64 off = head, meta;
	__le64 raw;
	int ret;

	lv = kvmalloc_array(cap, sizeof(*lv), GFP_KERNEL);
	if (!lv)
		return -ENOMEM;
	while (off) {
		ret = -EUCLEAN;
		rc->why = "leaf pointer out of the pool";
		if (!off_ok(t, off, sizeof(struct ccl_leaf)))
			goto err;
		rc->why = "leaf list has a cycle";
		if (++seen > limit)
			goto err;
		/* a clean attach: the trace's marks do this in leaf_one() */
		rc->why = "leaf named twice (a cycle, or another index's leaf)";
		if (!rc->trace && pmidx_alloc_claim(&t->pool->alloc, off))
			goto err;
		if (n == cap) {
			nv = kvmalloc_array(cap * 2, sizeof(*lv), GFP_KERNEL);
			ret = -ENOMEM;
			if (!nv)
				goto err;
			memcpy(nv, lv, n * sizeof(*lv));
			kvfree(lv);
			lv = nv;
			cap *= 2;
		}
		ret = pmidx_read_media(&raw, ccl_ptr(t, off), sizeof(raw));
		if (ret)
			goto err;
		meta = le64_to_cpu(raw);
		/* empty leaves other than the head are unlinked (C) */
		if (!n || ccl_meta_bitmap(meta)) {
			lv[n++] = (struct rleaf){ .off = off, .meta = meta };
		} else if (!rc->trace) {
			ret = remember_empty(rc, off);
			if (ret)
				goto err;
		}
		off = ccl_meta_next(meta);
		if (!(seen % 1024))
			cond_resched();
	}
	rc->lv = lv;
	rc->nl = n;
	return 0;
err:
	kvfree(lv);
	return ret;
}

/* ---- B: each leaf ------------------------------------------------------ */

static int leaf_one(struct rctx *rc, size_t i, u8 *kbuf, u8 *maxbuf,
		    const char **why)
{
	struct ccl_tree *t = rc->t;
	struct rleaf *r = &rc->lv[i];
	struct pmidx_alloc *a = &t->pool->alloc;
	struct ccl_leaf l;
	u32 bitmap, len, minlen = 0, maxlen = 0, s2len;
	u64 tsw;
	u8 minbuf[PMIDX_KEY_MAX];
	unsigned long bits;
	unsigned int s, s2;
	u16 vind;
	int ret;

	*why = "leaf is not an allocated 256-byte object";
	if (rc->trace && pmidx_alloc_mark(a, r->off))
		return -EUCLEAN;
	if (pmidx_alloc_size(a, r->off) != sizeof(l) ||
	    !pmidx_alloc_valid(a, r->off, sizeof(l)))
		return -EUCLEAN;
	ret = pmidx_read_media(&l, ccl_ptr(t, r->off), sizeof(l));
	if (ret)
		return ret;
	tsw = le64_to_cpu(l.ts);
	*why = "leaf timestamp out of range";
	if ((tsw & CCL_TS_RSVD) || ccl_ts_val(tsw) > CCL_TS_LIMIT)
		return -EUCLEAN;
	ts_max(&rc->maxts, ccl_ts_val(tsw));
	/* a commit cut short after its meta word (format.h): nothing newer */
	r->torn = ccl_ts_seq(tsw) != ccl_meta_seq(le64_to_cpu(l.meta));
	r->ts = r->torn ? U64_MAX : ccl_ts_val(tsw);
	bitmap = ccl_meta_bitmap(le64_to_cpu(l.meta));
	vind = le16_to_cpu(l.vind);
	bits = bitmap;
	for_each_set_bit(s, &bits, CCL_LEAF_SLOTS) {
		u64 kw = (__force u64)l.slot[s].key;
		bool ind = l.fp[s] & CCL_FP_IND;

		*why = "leaf key word is corrupt";
		ret = key_check(rc, kw, ind, true, kbuf, &len);
		if (ret)
			return ret;
		*why = "leaf fingerprint does not match its key";
		if (l.fp[s] != ccl_fp(kbuf, len))
			return -EUCLEAN;
		*why = "leaf value word is corrupt";
		ret = val_check(rc, (__force u64)l.slot[s].val, vind & BIT(s));
		if (ret)
			return ret;
		/* duplicates within the leaf */
		for (s2 = 0; s2 < s; s2++) {
			if (!(bitmap & BIT(s2)) || l.fp[s2] != l.fp[s])
				continue;
			*why = "leaf holds a key twice";
			if (ccl_key_eq(t, (__force u64)l.slot[s2].key,
				       l.fp[s2] & CCL_FP_IND, kbuf, len))
				return -EUCLEAN;
		}
		if (!minlen || pmidx_key_cmp(kbuf, len, minbuf, minlen) < 0) {
			memcpy(minbuf, kbuf, len);
			minlen = len;
		}
		if (!maxlen || pmidx_key_cmp(kbuf, len, maxbuf, maxlen) > 0) {
			memcpy(maxbuf, kbuf, len);
			maxlen = len;
		}
	}
	s2len = i ? minlen : 0;
	r->bn = ccl_bnode_alloc(t, GFP_KERNEL);
	if (!r->bn)
		return -ENOMEM;
	/* the clock is set once every timestamp was seen (ccl_recover()) */
	ccl_bnode_make(t, r->bn, ccl_fence_alloc(minbuf, s2len, GFP_KERNEL),
		       r->off, 0);
	r->max = maxlen ? ccl_fence_alloc(maxbuf, maxlen, GFP_KERNEL) : NULL;
	if (!r->bn->low || (maxlen && !r->max))
		return -ENOMEM;
	return 0;
}

static int leaves_worker(void *arg, unsigned int w)
{
	struct rctx *rc = arg;
	size_t i, lo = rc->nl * w / rc->workers, hi = rc->nl * (w + 1) / rc->workers;
	const char *why = NULL;
	u64 keys = 0;
	u8 *buf;
	int ret = 0;

	buf = kmalloc(2 * PMIDX_KEY_MAX + 2, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	for (i = lo; i < hi && !ret; i++) {
		ret = leaf_one(rc, i, buf, buf + PMIDX_KEY_MAX + 1, &why);
		keys += hweight32(ccl_meta_bitmap(rc->lv[i].meta));
		if (!(i % 64))
			cond_resched();
	}
	atomic64_add(keys, &rc->keys);
	/* workers run in parallel: publish the reason atomically */
	if (ret && why)
		(void)xchg(&rc->why, why);
	kfree(buf);
	return ret;
}

/* ---- C: order, unlink empty leaves, inner levels ------------------------ */

static int link_leaves(struct rctx *rc)
{
	struct ccl_tree *t = rc->t;
	struct ccl_bnode **bn;
	size_t i;
	int ret;

	for (i = 1; i < rc->nl; i++) {
		const struct ccl_fence *prev = rc->lv[i - 1].max;
		const struct ccl_fence *lo = rc->lv[i].bn->low;

		rc->why = "leaves are not in key order";
		if (prev && pmidx_key_cmp(prev->key, prev->len,
					  lo->key, lo->len) >= 0)
			return -EUCLEAN;
		if (!prev && i > 1)
			return -EUCLEAN;
	}
	bn = kvmalloc_array(rc->nl, sizeof(*bn), GFP_KERNEL);
	if (!bn)
		return -ENOMEM;
	for (i = 0; i < rc->nl; i++) {
		struct rleaf *r = &rc->lv[i];
		u64 next = i + 1 < rc->nl ? rc->lv[i + 1].off : 0;

		if (ccl_meta_next(r->meta) != next) {
			struct ccl_leaf *l = ccl_ptr(t, r->off);

			/* empty leaves followed: unlink them (atomic, durable) */
			pmidx_store64_persist(t->pm, &l->meta,
					      ccl_meta(ccl_meta_bitmap(r->meta),
						       next,
						       ccl_meta_seq(r->meta)));
		}
		ccl_bn_set_next(r->bn, i + 1 < rc->nl ? rc->lv[i + 1].bn : NULL);
		bn[i] = r->bn;
	}
	ret = ccl_inner_build(t, bn, rc->nl);
	kvfree(bn);
	if (ret)
		return ret;
	t->bhead = rc->lv[0].bn;
	t->head = rc->lv[0].off;
	atomic64_set(&t->nleaves, rc->nl);
	return 0;
}

/*
 * In a clean attach the unlinked empty leaves are allocated objects: free
 * them, now that the list no longer reaches them. (When tracing they were
 * never marked.)
 */
static void free_empty(struct rctx *rc)
{
	struct pmidx_alloc *a = &rc->t->pool->alloc;
	size_t i;

	for (i = 0; i < rc->nempty; i++)
		if (pmidx_alloc_size(a, rc->empty[i]) == sizeof(struct ccl_leaf) &&
		    pmidx_alloc_valid(a, rc->empty[i], sizeof(struct ccl_leaf)))
			pmidx_free(a, rc->empty[i]);
}

/* ---- D: the log ------------------------------------------------------- */

static int collect(void *arg, unsigned int w, const struct pmidx_wal_rec *r)
{
	struct rctx *rc = arg;
	struct rvec *v = &rc->wv[w];

	if (v->n == v->cap) {
		size_t cap = v->cap ? 2 * v->cap : 1024;
		struct rent *nv = kvmalloc_array(cap, sizeof(*nv), GFP_KERNEL);

		if (!nv)
			return -ENOMEM;
		if (v->n)
			memcpy(nv, v->v, v->n * sizeof(*nv));
		kvfree(v->v);
		v->v = nv;
		v->cap = cap;
	}
	if (r->ts > CCL_TS_LIMIT) {
		(void)xchg(&rc->why, "log timestamp out of range");
		return -EUCLEAN;
	}
	ts_max(&rc->maxts, r->ts);
	v->v[v->n++] = (struct rent){ .w0 = r->w0, .w1 = r->w1, .ts = r->ts,
				      .flags = r->flags & CCL_F_MASK };
	return 0;
}

/* The kept leaf whose range holds the key. */
static u32 route(struct rctx *rc, const u8 *k, u32 klen)
{
	long lo = 0, hi = rc->nl - 1, mid, ans = 0;

	while (lo <= hi) {
		const struct ccl_fence *f;

		mid = (lo + hi) / 2;
		f = rc->lv[mid].bn->low;
		if (pmidx_key_cmp(f->key, f->len, k, klen) <= 0) {
			ans = mid;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	return ans;
}

static int route_worker(void *arg, unsigned int w)
{
	struct rctx *rc = arg;
	struct rvec *v = &rc->wv[w];
	u8 kbuf[PMIDX_KEY_MAX];
	size_t i;
	u32 len;

	for (i = 0; i < v->n; i++) {
		struct rent *e = &v->v[i];

		/* the log holds every blob an entry names: never gone */
		if (key_check(rc, e->w0, e->flags & CCL_F_KIND, false, kbuf,
			      &len)) {
			(void)xchg(&rc->why, "log entry names a corrupt key blob");
			return -EUCLEAN;
		}
		e->fp = ccl_fp(kbuf, len);
		e->leaf = route(rc, kbuf, len);
		if (!(i % 1024))
			cond_resched();
	}
	return 0;
}

/* Gather the entries by leaf (counting sort). */
static int bucket(struct rctx *rc)
{
	size_t i, j, n = 0, *cnt;
	unsigned int w;

	for (w = 0; w < rc->workers; w++)
		n += rc->wv[w].n;
	cnt = kvcalloc(rc->nl + 1, sizeof(*cnt), GFP_KERNEL);
	rc->all = kvmalloc_array(max_t(size_t, n, 1), sizeof(*rc->all),
				 GFP_KERNEL);
	if (!cnt || !rc->all) {
		kvfree(cnt);
		return -ENOMEM;
	}
	for (w = 0; w < rc->workers; w++)
		for (j = 0; j < rc->wv[w].n; j++)
			cnt[rc->wv[w].v[j].leaf + 1]++;
	for (i = 0; i < rc->nl; i++)
		cnt[i + 1] += cnt[i];
	rc->lstart = cnt;
	rc->nall = cnt[rc->nl];
	/* cnt[i] is now the next free position of leaf i */
	for (w = 0; w < rc->workers; w++) {
		for (j = 0; j < rc->wv[w].n; j++) {
			struct rent *e = &rc->wv[w].v[j];

			rc->all[cnt[e->leaf]++] = *e;
		}
		kvfree(rc->wv[w].v);
		rc->wv[w].v = NULL;
		rc->wv[w].n = 0;
	}
	/* shift back: lstart[i] = first entry of leaf i */
	for (i = rc->nl; i > 0; i--)
		cnt[i] = cnt[i - 1];
	cnt[0] = 0;
	return 0;
}

/* Key ascending, then newest first. */
static int rent_cmp(const void *a, const void *b, const void *ctx)
{
	const struct rent *x = a, *y = b;
	int c = ccl_word_cmp(ctx, x->w0, x->flags & CCL_F_KIND,
			     y->w0, y->flags & CCL_F_KIND);

	if (c)
		return c;
	return x->ts > y->ts ? -1 : x->ts < y->ts;
}

static int place(struct rctx *rc, size_t li, struct rent *e, size_t n)
{
	struct ccl_tree *t = rc->t;
	struct ccl_bnode *b = rc->lv[li].bn;
	struct ccl_ovf *ovf;
	size_t i;
	u64 h;

	if (n <= t->nbatch) {
		for (i = 0; i < n; i++) {
			b->slot[i] = (struct ccl_kv){ e[i].w0, e[i].w1 };
			b->sflag[i] = e[i].flags;
			b->sfp[i] = e[i].fp;
		}
		h = atomic64_read(&b->hdr);
		atomic64_set(&b->hdr, bn_set_pos(h, n));
		return 0;
	}
	/* in key order, as scans expect (ccl.h): @e is sorted */
	ovf = kmalloc(struct_size(ovf, e, n), GFP_KERNEL);
	if (!ovf)
		return -ENOMEM;
	ovf->n = n;
	for (i = 0; i < n; i++)
		ovf->e[i] = (struct ccl_ent){ .key = e[i].w0, .val = e[i].w1,
			.ts = e[i].ts, .flags = e[i].flags, .fp = e[i].fp,
			.lslot = -1 };
	b->ovf = ovf;
	atomic_inc(&t->ovf_nodes);
	return 0;
}

/*
 * A blob that a replayed entry names but no winner owns (the entry is
 * older than what replaced or deleted its key): when tracing, mark it
 * unless its owner did, and let the log hold it (see E above).
 */
static int hold_named(struct rctx *rc, u64 w, bool ind)
{
	struct ccl_tree *t = rc->t;
	u64 off = ccl_w2off(w);
	u32 len;
	int ret;

	if (!ind || !rc->trace)
		return 0;
	ret = blob_check(rc, off, false, NULL, 0, &len);
	if (ret)
		return ret;
	ret = pmidx_alloc_mark_named(&t->pool->alloc, off);
	if (ret < 0)
		return ret;
	if (ret) {
		atomic64_add(pmidx_alloc_size(&t->pool->alloc, off),
			     &rc->blob_bytes);
		/* process context: the block comes from a spare made here */
		pmidx_wal_prepare(t->wal);
		pmidx_wal_retire(t->wal, off);
	}
	return 0;
}

static int replay_leaf(struct rctx *rc, size_t li, const char **why)
{
	struct ccl_tree *t = rc->t;
	struct rent *e = rc->all + rc->lstart[li];
	size_t n = rc->lstart[li + 1] - rc->lstart[li], i, j, k = 0;
	struct ccl_leaf *l = ccl_ptr(t, rc->lv[li].off);
	u32 bitmap = ccl_meta_bitmap(rc->lv[li].meta), len;
	const u8 *key;
	bool in_leaf;
	s64 keys = 0;
	int ret;

	if (!n)
		return 0;
	sort_r(e, n, sizeof(*e), rent_cmp, NULL, t);
	for (i = 0; i < n; i = j) {
		/* e[i] is the newest entry of the key of e[i..j) */
		for (j = i + 1; j < n; j++)
			if (ccl_word_cmp(t, e[j].w0, e[j].flags & CCL_F_KIND,
					 e[i].w0, e[i].flags & CCL_F_KIND))
				break;
		key = ccl_word_bytes(t, &e[i].w0, e[i].flags & CCL_F_KIND, &len);
		in_leaf = ccl_leaf_find(t, l, bitmap, key, len, e[i].fp) >= 0;
		e[i].win = !(in_leaf ? e[i].ts <= rc->lv[li].ts :
			     (e[i].flags & CCL_F_TOMB));
		if (!e[i].win)
			continue;
		/* a winning delete removes a leaf key, a put may add one */
		keys += e[i].flags & CCL_F_TOMB ? -1 : !in_leaf;
		/* a winner owns its blobs: marked exactly once */
		*why = "log entry points to a corrupt or shared blob";
		if (e[i].flags & CCL_F_KIND) {
			ret = blob_check(rc, ccl_w2off(e[i].w0), true, NULL, 0,
					 &len);
			if (ret)
				return ret;
		}
		ret = val_check(rc, e[i].w1, e[i].flags & CCL_F_VIND);
		if (ret)
			return ret;
	}
	/* then what the other entries name (winners first: see hold_named) */
	*why = "log entry names a corrupt blob";
	for (i = 0; i < n; i++) {
		if (e[i].win)
			continue;
		ret = hold_named(rc, e[i].w0, e[i].flags & CCL_F_KIND);
		if (!ret && !(e[i].flags & CCL_F_TOMB))
			ret = hold_named(rc, e[i].w1, e[i].flags & CCL_F_VIND);
		if (ret)
			return ret;
	}
	for (i = 0; i < n; i++)
		if (e[i].win)
			e[k++] = e[i];
	atomic64_add(k, &rc->replayed);
	atomic64_add(keys, &rc->keys);
	return place(rc, li, e, k);
}

static int replay_worker(void *arg, unsigned int w)
{
	struct rctx *rc = arg;
	size_t i, lo = rc->nl * w / rc->workers, hi = rc->nl * (w + 1) / rc->workers;
	const char *why = NULL;
	int ret = 0;

	for (i = lo; i < hi && !ret; i++) {
		ret = replay_leaf(rc, i, &why);
		if (!(i % 64))
			cond_resched();
	}
	/* as leaves_worker(): workers run in parallel, publish atomically */
	if (ret && why)
		(void)xchg(&rc->why, why);
	return ret;
}

/*
 * F: the node clocks start at the newest timestamp seen. When the log holds
 * nothing (a clean detach flushed it) the leaf timestamps are not needed
 * any more; once they grow large they are reset to 0 (the paper resets
 * them at every recovery, its TSC timestamps restart at boot), so the
 * 48-bit log timestamps last for 2^46 writes per attach, not per index.
 */
static void ts_reset(struct rctx *rc)
{
	struct ccl_tree *t = rc->t;
	size_t i;

	if ((u64)atomic64_read(&rc->maxts) < CCL_TS_RESET ||
	    pmidx_wal_bytes_exact(t->wal) || atomic64_read(&rc->replayed))
		return;
	for (i = 0; i < rc->nl; i++) {
		struct ccl_leaf *l = ccl_ptr(t, rc->lv[i].off);
		u32 seq = ccl_meta_seq(le64_to_cpu(l->meta));

		if (ccl_ts_val(le64_to_cpu(l->ts)))
			pmidx_store64_persist(t->pm, &l->ts, ccl_ts_word(0, seq));
	}
	atomic64_set(&rc->maxts, 0);
	pr_info("pmidx: index %s (ccl): leaf timestamps reset\n",
		t->idx->name);
}

/*
 * Finish the commits a crash cut short after their meta word: the leaf
 * holds what is newer than every entry seen, so its timestamp becomes the
 * newest one, with the meta word's sequence.
 */
static void finish_torn(struct rctx *rc)
{
	struct ccl_tree *t = rc->t;
	u64 ts = atomic64_read(&rc->maxts);
	size_t i;

	for (i = 0; i < rc->nl; i++) {
		struct ccl_leaf *l = ccl_ptr(t, rc->lv[i].off);

		if (rc->lv[i].torn)
			pmidx_store64_persist(t->pm, &l->ts,
					      ccl_ts_word(ts, ccl_meta_seq(rc->lv[i].meta)));
	}
}

static void rc_free(struct rctx *rc, bool keep_nodes)
{
	size_t i;

	if (rc->lv) {
		for (i = 0; i < rc->nl; i++) {
			kfree(rc->lv[i].max);
			if (!keep_nodes && rc->lv[i].bn)
				ccl_bnode_free(rc->t, rc->lv[i].bn);
		}
		kvfree(rc->lv);
	}
	if (rc->wv) {
		for (i = 0; i < rc->workers; i++)
			kvfree(rc->wv[i].v);
		kfree(rc->wv);
	}
	kvfree(rc->all);
	kvfree(rc->lstart);
	kvfree(rc->empty);
}

/**
 * ccl_recover - build the DRAM index from media and replay the log
 *
 * Context: open(); when @rc->clean is false the allocator is tracing.
 * Return: 0, -EUCLEAN (corrupt image, reason logged), -EIO, -ENOMEM.
 */
int ccl_recover(struct ccl_tree *t, const struct pmidx_recover *prc)
{
	struct rctx rc = { .t = t, .trace = !prc->clean };
	struct pmidx_wal_cfg cfg;
	struct ccl_bnode *b;
	struct ccl_root root;
	u64 start = ktime_get_ns();
	int ret;

	atomic64_set(&rc.maxts, 0);
	atomic64_set(&rc.replayed, 0);
	atomic64_set(&rc.blob_bytes, 0);
	atomic64_set(&rc.keys, 0);
	rc.workers = clamp(prc->threads, 1U, 64U);
	ret = pmidx_read_media(&root, t->root, sizeof(root));
	if (ret)
		return ret;
	rc.why = "root head pointer invalid";
	ret = -EUCLEAN;
	if (!root.head || !root.wal_dir)
		goto fail;
	ret = walk_list(&rc, le64_to_cpu(root.head));
	if (ret)
		goto fail;
	rc.workers = clamp_t(unsigned int, rc.workers, 1, rc.nl);
	ret = pmidx_run_parallel(rc.workers, leaves_worker, &rc);
	if (ret)
		goto fail;
	ret = link_leaves(&rc);
	if (ret)
		goto fail;
	free_empty(&rc);

	rc.why = "log directory corrupt";
	cfg = ccl_wal_cfg(t, rc.trace);
	ret = pmidx_wal_open(t->pool, le64_to_cpu(root.wal_dir), &cfg, &t->wal);
	if (ret)
		goto fail_tree;
	rc.workers = clamp(prc->threads, 1U, 64U);
	rc.wv = kcalloc(rc.workers, sizeof(*rc.wv), GFP_KERNEL);
	ret = -ENOMEM;
	if (!rc.wv)
		goto fail_wal;
	rc.why = "log entry corrupt";
	ret = pmidx_wal_replay(t->wal, rc.workers, collect, &rc);
	if (ret)
		goto fail_wal;
	ret = pmidx_run_parallel(rc.workers, route_worker, &rc);
	if (!ret)
		ret = bucket(&rc);
	if (ret)
		goto fail_wal;
	rc.workers = clamp_t(unsigned int, rc.workers, 1, rc.nl);
	ret = pmidx_run_parallel(rc.workers, replay_worker, &rc);
	if (ret)
		goto fail_wal;

	finish_torn(&rc);
	ts_reset(&rc);
	t->ts_base = atomic64_read(&rc.maxts);
	for (b = t->bhead; b; b = b->next)
		b->clock = t->ts_base;
	atomic64_set(&t->blob_bytes, atomic64_read(&rc.blob_bytes));
	/* the live key counter starts from here (ccl.h, struct ccl_pcpu) */
	per_cpu_ptr(t->st, 0)->keys = atomic64_read(&rc.keys);
	t->replayed = atomic64_read(&rc.replayed);
	rc_free(&rc, true);
	t->recovery_ns = ktime_get_ns() - start;
	return 0;

fail_wal:
	pmidx_wal_close(t->wal);
	t->wal = NULL;
fail_tree:
	ccl_inner_free_all(t);
	t->bhead = NULL;
fail:
	if (ret == -EUCLEAN)
		pr_err("pmidx: index %s (ccl): %s\n", t->idx->name, rc.why);
	rc_free(&rc, false);
	return ret;
}
