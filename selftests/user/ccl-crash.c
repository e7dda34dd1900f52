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
 * Build (links the real engines, so not through the test-% rule):
 *   make -f tools/testing/user.mk build/user/asan/libpmidx-user.a \
 *        build/user/asan/obj/selftests/user/ccl-crash.o
 *   clang -fsanitize=address,undefined -pthread \
 *        build/user/asan/obj/selftests/user/ccl-crash.o \
 *        build/user/asan/libpmidx-user.a -o build/user/asan/ccl-crash
 * Replay one failure: PMIDX_CRASH_POINT=P PMIDX_CRASH_VARIANT=V
 *   ccl-crash --seed S --only NAME
 */
#include <stdlib.h>
#include <linux/prandom.h>
#include <shim/shim.h>
#include "crashsim.h"
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

static u32 key_of(unsigned int n, u8 *k)
{
	static const u8 lens[] = { 8, 8, 3, 12, 8, 40, 8, 2 };
	u32 len = lens[n % sizeof(lens)], i;

	k[0] = 'a' + n / 26;
	k[1] = 'a' + n % 26;
	for (i = 2; i < len; i++)
		k[i] = (n * 31 + i * 7) & 0xff;
	return len;
}

static u32 val_of(u64 id, u8 *v)
{
	static const u32 lens[] = { 8, 8, 0, 5, 16, 8, 100, 8, 9, 599 };
	u32 len = lens[id % ARRAY_SIZE(lens)], i;
	u64 s = id * 0x9e3779b97f4a7c15ULL + 1;

	for (i = 0; i < len; i++) {
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		v[i] = s;
	}
	return len;
}

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
		kl = key_of(n, k);
		if (r % 10 < 3 + (i > a->ops / 2 ? 4 : 0)) {
			op = crashsim_op_begin(cs, CRASHSIM_OP_DEL, "del", k, kl, 0);
			ret = idx->ops->del(idx, k, kl);
			if (ret && ret != -ENOENT)
				return ret;
		} else {
			vl = val_of(id, v);
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
		if (e.present[j] && val_of(e.value[j], v) == vlen &&
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
			else if (!ret && val_of(e.value[j], want) == vl &&
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
		.exhaustive_max = samples, .only_point = -1,
		.only_variant = -1, .save_dir = getenv("PMIDX_CRASH_SAVE"),
	};
	struct crashsim_result res;
	const char *e;

	if ((e = getenv("PMIDX_CRASH_POINT")))
		cfg.only_point = strtol(e, NULL, 0);
	if ((e = getenv("PMIDX_CRASH_VARIANT")))
		cfg.only_variant = strtol(e, NULL, 0);
	UT_EQ(crashsim_run(&cfg, &wl, &res), 0);
	crashsim_print_result(name, &cfg, &res);
	printf("# %s: %lu images recovered buffered KVs beyond the slots\n",
	       name, ovf_images);
	ovf_images = 0;
	UT_ASSERT(res.points > 0 && res.images >= res.points);
	UT_ASSERT_MSG(!res.failures, "%llu failing crash images",
		      (unsigned long long)res.failures);
	UT_ASSERT_MSG(!res.unflushed_at_end,
		      "%llu lines written but never made durable",
		      (unsigned long long)res.unflushed_at_end);
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

static const struct ut_test tests[] = {
	UT_TEST(ccl_short_nbatch2),
	UT_TEST(ccl_long_nbatch2),
	UT_TEST(ccl_long_nbatch1),
	UT_TEST(ccl_long_nbatch5_naive),
	UT_TEST(ccl_long_nbatch7_recover1),
};

int main(int argc, char **argv)
{
	const char *e = getenv("PMIDX_CRASH_SAMPLES");

	if (e)
		samples = strtoul(e, NULL, 0);
	return ut_main(argc, argv, "ccl-crash", tests, ARRAY_SIZE(tests));
}
