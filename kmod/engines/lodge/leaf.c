// SPDX-License-Identifier: GPL-2.0
/*
 * PM leaves (§III-A, §III-B): unsorted slots, a bitmap word whose single
 * store commits every change, next0/next1 and the use bit for a logless
 * split. Everything here runs under the lock of the leaf's node.
 *
 * Merge (no split): the new KVs go to free slots, the slot lines and the
 * header's kind/vind words are flushed and fenced, then bitmap (new slots
 * on, replaced ones off) and ts are stored and line 0 is persisted: one
 * flush of the data, then the bitmap (the paper's two CLFLUSHes).
 *
 * Split: the new leaves are written and persisted first (header and the
 * slots in use, the last ones: see lodge_leaf_commit(); the moved KVs
 * keep their words: their blobs change owner), chained to the old
 * leaf's current next; then next[!use] := the first new leaf, and one
 * store of bitmap (moved slots off, new ones on, use flipped) commits it.
 * A crash before that store leaves the new leaves unreachable (a trace
 * frees them); after it, the old leaf no longer names the moved slots.
 */
#include <linux/bitops.h>
#include <linux/errno.h>
#include <linux/slab.h>
#include "core/blob.h"
#include "core/pmem.h"
#include "lodge.h"

static u64 ld64(const __le64 *w)
{
	return le64_to_cpu(READ_ONCE(*w));
}

u64 lodge_leaf_next(struct lodge_leaf *l)
{
	return ld64(&l->next[!!(ld64(&l->bitmap) & LODGE_USE_BIT)]);
}

/* The bytes of slot @s's key, read in place (pmem). */
const u8 *lodge_slot_key(struct lodge *t, struct lodge_leaf *l, int s,
			 u32 *len)
{
	if (!(ld64(&l->kind) & BIT_ULL(s))) {
		*len = 8;
		return (const u8 *)&l->slot[s].key;
	}
	return pmidx_blob_data(t->pool, ld64(&l->slot[s].key), len);
}

/* Return: the live slot holding @k, or -1. */
int lodge_leaf_find(struct lodge *t, struct lodge_leaf *l, const u8 *k,
		    u32 klen)
{
	u64 bits = ld64(&l->bitmap) & lodge_bitmap_mask(t);
	u64 kind = ld64(&l->kind);
	u64 w = klen == 8 ? lodge_word(k) : 0;
	const u8 *p;
	u32 len;
	int s;

	while (bits) {
		s = __ffs64(bits);
		bits &= bits - 1;
		if (klen == 8) {
			if (!(kind & BIT_ULL(s)) &&
			    READ_ONCE(l->slot[s].key) == (__force __le64)w)
				return s;
			continue;
		}
		if (!(kind & BIT_ULL(s)))
			continue;
		p = pmidx_blob_data(t->pool, ld64(&l->slot[s].key), &len);
		if (len == klen && !memcmp(p, k, klen))
			return s;
	}
	return -1;
}

/* Copy slot @s's value (machine-check safe); *vlen: its length. */
int lodge_leaf_value(struct lodge *t, struct lodge_leaf *l, int s, u8 *dst,
		     u32 cap, u32 *vlen)
{
	if (!(ld64(&l->vind) & BIT_ULL(s))) {
		*vlen = 8;
		if (cap < 8)
			return 0;
		return pmidx_read_data(t->pm, dst, &l->slot[s].val, 8);
	}
	return pmidx_blob_read(t->pool, ld64(&l->slot[s].val), dst, cap, vlen);
}

static void blob_free(struct lodge *t, u64 off)
{
	u32 len;

	pmidx_blob_data(t->pool, off, &len);
	atomic64_sub(len + sizeof(struct pmidx_blob), &t->blob_bytes);
	pmidx_free(&t->pool->alloc, off);
}

/* Free the blobs of the slots in @bits (dropped by a persisted commit). */
void lodge_leaf_free_blobs(struct lodge *t, struct lodge_leaf *l, u64 bits)
{
	u64 kind = ld64(&l->kind), vind = ld64(&l->vind);
	int s;

	while (bits) {
		s = __ffs64(bits);
		bits &= bits - 1;
		if (kind & BIT_ULL(s))
			blob_free(t, ld64(&l->slot[s].key));
		if (vind & BIT_ULL(s))
			blob_free(t, ld64(&l->slot[s].val));
	}
}

/* Blobs written by one commit, freed again if it fails. */
struct lodge_wr {
	u64			*blobs;
	unsigned int		n;
	struct lodge_fmem	*fm;	/* or NULL: GFP_ATOMIC */
};

static int wr_blob(struct lodge *t, struct lodge_wr *wr, const void *p,
		   u32 len, u64 *off)
{
	*off = pmidx_blob_write(t->pool, p, len);
	if (!*off)
		return -ENOSPC;
	atomic64_add(len + sizeof(struct pmidx_blob), &t->blob_bytes);
	wr->blobs[wr->n++] = *off;
	return 0;
}

/*
 * A buffered value moves from its log record to a blob. The record is
 * user data in pmem, so it is copied machine-check safe, through a DRAM
 * bounce (the blob is then written with ordinary, traced stores), and
 * the key length comes from DRAM, not from the record's header: a
 * poisoned record fails the flush with -EIO and nothing changes; the key
 * keeps answering -EIO until it is written again (README, media errors).
 */
static int wr_blob_rec(struct lodge *t, struct lodge_wr *wr,
		       struct lodge_slot *b, u64 *off)
{
	u8 *buf = wr->fm ? wr->fm->vbuf :
			   kmalloc(b->vlen, GFP_ATOMIC | __GFP_NOWARN);
	int ret;

	if (!buf)
		return -ENOMEM;
	ret = lodge_rec_value(t, b, NULL, buf);
	if (!ret)
		ret = wr_blob(t, wr, buf, b->vlen, off);
	if (!wr->fm)
		kfree(buf);
	return ret;
}

/*
 * Write item @it into slot @s of @l (a free slot, or a slot of a leaf
 * not yet reachable); @src is the leaf holding it->lslot. Sets the kind
 * and vind bits in @kind and @vind; @keepk, @keepv: the old slots whose blobs
 * live on here.
 */
static int put_item(struct lodge *t, struct lodge_wr *wr, struct lodge_leaf *l,
		    int s, struct lodge_item *it, struct lodge_leaf *src,
		    u64 *kind, u64 *vind, u64 *keepk, u64 *keepv)
{
	u64 skind = ld64(&src->kind), svind = ld64(&src->vind);
	struct lodge_slot *b = it->b;
	u64 kw, vw, off;
	bool ki, vi;
	int ret;

	if (!b) {
		/* a kept KV moves with its words (and blobs) */
		kw = (__force u64)READ_ONCE(src->slot[it->lslot].key);
		vw = (__force u64)READ_ONCE(src->slot[it->lslot].val);
		ki = skind & BIT_ULL(it->lslot);
		vi = svind & BIT_ULL(it->lslot);
		*keepk |= BIT_ULL(it->lslot);
		*keepv |= BIT_ULL(it->lslot);
	} else {
		ki = it->klen != 8;
		if (!ki) {
			kw = lodge_word(it->k);
		} else if (it->lslot >= 0 && (skind & BIT_ULL(it->lslot))) {
			/* an update keeps the key's blob */
			kw = (__force u64)READ_ONCE(src->slot[it->lslot].key);
			*keepk |= BIT_ULL(it->lslot);
		} else {
			ret = wr_blob(t, wr, it->k, it->klen, &off);
			if (ret)
				return ret;
			kw = (__force u64)cpu_to_le64(off);
		}
		vi = b->vlen != 8;
		if (!vi) {
			vw = b->w;
		} else if (b->vlen < 8) {
			ret = wr_blob(t, wr, &b->w, b->vlen, &off);
			if (ret)
				return ret;
			vw = (__force u64)cpu_to_le64(off);
		} else {
			ret = wr_blob_rec(t, wr, b, &off);
			if (ret)
				return ret;
			vw = (__force u64)cpu_to_le64(off);
		}
	}
	WRITE_ONCE(l->slot[s].key, (__force __le64)kw);
	WRITE_ONCE(l->slot[s].val, (__force __le64)vw);
	*kind = ki ? *kind | BIT_ULL(s) : *kind & ~BIT_ULL(s);
	*vind = vi ? *vind | BIT_ULL(s) : *vind & ~BIT_ULL(s);
	return 0;
}

/* A new leaf's low fence: the first key of its piece. */
static int set_fence(struct lodge *t, struct lodge_wr *wr, struct lodge_leaf *l,
		     struct lodge_item *it)
{
	u64 w = 0, off;
	int ret;

	if (it->klen <= 8) {
		memcpy(&w, it->k, it->klen);
	} else {
		ret = wr_blob(t, wr, it->k, it->klen, &off);
		if (ret)
			return ret;
		w = (__force u64)cpu_to_le64(off);
	}
	l->fence = (__force __le64)w;
	l->flen = cpu_to_le64(it->klen);
	return 0;
}

/* The low fence of @l (NULL, *len 0: the head's). */
const u8 *lodge_leaf_fence(struct lodge *t, struct lodge_leaf *l, u32 *len)
{
	*len = ld64(&l->flen);
	if (*len <= 8)
		return *len ? (const u8 *)&l->fence : NULL;
	return pmidx_blob_data(t->pool, ld64(&l->fence), len);
}

/**
 * lodge_leaf_commit - merge, or split, the final KVs of one leaf's range
 * @loff:  the leaf
 * @it:    the range's KVs after the flush, in key order (kept leaf KVs
 *         and buffered writes; deleted keys are absent)
 * @keep:  items [0, @keep) stay in the leaf; the rest go to new leaves of
 *         @per items each, whose offsets are returned in @newl (*@nnew)
 * @ts:    the newest sequence of the buffered writes applied
 * @fm:    the flush memory, held by the caller, or NULL (GFP_ATOMIC)
 *
 * Context: the node lock held exclusively.
 * Return: 0, or -ENOMEM/-ENOSPC with nothing changed on media that any
 * structure names.
 */
int lodge_leaf_commit(struct lodge *t, u64 loff, struct lodge_item *it,
		      unsigned int n, unsigned int keep, u64 ts, u64 *newl,
		      unsigned int *nnew, unsigned int per,
		      struct lodge_fmem *fm)
{
	struct lodge_leaf *l = lodge_leaf_ptr(t, loff), *nl;
	u64 old = ld64(&l->bitmap), mask = lodge_bitmap_mask(t);
	u64 bits = old & mask, use = old & LODGE_USE_BIT, newbits = 0;
	u64 kind = ld64(&l->kind), vind = ld64(&l->vind);
	u64 keepk = 0, keepv = 0, freeb;
	unsigned int i, j, c, nn = 0, cnt, lines = 0;
	struct lodge_wr wr = {};
	int s, ret = 0;
	u64 next;

	lockdep_assert_preemption_disabled();
	/* the moved KVs' old writes are in @l up to its ts: they go along */
	ts = max(ts, ld64(&l->ts));
	wr.fm = fm;
	wr.blobs = fm ? fm->blobs :
			kmalloc_array(2 * n + 1, sizeof(u64),
				      GFP_ATOMIC | __GFP_NOWARN);
	if (!wr.blobs)
		return -ENOMEM;
	nn = keep < n ? DIV_ROUND_UP(n - keep, per) : 0;
	for (c = 0; c < nn; c++) {
		newl[c] = pmidx_alloc(&t->pool->alloc, t->leaf_size);
		if (!newl[c]) {
			ret = -ENOSPC;
			goto fail;
		}
	}
	/*
	 * The new leaves, last first: each names the one after it. Their
	 * KVs take the last slots, away from the header's XPLine: the
	 * merges to come fill the lowest free slots, so while the header's
	 * XPLine has room a merge's data and its commit line are one
	 * 256-byte media write, not two (README, "Slot placement").
	 */
	next = lodge_leaf_next(l);
	for (c = nn; c-- > 0;) {
		u64 nk = 0, nv = 0;
		unsigned int first;

		nl = lodge_leaf_ptr(t, newl[c]);
		cnt = min(per, n - keep - c * per);
		first = t->slots - cnt;
		for (j = 0; j < cnt; j++) {
			ret = put_item(t, &wr, nl, first + j,
				       &it[keep + c * per + j], l, &nk, &nv,
				       &keepk, &keepv);
			if (ret)
				goto fail;
		}
		nl->bitmap = cpu_to_le64(((1ULL << cnt) - 1) << first);
		nl->ts = cpu_to_le64(ts);
		nl->next[0] = cpu_to_le64(next);
		nl->next[1] = 0;
		nl->kind = cpu_to_le64(nk);
		nl->vind = cpu_to_le64(nv);
		ret = set_fence(t, &wr, nl, &it[keep + c * per]);
		if (ret)
			goto fail;
		pmidx_flush(t->pm, nl, LODGE_LEAF_HDR);
		pmidx_flush(t->pm, &nl->slot[first], cnt * 16);
		next = newl[c];
	}
	/* the KVs staying here: kept slots, new ones into free slots */
	for (i = 0; i < keep; i++) {
		if (!it[i].b) {
			newbits |= BIT_ULL(it[i].lslot);
			keepk |= BIT_ULL(it[i].lslot);
			keepv |= BIT_ULL(it[i].lslot);
			continue;
		}
		s = __ffs64(~(bits | newbits) & mask);
		if (s >= t->slots) {	/* the caller counted wrong */
			ret = -EUCLEAN;
			goto fail;
		}
		ret = put_item(t, &wr, l, s, &it[i], l, &kind, &vind,
			       &keepk, &keepv);
		if (ret)
			goto fail;
		newbits |= BIT_ULL(s);
		lines |= 1U << (LODGE_LEAF_HDR + 16 * s) / 64;
	}
	/* each written slot line once (line 0 is the header: later) */
	for (i = 1; lines >> i; i++)
		if (lines & (1U << i))
			pmidx_flush(t->pm, (u8 *)l + 64 * i, 64);
	pmidx_fence(t->pm);
	/* one line: next, kind, vind, then the commit store, then ts */
	if (nn) {
		WRITE_ONCE(l->next[!use], cpu_to_le64(newl[0]));
		use ^= LODGE_USE_BIT;
	}
	WRITE_ONCE(l->kind, cpu_to_le64(kind));
	WRITE_ONCE(l->vind, cpu_to_le64(vind));
	WRITE_ONCE(l->bitmap, cpu_to_le64(newbits | use));
	WRITE_ONCE(l->ts, cpu_to_le64(ts));
	pmidx_persist(t->pm, l, LODGE_LEAF_HDR);
	/* dropped slots: their blobs, unless they live on elsewhere */
	freeb = bits & ~newbits;
	for (s = 0; freeb; freeb &= freeb - 1) {
		s = __ffs64(freeb);
		if (!(keepk & BIT_ULL(s)) && (ld64(&l->kind) & BIT_ULL(s)))
			blob_free(t, ld64(&l->slot[s].key));
		if (!(keepv & BIT_ULL(s)) && (ld64(&l->vind) & BIT_ULL(s)))
			blob_free(t, ld64(&l->slot[s].val));
	}
	*nnew = nn;
	atomic64_add(nn, &t->nleaves);
	if (!fm)
		kfree(wr.blobs);
	return 0;
fail:
	for (i = 0; i < wr.n; i++)
		blob_free(t, wr.blobs[i]);
	for (c = 0; c < nn && newl[c]; c++)
		pmidx_free(&t->pool->alloc, newl[c]);
	if (!fm)
		kfree(wr.blobs);
	return ret;
}

/*
 * Direct delete of slot @s (the key has no buffered write, so no log
 * record of it is newer than ts): one bitmap store.
 */
int lodge_leaf_delete(struct lodge *t, u64 loff, int s)
{
	struct lodge_leaf *l = lodge_leaf_ptr(t, loff);
	u64 old = ld64(&l->bitmap);

	pmidx_store64_persist(t->pm, &l->bitmap, old & ~BIT_ULL(s));
	lodge_leaf_free_blobs(t, l, BIT_ULL(s));
	return 0;
}

/*
 * Unlink the empty leaf @loff from its left neighbour @prev and free it.
 * Neither has a buffered write (the caller checked under the node lock),
 * so every logged write of their ranges is applied: @prev may take the
 * larger ts (stored first: with the old bitmap it is still true).
 */
void lodge_leaf_unlink(struct lodge *t, u64 prev, u64 loff)
{
	struct lodge_leaf *p = lodge_leaf_ptr(t, prev);
	struct lodge_leaf *l = lodge_leaf_ptr(t, loff);
	u64 old = ld64(&p->bitmap), use = !!(old & LODGE_USE_BIT);

	WRITE_ONCE(p->ts, cpu_to_le64(max(ld64(&p->ts), ld64(&l->ts))));
	WRITE_ONCE(p->next[!use], cpu_to_le64(lodge_leaf_next(l)));
	WRITE_ONCE(p->bitmap, cpu_to_le64(old ^ LODGE_USE_BIT));
	pmidx_persist(t->pm, p, LODGE_LEAF_HDR);
	if (ld64(&l->flen) > 8)
		blob_free(t, ld64(&l->fence));
	pmidx_free(&t->pool->alloc, loff);
	atomic64_dec(&t->nleaves);
}

/* The first leaf of a new index: empty, last. Return: 0 on failure. */
u64 lodge_leaf_new_head(struct lodge *t)
{
	u64 off = pmidx_alloc(&t->pool->alloc, t->leaf_size);
	struct lodge_leaf *l;

	if (!off)
		return 0;
	l = lodge_leaf_ptr(t, off);
	memset(l, 0, LODGE_LEAF_HDR);
	pmidx_persist(t->pm, l, LODGE_LEAF_HDR);
	atomic64_inc(&t->nleaves);
	return off;
}
