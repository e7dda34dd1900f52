// SPDX-License-Identifier: GPL-2.0
/*
 * Open (§4.4 "Data structure recovery"; README "Recovery"). Every attach,
 * clean or not, since the leaf arrays' metadata is DRAM:
 *  1. a fresh root (magic 0): version, largest leaf array and generation
 *     written and persisted, then the magic;
 *  2. the walk (walk.c) over every inner node and leaf array, each word
 *     checked before it is followed; with a trace (a crash attach) each
 *     node is marked, on a clean attach claimed, and N48 slots an add cut
 *     short are cleared;
 *  3. the leaf arrays parsed in parallel (rc->threads workers): records
 *     up to the first zero header, the last record of a key deciding it
 *     (a valid one before it is invalidated: an update's invalidation
 *     left in the cache, or cut short by the crash), the metadata built
 *     in key order, each blob checked (marked with a trace, claimed on a
 *     clean attach);
 *  4. the root's generation set above every generation seen, persisted:
 *     lock words of earlier opens read as unlocked from now on (lock.h).
 * Nothing is allocated from the pool here.
 */
#include <linux/errno.h>
#include <linux/ktime.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/vmalloc.h>
#include "core/blob.h"
#include "core/parallel.h"
#include "persist.h"
#include "pfart.h"

#define RWORKERS_MAX	64

struct rleaf {
	u64	off;
	u8	*path;		/* the path when deeper than the stored prefix */
};

struct rsum {
	s64		keys, blob_bytes, leaf_bytes;
	u64		dups;
	const char	*why;
};

struct rstate {
	struct pfart	*t;
	bool		mark;
	struct rleaf	*lv;
	size_t		nl, cap;
	unsigned int	workers;
	struct rsum	sum[RWORKERS_MAX];
};

/*
 * Every node is read at every attach: a trace marks it, a clean attach
 * claims it (core/alloc.c, "Claims"), so that one named twice, by this
 * index or another, is refused either way.
 */
static int mark_node(struct pfart *t, struct pfart_walk *w, u64 off)
{
	struct rstate *rs = w->ctx;
	struct pmidx_alloc *a = &t->pool->alloc;

	if (rs->mark ? pmidx_alloc_mark(a, off) : pmidx_alloc_claim(a, off)) {
		w->why = "node not an object, or named twice";
		return -EUCLEAN;
	}
	return 0;
}

static int add_leaf(struct pfart *t, struct pfart_walk *w, u64 off,
		    const u8 *path, u32 depth)
{
	struct rstate *rs = w->ctx;
	struct rleaf *lv;

	if (rs->nl == rs->cap) {
		size_t cap = rs->cap ? 2 * rs->cap : 1024;

		lv = kvmalloc_array(cap, sizeof(*lv), GFP_KERNEL);
		if (!lv)
			goto nomem;
		if (rs->lv)
			memcpy(lv, rs->lv, rs->nl * sizeof(*lv));
		kvfree(rs->lv);
		rs->lv = lv;
		rs->cap = cap;
	}
	lv = &rs->lv[rs->nl];
	lv->off = off;
	lv->path = NULL;
	if (depth > PFART_LPREFIX_MAX) {
		lv->path = kmemdup(path, depth, GFP_KERNEL);
		if (!lv->path)
			goto nomem;
	}
	rs->nl++;
	return 0;
nomem:
	w->why = "out of memory";
	return -ENOMEM;
}

/* A blob a record names: an object holding a well-formed blob. */
static int blob_ok(struct rstate *rs, u64 off, u32 *bytes)
{
	struct pfart *t = rs->t;
	u32 len;

	if (!pfart_off_ok(t, off, sizeof(struct pmidx_blob)))
		return -EUCLEAN;
	if (rs->mark)
		return pmidx_blob_mark(t->pool, off) ?:
		       (*bytes = pmidx_alloc_size(&t->pool->alloc, off), 0);
	/* a record owns its blob: claimed as the trace would mark it */
	if (pmidx_alloc_claim(&t->pool->alloc, off) ||
	    !pmidx_alloc_valid(&t->pool->alloc, off, sizeof(struct pmidx_blob)) ||
	    pmidx_blob_read_len(t->pool, off, &len) ||
	    !pmidx_alloc_valid(&t->pool->alloc, off,
			       sizeof(struct pmidx_blob) + len))
		return -EUCLEAN;
	*bytes = pmidx_alloc_size(&t->pool->alloc, off);
	return 0;
}

/* One leaf array: parse, check its blobs and its path, install its metadata. */
static int rebuild_one(struct rstate *rs, struct rsum *sum, struct rleaf *lv)
{
	struct pfart *t = rs->t;
	struct pfart_leaf *l = pfart_ptr(t, lv->off);
	u32 size = pfart_leaf_size(l->klass), e, bytes = 0;
	struct pfart_parse pp = {};
	struct pfart_meta *m;
	struct pfart_view v;
	int ret;

	m = pfart_meta_alloc(t, l->klass, GFP_KERNEL);
	if (!m || pfart_mdir_ensure(t, lv->off, GFP_KERNEL)) {
		pfart_meta_free(t, m);
		sum->why = "out of memory";
		return -ENOMEM;
	}
	ret = pfart_leaf_parse(t, l, m, true, &pp);
	for (e = 0; !ret && e < m->n; e++) {
		ret = pfart_leaf_view(l, m, size, e, &v);
		if (!ret && lv->path && !e && memcmp(v.key, lv->path, l->depth))
			ret = -EUCLEAN;
		if (!ret && v.vfield == PFART_VBLOB) {
			ret = blob_ok(rs, pfart_view_blob(&v), &bytes);
			sum->blob_bytes += bytes;
		}
		if (ret)
			pp.why = "bad blob word, or a key off its path";
	}
	if (ret) {
		pfart_meta_free(t, m);
		sum->why = pp.why;
		return ret;
	}
	pfart_meta_set(t, lv->off, m);
	sum->keys += m->n;
	sum->dups += pp.dups;
	sum->leaf_bytes += size;
	return 0;
}

static int rebuild_worker(void *arg, unsigned int i)
{
	struct rstate *rs = arg;
	size_t j;
	int ret;

	for (j = i; j < rs->nl; j += rs->workers) {
		ret = rebuild_one(rs, &rs->sum[i], &rs->lv[j]);
		if (ret)
			return ret;
	}
	return 0;
}

static int bad_root(struct pfart *t, const char *why)
{
	pr_warn("pmidx: pfart index %s: %s\n", t->idx->name, why);
	return -EUCLEAN;
}

/* Step 1: a root never used. */
static void root_init(struct pfart *t)
{
	struct pfart_root *r = t->root;

	memset(r, 0, sizeof(*r));
	r->version = cpu_to_le32(PFART_FORMAT_VERSION);
	r->leaf_max = cpu_to_le32(t->leaf_max);
	r->gen = cpu_to_le64(1);
	pfart_persist(t, r, sizeof(*r));
	/* only once the rest is durable */
	WRITE_ONCE(r->magic, cpu_to_le64(PFART_ROOT_MAGIC));
	pfart_persist(t, &r->magic, sizeof(r->magic));
	t->gen = 1;
}

static void set_leaf_max(struct pfart *t, u32 bytes)
{
	t->leaf_max = bytes;
	t->max_class = ilog2(bytes / PFART_LEAF_MIN);
	t->top_class = PFART_NR_CLASSES - 1;
}

int pfart_recover(struct pfart *t, const struct pmidx_recover *rc)
{
	struct pfart_root *r = t->root;
	struct rstate *rs;
	struct pfart_walk w = {
		.leaf = add_leaf, .validate = true, .fix = true,
	};
	u64 t0, gen, dups = 0;
	s64 keys = 0, blob_bytes = 0, leaf_bytes = 0;
	u32 lm, ver;
	size_t j;
	int ret;

	if (!r->magic) {
		lm = pfart_leaf_bytes;
		set_leaf_max(t, lm == 512 || lm == 1024 ? lm : PFART_LEAF_MAX);
		root_init(t);
		return 0;
	}
	lm = le32_to_cpu(r->leaf_max);
	ver = le32_to_cpu(r->version);
	if (le64_to_cpu(r->magic) != PFART_ROOT_MAGIC ||
	    ver < PFART_FORMAT_V1 || ver > PFART_FORMAT_VERSION ||
	    (lm != 512 && lm != 1024 && lm != 2048))
		return bad_root(t, "bad root");
	set_leaf_max(t, lm);
	if (ver == PFART_FORMAT_V1)	/* no array above leaf_max yet */
		t->top_class = t->max_class;
	rs = kvzalloc(sizeof(*rs), GFP_KERNEL);
	if (!rs)
		return -ENOMEM;
	rs->t = t;
	rs->mark = rc->mark;
	w.ctx = rs;
	w.node = mark_node;
	ret = pfart_walk(t, &w);
	if (ret) {
		bad_root(t, w.why ?: "walk failed");
		goto out;
	}
	t0 = ktime_get_ns();
	rs->workers = clamp_t(unsigned int, rc->threads, 1, RWORKERS_MAX);
	rs->workers = min_t(size_t, rs->workers, max_t(size_t, rs->nl / 64, 1));
	t->recovery_threads = rs->workers;
	ret = rs->workers > 1 ?
	      pmidx_run_parallel(rs->workers, rebuild_worker, rs) :
	      rebuild_worker(rs, 0);
	t->meta_ns = ktime_get_ns() - t0;
	for (j = 0; j < rs->workers; j++) {
		keys += rs->sum[j].keys;
		blob_bytes += rs->sum[j].blob_bytes;
		leaf_bytes += rs->sum[j].leaf_bytes;
		dups += rs->sum[j].dups;
		if (ret && rs->sum[j].why)
			w.why = rs->sum[j].why;
	}
	if (ret) {
		bad_root(t, w.why ?: "leaf array rebuild failed");
		goto out;
	}
	if (dups)
		pr_info("pmidx: pfart index %s: %llu superseded record(s) invalidated\n",
			t->idx->name, dups);
	/* step 4: above every generation a lock word holds */
	gen = max_t(u64, le64_to_cpu(r->gen), w.maxgen) + 1;
	if (gen > U32_MAX) {	/* 2^32 attaches: a damaged root or lock word */
		ret = bad_root(t, "generations exhausted");
		goto out;
	}
	t->gen = gen;
	WRITE_ONCE(r->gen, cpu_to_le64(gen));
	pfart_persist(t, &r->gen, sizeof(r->gen));
	/*
	 * From now on this index may hold leaf arrays above leaf_max and
	 * updates' invalidations left in the cache: a module of an older
	 * version stops at the root's version, before its walk would take
	 * such an array for damage or a superseded record for live.
	 */
	if (ver != PFART_FORMAT_VERSION) {
		WRITE_ONCE(r->version, cpu_to_le32(PFART_FORMAT_VERSION));
		pfart_persist(t, &r->version, sizeof(r->version));
		t->top_class = PFART_NR_CLASSES - 1;
	}
	pfart_stat_add(t, keys, keys);
	pfart_stat_add(t, leaves, w.leaves);
	pfart_stat_add(t, inners, w.inners);
	pfart_stat_add(t, inner_bytes, w.inner_bytes);
	pfart_stat_add(t, leaf_bytes, leaf_bytes);
	pfart_stat_add(t, blob_bytes, blob_bytes);
out:
	/* on an error, metadata installed so far goes with the directory */
	for (j = 0; j < rs->nl; j++)
		kfree(rs->lv[j].path);
	kvfree(rs->lv);
	kvfree(rs);
	return ret;
}
