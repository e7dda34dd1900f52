// SPDX-License-Identifier: GPL-2.0
/*
 * Self-check of pmidxctl's output code (print.c): the JSON string
 * escaper, the JSON writer, the name tables and the exact JSON shape
 * of "list --json" and "stats --json".
 *
 *   gcc -I uapi tools/pmidxctl/tests/json_test.c tools/pmidxctl/print.c \
 *	-o json_test
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../print.h"

static int failures;

/* Runs fn(f, arg) into a memory buffer and compares with want. */
static void expect(const char *what, void (*fn)(FILE *f, const void *arg),
		   const void *arg, const char *want)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f) {
		perror("open_memstream");
		exit(1);
	}
	fn(f, arg);
	fclose(f);
	if (strcmp(buf, want)) {
		failures++;
		fprintf(stderr, "FAIL %s:\n  got  %s\n  want %s\n", what, buf,
			want);
	}
	free(buf);
}

static void escape(FILE *f, const void *arg)
{
	pm_json_escape(f, arg);
}

static void test_escape(void)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "", "\"\"" },
		{ "inodes", "\"inodes\"" },
		{ "a\"b\\c/d", "\"a\\\"b\\\\c/d\"" },
		{ "\b\f\n\r\t", "\"\\b\\f\\n\\r\\t\"" },
		{ "\x01\x1f\x7f", "\"\\u0001\\u001f\\u007f\"" },
		{ "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
		  "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"" },
		{ "\x80", "\"\\ufffd\"" },			/* stray continuation */
		{ "\xc0\xaf", "\"\\ufffd\\ufffd\"" },		/* overlong '/' */
		{ "\xe0\x80\xaf", "\"\\ufffd\\ufffd\\ufffd\"" },	/* overlong */
		{ "\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\"" },	/* surrogate */
		{ "\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\"" }, /* > U+10FFFF */
		{ "a\xe2\x82", "\"a\\ufffd\\ufffd\"" },		/* truncated */
		{ "\xff" "b", "\"\\ufffdb\"" },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		expect("escape", escape, cases[i].in, cases[i].out);
}

static void writer(FILE *f, const void *arg)
{
	struct pm_json j;

	(void)arg;
	pm_json_init(&j, f);
	pm_json_obj_open(&j, NULL);
	pm_json_arr_open(&j, "a");
	pm_json_u64(&j, NULL, 1);
	pm_json_u64(&j, NULL, 18446744073709551615ULL);
	pm_json_arr_close(&j);
	pm_json_obj_open(&j, "b\"");
	pm_json_str(&j, "c", "d");
	pm_json_obj_close(&j);
	pm_json_arr_open(&j, "empty");
	pm_json_arr_close(&j);
	pm_json_null(&j, "e");
	pm_json_str(&j, "f", NULL);
	pm_json_obj_close(&j);
}

static void test_names(void)
{
	char buf[32];
	uint32_t t;

	for (t = 1; t <= PMIDX_STAT_MAX; t++) {
		const char *n = pm_stat_name(t, buf, sizeof(buf));

		if (!strncmp(n, "stat_", 5)) {
			failures++;
			fprintf(stderr, "FAIL: enum pmidx_stat %u has no name\n", t);
		}
	}
	if (strcmp(pm_stat_name(PMIDX_STAT_ALLOC_USED_BYTES, buf, sizeof(buf)),
		   "alloc_used_bytes") ||
	    strcmp(pm_stat_name(999, buf, sizeof(buf)), "stat_999")) {
		failures++;
		fprintf(stderr, "FAIL: stat names\n");
	}
	for (t = 1; t < __PMIDX_ENGINE_MAX; t++) {
		if (!pm_engine_name(t) ||
		    pm_engine_lookup(pm_engine_name(t)) != (int)t) {
			failures++;
			fprintf(stderr, "FAIL: engine %u\n", t);
		}
	}
	if (pm_engine_lookup("CCL") != -1 || pm_engine_lookup("") != -1 ||
	    pm_engine_lookup("ccl") != PMIDX_ENGINE_CCL ||
	    pm_test_mode_lookup("leak") != PMIDX_ALLOC_TEST_LEAK) {
		failures++;
		fprintf(stderr, "FAIL: lookups\n");
	}
}

/* pmidx0 with two indexes (one delivered separately, as LIST does). */
static void sample_view(struct pm_view *v, bool stats)
{
	static const uint8_t uuid[16] = {
		0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0,
		0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
	};
	struct pm_pool *p = pm_view_add_pool(v);
	struct pm_index *ix;

	p->id = 0;
	p->name = strdup("pmidx0");
	p->dev = strdup("/dev/pmem0");
	memcpy(p->uuid, uuid, 16);
	p->has_uuid = p->has_size = true;
	p->size = 1ULL << 30;
	p->flags = PMIDX_POOL_F_RECOVERED | (1U << 7);
	if (stats) {
		pm_stats_add(&p->stats, PMIDX_STAT_ALLOC_USED_BYTES, 4096);
		pm_stats_add(&p->stats, 200, 7);
	}
	ix = pm_pool_add_index(p);
	ix->id = 0;
	ix->name = strdup("inodes");
	ix->engine = PMIDX_ENGINE_CCL;
	ix->engine_name = strdup("ccl");
	ix = pm_view_add_index(v);
	ix->id = 1;
	ix->name = strdup("dir\"s");
	ix->engine = PMIDX_ENGINE_PFART;	/* no ENGINE_NAME: from table */
	if (stats)
		pm_stats_add(&ix->stats, PMIDX_STAT_KEYS, 3);
}

static void list_json(FILE *f, const void *arg)
{
	struct pm_view v = { 0 };

	(void)arg;
	sample_view(&v, false);
	if (pm_view_adopt_indexes(&v))
		exit(1);
	pm_print_list(f, &v, true);
	pm_view_free(&v);
}

static void stats_json(FILE *f, const void *arg)
{
	struct pm_view v = { 0 };

	(void)arg;
	sample_view(&v, true);
	pm_print_stats(f, &v, true);
	pm_view_free(&v);
}

static void empty_list(FILE *f, const void *arg)
{
	struct pm_view v = { 0 };

	(void)arg;
	pm_print_list(f, &v, true);
	pm_print_stats(f, &v, true);
}

int main(void)
{
	test_escape();
	expect("writer", writer, NULL,
	       "{\"a\":[1,18446744073709551615],\"b\\\"\":{\"c\":\"d\"},"
	       "\"empty\":[],\"e\":null,\"f\":null}\n");
	test_names();
	expect("list --json", list_json, NULL,
	       "{\"pools\":[{\"id\":0,\"name\":\"pmidx0\",\"device\":\"/dev/pmem0\","
	       "\"uuid\":\"12345678-9abc-def0-0123-456789abcdef\","
	       "\"size\":1073741824,\"flags\":[\"recovered\",\"flag_7\"],"
	       "\"indexes\":[{\"id\":0,\"name\":\"inodes\",\"engine\":\"ccl\"},"
	       "{\"id\":1,\"name\":\"dir\\\"s\",\"engine\":\"pfart\"}]}]}\n");
	expect("stats --json", stats_json, NULL,
	       "{\"pools\":[{\"id\":0,\"name\":\"pmidx0\",\"stats\":"
	       "{\"alloc_used_bytes\":4096,\"stat_200\":7}}],"
	       "\"indexes\":[{\"pool\":0,\"id\":1,\"name\":\"dir\\\"s\","
	       "\"engine\":\"pfart\",\"stats\":{\"keys\":3}}]}\n");
	expect("empty", empty_list, NULL,
	       "{\"pools\":[]}\n{\"pools\":[],\"indexes\":[]}\n");
	printf("json_test: %s\n", failures ? "FAILED" : "ok");
	return failures ? 1 : 0;
}
