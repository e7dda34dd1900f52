// SPDX-License-Identifier: GPL-2.0
/*
 * The index table: PMIDX_MAX_INDEXES named slots per pool.
 *
 * Create: allocate and persist a zeroed root object, persist the entry's
 * body, then commit it with one 8-byte store of its commit word. Drop:
 * clear the commit word (durable), then free the root. A crash anywhere
 * leaves either no index or a whole one; a root that lost its entry is
 * unreachable and recovery frees it.
 *
 * Drop of a committed-mode index (PMIDX_INDEX_F_COMMITTED). Its objects
 * stay allocated after a crash by their commit bits, not by a trace, so
 * clearing the entry first would leak them for good. Instead:
 *   1. commit := DROPPING (durable): the index is gone for every user;
 *   2. destroy(): the engine clears each object's commit bit durably
 *      (pmidx_free_committed_now()); the DRAM frees are deferred, so no
 *      object of the index is reused while step 3 is not durable;
 *   3. commit := 0 (durable), then the deferred DRAM frees and the root.
 * A crash in 1..3 leaves a DROPPING entry: the next attach resumes the
 * drop synchronously, before the pool is used and before anything can
 * allocate (pmidx_index_resume_drops()): open() and destroy() again, over
 * a structure that no one else's object has replaced, whose freed parts
 * the allocator skips. Synchronous because a background resume would
 * race with allocations of the other indexes, which could reuse an
 * object the walk has not passed yet. It costs O(dropped index) only on
 * the attach after a crash during a drop.
 *
 * An attach by a module that does not serve the engine cannot resume
 * the drop: the entry stays DROPPING, and "no one else's object has
 * replaced" the structure must then hold across that whole attach, and
 * any number of such attaches. So while a pool holds such an entry the
 * attach freezes committed-mode space (pool_recover(), alloc.h "A drop
 * that waits for its engine"): no committed chunk is released, not even
 * an empty one, no committed object is allocated, and creating a
 * committed-mode index fails with -EBUSY. Traced indexes work as usual.
 * The next attach by a module with the engine resumes the drop unfrozen.
 *
 * Locking: pool->lock serialises create/drop and guards pool->indexes[]
 * and pool->dropping[] (writes) and every index's @handles. The data
 * path reads the array under RCU and pins what it finds (struct
 * pmidx_index, "Lifetime"). pool->drop_lock (outside pool->lock) keeps
 * committed drops one at a time. Detach cannot overlap a drop (the
 * caller pins the pool, pool_dev.c); attach finishes its resumed drops
 * before the pool is published.
 */
#include <linux/crc32.h>
#include <linux/cpumask.h>
#include <linux/ctype.h>
#include <linux/errno.h>
#include <linux/printk.h>
#include <linux/slab.h>
#include <linux/string.h>
#include "engine.h"
#include "index_table.h"

static u32 entry_crc(const struct pmidx_index_entry *e)
{
	return ~__crc32c_le(~0U, (const u8 *)e,
			    offsetof(struct pmidx_index_entry, crc));
}

static bool entry_live(const struct pmidx_index_entry *e)
{
	return (le64_to_cpu(READ_ONCE(e->commit)) & PMIDX_INDEX_LIVE_MASK) ==
	       PMIDX_INDEX_LIVE;
}

static bool entry_dropping(const struct pmidx_index_entry *e)
{
	return (le64_to_cpu(READ_ONCE(e->commit)) & PMIDX_INDEX_LIVE_MASK) ==
	       PMIDX_INDEX_DROPPING;
}

void pmidx_index_table_format(struct pmidx_pmem *pm)
{
	pmidx_memset_persist(pm, pmidx_ptr(pm, PMIDX_INDEX_TABLE_OFF), 0,
			     PMIDX_MAX_INDEXES * PMIDX_INDEX_ENTRY_SIZE);
}

/**
 * pmidx_name_check - index names: 1..PMIDX_NAME_MAX of [A-Za-z0-9._:-]
 */
int pmidx_name_check(const char *name, const char **why)
{
	size_t len = strnlen(name, PMIDX_NAME_MAX + 1);
	size_t i;

	if (!len) {
		*why = "index name is empty";
		return -EINVAL;
	}
	if (len > PMIDX_NAME_MAX) {
		*why = "index name longer than 63 bytes";
		return -ENAMETOOLONG;
	}
	for (i = 0; i < len; i++) {
		/* isascii(): the kernel's isalnum() also takes Latin-1 letters */
		if (!isascii(name[i]) ||
		    (!isalnum(name[i]) && !strchr("._:-", name[i]))) {
			*why = "index name may only hold letters, digits and ._:-";
			return -EINVAL;
		}
	}
	return 0;
}

static void index_users_gone(struct percpu_ref *ref)
{
	struct pmidx_index *idx = container_of(ref, struct pmidx_index, users);

	complete(&idx->drained);
}

static struct pmidx_index *index_new(struct pmidx_pool *pool, u32 slot,
				     const struct pmidx_index_entry *e)
{
	struct pmidx_index *idx = kzalloc(sizeof(*idx), GFP_KERNEL);

	if (!idx)
		return NULL;
	if (percpu_ref_init(&idx->users, index_users_gone, 0, GFP_KERNEL)) {
		kfree(idx);
		return NULL;
	}
	init_completion(&idx->drained);
	idx->pool = pool;
	idx->id = slot + PMIDX_MAX_INDEXES * pool->slot_gen[slot];
	idx->engine = le32_to_cpu(e->engine);
	idx->root = le64_to_cpu(e->root);
	idx->committed = le32_to_cpu(e->flags) & PMIDX_INDEX_F_COMMITTED;
	idx->ops = pmidx_engine_ops(idx->engine);
	memcpy(idx->name, e->name, le32_to_cpu(e->name_len));
	return idx;
}

static void index_free(struct pmidx_index *idx)
{
	percpu_ref_exit(&idx->users);
	kfree(idx);
}

/* Validate a live or dropping entry read from media. */
static int entry_check(struct pmidx_pool *pool, const struct pmidx_index_entry *e)
{
	u32 flags = le32_to_cpu(e->flags);
	u32 len = le32_to_cpu(e->name_len);
	char name[PMIDX_NAME_MAX + 1];
	const char *why;
	u64 root = le64_to_cpu(e->root);

	if (entry_crc(e) != le32_to_cpu(e->crc) || !len || len > PMIDX_NAME_MAX)
		return -EUCLEAN;
	memcpy(name, e->name, len);
	name[len] = 0;
	if (pmidx_name_check(name, &why) || strnlen(e->name, 64) != len)
		return -EUCLEAN;
	if (!pmidx_engine_name(le32_to_cpu(e->engine)))
		return -EUCLEAN;
	/* flags came with COMMITTED_IDX; so did DROPPING */
	if (flags & ~PMIDX_INDEX_F_KNOWN ||
	    ((flags || entry_dropping(e)) &&
	     !(le64_to_cpu(pool->sb.feat_incompat) &
	       PMIDX_FEAT_INCOMPAT_COMMITTED_IDX)))
		return -EUCLEAN;
	if (entry_dropping(e) && !(flags & PMIDX_INDEX_F_COMMITTED))
		return -EUCLEAN;
	if (root < le64_to_cpu(pool->sb.data_off) ||
	    root + PMIDX_INDEX_ROOT_SIZE > le64_to_cpu(pool->sb.size) ||
	    root & (PMIDX_MIN_OBJ - 1))
		return -EUCLEAN;
	return 0;
}

/**
 * pmidx_index_table_load - open every live index of the table
 */
int pmidx_index_table_load(struct pmidx_pool *pool, const char **why)
{
	struct pmidx_index_entry e;
	struct pmidx_index *idx;
	unsigned int i, j;
	int ret;

	for (i = 0; i < PMIDX_MAX_INDEXES; i++) {
		ret = pmidx_read_media(&e, &pool->itable[i], sizeof(e));
		if (ret) {
			*why = "media error reading the index table";
			goto err;
		}
		if (!entry_live(&e) && !entry_dropping(&e))
			continue;
		ret = entry_check(pool, &e);
		if (ret) {
			pr_err("pmidx: index table entry %u is corrupt\n", i);
			*why = "index table entry corrupt";
			goto err;
		}
		if (entry_dropping(&e)) {
			/* pool_recover() finishes its drop */
			pool->dropping[i] = index_new(pool, i, &e);
			if (!pool->dropping[i]) {
				ret = -ENOMEM;
				goto err;
			}
			continue;
		}
		for (j = 0; j < i; j++) {
			if (pmidx_index_slot(pool, j) &&
			    !strcmp(pmidx_index_slot(pool, j)->name, e.name)) {
				*why = "index table holds a name twice";
				ret = -EUCLEAN;
				goto err;
			}
		}
		idx = index_new(pool, i, &e);
		if (!idx) {
			ret = -ENOMEM;
			goto err;
		}
		RCU_INIT_POINTER(pool->indexes[i], idx);
	}
	return 0;
err:
	pmidx_index_table_unload(pool, false);
	return ret;
}

/*
 * Close engines (@clean: a clean detach) and forget every index.
 * Context: nothing can reach the pool's indexes any more (detach, or a
 * failed attach).
 */
void pmidx_index_table_unload(struct pmidx_pool *pool, bool clean)
{
	struct pmidx_index *idx;
	unsigned int i;

	for (i = 0; i < PMIDX_MAX_INDEXES; i++) {
		/* a drop attach could not finish: the next attach tries again */
		if (pool->dropping[i]) {
			index_free(pool->dropping[i]);
			pool->dropping[i] = NULL;
		}
		idx = pmidx_index_slot(pool, i);
		if (!idx)
			continue;
		RCU_INIT_POINTER(pool->indexes[i], NULL);
		if (idx->opened)
			idx->ops->close(idx, clean);
		index_free(idx);
	}
}

/**
 * pmidx_index_resume_drops - finish the committed drops a crash interrupted
 * @clean: the allocator state was loaded from a clean detach (otherwise
 *         it is tracing, and the trace frees the roots: they go unmarked)
 *
 * Runs in attach before any index is opened and before anything may
 * allocate (file comment: why synchronously). A drop whose engine this
 * module lacks stays DROPPING (its root kept) for an attach that has it;
 * pool_recover() froze committed-mode space for it already.
 *
 * Return: 0, or the engine's error (the attach fails: the image is
 * corrupt where open() or the walk refused it).
 */
int pmidx_index_resume_drops(struct pmidx_pool *pool, bool clean,
			     const char **why)
{
	struct pmidx_recover rc = { .clean = clean,
				    .threads = num_online_cpus() };
	struct pmidx_index *idx;
	unsigned int i;
	int ret;

	for (i = 0; i < PMIDX_MAX_INDEXES; i++) {
		idx = pool->dropping[i];
		if (!idx)
			continue;
		if (!idx->ops) {
			pr_warn("pmidx: index %s: drop interrupted, engine %s not built in: left for a module that has it (committed-mode space frozen until then)\n",
				idx->name, pmidx_engine_name(idx->engine));
			if (clean)
				continue;
			ret = pmidx_alloc_mark(&pool->alloc, idx->root);
			if (ret) {
				*why = "index root does not point to an allocated object";
				return ret;
			}
			continue;
		}
		if (!(idx->ops->flags & PMIDX_ENGINE_F_COMMITTED)) {
			*why = "dropping index's engine is not in committed mode";
			return -EUCLEAN;
		}
		pool->alloc.resuming = true;
		ret = idx->ops->open(idx, &rc);
		if (!ret) {
			idx->ops->destroy(idx);
			pmidx_epoch_barrier(&pool->epoch);
		}
		pool->alloc.resuming = false;
		if (ret) {
			pr_err("pmidx: index %s (%s): cannot finish its interrupted drop: %d\n",
			       idx->name, idx->ops->name, ret);
			*why = "cannot finish an interrupted drop-index";
			return ret;
		}
		/* every commit bit is clear (durable): the entry may go */
		pmidx_store64_persist(&pool->pm, &pool->itable[i].commit, 0);
		pool->dropping[i] = NULL;
		if (clean)
			pmidx_free(&pool->alloc, idx->root);
		pr_info("pmidx: index %s: finished an interrupted drop-index\n",
			idx->name);
		index_free(idx);
	}
	return 0;
}

/**
 * pmidx_index_get - pin the index named by @id for one data operation
 *
 * Context: any; the pin must be given back with pmidx_index_put() before
 * the operation returns to its caller.
 * Return: the index, or NULL when @id names no live index (never
 * created, dropped, or being dropped).
 */
struct pmidx_index *pmidx_index_get(struct pmidx_pool *pool, u32 id)
{
	struct pmidx_index *idx;

	rcu_read_lock();
	idx = rcu_dereference(pool->indexes[id % PMIDX_MAX_INDEXES]);
	if (idx && (idx->id != id || !percpu_ref_tryget_live(&idx->users)))
		idx = NULL;
	rcu_read_unlock();
	return idx;
}

void pmidx_index_put(struct pmidx_index *idx)
{
	percpu_ref_put(&idx->users);
}

/**
 * pmidx_index_get_slot - pin whatever index sits in table slot @slot
 *
 * For walks over a pool's indexes (LIST, STATS); see pmidx_index_get().
 */
struct pmidx_index *pmidx_index_get_slot(struct pmidx_pool *pool, u32 slot)
{
	struct pmidx_index *idx;

	rcu_read_lock();
	idx = rcu_dereference(pool->indexes[slot]);
	if (idx && !percpu_ref_tryget_live(&idx->users))
		idx = NULL;
	rcu_read_unlock();
	return idx;
}

static struct pmidx_index *lookup_locked(struct pmidx_pool *pool,
					 const char *name)
{
	struct pmidx_index *idx;
	unsigned int i;

	lockdep_assert_held(&pool->lock);
	for (i = 0; i < PMIDX_MAX_INDEXES; i++) {
		idx = pmidx_index_slot(pool, i);
		if (idx && !strcmp(idx->name, name))
			return idx;
	}
	return NULL;
}

/**
 * pmidx_index_lookup - the index called @name, unpinned
 *
 * Context: the caller keeps the index from being dropped meanwhile (it
 * owns the pool: tests, the userspace build's single owner).
 */
struct pmidx_index *pmidx_index_lookup(struct pmidx_pool *pool,
				       const char *name)
{
	struct pmidx_index *idx;

	mutex_lock(&pool->lock);
	idx = lookup_locked(pool, name);
	mutex_unlock(&pool->lock);
	return idx;
}

/**
 * pmidx_index_find_id - the data-path LOOKUP: @name's id and engine
 * @may_sleep: false: answer -EAGAIN rather than wait for pool->lock
 *
 * Return: 0, -ENOENT, or -EAGAIN.
 */
int pmidx_index_find_id(struct pmidx_pool *pool, const char *name,
			bool may_sleep, u32 *id, u32 *engine)
{
	struct pmidx_index *idx;
	int ret = -ENOENT;

	if (!may_sleep) {
		if (!mutex_trylock(&pool->lock))
			return -EAGAIN;
	} else {
		mutex_lock(&pool->lock);
	}
	idx = lookup_locked(pool, name);
	if (idx) {
		*id = idx->id;
		*engine = idx->engine;
		ret = 0;
	}
	mutex_unlock(&pool->lock);
	return ret;
}

/**
 * pmidx_index_hold - hold index @name for an in-kernel client
 *
 * The index cannot be dropped until pmidx_index_release(); its data
 * operations need no per-operation pin.
 *
 * Return: the index, ERR_PTR(-ENOENT), or ERR_PTR(-EOPNOTSUPP) when its
 * engine is not built into the module.
 */
struct pmidx_index *pmidx_index_hold(struct pmidx_pool *pool, const char *name)
{
	struct pmidx_index *idx;

	mutex_lock(&pool->lock);
	idx = lookup_locked(pool, name);
	if (!idx)
		idx = ERR_PTR(-ENOENT);
	else if (!idx->opened)
		idx = ERR_PTR(-EOPNOTSUPP);
	else
		idx->handles++;
	mutex_unlock(&pool->lock);
	return idx;
}

void pmidx_index_release(struct pmidx_index *idx)
{
	struct pmidx_pool *pool = idx->pool;

	mutex_lock(&pool->lock);
	WARN_ON_ONCE(!idx->handles);
	idx->handles--;
	mutex_unlock(&pool->lock);
}

/*
 * Create index @name using @engine; report it in *@out (unpinned: valid
 * while the caller keeps drop-index away) and its id in *@id, both taken
 * under pool->lock.
 */
static int index_create(struct pmidx_pool *pool, const char *name, u32 engine,
			struct pmidx_index **out, u32 *id, const char **why)
{
	struct pmidx_recover rc = { .clean = true, .threads = 1 };
	struct pmidx_index_entry *slot = NULL, e = {};
	struct pmidx_index *idx;
	bool committed;
	unsigned int i;
	u64 root;
	int ret;

	ret = pmidx_name_check(name, why);
	if (ret)
		return ret;
	if (!pmidx_engine_name(engine)) {
		*why = "unknown engine";
		return -EINVAL;
	}
	if (!pmidx_engine_ops(engine)) {
		*why = "engine not built into this module";
		return -EOPNOTSUPP;
	}

	mutex_lock(&pool->lock);
	ret = -EEXIST;
	*why = "an index with this name exists";
	if (lookup_locked(pool, name))
		goto out;
	for (i = 0; i < PMIDX_MAX_INDEXES && !slot; i++)
		if (!pmidx_index_slot(pool, i) && !pool->dropping[i])
			slot = &pool->itable[i];
	ret = -ENOSPC;
	*why = "index table full";
	if (!slot)
		goto out;
	i = slot - pool->itable;
	committed = pmidx_engine_ops(engine)->flags & PMIDX_ENGINE_F_COMMITTED;
	if (committed && READ_ONCE(pool->alloc.committed_frozen)) {
		/* file comment: a drop that waits for its engine */
		ret = -EBUSY;
		*why = "an interrupted drop-index waits for a module with its engine: committed-mode indexes cannot be created until it is finished";
		goto out;
	}
	if (committed && !pmidx_txn_cpus_ok()) {
		/* core/alloc.h, "Records in flight" */
		ret = -EOPNOTSUPP;
		*why = "committed-mode index on more CPUs than the intent records cover";
		goto out;
	}
	if (committed) {
		/* before the entry: P3 in docs/reviews/b3-review.md */
		ret = pmidx_pool_enable_committed(pool, why);
		if (ret)
			goto out;
		e.flags = cpu_to_le32(PMIDX_INDEX_F_COMMITTED);
	}
	ret = -ENOSPC;
	*why = "pool full";
	root = pmidx_alloc(&pool->alloc, PMIDX_INDEX_ROOT_SIZE);
	if (!root)
		goto out;
	pmidx_memset_persist(&pool->pm, pmidx_ptr(&pool->pm, root), 0,
			     PMIDX_INDEX_ROOT_SIZE);

	e.name_len = cpu_to_le32(strlen(name));
	memcpy(e.name, name, strlen(name));
	e.root = cpu_to_le64(root);
	e.engine = cpu_to_le32(engine);
	e.create_seq = cpu_to_le64(le64_to_cpu(pool->sb.seq));
	e.crc = cpu_to_le32(entry_crc(&e));
	ret = -ENOMEM;
	*why = "out of memory";
	idx = index_new(pool, i, &e);
	if (!idx) {
		pmidx_free(&pool->alloc, root);
		goto out;
	}
	/* Body durable first, then the commit word makes it live. */
	memcpy(slot, &e, offsetof(struct pmidx_index_entry, commit));
	pmidx_persist(&pool->pm, slot, sizeof(*slot));
	pmidx_store64_persist(&pool->pm, &slot->commit, PMIDX_INDEX_LIVE | i);
	ret = idx->ops->open(idx, &rc);
	if (ret) {
		*why = "engine failed to initialise the index";
		pmidx_store64_persist(&pool->pm, &slot->commit, 0);
		pmidx_free(&pool->alloc, root);
		index_free(idx);
		goto out;
	}
	idx->opened = true;
	rcu_assign_pointer(pool->indexes[i], idx);
	*out = idx;
	*id = idx->id;
	ret = 0;
out:
	mutex_unlock(&pool->lock);
	return ret;
}

/**
 * pmidx_index_create - create index @name using @engine
 * @out: set to the new index on success; unpinned, so only for callers
 *       that keep drop-index away (the userspace build's owner, tests)
 *
 * Context: process context, takes pool->lock.
 * Return: 0, -EEXIST, -ENOSPC (table or pool full), -EINVAL,
 * -EOPNOTSUPP for an engine this module does not build (or a
 * committed-mode one on more CPUs than the intents cover), or -EBUSY for a
 * committed-mode engine while an interrupted drop waits for a module
 * with its engine (file comment) - nothing is persisted in these cases.
 */
int pmidx_index_create(struct pmidx_pool *pool, const char *name, u32 engine,
		       struct pmidx_index **out, const char **why)
{
	u32 id;

	return index_create(pool, name, engine, out, &id, why);
}

/**
 * pmidx_index_create_id - pmidx_index_create() reporting the new id only,
 * for callers that race with drop-index (the admin plane)
 */
int pmidx_index_create_id(struct pmidx_pool *pool, const char *name,
			  u32 engine, u32 *id, const char **why)
{
	struct pmidx_index *idx;

	return index_create(pool, name, engine, &idx, id, why);
}

/**
 * pmidx_index_commit_bits - the pool's commit bits, when all are @idx's
 * @bits: the commit bits set on media (pmidx_alloc_media_count())
 *
 * For the checker of committed-mode index @idx, its writers frozen: with
 * no other committed-mode index in the table and no committed drop
 * (DROPPING) under way, every commit bit on media belongs to one of the
 * objects @idx reaches. pool->lock keeps both so while the bits are
 * counted.
 *
 * Context: process context, takes pool->lock.
 * Return: true with *@bits, false when another index may own some.
 */
bool pmidx_index_commit_bits(struct pmidx_index *idx, u64 *bits)
{
	struct pmidx_pool *pool = idx->pool;
	struct pmidx_index *o;
	bool sole = true;
	u32 i;

	mutex_lock(&pool->lock);
	for (i = 0; i < PMIDX_MAX_INDEXES && sole; i++) {
		o = pmidx_index_slot(pool, i);
		sole = (!o || o == idx || !o->committed) && !pool->dropping[i];
	}
	if (sole)
		*bits = pmidx_alloc_media_count(&pool->alloc);
	mutex_unlock(&pool->lock);
	return sole;
}

/**
 * pmidx_index_drop - remove index @name and free its storage
 *
 * Unpublishes the index, waits for the data operations already inside it
 * (each is bounded), then destroys it. Later operations naming its id get
 * -ENXIO, also once another index took its slot. A committed-mode index
 * goes through DROPPING (file comment).
 *
 * Context: process context, takes pool->lock and pool->drop_lock; may
 * sleep.
 * Return: 0, -ENOENT, -EBUSY while an in-kernel client holds it, or
 * -EOPNOTSUPP for a committed-mode index whose engine is not built in
 * (only its engine can find its objects).
 */
int pmidx_index_drop(struct pmidx_pool *pool, const char *name,
		     const char **why)
{
	struct pmidx_index *idx;
	u32 slot;

	mutex_lock(&pool->lock);
	idx = lookup_locked(pool, name);
	if (!idx) {
		mutex_unlock(&pool->lock);
		*why = "no index with this name";
		return -ENOENT;
	}
	if (idx->handles) {
		mutex_unlock(&pool->lock);
		*why = "index is held by an in-kernel client";
		return -EBUSY;
	}
	if (idx->committed && !idx->opened) {
		mutex_unlock(&pool->lock);
		*why = "committed-mode index of an engine not built into this module: drop it with a module that has the engine";
		return -EOPNOTSUPP;
	}
	slot = idx->id % PMIDX_MAX_INDEXES;
	if (idx->committed) {
		/* Gone for users; a crash from here on resumes the drop. */
		pmidx_store64_persist(&pool->pm, &pool->itable[slot].commit,
				      PMIDX_INDEX_DROPPING | slot);
		pool->dropping[slot] = idx;
	} else {
		/* Gone durably first: a crash from here on only leaves garbage. */
		pmidx_store64_persist(&pool->pm, &pool->itable[slot].commit, 0);
	}
	RCU_INIT_POINTER(pool->indexes[slot], NULL);
	pool->slot_gen[slot]++;
	mutex_unlock(&pool->lock);

	/*
	 * The kill's grace period outlasts every reader that could still
	 * see the index; @drained then waits out the pins they took.
	 */
	percpu_ref_kill(&idx->users);
	wait_for_completion(&idx->drained);
	if (idx->committed) {
		mutex_lock(&pool->drop_lock);
		pmidx_alloc_defer_begin(&pool->alloc);
	}
	if (idx->opened)
		idx->ops->destroy(idx);
	pmidx_epoch_barrier(&pool->epoch);
	if (idx->committed) {
		/* each bit was cleared durably: the entry may go, then DRAM */
		mutex_lock(&pool->lock);
		pmidx_store64_persist(&pool->pm, &pool->itable[slot].commit, 0);
		pool->dropping[slot] = NULL;
		mutex_unlock(&pool->lock);
		pmidx_alloc_defer_end(&pool->alloc);
		mutex_unlock(&pool->drop_lock);
	}
	pmidx_free(&pool->alloc, idx->root);
	index_free(idx);
	return 0;
}
