/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Userspace shim: RCU.
 *
 * liburcu's memb flavour (membarrier-based: a read section is a
 * thread-local counter and a compiler barrier; synchronize_rcu() waits
 * out every reader that began before it). Readers register with liburcu
 * on their first section and unregister when they exit
 * (tools/testing/shim/rcu.c). Sections nest.
 *
 * ThreadSanitizer cannot see liburcu's ordering (membarrier, futexes), so
 * the TSan build keeps a reader-writer lock instead: readers take it
 * shared (glibc's default rwlock prefers readers, so sections nest) and
 * synchronize_rcu() takes it exclusively once. Same guarantee, and the
 * happens-before edges TSan needs; one shared line per section.
 */
#ifndef _SHIM_LINUX_RCUPDATE_H
#define _SHIM_LINUX_RCUPDATE_H

#include <linux/compiler.h>
#include <shim/sanitizer.h>

#define __rcu

#ifdef SHIM_TSAN
#include <pthread.h>

extern pthread_rwlock_t shim_rcu_lock;

static inline void rcu_read_lock(void)
{
	pthread_rwlock_rdlock(&shim_rcu_lock);
}

static inline void rcu_read_unlock(void)
{
	pthread_rwlock_unlock(&shim_rcu_lock);
}

static inline void synchronize_rcu(void)
{
	pthread_rwlock_wrlock(&shim_rcu_lock);
	pthread_rwlock_unlock(&shim_rcu_lock);
}
#else
/* tools/testing/shim/rcu.c: liburcu's names clash with the kernel's */
void rcu_read_lock(void);
void rcu_read_unlock(void);
void synchronize_rcu(void);
#endif

#define rcu_dereference(p)		__atomic_load_n(&(p), __ATOMIC_ACQUIRE)
#define rcu_dereference_protected(p, c)	(p)
#define rcu_access_pointer(p)		__atomic_load_n(&(p), __ATOMIC_RELAXED)
#define rcu_assign_pointer(p, v)	__atomic_store_n(&(p), (v), __ATOMIC_RELEASE)
#define RCU_INIT_POINTER(p, v)		__atomic_store_n(&(p), (v), __ATOMIC_RELAXED)

#endif /* _SHIM_LINUX_RCUPDATE_H */
