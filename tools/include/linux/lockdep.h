/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Userspace shim: the part of lockdep a test can check. Every shim lock
 * (spinlock_t, struct mutex, rw_semaphore) embeds a dep_map recording its
 * owner, so lockdep_assert_held() can tell whether *this* thread holds it.
 * Sleeping (mutex_lock, GFP_KERNEL allocations, cond_resched) while a
 * spinlock is held is reported as a WARN, like CONFIG_DEBUG_ATOMIC_SLEEP.
 */
#ifndef _SHIM_LINUX_LOCKDEP_H
#define _SHIM_LINUX_LOCKDEP_H

#include <pthread.h>
#include <linux/types.h>
#include <linux/bug.h>

struct lockdep_map {
	unsigned long	owner;		/* pthread_self() of the holder, 0 if none */
};

struct lock_class_key {
	int unused;
};

static inline unsigned long shim_self(void)
{
	return (unsigned long)pthread_self();
}

static inline bool shim_lock_held_by_me(const struct lockdep_map *m)
{
	return __atomic_load_n(&m->owner, __ATOMIC_RELAXED) == shim_self();
}

static inline void shim_lock_acquired(struct lockdep_map *m)
{
	__atomic_store_n(&m->owner, shim_self(), __ATOMIC_RELAXED);
}

static inline void shim_lock_releasing(struct lockdep_map *m)
{
	WARN(!shim_lock_held_by_me(m), "releasing a lock this thread does not hold");
	__atomic_store_n(&m->owner, 0UL, __ATOMIC_RELAXED);
}

/* atomic-context depth of this thread: spinlocks held, preempt_disable() */
extern __thread int shim_atomic_depth;

void shim_might_sleep(const char *file, int line);
#define might_sleep()	shim_might_sleep(__FILE__, __LINE__)
#define might_sleep_if(cond) do { if (cond) might_sleep(); } while (0)

#define lockdep_assert_held(l) \
	WARN(!shim_lock_held_by_me(&(l)->dep_map), "lock %s not held", #l)
#define lockdep_assert_not_held(l) \
	WARN(shim_lock_held_by_me(&(l)->dep_map), "lock %s held", #l)
#define lockdep_assert_held_write(l)	lockdep_assert_held(l)
#define lockdep_assert_held_read(l)	lockdep_assert_held(l)
#define lockdep_assert_held_once(l)	lockdep_assert_held(l)
#define lockdep_assert_irqs_disabled()	do { } while (0)
#define lockdep_assert_irqs_enabled()	do { } while (0)
#define lockdep_set_class(l, k)		do { (void)(k); } while (0)
#define lockdep_assert(cond)		WARN_ON(!(cond))
#define lockdep_assert_preemption_disabled() \
	WARN(!in_atomic(), "preemption not disabled")

#endif
