/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Persistence primitives. Every store to the pool is followed by one of
 * these before it may be relied upon, which is what lets the userspace
 * build count flushes and simulate ADR power cuts (tools/testing shims
 * supply arch_wb_cache_pmem() and friends there).
 *
 *  ADR:  lines must be written back (clwb) and fenced (sfence) to persist.
 *  eADR: the CPU caches are in the persistence domain; a store is durable
 *        once globally visible, so flushes are skipped and the fence only
 *        orders stores. pmidx_flush_nofence() still writes lines back there
 *        (bandwidth, PFtree §3.2); under ADR it is pmidx_persist().
 */
#ifndef _PMIDX_PMEM_H
#define _PMIDX_PMEM_H

#include <linux/types.h>
#include <linux/atomic.h>
#include <linux/percpu.h>
#include <linux/printk.h>
#include <linux/libnvdimm.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#define PMIDX_LINE_SIZE		64
#define PMIDX_XPLINE_SIZE	256

enum pmidx_persist_mode {
	PMIDX_PERSIST_AUTO,
	PMIDX_PERSIST_ADR,
	PMIDX_PERSIST_EADR,
};

struct pmidx_pmem_stats {
	u64	flushes;	/* cache lines written back */
	u64	fences;
};

/**
 * struct pmidx_pmem - a mapped persistent-memory range
 * @base:  kernel (or process) virtual address of pool offset 0
 * @size:  bytes mapped
 * @eadr:  true when flushes can be elided (see file comment)
 * @stats: per-CPU flush/fence counters, summed on demand
 * @media_errors: data-path reads that hit poison (pmidx_read_data())
 */
struct pmidx_pmem {
	void				*base;
	u64				size;
	bool				eadr;
	struct pmidx_pmem_stats __percpu *stats;
	atomic64_t			media_errors;
};

static inline void *pmidx_ptr(const struct pmidx_pmem *pm, u64 off)
{
	return (char *)pm->base + off;
}

static inline u64 pmidx_off(const struct pmidx_pmem *pm, const void *p)
{
	return (u64)((const char *)p - (const char *)pm->base);
}

/** pmidx_flush - write back the cache lines covering [@addr, @addr+@len) */
static inline void pmidx_flush(struct pmidx_pmem *pm, const void *addr,
			       size_t len)
{
	uintptr_t start, end;

	if (pm->eadr || !len)
		return;
	start = (uintptr_t)addr & ~(uintptr_t)(PMIDX_LINE_SIZE - 1);
	end = (uintptr_t)addr + len;
	this_cpu_add(pm->stats->flushes,
		     (end - start + PMIDX_LINE_SIZE - 1) / PMIDX_LINE_SIZE);
	arch_wb_cache_pmem((void *)start, end - start);
}

/**
 * pmidx_lose_ok - the bytes of [@addr, @addr+@len) as they are now need
 *                 not reach the media
 *
 * For a store made for other CPUs' sake that no crash or clean detach
 * needs durable, because every open repairs it (a lock word in a pmem
 * object: uTree's Version and Deleted bits). It writes nothing back and
 * the kernel has nothing to do; the userspace crash simulator stops
 * counting the line as written but never made durable while those bytes
 * stay as they are and the rest of the line is durable.
 */
static inline void pmidx_lose_ok(struct pmidx_pmem *pm, const void *addr,
				 size_t len)
{
#ifdef SHIM_PMEM_EXPENDABLE
	shim_pmem_expendable(addr, len);
#endif
}

/** pmidx_fence - order (and under ADR, complete) all earlier flushes */
static inline void pmidx_fence(struct pmidx_pmem *pm)
{
	this_cpu_inc(pm->stats->fences);
	if (pm->eadr)
		smp_wmb();	/* only ordering is needed: caches are durable */
	else
		pmem_wmb();
}

/** pmidx_persist - flush then fence: the range is durable on return */
static inline void pmidx_persist(struct pmidx_pmem *pm, const void *addr,
				 size_t len)
{
	pmidx_flush(pm, addr, len);
	pmidx_fence(pm);
}

/**
 * pmidx_flush_nofence - write back [@addr, @addr+@len) without a fence
 *
 * eADR: the stores are durable already (the caches are in the persistence
 * domain); the write-back only sends the lines towards the media sooner,
 * which PFtree (§3.2) measures as more bandwidth than leaving writes over
 * 256 bytes to eviction. Nothing waits for it, so no fence. Counted as
 * flushes.
 * ADR: a write-back is durable only once a fence completes it, so this is
 * pmidx_persist(): the range is durable on return, as every ADR caller
 * needs. The helper never weakens ADR.
 */
static inline void pmidx_flush_nofence(struct pmidx_pmem *pm, const void *addr,
				       size_t len)
{
	uintptr_t start, end;

	if (!pm->eadr) {
		pmidx_persist(pm, addr, len);
		return;
	}
	if (!len)
		return;
	start = (uintptr_t)addr & ~(uintptr_t)(PMIDX_LINE_SIZE - 1);
	end = (uintptr_t)addr + len;
	this_cpu_add(pm->stats->flushes,
		     (end - start + PMIDX_LINE_SIZE - 1) / PMIDX_LINE_SIZE);
	arch_wb_cache_pmem((void *)start, end - start);
}

/**
 * pmidx_store64_persist - atomic 8-byte commit store, made durable
 *
 * The 8-byte aligned store is the unit of failure atomicity on x86 pmem.
 */
static inline void pmidx_store64_persist(struct pmidx_pmem *pm, __le64 *dst,
					 u64 val)
{
	WRITE_ONCE(*dst, cpu_to_le64(val));
	pmidx_persist(pm, dst, sizeof(*dst));
}

/** pmidx_memcpy_persist - copy into pmem and make it durable */
static inline void pmidx_memcpy_persist(struct pmidx_pmem *pm, void *dst,
					const void *src, size_t len)
{
	memcpy(dst, src, len);
	pmidx_persist(pm, dst, len);
}

/** pmidx_memset_persist - fill pmem and make it durable */
static inline void pmidx_memset_persist(struct pmidx_pmem *pm, void *dst,
					int c, size_t len)
{
	memset(dst, c, len);
	pmidx_persist(pm, dst, len);
}

/**
 * pmidx_read_media - copy metadata out of pmem, surviving media errors
 *
 * Return: 0, or -EIO when a poisoned line was hit (reported, not fatal).
 */
static inline int pmidx_read_media(void *dst, const void *src, size_t len)
{
	return copy_mc_to_kernel(dst, src, len) ? -EIO : 0;
}

/**
 * pmidx_read_data - copy user data (a value, a key) out of pmem for a
 *                   reader, surviving media errors
 *
 * The data path's one copy of the bytes (into the caller's buffer or a
 * scan's stage), machine-check safe: a poisoned line answers -EIO for
 * this read alone, is counted in @pm->media_errors and logged (rate
 * limited). Only the copy is protected: whatever the caller reads in place
 * (leaf words, list nodes, keys compared where they lie) still takes the
 * machine check; see the engines' READMEs.
 *
 * Return: 0, or -EIO when a poisoned line was hit.
 */
static inline int pmidx_read_data(struct pmidx_pmem *pm, void *dst,
				  const void *src, size_t len)
{
	unsigned long left = copy_mc_to_kernel(dst, src, len);

	if (likely(!left))
		return 0;
	atomic64_inc(&pm->media_errors);
	pr_warn_ratelimited("pmidx: media error reading pool offset %#llx (%zu bytes, %lu not read)\n",
			    (unsigned long long)pmidx_off(pm, src), len, left);
	return -EIO;
}

static inline u64 pmidx_media_errors(const struct pmidx_pmem *pm)
{
	return atomic64_read(&pm->media_errors);
}

void pmidx_pmem_sum_stats(const struct pmidx_pmem *pm,
			  struct pmidx_pmem_stats *sum);

#endif /* _PMIDX_PMEM_H */
