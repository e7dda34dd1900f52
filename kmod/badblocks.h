/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _PMIDX_BADBLOCKS_H
#define _PMIDX_BADBLOCKS_H

#include <linux/blk_types.h>
#include <linux/types.h>

int pmidx_badblocks_check(struct block_device *bdev, u64 start, u64 size,
			  const char *path, const char **why);

#endif /* _PMIDX_BADBLOCKS_H */
