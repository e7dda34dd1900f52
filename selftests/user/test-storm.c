// SPDX-License-Identifier: GPL-2.0
/*
 * Concurrency: allocator storms from many threads (the kernel's own
 * pmidx_alloc_test_run(), then cross-thread frees, admin operations in
 * parallel, more threads than CPUs) and epoch-based reclamation under
 * readers. Built plain, with ASan/UBSan and with ThreadSanitizer.
 */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <linux/prandom.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>
#include <shim/shim.h>
#include "core/alloc_test.h"
#include "core/epoch.h"
#include "core/parallel.h"
#include "harness.h"

#define SZ	(64ULL << 20)

static void storm_alloc_test(void)
{
	static const u32 sizes[] = { 0, 256, 4096, 100 };
	unsigned int threads[] = { 2, ut_threads, 2 * ut_threads };
	void *img = ut_img_alloc(SZ);
	struct pmidx_pool *pool = ut_pool_new(img, SZ);
	unsigned int s, t;

	for (t = 0; t < ARRAY_SIZE(threads); t++) {
		for (s = 0; s < ARRAY_SIZE(sizes); s++) {
			struct pmidx_alloc_test at = {
				.mode = PMIDX_ALLOC_TEST_STORM,
				.threads = threads[t], .ops = 20000,
				.size = sizes[s], .seed = ut_seed * 31 + s,
			};
			const char *why = NULL;
			int ret = pmidx_alloc_test_run(pool, &at, &why);

			UT_ASSERT_MSG(!ret, "%u threads, size %u: %d %s",
				      threads[t], sizes[s], ret, why);
		}
	}
	UT_EQ(ut_stat(pool, PMIDX_STAT_ALLOC_OBJECTS), 0);
	pmidx_pool_close(pool);
	pool = ut_pool_open(img, SZ);
	UT_EQ(ut_stat(pool, PMIDX_STAT_ALLOC_OBJECTS), 0);
	UT_EQ(ut_stat(pool, PMIDX_STAT_ALLOC_FREE_CHUNKS),
	      ut_stat(pool, PMIDX_STAT_ALLOC_TOTAL_CHUNKS));
	pmidx_pool_close(pool);
	ut_img_free(img, SZ);
}

/* ---- cross-thread frees: producers allocate, consumers free ----------------------- */

#define RING	1024

struct xfree {
	struct pmidx_pool	*pool;
	pthread_mutex_t		lock;
	u64			ring[RING];
	unsigned int		head, tail;	/* protected by lock */
	atomic_t		producers_left;
	atomic_t		bad;
	unsigned int		producers;
	u64			seed;
};

static u64 stamp(u64 off)
{
	return off * 0x9e3779b97f4a7c15ULL;
}

static int xfree_worker(void *arg, unsigned int w)
{
	struct xfree *x = arg;
	struct rnd_state rs;
	unsigned int i;

	prandom_seed_state(&rs, x->seed + w);
	if (w < x->producers) {
		for (i = 0; i < 20000; i++) {
			u32 r = prandom_u32_state(&rs);
			size_t size = r & 1 ? 64 + r % 300 : 256 + r % 20000;
			u64 off = pmidx_alloc(&x->pool->alloc, size);
			bool queued = false;

			if (!off) {
				cond_resched();
				continue;
			}
			*(u64 *)pmidx_ptr(&x->pool->pm, off) = stamp(off);
			while (!queued) {
				pthread_mutex_lock(&x->lock);
				if (x->head - x->tail < RING) {
					x->ring[x->head++ % RING] = off;
					queued = true;
				}
				pthread_mutex_unlock(&x->lock);
				if (!queued)
					sched_yield();
			}
		}
		atomic_dec(&x->producers_left);
		return 0;
	}
	for (;;) {
		u64 off = 0;
		bool done;

		pthread_mutex_lock(&x->lock);
		if (x->tail != x->head)
			off = x->ring[x->tail++ % RING];
		pthread_mutex_unlock(&x->lock);
		if (!off) {
			done = !atomic_read(&x->producers_left);
			pthread_mutex_lock(&x->lock);
			done = done && x->tail == x->head;
			pthread_mutex_unlock(&x->lock);
			if (done)
				return 0;
			sched_yield();
			continue;
		}
		if (*(u64 *)pmidx_ptr(&x->pool->pm, off) != stamp(off) ||
		    !pmidx_alloc_valid(&x->pool->alloc, off, 8))
			atomic_inc(&x->bad);
		pmidx_free(&x->pool->alloc, off);
	}
}

static void storm_cross_thread_free(void)
{
	void *img = ut_img_alloc(SZ);
	struct xfree x = { .seed = ut_seed };
	unsigned int n = max(2U, ut_threads);

	x.pool = ut_pool_new(img, SZ);
	pthread_mutex_init(&x.lock, NULL);
	x.producers = n / 2;
	atomic_set(&x.producers_left, x.producers);
	UT_EQ(pmidx_run_parallel(n, xfree_worker, &x), 0);
	UT_EQ(atomic_read(&x.bad), 0);
	UT_EQ(ut_stat(x.pool, PMIDX_STAT_ALLOC_OBJECTS), 0);
	UT_EQ(ut_stat(x.pool, PMIDX_STAT_ALLOC_USED_BYTES), 0);
	pmidx_pool_close(x.pool);
	ut_img_free(img, SZ);
}

/* ---- admin operations during a storm ------------------------------------------------ */

struct admin_ctx {
	struct pmidx_pool	*pool;
	u64			seed;
	atomic_t		errors;
};

static int admin_worker(void *arg, unsigned int w)
{
	struct admin_ctx *c = arg;
	const char *why = NULL;
	unsigned int i;

	if (w == 0) {
		for (i = 0; i < 300; i++) {
			struct pmidx_index *idx;
			char name[16];

			snprintf(name, sizeof(name), "adm%u", i % 7);
			if (pmidx_index_lookup(c->pool, name)) {
				if (pmidx_index_drop(c->pool, name, &why))
					atomic_inc(&c->errors);
			} else if (pmidx_index_create(c->pool, name,
						      1 + i % 2, &idx, &why)) {
				atomic_inc(&c->errors);
			}
		}
		return 0;
	}
	/*
	 * Our own storm: pmidx_alloc_test_run() compares pool-wide counts
	 * before and after, which index creation in parallel would upset.
	 */
	{
		struct rnd_state rs;
		u64 offs[32] = {};

		prandom_seed_state(&rs, c->seed + w);
		for (i = 0; i < 4000; i++) {
			unsigned int k = prandom_u32_state(&rs) % 32;

			if (offs[k]) {
				if (*(u64 *)pmidx_ptr(&c->pool->pm, offs[k]) !=
				    stamp(offs[k]))
					atomic_inc(&c->errors);
				pmidx_free(&c->pool->alloc, offs[k]);
				offs[k] = 0;
				continue;
			}
			offs[k] = pmidx_alloc(&c->pool->alloc,
					      8 + prandom_u32_state(&rs) % 5000);
			if (offs[k])
				*(u64 *)pmidx_ptr(&c->pool->pm, offs[k]) =
					stamp(offs[k]);
		}
		for (i = 0; i < 32; i++)
			if (offs[i])
				pmidx_free(&c->pool->alloc, offs[i]);
	}
	return 0;
}

static void storm_with_admin(void)
{
	void *img = ut_img_alloc(SZ);
	struct admin_ctx c = { .seed = ut_seed };
	unsigned int i, live = 0;

	c.pool = ut_pool_new(img, SZ);
	UT_EQ(pmidx_run_parallel(1 + ut_threads, admin_worker, &c), 0);
	UT_EQ(atomic_read(&c.errors), 0);
	for (i = 0; i < PMIDX_MAX_INDEXES; i++)
		live += !!c.pool->indexes[i];
	UT_EQ(ut_stat(c.pool, PMIDX_STAT_ALLOC_OBJECTS), live);
	pmidx_pool_close(c.pool);
	c.pool = ut_pool_open(img, SZ);
	UT_EQ(ut_stat(c.pool, PMIDX_STAT_ALLOC_OBJECTS), live);
	pmidx_pool_close(c.pool);
	ut_img_free(img, SZ);
}

/* more threads than CPUs: per-CPU caches are shared, still exact */
static void storm_oversubscribed(void)
{
	void *img = ut_img_alloc(SZ);
	struct pmidx_pool *pool = ut_pool_new(img, SZ);
	struct pmidx_alloc_test at = {
		.mode = PMIDX_ALLOC_TEST_STORM, .threads = nr_cpu_ids + 8,
		.ops = 800, .seed = ut_seed,
	};
	const char *why = NULL;

	UT_ASSERT_MSG(!pmidx_alloc_test_run(pool, &at, &why), "%s", why);
	UT_EQ(ut_stat(pool, PMIDX_STAT_ALLOC_OBJECTS), 0);
	pmidx_pool_close(pool);
	ut_img_free(img, SZ);
}

/* ---- epochs: readers never see a reclaimed object ----------------------------------- */

#define SLOTS		64
#define GEN_SHIFT	40

struct ebr_ctx {
	struct pmidx_pool	*pool;
	u64			slots[SLOTS];	/* offset | generation << 40 */
	atomic64_t		gen;
	atomic_t		writers_left;
	atomic_t		readers_started;
	atomic_t		bad;
	atomic64_t		reads;
	u64			seed;
};

static int ebr_worker(void *arg, unsigned int w)
{
	struct ebr_ctx *c = arg;
	struct pmidx_pool *pool = c->pool;
	struct rnd_state rs;
	unsigned int i;

	prandom_seed_state(&rs, c->seed + w);
	if (w % 2 == 0) {	/* writer: replace, retire the old */
		while (!atomic_read(&c->readers_started))
			sched_yield();
		for (i = 0; i < 20000; i++) {
			u64 gen = atomic64_inc_return(&c->gen);
			u64 off = pmidx_alloc(&pool->alloc, 64 + (gen % 5) * 100);
			u64 old;

			if (!off)
				continue;
			WRITE_ONCE(*(u64 *)pmidx_ptr(&pool->pm, off), gen);
			old = xchg(&c->slots[prandom_u32_state(&rs) % SLOTS],
				   off | gen << GEN_SHIFT);
			if (old)
				pmidx_epoch_retire(&pool->epoch,
						   old & ((1ULL << GEN_SHIFT) - 1));
		}
		atomic_dec(&c->writers_left);
		return 0;
	}
	atomic_inc(&c->readers_started);
	while (atomic_read(&c->writers_left)) {	/* reader */
		pmidx_epoch_enter(&pool->epoch);
		for (i = 0; i < 16; i++) {
			u64 v = smp_load_acquire(&c->slots[prandom_u32_state(&rs) % SLOTS]);
			u64 off = v & ((1ULL << GEN_SHIFT) - 1);

			if (v && READ_ONCE(*(u64 *)pmidx_ptr(&pool->pm, off)) !=
				 v >> GEN_SHIFT)
				atomic_inc(&c->bad);
		}
		pmidx_epoch_exit(&pool->epoch);
		atomic64_add(16, &c->reads);
		cond_resched();
	}
	return 0;
}

static void storm_epoch_reclaim(void)
{
	void *img = ut_img_alloc(SZ);
	struct ebr_ctx *c = calloc(1, sizeof(*c));
	unsigned int n = max(4U, ut_threads), i;

	UT_ASSERT(c);
	c->seed = ut_seed;
	c->pool = ut_pool_new(img, SZ);
	atomic_set(&c->writers_left, (n + 1) / 2);
	UT_EQ(pmidx_run_parallel(n, ebr_worker, c), 0);
	UT_EQ(atomic_read(&c->bad), 0);
	ut_note("%lld epoch-protected reads, %lld replacements",
		(long long)atomic64_read(&c->reads),
		(long long)atomic64_read(&c->gen));
	pmidx_epoch_barrier(&c->pool->epoch);
	for (i = 0; i < SLOTS; i++)
		if (c->slots[i])
			pmidx_free(&c->pool->alloc,
				   c->slots[i] & ((1ULL << GEN_SHIFT) - 1));
	UT_EQ(ut_stat(c->pool, PMIDX_STAT_ALLOC_OBJECTS), 0);
	pmidx_pool_close(c->pool);
	free(c);
	ut_img_free(img, SZ);
}

/* ---- retiring with memory short --------------------------------------- */

#define MS_OBJS		4096

static void ms_free(void *ctx, u64 obj)
{
	(*(long *)ctx)++;
	kfree((void *)(uintptr_t)obj);
}

/*
 * DRAM objects retired inside one section, with every other limbo
 * allocation failing (GFP_ATOMIC, as under memory pressure): the limbo
 * list grows ahead of need, so none is abandoned (an abandoned DRAM
 * object would be a leak) and every one is freed by the barrier.
 */
static void storm_epoch_memory_short(void)
{
	struct pmidx_epoch e = { 0 };
	long freed = 0, live = shim_kmalloc_live();
	unsigned int i;

	UT_EQ(pmidx_epoch_init(&e, ms_free, &freed), 0);
	pmidx_epoch_enter(&e);
	for (i = 0; i < MS_OBJS; i++) {
		void *p = kmalloc(32, GFP_ATOMIC);

		UT_ASSERT(p);
		shim_fail_alloc_nth(1 - i % 2);
		pmidx_epoch_retire(&e, (u64)(uintptr_t)p);
		shim_fail_alloc_nth(0);
	}
	pmidx_epoch_exit(&e);
	UT_ASSERT(!atomic_long_read(&e.abandoned));
	pmidx_epoch_barrier(&e);
	UT_EQ(freed, MS_OBJS);
	pmidx_epoch_destroy(&e);
	UT_EQ(shim_kmalloc_live(), live);
}

/*
 * The contract of pmidx_epoch_room(), which ccl keeps for its DRAM: a
 * section that was answered yes retires that many objects and none is
 * abandoned, whatever memory there is; one answered no backs off (leaves,
 * and a barrier frees what was retired). Every allocation fails, so no
 * list grows, and one thread holds a section open (the epoch cannot
 * advance) until another has been answered no: the others' lists fill.
 */
#define ROOM_SECTIONS	3000

struct room_ctx {
	struct pmidx_epoch	e;
	void			**objs;
	atomic_t		pinned;
	atomic_long_t		freed, retired, refused;
};

static void room_free(void *ctx, u64 obj)
{
	atomic_long_inc(&((struct room_ctx *)ctx)->freed);
	kfree((void *)(uintptr_t)obj);
}

static int room_worker(void *arg, unsigned int w)
{
	struct room_ctx *c = arg;
	void **p = c->objs + (size_t)w * ROOM_SECTIONS * 3;
	u64 until = ktime_get_ns() + 10 * NSEC_PER_SEC;
	unsigned int i, k;

	if (w == 0) {
		pmidx_epoch_enter(&c->e);
		shim_fail_all(true);	/* here: the threads' start allocates */
		atomic_set(&c->pinned, 1);
		while (!atomic_long_read(&c->refused) && ktime_get_ns() < until)
			cpu_relax();
		pmidx_epoch_exit(&c->e);
		return 0;
	}
	while (!atomic_read(&c->pinned))
		cpu_relax();
	for (i = 0; i < ROOM_SECTIONS; i++, p += 3) {
		pmidx_epoch_enter(&c->e);
		while (!pmidx_epoch_room(&c->e, 3)) {
			pmidx_epoch_exit(&c->e);
			atomic_long_inc(&c->refused);
			pmidx_epoch_barrier(&c->e);
			pmidx_epoch_enter(&c->e);
		}
		for (k = 0; k < 3; k++)
			pmidx_epoch_retire_fn(&c->e, (u64)(uintptr_t)p[k],
					      room_free, c);
		pmidx_epoch_exit(&c->e);
		atomic_long_add(3, &c->retired);
	}
	return 0;
}

static void storm_epoch_room(void)
{
	struct room_ctx *c = calloc(1, sizeof(*c));
	long live = shim_kmalloc_live();
	unsigned int n = max(4U, ut_threads);
	size_t i, nobj = (size_t)n * ROOM_SECTIONS * 3;

	UT_ASSERT(c);
	c->objs = calloc(nobj, sizeof(*c->objs));
	UT_ASSERT(c->objs);
	for (i = 0; i < nobj; i++)
		UT_ASSERT((c->objs[i] = kmalloc(32, GFP_KERNEL)));
	UT_EQ(pmidx_epoch_init(&c->e, room_free, c), 0);
	UT_EQ(pmidx_run_parallel(n, room_worker, c), 0);
	shim_fail_all(false);
	UT_ASSERT(atomic_long_read(&c->refused) > 0);
	UT_EQ(atomic_long_read(&c->e.abandoned), 0);
	pmidx_epoch_barrier(&c->e);
	UT_EQ(atomic_long_read(&c->retired), (long)(n - 1) * ROOM_SECTIONS * 3);
	UT_EQ(atomic_long_read(&c->freed), atomic_long_read(&c->retired));
	pmidx_epoch_destroy(&c->e);
	/* thread 0's share was never retired */
	for (i = 0; i < ROOM_SECTIONS * 3; i++)
		kfree(c->objs[i]);
	UT_EQ(shim_kmalloc_live(), live);
	ut_note("%u threads, %ld retired, %ld sections backed off", n - 1,
		atomic_long_read(&c->retired), atomic_long_read(&c->refused));
	free(c->objs);
	free(c);
}

static const struct ut_test tests[] = {
	UT_TEST(storm_alloc_test),
	UT_TEST(storm_cross_thread_free),
	UT_TEST(storm_with_admin),
	UT_TEST(storm_oversubscribed),
	UT_TEST(storm_epoch_reclaim),
	UT_TEST(storm_epoch_memory_short),
	UT_TEST(storm_epoch_room),
};

int main(int argc, char **argv)
{
	return ut_main(argc, argv, "concurrency", tests, ARRAY_SIZE(tests));
}
