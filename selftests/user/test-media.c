// SPDX-License-Identifier: GPL-2.0
/*
 * Media errors on the data path (issue 11): every engine reads values and
 * keys out of pmem with a machine-check-safe copy, so a poisoned line
 * answers -EIO for the record that holds it and nothing else.
 *
 * For each engine and each case: an index of NKEYS keys, the line of one
 * record's value (or key) found in the image by its unique bytes and
 * poisoned (<shim/pmem.h>: copy_mc_to_kernel() stops there). Trapped
 * cases also make every other access to the poisoned page fault, as a
 * load of poison machine-checks: the test only survives them if the
 * engine never reads that page in place. Then:
 *  - get of that key: -EIO; get of every other key: its value;
 *  - a scan over it: the records before it, then -EIO; scans that do not
 *    cover it: complete;
 *  - the pool's media error count went up;
 *  - an overwrite (or delete and put) of the key works and the new value
 *    reads back; a full scan is complete again; with the poison cleared
 *    the structural check passes.
 * Where the record lies: most engines hold a value's (or a long key's)
 * bytes once in the image, found by its unique bytes. lodge also keeps
 * them in log records (the buffered write's, and stale copies in freed
 * logs), so for lodge the copy the engine reads is found through its
 * last-level node: the buffered write's record, else the leaf slot's
 * blob. pfart keeps keys inline in its leaf arrays, whose rewrites leave
 * stale copies in freed arrays: the victim's long key is found through
 * its live leaf array. lodge's "log record" cases rewrite the victim (same value) so
 * that its live copy is the record in the log, read by get and scan out
 * of the log: the record's value line is poisoned (records share their
 * log's pages: not trapped).
 * Runs plain and under ASan (the engines suite).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <shim/pmem.h>
#include <shim/shim.h>
#include "core/blob.h"
#include "core/engine.h"
#include "harness.h"
#include "engines/lodge/lodge.h"
#include "engines/pfart/pfart.h"

#define SZ		(64ULL << 20)
#define NKEYS		120
#define VICTIM		57

struct mcase {
	const char	*name;
	u32		vlen;		/* value bytes */
	int		off;		/* poisoned byte, from the blob's data */
	bool		trap;		/* other accesses to the page fault */
	bool		key;		/* poison the victim's (long) key instead */
	bool		relog;		/* lodge: the live copy is a log record */
	bool		inline_val;	/* pfart: a value inline in a leaf array */
};

static const struct mcase cases[] = {
	/* a 4000-byte value is a 4 KiB object: its page holds nothing else */
	{ "blob header line (trapped)", 4000, -8, true, false },
	{ "value data line (trapped)", 4000, 2100, true, false },
	{ "last value line (trapped)", 4000, 3999, true, false },
	/* 256-byte objects share the page: poison only */
	{ "small value (header line)", 100, 0, false, false },
	{ "out-of-line key", 100, 3, false, true },
	{ "value in a log record", 4000, 2100, false, false, true },
	{ "small value in a log record", 100, 0, false, false, true },
	{ "last line of a log record", 4000, 3999, false, false, true },
	{ "value inline in a leaf array", 40, 20, false, false, false, true },
};

/* key i: 8 bytes big-endian; the victim of a key case: 24 bytes */
static u32 make_key(u32 i, bool long_key, u8 *k)
{
	u64 be = cpu_to_be64(i);

	memcpy(k, &be, 8);
	if (!long_key)
		return 8;
	memcpy(k + 8, "key-tail-media!", 16);
	return 24;
}

/* value of key i, generation g: 16 unique bytes, then a pattern */
static void make_val(u32 i, u32 g, u32 len, u8 *v)
{
	char head[17];
	u32 j;

	snprintf(head, sizeof(head), "val%05u/g%u/....", i, g);
	for (j = 0; j < len; j++)
		v[j] = j < 16 ? head[j] : (u8)(i * 31 + g * 7 + j);
}

struct ctx {
	const struct mcase	*c;
	struct pmidx_index	*idx;
};

static u32 key_of(const struct ctx *x, u32 i, u8 *k)
{
	return make_key(i, x->c->key && i == VICTIM, k);
}

static int get(const struct ctx *x, u32 i, u32 g)
{
	static u8 v[8192], want[8192];
	u8 k[32];
	u32 kl = key_of(x, i, k), vl = sizeof(v);
	int ret = x->idx->ops->get(x->idx, k, kl, v, &vl);

	if (ret)
		return ret;
	make_val(i, g, x->c->vlen, want);
	return vl == x->c->vlen && !memcmp(v, want, vl) ? 0 : -EBADMSG;
}

static int put(const struct ctx *x, u32 i, u32 g)
{
	u8 k[32], v[8192];
	u32 kl = key_of(x, i, k);

	make_val(i, g, x->c->vlen, v);
	return x->idx->ops->put(x->idx, k, kl, v, x->c->vlen, 0);
}

/* checks each record: keys in order from @first, values of generation @g */
struct sink {
	struct pmidx_scan_sink	sink;
	const struct ctx	*x;
	u32			next, n, g_victim;
	bool			bad;
};

static int emit(struct pmidx_scan_sink *s, const u8 *key, u32 klen,
		const u8 *val, u32 vlen)
{
	struct sink *c = container_of(s, struct sink, sink);
	u8 k[32], v[8192];
	u32 i = c->next, kl = key_of(c->x, i, k);

	make_val(i, i == VICTIM ? c->g_victim : 0, c->x->c->vlen, v);
	if (klen != kl || memcmp(key, k, kl) || vlen != c->x->c->vlen ||
	    memcmp(val, v, vlen))
		c->bad = true;
	c->next++;
	c->n++;
	return 0;
}

/* scan [from, to) (to == NKEYS: unbounded); *n: records delivered */
static int scan(const struct ctx *x, u32 from, bool after, u32 to, u32 gv,
		u32 *n)
{
	struct sink c = { .sink.emit = emit, .x = x,
			  .next = from + after, .g_victim = gv };
	u8 s[32], e[32];
	u32 sl = from || after ? key_of(x, from, s) : 0;
	u32 el = to < NKEYS ? key_of(x, to, e) : 0;
	int ret = x->idx->ops->scan(x->idx, s, sl, after, e, el, &c.sink);

	*n = c.n;
	UT_ASSERT_MSG(!c.bad, "%s: scan delivered a wrong record", x->c->name);
	return ret;
}

/* the one place in the image holding @len bytes at @p */
static u8 *find_once(void *img, const void *p, size_t len)
{
	u8 *at = memmem(img, SZ, p, len), *again;

	UT_ASSERT(at);
	again = memmem(at + 1, SZ - (at + 1 - (u8 *)img), p, len);
	UT_ASSERT_MSG(!again, "pattern found twice");
	return at;
}

/*
 * lodge: the bytes get and scan read for the victim (buffered record
 * first, else the leaf's blob); *in_log: the record. A long key is
 * compared in DRAM while buffered: its pmem copy is the leaf's blob.
 */
static u8 *lodge_locate(const struct ctx *x, bool *in_log)
{
	struct lodge *t = x->idx->priv;
	struct lodge_lin *n;
	struct lodge_leaf *l;
	u8 k[32];
	u32 kl = key_of(x, VICTIM, k), len;
	int j, s;

	n = lodge_find(t, k, kl);
	j = lodge_buf_find(n, k, kl);
	*in_log = j >= 0 && !x->c->key;
	if (*in_log)
		return pmidx_ptr(t->pm, n->slot[j].rec +
				 sizeof(struct lodge_rec) + kl);
	l = lodge_leaf_ptr(t, n->slot[lodge_lin_leaf(n, k, kl)].w);
	s = lodge_leaf_find(t, l, k, kl);
	UT_ASSERT_MSG(s >= 0, "lodge: the victim is in no leaf");
	if (x->c->key)
		return (u8 *)lodge_slot_key(t, l, s, &len);
	UT_ASSERT(le64_to_cpu(l->vind) & BIT_ULL(s));
	return (u8 *)pmidx_blob_data(x->idx->pool,
				     le64_to_cpu(l->slot[s].val), &len);
}

/*
 * pfart: the victim's key bytes in its live leaf array (inline keys), or
 * its value's (inline, or the blob's data)
 */
static u8 *pfart_locate(const struct ctx *x, bool key)
{
	struct pfart *t = x->idx->priv;
	struct pfart_leaf *l;
	struct pfart_meta *m;
	struct pfart_view v;
	u8 k[32];
	u32 kl = key_of(x, VICTIM, k);
	u64 ver;
	int e;

	pmidx_epoch_enter(&t->pool->epoch);
	UT_EQ(pfart_find_leaf(t, k, kl, &l, &ver), 0);
	m = pfart_meta_of(t, pfart_off(t, l));
	e = pfart_leaf_find(t, l, m, k, kl);
	UT_ASSERT(e >= 0);
	UT_EQ(pfart_leaf_view(l, m, pfart_leaf_size(l->klass), e, &v), 0);
	pmidx_epoch_exit(&t->pool->epoch);
	if (key)
		return (u8 *)v.key;
	if (v.vfield != PFART_VBLOB)
		return (u8 *)v.val;
	return (u8 *)pfart_ptr(t, pfart_view_blob(&v)) + sizeof(struct pmidx_blob);
}

/*
 * The records with bytes on the poisoned line, which get and scan copy
 * machine-check safe: their keys (a scan copies them) and values. Most
 * engines hold the victim's value or long key alone there; pfart packs
 * records in its leaf arrays, so its victim's line holds parts of its
 * neighbours too (README "Media errors").
 */
struct hits {
	bool	key[NKEYS];
	bool	val[NKEYS];
	bool	others;		/* pfart: other records in the line */
	u32	first, last;	/* the first and the last key id hit */
};

static bool on_line(const u8 *p, u32 len, const u8 *line)
{
	return len && p < line + 64 && p + len > line;
}

static void pfart_hits(const struct ctx *x, const u8 *poison, struct hits *h)
{
	const u8 *line = (const u8 *)((uintptr_t)poison & ~(uintptr_t)63);
	struct pfart *t = x->idx->priv;
	struct pfart_leaf *l;
	struct pfart_meta *m;
	struct pfart_view v;
	u32 i, kl;
	u64 ver;
	u8 k[32];
	int e;

	pmidx_epoch_enter(&t->pool->epoch);
	for (i = 0; i < NKEYS; i++) {
		kl = key_of(x, i, k);
		UT_EQ(pfart_find_leaf(t, k, kl, &l, &ver), 0);
		m = pfart_meta_of(t, pfart_off(t, l));
		e = pfart_leaf_find(t, l, m, k, kl);
		UT_ASSERT(e >= 0);
		UT_EQ(pfart_leaf_view(l, m, pfart_leaf_size(l->klass), e, &v), 0);
		/* hdr, key, inline value or blob word: a rewrite copies them */
		if (i != VICTIM &&
		    on_line(v.key - 2, pfart_r_size(v.klen, v.vfield), line))
			h->others = true;
		h->key[i] = on_line(v.key, v.klen, line);
		if (v.vfield == PFART_VBLOB)
			h->val[i] = on_line(pfart_ptr(t, pfart_view_blob(&v)),
					    sizeof(struct pmidx_blob) + x->c->vlen,
					    line);
		else
			h->val[i] = on_line(v.val, v.vfield, line);
	}
	pmidx_epoch_exit(&t->pool->epoch);
}

static void run_case(u32 e, const struct mcase *c)
{
	void *img = ut_img_alloc(SZ);
	struct pmidx_pool *pool = ut_pool_new(img, SZ);
	struct ctx x = { .c = c };
	const char *why = NULL;
	u64 errs, keys = 0;
	struct hits h = {};
	u8 pat[32], *data;
	u32 i, n;

	UT_ASSERT_MSG(!pmidx_index_create(pool, "m", e, &x.idx, &why),
		      "%s: create: %s", pmidx_engine_name(e), why);
	for (i = 0; i < NKEYS; i++)
		UT_EQ(put(&x, i, 0), 0);
	if (e == PMIDX_ENGINE_LODGE) {
		bool in_log;

		if (c->relog)
			UT_EQ(put(&x, VICTIM, 0), 0);
		data = lodge_locate(&x, &in_log);
		UT_EQ(in_log, c->relog);
	} else if (e == PMIDX_ENGINE_PFART) {
		data = pfart_locate(&x, c->key);
	} else if (c->key) {
		/* the victim's blob: found by its unique bytes */
		data = find_once(img, "key-tail-media!", 16) - 8;
	} else {
		make_val(VICTIM, 0, 16, pat);
		data = find_once(img, pat, 16);
	}
	if (c->trap)
		UT_EQ(shim_pmem_poison_trap(data + c->off, 1), 0);
	else
		UT_EQ(shim_pmem_poison(data + c->off, 1), 0);
	errs = pmidx_media_errors(&pool->pm);
	if (e == PMIDX_ENGINE_PFART) {
		pfart_hits(&x, data + c->off, &h);
	} else {
		h.key[VICTIM] = c->key;
		h.val[VICTIM] = !c->key;
	}
	for (h.first = 0; !h.key[h.first] && !h.val[h.first]; h.first++)
		UT_ASSERT(h.first < VICTIM);
	for (h.last = NKEYS - 1; !h.key[h.last] && !h.val[h.last]; h.last--)
		UT_ASSERT(h.last > VICTIM);
	UT_ASSERT(h.key[VICTIM] || h.val[VICTIM]);
	UT_ASSERT(h.first > 10 && h.last + 1 < NKEYS);

	/* keys are compared in place: see the READMEs */
	for (i = 0; i < NKEYS; i++)
		UT_EQ(get(&x, i, 0), h.val[i] ? -EIO : 0);
	UT_EQ(scan(&x, 0, false, NKEYS, 0, &n), -EIO);
	UT_EQ(n, h.first);
	UT_EQ(scan(&x, 10, false, NKEYS, 0, &n), -EIO);
	UT_EQ(n, h.first - 10);
	/* a scan must read the key it stops at: not a poisoned one */
	UT_EQ(scan(&x, 0, false, h.first - h.key[h.first], 0, &n), 0);
	UT_EQ(n, h.first - h.key[h.first]);
	UT_EQ(scan(&x, h.last, true, NKEYS, 0, &n), 0);
	UT_EQ(n, NKEYS - h.last - 1);
	UT_EQ(scan(&x, h.last + 1, false, NKEYS, 0, &n), 0);
	UT_EQ(n, NKEYS - h.last - 1);
	UT_ASSERT(pmidx_media_errors(&pool->pm) >= errs + (c->key ? 2 : 3));

	if (c->key) {
		/* a delete drops the key's blob; the put below makes another */
		u8 k[32];
		u32 kl = key_of(&x, VICTIM, k);

		UT_EQ(x.idx->ops->del(x.idx, k, kl, 0), 0);
		UT_EQ(get(&x, VICTIM, 0), -ENOENT);
	}
	if (h.others) {
		/*
		 * pfart: a put into an array a reader saw poison in rewrites
		 * it, copying every other live record: not while some of
		 * them are on the line. It changes nothing.
		 */
		UT_EQ(put(&x, VICTIM, 1), -EIO);
		if (!c->key)
			UT_EQ(get(&x, VICTIM, 0), -EIO);
		shim_pmem_clear_poison();
	}
	/* the value goes elsewhere; the poisoned blob is never read again */
	UT_EQ(put(&x, VICTIM, 1), 0);
	UT_EQ(get(&x, VICTIM, 1), 0);
	UT_EQ(scan(&x, 0, false, NKEYS, 1, &n), 0);
	UT_EQ(n, NKEYS);

	shim_pmem_clear_poison();
	UT_ASSERT_MSG(!x.idx->ops->check(x.idx, &keys, &why), "%s: check: %s",
		      c->name, why);
	UT_EQ(keys, NKEYS);
	pmidx_pool_close(pool);
	ut_img_free(img, SZ);
	ut_note("engine %s: %s: -EIO for keys %u..%u only (the line's)%s",
		pmidx_engine_name(e), c->name, h.first, h.last,
		h.others ? "; puts into its leaf array -EIO until cleared" : "");
}

static void media_errors_engines(void)
{
	unsigned int i;
	u32 e;

	for (e = 1; e < __PMIDX_ENGINE_MAX; e++) {
		if (!pmidx_engine_ops(e))
			continue;
		for (i = 0; i < ARRAY_SIZE(cases); i++) {
			if (cases[i].relog && e != PMIDX_ENGINE_LODGE)
				continue;
			if (cases[i].inline_val && e != PMIDX_ENGINE_PFART)
				continue;
			run_case(e, &cases[i]);
		}
	}
}

static const struct ut_test tests[] = {
	UT_TEST(media_errors_engines),
};

int main(int argc, char **argv)
{
	return ut_main(argc, argv, "media", tests, ARRAY_SIZE(tests));
}
