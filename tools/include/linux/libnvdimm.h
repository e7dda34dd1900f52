/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Userspace shim: the pmem cache-maintenance entry points. They go to the
 * pmem backend (see <shim/pmem.h>): real clwb by default, recorded by the
 * crash simulator and the XPLine model when those are installed.
 */
#ifndef _SHIM_LINUX_LIBNVDIMM_H
#define _SHIM_LINUX_LIBNVDIMM_H

#include <linux/types.h>
#include <asm/barrier.h>

void arch_wb_cache_pmem(void *addr, size_t size);
void arch_invalidate_pmem(void *addr, size_t size);

/* Not a kernel interface: kmod/core/pmem.h's pmidx_lose_ok() calls it here */
#define SHIM_PMEM_EXPENDABLE
void shim_pmem_expendable(const void *addr, size_t size);

#endif
