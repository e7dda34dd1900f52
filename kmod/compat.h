/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The few kernel APIs that differ between the targets (Debian's 6.1 LTS
 * and 6.12): block device open/close. Everything else in the module
 * uses interfaces identical in both.
 */
#ifndef _PMIDX_COMPAT_H
#define _PMIDX_COMPAT_H

#include <linux/version.h>
#include <linux/blkdev.h>
#include <linux/fs.h>
#include <net/genetlink.h>

/** struct pmidx_bdev - an exclusively opened block device */
struct pmidx_bdev {
	struct block_device	*bdev;
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 9, 0)
	struct file		*file;
#endif
};

#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 9, 0)
static inline int pmidx_bdev_open(struct pmidx_bdev *b, const char *path,
				  void *holder)
{
	b->file = bdev_file_open_by_path(path, BLK_OPEN_READ | BLK_OPEN_WRITE,
					 holder, NULL);
	if (IS_ERR(b->file))
		return PTR_ERR(b->file);
	b->bdev = file_bdev(b->file);
	return 0;
}

static inline void pmidx_bdev_close(struct pmidx_bdev *b, void *holder)
{
	bdev_fput(b->file);
}
#elif LINUX_VERSION_CODE < KERNEL_VERSION(6, 5, 0)
static inline int pmidx_bdev_open(struct pmidx_bdev *b, const char *path,
				  void *holder)
{
	b->bdev = blkdev_get_by_path(path, FMODE_READ | FMODE_WRITE | FMODE_EXCL,
				     holder);
	return PTR_ERR_OR_ZERO(b->bdev);
}

static inline void pmidx_bdev_close(struct pmidx_bdev *b, void *holder)
{
	blkdev_put(b->bdev, FMODE_READ | FMODE_WRITE | FMODE_EXCL);
}
#else
#error "pmidx supports 6.1-6.4 and 6.9+ block device APIs (Debian 6.1 and 6.12)"
#endif

/* io_uring passthrough: where the SQE's command bytes are. */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 4, 0)
#include <linux/io_uring/cmd.h>
#define pmidx_uring_cmd_payload(ioucmd)	io_uring_sqe_cmd((ioucmd)->sqe)
#else
#include <linux/io_uring.h>
#define pmidx_uring_cmd_payload(ioucmd)	((ioucmd)->cmd)
#endif

/* Request attributes of a generic netlink dump. */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 6, 0)
#define pmidx_dump_attrs(cb)	(genl_info_dump(cb)->attrs)
#else
#define pmidx_dump_attrs(cb)	(genl_dumpit_info(cb)->attrs)
#endif

#endif /* _PMIDX_COMPAT_H */
