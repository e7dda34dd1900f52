/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A pool: one mapped pmem range holding a superblock, an index table and
 * an allocator. This is the part shared by the kernel module and the
 * userspace build; the kernel wraps it with a block device, a DAX mapping
 * and a char device (kmod/pool_dev.c).
 */
#ifndef _PMIDX_POOL_H
#define _PMIDX_POOL_H

#include <linux/completion.h>
#include <linux/mutex.h>
#include <linux/percpu-refcount.h>
#include <linux/rcupdate.h>
#include <linux/types.h>
#include <linux/pmidx.h>
#include "alloc.h"
#include "epoch.h"
#include "pmem.h"
#include "pmidx_format.h"

struct pmidx_pool;
struct pmidx_engine_ops;
struct pmidx_scratch_cpu;

/**
 * struct pmidx_index - an open index (DRAM)
 * @pool:    owning pool
 * @id:      what callers name the index by: its table slot plus
 *           PMIDX_MAX_INDEXES times the slot's generation, so an id kept
 *           after drop-index never reaches an index created later in the
 *           same slot
 * @engine:  enum pmidx_engine_id
 * @root:    pool offset of the engine's root object (256 bytes, zeroed at
 *           creation; an all-zero root means an empty index to every engine)
 * @ops:     the engine, NULL while the engine is not built into the module
 *           (the index then exists but serves no data operation)
 * @priv:    the engine's DRAM state
 * @opened:  the engine's open() succeeded (close() is owed)
 * @committed: committed-mode index (entry flag PMIDX_INDEX_F_COMMITTED)
 * @users:   one reference per data operation in flight (ioctl, io_uring,
 *           BATCH entry); killed by drop-index, which then waits for
 *           @drained before the engine is destroyed
 * @drained: completed when @users reaches zero after the kill
 * @handles: in-kernel API handles (pmidx_index_open()); drop-index fails
 *           with -EBUSY while any is held. Under pool->lock.
 * @name:    NUL-terminated name
 *
 * Lifetime: published in pool->indexes[] under pool->lock with
 * rcu_assign_pointer(); the data path finds it under rcu_read_lock() and
 * pins it with percpu_ref_tryget_live(&@users) (pmidx_index_get()), so a
 * dropped index is never used once drop-index has unpublished and killed
 * it, and its memory outlives every reader that could still see it.
 */
struct pmidx_index {
	struct pmidx_pool		*pool;
	u32				id;
	u32				engine;
	u64				root;
	const struct pmidx_engine_ops	*ops;
	void				*priv;
	bool				opened;
	bool				committed;
	struct percpu_ref		users;
	struct completion		drained;
	unsigned int			handles;
	char				name[PMIDX_NAME_MAX + 1];
};

#define PMIDX_INDEX_ROOT_SIZE	256

/**
 * struct pmidx_pool - an attached pool
 * @pm:        the pmem mapping and its flush counters
 * @sb:        DRAM copy of the newest superblock; protected by @lock
 * @sb_slot:   which on-media copy holds @sb
 * @alloc:     the allocator
 * @epoch:     epoch-based reclamation shared by the pool's indexes
 * @itable:    the persistent index table
 * @lock:      serialises admin operations (index create/drop, sb writes)
 * @indexes:   open indexes by table slot; written under @lock, read under
 *             RCU by the data path (see struct pmidx_index)
 * @slot_gen:  per slot, how many indexes were dropped from it since attach
 *             (the generation part of struct pmidx_index's @id); under @lock
 * @dropping:  per slot, the committed index whose entry is DROPPING: a
 *             drop in progress, or one attach could not finish (engine
 *             not built in). Keeps the slot from reuse; under @lock.
 * @drop_lock: one committed drop at a time (the allocator's deferral of
 *             DRAM frees, pmidx_free_committed_now(), is per pool)
 * @flags:     PMIDX_POOL_F_*
 * @needs_trace: objects were abandoned on purpose (allocator tests): do
 *             not write a clean state at detach, so the next attach traces
 * @recovery_ns, @recovered_objects: figures of the last attach
 * @scratch:   the data path's cached buffers, per CPU (core/dispatch.c)
 */
struct pmidx_pool {
	struct pmidx_pmem		pm;
	struct pmidx_sb			sb;
	unsigned int			sb_slot;
	struct pmidx_alloc		alloc;
	struct pmidx_epoch		epoch;
	struct pmidx_index_entry	*itable;
	struct mutex			lock;
	struct pmidx_index __rcu	*indexes[PMIDX_MAX_INDEXES];
	u32				slot_gen[PMIDX_MAX_INDEXES];
	struct pmidx_index		*dropping[PMIDX_MAX_INDEXES];
	struct mutex			drop_lock;
	u32				flags;
	bool				needs_trace;
	u64				recovery_ns;
	u64				recovered_objects;
	struct pmidx_scratch_cpu __percpu *scratch;
};

/* pool->indexes[@slot] for a writer: under pool->lock, or unpublished */
static inline struct pmidx_index *pmidx_index_slot(struct pmidx_pool *pool,
						   u32 slot)
{
	return rcu_dereference_protected(pool->indexes[slot], true);
}

int pmidx_pool_format(void *base, u64 size, bool force, const char **why);
struct pmidx_pool *pmidx_pool_open(void *base, u64 size, bool eadr,
				   const char **why);
void pmidx_pool_close(struct pmidx_pool *pool);
int pmidx_pool_enable_intents(struct pmidx_pool *pool, const char **why);
int pmidx_pool_enable_committed(struct pmidx_pool *pool, const char **why);
extern bool pmidx_recovery_verify;

int pmidx_index_create(struct pmidx_pool *pool, const char *name, u32 engine,
		       struct pmidx_index **out, const char **why);
int pmidx_index_create_id(struct pmidx_pool *pool, const char *name,
			  u32 engine, u32 *id, const char **why);
int pmidx_index_drop(struct pmidx_pool *pool, const char *name,
		     const char **why);
struct pmidx_index *pmidx_index_lookup(struct pmidx_pool *pool,
				       const char *name);
int pmidx_index_find_id(struct pmidx_pool *pool, const char *name,
			bool may_sleep, u32 *id, u32 *engine);
int pmidx_name_check(const char *name, const char **why);
struct pmidx_index *pmidx_index_get(struct pmidx_pool *pool, u32 id);
void pmidx_index_put(struct pmidx_index *idx);
struct pmidx_index *pmidx_index_get_slot(struct pmidx_pool *pool, u32 slot);
struct pmidx_index *pmidx_index_hold(struct pmidx_pool *pool,
				     const char *name);
void pmidx_index_release(struct pmidx_index *idx);
bool pmidx_index_commit_bits(struct pmidx_index *idx, u64 *bits);

const char *pmidx_engine_name(u32 engine);
u32 pmidx_engine_by_name(const char *name);

/**
 * struct pmidx_stats - a set of statistics keyed by enum pmidx_stat
 * @have: bit N set when @val[N] was reported (absent ones are not sent)
 */
struct pmidx_stats {
	u64	have;
	u64	val[PMIDX_STAT_MAX + 1];
};

static inline void pmidx_stat_set(struct pmidx_stats *s, unsigned int key,
				  u64 val)
{
	BUILD_BUG_ON(PMIDX_STAT_MAX >= 64);
	s->have |= 1ULL << key;
	s->val[key] = val;
}

void pmidx_pool_stats(struct pmidx_pool *pool, struct pmidx_stats *s);
void pmidx_index_stats(struct pmidx_index *idx, struct pmidx_stats *s);

#endif /* _PMIDX_POOL_H */
