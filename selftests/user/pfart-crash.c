// SPDX-License-Identifier: GPL-2.0
/*
 * The pfart engine (kmod/engines/pfart/) beyond the common engine tests:
 *  - structure: inner nodes growing N4 -> N16 -> N48 -> N256 and shrinking
 *    back, prefix splits, prefix chains (common prefixes over 24 bytes),
 *    end children (keys that are prefixes of others), leaf arrays growing
 *    through their sizes and splitting, deletes that prune, compact and
 *    collapse; get/scan/CHECK, a clean and a crash re-attach, a drop that
 *    leaves no object behind;
 *  - the adaptive flush: flushes and fences of an insert under ADR and
 *    eADR, and no eADR shortcut ever taken under ADR; an insert that fits
 *    allocates nothing (bulk allocation);
 *  - generations: a lock word left locked by a crash is unlocked at the
 *    next attach without a store;
 *  - format versions; superseded records: an update's invalidation that
 *    never reached the media, then the key left, deleted or put again;
 *  - threads: writers, readers, a scanner and CHECK with small leaf arrays;
 *  - damaged images: refused or caught by CHECK, never a hang;
 *  - the crash simulator over every point of workloads long enough that
 *    leaf arrays, inner nodes and blobs are freed and their objects reused,
 *    under ADR (the line model, the store-prefix model in the prefix
 *    build) and under eADR (the fences in the plain build, every store in
 *    the prefix build); and the eADR engine under the ADR model must fail.
 *
 * Run: make -f tools/testing/user.mk B=DIR DIR/user/plain/pfart-crash
 * Replay one failure: PMIDX_CRASH_POINT=P PMIDX_CRASH_VARIANT=V
 *   pfart-crash --seed S --only NAME
 */
#include <pthread.h>
#include <stdlib.h>
#include <linux/prandom.h>
#include <shim/shim.h>
#include "core/engine.h"
#include "crashsim.h"
#include "harness.h"
#include "engines/pfart/lock.h"
#include "engines/pfart/pfart.h"

#define SZ		(128ULL << 20)

/*
 * Key n: five families, all unique, for every structure ART has:
 *   0: 8 bytes of a hash (spread over the first byte)
 *   1: "user%04u" (a shared prefix, dense digits)
 *   2: 28 shared bytes, one changed somewhere, + 2 (prefixes longer than
 *      a node holds: chains; keys leaving them: prefix splits)
 *   3: "u%u" of n / 5 ("u1" a prefix of "u12": end children)
 *   4: 96 'p' + 4 bytes (long keys: large records)
 */
static u64 dense_stride;	/* not 0: key n is the big-endian n * stride */

static u32 key_of(u64 n, u8 *k)
{
	static const char shared[] = "the-same-prefix-of-thirty-by";
	u64 h = n * 0x9e3779b97f4a7c15ULL;

	if (dense_stride) {
		h = cpu_to_be64(n * dense_stride);
		memcpy(k, &h, 8);
		return 8;
	}
	switch (n % 5) {
	case 0:
		h = cpu_to_be64(h);
		memcpy(k, &h, 8);
		return 8;
	case 1:
		return snprintf((char *)k, 16, "user%04u", (unsigned int)n % 10000);
	case 2:
		/* leaving the shared part somewhere: prefix splits */
		memcpy(k, shared, 28);
		k[4 + (n / 5) % 24] = 'A' + (n / 5) % 26;
		k[28] = n >> 8;
		k[29] = n;
		return 30;
	case 3:
		return snprintf((char *)k, 16, "u%u", (unsigned int)(n / 5));
	default:
		memset(k, 'p', 96);
		k[96] = n >> 24;
		k[97] = n >> 16;
		k[98] = n >> 8;
		k[99] = n;
		return 100;
	}
}

/* value id: 0..2000 bytes, inline (<= 62) or a blob */
static u32 val_of(u64 id, u8 *v)
{
	static const u32 lens[] = { 8, 0, 8, 5, 16, 62, 63, 300, 8, 2000 };
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

/* the workload's buffers; the checker has its own (it runs inside puts) */
static u8 vbuf[4096], gbuf[4096], cvbuf[4096], cgbuf[4096];

static int put(struct pmidx_index *idx, u64 n, u64 v)
{
	u8 k[256];
	u32 kl = key_of(n, k), vl = val_of(v, vbuf);

	return idx->ops->put(idx, k, kl, vbuf, vl, 0);
}

static int get_is(struct pmidx_index *idx, u64 n, u64 v, u8 *g, u8 *w)
{
	u8 k[256];
	u32 kl = key_of(n, k), gl = 4096, vl;
	int ret = idx->ops->get(idx, k, kl, g, &gl);

	if (ret)
		return ret;
	vl = val_of(v, w);
	return gl == vl && !memcmp(g, w, vl) ? 0 : -EBADMSG;
}

static int del(struct pmidx_index *idx, u64 n)
{
	u8 k[256];
	u32 kl = key_of(n, k);

	return idx->ops->del(idx, k, kl, 0);
}

struct counter {
	struct pmidx_scan_sink	sink;
	u64			n, limit;
	u8			last[256];
	u32			last_len;
	bool			bad;
};

static int count_emit(struct pmidx_scan_sink *sink, const u8 *key, u32 klen,
		      const u8 *val, u32 vlen)
{
	struct counter *c = container_of(sink, struct counter, sink);

	if (c->n && pmidx_key_cmp(c->last, c->last_len, key, klen) >= 0)
		c->bad = true;
	memcpy(c->last, key, klen);
	c->last_len = klen;
	c->n++;
	return c->limit && c->n % c->limit == 0;
}

/* a full scan, in pieces of @limit records resumed after the last key */
static u64 scan_all(struct pmidx_index *idx, u64 limit, bool *bad)
{
	struct counter c = { .sink.emit = count_emit, .limit = limit };
	u64 before;

	if (idx->ops->scan(idx, NULL, 0, false, NULL, 0, &c.sink))
		*bad = true;
	while (limit && c.n && c.n % limit == 0) {
		u8 start[256];
		u32 sl = c.last_len;

		before = c.n;
		memcpy(start, c.last, sl);
		if (idx->ops->scan(idx, start, sl, true, NULL, 0, &c.sink))
			*bad = true;
		if (c.n == before)
			break;
	}
	*bad |= c.bad;
	return c.n;
}

/* state[i]: 0 absent, else value id + 1 */
static void verify(struct pmidx_index *idx, const u64 *state, u64 n,
		   const char *when)
{
	const char *why = NULL;
	u64 i, live = 0, keys;
	bool bad = false;

	for (i = 0; i < n; i++) {
		int ret = get_is(idx, i, state[i] ? state[i] - 1 : 0, gbuf, vbuf);

		if (state[i])
			live++;
		UT_ASSERT_MSG(state[i] ? !ret : ret == -ENOENT,
			      "%s: key %llu: %d", when, (unsigned long long)i, ret);
	}
	UT_ASSERT_MSG(!idx->ops->check(idx, &keys, &why), "%s: check: %s", when, why);
	UT_EQ(keys, live);
	UT_EQ(scan_all(idx, 0, &bad), live);
	UT_EQ(scan_all(idx, 37, &bad), live);
	UT_ASSERT(!bad);
}

static struct pfart_pcpu psum(struct pmidx_index *idx)
{
	struct pfart *t = idx->priv;
	struct pfart_pcpu s = {};
	u64 *d = (u64 *)&s;
	size_t i;
	int cpu;

	for_each_possible_cpu(cpu) {
		u64 *c = (u64 *)per_cpu_ptr(t->pcpu, cpu);

		for (i = 0; i < sizeof(s) / sizeof(u64); i++)
			d[i] += c[i];
	}
	return s;
}

static struct pmidx_index *create(struct pmidx_pool *pool, const char *name)
{
	struct pmidx_index *idx;
	const char *why = NULL;

	UT_ASSERT_MSG(!pmidx_index_create(pool, name, PMIDX_ENGINE_PFART, &idx,
					  &why), "create: %s", why);
	return idx;
}

static struct pmidx_index *reopen(void *img, struct pmidx_pool **pool,
				  bool crash, void **crashed)
{
	struct pmidx_index *idx;

	if (crash) {
		*crashed = ut_img_dup(img, SZ);
		*pool = ut_pool_open(*crashed, SZ);
		UT_ASSERT((*pool)->flags & PMIDX_POOL_F_RECOVERED);
	} else {
		*pool = ut_pool_open(img, SZ);
	}
	idx = pmidx_index_lookup(*pool, "t");
	UT_ASSERT(idx && idx->opened);
	return idx;
}

/* ---- structure ------------------------------------------------------------ */

#define SKEYS	3000

static void pfart_structure(void)
{
	void *img = ut_img_alloc(SZ), *crashed = NULL;
	struct pmidx_pool *pool = ut_pool_new(img, SZ), *rp;
	u64 *state = calloc(SKEYS, sizeof(*state)), i, v = 1;
	struct pmidx_index *idx, *ri;
	struct pfart_pcpu s;
	const char *why = NULL;

	pfart_leaf_bytes = 512;
	idx = create(pool, "t");
	for (i = 0; i < SKEYS; i++) {
		UT_EQ(put(idx, i, v), 0);
		state[i] = ++v;
	}
	verify(idx, state, SKEYS, "after inserts");
	for (i = 0; i < SKEYS; i += 3) {
		UT_EQ(put(idx, i, v), 0);
		state[i] = ++v;
	}
	/* one array's keys again and again: its dead records compact */
	for (i = 0; i < 40 * 5; i++) {
		UT_EQ(put(idx, i % 10 * 5, v), 0);
		state[i % 10 * 5] = ++v;
	}
	verify(idx, state, SKEYS, "after updates");
	s = psum(idx);
	ut_note("pfart: %llu leaf splits, %llu grows, %llu arrays above leaf_max, %llu compacts, "
		"%llu node adds, %llu node grows, %llu prefix splits, %llu inner nodes",
		(unsigned long long)s.splits, (unsigned long long)s.grows,
		(unsigned long long)s.dense_builds,
		(unsigned long long)s.compacts, (unsigned long long)s.node_adds,
		(unsigned long long)s.node_grows, (unsigned long long)s.prefix_splits,
		(unsigned long long)s.inners);
	UT_ASSERT(s.splits && s.grows && s.compacts && s.node_adds);
	UT_ASSERT(s.node_grows && s.prefix_splits && s.dense_builds);
	/* a clean and a crash re-attach */
	pmidx_pool_close(pool);
	idx = reopen(img, &pool, false, NULL);
	verify(idx, state, SKEYS, "after re-attach");
	ri = reopen(img, &rp, true, &crashed);
	verify(ri, state, SKEYS, "after crash recovery");
	pmidx_pool_close(rp);
	ut_img_free(crashed, SZ);
	/* deletes: most keys, in order, so that whole subtrees empty */
	for (i = 0; i < SKEYS; i++) {
		if (i % 17 == 5)
			continue;
		UT_EQ(del(idx, i), 0);
		state[i] = 0;
	}
	UT_EQ(del(idx, 0), -ENOENT);
	verify(idx, state, SKEYS, "after deletes");
	s = psum(idx);
	ut_note("pfart: %llu prunes, %llu collapses, %llu node shrinks, %lld inner nodes left",
		(unsigned long long)s.prunes, (unsigned long long)s.collapses,
		(unsigned long long)s.node_shrinks, (long long)s.inners);
	UT_ASSERT(s.prunes && s.collapses && s.node_shrinks);
	ri = reopen(img, &rp, true, &crashed);
	verify(ri, state, SKEYS, "after deletes and a crash");
	pmidx_pool_close(rp);
	ut_img_free(crashed, SZ);
	/* everything goes: the tree empties, then the drop leaves nothing */
	for (i = 0; i < SKEYS; i++)
		if (state[i])
			UT_EQ(del(idx, i), 0);
	memset(state, 0, SKEYS * sizeof(*state));
	verify(idx, state, SKEYS, "empty");
	UT_EQ(le64_to_cpu(((struct pfart *)idx->priv)->root->top), 0);
	for (i = 0; i < 200; i++)
		UT_EQ(put(idx, i, i), 0);
	UT_EQ(pmidx_index_drop(pool, "t", &why), 0);
	UT_EQ(ut_stat(pool, PMIDX_STAT_ALLOC_OBJECTS), 0);
	pmidx_pool_close(pool);
	pfart_leaf_bytes = PFART_LEAF_MAX;
	free(state);
	ut_img_free(img, SZ);
}

/*
 * Dense keys: sequential integers. A split on their last byte would give
 * each key an array of its own (256 B of PM per 8-byte record); they get
 * arrays above leaf_max instead (format.h), about 32 B per key with
 * 8-byte values. Gets, scans, updates, deletes that shrink those arrays,
 * re-attaches, and values of 62 bytes (the largest inline). Random keys
 * (an odd multiplier: a permutation) for comparison: none of those
 * arrays. PFART_DENSE_KEYS=N runs N keys (the figures in the README).
 */
static void pfart_dense(void)
{
	static const struct {
		u64	stride;
		u32	vlen, div, pm_max;	/* keys / div; PM per key */
	} passes[] = {
		{ 1, 8, 1, 48 },
		{ 1, 62, 4, 160 },
		{ 0x9e3779b97f4a7c15ULL, 8, 1, 64 },
	};
	const char *env = getenv("PFART_DENSE_KEYS");
	u32 dkeys = env ? strtoul(env, NULL, 0) : 20000;
	unsigned int pass;

	for (pass = 0; pass < ARRAY_SIZE(passes); pass++) {
		void *img = ut_img_alloc(SZ), *crashed = NULL;
		struct pmidx_pool *pool = ut_pool_new(img, SZ), *rp;
		u32 vl = passes[pass].vlen, nkeys = dkeys / passes[pass].div;
		bool dense = passes[pass].stride == 1;
		struct pmidx_index *idx, *ri;
		const char *why = NULL;
		struct pfart_pcpu s;
		u64 i, keys, pm;
		bool bad = false;
		u8 k[8], v[64];

		dense_stride = passes[pass].stride;
		idx = create(pool, "t");
		for (i = 0; i < nkeys; i++) {
			key_of(i, k);
			memset(v, 0x5a, sizeof(v));
			memcpy(v, &i, sizeof(i));
			UT_EQ(idx->ops->put(idx, k, 8, v, vl, 0), 0);
		}
		s = psum(idx);
		pm = s.leaf_bytes + s.inner_bytes;
		ut_note("pfart %s, %u keys, %u-byte values: %.1f B of PM (arrays and inner nodes), %.1f B of DRAM (metadata) per key; %llu arrays built above leaf_max, %llu splits",
			dense ? "dense" : "random", nkeys, vl, (double)pm / nkeys,
			(double)atomic64_read(&((struct pfart *)idx->priv)->dram_bytes) / nkeys,
			(unsigned long long)s.dense_builds,
			(unsigned long long)s.splits);
		/* dense: 272 B per key before, one 256-byte array each */
		UT_ASSERT(dense ? s.dense_builds > 0 : !s.dense_builds);
		UT_ASSERT(pm < passes[pass].pm_max * nkeys);
		/* every key with its own value; updates (appended) of some */
		for (i = 0; i < nkeys; i += 7) {
			key_of(i, k);
			memset(v, 0x5a, sizeof(v));
			memcpy(v, &i, sizeof(i));
			v[vl - 1] ^= 1;
			UT_EQ(idx->ops->put(idx, k, 8, v, vl, 0), 0);
		}
		for (i = 0; i < nkeys; i++) {
			u8 g[64], w[64];
			u32 gl = sizeof(g);

			key_of(i, k);
			memset(w, 0x5a, sizeof(w));
			memcpy(w, &i, sizeof(i));
			if (i % 7 == 0)
				w[vl - 1] ^= 1;
			UT_EQ(idx->ops->get(idx, k, 8, g, &gl), 0);
			UT_ASSERT(gl == vl && !memcmp(g, w, vl));
		}
		UT_ASSERT_MSG(!idx->ops->check(idx, &keys, &why), "check: %s", why);
		UT_EQ(keys, nkeys);
		UT_EQ(scan_all(idx, 0, &bad), nkeys);
		UT_EQ(scan_all(idx, 100, &bad), nkeys);
		UT_ASSERT(!bad);
		pmidx_pool_close(pool);
		idx = reopen(img, &pool, false, NULL);
		ri = reopen(img, &rp, true, &crashed);
		UT_ASSERT(!ri->ops->check(ri, &keys, &why) && keys == nkeys);
		pmidx_pool_close(rp);
		ut_img_free(crashed, SZ);
		/* three keys in four go: the arrays move to smaller classes */
		for (i = 0; i < nkeys; i++) {
			if (i % 4 == 3)
				continue;
			key_of(i, k);
			UT_EQ(idx->ops->del(idx, k, 8, 0), 0);
		}
		/* counters since the re-attach: the deletes' */
		s = psum(idx);
		ut_note("pfart %s after deletes: %.1f B of PM per key left, %llu arrays moved to a smaller class",
			dense ? "dense" : "random",
			(double)(s.leaf_bytes + s.inner_bytes) / (nkeys / 4),
			(unsigned long long)s.leaf_shrinks);
		UT_ASSERT(s.leaf_shrinks && s.leaf_bytes + s.inner_bytes < pm * 3 / 4);
		UT_ASSERT_MSG(!idx->ops->check(idx, &keys, &why), "check: %s", why);
		UT_EQ(keys, nkeys / 4);
		UT_EQ(scan_all(idx, 37, &bad), nkeys / 4);
		UT_ASSERT(!bad);
		ri = reopen(img, &rp, true, &crashed);
		UT_ASSERT(!ri->ops->check(ri, &keys, &why) && keys == nkeys / 4);
		pmidx_pool_close(rp);
		ut_img_free(crashed, SZ);
		for (i = 3; i < nkeys; i += 4) {
			key_of(i, k);
			UT_EQ(idx->ops->del(idx, k, 8, 0), 0);
		}
		s = psum(idx);
		UT_ASSERT(s.collapses || s.node_shrinks);
		UT_EQ(le64_to_cpu(((struct pfart *)idx->priv)->root->top), 0);
		UT_EQ(pmidx_index_drop(pool, "t", &why), 0);
		UT_EQ(ut_stat(pool, PMIDX_STAT_ALLOC_OBJECTS), 0);
		pmidx_pool_close(pool);
		dense_stride = 0;
		ut_img_free(img, SZ);
	}
}

/*
 * Format versions: an index of version 1 (no array above leaf_max) or 2
 * (every update's invalidation durable) opens and is raised to 3, so that
 * an older module stops at the version once the index may hold what it
 * cannot read. A version 1 image holding an array above leaf_max is
 * damaged; an unknown version is refused.
 */
static void pfart_format_version(void)
{
	static const u32 vers[] = {
		PFART_FORMAT_V1, PFART_FORMAT_V1, PFART_FORMAT_VERSION + 1,
		PFART_FORMAT_V2,
	};
	unsigned int round;

	for (round = 0; round < ARRAY_SIZE(vers); round++) {
		void *img = ut_img_alloc(SZ);
		struct pmidx_pool *pool = ut_pool_new(img, SZ);
		struct pmidx_index *idx = create(pool, "t");
		u64 i, n = round % 2 ? 300 : 40;
		bool refused = round == 1 || round == 2;
		const char *why = NULL;
		struct pfart_root *r;

		dense_stride = 1;
		for (i = 0; i < n; i++)
			UT_EQ(put(idx, i, i), 0);
		dense_stride = 0;
		UT_EQ(!!psum(idx).dense_builds, n == 300);
		r = ((struct pfart *)idx->priv)->root;
		UT_EQ(le32_to_cpu(r->version), PFART_FORMAT_VERSION);
		r->version = cpu_to_le32(vers[round]);
		pmidx_pool_close(pool);
		pool = pmidx_pool_open(img, SZ, false, &why);
		if (refused) {
			UT_EQ(PTR_ERR(pool), -EUCLEAN);
			ut_img_free(img, SZ);
			continue;
		}
		UT_ASSERT(!IS_ERR(pool));
		idx = pmidx_index_lookup(pool, "t");
		UT_ASSERT(idx && idx->opened);
		r = ((struct pfart *)idx->priv)->root;
		UT_EQ(le32_to_cpu(r->version), PFART_FORMAT_VERSION);
		dense_stride = 1;
		for (i = 0; i < n; i++)
			UT_EQ(get_is(idx, i, i, gbuf, vbuf), 0);
		for (; i < 300; i++)	/* and now arrays above leaf_max */
			UT_EQ(put(idx, i, i), 0);
		dense_stride = 0;
		UT_ASSERT(n == 300 || psum(idx).dense_builds > 0);
		pmidx_pool_close(pool);
		ut_img_free(img, SZ);
	}
}

/*
 * An update leaves the old record's invalidation in the cache: after a
 * crash, or a clean detach, it may still read valid on media. Here the
 * key is updated, then left, deleted, or deleted and put again, and the
 * old record's valid bit set again by hand; every attach, clean or
 * crash, must answer as the key's last record says, clear the stale bit,
 * and free what only it named. Dense keys: one leaf array holds them all,
 * so the delete prunes nothing and every record stays where it was.
 */
enum { SUP_KEEP, SUP_DELETE, SUP_REINSERT, SUP_CASES };

/*
 * Offsets of the records of key @n whose hdr is @h, in image order
 * (found by the key's last byte: most of the image is zeros).
 */
static u32 find_records(const u8 *img, u64 n, u16 h, u64 *at, u32 max)
{
	__le16 hl = cpu_to_le16(h);
	const u8 *p, *end = img + SZ;
	u32 kl, found = 0;
	u8 k[256];

	kl = key_of(n, k);
	for (p = img + 2 + kl - 1; (p = memchr(p, k[kl - 1], end - p)); p++) {
		const u8 *rec = p + 1 - kl - 2;

		if (memcmp(rec, &hl, 2) || memcmp(rec + 2, k, kl))
			continue;
		if (found < max)
			at[found] = rec - img;
		found++;
	}
	return found;
}

/*
 * Attach @img again with a stale bit set: clean, or a crash image of the
 * attached *@pool (kept in *@live until sup_done()). Return: the index.
 */
static struct pmidx_index *sup_attach(void *img, struct pmidx_pool **pool,
				      struct pmidx_pool **live, void **crashed,
				      bool crash)
{
	if (!crash) {
		pmidx_pool_close(*pool);
		return reopen(img, pool, false, NULL);
	}
	*live = *pool;
	return reopen(img, pool, true, crashed);
}

/* The drop leaves no object; everything closed and freed. */
static void sup_done(struct pmidx_pool *pool, struct pmidx_pool *live,
		     void *img, void *crashed)
{
	const char *why = NULL;

	dense_stride = 0;
	UT_EQ(pmidx_index_drop(pool, "t", &why), 0);
	UT_EQ(ut_stat(pool, PMIDX_STAT_ALLOC_OBJECTS), 0);
	pmidx_pool_close(pool);
	if (crashed) {
		pmidx_pool_close(live);
		ut_img_free(crashed, SZ);
	}
	ut_img_free(img, SZ);
}

static void pfart_superseded(void)
{
	const u64 K = 100, KEYS = 200;	/* K: an 8-byte key */
	unsigned int run;

	/* each case, with inline values and blobs, clean and crash attach */
	for (run = 0; run < SUP_CASES * 4; run++) {
		unsigned int c = run / 4, blob = run / 2 % 2, crash = run % 2;
		void *img = ut_img_alloc(SZ), *crashed = NULL, *used = img;
		struct pmidx_pool *pool = ut_pool_new(img, SZ), *live = NULL;
		struct pmidx_index *idx = create(pool, "t");
		u64 v1 = blob ? 7 : 0, v2 = v1 + 10, v3 = v1 + 20, i, at[3];
		u64 keys = 0, want = c == SUP_DELETE ? KEYS - 1 : KEYS;
		u32 vf = blob ? PFART_VBLOB : 8, n;
		u16 h = 8 << PFART_R_KLEN_SHIFT | vf;
		const char *why = NULL;
		u8 *rec, k[256];

		dense_stride = 1;
		UT_EQ(key_of(K, k), 8);
		for (i = 0; i < KEYS; i++)
			UT_EQ(put(idx, i, i == K ? v1 : 10 * i), 0);
		UT_EQ(put(idx, K, v2), 0);
		if (c != SUP_KEEP)
			UT_EQ(del(idx, K), 0);
		if (c == SUP_REINSERT)
			UT_EQ(put(idx, K, v3), 0);
		/* the update's invalidation did not reach the media */
		n = find_records(img, K, h, at, ARRAY_SIZE(at));
		UT_EQ(n, c == SUP_KEEP ? 1 : 2);
		rec = (u8 *)img + at[0];
		rec[1] |= PFART_R_VALID >> 8;
		idx = sup_attach(img, &pool, &live, &crashed, crash);
		used = crash ? crashed : img;
		if (c == SUP_DELETE)
			UT_EQ(get_is(idx, K, v2, gbuf, vbuf), -ENOENT);
		else
			UT_EQ(get_is(idx, K, c == SUP_KEEP ? v2 : v3, gbuf, vbuf), 0);
		for (i = 0; i < KEYS; i++)
			UT_ASSERT(i == K || !get_is(idx, i, 10 * i, gbuf, vbuf));
		UT_ASSERT_MSG(!idx->ops->check(idx, &keys, &why), "check: %s", why);
		UT_EQ(keys, want);
		/* the stale bit is cleared on media */
		UT_EQ(find_records(used, K, h, at, ARRAY_SIZE(at)), n);
		sup_done(pool, live, img, crashed);
	}
}

/* the blob word of the record at @off of @img */
static u64 rec_blob(const void *img, u64 off, u32 klen)
{
	__le64 w;

	memcpy(&w, (const u8 *)img + off + 2 + klen, sizeof(w));
	return le64_to_cpu(w);
}

/*
 * Two superseded records of a key with blobs (two updates), both bits
 * set again, and both blobs reused by other keys before the attach: the
 * stale records name live blobs of other keys. Each attach must neither
 * claim them twice nor free them, whether the key was left or deleted.
 */
static void pfart_superseded_reused(void)
{
	const u64 K = 100, KEYS = 200, OTHER = 1ULL << 56, NO = 150;
	u16 h = 8 << PFART_R_KLEN_SHIFT | PFART_VBLOB;
	unsigned int run;

	for (run = 0; run < 4; run++) {
		bool crash = run % 2, deleted = run / 2;
		void *img = ut_img_alloc(SZ), *crashed = NULL;
		struct pmidx_pool *pool = ut_pool_new(img, SZ), *live = NULL;
		struct pmidx_index *idx = create(pool, "t");
		u64 i, at[3], b[2], keys = 0, round, other_v[150];
		const char *why = NULL;
		void *used = img;
		u32 n;

		/* the other keys first: their later puts change no array of K's */
		dense_stride = 1;
		for (i = 0; i < NO; i++)
			UT_EQ(put(idx, OTHER + i, 0), 0);
		for (i = 0; i < KEYS; i++)
			UT_EQ(put(idx, i, i == K ? 7 : 10 * i), 0);
		UT_EQ(put(idx, K, 17), 0);
		UT_EQ(put(idx, K, 27), 0);
		if (deleted)
			UT_EQ(del(idx, K), 0);
		n = find_records(img, K, h, at, ARRAY_SIZE(at));
		UT_EQ(n, deleted ? 3 : 2);
		b[0] = rec_blob(img, at[0], 8);
		b[1] = rec_blob(img, at[1], 8);
		/* other keys' 300-byte values until both blobs are theirs */
		pmidx_epoch_barrier(&pool->epoch);
		for (round = 0; round < 400; round++) {
			if (pmidx_alloc_valid(&pool->alloc, b[0], 8) &&
			    pmidx_alloc_valid(&pool->alloc, b[1], 8))
				break;
			for (i = 0; i < NO; i++) {
				other_v[i] = 7 + 10 * ((i + round) % 50);
				UT_EQ(put(idx, OTHER + i, other_v[i]), 0);
			}
			pmidx_epoch_barrier(&pool->epoch);
		}
		UT_ASSERT(round > 0 && round < 400);
		((u8 *)img)[at[0] + 1] |= PFART_R_VALID >> 8;
		((u8 *)img)[at[1] + 1] |= PFART_R_VALID >> 8;
		idx = sup_attach(img, &pool, &live, &crashed, crash);
		used = crash ? crashed : img;
		/* the bits set by hand were read, and cleared */
		UT_EQ(find_records(used, K, h, at, ARRAY_SIZE(at)), n);
		UT_EQ(get_is(idx, K, 27, gbuf, vbuf), deleted ? -ENOENT : 0);
		for (i = 0; i < NO; i++)
			UT_EQ(get_is(idx, OTHER + i, other_v[i], gbuf, vbuf), 0);
		UT_ASSERT_MSG(!idx->ops->check(idx, &keys, &why), "check: %s", why);
		UT_EQ(keys, NO + KEYS - deleted);
		sup_done(pool, live, img, crashed);
	}
}

/* keys of every length up to 255, and every byte value in one position */
static void pfart_key_shapes(void)
{
	void *img = ut_img_alloc(SZ);
	struct pmidx_pool *pool = ut_pool_new(img, SZ);
	struct pmidx_index *idx = create(pool, "t");
	u8 k[PMIDX_KEY_MAX], g[64];
	const char *why = NULL;
	u32 len, b, gl;
	bool bad = false;
	u64 keys;

	memset(k, 'a', sizeof(k));
	for (len = 1; len <= PMIDX_KEY_MAX; len++)	/* each a prefix of the next */
		UT_EQ(idx->ops->put(idx, k, len, (u8 *)&len, 4, 0), 0);
	for (b = 0; b < 256; b++) {
		k[10] = b;
		UT_EQ(idx->ops->put(idx, k, 11, (u8 *)&b, 4, PMIDX_PUT_INSERT),
		      b == 'a' ? -EEXIST : 0);
	}
	k[10] = 'a';
	for (len = 1; len <= PMIDX_KEY_MAX; len++) {
		gl = sizeof(g);
		UT_EQ(idx->ops->get(idx, k, len, g, &gl), 0);
		UT_EQ(gl, 4);
		UT_EQ(*(u32 *)g, len);
	}
	UT_ASSERT_MSG(!idx->ops->check(idx, &keys, &why), "check: %s", why);
	UT_EQ(keys, PMIDX_KEY_MAX + 255);
	UT_EQ(scan_all(idx, 7, &bad), keys);
	UT_ASSERT(!bad);
	pmidx_pool_close(pool);
	ut_img_free(img, SZ);
}

/* ---- the adaptive flush ------------------------------------------------------- */

static struct pmidx_pmem_stats pm_now(struct pmidx_pool *pool)
{
	struct pmidx_pmem_stats s;

	pmidx_pmem_sum_stats(&pool->pm, &s);
	return s;
}

/* an insert that was an append into its leaf array and nothing else */
static bool pure_append(const struct pfart_pcpu *a, const struct pfart_pcpu *b)
{
	return b->appends == a->appends + 1 && b->splits == a->splits &&
	       b->grows == a->grows && b->compacts == a->compacts &&
	       b->node_adds == a->node_adds && b->node_grows == a->node_grows &&
	       b->prefix_splits == a->prefix_splits &&
	       b->res_fills == a->res_fills && b->direct_allocs == a->direct_allocs;
}

struct fcount {
	u64	n, flushes, fences, skips, nofence;
};

/*
 * Inserts that are appends into their leaf array: under ADR every write
 * is flushed and fenced (body, then header: 2 fences) and no shortcut is
 * taken; under eADR a record of at most 256 bytes is left to the cache
 * (no flush, no fence) and a larger one (2 + 255 + 62 bytes) is written
 * back without a fence. An update that is an append costs the same: the
 * old record's invalidation is left to the cache.
 */
static void count_put(struct pmidx_pool *pool, struct pmidx_index *idx,
		      const u8 *k, u32 kl, const u8 *v, u32 vl, struct fcount *f)
{
	struct pmidx_pmem_stats a = pm_now(pool), b;
	struct pfart_pcpu s0 = psum(idx), s1;

	UT_EQ(idx->ops->put(idx, k, kl, v, vl, 0), 0);
	b = pm_now(pool);
	s1 = psum(idx);
	if (!pure_append(&s0, &s1))
		return;
	f->n++;
	f->flushes += b.flushes - a.flushes;
	f->fences += b.fences - a.fences;
	f->skips += s1.eadr_skips - s0.eadr_skips;
	f->nofence += s1.nofence_wbs - s0.nofence_wbs;
}

static void pfart_flushes(void)
{
	static const char *const what[] = {
		"17-byte insert", "320-byte insert", "17-byte update",
	};
	int eadr;

	for (eadr = 0; eadr < 2; eadr++) {
		void *img = ut_img_alloc(SZ);
		struct pmidx_pool *pool = ut_pool_new(img, SZ);
		struct fcount fc[3] = {};	/* as what[] */
		struct pmidx_index *idx;
		const char *why = NULL;
		u8 k[256], v[64];
		u64 i;

		pmidx_pool_close(pool);
		pool = pmidx_pool_open(img, SZ, eadr, &why);
		UT_ASSERT(!IS_ERR(pool));
		idx = create(pool, "t");
		memset(v, 7, sizeof(v));
		memset(k, 'x', sizeof(k));
		for (i = 0; i < 1200; i++) {
			bool big = i % 10 == 9, update = i >= 600;
			u32 kl = big ? 255 : 5;

			if (update && big)
				continue;
			v[0] = update;
			snprintf((char *)k + kl - 5, 6, "%05u", (unsigned int)i % 600);
			count_put(pool, idx, k, kl, v, big ? 62 : 8,
				  &fc[update ? 2 : big]);
		}
		for (i = 0; i < ARRAY_SIZE(fc); i++)
			ut_note("pfart %s: %s (%llu appends): %.2f flushes, %.2f fences, %.2f left to the cache, %.2f written back without fence",
				eadr ? "eADR" : "ADR", what[i],
				(unsigned long long)fc[i].n,
				(double)fc[i].flushes / fc[i].n,
				(double)fc[i].fences / fc[i].n,
				(double)fc[i].skips / fc[i].n,
				(double)fc[i].nofence / fc[i].n);
		UT_ASSERT(fc[0].n > 300 && fc[1].n > 10 && fc[2].n > 300);
		if (!eadr) {
			for (i = 0; i < ARRAY_SIZE(fc); i++) {
				UT_EQ(fc[i].fences, 2 * fc[i].n);
				UT_EQ(fc[i].skips + fc[i].nofence, 0);
			}
			UT_ASSERT(fc[0].flushes >= 2 * fc[0].n);
			UT_ASSERT(fc[1].flushes >= 6 * fc[1].n);
			UT_ASSERT(fc[2].flushes >= 2 * fc[2].n &&
				  fc[2].flushes <= 3 * fc[2].n);
		} else {
			UT_EQ(fc[0].fences + fc[1].fences + fc[2].fences, 0);
			UT_EQ(fc[0].flushes + fc[2].flushes, 0);
			UT_EQ(fc[0].skips, 2 * fc[0].n);
			UT_EQ(fc[2].skips, 2 * fc[2].n);
			UT_EQ(fc[1].nofence, fc[1].n);	/* the body; the header is left */
			UT_ASSERT(fc[1].flushes >= 5 * fc[1].n);
		}
		pmidx_pool_close(pool);
		ut_img_free(img, SZ);
	}
}

/*
 * An insert or update that fits its leaf array allocates nothing (the
 * allocator's live objects do not move once the epochs are drained);
 * SMOs take their arrays from the reserves, refilled in bulk.
 */
static void pfart_bulk_alloc(void)
{
	void *img = ut_img_alloc(SZ);
	struct pmidx_pool *pool = ut_pool_new(img, SZ);
	struct pmidx_index *idx = create(pool, "t");
	struct pfart_pcpu s0, s1;
	u64 i, objs, checked = 0;
	u8 k[8], v[8] = { 1 };

	for (i = 0; i < 8000; i++) {
		u64 be = cpu_to_be64((i % 4000) * 0x9e3779b97f4a7c15ULL);

		memcpy(k, &be, 8);
		pmidx_epoch_barrier(&pool->epoch);
		objs = ut_stat(pool, PMIDX_STAT_ALLOC_OBJECTS);
		s0 = psum(idx);
		UT_EQ(idx->ops->put(idx, k, 8, v, 8, 0), 0);
		s1 = psum(idx);
		if (!pure_append(&s0, &s1))
			continue;
		UT_EQ(ut_stat(pool, PMIDX_STAT_ALLOC_OBJECTS), objs);
		checked++;
	}
	ut_note("pfart: %llu appends allocated nothing; %llu arrays from the reserves, %llu allocated in an SMO, %llu refills",
		(unsigned long long)checked, (unsigned long long)s1.res_takes,
		(unsigned long long)s1.direct_allocs,
		(unsigned long long)s1.res_fills);
	UT_ASSERT(checked > 6000);
	UT_ASSERT(s1.res_takes > 2 * s1.direct_allocs);
	pmidx_pool_close(pool);
	ut_img_free(img, SZ);
}

/* ---- generations ---------------------------------------------------------------- */

/*
 * A crash while a leaf array and an inner node were locked: the words
 * stay locked in the image; the next attach raises the generation above
 * them, and puts, gets and deletes go through them.
 */
static void pfart_generation(void)
{
	void *img = ut_img_alloc(SZ), *crashed;
	struct pmidx_pool *pool = ut_pool_new(img, SZ), *rp;
	struct pmidx_index *idx = create(pool, "t"), *ri;
	struct pfart_leaf *l;
	struct pfart *t;
	u32 gen0;
	u64 i, ver;
	u8 k[256];

	pfart_leaf_bytes = 512;
	for (i = 0; i < 500; i++)
		UT_EQ(put(idx, i, i), 0);
	t = idx->priv;
	gen0 = t->gen;
	pmidx_epoch_enter(&pool->epoch);
	UT_EQ(pfart_find_leaf(t, k, key_of(7, k), &l, &ver), 0);
	UT_ASSERT(pfart_lock_at(t, pfart_lk(l), ver));
	pmidx_epoch_exit(&pool->epoch);
	pfart_lock(t, pfart_lk(pfart_ptr(t, le64_to_cpu(t->root->top))));
	crashed = ut_img_dup(img, SZ);
	pfart_unlock(t, pfart_lk(pfart_ptr(t, le64_to_cpu(t->root->top))));
	pfart_unlock(t, pfart_lk(l));
	rp = ut_pool_open(crashed, SZ);
	ri = pmidx_index_lookup(rp, "t");
	UT_ASSERT(ri && ri->opened);
	t = ri->priv;
	UT_ASSERT(t->gen > gen0);
	UT_EQ(get_is(ri, 7, 7, gbuf, vbuf), 0);
	UT_EQ(put(ri, 7, 8), 0);
	UT_EQ(del(ri, 2), 0);
	for (i = 500; i < 1500; i++)	/* SMOs lock the top node */
		UT_EQ(put(ri, i, i), 0);
	UT_EQ(get_is(ri, 7, 8, gbuf, vbuf), 0);
	pmidx_pool_close(rp);
	ut_img_free(crashed, SZ);
	pmidx_pool_close(pool);
	pfart_leaf_bytes = PFART_LEAF_MAX;
	ut_img_free(img, SZ);
}

/* ---- threads ---------------------------------------------------------------------- */

#define TKEYS	4000

struct targ {
	struct pmidx_index	*idx;
	int			id;
	_Atomic int		*stop;
	unsigned long		errors, checks;
};

static void *writer(void *p)
{
	struct targ *a = p;
	struct rnd_state rs;
	u8 k[256], v[128];
	int i, ret;

	prandom_seed_state(&rs, ut_seed + a->id);
	for (i = 0; i < 20000; i++) {
		u64 n = prandom_u32_state(&rs) % TKEYS;
		u32 kl = key_of(n, k), vl = prandom_u32_state(&rs) % 100;
		bool d = prandom_u32_state(&rs) % 3 == 0;

		memset(v, (int)n, vl);
		ret = d ? a->idx->ops->del(a->idx, k, kl, 0) :
			  a->idx->ops->put(a->idx, k, kl, v, vl, 0);
		a->errors += ret && !(d && ret == -ENOENT);
	}
	return NULL;
}

/* a value, when there, is the key's byte repeated */
static void *reader(void *p)
{
	struct targ *a = p;
	struct rnd_state rs;
	u8 k[256], g[256];
	u32 j;

	prandom_seed_state(&rs, ut_seed + a->id);
	while (!*a->stop) {
		u64 n = prandom_u32_state(&rs) % TKEYS;
		u32 kl = key_of(n, k), gl = sizeof(g);
		int ret = a->idx->ops->get(a->idx, k, kl, g, &gl);

		if (ret && ret != -ENOENT) {
			a->errors++;
			continue;
		}
		for (j = 0; !ret && j < gl; j++)
			a->errors += g[j] != (u8)n;
	}
	return NULL;
}

static void *scanner(void *p)
{
	struct targ *a = p;
	bool bad = false;

	while (!*a->stop) {
		scan_all(a->idx, 23, &bad);
		a->errors += bad;
	}
	return NULL;
}

static void *checker(void *p)
{
	struct targ *a = p;

	while (!*a->stop) {
		const char *why = NULL;
		u64 keys;
		int ret = a->idx->ops->check(a->idx, &keys, &why);

		a->errors += ret && ret != -EAGAIN;
		a->checks++;
		if (ret && ret != -EAGAIN)
			fprintf(stderr, "# check: %d %s\n", ret, why);
	}
	return NULL;
}

#define NTH	8

static void pfart_threads(void)
{
	void *img = ut_img_alloc(SZ);
	struct pmidx_pool *pool = ut_pool_new(img, SZ);
	struct targ args[NTH];
	pthread_t th[NTH];
	_Atomic int stop = 0;
	struct pmidx_index *idx;
	const char *why = NULL;
	bool bad = false;
	struct pfart_pcpu s;
	u64 n, keys;
	int i;

	pfart_leaf_bytes = 512;
	idx = create(pool, "t");
	for (n = 0; n < TKEYS; n += 2) {
		u8 k[256], v[8];
		u32 kl = key_of(n, k);

		memset(v, (int)n, sizeof(v));
		UT_EQ(idx->ops->put(idx, k, kl, v, 8, 0), 0);
	}
	/* 0-3 writers, 4-5 readers, 6 scanner, 7 checker */
	for (i = 0; i < NTH; i++) {
		args[i] = (struct targ){ .idx = idx, .id = i, .stop = &stop };
		UT_EQ(pthread_create(&th[i], NULL,
				     i < 4 ? writer : i < 6 ? reader :
				     i < 7 ? scanner : checker, &args[i]), 0);
	}
	for (i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	stop = 1;
	for (i = 4; i < NTH; i++)
		pthread_join(th[i], NULL);
	for (i = 0; i < NTH; i++)
		UT_ASSERT_MSG(!args[i].errors, "thread %d: %lu errors", i,
			      args[i].errors);
	s = psum(idx);
	ut_note("pfart: %llu restarts, %llu splits, %llu collapses, %lu checks under 4 writers",
		(unsigned long long)s.restarts, (unsigned long long)s.splits,
		(unsigned long long)s.collapses, args[7].checks);
	UT_ASSERT(args[7].checks >= 2);
	UT_ASSERT_MSG(!idx->ops->check(idx, &keys, &why), "check: %s", why);
	UT_EQ(scan_all(idx, 0, &bad), keys);
	UT_ASSERT(!bad);
	pmidx_pool_close(pool);
	ut_img_free(img, SZ);
	pfart_leaf_bytes = PFART_LEAF_MAX;
}

/* ---- damaged images -------------------------------------------------------------- */

/* A clean image with keys 0..299, and where its top node is. */
static void *damaged_base(u64 *top)
{
	void *img = ut_img_alloc(SZ);
	struct pmidx_pool *pool = ut_pool_new(img, SZ);
	struct pmidx_index *idx = create(pool, "t");
	u64 i;

	pfart_leaf_bytes = 512;
	for (i = 0; i < 300; i++)
		UT_EQ(put(idx, i, i), 0);
	*top = le64_to_cpu(((struct pfart *)idx->priv)->root->top);
	pmidx_pool_close(pool);
	pfart_leaf_bytes = PFART_LEAF_MAX;
	return img;
}

/* the attach refuses the index, or CHECK fails; nothing hangs or crashes */
static void expect_caught(void *img, const char *what)
{
	struct pmidx_pool *pool;
	struct pmidx_index *idx;
	const char *why = NULL;
	u64 keys;

	pool = pmidx_pool_open(img, SZ, false, &why);
	if (IS_ERR(pool))
		return;
	idx = pmidx_index_lookup(pool, "t");
	if (idx && idx->opened)
		UT_ASSERT_MSG(idx->ops->check(idx, &keys, &why), "%s: not caught",
			      what);
	pmidx_pool_close(pool);
}

static void pfart_damaged(void)
{
	u64 top, i;
	void *base = damaged_base(&top), *img;
	struct pfart_inner *n;
	struct pfart_n48 *n48;

	/* the top node's check word */
	img = ut_img_dup(base, SZ);
	n = (struct pfart_inner *)((u8 *)img + top);
	n->check ^= cpu_to_le32(1);
	expect_caught(img, "check word");
	ut_img_free(img, SZ);
	/* a child word naming the node itself (a cycle) */
	img = ut_img_dup(base, SZ);
	n = (struct pfart_inner *)((u8 *)img + top);
	UT_ASSERT(n->type == PFART_N48 || n->type == PFART_N256 ||
		  n->type == PFART_N16);
	if (n->type == PFART_N256)
		((struct pfart_n256 *)n)->child[0x75] = cpu_to_le64(top);
	else if (n->type == PFART_N48)
		((struct pfart_n48 *)n)->child[0] = cpu_to_le64(top);
	else
		((struct pfart_n16 *)n)->child[0] = cpu_to_le64(top);
	expect_caught(img, "cycle");
	ut_img_free(img, SZ);
	/* a record header running past its leaf array */
	img = ut_img_dup(base, SZ);
	n = (struct pfart_inner *)((u8 *)img + top);
	for (i = 0; i < 256; i++) {
		u64 c = 0;

		if (n->type == PFART_N256)
			c = le64_to_cpu(((struct pfart_n256 *)n)->child[i]);
		else if (n->type == PFART_N48 && i < 48)
			c = le64_to_cpu(((struct pfart_n48 *)n)->child[i]);
		if (c && ((u8 *)img)[c] == PFART_LEAF) {
			struct pfart_leaf *l = (struct pfart_leaf *)((u8 *)img + c);

			*(__le16 *)l->data = cpu_to_le16(PFART_R_VALID |
							 255 << PFART_R_KLEN_SHIFT | 62);
			*(__le16 *)(l->data + 320) = cpu_to_le16(PFART_R_VALID |
								 255 << PFART_R_KLEN_SHIFT | 62);
			break;
		}
	}
	expect_caught(img, "record beyond its leaf array");
	ut_img_free(img, SZ);
	/* an N48 slot no index byte names (an add cut short): cleared */
	img = ut_img_dup(base, SZ);
	n48 = (struct pfart_n48 *)((u8 *)img + top);
	if (n48->h.type == PFART_N48) {
		struct pmidx_pool *pool;
		struct pmidx_index *idx;
		const char *why = NULL;
		u64 keys;

		for (i = 0; i < 48 && n48->child[i]; i++)
			;
		UT_ASSERT(i < 48);
		n48->child[i] = n48->child[0];	/* named by no index byte */
		pool = ut_pool_open(img, SZ);
		idx = pmidx_index_lookup(pool, "t");
		UT_ASSERT(idx && idx->opened);
		UT_EQ(n48->child[i], 0);
		UT_ASSERT_MSG(!idx->ops->check(idx, &keys, &why), "check: %s", why);
		UT_EQ(keys, 300);
		pmidx_pool_close(pool);
	}
	ut_img_free(img, SZ);
	ut_img_free(base, SZ);
}

/* ---- the crash simulator ------------------------------------------------------------ */

#define CKEYS	160

struct wl_arg {
	u64			seed;
	unsigned int		ops;
	bool			eadr;	/* the engine's mode (the pool's attach) */
	bool			adr_setup; /* format and create as ADR */
	struct pfart_pcpu	s;	/* counters at the end, both halves */
};

static void pcpu_add(struct pfart_pcpu *a, const struct pfart_pcpu *b)
{
	u64 *d = (u64 *)a;
	const u64 *s = (const u64 *)b;
	size_t i;

	for (i = 0; i < sizeof(*a) / sizeof(u64); i++)
		d[i] += s[i];
}

static int wl_pfart(struct crashsim *cs, void *img, u64 size, void *arg)
{
	struct wl_arg *a = arg;
	struct pmidx_pool *pool;
	struct pmidx_index *idx;
	const char *why = NULL;
	struct pfart_pcpu s;
	struct rnd_state rs;
	unsigned int op, i;
	u64 sweep = 0;
	u8 k[256];
	int ret;

	memset(&a->s, 0, sizeof(a->s));
	prandom_seed_state(&rs, a->seed);
	if (pmidx_pool_format(img, size, true, &why))
		return -EIO;
	pool = pmidx_pool_open(img, size, a->eadr && !a->adr_setup, &why);
	if (IS_ERR(pool))
		return PTR_ERR(pool);
	op = crashsim_op_begin(cs, CRASHSIM_OP_NOTE, "create", NULL, 0, 0);
	if (pmidx_index_create(pool, "kv", PMIDX_ENGINE_PFART, &idx, &why))
		return -EIO;
	crashsim_op_ack(cs, op);
	if (a->adr_setup) {
		pmidx_pool_close(pool);
		pool = pmidx_pool_open(img, size, a->eadr, &why);
		if (IS_ERR(pool))
			return PTR_ERR(pool);
		idx = pmidx_index_lookup(pool, "kv");
		if (!idx || !idx->opened)
			return -EIO;
	}
	for (i = 0; i < a->ops; i++) {
		/*
		 * Inserts and updates first (splits, grows, blobs replaced),
		 * then mostly deletes sweeping the keys in order (prunes,
		 * collapses), then inserts again into the freed objects.
		 */
		unsigned int third = i * 3 / a->ops;
		bool d = prandom_u32_state(&rs) % 8 < (third == 1 ? 6 : 1);
		u64 n = prandom_u32_state(&rs) % CKEYS;
		u64 v = prandom_u32_state(&rs) % 1000;
		u32 kl;

		if (d && third == 1)
			n = sweep++ % CKEYS;
		kl = key_of(n, k);
		op = crashsim_op_begin(cs, d ? CRASHSIM_OP_DEL : CRASHSIM_OP_PUT,
				       "kv", k, kl, v);
		ret = d ? del(idx, n) : put(idx, n, v);
		if (ret && !(d && ret == -ENOENT))
			return ret;
		crashsim_op_ack(cs, op);
		if (i == a->ops / 4) {		/* detach and attach */
			s = psum(idx);
			pcpu_add(&a->s, &s);
			pmidx_pool_close(pool);
			pool = pmidx_pool_open(img, size, a->eadr, &why);
			if (IS_ERR(pool))
				return PTR_ERR(pool);
			idx = pmidx_index_lookup(pool, "kv");
			if (!idx || !idx->opened)
				return -EIO;
		}
	}
	s = psum(idx);
	pcpu_add(&a->s, &s);
	pmidx_pool_close(pool);
	return 0;
}

static int check_image(struct crashsim *cs, const struct crashsim_point *pt,
		       struct pmidx_pool *pool, int err, const char *why, void *arg)
{
	struct pmidx_index *idx;
	struct crashsim_expect e;
	u64 n, keys, live = 0;
	bool bad = false;

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
		u32 kl = key_of(n, k), gl = sizeof(cgbuf);
		int ret = idx->ops->get(idx, k, kl, cgbuf, &gl);
		unsigned int x;
		u64 v = 0;

		if (ret && ret != -ENOENT) {
			crashsim_fail(cs, "key %llu: get %d", (unsigned long long)n, ret);
			continue;
		}
		crashsim_expect(cs, k, kl, &e);
		for (x = 0; !ret && x < e.n; x++) {
			u32 vl = val_of(e.value[x], cvbuf);

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
	if (scan_all(idx, 0, &bad) != live || bad)
		crashsim_fail(cs, "scan disagrees with get");
	/* writes after recovery: the rebuilt metadata holds */
	for (n = 0; (pool->flags & PMIDX_POOL_F_RECOVERED) && n < CKEYS; n += 5) {
		u8 k[256];
		u32 kl = key_of(n, k), gl = sizeof(cgbuf);

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

static void run(const char *name, unsigned int ops, bool eadr_engine,
		bool eadr_model, unsigned int max_samples,
		struct crashsim_result *res, struct wl_arg *arg)
{
	struct crashsim_workload wl = {
		.name = name, .run = wl_pfart, .check = check_image, .arg = arg,
	};
	struct crashsim_config cfg = {
		.pool_size = 32ULL << 20, .seed = ut_seed, .eadr = eadr_model,
		.variants = 2, .samples = min(samples, max_samples),
		.exhaustive_max = min(samples, max_samples), .only_point = -1,
		.only_variant = -1, .save_dir = getenv("PMIDX_CRASH_SAVE"),
		.prefix = crashsim_prefix_default(), .max_failures = 3,
	};
	const char *e;

	arg->seed = ut_seed;
	arg->ops = ops;
	arg->eadr = eadr_engine;
	/* the eADR engine under the ADR model: the core's part flushed */
	arg->adr_setup = eadr_engine && !eadr_model;
	e = getenv("PMIDX_CRASH_POINT");
	if (e)
		cfg.only_point = strtol(e, NULL, 0);
	e = getenv("PMIDX_CRASH_VARIANT");
	if (e)
		cfg.only_variant = strtol(e, NULL, 0);
	pfart_leaf_bytes = 512;
	UT_EQ(crashsim_run(&cfg, &wl, res), 0);
	pfart_leaf_bytes = PFART_LEAF_MAX;
	crashsim_print_result(name, &cfg, res);
	printf("# %s: %llu appends, %llu splits, %llu grows, %llu arrays above leaf_max, %llu compacts, node adds/grows/shrinks %llu/%llu/%llu, %llu prefix splits, %llu prunes, %llu collapses\n",
	       name, (unsigned long long)arg->s.appends,
	       (unsigned long long)arg->s.splits, (unsigned long long)arg->s.grows,
	       (unsigned long long)arg->s.dense_builds,
	       (unsigned long long)arg->s.compacts,
	       (unsigned long long)arg->s.node_adds,
	       (unsigned long long)arg->s.node_grows,
	       (unsigned long long)arg->s.node_shrinks,
	       (unsigned long long)arg->s.prefix_splits,
	       (unsigned long long)arg->s.prunes,
	       (unsigned long long)arg->s.collapses);
	UT_ASSERT(res->points > 0 && res->images >= res->points);
}

/* every structure change, and objects freed and reused, at every point */
static void check_run(const struct crashsim_result *res, const struct wl_arg *a,
		      bool eadr)
{
	UT_ASSERT_MSG(!res->failures, "%llu failing crash images",
		      (unsigned long long)res->failures);
	if (getenv("PMIDX_CRASH_POINT"))
		return;
	UT_ASSERT(a->s.splits && a->s.grows && a->s.compacts);
	UT_ASSERT(a->s.node_adds && a->s.prefix_splits);
	UT_ASSERT(a->s.prunes && (a->s.collapses || a->s.node_shrinks));
	/* under ADR the eADR shortcuts are never taken */
	if (!eadr)
		UT_EQ(a->s.eadr_skips + a->s.nofence_wbs, 0);
	else
		UT_ASSERT(a->s.eadr_skips > 0);
}

static void pfart_crash_adr(void)
{
	struct crashsim_result res;
	struct wl_arg arg;

	run("pfart_crash_adr", 900, false, false, 100000, &res, &arg);
	check_run(&res, &arg, false);
}

/*
 * Dense keys (key n is n * 3, so two values of the next-to-last byte):
 * arrays above leaf_max grown, compacted, split from, shrunk by deletes
 * and reused, at every crash point.
 */
static void crash_dense(const char *name, bool eadr)
{
	struct crashsim_result res;
	struct wl_arg arg;

	dense_stride = 3;
	run(name, 900, eadr, eadr, 100000, &res, &arg);
	dense_stride = 0;
	UT_ASSERT_MSG(!res.failures, "%llu failing crash images",
		      (unsigned long long)res.failures);
	if (getenv("PMIDX_CRASH_POINT"))
		return;
	UT_ASSERT(arg.s.dense_builds && arg.s.grows && arg.s.compacts);
	UT_ASSERT(arg.s.splits && arg.s.leaf_shrinks);
	if (!eadr)
		UT_EQ(arg.s.eadr_skips + arg.s.nofence_wbs, 0);
}

static void pfart_crash_dense_adr(void)
{
	crash_dense("pfart_crash_dense_adr", false);
}

static void pfart_crash_dense_eadr(void)
{
	crash_dense("pfart_crash_dense_eadr", true);
}

static void pfart_crash_eadr(void)
{
	struct crashsim_result res;
	struct wl_arg arg;

	run("pfart_crash_eadr", 900, true, true, 100000, &res, &arg);
	check_run(&res, &arg, true);
}

/*
 * The engine in eADR mode leaves small writes in the cache: under the
 * ADR model some acknowledged put must be lost. This is what would
 * happen if a shortcut were taken under ADR, and the ADR runs above show
 * it never is.
 */
static void pfart_crash_eadr_under_adr(void)
{
	struct crashsim_result res;
	struct wl_arg arg;

	ut_note("the ADR model must fail the eADR engine (FAIL lines expected):");
	run("pfart_eadr_engine_adr_model", 60, true, false, 200, &res, &arg);
	UT_ASSERT_MSG(res.failures > 0,
		      "the ADR model missed puts the eADR engine left in the cache");
	UT_ASSERT(arg.s.eadr_skips > 0);
}

static const struct ut_test tests[] = {
	UT_TEST(pfart_structure),
	UT_TEST(pfart_key_shapes),
	UT_TEST(pfart_dense),
	UT_TEST(pfart_format_version),
	UT_TEST(pfart_superseded),
	UT_TEST(pfart_superseded_reused),
	UT_TEST(pfart_flushes),
	UT_TEST(pfart_bulk_alloc),
	UT_TEST(pfart_generation),
	UT_TEST(pfart_threads),
	UT_TEST(pfart_damaged),
	UT_TEST(pfart_crash_adr),
	UT_TEST(pfart_crash_eadr),
	UT_TEST(pfart_crash_dense_adr),
	UT_TEST(pfart_crash_dense_eadr),
	UT_TEST(pfart_crash_eadr_under_adr),
};

int main(int argc, char **argv)
{
	const char *e = getenv("PMIDX_CRASH_SAMPLES");

	if (e)
		samples = strtoul(e, NULL, 0);
	if (crashsim_parse_model(&argc, argv))
		return 2;
	return ut_main(argc, argv, "pfart-crash", tests, ARRAY_SIZE(tests));
}
