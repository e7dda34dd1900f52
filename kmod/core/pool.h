/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A pool: one mapped pmem range holding a superblock, an index table and
 * an allocator. This is the part shared by the kernel module and the
 * userspace build; the kernel wraps it with a block device, a DAX mapping
 * and a char device (kmod/pool_dev.c).
 */
#ifndef _PMIDX_POOL_H
#define _PMIDX_POOL_H

#include <linux/mutex.h>
#include <linux/types.h>
#include <linux/pmidx.h>
#include "alloc.h"
#include "epoch.h"
#include "pmem.h"
#include "pmidx_format.h"

struct pmidx_pool;
struct pmidx_engine_ops;

/**
 * struct pmidx_index - an open index (DRAM)
 * @pool:   owning pool
 * @id:     slot in the index table
 * @engine: enum pmidx_engine_id
 * @root:   pool offset of the engine's root object (256 bytes, zeroed at
 *          creation; an all-zero root means an empty index to every engine)
 * @ops:    the engine, NULL while the engine is not built into the module
 *          (the index then exists but serves no data operation)
 * @priv:   the engine's DRAM state
 * @opened: the engine's open() succeeded (close() is owed)
 * @name:   NUL-terminated name
 */
struct pmidx_index {
	struct pmidx_pool		*pool;
	u32				id;
	u32				engine;
	u64				root;
	const struct pmidx_engine_ops	*ops;
	void				*priv;
	bool				opened;
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
 * @indexes:   open indexes by table slot; written under @lock, published
 *             with release semantics for the lockless data path
 * @flags:     PMIDX_POOL_F_*
 * @needs_trace: objects were abandoned on purpose (allocator tests): do
 *             not write a clean state at detach, so the next attach traces
 * @recovery_ns, @recovered_objects: figures of the last attach
 */
struct pmidx_pool {
	struct pmidx_pmem		pm;
	struct pmidx_sb			sb;
	unsigned int			sb_slot;
	struct pmidx_alloc		alloc;
	struct pmidx_epoch		epoch;
	struct pmidx_index_entry	*itable;
	struct mutex			lock;
	struct pmidx_index		*indexes[PMIDX_MAX_INDEXES];
	u32				flags;
	bool				needs_trace;
	u64				recovery_ns;
	u64				recovered_objects;
};

int pmidx_pool_format(void *base, u64 size, bool force, const char **why);
struct pmidx_pool *pmidx_pool_open(void *base, u64 size, bool eadr,
				   const char **why);
void pmidx_pool_close(struct pmidx_pool *pool);

int pmidx_index_create(struct pmidx_pool *pool, const char *name, u32 engine,
		       struct pmidx_index **out, const char **why);
int pmidx_index_drop(struct pmidx_pool *pool, const char *name,
		     const char **why);
struct pmidx_index *pmidx_index_lookup(struct pmidx_pool *pool,
				       const char *name);
int pmidx_name_check(const char *name, const char **why);
struct pmidx_index *pmidx_index_get(struct pmidx_pool *pool, u32 id);

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
