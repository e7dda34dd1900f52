// SPDX-License-Identifier: GPL-2.0
/*
 * Self-check of pmidxctl's data subcommands without the kernel: the
 * command line (--hex, --u64, empty START), the text escaping and the
 * JSON form of keys and values.
 *
 *   gcc -Dmain=pmidxctl_main -I uapi -I libpmidx/include \
 *	$(pkg-config --cflags libnl-genl-3.0) tools/pmidxctl/tests/data_test.c \
 *	tools/pmidxctl/{main,genl,print,admin}.c libpmidx/src/[a-z]*.c \
 *	-o data_test \
 *	$(pkg-config --libs libnl-genl-3.0)
 */
#undef main
#define _GNU_SOURCE
#include "../data.c"

static int failures;

#define CHECK(cond, ...) do {						\
	if (!(cond)) {							\
		failures++;						\
		fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
		fprintf(stderr, __VA_ARGS__);				\
		fputc('\n', stderr);					\
	}								\
} while (0)

static const struct pm_cmd *cmd_named(const char *name)
{
	const struct pm_cmd *c;

	for (c = pm_data_cmds; c->name; c++)
		if (!strcmp(c->name, name))
			return c;
	return NULL;
}

static bool blob_is(const struct blob *b, const void *p, size_t n)
{
	return b->len == n && (!n || !memcmp(b->p, p, n));
}

static void test_args(void)
{
	char *a1[] = { "put", "idx", "6869", "00ff", "--hex", "--insert", NULL };
	char *a2[] = { "get", "--u64", "idx", "258", "--pool", "pmidx1", NULL };
	char *a3[] = { "scan", "idx", "", "m", "--limit=5", NULL };
	char *a4[] = { "put", "idx", "k", "", NULL };
	char *a5[] = { "scan", "idx", "--u64", "0x10", "18446744073709551615", NULL };
	struct data_args a;
	int ret;

	ret = parse_args(cmd_named("put"), 6, a1, 2, 2, 1, &a);
	CHECK(ret == -1 && !strcmp(a.name, "idx") && a.insert && a.hex &&
	      blob_is(&a.arg[0], "hi", 2) && blob_is(&a.arg[1], "\0\xff", 2),
	      "ret %d", ret);
	free_args(&a);
	ret = parse_args(cmd_named("get"), 6, a2, 1, 1, 1, &a);
	CHECK(ret == -1 && a.u64 && a.pool.kind == PM_SEL_NAME &&
	      blob_is(&a.arg[0], "\0\0\0\0\0\0\1\2", 8), "ret %d", ret);
	free_args(&a);
	ret = parse_args(cmd_named("scan"), 5, a3, 0, 2, 2, &a);
	CHECK(ret == -1 && a.nargs == 2 && a.limit == 5 &&
	      blob_is(&a.arg[0], "", 0) && blob_is(&a.arg[1], "m", 1),
	      "ret %d", ret);
	free_args(&a);
	ret = parse_args(cmd_named("put"), 4, a4, 2, 2, 1, &a);
	CHECK(ret == -1 && blob_is(&a.arg[1], "", 0), "ret %d", ret);
	free_args(&a);
	ret = parse_args(cmd_named("scan"), 5, a5, 0, 2, 2, &a);
	CHECK(ret == -1 && blob_is(&a.arg[0], "\0\0\0\0\0\0\0\x10", 8) &&
	      blob_is(&a.arg[1], "\xff\xff\xff\xff\xff\xff\xff\xff", 8),
	      "ret %d", ret);
	free_args(&a);
}

static char *capture(void (*fn)(FILE *f, const void *arg), const void *arg)
{
	char *s = NULL;
	size_t len;
	FILE *f = open_memstream(&s, &len);

	fn(f, arg);
	fclose(f);
	return s;
}

static void text_of(FILE *f, const void *arg)
{
	const char *s = arg;

	print_text(f, (const uint8_t *)s, strlen(s) + 1);	/* with the NUL */
}

static void test_text(void)
{
	char *s = capture(text_of, "a\tb\\c\n\r\x01\xff\xc3\xa9 z~\x7f");

	CHECK(!strcmp(s, "a\\tb\\\\c\\n\\r\\x01\\xff\xc3\xa9 z~\\x7f\\x00"),
	      "got '%s'", s);
	free(s);
	CHECK(is_text((const uint8_t *)"abc \xc3\xa9", 6), "utf-8 text");
	CHECK(!is_text((const uint8_t *)"a\0b", 3), "NUL");
	CHECK(!is_text((const uint8_t *)"\xff", 1), "invalid byte");
	CHECK(!is_text((const uint8_t *)"\xc3", 1), "truncated sequence");
	CHECK(!is_text((const uint8_t *)"\xc0\x80", 2), "overlong NUL");
	CHECK(is_text((const uint8_t *)"", 0), "empty");
}

struct json_case {
	bool hex, u64;
	const char *key, *val;
	size_t klen, vlen;
	const char *want;
};

static void json_of(FILE *f, const void *arg)
{
	const struct json_case *c = arg;
	struct data_args a = { .hex = c->hex, .u64 = c->u64 };
	struct pm_json j;

	pm_json_init(&j, f);
	pm_json_obj_open(&j, NULL);
	json_bytes(&j, &a, true, c->key, c->klen);
	json_bytes(&j, &a, false, c->val, c->vlen);
	pm_json_obj_close(&j);
}

static void test_json(void)
{
	static const struct json_case cases[] = {
		{ false, false, "k", "v \"q\"\n", 1, 6,
		  "{\"key\":\"k\",\"value\":\"v \\\"q\\\"\\n\"}\n" },
		{ false, false, "k\0", "\0\xff", 2, 2,
		  "{\"key_hex\":\"6b00\",\"value_hex\":\"00ff\"}\n" },
		{ true, false, "k", "", 1, 0,
		  "{\"key\":\"6b\",\"value\":\"\"}\n" },
		{ false, true, "\0\0\0\0\0\0\1\0", "x", 8, 1,
		  "{\"key\":256,\"value\":\"x\"}\n" },
		{ false, true, "abc", "x", 3, 1,
		  "{\"key\":\"abc\",\"value\":\"x\"}\n" },
	};
	size_t i;
	char *s;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		s = capture(json_of, &cases[i]);
		CHECK(!strcmp(s, cases[i].want), "case %zu: got %s", i, s);
		free(s);
	}
}

int main(void)
{
	test_args();
	test_text();
	test_json();
	printf("data_test: %s\n", failures ? "FAILED" : "ok");
	return failures ? 1 : 0;
}
