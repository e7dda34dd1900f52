// SPDX-License-Identifier: GPL-2.0
/*
 * ccl (CCL-BTree) engine tests over the raw PMIDX_IOC_CMD ioctl, run in
 * the VM with a pool attached and a ccl index (default "t", or $CCL_INDEX):
 *
 *   pmidxctl format /dev/pmem0 && pmidxctl attach /dev/pmem0 &&
 *   pmidxctl create-index t --engine ccl && ccl_smoke
 *
 * Without arguments it runs the kselftest cases below. With a command it
 * is a tool for selftests/vm/ccl_recovery.sh (reboots, power cuts) and
 * for measurements:
 *
 *   ccl_smoke fill INDEX SEED N       write a deterministic data set
 *   ccl_smoke verify INDEX SEED N     check it (get, scan, check count)
 *   ccl_smoke ackwrite INDEX DIR T [GEN]
 *                                     T writers until killed, logging each
 *                                     op before (I) and after (A) it to
 *                                     DIR/ack-<t>.log with O_DSYNC (GEN:
 *                                     key space, 0..1, for several cuts)
 *   ccl_smoke ackverify INDEX DIR T [GEN]
 *                                     every acknowledged op survived
 *   ccl_smoke bench INDEX N           N 8-byte puts then N gets: ops/s,
 *                                     pool flushes per put
 *
 * Each kselftest case uses its own first key byte, so cases do not see
 * each other's keys, and compares the checker's key count by difference.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "kselftest_harness.h"
#include "pmidx_data.h"

#define DEV		"/dev/pmidx0"
#define CTL		"build/bin/pmidxctl"
#define PARAM(x)	"/sys/module/pmidx/parameters/" x
#define VMAX		PMIDX_VALUE_MAX

static const char *index_name(void)
{
	const char *n = getenv("CCL_INDEX");

	return n && *n ? n : "t";
}

static int ctx_open(struct ctx *c, const char *name)
{
	uint64_t engine;

	c->path = &ioctl_path;
	c->fd = open(DEV, O_RDWR);
	if (c->fd < 0)
		return -errno;
	if (op_lookup(c, name, &c->index, &engine)) {
		close(c->fd);
		return -ENOENT;
	}
	return engine == PMIDX_ENGINE_CCL ? 0 : -EINVAL;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static int param_get(const char *path)
{
	FILE *f = fopen(path, "r");
	int v = -1;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

static int param_set(const char *path, int v)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fprintf(f, "%d\n", v);
	return fclose(f);
}

/*
 * A statistic from `pmidxctl stats --json`: of index @idx, or of the pool
 * when @idx is NULL. Return: the value, or -1.
 */
static long long stat_get(const char *idx, const char *key)
{
	char *buf = malloc(1 << 16), pat[128], *p;
	long long v = -1;
	size_t n;
	FILE *f;

	if (!buf)
		return -1;
	f = popen(CTL " stats --json", "r");
	if (!f) {
		free(buf);
		return -1;
	}
	n = fread(buf, 1, (1 << 16) - 1, f);
	pclose(f);
	buf[n] = 0;
	p = buf;
	if (idx) {
		snprintf(pat, sizeof(pat), "\"name\":\"%s\",\"engine\"", idx);
		p = strstr(buf, pat);
	}
	snprintf(pat, sizeof(pat), "\"%s\":", key);
	if (p)
		p = strstr(p, pat);
	if (p)
		v = strtoll(p + strlen(pat), NULL, 10);
	free(buf);
	return v;
}

static uint64_t check_keys(const struct ctx *c)
{
	uint64_t keys = 0;

	if (op_check(c, &keys))
		return UINT64_MAX;
	return keys;
}

/* ---- keys and values ------------------------------------------------ */

/* An 8-byte key: tag, sub-tag, then a 48-bit big-endian number. */
static void key8(uint8_t *k, uint8_t tag, uint8_t sub, uint64_t n)
{
	int i;

	k[0] = tag;
	k[1] = sub;
	for (i = 0; i < 6; i++)
		k[2 + i] = n >> (8 * (5 - i));
}

/*
 * A key for number @n (< 2^24) under @tag: tag, n in 3 bytes, filler up
 * to a length from 4 to 255 that depends on n (half are exactly 8 bytes,
 * the inline fast path).
 */
static uint32_t keyn(uint8_t *k, uint8_t tag, uint64_t n)
{
	static const uint8_t lens[] = { 8, 5, 8, 12, 8, 4, 8, 40, 8, 255, 8,
					7, 8, 9, 8, 100 };
	uint32_t len = lens[n % sizeof(lens)], i;
	uint64_t s = n * 0x9e3779b97f4a7c15ULL + tag;

	k[0] = tag;
	k[1] = n >> 16;
	k[2] = n >> 8;
	k[3] = n;
	for (i = 4; i < len; i++)
		k[i] = rng_next(&s);
	return len;
}

/* Value bytes for (@seed, @len): reproducible. */
static void valfill(uint8_t *v, uint32_t len, uint64_t seed)
{
	uint64_t s = seed | 1;
	uint32_t i;

	for (i = 0; i < len; i++)
		v[i] = rng_next(&s);
}

static uint32_t vlen_pick(uint64_t *s)
{
	static const uint32_t lens[] = { 8, 8, 8, 0, 1, 7, 9, 16, 24, 100,
					 255, 1000, 4096 };
	uint32_t r = rng_below(s, 100);

	if (r == 0)
		return VMAX;
	if (r == 1)
		return rng_below(s, VMAX);
	return lens[rng_below(s, sizeof(lens) / sizeof(lens[0]))];
}

/* Get @k and compare with @v/@vl (@vl == UINT32_MAX: must be absent). */
static int get_is(const struct ctx *c, const void *k, uint32_t kl,
		  const void *v, uint32_t vl, uint8_t *buf)
{
	uint32_t len = VMAX;
	int ret = op_get(c, k, kl, buf, &len);

	if (vl == UINT32_MAX)
		return ret == -ENOENT ? 0 : -1;
	if (ret || len != vl || memcmp(buf, v, vl))
		return -1;
	return 0;
}

/*
 * Scan [lo, hi) whole with @count records per call, resuming after the
 * last key; call @fn per record. Return: records, or -1 on a protocol
 * or order error.
 */
static long scan_all(const struct ctx *c, const void *lo, uint32_t lol,
		     const void *hi, uint32_t hil, uint32_t count,
		     int (*fn)(void *arg, const uint8_t *k, uint32_t kl,
			       const uint8_t *v, uint32_t vl),
		     void *arg)
{
	static __thread uint8_t buf[1 << 20], last[PMIDX_KEY_MAX];
	uint32_t lastl = 0, off;
	struct scan_req r;
	long n = 0;
	bool first = true;

	for (;;) {
		r = (struct scan_req){ .start = first ? lo : last,
			.start_len = first ? lol : lastl,
			.end = hi, .end_len = hil, .count = count, .buf = buf,
			.len = sizeof(buf),
			.flags = first ? 0 : PMIDX_SCAN_AFTER };
		if (op_scan(c, &r))
			return -1;
		for (off = 0; off < r.len;) {
			const uint8_t *k, *v;
			uint32_t kl, vl;

			if (rec_next(buf, r.len, &off, &k, &kl, &v, &vl))
				return -1;
			if ((!first || n) && key_cmp(last, lastl, k, kl) >= 0)
				return -1;
			if (key_cmp(k, kl, lo, lol) < 0 ||
			    (hil && key_cmp(k, kl, hi, hil) >= 0))
				return -1;
			if (fn && fn(arg, k, kl, v, vl))
				return -1;
			memcpy(last, k, kl);
			lastl = kl;
			n++;
		}
		if (!(r.flags & PMIDX_SCAN_MORE))
			return n;
		if (!r.count)
			return -1;
		first = false;
	}
}

/* ---- a reference map for the randomized test ------------------------ */

struct ref {
	uint8_t		key[PMIDX_KEY_MAX];
	uint32_t	kl;
	uint32_t	vl;		/* UINT32_MAX: absent */
	uint64_t	vseed;
};

static int ref_cmp(const void *a, const void *b)
{
	const struct ref *x = a, *y = b;

	return key_cmp(x->key, x->kl, y->key, y->kl);
}

struct ref_scan {
	struct ref	*r;
	size_t		n, i;
	uint8_t		*tmp;
};

static int ref_scan_fn(void *arg, const uint8_t *k, uint32_t kl,
		       const uint8_t *v, uint32_t vl)
{
	struct ref_scan *s = arg;

	while (s->i < s->n && s->r[s->i].vl == UINT32_MAX)
		s->i++;
	if (s->i == s->n)
		return -1;
	if (key_cmp(k, kl, s->r[s->i].key, s->r[s->i].kl) ||
	    vl != s->r[s->i].vl)
		return -1;
	valfill(s->tmp, vl, s->r[s->i].vseed);
	if (memcmp(v, s->tmp, vl))
		return -1;
	s->i++;
	return 0;
}

/* ---- kselftest cases ------------------------------------------------- */

FIXTURE(ccl) {
	struct ctx	c;
	uint8_t		*buf, *val;
	uint64_t	keys0;
};

FIXTURE_SETUP(ccl)
{
	ASSERT_EQ(0, ctx_open(&self->c, index_name())) {
		TH_LOG("no ccl index \"%s\" on %s", index_name(), DEV);
	}
	self->buf = malloc(VMAX + 64);
	self->val = malloc(VMAX + 64);
	ASSERT_NE(NULL, self->buf);
	ASSERT_NE(NULL, self->val);
	self->keys0 = check_keys(&self->c);
	ASSERT_NE(UINT64_MAX, self->keys0);
}

FIXTURE_TEARDOWN(ccl)
{
	free(self->buf);
	free(self->val);
	close(self->c.fd);
}

TEST_F(ccl, point_ops)
{
	static const uint32_t klens[] = { 1, 7, 8, 9, 16, 255 };
	static const uint32_t vlens[] = { 0, 1, 7, 8, 9, 100, 4096, VMAX };
	uint8_t k[8], small[4];
	uint32_t len, i, j, kl;
	uint8_t lk[PMIDX_KEY_MAX];
	uint64_t v = 0x1122334455667788ULL;
	long n;

	key8(k, 0x10, 0, 1);
	ASSERT_EQ(-ENOENT, op_del(&self->c, k, 8));
	ASSERT_EQ(0, op_put(&self->c, k, 8, &v, 8, 0));
	ASSERT_EQ(0, get_is(&self->c, k, 8, &v, 8, self->buf));
	len = sizeof(small);
	ASSERT_EQ(-ENOSPC, op_get(&self->c, k, 8, small, &len));
	ASSERT_EQ(8, len);
	v++;
	ASSERT_EQ(0, op_put(&self->c, k, 8, &v, 8, 0));
	ASSERT_EQ(0, get_is(&self->c, k, 8, &v, 8, self->buf));
	ASSERT_EQ(-EEXIST, op_put(&self->c, k, 8, &v, 8, PMIDX_PUT_INSERT));
	ASSERT_EQ(0, op_del(&self->c, k, 8));
	ASSERT_EQ(-ENOENT, op_del(&self->c, k, 8));
	ASSERT_EQ(0, get_is(&self->c, k, 8, NULL, UINT32_MAX, self->buf));
	ASSERT_EQ(0, op_put(&self->c, k, 8, &v, 8, PMIDX_PUT_INSERT));

	/* every key length class against every value length class */
	for (i = 0; i < 6; i++) {
		kl = klens[i];
		memset(lk, 0x11, kl);
		lk[0] = 0x11;
		for (j = 0; j < 8; j++) {
			if (kl > 1)
				lk[1] = j;
			valfill(self->val, vlens[j], i * 8 + j);
			ASSERT_EQ(0, op_put(&self->c, lk, kl, self->val,
					    vlens[j], 0));
			ASSERT_EQ(0, get_is(&self->c, lk, kl, self->val,
					    vlens[j], self->buf));
			/* an update to another size class */
			valfill(self->val, vlens[7 - j], i * 8 + j + 100);
			ASSERT_EQ(0, op_put(&self->c, lk, kl, self->val,
					    vlens[7 - j], 0));
			ASSERT_EQ(0, get_is(&self->c, lk, kl, self->val,
					    vlens[7 - j], self->buf));
			if (kl == 1)
				break;
		}
	}
	n = scan_all(&self->c, "\x11", 1, "\x12", 1, 3, NULL, NULL);
	ASSERT_EQ(1 + 5 * 8, n);
	ASSERT_EQ(self->keys0 + 2 + 5 * 8, check_keys(&self->c));
	/* delete them all again */
	for (i = 0; i < 6; i++) {
		kl = klens[i];
		memset(lk, 0x11, kl);
		for (j = 0; j < 8; j++) {
			if (kl > 1)
				lk[1] = j;
			ASSERT_EQ(0, op_del(&self->c, lk, kl));
			ASSERT_EQ(-ENOENT, op_del(&self->c, lk, kl));
			if (kl == 1)
				break;
		}
	}
	ASSERT_EQ(0, op_del(&self->c, k, 8));
	ASSERT_EQ(0, scan_all(&self->c, "\x10", 1, "\x12", 1, 100, NULL, NULL));
	ASSERT_EQ(self->keys0, check_keys(&self->c));
}

static int count_fn(void *arg, const uint8_t *k, uint32_t kl,
		    const uint8_t *v, uint32_t vl)
{
	uint64_t n = 0;
	int i;

	for (i = 2; i < 8; i++)
		n = n << 8 | k[i];
	/* the value is the key's number */
	return kl != 8 || vl != 8 || memcmp(v, &n, 8);
}

TEST_F(ccl, splits_and_merges)
{
	const uint64_t n = 30000;
	uint64_t *perm = malloc(n * sizeof(*perm)), s = 42, i, t;
	long long dram0, dram1, dram2;
	uint8_t k[8];

	ASSERT_NE(NULL, perm);
	for (i = 0; i < n; i++)
		perm[i] = i;
	for (i = n - 1; i > 0; i--) {
		uint64_t j = rng_below(&s, i + 1);

		t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
	dram0 = stat_get(index_name(), "dram_bytes");
	for (i = 0; i < n; i++) {
		key8(k, 0x20, 0, perm[i]);
		ASSERT_EQ(0, op_put(&self->c, k, 8, &perm[i], 8, 0));
	}
	for (i = 0; i < n; i += 7) {
		key8(k, 0x20, 0, i);
		ASSERT_EQ(0, get_is(&self->c, k, 8, &i, 8, self->buf));
	}
	ASSERT_EQ(n, scan_all(&self->c, "\x20", 1, "\x21", 1, 97, count_fn,
			      NULL));
	ASSERT_EQ(self->keys0 + n, check_keys(&self->c));
	dram1 = stat_get(index_name(), "dram_bytes");
	TH_LOG("dram bytes %lld -> %lld after %llu inserts", dram0, dram1,
	       (unsigned long long)n);
	ASSERT_LT(dram0 + 100000, dram1);	/* leaves were split */

	/* delete 95% in random order: leaves fall below half and merge */
	for (i = 0; i < n; i++) {
		if (perm[i] % 20 == 0)
			continue;
		key8(k, 0x20, 0, perm[i]);
		ASSERT_EQ(0, op_del(&self->c, k, 8));
	}
	ASSERT_EQ(n / 20, scan_all(&self->c, "\x20", 1, "\x21", 1, 33,
				   count_fn, NULL));
	for (i = 0; i < n; i += 3) {
		key8(k, 0x20, 0, i);
		ASSERT_EQ(0, get_is(&self->c, k, 8, &i,
				    i % 20 ? UINT32_MAX : 8, self->buf));
	}
	ASSERT_EQ(self->keys0 + n / 20, check_keys(&self->c));
	dram2 = stat_get(index_name(), "dram_bytes");
	TH_LOG("dram bytes %lld after deleting 95%%", dram2);
	ASSERT_LT(dram2, dram1 / 2);		/* leaves were merged */
	for (i = 0; i < n; i += 20) {
		key8(k, 0x20, 0, i);
		ASSERT_EQ(0, op_del(&self->c, k, 8));
	}
	ASSERT_EQ(self->keys0, check_keys(&self->c));
	free(perm);
}

TEST_F(ccl, long_keys_and_values)
{
	const uint32_t n = 3000;
	uint32_t *vl = calloc(n, sizeof(*vl)), kl, i;
	uint64_t s = 7, *seed = calloc(n, sizeof(*seed));
	uint8_t k[PMIDX_KEY_MAX];

	ASSERT_NE(NULL, vl);
	ASSERT_NE(NULL, seed);
	for (i = 0; i < n; i++) {
		kl = keyn(k, 0x30, i);
		vl[i] = vlen_pick(&s);
		seed[i] = rng_next(&s);
		valfill(self->val, vl[i], seed[i]);
		ASSERT_EQ(0, op_put(&self->c, k, kl, self->val, vl[i], 0));
	}
	for (i = 0; i < n; i++) {
		kl = keyn(k, 0x30, i);
		if (i % 2 == 0) {
			vl[i] = vlen_pick(&s);
			seed[i] = rng_next(&s);
			valfill(self->val, vl[i], seed[i]);
			ASSERT_EQ(0, op_put(&self->c, k, kl, self->val, vl[i],
					    0));
		} else if (i % 4 == 1) {
			ASSERT_EQ(0, op_del(&self->c, k, kl));
			vl[i] = UINT32_MAX;
		}
	}
	for (i = 0; i < n; i++) {
		kl = keyn(k, 0x30, i);
		if (vl[i] != UINT32_MAX)
			valfill(self->val, vl[i], seed[i]);
		ASSERT_EQ(0, get_is(&self->c, k, kl, self->val, vl[i],
				    self->buf)) {
			TH_LOG("key %u (len %u)", i, kl);
		}
	}
	ASSERT_EQ(n - n / 4, scan_all(&self->c, "\x30", 1, "\x31", 1, 50,
				      NULL, NULL));
	ASSERT_EQ(self->keys0 + n - n / 4, check_keys(&self->c));
	for (i = 0; i < n; i++) {
		kl = keyn(k, 0x30, i);
		if (vl[i] != UINT32_MAX)
			ASSERT_EQ(0, op_del(&self->c, k, kl));
	}
	ASSERT_EQ(self->keys0, check_keys(&self->c));
	free(vl);
	free(seed);
}

TEST_F(ccl, random_vs_reference)
{
	const uint32_t nkeys = 5000, ops = 60000;
	struct ref *ref = calloc(nkeys, sizeof(*ref));
	struct ref_scan rs = { .r = ref, .n = nkeys, .tmp = self->val };
	uint64_t s = 20240601, live = 0;
	uint32_t i, op, r;
	int ret;

	ASSERT_NE(NULL, ref);
	for (i = 0; i < nkeys; i++) {
		ref[i].kl = keyn(ref[i].key, 0x40, i * 7919 % 65536);
		ref[i].vl = UINT32_MAX;
	}
	for (op = 0; op < ops; op++) {
		struct ref *e = &ref[rng_below(&s, nkeys)];

		r = rng_below(&s, 100);
		if (r < 50) {
			uint32_t vl = vlen_pick(&s) % 2048;
			uint64_t vs = rng_next(&s);
			bool ins = r < 5;

			valfill(self->val, vl, vs);
			ret = op_put(&self->c, e->key, e->kl, self->val, vl,
				     ins ? PMIDX_PUT_INSERT : 0);
			if (ins && e->vl != UINT32_MAX) {
				ASSERT_EQ(-EEXIST, ret);
				continue;
			}
			ASSERT_EQ(0, ret);
			live += e->vl == UINT32_MAX;
			e->vl = vl;
			e->vseed = vs;
		} else if (r < 75) {
			ret = op_del(&self->c, e->key, e->kl);
			ASSERT_EQ(e->vl == UINT32_MAX ? -ENOENT : 0, ret);
			live -= e->vl != UINT32_MAX;
			e->vl = UINT32_MAX;
		} else {
			if (e->vl != UINT32_MAX)
				valfill(self->val, e->vl, e->vseed);
			ASSERT_EQ(0, get_is(&self->c, e->key, e->kl, self->val,
					    e->vl, self->buf)) {
				TH_LOG("op %u", op);
			}
		}
	}
	qsort(ref, nkeys, sizeof(*ref), ref_cmp);
	ASSERT_EQ((long)live, scan_all(&self->c, "\x40", 1, "\x41", 1, 64,
				       ref_scan_fn, &rs));
	ASSERT_EQ(self->keys0 + live, check_keys(&self->c));
	for (i = 0; i < nkeys; i++)
		if (ref[i].vl != UINT32_MAX)
			ASSERT_EQ(0, op_del(&self->c, ref[i].key, ref[i].kl));
	ASSERT_EQ(self->keys0, check_keys(&self->c));
	free(ref);
}

/* ---- concurrency with GC forced --------------------------------------- */

#define CW_KEYS		1000
#define CW_WRITERS	2
#define CW_READERS	2

struct cval {
	uint64_t	key;
	uint64_t	ver;
};

/*
 * Per key: the last op begun and the last op acknowledged, each as
 * version << 1 | deleted. A get that starts after an acknowledgement and
 * ends before the next begin must see exactly that op; otherwise any op
 * between the two.
 */
struct cshared {
	const char		*name;
	atomic_uint_fast64_t	state[CW_WRITERS][CW_KEYS];	/* acked */
	atomic_uint_fast64_t	begun[CW_WRITERS][CW_KEYS];
	atomic_bool		stop;
	atomic_long		errors;
	atomic_long		ops;
	char			err[256];
};

static void cerr(struct cshared *sh, const char *what, uint64_t key)
{
	if (atomic_fetch_add(&sh->errors, 1) == 0)
		snprintf(sh->err, sizeof(sh->err), "%s (key %#llx)", what,
			 (unsigned long long)key);
}

static uint64_t ckey(uint8_t *k, int w, uint64_t i)
{
	key8(k, 0x50, w, i);
	return (uint64_t)w << 32 | i;
}

struct cthread {
	struct cshared	*sh;
	int		id;
};

static void *cwriter(void *arg)
{
	struct cthread *ct = arg;
	struct cshared *sh = ct->sh;
	uint64_t s = 1000 + ct->id, ver[CW_KEYS] = { 0 }, i, v8;
	struct ctx c;
	uint8_t k[8];
	int ret;

	if (ctx_open(&c, sh->name)) {
		cerr(sh, "writer open", 0);
		return NULL;
	}
	while (!atomic_load(&sh->stop)) {
		struct cval v;
		bool del, was;

		i = rng_below(&s, CW_KEYS);
		v.key = ckey(k, ct->id, i);
		v.ver = ++ver[i];
		del = rng_below(&s, 10) == 0;
		was = atomic_load(&sh->state[ct->id][i]) &&
		      !(atomic_load(&sh->state[ct->id][i]) & 1);
		atomic_store(&sh->begun[ct->id][i], v.ver << 1 | del);
		if (del) {
			ret = op_del(&c, k, 8);
			if (ret != (was ? 0 : -ENOENT))
				cerr(sh, "writer del", v.key);
		} else if (i % 2) {
			/* 16-byte values: out of line, through the blob heap */
			ret = op_put(&c, k, 8, &v, sizeof(v), 0);
			if (ret)
				cerr(sh, "writer put", v.key);
		} else {
			/* 8-byte values, inline: key and version in 32 bits each */
			v8 = v.key << 32 | (uint32_t)v.ver;
			ret = op_put(&c, k, 8, &v8, 8, 0);
			if (ret)
				cerr(sh, "writer put", v.key);
		}
		atomic_store(&sh->state[ct->id][i], v.ver << 1 | del);
		atomic_fetch_add(&sh->ops, 1);
	}
	close(c.fd);
	return NULL;
}

static void *creader(void *arg)
{
	struct cthread *ct = arg;
	struct cshared *sh = ct->sh;
	uint64_t s = 2000 + ct->id, s0, b1, i, key, ver;
	struct cval v;
	struct ctx c;
	uint32_t len;
	uint8_t k[8];
	int w, ret;

	if (ctx_open(&c, sh->name)) {
		cerr(sh, "reader open", 0);
		return NULL;
	}
	while (!atomic_load(&sh->stop)) {
		w = rng_below(&s, CW_WRITERS);
		i = rng_below(&s, CW_KEYS);
		key = ckey(k, w, i);
		s0 = atomic_load(&sh->state[w][i]);
		len = sizeof(v);
		memset(&v, 0, sizeof(v));
		ret = op_get(&c, k, 8, &v, &len);
		b1 = atomic_load(&sh->begun[w][i]);
		if (ret == -ENOENT) {
			/* the acked op was a put and no other op began */
			if (s0 && !(s0 & 1) && b1 == s0)
				cerr(sh, "reader lost a put", key);
			continue;
		}
		if (ret) {
			cerr(sh, "reader get", key);
			continue;
		}
		if (len == 8) {
			ver = (uint32_t)v.key;
			if (v.key >> 32 != (uint32_t)key) {
				cerr(sh, "reader wrong value", key);
				continue;
			}
		} else if (len != sizeof(v) || v.key != key) {
			cerr(sh, "reader wrong value", key);
			continue;
		} else {
			ver = v.ver;
		}
		if (ver < (s0 >> 1) || (ver == (s0 >> 1) && (s0 & 1)))
			cerr(sh, "reader saw an old version", key);
		else if (ver > (b1 >> 1))
			cerr(sh, "reader saw a future version", key);
	}
	close(c.fd);
	return NULL;
}

struct cscan {
	struct cshared	*sh;
	long		stable;
};

static int cscan_fn(void *arg, const uint8_t *k, uint32_t kl,
		    const uint8_t *v, uint32_t vl)
{
	struct cscan *cs = arg;
	uint64_t key;

	if (k[1] == 9) {
		cs->stable++;
		return 0;
	}
	key = (uint64_t)k[1] << 32 | (uint64_t)k[4] << 24 |
	      (uint64_t)k[5] << 16 | k[6] << 8 | k[7];
	if (vl == 8) {
		uint64_t v8;

		memcpy(&v8, v, 8);
		return v8 >> 32 != (uint32_t)key;
	}
	return vl != 16 || memcmp(v, &key, 8);
}

static void *cscanner(void *arg)
{
	struct cthread *ct = arg;
	struct cshared *sh = ct->sh;
	struct cscan cs = { .sh = sh };
	struct ctx c;
	long n;

	if (ctx_open(&c, sh->name)) {
		cerr(sh, "scanner open", 0);
		return NULL;
	}
	while (!atomic_load(&sh->stop)) {
		cs.stable = 0;
		n = scan_all(&c, "\x50", 1, "\x51", 1, 64, cscan_fn, &cs);
		if (n < 0)
			cerr(sh, "scan out of order or bad record", 0);
		else if (cs.stable != CW_KEYS)
			cerr(sh, "scan skipped a key that never changed",
			     cs.stable);
	}
	close(c.fd);
	return NULL;
}

TEST_F(ccl, concurrent_with_gc)
{
	struct cshared *sh = calloc(1, sizeof(*sh));
	pthread_t th[CW_WRITERS + CW_READERS + 1];
	struct cthread ct[CW_WRITERS + CW_READERS + 1];
	int th_log = param_get(PARAM("ccl_th_log"));
	long long gc0, gc1;
	uint64_t i, st;
	uint8_t k[8];
	int w, n = 0;

	ASSERT_NE(NULL, sh);
	ASSERT_LE(0, th_log) {
		TH_LOG("no ccl_th_log module parameter");
	}
	sh->name = index_name();
	for (i = 0; i < CW_KEYS; i++) {
		key8(k, 0x50, 9, i);
		ASSERT_EQ(0, op_put(&self->c, k, 8, &i, 8, 0));
	}
	gc0 = stat_get(index_name(), "gc_runs");
	/* collect whenever the log holds 4 KiB */
	ASSERT_EQ(0, param_set(PARAM("ccl_th_log"), 0));
	for (w = 0; w < CW_WRITERS; w++) {
		ct[n] = (struct cthread){ sh, w };
		pthread_create(&th[n], NULL, cwriter, &ct[n]);
		n++;
	}
	for (w = 0; w < CW_READERS; w++) {
		ct[n] = (struct cthread){ sh, w };
		pthread_create(&th[n], NULL, creader, &ct[n]);
		n++;
	}
	ct[n] = (struct cthread){ sh, 0 };
	pthread_create(&th[n], NULL, cscanner, &ct[n]);
	n++;
	sleep(8);
	atomic_store(&sh->stop, true);
	for (w = 0; w < n; w++)
		pthread_join(th[w], NULL);
	param_set(PARAM("ccl_th_log"), th_log);
	gc1 = stat_get(index_name(), "gc_runs");
	TH_LOG("%ld writes, gc runs %lld -> %lld", atomic_load(&sh->ops),
	       gc0, gc1);
	EXPECT_EQ(0, atomic_load(&sh->errors)) {
		TH_LOG("first error: %s", sh->err);
	}
	EXPECT_LT(gc0 + 2, gc1);

	/* the final state is every key's last write */
	for (w = 0; w < CW_WRITERS; w++) {
		for (i = 0; i < CW_KEYS; i++) {
			struct cval v;
			uint32_t len = sizeof(v);
			int ret;

			st = atomic_load(&sh->state[w][i]);
			ckey(k, w, i);
			ret = op_get(&self->c, k, 8, &v, &len);
			if (!st || (st & 1)) {
				EXPECT_EQ(-ENOENT, ret);
			} else {
				EXPECT_EQ(0, ret);
				EXPECT_EQ(st >> 1, len == 16 ? v.ver :
					  (uint32_t)v.key);
			}
			if (!ret)
				op_del(&self->c, k, 8);
		}
	}
	for (i = 0; i < CW_KEYS; i++) {
		key8(k, 0x50, 9, i);
		ASSERT_EQ(0, op_del(&self->c, k, 8));
	}
	ASSERT_EQ(self->keys0, check_keys(&self->c));
	free(sh);
}

/* ---- tools: deterministic data sets ------------------------------------ */

/* The data set for (seed, n): key i's value, or absent. */
static uint32_t ds_val(uint64_t seed, uint64_t i, uint64_t *vseed)
{
	uint64_t s = seed * 1000003 + i;

	rng_next(&s);
	*vseed = rng_next(&s);
	if (i % 10 == 3)
		return UINT32_MAX;	/* written, then deleted */
	return vlen_pick(&s) % 3000;
}

static int cmd_fill(const char *name, uint64_t seed, uint64_t n)
{
	uint8_t k[PMIDX_KEY_MAX], *v = malloc(VMAX);
	uint64_t i, vs;
	uint32_t kl, vl;
	struct ctx c;

	if (!v || ctx_open(&c, name))
		return 1;
	for (i = 0; i < n; i++) {
		kl = keyn(k, 0x70 + seed % 8, i);
		vl = ds_val(seed, i, &vs);
		valfill(v, vl == UINT32_MAX ? 8 : vl, vs);
		if (op_put(&c, k, kl, v, vl == UINT32_MAX ? 8 : vl, 0))
			return fprintf(stderr, "fill: put %llu failed\n",
				       (unsigned long long)i), 1;
		if (vl == UINT32_MAX && op_del(&c, k, kl))
			return fprintf(stderr, "fill: del %llu failed\n",
				       (unsigned long long)i), 1;
	}
	printf("fill: %llu keys written\n", (unsigned long long)n);
	return 0;
}

static int cmd_verify(const char *name, uint64_t seed, uint64_t n)
{
	uint8_t k[PMIDX_KEY_MAX], *v = malloc(VMAX), *b = malloc(VMAX);
	uint64_t i, vs, live = 0, keys;
	uint8_t lo[1] = { 0x70 + seed % 8 }, hi[1] = { 0x71 + seed % 8 };
	uint32_t kl, vl;
	struct ctx c;
	long got;

	if (!v || !b || ctx_open(&c, name))
		return 1;
	for (i = 0; i < n; i++) {
		kl = keyn(k, 0x70 + seed % 8, i);
		vl = ds_val(seed, i, &vs);
		if (vl != UINT32_MAX) {
			valfill(v, vl, vs);
			live++;
		}
		if (get_is(&c, k, kl, v, vl, b))
			return fprintf(stderr, "verify: key %llu wrong\n",
				       (unsigned long long)i), 1;
	}
	got = scan_all(&c, lo, 1, hi, 1, 128, NULL, NULL);
	if (got != (long)live)
		return fprintf(stderr, "verify: scan found %ld of %llu\n", got,
			       (unsigned long long)live), 1;
	if (op_check(&c, &keys))
		return fprintf(stderr, "verify: check failed\n"), 1;
	printf("verify: %llu keys ok (index holds %llu)\n",
	       (unsigned long long)live, (unsigned long long)keys);
	return 0;
}

/* ---- tools: power cut with an acknowledgement log ---------------------- */

#define ACK_KEYS	3000

struct ackw {
	const char	*name, *dir;
	int		id, tag;
};

/* The op of writer @w at sequence @seq: key number, value length or del. */
static void ack_op(int w, uint64_t seq, uint32_t *ki, uint32_t *vl,
		   uint64_t *vs)
{
	uint64_t s = (uint64_t)w << 40 | seq;

	rng_next(&s);
	*ki = rng_below(&s, ACK_KEYS);
	*vs = rng_next(&s);
	*vl = rng_below(&s, 8) == 0 ? UINT32_MAX : vlen_pick(&s) % 600;
}

static void *ack_writer(void *arg)
{
	struct ackw *a = arg;
	uint8_t k[PMIDX_KEY_MAX], *v = malloc(VMAX);
	char path[512], line[96];
	uint32_t ki, vl, kl;
	uint64_t seq, vs;
	struct ctx c;
	int fd, ret;

	snprintf(path, sizeof(path), "%s/ack-%d.log", a->dir, a->id);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_DSYNC, 0644);
	if (fd < 0 || !v || ctx_open(&c, a->name)) {
		perror("ackwrite");
		exit(1);
	}
	for (seq = 1;; seq++) {
		ack_op(a->id, seq, &ki, &vl, &vs);
		kl = keyn(k, a->tag, ki);
		if (dprintf(fd, "I %llu\n", (unsigned long long)seq) < 0)
			exit(1);
		if (vl == UINT32_MAX) {
			ret = op_del(&c, k, kl);
		} else {
			valfill(v, vl, vs);
			ret = op_put(&c, k, kl, v, vl, 0);
		}
		snprintf(line, sizeof(line), "A %llu %d\n",
			 (unsigned long long)seq, ret);
		if (write(fd, line, strlen(line)) < 0 ||
		    (ret && ret != -ENOENT))
			exit(1);
	}
	return NULL;
}

static int cmd_ackwrite(const char *name, const char *dir, int n, int gen)
{
	struct ackw a[8];
	pthread_t th[8];
	int i;

	if (n < 1 || n > 8)
		return 2;
	for (i = 0; i < n; i++) {
		a[i] = (struct ackw){ name, dir, i, 0x60 + (gen * 8 + i) % 16 };
		pthread_create(&th[i], NULL, ack_writer, &a[i]);
	}
	for (i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	return 0;
}

struct akey {
	uint32_t	vl;	/* current, UINT32_MAX absent */
	uint64_t	vs;
	uint32_t	alt_vl;	/* the in-flight op's result, if any */
	uint64_t	alt_vs;
	bool		alt;
};

static int cmd_ackverify(const char *name, const char *dir, int n, int gen)
{
	uint8_t k[PMIDX_KEY_MAX], *v = malloc(VMAX), *b = malloc(VMAX);
	struct akey *st = calloc(ACK_KEYS, sizeof(*st));
	uint64_t acked = 0, inflight = 0, keys;
	char path[512], line[128];
	struct ctx c;
	int w, bad = 0;

	if (!v || !b || !st || ctx_open(&c, name))
		return 1;
	for (w = 0; w < n; w++) {
		unsigned long long seq, aseq, pending = 0;
		uint32_t ki, vl, i;
		uint64_t vs;
		int rc;
		FILE *f;

		snprintf(path, sizeof(path), "%s/ack-%d.log", dir, w);
		f = fopen(path, "r");
		if (!f)
			return fprintf(stderr, "ackverify: no %s\n", path), 1;
		for (i = 0; i < ACK_KEYS; i++)
			st[i] = (struct akey){ .vl = UINT32_MAX };
		while (fgets(line, sizeof(line), f)) {
			if (sscanf(line, "I %llu", &seq) == 1) {
				pending = seq;
			} else if (sscanf(line, "A %llu %d", &aseq, &rc) == 2) {
				if (aseq != pending)
					return fprintf(stderr, "ackverify: log order\n"), 1;
				ack_op(w, aseq, &ki, &vl, &vs);
				if (!rc) {
					st[ki].vl = vl;
					st[ki].vs = vs;
				}
				pending = 0;
				acked++;
			}
		}
		fclose(f);
		if (pending) {
			/* cut while this op ran: either outcome is fine */
			ack_op(w, pending, &ki, &vl, &vs);
			st[ki].alt = true;
			st[ki].alt_vl = vl;
			st[ki].alt_vs = vs;
			inflight++;
		}
		for (i = 0; i < ACK_KEYS; i++) {
			uint32_t kl = keyn(k, 0x60 + (gen * 8 + w) % 16, i);
			bool ok;

			if (st[i].vl != UINT32_MAX)
				valfill(v, st[i].vl, st[i].vs);
			ok = !get_is(&c, k, kl, v, st[i].vl, b);
			if (!ok && st[i].alt) {
				if (st[i].alt_vl != UINT32_MAX)
					valfill(v, st[i].alt_vl, st[i].alt_vs);
				ok = !get_is(&c, k, kl, v, st[i].alt_vl, b);
			}
			if (!ok && bad++ < 10)
				fprintf(stderr, "ackverify: writer %d key %u wrong\n",
					w, i);
		}
	}
	if (op_check(&c, &keys))
		return fprintf(stderr, "ackverify: check failed\n"), 1;
	printf("ackverify: %llu acknowledged ops, %llu in flight, %d wrong keys, index holds %llu keys\n",
	       (unsigned long long)acked, (unsigned long long)inflight, bad,
	       (unsigned long long)keys);
	return bad ? 1 : 0;
}

/* ---- tools: ops/s and flushes per put ----------------------------------- */

static int cmd_bench(const char *name, uint64_t n)
{
	uint64_t *perm = malloc(n * sizeof(*perm)), i, t, s = 99, v;
	long long f0, f1, f2, lf0, lf1, lb0, lb1;
	double put_s, get_s;
	struct ctx c;
	uint32_t len;
	uint8_t k[8];

	if (!perm || ctx_open(&c, name))
		return 1;
	for (i = 0; i < n; i++)
		perm[i] = i;
	for (i = n - 1; i > 0; i--) {
		uint64_t j = rng_below(&s, i + 1);

		t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
	f0 = stat_get(NULL, "flushes");
	lf0 = stat_get(name, "leaf_flushes");
	lb0 = stat_get(name, "log_bytes");
	t = now_ns();
	for (i = 0; i < n; i++) {
		key8(k, 0xb0, 0, perm[i]);
		if (op_put(&c, k, 8, &perm[i], 8, 0))
			return fprintf(stderr, "bench: put failed\n"), 1;
	}
	put_s = (now_ns() - t) / 1e9;
	f1 = stat_get(NULL, "flushes");
	lf1 = stat_get(name, "leaf_flushes");
	lb1 = stat_get(name, "log_bytes");
	t = now_ns();
	for (i = 0; i < n; i++) {
		key8(k, 0xb0, 0, perm[(i * 7919) % n]);
		len = 8;
		if (op_get(&c, k, 8, &v, &len) || v != perm[(i * 7919) % n])
			return fprintf(stderr, "bench: get failed\n"), 1;
	}
	get_s = (now_ns() - t) / 1e9;
	f2 = stat_get(NULL, "flushes");
	printf("bench %s: nbatch=%d puts %.0f ops/s, gets %.0f ops/s, flushes/put %.3f, leaf flushes/put %.3f, log entries/put %.3f (if no GC ran), flushes/get %.3f, buffer hits %lld\n",
	       name, param_get(PARAM("ccl_nbatch")), n / put_s, n / get_s,
	       (double)(f1 - f0) / n, (double)(lf1 - lf0) / n,
	       (double)(lb1 - lb0) / 24 / n, (double)(f2 - f1) / n,
	       stat_get(name, "buffer_hits"));
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 5 && !strcmp(argv[1], "fill"))
		return cmd_fill(argv[2], strtoull(argv[3], NULL, 0),
				strtoull(argv[4], NULL, 0));
	if (argc >= 5 && !strcmp(argv[1], "verify"))
		return cmd_verify(argv[2], strtoull(argv[3], NULL, 0),
				  strtoull(argv[4], NULL, 0));
	if (argc >= 5 && !strcmp(argv[1], "ackwrite"))
		return cmd_ackwrite(argv[2], argv[3], atoi(argv[4]),
				    argc > 5 ? atoi(argv[5]) : 0);
	if (argc >= 5 && !strcmp(argv[1], "ackverify"))
		return cmd_ackverify(argv[2], argv[3], atoi(argv[4]),
				     argc > 5 ? atoi(argv[5]) : 0);
	if (argc >= 4 && !strcmp(argv[1], "bench"))
		return cmd_bench(argv[2], strtoull(argv[3], NULL, 0));
	return test_harness_run(argc, argv);
}
