// SPDX-License-Identifier: GPL-2.0
/*
 * What the core does for committed-mode engines (core/engine.h), with the
 * toy engines (toy-engine.c) beside the real ccl and utree:
 *  - create enables the intent records and flags the index committed;
 *    attach refuses a committed index without intents, and an index
 *    whose mode differs from its engine's ("re-create the index");
 *    both refuse committed mode on more CPUs than the intents cover;
 *  - drop-index of a committed index goes through DROPPING and frees
 *    every object on media (pmidx_free_committed_now()); a crash during
 *    it, or during the drop the next attach resumes, leaks nothing;
 *  - a pool mixing traced indexes (ccl, utree, the traced toy) and a
 *    committed one: crash images attach, nothing of either is lost or
 *    leaked.
 * Every crash attach runs with pmidx_recovery_verify: the allocator's
 * committed-mode objects must equal what a full trace reaches.
 */
#include <stdlib.h>
#include <linux/crc32.h>
#include <shim/shim.h>
#include "core/engine.h"
#include "core/index_table.h"
#include "crashsim.h"
#include "harness.h"
#include "toy-engine.h"

#define SZ	UT_POOL_SIZE

static u64 vhash(const u8 *v, u32 len)
{
	return ((u64)__crc32c_le(~0U, v, len) << 32 | len) + 1;
}

/* value bytes of (key, version): sizes from empty to a 64 KiB blob class */
static u32 make_val(u8 *buf, u32 k, u32 ver)
{
	u32 len = (k * 131 + ver * 977) % 11 == 0 ? 40000 + ver :
		  (k * 37 + ver * 11) % 700;
	u32 i;

	for (i = 0; i < len; i++)
		buf[i] = k * 7 + ver + i;
	return len;
}

static struct pmidx_index *lookup(struct pmidx_pool *pool, const char *name)
{
	return pmidx_index_lookup(pool, name);
}

/* committed-mode media bitmaps hold nothing (after every drop) */
static u64 media_committed(struct pmidx_pool *pool)
{
	struct pmidx_alloc *a = &pool->alloc;
	u64 n = 0;
	u32 c, k;

	for (c = 0; c < a->nr_chunks; c++) {
		if (a->chunks[c].type != PMIDX_CHUNK_SLAB_C &&
		    a->chunks[c].type != PMIDX_CHUNK_RUN_C)
			continue;
		for (k = 0; k < PMIDX_SLOTS_MAX / 64; k++)
			n += hweight64(le64_to_cpu(a->hdrs[c].bitmap[k]));
	}
	return n;
}

static u8 vbuf[70000], gbuf[70000];

static void put_kv(struct pmidx_index *idx, u32 k, u32 ver)
{
	char key[16];
	u32 vl = make_val(vbuf, k, ver);

	snprintf(key, sizeof(key), "k%u", k);
	UT_EQ(idx->ops->put(idx, (u8 *)key, strlen(key), vbuf, vl, 0), 0);
}

static void get_kv(struct pmidx_index *idx, u32 k, u32 ver)
{
	char key[16];
	u32 vl = make_val(vbuf, k, ver), gl = sizeof(gbuf);

	snprintf(key, sizeof(key), "k%u", k);
	UT_EQ(idx->ops->get(idx, (u8 *)key, strlen(key), gbuf, &gl), 0);
	UT_EQ(gl, vl);
	UT_ASSERT(!memcmp(gbuf, vbuf, vl));
}

/* create, puts/updates/deletes, crash attaches, drop: nothing leaks */
static void committed_create_drop(void)
{
	void *img = ut_img_alloc(SZ), *dup;
	struct pmidx_pool *pool = ut_pool_new(img, SZ);
	struct pmidx_index *idx;
	const char *why;
	u32 k, live = 0;
	u64 f;

	toy_engines_register(true);
	UT_EQ(pmidx_index_create(pool, "c", TOY_COMMITTED_ID, &idx, &why), 0);
	f = le64_to_cpu(pool->sb.feat_incompat);
	UT_ASSERT(f & PMIDX_FEAT_INCOMPAT_INTENTS);
	UT_ASSERT(f & PMIDX_FEAT_INCOMPAT_COMMITTED_IDX);
	UT_ASSERT(pool->alloc.intents);
	UT_ASSERT(idx->committed);
	UT_EQ(le32_to_cpu(pool->itable[idx->id].flags), PMIDX_INDEX_F_COMMITTED);
	for (k = 0; k < 200; k++)
		put_kv(idx, k, 0);
	for (k = 0; k < 200; k += 2)
		put_kv(idx, k, 1);
	UT_EQ(idx->ops->del(idx, (u8 *)"k", 1, 0), -ENOENT);
	for (k = 3; k < 200; k += 4) {
		char key[16];

		snprintf(key, sizeof(key), "k%u", k);
		UT_EQ(idx->ops->del(idx, (u8 *)key, strlen(key), 0), 0);
	}
	live = 150;
	UT_EQ(toy_nodes(idx), live);
	UT_EQ(ut_stat(pool, PMIDX_STAT_ALLOC_OBJECTS), 1 + live);
	UT_EQ(media_committed(pool), live);

	/* a crash now: nothing traced, the checker agrees, all there */
	dup = ut_img_dup(img, SZ);
	pmidx_recovery_verify = true;
	{
		struct pmidx_pool *p2 = ut_pool_open(dup, SZ);
		struct pmidx_index *i2 = lookup(p2, "c");

		UT_ASSERT(p2->flags & PMIDX_POOL_F_RECOVERED);
		UT_ASSERT(i2 && i2->opened);
		for (k = 0; k < 200; k++)
			if (k % 4 != 3)
				get_kv(i2, k, k % 2 ? 0 : 1);
		UT_EQ(ut_stat(p2, PMIDX_STAT_ALLOC_OBJECTS), 1 + live);
		pmidx_pool_close(p2);
	}
	ut_img_free(dup, SZ);

	UT_EQ(pmidx_index_drop(pool, "c", &why), 0);
	UT_EQ(ut_stat(pool, PMIDX_STAT_ALLOC_OBJECTS), 0);
	UT_EQ(media_committed(pool), 0);
	UT_EQ(le64_to_cpu(pool->itable[0].commit), 0);
	dup = ut_img_dup(img, SZ);
	pmidx_pool_close(pool);
	pool = ut_pool_open(dup, SZ);		/* crash after the drop */
	UT_EQ(ut_stat(pool, PMIDX_STAT_ALLOC_OBJECTS), 0);
	pmidx_pool_close(pool);
	pool = ut_pool_open(img, SZ);		/* clean */
	UT_EQ(ut_stat(pool, PMIDX_STAT_ALLOC_OBJECTS), 0);
	pmidx_pool_close(pool);
	pmidx_recovery_verify = false;
	toy_engines_register(false);
	ut_img_free(dup, SZ);
	ut_img_free(img, SZ);
}

/* a half-done drop is finished by the next attach, clean or crash */
static void committed_drop_resume(void)
{
	void *img = ut_img_alloc(SZ), *dup;
	struct pmidx_pool *pool = ut_pool_new(img, SZ);
	struct pmidx_index *idx;
	const char *why;
	u32 k;

	toy_engines_register(true);
	pmidx_recovery_verify = true;
	UT_EQ(pmidx_index_create(pool, "c", TOY_COMMITTED_ID, &idx, &why), 0);
	UT_EQ(pmidx_index_create(pool, "t", TOY_TRACED_ID, &idx, &why), 0);
	for (k = 0; k < 60; k++) {
		put_kv(lookup(pool, "c"), k, 0);
		put_kv(lookup(pool, "t"), k, 0);
	}
	toy_half_drop(pool, "c", 25);
	/* the slot stays taken, the name is free */
	UT_EQ(pmidx_index_create(pool, "c", TOY_TRACED_ID, &idx, &why), 0);
	UT_ASSERT(idx->id % PMIDX_MAX_INDEXES == 2);
	UT_EQ(pmidx_index_drop(pool, "c", &why), 0);
	dup = ut_img_dup(img, SZ);
	toy_abandon(pool);

	/* an attach without the engine keeps the drop for a later one */
	pmidx_test_engines[TOY_COMMITTED_ID] = &pmidx_test_engine_absent;
	pmidx_recovery_verify = false;
	pool = ut_pool_open(dup, SZ);
	UT_ASSERT(pool->dropping[0]);
	pmidx_pool_close(pool);
	toy_engines_register(true);
	pmidx_recovery_verify = true;
	pool = ut_pool_open(dup, SZ);		/* clean: resumes */
	UT_ASSERT(!pool->dropping[0]);
	UT_EQ(ut_stat(pool, PMIDX_STAT_ALLOC_OBJECTS), 1 + 60);
	UT_EQ(media_committed(pool), 0);
	pmidx_pool_close(pool);

	pool = ut_pool_open(img, SZ);		/* after the crash: resumes */
	UT_ASSERT(pool->flags & PMIDX_POOL_F_RECOVERED);
	UT_ASSERT(!pool->dropping[0]);
	UT_EQ(le64_to_cpu(pool->itable[0].commit), 0);
	UT_EQ(ut_stat(pool, PMIDX_STAT_ALLOC_OBJECTS), 1 + 60);
	UT_EQ(media_committed(pool), 0);
	for (k = 0; k < 60; k++)
		get_kv(lookup(pool, "t"), k, 0);
	pmidx_pool_close(pool);
	pmidx_recovery_verify = false;
	toy_engines_register(false);
	ut_img_free(dup, SZ);
	ut_img_free(img, SZ);
}

static void committed_refusals(void)
{
	void *img = ut_img_alloc(SZ), *dup;
	struct pmidx_pool *pool = ut_pool_new(img, SZ);
	struct pmidx_txn *txn;
	struct pmidx_index *idx;
	const char *why = NULL;
	u32 i, c;

	toy_engines_register(true);
	UT_EQ(pmidx_index_create(pool, "c", TOY_COMMITTED_ID, &idx, &why), 0);
	UT_EQ(pmidx_index_create(pool, "t", TOY_TRACED_ID, &idx, &why), 0);
	put_kv(lookup(pool, "c"), 1, 0);
	put_kv(lookup(pool, "t"), 1, 0);

	/* P5: every record taken: -EBUSY, nothing changed */
	txn = calloc(PMIDX_NR_INTENTS, sizeof(*txn));
	UT_ASSERT(txn);
	for (i = 0; i < PMIDX_NR_INTENTS; i++)
		UT_EQ(pmidx_txn_begin(&pool->alloc, &txn[i]), 0);
	{
		struct pmidx_txn one;

		UT_EQ(pmidx_txn_begin(&pool->alloc, &one), -EBUSY);
	}
	shim_set_warn_fatal(false);
	ut_expect_warns(1);
	UT_EQ(lookup(pool, "c")->ops->put(lookup(pool, "c"), (u8 *)"x", 1,
					  (u8 *)"y", 1, 0), -EBUSY);
	shim_set_warn_fatal(true);
	for (i = 0; i < PMIDX_NR_INTENTS; i++)
		pmidx_txn_end(&pool->alloc, &txn[i]);
	free(txn);
	UT_EQ(ut_stat(pool, PMIDX_STAT_ALLOC_OBJECTS), 2 + 2);
	pmidx_pool_close(pool);

	/* the engine is not built in: attach works, drop is refused */
	toy_engines_register(false);
	pool = ut_pool_open(img, SZ);
	UT_EQ(pmidx_index_drop(pool, "c", &why), -EOPNOTSUPP);
	UT_EQ(pmidx_index_drop(pool, "t", &why), 0);	/* traced: as always */
	pmidx_pool_close(pool);
	toy_engines_register(true);
	pool = ut_pool_open(img, SZ);
	UT_EQ(pmidx_index_create(pool, "t", TOY_TRACED_ID, &idx, &why), 0);
	pmidx_pool_close(pool);

	/* an engine now in the other mode: re-create the index */
	pmidx_test_engines[TOY_TRACED_ID] = &toy_committed_ops;
	UT_EQ(ut_pool_open_err(img, SZ, &why), -EUCLEAN);
	UT_ASSERT(strstr(why, "re-create"));
	toy_engines_register(true);
	pmidx_test_engines[TOY_COMMITTED_ID] = &toy_traced_ops;
	UT_EQ(ut_pool_open_err(img, SZ, &why), -EUCLEAN);
	UT_ASSERT(strstr(why, "re-create"));
	toy_engines_register(true);

	/* a committed index without the intent chunk is corrupt */
	dup = ut_img_dup(img, SZ);
	pool = ut_pool_open(dup, SZ);
	for (c = 0; c < pool->alloc.nr_chunks; c++)
		if (pool->alloc.chunks[c].type == PMIDX_CHUNK_INTENT)
			break;
	UT_ASSERT(c < pool->alloc.nr_chunks);
	pool->needs_trace = true;
	pmidx_pool_close(pool);
	((struct pmidx_chunk_hdr *)((u8 *)dup + PMIDX_CHUNK_HDR_OFF))[c].desc = 0;
	UT_EQ(ut_pool_open_err(dup, SZ, &why), -EUCLEAN);
	UT_ASSERT(strstr(why, "intent"));
	toy_engines_register(false);
	ut_img_free(dup, SZ);
	ut_img_free(img, SZ);
}

/*
 * Committed-mode review M1: the intent records cover PMIDX_TXN_CPUS_MAX
 * CPUs (alloc.h, "Records in flight"). Above that an attach of a pool
 * with a committed index is refused (clean or after a crash) and leaves
 * the image as it was; creating a committed index is refused; traced
 * indexes go on.
 */
static void committed_cpu_limit(void)
{
	void *img = ut_img_alloc(SZ), *dup, *copy;
	struct pmidx_pool *pool = ut_pool_new(img, SZ);
	struct pmidx_index *idx;
	const char *why = NULL;

	UT_ASSERT(PMIDX_TXN_CPUS_MAX >= 1024);
	toy_engines_register(true);
	UT_EQ(pmidx_index_create(pool, "t", TOY_TRACED_ID, &idx, &why), 0);
	put_kv(idx, 1, 0);
	pmidx_test_nr_cpus = PMIDX_TXN_CPUS_MAX + 1;
	UT_EQ(pmidx_index_create(pool, "c", TOY_COMMITTED_ID, &idx, &why),
	      -EOPNOTSUPP);
	UT_ASSERT_MSG(strstr(why, "CPUs"), "why: %s", why);
	UT_ASSERT(!lookup(pool, "c"));
	UT_ASSERT(!(le64_to_cpu(pool->sb.feat_incompat) &
		    PMIDX_FEAT_INCOMPAT_COMMITTED_IDX));
	UT_EQ(pmidx_index_create(pool, "t2", TOY_TRACED_ID, &idx, &why), 0);
	pmidx_test_nr_cpus = PMIDX_TXN_CPUS_MAX;
	UT_EQ(pmidx_index_create(pool, "c", TOY_COMMITTED_ID, &idx, &why), 0);
	put_kv(idx, 2, 0);
	dup = ut_img_dup(img, SZ);		/* a crash */
	pmidx_pool_close(pool);

	pmidx_test_nr_cpus = PMIDX_TXN_CPUS_MAX + 1;
	copy = ut_img_dup(img, SZ);
	UT_EQ(ut_pool_open_err(img, SZ, &why), -EOPNOTSUPP);
	UT_ASSERT_MSG(strstr(why, "CPUs"), "why: %s", why);
	UT_ASSERT(!memcmp(img, copy, SZ));
	ut_img_free(copy, SZ);
	copy = ut_img_dup(dup, SZ);
	UT_EQ(ut_pool_open_err(dup, SZ, &why), -EOPNOTSUPP);
	UT_ASSERT(!memcmp(dup, copy, SZ));
	ut_img_free(copy, SZ);

	/* a module without the engine serves the rest: no txn runs */
	pmidx_test_engines[TOY_COMMITTED_ID] = &pmidx_test_engine_absent;
	pool = ut_pool_open(img, SZ);
	UT_ASSERT(!lookup(pool, "c")->opened);
	get_kv(lookup(pool, "t"), 1, 0);
	pmidx_pool_close(pool);
	toy_engines_register(true);

	pmidx_test_nr_cpus = PMIDX_TXN_CPUS_MAX;
	pmidx_recovery_verify = true;
	pool = ut_pool_open(dup, SZ);
	UT_ASSERT(pool->flags & PMIDX_POOL_F_RECOVERED);
	get_kv(lookup(pool, "c"), 2, 0);
	get_kv(lookup(pool, "t"), 1, 0);
	pmidx_pool_close(pool);
	pmidx_recovery_verify = false;
	pmidx_test_nr_cpus = 0;
	toy_engines_register(false);
	ut_img_free(dup, SZ);
	ut_img_free(img, SZ);
}

/* ---- a drop waiting for its engine (review H1) ------------------------- */

#define BIG_SZ		(64ULL << 20)
#define BIGV		150000	/* a toy node of this value is a one-chunk run */
#define FREEZE_ID	PMIDX_ENGINE_B3	/* a second committed toy engine */

static u8 bigv[BIGV], bigg[BIGV];

static void big_val(u32 k)
{
	memset(bigv, k * 13 + 1, BIGV);
	memcpy(bigv, &k, sizeof(k));
}

/* the next "d<n>" key of toy bucket 0: such keys make one chain */
static u32 chain_key(char *key, size_t len, u32 *n)
{
	for (;;) {
		u32 h = 2166136261u, i, l;

		l = snprintf(key, len, "d%u", (*n)++);
		for (i = 0; i < l; i++)
			h = (h ^ (u8)key[i]) * 16777619u;
		if (h % (PMIDX_INDEX_ROOT_SIZE / 8) == 0)
			return l;
	}
}

static void big_put(struct pmidx_index *idx, const char *key, u32 k)
{
	big_val(k);
	UT_EQ(idx->ops->put(idx, (const u8 *)key, strlen(key), bigv, BIGV, 0), 0);
}

static void big_get(struct pmidx_index *idx, const char *key, u32 k)
{
	u32 gl = sizeof(bigg);

	big_val(k);
	UT_EQ(idx->ops->get(idx, (const u8 *)key, strlen(key), bigg, &gl), 0);
	UT_EQ(gl, BIGV);
	UT_ASSERT(!memcmp(bigg, bigv, BIGV));
}

static u32 chunks_of(struct pmidx_pool *pool, u8 type)
{
	u32 c, n = 0;

	for (c = 0; c < pool->alloc.nr_chunks; c++)
		n += pool->alloc.chunks[c].type == type;
	return n;
}

/*
 * A committed index @nc one-chunk nodes long (one chain), cut mid-drop
 * after @cut commit bits, as pmidx_index_drop() leaves it (the DRAM
 * frees deferred). Slot 0 is the dropping index; @with_c2: a second
 * committed index "c2" (keys 1, 2) served under FREEZE_ID.
 */
static void *absent_drop_image(void *img, u32 nc, u32 cut, bool with_c2)
{
	struct pmidx_pool *pool = ut_pool_new(img, BIG_SZ);
	struct pmidx_index *idx;
	const char *why;
	char key[32];
	u32 k, n = 0;
	void *dup;

	UT_EQ(pmidx_index_create(pool, "c", TOY_COMMITTED_ID, &idx, &why), 0);
	UT_EQ(pmidx_index_create(pool, "t", TOY_TRACED_ID, &idx, &why), 0);
	if (with_c2) {
		UT_EQ(pmidx_index_create(pool, "c2", FREEZE_ID, &idx, &why), 0);
		put_kv(idx, 1, 0);
		put_kv(idx, 2, 0);
	}
	for (k = 0; k < nc; k++) {
		chain_key(key, sizeof(key), &n);
		big_put(lookup(pool, "c"), key, k);
	}
	put_kv(lookup(pool, "t"), 1, 0);
	UT_EQ(media_committed(pool), nc + (with_c2 ? 2 : 0));
	pmidx_alloc_defer_begin(&pool->alloc);
	toy_half_drop(pool, "c", cut);
	dup = ut_img_dup(img, BIG_SZ);		/* the crash */
	pmidx_alloc_defer_end(&pool->alloc);
	toy_abandon(pool);
	return dup;
}

/*
 * T1: an attach without the engine grows a traced index over the chunks
 * the interrupted drop had emptied; the attach with the engine then
 * resumes the drop, which must still find every object it had not freed.
 */
static void committed_drop_absent_reuse(void)
{
	void *img = ut_img_alloc(BIG_SZ), *dup, *crash, *imgs[2];
	struct pmidx_pool *pool;
	struct pmidx_index *t;
	char key[32];
	u32 k, i;

	toy_engines_register(true);
	dup = absent_drop_image(img, 40, 20, false);

	pmidx_test_engines[TOY_COMMITTED_ID] = &pmidx_test_engine_absent;
	pool = ut_pool_open(dup, BIG_SZ);
	UT_ASSERT(pool->dropping[0]);
	t = lookup(pool, "t");
	for (k = 0; k < 60; k++) {
		snprintf(key, sizeof(key), "t%u", k);
		big_put(t, key, 1000 + k);
	}
	ut_note("absent-engine session: %u committed runs kept, %llu free chunks",
		chunks_of(pool, PMIDX_CHUNK_RUN_C),
		(unsigned long long)ut_stat(pool, PMIDX_STAT_ALLOC_FREE_CHUNKS));
	crash = ut_img_dup(dup, BIG_SZ);	/* a crash of that session */
	pmidx_pool_close(pool);

	/* the engine is back: clean attach, then the crash, under the checker */
	toy_engines_register(true);
	pmidx_recovery_verify = true;
	imgs[0] = dup;
	imgs[1] = crash;
	for (i = 0; i < 2; i++) {
		pool = ut_pool_open(imgs[i], BIG_SZ);
		UT_EQ(!!(pool->flags & PMIDX_POOL_F_RECOVERED), i);
		UT_ASSERT(!pool->dropping[0]);
		ut_note("%s attach: resumed drop left %llu commit bits",
			i ? "crash" : "clean",
			(unsigned long long)media_committed(pool));
		UT_EQ(media_committed(pool), 0);
		UT_EQ(chunks_of(pool, PMIDX_CHUNK_RUN_C), 0);
		t = lookup(pool, "t");
		get_kv(t, 1, 0);
		for (k = 0; k < 60; k++) {
			snprintf(key, sizeof(key), "t%u", k);
			big_get(t, key, 1000 + k);
		}
		UT_EQ(toy_nodes(t), 61);
		UT_EQ(ut_stat(pool, PMIDX_STAT_ALLOC_OBJECTS), 1 + 61);
		pmidx_pool_close(pool);
	}
	pmidx_recovery_verify = false;
	toy_engines_register(false);
	ut_img_free(crash, BIG_SZ);
	ut_img_free(dup, BIG_SZ);
	ut_img_free(img, BIG_SZ);
}

/*
 * While that drop waits: committed chunks are kept, committed
 * allocations fail, a committed index cannot be created; with the
 * engine back all is as usual.
 */
static void committed_drop_absent_frozen(void)
{
	void *img = ut_img_alloc(BIG_SZ), *dup;
	struct pmidx_pool *pool;
	struct pmidx_index *idx;
	const char *why = NULL;
	u32 runs;

	toy_engines_register(true);
	pmidx_test_engines[FREEZE_ID] = &toy_committed_ops;
	dup = absent_drop_image(img, 12, 12, true);	/* every bit cleared */

	pmidx_test_engines[TOY_COMMITTED_ID] = &pmidx_test_engine_absent;
	pool = ut_pool_open(dup, BIG_SZ);
	UT_ASSERT(pool->dropping[0]);
	runs = chunks_of(pool, PMIDX_CHUNK_RUN_C);
	UT_EQ(runs, 12);		/* empty, kept for the resumed walk */
	UT_EQ(pmidx_alloc_committed(&pool->alloc, 100), 0);
	UT_EQ(pmidx_alloc_committed(&pool->alloc, BIGV), 0);
	idx = lookup(pool, "c2");
	UT_EQ(idx->ops->put(idx, (u8 *)"x", 1, (u8 *)"y", 1, 0), -ENOSPC);
	get_kv(idx, 1, 0);
	UT_EQ(idx->ops->del(idx, (u8 *)"k2", 2, 0), 0);	/* frees work */
	why = NULL;
	UT_EQ(pmidx_index_create(pool, "c3", FREEZE_ID, &idx, &why), -EBUSY);
	UT_ASSERT(why && strstr(why, "drop"));
	UT_EQ(pmidx_index_create(pool, "t3", TOY_TRACED_ID, &idx, &why), 0);
	UT_EQ(chunks_of(pool, PMIDX_CHUNK_RUN_C), runs);
	pmidx_pool_close(pool);

	/* still kept by the next attach without the engine (clean load) */
	pool = ut_pool_open(dup, BIG_SZ);
	UT_EQ(chunks_of(pool, PMIDX_CHUNK_RUN_C), runs);
	pmidx_pool_close(pool);

	toy_engines_register(true);
	pmidx_test_engines[FREEZE_ID] = &toy_committed_ops;
	pool = ut_pool_open(dup, BIG_SZ);
	UT_ASSERT(!pool->dropping[0]);
	UT_EQ(chunks_of(pool, PMIDX_CHUNK_RUN_C), 0);
	UT_EQ(media_committed(pool), 1);
	idx = lookup(pool, "c2");
	put_kv(idx, 3, 0);
	get_kv(idx, 1, 0);
	UT_EQ(pmidx_index_create(pool, "c3", FREEZE_ID, &idx, &why), 0);
	pmidx_pool_close(pool);
	pmidx_test_engines[FREEZE_ID] = NULL;
	toy_engines_register(false);
	ut_img_free(dup, BIG_SZ);
	ut_img_free(img, BIG_SZ);
}

/* ---- under the crash simulator ----------------------------------------- */

struct wl_arg {
	u64	seed;
	bool	mix;		/* ccl, utree and the traced toy beside */
	u32	keys;
};

/* model key "NAME/kK" */
static int op_put(struct crashsim *cs, struct pmidx_pool *pool,
		  const char *name, u32 k, u32 ver)
{
	struct pmidx_index *idx = lookup(pool, name);
	char mk[40], *key;
	u32 vl = make_val(vbuf, k, ver);
	unsigned int op;
	int ret;

	snprintf(mk, sizeof(mk), "%s/k%u", name, k);
	key = strchr(mk, '/') + 1;
	op = crashsim_op_begin(cs, CRASHSIM_OP_PUT, "put", mk, strlen(mk),
			       vhash(vbuf, vl));
	ret = idx->ops->put(idx, (u8 *)key, strlen(key), vbuf, vl, 0);
	if (!ret)
		crashsim_op_ack(cs, op);
	return ret;
}

static int op_del(struct crashsim *cs, struct pmidx_pool *pool,
		  const char *name, u32 k)
{
	struct pmidx_index *idx = lookup(pool, name);
	char mk[40], *key;
	unsigned int op;
	int ret;

	snprintf(mk, sizeof(mk), "%s/k%u", name, k);
	key = strchr(mk, '/') + 1;
	op = crashsim_op_begin(cs, CRASHSIM_OP_DEL, "del", mk, strlen(mk), 0);
	ret = idx->ops->del(idx, (u8 *)key, strlen(key), 0);
	if (!ret || ret == -ENOENT)
		crashsim_op_ack(cs, op);
	return ret == -ENOENT ? 0 : ret;
}

/* the model's dropped index loses its keys too */
static void forget_keys(struct crashsim *cs, const char *name, u32 keys)
{
	char mk[40];
	u32 k;

	for (k = 0; k < keys; k++) {
		unsigned int op;

		snprintf(mk, sizeof(mk), "%s/k%u", name, k);
		op = crashsim_op_begin(cs, CRASHSIM_OP_DEL, "forget", mk,
				       strlen(mk), 0);
		crashsim_op_ack(cs, op);
	}
}

static struct pmidx_pool *op_open(void *img, u64 size)
{
	const char *why = NULL;
	struct pmidx_pool *pool = pmidx_pool_open(img, size, false, &why);

	if (IS_ERR(pool)) {
		printf("# workload: attach failed: %ld (%s)\n", PTR_ERR(pool), why);
		return NULL;
	}
	return pool;
}

static u64 wl_state;

static u32 wl_rand(u32 n)
{
	wl_state ^= wl_state << 13;
	wl_state ^= wl_state >> 7;
	wl_state ^= wl_state << 17;
	return (u32)(((wl_state >> 32) * (u64)n) >> 32);
}

static int kv_round(struct crashsim *cs, struct pmidx_pool *pool,
		    const char *const *names, unsigned int n, u32 keys,
		    unsigned int steps)
{
	unsigned int i;
	int ret = 0;

	for (i = 0; !ret && i < steps; i++) {
		const char *nm = names[wl_rand(n)];
		u32 k = wl_rand(keys);

		if (wl_rand(4))
			ret = op_put(cs, pool, nm, k, wl_rand(5));
		else
			ret = op_del(cs, pool, nm, k);
	}
	return ret;
}

/*
 * create c (committed), puts/updates/deletes, drop c (live drop); create
 * d, puts, half-drop d and crash (abandon); attach (the drop resumes);
 * create e, puts, a clean detach. With @mix: a ccl, a utree and a traced
 * toy index take puts all along.
 */
static int wl_committed(struct crashsim *cs, void *img, u64 size, void *arg)
{
	static const char *const cm[] = { "c" }, *const dm[] = { "d" };
	static const char *const mixed[] = { "c", "k", "u", "t" };
	static const char *const after[] = { "e", "k", "u", "t" };
	static const char *const em[] = { "e" };
	struct wl_arg *a = arg;
	struct pmidx_pool *pool;
	const char *why = NULL;
	unsigned int op, steps = a->mix ? 40 : 16;
	int ret;

	wl_state = a->seed | 1;
	op = crashsim_op_begin(cs, CRASHSIM_OP_NOTE, "format", NULL, 0, 0);
	ret = pmidx_pool_format(img, size, true, &why);
	if (ret)
		return ret;
	crashsim_op_ack(cs, op);
	pool = op_open(img, size);
	if (!pool)
		return -EIO;
	ret = crashsim_index_create(cs, pool, "c", TOY_COMMITTED_ID);
	if (!ret && a->mix)
		ret = crashsim_index_create(cs, pool, "k", PMIDX_ENGINE_CCL) ?:
		      crashsim_index_create(cs, pool, "u", PMIDX_ENGINE_UTREE) ?:
		      crashsim_index_create(cs, pool, "t", TOY_TRACED_ID);
	if (!ret)
		ret = kv_round(cs, pool, a->mix ? mixed : cm, a->mix ? 4 : 1,
			       a->keys, steps);
	if (!ret) {
		ret = crashsim_index_drop(cs, pool, "c");
		forget_keys(cs, "c", a->keys);
	}
	if (!ret)
		ret = crashsim_index_create(cs, pool, "d", TOY_COMMITTED_ID);
	if (!ret)
		ret = kv_round(cs, pool, dm, 1, a->keys, steps / 2);
	if (ret) {
		pmidx_pool_close(pool);
		return ret;
	}
	/* the drop of d is acknowledged by the attach that finishes it */
	op = crashsim_op_begin(cs, CRASHSIM_OP_DEL, "drop", "d", 1, 0);
	toy_half_drop(pool, "d", toy_nodes(lookup(pool, "d")) / 2);
	toy_abandon(pool);
	pool = op_open(img, size);
	if (!pool)
		return -EIO;
	crashsim_op_ack(cs, op);
	forget_keys(cs, "d", a->keys);
	ret = crashsim_index_create(cs, pool, "e", TOY_COMMITTED_ID);
	if (!ret)
		ret = kv_round(cs, pool, a->mix ? after : em, a->mix ? 4 : 1,
			       a->keys, steps / 2);
	if (!ret && a->mix)
		ret = crashsim_index_drop(cs, pool, "t");
	pmidx_pool_close(pool);
	return ret;
}

static int wl_check(struct crashsim *cs, const struct crashsim_point *pt,
		    struct pmidx_pool *pool, int err, const char *why, void *arg)
{
	struct crashsim_expect e;
	const u8 *key;
	unsigned int i;
	u32 klen;
	bool exact = true;
	u64 nodes = 0;

	if (!pool) {
		if (!crashsim_note_acked(cs, "format"))
			return 0;
		crashsim_fail(cs, "attach failed: %d (%s)", err, why);
		return -1;
	}
	for (i = 0; (key = crashsim_key(cs, i, &klen)); i++) {
		char mk[64] = {}, *slash;
		struct pmidx_index *idx;
		u32 gl = sizeof(gbuf);
		bool have;
		u64 v = 0;
		int ret;

		memcpy(mk, key, min(klen, 63U));
		crashsim_expect(cs, key, klen, &e);
		slash = strchr(mk, '/');
		if (!slash) {
			idx = lookup(pool, mk);
			if (!crashsim_expect_ok(&e, idx, idx ? idx->engine : 0))
				crashsim_fail(cs, "index %s: %s, expected otherwise",
					      mk, idx ? "present" : "absent");
			continue;
		}
		*slash = 0;
		idx = lookup(pool, mk);
		if (!idx) {
			/* judged with the index (its drop may be in flight) */
			continue;
		} else {
			ret = idx->ops->get(idx, (u8 *)slash + 1,
					    strlen(slash + 1), gbuf, &gl);
			have = !ret;
			if (ret && ret != -ENOENT)
				crashsim_fail(cs, "%s/%s: get: %d", mk,
					      slash + 1, ret);
			if (have)
				v = vhash(gbuf, gl);
		}
		if (!crashsim_expect_ok(&e, have, v))
			crashsim_fail(cs, "%s/%s: %s, not what was acknowledged",
				      mk, slash + 1, have ? "present" : "absent");
	}
	for (i = 0; i < PMIDX_MAX_INDEXES; i++) {
		struct pmidx_index *idx = pool->indexes[i];

		if (pool->dropping[i])
			crashsim_fail(cs, "index %s: drop not finished at attach",
				      pool->dropping[i]->name);
		if (!idx)
			continue;
		if (idx->ops->check) {
			const char *cwhy = NULL;
			u64 keys;

			if (idx->ops->check(idx, &keys, &cwhy))
				crashsim_fail(cs, "index %s: check: %s",
					      idx->name, cwhy);
		}
		if (idx->ops == &toy_committed_ops || idx->ops == &toy_traced_ops)
			nodes += toy_nodes(idx);
		else
			exact = false;	/* ccl, utree: objects of their own */
	}
	crashsim_check_pool(cs, pool, exact ? (s64)nodes : -1);
	return 0;
}

static void run(const char *name, bool mix, bool at_flushes, u32 keys,
		unsigned int samples)
{
	struct wl_arg arg = { .seed = ut_seed, .mix = mix, .keys = keys };
	struct crashsim_workload wl = {
		.name = name, .run = wl_committed, .check = wl_check, .arg = &arg,
	};
	struct crashsim_config cfg = {
		.seed = ut_seed, .variants = 2, .samples = samples,
		.exhaustive_max = samples, .at_flushes = at_flushes,
	};
	struct crashsim_result res;

	crashsim_config_env(&cfg);
	toy_engines_register(true);
	pmidx_recovery_verify = true;
	UT_EQ(crashsim_run(&cfg, &wl, &res), 0);
	pmidx_recovery_verify = false;
	toy_engines_register(false);
	crashsim_print_result(name, &cfg, &res);
	UT_CRASH_OK(res, true);
}

/* committed toy only, every fence and flush a crash point */
static void committed_crash_drop(void)
{
	run("committed_crash_drop", false, true, 12, 100000);
}

/* ccl, utree, traced toy and committed toy in one pool, sampled points */
static void committed_crash_mix(void)
{
	run("committed_crash_mix", true, false, 16, 400);
}

static const struct ut_test tests[] = {
	UT_TEST(committed_create_drop),
	UT_TEST(committed_drop_resume),
	UT_TEST(committed_refusals),
	UT_TEST(committed_cpu_limit),
	UT_TEST(committed_drop_absent_reuse),
	UT_TEST(committed_drop_absent_frozen),
	UT_TEST(committed_crash_drop),
	UT_TEST(committed_crash_mix),
};

int main(int argc, char **argv)
{
	if (crashsim_parse_model(&argc, argv))
		return 2;
	return ut_main(argc, argv, "committed", tests, ARRAY_SIZE(tests));
}
