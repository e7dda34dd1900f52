// SPDX-License-Identifier: GPL-2.0
/*
 * The DRAM side of leaf arrays, and their bulk allocation.
 *
 * Metadata directory: the volatile metadata of a leaf array (struct
 * pfart_meta, §3.1's KeyPos/KeyLen/fingerprint and slot arrays) is found
 * by the array's pool offset: one array of pointers per data chunk,
 * allocated when a leaf array is first placed in the chunk, one pointer
 * per 256 bytes. Nothing of it is in pmem: a corrupt image cannot make a
 * reader follow a DRAM pointer. An entry is set before its leaf array is
 * published (the child word's release store orders it for readers) and
 * cleared by the array's epoch callback, before the pmem object is freed.
 *
 * Reserves (§3.1 "bulk memory"): per size class, up to PFART_RES_TARGET
 * leaf arrays allocated, zeroed and written back together with one fence,
 * each with its metadata and its directory array ready. SMOs take arrays
 * from them (an insert that fits its array allocates nothing at all); a
 * reserve below PFART_RES_LOW is refilled before the next SMO's section,
 * under @smo, outside any lock. An SMO that empties one (a split into
 * many groups) allocates the rest directly, GFP_ATOMIC; when that fails
 * (-ENOMEM, nothing changed) the class's @boost doubles its next target
 * and pfart.c's smo_put() runs the SMO again. A reserve array
 * is named by nothing: a crash frees it through the recovery trace, a
 * clean close frees it.
 */
#include <linux/errno.h>
#include <linux/kernel.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include "lock.h"
#include "persist.h"
#include "pfart.h"

/* ---- directory ------------------------------------------------------------ */

static struct pfart_meta **mdir_slot(const struct pfart *t, u64 off)
{
	u64 rel = off - t->data_off;
	struct pfart_meta **a;

	if (off < t->data_off || rel >> PMIDX_CHUNK_SHIFT >= t->nchunks)
		return NULL;
	/* acquire: pairs with the cmpxchg that published the zeroed array */
	a = smp_load_acquire(&t->mdir[rel >> PMIDX_CHUNK_SHIFT]);
	if (!a)
		return NULL;
	return &a[(rel & (PMIDX_CHUNK_SIZE - 1)) >> PFART_MDIR_SHIFT];
}

struct pfart_meta *pfart_meta_of(const struct pfart *t, u64 off)
{
	struct pfart_meta **s = mdir_slot(t, off);

	return s ? READ_ONCE(*s) : NULL;
}

/* Context: @off's directory array exists (pfart_mdir_ensure()). */
void pfart_meta_set(struct pfart *t, u64 off, struct pfart_meta *m)
{
	struct pfart_meta **s = mdir_slot(t, off);

	/* release: the metadata is written before a reader finds it */
	smp_store_release(s, m);
}

int pfart_mdir_ensure(struct pfart *t, u64 off, gfp_t gfp)
{
	u64 c = (off - t->data_off) >> PMIDX_CHUNK_SHIFT;
	struct pfart_meta **a;

	if (off < t->data_off || c >= t->nchunks)
		return -EINVAL;
	/* acquire: pairs with the cmpxchg below */
	if (smp_load_acquire(&t->mdir[c]))
		return 0;
	a = kcalloc(PFART_MDIR_SLOTS, sizeof(*a), gfp);
	if (!a)
		return -ENOMEM;
	if (cmpxchg(&t->mdir[c], NULL, a))
		kfree(a);	/* a recovery worker was first */
	else
		atomic64_add(PFART_MDIR_SLOTS * sizeof(*a), &t->dram_bytes);
	return 0;
}

int pfart_mdir_init(struct pfart *t)
{
	t->data_off = t->pool->alloc.data_off;
	t->nchunks = t->pool->alloc.nr_chunks;
	t->mdir = kvcalloc(t->nchunks, sizeof(*t->mdir), GFP_KERNEL);
	if (!t->mdir)
		return -ENOMEM;
	atomic64_add(t->nchunks * sizeof(*t->mdir), &t->dram_bytes);
	return 0;
}

/* Context: no leaf array is left (all retired and freed, or dropped). */
void pfart_mdir_free(struct pfart *t)
{
	u64 c, i;

	if (!t->mdir)
		return;
	for (c = 0; c < t->nchunks; c++) {
		if (!t->mdir[c])
			continue;
		for (i = 0; i < PFART_MDIR_SLOTS; i++)
			kfree(t->mdir[c][i]);
		kfree(t->mdir[c]);
	}
	kvfree(t->mdir);
	t->mdir = NULL;
}

/* ---- metadata ------------------------------------------------------------- */

/* Bytes of the metadata of @cap entries: fp and klen, then pos and order. */
static size_t meta_size(u32 cap)
{
	size_t order = cap > PFART_ENTRIES_LEAF_MAX ? sizeof(u16) : sizeof(u8);

	return sizeof(struct pfart_meta) +
	       round_up(cap, 8) * (2 * sizeof(u8) + sizeof(u16) + order);
}

struct pfart_meta *pfart_meta_alloc(struct pfart *t, u8 klass, gfp_t gfp)
{
	u32 cap = pfart_cap(klass), pad = round_up(cap, 8);
	size_t sz = meta_size(cap);
	struct pfart_meta *m = kzalloc(sz, gfp);

	if (!m)
		return NULL;
	BUILD_BUG_ON(sizeof(struct pfart_meta) % sizeof(u64));
	m->cap = cap;
	m->fp = (u8 *)(m + 1);		/* 8-byte aligned: pfart_leaf_find() */
	m->klen = m->fp + pad;
	m->pos = (u16 *)(m->klen + pad);
	m->order = m->pos + pad;
	atomic64_add(sz, &t->dram_bytes);
	return m;
}

void pfart_meta_free(struct pfart *t, struct pfart_meta *m)
{
	if (!m)
		return;
	atomic64_sub(meta_size(m->cap), &t->dram_bytes);
	kfree(m);
}

/* ---- leaf arrays: allocation, retirement ------------------------------------ */

/*
 * A zeroed leaf array *@off written back (the caller fences), with its
 * metadata *@m. Return: 0, -ENOSPC (the pool is full) or -ENOMEM (the
 * metadata's DRAM, atomic unless @gfp may sleep).
 */
static int leaf_alloc(struct pfart *t, u8 klass, u64 *off,
		      struct pfart_meta **m, gfp_t gfp)
{
	u32 size = pfart_leaf_size(klass);

	*off = pmidx_alloc(&t->pool->alloc, size);
	if (!*off)
		return -ENOSPC;
	*m = pfart_meta_alloc(t, klass, gfp | __GFP_NOWARN);
	if (!*m || pfart_mdir_ensure(t, *off, gfp | __GFP_NOWARN)) {
		pfart_meta_free(t, *m);
		pmidx_free(&t->pool->alloc, *off);
		return -ENOMEM;
	}
	memset(pfart_ptr(t, *off), 0, size);
	pfart_wb(t, pfart_ptr(t, *off), size);
	return 0;
}

/*
 * Top every reserve up to PFART_RES_TARGET when it is under
 * PFART_RES_LOW (above leaf_max: to PFART_RES_HUGE when it is empty and
 * was wanted): many arrays at once, one fence. Context: under @smo,
 * outside any section; may sleep. Return: 0, or -ENOSPC/-ENOMEM when
 * nothing could be added to a reserve of leaf_max or less that is empty.
 */
int pfart_reserve_fill(struct pfart *t)
{
	struct pfart_meta *m;
	bool added = false;
	int k, err, ret = 0;
	u64 off;

	lockdep_assert_held(&t->smo);
	for (k = 0; k < PFART_NR_CLASSES; k++) {
		struct pfart_reserve *r = &t->res[k];
		bool huge = k > t->max_class;
		u32 target = (huge ? PFART_RES_HUGE : PFART_RES_TARGET) << r->boost;
		struct pfart_spare *s;

		if (!r->boost &&
		    (huge ? r->n || !r->wanted : r->n >= PFART_RES_LOW))
			continue;
		if (r->cap < target) {
			s = krealloc_array(r->s, target, sizeof(*s), GFP_KERNEL);
			if (!s) {
				ret = -ENOMEM;
				continue;
			}
			r->s = s;
			r->cap = target;
		}
		while (r->n < target) {
			err = leaf_alloc(t, k, &off, &m, GFP_KERNEL);
			if (err) {
				if (!r->n && !huge)
					ret = err;
				break;
			}
			r->s[r->n].off = off;
			r->s[r->n].m = m;
			r->n++;
			added = true;
		}
		pfart_stat_inc(t, res_fills);
	}
	if (added)
		pfart_fence(t);
	return ret;
}

/*
 * An SMO got through (or failed for another reason): back to the normal
 * targets. What a boosted fill added is taken before the next refill.
 * Context: under @smo.
 */
void pfart_reserve_settle(struct pfart *t)
{
	int k;

	lockdep_assert_held(&t->smo);
	for (k = 0; k < PFART_NR_CLASSES; k++)
		t->res[k].boost = 0;
}

/* Clean close, drop-index, teardown: the reserves go back to the allocator. */
void pfart_reserve_drain(struct pfart *t)
{
	int k;

	for (k = 0; k < PFART_NR_CLASSES; k++) {
		struct pfart_reserve *r = &t->res[k];

		while (r->n) {
			r->n--;
			pfart_meta_free(t, r->s[r->n].m);
			pmidx_free(&t->pool->alloc, r->s[r->n].off);
		}
		kfree(r->s);
		r->s = NULL;
		r->cap = 0;
	}
}

/*
 * A zeroed leaf array of class @klass with its metadata (*@m, installed in
 * the directory), from the reserve, else allocated here. Context: SMO
 * (under @smo, inside a section): the fence of the SMO's batch covers a
 * direct allocation's write-back. Return: the array, ERR_PTR(-ENOSPC)
 * when the pool is full, ERR_PTR(-ENOMEM) when atomic memory is short
 * (the class is marked wanted: pfart_reserve_fill() then fills it).
 */
struct pfart_leaf *pfart_leaf_take(struct pfart *t, u8 klass,
				   struct pfart_meta **m)
{
	struct pfart_reserve *r = &t->res[klass];
	u64 off;
	int ret;

	lockdep_assert_held(&t->smo);
	if (r->n) {
		r->n--;
		off = r->s[r->n].off;
		*m = r->s[r->n].m;
		pfart_stat_inc(t, res_takes);
	} else {
		r->wanted = true;
		ret = leaf_alloc(t, klass, &off, m, GFP_ATOMIC);
		if (ret == -ENOMEM && r->boost < PFART_RES_BOOST_MAX)
			r->boost++;
		if (ret)
			return ERR_PTR(ret);
		pfart_stat_inc(t, direct_allocs);
	}
	pfart_meta_set(t, off, *m);
	pfart_stat_inc(t, leaves);
	pfart_stat_add(t, leaf_bytes, pfart_leaf_size(klass));
	return pfart_ptr(t, off);
}

/* A leaf array built and never published: straight back. */
void pfart_leaf_drop(struct pfart *t, struct pfart_leaf *l)
{
	u64 off = pfart_off(t, l);

	pfart_stat_add(t, leaves, -1);
	pfart_stat_add(t, leaf_bytes, -(s64)pfart_leaf_size(l->klass));
	pfart_meta_free(t, pfart_meta_of(t, off));
	pfart_meta_set(t, off, NULL);
	pmidx_free(&t->pool->alloc, off);
}

/*
 * The epoch callback of a retired leaf array: metadata, then the object.
 * An array a reader found poisoned is not freed: stores through the DAX
 * mapping need not clear poison, and whatever the allocator put there
 * next would be read in place (headers, inner nodes) and take the
 * machine check. It stays allocated until detach; the next attach's
 * trace finds it unreachable (and refuses a pool whose data area has
 * known bad blocks).
 */
static void leaf_free_cb(void *ctx, u64 off)
{
	struct pfart *t = ctx;
	struct pfart_meta *m = pfart_meta_of(t, off);
	bool poisoned = m && READ_ONCE(m->media_bad);

	pfart_meta_free(t, m);
	pfart_meta_set(t, off, NULL);
	if (!poisoned)
		pmidx_free(&t->pool->alloc, off);
}

/* An unpublished leaf array (its word's store is durable). */
void pfart_leaf_retire(struct pfart *t, struct pfart_leaf *l)
{
	pfart_stat_add(t, leaves, -1);
	pfart_stat_add(t, leaf_bytes, -(s64)pfart_leaf_size(l->klass));
	pmidx_epoch_retire_fn(&t->pool->epoch, pfart_off(t, l), leaf_free_cb, t);
}

void pfart_inner_retire(struct pfart *t, u64 off)
{
	struct pfart_inner *n = pfart_ptr(t, off);

	pfart_stat_add(t, inners, -1);
	pfart_stat_add(t, inner_bytes, -(s64)pfart_inner_obj(n->type));
	pmidx_epoch_retire(&t->pool->epoch, off);
}
