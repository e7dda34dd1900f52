// SPDX-License-Identifier: GPL-2.0
/*
 * Partitioned version log (§III-D, Fig. 10). Each CPU appends to the
 * current log of its partition; a log is a fixed-size object with one
 * version, and a full one is sealed and replaced by a new log with the
 * next version. Each log counts its valid records: the buffer slots that
 * hold one of its records (plus one while it is current). A flush or a
 * newer write of the key drops the count; at zero the log is freed (see
 * lodge.h, "Lifetime"), in any order: recovery decides what a record is
 * worth from the leaves' ts, not from the order of the logs.
 *
 * Versions come from @next_ver, bounded by the root's vhwm, which is
 * raised (persisted) before a version above it is used: a version is
 * never handed out twice, even across crashes, so a record left over in
 * a reused object never carries the version of the log now there.
 *
 * A record larger than a standard log gets a log of its own, sized to
 * fit (a 64 KiB value): still one version, one count.
 */
#include <linux/crc32c.h>
#include <linux/errno.h>
#include <linux/slab.h>
#include "core/pmem.h"
#include "lodge.h"

/* A free directory slot, a version and the object; @log_lock held. */
static struct lodge_vlog *log_new(struct lodge *t, u32 size, u32 part)
{
	struct lodge_vlog *v;
	struct lodge_log *l;
	u64 off, hwm;
	u32 slot;

	lockdep_assert_held(&t->log_lock);
	slot = find_first_zero_bit(t->dir_map, LODGE_DIR_SLOTS);
	if (slot >= LODGE_DIR_SLOTS)
		return ERR_PTR(-ENOSPC);
	v = kzalloc(sizeof(*v), GFP_ATOMIC | __GFP_NOWARN);
	if (!v)
		swap(v, t->spare_log);
	if (!v)
		return ERR_PTR(-ENOMEM);
	off = pmidx_alloc(&t->pool->alloc, size);
	if (!off) {
		kfree(v);
		return ERR_PTR(-ENOSPC);
	}
	hwm = le64_to_cpu(t->root->vhwm);
	if (t->next_ver > hwm)
		pmidx_store64_persist(t->pm, &t->root->vhwm,
				      t->next_ver + LODGE_VER_STEP);
	v->off = off;
	v->version = t->next_ver++;
	v->size = size;
	v->used = LODGE_LOG_HDR;
	v->slot = slot;
	atomic_set(&v->valid, 1);
	l = pmidx_ptr(t->pm, off);
	l->magic = cpu_to_le64(LODGE_LOG_MAGIC);
	l->version = cpu_to_le64(v->version);
	l->size = cpu_to_le32(size);
	l->part = cpu_to_le32(part);
	memset(l->reserved, 0, sizeof(l->reserved));
	pmidx_persist(t->pm, l, LODGE_LOG_HDR);
	/* named only once its header is durable */
	pmidx_store64_persist(t->pm, &t->dir->slot[slot], off);
	set_bit(slot, t->dir_map);
	list_add_tail(&v->node, &t->logs);
	/* read unlocked (READ_ONCE) by writers deciding to drain */
	WRITE_ONCE(t->nlogs, t->nlogs + 1);
	atomic64_add(size, &t->log_bytes_live);
	return v;
}

/*
 * lodge_log_put - drop one reference to a log; the last one frees it
 *
 * Context: any lock of the order above @log_lock; does not sleep.
 */
void lodge_log_put(struct lodge *t, struct lodge_vlog *v)
{
	if (!atomic_dec_and_test(&v->valid))
		return;
	spin_lock(&t->log_lock);
	lodge_stat_inc(t, log_frees);
	if (t->logs.next != &v->node)
		lodge_stat_inc(t, log_frees_ooo);
	/* unnamed on media first: recovery must not read a freed object */
	pmidx_store64_persist(t->pm, &t->dir->slot[v->slot], 0);
	clear_bit(v->slot, t->dir_map);
	list_del(&v->node);
	WRITE_ONCE(t->nlogs, t->nlogs - 1);
	atomic64_sub(v->size, &t->log_bytes_live);
	spin_unlock(&t->log_lock);
	/*
	 * Poison stays in the media when the object is written again (only
	 * the driver's clear-error path removes it), so a log that answered
	 * a media error is left unnamed and unfreed: a traced attach (after
	 * a crash) finds it unreachable and frees it.
	 */
	if (!READ_ONCE(v->bad))
		pmidx_free(&t->pool->alloc, v->off);
	kfree(v);
}

/**
 * lodge_log_reserve - make a new log's DRAM side ready for log_new()
 *
 * Context: may sleep (a blocking write whose append answered -ENOMEM).
 * Return: 0 or -ENOMEM.
 */
int lodge_log_reserve(struct lodge *t)
{
	struct lodge_vlog *v = kzalloc(sizeof(*v), GFP_KERNEL);

	if (!v)
		return -ENOMEM;
	spin_lock(&t->log_lock);
	swap(v, t->spare_log);
	spin_unlock(&t->log_lock);
	kfree(v);	/* NULL, or the spare already there */
	return 0;
}

/*
 * lodge_log_append - append one record to this CPU's partition
 * @vl, @rec, @seq: out: the log holding the record (one reference taken
 *            for the buffer slot that will hold it), the record's offset
 *            and its sequence
 *
 * The record is durable on return. Its sequence is the next of @seq:
 * the caller holds the lock of the node the key belongs to.
 *
 * Return: 0, -ENOMEM or -ENOSPC (nothing appended).
 */
int lodge_log_append(struct lodge *t, u8 flags, const u8 *k, u32 klen,
		     const u8 *val, u32 vlen, struct lodge_vlog **vl, u64 *rec,
		     u64 *seqp)
{
	struct lodge_part *p;
	struct lodge_vlog *v, *old = NULL;
	struct lodge_rec *r, hdr = {};
	u32 size = lodge_rec_size(klen, vlen), crc;
	u64 seq;

	lockdep_assert_preemption_disabled();
	p = this_cpu_ptr(t->parts);
	spin_lock(&p->lock);
	v = p->cur;
	/* a bad log takes no more records: they could share the poison */
	if (!v || v->used + size > v->size || READ_ONCE(v->bad)) {
		u32 lsz = max_t(u32, t->log_size, LODGE_LOG_HDR + size);

		spin_lock(&t->log_lock);
		v = log_new(t, lsz, smp_processor_id());
		spin_unlock(&t->log_lock);
		if (IS_ERR(v)) {
			spin_unlock(&p->lock);
			return PTR_ERR(v);
		}
		old = p->cur;
		p->cur = v;
	}
	seq = atomic64_inc_return(&t->seq);
	r = pmidx_ptr(t->pm, v->off + v->used);
	hdr.seqfl = cpu_to_le64(seq | (u64)flags << LODGE_R_FLAGS_SHIFT);
	hdr.version = cpu_to_le64(v->version);
	hdr.vlen = cpu_to_le32(vlen);
	hdr.klen = klen;
	crc = crc32c(~0U, &hdr, sizeof(hdr));
	crc = crc32c(crc, k, klen);
	/* a delete has no value (@val may be NULL: no mem* call with it) */
	if (vlen)
		crc = crc32c(crc, val, vlen);
	hdr.crc = cpu_to_le32(crc);
	memcpy(r->data, k, klen);
	if (vlen)
		memcpy(r->data + klen, val, vlen);
	memcpy(r, &hdr, sizeof(hdr));
	pmidx_persist(t->pm, r, size);
	*rec = v->off + v->used;
	*seqp = seq;
	v->used += size;
	atomic_inc(&v->valid);
	*vl = v;
	spin_unlock(&p->lock);
	lodge_stat_add(t, log_bytes, size);
	/* the sealed log keeps only its buffered records' references */
	if (old)
		lodge_log_put(t, old);
	return 0;
}

/* The key of a buffered record, read in place (the record is pinned). */
const u8 *lodge_rec_key(struct lodge *t, u64 rec, u32 *klen)
{
	struct lodge_rec *r = pmidx_ptr(t->pm, rec);

	*klen = r->klen;
	return r->data;
}

/*
 * Copy a buffered value (over 8 bytes) out of its record, machine-check
 * safe; where it lies comes from DRAM (@b), nothing of the record is
 * loaded in place. A media error marks the log (@v, pinned by @b's
 * reference) bad: its object is not reused while attached.
 * Return: 0 or -EIO for this record alone.
 */
int lodge_rec_value(struct lodge *t, const struct lodge_slot *b,
		    struct lodge_vlog *v, u8 *dst)
{
	int ret = pmidx_read_data(t->pm, dst, pmidx_ptr(t->pm, b->rec +
				  sizeof(struct lodge_rec) + b->key->len),
				  b->vlen);

	if (ret && v)
		WRITE_ONCE(v->bad, true);
	return ret;
}

/*
 * The version below which a drain flushes: the version of the log
 * @skip places after the oldest live one (0: none).
 */
u64 lodge_log_cut(struct lodge *t, u32 skip)
{
	struct lodge_vlog *v;
	u64 cut = 0;

	spin_lock(&t->log_lock);
	list_for_each_entry(v, &t->logs, node) {
		cut = v->version;
		if (!skip--)
			break;
	}
	spin_unlock(&t->log_lock);
	return cut;
}

/* Close: the partitions give up their current logs (empty ones go). */
void lodge_log_seal_all(struct lodge *t)
{
	int cpu;

	for_each_possible_cpu(cpu) {
		struct lodge_part *p = per_cpu_ptr(t->parts, cpu);

		if (p->cur)
			lodge_log_put(t, p->cur);
		p->cur = NULL;
	}
}

/*
 * Drop every log's DRAM state; with @free (drop-index) the objects too.
 * No buffer slot may be used afterwards.
 */
void lodge_log_free_all(struct lodge *t, bool free)
{
	struct lodge_vlog *v, *n;
	int cpu;

	/* an open that failed may not have the partitions */
	for_each_possible_cpu(cpu)
		if (t->parts)
			per_cpu_ptr(t->parts, cpu)->cur = NULL;
	list_for_each_entry_safe(v, n, &t->logs, node) {
		if (free)
			pmidx_free(&t->pool->alloc, v->off);
		list_del(&v->node);
		kfree(v);
	}
	t->nlogs = 0;
}
