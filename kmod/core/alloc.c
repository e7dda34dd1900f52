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
 * Committed mode (engines with PMIDX_ENGINE_F_COMMITTED, engine.h) makes
 * recovery O(chunks) instead of O(objects): such objects live in chunks
 * of their own (SLAB_C, RUN_C) whose header bitmap on media is the set
 * of committed objects, always current. A new object is pending: set in
 * DRAM only, so a crash frees it. An engine changes what it links by one
 * store to one word W (the link store) inside a struct pmidx_txn:
 *   1. pmidx_txn_arm(): the intent record {W, val, objects allocated,
 *      objects freed} is persisted (flush, fence);
 *   2. the engine stores W := val and persists it;
 *   3. pmidx_txn_end(): the commit bits of the allocated objects are set
 *      and those of the freed ones cleared on media, persisted; then the
 *      record is cleared, persisted.
 * Recovery replays every valid record: if W holds val the store
 * happened, so the allocated objects are committed and the freed ones
 * free; if not, the other way round. Then the bitmaps are loaded: what
 * is not committed is free. The rule engines keep: between arm and end
 * W changes only by the link store (the engine holds W's lock), and an
 * object named by a record is in none other at the same time. A freed
 * object stays allocated in DRAM until pmidx_free() (epochs), but it is
 * free on media at step 3: after a crash no reader is left to protect.
 * So "unlink then free" needs no trace: the record finishes it.
 * What a txn frees comes from the engine's words, which a corrupt image
 * may have changed: pmidx_txn_check() before the arm refuses an object
 * not committed on media (freed already, or pending) or named twice.
 * Objects of an engine's root are still traced (the pool marks roots).
 * Dropping a committed index is the one free without a txn: nothing
 * links the objects any more, so pmidx_free_committed_now() clears the
 * commit bit at once (see there for why the DRAM free must wait).
 * A pool may hold traced and committed indexes side by side: alloc.h,
 * "Traced and committed indexes in one pool".
 *
 * Locking: a per-CPU cache lock, then a class lock, then a chunk lock,
 * in that order. free_lock nests inside a class lock. The fast paths
 * take the (uncontended) per-CPU lock and one chunk lock.
 */
#include <linux/bitmap.h>
#include <linux/bitops.h>
#include <linux/cpumask.h>
#include <linux/errno.h>
#include <linux/log2.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>
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
	case PMIDX_CHUNK_SLAB_C:
		return *class < PMIDX_NR_CLASSES && *run == 0;
	case PMIDX_CHUNK_RUN:
	case PMIDX_CHUNK_RUN_C:
		return *class == 0 && *run >= 1;
	case PMIDX_CHUNK_RUN_TAIL:
	case PMIDX_CHUNK_INTENT:
		return *class == 0 && *run == 0;
	}
	return false;
}

static inline bool type_slab(u8 type)
{
	return type == PMIDX_CHUNK_SLAB || type == PMIDX_CHUNK_SLAB_C;
}

static inline bool type_run(u8 type)
{
	return type == PMIDX_CHUNK_RUN || type == PMIDX_CHUNK_RUN_C;
}

static inline bool type_committed(u8 type)
{
	return type == PMIDX_CHUNK_SLAB_C || type == PMIDX_CHUNK_RUN_C;
}

static inline unsigned int type_mode(u8 type)
{
	return type_committed(type) ? PMIDX_MODE_COMMITTED : PMIDX_MODE_TRACED;
}

/*
 * Committed mode: a new chunk's media bitmap must say "nothing committed"
 * before its descriptor does say committed mode (stale bits of a former
 * life would otherwise come back after a crash).
 */
static void media_bitmap_zero(struct pmidx_alloc *a, u32 idx)
{
	struct pmidx_chunk_hdr *h = &a->hdrs[idx];

	memset(h->bitmap, 0, sizeof(h->bitmap));
	pmidx_persist(a->pm, h->bitmap, sizeof(h->bitmap));
}

/* The commit bit of @slot of chunk @idx on media. Context: chunk lock. */
static void media_bit(struct pmidx_alloc *a, u32 idx, u32 slot, bool on)
{
	__le64 *w = &a->hdrs[idx].bitmap[slot / 64];
	u64 v = le64_to_cpu(READ_ONCE(*w));

	if (on)
		v |= BIT_ULL(slot % 64);
	else
		v &= ~BIT_ULL(slot % 64);
	WRITE_ONCE(*w, cpu_to_le64(v));
	pmidx_flush(a->pm, w, sizeof(*w));
}

/* Make the chunk's new identity durable before anything relies on it. */
static void chunk_set_desc(struct pmidx_alloc *a, u32 idx, u8 type, u8 class,
			   u32 run)
{
	struct pmidx_chunk *c = &a->chunks[idx];

	/* under @c->lock: a late chunk_requeue() reads the identity */
	spin_lock(&c->lock);
	c->type = type;
	c->class = class;
	c->run = run;
	c->dirty = true;
	spin_unlock(&c->lock);
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
		spin_lock(&c->lock);
		c->state = PMIDX_CS_FREE;
		c->nr_used = 0;
		c->hint = 0;
		bitmap_zero(c->bitmap, PMIDX_SLOTS_MAX);
		spin_unlock(&c->lock);
	}
	spin_lock(&a->free_lock);
	bitmap_clear(a->free_map, idx, n);
	a->free_chunks += n;
	spin_unlock(&a->free_lock);
}

/* ---- small objects --------------------------------------------------- */

/* A chunk with free slots for @class: the partial list first, then new. */
static struct pmidx_chunk *class_get_chunk(struct pmidx_alloc *a,
					   unsigned int mode, unsigned int class)
{
	struct pmidx_alloc_class *cl = &a->classes[mode][class];
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
	if (mode == PMIDX_MODE_COMMITTED) {
		media_bitmap_zero(a, idx);
		chunk_set_desc(a, idx, PMIDX_CHUNK_SLAB_C, class, 0);
	} else {
		chunk_set_desc(a, idx, PMIDX_CHUNK_SLAB, class, 0);
	}
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

static u64 alloc_small(struct pmidx_alloc *a, unsigned int mode,
		       unsigned int class)
{
	struct pmidx_alloc_cpu *pc;
	struct pmidx_chunk *c;
	long slot;
	u64 off = 0;

	pc = per_cpu_ptr(a->pcpu, raw_smp_processor_id());
	spin_lock(&pc->lock);
	for (;;) {
		c = pc->active[mode][class];
		if (c) {
			slot = chunk_take_slot(c);
			if (slot >= 0) {
				off = chunk_off(a, chunk_index(a, c)) +
				      ((u64)slot << class_shift(class));
				break;
			}
			/* chunk_take_slot() marked it FULL: frees requeue it */
			pc->active[mode][class] = NULL;
		}
		c = class_get_chunk(a, mode, class);
		if (!c)
			break;
		pc->active[mode][class] = c;
	}
	spin_unlock(&pc->lock);
	return off;
}

/* ---- large objects --------------------------------------------------- */

static u64 alloc_run(struct pmidx_alloc *a, unsigned int mode, size_t size)
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
	if (mode == PMIDX_MODE_COMMITTED) {
		media_bitmap_zero(a, idx);
		chunk_set_desc(a, idx, PMIDX_CHUNK_RUN_C, 0, n);
	} else {
		chunk_set_desc(a, idx, PMIDX_CHUNK_RUN, 0, n);
	}
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
static u64 alloc_mode(struct pmidx_alloc *a, unsigned int mode, size_t size)
{
	int class = size_to_class(size);
	u64 off;

	if (!size || READ_ONCE(a->tracing))
		return 0;
	if (class < 0)
		off = alloc_run(a, mode, size);
	else
		off = alloc_small(a, mode, class);
	if (off) {
		atomic64_add(pmidx_alloc_size(a, off), &a->used_bytes);
		atomic64_inc(&a->objects);
	}
	return off;
}

u64 pmidx_alloc(struct pmidx_alloc *a, size_t size)
{
	return alloc_mode(a, PMIDX_MODE_TRACED, size);
}

/**
 * pmidx_alloc_committed - allocate a pending committed-mode object
 *
 * Like pmidx_alloc(), but the object is found again after a crash only
 * once a pmidx_txn that allocates it has ended (see file comment); until
 * then a crash frees it. Needs pmidx_alloc_intents_enable(). Fails (0)
 * while committed-mode space is frozen (alloc.h).
 */
u64 pmidx_alloc_committed(struct pmidx_alloc *a, size_t size)
{
	if (WARN_ON_ONCE(!a->intents))
		return 0;
	if (READ_ONCE(a->committed_frozen)) {
		/* once per attach (a race may print it twice: harmless) */
		if (!READ_ONCE(a->frozen_warned)) {
			WRITE_ONCE(a->frozen_warned, true);
			pr_warn("pmidx: committed-mode allocations refused until %s\n",
				a->frozen_why);
		}
		return 0;
	}
	return alloc_mode(a, PMIDX_MODE_COMMITTED, size);
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
	case PMIDX_CHUNK_SLAB_C:
		if (rel & ((1U << class_shift(c->class)) - 1))
			return NULL;
		*slot = rel >> class_shift(c->class);
		return c;
	case PMIDX_CHUNK_RUN:
	case PMIDX_CHUNK_RUN_C:
		*slot = 0;
		return rel ? NULL : c;
	}
	return NULL;
}

/** pmidx_alloc_is_committed - is @off an object start of committed mode? */
bool pmidx_alloc_is_committed(struct pmidx_alloc *a, u64 off)
{
	struct pmidx_chunk *c;
	u32 slot;

	c = object_chunk(a, off, &slot);
	return c && type_committed(c->type);
}

/**
 * pmidx_alloc_media_committed - is @off a committed-mode object whose
 *                               commit bit is set on media?
 *
 * For checkers (committed-mode review L2): with the owner's link stores
 * stopped, every object it reaches must be committed.
 */
bool pmidx_alloc_media_committed(struct pmidx_alloc *a, u64 off)
{
	struct pmidx_chunk *c;
	u32 slot;
	u64 w;

	c = object_chunk(a, off, &slot);
	if (!c || !type_committed(c->type))
		return false;
	/* media_bit() changes the word under the chunk lock */
	spin_lock(&c->lock);
	w = le64_to_cpu(READ_ONCE(a->hdrs[c - a->chunks].bitmap[slot / 64]));
	spin_unlock(&c->lock);
	return w & BIT_ULL(slot % 64);
}

/**
 * pmidx_alloc_media_count - the commit bits set on media, pool-wide
 *
 * Context: process context (sleeps between chunks).
 */
u64 pmidx_alloc_media_count(struct pmidx_alloc *a)
{
	u64 n = 0, w;
	u32 i, k, slots;

	for (i = 0; i < a->nr_chunks; i++) {
		struct pmidx_chunk *c = &a->chunks[i];

		spin_lock(&c->lock);
		if (type_committed(c->type)) {
			slots = c->type == PMIDX_CHUNK_RUN_C ? 1 :
				class_slots(c->class);
			for (k = 0; k < DIV_ROUND_UP(slots, 64); k++) {
				w = le64_to_cpu(READ_ONCE(a->hdrs[i].bitmap[k]));
				if (slots - k * 64 < 64)
					w &= BIT_ULL(slots - k * 64) - 1;
				n += hweight64(w);
			}
		}
		spin_unlock(&c->lock);
		if (!(i & 1023))
			cond_resched();
	}
	return n;
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
	if (type_run(c->type))
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
	case PMIDX_CHUNK_SLAB_C:
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
	case PMIDX_CHUNK_RUN_C:
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
	struct pmidx_alloc_class *cl;
	bool release = false;
	u8 type, class;

	/*
	 * Two frees of one chunk may both ask for a requeue; the first can
	 * release the chunk and another class reuse it before the second gets
	 * here. The class lock comes before @c->lock, so read the identity
	 * first and recheck it under both locks: a changed identity means the
	 * chunk was released since our free, and its new owner queues it.
	 */
	spin_lock(&c->lock);
	type = c->type;
	class = c->class;
	spin_unlock(&c->lock);
	if (!type_slab(type))
		return;
	cl = &a->classes[type_mode(type)][class];

	spin_lock(&cl->lock);
	spin_lock(&c->lock);
	if (c->type != type || c->class != class) {
		spin_unlock(&c->lock);
		spin_unlock(&cl->lock);
		return;
	}
	if (c->state == PMIDX_CS_FULL &&
	    c->nr_used < class_slots(c->class)) {
		c->state = PMIDX_CS_PARTIAL;
		list_add_tail(&c->node, &cl->partial);
	}
	/* frozen: kept on the list, empty (alloc.h, a drop that waits) */
	if (c->state == PMIDX_CS_PARTIAL && !c->nr_used &&
	    !(type_committed(c->type) && READ_ONCE(a->committed_frozen))) {
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
 * waited out concurrent readers (epochs) before calling this. Nothing is
 * written to pmem: a committed-mode object was freed on media by the
 * pmidx_txn that unlinked it, or was never committed.
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
	if (type_run(c->type)) {
		if (WARN_ON_ONCE(c->nr_used != 1))
			return;
		spin_lock(&c->lock);
		c->nr_used = 0;
		c->dirty = true;
		spin_unlock(&c->lock);
		/* frozen: a dead head keeps its chunks (alloc.h) */
		if (!(type_committed(c->type) && READ_ONCE(a->committed_frozen)))
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

/**
 * pmidx_free_committed_now - free a committed-mode object of a dropped index
 *
 * Drop-index (the engine's destroy()) frees objects that no live
 * structure links: the index is DROPPING (index_table.c) and drained, so
 * no txn is needed; the commit bit of @off is cleared on media and made
 * durable (flush, fence) before return.
 *
 * The DRAM free waits while a deferral is open (pmidx_alloc_defer_begin(),
 * the live drop): until the DROPPING entry is cleared, a crash resumes
 * the destroy at attach, and that walk reads the index's structure again,
 * also objects whose bits were cleared already. If one of them had been
 * reused by another index meanwhile, the walk would take that index's
 * object for its own and free it. The resumed destroy itself (@resuming)
 * frees in DRAM at once: nothing allocates before it ends. It also skips
 * objects that are free already (cleared before the crash).
 *
 * Context: process context; may sleep (the deferral list grows).
 */
void pmidx_free_committed_now(struct pmidx_alloc *a, u64 off)
{
	struct pmidx_defer *d;
	struct pmidx_chunk *c;
	bool live;
	u32 slot;

	c = object_chunk(a, off, &slot);
	if (!c || !type_committed(c->type)) {
		WARN_ON_ONCE(!a->resuming);
		return;
	}
	spin_lock(&c->lock);
	live = type_run(c->type) ? c->nr_used == 1 : test_bit(slot, c->bitmap);
	if (live) {
		media_bit(a, c - a->chunks, slot, false);
		c->dirty = true;
	}
	spin_unlock(&c->lock);
	if (!live) {
		WARN_ON_ONCE(!a->resuming);
		return;
	}
	pmidx_fence(a->pm);

	mutex_lock(&a->defer_lock);
	if (!a->deferring) {
		mutex_unlock(&a->defer_lock);
		pmidx_free(a, off);
		return;
	}
	d = a->defer;
	if (!d || d->n == PMIDX_DEFER_OBJS) {
		/* order 0: the kernel retries it; a drop cannot half-fail */
		d = kmalloc(sizeof(*d), GFP_KERNEL | __GFP_NOFAIL);
		d->next = a->defer;
		d->n = 0;
		a->defer = d;
	}
	d->off[d->n++] = off;
	mutex_unlock(&a->defer_lock);
}

/**
 * pmidx_alloc_defer_begin - open a deferral of pmidx_free_committed_now()'s
 *                           DRAM frees (one drop at a time: the caller
 *                           serialises, pool->drop_lock)
 */
void pmidx_alloc_defer_begin(struct pmidx_alloc *a)
{
	mutex_lock(&a->defer_lock);
	WARN_ON_ONCE(a->deferring);
	a->deferring = true;
	mutex_unlock(&a->defer_lock);
}

/**
 * pmidx_alloc_defer_end - free in DRAM what the deferral holds
 *
 * Call only once no durable state can make attach walk the dropped
 * index again (its entry is cleared, durably).
 */
void pmidx_alloc_defer_end(struct pmidx_alloc *a)
{
	struct pmidx_defer *d;
	unsigned long i;

	mutex_lock(&a->defer_lock);
	d = a->defer;
	a->defer = NULL;
	a->deferring = false;
	mutex_unlock(&a->defer_lock);
	while (d) {
		struct pmidx_defer *next = d->next;

		for (i = 0; i < d->n; i++)
			pmidx_free(a, d->off[i]);
		kfree(d);
		d = next;
		cond_resched();
	}
}

/* ---- attach / detach ------------------------------------------------- */

int pmidx_alloc_init(struct pmidx_alloc *a, struct pmidx_pmem *pm,
		     u64 hdr_off, u64 data_off, u32 nr_chunks)
{
	int i, m, cpu;

	memset(a, 0, sizeof(*a));
	a->pm = pm;
	a->hdrs = pmidx_ptr(pm, hdr_off);
	a->data_off = data_off;
	a->nr_chunks = nr_chunks;
	spin_lock_init(&a->free_lock);
	spin_lock_init(&a->intent_lock);
	mutex_init(&a->defer_lock);
	atomic64_set(&a->used_bytes, 0);
	atomic64_set(&a->objects, 0);
	for (m = 0; m < PMIDX_NR_MODES; m++) {
		for (i = 0; i < PMIDX_NR_CLASSES; i++) {
			spin_lock_init(&a->classes[m][i].lock);
			INIT_LIST_HEAD(&a->classes[m][i].partial);
		}
	}

	a->chunks = kvcalloc(nr_chunks, sizeof(*a->chunks), GFP_KERNEL);
	a->free_map = bitmap_zalloc(nr_chunks, GFP_KERNEL);
	a->intent_map = bitmap_zalloc(PMIDX_NR_INTENTS, GFP_KERNEL);
	a->pcpu = alloc_percpu(struct pmidx_alloc_cpu);
	if (!a->chunks || !a->free_map || !a->intent_map || !a->pcpu)
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
	/* a deferral is always ended by the drop that opened it */
	WARN_ON_ONCE(a->defer);
	free_percpu(a->pcpu);
	bitmap_free(a->intent_map);
	bitmap_free(a->free_map);
	kvfree(a->snap);
	kvfree(a->claimed);
	kvfree(a->chunks);
	a->pcpu = NULL;
	a->intent_map = NULL;
	a->free_map = NULL;
	a->snap = NULL;
	a->claimed = NULL;
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

	a->intents = NULL;
	for (i = 0; i < a->nr_chunks; i++) {
		struct pmidx_chunk *c = &a->chunks[i];
		u64 d = le64_to_cpu(READ_ONCE(a->hdrs[i].desc));

		if (!desc_unpack(d, &c->type, &c->class, &c->run)) {
			pr_err("pmidx: chunk %u descriptor %#llx is corrupt\n",
			       i, d);
			*why = "allocator chunk descriptor corrupt";
			return -EUCLEAN;
		}
		if (c->type == PMIDX_CHUNK_INTENT) {
			if (a->intents) {
				*why = "allocator has two intent chunks";
				return -EUCLEAN;
			}
			a->intents = pmidx_ptr(a->pm, chunk_off(a, i));
		}
		if (type_run(c->type)) {
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

	for (j = 0; j < PMIDX_NR_MODES; j++)
		for (i = 0; i < PMIDX_NR_CLASSES; i++)
			INIT_LIST_HEAD(&a->classes[j][i].partial);
	bitmap_zero(a->free_map, a->nr_chunks);
	a->free_chunks = 0;
	for (i = 0; i < a->nr_chunks; i++) {
		struct pmidx_chunk *c = &a->chunks[i];

		INIT_LIST_HEAD(&c->node);
		c->hint = 0;
		if (c->type == PMIDX_CHUNK_INTENT) {
			__set_bit(i, a->free_map);
			c->state = PMIDX_CS_FULL;
			c->nr_used = 0;
			continue;
		}
		if (type_slab(c->type) && c->nr_used) {
			__set_bit(i, a->free_map);
			used += (u64)c->nr_used << class_shift(c->class);
			objects += c->nr_used;
			if (c->nr_used == class_slots(c->class)) {
				c->state = PMIDX_CS_FULL;
			} else {
				c->state = PMIDX_CS_PARTIAL;
				list_add_tail(&c->node,
					      &a->classes[type_mode(c->type)][c->class].partial);
			}
			continue;
		}
		if (type_run(c->type) && c->nr_used) {
			bitmap_set(a->free_map, i, c->run);
			for (j = 0; j < c->run; j++)
				a->chunks[i + j].state = PMIDX_CS_RUN;
			used += (u64)c->run << PMIDX_CHUNK_SHIFT;
			objects++;
			i += c->run - 1;
			continue;
		}
		/* frozen: an empty committed chunk stays (alloc.h) */
		if (type_slab(c->type) && type_committed(c->type) &&
		    a->committed_frozen) {
			__set_bit(i, a->free_map);
			c->state = PMIDX_CS_PARTIAL;
			list_add_tail(&c->node,
				      &a->classes[PMIDX_MODE_COMMITTED][c->class].partial);
			continue;
		}
		if (c->type == PMIDX_CHUNK_RUN_C && a->committed_frozen) {
			bitmap_set(a->free_map, i, c->run);
			for (j = 0; j < c->run; j++)
				a->chunks[i + j].state = PMIDX_CS_RUN;
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

static bool intent_valid(const struct pmidx_intent *r, u32 *width,
			 u32 *nalloc, u32 *nfree)
{
	u64 h = le64_to_cpu(READ_ONCE(r->hdr));
	u32 crc;

	if (h >> 48 != PMIDX_INTENT_MAGIC)
		return false;
	*width = (h >> 44) & 0xf;
	*nalloc = (h >> 40) & 0xf;
	*nfree = (h >> 36) & 0xf;
	if ((*width != 4 && *width != 8) ||
	    *nalloc + *nfree > PMIDX_INTENT_OBJS)
		return false;
	crc = ~__crc32c_le(~0U, (const u8 *)&r->word,
			   (2 + *nalloc + *nfree) * sizeof(__le64));
	return (u32)h == crc;
}

/*
 * Recovery: finish every link store a crash interrupted (file comment).
 * Runs after load_descs(), before the media bitmaps are read.
 */
static int replay_intents(struct pmidx_alloc *a, const char **why)
{
	u64 word, val, cur, off, end = a->data_off +
		((u64)a->nr_chunks << PMIDX_CHUNK_SHIFT);
	u32 i, k, width, nalloc, nfree, slot;
	struct pmidx_chunk *c;
	bool done;

	if (!a->intents)
		return 0;
	for (i = 0; i < PMIDX_NR_INTENTS; i++) {
		struct pmidx_intent *r = &a->intents[i];

		if (!intent_valid(r, &width, &nalloc, &nfree))
			continue;
		word = le64_to_cpu(r->word);
		val = le64_to_cpu(r->val);
		if (word >= a->pm->size || word + width > a->pm->size ||
		    word & (width - 1))
			goto bad;
		if (width == 4)
			cur = le32_to_cpu(*(__le32 *)pmidx_ptr(a->pm, word));
		else
			cur = le64_to_cpu(*(__le64 *)pmidx_ptr(a->pm, word));
		done = cur == val;
		for (k = 0; k < nalloc + nfree; k++) {
			off = le64_to_cpu(r->obj[k]);
			c = off < end ? object_chunk(a, off, &slot) : NULL;
			if (!c || !type_committed(c->type))
				goto bad;
			media_bit(a, c - a->chunks, slot, (k < nalloc) == done);
		}
		pmidx_fence(a->pm);
		pmidx_store64_persist(a->pm, &r->hdr, 0);
	}
	return 0;
bad:
	pr_err("pmidx: intent record %u names no committed object or word\n", i);
	*why = "allocator intent record corrupt";
	return -EUCLEAN;
}

/* Committed-mode chunks: DRAM state := the media bitmap (after replay). */
static int load_committed(struct pmidx_alloc *a, const char **why)
{
	u64 words[PMIDX_SLOTS_MAX / 64];
	u32 i, k, n;

	for (i = 0; i < a->nr_chunks; i++) {
		struct pmidx_chunk *c = &a->chunks[i];

		if (!type_committed(c->type))
			continue;
		for (k = 0; k < ARRAY_SIZE(words); k++)
			words[k] = le64_to_cpu(READ_ONCE(a->hdrs[i].bitmap[k]));
		bitmap_from_arr64(c->bitmap, words, PMIDX_SLOTS_MAX);
		n = c->type == PMIDX_CHUNK_RUN_C ? 1 : class_slots(c->class);
		if (find_next_bit(c->bitmap, PMIDX_SLOTS_MAX, n) < PMIDX_SLOTS_MAX) {
			pr_err("pmidx: chunk %u: commit bit beyond its slots\n", i);
			*why = "allocator commit bitmap corrupt";
			return -EUCLEAN;
		}
		c->nr_used = bitmap_weight(c->bitmap, n);
		c->dirty = true;
	}
	return 0;
}

/**
 * pmidx_alloc_freeze_committed - keep every committed-mode chunk and
 *                                refuse committed allocations (alloc.h,
 *                                "A drop that waits for its engine")
 * @why: what the freeze waits for, for the report ("index X's drop is
 *       resumed by a module with engine Y")
 *
 * Context: attach, before pmidx_alloc_load_clean() or
 * pmidx_alloc_trace_begin(); lasts until the allocator is destroyed.
 */
void pmidx_alloc_freeze_committed(struct pmidx_alloc *a, const char *why)
{
	strscpy(a->frozen_why, why, sizeof(a->frozen_why));
	WRITE_ONCE(a->committed_frozen, true);
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
		if (type_slab(c->type)) {
			for (k = 0; k < ARRAY_SIZE(words); k++)
				words[k] = le64_to_cpu(h->bitmap[k]);
			bitmap_from_arr64(c->bitmap, words, PMIDX_SLOTS_MAX);
			c->nr_used = bitmap_weight(c->bitmap,
						   class_slots(c->class));
		} else if (c->type == PMIDX_CHUNK_RUN_C) {
			/* bit 0; a dead head only kept while frozen (alloc.h) */
			c->nr_used = le64_to_cpu(h->bitmap[0]) & 1;
		} else if (type_run(c->type)) {
			c->nr_used = 1;
		}
		if (c->nr_used != live)
			goto inconsistent;
	}
	for (i = 0; a->intents && i < PMIDX_NR_INTENTS; i++) {
		u32 w, na, nf;

		if (intent_valid(&a->intents[i], &w, &na, &nf)) {
			*why = "intent record left at a clean detach";
			return -EUCLEAN;
		}
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
	if (!ret)
		ret = replay_intents(a, why);
	if (!ret)
		ret = load_committed(a, why);
	if (ret)
		return ret;
	for (i = 0; i < a->nr_chunks; i++) {
		if (type_committed(a->chunks[i].type))
			continue;
		bitmap_zero(a->chunks[i].bitmap, PMIDX_SLOTS_MAX);
		a->chunks[i].nr_used = 0;
		a->chunks[i].dirty = true;
	}
	WRITE_ONCE(a->tracing, true);
	return 0;
}

#define SNAP_LONGS	BITS_TO_LONGS(PMIDX_SLOTS_MAX)

/**
 * pmidx_alloc_verify_begin - check committed-mode recovery by a trace
 *
 * After pmidx_alloc_trace_begin(): saves what the intents and bitmaps
 * recovered, then forgets it, so the trace that follows must mark
 * committed-mode objects too; pmidx_alloc_verify_end() compares. The old
 * trace, kept as a checker (tests).
 */
int pmidx_alloc_verify_begin(struct pmidx_alloc *a)
{
	u32 i;

	a->snap = kvcalloc(a->nr_chunks, SNAP_LONGS * sizeof(long), GFP_KERNEL);
	if (!a->snap)
		return -ENOMEM;
	for (i = 0; i < a->nr_chunks; i++) {
		struct pmidx_chunk *c = &a->chunks[i];

		if (!type_committed(c->type))
			continue;
		/* a run's state is its nr_used, bit 0 in the snapshot */
		if (c->type == PMIDX_CHUNK_RUN_C)
			a->snap[i * SNAP_LONGS] = c->nr_used;
		else
			bitmap_copy(a->snap + i * SNAP_LONGS, c->bitmap,
				    PMIDX_SLOTS_MAX);
		bitmap_zero(c->bitmap, PMIDX_SLOTS_MAX);
		c->nr_used = 0;
	}
	a->trace_all = true;
	return 0;
}

/**
 * pmidx_alloc_verify_end - compare the trace with the recovered state
 * @bad_off: the first object on which they differ
 *
 * Return: objects recovered but not reached (leaks) plus objects reached
 * but not recovered (lost); 0 when they agree.
 */
int pmidx_alloc_verify_end(struct pmidx_alloc *a, u64 *bad_off)
{
	unsigned long diff[SNAP_LONGS];
	int bad = 0;
	u32 i, k, n;

	*bad_off = 0;
	for (i = 0; i < a->nr_chunks; i++) {
		struct pmidx_chunk *c = &a->chunks[i];

		if (!type_committed(c->type))
			continue;
		n = c->type == PMIDX_CHUNK_RUN_C ? 1 : class_slots(c->class);
		for (k = 0; k < SNAP_LONGS; k++)
			diff[k] = a->snap[i * SNAP_LONGS + k] ^
				  (c->type == PMIDX_CHUNK_RUN_C ?
				   (k ? 0 : c->nr_used) : c->bitmap[k]);
		if (bitmap_empty(diff, n))
			continue;
		if (!bad)
			*bad_off = chunk_off(a, i) +
				((u64)find_first_bit(diff, n) << class_shift(c->class));
		bad += bitmap_weight(diff, n);
	}
	a->trace_all = false;
	kvfree(a->snap);
	a->snap = NULL;
	return bad;
}

/* Return: 1 when this call marked @off, 0 when it was marked, -EUCLEAN. */
static int mark_object(struct pmidx_alloc *a, u64 off)
{
	struct pmidx_chunk *c;
	int ret = 1;
	u32 slot;

	c = object_chunk(a, off, &slot);
	if (!c || (type_committed(c->type) && !a->trace_all))
		return -EUCLEAN;
	/* under the checker: each index marks objects of its own mode only */
	if (a->trace_all && type_committed(c->type) != a->mark_committed)
		return -EUCLEAN;
	spin_lock(&c->lock);
	if (type_run(c->type)) {
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

/*
 * Claims. A clean attach trusts the written-back bitmaps, so nothing
 * says whether an object an engine reads is also named by another index
 * (a root copied over another's, a list pointer into another index's
 * list): both would then write it. An engine that reads its objects at
 * a clean attach anyway claims each one it owns; a second claim is the
 * damage the recovery trace would find as a double mark.
 */

/**
 * pmidx_alloc_claim_begin - start taking claims (a clean attach)
 *
 * Context: process context; the pool's attach.
 * Return: 0 or -ENOMEM.
 */
int pmidx_alloc_claim_begin(struct pmidx_alloc *a)
{
	a->claimed = kvcalloc(BITS_TO_LONGS((size_t)a->nr_chunks * PMIDX_SLOTS_MAX),
			      sizeof(long), GFP_KERNEL);
	return a->claimed ? 0 : -ENOMEM;
}

static int claim_object(struct pmidx_alloc *a, u64 off, bool committed)
{
	struct pmidx_chunk *c;
	u32 slot;

	if (!a->claimed)
		return 0;
	c = object_chunk(a, off, &slot);
	/* as in a trace (mark_object()): an engine owns objects of its mode */
	if (!c || type_committed(c->type) != committed)
		return -EUCLEAN;
	return test_and_set_bit((size_t)(c - a->chunks) * PMIDX_SLOTS_MAX + slot,
				a->claimed) ? -EUCLEAN : 0;
}

/**
 * pmidx_alloc_claim - an engine owns the object at @off (clean attach)
 *
 * Outside a clean attach (no claims taken) it accepts everything: the
 * recovery trace's marks do this job there.
 *
 * Context: may run concurrently from parallel recovery workers.
 * Return: 0; -EUCLEAN if @off is not an object start, is a committed-mode
 * object or is claimed twice.
 */
int pmidx_alloc_claim(struct pmidx_alloc *a, u64 off)
{
	return claim_object(a, off, false);
}

/**
 * pmidx_alloc_claim_committed - pmidx_alloc_claim() for a committed-mode
 *                               engine: @off must be a committed-mode object
 *
 * Context and return: as pmidx_alloc_claim().
 */
int pmidx_alloc_claim_committed(struct pmidx_alloc *a, u64 off)
{
	return claim_object(a, off, true);
}

/** pmidx_alloc_claim_end - the clean attach is over: forget the claims */
void pmidx_alloc_claim_end(struct pmidx_alloc *a)
{
	kvfree(a->claimed);
	a->claimed = NULL;
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
		/* a committed run's commit bit is bit 0, its DRAM state nr_used */
		if (c->type == PMIDX_CHUNK_RUN_C) {
			memset(words, 0, sizeof(words));
			words[0] = c->nr_used;
		}
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

/* ---- committed mode: intents ---------------------------------------- */

/**
 * pmidx_alloc_intents_enable - make the intent chunk committed mode needs
 *
 * Persistence order: the chunk is zeroed and persisted before its
 * descriptor names it INTENT, so recovery never reads stale records.
 * The caller has set PMIDX_FEAT_INCOMPAT_INTENTS durably before.
 * Context: attach or index creation (pool->lock); no allocation runs.
 * Return: 0 or -ENOSPC.
 */
int pmidx_alloc_intents_enable(struct pmidx_alloc *a)
{
	int idx;

	if (a->intents)
		return 0;
	idx = chunks_reserve(a, 1);
	if (idx < 0)
		return idx;
	pmidx_memset_persist(a->pm, pmidx_ptr(a->pm, chunk_off(a, idx)), 0,
			     PMIDX_CHUNK_SIZE);
	chunk_set_desc(a, idx, PMIDX_CHUNK_INTENT, 0, 0);
	a->chunks[idx].state = PMIDX_CS_FULL;
	a->intents = pmidx_ptr(a->pm, chunk_off(a, idx));
	return 0;
}

/**
 * pmidx_txn_begin - take an intent record for one link store
 *
 * Context: any; does not sleep. Return: 0, or -EBUSY when every record
 * is in use (more link stores in flight than PMIDX_NR_INTENTS).
 */
int pmidx_txn_begin(struct pmidx_alloc *a, struct pmidx_txn *txn)
{
	unsigned long slot;

	txn->nalloc = 0;
	txn->nfree = 0;
	txn->slot = -1;
	if (WARN_ON_ONCE(!a->intents))
		return -EINVAL;
	spin_lock(&a->intent_lock);
	slot = find_next_zero_bit(a->intent_map, PMIDX_NR_INTENTS,
				  a->intent_hint);
	if (slot >= PMIDX_NR_INTENTS)
		slot = find_first_zero_bit(a->intent_map, PMIDX_NR_INTENTS);
	if (slot < PMIDX_NR_INTENTS) {
		__set_bit(slot, a->intent_map);
		a->intent_hint = slot + 1;
		txn->slot = slot;
		a->intent_peak = max(a->intent_peak, ++a->intent_used);
	}
	spin_unlock(&a->intent_lock);
	return txn->slot < 0 ? -EBUSY : 0;
}

#ifdef PMIDX_TEST_ENGINES
unsigned int pmidx_test_nr_cpus;
#endif

/**
 * pmidx_txn_cpus_ok - do the intent records cover this machine's CPUs?
 *
 * See alloc.h, "Records in flight": false above PMIDX_TXN_CPUS_MAX, where
 * committed mode is refused.
 */
bool pmidx_txn_cpus_ok(void)
{
	unsigned int cpus = nr_cpu_ids;

#ifdef PMIDX_TEST_ENGINES
	if (pmidx_test_nr_cpus)
		cpus = pmidx_test_nr_cpus;
#endif
	return cpus <= PMIDX_TXN_CPUS_MAX;
}

/**
 * pmidx_txn_cancel - give back the record of a txn that was never armed
 *
 * For an engine that takes its records before its first store (several
 * link stores in a row, each of which must not fail after the first) and
 * then meets an error before arming one. Nothing reached media.
 */
void pmidx_txn_cancel(struct pmidx_alloc *a, struct pmidx_txn *txn)
{
	if (WARN_ON_ONCE(txn->slot < 0))
		return;
	spin_lock(&a->intent_lock);
	__clear_bit(txn->slot, a->intent_map);
	a->intent_used--;
	spin_unlock(&a->intent_lock);
	txn->slot = -1;
}

/* The link store publishes @off (a pending committed-mode object). */
void pmidx_txn_alloc(struct pmidx_txn *txn, u64 off)
{
	if (!WARN_ON_ONCE(txn->nalloc + txn->nfree >= PMIDX_INTENT_OBJS))
		txn->alloc[txn->nalloc++] = off;
}

/* The link store unlinks @off (a committed committed-mode object). */
void pmidx_txn_free(struct pmidx_txn *txn, u64 off)
{
	if (!WARN_ON_ONCE(txn->nalloc + txn->nfree >= PMIDX_INTENT_OBJS))
		txn->free[txn->nfree++] = off;
}

/* @off among the allocs of @x[0..@n), or the frees before @x[@i]->free[@k]? */
static bool txn_listed(struct pmidx_txn *const *x, unsigned int n,
		       unsigned int i, unsigned int k, u64 off)
{
	unsigned int t, j;

	for (t = 0; t < n; t++) {
		for (j = 0; j < x[t]->nalloc; j++)
			if (x[t]->alloc[j] == off)
				return true;
		for (j = 0; t <= i && j < (t < i ? x[t]->nfree : k); j++)
			if (x[t]->free[j] == off)
				return true;
	}
	return false;
}

/**
 * pmidx_txn_check - may txns @x[0..@n) unlink what they name?
 * @bad: the first object refused
 *
 * For an engine that takes what it unlinks from words of its media,
 * which a corrupt image may have changed: called before the first of
 * the txns is armed (an operation that makes several link stores checks
 * them all before its first store). Every object a txn frees must be a
 * committed-mode object whose commit bit is set on media (not a free
 * one, not a pending one) and appear once in all the txns' lists (frees
 * and allocs). Whose object it is stays the engine's to know.
 *
 * Context: any; takes a chunk lock per object freed. Return: 0, or
 * -EUCLEAN (nothing changed: the caller cancels the txns).
 */
int pmidx_txn_check(struct pmidx_alloc *a, struct pmidx_txn *const *x,
		    unsigned int n, u64 *bad)
{
	unsigned int i, k;
	u64 off;

	for (i = 0; i < n; i++) {
		for (k = 0; k < x[i]->nfree; k++) {
			off = x[i]->free[k];
			if (!pmidx_alloc_media_committed(a, off) ||
			    txn_listed(x, n, i, k, off)) {
				*bad = off;
				return -EUCLEAN;
			}
		}
	}
	return 0;
}

/**
 * pmidx_txn_arm - persist the intent: after a crash, @word == @val decides
 * @word:  the link word (in pmem, @width bytes, naturally aligned)
 * @val:   what the link store will write there
 *
 * The header goes last and carries a crc, so a torn record is ignored.
 * On return the record is durable; the caller may do the link store.
 */
void pmidx_txn_arm(struct pmidx_alloc *a, struct pmidx_txn *txn,
		   const void *word, unsigned int width, u64 val)
{
	struct pmidx_intent *r = &a->intents[txn->slot];
	u32 k, n = txn->nalloc + txn->nfree, crc;

	WRITE_ONCE(r->word, cpu_to_le64(pmidx_off(a->pm, word)));
	WRITE_ONCE(r->val, cpu_to_le64(val));
	for (k = 0; k < n; k++)
		WRITE_ONCE(r->obj[k], cpu_to_le64(k < txn->nalloc ?
				txn->alloc[k] : txn->free[k - txn->nalloc]));
	crc = ~__crc32c_le(~0U, (const u8 *)&r->word, (2 + n) * sizeof(__le64));
	WRITE_ONCE(r->hdr, cpu_to_le64((u64)PMIDX_INTENT_MAGIC << 48 |
				       (u64)width << 44 |
				       (u64)txn->nalloc << 40 |
				       (u64)txn->nfree << 36 | crc));
	pmidx_persist(a->pm, r, offsetof(struct pmidx_intent, obj[n]));
}

static void commit_bit(struct pmidx_alloc *a, u64 off, bool on)
{
	struct pmidx_chunk *c;
	u32 slot;

	c = object_chunk(a, off, &slot);
	if (WARN_ON_ONCE(!c || !type_committed(c->type)))
		return;
	spin_lock(&c->lock);
	media_bit(a, c - a->chunks, slot, on);
	c->dirty = true;
	spin_unlock(&c->lock);
}

/**
 * pmidx_txn_end - the link store is durable: commit and free on media
 *
 * The bits are durable before the record is cleared (a crash between
 * replays the record, which agrees); the clear is durable before return
 * (a later store to the word, by anyone, must not meet a stale record).
 * Freed objects stay allocated in DRAM until pmidx_free().
 */
void pmidx_txn_end(struct pmidx_alloc *a, struct pmidx_txn *txn)
{
	u32 k;

	for (k = 0; k < txn->nalloc; k++)
		commit_bit(a, txn->alloc[k], true);
	for (k = 0; k < txn->nfree; k++)
		commit_bit(a, txn->free[k], false);
	pmidx_fence(a->pm);
	pmidx_store64_persist(a->pm, &a->intents[txn->slot].hdr, 0);
	spin_lock(&a->intent_lock);
	__clear_bit(txn->slot, a->intent_map);
	a->intent_used--;
	spin_unlock(&a->intent_lock);
	txn->slot = -1;
}
