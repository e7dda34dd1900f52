// SPDX-License-Identifier: GPL-2.0
/*
 * io_uring passthrough (IORING_OP_URING_CMD) on /dev/pmidxN.
 *
 * The SQE (IORING_SETUP_SQE128) carries cmd_op = PMIDX_IOC_CMD and a
 * struct pmidx_cmd in its 80-byte command area, copied once before use.
 * On io_uring's non-blocking first issue (IO_URING_F_NONBLOCK) only what
 * does not sleep runs inline (GET, LOOKUP, an engine's no-wait PUT and
 * DEL, a short BATCH of these: see core/dispatch.c); the rest answers
 * -EAGAIN before changing anything, so io_uring issues it again from a
 * worker instead of stalling the submitter's whole batch. Either way the
 * command completes before the handler returns:
 *
 *   cqe->res      the ioctl's return value, or on success:
 *                 GET: the value length; SCAN: records returned;
 *                 LOOKUP: the index id; CHECK, BATCH: 0
 *   cqe->big_cqe[0] (IORING_SETUP_CQE32 rings only) the second output:
 *                 GET: value length (also on -ENOSPC: the length needed);
 *                 SCAN: bytes used, with PMIDX_URING_SCAN_MORE set when
 *                 more records follow (on -ENOSPC: the length needed);
 *                 LOOKUP: engine id; CHECK: keys; BATCH: entries
 *                 that failed (the per-entry results are in its array),
 *                 or on failure the position of the malformed entry
 *
 * Outputs that the ioctl writes back into its struct are not written into
 * the SQE: the ring belongs to userspace.
 */
#include <linux/fs.h>
#include <linux/uaccess.h>
#include "compat.h"
#include "core/dispatch.h"
#include "pool_dev.h"
#include "chardev.h"
#include "user_access.h"
#include "uring.h"

/* The second output word of a completed command (see file comment). */
static u64 second_output(const struct pmidx_cmd *c, int ret)
{
	switch (c->op) {
	case PMIDX_OP_GET:
		return ret == 0 || ret == -ENOSPC ? c->val_len : 0;
	case PMIDX_OP_SCAN:
		if (ret == -ENOSPC)
			return c->val_len;
		return ret ? 0 : c->val_len |
			(c->flags & PMIDX_SCAN_MORE ? PMIDX_URING_SCAN_MORE : 0);
	case PMIDX_OP_LOOKUP:
	case PMIDX_OP_CHECK:
		return ret ? 0 : c->result;
	case PMIDX_OP_BATCH:
		/* the failed entries, or the position of a malformed one */
		return c->result;
	}
	return 0;
}

static int first_output(const struct pmidx_cmd *c, int ret)
{
	if (ret)
		return ret;
	switch (c->op) {
	case PMIDX_OP_GET:
		return c->val_len;
	case PMIDX_OP_SCAN:
		return c->count;
	case PMIDX_OP_LOOKUP:
		return c->index;
	}
	return 0;
}

int pmidx_uring_cmd(struct io_uring_cmd *ioucmd, unsigned int issue_flags)
{
	struct pmidx_pool_dev *d = ioucmd->file->private_data;
	unsigned int flags = pmidx_file_dispatch_flags(ioucmd->file);
	struct pmidx_cmd cmd __uninitialized;	/* all 80 bytes copied in */
	int ret;

	if (ioucmd->cmd_op != PMIDX_IOC_CMD)
		return -ENOTTY;
	/* a 64-byte SQE has only 16 command bytes */
	if (!(issue_flags & IO_URING_F_SQE128))
		return -EINVAL;
	memcpy(&cmd, pmidx_uring_cmd_payload(ioucmd), sizeof(cmd));
	if (issue_flags & IO_URING_F_NONBLOCK)
		flags |= PMIDX_DISPATCH_NOWAIT;
	ret = pmidx_dispatch(d->pool, &cmd, &pmidx_user_access, flags);
	if (ret == -EAGAIN && (flags & PMIDX_DISPATCH_NOWAIT)) {
		/* again, from an io_uring worker: the SQE must outlive its slot */
		pmidx_uring_cmd_keep_sqe(ioucmd);
		return -EAGAIN;
	}
	io_uring_cmd_done(ioucmd, first_output(&cmd, ret),
			  second_output(&cmd, ret), issue_flags);
	return -EIOCBQUEUED;
}
