// SPDX-License-Identifier: GPL-2.0
/*
 * Keys and values made from numbers, for the tests of the real engines
 * (test-engines.c, test-check.c, test-lifetime.c and the engines' own
 * crash tests, selftests/user/<engine>-crash.c). See engine-kv.h.
 */
#include <shim/shim.h>
#include "engine-kv.h"
#include "harness.h"

static const struct ekv_scheme *scheme;

void ekv_use(const struct ekv_scheme *s)
{
	scheme = s;
}

u32 ekv_key(u64 n, u8 *k)
{
	u32 len = max_t(u32, scheme->klens[n % scheme->nklens], scheme->prefix);
	u32 i;

	if (scheme->prefix == 2) {
		k[0] = 'a' + n / 26;
		k[1] = 'a' + n % 26;
	} else {
		k[0] = n >> 16;
		k[1] = n >> 8;
		k[2] = n;
	}
	for (i = scheme->prefix; i < len; i++)
		k[i] = (n * 31 + i * 7) & 0xff;
	return len;
}

u32 ekv_bytes(u64 id, u64 salt, u8 *v, u32 len)
{
	u64 s = id * 0x9e3779b97f4a7c15ULL + salt;
	u32 i;

	for (i = 0; i < len; i++) {
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		v[i] = s;
	}
	return len;
}

u32 ekv_val(u64 id, u8 *v)
{
	return ekv_bytes(id, 1, v, scheme->vlens[id % scheme->nvlens]);
}

/*
 * The workload's buffers. A crash test's checker, which runs at crash
 * points inside the workload's operations, has its own: a put's value
 * must not change under it.
 */
static u8 vbuf[EKV_VMAX], gbuf[EKV_VMAX];

int ekv_put(struct pmidx_index *idx, u64 n, u64 id)
{
	u8 k[PMIDX_KEY_MAX];
	u32 kl = ekv_key(n, k), vl = ekv_val(id, vbuf);

	return idx->ops->put(idx, k, kl, vbuf, vl, 0);
}

int ekv_get_is(struct pmidx_index *idx, u64 n, u64 id)
{
	u8 k[PMIDX_KEY_MAX];
	u32 kl = ekv_key(n, k), gl = sizeof(gbuf), vl;
	int ret = idx->ops->get(idx, k, kl, gbuf, &gl);

	if (ret)
		return ret;
	vl = ekv_val(id, vbuf);
	return gl == vl && !memcmp(gbuf, vbuf, vl) ? 0 : -EBADMSG;
}

int ekv_del(struct pmidx_index *idx, u64 n)
{
	u8 k[PMIDX_KEY_MAX];
	u32 kl = ekv_key(n, k);

	return idx->ops->del(idx, k, kl, 0);
}

int ekv_count_emit(struct pmidx_scan_sink *sink, const u8 *key, u32 klen,
		   const u8 *val, u32 vlen)
{
	struct ekv_counter *c = container_of(sink, struct ekv_counter, sink);

	if (c->n && pmidx_key_cmp(c->last, c->last_len, key, klen) >= 0)
		c->bad = true;
	memcpy(c->last, key, klen);
	c->last_len = klen;
	c->n++;
	return c->limit && c->n % c->limit == 0;
}

u64 ekv_scan_all(struct pmidx_index *idx, u64 limit)
{
	struct ekv_counter c = { .sink.emit = ekv_count_emit, .limit = limit };
	u64 before;

	UT_EQ(idx->ops->scan(idx, NULL, 0, false, NULL, 0, &c.sink), 0);
	while (limit && c.n && c.n % limit == 0) {
		u8 start[PMIDX_KEY_MAX];
		u32 sl = c.last_len;

		before = c.n;
		memcpy(start, c.last, sl);
		UT_EQ(idx->ops->scan(idx, start, sl, true, NULL, 0, &c.sink), 0);
		if (c.n == before)
			break;
	}
	UT_ASSERT(!c.bad);
	return c.n;
}

void ekv_verify(struct pmidx_index *idx, const u64 *state, u64 n,
		const char *when)
{
	const char *why = NULL;
	u64 i, live = 0, keys;

	for (i = 0; i < n; i++) {
		int ret = ekv_get_is(idx, i, state[i] ? state[i] - 1 : 0);

		if (state[i])
			live++;
		UT_ASSERT_MSG(state[i] ? !ret : ret == -ENOENT,
			      "%s: key %llu: %d", when, (unsigned long long)i, ret);
	}
	UT_ASSERT_MSG(!idx->ops->check(idx, &keys, &why), "%s: check: %s", when, why);
	UT_EQ(keys, live);
	UT_EQ(ekv_scan_all(idx, 0), live);
	UT_EQ(ekv_scan_all(idx, scheme->scan_piece), live);
}

void ekv_put_stable(struct pmidx_index *idx, u64 keys)
{
	u64 n;

	for (n = 0; n < keys; n += 2) {
		u8 k[PMIDX_KEY_MAX];
		u32 kl = ekv_key(n, k);

		UT_EQ(idx->ops->put(idx, k, kl, (u8 *)&n, 8, 0), 0);
	}
}

void *ekv_stable_reader(void *arg)
{
	struct ekv_thread *a = arg;
	u8 k[PMIDX_KEY_MAX], v[300];
	u64 n = a->id;

	while (!*a->stop) {
		u32 kl, vl = sizeof(v);

		n = (n + 2 * 7919) % a->keys & ~1ULL;
		kl = ekv_key(n, k);
		if (a->idx->ops->get(a->idx, k, kl, v, &vl) || vl != 8) {
			a->errors++;
			continue;
		}
		a->errors += !!memcmp(v, &n, 8);
	}
	return NULL;
}

void *ekv_stable_scanner(void *arg)
{
	struct ekv_thread *a = arg;

	while (!*a->stop) {
		struct ekv_counter c = { .sink.emit = ekv_count_emit };

		a->errors += !!a->idx->ops->scan(a->idx, NULL, 0, false, NULL, 0,
						 &c.sink);
		a->errors += c.bad || c.n < a->keys / 2;
	}
	return NULL;
}

u32 ekv_hkey(u64 i, u8 *k)
{
	u32 len = i % 7 == 3 ? 40 : 8;
	u64 be = cpu_to_be64(i * 0x9e3779b97f4a7c15ULL >> 8);

	memset(k, 'k', len);
	memcpy(k, &be, 8);
	if (len > 8)
		memcpy(k + len - 8, &be, 8);
	return len;
}

u32 ekv_hval(u64 v, u8 *b)
{
	u32 len = v % 5 == 1 ? 100 : 8, i;

	for (i = 0; i < len; i++)
		b[i] = (u8)(v >> (8 * (i % 8)));
	return len;
}

bool ekv_engine_available(u32 e)
{
	if (!pmidx_engine_ops(e)) {
		ut_note("engine %s: not built in, skipped", pmidx_engine_name(e));
		return false;
	}
	return true;
}
