/* SPDX-License-Identifier: GPL-2.0 */
/* Userspace shim: sleeping mutexes, with lockdep-style owner checks. */
#ifndef _SHIM_LINUX_MUTEX_H
#define _SHIM_LINUX_MUTEX_H

#include <pthread.h>
#include <linux/types.h>
#include <linux/lockdep.h>
#include <linux/bug.h>

struct mutex {
	pthread_mutex_t		m;
	struct lockdep_map	dep_map;
};

#define __MUTEX_INITIALIZER(x)	{ .m = PTHREAD_MUTEX_INITIALIZER }
#define DEFINE_MUTEX(x)		struct mutex x = __MUTEX_INITIALIZER(x)

static inline void mutex_init(struct mutex *l)
{
	pthread_mutex_init(&l->m, NULL);
	l->dep_map.owner = 0;
}

static inline void mutex_destroy(struct mutex *l)
{
	WARN(__atomic_load_n(&l->dep_map.owner, __ATOMIC_RELAXED),
	     "destroying a locked mutex");
	pthread_mutex_destroy(&l->m);
}

static inline void mutex_lock(struct mutex *l)
{
	might_sleep();
	BUG_ON(shim_lock_held_by_me(&l->dep_map));	/* recursive mutex */
	pthread_mutex_lock(&l->m);
	shim_lock_acquired(&l->dep_map);
}

static inline int mutex_lock_interruptible(struct mutex *l)
{
	mutex_lock(l);
	return 0;
}

static inline int mutex_lock_killable(struct mutex *l)
{
	mutex_lock(l);
	return 0;
}

#define mutex_lock_nested(l, subclass)	mutex_lock(l)

static inline int mutex_trylock(struct mutex *l)
{
	if (pthread_mutex_trylock(&l->m))
		return 0;
	shim_lock_acquired(&l->dep_map);
	return 1;
}

static inline void mutex_unlock(struct mutex *l)
{
	shim_lock_releasing(&l->dep_map);
	pthread_mutex_unlock(&l->m);
}

static inline bool mutex_is_locked(struct mutex *l)
{
	return __atomic_load_n(&l->dep_map.owner, __ATOMIC_RELAXED) != 0;
}

/* what the kernel header brings in transitively */
#include <linux/kernel.h>
#include <linux/string.h>

#endif
