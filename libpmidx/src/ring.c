// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Asynchronous rings: slots, submission, completion delivery and the
 * choice between the io_uring and the synchronous backend (ring.h).
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "ring.h"

void slot_fifo_push(struct pmidx_ring *r, struct slot_fifo *f, uint32_t i)
{
	r->slots[i].next = SLOT_NONE;
	if (f->tail == SLOT_NONE)
		f->head = i;
	else
		r->slots[f->tail].next = i;
	f->tail = i;
}

uint32_t slot_fifo_pop(struct pmidx_ring *r, struct slot_fifo *f)
{
	uint32_t i = f->head;

	if (i != SLOT_NONE) {
		f->head = r->slots[i].next;
		if (f->head == SLOT_NONE)
			f->tail = SLOT_NONE;
	}
	return i;
}

static void slot_fifo_init(struct slot_fifo *f)
{
	f->head = f->tail = SLOT_NONE;
}

/* ---- open and close ----------------------------------------------------- */

static bool sync_forced(unsigned int flags)
{
	const char *env = getenv("PMIDX_RING_SYNC");

	return (flags & PMIDX_RING_SYNC) || (env && *env && strcmp(env, "0"));
}

/* Pick the backend: io_uring when it works, else synchronous commands. */
static int ring_pick_backend(struct pmidx_ring *r, unsigned int flags)
{
	int why = 0;

	if (!sync_forced(flags)) {
		why = r->pool->fd < 0 ? -EOPNOTSUPP :
		      pmidx_ring_uring_init(r, flags & PMIDX_RING_SQPOLL);
		if (!why) {
			r->be = &pmidx_ring_uring;
			return 0;
		}
		if (flags & PMIDX_RING_NO_FALLBACK)
			return why;
	} else if (flags & PMIDX_RING_NO_FALLBACK) {
		return -EINVAL;
	}
	r->be = &pmidx_ring_sync;
	r->why = why;
	return 0;
}

int pmidx_ring_open(struct pmidx_pool *pool, unsigned int depth,
		    unsigned int flags, struct pmidx_ring **ringp)
{
	struct pmidx_ring *r;
	unsigned int i;
	int ret;

	*ringp = NULL;
	if (!pool || !depth || depth > PMIDX_RING_DEPTH_MAX ||
	    (flags & ~(PMIDX_RING_SYNC | PMIDX_RING_NO_FALLBACK |
		       PMIDX_RING_SQPOLL)))
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->slots = calloc(depth, sizeof(*r->slots));
	if (!r->slots) {
		free(r);
		return -ENOMEM;
	}
	r->pool = pool;
	r->depth = depth;
	slot_fifo_init(&r->free);
	slot_fifo_init(&r->done);
	slot_fifo_init(&r->kept);
	slot_fifo_init(&r->pending);
	for (i = 0; i < depth; i++)
		slot_fifo_push(r, &r->free, i);
	ret = ring_pick_backend(r, flags);
	if (ret) {
		free(r->slots);
		free(r);
		return ret;
	}
	*ringp = r;
	return 0;
}

void pmidx_ring_close(struct pmidx_ring *r)
{
	unsigned int i;

	if (!r)
		return;
	r->be->exit(r);
	for (i = 0; i < r->depth; i++)
		free(r->slots[i].ents);
	free(r->slots);
	free(r);
}

int pmidx_ring_mode(const struct pmidx_ring *r, int *why)
{
	if (why)
		*why = r->why;
	return r->be == &pmidx_ring_uring ? PMIDX_RING_MODE_URING :
					    PMIDX_RING_MODE_SYNC;
}

unsigned int pmidx_ring_busy(const struct pmidx_ring *r)
{
	return r->queued + r->inflight;
}

/* ---- submission --------------------------------------------------------- */

static struct ring_slot *slot_get(struct pmidx_ring *r, uint32_t *ip,
				  pmidx_done_fn done, void *user_data)
{
	uint32_t i = slot_fifo_pop(r, &r->free);
	struct ring_slot *s;

	if (i == SLOT_NONE)
		return NULL;
	s = &r->slots[i];
	s->done = done;
	s->user_data = user_data;
	s->reqs = NULL;
	*ip = i;
	return s;
}

/* Hand a filled slot to the backend, or give it back on error. */
static int slot_queue(struct pmidx_ring *r, uint32_t i)
{
	int ret = r->be->queue(r, i);

	if (ret) {
		slot_fifo_push(r, &r->free, i);
		return ret;
	}
	r->queued++;
	return 0;
}

static int ring_req(struct pmidx_ring *r, const struct pmidx_req *q,
		    pmidx_done_fn done, void *user_data)
{
	struct ring_slot *s;
	uint32_t i;
	int ret;

	s = slot_get(r, &i, done, user_data);
	if (!s)
		return -EBUSY;
	ret = pmidx_req_to_cmd(q, r->pool, &s->cmd);
	if (ret) {
		slot_fifo_push(r, &r->free, i);
		return ret;
	}
	return slot_queue(r, i);
}

int pmidx_ring_get(struct pmidx_ring *r, struct pmidx_index *idx,
		   const void *key, size_t key_len, void *val, size_t val_cap,
		   pmidx_done_fn done, void *user_data)
{
	struct pmidx_req q = {
		.idx = idx, .type = PMIDX_REQ_GET, .key = key,
		.key_len = key_len, .val = val,
		.val_len = val_cap > UINT32_MAX ? UINT32_MAX : val_cap,
	};

	return ring_req(r, &q, done, user_data);
}

int pmidx_ring_put(struct pmidx_ring *r, struct pmidx_index *idx,
		   const void *key, size_t key_len, const void *val,
		   size_t val_len, unsigned int flags, pmidx_done_fn done,
		   void *user_data)
{
	struct pmidx_req q = {
		.idx = idx, .type = PMIDX_REQ_PUT, .flags = flags, .key = key,
		.key_len = key_len, .val = (void *)val, .val_len = val_len,
	};

	return ring_req(r, &q, done, user_data);
}

int pmidx_ring_del(struct pmidx_ring *r, struct pmidx_index *idx,
		   const void *key, size_t key_len, pmidx_done_fn done,
		   void *user_data)
{
	struct pmidx_req q = {
		.idx = idx, .type = PMIDX_REQ_DEL, .key = key,
		.key_len = key_len,
	};

	return ring_req(r, &q, done, user_data);
}

int pmidx_ring_scan(struct pmidx_ring *r, struct pmidx_index *idx,
		    const void *start, size_t start_len, const void *end,
		    size_t end_len, uint32_t count, unsigned int flags,
		    void *buf, size_t buf_len, pmidx_done_fn done,
		    void *user_data)
{
	struct pmidx_req q = {
		.idx = idx, .type = PMIDX_REQ_SCAN, .flags = flags,
		.key = start, .key_len = start_len, .end_key = end,
		.end_key_len = end_len, .val = buf,
		.val_len = buf_len > UINT32_MAX ? UINT32_MAX : buf_len,
		.count = count,
	};

	return ring_req(r, &q, done, user_data);
}

/* The slot's entry array, grown to @n entries. */
static int slot_ents(struct ring_slot *s, unsigned int n)
{
	struct pmidx_cmd *e;

	if (n <= s->ents_cap)
		return 0;
	e = realloc(s->ents, n * sizeof(*e));
	if (!e)
		return -ENOMEM;
	s->ents = e;
	s->ents_cap = n;
	return 0;
}

static int batch_fill(struct pmidx_ring *r, struct ring_slot *s,
		      struct pmidx_req *reqs, unsigned int n)
{
	unsigned int i;
	int ret;

	ret = slot_ents(s, n);
	for (i = 0; !ret && i < n; i++)
		ret = pmidx_req_to_cmd(&reqs[i], r->pool, &s->ents[i]);
	if (ret)
		return ret;
	pmidx_batch_cmd(&s->cmd, s->ents, n);
	s->reqs = reqs;
	s->nreqs = n;
	return 0;
}

int pmidx_ring_batch(struct pmidx_ring *r, struct pmidx_req *reqs,
		     unsigned int n, pmidx_done_fn done, void *user_data)
{
	struct ring_slot *s;
	uint32_t i;
	int ret;

	if (!reqs || !n || n > PMIDX_BATCH_MAX)
		return -EINVAL;
	s = slot_get(r, &i, done, user_data);
	if (!s)
		return -EBUSY;
	ret = batch_fill(r, s, reqs, n);
	if (ret) {
		slot_fifo_push(r, &r->free, i);
		return ret;
	}
	return slot_queue(r, i);
}

int pmidx_ring_submit(struct pmidx_ring *r)
{
	return r->queued ? r->be->submit(r) : 0;
}

/* ---- completion ---------------------------------------------------------- */

/* The completion of a BATCH: outputs into the caller's requests. */
static void batch_finish(struct ring_slot *s, int ret)
{
	unsigned int i, n = s->nreqs;

	if (ret) {
		pmidx_reqs_refused(s->reqs, n, ret, s->cmd.result);
		return;
	}
	for (i = 0; i < n; i++)
		pmidx_req_outputs(&s->reqs[i], &s->ents[i]);
	s->c.count = s->cmd.result;
}

void ring_finish(struct pmidx_ring *r, uint32_t i, int ret)
{
	struct ring_slot *s = &r->slots[i];
	struct pmidx_completion *c = &s->c;

	memset(c, 0, sizeof(*c));
	c->user_data = s->user_data;
	c->res = ret;
	c->type = s->cmd.op;
	switch (s->cmd.op) {
	case PMIDX_OP_GET:
		if (!ret || ret == -ENOSPC)
			c->len = s->cmd.val_len;
		break;
	case PMIDX_OP_SCAN:
		if (!ret || ret == -ENOSPC)
			c->len = s->cmd.val_len;
		if (!ret) {
			c->count = s->cmd.count;
			c->flags = s->cmd.flags & PMIDX_SCAN_MORE;
		}
		break;
	case PMIDX_OP_BATCH:
		batch_finish(s, ret);
		break;
	}
	r->inflight--;
	slot_fifo_push(r, &r->done, i);
}

/*
 * Deliver finished operations: call callbacks (the slot is free again
 * before its callback runs, so the callback may submit), keep the rest
 * for pmidx_ring_poll(). Return: operations delivered.
 */
static unsigned int ring_deliver(struct pmidx_ring *r)
{
	struct pmidx_completion c;
	struct ring_slot *s;
	unsigned int n = 0;
	pmidx_done_fn done;
	uint32_t i;

	while ((i = slot_fifo_pop(r, &r->done)) != SLOT_NONE) {
		s = &r->slots[i];
		n++;
		if (!s->done) {
			slot_fifo_push(r, &r->kept, i);
			continue;
		}
		c = s->c;
		done = s->done;
		slot_fifo_push(r, &r->free, i);
		r->delivering = true;
		done(r, &c);
		r->delivering = false;
	}
	return n;
}

/* Finish and deliver what is ready; with @wait, block for one first. */
static int ring_reap(struct pmidx_ring *r, bool wait)
{
	int ret = r->be->reap(r, wait);

	if (ret < 0)
		return ret;
	return ring_deliver(r);
}

int pmidx_ring_wait(struct pmidx_ring *r, unsigned int min)
{
	unsigned int n = 0;
	int ret;

	if (r->delivering)
		return -EDEADLK;
	for (;;) {
		ret = pmidx_ring_submit(r);
		if (ret >= 0)
			ret = ring_reap(r, false);
		if (ret < 0)
			break;
		n += ret;
		if (n >= min || (!r->queued && !r->inflight))
			break;
		if (r->queued)
			continue;	/* a callback queued more */
		ret = ring_reap(r, true);
		if (ret < 0)
			break;
		n += ret;
		if (n >= min)
			break;
	}
	return ret < 0 && !n ? ret : (int)(n > INT_MAX ? INT_MAX : n);
}

int pmidx_ring_poll(struct pmidx_ring *r, struct pmidx_completion *out,
		    unsigned int max)
{
	unsigned int n = 0;
	uint32_t i;
	int ret;

	if (r->delivering)
		return -EDEADLK;
	ret = pmidx_ring_submit(r);
	if (ret >= 0)
		ret = ring_reap(r, false);
	if (ret < 0 && r->kept.head == SLOT_NONE)
		return ret;
	while (n < max && (i = slot_fifo_pop(r, &r->kept)) != SLOT_NONE) {
		out[n++] = r->slots[i].c;
		slot_fifo_push(r, &r->free, i);
	}
	return n;
}
