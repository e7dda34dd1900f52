// SPDX-License-Identifier: GPL-2.0
/*
 * LodgeTree engine: the operations. See lodge.h for the locking, the
 * sequence rule and the lifetime of every object, README.md for the
 * paper map and the deviations.
 *
 * A write (put or delete) goes: descend with t->tree shared, lock the
 * last-level node exclusively, find the key in the buffer part, else in
 * its leaf (for insert-only, -ENOENT and the key count); make room in
 * the buffer part (leaf-count-based flush, or a node split that takes
 * t->tree exclusively and retries); append the record to this CPU's log
 * partition (durable on return); put it into the buffer part. A delete
 * of a key with no buffered write is one bitmap store in its leaf.
 */
#include <linux/errno.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include "core/blob.h"
#include "core/pmem.h"
#include "lodge.h"

unsigned int lodge_leaf_bytes = 512;
module_param(lodge_leaf_bytes, uint, 0644);
MODULE_PARM_DESC(lodge_leaf_bytes, "lodge: leaf size of new indexes, 256, 512 or 1024 bytes (default 512)");

unsigned int lodge_node_slots = 29;
module_param(lodge_node_slots, uint, 0644);
MODULE_PARM_DESC(lodge_node_slots, "lodge: slots of an internal node, 8..250 (default 29; read at open)");

unsigned int lodge_t_node = 2;
module_param(lodge_t_node, uint, 0644);
MODULE_PARM_DESC(lodge_t_node, "lodge: leaves one flush may write, 1..8 (t_node, default 2)");

unsigned int lodge_t_split = 26;
module_param(lodge_t_split, uint, 0644);
MODULE_PARM_DESC(lodge_t_split, "lodge: keys above which a leaf splits (t_split, default 26; at most the leaf's slots - 1)");

unsigned int lodge_hot_t = 2;
module_param(lodge_hot_t, uint, 0644);
MODULE_PARM_DESC(lodge_hot_t, "lodge: hotness factor t of the multiple split (default 2)");

bool lodge_multi_split = true;
module_param(lodge_multi_split, bool, 0644);
MODULE_PARM_DESC(lodge_multi_split, "lodge: hotness-aware multiple split (default on; off: always 2 pieces)");

unsigned int lodge_log_kb = 8;
module_param(lodge_log_kb, uint, 0644);
MODULE_PARM_DESC(lodge_log_kb, "lodge: size of one log of the partitioned version log, KiB (default 8)");

unsigned int lodge_log_max = 2048;
module_param(lodge_log_max, uint, 0644);
MODULE_PARM_DESC(lodge_log_max, "lodge: live logs above which writers drain the oldest half (default 2048)");

unsigned int lodge_recovery_threads;
module_param(lodge_recovery_threads, uint, 0644);
MODULE_PARM_DESC(lodge_recovery_threads, "lodge: workers of each attach-time recovery step (default 0: one per online CPU, at most 64, fewer for a small index; N: up to N whatever the size)");

struct lodge_key *lodge_key_new(const u8 *k, u32 len, gfp_t gfp)
{
	struct lodge_key *key = kmalloc(sizeof(*key) + len, gfp);

	if (key) {
		key->len = len;
		memcpy(key->b, k, len);
	}
	return key;
}

s64 lodge_sum_keys(struct lodge *t)
{
	s64 keys = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		keys += READ_ONCE(per_cpu_ptr(t->st, cpu)->keys);
	return keys;
}

/* ---- first write: the root ------------------------------------------------ */

static int tree_init(struct lodge *t)
{
	struct lodge_root *r = t->root;
	struct lodge_lin *x;
	u64 head, dir;

	x = lodge_lin_alloc(t, t->cap, GFP_KERNEL);
	if (!x)
		return -ENOMEM;
	head = lodge_leaf_new_head(t);
	dir = pmidx_alloc(&t->pool->alloc, LODGE_DIR_SIZE);
	if (!head || !dir) {
		if (head)
			pmidx_free(&t->pool->alloc, head);
		if (dir)
			pmidx_free(&t->pool->alloc, dir);
		kfree(x);
		atomic64_set(&t->nleaves, 0);
		return -ENOSPC;
	}
	t->dir = pmidx_ptr(t->pm, dir);
	memset(t->dir, 0, LODGE_DIR_SIZE);
	t->dir->magic = cpu_to_le64(LODGE_DIR_MAGIC);
	t->dir->nslots = cpu_to_le32(LODGE_DIR_SLOTS);
	pmidx_persist(t->pm, t->dir, LODGE_DIR_SIZE);
	r->version = cpu_to_le32(LODGE_FORMAT_VERSION);
	r->leaf_size = cpu_to_le32(t->leaf_size);
	r->head = cpu_to_le64(head);
	r->dir = cpu_to_le64(dir);
	r->vhwm = 0;
	pmidx_persist(t->pm, r, sizeof(*r));
	pmidx_store64_persist(t->pm, &r->magic, LODGE_ROOT_MAGIC);
	t->head = head;
	x->nidx = 1;
	x->slot[0].w = head;
	x->leaf_count[0] = 0;
	t->top = x;
	t->height = 0;
	t->next_ver = 1;
	WRITE_ONCE(t->ready, true);
	return 0;
}

/* Logs a traced open found dead (unnamed already): now they can go. */
static void free_dead(struct lodge *t)
{
	struct lodge_vlog *v, *n;

	list_for_each_entry_safe(v, n, &t->dead, node) {
		list_del(&v->node);
		pmidx_free(&t->pool->alloc, v->off);
		kfree(v);
	}
}

/*
 * Return: 0 with t->tree held for reading and the index ready; -EAGAIN
 * (nothing held) when @nowait and that would wait: a split, the checker
 * or the first write holds t->tree.
 */
static int enter_ready(struct lodge *t, bool nowait)
{
	int ret = 0;

	if (!nowait)
		percpu_down_read(&t->tree);
	else if (!percpu_down_read_trylock(&t->tree))
		return -EAGAIN;
	if (likely(READ_ONCE(t->ready) && list_empty(&t->dead)))
		return 0;
	percpu_up_read(&t->tree);
	if (nowait)
		return -EAGAIN;
	percpu_down_write(&t->tree);
	free_dead(t);
	if (!t->ready)
		ret = tree_init(t);
	percpu_up_write(&t->tree);
	if (ret)
		return ret;
	percpu_down_read(&t->tree);
	return 0;
}

/* ---- get ------------------------------------------------------------------ */

static int lodge_get(struct pmidx_index *idx, const u8 *key, u32 klen,
		     u8 *val, u32 *vlen)
{
	struct lodge *t = idx->priv;
	struct lodge_lin *x;
	struct lodge_leaf *l;
	int j, s, ret = -ENOENT;

	lodge_stat_inc(t, get);
	percpu_down_read(&t->tree);
	if (!READ_ONCE(t->ready))
		goto out;
	x = lodge_find(t, key, klen);
	read_lock(&x->lock);
	j = lodge_buf_find(x, key, klen);
	if (j >= 0) {
		struct lodge_slot *b = &x->slot[j];

		lodge_stat_inc(t, buffer_hits);
		if (b->flags & LODGE_B_TOMB)
			goto unlock;
		ret = 0;
		if (b->vlen <= *vlen) {
			if (b->vlen > 8)
				ret = lodge_rec_value(t, b, x->buf_ver[j],
						      val);
			else if (b->vlen)	/* 0: @val may be NULL */
				memcpy(val, &b->w, b->vlen);
		}
		*vlen = b->vlen;
		goto unlock;
	}
	l = lodge_leaf_ptr(t, x->slot[lodge_lin_leaf(x, key, klen)].w);
	s = lodge_leaf_find(t, l, key, klen);
	if (s >= 0)
		ret = lodge_leaf_value(t, l, s, val, *vlen, vlen);
unlock:
	read_unlock(&x->lock);
out:
	percpu_up_read(&t->tree);
	return ret;
}

/* ---- put / delete --------------------------------------------------------- */

/*
 * Drain: flush the KVs of the oldest half of the logs (README), or with
 * @all of every log, waiting for a drain under way (the pool is full).
 */
static void drain(struct lodge *t, bool all)
{
	struct lodge_lin *x;
	u8 *cur = NULL;
	u32 curlen = 0;
	u64 cut;

	if (all)
		mutex_lock(&t->drain);
	else if (!mutex_trylock(&t->drain))
		return;
	cut = lodge_log_cut(t, all ? U32_MAX : READ_ONCE(t->nlogs) / 2);
	lodge_stat_inc(t, drains);
	cur = kmalloc(PMIDX_KEY_MAX + 1, GFP_KERNEL);
	percpu_down_read(&t->tree);
	for (x = lodge_find(t, NULL, 0); cur && cut;) {
		write_lock(&x->lock);
		/* a node that must split first keeps its KVs (README) */
		lodge_flush_all(t, x, cut);
		if (x->hi) {
			memcpy(cur, x->hi->b, x->hi->len);
			curlen = x->hi->len;
		}
		write_unlock(&x->lock);
		if (!x->hi)
			break;
		x = lodge_find(t, cur, curlen);
	}
	percpu_up_read(&t->tree);
	kfree(cur);
	mutex_unlock(&t->drain);
}

/*
 * A no-wait write (@nowait, core/engine.h) answers -EAGAIN before its
 * change where it would sleep: t->tree taken, the first write, a node
 * split, a full pool, and the logs over their limit (so that the write
 * that runs the drain after it is one that may sleep). Flushes it did
 * before a split keep every value.
 */
static int lodge_write(struct lodge *t, const u8 *k, u32 klen, const u8 *v,
		       u32 vlen, bool tomb, bool insert, bool nowait,
		       struct lodge_fmem *fm)
{
	struct lodge_key *kc = NULL;
	struct lodge_vlog *vl, *old;
	struct lodge_slot *b;
	struct lodge_lin *x;
	bool exists;
	int j, li, s, ret;
	u64 rec, seq;

	if (nowait && READ_ONCE(t->nlogs) > lodge_log_max)
		return -EAGAIN;
	kc = lodge_key_new(k, klen, nowait ? GFP_NOWAIT | __GFP_NOWARN :
					     GFP_KERNEL);
	if (!kc)
		return nowait ? -EAGAIN : -ENOMEM;
	ret = enter_ready(t, nowait);
	if (ret)
		goto out_free;
again:
	x = lodge_find(t, k, klen);
	write_lock(&x->lock);
	j = lodge_buf_find(x, k, klen);
	li = lodge_lin_leaf(x, k, klen);
	s = -1;
	if (j >= 0) {
		exists = !(x->slot[j].flags & LODGE_B_TOMB);
	} else {
		s = lodge_leaf_find(t, lodge_leaf_ptr(t, x->slot[li].w), k,
				    klen);
		exists = s >= 0;
	}
	ret = -EEXIST;
	if (insert && exists)
		goto unlock;
	ret = -ENOENT;
	if (tomb && !exists)
		goto unlock;
	if (tomb && j < 0) {
		/* no buffered write: no record of it is newer than ts */
		ret = lodge_leaf_delete(t, x->slot[li].w, s);
		x->leaf_count[li]--;
		this_cpu_dec(t->st->keys);
		lodge_lin_emptied(t, x, li);
		goto unlock;
	}
	while (j < 0 && x->nidx + x->nbuf >= x->cap) {
		unsigned int nbuf = x->nbuf;

		ret = nbuf ? lodge_flush(t, x, 0, fm) : LODGE_NEED_SPLIT;
		if (!ret) {
			lodge_stat_inc(t, rounds);
			lodge_stat_add(t, round_buf, nbuf);
		}
		if (ret == LODGE_NEED_SPLIT) {
			write_unlock(&x->lock);
			percpu_up_read(&t->tree);
			ret = -EAGAIN;
			if (nowait)
				goto out_free;
			ret = lodge_split_lin(t, k, klen);
			if (ret)
				goto out_free;
			percpu_down_read(&t->tree);
			goto again;
		}
		if (ret < 0)
			goto unlock;
	}
	ret = lodge_log_append(t, tomb ? LODGE_R_TOMB : 0, k, klen, v, vlen,
			       &vl, &rec, &seq);
	if (ret)
		goto unlock;
	if (j >= 0) {
		lodge_stat_inc(t, absorbed);
		old = x->buf_ver[j];
		/* the older record is superseded: recovery keeps the newest */
		lodge_log_put(t, old);
	} else {
		j = x->nidx + x->nbuf++;
		x->slot[j].key = kc;
		kc = NULL;
		x->leaf_count[j] = lodge_lin_leaf(x, k, klen);
	}
	b = &x->slot[j];
	b->w = 0;
	if (vlen && vlen <= 8)	/* a delete: v NULL */
		memcpy(&b->w, v, vlen);
	b->rec = rec;
	b->seq = seq;
	b->vlen = vlen;
	b->flags = tomb ? LODGE_B_TOMB : 0;
	x->buf_ver[j] = vl;
	if (tomb)
		this_cpu_dec(t->st->keys);
	else if (!exists)
		this_cpu_inc(t->st->keys);
	ret = 0;
unlock:
	write_unlock(&x->lock);
	percpu_up_read(&t->tree);
out_free:
	kfree(kc);
	if (!nowait && READ_ONCE(t->nlogs) > lodge_log_max)
		drain(t, false);
	return ret;
}

/*
 * A blocking write that found no atomic memory under a node's lock (for
 * a new log's DRAM side, or a flush's arrays: -ENOMEM, nothing changed
 * but flushes that keep every value) runs again with both made where it
 * may sleep: the spare log, and the flush memory, which one such writer
 * at a time holds. A split that needs more fences than the flush memory
 * holds goes round again with it refilled, a few times.
 */
static int write_reserved(struct lodge *t, const u8 *k, u32 klen,
			  const u8 *v, u32 vlen, bool tomb, bool insert)
{
	int ret = -ENOMEM, tries;

	mutex_lock(&t->fmem_lock);
	for (tries = 0; ret == -ENOMEM && tries < 4; tries++) {
		if (lodge_log_reserve(t) || lodge_fmem_fill(t))
			break;
		ret = lodge_write(t, k, klen, v, vlen, tomb, insert, false,
				  &t->fmem);
	}
	mutex_unlock(&t->fmem_lock);
	return ret;
}

/*
 * A write the pool had no room for (a new log, a leaf or node split)
 * changed nothing. Logs holding only buffered KVs are most of what a
 * full pool can give back: flush them all and try once more, so that a
 * user can still delete (and put again what the deletes freed).
 */
static int lodge_write_room(struct lodge *t, const u8 *k, u32 klen,
			    const u8 *v, u32 vlen, bool tomb, u32 flags)
{
	bool insert = flags & PMIDX_PUT_INSERT;
	bool nowait = flags & PMIDX_WRITE_NOWAIT;
	int ret = lodge_write(t, k, klen, v, vlen, tomb, insert, nowait, NULL);

	/* no atomic memory under a node's lock: the blocking run may find it */
	if (nowait && (ret == -ENOSPC || ret == -ENOMEM))
		return -EAGAIN;
	if (ret == -ENOMEM)
		ret = write_reserved(t, k, klen, v, vlen, tomb, insert);
	if (ret != -ENOSPC)
		return ret;
	drain(t, true);
	return lodge_write(t, k, klen, v, vlen, tomb, insert, false, NULL);
}

/* A no-wait write answered -EAGAIN runs again: count it then. */
static int lodge_put(struct pmidx_index *idx, const u8 *key, u32 klen,
		     const u8 *val, u32 vlen, u32 flags)
{
	struct lodge *t = idx->priv;
	int ret;

	ret = lodge_write_room(t, key, klen, val, vlen, false, flags);
	if (ret != -EAGAIN)
		lodge_stat_inc(t, put);
	return ret;
}

static int lodge_del(struct pmidx_index *idx, const u8 *key, u32 klen,
		     u32 flags)
{
	struct lodge *t = idx->priv;
	int ret = -ENOENT;

	if (READ_ONCE(t->ready))
		ret = lodge_write_room(t, key, klen, NULL, 0, true,
				       flags & PMIDX_WRITE_NOWAIT);
	if (ret != -EAGAIN)
		lodge_stat_inc(t, del);
	return ret;
}

/* ---- scan ----------------------------------------------------------------- */

struct lodge_scan {
	u8			cur[PMIDX_KEY_MAX + 1];
	u32			curlen;
	bool			incl;
	u8			kbuf[PMIDX_KEY_MAX + 1];
	u8			*val;
	struct lodge_item	it[LODGE_SLOTS_MAX + LODGE_CAP_MAX];
};

/*
 * Emit the KVs of leaf @li of @x (its leaf merged with its buffered
 * writes) from st->cur on. Return: 0 go on, 1 stop, < 0 error.
 */
static int scan_leaf(struct lodge *t, struct lodge_lin *x, int li,
		     struct lodge_scan *st, const u8 *end, u32 end_len,
		     struct pmidx_scan_sink *sink)
{
	struct lodge_leaf *l = lodge_leaf_ptr(t, x->slot[li].w);
	u64 bits = le64_to_cpu(READ_ONCE(l->bitmap)) & lodge_bitmap_mask(t);
	unsigned int n = 0, i, j;
	u32 vlen;
	int s, c, ret;

	for (; bits; bits &= bits - 1) {
		s = __ffs64(bits);
		st->it[n].k = lodge_slot_key(t, l, s, &st->it[n].klen);
		st->it[n].lslot = s;
		st->it[n++].b = NULL;
	}
	for (j = x->nidx; j < x->nidx + x->nbuf; j++) {
		struct lodge_slot *b = &x->slot[j];

		if (x->leaf_count[j] != li)
			continue;
		for (i = 0; i < n; i++)
			if (st->it[i].klen == b->key->len &&
			    !memcmp(st->it[i].k, b->key->b, b->key->len))
				break;
		if (i == n) {
			st->it[n].k = b->key->b;
			st->it[n].klen = b->key->len;
			st->it[n].lslot = -1;
			n++;
		}
		st->it[i].b = b;
	}
	/* key order (insertion sort: a leaf and its buffer are small) */
	for (i = 1; i < n; i++) {
		struct lodge_item v = st->it[i];

		for (j = i; j > 0 && pmidx_key_cmp(st->it[j - 1].k,
						   st->it[j - 1].klen,
						   v.k, v.klen) > 0; j--)
			st->it[j] = st->it[j - 1];
		st->it[j] = v;
	}
	for (i = 0; i < n; i++) {
		struct lodge_item *it = &st->it[i];

		c = pmidx_key_cmp(it->k, it->klen, st->cur, st->curlen);
		if (c < 0 || (!c && !st->incl))
			continue;
		if (end_len && pmidx_key_cmp(it->k, it->klen, end, end_len) >= 0)
			return 1;
		if (it->b && (it->b->flags & LODGE_B_TOMB))
			continue;
		/* the key's one copy, machine-check safe */
		ret = pmidx_read_data(t->pm, st->kbuf, it->k, it->klen);
		if (ret)
			return ret;
		if (it->b) {
			vlen = it->b->vlen;
			if (vlen <= 8)
				memcpy(st->val, &it->b->w, vlen);
			else
				ret = lodge_rec_value(t, it->b,
					x->buf_ver[it->b - x->slot], st->val);
		} else {
			ret = lodge_leaf_value(t, l, it->lslot, st->val,
					       PMIDX_VALUE_MAX, &vlen);
		}
		if (ret)
			return ret;
		memcpy(st->cur, st->kbuf, it->klen);
		st->curlen = it->klen;
		st->incl = false;
		ret = sink->emit(sink, st->kbuf, it->klen, st->val, vlen);
		if (ret)
			return ret < 0 ? ret : 1;
	}
	return 0;
}

static int lodge_scan(struct pmidx_index *idx, const u8 *start, u32 start_len,
		      bool after, const u8 *end, u32 end_len,
		      struct pmidx_scan_sink *sink)
{
	struct lodge *t = idx->priv;
	struct lodge_scan *st;
	struct lodge_lin *x;
	int li, ret = 0;

	lodge_stat_inc(t, scan);
	st = kvzalloc(sizeof(*st), GFP_KERNEL);
	if (!st)
		return -ENOMEM;
	st->val = kvmalloc(PMIDX_VALUE_MAX, GFP_KERNEL);
	if (!st->val) {
		kvfree(st);
		return -ENOMEM;
	}
	if (start_len)		/* @start may be NULL: no mem* call with it */
		memcpy(st->cur, start, start_len);
	st->curlen = start_len;
	st->incl = !after;
	for (;;) {
		percpu_down_read(&t->tree);
		if (!READ_ONCE(t->ready)) {
			percpu_up_read(&t->tree);
			break;
		}
		x = lodge_find(t, st->cur, st->curlen);
		read_lock(&x->lock);
		for (li = lodge_lin_leaf(x, st->cur, st->curlen);
		     li < x->nidx && !ret; li++)
			ret = scan_leaf(t, x, li, st, end, end_len, sink);
		if (!ret && x->hi) {
			/* on at the next node's low key */
			memcpy(st->cur, x->hi->b, x->hi->len);
			st->curlen = x->hi->len;
			st->incl = true;
		} else if (!ret) {
			ret = 1;
		}
		read_unlock(&x->lock);
		percpu_up_read(&t->tree);
		if (ret)
			break;
		cond_resched();
	}
	kvfree(st->val);
	kvfree(st);
	return min(ret, 0);
}

/* ---- check / stats -------------------------------------------------------- */

static int lodge_check_op(struct pmidx_index *idx, u64 *keys, const char **why)
{
	return lodge_check(idx->priv, keys, why);
}

static void lodge_stats(struct pmidx_index *idx, struct pmidx_stats *s)
{
	struct lodge *t = idx->priv;
	struct lodge_pcpu sum = {};
	int cpu;

	for_each_possible_cpu(cpu) {
		struct lodge_pcpu *c = per_cpu_ptr(t->st, cpu);

		sum.get += READ_ONCE(c->get);
		sum.put += READ_ONCE(c->put);
		sum.del += READ_ONCE(c->del);
		sum.scan += READ_ONCE(c->scan);
		sum.buffer_hits += READ_ONCE(c->buffer_hits);
		sum.leaf_writes += READ_ONCE(c->leaf_writes);
		sum.log_bytes += READ_ONCE(c->log_bytes);
		sum.keys += READ_ONCE(c->keys);
	}
	pmidx_stat_set(s, PMIDX_STAT_KEYS, max_t(s64, sum.keys, 0));
	pmidx_stat_set(s, PMIDX_STAT_OPS_GET, sum.get);
	pmidx_stat_set(s, PMIDX_STAT_OPS_PUT, sum.put);
	pmidx_stat_set(s, PMIDX_STAT_OPS_DEL, sum.del);
	pmidx_stat_set(s, PMIDX_STAT_OPS_SCAN, sum.scan);
	pmidx_stat_set(s, PMIDX_STAT_BUFFER_HITS, sum.buffer_hits);
	pmidx_stat_set(s, PMIDX_STAT_LEAF_FLUSHES, sum.leaf_writes);
	pmidx_stat_set(s, PMIDX_STAT_LOG_BYTES, sum.log_bytes);
	pmidx_stat_set(s, PMIDX_STAT_PM_BYTES, PMIDX_INDEX_ROOT_SIZE +
		       atomic64_read(&t->nleaves) * t->leaf_size +
		       atomic64_read(&t->blob_bytes) +
		       atomic64_read(&t->log_bytes_live) +
		       (t->dir ? LODGE_DIR_SIZE : 0));
	pmidx_stat_set(s, PMIDX_STAT_DRAM_BYTES, sizeof(*t) +
		       atomic64_read(&t->nlins) * (sizeof(struct lodge_lin) +
		       t->cap * (sizeof(struct lodge_slot) + 9)) +
		       atomic64_read(&t->ninodes) * sizeof(struct lodge_inode) +
		       num_possible_cpus() * (sizeof(struct lodge_pcpu) +
					      sizeof(struct lodge_part)));
	pmidx_stat_set(s, PMIDX_STAT_RECOVERY_NS, t->recovery_ns);
}

/* ---- lifecycle ------------------------------------------------------------ */

static void teardown(struct lodge *t)
{
	struct lodge_vlog *v, *n;

	/* dead logs never freed: unnamed, a later trace frees them */
	list_for_each_entry_safe(v, n, &t->dead, node)
		kfree(v);
	lodge_tree_free(t);
	lodge_log_free_all(t, false);
	kfree(t->spare_log);
	lodge_fmem_free(t);
	kvfree(t->dir_map);
	free_percpu(t->parts);
	free_percpu(t->st);
	mutex_destroy(&t->fmem_lock);
	mutex_destroy(&t->drain);
	percpu_free_rwsem(&t->tree);
	kfree(t);
}

static int lodge_open(struct pmidx_index *idx, const struct pmidx_recover *rc)
{
	struct lodge *t;
	u64 t0 = ktime_get_ns();
	int cpu, ret = -ENOMEM;

	lodge_format_checks();
	t = kzalloc(sizeof(*t), GFP_KERNEL);
	if (!t)
		return -ENOMEM;
	t->idx = idx;
	t->pool = idx->pool;
	t->pm = &idx->pool->pm;
	t->root = pmidx_ptr(t->pm, idx->root);
	if (percpu_init_rwsem(&t->tree)) {
		kfree(t);
		return -ENOMEM;
	}
	spin_lock_init(&t->log_lock);
	INIT_LIST_HEAD(&t->logs);
	INIT_LIST_HEAD(&t->dead);
	mutex_init(&t->drain);
	mutex_init(&t->fmem_lock);
	t->cap = clamp_t(u32, lodge_node_slots, 8, LODGE_CAP_MAX);
	t->t_node = clamp_t(u32, lodge_t_node, 1, 8);
	t->hotness = max_t(u32, lodge_hot_t, 1);
	t->multi = lodge_multi_split;
	t->log_size = clamp_t(u32, lodge_log_kb, 1, 1024) << 10;
	t->leaf_size = lodge_leaf_bytes == 256 || lodge_leaf_bytes == 1024 ?
		       lodge_leaf_bytes : 512;
	t->parts = alloc_percpu(struct lodge_part);
	t->st = alloc_percpu(struct lodge_pcpu);
	t->dir_map = kvcalloc(BITS_TO_LONGS(LODGE_DIR_SLOTS),
			      sizeof(unsigned long), GFP_KERNEL);
	if (!t->parts || !t->st || !t->dir_map)
		goto fail;
	for_each_possible_cpu(cpu)
		spin_lock_init(&per_cpu_ptr(t->parts, cpu)->lock);
	ret = lodge_recover(t, rc);
	if (ret)
		goto fail;
	t->slots = (t->leaf_size - LODGE_LEAF_HDR) / 16;
	t->t_split = clamp_t(u32, lodge_t_split, 2, t->slots - 1);
	t->recovery_ns = ktime_get_ns() - t0;
	idx->priv = t;
	if (!rc->clean || t->replayed)
		pr_info("pmidx: index %s (lodge): %lld leaves, %u logs, %llu records replayed in %llu us, %u recovery threads\n",
			idx->name, (long long)atomic64_read(&t->nleaves),
			t->nlogs, t->replayed, t->recovery_ns / 1000,
			t->recovery_threads);
	return 0;
fail:
	teardown(t);
	return ret;
}

/*
 * Clean detach: every buffered KV goes to its leaf, so every log is
 * freed and the next attach replays nothing.
 */
static void flush_everything(struct lodge *t)
{
	struct lodge_lin *x;
	u8 *cur = kmalloc(PMIDX_KEY_MAX + 1, GFP_KERNEL);
	u32 curlen = 0;
	int ret;

	if (!cur)
		return;
	percpu_down_read(&t->tree);
	for (x = lodge_find(t, NULL, 0);;) {
		write_lock(&x->lock);
		ret = lodge_flush_all(t, x, U64_MAX);
		if (ret == LODGE_NEED_SPLIT && x->lo) {
			curlen = x->lo->len;
			memcpy(cur, x->lo->b, curlen);
		}
		write_unlock(&x->lock);
		if (ret == LODGE_NEED_SPLIT) {
			percpu_up_read(&t->tree);
			ret = lodge_split_lin(t, cur, curlen);
			percpu_down_read(&t->tree);
			if (ret)
				break;
			x = lodge_find(t, cur, curlen);
			continue;
		}
		if (ret < 0 || !x->hi)
			break;
		curlen = x->hi->len;
		memcpy(cur, x->hi->b, curlen);
		x = lodge_find(t, cur, curlen);
	}
	percpu_up_read(&t->tree);
	kfree(cur);
}

static void lodge_close(struct pmidx_index *idx, bool clean)
{
	struct lodge *t = idx->priv;

	if (!t)
		return;
	if (clean && t->ready) {
		free_dead(t);
		flush_everything(t);
		lodge_log_seal_all(t);
	}
	teardown(t);
	idx->priv = NULL;
}

/* Drop-index: every leaf with its blobs, every log, the directory. */
static void lodge_destroy(struct pmidx_index *idx)
{
	struct lodge *t = idx->priv;
	u64 off, next, n = 0, max = t->pm->size / 256;

	if (t->ready) {
		for (off = t->head; off && n++ < max; off = next) {
			struct lodge_leaf *l = lodge_leaf_ptr(t, off);

			if (!pmidx_alloc_valid(&t->pool->alloc, off,
					       t->leaf_size))
				break;
			next = lodge_leaf_next(l);
			lodge_leaf_free_blobs(t, l, le64_to_cpu(l->bitmap) &
					      lodge_bitmap_mask(t));
			if (le64_to_cpu(l->flen) > 8)
				pmidx_free(&t->pool->alloc,
					   le64_to_cpu(l->fence));
			pmidx_free(&t->pool->alloc, off);
		}
		lodge_log_free_all(t, true);
		pmidx_free(&t->pool->alloc, pmidx_off(t->pm, t->dir));
	}
	teardown(t);
	idx->priv = NULL;
}

const struct pmidx_engine_ops pmidx_lodge_ops = {
	.id		= PMIDX_ENGINE_LODGE,
	.name		= "lodge",
	.flags		= PMIDX_ENGINE_F_NOWAIT,
	.open		= lodge_open,
	.close		= lodge_close,
	.destroy	= lodge_destroy,
	.get		= lodge_get,
	.put		= lodge_put,
	.del		= lodge_del,
	.scan		= lodge_scan,
	.check		= lodge_check_op,
	.stats		= lodge_stats,
};
