// SPDX-License-Identifier: GPL-2.0
/*
 * pmidx-xpline: replay a workload against a pool through the XPLine
 * write-amplification model (xpline.h) and print the figures as JSON.
 *
 *   pmidx-xpline [--pool FILE] [--pool-size SIZE] [--count N]
 *                [--obj-sizes S1,S2,...] [--indexes N] [--no-drain]
 *
 * Without --pool the pool is an anonymous 256 MiB image. Phases, each
 * measured on its own (the XPBuffer is drained at the end of a phase
 * unless --no-drain):
 *   alloc-S   N allocations of S bytes, each object written in full and
 *             persisted (user bytes: S per op)
 *   free-S    freeing them again
 *   index-create / index-drop   N index creations / drops (user bytes:
 *             the 128-byte table entry per op)
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#include <shim/pmem.h>
#include "pool_file.h"
#include "xpline.h"

static int usage(void)
{
	fprintf(stderr, "usage: pmidx-xpline [--pool FILE] [--pool-size SIZE] "
		"[--count N] [--obj-sizes S1,S2,...] [--indexes N] [--no-drain]\n");
	return 2;
}

static void phase_end(struct xpline_model *m, bool drain, const char *label,
		      bool *first)
{
	struct xpline_stats s;

	if (drain)
		xpline_drain(m);
	xpline_get(m, &s);
	printf("%s\n    ", *first ? "" : ",");
	xpline_json(stdout, label, &s);
	*first = false;
	xpline_reset(m);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pool", required_argument, NULL, 'p' },
		{ "pool-size", required_argument, NULL, 'P' },
		{ "count", required_argument, NULL, 'n' },
		{ "obj-sizes", required_argument, NULL, 's' },
		{ "indexes", required_argument, NULL, 'i' },
		{ "no-drain", no_argument, NULL, 'd' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path = NULL, *sizes = "256,4096", *why = NULL;
	u64 pool_size = 256ULL << 20, count = 10000, nidx = PMIDX_MAX_INDEXES;
	struct pmidx_pool_file *pf = NULL;
	struct xpline_config cfg = {};
	struct xpline_model *m;
	struct pmidx_pool *pool;
	bool drain = true, first = true;
	void *img = NULL;
	char *list, *tok, *save;
	int c, ret;

	while ((c = getopt_long(argc, argv, "p:P:n:s:i:d", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			path = optarg;
			break;
		case 'P':
			pool_size = pmidx_parse_size(optarg);
			break;
		case 'n':
			count = strtoull(optarg, NULL, 0);
			break;
		case 's':
			sizes = optarg;
			break;
		case 'i':
			nidx = min_t(u64, strtoull(optarg, NULL, 0), PMIDX_MAX_INDEXES);
			break;
		case 'd':
			drain = false;
			break;
		default:
			return usage();
		}
	}
	if (optind != argc || !pool_size || !count)
		return usage();
	if (path) {
		ret = pmidx_pool_file_format(path, pool_size, PMIDX_PF_CREATE |
					     PMIDX_PF_FORCE, &why);
		if (!ret)
			ret = pmidx_pool_file_open(path, 0, &pf, &why);
		if (ret) {
			fprintf(stderr, "pmidx-xpline: %s: %s (%d)\n", path, why, ret);
			return 1;
		}
		pool = pf->pool;
	} else {
		img = mmap(NULL, pool_size, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (img == MAP_FAILED)
			return 1;
		shim_pmem_set_hw(SHIM_PMEM_HW_NONE);
		ret = pmidx_pool_format(img, pool_size, false, &why);
		pool = ret ? ERR_PTR(ret) : pmidx_pool_open(img, pool_size, false, &why);
		if (IS_ERR(pool)) {
			fprintf(stderr, "pmidx-xpline: %s\n", why);
			return 1;
		}
	}
	cfg.base = pool->pm.base;
	cfg.size = pool->pm.size;
	m = xpline_new(&cfg);
	if (!m)
		return 1;
	printf("{\"model\":{\"xpbuffer_bytes\":16384,\"xpline_bytes\":256,"
	       "\"line_bytes\":64,\"drain_per_phase\":%s},\n \"pool_bytes\":%llu,"
	       "\"count\":%llu,\n \"phases\":[", drain ? "true" : "false",
	       (unsigned long long)pool->pm.size, (unsigned long long)count);

	list = strdup(sizes);
	for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		u64 size = pmidx_parse_size(tok), i, n = 0;
		u64 *offs = calloc(count, sizeof(u64));
		char label[64];

		if (!size || !offs) {
			fprintf(stderr, "pmidx-xpline: bad size %s\n", tok);
			return 2;
		}
		xpline_attach(m);
		for (i = 0; i < count; i++) {
			u64 off = pmidx_alloc(&pool->alloc, size);
			void *p;

			if (!off)
				break;
			p = pmidx_ptr(&pool->pm, off);
			memset(p, (int)i, size);
			pmidx_persist(&pool->pm, p, size);
			offs[n++] = off;
			xpline_account(m, 1, size);
		}
		snprintf(label, sizeof(label), "alloc-%llu", (unsigned long long)size);
		phase_end(m, drain, label, &first);
		for (i = 0; i < n; i++) {
			pmidx_free(&pool->alloc, offs[i]);
			xpline_account(m, 1, 0);
		}
		snprintf(label, sizeof(label), "free-%llu", (unsigned long long)size);
		phase_end(m, drain, label, &first);
		xpline_detach(m);
		free(offs);
		if (n < count)
			fprintf(stderr, "pmidx-xpline: pool full after %llu objects of %llu bytes\n",
				(unsigned long long)n, (unsigned long long)size);
	}
	free(list);

	xpline_attach(m);
	for (c = 0; c < (int)nidx; c++) {
		struct pmidx_index *idx;
		char name[16];

		snprintf(name, sizeof(name), "x%d", c);
		if (!pmidx_index_create(pool, name, 1 + c % 5, &idx, &why))
			xpline_account(m, 1, sizeof(struct pmidx_index_entry));
	}
	phase_end(m, drain, "index-create", &first);
	for (c = 0; c < (int)nidx; c++) {
		char name[16];

		snprintf(name, sizeof(name), "x%d", c);
		if (!pmidx_index_drop(pool, name, &why))
			xpline_account(m, 1, sizeof(struct pmidx_index_entry));
	}
	phase_end(m, drain, "index-drop", &first);
	xpline_detach(m);
	printf("\n ]}\n");

	xpline_free(m);
	if (pf) {
		pmidx_pool_file_close(pf);
	} else {
		pmidx_pool_close(pool);
		munmap(img, pool_size);
	}
	return 0;
}
