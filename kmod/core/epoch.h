/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Epoch-based reclamation (Fraser's EBR): readers and writers run inside
 * an epoch section; an object unlinked in epoch E is freed once every CPU
 * has been seen outside a section or in epoch E + 1, i.e. two epochs later.
 */
#ifndef _PMIDX_EPOCH_H
#define _PMIDX_EPOCH_H

#include <linux/atomic.h>
#include <linux/percpu.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/workqueue.h>

struct pmidx_epoch_cpu;

struct pmidx_epoch {
	atomic64_t			global;
	struct pmidx_epoch_cpu __percpu	*pcpu;
	void				(*free_fn)(void *ctx, u64 obj);
	void				*ctx;
	spinlock_t			advance_lock;
	struct work_struct		grow_work;	/* limbo lists, where it may sleep */
	atomic_long_t			abandoned;	/* objects that could not be retired */
};

int pmidx_epoch_init(struct pmidx_epoch *e, void (*free_fn)(void *ctx, u64 obj),
		     void *ctx);
void pmidx_epoch_destroy(struct pmidx_epoch *e);	/* frees every retired object */
void pmidx_epoch_enter(struct pmidx_epoch *e);
void pmidx_epoch_exit(struct pmidx_epoch *e);
void pmidx_epoch_retire(struct pmidx_epoch *e, u64 obj);
/* like pmidx_epoch_retire(), but @fn(@ctx, @obj) frees it instead of free_fn */
void pmidx_epoch_retire_fn(struct pmidx_epoch *e, u64 obj,
			   void (*fn)(void *ctx, u64 obj), void *ctx);
bool pmidx_epoch_room(struct pmidx_epoch *e, unsigned int n);
void pmidx_epoch_barrier(struct pmidx_epoch *e);	/* free all retired, waiting */

#endif /* _PMIDX_EPOCH_H */
