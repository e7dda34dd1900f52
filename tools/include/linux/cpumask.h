/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Userspace shim: "CPUs". There are nr_cpu_ids of them (16 unless
 * PMIDX_SHIM_NR_CPUS says otherwise, at most SHIM_NR_CPUS_MAX), all
 * possible and online. A thread is bound to the least used CPU the first
 * time it asks (raw_smp_processor_id()) and keeps it until it exits, so
 * with no more live threads than CPUs per-CPU data is per thread; beyond
 * that threads share CPUs, and preempt_disable() serialises them.
 */
#ifndef _SHIM_LINUX_CPUMASK_H
#define _SHIM_LINUX_CPUMASK_H

#include <linux/types.h>

#define SHIM_NR_CPUS_MAX	64
#define NR_CPUS			SHIM_NR_CPUS_MAX

extern unsigned int nr_cpu_ids;

#define for_each_possible_cpu(cpu) \
	for ((cpu) = 0; (cpu) < (int)nr_cpu_ids; (cpu)++)
#define for_each_online_cpu(cpu)	for_each_possible_cpu(cpu)
#define for_each_present_cpu(cpu)	for_each_possible_cpu(cpu)
#define num_possible_cpus()		nr_cpu_ids
#define num_online_cpus()		nr_cpu_ids
#define cpu_possible(cpu)		((unsigned int)(cpu) < nr_cpu_ids)
#define cpu_online(cpu)			cpu_possible(cpu)

#endif
