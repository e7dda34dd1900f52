/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Userspace shim: spinlocks are pthread mutexes (ThreadSanitizer knows
 * them, including its lock-order checking). Recursion on one lock is a
 * self-deadlock in the kernel and is reported here instead of hanging.
 */
#ifndef _SHIM_LINUX_SPINLOCK_H
#define _SHIM_LINUX_SPINLOCK_H

#include <pthread.h>
#include <linux/types.h>
#include <linux/lockdep.h>
#include <linux/bug.h>
#include <linux/compiler.h>

typedef struct spinlock {
	pthread_mutex_t		m;
	struct lockdep_map	dep_map;
} spinlock_t;

typedef spinlock_t raw_spinlock_t;

#define __SPIN_LOCK_UNLOCKED(x)	{ .m = PTHREAD_MUTEX_INITIALIZER }
#define DEFINE_SPINLOCK(x)	spinlock_t x = __SPIN_LOCK_UNLOCKED(x)
#define DEFINE_RAW_SPINLOCK(x)	DEFINE_SPINLOCK(x)

static inline void spin_lock_init(spinlock_t *l)
{
	pthread_mutex_init(&l->m, NULL);
	l->dep_map.owner = 0;
}

static inline void spin_lock(spinlock_t *l)
{
	BUG_ON(shim_lock_held_by_me(&l->dep_map));	/* recursive spinlock */
	pthread_mutex_lock(&l->m);
	shim_lock_acquired(&l->dep_map);
	shim_atomic_depth++;
}

static inline int spin_trylock(spinlock_t *l)
{
	if (pthread_mutex_trylock(&l->m))
		return 0;
	shim_lock_acquired(&l->dep_map);
	shim_atomic_depth++;
	return 1;
}

static inline void spin_unlock(spinlock_t *l)
{
	shim_atomic_depth--;
	shim_lock_releasing(&l->dep_map);
	pthread_mutex_unlock(&l->m);
}

static inline int spin_is_locked(spinlock_t *l)
{
	return __atomic_load_n(&l->dep_map.owner, __ATOMIC_RELAXED) != 0;
}

/*
 * A lock is an acquire only: a full barrier where one is wanted. On x86
 * the lock's locked instruction is one already (as in the kernel, where
 * x86 leaves this empty).
 */
#if defined(__x86_64__) || defined(__i386__)
#define smp_mb__after_spinlock()	__atomic_signal_fence(__ATOMIC_SEQ_CST)
#else
#define smp_mb__after_spinlock()	__atomic_thread_fence(__ATOMIC_SEQ_CST)
#endif

#define assert_spin_locked(l)	lockdep_assert_held(l)

#define spin_lock_bh(l)		spin_lock(l)
#define spin_unlock_bh(l)	spin_unlock(l)
#define spin_lock_irq(l)	spin_lock(l)
#define spin_unlock_irq(l)	spin_unlock(l)
#define spin_lock_irqsave(l, flags) \
	do { (flags) = 0; spin_lock(l); } while (0)
#define spin_unlock_irqrestore(l, flags) \
	do { (void)(flags); spin_unlock(l); } while (0)
#define spin_lock_nested(l, subclass)	spin_lock(l)

#define raw_spin_lock_init	spin_lock_init
#define raw_spin_lock		spin_lock
#define raw_spin_unlock		spin_unlock
#define raw_spin_trylock	spin_trylock
#define raw_spin_lock_irqsave	spin_lock_irqsave
#define raw_spin_unlock_irqrestore spin_unlock_irqrestore

#define local_irq_save(flags)		do { (flags) = 0; } while (0)
#define local_irq_restore(flags)	do { (void)(flags); } while (0)
#define local_irq_disable()		do { } while (0)
#define local_irq_enable()		do { } while (0)

/*
 * rwlock_t on a pthread rwlock: readers share it, the writer is recorded
 * for lockdep_assert_held(); both count as atomic context, as in the
 * kernel (preemption off).
 */
typedef struct {
	pthread_rwlock_t	l;
	struct lockdep_map	dep_map;
} rwlock_t;

static inline void rwlock_init(rwlock_t *l)
{
	pthread_rwlock_init(&l->l, NULL);
	l->dep_map.owner = 0;
}

static inline void read_lock(rwlock_t *l)
{
	BUG_ON(shim_lock_held_by_me(&l->dep_map));
	pthread_rwlock_rdlock(&l->l);
	shim_atomic_depth++;
}

static inline void read_unlock(rwlock_t *l)
{
	shim_atomic_depth--;
	pthread_rwlock_unlock(&l->l);
}

static inline void write_lock(rwlock_t *l)
{
	BUG_ON(shim_lock_held_by_me(&l->dep_map));
	pthread_rwlock_wrlock(&l->l);
	shim_lock_acquired(&l->dep_map);
	shim_atomic_depth++;
}

static inline void write_unlock(rwlock_t *l)
{
	shim_atomic_depth--;
	shim_lock_releasing(&l->dep_map);
	pthread_rwlock_unlock(&l->l);
}

#include <linux/preempt.h>

/* what the kernel header brings in transitively */
#include <linux/kernel.h>
#include <linux/string.h>

#endif
