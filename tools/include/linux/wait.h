/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Userspace shim: wait queues on a mutex + condition variable + wakeup
 * count. A waiter notes the count, evaluates the condition (unlocked, as
 * the kernel does), and sleeps only while the count is unchanged, so a
 * wake_up() between the check and the sleep is never lost. A sleeping kthread is
 * also woken by kthread_stop() (the queue a task sleeps on is recorded).
 * Timeouts are in jiffies (HZ = 1000 here: milliseconds).
 */
#ifndef _SHIM_LINUX_WAIT_H
#define _SHIM_LINUX_WAIT_H

#include <pthread.h>
#include <linux/types.h>
#include <linux/lockdep.h>
#include <linux/jiffies.h>

typedef struct wait_queue_head {
	pthread_mutex_t	lock;
	pthread_cond_t	cond;
	unsigned long	wakeups;	/* protected by lock */
} wait_queue_head_t;

#define __WAIT_QUEUE_HEAD_INITIALIZER(name) \
	{ PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0 }
#define DECLARE_WAIT_QUEUE_HEAD(name) \
	wait_queue_head_t name = __WAIT_QUEUE_HEAD_INITIALIZER(name)

static inline void init_waitqueue_head(wait_queue_head_t *wq)
{
	pthread_mutex_init(&wq->lock, NULL);
	pthread_cond_init(&wq->cond, NULL);
	wq->wakeups = 0;
}

void __wake_up(wait_queue_head_t *wq);
#define wake_up(wq)			__wake_up(wq)
#define wake_up_all(wq)			__wake_up(wq)
#define wake_up_interruptible(wq)	__wake_up(wq)
#define wake_up_interruptible_all(wq)	__wake_up(wq)

static inline bool waitqueue_active(wait_queue_head_t *wq)
{
	return true;	/* conservative: callers then wake */
}

/*
 * prepare: note the wakeup count (and the queue, for kthread_stop());
 * sleep: until the count moves, a stop is asked, or @deadline_ms (0: none).
 */
unsigned long shim_wait_prepare(wait_queue_head_t *wq);
void shim_wait_sleep(wait_queue_head_t *wq, unsigned long seen, s64 deadline_ms);
s64 shim_now_ms(void);

#define __shim_wait_event(wq, condition, timeout) ({			\
	s64 __deadline = (timeout) >= 0 ? shim_now_ms() + (timeout) : 0; \
	long __ret = 1;							\
	might_sleep();							\
	for (;;) {							\
		unsigned long __seen = shim_wait_prepare(&(wq));	\
									\
		if (condition)						\
			break;						\
		if ((timeout) >= 0 && shim_now_ms() >= __deadline) {	\
			__ret = (condition) ? 1 : 0;			\
			break;						\
		}							\
		shim_wait_sleep(&(wq), __seen, __deadline);		\
	}								\
	if (__ret && (timeout) >= 0) {					\
		s64 __left = __deadline - shim_now_ms();		\
		__ret = __left > 0 ? __left : 1;			\
	}								\
	__ret;								\
})

#define wait_event(wq, condition) \
	((void)__shim_wait_event(wq, condition, -1))
#define wait_event_interruptible(wq, condition) \
	({ __shim_wait_event(wq, condition, -1); 0; })
#define wait_event_killable(wq, condition) \
	wait_event_interruptible(wq, condition)
#define wait_event_timeout(wq, condition, timeout) \
	__shim_wait_event(wq, condition, (long)(timeout))
#define wait_event_interruptible_timeout(wq, condition, timeout) \
	__shim_wait_event(wq, condition, (long)(timeout))

#endif
