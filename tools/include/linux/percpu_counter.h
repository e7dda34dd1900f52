/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Userspace shim: percpu_counter, as the kernel has it: a shared count
 * and a per-CPU delta folded into it once it reaches the batch. Readers
 * of percpu_counter_read() see the shared count only (it lags by up to
 * batch per CPU); percpu_counter_sum() adds every CPU's delta.
 *
 * An add runs with preemption off, as the kernel's: on a CPU a thread
 * has to itself it is a plain add (this_cpu_add_return(),
 * <linux/percpu.h>), not a locked one per call. Two threads may share a
 * CPU here, so a delta is taken with an atomic exchange under the lock,
 * never read and then cleared.
 */
#ifndef _SHIM_LINUX_PERCPU_COUNTER_H
#define _SHIM_LINUX_PERCPU_COUNTER_H

#include <linux/percpu.h>
#include <linux/preempt.h>
#include <linux/spinlock.h>

struct percpu_counter {
	spinlock_t	lock;
	s64		count;		/* atomic accesses: read unlocked */
	s32 __percpu	*counters;
};

#define percpu_counter_batch	32

static inline int percpu_counter_init(struct percpu_counter *fbc, s64 amount,
				      gfp_t gfp)
{
	spin_lock_init(&fbc->lock);
	__atomic_store_n(&fbc->count, amount, __ATOMIC_RELAXED);
	fbc->counters = alloc_percpu_gfp(s32, gfp);
	return fbc->counters ? 0 : -ENOMEM;
}

static inline void percpu_counter_destroy(struct percpu_counter *fbc)
{
	free_percpu(fbc->counters);
	fbc->counters = NULL;
}

static inline void percpu_counter_add_batch(struct percpu_counter *fbc,
					    s64 amount, s32 batch)
{
	s64 v;

	preempt_disable();
	v = this_cpu_add_return(*fbc->counters, (s32)amount);
	if (v >= batch || v <= -batch) {
		spin_lock(&fbc->lock);
		v = __atomic_exchange_n(this_cpu_ptr(fbc->counters), 0,
					__ATOMIC_RELAXED);
		__atomic_store_n(&fbc->count,
				 __atomic_load_n(&fbc->count, __ATOMIC_RELAXED) + v,
				 __ATOMIC_RELAXED);
		spin_unlock(&fbc->lock);
	}
	preempt_enable();
}

static inline void percpu_counter_add(struct percpu_counter *fbc, s64 amount)
{
	percpu_counter_add_batch(fbc, amount, percpu_counter_batch);
}

static inline void percpu_counter_sub(struct percpu_counter *fbc, s64 amount)
{
	percpu_counter_add(fbc, -amount);
}

static inline s64 percpu_counter_read(struct percpu_counter *fbc)
{
	return __atomic_load_n(&fbc->count, __ATOMIC_RELAXED);
}

static inline s64 percpu_counter_read_positive(struct percpu_counter *fbc)
{
	s64 v = percpu_counter_read(fbc);

	return v > 0 ? v : 0;
}

static inline s64 percpu_counter_sum(struct percpu_counter *fbc)
{
	s64 v;
	int cpu;

	spin_lock(&fbc->lock);
	v = __atomic_load_n(&fbc->count, __ATOMIC_RELAXED);
	for_each_possible_cpu(cpu)
		v += __atomic_load_n(per_cpu_ptr(fbc->counters, cpu),
				     __ATOMIC_RELAXED);
	spin_unlock(&fbc->lock);
	return v;
}

static inline s64 percpu_counter_sum_positive(struct percpu_counter *fbc)
{
	s64 v = percpu_counter_sum(fbc);

	return v > 0 ? v : 0;
}

static inline void percpu_counter_set(struct percpu_counter *fbc, s64 amount)
{
	int cpu;

	spin_lock(&fbc->lock);
	for_each_possible_cpu(cpu)
		__atomic_store_n(per_cpu_ptr(fbc->counters, cpu), 0,
				 __ATOMIC_RELAXED);
	__atomic_store_n(&fbc->count, amount, __ATOMIC_RELAXED);
	spin_unlock(&fbc->lock);
}

#endif
