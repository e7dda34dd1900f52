// SPDX-License-Identifier: GPL-2.0
/*
 * The b3 engine (kmod/engines/b3/) beyond the common engine tests:
 *  - structure: enough mixed-size keys (1..255 bytes) and values (0 up
 *    to 64 KiB) for leaf splits, internal page splits and root growth,
 *    then deletes down to a few keys (merges, root collapse), with the
 *    checker, scans (resume included), a clean and a crash re-attach,
 *    and a drop that leaves no object behind;
 *  - flushes per insert: the 2-flush commit of §3.2.1, measured;
 *  - threads: writers, lock-free readers and a scanner at once;
 *  - the ADR crash simulator (store-prefix model too) over a workload
 *    that splits, defragments and merges pages: every acknowledged op
 *    with its latest value after any crash, nothing unacknowledged, the
 *    checker passing, and the writers' lazy repair of what a crash cut
 *    short.
 *
 * Run: make -f tools/testing/user.mk B=DIR DIR/user/plain/b3-crash
 * Replay one failure: PMIDX_CRASH_POINT=P PMIDX_CRASH_VARIANT=V
 *   b3-crash --seed S --only NAME
 */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>
#include <linux/crc32.h>
#include <linux/prandom.h>
#include <shim/shim.h>
#include "core/engine.h"
#include "crashsim.h"
#include "engine-kv.h"
#include "harness.h"
#include "engines/b3/b3.h"

#define SZ		(256ULL << 20)

/* key n: 3..255 bytes, unique by its first 3 bytes, ordered by n */
static const u8 klens[] = { 8, 3, 8, 40, 8, 255, 8, 12, 5, 8, 100 };
static const u32 vlens[] = { 8, 0, 8, 5, 16, 8, 300, 8, 9, 65536 };

static const struct ekv_scheme kv = {
	EKV_LENS(klens, vlens), .prefix = 3, .scan_piece = 97,
};

/*
 * The checker's buffers: it runs while the workload is stopped inside an
 * ekv_put() of the workload's buffer.
 */
static u8 cvbuf[EKV_VMAX], cgbuf[EKV_VMAX];

static struct b3_pcpu b3_sum(struct pmidx_index *idx)
{
	struct b3 *t = idx->priv;
	struct b3_pcpu s = {};
	int cpu;

	for_each_possible_cpu(cpu) {
		struct b3_pcpu *c = per_cpu_ptr(t->pcpu, cpu);

		s.splits += c->splits;
		s.merges += c->merges;
		s.defrags += c->defrags;
		s.root_splits += c->root_splits;
		s.repairs += c->repairs;
		s.redists += c->redists;
		s.inner_merges += c->inner_merges;
		s.pages += c->pages;
		s.keys += c->keys;
		s.blob_bytes += c->blob_bytes;
	}
	return s;
}

/* An index's statistic, or ~0 when the engine left it out. */
static u64 ix_stat(struct pmidx_index *idx, unsigned int key)
{
	struct pmidx_stats st = {};

	pmidx_index_stats(idx, &st);
	return st.have & (1ULL << key) ? st.val[key] : ~0ULL;
}

/*
 * Committed-mode review L1: with no writer running, the key, page and
 * blob-byte counters (and so PM_BYTES) are those of the walk CHECK makes.
 */
static void counts_exact(struct pmidx_index *idx, const char *when)
{
	struct b3_walk w = { .validate = true };
	struct b3_pcpu s = b3_sum(idx);

	UT_ASSERT_MSG(!b3_walk(idx->priv, &w), "%s: walk: %s", when, w.why);
	UT_ASSERT_MSG(s.keys == w.keys && s.pages == w.pages &&
		      s.blob_bytes == w.blob_bytes,
		      "%s: counters %lld keys, %lld pages, %lld blob bytes; the walk %llu, %llu, %llu",
		      when, (long long)s.keys, (long long)s.pages,
		      (long long)s.blob_bytes, (unsigned long long)w.keys,
		      (unsigned long long)w.pages,
		      (unsigned long long)w.blob_bytes);
	UT_EQ(ix_stat(idx, PMIDX_STAT_PM_BYTES), PMIDX_INDEX_ROOT_SIZE +
	      w.pages * B3_PAGE_SIZE + w.blob_bytes);
}

static int height(struct pmidx_index *idx)
{
	struct b3 *t = idx->priv;
	u64 top = le64_to_cpu(t->root->top);

	return top ? b3_pg(t, top)->level + 1 : 0;
}

#define NBIG	30000

static void b3_structure(void)
{
	void *img = ut_img_alloc(SZ), *crash;
	struct pmidx_pool *pool = ut_pool_new(img, SZ);
	struct pmidx_index *idx;
	const char *why = NULL;
	u64 *state = calloc(NBIG, sizeof(*state)), i, j;
	struct b3_pcpu s;
	struct rnd_state rs;

	prandom_seed_state(&rs, ut_seed);
	UT_EQ(pmidx_index_create(pool, "b3", PMIDX_ENGINE_B3, &idx, &why), 0);
	/* random order, some values of 64 KiB */
	for (j = 0; j < NBIG; j++) {
		i = (j * 7919) % NBIG;
		UT_EQ(ekv_put(idx, i, i % 10 == 9 && i % 70 ? i + 1 : i), 0);
		state[i] = (i % 10 == 9 && i % 70 ? i + 1 : i) + 1;
	}
	ekv_verify(idx, state, NBIG, "after inserts");
	s = b3_sum(idx);
	ut_note("b3: %d levels, %llu splits (%llu root), %llu defrags after %u inserts",
		height(idx), (unsigned long long)s.splits,
		(unsigned long long)s.root_splits, (unsigned long long)s.defrags, NBIG);
	UT_ASSERT(height(idx) >= 3);	/* internal pages split too */
	for (i = 0; i < NBIG; i += 3) {	/* updates, size changes */
		UT_EQ(ekv_put(idx, i, i + 3), 0);
		state[i] = i + 4;
	}
	UT_EQ(ekv_del(idx, NBIG + 5), -ENOENT);
	for (j = 0; j < NBIG; j++) {	/* delete 95 % */
		i = (j * 104729) % NBIG;
		if (i % 20 == 0)
			continue;
		UT_EQ(ekv_del(idx, i), 0);
		state[i] = 0;
	}
	ekv_verify(idx, state, NBIG, "after deletes");
	counts_exact(idx, "after deletes");
	s = b3_sum(idx);
	ut_note("b3: %d levels, %llu merges, %llu defrags after deletes",
		height(idx), (unsigned long long)s.merges,
		(unsigned long long)s.defrags);
	UT_ASSERT(s.merges > 0);
	pmidx_pool_close(pool);
	pool = ut_pool_open(img, SZ);
	idx = pmidx_index_lookup(pool, "b3");
	UT_ASSERT(idx && idx->opened);
	ekv_verify(idx, state, NBIG, "after re-attach");
	for (i = 1; i < NBIG; i += 2) {
		UT_EQ(ekv_put(idx, i, i + 9), 0);
		state[i] = i + 10;
	}
	crash = ut_img_dup(img, SZ);
	{
		struct pmidx_pool *rec = ut_pool_open(crash, SZ);
		struct pmidx_index *ri = pmidx_index_lookup(rec, "b3");

		UT_ASSERT(rec->flags & PMIDX_POOL_F_RECOVERED);
		ekv_verify(ri, state, NBIG, "after crash recovery");
		UT_EQ(pmidx_index_drop(rec, "b3", &why), 0);
		UT_EQ(ut_stat(rec, PMIDX_STAT_ALLOC_OBJECTS), 0);
		pmidx_pool_close(rec);
	}
	UT_EQ(pmidx_index_drop(pool, "b3", &why), 0);
	UT_EQ(ut_stat(pool, PMIDX_STAT_ALLOC_OBJECTS), 0);
	pmidx_pool_close(pool);
	ut_img_free(crash, SZ);
	ut_img_free(img, SZ);
	free(state);
}

/*
 * Review L5, plan item 7: deleting 95 % of a 3-level tree gives the space
 * back. Leaves merge (or share out with a neighbour) whenever a delete
 * leaves one under B3_MERGE_UNDER, internal pages merge when a merge
 * leaves them under-full or childless, the root collapses: the pages
 * and PM_BYTES left are compared with those of a fresh tree of the
 * remaining keys (inserted in the same order).
 */
#define NSPACE	120000

static void b3_space_return(void)
{
	void *img = ut_img_alloc(SZ);
	struct pmidx_pool *pool = ut_pool_new(img, SZ);
	struct pmidx_index *idx, *fr;
	const char *why = NULL;
	u64 i, j, keys, full_pages, full_bytes, pages, bytes, fpages, fbytes;
	int full_h, h;
	struct b3_pcpu s;

	UT_EQ(pmidx_index_create(pool, "big", PMIDX_ENGINE_B3, &idx, &why), 0);
	for (j = 0; j < NSPACE; j++)
		UT_EQ(ekv_put(idx, (j * 7919) % NSPACE, 0), 0);	/* 8-byte values */
	full_h = height(idx);
	UT_ASSERT(full_h >= 3);
	full_pages = b3_sum(idx).pages;
	full_bytes = ix_stat(idx, PMIDX_STAT_PM_BYTES);
	for (j = 0; j < NSPACE; j++) {
		i = (j * 104729) % NSPACE;
		if (i % 20)
			UT_EQ(ekv_del(idx, i), 0);
	}
	UT_EQ(idx->ops->check(idx, &keys, &why), 0);
	UT_EQ(keys, NSPACE / 20);
	/*
	 * Committed-mode review M1: one writer, so the records held at once
	 * are one section's: a redistribution's three (core/alloc.h)
	 */
	UT_EQ(pool->alloc.intent_peak, PMIDX_TXN_SMO_MAX);
	s = b3_sum(idx);
	pages = s.pages;
	bytes = ix_stat(idx, PMIDX_STAT_PM_BYTES);
	h = height(idx);
	UT_EQ(pmidx_index_create(pool, "fresh", PMIDX_ENGINE_B3, &fr, &why), 0);
	for (j = 0; j < NSPACE; j++) {
		i = (j * 7919) % NSPACE;
		if (!(i % 20))
			UT_EQ(ekv_put(fr, i, 0), 0);
	}
	fpages = b3_sum(fr).pages;
	fbytes = ix_stat(fr, PMIDX_STAT_PM_BYTES);
	ut_note("b3: %u keys, %d levels: %llu pages, %llu KiB; 95 %% deleted: %d levels, %llu pages, %llu KiB (%llu merges: %llu redistributions, %llu of internal pages); a fresh tree of the %u left: %d levels, %llu pages, %llu KiB",
		NSPACE, full_h, (unsigned long long)full_pages,
		(unsigned long long)full_bytes >> 10, h,
		(unsigned long long)pages, (unsigned long long)bytes >> 10,
		(unsigned long long)s.merges, (unsigned long long)s.redists,
		(unsigned long long)s.inner_merges, NSPACE / 20, height(fr),
		(unsigned long long)fpages, (unsigned long long)fbytes >> 10);
	UT_ASSERT(s.inner_merges > 0 && s.redists > 0);
	/* merged pages hold 1/4..1/2 of a page, a fresh tree's 1/2..1 */
	UT_ASSERT_MSG(pages <= 3 * fpages, "%llu pages left, fresh %llu",
		      (unsigned long long)pages, (unsigned long long)fpages);
	UT_ASSERT(bytes <= 3 * fbytes);
	UT_ASSERT(h <= height(fr) + 1);
	pmidx_pool_close(pool);
	ut_img_free(img, SZ);
}

#define FILLER_MAX	4096

/*
 * After a put failed with -ENOSPC: take the pool's last pages into
 * @pages (FILLER_MAX entries), so that nothing is left but an index's
 * reserve. Return: how many.
 */
static unsigned int take_last_pages(struct pmidx_pool *pool, u64 *pages)
{
	unsigned int n;

	pmidx_epoch_barrier(&pool->epoch);
	for (n = 0; n < FILLER_MAX; n++) {
		pages[n] = pmidx_alloc_committed(&pool->alloc, B3_PAGE_SIZE);
		if (!pages[n])
			break;
	}
	UT_ASSERT(n < FILLER_MAX);
	return n;
}

/*
 * Review M2: a delete never fails for want of space. Fill a small pool
 * until puts fail with -ENOSPC, then delete every key (a node with two
 * children takes free slots of its page for a path copy, or copies the
 * page into the reserve page, refilled from the page that copy retired:
 * b3_del_two_children forces that): every delete succeeds, CHECK passes,
 * space comes back and can be used again.
 */
static void b3_full_pool(void)
{
	const u64 sz = 16ULL << 20;
	void *img = ut_img_alloc(sz);
	struct pmidx_pool *pool = ut_pool_new(img, sz);
	struct pmidx_index *idx;
	const char *why = NULL;
	u64 n, i, j, full_used, keys, cows, *filler = calloc(FILLER_MAX, 8);
	unsigned int nf;
	int ret = 0;

	UT_EQ(pmidx_index_create(pool, "full", PMIDX_ENGINE_B3, &idx, &why), 0);
	for (n = 0; n < 10000000; n++) {
		ret = ekv_put(idx, n, 0);	/* 8-byte keys and values */
		if (ret)
			break;
	}
	UT_EQ(ret, -ENOSPC);
	UT_ASSERT(n > 1000);
	/* the pool's last pages (a put failed on a key blob), taken */
	nf = take_last_pages(pool, filler);
	full_used = ut_stat(pool, PMIDX_STAT_ALLOC_USED_BYTES);
	UT_EQ(idx->ops->check(idx, &keys, &why), 0);
	UT_EQ(keys, n);
	cows = b3_sum(idx).defrags;
	for (j = 0; j < n; j++) {
		i = (j * 7919) % n;	/* n is no multiple of 7919 */
		ret = ekv_del(idx, i);
		if (ret)
			break;
	}
	UT_ASSERT_MSG(!ret, "delete %llu of %llu on a full pool: %d",
		      (unsigned long long)j, (unsigned long long)n, ret);
	cows = b3_sum(idx).defrags - cows;
	UT_EQ(idx->ops->check(idx, &keys, &why), 0);
	UT_EQ(keys, 0);
	pmidx_epoch_barrier(&pool->epoch);
	ut_note("b3: full pool after %llu puts (%llu KiB used, the last %u pages taken); every key deleted, %llu by a page copy; %llu KiB used after",
		(unsigned long long)n, (unsigned long long)full_used >> 10, nf,
		(unsigned long long)cows,
		(unsigned long long)ut_stat(pool, PMIDX_STAT_ALLOC_USED_BYTES) >> 10);
	UT_ASSERT(ut_stat(pool, PMIDX_STAT_ALLOC_USED_BYTES) < full_used / 2);
	while (nf--)
		pmidx_free(&pool->alloc, filler[nf]);
	free(filler);
	for (i = 0; i < n / 2; i++)	/* the space is usable again */
		UT_EQ(ekv_put(idx, i, 1), 0);
	UT_EQ(idx->ops->check(idx, &keys, &why), 0);
	UT_EQ(keys, n / 2);
	pmidx_pool_close(pool);
	ut_img_free(img, sz);
}

static int put_be(struct pmidx_index *idx, u64 n)
{
	__be64 k = cpu_to_be64(n);

	return idx->ops->put(idx, (const u8 *)&k, 8, (const u8 *)&n, 8, 0);
}

static int del_be(struct pmidx_index *idx, u64 n)
{
	__be64 k = cpu_to_be64(n);

	return idx->ops->del(idx, (const u8 *)&k, 8, 0);
}

static bool has_be(struct pmidx_index *idx, u64 n)
{
	__be64 k = cpu_to_be64(n);
	u8 v[8];
	u32 len = sizeof(v);

	return !idx->ops->get(idx, (const u8 *)&k, 8, v, &len) && len == 8 &&
	       !memcmp(v, &n, 8);
}

/*
 * A delete of a node with two children (b3.c succ_copy()): while its
 * page has free slots, a copy of the path to the successor and one link
 * store, no page copy; in a page without free slots, a page copy into the
 * index's reserve page, on a full pool too (review M2).
 */
static void b3_del_two_children(void)
{
	static const u64 more[] = { 1, 3, 5, 40, 50 };
	static const u64 live[] = { 1, 3, 4, 5, 18, 20, 30, 40, 50 };
	const u64 sz = 16ULL << 20;
	void *img = ut_img_alloc(sz);
	struct pmidx_pool *pool;
	struct pmidx_index *idx, *fill;
	struct pmidx_pmem_stats a, b;
	const char *why = NULL;
	u64 cows, keys, n, *filler = calloc(FILLER_MAX, 8);
	struct b3_lnode before[16];
	unsigned int i, nf, used;
	__be64 root;
	struct b3_page *pg;
	struct b3 *t;

	b3_test_slots = 16;
	pool = ut_pool_new(img, sz);
	UT_EQ(pmidx_index_create(pool, "two", PMIDX_ENGINE_B3, &idx, &why), 0);
	UT_EQ(put_be(idx, 8), 0);	/* the root of the page's BST */
	UT_EQ(put_be(idx, 4), 0);
	UT_EQ(put_be(idx, 12), 0);
	cows = b3_sum(idx).defrags;
	/* 12, 8's right child, has no left one: the new node alone */
	pmidx_pmem_sum_stats(&pool->pm, &a);
	UT_EQ(del_be(idx, 8), 0);
	pmidx_pmem_sum_stats(&pool->pm, &b);
	UT_EQ(b.flushes - a.flushes, 2);
	UT_EQ(b.fences - a.fences, 2);
	/* 12's successor 16 is three nodes down: 30 and 20 are copied */
	UT_EQ(put_be(idx, 30), 0);
	UT_EQ(put_be(idx, 20), 0);
	UT_EQ(put_be(idx, 16), 0);
	UT_EQ(put_be(idx, 18), 0);
	t = idx->priv;
	pg = b3_pg(t, b3_ld(&t->root->top));
	used = b3_used(t, pg);
	memcpy(before, pg->l, used * sizeof(pg->l[0]));
	pmidx_pmem_sum_stats(&pool->pm, &a);
	UT_EQ(del_be(idx, 12), 0);	/* the root of the page's BST */
	pmidx_pmem_sum_stats(&pool->pm, &b);
	/* the three new nodes' lines, then the root word's */
	n = B3_NODES_OFF + used * sizeof(pg->l[0]);
	UT_EQ(b.flushes - a.flushes,
	      (n + 3 * sizeof(pg->l[0]) - 1) / 64 - n / 64 + 1 + 1);
	UT_EQ(b.fences - a.fences, 2);
	/* no node a reader may stand on changed: only the page's root word */
	UT_EQ(b3_used(t, pg), used + 3);
	UT_ASSERT(!memcmp(before, pg->l, used * sizeof(pg->l[0])));
	UT_EQ(b3_sum(idx).defrags, cows);
	UT_ASSERT(!has_be(idx, 8) && !has_be(idx, 12));
	UT_ASSERT(has_be(idx, 4) && has_be(idx, 16) && has_be(idx, 18) &&
		  has_be(idx, 20) && has_be(idx, 30));
	UT_EQ(idx->ops->check(idx, &keys, &why), 0);
	UT_EQ(keys, 5);
	/* 11 slots used: 5 more fill the page, 16 keeps two children */
	for (i = 0; i < ARRAY_SIZE(more); i++)
		UT_EQ(put_be(idx, more[i]), 0);
	UT_EQ(b3_sum(idx).splits, 0);
	/* a full pool: another index's puts, then the last pages taken */
	UT_EQ(pmidx_index_create(pool, "fill", PMIDX_ENGINE_B3, &fill, &why), 0);
	for (n = 1000; put_be(fill, n) == 0; n++)
		;
	nf = take_last_pages(pool, filler);
	UT_EQ(put_be(idx, 2), -ENOSPC);
	UT_EQ(del_be(idx, 16), 0);
	UT_EQ(b3_sum(idx).defrags, cows + 1);
	UT_ASSERT(!has_be(idx, 16));
	for (i = 0; i < ARRAY_SIZE(live); i++)
		UT_ASSERT_MSG(has_be(idx, live[i]), "key %llu",
			      (unsigned long long)live[i]);
	UT_EQ(idx->ops->check(idx, &keys, &why), 0);
	UT_EQ(keys, ARRAY_SIZE(live));
	/*
	 * Again, three times: the page filled up (it has room after its
	 * copy, and that takes no page), then its BST root deleted. Each
	 * copy takes the reserve, refilled from the page the last one retired.
	 */
	for (i = 0, n = 100; i < 3; i++) {
		pg = b3_pg(t, b3_ld(&t->root->top));
		while (b3_used(t, pg) < 16)
			UT_EQ(put_be(idx, n++), 0);
		memcpy(&root, &pg->l[b3_ld(&pg->root) - 1].key, 8);
		UT_EQ(del_be(idx, be64_to_cpu(root)), 0);
		UT_EQ(b3_sum(idx).defrags, cows + 2 + i);
		UT_ASSERT(!has_be(idx, be64_to_cpu(root)));
	}
	UT_EQ(idx->ops->check(idx, &keys, &why), 0);
	UT_EQ(keys, 15);
	while (nf--)
		pmidx_free(&pool->alloc, filler[nf]);
	free(filler);
	pmidx_pool_close(pool);
	b3_test_slots = B3_SLOTS;
	ut_img_free(img, sz);
}

/*
 * §3.4.1: a crash attach reads no page (no walk), so the counters are
 * unknown until CHECK counts the keys: STATS leaves KEYS and PM_BYTES
 * out meanwhile, CHECK never reports a counter mismatch on a healthy
 * recovered index and sets them, a clean detach before that saves none.
 */
static void b3_crash_counts(void)
{
	void *img = ut_img_alloc(64ULL << 20), *crash;
	struct pmidx_pool *pool = ut_pool_new(img, 64ULL << 20), *rec;
	struct pmidx_index *idx, *ri;
	const char *why = NULL;
	u64 i, keys, n = 2000, bytes;

	UT_EQ(pmidx_index_create(pool, "c", PMIDX_ENGINE_B3, &idx, &why), 0);
	for (i = 0; i < n; i++)
		UT_EQ(ekv_put(idx, i, i), 0);	/* blobs among keys and values */
	UT_EQ(ix_stat(idx, PMIDX_STAT_KEYS), n);
	bytes = ix_stat(idx, PMIDX_STAT_PM_BYTES);
	crash = ut_img_dup(img, 64ULL << 20);
	pmidx_recovery_verify = false;		/* the attach as it really is */
	rec = ut_pool_open(crash, 64ULL << 20);
	pmidx_recovery_verify = true;
	UT_ASSERT(rec->flags & PMIDX_POOL_F_RECOVERED);
	ri = pmidx_index_lookup(rec, "c");
	UT_ASSERT(ri && ri->opened);
	UT_EQ(ix_stat(ri, PMIDX_STAT_KEYS), ~0ULL);
	UT_EQ(ix_stat(ri, PMIDX_STAT_PM_BYTES), ~0ULL);
	UT_EQ(ekv_del(ri, 0), 0);
	UT_EQ(ekv_put(ri, n, n), 0);
	/* a clean detach now: nothing to save, still unknown after it */
	pmidx_pool_close(rec);
	rec = ut_pool_open(crash, 64ULL << 20);
	ri = pmidx_index_lookup(rec, "c");
	UT_EQ(ix_stat(ri, PMIDX_STAT_KEYS), ~0ULL);
	UT_EQ(ri->ops->check(ri, &keys, &why), 0);
	UT_EQ(keys, n);
	UT_EQ(ix_stat(ri, PMIDX_STAT_KEYS), n);
	UT_ASSERT(ix_stat(ri, PMIDX_STAT_PM_BYTES) != ~0ULL);
	ut_note("b3: PM_BYTES %llu before the crash, %llu counted by CHECK after it (1 key more, 1 less)",
		(unsigned long long)bytes,
		(unsigned long long)ix_stat(ri, PMIDX_STAT_PM_BYTES));
	UT_EQ(ekv_del(ri, 1), 0);
	UT_EQ(ri->ops->check(ri, &keys, &why), 0);
	UT_EQ(keys, n - 1);
	pmidx_pool_close(rec);
	rec = ut_pool_open(crash, 64ULL << 20);		/* saved at close */
	ri = pmidx_index_lookup(rec, "c");
	UT_EQ(ix_stat(ri, PMIDX_STAT_KEYS), n - 1);
	pmidx_pool_close(rec);
	pmidx_pool_close(pool);
	ut_img_free(crash, 64ULL << 20);
	ut_img_free(img, 64ULL << 20);
}

/*
 * An index made before committed mode (traced: no PMIDX_INDEX_F_COMMITTED
 * in its entry) is refused at attach with "re-create the index" (the
 * core's check_mode(), review P7), and the image is left unchanged.
 */
static void b3_traced_refused(void)
{
	const u64 sz = 16ULL << 20;
	void *img = ut_img_alloc(sz), *copy;
	struct pmidx_pool *pool = ut_pool_new(img, sz);
	struct pmidx_index_entry *e;
	struct pmidx_index *idx;
	const char *why = NULL;
	u64 eoff;

	UT_EQ(pmidx_index_create(pool, "old", PMIDX_ENGINE_B3, &idx, &why), 0);
	UT_EQ(ekv_put(idx, 1, 1), 0);
	eoff = (u8 *)&pool->itable[idx->id % PMIDX_MAX_INDEXES] - (u8 *)pool->pm.base;
	pmidx_pool_close(pool);
	e = (struct pmidx_index_entry *)((u8 *)img + eoff);
	UT_EQ(le32_to_cpu(e->flags), PMIDX_INDEX_F_COMMITTED);
	e->flags = 0;		/* as a traced-mode module made it */
	e->crc = cpu_to_le32(~__crc32c_le(~0U, (const u8 *)e,
					  offsetof(struct pmidx_index_entry, crc)));
	copy = ut_img_dup(img, sz);
	pool = pmidx_pool_open(img, sz, false, &why);
	UT_ASSERT(IS_ERR(pool));
	UT_EQ(PTR_ERR(pool), -EUCLEAN);
	UT_ASSERT_MSG(why && strstr(why, "re-create the index"), "why: %s", why);
	UT_ASSERT(!memcmp(img, copy, sz));
	ut_img_free(copy, sz);
	ut_img_free(img, sz);
}

/* §3.2.1: a new key costs 2 flushes, the node and the commit word */
static void b3_flushes(void)
{
	void *img = ut_img_alloc(64ULL << 20);
	struct pmidx_pool *pool = ut_pool_new(img, 64ULL << 20);
	struct pmidx_index *idx;
	struct pmidx_pmem_stats a, b;
	const char *why = NULL;
	u64 i, n = 20000;
	u8 k[8], v[8] = { 1 }, bv[100] = { 2 };
	int r;

	UT_EQ(pmidx_index_create(pool, "f", PMIDX_ENGINE_B3, &idx, &why), 0);
	UT_EQ(idx->ops->put(idx, (const u8 *)"\0\0\0\0\0\0\0\0", 8, v, 8, 0), 0);
	pmidx_pmem_sum_stats(&pool->pm, &a);
	UT_EQ(idx->ops->put(idx, (const u8 *)"\0\0\0\0\0\0\0\1", 8, v, 8, 0), 0);
	pmidx_pmem_sum_stats(&pool->pm, &b);
	UT_EQ(b.flushes - a.flushes, 2);
	UT_EQ(b.fences - a.fences, 2);
	pmidx_pmem_sum_stats(&pool->pm, &a);
	for (i = 0; i < n; i++) {
		u64 be = cpu_to_be64(i * 0x9e3779b97f4a7c15ULL);

		memcpy(k, &be, 8);
		UT_EQ(idx->ops->put(idx, k, 8, v, 8, 0), 0);
	}
	pmidx_pmem_sum_stats(&pool->pm, &b);
	ut_note("b3: 8-byte keys/values: %.2f flushes, %.2f fences per insert over %llu random inserts (splits included)",
		(double)(b.flushes - a.flushes) / n, (double)(b.fences - a.fences) / n,
		(unsigned long long)n);
	/* blob values (100 bytes): insert, update (in place), delete */
	for (r = 0; r < 3; r++) {
		pmidx_pmem_sum_stats(&pool->pm, &a);
		for (i = 0; i < n; i++) {
			u64 be = cpu_to_be64(i * 0x9e3779b97f4a7c15ULL + 1);

			memcpy(k, &be, 8);
			if (r < 2)
				UT_EQ(idx->ops->put(idx, k, 8, bv, sizeof(bv), 0), 0);
			else
				UT_EQ(idx->ops->del(idx, k, 8, 0), 0);
		}
		pmidx_pmem_sum_stats(&pool->pm, &b);
		ut_note("b3: 100-byte values, %s: %.2f flushes, %.2f fences per op over %llu ops",
			r == 0 ? "insert" : r == 1 ? "update" : "delete",
			(double)(b.flushes - a.flushes) / n,
			(double)(b.fences - a.fences) / n, (unsigned long long)n);
	}
	pmidx_pool_close(pool);
	ut_img_free(img, 64ULL << 20);
}

/*
 * H2: an SMO whose replaced page has a non-empty low key but no left
 * neighbour in its chain (a corrupt image: here the neighbour's sibling
 * skips it) fails before its first store: -EUCLEAN, the child word still
 * names the page, no object leaked. It used to swap the page in by its
 * child word alone and leave the old one in the chain.
 */
static void b3_left_missing(void)
{
	void *img = ut_img_alloc(64ULL << 20);
	struct pmidx_pool *pool = ut_pool_new(img, 64ULL << 20);
	u64 child[B3_SLOTS + 1], objs, keys, v = 7, n;
	struct pmidx_index *idx;
	struct b3_page *top, *l, *m;
	const char *why = NULL;
	u8 sep[B3_SLOTS], k[6];
	struct b3_key lo, kk;
	struct b3 *t;
	int ret = 0;
	u32 c;

	UT_EQ(pmidx_index_create(pool, "h2", PMIDX_ENGINE_B3, &idx, &why), 0);
	for (n = 0; n < 600; n++)
		UT_EQ(ekv_put(idx, n, n % 10 == 9 ? n - 1 : n), 0);
	t = idx->priv;
	top = b3_pg(t, le64_to_cpu(t->root->top));
	UT_EQ(top->level, 1);
	UT_ASSERT(b3_inner_inorder(t, top, child, sep) >= 3);
	l = b3_pg(t, child[1]);
	m = b3_pg(t, child[2]);
	UT_EQ(le64_to_cpu(l->sibling), child[2]);
	l->sibling = m->sibling;	/* m is out of its chain */
	objs = ut_stat(pool, PMIDX_STAT_ALLOC_OBJECTS);
	lo = b3_low(m);
	UT_ASSERT(lo.len >= 3);
	for (c = 0; c < 2 * B3_SLOTS && !ret; c++) {
		memcpy(k, lo.p, 3);
		k[3] = 0xff;
		k[4] = c >> 8;
		k[5] = c;
		kk.p = k;
		kk.len = 6;
		UT_ASSERT(b3_cmp(&kk, &lo) > 0);
		/* inline key and value: no object but the SMO's pages */
		ret = idx->ops->put(idx, k, 6, (u8 *)&v, 8, 0);
	}
	UT_EQ(ret, -EUCLEAN);
	UT_ASSERT(b3_inner_inorder(t, top, child, sep) >= 3);
	UT_EQ(child[2], b3_pgoff(t, m));
	UT_EQ(le64_to_cpu(l->sibling), le64_to_cpu(m->sibling));
	UT_EQ(ut_stat(pool, PMIDX_STAT_ALLOC_OBJECTS), objs);
	UT_EQ(idx->ops->check(idx, &keys, &why), -EUCLEAN);
	ut_note("b3: SMO without a left neighbour: -EUCLEAN after %u puts (%s)",
		c - 1, why);
	pmidx_pool_close(pool);
	ut_img_free(img, 64ULL << 20);
}

/*
 * M1: a word naming a replaced (DEAD) page, which only a damaged tree has,
 * sends writers back to the root forever; they used to spin there inside
 * their epoch section. Now they repair the key's path outside it and
 * give up: -EUCLEAN. Readers and the rest of the index go on.
 */
static void b3_dead_leaf(void)
{
	void *img = ut_img_alloc(64ULL << 20);
	struct pmidx_pool *pool = ut_pool_new(img, 64ULL << 20);
	u64 child[B3_SLOTS + 1], v = 7, n;
	struct pmidx_index *idx;
	struct b3_page *top, *m;
	const char *why = NULL;
	u8 sep[B3_SLOTS], k[6];
	struct b3 *t;

	UT_EQ(pmidx_index_create(pool, "m1", PMIDX_ENGINE_B3, &idx, &why), 0);
	for (n = 0; n < 600; n++)
		UT_EQ(ekv_put(idx, n, n % 10 == 9 ? n - 1 : n), 0);
	t = idx->priv;
	top = b3_pg(t, le64_to_cpu(t->root->top));
	UT_ASSERT(b3_inner_inorder(t, top, child, sep) >= 3);
	m = b3_pg(t, child[2]);
	UT_ASSERT(m->lowlen >= 3);
	memcpy(k, m->low, 3);
	k[3] = 0xff;
	k[4] = 0;
	k[5] = 1;
	b3_kill(t, m);
	UT_EQ(idx->ops->put(idx, k, 6, (u8 *)&v, 8, 0), -EUCLEAN);
	UT_EQ(idx->ops->del(idx, k, 6, 0), -EUCLEAN);
	for (n = 0; n < 600; n++)	/* readers take no lock */
		UT_EQ(ekv_get_is(idx, n, n % 10 == 9 ? n - 1 : n), 0);
	UT_EQ(ekv_put(idx, 0, 1), 0);	/* the first leaf is fine */
	UT_EQ(ekv_get_is(idx, 0, 1), 0);
	pmidx_pool_close(pool);
	ut_img_free(img, 64ULL << 20);
}

/*
 * L3: a root page never has a sibling. Given one (a corrupt image), the
 * checker says so and a root split is refused, not grown over the page
 * the descent moved to.
 */
static void b3_root_sibling(void)
{
	void *img = ut_img_alloc(64ULL << 20);
	struct pmidx_pool *pool = ut_pool_new(img, 64ULL << 20);
	struct b3_key far = { (const u8 *)"\xff", 1 };
	struct pmidx_index *idx;
	const char *why = NULL;
	u64 i, top, keys, v = 1;
	struct b3 *t;
	int ret = 0;
	__be64 k;

	UT_EQ(pmidx_index_create(pool, "l3", PMIDX_ENGINE_B3, &idx, &why), 0);
	t = idx->priv;
	for (i = 0; i < 200; i++) {
		k = cpu_to_be64(i);
		UT_EQ(idx->ops->put(idx, (u8 *)&k, 8, (u8 *)&v, 8, 0), 0);
	}
	top = le64_to_cpu(t->root->top);
	UT_EQ(b3_pg(t, top)->level, 1);
	b3_pg(t, top)->sibling = cpu_to_le64(b3_page_new(t, 1, &far));
	UT_EQ(idx->ops->check(idx, &keys, &why), -EUCLEAN);
	UT_ASSERT(strstr(why, "root page has a sibling"));
	for (; i < 20000 && !ret; i++) {
		k = cpu_to_be64(i);
		ret = idx->ops->put(idx, (u8 *)&k, 8, (u8 *)&v, 8, 0);
	}
	UT_EQ(ret, -EUCLEAN);
	UT_EQ(le64_to_cpu(t->root->top), top);
	ut_note("b3: root split refused after %llu keys", (unsigned long long)i - 1);
	pmidx_pool_close(pool);
	ut_img_free(img, 64ULL << 20);
}

/*
 * L2: a lock-table leaf that cannot be allocated inside the section
 * (GFP_ATOMIC) is allocated outside it and the op tried again; what
 * still fails is -ENOMEM, never -ENOSPC.
 */
static void b3_lt_nomem(void)
{
	unsigned int n, fired = 0, ok = 0;
	u64 v = 3, keys;
	__be64 k;

	for (n = 1; n <= 12; n++) {
		void *img = ut_img_alloc(16ULL << 20);
		struct pmidx_pool *pool = ut_pool_new(img, 16ULL << 20);
		struct pmidx_index *idx;
		const char *why = NULL;
		int ret;

		UT_EQ(pmidx_index_create(pool, "l2", PMIDX_ENGINE_B3, &idx, &why), 0);
		k = cpu_to_be64(n);
		shim_fail_alloc_nth(n);
		ret = idx->ops->put(idx, (u8 *)&k, 8, (u8 *)&v, 8, 0);
		fired += shim_fail_alloc_fired();
		shim_fail_alloc_nth(0);
		UT_ASSERT_MSG(!ret || ret == -ENOMEM, "allocation %u failed: put %d", n, ret);
		ok += !ret;
		UT_EQ(idx->ops->check(idx, &keys, &why), 0);
		UT_EQ(keys, !ret);
		pmidx_pool_close(pool);
		ut_img_free(img, 16ULL << 20);
	}
	ut_note("b3: first put with allocation N failed, N = 1..12: %u failed an allocation, %u succeeded",
		fired, ok);
}

/* The media commit word of committed-mode object @off, and its bit. */
static __le64 *commit_word(struct pmidx_pool *pool, u64 off, u64 *bit)
{
	struct pmidx_alloc *a = &pool->alloc;
	u64 rel = off - a->data_off;
	u32 c = rel >> PMIDX_CHUNK_SHIFT;
	u32 slot = (rel & (PMIDX_CHUNK_SIZE - 1)) >>
		   (PMIDX_MIN_OBJ_SHIFT + a->chunks[c].class);

	*bit = 1ULL << (slot % 64);
	return &a->hdrs[c].bitmap[slot / 64];
}

static int first_blob(struct b3 *t, struct b3_walk *w, u64 off)
{
	u64 *b = w->ctx;

	if (!*b)
		*b = off;
	return 0;
}

static void check_fails(struct pmidx_index *idx, const char *want)
{
	const char *why = NULL;
	u64 keys;

	UT_EQ(idx->ops->check(idx, &keys, &why), -EUCLEAN);
	UT_ASSERT_MSG(why && strstr(why, want), "why: %s, want %s", why, want);
}

/*
 * Committed-mode review L2: CHECK reads the commit bits on media. A page
 * or a blob the index reaches whose bit is clear (a link store whose txn
 * missed it: lost at the next crash) is reported; so is a bit set for an
 * object the index does not reach (a leak) while it is the pool's only
 * committed-mode index, and only then.
 */
static void b3_commit_bits(void)
{
	const u64 sz = 16ULL << 20;
	void *img = ut_img_alloc(sz);
	struct pmidx_pool *pool = ut_pool_new(img, sz);
	struct pmidx_index *idx, *other;
	u64 n, keys, blob = 0, obj[2], bit;
	struct b3_walk w = { .blob = first_blob, .ctx = &blob };
	const char *why = NULL;
	struct pmidx_chunk *c;
	__le64 *cw;
	u32 ci, slot;
	int i;

	UT_EQ(pmidx_index_create(pool, "b", PMIDX_ENGINE_B3, &idx, &why), 0);
	for (n = 0; n < 300; n++)
		UT_EQ(ekv_put(idx, n, n), 0);	/* blobs among keys and values */
	UT_EQ(idx->ops->check(idx, &keys, &why), 0);
	UT_EQ(b3_walk(idx->priv, &w), 0);
	obj[0] = le64_to_cpu(((struct b3 *)idx->priv)->root->top);
	obj[1] = blob;
	UT_ASSERT(obj[0] && obj[1]);
	for (i = 0; i < 2; i++) {
		cw = commit_word(pool, obj[i], &bit);
		UT_ASSERT(le64_to_cpu(*cw) & bit);
		*cw ^= cpu_to_le64(bit);
		check_fails(idx, i ? "blob not committed on media" :
				     "page not committed on media");
		*cw ^= cpu_to_le64(bit);
		UT_EQ(idx->ops->check(idx, &keys, &why), 0);
	}
	/* a free slot of the root page's chunk, committed on media */
	ci = (obj[0] - pool->alloc.data_off) >> PMIDX_CHUNK_SHIFT;
	c = &pool->alloc.chunks[ci];
	slot = find_first_zero_bit(c->bitmap, PMIDX_SLOTS_MAX >> c->class);
	UT_ASSERT(slot < PMIDX_SLOTS_MAX >> c->class);
	cw = commit_word(pool, pool->alloc.data_off +
			 ((u64)ci << PMIDX_CHUNK_SHIFT) +
			 ((u64)slot << (PMIDX_MIN_OBJ_SHIFT + c->class)), &bit);
	*cw ^= cpu_to_le64(bit);
	check_fails(idx, "objects the index does not reach");
	/* another committed-mode index could own it: not counted then */
	UT_EQ(pmidx_index_create(pool, "o", PMIDX_ENGINE_B3, &other, &why), 0);
	UT_EQ(idx->ops->check(idx, &keys, &why), 0);
	UT_EQ(pmidx_index_drop(pool, "o", &why), 0);
	check_fails(idx, "objects the index does not reach");
	*cw ^= cpu_to_le64(bit);
	UT_EQ(idx->ops->check(idx, &keys, &why), 0);
	UT_EQ(keys, 300);
	pmidx_pool_close(pool);
	ut_img_free(img, sz);
}

/* L6: two equal keys in a leaf are reported, not skipped as a shadow. */
static void b3_dup_key(void)
{
	void *img = ut_img_alloc(16ULL << 20);
	struct pmidx_pool *pool = ut_pool_new(img, 16ULL << 20);
	struct pmidx_index *idx;
	const char *why = NULL;
	struct b3_page *leaf;
	u8 slots[B3_SLOTS];
	struct b3_lnode *a, *b;
	u64 i, v = 1, keys;
	struct b3 *t;
	__be64 k;

	UT_EQ(pmidx_index_create(pool, "l6", PMIDX_ENGINE_B3, &idx, &why), 0);
	for (i = 0; i < 10; i++) {
		k = cpu_to_be64(i);
		UT_EQ(idx->ops->put(idx, (u8 *)&k, 8, (u8 *)&v, 8, 0), 0);
	}
	t = idx->priv;
	leaf = b3_pg(t, le64_to_cpu(t->root->top));
	UT_EQ(b3_leaf_inorder(t, leaf, slots), 10);
	a = &leaf->l[slots[4]];
	b = &leaf->l[slots[5]];
	b->key = a->key;		/* key 5 becomes a second key 4 */
	b->check = cpu_to_le32(b3_node_check(le64_to_cpu(b->key),
					     le32_to_cpu(b->meta)));
	UT_EQ(idx->ops->check(idx, &keys, &why), -EUCLEAN);
	UT_ASSERT_MSG(strstr(why, "duplicate key"), "%s", why);
	pmidx_pool_close(pool);
	ut_img_free(img, 16ULL << 20);
}

/* ---- threads ------------------------------------------------------------- */

#define TKEYS	4000
#define TROUNDS	6000

/* key n is stable (value n) for even n; writers churn the odd ones */
static void *writer(void *p)
{
	struct ekv_thread *a = p;
	struct rnd_state rs;
	u8 k[256], v[300];
	unsigned int r;

	prandom_seed_state(&rs, ut_seed + a->id);
	for (r = 0; r < TROUNDS; r++) {
		u64 n = (prandom_u32_state(&rs) % (TKEYS / 2)) * 2 + 1;
		u32 kl = ekv_key(n, k), vl = prandom_u32_state(&rs) % 300;

		memset(v, r, vl);
		if (prandom_u32_state(&rs) % 3)
			a->errors += !!a->idx->ops->put(a->idx, k, kl, v, vl, 0);
		else
			a->errors += a->idx->ops->del(a->idx, k, kl, 0) == -EBUSY;
	}
	return NULL;
}

static void store_yield(void)
{
	sched_yield();
}

static void b3_threads(void)
{
	void *img = ut_img_alloc(SZ);
	struct pmidx_pool *pool = ut_pool_new(img, SZ);
	struct ekv_thread args[6];
	pthread_t th[6];
	_Atomic int stop = 0;
	struct pmidx_index *idx;
	const char *why = NULL;
	u64 keys;
	int i;

	UT_EQ(pmidx_index_create(pool, "t", PMIDX_ENGINE_B3, &idx, &why), 0);
	ekv_put_stable(idx, TKEYS);
	/* readers overtake a writer right after its link stores */
	b3_test_store_hook = store_yield;
	for (i = 0; i < 6; i++) {
		args[i] = (struct ekv_thread){ .idx = idx, .id = i,
					       .keys = TKEYS, .stop = &stop };
		UT_EQ(pthread_create(&th[i], NULL,
				     i < 3 ? writer : i < 5 ? ekv_stable_reader :
				     ekv_stable_scanner, &args[i]), 0);
	}
	for (i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	stop = 1;
	for (i = 3; i < 6; i++)
		pthread_join(th[i], NULL);
	b3_test_store_hook = NULL;
	for (i = 0; i < 6; i++)
		UT_ASSERT_MSG(!args[i].errors, "thread %d: %lu errors", i,
			      args[i].errors);
	UT_ASSERT_MSG(!idx->ops->check(idx, &keys, &why), "check: %s", why);
	counts_exact(idx, "after the threads");
	pmidx_pool_close(pool);
	ut_img_free(img, SZ);
}

/*
 * Lock-free readers while pages merge, share out (leaves and internal
 * pages), split and the root grows and collapses: pages full at 16
 * nodes; writers insert, then delete, their own keys, round after round;
 * every 8th key stays, and readers and a scanner check it meanwhile.
 */
#define MKEYS	4000
#define MROUNDS	3
#define MSLOTS	16

static void *wave_writer(void *p)
{
	struct ekv_thread *a = p;
	u8 k[256], v[24];
	unsigned int r;
	u64 i, n;

	for (r = 0; r < MROUNDS; r++) {
		for (i = 0; i < MKEYS; i++) {
			n = (i * 7919) % MKEYS;
			if (!(n % 8) || n % 3 != a->id)
				continue;
			memset(v, r + n, sizeof(v));
			a->errors += !!a->idx->ops->put(a->idx, k, ekv_key(n, k),
							v, 8 + n % 16, 0);
		}
		for (i = 0; i < MKEYS; i++) {
			n = (i * 104729) % MKEYS;
			if (!(n % 8) || n % 3 != a->id)
				continue;
			a->errors += !!a->idx->ops->del(a->idx, k, ekv_key(n, k), 0);
		}
	}
	return NULL;
}

static void *wave_reader(void *p)
{
	struct ekv_thread *a = p;
	u8 k[256], v[32];
	u64 n = a->id * 8;

	while (!*a->stop) {
		u32 kl, vl = sizeof(v);

		n = (n + 8 * 7919) % MKEYS & ~7ULL;
		kl = ekv_key(n, k);
		if (a->idx->ops->get(a->idx, k, kl, v, &vl) || vl != 8 ||
		    memcmp(v, &n, 8))
			a->errors++;
	}
	return NULL;
}

static void *wave_scanner(void *p)
{
	struct ekv_thread *a = p;

	while (!*a->stop) {
		struct ekv_counter c = { .sink.emit = ekv_count_emit };

		a->errors += !!a->idx->ops->scan(a->idx, NULL, 0, false, NULL, 0,
						 &c.sink);
		a->errors += c.bad || c.n < MKEYS / 8;
	}
	return NULL;
}

/* every commit store of a writer: give the readers a turn */
static void b3_threads_merge(void)
{
	void *img = ut_img_alloc(SZ);
	struct pmidx_pool *pool;
	struct ekv_thread args[6];
	pthread_t th[6];
	_Atomic int stop = 0;
	struct pmidx_index *idx;
	const char *why = NULL;
	struct b3_pcpu s;
	u64 n, keys;
	int i;

	b3_test_slots = MSLOTS;
	pool = ut_pool_new(img, SZ);
	UT_EQ(pmidx_index_create(pool, "w", PMIDX_ENGINE_B3, &idx, &why), 0);
	for (n = 0; n < MKEYS; n += 8) {
		u8 k[256];

		UT_EQ(idx->ops->put(idx, k, ekv_key(n, k), (u8 *)&n, 8, 0), 0);
	}
	b3_test_store_hook = store_yield;
	for (i = 0; i < 6; i++) {
		args[i] = (struct ekv_thread){ .idx = idx, .id = i, .stop = &stop };
		if (i >= 3)
			args[i].id = i - 3;
		UT_EQ(pthread_create(&th[i], NULL,
				     i < 3 ? wave_writer :
				     i < 5 ? wave_reader : wave_scanner,
				     &args[i]), 0);
	}
	for (i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	stop = 1;
	for (i = 3; i < 6; i++)
		pthread_join(th[i], NULL);
	b3_test_store_hook = NULL;
	for (i = 0; i < 6; i++)
		UT_ASSERT_MSG(!args[i].errors, "thread %d: %lu errors", i,
			      args[i].errors);
	UT_ASSERT_MSG(!idx->ops->check(idx, &keys, &why), "check: %s", why);
	UT_EQ(keys, (MKEYS + 7) / 8);
	counts_exact(idx, "after the threads");
	/* M1: a record per writer, and the extra ones of the index's SMO */
	UT_ASSERT_MSG(pool->alloc.intent_peak <= 3 + PMIDX_TXN_SMO_MAX - 1,
		      "%u records in use at once", pool->alloc.intent_peak);
	s = b3_sum(idx);
	ut_note("b3: pages of %u nodes, %u rounds of 3 writers: %llu splits, %llu merges (%llu redistributions, %llu of internal pages), %d levels at the end",
		MSLOTS, MROUNDS, (unsigned long long)s.splits,
		(unsigned long long)s.merges, (unsigned long long)s.redists,
		(unsigned long long)s.inner_merges, height(idx));
	UT_ASSERT(s.redists > 0 && s.inner_merges > 0);
	pmidx_pool_close(pool);
	b3_test_slots = B3_SLOTS;
	ut_img_free(img, SZ);
}

/*
 * Committed-mode review L1: after a crash attach the counters are
 * unknown until the first CHECK sets them from its walk, writers frozen.
 * That CHECK here runs while two writers put and delete keys with key
 * and value blobs (a put writes its value blob before its section, a
 * delete retires its blobs after it): once they stop, the counters are
 * still exactly the walk's. Each round attaches a new copy of one crash
 * image. PMIDX_B3_STRADDLE_ROUNDS: rounds (default 20).
 */
#define SKEYS	2000

struct sarg {
	struct pmidx_index	*idx;
	unsigned int		id;
	_Atomic int		*stop;
	_Atomic unsigned long	ops;
	unsigned long		errors;
};

static void *straddle_writer(void *p)
{
	static const u32 lens[] = { 0, 8, 9, 16, 40, 300, 1000 };
	struct sarg *a = p;
	struct rnd_state rs;
	u8 k[256], v[1000];

	prandom_seed_state(&rs, ut_seed + 17 * a->id);
	while (!*a->stop) {
		u64 n = prandom_u32_state(&rs) % SKEYS;
		u32 kl = ekv_key(n, k), vl = lens[prandom_u32_state(&rs) % 7];
		int ret;

		memset(v, a->ops, vl);
		if (prandom_u32_state(&rs) % 3) {
			a->errors += !!a->idx->ops->put(a->idx, k, kl, v, vl, 0);
		} else {
			ret = a->idx->ops->del(a->idx, k, kl, 0);
			a->errors += ret && ret != -ENOENT;
		}
		a->ops++;
	}
	return NULL;
}

static void b3_counts_straddle(void)
{
	const u64 sz = 64ULL << 20;
	void *img = ut_img_alloc(sz), *crash, *copy;
	struct pmidx_pool *pool = ut_pool_new(img, sz), *rec;
	unsigned int rounds = 20, r, i;
	struct pmidx_index *idx, *ri;
	const char *why = NULL, *e;
	struct sarg args[2];
	pthread_t th[2];
	_Atomic int stop;
	u64 n, keys;

	e = getenv("PMIDX_B3_STRADDLE_ROUNDS");
	if (e)
		rounds = strtoul(e, NULL, 0);
	UT_EQ(pmidx_index_create(pool, "s", PMIDX_ENGINE_B3, &idx, &why), 0);
	for (n = 0; n < SKEYS; n += 2)
		UT_EQ(ekv_put(idx, n, n % 10 == 9 ? n - 1 : n), 0);
	crash = ut_img_dup(img, sz);
	pmidx_pool_close(pool);
	copy = ut_img_alloc(sz);
	for (r = 0; r < rounds; r++) {
		memcpy(copy, crash, sz);
		pmidx_recovery_verify = false;	/* the attach as it really is */
		rec = ut_pool_open(copy, sz);
		pmidx_recovery_verify = true;
		ri = pmidx_index_lookup(rec, "s");
		UT_ASSERT(ri && ri->opened && ((struct b3 *)ri->priv)->approx);
		stop = 0;
		for (i = 0; i < 2; i++) {
			args[i] = (struct sarg){ .idx = ri, .id = 2 * r + i,
						 .stop = &stop };
			UT_EQ(pthread_create(&th[i], NULL, straddle_writer,
					     &args[i]), 0);
		}
		/* the first CHECK: both writers well into their work */
		while (args[0].ops < 20 + r % 7 || args[1].ops < 20)
			sched_yield();
		UT_ASSERT_MSG(!ri->ops->check(ri, &keys, &why), "check: %s", why);
		n = args[0].ops + args[1].ops;
		while (args[0].ops + args[1].ops < n + 50)
			sched_yield();
		stop = 1;
		for (i = 0; i < 2; i++) {
			pthread_join(th[i], NULL);
			UT_ASSERT_MSG(!args[i].errors, "writer %u: %lu errors",
				      i, args[i].errors);
		}
		counts_exact(ri, "after a CHECK among writers");
		UT_ASSERT_MSG(!ri->ops->check(ri, &keys, &why), "check: %s", why);
		UT_EQ(keys, b3_sum(ri).keys);
		pmidx_pool_close(rec);
	}
	ut_img_free(copy, sz);
	ut_img_free(crash, sz);
	ut_img_free(img, sz);
}

/* ---- the crash simulator ------------------------------------------------- */

#define CKEYS	300

static unsigned long repaired;	/* crash images whose writers repaired */

struct wl_arg {
	u64		seed;
	unsigned int	ops;
	bool		drop;	/* drop the index at the end (resumed at attach) */
	bool		drain;	/* then delete all keys but every 16th */
};

/* the SMOs of the last workload run (the crash-free history) */
static struct b3_pcpu wl_smos;
static int wl_height;		/* its highest tree */
static unsigned int wl_big;	/* its puts of 64 KiB values */

static void smos_add(struct pmidx_index *idx)
{
	struct b3_pcpu s = b3_sum(idx);

	wl_smos.splits += s.splits;
	wl_smos.merges += s.merges;
	wl_smos.redists += s.redists;
	wl_smos.inner_merges += s.inner_merges;
	wl_smos.repairs += s.repairs;
}

/*
 * The value id the workload puts for @v: every 30th a 64 KiB value
 * (ekv_val(), the allocator's 128 KiB class: two to a chunk, so chunks
 * of it are emptied and reused soonest; committed-mode review T3), the
 * other ids that ekv_val() would make 64 KiB one below (8 bytes).
 */
static u64 wl_val(u64 v)
{
	return v % 10 == 9 && v % 30 != 29 ? v - 1 : v;
}

static int wl_b3(struct crashsim *cs, void *img, u64 size, void *arg)
{
	struct wl_arg *a = arg;
	struct pmidx_pool *pool;
	struct pmidx_index *idx;
	const char *why = NULL;
	struct rnd_state rs;
	unsigned int op, i;
	u8 k[256];
	int ret;

	prandom_seed_state(&rs, a->seed);
	wl_big = 0;		/* one pass of the history */
	if (pmidx_pool_format(img, size, true, &why))
		return -EIO;
	pool = pmidx_pool_open(img, size, false, &why);
	if (IS_ERR(pool))
		return PTR_ERR(pool);
	op = crashsim_op_begin(cs, CRASHSIM_OP_NOTE, "create", NULL, 0, 0);
	if (pmidx_index_create(pool, "kv", PMIDX_ENGINE_B3, &idx, &why))
		return -EIO;
	crashsim_op_ack(cs, op);
	for (i = 0; i < a->ops; i++) {
		/* inserts first (splits), then mostly deletes (merges) */
		bool d = prandom_u32_state(&rs) % 8 < (i < a->ops / 2 ? 1 : 6);
		u64 n = prandom_u32_state(&rs) % CKEYS, v = prandom_u32_state(&rs) % 1000;
		u32 kl = ekv_key(n, k);

		op = crashsim_op_begin(cs, d ? CRASHSIM_OP_DEL : CRASHSIM_OP_PUT,
				       "kv", k, kl, v);
		ret = d ? ekv_del(idx, n) : ekv_put(idx, n, wl_val(v));
		if (ret && !(d && ret == -ENOENT))
			return ret;
		crashsim_op_ack(cs, op);
		wl_big += !d && ekv_val(wl_val(v), cvbuf) == 65536;
		wl_height = max(wl_height, height(idx));
		if (i == a->ops / 3) {		/* detach and attach */
			smos_add(idx);
			pmidx_pool_close(pool);
			pool = pmidx_pool_open(img, size, false, &why);
			if (IS_ERR(pool))
				return PTR_ERR(pool);
			idx = pmidx_index_lookup(pool, "kv");
			if (!idx || !idx->opened)
				return -EIO;
		}
	}
	for (i = 0; a->drain && i < CKEYS; i++) {
		u64 n = (i * 97) % CKEYS;	/* scattered over the leaves */
		u32 kl = ekv_key(n, k);

		if (!(n % 16))
			continue;
		op = crashsim_op_begin(cs, CRASHSIM_OP_DEL, "kv", k, kl, 0);
		ret = ekv_del(idx, n);
		if (ret && ret != -ENOENT)
			return ret;
		crashsim_op_ack(cs, op);
	}
	smos_add(idx);
	if (a->drop) {
		/* a crash in the drop: the attach finishes it (index_table.c) */
		op = crashsim_op_begin(cs, CRASHSIM_OP_NOTE, "drop", NULL, 0, 0);
		if (pmidx_index_drop(pool, "kv", &why))
			return -EIO;
		crashsim_op_ack(cs, op);
	}
	pmidx_pool_close(pool);
	return 0;
}

/*
 * H1 (docs/reviews/b3-review.md): a crash inside an SMO can leave a child
 * word W naming l, the left neighbour of the page of W's range, while l
 * keeps its own word. An SMO that later retires l must not leave W naming
 * it. So at such an image: fill l's range (keys of length 6, which ekv_key()
 * never makes) until l is defragmented or split, touch nothing in W's
 * range, then read everything, CHECK, and crash once more.
 */
#define XMAX	(2 * B3_SLOTS)

static struct {
	bool		set;
	u64		index;		/* the crash image they went into */
	unsigned int	variant;
	unsigned int	n;
	u8		key[XMAX][6];
} xk;
static unsigned long provoked;	/* images with an SMO on a leftover's page */

/* A leaf that a child word names for a range to its right, or NULL. */
static struct b3_page *leftover(struct b3 *t)
{
	u64 off = le64_to_cpu(t->root->top), child[B3_SLOTS + 1], sib;
	struct b3_key lo, lk;
	struct b3_page *p;
	u8 sep[B3_SLOTS];
	int n, i;

	if (!off)
		return NULL;
	for (p = b3_pg(t, off); p->level > 1; p = b3_pg(t, child[0]))
		if (b3_inner_inorder(t, p, child, sep) < 0)
			return NULL;
	for (; p->level == 1; p = b3_pg(t, sib)) {
		n = b3_inner_inorder(t, p, child, sep);
		if (n < 0)
			return NULL;
		lo = b3_low(p);
		for (i = 0; i <= n; i++) {
			if (i)
				lo = b3_node_key(t, &p->i[sep[i - 1]].key,
						 le32_to_cpu(p->i[sep[i - 1]].meta));
			lk = b3_low(b3_pg(t, child[i]));
			if (b3_cmp(&lk, &lo) < 0)
				return b3_pg(t, child[i]);
		}
		sib = le64_to_cpu(p->sibling);
		if (!sib)
			break;
	}
	return NULL;
}

static u64 smo_count(struct pmidx_index *idx)
{
	struct b3_pcpu s = b3_sum(idx);

	return s.splits + s.defrags;
}

/* Keys into the leftover's page until an SMO replaces it. */
static void provoke(struct crashsim *cs, struct pmidx_index *idx)
{
	struct b3 *t = idx->priv;
	struct b3_page *l = leftover(t);
	u8 lob[B3_LOW_MAX], hib[B3_LOW_MAX], *k;
	struct b3_key lo = { lob }, hi = { hib }, kk;
	u64 before = smo_count(idx), v;
	u32 p, c;
	int ret;

	if (!l)
		return;
	if (!l->sibling) {
		crashsim_fail(cs, "a leftover word names the last leaf");
		return;
	}
	/* copies: l is retired below */
	lo.len = l->lowlen;
	memcpy(lob, l->low, lo.len);
	hi.len = b3_pg(t, le64_to_cpu(l->sibling))->lowlen;
	memcpy(hib, b3_pg(t, le64_to_cpu(l->sibling))->low, hi.len);
	p = lo.len >= 3 ? lo.p[0] << 16 | lo.p[1] << 8 | lo.p[2] : 0;
	for (c = 0; xk.n < XMAX && smo_count(idx) == before; c++) {
		if (c == 1 << 16) {
			c = 0;
			p++;
		}
		k = xk.key[xk.n];
		k[0] = p >> 16;
		k[1] = p >> 8;
		k[2] = p;
		k[3] = 0xff;
		k[4] = c >> 8;
		k[5] = c;
		kk.p = k;
		kk.len = 6;
		if (b3_cmp(&kk, &lo) < 0)
			continue;
		if (b3_cmp(&kk, &hi) >= 0)
			break;
		v = xk.n;
		ret = idx->ops->put(idx, k, 6, (u8 *)&v, 8, 0);
		if (ret) {
			crashsim_fail(cs, "put into the leftover's neighbour: %d", ret);
			return;
		}
		xk.n++;
	}
	if (smo_count(idx) == before)
		crashsim_fail(cs, "%u keys put, no SMO on the leftover's neighbour", xk.n);
	else
		provoked++;
}

/* Every key against the model, the extra keys, CHECK and scans. */
static void check_keys(struct crashsim *cs, struct pmidx_index *idx,
		       const char *when)
{
	struct crashsim_expect e;
	const char *why = NULL;
	u64 n, keys, live = 0, v;
	unsigned int x;
	u32 gl;
	int ret;

	for (n = 0; n < CKEYS; n++) {
		u8 k[256];
		u32 kl = ekv_key(n, k);

		gl = sizeof(cgbuf);
		ret = idx->ops->get(idx, k, kl, cgbuf, &gl);
		v = 0;
		if (ret && ret != -ENOENT) {
			crashsim_fail(cs, "%s: key %llu: get %d", when,
				      (unsigned long long)n, ret);
			continue;
		}
		crashsim_expect(cs, k, kl, &e);
		for (x = 0; !ret && x < e.n; x++) {
			u64 w = wl_val(e.value[x]);
			u32 vl = ekv_val(w, cvbuf);

			if (e.present[x] && gl == vl && !memcmp(cgbuf, cvbuf, vl))
				v = e.value[x];
		}
		if (!crashsim_expect_ok(&e, !ret, v))
			crashsim_fail(cs, "%s: key %llu: %s, expected %s (of %u outcomes)",
				      when, (unsigned long long)n,
				      !ret ? "present with another value" : "absent",
				      e.present[0] ? "present" : "absent", e.n);
		live += !ret;
	}
	for (x = 0; x < xk.n; x++) {
		gl = sizeof(cgbuf);
		ret = idx->ops->get(idx, xk.key[x], 6, cgbuf, &gl);
		v = x;
		if (ret || gl != 8 || memcmp(cgbuf, &v, 8))
			crashsim_fail(cs, "%s: extra key %u: get %d", when, x, ret);
		live++;
	}
	if (idx->ops->check(idx, &keys, &why))
		crashsim_fail(cs, "%s: engine check: %s", when, why);
	else if (keys != live)
		crashsim_fail(cs, "%s: check counts %llu keys, get %llu", when,
			      (unsigned long long)keys, (unsigned long long)live);
	if (ekv_scan_all(idx, 0) != live)
		crashsim_fail(cs, "%s: scan disagrees with get", when);
}

static void *img2;	/* the second crash's image, one for the run */

/* Crash now (every store of ours is durable: a copy is the image). */
static void crash_again(struct crashsim *cs, struct pmidx_pool *pool)
{
	struct pmidx_pool *rec;
	struct pmidx_index *idx;
	const char *why = NULL;

	if (!img2)
		img2 = ut_img_alloc(pool->pm.size);
	memcpy(img2, pool->pm.base, pool->pm.size);
	rec = pmidx_pool_open(img2, pool->pm.size, false, &why);
	if (IS_ERR(rec)) {
		crashsim_fail(cs, "attach after the second crash: %ld (%s)",
			      PTR_ERR(rec), why);
		return;
	}
	idx = pmidx_index_lookup(rec, "kv");
	if (!idx || !idx->opened)
		crashsim_fail(cs, "index lost at the second crash");
	else
		check_keys(cs, idx, "after the second crash");
	pmidx_pool_close(rec);
}

static int check_image(struct crashsim *cs, const struct crashsim_point *pt,
		       struct pmidx_pool *pool, int err, const char *why, void *arg)
{
	struct pmidx_index *idx;
	unsigned int r;
	u64 n;

	if (!pool) {
		if (!crashsim_note_acked(cs, "create") && (err == -EINVAL || err == -EUCLEAN))
			return 0;
		crashsim_fail(cs, "attach failed: %d (%s)", err, why);
		return -1;
	}
	idx = pmidx_index_lookup(pool, "kv");
	if (!idx) {
		if (crashsim_note_started(cs, "drop"))	/* nothing left */
			crashsim_check_pool(cs, pool, 0);
		else if (crashsim_note_acked(cs, "create"))
			crashsim_fail(cs, "acknowledged index lost");
		return 0;
	}
	/* the first attach of this image (the second one is clean) */
	if (!xk.set || xk.index != pt->index || xk.variant != pt->variant) {
		xk.set = true;
		xk.index = pt->index;
		xk.variant = pt->variant;
		xk.n = 0;
		provoke(cs, idx);
	}
	for (r = 0; r < 2; r++) {	/* then once more after a writer's repair */
		check_keys(cs, idx, r ? "after a writer's repair" : "at attach");
		if (r) {
			repaired += !!b3_sum(idx).repairs;
			break;
		}
		if (xk.n)
			crash_again(cs, pool);
		/* a writer over the whole key space meets any leftover */
		for (n = 0; n < CKEYS; n += 7) {
			u8 k[256];
			u32 kl = ekv_key(n, k), gl = sizeof(cgbuf);

			if (!idx->ops->get(idx, k, kl, cgbuf, &gl) &&
			    idx->ops->put(idx, k, kl, cgbuf, gl, 0))
				crashsim_fail(cs, "rewrite of key %llu failed",
					      (unsigned long long)n);
		}
	}
	crashsim_check_pool(cs, pool, -1);
	return 0;
}

static unsigned int samples = 400;

/*
 * @all: every crash point (unless PMIDX_CRASH_SAMPLES says otherwise)
 * @slots: pages full at this many nodes (b3.h B3_CAP), 0: B3_SLOTS
 */
static void run(const char *name, unsigned int ops, bool all, bool drop,
		unsigned int slots)
{
	struct wl_arg arg = { .seed = ut_seed, .ops = ops, .drop = drop,
			      .drain = !!slots };
	struct crashsim_workload wl = {
		.name = name, .run = wl_b3, .check = check_image, .arg = &arg,
	};
	struct crashsim_config cfg = {
		.pool_size = 32ULL << 20, .seed = ut_seed, .variants = 2,
		.samples = samples,
		.exhaustive_max = all && !getenv("PMIDX_CRASH_SAMPLES") ? 1U << 30 : samples,
	};
	struct crashsim_result res;

	crashsim_config_env(&cfg);
	xk.set = false;
	xk.n = 0;
	b3_test_slots = slots ?: B3_SLOTS;
	memset(&wl_smos, 0, sizeof(wl_smos));
	wl_height = 0;
	UT_EQ(crashsim_run(&cfg, &wl, &res), 0);
	b3_test_slots = B3_SLOTS;
	ut_img_free(img2, cfg.pool_size);
	img2 = NULL;
	crashsim_print_result(name, &cfg, &res);
	printf("# %s: %lu images had a half-done SMO repaired by a writer, %lu an SMO on the page a leftover word names\n",
	       name, repaired, provoked);
	printf("# %s: the history: %d levels at most, %llu splits, %llu merges (%llu redistributions, %llu of internal pages), %llu repairs, %u puts of 64 KiB values\n",
	       name, wl_height, (unsigned long long)wl_smos.splits,
	       (unsigned long long)wl_smos.merges,
	       (unsigned long long)wl_smos.redists,
	       (unsigned long long)wl_smos.inner_merges,
	       (unsigned long long)wl_smos.repairs, wl_big);
	UT_ASSERT(wl_big > 0);
	repaired = 0;
	provoked = 0;
	UT_CRASH_OK(res, true);
}

static void b3_crash_smo(void)
{
	run("b3_crash_smo", 1200, false, true, 0);
}

/* H1: every crash point of a shorter history, each leftover provoked */
static void b3_crash_leftover_smo(void)
{
	run("b3_crash_leftover_smo", 600, true, false, 0);
}

/*
 * §3.3.4 and internal merges (plan items 6, 7): pages full at 12 nodes,
 * so the same workload grows 3 levels, and its deletes, then deletes of
 * all keys but every 16th, merge leaves, share leaves out, merge and
 * share out internal pages and collapse the root. Every crash point, each leftover provoked (an SMO on the page
 * it names) and crashed again.
 */
#define SMALL_SLOTS	12

static void b3_crash_merge(void)
{
	run("b3_crash_merge", 500, true, false, SMALL_SLOTS);
	UT_ASSERT(wl_smos.redists > 0);
	UT_ASSERT(wl_smos.inner_merges > 0);
}

/*
 * Committed-mode review T2: crash images with several link stores in
 * flight. The crash simulator runs one thread, so none of its images
 * holds two txns at once (on two leaves, a leaf's and an SMO's), nor
 * two writers' read-modify-writes of one commit-bit word. Here writers
 * delete and put keys of their own, all put at first, in pages of 16
 * nodes (merges, redistributions, splits) while the test stops them all at once
 * (a signal each, parked in its handler), copies the image and lets
 * them go on: that copy is the media after a power cut at that instant
 * with every store durable (eADR). A writer counts the ops it started
 * and finished, so each key has one expected value, or two while its op
 * was in flight. Each image is attached with the recovery checker
 * (pmidx_recovery_verify: the intent replay and the commit bits against
 * a full trace), every key read, CHECK run, then every 7th key rewritten
 * (a writer meets any half-done SMO) and all checked again, while the
 * writers wait between two ops. To have several records in flight in
 * most images, a writer yields between arming a txn and its link store
 * (b3_test_arm_hook). PMIDX_B3_SNAPSHOTS: images (default 40).
 */
#define TW		3		/* writers */
#define TWKEYS		1000		/* keys per writer, all put at first */

struct twriter {
	struct pmidx_index	*idx;
	unsigned int		id;
	_Atomic int		*stop;
	_Atomic int		*hold;	/* wait between two ops */
	_Atomic u64		started, done;	/* ops */
	unsigned long		errors;
	pthread_t		th;
};

/* op @j of writer @w: key, delete or put, value id */
static u64 tw_op(unsigned int w, u64 j, bool *del, u64 *v)
{
	u64 r = (ut_seed ^ (w + 1) * 0x9e3779b97f4a7c15ULL) + j * 0xbf58476d1ce4e5b9ULL;

	r ^= r >> 31;
	r *= 0x94d049bb133111ebULL;
	r ^= r >> 29;
	*del = (r >> 40) % 100 < 55;	/* the tree shrinks: merges */
	*v = (r >> 20) % 1000;
	if (*v % 10 == 9)
		(*v)--;		/* no 64 KiB values here (T3 has them) */
	return w + TW * (r % TWKEYS);
}

/* the value id key @n has before the writers start */
static u64 tw_first(u64 n)
{
	return n % 10 == 9 ? n % 1000 - 1 : n % 1000;
}

static void *tw_run(void *p)
{
	struct twriter *a = p;
	u8 k[256], v[300];
	u64 j, n, id;
	bool del;
	int ret;

	for (j = 0; !*a->stop; j++) {
		while (*a->hold && !*a->stop)
			usleep(50);
		n = tw_op(a->id, j, &del, &id);
		a->started = j + 1;
		if (del) {
			ret = a->idx->ops->del(a->idx, k, ekv_key(n, k), 0);
			a->errors += ret && ret != -ENOENT;
		} else {
			ret = a->idx->ops->put(a->idx, k, ekv_key(n, k), v,
					       ekv_val(id, v), 0);
			a->errors += !!ret;
		}
		a->done = j + 1;
	}
	return NULL;
}

static _Atomic unsigned int park_gen;	/* odd: writers stop */
static _Atomic unsigned int parked;

static void park(int sig)
{
	unsigned int gen = park_gen;

	parked++;
	while (park_gen == gen)
		sched_yield();
	parked--;
}

/*
 * The state each key had when the image was taken: @want[n] value id + 1
 * (0 absent); @alt[n] the other value it may have (its op in flight), or
 * ~0 when none.
 */
static void tw_expect(const u64 *started, const u64 *done, u64 *want,
		      u64 *alt)
{
	unsigned int w;
	u64 j, n, v;
	bool del;

	for (n = 0; n < TW * TWKEYS; n++)
		want[n] = tw_first(n) + 1;
	memset(alt, 0xff, TW * TWKEYS * sizeof(*alt));
	for (w = 0; w < TW; w++) {
		for (j = 0; j < done[w]; j++) {
			n = tw_op(w, j, &del, &v);
			want[n] = del ? 0 : v + 1;
		}
		if (started[w] > done[w]) {
			n = tw_op(w, done[w], &del, &v);
			alt[n] = del ? 0 : v + 1;
		}
	}
}

/* A failure that does not end the test: the writers are stopped first. */
#define TW_CHECK(cond, fmt, ...) ({					\
	bool __c = !!(cond);						\
	if (!__c)							\
		ut_fail(__FILE__, __LINE__, false, "%s: " fmt, #cond,	\
			##__VA_ARGS__);					\
	__c;								\
})

/* Every key of @idx as expected. Return: live keys, -1 on a failure. */
static s64 tw_verify(struct pmidx_index *idx, const u64 *want, const u64 *alt,
		     const char *when)
{
	s64 live = 0;
	u32 gl, vl;
	u8 k[256];
	int ret;
	u64 n;

	for (n = 0; n < TW * TWKEYS; n++) {
		gl = sizeof(cgbuf);
		ret = idx->ops->get(idx, k, ekv_key(n, k), cgbuf, &gl);
		if (!TW_CHECK(!ret || ret == -ENOENT, "%s: key %llu: get %d",
			      when, (unsigned long long)n, ret))
			return -1;
		if (ret) {
			if (!TW_CHECK(!want[n] || !alt[n], "%s: key %llu lost",
				      when, (unsigned long long)n))
				return -1;
			continue;
		}
		live++;
		vl = want[n] ? ekv_val(want[n] - 1, cvbuf) : ~0U;
		if (vl == gl && !memcmp(cgbuf, cvbuf, gl))
			continue;
		vl = alt[n] && ~alt[n] ? ekv_val(alt[n] - 1, cvbuf) : ~0U;
		if (!TW_CHECK(vl == gl && !memcmp(cgbuf, cvbuf, gl),
			      "%s: key %llu: a value never acknowledged nor in flight",
			      when, (unsigned long long)n))
			return -1;
	}
	return live;
}

/* valid intent records in image @img (the INTENT chunk at @ioff) */
static unsigned int records_in(const void *img, u64 ioff)
{
	const struct pmidx_intent *r = (const void *)((const u8 *)img + ioff);
	unsigned int i, n = 0;

	for (i = 0; i < PMIDX_NR_INTENTS; i++)
		n += le64_to_cpu(r[i].hdr) >> 48 == PMIDX_INTENT_MAGIC;
	return n;
}

/* Attach crash image @img and check it. Return: false on a failure. */
static bool tw_image(void *img, u64 sz, unsigned int i, const u64 *want,
		     const u64 *alt)
{
	struct b3_walk w = { .validate = true };
	struct pmidx_pool *pool;
	struct pmidx_index *idx;
	const char *why = NULL;
	bool ok = false;
	s64 live = -1;
	struct b3_pcpu s;
	u64 n, keys;
	u8 k[256];

	pool = pmidx_pool_open(img, sz, false, &why);
	if (!TW_CHECK(!IS_ERR(pool), "image %u: attach %ld (%s)", i,
		      PTR_ERR(pool), why))
		return false;
	idx = pmidx_index_lookup(pool, "t");
	if (!TW_CHECK(idx && idx->opened, "image %u: index lost", i))
		goto out;
	live = tw_verify(idx, want, alt, "at attach");
	if (live < 0 ||
	    !TW_CHECK(!idx->ops->check(idx, &keys, &why) && keys == live,
		      "image %u: check: %s, %llu keys of %lld", i, why,
		      (unsigned long long)keys, (long long)live))
		goto out;
	for (n = 0; n < TW * TWKEYS; n += 7) {
		u32 gl = sizeof(cgbuf), kl = ekv_key(n, k);

		if (!idx->ops->get(idx, k, kl, cgbuf, &gl) &&
		    !TW_CHECK(!idx->ops->put(idx, k, kl, cgbuf, gl, 0),
			      "image %u: rewrite of key %llu", i,
			      (unsigned long long)n))
			goto out;
	}
	if (tw_verify(idx, want, alt, "after a writer's pass") != live ||
	    !TW_CHECK(!idx->ops->check(idx, &keys, &why),
		      "image %u: check after a writer's pass: %s", i, why))
		goto out;
	s = b3_sum(idx);
	ok = TW_CHECK(!b3_walk(idx->priv, &w) && s.keys == w.keys &&
		      s.pages == w.pages && s.blob_bytes == w.blob_bytes,
		      "image %u: counters differ from the walk", i);
out:
	pmidx_pool_close(pool);
	return ok;
}

static void b3_crash_threads(void)
{
	const u64 sz = 32ULL << 20;
	void *img = ut_img_alloc(sz), *copy = ut_img_alloc(sz);
	u64 *want = calloc(TW * TWKEYS, sizeof(*want));
	u64 *alt = calloc(TW * TWKEYS, sizeof(*alt));
	u64 started[TW], done[TW], ioff, keys, n, ops = 0;
	unsigned int images = 40, i, w, recs, multi = 0, most = 0;
	struct sigaction sa = { .sa_handler = park }, old;
	struct pmidx_pool *pool;
	struct pmidx_index *idx;
	struct twriter tw[TW];
	_Atomic int stop = 0, hold = 0;
	const char *why = NULL, *e;
	struct b3_pcpu s;

	e = getenv("PMIDX_B3_SNAPSHOTS");
	if (e)
		images = strtoul(e, NULL, 0);
	UT_ASSERT(want && alt);
	b3_test_slots = MSLOTS;
	pool = ut_pool_new(img, sz);
	UT_EQ(pmidx_index_create(pool, "t", PMIDX_ENGINE_B3, &idx, &why), 0);
	for (n = 0; n < TW * TWKEYS; n++)
		UT_EQ(ekv_put(idx, (n * 7919) % (TW * TWKEYS),
			  tw_first((n * 7919) % (TW * TWKEYS))), 0);
	ioff = (u8 *)pool->alloc.intents - (u8 *)pool->pm.base;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	UT_EQ(sigaction(SIGUSR1, &sa, &old), 0);
	/* a writer yields with its record armed: several are in flight */
	b3_test_arm_hook = store_yield;
	for (w = 0; w < TW; w++) {
		tw[w] = (struct twriter){ .idx = idx, .id = w, .stop = &stop,
					  .hold = &hold };
		UT_EQ(pthread_create(&tw[w].th, NULL, tw_run, &tw[w]), 0);
	}
	for (i = 0; i < images; i++) {
		/* each writer makes 30 to 90 ops (loaded machines too) */
		n = 30 + ut_rand(60);
		hold = 0;
		for (w = 0; w < TW; w++)
			while (tw[w].done < (i ? done[w] : 0) + n)
				usleep(100);
		usleep(ut_rand(1000));
		/* every writer stopped where it is, then the copy */
		park_gen++;
		for (w = 0; w < TW; w++)
			pthread_kill(tw[w].th, SIGUSR1);
		while (parked < TW)
			sched_yield();
		memcpy(copy, img, sz);
		for (w = 0; w < TW; w++) {
			started[w] = tw[w].started;
			done[w] = tw[w].done;
		}
		/* they finish their ops and wait while the image is checked */
		hold = 1;
		park_gen++;
		while (parked)
			sched_yield();
		recs = records_in(copy, ioff);
		multi += recs >= 2;
		most = max(most, recs);
		tw_expect(started, done, want, alt);
		if (!tw_image(copy, sz, i, want, alt)) {
			ut_note("image %u had %u records in flight", i, recs);
			break;
		}
	}
	stop = 1;
	for (w = 0; w < TW; w++) {
		pthread_join(tw[w].th, NULL);
		UT_CHECK(!tw[w].errors);
		ops += tw[w].done;
	}
	b3_test_arm_hook = NULL;
	UT_EQ(sigaction(SIGUSR1, &old, NULL), 0);
	s = b3_sum(idx);
	ut_note("b3: %u images of %u writers: %u with 2 or more records in flight, %u at most; %llu ops, %llu splits, %llu merges (%llu redistributions)",
		i, TW, multi, most, (unsigned long long)ops,
		(unsigned long long)s.splits, (unsigned long long)s.merges,
		(unsigned long long)s.redists);
	UT_ASSERT_MSG(!idx->ops->check(idx, &keys, &why), "check: %s", why);
	pmidx_pool_close(pool);
	b3_test_slots = B3_SLOTS;
	free(want);
	free(alt);
	ut_img_free(copy, sz);
	ut_img_free(img, sz);
}

static const struct ut_test tests[] = {
	UT_TEST(b3_flushes),
	UT_TEST(b3_full_pool),
	UT_TEST(b3_del_two_children),
	UT_TEST(b3_crash_counts),
	UT_TEST(b3_traced_refused),
	UT_TEST(b3_structure),
	UT_TEST(b3_space_return),
	UT_TEST(b3_left_missing),
	UT_TEST(b3_dead_leaf),
	UT_TEST(b3_root_sibling),
	UT_TEST(b3_lt_nomem),
	UT_TEST(b3_dup_key),
	UT_TEST(b3_commit_bits),
	UT_TEST(b3_threads),
	UT_TEST(b3_threads_merge),
	UT_TEST(b3_counts_straddle),
	UT_TEST(b3_crash_smo),
	UT_TEST(b3_crash_leftover_smo),
	UT_TEST(b3_crash_merge),
	UT_TEST(b3_crash_threads),
};

int main(int argc, char **argv)
{
	const char *e = getenv("PMIDX_CRASH_SAMPLES");

	if (e)
		samples = strtoul(e, NULL, 0);
	if (crashsim_parse_model(&argc, argv))
		return 2;
	/* every crash attach: the allocator's recovery against a full trace */
	pmidx_recovery_verify = true;
	ekv_use(&kv);
	return ut_main(argc, argv, "b3-crash", tests, ARRAY_SIZE(tests));
}
