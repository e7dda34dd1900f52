// SPDX-License-Identifier: GPL-2.0
/*
 * pmidx-poolfile: format and inspect pool images from userspace with the
 * kernel's own core code, e.g. to prepare the backing file of an emulated
 * nvdimm and attach the same image in the VM.
 *
 *   pmidx-poolfile format FILE SIZE [--force]
 *   pmidx-poolfile info FILE [--json]
 *   pmidx-poolfile check FILE
 *   pmidx-poolfile create-index FILE NAME [--engine ENGINE]
 *   pmidx-poolfile drop-index FILE NAME
 *   pmidx-poolfile alloc-test FILE [--mode storm|leak] [--threads T]
 *                  [--ops N] [--size BYTES] [--seed S]
 *
 * info and check work on a private copy-on-write mapping (recovery runs,
 * the file is not touched); the others attach the pool, do their work
 * and detach cleanly (alloc-test --mode leak leaves it to be recovered).
 * Exit status: 0, 1 on a pmidx error (message on stderr), 2 on usage.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "core/alloc_test.h"
#include "core/super.h"
#include "pool_file.h"

static const char *prog = "pmidx-poolfile";

static int usage(void)
{
	fprintf(stderr,
		"usage: %s format FILE SIZE [--force]\n"
		"       %s info FILE [--json]\n"
		"       %s check FILE\n"
		"       %s create-index FILE NAME [--engine ccl|utree|b3|lodge|pfart]\n"
		"       %s drop-index FILE NAME\n"
		"       %s alloc-test FILE [--mode storm|leak] [--threads T] [--ops N]\n"
		"                    [--size BYTES] [--seed S]\n",
		prog, prog, prog, prog, prog, prog);
	return 2;
}

static int fail(const char *what, int err, const char *why)
{
	fprintf(stderr, "%s: %s: %s (%s)\n", prog, what, why ? why : "failed",
		strerror(-err));
	return 1;
}

static void uuid_str(const u8 *u, char *buf)
{
	sprintf(buf, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9],
		u[10], u[11], u[12], u[13], u[14], u[15]);
}

static int cmd_info(const char *path, bool json, bool check_only)
{
	struct pmidx_pool_file *pf;
	struct pmidx_stats st = {};
	struct pmidx_pool *pool;
	const char *why = NULL;
	char uuid[40];
	struct pmidx_sb sb;
	unsigned int slot, i, n = 0;
	bool clean;
	int ret;

	ret = pmidx_pool_file_map(path, 0, PMIDX_PF_PRIVATE, &pf, &why);
	if (ret)
		return fail(path, ret, why);
	{
		struct pmidx_pmem pm = { .base = pf->base, .size = pf->size };

		ret = pmidx_sb_read(&pm, &sb, &slot, &why);
	}
	if (ret) {
		pmidx_pool_file_unmap(pf);
		return fail(path, ret, why);
	}
	clean = le32_to_cpu(sb.clean) == 1;
	pool = pmidx_pool_open(pf->base, pf->size, false, &why);
	if (IS_ERR(pool)) {
		pmidx_pool_file_unmap(pf);
		return fail(path, PTR_ERR(pool), why);
	}
	pmidx_pool_stats(pool, &st);
	if (check_only) {
		printf("%s: ok (%s, %llu objects, %llu indexes checked)\n", path,
		       clean ? "clean" : "recovered",
		       (unsigned long long)st.val[PMIDX_STAT_ALLOC_OBJECTS],
		       (unsigned long long)({
				unsigned int k, c = 0;
				for (k = 0; k < PMIDX_MAX_INDEXES; k++)
					c += !!pool->indexes[k];
				c; }));
		goto out;
	}
	uuid_str(sb.uuid, uuid);
	if (json) {
		printf("{\"path\":\"%s\",\"uuid\":\"%s\",\"size\":%llu,\"version\":%u,"
		       "\"seq\":%llu,\"clean\":%s,\"attach_count\":%llu,"
		       "\"format_time\":%llu,\"chunk_size\":%u,\"chunks\":%u,"
		       "\"data_off\":%llu,\"objects\":%llu,\"used_bytes\":%llu,"
		       "\"free_chunks\":%llu,\"indexes\":[",
		       path, uuid, (unsigned long long)le64_to_cpu(sb.size),
		       le32_to_cpu(sb.version), (unsigned long long)le64_to_cpu(sb.seq),
		       clean ? "true" : "false",
		       (unsigned long long)le64_to_cpu(sb.attach_count),
		       (unsigned long long)le64_to_cpu(sb.format_time),
		       le32_to_cpu(sb.chunk_size), le32_to_cpu(sb.nr_chunks),
		       (unsigned long long)le64_to_cpu(sb.data_off),
		       (unsigned long long)st.val[PMIDX_STAT_ALLOC_OBJECTS],
		       (unsigned long long)st.val[PMIDX_STAT_ALLOC_USED_BYTES],
		       (unsigned long long)st.val[PMIDX_STAT_ALLOC_FREE_CHUNKS]);
		for (i = 0; i < PMIDX_MAX_INDEXES; i++) {
			struct pmidx_index *idx = pool->indexes[i];

			if (!idx)
				continue;
			printf("%s{\"name\":\"%s\",\"id\":%u,\"engine\":\"%s\",\"root\":%llu}",
			       n++ ? "," : "", idx->name, idx->id,
			       pmidx_engine_name(idx->engine),
			       (unsigned long long)idx->root);
		}
		printf("]}\n");
		goto out;
	}
	{
		time_t t = le64_to_cpu(sb.format_time);
		char tbuf[64];

		strftime(tbuf, sizeof(tbuf), "%Y-%m-%d %H:%M:%S UTC", gmtime(&t));
		printf("pool:          %s\n", path);
		printf("uuid:          %s\n", uuid);
		printf("size:          %llu bytes (%llu MiB)\n",
		       (unsigned long long)le64_to_cpu(sb.size),
		       (unsigned long long)le64_to_cpu(sb.size) >> 20);
		printf("format:        version %u, formatted %s\n",
		       le32_to_cpu(sb.version), tbuf);
		printf("superblock:    copy %u, seq %llu, %s, attached %llu times\n",
		       slot, (unsigned long long)le64_to_cpu(sb.seq),
		       clean ? "clean" : "not clean (needs recovery)",
		       (unsigned long long)le64_to_cpu(sb.attach_count));
		printf("chunks:        %u x %u KiB at offset %llu, %llu free\n",
		       le32_to_cpu(sb.nr_chunks), le32_to_cpu(sb.chunk_size) >> 10,
		       (unsigned long long)le64_to_cpu(sb.data_off),
		       (unsigned long long)st.val[PMIDX_STAT_ALLOC_FREE_CHUNKS]);
		printf("objects:       %llu (%llu bytes)%s\n",
		       (unsigned long long)st.val[PMIDX_STAT_ALLOC_OBJECTS],
		       (unsigned long long)st.val[PMIDX_STAT_ALLOC_USED_BYTES],
		       clean ? "" : " after recovery");
		for (i = 0; i < PMIDX_MAX_INDEXES; i++) {
			struct pmidx_index *idx = pool->indexes[i];

			if (!idx)
				continue;
			if (!n++)
				printf("indexes:\n");
			printf("  %-3u %-24s %-6s root %#llx\n", idx->id, idx->name,
			       pmidx_engine_name(idx->engine),
			       (unsigned long long)idx->root);
		}
		if (!n)
			printf("indexes:       none\n");
	}
out:
	/* private mapping: what recovery and detach write is thrown away */
	pmidx_pool_close(pool);
	pmidx_pool_file_unmap(pf);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "force", no_argument, NULL, 'f' },
		{ "json", no_argument, NULL, 'j' },
		{ "engine", required_argument, NULL, 'e' },
		{ "mode", required_argument, NULL, 'm' },
		{ "threads", required_argument, NULL, 't' },
		{ "ops", required_argument, NULL, 'o' },
		{ "size", required_argument, NULL, 's' },
		{ "seed", required_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct pmidx_alloc_test t = {
		.mode = PMIDX_ALLOC_TEST_STORM, .threads = 4, .ops = 10000,
	};
	u32 engine = PMIDX_ENGINE_CCL;
	bool force = false, json = false;
	struct pmidx_pool_file *pf;
	const char *cmd, *path, *why = NULL;
	int c, ret;

	while ((c = getopt_long(argc, argv, "fje:m:t:o:s:S:h", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			force = true;
			break;
		case 'j':
			json = true;
			break;
		case 'e':
			engine = pmidx_engine_by_name(optarg);
			if (!engine) {
				fprintf(stderr, "%s: unknown engine %s\n", prog, optarg);
				return 2;
			}
			break;
		case 'm':
			if (!strcmp(optarg, "storm"))
				t.mode = PMIDX_ALLOC_TEST_STORM;
			else if (!strcmp(optarg, "leak"))
				t.mode = PMIDX_ALLOC_TEST_LEAK;
			else
				return usage();
			break;
		case 't':
			t.threads = strtoul(optarg, NULL, 0);
			if (!t.threads || t.threads > 64)
				return usage();
			break;
		case 'o':
			t.ops = strtoul(optarg, NULL, 0);
			break;
		case 's':
			t.size = pmidx_parse_size(optarg);
			break;
		case 'S':
			t.seed = strtoull(optarg, NULL, 0);
			break;
		default:
			return usage();
		}
	}
	if (argc - optind < 2)
		return usage();
	cmd = argv[optind];
	path = argv[optind + 1];

	if (!strcmp(cmd, "format")) {
		u64 size;

		if (argc - optind != 3)
			return usage();
		size = pmidx_parse_size(argv[optind + 2]);
		if (!size) {
			fprintf(stderr, "%s: bad size %s\n", prog, argv[optind + 2]);
			return 2;
		}
		ret = pmidx_pool_file_format(path, size, PMIDX_PF_CREATE |
					     (force ? PMIDX_PF_FORCE : 0), &why);
		if (ret)
			return fail(path, ret, why);
		printf("%s: formatted a %llu MiB pool\n", path,
		       (unsigned long long)size >> 20);
		return 0;
	}
	if (!strcmp(cmd, "info") || !strcmp(cmd, "check")) {
		if (argc - optind != 2)
			return usage();
		return cmd_info(path, json, !strcmp(cmd, "check"));
	}
	if (!strcmp(cmd, "create-index") || !strcmp(cmd, "drop-index")) {
		const char *name;

		if (argc - optind != 3)
			return usage();
		name = argv[optind + 2];
		ret = pmidx_pool_file_open(path, 0, &pf, &why);
		if (ret)
			return fail(path, ret, why);
		if (cmd[0] == 'c') {
			struct pmidx_index *idx;

			ret = pmidx_index_create(pf->pool, name, engine, &idx, &why);
			if (!ret)
				printf("%s: index %s (%s) created in slot %u\n", path,
				       name, pmidx_engine_name(engine), idx->id);
		} else {
			ret = pmidx_index_drop(pf->pool, name, &why);
			if (!ret)
				printf("%s: index %s dropped\n", path, name);
		}
		pmidx_pool_file_close(pf);
		return ret ? fail(name, ret, why) : 0;
	}
	if (!strcmp(cmd, "alloc-test")) {
		struct pmidx_stats st = {};

		if (argc - optind != 2)
			return usage();
		ret = pmidx_pool_file_open(path, 0, &pf, &why);
		if (ret)
			return fail(path, ret, why);
		ret = pmidx_alloc_test_run(pf->pool, &t, &why);
		pmidx_pool_stats(pf->pool, &st);
		printf("%s: alloc-test %s, %u threads x %u ops, size %u, seed %llu: %s; "
		       "%llu objects, %llu bytes in use, %llu of %llu chunks free\n",
		       path, t.mode == PMIDX_ALLOC_TEST_LEAK ? "leak" : "storm",
		       t.threads, t.ops, t.size, (unsigned long long)t.seed,
		       ret ? "FAILED" : "ok",
		       (unsigned long long)st.val[PMIDX_STAT_ALLOC_OBJECTS],
		       (unsigned long long)st.val[PMIDX_STAT_ALLOC_USED_BYTES],
		       (unsigned long long)st.val[PMIDX_STAT_ALLOC_FREE_CHUNKS],
		       (unsigned long long)st.val[PMIDX_STAT_ALLOC_TOTAL_CHUNKS]);
		pmidx_pool_file_close(pf);
		return ret ? fail("alloc-test", ret, why) : 0;
	}
	return usage();
}
