// SPDX-License-Identifier: GPL-2.0
/*
 * Toy engines for the core's tests: what the core must do for an engine
 * in committed mode (PMIDX_ENGINE_F_COMMITTED, core/engine.h), and the
 * same structure in traced mode to mix with it.
 *
 * Layout: the index root (256 bytes) holds TOY_BUCKETS bucket words; a
 * bucket is a singly linked list of nodes {next, klen, vlen, key, value},
 * one allocator object each. Every change is one 8-byte link store (a
 * bucket word or a node's next word):
 *   put:  a new node (the old one's successor as its next) replaces the
 *         old node or becomes the bucket's head;
 *   del:  the predecessor's word := the node's next.
 * The new node is durable before the link store. In committed mode the
 * link store sits inside a pmidx_txn that allocates the new node and
 * frees the old one (alloc.c), so a crash attach reads nothing; in
 * traced mode a crash attach marks every node (open() with rc->mark).
 * One mutex per index serialises everything (readers too), so a node
 * is freed as soon as it is unlinked.
 */
#include <linux/errno.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/string.h>
#include "core/index_table.h"
#include "toy-engine.h"

#define TOY_BUCKETS	(PMIDX_INDEX_ROOT_SIZE / 8)

struct toy_node {
	__le64	next;
	__le32	klen;
	__le32	vlen;
	u8	data[];
};

struct toy {
	struct pmidx_index	*idx;
	struct pmidx_pool	*pool;
	struct mutex		lock;	/* every operation */
	bool			committed;
};

static struct toy *toy_of(struct pmidx_index *idx)
{
	return idx->priv;
}

static __le64 *bucket(struct toy *t, const u8 *key, u32 klen)
{
	__le64 *root = pmidx_ptr(&t->pool->pm, t->idx->root);
	u32 h = 2166136261u, i;

	for (i = 0; i < klen; i++)
		h = (h ^ key[i]) * 16777619u;
	return &root[h % TOY_BUCKETS];
}

static struct toy_node *node(struct toy *t, u64 off)
{
	return pmidx_ptr(&t->pool->pm, off);
}

/* The word that links @key's node (*@w's value), or the bucket's end. */
static __le64 *find(struct toy *t, const u8 *key, u32 klen)
{
	__le64 *w = bucket(t, key, klen);
	u64 off;

	while ((off = le64_to_cpu(*w))) {
		struct toy_node *n = node(t, off);

		if (le32_to_cpu(n->klen) == klen && !memcmp(n->data, key, klen))
			break;
		w = &n->next;
	}
	return w;
}

/* One link store *@w := @val, publishing @alloc and unlinking @free. */
static int link_store(struct toy *t, __le64 *w, u64 val, u64 alloc, u64 free)
{
	struct pmidx_alloc *a = &t->pool->alloc;
	struct pmidx_txn txn;

	if (!t->committed) {
		pmidx_store64_persist(&t->pool->pm, w, val);
		goto out;
	}
	/* core/alloc.h: no record can be waited for; fail before any store */
	if (WARN_ON_ONCE(pmidx_txn_begin(a, &txn)))
		return -EBUSY;
	if (alloc)
		pmidx_txn_alloc(&txn, alloc);
	if (free)
		pmidx_txn_free(&txn, free);
	pmidx_txn_arm(a, &txn, w, 8, val);
	pmidx_store64_persist(&t->pool->pm, w, val);
	pmidx_txn_end(a, &txn);
out:
	if (free)
		pmidx_free(a, free);	/* no reader left: the lock */
	return 0;
}

static int toy_put(struct pmidx_index *idx, const u8 *key, u32 klen,
		   const u8 *val, u32 vlen, u32 flags)
{
	struct toy *t = toy_of(idx);
	size_t size = sizeof(struct toy_node) + klen + vlen;
	struct toy_node *n;
	u64 off, old;
	__le64 *w;
	int ret;

	mutex_lock(&t->lock);
	w = find(t, key, klen);
	old = le64_to_cpu(*w);
	ret = -EEXIST;
	if (old && (flags & PMIDX_PUT_INSERT))
		goto out;
	off = t->committed ? pmidx_alloc_committed(&t->pool->alloc, size) :
			     pmidx_alloc(&t->pool->alloc, size);
	ret = -ENOSPC;
	if (!off)
		goto out;
	n = node(t, off);
	n->next = old ? node(t, old)->next : cpu_to_le64(0);
	n->klen = cpu_to_le32(klen);
	n->vlen = cpu_to_le32(vlen);
	memcpy(n->data, key, klen);
	memcpy(n->data + klen, val, vlen);
	pmidx_persist(&t->pool->pm, n, size);
	ret = link_store(t, w, off, off, old);
	if (ret)
		pmidx_free(&t->pool->alloc, off);	/* never linked */
out:
	mutex_unlock(&t->lock);
	return ret;
}

static int toy_del(struct pmidx_index *idx, const u8 *key, u32 klen,
		   u32 flags)
{
	struct toy *t = toy_of(idx);
	__le64 *w;
	u64 old;
	int ret = -ENOENT;

	mutex_lock(&t->lock);
	w = find(t, key, klen);
	old = le64_to_cpu(*w);
	if (old)
		ret = link_store(t, w, le64_to_cpu(node(t, old)->next), 0, old);
	mutex_unlock(&t->lock);
	return ret;
}

static int toy_get(struct pmidx_index *idx, const u8 *key, u32 klen,
		   u8 *val, u32 *vlen)
{
	struct toy *t = toy_of(idx);
	struct toy_node *n;
	u32 cap = *vlen;
	u64 off;
	int ret = -ENOENT;

	mutex_lock(&t->lock);
	off = le64_to_cpu(*find(t, key, klen));
	if (off) {
		n = node(t, off);
		*vlen = le32_to_cpu(n->vlen);
		ret = *vlen > cap ? -ENOSPC : 0;
		if (!ret)
			memcpy(val, n->data + klen, *vlen);
	}
	mutex_unlock(&t->lock);
	return ret;
}

/* Unordered: the core's tests do not scan. */
static int toy_scan(struct pmidx_index *idx, const u8 *start, u32 start_len,
		    bool after, const u8 *end, u32 end_len,
		    struct pmidx_scan_sink *sink)
{
	return 0;
}

/* Every node: a live object of the index's mode, big enough. */
static int walk(struct toy *t, bool mark, u64 *nodes, const char **why)
{
	__le64 *root = pmidx_ptr(&t->pool->pm, t->idx->root);
	struct pmidx_alloc *a = &t->pool->alloc;
	unsigned int b;
	u64 off, k = 0;

	for (b = 0; b < TOY_BUCKETS; b++) {
		for (off = le64_to_cpu(root[b]); off;
		     off = le64_to_cpu(node(t, off)->next)) {
			struct toy_node *n = node(t, off);
			size_t size = sizeof(*n) + le32_to_cpu(n->klen) +
				      le32_to_cpu(n->vlen);

			if (mark && pmidx_alloc_mark(a, off)) {
				*why = "node is not an object of the index's mode";
				return -EUCLEAN;
			}
			if (!pmidx_alloc_valid(a, off, size) ||
			    pmidx_alloc_is_committed(a, off) != t->committed) {
				*why = "node is no live object of the index's mode";
				return -EUCLEAN;
			}
			if (++k > (u64)a->nr_chunks << (PMIDX_CHUNK_SHIFT -
							 PMIDX_MIN_OBJ_SHIFT)) {
				*why = "node list loops";
				return -EUCLEAN;
			}
		}
	}
	*nodes = k;
	return 0;
}

static int toy_open(struct pmidx_index *idx, const struct pmidx_recover *rc)
{
	struct toy *t = kzalloc(sizeof(*t), GFP_KERNEL);
	const char *why = NULL;
	u64 nodes;
	int ret;

	if (!t)
		return -ENOMEM;
	t->idx = idx;
	t->pool = idx->pool;
	t->committed = idx->ops->flags & PMIDX_ENGINE_F_COMMITTED;
	mutex_init(&t->lock);
	idx->priv = t;
	if (!rc->mark)
		return 0;	/* committed mode after a crash: nothing to read */
	ret = walk(t, true, &nodes, &why);
	if (ret) {
		pr_err("pmidx: toy index %s: %s\n", idx->name, why);
		kfree(t);
		idx->priv = NULL;
	}
	return ret;
}

static void toy_close(struct pmidx_index *idx, bool clean)
{
	kfree(idx->priv);
	idx->priv = NULL;
}

/*
 * Free every node. After a crash during a committed drop the core calls
 * this again (pmidx_index_resume_drops()): the lists are intact (nothing
 * was reused), some nodes are free already; pmidx_free_committed_now()
 * skips those.
 */
static void toy_destroy(struct pmidx_index *idx)
{
	struct toy *t = toy_of(idx);
	__le64 *root = pmidx_ptr(&t->pool->pm, idx->root);
	unsigned int b;
	u64 off, next;

	for (b = 0; b < TOY_BUCKETS; b++) {
		for (off = le64_to_cpu(root[b]); off; off = next) {
			next = le64_to_cpu(node(t, off)->next);
			if (t->committed)
				pmidx_free_committed_now(&t->pool->alloc, off);
			else
				pmidx_free(&t->pool->alloc, off);
		}
	}
	toy_close(idx, false);
}

static int toy_check(struct pmidx_index *idx, u64 *keys, const char **why)
{
	struct toy *t = toy_of(idx);
	int ret;

	mutex_lock(&t->lock);
	ret = walk(t, false, keys, why);
	mutex_unlock(&t->lock);
	return ret;
}

const struct pmidx_engine_ops toy_committed_ops = {
	.id = TOY_COMMITTED_ID, .name = "toy-committed",
	.flags = PMIDX_ENGINE_F_COMMITTED,
	.open = toy_open, .close = toy_close, .destroy = toy_destroy,
	.get = toy_get, .put = toy_put, .del = toy_del, .scan = toy_scan,
	.check = toy_check,
};

const struct pmidx_engine_ops toy_traced_ops = {
	.id = TOY_TRACED_ID, .name = "toy-traced",
	.open = toy_open, .close = toy_close, .destroy = toy_destroy,
	.get = toy_get, .put = toy_put, .del = toy_del, .scan = toy_scan,
	.check = toy_check,
};

void toy_engines_register(bool on)
{
	const struct pmidx_engine_ops *none = &pmidx_test_engine_absent;

	pmidx_test_engines[TOY_COMMITTED_ID] = on ? &toy_committed_ops : none;
	pmidx_test_engines[TOY_TRACED_ID] = on ? &toy_traced_ops : none;
}

u64 toy_nodes(struct pmidx_index *idx)
{
	const char *why;
	u64 n = 0;

	if (toy_check(idx, &n, &why))
		return ~0ULL;
	return n;
}

void toy_half_drop(struct pmidx_pool *pool, const char *name, u64 n)
{
	struct pmidx_index *idx;
	__le64 *root;
	unsigned int b, slot;
	u64 off, next;

	mutex_lock(&pool->lock);
	for (slot = 0; slot < PMIDX_MAX_INDEXES; slot++) {
		idx = pmidx_index_slot(pool, slot);
		if (idx && !strcmp(idx->name, name))
			break;
	}
	BUG_ON(slot == PMIDX_MAX_INDEXES);
	pmidx_store64_persist(&pool->pm, &pool->itable[slot].commit,
			      PMIDX_INDEX_DROPPING | slot);
	RCU_INIT_POINTER(pool->indexes[slot], NULL);
	pool->dropping[slot] = idx;
	mutex_unlock(&pool->lock);
	root = pmidx_ptr(&pool->pm, idx->root);
	for (b = 0; b < TOY_BUCKETS && n; b++) {
		for (off = le64_to_cpu(root[b]); off && n; off = next, n--) {
			next = le64_to_cpu(((struct toy_node *)
					    pmidx_ptr(&pool->pm, off))->next);
			pmidx_free_committed_now(&pool->alloc, off);
		}
	}
	toy_close(idx, false);
	idx->opened = false;
}

void toy_abandon(struct pmidx_pool *pool)
{
	pool->needs_trace = true;
	pmidx_pool_close(pool);
}
