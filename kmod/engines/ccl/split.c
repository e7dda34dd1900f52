// SPDX-License-Identifier: GPL-2.0
/*
 * Logless leaf split (paper section 4.2).
 *
 * A batch that does not fit the leaf's free slots splits it. The keys of
 * the leaf and of the batch are sorted and cut at a split key: the old
 * leaf keeps the part below it, a new leaf (several for a large recovered
 * batch) receives the part above it, taking the batch's KVs for its range
 * directly. Protocol:
 *
 *   1. allocate everything (leaves, buffer nodes, fences, inner nodes);
 *      failure here changes nothing (-ENOSPC or CCL_NEEDRES);
 *   2. fill the new leaves (timestamp = the batch's), persist them whole;
 *   3. one atomic 8-byte store of the old leaf's meta word clears the
 *      moved slots and links the first new leaf; persist. The old leaf's
 *      timestamp does not change: the batch's KVs below the split key are
 *      not in it yet, and their log entries must still replay there;
 *   4. publish the new buffer nodes (inner separators, neighbour links);
 *   5. apply the lower part of the batch to the old leaf as an ordinary
 *      batch flush (leaf.c), which sets its timestamp.
 *
 * A power cut before 3 leaves the new leaves unreachable (the allocator
 * trace frees them); after 3 the list is consistent and every KV of the
 * batch below the split key is still in the log with a timestamp above the
 * old leaf's. The trigger KV is acknowledged only after 5.
 *
 * Choosing the cut: the old leaf must hold its remaining slots plus the
 * new slots of the lower batch (an update not made in place takes a new
 * slot before the old one is freed: leaf.c), each new leaf at most 14
 * KVs; among the valid cuts the most balanced one is taken.
 */
#include <linux/bitops.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/string.h>
#include "ccl.h"

#define BULK_FILL	(CCL_LEAF_SLOTS * 3 / 4)
#define ITEMS_STACK	(CCL_LEAF_SLOTS + CCL_NBATCH_MAX + 1)

struct sitem {
	u64	key;
	s16	ent;		/* batch entry, -1 for a leaf slot kept as is */
	s8	lslot;		/* live leaf slot with this key, or -1 */
	u8	kind;		/* CCL_F_KIND of key */
	u8	cost;		/* slots it needs in the old leaf when below */
	u8	final;		/* live after the batch */
};

static int sitem_cmp(const void *a, const void *b, const void *ctx)
{
	const struct sitem *x = a, *y = b;

	return ccl_word_cmp(ctx, x->key, x->kind, y->key, y->kind);
}

/* A new leaf being built. */
struct nleaf {
	u64			off;
	struct ccl_bnode	*bn;
	struct ccl_fence	*fence;
	unsigned int		first, end;	/* items [first, end) */
};

struct plan {
	unsigned int	m;		/* items [0, m) stay in the old leaf */
	unsigned int	k;		/* new leaves */
	struct nleaf	*nl;
};

/* Return: false when even the bulk rule finds no cut (cannot happen). */
static bool plan_cut(struct sitem *it, unsigned int s, struct plan *p,
		     struct nleaf *nl, unsigned int nl_cap)
{
	unsigned int i, m, cost = 0, fin = 0, total = 0, best = 0, up, cnt;
	unsigned int score, best_score = UINT_MAX;

	for (i = 0; i < s; i++)
		total += it[i].final;
	/* a single new leaf, as balanced as possible */
	for (m = 1; m < s; m++) {
		cost += it[m - 1].cost;
		fin += it[m - 1].final;
		if (cost > CCL_LEAF_SLOTS)
			break;
		up = total - fin;
		if (!up || up > CCL_LEAF_SLOTS)
			continue;
		score = fin > up ? fin - up : up - fin;
		if (score < best_score) {
			best_score = score;
			best = m;
		}
	}
	p->nl = nl;
	if (best) {
		p->m = best;
		goto segments;
	}
	/* a large recovered batch: fill the old leaf to 3/4, then new ones */
	for (m = 0, cost = 0; m + 1 < s && cost + it[m].cost <= BULK_FILL; m++)
		cost += it[m].cost;
	p->m = max(m, 1U);
segments:
	p->k = 0;
	cnt = 0;
	for (i = p->m; i < s; i++) {
		if (!it[i].final)
			continue;
		if (!p->k || cnt == (best ? CCL_LEAF_SLOTS : BULK_FILL)) {
			if (p->k == nl_cap)
				return false;
			if (p->k)
				nl[p->k - 1].end = i;
			nl[p->k].first = i;
			p->k++;
			cnt = 0;
		}
		cnt++;
	}
	if (p->k)
		nl[p->k - 1].end = s;
	return true;
}

static struct ccl_fence *get_fence(struct ccl_tree *t, struct ccl_res *res,
				   u64 key, u8 kind)
{
	struct ccl_fence *f;
	const u8 *k;
	u32 len;

	k = ccl_word_bytes(t, &key, kind, &len);
	f = ccl_fence_alloc(k, len, GFP_ATOMIC);
	if (!f && res->fence) {
		f = res->fence;
		res->fence = NULL;
		f->len = len;
		memcpy(f->key, k, len);
	}
	return f;
}

static void put_back(struct ccl_tree *t, struct ccl_res *res, struct nleaf *nl)
{
	if (nl->off)
		pmidx_free(&t->pool->alloc, nl->off);
	if (nl->bn && !res->bn)
		res->bn = nl->bn;
	else
		kfree(nl->bn);
	kfree(nl->fence);
	memset(nl, 0, sizeof(*nl));
}

/* Step 1: everything the split needs, or nothing. */
static int acquire(struct ccl_tree *t, struct ccl_res *res, struct sitem *it,
		   struct plan *p, struct ccl_stash *st)
{
	unsigned int j, want_in;
	int ret = CCL_NEEDRES;

	for (j = 0; j < p->k; j++) {
		struct nleaf *nl = &p->nl[j];

		nl->off = pmidx_alloc(&t->pool->alloc, sizeof(struct ccl_leaf));
		if (!nl->off) {
			ret = -ENOSPC;
			goto fail;
		}
		if (res->bn) {
			nl->bn = res->bn;
			res->bn = NULL;
		} else {
			nl->bn = ccl_bnode_alloc(t, GFP_ATOMIC);
		}
		if (!nl->bn) {
			res->want_bn = true;
			goto fail;
		}
		nl->fence = get_fence(t, res, it[nl->first].key,
				      it[nl->first].kind);
		if (!nl->fence) {
			res->want_fence = true;
			goto fail;
		}
	}
	want_in = min_t(unsigned int, CCL_STASH_MAX,
			p->k * (atomic_read(&t->height) + 1) + 1);
	if (!ccl_stash_fill(t, st, want_in)) {
		res->want_in = want_in;
		goto fail;
	}
	return 0;
fail:
	for (j = 0; j < p->k; j++)
		put_back(t, res, &p->nl[j]);
	ccl_stash_return(t, st);
	return ret;
}

/* Step 2: fill and persist new leaf @nl, linking it to @next. */
static void build_leaf(struct ccl_tree *t, struct ccl_leaf *old,
		       struct sitem *it, struct ccl_ent *e, struct nleaf *nl,
		       u64 next, u64 ts)
{
	struct ccl_leaf *l = ccl_ptr(t, nl->off);
	u16 oldvind = le16_to_cpu(old->vind), vind = 0;
	unsigned int i, s = 0;

	memset(l, 0, sizeof(*l));
	for (i = nl->first; i < nl->end; i++) {
		if (!it[i].final)
			continue;
		if (it[i].ent >= 0) {
			struct ccl_ent *x = &e[it[i].ent];

			ccl_leaf_put_slot(l, s, x->key, x->val, x->fp,
					  x->flags & CCL_F_VIND, &vind);
		} else {
			unsigned int o = it[i].lslot;

			ccl_leaf_put_slot(l, s, (__force u64)old->slot[o].key,
					  (__force u64)old->slot[o].val,
					  old->fp[o], oldvind & BIT(o), &vind);
		}
		s++;
	}
	l->vind = cpu_to_le16(vind);
	l->ts = cpu_to_le64(ccl_ts_word(ts, 0));
	l->meta = cpu_to_le64(ccl_meta((1U << s) - 1, next, 0));
	pmidx_flush(t->pm, l, sizeof(*l));
}

/**
 * ccl_split - apply a batch that does not fit by splitting the leaf
 * @e, @n: the resolved batch (ccl_leaf_resolve), distinct keys
 * @ts:    the batch timestamp
 * @trig:  the trigger write, logged once the split cannot fail if a delete
 *
 * Context: @b locked, inside an epoch section.
 * Return: 0; CCL_NEEDRES, -ENOSPC or -ENOMEM with nothing changed.
 */
int ccl_split(struct ccl_tree *t, struct ccl_bnode *b, u64 *h,
	      struct ccl_ent *e, unsigned int n, u64 ts, struct ccl_ent *trig,
	      unsigned int ntrig, struct ccl_res *res)
{
	struct sitem items[ITEMS_STACK], *it = items;
	struct ccl_ent lowstack[CCL_NBATCH_MAX + 1], *low = lowstack;
	struct ccl_leaf *l = ccl_bn_leaf(t, *h);
	u64 meta = le64_to_cpu(READ_ONCE(l->meta)), next;
	u32 bitmap = ccl_meta_bitmap(meta), used = 0, upper = 0;
	struct nleaf nlstack[2], *nl = nlstack;
	unsigned int i, j, s = 0, nlow = 0, nl_cap = ARRAY_SIZE(nlstack);
	struct ccl_stash st = { .cnt = 0 };
	unsigned long bits;
	struct plan p;
	int ret;

	if (n + CCL_LEAF_SLOTS > ITEMS_STACK) {
		/* a recovered overflow batch: rare, may be large */
		nl_cap = n / BULK_FILL + 2;
		it = kmalloc_array(n + CCL_LEAF_SLOTS, sizeof(*it), GFP_ATOMIC);
		low = kmalloc_array(n, sizeof(*low), GFP_ATOMIC);
		nl = kcalloc(nl_cap, sizeof(*nl), GFP_ATOMIC);
		ret = -ENOMEM;
		if (!it || !low || !nl)
			goto out;
	} else {
		memset(nlstack, 0, sizeof(nlstack));
	}

	for (i = 0; i < n; i++) {
		bool tomb = e[i].flags & CCL_F_TOMB;

		it[s++] = (struct sitem){ .key = e[i].key, .ent = i,
			.lslot = e[i].lslot, .kind = e[i].flags & CCL_F_KIND,
			.cost = ccl_ent_in_place(&e[i]) ? 1 :
				(e[i].lslot >= 0) + !tomb,
			.final = !tomb };
		if (e[i].lslot >= 0)
			used |= BIT(e[i].lslot);
	}
	bits = bitmap & ~used;
	for_each_set_bit(j, &bits, CCL_LEAF_SLOTS)
		it[s++] = (struct sitem){
			.key = (__force u64)READ_ONCE(l->slot[j].key),
			.ent = -1, .lslot = j,
			.kind = l->fp[j] & CCL_FP_IND ? CCL_F_KIND : 0,
			.cost = 1, .final = 1 };
	sort_r(it, s, sizeof(*it), sitem_cmp, NULL, t);
	ret = -EUCLEAN;
	if (WARN_ON_ONCE(!plan_cut(it, s, &p, nl, nl_cap)))
		goto out;

	ret = acquire(t, res, it, &p, &st);
	if (ret)
		goto out;
	ret = ccl_log_trigger(t, b, trig, ntrig);
	if (ret) {
		for (j = 0; j < p.k; j++)
			put_back(t, res, &p.nl[j]);
		ccl_stash_return(t, &st);
		goto out;
	}

	/* 2: the new leaves, right to left so each knows its successor */
	next = ccl_meta_next(meta);
	for (j = p.k; j-- > 0;) {
		build_leaf(t, l, it, e, &p.nl[j], next, ts);
		next = p.nl[j].off;
	}
	if (p.k)
		pmidx_fence(t->pm);

	/* 3: the switch */
	for (i = p.m; i < s; i++)
		if (it[i].lslot >= 0)
			upper |= BIT(it[i].lslot);
	/*
	 * meta alone, same commit sequence: the old timestamp stays right
	 * (the lower KVs are not in the leaf until step 5 commits them)
	 */
	pmidx_store64_persist(t->pm, &l->meta,
			      ccl_meta(bitmap & ~upper, next, ccl_meta_seq(meta)));

	/* 4: DRAM */
	for (j = p.k; j-- > 0;) {
		struct ccl_bnode *nb = p.nl[j].bn;

		ccl_bnode_make(t, nb, p.nl[j].fence, p.nl[j].off, b->clock);
		ccl_bn_set_next(nb, j + 1 < p.k ? p.nl[j + 1].bn : b->next);
	}
	/* published with release: the new nodes are complete before */
	for (j = 0; j < p.k; j++)
		ccl_inner_insert(t, p.nl[j].fence, p.nl[j].bn, &st);
	if (p.k)
		ccl_bn_set_next(b, p.nl[0].bn);
	atomic64_add(p.k, &t->nleaves);
	ccl_stat_inc(t, splits);

	/* 5: the lower part of the batch */
	for (i = 0; i < p.m; i++)
		if (it[i].ent >= 0)
			low[nlow++] = e[it[i].ent];
	if (nlow)
		ccl_leaf_commit(t, l, bitmap & ~upper, low, nlow, ts);
	ccl_retire_replaced(t, e, n);
	ccl_stash_return(t, &st);
	ret = 0;
out:
	if (it != items) {
		kfree(it);
		kfree(low);
		kfree(nl);
	}
	return ret;
}
