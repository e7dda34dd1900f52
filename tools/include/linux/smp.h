/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _SHIM_LINUX_SMP_H
#define _SHIM_LINUX_SMP_H

#include <linux/types.h>
#include <linux/cpumask.h>
#include <linux/preempt.h>

extern __thread int shim_this_cpu;
int shim_cpu_bind(void);

/* The calling thread's CPU, stable for the thread's lifetime. */
static inline int raw_smp_processor_id(void)
{
	int cpu = shim_this_cpu;

	return cpu >= 0 ? cpu : shim_cpu_bind();
}

#define smp_processor_id()	raw_smp_processor_id()
#define get_cpu()		({ preempt_disable(); smp_processor_id(); })
#define put_cpu()		preempt_enable()

#endif
