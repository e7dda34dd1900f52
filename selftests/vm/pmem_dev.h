/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared by the data-path selftests: which pmem device to use, and a
 * clean slate of attached pools before each test.
 */
#ifndef PMIDX_SELFTEST_PMEM_DEV_H
#define PMIDX_SELFTEST_PMEM_DEV_H

#include <stdio.h>
#include <stdlib.h>
#include "pmidx_nl.h"

/* $PMIDX_DEV, or the largest /dev/pmemN (looked up once). */
static inline const char *dev(void)
{
	static char big_dev[32];
	unsigned long long size, best = 0;
	char path[64];
	FILE *f;
	int i;

	if (getenv("PMIDX_DEV"))
		return getenv("PMIDX_DEV");
	for (i = 0; !big_dev[0] && i < 8; i++) {
		snprintf(path, sizeof(path), "/sys/block/pmem%d/size", i);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fscanf(f, "%llu", &size) == 1 && size > best) {
			best = size;
			snprintf(big_dev, sizeof(big_dev), "/dev/pmem%d", i);
		}
		fclose(f);
	}
	return big_dev;
}

static inline void detach_all(struct nl *nl)
{
	struct pool_info p;

	while (!pm_stats(nl, NULL, &p) && p.id >= 0)
		if (pm_detach(nl, p.name))
			break;
}

#endif /* PMIDX_SELFTEST_PMEM_DEV_H */
