// SPDX-License-Identifier: GPL-2.0
/*
 * Merging an underfull leaf into its left sibling (paper section 4.2).
 *
 * After a batch flush leaves a leaf R below half full, R is merged into
 * its left sibling L when both hang off the same last-level inner node
 * and L has room for R's KVs plus L's own unflushed ones. Protocol, with
 * the inner node P, R and L locked (L by trylock: the lock order is left
 * to right, so a busy L just means no merge this time):
 *
 *   1. write L's unflushed KVs and R's live KVs into free slots of L's
 *      leaf, persist those lines;
 *   2. commit L with one 8-byte meta store: the new bitmap and next =
 *      R's next, which unlinks R; the timestamp stored just before it (a
 *      fresh one) covers everything now in L, as L's buffered KVs were
 *      applied too;
 *   3. drop R's separator from P, link L to R's successor, mark R
 *      obsolete (waiters restart from the root), retire R's leaf and
 *      buffer node through the epochs.
 *
 * A power cut before 2 leaves both leaves as they were; the new slots of
 * L are not live and R's KVs are where they were.
 *
 * Why only under the same parent: a separator that is entry 0 of an inner
 * node is also the key of every ancestor entry pointing to that node, and
 * those share the buffer node's fence; never removing entry 0 means a
 * retired fence is never referenced by an inner node.
 */
#include <linux/bitops.h>
#include "ccl.h"

static u64 bn_trylock(struct ccl_bnode *b)
{
	s64 h = atomic64_read(&b->hdr);

	if (h & (BN_OBSOLETE | BN_LOCKED))
		return 0;
	if (!atomic64_try_cmpxchg(&b->hdr, &h, h | BN_LOCKED))
		return 0;
	return h | BN_LOCKED;
}

/* Merge under locks; return: true if R was merged into L. */
static bool merge_locked(struct ccl_tree *t, struct ccl_bnode *lb, u64 *lh,
			 struct ccl_bnode *r, u64 rh)
{
	struct ccl_ent e[CCL_NBATCH_MAX];
	struct ccl_leaf *ll = ccl_bn_leaf(t, *lh), *rl = ccl_bn_leaf(t, rh);
	u64 lmeta = le64_to_cpu(ll->meta), rmeta = le64_to_cpu(rl->meta);
	u32 lbm = ccl_meta_bitmap(lmeta), rbm = ccl_meta_bitmap(rmeta);
	u32 avail = ~lbm & CCL_BITMAP_MASK, newbm = lbm;
	u16 vind = le16_to_cpu(ll->vind), rvind = le16_to_cpu(rl->vind);
	unsigned int i, s, n = 0, need = hweight32(rbm), lines = 0;
	unsigned int pos = bn_pos(*lh);
	unsigned long bits = rbm;
	u8 cache = 0;

	for (i = 0; i < pos; i++) {
		e[n++] = (struct ccl_ent){ .key = lb->slot[i].key,
			.val = lb->slot[i].val, .flags = lb->sflag[i],
			.fp = lb->sfp[i] };
		if (!(lb->sflag[i] & CCL_F_TOMB)) {
			need++;
			cache |= BIT(i);
		}
	}
	if (need > hweight32(avail))
		return false;
	ccl_leaf_resolve(t, ll, lbm, e, n);

	/* 1 */
	for (i = 0; i < n; i++) {
		if (e[i].lslot >= 0)
			newbm &= ~BIT(e[i].lslot);
		if (e[i].flags & CCL_F_TOMB)
			continue;
		s = __ffs(avail);
		avail &= ~BIT(s);
		ccl_leaf_put_slot(ll, s, e[i].key, e[i].val, e[i].fp,
				  e[i].flags & CCL_F_VIND, &vind);
		newbm |= BIT(s);
		lines |= BIT(ccl_slot_line(s));
	}
	for_each_set_bit(i, &bits, CCL_LEAF_SLOTS) {
		s = __ffs(avail);
		avail &= ~BIT(s);
		ccl_leaf_put_slot(ll, s, (__force u64)rl->slot[i].key,
				  (__force u64)rl->slot[i].val, rl->fp[i],
				  rvind & BIT(i), &vind);
		newbm |= BIT(s);
		lines |= BIT(ccl_slot_line(s));
	}
	/* 2: after every timestamp of both ranges (ccl.c, "Timestamps") */
	lb->clock = max(lb->clock, r->clock);
	ccl_leaf_publish(t, ll, lines, vind, ccl_next_ts(t, lb), newbm,
			 ccl_meta_next(rmeta));
	ccl_retire_replaced(t, e, n);
	ccl_perm_drop(lb);
	WRITE_ONCE(lb->cache, lb->cache | cache);
	*lh = bn_set_pos(*lh, 0);
	return true;
}

/**
 * ccl_try_merge - merge @r (just flushed, below half) into its left sibling
 * @rh: @r's locked header; BN_OBSOLETE is set in it when @r is merged
 *
 * Context: @r locked, inside an epoch section.
 */
void ccl_try_merge(struct ccl_tree *t, struct ccl_bnode *r, u64 *rh)
{
	struct ccl_bnode *lb;
	struct ccl_inode *p;
	int idx;
	u64 lh;

	if (bn_pos(*rh) || r->ovf)
		return;
	p = ccl_inner_lock_parent(t, r, &idx);
	if (!p)
		return;
	if (idx == 0)
		goto out_p;
	lb = p->child[idx - 1];
	lh = bn_trylock(lb);
	if (!lh)
		goto out_p;
	/*
	 * Room for the three retirees below (core/epoch.c: DRAM must not
	 * be abandoned); without it the nodes stay apart until a later
	 * flush merges them.
	 */
	if (lb->next != r || lb->ovf || !pmidx_epoch_room(&t->epoch, 3) ||
	    !merge_locked(t, lb, &lh, r, *rh)) {
		ccl_bn_unlock_clean(lb, lh);
		goto out_p;
	}
	/* 3 */
	ccl_inner_remove(p, idx);
	ccl_inner_unlock(p);
	ccl_bn_set_next(lb, r->next);
	ccl_bn_unlock(lb, lh);
	*rh |= BN_OBSOLETE;
	pmidx_epoch_retire(&t->epoch, bn_leaf(*rh) | 2);
	ccl_retire_dram(t, (void *)r->low);
	ccl_retire_dram(t, r);
	atomic64_dec(&t->nleaves);
	ccl_stat_inc(t, merges);
	return;
out_p:
	ccl_inner_unlock(p);
}
