/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Userspace shim: percpu_ref as the kernel has it. Alive, gets and puts
 * move a per-CPU count (no line shared between CPUs); percpu_ref_kill()
 * marks the ref dead and atomic, waits out every RCU reader that may
 * still be using the per-CPU counts (gets and puts run in a read section,
 * as the kernel's run with preemption off), folds them into the atomic
 * count and drops the initial reference; release runs at zero. Every
 * tryget_live() after kill fails. The per-CPU add runs with preemption
 * off, as the kernel's: on a CPU a thread has to itself it is a plain
 * add (<linux/percpu.h>), not a locked one per get and put.
 */
#ifndef _SHIM_LINUX_PERCPU_REFCOUNT_H
#define _SHIM_LINUX_PERCPU_REFCOUNT_H

#include <linux/types.h>
#include <linux/gfp.h>
#include <linux/percpu.h>
#include <linux/preempt.h>
#include <linux/rcupdate.h>

#define PERCPU_REF_BIAS		(1L << 62)

struct percpu_ref;
typedef void (percpu_ref_func_t)(struct percpu_ref *);

/*
 * @pcpu: the per-CPU counts while alive (their sum is the count beyond
 *        the initial reference); read and folded once by kill
 * @count: the count once atomic (@dead), the initial reference included;
 *         PERCPU_REF_BIAS above it until kill has folded the per-CPU
 *         counts in, so that puts seen as atomic before then cannot
 *         reach zero early (the kernel's PERCPU_COUNT_BIAS)
 */
struct percpu_ref {
	long __percpu		*pcpu;
	long			count;
	bool			dead;
	percpu_ref_func_t	*release;
};

static inline int percpu_ref_init(struct percpu_ref *ref,
				  percpu_ref_func_t *release,
				  unsigned int flags, gfp_t gfp)
{
	ref->pcpu = alloc_percpu_gfp(long, gfp);
	if (!ref->pcpu)
		return -ENOMEM;
	ref->count = 1 + PERCPU_REF_BIAS;
	ref->dead = false;
	ref->release = release;
	return 0;
}

static inline void percpu_ref_exit(struct percpu_ref *ref)
{
	free_percpu(ref->pcpu);
	ref->pcpu = NULL;
}

/* Add @n: per CPU while alive, else to the atomic count (may release). */
static inline void percpu_ref_add(struct percpu_ref *ref, long n)
{
	rcu_read_lock();
	if (!__atomic_load_n(&ref->dead, __ATOMIC_ACQUIRE)) {
		preempt_disable();
		this_cpu_add(*ref->pcpu, n);
		preempt_enable();
		rcu_read_unlock();
		return;
	}
	rcu_read_unlock();
	if (__atomic_add_fetch(&ref->count, n, __ATOMIC_ACQ_REL) == 0)
		ref->release(ref);
}

static inline void percpu_ref_put(struct percpu_ref *ref)
{
	percpu_ref_add(ref, -1);
}

static inline void percpu_ref_get(struct percpu_ref *ref)
{
	percpu_ref_add(ref, 1);
}

/* Context: inside rcu_read_lock(), like the kernel's. */
static inline bool percpu_ref_tryget_live(struct percpu_ref *ref)
{
	if (__atomic_load_n(&ref->dead, __ATOMIC_ACQUIRE))
		return false;
	preempt_disable();
	this_cpu_add(*ref->pcpu, 1);
	preempt_enable();
	return true;
}

static inline void percpu_ref_kill(struct percpu_ref *ref)
{
	long sum = 0;
	int cpu;

	__atomic_store_n(&ref->dead, true, __ATOMIC_RELEASE);
	/* no get or put uses the per-CPU counts after this */
	synchronize_rcu();
	for_each_possible_cpu(cpu)
		sum += __atomic_load_n(per_cpu_ptr(ref->pcpu, cpu),
				       __ATOMIC_RELAXED);
	/* the folded gets and puts, less the bias and the initial reference */
	if (__atomic_add_fetch(&ref->count, sum - PERCPU_REF_BIAS - 1,
			       __ATOMIC_ACQ_REL) == 0)
		ref->release(ref);
}

/* Killed? Context: holding a reference, as in the kernel. */
static inline bool percpu_ref_is_dying(struct percpu_ref *ref)
{
	return __atomic_load_n(&ref->dead, __ATOMIC_ACQUIRE);
}

static inline bool percpu_ref_is_zero(struct percpu_ref *ref)
{
	return !__atomic_load_n(&ref->count, __ATOMIC_ACQUIRE);
}

#endif /* _SHIM_LINUX_PERCPU_REFCOUNT_H */
