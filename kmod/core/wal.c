// SPDX-License-Identifier: GPL-2.0
/*
 * Per-CPU write-ahead log in chunks.
 *
 * Layout. The directory is one allocator object: a header and an array
 * of 8-byte slot words, each a chunk offset ORed with a state (wal.h).
 * Chunks are allocator objects (chunk_size, or 256 KiB when the pool is
 * short of space) holding back-to-back 32-byte entries from offset 0.
 * Every chunk the log holds, in use or free, is in the directory, so
 * recovery marks them all and nothing leaks.
 *
 * Entries. 32 bytes at 32-byte offsets, so an entry lies in one cache
 * line: w0, w1, check, then meta = ts (48 bits) | flags (4) | gen (12),
 * stored last with a compiler barrier before it. An entry is written and
 * persisted (flush + fence) before the append returns, under its CPU's
 * lock, so within a chunk the entries persist in order.
 *
 * Generations. A chunk is reused (free list) without being zeroed, so it
 * holds stale entries of its earlier uses, each a perfectly valid entry;
 * the end of the log must be told apart from them. Each use of a chunk
 * has a generation, 1..4095, persisted in the chunk's directory slot
 * before the use's first append, and every entry carries it in meta. An
 * entry belongs to the log iff its generation is the chunk's; replay
 * stops at the first slot whose meta is zero or of another generation.
 * A chunk is "clean" when no slot holds an entry of its current
 * generation other than the current use's appends: a clean chunk needs
 * nothing more, and an append persists its own line only.
 *
 * Torn entries. Under ADR a dirty line may be written back at any time
 * (eviction), holding some prefix of its stores in program order; 8-byte
 * stores are never torn. So an entry's meta word is its generation's on
 * media only if the store of meta reached media, and then so did w0, w1
 * and check, stored before it in the same line; a torn entry keeps the
 * old meta (zero or an older generation): the end of the log. The check
 * (a 64-bit hash of w0, w1 and meta) is not needed for that; it catches
 * corruption: an entry of the current generation whose check or
 * timestamp is wrong, or a valid entry right after the end where none
 * can be, makes replay refuse the log (-EUCLEAN) rather than drop what
 * follows. In a clean chunk none can be anywhere after the end (appends
 * are sequential: the slot after a torn one was never written). In a
 * chunk that zeroes ahead, an append into the first slot of a line may
 * land before the zeroing of the next line does, so the slot two after
 * the end may hold anything when the end is the second slot of a line;
 * when it is the first, the line was zeroed by an append that returned.
 *
 * Keeping chunks clean. A new chunk (whatever the allocator hands out) is
 * not clean, nor is a chunk whose generation wraps to 1; their use marks
 * its end by zero-ahead: the use starts with its first two slots durably
 * zero, an append into the first slot of a line also zeroes the next
 * line in the same persist, one into the second slot persists its own
 * line only; so the slot after the last durable entry is always durably
 * zero (or the one after that while an append is in flight) and replay
 * stops there before reaching whatever lies beyond. When such a chunk is
 * recycled (process context) its tail from the end of the log on is
 * zeroed and it becomes clean: it then holds only zeros and entries of
 * one generation, and the next 4094 uses take new ones. A clean append
 * writes back one line; zero-ahead cost 1.5, and did so for every use.
 *
 * Chunk states. A chunk becomes SIDEn (persisted, with its generation and
 * clean bit) before its first append; recycling a side sets its chunks
 * FREE (never replayed), clean. Handing a free chunk back to the
 * allocator clears the slot (persisted) before the free, so a slot never
 * names an object that could belong to someone else.
 *
 * Appends stay on one CPU: get_cpu() picks the CPU's log and its lock
 * orders appends there (the lock is uncontended unless a task on that CPU
 * was preempted mid-append, which cannot happen as preemption is off).
 *
 * Held objects (wal.h, "Lifetime rule"). pmidx_wal_retire() files an
 * object in the newest block of @held whose recycle counts equal the
 * current ones (else in a new block: one of @held_spare, made ahead
 * where sleeping is allowed, so that a shortage of atomic memory does not
 * abandon objects); a recycle of side s bumps
 * recycled[s] once its chunks are durably FREE, then releases every block
 * both of whose counts are now behind. An entry naming the object was
 * appended before the retire, so it lies in a side that was not being
 * recycled then (the caller of pmidx_wal_recycle() keeps appends off the
 * side it recycles); the next completed recycle of each side removes it.
 *
 * Locking: a CPU's lock, then wal->lock; held_lock is innermost. Appends
 * and retires never sleep (they run inside engines' epoch sections);
 * recycle and reserve run in process context (the GC kthread) and may
 * sleep between chunks.
 */
#include <linux/bitmap.h>
#include <linux/err.h>
#include <linux/errno.h>
#include <linux/minmax.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/smp.h>
#include <linux/workqueue.h>
#include "parallel.h"
#include "wal.h"

#define REPLAY_BLOCK		(PMIDX_WAL_ENT_SIZE * 128)
#define RELEASE_ZERO_STEP	(256U << 10)

/* A 64-bit mix of the entry (never 0, so a zeroed entry fails it too). */
static u64 ent_check(u64 w0, u64 w1, u64 meta)
{
	u64 h = w0 * 0x9e3779b97f4a7c15ULL;

	h ^= (w1 + 0x632be59bd9b4e019ULL) * 0xc2b2ae3d27d4eb4fULL;
	h ^= h >> 29;
	h ^= meta * 0x165667b19e3779f9ULL;
	h *= 0xbf58476d1ce4e5b9ULL;
	h ^= h >> 32;
	h *= 0x94d049bb133111ebULL;
	h ^= h >> 29;
	return h | 1;
}

static u64 ent_meta(u64 ts, u8 flags, u16 gen)
{
	return ts | (u64)(flags & 0xf) << PMIDX_WAL_FLAGS_SHIFT |
	       (u64)gen << PMIDX_WAL_GEN_SHIFT;
}

/**
 * pmidx_wal_ent_encode - write an entry of generation @gen at @e
 *
 * The commit order of an append: w0, w1 and check, then meta. Persisting
 * is the caller's. Exported for the fuzzers, which forge valid entries.
 */
void pmidx_wal_ent_encode(struct pmidx_wal_ent *e, u64 w0, u64 w1, u64 ts,
			  u8 flags, u16 gen)
{
	u64 meta = ent_meta(ts, flags, gen);

	e->w0 = cpu_to_le64(w0);
	e->w1 = cpu_to_le64(w1);
	e->check = cpu_to_le64(ent_check(w0, w1, meta));
	/* meta is the commit: stored after the rest of the entry */
	barrier();
	WRITE_ONCE(e->meta, cpu_to_le64(meta));
}

/*
 * Decode the entry at @e of a chunk in generation @gen. Return: 1 valid,
 * 0 not of this use (zero, an earlier use's, or an append that did not
 * complete: the end of the log), -EUCLEAN corrupt.
 */
static int ent_decode(const struct pmidx_wal_ent *e, u16 gen,
		      struct pmidx_wal_rec *r)
{
	u64 meta = le64_to_cpu(e->meta);

	if (!meta || meta >> PMIDX_WAL_GEN_SHIFT != gen)
		return 0;
	r->w0 = le64_to_cpu(e->w0);
	r->w1 = le64_to_cpu(e->w1);
	r->ts = meta & PMIDX_WAL_TS_MAX;
	r->flags = (meta >> PMIDX_WAL_FLAGS_SHIFT) & 0xf;
	if (!r->ts || le64_to_cpu(e->check) != ent_check(r->w0, r->w1, meta))
		return -EUCLEAN;
	return 1;
}

static u64 slot_word(const struct pmidx_wal_chunk *c, u64 state)
{
	return (u64)c->gen << PMIDX_WAL_GEN_SHIFT | c->off |
	       (c->clean ? PMIDX_WAL_SLOT_CLEAN : 0) | state;
}

static void slot_set(struct pmidx_wal *w, u32 slot, u64 word)
{
	pmidx_store64_persist(&w->pool->pm, &w->dir->slot[slot], word);
}

/**
 * pmidx_wal_format - allocate and persist an empty log directory
 *
 * Return: its pool offset (to be linked from the caller's root), 0 when
 * the pool is full.
 */
u64 pmidx_wal_format(struct pmidx_pool *pool)
{
	struct pmidx_wal_dir *d;
	u64 off;

	off = pmidx_alloc(&pool->alloc, PMIDX_WAL_DIR_SIZE);
	if (!off)
		return 0;
	d = pmidx_ptr(&pool->pm, off);
	memset(d, 0, PMIDX_WAL_DIR_SIZE);
	d->magic = cpu_to_le64(PMIDX_WAL_DIR_MAGIC);
	d->nslots = cpu_to_le32(PMIDX_WAL_NSLOTS);
	d->version = cpu_to_le32(PMIDX_WAL_VERSION);
	pmidx_persist(&pool->pm, d, PMIDX_WAL_DIR_SIZE);
	return off;
}

/*
 * Start a new use of @c: the next generation, and for a chunk that is
 * not clean (or whose generation wraps) the first two slots zeroed for
 * zero-ahead. The caller then persists the slot word.
 */
static void chunk_prepare(struct pmidx_wal *w, struct pmidx_wal_chunk *c)
{
	c->gen = c->gen % PMIDX_WAL_GEN_MAX + 1;
	if (c->gen == 1)
		c->clean = false;
	if (!c->clean)
		pmidx_memset_persist(&w->pool->pm,
				     pmidx_ptr(&w->pool->pm, c->off), 0,
				     2 * PMIDX_WAL_ENT_SIZE);
}

/*
 * A new chunk with a directory slot in state @state.
 * Return: the chunk, ERR_PTR(-ENOMEM) (its DRAM side: atomic unless
 * @can_sleep) or ERR_PTR(-ENOSPC) (the pool, or the directory, is full).
 */
static struct pmidx_wal_chunk *chunk_new(struct pmidx_wal *w, u64 state,
					 bool can_sleep)
{
	gfp_t gfp = can_sleep ? GFP_KERNEL : GFP_ATOMIC | __GFP_NOWARN;
	struct pmidx_alloc *a = &w->pool->alloc;
	struct pmidx_wal_chunk *c;
	unsigned long slot;
	u64 off;

	c = kzalloc(sizeof(*c), gfp);
	if (!c)
		return ERR_PTR(-ENOMEM);
	off = pmidx_alloc(a, w->chunk_size);
	if (!off && w->chunk_size > PMIDX_WAL_MIN_CHUNK)
		off = pmidx_alloc(a, PMIDX_WAL_MIN_CHUNK);
	if (!off)
		goto err_free;
	if (WARN_ON_ONCE(off & ~PMIDX_WAL_SLOT_OFF)) {
		pmidx_free(a, off);
		goto err_free;
	}
	c->off = off;
	c->size = min_t(size_t, pmidx_alloc_size(a, off), U32_MAX & ~0xffU);
	c->size -= c->size % PMIDX_WAL_ENT_SIZE;
	/* a free chunk keeps generation 0 until it is taken */
	if (state != PMIDX_WAL_SLOT_FREE)
		chunk_prepare(w, c);

	spin_lock(&w->lock);
	slot = find_first_zero_bit(w->slot_map, w->nslots);
	if (slot >= w->nslots) {
		spin_unlock(&w->lock);
		pmidx_free(a, off);
		goto err_free;
	}
	__set_bit(slot, w->slot_map);
	c->slot = slot;
	slot_set(w, slot, slot_word(c, state));
	spin_unlock(&w->lock);
	atomic64_add(c->size, &w->chunk_bytes);
	return c;

err_free:
	kfree(c);
	return ERR_PTR(-ENOSPC);
}

/* Take a chunk for @side: a free one if any, else a new one (chunk_new()). */
static struct pmidx_wal_chunk *chunk_get(struct pmidx_wal *w,
					 unsigned int side)
{
	u64 state = PMIDX_WAL_SLOT_SIDE0 + side;
	struct pmidx_wal_chunk *c;

	spin_lock(&w->lock);
	c = list_first_entry_or_null(&w->free, struct pmidx_wal_chunk, node);
	if (c) {
		list_del(&c->node);
		w->nfree--;
		chunk_prepare(w, c);
		slot_set(w, c->slot, slot_word(c, state));
		list_add_tail(&c->node, &w->used[side]);
		spin_unlock(&w->lock);
		return c;
	}
	spin_unlock(&w->lock);

	c = chunk_new(w, state, false);
	if (IS_ERR(c))
		return c;
	spin_lock(&w->lock);
	list_add_tail(&c->node, &w->used[side]);
	spin_unlock(&w->lock);
	return c;
}

/**
 * pmidx_wal_append - append one entry to this CPU's log of @side
 * @ts: timestamp, 1..PMIDX_WAL_TS_MAX
 * @flags: 4 bits for the engine
 *
 * The entry is persistent when this returns 0.
 *
 * Context: any; does not sleep.
 * Return: 0; -ENOSPC when the pool has no room for a new chunk; -ENOMEM
 * when its DRAM side could not be had atomically (pmidx_wal_reserve()
 * sleeps to make one ready); -EOVERFLOW when @ts does not fit the entry.
 */
int pmidx_wal_append(struct pmidx_wal *w, unsigned int side, u64 w0, u64 w1,
		     u64 ts, u8 flags)
{
	struct pmidx_wal_chunk *c;
	struct pmidx_wal_cpu *pc;
	struct pmidx_wal_ent *e;
	int ret = 0;

	/* zero-ahead works in whole lines of whole entries */
	BUILD_BUG_ON(PMIDX_LINE_SIZE % PMIDX_WAL_ENT_SIZE);
	if (WARN_ON_ONCE(!ts || side > 1))
		return -EINVAL;
	if (ts > PMIDX_WAL_TS_MAX)
		return -EOVERFLOW;
	pc = per_cpu_ptr(w->pcpu, get_cpu());
	spin_lock(&pc->lock);
	c = pc->cur[side];
	if (!c || c->used + PMIDX_WAL_ENT_SIZE > c->size) {
		c = chunk_get(w, side);
		if (IS_ERR(c)) {
			pc->cur[side] = NULL;
			ret = PTR_ERR(c);
			goto out;
		}
		pc->cur[side] = c;
	}
	e = pmidx_ptr(&w->pool->pm, c->off + c->used);
	pmidx_wal_ent_encode(e, w0, w1, ts, flags, c->gen);
	if (!c->clean && IS_ALIGNED(c->off + c->used, PMIDX_LINE_SIZE) &&
	    c->used + 2 * PMIDX_LINE_SIZE <= c->size) {
		/* zero-ahead: the next line, persisted with entry i */
		memset((void *)e + PMIDX_LINE_SIZE, 0, PMIDX_LINE_SIZE);
		pmidx_persist(&w->pool->pm, e, 2 * PMIDX_LINE_SIZE);
	} else {
		pmidx_persist(&w->pool->pm, e, sizeof(*e));
	}
	WRITE_ONCE(c->used, c->used + PMIDX_WAL_ENT_SIZE);
	percpu_counter_add_batch(&w->used_bytes, PMIDX_WAL_ENT_SIZE,
				 PMIDX_WAL_COUNT_BATCH);
	if (unlikely(!READ_ONCE(w->written)))
		WRITE_ONCE(w->written, true);
out:
	spin_unlock(&pc->lock);
	put_cpu();
	return ret;
}

/*
 * Return a recycled chunk to the free list, or to the allocator. A chunk
 * kept that is not clean has its tail zeroed first (its entries end at
 * @c->used; zero-ahead kept garbage out of reach only until then). One
 * in generation 0 (a format 2 chunk) is kept as it is: its next use is
 * generation 1, which zeroes ahead whatever the clean bit says, and a
 * clean bit in generation 0 is corrupt to pmidx_wal_open().
 */
static void chunk_release(struct pmidx_wal *w, struct pmidx_wal_chunk *c)
{
	bool keep;

	spin_lock(&w->lock);
	keep = w->nfree < w->max_free;
	spin_unlock(&w->lock);
	if (keep && !c->clean && c->gen) {
		u32 pos, n;

		for (pos = c->used; pos < c->size; pos += n) {
			n = min_t(u32, c->size - pos, RELEASE_ZERO_STEP);
			pmidx_memset_persist(&w->pool->pm,
					     pmidx_ptr(&w->pool->pm, c->off + pos),
					     0, n);
			cond_resched();
		}
		c->clean = true;
	}
	c->used = 0;
	spin_lock(&w->lock);
	/* a release racing with this one may take the list past max_free */
	if (keep) {
		slot_set(w, c->slot, slot_word(c, PMIDX_WAL_SLOT_FREE));
		list_add_tail(&c->node, &w->free);
		w->nfree++;
		spin_unlock(&w->lock);
		return;
	}
	slot_set(w, c->slot, 0);
	__clear_bit(c->slot, w->slot_map);
	spin_unlock(&w->lock);
	pmidx_free(&w->pool->alloc, c->off);
	atomic64_sub(c->size, &w->chunk_bytes);
	kfree(c);
}

/* Keep @b as a spare if fewer than PMIDX_WAL_HELD_SPARES are; else free it. */
static void held_spare_put(struct pmidx_wal *w, struct pmidx_wal_held *b)
{
	spin_lock(&w->held_lock);
	if (w->nspare < PMIDX_WAL_HELD_SPARES) {
		list_add(&b->node, &w->held_spare);
		WRITE_ONCE(w->nspare, w->nspare + 1);
		b = NULL;
	}
	spin_unlock(&w->held_lock);
	kfree(b);
}

/**
 * pmidx_wal_prepare - make the blocks that retires take ready
 *
 * Fills @held_spare up to PMIDX_WAL_HELD_SPARES blocks, so that
 * pmidx_wal_retire() needs no memory for that many blocks' worth: for an
 * engine about to retire many objects in one section (a walk that
 * flushes nodes), and for open, recycle and the worker.
 *
 * Context: process context, outside epoch sections; may sleep.
 * Return: 0 or -ENOMEM (the retire then allocates atomically).
 */
int pmidx_wal_prepare(struct pmidx_wal *w)
{
	struct pmidx_wal_held *b;

	while (READ_ONCE(w->nspare) < PMIDX_WAL_HELD_SPARES) {
		b = kmalloc(sizeof(*b), GFP_KERNEL);
		if (!b)
			return -ENOMEM;
		held_spare_put(w, b);
	}
	return 0;
}

static void held_spare_work(struct work_struct *work)
{
	pmidx_wal_prepare(container_of(work, struct pmidx_wal, held_work));
}

/* The block a retire files in now, or NULL. Context: @held_lock held. */
static struct pmidx_wal_held *held_newest(struct pmidx_wal *w)
{
	struct pmidx_wal_held *b;

	if (list_empty(&w->held))
		return NULL;
	b = list_last_entry(&w->held, struct pmidx_wal_held, node);
	if (b->n < PMIDX_WAL_HELD_BLOCK &&
	    b->recycled[0] == w->recycled[0] &&
	    b->recycled[1] == w->recycled[1])
		return b;
	return NULL;
}

/* Move the held blocks whose counts are both behind onto @out. */
static void held_take_released(struct pmidx_wal *w, struct list_head *out)
{
	struct pmidx_wal_held *b, *tmp;

	lockdep_assert_held(&w->held_lock);
	list_for_each_entry_safe(b, tmp, &w->held, node) {
		/* counts only grow and blocks are in order: stop at the first */
		if (b->recycled[0] >= w->recycled[0] ||
		    b->recycled[1] >= w->recycled[1])
			break;
		list_move_tail(&b->node, out);
	}
}

static void held_release(struct pmidx_wal *w, struct list_head *list)
{
	struct pmidx_alloc *a = &w->pool->alloc;
	struct pmidx_wal_held *b, *tmp;
	u32 i;

	list_for_each_entry_safe(b, tmp, list, node) {
		for (i = 0; i < b->n; i++) {
			atomic64_sub(pmidx_alloc_size(a, b->off[i]), &w->held_bytes);
			w->release(w->release_ctx, b->off[i]);
		}
		list_del(&b->node);
		held_spare_put(w, b);
		cond_resched();
	}
}

/**
 * pmidx_wal_recycle - drop every chunk of @side and reuse them
 *
 * The caller guarantees that nothing in @side is needed any more and that
 * no append to @side runs or will run until the side is reused (appends
 * to the other side go on meanwhile). Objects held by pmidx_wal_retire()
 * that no entry can name any more are released.
 *
 * Context: process context; sleeps.
 */
void pmidx_wal_recycle(struct pmidx_wal *w, unsigned int side)
{
	struct pmidx_wal_chunk *c, *tmp;
	LIST_HEAD(list);
	LIST_HEAD(released);
	int cpu;

	for_each_possible_cpu(cpu) {
		struct pmidx_wal_cpu *pc = per_cpu_ptr(w->pcpu, cpu);

		spin_lock(&pc->lock);
		pc->cur[side] = NULL;
		spin_unlock(&pc->lock);
	}
	spin_lock(&w->lock);
	list_splice_init(&w->used[side], &list);
	spin_unlock(&w->lock);

	list_for_each_entry_safe(c, tmp, &list, node) {
		list_del(&c->node);
		percpu_counter_sub(&w->used_bytes, c->used);
		chunk_release(w, c);
		cond_resched();
	}

	/* every chunk of the side is durably FREE: its entries are gone */
	spin_lock(&w->held_lock);
	w->recycled[side]++;
	held_take_released(w, &released);
	spin_unlock(&w->held_lock);
	held_release(w, &released);
	/* the next retire starts a block */
	pmidx_wal_prepare(w);
}

/**
 * pmidx_wal_retire - free @off once no entry of the log can name it
 *
 * The object is held until both sides have been recycled, then handed to
 * the release callback given at open (wal.h, "Lifetime rule"). The caller
 * guarantees that no entry naming @off is appended after this call.
 * A new block is one of the spares made ahead; only when they are gone
 * and atomic memory is short too is the object abandoned: it stays
 * allocated, and the pool's next attach traces, which finds it again.
 *
 * Context: any; does not sleep.
 */
void pmidx_wal_retire(struct pmidx_wal *w, u64 off)
{
	size_t size = pmidx_alloc_size(&w->pool->alloc, off);
	struct pmidx_wal_held *b, *nb = NULL;
	bool want = false;

	spin_lock(&w->held_lock);
	b = held_newest(w);
	if (!b) {
		nb = list_first_entry_or_null(&w->held_spare,
					      struct pmidx_wal_held, node);
		if (nb) {
			list_del(&nb->node);
			WRITE_ONCE(w->nspare, w->nspare - 1);
		} else {
			spin_unlock(&w->held_lock);
			/* the worker makes the next ones: no warning */
			nb = kmalloc(sizeof(*nb), GFP_ATOMIC | __GFP_NOWARN);
			if (!nb) {
				WRITE_ONCE(w->abandoned, true);
				queue_work(system_unbound_wq, &w->held_work);
				return;
			}
			spin_lock(&w->held_lock);
		}
		want = w->nspare < PMIDX_WAL_HELD_SPARES;
		/* unless another retire started one while we allocated */
		b = held_newest(w);
		if (!b) {
			b = nb;
			nb = NULL;
			b->n = 0;
			b->recycled[0] = w->recycled[0];
			b->recycled[1] = w->recycled[1];
			list_add_tail(&b->node, &w->held);
		}
	}
	b->off[b->n++] = off;
	atomic64_add(size, &w->held_bytes);
	spin_unlock(&w->held_lock);
	if (nb)
		held_spare_put(w, nb);
	if (want)
		queue_work(system_unbound_wq, &w->held_work);
}

/**
 * pmidx_wal_reserve - make sure at least @n chunks are free
 *
 * Lets the appenders (which must not sleep) find chunks ready.
 *
 * Context: process context; sleeps.
 * Return: 0, -ENOSPC or -ENOMEM.
 */
int pmidx_wal_reserve(struct pmidx_wal *w, unsigned int n)
{
	struct pmidx_wal_chunk *c;

	n = min(n, w->max_free);
	for (;;) {
		spin_lock(&w->lock);
		if (w->nfree >= n) {
			spin_unlock(&w->lock);
			return 0;
		}
		spin_unlock(&w->lock);
		c = chunk_new(w, PMIDX_WAL_SLOT_FREE, true);
		if (IS_ERR(c))
			return PTR_ERR(c);
		spin_lock(&w->lock);
		list_add_tail(&c->node, &w->free);
		w->nfree++;
		spin_unlock(&w->lock);
	}
}

static void wal_free_dram(struct pmidx_wal *w)
{
	struct pmidx_wal_chunk *c, *tmp;
	struct pmidx_wal_held *b, *nb;
	int i;

	cancel_work_sync(&w->held_work);
	list_for_each_entry_safe(b, nb, &w->held_spare, node)
		kfree(b);
	list_for_each_entry_safe(c, tmp, &w->free, node)
		kfree(c);
	for (i = 0; i < 2; i++)
		list_for_each_entry_safe(c, tmp, &w->used[i], node)
			kfree(c);
	free_percpu(w->pcpu);
	percpu_counter_destroy(&w->used_bytes);
	bitmap_free(w->slot_map);
	kfree(w);
}

/* Validate one directory slot word and account its chunk. */
static int open_slot(struct pmidx_wal *w, u32 i, u64 word, bool trace)
{
	struct pmidx_alloc *a = &w->pool->alloc;
	u64 off = pmidx_wal_slot_off(word), state = word & PMIDX_WAL_SLOT_STATE;
	u16 gen = word >> PMIDX_WAL_GEN_SHIFT;
	struct pmidx_wal_chunk *c;
	size_t size;

	/* generation 0: never used, or a format 2 chunk (zero-ahead, gen 0) */
	if (state < PMIDX_WAL_SLOT_FREE || state > PMIDX_WAL_SLOT_SIDE1 ||
	    (word & PMIDX_WAL_SLOT_RSVD) ||
	    (!gen && (word & PMIDX_WAL_SLOT_CLEAN)))
		return -EUCLEAN;
	/* this log's alone: named twice (here or by another index) is damage */
	if (trace ? pmidx_alloc_mark(a, off) : pmidx_alloc_claim(a, off))
		return -EUCLEAN;
	size = pmidx_alloc_size(a, off);
	if (size < PMIDX_WAL_MIN_CHUNK / 4 || !pmidx_alloc_valid(a, off, size))
		return -EUCLEAN;
	c = kzalloc(sizeof(*c), GFP_KERNEL);
	if (!c)
		return -ENOMEM;
	c->off = off;
	c->size = min_t(size_t, size, U32_MAX & ~0xffU);
	c->size -= c->size % PMIDX_WAL_ENT_SIZE;
	c->slot = i;
	c->gen = gen;
	c->clean = word & PMIDX_WAL_SLOT_CLEAN;
	__set_bit(i, w->slot_map);
	atomic64_add(c->size, &w->chunk_bytes);
	if (state == PMIDX_WAL_SLOT_FREE) {
		list_add_tail(&c->node, &w->free);
		w->nfree++;
	} else {
		/* sealed: replayed by pmidx_wal_replay(), then side 0 */
		list_add_tail(&c->node, &w->used[0]);
	}
	return 0;
}

/**
 * pmidx_wal_open - open the log whose directory is at @dir_off
 * @cfg: chunk size, recovery trace, the release callback (wal.h)
 *
 * Chunks in use are sealed: appends go to new chunks, and the chunks are
 * scanned by pmidx_wal_replay() and then belong to side 0.
 *
 * Context: process context (attach); does not allocate from the pool.
 * Return: 0, -EUCLEAN on a corrupt directory, -ENOMEM, -EIO.
 */
int pmidx_wal_open(struct pmidx_pool *pool, u64 dir_off,
		   const struct pmidx_wal_cfg *cfg, struct pmidx_wal **out)
{
	bool trace = cfg->trace;
	struct pmidx_alloc *a = &pool->alloc;
	struct pmidx_wal_dir hdr;
	struct pmidx_wal *w;
	int cpu, ret;
	u32 i;

	if (trace ? pmidx_alloc_mark(a, dir_off) : pmidx_alloc_claim(a, dir_off))
		return -EUCLEAN;
	if (!pmidx_alloc_valid(a, dir_off, PMIDX_WAL_DIR_SIZE))
		return -EUCLEAN;
	w = kzalloc(sizeof(*w), GFP_KERNEL);
	if (!w)
		return -ENOMEM;
	w->pool = pool;
	w->dir_off = dir_off;
	w->dir = pmidx_ptr(&pool->pm, dir_off);
	w->nslots = PMIDX_WAL_NSLOTS;
	w->chunk_size = max(round_up(cfg->chunk_size, PMIDX_MIN_OBJ),
			    PMIDX_WAL_MIN_CHUNK);
	w->release = cfg->release;
	w->release_ctx = cfg->ctx;
	spin_lock_init(&w->held_lock);
	INIT_LIST_HEAD(&w->held);
	INIT_LIST_HEAD(&w->held_spare);
	INIT_WORK(&w->held_work, held_spare_work);
	atomic64_set(&w->held_bytes, 0);
	w->max_free = clamp(num_online_cpus(), 2U, 8U);
	spin_lock_init(&w->lock);
	INIT_LIST_HEAD(&w->free);
	INIT_LIST_HEAD(&w->used[0]);
	INIT_LIST_HEAD(&w->used[1]);
	atomic64_set(&w->chunk_bytes, 0);
	w->slot_map = bitmap_zalloc(w->nslots, GFP_KERNEL);
	w->pcpu = alloc_percpu(struct pmidx_wal_cpu);
	ret = -ENOMEM;
	if (!w->slot_map || !w->pcpu ||
	    percpu_counter_init(&w->used_bytes, 0, GFP_KERNEL))
		goto err;
	for_each_possible_cpu(cpu)
		spin_lock_init(&per_cpu_ptr(w->pcpu, cpu)->lock);

	ret = pmidx_read_media(&hdr, w->dir, sizeof(hdr));
	if (ret)
		goto err;
	ret = -EUCLEAN;
	if (le64_to_cpu(hdr.magic) != PMIDX_WAL_DIR_MAGIC ||
	    le32_to_cpu(hdr.nslots) != PMIDX_WAL_NSLOTS) {
		pr_err("pmidx: log directory at %#llx is corrupt\n", dir_off);
		goto err;
	}
	/* format 2 is format 3 with every chunk in generation 0 */
	if (le32_to_cpu(hdr.version) != PMIDX_WAL_VERSION &&
	    le32_to_cpu(hdr.version) != 2) {
		pr_err("pmidx: log format %u is not supported (want 2 or %u)\n",
		       le32_to_cpu(hdr.version), PMIDX_WAL_VERSION);
		goto err;
	}
	for (i = 0; i < w->nslots; i++) {
		__le64 word;

		ret = pmidx_read_media(&word, &w->dir->slot[i], sizeof(word));
		if (ret)
			goto err;
		if (!word)
			continue;
		ret = open_slot(w, i, le64_to_cpu(word), trace);
		if (ret) {
			if (ret == -EUCLEAN)
				pr_err("pmidx: log directory slot %u (%#llx) is corrupt\n",
				       i, le64_to_cpu(word));
			goto err;
		}
	}
	/*
	 * This module writes generations and clean bits into a format 2
	 * directory from now on: say so, so that a module that reads only
	 * format 2 refuses the log by its version, not slot by slot.
	 */
	if (le32_to_cpu(hdr.version) == 2) {
		WRITE_ONCE(w->dir->version, cpu_to_le32(PMIDX_WAL_VERSION));
		pmidx_persist(&pool->pm, &w->dir->version,
			      sizeof(w->dir->version));
	}
	ret = pmidx_wal_prepare(w);
	if (ret)
		goto err;
	*out = w;
	return 0;
err:
	wal_free_dram(w);
	return ret;
}

struct replay_ctx {
	struct pmidx_wal	*w;
	struct pmidx_wal_chunk	**chunks;
	unsigned int		nchunks, workers;
	int			(*fn)(void *ctx, unsigned int worker,
				      const struct pmidx_wal_rec *rec);
	void			*ctx;
};

/*
 * The log of @c ends at @pos unless the entry after it is of this use,
 * where that cannot be ("Torn entries"): then the entry at @pos was
 * damaged. Return: 0 the end, -EUCLEAN corrupt, -EIO.
 */
static int replay_check_end(struct replay_ctx *rc, struct pmidx_wal_chunk *c,
			    u32 pos)
{
	struct pmidx_wal_ent next;
	struct pmidx_wal_rec rec;
	int ret;

	if (pos + 2 * PMIDX_WAL_ENT_SIZE > c->size)
		return 0;
	/* zero-ahead: the line after an append in flight may be stale */
	if (!c->clean && !IS_ALIGNED(c->off + pos, PMIDX_LINE_SIZE))
		return 0;
	ret = pmidx_read_media(&next, pmidx_ptr(&rc->w->pool->pm,
						c->off + pos + PMIDX_WAL_ENT_SIZE),
			       sizeof(next));
	if (ret)
		return ret;
	return ent_decode(&next, c->gen, &rec) ? -EUCLEAN : 0;
}

static int replay_chunk(struct replay_ctx *rc, struct pmidx_wal_chunk *c,
			unsigned int worker, u8 *buf)
{
	struct pmidx_wal_rec rec;
	u32 pos = 0, n, i;
	int ret;

	while (pos < c->size) {
		n = min_t(u32, REPLAY_BLOCK, c->size - pos);
		ret = pmidx_read_media(buf, pmidx_ptr(&rc->w->pool->pm,
						      c->off + pos), n);
		if (ret)
			return ret;
		for (i = 0; i < n; i += PMIDX_WAL_ENT_SIZE) {
			ret = ent_decode((void *)(buf + i), c->gen, &rec);
			if (!ret)
				ret = replay_check_end(rc, c, pos);
			if (ret < 0) {
				pr_err("pmidx: log chunk %#llx: entry at %u is corrupt\n",
				       c->off, pos);
				return ret;
			}
			if (!ret)
				goto end;
			ret = rc->fn(rc->ctx, worker, &rec);
			if (ret)
				return ret;
			pos += PMIDX_WAL_ENT_SIZE;
		}
		cond_resched();
	}
end:
	c->used = pos;
	percpu_counter_add(&rc->w->used_bytes, pos);
	return 0;
}

static int replay_worker(void *arg, unsigned int worker)
{
	struct replay_ctx *rc = arg;
	unsigned int i;
	int ret = 0;
	u8 *buf;

	buf = kmalloc(REPLAY_BLOCK, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	for (i = worker; i < rc->nchunks && !ret; i += rc->workers)
		ret = replay_chunk(rc, rc->chunks[i], worker, buf);
	kfree(buf);
	return ret;
}

/**
 * pmidx_wal_replay - hand every valid entry of the sealed chunks to @fn
 * @threads: workers (each calls @fn with its own @worker number)
 *
 * Only right after pmidx_wal_open(). Entries come in no particular order.
 *
 * Context: process context; sleeps.
 * Return: 0, the first error of @fn, -EIO on a media error, -EUCLEAN on
 * a corrupt entry.
 */
int pmidx_wal_replay(struct pmidx_wal *w, unsigned int threads,
		     int (*fn)(void *ctx, unsigned int worker,
			       const struct pmidx_wal_rec *rec),
		     void *ctx)
{
	struct replay_ctx rc = { .w = w, .fn = fn, .ctx = ctx };
	struct pmidx_wal_chunk *c;
	unsigned int n = 0;
	int ret;

	list_for_each_entry(c, &w->used[0], node)
		n++;
	if (!n)
		return 0;
	rc.chunks = kvmalloc_array(n, sizeof(*rc.chunks), GFP_KERNEL);
	if (!rc.chunks)
		return -ENOMEM;
	list_for_each_entry(c, &w->used[0], node)
		rc.chunks[rc.nchunks++] = c;
	rc.workers = clamp(threads, 1U, n);
	ret = pmidx_run_parallel(rc.workers, replay_worker, &rc);
	kvfree(rc.chunks);
	return ret;
}

static void held_free_dram(struct pmidx_wal *w)
{
	struct pmidx_wal_held *b, *tmp;

	list_for_each_entry_safe(b, tmp, &w->held, node)
		kfree(b);
	INIT_LIST_HEAD(&w->held);
}

/**
 * pmidx_wal_close - forget the DRAM state; the log stays on media as it is
 *
 * Objects still held (or abandoned) stay allocated; the pool's next
 * attach traces, which finds them again (wal.h, "Lifetime rule").
 *
 * Context: the pool's detach (pool->lock held) or an attach that failed.
 */
void pmidx_wal_close(struct pmidx_wal *w)
{
	if (!w)
		return;
	if (!list_empty(&w->held) || READ_ONCE(w->abandoned))
		w->pool->needs_trace = true;
	held_free_dram(w);
	wal_free_dram(w);
}

/**
 * pmidx_wal_destroy - free every chunk, held object and the directory,
 *                     then close
 *
 * Context: the log's owner is unreachable on media already.
 */
void pmidx_wal_destroy(struct pmidx_wal *w)
{
	struct pmidx_wal_held *b;
	struct pmidx_alloc *a;
	u32 i;

	if (!w)
		return;
	a = &w->pool->alloc;
	list_for_each_entry(b, &w->held, node)
		for (i = 0; i < b->n; i++)
			pmidx_free(a, b->off[i]);
	held_free_dram(w);
	/* an abandoned object is found by the next attach's trace */
	if (READ_ONCE(w->abandoned))
		w->pool->needs_trace = true;
	for (i = 0; i < w->nslots; i++) {
		if (!test_bit(i, w->slot_map))
			continue;
		pmidx_free(a, pmidx_wal_slot_off(le64_to_cpu(w->dir->slot[i])));
	}
	pmidx_free(a, w->dir_off);
	wal_free_dram(w);
}
