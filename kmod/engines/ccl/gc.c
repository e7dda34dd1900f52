// SPDX-License-Identifier: GPL-2.0
/*
 * Locality-aware log garbage collection (paper section 3.4).
 *
 * The log has two sides (core/wal.h). t->side is the global epoch: new
 * entries go to that side, and each buffered KV's epoch bit says which
 * side holds its newest entry. A collection:
 *
 *   1. flips t->side: the old side becomes the B-logs, the new one the
 *      I-logs, which foreground writes use from now on;
 *   2. visits every buffer node in key order, under its lock: each
 *      unflushed KV whose epoch bit is the old side is appended to the
 *      I-log (with a fresh timestamp, so a replay prefers the copy) and
 *      its bit flipped. KVs already flushed to leaves are not copied,
 *      nor are KVs written during the collection (their bit is the new
 *      side). No leaf is written: the copies are sequential log appends;
 *   3. recycles every chunk of the old side.
 *
 * A collection that fails (a flush that must split finds no free page,
 * no memory) keeps the old side and its own flip: the next one does not
 * flip again but finishes that side, since recycling the newer side
 * would leave older entries behind (ccl.c: entries only leave the log
 * together with everything older). When the log has no chunk for a copy
 * (a full pool), the node is flushed to its leaf instead, as in the
 * naive mode.
 *
 * Writers read t->side under their buffer node's lock. A writer that
 * still saw the old side locked the node either before the collector
 * visits it (the collector then copies its KV) or it would have seen the
 * flip (the collector's lock release orders the flip before it). Buffer
 * nodes created by splits during the walk start with nothing unflushed
 * and are visited anyway (the walk goes by key). So after step 2 nothing
 * needed is in the old side.
 *
 * The naive mode (ccl_gc_naive=1, for comparison) flushes every buffered
 * KV to its leaf in step 2 instead: random leaf writes, as the paper's
 * baseline (foreground writes are not stopped here, though).
 *
 * A collection is triggered when the log's written bytes exceed
 * ccl_th_log percent of the leaves' bytes (and at least CCL_GC_MIN_LOG),
 * and at least twice what the last collection left behind: the buffered
 * KVs alone are about 16 * N_batch / 256 of the leaf bytes (12.5 % at
 * N_batch 2), so with large N_batch the paper's rule alone would collect
 * again and again without freeing anything. Replaced and deleted blobs
 * are held by the log until both sides have been recycled (core/wal.h,
 * "Lifetime rule"), so a collection is also triggered when those exceed
 * ccl_th_log percent of the index's leaf and blob bytes (and at least
 * CCL_GC_MIN_LOG): with large values the log's own size would otherwise
 * let them pile up. Writers collect themselves when the held blobs pass
 * 1/16 of the pool (ccl_gc_throttle), or the pool is full
 * (ccl_gc_reclaim). The GC thread also drains recovered overflow KVs
 * (recovery.c) first.
 */
#include <linux/mutex.h>
#include <linux/sched.h>
#include "ccl.h"

#define CCL_GC_MIN_LOG		4096
#define CCL_GC_RESERVE		1

struct gc_ctx {
	struct ccl_res	*res;
	unsigned int	side;
	bool		naive;
	u64		copied;
};

static int gc_visit(struct ccl_tree *t, struct ccl_bnode *b, u64 *h,
		    void *arg)
{
	struct gc_ctx *c = arg;
	unsigned int i, pos = bn_pos(*h);
	int ret;

	/*
	 * A node past the write limit is flushed, not copied: each copy
	 * takes timestamps, and its writers can no longer flush it
	 * (ccl.h, CCL_TS_SLACK).
	 */
	if (b->ovf || (c->naive && pos) || (pos && ccl_ts_near_limit(b)))
		return ccl_flush(t, b, h, NULL, 0, c->res);
	for (i = 0; i < pos; i++) {
		if (bn_ebit(*h, i) == c->side)
			continue;
		ret = pmidx_wal_append(t->wal, c->side, b->slot[i].key,
				       b->slot[i].val, ccl_next_ts(t, b),
				       b->sflag[i]);
		/*
		 * No chunk for the copy (a full pool, or no atomic memory for
		 * its DRAM side): the node is flushed as in the naive mode,
		 * so the old side can still be recycled and a delete waiting
		 * for log space gets it. The copies made above are older than
		 * the leaf's new timestamp: replay ignores them, as it does
		 * those of a node flushed after a collection.
		 */
		if (ret == -ENOSPC || ret == -ENOMEM) {
			t->gc_full_flushes++;
			return ccl_flush(t, b, h, NULL, 0, c->res);
		}
		if (ret)
			return ret;
		*h = bn_set_ebit(*h, i, c->side);
		c->copied++;
	}
	return 0;
}

/* One collection; t->gc_lock held. */
static int gc_collect(struct ccl_tree *t)
{
	struct ccl_res res = {};
	struct gc_ctx c = { .res = &res, .naive = READ_ONCE(ccl_gc_naive) };
	unsigned int old;
	int ret;

	lockdep_assert_held(&t->gc_lock);
	if (!READ_ONCE(t->ready))
		return 0;
	/*
	 * After a failed collection the old side still holds entries older
	 * than everything writers appended since: this one finishes it
	 * without flipping again. A flip would recycle the newer side and
	 * keep the older (a put outliving the tombstone that overrides it).
	 */
	c.side = t->side;
	old = c.side ^ 1;
	if (!t->gc_failed) {
		swap(old, c.side);
		WRITE_ONCE(t->side, c.side);
		/* the flip is visible before the first node is locked */
		smp_mb();
	}
	ret = ccl_walk(t, gc_visit, &c, &res);
	t->gc_failed = ret != 0;
	if (!ret) {
		pmidx_wal_recycle(t->wal, old);
		atomic64_inc(&t->gc_runs);
		/* what is left is live: the next collection must free more */
		WRITE_ONCE(t->gc_live, pmidx_wal_bytes(t->wal));
	}
	ccl_res_release(t, &res);
	if (ret)
		pr_warn_ratelimited("pmidx: index %s (ccl): log collection failed: %d\n",
				    t->idx->name, ret);
	return ret;
}

/**
 * ccl_gc_run - one collection
 *
 * Context: process context; sleeps; serialised by t->gc_lock.
 * Return: 0, or an error (the old side is then kept; nothing is lost).
 */
int ccl_gc_run(struct ccl_tree *t)
{
	int ret;

	mutex_lock(&t->gc_lock);
	ret = gc_collect(t);
	mutex_unlock(&t->gc_lock);
	return ret;
}

/* The log holds so many retired blobs (1/16 of the pool) that writers wait. */
static bool gc_held_over(struct ccl_tree *t)
{
	return pmidx_wal_held_bytes(t->wal) > (t->pm->size >> 4);
}

/* A writer would collect (ccl_gc_throttle): a no-wait one cannot. */
bool ccl_gc_behind(struct ccl_tree *t)
{
	return t->wal && gc_held_over(t);
}

/**
 * ccl_gc_throttle - collect in the writer's context when the GC thread
 *                   falls behind (backpressure)
 *
 * Held blobs come back only through collections (core/wal.h), so a GC
 * thread starved of CPU must not let writers fill the pool with them: a
 * writer that finds too much held runs the collection itself (writers
 * that arrive meanwhile wait on the lock, then find it done).
 *
 * Context: process context, outside epoch sections; sleeps.
 */
void ccl_gc_throttle(struct ccl_tree *t)
{
	if (!ccl_gc_behind(t))
		return;
	mutex_lock(&t->gc_lock);
	if (gc_held_over(t))
		gc_collect(t);
	mutex_unlock(&t->gc_lock);
}

/**
 * ccl_gc_reclaim - the pool is full: give back what the log holds
 *
 * Two collections release everything retired before the first one (each
 * side must be recycled once); each also gives the chunks of the side it
 * recycles back to the log, which is what a delete on a full pool needs.
 *
 * Context: process context, outside epoch sections; sleeps.
 * Return: true when a collection gave back blobs or log chunks, here or
 * in another writer meanwhile (the write may now succeed: it is tried
 * once more).
 */
bool ccl_gc_reclaim(struct ccl_tree *t)
{
	u64 held, runs;
	bool done = false;
	int i;

	if (!t->wal)
		return false;
	held = pmidx_wal_held_bytes(t->wal);
	if (!held && !pmidx_wal_bytes_exact(t->wal))
		return false;
	runs = atomic64_read(&t->gc_runs);
	mutex_lock(&t->gc_lock);
	/* another writer collected while this one waited: just try again */
	if (atomic64_read(&t->gc_runs) != runs) {
		done = true;
		goto out;
	}
	for (i = 0; i < 2; i++) {
		if (gc_collect(t))
			break;
		done = true;
		/* chunks come back with one; held blobs may need both sides */
		if (!held || pmidx_wal_held_bytes(t->wal) < held)
			break;
	}
out:
	mutex_unlock(&t->gc_lock);
	/* released blobs pass through the epochs before they are free */
	pmidx_epoch_barrier(&t->epoch);
	return done;
}

static bool gc_needed(struct ccl_tree *t)
{
	u64 log = pmidx_wal_bytes(t->wal), held = pmidx_wal_held_bytes(t->wal);
	u64 leaf = (u64)atomic64_read(&t->nleaves) * sizeof(struct ccl_leaf);
	u64 th = READ_ONCE(ccl_th_log);

	if (log >= CCL_GC_MIN_LOG && log >= 2 * READ_ONCE(t->gc_live) &&
	    log * 100 > th * leaf)
		return true;
	/*
	 * Blobs the log holds are space only collections give back: each one
	 * releases what was retired before the one before it, so once the
	 * writes stop, two more empty the held set and this turns false.
	 */
	return held >= CCL_GC_MIN_LOG &&
	       held * 100 > th * (leaf + atomic64_read(&t->blob_bytes));
}

/* Called after writes: wake the GC thread when the log is too large. */
void ccl_gc_maybe_kick(struct ccl_tree *t)
{
	if (t->wal && !test_bit(0, &t->gc.kicked) && gc_needed(t))
		pmidx_gc_kick(&t->gc);
}

/* The GC thread's work: see pmidx_gc_start() in ccl.c. */
void ccl_gc_work(void *arg)
{
	struct ccl_tree *t = arg;

	/* no allocation while the pool's recovery trace runs */
	if (READ_ONCE(t->pool->alloc.tracing) || !READ_ONCE(t->ready))
		return;
	if (atomic_read(&t->ovf_nodes) || gc_needed(t))
		ccl_gc_run(t);
	/* a chunk ready for writers (which must not sleep), once written */
	if (pmidx_wal_written(t->wal))
		pmidx_wal_reserve(t->wal, CCL_GC_RESERVE);
}

static int flush_visit(struct ccl_tree *t, struct ccl_bnode *b, u64 *h,
		       void *arg)
{
	if (!bn_pos(*h) && !b->ovf)
		return 0;
	return ccl_flush(t, b, h, NULL, 0, arg);
}

/**
 * ccl_flush_all - flush every buffered KV to the leaves, then empty the log
 *
 * For a clean detach: the next attach finds an empty log.
 *
 * Context: process context, no other writer.
 */
int ccl_flush_all(struct ccl_tree *t)
{
	struct ccl_res res = {};
	int ret;

	mutex_lock(&t->gc_lock);
	ret = ccl_walk(t, flush_visit, &res, &res);
	ccl_res_release(t, &res);
	if (!ret) {
		pmidx_wal_recycle(t->wal, 0);
		pmidx_wal_recycle(t->wal, 1);
		t->gc_failed = false;
	}
	mutex_unlock(&t->gc_lock);
	return ret;
}
