// SPDX-License-Identifier: GPL-2.0
/*
 * Allocator exercise driven from netlink (and from the userspace tests):
 *
 * STORM: every worker keeps a window of live objects, allocating and
 * freeing at random. Each object is stamped with its offset and a
 * per-worker tag at both ends; a stamp found changed at free time means
 * two live objects overlapped. At the end everything is freed and the
 * accounting must be back where it started.
 *
 * LEAK: allocate and abandon, which is what a crash between allocate and
 * link leaves behind. The pool is flagged so that detach does not write
 * a clean state and the next attach traces; recovery must free them all.
 */
#include <linux/errno.h>
#include <linux/prandom.h>
#include <linux/printk.h>
#include <linux/slab.h>
#include <linux/sched/signal.h>
#include "alloc_test.h"
#include "parallel.h"

#define WINDOW	64

struct test_ctx {
	struct pmidx_pool		*pool;
	const struct pmidx_alloc_test	*t;
	atomic_t			overlaps;
	atomic_t			failures;
	bool				stop;	/* the caller got a fatal signal */
};

/*
 * Worker 0 runs on the caller (parallel.c): it notices a fatal signal and
 * stops every worker, so a killed admin command returns promptly.
 */
static bool test_stopping(struct test_ctx *ctx, unsigned int w)
{
	if (w == 0 && fatal_signal_pending(current))
		WRITE_ONCE(ctx->stop, true);
	return READ_ONCE(ctx->stop);
}

static u64 stamp(u64 off, unsigned int worker)
{
	return off ^ ((u64)worker << 48) ^ 0x5a5a5a5a5a5a5a5aULL;
}

static size_t pick_size(struct rnd_state *rs, u32 fixed)
{
	u32 r = prandom_u32_state(rs);

	if (fixed)
		return fixed;
	if ((r & 255) == 0)		/* occasionally a multi-chunk run */
		return PMIDX_CHUNK_SIZE + (r >> 8) % (2 * PMIDX_CHUNK_SIZE);
	return 8 + (r >> 8) % (r & 1 ? 512 : 16384);
}

/* Stamp positions: first and last word (one word for tiny objects). */
static u64 *obj_tail(struct pmidx_pool *pool, u64 off, size_t size)
{
	if (size < 2 * sizeof(u64))
		return pmidx_ptr(&pool->pm, off);
	return pmidx_ptr(&pool->pm, off + size - sizeof(u64));
}

static void obj_stamp(struct pmidx_pool *pool, u64 off, size_t size, u64 v)
{
	u64 *head = pmidx_ptr(&pool->pm, off);
	u64 *tail = obj_tail(pool, off, size);

	WRITE_ONCE(*head, v);
	WRITE_ONCE(*tail, v);
}

static bool obj_check(struct pmidx_pool *pool, u64 off, size_t size, u64 v)
{
	u64 *head = pmidx_ptr(&pool->pm, off);
	u64 *tail = obj_tail(pool, off, size);

	if (READ_ONCE(*head) == v && READ_ONCE(*tail) == v)
		return true;
	pr_err_ratelimited("pmidx: object %#llx (%zu bytes) overwritten: %#llx %#llx, want %#llx\n",
			   off, size, READ_ONCE(*head), READ_ONCE(*tail), v);
	return false;
}

static int storm_worker(void *arg, unsigned int w)
{
	struct test_ctx *ctx = arg;
	struct pmidx_alloc *a = &ctx->pool->alloc;
	u64 offs[WINDOW] = {};
	size_t sizes[WINDOW] = {};
	struct rnd_state rs;
	unsigned int n = 0, i;
	u32 op;

	prandom_seed_state(&rs, ctx->t->seed + w);
	for (op = 0; op < ctx->t->ops && !test_stopping(ctx, w); op++) {
		bool do_free = n == WINDOW ||
			       (n && prandom_u32_state(&rs) % 3 == 0);

		if (do_free) {
			i = prandom_u32_state(&rs) % n;
			if (!obj_check(ctx->pool, offs[i], sizes[i],
				       stamp(offs[i], w)))
				atomic_inc(&ctx->overlaps);
			pmidx_free(a, offs[i]);
			offs[i] = offs[--n];
			sizes[i] = sizes[n];
			continue;
		}
		sizes[n] = pick_size(&rs, ctx->t->size);
		offs[n] = pmidx_alloc(a, sizes[n]);
		if (!offs[n]) {
			atomic_inc(&ctx->failures);
			continue;
		}
		obj_stamp(ctx->pool, offs[n], sizes[n], stamp(offs[n], w));
		n++;
		cond_resched();
	}
	for (i = 0; i < n; i++) {
		if (!obj_check(ctx->pool, offs[i], sizes[i], stamp(offs[i], w)))
			atomic_inc(&ctx->overlaps);
		pmidx_free(a, offs[i]);
	}
	return 0;
}

static int leak_worker(void *arg, unsigned int w)
{
	struct test_ctx *ctx = arg;
	struct rnd_state rs;
	u32 op;

	prandom_seed_state(&rs, ctx->t->seed + w);
	for (op = 0; op < ctx->t->ops && !test_stopping(ctx, w); op++) {
		size_t size = pick_size(&rs, ctx->t->size);
		u64 off = pmidx_alloc(&ctx->pool->alloc, size);

		if (!off) {
			atomic_inc(&ctx->failures);
			continue;
		}
		/* Written and flushed like a real object, then abandoned. */
		obj_stamp(ctx->pool, off, size, stamp(off, w));
		pmidx_persist(&ctx->pool->pm, pmidx_ptr(&ctx->pool->pm, off),
			      sizeof(u64));
		cond_resched();
	}
	return 0;
}

/**
 * pmidx_alloc_test_run - run an allocator exercise on @pool
 *
 * Return: 0; -EUCLEAN on overlapping objects or accounting drift;
 * -ENOSPC when every allocation failed; -EINTR when a fatal signal
 * stopped it.
 */
int pmidx_alloc_test_run(struct pmidx_pool *pool,
			 const struct pmidx_alloc_test *t, const char **why)
{
	struct pmidx_alloc_stats before, after;
	struct test_ctx ctx = { .pool = pool, .t = t };
	int ret;

	atomic_set(&ctx.overlaps, 0);
	atomic_set(&ctx.failures, 0);
	pmidx_alloc_get_stats(&pool->alloc, &before);
	if (t->mode == PMIDX_ALLOC_TEST_LEAK) {
		mutex_lock(&pool->lock);
		pool->needs_trace = true;
		mutex_unlock(&pool->lock);
		ret = pmidx_run_parallel(t->threads, leak_worker, &ctx);
		return ret ?: ctx.stop ? -EINTR : 0;
	}
	ret = pmidx_run_parallel(t->threads, storm_worker, &ctx);
	if (ret)
		return ret;
	if (ctx.stop)
		return -EINTR;
	pmidx_alloc_get_stats(&pool->alloc, &after);
	if (atomic_read(&ctx.overlaps)) {
		*why = "allocator handed out overlapping objects";
		return -EUCLEAN;
	}
	/* Chunks may stay cached per CPU; live objects and bytes may not. */
	if (before.used_bytes != after.used_bytes ||
	    before.objects != after.objects) {
		*why = "allocator accounting differs after freeing everything";
		return -EUCLEAN;
	}
	if (atomic_read(&ctx.failures) == t->ops * t->threads) {
		*why = "every allocation failed";
		return -ENOSPC;
	}
	return 0;
}
