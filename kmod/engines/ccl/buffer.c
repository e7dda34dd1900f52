// SPDX-License-Identifier: GPL-2.0
/*
 * DRAM buffer nodes (paper section 3.2) and the write path into them.
 *
 * A buffer node sits between the last inner level and its PM leaf. Slots
 * 0..pos-1 hold KVs written since the leaf was last flushed, each already
 * in the log (write-ahead); the newest version of a key is always in the
 * buffer if it is there at all (a key appears at most once among them).
 * When a write finds the buffer full it becomes the trigger: the buffered
 * KVs and the trigger KV go to the leaf in one batch (leaf.c), and the
 * trigger is not logged (write-conservative logging, section 3.3), except
 * that a trigger delete is logged (see ccl.c, "Deletes and recovery").
 * Flushed KVs stay in their slots as a read cache (the cache bits) until
 * the slot is reused; a write of a key drops it from the cache first, so a
 * cached KV always equals the leaf's.
 *
 * Concurrency (section 4.4): the header word is a version lock. Writers
 * lock it with a compare-and-swap and bump the version when they unlock;
 * readers read without locking and retry when the version moved. Leaf
 * contents are covered by their buffer node's lock. Holders never sleep
 * (they run in epoch sections, preemption off).
 *
 * Key count: a write that adds a key or a delete that removes one moves
 * the per-CPU live key counter (struct ccl_pcpu) by one, after it took
 * its timestamp and before it unlocks any node it changed (the trigger
 * write's in ccl_flush()), so that a checker pass that saw no timestamp
 * taken saw the counter and the nodes agree (check.c).
 */
#include <linux/errno.h>
#include <linux/lockdep.h>
#include <linux/preempt.h>
#include <linux/processor.h>
#include <linux/slab.h>
#include <linux/string.h>
#include "ccl.h"

struct ccl_fence *ccl_fence_alloc(const u8 *k, u32 len, gfp_t gfp)
{
	struct ccl_fence *f = kmalloc(sizeof(*f) + len, gfp);

	if (f) {
		f->len = len;
		if (len)
			memcpy(f->key, k, len);
	}
	return f;
}

struct ccl_bnode *ccl_bnode_alloc(struct ccl_tree *t, gfp_t gfp)
{
	return kzalloc(ccl_bnode_size(t), gfp);
}

/* Set up a fresh (zeroed) buffer node for the leaf at @leaf. */
struct ccl_bnode *ccl_bnode_make(struct ccl_tree *t, struct ccl_bnode *bn,
				 struct ccl_fence *low, u64 leaf, u64 clock)
{
	atomic64_set(&bn->hdr, leaf >> 8);
	bn->low = low;
	bn->clock = clock;
	return bn;
}

/* Free at once (no reader can see it: close, destroy, error paths). */
void ccl_bnode_free(struct ccl_tree *t, struct ccl_bnode *b)
{
	kfree(b->ovf);
	kfree(b->low);
	kfree(b);
}

/* Return: the locked header word, or 0 if the node is obsolete. */
u64 ccl_bn_lock(struct ccl_bnode *b)
{
	s64 h;

	/* holders and spinners have preemption off (see above) */
	lockdep_assert_preemption_disabled();

	for (;;) {
		h = atomic64_read(&b->hdr);
		if (h & BN_OBSOLETE)
			return 0;
		if (!(h & BN_LOCKED) &&
		    atomic64_try_cmpxchg(&b->hdr, &h, h | BN_LOCKED))
			return h | BN_LOCKED;
		cpu_relax();
	}
}

/* Unlock publishing @h (pos, epoch bits, obsolete) with a new version. */
void ccl_bn_unlock(struct ccl_bnode *b, u64 h)
{
	atomic64_set_release(&b->hdr, (h & ~BN_LOCKED) + BN_VER_INC);
}

/* Unlock a node that was not changed: readers need not retry. */
void ccl_bn_unlock_clean(struct ccl_bnode *b, u64 h)
{
	atomic64_set_release(&b->hdr, h & ~BN_LOCKED);
}

/* Return: the header to validate against, or 0 if obsolete. */
u64 ccl_bn_read_begin(struct ccl_bnode *b)
{
	u64 h;

	for (;;) {
		h = atomic64_read_acquire(&b->hdr);
		if (h & BN_OBSOLETE)
			return 0;
		if (!(h & BN_LOCKED))
			return h;
		cpu_relax();
	}
}

/* True when what was read since ccl_bn_read_begin() may be inconsistent. */
bool ccl_bn_read_retry(struct ccl_bnode *b, u64 h)
{
	/* the reads of the section complete before the version is read */
	smp_rmb();
	return (u64)atomic64_read(&b->hdr) != h;
}

/*
 * Lock the node whose range holds @k, starting at @b, whose low fence is
 * <= @k; if a split moved @k to a right neighbour meanwhile, follow the
 * neighbours (their links are stable while the node is locked). Return:
 * NULL when a node on the way was obsolete (merged away): descend again.
 */
static struct ccl_bnode *lock_from(struct ccl_bnode *b, u64 kpfx,
				   const u8 *k, u32 klen, u64 *h)
{
	struct ccl_bnode *nx;
	u64 v;

	for (;;) {
		v = ccl_bn_lock(b);
		if (!v)
			return NULL;
		nx = b->next;
		if (!ccl_bn_past(nx, b->npfx, kpfx, k, klen)) {
			*h = v;
			return b;
		}
		ccl_bn_unlock_clean(b, v);
		b = nx;
	}
}

/**
 * ccl_find_lock - lock the buffer node whose range holds @k
 *
 * @from: a node whose low fence is <= @k, seen linked in this epoch
 * section (so not freed yet), to start at instead of the root; or NULL.
 *
 * Context: inside an epoch section.
 */
struct ccl_bnode *ccl_find_lock(struct ccl_tree *t, struct ccl_bnode *from,
				const u8 *k, u32 klen, u64 *h)
{
	u64 kpfx = ccl_pfx(k, klen);
	struct ccl_bnode *b = NULL;

	if (from)
		b = lock_from(from, kpfx, k, klen, h);
	while (!b)
		b = lock_from(ccl_inner_find(t, k, klen), kpfx, k, klen, h);
	ccl_leaf_prefetch(t, *h);
	return b;
}

/* The slot holding @k among the unflushed (or else the cached) slots. */
int ccl_buf_find(struct ccl_tree *t, struct ccl_bnode *b, u64 h,
		 const u8 *k, u32 klen, u8 fp, bool unflushed)
{
	unsigned int i, pos = bn_pos(h);

	for (i = 0; i < t->nbatch; i++) {
		if (unflushed ? i >= pos : !(b->cache & (1U << i)))
			continue;
		if (b->sfp[i] == fp &&
		    ccl_key_eq(t, b->slot[i].key, b->sflag[i] & CCL_F_KIND,
			       k, klen))
			return i;
	}
	return -1;
}

void ccl_cache_drop(struct ccl_tree *t, struct ccl_bnode *b, u64 h,
		    const u8 *k, u32 klen, u8 fp)
{
	int i = ccl_buf_find(t, b, h, k, klen, fp, false);

	if (i >= 0)
		WRITE_ONCE(b->cache, b->cache & ~(1U << i));
}

static bool present(struct ccl_tree *t, struct ccl_bnode *b, u64 h,
		    struct ccl_wreq *r)
{
	struct ccl_leaf *l = ccl_bn_leaf(t, h);
	u32 bitmap = ccl_meta_bitmap(le64_to_cpu(READ_ONCE(l->meta)));

	return ccl_buf_find(t, b, h, r->key, r->klen, r->fp, false) >= 0 ||
	       ccl_leaf_find(t, l, bitmap, r->key, r->klen, r->fp) >= 0;
}

/* The key is in an unflushed slot: log the new version, update in place. */
static int write_in_place(struct ccl_tree *t, struct ccl_bnode *b, u64 *h,
			  int s, struct ccl_wreq *r)
{
	bool live = !(b->sflag[s] & CCL_F_TOMB);
	bool tomb = r->flags & CCL_F_TOMB;
	unsigned int side;
	u8 flags;
	int ret;

	if (tomb && !live)
		return -ENOENT;
	if (r->insert && live)
		return -EEXIST;
	/* the slot's key blob stays; the request's fresh one is not used */
	flags = (b->sflag[s] & CCL_F_KIND) | (r->flags & ~CCL_F_KIND);
	side = READ_ONCE(t->side);
	ret = pmidx_wal_append(t->wal, side, b->slot[s].key, r->vw,
			       ccl_next_ts(t, b), flags);
	if (ret)
		return ret;
	ccl_stat_inc(t, log_appends);
	if (b->sflag[s] & CCL_F_VIND)
		ccl_retire_word(t, b->slot[s].val);
	WRITE_ONCE(b->slot[s].val, r->vw);
	WRITE_ONCE(b->sflag[s], flags);
	*h = bn_set_ebit(*h, s, side);
	r->vw_used = true;
	return 0;
}

/**
 * ccl_buf_write - put (or delete, CCL_F_TOMB) one KV through the buffer
 *
 * Return: 0 once durable; -ENOENT, -EEXIST, -ENOSPC; CCL_NEEDRES (fill
 * @res and call again) or CCL_RETRY (call again) with nothing changed.
 *
 * Context: inside an epoch section.
 */
int ccl_buf_write(struct ccl_tree *t, struct ccl_wreq *r, struct ccl_res *res)
{
	bool tomb = r->flags & CCL_F_TOMB, was;
	struct ccl_bnode *b;
	struct ccl_ent e;
	unsigned int pos, side;
	int s, ret, keys = 0;
	u64 h, h0;

	b = ccl_find_lock(t, NULL, r->key, r->klen, &h);
	/* out of timestamps (see ccl.c): refuse before changing anything */
	if (unlikely(ccl_ts_near_limit(b))) {
		ccl_bn_unlock_clean(b, h);
		return -EOVERFLOW;
	}
	if (b->ovf) {
		/* recovered KVs first, so slots are always the newest */
		ret = ccl_flush(t, b, &h, NULL, 0, res);
		ccl_bn_unlock(b, h);
		return ret ? ret : CCL_RETRY;
	}
	h0 = h;
	s = ccl_buf_find(t, b, h, r->key, r->klen, r->fp, true);
	if (s >= 0) {
		was = !(b->sflag[s] & CCL_F_TOMB);
		ret = write_in_place(t, b, &h, s, r);
		if (!ret)
			keys = tomb ? -1 : !was;
		goto out;
	}
	if ((tomb || r->insert) && present(t, b, h, r) != tomb) {
		ret = tomb ? -ENOENT : -EEXIST;
		goto out;
	}
	ccl_cache_drop(t, b, h, r->key, r->klen, r->fp);

	pos = bn_pos(h);
	if (pos < t->nbatch) {
		side = READ_ONCE(t->side);
		ret = pmidx_wal_append(t->wal, side, r->kw, r->vw,
				       ccl_next_ts(t, b), r->flags);
		if (ret)
			goto out;
		ccl_stat_inc(t, log_appends);
		/*
		 * present (known for deletes and inserts) or not: only for the
		 * key count, so asked after the append, whose write-back wait
		 * the leaf's lines (prefetched) arrive during
		 */
		was = tomb || (!r->insert && present(t, b, h, r));
		WRITE_ONCE(b->cache, b->cache & ~(1U << pos));
		WRITE_ONCE(b->slot[pos].key, r->kw);
		WRITE_ONCE(b->slot[pos].val, r->vw);
		WRITE_ONCE(b->sflag[pos], r->flags);
		WRITE_ONCE(b->sfp[pos], r->fp);
		h = bn_set_ebit(h, pos, side);
		h = bn_set_pos(h, pos + 1);
		r->kw_used = true;
		r->vw_used = true;
		keys = tomb ? -1 : !was;
		goto out;
	}

	/*
	 * The trigger write: flush the batch with it, without logging it; a
	 * trigger delete is logged, by the flush once it cannot fail.
	 */
	e = (struct ccl_ent){ .key = r->kw, .val = r->vw, .flags = r->flags,
			      .fp = r->fp, .lslot = -1 };
	ret = ccl_flush(t, b, &h, &e, 1, res);
	if (!ret) {
		r->kw_used = true;
		r->vw_used = true;
	}
out:
	if (keys)
		this_cpu_add(t->st->keys, keys);
	if (h == h0 && ret)
		ccl_bn_unlock_clean(b, h);
	else
		ccl_bn_unlock(b, h);
	return ret;
}
