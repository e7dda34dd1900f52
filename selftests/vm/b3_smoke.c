// SPDX-License-Identifier: GPL-2.0
/*
 * b3 (B³-tree) engine smoke tests through the real module, run inside the
 * VM as root with pmidx.ko loaded:
 *
 *   tools/pmidx-vm --pmem IMG:256M -- build/bin/selftests/b3_smoke
 *
 * What the generic suites (data_path, async_api, races...) do not aim at:
 * b3's structure changes (kmod/engines/b3/README.md) at sizes that make
 * them happen many times: leaf and internal splits with root growth,
 * merges of leaves emptied by deletes, the path copy (or, in a page with
 * no free slots, the page copy) when a node with two children is
 * deleted, defragmentation of a page whose values are
 * overwritten, blob keys and values; lock-free readers while writers
 * split and merge around them; all of it across a clean detach and attach
 * (no recovery at a clean attach: b3's instant restart).
 *
 * Every test formats the pool and creates the b3 index "t" (a module
 * without b3 would answer -EOPNOTSUPP: the test is then skipped, saying
 * so, and counted as skipped).
 *
 *   PMIDX_DEV=/dev/pmemN  the namespace to use (default: the largest)
 *   PMIDX_SEED=N          seed of the randomized tests (default: time)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include "kselftest_harness.h"
#include "pmidx_nl.h"
#include "pmidx_data.h"
#include "pmem_dev.h"

#define INDEX_NAME	"t"
#define SLOTS		118	/* nodes per 4 KiB page (b3/format.h) */

static void key_be(uint64_t v, uint8_t k[8])
{
	int i;

	for (i = 7; i >= 0; i--, v >>= 8)
		k[i] = v;
}

/* The value of key @i in version @ver: 8 bytes, or @vl when given. */
static uint32_t val_of(uint64_t i, uint32_t ver, uint32_t vl, uint8_t *v)
{
	uint32_t j;

	if (!vl)
		vl = 8;
	for (j = 0; j < vl; j++)
		v[j] = (uint8_t)(i * 31 + ver * 7 + j);
	return vl;
}

FIXTURE(b3) {
	struct nl		nl;
	struct pool_info	p;
	char			devpath[48];
	struct ctx		c;
	bool			skip;
};

static int open_index(FIXTURE_DATA(b3) *self)
{
	uint64_t engine;
	int ret;

	snprintf(self->devpath, sizeof(self->devpath), "/dev/%s", self->p.name);
	self->c.path = &ioctl_path;
	self->c.fd = open(self->devpath, O_RDWR | O_CLOEXEC);
	if (self->c.fd < 0)
		return -errno;
	ret = op_lookup(&self->c, INDEX_NAME, &self->c.index, &engine);
	if (!ret && engine != PMIDX_ENGINE_B3)
		ret = -EPROTO;
	return ret;
}

FIXTURE_SETUP(b3)
{
	int ret;

	self->c.fd = -1;
	ASSERT_EQ(0, nl_open(&self->nl));
	detach_all(&self->nl);
	ASSERT_EQ(0, pm_format(&self->nl, dev(), 1)) TH_LOG("%s", self->nl.msg);
	ASSERT_EQ(0, pm_attach(&self->nl, dev(), &self->p)) TH_LOG("%s", self->nl.msg);
	ret = pm_create(&self->nl, INDEX_NAME, PMIDX_ENGINE_B3);
	if (ret == -EOPNOTSUPP) {
		self->skip = true;
		return;
	}
	ASSERT_EQ(0, ret) TH_LOG("%s", self->nl.msg);
	ASSERT_EQ(0, open_index(self));
}

FIXTURE_TEARDOWN(b3)
{
	if (self->c.fd >= 0)
		close(self->c.fd);
	detach_all(&self->nl);
	nl_close(&self->nl);
}

#define REQUIRE_B3() do {						\
	if (self->skip)							\
		SKIP(return, "engine b3 is not built into pmidx.ko");	\
} while (0)

/* The checker passes and counts @keys live keys. */
#define ASSERT_CHECK(keys) do {						\
	uint64_t __keys = 0;						\
	ASSERT_EQ(0, op_check(&self->c, &__keys));			\
	ASSERT_EQ((uint64_t)(keys), __keys);				\
} while (0)

/* Clean detach and attach: b3 recovers nothing, the pages are as left. */
static int reattach(FIXTURE_DATA(b3) *self)
{
	int ret;

	close(self->c.fd);
	self->c.fd = -1;
	ret = pm_detach(&self->nl, self->p.name);
	if (!ret)
		ret = pm_attach(&self->nl, dev(), &self->p);
	if (!ret && (self->p.flags & PMIDX_POOL_F_RECOVERED))
		ret = -EUCLEAN;
	return ret ?: open_index(self);
}

static uint64_t used_bytes(FIXTURE_DATA(b3) *self)
{
	struct pool_info p;

	if (pm_stats(&self->nl, NULL, &p))
		return 0;
	return p.stats[PMIDX_STAT_ALLOC_USED_BYTES];
}

/* 0 if 8-byte key @i holds its value of version @ver, else why not. */
static int get_is(const struct ctx *c, uint64_t i, uint32_t ver)
{
	uint8_t k[8], want[8], got[16];
	uint32_t gl = sizeof(got);
	int ret;

	key_be(i, k);
	val_of(i, ver, 0, want);
	ret = op_get(c, k, 8, got, &gl);
	if (ret)
		return ret;
	return gl == 8 && !memcmp(got, want, 8) ? 0 : -EBADMSG;
}

/*
 * Scan 8-byte keys [@lo, @hi): @want(i) says which keys must be there
 * (every other key must not), each with version @ver. Return: the number
 * of records, or a negative errno (-EBADMSG: wrong content or order).
 */
static long scan_range(const struct ctx *c, uint64_t lo, uint64_t hi,
		       bool (*want)(uint64_t i, void *arg), void *arg,
		       uint32_t ver)
{
	static __thread uint8_t buf[32768];
	uint8_t start[8], end[8], wantv[8];
	uint64_t next = lo, i;
	long n = 0;
	bool after = false;

	key_be(lo, start);
	key_be(hi, end);
	for (;;) {
		struct scan_req r = {
			.start = start, .start_len = 8, .end = end, .end_len = 8,
			.flags = after ? PMIDX_SCAN_AFTER : 0, .count = 500,
			.buf = buf, .len = sizeof(buf),
		};
		const uint8_t *k, *v;
		uint32_t off = 0, kl, vl, got;
		int ret = op_scan(c, &r);

		if (ret)
			return ret;
		for (got = 0; got < r.count; got++) {
			if (rec_next(buf, r.len, &off, &k, &kl, &v, &vl) || kl != 8)
				return -EBADMSG;
			memcpy(start, k, 8);	/* resume after the last one */
			i = 0;
			for (kl = 0; kl < 8; kl++)
				i = i << 8 | k[kl];
			/* in order, none missing before it */
			if (i < next || i >= hi || !want(i, arg))
				return -EBADMSG;
			for (; next < i; next++)
				if (want(next, arg))
					return -EBADMSG;
			next = i + 1;
			val_of(i, ver, 0, wantv);
			if (vl != 8 || memcmp(v, wantv, 8))
				return -EBADMSG;
			n++;
		}
		after = true;
		if (!(r.flags & PMIDX_SCAN_MORE))
			break;
	}
	for (; next < hi; next++)
		if (want(next, arg))
			return -EBADMSG;
	return n;
}

static bool every(uint64_t i, void *arg)
{
	return true;
}

static bool every_nth(uint64_t i, void *arg)
{
	return i % *(uint64_t *)arg == 0;
}

/* Put 8-byte keys @lo.. @hi - 1 (in a random order when @s) in version @ver. */
static int fill(const struct ctx *c, uint64_t lo, uint64_t hi, uint32_t ver,
		uint64_t *s)
{
	uint64_t n = hi - lo, i, j, *perm = NULL;
	uint8_t k[8], v[8];
	int ret = 0;

	if (s) {
		perm = malloc(n * sizeof(*perm));
		if (!perm)
			return -ENOMEM;
		for (i = 0; i < n; i++)
			perm[i] = lo + i;
		for (i = n - 1; i > 0; i--) {
			uint64_t t = perm[i];

			j = rng_below(s, i + 1);
			perm[i] = perm[j];
			perm[j] = t;
		}
	}
	for (i = 0; i < n && !ret; i++) {
		uint64_t x = perm ? perm[i] : lo + i;

		key_be(x, k);
		ret = op_put(c, k, 8, v, val_of(x, ver, 0, v), 0);
	}
	free(perm);
	return ret;
}

/* ---- splits and root growth ----------------------------------------- */

#define SPLIT_KEYS	12000	/* > 100 leaves, two levels of internal pages */

TEST_F_TIMEOUT(b3, splits_and_root_growth, 300)
{
	uint64_t s = test_seed() | 1, base = used_bytes(self), i;

	REQUIRE_B3();
	TH_LOG("seed %llu", (unsigned long long)s);
	/* ascending: every split at the right edge; then random between */
	ASSERT_EQ(0, fill(&self->c, 0, SPLIT_KEYS, 0, NULL));
	ASSERT_EQ(0, fill(&self->c, 1000000, 1000000 + SPLIT_KEYS / 2, 0, &s));
	ASSERT_CHECK(SPLIT_KEYS + SPLIT_KEYS / 2);
	/* at least one page per SLOTS keys, and internal pages above them */
	ASSERT_LT(base + (SPLIT_KEYS + SPLIT_KEYS / 2) / SLOTS * 4096, used_bytes(self));
	ASSERT_EQ(SPLIT_KEYS, scan_range(&self->c, 0, SPLIT_KEYS, every, NULL, 0));
	ASSERT_EQ(SPLIT_KEYS / 2, scan_range(&self->c, 1000000, 1000000 + SPLIT_KEYS / 2,
					     every, NULL, 0));
	for (i = 0; i < 2000; i++)
		ASSERT_EQ(0, get_is(&self->c, rng_below(&s, SPLIT_KEYS), 0));
	/* a clean detach and attach recovers nothing and changes nothing */
	ASSERT_EQ(0, reattach(self));
	ASSERT_CHECK(SPLIT_KEYS + SPLIT_KEYS / 2);
	ASSERT_EQ(SPLIT_KEYS, scan_range(&self->c, 0, SPLIT_KEYS, every, NULL, 0));
}

/* ---- deletes: merges, page copies, and growing back ------------------ */

TEST_F_TIMEOUT(b3, deletes_merge_and_regrow, 300)
{
	uint64_t s = test_seed() | 1, keep = 16, peak, i, x, n = 0;
	uint8_t *present = calloc(SPLIT_KEYS, 1), k[8];

	REQUIRE_B3();
	ASSERT_NE(NULL, present);
	TH_LOG("seed %llu", (unsigned long long)s);
	ASSERT_EQ(0, fill(&self->c, 0, SPLIT_KEYS, 0, &s));
	memset(present, 1, SPLIT_KEYS);
	ASSERT_EQ(0, reattach(self));
	peak = used_bytes(self);
	/*
	 * Delete all but every 16th key, first at random (nodes with two
	 * children: path or page copies; emptied leaves: merges), then
	 * the rest in order; deleting a missing key answers -ENOENT.
	 */
	for (i = 0; i < SPLIT_KEYS * 2; i++) {
		x = rng_below(&s, SPLIT_KEYS);
		if (x % keep == 0)
			continue;
		key_be(x, k);
		ASSERT_EQ(present[x] ? 0 : -ENOENT, op_del(&self->c, k, 8)) TH_LOG("key %llu",
			  (unsigned long long)x);
		present[x] = 0;
	}
	for (x = 0; x < SPLIT_KEYS; x++) {
		if (x % keep == 0 || !present[x])
			continue;
		key_be(x, k);
		ASSERT_EQ(0, op_del(&self->c, k, 8)) TH_LOG("key %llu", (unsigned long long)x);
	}
	for (x = 0; x < SPLIT_KEYS; x++)
		n += x % keep == 0;
	ASSERT_CHECK(n);
	ASSERT_EQ(n, scan_range(&self->c, 0, SPLIT_KEYS, every_nth, &keep, 0));
	/* retired pages are freed once their epochs end: by a clean detach */
	ASSERT_EQ(0, reattach(self));
	ASSERT_CHECK(n);
	TH_LOG("pool bytes used: %llu with every key, %llu with one in %llu",
	       (unsigned long long)peak, (unsigned long long)used_bytes(self),
	       (unsigned long long)keep);
	ASSERT_GT(peak, used_bytes(self)) TH_LOG("merged leaves were not given back");
	/* and every key again, in a new version */
	ASSERT_EQ(0, fill(&self->c, 0, SPLIT_KEYS, 1, &s));
	ASSERT_CHECK(SPLIT_KEYS);
	ASSERT_EQ(SPLIT_KEYS, scan_range(&self->c, 0, SPLIT_KEYS, every, NULL, 1));
	free(present);
}

/* ---- overwrites: in place, new nodes, defragmentation ---------------- */

TEST_F_TIMEOUT(b3, overwrites_defragment, 300)
{
	static uint8_t v[PMIDX_VALUE_MAX], got[PMIDX_VALUE_MAX];
	uint64_t base, i, ver;
	uint32_t vl, gl;
	uint8_t k[8];

	REQUIRE_B3();
	/* half a page of keys, overwritten again and again */
	ASSERT_EQ(0, fill(&self->c, 0, SLOTS / 2, 0, NULL));
	base = used_bytes(self);
	for (ver = 1; ver <= 60; ver++) {
		for (i = 0; i < SLOTS / 2; i++) {
			key_be(i, k);
			/*
			 * same length: one store in place; other lengths:
			 * a new node (the page fills, is copied), or a blob
			 */
			vl = ver % 3 == 0 ? 8 : ver % 3 == 1 ? 1 + (i + ver) % 8 : 9 + i * ver % 300;
			val_of(i, ver, vl, v);
			ASSERT_EQ(0, op_put(&self->c, k, 8, v, vl, 0));
		}
	}
	for (i = 0; i < SLOTS / 2; i++) {
		key_be(i, k);
		vl = val_of(i, 60, 8, v);
		gl = sizeof(got);
		ASSERT_EQ(0, op_get(&self->c, k, 8, got, &gl));
		ASSERT_EQ(vl, gl);
		ASSERT_EQ(0, memcmp(v, got, vl));
	}
	ASSERT_CHECK(SLOTS / 2);
	ASSERT_EQ(0, reattach(self));
	ASSERT_CHECK(SLOTS / 2);
	/* 3,540 overwrites cost a few pages, not one per 118 */
	ASSERT_GE(base + 4 * 4096, used_bytes(self))
		TH_LOG("%llu bytes more after the overwrites",
		       (unsigned long long)(used_bytes(self) - base));
}

/* ---- blob keys and values -------------------------------------------- */

/* Key @i of 8..255 bytes (over 8: a blob key), ordered by @i first. */
static uint32_t long_key(uint64_t i, uint8_t *k)
{
	uint32_t kl = 1 + i * 37 % 255, j;

	key_be(i, k);
	for (j = 8; j < kl; j++)
		k[j] = 'a' + (i + j) % 26;
	return kl < 8 ? 8 : kl;
}

TEST_F_TIMEOUT(b3, blob_keys_and_values, 300)
{
	static uint8_t v[PMIDX_VALUE_MAX], got[PMIDX_VALUE_MAX];
	uint8_t k[PMIDX_KEY_MAX];
	uint32_t kl, vl, gl, n = 1500, i, ver;
	uint64_t s = test_seed() | 1;

	REQUIRE_B3();
	TH_LOG("seed %llu", (unsigned long long)s);
	/* enough long keys for splits: separators own blob copies */
	for (ver = 0; ver < 3; ver++) {
		for (i = 0; i < n; i++) {
			kl = long_key(i, k);
			vl = ver == 1 && i % 50 == 0 ? PMIDX_VALUE_MAX - i :
			     (i * 13 + ver) % 600;
			val_of(i, ver, vl ?: 1, v);
			ASSERT_EQ(0, op_put(&self->c, k, kl, v, vl ?: 1, 0));
		}
	}
	/* a third of them deleted: blob keys and values freed */
	for (i = 0; i < n; i += 3) {
		kl = long_key(i, k);
		ASSERT_EQ(0, op_del(&self->c, k, kl));
	}
	ASSERT_CHECK(n - (n + 2) / 3);
	ASSERT_EQ(0, reattach(self));
	ASSERT_CHECK(n - (n + 2) / 3);
	for (i = 0; i < n; i++) {
		kl = long_key(i, k);
		gl = sizeof(got);
		if (i % 3 == 0) {
			ASSERT_EQ(-ENOENT, op_get(&self->c, k, kl, got, &gl));
			continue;
		}
		vl = (i * 13 + 2) % 600 ?: 1;
		val_of(i, 2, vl, v);
		ASSERT_EQ(0, op_get(&self->c, k, kl, got, &gl)) TH_LOG("key %u", i);
		ASSERT_EQ(vl, gl);
		ASSERT_EQ(0, memcmp(v, got, vl));
	}
}

/* ---- lock-free readers while writers split and merge ----------------- */

#define RW_WRITERS	2
#define RW_READERS	2
#define RW_STABLE	4000	/* keys 0, 2, 4...: never touched during the race */
#define RW_OPS		6000	/* per writer: odd keys put and deleted */

struct rw {
	const struct ctx	*c;
	atomic_int		writers_left;
	atomic_ulong		reads, scans;
	atomic_int		errors;
	char			msg[256];
};

struct rw_arg {
	struct rw	*sh;
	uint32_t	id;
	uint64_t	seed;
};

static void rw_fail(struct rw *sh, const char *what, uint64_t key, int ret)
{
	if (atomic_fetch_add(&sh->errors, 1) == 0)
		snprintf(sh->msg, sizeof(sh->msg), "%s of key %llu: %d", what,
			 (unsigned long long)key, ret);
}

static void *rw_writer(void *p)
{
	struct rw_arg *a = p;
	struct rw *sh = a->sh;
	uint64_t s = a->seed * 2 + a->id + 1, x;
	uint8_t k[8], v[8];
	uint32_t op;
	int ret;

	/* each writer its own odd keys, in bursts: pages split and empty */
	for (op = 0; op < RW_OPS && !atomic_load(&sh->errors); op++) {
		x = 2 * (rng_below(&s, RW_STABLE / 2) * RW_WRITERS + a->id) + 1;
		key_be(x, k);
		if (op % 1000 < 600) {
			ret = op_put(sh->c, k, 8, v, val_of(x, 0, 0, v), 0);
			if (ret)
				rw_fail(sh, "put", x, ret);
		} else {
			ret = op_del(sh->c, k, 8);
			if (ret && ret != -ENOENT)
				rw_fail(sh, "del", x, ret);
		}
	}
	atomic_fetch_sub(&sh->writers_left, 1);
	return NULL;
}

/* odd keys come and go: a scan may see any of them, never miss an even one */
static long scan_evens(const struct ctx *c, uint64_t lo, uint64_t hi)
{
	static __thread uint8_t buf[65536];
	uint8_t start[8], end[8];
	uint64_t next = lo, last = 0, i;	/* next: the even key due */
	bool after = false;
	long n = 0;

	key_be(lo, start);
	key_be(hi, end);
	for (;;) {
		struct scan_req r = {
			.start = start, .start_len = 8, .end = end, .end_len = 8,
			.flags = after ? PMIDX_SCAN_AFTER : 0, .count = 200,
			.buf = buf, .len = sizeof(buf),
		};
		const uint8_t *k, *v;
		uint32_t off = 0, kl, vl, got, j;
		int ret = op_scan(c, &r);

		if (ret)
			return ret;
		for (got = 0; got < r.count; got++) {
			if (rec_next(buf, r.len, &off, &k, &kl, &v, &vl) || kl != 8)
				return -EBADMSG;
			memcpy(start, k, 8);
			for (i = 0, j = 0; j < 8; j++)
				i = i << 8 | k[j];
			if (i < lo || i >= hi || (n + after && i <= last))
				return -EBADMSG;	/* out of range or order */
			last = i;
			if (i % 2)
				continue;
			if (i != next)
				return -EBADMSG;	/* an even key missed */
			next = i + 2;
			n++;
		}
		after = true;
		if (!(r.flags & PMIDX_SCAN_MORE))
			break;
	}
	return n;
}

static void *rw_reader(void *p)
{
	struct rw_arg *a = p;
	struct rw *sh = a->sh;
	uint64_t s = a->seed * 3 + a->id + 7, x;
	unsigned long reads = 0, scans = 0;
	long n;
	int ret;

	while (atomic_load(&sh->writers_left) && !atomic_load(&sh->errors)) {
		if (rng_below(&s, 20) == 0) {
			x = rng_below(&s, 2 * RW_STABLE - 400) & ~1ULL;
			n = scan_evens(sh->c, x, x + 400);
			if (n != 200)
				rw_fail(sh, "scan of 400 from", x, (int)n);
			scans++;
			continue;
		}
		x = 2 * rng_below(&s, RW_STABLE);
		ret = get_is(sh->c, x, 0);
		if (ret)
			rw_fail(sh, "get", x, ret);
		reads++;
	}
	atomic_fetch_add(&sh->reads, reads);
	atomic_fetch_add(&sh->scans, scans);
	return NULL;
}

TEST_F_TIMEOUT(b3, readers_during_splits_and_merges, 300)
{
	struct rw_arg args[RW_WRITERS + RW_READERS];
	pthread_t tid[RW_WRITERS + RW_READERS];
	uint64_t seed = test_seed(), x, keys;
	struct rw *sh = calloc(1, sizeof(*sh));
	uint8_t k[8];
	int i;

	REQUIRE_B3();
	ASSERT_NE(NULL, sh);
	TH_LOG("seed %llu", (unsigned long long)seed);
	for (x = 0; x < RW_STABLE; x++) {
		uint8_t v[8];

		key_be(2 * x, k);
		ASSERT_EQ(0, op_put(&self->c, k, 8, v, val_of(2 * x, 0, 0, v), 0));
	}
	sh->c = &self->c;
	sh->writers_left = RW_WRITERS;
	for (i = 0; i < RW_WRITERS + RW_READERS; i++) {
		args[i] = (struct rw_arg){ sh, i < RW_WRITERS ? i : i - RW_WRITERS, seed };
		ASSERT_EQ(0, pthread_create(&tid[i], NULL,
					    i < RW_WRITERS ? rw_writer : rw_reader, &args[i]));
	}
	for (i = 0; i < RW_WRITERS + RW_READERS; i++)
		pthread_join(tid[i], NULL);
	TH_LOG("%lu gets, %lu scans beside %d writers", (unsigned long)sh->reads,
	       (unsigned long)sh->scans, RW_WRITERS);
	ASSERT_EQ(0, sh->errors) TH_LOG("%d errors, the first: %s", sh->errors, sh->msg);
	ASSERT_LT(0, sh->reads);
	/* every even key, and the odd ones the writers left */
	ASSERT_EQ(0, op_check(&self->c, &keys));
	ASSERT_LE(RW_STABLE, keys);
	ASSERT_EQ(RW_STABLE, scan_evens(&self->c, 0, 2 * RW_STABLE));
	ASSERT_EQ(0, reattach(self));
	ASSERT_EQ(0, op_check(&self->c, &x));
	ASSERT_EQ(keys, x);
	free(sh);
}

TEST_HARNESS_MAIN
