// SPDX-License-Identifier: GPL-2.0
/*
 * Crash-consistency of pool, index table and allocator under the ADR and
 * eADR crash simulators (tools/testing/crashsim.h): multi-step workloads
 * (format, attach, create/drop indexes, abandoned allocations, detach and
 * re-attach), every crash point of the short ones, a seeded sample of the
 * long one. Per crash image: the pool attaches (unless its format was not
 * acknowledged), every acknowledged create/drop is there, nothing else
 * is, no index is half made, and the allocator leaks nothing.
 *
 * Also the prefix model's self-test: a bug only a line persisted between
 * two of its stores shows, which the line model passes and the prefix
 * model must find.
 *
 * In the prefix build (build/user/prefix/test-crash) the ADR runs use the
 * prefix model; "--model line|prefix" chooses.
 *
 * Replay one failure: PMIDX_CRASH_POINT=P PMIDX_CRASH_VARIANT=V
 *   test-crash --seed S --only NAME   (S: the run's base seed, as printed)
 * PMIDX_CRASH_SAVE=DIR keeps failing crash images (attachable anywhere);
 * PMIDX_CRASH_SCALE=N multiplies the long workload and its sample.
 */
#include <stdlib.h>
#include <linux/prandom.h>
#include <shim/shim.h>
#include "core/alloc_test.h"
#include "core/engine.h"
#include "crashsim.h"
#include "harness.h"

static unsigned int scale = 1;

/* the workloads cycle through the engines, ids 1..NR_ENGINES: ccl, utree, b3 */
#define NR_ENGINES	3

/* ---- operations, bracketed for the model -------------------------------------------- */

/* (creating and dropping an index: crashsim_index_create(), crashsim_index_drop()) */

static int op_format(struct crashsim *cs, void *img, u64 size)
{
	unsigned int op = crashsim_op_begin(cs, CRASHSIM_OP_NOTE, "format", NULL, 0, 0);
	const char *why = NULL;
	int ret = pmidx_pool_format(img, size, true, &why);

	if (!ret)
		crashsim_op_ack(cs, op);
	return ret;
}

static struct pmidx_pool *op_open(void *img, u64 size, bool eadr)
{
	const char *why = NULL;
	struct pmidx_pool *pool = pmidx_pool_open(img, size, eadr, &why);

	if (IS_ERR(pool)) {
		printf("# workload: attach failed: %ld (%s)\n", PTR_ERR(pool), why);
		return NULL;
	}
	return pool;
}

struct wl_arg {
	bool	eadr;
	u64	seed;
};

/* ---- the checker ------------------------------------------------------------------------ */

static int index_check(struct crashsim *cs, const struct crashsim_point *pt,
		       struct pmidx_pool *pool, int err, const char *why, void *arg)
{
	struct crashsim_expect e;
	const u8 *key;
	unsigned int i;
	u32 klen;

	if (!pool) {
		/* only a pool whose format never completed may be refused */
		if (!crashsim_note_acked(cs, "format") &&
		    (err == -EINVAL || err == -EUCLEAN))
			return 0;
		crashsim_fail(cs, "attach failed: %d (%s)", err, why);
		return -1;
	}
	/* every workload ends with a clean detach: nothing to recover then */
	if (pt->end && (pool->flags & PMIDX_POOL_F_RECOVERED))
		crashsim_fail(cs, "the pool was detached cleanly, yet attach recovered");
	/* every acknowledged operation, with its latest value */
	for (i = 0; (key = crashsim_key(cs, i, &klen)); i++) {
		char name[PMIDX_NAME_MAX + 1] = {};
		struct pmidx_index *idx;

		memcpy(name, key, min(klen, (u32)PMIDX_NAME_MAX));
		idx = pmidx_index_lookup(pool, name);
		crashsim_expect(cs, key, klen, &e);
		if (!crashsim_expect_ok(&e, idx, idx ? idx->engine : 0))
			crashsim_fail(cs, "index %s: %s (engine %u), expected %s%s",
				      name, idx ? "present" : "absent",
				      idx ? idx->engine : 0,
				      e.present[0] ? "present" : "absent",
				      e.n > 1 ? " or its in-flight outcome" : "");
	}
	/* nothing unacknowledged, nothing half made */
	for (i = 0; i < PMIDX_MAX_INDEXES; i++) {
		struct pmidx_index *idx = pool->indexes[i];

		if (!idx)
			continue;
		crashsim_expect(cs, idx->name, strlen(idx->name), &e);
		if (!crashsim_expect_ok(&e, true, idx->engine))
			crashsim_fail(cs, "index %s (engine %u) is visible but was not acknowledged so",
				      idx->name, idx->engine);
		/* engines own their root; a storage-less one leaves it zero */
		if ((!idx->opened || !strcmp(idx->ops->name, "null")) &&
		    memchr_inv(pmidx_ptr(&pool->pm, idx->root), 0,
			       PMIDX_INDEX_ROOT_SIZE))
			crashsim_fail(cs, "index %s: root object not initialised",
				      idx->name);
		if (idx->opened && idx->ops->check) {
			const char *cwhy = NULL;
			u64 keys;

			if (idx->ops->check(idx, &keys, &cwhy))
				crashsim_fail(cs, "index %s: engine check: %s",
					      idx->name, cwhy);
		}
	}
	crashsim_check_pool(cs, pool, 0);
	return 0;
}

/* ---- workloads ----------------------------------------------------------------------------- */

static const char *nm(char *buf, const char *p, unsigned int i)
{
	sprintf(buf, "%s%u", p, i);
	return buf;
}

/* format, attach, create 10, drop 4, detach, attach, create 3, drop 2, detach */
static int wl_basic(struct crashsim *cs, void *img, u64 size, void *arg)
{
	struct wl_arg *a = arg;
	struct pmidx_pool *pool;
	char buf[16];
	unsigned int i;

	if (op_format(cs, img, size))
		return -EIO;
	pool = op_open(img, size, a->eadr);
	if (!pool)
		return -EIO;
	for (i = 0; i < 10; i++)
		if (crashsim_index_create(cs, pool, nm(buf, "ix", i), 1 + i % NR_ENGINES))
			return -EIO;
	for (i = 0; i < 10; i += 3)
		if (crashsim_index_drop(cs, pool, nm(buf, "ix", i)))
			return -EIO;
	pmidx_pool_close(pool);
	pool = op_open(img, size, a->eadr);
	if (!pool)
		return -EIO;
	for (i = 10; i < 13; i++)
		if (crashsim_index_create(cs, pool, nm(buf, "ix", i), 1 + i % NR_ENGINES))
			return -EIO;
	if (crashsim_index_drop(cs, pool, "ix1") ||
	    crashsim_index_drop(cs, pool, "ix11"))
		return -EIO;
	/* a dropped name comes back with another engine */
	if (crashsim_index_create(cs, pool, "ix1", PMIDX_ENGINE_CCL))
		return -EIO;
	pmidx_pool_close(pool);
	return 0;
}

/* abandoned allocations (what a crash between allocate and link leaves),
 * a detach that must not claim a clean state, recovery, more changes */
static int wl_leak(struct crashsim *cs, void *img, u64 size, void *arg)
{
	struct wl_arg *a = arg;
	struct pmidx_alloc_test t = {
		.mode = PMIDX_ALLOC_TEST_LEAK, .threads = 1, .ops = 150,
		.seed = a->seed,
	};
	struct pmidx_pool *pool;
	const char *why = NULL;
	unsigned int op;
	char buf[16];
	int i;

	if (op_format(cs, img, size))
		return -EIO;
	pool = op_open(img, size, a->eadr);
	if (!pool)
		return -EIO;
	if (crashsim_index_create(cs, pool, "keep0", PMIDX_ENGINE_CCL) ||
	    crashsim_index_create(cs, pool, "keep1", PMIDX_ENGINE_UTREE) ||
	    crashsim_index_create(cs, pool, "keep2", PMIDX_ENGINE_B3))
		return -EIO;
	op = crashsim_op_begin(cs, CRASHSIM_OP_NOTE, "leak", NULL, 0, 0);
	if (pmidx_alloc_test_run(pool, &t, &why))
		return -EIO;
	crashsim_op_ack(cs, op);
	if (crashsim_index_create(cs, pool, "after", PMIDX_ENGINE_UTREE) ||
	    crashsim_index_drop(cs, pool, "keep0"))
		return -EIO;
	pmidx_pool_close(pool);			/* not clean: needs_trace */
	for (i = 0; i < 2; i++) {
		pool = op_open(img, size, a->eadr);
		if (!pool)
			return -EIO;
		if (crashsim_index_create(cs, pool, nm(buf, "round", i), PMIDX_ENGINE_UTREE))
			return -EIO;
		pmidx_pool_close(pool);
	}
	pool = op_open(img, size, a->eadr);
	if (!pool)
		return -EIO;
	if (crashsim_index_drop(cs, pool, "keep1") ||
	    crashsim_index_drop(cs, pool, "keep2") ||
	    crashsim_index_drop(cs, pool, "after") ||
	    crashsim_index_drop(cs, pool, "round0") ||
	    crashsim_index_drop(cs, pool, "round1"))
		return -EIO;
	pmidx_pool_close(pool);
	return 0;
}

/* fill the table, drop some, refill: slot reuse over old bodies */
static int wl_table(struct crashsim *cs, void *img, u64 size, void *arg)
{
	struct wl_arg *a = arg;
	struct pmidx_pool *pool;
	char buf[16];
	unsigned int i;

	if (op_format(cs, img, size))
		return -EIO;
	pool = op_open(img, size, a->eadr);
	if (!pool)
		return -EIO;
	for (i = 0; i < PMIDX_MAX_INDEXES; i++)
		if (crashsim_index_create(cs, pool, nm(buf, "t", i), 1 + i % NR_ENGINES))
			return -EIO;
	for (i = 0; i < PMIDX_MAX_INDEXES; i += 3)
		if (crashsim_index_drop(cs, pool, nm(buf, "t", i)))
			return -EIO;
	for (i = 0; i < PMIDX_MAX_INDEXES; i += 3)
		if (crashsim_index_create(cs, pool, nm(buf, "u", i), 1 + (i + 1) % NR_ENGINES))
			return -EIO;
	pmidx_pool_close(pool);
	return 0;
}

/* long and random: sampled crash points */
static int wl_random(struct crashsim *cs, void *img, u64 size, void *arg)
{
	struct wl_arg *a = arg;
	struct pmidx_pool *pool;
	struct rnd_state rs;
	bool live[24] = {};
	unsigned int i, n = 1500 * scale;
	char buf[16];

	prandom_seed_state(&rs, a->seed);
	if (op_format(cs, img, size))
		return -EIO;
	pool = op_open(img, size, a->eadr);
	if (!pool)
		return -EIO;
	for (i = 0; i < n; i++) {
		u32 r = prandom_u32_state(&rs);
		unsigned int k = r % ARRAY_SIZE(live);

		if (r % 53 == 0) {		/* detach / attach */
			pmidx_pool_close(pool);
			pool = op_open(img, size, a->eadr);
			if (!pool)
				return -EIO;
			continue;
		}
		if (live[k]) {
			if (crashsim_index_drop(cs, pool, nm(buf, "r", k)))
				return -EIO;
		} else if (crashsim_index_create(cs, pool, nm(buf, "r", k),
						 1 + (r >> 8) % NR_ENGINES)) {
			return -EIO;
		}
		live[k] = !live[k];
	}
	pmidx_pool_close(pool);
	return 0;
}

/* ---- driver ------------------------------------------------------------------------------------ */

static void run(const char *name, int (*fn)(struct crashsim *, void *, u64, void *),
		bool eadr, bool at_flushes, unsigned int variants, unsigned int samples,
		bool all_flushed)
{
	struct wl_arg arg = { .eadr = eadr, .seed = ut_seed };
	struct crashsim_workload wl = {
		.name = name, .run = fn, .check = index_check, .arg = &arg,
	};
	struct crashsim_config cfg = {
		.eadr = eadr, .at_flushes = at_flushes, .seed = ut_seed,
		.variants = variants, .samples = samples * scale,
		/* a sample size asks for sampling once the history is longer */
		.exhaustive_max = samples * scale,
	};
	struct crashsim_result res;

	crashsim_config_env(&cfg);
	UT_EQ(crashsim_run(&cfg, &wl, &res), 0);
	crashsim_print_result(name, &cfg, &res);
	UT_CRASH_OK(res, all_flushed);
}

static void crash_basic_adr(void)
{
	run("basic", wl_basic, false, false, 3, 0, true);
}

static void crash_basic_adr_flushes(void)
{
	run("basic", wl_basic, false, true, 1, 0, true);
}

static void crash_basic_eadr(void)
{
	run("basic", wl_basic, true, false, 0, 0, true);
}

static void crash_leak_adr(void)
{
	run("leak", wl_leak, false, false, 2, 0, false);
}

static void crash_leak_eadr(void)
{
	run("leak", wl_leak, true, false, 0, 0, false);
}

static void crash_table_adr(void)
{
	run("table", wl_table, false, false, 2, 0, true);
}

static void crash_random_adr(void)
{
	run("random", wl_random, false, false, 2, 300, true);
}

static void crash_random_eadr(void)
{
	run("random", wl_random, true, false, 0, 300, true);
}

/* ---- the prefix model's self-test ----------------------------------------------------- */

/*
 * In one line of an index root (a null engine's: the core's tests own
 * it), a commit word and, above it, the data word it vouches for, then
 * one flush and one fence. Stored commit first, the line is wrong only
 * if it persists between the two stores: no crash image of the line
 * model has that, the prefix model must produce it.
 *
 * With @filler, the other six words of the line take that many stores
 * first (store i: i + 1 into word 2 + i % 6), with a flush at a third and
 * a fence before the last three: past the per-line cap of stores, their
 * records merge on both sides of the flushed snapshot, the fence keeps
 * the ones after it, and every image must hold a prefix of them.
 */
#define TOY_COMMIT	0xc0aa17c0aa17c0aaULL
#define TOY_DATA	0x5eedda7a5eedda7aULL

struct toy_arg {
	bool		commit_first;
	unsigned int	filler;
	bool		eadr;		/* attach as eADR */
	bool		unflushed;	/* no flush, no fence: eADR's way */
};

static __le64 *toy_words(struct pmidx_pool *pool, struct pmidx_index *idx)
{
	return pmidx_ptr(&pool->pm, ALIGN(idx->root, PMIDX_LINE_SIZE));
}

static int wl_toy(struct crashsim *cs, void *img, u64 size, void *arg)
{
	struct toy_arg *a = arg;
	struct pmidx_index *idx;
	struct pmidx_pool *pool;
	unsigned int op, i;
	__le64 *w;

	if (op_format(cs, img, size))
		return -EIO;
	pool = op_open(img, size, a->eadr);
	if (!pool || crashsim_index_create(cs, pool, "toy", PMIDX_ENGINE_CCL))
		return -EIO;
	idx = pmidx_index_lookup(pool, "toy");
	if (!idx)
		return -EIO;
	w = toy_words(pool, idx);
	op = crashsim_op_begin(cs, CRASHSIM_OP_NOTE, "publish", NULL, 0, 0);
	for (i = 0; i < a->filler; i++) {
		WRITE_ONCE(w[2 + i % 6], cpu_to_le64(i + 1));
		if (i == a->filler / 3)
			pmidx_flush(&pool->pm, w, PMIDX_LINE_SIZE);
		if (i == a->filler - 4)
			pmidx_fence(&pool->pm);
	}
	if (a->commit_first) {
		WRITE_ONCE(w[0], cpu_to_le64(TOY_COMMIT));
		WRITE_ONCE(w[1], cpu_to_le64(TOY_DATA));
	} else {
		WRITE_ONCE(w[1], cpu_to_le64(TOY_DATA));
		WRITE_ONCE(w[0], cpu_to_le64(TOY_COMMIT));
	}
	if (!a->unflushed)
		pmidx_persist(&pool->pm, w, 2 * sizeof(*w));
	crashsim_op_ack(cs, op);
	pmidx_pool_close(pool);
	return 0;
}

static int toy_check(struct crashsim *cs, const struct crashsim_point *pt,
		     struct pmidx_pool *pool, int err, const char *why, void *arg)
{
	struct toy_arg *a = arg;
	struct crashsim_expect e;
	struct pmidx_index *idx;
	u64 commit, data, last = 0, v;
	unsigned int j;
	__le64 *w;

	if (!pool) {
		if (!crashsim_note_acked(cs, "format") &&
		    (err == -EINVAL || err == -EUCLEAN))
			return 0;
		crashsim_fail(cs, "attach failed: %d (%s)", err, why);
		return -1;
	}
	idx = pmidx_index_lookup(pool, "toy");
	crashsim_expect(cs, "toy", 3, &e);
	if (!crashsim_expect_ok(&e, idx, idx ? idx->engine : 0))
		crashsim_fail(cs, "index toy %s", idx ? "not acknowledged" : "lost");
	if (!idx)
		return 0;
	w = toy_words(pool, idx);
	commit = le64_to_cpu(READ_ONCE(w[0]));
	data = le64_to_cpu(READ_ONCE(w[1]));
	if (commit == TOY_COMMIT && data != TOY_DATA)
		crashsim_fail(cs, "commit word without its data (%#llx)",
			      (unsigned long long)data);
	if (commit != TOY_COMMIT && crashsim_note_acked(cs, "publish"))
		crashsim_fail(cs, "acknowledged commit word lost");
	/* the filler: its last store arrived, so did every one before it */
	for (j = 0; a->filler && j < 6; j++)
		last = max(last, le64_to_cpu(READ_ONCE(w[2 + j])));
	for (j = 0; a->filler && j < 6; j++) {
		v = last > j ? last - (last - j - 1) % 6 : 0;
		if (le64_to_cpu(READ_ONCE(w[2 + j])) != v)
			crashsim_fail(cs, "word %u is %llu, not %llu: no prefix of the stores",
				      2 + j, (unsigned long long)le64_to_cpu(READ_ONCE(w[2 + j])),
				      (unsigned long long)v);
	}
	return 0;
}

static void toy_run(bool commit_first, unsigned int filler, bool prefix,
		    struct crashsim_result *res)
{
	struct toy_arg arg = { .commit_first = commit_first, .filler = filler };
	struct crashsim_workload wl = {
		.name = filler ? "toy_many_stores" :
			commit_first ? "toy_commit_first" : "toy_data_first",
		.run = wl_toy, .check = toy_check, .arg = &arg,
	};
	struct crashsim_config cfg = {
		.seed = ut_seed, .variants = 3, .only_point = -1,
		.only_variant = -1, .max_failures = 2, .prefix = prefix,
		.at_flushes = filler,
	};

	if (commit_first && prefix)
		ut_note("the prefix model must fail %s (FAIL lines expected):",
			wl.name);
	UT_EQ(crashsim_run(&cfg, &wl, res), 0);
	crashsim_print_result(wl.name, &cfg, res);
	UT_ASSERT(res->points > 0 && res->images >= res->points);
}

static void crash_prefix_model(void)
{
	struct crashsim_result res;

	/* the line model passes both orders: a line arrives whole */
	toy_run(true, 0, false, &res);
	UT_EQ(res.failures, 0);
	toy_run(false, 0, false, &res);
	UT_EQ(res.failures, 0);
	if (!crashsim_prefix_supported()) {
		ut_note("prefix model: not in this build (build/user/prefix/test-crash)");
		return;
	}
	toy_run(true, 0, true, &res);
	UT_ASSERT_MSG(res.failures > 0,
		      "the prefix model missed a commit word stored before its data");
	UT_EQ(res.untraced_lines, 0);
	toy_run(false, 0, true, &res);
	UT_EQ(res.failures, 0);
	UT_EQ(res.untraced_lines, 0);
	UT_ASSERT(res.max_line_stores >= 2);
	/* merged records still rebuild the line (else it would be untraced) */
	toy_run(false, 300, true, &res);
	UT_EQ(res.failures, 0);
	UT_EQ(res.untraced_lines, 0);
	UT_ASSERT(res.merged_stores > 0);
}

/* ---- the eADR model's self-test ------------------------------------------------------- */

/*
 * The toy's two words stored with no flush and no fence at all (an eADR
 * protocol's small writes, PFtree §3.3), then acknowledged. Under ADR the
 * acknowledged commit word must be lost in some image (a store never
 * flushed is not durable); under eADR every image keeps it. In the eADR
 * store model (prefix build) the commit word stored before its data must
 * fail: there is a crash point between the two stores, where the plain
 * build's eADR points (fences) see none.
 */
static void toy_run_unflushed(bool commit_first, bool eadr, bool prefix,
			      struct crashsim_result *res)
{
	struct toy_arg arg = {
		.commit_first = commit_first, .eadr = eadr, .unflushed = true,
	};
	struct crashsim_workload wl = {
		.name = commit_first ? "toy_unflushed_commit_first" :
			"toy_unflushed",
		.run = wl_toy, .check = toy_check, .arg = &arg,
	};
	struct crashsim_config cfg = {
		.seed = ut_seed, .eadr = eadr, .variants = 3, .only_point = -1,
		.only_variant = -1, .max_failures = 2, .prefix = prefix,
	};

	if (!eadr || (commit_first && prefix))
		ut_note("the %s model must fail %s (FAIL lines expected):",
			eadr ? "eADR store" : "ADR", wl.name);
	UT_EQ(crashsim_run(&cfg, &wl, res), 0);
	crashsim_print_result(wl.name, &cfg, res);
	UT_ASSERT(res->points > 0 && res->images >= res->points);
}

static void crash_eadr_model(void)
{
	struct crashsim_result res;

	/* ADR: an unflushed store is not durable */
	toy_run_unflushed(false, false, false, &res);
	UT_ASSERT_MSG(res.failures > 0,
		      "the ADR model kept an acknowledged store never flushed");
	/* eADR: it is, at the fences (plain) and at every store (prefix) */
	toy_run_unflushed(false, true, false, &res);
	UT_EQ(res.failures, 0);
	if (!crashsim_prefix_supported()) {
		ut_note("eADR store model: not in this build (build/user/prefix/test-crash)");
		return;
	}
	toy_run_unflushed(false, true, true, &res);
	UT_EQ(res.failures, 0);
	UT_EQ(res.untraced_lines, 0);
	/* one point per store word that changed the pool, at least ours */
	UT_ASSERT(res.events > 2);
	toy_run_unflushed(true, true, true, &res);
	UT_ASSERT_MSG(res.failures > 0,
		      "the eADR store model missed a commit word stored before its data");
}

static const struct ut_test tests[] = {
	UT_TEST(crash_basic_adr),
	UT_TEST(crash_basic_adr_flushes),
	UT_TEST(crash_basic_eadr),
	UT_TEST(crash_leak_adr),
	UT_TEST(crash_leak_eadr),
	UT_TEST(crash_table_adr),
	UT_TEST(crash_random_adr),
	UT_TEST(crash_random_eadr),
	UT_TEST(crash_prefix_model),
	UT_TEST(crash_eadr_model),
};

int main(int argc, char **argv)
{
	const char *e = getenv("PMIDX_CRASH_SCALE");

	if (e && atoi(e) > 0)
		scale = atoi(e);
	if (crashsim_parse_model(&argc, argv))
		return 2;
	/* a committed-mode index anywhere: recovery against a full trace */
	pmidx_recovery_verify = true;
	return ut_main(argc, argv, "crash simulator", tests, ARRAY_SIZE(tests));
}
