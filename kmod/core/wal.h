/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Per-CPU write-ahead log in chunks (see wal.c for the protocol).
 *
 * A log is a set of chunks (allocator objects, 4 MiB by default) listed in
 * a persistent directory object that the engine links from its root, so
 * recovery finds every chunk, in use or free. Each CPU appends to its own
 * current chunk of one of two sides (0/1), which lets a garbage collector
 * write a fresh side while the old one is still the backup, then recycle
 * the old side as a whole.
 *
 * An entry is 32 bytes, aligned to 32 so that it never straddles a cache
 * line: two 8-byte payload words, a 64-bit check over the entry, and the
 * meta word (48-bit timestamp, 4 engine flag bits, the chunk's 12-bit
 * generation) stored last. A line persists as a prefix of its stores in
 * program order, so a meta word of the chunk's current generation on
 * media means the whole entry is there: a torn entry cannot be read as
 * valid (wal.c, "Entries", "Generations"). The check only catches
 * corruption.
 *
 * Lifetime rule for the objects an entry names. Entries refer to other
 * pool objects (an engine's blobs) by offset, and recovery decodes every
 * entry of a side until that side is recycled. So an object that an entry
 * may name must stay allocated and unchanged until every side that may
 * hold such an entry has been recycled; freed earlier, it could be reused
 * and a stale entry would decode someone else's bytes as live data.
 * Engines therefore never free such an object directly: they hand it to
 * pmidx_wal_retire(), which holds it until both sides have been recycled
 * since the call and then passes it to the engine's @release callback
 * (which retires it through the epochs, for DRAM readers). After a crash
 * the held set is lost with DRAM: recovery must find it again by marking,
 * with pmidx_alloc_mark_named(), every object the sealed entries name and
 * nothing else owns, and handing those to pmidx_wal_retire() again. A
 * log closed with objects still held marks its pool for a recovery trace
 * at the next attach, which finds them that way.
 */
#ifndef _PMIDX_WAL_H
#define _PMIDX_WAL_H

#include <linux/list.h>
#include <linux/percpu.h>
#include <linux/percpu_counter.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include "pool.h"

#define PMIDX_WAL_DIR_MAGIC	0x5249444c41575850ULL	/* "PXWALDIR" */
/* 3: chunk generations; 2 (zero-ahead only) reads as generation 0 */
#define PMIDX_WAL_VERSION	3
#define PMIDX_WAL_DIR_SIZE	16384
#define PMIDX_WAL_DIR_HDR	64
#define PMIDX_WAL_NSLOTS	((PMIDX_WAL_DIR_SIZE - PMIDX_WAL_DIR_HDR) / 8)

/*
 * Directory slot word: generation:12 | chunk offset:44 (256-byte aligned,
 * below 4 PiB) | 0:3 | clean:1 | state:4. The generation tags the
 * entries of the chunk's current use; "clean" says that no entry of an
 * earlier use carries it (wal.c, "Generations").
 */
#define PMIDX_WAL_SLOT_STATE	0x0fULL
#define PMIDX_WAL_SLOT_EMPTY	0	/* the whole word is 0 */
#define PMIDX_WAL_SLOT_FREE	1	/* chunk on the free list */
#define PMIDX_WAL_SLOT_SIDE0	2	/* in use by side 0 */
#define PMIDX_WAL_SLOT_SIDE1	3	/* in use by side 1 */
#define PMIDX_WAL_SLOT_CLEAN	0x10ULL
#define PMIDX_WAL_SLOT_RSVD	0xe0ULL
#define PMIDX_WAL_GEN_SHIFT	52
#define PMIDX_WAL_GEN_MAX	0xfffU
#define PMIDX_WAL_SLOT_OFF	(~0ULL >> (64 - PMIDX_WAL_GEN_SHIFT) & ~0xffULL)

#define PMIDX_WAL_ENT_SIZE	32
#define PMIDX_WAL_TS_BITS	48
#define PMIDX_WAL_TS_MAX	((1ULL << PMIDX_WAL_TS_BITS) - 1)
#define PMIDX_WAL_FLAGS_SHIFT	PMIDX_WAL_TS_BITS
#define PMIDX_WAL_MIN_CHUNK	(256U << 10)

/* The chunk offset a directory slot word names. */
static inline u64 pmidx_wal_slot_off(u64 word)
{
	return word & PMIDX_WAL_SLOT_OFF;
}

struct pmidx_wal_dir {
	__le64	magic;
	__le32	nslots;
	__le32	version;
	__le64	reserved[6];
	__le64	slot[];
};

struct pmidx_wal_ent {
	__le64	w0;
	__le64	w1;
	__le64	check;		/* hash of w0, w1 and meta */
	__le64	meta;		/* ts:48 | flags:4 | gen:12, the commit: last */
};

/* An entry as handed to the replay callback. */
struct pmidx_wal_rec {
	u64	w0, w1;
	u64	ts;
	u8	flags;
};

/**
 * struct pmidx_wal_chunk - DRAM state of one log chunk
 * @node:  on the free list or on a side's used list (wal->lock)
 * @off:   pool offset of the chunk
 * @size:  bytes
 * @used:  bytes appended (the high-water mark), under the owning CPU's
 *         lock while current, stable once on a list only
 * @slot:  directory slot
 * @gen:   generation of the current (or last) use, 0 before the first
 * @clean: no entry of an earlier use carries @gen (else appends zero
 *         ahead); both change only when the chunk is taken or recycled
 */
struct pmidx_wal_chunk {
	struct list_head	node;
	u64			off;
	u32			size;
	u32			used;
	u32			slot;
	u16			gen;
	bool			clean;
};

struct pmidx_wal_cpu {
	spinlock_t		lock;		/* protects cur and appends */
	struct pmidx_wal_chunk	*cur[2];
};

#define PMIDX_WAL_HELD_BLOCK	507	/* a block is 4 KiB */
#define PMIDX_WAL_HELD_SPARES	2	/* blocks made ahead (pmidx_wal_prepare()) */

/*
 * Objects handed to pmidx_wal_retire() while the recycle counts were
 * @recycled: released once both counts have moved past them.
 */
struct pmidx_wal_held {
	struct list_head	node;
	u64			recycled[2];
	u32			n;
	u64			off[PMIDX_WAL_HELD_BLOCK];
};

/**
 * struct pmidx_wal_cfg - how an engine opens its log
 * @chunk_size: size of chunks allocated from now on
 * @trace:      recovery trace: mark the directory and every chunk
 * @release:    called with an object pmidx_wal_retire() held, once no
 *              entry can name it any more (process context, may not sleep)
 * @ctx:        for @release
 */
struct pmidx_wal_cfg {
	u32	chunk_size;
	bool	trace;
	void	(*release)(void *ctx, u64 off);
	void	*ctx;
};

/**
 * struct pmidx_wal - an open log
 * @lock:        protects @free, @used, @slot_map, @nfree
 * @chunk_size:  size of new chunks
 * @max_free:    free chunks kept beyond this go back to the allocator
 * @used_bytes:  bytes appended to chunks on the used lists (log size),
 *               counted per CPU so that appends on different CPUs share
 *               no cache line (pmidx_wal_bytes() reads it approximately)
 * @chunk_bytes: bytes of every chunk the log holds (used and free)
 * @written:     an append happened since open (set once, read-mostly)
 * @held_lock:   protects @held, @held_spare, @nspare and @recycled
 *               (innermost lock; no allocation under it)
 * @held:        blocks of held objects, oldest first
 * @held_spare:  the next blocks (@nspare of them), made where sleeping is
 *               allowed (pmidx_wal_prepare(), also by @held_work): a
 *               retire inside an engine's section needs no memory
 * @recycled:    per side, recycles completed (chunks durably FREE)
 * @held_bytes:  allocator bytes of the held objects
 * @abandoned:   an object could not be held (no memory): it stays
 *               allocated until a recovery trace finds it
 */
struct pmidx_wal {
	struct pmidx_pool		*pool;
	struct pmidx_wal_dir		*dir;
	u64				dir_off;
	u32				nslots;
	u32				chunk_size;
	u32				max_free;
	spinlock_t			lock;
	struct list_head		free;
	struct list_head		used[2];
	u32				nfree;
	unsigned long			*slot_map;
	struct pmidx_wal_cpu __percpu	*pcpu;
	struct percpu_counter		used_bytes;
	atomic64_t			chunk_bytes;
	bool				written;
	void				(*release)(void *ctx, u64 off);
	void				*release_ctx;
	spinlock_t			held_lock;
	struct list_head		held;
	struct list_head		held_spare;
	unsigned int			nspare;
	struct work_struct		held_work;
	u64				recycled[2];
	atomic64_t			held_bytes;
	bool				abandoned;
};

u64 pmidx_wal_format(struct pmidx_pool *pool);
int pmidx_wal_open(struct pmidx_pool *pool, u64 dir_off,
		   const struct pmidx_wal_cfg *cfg, struct pmidx_wal **out);
int pmidx_wal_replay(struct pmidx_wal *w, unsigned int threads,
		     int (*fn)(void *ctx, unsigned int worker,
			       const struct pmidx_wal_rec *rec),
		     void *ctx);
void pmidx_wal_ent_encode(struct pmidx_wal_ent *e, u64 w0, u64 w1, u64 ts,
			  u8 flags, u16 gen);
int pmidx_wal_append(struct pmidx_wal *w, unsigned int side, u64 w0, u64 w1,
		     u64 ts, u8 flags);
void pmidx_wal_recycle(struct pmidx_wal *w, unsigned int side);
void pmidx_wal_retire(struct pmidx_wal *w, u64 off);
int pmidx_wal_prepare(struct pmidx_wal *w);
int pmidx_wal_reserve(struct pmidx_wal *w, unsigned int n);
void pmidx_wal_close(struct pmidx_wal *w);
void pmidx_wal_destroy(struct pmidx_wal *w);

/*
 * The log's size for decisions that tolerate a lag (when to collect): up
 * to PMIDX_WAL_COUNT_BATCH bytes per CPU behind. The exact size, for
 * reports and for "is the log empty", is pmidx_wal_bytes_exact().
 */
#define PMIDX_WAL_COUNT_BATCH	(32 * PMIDX_WAL_ENT_SIZE)

static inline u64 pmidx_wal_bytes(struct pmidx_wal *w)
{
	return percpu_counter_read_positive(&w->used_bytes);
}

static inline u64 pmidx_wal_bytes_exact(struct pmidx_wal *w)
{
	return percpu_counter_sum_positive(&w->used_bytes);
}

/* Has anything been appended since the log was opened? */
static inline bool pmidx_wal_written(struct pmidx_wal *w)
{
	return READ_ONCE(w->written);
}

/* Bytes of objects pmidx_wal_retire() holds for the log. */
static inline u64 pmidx_wal_held_bytes(struct pmidx_wal *w)
{
	return atomic64_read(&w->held_bytes);
}

#endif /* _PMIDX_WAL_H */
