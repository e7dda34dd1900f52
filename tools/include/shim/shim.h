/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Control interface of the userspace shim (tools/testing/shim), for tests
 * and tools. Nothing in kmod/ includes this.
 */
#ifndef _SHIM_SHIM_H
#define _SHIM_SHIM_H

#include <linux/types.h>

/* WARN handling: fatal (abort) by default. */
void shim_set_warn_fatal(bool fatal);
bool shim_warn_fatal(void);
unsigned long shim_warn_count(void);

/* printk: messages at or above @level (0 emerg .. 7 debug) are printed;
 * default -1 (none) unless PMIDX_SHIM_LOG is set. */
void shim_set_loglevel(int level);
unsigned long shim_printk_count(int level);
const char *shim_printk_last(void);	/* last message, any level */

/* Allocation failure injection: the @n-th allocation from now (kmalloc,
 * kvmalloc, vmalloc, bitmap_alloc, alloc_percpu, kmem_cache) fails;
 * 0 disarms (shim_fail_alloc_fired() still tells whether it fired). */
void shim_fail_alloc_nth(unsigned long n);
/* The same, counting only the calling thread's allocations: a thread in
 * the background (a GC pass, a worker) neither fails nor fires it. */
void shim_fail_alloc_nth_self(unsigned long n);
/* Atomic memory exhausted: while @on, every allocation that may not
 * sleep fails (sleeping ones still succeed, as small ones do in the
 * kernel). Also sets shim_fail_alloc_fired(). */
void shim_fail_atomic(bool on);
/* All memory exhausted: while @on, every allocation fails, sleeping or
 * not, except __GFP_NOFAIL ones. Also sets shim_fail_alloc_fired(). */
void shim_fail_all(bool on);
bool shim_fail_alloc_fired(void);
/* Allocations asked for so far (each one failure injection counts). */
unsigned long shim_alloc_calls(void);

/* Live allocations, for leak checks that do not need LSan. */
long shim_kmalloc_live(void);
long shim_percpu_live(void);

/* Deterministic get_random_*() from @seed (generate_random_uuid too). */
void shim_random_seed(u64 seed);

/* Bind the calling thread to CPU @cpu (< nr_cpu_ids). */
void shim_set_cpu(int cpu);
void shim_cpu_unbind(void);

/* Join every work item still outstanding on any queue. */
void shim_workqueue_drain(void);

/*
 * A per-thread context pointer that work items inherit from the thread
 * that queued them (the crash simulator uses it to tell its own recovery
 * threads from the workload's).
 */
void *shim_thread_ctx(void);
void shim_set_thread_ctx(void *ctx);

/* Threads the shim started so far (work items). */
unsigned long shim_work_threads(void);

/*
 * Hold every kernel thread and work item where it sleeps (or before it
 * starts) until shim_thaw(): memory then changes only under the caller,
 * so a copy of a pool image taken in between is one instant, as a power
 * cut. Not from a kernel thread or a work item; no kernel lock held.
 */
void shim_freeze(void);
void shim_thaw(void);
/*
 * The shim's own threads, around what they run and where they sleep
 * (sched.c, workqueue.c).
 */
void shim_run_begin(void);
void shim_run_end(void);
bool shim_sleep_begin(void);
void shim_sleep_end(bool running);

#endif
