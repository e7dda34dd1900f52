// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libpmidx smoke test for the installed packages (tools/packaging-check):
 * built against the installed <pmidx.h> with `pkg-config --cflags --libs
 * pmidx` and run against the installed libpmidx.so.1.
 *
 *   smoke               API checks that need no kernel
 *   smoke DEV INDEX     put, get, scan, batch, ring and del on INDEX of
 *                       the pool DEV (/dev/pmidxN), in a guest
 *
 * Prints "ok N - what" / "not ok N - what"; exit status 0 iff all ok.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <pmidx.h>

static int n, failed;

static void check(int cond, const char *what)
{
	n++;
	if (!cond)
		failed++;
	printf("%s %d - %s\n", cond ? "ok" : "not ok", n, what);
}

static void offline(void)
{
	unsigned char k1[PMIDX_U64_KEY_LEN], k2[PMIDX_U64_KEY_LEN];
	struct pmidx_pool *pool = NULL;
	uint64_t v = 0;

	pmidx_key_from_u64(0x0102030405060708ULL, k1);
	check(k1[0] == 1 && k1[7] == 8, "pmidx_key_from_u64 is big-endian");
	check(!pmidx_key_to_u64(k1, sizeof(k1), &v) && v == 0x0102030405060708ULL,
	      "pmidx_key_to_u64 round trip");
	check(pmidx_key_to_u64(k1, 3, &v) == -EINVAL, "pmidx_key_to_u64 length check");
	pmidx_key_from_u64(0x0102030405060709ULL, k2);
	check(pmidx_key_cmp(k1, 8, k2, 8) < 0 && pmidx_key_cmp(k1, 7, k1, 8) < 0,
	      "pmidx_key_cmp order");
	check(pmidx_strerror(-ENOENT) && *pmidx_strerror(-ENOENT), "pmidx_strerror");
	check(pmidx_pool_open("/nonexistent/pmidx0", 0, &pool) == -ENOENT,
	      "pmidx_pool_open of a missing path: -ENOENT");
	check(pmidx_pool_open("/dev/null", 0, &pool) < 0,
	      "pmidx_pool_open of a foreign device fails");
}

static void online(const char *dev, const char *name)
{
	unsigned char key[PMIDX_U64_KEY_LEN];
	struct pmidx_completion c;
	struct pmidx_pool *pool;
	struct pmidx_index *idx;
	struct pmidx_scan *scan;
	struct pmidx_ring *ring;
	struct pmidx_kv kv;
	char val[32], out[32];
	size_t len;
	int i, ret, seen;

	ret = pmidx_pool_open(dev, 0, &pool);
	check(!ret, "pmidx_pool_open");
	if (ret)
		return;
	ret = pmidx_index_open(pool, name, &idx);
	check(!ret, "pmidx_index_open");
	if (ret) {
		pmidx_pool_close(pool);
		return;
	}
	for (i = 0, ret = 0; i < 100 && !ret; i++) {
		pmidx_key_from_u64(i, key);
		snprintf(val, sizeof(val), "value-%d", i);
		ret = pmidx_put(idx, key, sizeof(key), val, strlen(val), 0);
	}
	check(!ret, "pmidx_put x100");
	pmidx_key_from_u64(42, key);
	len = sizeof(out);
	ret = pmidx_get(idx, key, sizeof(key), out, &len);
	check(!ret && len == 8 && !memcmp(out, "value-42", 8), "pmidx_get");
	ret = pmidx_scan_open(idx, NULL, 0, NULL, 0, 0, 0, &scan);
	seen = 0;
	if (!ret) {
		while ((ret = pmidx_scan_next(scan, &kv)) == 1)
			seen++;
		pmidx_scan_close(scan);
	}
	check(!ret && seen == 100, "pmidx_scan_* sees 100 keys");

	ret = pmidx_ring_open(pool, 8, 0, &ring);
	check(!ret, "pmidx_ring_open");
	if (!ret) {
		pmidx_key_from_u64(7, key);
		len = 0;
		ret = pmidx_ring_get(ring, idx, key, sizeof(key), out, sizeof(out),
				     NULL, NULL);
		if (!ret)
			ret = pmidx_ring_wait(ring, 1);
		if (ret >= 0)
			ret = pmidx_ring_poll(ring, &c, 1);
		check(ret == 1 && c.res == 0 && c.len == 7 && !memcmp(out, "value-7", 7),
		      "pmidx_ring_get completes");
		pmidx_ring_close(ring);
	}

	pmidx_key_from_u64(42, key);
	check(!pmidx_del(idx, key, sizeof(key)), "pmidx_del");
	len = sizeof(out);
	check(pmidx_get(idx, key, sizeof(key), out, &len) == -ENOENT,
	      "pmidx_get after del: -ENOENT");
	pmidx_index_close(idx);
	pmidx_pool_close(pool);
}

int main(int argc, char **argv)
{
	if (argc == 3)
		online(argv[1], argv[2]);
	else
		offline();
	printf("# smoke: %d checks, %d failed\n", n, failed);
	return failed ? 1 : 0;
}
