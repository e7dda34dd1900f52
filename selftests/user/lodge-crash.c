// SPDX-License-Identifier: GPL-2.0
/*
 * The lodge engine (kmod/engines/lodge/) beyond the common engine tests:
 *  - structure: the leaf-count flush at the exact threshold; leaf splits
 *    and last-level node splits, 2-way and multiple (§III-C), with
 *    Formula 1's cap by the parent's free slots, and multiple split off;
 *    log versions freed out of order (recovery then trusts the leaves'
 *    ts, not the order of the logs); deletes emptying leaves that are
 *    unlinked and freed; the drain that flushes the oldest half of the
 *    logs above lodge_log_max. Each with get/scan/CHECK, a clean and a
 *    crash re-attach and a drop that leaves no object behind;
 *  - threads: writers, readers, a scanner and CHECK at once, with small
 *    nodes so that node splits (t->tree taken for writing) are frequent;
 *  - parallel recovery: one crash image with many logs and buffered
 *    records recovered by 1, 2, 3, 8 and the default number of workers
 *    gives the same DRAM state and the same pool bytes; the logs are
 *    listed by version;
 *  - the ADR crash simulator over every crash point of workloads with
 *    small nodes, leaves and logs, long enough that leaves, blobs and
 *    logs are freed and their objects reused (the line model, and the
 *    store-prefix model in the prefix build); the drain workload with
 *    every recovery step split over 3 workers.
 *
 * Run: make -f tools/testing/user.mk B=DIR DIR/user/plain/lodge-crash
 * Replay one failure: PMIDX_CRASH_POINT=P PMIDX_CRASH_VARIANT=V
 *   lodge-crash --seed S --only NAME
 */
#include <pthread.h>
#include <stdlib.h>
#include <linux/prandom.h>
#include <shim/shim.h>
#include "core/engine.h"
#include "crashsim.h"
#include "engine-kv.h"
#include "harness.h"
#include "engines/lodge/lodge.h"

#define SZ		(128ULL << 20)

/* The engine's parameters (module params, read at open). */
struct lparams {
	unsigned int	leaf, slots, t_node, t_split, hot, log_kb, log_max;
	bool		multi;
	unsigned int	rec_threads;	/* 0: the attach's CPUs */
};

static const struct lparams defaults = { 512, 29, 2, 26, 2, 8, 2048, true };
/* small everything: many flushes, splits, logs per operation */
static const struct lparams small = { 256, 8, 2, 10, 2, 1, 6, true };

static void set_params(const struct lparams *p)
{
	lodge_leaf_bytes = p->leaf;
	lodge_node_slots = p->slots;
	lodge_t_node = p->t_node;
	lodge_t_split = p->t_split;
	lodge_hot_t = p->hot;
	lodge_log_kb = p->log_kb;
	lodge_log_max = p->log_max;
	lodge_multi_split = p->multi;
	lodge_recovery_threads = p->rec_threads;
}

/* key n: 3..100 bytes, unique by its first 3 bytes, ordered by n */
static const u8 klens[] = { 8, 3, 8, 40, 8, 100, 8, 12 };
static const u32 vlens[] = { 8, 0, 8, 5, 16, 8, 300, 8, 9, 2000 };

static const struct ekv_scheme kv = {
	EKV_LENS(klens, vlens), .prefix = 3, .scan_piece = 37,
};

/*
 * The checker's buffers: the crash simulator checks images at crash
 * points inside the workload's operations (ekv_put() of its own buffer).
 */
static u8 cvbuf[EKV_VMAX], cgbuf[EKV_VMAX];

static struct lodge_pcpu lsum(struct pmidx_index *idx)
{
	struct lodge *t = idx->priv;
	struct lodge_pcpu s = {};
	int cpu, i;

	for_each_possible_cpu(cpu) {
		struct lodge_pcpu *c = per_cpu_ptr(t->st, cpu);

		s.flushes += c->flushes;
		s.leaf_writes += c->leaf_writes;
		s.leaf_splits += c->leaf_splits;
		s.lin_splits += c->lin_splits;
		s.merges += c->merges;
		s.log_bytes += c->log_bytes;
		for (i = 0; i <= LODGE_MSPLIT_MAX; i++)
			s.pieces[i] += c->pieces[i];
		s.capped += c->capped;
		s.log_frees += c->log_frees;
		s.log_frees_ooo += c->log_frees_ooo;
		s.drains += c->drains;
	}
	return s;
}

static u64 multi_pieces(const struct lodge_pcpu *s)
{
	u64 n = 0;
	int i;

	for (i = 3; i <= LODGE_MSPLIT_MAX; i++)
		n += s->pieces[i];
	return n;
}

/*
 * Clean re-attach (every buffered KV flushed at detach: no log left),
 * a crash image of the re-attached index with more writes (recovery
 * replays logs), and drops that leave no object.
 */
static void reattach_crash_drop(void **imgp, struct pmidx_pool **poolp,
				u64 *state, u64 n, const char *name)
{
	struct pmidx_pool *pool = *poolp, *rec;
	struct pmidx_index *idx, *ri;
	const char *why = NULL;
	void *crash;
	u64 i;

	pmidx_pool_close(pool);
	pool = ut_pool_open(*imgp, SZ);
	idx = pmidx_index_lookup(pool, name);
	UT_ASSERT(idx && idx->opened);
	UT_EQ(((struct lodge *)idx->priv)->nlogs, 0);
	UT_EQ(((struct lodge *)idx->priv)->replayed, 0);
	ekv_verify(idx, state, n, "after re-attach");
	for (i = 1; i < n; i += 3) {
		UT_EQ(ekv_put(idx, i, i + 11), 0);
		state[i] = i + 12;
	}
	for (i = 2; i < n; i += 5) {
		if (state[i]) {
			UT_EQ(ekv_del(idx, i), 0);
			state[i] = 0;
		}
	}
	crash = ut_img_dup(*imgp, SZ);
	rec = ut_pool_open(crash, SZ);
	ri = pmidx_index_lookup(rec, name);
	UT_ASSERT(rec->flags & PMIDX_POOL_F_RECOVERED);
	UT_ASSERT(ri && ri->opened);
	ekv_verify(ri, state, n, "after crash recovery");
	UT_EQ(pmidx_index_drop(rec, name, &why), 0);
	UT_EQ(ut_stat(rec, PMIDX_STAT_ALLOC_OBJECTS), 0);
	pmidx_pool_close(rec);
	ut_img_free(crash, SZ);
	UT_EQ(pmidx_index_drop(pool, name, &why), 0);
	UT_EQ(ut_stat(pool, PMIDX_STAT_ALLOC_OBJECTS), 0);
	*poolp = pool;
}

static struct pmidx_index *create(struct pmidx_pool *pool, const char *name)
{
	struct pmidx_index *idx;
	const char *why = NULL;

	UT_ASSERT_MSG(!pmidx_index_create(pool, name, PMIDX_ENGINE_LODGE, &idx,
					  &why), "create: %s", why);
	return idx;
}

static u64 be_key(u64 i, u8 *k)
{
	u64 be = cpu_to_be64(i);

	memcpy(k, &be, 8);
	return 8;
}

/*
 * §III-B: the buffer part takes cap - nidx KVs; the put that finds it
 * full flushes (here: one leaf, 28 KVs > t_split, so it splits in two).
 */
static void lodge_flush_threshold(void)
{
	void *img = ut_img_alloc(SZ);
	struct pmidx_pool *pool = ut_pool_new(img, SZ);
	struct pmidx_index *idx;
	struct lodge_lin *x;
	struct lodge_pcpu s;
	u8 k[8], v[8] = { 7 };
	u64 i;

	set_params(&defaults);
	idx = create(pool, "f");
	for (i = 0; i < 28; i++)
		UT_EQ(idx->ops->put(idx, k, be_key(i, k), v, 8, 0), 0);
	s = lsum(idx);
	x = ((struct lodge *)idx->priv)->top;
	UT_EQ(s.flushes, 0);
	UT_EQ(x->nidx, 1);
	UT_EQ(x->nbuf, 28);
	/* updates of buffered keys take no slot */
	UT_EQ(idx->ops->put(idx, k, be_key(5, k), v, 8, 0), 0);
	UT_EQ(lsum(idx).flushes, 0);
	UT_EQ(idx->ops->put(idx, k, be_key(28, k), v, 8, 0), 0);
	s = lsum(idx);
	x = ((struct lodge *)idx->priv)->top;
	UT_EQ(s.flushes, 1);
	UT_EQ(s.leaf_splits, 1);
	UT_EQ(x->nidx, 2);
	UT_EQ(x->nbuf, 1);
	UT_EQ(x->leaf_count[0] + x->leaf_count[1], 28);
	UT_ASSERT(x->leaf_count[0] <= 26 && x->leaf_count[1] <= 26);
	pmidx_pool_close(pool);
	ut_img_free(img, SZ);
}

/*
 * A node is full at cap = nidx + nbuf before its put flushes, and a crash
 * attach must take it back as it was (found by review): recovery wanted
 * one slot to spare, so a one-leaf node filled to LODGE_CAP_MAX was
 * refused, and with a spare slot each crash of a full node grew its cap
 * by one until it got there. Checked: a node of 250 slots holding 249
 * buffered writes comes back with every key; a default node full at a
 * crash keeps its cap, and the next put flushes it.
 */
/*
 * One node of index "f" filled to nidx + nbuf = cap with @slots slots
 * (@n 8-byte keys, none flushed), then a power cut: @img becomes the
 * crash image, recovered. Return: the index in the recovered @pool.
 */
static struct pmidx_index *full_node_crash(void **img, struct pmidx_pool **pool,
					   unsigned int slots, u64 *n)
{
	struct lparams p = defaults;
	struct pmidx_index *idx;
	struct lodge_lin *x;
	u8 k[8], v[8] = { 7 };
	void *crash;

	p.slots = slots;
	set_params(&p);
	*img = ut_img_alloc(SZ);
	*pool = ut_pool_new(*img, SZ);
	idx = create(*pool, "f");
	for (*n = 0; *n < slots - 1; (*n)++)
		UT_EQ(idx->ops->put(idx, k, be_key(*n, k), v, 8, 0), 0);
	x = ((struct lodge *)idx->priv)->top;
	UT_EQ(x->nidx + x->nbuf, slots);
	UT_EQ(lsum(idx).flushes, 0);
	crash = ut_img_dup(*img, SZ);
	pmidx_pool_close(*pool);
	ut_img_free(*img, SZ);
	*img = crash;
	*pool = ut_pool_open(*img, SZ);
	UT_ASSERT((*pool)->flags & PMIDX_POOL_F_RECOVERED);
	idx = pmidx_index_lookup(*pool, "f");
	UT_ASSERT(idx && idx->opened);
	return idx;
}

/*
 * A crash attach keeps a node as large as it was (up to LODGE_CAP_MAX
 * slots), whatever lodge_node_slots says now. Its flush with atomic
 * memory gone runs on the flush memory (struct lodge_fmem), which must
 * hold a node of any size (it was sized by the parameter: a heap
 * overflow, found by review) and, the leaf splitting into more pieces
 * than it has fences at first, get more and run again.
 */
static void lodge_fmem_big_node(void)
{
	struct lparams p = defaults;
	void *img = ut_img_alloc(SZ), *crash;
	struct pmidx_pool *pool;
	struct pmidx_index *idx;
	struct lodge_lin *x;
	u8 k[8], v[8] = { 7 }, got[8];
	const char *why = NULL;
	u64 n, i, keys;
	u32 vl;

	p.slots = LODGE_CAP_MAX;
	set_params(&p);
	pool = ut_pool_new(img, SZ);
	idx = create(pool, "f");
	for (n = 0; n < LODGE_CAP_MAX - 1; n++)
		UT_EQ(idx->ops->put(idx, k, be_key(n, k), v, 8, 0), 0);
	crash = ut_img_dup(img, SZ);
	pmidx_pool_close(pool);
	ut_img_free(img, SZ);
	p = defaults;
	p.t_split = 2;		/* a flush of the node: a piece per 2 keys */
	set_params(&p);
	pool = ut_pool_open(crash, SZ);
	idx = pmidx_index_lookup(pool, "f");
	UT_ASSERT(idx && idx->opened);
	x = ((struct lodge *)idx->priv)->top;
	UT_EQ(x->nbuf, LODGE_CAP_MAX - 1);
	UT_ASSERT(((struct lodge *)idx->priv)->cap < x->nbuf);
	shim_fail_atomic(true);
	UT_EQ(idx->ops->put(idx, k, be_key(n, k), v, 8, 0), 0);
	shim_fail_atomic(false);
	UT_ASSERT(lsum(idx).flushes);
	for (i = 0; i <= n; i++) {
		vl = sizeof(got);
		UT_EQ(idx->ops->get(idx, k, be_key(i, k), got, &vl), 0);
		UT_ASSERT(vl == 8 && !memcmp(got, v, 8));
	}
	UT_ASSERT_MSG(!idx->ops->check(idx, &keys, &why), "check: %s", why);
	UT_EQ(keys, n + 1);
	pmidx_pool_close(pool);
	ut_img_free(crash, SZ);
	set_params(&defaults);
}

static void lodge_full_node_crash(void)
{
	struct pmidx_pool *pool;
	struct pmidx_index *idx;
	struct lodge_lin *x;
	u8 k[8], v[8] = { 7 }, got[8];
	void *img;
	u64 i, n;
	u32 len;

	idx = full_node_crash(&img, &pool, LODGE_CAP_MAX, &n);
	for (i = 0; i < n; i++) {
		len = sizeof(got);
		UT_EQ(idx->ops->get(idx, k, be_key(i, k), got, &len), 0);
		UT_EQ(len, 8);
	}
	pmidx_pool_close(pool);
	ut_img_free(img, SZ);

	/* a default node full at the crash keeps its cap */
	idx = full_node_crash(&img, &pool, defaults.slots, &n);
	x = ((struct lodge *)idx->priv)->top;
	UT_EQ(x->cap, defaults.slots);
	UT_EQ(x->nidx + x->nbuf, defaults.slots);
	UT_EQ(idx->ops->put(idx, k, be_key(n, k), v, 8, 0), 0);
	UT_EQ(lsum(idx).flushes, 1);
	pmidx_pool_close(pool);
	ut_img_free(img, SZ);
	set_params(&defaults);
}

#define NSPLIT	6000

/* node splits: multiple (hot sequential inserts) and capped; then off */
static void lodge_splits(void)
{
	void *img = ut_img_alloc(SZ);
	struct pmidx_pool *pool = ut_pool_new(img, SZ);
	struct lparams p = small;
	struct pmidx_index *idx;
	u64 *state = calloc(NSPLIT, sizeof(*state)), i, j;
	struct lodge_pcpu s;

	p.log_max = 2048;
	set_params(&p);
	idx = create(pool, "s");
	/*
	 * Formula 1 compares the counter's intervals between splits: slow
	 * ascending inserts (each with 3 updates elsewhere), then a burst
	 * of ascending inserts alone.
	 */
	for (i = 0; i < NSPLIT; i++) {
		UT_EQ(ekv_put(idx, i, i), 0);
		state[i] = i + 1;
		for (j = 0; i < NSPLIT / 2 && j < 3; j++) {
			u64 o = (i * 7 + j * 13) % (i + 1);

			UT_EQ(ekv_put(idx, o, o + 1), 0);
			state[o] = o + 2;
		}
	}
	ekv_verify(idx, state, NSPLIT, "after sequential inserts");
	s = lsum(idx);
	ut_note("lodge: %llu leaf splits, %llu node splits: 2-way %llu, more %llu, capped %llu (multi on)",
		(unsigned long long)s.leaf_splits, (unsigned long long)s.lin_splits,
		(unsigned long long)s.pieces[2], (unsigned long long)multi_pieces(&s),
		(unsigned long long)s.capped);
	UT_ASSERT(s.leaf_splits > 0);
	UT_ASSERT(multi_pieces(&s) > 0);
	UT_ASSERT(s.capped > 0);
	UT_ASSERT(((struct lodge *)idx->priv)->height >= 2);
	reattach_crash_drop(&img, &pool, state, NSPLIT, "s");

	/* off: every split is 2-way, random order this time */
	p.multi = false;
	set_params(&p);
	memset(state, 0, NSPLIT * sizeof(*state));
	idx = create(pool, "s");
	for (j = 0; j < NSPLIT; j++) {
		i = (j * 7919) % NSPLIT;
		UT_EQ(ekv_put(idx, i, i + 3), 0);
		state[i] = i + 4;
	}
	s = lsum(idx);
	ut_note("lodge: %llu node splits, all 2-way (multi off)",
		(unsigned long long)s.lin_splits);
	UT_ASSERT(s.pieces[2] > 0);
	UT_EQ(multi_pieces(&s), 0);
	ekv_verify(idx, state, NSPLIT, "multi off");
	reattach_crash_drop(&img, &pool, state, NSPLIT, "s");
	pmidx_pool_close(pool);
	ut_img_free(img, SZ);
	free(state);
	set_params(&defaults);
}

#define NLOG	3000

/*
 * Random updates: logs are freed as their buffered records are flushed
 * or superseded, most not the oldest live one; a crash image must then
 * come back from the leaves' ts and the logs that are left.
 */
static void lodge_log_reclaim(void)
{
	void *img = ut_img_alloc(SZ);
	struct pmidx_pool *pool = ut_pool_new(img, SZ);
	struct lparams p = small;
	struct pmidx_index *idx;
	u64 *state = calloc(NLOG, sizeof(*state)), i, j;
	struct lodge_pcpu s;
	struct rnd_state rs;

	p.log_max = 2048;
	set_params(&p);
	prandom_seed_state(&rs, ut_seed);
	idx = create(pool, "l");
	for (j = 0; j < 4 * NLOG; j++) {
		u64 v = prandom_u32_state(&rs) % 1000;

		i = prandom_u32_state(&rs) % NLOG;
		UT_EQ(ekv_put(idx, i, v), 0);
		state[i] = v + 1;
	}
	s = lsum(idx);
	ut_note("lodge: %llu logs freed, %llu out of order, %llu live (log_kb 1)",
		(unsigned long long)s.log_frees,
		(unsigned long long)s.log_frees_ooo,
		(unsigned long long)((struct lodge *)idx->priv)->nlogs);
	UT_ASSERT(s.log_frees > 100);
	UT_ASSERT(s.log_frees_ooo > 0);
	ekv_verify(idx, state, NLOG, "after updates");
	reattach_crash_drop(&img, &pool, state, NLOG, "l");
	pmidx_pool_close(pool);
	ut_img_free(img, SZ);
	free(state);
	set_params(&defaults);
}

#define NDEL	4000

/* deletes empty leaves: unlinked from their left neighbour and freed */
static void lodge_deletes(void)
{
	void *img = ut_img_alloc(SZ);
	struct pmidx_pool *pool = ut_pool_new(img, SZ);
	struct lparams p = small;
	struct pmidx_index *idx;
	u64 *state = calloc(NDEL, sizeof(*state)), i, leaves;
	struct lodge *t;
	struct lodge_pcpu s;

	p.log_max = 2048;
	set_params(&p);
	idx = create(pool, "d");
	t = idx->priv;
	for (i = 0; i < NDEL; i++) {
		UT_EQ(ekv_put(idx, i, i), 0);
		state[i] = i + 1;
	}
	leaves = atomic64_read(&t->nleaves);
	UT_EQ(ekv_del(idx, NDEL + 7), -ENOENT);
	for (i = 300; i < NDEL - 300; i++) {
		UT_EQ(ekv_del(idx, i), 0);
		state[i] = 0;
	}
	UT_EQ(ekv_del(idx, 500), -ENOENT);
	ekv_verify(idx, state, NDEL, "after deletes");
	/* the buffered tombstones reach their leaves */
	for (i = NDEL; i < 2 * NDEL && lsum(idx).merges < leaves / 2; i++) {
		UT_EQ(ekv_put(idx, 0, i), 0);
		state[0] = i + 1;
	}
	s = lsum(idx);
	ut_note("lodge: %llu leaves, %llu unlinked after deleting %u keys; %llu left",
		(unsigned long long)leaves, (unsigned long long)s.merges,
		NDEL - 600, (unsigned long long)atomic64_read(&t->nleaves));
	UT_ASSERT(s.merges > 0);
	UT_ASSERT(atomic64_read(&t->nleaves) < leaves);
	ekv_verify(idx, state, NDEL, "after unlinks");
	reattach_crash_drop(&img, &pool, state, NDEL, "d");
	pmidx_pool_close(pool);
	ut_img_free(img, SZ);
	free(state);
	set_params(&defaults);
}

#define NDRAIN	2000

/*
 * A cold node pins its log (the paper's counts never reach zero there);
 * above lodge_log_max live logs a writer flushes the oldest half.
 */
static void lodge_drain(void)
{
	void *img = ut_img_alloc(SZ);
	struct pmidx_pool *pool = ut_pool_new(img, SZ);
	struct lparams p = small;
	struct pmidx_index *idx;
	u64 *state = calloc(NDRAIN, sizeof(*state)), i, j, most = 0;
	struct lodge *t;
	struct lodge_pcpu s;

	p.log_max = 8;
	set_params(&p);
	idx = create(pool, "r");
	t = idx->priv;
	for (i = 0; i < NDRAIN; i++) {
		UT_EQ(ekv_put(idx, i, i), 0);
		state[i] = i + 1;
	}
	/* one write per node-sized run of cold keys, then hot updates */
	for (i = 0; i < NDRAIN / 2; i += 40) {
		UT_EQ(ekv_put(idx, i, i + 5), 0);
		state[i] = i + 6;
	}
	for (j = 0; j < 20000; j++) {
		i = NDRAIN / 2 + j % 64;
		UT_EQ(ekv_put(idx, i, j), 0);
		state[i] = j + 1;
		most = max_t(u64, most, t->nlogs);
	}
	s = lsum(idx);
	ut_note("lodge: %llu drains, at most %llu live logs (lodge_log_max %u)",
		(unsigned long long)s.drains, (unsigned long long)most,
		p.log_max);
	UT_ASSERT(s.drains > 0);
	UT_ASSERT(most <= 2 * p.log_max + 4);
	ekv_verify(idx, state, NDRAIN, "after drains");
	reattach_crash_drop(&img, &pool, state, NDRAIN, "r");
	pmidx_pool_close(pool);
	ut_img_free(img, SZ);
	free(state);
	set_params(&defaults);
}

/* ---- threads ------------------------------------------------------------- */

#define TKEYS	3000
#define TROUNDS	1500

/* CHECKs done so far: writers go on until some ran beside them */
static _Atomic unsigned long nchecks;
#define TCHECKS	20

/* key n is stable (value n) for even n; writers churn the odd ones */
static void *writer(void *p)
{
	struct ekv_thread *a = p;
	struct rnd_state rs;
	u8 k[256], v[300];
	unsigned int r;

	prandom_seed_state(&rs, ut_seed + a->id);
	for (r = 0; r < TROUNDS || (nchecks < TCHECKS && r < 100 * TROUNDS);
	     r++) {
		u64 n = (prandom_u32_state(&rs) % (TKEYS / 2)) * 2 + 1;
		u32 kl = ekv_key(n, k), vl = prandom_u32_state(&rs) % 300;
		int ret;

		memset(v, r, vl);
		if (prandom_u32_state(&rs) % 3) {
			a->errors += !!a->idx->ops->put(a->idx, k, kl, v, vl, 0);
		} else {
			ret = a->idx->ops->del(a->idx, k, kl, 0);
			a->errors += ret && ret != -ENOENT;
		}
	}
	return NULL;
}

/* CHECK under writers: 0 or -EAGAIN, never -EUCLEAN */
static void *checker(void *p)
{
	struct ekv_thread *a = p;

	while (!*a->stop) {
		const char *why = NULL;
		u64 keys;
		int ret = a->idx->ops->check(a->idx, &keys, &why);

		a->errors += ret && ret != -EAGAIN;
		a->checks++;
		nchecks++;
		if (ret && ret != -EAGAIN)
			fprintf(stderr, "# check: %d %s\n", ret, why);
	}
	return NULL;
}

#define NTH	8

static void lodge_threads(void)
{
	void *img = ut_img_alloc(SZ);
	struct pmidx_pool *pool = ut_pool_new(img, SZ);
	struct lparams p = small;
	struct ekv_thread args[NTH];
	pthread_t th[NTH];
	_Atomic int stop = 0;
	struct pmidx_index *idx;
	const char *why = NULL;
	u64 keys;
	int i;

	p.log_max = 32;		/* drains under the writers too */
	set_params(&p);
	nchecks = 0;
	idx = create(pool, "t");
	ekv_put_stable(idx, TKEYS);
	/* 0-3 writers, 4-5 readers, 6 scanner, 7 checker */
	for (i = 0; i < NTH; i++) {
		args[i] = (struct ekv_thread){ .idx = idx, .id = i,
					       .keys = TKEYS, .stop = &stop };
		UT_EQ(pthread_create(&th[i], NULL,
				     i < 4 ? writer : i < 6 ? ekv_stable_reader :
				     i < 7 ? ekv_stable_scanner : checker,
				     &args[i]), 0);
	}
	for (i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	stop = 1;
	for (i = 4; i < NTH; i++)
		pthread_join(th[i], NULL);
	for (i = 0; i < NTH; i++)
		UT_ASSERT_MSG(!args[i].errors, "thread %d: %lu errors", i,
			      args[i].errors);
	ut_note("lodge: %llu node splits, %llu drains, %lu checks under 4 writers",
		(unsigned long long)lsum(idx).lin_splits,
		(unsigned long long)lsum(idx).drains, args[7].checks);
	UT_ASSERT(args[7].checks >= 2);
	UT_ASSERT_MSG(!idx->ops->check(idx, &keys, &why), "check: %s", why);
	UT_EQ(ekv_scan_all(idx, 0), keys);
	pmidx_pool_close(pool);
	ut_img_free(img, SZ);
	set_params(&defaults);
}

/* ---- parallel recovery --------------------------------------------------- */

#define NPAR	12000

static void dmix(u64 *h, const void *p, size_t n)
{
	const u8 *b = p;

	while (n--)
		*h = (*h ^ *b++) * 0x100000001b3ULL;	/* FNV-1a */
}

static void dword(u64 *h, u64 w)
{
	dmix(h, &w, sizeof(w));
}

static void dkey(u64 *h, const struct lodge_key *k)
{
	dword(h, k ? k->len : ~0ULL);
	if (k)
		dmix(h, k->b, k->len);
}

static int digest_lin(struct lodge *t, struct lodge_lin *x, void *ctx)
{
	u64 *h = ctx;
	unsigned int i;

	dword(h, x->cap);
	dword(h, x->nidx);
	dword(h, x->nbuf);
	dkey(h, x->lo);
	dkey(h, x->hi);
	for (i = 0; i < x->nidx + x->nbuf; i++) {
		const struct lodge_slot *b = &x->slot[i];

		dkey(h, b->key);
		dword(h, b->w);
		dword(h, b->rec);
		dword(h, b->seq);
		dword(h, b->vlen);
		dword(h, b->flags);
		dword(h, x->leaf_count[i]);
		dword(h, i < x->nidx ? 0 : x->buf_ver[i]->off);
	}
	return 0;
}

/*
 * What recovery rebuilt, as a later operation would find it: the nodes
 * in key order (fences, buffered writes, the log of each), the logs in
 * list order with their valid counts, the counters.
 */
static u64 digest(struct pmidx_index *idx)
{
	struct lodge *t = idx->priv;
	struct lodge_vlog *v;
	u64 h = 0xcbf29ce484222325ULL;

	percpu_down_read(&t->tree);
	UT_EQ(lodge_walk_lins(t, digest_lin, &h), 0);
	percpu_up_read(&t->tree);
	list_for_each_entry(v, &t->logs, node) {
		dword(&h, v->off);
		dword(&h, v->version);
		dword(&h, v->size);
		dword(&h, v->used);
		dword(&h, v->slot);
		dword(&h, atomic_read(&v->valid));
	}
	list_for_each_entry(v, &t->dead, node)
		dword(&h, v->off);
	dword(&h, t->nlogs);
	dword(&h, t->replayed);
	dword(&h, atomic64_read(&t->seq));
	dword(&h, t->next_ver);
	dword(&h, atomic64_read(&t->nleaves));
	dword(&h, atomic64_read(&t->nlins));
	dword(&h, atomic64_read(&t->ninodes));
	dword(&h, t->height);
	dword(&h, atomic64_read(&t->log_bytes_live));
	dword(&h, lodge_sum_keys(t));
	return h;
}

/*
 * The same crash image (random updates and deletes of keys of 3..100
 * bytes, 1 KiB logs, no drain: hundreds of logs, most records
 * superseded or flushed, hundreds still buffered) recovered with 1 worker
 * and with several: the same nodes, buffers, logs, counts and pool
 * bytes, whichever worker finished first.
 */
static void lodge_recovery_workers(void)
{
	static const unsigned int nth[] = { 1, 2, 3, 8, 0 };
	void *img = ut_img_alloc(SZ), *crash, *ref_img = NULL;
	struct pmidx_pool *pool = ut_pool_new(img, SZ), *ref = NULL, *rec;
	struct lparams p = small;
	struct pmidx_index *idx;
	u64 *state = calloc(NPAR, sizeof(*state)), i, j, v, want = 0;
	struct rnd_state rs;
	struct lodge *t;
	unsigned int k;

	p.log_max = 4096;
	set_params(&p);
	prandom_seed_state(&rs, ut_seed);
	idx = create(pool, "w");
	for (j = 0; j < 4 * NPAR; j++) {
		i = prandom_u32_state(&rs) % NPAR;
		v = prandom_u32_state(&rs) % 1000;
		if (j % 8 == 7 && state[i]) {
			UT_EQ(ekv_del(idx, i), 0);
			state[i] = 0;
		} else {
			UT_EQ(ekv_put(idx, i, v), 0);
			state[i] = v + 1;
		}
	}
	crash = ut_img_dup(img, SZ);
	for (k = 0; k < ARRAY_SIZE(nth); k++) {
		void *try = ut_img_dup(crash, SZ);
		struct pmidx_index *ri;

		p.rec_threads = nth[k];
		set_params(&p);
		rec = ut_pool_open(try, SZ);
		UT_ASSERT(rec->flags & PMIDX_POOL_F_RECOVERED);
		ri = pmidx_index_lookup(rec, "w");
		UT_ASSERT(ri && ri->opened);
		t = ri->priv;
		ut_note("lodge: %u recovery threads (asked %u): %u logs kept, %llu records replayed, %lld leaves",
			t->recovery_threads, nth[k], t->nlogs,
			(unsigned long long)t->replayed,
			(long long)atomic64_read(&t->nleaves));
		if (!k) {
			struct lodge_vlog *v;
			u64 ver = 0;

			UT_EQ(t->recovery_threads, 1);
			UT_ASSERT(t->nlogs > 100 && t->replayed > 300);
			/* listed by version, as a drain's cut expects */
			list_for_each_entry(v, &t->logs, node) {
				UT_ASSERT(v->version > ver);
				ver = v->version;
			}
			want = digest(ri);
			ref = rec;
			ref_img = try;
			continue;
		}
		/* every step is split when asked, by 16 CPUs otherwise */
		UT_ASSERT(t->recovery_threads > 1);
		UT_EQ(digest(ri), want);
		UT_ASSERT_MSG(!memcmp(try, ref_img, SZ),
			      "pool bytes differ after recovery with %u workers",
			      nth[k]);
		ekv_verify(ri, state, NPAR, "after parallel recovery");
		pmidx_pool_close(rec);
		ut_img_free(try, SZ);
	}
	ekv_verify(pmidx_index_lookup(ref, "w"), state, NPAR,
		   "after serial recovery");
	pmidx_pool_close(ref);
	ut_img_free(ref_img, SZ);
	ut_img_free(crash, SZ);
	pmidx_pool_close(pool);
	ut_img_free(img, SZ);
	free(state);
	set_params(&defaults);
}

/* ---- the crash simulator ------------------------------------------------- */

#define CKEYS	160

struct wl_arg {
	u64		seed;
	unsigned int	ops;
	/* the workload's counters before and after its re-attach */
	struct lodge_pcpu s0, s;
};

static int wl_lodge(struct crashsim *cs, void *img, u64 size, void *arg)
{
	struct wl_arg *a = arg;
	struct pmidx_pool *pool;
	struct pmidx_index *idx;
	const char *why = NULL;
	struct rnd_state rs;
	unsigned int op, i;
	u64 sweep = 0;
	u8 k[256];
	int ret;

	prandom_seed_state(&rs, a->seed);
	if (pmidx_pool_format(img, size, true, &why))
		return -EIO;
	pool = pmidx_pool_open(img, size, false, &why);
	if (IS_ERR(pool))
		return PTR_ERR(pool);
	op = crashsim_op_begin(cs, CRASHSIM_OP_NOTE, "create", NULL, 0, 0);
	if (pmidx_index_create(pool, "kv", PMIDX_ENGINE_LODGE, &idx, &why))
		return -EIO;
	crashsim_op_ack(cs, op);
	for (i = 0; i < a->ops; i++) {
		/*
		 * Inserts first (splits), then mostly deletes sweeping the
		 * keys in order, so that whole leaves empty (unlinks).
		 */
		bool d = prandom_u32_state(&rs) % 8 < (i < a->ops / 2 ? 1 : 5);
		u64 n = prandom_u32_state(&rs) % CKEYS;
		u64 v = prandom_u32_state(&rs) % 1000;
		u32 kl;

		if (d && i >= a->ops / 2)
			n = sweep++ % CKEYS;
		kl = ekv_key(n, k);

		op = crashsim_op_begin(cs, d ? CRASHSIM_OP_DEL : CRASHSIM_OP_PUT,
				       "kv", k, kl, v);
		ret = d ? ekv_del(idx, n) : ekv_put(idx, n, v);
		if (ret && !(d && ret == -ENOENT))
			return ret;
		crashsim_op_ack(cs, op);
		if (i == a->ops / 3) {		/* detach and attach */
			a->s0 = lsum(idx);
			pmidx_pool_close(pool);
			pool = pmidx_pool_open(img, size, false, &why);
			if (IS_ERR(pool))
				return PTR_ERR(pool);
			idx = pmidx_index_lookup(pool, "kv");
			if (!idx || !idx->opened)
				return -EIO;
		}
	}
	a->s = lsum(idx);
	a->s.leaf_writes += a->s0.leaf_writes;
	a->s.leaf_splits += a->s0.leaf_splits;
	a->s.lin_splits += a->s0.lin_splits;
	a->s.merges += a->s0.merges;
	a->s.log_frees += a->s0.log_frees;
	a->s.log_frees_ooo += a->s0.log_frees_ooo;
	a->s.drains += a->s0.drains;
	pmidx_pool_close(pool);
	return 0;
}

static int check_image(struct crashsim *cs, const struct crashsim_point *pt,
		       struct pmidx_pool *pool, int err, const char *why, void *arg)
{
	struct pmidx_index *idx;
	struct crashsim_expect e;
	u64 n, keys, live = 0;

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
	for (n = 0; n < CKEYS; n++) {
		u8 k[256];
		u32 kl = ekv_key(n, k), gl = sizeof(cgbuf);
		int ret = idx->ops->get(idx, k, kl, cgbuf, &gl);
		unsigned int x;
		u64 v = 0;

		if (ret && ret != -ENOENT) {
			crashsim_fail(cs, "key %llu: get %d", (unsigned long long)n, ret);
			continue;
		}
		crashsim_expect(cs, k, kl, &e);
		for (x = 0; !ret && x < e.n; x++) {
			u32 vl = ekv_val(e.value[x], cvbuf);

			if (e.present[x] && gl == vl && !memcmp(cgbuf, cvbuf, vl))
				v = e.value[x];
		}
		if (!crashsim_expect_ok(&e, !ret, v))
			crashsim_fail(cs, "key %llu: %s, expected %s (of %u outcomes)",
				      (unsigned long long)n,
				      !ret ? "present with another value" : "absent",
				      e.present[0] ? "present" : "absent", e.n);
		live += !ret;
	}
	if (idx->ops->check(idx, &keys, &why))
		crashsim_fail(cs, "engine check: %s", why);
	else if (keys != live)
		crashsim_fail(cs, "check counts %llu keys, get %llu",
			      (unsigned long long)keys, (unsigned long long)live);
	if (ekv_scan_all(idx, 0) != live)
		crashsim_fail(cs, "scan disagrees with get");
	/*
	 * Writes after recovery: the rebuilt buffers and counts hold. Not
	 * on the clean attach, whose object count the simulator compares
	 * with a trace after the detach (which frees the current logs).
	 */
	for (n = 0; (pool->flags & PMIDX_POOL_F_RECOVERED) && n < CKEYS; n += 5) {
		u8 k[256];
		u32 kl = ekv_key(n, k), gl = sizeof(cgbuf);

		if (!idx->ops->get(idx, k, kl, cgbuf, &gl) &&
		    idx->ops->put(idx, k, kl, cgbuf, gl, 0))
			crashsim_fail(cs, "rewrite of key %llu failed",
				      (unsigned long long)n);
	}
	if (idx->ops->check(idx, &keys, &why) || keys != live)
		crashsim_fail(cs, "after rewrites: check %s, %llu keys", why,
			      (unsigned long long)keys);
	crashsim_check_pool(cs, pool, -1);
	return 0;
}

static unsigned int samples = 100000;	/* every point unless told */

static void run(const char *name, unsigned int ops, const struct lparams *p)
{
	struct wl_arg arg = { .seed = ut_seed, .ops = ops };
	struct crashsim_workload wl = {
		.name = name, .run = wl_lodge, .check = check_image, .arg = &arg,
	};
	struct crashsim_config cfg = {
		.pool_size = 32ULL << 20, .seed = ut_seed, .variants = 2,
		.samples = samples, .exhaustive_max = samples,
	};
	struct crashsim_result res;

	crashsim_config_env(&cfg);
	set_params(p);
	UT_EQ(crashsim_run(&cfg, &wl, &res), 0);
	set_params(&defaults);
	crashsim_print_result(name, &cfg, &res);
	printf("# %s: %llu leaf writes, %llu leaf splits, %llu node splits, %llu unlinks, %llu logs freed (%llu out of order), %llu drains\n",
	       name, (unsigned long long)arg.s.leaf_writes,
	       (unsigned long long)arg.s.leaf_splits,
	       (unsigned long long)arg.s.lin_splits,
	       (unsigned long long)arg.s.merges,
	       (unsigned long long)arg.s.log_frees,
	       (unsigned long long)arg.s.log_frees_ooo,
	       (unsigned long long)arg.s.drains);
	UT_CRASH_OK(res, true);
	/* long enough that leaves, blobs and logs were freed and reused */
	if (cfg.only_point < 0) {
		UT_ASSERT(arg.s.merges > 0 && arg.s.log_frees > 0);
		UT_ASSERT(arg.s.leaf_splits > 0 && arg.s.lin_splits > 0);
	}
}

/* small nodes, leaves and logs: every structure change in few points */
static void lodge_crash_smo(void)
{
	run("lodge_crash_smo", 700, &small);
}

/* the drain and out-of-order frees under crashes */
static void lodge_crash_drain(void)
{
	struct lparams p = small;

	p.log_max = 3;
	p.slots = 10;
	/* and every recovery step split, whatever the image's size */
	p.rec_threads = 3;
	run("lodge_crash_drain", 500, &p);
}

static const struct ut_test tests[] = {
	UT_TEST(lodge_flush_threshold),
	UT_TEST(lodge_full_node_crash),
	UT_TEST(lodge_fmem_big_node),
	UT_TEST(lodge_splits),
	UT_TEST(lodge_log_reclaim),
	UT_TEST(lodge_deletes),
	UT_TEST(lodge_drain),
	UT_TEST(lodge_threads),
	UT_TEST(lodge_recovery_workers),
	UT_TEST(lodge_crash_smo),
	UT_TEST(lodge_crash_drain),
};

int main(int argc, char **argv)
{
	const char *e = getenv("PMIDX_CRASH_SAMPLES");

	if (e)
		samples = strtoul(e, NULL, 0);
	if (crashsim_parse_model(&argc, argv))
		return 2;
	ekv_use(&kv);
	return ut_main(argc, argv, "lodge-crash", tests, ARRAY_SIZE(tests));
}
