// SPDX-License-Identifier: GPL-2.0
/*
 * B^3-tree: the walk over every reachable object, and recovery.
 *
 * Every page is reached exactly once by walking each level's sibling
 * chain from its first page (the leftmost child of the first page of the
 * level above): a page no chain holds is not part of the index, and the
 * intermediate states of an SMO (smo.c) never take a page out of its
 * chain while a child word is its only way in. So every child word must
 * name a page of the chain of the level below: one that does not names a
 * page the trace frees (a retired page, smo.c), and validation rejects
 * it (each level's chain is collected, sorted, before the level above is
 * walked). Inside a page, the nodes reachable from its BST root.
 *
 * Callers run in process context outside any section (recovery, drop,
 * CHECK): the walk reschedules per page.
 *
 * This is the one function that knows what the index owns: drop-index
 * frees with it, the checker collects with it (and counts the keys after
 * a crash attach), the core's recovery checker (pmidx_recovery_verify)
 * marks with it. A crash attach does not call it: the allocator recovers
 * committed-mode objects from its own metadata (b3_recover()).
 */
#include <linux/errno.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/vmalloc.h>
#include "core/blob.h"
#include "b3.h"

static int bad(struct b3_walk *w, const char *why)
{
	w->why = why;
	return -EUCLEAN;
}

/* Append @v to @a, growing it; Context: may sleep. */
int b3_offs_add(struct b3_offs *a, u64 v)
{
	u64 *p;

	if (a->n == a->cap) {
		a->cap = a->cap ? 2 * a->cap : 1024;
		p = kvmalloc_array(a->cap, sizeof(*p), GFP_KERNEL);
		if (!p)
			return -ENOMEM;
		if (a->n)
			memcpy(p, a->off, a->n * sizeof(*p));
		kvfree(a->off);
		a->off = p;
	}
	a->off[a->n++] = v;
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

/*
 * Heapsort (no recursion, no extra memory). Context: may sleep (the
 * checker sorts every page and blob offset of the index).
 */
void b3_offs_sort(struct b3_offs *a)
{
	u64 *v = a->off, i, x;

	for (i = a->n / 2; i-- > 0;) {
		sift(v, i, a->n);
		if (!(i & 0xffff))
			cond_resched();
	}
	for (i = a->n; i-- > 1;) {
		x = v[0];
		v[0] = v[i];
		v[i] = x;
		sift(v, 0, i);
		if (!(i & 0xffff))
			cond_resched();
	}
}

/* Is @v in sorted @a? */
static bool offs_has(const struct b3_offs *a, u64 v)
{
	u64 lo = 0, hi = a->n, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (a->off[mid] == v)
			return true;
		if (a->off[mid] < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/* The pages of the chain from @head into @c, sorted. */
static int chain_collect(struct b3 *t, struct b3_walk *w, u64 head,
			 struct b3_offs *c)
{
	u64 limit = t->pm->size / B3_PAGE_SIZE, off;

	c->n = 0;
	for (off = head; off; off = le64_to_cpu(READ_ONCE(b3_pg(t, off)->sibling))) {
		if (c->n >= limit)
			return bad(w, "page chain loops");
		if (!b3_page_ok(t, off))
			return bad(w, "page offset or header invalid");
		if (b3_offs_add(c, off)) {
			w->why = "out of memory";
			return -ENOMEM;
		}
		cond_resched();
	}
	b3_offs_sort(c);
	return 0;
}

/* The leftmost child of internal page @p, 0 for a corrupt BST. */
static u64 first_child(struct b3_page *p)
{
	u64 w = b3_ld(&p->root);
	unsigned int n = 0;

	while (b3_w_is_slot(w) && ++n <= B3_SLOTS)
		w = b3_ld(&p->i[w - 1].left);
	return b3_w_is_page(w) ? w : 0;
}

/* A node's key word and meta, checked. */
static int node_ok(struct b3 *t, struct b3_walk *w, __le64 kw, __le32 mw,
		   __le32 cw, bool leaf)
{
	u32 meta = le32_to_cpu(mw), klen = b3_meta_klen(meta), len;
	bool kblob = meta & B3_M_KBLOB;
	int ret;

	if (meta & B3_M_RESERVED || !klen || kblob != (klen > B3_INLINE_MAX) ||
	    (!leaf && (meta & B3_M_VBLOB || b3_meta_vlen(meta))) ||
	    (meta & B3_M_VBLOB && b3_meta_vlen(meta)) ||
	    b3_meta_vlen(meta) > B3_INLINE_MAX)
		return bad(w, "node meta word invalid");
	if (le32_to_cpu(cw) != b3_node_check(le64_to_cpu(kw), meta))
		return bad(w, "node check word mismatch");
	if (!kblob)
		return 0;
	if (w->blob) {
		ret = w->blob(t, w, le64_to_cpu(kw));
		if (ret)
			return ret;
	}
	if (w->validate && (pmidx_blob_read_len(t->pool, le64_to_cpu(kw), &len) ||
			    len != klen))
		return bad(w, "key blob length mismatch");
	w->blobs++;
	w->blob_bytes += pmidx_alloc_size(&t->pool->alloc, le64_to_cpu(kw));
	return 0;
}

/* keys in order and inside [low(p), low(sibling)) */
static int order_ok(struct b3 *t, struct b3_walk *w, const struct b3_key *prev,
		    const struct b3_key *k, const struct b3_key *hi)
{
	int c = b3_cmp(prev, k);

	if (!c)
		return bad(w, "duplicate key in a page");
	if (c > 0)
		return bad(w, "keys out of order in a page");
	if (hi && b3_cmp(k, hi) >= 0)
		return bad(w, "key at or above the sibling's low key");
	return 0;
}

static int walk_leaf(struct b3 *t, struct b3_walk *w, struct b3_page *p,
		     const struct b3_key *hi)
{
	struct b3_key prev = b3_low(p), k;
	struct b3_lnode *n;
	int cnt, i, ret;
	u32 meta;

	cnt = b3_leaf_inorder(t, p, t->scr->slots);
	if (cnt < 0)
		return bad(w, "leaf BST corrupt");
	for (i = 0; i < cnt; i++) {
		n = &p->l[t->scr->slots[i]];
		meta = le32_to_cpu(n->meta);
		ret = node_ok(t, w, n->key, n->meta, n->check, true);
		if (ret)
			return ret;
		if (meta & B3_M_VBLOB) {
			if (w->blob) {
				ret = w->blob(t, w, le64_to_cpu(n->val));
				if (ret)
					return ret;
			}
			w->blobs++;
			w->blob_bytes += pmidx_alloc_size(&t->pool->alloc,
							  le64_to_cpu(n->val));
		}
		if (w->validate) {
			k = b3_node_key(t, &n->key, meta);
			/* the first key may equal the low key */
			if (!i && !b3_cmp(&prev, &k))
				prev.len = 0;
			ret = order_ok(t, w, &prev, &k, hi);
			if (ret)
				return ret;
			prev = k;
		}
		w->keys++;
	}
	return 0;
}

/* Return: the first child (the head of the next level) or 0 and w->why */
static u64 walk_inner(struct b3 *t, struct b3_walk *w, struct b3_page *p,
		      const struct b3_key *hi, const struct b3_offs *below)
{
	struct b3_scratch *s = t->scr;
	struct b3_key prev = b3_low(p), k, lk;
	struct b3_inode *n;
	struct b3_page *c;
	int cnt, i;

	cnt = b3_inner_inorder(t, p, s->child, s->slots);
	if (cnt < 0) {
		bad(w, "internal BST corrupt");
		return 0;
	}
	for (i = 0; i <= cnt; i++) {
		if (!b3_page_ok(t, s->child[i]) ||
		    b3_pg(t, s->child[i])->level != p->level - 1) {
			bad(w, "child word names no page of the level below");
			return 0;
		}
		if (below && !offs_has(below, s->child[i])) {
			bad(w, "child word names a page outside its level's chain");
			return 0;
		}
	}
	/* the leftmost child starts at or below the page */
	lk = b3_low(b3_pg(t, s->child[0]));
	if (w->validate && b3_cmp(&lk, &prev) > 0) {
		bad(w, "first child page starts above its parent");
		return 0;
	}
	for (i = 0; i < cnt; i++) {
		n = &p->i[s->slots[i]];
		if (node_ok(t, w, n->key, n->meta, n->check, false))
			return 0;
		if (!w->validate)
			continue;
		k = b3_node_key(t, &n->key, le32_to_cpu(n->meta));
		if (order_ok(t, w, &prev, &k, hi))
			return 0;
		/* the child right of a separator starts at or below it */
		c = b3_pg(t, s->child[i + 1]);
		lk = b3_low(c);
		if (b3_cmp(&lk, &k) > 0) {
			bad(w, "child page starts above its separator");
			return 0;
		}
		prev = k;
	}
	return s->child[0];
}

static int walk_levels(struct b3 *t, struct b3_walk *w, struct b3_offs *below)
{
	u64 head = le64_to_cpu(READ_ONCE(t->root->top)), off, sib, next;
	u64 limit = t->pm->size / B3_PAGE_SIZE;
	struct b3_key lk, prev = {}, hk, *hi;
	struct b3_page *p;
	int level = -1, ret;
	bool first;

	while (head) {
		off = head;
		next = 0;
		first = true;
		/* with validation: the chain below, to check child words by */
		if (w->validate && b3_page_ok(t, head) && b3_pg(t, head)->level) {
			next = first_child(b3_pg(t, head));
			if (!next)
				return bad(w, "internal BST corrupt");
			ret = chain_collect(t, w, next, below);
			if (ret)
				return ret;
		}
		while (off) {
			cond_resched();
			if (++w->pages > limit)
				return bad(w, "page chain loops");
			if (!b3_page_ok(t, off))
				return bad(w, "page offset or header invalid");
			p = b3_pg(t, off);
			if (w->validate &&
			    (pmidx_alloc_size(&t->pool->alloc, off) != B3_PAGE_SIZE ||
			     le32_to_cpu(p->crc) != b3_page_crc(p)))
				return bad(w, "page is no allocator object or its crc mismatches");
			if (level < 0) {
				level = p->level;
				if (w->validate && READ_ONCE(p->sibling))
					return bad(w, "the root page has a sibling");
			}
			if (p->level != level)
				return bad(w, "page on the wrong level");
			lk = b3_low(p);
			if (first ? lk.len : b3_cmp(&prev, &lk) >= 0)
				return bad(w, "low keys of a level out of order");
			sib = le64_to_cpu(READ_ONCE(p->sibling));
			hi = NULL;
			if (sib) {
				if (!b3_page_ok(t, sib))
					return bad(w, "sibling names no page");
				hk = b3_low(b3_pg(t, sib));
				hi = &hk;
			}
			if (level) {
				u64 c = walk_inner(t, w, p, hi,
						   w->validate ? below : NULL);

				if (!c)
					return -EUCLEAN;
				if (first)
					next = c;
			} else {
				ret = walk_leaf(t, w, p, hi);
				if (ret)
					return ret;
			}
			prev = lk;
			if (w->page) {
				ret = w->page(t, w, off);
				if (ret)
					return ret;
			}
			first = false;
			off = sib;
		}
		if (!level)
			return 0;
		head = next;
		level--;
	}
	return 0;
}

/**
 * b3_walk - visit every reachable page and owned blob once
 *
 * @w->page is called for a page after everything in it was read, so it
 * may free it. Context: may sleep (validation allocates).
 * Return: 0, or -EUCLEAN (-ENOMEM) with @w->why.
 */
int b3_walk(struct b3 *t, struct b3_walk *w)
{
	struct b3_offs below = {};
	int ret = walk_levels(t, w, &below);

	kvfree(below.off);
	return ret;
}

static int mark_page(struct b3 *t, struct b3_walk *w, u64 off)
{
	if (pmidx_alloc_mark(&t->pool->alloc, off))
		return bad(w, "page referenced twice or no allocator object");
	return 0;
}

static int mark_blob(struct b3 *t, struct b3_walk *w, u64 off)
{
	if (pmidx_blob_mark(t->pool, off))
		return bad(w, "blob referenced twice or malformed");
	return 0;
}

/**
 * b3_recover - open: the root, and nothing else (§3.1, §3.4.1)
 *
 * Nothing is rebuilt and, in committed mode, nothing is traced: the
 * allocator found every page and blob from its own metadata (core/alloc.c),
 * so a crash attach is O(1) here too. Half-done SMOs stay as they are;
 * the first writer that meets one repairs it (smo.c). Only the counters
 * need the whole tree: after a clean detach they were saved in the root;
 * otherwise they stay unknown (@t->approx: STATS leaves them out) until
 * CHECK counts them. With @rc->mark (the core's checker,
 * pmidx_recovery_verify) every page and blob is marked, and counted.
 */
int b3_recover(struct b3 *t, const struct pmidx_recover *rc)
{
	struct b3_root *r = t->root;
	struct b3_walk w = { .validate = true };
	struct b3_pcpu *c;
	int ret;

	if (!r->magic) {
		if (r->top)
			return -EUCLEAN;
		memset(r, 0, sizeof(*r));
		r->magic = cpu_to_le64(B3_ROOT_MAGIC);
		pmidx_persist(t->pm, r, sizeof(*r));
		return 0;	/* a new index: the counters are 0 */
	} else if (le64_to_cpu(r->magic) != B3_ROOT_MAGIC) {
		pr_err("pmidx: index %s: not a b3 root\n", t->idx->name);
		return -EUCLEAN;
	}
	/* a drop resumed at attach: destroy() walks what is left */
	if (t->pool->alloc.resuming)
		return 0;
	/*
	 * An instant restart reads no page, so at least the top must be a
	 * committed page: a top naming a freed one would have its stale
	 * nodes' blobs and pages unlinked by the first writes.
	 */
	if (r->top && !pmidx_alloc_media_committed(&t->pool->alloc,
						   le64_to_cpu(r->top))) {
		pr_err("pmidx: index %s: b3 top names no committed page\n",
		       t->idx->name);
		return -EUCLEAN;
	}
	/*
	 * Nor may it be another index's top (a root copied over ours): both
	 * would write one tree. A clean attach claims it (core/alloc.c,
	 * "Claims"); the top is all this index owns that the attach looks at.
	 */
	if (r->top &&
	    pmidx_alloc_claim_committed(&t->pool->alloc, le64_to_cpu(r->top))) {
		pr_err("pmidx: index %s: b3 top named twice (another index's?)\n",
		       t->idx->name);
		return -EUCLEAN;
	}
	c = per_cpu_ptr(t->pcpu, 0);
	if (rc->clean && le64_to_cpu(r->saved) == 1) {
		c->keys = le64_to_cpu(r->keys);
		c->pages = le64_to_cpu(r->pages);
		c->blob_bytes = le64_to_cpu(r->blob_bytes);
		pmidx_store64_persist(t->pm, &r->saved, 0);
		return 0;
	}
	if (r->saved)
		pmidx_store64_persist(t->pm, &r->saved, 0);
	if (!rc->mark) {
		t->approx = true;
		return 0;
	}
	w.page = mark_page;
	w.blob = mark_blob;
	ret = b3_walk(t, &w);
	if (ret) {
		pr_err("pmidx: index %s: b3 recovery: %s\n", t->idx->name,
		       w.why ?: "corrupt");
		return ret;
	}
	c->keys = w.keys;
	c->pages = w.pages;
	c->blob_bytes = w.blob_bytes;
	return 0;
}
