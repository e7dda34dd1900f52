/* SPDX-License-Identifier: GPL-2.0 */
/* Userspace shim: rw_semaphore on a pthread rwlock; dep_map tracks the writer. */
#ifndef _SHIM_LINUX_RWSEM_H
#define _SHIM_LINUX_RWSEM_H

#include <pthread.h>
#include <linux/types.h>
#include <linux/lockdep.h>

struct rw_semaphore {
	pthread_rwlock_t	l;
	struct lockdep_map	dep_map;	/* the writer */
};

#define __RWSEM_INITIALIZER(name)	{ .l = PTHREAD_RWLOCK_INITIALIZER }
#define DECLARE_RWSEM(name)	struct rw_semaphore name = __RWSEM_INITIALIZER(name)

static inline void init_rwsem(struct rw_semaphore *s)
{
	pthread_rwlock_init(&s->l, NULL);
	s->dep_map.owner = 0;
}

static inline void down_read(struct rw_semaphore *s)
{
	might_sleep();
	pthread_rwlock_rdlock(&s->l);
}

static inline int down_read_trylock(struct rw_semaphore *s)
{
	return !pthread_rwlock_tryrdlock(&s->l);
}

static inline void up_read(struct rw_semaphore *s)
{
	pthread_rwlock_unlock(&s->l);
}

static inline void down_write(struct rw_semaphore *s)
{
	might_sleep();
	BUG_ON(shim_lock_held_by_me(&s->dep_map));
	pthread_rwlock_wrlock(&s->l);
	shim_lock_acquired(&s->dep_map);
}

static inline int down_write_trylock(struct rw_semaphore *s)
{
	if (pthread_rwlock_trywrlock(&s->l))
		return 0;
	shim_lock_acquired(&s->dep_map);
	return 1;
}

static inline void up_write(struct rw_semaphore *s)
{
	shim_lock_releasing(&s->dep_map);
	pthread_rwlock_unlock(&s->l);
}

#define down_read_nested(s, c)	down_read(s)
#define down_write_nested(s, c)	down_write(s)

#endif
