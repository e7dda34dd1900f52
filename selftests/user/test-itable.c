// SPDX-License-Identifier: GPL-2.0
/*
 * Index table: create/drop/lookup, name rules, persistence across
 * detach/attach and across a crash, a full table, and corrupt entries.
 */
#include <linux/crc32.h>
#include <shim/shim.h>
#include "core/engine.h"
#include "core/index_table.h"
#include "harness.h"

#define SZ	UT_POOL_SIZE

static struct pmidx_index_entry *entry_at(void *img, unsigned int i)
{
	return (struct pmidx_index_entry *)((char *)img + PMIDX_INDEX_TABLE_OFF) + i;
}

static void entry_reseal(struct pmidx_index_entry *e)
{
	e->crc = cpu_to_le32(~__crc32c_le(~0U, (const u8 *)e,
					  offsetof(struct pmidx_index_entry, crc)));
}

static struct pmidx_index *create(struct pmidx_pool *pool, const char *name,
				  u32 engine)
{
	struct pmidx_index *idx = NULL;
	const char *why = NULL;
	int ret = pmidx_index_create(pool, name, engine, &idx, &why);

	UT_ASSERT_MSG(!ret, "create %s: %d (%s)", name, ret, why);
	return idx;
}

static bool root_is_zero(struct pmidx_pool *pool, u64 root)
{
	return !memchr_inv(pmidx_ptr(&pool->pm, root), 0, PMIDX_INDEX_ROOT_SIZE);
}

static void itable_create_lookup_drop(void)
{
	void *img = ut_img_alloc(SZ);
	struct pmidx_pool *pool = ut_pool_new(img, SZ);
	struct pmidx_index *a, *b;
	const char *why = NULL;
	u32 old_id;

	a = create(pool, "inodes", PMIDX_ENGINE_CCL);
	b = create(pool, "dentries", PMIDX_ENGINE_UTREE);
	UT_ASSERT(a != b && a->id != b->id);
	UT_ASSERT(pmidx_index_lookup(pool, "inodes") == a);
	UT_ASSERT(pmidx_index_lookup(pool, "dentries") == b);
	UT_ASSERT(pmidx_index_get(pool, a->id) == a);
	pmidx_index_put(a);
	UT_ASSERT(!pmidx_index_lookup(pool, "nope"));
	UT_EQ(a->engine, PMIDX_ENGINE_CCL);
	UT_ASSERT(pmidx_alloc_valid(&pool->alloc, a->root, PMIDX_INDEX_ROOT_SIZE));
	UT_ASSERT(root_is_zero(pool, a->root));
	UT_EQ(ut_stat(pool, PMIDX_STAT_ALLOC_OBJECTS), 2);
	UT_EQ(pmidx_index_create(pool, "inodes", PMIDX_ENGINE_UTREE, &a, &why), -EEXIST);
	UT_EQ(pmidx_index_create(pool, "x", PMIDX_ENGINE_NONE, &a, &why), -EINVAL);
	UT_EQ(pmidx_index_create(pool, "x", __PMIDX_ENGINE_MAX, &a, &why), -EINVAL);
	/* an engine the build lacks: refused, nothing persisted */
	pmidx_test_engines[PMIDX_ENGINE_PFART] = &pmidx_test_engine_absent;
	UT_EQ(pmidx_index_create(pool, "x", PMIDX_ENGINE_PFART, &a, &why),
	      -EOPNOTSUPP);
	pmidx_test_engines[PMIDX_ENGINE_PFART] = NULL;
	UT_ASSERT(!pmidx_index_lookup(pool, "x"));
	UT_EQ(ut_stat(pool, PMIDX_STAT_ALLOC_OBJECTS), 2);
	old_id = a->id;
	UT_EQ(pmidx_index_drop(pool, "inodes", &why), 0);
	UT_ASSERT(!pmidx_index_lookup(pool, "inodes"));
	UT_EQ(pmidx_index_drop(pool, "inodes", &why), -ENOENT);
	UT_EQ(ut_stat(pool, PMIDX_STAT_ALLOC_OBJECTS), 1);
	UT_ASSERT(!pmidx_index_get(pool, old_id));
	/* the name is free again; the slot too, under a new id */
	a = create(pool, "inodes", PMIDX_ENGINE_CCL);
	UT_EQ(a->engine, PMIDX_ENGINE_CCL);
	UT_EQ(a->id % PMIDX_MAX_INDEXES, old_id % PMIDX_MAX_INDEXES);
	UT_ASSERT(a->id != old_id);
	UT_ASSERT(!pmidx_index_get(pool, old_id));
	UT_ASSERT(pmidx_index_get(pool, a->id) == a);
	pmidx_index_put(a);
	pmidx_pool_close(pool);
	ut_img_free(img, SZ);
}

static void itable_names(void)
{
	static const struct {
		const char *name;
		int err;
	} cases[] = {
		{ "a", 0 }, { "A.b_c:d-9", 0 },
		{ "123456789012345678901234567890123456789012345678901234567890123", 0 },
		{ "", -EINVAL },
		{ "1234567890123456789012345678901234567890123456789012345678901234",
		  -ENAMETOOLONG },
		{ "a b", -EINVAL }, { "a/b", -EINVAL }, { "a\nb", -EINVAL },
		{ "caf\xc3\xa9", -EINVAL },	/* UTF-8 */
		{ "\xc0\xc1", -EINVAL },	/* Latin-1 letters: still not [A-Za-z] */
		{ "a*", -EINVAL }, { "%s", -EINVAL },
	};
	void *img = ut_img_alloc(SZ);
	struct pmidx_pool *pool = ut_pool_new(img, SZ);
	const char *why;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		struct pmidx_index *idx = NULL;
		int ret;

		why = NULL;
		UT_ASSERT_MSG(pmidx_name_check(cases[i].name, &why) == cases[i].err,
			      "name case %u", i);
		ret = pmidx_index_create(pool, cases[i].name, PMIDX_ENGINE_CCL,
					 &idx, &why);
		UT_ASSERT_MSG(ret == cases[i].err, "create case %u: %d", i, ret);
		if (!ret)
			UT_EQ(strcmp(idx->name, cases[i].name), 0);
	}
	pmidx_pool_close(pool);
	/* every name that was accepted loads back */
	pool = ut_pool_open(img, SZ);
	UT_ASSERT(pmidx_index_lookup(pool, "A.b_c:d-9"));
	pmidx_pool_close(pool);
	ut_img_free(img, SZ);
}

/* detach/attach keeps indexes, engines, roots; objects stay allocated */
static void itable_persist_reopen(void)
{
	void *img = ut_img_alloc(SZ);
	struct pmidx_pool *pool = ut_pool_new(img, SZ);
	u64 roots[6];
	char name[16];
	unsigned int i, round;

	for (i = 0; i < 6; i++) {
		snprintf(name, sizeof(name), "idx%u", i);
		roots[i] = create(pool, name, 1 + i % 2)->root;
	}
	UT_EQ(pmidx_index_drop(pool, "idx2", &(const char *){ NULL }), 0);
	for (round = 0; round < 3; round++) {
		pmidx_pool_close(pool);
		pool = ut_pool_open(img, SZ);
		UT_ASSERT(!(pool->flags & PMIDX_POOL_F_RECOVERED));
		for (i = 0; i < 6; i++) {
			struct pmidx_index *idx;

			snprintf(name, sizeof(name), "idx%u", i);
			idx = pmidx_index_lookup(pool, name);
			if (i == 2) {
				UT_ASSERT(!idx);
				continue;
			}
			UT_ASSERT(idx);
			UT_EQ(idx->engine, 1 + i % 2);
			UT_EQ(idx->root, roots[i]);
			UT_ASSERT(pmidx_alloc_valid(&pool->alloc, idx->root,
						    PMIDX_INDEX_ROOT_SIZE));
		}
		UT_EQ(ut_stat(pool, PMIDX_STAT_ALLOC_OBJECTS), 5);
		/* a new root never lands on an old one */
		snprintf(name, sizeof(name), "new%u", round);
		{
			u64 r = create(pool, name, PMIDX_ENGINE_UTREE)->root;

			for (i = 0; i < 6; i++)
				UT_ASSERT(r != roots[i] || i == 2);
			UT_EQ(pmidx_index_drop(pool, name, &(const char *){ NULL }), 0);
		}
	}
	pmidx_pool_close(pool);
	ut_img_free(img, SZ);
}

/* a crash (image copied while attached) keeps every completed create/drop */
static void itable_crash_reopen(void)
{
	void *img = ut_img_alloc(SZ), *crash;
	struct pmidx_pool *pool = ut_pool_new(img, SZ), *rec;
	const char *why = NULL;
	char name[16];
	unsigned int i;

	for (i = 0; i < 10; i++) {
		snprintf(name, sizeof(name), "c%u", i);
		create(pool, name, PMIDX_ENGINE_CCL);
	}
	for (i = 0; i < 10; i += 3) {
		snprintf(name, sizeof(name), "c%u", i);
		UT_EQ(pmidx_index_drop(pool, name, &why), 0);
	}
	crash = ut_img_dup(img, SZ);
	rec = ut_pool_open(crash, SZ);
	UT_ASSERT(rec->flags & PMIDX_POOL_F_RECOVERED);
	for (i = 0; i < 10; i++) {
		struct pmidx_index *a, *b;

		snprintf(name, sizeof(name), "c%u", i);
		a = pmidx_index_lookup(pool, name);
		b = pmidx_index_lookup(rec, name);
		UT_ASSERT(!a == !b);
		if (a)
			UT_EQ(a->root, b->root);
	}
	UT_EQ(ut_stat(rec, PMIDX_STAT_ALLOC_OBJECTS), 6);
	UT_EQ(ut_stat(rec, PMIDX_STAT_RECOVERED_OBJECTS), 6);
	pmidx_pool_close(rec);
	pmidx_pool_close(pool);
	ut_img_free(crash, SZ);
	ut_img_free(img, SZ);
}

static void itable_full(void)
{
	void *img = ut_img_alloc(SZ);
	struct pmidx_pool *pool = ut_pool_new(img, SZ);
	struct pmidx_index *idx;
	const char *why = NULL;
	char name[16];
	unsigned int i;

	for (i = 0; i < PMIDX_MAX_INDEXES; i++) {
		snprintf(name, sizeof(name), "t%u", i);
		create(pool, name, 1 + i % 2);
	}
	UT_EQ(pmidx_index_create(pool, "one-more", PMIDX_ENGINE_CCL, &idx, &why),
	      -ENOSPC);
	UT_ASSERT(why && strstr(why, "full"));
	UT_EQ(pmidx_index_drop(pool, "t17", &why), 0);
	idx = create(pool, "one-more", PMIDX_ENGINE_CCL);
	UT_EQ(idx->id % PMIDX_MAX_INDEXES, 17);	/* the slot, a new generation */
	UT_ASSERT(idx->id != 17);
	pmidx_pool_close(pool);
	pool = ut_pool_open(img, SZ);
	UT_ASSERT(pmidx_index_lookup(pool, "one-more"));
	UT_ASSERT(pmidx_index_lookup(pool, "t63"));
	UT_EQ(ut_stat(pool, PMIDX_STAT_ALLOC_OBJECTS), PMIDX_MAX_INDEXES);
	pmidx_pool_close(pool);
	ut_img_free(img, SZ);
}

/* image with indexes a (slot 0) and b (slot 1), cleanly detached */
static void *two_indexes(u64 *ra, u64 *rb)
{
	void *img = ut_img_alloc(SZ);
	struct pmidx_pool *pool = ut_pool_new(img, SZ);

	*ra = create(pool, "a", PMIDX_ENGINE_CCL)->root;
	*rb = create(pool, "b", PMIDX_ENGINE_UTREE)->root;
	pmidx_pool_close(pool);
	return img;
}

/* make the image look crashed (attach traces) */
static void mark_dirty(void *img)
{
	struct pmidx_pool *pool = ut_pool_open(img, SZ);
	void *copy = ut_img_dup(img, SZ);

	pmidx_pool_close(pool);
	memcpy(img, copy, SZ);
	ut_img_free(copy, SZ);
}

static void itable_corrupt_entries(void)
{
	unsigned int c, dirty;

	for (dirty = 0; dirty < 2; dirty++) {
		for (c = 0; c < 9; c++) {
			u64 ra, rb;
			void *img = two_indexes(&ra, &rb);
			struct pmidx_index_entry *e = entry_at(img, 1);
			const char *why = NULL;
			bool reseal = true;

			if (dirty)
				mark_dirty(img);

			switch (c) {
			case 0:		/* torn body, crc no longer matches */
				e->name[0] ^= 1;
				reseal = false;
				break;
			case 1:
				e->engine = cpu_to_le32(77);
				break;
			case 2:
				e->name_len = cpu_to_le32(0);
				break;
			case 3:
				e->name_len = cpu_to_le32(64);
				break;
			case 4:		/* name_len disagrees with the name */
				e->name_len = cpu_to_le32(3);
				break;
			case 5:		/* same name twice */
				e->name[0] = 'a';
				break;
			case 6:		/* root outside the pool */
				e->root = cpu_to_le64(SZ);
				break;
			case 7:		/* root in the metadata */
				e->root = cpu_to_le64(4096);
				break;
			case 8:		/* root not 256-byte aligned */
				e->root = cpu_to_le64(rb + 64);
				break;
			}
			if (reseal)
				entry_reseal(e);
			UT_ASSERT_MSG(ut_pool_open_err(img, SZ, &why) == -EUCLEAN,
				      "case %u dirty %u", c, dirty);
			ut_img_free(img, SZ);
		}
	}
}

/*
 * A root that is no allocated object (e.g. the entry points at a slot the
 * allocator has free) or that two entries share: a crash recovery traces
 * and refuses; a clean attach must not trust it either (it would double
 * free or hand the root out again).
 */
static void itable_bad_roots(void)
{
	unsigned int c, dirty;

	for (dirty = 0; dirty < 2; dirty++) {
		for (c = 0; c < 3; c++) {
			u64 ra, rb;
			void *img = two_indexes(&ra, &rb);
			struct pmidx_index_entry *e = entry_at(img, 1);
			struct pmidx_pool *pool;
			const char *why = NULL;
			int ret;

			if (dirty)
				mark_dirty(img);

			if (c == 0)		/* shared root */
				e->root = cpu_to_le64(ra);
			else if (c == 1)	/* free slot of the same chunk */
				e->root = cpu_to_le64(rb + 16 * PMIDX_MIN_OBJ);
			else			/* a free chunk */
				e->root = cpu_to_le64(ra + 4 * PMIDX_CHUNK_SIZE);
			entry_reseal(e);
			pool = pmidx_pool_open(img, SZ, false, &why);
			if (IS_ERR(pool)) {
				ret = PTR_ERR(pool);
				UT_ASSERT_MSG(ret == -EUCLEAN, "case %u dirty %u: %d",
					      c, dirty, ret);
				ut_img_free(img, SZ);
				continue;
			}
			/* accepted (repaired): then it must be a sound pool */
			UT_ASSERT_MSG(c != 0, "shared root accepted (dirty %u)", dirty);
			UT_ASSERT(pmidx_alloc_valid(&pool->alloc, le64_to_cpu(e->root),
						    PMIDX_INDEX_ROOT_SIZE));
			UT_EQ(pmidx_index_drop(pool, "b", &why), 0);
			UT_EQ(pmidx_index_drop(pool, "a", &why), 0);
			UT_EQ(ut_stat(pool, PMIDX_STAT_ALLOC_OBJECTS), 0);
			pmidx_pool_close(pool);
			ut_img_free(img, SZ);
		}
	}
}

/* a dropped entry's body stays behind; it must never come back */
static void itable_dropped_stays_dropped(void)
{
	void *img = ut_img_alloc(SZ);
	struct pmidx_pool *pool = ut_pool_new(img, SZ);
	const char *why = NULL;

	create(pool, "gone", PMIDX_ENGINE_CCL);
	UT_EQ(pmidx_index_drop(pool, "gone", &why), 0);
	UT_ASSERT(entry_at(img, 0)->name[0] == 'g');	/* body left behind */
	UT_EQ(entry_at(img, 0)->commit, 0);
	pmidx_pool_close(pool);
	pool = ut_pool_open(img, SZ);
	UT_ASSERT(!pmidx_index_lookup(pool, "gone"));
	UT_EQ(ut_stat(pool, PMIDX_STAT_ALLOC_OBJECTS), 0);
	pmidx_pool_close(pool);
	ut_img_free(img, SZ);
}

/* out of memory anywhere in attach: clean -ENOMEM, nothing leaked */
static void itable_open_enomem(void)
{
	void *img = ut_img_alloc(SZ);
	struct pmidx_pool *pool = ut_pool_new(img, SZ);
	unsigned int n, i;

	for (i = 0; i < 5; i++) {
		char name[8];

		snprintf(name, sizeof(name), "m%u", i);
		create(pool, name, PMIDX_ENGINE_CCL);
	}
	pmidx_pool_close(pool);
	for (n = 1; n < 100; n++) {
		const char *why = NULL;

		shim_fail_alloc_nth(n);
		pool = pmidx_pool_open(img, SZ, false, &why);
		shim_fail_alloc_nth(0);
		if (!shim_fail_alloc_fired()) {
			UT_ASSERT(!IS_ERR(pool));
			pmidx_pool_close(pool);
			break;
		}
		UT_ASSERT_MSG(IS_ERR(pool) && PTR_ERR(pool) == -ENOMEM,
			      "allocation %u failed: %ld", n,
			      IS_ERR(pool) ? PTR_ERR(pool) : 0L);
	}
	ut_note("attach has %u allocations; each failure handled", n - 1);
	UT_ASSERT(n > 3 && n < 100);
	/* and the image is unharmed */
	pool = ut_pool_open(img, SZ);
	UT_ASSERT(pmidx_index_lookup(pool, "m4"));
	/* create under failure too */
	for (n = 1; n < 10; n++) {
		struct pmidx_index *idx;
		const char *why = NULL;
		int ret;

		shim_fail_alloc_nth(n);
		ret = pmidx_index_create(pool, "late", PMIDX_ENGINE_CCL, &idx, &why);
		shim_fail_alloc_nth(0);
		if (!shim_fail_alloc_fired()) {
			UT_EQ(ret, 0);
			break;
		}
		UT_EQ(ret, -ENOMEM);
		UT_ASSERT(!pmidx_index_lookup(pool, "late"));
	}
	shim_fail_alloc_nth(0);
	UT_EQ(ut_stat(pool, PMIDX_STAT_ALLOC_OBJECTS), 6);
	pmidx_pool_close(pool);
	ut_img_free(img, SZ);
}

static const struct ut_test tests[] = {
	UT_TEST(itable_create_lookup_drop),
	UT_TEST(itable_names),
	UT_TEST(itable_persist_reopen),
	UT_TEST(itable_crash_reopen),
	UT_TEST(itable_full),
	UT_TEST(itable_corrupt_entries),
	UT_TEST(itable_bad_roots),
	UT_TEST(itable_dropped_stays_dropped),
	UT_TEST(itable_open_enomem),
};

int main(int argc, char **argv)
{
	return ut_main(argc, argv, "index table", tests, ARRAY_SIZE(tests));
}
