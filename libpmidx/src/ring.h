/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Ring internals (ring.c, ring_uring.c, ring_sync.c).
 *
 * A ring has @depth slots, one per operation from the submission call
 * until its completion is delivered. A slot holds the operation's
 * struct pmidx_cmd (and for a BATCH its entry array and the caller's
 * requests), then its completion. Slots move between singly linked
 * FIFOs: free -> (queued in the backend) -> done (completed, not yet
 * delivered) -> free, or -> kept (callback-less, until polled) -> free.
 *
 * The backend is how queued operations reach the kernel: io_uring
 * passthrough, or synchronous commands through the pool's own path.
 * Both report a finished operation with ring_finish(), which only files
 * the slot in the done FIFO: callbacks run when the generic code
 * delivers it, inside pmidx_ring_wait() or pmidx_ring_poll().
 */
#ifndef LIBPMIDX_RING_H
#define LIBPMIDX_RING_H

#include <liburing.h>

#include "internal.h"

#define SLOT_NONE	UINT32_MAX

struct ring_slot {
	struct pmidx_cmd	cmd;
	pmidx_done_fn		done;
	void			*user_data;
	struct pmidx_req	*reqs;		/* BATCH: the caller's requests, */
	unsigned int		nreqs;		/* ... how many */
	struct pmidx_cmd	*ents;		/* BATCH: entry array ... */
	unsigned int		ents_cap;	/* ... and its capacity */
	struct pmidx_completion	c;
	uint32_t		next;		/* FIFO link */
};

struct slot_fifo {
	uint32_t	head, tail;
};

struct ring_backend {
	const char *name;
	/* Take slot @i as the next operation to submit. 0 or -errno. */
	int (*queue)(struct pmidx_ring *r, uint32_t i);
	/*
	 * Submit what is queued, accounted with ring_submitted(). Return:
	 * operations submitted, or -errno.
	 */
	int (*submit)(struct pmidx_ring *r);
	/*
	 * Finish the operations the kernel has completed (ring_finish());
	 * with @wait, first block until there is at least one. Return:
	 * operations finished, or -errno.
	 */
	int (*reap)(struct pmidx_ring *r, bool wait);
	/* Wait for everything in flight and release the backend. */
	void (*exit)(struct pmidx_ring *r);
};

struct pmidx_ring {
	struct pmidx_pool		*pool;
	const struct ring_backend	*be;
	int				why;	/* reason it is not io_uring */
	unsigned int			depth;
	struct ring_slot		*slots;
	struct slot_fifo		free, done, kept;
	unsigned int			queued;	  /* accepted, not submitted */
	unsigned int			inflight; /* submitted, not finished */
	bool				delivering; /* inside a callback */
	/* synchronous backend: queued slots, in order */
	struct slot_fifo		pending;
	/* io_uring backend */
	struct io_uring			uring;
};

extern const struct ring_backend pmidx_ring_uring;
extern const struct ring_backend pmidx_ring_sync;

/*
 * Set up the io_uring backend on @r (depth and pool set), with a polling
 * submission thread if @sqpoll. Return: 0, or why it cannot be used: the
 * error of io_uring setup or of a probe command the kernel refused.
 */
int pmidx_ring_uring_init(struct pmidx_ring *r, bool sqpoll);

/* The backend handed @n queued operations to the kernel. */
static inline void ring_submitted(struct pmidx_ring *r, unsigned int n)
{
	r->queued -= n;
	r->inflight += n;
}

void slot_fifo_push(struct pmidx_ring *r, struct slot_fifo *f, uint32_t i);
uint32_t slot_fifo_pop(struct pmidx_ring *r, struct slot_fifo *f);

/*
 * The operation in slot @i completed with @ret (0 or -errno) and its
 * outputs in slot->cmd, as the ioctl leaves them (for a BATCH that was
 * refused, cmd.result is the malformed entry's position if known, else
 * U64_MAX).
 */
void ring_finish(struct pmidx_ring *r, uint32_t i, int ret);

#endif /* LIBPMIDX_RING_H */
