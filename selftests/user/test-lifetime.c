// SPDX-License-Identifier: GPL-2.0
/*
 * Object lifetimes under crashes, for every engine: blobs (out-of-line
 * keys and values) are freed and reused while the engine runs, and no
 * crash image may then decode a freed object as live data.
 *
 * The workload keeps a small key space busy with puts, updates and
 * deletes of 9..40-byte keys and 0..200-byte values, so that blobs of
 * every size class are retired, freed (the epochs are made to reclaim
 * after every operation) and reused within a few operations. Engines
 * that collect a log keep it uncollected for long stretches (ccl with
 * its GC held off, the case that matters: every stale entry still
 * names its blobs), then collect now and then. Each pool also holds an
 * index of a second engine (blobs come from the pool's shared heap, so
 * damage can surface in the neighbour), a clean detach half way, and a
 * recovery in the middle of the run (the pool is abandoned unclean and
 * attached again: the recovered log is sealed, not yet collected).
 *
 * Every crash image must attach, show every acknowledged put with its
 * value and no acknowledged delete, hold no key nobody put (a full scan
 * of each index is compared with the model), and pass CHECK.
 *
 * Engines not registered in kmod/core/engine.c are reported as skipped.
 */
#include <stdlib.h>
#include <linux/prandom.h>
#include <shim/shim.h>
#include "core/engine.h"
#include "crashsim.h"
#include "engine-kv.h"
#include "harness.h"
#include "engines/ccl/ccl.h"

#define NKEYS		160
#define VMAX		200
#define OPS_DEFAULT	2400

/* ---- engine hooks: what the test may ask of an engine beyond its ops ---- */

struct eng_hooks {
	u32	engine;
	void	(*prepare)(void);		/* before the pool is made */
	void	(*collect)(struct pmidx_index *idx);	/* log GC, if any */
	void	(*reclaim)(struct pmidx_index *idx);	/* run the epochs */
};

static void ccl_prepare(void)
{
	ccl_nbatch = 2;
	ccl_log_chunk_kb = 256;
	ccl_th_log = 1000000;		/* the GC runs when the workload says */
	ccl_gc_interval_ms = 1U << 30;
	ccl_gc_naive = false;
}

static void ccl_collect(struct pmidx_index *idx)
{
	ccl_gc_run(idx->priv);
}

static void ccl_reclaim(struct pmidx_index *idx)
{
	struct ccl_tree *t = idx->priv;

	pmidx_epoch_barrier(&t->epoch);
}

static const struct eng_hooks hooks[] = {
	{ PMIDX_ENGINE_CCL, ccl_prepare, ccl_collect, ccl_reclaim },
};

static const struct eng_hooks *hooks_of(u32 engine)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(hooks); i++)
		if (hooks[i].engine == engine)
			return &hooks[i];
	return NULL;
}

static bool engine_available(u32 e)
{
	return pmidx_engine_ops(e) != NULL;
}

/* ---- keys and values ------------------------------------------------------- */

/* Key n of index @ix: 9..40 bytes, unique by its first three. */
static u32 key_of(unsigned int ix, unsigned int n, u8 *k)
{
	u32 len = 9 + (n * 7) % 32, i;

	k[0] = 'A' + ix;
	k[1] = 'a' + n / 26;
	k[2] = 'a' + n % 26;
	for (i = 3; i < len; i++)
		k[i] = (n * 131 + i * 17) & 0xff;
	return len;
}

/* Value @id: 0..200 bytes, all derived from @id. */
static u32 val_of(u64 id, u8 *v)
{
	return ekv_bytes(id, 7, v, id % (VMAX + 1));
}

static bool val_is(const u8 *v, u32 len, u64 id)
{
	u8 want[VMAX];

	return len == val_of(id, want) && !memcmp(v, want, len);
}

/* ---- the workload ------------------------------------------------------------ */

struct lt_arg {
	u32	engine, partner;	/* index "A" and index "B" */
	u64	seed;
	u32	ops;
	u32	gc_every;		/* 0: never collect */
};

static const char *const names[] = { "A", "B" };

static void reclaim(struct pmidx_index *idx)
{
	const struct eng_hooks *h = hooks_of(idx->engine);

	if (h && h->reclaim)
		h->reclaim(idx);
	pmidx_epoch_barrier(&idx->pool->epoch);
}

static int open_both(void *img, u64 size, struct pmidx_pool **pool,
		     struct pmidx_index **ix)
{
	const char *why = NULL;
	unsigned int i;

	*pool = pmidx_pool_open(img, size, false, &why);
	if (IS_ERR(*pool)) {
		printf("# workload: attach failed: %ld (%s)\n", PTR_ERR(*pool), why);
		return PTR_ERR(*pool);
	}
	for (i = 0; i < 2; i++) {
		ix[i] = pmidx_index_lookup(*pool, names[i]);
		if (!ix[i] || !ix[i]->opened)
			return -EIO;
	}
	return 0;
}

static int one_op(struct crashsim *cs, struct pmidx_index *idx, unsigned int ix,
		  struct rnd_state *rs, u64 *id)
{
	u32 r = prandom_u32_state(rs), kl, vl;
	unsigned int n = (r >> 8) % NKEYS, op;
	u8 k[64], v[VMAX];
	int ret;

	kl = key_of(ix, n, k);
	if (r % 10 < 3) {
		op = crashsim_op_begin(cs, CRASHSIM_OP_DEL, "del", k, kl, 0);
		ret = idx->ops->del(idx, k, kl, 0);
		if (ret && ret != -ENOENT)
			return ret;
	} else {
		vl = val_of(*id, v);
		op = crashsim_op_begin(cs, CRASHSIM_OP_PUT, "put", k, kl, *id);
		ret = idx->ops->put(idx, k, kl, v, vl, 0);
		(*id)++;
		if (ret)
			return ret;
	}
	crashsim_op_ack(cs, op);
	return 0;
}

static int lt_workload(struct crashsim *cs, void *img, u64 size, void *arg)
{
	struct lt_arg *a = arg;
	const u32 engines[2] = { a->engine, a->partner };
	struct pmidx_index *ix[2];
	struct pmidx_pool *pool;
	const char *why = NULL;
	struct rnd_state rs;
	unsigned int i, op;
	u64 id = 1;
	int ret;

	prandom_seed_state(&rs, a->seed);
	for (i = 0; i < 2; i++)
		if (hooks_of(engines[i]) && hooks_of(engines[i])->prepare)
			hooks_of(engines[i])->prepare();
	if (pmidx_pool_format(img, size, true, &why))
		return -EIO;
	pool = pmidx_pool_open(img, size, false, &why);
	if (IS_ERR(pool))
		return PTR_ERR(pool);
	op = crashsim_op_begin(cs, CRASHSIM_OP_NOTE, "create", NULL, 0, 0);
	for (i = 0; i < 2; i++)
		if (pmidx_index_create(pool, names[i], engines[i], &ix[i], &why))
			return -EIO;
	crashsim_op_ack(cs, op);

	for (i = 0; i < a->ops; i++) {
		/* the index under test takes three ops in four */
		unsigned int w = i % 4 == 3;
		const struct eng_hooks *h = hooks_of(ix[w]->engine);

		ret = one_op(cs, ix[w], w, &rs, &id);
		if (ret) {
			printf("# workload: op %u on %s: %d\n", i, names[w], ret);
			return ret;
		}
		reclaim(ix[w]);
		if (a->gc_every && h && h->collect && i % a->gc_every == a->gc_every - 1)
			h->collect(ix[w]);
		if (i == a->ops / 3) {
			/* a clean detach */
			pmidx_pool_close(pool);
			ret = open_both(img, size, &pool, ix);
			if (ret)
				return ret;
		} else if (i == 2 * a->ops / 3) {
			/* abandon unclean: the next attach recovers */
			pool->needs_trace = true;
			pmidx_pool_close(pool);
			ret = open_both(img, size, &pool, ix);
			if (ret)
				return ret;
		}
	}
	pmidx_pool_close(pool);
	return 0;
}

/* ---- the checker ----------------------------------------------------------------- */

struct scan_cmp {
	struct pmidx_scan_sink	sink;
	struct crashsim		*cs;
	const char		*name;
	u8			prev[PMIDX_KEY_MAX];
	u32			prevlen;
	unsigned long		n;
	bool			bad;
};

static int scan_emit(struct pmidx_scan_sink *sink, const u8 *k, u32 klen,
		     const u8 *v, u32 vlen)
{
	struct scan_cmp *sc = container_of(sink, struct scan_cmp, sink);
	struct crashsim_expect e;
	unsigned int a;

	if (sc->n && pmidx_key_cmp(sc->prev, sc->prevlen, k, klen) >= 0) {
		crashsim_fail(sc->cs, "index %s: scan out of order at record %lu",
			      sc->name, sc->n);
		sc->bad = true;
		return 1;
	}
	memcpy(sc->prev, k, klen);
	sc->prevlen = klen;
	sc->n++;
	crashsim_expect(sc->cs, k, klen, &e);
	for (a = 0; a < e.n; a++)
		if (e.present[a] && val_is(v, vlen, e.value[a]))
			return 0;
	crashsim_fail(sc->cs, "index %s: scan returns key %.3s (%u bytes) with a "
		      "%u-byte value nobody put for it%s", sc->name, k, klen, vlen,
		      e.present[0] || e.n > 1 ? "" : " (the key should not exist)");
	sc->bad = true;
	return 1;
}

static void check_index(struct crashsim *cs, struct pmidx_index *idx,
			unsigned int ixn)
{
	struct scan_cmp sc = { .sink.emit = scan_emit, .cs = cs,
			       .name = names[ixn] };
	struct crashsim_expect e;
	const char *why = NULL;
	unsigned int n;
	u64 keys;
	int ret;

	for (n = 0; n < NKEYS; n++) {
		u8 k[64], v[VMAX + 1];
		u32 kl = key_of(ixn, n, k), vl = sizeof(v);
		bool found = false;
		unsigned int a;

		ret = idx->ops->get(idx, k, kl, v, &vl);
		if (ret && ret != -ENOENT) {
			crashsim_fail(cs, "index %s key %u: get %d", names[ixn], n, ret);
			continue;
		}
		crashsim_expect(cs, k, kl, &e);
		for (a = 0; a < e.n && !found; a++)
			found = ret ? !e.present[a] :
				e.present[a] && val_is(v, vl, e.value[a]);
		if (!found)
			crashsim_fail(cs, "index %s key %u: %s, model says %s%s",
				      names[ixn], n, ret ? "absent" :
				      "present with a value nobody put",
				      e.present[0] ? "present" : "absent",
				      e.n > 1 ? " (or in flight)" : "");
	}
	ret = idx->ops->scan(idx, NULL, 0, false, NULL, 0, &sc.sink);
	if (ret < 0)
		crashsim_fail(cs, "index %s: scan %d", names[ixn], ret);
	if (idx->ops->check && idx->ops->check(idx, &keys, &why))
		crashsim_fail(cs, "index %s: engine check: %s", names[ixn], why);
	else if (idx->ops->check && !sc.bad && keys != sc.n)
		crashsim_fail(cs, "index %s: check counts %llu keys, scan %lu",
			      names[ixn], (unsigned long long)keys, sc.n);
}

static int lt_check(struct crashsim *cs, const struct crashsim_point *pt,
		    struct pmidx_pool *pool, int err, const char *why, void *arg)
{
	struct pmidx_index *idx;
	unsigned int i;

	if (!pool) {
		if (!crashsim_note_acked(cs, "create") && (err == -EINVAL || err == -EUCLEAN))
			return 0;
		crashsim_fail(cs, "attach failed: %d (%s)", err, why);
		return -1;
	}
	for (i = 0; i < 2; i++) {
		idx = pmidx_index_lookup(pool, names[i]);
		if (!idx) {
			if (crashsim_note_acked(cs, "create"))
				crashsim_fail(cs, "acknowledged index %s lost", names[i]);
			continue;
		}
		if (!idx->opened) {
			crashsim_fail(cs, "index %s not opened", names[i]);
			continue;
		}
		check_index(cs, idx, i);
	}
	crashsim_check_pool(cs, pool, -1);
	return 0;
}

/* ---- tests ---------------------------------------------------------------------- */

static unsigned int env_uint(const char *name, unsigned int def)
{
	const char *s = getenv(name);

	return s && *s ? strtoul(s, NULL, 0) : def;
}

/* The partner index: ccl, or utree beside a ccl index under test. */
static u32 partner_of(u32 e)
{
	u32 p = e == PMIDX_ENGINE_CCL ? PMIDX_ENGINE_UTREE : PMIDX_ENGINE_CCL;

	return engine_available(p) ? p : e;
}

static bool committed(u32 e)
{
	const struct pmidx_engine_ops *ops = pmidx_engine_ops(e);

	return ops && ops->flags & PMIDX_ENGINE_F_COMMITTED;
}

static void run_engine(u32 e, u32 gc_every, const char *what)
{
	struct lt_arg arg = {
		.engine = e, .partner = partner_of(e), .seed = ut_seed,
		.ops = env_uint("PMIDX_LIFETIME_OPS", OPS_DEFAULT),
		.gc_every = gc_every,
	};
	char name[64];
	struct crashsim_workload wl = {
		.name = name, .run = lt_workload, .check = lt_check, .arg = &arg,
	};
	struct crashsim_config cfg = {
		.seed = ut_seed, .variants = env_uint("PMIDX_LIFETIME_VARIANTS", 1),
		.samples = env_uint("PMIDX_LIFETIME_POINTS", 300),
		/* every point of histories up to this long (crash-long) */
		.exhaustive_max = env_uint("PMIDX_LIFETIME_EXHAUSTIVE", 1),
	};
	struct crashsim_result res;

	crashsim_config_env(&cfg);
	snprintf(name, sizeof(name), "%s+%s/%s", pmidx_engine_name(e),
		 pmidx_engine_name(arg.partner), what);
	/* committed mode: every crash attach is also traced and compared */
	pmidx_recovery_verify = committed(e) || committed(arg.partner);
	UT_EQ(crashsim_run(&cfg, &wl, &res), 0);
	pmidx_recovery_verify = false;
	crashsim_print_result(name, &cfg, &res);
	UT_ASSERT_MSG(!res.failures, "%s: %llu failing crash images",
		      name, (unsigned long long)res.failures);
}

/* PMIDX_LIFETIME_ENGINE=NAME: that engine alone (crash-long runs them apart) */
static bool engine_wanted(u32 e)
{
	const char *only = getenv("PMIDX_LIFETIME_ENGINE");

	return !only || !*only || !strcmp(only, pmidx_engine_name(e));
}

/* Every engine built in (and wanted), collecting every @gc_every ops. */
static void run_all(u32 gc_every, const char *what)
{
	u32 e;

	for (e = 1; e < __PMIDX_ENGINE_MAX; e++) {
		if (!engine_wanted(e))
			continue;
		if (!engine_available(e)) {
			ut_note("engine %s: not built, skipped", pmidx_engine_name(e));
			continue;
		}
		run_engine(e, gc_every, what);
	}
}

/* No log collection: every log entry stays replayable to the end. */
static void lifetime_no_gc(void)
{
	run_all(0, "no-gc");
}

/* Collections now and then: held objects are released and reused. */
static void lifetime_gc(void)
{
	run_all(97, "gc");
}

static const struct ut_test tests[] = {
	UT_TEST(lifetime_no_gc),
	UT_TEST(lifetime_gc),
};

int main(int argc, char **argv)
{
	if (crashsim_parse_model(&argc, argv))
		return 2;
	return ut_main(argc, argv, "lifetime", tests, ARRAY_SIZE(tests));
}
