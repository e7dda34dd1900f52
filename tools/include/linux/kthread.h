/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Userspace shim: kernel threads are pthreads. kthread_create() leaves the
 * thread parked until wake_up_process(); kthread_stop() sets the stop
 * flag, wakes the thread wherever it sleeps (wait queue, schedule_timeout)
 * and joins it, returning the thread function's result (-EINTR if it
 * never ran).
 */
#ifndef _SHIM_LINUX_KTHREAD_H
#define _SHIM_LINUX_KTHREAD_H

#include <linux/types.h>
#include <linux/err.h>
#include <linux/sched.h>

struct task_struct *kthread_create(int (*threadfn)(void *data), void *data,
				   const char namefmt[], ...) __printf(3, 4);
int wake_up_process(struct task_struct *t);
int kthread_stop(struct task_struct *t);
bool kthread_should_stop(void);

#define kthread_run(threadfn, data, namefmt, ...) ({			\
	struct task_struct *__k =					\
		kthread_create(threadfn, data, namefmt, ##__VA_ARGS__);	\
	if (!IS_ERR(__k))						\
		wake_up_process(__k);					\
	__k;								\
})

#endif
