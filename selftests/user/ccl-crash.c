// SPDX-License-Identifier: GPL-2.0
/*
 * The ccl engine under the ADR crash simulator (tools/testing/crashsim.h):
 * puts and deletes of mixed-size keys and values through the real engine
 * (buffer flushes, splits, merges, write-conservative logging), log GCs
 * run synchronously at chosen points (locality-aware and naive), detach
 * and re-attach in between. At each crash point every crash image must
 * attach (recovery: rebuild + log replay), show every acknowledged op
 * with its latest value, nothing unacknowledged, scan in order, and pass
 * the engine's checker.
 *
 * Also: writers, readers and a scanner on threads with the GC running
 * all the time; corrupted images (refused or usable, never a crash);
 * the reset of leaf timestamps.
 *
 * Run: make -f tools/testing/user.mk USER_ENGINE_CRASH=1 check-user-engines
 * (or build/user/asan/ccl-crash [--only NAME] after building it).
 * Replay one failure: PMIDX_CRASH_POINT=P PMIDX_CRASH_VARIANT=V
 *   ccl-crash --seed S --only NAME
 */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>
#include <linux/prandom.h>
#include <shim/shim.h>
#include "crashsim.h"
#include "engine-kv.h"
#include "harness.h"
#include "engines/ccl/ccl.h"

#define NKEYS		90
#define VMAX		600

struct wl_arg {
	u64		seed;
	unsigned int	ops, nbatch;
	unsigned int	rec_nbatch;	/* N_batch of the crash images' attach */
	bool		naive;
};

static unsigned long ovf_images;	/* images with recovered overflow */

/* key n: 2..40 bytes, unique by its first 2; values of 0..599 bytes */
static const u8 klens[] = { 8, 8, 3, 12, 8, 40, 8, 2 };
static const u32 vlens[] = { 8, 8, 0, 5, 16, 8, 100, 8, 9, 599 };

static const struct ekv_scheme kv = {
	EKV_LENS(klens, vlens), .prefix = 2,
};

static struct pmidx_index *open_c(struct crashsim *cs, void *img, u64 size,
				  struct pmidx_pool **pool, struct wl_arg *a)
{
	const char *why = NULL;

	ccl_nbatch = a->nbatch;
	*pool = pmidx_pool_open(img, size, false, &why);
	ccl_nbatch = a->rec_nbatch;
	if (IS_ERR(*pool)) {
		printf("# workload: attach failed: %ld (%s)\n", PTR_ERR(*pool),
		       why);
		return NULL;
	}
	return pmidx_index_lookup(*pool, "c");
}

static int wl_ccl(struct crashsim *cs, void *img, u64 size, void *arg)
{
	struct wl_arg *a = arg;
	struct pmidx_index *idx;
	struct pmidx_pool *pool;
	const char *why = NULL;
	struct rnd_state rs;
	u8 k[64], v[VMAX];
	unsigned int i, op;
	u64 id = 1;
	u32 kl, vl;
	int ret;

	ccl_nbatch = a->nbatch;
	ccl_log_chunk_kb = 256;
	ccl_th_log = 1000000;		/* GC only when the workload says */
	ccl_gc_interval_ms = 1U << 30;
	ccl_gc_naive = a->naive;
	prandom_seed_state(&rs, a->seed);

	op = crashsim_op_begin(cs, CRASHSIM_OP_NOTE, "format", NULL, 0, 0);
	if (pmidx_pool_format(img, size, true, &why))
		return -EIO;
	crashsim_op_ack(cs, op);
	pool = pmidx_pool_open(img, size, false, &why);
	if (IS_ERR(pool))
		return -EIO;
	op = crashsim_op_begin(cs, CRASHSIM_OP_NOTE, "create", NULL, 0, 0);
	if (pmidx_index_create(pool, "c", PMIDX_ENGINE_CCL, &idx, &why))
		return -EIO;
	crashsim_op_ack(cs, op);
	/* crash images recover with this one (more KVs than slots: overflow) */
	ccl_nbatch = a->rec_nbatch;

	for (i = 0; i < a->ops; i++) {
		u32 r = prandom_u32_state(&rs);
		unsigned int n = (r >> 8) % NKEYS;

		if (r % 151 == 0) {		/* detach / attach */
			pmidx_pool_close(pool);
			idx = open_c(cs, img, size, &pool, a);
			if (!idx)
				return -EIO;
			continue;
		}
		if (r % 37 == 0) {		/* a log collection */
			if (ccl_gc_run(idx->priv))
				return -EIO;
			continue;
		}
		kl = ekv_key(n, k);
		if (r % 10 < 3 + (i > a->ops / 2 ? 4 : 0)) {
			op = crashsim_op_begin(cs, CRASHSIM_OP_DEL, "del", k, kl, 0);
			ret = idx->ops->del(idx, k, kl, 0);
			if (ret && ret != -ENOENT)
				return ret;
		} else {
			vl = ekv_val(id, v);
			op = crashsim_op_begin(cs, CRASHSIM_OP_PUT, "put", k, kl, id);
			ret = idx->ops->put(idx, k, kl, v, vl, 0);
			id++;
			if (ret)
				return ret;
		}
		crashsim_op_ack(cs, op);
	}
	pmidx_pool_close(pool);
	return 0;
}

struct scan_chk {
	struct pmidx_scan_sink	sink;
	struct crashsim		*cs;
	u8			last[256];
	u32			lastl;
	unsigned int		n;
};

static int scan_emit(struct pmidx_scan_sink *sink, const u8 *key, u32 klen,
		     const u8 *val, u32 vlen)
{
	struct scan_chk *sc = container_of(sink, struct scan_chk, sink);
	struct crashsim_expect e;
	u8 v[VMAX];
	unsigned int j;
	bool ok = false;

	if (sc->n && pmidx_key_cmp(sc->last, sc->lastl, key, klen) >= 0)
		crashsim_fail(sc->cs, "scan not in ascending order");
	memcpy(sc->last, key, klen);
	sc->lastl = klen;
	sc->n++;
	crashsim_expect(sc->cs, key, klen, &e);
	for (j = 0; j < e.n; j++)
		if (e.present[j] && ekv_val(e.value[j], v) == vlen &&
		    !memcmp(v, val, vlen))
			ok = true;
	if (!ok)
		crashsim_fail(sc->cs, "scan returned key %.*s with an unacknowledged value",
			      (int)klen, key);
	return 0;
}

static int ccl_check_image(struct crashsim *cs, const struct crashsim_point *pt,
			   struct pmidx_pool *pool, int err, const char *why,
			   void *arg)
{
	struct scan_chk sc = { .sink.emit = scan_emit, .cs = cs };
	struct crashsim_expect e;
	struct pmidx_index *idx;
	u8 v[VMAX], want[VMAX];
	const char *cwhy = NULL;
	unsigned int i, j, live = 0;
	const u8 *key;
	u32 klen, vl;
	u64 keys;
	int ret;

	if (!pool) {
		if (!crashsim_note_acked(cs, "format") &&
		    (err == -EINVAL || err == -EUCLEAN))
			return 0;
		crashsim_fail(cs, "attach failed: %d (%s)", err, why);
		return -1;
	}
	idx = pmidx_index_lookup(pool, "c");
	if (!idx) {
		if (crashsim_note_acked(cs, "create"))
			crashsim_fail(cs, "the index is gone");
		return 0;
	}
	if (!idx->opened) {
		crashsim_fail(cs, "the index did not open");
		return -1;
	}
	if (atomic_read(&((struct ccl_tree *)idx->priv)->ovf_nodes))
		ovf_images++;
	for (i = 0; (key = crashsim_key(cs, i, &klen)); i++) {
		bool ok = false;

		vl = sizeof(v);
		ret = idx->ops->get(idx, key, klen, v, &vl);
		crashsim_expect(cs, key, klen, &e);
		for (j = 0; j < e.n; j++) {
			if (!e.present[j])
				ok |= ret == -ENOENT;
			else if (!ret && ekv_val(e.value[j], want) == vl &&
				 !memcmp(want, v, vl))
				ok = true;
		}
		if (!ok)
			crashsim_fail(cs, "key %.*s: get %d (len %u), expected %s%s",
				      (int)klen, key, ret, vl,
				      e.present[0] ? "present" : "absent",
				      e.n > 1 ? " or its in-flight outcome" : "");
		live += !ret;
	}
	ret = idx->ops->scan(idx, NULL, 0, false, NULL, 0, &sc.sink);
	if (ret)
		crashsim_fail(cs, "scan failed: %d", ret);
	if (sc.n != live)
		crashsim_fail(cs, "scan found %u keys, get %u", sc.n, live);
	if (idx->ops->check(idx, &keys, &cwhy))
		crashsim_fail(cs, "engine check: %s", cwhy);
	else if (keys != live)
		crashsim_fail(cs, "check counts %llu keys, get %u",
			      (unsigned long long)keys, live);
	return 0;
}

static unsigned int samples = 600;

static void run(const char *name, unsigned int ops, unsigned int nbatch,
		unsigned int rec_nbatch, bool naive, bool at_flushes)
{
	struct wl_arg arg = { .seed = ut_seed, .ops = ops, .nbatch = nbatch,
			      .rec_nbatch = rec_nbatch, .naive = naive };
	struct crashsim_workload wl = {
		.name = name, .run = wl_ccl, .check = ccl_check_image,
		.arg = &arg,
	};
	struct crashsim_config cfg = {
		.pool_size = 32ULL << 20, .at_flushes = at_flushes,
		.seed = ut_seed, .variants = 2, .samples = samples,
		.exhaustive_max = samples,
	};
	struct crashsim_result res;

	crashsim_config_env(&cfg);
	UT_EQ(crashsim_run(&cfg, &wl, &res), 0);
	crashsim_print_result(name, &cfg, &res);
	printf("# %s: %lu images recovered buffered KVs beyond the slots\n",
	       name, ovf_images);
	ovf_images = 0;
	UT_CRASH_OK(res, true);
}

static void ccl_short_nbatch2(void)
{
	run("ccl_short_nbatch2", 120, 2, 2, false, true);
}

static void ccl_long_nbatch2(void)
{
	run("ccl_long_nbatch2", 1500, 2, 2, false, false);
}

static void ccl_long_nbatch1(void)
{
	run("ccl_long_nbatch1", 1200, 1, 1, false, false);
}

static void ccl_long_nbatch5_naive(void)
{
	run("ccl_long_nbatch5_naive", 1500, 5, 5, true, false);
}

/* written with 7 slots, recovered into 1: the overflow path and its drain */
static void ccl_long_nbatch7_recover1(void)
{
	run("ccl_long_nbatch7_recover1", 1500, 7, 1, false, false);
}

/* ---- a full pool ------------------------------------------------------ */

/* Key n of the full pool: 8 bytes, in order; its values are 599 bytes. */
static u32 full_key(u64 n, u8 *k)
{
	__be64 b = cpu_to_be64(n);

	memcpy(k, &b, sizeof(b));
	return sizeof(b);
}

static u64 full_id(u64 n, u64 round)
{
	return (n * 4 + round) * 10 + 9;	/* vlens[9]: 599 bytes */
}

static int full_op(struct crashsim *cs, struct pmidx_index *idx, u64 n,
		   u64 round, bool del)
{
	u8 k[8], v[VMAX];
	unsigned int op;
	u32 kl = full_key(n, k), vl;
	int ret;

	if (del) {
		op = crashsim_op_begin(cs, CRASHSIM_OP_DEL, "del", k, kl, 0);
		ret = idx->ops->del(idx, k, kl, 0);
	} else {
		vl = ekv_val(full_id(n, round), v);
		op = crashsim_op_begin(cs, CRASHSIM_OP_PUT, "put", k, kl,
				       full_id(n, round));
		ret = idx->ops->put(idx, k, kl, v, vl, 0);
	}
	if (!ret)
		crashsim_op_ack(cs, op);
	return ret;
}

/*
 * Format a pool, create index "c" with @nbatch slots per buffer node;
 * collections run only when a write finds no space or the test asks.
 */
static struct pmidx_index *small_index(struct crashsim *cs, void *img,
				       u64 size, unsigned int nbatch,
				       struct pmidx_pool **pool)
{
	struct pmidx_index *idx;
	const char *why = NULL;
	unsigned int op;

	ccl_nbatch = nbatch;
	ccl_log_chunk_kb = 256;
	ccl_th_log = 1000000;
	ccl_gc_interval_ms = 1U << 30;
	ccl_gc_naive = false;
	op = crashsim_op_begin(cs, CRASHSIM_OP_NOTE, "format", NULL, 0, 0);
	if (pmidx_pool_format(img, size, true, &why))
		return NULL;
	crashsim_op_ack(cs, op);
	*pool = pmidx_pool_open(img, size, false, &why);
	if (IS_ERR(*pool))
		return NULL;
	op = crashsim_op_begin(cs, CRASHSIM_OP_NOTE, "create", NULL, 0, 0);
	if (pmidx_index_create(*pool, "c", PMIDX_ENGINE_CCL, &idx, &why))
		return NULL;
	crashsim_op_ack(cs, op);
	return idx;
}

/*
 * Put until the pool is full, delete every key, put half of them back:
 * the deletes need log chunks the pool no longer has, so collections
 * flush buffer nodes instead of copying them (gc.c). Deletes and puts
 * must all succeed past the first -ENOSPC.
 */
static int wl_full(struct crashsim *cs, void *img, u64 size, void *arg)
{
	struct pmidx_index *idx;
	struct pmidx_pool *pool;
	u64 n, i;
	int ret;

	idx = small_index(cs, img, size, 2, &pool);
	if (!idx)
		return -EIO;
	for (n = 0; !(ret = full_op(cs, idx, n, 0, false)); n++)
		;
	if (ret != -ENOSPC)
		return ret;
	for (i = 0; i < n; i++) {
		ret = full_op(cs, idx, i, 0, true);
		if (ret) {
			printf("# full pool, %llu keys: delete %llu: %d\n",
			       (unsigned long long)n, (unsigned long long)i, ret);
			return ret;
		}
	}
	for (i = 0; i < n / 2; i++) {
		ret = full_op(cs, idx, i * 2, 1, false);
		if (ret)
			return ret;
	}
	printf("# full pool: %llu keys; %llu buffer nodes flushed by collections for want of log space\n",
	       (unsigned long long)n,
	       (unsigned long long)((struct ccl_tree *)idx->priv)->gc_full_flushes);
	if (!((struct ccl_tree *)idx->priv)->gc_full_flushes)
		return -EIO;		/* the path under test did not run */
	pmidx_pool_close(pool);
	return 0;
}

/* Take every free byte of the pool (returns how many objects). */
static unsigned int ballast_fill(struct pmidx_pool *pool, u64 *off,
				 unsigned int max)
{
	unsigned int n = 0;
	size_t sz;

	for (sz = 1U << 20; sz >= 64; sz >>= 1)
		while (n < max && (off[n] = pmidx_alloc(&pool->alloc, sz)))
			n++;
	return n;
}

#define BALLAST_MAX	4096

/*
 * A collection that fails leaves its flip in place; the next one must
 * recycle the side that failed, not the newer one. Key 0's put is in
 * the first side and in the leaf; a naive collection on a pool filled
 * with ballast fails (a split needs a leaf); the ballast goes; key 0's
 * delete, flushed at once, is logged in the second side; a collection
 * then succeeds. Recycling the second side would leave the put as key
 * 0's newest entry: every crash after that would bring key 0 back.
 */
static int wl_failed_gc(struct crashsim *cs, void *img, u64 size, void *arg)
{
	struct pmidx_index *idx;
	struct pmidx_pool *pool;
	unsigned int nb, i;
	u64 *ballast, n;
	int ret;

	idx = small_index(cs, img, size, 1, &pool);
	if (!idx)
		return -EIO;
	/* keys 0..13 fill the first leaf, key 14 waits in its buffer */
	for (n = 0; n < 15; n++)
		if (full_op(cs, idx, n, 0, false))
			return -EIO;
	ballast = calloc(BALLAST_MAX, sizeof(*ballast));
	if (!ballast)
		return -ENOMEM;
	nb = ballast_fill(pool, ballast, BALLAST_MAX);
	ccl_gc_naive = true;
	ret = ccl_gc_run(idx->priv);
	ccl_gc_naive = false;
	for (i = 0; i < nb; i++)
		pmidx_free(&pool->alloc, ballast[i]);
	free(ballast);
	if (ret != -ENOSPC) {
		printf("# the collection on a full pool gave %d, not -ENOSPC\n",
		       ret);
		return -EIO;
	}
	if (full_op(cs, idx, 0, 0, true) || ccl_gc_run(idx->priv))
		return -EIO;
	for (n = 100; n < 140; n++)		/* crash points after it */
		if (full_op(cs, idx, n, 0, false))
			return -EIO;
	pmidx_pool_close(pool);
	return 0;
}

/* A workload on the smallest pool, at the suite's crash points. */
static void run_small(const char *name,
		      int (*fn)(struct crashsim *, void *, u64, void *))
{
	struct crashsim_workload wl = {
		.name = name, .run = fn, .check = ccl_check_image,
	};
	struct crashsim_config cfg = {
		.pool_size = PMIDX_MIN_POOL_SIZE, .seed = ut_seed,
		.variants = 2, .samples = samples, .exhaustive_max = samples,
	};
	struct crashsim_result res;

	crashsim_config_env(&cfg);
	UT_EQ(crashsim_run(&cfg, &wl, &res), 0);
	crashsim_print_result(name, &cfg, &res);
	UT_CRASH_OK(res, true);
}

static void ccl_full_pool(void)
{
	run_small("ccl_full_pool", wl_full);
}

static void ccl_failed_gc(void)
{
	run_small("ccl_failed_gc", wl_failed_gc);
}

/* ---- corrupted images: refused with an error, never a crash ---------- */

/* What a scan returned: keys and values, in order. */
struct kvset {
	struct pmidx_scan_sink	sink;
	unsigned int		n, cap;
	struct { u32 kl, vl; u8 *k, *v; } *r;
	bool			unordered;
};

static int kvset_emit(struct pmidx_scan_sink *sink, const u8 *key, u32 klen,
		      const u8 *val, u32 vlen)
{
	struct kvset *s = container_of(sink, struct kvset, sink);

	if (s->n && pmidx_key_cmp(s->r[s->n - 1].k, s->r[s->n - 1].kl,
				  key, klen) >= 0)
		s->unordered = true;
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 256;
		s->r = realloc(s->r, s->cap * sizeof(*s->r));
		BUG_ON(!s->r);
	}
	s->r[s->n].kl = klen;
	s->r[s->n].vl = vlen;
	s->r[s->n].k = malloc(klen);
	s->r[s->n].v = malloc(vlen + 1);
	BUG_ON(!s->r[s->n].k || !s->r[s->n].v);
	memcpy(s->r[s->n].k, key, klen);
	memcpy(s->r[s->n].v, val, vlen);
	s->n++;
	return 0;
}

static void kvset_free(struct kvset *s)
{
	while (s->n--) {
		free(s->r[s->n].k);
		free(s->r[s->n].v);
	}
	free(s->r);
	memset(s, 0, sizeof(*s));
	s->sink.emit = kvset_emit;
}

static bool kvset_eq(const struct kvset *a, const struct kvset *b)
{
	unsigned int i;

	if (a->n != b->n)
		return false;
	for (i = 0; i < a->n; i++)
		if (a->r[i].kl != b->r[i].kl || a->r[i].vl != b->r[i].vl ||
		    memcmp(a->r[i].k, b->r[i].k, a->r[i].kl) ||
		    memcmp(a->r[i].v, b->r[i].v, a->r[i].vl))
			return false;
	return true;
}

/*
 * An attached index whose CHECK passed must be what CHECK says: a scan in
 * strict order with as many keys as CHECK counted, every scanned key
 * answering get with the scanned value, the keys it does not hold
 * answering -ENOENT. Return: a reason, or NULL.
 */
static const char *consistent(struct pmidx_index *idx, u64 keys,
			      struct kvset *s)
{
	u8 k[64], v[VMAX + 1];
	unsigned int i, n;
	u32 kl, vl;
	int ret;

	kvset_free(s);
	if (idx->ops->scan(idx, NULL, 0, false, NULL, 0, &s->sink))
		return "scan failed";
	if (s->unordered)
		return "scan out of order";
	if (s->n != keys)
		return "CHECK's key count differs from the scan";
	for (i = 0; i < s->n; i++) {
		vl = sizeof(v);
		if (idx->ops->get(idx, s->r[i].k, s->r[i].kl, v, &vl) ||
		    vl != s->r[i].vl || memcmp(v, s->r[i].v, vl))
			return "a scanned key does not get its scanned value";
	}
	for (n = 0; n < 8 * NKEYS; n++) {
		kl = ekv_key(n, k);
		vl = sizeof(v);
		ret = idx->ops->get(idx, k, kl, v, &vl);
		for (i = 0; i < s->n; i++)
			if (s->r[i].kl == kl && !memcmp(s->r[i].k, k, kl))
				break;
		if ((i < s->n) != !ret || (ret && ret != -ENOENT))
			return "get and scan disagree on a key";
	}
	return NULL;
}

/*
 * Writes on an image that attached: they succeed or fail with an errno,
 * and an index whose CHECK passed still passes it after them.
 */
static const char *exercise(struct pmidx_index *idx, bool checked, u64 *keys)
{
	const char *why = NULL;
	u8 k[64], v[VMAX];
	unsigned int n;
	u32 kl, vl;
	int ret;

	for (n = 0; n < NKEYS; n += 3) {
		kl = ekv_key(n, k);
		vl = ekv_val(n, v);
		ret = idx->ops->put(idx, k, kl, v, vl, 0);
		if (ret > 0 || (checked && ret))
			return "a put on a sound index failed";
		ret = idx->ops->del(idx, k, kl, 0);
		if (ret > 0 || (checked && ret))
			return "a delete on a sound index failed";
	}
	ccl_gc_run(idx->priv);
	if (checked && idx->ops->check(idx, keys, &why))
		return why ? why : "CHECK fails after writes";
	return NULL;
}
struct target {
	u64	off;
	u32	len;
};

/* Where the index keeps its metadata in @img: root, leaves, log. */
static unsigned int targets(void *img, struct pmidx_index *idx,
			    struct target *t)
{
	struct ccl_root *r = img + idx->root;
	struct pmidx_wal_dir *d = img + le64_to_cpu(r->wal_dir);
	unsigned int n = 0, i;
	u64 off;

	t[n++] = (struct target){ idx->root, 32 };
	t[n++] = (struct target){ le64_to_cpu(r->wal_dir), 256 };
	for (i = 0; i < PMIDX_WAL_NSLOTS && n < 4000; i++)
		if (d->slot[i])
			t[n++] = (struct target){
				pmidx_wal_slot_off(le64_to_cpu(d->slot[i])),
				4096 };
	for (off = le64_to_cpu(r->head); off && n < 4096;
	     off = ccl_meta_next(le64_to_cpu(((struct ccl_leaf *)(img + off))->meta)))
		t[n++] = (struct target){ off, 256 };
	return n;
}

/* Flip bits or overwrite bytes, mostly in the engine's own metadata. */
static void corrupt(void *img, u64 data_off, struct target *tgt, unsigned int nt)
{
	unsigned int j, n = 1 + ut_rand(4);

	for (j = 0; j < n; j++) {
		u64 off = data_off + ut_rand(2U << 20);

		if (ut_rand(4)) {
			struct target *t = &tgt[ut_rand(nt)];

			off = t->off + ut_rand(t->len);
		}
		if (ut_rand(2))
			((u8 *)img)[off] ^= 1 << ut_rand(8);
		else
			((u8 *)img)[off & ~7ULL] = ut_rand(256);
	}
}

/*
 * A corrupted image is either refused with a reason (-EUCLEAN or -EIO
 * and a why string) or attached; attached, CHECK either names what is
 * wrong or passes, and then the index is what CHECK says (consistent())
 * and takes writes, and a clean detach brings the same content back.
 * The images without corruption always attach, pass CHECK and hold what
 * the index held.
 */
static void ccl_corrupt(void)
{
	const u64 size = 32ULL << 20;
	unsigned int i, refused = 0, flagged = 0, sound = 0;
	struct kvset truth = { .sink.emit = kvset_emit };
	struct kvset got = { .sink.emit = kvset_emit };
	struct kvset again = { .sink.emit = kvset_emit };
	struct pmidx_index *idx;
	struct pmidx_pool *pool;
	const char *why = NULL, *bad;
	void *base[2], *img;
	u8 k[64], v[VMAX];
	u64 data_off, id, keys;
	unsigned int nt;
	u32 kl, vl;
	int err;
	static struct target tgt[4096];

	ccl_nbatch = 3;
	ccl_log_chunk_kb = 256;
	ccl_th_log = 1000000;
	ccl_gc_interval_ms = 1U << 30;
	ccl_gc_naive = false;
	base[0] = ut_img_alloc(size);
	pool = ut_pool_new(base[0], size);
	UT_EQ(pmidx_index_create(pool, "c", PMIDX_ENGINE_CCL, &idx, &why), 0);
	for (id = 1; id < 3000; id++) {
		kl = ekv_key(id % NKEYS + (id % 7) * NKEYS, k);
		vl = ekv_val(id, v);
		UT_EQ(idx->ops->put(idx, k, kl, v, vl, 0), 0);
		if (id % 5 == 0)
			idx->ops->del(idx, k, kl, 0);
		if (id % 500 == 0)
			UT_EQ(ccl_gc_run(idx->priv), 0);
	}
	UT_EQ(idx->ops->scan(idx, NULL, 0, false, NULL, 0, &truth.sink), 0);
	UT_ASSERT(truth.n > 100);
	data_off = le64_to_cpu(pool->sb.data_off);
	nt = targets(img = base[0], idx, tgt);
	base[1] = ut_img_dup(base[0], size);	/* a crash: log to replay */
	pmidx_pool_close(pool);			/* and a clean detach */

	/* without corruption: always attaches, with the same content */
	for (i = 0; i < 2; i++) {
		img = ut_img_dup(base[i], size);
		pool = ut_pool_open(img, size);
		idx = pmidx_index_lookup(pool, "c");
		UT_ASSERT(idx && idx->opened);
		UT_EQ(idx->ops->check(idx, &keys, &why), 0);
		bad = consistent(idx, keys, &got);
		UT_ASSERT_MSG(!bad, "uncorrupted %s image: %s",
			      i ? "crash" : "clean", bad);
		UT_ASSERT_MSG(kvset_eq(&truth, &got), "uncorrupted %s image lost data",
			      i ? "crash" : "clean");
		pmidx_pool_close(pool);
		ut_img_free(img, size);
	}

	for (i = 0; i < 400; i++) {
		img = ut_img_dup(base[i % 2], size);
		corrupt(img, data_off, tgt, nt);
		why = NULL;
		pool = pmidx_pool_open(img, size, false, &why);
		if (IS_ERR(pool)) {
			err = PTR_ERR(pool);
			UT_ASSERT_MSG((err == -EUCLEAN || err == -EIO) && why && *why,
				      "image %u refused with %d (%s)", i, err,
				      why ? why : "no reason");
			refused++;
			ut_img_free(img, size);
			continue;
		}
		idx = pmidx_index_lookup(pool, "c");
		/* the index table is checksummed: the index is there */
		UT_ASSERT_MSG(idx && idx->opened, "image %u: index lost", i);
		why = NULL;
		if (idx->ops->check(idx, &keys, &why)) {
			UT_ASSERT_MSG(why && *why, "image %u: CHECK fails silently", i);
			flagged++;
			bad = exercise(idx, false, &keys);
			pmidx_pool_close(pool);
			ut_img_free(img, size);
			continue;
		}
		bad = consistent(idx, keys, &got);
		UT_ASSERT_MSG(!bad, "image %u: CHECK passes but %s", i, bad);
		bad = exercise(idx, true, &keys);
		UT_ASSERT_MSG(!bad, "image %u: %s", i, bad);
		bad = consistent(idx, keys, &got);	/* after the writes */
		UT_ASSERT_MSG(!bad, "image %u after writes: %s", i, bad);
		pmidx_pool_close(pool);
		pool = ut_pool_open(img, size);
		idx = pmidx_index_lookup(pool, "c");
		UT_ASSERT(idx && idx->opened);
		UT_EQ(idx->ops->check(idx, &keys, &why), 0);
		bad = consistent(idx, keys, &again);
		UT_ASSERT_MSG(!bad && kvset_eq(&got, &again),
			      "image %u: a clean detach changed the content", i);
		sound++;
		pmidx_pool_close(pool);
		ut_img_free(img, size);
	}
	ut_note("ccl_corrupt: %u images, %u refused with a reason, %u attached "
		"with CHECK naming the damage, %u attached sound", i, refused,
		flagged, sound);
	/* the generator must keep reaching both outcomes */
	UT_ASSERT(refused > 20 && sound > 20);
	kvset_free(&truth);
	kvset_free(&got);
	kvset_free(&again);
	ut_img_free(base[0], size);
	ut_img_free(base[1], size);
}

/* ccl_fp_match() against a byte loop: random leaves, every fingerprint */
static void ccl_fp_match_bytes(void)
{
	struct ccl_leaf l;
	struct rnd_state rs;
	unsigned int n, fp, s;
	u32 want;

	prandom_seed_state(&rs, ut_seed);
	for (n = 0; n < 2000; n++) {
		memset(&l, 0, sizeof(l));
		for (s = 0; s < CCL_LEAF_SLOTS; s++)	/* few values: many matches */
			l.fp[s] = n & 1 ? prandom_u32_state(&rs) :
				  0x7f + prandom_u32_state(&rs) % 3;
		l.vind = cpu_to_le16(prandom_u32_state(&rs));
		for (fp = 0; fp < 256; fp++) {
			want = 0;
			for (s = 0; s < CCL_LEAF_SLOTS; s++)
				want |= (l.fp[s] == fp) << s;
			UT_ASSERT_MSG(ccl_fp_match(&l, fp) == want,
				      "leaf %u, fp %#x: %#x, want %#x", n, fp,
				      ccl_fp_match(&l, fp), want);
		}
	}
}

/* leaf timestamps near the limit are reset at a clean attach */
static void ccl_ts_reset(void)
{
	const u64 size = 32ULL << 20;
	struct pmidx_index *idx;
	struct pmidx_pool *pool;
	const char *why = NULL;
	struct ccl_bnode *b;
	struct ccl_tree *t;
	struct ccl_root *r;
	struct ccl_leaf *l;
	u8 k[64], v[VMAX], got[VMAX];
	u64 off, id, meta;
	u32 kl, vl;
	void *img;

	ccl_nbatch = 2;
	ccl_log_chunk_kb = 256;
	img = ut_img_alloc(size);
	pool = ut_pool_new(img, size);
	UT_EQ(pmidx_index_create(pool, "c", PMIDX_ENGINE_CCL, &idx, &why), 0);
	for (id = 0; id < 500; id++) {
		kl = ekv_key(id % NKEYS, k);
		vl = ekv_val(id, v);
		UT_EQ(idx->ops->put(idx, k, kl, v, vl, 0), 0);
	}
	r = img + idx->root;
	pmidx_pool_close(pool);
	for (off = le64_to_cpu(r->head); off; off = ccl_meta_next(meta)) {
		l = img + off;
		meta = le64_to_cpu(l->meta);
		l->ts = cpu_to_le64(ccl_ts_word(CCL_TS_LIMIT - 5,
						ccl_meta_seq(meta)));
	}
	pool = ut_pool_open(img, size);
	idx = pmidx_index_lookup(pool, "c");
	UT_ASSERT(idx && idx->opened);
	for (off = le64_to_cpu(r->head); off; off = ccl_meta_next(meta)) {
		l = img + off;
		meta = le64_to_cpu(l->meta);
		UT_EQ(ccl_ts_val(le64_to_cpu(l->ts)), 0);
	}
	t = idx->priv;
	UT_EQ(t->ts_base, 0);
	for (b = t->bhead; b; b = b->next)
		UT_EQ(b->clock, 0);
	for (id = 500 - NKEYS; id < 500; id++) {
		kl = ekv_key(id % NKEYS, k);
		vl = sizeof(got);
		UT_EQ(idx->ops->get(idx, k, kl, got, &vl), 0);
		UT_EQ(vl, ekv_val(id, v));
		UT_ASSERT(!memcmp(got, v, vl));
		UT_EQ(idx->ops->put(idx, k, kl, v, vl, 0), 0);
	}
	pmidx_pool_close(pool);
	ut_img_free(img, size);
}

/*
 * A node whose clock reaches the write limit refuses writes with
 * -EOVERFLOW and changes nothing; the writes let through before it stay
 * readable and recover (the slack keeps every timestamp under the limit
 * recovery checks), and other nodes' clocks are not involved.
 */
/* The buffer node whose range holds @k (the tree quiescent). */
static struct ccl_bnode *node_of(struct ccl_tree *t, const u8 *k, u32 kl)
{
	struct ccl_bnode *b = t->bhead;

	while (b->next && ccl_fence_cmp(b->next->low, k, kl) <= 0)
		b = b->next;
	return b;
}

static void ccl_ts_limit(void)
{
	const u64 size = 32ULL << 20, near = CCL_TS_LIMIT - CCL_TS_SLACK - 1;
	u8 k[64], k2[64], v[VMAX], v2[VMAX], got[VMAX];
	struct pmidx_index *idx;
	struct pmidx_pool *pool;
	const char *why = NULL;
	struct ccl_bnode *b, *full;
	struct ccl_tree *t;
	u32 kl, kl2, vl, vl2;
	u64 id, clock;
	void *img;
	int ret;

	ccl_nbatch = 2;
	ccl_log_chunk_kb = 256;
	img = ut_img_alloc(size);
	pool = ut_pool_new(img, size);
	UT_EQ(pmidx_index_create(pool, "c", PMIDX_ENGINE_CCL, &idx, &why), 0);
	for (id = 0; id < 500; id++) {
		kl = ekv_key(id, k);
		vl = ekv_val(id, v);
		UT_EQ(idx->ops->put(idx, k, kl, v, vl, 0), 0);
	}
	t = idx->priv;
	/* nothing buffered: the one write let through below stays buffered */
	UT_EQ(ccl_flush_all(t), 0);
	kl = ekv_key(0, k);
	full = node_of(t, k, kl);
	for (id = 1; id < 500; id++) {
		kl2 = ekv_key(id, k2);
		if (node_of(t, k2, kl2) != full)
			break;
	}
	UT_ASSERT(id < 500);	/* a key of another node */
	full->clock = near;
	/* writes pass until the clock is past the limit, then fail */
	vl = ekv_val(1000, v);
	UT_EQ(idx->ops->put(idx, k, kl, v, vl, 0), 0);
	for (id = 0; id < 8; id++) {
		vl2 = ekv_val(1001 + id, v2);
		ret = idx->ops->put(idx, k, kl, v2, vl2, 0);
		if (ret)
			break;
		memcpy(v, v2, vl2);
		vl = vl2;
	}
	UT_EQ(ret, -EOVERFLOW);
	UT_EQ(idx->ops->del(idx, k, kl, 0), -EOVERFLOW);
	UT_ASSERT(full->clock > near && full->clock <= CCL_TS_LIMIT);
	vl2 = sizeof(got);
	UT_EQ(idx->ops->get(idx, k, kl, got, &vl2), 0);
	UT_EQ(vl2, vl);
	UT_ASSERT(!memcmp(got, v, vl));
	/* the other nodes' clocks are their own */
	for (b = t->bhead; b; b = b->next)
		UT_ASSERT(b == full || b->clock < near);
	vl2 = ekv_val(2000, v2);
	UT_EQ(idx->ops->put(idx, k2, kl2, v2, vl2, 0), 0);
	/*
	 * Collections flush the node past the limit instead of copying its
	 * buffered KV with a new timestamp each time (it may be merged into
	 * its left sibling meanwhile: look it up again)
	 */
	UT_EQ(bn_pos(atomic64_read(&full->hdr)), 1);
	clock = full->clock;
	for (id = 0; id < 3; id++) {
		UT_EQ(ccl_gc_run(t), 0);
		b = node_of(t, k, kl);
		UT_EQ(bn_pos(atomic64_read(&b->hdr)), 0);
		UT_ASSERT(b->clock <= clock + 2);
	}
	vl2 = sizeof(got);
	UT_EQ(idx->ops->get(idx, k, kl, got, &vl2), 0);
	UT_EQ(vl2, vl);
	UT_ASSERT(!memcmp(got, v, vl));
	pmidx_pool_close(pool);

	/* recovery takes every timestamp (none past the limit) */
	pool = ut_pool_open(img, size);
	idx = pmidx_index_lookup(pool, "c");
	UT_ASSERT(idx && idx->opened);
	t = idx->priv;
	UT_ASSERT(t->ts_base <= CCL_TS_LIMIT);
	vl2 = sizeof(got);
	UT_EQ(idx->ops->get(idx, k, kl, got, &vl2), 0);
	UT_EQ(vl2, vl);
	UT_ASSERT(!memcmp(got, v, vl));
	vl = ekv_val(2000, v);
	vl2 = sizeof(got);
	UT_EQ(idx->ops->get(idx, k2, kl2, got, &vl2), 0);
	UT_EQ(vl2, vl);
	UT_ASSERT(!memcmp(got, v, vl));
	pmidx_pool_close(pool);
	ut_img_free(img, size);
}

/* ---- threads: writers, readers, a scanner, GC all the time ------------ */

#define TW		3
#define TKEYS		400

/* C11 atomics clash with the shim's atomic_t names: use the builtins */
#define LD(x)		__atomic_load_n(&(x), __ATOMIC_SEQ_CST)
#define ST(x, v)	__atomic_store_n(&(x), (v), __ATOMIC_SEQ_CST)
#define INC(x)		__atomic_fetch_add(&(x), 1, __ATOMIC_SEQ_CST)

struct tshared {
	struct pmidx_index	*idx;
	u64			acked[TW][TKEYS];	/* ver << 1 | deleted */
	u64			begun[TW][TKEYS];
	bool			stop;
	long			errors, writes, scans;
};

struct tval {
	u64	key, ver;
	u8	pad[40];	/* out of line: 56 bytes */
};

static u32 tkey(u8 *k, unsigned int w, unsigned int i)
{
	k[0] = 'T';
	k[1] = w;
	k[2] = i >> 8;
	k[3] = i;
	memset(k + 4, 'x', 8);
	return i % 2 ? 12 : 8;		/* out of line or inline keys */
}

static void *t_writer(void *arg)
{
	struct tshared *sh = *(struct tshared **)arg;
	unsigned int w = ((unsigned long *)arg)[1], i;
	u64 ver[TKEYS] = { 0 }, s = w + 1;
	struct tval v = { 0 };
	u8 k[16];
	int ret;

	while (!LD(sh->stop)) {
		bool del;
		u32 kl;

		s = s * 6364136223846793005ULL + 1442695040888963407ULL;
		i = (s >> 33) % TKEYS;
		del = (s >> 20) % 8 == 0;
		kl = tkey(k, w, i);
		v.key = (u64)w << 32 | i;
		v.ver = ++ver[i];
		ST(sh->begun[w][i], v.ver << 1 | del);
		if (del) {
			u64 a = LD(sh->acked[w][i]);

			ret = sh->idx->ops->del(sh->idx, k, kl, 0);
			if (ret != (a && !(a & 1) ? 0 : -ENOENT))
				INC(sh->errors);
		} else {
			ret = sh->idx->ops->put(sh->idx, k, kl, (u8 *)&v,
						i % 3 ? 16 : sizeof(v), 0);
			if (ret)
				INC(sh->errors);
		}
		ST(sh->acked[w][i], v.ver << 1 | del);
		INC(sh->writes);
	}
	return NULL;
}

static void *t_reader(void *arg)
{
	struct tshared *sh = *(struct tshared **)arg;
	u64 s = ((unsigned long *)arg)[1] * 77 + 5, a0, b1;
	unsigned int w, i;
	struct tval v;
	u32 kl, vl;
	u8 k[16];
	int ret;

	while (!LD(sh->stop)) {
		s = s * 6364136223846793005ULL + 1442695040888963407ULL;
		w = (s >> 40) % TW;
		i = (s >> 20) % TKEYS;
		kl = tkey(k, w, i);
		a0 = LD(sh->acked[w][i]);
		vl = sizeof(v);
		ret = sh->idx->ops->get(sh->idx, k, kl, (u8 *)&v, &vl);
		b1 = LD(sh->begun[w][i]);
		if (ret == -ENOENT) {
			if (a0 && !(a0 & 1) && b1 == a0)
				INC(sh->errors);
			continue;
		}
		if (ret || v.key != ((u64)w << 32 | i) ||
		    v.ver < (a0 >> 1) || (v.ver == (a0 >> 1) && (a0 & 1)) ||
		    v.ver > (b1 >> 1))
			INC(sh->errors);
	}
	return NULL;
}

struct tscan {
	struct pmidx_scan_sink	sink;
	u8			last[16];
	u32			lastl, n;
	bool			bad;
};

static int t_emit(struct pmidx_scan_sink *sink, const u8 *key, u32 klen,
		  const u8 *val, u32 vlen)
{
	struct tscan *t = container_of(sink, struct tscan, sink);

	if ((t->n && pmidx_key_cmp(t->last, t->lastl, key, klen) >= 0) ||
	    klen > 16)
		t->bad = true;
	memcpy(t->last, key, min(klen, 16U));
	t->lastl = klen;
	t->n++;
	return 0;
}

static void *t_scanner(void *arg)
{
	struct tshared *sh = *(struct tshared **)arg;

	while (!LD(sh->stop)) {
		struct tscan t = { .sink.emit = t_emit };

		if (sh->idx->ops->scan(sh->idx, NULL, 0, false, NULL, 0, &t.sink) ||
		    t.bad)
			INC(sh->errors);
		INC(sh->scans);
	}
	return NULL;
}

static void ccl_threads(void)
{
	const u64 size = 64ULL << 20;
	struct tshared *sh = calloc(1, sizeof(*sh));
	unsigned long args[TW + 3][2];
	pthread_t th[TW + 3];
	struct pmidx_pool *pool;
	const char *why = NULL;
	unsigned int i, w, n = 0;
	const char *cwhy;
	u64 keys, st;
	void *img;

	UT_ASSERT(sh);
	ccl_nbatch = 2;
	ccl_log_chunk_kb = 256;
	ccl_th_log = 0;			/* collect whenever possible */
	ccl_gc_interval_ms = 1;
	img = ut_img_alloc(size);
	pool = ut_pool_new(img, size);
	UT_EQ(pmidx_index_create(pool, "c", PMIDX_ENGINE_CCL, &sh->idx, &why), 0);
	for (w = 0; w < TW + 3; w++) {
		args[w][0] = (unsigned long)sh;
		args[w][1] = w < TW ? w : w - TW;
		pthread_create(&th[n++], NULL,
			       w < TW ? t_writer : w < TW + 2 ? t_reader : t_scanner,
			       args[w]);
	}
	sleep(6);
	ST(sh->stop, true);
	for (i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	ut_note("ccl_threads: %ld writes, %ld scans, %lld collections",
		LD(sh->writes), LD(sh->scans),
		(long long)atomic64_read(&((struct ccl_tree *)sh->idx->priv)->gc_runs));
	UT_EQ(LD(sh->errors), 0);
	UT_EQ(sh->idx->ops->check(sh->idx, &keys, &cwhy), 0);
	for (w = 0; w < TW; w++) {
		for (i = 0; i < TKEYS; i++) {
			struct tval v;
			u32 vl = sizeof(v);
			u8 k[16];
			int ret;

			st = LD(sh->acked[w][i]);
			ret = sh->idx->ops->get(sh->idx, k, tkey(k, w, i),
						(u8 *)&v, &vl);
			if (!st || (st & 1)) {
				UT_EQ(ret, -ENOENT);
			} else {
				UT_EQ(ret, 0);
				UT_EQ(v.ver, st >> 1);
			}
		}
	}
	ccl_gc_interval_ms = 1U << 30;
	pmidx_pool_close(pool);
	ut_img_free(img, size);
	free(sh);
}

static const struct ut_test tests[] = {
	UT_TEST(ccl_threads),
	UT_TEST(ccl_fp_match_bytes),
	UT_TEST(ccl_ts_reset),
	UT_TEST(ccl_ts_limit),
	UT_TEST(ccl_corrupt),
	UT_TEST(ccl_short_nbatch2),
	UT_TEST(ccl_long_nbatch2),
	UT_TEST(ccl_long_nbatch1),
	UT_TEST(ccl_long_nbatch5_naive),
	UT_TEST(ccl_long_nbatch7_recover1),
	UT_TEST(ccl_full_pool),
	UT_TEST(ccl_failed_gc),
};

int main(int argc, char **argv)
{
	const char *e = getenv("PMIDX_CRASH_SAMPLES");

	if (e)
		samples = strtoul(e, NULL, 0);
	if (crashsim_parse_model(&argc, argv))
		return 2;
	ekv_use(&kv);
	return ut_main(argc, argv, "ccl-crash", tests, ARRAY_SIZE(tests));
}
