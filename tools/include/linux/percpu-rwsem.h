/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Userspace shim: percpu_rw_semaphore on a pthread rwlock, as rwsem.h
 * (ThreadSanitizer sees the same happens-before as with the kernel's:
 * a writer excludes every reader; readers do not exclude each other).
 * The kernel's reader fast path (a per-CPU counter, no shared store) is
 * what an engine picks it for; here only the semantics are kept.
 */
#ifndef _SHIM_LINUX_PERCPU_RWSEM_H
#define _SHIM_LINUX_PERCPU_RWSEM_H

#include <linux/rwsem.h>

struct percpu_rw_semaphore {
	struct rw_semaphore	rw;
};

static inline int percpu_init_rwsem(struct percpu_rw_semaphore *s)
{
	init_rwsem(&s->rw);
	return 0;
}

static inline void percpu_free_rwsem(struct percpu_rw_semaphore *s)
{
	pthread_rwlock_destroy(&s->rw.l);
}

static inline void percpu_down_read(struct percpu_rw_semaphore *s)
{
	down_read(&s->rw);
}

static inline bool percpu_down_read_trylock(struct percpu_rw_semaphore *s)
{
	return down_read_trylock(&s->rw);
}

static inline void percpu_up_read(struct percpu_rw_semaphore *s)
{
	up_read(&s->rw);
}

static inline void percpu_down_write(struct percpu_rw_semaphore *s)
{
	down_write(&s->rw);
}

static inline void percpu_up_write(struct percpu_rw_semaphore *s)
{
	up_write(&s->rw);
}

#define percpu_rwsem_assert_held(s)	lockdep_assert_held(&(s)->rw)

#endif
