// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests of libpmidx's pure parts: u64 key encoding and order, key
 * comparison, SCAN record parsing, pmidx_strerror(); mock.c adds the
 * scan iterator and get/put over a mock backend. Runs on the host, no
 * pmidx module needed. Prints KTAP-style lines and "N passed, N failed".
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "unit.h"


static uint64_t rnd_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

static int sign(int x)
{
	return (x > 0) - (x < 0);
}

static int test_u64_bytes(void)
{
	static const uint8_t want[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	uint8_t k[8];
	uint64_t v;

	pmidx_key_from_u64(0x0102030405060708ULL, k);
	EXPECT(!memcmp(k, want, 8));
	EXPECT_EQ(0, pmidx_key_to_u64(k, 8, &v));
	EXPECT(v == 0x0102030405060708ULL);
	EXPECT_EQ(-EINVAL, pmidx_key_to_u64(k, 7, &v));
	EXPECT_EQ(-EINVAL, pmidx_key_to_u64(k, 9, &v));
	return 0;
}

static int test_u64_order(void)
{
	static const uint64_t edges[] = {
		0, 1, 255, 256, 65535, 65536, 1ULL << 32, (1ULL << 32) - 1,
		INT64_MAX, (uint64_t)INT64_MAX + 1, UINT64_MAX - 1, UINT64_MAX,
	};
	uint8_t ka[8], kb[8];
	uint64_t a, b, back;
	int i;

	for (i = 0; i < 200000; i++) {
		if (i < 144) {
			a = edges[i % 12];
			b = edges[i / 12];
		} else {
			a = rnd() >> (rnd() % 64);
			b = i & 1 ? a + (rnd() % 3) - 1 : rnd() >> (rnd() % 64);
		}
		pmidx_key_from_u64(a, ka);
		pmidx_key_from_u64(b, kb);
		EXPECT_EQ(sign(pmidx_key_cmp(ka, 8, kb, 8)), (a > b) - (a < b));
		EXPECT_EQ(sign(memcmp(ka, kb, 8)), (a > b) - (a < b));
		EXPECT_EQ(0, pmidx_key_to_u64(ka, 8, &back));
		EXPECT(back == a);
	}
	return 0;
}

static int test_key_cmp(void)
{
	EXPECT(pmidx_key_cmp("a", 1, "a", 1) == 0);
	EXPECT(pmidx_key_cmp("a", 1, "ab", 2) < 0);	/* shorter first */
	EXPECT(pmidx_key_cmp("ab", 2, "a", 1) > 0);
	EXPECT(pmidx_key_cmp("a\0", 2, "a", 1) > 0);
	EXPECT(pmidx_key_cmp("a\0", 2, "ab", 2) < 0);
	EXPECT(pmidx_key_cmp("b", 1, "ab", 2) > 0);
	EXPECT(pmidx_key_cmp("\xff", 1, "\x01\x00", 2) > 0);	/* unsigned */
	return 0;
}

/* Append a record the way the kernel packs it. */
static uint32_t put_rec(uint8_t *buf, uint32_t off, const char *k, uint32_t kl,
			const char *v, uint32_t vl)
{
	struct pmidx_rec r = { .key_len = kl, .val_len = vl };
	uint32_t size = pmidx_rec_size(kl, vl);

	memset(buf + off, 0xee, size);
	memcpy(buf + off, &r, sizeof(r));
	memcpy(buf + off + 8, k, kl);
	memcpy(buf + off + 8 + kl, v, vl);
	return off + size;
}

static int test_rec_size(void)
{
	EXPECT_EQ(16, pmidx_rec_size(1, 0));
	EXPECT_EQ(16, pmidx_rec_size(8, 0));
	EXPECT_EQ(24, pmidx_rec_size(8, 1));
	EXPECT_EQ(16, pmidx_rec_size(4, 4));
	EXPECT_EQ(65800, pmidx_rec_size(255, 65536));	/* 65799 padded */
	EXPECT_EQ(0, pmidx_rec_size(255, 65536) % 8);
	return 0;
}

static int test_rec_parse(void)
{
	static uint8_t buf[70000] __attribute__((aligned(8)));
	static char big[65536];
	struct pmidx_kv kv;
	uint32_t used = 0, off = 0;

	memset(big, 'v', sizeof(big));
	used = put_rec(buf, used, "a", 1, "", 0);
	used = put_rec(buf, used, "key2", 4, "value-2", 7);
	used = put_rec(buf, used, "k", 1, big, 65536);
	EXPECT_EQ(1, pmidx_rec_next(buf, used, &off, &kv));
	EXPECT(kv.key_len == 1 && !memcmp(kv.key, "a", 1) && kv.val_len == 0);
	EXPECT_EQ(16, off);
	EXPECT_EQ(1, pmidx_rec_next(buf, used, &off, &kv));
	EXPECT(kv.key_len == 4 && !memcmp(kv.key, "key2", 4));
	EXPECT(kv.val_len == 7 && !memcmp(kv.val, "value-2", 7));
	EXPECT_EQ(1, pmidx_rec_next(buf, used, &off, &kv));
	EXPECT(kv.val_len == 65536 && !memcmp(kv.val, big, 65536));
	EXPECT_EQ(used, off);
	EXPECT_EQ(0, pmidx_rec_next(buf, used, &off, &kv));
	EXPECT_EQ(0, pmidx_rec_next(buf, 0, &(uint32_t){ 0 }, &kv));
	return 0;
}

static int test_rec_malformed(void)
{
	static uint8_t buf[1024] __attribute__((aligned(8)));
	struct pmidx_rec r;
	struct pmidx_kv kv;
	uint32_t used, off;

	used = put_rec(buf, 0, "key2", 4, "value-2", 7);
	off = 0;	/* truncated record */
	EXPECT_EQ(-EPROTO, pmidx_rec_next(buf, used - 8, &off, &kv));
	EXPECT_EQ(0, off);
	off = 0;	/* truncated header */
	EXPECT_EQ(-EPROTO, pmidx_rec_next(buf, 4, &off, &kv));
	off = 4;	/* misaligned */
	EXPECT_EQ(-EPROTO, pmidx_rec_next(buf, used, &off, &kv));
	r = (struct pmidx_rec){ .key_len = 0, .val_len = 0 };
	memcpy(buf, &r, sizeof(r));
	off = 0;	/* empty key */
	EXPECT_EQ(-EPROTO, pmidx_rec_next(buf, 16, &off, &kv));
	r = (struct pmidx_rec){ .key_len = 256, .val_len = 0 };
	memcpy(buf, &r, sizeof(r));
	off = 0;	/* key too long */
	EXPECT_EQ(-EPROTO, pmidx_rec_next(buf, 512, &off, &kv));
	r = (struct pmidx_rec){ .key_len = 1, .val_len = 65537 };
	memcpy(buf, &r, sizeof(r));
	off = 0;	/* value too long */
	EXPECT_EQ(-EPROTO, pmidx_rec_next(buf, sizeof(buf), &off, &kv));
	r = (struct pmidx_rec){ .key_len = 1, .val_len = 0xfffffff8 };
	memcpy(buf, &r, sizeof(r));
	off = 0;	/* overflowing sizes */
	EXPECT_EQ(-EPROTO, pmidx_rec_next(buf, sizeof(buf), &off, &kv));
	return 0;
}

static int test_strerror(void)
{
	EXPECT(!strcmp(pmidx_strerror(-ENOENT), pmidx_strerror(ENOENT)));
	EXPECT(strstr(pmidx_strerror(-EEXIST), "exists"));
	EXPECT(strstr(pmidx_strerror(-ENOSPC), "too small"));
	EXPECT(strstr(pmidx_strerror(-ENOSPC), "pool"));
	EXPECT(strstr(pmidx_strerror(-E2BIG), "65536"));
	EXPECT(strstr(pmidx_strerror(-EOPNOTSUPP), "engine"));
	EXPECT(strstr(pmidx_strerror(-ENXIO), "index"));
	EXPECT(strstr(pmidx_strerror(-ENOTTY), "pmidx device"));
	EXPECT(strstr(pmidx_strerror(-EUCLEAN), "damaged"));
	EXPECT(!strcmp(pmidx_strerror(0), "Success"));
	EXPECT(!strcmp(pmidx_strerror(-EACCES), "Permission denied"));
	EXPECT(!strcmp(pmidx_strerror(-99999), "Unknown error"));
	EXPECT(!strcmp(pmidx_strerror(-2147483647), "Unknown error"));
	return 0;
}

static int test_engine_names(void)
{
	EXPECT(!strcmp(pmidx_engine_name(PMIDX_ENGINE_CCL), "ccl"));
	EXPECT(!strcmp(pmidx_engine_name(PMIDX_ENGINE_UTREE), "utree"));
	EXPECT(!strcmp(pmidx_engine_name(PMIDX_ENGINE_B3), "b3"));
	EXPECT(!strcmp(pmidx_engine_name(PMIDX_ENGINE_PFART), "pfart"));
	EXPECT(!pmidx_engine_name(0));
	EXPECT(!pmidx_engine_name(__PMIDX_ENGINE_MAX));
	EXPECT(!pmidx_engine_name(UINT32_MAX));
	return 0;
}

static int test_abi_layout(void)
{
	EXPECT_EQ(80, sizeof(struct pmidx_cmd));
	EXPECT_EQ(8, sizeof(struct pmidx_rec));
	return 0;
}

static const struct unit_test pure_tests[] = {
	{ "u64 key bytes are big-endian", test_u64_bytes },
	{ "u64 key order is numeric order", test_u64_order },
	{ "key compare: memcmp, shorter first", test_key_cmp },
	{ "scan record size and padding", test_rec_size },
	{ "scan record parsing", test_rec_parse },
	{ "scan record parsing rejects malformed records", test_rec_malformed },
	{ "pmidx_strerror", test_strerror },
	{ "engine names", test_engine_names },
	{ "ABI struct sizes", test_abi_layout },
	{ NULL, NULL },
};

int main(void)
{
	const struct unit_test *const sets[] = { pure_tests, mock_tests, ring_tests };
	int pass = 0, fail = 0, n = 0;
	size_t s;
	const struct unit_test *t;

	printf("TAP version 13\n");
	for (s = 0; s < PMIDX_ARRAY_SIZE(sets); s++) {
		for (t = sets[s]; t->name; t++) {
			n++;
			if (t->fn()) {
				fail++;
				printf("not ok %d - %s\n", n, t->name);
			} else {
				pass++;
				printf("ok %d - %s\n", n, t->name);
			}
		}
	}
	printf("1..%d\n", n);
	printf("libpmidx unit: %d passed, %d failed\n", pass, fail);
	return fail ? 1 : 0;
}
