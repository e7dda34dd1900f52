// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A mock backend standing in for the kernel: an in-memory ordered map
 * with the dispatcher's validation (reserved fields, per-op flags and
 * fields) and its output rules (-ENOSPC with the needed length, packed
 * SCAN records, PMIDX_SCAN_MORE). It checks that the library builds
 * commands the kernel accepts, and drives the scan iterator through
 * batches, buffer growth and errors.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "unit.h"

#define MOCK_MAX	8192

struct ent {
	uint8_t key[PMIDX_KEY_MAX];
	uint32_t klen;
	uint8_t *val;
	uint32_t vlen;
};

static struct {
	struct ent e[MOCK_MAX];
	int n;
	int scans;		/* SCAN commands seen */
	uint32_t max_cap;	/* largest SCAN buffer seen */
	int fail_scan_at;	/* answer -EIO to this SCAN (1-based), 0: never */
	int lie_count;		/* add this to a SCAN's count */
	int cmds;		/* commands seen (a BATCH is one) */
	int batches;		/* BATCH commands seen */
} m;

static void mock_reset(void)
{
	int i;

	for (i = 0; i < m.n; i++)
		free(m.e[i].val);
	memset(&m, 0, sizeof(m));
}

/* Position of the first entry >= key (> key when @after). */
static int lower(const void *key, uint32_t klen, bool after)
{
	int lo = 0, hi = m.n, mid, c;

	while (lo < hi) {
		mid = (lo + hi) / 2;
		c = pmidx_key_cmp(m.e[mid].key, m.e[mid].klen, key, klen);
		if (c < 0 || (after && c == 0))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int find(const void *key, uint32_t klen)
{
	int i = lower(key, klen, false);

	if (i < m.n && !pmidx_key_cmp(m.e[i].key, m.e[i].klen, key, klen))
		return i;
	return -1;
}

static int mock_put(const struct pmidx_cmd *c)
{
	const void *key = (const void *)(uintptr_t)c->key;
	int i = find(key, c->key_len);
	struct ent *e;

	if (i >= 0 && (c->flags & PMIDX_PUT_INSERT))
		return -EEXIST;
	if (i < 0) {
		if (m.n == MOCK_MAX)
			return -ENOMEM;
		i = lower(key, c->key_len, false);
		memmove(&m.e[i + 1], &m.e[i], (m.n - i) * sizeof(m.e[0]));
		m.n++;
		e = &m.e[i];
		memcpy(e->key, key, c->key_len);
		e->klen = c->key_len;
		e->val = NULL;
	}
	e = &m.e[i];
	free(e->val);
	e->val = malloc(c->val_len ? c->val_len : 1);
	if (c->val_len)
		memcpy(e->val, (const void *)(uintptr_t)c->val, c->val_len);
	e->vlen = c->val_len;
	return 0;
}

static int mock_get(struct pmidx_cmd *c)
{
	int i = find((const void *)(uintptr_t)c->key, c->key_len);

	if (i < 0)
		return -ENOENT;
	if (m.e[i].vlen > c->val_len) {
		c->val_len = m.e[i].vlen;
		return -ENOSPC;
	}
	if (m.e[i].vlen)
		memcpy((void *)(uintptr_t)c->val, m.e[i].val, m.e[i].vlen);
	c->val_len = m.e[i].vlen;
	return 0;
}

static int mock_del(const struct pmidx_cmd *c)
{
	int i = find((const void *)(uintptr_t)c->key, c->key_len);

	if (i < 0)
		return -ENOENT;
	free(m.e[i].val);
	memmove(&m.e[i], &m.e[i + 1], (m.n - i - 1) * sizeof(m.e[0]));
	m.n--;
	return 0;
}

static int mock_scan(struct pmidx_cmd *c)
{
	const void *end = (const void *)(uintptr_t)c->end_key;
	uint8_t *out = (uint8_t *)(uintptr_t)c->val;
	uint32_t used = 0, count = 0, size;
	struct pmidx_rec r;
	int i;

	m.scans++;
	if (c->val_len > m.max_cap)
		m.max_cap = c->val_len;
	if (m.scans == m.fail_scan_at)
		return -EIO;
	i = c->key_len ? lower((const void *)(uintptr_t)c->key, c->key_len,
			       c->flags & PMIDX_SCAN_AFTER) : 0;
	for (; i < m.n; i++) {
		struct ent *e = &m.e[i];

		if (c->end_key_len &&
		    pmidx_key_cmp(e->key, e->klen, end, c->end_key_len) >= 0)
			break;
		size = pmidx_rec_size(e->klen, e->vlen);
		if (count == c->count || used + size > c->val_len) {
			if (!count) {
				c->val_len = size;
				return -ENOSPC;
			}
			c->flags |= PMIDX_SCAN_MORE;
			break;
		}
		r.key_len = e->klen;
		r.val_len = e->vlen;
		memset(out + used, 0, size);
		memcpy(out + used, &r, sizeof(r));
		memcpy(out + used + 8, e->key, e->klen);
		memcpy(out + used + 8 + e->klen, e->val, e->vlen);
		used += size;
		count++;
	}
	c->count = count + m.lie_count;
	c->val_len = used;
	return 0;
}

static int mock_batch_shape(const struct pmidx_cmd *c)
{
	if (c->index || c->key || c->key_len || c->end_key || c->end_key_len)
		return -EINVAL;
	if (!c->count || c->count > PMIDX_BATCH_MAX ||
	    c->val_len != c->count * sizeof(struct pmidx_cmd))
		return -EINVAL;
	return c->val ? 0 : -EFAULT;
}

/* The dispatcher's shape checks (kmod/core/dispatch.c), in short. */
static int mock_shape(const struct pmidx_cmd *c)
{
	static const uint16_t op_flags[__PMIDX_OP_MAX] = {
		[PMIDX_OP_PUT] = PMIDX_PUT_INSERT,
		[PMIDX_OP_SCAN] = PMIDX_SCAN_AFTER,
	};

	if (!c->op || c->op >= __PMIDX_OP_MAX)
		return -EOPNOTSUPP;
	if (c->reserved0 || c->reserved[0] || c->reserved[1] ||
	    c->reserved[2] || c->result || (c->flags & ~op_flags[c->op]))
		return -EINVAL;
	if (c->op == PMIDX_OP_BATCH)
		return mock_batch_shape(c);
	if (c->op != PMIDX_OP_SCAN && (c->end_key || c->end_key_len || c->count))
		return -EINVAL;
	if (c->op == PMIDX_OP_SCAN && !c->count)
		return -EINVAL;
	if ((c->op == PMIDX_OP_DEL || c->op == PMIDX_OP_LOOKUP ||
	     c->op == PMIDX_OP_CHECK) && (c->val || c->val_len))
		return -EINVAL;
	if (c->key_len > PMIDX_KEY_MAX || c->end_key_len > PMIDX_KEY_MAX)
		return -EINVAL;
	if (!c->key_len && c->op != PMIDX_OP_SCAN && c->op != PMIDX_OP_CHECK)
		return -EINVAL;
	if (c->op == PMIDX_OP_PUT && c->val_len > PMIDX_VALUE_MAX)
		return -E2BIG;
	if ((c->key_len && !c->key) || (c->end_key_len && !c->end_key) ||
	    (c->val_len && !c->val))
		return -EFAULT;
	if (c->op != PMIDX_OP_LOOKUP && c->index != 7)
		return -ENXIO;
	return 0;
}

static int mock_one(struct pmidx_cmd *c);

/*
 * BATCH as the uapi describes it: every entry checked first (a malformed
 * one, or a LOOKUP, CHECK or nested BATCH, refuses the whole command
 * with result := its position), then run in order, each entry's result
 * := its return value; result := entries that failed.
 */
static int mock_batch(struct pmidx_cmd *c)
{
	struct pmidx_cmd *e = (struct pmidx_cmd *)(uintptr_t)c->val;
	uint32_t i, failed = 0;
	int ret;

	m.batches++;
	for (i = 0; i < c->count; i++) {
		ret = mock_shape(&e[i]);
		if (!ret && (e[i].op == PMIDX_OP_LOOKUP ||
			     e[i].op == PMIDX_OP_CHECK || e[i].op == PMIDX_OP_BATCH))
			ret = -EINVAL;
		if (ret) {
			c->result = i;
			return ret;
		}
	}
	for (i = 0; i < c->count; i++) {
		ret = mock_one(&e[i]);
		e[i].result = (uint64_t)(int64_t)ret;
		failed += ret != 0;
	}
	c->result = failed;
	return 0;
}

static int mock_cmd(struct pmidx_pool *pool, struct pmidx_cmd *c)
{
	int ret = mock_shape(c);

	(void)pool;
	m.cmds++;
	if (ret)
		return ret;
	if (c->op == PMIDX_OP_BATCH)
		return mock_batch(c);
	return mock_one(c);
}

static int mock_one(struct pmidx_cmd *c)
{
	switch (c->op) {
	case PMIDX_OP_LOOKUP:
		if (c->key_len != 4 || memcmp((void *)(uintptr_t)c->key, "mock", 4))
			return -ENOENT;
		c->index = 7;
		c->result = PMIDX_ENGINE_UTREE;
		return 0;
	case PMIDX_OP_GET:
		return mock_get(c);
	case PMIDX_OP_PUT:
		return mock_put(c);
	case PMIDX_OP_DEL:
		return mock_del(c);
	case PMIDX_OP_SCAN:
		return mock_scan(c);
	case PMIDX_OP_CHECK:
		c->result = m.n;
		return 0;
	}
	return -EOPNOTSUPP;
}

static const struct pmidx_backend mock_be = {
	.name	= "mock",
	.cmd	= mock_cmd,
};

struct pmidx_pool mock_pool = { .be = &mock_be, .fd = -1 };

struct pmidx_index *mock_index(void)
{
	struct pmidx_index *idx;

	mock_reset();
	if (pmidx_index_open(&mock_pool, "mock", &idx))
		return NULL;
	return idx;
}

int mock_cmds(void)
{
	return m.cmds;
}

int mock_batches(void)
{
	return m.batches;
}

static uint32_t fill_vmod;

/* Key i * 10: big-endian u64 (numeric order), value of i % vmod bytes. */
static int fill(struct pmidx_index *idx, int n, uint32_t vmod)
{
	static uint8_t val[PMIDX_VALUE_MAX];
	uint8_t k[8];
	int i;

	fill_vmod = vmod;
	for (i = 0; i < n; i++) {
		pmidx_key_from_u64(i * 10, k);
		memset(val, i & 0xff, i % vmod);
		if (pmidx_put(idx, k, 8, val, i % vmod, 0))
			return -1;
	}
	return 0;
}

/* Scan [from, to) with limit; the keys seen must be from, from + 10, ... */
static int scan_expect(struct pmidx_index *idx, int from, int to, int after,
		       uint64_t limit, int want)
{
	uint8_t ks[8], ke[8];
	struct pmidx_scan *s;
	struct pmidx_kv kv;
	uint64_t v, next = from;
	int got = 0, ret;

	pmidx_key_from_u64(from, ks);
	pmidx_key_from_u64(to, ke);
	EXPECT_EQ(0, pmidx_scan_open(idx, ks, from >= 0 ? 8 : 0, ke,
				     to >= 0 ? 8 : 0, limit,
				     after ? PMIDX_SCAN_AFTER : 0, &s));
	if (from < 0)
		next = 0;
	else if (after || from % 10)
		next = (from / 10 + 1) * 10;
	while ((ret = pmidx_scan_next(s, &kv)) == 1) {
		EXPECT_EQ(0, pmidx_key_to_u64(kv.key, kv.key_len, &v));
		EXPECT(v == next);
		EXPECT_EQ(kv.val_len, (v / 10) % fill_vmod);
		if (kv.val_len)
			EXPECT_EQ(((const uint8_t *)kv.val)[kv.val_len - 1],
				  (v / 10) & 0xff);
		next += 10;
		got++;
	}
	EXPECT_EQ(0, ret);
	EXPECT_EQ(0, pmidx_scan_next(s, &kv));	/* stays at the end */
	pmidx_scan_close(s);
	EXPECT_EQ(want, got);
	return 0;
}

static int test_scan_batches(void)
{
	struct pmidx_index *idx = mock_index();

	EXPECT(idx);
	EXPECT_EQ(0, fill(idx, 3000, 977));
	EXPECT_EQ(0, scan_expect(idx, -1, -1, 0, 0, 3000));
	EXPECT(m.scans > 10);	/* ~1.5 MB of records in 64 KiB batches */
	EXPECT_EQ(64 << 10, m.max_cap);
	EXPECT_EQ(0, scan_expect(idx, 100, 20000, 0, 0, 1990));
	EXPECT_EQ(0, scan_expect(idx, 100, 20000, 1, 0, 1989));
	EXPECT_EQ(0, scan_expect(idx, 105, 205, 0, 0, 10));
	EXPECT_EQ(0, scan_expect(idx, 100, -1, 0, 25, 25));
	EXPECT_EQ(0, scan_expect(idx, -1, -1, 0, 4096, 3000));
	EXPECT_EQ(0, scan_expect(idx, 29990, -1, 0, 0, 1));
	EXPECT_EQ(0, scan_expect(idx, 29990, -1, 1, 0, 0));
	EXPECT_EQ(0, scan_expect(idx, 500, 400, 0, 0, 0));
	EXPECT_EQ(0, scan_expect(idx, 500, 500, 0, 0, 0));
	pmidx_index_close(idx);
	return 0;
}

static int test_scan_limit_batches(void)
{
	struct pmidx_index *idx = mock_index();

	EXPECT(idx);
	/* empty values: 16-byte records, 4096 of them fill 64 KiB exactly */
	EXPECT_EQ(0, fill(idx, 4096, 1));
	m.scans = 0;
	EXPECT_EQ(0, scan_expect(idx, -1, -1, 0, 0, 4096));
	EXPECT_EQ(1, m.scans);	/* all in one batch, PMIDX_SCAN_MORE clear */
	EXPECT_EQ(0, fill(idx, 4097, 1));
	m.scans = 0;
	EXPECT_EQ(0, scan_expect(idx, -1, -1, 0, 0, 4097));
	EXPECT_EQ(2, m.scans);
	m.scans = 0;
	EXPECT_EQ(0, scan_expect(idx, -1, -1, 0, 4096, 4096));
	EXPECT_EQ(1, m.scans);	/* the limit ends it, not the kernel */
	pmidx_index_close(idx);
	return 0;
}

static int test_scan_grows(void)
{
	static uint8_t val[PMIDX_VALUE_MAX];
	struct pmidx_index *idx = mock_index();
	uint8_t key[PMIDX_KEY_MAX];
	struct pmidx_scan *s;
	struct pmidx_kv kv;
	int i;

	EXPECT(idx);
	memset(key, 'k', sizeof(key));
	for (i = 0; i < 3; i++) {
		key[254] = 'a' + i;
		memset(val, 'a' + i, sizeof(val));
		EXPECT_EQ(0, pmidx_put(idx, key, 255, val, sizeof(val), 0));
	}
	EXPECT_EQ(0, pmidx_scan_open(idx, NULL, 0, NULL, 0, 0, 0, &s));
	for (i = 0; i < 3; i++) {
		EXPECT_EQ(1, pmidx_scan_next(s, &kv));
		EXPECT(kv.key_len == 255 && ((const uint8_t *)kv.key)[254] == 'a' + i);
		EXPECT(kv.val_len == 65536 && ((const uint8_t *)kv.val)[65535] == 'a' + i);
	}
	EXPECT_EQ(0, pmidx_scan_next(s, &kv));
	pmidx_scan_close(s);
	EXPECT(m.max_cap >= pmidx_rec_size(255, 65536));
	EXPECT(m.max_cap < pmidx_rec_size(255, 65536) + 4096);
	pmidx_index_close(idx);
	return 0;
}

static int test_scan_errors(void)
{
	struct pmidx_index *idx = mock_index();
	struct pmidx_scan *s;
	struct pmidx_kv kv;
	int i, ret;

	EXPECT(idx);
	EXPECT_EQ(0, fill(idx, 3000, 977));
	EXPECT_EQ(-EINVAL, pmidx_scan_open(idx, NULL, 0, NULL, 0, 0,
					   PMIDX_SCAN_AFTER, &s));
	EXPECT_EQ(-EINVAL, pmidx_scan_open(idx, "a", 1, NULL, 0, 0, 1U << 5, &s));
	EXPECT_EQ(-EINVAL, pmidx_scan_open(idx, "a", 256, NULL, 0, 0, 0, &s));
	/* an error in a later batch is returned, and again after that */
	m.scans = 0;
	m.fail_scan_at = 2;
	EXPECT_EQ(0, pmidx_scan_open(idx, NULL, 0, NULL, 0, 0, 0, &s));
	for (i = 0; (ret = pmidx_scan_next(s, &kv)) == 1; i++)
		;
	EXPECT_EQ(-EIO, ret);
	EXPECT(i > 0);
	EXPECT_EQ(-EIO, pmidx_scan_next(s, &kv));
	pmidx_scan_close(s);
	/* a reply counting more records than it holds */
	m.fail_scan_at = 0;
	m.lie_count = 1;
	EXPECT_EQ(0, pmidx_scan_open(idx, NULL, 0, NULL, 0, 0, 0, &s));
	while ((ret = pmidx_scan_next(s, &kv)) == 1)
		;
	EXPECT_EQ(-EPROTO, ret);
	pmidx_scan_close(s);
	m.lie_count = 0;
	pmidx_index_close(idx);
	return 0;
}

static int test_point_ops(void)
{
	struct pmidx_index *idx = mock_index();
	struct pmidx_index *bad;
	char buf[16];
	size_t len;
	void *p;
	uint64_t keys;

	EXPECT(idx);
	EXPECT_EQ(7, pmidx_index_id(idx));
	EXPECT_EQ(PMIDX_ENGINE_UTREE, pmidx_index_engine(idx));
	EXPECT(!strcmp(pmidx_index_name(idx), "mock"));
	EXPECT_EQ(-ENOENT, pmidx_index_open(&mock_pool, "nope", &bad));
	EXPECT(!bad);
	EXPECT_EQ(-EINVAL, pmidx_index_open(&mock_pool, "", &bad));
	EXPECT_EQ(0, pmidx_put(idx, "k", 1, "hello, world", 12, 0));
	EXPECT_EQ(-EEXIST, pmidx_put(idx, "k", 1, "x", 1, PMIDX_PUT_INSERT));
	EXPECT_EQ(0, pmidx_put(idx, "j", 1, "", 0, PMIDX_PUT_INSERT));
	EXPECT_EQ(-EINVAL, pmidx_put(idx, "k", 1, "x", 1, 1U << 20));
	len = 4;
	memset(buf, '#', sizeof(buf));
	EXPECT_EQ(-ENOSPC, pmidx_get(idx, "k", 1, buf, &len));
	EXPECT_EQ(12, len);
	EXPECT_EQ('#', buf[0]);
	EXPECT_EQ(0, pmidx_get(idx, "k", 1, buf, &len));
	EXPECT(len == 12 && !memcmp(buf, "hello, world", 12));
	len = 0;
	EXPECT_EQ(0, pmidx_get(idx, "j", 1, NULL, &len));
	EXPECT_EQ(0, len);
	EXPECT_EQ(0, pmidx_get_alloc(idx, "k", 1, &p, &len));
	EXPECT(len == 12 && !memcmp(p, "hello, world", 12));
	free(p);
	EXPECT_EQ(0, pmidx_check(idx, &keys));
	EXPECT_EQ(2, keys);
	EXPECT_EQ(0, pmidx_del(idx, "k", 1));
	EXPECT_EQ(-ENOENT, pmidx_del(idx, "k", 1));
	EXPECT_EQ(-ENOENT, pmidx_get(idx, "k", 1, buf, &len));
	EXPECT_EQ(-ENOENT, pmidx_get_alloc(idx, "k", 1, &p, &len));
	EXPECT_EQ(-E2BIG, pmidx_put(idx, "k", 1, buf, PMIDX_VALUE_MAX + 1, 0));
	EXPECT_EQ(-EINVAL, pmidx_put(idx, "", 0, buf, 1, 0));
	pmidx_index_close(idx);
	mock_reset();
	return 0;
}

const struct unit_test mock_tests[] = {
	{ "mock: point ops, insert-only, -ENOSPC reports the length", test_point_ops },
	{ "mock: scan iterator over many batches, bounds, limits", test_scan_batches },
	{ "mock: scan limit vs batch size", test_scan_limit_batches },
	{ "mock: scan buffer grows for a record that does not fit", test_scan_grows },
	{ "mock: scan errors are returned and sticky", test_scan_errors },
	{ NULL, NULL },
};
