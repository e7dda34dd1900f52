/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Userspace shim: memory barriers.
 *
 * The SMP barriers are C11 fences. The barriers that order pmem writes
 * (pmem_wmb(), and wmb()/mb(), which are sfence/mfence on x86 and so also
 * complete earlier clwb's) go through the pmem backend (tools/testing/shim/
 * pmem.c), which issues a real sfence by default and records a fence in
 * the crash simulator and the XPLine model. smp_wmb() is reported to the
 * backend as an ordering-only fence: it is the eADR fence of pmidx_fence().
 */
#ifndef _SHIM_ASM_BARRIER_H
#define _SHIM_ASM_BARRIER_H

void shim_pmem_fence(int persist);

#define mb()		shim_pmem_fence(1)
#define wmb()		shim_pmem_fence(1)
#define rmb()		__atomic_thread_fence(__ATOMIC_ACQUIRE)
#define pmem_wmb()	shim_pmem_fence(1)

#define smp_mb()	__atomic_thread_fence(__ATOMIC_SEQ_CST)
#define smp_rmb()	__atomic_thread_fence(__ATOMIC_ACQUIRE)
#define smp_wmb()	shim_pmem_fence(0)
#define smp_mb__before_atomic()	__atomic_thread_fence(__ATOMIC_SEQ_CST)
#define smp_mb__after_atomic()	__atomic_thread_fence(__ATOMIC_SEQ_CST)

#define smp_load_acquire(p) ({						\
	__unqual_scalar_typeof(*(p)) __la_v =				\
		__atomic_load_n((p), __ATOMIC_ACQUIRE);			\
	__la_v;								\
})
#define smp_store_release(p, v)	__atomic_store_n((p), (v), __ATOMIC_RELEASE)

#endif /* _SHIM_ASM_BARRIER_H */
