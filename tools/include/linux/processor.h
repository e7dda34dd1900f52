/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _SHIM_LINUX_PROCESSOR_H
#define _SHIM_LINUX_PROCESSOR_H

#if defined(__x86_64__) || defined(__i386__)
#define cpu_relax()	__asm__ __volatile__("pause" ::: "memory")
#else
#define cpu_relax()	__asm__ __volatile__("" ::: "memory")
#endif

#endif
