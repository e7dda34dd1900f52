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
 *   - the counts: keys counter, chunk list length, free-node accounting;
 *   - ownership: no object (node chunk, tracker table, image, key or
 *     value blob) is referenced twice. A clean open reads no node, so a
 *     blob word naming another node's blob gets this far; an update of
 *     either node would then free a blob the other still uses.
 */
#include <linux/bitmap.h>
#include <linux/errno.h>
#include <linux/minmax.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include "core/alloc.h"
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
	while (atomic_read_acquire(&t->stragglers))	/* see backoff() */
		cond_resched();
}

void ut_thaw(struct utree *t)
{
	/* the walk's reads happen before any writer that sees this */
	smp_store_release(&t->frozen, false);
	mutex_unlock(&t->gate);
}

/*
 * The objects an index references, one entry each: the offset (at least
 * PMIDX_MIN_OBJ aligned, checked before it is added) with its kind in
 * the low bits.
 */
enum { REF_CHUNK, REF_TRACKERS, REF_IMAGE, REF_KBLOB, REF_VBLOB };

static const char *const ref_twice[] = {
	[REF_CHUNK]	= "node chunk referenced twice",
	[REF_TRACKERS]	= "tracker table also referenced as another object",
	[REF_IMAGE]	= "tree image also referenced as another object",
	[REF_KBLOB]	= "list node key blob shared with another reference",
	[REF_VBLOB]	= "list node value blob shared with another reference",
};

struct refs {
	u64	*v;
	size_t	n, cap;
};

static void ref_add(struct refs *r, u64 off, unsigned int kind)
{
	if (r->n < r->cap)
		r->v[r->n++] = off | kind;
}

static void ref_sift(u64 *v, size_t i, size_t n)
{
	u64 x = v[i];
	size_t c;

	for (; (c = 2 * i + 1) < n; i = c) {
		if (c + 1 < n && v[c + 1] > v[c])
			c++;
		if (v[c] <= x)
			break;
		v[i] = v[c];
	}
	v[i] = x;
}

/* Heapsort the references (no recursion, no extra memory); any dup? */
static const char *refs_check(struct refs *r)
{
	size_t i, n = r->n;

	for (i = n / 2; i--; )
		ref_sift(r->v, i, n);
	for (; n > 1; n--) {
		swap(r->v[0], r->v[n - 1]);
		ref_sift(r->v, 0, n - 1);
		if (!(n & 65535))
			cond_resched();
	}
	for (i = 1; i < r->n; i++)
		if ((r->v[i] ^ r->v[i - 1]) < PMIDX_MIN_OBJ)
			return ref_twice[r->v[i] & (PMIDX_MIN_OBJ - 1)];
	return NULL;
}

/* A node's blob word: the start of a live object holding the blob. */
static bool check_blob(struct utree *t, u64 off, u32 *len)
{
	return ut_blob(t, off, len) &&
	       pmidx_alloc_valid(&t->pool->alloc, off,
				 sizeof(struct pmidx_blob) + *len);
}

/* Lower-layer checks of one list node. */
static const char *check_node(struct utree *t, u64 off, u32 *klen,
			      struct refs *refs)
{
	struct ut_lnode *n;
	struct ut_chunk *c;
	u32 meta, slot, len, bl;
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
		if (!check_blob(t, le64_to_cpu(n->key), &bl) || bl != len)
			return "list node key blob invalid";
		ref_add(refs, le64_to_cpu(n->key), REF_KBLOB);
	}
	if (meta & UT_M_VBLOB) {
		if (!check_blob(t, le64_to_cpu(n->val), &bl))
			return "list node value blob invalid";
		ref_add(refs, le64_to_cpu(n->val), REF_VBLOB);
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
	u64 entries = 0, count = 0, node, max, off;
	struct refs refs = {};
	struct ut_chunk *c;
	struct ut_leaf *l;
	unsigned int i = 0;
	const u8 *key, *pkey = NULL;
	u32 klen, plen = 0, id;
	int ret;

	ut_freeze(t);
	ret = ut_tree_verify(t, &entries, why);
	if (ret)
		goto out;
	ret = -EUCLEAN;
	*why = check_chunks(t);
	if (*why)
		goto out;
	/*
	 * Two blobs per node, the chunks, trackers and image; the list may
	 * show one node more than the tree before the walk stops.
	 */
	refs.cap = 2 * (entries + 1) + t->nr_chunks + 2;
	refs.v = kvmalloc_array(refs.cap, sizeof(*refs.v), GFP_KERNEL);
	if (!refs.v) {
		*why = "out of memory";
		ret = -ENOMEM;
		goto out;
	}
	for (id = 0; id < t->nr_chunks; id++) {
		c = ut_chunk_get(t, id);
		if (c)
			ref_add(&refs, c->off, REF_CHUNK);
	}
	if (t->trackers)
		ref_add(&refs, le64_to_cpu(t->root->trackers), REF_TRACKERS);
	off = le64_to_cpu(t->root->image);
	if (off) {
		if (off & (PMIDX_MIN_OBJ - 1) ||
		    !pmidx_alloc_valid(&t->pool->alloc, off, sizeof(struct ut_image_hdr))) {
			*why = "tree image pointer is not an object";
			goto out;
		}
		ref_add(&refs, off, REF_IMAGE);
	}
	max = (u64)t->live_chunks * UT_CHUNK_NODES;
	l = ut_leaf_first(t);
	for (node = ut_w_ptr(ut_ld(&t->root->head)); node;
	     node = ut_w_ptr(ut_ld(&ut_node(t, node)->next))) {
		if (++count > max) {
			*why = "list longer than its chunks";
			goto out;
		}
		*why = check_node(t, node, &klen, &refs);
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
	*why = refs_check(&refs);
	if (*why)
		goto out;
	*keys = count;
	ret = 0;
out:
	ut_thaw(t);
	kvfree(refs.v);
	return ret;
}
