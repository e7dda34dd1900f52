/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Userspace shim: preemption. A thread keeps the CPU it was bound to (see
 * <linux/cpumask.h>) for life, and a preempt_disable() section owns that
 * CPU: should more threads than CPUs exist, two threads sharing a CPU
 * never run such sections at once, which is what per-CPU code (epochs,
 * per-CPU caches) relies on in the kernel.
 */
#ifndef _SHIM_LINUX_PREEMPT_H
#define _SHIM_LINUX_PREEMPT_H

#include <linux/lockdep.h>

void shim_preempt_disable(void);
void shim_preempt_enable(void);

#define preempt_disable()	shim_preempt_disable()
#define preempt_enable()	shim_preempt_enable()
#define preempt_disable_notrace() preempt_disable()
#define preempt_enable_notrace()  preempt_enable()
#define migrate_disable()	do { } while (0)
#define migrate_enable()	do { } while (0)
#define in_atomic()		(shim_atomic_depth > 0)
#define in_interrupt()		0
#define in_irq()		0
#define in_task()		1

#endif
