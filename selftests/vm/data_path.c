// SPDX-License-Identifier: GPL-2.0
/*
 * Data-path tests of /dev/pmidxN, run inside the VM as root with
 * pmidx.ko loaded, once per engine (ccl, utree, b3, lodge, pfart) and path (ioctl,
 * io_uring) as fixture variants. A variant whose engine is not built into
 * the module is skipped: creating its index answers -EOPNOTSUPP.
 *
 * Every command goes through the variant's struct path_ops (ioctl now,
 * io_uring passthrough later), except the checks of the ioctl itself.
 *
 * Every test starts from a freshly formatted pool holding one index,
 * and ends with the engine's checker passing.
 *
 *   PMIDX_DEV=/dev/pmemN  the namespace to use (default: the largest)
 *   PMIDX_SEED=N          seed of the randomized tests (default: time)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include "kselftest_harness.h"
#include "pmidx_nl.h"
#include "pmidx_data.h"
#include "uring_path.h"
#include "pmem_dev.h"

#define INDEX_NAME	"data"

/* ---- reference ordered map ------------------------------------------ */

struct ref_ent {
	uint8_t		key[PMIDX_KEY_MAX];
	uint32_t	klen;
	uint8_t		*val;
	uint32_t	vlen;
};

struct ref {
	struct ref_ent	*e;
	uint32_t	n, cap;
};

/* First entry >= key (> key when @after). */
static uint32_t ref_lower(const struct ref *r, const void *k, uint32_t kl,
			  bool after)
{
	uint32_t lo = 0, hi = r->n, mid;
	int c;

	while (lo < hi) {
		mid = (lo + hi) / 2;
		c = key_cmp(r->e[mid].key, r->e[mid].klen, k, kl);
		if (c < 0 || (after && !c))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static struct ref_ent *ref_find(const struct ref *r, const void *k, uint32_t kl)
{
	uint32_t i = ref_lower(r, k, kl, false);

	if (i < r->n && !key_cmp(r->e[i].key, r->e[i].klen, k, kl))
		return &r->e[i];
	return NULL;
}

static void ref_put(struct ref *r, const void *k, uint32_t kl,
		    const void *v, uint32_t vl)
{
	struct ref_ent *e = ref_find(r, k, kl);
	uint32_t i;

	if (!e) {
		if (r->n == r->cap) {
			r->cap = r->cap ? 2 * r->cap : 256;
			r->e = realloc(r->e, r->cap * sizeof(*r->e));
		}
		i = ref_lower(r, k, kl, false);
		memmove(&r->e[i + 1], &r->e[i], (r->n - i) * sizeof(*r->e));
		r->n++;
		e = &r->e[i];
		memcpy(e->key, k, kl);
		e->klen = kl;
		e->val = NULL;
	}
	free(e->val);
	e->val = malloc(vl ? vl : 1);
	memcpy(e->val, v, vl);
	e->vlen = vl;
}

static bool ref_del(struct ref *r, const void *k, uint32_t kl)
{
	struct ref_ent *e = ref_find(r, k, kl);
	uint32_t i;

	if (!e)
		return false;
	i = e - r->e;
	free(e->val);
	memmove(&r->e[i], &r->e[i + 1], (r->n - i - 1) * sizeof(*r->e));
	r->n--;
	return true;
}

static void ref_free(struct ref *r)
{
	uint32_t i;

	for (i = 0; i < r->n; i++)
		free(r->e[i].val);
	free(r->e);
	memset(r, 0, sizeof(*r));
}

/*
 * Read the whole index with resumed scans into @out. Return: 0, a
 * negative errno, or -EBADMSG when the records are malformed, out of
 * order or repeated.
 */
static int snapshot(const struct ctx *c, struct ref *out)
{
	static uint8_t buf[1 << 20];
	uint8_t last[PMIDX_KEY_MAX];
	uint32_t last_len = 0, off, i, kl, vl;
	const uint8_t *k, *v;
	struct scan_req r;
	int ret;

	memset(out, 0, sizeof(*out));
	for (;;) {
		r = (struct scan_req){
			.start = last, .start_len = last_len,
			.flags = last_len ? PMIDX_SCAN_AFTER : 0,
			.count = 1000, .buf = buf, .len = sizeof(buf),
		};
		ret = op_scan(c, &r);
		if (ret)
			return ret;
		for (off = 0, i = 0; i < r.count; i++) {
			if (rec_next(buf, r.len, &off, &k, &kl, &v, &vl))
				return -EBADMSG;
			if (out->n && key_cmp(last, last_len, k, kl) >= 0)
				return -EBADMSG;
			ref_put(out, k, kl, v, vl);
			memcpy(last, k, kl);
			last_len = kl;
		}
		if (off != r.len)
			return -EBADMSG;
		if (!(r.flags & PMIDX_SCAN_MORE))
			return 0;
	}
}

static bool ref_equal(const struct ref *a, const struct ref *b)
{
	uint32_t i;

	if (a->n != b->n)
		return false;
	for (i = 0; i < a->n; i++)
		if (key_cmp(a->e[i].key, a->e[i].klen, b->e[i].key, b->e[i].klen) ||
		    a->e[i].vlen != b->e[i].vlen ||
		    memcmp(a->e[i].val, b->e[i].val, a->e[i].vlen))
			return false;
	return true;
}

/* ---- fixture -------------------------------------------------------- */

FIXTURE(data) {
	struct nl	nl;
	struct pool_info p;
	char		devpath[48];
	struct ctx	c;
	char		skip[96];	/* why its tests skip, "": they run */
};

FIXTURE_VARIANT(data) {
	const char		*engine;
	uint32_t		engine_id;
	const struct path_ops	*path;
};

FIXTURE_VARIANT_ADD(data, utree) {
	.engine		= "utree",
	.engine_id	= PMIDX_ENGINE_UTREE,
	.path		= &ioctl_path,
};

FIXTURE_VARIANT_ADD(data, ccl) {
	.engine		= "ccl",
	.engine_id	= PMIDX_ENGINE_CCL,
	.path		= &ioctl_path,
};

FIXTURE_VARIANT_ADD(data, b3) {
	.engine		= "b3",
	.engine_id	= PMIDX_ENGINE_B3,
	.path		= &ioctl_path,
};

FIXTURE_VARIANT_ADD(data, lodge) {
	.engine		= "lodge",
	.engine_id	= PMIDX_ENGINE_LODGE,
	.path		= &ioctl_path,
};

FIXTURE_VARIANT_ADD(data, pfart) {
	.engine		= "pfart",
	.engine_id	= PMIDX_ENGINE_PFART,
	.path		= &ioctl_path,
};

FIXTURE_VARIANT_ADD(data, utree_uring) {
	.engine		= "utree",
	.engine_id	= PMIDX_ENGINE_UTREE,
	.path		= &uring_path,
};

FIXTURE_VARIANT_ADD(data, ccl_uring) {
	.engine		= "ccl",
	.engine_id	= PMIDX_ENGINE_CCL,
	.path		= &uring_path,
};

FIXTURE_VARIANT_ADD(data, b3_uring) {
	.engine		= "b3",
	.engine_id	= PMIDX_ENGINE_B3,
	.path		= &uring_path,
};

FIXTURE_VARIANT_ADD(data, lodge_uring) {
	.engine		= "lodge",
	.engine_id	= PMIDX_ENGINE_LODGE,
	.path		= &uring_path,
};

FIXTURE_VARIANT_ADD(data, pfart_uring) {
	.engine		= "pfart",
	.engine_id	= PMIDX_ENGINE_PFART,
	.path		= &uring_path,
};

static int open_index(FIXTURE_DATA(data) *self,
		      const FIXTURE_VARIANT(data) *variant)
{
	uint64_t engine;
	int ret;

	snprintf(self->devpath, sizeof(self->devpath), "/dev/%s", self->p.name);
	self->c.fd = open(self->devpath, O_RDWR | O_CLOEXEC);
	if (self->c.fd < 0)
		return -errno;
	self->c.path = variant->path;
	ret = op_lookup(&self->c, INDEX_NAME, &self->c.index, &engine);
	if (!ret && engine != variant->engine_id)
		ret = -EPROTO;
	return ret;
}

FIXTURE_SETUP(data)
{
	char label[48];
	int ret;

	self->c.fd = -1;
	ASSERT_EQ(0, nl_open(&self->nl));
	detach_all(&self->nl);
	ASSERT_EQ(0, pm_format(&self->nl, dev(), 1)) TH_LOG("%s", self->nl.msg);
	ASSERT_EQ(0, pm_attach(&self->nl, dev(), &self->p)) TH_LOG("%s", self->nl.msg);
	snprintf(label, sizeof(label), "%s%s", variant->engine, variant->path == &uring_path ? "_uring" : "");
	if (!variant_wanted(label)) {
		snprintf(self->skip, sizeof(self->skip),
			 "variant %s not in PMIDX_VARIANTS", label);
		return;
	}
	ret = pm_create(&self->nl, INDEX_NAME, variant->engine_id);
	/* an engine the module does not build is refused, nothing persisted */
	if (ret == -EOPNOTSUPP) {
		snprintf(self->skip, sizeof(self->skip),
			 "engine %s is not built into pmidx.ko", variant->engine);
		return;
	}
	ASSERT_EQ(0, ret) TH_LOG("%s", self->nl.msg);
	ASSERT_EQ(0, open_index(self, variant));
}

FIXTURE_TEARDOWN(data)
{
	if (self->c.fd >= 0)
		close(self->c.fd);
	detach_all(&self->nl);
	nl_close(&self->nl);
}

#define REQUIRE_ENGINE() do {						\
	if (self->skip[0])						\
		SKIP(return, "%s", self->skip);				\
} while (0)

/* The checker passes and counts @keys live keys. */
#define ASSERT_CHECK(keys) do {						\
	uint64_t __keys = 0;						\
	ASSERT_EQ(0, op_check(&self->c, &__keys));			\
	ASSERT_EQ((uint64_t)(keys), __keys);				\
} while (0)

/* The index holds exactly @want (keys, values, order). */
#define ASSERT_CONTENT(want) do {					\
	struct ref __got;						\
	ASSERT_EQ(0, snapshot(&self->c, &__got));			\
	ASSERT_EQ((want)->n, __got.n);					\
	ASSERT_TRUE(ref_equal((want), &__got));				\
	ref_free(&__got);						\
} while (0)

static int put_str(const struct ctx *c, const char *k, const char *v)
{
	return op_put(c, k, strlen(k), v, strlen(v), 0);
}

/* 0 if @k holds exactly @v (vl bytes), else the error or -EBADMSG. */
static int get_is(const struct ctx *c, const void *k, uint32_t kl,
		  const void *v, uint32_t vl)
{
	static uint8_t buf[PMIDX_VALUE_MAX];
	uint32_t len = sizeof(buf);
	int ret = op_get(c, k, kl, buf, &len);

	if (ret)
		return ret;
	return len == vl && !memcmp(buf, v, vl) ? 0 : -EBADMSG;
}

static int get_str(const struct ctx *c, const char *k, const char *v)
{
	return get_is(c, k, strlen(k), v, strlen(v));
}


/* ---- point operations ----------------------------------------------- */

TEST_F(data, point_ops)
{
	static const uint32_t lens[] = { 8, 100, 0, 8, 9, 4000, 7, 1 };
	uint8_t val[4000];
	uint32_t i, len;

	REQUIRE_ENGINE();
	ASSERT_EQ(-ENOENT, get_str(&self->c, "apple", ""));
	ASSERT_EQ(0, put_str(&self->c, "apple", "red"));
	ASSERT_EQ(0, put_str(&self->c, "banana", "yellow"));
	ASSERT_EQ(0, put_str(&self->c, "cherry", "dark red"));
	ASSERT_EQ(0, get_str(&self->c, "apple", "red"));
	ASSERT_EQ(0, get_str(&self->c, "banana", "yellow"));
	ASSERT_EQ(0, get_str(&self->c, "cherry", "dark red"));
	ASSERT_CHECK(3);
	/* upsert: the value changes size across the 8-byte inline limit */
	for (i = 0; i < ARRAY_SIZE(lens); i++) {
		memset(val, 'a' + i, lens[i]);
		ASSERT_EQ(0, op_put(&self->c, "banana", 6, val, lens[i], 0));
		ASSERT_EQ(0, get_is(&self->c, "banana", 6, val, lens[i]));
	}
	ASSERT_EQ(0, op_del(&self->c, "apple", 5));
	ASSERT_EQ(-ENOENT, get_str(&self->c, "apple", "red"));
	len = 0;
	ASSERT_EQ(-ENOENT, op_get(&self->c, "apple", 5, NULL, &len));
	ASSERT_EQ(0, get_str(&self->c, "cherry", "dark red"));
	ASSERT_EQ(0, put_str(&self->c, "apple", "green"));
	ASSERT_EQ(0, get_str(&self->c, "apple", "green"));
	ASSERT_CHECK(3);
}

TEST_F(data, insert_only)
{
	REQUIRE_ENGINE();
	ASSERT_EQ(0, op_put(&self->c, "k", 1, "first", 5, PMIDX_PUT_INSERT));
	ASSERT_EQ(-EEXIST, op_put(&self->c, "k", 1, "second", 6, PMIDX_PUT_INSERT));
	ASSERT_EQ(0, get_str(&self->c, "k", "first"));
	ASSERT_EQ(0, op_put(&self->c, "k", 1, "third", 5, 0));	/* upsert */
	ASSERT_EQ(0, get_str(&self->c, "k", "third"));
	ASSERT_EQ(-EEXIST, op_put(&self->c, "k", 1, "", 0, PMIDX_PUT_INSERT));
	ASSERT_EQ(0, get_str(&self->c, "k", "third"));
	ASSERT_EQ(0, op_del(&self->c, "k", 1));
	ASSERT_EQ(0, op_put(&self->c, "k", 1, "fourth", 6, PMIDX_PUT_INSERT));
	ASSERT_EQ(0, get_str(&self->c, "k", "fourth"));
	/* a prefix or extension of a key is another key */
	ASSERT_EQ(0, op_put(&self->c, "kk", 2, "x", 1, PMIDX_PUT_INSERT));
	ASSERT_EQ(0, op_put(&self->c, "k\0", 2, "y", 1, PMIDX_PUT_INSERT));
	ASSERT_EQ(0, get_str(&self->c, "k", "fourth"));
	ASSERT_CHECK(3);
}

TEST_F(data, del_missing)
{
	struct ref before;

	REQUIRE_ENGINE();
	ASSERT_EQ(-ENOENT, op_del(&self->c, "ghost", 5));
	ASSERT_EQ(0, put_str(&self->c, "a", "1"));
	ASSERT_EQ(0, put_str(&self->c, "abc", "2"));
	ASSERT_EQ(0, snapshot(&self->c, &before));
	ASSERT_EQ(-ENOENT, op_del(&self->c, "ab", 2));	/* between two keys */
	ASSERT_EQ(-ENOENT, op_del(&self->c, "abcd", 4));
	ASSERT_EQ(-ENOENT, op_del(&self->c, "a\0", 2));
	ASSERT_CONTENT(&before);
	ASSERT_EQ(0, op_del(&self->c, "abc", 3));
	ASSERT_EQ(-ENOENT, op_del(&self->c, "abc", 3));	/* deleted twice */
	ASSERT_EQ(0, get_str(&self->c, "a", "1"));
	ASSERT_CHECK(1);
	ref_free(&before);
}

TEST_F(data, get_buffer_too_small)
{
	uint8_t val[100], buf[128];
	uint32_t len;

	REQUIRE_ENGINE();
	memset(val, 'v', sizeof(val));
	ASSERT_EQ(0, op_put(&self->c, "k", 1, val, sizeof(val), 0));
	memset(buf, '#', sizeof(buf));
	len = 10;
	ASSERT_EQ(-ENOSPC, op_get(&self->c, "k", 1, buf, &len));
	ASSERT_EQ(100, len);
	ASSERT_EQ('#', buf[0]);		/* nothing copied */
	ASSERT_EQ('#', buf[9]);
	len = 99;
	ASSERT_EQ(-ENOSPC, op_get(&self->c, "k", 1, buf, &len));
	ASSERT_EQ(100, len);
	len = 0;
	ASSERT_EQ(-ENOSPC, op_get(&self->c, "k", 1, NULL, &len));
	ASSERT_EQ(100, len);
	len = 100;
	ASSERT_EQ(0, op_get(&self->c, "k", 1, buf, &len));
	ASSERT_EQ(100, len);
	ASSERT_EQ(0, memcmp(buf, val, 100));
	ASSERT_EQ('#', buf[100]);	/* nothing beyond the value */
	/* an empty value fits any buffer, even none */
	ASSERT_EQ(0, op_put(&self->c, "e", 1, NULL, 0, 0));
	len = 0;
	ASSERT_EQ(0, op_get(&self->c, "e", 1, NULL, &len));
	ASSERT_EQ(0, len);
	ASSERT_CHECK(2);
}

TEST_F(data, key_value_limits)
{
	static uint8_t big[PMIDX_VALUE_MAX + 1], buf[PMIDX_VALUE_MAX];
	uint8_t k255[PMIDX_KEY_MAX + 1];
	uint32_t len;

	REQUIRE_ENGINE();
	memset(big, 'B', sizeof(big));
	memset(k255, 'K', sizeof(k255));
	ASSERT_EQ(0, op_put(&self->c, "\x01", 1, "one-byte key", 12, 0));
	ASSERT_EQ(0, op_put(&self->c, k255, 255, "long key", 8, 0));
	ASSERT_EQ(0, op_put(&self->c, "empty", 5, NULL, 0, 0));
	ASSERT_EQ(0, op_put(&self->c, "max", 3, big, PMIDX_VALUE_MAX, 0));
	k255[254] = 'L';
	ASSERT_EQ(0, op_put(&self->c, k255, 255, big, PMIDX_VALUE_MAX, 0));
	ASSERT_EQ(0, get_is(&self->c, "\x01", 1, "one-byte key", 12));
	ASSERT_EQ(0, get_is(&self->c, k255, 255, big, PMIDX_VALUE_MAX));
	k255[254] = 'K';
	ASSERT_EQ(0, get_is(&self->c, k255, 255, "long key", 8));
	ASSERT_EQ(0, get_is(&self->c, "empty", 5, NULL, 0));
	len = sizeof(buf);
	ASSERT_EQ(0, op_get(&self->c, "max", 3, buf, &len));
	ASSERT_EQ(PMIDX_VALUE_MAX, len);
	ASSERT_EQ(0, memcmp(buf, big, len));
	len = PMIDX_VALUE_MAX - 1;
	ASSERT_EQ(-ENOSPC, op_get(&self->c, "max", 3, buf, &len));
	ASSERT_EQ(PMIDX_VALUE_MAX, len);
	/* keys of 8 and 9 bytes: inline and out of line */
	ASSERT_EQ(0, op_put(&self->c, "12345678", 8, "8", 1, 0));
	ASSERT_EQ(0, op_put(&self->c, "123456789", 9, "9", 1, 0));
	ASSERT_EQ(0, get_is(&self->c, "12345678", 8, "8", 1));
	ASSERT_EQ(0, get_is(&self->c, "123456789", 9, "9", 1));
	/* over the limits: refused, nothing stored */
	ASSERT_EQ(-EINVAL, op_put(&self->c, k255, 256, "x", 1, 0));
	ASSERT_EQ(-EINVAL, op_put(&self->c, "", 0, "x", 1, 0));
	len = sizeof(buf);
	ASSERT_EQ(-EINVAL, op_get(&self->c, k255, 256, buf, &len));
	ASSERT_EQ(-EINVAL, op_del(&self->c, k255, 256));
	ASSERT_EQ(-E2BIG, op_put(&self->c, "huge", 4, big, PMIDX_VALUE_MAX + 1, 0));
	ASSERT_EQ(-ENOENT, get_is(&self->c, "huge", 4, NULL, 0));
	ASSERT_EQ(-E2BIG, op_put(&self->c, "max", 3, big, PMIDX_VALUE_MAX + 1, 0));
	ASSERT_EQ(0, get_is(&self->c, "max", 3, big, PMIDX_VALUE_MAX));
	/* shrink the big values back to small ones */
	ASSERT_EQ(0, op_put(&self->c, "max", 3, "s", 1, 0));
	ASSERT_EQ(0, get_is(&self->c, "max", 3, "s", 1));
	ASSERT_CHECK(7);
}

TEST_F(data, key_order)
{
	/* ascending memcmp order, shorter first on a common prefix */
	static const struct { const char *k; uint32_t kl; } keys[] = {
		{ "\0", 1 }, { "\0\0", 2 }, { "\x01", 1 }, { "a", 1 },
		{ "a\0", 2 }, { "a\0\0", 3 }, { "aa", 2 }, { "ab", 2 },
		{ "b", 1 }, { "\x7f", 1 }, { "\x80", 1 }, { "\xff", 1 },
		{ "\xff\xff", 2 },
	};
	const int n = ARRAY_SIZE(keys);
	struct ref got;
	int i;

	REQUIRE_ENGINE();
	for (i = n - 1; i >= 0; i -= 2)
		ASSERT_EQ(0, op_put(&self->c, keys[i].k, keys[i].kl, &i, 1, 0));
	for (i = n - 2; i >= 0; i -= 2)
		ASSERT_EQ(0, op_put(&self->c, keys[i].k, keys[i].kl, &i, 1, 0));
	ASSERT_EQ(0, snapshot(&self->c, &got));
	ASSERT_EQ(n, got.n);
	for (i = 0; i < n; i++) {
		ASSERT_EQ(keys[i].kl, got.e[i].klen);
		ASSERT_EQ(0, memcmp(keys[i].k, got.e[i].key, keys[i].kl));
	}
	ref_free(&got);
	ASSERT_CHECK(n);
}

/* ---- scans ---------------------------------------------------------- */

/* Keys "k000".."k099" (step 1) with values "v<n>" of n % 13 extra bytes. */
static int fill_k100(const struct ctx *c, struct ref *ref)
{
	char k[8], v[32];
	int i, ret;

	for (i = 0; i < 100; i++) {
		snprintf(k, sizeof(k), "k%03d", i);
		snprintf(v, sizeof(v), "v%d%.*s", i, i % 13, "+++++++++++++");
		ret = put_str(c, k, v);
		if (ret)
			return ret;
		if (ref)
			ref_put(ref, k, 4, v, strlen(v));
	}
	return 0;
}

/*
 * Scan with @start/@end/@flags/@count into a 1 MiB buffer and return
 * the number of records, checking that they are "k<first>", "k<first+1>"...
 * Returns -1 on a mismatch, or a negative errno. *@more := MORE flag.
 */
static int scan_k(const struct ctx *c, const char *start, const char *end,
		  uint16_t flags, uint32_t count, int first, bool *more)
{
	static uint8_t buf[1 << 20];
	struct scan_req r = {
		.start = start, .start_len = start ? strlen(start) : 0,
		.end = end, .end_len = end ? strlen(end) : 0,
		.flags = flags, .count = count, .buf = buf, .len = sizeof(buf),
	};
	uint32_t off = 0, i, kl, vl;
	const uint8_t *k, *v;
	char want[8];
	int ret = op_scan(c, &r);

	if (ret)
		return ret;
	for (i = 0; i < r.count; i++) {
		snprintf(want, sizeof(want), "k%03d", first + (int)i);
		if (rec_next(buf, r.len, &off, &k, &kl, &v, &vl) ||
		    kl != 4 || memcmp(k, want, 4) || vl < 2 || v[0] != 'v' ||
		    atoi((const char *)v + 1) != first + (int)i)
			return -1;
	}
	if (off != r.len)
		return -1;
	*more = r.flags & PMIDX_SCAN_MORE;
	return r.count;
}

TEST_F(data, scan_bounds)
{
	bool more;

	REQUIRE_ENGINE();
	/* an empty index: nothing, no MORE */
	ASSERT_EQ(0, scan_k(&self->c, NULL, NULL, 0, 10, 0, &more));
	ASSERT_FALSE(more);
	ASSERT_EQ(0, fill_k100(&self->c, NULL));
	/* whole range: from the first key, unbounded */
	ASSERT_EQ(100, scan_k(&self->c, NULL, NULL, 0, 1000, 0, &more));
	ASSERT_FALSE(more);
	/* start inclusive, end exclusive */
	ASSERT_EQ(10, scan_k(&self->c, "k010", "k020", 0, 1000, 10, &more));
	ASSERT_FALSE(more);
	/* PMIDX_SCAN_AFTER: start exclusive */
	ASSERT_EQ(9, scan_k(&self->c, "k010", "k020", PMIDX_SCAN_AFTER, 1000, 11, &more));
	/* bounds that are not keys */
	ASSERT_EQ(10, scan_k(&self->c, "k0105", "k0205", 0, 1000, 11, &more));
	ASSERT_EQ(10, scan_k(&self->c, "k0105", "k0205", PMIDX_SCAN_AFTER, 1000, 11, &more));
	ASSERT_EQ(100, scan_k(&self->c, "a", "z", 0, 1000, 0, &more));
	ASSERT_EQ(50, scan_k(&self->c, "k05", NULL, 0, 1000, 50, &more));
	ASSERT_EQ(5, scan_k(&self->c, NULL, "k005", 0, 1000, 0, &more));
	ASSERT_EQ(1, scan_k(&self->c, "k099", NULL, 0, 1000, 99, &more));
	/* empty ranges */
	ASSERT_EQ(0, scan_k(&self->c, "k099", NULL, PMIDX_SCAN_AFTER, 1000, 0, &more));
	ASSERT_FALSE(more);
	ASSERT_EQ(0, scan_k(&self->c, "k1", NULL, 0, 1000, 0, &more));
	ASSERT_FALSE(more);
	ASSERT_EQ(0, scan_k(&self->c, "k020", "k020", 0, 1000, 0, &more));
	ASSERT_FALSE(more);
	ASSERT_EQ(0, scan_k(&self->c, "k030", "k020", 0, 1000, 0, &more));
	ASSERT_FALSE(more);
	ASSERT_EQ(0, scan_k(&self->c, NULL, "k", 0, 1000, 0, &more));
	ASSERT_EQ(0, scan_k(&self->c, NULL, "k000", 0, 1000, 0, &more));
	ASSERT_EQ(1, scan_k(&self->c, NULL, "k0000", 0, 1000, 0, &more));
	ASSERT_CHECK(100);
}

/*
 * Read everything in batches of at most @fit bytes, resuming after the
 * last key. Return: 0, a negative errno, or -EBADMSG when a batch is
 * empty, malformed, or stopped although the next record would fit.
 */
static int scan_by_buffer(const struct ctx *c, uint32_t fit, uint32_t max_rec,
			  struct ref *got)
{
	static uint8_t buf[1 << 16];
	uint32_t off, i, kl, vl, used;
	char last[PMIDX_KEY_MAX + 1] = "";
	const uint8_t *k, *v;
	struct scan_req r;
	int ret;

	do {
		r = (struct scan_req){
			.start = last, .start_len = strlen(last),
			.flags = last[0] ? PMIDX_SCAN_AFTER : 0,
			.count = 1000, .buf = buf, .len = fit,
		};
		ret = op_scan(c, &r);
		if (ret)
			return ret;
		if (!r.count || r.len > fit)
			return -EBADMSG;
		for (off = 0, used = 0, i = 0; i < r.count; i++) {
			if (rec_next(buf, r.len, &off, &k, &kl, &v, &vl))
				return -EBADMSG;
			used += rec_size(kl, vl);
			ref_put(got, k, kl, v, vl);
			memcpy(last, k, kl);
			last[kl] = 0;
		}
		if (used != r.len)
			return -EBADMSG;
		/* stopped early: the next record did not fit */
		if ((r.flags & PMIDX_SCAN_MORE) && r.len + max_rec <= fit)
			return -EBADMSG;
	} while (r.flags & PMIDX_SCAN_MORE);
	return 0;
}

TEST_F(data, scan_count_and_resume)
{
	struct ref ref = { 0 }, got = { 0 };
	char last[8] = "";
	bool more;
	uint32_t i;

	REQUIRE_ENGINE();
	ASSERT_EQ(0, fill_k100(&self->c, &ref));
	/* count limits */
	ASSERT_EQ(1, scan_k(&self->c, NULL, NULL, 0, 1, 0, &more));
	ASSERT_TRUE(more);
	ASSERT_EQ(99, scan_k(&self->c, NULL, NULL, 0, 99, 0, &more));
	ASSERT_TRUE(more);
	ASSERT_EQ(100, scan_k(&self->c, NULL, NULL, 0, 100, 0, &more));
	ASSERT_FALSE(more);	/* exactly what is left: nothing more */
	ASSERT_EQ(10, scan_k(&self->c, "k010", "k020", 0, 10, 10, &more));
	ASSERT_FALSE(more);	/* the end bound came first */
	ASSERT_EQ(9, scan_k(&self->c, "k010", "k020", 0, 9, 10, &more));
	ASSERT_TRUE(more);
	/* resume by count: 7 at a time after the last key */
	for (i = 0; i < 100; i += 7) {
		ASSERT_EQ(i + 7 > 100 ? 100 - i : 7,
			  scan_k(&self->c, i ? last : NULL, NULL,
				 i ? PMIDX_SCAN_AFTER : 0, 7, i, &more));
		ASSERT_EQ(i + 7 < 100, more);
		snprintf(last, sizeof(last), "k%03u", i + 6);
	}
	/* resume by buffer: room for two to four records at a time */
	ASSERT_EQ(0, scan_by_buffer(&self->c, 3 * rec_size(4, 8),
				    rec_size(4, 15), &got));
	ASSERT_TRUE(ref_equal(&ref, &got));
	ref_free(&ref);
	ref_free(&got);
	ASSERT_CHECK(100);
}

TEST_F(data, scan_buffer_too_small)
{
	static uint8_t val[PMIDX_VALUE_MAX], buf[PMIDX_VALUE_MAX + 512];
	uint8_t key[PMIDX_KEY_MAX];
	const uint8_t *k, *v;
	uint32_t need, off = 0, kl, vl;
	struct scan_req r;

	REQUIRE_ENGINE();
	memset(key, 'k', sizeof(key));
	memset(val, 'v', sizeof(val));
	ASSERT_EQ(0, op_put(&self->c, "a", 1, val, 100, 0));
	ASSERT_EQ(0, op_put(&self->c, key, 255, val, PMIDX_VALUE_MAX, 0));
	/* the first record does not fit: -ENOSPC and the size it needs */
	need = rec_size(1, 100);
	r = (struct scan_req){ .count = 10, .buf = buf, .len = need - 1 };
	ASSERT_EQ(-ENOSPC, op_scan(&self->c, &r));
	ASSERT_EQ(need, r.len);
	r = (struct scan_req){ .count = 10, .buf = NULL, .len = 0 };
	ASSERT_EQ(-ENOSPC, op_scan(&self->c, &r));
	ASSERT_EQ(need, r.len);
	/* exactly its size: one record, MORE */
	r = (struct scan_req){ .count = 10, .buf = buf, .len = need };
	ASSERT_EQ(0, op_scan(&self->c, &r));
	ASSERT_EQ(1, r.count);
	ASSERT_EQ(need, r.len);
	ASSERT_TRUE(r.flags & PMIDX_SCAN_MORE);
	/* the largest record there is: 255-byte key, 64 KiB value */
	need = rec_size(255, PMIDX_VALUE_MAX);
	r = (struct scan_req){ .start = "a", .start_len = 1,
			       .flags = PMIDX_SCAN_AFTER, .count = 10,
			       .buf = buf, .len = 4096 };
	ASSERT_EQ(-ENOSPC, op_scan(&self->c, &r));
	ASSERT_EQ(need, r.len);
	r = (struct scan_req){ .start = "a", .start_len = 1,
			       .flags = PMIDX_SCAN_AFTER, .count = 10,
			       .buf = buf, .len = need };
	ASSERT_EQ(0, op_scan(&self->c, &r));
	ASSERT_EQ(1, r.count);
	ASSERT_EQ(need, r.len);
	ASSERT_FALSE(r.flags & PMIDX_SCAN_MORE);
	ASSERT_EQ(0, rec_next(buf, r.len, &off, &k, &kl, &v, &vl));
	ASSERT_EQ(255, kl);
	ASSERT_EQ(PMIDX_VALUE_MAX, vl);
	ASSERT_EQ(0, memcmp(k, key, 255));
	ASSERT_EQ(0, memcmp(v, val, vl));
	/* an empty range needs no buffer at all */
	r = (struct scan_req){ .start = "z", .start_len = 1, .count = 10 };
	ASSERT_EQ(0, op_scan(&self->c, &r));
	ASSERT_EQ(0, r.count);
	ASSERT_EQ(0, r.len);
	ASSERT_CHECK(2);
}

/* ---- randomized operations against a reference map ------------------- */

/* Short keys over a 5-letter alphabet collide a lot; a few long ones. */
static uint32_t rand_key(uint64_t *s, uint8_t *k)
{
	static const uint8_t alpha[] = { 0x00, 'a', 'b', 'c', 0xff };
	uint32_t len, i;

	len = rng_below(s, 100) < 3 ? 200 + rng_below(s, 56) : 1 + rng_below(s, 4);
	for (i = 0; i < len; i++)
		k[i] = i < 4 ? alpha[rng_below(s, 5)] : (uint8_t)rng_next(s);
	return len;
}

static uint32_t rand_vlen(uint64_t *s)
{
	uint32_t x = rng_below(s, 100);

	if (x < 40)
		return rng_below(s, 17);
	if (x < 60)
		return 8;
	if (x < 90)
		return 17 + rng_below(s, 284);
	if (x < 99)
		return 301 + rng_below(s, 4700);
	return PMIDX_VALUE_MAX - rng_below(s, 6000);
}

/* A random SCAN, compared with what the reference says it must return. */
static int rand_scan(const struct ctx *c, const struct ref *ref, uint64_t *s,
		     char *why, size_t wlen)
{
	static uint8_t buf[1 << 20];
	uint8_t start[PMIDX_KEY_MAX], end[PMIDX_KEY_MAX];
	uint32_t i, n = 0, used = 0, size, first = 0, off = 0, kl, vl, x, cnt;
	const uint8_t *k, *v;
	struct scan_req r = { .buf = buf };
	bool more = false;
	int ret;

	if (rng_below(s, 2)) {
		r.start = start;
		r.start_len = rand_key(s, start);
		if (rng_below(s, 3) == 0)
			r.flags = PMIDX_SCAN_AFTER;
	}
	if (rng_below(s, 2)) {
		r.end = end;
		r.end_len = rand_key(s, end);
	}
	r.count = 1 + rng_below(s, 40);
	x = rng_below(s, 10);
	r.len = x == 0 ? 0 : x < 3 ? rng_below(s, 300) : x < 8 ? 65536 : sizeof(buf);
	if (!r.len)
		r.buf = NULL;
	/* expected: records in range, as many as count and buffer allow */
	i = r.start_len ? ref_lower(ref, start, r.start_len, r.flags) : 0;
	for (; i < ref->n; i++) {
		if (r.end_len && key_cmp(ref->e[i].key, ref->e[i].klen, end,
					 r.end_len) >= 0)
			break;
		size = rec_size(ref->e[i].klen, ref->e[i].vlen);
		if (n == r.count || used + size > r.len) {
			more = true;
			first = n ? 0 : size;
			break;
		}
		used += size;
		n++;
	}
	i = r.start_len ? ref_lower(ref, start, r.start_len, r.flags) : 0;
	x = r.len;
	cnt = r.count;
	ret = op_scan(c, &r);
	if (first) {
		if (ret != -ENOSPC || r.len != first)
			return snprintf(why, wlen, "scan: %d, len %u; want -ENOSPC, len %u",
					ret, r.len, first);
		return 0;
	}
	if (ret || r.count != n || r.len != used ||
	    !!(r.flags & PMIDX_SCAN_MORE) != more)
		return snprintf(why, wlen, "scan (count in %u, buffer %u): %d, count %u, len %u, more %d; want count %u, len %u, more %d",
				cnt, x, ret, r.count, r.len,
				!!(r.flags & PMIDX_SCAN_MORE), n, used, more);
	for (n = 0; n < r.count; n++, i++) {
		if (rec_next(buf, r.len, &off, &k, &kl, &v, &vl))
			return snprintf(why, wlen, "scan: malformed record %u", n);
		if (key_cmp(k, kl, ref->e[i].key, ref->e[i].klen) ||
		    vl != ref->e[i].vlen || memcmp(v, ref->e[i].val, vl))
			return snprintf(why, wlen, "scan: record %u differs", n);
	}
	return 0;
}

static int rand_get(const struct ctx *c, const struct ref *ref, uint64_t *s,
		    const uint8_t *k, uint32_t kl, char *why, size_t wlen)
{
	static uint8_t buf[PMIDX_VALUE_MAX];
	const struct ref_ent *e = ref_find(ref, k, kl);
	uint32_t cap = sizeof(buf), len;
	int ret;

	if (e && rng_below(s, 5) == 0)
		cap = rng_below(s, e->vlen + 1);	/* maybe too small */
	len = cap;
	ret = op_get(c, k, kl, buf, &len);
	if (!e) {
		if (ret != -ENOENT)
			return snprintf(why, wlen, "get of an absent key: %d", ret);
	} else if (cap < e->vlen) {
		if (ret != -ENOSPC || len != e->vlen)
			return snprintf(why, wlen, "get, buffer %u for %u: %d, len %u",
					cap, e->vlen, ret, len);
	} else if (ret || len != e->vlen || memcmp(buf, e->val, len)) {
		return snprintf(why, wlen, "get: %d, len %u, want len %u%s", ret,
				len, e->vlen, ret ? "" : " (or other bytes)");
	}
	return 0;
}

/* One random operation; 0, or > 0 with @why filled in. */
static int rand_op(const struct ctx *c, struct ref *ref, uint64_t *s,
		   char *why, size_t wlen)
{
	static uint8_t val[PMIDX_VALUE_MAX];
	uint8_t key[PMIDX_KEY_MAX];
	uint32_t kl, vl, x = rng_below(s, 100), i;
	bool present;
	int ret;

	kl = rand_key(s, key);
	present = ref_find(ref, key, kl);
	if (x < 45) {	/* put, a tenth of them insert-only */
		uint16_t flags = x < 10 ? PMIDX_PUT_INSERT : 0;

		vl = rand_vlen(s);
		for (i = 0; i < vl; i += 8) {
			uint64_t w = rng_next(s);

			memcpy(val + i, &w, sizeof(w));
		}
		ret = op_put(c, key, kl, val, vl, flags);
		if (flags && present) {
			if (ret != -EEXIST)
				return snprintf(why, wlen, "insert of a present key: %d", ret);
			return 0;
		}
		if (ret)
			return snprintf(why, wlen, "put (%u-byte key, %u-byte value): %d",
					kl, vl, ret);
		ref_put(ref, key, kl, val, vl);
		return 0;
	}
	if (x < 65) {
		ret = op_del(c, key, kl);
		if (ret != (present ? 0 : -ENOENT))
			return snprintf(why, wlen, "del of a%s key: %d",
					present ? " present" : "n absent", ret);
		ref_del(ref, key, kl);
		return 0;
	}
	if (x < 90)
		return rand_get(c, ref, s, key, kl, why, wlen);
	return rand_scan(c, ref, s, why, wlen);
}

/*
 * PMIDX_RANDOM_OPS operations (default 20000) over the ioctl, a quarter of
 * them over io_uring: there a scan, and a write the engine cannot make
 * without sleeping (core/engine.h, "No-wait writes"), go to an io-wq
 * worker, which costs several times the ioctl under TCG. The ioctl
 * variant gives each engine the full workload; the io_uring variant
 * covers the path (outputs, scans, the same reference checks).
 */
TEST_F_TIMEOUT(data, random_ops_vs_reference, 600)
{
	const char *env = getenv("PMIDX_RANDOM_OPS");
	uint32_t i, ops = env ? atoi(env) : 20000;
	uint64_t seed = test_seed(), s = seed | 1;
	struct ref ref = { 0 };
	char why[256];

	REQUIRE_ENGINE();
	if (variant->path == &uring_path)
		ops = ops / 4 ?: 1;
	TH_LOG("seed %llu (PMIDX_SEED=%llu reproduces), %u ops",
	       (unsigned long long)seed, (unsigned long long)seed, ops);
	for (i = 0; i < ops; i++) {
		if (rand_op(&self->c, &ref, &s, why, sizeof(why)) > 0) {
			TH_LOG("op %u (seed %llu): %s", i, (unsigned long long)seed, why);
			ASSERT_TRUE(false);
		}
		if (i % 5000 == 4999)
			ASSERT_CONTENT(&ref);
	}
	ASSERT_CONTENT(&ref);
	ASSERT_CHECK(ref.n);
	ref_free(&ref);
}

/* ---- concurrent writers and readers --------------------------------- */

#define CW		4	/* writers, each with its own keys */
#define CR		3	/* readers */
#define CKEYS		256	/* keys per writer */
#define COPS		3000	/* operations per writer (io_uring: a quarter) */
#define CMAGIC		0x70dacafe

/* Shared by the threads or processes of a concurrency test. */
struct conc {
	int		writers_left;
	uint32_t	ops;		/* per writer */
	int		errors;
	char		msg[4][200];
	uint64_t	reads;
	uint32_t	version[CW][CKEYS];	/* of the last acknowledged op */
	uint8_t		present[CW][CKEYS];
};

struct conc_hdr {
	uint32_t	magic;
	uint16_t	w, k;
	uint32_t	ver, len;
};

/* "cWW.KKKKKK", a quarter of them padded to 60 bytes */
static uint32_t conc_key(uint32_t w, uint32_t k, char *key)
{
	snprintf(key, 64, "c%02u.%06u%s", w, k,
		 k % 4 ? "" : "-padding-to-sixty-bytes-out-of-line-xxxxxxxxxxxxxx");
	return k % 4 ? 10 : 60;
}

static uint32_t conc_value(uint32_t w, uint32_t k, uint32_t ver, uint8_t *buf)
{
	struct conc_hdr h = { CMAGIC, w, k, ver, 0 };
	uint32_t i;

	h.len = sizeof(h) + (ver * 7 + k) % 300 + (ver % 50 ? 0 : 3000);
	memcpy(buf, &h, sizeof(h));
	for (i = sizeof(h); i < h.len; i++)
		buf[i] = ver * 31 + i;
	return h.len;
}

/* 0 and *@ver when @val is a value written for key (@w, @k). */
static int conc_parse(uint32_t w, uint32_t k, const uint8_t *val, uint32_t len,
		      uint32_t *ver)
{
	uint8_t want[4096];
	struct conc_hdr h;

	if (len < sizeof(h))
		return -1;
	memcpy(&h, val, sizeof(h));
	if (h.magic != CMAGIC || h.w != w || h.k != k || h.len != len)
		return -1;
	if (conc_value(w, k, h.ver, want) != len || memcmp(want, val, len))
		return -1;
	*ver = h.ver;
	return 0;
}

static void conc_fail(struct conc *sh, const char *fmt, ...)
{
	int n = __atomic_fetch_add(&sh->errors, 1, __ATOMIC_SEQ_CST);
	va_list ap;

	if (n >= 4)
		return;
	va_start(ap, fmt);
	vsnprintf(sh->msg[n], sizeof(sh->msg[n]), fmt, ap);
	va_end(ap);
}

static void conc_writer(const struct ctx *c, struct conc *sh, uint32_t w,
			uint64_t seed)
{
	static __thread uint8_t val[4096], buf[4096];
	uint32_t ver[CKEYS] = { 0 }, op, k, vl, len;
	bool present[CKEYS] = { false };
	uint64_t s = seed * 2 + w * 0x9e3779b97f4a7c15ULL + 1;
	char key[64];
	uint32_t kl;
	int ret;

	for (op = 0; op < sh->ops && !__atomic_load_n(&sh->errors, __ATOMIC_RELAXED); op++) {
		k = rng_below(&s, CKEYS);
		kl = conc_key(w, k, key);
		ver[k]++;
		if (present[k] && rng_below(&s, 4) == 0) {
			ret = op_del(c, key, kl);
			present[k] = false;
		} else {
			vl = conc_value(w, k, ver[k], val);
			ret = op_put(c, key, kl, val, vl,
				     present[k] ? 0 : PMIDX_PUT_INSERT);
			present[k] = true;
		}
		if (ret) {
			conc_fail(sh, "writer %u: op %u on key %u: %d", w, op, k, ret);
			break;
		}
		/* read your own write */
		len = sizeof(buf);
		ret = op_get(c, key, kl, buf, &len);
		if (present[k] ? ret || conc_parse(w, k, buf, len, &vl) || vl != ver[k]
			       : ret != -ENOENT)
			conc_fail(sh, "writer %u: key %u version %u not read back (%d)",
				  w, k, ver[k], ret);
		__atomic_store_n(&sh->version[w][k], ver[k], __ATOMIC_RELEASE);
		__atomic_store_n(&sh->present[w][k], present[k], __ATOMIC_RELEASE);
	}
	__atomic_sub_fetch(&sh->writers_left, 1, __ATOMIC_SEQ_CST);
}

/* A scan over one writer's keys: ascending, each value valid for its key. */
static void conc_scan(const struct ctx *c, struct conc *sh, uint32_t w,
		      uint32_t *maxver)
{
	static __thread uint8_t buf[1 << 16];
	char start[8], end[8], prev[64];
	uint32_t off = 0, i, kl, vl, pl = 0, pw, pk, ver;
	const uint8_t *k, *v;
	struct scan_req r;
	int ret;

	snprintf(start, sizeof(start), "c%02u.", w);
	snprintf(end, sizeof(end), "c%02u/", w);
	r = (struct scan_req){ .start = start, .start_len = 4, .end = end,
			       .end_len = 4, .count = 64, .buf = buf,
			       .len = sizeof(buf) };
	ret = op_scan(c, &r);
	if (ret) {
		conc_fail(sh, "reader: scan of writer %u: %d", w, ret);
		return;
	}
	for (i = 0; i < r.count; i++) {
		if (rec_next(buf, r.len, &off, &k, &kl, &v, &vl) || kl > 63 ||
		    (pl && key_cmp(prev, pl, k, kl) >= 0) ||
		    sscanf((const char *)k, "c%02u.%06u", &pw, &pk) != 2 ||
		    pw != w || pk >= CKEYS || conc_parse(w, pk, v, vl, &ver)) {
			conc_fail(sh, "reader: scan of writer %u: bad record %u", w, i);
			return;
		}
		if (ver < maxver[w * CKEYS + pk])
			conc_fail(sh, "reader: scan: key %u/%u went back from version %u to %u",
				  w, pk, maxver[w * CKEYS + pk], ver);
		maxver[w * CKEYS + pk] = ver;
		memcpy(prev, k, kl);
		pl = kl;
	}
}

static void conc_reader(const struct ctx *c, struct conc *sh, uint32_t id,
			uint64_t seed)
{
	static __thread uint8_t buf[4096];
	uint64_t s = seed * 3 + id * 0x2545f4914f6cdd1dULL + 7, n = 0;
	uint32_t *maxver = calloc(CW * CKEYS, sizeof(*maxver));
	uint32_t w, k, kl, len, ver;
	char key[64];
	int ret;

	while (__atomic_load_n(&sh->writers_left, __ATOMIC_SEQ_CST) &&
	       !__atomic_load_n(&sh->errors, __ATOMIC_RELAXED)) {
		w = rng_below(&s, CW);
		if (rng_below(&s, 10) == 0) {
			conc_scan(c, sh, w, maxver);
			continue;
		}
		k = rng_below(&s, CKEYS);
		kl = conc_key(w, k, key);
		len = sizeof(buf);
		ret = op_get(c, key, kl, buf, &len);
		n++;
		if (ret == -ENOENT)
			continue;
		if (ret || conc_parse(w, k, buf, len, &ver)) {
			conc_fail(sh, "reader: get of key %u/%u: %d, bad value", w, k, ret);
			break;
		}
		if (ver < maxver[w * CKEYS + k])
			conc_fail(sh, "reader: key %u/%u went back from version %u to %u",
				  w, k, maxver[w * CKEYS + k], ver);
		maxver[w * CKEYS + k] = ver;
	}
	__atomic_add_fetch(&sh->reads, n, __ATOMIC_SEQ_CST);
	free(maxver);
}

struct conc_arg {
	const struct ctx	*c;
	struct conc		*sh;
	uint32_t		id;	/* < CW: writer, else reader */
	uint64_t		seed;
};

static void *conc_thread(void *p)
{
	struct conc_arg *a = p;

	if (a->id < CW)
		conc_writer(a->c, a->sh, a->id, a->seed);
	else
		conc_reader(a->c, a->sh, a->id - CW, a->seed);
	return NULL;
}

/* The index holds what each writer acknowledged last, and checks. */
static int conc_verify(const struct ctx *c, struct conc *sh, uint32_t *keys)
{
	static uint8_t val[4096];
	struct ref want = { 0 }, got;
	uint32_t w, k, kl, vl;
	char key[64];
	int ret;

	for (w = 0; w < CW; w++) {
		for (k = 0; k < CKEYS; k++) {
			if (!sh->present[w][k])
				continue;
			kl = conc_key(w, k, key);
			vl = conc_value(w, k, sh->version[w][k], val);
			ref_put(&want, key, kl, val, vl);
		}
	}
	ret = snapshot(c, &got);
	if (!ret && !ref_equal(&want, &got))
		ret = -EBADMSG;
	*keys = want.n;
	ref_free(&want);
	if (!ret)
		ref_free(&got);
	return ret;
}

/*
 * Writes per writer: a quarter over io_uring, where some go to an io-wq
 * worker (see random_ops_vs_reference); the ioctl variants give each
 * engine the full load.
 */
static uint32_t conc_ops(const struct path_ops *path)
{
	return path == &uring_path ? COPS / 4 : COPS;
}

static void conc_report(struct __test_metadata *_metadata, struct conc *sh)
{
	int i;

	for (i = 0; i < sh->errors && i < 4; i++)
		TH_LOG("%s", sh->msg[i]);
}

TEST_F_TIMEOUT(data, concurrent_threads, 300)
{
	struct conc_arg args[CW + CR];
	pthread_t tid[CW + CR];
	uint64_t seed = test_seed();
	struct conc *sh;
	uint32_t i, keys;

	REQUIRE_ENGINE();
	TH_LOG("seed %llu, %d writer and %d reader threads", (unsigned long long)seed, CW, CR);
	sh = calloc(1, sizeof(*sh));
	ASSERT_NE(NULL, sh);
	sh->writers_left = CW;
	sh->ops = conc_ops(variant->path);
	for (i = 0; i < CW + CR; i++) {
		args[i] = (struct conc_arg){ &self->c, sh, i, seed };
		ASSERT_EQ(0, pthread_create(&tid[i], NULL, conc_thread, &args[i]));
	}
	for (i = 0; i < CW + CR; i++)
		pthread_join(tid[i], NULL);
	conc_report(_metadata, sh);
	ASSERT_EQ(0, sh->errors);
	ASSERT_LT(0, sh->reads);
	ASSERT_EQ(0, conc_verify(&self->c, sh, &keys));
	ASSERT_CHECK(keys);
	free(sh);
}

TEST_F_TIMEOUT(data, concurrent_processes, 300)
{
	uint64_t seed = test_seed();
	pid_t pid[CW + CR];
	struct conc *sh;
	struct ctx own;
	uint32_t i, keys;
	int status;

	REQUIRE_ENGINE();
	TH_LOG("seed %llu, %d writer and %d reader processes", (unsigned long long)seed, CW, CR);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, sh);
	sh->writers_left = CW;
	sh->ops = conc_ops(variant->path);
	for (i = 0; i < CW + CR; i++) {
		pid[i] = fork();
		ASSERT_LE(0, pid[i]);
		if (pid[i])
			continue;
		/* every other process opens the device itself */
		own = self->c;
		if (i % 2)
			own.fd = open(self->devpath, O_RDWR | O_CLOEXEC);
		if (own.fd < 0) {
			conc_fail(sh, "process %u: open %s: %d", i, self->devpath, -errno);
			if (i < CW)
				__atomic_sub_fetch(&sh->writers_left, 1, __ATOMIC_SEQ_CST);
		} else if (i < CW)
			conc_writer(&own, sh, i, seed);
		else
			conc_reader(&own, sh, i - CW, seed);
		_exit(0);
	}
	for (i = 0; i < CW + CR; i++) {
		ASSERT_EQ(pid[i], waitpid(pid[i], &status, 0));
		EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status))
			TH_LOG("process %u: status 0x%x", i, status);
	}
	conc_report(_metadata, sh);
	ASSERT_EQ(0, sh->errors);
	ASSERT_LT(0, sh->reads);
	ASSERT_EQ(0, conc_verify(&self->c, sh, &keys));
	ASSERT_CHECK(keys);
	munmap(sh, sizeof(*sh));
}

/* ---- bad input: refused, index unchanged ---------------------------- */

/* Run @base with one field changed; it must fail with @err. */
#define TRY(err, base, change) do {					\
	struct pmidx_cmd __c = (base);					\
	__c.change;							\
	EXPECT_EQ(err, self->c.path->cmd(self->c.fd, &__c))		\
		TH_LOG("%s with %s", #base, #change);			\
} while (0)

/* A few keys to find unchanged after the bad commands. */
static int fill_few(const struct ctx *c, struct ref *before)
{
	static uint8_t big[5000];
	int ret;

	memset(big, 'b', sizeof(big));
	ret = put_str(c, "present", "value") ?: put_str(c, "a", "1") ?:
	      op_put(c, "big", 3, big, sizeof(big), 0) ?:
	      put_str(c, "zzz", "last");
	return ret ?: snapshot(c, before);
}

TEST_F(data, bad_commands)
{
	static uint8_t big[PMIDX_VALUE_MAX + 1], out[4096];
	uint8_t k256[PMIDX_KEY_MAX + 1];
	struct pmidx_cmd put, get, del, scan, check, lookup;
	uint32_t ix = self->c.index;
	struct ref before;

	REQUIRE_ENGINE();
	ASSERT_EQ(0, fill_few(&self->c, &before));
	memset(k256, 'x', sizeof(k256));
	put = (struct pmidx_cmd){ .op = PMIDX_OP_PUT, .index = ix,
		.key = uptr("bad-key"), .key_len = 7, .val = uptr("v"), .val_len = 1 };
	get = (struct pmidx_cmd){ .op = PMIDX_OP_GET, .index = ix,
		.key = uptr("present"), .key_len = 7, .val = uptr(out), .val_len = 64 };
	del = (struct pmidx_cmd){ .op = PMIDX_OP_DEL, .index = ix,
		.key = uptr("present"), .key_len = 7 };
	scan = (struct pmidx_cmd){ .op = PMIDX_OP_SCAN, .index = ix,
		.count = 10, .val = uptr(out), .val_len = sizeof(out) };
	check = (struct pmidx_cmd){ .op = PMIDX_OP_CHECK, .index = ix };
	lookup = (struct pmidx_cmd){ .op = PMIDX_OP_LOOKUP,
		.key = uptr(INDEX_NAME), .key_len = strlen(INDEX_NAME) };

	/* unknown ops */
	TRY(-EOPNOTSUPP, put, op = 0);
	TRY(-EOPNOTSUPP, put, op = __PMIDX_OP_MAX);
	TRY(-EOPNOTSUPP, put, op = 0xff);
	TRY(-EOPNOTSUPP, get, op = 0x80);
	/* reserved fields, and result, must be zero */
	TRY(-EINVAL, put, reserved0 = 1);
	TRY(-EINVAL, put, reserved[0] = 1);
	TRY(-EINVAL, put, reserved[1] = 1ULL << 32);
	TRY(-EINVAL, put, reserved[2] = 1ULL << 63);
	TRY(-EINVAL, put, result = 1);
	TRY(-EINVAL, get, reserved0 = 0x80);
	TRY(-EINVAL, get, result = ~0ULL);
	TRY(-EINVAL, del, reserved[1] = 1);
	TRY(-EINVAL, scan, reserved[2] = 1);
	TRY(-EINVAL, check, reserved0 = 1);
	TRY(-EINVAL, check, result = 1);
	TRY(-EINVAL, lookup, reserved[0] = 1);
	TRY(-EINVAL, lookup, result = 2);
	/* unknown flags, and flags of another op */
	TRY(-EINVAL, put, flags = 1U << 2);
	TRY(-EINVAL, put, flags = PMIDX_SCAN_AFTER);
	TRY(-EINVAL, put, flags = PMIDX_SCAN_MORE);
	TRY(-EINVAL, put, flags = PMIDX_PUT_INSERT | (1U << 7));
	TRY(-EINVAL, scan, flags = PMIDX_PUT_INSERT);
	TRY(-EINVAL, scan, flags = PMIDX_SCAN_MORE);	/* output only */
	TRY(-EINVAL, scan, flags = PMIDX_SCAN_AFTER | (1U << 14));
	TRY(-EINVAL, get, flags = PMIDX_PUT_INSERT);
	TRY(-EINVAL, get, flags = PMIDX_SCAN_AFTER);
	TRY(-EINVAL, del, flags = PMIDX_PUT_INSERT);
	TRY(-EINVAL, check, flags = 1);
	TRY(-EINVAL, lookup, flags = 0x8000);
	/* fields the op does not use must be zero */
	TRY(-EINVAL, put, end_key = uptr("e"));
	TRY(-EINVAL, put, end_key_len = 1);
	TRY(-EINVAL, put, count = 1);
	TRY(-EINVAL, get, end_key = uptr("e"));
	TRY(-EINVAL, get, count = 5);
	TRY(-EINVAL, del, val = uptr(out));
	TRY(-EINVAL, del, val_len = 1);
	TRY(-EINVAL, del, count = 1);
	TRY(-EINVAL, del, end_key_len = 1);
	TRY(-EINVAL, check, key = uptr("present"));
	TRY(-EINVAL, check, key_len = 7);
	TRY(-EINVAL, check, val = uptr(out));
	TRY(-EINVAL, check, val_len = 8);
	TRY(-EINVAL, check, count = 1);
	TRY(-EINVAL, check, end_key = uptr("e"));
	TRY(-EINVAL, lookup, index = ix + 1);
	TRY(-EINVAL, lookup, val = uptr(out));
	TRY(-EINVAL, lookup, val_len = 4);
	TRY(-EINVAL, lookup, count = 1);
	TRY(-EINVAL, scan, count = 0);
	/* lengths */
	TRY(-EINVAL, put, key_len = 0);
	TRY(-EINVAL, get, key_len = 0);
	TRY(-EINVAL, del, key_len = 0);
	TRY(-EINVAL, put, key = uptr(k256); __c.key_len = 256);
	TRY(-EINVAL, get, key = uptr(k256); __c.key_len = 256);
	TRY(-EINVAL, del, key_len = ~0U);
	TRY(-EINVAL, scan, key = uptr(k256); __c.key_len = 256);
	TRY(-EINVAL, scan, end_key = uptr(k256); __c.end_key_len = 256);
	TRY(-E2BIG, put, val = uptr(big); __c.val_len = PMIDX_VALUE_MAX + 1);
	TRY(-E2BIG, put, val_len = ~0U);
	TRY(-EINVAL, lookup, key_len = 0);
	TRY(-EINVAL, lookup, key = uptr(k256); __c.key_len = PMIDX_NAME_MAX + 1);
	TRY(-EINVAL, lookup, key = uptr("da\0a"); __c.key_len = 4);
	/* a length without a pointer */
	TRY(-EFAULT, put, key = 0);
	TRY(-EFAULT, put, val = 0);
	TRY(-EFAULT, get, val = 0);
	TRY(-EFAULT, del, key = 0);
	TRY(-EFAULT, scan, val = 0);
	TRY(-EFAULT, scan, end_key_len = 3);
	TRY(-EFAULT, scan, key_len = 3);
	TRY(-EFAULT, lookup, key = 0);
	/* unknown index ids */
	TRY(-ENXIO, put, index = ix + 1);
	TRY(-ENXIO, put, index = PMIDX_MAX_INDEXES - 1);
	TRY(-ENXIO, put, index = PMIDX_MAX_INDEXES);
	TRY(-ENXIO, put, index = ~0U);
	TRY(-ENXIO, get, index = ix + 7);
	TRY(-ENXIO, del, index = 1U << 31);
	TRY(-ENXIO, scan, index = ix + 1);
	TRY(-ENXIO, check, index = ix + 1);

	ASSERT_CONTENT(&before);
	ASSERT_CHECK(before.n);
	ref_free(&before);
}

TEST_F(data, bad_pointers)
{
	static uint8_t out[4096];
	struct pmidx_cmd put, get, del, scan, lookup;
	uint32_t ix = self->c.index;
	struct ref before;
	struct bad_mem m;
	uint8_t *edge;

	REQUIRE_ENGINE();
	ASSERT_EQ(0, fill_few(&self->c, &before));
	ASSERT_EQ(0, bad_mem_map(&m));
	/* 16 bytes that start mapped and run into the hole */
	edge = m.hole - 8;
	memset(edge, 'e', 8);
	put = (struct pmidx_cmd){ .op = PMIDX_OP_PUT, .index = ix,
		.key = uptr("bad-key"), .key_len = 7, .val = uptr("v"), .val_len = 1 };
	get = (struct pmidx_cmd){ .op = PMIDX_OP_GET, .index = ix,
		.key = uptr("present"), .key_len = 7, .val = uptr(out), .val_len = 64 };
	del = (struct pmidx_cmd){ .op = PMIDX_OP_DEL, .index = ix,
		.key = uptr("present"), .key_len = 7 };
	scan = (struct pmidx_cmd){ .op = PMIDX_OP_SCAN, .index = ix,
		.count = 10, .val = uptr(out), .val_len = sizeof(out) };
	lookup = (struct pmidx_cmd){ .op = PMIDX_OP_LOOKUP,
		.key = uptr(INDEX_NAME), .key_len = strlen(INDEX_NAME) };

	TRY(-EFAULT, put, key = uptr(m.hole));
	TRY(-EFAULT, put, key = uptr(edge); __c.key_len = 16);
	TRY(-EFAULT, put, val = uptr(m.hole));
	TRY(-EFAULT, put, val = uptr(edge); __c.val_len = 16);
	TRY(-EFAULT, put, val = uptr(edge); __c.val_len = 5000);
	TRY(-EFAULT, get, key = uptr(m.hole));
	TRY(-EFAULT, get, val = uptr(m.hole));
	TRY(-EFAULT, get, val = uptr(m.ro));		/* written back into */
	TRY(-EFAULT, get, key = uptr("big"); __c.key_len = 3;
	    __c.val = uptr(edge); __c.val_len = 5000);
	TRY(-EFAULT, del, key = uptr(m.hole));
	TRY(-EFAULT, del, key = uptr(edge); __c.key_len = 9);
	TRY(-EFAULT, scan, key = uptr(m.hole); __c.key_len = 1);
	TRY(-EFAULT, scan, end_key = uptr(m.hole); __c.end_key_len = 1);
	TRY(-EFAULT, scan, val = uptr(m.hole));
	TRY(-EFAULT, scan, val = uptr(m.ro); __c.val_len = m.page);
	TRY(-EFAULT, scan, val = uptr(edge); __c.val_len = 4096);
	TRY(-EFAULT, lookup, key = uptr(m.hole));
	TRY(-EFAULT, lookup, key = uptr(m.hole - 2); __c.key_len = 4);
	/* a read-only key or value is fine to read */
	memcpy(edge, "ro-ok\0\0\0", 8);
	ASSERT_EQ(0, op_put(&self->c, edge, 5, m.ro, 100, 0));
	ASSERT_EQ(0, get_is(&self->c, "ro-ok", 5, m.ro, 100));
	ASSERT_EQ(0, op_del(&self->c, "ro-ok", 5));

	ASSERT_CONTENT(&before);
	ASSERT_CHECK(before.n);
	ref_free(&before);
	munmap(m.rw, m.page);
	munmap(m.ro, m.page);
}

/* The ioctl itself: its number and the command struct's address. */
TEST_F(data, bad_ioctl)
{
	static const unsigned long wrong[] = {
		_IOWR(PMIDX_IOC_MAGIC, 2, struct pmidx_cmd),
		_IOWR(PMIDX_IOC_MAGIC, 0, struct pmidx_cmd),
		_IOWR(PMIDX_IOC_MAGIC, 1, struct pmidx_rec),
		_IOWR(PMIDX_IOC_MAGIC, 1, uint8_t[88]),
		_IOW(PMIDX_IOC_MAGIC, 1, struct pmidx_cmd),
		_IOR(PMIDX_IOC_MAGIC, 1, struct pmidx_cmd),
		_IO(PMIDX_IOC_MAGIC, 1),
		_IOWR(PMIDX_IOC_MAGIC + 1, 1, struct pmidx_cmd),
		0x5401,		/* TCGETS */
		0,
	};
	struct pmidx_cmd *ro, cmd;
	struct ref before;
	struct bad_mem m;
	unsigned int i;

	REQUIRE_ENGINE();
	ASSERT_EQ(0, fill_few(&self->c, &before));
	for (i = 0; i < ARRAY_SIZE(wrong); i++) {
		/* a valid PUT behind a wrong number must not run */
		cmd = (struct pmidx_cmd){ .op = PMIDX_OP_PUT, .index = self->c.index,
			.key = uptr("bad-key"), .key_len = 7 };
		errno = 0;
		EXPECT_EQ(-1, ioctl(self->c.fd, wrong[i], &cmd));
		EXPECT_EQ(ENOTTY, errno) TH_LOG("ioctl 0x%lx", wrong[i]);
	}
	ASSERT_EQ(0, bad_mem_map(&m));
	errno = 0;
	EXPECT_EQ(-1, ioctl(self->c.fd, PMIDX_IOC_CMD, NULL));
	EXPECT_EQ(EFAULT, errno);
	errno = 0;
	EXPECT_EQ(-1, ioctl(self->c.fd, PMIDX_IOC_CMD, m.hole));
	EXPECT_EQ(EFAULT, errno);
	/* straddling the hole */
	cmd = (struct pmidx_cmd){ .op = PMIDX_OP_PUT, .index = self->c.index,
		.key = uptr("bad-key"), .key_len = 7 };
	memcpy(m.hole - 40, &cmd, 40);
	errno = 0;
	EXPECT_EQ(-1, ioctl(self->c.fd, PMIDX_IOC_CMD, m.hole - 40));
	EXPECT_EQ(EFAULT, errno);
	/* a GET whose outputs cannot be written back */
	ro = (struct pmidx_cmd *)(m.rw + m.page - sizeof(*ro));
	*ro = (struct pmidx_cmd){ .op = PMIDX_OP_GET, .index = self->c.index,
		.key = uptr("present"), .key_len = 7 };
	ASSERT_EQ(0, mprotect(m.rw, m.page, PROT_READ));
	errno = 0;
	EXPECT_EQ(-1, ioctl(self->c.fd, PMIDX_IOC_CMD, ro));
	EXPECT_EQ(EFAULT, errno);

	ASSERT_CONTENT(&before);
	ASSERT_CHECK(before.n);
	ref_free(&before);
	munmap(m.rw, m.page);
	munmap(m.ro, m.page);
}

/* ---- indexes: lookup, isolation, persistence across detach ---------- */

TEST_F(data, lookup_and_isolation)
{
	char name[PMIDX_NAME_MAX + 2];
	struct ctx other = self->c;
	uint64_t engine;
	uint32_t id;

	REQUIRE_ENGINE();
	ASSERT_EQ(-ENOENT, op_lookup(&self->c, "nosuch", &id, &engine));
	memset(name, 'n', sizeof(name));
	name[PMIDX_NAME_MAX] = 0;
	ASSERT_EQ(-ENOENT, op_lookup(&self->c, name, &id, &engine));
	name[PMIDX_NAME_MAX] = 'n';
	name[PMIDX_NAME_MAX + 1] = 0;
	ASSERT_EQ(-EINVAL, op_lookup(&self->c, name, &id, &engine));
	ASSERT_EQ(0, op_lookup(&self->c, INDEX_NAME, &id, &engine));
	ASSERT_EQ(self->c.index, id);
	ASSERT_EQ(variant->engine_id, engine);
	/* a second index of the same engine is another keyspace */
	ASSERT_EQ(0, pm_create(&self->nl, "other", variant->engine_id));
	ASSERT_EQ(0, op_lookup(&self->c, "other", &other.index, &engine));
	ASSERT_NE(self->c.index, other.index);
	ASSERT_EQ(0, put_str(&self->c, "k", "in data"));
	ASSERT_EQ(-ENOENT, get_str(&other, "k", ""));
	ASSERT_EQ(0, put_str(&other, "k", "in other"));
	ASSERT_EQ(0, get_str(&self->c, "k", "in data"));
	ASSERT_EQ(0, get_str(&other, "k", "in other"));
	ASSERT_EQ(0, op_del(&other, "k", 1));
	ASSERT_EQ(0, get_str(&self->c, "k", "in data"));
	ASSERT_CHECK(1);
	/*
	 * An open char device does not pin the pool's indexes: "other" is
	 * dropped under it, and its id never reaches the index created in
	 * its slot next.
	 */
	ASSERT_EQ(0, put_str(&other, "k2", "gone soon"));
	ASSERT_EQ(0, pm_drop(&self->nl, "other"));
	ASSERT_EQ(-ENXIO, get_str(&other, "k2", "gone soon"));
	ASSERT_EQ(-ENXIO, put_str(&other, "k2", "x"));
	ASSERT_EQ(0, pm_create(&self->nl, "other", variant->engine_id));
	ASSERT_EQ(0, op_lookup(&self->c, "other", &id, &engine));
	ASSERT_NE(other.index, id);
	ASSERT_EQ(other.index % PMIDX_MAX_INDEXES, id % PMIDX_MAX_INDEXES);
	ASSERT_EQ(-ENXIO, get_str(&other, "k2", "gone soon"));
	other.index = id;
	ASSERT_EQ(-ENOENT, get_str(&other, "k2", ""));
	ASSERT_EQ(0, get_str(&self->c, "k", "in data"));
	ASSERT_EQ(0, pm_drop(&self->nl, "other"));
}

TEST_F_TIMEOUT(data, persists_across_detach, 120)
{
	static uint8_t val[PMIDX_VALUE_MAX];
	uint64_t s = test_seed() | 1;
	struct ref ref = { 0 };
	uint8_t key[PMIDX_KEY_MAX];
	uint32_t i, kl, vl;
	int ret;

	REQUIRE_ENGINE();
	for (i = 0; i < 2000; i++) {
		kl = rand_key(&s, key);
		vl = rand_vlen(&s);
		memset(val, i, vl);
		ASSERT_EQ(0, op_put(&self->c, key, kl, val, vl, 0));
		ref_put(&ref, key, kl, val, vl);
		if (i % 3 == 0) {
			kl = rand_key(&s, key);
			if (ref_del(&ref, key, kl))
				ASSERT_EQ(0, op_del(&self->c, key, kl));
		}
	}
	close(self->c.fd);
	self->c.fd = -1;
	/*
	 * io_uring drops its file references after the completions (task
	 * work, io-wq): the device may stay busy for a moment after close()
	 * (seen as -EBUSY on the _uring variants, Debian and debug kernels)
	 */
	for (i = 0; i < 100 && (ret = pm_detach(&self->nl, self->p.name)) == -EBUSY; i++)
		usleep(20000);
	ASSERT_EQ(0, ret) TH_LOG("%s", self->nl.msg);
	ASSERT_EQ(0, pm_attach(&self->nl, dev(), &self->p)) TH_LOG("%s", self->nl.msg);
	ASSERT_EQ(0, open_index(self, variant));
	ASSERT_CONTENT(&ref);
	ASSERT_CHECK(ref.n);
	/* and it is still writable */
	ASSERT_EQ(0, put_str(&self->c, "after", "reattach"));
	ASSERT_EQ(0, get_str(&self->c, "after", "reattach"));
	ASSERT_CHECK(ref.n + !ref_find(&ref, "after", 5));
	ref_free(&ref);
}

/* ---- BATCH --------------------------------------------------------------- */

#define NB	200

static int run_batch(const struct ctx *c, struct pmidx_cmd *ents, uint32_t n,
		     uint64_t *result)
{
	struct pmidx_cmd b = {
		.op = PMIDX_OP_BATCH, .val = uptr(ents),
		.val_len = n * sizeof(*ents), .count = n,
	};
	int ret = c->path->cmd(c->fd, &b);

	*result = b.result;
	return ret;
}

static struct pmidx_cmd batch_ent(const struct ctx *c, uint8_t op,
				  const void *k, uint32_t kl, void *v,
				  uint32_t vl)
{
	struct pmidx_cmd e = {
		.op = op, .index = c->index, .key = uptr(k), .key_len = kl,
		.val = uptr(v), .val_len = vl,
	};
	return e;
}

TEST_F(data, batch_ops)
{
	static char keys[NB][16], vals[NB][32], out[NB][32];
	static struct pmidx_cmd e[NB];
	static uint8_t sbuf[4096];
	uint64_t failed;
	uint32_t i, off = 0;
	const uint8_t *rk, *rv;
	uint32_t rkl, rvl, nrec = 0;

	REQUIRE_ENGINE();
	for (i = 0; i < NB; i++) {
		snprintf(keys[i], sizeof(keys[i]), "bk%05u", i);
		snprintf(vals[i], sizeof(vals[i]), "value-%u", i * 7);
		e[i] = batch_ent(&self->c, PMIDX_OP_PUT, keys[i],
				 strlen(keys[i]), vals[i], strlen(vals[i]));
	}
	ASSERT_EQ(0, run_batch(&self->c, e, NB, &failed));
	ASSERT_EQ(0, failed);
	for (i = 0; i < NB; i++)
		ASSERT_EQ(0, (int64_t)e[i].result);
	ASSERT_CHECK(NB);

	/* gets, one absent key, one buffer too small, one unknown index */
	for (i = 0; i < NB; i++)
		e[i] = batch_ent(&self->c, PMIDX_OP_GET, keys[i],
				 strlen(keys[i]), out[i], sizeof(out[i]));
	e[10].key = uptr("missing");
	e[10].key_len = 7;
	e[20].val_len = 2;
	e[30].index = 63;
	ASSERT_EQ(0, run_batch(&self->c, e, NB, &failed));
	ASSERT_EQ(3, failed);
	for (i = 0; i < NB; i++) {
		if (i == 10 || i == 20 || i == 30)
			continue;
		ASSERT_EQ(0, (int64_t)e[i].result);
		ASSERT_EQ(strlen(vals[i]), e[i].val_len);
		ASSERT_EQ(0, memcmp(out[i], vals[i], e[i].val_len));
	}
	ASSERT_EQ(-ENOENT, (int64_t)e[10].result);
	ASSERT_EQ(-ENOSPC, (int64_t)e[20].result);
	ASSERT_EQ(strlen(vals[20]), e[20].val_len);
	ASSERT_EQ(-ENXIO, (int64_t)e[30].result);

	/* mixed: delete, insert-only conflict, bad value pointer, scan */
	e[0] = batch_ent(&self->c, PMIDX_OP_DEL, keys[0], strlen(keys[0]), NULL, 0);
	e[1] = batch_ent(&self->c, PMIDX_OP_DEL, keys[0], strlen(keys[0]), NULL, 0);
	e[2] = batch_ent(&self->c, PMIDX_OP_PUT, keys[1], strlen(keys[1]),
			 vals[2], strlen(vals[2]));
	e[2].flags = PMIDX_PUT_INSERT;
	e[3] = batch_ent(&self->c, PMIDX_OP_PUT, keys[3], strlen(keys[3]),
			 (void *)8, 8);
	e[4] = batch_ent(&self->c, PMIDX_OP_SCAN, keys[1], strlen(keys[1]),
			 sbuf, sizeof(sbuf));
	e[4].count = 3;
	e[5] = batch_ent(&self->c, PMIDX_OP_PUT, keys[5], strlen(keys[5]),
			 vals[6], strlen(vals[6]));
	ASSERT_EQ(0, run_batch(&self->c, e, 6, &failed));
	ASSERT_EQ(3, failed);
	EXPECT_EQ(0, (int64_t)e[0].result);
	EXPECT_EQ(-ENOENT, (int64_t)e[1].result);
	EXPECT_EQ(-EEXIST, (int64_t)e[2].result);
	EXPECT_EQ(-EFAULT, (int64_t)e[3].result);
	EXPECT_EQ(0, (int64_t)e[4].result);
	EXPECT_EQ(3, e[4].count);
	EXPECT_TRUE(e[4].flags & PMIDX_SCAN_MORE);
	while (off < e[4].val_len &&
	       !rec_next(sbuf, e[4].val_len, &off, &rk, &rkl, &rv, &rvl)) {
		EXPECT_EQ(0, memcmp(rk, keys[1 + nrec], rkl));
		nrec++;
	}
	EXPECT_EQ(3, nrec);
	ASSERT_EQ(0, get_str(&self->c, keys[5], vals[6]));
	ASSERT_EQ(0, get_str(&self->c, keys[1], vals[1]));
	ASSERT_EQ(0, get_str(&self->c, keys[3], vals[3]));
	ASSERT_CHECK(NB - 1);
}

/*
 * A batch leaves what its entries run one by one would: a GET's value is
 * there for a later PUT that reads the same buffer (value or key), a GET
 * whose buffer faults fails alone with val_len untouched, a PUT whose key
 * faults fails alone.
 */
TEST_F(data, batch_buffers_in_order)
{
	char buf[8] = "xxxxxxxx", kbuf[4] = "zz", out[4][8];
	struct pmidx_cmd e[6];
	uint64_t failed;
	int i;

	REQUIRE_ENGINE();
	ASSERT_EQ(0, put_str(&self->c, "src", "AAAAAAAA"));
	ASSERT_EQ(0, put_str(&self->c, "key", "kk"));
	/* GET src into buf, PUT dst := buf */
	e[0] = batch_ent(&self->c, PMIDX_OP_GET, "src", 3, buf, sizeof(buf));
	e[1] = batch_ent(&self->c, PMIDX_OP_PUT, "dst", 3, buf, sizeof(buf));
	/* GET key into kbuf, then PUT a key read from kbuf */
	e[2] = batch_ent(&self->c, PMIDX_OP_GET, "key", 3, kbuf, 2);
	e[3] = batch_ent(&self->c, PMIDX_OP_PUT, kbuf, 2, "v", 1);
	/* a GET into memory that faults; a PUT whose key faults */
	e[4] = batch_ent(&self->c, PMIDX_OP_GET, "src", 3, (void *)8, 8);
	e[5] = batch_ent(&self->c, PMIDX_OP_PUT, (void *)16, 3, "w", 1);
	ASSERT_EQ(0, run_batch(&self->c, e, 6, &failed));
	ASSERT_EQ(2, failed);
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, (int64_t)e[i].result) TH_LOG("entry %d", i);
	ASSERT_EQ(-EFAULT, (int64_t)e[4].result);
	ASSERT_EQ(8, e[4].val_len);
	ASSERT_EQ(-EFAULT, (int64_t)e[5].result);
	ASSERT_EQ(0, get_str(&self->c, "dst", "AAAAAAAA"));
	ASSERT_EQ(0, get_str(&self->c, "kk", "v"));
	ASSERT_EQ(-ENOENT, get_str(&self->c, "zz", "v"));

	/* GETs only, all succeeding, then one too small: the rest arrive */
	for (i = 0; i < 4; i++)
		e[i] = batch_ent(&self->c, PMIDX_OP_GET, i & 1 ? "kk" : "src",
				 i & 1 ? 2 : 3, out[i], sizeof(out[i]));
	e[2].val_len = 4;
	memset(out, 0, sizeof(out));
	ASSERT_EQ(0, run_batch(&self->c, e, 4, &failed));
	ASSERT_EQ(1, failed);
	ASSERT_EQ(0, memcmp(out[0], "AAAAAAAA", 8));
	ASSERT_EQ(1, e[1].val_len);
	ASSERT_EQ(0, memcmp(out[1], "v", 1));
	ASSERT_EQ(-ENOSPC, (int64_t)e[2].result);
	ASSERT_EQ(8, e[2].val_len);
	ASSERT_EQ(0, memcmp(out[3], "v", 1));

	/* no buffer shared: faults found after the fact fail their entry */
	memset(out, 0, sizeof(out));
	e[0] = batch_ent(&self->c, PMIDX_OP_GET, "src", 3, out[0], 8);
	e[1] = batch_ent(&self->c, PMIDX_OP_GET, "src", 3, (void *)8, 8);
	e[2] = batch_ent(&self->c, PMIDX_OP_PUT, (void *)16, 3, "w", 1);
	e[3] = batch_ent(&self->c, PMIDX_OP_PUT, "k2", 2, "x", 1);
	e[4] = batch_ent(&self->c, PMIDX_OP_GET, "kk", 2, out[3], 8);
	ASSERT_EQ(0, run_batch(&self->c, e, 5, &failed));
	ASSERT_EQ(2, failed);
	EXPECT_EQ(0, (int64_t)e[0].result);
	EXPECT_EQ(-EFAULT, (int64_t)e[1].result);
	EXPECT_EQ(8, e[1].val_len);
	EXPECT_EQ(-EFAULT, (int64_t)e[2].result);
	EXPECT_EQ(0, (int64_t)e[3].result);
	EXPECT_EQ(0, (int64_t)e[4].result);
	EXPECT_EQ(0, memcmp(out[0], "AAAAAAAA", 8));
	EXPECT_EQ(0, memcmp(out[3], "v", 1));
	ASSERT_EQ(0, get_str(&self->c, "k2", "x"));
	ASSERT_CHECK(5);
}

/*
 * Entries of one batch on two indexes, in runs and alternating, with an
 * unknown index between them: each entry reaches its own index (the
 * dispatcher keeps one index pinned across a run of entries naming it).
 */
TEST_F(data, batch_two_indexes)
{
	static const uint32_t pick[] = { 0, 0, 1, 1, 0, 1, 0, 2, 1, 1, 0 };
	const uint32_t n = sizeof(pick) / sizeof(pick[0]);
	struct pmidx_cmd e[sizeof(pick) / sizeof(pick[0])];
	char keys[sizeof(pick) / sizeof(pick[0])][8], out[8][16];
	struct ctx other = self->c;
	uint32_t ids[3], i;
	uint64_t engine, failed;

	REQUIRE_ENGINE();
	ASSERT_EQ(0, pm_create(&self->nl, "second", variant->engine_id))
		TH_LOG("%s", self->nl.msg);
	ASSERT_EQ(0, op_lookup(&self->c, "second", &other.index, &engine));
	ids[0] = self->c.index;
	ids[1] = other.index;
	ids[2] = 63;	/* no such index */
	for (i = 0; i < n; i++) {
		snprintf(keys[i], sizeof(keys[i]), "tk%02u", i);
		e[i] = batch_ent(&self->c, PMIDX_OP_PUT, keys[i],
				 strlen(keys[i]), keys[i], strlen(keys[i]));
		e[i].index = ids[pick[i]];
	}
	ASSERT_EQ(0, run_batch(&self->c, e, n, &failed));
	ASSERT_EQ(1, failed);
	for (i = 0; i < n; i++)
		ASSERT_EQ(pick[i] == 2 ? -ENXIO : 0, (int64_t)e[i].result);
	/* each key is in its own index only */
	for (i = 0; i < n; i++) {
		if (pick[i] == 2)
			continue;
		ASSERT_EQ(0, get_str(pick[i] ? &other : &self->c, keys[i],
				     keys[i]));
		ASSERT_EQ(-ENOENT, get_str(pick[i] ? &self->c : &other,
					   keys[i], keys[i]));
	}
	/* GETs across both, alternating: each finds its index's value */
	for (i = 0; i < 8; i++) {
		const char *k = keys[i & 1 ? 2 : 0];

		e[i] = batch_ent(&self->c, PMIDX_OP_GET, k, strlen(k), out[i],
				 sizeof(out[i]));
		e[i].index = ids[i & 1];
	}
	ASSERT_EQ(0, run_batch(&self->c, e, 8, &failed));
	ASSERT_EQ(0, failed);
	for (i = 0; i < 8; i++) {
		ASSERT_EQ(0, (int64_t)e[i].result);
		ASSERT_EQ(0, memcmp(out[i], keys[i & 1 ? 2 : 0], e[i].val_len));
	}
}

/*
 * The edges of a staged BATCH (dispatch.c, stage_bytes()): 64 entries
 * with values of 256 bytes are read in and written out in one go; a
 * 65th entry, or a value of 257 bytes, makes the batch run entry by
 * entry. Either side of each edge every entry answers with its own
 * outputs, and a GET's value lands in its own buffer only.
 */
#define SB_N	65
#define SB_V	257

static void sb_val(uint32_t i, uint32_t len, uint8_t *v)
{
	uint32_t j;

	for (j = 0; j < len; j++)
		v[j] = (uint8_t)(i * 31 + j);
}

TEST_F(data, batch_stage_bounds)
{
	static uint8_t vals[SB_N][SB_V], out[SB_N][SB_V + 8], want[SB_V];
	static struct pmidx_cmd e[SB_N];
	static char keys[SB_N][8];
	uint32_t n, i, vl;
	uint64_t failed;

	REQUIRE_ENGINE();
	for (n = 64; n <= SB_N; n++) {
		/* n PUTs of 256-byte values (the last of 65: 257 bytes) */
		for (i = 0; i < n; i++) {
			snprintf(keys[i], sizeof(keys[i]), "sb%03u", i);
			vl = n == SB_N && i == n - 1 ? SB_V : SB_V - 1;
			sb_val(i + n, vl, vals[i]);
			e[i] = batch_ent(&self->c, PMIDX_OP_PUT, keys[i], 5,
					 vals[i], vl);
		}
		ASSERT_EQ(0, run_batch(&self->c, e, n, &failed));
		ASSERT_EQ(0, failed) TH_LOG("%u puts", n);
		/* n GETs into 256-byte buffers (the 257-byte value: -ENOSPC) */
		memset(out, 0xee, sizeof(out));
		for (i = 0; i < n; i++)
			e[i] = batch_ent(&self->c, PMIDX_OP_GET, keys[i], 5,
					 out[i], SB_V - 1);
		ASSERT_EQ(0, run_batch(&self->c, e, n, &failed));
		ASSERT_EQ(n == SB_N, failed) TH_LOG("%u gets", n);
		for (i = 0; i < n; i++) {
			vl = n == SB_N && i == n - 1 ? SB_V : SB_V - 1;
			if (vl == SB_V) {
				ASSERT_EQ(-ENOSPC, (int64_t)e[i].result);
				ASSERT_EQ(SB_V, e[i].val_len);
				ASSERT_EQ(0xee, out[i][0]);
				continue;
			}
			sb_val(i + n, vl, want);
			ASSERT_EQ(0, (int64_t)e[i].result) TH_LOG("%u: %u", n, i);
			ASSERT_EQ(vl, e[i].val_len);
			ASSERT_EQ(0, memcmp(out[i], want, vl)) TH_LOG("%u: %u", n, i);
			ASSERT_EQ(0xee, out[i][vl]);
		}
	}
	/* 16 GETs into 257-byte buffers: a 256-byte value and the 257 one */
	memset(out, 0, sizeof(out));
	for (i = 0; i < 16; i++)
		e[i] = batch_ent(&self->c, PMIDX_OP_GET, keys[i & 1 ? SB_N - 1 : i],
				 5, out[i], SB_V);
	ASSERT_EQ(0, run_batch(&self->c, e, 16, &failed));
	ASSERT_EQ(0, failed);
	for (i = 0; i < 16; i++) {
		vl = i & 1 ? SB_V : SB_V - 1;
		sb_val((i & 1 ? SB_N - 1 : i) + SB_N, vl, want);
		ASSERT_EQ(vl, e[i].val_len);
		ASSERT_EQ(0, memcmp(out[i], want, vl)) TH_LOG("entry %u", i);
	}
	ASSERT_CHECK(SB_N);
}

/*
 * A batch of GETs only: over io_uring it runs on the non-blocking issue,
 * and values over the dispatcher's stack buffer need a scratch buffer it
 * may not have there, so the whole batch runs again from a worker. Either
 * way every entry answers once, with its own outputs, and the inputs in
 * the array stay as they were.
 */
#define NBIG	48
#define BIGV	1000

TEST_F(data, batch_gets_large_values)
{
	static uint8_t vals[NBIG][BIGV], out[NBIG][BIGV + 24];
	static struct pmidx_cmd e[NBIG], in[NBIG];
	static char keys[NBIG][16];
	uint64_t failed;
	uint32_t i, vl;

	REQUIRE_ENGINE();
	for (i = 0; i < NBIG; i++) {
		snprintf(keys[i], sizeof(keys[i]), "big%04u", i);
		vl = i % 3 ? BIGV - i : 8 + i;	/* large ones and small ones */
		memset(vals[i], 'a' + i % 26, vl);
		ASSERT_EQ(0, op_put(&self->c, keys[i], strlen(keys[i]), vals[i],
				    vl, 0));
	}
	for (i = 0; i < NBIG; i++)
		e[i] = batch_ent(&self->c, PMIDX_OP_GET, keys[i],
				 strlen(keys[i]), out[i], sizeof(out[i]));
	e[7].val_len = 10;	/* too small: -ENOSPC and the length needed */
	memcpy(in, e, sizeof(e));
	ASSERT_EQ(0, run_batch(&self->c, e, NBIG, &failed));
	ASSERT_EQ(1, failed);
	for (i = 0; i < NBIG; i++) {
		vl = i % 3 ? BIGV - i : 8 + i;
		EXPECT_EQ(i == 7 ? -ENOSPC : 0, (int64_t)e[i].result) TH_LOG("%u", i);
		EXPECT_EQ(vl, e[i].val_len) TH_LOG("%u", i);
		if (i != 7)
			EXPECT_EQ(0, memcmp(out[i], vals[i], vl)) TH_LOG("%u", i);
		/* only the outputs changed */
		in[i].val_len = e[i].val_len;
		in[i].result = e[i].result;
	}
	EXPECT_EQ(0, memcmp(in, e, sizeof(e)));
	ASSERT_CHECK(NBIG);
}

TEST_F(data, batch_malformed_changes_nothing)
{
	static char keys[8][8];
	static struct pmidx_cmd e[8], big[PMIDX_BATCH_MAX + 1];
	struct pmidx_cmd b;
	struct ref before, after;
	uint64_t failed;
	uint32_t i, j;
	static const struct { const char *what; uint32_t at; } bad[] = {
		{ "reserved", 5 }, { "nested batch", 0 }, { "lookup", 7 },
		{ "check", 3 }, { "unknown op", 6 }, { "empty key", 2 },
		{ "get flag", 4 },
	};

	REQUIRE_ENGINE();
	ASSERT_EQ(0, fill_few(&self->c, &before));
	for (j = 0; j < ARRAY_SIZE(bad); j++) {
		for (i = 0; i < 8; i++) {
			snprintf(keys[i], sizeof(keys[i]), "m%u", i);
			e[i] = batch_ent(&self->c, PMIDX_OP_PUT, keys[i], 2,
					 keys[i], 2);
		}
		switch (j) {
		case 0: e[5].reserved[1] = 1; break;
		case 1: e[0].op = PMIDX_OP_BATCH; break;
		case 2: e[7] = batch_ent(&self->c, PMIDX_OP_LOOKUP, INDEX_NAME,
					 strlen(INDEX_NAME), NULL, 0);
			e[7].index = 0; break;
		case 3: e[3] = batch_ent(&self->c, PMIDX_OP_CHECK, NULL, 0, NULL, 0);
			break;
		case 4: e[6].op = 99; break;
		case 5: e[2].key_len = 0; break;
		case 6: e[4].op = PMIDX_OP_GET; e[4].flags = PMIDX_PUT_INSERT; break;
		}
		failed = ~0ULL;
		EXPECT_NE(0, run_batch(&self->c, e, 8, &failed)) TH_LOG("%s", bad[j].what);
		EXPECT_EQ(bad[j].at, failed) TH_LOG("%s", bad[j].what);
	}
	/* the outer command's own shape */
	b = (struct pmidx_cmd){ .op = PMIDX_OP_BATCH, .val = uptr(e),
				.val_len = 8 * sizeof(e[0]), .count = 8 };
	TRY(-EINVAL, b, count = 0);
	TRY(-EINVAL, b, val_len = 7 * sizeof(e[0]));
	TRY(-EINVAL, b, index = self->c.index);
	TRY(-EINVAL, b, key_len = 1);
	TRY(-EINVAL, b, flags = PMIDX_PUT_INSERT);
	TRY(-EINVAL, b, reserved[0] = 1);
	TRY(-EFAULT, b, val = 0);
	TRY(-EFAULT, b, val = 8);
	b.count = PMIDX_BATCH_MAX + 1;
	b.val = uptr(big);
	b.val_len = b.count * sizeof(big[0]);
	EXPECT_EQ(-EINVAL, self->c.path->cmd(self->c.fd, &b));
	ASSERT_EQ(0, snapshot(&self->c, &after));
	EXPECT_TRUE(ref_equal(&before, &after));
	ref_free(&before);
	ref_free(&after);
}

/* ---- CHECK while writers run ---------------------------------------- */

#define SW		3	/* writer threads, each with its own keys */
#define SKEYS		400	/* keys per writer */
#define SSECONDS	4	/* of CHECK in a loop */

struct storm_arg {
	const struct ctx	*c;
	const int		*stop;
	uint32_t		w;
	int			err;
	uint64_t		ops;
	uint8_t			present[SKEYS];
};

/* Puts and deletes of its own keys until told to stop. */
static void *storm_writer(void *p)
{
	struct storm_arg *a = p;
	uint64_t s = a->w * 0x9e3779b97f4a7c15ULL + 11;
	uint8_t val[150];
	char key[64];
	uint32_t k, kl;
	int ret;

	memset(val, 'v', sizeof(val));
	while (!__atomic_load_n(a->stop, __ATOMIC_ACQUIRE)) {
		k = rng_below(&s, SKEYS);
		kl = snprintf(key, sizeof(key), "s%u.%05u%s", a->w, k,
			      k % 5 ? "" : "-kept-out-of-line-in-a-blob");
		if (rng_below(&s, 2)) {
			ret = op_del(a->c, key, kl);
			if (ret == -ENOENT && !a->present[k])
				ret = 0;
			a->present[k] = false;
		} else {
			ret = op_put(a->c, key, kl, val, rng_below(&s, 3) ? 8 : 150, 0);
			a->present[k] = true;
		}
		if (ret) {
			a->err = ret;
			break;
		}
		a->ops++;
	}
	return NULL;
}

/*
 * CHECK of a healthy index while writers run answers 0 (one view of the
 * index, with its key count) or -EAGAIN (writes went on too fast for
 * one): never -EUCLEAN. Quiet again, it passes with the right count.
 */
TEST_F_TIMEOUT(data, check_under_writes, 120)
{
	struct storm_arg a[SW];
	pthread_t tid[SW];
	uint64_t keys, want = 0, ops = 0, pass = 0, again = 0;
	struct timespec t0, t;
	int stop = 0, bad = 0;
	uint32_t i, k;

	REQUIRE_ENGINE();
	for (i = 0; i < SW; i++) {
		a[i] = (struct storm_arg){ .c = &self->c, .stop = &stop, .w = i };
		ASSERT_EQ(0, pthread_create(&tid[i], NULL, storm_writer, &a[i]));
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		int ret = op_check(&self->c, &keys);

		if (!ret)
			pass++;
		else if (ret == -EAGAIN)
			again++;
		else if (!bad)
			bad = ret;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (!bad && t.tv_sec - t0.tv_sec < SSECONDS);
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (i = 0; i < SW; i++) {
		pthread_join(tid[i], NULL);
		EXPECT_EQ(0, a[i].err) TH_LOG("writer %u", i);
		ops += a[i].ops;
		for (k = 0; k < SKEYS; k++)
			want += a[i].present[k];
	}
	TH_LOG("%s: %llu writes; CHECK: %llu passed, %llu -EAGAIN", variant->engine,
	       (unsigned long long)ops, (unsigned long long)pass,
	       (unsigned long long)again);
	ASSERT_EQ(0, bad);
	ASSERT_CHECK(want);
}

TEST_HARNESS_MAIN
