/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Userspace shim: percpu_ref as one atomic counter and a dead flag, with
 * the kernel's rule: percpu_ref_kill() makes every later tryget_live()
 * fail, waits out the readers that might have seen it alive (the shim's
 * RCU), then drops the initial reference; release runs at zero.
 */
#ifndef _SHIM_LINUX_PERCPU_REFCOUNT_H
#define _SHIM_LINUX_PERCPU_REFCOUNT_H

#include <linux/types.h>
#include <linux/gfp.h>
#include <linux/rcupdate.h>

struct percpu_ref;
typedef void (percpu_ref_func_t)(struct percpu_ref *);

struct percpu_ref {
	long			count;
	bool			dead;
	percpu_ref_func_t	*release;
};

static inline int percpu_ref_init(struct percpu_ref *ref,
				  percpu_ref_func_t *release,
				  unsigned int flags, gfp_t gfp)
{
	ref->count = 1;
	ref->dead = false;
	ref->release = release;
	return 0;
}

static inline void percpu_ref_exit(struct percpu_ref *ref)
{
}

static inline void percpu_ref_put(struct percpu_ref *ref)
{
	if (__atomic_sub_fetch(&ref->count, 1, __ATOMIC_ACQ_REL) == 0)
		ref->release(ref);
}

static inline void percpu_ref_get(struct percpu_ref *ref)
{
	__atomic_add_fetch(&ref->count, 1, __ATOMIC_RELAXED);
}

/* Context: inside rcu_read_lock(), like the kernel's. */
static inline bool percpu_ref_tryget_live(struct percpu_ref *ref)
{
	if (__atomic_load_n(&ref->dead, __ATOMIC_ACQUIRE))
		return false;
	__atomic_add_fetch(&ref->count, 1, __ATOMIC_ACQ_REL);
	return true;
}

static inline void percpu_ref_kill(struct percpu_ref *ref)
{
	__atomic_store_n(&ref->dead, true, __ATOMIC_RELEASE);
	synchronize_rcu();
	percpu_ref_put(ref);
}

static inline bool percpu_ref_is_zero(struct percpu_ref *ref)
{
	return !__atomic_load_n(&ref->count, __ATOMIC_ACQUIRE);
}

#endif /* _SHIM_LINUX_PERCPU_REFCOUNT_H */
