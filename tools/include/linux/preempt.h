/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Userspace shim: preemption. A thread keeps the CPU it was bound to (see
 * <linux/cpumask.h>) for life, and a preempt_disable() section owns that
 * CPU: should more threads than CPUs exist, two threads sharing a CPU
 * never run such sections at once, which is what per-CPU code (epochs,
 * per-CPU caches) relies on in the kernel.
 *
 * The protocol is in tools/testing/shim/core.c (struct shim_cpu). A
 * section of a thread alone on its CPU takes no lock and is inline here,
 * as the kernel's preempt_disable() is an inline per-CPU increment; the
 * rest (binding, a shared CPU's lock, ThreadSanitizer builds, where
 * @shim_cpu_fast stays NULL) is out of line.
 */
#ifndef _SHIM_LINUX_PREEMPT_H
#define _SHIM_LINUX_PREEMPT_H

#include <pthread.h>
#include <linux/bug.h>
#include <linux/compiler.h>
#include <linux/lockdep.h>

/*
 * One CPU. @bound counts the live threads bound to it; @alone: a section
 * runs without @lock; @busy: a section holds the CPU (a hint for binding).
 */
struct shim_cpu {
	pthread_mutex_t	lock;
	unsigned int	bound;
	bool		alone;
	bool		busy;
};

extern __thread int shim_preempt_depth;
extern __thread bool shim_cpu_excl;
/* the thread's CPU where its sections may run unlocked, else NULL */
extern __thread struct shim_cpu *shim_cpu_fast;
/* the section began out of line, and ends there */
extern __thread bool shim_section_slow;

void shim_section_begin_slow(void);
void shim_section_end_slow(void);

static __always_inline void shim_preempt_disable(void)
{
	struct shim_cpu *c = shim_cpu_fast;

	if (shim_preempt_depth++ == 0) {
		if (likely(c)) {
			/* the section's side of the fence (core.c) */
			__atomic_store_n(&c->alone, true, __ATOMIC_RELAXED);
			__atomic_signal_fence(__ATOMIC_SEQ_CST);
			if (likely(__atomic_load_n(&c->bound, __ATOMIC_ACQUIRE) == 1)) {
				__atomic_store_n(&c->busy, true, __ATOMIC_RELAXED);
				shim_cpu_excl = true;
				goto entered;
			}
			__atomic_store_n(&c->alone, false, __ATOMIC_RELEASE);
		}
		shim_section_begin_slow();
	}
entered:
	shim_atomic_depth++;
	barrier();
}

static __always_inline void shim_preempt_enable(void)
{
	struct shim_cpu *c = shim_cpu_fast;

	barrier();
	shim_atomic_depth--;
	BUG_ON(shim_preempt_depth <= 0);
	if (--shim_preempt_depth)
		return;
	if (unlikely(shim_section_slow)) {
		shim_section_end_slow();
		return;
	}
	shim_cpu_excl = false;
	__atomic_store_n(&c->busy, false, __ATOMIC_RELAXED);
	__atomic_store_n(&c->alone, false, __ATOMIC_RELEASE);
}

#define preempt_disable()	shim_preempt_disable()
#define preempt_enable()	shim_preempt_enable()
#define preempt_disable_notrace() preempt_disable()
#define preempt_enable_notrace()  preempt_enable()
#define migrate_disable()	do { } while (0)
#define migrate_enable()	do { } while (0)
#define in_atomic()		(shim_atomic_depth > 0)
#define in_interrupt()		0
#define in_irq()		0
#define in_task()		1

#endif
