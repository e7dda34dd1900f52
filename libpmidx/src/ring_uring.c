// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The io_uring ring backend: each operation is one IORING_OP_URING_CMD
 * SQE (cmd_op PMIDX_IOC_CMD, the struct pmidx_cmd in the 80-byte command
 * area of a 128-byte SQE) on the pool's char device, with the slot
 * number as user_data. The kernel does not write outputs into the SQE:
 * they come in the CQE (res and, with CQE32, big_cqe[0]; see
 * uapi/linux/pmidx.h) and are folded back into the slot's command the
 * way the ioctl would have left them, so ring_finish() reads one format.
 *
 * liburing 2.3 (Debian 12) has no io_uring_prep_uring_cmd(): the SQE is
 * filled by hand. The pool's fd is not registered as a fixed file: the
 * ring's teardown runs after close() returns and would hold the pool's
 * file open for a while after pmidx_ring_close(), so that detaching the
 * pool right after could fail with -EBUSY; the saving, one file lookup
 * per command, measured 0.3 % of the samples. The SQ has at least @depth
 * entries and the CQ twice that, and at most @depth operations are
 * undelivered, so neither can
 * overflow.
 */
#include <errno.h>
#include <sched.h>
#include <string.h>

#include "ring.h"

#define PROBE_NAME	"pmidx-ring-probe"
#define SQPOLL_IDLE_MS	50	/* PMIDX_RING_SQPOLL: poll this long idle */

static void uring_prep(struct pmidx_ring *r, struct io_uring_sqe *sqe,
		       const struct pmidx_cmd *c, uint64_t user_data)
{
	memset(sqe, 0, 128);
	io_uring_prep_rw(IORING_OP_URING_CMD, sqe, r->pool->fd, NULL, 0, 0);
	sqe->cmd_op = PMIDX_IOC_CMD;
	memcpy(sqe->cmd, c, sizeof(*c));
	io_uring_sqe_set_data64(sqe, user_data);
}

/* Fold a completion back into @c, as the ioctl would have left it. */
static void uring_outputs(struct pmidx_cmd *c, int res, uint64_t big)
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
			c->flags |= big & PMIDX_URING_SCAN_MORE ?
				    PMIDX_SCAN_MORE : 0;
		}
		break;
	case PMIDX_OP_BATCH:
		/* failed entries, or on refusal the malformed entry's position */
		c->result = big;
		break;
	}
}

static int uring_wait_cqe(struct pmidx_ring *r, struct io_uring_cqe **cqe)
{
	int ret;

	do {
		ret = io_uring_wait_cqe(&r->uring, cqe);
	} while (ret == -EINTR);
	return ret;
}

/*
 * Can the kernel run our commands? A LOOKUP of an unlikely name answers
 * 0 or -ENOENT from a pmidx pool; a kernel or file without uring_cmd for
 * it says -EOPNOTSUPP (or -EINVAL, -ENOTTY).
 */
static int uring_probe(struct pmidx_ring *r)
{
	struct pmidx_cmd c = {
		.op = PMIDX_OP_LOOKUP, .key = pmidx_ptr(PROBE_NAME),
		.key_len = sizeof(PROBE_NAME) - 1,
	};
	struct io_uring_sqe *sqe = io_uring_get_sqe(&r->uring);
	struct io_uring_cqe *cqe;
	int ret;

	if (!sqe)
		return -EBUSY;
	uring_prep(r, sqe, &c, 0);
	ret = io_uring_submit(&r->uring);
	if (ret < 0)
		return ret;
	/* SQPOLL counts what its thread has not taken yet: maybe none */
	if (ret != 1 && !(r->uring.flags & IORING_SETUP_SQPOLL))
		return -EIO;
	ret = uring_wait_cqe(r, &cqe);
	if (ret)
		return ret;
	ret = cqe->res;
	io_uring_cqe_seen(&r->uring, cqe);
	return ret == -ENOENT || ret >= 0 ? 0 : ret;
}

int pmidx_ring_uring_init(struct pmidx_ring *r, bool sqpoll)
{
	struct io_uring_params p = {
		.flags = IORING_SETUP_SQE128 | IORING_SETUP_CQE32,
	};
	int ret;

	if (sqpoll) {
		p.flags |= IORING_SETUP_SQPOLL;
		p.sq_thread_idle = SQPOLL_IDLE_MS;
	}
	/* SQPOLL: room for what is queued and what the thread took (below) */
	ret = io_uring_queue_init_params(sqpoll ? 2 * r->depth : r->depth,
					 &r->uring, &p);
	if (ret && sqpoll)	/* refused (old kernel, no privilege): without */
		return pmidx_ring_uring_init(r, false);
	if (ret)
		return ret;
	ret = uring_probe(r);
	if (ret)
		io_uring_queue_exit(&r->uring);
	return ret;
}

/*
 * Hand the queued SQEs to the kernel. With SQPOLL, io_uring_submit()
 * publishes every queued one and counts all the SQ holds, taken or not.
 */
static int uring_submit(struct pmidx_ring *r)
{
	int ret;

	do {
		ret = io_uring_submit(&r->uring);
	} while (ret == -EINTR);
	if (ret >= 0 && (r->uring.flags & IORING_SETUP_SQPOLL))
		ret = r->queued;
	if (ret > 0)
		ring_submitted(r, ret);
	return ret;
}

/*
 * Without SQPOLL the SQ (@depth entries) always has room: each submit
 * empties it. With SQPOLL an SQE leaves the SQ only when the polling
 * thread moves the head, after it has issued its whole pass, and an
 * operation can complete (freeing its slot for a new one) before that:
 * so the SQ has 2 * @depth entries, at most @depth queued or in flight
 * and at most @depth taken but not yet released. Should it still be full,
 * wait for the thread; never submit to make room, which would run
 * operations the caller has only queued.
 */
static int uring_queue(struct pmidx_ring *r, uint32_t i)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&r->uring);
	int ret;

	while (!sqe && (r->uring.flags & IORING_SETUP_SQPOLL)) {
		ret = io_uring_sqring_wait(&r->uring);
		if (ret < 0 && ret != -EINTR)
			return ret;
		sqe = io_uring_get_sqe(&r->uring);
		/* some kernels wake the waiter before the head moves */
		if (!sqe)
			sched_yield();
	}
	if (!sqe)
		return -EBUSY;
	uring_prep(r, sqe, &r->slots[i].cmd, i);
	return 0;
}

static void uring_complete(struct pmidx_ring *r, const struct io_uring_cqe *cqe)
{
	uint64_t i = cqe->user_data;
	struct ring_slot *s;

	if (i >= r->depth)
		return;		/* not ours: nothing else submits here */
	s = &r->slots[i];
	uring_outputs(&s->cmd, cqe->res, cqe->big_cqe[0]);
	ring_finish(r, i, cqe->res < 0 ? cqe->res : 0);
}

static int uring_reap(struct pmidx_ring *r, bool wait)
{
	struct io_uring_cqe *cqe;
	unsigned int head, n = 0;
	int ret;

	if (wait) {
		ret = uring_wait_cqe(r, &cqe);
		if (ret)
			return ret;
	}
	io_uring_for_each_cqe(&r->uring, head, cqe) {
		uring_complete(r, cqe);
		n++;
	}
	io_uring_cq_advance(&r->uring, n);
	return n;
}

/*
 * Queued SQEs were never made visible to the kernel (liburing publishes
 * the SQ tail only on submit), so they never run. Submitted ones are
 * waited for, so that no command touches the caller's buffers after
 * pmidx_ring_close() returns.
 */
static void uring_exit(struct pmidx_ring *r)
{
	struct io_uring_cqe *cqe;

	while (r->inflight && !uring_wait_cqe(r, &cqe)) {
		io_uring_cqe_seen(&r->uring, cqe);
		r->inflight--;
	}
	io_uring_queue_exit(&r->uring);
}

const struct ring_backend pmidx_ring_uring = {
	.name	= "uring",
	.queue	= uring_queue,
	.submit	= uring_submit,
	.reap	= uring_reap,
	.exit	= uring_exit,
};
