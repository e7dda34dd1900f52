// SPDX-License-Identifier: GPL-2.0
/*
 * The engines' CHECK and key counts, for every engine the module
 * registers:
 *
 *  - check_storm: writers storm puts and deletes (and INSERT puts) over
 *    a small key space, in bursts with short pauses, while one thread
 *    loops CHECK and another STATS. A healthy index must never be called
 *    damaged: CHECK answers 0 (a consistent view, with its key count) or
 *    -EAGAIN (writes went on too fast for one; try again), nothing else.
 *    The counts of passes and -EAGAIN answers are printed. Once the
 *    writers stop, CHECK passes and CHECK's key count, the STATS key
 *    counter and the writers' own model agree.
 *  - key_counts: a random single-threaded workload against a model; the
 *    STATS key counter (kept live by the engine) equals CHECK's count
 *    (a walk of the index) and the model now and then, after a clean
 *    detach and attach, and after a crash and its recovery, with more
 *    writes after each.
 *
 * Knob: PMIDX_CHECK_STORM_MS, the storm's length per engine (default
 * 1500). Engines not registered in kmod/core/engine.c are skipped.
 */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <linux/prandom.h>
#include <shim/shim.h>
#include "core/engine.h"
#include "engines/ccl/ccl.h"
#include "engine-kv.h"
#include "harness.h"

#define SZ		(64ULL << 20)
#define LD(x)		__atomic_load_n(&(x), __ATOMIC_ACQUIRE)
#define ST(x, v)	__atomic_store_n(&(x), (v), __ATOMIC_RELEASE)
#define ADD(x, v)	__atomic_fetch_add(&(x), (v), __ATOMIC_RELAXED)

static int kv_put(struct pmidx_index *idx, u64 i, u64 v, u32 flags)
{
	u8 k[64], b[128];
	u32 kl = ekv_hkey(i, k), vl = ekv_hval(v, b);

	return idx->ops->put(idx, k, kl, b, vl, flags);
}

static int kv_del(struct pmidx_index *idx, u64 i)
{
	u8 k[64];

	return idx->ops->del(idx, k, ekv_hkey(i, k), 0);
}

static u64 stat_keys(struct pmidx_index *idx)
{
	struct pmidx_stats s = {};

	idx->ops->stats(idx, &s);
	return s.val[PMIDX_STAT_KEYS];
}

static u64 now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ULL + ts.tv_nsec / 1000000;
}

/* ccl: the GC thread busy too, on a small log (module defaults after) */
static void ccl_params(bool storm)
{
	ccl_nbatch = 2;
	ccl_log_chunk_kb = storm ? 256 : 4096;
	ccl_th_log = 20;
	ccl_gc_interval_ms = storm ? 2 : 1000;
	ccl_gc_naive = false;
}

/* ---- CHECK under a write storm ---------------------------------------------- */

#define SKEYS		1200		/* key space, split among the writers */
#define SW_MAX		4

struct storm {
	struct pmidx_index	*idx;
	unsigned int		writers;
	bool			stop;
	/* per writer: its keys' state (key k belongs to writer k % writers) */
	bool			live[SKEYS];
	long			writes, errors;
	long			pass, again, damaged, other, stats, stats_bad;
	const char		*why[4];	/* distinct reasons given */
	long			nwhy[4];
	pthread_mutex_t		lock;
};

struct warg {
	struct storm	*s;
	unsigned int	w;
};

static void *storm_writer(void *p)
{
	struct warg *a = p;
	struct storm *s = a->s;
	struct rnd_state rs;
	unsigned int n = 0;
	int ret;

	prandom_seed_state(&rs, ut_seed * 31 + a->w);
	while (!LD(s->stop)) {
		u64 k = prandom_u32_state(&rs) % (SKEYS / s->writers) * s->writers + a->w;
		u32 op = prandom_u32_state(&rs) % 16;

		/* bursts: a pause of 2 ms every 4000 operations or so */
		if (!(++n % 4000))
			usleep(2000);
		if (op < 7) {
			ret = kv_del(s->idx, k);
			if (ret == 0 && s->live[k])
				s->live[k] = false;
			else if (!(ret == -ENOENT && !s->live[k]))
				ADD(s->errors, 1);
		} else if (op < 9) {
			ret = kv_put(s->idx, k, prandom_u32_state(&rs), PMIDX_PUT_INSERT);
			if (ret == 0 && !s->live[k])
				s->live[k] = true;
			else if (!(ret == -EEXIST && s->live[k]))
				ADD(s->errors, 1);
		} else {
			ret = kv_put(s->idx, k, prandom_u32_state(&rs), 0);
			if (ret)
				ADD(s->errors, 1);
			s->live[k] = true;
		}
		ADD(s->writes, 1);
	}
	return NULL;
}

static void *storm_stats(void *p)
{
	struct storm *s = p;

	while (!LD(s->stop)) {
		/* a sum of per-CPU counters read while they move: near */
		if (stat_keys(s->idx) > SKEYS + 64)
			ADD(s->stats_bad, 1);
		ADD(s->stats, 1);
		usleep(100);
	}
	return NULL;
}

static void storm_one(u32 e, unsigned int ms)
{
	struct storm *s = calloc(1, sizeof(*s));
	struct warg args[SW_MAX];
	pthread_t th[SW_MAX + 1];
	struct pmidx_pool *pool;
	const char *why = NULL;
	u64 keys = 0, live = 0, end, i;
	unsigned int w;
	void *img;
	int ret;

	UT_ASSERT(s);
	if (e == PMIDX_ENGINE_CCL)
		ccl_params(true);
	s->writers = clamp(ut_threads, 2U, (unsigned int)SW_MAX);
	img = ut_img_alloc(SZ);
	pool = ut_pool_new(img, SZ);
	UT_ASSERT_MSG(!pmidx_index_create(pool, "storm", e, &s->idx, &why),
		      "%s: create: %s", pmidx_engine_name(e), why);
	/* start full, so that the deletes empty leaves (merges) */
	for (i = 0; i < SKEYS; i++) {
		UT_EQ(kv_put(s->idx, i, i, 0), 0);
		s->live[i] = true;
	}
	for (w = 0; w < s->writers; w++) {
		args[w] = (struct warg){ s, w };
		UT_EQ(pthread_create(&th[w], NULL, storm_writer, &args[w]), 0);
	}
	UT_EQ(pthread_create(&th[w], NULL, storm_stats, s), 0);
	end = now_ms() + ms;
	while (now_ms() < end) {
		why = NULL;
		ret = s->idx->ops->check(s->idx, &keys, &why);
		if (!ret) {
			s->pass++;
			if (keys > SKEYS)
				s->other++;
		} else if (ret == -EAGAIN) {
			s->again++;
		} else {
			if (ret == -EUCLEAN)
				s->damaged++;
			else
				s->other++;
			for (w = 0; w < 4; w++) {
				if (!s->why[w] || s->why[w] == why) {
					s->why[w] = why ? why : "?";
					s->nwhy[w]++;
					break;
				}
			}
		}
	}
	ST(s->stop, true);
	for (w = 0; w <= s->writers; w++)
		pthread_join(th[w], NULL);
	ut_note("%s: %ld writes by %u writers in %u ms; CHECK: %ld passed, %ld "
		"-EAGAIN, %ld -EUCLEAN, %ld other; %ld STATS",
		pmidx_engine_name(e), s->writes, s->writers, ms, s->pass,
		s->again, s->damaged, s->other, s->stats);
	for (w = 0; w < 4 && s->why[w]; w++)
		ut_note("%s: CHECK failed %ld times with \"%s\"",
			pmidx_engine_name(e), s->nwhy[w], s->why[w]);
	UT_EQ(s->errors, 0);
	UT_CHECK(s->damaged == 0);
	UT_CHECK(s->other == 0);
	UT_EQ(s->stats_bad, 0);

	/* quiet now: a consistent view at once, with every count agreeing */
	for (i = 0; i < SKEYS; i++)
		live += s->live[i];
	why = NULL;
	ret = s->idx->ops->check(s->idx, &keys, &why);
	UT_ASSERT_MSG(!ret, "%s: CHECK after the storm: %d (%s)",
		      pmidx_engine_name(e), ret, why ? why : "");
	UT_EQ(keys, live);
	UT_EQ(stat_keys(s->idx), live);
	pmidx_pool_close(pool);
	ut_img_free(img, SZ);
	free(s);
	if (e == PMIDX_ENGINE_CCL)
		ccl_params(false);
}

static void check_storm(void)
{
	const char *env = getenv("PMIDX_CHECK_STORM_MS");
	unsigned int ms = env ? strtoul(env, NULL, 0) : 1500;
	u32 e;

	for (e = 1; e < __PMIDX_ENGINE_MAX; e++)
		if (ekv_engine_available(e))
			storm_one(e, ms);
}

/* ---- the live key counter against CHECK's walk ------------------------------- */

#define CKEYS		900

static void counts_agree(struct pmidx_index *idx, const bool *live,
			 const char *when)
{
	const char *why = NULL;
	u64 keys = 0, want = 0, i;
	int ret;

	for (i = 0; i < CKEYS; i++)
		want += live[i];
	ret = idx->ops->check(idx, &keys, &why);
	UT_ASSERT_MSG(!ret, "%s %s: CHECK %d (%s)", idx->ops->name, when, ret,
		      why ? why : "");
	UT_ASSERT_MSG(keys == want && stat_keys(idx) == want,
		      "%s %s: CHECK counts %llu, STATS %llu, the model %llu",
		      idx->ops->name, when, (unsigned long long)keys,
		      (unsigned long long)stat_keys(idx), (unsigned long long)want);
}

/* @n random operations on keys [0, CKEYS), the model kept in @live */
static void random_ops(struct pmidx_index *idx, bool *live, unsigned int n,
		       const char *when)
{
	unsigned int j;

	for (j = 0; j < n; j++) {
		u64 k = ut_rand(CKEYS);
		u32 op = ut_rand(10);
		int ret;

		if (op < 4) {
			ret = kv_del(idx, k);
			UT_EQ(ret, live[k] ? 0 : -ENOENT);
			live[k] = false;
		} else if (op < 6) {
			ret = kv_put(idx, k, ut_rand64(), PMIDX_PUT_INSERT);
			UT_EQ(ret, live[k] ? -EEXIST : 0);
			live[k] = true;
		} else {
			UT_EQ(kv_put(idx, k, ut_rand64(), 0), 0);
			live[k] = true;
		}
		if (!(j % 997))
			counts_agree(idx, live, when);
	}
	counts_agree(idx, live, when);
}

static void key_counts(void)
{
	u32 e;

	for (e = 1; e < __PMIDX_ENGINE_MAX; e++) {
		struct pmidx_pool *pool, *rec;
		struct pmidx_index *idx;
		const char *why = NULL;
		void *img, *crash;
		bool *live;

		if (!ekv_engine_available(e))
			continue;
		if (e == PMIDX_ENGINE_CCL)
			ccl_params(false);
		live = calloc(CKEYS, sizeof(*live));
		img = ut_img_alloc(SZ);
		pool = ut_pool_new(img, SZ);
		UT_ASSERT_MSG(!pmidx_index_create(pool, "kc", e, &idx, &why),
			      "%s: create: %s", pmidx_engine_name(e), why);
		counts_agree(idx, live, "empty");
		random_ops(idx, live, 6000, "random workload");

		pmidx_pool_close(pool);
		pool = ut_pool_open(img, SZ);
		idx = pmidx_index_lookup(pool, "kc");
		UT_ASSERT(idx && idx->opened);
		counts_agree(idx, live, "after a clean re-attach");
		random_ops(idx, live, 3000, "writes after the re-attach");

		/* a crash: the image as it is, buffers and log unflushed */
		crash = ut_img_dup(img, SZ);
		pmidx_pool_close(pool);
		/* ccl: fewer slots than before the crash: recovered KVs overflow */
		ccl_nbatch = 1;
		rec = ut_pool_open(crash, SZ);
		ccl_nbatch = 2;
		UT_ASSERT(rec->flags & PMIDX_POOL_F_RECOVERED);
		idx = pmidx_index_lookup(rec, "kc");
		UT_ASSERT(idx && idx->opened);
		counts_agree(idx, live, "after crash recovery");
		if (e == PMIDX_ENGINE_CCL)	/* recovered KVs beyond the slots */
			ut_note("ccl: %d buffer nodes with an overflow after recovery",
				atomic_read(&((struct ccl_tree *)idx->priv)->ovf_nodes));
		random_ops(idx, live, 3000, "writes after the recovery");
		pmidx_pool_close(rec);

		ut_img_free(crash, SZ);
		ut_img_free(img, SZ);
		free(live);
		ut_note("engine %s: STATS keys = CHECK keys = model, through "
			"12000 random writes, a re-attach and a crash recovery",
			pmidx_engine_name(e));
	}
}

static const struct ut_test tests[] = {
	UT_TEST(check_storm),
	UT_TEST(key_counts),
};

int main(int argc, char **argv)
{
	return ut_main(argc, argv, "check", tests, ARRAY_SIZE(tests));
}
