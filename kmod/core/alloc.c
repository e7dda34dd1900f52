// SPDX-License-Identifier: GPL-2.0
/*
 * Persistent chunk allocator.
 *
 * The data area is cut into 256 KiB chunks. A chunk is free, a slab of
 * one power-of-two size class (256 B .. 128 KiB, so every object is
 * 256-byte aligned and never straddles an XPLine needlessly), or part of a
 * run that holds one larger object. What a chunk is lives in an atomic
 * 8-byte descriptor in its persistent header; which slots are in use lives
 * only in DRAM while the pool is attached.
 *
 * Crash safety (the Ralloc approach, Cai et al., ISMM'20): allocating and
 * freeing write nothing to pmem on the fast path. A clean detach writes
 * the bitmaps back and sets the superblock's clean flag; after a crash the
 * bitmaps on media are stale and are never trusted. Instead recovery
 * traces every reachable object from the pool's roots (index table ->
 * engine structures), marks it here, and everything unmarked is free. So
 * an object allocated but not yet linked when the power went is simply
 * not found and is free again: nothing leaks, whatever the crash point.
 * The one persistent write that matters, the descriptor, is made durable
 * before the first object of a chunk is handed out, so a traced object
 * always finds its class.
 *
 * Locking: a per-CPU cache lock, then a class lock, then a chunk lock,
 * in that order. free_lock nests inside a class lock. The fast paths
 * take the (uncontended) per-CPU lock and one chunk lock.
 */
#include <linux/bitmap.h>
#include <linux/bitops.h>
#include <linux/errno.h>
#include <linux/log2.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <linux/crc32.h>
#include "alloc.h"

static inline u32 class_shift(unsigned int class)
{
	return PMIDX_MIN_OBJ_SHIFT + class;
}

static inline u32 class_slots(unsigned int class)
{
	return PMIDX_SLOTS_MAX >> class;
}

static inline u64 chunk_off(const struct pmidx_alloc *a, u32 idx)
{
	return a->data_off + ((u64)idx << PMIDX_CHUNK_SHIFT);
}

static inline u32 chunk_index(const struct pmidx_alloc *a, struct pmidx_chunk *c)
{
	return c - a->chunks;
}

static int size_to_class(size_t size)
{
	if (size <= PMIDX_MIN_OBJ)
		return 0;
	if (size > PMIDX_CLASS_MAX_SIZE)
		return -1;
	return ilog2(roundup_pow_of_two(size)) - PMIDX_MIN_OBJ_SHIFT;
}

/* ---- persistent descriptors ----------------------------------------- */

static u64 desc_pack(u8 type, u8 class, u32 run)
{
	u64 d;
	u8 x = 0;
	int i;

	if (type == PMIDX_CHUNK_FREE)
		return 0;
	d = (u64)PMIDX_CHUNK_DESC_MAGIC << 56 | (u64)type << 48 |
	    (u64)class << 40 | (u64)run << 8;
	for (i = 1; i < 8; i++)
		x ^= d >> (8 * i);
	return d | x;
}

static bool desc_unpack(u64 d, u8 *type, u8 *class, u32 *run)
{
	u8 x = 0;
	int i;

	if (!d) {
		*type = PMIDX_CHUNK_FREE;
		*class = 0;
		*run = 0;
		return true;
	}
	for (i = 1; i < 8; i++)
		x ^= d >> (8 * i);
	if ((d >> 56) != PMIDX_CHUNK_DESC_MAGIC || (u8)d != x)
		return false;
	*type = d >> 48;
	*class = d >> 40;
	*run = d >> 8;
	switch (*type) {
	case PMIDX_CHUNK_SLAB:
		return *class < PMIDX_NR_CLASSES && *run == 0;
	case PMIDX_CHUNK_RUN:
		return *class == 0 && *run >= 1;
	case PMIDX_CHUNK_RUN_TAIL:
		return *class == 0 && *run == 0;
	}
	return false;
}

/* Make the chunk's new identity durable before anything relies on it. */
static void chunk_set_desc(struct pmidx_alloc *a, u32 idx, u8 type, u8 class,
			   u32 run)
{
	struct pmidx_chunk *c = &a->chunks[idx];

	c->type = type;
	c->class = class;
	c->run = run;
	c->dirty = true;
	pmidx_store64_persist(a->pm, &a->hdrs[idx].desc,
			      desc_pack(type, class, run));
}

/* ---- free chunk map -------------------------------------------------- */

static int chunks_reserve(struct pmidx_alloc *a, u32 n)
{
	unsigned long pos;

	spin_lock(&a->free_lock);
	pos = bitmap_find_next_zero_area(a->free_map, a->nr_chunks, 0, n, 0);
	if (pos >= a->nr_chunks) {
		spin_unlock(&a->free_lock);
		return -ENOSPC;
	}
	bitmap_set(a->free_map, pos, n);
	a->free_chunks -= n;
	spin_unlock(&a->free_lock);
	return pos;
}

static void chunks_release(struct pmidx_alloc *a, u32 idx, u32 n)
{
	u32 i;

	/* Head first: a crash after it leaves only orphan tails, ignored. */
	for (i = 0; i < n; i++) {
		struct pmidx_chunk *c = &a->chunks[idx + i];

		chunk_set_desc(a, idx + i, PMIDX_CHUNK_FREE, 0, 0);
		c->state = PMIDX_CS_FREE;
		c->nr_used = 0;
		c->hint = 0;
		bitmap_zero(c->bitmap, PMIDX_SLOTS_MAX);
	}
	spin_lock(&a->free_lock);
	bitmap_clear(a->free_map, idx, n);
	a->free_chunks += n;
	spin_unlock(&a->free_lock);
}

/* ---- small objects --------------------------------------------------- */

/* A chunk with free slots for @class: the partial list first, then new. */
static struct pmidx_chunk *class_get_chunk(struct pmidx_alloc *a,
					   unsigned int class)
{
	struct pmidx_alloc_class *cl = &a->classes[class];
	struct pmidx_chunk *c;
	int idx;

	spin_lock(&cl->lock);
	c = list_first_entry_or_null(&cl->partial, struct pmidx_chunk, node);
	if (c) {
		list_del_init(&c->node);
		spin_lock(&c->lock);
		c->state = PMIDX_CS_ACTIVE;
		spin_unlock(&c->lock);
		spin_unlock(&cl->lock);
		return c;
	}
	spin_unlock(&cl->lock);

	idx = chunks_reserve(a, 1);
	if (idx < 0)
		return NULL;
	c = &a->chunks[idx];
	chunk_set_desc(a, idx, PMIDX_CHUNK_SLAB, class, 0);
	c->state = PMIDX_CS_ACTIVE;
	return c;
}

/* Take a free slot of @c, or return -1 and mark it full. */
static long chunk_take_slot(struct pmidx_chunk *c)
{
	u32 n = class_slots(c->class);
	unsigned long slot;

	spin_lock(&c->lock);
	slot = find_next_zero_bit(c->bitmap, n, c->hint);
	if (slot >= n)
		slot = find_first_zero_bit(c->bitmap, n);
	if (slot >= n) {
		c->state = PMIDX_CS_FULL;
		spin_unlock(&c->lock);
		return -1;
	}
	__set_bit(slot, c->bitmap);
	c->nr_used++;
	c->hint = slot + 1;
	c->dirty = true;
	spin_unlock(&c->lock);
	return slot;
}

static u64 alloc_small(struct pmidx_alloc *a, unsigned int class)
{
	struct pmidx_alloc_cpu *pc;
	struct pmidx_chunk *c;
	long slot;
	u64 off = 0;

	pc = per_cpu_ptr(a->pcpu, raw_smp_processor_id());
	spin_lock(&pc->lock);
	for (;;) {
		c = pc->active[class];
		if (c) {
			slot = chunk_take_slot(c);
			if (slot >= 0) {
				off = chunk_off(a, chunk_index(a, c)) +
				      ((u64)slot << class_shift(class));
				break;
			}
			/* chunk_take_slot() marked it FULL: frees requeue it */
			pc->active[class] = NULL;
		}
		c = class_get_chunk(a, class);
		if (!c)
			break;
		pc->active[class] = c;
	}
	spin_unlock(&pc->lock);
	return off;
}

/* ---- large objects --------------------------------------------------- */

static u64 alloc_run(struct pmidx_alloc *a, size_t size)
{
	u32 n = DIV_ROUND_UP(size, PMIDX_CHUNK_SIZE);
	struct pmidx_chunk *c;
	int idx;
	u32 i;

	if (size > (u64)a->nr_chunks << PMIDX_CHUNK_SHIFT)
		return 0;
	idx = chunks_reserve(a, n);
	if (idx < 0)
		return 0;
	/* Tails before the head: a RUN head is only ever seen complete. */
	for (i = 1; i < n; i++) {
		chunk_set_desc(a, idx + i, PMIDX_CHUNK_RUN_TAIL, 0, 0);
		a->chunks[idx + i].state = PMIDX_CS_RUN;
	}
	c = &a->chunks[idx];
	chunk_set_desc(a, idx, PMIDX_CHUNK_RUN, 0, n);
	c->state = PMIDX_CS_RUN;
	c->nr_used = 1;
	return chunk_off(a, idx);
}

/**
 * pmidx_alloc - allocate a persistent object of at least @size bytes
 *
 * The object's contents are undefined. It becomes durable-allocated only
 * by being reachable from a root when recovery runs (see file comment).
 *
 * Context: process context; takes spinlocks, does not sleep.
 * Return: pool offset of the object, or 0 when the pool is full.
 */
u64 pmidx_alloc(struct pmidx_alloc *a, size_t size)
{
	int class = size_to_class(size);
	u64 off;

	if (!size || READ_ONCE(a->tracing))
		return 0;
	if (class < 0)
		off = alloc_run(a, size);
	else
		off = alloc_small(a, class);
	if (off) {
		atomic64_add(pmidx_alloc_size(a, off), &a->used_bytes);
		atomic64_inc(&a->objects);
	}
	return off;
}

/* Locate the chunk of @off and check that @off starts an object there. */
static struct pmidx_chunk *object_chunk(struct pmidx_alloc *a, u64 off,
					u32 *slot)
{
	struct pmidx_chunk *c;
	u64 rel;
	u32 idx;

	if (off < a->data_off)
		return NULL;
	rel = off - a->data_off;
	/* compare before narrowing: a wild offset must not alias a chunk */
	if (rel >> PMIDX_CHUNK_SHIFT >= a->nr_chunks)
		return NULL;
	idx = rel >> PMIDX_CHUNK_SHIFT;
	c = &a->chunks[idx];
	rel &= PMIDX_CHUNK_SIZE - 1;
	switch (c->type) {
	case PMIDX_CHUNK_SLAB:
		if (rel & ((1U << class_shift(c->class)) - 1))
			return NULL;
		*slot = rel >> class_shift(c->class);
		return c;
	case PMIDX_CHUNK_RUN:
		*slot = 0;
		return rel ? NULL : c;
	}
	return NULL;
}

/**
 * pmidx_alloc_size - usable bytes of the object at @off (0 if none)
 */
size_t pmidx_alloc_size(struct pmidx_alloc *a, u64 off)
{
	struct pmidx_chunk *c;
	u32 slot;

	c = object_chunk(a, off, &slot);
	if (!c)
		return 0;
	if (c->type == PMIDX_CHUNK_RUN)
		return (size_t)c->run << PMIDX_CHUNK_SHIFT;
	return (size_t)1 << class_shift(c->class);
}

/**
 * pmidx_alloc_valid - does [@off, @off+@len) lie inside one live object?
 *
 * Used by recovery and the checkers to validate pointers read from media
 * before following them.
 */
bool pmidx_alloc_valid(struct pmidx_alloc *a, u64 off, size_t len)
{
	struct pmidx_chunk *c;
	u64 base, end;
	u32 idx, first, sh;
	bool live;

	if (off < a->data_off || off + len < off)
		return false;
	if ((off - a->data_off) >> PMIDX_CHUNK_SHIFT >= a->nr_chunks)
		return false;
	idx = (off - a->data_off) >> PMIDX_CHUNK_SHIFT;
	first = idx;
	while (idx && a->chunks[idx].type == PMIDX_CHUNK_RUN_TAIL)
		idx--;
	c = &a->chunks[idx];
	spin_lock(&c->lock);
	switch (c->type) {
	case PMIDX_CHUNK_SLAB:
		/* orphan run tails after a slab (until recovery frees them) */
		if (idx != first) {
			end = 0;
			live = false;
			break;
		}
		sh = class_shift(c->class);
		base = off & ~(((u64)1 << sh) - 1);
		end = base + ((u64)1 << sh);
		live = test_bit((base - chunk_off(a, idx)) >> sh, c->bitmap);
		break;
	case PMIDX_CHUNK_RUN:
		end = chunk_off(a, idx) + ((u64)c->run << PMIDX_CHUNK_SHIFT);
		live = c->nr_used == 1;
		break;
	default:
		end = 0;
		live = false;
	}
	spin_unlock(&c->lock);
	return live && off + len <= end;
}

/* A free made the chunk non-full or empty: fix its list membership. */
static void chunk_requeue(struct pmidx_alloc *a, struct pmidx_chunk *c)
{
	struct pmidx_alloc_class *cl = &a->classes[c->class];
	bool release = false;

	spin_lock(&cl->lock);
	spin_lock(&c->lock);
	if (c->state == PMIDX_CS_FULL &&
	    c->nr_used < class_slots(c->class)) {
		c->state = PMIDX_CS_PARTIAL;
		list_add_tail(&c->node, &cl->partial);
	}
	if (c->state == PMIDX_CS_PARTIAL && !c->nr_used) {
		list_del_init(&c->node);
		c->state = PMIDX_CS_FREE;
		release = true;
	}
	spin_unlock(&c->lock);
	spin_unlock(&cl->lock);
	if (release)
		chunks_release(a, chunk_index(a, c), 1);
}

/**
 * pmidx_free - return the object at @off to the allocator
 *
 * The caller must have made the object unreachable (unlink persisted) and
 * waited out concurrent readers (epochs) before calling this.
 */
void pmidx_free(struct pmidx_alloc *a, u64 off)
{
	struct pmidx_chunk *c;
	size_t size = pmidx_alloc_size(a, off);
	bool requeue;
	u32 slot;

	c = object_chunk(a, off, &slot);
	if (WARN_ON_ONCE(!c))
		return;
	if (c->type == PMIDX_CHUNK_RUN) {
		if (WARN_ON_ONCE(c->nr_used != 1))
			return;
		c->nr_used = 0;
		chunks_release(a, chunk_index(a, c), c->run);
		goto account;
	}

	spin_lock(&c->lock);
	if (WARN_ON_ONCE(!__test_and_clear_bit(slot, c->bitmap))) {
		spin_unlock(&c->lock);
		return;
	}
	c->nr_used--;
	c->dirty = true;
	requeue = c->state == PMIDX_CS_FULL ||
		  (c->state == PMIDX_CS_PARTIAL && !c->nr_used);
	spin_unlock(&c->lock);
	if (requeue)
		chunk_requeue(a, c);
account:
	atomic64_sub(size, &a->used_bytes);
	atomic64_dec(&a->objects);
}

/* ---- attach / detach ------------------------------------------------- */

int pmidx_alloc_init(struct pmidx_alloc *a, struct pmidx_pmem *pm,
		     u64 hdr_off, u64 data_off, u32 nr_chunks)
{
	int i, cpu;

	memset(a, 0, sizeof(*a));
	a->pm = pm;
	a->hdrs = pmidx_ptr(pm, hdr_off);
	a->data_off = data_off;
	a->nr_chunks = nr_chunks;
	spin_lock_init(&a->free_lock);
	atomic64_set(&a->used_bytes, 0);
	atomic64_set(&a->objects, 0);
	for (i = 0; i < PMIDX_NR_CLASSES; i++) {
		spin_lock_init(&a->classes[i].lock);
		INIT_LIST_HEAD(&a->classes[i].partial);
	}

	a->chunks = kvcalloc(nr_chunks, sizeof(*a->chunks), GFP_KERNEL);
	a->free_map = bitmap_zalloc(nr_chunks, GFP_KERNEL);
	a->pcpu = alloc_percpu(struct pmidx_alloc_cpu);
	if (!a->chunks || !a->free_map || !a->pcpu)
		goto nomem;
	for (i = 0; i < nr_chunks; i++) {
		spin_lock_init(&a->chunks[i].lock);
		INIT_LIST_HEAD(&a->chunks[i].node);
	}
	for_each_possible_cpu(cpu)
		spin_lock_init(&per_cpu_ptr(a->pcpu, cpu)->lock);
	return 0;

nomem:
	pmidx_alloc_destroy(a);
	return -ENOMEM;
}

void pmidx_alloc_destroy(struct pmidx_alloc *a)
{
	free_percpu(a->pcpu);
	bitmap_free(a->free_map);
	kvfree(a->chunks);
	a->pcpu = NULL;
	a->free_map = NULL;
	a->chunks = NULL;
}

static u32 hdr_crc(const struct pmidx_chunk_hdr *h)
{
	u32 crc = __crc32c_le(~0U, (const u8 *)&h->desc, sizeof(h->desc));

	crc = __crc32c_le(crc, (const u8 *)&h->live, sizeof(h->live));
	return ~__crc32c_le(crc, (const u8 *)h->bitmap, sizeof(h->bitmap));
}

/* Read every descriptor; on success the DRAM types are set, nothing else. */
static int load_descs(struct pmidx_alloc *a, const char **why)
{
	u32 i, j;

	for (i = 0; i < a->nr_chunks; i++) {
		struct pmidx_chunk *c = &a->chunks[i];
		u64 d = le64_to_cpu(READ_ONCE(a->hdrs[i].desc));

		if (!desc_unpack(d, &c->type, &c->class, &c->run)) {
			pr_err("pmidx: chunk %u descriptor %#llx is corrupt\n",
			       i, d);
			*why = "allocator chunk descriptor corrupt";
			return -EUCLEAN;
		}
		if (c->type == PMIDX_CHUNK_RUN) {
			if (c->run > a->nr_chunks - i)
				goto bad_run;
			for (j = 1; j < c->run; j++) {
				u64 t = le64_to_cpu(READ_ONCE(a->hdrs[i + j].desc));

				if (t != desc_pack(PMIDX_CHUNK_RUN_TAIL, 0, 0))
					goto bad_run;
			}
		}
	}
	return 0;

bad_run:
	pr_err("pmidx: chunk %u: run of %u chunks is inconsistent\n", i,
	       a->chunks[i].run);
	*why = "allocator run descriptor corrupt";
	return -EUCLEAN;
}

/* Put every chunk on the list or map its state calls for, count usage. */
static void rebuild_lists(struct pmidx_alloc *a)
{
	u64 used = 0, objects = 0;
	u32 i, j;

	for (i = 0; i < PMIDX_NR_CLASSES; i++)
		INIT_LIST_HEAD(&a->classes[i].partial);
	bitmap_zero(a->free_map, a->nr_chunks);
	a->free_chunks = 0;
	for (i = 0; i < a->nr_chunks; i++) {
		struct pmidx_chunk *c = &a->chunks[i];

		INIT_LIST_HEAD(&c->node);
		c->hint = 0;
		if (c->type == PMIDX_CHUNK_SLAB && c->nr_used) {
			__set_bit(i, a->free_map);
			used += (u64)c->nr_used << class_shift(c->class);
			objects += c->nr_used;
			if (c->nr_used == class_slots(c->class)) {
				c->state = PMIDX_CS_FULL;
			} else {
				c->state = PMIDX_CS_PARTIAL;
				list_add_tail(&c->node,
					      &a->classes[c->class].partial);
			}
			continue;
		}
		if (c->type == PMIDX_CHUNK_RUN && c->nr_used) {
			bitmap_set(a->free_map, i, c->run);
			for (j = 0; j < c->run; j++)
				a->chunks[i + j].state = PMIDX_CS_RUN;
			used += (u64)c->run << PMIDX_CHUNK_SHIFT;
			objects++;
			i += c->run - 1;
			continue;
		}
		/* Empty slab, dead run head or orphan tail: free it. */
		if (c->type != PMIDX_CHUNK_FREE)
			chunk_set_desc(a, i, PMIDX_CHUNK_FREE, 0, 0);
		c->state = PMIDX_CS_FREE;
		c->nr_used = 0;
		a->free_chunks++;
	}
	atomic64_set(&a->used_bytes, used);
	atomic64_set(&a->objects, objects);
}

/**
 * pmidx_alloc_load_clean - rebuild DRAM state from written-back headers
 *
 * Only valid after a clean detach. Any inconsistency is reported so the
 * caller can fall back to a full recovery trace instead.
 */
int pmidx_alloc_load_clean(struct pmidx_alloc *a, const char **why)
{
	u32 i;
	int ret;

	ret = load_descs(a, why);
	if (ret)
		return ret;
	for (i = 0; i < a->nr_chunks; i++) {
		struct pmidx_chunk_hdr *h = &a->hdrs[i];
		struct pmidx_chunk *c = &a->chunks[i];
		u32 live = le32_to_cpu(h->live);
		u64 words[PMIDX_SLOTS_MAX / 64];
		u32 k;

		if (hdr_crc(h) != le32_to_cpu(h->crc))
			goto inconsistent;
		bitmap_zero(c->bitmap, PMIDX_SLOTS_MAX);
		c->nr_used = 0;
		if (c->type == PMIDX_CHUNK_SLAB) {
			for (k = 0; k < ARRAY_SIZE(words); k++)
				words[k] = le64_to_cpu(h->bitmap[k]);
			bitmap_from_arr64(c->bitmap, words, PMIDX_SLOTS_MAX);
			c->nr_used = bitmap_weight(c->bitmap,
						   class_slots(c->class));
		} else if (c->type == PMIDX_CHUNK_RUN) {
			c->nr_used = 1;
		}
		if (c->nr_used != live)
			goto inconsistent;
	}
	rebuild_lists(a);
	return 0;

inconsistent:
	pr_warn("pmidx: chunk %u header inconsistent, falling back to recovery\n",
		i);
	*why = "allocator header checksum mismatch";
	return -EUCLEAN;
}

/**
 * pmidx_alloc_trace_begin - start a recovery trace: every object is free
 *                           until pmidx_alloc_mark() says otherwise
 */
int pmidx_alloc_trace_begin(struct pmidx_alloc *a, const char **why)
{
	u32 i;
	int ret;

	ret = load_descs(a, why);
	if (ret)
		return ret;
	for (i = 0; i < a->nr_chunks; i++) {
		bitmap_zero(a->chunks[i].bitmap, PMIDX_SLOTS_MAX);
		a->chunks[i].nr_used = 0;
		a->chunks[i].dirty = true;
	}
	WRITE_ONCE(a->tracing, true);
	return 0;
}

/* Return: 1 when this call marked @off, 0 when it was marked, -EUCLEAN. */
static int mark_object(struct pmidx_alloc *a, u64 off)
{
	struct pmidx_chunk *c;
	int ret = 1;
	u32 slot;

	c = object_chunk(a, off, &slot);
	if (!c)
		return -EUCLEAN;
	spin_lock(&c->lock);
	if (c->type == PMIDX_CHUNK_RUN) {
		if (c->nr_used)
			ret = 0;
		c->nr_used = 1;
	} else if (__test_and_set_bit(slot, c->bitmap)) {
		ret = 0;
	} else {
		c->nr_used++;
	}
	spin_unlock(&c->lock);
	return ret;
}

/**
 * pmidx_alloc_mark - recovery found a live object at @off
 *
 * Context: may run concurrently from parallel recovery workers.
 * Return: 0; -EUCLEAN if @off is not an object start or is referenced twice.
 */
int pmidx_alloc_mark(struct pmidx_alloc *a, u64 off)
{
	return mark_object(a, off) == 1 ? 0 : -EUCLEAN;
}

/**
 * pmidx_alloc_mark_named - recovery found a reference to @off that does
 *                          not own it (a log entry: see core/wal.h)
 *
 * Such references may share an object with its owner or with each other,
 * so marking twice is not an error here.
 *
 * Context: as pmidx_alloc_mark().
 * Return: 1 when this call marked it, 0 when it was marked already,
 * -EUCLEAN if @off is not an object start.
 */
int pmidx_alloc_mark_named(struct pmidx_alloc *a, u64 off)
{
	return mark_object(a, off);
}

/** pmidx_alloc_trace_end - everything not marked is free again */
void pmidx_alloc_trace_end(struct pmidx_alloc *a)
{
	rebuild_lists(a);
	WRITE_ONCE(a->tracing, false);
}

/**
 * pmidx_alloc_writeback - persist bitmaps and counts for a clean detach
 *
 * Context: the pool is quiescent (no allocations or frees run).
 */
void pmidx_alloc_writeback(struct pmidx_alloc *a)
{
	u32 i, k;

	for (i = 0; i < a->nr_chunks; i++) {
		struct pmidx_chunk_hdr *h = &a->hdrs[i];
		struct pmidx_chunk *c = &a->chunks[i];
		u64 words[PMIDX_SLOTS_MAX / 64];

		if (!c->dirty && hdr_crc(h) == le32_to_cpu(h->crc))
			continue;
		bitmap_to_arr64(words, c->bitmap, PMIDX_SLOTS_MAX);
		for (k = 0; k < ARRAY_SIZE(words); k++)
			h->bitmap[k] = cpu_to_le64(words[k]);
		h->live = cpu_to_le32(c->nr_used);
		h->crc = cpu_to_le32(hdr_crc(h));
		pmidx_flush(a->pm, h, sizeof(*h));
		c->dirty = false;
	}
	pmidx_fence(a->pm);
}

void pmidx_alloc_get_stats(struct pmidx_alloc *a, struct pmidx_alloc_stats *s)
{
	s->used_bytes = atomic64_read(&a->used_bytes);
	s->objects = atomic64_read(&a->objects);
	spin_lock(&a->free_lock);
	s->free_chunks = a->free_chunks;
	spin_unlock(&a->free_lock);
	s->total_chunks = a->nr_chunks;
}

/**
 * pmidx_alloc_format - write @nr_chunks empty, checksummed chunk headers
 */
void pmidx_alloc_format(struct pmidx_pmem *pm, u64 hdr_off, u32 nr_chunks)
{
	struct pmidx_chunk_hdr *h = pmidx_ptr(pm, hdr_off);
	u32 i;

	memset(h, 0, (size_t)nr_chunks * sizeof(*h));
	for (i = 0; i < nr_chunks; i++)
		h[i].crc = cpu_to_le32(hdr_crc(&h[i]));
	pmidx_persist(pm, h, (size_t)nr_chunks * sizeof(*h));
}
