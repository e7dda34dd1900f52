// SPDX-License-Identifier: GPL-2.0
/*
 * The per-CPU write-ahead log (kmod/core/wal.c) on its own: chunks reused
 * through thousands of generations against a reference of what each side
 * holds, the log reopened (a crash: DRAM forgotten, media as it is) and
 * replayed at random points; stale entries of earlier uses and of other
 * objects never replayed, torn entries read as the end, corrupt ones
 * refused; every crash state of an append in the line model. The ccl
 * crash tests run the log under the simulator's ADR models.
 */
#include <stdlib.h>
#include <shim/shim.h>
#include "core/wal.h"
#include "harness.h"

#define SZ		UT_POOL_SIZE
#define CHUNK		PMIDX_WAL_MIN_CHUNK
#define CHUNK_ENTS	(CHUNK / PMIDX_WAL_ENT_SIZE)

struct rec_list {
	struct pmidx_wal_rec	*r;
	u32			n, cap;
};

static void rec_add(struct rec_list *l, const struct pmidx_wal_rec *r)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 1024;
		l->r = realloc(l->r, l->cap * sizeof(*l->r));
		UT_ASSERT(l->r);
	}
	l->r[l->n++] = *r;
}

static int rec_cmp(const void *a, const void *b)
{
	const struct pmidx_wal_rec *x = a, *y = b;

	return x->w0 < y->w0 ? -1 : x->w0 > y->w0;
}

static int collect(void *ctx, unsigned int worker, const struct pmidx_wal_rec *r)
{
	rec_add(ctx, r);
	return 0;
}

static void release_none(void *ctx, u64 off)
{
	UT_CHECK(!"nothing is retired here");
}

static const struct pmidx_wal_cfg cfg = {
	.chunk_size	= CHUNK,
	.release	= release_none,
};

/* The record of the @id-th append: every field derived from @id. */
static struct pmidx_wal_rec rec_of(u64 id)
{
	return (struct pmidx_wal_rec){
		.w0 = id,
		.w1 = id * 0x9e3779b97f4a7c15ULL ^ 0x5555,
		.ts = id + 1,
		.flags = id & 0xf,
	};
}

static void append(struct pmidx_wal *w, unsigned int side, u64 id,
		   struct rec_list *model)
{
	struct pmidx_wal_rec r = rec_of(id);

	UT_EQ(pmidx_wal_append(w, side, r.w0, r.w1, r.ts, r.flags), 0);
	if (model)
		rec_add(model, &r);
}

/* Forget the DRAM state, open the log again and replay it into @out. */
static int reopen(struct pmidx_pool *pool, u64 dir, struct pmidx_wal **w,
		  struct rec_list *out)
{
	int ret;

	pmidx_wal_close(*w);
	*w = NULL;
	UT_EQ(pmidx_wal_open(pool, dir, &cfg, w), 0);
	out->n = 0;
	ret = pmidx_wal_replay(*w, 1, collect, out);
	if (out->n)
		qsort(out->r, out->n, sizeof(*out->r), rec_cmp);
	return ret;
}

/* @got (sorted) holds exactly the records of @a and @b. */
static void expect_records(const struct rec_list *got, const struct rec_list *a,
			   const struct rec_list *b)
{
	struct rec_list want = {};
	u32 i;

	for (i = 0; i < a->n; i++)
		rec_add(&want, &a->r[i]);
	for (i = 0; i < b->n; i++)
		rec_add(&want, &b->r[i]);
	if (want.n)
		qsort(want.r, want.n, sizeof(*want.r), rec_cmp);
	UT_EQ(got->n, want.n);
	for (i = 0; i < want.n; i++) {
		const struct pmidx_wal_rec *g = &got->r[i], *x = &want.r[i];

		UT_ASSERT_MSG(g->w0 == x->w0 && g->w1 == x->w1 &&
			      g->ts == x->ts && g->flags == x->flags,
			      "record %u: w0 %llu, want %llu", i,
			      (unsigned long long)g->w0,
			      (unsigned long long)x->w0);
	}
	free(want.r);
}

/* The directory slot word of the chunk at @off. */
static u64 slot_of(struct pmidx_wal *w, u64 off)
{
	u32 i;

	for (i = 0; i < PMIDX_WAL_NSLOTS; i++) {
		u64 s = le64_to_cpu(w->dir->slot[i]);

		if (s && pmidx_wal_slot_off(s) == off)
			return s;
	}
	return 0;
}

/* The chunk side @side appends to on this CPU (white box). */
static struct pmidx_wal_chunk *cur_chunk(struct pmidx_wal *w, unsigned int side)
{
	struct pmidx_wal_chunk *c;

	c = per_cpu_ptr(w->pcpu, get_cpu())->cur[side];
	put_cpu();
	UT_ASSERT(c);
	return c;
}

/*
 * Two sides written and recycled in turn, a few hundred entries a turn
 * (sometimes more than a chunk), so the same chunks are taken again and
 * again with stale entries of every length behind the new ones, until
 * generations have wrapped; every 97 turns, and right after a wrap, the
 * log is reopened and must replay exactly what the two sides hold.
 */
static void wal_generations(void)
{
	struct rec_list side[2] = {}, got = {};
	u16 last_gen[PMIDX_WAL_NSLOTS] = {};
	void *img = ut_img_alloc(SZ);
	struct pmidx_pool *pool = ut_pool_new(img, SZ);
	unsigned int wraps = 0, wrapped, turn, s;
	struct pmidx_wal *w;
	u64 dir, id = 0;
	u32 i, k;

	dir = pmidx_wal_format(pool);
	UT_ASSERT(dir);
	UT_EQ(pmidx_wal_open(pool, dir, &cfg, &w), 0);
	for (turn = 0; wraps < 2 || turn % 97; turn++) {
		UT_ASSERT_MSG(turn < 40000, "generations never wrapped");
		s = turn & 1;
		k = ut_rand(64) ? ut_rand(200) : CHUNK_ENTS + ut_rand(200);
		for (i = 0; i < k; i++)
			append(w, s, id++, &side[s]);
		pmidx_wal_recycle(w, !s);
		side[!s].n = 0;
		wrapped = 0;
		for (i = 0; i < PMIDX_WAL_NSLOTS; i++) {
			u64 word = le64_to_cpu(w->dir->slot[i]);
			u16 gen = word >> PMIDX_WAL_GEN_SHIFT;

			if (!word)
				continue;
			wrapped += gen < last_gen[i];
			last_gen[i] = gen;
		}
		wraps += wrapped;
		/* a wrapped chunk holds stale entries of its new generation */
		if (turn % 97 == 96 || wrapped) {
			UT_EQ(reopen(pool, dir, &w, &got), 0);
			expect_records(&got, &side[0], &side[1]);
			/* the replayed chunks are side 0 now */
			for (i = 0; i < side[1].n; i++)
				rec_add(&side[0], &side[1].r[i]);
			side[1].n = 0;
		}
	}
	ut_note("%u turns, %llu entries, %u generation wraps", turn,
		(unsigned long long)id, wraps);
	pmidx_wal_close(w);
	pmidx_pool_close(pool);
	ut_img_free(img, SZ);
	free(side[0].r);
	free(side[1].r);
	free(got.r);
}

/*
 * A new chunk holds whatever the allocator had: here, valid entries of
 * generation 1 in every slot. Its first use must replay only its own.
 */
static void wal_new_chunk_garbage(void)
{
	struct rec_list model = {}, got = {};
	void *img = ut_img_alloc(SZ);
	struct pmidx_pool *pool = ut_pool_new(img, SZ);
	struct pmidx_wal_ent *e;
	struct pmidx_wal_chunk *c;
	struct pmidx_wal *w;
	u64 dir, junk, id;
	u32 i;

	dir = pmidx_wal_format(pool);
	UT_ASSERT(dir);
	junk = pmidx_alloc(&pool->alloc, CHUNK);
	UT_ASSERT(junk);
	e = pmidx_ptr(&pool->pm, junk);
	for (i = 0; i < CHUNK_ENTS; i++)
		pmidx_wal_ent_encode(&e[i], 1000 + i, i, 5 + i, 0, 1);
	pmidx_free(&pool->alloc, junk);

	UT_EQ(pmidx_wal_open(pool, dir, &cfg, &w), 0);
	for (id = 0; id < 5; id++)
		append(w, 0, id, &model);
	c = cur_chunk(w, 0);
	/* the test means something only if the junk is under the log */
	UT_EQ(c->off, junk);
	UT_EQ(slot_of(w, junk) >> PMIDX_WAL_GEN_SHIFT, 1);
	UT_ASSERT(!(slot_of(w, junk) & PMIDX_WAL_SLOT_CLEAN));
	UT_EQ(reopen(pool, dir, &w, &got), 0);
	expect_records(&got, &model, &(struct rec_list){});

	/* recycled: the tail is zeroed, the chunk clean, the junk gone */
	pmidx_wal_recycle(w, 0);
	UT_EQ(slot_of(w, junk) & (PMIDX_WAL_SLOT_CLEAN | PMIDX_WAL_SLOT_STATE),
	      PMIDX_WAL_SLOT_CLEAN | PMIDX_WAL_SLOT_FREE);
	for (i = 5; i < CHUNK_ENTS; i++)
		UT_ASSERT_MSG(!e[i].meta, "slot %u", i);
	model.n = 0;
	for (; id < 8; id++)
		append(w, 1, id, &model);
	UT_EQ(cur_chunk(w, 1)->off, junk);
	UT_EQ(slot_of(w, junk) >> PMIDX_WAL_GEN_SHIFT, 2);
	UT_EQ(reopen(pool, dir, &w, &got), 0);
	expect_records(&got, &model, &(struct rec_list){});

	pmidx_wal_close(w);
	pmidx_pool_close(pool);
	ut_img_free(img, SZ);
	free(model.r);
	free(got.r);
}

/*
 * A clean chunk's second use over a longer first one: the stale entries
 * behind it are not replayed; a torn append (all but meta) is the end; a
 * damaged entry, or one whose generation was damaged while a valid entry
 * follows it, refuses the log.
 */
static void wal_torn_and_corrupt(void)
{
	struct rec_list model = {}, got = {};
	void *img = ut_img_alloc(SZ);
	struct pmidx_pool *pool = ut_pool_new(img, SZ);
	struct pmidx_wal_ent *e, saved, next;
	struct pmidx_wal_chunk *c;
	struct pmidx_wal *w;
	u64 dir, id = 0, off;
	u16 gen;

	dir = pmidx_wal_format(pool);
	UT_ASSERT(dir);
	UT_EQ(pmidx_wal_open(pool, dir, &cfg, &w), 0);
	for (; id < 100; id++)
		append(w, 0, id, NULL);
	off = cur_chunk(w, 0)->off;
	pmidx_wal_recycle(w, 0);
	for (; id < 140; id++)
		append(w, 0, id, &model);
	c = cur_chunk(w, 0);
	UT_EQ(c->off, off);
	UT_ASSERT(c->clean);
	gen = c->gen;
	UT_EQ(gen, 2);
	e = pmidx_ptr(&pool->pm, off);
	UT_EQ(le64_to_cpu(e[40].meta) >> PMIDX_WAL_GEN_SHIFT, 1);
	UT_EQ(reopen(pool, dir, &w, &got), 0);
	expect_records(&got, &model, &(struct rec_list){});

	/* torn: everything but meta of the next entry; then all of it */
	pmidx_wal_ent_encode(&next, 7777, 1, 9999, 0, gen);
	saved = e[40];
	memcpy(&e[40], &next, offsetof(struct pmidx_wal_ent, meta));
	UT_EQ(reopen(pool, dir, &w, &got), 0);
	UT_EQ(got.n, 40);
	e[40] = next;
	UT_EQ(reopen(pool, dir, &w, &got), 0);
	UT_EQ(got.n, 41);
	e[40] = saved;

	/* a damaged payload word */
	e[20].w1 ^= cpu_to_le64(1ULL << 17);
	UT_EQ(reopen(pool, dir, &w, &got), -EUCLEAN);
	e[20].w1 ^= cpu_to_le64(1ULL << 17);
	/* a damaged generation with a valid entry after it */
	e[20].meta ^= cpu_to_le64(1ULL << 60);
	UT_EQ(reopen(pool, dir, &w, &got), -EUCLEAN);
	e[20].meta ^= cpu_to_le64(1ULL << 60);
	UT_EQ(reopen(pool, dir, &w, &got), 0);
	expect_records(&got, &model, &(struct rec_list){});

	pmidx_wal_close(w);
	pmidx_pool_close(pool);
	ut_img_free(img, SZ);
	free(model.r);
	free(got.r);
}

/*
 * One chunk through all its generations: a first use that fills it, then
 * one entry per use. When the generation wraps to 1 the first use's
 * entries (generation 1) are still behind slot 0: the wrapped use must
 * mark its end by zeroing ahead, and its recycle clean the chunk again.
 */
static void wal_generation_wrap(void)
{
	struct rec_list model = {}, got = {};
	void *img = ut_img_alloc(SZ);
	struct pmidx_pool *pool = ut_pool_new(img, SZ);
	struct pmidx_wal_chunk *c;
	struct pmidx_wal *w;
	u64 dir, id = 0, off;
	u32 use;

	dir = pmidx_wal_format(pool);
	UT_ASSERT(dir);
	UT_EQ(pmidx_wal_open(pool, dir, &cfg, &w), 0);
	for (; id < CHUNK_ENTS - 1; id++)
		append(w, 0, id, NULL);
	off = cur_chunk(w, 0)->off;
	for (use = 2; use <= PMIDX_WAL_GEN_MAX + 2; use++) {
		pmidx_wal_recycle(w, 0);
		model.n = 0;
		append(w, 0, id++, &model);
		c = cur_chunk(w, 0);
		UT_EQ(c->off, off);
		UT_EQ(c->gen, (use - 1) % PMIDX_WAL_GEN_MAX + 1);
		UT_EQ(c->clean, c->gen != 1);
		if (c->gen <= 2 || use % 1024 == 0) {
			UT_EQ(reopen(pool, dir, &w, &got), 0);
			expect_records(&got, &model, &(struct rec_list){});
		}
	}
	pmidx_wal_close(w);
	pmidx_pool_close(pool);
	ut_img_free(img, SZ);
	free(model.r);
	free(got.r);
}

/* Slot words with reserved bits, or clean in generation 0. */
static void wal_bad_slots(void)
{
	void *img = ut_img_alloc(SZ);
	struct pmidx_pool *pool = ut_pool_new(img, SZ);
	struct pmidx_wal_dir *d;
	struct pmidx_wal *w;
	u64 dir, word, nogen;

	dir = pmidx_wal_format(pool);
	UT_ASSERT(dir);
	d = pmidx_ptr(&pool->pm, dir);
	UT_EQ(pmidx_wal_open(pool, dir, &cfg, &w), 0);
	append(w, 0, 1, NULL);
	pmidx_wal_close(w);
	word = le64_to_cpu(d->slot[0]);
	UT_ASSERT(word);
	nogen = word & ~((u64)PMIDX_WAL_GEN_MAX << PMIDX_WAL_GEN_SHIFT);

	d->slot[0] = cpu_to_le64(word | 0x20);
	UT_EQ(pmidx_wal_open(pool, dir, &cfg, &w), -EUCLEAN);
	d->slot[0] = cpu_to_le64(nogen | PMIDX_WAL_SLOT_CLEAN);
	UT_EQ(pmidx_wal_open(pool, dir, &cfg, &w), -EUCLEAN);
	d->version = cpu_to_le32(4);
	d->slot[0] = cpu_to_le64(word);
	UT_EQ(pmidx_wal_open(pool, dir, &cfg, &w), -EUCLEAN);
	d->version = cpu_to_le32(PMIDX_WAL_VERSION);
	UT_EQ(pmidx_wal_open(pool, dir, &cfg, &w), 0);
	pmidx_wal_close(w);
	pmidx_pool_close(pool);
	ut_img_free(img, SZ);
}

/*
 * A log of format 2: a chunk in use without a generation, its entries
 * generation 0 and zero-ahead, read as it is; then used on in format 3.
 */
static void wal_format2(void)
{
	struct rec_list model = {}, got = {};
	void *img = ut_img_alloc(SZ);
	struct pmidx_pool *pool = ut_pool_new(img, SZ);
	struct pmidx_wal_ent *e;
	struct pmidx_wal_dir *d;
	struct pmidx_wal *w;
	u64 dir, off, id;

	dir = pmidx_wal_format(pool);
	UT_ASSERT(dir);
	d = pmidx_ptr(&pool->pm, dir);
	d->version = cpu_to_le32(2);
	off = pmidx_alloc(&pool->alloc, CHUNK);
	UT_ASSERT(off);
	e = pmidx_ptr(&pool->pm, off);
	memset(e, 0x5a, CHUNK);
	for (id = 0; id < 9; id++) {
		struct pmidx_wal_rec r = rec_of(id);

		pmidx_wal_ent_encode(&e[id], r.w0, r.w1, r.ts, r.flags, 0);
		rec_add(&model, &r);
	}
	memset(&e[9], 0, 3 * PMIDX_WAL_ENT_SIZE);	/* zero-ahead */
	d->slot[0] = cpu_to_le64(off | PMIDX_WAL_SLOT_SIDE0);

	UT_EQ(pmidx_wal_open(pool, dir, &cfg, &w), 0);
	got.n = 0;
	UT_EQ(pmidx_wal_replay(w, 1, collect, &got), 0);
	if (got.n)
		qsort(got.r, got.n, sizeof(*got.r), rec_cmp);
	expect_records(&got, &model, &(struct rec_list){});
	pmidx_wal_recycle(w, 0);
	model.n = 0;
	for (; id < 20; id++)
		append(w, 1, id, &model);
	UT_EQ(cur_chunk(w, 1)->off, off);
	UT_EQ(reopen(pool, dir, &w, &got), 0);
	expect_records(&got, &model, &(struct rec_list){});
	pmidx_wal_close(w);
	pmidx_pool_close(pool);
	ut_img_free(img, SZ);
	free(model.r);
	free(got.r);
}

/*
 * Every line-model crash state of append j into a chunk: the entry's
 * line and, for an append into the first slot of a line that zeroes
 * ahead, the next line, each on media or not, everything before durable.
 * The chunk lies over valid-looking junk of generation 1 (a new chunk)
 * or over a longer first use (clean, its second use). Replay must give
 * the j entries before, and entry j iff its line landed, and never
 * refuse the log.
 */
static void crash_state(struct pmidx_pool *pool, bool clean, u32 j, u32 st)
{
	struct rec_list model = {}, got = {};
	struct pmidx_wal_ent *e, *line, before[4];
	struct pmidx_wal_chunk *c;
	struct pmidx_wal *w;
	u64 dir, junk, id = 0;
	bool ahead;
	u32 i, a;

	dir = pmidx_wal_format(pool);
	UT_ASSERT(dir);
	junk = pmidx_alloc(&pool->alloc, CHUNK);
	UT_ASSERT(junk);
	e = pmidx_ptr(&pool->pm, junk);
	for (i = 0; i < CHUNK_ENTS; i++)
		pmidx_wal_ent_encode(&e[i], 1000 + i, i, 5 + i, 0, 1);
	pmidx_free(&pool->alloc, junk);
	UT_EQ(pmidx_wal_open(pool, dir, &cfg, &w), 0);
	if (clean) {
		for (; id < 64; id++)
			append(w, 0, 1000000 + id, NULL);
		pmidx_wal_recycle(w, 0);
	}
	for (i = 0; i < j; i++)
		append(w, 0, i, &model);
	c = cur_chunk(w, 0);
	UT_EQ(c->off, junk);
	UT_EQ(c->clean, clean);
	/* the lines append j writes, as media holds them before it */
	a = j & ~1U;
	line = &e[a];
	ahead = !clean && !(j & 1) && (a + 4) * PMIDX_WAL_ENT_SIZE <= CHUNK;
	memcpy(before, line, (ahead ? 4 : 2) * PMIDX_WAL_ENT_SIZE);
	append(w, 0, j, (st & 1) ? &model : NULL);
	if (!(st & 1))
		memcpy(line, before, 2 * PMIDX_WAL_ENT_SIZE);
	if (ahead && !(st & 2))
		memcpy(line + 2, before + 2, 2 * PMIDX_WAL_ENT_SIZE);

	UT_ASSERT_MSG(!reopen(pool, dir, &w, &got), "%s chunk, append %u, state %u",
		      clean ? "clean" : "new", j, st);
	expect_records(&got, &model, &(struct rec_list){});
	pmidx_wal_destroy(w);
	free(model.r);
	free(got.r);
}

static void wal_crash_states(void)
{
	void *img = ut_img_alloc(SZ);
	struct pmidx_pool *pool = ut_pool_new(img, SZ);
	u32 j, st, states = 0;

	for (j = 1; j < 24; j++) {
		for (st = 0; st < 4; st++, states++) {
			crash_state(pool, false, j, st);
			crash_state(pool, true, j, st);
		}
	}
	ut_note("%u crash states of each kind", states);
	pmidx_pool_close(pool);
	ut_img_free(img, SZ);
}

/*
 * pmidx_wal_reserve()'s chunks (free, generation 0) and more chunks than
 * the free list keeps: side 0 grows past it, its recycle gives the extra
 * chunks back to the allocator unzeroed, side 1 takes that memory back
 * as new chunks over generation-1 entries. Reopened, exactly side 1.
 */
static void wal_reserve_and_overflow(void)
{
	struct rec_list side1 = {}, got = {};
	void *img = ut_img_alloc(SZ);
	struct pmidx_pool *pool = ut_pool_new(img, SZ);
	struct pmidx_wal_dir *d;
	struct pmidx_wal *w;
	u64 dir, id = 0, n;
	u32 i, nfree = 0;

	dir = pmidx_wal_format(pool);
	UT_ASSERT(dir);
	d = pmidx_ptr(&pool->pm, dir);
	UT_EQ(pmidx_wal_open(pool, dir, &cfg, &w), 0);
	UT_EQ(pmidx_wal_reserve(w, 2), 0);
	for (i = 0; i < PMIDX_WAL_NSLOTS; i++) {
		u64 s = le64_to_cpu(d->slot[i]);

		if (!s)
			continue;
		UT_EQ(s & (PMIDX_WAL_SLOT_STATE | PMIDX_WAL_SLOT_CLEAN),
		      PMIDX_WAL_SLOT_FREE);
		UT_EQ(s >> PMIDX_WAL_GEN_SHIFT, 0);
		nfree++;
	}
	UT_EQ(nfree, 2);
	UT_EQ(reopen(pool, dir, &w, &got), 0);
	UT_EQ(got.n, 0);

	n = (u64)(w->max_free + 3) * CHUNK_ENTS;
	for (; id < n; id++)
		append(w, 0, id, NULL);
	UT_EQ(cur_chunk(w, 0)->gen, 1);
	pmidx_wal_recycle(w, 0);
	UT_EQ(w->nfree, w->max_free);
	for (; id < 2 * n + CHUNK_ENTS / 3; id++)
		append(w, 1, id, &side1);
	UT_EQ(reopen(pool, dir, &w, &got), 0);
	expect_records(&got, &side1, &(struct rec_list){});
	pmidx_wal_close(w);
	pmidx_pool_close(pool);
	ut_img_free(img, SZ);
	free(side1.r);
	free(got.r);
}

static const struct ut_test tests[] = {
	UT_TEST(wal_generations),
	UT_TEST(wal_new_chunk_garbage),
	UT_TEST(wal_torn_and_corrupt),
	UT_TEST(wal_generation_wrap),
	UT_TEST(wal_crash_states),
	UT_TEST(wal_reserve_and_overflow),
	UT_TEST(wal_bad_slots),
	UT_TEST(wal_format2),
};

int main(int argc, char **argv)
{
	return ut_main(argc, argv, "wal", tests, ARRAY_SIZE(tests));
}
