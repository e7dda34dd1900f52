// SPDX-License-Identifier: GPL-2.0
/*
 * PFtree structural checker (PMIDX_OP_CHECK).
 *
 * Runs online: writers are held at their entry gate while it runs (an
 * SMO runs inside one writer section, so nothing is half done), readers
 * go on. Through pfart_walk() with validation (walk.c: offsets, objects,
 * headers, depths, prefixes against the path, N48 and N4/N16 slots, no
 * stray N48 child), and per leaf array a fresh parse compared with its
 * DRAM metadata: the same records in the same key order, the same tail
 * and live bytes, keys strictly rising, fingerprints and key lengths
 * right, no key twice, every blob well formed. Then ownership: no node
 * and no blob named twice. Then the count: live keys against the
 * per-CPU key counters (exact after any attach: recovery counts them).
 */
#include <linux/errno.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/vmalloc.h>
#include "core/blob.h"
#include "pfart.h"

/**
 * pfart_freeze - hold new writers off and wait for running ones
 *
 * A writer announces its epoch section, then reads @frozen (full barrier
 * in between); we set @frozen, then wait for every section running now
 * to end. Context: process context, may sleep; not inside a section.
 */
void pfart_freeze(struct pfart *t)
{
	mutex_lock(&t->gate);
	WRITE_ONCE(t->frozen, true);
	/* pairs with the one in pmidx_epoch_enter() */
	smp_mb();
	pmidx_epoch_barrier(&t->pool->epoch);
}

void pfart_thaw(struct pfart *t)
{
	/* the walk's reads happen before any writer that sees this */
	smp_store_release(&t->frozen, false);
	mutex_unlock(&t->gate);
}

struct offs {
	u64	*v;
	u64	n, cap;
};

static int offs_add(struct offs *a, u64 x)
{
	u64 *p;

	if (a->n == a->cap) {
		a->cap = a->cap ? 2 * a->cap : 1024;
		p = kvmalloc_array(a->cap, sizeof(*p), GFP_KERNEL);
		if (!p)
			return -ENOMEM;
		if (a->n)
			memcpy(p, a->v, a->n * sizeof(*p));
		kvfree(a->v);
		a->v = p;
	}
	a->v[a->n++] = x;
	return 0;
}

static void sift(u64 *a, u64 i, u64 n)
{
	u64 c, x;

	for (; (c = 2 * i + 1) < n; i = c) {
		if (c + 1 < n && a[c + 1] > a[c])
			c++;
		if (a[i] >= a[c])
			return;
		x = a[i];
		a[i] = a[c];
		a[c] = x;
	}
}

/* Return: whether some offset is there twice (heap sort, then a pass). */
static bool offs_dup(struct offs *a)
{
	u64 *v = a->v, i, x;

	for (i = a->n / 2; i-- > 0;)
		sift(v, i, a->n);
	for (i = a->n; i-- > 1;) {
		x = v[0];
		v[0] = v[i];
		v[i] = x;
		sift(v, 0, i);
		if (!(i & 0xffff))
			cond_resched();
	}
	for (i = 1; i < a->n; i++)
		if (v[i] == v[i - 1])
			return true;
	return false;
}

struct cstate {
	struct offs		nodes, blobs;
	struct pfart_meta	*tmp[PFART_NR_CLASSES];
	u64			keys;
};

static int bad(struct pfart_walk *w, const char *why)
{
	w->why = why;
	return -EUCLEAN;
}

static int add_node(struct pfart *t, struct pfart_walk *w, u64 off)
{
	struct cstate *cs = w->ctx;

	return offs_add(&cs->nodes, off) ? bad(w, "out of memory") : 0;
}

static int check_blob(struct pfart *t, struct pfart_walk *w, u64 off)
{
	struct cstate *cs = w->ctx;
	u32 len;

	if (!pfart_off_ok(t, off, sizeof(struct pmidx_blob)) ||
	    !pmidx_alloc_valid(&t->pool->alloc, off, sizeof(struct pmidx_blob)) ||
	    pmidx_blob_read_len(t->pool, off, &len) ||
	    !pmidx_alloc_valid(&t->pool->alloc, off,
			       sizeof(struct pmidx_blob) + len))
		return bad(w, "bad value blob");
	return offs_add(&cs->blobs, off) ? bad(w, "out of memory") : 0;
}

/* One leaf array: its metadata against a fresh parse of its records. */
static int check_leaf(struct pfart *t, struct pfart_walk *w, u64 off,
		      const u8 *path, u32 depth)
{
	struct pfart_leaf *l = pfart_ptr(t, off);
	struct pfart_meta *m = pfart_meta_of(t, off);
	struct cstate *cs = w->ctx;
	struct pfart_meta *p = cs->tmp[l->klass];
	u32 size = pfart_leaf_size(l->klass), i;
	struct pfart_parse pp = {};
	struct pfart_view v, prev = {};
	int ret;

	if (!m)
		return bad(w, "leaf array without metadata");
	ret = pfart_leaf_parse(t, l, p, false, &pp);
	if (ret)
		return bad(w, pp.why);
	if (p->n != m->n || p->tail != m->tail || p->live != m->live)
		return bad(w, "leaf array metadata differs from its records");
	for (i = 0; i < m->n; i++) {
		u32 e = pfart_order(m, i);

		if (e >= m->n || m->pos[e] != p->pos[pfart_order(p, i)] ||
		    pfart_leaf_view(l, m, size, e, &v))
			return bad(w, "leaf array order differs from its records");
		if (m->klen[e] != v.klen || m->fp[e] != pfart_fp(v.key, v.klen))
			return bad(w, "leaf array key length or fingerprint wrong");
		if (memcmp(v.key, path, depth))
			return bad(w, "key off its leaf array's path");
		if (i && pmidx_key_cmp(prev.key, prev.klen, v.key, v.klen) >= 0)
			return bad(w, "leaf array keys out of order");
		if (v.vfield == PFART_VBLOB) {
			ret = check_blob(t, w, pfart_view_blob(&v));
			if (ret)
				return ret;
		}
		prev = v;
	}
	cs->keys += m->n;
	return 0;
}

int pfart_check(struct pfart *t, u64 *keys, const char **why)
{
	struct pfart_walk w = {
		.node = add_node, .leaf = check_leaf, .validate = true,
	};
	struct cstate *cs = kzalloc(sizeof(*cs), GFP_KERNEL);
	s64 counted;
	int ret = -ENOMEM, k;

	if (!cs)
		return -ENOMEM;
	for (k = 0; k < PFART_NR_CLASSES; k++) {
		cs->tmp[k] = pfart_meta_alloc(t, k, GFP_KERNEL);
		if (!cs->tmp[k])
			goto out;
	}
	w.ctx = cs;
	pfart_freeze(t);
	ret = pfart_walk(t, &w);
	if (!ret && offs_dup(&cs->nodes))
		ret = bad(&w, "a node named twice");
	if (!ret && offs_dup(&cs->blobs))
		ret = bad(&w, "a blob named twice");
	counted = pfart_sum(t, offsetof(struct pfart_pcpu, keys));
	if (!ret && counted != cs->keys)
		ret = bad(&w, "key counter disagrees");
	pfart_thaw(t);
	*keys = cs->keys;
	if (ret)
		*why = w.why;
out:
	for (k = 0; k < PFART_NR_CLASSES; k++)
		pfart_meta_free(t, cs->tmp[k]);
	kvfree(cs->nodes.v);
	kvfree(cs->blobs.v);
	kfree(cs);
	return ret;
}
