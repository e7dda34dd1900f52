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

/*
 * A pool with an empty log directory (fix_init), the log opened on it
 * (fix_open, as @w), what a test expects (@model) and what replay gave
 * (@got).
 */
struct fix {
	void			*img;
	struct pmidx_pool	*pool;
	u64			dir;
	struct pmidx_wal	*w;
	struct rec_list		model, got;
};

static void fix_init(struct fix *f)
{
	memset(f, 0, sizeof(*f));
	f->img = ut_img_alloc(SZ);
	f->pool = ut_pool_new(f->img, SZ);
	f->dir = pmidx_wal_format(f->pool);
	UT_ASSERT(f->dir);
}

static void fix_open(struct fix *f)
{
	UT_EQ(pmidx_wal_open(f->pool, f->dir, &cfg, &f->w), 0);
}

static void fix_exit(struct fix *f)
{
	pmidx_wal_close(f->w);
	pmidx_pool_close(f->pool);
	ut_img_free(f->img, SZ);
	free(f->model.r);
	free(f->got.r);
}

/* Forget the DRAM state, open the log again and replay it into @got. */
static int reopen(struct fix *f)
{
	int ret;

	pmidx_wal_close(f->w);
	f->w = NULL;
	fix_open(f);
	f->got.n = 0;
	ret = pmidx_wal_replay(f->w, 1, collect, &f->got);
	if (f->got.n)
		qsort(f->got.r, f->got.n, sizeof(*f->got.r), rec_cmp);
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
	for (i = 0; b && i < b->n; i++)
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

/* Reopened, the log replays exactly @model. */
static void reopen_expect(struct fix *f)
{
	UT_EQ(reopen(f), 0);
	expect_records(&f->got, &f->model, NULL);
}

/*
 * A chunk-sized object full of valid entries of generation 1, freed: the
 * next chunk the log allocates lies over it (the tests check that).
 */
static u64 junk_chunk(struct pmidx_pool *pool)
{
	struct pmidx_wal_ent *e;
	u64 off;
	u32 i;

	off = pmidx_alloc(&pool->alloc, CHUNK);
	UT_ASSERT(off);
	e = pmidx_ptr(&pool->pm, off);
	for (i = 0; i < CHUNK_ENTS; i++)
		pmidx_wal_ent_encode(&e[i], 1000 + i, i, 5 + i, 0, 1);
	pmidx_free(&pool->alloc, off);
	return off;
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
	u16 last_gen[PMIDX_WAL_NSLOTS] = {};
	unsigned int wraps = 0, wrapped, turn, s;
	struct rec_list side[2] = {};
	struct fix f;
	u64 id = 0;
	u32 i, k;

	fix_init(&f);
	fix_open(&f);
	for (turn = 0; wraps < 2 || turn % 97; turn++) {
		UT_ASSERT_MSG(turn < 40000, "generations never wrapped");
		s = turn & 1;
		k = ut_rand(64) ? ut_rand(200) : CHUNK_ENTS + ut_rand(200);
		for (i = 0; i < k; i++)
			append(f.w, s, id++, &side[s]);
		pmidx_wal_recycle(f.w, !s);
		side[!s].n = 0;
		wrapped = 0;
		for (i = 0; i < PMIDX_WAL_NSLOTS; i++) {
			u64 word = le64_to_cpu(f.w->dir->slot[i]);
			u16 gen = word >> PMIDX_WAL_GEN_SHIFT;

			if (!word)
				continue;
			wrapped += gen < last_gen[i];
			last_gen[i] = gen;
		}
		wraps += wrapped;
		/* a wrapped chunk holds stale entries of its new generation */
		if (turn % 97 == 96 || wrapped) {
			UT_EQ(reopen(&f), 0);
			expect_records(&f.got, &side[0], &side[1]);
			/* the replayed chunks are side 0 now */
			for (i = 0; i < side[1].n; i++)
				rec_add(&side[0], &side[1].r[i]);
			side[1].n = 0;
		}
	}
	ut_note("%u turns, %llu entries, %u generation wraps", turn,
		(unsigned long long)id, wraps);
	fix_exit(&f);
	free(side[0].r);
	free(side[1].r);
}

/*
 * A new chunk holds whatever the allocator had: here, valid entries of
 * generation 1 in every slot. Its first use must replay only its own.
 */
static void wal_new_chunk_garbage(void)
{
	struct pmidx_wal_ent *e;
	struct fix f;
	u64 junk, id;
	u32 i;

	fix_init(&f);
	junk = junk_chunk(f.pool);
	e = pmidx_ptr(&f.pool->pm, junk);
	fix_open(&f);
	for (id = 0; id < 5; id++)
		append(f.w, 0, id, &f.model);
	/* the test means something only if the junk is under the log */
	UT_EQ(cur_chunk(f.w, 0)->off, junk);
	UT_EQ(slot_of(f.w, junk) >> PMIDX_WAL_GEN_SHIFT, 1);
	UT_ASSERT(!(slot_of(f.w, junk) & PMIDX_WAL_SLOT_CLEAN));
	reopen_expect(&f);

	/* recycled: the tail is zeroed, the chunk clean, the junk gone */
	pmidx_wal_recycle(f.w, 0);
	UT_EQ(slot_of(f.w, junk) & (PMIDX_WAL_SLOT_CLEAN | PMIDX_WAL_SLOT_STATE),
	      PMIDX_WAL_SLOT_CLEAN | PMIDX_WAL_SLOT_FREE);
	for (i = 5; i < CHUNK_ENTS; i++)
		UT_ASSERT_MSG(!e[i].meta, "slot %u", i);
	f.model.n = 0;
	for (; id < 8; id++)
		append(f.w, 1, id, &f.model);
	UT_EQ(cur_chunk(f.w, 1)->off, junk);
	UT_EQ(slot_of(f.w, junk) >> PMIDX_WAL_GEN_SHIFT, 2);
	reopen_expect(&f);
	fix_exit(&f);
}

/*
 * A clean chunk's second use over a longer first one: the stale entries
 * behind it are not replayed; a torn append (all but meta) is the end; a
 * damaged entry, or one whose generation was damaged while a valid entry
 * follows it, refuses the log.
 */
static void wal_torn_and_corrupt(void)
{
	struct pmidx_wal_ent *e, saved, next;
	struct pmidx_wal_chunk *c;
	struct fix f;
	u64 id = 0, off;
	u16 gen;

	fix_init(&f);
	fix_open(&f);
	for (; id < 100; id++)
		append(f.w, 0, id, NULL);
	off = cur_chunk(f.w, 0)->off;
	pmidx_wal_recycle(f.w, 0);
	for (; id < 140; id++)
		append(f.w, 0, id, &f.model);
	c = cur_chunk(f.w, 0);
	UT_EQ(c->off, off);
	UT_ASSERT(c->clean);
	gen = c->gen;
	UT_EQ(gen, 2);
	e = pmidx_ptr(&f.pool->pm, off);
	UT_EQ(le64_to_cpu(e[40].meta) >> PMIDX_WAL_GEN_SHIFT, 1);
	reopen_expect(&f);

	/* torn: everything but meta of the next entry; then all of it */
	pmidx_wal_ent_encode(&next, 7777, 1, 9999, 0, gen);
	saved = e[40];
	memcpy(&e[40], &next, offsetof(struct pmidx_wal_ent, meta));
	UT_EQ(reopen(&f), 0);
	UT_EQ(f.got.n, 40);
	e[40] = next;
	UT_EQ(reopen(&f), 0);
	UT_EQ(f.got.n, 41);
	e[40] = saved;

	/* a damaged payload word */
	e[20].w1 ^= cpu_to_le64(1ULL << 17);
	UT_EQ(reopen(&f), -EUCLEAN);
	e[20].w1 ^= cpu_to_le64(1ULL << 17);
	/* a damaged generation with a valid entry after it */
	e[20].meta ^= cpu_to_le64(1ULL << 60);
	UT_EQ(reopen(&f), -EUCLEAN);
	e[20].meta ^= cpu_to_le64(1ULL << 60);
	reopen_expect(&f);
	fix_exit(&f);
}

/*
 * One chunk through all its generations: a first use that fills it, then
 * one entry per use. When the generation wraps to 1 the first use's
 * entries (generation 1) are still behind slot 0: the wrapped use must
 * mark its end by zeroing ahead, and its recycle clean the chunk again.
 */
static void wal_generation_wrap(void)
{
	struct pmidx_wal_chunk *c;
	struct fix f;
	u64 id = 0, off;
	u32 use;

	fix_init(&f);
	fix_open(&f);
	for (; id < CHUNK_ENTS - 1; id++)
		append(f.w, 0, id, NULL);
	off = cur_chunk(f.w, 0)->off;
	for (use = 2; use <= PMIDX_WAL_GEN_MAX + 2; use++) {
		pmidx_wal_recycle(f.w, 0);
		f.model.n = 0;
		append(f.w, 0, id++, &f.model);
		c = cur_chunk(f.w, 0);
		UT_EQ(c->off, off);
		UT_EQ(c->gen, (use - 1) % PMIDX_WAL_GEN_MAX + 1);
		UT_EQ(c->clean, c->gen != 1);
		if (c->gen <= 2 || use % 1024 == 0)
			reopen_expect(&f);
	}
	fix_exit(&f);
}

/* Slot words with reserved bits, clean in generation 0, or twice. */
static void wal_bad_slots(void)
{
	struct pmidx_wal_dir *d;
	struct fix f;
	u64 word, nogen;
	u32 spare = 1;

	fix_init(&f);
	d = pmidx_ptr(&f.pool->pm, f.dir);
	fix_open(&f);
	append(f.w, 0, 1, NULL);
	pmidx_wal_close(f.w);
	f.w = NULL;
	word = le64_to_cpu(d->slot[0]);
	UT_ASSERT(word);
	nogen = word & ~((u64)PMIDX_WAL_GEN_MAX << PMIDX_WAL_GEN_SHIFT);

	d->slot[0] = cpu_to_le64(word | 0x20);
	UT_EQ(pmidx_wal_open(f.pool, f.dir, &cfg, &f.w), -EUCLEAN);
	d->slot[0] = cpu_to_le64(nogen | PMIDX_WAL_SLOT_CLEAN);
	UT_EQ(pmidx_wal_open(f.pool, f.dir, &cfg, &f.w), -EUCLEAN);
	d->slot[0] = cpu_to_le64(word);
	while (d->slot[spare])
		spare++;
	d->slot[spare] = cpu_to_le64(word);	/* one chunk, two slots */
	/* as a clean attach opens it (core/alloc.c, "Claims") */
	UT_EQ(pmidx_alloc_claim_begin(&f.pool->alloc), 0);
	UT_EQ(pmidx_wal_open(f.pool, f.dir, &cfg, &f.w), -EUCLEAN);
	pmidx_alloc_claim_end(&f.pool->alloc);
	d->slot[spare] = 0;
	UT_EQ(pmidx_alloc_claim_begin(&f.pool->alloc), 0);
	fix_open(&f);				/* each once: accepted */
	pmidx_wal_close(f.w);
	f.w = NULL;
	pmidx_alloc_claim_end(&f.pool->alloc);
	d->version = cpu_to_le32(4);
	UT_EQ(pmidx_wal_open(f.pool, f.dir, &cfg, &f.w), -EUCLEAN);
	d->version = cpu_to_le32(PMIDX_WAL_VERSION);
	fix_open(&f);
	fix_exit(&f);
}

/*
 * A log of format 2: a chunk in use without a generation, its entries
 * generation 0 and zero-ahead, read as it is; recycled and kept free,
 * reopened (the fuzz-engines finding ccl-crash-log-gen0-kept-clean); then
 * used on in format 3.
 */
static void wal_format2(void)
{
	struct pmidx_wal_ent *e;
	struct pmidx_wal_dir *d;
	struct fix f;
	u64 off, id;

	fix_init(&f);
	d = pmidx_ptr(&f.pool->pm, f.dir);
	d->version = cpu_to_le32(2);
	off = pmidx_alloc(&f.pool->alloc, CHUNK);
	UT_ASSERT(off);
	e = pmidx_ptr(&f.pool->pm, off);
	memset(e, 0x5a, CHUNK);
	for (id = 0; id < 9; id++) {
		struct pmidx_wal_rec r = rec_of(id);

		pmidx_wal_ent_encode(&e[id], r.w0, r.w1, r.ts, r.flags, 0);
		rec_add(&f.model, &r);
	}
	memset(&e[9], 0, 3 * PMIDX_WAL_ENT_SIZE);	/* zero-ahead */
	d->slot[0] = cpu_to_le64(off | PMIDX_WAL_SLOT_SIDE0);

	reopen_expect(&f);
	/* it writes format 3 from here on, and says so */
	UT_EQ(le32_to_cpu(d->version), PMIDX_WAL_VERSION);
	pmidx_wal_recycle(f.w, 0);
	f.model.n = 0;
	/* kept free in generation 0: a clean slot word would be refused */
	UT_EQ(slot_of(f.w, off), off | PMIDX_WAL_SLOT_FREE);
	reopen_expect(&f);
	for (; id < 20; id++)
		append(f.w, 1, id, &f.model);
	UT_EQ(cur_chunk(f.w, 1)->off, off);
	reopen_expect(&f);
	fix_exit(&f);
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
static void crash_state(bool clean, u32 j, u32 st)
{
	struct pmidx_wal_ent *e, *line, before[4];
	struct pmidx_wal_chunk *c;
	struct fix f;
	u64 junk, id = 0;
	bool ahead;
	u32 i, a;

	fix_init(&f);
	junk = junk_chunk(f.pool);
	e = pmidx_ptr(&f.pool->pm, junk);
	fix_open(&f);
	if (clean) {
		for (; id < 64; id++)
			append(f.w, 0, 1000000 + id, NULL);
		pmidx_wal_recycle(f.w, 0);
	}
	for (i = 0; i < j; i++)
		append(f.w, 0, i, &f.model);
	c = cur_chunk(f.w, 0);
	UT_EQ(c->off, junk);
	UT_EQ(c->clean, clean);
	/* the lines append j writes, as media holds them before it */
	a = j & ~1U;
	line = &e[a];
	ahead = !clean && !(j & 1) && (a + 4) * PMIDX_WAL_ENT_SIZE <= CHUNK;
	memcpy(before, line, (ahead ? 4 : 2) * PMIDX_WAL_ENT_SIZE);
	append(f.w, 0, j, (st & 1) ? &f.model : NULL);
	if (!(st & 1))
		memcpy(line, before, 2 * PMIDX_WAL_ENT_SIZE);
	if (ahead && !(st & 2))
		memcpy(line + 2, before + 2, 2 * PMIDX_WAL_ENT_SIZE);

	UT_ASSERT_MSG(!reopen(&f), "%s chunk, append %u, state %u",
		      clean ? "clean" : "new", j, st);
	expect_records(&f.got, &f.model, NULL);
	fix_exit(&f);
}

static void wal_crash_states(void)
{
	u32 j, st, states = 0;

	for (j = 1; j < 24; j++) {
		for (st = 0; st < 4; st++, states++) {
			crash_state(false, j, st);
			crash_state(true, j, st);
		}
	}
	ut_note("%u crash states of each kind", states);
}

/*
 * pmidx_wal_reserve()'s chunks (free, generation 0) and more chunks than
 * the free list keeps: side 0 grows past it, its recycle gives the extra
 * chunks back to the allocator unzeroed, side 1 takes that memory back
 * as new chunks over generation-1 entries. Reopened, exactly side 1.
 */
static void wal_reserve_and_overflow(void)
{
	struct pmidx_wal_dir *d;
	struct fix f;
	u64 id = 0, n;
	u32 i, nfree = 0;

	fix_init(&f);
	d = pmidx_ptr(&f.pool->pm, f.dir);
	fix_open(&f);
	UT_EQ(pmidx_wal_reserve(f.w, 2), 0);
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
	reopen_expect(&f);

	n = (u64)(f.w->max_free + 3) * CHUNK_ENTS;
	for (; id < n; id++)
		append(f.w, 0, id, NULL);
	UT_EQ(cur_chunk(f.w, 0)->gen, 1);
	pmidx_wal_recycle(f.w, 0);
	UT_EQ(f.w->nfree, f.w->max_free);
	for (; id < 2 * n + CHUNK_ENTS / 3; id++)
		append(f.w, 1, id, &f.model);
	reopen_expect(&f);
	fix_exit(&f);
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
