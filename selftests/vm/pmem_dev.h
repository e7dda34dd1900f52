/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared by the data-path selftests: which pmem device to use, a clean
 * slate of attached pools before each test, and memory for bad-pointer
 * tests.
 */
#ifndef PMIDX_SELFTEST_PMEM_DEV_H
#define PMIDX_SELFTEST_PMEM_DEV_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
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

/*
 * Detach every pool. -EBUSY is waited out (10 s at most): io_uring tears a
 * ring down in a worker after close() returns, so the previous test's
 * ring may still hold the pool open for a moment (a 6.12 guest once
 * failed the next test's format so).
 */
static inline void detach_all(struct nl *nl)
{
	struct pool_info p;
	int i, ret;

	for (i = 0; i < 200 && !pm_stats(nl, NULL, &p) && p.id >= 0; i++) {
		ret = pm_detach(nl, p.name);
		if (ret == -EBUSY)
			usleep(50000);
		else if (ret)
			break;
	}
}

/* A page that is not mapped and one that is read-only. */
struct bad_mem {
	uint8_t *rw;		/* page 0: read-write */
	uint8_t *hole;		/* page 1: not mapped */
	uint8_t *ro;		/* page 2: read-only */
	size_t page;
};

static inline int bad_mem_map(struct bad_mem *m)
{
	m->page = getpagesize();
	m->rw = mmap(NULL, 3 * m->page, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m->rw == MAP_FAILED)
		return -errno;
	m->hole = m->rw + m->page;
	m->ro = m->rw + 2 * m->page;
	memset(m->ro, 'r', m->page);
	if (munmap(m->hole, m->page) || mprotect(m->ro, m->page, PROT_READ))
		return -errno;
	return 0;
}

#endif /* PMIDX_SELFTEST_PMEM_DEV_H */
