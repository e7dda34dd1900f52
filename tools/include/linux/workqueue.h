/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Userspace shim: every queued work item runs on a thread of its own
 * (the most concurrent schedule the kernel's unbound workqueues allow).
 * flush_work() joins it; flush_workqueue()/destroy_workqueue() join every
 * item queued on the queue. A work function may free its work_struct:
 * the shim never touches the item after calling it.
 */
#ifndef _SHIM_LINUX_WORKQUEUE_H
#define _SHIM_LINUX_WORKQUEUE_H

#include <linux/types.h>
#include <linux/kernel.h>

struct work_struct;
typedef void (*work_func_t)(struct work_struct *work);

struct work_struct {
	work_func_t	func;
	int		pending;	/* queued and not yet started */
};

struct workqueue_struct;

extern struct workqueue_struct *system_wq;
extern struct workqueue_struct *system_unbound_wq;
extern struct workqueue_struct *system_long_wq;
extern struct workqueue_struct *system_highpri_wq;

#define WQ_UNBOUND		(1 << 1)
#define WQ_FREEZABLE		(1 << 2)
#define WQ_MEM_RECLAIM		(1 << 3)
#define WQ_HIGHPRI		(1 << 4)
#define WQ_CPU_INTENSIVE	(1 << 5)
#define WQ_SYSFS		(1 << 6)

#define __WORK_INITIALIZER(n, f)	{ .func = (f) }
#define DECLARE_WORK(n, f)	struct work_struct n = __WORK_INITIALIZER(n, f)
#define INIT_WORK(w, f) do {						\
	(w)->func = (f);						\
	(w)->pending = 0;						\
} while (0)
#define INIT_WORK_ONSTACK(w, f)	INIT_WORK(w, f)
#define destroy_work_on_stack(w) do { } while (0)

struct workqueue_struct *alloc_workqueue(const char *fmt, unsigned int flags,
					 int max_active, ...) __printf(1, 4);
#define alloc_ordered_workqueue(fmt, flags, args...) \
	alloc_workqueue(fmt, WQ_UNBOUND | (flags), 1, ##args)
void destroy_workqueue(struct workqueue_struct *wq);
bool queue_work(struct workqueue_struct *wq, struct work_struct *work);
bool flush_work(struct work_struct *work);
bool cancel_work_sync(struct work_struct *work);
void flush_workqueue(struct workqueue_struct *wq);

static inline bool schedule_work(struct work_struct *work)
{
	return queue_work(system_wq, work);
}

static inline bool work_pending(const struct work_struct *work)
{
	return __atomic_load_n(&work->pending, __ATOMIC_ACQUIRE);
}

/* what the kernel header brings in transitively */
#include <linux/kernel.h>
#include <linux/string.h>

#endif
