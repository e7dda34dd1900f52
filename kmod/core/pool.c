// SPDX-License-Identifier: GPL-2.0
/*
 * Pool lifecycle: format, open (attach), close (detach), and recovery.
 *
 * Attach after a clean detach trusts the written-back allocator state.
 * Attach after a crash (clean flag not set) runs recovery: the allocator
 * replays its intent records and loads the committed-mode bitmaps
 * (O(chunks), no engine involved), forgets every traced allocation, and
 * the roots are traced, so whatever was allocated but never linked is
 * free again. With pmidx_recovery_verify the committed-mode objects are
 * traced as well and must be exactly what the allocator recovered.
 * Either way the superblock is then rewritten with clean = 0 before the
 * pool is used, so a crash from here on is recognised at the next attach.
 *
 * Traced and committed indexes in one pool (the rule: alloc.h). The
 * trace covers the traced indexes only: each index's root is marked, a
 * traced engine's open() gets rc.mark and marks what it references, a
 * committed engine's open() gets !rc.mark and reads nothing. The
 * committed-mode chunks keep what the intents and bitmaps recovered,
 * which the trace cannot clear; the traced chunks keep what was marked.
 * A committed drop that this module cannot resume (its engine is not
 * built in) freezes committed-mode space for the attach, before the
 * allocator loads (alloc.h, "A drop that waits for its engine").
 * Order of a crash attach:
 *   1. allocator: descriptors, intent replay, committed bitmaps; traced
 *      chunks emptied (pmidx_alloc_trace_begin());
 *   2. the drops a crash interrupted are finished (their roots stay
 *      unmarked: the trace frees them) - before the checker's snapshot,
 *      which must not count what they free;
 *   3. roots marked, engines opened (traced ones mark);
 *   4. the checker compares (pmidx_recovery_verify), the trace ends.
 */
#include <linux/cpumask.h>
#include <linux/errno.h>
#include <linux/ktime.h>
#include <linux/printk.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/timekeeping.h>
#include "pool.h"
#include "dispatch.h"
#include "engine.h"
#include "index_table.h"
#include "super.h"

static int pmem_init(struct pmidx_pmem *pm, void *base, u64 size, bool eadr)
{
	pm->base = base;
	pm->size = size;
	pm->eadr = eadr;
	pm->stats = alloc_percpu(struct pmidx_pmem_stats);
	return pm->stats ? 0 : -ENOMEM;
}

void pmidx_pmem_sum_stats(const struct pmidx_pmem *pm,
			  struct pmidx_pmem_stats *sum)
{
	int cpu;

	memset(sum, 0, sizeof(*sum));
	for_each_possible_cpu(cpu) {
		const struct pmidx_pmem_stats *s = per_cpu_ptr(pm->stats, cpu);

		sum->flushes += READ_ONCE(s->flushes);
		sum->fences += READ_ONCE(s->fences);
	}
}

/**
 * pmidx_pool_format - write an empty pool over [@base, @base + @size)
 * @force: overwrite an existing pool
 *
 * Persistence order: index table and chunk headers first, then both
 * superblock copies; a crash before the superblocks leaves no pool.
 */
int pmidx_pool_format(void *base, u64 size, bool force, const char **why)
{
	struct pmidx_pmem pm;
	struct pmidx_sb sb = {};
	unsigned int slot = PMIDX_SB_COPIES - 1;
	int ret;

	pmidx_format_static_checks();
	ret = pmem_init(&pm, base, size, false);
	if (ret)
		return ret;
	if (!force && pmidx_sb_present(&pm)) {
		*why = "device already holds a pmidx pool (use --force)";
		ret = -EEXIST;
		goto out;
	}
	ret = pmidx_sb_geometry(&sb, size);
	if (ret) {
		*why = "device too small for a pool";
		goto out;
	}
	/* Old superblocks go first so a torn format is never attachable. */
	pmidx_memset_persist(&pm, base, 0, PMIDX_SB_COPIES * PMIDX_SB_STRIDE);
	pmidx_index_table_format(&pm);
	pmidx_alloc_format(&pm, PMIDX_CHUNK_HDR_OFF, le32_to_cpu(sb.nr_chunks));

	sb.magic = cpu_to_le64(PMIDX_SB_MAGIC);
	sb.version = cpu_to_le32(PMIDX_FORMAT_VERSION);
	generate_random_uuid(sb.uuid);
	sb.format_time = cpu_to_le64(ktime_get_real_seconds());
	sb.clean = cpu_to_le32(1);
	pmidx_sb_write(&pm, &sb, &slot);
	pmidx_sb_write(&pm, &sb, &slot);
out:
	free_percpu(pm.stats);
	return ret;
}

/*
 * A committed-mode index needs its engine in that mode, the intents, and
 * no more CPUs than the intents cover. Before the attach's first write
 * (mark_in_use()): a refusal changes nothing on media.
 */
static int check_mode(struct pmidx_pool *pool, struct pmidx_index *idx,
		      const char **why)
{
	if (idx->ops &&
	    !!(idx->ops->flags & PMIDX_ENGINE_F_COMMITTED) != idx->committed) {
		pr_err("pmidx: index %s: made in %s mode, engine %s is in %s mode: re-create the index\n",
		       idx->name, idx->committed ? "committed" : "traced",
		       idx->ops->name, idx->committed ? "traced" : "committed");
		*why = "index mode differs from its engine's: re-create the index";
		return -EUCLEAN;
	}
	if (idx->committed && !pool->alloc.intents) {
		pr_err("pmidx: index %s: committed-mode index, but the pool has no intent chunk\n",
		       idx->name);
		*why = "committed-mode index without the allocator's intent records";
		return -EUCLEAN;
	}
	/* alloc.h, "Records in flight": no record may run out */
	if (idx->committed && idx->ops && !pmidx_txn_cpus_ok()) {
		pr_err("pmidx: index %s: committed mode serves at most %u CPUs (the pool's intent records), this kernel has %u\n",
		       idx->name, PMIDX_TXN_CPUS_MAX, nr_cpu_ids);
		*why = "committed-mode index on more CPUs than the intent records cover";
		return -EOPNOTSUPP;
	}
	return 0;
}

/*
 * Open every index's engine. During a trace (@rc->clean false) the
 * traced engines mark what they reference (rc.mark); the roots are
 * marked here. Committed engines mark only for the checker (@rc->trace).
 */
static int open_engines(struct pmidx_pool *pool, const struct pmidx_recover *rc,
			const char **why)
{
	struct pmidx_recover irc = *rc;
	unsigned int i;
	int ret;

	for (i = 0; i < PMIDX_MAX_INDEXES; i++) {
		struct pmidx_index *idx = pmidx_index_slot(pool, i);

		if (!idx)
			continue;
		if (!rc->clean) {
			pool->alloc.mark_committed = false;	/* roots are traced */
			ret = pmidx_alloc_mark(&pool->alloc, idx->root);
			if (ret) {
				pr_err("pmidx: index %u root %#llx is not an object\n",
				       i, idx->root);
				*why = "index root does not point to an allocated object";
				return ret;
			}
		}
		if (!idx->ops)
			continue;
		irc.mark = !rc->clean && (!idx->committed || rc->trace);
		pool->alloc.mark_committed = idx->committed;
		ret = idx->ops->open(idx, &irc);
		pool->alloc.mark_committed = false;
		if (ret) {
			pr_err("pmidx: index %s (%s): recovery failed: %d\n",
			       idx->name, idx->ops->name, ret);
			*why = "index engine recovery failed";
			return ret;
		}
		idx->opened = true;
	}
	return 0;
}

/*
 * A clean attach trusts the written-back allocator state, but every root
 * must still be a distinct live object: drop-index would otherwise free
 * a free slot or one object twice.
 */
static struct pmidx_index *any_slot(struct pmidx_pool *pool, u32 i)
{
	return pmidx_index_slot(pool, i) ?: pool->dropping[i];
}

static int check_roots(struct pmidx_pool *pool, const char **why)
{
	unsigned int i, j;

	for (i = 0; i < PMIDX_MAX_INDEXES; i++) {
		struct pmidx_index *idx = any_slot(pool, i);

		if (!idx)
			continue;
		if (pmidx_alloc_size(&pool->alloc, idx->root) < PMIDX_INDEX_ROOT_SIZE ||
		    !pmidx_alloc_valid(&pool->alloc, idx->root, PMIDX_INDEX_ROOT_SIZE))
			goto bad;
		for (j = 0; j < i; j++)
			if (any_slot(pool, j) && any_slot(pool, j)->root == idx->root)
				goto bad;
	}
	return 0;
bad:
	pr_warn("pmidx: index %u root %#llx is not an allocated object\n", i,
		any_slot(pool, i)->root);
	*why = "index root does not point to an allocated object";
	return -EUCLEAN;
}

/*
 * The first write of an attach: mark the pool in use before any engine
 * may allocate, so that a crash from here on makes the next attach trace
 * instead of trusting written-back bitmaps that miss new allocations.
 * Checks that can refuse the image all run before it.
 */
static void mark_in_use(struct pmidx_pool *pool)
{
	pool->sb.clean = 0;
	pool->sb.attach_count = cpu_to_le64(le64_to_cpu(pool->sb.attach_count) + 1);
	pmidx_sb_write(&pool->pm, &pool->sb, &pool->sb_slot);
}

/* Tests: check every crash recovery of committed-mode objects by a trace. */
bool pmidx_recovery_verify;

static int verify_end(struct pmidx_pool *pool, const char **why)
{
	u64 off;
	int bad = pmidx_alloc_verify_end(&pool->alloc, &off);

	if (!bad)
		return 0;
	pr_err("pmidx: recovery from allocator metadata differs from a trace in %d objects (first %#llx, %s)\n",
	       bad, off, pmidx_alloc_valid(&pool->alloc, off, 1) ?
	       "reachable, not recovered" : "recovered, not reachable");
	*why = "committed-mode recovery disagrees with a full trace";
	return -EUCLEAN;
}

static int pool_recover(struct pmidx_pool *pool, bool clean, const char **why)
{
	struct pmidx_recover rc = { .clean = clean, .threads = num_online_cpus() };
	u64 start = ktime_get_ns();
	unsigned int i;
	int ret;

	/*
	 * A committed drop this module cannot resume (no engine): nothing
	 * its later walk may read can be reused meanwhile (alloc.h, "A
	 * drop that waits for its engine"). Before either load.
	 */
	for (i = 0; i < PMIDX_MAX_INDEXES; i++) {
		struct pmidx_index *d = pool->dropping[i];
		char buf[128];

		if (!d || d->ops)
			continue;
		snprintf(buf, sizeof(buf),
			 "index %s's interrupted drop is resumed by a module with engine %s",
			 d->name, pmidx_engine_name(d->engine));
		pmidx_alloc_freeze_committed(&pool->alloc, buf);
		break;
	}

	if (clean) {
		ret = pmidx_alloc_load_clean(&pool->alloc, why);
		if (!ret)
			ret = check_roots(pool, why);
		if (!ret)
			goto open;
		if (ret != -EUCLEAN)
			return ret;
		/* Inconsistent written-back state: repair by tracing. */
		rc.clean = false;
	}
	ret = pmidx_alloc_trace_begin(&pool->alloc, why);
	if (ret)
		return ret;
	pool->flags |= PMIDX_POOL_F_RECOVERED;
open:
	for (i = 0; i < PMIDX_MAX_INDEXES; i++) {
		if (pmidx_index_slot(pool, i)) {
			ret = check_mode(pool, pmidx_index_slot(pool, i), why);
			if (ret)
				return ret;
		}
	}
	mark_in_use(pool);
	ret = pmidx_index_resume_drops(pool, rc.clean, why);
	if (!ret && !rc.clean && pmidx_recovery_verify) {
		ret = pmidx_alloc_verify_begin(&pool->alloc);
		rc.trace = !ret;
	}
	/* a clean attach: engines claim what they own (alloc.c, "Claims") */
	if (!ret && rc.clean)
		ret = pmidx_alloc_claim_begin(&pool->alloc);
	if (!ret)
		ret = open_engines(pool, &rc, why);
	pmidx_alloc_claim_end(&pool->alloc);
	if (!ret && rc.trace)
		ret = verify_end(pool, why);
	/*
	 * A failed attach ends no trace: trace_end would free, on media,
	 * the chunks of every index not marked yet.
	 */
	if (ret)
		return ret;
	if (!rc.clean) {
		pmidx_alloc_trace_end(&pool->alloc);
		pool->recovered_objects = atomic64_read(&pool->alloc.objects);
	}
	pool->recovery_ns = ktime_get_ns() - start;
	return 0;
}

static int enable_features(struct pmidx_pool *pool, u64 bits,
			   const char **why)
{
	u64 f = le64_to_cpu(pool->sb.feat_incompat);
	int ret;

	/* P3: never inside a crash attach's trace (allocations refused) */
	if (WARN_ON_ONCE(READ_ONCE(pool->alloc.tracing))) {
		*why = "intent records cannot be enabled during recovery";
		return -EINVAL;
	}
	if ((f & bits) != bits) {
		pool->sb.feat_incompat = cpu_to_le64(f | bits);
		pmidx_sb_write(&pool->pm, &pool->sb, &pool->sb_slot);
	}
	if (pool->alloc.intents)
		return 0;
	ret = pmidx_alloc_intents_enable(&pool->alloc);
	if (ret)
		*why = "no free chunk for the allocator's intent records";
	return ret;
}

/**
 * pmidx_pool_enable_intents - let committed-mode engines allocate
 *
 * Persistence order: the incompatible feature bit is durable in the
 * superblock before the intent chunk or any committed-mode chunk exists,
 * so a module without them refuses the pool instead of misreading it.
 * Context: pool->lock held, the allocator not tracing (never from an
 * engine's open(): index creation does it, pmidx_pool_enable_committed()).
 */
int pmidx_pool_enable_intents(struct pmidx_pool *pool, const char **why)
{
	return enable_features(pool, PMIDX_FEAT_INCOMPAT_INTENTS, why);
}

/**
 * pmidx_pool_enable_committed - before a committed-mode index is made
 *
 * pmidx_pool_enable_intents(), plus FEAT_INCOMPAT_COMMITTED_IDX in the
 * same superblock write: durable before the index's entry exists.
 * Context: as pmidx_pool_enable_intents().
 */
int pmidx_pool_enable_committed(struct pmidx_pool *pool, const char **why)
{
	return enable_features(pool, PMIDX_FEAT_INCOMPAT_INTENTS |
			       PMIDX_FEAT_INCOMPAT_COMMITTED_IDX, why);
}

static void pool_free_object(void *ctx, u64 off)
{
	struct pmidx_pool *pool = ctx;

	pmidx_free(&pool->alloc, off);
}

/**
 * pmidx_pool_open - attach the pool mapped at @base
 * @size: bytes mapped (the device size)
 * @eadr: elide cache-line flushes (persistence domain includes caches)
 *
 * Return: the pool, or an ERR_PTR with *why set.
 */
struct pmidx_pool *pmidx_pool_open(void *base, u64 size, bool eadr,
				   const char **why)
{
	struct pmidx_pool *pool;
	bool clean;
	int ret;

	pool = kzalloc(sizeof(*pool), GFP_KERNEL);
	if (!pool)
		return ERR_PTR(-ENOMEM);
	mutex_init(&pool->lock);
	mutex_init(&pool->drop_lock);
	ret = pmem_init(&pool->pm, base, size, eadr);
	if (ret)
		goto err_free;
	ret = pmidx_dispatch_init(pool);
	if (ret)
		goto err_pmem;
	if (eadr)
		pool->flags |= PMIDX_POOL_F_EADR;

	ret = pmidx_sb_read(&pool->pm, &pool->sb, &pool->sb_slot, why);
	if (ret)
		goto err_pmem;
	ret = pmidx_alloc_init(&pool->alloc, &pool->pm,
			       le64_to_cpu(pool->sb.chunk_hdr_off),
			       le64_to_cpu(pool->sb.data_off),
			       le32_to_cpu(pool->sb.nr_chunks));
	if (ret)
		goto err_pmem;
	ret = pmidx_epoch_init(&pool->epoch, pool_free_object, pool);
	if (ret)
		goto err_alloc;
	pool->itable = pmidx_ptr(&pool->pm, le64_to_cpu(pool->sb.index_table_off));
	ret = pmidx_index_table_load(pool, why);
	if (ret)
		goto err_epoch;

	clean = le32_to_cpu(pool->sb.clean) == 1;
	ret = pool_recover(pool, clean, why);
	if (ret)
		goto err_indexes;
	return pool;

err_indexes:
	pmidx_index_table_unload(pool, false);
err_epoch:
	pmidx_epoch_destroy(&pool->epoch);
err_alloc:
	pmidx_alloc_destroy(&pool->alloc);
err_pmem:
	pmidx_dispatch_exit(pool);
	free_percpu(pool->pm.stats);
err_free:
	kfree(pool);
	return ERR_PTR(ret);
}

/**
 * pmidx_pool_close - detach: write back allocator state, mark clean, free
 *
 * Context: no index of the pool is in use.
 */
void pmidx_pool_close(struct pmidx_pool *pool)
{
	bool clean;

	mutex_lock(&pool->lock);
	pmidx_index_table_unload(pool, !pool->needs_trace);
	/* an abandoned retiree must be found by the next attach's trace */
	clean = !pool->needs_trace && !atomic_long_read(&pool->epoch.abandoned);
	pmidx_epoch_destroy(&pool->epoch);
	if (clean) {
		pmidx_alloc_writeback(&pool->alloc);
		pool->sb.clean = cpu_to_le32(1);
		pmidx_sb_write(&pool->pm, &pool->sb, &pool->sb_slot);
	}
	mutex_unlock(&pool->lock);
	pmidx_alloc_destroy(&pool->alloc);
	pmidx_dispatch_exit(pool);
	free_percpu(pool->pm.stats);
	kfree(pool);
}

void pmidx_pool_stats(struct pmidx_pool *pool, struct pmidx_stats *s)
{
	struct pmidx_alloc_stats as;
	struct pmidx_pmem_stats ps;

	pmidx_alloc_get_stats(&pool->alloc, &as);
	pmidx_pmem_sum_stats(&pool->pm, &ps);
	pmidx_stat_set(s, PMIDX_STAT_ALLOC_USED_BYTES, as.used_bytes);
	pmidx_stat_set(s, PMIDX_STAT_ALLOC_OBJECTS, as.objects);
	pmidx_stat_set(s, PMIDX_STAT_ALLOC_FREE_CHUNKS, as.free_chunks);
	pmidx_stat_set(s, PMIDX_STAT_ALLOC_TOTAL_CHUNKS, as.total_chunks);
	pmidx_stat_set(s, PMIDX_STAT_CHUNK_SIZE, PMIDX_CHUNK_SIZE);
	pmidx_stat_set(s, PMIDX_STAT_RECOVERY_NS, pool->recovery_ns);
	pmidx_stat_set(s, PMIDX_STAT_RECOVERED_OBJECTS, pool->recovered_objects);
	pmidx_stat_set(s, PMIDX_STAT_FLUSHES, ps.flushes);
	pmidx_stat_set(s, PMIDX_STAT_FENCES, ps.fences);
	pmidx_stat_set(s, PMIDX_STAT_MEDIA_ERRORS, pmidx_media_errors(&pool->pm));
	pmidx_stat_set(s, PMIDX_STAT_PM_BYTES, le64_to_cpu(pool->sb.size));
	pmidx_stat_set(s, PMIDX_STAT_DRAM_BYTES, sizeof(*pool) +
		       (u64)pool->alloc.nr_chunks * sizeof(struct pmidx_chunk));
}

/* Index figures; the engine adds its own (and may override these). */
void pmidx_index_stats(struct pmidx_index *idx, struct pmidx_stats *s)
{
	pmidx_stat_set(s, PMIDX_STAT_PM_BYTES, PMIDX_INDEX_ROOT_SIZE);
	pmidx_stat_set(s, PMIDX_STAT_DRAM_BYTES, sizeof(*idx));
	if (idx->opened && idx->ops->stats)
		idx->ops->stats(idx, s);
}
