// SPDX-License-Identifier: GPL-2.0
/*
 * Structural checker.
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
 *  - fences strictly increasing along the chain: each node's below its
 *    right neighbour's, and each node found where the last one ended;
 *  - no blob referenced twice (leaf slots, buffer, overflow, the log);
 *  - the live key counter (struct ccl_pcpu) against the keys found.
 * It returns the number of live keys (leaf keys, plus buffered puts of
 * keys not in the leaf, minus buffered deletes of keys in it).
 *
 * Writes go on while it runs, so the walk sees each node at its own
 * moment. What lies within one node, or between a locked node and its
 * right neighbour (the link, the neighbour's fence and leaf cannot change
 * then), is checked at that moment; a failure there is damage. The blob
 * references are too: the blobs the log holds are collected before the
 * walk, and while the GC is held off (t->gc_lock; it is the one that
 * frees retired blobs) a blob moves only within its node, to a node
 * behind the walk (a split or merge behind it) or into the log after its
 * node was seen or before (then it is in neither), so none is collected
 * twice unless the index references it twice, provided a node the walk
 * reaches again is not collected again (check_visit: "moved").
 *
 * The key count, the counter and the bound on references need one view
 * of the whole index. Every change to what a buffer node or its leaf
 * holds (but a cache bit dropped) is made under the node's lock after a
 * timestamp was taken under that same lock (ccl_next_ts(), which counts
 * it in the per-CPU @stamps), and the key counter moves after that
 * timestamp too, before the node is unlocked (buffer.c). So if the sum of
 * @stamps did not move between the start of a pass and its end (the key
 * counter read before it), no change began during the pass;
 * those that began before finish on nodes they hold locked, which the
 * walk waits for: the pass saw one state of the index. A pass that saw
 * writes is done again, up to CCL_CHECK_TRIES passes; then the answer is
 * -EAGAIN: nothing wrong was seen, but writes went on too fast to check
 * the whole index, try again.
 */
#include <linux/bitops.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/string.h>
#include "core/blob.h"
#include "ccl.h"

/* a pass of the walk over the whole index (see the top) */
#define CCL_CHECK_TRIES		4

struct chk {
	u64			keys;
	u64			nodes;
	const char		*why;
	bool			first;
	bool			moved;		/* a node reached again: no one view */
	bool			skip;		/* do not collect this node's blobs */
	u8			hi[PMIDX_KEY_MAX];	/* the last node's high fence */
	u32			hilen;
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
	if (!ind || !c->refs || c->skip)
		return;
	/* each blob is counted once in blob_bytes (>= 256 bytes each) */
	if (c->nrefs == c->cap) {
		c->over = true;
		return;
	}
	c->refs[c->nrefs++] = ccl_w2off(w);
}

static int u64_cmp(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? -1 : x > y;
}

/* What the log holds: collected before the walk (see the top). */
static void refs_held(struct ccl_tree *t, struct chk *c)
{
	struct pmidx_wal_held *hb;
	u32 j;

	spin_lock(&t->wal->held_lock);
	list_for_each_entry(hb, &t->wal->held, node)
		for (j = 0; j < hb->n && c->refs; j++)
			ref_add(c, ccl_off2w(hb->off[j]), true);
	spin_unlock(&t->wal->held_lock);
}

/* Look for a blob referenced twice. */
static int refs_check(struct ccl_tree *t, struct chk *c)
{
	size_t i;

	if (!c->refs)
		return 0;
	sort(c->refs, c->nrefs, sizeof(*c->refs), u64_cmp, NULL);
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
	/*
	 * ccl_walk() looked this node up by the last one's high fence: its
	 * range holds that key. Lower, a split or merge behind the walk
	 * moved the boundary since (the node may be one already seen).
	 */
	c->skip = false;
	if (!c->first) {
		s = pmidx_key_cmp(b->low->key, b->low->len, c->hi, c->hilen);
		if (s > 0) {
			c->why = "buffer node chain skips keys";
			return -EUCLEAN;
		}
		c->skip = s < 0;
		c->moved |= c->skip;
	}
	c->first = false;
	if (b->next) {
		const struct ccl_fence *hi = b->next->low;

		if (!hi->len || pmidx_key_cmp(b->low->key, b->low->len,
					      hi->key, hi->len) >= 0) {
			c->why = "buffer node fences not increasing";
			return -EUCLEAN;
		}
		memcpy(c->hi, hi->key, hi->len);
		c->hilen = hi->len;
	}
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
	/* a permutation the leaf still matches lists its slots in key order */
	if (b->ptag == ccl_perm_tag(meta)) {
		u32 seen = 0;

		for (i = 0, j = 0; i < hweight32(bitmap); i++) {
			s = ccl_perm_at(b->perm, i);
			seen |= BIT(s);
			if (i && ccl_word_cmp(t, (__force u64)l->slot[j].key,
					      l->fp[j] & CCL_FP_IND,
					      (__force u64)l->slot[s].key,
					      l->fp[s] & CCL_FP_IND) >= 0)
				break;
			j = s;
		}
		if (i < hweight32(bitmap) || seen != bitmap) {
			c->why = "sorted permutation does not match its leaf";
			return -EUCLEAN;
		}
	}

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

/* The live key counter (STATS): exact when the index is quiet. */
s64 ccl_sum_keys(struct ccl_tree *t)
{
	s64 keys = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		keys += READ_ONCE(per_cpu_ptr(t->st, cpu)->keys);
	return keys;
}

/*
 * Timestamps handed out so far. Each CPU's count only grows, so two sums
 * are equal only if no CPU handed one out between its two reads.
 */
static u64 sum_stamps(struct ccl_tree *t)
{
	u64 n = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		n += READ_ONCE(per_cpu_ptr(t->st, cpu)->stamps);
	return n;
}

/*
 * One pass: 0 with one view of the index (c->keys the count), 1 when
 * writes went on during it, -EUCLEAN with c->why set.
 */
static int check_pass(struct ccl_tree *t, struct chk *c, const char **why)
{
	size_t cap;
	s64 live;
	u64 ts;
	int ret;

	ts = sum_stamps(t);
	/* the pass's reads come after the count (see the top) */
	smp_mb();
	/* a blob is at least PMIDX_MIN_OBJ bytes of blob_bytes; no memory: skip */
	cap = atomic64_read(&t->blob_bytes) / PMIDX_MIN_OBJ + 1;
	if (cap > c->cap || !c->refs) {
		kvfree(c->refs);
		c->refs = kvmalloc_array(cap, sizeof(*c->refs), GFP_KERNEL);
		c->cap = c->refs ? cap : 0;
	}
	c->keys = 0;
	c->nodes = 0;
	c->why = NULL;
	c->first = true;
	c->moved = false;
	c->skip = false;
	c->nrefs = 0;
	c->over = false;

	mutex_lock(&t->gc_lock);
	refs_held(t, c);
	ret = ccl_inner_check(t, why);
	if (!ret) {
		ret = ccl_walk(t, check_visit, c, NULL);
		if (!ret)
			ret = refs_check(t, c);
		if (ret)
			*why = c->why ? c->why : "walk failed";
	}
	live = ccl_sum_keys(t);
	/* the key counter is read before the stamps (see ccl_buf_write()) */
	smp_mb();
	if (!ret && (c->moved || sum_stamps(t) != ts))
		ret = 1;
	mutex_unlock(&t->gc_lock);
	if (ret)
		return ret;
	if (c->over) {
		*why = "more blob references than the index has blob bytes";
		return -EUCLEAN;
	}
	if (live != (s64)c->keys) {
		*why = "key counter disagrees with the keys found";
		return -EUCLEAN;
	}
	return 0;
}

/**
 * ccl_check - the structural checker
 *
 * Context: process context; may run while the index is in use.
 * Return: 0 with *keys set; -EUCLEAN with *why set; -EAGAIN when writes
 * went on during every pass (nothing wrong seen, *why not set; see the
 * top of this file).
 */
int ccl_check(struct ccl_tree *t, u64 *keys, const char **why)
{
	struct chk *c;
	int i, ret = 1;

	*keys = 0;
	c = kzalloc(sizeof(*c), GFP_KERNEL);
	if (!c)
		return -ENOMEM;
	for (i = 0; i < CCL_CHECK_TRIES && ret == 1; i++) {
		if (i)
			cond_resched();
		ret = check_pass(t, c, why);
	}
	if (!ret)
		*keys = c->keys;
	kvfree(c->refs);
	kfree(c);
	return ret == 1 ? -EAGAIN : ret;
}
