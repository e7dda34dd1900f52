// SPDX-License-Identifier: GPL-2.0
/*
 * No-wait writes (core/engine.h, "No-wait writes"): what io_uring's
 * non-blocking first issue runs.
 *
 * Engine level, for every engine that has them (PMIDX_ENGINE_F_NOWAIT):
 * a random workload of puts and deletes, each first tried no-wait in
 * atomic context (the shim's might_sleep() check, fatal in tests, fires
 * on any mutex, rwsem, sleeping allocation or cond_resched()): first
 * while a second thread runs the structural checker (which holds writers
 * off), then with one of the next few DRAM allocations failing (memory
 * short: no-wait must not sleep even then, after its change included,
 * and answers -EAGAIN, not -ENOMEM: the blocking run may find memory).
 * Every refusal must leave the key as it was; the write then runs again
 * blocking, and the index must match the reference throughout; the
 * engine counts each write once.
 *
 * Dispatcher level: a BATCH under PMIDX_DISPATCH_NOWAIT either answers
 * -EAGAIN having changed nothing, or runs every entry exactly once (its
 * puts are PMIDX_PUT_INSERT: one made twice answers -EEXIST), finishing
 * where it may sleep once a write has run; its GETs see the puts before
 * them either way. An engine without no-wait
 * writes never gets one.
 */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>
#include <shim/shim.h>
#include "core/dispatch.h"
#include "core/engine.h"
#include "engine-kv.h"
#include "pool_file.h"
#include "harness.h"

#define SZ		(64ULL << 20)
#define NW_KEYS		3000
#define NW_OPS		20000
#define NW_VERIFY	5000	/* ops between full comparisons */

static bool has_nowait(u32 e)
{
	return pmidx_engine_ops(e)->flags & PMIDX_ENGINE_F_NOWAIT;
}

/* The shim's might_sleep() warns (fatally) while this is above zero. */
static void no_sleep_begin(void)
{
	shim_atomic_depth++;
}

static void no_sleep_end(void)
{
	shim_atomic_depth--;
}

/* state[i]: 0 absent, else value + 1 */
static void key_is(struct pmidx_index *idx, u64 i, const u64 *state,
		   const char *when)
{
	u8 k[64], b[256], want[128];
	u32 kl = ekv_hkey(i, k), vl = sizeof(b);
	int ret = idx->ops->get(idx, k, kl, b, &vl);

	if (!state[i]) {
		UT_ASSERT_MSG(ret == -ENOENT, "%s %s: deleted key %llu: %d",
			      idx->ops->name, when, (unsigned long long)i, ret);
		return;
	}
	UT_ASSERT_MSG(!ret && vl == ekv_hval(state[i] - 1, want) &&
		      !memcmp(b, want, vl), "%s %s: key %llu: %d%s",
		      idx->ops->name, when, (unsigned long long)i, ret,
		      ret ? "" : " (wrong value)");
}

struct nw_checker {
	struct pmidx_index	*idx;
	bool			stop;
	long			runs;
};

static void *nw_check_loop(void *arg)
{
	struct nw_checker *c = arg;
	const char *why = NULL;
	u64 keys;
	int ret;

	while (!__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE)) {
		ret = c->idx->ops->check(c->idx, &keys, &why);
		/*
		 * -EAGAIN: writes went on too fast for one view (ccl);
		 * -ENOMEM: a writer's injected failure hit the checker's
		 * allocation first (only at the switch to the second phase)
		 */
		UT_ASSERT_MSG(!ret || ret == -EAGAIN || ret == -ENOMEM,
			      "%s: check: %d %s",
			      c->idx->ops->name, ret, why ? why : "");
		c->runs++;
		usleep(100);	/* let the writers on between checks */
	}
	return NULL;
}

/*
 * One write: no-wait first, with the @fail-th DRAM allocation failing
 * (0: none); a refusal must leave the key as it was.
 */
static int nw_write(struct pmidx_index *idx, u64 i, u64 v, bool del,
		    const u64 *state, unsigned int fail, long *refused)
{
	u8 k[64], b[128];
	u32 kl = ekv_hkey(i, k), vl = ekv_hval(v, b);
	int ret;

	shim_fail_alloc_nth(fail);
	no_sleep_begin();
	ret = del ? idx->ops->del(idx, k, kl, PMIDX_WRITE_NOWAIT) :
		    idx->ops->put(idx, k, kl, b, vl, PMIDX_WRITE_NOWAIT);
	no_sleep_end();
	shim_fail_alloc_nth(0);
	if (ret != -EAGAIN)
		return ret;
	(*refused)++;
	key_is(idx, i, state, "after a refused no-wait write");
	return del ? idx->ops->del(idx, k, kl, 0) :
		     idx->ops->put(idx, k, kl, b, vl, 0);
}

static void nw_verify(struct pmidx_index *idx, const u64 *state,
		      const char *when)
{
	u64 i;

	for (i = 0; i < NW_KEYS; i++)
		key_is(idx, i, state, when);
}

static void nowait_refusal_changes_nothing(void)
{
	u32 e;

	for (e = 1; e < __PMIDX_ENGINE_MAX; e++) {
		u64 *state = calloc(NW_KEYS, sizeof(*state));
		struct nw_checker c = { 0 };
		struct pmidx_pool *pool;
		const char *why = NULL;
		u64 n, s = ut_seed | 1, keys;
		struct pmidx_stats st = { 0 };
		long refused = 0;
		pthread_t th;
		void *img;

		if (!ekv_engine_available(e) || !has_nowait(e)) {
			if (pmidx_engine_ops(e))
				ut_note("engine %s: no no-wait writes (the dispatcher never asks it)",
					pmidx_engine_name(e));
			free(state);
			continue;
		}
		UT_ASSERT(state);
		img = ut_img_alloc(SZ);
		pool = ut_pool_new(img, SZ);
		UT_ASSERT_MSG(!pmidx_index_create(pool, "nw", e, &c.idx, &why),
			      "%s: create: %s", pmidx_engine_name(e), why);
		pthread_create(&th, NULL, nw_check_loop, &c);
		for (n = 0; n < NW_OPS; n++) {
			unsigned int fail = 0;
			u64 i, v;
			bool del;
			int ret;

			if (n == NW_OPS / 2) {
				/* the checker allocates too: stop it first */
				__atomic_store_n(&c.stop, true, __ATOMIC_RELEASE);
				pthread_join(th, NULL);
			}
			s = s * 6364136223846793005ULL + 1442695040888963407ULL;
			i = (s >> 33) % NW_KEYS;
			/* the first half mostly inserts: splits, then churn */
			del = (s >> 20) % 8 < (n < NW_OPS / 2 ? 1 : 4);
			if (n >= NW_OPS / 2)
				fail = 1 + (s >> 40) % 4;
			v = n + 1;
			ret = nw_write(c.idx, i, v, del, state, fail, &refused);
			UT_ASSERT_MSG(ret == (del && !state[i] ? -ENOENT : 0),
				      "%s: %s of key %llu: %d", pmidx_engine_name(e),
				      del ? "delete" : "put",
				      (unsigned long long)i, ret);
			state[i] = del ? 0 : v + 1;
			if (n % NW_VERIFY == NW_VERIFY - 1)
				nw_verify(c.idx, state, "during the run");
		}
		nw_verify(c.idx, state, "at the end");
		UT_ASSERT_MSG(!c.idx->ops->check(c.idx, &keys, &why),
			      "%s: check: %s", pmidx_engine_name(e), why);
		ut_note("engine %s: %d writes, %ld refused no-wait and run again, %ld checks beside",
			pmidx_engine_name(e), NW_OPS, refused, c.runs);
		/* a refused write is counted once, when it runs */
		c.idx->ops->stats(c.idx, &st);
		UT_EQ(st.val[PMIDX_STAT_OPS_PUT] + st.val[PMIDX_STAT_OPS_DEL],
		      NW_OPS);
		/* the refusal path ran: the checker, memory short */
		UT_ASSERT(refused > 0);
		pmidx_pool_close(pool);
		ut_img_free(img, SZ);
		free(state);
	}
}

/* ---- the dispatcher's BATCH ------------------------------------------- */

#define NB_ENTS		48	/* at most the no-wait batch's 64 */

struct nb_batch {
	struct pmidx_cmd	ent[NB_ENTS], in[NB_ENTS];
	u64			key[NB_ENTS], val[NB_ENTS];
};

/* Entry @i of a batch GETs the key the entry before it put. */
static bool nb_is_get(u32 i)
{
	return i % 4 == 3;
}

/*
 * A BATCH into @index of PUT_INSERTs of keys @base.., every fourth entry a
 * GET of the key put just before it: a GET after the batch went on where
 * it may sleep must still find that value (staged: written out at the end).
 */
static void nb_fill(struct nb_batch *b, u32 index, u64 base,
		    struct pmidx_cmd *cmd)
{
	u32 i;

	for (i = 0; i < NB_ENTS; i++) {
		b->key[i] = cpu_to_be64(base + i);
		b->val[i] = nb_is_get(i) ? ~0ULL : base + i;
		b->ent[i] = (struct pmidx_cmd){
			.op = PMIDX_OP_PUT, .flags = PMIDX_PUT_INSERT,
			.index = index, .key = (uintptr_t)&b->key[i],
			.key_len = 8, .val = (uintptr_t)&b->val[i],
			.val_len = 8,
		};
		if (nb_is_get(i)) {
			b->ent[i].op = PMIDX_OP_GET;
			b->ent[i].flags = 0;
			b->ent[i].key = (uintptr_t)&b->key[i - 1];
		}
	}
	memcpy(b->in, b->ent, sizeof(b->ent));
	*cmd = (struct pmidx_cmd){
		.op = PMIDX_OP_BATCH, .val = (uintptr_t)b->ent,
		.val_len = sizeof(b->ent), .count = NB_ENTS,
	};
}

/* How many of the batch's keys are in @idx; each GET found its value */
static u32 nb_present(struct pmidx_index *idx, u64 base)
{
	u64 k, v;
	u32 i, vl, n = 0;

	for (i = 0; i < NB_ENTS; i++) {
		if (nb_is_get(i))
			continue;
		k = cpu_to_be64(base + i);
		vl = sizeof(v);
		if (!idx->ops->get(idx, (u8 *)&k, 8, (u8 *)&v, &vl)) {
			UT_ASSERT(vl == 8 && v == base + i);
			n++;
		}
	}
	return n;
}

static void nb_gets_found(struct nb_batch *b, u64 base)
{
	u32 i;

	for (i = 3; i < NB_ENTS; i += 4) {
		UT_EQ(b->ent[i].val_len, 8);
		UT_EQ(b->val[i], base + i - 1);
	}
}

#define NB_PUTS		(NB_ENTS - NB_ENTS / 4)

/*
 * Batches of inserts, each first issued no-wait, then (if refused) again
 * blocking, as io_uring does. Every key ends present once, every entry
 * answers 0, and a refused batch changed nothing.
 */
static void nowait_batch_runs_once(void)
{
	u32 e;

	for (e = 1; e < __PMIDX_ENGINE_MAX; e++) {
		struct nb_batch *b = calloc(1, sizeof(*b));
		long refused = 0, inline_ok = 0;
		struct pmidx_index *idx;
		struct pmidx_pool *pool;
		const char *why = NULL;
		struct pmidx_cmd cmd;
		u64 base, keys;
		void *img;
		u32 i;
		int ret;

		if (!ekv_engine_available(e)) {
			free(b);
			continue;
		}
		UT_ASSERT(b);
		img = ut_img_alloc(SZ);
		pool = ut_pool_new(img, SZ);
		UT_ASSERT_MSG(!pmidx_index_create(pool, "nb", e, &idx, &why),
			      "%s: create: %s", pmidx_engine_name(e), why);
		for (base = 0; base < 200 * NB_ENTS; base += NB_ENTS) {
			nb_fill(b, idx->id, base, &cmd);
			ret = pmidx_dispatch(pool, &cmd, &pmidx_pool_file_uaccess,
					     PMIDX_DISPATCH_NOWAIT);
			if (ret == -EAGAIN) {
				refused++;
				UT_EQ(memcmp(b->ent, b->in, sizeof(b->ent)), 0);
				UT_EQ(nb_present(idx, base), 0);
				UT_EQ(b->val[3], ~0ULL);
				ret = pmidx_dispatch(pool, &cmd, &pmidx_pool_file_uaccess, 0);
			} else {
				inline_ok++;
			}
			UT_ASSERT_MSG(!ret && !cmd.result, "%s: batch at %llu: %d, %llu failed",
				      pmidx_engine_name(e),
				      (unsigned long long)base, ret,
				      (unsigned long long)cmd.result);
			for (i = 0; i < NB_ENTS; i++)
				UT_EQ((s64)b->ent[i].result, 0);
			UT_EQ(nb_present(idx, base), NB_PUTS);
			nb_gets_found(b, base);
		}
		UT_ASSERT_MSG(!idx->ops->check(idx, &keys, &why),
			      "%s: check: %s", pmidx_engine_name(e), why);
		UT_EQ(keys, base / NB_ENTS * NB_PUTS);
		ut_note("engine %s: %llu batches of %u inserts and %u gets, %ld run no-wait, %ld refused whole",
			pmidx_engine_name(e), (unsigned long long)base / NB_ENTS,
			NB_PUTS, NB_ENTS - NB_PUTS, inline_ok, refused);
		/*
		 * Splits need the blocking path: one that a batch meets after
		 * its first entry (most of them) is run there, in place.
		 */
		if (has_nowait(e)) {
			UT_ASSERT(inline_ok > 0);
		} else {
			UT_EQ(inline_ok, 0);
		}
		pmidx_pool_close(pool);
		ut_img_free(img, SZ);
		free(b);
	}
}

static const struct ut_test tests[] = {
	UT_TEST(nowait_refusal_changes_nothing),
	UT_TEST(nowait_batch_runs_once),
};

int main(int argc, char **argv)
{
	return ut_main(argc, argv, "nowait", tests, ARRAY_SIZE(tests));
}
