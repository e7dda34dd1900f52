/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The io_uring passthrough path for the data-path tests: every command is
 * one IORING_OP_URING_CMD on a SQE128/CQE32 ring, and the completion's
 * outputs are folded back into the struct pmidx_cmd the way the ioctl
 * would have written them, so the same assertions hold for both paths.
 *
 * liburing 2.3 (Debian 12) has no io_uring_prep_uring_cmd(): the SQE is
 * filled by hand. One ring per thread and process (fork-safe).
 */
#ifndef PMIDX_SELFTEST_URING_H
#define PMIDX_SELFTEST_URING_H

#include <liburing.h>
#include <unistd.h>
#include "pmidx_data.h"

static __thread struct io_uring uring_ring;
static __thread pid_t uring_owner;

static inline struct io_uring *uring_get(void)
{
	if (uring_owner != getpid()) {
		if (io_uring_queue_init(8, &uring_ring,
					IORING_SETUP_SQE128 | IORING_SETUP_CQE32))
			return NULL;
		uring_owner = getpid();
	}
	return &uring_ring;
}

/* Fold a completion back into @c, as the ioctl would have left it. */
static inline void uring_outputs(struct pmidx_cmd *c, int res, uint64_t big)
{
	switch (c->op) {
	case PMIDX_OP_GET:
		if (res >= 0 || res == -ENOSPC)
			c->val_len = big;
		break;
	case PMIDX_OP_SCAN:
		if (res == -ENOSPC) {
			c->val_len = big;
		} else if (res >= 0) {
			c->count = res;
			c->val_len = big & ~PMIDX_URING_SCAN_MORE;
			if (big & PMIDX_URING_SCAN_MORE)
				c->flags |= PMIDX_SCAN_MORE;
		}
		break;
	case PMIDX_OP_LOOKUP:
		if (res >= 0) {
			c->index = res;
			c->result = big;
		}
		break;
	case PMIDX_OP_CHECK:
		if (res >= 0)
			c->result = big;
		break;
	case PMIDX_OP_BATCH:	/* failed entries, or the malformed one */
		c->result = big;
		break;
	}
}

static inline int uring_cmd(int fd, struct pmidx_cmd *c)
{
	struct io_uring *ring = uring_get();
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	uint64_t big;
	int res;

	if (!ring)
		return -ENOMEM;
	sqe = io_uring_get_sqe(ring);
	if (!sqe)
		return -EBUSY;
	memset(sqe, 0, 128);
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = fd;
	sqe->cmd_op = PMIDX_IOC_CMD;
	memcpy(sqe->cmd, c, sizeof(*c));
	res = io_uring_submit(ring);
	if (res != 1)
		return res < 0 ? res : -EIO;
	res = io_uring_wait_cqe(ring, &cqe);
	if (res)
		return res;
	res = cqe->res;
	big = cqe->big_cqe[0];
	io_uring_cqe_seen(ring, cqe);
	uring_outputs(c, res, big);
	return res < 0 ? res : 0;
}

static const struct path_ops uring_path = {
	.name	= "uring",
	.cmd	= uring_cmd,
};

#endif /* PMIDX_SELFTEST_URING_H */
