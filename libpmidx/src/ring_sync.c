// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The synchronous ring backend: where io_uring cannot be used, each
 * queued operation runs through the pool's own path (the ioctl, or the
 * in-process dispatcher of a pool file) when the ring submits, in the
 * order it was queued. Nothing is ever in flight after a submit, so
 * reaping has nothing to do and waiting never blocks.
 */
#include <errno.h>

#include "ring.h"

static int sync_queue(struct pmidx_ring *r, uint32_t i)
{
	slot_fifo_push(r, &r->pending, i);
	return 0;
}

static int sync_submit(struct pmidx_ring *r)
{
	int n = 0, ret;
	uint32_t i;

	while ((i = slot_fifo_pop(r, &r->pending)) != SLOT_NONE) {
		ring_submitted(r, 1);
		ret = pmidx_cmd_run(r->pool, &r->slots[i].cmd);
		ring_finish(r, i, ret);
		n++;
	}
	return n;
}

static int sync_reap(struct pmidx_ring *r, bool wait)
{
	(void)r;
	(void)wait;
	return 0;
}

/* Queued operations never run; none is in flight. */
static void sync_exit(struct pmidx_ring *r)
{
	(void)r;
}

const struct ring_backend pmidx_ring_sync = {
	.name	= "sync",
	.queue	= sync_queue,
	.submit	= sync_submit,
	.reap	= sync_reap,
	.exit	= sync_exit,
};
