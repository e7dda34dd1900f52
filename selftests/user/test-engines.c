// SPDX-License-Identifier: GPL-2.0
/*
 * The real engines (kmod/engines/), built for userspace: every engine the
 * module registers gets the same treatment: put/get/update/delete/scan
 * with short (inline) and long (blob) keys and values, the structural
 * checker, detach/attach, a crash (image copied while attached), drop
 * without leaks, and the ADR crash simulator with key/value operations
 * (every acknowledged put/delete visible with its latest value after any
 * crash, nothing unacknowledged).
 *
 * Engines not registered in kmod/core/engine.c are reported as skipped.
 */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <linux/prandom.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>
#include <linux/workqueue.h>
#include <shim/shim.h>
#include "core/blob.h"
#include "core/engine.h"
#include "engines/ccl/ccl.h"
#include "engines/utree/utree.h"
#include "engines/b3/b3.h"
#include "crashsim.h"
#include "engine-kv.h"
#include "harness.h"

#define SZ		(64ULL << 20)
#define NKEYS		1500

static bool val_is(const u8 *b, u32 len, u64 v)
{
	u8 want[128];

	return len == ekv_hval(v, want) && !memcmp(b, want, len);
}

static int kv_put_flags(struct pmidx_index *idx, u64 i, u64 v, u32 flags)
{
	u8 k[64], b[128];
	u32 kl = ekv_hkey(i, k), vl = ekv_hval(v, b);

	return idx->ops->put(idx, k, kl, b, vl, flags);
}

static int kv_put(struct pmidx_index *idx, u64 i, u64 v)
{
	return kv_put_flags(idx, i, v, 0);
}

static int kv_get(struct pmidx_index *idx, u64 i, u64 *v, bool *ok)
{
	u8 k[64], b[256];
	u32 kl = ekv_hkey(i, k), vl = sizeof(b);
	int ret = idx->ops->get(idx, k, kl, b, &vl);

	if (ret < 0)
		return ret;
	*ok = val_is(b, vl, *v);
	return 0;
}

static int kv_del_flags(struct pmidx_index *idx, u64 i, u32 flags)
{
	u8 k[64];
	u32 kl = ekv_hkey(i, k);

	return idx->ops->del(idx, k, kl, flags);
}

static int kv_del(struct pmidx_index *idx, u64 i)
{
	return kv_del_flags(idx, i, 0);
}

/* state[i]: 0 absent, else value + 1 */
static void verify(struct pmidx_index *idx, const u64 *state, const char *when)
{
	u64 i, live = 0, keys = 0;
	const char *why = NULL;
	struct ekv_counter c = { .sink.emit = ekv_count_emit };

	for (i = 0; i < NKEYS; i++) {
		u64 v = state[i] ? state[i] - 1 : 0;
		bool ok = false;
		int ret = kv_get(idx, i, &v, &ok);

		if (state[i]) {
			live++;
			UT_ASSERT_MSG(!ret && ok, "%s %s: key %llu: %d%s", idx->ops->name,
				      when, (unsigned long long)i, ret,
				      ret ? "" : " (wrong value)");
		} else {
			UT_ASSERT_MSG(ret == -ENOENT, "%s %s: deleted key %llu: %d",
				      idx->ops->name, when, (unsigned long long)i, ret);
		}
	}
	if (idx->ops->check) {
		UT_ASSERT_MSG(!idx->ops->check(idx, &keys, &why), "%s %s: check: %s",
			      idx->ops->name, when, why);
		UT_EQ(keys, live);
	}
	if (idx->ops->scan) {
		UT_EQ(idx->ops->scan(idx, NULL, 0, false, NULL, 0, &c.sink), 0);
		UT_EQ(c.n, live);
		UT_ASSERT(!c.bad);
	}
}

/* committed mode: every crash attach is also traced and compared */
static void verify_for(u32 e)
{
	pmidx_recovery_verify = pmidx_engine_ops(e)->flags &
				PMIDX_ENGINE_F_COMMITTED;
}

static void engine_kv_roundtrip(void)
{
	u32 e;

	for (e = 1; e < __PMIDX_ENGINE_MAX; e++) {
		void *img, *crash;
		struct pmidx_pool *pool;
		struct pmidx_index *idx;
		const char *why = NULL;
		u64 *state, i;

		if (!ekv_engine_available(e))
			continue;
		verify_for(e);
		state = calloc(NKEYS, sizeof(*state));
		img = ut_img_alloc(SZ);
		pool = ut_pool_new(img, SZ);
		UT_ASSERT_MSG(!pmidx_index_create(pool, "kv", e, &idx, &why),
			      "%s: create: %s", pmidx_engine_name(e), why);
		for (i = 0; i < NKEYS; i++) {
			UT_ASSERT_MSG(!kv_put(idx, i, i), "%s: put %llu",
				      idx->ops->name, (unsigned long long)i);
			state[i] = i + 1;
		}
		verify(idx, state, "after puts");
		for (i = 0; i < NKEYS; i += 2) {
			UT_EQ(kv_put(idx, i, i + 7), 0);
			state[i] = i + 8;
		}
		for (i = 0; i < NKEYS; i += 3) {
			UT_EQ(kv_del(idx, i), 0);
			state[i] = 0;
		}
		UT_EQ(kv_del(idx, 0), -ENOENT);
		verify(idx, state, "after updates");
		pmidx_pool_close(pool);
		pool = ut_pool_open(img, SZ);
		idx = pmidx_index_lookup(pool, "kv");
		UT_ASSERT(idx && idx->opened);
		verify(idx, state, "after re-attach");
		/* a crash: the image as it is, while attached */
		for (i = 1; i < NKEYS; i += 5) {
			UT_EQ(kv_put(idx, i, i + 100), 0);
			state[i] = i + 101;
		}
		crash = ut_img_dup(img, SZ);
		{
			struct pmidx_pool *rec = ut_pool_open(crash, SZ);
			struct pmidx_index *ri = pmidx_index_lookup(rec, "kv");

			UT_ASSERT(rec->flags & PMIDX_POOL_F_RECOVERED);
			UT_ASSERT(ri && ri->opened);
			verify(ri, state, "after crash recovery");
			UT_EQ(pmidx_index_drop(rec, "kv", &why), 0);
			UT_EQ(ut_stat(rec, PMIDX_STAT_ALLOC_OBJECTS), 0);
			pmidx_pool_close(rec);
		}
		UT_EQ(pmidx_index_drop(pool, "kv", &why), 0);
		UT_ASSERT_MSG(ut_stat(pool, PMIDX_STAT_ALLOC_OBJECTS) == 0,
			      "%s: %llu objects left after drop",
			      pmidx_engine_name(e),
			      (unsigned long long)ut_stat(pool, PMIDX_STAT_ALLOC_OBJECTS));
		pmidx_pool_close(pool);
		ut_img_free(crash, SZ);
		ut_img_free(img, SZ);
		free(state);
		pmidx_recovery_verify = false;
		ut_note("engine %s: %u keys through put/update/delete/scan/check, "
			"re-attach, crash recovery and drop", pmidx_engine_name(e), NKEYS);
	}
}

/* ---- atomic memory exhausted ------------------------------------------------ */

/* A fresh pool with one index "kv" of engine @e, and verify()'s state. */
struct kv_index {
	void			*img;
	struct pmidx_pool	*pool;
	struct pmidx_index	*idx;
	u64			*state;
};

static void kv_index_new(struct kv_index *x, u32 e)
{
	const char *why = NULL;

	x->state = calloc(NKEYS, sizeof(*x->state));
	UT_ASSERT(x->state);
	x->img = ut_img_alloc(SZ);
	x->pool = ut_pool_new(x->img, SZ);
	UT_ASSERT_MSG(!pmidx_index_create(x->pool, "kv", e, &x->idx, &why),
		      "%s: create: %s", pmidx_engine_name(e), why);
}

/* Drop the index, detach (the pool when still attached), free. */
static void kv_index_free(struct kv_index *x)
{
	const char *why = NULL;

	if (x->pool) {
		UT_EQ(pmidx_index_drop(x->pool, "kv", &why), 0);
		pmidx_pool_close(x->pool);
	}
	ut_img_free(x->img, SZ);
	free(x->state);
}

/*
 * Note in @state the result @ret of a round's write of key @i (value @v,
 * or a delete). A delete of a key that an earlier -ENOMEM left absent
 * finds nothing; -ENOMEM is counted in *@nomem when @nomem_ok (it changed
 * nothing: verify() checks that). Return: 0, or the error to report.
 */
static int round_result(u64 *state, u64 i, u64 v, bool del, int ret,
			bool nomem_ok, unsigned int *nomem)
{
	if (del && !state[i] && ret == -ENOENT)
		return 0;
	if (ret == -ENOMEM && nomem_ok) {
		(*nomem)++;
		return 0;
	}
	if (!ret)
		state[i] = del ? 0 : v + 1;
	return ret;
}

#define AS_ROUNDS	6

/*
 * Retirees abandoned for want of memory, and whether ccl's log abandoned
 * one: pool objects, which the next attach's trace finds (core/epoch.c,
 * core/wal.c). Never a DRAM object, whose memory would be lost (the
 * harness counts those as leaks): ccl, the one engine that retires DRAM
 * through an epoch, makes room first (pmidx_epoch_room()), and so its
 * epoch, whose other retirees come outside sections, abandons nothing.
 * Every section that retires pool objects asks for room too: the pool's
 * epoch abandons nothing either.
 */
static long as_abandoned(struct kv_index *x, bool *wal)
{
	long lost = atomic_long_read(&x->pool->epoch.abandoned);

	*wal = false;
	if (x->idx->ops == &pmidx_ccl_ops) {
		struct ccl_tree *t = x->idx->priv;

		UT_EQ(atomic_long_read(&t->epoch.abandoned), 0);
		*wal = READ_ONCE(t->wal->abandoned);
	}
	UT_EQ(lost, 0);
	return lost;
}

/*
 * Every allocation that may not sleep fails (shim_fail_atomic()), the
 * engine's helpers included. A write that may sleep must still succeed:
 * whatever an engine allocates in a section it must get elsewhere
 * (reserves, stashes, or leaving the section to allocate), and a DRAM
 * shortage is never the pool's -ENOSPC. A no-wait write may refuse
 * (-EAGAIN), having changed nothing. Rounds of inserts, updates, deletes
 * and re-inserts grow every structure (splits, log chunks, arrays) with
 * atomic memory gone; then the state is verified, and the drop leaves
 * nothing behind.
 */
static void engine_atomic_short(void)
{
	const char *why = NULL;
	u32 e;

	for (e = 1; e < __PMIDX_ENGINE_MAX; e++) {
		unsigned int r, refused = 0;
		struct pmidx_index *idx;
		struct kv_index x;
		bool del, nowait, wal;
		u64 i, v, left;
		long lost;
		int ret;

		if (!ekv_engine_available(e))
			continue;
		kv_index_new(&x, e);
		idx = x.idx;
		shim_fail_atomic(true);
		for (r = 0; r < AS_ROUNDS; r++) {
			nowait = r == AS_ROUNDS - 1;
			for (i = 0; i < NKEYS; i++) {
				del = r == 3 && i % 3 == 0;
				v = (u64)r * NKEYS + i;
				ret = del ? kv_del_flags(idx, i, nowait ? PMIDX_WRITE_NOWAIT : 0) :
					    kv_put_flags(idx, i, v, nowait ? PMIDX_WRITE_NOWAIT : 0);
				if (nowait && ret == -EAGAIN) {
					refused++;
					ret = del ? kv_del(idx, i) : kv_put(idx, i, v);
				}
				ret = round_result(x.state, i, v, del, ret, false,
						   NULL);
				UT_ASSERT_MSG(!ret, "%s: round %u: %s %llu: %d",
					      idx->ops->name, r, del ? "delete" : "put",
					      (unsigned long long)i, ret);
			}
		}
		UT_ASSERT(shim_fail_alloc_fired());
		shim_fail_atomic(false);
		lost = as_abandoned(&x, &wal);
		verify(idx, x.state, "after writes without atomic memory");
		UT_EQ(pmidx_index_drop(x.pool, "kv", &why), 0);
		/*
		 * What was abandoned is still allocated: the detach is not
		 * clean, and the next attach's trace frees it.
		 */
		left = ut_stat(x.pool, PMIDX_STAT_ALLOC_OBJECTS);
		UT_EQ(!!left, lost || wal);
		pmidx_pool_close(x.pool);
		x.pool = ut_pool_open(x.img, SZ);
		UT_EQ(!!(x.pool->flags & PMIDX_POOL_F_RECOVERED), !!left);
		UT_EQ(ut_stat(x.pool, PMIDX_STAT_ALLOC_OBJECTS), 0);
		pmidx_pool_close(x.pool);
		x.pool = NULL;
		kv_index_free(&x);
		ut_note("engine %s: %u writes without atomic memory, %u no-wait "
			"refused, %llu pool objects abandoned", pmidx_engine_name(e),
			AS_ROUNDS * NKEYS, refused, (unsigned long long)left);
	}
}

/*
 * The same with writers on every thread, each on its own keys: the
 * fallbacks (reserves, stashes, spares) are shared, and a writer may use
 * up, or fill, what another made ready. b3 notes a missing lock-table
 * leaf in one word that another writer's fill may clear meanwhile.
 */
struct as_thread {
	struct pmidx_index	*idx;
	u64			*state;
	unsigned int		id, n;
	int			err;
};

static void *as_writer(void *arg)
{
	struct as_thread *a = arg;
	unsigned int r;
	u64 i, v;
	bool del;
	int ret;

	for (r = 0; r < 3 && !a->err; r++) {
		for (i = a->id; i < NKEYS && !a->err; i += a->n) {
			del = r == 2 && i % 3 == 0;
			v = (u64)r * NKEYS + i;
			ret = del ? kv_del(a->idx, i) : kv_put(a->idx, i, v);
			a->err = round_result(a->state, i, v, del, ret, false,
					      NULL);
		}
	}
	return NULL;
}

static void engine_atomic_short_threads(void)
{
	u32 e;

	for (e = 1; e < __PMIDX_ENGINE_MAX; e++) {
		struct as_thread args[8];
		pthread_t th[8];
		unsigned int i, n = min(ut_threads, 8U);
		struct pmidx_index *idx;
		struct kv_index x;
		long lost;
		bool wal;

		if (!ekv_engine_available(e))
			continue;
		kv_index_new(&x, e);
		idx = x.idx;
		shim_fail_atomic(true);
		for (i = 0; i < n; i++) {
			args[i] = (struct as_thread){ .idx = idx, .state = x.state,
						      .id = i, .n = n };
			UT_EQ(pthread_create(&th[i], NULL, as_writer, &args[i]), 0);
		}
		for (i = 0; i < n; i++) {
			pthread_join(th[i], NULL);
			UT_ASSERT_MSG(!args[i].err, "%s: thread %u: %d",
				      idx->ops->name, i, args[i].err);
		}
		shim_fail_atomic(false);
		lost = as_abandoned(&x, &wal);
		verify(idx, x.state, "after threads without atomic memory");
		kv_index_free(&x);
		ut_note("engine %s: %u threads wrote without atomic memory, "
			"%ld pool objects abandoned%s", pmidx_engine_name(e), n,
			lost, wal ? ", and by the log" : "");
	}
}

/* ---- keys that share their first bytes ------------------------------------ */

#define SHARED_KEYS	2000

/*
 * Key @i of a set whose keys all share a 13-byte head, then a number, then
 * 0-2 zero bytes: a key is a proper prefix of the next one or two, and
 * ccl's inner nodes, which route by the first 8 bytes, tie on every
 * separator and must fall back on the fences.
 */
static u32 shared_key(u64 i, u8 *k)
{
	static const char head[] = "pmidx-shared-";
	u32 len = sizeof(head) - 1;
	__be16 n = cpu_to_be16(i / 3);

	memcpy(k, head, len);
	memcpy(k + len, &n, sizeof(n));
	len += sizeof(n);
	memset(k + len, 0, i % 3);
	return len + i % 3;
}

/* Every engine: put, get, delete and scan in order over keys that tie. */
static void engine_shared_prefix(void)
{
	u32 e;

	for (e = 1; e < __PMIDX_ENGINE_MAX; e++) {
		struct ekv_counter c = { .sink.emit = ekv_count_emit };
		struct pmidx_pool *pool;
		struct pmidx_index *idx;
		const char *why = NULL;
		u64 i, j, live, keys;
		u8 k[32], v[8];
		u32 kl, vl;
		void *img;

		if (!ekv_engine_available(e))
			continue;
		img = ut_img_alloc(SZ);
		pool = ut_pool_new(img, SZ);
		UT_EQ(pmidx_index_create(pool, "tie", e, &idx, &why), 0);
		/* a stride coprime with the count: every key, in no order */
		for (i = 0, j = 0; i < SHARED_KEYS; i++, j = (j + 769) % SHARED_KEYS) {
			kl = shared_key(j, k);
			UT_EQ(idx->ops->put(idx, k, kl, (u8 *)&j, sizeof(j), 0), 0);
		}
		for (i = 0; i < SHARED_KEYS; i += 3) {
			kl = shared_key(i, k);
			UT_EQ(idx->ops->del(idx, k, kl, 0), 0);
		}
		for (i = 0, live = 0; i < SHARED_KEYS; i++) {
			int ret;

			kl = shared_key(i, k);
			vl = sizeof(v);
			ret = idx->ops->get(idx, k, kl, v, &vl);
			if (i % 3 == 0) {
				UT_ASSERT_MSG(ret == -ENOENT, "%s: deleted key %llu: %d",
					      idx->ops->name,
					      (unsigned long long)i, ret);
				continue;
			}
			live++;
			UT_ASSERT_MSG(!ret && vl == sizeof(i) && !memcmp(v, &i, vl),
				      "%s: key %llu: %d", idx->ops->name,
				      (unsigned long long)i, ret);
		}
		UT_EQ(idx->ops->scan(idx, NULL, 0, false, NULL, 0, &c.sink), 0);
		UT_EQ(c.n, live);
		UT_ASSERT_MSG(!c.bad, "%s: scan out of order", idx->ops->name);
		if (idx->ops->check) {
			UT_ASSERT_MSG(!idx->ops->check(idx, &keys, &why),
				      "%s: check: %s", idx->ops->name, why);
			UT_EQ(keys, live);
		}
		UT_EQ(pmidx_index_drop(pool, "tie", &why), 0);
		pmidx_pool_close(pool);
		ut_img_free(img, SZ);
		ut_note("engine %s: %u keys sharing 13 bytes through put/delete/get/scan",
			pmidx_engine_name(e), SHARED_KEYS);
	}
}

/* ---- a full pool ----------------------------------------------------------- */

#ifndef __has_feature
#define __has_feature(x)	0
#endif

#define FULL_SZ		(16ULL << 20)
#define FULL_MAX	2000000

/* An 8-byte key per number, so that the pool fills with records, not blobs. */
static int full_put(struct pmidx_index *idx, u64 i)
{
	__be64 k = cpu_to_be64(i);

	return idx->ops->put(idx, (u8 *)&k, sizeof(k), (u8 *)&k, sizeof(k), 0);
}

static int full_del(struct pmidx_index *idx, u64 i)
{
	__be64 k = cpu_to_be64(i);

	return idx->ops->del(idx, (u8 *)&k, sizeof(k), 0);
}

/*
 * Every engine: put until -ENOSPC, then delete every key. A user must be
 * able to free space on a full pool, so each delete succeeds (a write
 * that needs space, a log record or a page copy, finds it: b3's reserve
 * page, lodge's full drain, ccl's collection that flushes the buffer
 * nodes it has no log chunk to copy). Then the index is empty, CHECK
 * passes and it takes puts again.
 */
static void engine_full_pool(void)
{
	u32 e;

#ifdef SHIM_TSAN
	/* one thread, minutes under TSan: the plain and ASan builds run it */
	ut_note("engine_full_pool: single-threaded, not run under TSan");
	return;
#endif
	for (e = 1; e < __PMIDX_ENGINE_MAX; e++) {
		struct pmidx_pool *pool;
		struct pmidx_index *idx;
		const char *why = NULL;
		u64 i, n, keys = 1;
		int ret = 0;
		void *img;

		if (!ekv_engine_available(e))
			continue;
		img = ut_img_alloc(FULL_SZ);
		pool = ut_pool_new(img, FULL_SZ);
		UT_ASSERT_MSG(!pmidx_index_create(pool, "full", e, &idx, &why),
			      "%s: create: %s", pmidx_engine_name(e), why);
		for (n = 0; n < FULL_MAX && !(ret = full_put(idx, n)); n++)
			;
		UT_ASSERT_MSG(ret == -ENOSPC, "%s: put %llu: %d (want -ENOSPC)",
			      idx->ops->name, (unsigned long long)n, ret);
		for (i = 0; i < n; i++) {
			ret = full_del(idx, i);
			UT_ASSERT_MSG(!ret, "%s: full pool, %llu keys: delete %llu: %d",
				      idx->ops->name, (unsigned long long)n,
				      (unsigned long long)i, ret);
		}
		UT_EQ(full_del(idx, 0), -ENOENT);
		UT_ASSERT_MSG(!idx->ops->check(idx, &keys, &why) && !keys,
			      "%s: check after the deletes: %s, %llu keys",
			      idx->ops->name, why ?: "ok", (unsigned long long)keys);
		for (i = 0; i < n / 2; i++) {
			ret = full_put(idx, i);
			UT_ASSERT_MSG(!ret, "%s: emptied pool: put %llu of %llu: %d",
				      idx->ops->name, (unsigned long long)i,
				      (unsigned long long)n / 2, ret);
		}
		UT_EQ(pmidx_index_drop(pool, "full", &why), 0);
		pmidx_pool_close(pool);
		ut_img_free(img, FULL_SZ);
		ut_note("engine %s: %llu keys filled a 16 MiB pool; all deleted, half put back",
			pmidx_engine_name(e), (unsigned long long)n);
	}
}

/* ---- crash simulation with key/value operations -------------------------------- */

struct kv_arg {
	u32	engine;
	u64	seed;
	u32	ops;
};

static int kv_workload(struct crashsim *cs, void *img, u64 size, void *arg)
{
	struct kv_arg *a = arg;
	bool has_nowait = pmidx_engine_ops(a->engine)->flags &
			  PMIDX_ENGINE_F_NOWAIT;
	struct pmidx_pool *pool;
	struct pmidx_index *idx;
	const char *why = NULL;
	struct rnd_state rs;
	unsigned int op, i;
	int ret;

	prandom_seed_state(&rs, a->seed);
	if (pmidx_pool_format(img, size, true, &why))
		return -EIO;
	pool = pmidx_pool_open(img, size, false, &why);
	if (IS_ERR(pool))
		return PTR_ERR(pool);
	op = crashsim_op_begin(cs, CRASHSIM_OP_NOTE, "create", NULL, 0, 0);
	if (pmidx_index_create(pool, "kv", a->engine, &idx, &why))
		return -EIO;
	crashsim_op_ack(cs, op);
	for (i = 0; i < a->ops; i++) {
		u64 k = prandom_u32_state(&rs) % 64, v = prandom_u32_state(&rs);
		u8 key[64];
		u32 kl = ekv_hkey(k, key);
		bool del = prandom_u32_state(&rs) % 4 == 0;

		op = crashsim_op_begin(cs, del ? CRASHSIM_OP_DEL : CRASHSIM_OP_PUT,
				       "kv", key, kl, v);
		/*
		 * every other write no-wait first, as io_uring issues it: a
		 * crash inside a refused attempt (and what it flushed before
		 * refusing) is checked as well
		 */
		ret = -EAGAIN;
		if (i % 2 && has_nowait)
			ret = del ? kv_del_flags(idx, k, PMIDX_WRITE_NOWAIT) :
				    kv_put_flags(idx, k, v, PMIDX_WRITE_NOWAIT);
		if (ret == -EAGAIN)
			ret = del ? kv_del(idx, k) : kv_put(idx, k, v);
		if (ret && !(del && ret == -ENOENT))
			return ret;
		crashsim_op_ack(cs, op);
		if (i == a->ops / 2) {		/* detach and attach half way */
			pmidx_pool_close(pool);
			pool = pmidx_pool_open(img, size, false, &why);
			if (IS_ERR(pool))
				return PTR_ERR(pool);
			idx = pmidx_index_lookup(pool, "kv");
			if (!idx || !idx->opened)
				return -EIO;
		}
	}
	pmidx_pool_close(pool);
	return 0;
}

static int kv_check(struct crashsim *cs, const struct crashsim_point *pt,
		    struct pmidx_pool *pool, int err, const char *why, void *arg)
{
	struct pmidx_index *idx;
	struct crashsim_expect e;
	u64 k, keys;

	if (!pool) {
		if (!crashsim_note_acked(cs, "create") && (err == -EINVAL || err == -EUCLEAN))
			return 0;
		crashsim_fail(cs, "attach failed: %d (%s)", err, why);
		return -1;
	}
	idx = pmidx_index_lookup(pool, "kv");
	if (!idx) {
		if (crashsim_note_acked(cs, "create"))
			crashsim_fail(cs, "acknowledged index lost");
		return 0;
	}
	if (!idx->opened) {
		crashsim_fail(cs, "index not opened");
		return -1;
	}
	for (k = 0; k < 64; k++) {
		u8 key[64], b[256];
		u32 kl = ekv_hkey(k, key), vl = sizeof(b);
		int ret = idx->ops->get(idx, key, kl, b, &vl);
		bool present = !ret;
		u64 v = 0;
		unsigned int a;

		if (ret && ret != -ENOENT) {
			crashsim_fail(cs, "key %llu: get %d", (unsigned long long)k, ret);
			continue;
		}
		crashsim_expect(cs, key, kl, &e);
		/* find the expected value this one decodes as */
		for (a = 0; present && a < e.n; a++)
			if (e.present[a] && val_is(b, vl, e.value[a]))
				v = e.value[a];
		if (!crashsim_expect_ok(&e, present, v))
			crashsim_fail(cs, "key %llu: %s, expected %s (of %u outcomes)",
				      (unsigned long long)k,
				      present ? "present with another value" : "absent",
				      e.present[0] ? "present" : "absent", e.n);
	}
	if (idx->ops->check && idx->ops->check(idx, &keys, &why))
		crashsim_fail(cs, "engine check: %s", why);
	crashsim_check_pool(cs, pool, -1);
	return 0;
}

static void engine_crash_kv(void)
{
	u32 e;

	for (e = 1; e < __PMIDX_ENGINE_MAX; e++) {
		struct kv_arg arg = { .engine = e, .seed = ut_seed, .ops = 120 };
		struct crashsim_workload wl = {
			.name = pmidx_engine_name(e), .run = kv_workload,
			.check = kv_check, .arg = &arg,
		};
		struct crashsim_config cfg = {
			.seed = ut_seed, .variants = 1, .samples = 250,
			.exhaustive_max = 250, .only_point = -1, .only_variant = -1,
			.save_dir = getenv("PMIDX_CRASH_SAVE"),
			.prefix = crashsim_prefix_default(),
		};
		struct crashsim_result res;

		if (!ekv_engine_available(e))
			continue;
		verify_for(e);
		UT_EQ(crashsim_run(&cfg, &wl, &res), 0);
		pmidx_recovery_verify = false;
		crashsim_print_result(wl.name, &cfg, &res);
		/* the other engines still run */
		if (res.failures)
			ut_fail(__FILE__, __LINE__, false, "%s: %llu failing crash images",
				wl.name, (unsigned long long)res.failures);
		/* a clean detach leaves only what pmidx_lose_ok() declared */
		if (res.unflushed_at_end)
			ut_fail(__FILE__, __LINE__, false,
				"%s: %llu lines written but never made durable",
				wl.name, (unsigned long long)res.unflushed_at_end);
	}
}

/* ---- uTree: corrupt clean images (found by fuzz-engines) ------------------ */

#define UTC_KEYS	200

/* Where the words to corrupt lie, found while attached. */
struct utc_map {
	u64	root;
	u64	node[UTC_KEYS];
	u64	second, third;		/* the 2nd and 3rd list nodes */
	u8	second_key[64];
	u32	second_len;
};

static u64 utc_node(struct utree *t, u64 i)
{
	struct ut_skey k;
	u8 key[64];
	u64 node;

	ut_skey_init(&k, key, ekv_hkey(i, key));
	pmidx_epoch_enter(&t->pool->epoch);
	node = ut_tree_get(t, &k);
	pmidx_epoch_exit(&t->pool->epoch);
	return node;
}

static __le64 *utc_word(void *img, u64 off)
{
	return (__le64 *)((u8 *)img + off);
}

static struct ut_lnode *utc_lnode(void *img, u64 off)
{
	return (struct ut_lnode *)((u8 *)img + off);
}

/* A clean image of one uTree index "kv" with keys 0..UTC_KEYS-1 = i. */
static void *utc_image(struct utc_map *m)
{
	void *img = ut_img_alloc(SZ);
	struct pmidx_pool *pool = ut_pool_new(img, SZ);
	struct pmidx_index *idx;
	const char *why = NULL;
	const u8 *key;
	struct utree *t;
	u64 i, head;

	UT_ASSERT_MSG(!pmidx_index_create(pool, "kv", PMIDX_ENGINE_UTREE, &idx, &why),
		      "create: %s", why);
	for (i = 0; i < UTC_KEYS; i++)
		UT_EQ(kv_put(idx, i, i), 0);
	t = idx->priv;
	m->root = idx->root;
	for (i = 0; i < UTC_KEYS; i++)
		UT_ASSERT((m->node[i] = utc_node(t, i)) != 0);
	head = ut_w_ptr(le64_to_cpu(t->root->head));
	m->second = ut_w_ptr(le64_to_cpu(ut_node(t, head)->next));
	m->third = ut_w_ptr(le64_to_cpu(ut_node(t, m->second)->next));
	UT_ASSERT(m->second && m->third);
	key = ut_node_key(t, ut_node(t, m->second), &m->second_len);
	UT_ASSERT(key && m->second_len <= sizeof(m->second_key));
	memcpy(m->second_key, key, m->second_len);
	pmidx_pool_close(pool);
	return img;
}

static struct pmidx_index *utc_open(void *img, struct pmidx_pool **pool)
{
	struct pmidx_index *idx;

	*pool = ut_pool_open(img, SZ);
	idx = pmidx_index_lookup(*pool, "kv");
	UT_ASSERT(idx && idx->opened);
	return idx;
}

static const char *utc_check(struct pmidx_index *idx)
{
	const char *why = NULL;
	u64 keys;

	return idx->ops->check(idx, &keys, &why) ? why : NULL;
}

#define SST_KEYS	20000

static int sst_put(struct pmidx_index *idx, u64 i)
{
	__be64 k = cpu_to_be64(i);

	return idx->ops->put(idx, (const u8 *)&k, sizeof(k), (const u8 *)&i,
			     sizeof(i), 0);
}

/* Keys 0..@n-1 (sst_put()), each with its value, and nothing else. */
static void sst_verify(struct pmidx_index *idx, u64 n)
{
	const char *why = NULL;
	u64 i, v, keys;
	__be64 k;
	u32 vl;

	for (i = 0; i < n; i++) {
		k = cpu_to_be64(i);
		vl = sizeof(v);
		UT_EQ(idx->ops->get(idx, (const u8 *)&k, sizeof(k), (u8 *)&v, &vl), 0);
		UT_EQ(v, i);
	}
	UT_ASSERT_MSG(!idx->ops->check(idx, &keys, &why), "check: %s", why);
	UT_EQ(keys, n);
}

/*
 * A split runs inside the put's section and allocates atomically; when
 * that fails it takes a block of the kind it needs (leaf, inner node,
 * separator) from the split stash. Ascending inserts split a leaf every
 * 32 and an inner node every 32 leaves; failing a random one of the 1st
 * to 4th allocations of each put reaches every kind. The failure also
 * meets list-node chunk growth, whose DRAM side the put then reserves
 * where it may sleep, or takes from that reserve: a DRAM shortage is
 * never the pool's -ENOSPC. Every insert must be acknowledged and
 * found, the tree must check, and each block must go back to its own
 * cache (the shim WARNs otherwise) without a leak.
 */
static void utree_split_stash(void)
{
	unsigned int taken[UT_MEM_KINDS] = { 0 }, kind;
	void *img = ut_img_alloc(SZ);
	struct rnd_state rs;
	struct pmidx_pool *pool = ut_pool_new(img, SZ);
	struct pmidx_index *idx;
	const char *why = NULL;
	struct utree *t;
	u64 i;

	UT_ASSERT_MSG(!pmidx_index_create(pool, "kv", PMIDX_ENGINE_UTREE, &idx, &why),
		      "create: %s", why);
	t = idx->priv;
	prandom_seed_state(&rs, ut_seed);
	for (i = 0; i < SST_KEYS; i++) {
		UT_EQ(ut_tree_reserve(t), 0);
		shim_fail_alloc_nth(1 + prandom_u32_state(&rs) % 4);
		UT_EQ(sst_put(idx, i), 0);
		shim_fail_alloc_nth(0);
		for (kind = 0; kind < UT_MEM_KINDS; kind++)
			taken[kind] += t->tree.nstash[kind] < UT_STASH_MAX;
	}
	ut_note("stash blocks taken: %u leaves, %u inner nodes, %u separators",
		taken[UT_MEM_LEAF], taken[UT_MEM_INNER], taken[UT_MEM_KEY]);
	for (kind = 0; kind < UT_MEM_KINDS; kind++)
		UT_ASSERT(taken[kind]);
	sst_verify(idx, SST_KEYS);
	pmidx_pool_close(pool);
	ut_img_free(img, SZ);
}

/*
 * Key 0: inline key and value; 1 and 6: 100-byte values (blobs); 3: a
 * 40-byte key (blob). Each case must give a clear refusal or a CHECK
 * failure, never a hang, a misaligned read or a foreign free.
 */
static void utree_corrupt_clean(void)
{
	struct ekv_counter c = { .sink.emit = ekv_count_emit };
	struct pmidx_pool *pool;
	struct pmidx_index *idx;
	struct ut_lnode *n;
	const char *why;
	struct utc_map m;
	void *clean, *img;
	u64 v, w, kw;
	bool ok;

	if (!ekv_engine_available(PMIDX_ENGINE_UTREE))
		return;
	clean = utc_image(&m);

	/* utree-clean-head-foreign: the head names a value blob */
	img = ut_img_dup(clean, SZ);
	*utc_word(img, m.root + offsetof(struct ut_root, head)) =
		utc_lnode(img, m.node[6])->val;
	UT_EQ(ut_pool_open_err(img, SZ, &why), -EUCLEAN);
	ut_img_free(img, SZ);

	/*
	 * An odd Version on a clean image: an update whose release was never
	 * written back (ut_ver_release()). The open clears it, for good.
	 */
	img = ut_img_dup(clean, SZ);
	n = utc_lnode(img, m.node[0]);
	n->next = cpu_to_le64(le64_to_cpu(n->next) ^ UT_VER_ONE);
	idx = utc_open(img, &pool);
	UT_ASSERT(!ut_w_odd(le64_to_cpu(n->next)));
	UT_ASSERT(!utc_check(idx));
	v = 0;
	UT_EQ(kv_get(idx, 0, &v, &ok), 0);
	UT_ASSERT(ok);
	UT_EQ(kv_put(idx, 0, 5), 0);
	pmidx_pool_close(pool);
	idx = utc_open(img, &pool);
	v = 5;
	UT_EQ(kv_get(idx, 0, &v, &ok), 0);
	UT_ASSERT(ok);
	pmidx_pool_close(pool);
	ut_img_free(img, SZ);

	/* utree-clean-node-odd-version, made while attached: give up */
	img = ut_img_dup(clean, SZ);
	idx = utc_open(img, &pool);
	n = utc_lnode(img, m.node[0]);
	n->next = cpu_to_le64(le64_to_cpu(n->next) ^ UT_VER_ONE);
	v = 0;
	UT_EQ(kv_get(idx, 0, &v, &ok), -EUCLEAN);
	UT_EQ(kv_put(idx, 0, 5), -EUCLEAN);
	UT_EQ(kv_del(idx, 0), -EUCLEAN);
	UT_EQ(idx->ops->scan(idx, NULL, 0, false, NULL, 0, &c.sink), -EUCLEAN);
	UT_ASSERT(utc_check(idx));
	pmidx_pool_close(pool);
	ut_img_free(img, SZ);

	/* a Deleted bit left on a node: the same */
	img = ut_img_dup(clean, SZ);
	n = utc_lnode(img, m.node[1]);
	n->next = cpu_to_le64(le64_to_cpu(n->next) | UT_NEXT_DEL);
	idx = utc_open(img, &pool);
	v = 1;
	UT_EQ(kv_get(idx, 1, &v, &ok), -EUCLEAN);
	UT_EQ(kv_put(idx, 1, 6), -EUCLEAN);
	UT_EQ(kv_del(idx, 1), -EUCLEAN);
	UT_ASSERT(utc_check(idx));
	pmidx_pool_close(pool);
	ut_img_free(img, SZ);

	/* a next word skipping a node: its delete finds no predecessor */
	img = ut_img_dup(clean, SZ);
	n = utc_lnode(img, ut_w_ptr(le64_to_cpu(*utc_word(img, m.root +
				offsetof(struct ut_root, head)))));
	n->next = cpu_to_le64(m.third);
	idx = utc_open(img, &pool);
	UT_EQ(idx->ops->del(idx, m.second_key, m.second_len, 0), -EUCLEAN);
	UT_ASSERT(utc_check(idx));
	pmidx_pool_close(pool);
	ut_img_free(img, SZ);

	/* utree-clean-node-key-misaligned: key blob word + 1, resealed */
	img = ut_img_dup(clean, SZ);
	n = utc_lnode(img, m.node[3]);
	kw = le64_to_cpu(n->key) + 1;
	n->key = cpu_to_le64(kw);
	n->check = cpu_to_le32(ut_node_check(m.node[3], kw, le32_to_cpu(n->meta)));
	UT_EQ(ut_pool_open_err(img, SZ, &why), -EUCLEAN);
	ut_img_free(img, SZ);

	/* utree-clean-image-foreign: the image pointer names a value blob */
	img = ut_img_dup(clean, SZ);
	w = le64_to_cpu(utc_lnode(img, m.node[6])->val);
	*utc_word(img, m.root + offsetof(struct ut_root, image)) = cpu_to_le64(w);
	idx = utc_open(img, &pool);
	UT_ASSERT_MSG(!utc_check(idx), "check: %s", utc_check(idx));
	pmidx_pool_close(pool);
	idx = utc_open(img, &pool);
	UT_EQ(le64_to_cpu(utc_lnode(img, m.node[6])->val), w);
	v = 6;
	ok = false;
	UT_EQ(kv_get(idx, 6, &v, &ok), 0);
	UT_ASSERT(ok);
	UT_ASSERT_MSG(!utc_check(idx), "check: %s", utc_check(idx));
	pmidx_pool_close(pool);
	ut_img_free(img, SZ);

	/*
	 * utree-clean-value-blob-shared: key 1's value word names key 6's.
	 * The image's nodes claim their blobs, so the clean attach refuses
	 * it as a trace would.
	 */
	img = ut_img_dup(clean, SZ);
	utc_lnode(img, m.node[1])->val = utc_lnode(img, m.node[6])->val;
	UT_EQ(ut_pool_open_err(img, SZ, &why), -EUCLEAN);
	UT_ASSERT_MSG(why && strstr(why, "recovery"), "why: %s", why ? why : "none");
	ut_img_free(img, SZ);

	ut_img_free(clean, SZ);
	ut_note("uTree: corrupt clean images refused or caught by the check");
}

/* ---- b3: a child word naming a freed page (found by fuzz-engines) -------- */

#define B3C_KEYS	2000

/* key i: 8 bytes in the order of i (inline); value: 100 bytes (a blob) */
static int b3c_put(struct pmidx_index *idx, u64 i, u64 v)
{
	__be64 k = cpu_to_be64(i);
	u8 b[100];

	memset(b, (u8)v, sizeof(b));
	memcpy(b, &v, sizeof(v));
	return idx->ops->put(idx, (u8 *)&k, 8, b, sizeof(b), 0);
}

static int b3c_del(struct pmidx_index *idx, u64 i)
{
	__be64 k = cpu_to_be64(i);

	return idx->ops->del(idx, (u8 *)&k, 8, 0);
}

static int b3c_get_is(struct pmidx_index *idx, u64 i, u64 v)
{
	__be64 k = cpu_to_be64(i);
	u8 b[128];
	u32 len = sizeof(b);
	int ret = idx->ops->get(idx, (u8 *)&k, 8, b, &len);

	if (ret)
		return ret;
	return len == 100 && !memcmp(b, &v, sizeof(v)) ? 0 : -EINVAL;
}

/* The key of an inline key word, or of a low key */
static u64 b3c_num(const void *kw)
{
	__be64 k;

	memcpy(&k, kw, sizeof(k));
	return be64_to_cpu(k);
}

/* The child word a writer's descent to key @i takes to its leaf. */
static __le64 *b3c_word(struct b3 *t, struct b3_path *path, u64 i)
{
	__be64 k = cpu_to_be64(i);
	struct b3_key kk = { (u8 *)&k, 8 };

	if (b3_descend(t, &kk, 0, path) || path->bad >= 0)
		return NULL;
	return b3_ref_word(t, &path->lv[0].ref);
}

/* What the corrupt images patch, found while attached. */
struct b3c_map {
	u64	word;		/* a child word of the root page naming ... */
	u64	orig;		/* ... this leaf, live */
	u64	stale;		/* a leaf freed since, its header intact */
	u64	k1, k2;		/* keys of @stale: deleted since, and live */
	u64	freed_blob;	/* @k1's value blob, freed with it */
	u64	vw[2];		/* value words of @orig's nodes: <= 1 child, 2 */
	u64	kv[2];		/* their keys */
	__le64	ov[2];		/* and values */
	u64	live;		/* keys in the index */
};

/*
 * Keys 0..B3C_KEYS-1 (a root page over leaves), then the first keys of
 * the third leaf deleted in order: it goes under B3_MERGE_UNDER and is
 * redistributed with its neighbour (both pages freed); the deletes after
 * that take keys its stale copy still holds. A clean image.
 */
static void *b3c_image(struct b3c_map *m)
{
	void *img = ut_img_alloc(SZ);
	struct pmidx_pool *pool = ut_pool_new(img, SZ);
	struct pmidx_alloc *a = &pool->alloc;
	u64 child[B3_SLOTS + 1], lo, i, n, sib;
	struct b3_path *path = calloc(1, sizeof(*path));
	struct b3_page *top, *x, *p;
	struct pmidx_index *idx;
	const char *why = NULL;
	u8 sep[B3_SLOTS], slots[B3_SLOTS];
	bool *dead = calloc(B3C_KEYS, sizeof(*dead));
	int nc, c, cnt, j;
	__le64 *w1, *w2;
	struct b3 *t;

	UT_ASSERT_MSG(!pmidx_index_create(pool, "b3", PMIDX_ENGINE_B3, &idx, &why),
		      "create: %s", why);
	for (i = 0; i < B3C_KEYS; i++)
		UT_EQ(b3c_put(idx, i, i), 0);
	t = idx->priv;
	top = b3_pg(t, le64_to_cpu(t->root->top));
	UT_EQ(top->level, 1);
	nc = b3_inner_inorder(t, top, child, sep) + 1;
	UT_ASSERT(nc >= 4);
	x = b3_pg(t, child[2]);
	lo = b3c_num(x->low);
	cnt = b3_leaf_inorder(t, x, slots);
	UT_ASSERT(cnt > 40);
	for (i = lo; i < lo + cnt - 20; i++) {
		UT_EQ(b3c_del(idx, i), 0);
		dead[i] = true;
	}
	pmidx_epoch_barrier(&pool->epoch);
	m->live = B3C_KEYS - (cnt - 20);

	/* a freed leaf holding a key deleted since and a live one */
	m->stale = 0;
	for (c = 0; c < nc && !m->stale; c++) {
		x = b3_pg(t, child[c]);
		if (pmidx_alloc_media_committed(a, child[c]) ||
		    !b3_page_ok(t, child[c]) || x->level)
			continue;
		sib = le64_to_cpu(x->sibling);
		n = b3_leaf_inorder(t, x, slots);
		m->k1 = ~0ULL;
		w1 = NULL;
		for (j = 0; j < (int)n; j++) {
			i = b3c_num(&x->l[slots[j]].key);
			UT_ASSERT(i < B3C_KEYS);
			if (sib && i >= b3c_num(b3_pg(t, sib)->low))
				break;
			w2 = b3c_word(t, path, i);
			if (!w2)
				continue;
			if (m->k1 == ~0ULL && dead[i]) {
				m->k1 = i;
				m->freed_blob = le64_to_cpu(x->l[slots[j]].val);
				w1 = w2;
			} else if (w1 && w2 == w1 && !dead[i]) {
				m->k2 = i;
				m->stale = child[c];
				m->word = pmidx_off(t->pm, w1);
				m->orig = le64_to_cpu(*w1);
				break;
			}
		}
	}
	UT_ASSERT_MSG(m->stale, "no freed leaf with a deleted and a live key");
	UT_ASSERT(!pmidx_alloc_media_committed(a, m->freed_blob));
	UT_ASSERT(pmidx_alloc_media_committed(a, m->orig));

	/* the live leaf's nodes: one with at most one child, one with two */
	p = b3_pg(t, m->orig);
	n = b3_leaf_inorder(t, p, slots);
	m->vw[0] = m->vw[1] = 0;
	for (j = 0; j < (int)n; j++) {
		struct b3_lnode *nd = &p->l[slots[j]];
		bool two = nd->left && nd->right;

		if (!m->vw[two]) {
			m->vw[two] = pmidx_off(t->pm, &nd->val);
			m->kv[two] = b3c_num(&nd->key);
			m->ov[two] = nd->val;
		}
	}
	UT_ASSERT(m->vw[0] && m->vw[1]);
	free(path);
	free(dead);
	pmidx_pool_close(pool);
	return img;
}

static struct pmidx_index *b3c_open(void *img, struct pmidx_pool **pool)
{
	struct pmidx_index *idx;

	*pool = ut_pool_open(img, SZ);
	idx = pmidx_index_lookup(*pool, "b3");
	UT_ASSERT(idx && idx->opened);
	/* the index's reserve page, before the objects are counted */
	UT_EQ(b3c_del(idx, B3C_KEYS + 1), -ENOENT);
	return idx;
}

static u64 b3c_objects(struct pmidx_pool *pool)
{
	pmidx_epoch_barrier(&pool->epoch);
	return ut_stat(pool, PMIDX_STAT_ALLOC_OBJECTS);
}

static void b3c_check(struct pmidx_index *idx, u64 live)
{
	const char *why = NULL;
	u64 keys = 0;

	UT_ASSERT_MSG(!idx->ops->check(idx, &keys, &why), "check: %s", why);
	UT_EQ(keys, live);
}

/*
 * A clean attach reads no page. A child word of the root page naming a
 * freed leaf (header, owner and crc intact) used to be served, and the
 * first writes through it unlinked the blobs of the stale page's nodes:
 * freed ones (pmidx_free() WARNed) or the live copies' (another page
 * owns them). Writers refuse a page that is not committed (-EUCLEAN) and
 * every unlink checks what it unlinks: a value word naming a freed blob
 * is refused by a put, a delete and a delete's page copy alike. Nothing
 * is freed: with the word put back, CHECK passes.
 */
static void b3_corrupt_clean(void)
{
	struct pmidx_pool *pool;
	struct pmidx_index *idx;
	const char *why = NULL;
	struct b3c_map m = {};
	void *clean, *img;
	__be64 k;
	__le64 *w;
	u64 objs, v = 5;
	int i;

	if (!ekv_engine_available(PMIDX_ENGINE_B3))
		return;
	clean = b3c_image(&m);

	/* the word names the freed leaf: its keys' writers give up */
	img = ut_img_dup(clean, SZ);
	w = utc_word(img, m.word);
	*w = cpu_to_le64(m.stale);
	idx = b3c_open(img, &pool);
	objs = b3c_objects(pool);
	UT_EQ(b3c_del(idx, m.k1), -EUCLEAN);
	UT_EQ(b3c_del(idx, m.k2), -EUCLEAN);
	UT_EQ(b3c_put(idx, m.k1, 7), -EUCLEAN);
	UT_EQ(b3c_put(idx, m.k2, 7), -EUCLEAN);
	UT_EQ(b3c_objects(pool), objs);
	UT_EQ(idx->ops->check(idx, &objs, &why), -EUCLEAN);
	*w = cpu_to_le64(m.orig);
	b3c_check(idx, m.live);
	UT_EQ(b3c_get_is(idx, m.k2, m.k2), 0);
	UT_EQ(b3c_del(idx, m.k2), 0);
	b3c_check(idx, m.live - 1);
	pmidx_pool_close(pool);
	ut_img_free(img, SZ);

	/* value words of a live leaf naming a freed blob */
	img = ut_img_dup(clean, SZ);
	for (i = 0; i < 2; i++)
		*utc_word(img, m.vw[i]) = cpu_to_le64(m.freed_blob);
	idx = b3c_open(img, &pool);
	objs = b3c_objects(pool);
	UT_EQ(b3c_put(idx, m.kv[0], 9), -EUCLEAN);	/* in place */
	k = cpu_to_be64(m.kv[1]);
	UT_EQ(idx->ops->put(idx, (u8 *)&k, 8, (u8 *)&v, 8, 0), -EUCLEAN); /* a copy */
	UT_EQ(b3c_del(idx, m.kv[0]), -EUCLEAN);		/* one store */
	UT_EQ(b3c_del(idx, m.kv[1]), -EUCLEAN);		/* a page copy */
	UT_EQ(b3c_objects(pool), objs);
	UT_EQ(idx->ops->check(idx, &objs, &why), -EUCLEAN);
	UT_ASSERT_MSG(strstr(why, "blob not"), "check: %s", why);
	for (i = 0; i < 2; i++)
		*utc_word(img, m.vw[i]) = m.ov[i];
	b3c_check(idx, m.live);
	for (i = 0; i < 2; i++)
		UT_EQ(b3c_del(idx, m.kv[i]), 0);
	b3c_check(idx, m.live - 2);
	pmidx_pool_close(pool);
	ut_img_free(img, SZ);

	ut_img_free(clean, SZ);
	ut_note("b3: a word naming a freed page or blob: -EUCLEAN, nothing freed");
}

/* ---- scans while the keys of one leaf are updated and deleted ------------- */

/*
 * A dozen keys, so that they share a leaf or two (ccl: 14 slots, its
 * buffer node in front; flushes, splits and merges of that leaf all the
 * time): STABLE keys put once, the rest updated and deleted by two
 * writers (each owns every other churn key), while two scanners scan
 * with random bounds. Every scan must be strictly ascending and within
 * its bounds; a stable key in range appears with its value; a churn key
 * appears with its own value (key id in it), a version no older than
 * what was acknowledged when the scan began and no newer than what had
 * begun when it ended; a churn key acknowledged as put before the scan
 * and not written during it appears. Values are 8 bytes (inline in ccl)
 * or 24 (a blob), keys 8 or 12 bytes alike.
 */
#define SC_KEYS		12
#define SC_STABLE	4
#define SC_WRITERS	2
#define SC_SCANNERS	2

/* UT_CHECK() with a message: off the main thread, records only */
#define SC_CHECK(cond, fmt, ...) do {					\
	if (!(cond))							\
		ut_fail(__FILE__, __LINE__, false, "%s: " fmt, #cond,	\
			##__VA_ARGS__);					\
} while (0)
#define LD(x)		__atomic_load_n(&(x), __ATOMIC_SEQ_CST)
#define ST(x, v)	__atomic_store_n(&(x), (v), __ATOMIC_SEQ_CST)

struct sc_shared {
	struct pmidx_index	*idx;
	u64			acked[SC_KEYS];	/* ver << 1 | deleted */
	u64			begun[SC_KEYS];
	bool			stop;
	long			writes, scans, recs;
};

struct sc_arg {
	struct sc_shared	*sh;
	unsigned int		id;
};

static u32 sc_key(u8 *k, unsigned int i)
{
	memcpy(k, "Lk\0\0\0\0\0", 7);
	k[7] = i;
	memset(k + 8, 'x', 4);
	return i % 2 ? 12 : 8;
}

static u32 sc_val(u8 *v, unsigned int i, u64 ver)
{
	u64 w[3] = { (u64)i << 48 | ver, ver, i };

	memcpy(v, w, sizeof(w));
	return ver % 3 ? 8 : 24;
}

/* The key id and version a value holds, or false if it is not one. */
static bool sc_val_dec(const u8 *v, u32 len, unsigned int *i, u64 *ver)
{
	u64 w[3];

	if (len != 8 && len != 24)
		return false;
	memcpy(w, v, len);
	*i = w[0] >> 48;
	*ver = w[0] & ((1ULL << 48) - 1);
	return len == 8 || (w[1] == *ver && w[2] == *i);
}

static void *sc_writer(void *arg)
{
	struct sc_arg *a = arg;
	struct sc_shared *sh = a->sh;
	u64 ver[SC_KEYS] = { 0 }, s = a->id * 7919 + ut_seed;
	bool live[SC_KEYS] = { false };
	unsigned int i;
	u8 k[16], v[24];
	int ret;

	while (!LD(sh->stop)) {
		bool del;
		u32 kl;

		s = s * 6364136223846793005ULL + 1442695040888963407ULL;
		i = SC_STABLE + (s >> 33) % ((SC_KEYS - SC_STABLE) / SC_WRITERS) *
			SC_WRITERS + a->id;
		del = (s >> 20) % 4 == 0;
		kl = sc_key(k, i);
		ST(sh->begun[i], (ver[i] + 1) << 1 | del);
		if (del) {
			ret = sh->idx->ops->del(sh->idx, k, kl, 0);
			SC_CHECK(ret == (live[i] ? 0 : -ENOENT),
				     "%s: delete of key %u: %d", sh->idx->ops->name,
				     i, ret);
		} else {
			ret = sh->idx->ops->put(sh->idx, k, kl, v,
						sc_val(v, i, ver[i] + 1), 0);
			SC_CHECK(!ret, "%s: put of key %u: %d",
				     sh->idx->ops->name, i, ret);
		}
		ver[i]++;
		live[i] = !del;
		ST(sh->acked[i], ver[i] << 1 | del);
		__atomic_fetch_add(&sh->writes, 1, __ATOMIC_SEQ_CST);
	}
	return NULL;
}

struct sc_scan {
	struct pmidx_scan_sink	sink;
	const char		*name;
	u64			ver[SC_KEYS];	/* 0: not seen */
	int			last;
	const u8		*lo, *hi;
	u32			lol, hil;
	bool			after;
};

static int sc_emit(struct pmidx_scan_sink *sink, const u8 *key, u32 klen,
		   const u8 *val, u32 vlen)
{
	struct sc_scan *c = container_of(sink, struct sc_scan, sink);
	unsigned int i = klen >= 8 ? key[7] : SC_KEYS, vi = SC_KEYS;
	u8 want[16];
	u64 ver = 0;
	int cmp;

	if (i >= SC_KEYS || klen != sc_key(want, i) || memcmp(key, want, klen)) {
		SC_CHECK(false, "%s: scan returned a key never put",
			     c->name);
		return -EINVAL;
	}
	SC_CHECK((int)i > c->last, "%s: scan not ascending: key %u after %d",
		     c->name, i, c->last);
	cmp = c->lol ? pmidx_key_cmp(key, klen, c->lo, c->lol) : 1;
	SC_CHECK(cmp > 0 || (!cmp && !c->after),
		     "%s: scan returned key %u below its start", c->name, i);
	SC_CHECK(!c->hil || pmidx_key_cmp(key, klen, c->hi, c->hil) < 0,
		     "%s: scan returned key %u at or past its end", c->name, i);
	SC_CHECK(sc_val_dec(val, vlen, &vi, &ver) && vi == i && ver,
		     "%s: scan returned key %u with another key's value",
		     c->name, i);
	c->last = i;
	c->ver[i] = ver;
	return 0;
}

static void *sc_scanner(void *arg)
{
	struct sc_arg *a = arg;
	struct sc_shared *sh = a->sh;
	u64 s = a->id * 104729 + ut_seed + 1, a0[SC_KEYS], b1[SC_KEYS];
	u8 lo[16], hi[16];
	unsigned int i, l, h;
	int ret;

	while (!LD(sh->stop)) {
		struct sc_scan c = { .sink.emit = sc_emit,
				     .name = sh->idx->ops->name, .last = -1 };

		s = s * 6364136223846793005ULL + 1442695040888963407ULL;
		l = (s >> 33) % (SC_KEYS + 1);	/* SC_KEYS: unbounded */
		h = l + 1 + (s >> 40) % (SC_KEYS + 1 - l);
		if (l < SC_KEYS) {
			c.lol = sc_key(lo, l);
			c.lo = lo;
			c.after = (s >> 50) & 1;
		}
		if (h < SC_KEYS) {
			c.hil = sc_key(hi, h);
			c.hi = hi;
		}
		for (i = 0; i < SC_KEYS; i++)
			a0[i] = LD(sh->acked[i]);
		ret = sh->idx->ops->scan(sh->idx, c.lo, c.lol, c.after, c.hi,
					 c.hil, &c.sink);
		for (i = 0; i < SC_KEYS; i++)
			b1[i] = LD(sh->begun[i]);
		SC_CHECK(!ret, "%s: scan: %d", c.name, ret);
		for (i = 0; i < SC_KEYS; i++) {
			bool in = (!c.lol || i > l || (i == l && !c.after)) &&
				  (!c.hil || i < h);

			if (!in)
				continue;
			if (i < SC_STABLE) {
				SC_CHECK(c.ver[i] == 1,
					     "%s: stable key %u: version %llu",
					     c.name, i, (unsigned long long)c.ver[i]);
				continue;
			}
			if (!c.ver[i]) {
				SC_CHECK(!a0[i] || (a0[i] & 1) || b1[i] != a0[i],
					     "%s: key %u (untouched, live) missing",
					     c.name, i);
				continue;
			}
			SC_CHECK(c.ver[i] >= (a0[i] >> 1) &&
				     !(c.ver[i] == (a0[i] >> 1) && (a0[i] & 1)) &&
				     c.ver[i] <= (b1[i] >> 1),
				     "%s: key %u: version %llu, acknowledged %llx before, begun %llx after",
				     c.name, i, (unsigned long long)c.ver[i],
				     (unsigned long long)a0[i],
				     (unsigned long long)b1[i]);
			__atomic_fetch_add(&sh->recs, 1, __ATOMIC_SEQ_CST);
		}
		__atomic_fetch_add(&sh->scans, 1, __ATOMIC_SEQ_CST);
	}
	return NULL;
}

static void engine_scan_churn(void)
{
	struct sc_arg args[SC_WRITERS + SC_SCANNERS];
	pthread_t th[SC_WRITERS + SC_SCANNERS];
	struct timespec ts = { .tv_sec = 1 };
	u32 e;

	for (e = 1; e < __PMIDX_ENGINE_MAX; e++) {
		struct sc_shared *sh = calloc(1, sizeof(*sh));
		struct pmidx_pool *pool;
		const char *why = NULL;
		unsigned int i, n = 0;
		u8 k[16], v[24];
		u64 keys;
		void *img;

		if (!ekv_engine_available(e)) {
			free(sh);
			continue;
		}
		UT_ASSERT(sh);
		img = ut_img_alloc(SZ);
		pool = ut_pool_new(img, SZ);
		UT_ASSERT_MSG(!pmidx_index_create(pool, "sc", e, &sh->idx, &why),
			      "%s: create: %s", pmidx_engine_name(e), why);
		for (i = 0; i < SC_STABLE; i++)
			UT_EQ(sh->idx->ops->put(sh->idx, k, sc_key(k, i), v,
						sc_val(v, i, 1), 0), 0);
		for (i = 0; i < SC_WRITERS + SC_SCANNERS; i++) {
			args[i] = (struct sc_arg){ sh, i % SC_WRITERS };
			pthread_create(&th[n++], NULL,
				       i < SC_WRITERS ? sc_writer : sc_scanner,
				       &args[i]);
		}
		nanosleep(&ts, NULL);
		ST(sh->stop, true);
		for (i = 0; i < n; i++)
			pthread_join(th[i], NULL);
		UT_ASSERT_MSG(!sh->idx->ops->check(sh->idx, &keys, &why),
			      "%s: check: %s", pmidx_engine_name(e), why);
		ut_note("engine %s: %ld writes to %u keys, %ld scans (%ld churn records checked)",
			pmidx_engine_name(e), sh->writes, SC_KEYS, sh->scans,
			sh->recs);
		UT_ASSERT(sh->writes > 0 && sh->scans > 0);
		pmidx_pool_close(pool);
		ut_img_free(img, SZ);
		free(sh);
	}
}

/* ---- objects two indexes name (claims at a clean attach) ----------------- */

#define RC_KEYS		300
#define RC_VB		1000	/* index b's values: none equal to a's */

/*
 * A clean image with two indexes, "a" of engine @ea holding key i = i and
 * "b" of engine @eb holding key i = i + RC_VB (a 100-byte value, a blob,
 * when the value is 1 mod 5). The image attaches cleanly as it is; their
 * roots in @ra, @rb.
 */
static void *rc_image2(u32 ea, u32 eb, u64 *ra, u64 *rb)
{
	void *img = ut_img_alloc(SZ);
	struct pmidx_pool *pool = ut_pool_new(img, SZ);
	struct pmidx_index *a, *b;
	const char *why = NULL;
	u64 i;

	UT_ASSERT_MSG(!pmidx_index_create(pool, "a", ea, &a, &why) &&
		      !pmidx_index_create(pool, "b", eb, &b, &why),
		      "%s, %s: create: %s", pmidx_engine_name(ea),
		      pmidx_engine_name(eb), why);
	for (i = 0; i < RC_KEYS; i++) {
		UT_EQ(kv_put(a, i, i), 0);
		UT_EQ(kv_put(b, i, i + RC_VB), 0);
	}
	pmidx_pool_close(pool);
	pool = ut_pool_open(img, SZ);
	UT_ASSERT(!(pool->flags & PMIDX_POOL_F_RECOVERED));
	*ra = pmidx_index_lookup(pool, "a")->root;
	*rb = pmidx_index_lookup(pool, "b")->root;
	pmidx_pool_close(pool);
	return img;
}

static void *rc_image(u32 e, u64 *ra, u64 *rb)
{
	return rc_image2(e, e, ra, rb);
}

/* The clean attach of @img is refused: -EUCLEAN, or the attach's result. */
static int rc_refused(u32 e, void *img, const char *what)
{
	struct pmidx_pool *pool;
	const char *why = NULL;
	int ret;

	pool = pmidx_pool_open(img, SZ, false, &why);
	ret = IS_ERR(pool) ? PTR_ERR(pool) : 0;
	if (!ret)
		pmidx_pool_close(pool);
	UT_ASSERT_MSG(ret == -EUCLEAN, "%s: %s: clean attach %d (%s)",
		      pmidx_engine_name(e), what, ret, why ? why : "accepted");
	ut_note("engine %s: %s: clean attach refused (%s)",
		pmidx_engine_name(e), what, why);
	return ret;
}

/*
 * Index "b"'s root overwritten with "a"'s in a clean image (the ccl
 * finding of fuzz-engines): both name a's objects and would both write
 * them. A clean attach traces nothing: an owner word the attach checks
 * (utree's chunks, pfart's nodes) or a claim (core/alloc.c, "Claims") of
 * what it reads must refuse it, as a crash attach's trace would.
 */
static void engine_root_copied(void)
{
	u64 ra, rb;
	void *img;
	u32 e;

	for (e = 1; e < __PMIDX_ENGINE_MAX; e++) {
		if (!ekv_engine_available(e))
			continue;
		verify_for(e);
		img = rc_image(e, &ra, &rb);
		/* after the clean close: no close rewrites b's root */
		memcpy((u8 *)img + rb, (u8 *)img + ra, PMIDX_INDEX_ROOT_SIZE);
		rc_refused(e, img, "a root copied over another's");
		ut_img_free(img, SZ);
		pmidx_recovery_verify = false;
	}
}

/*
 * Make every word of @img naming @from, at a multiple of @align, name
 * @to: lodge's slot words are 8-byte aligned, pfart packs records at 2;
 * a value's bytes (ekv_hval(): v's two low bytes, then zeros) may spell
 * an offset, never at such a place. Stale copies in freed objects (a
 * leaf array grown by a copy) change too: nothing reads them.
 */
static void rc_rename(void *img, u64 from, u64 to, unsigned int align)
{
	__le64 w = cpu_to_le64(from), x = cpu_to_le64(to);
	u8 *p, *end = (u8 *)img + SZ;
	unsigned int n = 0;

	for (p = img; (p = memmem(p, end - p, &w, sizeof(w))); p++) {
		if ((p - (u8 *)img) % align)
			continue;
		memcpy(p, &x, sizeof(x));
		n++;
	}
	UT_ASSERT(n);
}

/* The blob holding value @v (ekv_hval()) in @img. */
static u64 rc_blob(void *img, u64 v)
{
	u8 want[sizeof(struct pmidx_blob) + 128];
	struct pmidx_blob *h = (struct pmidx_blob *)want;
	u32 len = ekv_hval(v, h->data);
	u8 *p;

	h->len = cpu_to_le32(len);
	h->len_check = cpu_to_le32(~len);
	p = memmem(img, SZ, want, sizeof(*h) + len);
	UT_ASSERT(p && len > 8);
	return p - (u8 *)img;
}

/*
 * One object named by two indexes through a word the root does not hold
 * and no owner word guards: utree's tracker table, a value blob of every
 * traced engine (the fuzz-engines findings
 * lodge-clean-blob-named-by-two-indexes and
 * utree-clean-value-names-another-index-blob: an open from utree's image
 * read no node before), and a utree value word naming a b3 blob, which
 * a traced engine cannot own. Each index alone is consistent and passes
 * its CHECK; only the claims see both, as the next trace would. b3 reads
 * no page at either attach (its crash attach marks nothing either): the
 * pool's checker finds a b3 word naming another index's blob.
 */
static void engine_named_twice(void)
{
	static const struct {
		u32		engine;
		unsigned int	align;
	} blobs[] = { { PMIDX_ENGINE_CCL, 8 }, { PMIDX_ENGINE_UTREE, 8 },
		       { PMIDX_ENGINE_LODGE, 8 }, { PMIDX_ENGINE_PFART, 2 } };
	unsigned int k;
	u64 ra, rb;
	void *img;
	u32 e;

	e = PMIDX_ENGINE_UTREE;
	if (ekv_engine_available(e)) {
		img = rc_image(e, &ra, &rb);
		memcpy((u8 *)img + rb + offsetof(struct ut_root, trackers),
		       (u8 *)img + ra + offsetof(struct ut_root, trackers), 8);
		rc_refused(e, img, "one tracker table, two roots");
		ut_img_free(img, SZ);
	}
	for (k = 0; k < ARRAY_SIZE(blobs); k++) {
		e = blobs[k].engine;
		if (!ekv_engine_available(e))
			continue;
		img = rc_image(e, &ra, &rb);
		/* b's key 1 names a's value blob of key 1 */
		rc_rename(img, rc_blob(img, 1 + RC_VB), rc_blob(img, 1),
			  blobs[k].align);
		rc_refused(e, img, "one value blob, two indexes");
		ut_img_free(img, SZ);
	}
	if (ekv_engine_available(PMIDX_ENGINE_UTREE) &&
	    ekv_engine_available(PMIDX_ENGINE_B3)) {
		img = rc_image2(PMIDX_ENGINE_UTREE, PMIDX_ENGINE_B3, &ra, &rb);
		rc_rename(img, rc_blob(img, 1), rc_blob(img, 1 + RC_VB), 8);
		rc_refused(PMIDX_ENGINE_UTREE, img, "a value word names a b3 blob");
		ut_img_free(img, SZ);
	}
}

/* ---- ccl: attach short of memory while it builds the inner levels ---------- */

#define CA_KEYS		12000
#define CA_TAIL		160

/*
 * A clean attach rebuilds ccl's DRAM inner levels over its buffer nodes
 * last (recovery.c, inner.c ccl_inner_build()): with CA_KEYS keys they
 * are three levels. Each of the attach's last CA_TAIL allocations fails
 * in turn: the attach answers -ENOMEM or, for an allocation it can do
 * without, succeeds; whatever it built is freed (the harness counts),
 * and the image attaches whole afterwards.
 */
static void ccl_attach_nomem(void)
{
	void *img = ut_img_alloc(SZ);
	struct pmidx_pool *pool = ut_pool_new(img, SZ);
	unsigned long calls, n, failed = 0;
	struct pmidx_index *idx;
	const char *why = NULL;
	u64 i;

	UT_EQ(pmidx_index_create(pool, "c", PMIDX_ENGINE_CCL, &idx, &why), 0);
	for (i = 0; i < CA_KEYS; i++)
		UT_EQ(sst_put(idx, (i * 7919) % CA_KEYS), 0);
	pmidx_pool_close(pool);
	calls = shim_alloc_calls();
	pool = ut_pool_open(img, SZ);
	calls = shim_alloc_calls() - calls;
	idx = pmidx_index_lookup(pool, "c");
	UT_ASSERT(idx && idx->opened);
	UT_ASSERT(atomic_read(&((struct ccl_tree *)idx->priv)->height) >= 3);
	pmidx_pool_close(pool);
	UT_ASSERT(calls > CA_TAIL);
	for (n = calls - CA_TAIL + 1; n <= calls; n++) {
		shim_fail_alloc_nth(n);
		pool = pmidx_pool_open(img, SZ, false, &why);
		shim_fail_alloc_nth(0);
		if (!IS_ERR(pool)) {
			pmidx_pool_close(pool);
			continue;
		}
		UT_ASSERT_MSG(PTR_ERR(pool) == -ENOMEM, "allocation %lu of %lu: %ld",
			      n, calls, PTR_ERR(pool));
		failed++;
	}
	UT_ASSERT(failed);
	pool = ut_pool_open(img, SZ);
	idx = pmidx_index_lookup(pool, "c");
	UT_ASSERT(idx && idx->opened);
	sst_verify(idx, CA_KEYS);
	pmidx_pool_close(pool);
	ut_img_free(img, SZ);
	ut_note("ccl: an attach of %u keys makes %lu allocations; the last %u "
		"failed in turn, %lu of them failing the attach", CA_KEYS, calls,
		CA_TAIL, failed);
}

/* ---- ccl: an overflow flushed with no room on the epoch list ----------------- */

#define OR_KEYS		6
#define OR_HOLD_MS	300

struct or_pin {
	struct pmidx_epoch	*e;
	atomic_t		pinned;
	int			cpu;	/* the CPU whose section it holds */
};

/* Hold a section of @e for OR_HOLD_MS: nothing retired meanwhile is freed. */
static void *or_pin_fn(void *arg)
{
	struct or_pin *p = arg;
	u64 until = ktime_get_ns() + OR_HOLD_MS * NSEC_PER_MSEC;

	pmidx_epoch_enter(p->e);
	p->cpu = raw_smp_processor_id();
	atomic_set_release(&p->pinned, 1);	/* @cpu, then @pinned */
	while (ktime_get_ns() < until)
		cpu_relax();
	pmidx_epoch_exit(p->e);
	return NULL;
}

static void or_free(void *ctx, u64 obj)
{
	atomic_inc(ctx);
	kfree((void *)(uintptr_t)obj);
}

/*
 * A write that drains a recovered overflow retires it (DRAM) in its
 * section. Here its CPU's epoch list is full of objects that another
 * thread's section keeps from being freed, and the list cannot grow (no
 * allocation succeeds): the write must back off (pmidx_epoch_room()) and
 * wait in a barrier for that section to end, not abandon the overflow.
 * It returns with the list's objects freed, nothing abandoned.
 */
static void ccl_overflow_room(void)
{
	unsigned int nbatch = ccl_nbatch, gc_ms = ccl_gc_interval_ms;
	void *img = ut_img_alloc(SZ), *crash, *objs[256];
	struct pmidx_pool *pool = ut_pool_new(img, SZ);
	struct or_pin pin = { 0 };
	unsigned int n = 0, ovf;
	struct pmidx_index *idx;
	const char *why = NULL;
	struct ccl_tree *t;
	atomic_t freed;
	pthread_t th;
	bool full;
	u64 i;

	/* buffered KVs beyond the slots of the attach below: an overflow */
	ccl_nbatch = 7;
	ccl_gc_interval_ms = 1000000;	/* no GC pass drains it first */
	UT_EQ(pmidx_index_create(pool, "c", PMIDX_ENGINE_CCL, &idx, &why), 0);
	for (i = 0; i < OR_KEYS; i++)
		UT_EQ(sst_put(idx, i), 0);
	crash = ut_img_dup(img, SZ);
	pmidx_pool_close(pool);
	ccl_nbatch = 1;
	pool = ut_pool_open(crash, SZ);
	idx = pmidx_index_lookup(pool, "c");
	UT_ASSERT(idx && idx->opened);
	t = idx->priv;
	ovf = atomic_read(&t->ovf_nodes);
	UT_ASSERT(ovf > 0);

	for (i = 0; i < ARRAY_SIZE(objs); i++)
		UT_ASSERT((objs[i] = kmalloc(32, GFP_KERNEL)));
	atomic_set(&freed, 0);
	pin.e = &t->epoch;
	UT_EQ(pthread_create(&th, NULL, or_pin_fn, &pin), 0);
	while (!atomic_read_acquire(&pin.pinned))
		cpu_relax();
	/* its section holds back the epochs, not this CPU's list */
	UT_ASSERT(pin.cpu != raw_smp_processor_id());
	/* fill this thread's CPU's list; with every allocation failing */
	shim_fail_all(true);
	for (;;) {
		pmidx_epoch_enter(&t->epoch);
		full = !pmidx_epoch_room(&t->epoch, 1);
		pmidx_epoch_exit(&t->epoch);
		if (full)
			break;
		UT_ASSERT(n < ARRAY_SIZE(objs));
		pmidx_epoch_retire_fn(&t->epoch, (u64)(uintptr_t)objs[n++],
				      or_free, &freed);
	}
	/* the grow worker those retires queued has failed too */
	flush_work(&t->epoch.grow_work);
	/* the write may sleep for memory, not grow the list atomically */
	shim_fail_all(false);
	shim_fail_atomic(true);
	UT_EQ(sst_put(idx, 0), 0);
	/* it backed off to a barrier: what was on the list is freed */
	UT_EQ(atomic_read(&freed), n);
	shim_fail_atomic(false);
	pthread_join(th, NULL);
	UT_EQ(atomic_long_read(&t->epoch.abandoned), 0);
	UT_ASSERT(atomic_read(&t->ovf_nodes) < ovf);
	for (i = n; i < ARRAY_SIZE(objs); i++)
		kfree(objs[i]);
	sst_verify(idx, OR_KEYS);
	pmidx_pool_close(pool);
	ccl_nbatch = nbatch;
	ccl_gc_interval_ms = gc_ms;
	ut_img_free(crash, SZ);
	ut_img_free(img, SZ);
	ut_note("ccl: the list full with %u objects, the write drained %u "
		"overflow node(s) after a barrier", n, ovf);
}

/* ---- every engine: the pool's epoch list full in a writer's section ------- */

#define PR_KEYS		300
#define PR_OBJS		1024
#define PR_NOWAIT	8	/* no-wait deletes tried */

struct pr_list {
	struct or_pin	pin;
	pthread_t	th;
	void		*objs[PR_OBJS];
	unsigned int	n;
	atomic_t	freed;
};

/*
 * Pin the epochs from another thread and fill this CPU's list of @ep
 * until it has no room. Returns with every allocation failing, so that
 * the list cannot grow, until pr_allow().
 */
static void pr_fill(struct pr_list *pl, struct pmidx_epoch *ep)
{
	bool full;

	memset(pl, 0, sizeof(*pl));
	/* what the list holds: ours, retired after the pin, and no more */
	pmidx_epoch_barrier(ep);
	for (pl->n = 0; pl->n < PR_OBJS; pl->n++)
		UT_ASSERT((pl->objs[pl->n] = kmalloc(32, GFP_KERNEL)));
	pl->n = 0;
	atomic_set(&pl->freed, 0);
	pl->pin.e = ep;
	UT_EQ(pthread_create(&pl->th, NULL, or_pin_fn, &pl->pin), 0);
	while (!atomic_read_acquire(&pl->pin.pinned))
		cpu_relax();
	UT_ASSERT(pl->pin.cpu != raw_smp_processor_id());
	shim_fail_all(true);
	for (;;) {
		pmidx_epoch_enter(ep);
		full = !pmidx_epoch_room(ep, 1);
		pmidx_epoch_exit(ep);
		if (full)
			break;
		UT_ASSERT(pl->n < PR_OBJS);
		pmidx_epoch_retire_fn(ep, (u64)(uintptr_t)pl->objs[pl->n++],
				      or_free, &pl->freed);
	}
}

/*
 * Let writers sleep for memory again, atomic allocations still failing.
 * Every ask for room queues the grow worker, which would now succeed:
 * it runs first, and fails, so that the list stays full until a barrier.
 */
static void pr_allow(struct pmidx_epoch *ep)
{
	flush_work(&ep->grow_work);
	shim_fail_all(false);
	shim_fail_atomic(true);
}

/* The pin gone and the list freed: nothing of it was abandoned. */
static void pr_release(struct pr_list *pl, struct pmidx_epoch *ep)
{
	unsigned int i;

	shim_fail_atomic(false);
	pthread_join(pl->th, NULL);
	pmidx_epoch_barrier(ep);
	UT_EQ(atomic_read(&pl->freed), pl->n);
	UT_EQ(atomic_long_read(&ep->abandoned), 0);
	for (i = pl->n; i < PR_OBJS; i++)
		kfree(pl->objs[i]);
}

/* A key whose delete retires no blob (an inline key and value) */
static bool pr_plain(u64 i)
{
	u8 k[64], b[128];

	return ekv_hkey(i, k) <= 8 && ekv_hval(i, b) <= 8;
}

/*
 * This CPU's list of the pool's epoch is full of objects that another
 * thread's section keeps from being freed, and atomic allocations fail.
 * Writers that retire pool objects inside their sections (no-wait ones
 * of uTree, b3 and pfart; the SMOs of b3 and pfart) must ask for room
 * first, not abandon the objects (core/epoch.c):
 *  - no-wait deletes are refused, changing nothing, and one of them at
 *    least succeeds once the list is freed (so it was refused for room:
 *    one may also be refused for its own reasons, a prune or a page copy
 *    it would need, the same before as after);
 *  - blocking inserts go on, the first SMO that retires (pfart's array
 *    grow or split, b3's page split) backing off to a barrier that frees
 *    the list (without the check, the grow worker makes the room and no
 *    barrier runs: the count of freed objects tells them apart);
 *  - the same for blocking deletes of keys with no blobs, whose SMOs are
 *    pfart's prunes and b3's page copies and merges.
 */
static void engine_pool_room(void)
{
	u32 e;

	for (e = 1; e < __PMIDX_ENGINE_MAX; e++) {
		bool asks = e == PMIDX_ENGINE_UTREE || e == PMIDX_ENGINE_B3 ||
			    e == PMIDX_ENGINE_PFART;
		bool smos = e == PMIDX_ENGINE_B3 || e == PMIDX_ENGINE_PFART;
		struct pmidx_epoch *ep;
		struct pr_list *pl;
		u64 i, k[PR_NOWAIT], nk = 0;
		struct kv_index x;
		int ret, took;

		if (!ekv_engine_available(e))
			continue;
		pl = malloc(sizeof(*pl));
		UT_ASSERT(pl);
		kv_index_new(&x, e);
		ep = &x.pool->epoch;
		for (i = 0; i < PR_KEYS; i++) {
			UT_EQ(kv_put(x.idx, i, i), 0);
			x.state[i] = i + 1;
		}

		pr_fill(pl, ep);
		for (i = 0; nk < PR_NOWAIT; i++) {
			if (!pr_plain(i))
				continue;
			ret = kv_del_flags(x.idx, i, PMIDX_WRITE_NOWAIT);
			if (asks)
				UT_EQ(ret, -EAGAIN);
			else if (!ret)
				x.state[i] = 0;
			k[nk++] = i;
		}
		pr_allow(ep);
		for (i = PR_KEYS; i < 2 * PR_KEYS; i++) {
			UT_EQ(kv_put(x.idx, i, i), 0);
			x.state[i] = i + 1;
		}
		if (smos)
			UT_EQ(atomic_read(&pl->freed), pl->n);
		pr_release(pl, ep);
		for (i = 0, took = 0; asks && i < nk; i++) {
			ret = kv_del_flags(x.idx, k[i], PMIDX_WRITE_NOWAIT);
			UT_ASSERT(!ret || ret == -EAGAIN);
			if (!ret) {
				x.state[k[i]] = 0;
				took++;
			}
		}
		UT_ASSERT(!asks || took);
		ut_note("engine %s: the list full with %u objects: %d of %llu no-wait "
			"deletes refused for room alone, inserts went on",
			pmidx_engine_name(e), pl->n, took, (unsigned long long)nk);

		pr_fill(pl, ep);
		pr_allow(ep);
		for (i = 0; i < 2 * PR_KEYS; i++) {
			if (!x.state[i] || !pr_plain(i) || i % 8 == 7)
				continue;
			UT_EQ(kv_del(x.idx, i), 0);
			x.state[i] = 0;
		}
		if (smos)
			UT_EQ(atomic_read(&pl->freed), pl->n);
		pr_release(pl, ep);
		verify(x.idx, x.state, "after writes with the epoch list full");
		kv_index_free(&x);
		free(pl);
	}
}

/* ---- every engine: attach short of memory ----------------------------------- */

#define AN_KEYS		3000
#define AN_TRIES	400
#define AN_SZ		(16ULL << 20)

/*
 * Fail one allocation of an attach at a time (clean, then after a crash:
 * the image copied while attached), spread over all of them and always
 * the last ones (the DRAM levels built over what was read): the attach
 * answers -ENOMEM or, for one it can do without, succeeds; it leaks
 * nothing (the harness counts) and changes nothing the next attach
 * would read differently.
 */
static unsigned long an_scan(void *img, const char *what, u32 e)
{
	unsigned long calls, n, step, failed = 0;
	struct pmidx_pool *pool;
	const char *why = NULL;
	void *copy;

	calls = shim_alloc_calls();
	pool = ut_pool_open(img, AN_SZ);
	calls = shim_alloc_calls() - calls;
	pmidx_pool_close(pool);
	step = max(1UL, calls / AN_TRIES);
	copy = ut_img_alloc(AN_SZ);
	for (n = 1; n <= calls; n += n + AN_TRIES / 4 >= calls ? 1 : step) {
		/* a failed crash attach may have repaired some of it */
		memcpy(copy, img, AN_SZ);
		shim_fail_alloc_nth(n);
		pool = pmidx_pool_open(copy, AN_SZ, false, &why);
		shim_fail_alloc_nth(0);
		if (IS_ERR(pool)) {
			UT_ASSERT_MSG(PTR_ERR(pool) == -ENOMEM,
				      "%s %s attach, allocation %lu of %lu: %ld",
				      pmidx_engine_name(e), what, n, calls,
				      PTR_ERR(pool));
			failed++;
		} else {
			pmidx_pool_close(pool);
		}
	}
	ut_img_free(copy, AN_SZ);
	UT_ASSERT(failed);
	return calls;
}

static void engine_attach_nomem(void)
{
	u32 e;

	for (e = 1; e < __PMIDX_ENGINE_MAX; e++) {
		unsigned long clean, crash;
		struct pmidx_pool *pool;
		struct pmidx_index *idx;
		const char *why = NULL;
		void *img, *crashed;
		u64 state[1], i, keys;

		if (!ekv_engine_available(e))
			continue;
		img = ut_img_alloc(AN_SZ);
		pool = ut_pool_new(img, AN_SZ);
		UT_ASSERT_MSG(!pmidx_index_create(pool, "kv", e, &idx, &why),
			      "%s: create: %s", pmidx_engine_name(e), why);
		for (i = 0; i < AN_KEYS; i++)
			UT_EQ(kv_put(idx, i, i), 0);
		crashed = ut_img_dup(img, AN_SZ);
		pmidx_pool_close(pool);
		clean = an_scan(img, "clean", e);
		crash = an_scan(crashed, "crash", e);
		pool = ut_pool_open(crashed, AN_SZ);
		idx = pmidx_index_lookup(pool, "kv");
		UT_ASSERT(idx && idx->opened);
		UT_ASSERT_MSG(!idx->ops->check(idx, &keys, &why), "%s: check: %s",
			      idx->ops->name, why);
		UT_EQ(keys, AN_KEYS);
		for (i = 0; i < AN_KEYS; i += 97) {
			bool ok = false;

			state[0] = i;
			UT_EQ(kv_get(idx, i, &state[0], &ok), 0);
			UT_ASSERT(ok);
		}
		pmidx_pool_close(pool);
		ut_img_free(crashed, AN_SZ);
		ut_img_free(img, AN_SZ);
		ut_note("engine %s: clean attach %lu allocations, crash attach %lu; "
			"failures spread over them and the last %u", pmidx_engine_name(e),
			clean, crash, AN_TRIES / 4);
	}
}

/*
 * Index creation, each of its allocations failing in turn: -ENOMEM and
 * no index, nothing leaked (DRAM: the harness; pool: the object count),
 * until one passes with none failing; the pool then reattaches clean.
 */
static void engine_create_nomem(void)
{
	u32 e;

	for (e = 1; e < __PMIDX_ENGINE_MAX; e++) {
		void *img = ut_img_alloc(AN_SZ);
		struct pmidx_pool *pool = ut_pool_new(img, AN_SZ);
		u64 objects = ut_stat(pool, PMIDX_STAT_ALLOC_OBJECTS);
		struct pmidx_index *idx;
		const char *why = NULL;
		unsigned int n;
		bool ok = false;
		int ret;

		if (!ekv_engine_available(e)) {
			pmidx_pool_close(pool);
			ut_img_free(img, AN_SZ);
			continue;
		}
		for (n = 1; n < 400; n++) {
			shim_fail_alloc_nth(n);
			ret = pmidx_index_create(pool, "kv", e, &idx, &why);
			shim_fail_alloc_nth(0);
			if (!shim_fail_alloc_fired()) {
				UT_EQ(ret, 0);
				ok = true;
				break;
			}
			UT_ASSERT_MSG(ret == -ENOMEM, "%s: allocation %u: %d %s",
				      pmidx_engine_name(e), n, ret, why ? why : "");
			UT_ASSERT(!pmidx_index_lookup(pool, "kv"));
			UT_EQ(ut_stat(pool, PMIDX_STAT_ALLOC_OBJECTS), objects);
		}
		UT_ASSERT(ok);
		UT_EQ(kv_put(idx, 1, 1), 0);
		pmidx_pool_close(pool);
		pool = ut_pool_open(img, AN_SZ);
		UT_ASSERT(!(pool->flags & PMIDX_POOL_F_RECOVERED));
		idx = pmidx_index_lookup(pool, "kv");
		UT_ASSERT(idx && idx->opened);
		pmidx_pool_close(pool);
		ut_img_free(img, AN_SZ);
		ut_note("engine %s: index creation has %u allocations, each "
			"failure handled", pmidx_engine_name(e), n - 1);
	}
}

/*
 * Writes with one allocation failing, any kind (the 1st to 3rd of the
 * write, at random): each write succeeds or answers -ENOMEM having
 * changed nothing (never -ENOSPC: the pool has room), and what was
 * acknowledged is all there.
 */
static void engine_write_nomem(void)
{
	unsigned int total = 0;
	u32 e;

	for (e = 1; e < __PMIDX_ENGINE_MAX; e++) {
		unsigned int r, nomem = 0, fired = 0;
		struct pmidx_index *idx;
		struct rnd_state rs;
		struct kv_index x;
		u64 i, v;
		bool del;
		int ret;

		if (!ekv_engine_available(e))
			continue;
		kv_index_new(&x, e);
		idx = x.idx;
		prandom_seed_state(&rs, ut_seed + e);
		for (r = 0; r < 4; r++) {
			for (i = 0; i < NKEYS; i++) {
				del = r == 2 && i % 3 == 0;
				v = (u64)r * NKEYS + i;
				shim_fail_alloc_nth(1 + prandom_u32_state(&rs) % 3);
				ret = del ? kv_del(idx, i) : kv_put(idx, i, v);
				shim_fail_alloc_nth(0);
				fired += shim_fail_alloc_fired();
				ret = round_result(x.state, i, v, del, ret, true,
						   &nomem);
				UT_ASSERT_MSG(!ret, "%s: round %u: %s %llu: %d",
					      idx->ops->name, r, del ? "delete" : "put",
					      (unsigned long long)i, ret);
			}
		}
		total += fired;
		verify(idx, x.state, "after writes with allocations failing");
		kv_index_free(&x);
		ut_note("engine %s: %u writes, %u met a failed allocation, %u "
			"answered -ENOMEM", pmidx_engine_name(e), 4 * NKEYS, fired,
			nomem);
	}
	UT_ASSERT(total);
}

static const struct ut_test tests[] = {
	UT_TEST(engine_kv_roundtrip),
	UT_TEST(engine_shared_prefix),
	UT_TEST(engine_atomic_short),
	UT_TEST(engine_atomic_short_threads),
	UT_TEST(engine_full_pool),
	UT_TEST(engine_scan_churn),
	UT_TEST(utree_corrupt_clean),
	UT_TEST(utree_split_stash),
	UT_TEST(b3_corrupt_clean),
	UT_TEST(ccl_attach_nomem),
	UT_TEST(ccl_overflow_room),
	UT_TEST(engine_pool_room),
	UT_TEST(engine_attach_nomem),
	UT_TEST(engine_create_nomem),
	UT_TEST(engine_write_nomem),
	UT_TEST(engine_root_copied),
	UT_TEST(engine_named_twice),
	UT_TEST(engine_crash_kv),
};

int main(int argc, char **argv)
{
	if (crashsim_parse_model(&argc, argv))
		return 2;
	return ut_main(argc, argv, "engines", tests, ARRAY_SIZE(tests));
}
