/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _SHIM_LINUX_COMPLETION_H
#define _SHIM_LINUX_COMPLETION_H

#include <linux/types.h>
#include <linux/wait.h>

struct completion {
	unsigned int		done;
	wait_queue_head_t	wait;
};

#define COMPLETION_INITIALIZER(work) \
	{ 0, __WAIT_QUEUE_HEAD_INITIALIZER((work).wait) }
#define DECLARE_COMPLETION(work) \
	struct completion work = COMPLETION_INITIALIZER(work)

static inline void init_completion(struct completion *x)
{
	x->done = 0;
	init_waitqueue_head(&x->wait);
}

static inline void reinit_completion(struct completion *x)
{
	__atomic_store_n(&x->done, 0, __ATOMIC_RELAXED);
}

static inline void complete(struct completion *x)
{
	pthread_mutex_lock(&x->wait.lock);
	if (x->done != ~0U)
		x->done++;
	pthread_mutex_unlock(&x->wait.lock);
	__wake_up(&x->wait);
}

static inline void complete_all(struct completion *x)
{
	pthread_mutex_lock(&x->wait.lock);
	x->done = ~0U;
	pthread_mutex_unlock(&x->wait.lock);
	__wake_up(&x->wait);
}

/* consume one completion if there is one */
static inline bool __shim_try_complete(struct completion *x)
{
	bool ok;

	pthread_mutex_lock(&x->wait.lock);
	ok = x->done > 0;
	if (ok && x->done != ~0U)
		x->done--;
	pthread_mutex_unlock(&x->wait.lock);
	return ok;
}

#define wait_for_completion(x) \
	wait_event((x)->wait, __shim_try_complete(x))
#define wait_for_completion_interruptible(x) \
	wait_event_interruptible((x)->wait, __shim_try_complete(x))
#define wait_for_completion_timeout(x, t) \
	wait_event_timeout((x)->wait, __shim_try_complete(x), t)

static inline bool completion_done(struct completion *x)
{
	return __atomic_load_n(&x->done, __ATOMIC_RELAXED) != 0;
}

#endif
