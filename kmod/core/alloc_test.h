/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _PMIDX_ALLOC_TEST_H
#define _PMIDX_ALLOC_TEST_H

#include <linux/pmidx_test.h>
#include "pool.h"

struct pmidx_alloc_test {
	u32	mode;		/* enum pmidx_alloc_test_mode */
	u32	threads;
	u32	ops;		/* per thread */
	u32	size;		/* 0: random sizes */
	u64	seed;
};

int pmidx_alloc_test_run(struct pmidx_pool *pool,
			 const struct pmidx_alloc_test *t, const char **why);

#endif /* _PMIDX_ALLOC_TEST_H */
