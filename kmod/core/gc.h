/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Background garbage-collection thread framework: one kthread per user
 * (an index), woken by pmidx_gc_kick() or every @interval_ms, that calls
 * the owner's work function, which decides itself whether to collect
 * (thresholds are the owner's business).
 */
#ifndef _PMIDX_GC_H
#define _PMIDX_GC_H

#include <linux/atomic.h>
#include <linux/types.h>
#include <linux/wait.h>

struct task_struct;

/**
 * struct pmidx_gc - a GC thread
 * @task:     the kthread, NULL when not running
 * @wq:       where the thread sleeps
 * @kicked:   a run was asked for (bit 0)
 * @work:     called in the thread, in process context (may sleep)
 * @arg:      for @work
 * @interval: milliseconds between unprompted calls of @work
 * @runs:     calls of @work so far
 */
struct pmidx_gc {
	struct task_struct	*task;
	wait_queue_head_t	wq;
	unsigned long		kicked;
	void			(*work)(void *arg);
	void			*arg;
	unsigned int		interval;
	atomic64_t		runs;
};

int pmidx_gc_start(struct pmidx_gc *gc, const char *name,
		   void (*work)(void *arg), void *arg, unsigned int interval_ms);
void pmidx_gc_kick(struct pmidx_gc *gc);
void pmidx_gc_stop(struct pmidx_gc *gc);

#endif /* _PMIDX_GC_H */
