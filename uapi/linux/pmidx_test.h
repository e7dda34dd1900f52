/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * pmidx test interface: only a module built with CONFIG_PMIDX_TEST=y
 * (make test-module) serves it; the production module answers
 * -EOPNOTSUPP. The numbers are reserved in linux/pmidx.h.
 */
#ifndef _UAPI_LINUX_PMIDX_TEST_H
#define _UAPI_LINUX_PMIDX_TEST_H

#include <linux/pmidx.h>

/* allocator exercise, see PMIDX_ATTR_TEST_* (CAP_NET_ADMIN) */
#define PMIDX_CMD_ALLOC_TEST	__PMIDX_CMD_TEST0

#define PMIDX_ATTR_TEST_THREADS	__PMIDX_ATTR_TEST0	/* u32: workers (1..64) */
#define PMIDX_ATTR_TEST_OPS	__PMIDX_ATTR_TEST1	/* u32: operations per worker */
#define PMIDX_ATTR_TEST_SIZE	__PMIDX_ATTR_TEST2	/* u32: object size, 0 = random */
#define PMIDX_ATTR_TEST_MODE	__PMIDX_ATTR_TEST3	/* u32: enum pmidx_alloc_test_mode */
#define PMIDX_ATTR_TEST_SEED	__PMIDX_ATTR_TEST4	/* u64 */

/*
 * Allocator test modes (PMIDX_CMD_ALLOC_TEST, admin only):
 *  STORM:  each worker allocates and frees random-sized objects, keeping
 *          a window of live ones, then frees everything; the reply carries
 *          the allocator statistics before and after (they must match).
 *  LEAK:   allocate OPS objects per worker and never link them anywhere,
 *          leaving them to the next crash recovery, which must reclaim them.
 */
enum pmidx_alloc_test_mode {
	PMIDX_ALLOC_TEST_STORM = 1,
	PMIDX_ALLOC_TEST_LEAK = 2,
	__PMIDX_ALLOC_TEST_MAX,
};

#endif /* _UAPI_LINUX_PMIDX_TEST_H */
