// SPDX-License-Identifier: GPL-2.0
/*
 * uTree chunk-based list-node allocation (paper §4.2, "memory allocation
 * consistency").
 *
 * List nodes are carved out of 64 KiB node chunks taken from the pool
 * allocator. A chunk is linked into the index's persistent chunk list
 * (root->chunks, then each header's prev) before any of its nodes is
 * handed out, so recovery finds every chunk and marks it once. Which
 * nodes are free is DRAM state only: a bitmap per chunk, rebuilt at open
 * from what the list reaches. So a node allocated but never linked when
 * the power went is simply free again.
 *
 * Fast path: a per-CPU cache of free node offsets; refills and drains
 * move UT_MAG_BATCH nodes at a time under alloc_lock. A removed node is
 * handed to the pool's epochs (typed retire) and comes back to a cache
 * only once no reader can still see it.
 *
 * Chunks are not returned to the pool while the index is open; a clean
 * close gives back those without a live node (ut_chunks_trim()), and
 * drop-index frees them all.
 */
#include <linux/bitmap.h>
#include <linux/bitops.h>
#include <linux/crc32.h>
#include <linux/errno.h>
#include <linux/slab.h>
#include "core/blob.h"
#include "core/epoch.h"
#include "utree.h"

u32 ut_chunk_hdr_crc(const struct ut_chunk_hdr *h)
{
	u32 crc = __crc32c_le(~0U, (const u8 *)&h->magic, sizeof(h->magic));

	BUILD_BUG_ON(offsetof(struct ut_chunk_hdr, id) !=
		     offsetof(struct ut_chunk_hdr, owner) + sizeof(h->owner));
	crc = __crc32c_le(crc, (const u8 *)&h->owner,
			  sizeof(h->owner) + sizeof(h->id));
	return ~crc;
}

/*
 * Does [@off, @off + @size) lie in the pool's data area? Checked before
 * an offset read from media reaches the allocator, whose lookups take
 * the chunk number as 32 bits (a wild offset could alias a real chunk).
 */
bool ut_in_data(const struct utree *t, u64 off, u64 size)
{
	const struct pmidx_alloc *a = &t->pool->alloc;
	u64 span = (u64)a->nr_chunks << PMIDX_CHUNK_SHIFT;

	return off >= a->data_off && off - a->data_off < span &&
	       size <= span - (off - a->data_off);
}

/* ---- chunk directory ------------------------------------------------- */

/* Lock-free: writers publish with dir_set() under alloc_lock. */
struct ut_chunk *ut_chunk_get(const struct utree *t, u32 id)
{
	struct ut_chunk **l2;

	if (id >= READ_ONCE(t->nr_chunks))
		return NULL;
	/* pairs with dir_set(): the zeroed level-2 array before its pointer */
	l2 = smp_load_acquire(&t->dir[id / UT_DIR_L2]);
	return l2 ? READ_ONCE(l2[id % UT_DIR_L2]) : NULL;
}

/* Publish a zeroed level-2 array @l2 in @slot. Context: as dir_set(). */
static void dir_level_set(struct utree *t, struct ut_chunk ***slot,
			  struct ut_chunk **l2)
{
	/* pairs with ut_chunk_get(): zeroed before it is seen */
	smp_store_release(slot, l2);
	atomic64_add(UT_DIR_L2 * sizeof(*l2), &t->dram_bytes);
}

/*
 * Enter @c in the directory. Context: alloc_lock held or no concurrency;
 * ut_chunk_get() reads it without the lock.
 */
static int dir_set(struct utree *t, struct ut_chunk *c, gfp_t gfp)
{
	struct ut_chunk ***slot = &t->dir[c->id / UT_DIR_L2];

	if (c->id >= UT_DIR_MAX)
		return -ENOSPC;
	if (!*slot) {
		struct ut_chunk **l2 = kcalloc(UT_DIR_L2, sizeof(**slot),
					       gfp | __GFP_NOWARN);

		if (!l2)
			return -ENOMEM;
		dir_level_set(t, slot, l2);
	}
	if ((*slot)[c->id % UT_DIR_L2])
		return -EEXIST;
	WRITE_ONCE((*slot)[c->id % UT_DIR_L2], c);
	if (c->id >= t->nr_chunks)
		WRITE_ONCE(t->nr_chunks, c->id + 1);
	/* STATS reads it without the lock */
	WRITE_ONCE(t->live_chunks, t->live_chunks + 1);
	return 0;
}

/**
 * ut_chunk_of - the chunk holding the list node at @off
 * @slot: node index inside the chunk
 *
 * Validates @off (read from media or from the tree): it must be a node
 * slot of a chunk of this index.
 * Return: the chunk, or NULL.
 */
struct ut_chunk *ut_chunk_of(const struct utree *t, u64 off, u32 *slot)
{
	u64 data = t->pool->alloc.data_off, end, base, rel;
	const struct ut_chunk_hdr *h;
	struct ut_chunk *c;

	end = data + ((u64)t->pool->alloc.nr_chunks << PMIDX_CHUNK_SHIFT);
	if (off < data || off >= end)
		return NULL;
	base = data + ((off - data) & ~(u64)(UT_CHUNK_SIZE - 1));
	rel = off - base;
	if (rel < UT_CHUNK_HDR || (rel - UT_CHUNK_HDR) % UT_NODE_SIZE)
		return NULL;
	h = pmidx_ptr(t->pm, base);
	c = ut_chunk_get(t, le32_to_cpu(READ_ONCE(h->id)));
	if (!c || c->off != base)
		return NULL;
	*slot = (rel - UT_CHUNK_HDR) / UT_NODE_SIZE;
	return c;
}

/*
 * A chunk's DRAM side. Growth runs in a section under alloc_lock and
 * allocates atomically; when that fails it takes what ut_alloc_reserve()
 * set aside.
 */
static struct ut_chunk *chunk_new_dram(struct utree *t, u64 off, u32 id,
				       gfp_t gfp)
{
	struct ut_chunk *c = kzalloc(sizeof(*c), gfp | __GFP_NOWARN);
	int ret;

	if (!c && !gfpflags_allow_blocking(gfp)) {
		lockdep_assert_held(&t->alloc_lock);
		swap(c, t->spare);
	}
	if (!c)
		return ERR_PTR(-ENOMEM);
	c->off = off;
	c->id = id;
	INIT_LIST_HEAD(&c->partial);
	ret = dir_set(t, c, gfp);
	if (ret) {
		kfree(c);
		return ERR_PTR(ret);
	}
	atomic64_add(sizeof(*c), &t->dram_bytes);
	return c;
}

/**
 * ut_alloc_reserve - set aside what the next chunk growth needs in DRAM
 *
 * Its descriptor, and the directory level its id falls in, for when
 * atomic memory runs out (chunk_new_dram()).
 * Context: outside any section; may sleep.
 * Return: 0 or -ENOMEM.
 */
int ut_alloc_reserve(struct utree *t)
{
	struct ut_chunk *c = kzalloc(sizeof(*c), GFP_KERNEL);
	struct ut_chunk **l2 = NULL, ***slot;
	u32 id = READ_ONCE(t->nr_chunks);
	int ret = c ? 0 : -ENOMEM;

	if (id >= UT_DIR_MAX)
		id = UT_DIR_MAX - 1;	/* growth will say -ENOSPC */
	slot = &t->dir[id / UT_DIR_L2];
	if (!READ_ONCE(*slot)) {
		l2 = kcalloc(UT_DIR_L2, sizeof(*l2), GFP_KERNEL);
		if (!l2)
			ret = -ENOMEM;
	}
	spin_lock(&t->alloc_lock);
	if (!t->spare)
		swap(c, t->spare);
	if (l2 && !*slot) {
		dir_level_set(t, slot, l2);
		l2 = NULL;
	}
	/* what the next growth needs is there, ours or another's */
	if (t->spare && *slot)
		ret = 0;
	spin_unlock(&t->alloc_lock);
	kfree(l2);
	kfree(c);
	return ret;
}

/**
 * ut_chunk_register - recovery found the chunk @off with number @id
 * Return: 0, -EUCLEAN for a repeated id, -ENOMEM.
 */
int ut_chunk_register(struct utree *t, u64 off, u32 id)
{
	struct ut_chunk *c;

	if (id >= UT_DIR_MAX || ut_chunk_get(t, id))
		return -EUCLEAN;
	c = chunk_new_dram(t, off, id, GFP_KERNEL);
	return PTR_ERR_OR_ZERO(c);
}

/* Rebuild free counts and the partial list from the used bitmaps. */
void ut_alloc_rebuild(struct utree *t)
{
	struct ut_chunk *c;
	u32 id;

	INIT_LIST_HEAD(&t->partial);
	for (id = 0; id < t->nr_chunks; id++) {
		c = ut_chunk_get(t, id);
		if (!c)
			continue;
		c->nfree = UT_CHUNK_NODES - bitmap_weight(c->used, UT_CHUNK_NODES);
		c->hint = 0;
		INIT_LIST_HEAD(&c->partial);
		if (c->nfree)
			list_add_tail(&c->partial, &t->partial);
	}
}

/* ---- growing --------------------------------------------------------- */

/*
 * First use of an empty index: magic, then the tracker table. A crash
 * in between leaves a valid root without trackers (optional) and an
 * unreferenced table that recovery frees.
 */
static int root_init(struct utree *t)
{
	struct ut_trackers *tr;
	u64 off;

	if (le64_to_cpu(t->root->magic) == UT_ROOT_MAGIC)
		return 0;
	off = pmidx_alloc(&t->pool->alloc, sizeof(*tr));
	if (!off)
		return -ENOSPC;
	tr = pmidx_ptr(t->pm, off);
	pmidx_memset_persist(t->pm, tr, 0, sizeof(*tr));
	pmidx_store64_persist(t->pm, &t->root->magic, UT_ROOT_MAGIC);
	pmidx_store64_persist(t->pm, &t->root->trackers, off);
	/* the table is durable and zeroed before a writer may use it */
	smp_store_release(&t->trackers, tr);
	return 0;
}

/*
 * A new node chunk, durably linked into the chunk list before use.
 * Context: alloc_lock held; does not sleep.
 * Return: the chunk, ERR_PTR(-ENOSPC) (the pool or the directory is
 * full) or ERR_PTR(-ENOMEM) (atomic DRAM, and nothing reserved).
 */
static struct ut_chunk *chunk_grow(struct utree *t)
{
	struct pmidx_alloc *a = &t->pool->alloc;
	struct ut_chunk_hdr *h;
	struct ut_chunk *c;
	u64 off;

	if (root_init(t) || t->nr_chunks >= UT_DIR_MAX)
		return ERR_PTR(-ENOSPC);
	off = pmidx_alloc(a, UT_CHUNK_SIZE);
	if (!off)
		return ERR_PTR(-ENOSPC);
	/* the pool allocator aligns size classes */
	c = ERR_PTR(-ENOSPC);
	if (!((off - a->data_off) & (UT_CHUNK_SIZE - 1)))
		c = chunk_new_dram(t, off, t->nr_chunks, GFP_ATOMIC);
	if (IS_ERR(c))
		goto bad;
	h = pmidx_ptr(t->pm, off);
	memset(h, 0, sizeof(*h));
	h->magic = cpu_to_le64(UT_CHUNK_MAGIC);
	h->prev = t->root->chunks;
	h->owner = cpu_to_le64(t->root_off);
	h->id = cpu_to_le32(c->id);
	h->crc = cpu_to_le32(ut_chunk_hdr_crc(h));
	pmidx_persist(t->pm, h, sizeof(*h));
	pmidx_store64_persist(t->pm, &t->root->chunks, off);
	c->nfree = UT_CHUNK_NODES;
	list_add(&c->partial, &t->partial);
	return c;
bad:
	pmidx_free(a, off);
	return c;
}

/* ---- per-CPU caches -------------------------------------------------- */

/*
 * Context: @m->lock held.
 * Return: 0, or why no more nodes could be had (chunk_grow()).
 */
static int mag_refill(struct utree *t, struct ut_mag *m)
{
	struct ut_chunk *c;
	u32 slot, first = m->n, i;
	int ret = 0;

	spin_lock(&t->alloc_lock);
	while (m->n - first < UT_MAG_BATCH) {
		c = list_first_entry_or_null(&t->partial, struct ut_chunk,
					     partial);
		if (!c) {
			c = chunk_grow(t);
			if (IS_ERR(c)) {
				ret = PTR_ERR(c);
				break;
			}
		}
		while (c->nfree && m->n - first < UT_MAG_BATCH) {
			slot = find_next_zero_bit(c->used, UT_CHUNK_NODES, c->hint);
			if (slot >= UT_CHUNK_NODES)
				slot = find_first_zero_bit(c->used, UT_CHUNK_NODES);
			__set_bit(slot, c->used);
			c->nfree--;
			c->hint = slot + 1;
			m->off[m->n++] = c->off + UT_CHUNK_HDR +
					 (u64)slot * UT_NODE_SIZE;
		}
		if (!c->nfree)
			list_del_init(&c->partial);
	}
	spin_unlock(&t->alloc_lock);
	/* pop in ascending address order: neighbours in time are in space */
	for (i = 0; i < (m->n - first) / 2; i++)
		swap(m->off[first + i], m->off[m->n - 1 - i]);
	return ret;
}

/* Return all but @keep cached nodes to their chunks. */
static void mag_drain(struct utree *t, struct ut_mag *m, u32 keep)
{
	struct ut_chunk *c;
	u32 slot;

	spin_lock(&t->alloc_lock);
	while (m->n > keep) {
		c = ut_chunk_of(t, m->off[--m->n], &slot);
		if (WARN_ON_ONCE(!c || !test_bit(slot, c->used)))
			continue;
		__clear_bit(slot, c->used);
		if (!c->nfree++)
			list_add(&c->partial, &t->partial);
	}
	spin_unlock(&t->alloc_lock);
}

/**
 * ut_node_alloc - a free list node (contents undefined)
 * @off: its pool offset
 *
 * Context: any, does not sleep.
 * Return: 0; -ENOSPC when the pool is full; -ENOMEM when a new chunk's
 * DRAM side could not be had atomically (ut_alloc_reserve() may sleep
 * to make it).
 */
int ut_node_alloc(struct utree *t, u64 *off)
{
	struct ut_mag *m = per_cpu_ptr(t->mag, raw_smp_processor_id());
	int ret = 0;

	spin_lock(&m->lock);
	if (!m->n)
		ret = mag_refill(t, m);
	if (m->n) {
		*off = m->off[--m->n];
		ret = 0;
	}
	spin_unlock(&m->lock);
	return ret;
}

/**
 * ut_node_free - put back a node nobody can reach: never published, or
 *                past its epoch grace period
 */
void ut_node_free(struct utree *t, u64 off)
{
	struct ut_mag *m = per_cpu_ptr(t->mag, raw_smp_processor_id());

	spin_lock(&m->lock);
	if (m->n == UT_MAG_SIZE)
		mag_drain(t, m, UT_MAG_SIZE - UT_MAG_BATCH);
	m->off[m->n++] = off;
	spin_unlock(&m->lock);
}

static void node_free_cb(void *ctx, u64 off)
{
	ut_node_free(ctx, off);
}

/**
 * ut_node_retire - free an unlinked node once no reader can see it
 *
 * Context: outside the caller's epoch section (a retire may have to wait
 * for the epoch when memory is short), or inside it once room was made
 * there (a no-wait writer: utree.c writer_enter()).
 */
void ut_node_retire(struct utree *t, u64 off)
{
	pmidx_epoch_retire_fn(&t->pool->epoch, off, node_free_cb, t);
}

/**
 * ut_chunks_trim - unlink and free the chunks no live node uses
 *
 * One durable store unlinks a chunk (its successor's prev, or the root's
 * chunks word); a power cut after it leaves an unreachable chunk that
 * the next (tracing) attach frees.
 * Context: clean close, no user left, retired nodes collected.
 */
void ut_chunks_trim(struct utree *t)
{
	__le64 *link = &t->root->chunks;
	struct ut_chunk_hdr *h;
	struct ut_chunk *c;
	u64 off;
	int cpu;

	for_each_possible_cpu(cpu)
		mag_drain(t, per_cpu_ptr(t->mag, cpu), 0);
	while ((off = le64_to_cpu(*link))) {
		h = pmidx_ptr(t->pm, off);
		c = ut_chunk_get(t, le32_to_cpu(h->id));
		if (!c || c->off != off || c->nfree != UT_CHUNK_NODES) {
			link = &h->prev;
			continue;
		}
		pmidx_store64_persist(t->pm, link, le64_to_cpu(h->prev));
		pmidx_free(&t->pool->alloc, off);
		t->dir[c->id / UT_DIR_L2][c->id % UT_DIR_L2] = NULL;
		list_del(&c->partial);
		WRITE_ONCE(t->live_chunks, t->live_chunks - 1);
		atomic64_sub(sizeof(*c), &t->dram_bytes);
		kfree(c);
	}
}

/* ---- blobs ----------------------------------------------------------- */

u64 ut_blob_write(struct utree *t, const void *data, u32 len)
{
	u64 off = pmidx_blob_write(t->pool, data, len);

	if (off)
		this_cpu_add(t->pcpu->blob_bytes,
			     pmidx_alloc_size(&t->pool->alloc, off));
	return off;
}

/* A blob that was never published. */
void ut_blob_free(struct utree *t, u64 off)
{
	this_cpu_sub(t->pcpu->blob_bytes, pmidx_alloc_size(&t->pool->alloc, off));
	pmidx_free(&t->pool->alloc, off);
}

/* A blob no longer referenced: freed after the epoch grace period. */
void ut_blob_retire(struct utree *t, u64 off)
{
	this_cpu_sub(t->pcpu->blob_bytes, pmidx_alloc_size(&t->pool->alloc, off));
	pmidx_blob_retire(t->pool, off);
}

/* ---- setup / teardown ------------------------------------------------ */

int ut_alloc_init(struct utree *t)
{
	int cpu;

	spin_lock_init(&t->alloc_lock);
	INIT_LIST_HEAD(&t->partial);
	t->dir = kvcalloc(UT_DIR_L1, sizeof(*t->dir), GFP_KERNEL);
	t->mag = alloc_percpu(struct ut_mag);
	if (!t->dir || !t->mag)
		return -ENOMEM;
	atomic64_add(UT_DIR_L1 * sizeof(*t->dir), &t->dram_bytes);
	for_each_possible_cpu(cpu)
		spin_lock_init(&per_cpu_ptr(t->mag, cpu)->lock);
	return 0;
}

/* DRAM only: the chunks stay on pmem. */
void ut_alloc_free(struct utree *t)
{
	u32 i, j;

	if (t->dir) {
		for (i = 0; i < UT_DIR_L1; i++) {
			if (!t->dir[i])
				continue;
			for (j = 0; j < UT_DIR_L2; j++)
				kfree(t->dir[i][j]);
			kfree(t->dir[i]);
		}
		kvfree(t->dir);
		t->dir = NULL;
	}
	kfree(t->spare);
	t->spare = NULL;
	free_percpu(t->mag);
	t->mag = NULL;
}
