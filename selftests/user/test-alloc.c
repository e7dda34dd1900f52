// SPDX-License-Identifier: GPL-2.0
/*
 * The persistent allocator: randomized alloc/free against a reference,
 * accounting, runs, pmidx_alloc_valid(), the clean detach/attach round
 * trip, and crash recovery (trace) freeing everything unreachable.
 */
#include <stdlib.h>
#include <linux/crc32.h>
#include <shim/shim.h>
#include "core/alloc_test.h"
#include "harness.h"

#define SZ	UT_POOL_SIZE

struct obj {
	u64	off;
	u64	size;		/* asked for */
	u64	asize;		/* pmidx_alloc_size() */
	u32	tag;
};

static int obj_cmp(const void *a, const void *b)
{
	const struct obj *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

/* every object allocated, valid, within the pool, no two overlap */
static void check_objects(struct pmidx_pool *pool, struct obj *o, unsigned int n)
{
	struct obj *s = malloc(sizeof(*s) * (n + 1));
	u64 used = 0;
	unsigned int i;

	UT_ASSERT(s);
	memcpy(s, o, sizeof(*s) * n);
	qsort(s, n, sizeof(*s), obj_cmp);
	for (i = 0; i < n; i++) {
		UT_ASSERT_MSG(s[i].off % PMIDX_MIN_OBJ == 0, "%#llx", s[i].off);
		UT_ASSERT(s[i].off >= le64_to_cpu(pool->sb.data_off));
		UT_ASSERT(s[i].off + s[i].asize <= le64_to_cpu(pool->sb.size));
		UT_ASSERT(pmidx_alloc_valid(&pool->alloc, s[i].off, s[i].size));
		UT_EQ(pmidx_alloc_size(&pool->alloc, s[i].off), s[i].asize);
		if (i)
			UT_ASSERT_MSG(s[i - 1].off + s[i - 1].asize <= s[i].off,
				      "overlap %#llx+%llu > %#llx", s[i - 1].off,
				      s[i - 1].asize, s[i].off);
		used += s[i].asize;
	}
	UT_EQ(ut_stat(pool, PMIDX_STAT_ALLOC_OBJECTS), n);
	UT_EQ(ut_stat(pool, PMIDX_STAT_ALLOC_USED_BYTES), used);
	free(s);
}

static void obj_fill(struct pmidx_pool *pool, struct obj *o)
{
	u32 *p = pmidx_ptr(&pool->pm, o->off);

	p[0] = o->tag;
	p[o->size / 4 - 1] = ~o->tag;
}

static bool obj_intact(struct pmidx_pool *pool, const struct obj *o)
{
	u32 *p = pmidx_ptr(&pool->pm, o->off);

	return p[0] == o->tag && p[o->size / 4 - 1] == ~o->tag;
}

static u64 rand_size(void)
{
	switch (ut_rand(16)) {
	case 0:		/* a run of chunks */
		return PMIDX_CLASS_MAX_SIZE + 8 + ut_rand(3 * PMIDX_CHUNK_SIZE);
	case 1:
	case 2:
		return 8 + ut_rand(PMIDX_CLASS_MAX_SIZE);
	default:
		return 8 + ut_rand(2048);
	}
}

static u64 do_alloc(struct pmidx_pool *pool, struct obj *o, u64 size)
{
	o->size = ALIGN(size, 4ULL);
	o->off = pmidx_alloc(&pool->alloc, o->size);
	if (!o->off)
		return 0;
	o->asize = pmidx_alloc_size(&pool->alloc, o->off);
	UT_ASSERT(o->asize >= o->size);
	UT_ASSERT(is_power_of_2(o->asize) || o->asize % PMIDX_CHUNK_SIZE == 0);
	o->tag = (u32)ut_rand64();
	obj_fill(pool, o);
	return o->off;
}

static void alloc_random_vs_reference(void)
{
	void *img = ut_img_alloc(SZ);
	struct pmidx_pool *pool = ut_pool_new(img, SZ);
	unsigned int max = 4000, n = 0, op, fails = 0;
	struct obj *o = calloc(max, sizeof(*o));

	UT_ASSERT(o);
	for (op = 0; op < 20000; op++) {
		if (n == max || (n && ut_rand(5) < 2)) {
			unsigned int i = ut_rand(n);

			UT_ASSERT_MSG(obj_intact(pool, &o[i]), "object %#llx overwritten",
				      o[i].off);
			pmidx_free(&pool->alloc, o[i].off);
			/* a freed 256-byte slot stays "not allocated" */
			UT_ASSERT(!pmidx_alloc_valid(&pool->alloc, o[i].off, 1) ||
				  o[i].asize < PMIDX_MIN_OBJ);
			o[i] = o[--n];
		} else if (do_alloc(pool, &o[n], rand_size())) {
			n++;
		} else {
			fails++;
		}
		if (op % 2000 == 0)
			check_objects(pool, o, n);
	}
	check_objects(pool, o, n);
	ut_note("%u live objects at the end, %u allocations found the pool full",
		n, fails);
	while (n)
		pmidx_free(&pool->alloc, o[--n].off);
	check_objects(pool, o, 0);
	pmidx_pool_close(pool);
	/* the clean state written back has nothing allocated */
	pool = ut_pool_open(img, SZ);
	UT_EQ(ut_stat(pool, PMIDX_STAT_ALLOC_OBJECTS), 0);
	UT_EQ(ut_stat(pool, PMIDX_STAT_ALLOC_FREE_CHUNKS),
	      ut_stat(pool, PMIDX_STAT_ALLOC_TOTAL_CHUNKS));
	pmidx_pool_close(pool);
	free(o);
	ut_img_free(img, SZ);
}

static void alloc_fill_and_drain(void)
{
	static const u64 sizes[] = { 1, 256, 300, 4096, 100000, PMIDX_CLASS_MAX_SIZE,
				     PMIDX_CHUNK_SIZE, PMIDX_CHUNK_SIZE + 1 };
	void *img = ut_img_alloc(SZ);
	struct pmidx_pool *pool = ut_pool_new(img, SZ);
	u64 total = ut_stat(pool, PMIDX_STAT_ALLOC_TOTAL_CHUNKS);
	unsigned int s;

	for (s = 0; s < ARRAY_SIZE(sizes); s++) {
		u64 asize = sizes[s] <= PMIDX_MIN_OBJ ? PMIDX_MIN_OBJ :
			    sizes[s] <= PMIDX_CLASS_MAX_SIZE ?
			    roundup_pow_of_two(sizes[s]) :
			    ALIGN(sizes[s], (u64)PMIDX_CHUNK_SIZE);
		u64 per_chunk = PMIDX_CHUNK_SIZE / min(asize, (u64)PMIDX_CHUNK_SIZE);
		u64 expect = asize >= PMIDX_CHUNK_SIZE ?
			     total / (asize / PMIDX_CHUNK_SIZE) : total * per_chunk;
		u64 *offs = calloc(expect + 1, sizeof(u64));
		u64 n = 0, off;

		UT_ASSERT(offs);
		while ((off = pmidx_alloc(&pool->alloc, sizes[s]))) {
			UT_ASSERT(n < expect);
			offs[n++] = off;
		}
		UT_ASSERT_MSG(n == expect, "size %llu: %llu objects, expected %llu",
			      sizes[s], n, expect);
		UT_EQ(ut_stat(pool, PMIDX_STAT_ALLOC_USED_BYTES), n * asize);
		while (n)
			pmidx_free(&pool->alloc, offs[--n]);
		UT_EQ(ut_stat(pool, PMIDX_STAT_ALLOC_OBJECTS), 0);
		free(offs);
	}
	UT_EQ(pmidx_alloc(&pool->alloc, 0), 0);
	UT_EQ(pmidx_alloc(&pool->alloc, SZ), 0);
	UT_EQ(pmidx_alloc(&pool->alloc, (size_t)-1), 0);
	pmidx_pool_close(pool);
	ut_img_free(img, SZ);
}

static void alloc_runs(void)
{
	void *img = ut_img_alloc(SZ);
	struct pmidx_pool *pool = ut_pool_new(img, SZ);
	u64 a, b, c, d;

	a = pmidx_alloc(&pool->alloc, PMIDX_CLASS_MAX_SIZE + 1);
	b = pmidx_alloc(&pool->alloc, PMIDX_CHUNK_SIZE);
	c = pmidx_alloc(&pool->alloc, PMIDX_CHUNK_SIZE + 1);
	d = pmidx_alloc(&pool->alloc, 3 * PMIDX_CHUNK_SIZE - 5);
	UT_ASSERT(a && b && c && d);
	UT_EQ(pmidx_alloc_size(&pool->alloc, a), PMIDX_CHUNK_SIZE);
	UT_EQ(pmidx_alloc_size(&pool->alloc, b), PMIDX_CHUNK_SIZE);
	UT_EQ(pmidx_alloc_size(&pool->alloc, c), 2 * PMIDX_CHUNK_SIZE);
	UT_EQ(pmidx_alloc_size(&pool->alloc, d), 3 * PMIDX_CHUNK_SIZE);
	UT_EQ(a % PMIDX_CHUNK_SIZE, 0);
	/* interior pointers, also into tail chunks */
	UT_ASSERT(pmidx_alloc_valid(&pool->alloc, c + PMIDX_CHUNK_SIZE + 100, 100));
	UT_ASSERT(pmidx_alloc_valid(&pool->alloc, d + 3 * PMIDX_CHUNK_SIZE - 8, 8));
	UT_ASSERT(!pmidx_alloc_valid(&pool->alloc, d + 3 * PMIDX_CHUNK_SIZE - 8, 9));
	/* a tail is not an object start */
	UT_EQ(pmidx_alloc_size(&pool->alloc, c + PMIDX_CHUNK_SIZE), 0);
	pmidx_free(&pool->alloc, c);
	UT_ASSERT(!pmidx_alloc_valid(&pool->alloc, c + PMIDX_CHUNK_SIZE, 8));
	pmidx_pool_close(pool);
	pool = ut_pool_open(img, SZ);
	UT_ASSERT(pmidx_alloc_valid(&pool->alloc, d + PMIDX_CHUNK_SIZE, 8));
	UT_EQ(pmidx_alloc_size(&pool->alloc, d), 3 * PMIDX_CHUNK_SIZE);
	UT_EQ(ut_stat(pool, PMIDX_STAT_ALLOC_OBJECTS), 3);
	pmidx_free(&pool->alloc, a);
	pmidx_free(&pool->alloc, b);
	pmidx_free(&pool->alloc, d);
	UT_EQ(ut_stat(pool, PMIDX_STAT_ALLOC_FREE_CHUNKS),
	      ut_stat(pool, PMIDX_STAT_ALLOC_TOTAL_CHUNKS));
	pmidx_pool_close(pool);
	ut_img_free(img, SZ);
}

static void alloc_valid_edges(void)
{
	void *img = ut_img_alloc(SZ);
	struct pmidx_pool *pool = ut_pool_new(img, SZ);
	struct pmidx_alloc *a = &pool->alloc;
	u64 o512 = pmidx_alloc(a, 512), o256 = pmidx_alloc(a, 200);

	UT_ASSERT(o512 && o256);
	UT_ASSERT(pmidx_alloc_valid(a, o512, 512));
	UT_ASSERT(pmidx_alloc_valid(a, o512 + 256, 256));	/* interior */
	UT_ASSERT(!pmidx_alloc_valid(a, o512 + 256, 257));	/* runs past the end */
	UT_ASSERT(!pmidx_alloc_valid(a, o512 + 512, 1));	/* the next, free slot */
	UT_EQ(pmidx_alloc_size(a, o512 + 256), 0);		/* not an object start */
	UT_ASSERT(!pmidx_alloc_valid(a, 0, 1));
	UT_ASSERT(!pmidx_alloc_valid(a, PMIDX_CHUNK_HDR_OFF, 8));
	UT_ASSERT(!pmidx_alloc_valid(a, SZ, 8));
	UT_ASSERT(!pmidx_alloc_valid(a, ~0ULL - 4, 8));
	UT_ASSERT(!pmidx_alloc_valid(a, o256, ~(size_t)0));
	UT_ASSERT(!pmidx_alloc_valid(a, le64_to_cpu(pool->sb.data_off) +
				     5 * PMIDX_CHUNK_SIZE, 8));	/* free chunk */
	pmidx_free(a, o512);
	pmidx_free(a, o256);
	pmidx_pool_close(pool);
	ut_img_free(img, SZ);
}

/* clean detach/attach: exactly the same objects, and they stay usable */
static void alloc_clean_roundtrip(void)
{
	void *img = ut_img_alloc(SZ);
	struct pmidx_pool *pool = ut_pool_new(img, SZ);
	unsigned int n = 0, i, round;
	struct obj o[600];

	for (i = 0; i < 600; i++)
		if (do_alloc(pool, &o[n], rand_size()))
			n++;
	for (i = 0; i < n; i += 3)		/* holes */
		pmidx_free(&pool->alloc, o[i].off), o[i].off = 0;
	for (i = 0, round = 0; i < n; i++)
		if (o[i].off)
			o[round++] = o[i];
	n = round;
	for (round = 0; round < 3; round++) {
		pmidx_pool_close(pool);
		pool = ut_pool_open(img, SZ);
		UT_ASSERT(!(pool->flags & PMIDX_POOL_F_RECOVERED));
		check_objects(pool, o, n);
		for (i = 0; i < n; i++)
			UT_ASSERT(obj_intact(pool, &o[i]));
		/* new objects fill holes without overlapping the old */
		for (i = 0; i < 50 && n < ARRAY_SIZE(o); i++)
			if (do_alloc(pool, &o[n], rand_size()))
				n++;
		check_objects(pool, o, n);
	}
	while (n)
		pmidx_free(&pool->alloc, o[--n].off);
	pmidx_pool_close(pool);
	ut_img_free(img, SZ);
}

/* after a crash, recovery keeps the roots and frees everything else */
static void alloc_dirty_reopen_traces(void)
{
	void *img = ut_img_alloc(SZ), *crash;
	struct pmidx_pool *pool = ut_pool_new(img, SZ), *rec;
	struct pmidx_index *idx;
	const char *why = NULL;
	u64 roots[3];
	struct obj o[400];
	unsigned int n = 0, i;

	for (i = 0; i < 3; i++) {
		char name[4] = { 'r', '0' + i };

		UT_EQ(pmidx_index_create(pool, name, PMIDX_ENGINE_CCL, &idx, &why), 0);
		roots[i] = idx->root;
	}
	for (i = 0; i < 400; i++)
		if (do_alloc(pool, &o[n], rand_size()))
			n++;
	crash = ut_img_dup(img, SZ);
	rec = ut_pool_open(crash, SZ);
	UT_ASSERT(rec->flags & PMIDX_POOL_F_RECOVERED);
	UT_EQ(ut_stat(rec, PMIDX_STAT_ALLOC_OBJECTS), 3);
	UT_EQ(ut_stat(rec, PMIDX_STAT_ALLOC_USED_BYTES), 3 * PMIDX_INDEX_ROOT_SIZE);
	UT_EQ(ut_stat(rec, PMIDX_STAT_RECOVERED_OBJECTS), 3);
	for (i = 0; i < 3; i++)
		UT_ASSERT(pmidx_alloc_valid(&rec->alloc, roots[i], PMIDX_INDEX_ROOT_SIZE));
	for (i = 0; i < n; i++)
		UT_ASSERT(!pmidx_alloc_valid(&rec->alloc, o[i].off, 1));
	/* at most the roots' chunk stays in use */
	UT_ASSERT(ut_stat(rec, PMIDX_STAT_ALLOC_FREE_CHUNKS) + 1 >=
		  ut_stat(rec, PMIDX_STAT_ALLOC_TOTAL_CHUNKS));
	/* what recovery writes back is itself a clean, equal state */
	pmidx_pool_close(rec);
	rec = ut_pool_open(crash, SZ);
	UT_ASSERT(!(rec->flags & PMIDX_POOL_F_RECOVERED));
	UT_EQ(ut_stat(rec, PMIDX_STAT_ALLOC_OBJECTS), 3);
	pmidx_pool_close(rec);
	while (n)
		pmidx_free(&pool->alloc, o[--n].off);
	pmidx_pool_close(pool);
	ut_img_free(crash, SZ);
	ut_img_free(img, SZ);
}

static void alloc_leak_mode(void)
{
	void *img = ut_img_alloc(SZ);
	struct pmidx_pool *pool = ut_pool_new(img, SZ);
	struct pmidx_alloc_test t = {
		.mode = PMIDX_ALLOC_TEST_LEAK, .threads = 3, .ops = 300,
		.seed = ut_seed,
	};
	struct pmidx_index *idx;
	const char *why = NULL;

	UT_EQ(pmidx_index_create(pool, "keep", PMIDX_ENGINE_UTREE, &idx, &why), 0);
	UT_EQ(pmidx_alloc_test_run(pool, &t, &why), 0);
	UT_ASSERT(ut_stat(pool, PMIDX_STAT_ALLOC_OBJECTS) > 100);
	pmidx_pool_close(pool);
	pool = ut_pool_open(img, SZ);
	UT_ASSERT(pool->flags & PMIDX_POOL_F_RECOVERED);
	UT_EQ(ut_stat(pool, PMIDX_STAT_ALLOC_OBJECTS), 1);
	UT_ASSERT(pmidx_index_lookup(pool, "keep"));
	pmidx_pool_close(pool);
	ut_img_free(img, SZ);
}

static void alloc_storm_single(void)
{
	static const u32 sizes[] = { 0, 256, 4096, 8 };
	void *img = ut_img_alloc(SZ);
	struct pmidx_pool *pool = ut_pool_new(img, SZ);
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		struct pmidx_alloc_test t = {
			.mode = PMIDX_ALLOC_TEST_STORM, .threads = 1, .ops = 5000,
			.size = sizes[i], .seed = ut_seed + i,
		};
		const char *why = NULL;

		UT_ASSERT_MSG(!pmidx_alloc_test_run(pool, &t, &why), "size %u: %s",
			      sizes[i], why);
		UT_EQ(ut_stat(pool, PMIDX_STAT_ALLOC_OBJECTS), 0);
	}
	pmidx_pool_close(pool);
	ut_img_free(img, SZ);
}

/* ---- on-media damage to the allocator ------------------------------------------- */

static struct pmidx_chunk_hdr *hdr_at(void *img, unsigned int i)
{
	return (struct pmidx_chunk_hdr *)((char *)img + PMIDX_CHUNK_HDR_OFF) + i;
}

static u64 desc(u8 type, u8 class, u32 run)
{
	u64 d = (u64)PMIDX_CHUNK_DESC_MAGIC << 56 | (u64)type << 48 |
		(u64)class << 40 | (u64)run << 8;
	u8 x = 0;
	int i;

	for (i = 1; i < 8; i++)
		x ^= d >> (8 * i);
	return d | x;
}

static void alloc_header_damage(void)
{
	unsigned int c;

	for (c = 0; c < 6; c++) {
		void *img = ut_img_alloc(SZ);
		struct pmidx_pool *pool = ut_pool_new(img, SZ);
		struct pmidx_index *idx;
		const char *why = NULL;
		unsigned long warns = shim_printk_count(4);
		u64 junk = pmidx_alloc(&pool->alloc, 1000);
		int ret;

		UT_EQ(pmidx_index_create(pool, "i", PMIDX_ENGINE_CCL, &idx, &why), 0);
		UT_ASSERT(junk);
		pmidx_pool_close(pool);
		switch (c) {
		case 0:		/* written-back bitmap torn: trace instead */
			hdr_at(img, 0)->bitmap[3] ^= cpu_to_le64(1ULL << 9);
			break;
		case 1:		/* live count torn */
			le32_add_cpu(&hdr_at(img, 1)->live, 1);
			break;
		case 2:		/* descriptor garbage: refuse */
			hdr_at(img, 5)->desc = cpu_to_le64(0x1234);
			break;
		case 3:		/* unknown class */
			hdr_at(img, 5)->desc = cpu_to_le64(desc(PMIDX_CHUNK_SLAB, 12, 0));
			break;
		case 4:		/* run longer than the pool */
			hdr_at(img, 6)->desc = cpu_to_le64(desc(PMIDX_CHUNK_RUN, 0, 1000));
			break;
		case 5:		/* run whose tail is not a tail */
			hdr_at(img, 6)->desc = cpu_to_le64(desc(PMIDX_CHUNK_RUN, 0, 2));
			break;
		}
		pool = pmidx_pool_open(img, SZ, false, &why);
		if (c < 2) {
			UT_ASSERT_MSG(!IS_ERR(pool), "case %u: %s", c, why);
			UT_ASSERT(pool->flags & PMIDX_POOL_F_RECOVERED);
			UT_ASSERT(shim_printk_count(4) > warns);
			/* the trace found the root, and only it */
			UT_EQ(ut_stat(pool, PMIDX_STAT_ALLOC_OBJECTS), 1);
			pmidx_pool_close(pool);
		} else {
			ret = IS_ERR(pool) ? PTR_ERR(pool) : 0;
			if (!IS_ERR(pool))
				pmidx_pool_close(pool);
			UT_ASSERT_MSG(ret == -EUCLEAN, "case %u: %d", c, ret);
		}
		ut_img_free(img, SZ);
	}
}

/* recovery against the raw allocator: marks, tails, refused allocations */
static void alloc_trace_rules(void)
{
	void *img = ut_img_alloc(SZ);
	struct pmidx_pool *pool = ut_pool_new(img, SZ);
	u64 data = le64_to_cpu(pool->sb.data_off);
	u32 nr = le32_to_cpu(pool->sb.nr_chunks);
	struct pmidx_alloc a;
	const char *why = NULL;

	pmidx_pool_close(pool);
	pool = ut_pool_open(img, SZ);	/* only for a pmem handle */
	/* chunk 0: slab of 512 B; 1: orphan tail; 2..4: a run; 5: orphan tail */
	hdr_at(img, 0)->desc = cpu_to_le64(desc(PMIDX_CHUNK_SLAB, 1, 0));
	hdr_at(img, 1)->desc = cpu_to_le64(desc(PMIDX_CHUNK_RUN_TAIL, 0, 0));
	hdr_at(img, 2)->desc = cpu_to_le64(desc(PMIDX_CHUNK_RUN, 0, 3));
	hdr_at(img, 3)->desc = cpu_to_le64(desc(PMIDX_CHUNK_RUN_TAIL, 0, 0));
	hdr_at(img, 4)->desc = cpu_to_le64(desc(PMIDX_CHUNK_RUN_TAIL, 0, 0));
	hdr_at(img, 5)->desc = cpu_to_le64(desc(PMIDX_CHUNK_RUN_TAIL, 0, 0));
	UT_EQ(pmidx_alloc_init(&a, &pool->pm, PMIDX_CHUNK_HDR_OFF, data, nr), 0);
	UT_EQ(pmidx_alloc_trace_begin(&a, &why), 0);
	UT_EQ(pmidx_alloc(&a, 64), 0);			/* no allocation while tracing */
	UT_EQ(pmidx_alloc_mark(&a, data + 512), 0);
	UT_EQ(pmidx_alloc_mark(&a, data + 512), -EUCLEAN);	/* twice */
	UT_EQ(pmidx_alloc_mark(&a, data + 256), -EUCLEAN);	/* not a start */
	UT_EQ(pmidx_alloc_mark(&a, data + PMIDX_CHUNK_SIZE), -EUCLEAN); /* tail */
	UT_EQ(pmidx_alloc_mark(&a, data + 2 * PMIDX_CHUNK_SIZE), 0);
	UT_EQ(pmidx_alloc_mark(&a, data + 2 * PMIDX_CHUNK_SIZE), -EUCLEAN);
	UT_EQ(pmidx_alloc_mark(&a, data + 7 * PMIDX_CHUNK_SIZE), -EUCLEAN); /* free */
	/* validation during the trace: inside the run yes, orphan tails no */
	UT_ASSERT(pmidx_alloc_valid(&a, data + 4 * PMIDX_CHUNK_SIZE + 8, 8));
	UT_ASSERT(!pmidx_alloc_valid(&a, data + PMIDX_CHUNK_SIZE + 8, 8));
	UT_ASSERT(!pmidx_alloc_valid(&a, data + 5 * PMIDX_CHUNK_SIZE + 8, 8));
	pmidx_alloc_trace_end(&a);
	/* orphans are free now, on media too */
	UT_EQ(le64_to_cpu(hdr_at(img, 1)->desc), 0);
	UT_EQ(le64_to_cpu(hdr_at(img, 5)->desc), 0);
	UT_EQ(le64_to_cpu(hdr_at(img, 3)->desc), desc(PMIDX_CHUNK_RUN_TAIL, 0, 0));
	{
		struct pmidx_alloc_stats s;

		pmidx_alloc_get_stats(&a, &s);
		UT_EQ(s.objects, 2);
		UT_EQ(s.used_bytes, 512 + 3 * PMIDX_CHUNK_SIZE);
		UT_EQ(s.free_chunks, nr - 4);
	}
	UT_ASSERT(pmidx_alloc(&a, 64));
	pmidx_alloc_destroy(&a);
	/* pool's own allocator state never saw these chunks: drop it dirty */
	pool->needs_trace = true;
	pmidx_pool_close(pool);
	ut_img_free(img, SZ);
}

static void alloc_free_misuse_warns(void)
{
	void *img = ut_img_alloc(SZ);
	struct pmidx_pool *pool = ut_pool_new(img, SZ);
	u64 off = pmidx_alloc(&pool->alloc, 256);

	shim_set_warn_fatal(false);
	ut_expect_warns(3);
	pmidx_free(&pool->alloc, off);
	pmidx_free(&pool->alloc, off);			/* double free */
	pmidx_free(&pool->alloc, 12345);		/* no object */
	pmidx_free(&pool->alloc, off + 64);		/* interior */
	shim_set_warn_fatal(true);
	UT_EQ(ut_stat(pool, PMIDX_STAT_ALLOC_OBJECTS), 0);
	pmidx_pool_close(pool);
	ut_img_free(img, SZ);
}

static const struct ut_test tests[] = {
	UT_TEST(alloc_random_vs_reference),
	UT_TEST(alloc_fill_and_drain),
	UT_TEST(alloc_runs),
	UT_TEST(alloc_valid_edges),
	UT_TEST(alloc_clean_roundtrip),
	UT_TEST(alloc_dirty_reopen_traces),
	UT_TEST(alloc_leak_mode),
	UT_TEST(alloc_storm_single),
	UT_TEST(alloc_header_damage),
	UT_TEST(alloc_trace_rules),
	UT_TEST(alloc_free_misuse_warns),
};

int main(int argc, char **argv)
{
	return ut_main(argc, argv, "allocator", tests, ARRAY_SIZE(tests));
}
