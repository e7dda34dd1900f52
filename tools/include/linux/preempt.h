/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _SHIM_LINUX_PREEMPT_H
#define _SHIM_LINUX_PREEMPT_H

#include <linux/lockdep.h>

#define preempt_disable()	do { shim_atomic_depth++; barrier(); } while (0)
#define preempt_enable()	do { barrier(); shim_atomic_depth--; } while (0)
#define preempt_disable_notrace() preempt_disable()
#define preempt_enable_notrace()  preempt_enable()
#define in_atomic()		(shim_atomic_depth > 0)
#define in_interrupt()		0
#define in_irq()		0
#define in_task()		1

#endif
