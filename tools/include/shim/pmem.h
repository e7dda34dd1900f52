/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The userspace pmem backend: where arch_wb_cache_pmem(), memcpy_flushcache()
 * and the pmem fences (pmem_wmb(), wmb(), mb(); smp_wmb() as an ordering-
 * only fence) of kmod/core end up.
 *
 * The default backend executes the real instructions (clwb, else
 * clflushopt, else clflush; sfence), or no write-back when the mapping is
 * plain DRAM or page cache (SHIM_PMEM_HW_NONE: the fences stay, as a full
 * fence). PMIDX_PMEM_HW=none|clwb|clflushopt|clflush|volatile overrides;
 * volatile (SHIM_PMEM_HW_VOLATILE) is the physical limit the others are
 * measured against: no write-back and no fence instruction at all (a
 * compiler barrier; x86 keeps stores in order), nothing durable. Flushes
 * and fences are counted (struct pmidx_pmem_stats) in every mode. The
 * crash simulator and the XPLine model install their own ops to observe
 * every flush and fence.
 *
 * Media errors: shim_pmem_poison() marks a range so that copy_mc_to_kernel()
 * reading it stops there, as a machine-check-safe copy does on poison.
 * shim_pmem_poison_trap() does the same and makes every other access to the
 * range's pages fault (SIGSEGV, as a load of poison machine-checks): a test
 * that survives it read the range only through copy_mc_to_kernel(). The
 * pages must not be written while trapped either (whole pages: keep other
 * live data out of them), nor overlap another trap; clearing restores them.
 */
#ifndef _SHIM_PMEM_H
#define _SHIM_PMEM_H

#include <linux/types.h>

struct shim_pmem_ops {
	/* [addr, addr + len) was written back (clwb) or copied non-temporally */
	void (*flush)(void *priv, const void *addr, size_t len);
	/* a fence: @persist for sfence-class fences that complete flushes,
	 * false for smp_wmb() (store ordering only; eADR's fence) */
	void (*fence)(void *priv, bool persist);
	/* optional: the bytes of [addr, addr + len) as they are now need not
	 * reach the media (pmidx_lose_ok(), kmod/core/pmem.h) */
	void (*expendable)(void *priv, const void *addr, size_t len);
	void *priv;
};

/* Install @ops (NULL: the hardware default). Returns the previous ops. */
const struct shim_pmem_ops *shim_pmem_set_ops(const struct shim_pmem_ops *ops);
const struct shim_pmem_ops *shim_pmem_default_ops(void);

enum shim_pmem_hw {
	SHIM_PMEM_HW_AUTO,		/* best the CPU has */
	SHIM_PMEM_HW_CLWB,
	SHIM_PMEM_HW_CLFLUSHOPT,
	SHIM_PMEM_HW_CLFLUSH,
	SHIM_PMEM_HW_NONE,		/* DRAM/page cache: fences only */
	SHIM_PMEM_HW_VOLATILE,		/* neither write-back nor fence */
};

void shim_pmem_set_hw(enum shim_pmem_hw hw);
/*
 * Force @hw over the environment and over later shim_pmem_set_hw() calls
 * (pool files set the mode when mapped); SHIM_PMEM_HW_AUTO lifts it.
 * pmidx-bench --volatile-baseline switches modes between runs with it.
 */
void shim_pmem_force_hw(enum shim_pmem_hw hw);
enum shim_pmem_hw shim_pmem_get_hw(void);
const char *shim_pmem_hw_name(enum shim_pmem_hw hw);
void shim_pmem_hw_flush(const void *addr, size_t len);
void shim_pmem_hw_fence(void);

int shim_pmem_poison(const void *addr, size_t len);
int shim_pmem_poison_trap(const void *addr, size_t len);
void shim_pmem_clear_poison(void);

#endif
