/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Userspace shim: scheduling points. cond_resched() checks that it is not
 * called in atomic context and, when PMIDX_SHIM_YIELD=N is set, yields
 * every Nth call to shake out races in the concurrent tests.
 */
#ifndef _SHIM_LINUX_SCHED_H
#define _SHIM_LINUX_SCHED_H

#include <linux/types.h>
#include <linux/lockdep.h>

void shim_cond_resched(const char *file, int line);

#define cond_resched()		({ shim_cond_resched(__FILE__, __LINE__); 0; })
#define need_resched()		0
#define schedule()		shim_cond_resched(__FILE__, __LINE__)
#define fatal_signal_pending(p)	0
#define signal_pending(p)	0

#include <linux/processor.h>

#endif
