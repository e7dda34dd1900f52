/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Userspace shim: RCU as a reader-writer lock. Readers take it shared
 * (glibc's default rwlock prefers readers, so read sections nest), and
 * synchronize_rcu() takes it exclusively once, which waits out every
 * reader that began before it. Slower than real RCU under contention,
 * but it has the guarantee the module relies on.
 */
#ifndef _SHIM_LINUX_RCUPDATE_H
#define _SHIM_LINUX_RCUPDATE_H

#include <pthread.h>
#include <linux/compiler.h>

#define __rcu

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

#define rcu_dereference(p)		__atomic_load_n(&(p), __ATOMIC_ACQUIRE)
#define rcu_dereference_protected(p, c)	(p)
#define rcu_access_pointer(p)		__atomic_load_n(&(p), __ATOMIC_RELAXED)
#define rcu_assign_pointer(p, v)	__atomic_store_n(&(p), (v), __ATOMIC_RELEASE)
#define RCU_INIT_POINTER(p, v)		__atomic_store_n(&(p), (v), __ATOMIC_RELAXED)

#endif /* _SHIM_LINUX_RCUPDATE_H */
