// SPDX-License-Identifier: GPL-2.0
/*
 * Background garbage-collection threads.
 *
 * The thread sleeps on a wait queue until kicked, or until the interval
 * passes, then calls the owner's work function. Kicks that arrive while
 * the work runs are remembered (one bit), so a kick is never lost and
 * never queued more than once. Stopping wakes the thread and waits for it.
 */
#include <linux/err.h>
#include <linux/jiffies.h>
#include <linux/kthread.h>
#include <linux/sched.h>
#include "gc.h"

static int gc_thread(void *data)
{
	struct pmidx_gc *gc = data;

	while (!kthread_should_stop()) {
		wait_event_interruptible_timeout(gc->wq,
				test_bit(0, &gc->kicked) || kthread_should_stop(),
				msecs_to_jiffies(gc->interval));
		if (kthread_should_stop())
			break;
		clear_bit(0, &gc->kicked);
		gc->work(gc->arg);
		atomic64_inc(&gc->runs);
		cond_resched();
	}
	return 0;
}

/**
 * pmidx_gc_start - start a GC thread named @name calling @work
 *
 * Context: process context.
 * Return: 0 or a negative errno.
 */
int pmidx_gc_start(struct pmidx_gc *gc, const char *name,
		   void (*work)(void *arg), void *arg, unsigned int interval_ms)
{
	struct task_struct *t;

	init_waitqueue_head(&gc->wq);
	gc->kicked = 0;
	gc->work = work;
	gc->arg = arg;
	gc->interval = interval_ms ? interval_ms : 1000;
	atomic64_set(&gc->runs, 0);
	t = kthread_run(gc_thread, gc, "%s", name);
	if (IS_ERR(t)) {
		gc->task = NULL;
		return PTR_ERR(t);
	}
	gc->task = t;
	return 0;
}

/**
 * pmidx_gc_kick - ask for a run of the work function soon
 *
 * Context: any; does not sleep.
 */
void pmidx_gc_kick(struct pmidx_gc *gc)
{
	if (!gc->task || test_and_set_bit(0, &gc->kicked))
		return;
	wake_up(&gc->wq);
}

/**
 * pmidx_gc_stop - stop the thread, waiting for a running work call
 *
 * Context: process context; sleeps.
 */
void pmidx_gc_stop(struct pmidx_gc *gc)
{
	if (!gc->task)
		return;
	kthread_stop(gc->task);
	gc->task = NULL;
}
