// SPDX-License-Identifier: GPL-2.0
/*
 * PM leaves: lookup and batch flush (paper sections 4.1 and 4.2).
 *
 * A batch flush writes the batch's KVs into free slots of the leaf, or
 * for an update of an inline key over its live slot's value word (below),
 * writes back the data lines it touched and fences,
 * then stores the fingerprints, the value-indirection word, the meta word
 * (bitmap + next) and finally the timestamp, all in line 0, and persists
 * line 0. The meta word is the commit: until it is durable the new slots
 * are not live; once it is, so are the fingerprints and vind stored before
 * it in the same line (a line persists as a prefix of its stores in
 * program order). The timestamp comes last, so a crash can leave the new
 * meta with the old timestamp; the commit sequence both carry tells
 * recovery so (format.h). The paper assumes a line is written back whole
 * and stores the timestamp first; under ADR a line may be evicted between
 * two of its stores, and then the new timestamp with the old bitmap would
 * hide the batch's log entries from replay. So a batch costs two fences
 * and at most four line flushes, all inside the leaf's XPLine.
 *
 * Updates in place (ccl_ent_in_place(); the paper's leaf insertion
 * writes an existing key's value over its slot too): one aligned 8-byte
 * store of the value word, before the commit, so a crash may keep it
 * without the commit. Nothing is lost or invented by that: the slot's
 * key, fingerprint and kind do not change, and it holds either the
 * committed value or the batch's, the key's newest version, written by a
 * put in flight (the trigger) or by an acknowledged put still in the log
 * with a timestamp above the leaf's, which replay applies over whatever
 * the slot holds. Both values are inline: no blob changes hands.
 * An update that took a new slot instead kept a full leaf's old and new
 * versions side by side, and split it: a fifth of a random update
 * phase's flushes did.
 *
 * Context: the caller holds the leaf's buffer node lock (lookups retry),
 * inside an epoch section.
 */
#include <linux/bitops.h>
#include <linux/slab.h>
#include "ccl.h"

static u64 slot_key(struct ccl_leaf *l, unsigned int s)
{
	return (__force u64)READ_ONCE(l->slot[s].key);
}

/* Return: the live slot of @l holding @k, or -1. */
int ccl_leaf_find(struct ccl_tree *t, struct ccl_leaf *l, u32 bitmap,
		  const u8 *k, u32 klen, u8 fp)
{
	unsigned long bits = bitmap & ccl_fp_match(l, fp);
	unsigned int s;

	for_each_set_bit(s, &bits, CCL_LEAF_SLOTS) {
		if (ccl_key_eq(t, slot_key(l, s), fp & CCL_FP_IND, k, klen))
			return s;
	}
	return -1;
}

/* Find, for each batch entry, the live slot it replaces or deletes. */
void ccl_leaf_resolve(struct ccl_tree *t, struct ccl_leaf *l, u32 bitmap,
		      struct ccl_ent *e, unsigned int n)
{
	u16 vind = le16_to_cpu(READ_ONCE(l->vind));
	unsigned int i;
	const u8 *k;
	u32 klen;
	int s;

	for (i = 0; i < n; i++) {
		k = ccl_word_bytes(t, &e[i].key, e[i].flags & CCL_F_KIND, &klen);
		s = ccl_leaf_find(t, l, bitmap, k, klen, e[i].fp);
		e[i].lslot = s;
		if (s < 0)
			continue;
		e[i].okey = slot_key(l, s);
		e[i].oval = (__force u64)READ_ONCE(l->slot[s].val);
		e[i].oflags = (l->fp[s] & CCL_FP_IND ? CCL_F_KIND : 0) |
			      (vind & BIT(s) ? CCL_F_VIND : 0);
	}
}

/* Write a KV into slot @s of a leaf (not live, not visible to anyone). */
void ccl_leaf_put_slot(struct ccl_leaf *l, unsigned int s, u64 key, u64 val,
		       u8 fp, bool vind, u16 *vindw)
{
	WRITE_ONCE(l->slot[s].key, (__force __le64)key);
	WRITE_ONCE(l->slot[s].val, (__force __le64)val);
	WRITE_ONCE(l->fp[s], fp);
	if (vind)
		*vindw |= BIT(s);
	else
		*vindw &= ~BIT(s);
}

/**
 * ccl_leaf_switch - the commit store: meta (@bitmap, @next, the next
 *                   commit sequence), then ts with the same sequence, in
 *                   line 0, persisted (format.h: a crash may keep the
 *                   first store alone, never the second alone)
 */
void ccl_leaf_switch(struct ccl_tree *t, struct ccl_leaf *l, u32 bitmap,
		     u64 next, u64 ts)
{
	u32 seq = ccl_meta_seq(le64_to_cpu(READ_ONCE(l->meta))) + 1;

	WRITE_ONCE(l->meta, cpu_to_le64(ccl_meta(bitmap, next, seq)));
	/* ts after meta, in program order: the line's stores persist so */
	barrier();
	WRITE_ONCE(l->ts, cpu_to_le64(ccl_ts_word(ts, seq)));
	pmidx_persist(t->pm, l, PMIDX_LINE_SIZE);
}

/*
 * Persist data lines @lines (bit i = line i of @l) other than line 0, then
 * commit: vind, then meta and the timestamp (ccl_leaf_switch()) in line 0.
 * vind only changes for slots that are not live yet, so it may reach
 * media before the meta word.
 */
void ccl_leaf_publish(struct ccl_tree *t, struct ccl_leaf *l, unsigned int lines,
		      u16 vind, u64 ts, u32 bitmap, u64 next)
{
	unsigned int i;

	for (i = 1; i < 4; i++)
		if (lines & BIT(i))
			pmidx_flush(t->pm, (u8 *)l + i * PMIDX_LINE_SIZE,
				    PMIDX_LINE_SIZE);
	if (lines & ~1U)
		pmidx_fence(t->pm);
	barrier();
	WRITE_ONCE(l->vind, cpu_to_le16(vind));
	barrier();
	ccl_leaf_switch(t, l, bitmap, next, ts);
	ccl_stat_inc(t, leaf_flushes);
}

/**
 * ccl_leaf_commit - apply a resolved batch that fits in the free slots
 *                   (updates in place need none)
 * @bitmap: the leaf's live slots now (as committed on media)
 * @ts:     the batch's timestamp: newer than every KV in it
 */
void ccl_leaf_commit(struct ccl_tree *t, struct ccl_leaf *l, u32 bitmap,
		     struct ccl_ent *e, unsigned int n, u64 ts)
{
	u64 next = ccl_meta_next(le64_to_cpu(READ_ONCE(l->meta)));
	u32 newbm = bitmap, avail = ~bitmap & CCL_BITMAP_MASK;
	u16 vind = le16_to_cpu(READ_ONCE(l->vind));
	unsigned int i, s, lines = 0;

	for (i = 0; i < n; i++) {
		if (ccl_ent_in_place(&e[i])) {
			WRITE_ONCE(l->slot[e[i].lslot].val, (__force __le64)e[i].val);
			lines |= BIT(ccl_slot_line(e[i].lslot));
			continue;
		}
		if (e[i].lslot >= 0)
			newbm &= ~BIT(e[i].lslot);
		if (e[i].flags & CCL_F_TOMB)
			continue;
		if (WARN_ON_ONCE(!avail))
			break;
		s = __ffs(avail);
		avail &= ~BIT(s);
		ccl_leaf_put_slot(l, s, e[i].key, e[i].val, e[i].fp,
				  e[i].flags & CCL_F_VIND, &vind);
		newbm |= BIT(s);
		lines |= BIT(ccl_slot_line(s));
	}
	ccl_leaf_publish(t, l, lines, vind, ts, newbm, next);
}

/* After a commit: retire what the batch replaced, deleted or consumed. */
void ccl_retire_replaced(struct ccl_tree *t, struct ccl_ent *e,
			 unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		if (e[i].lslot >= 0) {
			if (e[i].oflags & CCL_F_KIND)
				ccl_retire_word(t, e[i].okey);
			if (e[i].oflags & CCL_F_VIND)
				ccl_retire_word(t, e[i].oval);
		}
		/* a tombstone's own key blob is not kept anywhere */
		if ((e[i].flags & CCL_F_TOMB) && (e[i].flags & CCL_F_KIND))
			ccl_retire_word(t, e[i].key);
	}
}

/*
 * Log the trigger write if it is a delete (see ccl.c, "Deletes and
 * recovery"), just before the commit, once nothing can fail any more: a
 * delete that fails must not come back at the next recovery.
 */
int ccl_log_trigger(struct ccl_tree *t, struct ccl_bnode *b,
		    struct ccl_ent *x, unsigned int n)
{
	unsigned int i;
	int ret;

	for (i = 0; i < n; i++) {
		if (!(x[i].flags & CCL_F_TOMB))
			continue;
		ret = pmidx_wal_append(t->wal, READ_ONCE(t->side), x[i].key, 0,
				       ccl_next_ts(t, b), x[i].flags);
		if (ret)
			return ret;
		ccl_stat_inc(t, log_appends);
	}
	return 0;
}

/* After a split, cached slots may hold keys that moved right: drop them. */
static void cache_trim(struct ccl_tree *t, struct ccl_bnode *b)
{
	const struct ccl_fence *hi = b->next ? b->next->low : NULL;
	unsigned int i;

	if (!hi)
		return;
	for (i = 0; i < t->nbatch; i++)
		if ((b->cache & BIT(i)) &&
		    ccl_key_cmp_word(t, b->slot[i].key,
				     b->sflag[i] & CCL_F_KIND,
				     hi->key, hi->len) >= 0)
			WRITE_ONCE(b->cache, b->cache & ~BIT(i));
}

/**
 * ccl_flush - flush buffer node @b's unflushed KVs plus @extra (the
 *             trigger write), or its recovered overflow, to its leaf
 * @h: the locked header; pos, epoch bits and obsolete are updated
 *
 * The batch's keys are distinct and each is the newest version. If the
 * free slots do not suffice the leaf is split (split.c); a leaf below half
 * afterwards is merged into its left sibling when possible (merge.c).
 *
 * Return: 0; CCL_NEEDRES or -ENOSPC with nothing changed.
 */
int ccl_flush(struct ccl_tree *t, struct ccl_bnode *b, u64 *h,
	      struct ccl_ent *extra, unsigned int nextra, struct ccl_res *res)
{
	struct ccl_ent stack[CCL_NBATCH_MAX + 1], *e = stack;
	struct ccl_leaf *l = ccl_bn_leaf(t, *h);
	unsigned int i, n = 0, need = 0, pos = bn_pos(*h);
	u32 bitmap = ccl_meta_bitmap(le64_to_cpu(READ_ONCE(l->meta)));
	struct ccl_ovf *ovf = b->ovf;
	bool split = false;
	int ret, keys = 0;
	u8 cache = 0;
	u64 ts;

	if (ovf) {
		/* retired below: DRAM must not be abandoned (core/epoch.c) */
		if (!pmidx_epoch_room(&t->epoch, 1)) {
			res->want_room = true;
			return CCL_NEEDRES;
		}
		/* writers drain the overflow before using the slots */
		WARN_ON_ONCE(pos || nextra);
		e = ovf->e;
		n = ovf->n;
	} else {
		for (i = 0; i < pos; i++) {
			e[n++] = (struct ccl_ent){ .key = b->slot[i].key,
				.val = b->slot[i].val, .flags = b->sflag[i],
				.fp = b->sfp[i] };
			if (!(b->sflag[i] & CCL_F_TOMB))
				cache |= BIT(i);
		}
		for (i = 0; i < nextra; i++)
			e[n++] = extra[i];
	}
	if (!n)
		return 0;
	ccl_leaf_resolve(t, l, bitmap, e, n);
	for (i = 0; i < n; i++)
		need += !(e[i].flags & CCL_F_TOMB) && !ccl_ent_in_place(&e[i]);
	/* the trigger's change to the key count (buffered KVs made theirs) */
	for (i = n - nextra; i < n; i++)
		keys += e[i].flags & CCL_F_TOMB ? -1 : e[i].lslot < 0;
	ts = ccl_next_ts(t, b);
	if (need <= CCL_LEAF_SLOTS - hweight32(bitmap)) {
		ret = ccl_log_trigger(t, b, extra, nextra);
		if (ret)
			return ret;
		ccl_leaf_commit(t, l, bitmap, e, n, ts);
		ccl_retire_replaced(t, e, n);
	} else {
		ret = ccl_split(t, b, h, e, n, ts, extra, nextra, res);
		if (ret)
			return ret;
		split = true;
	}
	/* the leaf changed: scans sort it again (ccl.h, sorted permutation) */
	ccl_perm_drop(b);
	/* after the timestamp, before a merge unlocks the left sibling */
	if (keys)
		this_cpu_add(t->st->keys, keys);

	if (ovf) {
		WRITE_ONCE(b->ovf, NULL);
		atomic_dec(&t->ovf_nodes);
		ccl_retire_dram(t, ovf);
	} else {
		WRITE_ONCE(b->cache, b->cache | cache);
		*h = bn_set_pos(*h, 0);
	}
	if (split) {
		cache_trim(t, b);
		return 0;
	}
	bitmap = ccl_meta_bitmap(le64_to_cpu(READ_ONCE(l->meta)));
	if (hweight32(bitmap) < CCL_LEAF_HALF && b != t->bhead)
		ccl_try_merge(t, b, h);
	return 0;
}
