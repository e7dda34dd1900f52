// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libpmidx's embedded backend end to end: format a pool file with
 * pmidx-poolfile, create a utree and a ccl index through the core
 * (libpmidx has no create API), then put/get/del/scan/check through the
 * public libpmidx API on the FILE path, close, reopen and verify.
 *
 *   test-embedded PMIDX-POOLFILE POOL-FILE
 *
 * Last line: "N passed, N failed". Built by libpmidx/embedded.mk.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* the core's names that libpmidx reuses (see backend_file.c) */
#define pmidx_pool		pmidx_core_pool
#define pmidx_index		pmidx_core_index
#define pmidx_pool_open		pmidx_core_pool_open
#define pmidx_pool_close	pmidx_core_pool_close
#define pmidx_engine_name	pmidx_core_engine_name
#define pmidx_ptr		pmidx_core_ptr
#include "pool_file.h"
#undef pmidx_pool
#undef pmidx_index
#undef pmidx_pool_open
#undef pmidx_pool_close
#undef pmidx_engine_name
#undef pmidx_ptr

#include "internal.h"
#include <shim/shim.h>

#define NKEYS	1000
#define BIG	4096		/* a value above the dispatcher's stack buffer */

static int passed, failed;

#define CHECK(cond, ...) do {					\
	if (cond) {						\
		passed++;					\
	} else {						\
		failed++;					\
		printf("not ok - %s:%d: ", __FILE__, __LINE__);	\
		printf(__VA_ARGS__);				\
		printf("\n");					\
	}							\
} while (0)

static const struct {
	const char *name;
	uint32_t engine;
} idxs[] = {
	{ "emb-utree", PMIDX_ENGINE_UTREE },
	{ "emb-ccl", PMIDX_ENGINE_CCL },
	{ "emb-b3", PMIDX_ENGINE_B3 },
	{ "emb-lodge", PMIDX_ENGINE_LODGE },
	{ "emb-pfart", PMIDX_ENGINE_PFART },
};

static int val_of(uint64_t i, char *buf)
{
	/* lengths vary 9..40 so values of different sizes round-trip */
	int n = snprintf(buf, 64, "value-%08" PRIu64 "-", i);
	int len = 9 + (int)(i % 32);

	while (n < len)
		buf[n++] = 'a' + (char)(i % 26);
	return len;
}

static bool key_live(uint64_t i)
{
	return i % 2;	/* even keys get deleted */
}

/* the live set: every live key has its value; every dead key is absent */
static void verify(struct pmidx_index *idx, const char *what)
{
	uint8_t key[PMIDX_U64_KEY_LEN];
	char want[64], got[64];
	uint64_t i, k, prev = 0, n = 0, keys = ~0ULL;
	int bad_get = 0, bad_scan = 0, ret, wl;
	struct pmidx_scan *scan;
	struct pmidx_kv kv;
	size_t len;

	for (i = 0; i < NKEYS; i++) {
		pmidx_key_from_u64(i, key);
		len = sizeof(got);
		ret = pmidx_get(idx, key, sizeof(key), got, &len);
		if (key_live(i)) {
			wl = val_of(i, want);
			if (ret || len != (size_t)wl || memcmp(got, want, wl))
				bad_get++;
		} else if (ret != -ENOENT) {
			bad_get++;
		}
	}
	CHECK(!bad_get, "%s %s: %d bad gets", what, pmidx_index_name(idx), bad_get);

	ret = pmidx_scan_open(idx, NULL, 0, NULL, 0, 0, 0, &scan);
	CHECK(!ret, "%s: scan_open: %d", what, ret);
	if (!ret) {
		while ((ret = pmidx_scan_next(scan, &kv)) == 1) {
			if (pmidx_key_to_u64(kv.key, kv.key_len, &k) ||
			    (n && k <= prev) || !key_live(k)) {
				bad_scan++;
				continue;
			}
			wl = val_of(k, want);
			if (kv.val_len != (size_t)wl || memcmp(kv.val, want, wl))
				bad_scan++;
			prev = k;
			n++;
		}
		CHECK(ret == 0, "%s: scan_next: %d", what, ret);
		pmidx_scan_close(scan);
	}
	CHECK(!bad_scan && n == NKEYS / 2, "%s %s: scan %" PRIu64 " keys, %d bad",
	      what, pmidx_index_name(idx), n, bad_scan);

	ret = pmidx_check(idx, &keys);
	CHECK(!ret && keys == NKEYS / 2, "%s %s: check %d, keys %" PRIu64,
	      what, pmidx_index_name(idx), ret, keys);
}

/* [100, 200) with a limit of 10, then after the last key returned */
static void scan_range(struct pmidx_index *idx)
{
	uint8_t lo[8], hi[8], after[8];
	struct pmidx_scan *scan;
	struct pmidx_kv kv;
	uint64_t k, first = 0, last = 0, n = 0;
	int ret;

	pmidx_key_from_u64(100, lo);
	pmidx_key_from_u64(200, hi);
	ret = pmidx_scan_open(idx, lo, 8, hi, 8, 10, 0, &scan);
	CHECK(!ret, "range scan_open: %d", ret);
	if (ret)
		return;
	while (pmidx_scan_next(scan, &kv) == 1) {
		pmidx_key_to_u64(kv.key, kv.key_len, &k);
		if (!n)
			first = k;
		last = k;
		n++;
	}
	pmidx_scan_close(scan);
	CHECK(n == 10 && first == 101 && last == 119,
	      "%s range: n %" PRIu64 " first %" PRIu64 " last %" PRIu64,
	      pmidx_index_name(idx), n, first, last);

	pmidx_key_from_u64(last, after);
	ret = pmidx_scan_open(idx, after, 8, hi, 8, 0, PMIDX_SCAN_AFTER, &scan);
	CHECK(!ret, "after scan_open: %d", ret);
	if (ret)
		return;
	n = 0;
	first = 0;
	while (pmidx_scan_next(scan, &kv) == 1) {
		pmidx_key_to_u64(kv.key, kv.key_len, &k);
		if (!n)
			first = k;
		n++;
	}
	pmidx_scan_close(scan);
	CHECK(n == 40 && first == 121, "%s after: n %" PRIu64 " first %" PRIu64,
	      pmidx_index_name(idx), n, first);
}

/*
 * Values larger than the scan buffer's first guess: the iterator grows
 * it, and a second scan reuses the handle's cached iterator.
 */
static void scan_big(struct pmidx_index *idx)
{
	static char big[BIG];
	uint8_t key[PMIDX_U64_KEY_LEN];
	struct pmidx_scan *scan;
	struct pmidx_kv kv;
	int ret, round, n, bad;
	uint64_t i, k;

	for (i = 0; i < 40; i++) {
		pmidx_key_from_u64(NKEYS + i, key);
		memset(big, 'A' + (int)i % 26, sizeof(big));
		ret = pmidx_put(idx, key, sizeof(key), big, sizeof(big), 0);
		CHECK(!ret, "%s: big put: %d", pmidx_index_name(idx), ret);
	}
	for (round = 0; round < 2; round++) {
		pmidx_key_from_u64(NKEYS, key);
		ret = pmidx_scan_open(idx, key, sizeof(key), NULL, 0,
				      round ? 40 : 30, 0, &scan);
		CHECK(!ret, "big scan_open: %d", ret);
		if (ret)
			return;
		n = 0;
		bad = 0;
		while ((ret = pmidx_scan_next(scan, &kv)) == 1) {
			pmidx_key_to_u64(kv.key, kv.key_len, &k);
			if (k != NKEYS + (uint64_t)n || kv.val_len != BIG ||
			    ((const char *)kv.val)[BIG - 1] != 'A' + n % 26)
				bad++;
			n++;
		}
		pmidx_scan_close(scan);
		CHECK(!ret && !bad && n == (round ? 40 : 30),
		      "%s: big scan %d: ret %d, %d records, %d bad",
		      pmidx_index_name(idx), round, ret, n, bad);
	}
	for (i = 0; i < 40; i++) {
		pmidx_key_from_u64(NKEYS + i, key);
		pmidx_del(idx, key, sizeof(key));
	}
}

/*
 * Issue 15: once warm, the dispatcher's per-operation path allocates
 * nothing (stack buffers, the pool's per-CPU scratch): with this thread's
 * next allocation armed to fail (the GC's, in the background, may come
 * at any time and do not count), gets of small and large values, a get into
 * a too-small buffer and a BATCH of gets all succeed and the failure
 * never fires (deletes use no buffer; lodge's allocates on its own). The first round warms. A scan
 * runs between the rounds, unarmed: the engines' scans still allocate
 * their own state (utree's iterator, ccl's staging; issue 15 item 3),
 * only the dispatcher's bounce buffer and libpmidx's are cached.
 */
static void no_alloc(struct pmidx_pool *pool, struct pmidx_index *idx)
{
	static char big[BIG], out[BIG];
	uint8_t key[PMIDX_U64_KEY_LEN], keys[16][PMIDX_U64_KEY_LEN];
	char small[4], vals[16][64];
	struct pmidx_req q[16];
	struct pmidx_scan *scan;
	struct pmidx_kv kv;
	int ret, round, bad = 0, n;
	bool fired;
	size_t len;
	unsigned int j;

	pmidx_key_from_u64(NKEYS + 100, key);
	memset(big, 'b', sizeof(big));
	ret = pmidx_put(idx, key, sizeof(key), big, sizeof(big), 0);
	CHECK(!ret, "%s: no_alloc put: %d", pmidx_index_name(idx), ret);
	for (round = 0; round < 2; round++) {
		if (round)	/* this thread's: not the GC's or a worker's */
			shim_fail_alloc_nth_self(1);
		pmidx_key_from_u64(1, key);
		len = sizeof(vals[0]);
		bad += pmidx_get(idx, key, sizeof(key), vals[0], &len) != 0;
		len = sizeof(small);
		bad += pmidx_get(idx, key, sizeof(key), small, &len) != -ENOSPC;
		pmidx_key_from_u64(NKEYS + 100, key);
		len = sizeof(out);
		bad += pmidx_get(idx, key, sizeof(key), out, &len) != 0 ||
		       len != BIG;
		for (j = 0; j < 16; j++) {
			pmidx_key_from_u64(j, keys[j]);
			q[j] = (struct pmidx_req){ .idx = idx, .type = PMIDX_REQ_GET,
				.key = keys[j], .key_len = sizeof(keys[j]),
				.val = j == 3 ? (void *)out : vals[j],
				.val_len = j == 3 ? sizeof(out) : sizeof(vals[j]) };
		}
		bad += pmidx_batch(pool, q, 16) != 8;	/* the even keys are gone */
		if (round)
			break;
		ret = pmidx_scan_open(idx, NULL, 0, NULL, 0, 100, 0, &scan);
		bad += ret != 0;
		for (n = 0; !ret && pmidx_scan_next(scan, &kv) == 1; n++)
			;
		if (!ret)
			pmidx_scan_close(scan);
		bad += n != 100;
	}
	fired = shim_fail_alloc_fired();
	shim_fail_alloc_nth(0);
	CHECK(!bad && !fired, "%s: per-op path allocated: %d bad, fired %d",
	      pmidx_index_name(idx), bad, fired);
	pmidx_key_from_u64(NKEYS + 100, key);
	pmidx_del(idx, key, sizeof(key));
}

static void exercise(struct pmidx_pool *pool, struct pmidx_index *idx)
{
	uint8_t key[PMIDX_U64_KEY_LEN];
	char val[64], small[4];
	struct pmidx_cmd c;
	int bad = 0, ret, vl;
	uint64_t i;
	size_t len;

	for (i = 0; i < NKEYS; i++) {
		pmidx_key_from_u64(i, key);
		vl = val_of(i, val);
		if (pmidx_put(idx, key, sizeof(key), val, vl, PMIDX_PUT_INSERT))
			bad++;
	}
	CHECK(!bad, "%s: %d failed inserts", pmidx_index_name(idx), bad);

	pmidx_key_from_u64(7, key);
	ret = pmidx_put(idx, key, sizeof(key), "x", 1, PMIDX_PUT_INSERT);
	CHECK(ret == -EEXIST, "%s: insert over a key: %d", pmidx_index_name(idx), ret);
	ret = pmidx_put(idx, key, sizeof(key), "x", 1, 0);
	CHECK(!ret, "%s: upsert: %d", pmidx_index_name(idx), ret);
	len = sizeof(val);
	ret = pmidx_get(idx, key, sizeof(key), val, &len);
	CHECK(!ret && len == 1 && val[0] == 'x', "%s: get after upsert: %d len %zu",
	      pmidx_index_name(idx), ret, len);
	vl = val_of(7, val);
	ret = pmidx_put(idx, key, sizeof(key), val, vl, 0);
	CHECK(!ret, "%s: upsert back: %d", pmidx_index_name(idx), ret);

	/* -ENOSPC reports the length needed */
	len = sizeof(small);
	ret = pmidx_get(idx, key, sizeof(key), small, &len);
	CHECK(ret == -ENOSPC && len == (size_t)vl, "%s: small get: %d len %zu",
	      pmidx_index_name(idx), ret, len);

	bad = 0;
	for (i = 0; i < NKEYS; i += 2) {
		pmidx_key_from_u64(i, key);
		if (pmidx_del(idx, key, sizeof(key)))
			bad++;
	}
	CHECK(!bad, "%s: %d failed deletes", pmidx_index_name(idx), bad);
	pmidx_key_from_u64(0, key);
	ret = pmidx_del(idx, key, sizeof(key));
	CHECK(ret == -ENOENT, "%s: delete twice: %d", pmidx_index_name(idx), ret);

	/* the memcpy uaccess: NULL with a length is -EFAULT, as in the kernel */
	memset(&c, 0, sizeof(c));
	c.op = PMIDX_OP_GET;
	c.index = pmidx_index_id(idx);
	c.key_len = 8;
	c.val = pmidx_ptr(val);
	c.val_len = sizeof(val);
	ret = pmidx_cmd_run(pool, &c);
	CHECK(ret == -EFAULT, "%s: NULL key: %d", pmidx_index_name(idx), ret);
	pmidx_key_from_u64(1, key);
	len = 16;
	ret = pmidx_get(idx, key, sizeof(key), NULL, &len);
	CHECK(ret == -EFAULT, "%s: NULL value buffer: %d", pmidx_index_name(idx), ret);

	scan_range(idx);
	scan_big(idx);
	no_alloc(pool, idx);
	verify(idx, "live");
}

int main(int argc, char **argv)
{
	struct pmidx_index *idx[PMIDX_ARRAY_SIZE(idxs)], *bogus;
	struct pmidx_pool_file *pf;
	struct pmidx_pool *pool, *pool2;
	struct pmidx_core_index *ci;
	const char *why = NULL;
	char cmd[4096];
	unsigned int i;
	int ret;

	if (argc != 3) {
		fprintf(stderr, "usage: %s PMIDX-POOLFILE POOL-FILE\n", argv[0]);
		return 2;
	}
	unlink(argv[2]);
	snprintf(cmd, sizeof(cmd), "%s format %s 64M", argv[1], argv[2]);
	ret = system(cmd);
	CHECK(ret == 0, "%s: %d", cmd, ret);
	if (ret)
		goto out;

	/* creating indexes is an admin (netlink) operation: use the core */
	ret = pmidx_pool_file_open(argv[2], 0, &pf, &why);
	CHECK(!ret, "pool_file_open: %d (%s)", ret, why ? why : "");
	if (ret)
		goto out;
	for (i = 0; i < PMIDX_ARRAY_SIZE(idxs); i++) {
		ret = pmidx_index_create(pf->pool, idxs[i].name, idxs[i].engine,
					 &ci, &why);
		CHECK(!ret, "create %s: %d (%s)", idxs[i].name, ret, why ? why : "");
	}
	pmidx_pool_file_close(pf);

	ret = pmidx_pool_open(argv[2], 0, &pool);
	CHECK(!ret, "pmidx_pool_open(%s): %d", argv[2], ret);
	if (ret)
		goto out;
	CHECK(!strcmp(pool->be->name, "file"), "backend %s", pool->be->name);
	CHECK(pmidx_pool_fd(pool) == -EOPNOTSUPP, "pool_fd %d", pmidx_pool_fd(pool));
	CHECK(!strcmp(pmidx_pool_path(pool), argv[2]), "path %s", pmidx_pool_path(pool));
	CHECK(!strcmp(pmidx_engine_name(PMIDX_ENGINE_CCL), "ccl"), "engine name");
	/* the file is held exclusively while attached */
	ret = pmidx_pool_open(argv[2], 0, &pool2);
	CHECK(ret < 0, "second open of an attached file: %d", ret);
	if (!ret)
		pmidx_pool_close(pool2);
	ret = pmidx_index_open(pool, "no-such-index", &bogus);
	CHECK(ret == -ENOENT, "open a missing index: %d", ret);

	for (i = 0; i < PMIDX_ARRAY_SIZE(idxs); i++) {
		ret = pmidx_index_open(pool, idxs[i].name, &idx[i]);
		CHECK(!ret, "index_open %s: %d", idxs[i].name, ret);
		if (ret)
			goto close;
		CHECK(pmidx_index_engine(idx[i]) == idxs[i].engine, "%s engine %u",
		      idxs[i].name, pmidx_index_engine(idx[i]));
		exercise(pool, idx[i]);
		pmidx_index_close(idx[i]);
	}
	pmidx_pool_close(pool);

	/* persistence: detach, attach again, the same live set */
	ret = pmidx_pool_open(argv[2], 0, &pool);
	CHECK(!ret, "reopen: %d", ret);
	if (ret)
		goto out;
	for (i = 0; i < PMIDX_ARRAY_SIZE(idxs); i++) {
		ret = pmidx_index_open(pool, idxs[i].name, &idx[i]);
		CHECK(!ret, "reopen index_open %s: %d", idxs[i].name, ret);
		if (ret)
			continue;
		verify(idx[i], "reopened");
		pmidx_index_close(idx[i]);
	}
close:
	pmidx_pool_close(pool);
out:
	unlink(argv[2]);
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
