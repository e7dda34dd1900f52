// SPDX-License-Identifier: GPL-2.0
/*
 * Per-CPU write-ahead log in chunks.
 *
 * Layout. The directory is one allocator object: a header and an array
 * of 8-byte slot words, each a chunk offset ORed with a state (wal.h).
 * Chunks are allocator objects (chunk_size, or 256 KiB when the pool is
 * short of space) holding back-to-back 24-byte entries from offset 0.
 * Every chunk the log holds, in use or free, is in the directory, so
 * recovery marks them all and nothing leaks.
 *
 * Entries. meta = ts (48 bits) | flags (4) | check (12), the check being a
 * hash of both payload words and the low 52 bits of meta. An entry is
 * written and persisted (flush + fence) before the append returns, under
 * its CPU's lock, so within a chunk the entries persist in order and at a
 * power cut only the last one can be torn. Replay reads a chunk from the
 * start until the first entry whose timestamp is 0 or whose check fails.
 *
 * Zero-ahead. A chunk may hold stale entries of an earlier use, each a
 * perfectly valid entry, so the end of the log must be marked: the entry
 * slot after the last durable entry is always durably zero, or the one
 * after that when an append is in flight. A chunk is handed to a side
 * with its first two slots zeroed (and persisted before its slot says
 * so), and append i zeroes slot i + 2 in the same persist as entry i. So
 * a power cut during append i leaves slot i + 1 zero: replay stops there
 * at the latest, whatever entry i looks like. Nothing else is ever
 * zeroed: neither new chunks (whatever the allocator hands out) nor
 * recycled ones, which keeps the log writes sequential and single.
 *
 * Chunk states. A chunk becomes SIDEn (persisted) after its first slots
 * are zero and before its first append; recycling a side sets its chunks
 * FREE (never replayed). Handing a free chunk back to the allocator
 * clears the slot (persisted) before the free, so a slot never names an
 * object that could belong to someone else.
 *
 * Appends stay on one CPU: get_cpu() picks the CPU's log and its lock
 * orders appends there (the lock is uncontended unless a task on that CPU
 * was preempted mid-append, which cannot happen as preemption is off).
 *
 * Locking: a CPU's lock, then wal->lock. Appends never sleep (they run
 * inside engines' epoch sections); recycle and reserve run in process
 * context (the GC kthread) and may sleep between chunks.
 */
#include <linux/bitmap.h>
#include <linux/errno.h>
#include <linux/minmax.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/smp.h>
#include "parallel.h"
#include "wal.h"

#define SLOT_OFF_MASK	(~PMIDX_WAL_SLOT_STATE)
#define AHEAD		(3 * PMIDX_WAL_ENT_SIZE)	/* entry + 2 slots */
#define REPLAY_BLOCK	(PMIDX_WAL_ENT_SIZE * 170)

static u64 ent_check(u64 w0, u64 w1, u64 m52)
{
	u64 h = w0 * 0x9e3779b97f4a7c15ULL;

	h ^= (w1 + 0x632be59bd9b4e019ULL) * 0xc2b2ae3d27d4eb4fULL;
	h ^= m52 * 0x165667b19e3779f9ULL;
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ULL;
	h ^= h >> 32;
	return h & 0xfff;
}

static u64 ent_meta(u64 w0, u64 w1, u64 ts, u8 flags)
{
	u64 m52 = ts | (u64)(flags & 0xf) << PMIDX_WAL_TS_BITS;

	return m52 | ent_check(w0, w1, m52) << 52;
}

/* Return: the entry's timestamp, or 0 when it is not a valid entry. */
static u64 ent_valid(const struct pmidx_wal_ent *e, struct pmidx_wal_rec *r)
{
	u64 meta = le64_to_cpu(e->meta);
	u64 m52 = meta & ((1ULL << 52) - 1);

	r->w0 = le64_to_cpu(e->w0);
	r->w1 = le64_to_cpu(e->w1);
	r->ts = meta & PMIDX_WAL_TS_MAX;
	r->flags = (meta >> PMIDX_WAL_TS_BITS) & 0xf;
	if (!r->ts || ent_check(r->w0, r->w1, m52) != meta >> 52)
		return 0;
	return r->ts;
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
	pmidx_persist(&pool->pm, d, PMIDX_WAL_DIR_SIZE);
	return off;
}

/* Zero the first two entry slots of a chunk about to be used. */
static void chunk_prepare(struct pmidx_wal *w, struct pmidx_wal_chunk *c)
{
	pmidx_memset_persist(&w->pool->pm, pmidx_ptr(&w->pool->pm, c->off), 0,
			     2 * PMIDX_WAL_ENT_SIZE);
}

/* A new chunk with a directory slot in state @state, or NULL. */
static struct pmidx_wal_chunk *chunk_new(struct pmidx_wal *w, u64 state,
					 bool can_sleep)
{
	gfp_t gfp = can_sleep ? GFP_KERNEL : GFP_ATOMIC;
	struct pmidx_alloc *a = &w->pool->alloc;
	struct pmidx_wal_chunk *c;
	unsigned long slot;
	u64 off;

	c = kzalloc(sizeof(*c), gfp);
	if (!c)
		return NULL;
	off = pmidx_alloc(a, w->chunk_size);
	if (!off && w->chunk_size > PMIDX_WAL_MIN_CHUNK)
		off = pmidx_alloc(a, PMIDX_WAL_MIN_CHUNK);
	if (!off)
		goto err_free;
	c->off = off;
	c->size = min_t(size_t, pmidx_alloc_size(a, off), U32_MAX & ~0xffU);
	c->size -= c->size % PMIDX_WAL_ENT_SIZE;
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
	slot_set(w, slot, off | state);
	spin_unlock(&w->lock);
	atomic64_add(c->size, &w->chunk_bytes);
	return c;

err_free:
	kfree(c);
	return NULL;
}

/* Take a chunk for @side: a free one if any, else a new one. */
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
		slot_set(w, c->slot, c->off | state);
		list_add_tail(&c->node, &w->used[side]);
		spin_unlock(&w->lock);
		return c;
	}
	spin_unlock(&w->lock);

	c = chunk_new(w, state, false);
	if (!c)
		return NULL;
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
 * Return: 0, -ENOSPC when no chunk can be had, -EOVERFLOW when @ts does
 * not fit the entry.
 */
int pmidx_wal_append(struct pmidx_wal *w, unsigned int side, u64 w0, u64 w1,
		     u64 ts, u8 flags)
{
	struct pmidx_wal_chunk *c;
	struct pmidx_wal_cpu *pc;
	struct pmidx_wal_ent *e;
	int ret = 0;

	if (WARN_ON_ONCE(!ts || side > 1))
		return -EINVAL;
	if (ts > PMIDX_WAL_TS_MAX)
		return -EOVERFLOW;
	pc = per_cpu_ptr(w->pcpu, get_cpu());
	spin_lock(&pc->lock);
	c = pc->cur[side];
	if (!c || c->used + PMIDX_WAL_ENT_SIZE > c->size) {
		c = chunk_get(w, side);
		pc->cur[side] = c;
		if (!c) {
			ret = -ENOSPC;
			goto out;
		}
	}
	e = pmidx_ptr(&w->pool->pm, c->off + c->used);
	e->w0 = cpu_to_le64(w0);
	e->w1 = cpu_to_le64(w1);
	WRITE_ONCE(e->meta, cpu_to_le64(ent_meta(w0, w1, ts, flags)));
	if (c->used + AHEAD <= c->size) {
		/* zero-ahead: slot i + 2, persisted with entry i */
		memset(e + 2, 0, sizeof(*e));
		pmidx_persist(&w->pool->pm, e, AHEAD);
	} else {
		pmidx_persist(&w->pool->pm, e, sizeof(*e));
	}
	WRITE_ONCE(c->used, c->used + PMIDX_WAL_ENT_SIZE);
	atomic64_add(PMIDX_WAL_ENT_SIZE, &w->used_bytes);
	atomic64_inc(&w->appends);
out:
	spin_unlock(&pc->lock);
	put_cpu();
	return ret;
}

/* Return a recycled chunk to the free list, or to the allocator. */
static void chunk_release(struct pmidx_wal *w, struct pmidx_wal_chunk *c)
{
	spin_lock(&w->lock);
	if (w->nfree < w->max_free) {
		slot_set(w, c->slot, c->off | PMIDX_WAL_SLOT_FREE);
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

/**
 * pmidx_wal_recycle - drop every chunk of @side and reuse them
 *
 * The caller guarantees that nothing in @side is needed any more and that
 * no append to @side runs or will run until the side is reused (appends
 * to the other side go on meanwhile).
 *
 * Context: process context; sleeps.
 */
void pmidx_wal_recycle(struct pmidx_wal *w, unsigned int side)
{
	struct pmidx_wal_chunk *c, *tmp;
	LIST_HEAD(list);
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
		atomic64_sub(c->used, &w->used_bytes);
		c->used = 0;
		chunk_release(w, c);
		cond_resched();
	}
}

/**
 * pmidx_wal_reserve - make sure at least @n chunks are free
 *
 * Lets the appenders (which must not sleep) find chunks ready.
 *
 * Context: process context; sleeps.
 * Return: 0 or -ENOSPC.
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
		if (!c)
			return -ENOSPC;
		spin_lock(&w->lock);
		list_add_tail(&c->node, &w->free);
		w->nfree++;
		spin_unlock(&w->lock);
	}
}

static void wal_free_dram(struct pmidx_wal *w)
{
	struct pmidx_wal_chunk *c, *tmp;
	int i;

	list_for_each_entry_safe(c, tmp, &w->free, node)
		kfree(c);
	for (i = 0; i < 2; i++)
		list_for_each_entry_safe(c, tmp, &w->used[i], node)
			kfree(c);
	free_percpu(w->pcpu);
	bitmap_free(w->slot_map);
	kfree(w);
}

/* Validate one directory slot word and account its chunk. */
static int open_slot(struct pmidx_wal *w, u32 i, u64 word, bool trace)
{
	struct pmidx_alloc *a = &w->pool->alloc;
	u64 off = word & SLOT_OFF_MASK, state = word & PMIDX_WAL_SLOT_STATE;
	struct pmidx_wal_chunk *c;
	size_t size;

	if (state < PMIDX_WAL_SLOT_FREE || state > PMIDX_WAL_SLOT_SIDE1)
		return -EUCLEAN;
	if (trace && pmidx_alloc_mark(a, off))
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
 * @trace: recovery trace: mark the directory and every chunk
 * @chunk_size: size of chunks allocated from now on
 *
 * Chunks in use are sealed: appends go to new chunks, and the chunks are
 * scanned by pmidx_wal_replay() and then belong to side 0.
 *
 * Context: process context (attach); does not allocate from the pool.
 * Return: 0, -EUCLEAN on a corrupt directory, -ENOMEM, -EIO.
 */
int pmidx_wal_open(struct pmidx_pool *pool, u64 dir_off, bool trace,
		   u32 chunk_size, struct pmidx_wal **out)
{
	struct pmidx_alloc *a = &pool->alloc;
	struct pmidx_wal_dir hdr;
	struct pmidx_wal *w;
	int cpu, ret;
	u32 i;

	if (trace && pmidx_alloc_mark(a, dir_off))
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
	w->chunk_size = max(round_up(chunk_size, PMIDX_MIN_OBJ),
			    PMIDX_WAL_MIN_CHUNK);
	w->max_free = clamp(num_online_cpus(), 2U, 8U);
	spin_lock_init(&w->lock);
	INIT_LIST_HEAD(&w->free);
	INIT_LIST_HEAD(&w->used[0]);
	INIT_LIST_HEAD(&w->used[1]);
	atomic64_set(&w->used_bytes, 0);
	atomic64_set(&w->chunk_bytes, 0);
	atomic64_set(&w->appends, 0);
	w->slot_map = bitmap_zalloc(w->nslots, GFP_KERNEL);
	w->pcpu = alloc_percpu(struct pmidx_wal_cpu);
	ret = -ENOMEM;
	if (!w->slot_map || !w->pcpu)
		goto err;
	for_each_possible_cpu(cpu)
		spin_lock_init(&per_cpu_ptr(w->pcpu, cpu)->lock);

	ret = pmidx_read_media(&hdr, w->dir, sizeof(hdr));
	if (ret)
		goto err;
	ret = -EUCLEAN;
	if (le64_to_cpu(hdr.magic) != PMIDX_WAL_DIR_MAGIC ||
	    le32_to_cpu(hdr.nslots) != PMIDX_WAL_NSLOTS)
		goto err;
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
			if (!ent_valid((void *)(buf + i), &rec))
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
	atomic64_add(pos, &rc->w->used_bytes);
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
 * Return: 0, the first error of @fn, -EIO on a media error.
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

/* Forget the DRAM state; the log stays on media as it is. */
void pmidx_wal_close(struct pmidx_wal *w)
{
	if (w)
		wal_free_dram(w);
}

/**
 * pmidx_wal_destroy - free every chunk and the directory, then close
 *
 * Context: the log's owner is unreachable on media already.
 */
void pmidx_wal_destroy(struct pmidx_wal *w)
{
	struct pmidx_alloc *a;
	u32 i;

	if (!w)
		return;
	a = &w->pool->alloc;
	for (i = 0; i < w->nslots; i++) {
		if (!test_bit(i, w->slot_map))
			continue;
		pmidx_free(a, le64_to_cpu(w->dir->slot[i]) & SLOT_OFF_MASK);
	}
	pmidx_free(a, w->dir_off);
	wal_free_dram(w);
}
