/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The few kernel APIs that differ between the targets (Debian's 6.1 LTS
 * and 6.12): block device open/close, where a uring_cmd's SQE is (and a
 * 6.12 io_uring bug around it), dump attributes. The unaligned helpers'
 * header moved too: core/unaligned.h, light enough for engine code.
 * Everything else in the module uses interfaces identical in both.
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

/*
 * A uring_cmd that answers -EAGAIN is issued again from an io_uring
 * worker, after io_uring_enter() has returned and userspace may have
 * refilled the SQ slot. 6.10 to 6.13, Debian's 6.12 among them (see
 * io_uring_cmd() in its io_uring/uring_cmd.c), copy the SQE into the
 * request's async data on that -EAGAIN but leave ioucmd->sqe pointing at
 * the slot, so the reissue runs whatever command was queued there next
 * and completes it as this one (fixed in 6.14: "io_uring/uring_cmd:
 * switch sqe to async_data on EAGAIN"). Before answering -EAGAIN, do
 * what the fix does: copy the SQE (128 bytes: only SQE128 rings get here)
 * into the async data, which these kernels allocate at prep (two SQEs,
 * io_uring/uring_cmd.h), and point ioucmd->sqe there; io_uring then
 * copies nothing. Older kernels copy at the async prep and move ->cmd
 * themselves.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 10, 0) && \
	LINUX_VERSION_CODE < KERNEL_VERSION(6, 14, 0)
static inline void pmidx_uring_cmd_keep_sqe(struct io_uring_cmd *ioucmd)
{
	struct io_kiocb *req = cmd_to_io_kiocb(ioucmd);

	if (WARN_ON_ONCE(!(req->flags & REQ_F_ASYNC_DATA) || !req->async_data))
		return;
	if (ioucmd->sqe != req->async_data) {
		memcpy(req->async_data, ioucmd->sqe, 2 * sizeof(struct io_uring_sqe));
		ioucmd->sqe = req->async_data;
	}
}
#else
static inline void pmidx_uring_cmd_keep_sqe(struct io_uring_cmd *ioucmd)
{
}
#endif

/* Request attributes of a generic netlink dump. */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 6, 0)
#define pmidx_dump_attrs(cb)	(genl_info_dump(cb)->attrs)
#else
#define pmidx_dump_attrs(cb)	(genl_dumpit_info(cb)->attrs)
#endif

#endif /* _PMIDX_COMPAT_H */
