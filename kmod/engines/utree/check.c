// SPDX-License-Identifier: GPL-2.0
/*
 * uTree structural checker (PMIDX_OP_CHECK).
 *
 * Runs online: writers are held at their entry gate while it runs (they
 * have nothing half done then), readers go on. It checks
 *   - the tree: shape, separators, leaf order and the leaf chain;
 *   - the list: every node inside a chunk of the index, allocated in its
 *     chunk's bitmap, with a valid check word, sane lengths and blobs,
 *     no Deleted bit or odd Version left over, keys strictly rising;
 *   - the two layers against each other: the n-th list node is the n-th
 *     tree entry, with the same key prefix and length;
 *   - the counts: keys counter, chunk list length, free-node accounting.
 */
#include <linux/bitmap.h>
#include <linux/errno.h>
#include <linux/sched.h>
#include "core/blob.h"
#include "utree.h"

/**
 * ut_freeze - hold new writers off and wait for running ones
 *
 * A writer announces its epoch section, then reads @frozen (full barrier
 * in between); we set @frozen, then wait for every section running now
 * to end. So no writer runs after this returns, and none starts before
 * ut_thaw(). A writer that had to leave its section with a change not
 * yet in the tree counts as a straggler and is waited for as well.
 *
 * Context: process context, may sleep; not inside a section.
 */
void ut_freeze(struct utree *t)
{
	mutex_lock(&t->gate);
	WRITE_ONCE(t->frozen, true);
	/* pairs with the one in pmidx_epoch_enter(), see above */
	smp_mb();
	pmidx_epoch_barrier(&t->pool->epoch);
	while (atomic_read(&t->stragglers))
		cond_resched();
}

void ut_thaw(struct utree *t)
{
	WRITE_ONCE(t->frozen, false);
	mutex_unlock(&t->gate);
}

/* Lower-layer checks of one list node. */
static const char *check_node(struct utree *t, u64 off, u32 *klen)
{
	struct pmidx_alloc *a = &t->pool->alloc;
	const struct pmidx_blob *b;
	struct ut_lnode *n;
	struct ut_chunk *c;
	u32 meta, slot, len;
	u64 w;
	bool used;

	c = ut_chunk_of(t, off, &slot);
	if (!c)
		return "list node outside the index's chunks";
	spin_lock(&t->alloc_lock);
	used = test_bit(slot, c->used);
	spin_unlock(&t->alloc_lock);
	if (!used)
		return "list node free in its chunk's bitmap";
	n = ut_node(t, off);
	meta = le32_to_cpu(n->meta);
	w = ut_ld(&n->next);
	if (le32_to_cpu(n->check) != ut_node_check(off, le64_to_cpu(n->key), meta))
		return "list node check word mismatch";
	if (ut_w_del(w) || ut_w_odd(w))
		return "list node left marked or mid-update";
	len = ut_meta_klen(meta);
	if (!len || (meta & UT_M_RESERVED) ||
	    (len > UT_INLINE_MAX) != !!(meta & UT_M_KBLOB) ||
	    (!(meta & UT_M_VBLOB) && ut_meta_vlen(meta) > UT_INLINE_MAX))
		return "list node lengths corrupt";
	if (meta & UT_M_KBLOB) {
		u64 k = le64_to_cpu(n->key);

		b = pmidx_ptr(t->pm, k);
		if (!ut_in_data(t, k, sizeof(*b)) || !pmidx_alloc_valid(a, k, sizeof(*b)) ||
		    le32_to_cpu(b->len) != len || le32_to_cpu(b->len_check) != ~len ||
		    !pmidx_alloc_valid(a, k, sizeof(*b) + len))
			return "list node key blob invalid";
	}
	if (meta & UT_M_VBLOB) {
		u64 v = le64_to_cpu(n->val);

		b = pmidx_ptr(t->pm, v);
		if (!ut_in_data(t, v, sizeof(*b)) || !pmidx_alloc_valid(a, v, sizeof(*b)) ||
		    le32_to_cpu(b->len_check) != ~le32_to_cpu(b->len) ||
		    le32_to_cpu(b->len) > PMIDX_VALUE_MAX ||
		    !pmidx_alloc_valid(a, v, sizeof(*b) + le32_to_cpu(b->len)))
			return "list node value blob invalid";
	}
	*klen = len;
	return NULL;
}

static const char *check_chunks(struct utree *t)
{
	u64 off = le64_to_cpu(t->root->chunks), n = 0, nfree = 0, weight = 0;
	struct ut_chunk *c;
	u32 id;

	while (off) {
		const struct ut_chunk_hdr *h = pmidx_ptr(t->pm, off);

		if (++n > t->live_chunks)
			return "chunk list longer than the chunks known";
		c = ut_chunk_get(t, le32_to_cpu(h->id));
		if (!c || c->off != off || le32_to_cpu(h->crc) != ut_chunk_hdr_crc(h))
			return "chunk list entry unknown or corrupt";
		if (!pmidx_alloc_valid(&t->pool->alloc, off, UT_CHUNK_SIZE))
			return "node chunk not allocated in the pool";
		off = le64_to_cpu(h->prev);
	}
	if (n != t->live_chunks)
		return "chunk list shorter than the chunks known";
	spin_lock(&t->alloc_lock);
	for (id = 0; id < t->nr_chunks; id++) {
		c = ut_chunk_get(t, id);
		if (!c)
			continue;
		nfree += c->nfree;
		weight += bitmap_weight(c->used, UT_CHUNK_NODES);
	}
	spin_unlock(&t->alloc_lock);
	if (nfree + weight != n * UT_CHUNK_NODES)
		return "free node count disagrees with the chunk bitmaps";
	return NULL;
}

/**
 * ut_check - run the structural checker
 * @keys: live keys found
 */
int ut_check(struct utree *t, u64 *keys, const char **why)
{
	u64 entries = 0, count = 0, node, max;
	struct ut_leaf *l;
	unsigned int i = 0;
	const u8 *key, *pkey = NULL;
	u32 klen, plen = 0;
	int ret;

	ut_freeze(t);
	ret = ut_tree_verify(t, &entries, why);
	if (ret)
		goto out;
	ret = -EUCLEAN;
	*why = check_chunks(t);
	if (*why)
		goto out;
	max = (u64)t->live_chunks * UT_CHUNK_NODES;
	l = ut_leaf_first(t);
	for (node = ut_w_ptr(ut_ld(&t->root->head)); node;
	     node = ut_w_ptr(ut_ld(&ut_node(t, node)->next))) {
		if (++count > max) {
			*why = "list longer than its chunks";
			goto out;
		}
		*why = check_node(t, node, &klen);
		if (*why)
			goto out;
		key = ut_node_key(t, ut_node(t, node), &klen);
		if (!key) {
			*why = "list node key unreadable";
			goto out;
		}
		if (pkey && pmidx_key_cmp(pkey, plen, key, klen) >= 0) {
			*why = "list keys out of order";
			goto out;
		}
		pkey = key;
		plen = klen;
		while (l && i == l->h.count) {
			l = l->next;
			i = 0;
		}
		if (!l) {
			*why = "list node missing from the tree";
			goto out;
		}
		if (ut_ent_node(l->ent[i]) != node ||
		    ut_ent_len(l->ent[i]) != klen ||
		    l->pfx[i] != ut_pfx(key, klen)) {
			*why = "tree entry and list node disagree";
			goto out;
		}
		i++;
		if (!(count & 4095))
			cond_resched();
	}
	if (count != entries) {
		*why = "tree holds entries the list lacks";
		goto out;
	}
	if (ut_sum_keys(t) != count) {
		*why = "key counter disagrees with the list";
		goto out;
	}
	*keys = count;
	ret = 0;
out:
	ut_thaw(t);
	return ret;
}
