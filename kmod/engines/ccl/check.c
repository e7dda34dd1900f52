// SPDX-License-Identifier: GPL-2.0
/*
 * Structural checker and key counting.
 *
 * The checker visits every buffer node in key order under its lock (so it
 * can run online; writers wait for one node at a time) and checks:
 *  - inner nodes: entry counts, sorted separators, levels, fences shared
 *    with the buffer nodes (inner.c);
 *  - the leaf: an allocated 256-byte object, no reserved bits, its next
 *    pointer names the next buffer node's leaf (the PM list and the DRAM
 *    chain are the same list), the head is the first;
 *  - every live slot: the key's blob (when out of line) is a valid blob,
 *    the encoding is canonical, the fingerprint matches, the value's
 *    blob is valid, the key lies within the node's fences, no key twice;
 *  - the buffer: pos within N_batch, unflushed keys distinct, in range,
 *    with matching fingerprints; cached slots disjoint from unflushed
 *    ones and equal to the leaf's slot for their key; overflow only with
 *    nothing unflushed;
 *  - fences strictly increasing along the chain.
 * It returns the number of live keys (leaf keys, plus buffered puts of
 * keys not in the leaf, minus buffered deletes of keys in it).
 */
#include <linux/bitops.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/string.h>
#include "core/blob.h"
#include "ccl.h"

struct chk {
	u64			keys;
	u64			nodes;
	const char		*why;
	const struct ccl_fence	*prev_low;
	bool			first;
	u64			*refs;		/* blobs referenced (see ref_add) */
	size_t			nrefs, cap;
	bool			over;		/* more than blob_bytes allows */
};

/*
 * Every blob the index references, to find one referenced twice: a leaf
 * slot, an unflushed buffer slot or a recovered overflow entry each own
 * theirs (kv.c), and the log holds retired ones apart from all of them.
 * A blob owned twice would be freed while its other owner still uses it.
 * Collected inside epoch sections, so into an array sized beforehand.
 */
static void ref_add(struct chk *c, u64 w, bool ind)
{
	if (!ind || !c->refs)
		return;
	/* each blob is counted once in blob_bytes (>= 256 bytes each) */
	if (c->nrefs == c->cap) {
		c->over = true;
		return;
	}
	c->refs[c->nrefs++] = ccl_w2off(w);
}

static int u64_cmp(const void *a, const void *b, void *ctx)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? -1 : x > y;
}

/* Add what the log holds, then look for a blob referenced twice. */
static int refs_check(struct ccl_tree *t, struct chk *c)
{
	struct pmidx_wal_held *hb;
	size_t i;
	u32 j;

	spin_lock(&t->wal->held_lock);
	list_for_each_entry(hb, &t->wal->held, node)
		for (j = 0; j < hb->n && c->refs; j++)
			ref_add(c, ccl_off2w(hb->off[j]), true);
	spin_unlock(&t->wal->held_lock);
	if (c->over) {
		c->why = "more blob references than the index has blob bytes";
		return -EUCLEAN;
	}
	if (!c->refs)
		return 0;
	ccl_sort(c->refs, c->nrefs, sizeof(*c->refs), u64_cmp, NULL);
	for (i = 1; i < c->nrefs; i++) {
		if (c->refs[i] == c->refs[i - 1]) {
			c->why = "a blob is referenced twice";
			return -EUCLEAN;
		}
	}
	return 0;
}

static bool blob_ok(struct ccl_tree *t, u64 w, bool key)
{
	struct pmidx_alloc *a = &t->pool->alloc;
	u64 off = ccl_w2off(w);
	const struct pmidx_blob *b;
	size_t size;
	u32 len;

	size = pmidx_alloc_size(a, off);
	if (!size || !pmidx_alloc_valid(a, off, size))
		return false;
	b = ccl_ptr(t, off);
	len = le32_to_cpu(b->len);
	if (le32_to_cpu(b->len_check) != ~len || 8 + len > size || len == 8)
		return false;
	return key ? len >= 1 && len <= PMIDX_KEY_MAX : len <= PMIDX_VALUE_MAX;
}

/* A KV's words are well formed and its key lies in [low, high). */
static const char *kv_bad(struct ccl_tree *t, struct ccl_bnode *b, u64 kw,
			  u64 vw, u8 flags, u8 fp)
{
	const u8 *k;
	u32 klen;

	if ((flags & CCL_F_KIND) && !blob_ok(t, kw, true))
		return "key blob invalid";
	if ((flags & CCL_F_VIND) && !blob_ok(t, vw, false))
		return "value blob invalid";
	if ((flags & CCL_F_TOMB) && (flags & CCL_F_VIND))
		return "tombstone with a value";
	k = ccl_word_bytes(t, &kw, flags & CCL_F_KIND, &klen);
	if (fp != ccl_fp(k, klen))
		return "fingerprint does not match the key";
	if (ccl_fence_cmp(b->low, k, klen) > 0)
		return "key below its node's low fence";
	if (b->next && ccl_fence_cmp(b->next->low, k, klen) <= 0)
		return "key at or above its node's high fence";
	return NULL;
}

static int check_visit(struct ccl_tree *t, struct ccl_bnode *b, u64 *h,
		       void *arg)
{
	struct chk *c = arg;
	struct pmidx_alloc *a = &t->pool->alloc;
	u64 leaf = bn_leaf(*h), meta, next, ts;
	unsigned int i, j, pos = bn_pos(*h);
	struct ccl_leaf *l = ccl_ptr(t, leaf);
	unsigned long bits;
	u32 bitmap, klen;
	const u8 *k;
	u16 vind;
	int s;

	c->nodes++;
	if (pmidx_alloc_size(a, leaf) != sizeof(*l) ||
	    !pmidx_alloc_valid(a, leaf, sizeof(*l))) {
		c->why = "leaf is not an allocated 256-byte object";
		return -EUCLEAN;
	}
	if (c->first && (b != t->bhead || leaf != t->head)) {
		c->why = "first buffer node is not the head";
		return -EUCLEAN;
	}
	if (!c->first && (!b->low->len ||
			  pmidx_key_cmp(c->prev_low->key, c->prev_low->len,
					b->low->key, b->low->len) >= 0)) {
		c->why = "buffer node fences not increasing";
		return -EUCLEAN;
	}
	c->first = false;
	c->prev_low = b->low;
	meta = le64_to_cpu(l->meta);
	next = b->next ? bn_leaf(atomic64_read(&b->next->hdr)) : 0;
	ts = le64_to_cpu(l->ts);
	if ((ts & CCL_TS_RSVD) || ccl_ts_seq(ts) != ccl_meta_seq(meta)) {
		c->why = "leaf timestamp word does not match its meta word";
		return -EUCLEAN;
	}
	if (ccl_meta_next(meta) != next) {
		c->why = "leaf list and buffer node chain differ";
		return -EUCLEAN;
	}
	bitmap = ccl_meta_bitmap(meta);
	vind = le16_to_cpu(l->vind);
	bits = bitmap;
	for_each_set_bit(i, &bits, CCL_LEAF_SLOTS) {
		u8 flags = (l->fp[i] & CCL_FP_IND ? CCL_F_KIND : 0) |
			   (vind & BIT(i) ? CCL_F_VIND : 0);
		u64 kw = (__force u64)l->slot[i].key;

		c->why = kv_bad(t, b, kw, (__force u64)l->slot[i].val, flags,
				l->fp[i]);
		if (c->why)
			return -EUCLEAN;
		ref_add(c, kw, flags & CCL_F_KIND);
		ref_add(c, (__force u64)l->slot[i].val, flags & CCL_F_VIND);
		k = ccl_word_bytes(t, &kw, flags & CCL_F_KIND, &klen);
		if (ccl_leaf_find(t, l, bitmap, k, klen, l->fp[i]) != i) {
			c->why = "leaf holds a key twice";
			return -EUCLEAN;
		}
	}
	c->keys += hweight32(bitmap);

	if (pos > t->nbatch || (b->ovf && pos)) {
		c->why = "buffer position counter out of range";
		return -EUCLEAN;
	}
	if (b->cache & (BIT(pos) - 1)) {
		c->why = "a slot is both unflushed and cached";
		return -EUCLEAN;
	}
	for (i = 0; i < t->nbatch; i++) {
		bool unfl = i < pos;

		if (!unfl && !(b->cache & BIT(i)))
			continue;
		c->why = kv_bad(t, b, b->slot[i].key, b->slot[i].val,
				b->sflag[i], b->sfp[i]);
		if (c->why)
			return -EUCLEAN;
		k = ccl_word_bytes(t, &b->slot[i].key,
				   b->sflag[i] & CCL_F_KIND, &klen);
		s = ccl_leaf_find(t, l, bitmap, k, klen, b->sfp[i]);
		if (!unfl) {
			if (s < 0 || (__force u64)l->slot[s].val != b->slot[i].val ||
			    (b->sflag[i] & CCL_F_TOMB)) {
				c->why = "cached slot differs from the leaf";
				return -EUCLEAN;
			}
			continue;
		}
		ref_add(c, b->slot[i].key, b->sflag[i] & CCL_F_KIND);
		ref_add(c, b->slot[i].val, b->sflag[i] & CCL_F_VIND);
		for (j = 0; j < i; j++) {
			if (ccl_key_eq(t, b->slot[j].key,
				       b->sflag[j] & CCL_F_KIND, k, klen)) {
				c->why = "a key is buffered twice";
				return -EUCLEAN;
			}
		}
		if ((b->sflag[i] & CCL_F_TOMB) && s >= 0)
			c->keys--;
		else if (!(b->sflag[i] & CCL_F_TOMB) && s < 0)
			c->keys++;
	}
	for (i = 0; b->ovf && i < b->ovf->n; i++) {
		struct ccl_ent *e = &b->ovf->e[i];

		c->why = kv_bad(t, b, e->key, e->val, e->flags, e->fp);
		if (c->why)
			return -EUCLEAN;
		ref_add(c, e->key, e->flags & CCL_F_KIND);
		ref_add(c, e->val, e->flags & CCL_F_VIND);
		k = ccl_word_bytes(t, &e->key, e->flags & CCL_F_KIND, &klen);
		s = ccl_leaf_find(t, l, bitmap, k, klen, e->fp);
		if ((e->flags & CCL_F_TOMB) && s >= 0)
			c->keys--;
		else if (!(e->flags & CCL_F_TOMB) && s < 0)
			c->keys++;
	}
	c->why = NULL;
	return 0;
}

/**
 * ccl_check - the structural checker
 *
 * Context: process context; may run while the index is in use.
 * Return: 0 with *keys set, or -EUCLEAN with *why set.
 */
int ccl_check(struct ccl_tree *t, u64 *keys, const char **why)
{
	struct chk c = { .first = true };
	int ret;

	/* a blob is at least PMIDX_MIN_OBJ bytes of blob_bytes; no memory: skip */
	c.cap = atomic64_read(&t->blob_bytes) / PMIDX_MIN_OBJ + 1;
	c.refs = kvmalloc_array(c.cap, sizeof(*c.refs), GFP_KERNEL);
	mutex_lock(&t->gc_lock);
	ret = ccl_inner_check(t, why);
	if (!ret) {
		ret = ccl_walk(t, check_visit, &c, NULL);
		if (!ret)
			ret = refs_check(t, &c);
		if (ret)
			*why = c.why ? c.why : "walk failed";
	}
	mutex_unlock(&t->gc_lock);
	kvfree(c.refs);
	*keys = c.keys;
	return ret;
}

static int count_visit(struct ccl_tree *t, struct ccl_bnode *b, u64 *h,
		       void *arg)
{
	struct ccl_leaf *l = ccl_bn_leaf(t, *h);
	u32 bitmap = ccl_meta_bitmap(le64_to_cpu(l->meta)), klen;
	unsigned int i, pos = bn_pos(*h);
	u64 *keys = arg;
	const u8 *k;
	bool in;

	*keys += hweight32(bitmap);
	for (i = 0; i < pos; i++) {
		k = ccl_word_bytes(t, &b->slot[i].key, b->sflag[i] & CCL_F_KIND,
				   &klen);
		in = ccl_leaf_find(t, l, bitmap, k, klen, b->sfp[i]) >= 0;
		if (b->sflag[i] & CCL_F_TOMB)
			*keys -= in;
		else
			*keys += !in;
	}
	for (i = 0; b->ovf && i < b->ovf->n; i++) {
		struct ccl_ent *e = &b->ovf->e[i];

		k = ccl_word_bytes(t, &e->key, e->flags & CCL_F_KIND, &klen);
		in = ccl_leaf_find(t, l, bitmap, k, klen, e->fp) >= 0;
		if (e->flags & CCL_F_TOMB)
			*keys -= in;
		else
			*keys += !in;
	}
	return 0;
}

/* The number of live keys (walks the index). */
u64 ccl_count_keys(struct ccl_tree *t)
{
	u64 keys = 0;

	ccl_walk(t, count_visit, &keys, NULL);
	return keys;
}
