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

#endif
