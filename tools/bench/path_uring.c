// SPDX-License-Identifier: GPL-2.0
/*
 * The uring path: each thread has a libpmidx ring of --qd entries on the
 * pool's char device and keeps it full. An entry is one operation
 * (--batch 1: one SQE per op, get/put/del/scan) or one BATCH command of
 * --batch operations. Everything queued goes to the kernel in one
 * io_uring_enter() per pmidx_ring_wait(); completions come back through
 * callbacks. Latency is per operation from queueing to completion; the
 * operations of a BATCH share its latency.
 *
 * The ring is opened with PMIDX_RING_NO_FALLBACK: if the kernel cannot
 * do io_uring passthrough the run fails instead of measuring ioctls.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

struct uring_slot {
	struct uring_thread	*ut;
	struct op_buf		*bufs;		/* --batch of them */
	struct pmidx_req	*reqs;		/* --batch of them */
	unsigned int		n;		/* operations in flight */
	uint64_t		t0;
	struct uring_slot	*next;		/* free list */
};

struct uring_thread {
	struct bench_thread	*t;
	struct pmidx_ring	*ring;
	struct uring_slot	*slots, *free;
	unsigned int		nslots, batch;
	uint64_t		issued;
};

static void slot_put(struct uring_thread *ut, struct uring_slot *s)
{
	s->next = ut->free;
	ut->free = s;
}

/* A completion: latency, errors, the slot back on the free list. */
static void slot_done(struct uring_slot *s, uint64_t errors, int fatal)
{
	struct uring_thread *ut = s->ut;

	bench_done(ut->t, bench_now_ns() - s->t0, s->n, errors);
	if (fatal && !ut->t->err)
		ut->t->err = fatal;
	slot_put(ut, s);
}

static void single_done(struct pmidx_ring *r, const struct pmidx_completion *c)
{
	slot_done(c->user_data, c->res != 0,
		  bench_err_expected(c->res) ? 0 : c->res);
}

static void batch_done(struct pmidx_ring *r, const struct pmidx_completion *c)
{
	struct uring_slot *s = c->user_data;
	uint64_t errors = 0;
	int fatal = c->res;
	unsigned int i;

	for (i = 0; !fatal && i < s->n; i++) {
		errors += s->reqs[i].res != 0;
		if (!bench_err_expected(s->reqs[i].res))
			fatal = s->reqs[i].res;
	}
	slot_done(s, errors, fatal);
}

static int queue_single(struct uring_thread *ut, struct uring_slot *s,
			const struct pmidx_req *q)
{
	struct pmidx_ring *r = ut->ring;

	switch (q->type) {
	case PMIDX_REQ_GET:
		return pmidx_ring_get(r, q->idx, q->key, q->key_len, q->val,
				      q->val_len, single_done, s);
	case PMIDX_REQ_PUT:
		return pmidx_ring_put(r, q->idx, q->key, q->key_len, q->val,
				      q->val_len, q->flags, single_done, s);
	case PMIDX_REQ_DEL:
		return pmidx_ring_del(r, q->idx, q->key, q->key_len,
				      single_done, s);
	default:
		return pmidx_ring_scan(r, q->idx, q->key, q->key_len, NULL, 0,
				       q->count, 0, q->val, q->val_len,
				       single_done, s);
	}
}

/* Fill slot @s with the next operations and queue it. */
static int slot_queue(struct uring_thread *ut, struct uring_slot *s)
{
	struct bench_thread *t = ut->t;
	struct bench_op op;
	unsigned int i;
	int ret;

	s->n = t->ops - ut->issued < ut->batch ? t->ops - ut->issued : ut->batch;
	for (i = 0; i < s->n; i++) {
		wl_next(&t->gen, t->run->wl, &op);
		bench_req(t->run, &op, &s->bufs[i], ut->issued + i, &s->reqs[i]);
	}
	s->t0 = bench_now_ns();
	if (ut->batch > 1)
		ret = pmidx_ring_batch(ut->ring, s->reqs, s->n, batch_done, s);
	else
		ret = queue_single(ut, s, &s->reqs[0]);
	if (!ret)
		ut->issued += s->n;
	return ret;
}

static void uring_loop(struct uring_thread *ut)
{
	struct bench_thread *t = ut->t;
	struct uring_slot *s;
	int ret;

	while (!t->err && (ut->issued < t->ops || pmidx_ring_busy(ut->ring))) {
		while (ut->free && ut->issued < t->ops) {
			s = ut->free;
			ut->free = s->next;
			ret = slot_queue(ut, s);
			if (ret) {
				t->err = ret;
				snprintf(t->why, sizeof(t->why), "queueing");
				return;
			}
		}
		ret = pmidx_ring_wait(ut->ring, 1);
		if (ret < 0) {
			t->err = ret;
			snprintf(t->why, sizeof(t->why), "pmidx_ring_wait");
		}
	}
}

static void slots_free(struct uring_thread *ut)
{
	unsigned int i, j;

	for (i = 0; ut->slots && i < ut->nslots; i++) {
		for (j = 0; ut->slots[i].bufs && j < ut->batch; j++)
			op_buf_free(&ut->slots[i].bufs[j]);
		free(ut->slots[i].bufs);
		free(ut->slots[i].reqs);
	}
	free(ut->slots);
}

static int slots_alloc(struct uring_thread *ut, const struct bench_cfg *c)
{
	struct uring_slot *s;
	unsigned int i, j;
	int ret = 0;

	ut->nslots = c->qd;
	ut->batch = c->batch;
	ut->slots = calloc(ut->nslots, sizeof(*ut->slots));
	if (!ut->slots)
		return -ENOMEM;
	for (i = 0; !ret && i < ut->nslots; i++) {
		s = &ut->slots[i];
		s->ut = ut;
		s->bufs = calloc(ut->batch, sizeof(*s->bufs));
		s->reqs = calloc(ut->batch, sizeof(*s->reqs));
		if (!s->bufs || !s->reqs)
			ret = -ENOMEM;
		for (j = 0; !ret && j < ut->batch; j++)
			ret = op_buf_alloc(&s->bufs[j], c);
		slot_put(ut, s);
	}
	return ret;
}

static void uring_thread(struct bench_thread *t)
{
	const struct bench_cfg *c = t->run->cfg;
	struct uring_thread ut = { .t = t };

	t->err = slots_alloc(&ut, c);
	if (!t->err) {
		t->err = pmidx_ring_open(t->run->pool, c->qd,
					 PMIDX_RING_NO_FALLBACK |
					 (c->sqpoll ? PMIDX_RING_SQPOLL : 0),
					 &ut.ring);
		if (t->err)
			snprintf(t->why, sizeof(t->why),
				 "no io_uring passthrough (pmidx_ring_open)");
	}
	if (!t->err) {
		uring_loop(&ut);
		pmidx_ring_close(ut.ring);
	}
	slots_free(&ut);
}

const struct bench_path_ops bench_path_uring = {
	.name	= "uring",
	.open	= bench_open_index,
	.close	= bench_close_index,
	.thread	= uring_thread,
	.has_pct = true,
};
