// SPDX-License-Identifier: GPL-2.0
/*
 * Fan-out helper for recovery and self-tests: worker 0 runs on the
 * calling thread, every other one as a work item on the unbound system
 * workqueue, so workers spread over idle CPUs (and one worker costs no
 * hand-off at all).
 */
#include <linux/slab.h>
#include <linux/workqueue.h>
#include "parallel.h"

struct par_work {
	struct work_struct	work;
	int			(*fn)(void *arg, unsigned int i);
	void			*arg;
	unsigned int		i;
	int			ret;
};

static void par_work_fn(struct work_struct *work)
{
	struct par_work *w = container_of(work, struct par_work, work);

	w->ret = w->fn(w->arg, w->i);
}

int pmidx_run_parallel(unsigned int n, int (*fn)(void *arg, unsigned int i),
		       void *arg)
{
	struct par_work *w;
	unsigned int i;
	int ret;

	if (n <= 1)
		return n ? fn(arg, 0) : 0;
	w = kcalloc(n, sizeof(*w), GFP_KERNEL);
	if (!w)
		return -ENOMEM;
	for (i = 1; i < n; i++) {
		w[i].fn = fn;
		w[i].arg = arg;
		w[i].i = i;
		INIT_WORK(&w[i].work, par_work_fn);
		queue_work(system_unbound_wq, &w[i].work);
	}
	ret = fn(arg, 0);
	for (i = 1; i < n; i++) {
		flush_work(&w[i].work);
		if (!ret)
			ret = w[i].ret;
	}
	kfree(w);
	return ret;
}
