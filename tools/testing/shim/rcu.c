// SPDX-License-Identifier: GPL-2.0
/*
 * Userspace shim: RCU over liburcu's memb flavour (see <linux/rcupdate.h>).
 * Only liburcu's headers are included here: its rcu_* macros and the
 * shim's kernel names would clash.
 */
#include <shim/sanitizer.h>

#ifdef SHIM_TSAN
#include <pthread.h>

pthread_rwlock_t shim_rcu_lock = PTHREAD_RWLOCK_INITIALIZER;
#else
#define _LGPL_SOURCE		/* inline read sections */
#include <pthread.h>
#include <stdbool.h>
#include <urcu/urcu-memb.h>

static pthread_key_t rcu_key;
static pthread_once_t rcu_once = PTHREAD_ONCE_INIT;
static __thread bool rcu_registered;

/* at the exit of a thread that was a reader */
static void rcu_unregister(void *arg)
{
	urcu_memb_unregister_thread();
}

static void rcu_key_init(void)
{
	pthread_key_create(&rcu_key, rcu_unregister);
}

static void rcu_register(void)
{
	pthread_once(&rcu_once, rcu_key_init);
	urcu_memb_register_thread();
	pthread_setspecific(rcu_key, &rcu_registered);
	rcu_registered = true;
}

void rcu_read_lock(void)
{
	if (__builtin_expect(!rcu_registered, 0))
		rcu_register();
	urcu_memb_read_lock();
}

void rcu_read_unlock(void)
{
	urcu_memb_read_unlock();
}

void synchronize_rcu(void)
{
	urcu_memb_synchronize_rcu();
}
#endif
