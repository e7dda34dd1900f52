// SPDX-License-Identifier: GPL-2.0
/*
 * B^3-tree structural checker (PMIDX_OP_CHECK).
 *
 * Runs online: writers are held at their entry gate while it runs (they
 * have nothing half done then: an SMO runs inside one writer section),
 * readers go on. Through b3_walk() with validation it checks
 *   - every level: pages of the index (magic, owner, crc, allocator
 *     object of the page size), on the right level, low keys strictly
 *     rising along the sibling chain from an empty first low key; the
 *     root page alone on its level;
 *   - every page's BST: acyclic, child words naming slots or pages of the
 *     level below, nodes with valid meta and check words, keys strictly
 *     rising in order and inside [low(page), low(sibling)), children
 *     starting at or below their separator (a leftover of a half-done SMO
 *     is a healthy state: its child word names a page to the left), and
 *     every child word naming a page of the chain of the level below (a
 *     page out of its chain is retired or leaked: smo.c, walk.c);
 *   - ownership: no page or blob referenced twice, each allocated, each
 *     blob well formed with its key's length;
 *   - the allocator's commit bits (committed-mode review L2): no link
 *     store is in flight, so every page and blob reached is committed on
 *     media (a link store whose txn missed it would lose it at the next
 *     crash); when the index is the pool's only committed-mode one, the
 *     commit bits on media are exactly those (one more would leak);
 *   - the count: live keys against the per-CPU key counters (after a
 *     crash attach, which counts nothing, the first CHECK sets them).
 */
#include <linux/errno.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include "core/alloc.h"
#include "core/blob.h"
#include "b3.h"

/**
 * b3_freeze - hold new writers off and wait for running ones
 *
 * A writer announces its epoch section, then reads @frozen (full barrier
 * in between); we set @frozen, then wait for every section running now
 * to end. So no writer runs after this returns, and none starts before
 * b3_thaw().
 *
 * Context: process context, may sleep; not inside a section.
 */
void b3_freeze(struct b3 *t)
{
	mutex_lock(&t->gate);
	WRITE_ONCE(t->frozen, true);
	/* pairs with the one in pmidx_epoch_enter() */
	smp_mb();
	pmidx_epoch_barrier(&t->pool->epoch);
}

void b3_thaw(struct b3 *t)
{
	/* the walk's reads happen before any writer that sees this */
	smp_store_release(&t->frozen, false);
	mutex_unlock(&t->gate);
}

static int refs_add(struct b3_walk *w, u64 off)
{
	if (b3_offs_add(w->ctx, off)) {
		w->why = "out of memory";
		return -ENOMEM;
	}
	return 0;
}

static int add_page(struct b3 *t, struct b3_walk *w, u64 off)
{
	if (!pmidx_alloc_valid(&t->pool->alloc, off, B3_PAGE_SIZE)) {
		w->why = "page not allocated";
		return -EUCLEAN;
	}
	if (!pmidx_alloc_media_committed(&t->pool->alloc, off)) {
		w->why = "page not committed on media";
		return -EUCLEAN;
	}
	return refs_add(w, off);
}

static int add_blob(struct b3 *t, struct b3_walk *w, u64 off)
{
	u32 len;

	if (!pmidx_alloc_valid(&t->pool->alloc, off, sizeof(struct pmidx_blob)) ||
	    pmidx_blob_read_len(t->pool, off, &len) ||
	    !pmidx_alloc_valid(&t->pool->alloc, off, sizeof(struct pmidx_blob) + len)) {
		w->why = "blob not allocated or malformed";
		return -EUCLEAN;
	}
	if (!pmidx_alloc_media_committed(&t->pool->alloc, off)) {
		w->why = "blob not committed on media";
		return -EUCLEAN;
	}
	return refs_add(w, off);
}

/* Any object referenced twice? */
static bool has_dup(struct b3_offs *r)
{
	u64 i;

	b3_offs_sort(r);
	for (i = 1; i < r->n; i++) {
		if (r->off[i] == r->off[i - 1])
			return true;
		if (!(i & 0xffff))
			cond_resched();
	}
	return false;
}

int b3_check(struct b3 *t, u64 *keys, const char **why)
{
	struct b3_offs r = {};
	struct b3_walk w = {
		.page = add_page, .blob = add_blob, .ctx = &r, .validate = true,
	};
	s64 counted;
	u64 bits;
	int ret;

	b3_freeze(t);
	ret = b3_walk(t, &w);
	if (!ret && has_dup(&r)) {
		w.why = "object referenced twice";
		ret = -EUCLEAN;
	}
	/* every object reached is committed (above): more bits are leaks */
	if (!ret && pmidx_index_commit_bits(t->idx, &bits) &&
	    bits != w.pages + w.blobs) {
		w.why = "commit bits on media for objects the index does not reach";
		ret = -EUCLEAN;
	}
	if (!ret && t->approx) {
		/*
		 * The first count since a crash attach (b3_recover()): the
		 * per-CPU counters hold the changes since then; writers are
		 * frozen, so set them from the walk.
		 */
		b3_counters_set(t, w.keys, w.pages, w.blob_bytes);
		WRITE_ONCE(t->approx, false);
	}
	counted = b3_sum_keys(t);
	if (!ret && counted != (s64)w.keys) {
		w.why = "key counter disagrees with the leaves";
		ret = -EUCLEAN;
	}
	b3_thaw(t);
	kvfree(r.off);
	*keys = w.keys;
	if (ret)
		*why = w.why;
	return ret;
}
