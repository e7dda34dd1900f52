/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Userspace shim: dynamic per-CPU memory, laid out as the kernel does it:
 * one unit of SHIM_PCPU_UNIT bytes per CPU, and CPU n's copy of any
 * per-CPU object at the same offset inside unit n. So per_cpu_ptr() is
 * pointer arithmetic and also works on the address of a member, which is
 * what this_cpu_add(ptr->field, n) needs. Objects are zeroed, 64-byte
 * granular, and poisoned for ASan when free.
 *
 * this_cpu_*() are atomic here (relaxed): two threads may share a CPU.
 * this_cpu_add(), this_cpu_sub() and this_cpu_add_return() inside a
 * preempt_disable() section of a thread alone on its CPU (shim_cpu_excl,
 * shim/core.c) are a plain load and store, as the kernel's one unlocked
 * instruction: no other thread writes that CPU's copy then, and a
 * locked add per statistic was a full barrier on the userspace build's
 * every operation.
 */
#ifndef _SHIM_LINUX_PERCPU_H
#define _SHIM_LINUX_PERCPU_H

#include <linux/types.h>
#include <linux/compiler.h>
#include <linux/gfp.h>
#include <linux/cpumask.h>
#include <linux/smp.h>
#include <linux/preempt.h>

#define SHIM_PCPU_UNIT		(1UL << 20)

void *shim_alloc_percpu(size_t size, size_t align, gfp_t gfp);
void free_percpu(void __percpu *ptr);

#define alloc_percpu_gfp(type, gfp)					\
	((type __percpu *)shim_alloc_percpu(sizeof(type),		\
					    __alignof__(type), (gfp)))
#define alloc_percpu(type)	alloc_percpu_gfp(type, GFP_KERNEL)
#define __alloc_percpu(size, align) shim_alloc_percpu((size), (align), GFP_KERNEL)

#define per_cpu_ptr(ptr, cpu)						\
	((__typeof__(&*(ptr)))((char *)(ptr) +				\
			       (unsigned long)(cpu) * SHIM_PCPU_UNIT))
#define raw_cpu_ptr(ptr)	per_cpu_ptr(ptr, raw_smp_processor_id())
#define this_cpu_ptr(ptr)	raw_cpu_ptr(ptr)
#define per_cpu(var, cpu)	(*per_cpu_ptr(&(var), (cpu)))

extern __thread bool shim_cpu_excl;

/* the new value */
#define shim_this_cpu_op(pcp, op, atomic_op, val) ({			\
	__typeof__(&(pcp)) __tco_p = raw_cpu_ptr(&(pcp));		\
	__typeof__(pcp) __tco_v;					\
									\
	if (shim_cpu_excl) {						\
		__tco_v = __atomic_load_n(__tco_p, __ATOMIC_RELAXED) op (val); \
		__atomic_store_n(__tco_p, __tco_v, __ATOMIC_RELAXED);	\
	} else {							\
		__tco_v = atomic_op(__tco_p, (val), __ATOMIC_RELAXED);	\
	}								\
	__tco_v;							\
})
#define this_cpu_add(pcp, val) \
	((void)shim_this_cpu_op(pcp, +, __atomic_add_fetch, val))
#define this_cpu_sub(pcp, val) \
	((void)shim_this_cpu_op(pcp, -, __atomic_sub_fetch, val))
#define this_cpu_inc(pcp)	this_cpu_add(pcp, 1)
#define this_cpu_dec(pcp)	this_cpu_sub(pcp, 1)
#define this_cpu_read(pcp)	__atomic_load_n(raw_cpu_ptr(&(pcp)), __ATOMIC_RELAXED)
#define this_cpu_write(pcp, val) \
	__atomic_store_n(raw_cpu_ptr(&(pcp)), (val), __ATOMIC_RELAXED)
#define this_cpu_add_return(pcp, val) \
	shim_this_cpu_op(pcp, +, __atomic_add_fetch, val)
#define this_cpu_xchg(pcp, nval) \
	__atomic_exchange_n(raw_cpu_ptr(&(pcp)), (nval), __ATOMIC_ACQ_REL)
/* the value found: @oval when @nval was stored */
#define this_cpu_cmpxchg(pcp, oval, nval) ({				\
	__typeof__(pcp) __tcc_old = (oval);				\
	__atomic_compare_exchange_n(raw_cpu_ptr(&(pcp)), &__tcc_old,	\
				    (nval), false, __ATOMIC_ACQ_REL,	\
				    __ATOMIC_ACQUIRE);			\
	__tcc_old;							\
})
#define __this_cpu_add(pcp, val)	this_cpu_add(pcp, val)
#define __this_cpu_inc(pcp)		this_cpu_inc(pcp)
#define __this_cpu_read(pcp)		this_cpu_read(pcp)
#define __this_cpu_write(pcp, val)	this_cpu_write(pcp, val)
#define raw_cpu_add(pcp, val)		this_cpu_add(pcp, val)
#define raw_cpu_inc(pcp)		this_cpu_inc(pcp)

/* what the kernel header brings in transitively */
#include <linux/kernel.h>
#include <linux/string.h>

#endif
