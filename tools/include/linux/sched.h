/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Userspace shim: scheduling points. cond_resched() checks that it is not
 * called in atomic context and, when PMIDX_SHIM_YIELD=N is set, yields
 * every Nth call to shake out races in the concurrent tests.
 */
#ifndef _SHIM_LINUX_SCHED_H
#define _SHIM_LINUX_SCHED_H

#include <linux/types.h>
#include <limits.h>
#include <linux/lockdep.h>

void shim_cond_resched(const char *file, int line);

#define cond_resched()		({ shim_cond_resched(__FILE__, __LINE__); 0; })
#define need_resched()		0
#define schedule()		shim_cond_resched(__FILE__, __LINE__)
#define fatal_signal_pending(p)	0
#define signal_pending(p)	0

#define TASK_COMM_LEN		16
#define TASK_RUNNING		0
#define TASK_INTERRUPTIBLE	1
#define TASK_UNINTERRUPTIBLE	2
#define MAX_SCHEDULE_TIMEOUT	LONG_MAX

/* Every thread has one: kthreads from kthread_create(), others lazily. */
struct task_struct {
	char		comm[TASK_COMM_LEN];
	int		pid;
};

struct task_struct *shim_current(void);
#define current		shim_current()

/* Sleep @timeout jiffies (ms); kthread_stop() cuts it short. Returns
 * what is left. set_current_state() is accepted and ignored. */
long schedule_timeout(long timeout);
#define schedule_timeout_interruptible(t)	schedule_timeout(t)
#define schedule_timeout_uninterruptible(t)	schedule_timeout(t)
#define schedule_timeout_idle(t)		schedule_timeout(t)
#define set_current_state(s)			do { (void)(s); } while (0)
#define __set_current_state(s)			do { (void)(s); } while (0)

#include <linux/processor.h>

/* what the kernel header brings in transitively */
#include <linux/kernel.h>
#include <linux/string.h>

#endif
