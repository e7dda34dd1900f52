// SPDX-License-Identifier: GPL-2.0
/*
 * The checker walks every last-level node and leaf with t->tree held for
 * writing: no operation is in flight then (each holds it shared), so
 * what it sees is one consistent state and it never reports a race as
 * corruption. It checks: node ranges chained lo == previous hi; fences
 * in order within the range; the leaf list in the same order as the
 * index parts, from the head to 0; every leaf offset inside the pool,
 * its bitmap within its slots, leaf_count == its keys, every key in its
 * fence range and unique, blob words inside the pool; buffered KVs
 * unique, aimed at a leaf whose range holds them, their record holding
 * the same key; every log's valid count == the buffer slots naming it
 * (+1 while current) and its directory slot naming it; every blob word
 * naming a blob (aligned, valid header, the bytes inside its object, as
 * recovery's trace wants it) and no object (leaf, blob, log) named
 * twice: a trace would refuse such an image, so the check must too.
 */
#include <linux/errno.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include "core/blob.h"
#include "lodge.h"

struct ck {
	struct lodge		*t;
	u64			expect;		/* next leaf on the list */
	u64			keys;
	u64			nleaves;
	struct lodge_key	*prev_hi;
	bool			first;
	const char		*why;
	u64			*objs;		/* every object named, once */
	size_t			nobj, cap;
};

static int fail(struct ck *c, const char *why)
{
	c->why = why;
	return -EUCLEAN;
}

/* Note an object named by the structure (no memory: not checked). */
static void named(struct ck *c, u64 off)
{
	if (c->nobj == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 1024;
		u64 *n = kvmalloc_array(cap, sizeof(*n), GFP_KERNEL);

		if (!n) {
			kvfree(c->objs);
			c->objs = NULL;
			c->cap = SIZE_MAX;	/* stop collecting */
			return;
		}
		if (c->objs)
			memcpy(n, c->objs, c->nobj * sizeof(*n));
		kvfree(c->objs);
		c->objs = n;
		c->cap = cap;
	}
	if (c->objs)
		c->objs[c->nobj++] = off;
}

static void sift(u64 *v, size_t r, size_t n)
{
	size_t ch;

	for (; (ch = 2 * r + 1) < n; r = ch) {
		if (ch + 1 < n && v[ch] < v[ch + 1])
			ch++;
		if (v[r] >= v[ch])
			break;
		swap(v[r], v[ch]);
	}
}

/* Return: whether an offset is there twice (heap sort, then neighbours). */
static bool named_twice(u64 *v, size_t n)
{
	size_t i;

	for (i = n / 2; i-- > 0;)
		sift(v, i, n);
	for (i = n; i-- > 1;) {
		swap(v[0], v[i]);
		sift(v, 0, i);
	}
	for (i = 1; i < n; i++)
		if (v[i] == v[i - 1])
			return true;
	return false;
}

/* A blob word, as recovery's trace takes it (recovery.c blob_ok()). */
static bool blob_ok(struct ck *c, u64 off)
{
	struct lodge *t = c->t;
	u32 len;

	if ((off & 15) ||
	    !pmidx_alloc_valid(&t->pool->alloc, off, sizeof(struct pmidx_blob)) ||
	    pmidx_blob_read_len(t->pool, off, &len) ||
	    !pmidx_alloc_valid(&t->pool->alloc, off,
			       sizeof(struct pmidx_blob) + len))
		return false;
	named(c, off);
	return true;
}

static bool key_in(const struct lodge_key *lo, const struct lodge_key *hi,
		     const u8 *k, u32 len)
{
	if (lo && lodge_kcmp(lo, k, len) > 0)
		return false;
	return !hi || lodge_kcmp(hi, k, len) > 0;
}

static int check_leaf(struct ck *c, struct lodge_lin *x, int li)
{
	struct lodge *t = c->t;
	u64 off = x->slot[li].w, bits, kind, vind;
	struct lodge_key *lo = li ? x->slot[li].key : x->lo;
	struct lodge_key *hi = li + 1 < x->nidx ? x->slot[li + 1].key : x->hi;
	struct lodge_leaf *l;
	const u8 *k, *k2;
	u32 len, len2;
	int s, s2;

	if (off != c->expect)
		return fail(c, "leaf list and index part disagree");
	if ((off & 255) || !pmidx_alloc_valid(&t->pool->alloc, off, t->leaf_size))
		return fail(c, "leaf offset outside the pool");
	named(c, off);
	l = lodge_leaf_ptr(t, off);
	if (le64_to_cpu(l->flen) > 8 && !blob_ok(c, le64_to_cpu(l->fence)))
		return fail(c, "bad fence blob");
	k = lodge_leaf_fence(t, l, &len);
	if (li || c->nleaves) {
		if (!lo || !k || lodge_kcmp(lo, k, len))
			return fail(c, "leaf fence differs from the index");
	} else if (k) {
		return fail(c, "head leaf has a fence");
	}
	bits = le64_to_cpu(l->bitmap);
	if (bits & ~(lodge_bitmap_mask(t) | LODGE_USE_BIT))
		return fail(c, "leaf bitmap beyond its slots");
	bits &= lodge_bitmap_mask(t);
	if (hweight64(bits) != x->leaf_count[li])
		return fail(c, "leaf_count differs from the leaf");
	kind = le64_to_cpu(l->kind);
	vind = le64_to_cpu(l->vind);
	for (; bits; bits &= bits - 1) {
		s = __ffs64(bits);
		if ((kind & BIT_ULL(s)) &&
		    !blob_ok(c, le64_to_cpu(l->slot[s].key)))
			return fail(c, "bad key blob");
		if ((vind & BIT_ULL(s)) &&
		    !blob_ok(c, le64_to_cpu(l->slot[s].val)))
			return fail(c, "bad value blob");
		k = lodge_slot_key(t, l, s, &len);
		if (!key_in(lo, hi, k, len))
			return fail(c, "leaf key outside its fences");
		for (s2 = s + 1; s2 < t->slots; s2++) {
			if (!(le64_to_cpu(l->bitmap) & BIT_ULL(s2)))
				continue;
			k2 = lodge_slot_key(t, l, s2, &len2);
			if (!pmidx_key_cmp(k, len, k2, len2))
				return fail(c, "a key twice in a leaf");
		}
		c->keys++;
	}
	c->expect = lodge_leaf_next(l);
	c->nleaves++;
	return 0;
}

static int check_lin(struct lodge *t, struct lodge_lin *x, void *ctx)
{
	struct ck *c = ctx;
	unsigned int i, j;
	int ret;

	if (!x->nidx || x->nidx + x->nbuf > x->cap)
		return fail(c, "node slots overflow");
	if (c->first ? !!x->lo : (!x->lo || !c->prev_hi ||
				   lodge_kcmp(x->lo, c->prev_hi->b,
					      c->prev_hi->len)))
		return fail(c, "node ranges not chained");
	c->first = false;
	c->prev_hi = x->hi;
	for (i = 1; i < x->nidx; i++) {
		if (!key_in(x->lo, x->hi, x->slot[i].key->b,
			      x->slot[i].key->len))
			return fail(c, "fence outside its node");
		if (i > 1 && lodge_kcmp(x->slot[i - 1].key, x->slot[i].key->b,
					x->slot[i].key->len) > 0)
			return fail(c, "fences out of order");
	}
	for (i = 0; i < x->nidx; i++) {
		ret = check_leaf(c, x, i);
		if (ret)
			return ret;
	}
	for (j = x->nidx; j < x->nidx + x->nbuf; j++) {
		struct lodge_slot *b = &x->slot[j];
		int li = x->leaf_count[j];
		struct lodge_rec *r;
		struct lodge_leaf *l;
		const u8 *rk;
		u32 rlen;
		bool in;

		if (li >= x->nidx || li != lodge_lin_leaf(x, b->key->b,
							  b->key->len))
			return fail(c, "buffered KV aimed at the wrong leaf");
		if (!key_in(x->lo, x->hi, b->key->b, b->key->len))
			return fail(c, "buffered KV outside its node");
		if (lodge_buf_find(x, b->key->b, b->key->len) != j)
			return fail(c, "a key twice in a buffer");
		rk = lodge_rec_key(t, b->rec, &rlen);
		r = pmidx_ptr(t->pm, b->rec);
		if (rlen != b->key->len || memcmp(rk, b->key->b, rlen) ||
		    b->seq != (le64_to_cpu(r->seqfl) & LODGE_TS_MASK))
			return fail(c, "buffered KV and its record differ");
		l = lodge_leaf_ptr(t, x->slot[li].w);
		in = lodge_leaf_find(t, l, b->key->b, b->key->len) >= 0;
		if (b->flags & LODGE_B_TOMB)
			c->keys -= in;
		else
			c->keys += !in;
	}
	return 0;
}

static int unref(struct lodge *t, struct lodge_lin *x, void *ctx)
{
	unsigned int j;

	for (j = x->nidx; j < x->nidx + x->nbuf; j++)
		atomic_dec(&x->buf_ver[j]->valid);
	return 0;
}

static int restore(struct lodge *t, struct lodge_lin *x, void *ctx)
{
	unsigned int j;

	for (j = x->nidx; j < x->nidx + x->nbuf; j++)
		atomic_inc(&x->buf_ver[j]->valid);
	return 0;
}

int lodge_check(struct lodge *t, u64 *keys, const char **why)
{
	struct ck c = { .t = t, .first = true };
	struct lodge_vlog *v;
	int ret, cpu;
	u32 n = 0, i;

	*keys = 0;
	percpu_down_write(&t->tree);
	if (!t->ready) {
		percpu_up_write(&t->tree);
		return 0;
	}
	c.expect = t->head;
	ret = lodge_walk_lins(t, check_lin, &c);
	/* each buffered KV takes one off its log's count ... */
	lodge_walk_lins(t, unref, NULL);
	if (!ret && c.expect)
		ret = fail(&c, "leaf list goes on past the last node");
	if (!ret && c.prev_hi)
		ret = fail(&c, "last node has an upper bound");
	spin_lock(&t->log_lock);
	list_for_each_entry(v, &t->logs, node) {
		int cur = 0;

		for_each_possible_cpu(cpu)
			cur += per_cpu_ptr(t->parts, cpu)->cur == v;
		/* ... which leaves the partitions' references */
		if (!ret && atomic_read(&v->valid) != cur)
			ret = fail(&c, "log valid count differs from the buffers");
		if (!ret && le64_to_cpu(t->dir->slot[v->slot]) != v->off)
			ret = fail(&c, "log not named by its directory slot");
		n++;
	}
	spin_unlock(&t->log_lock);
	/* no operation runs (t->tree held): the list holds still unlocked */
	list_for_each_entry(v, &t->logs, node)
		named(&c, v->off);
	lodge_walk_lins(t, restore, NULL);
	for (i = 0; !ret && i < LODGE_DIR_SLOTS; i++)
		n -= !!t->dir->slot[i];
	if (!ret && n)
		ret = fail(&c, "directory names logs nobody knows");
	if (!ret && (s64)c.keys != lodge_sum_keys(t))
		ret = fail(&c, "key counter differs from the structure");
	if (!ret && c.objs && named_twice(c.objs, c.nobj))
		ret = fail(&c, "an object named twice");
	percpu_up_write(&t->tree);
	kvfree(c.objs);
	*keys = c.keys;
	*why = c.why;
	return ret;
}
