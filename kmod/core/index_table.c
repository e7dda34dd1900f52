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
 * Locking: pool->lock serialises create/drop and guards pool->indexes[].
 */
#include <linux/crc32.h>
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

static struct pmidx_index *index_new(struct pmidx_pool *pool, u32 id,
				     const struct pmidx_index_entry *e)
{
	struct pmidx_index *idx = kzalloc(sizeof(*idx), GFP_KERNEL);

	if (!idx)
		return NULL;
	idx->pool = pool;
	idx->id = id;
	idx->engine = le32_to_cpu(e->engine);
	idx->root = le64_to_cpu(e->root);
	idx->ops = pmidx_engine_ops(idx->engine);
	memcpy(idx->name, e->name, le32_to_cpu(e->name_len));
	return idx;
}

/* Validate a live entry read from media. */
static int entry_check(struct pmidx_pool *pool, const struct pmidx_index_entry *e)
{
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
	unsigned int i, j;
	int ret;

	for (i = 0; i < PMIDX_MAX_INDEXES; i++) {
		ret = pmidx_read_media(&e, &pool->itable[i], sizeof(e));
		if (ret) {
			*why = "media error reading the index table";
			goto err;
		}
		if (!entry_live(&e))
			continue;
		ret = entry_check(pool, &e);
		if (ret) {
			pr_err("pmidx: index table entry %u is corrupt\n", i);
			*why = "index table entry corrupt";
			goto err;
		}
		for (j = 0; j < i; j++) {
			if (pool->indexes[j] &&
			    !strcmp(pool->indexes[j]->name, e.name)) {
				*why = "index table holds a name twice";
				ret = -EUCLEAN;
				goto err;
			}
		}
		pool->indexes[i] = index_new(pool, i, &e);
		if (!pool->indexes[i]) {
			ret = -ENOMEM;
			goto err;
		}
	}
	return 0;
err:
	pmidx_index_table_unload(pool, false);
	return ret;
}

/* Close engines (@clean: a clean detach) and forget every index. */
void pmidx_index_table_unload(struct pmidx_pool *pool, bool clean)
{
	struct pmidx_index *idx;
	unsigned int i;

	for (i = 0; i < PMIDX_MAX_INDEXES; i++) {
		idx = pool->indexes[i];
		if (!idx)
			continue;
		if (idx->opened)
			idx->ops->close(idx, clean);
		kfree(idx);
		pool->indexes[i] = NULL;
	}
}

/**
 * pmidx_index_get - the index in table slot @id, for the data path
 *
 * Context: the caller keeps the pool's char device open, which holds off
 * drop-index; the pointer is published after the index is fully set up.
 */
struct pmidx_index *pmidx_index_get(struct pmidx_pool *pool, u32 id)
{
	if (id >= PMIDX_MAX_INDEXES)
		return NULL;
	return smp_load_acquire(&pool->indexes[id]);
}

static struct pmidx_index *lookup_locked(struct pmidx_pool *pool,
					 const char *name)
{
	unsigned int i;

	for (i = 0; i < PMIDX_MAX_INDEXES; i++)
		if (pool->indexes[i] && !strcmp(pool->indexes[i]->name, name))
			return pool->indexes[i];
	return NULL;
}

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
 * pmidx_index_create - create index @name using @engine
 * @out: set to the new index on success
 *
 * Context: process context, takes pool->lock.
 * Return: 0, -EEXIST, -ENOSPC (table or pool full), -EINVAL.
 */
int pmidx_index_create(struct pmidx_pool *pool, const char *name, u32 engine,
		       struct pmidx_index **out, const char **why)
{
	struct pmidx_index_entry *slot = NULL, e = {};
	struct pmidx_index *idx;
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

	mutex_lock(&pool->lock);
	ret = -EEXIST;
	*why = "an index with this name exists";
	if (lookup_locked(pool, name))
		goto out;
	for (i = 0; i < PMIDX_MAX_INDEXES && !slot; i++)
		if (!pool->indexes[i])
			slot = &pool->itable[i];
	ret = -ENOSPC;
	*why = "index table full";
	if (!slot)
		goto out;
	i = slot - pool->itable;
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
	if (idx->ops) {
		struct pmidx_recover rc = { .clean = true, .threads = 1 };

		ret = idx->ops->open(idx, &rc);
		if (ret) {
			*why = "engine failed to initialise the index";
			pmidx_store64_persist(&pool->pm, &slot->commit, 0);
			pmidx_free(&pool->alloc, root);
			kfree(idx);
			goto out;
		}
		idx->opened = true;
	}
	smp_store_release(&pool->indexes[i], idx);
	*out = idx;
	ret = 0;
out:
	mutex_unlock(&pool->lock);
	return ret;
}

/**
 * pmidx_index_drop - remove index @name and free its storage
 *
 * Context: process context, takes pool->lock. The caller guarantees no
 * user of the index remains.
 */
int pmidx_index_drop(struct pmidx_pool *pool, const char *name,
		     const char **why)
{
	struct pmidx_index *idx;
	int ret = 0;

	mutex_lock(&pool->lock);
	idx = lookup_locked(pool, name);
	if (!idx) {
		*why = "no index with this name";
		ret = -ENOENT;
		goto out;
	}
	/* Gone durably first: a crash from here on only leaves garbage. */
	pmidx_store64_persist(&pool->pm, &pool->itable[idx->id].commit, 0);
	WRITE_ONCE(pool->indexes[idx->id], NULL);
	if (idx->opened)
		idx->ops->destroy(idx);
	pmidx_epoch_barrier(&pool->epoch);
	pmidx_free(&pool->alloc, idx->root);
	kfree(idx);
out:
	mutex_unlock(&pool->lock);
	return ret;
}
