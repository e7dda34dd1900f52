// SPDX-License-Identifier: GPL-2.0
/*
 * PFtree engine (Zhang et al., "PFtree: Optimizing Persistent Adaptive
 * Radix Tree for PM Systems on eADR Platform"): operations. See pfart.h
 * for the locking and the lifetime of every object, README.md for the
 * crash protocol, the paper map and the deviations.
 *
 * Get: optimistic descent to the leaf array (tree.c), its DRAM metadata
 *   (fingerprint, key length, then the key in pmem), the value copied
 *   out, the array's version checked; a moved version is a retry.
 * Put: the same descent, the array locked at the version it had; a key
 *   that fits is appended in place (leaf.c: body, then the 2-byte header
 *   commit; an update then clears the old record's valid bit), which
 *   allocates nothing. A value over PFART_VINLINE_MAX bytes is a blob,
 *   written before, outside the section. No room, no child for the key's
 *   byte, a key leaving a prefix, an empty index: an SMO (smo.c) under
 *   @smo, which performs the put itself.
 * Delete: the same, one header store; an array left empty or under a
 *   quarter full asks for a prune (smo.c), with hysteresis.
 * Scan: scan.c.
 */
#include <linux/delay.h>
#include <linux/errno.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include "core/blob.h"
#include "lock.h"
#include "persist.h"
#include "pfart.h"

unsigned int pfart_leaf_bytes = PFART_LEAF_MAX;
module_param(pfart_leaf_bytes, uint, 0644);
MODULE_PARM_DESC(pfart_leaf_bytes, "pfart: largest leaf array of new indexes, 512, 1024 or 2048 bytes (default 2048; fixed at the first open)");

s64 pfart_sum(struct pfart *t, size_t field)
{
	s64 sum = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		sum += READ_ONCE(*(s64 *)((char *)per_cpu_ptr(t->pcpu, cpu) +
					 field));
	return sum;
}

#define SUM(t, f)	pfart_sum(t, offsetof(struct pfart_pcpu, f))

/* ---- sections ------------------------------------------------------------- */

/*
 * Enter a writer section, once the checker lets writers in.
 * Return: 0 inside it; -EAGAIN (outside) when @nowait and the checker
 * holds writers off.
 */
int pfart_writer_enter(struct pfart *t, bool nowait)
{
	for (;;) {
		pmidx_epoch_enter(&t->pool->epoch);
		/* pairs with pfart_thaw(): the checker's walk is over */
		if (likely(!smp_load_acquire(&t->frozen)))
			return 0;
		pmidx_epoch_exit(&t->pool->epoch);
		if (nowait)
			return -EAGAIN;
		mutex_lock(&t->gate);
		mutex_unlock(&t->gate);
	}
}

/* Would pfart_retry() leave the section this time (a no-wait writer may not)? */
static bool retry_leaves(unsigned int tries)
{
	return (tries + 1) % PFART_SPIN == 0;
}

/**
 * pfart_retry - a descent or a lock raced a writer: go again
 * @writer: the caller is in a writer section (pfart_writer_enter())
 *
 * Every PFART_SPIN tries the section is left and the CPU given up, every
 * PFART_SPIN_SLEEP for a millisecond: the holder of the lock may be a
 * thread preempted on this CPU, and an epoch section must not spin for
 * long. Context: inside a section, left and entered again.
 * Return: false past PFART_RETRY_MAX tries (a node locked for good).
 */
bool pfart_retry(struct pfart *t, unsigned int *tries, bool writer)
{
	pfart_stat_inc(t, restarts);
	if (++*tries % PFART_SPIN) {
		cpu_relax();
		return true;
	}
	pmidx_epoch_exit(&t->pool->epoch);
	if (*tries % PFART_SPIN_SLEEP)
		cond_resched();
	else
		usleep_range(1000, 2000);	/* a preempted holder: its turn */
	if (writer)
		pfart_writer_enter(t, false);
	else
		pmidx_epoch_enter(&t->pool->epoch);
	return *tries < PFART_RETRY_MAX;
}

/*
 * A writer's descent failed for good: -EAGAIN after PFART_RETRY_MAX
 * tries (a node locked for good) is a damaged index, said once in a
 * while so it can be told from the descent's own -EUCLEAN.
 */
static int gave_up(struct pfart *t, int ret)
{
	if (ret != -EAGAIN)
		return ret;
	pr_warn_ratelimited("pmidx: index %s: pfart: a node stayed locked for %u tries\n",
			    t->idx->name, PFART_RETRY_MAX);
	return -EUCLEAN;
}

/*
 * An SMO retires what it replaced inside its section, where a full epoch
 * list (atomic memory short) would abandon the retiree until the next
 * attach. So it asks for room for its first @n retirees before it
 * changes anything. Without room it leaves the section and frees what
 * was retired, once: a barrier leaves every list empty and at least
 * LIMBO_FIRST slots long. Then it goes on whatever the answer (other
 * sections may refill the list of the CPU it comes back on), abandoning
 * being the epoch's last resort.
 * Return: true in the section, room made; false out of it, to go round.
 */
static bool smo_room(struct pfart *t, unsigned int n, bool *emptied)
{
	if (*emptied || pmidx_epoch_room(&t->pool->epoch, n))
		return true;
	pmidx_epoch_exit(&t->pool->epoch);
	pmidx_epoch_barrier(&t->pool->epoch);
	*emptied = true;
	return false;
}

/*
 * Run an SMO under @smo, the reserves filled first (bulk allocation, out
 * of any section). Called and returns inside a writer section; leaves it
 * meanwhile (the mutex and the refill sleep), holding no lock. An SMO
 * that found atomic memory short for an array the reserves lacked
 * changed nothing and marked its class wanted: it runs again after a
 * refill, a few times (one SMO may take more arrays than a reserve
 * holds), then answers -ENOMEM.
 */
static int smo_put(struct pfart *t, struct pfart_put *pp)
{
	bool emptied = false;
	int ret, tries = 0;

	pmidx_epoch_exit(&t->pool->epoch);
	mutex_lock(&t->smo);
	for (;;) {
		/* short: the SMO allocates what it lacks */
		pfart_reserve_fill(t);
		pfart_writer_enter(t, false);
		if (!smo_room(t, PFART_SMO_PUT_RETIRES, &emptied))
			continue;
		ret = pfart_smo_put(t, pp);
		if (ret != -ENOMEM || ++tries == PFART_SMO_MEM_TRIES)
			break;
		pmidx_epoch_exit(&t->pool->epoch);
	}
	pfart_reserve_settle(t);
	/* in the section of the commit: a CHECK counts what it sees */
	if (!ret && pp->added)
		pfart_stat_inc(t, keys);
	pmidx_epoch_exit(&t->pool->epoch);
	mutex_unlock(&t->smo);
	cond_resched();
	pfart_writer_enter(t, false);
	return ret;
}

static void smo_prune(struct pfart *t, const u8 *key, u32 klen)
{
	bool emptied = false;
	int ret;

	mutex_lock(&t->smo);
	pfart_reserve_fill(t);
	do {
		pfart_writer_enter(t, false);
	} while (!smo_room(t, 1, &emptied));
	ret = pfart_smo_prune(t, key, klen);
	pmidx_epoch_exit(&t->pool->epoch);
	mutex_unlock(&t->smo);
	/* space given back later, once there is memory to rebuild with */
	if (ret && ret != -ENOSPC && ret != -ENOMEM)
		pr_warn_ratelimited("pmidx: pfart index %s: prune failed: %d\n",
				    t->idx->name, ret);
}

/* ---- get ------------------------------------------------------------------ */

static int pfart_get(struct pmidx_index *idx, const u8 *key, u32 klen,
		     u8 *val, u32 *vlen)
{
	struct pfart *t = idx->priv;
	unsigned int tries = 0;
	struct pfart_leaf *l;
	struct pfart_meta *m;
	struct pfart_view v;
	u32 cap = *vlen;
	int e, ret;
	u64 ver;

	pfart_stat_inc(t, ops_get);
	pmidx_epoch_enter(&t->pool->epoch);
	for (;;) {
		ret = pfart_find_leaf(t, key, klen, &l, &ver);
		if (!ret) {
			m = pfart_meta_of(t, pfart_off(t, l));
			e = m ? pfart_leaf_find(t, l, m, key, klen) : -1;
			if (e < 0)
				ret = m ? -ENOENT : -EUCLEAN;
			else if (pfart_leaf_view(l, m, pfart_leaf_size(l->klass),
						 e, &v))
				ret = -EAGAIN;
			else
				ret = pfart_read_value(t, &v, val, cap, vlen);
			if (ret != -EAGAIN && !pfart_read_check(pfart_lk(l), ver))
				ret = -EAGAIN;
			/* poison in the array: the next put rewrites it */
			if (ret == -EIO && v.vfield != PFART_VBLOB)
				WRITE_ONCE(m->media_bad, true);
		}
		if (ret != -EAGAIN)
			break;
		if (!pfart_retry(t, &tries, false)) {
			ret = -EUCLEAN;
			break;
		}
	}
	pmidx_epoch_exit(&t->pool->epoch);
	return ret;
}

/* ---- put ------------------------------------------------------------------ */

/*
 * Put in the locked leaf array @l if the record fits.
 * Return: 0 done, -EEXIST, 1 no room (an SMO), < 0 an error.
 */
static int leaf_put(struct pfart *t, struct pfart_leaf *l, struct pfart_put *pp)
{
	struct pfart_meta *m = pfart_meta_of(t, pfart_off(t, l));
	int e;

	if (!m)
		return -EUCLEAN;
	e = pfart_leaf_find(t, l, m, pp->key, pp->klen);
	if (e >= 0 && pp->flags & PMIDX_PUT_INSERT)
		return -EEXIST;
	if (READ_ONCE(m->media_bad) ||
	    !pfart_leaf_fits(l, m, pfart_rec_bytes(&pp->rec), e < 0))
		return 1;
	pp->old_blob = pfart_leaf_append(t, l, m, &pp->rec, e);
	pp->added = e < 0;
	if (pp->added)		/* in the section: see smo_put() */
		pfart_stat_inc(t, keys);
	return 0;
}

/*
 * A put's or delete's writer section. A no-wait writer retires the blob
 * it replaced inside it (it may not wait outside), where a full epoch
 * list would abandon it: without room for one it is refused (-EAGAIN),
 * before its change.
 */
static int write_enter(struct pfart *t, bool nowait)
{
	int ret = pfart_writer_enter(t, nowait);

	if (!ret && nowait && !pmidx_epoch_room(&t->pool->epoch, 1)) {
		pmidx_epoch_exit(&t->pool->epoch);
		ret = -EAGAIN;
	}
	return ret;
}

/*
 * A no-wait put (core/engine.h) answers -EAGAIN, before its change, where
 * it would sleep: the checker's freeze, a retry that would leave the
 * section, an SMO (no leaf for the key, or no room in it). It retires
 * the replaced blob inside its section, where a retire never waits.
 */
static int pfart_put(struct pmidx_index *idx, const u8 *key, u32 klen,
		     const u8 *val, u32 vlen, u32 flags)
{
	struct pfart *t = idx->priv;
	struct pfart_put pp = {
		.key = key, .klen = klen, .flags = flags,
		.rec = { .key = key, .klen = klen, .val = val },
	};
	bool nowait = flags & PMIDX_WRITE_NOWAIT;
	unsigned int tries = 0;
	struct pfart_leaf *l;
	u64 ver, blob = 0;
	int ret;

	if (vlen > PFART_VINLINE_MAX) {
		/* out of the section: it allocates and persists */
		blob = pmidx_blob_write(t->pool, val, vlen);
		ret = -ENOSPC;
		if (!blob)
			goto out;
		pp.rec.vfield = PFART_VBLOB;
		pp.rec.blob = blob;
	} else {
		pp.rec.vfield = vlen;
	}
	ret = write_enter(t, nowait);
	if (ret)
		goto out;
	for (;;) {
		ret = pfart_find_leaf(t, key, klen, &l, &ver);
		if (ret == -ENOENT) {
			ret = nowait ? -EAGAIN : smo_put(t, &pp);
			break;
		}
		if (!ret && !pfart_lock_at(t, pfart_lk(l), ver))
			ret = -EAGAIN;
		if (ret == -EAGAIN && nowait && retry_leaves(tries))
			break;
		if (ret == -EAGAIN && pfart_retry(t, &tries, true))
			continue;
		if (ret) {
			ret = gave_up(t, ret);
			break;
		}
		ret = leaf_put(t, l, &pp);
		pfart_unlock(t, pfart_lk(l));
		if (ret == 1)
			ret = nowait ? -EAGAIN : smo_put(t, &pp);
		break;
	}
	if (!ret && pp.old_blob) {
		pfart_stat_add(t, blob_bytes,
			       -(s64)pmidx_alloc_size(&t->pool->alloc, pp.old_blob));
		/* no-wait: in the section, where a retire never waits */
		if (nowait)
			pmidx_blob_retire(t->pool, pp.old_blob);
	}
	pmidx_epoch_exit(&t->pool->epoch);
	if (!ret && pp.old_blob && !nowait)
		pmidx_blob_retire(t->pool, pp.old_blob);
out:
	if (ret != -EAGAIN)
		pfart_stat_inc(t, ops_put);	/* a refused one runs again */
	if (ret) {
		if (blob)	/* never committed */
			pmidx_free(&t->pool->alloc, blob);
		return ret;
	}
	if (blob)
		pfart_stat_add(t, blob_bytes,
			       pmidx_alloc_size(&t->pool->alloc, blob));
	return 0;
}

/* ---- delete --------------------------------------------------------------- */

/*
 * Is a prune wanted once a delete leaves @n entries and @live record
 * bytes in @l (its metadata @m)? (Under the array's lock.)
 */
static bool want_prune(struct pfart_leaf *l, struct pfart_meta *m, u32 n,
		       u32 live)
{
	if (!n)
		return true;
	return live * 4 < pfart_data_size(l->klass) &&
	       (!m->pruned || live * 2 <= m->pruned);
}

/*
 * A no-wait delete (core/engine.h) answers -EAGAIN, before its change,
 * where it would sleep: as a put (pfart_put()), and when a prune would
 * follow it. It retires the record's blob inside its section.
 */
static int pfart_del(struct pmidx_index *idx, const u8 *key, u32 klen,
		     u32 flags)
{
	struct pfart *t = idx->priv;
	bool nowait = flags & PMIDX_WRITE_NOWAIT;
	unsigned int tries = 0;
	struct pfart_leaf *l;
	struct pfart_meta *m;
	bool prune = false;
	u64 ver, blob = 0;
	int e, ret;

	ret = write_enter(t, nowait);
	if (ret)
		goto out;
	for (;;) {
		ret = pfart_find_leaf(t, key, klen, &l, &ver);
		if (!ret && !pfart_lock_at(t, pfart_lk(l), ver))
			ret = -EAGAIN;
		if (ret == -EAGAIN && nowait && retry_leaves(tries))
			break;
		if (ret == -EAGAIN && pfart_retry(t, &tries, true))
			continue;
		if (ret) {
			ret = gave_up(t, ret);
			break;
		}
		m = pfart_meta_of(t, pfart_off(t, l));
		e = m ? pfart_leaf_find(t, l, m, key, klen) : -1;
		if (e >= 0 && nowait &&
		    want_prune(l, m, m->n - 1, pfart_leaf_live_after(l, m, e))) {
			pfart_unlock(t, pfart_lk(l));
			ret = -EAGAIN;
			break;
		}
		if (e >= 0) {
			blob = pfart_leaf_invalidate(t, l, m, e);
			prune = want_prune(l, m, m->n, m->live);
		}
		pfart_unlock(t, pfart_lk(l));
		ret = !m ? -EUCLEAN : e < 0 ? -ENOENT : 0;
		break;
	}
	if (!ret)
		pfart_stat_add(t, keys, -1);
	if (!ret && blob) {
		pfart_stat_add(t, blob_bytes,
			       -(s64)pmidx_alloc_size(&t->pool->alloc, blob));
		/* no-wait: in the section, where a retire never waits */
		if (nowait)
			pmidx_blob_retire(t->pool, blob);
	}
	pmidx_epoch_exit(&t->pool->epoch);
	if (!ret && blob && !nowait)
		pmidx_blob_retire(t->pool, blob);
	if (!ret && prune)
		smo_prune(t, key, klen);
out:
	if (ret != -EAGAIN)
		pfart_stat_inc(t, ops_del);	/* a refused one runs again */
	return ret;
}

/* ---- scan, check, stats ------------------------------------------------------ */

static int pfart_scan_op(struct pmidx_index *idx, const u8 *start,
			 u32 start_len, bool after, const u8 *end, u32 end_len,
			 struct pmidx_scan_sink *sink)
{
	struct pfart *t = idx->priv;

	pfart_stat_inc(t, ops_scan);
	return pfart_scan(t, start, start_len, after, end, end_len, sink);
}

static int pfart_check_op(struct pmidx_index *idx, u64 *keys, const char **why)
{
	return pfart_check(idx->priv, keys, why);
}

static void pfart_stats(struct pmidx_index *idx, struct pmidx_stats *s)
{
	struct pfart *t = idx->priv;
	s64 pm = PMIDX_INDEX_ROOT_SIZE + SUM(t, leaf_bytes) +
		 SUM(t, inner_bytes) + SUM(t, blob_bytes);

	pmidx_stat_set(s, PMIDX_STAT_KEYS, max_t(s64, SUM(t, keys), 0));
	pmidx_stat_set(s, PMIDX_STAT_OPS_GET, SUM(t, ops_get));
	pmidx_stat_set(s, PMIDX_STAT_OPS_PUT, SUM(t, ops_put));
	pmidx_stat_set(s, PMIDX_STAT_OPS_DEL, SUM(t, ops_del));
	pmidx_stat_set(s, PMIDX_STAT_OPS_SCAN, SUM(t, ops_scan));
	pmidx_stat_set(s, PMIDX_STAT_PM_BYTES, max_t(s64, pm, 0));
	pmidx_stat_set(s, PMIDX_STAT_DRAM_BYTES, sizeof(*idx) + sizeof(*t) +
		       sizeof(struct pfart_scratch) +
		       atomic64_read(&t->dram_bytes) +
		       num_possible_cpus() * sizeof(struct pfart_pcpu));
}

/* ---- lifecycle -------------------------------------------------------------- */

static void teardown(struct pfart *t)
{
	pfart_reserve_drain(t);
	pfart_mdir_free(t);
	free_percpu(t->pcpu);
	kvfree(t->scr);
	kfree(t);
}

static int pfart_open(struct pmidx_index *idx, const struct pmidx_recover *rc)
{
	struct pmidx_pool *pool = idx->pool;
	u64 t0 = ktime_get_ns();
	struct pfart *t;
	int ret = -ENOMEM;

	pfart_format_static_checks();
	t = kzalloc(sizeof(*t), GFP_KERNEL);
	if (!t)
		return -ENOMEM;
	t->idx = idx;
	t->pool = pool;
	t->pm = &pool->pm;
	t->eadr = pool->pm.eadr;	/* the adaptive flush's mode */
	t->root_off = idx->root;
	t->root = pmidx_ptr(t->pm, idx->root);
	mutex_init(&t->smo);
	mutex_init(&t->gate);
	atomic64_set(&t->dram_bytes, 0);
	t->pcpu = alloc_percpu(struct pfart_pcpu);
	t->scr = kvzalloc(sizeof(*t->scr), GFP_KERNEL);
	if (t->pcpu && t->scr)
		ret = pfart_mdir_init(t);
	if (!ret)
		ret = pfart_recover(t, rc);
	if (ret) {
		teardown(t);
		return ret;
	}
	t->top = le64_to_cpu(t->root->top);
	t->recovery_ns = ktime_get_ns() - t0;
	idx->priv = t;
	return 0;
}

/* Detach: nothing to save (§4.4: the metadata is rebuilt at attach). */
static void pfart_close(struct pmidx_index *idx, bool clean)
{
	struct pfart *t = idx->priv;

	if (!t)
		return;
	/* our retired arrays come back first: their callbacks name @t */
	pmidx_epoch_barrier(&t->pool->epoch);
	teardown(t);
	idx->priv = NULL;
}

struct drop {
	u64	*v;
	u64	n, cap;
};

static int drop_node(struct pfart *t, struct pfart_walk *w, u64 off)
{
	struct drop *d = w->ctx;
	u64 *p;

	if (d->n == d->cap) {
		d->cap = d->cap ? 2 * d->cap : 1024;
		p = kvmalloc_array(d->cap, sizeof(*p), GFP_KERNEL);
		if (!p)
			return -ENOMEM;
		if (d->n)
			memcpy(p, d->v, d->n * sizeof(*p));
		kvfree(d->v);
		d->v = p;
	}
	d->v[d->n++] = off;
	return 0;
}

static int drop_blobs(struct pfart *t, struct pfart_walk *w, u64 off,
		      const u8 *path, u32 depth)
{
	struct pfart_leaf *l = pfart_ptr(t, off);
	struct pfart_meta *m = pfart_meta_of(t, off);
	struct pfart_view v;
	u32 e;

	for (e = 0; m && e < m->n; e++)
		if (!pfart_leaf_view(l, m, pfart_leaf_size(l->klass), e, &v) &&
		    v.vfield == PFART_VBLOB)
			pmidx_free(&t->pool->alloc, pfart_view_blob(&v));
	return 0;
}

/* Drop-index: every node, every blob a live record names, the reserves. */
static void pfart_destroy(struct pmidx_index *idx)
{
	struct pfart *t = idx->priv;
	struct drop d = {};
	struct pfart_walk w = {
		.node = drop_node, .leaf = drop_blobs, .ctx = &d,
		.validate = true,
	};
	u64 i;

	pmidx_epoch_barrier(&t->pool->epoch);
	if (pfart_walk(t, &w))
		pr_warn("pmidx: index %s: pfart drop stopped at a damaged node (%s); the rest leaks\n",
			idx->name, w.why ?: "?");
	for (i = 0; i < d.n; i++)
		pmidx_free(&t->pool->alloc, d.v[i]);
	kvfree(d.v);
	teardown(t);
	idx->priv = NULL;
}

const struct pmidx_engine_ops pmidx_pfart_ops = {
	.id		= PMIDX_ENGINE_PFART,
	.name		= "pfart",
	.flags		= PMIDX_ENGINE_F_NOWAIT,
	.open		= pfart_open,
	.close		= pfart_close,
	.destroy	= pfart_destroy,
	.get		= pfart_get,
	.put		= pfart_put,
	.del		= pfart_del,
	.scan		= pfart_scan_op,
	.check		= pfart_check_op,
	.stats		= pfart_stats,
};
