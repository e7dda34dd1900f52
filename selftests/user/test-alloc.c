// SPDX-License-Identifier: GPL-2.0
/*
 * The persistent allocator: randomized alloc/free against a reference,
 * accounting, runs, pmidx_alloc_valid(), the clean detach/attach round
 * trip, and crash recovery (trace) freeing everything unreachable;
 * committed mode (intent records) under the crash simulator, checked
 * against a trace after every crash image.
 */
#include <stdlib.h>
#include <linux/crc32.h>
#include <shim/shim.h>
#include "core/alloc_test.h"
#include "core/engine.h"
#include "crashsim.h"
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

/* ---- committed mode (intent records), under the crash simulator -------- */

/*
 * A toy committed-mode engine: the index root (a null engine's, traced)
 * holds CM_ROOT link words; every object holds CM_KIDS more. Each step
 * links a new object into an empty word, replaces a linked one by a
 * copy (that takes over its children, so the old one is freed by the
 * same store), or unlinks a childless one: one pmidx_txn per step, the
 * crash-atomic alloc and free of alloc.c. Live objects stay few while
 * the steps are many, so freed slots and chunks are reused all the time.
 */
#define CM_ROOT		24
#define CM_KIDS		4

struct cm_arg {
	u64		seed;
	unsigned int	steps;
};

static u64 cm_state;

/* the workload's own generator: the simulator replays it exactly */
static u32 cm_rand(u32 n)
{
	cm_state ^= cm_state << 13;
	cm_state ^= cm_state >> 7;
	cm_state ^= cm_state << 17;
	return (u32)(((cm_state >> 32) * (u64)n) >> 32);
}

static __le64 *cm_words(struct pmidx_pool *pool, u64 off)
{
	return pmidx_ptr(&pool->pm, off);
}

static u64 cm_size(void)
{
	if (!cm_rand(40))	/* a committed run */
		return PMIDX_CLASS_MAX_SIZE + 8 + cm_rand(PMIDX_CHUNK_SIZE);
	return CM_KIDS * 8 + cm_rand(1500);
}

/* Pick a random link word: one of the root's, or a child word below. */
static __le64 *cm_pick(struct pmidx_pool *pool, u64 root)
{
	__le64 *w = &cm_words(pool, root)[cm_rand(CM_ROOT)];
	u64 o;

	while ((o = le64_to_cpu(*w)) && cm_rand(3))
		w = &cm_words(pool, o)[cm_rand(CM_KIDS)];
	return w;
}

static void cm_step(struct pmidx_pool *pool, u64 root)
{
	__le64 *w = cm_pick(pool, root), *n;
	u64 old = le64_to_cpu(*w), nw = 0;
	struct pmidx_txn txn;
	int i;
	bool leaf = true;

	if (old)
		for (i = 0; i < CM_KIDS; i++)
			leaf &= !cm_words(pool, old)[i];
	if (!old || !leaf || cm_rand(2)) {
		nw = pmidx_alloc_committed(&pool->alloc, cm_size());
		if (!nw)
			return;
		n = cm_words(pool, nw);
		for (i = 0; i < CM_KIDS; i++)
			n[i] = old ? cm_words(pool, old)[i] : 0;
		pmidx_flush(&pool->pm, n, CM_KIDS * 8);	/* fenced by arm */
	}
	UT_EQ(pmidx_txn_begin(&pool->alloc, &txn), 0);
	if (nw)
		pmidx_txn_alloc(&txn, nw);
	if (old)
		pmidx_txn_free(&txn, old);
	pmidx_txn_arm(&pool->alloc, &txn, w, 8, nw);
	pmidx_store64_persist(&pool->pm, w, nw);	/* the link store */
	pmidx_txn_end(&pool->alloc, &txn);
	if (old)
		pmidx_free(&pool->alloc, old);		/* no reader to wait for */
}

static int cm_run(struct crashsim *cs, void *img, u64 size, void *arg)
{
	struct cm_arg *a = arg;
	struct pmidx_pool *pool;
	struct pmidx_index *idx;
	const char *why = NULL;
	unsigned int i, op;
	int ret;

	cm_state = a->seed | 1;
	ret = pmidx_pool_format(img, size, true, &why);
	if (ret)
		return ret;
	pool = pmidx_pool_open(img, size, false, &why);
	if (IS_ERR(pool))
		return PTR_ERR(pool);
	op = crashsim_op_begin(cs, CRASHSIM_OP_NOTE, "create", NULL, 0, 0);
	ret = pmidx_index_create(pool, "cm", PMIDX_ENGINE_B3, &idx, &why);
	if (!ret)
		ret = pmidx_pool_enable_intents(pool, &why);
	crashsim_op_ack(cs, op);
	for (i = 0; !ret && i < a->steps; i++)
		cm_step(pool, idx->root);
	pmidx_pool_close(pool);
	return ret;
}

static int u64_cmp(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? -1 : x > y;
}

/* The trace, as a checker: reachable == committed-mode objects allocated. */
static u64 cm_trace(struct crashsim *cs, struct pmidx_pool *pool, u64 off,
		    unsigned int depth, u64 *out, u64 n)
{
	__le64 *w = cm_words(pool, off);
	u64 o;
	int i;

	for (i = 0; i < (depth ? CM_KIDS : CM_ROOT); i++) {
		o = le64_to_cpu(w[i]);
		if (!o)
			continue;
		if (!pmidx_alloc_is_committed(&pool->alloc, o) ||
		    !pmidx_alloc_valid(&pool->alloc, o, CM_KIDS * 8)) {
			crashsim_fail(cs, "linked %#llx is no live committed object",
				      (unsigned long long)o);
			continue;
		}
		if (n < 4096)
			out[n++] = o;
		n = cm_trace(cs, pool, o, depth + 1, out, n);
	}
	return n;
}

static int cm_check(struct crashsim *cs, const struct crashsim_point *pt,
		    struct pmidx_pool *pool, int err, const char *why, void *arg)
{
	struct pmidx_alloc *a;
	struct pmidx_index *idx;
	u64 *seen, *have, nseen, nhave = 0, i;
	u32 c, k, nslots;

	if (!pool) {
		if (!crashsim_note_acked(cs, "create"))
			return 0;
		crashsim_fail(cs, "attach failed: %d (%s)", err, why);
		return 0;
	}
	idx = pmidx_index_lookup(pool, "cm");
	if (!idx) {
		if (crashsim_note_acked(cs, "create"))
			crashsim_fail(cs, "acknowledged index lost");
		return 0;
	}
	a = &pool->alloc;
	seen = calloc(4096, sizeof(u64));
	have = calloc(4096, sizeof(u64));
	UT_ASSERT(seen && have);
	nseen = cm_trace(cs, pool, idx->root, 0, seen, 0);
	for (c = 0; c < a->nr_chunks; c++) {
		struct pmidx_chunk *ch = &a->chunks[c];
		u64 base = a->data_off + ((u64)c << PMIDX_CHUNK_SHIFT);

		if (ch->type == PMIDX_CHUNK_RUN_C && ch->nr_used && nhave < 4096)
			have[nhave++] = base;
		if (ch->type != PMIDX_CHUNK_SLAB_C)
			continue;
		nslots = PMIDX_SLOTS_MAX >> ch->class;
		for (k = 0; k < nslots; k++)
			if (test_bit(k, ch->bitmap) && nhave < 4096)
				have[nhave++] = base +
					((u64)k << (PMIDX_MIN_OBJ_SHIFT + ch->class));
	}
	qsort(seen, nseen, sizeof(u64), u64_cmp);
	if (nseen != nhave)
		crashsim_fail(cs, "trace reaches %llu committed objects, the allocator holds %llu",
			      (unsigned long long)nseen, (unsigned long long)nhave);
	for (i = 0; i < nseen && i < nhave; i++) {
		if (seen[i] != have[i]) {
			crashsim_fail(cs, "object %#llx: trace and allocator differ",
				      (unsigned long long)min(seen[i], have[i]));
			break;
		}
	}
	crashsim_check_pool(cs, pool, nseen);
	free(seen);
	free(have);
	return 0;
}

static void cm_crash(const char *name, unsigned int steps, bool at_flushes)
{
	struct cm_arg arg = { .seed = ut_seed, .steps = steps };
	struct crashsim_workload wl = {
		.name = name, .run = cm_run, .check = cm_check, .arg = &arg,
	};
	struct crashsim_config cfg = {
		.pool_size = 16ULL << 20, .seed = ut_seed, .variants = 2,
		.samples = 300, .exhaustive_max = 300, .only_point = -1,
		.only_variant = -1, .at_flushes = at_flushes,
		.save_dir = getenv("PMIDX_CRASH_SAVE"),
		.prefix = crashsim_prefix_default(),
	};
	struct crashsim_result res;

	UT_EQ(crashsim_run(&cfg, &wl, &res), 0);
	crashsim_print_result(name, &cfg, &res);
	UT_CRASH_OK(res, true);
}

/* Many steps, few live objects: freed slots, chunks and runs are reused. */
static void alloc_committed_crash(void)
{
	cm_crash("alloc_committed_crash", 1500, false);
}

/* Short, every fence and flush a crash point (exhaustive). */
static void alloc_committed_crash_short(void)
{
	cm_crash("alloc_committed_crash_short", 40, true);
}

/* Recovery reads no object: a crash attach with committed objects only. */
static void alloc_committed_rules(void)
{
	void *img = ut_img_alloc(SZ), *dup;
	struct pmidx_pool *pool = ut_pool_new(img, SZ);
	struct pmidx_txn txn;
	const char *why;
	__le64 *w;
	u64 a1, a2;

	UT_EQ(pmidx_pool_enable_intents(pool, &why), 0);
	UT_ASSERT(le64_to_cpu(pool->sb.feat_incompat) & PMIDX_FEAT_INCOMPAT_INTENTS);
	a1 = pmidx_alloc_committed(&pool->alloc, 300);
	a2 = pmidx_alloc_committed(&pool->alloc, 300);
	UT_ASSERT(a1 && a2 && pmidx_alloc_is_committed(&pool->alloc, a1));
	UT_ASSERT(!pmidx_alloc_is_committed(&pool->alloc,
					    pmidx_alloc(&pool->alloc, 300)));
	w = cm_words(pool, a2);			/* any durable word will do */
	*w = 0;
	/* armed, link store done, crash before end: the record commits a1 */
	UT_EQ(pmidx_txn_begin(&pool->alloc, &txn), 0);
	pmidx_txn_alloc(&txn, a1);
	pmidx_txn_arm(&pool->alloc, &txn, w, 8, a1);
	pmidx_store64_persist(&pool->pm, w, a1);
	dup = ut_img_dup(img, SZ);
	pmidx_txn_end(&pool->alloc, &txn);
	pmidx_pool_close(pool);
	pool = ut_pool_open(dup, SZ);
	UT_ASSERT(pool->flags & PMIDX_POOL_F_RECOVERED);
	UT_ASSERT(pmidx_alloc_valid(&pool->alloc, a1, 300));
	/* a2 was pending (never committed): free; the traced one too */
	UT_ASSERT(!pmidx_alloc_valid(&pool->alloc, a2, 1));
	UT_EQ(ut_stat(pool, PMIDX_STAT_ALLOC_OBJECTS), 1);
	pmidx_pool_close(pool);
	ut_img_free(dup, SZ);
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
	UT_TEST(alloc_committed_rules),
	UT_TEST(alloc_committed_crash_short),
	UT_TEST(alloc_committed_crash),
};

int main(int argc, char **argv)
{
	if (crashsim_parse_model(&argc, argv))
		return 2;
	return ut_main(argc, argv, "allocator", tests, ARRAY_SIZE(tests));
}
