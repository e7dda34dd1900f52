// SPDX-License-Identifier: GPL-2.0
/*
 * uTree list layer: the sorted singly linked list of list nodes on pmem.
 *
 * A node is made durable before it is linked (ut_node_init), and linked
 * by one CAS on its predecessor's next word which the caller then
 * persists: two flushes per insert. Removal marks the victim's next word
 * (Deleted bit) before swinging the predecessor, so nothing can be linked
 * behind a node that is about to disappear (the Put-Delete conflict of
 * §3.2.1). The Version field of the next word is the per-node seqlock of
 * §3.2.2: odd while an in-place value update runs.
 *
 * Context: callers are inside a pool epoch section, so every node they
 * reach stays allocated until they leave it.
 */
#include <linux/kernel.h>
#include <linux/processor.h>
#include <linux/string.h>
#include "core/alloc.h"
#include "core/blob.h"
#include "utree.h"

u64 ut_pfx(const u8 *key, u32 len)
{
	__be64 b = 0;

	memcpy(&b, key, min_t(u32, len, UT_INLINE_MAX));
	return be64_to_cpu(b);
}

void ut_skey_init(struct ut_skey *k, const u8 *key, u32 len)
{
	k->key = key;
	k->len = len;
	k->pfx = len ? ut_pfx(key, len) : 0;
}

/*
 * The bytes of the blob at @off, or NULL when @off cannot be a blob of
 * this pool. A clean open reads no node, so the word comes unchecked
 * from media: it must start an allocator object that holds the blob.
 */
const u8 *ut_blob(const struct utree *t, u64 off, u32 *len)
{
	const struct pmidx_blob *b;
	u32 l;

	if (!ut_in_data(t, off, sizeof(*b)) || off & (PMIDX_MIN_OBJ - 1))
		return NULL;
	b = pmidx_ptr(t->pm, off);
	l = le32_to_cpu(READ_ONCE(b->len));
	if (le32_to_cpu(READ_ONCE(b->len_check)) != ~l ||
	    l > PMIDX_VALUE_MAX ||
	    pmidx_alloc_size(&t->pool->alloc, off) < sizeof(*b) + l)
		return NULL;
	*len = l;
	return b->data;
}

/**
 * ut_blob_read - copy the blob at @off into @dst, machine-check safe
 * @cap: room at @dst; min(@cap, length) bytes are copied
 * @len: the blob's length
 *
 * ut_blob()'s checks, with the header and the bytes read through
 * pmidx_blob_read_len()/pmidx_blob_read_data(): the data path's one copy,
 * and a media error under it answers -EIO instead of a machine check.
 *
 * Return: 0, -EIO on a media error, -EUCLEAN when @off is not a blob.
 */
int ut_blob_read(const struct utree *t, u64 off, void *dst, u32 cap, u32 *len)
{
	int ret;

	if (!ut_in_data(t, off, sizeof(struct pmidx_blob)) ||
	    off & (PMIDX_MIN_OBJ - 1))
		return -EUCLEAN;
	ret = pmidx_blob_read_len(t->pool, off, len);
	if (ret)
		return ret;
	if (pmidx_alloc_size(&t->pool->alloc, off) <
	    sizeof(struct pmidx_blob) + *len)
		return -EUCLEAN;
	return pmidx_blob_read_data(t->pool, off, dst, min(cap, *len));
}

/* The key bytes of node @n (inline in the node or in its blob). */
const u8 *ut_node_key(const struct utree *t, const struct ut_lnode *n,
		      u32 *len)
{
	u32 meta = le32_to_cpu(READ_ONCE(n->meta)), bl;
	const u8 *p;

	*len = ut_meta_klen(meta);
	if (!(meta & UT_M_KBLOB))
		return (const u8 *)&n->key;
	p = ut_blob(t, le64_to_cpu(READ_ONCE(n->key)), &bl);
	return p && bl == *len ? p : NULL;
}

/* Compare the key of the node at @off with @k (memcmp order). */
int ut_node_cmp(const struct utree *t, u64 off, const struct ut_skey *k)
{
	const struct ut_lnode *n = ut_node(t, off);
	const u8 *key;
	u32 len;

	key = ut_node_key(t, n, &len);
	if (unlikely(!key))
		return 1;
	return pmidx_key_cmp(key, len, k->key, k->len);
}

/**
 * ut_node_init - fill the unpublished node at @off and make it durable
 * @key, @val: the words as stored (inline bytes or a blob offset)
 *
 * The node is not reachable by anyone (fresh, or reused after its
 * epoch grace period), so plain stores suffice; one flush covers it.
 */
void ut_node_init(struct utree *t, u64 off, __le64 key, __le64 val,
		  u32 meta, u64 next)
{
	struct ut_lnode *n = ut_node(t, off);

	WRITE_ONCE(n->key, key);
	WRITE_ONCE(n->val, val);
	WRITE_ONCE(n->meta, cpu_to_le32(meta));
	WRITE_ONCE(n->check, cpu_to_le32(ut_node_check(off, le64_to_cpu(key), meta)));
	WRITE_ONCE(n->next, cpu_to_le64(next));
	pmidx_persist(t->pm, n, sizeof(*n));
}

/**
 * ut_link - swing the next word @w from @expect to @ptr
 *
 * Succeeds only while the word still points where @expect did and is not
 * marked; a concurrent in-place update of the predecessor's value only
 * moves its Version, which is carried over. The caller persists @w.
 */
bool ut_link(__le64 *w, u64 expect, u64 ptr)
{
	u64 cur;

	for (;;) {
		cur = le64_to_cpu(cmpxchg(w, cpu_to_le64(expect),
					  cpu_to_le64(ut_w_repoint(expect, ptr))));
		if (cur == expect)
			return true;
		if (ut_w_del(cur) || ut_w_ptr(cur) != ut_w_ptr(expect))
			return false;
		expect = cur;
	}
}

/*
 * Clear the Deleted bit of a node whose removal lost its race, and write
 * it back: the mark was not (utree.c, Delete), but an eviction may have
 * taken it to the media, where a clean open would take it for corruption.
 */
void ut_unmark(struct utree *t, struct ut_lnode *n)
{
	u64 w;

	do {
		w = ut_ld(&n->next);
	} while (!ut_cas(&n->next, w, w & ~UT_NEXT_DEL));
	pmidx_flush(t->pm, &n->next, sizeof(n->next));
}

/*
 * End an in-place update: Version back to even. Only its own Version
 * bits may change under us (no one marks or unlinks a node with an odd
 * Version, but a successor may be linked behind it).
 *
 * The update was durable before (value persisted under the odd Version),
 * so the even one is not written back: Release is an atomic add, no
 * persist (paper, Algorithm 1). A line the caches never write back
 * leaves the odd Version on the media, next to the durable value; every
 * open clears it before any writer can stall on it: the list walk
 * (claim_node()) and the clean open's pass over the nodes
 * (image_nodes_fn()). The write-back cost a fifth of an update.
 */
void ut_ver_release(struct utree *t, struct ut_lnode *n)
{
	u64 w;

	do {
		w = ut_ld(&n->next);
	} while (!ut_cas(&n->next, w, ut_w_bump(w)));
	pmidx_lose_ok(t->pm, &n->next, sizeof(n->next));
}

/**
 * ut_read_val - read the value word of @n under its embedded version
 * @live: fail with -EAGAIN when the node is marked Deleted (a removal or
 *        replacement is in flight; the caller retries from the tree)
 * @w:    the next word that made it fail with -EAGAIN
 *
 * A Version that stays odd for UT_BACKOFF_TRIES reads also gives -EAGAIN:
 * its writer may be preempted (userspace) or gone (a corrupt image), and
 * only the caller's backoff() can tell which.
 *
 * A blob is not followed here: ut_val_copy() copies it out (inside the
 * same epoch section, so the blob is not freed under the copy).
 *
 * Return: 0 with @v filled, or -EAGAIN.
 */
int ut_read_val(const struct utree *t, struct ut_lnode *n, struct ut_val *v,
		bool live, u64 *w)
{
	unsigned int spins = 0;
	u64 w1, w2;
	__le64 vw;
	u32 meta;

	for (;;) {
		w1 = ut_ld(&n->next);
		if (ut_w_odd(w1)) {
			if (++spins >= UT_BACKOFF_TRIES)
				goto busy;
			cpu_relax();
			continue;
		}
		if (live && ut_w_del(w1))
			goto busy;
		/* seqlock read side: the value between two version reads */
		smp_rmb();
		vw = smp_load_acquire(&n->val);	/* then the blob it names */
		meta = le32_to_cpu(READ_ONCE(n->meta));
		/* the value reads complete before the version is re-read */
		smp_rmb();
		w2 = ut_ld(&n->next);
		if ((w1 ^ w2) & UT_VER_MASK)
			continue;
		if (live && ut_w_del(w2)) {
			w1 = w2;
			goto busy;
		}
		break;
	}
	if (meta & UT_M_VBLOB) {
		v->blob = le64_to_cpu(vw);
		v->len = 0;
		return 0;
	}
	v->blob = 0;
	memcpy(v->buf, &vw, sizeof(vw));
	v->len = min_t(u32, ut_meta_vlen(meta), UT_INLINE_MAX);
	return 0;
busy:
	*w = w1;
	return -EAGAIN;
}

/**
 * ut_val_copy - the value ut_read_val() found, into @dst
 * @cap: room at @dst; min(@cap, length) bytes are copied
 * @len: the value's length
 *
 * Return: 0, -EIO on a media error, -EUCLEAN for a bad blob word.
 */
int ut_val_copy(const struct utree *t, const struct ut_val *v, void *dst,
		u32 cap, u32 *len)
{
	if (v->blob)
		return ut_blob_read(t, v->blob, dst, cap, len);
	memcpy(dst, v->buf, min(cap, v->len));
	*len = v->len;
	return 0;
}
