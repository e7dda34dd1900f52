/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _PMIDX_DISPATCH_H
#define _PMIDX_DISPATCH_H

#include <linux/pmidx.h>
#include "pool.h"

/* @len bytes of the caller's memory at @uptr and a kernel buffer @kbuf */
struct pmidx_useg {
	void	*kbuf;
	u64	uptr;
	u32	len;
};

/*
 * How the dispatcher reaches the caller's buffers: copy_{from,to}_user in
 * the kernel, plain memcpy for libpmidx's in-process mode. All return 0
 * or -EFAULT.
 *
 * @from copies @n segments in (uptr to kbuf), @to copies them out (kbuf
 * to uptr), each in one go: one user-access window where that is what
 * costs. On -EFAULT some of them may have been copied.
 *
 * @batch_out writes back what a BATCH changed in its @n entries, the
 * outputs of struct pmidx_cmd (flags, val_len, count, result), into the
 * caller's array at @dst, and leaves the inputs there alone: a fifth of
 * the bytes of copying the array back.
 */
struct pmidx_uaccess {
	int (*from)(const struct pmidx_useg *seg, unsigned int n);
	int (*to)(const struct pmidx_useg *seg, unsigned int n);
	int (*batch_out)(u64 dst, const struct pmidx_cmd *ents, u32 n);
};

/* pmidx_dispatch() @flags */
#define PMIDX_DISPATCH_RDONLY	(1U << 0)	/* caller may not write: -EBADF */
#define PMIDX_DISPATCH_NOWAIT	(1U << 1)	/* may not sleep: -EAGAIN */

int pmidx_dispatch(struct pmidx_pool *pool, struct pmidx_cmd *cmd,
		   const struct pmidx_uaccess *ua, unsigned int flags);

/* The pool's per-CPU scratch buffers (pool->scratch): at attach, detach. */
int pmidx_dispatch_init(struct pmidx_pool *pool);
void pmidx_dispatch_exit(struct pmidx_pool *pool);

#endif /* _PMIDX_DISPATCH_H */
