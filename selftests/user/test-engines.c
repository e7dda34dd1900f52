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
#include <stdlib.h>
#include <linux/prandom.h>
#include <shim/shim.h>
#include "core/engine.h"
#include "engines/utree/utree.h"
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

static int kv_put(struct pmidx_index *idx, u64 i, u64 v)
{
	u8 k[64], b[128];
	u32 kl = ekv_hkey(i, k), vl = ekv_hval(v, b);

	return idx->ops->put(idx, k, kl, b, vl, 0);
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

static int kv_del(struct pmidx_index *idx, u64 i)
{
	u8 k[64];
	u32 kl = ekv_hkey(i, k);

	return idx->ops->del(idx, k, kl);
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

/* ---- crash simulation with key/value operations -------------------------------- */

struct kv_arg {
	u32	engine;
	u64	seed;
	u32	ops;
};

static int kv_workload(struct crashsim *cs, void *img, u64 size, void *arg)
{
	struct kv_arg *a = arg;
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

	/* utree-clean-node-odd-version: readers and writers give up */
	img = ut_img_dup(clean, SZ);
	n = utc_lnode(img, m.node[0]);
	n->next = cpu_to_le64(le64_to_cpu(n->next) ^ UT_VER_ONE);
	idx = utc_open(img, &pool);
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
	UT_EQ(idx->ops->del(idx, m.second_key, m.second_len), -EUCLEAN);
	UT_ASSERT(utc_check(idx));
	pmidx_pool_close(pool);
	ut_img_free(img, SZ);

	/* utree-clean-node-key-misaligned: key blob word + 1, resealed */
	img = ut_img_dup(clean, SZ);
	n = utc_lnode(img, m.node[3]);
	kw = le64_to_cpu(n->key) + 1;
	n->key = cpu_to_le64(kw);
	n->check = cpu_to_le32(ut_node_check(m.node[3], kw, le32_to_cpu(n->meta)));
	idx = utc_open(img, &pool);
	UT_ASSERT(utc_check(idx));
	v = 3;
	UT_ASSERT(kv_get(idx, 3, &v, &ok) < 0);
	pmidx_pool_close(pool);
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

	/* utree-clean-value-blob-shared: key 1's value word names key 6's */
	img = ut_img_dup(clean, SZ);
	utc_lnode(img, m.node[1])->val = utc_lnode(img, m.node[6])->val;
	idx = utc_open(img, &pool);
	why = utc_check(idx);
	UT_ASSERT_MSG(why && strstr(why, "shared"), "check: %s", why ? why : "passed");
	pmidx_pool_close(pool);
	ut_img_free(img, SZ);

	ut_img_free(clean, SZ);
	ut_note("uTree: corrupt clean images refused or caught by the check");
}

static const struct ut_test tests[] = {
	UT_TEST(engine_kv_roundtrip),
	UT_TEST(utree_corrupt_clean),
	UT_TEST(engine_crash_kv),
};

int main(int argc, char **argv)
{
	if (crashsim_parse_model(&argc, argv))
		return 2;
	return ut_main(argc, argv, "engines", tests, ARRAY_SIZE(tests));
}
