/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Persistent chunk allocator. See alloc.c for the crash-safety argument.
 */
#ifndef _PMIDX_ALLOC_H
#define _PMIDX_ALLOC_H

#include <linux/types.h>
#include <linux/spinlock.h>
#include <linux/list.h>
#include <linux/atomic.h>
#include <linux/percpu.h>
#include <linux/mutex.h>
#include "pmem.h"
#include "pmidx_format.h"

/* Size classes 256 B .. 128 KiB; anything larger is a run of chunks. */
#define PMIDX_NR_CLASSES	10
#define PMIDX_CLASS_MAX_SIZE	(PMIDX_MIN_OBJ << (PMIDX_NR_CLASSES - 1))

enum pmidx_chunk_state {
	PMIDX_CS_FREE,		/* in the free map */
	PMIDX_CS_ACTIVE,	/* a CPU allocates from it */
	PMIDX_CS_PARTIAL,	/* on its class's partial list */
	PMIDX_CS_FULL,		/* no free slot, on no list */
	PMIDX_CS_RUN,		/* head or tail of a multi-chunk object */
};

/**
 * struct pmidx_chunk - DRAM state of one data chunk
 * @lock:    protects every field below (lock order: cpu cache, class, chunk)
 * @type:    enum pmidx_chunk_type, mirrors the persistent descriptor
 * @class:   size class of a SLAB chunk
 * @state:   enum pmidx_chunk_state
 * @dirty:   changed since the headers were last written back
 * @nr_used: objects in use (1 for a live RUN head)
 * @hint:    slot where the next search starts
 * @run:     chunks in a RUN (head only)
 * @node:    entry in the class's partial list
 * @bitmap:  slot allocation bitmap (SLAB)
 */
struct pmidx_chunk {
	spinlock_t		lock;
	u8			type;
	u8			class;
	u8			state;
	bool			dirty;
	u32			nr_used;
	u32			hint;
	u32			run;
	struct list_head	node;
	unsigned long		bitmap[BITS_TO_LONGS(PMIDX_SLOTS_MAX)];
};

/* Allocation modes: a chunk serves objects of one mode only. */
enum pmidx_alloc_mode {
	PMIDX_MODE_TRACED,	/* found again by a recovery trace */
	PMIDX_MODE_COMMITTED,	/* found again from chunk headers + intents */
	PMIDX_NR_MODES,
};

struct pmidx_alloc_class {
	spinlock_t		lock;		/* protects partial */
	struct list_head	partial;
};

struct pmidx_alloc_cpu {
	spinlock_t		lock;		/* protects active */
	struct pmidx_chunk	*active[PMIDX_NR_MODES][PMIDX_NR_CLASSES];
};

/*
 * Traced and committed indexes in one pool. A chunk serves one mode, so
 * the two kinds of objects never share a chunk, and a crash attach
 * recovers each kind its own way in one pass:
 *  - committed-mode chunks: pmidx_alloc_trace_begin() replays the intent
 *    records and loads the media bitmaps; the trace never clears them,
 *    and pmidx_alloc_mark() refuses their objects (except for the
 *    checker, pmidx_alloc_verify_begin()), so nothing the trace did not
 *    mark is freed there;
 *  - traced chunks: start empty; what the roots and the traced engines
 *    mark survives pmidx_alloc_trace_end(), the rest is free.
 * Hence the rule for a committed-mode engine: every object it links is
 * from pmidx_alloc_committed() (blobs: pmidx_blob_write_committed()),
 * its root excepted (the pool marks roots). A traced object linked by a
 * committed index is freed by the next crash attach, because no engine
 * marks it. Under the checker (@trace_all), @mark_committed enforces the
 * rule: a traced engine's mark of a committed object, or a committed
 * engine's mark of a traced one, is -EUCLEAN.
 */

/*
 * A drop that waits for its engine. A committed drop interrupted by a
 * crash is resumed at the next attach by walking the index again
 * (index_table.c), also through objects whose commit bits it had
 * cleared already. An attach by a module that does not serve the
 * engine cannot resume it; if that attach let anything reuse those
 * objects, the later walk would read another index's data: it would
 * stop early and leak the rest for good, or clear another index's
 * commit bit. So the pool freezes committed-mode space for that attach
 * (pmidx_alloc_freeze_committed(), before the allocator loads, clean or
 * after a crash) and then:
 *  - no committed-mode chunk (SLAB_C, RUN_C) is released, however empty:
 *    not at load (rebuild_lists()), not when a free empties it later
 *    (chunk_requeue(), a run's pmidx_free());
 *  - pmidx_alloc_committed() fails (0, the caller's -ENOSPC) after one
 *    pr_warn naming the waiting drop; so a committed engine's puts fail,
 *    its reads and deletes work;
 *  - creating a committed-mode index is refused (-EBUSY, index_table.c).
 * Traced allocations go on, from chunks that never held a committed
 * object since the drop began. The freeze lasts the whole attach; the
 * next attach by a module with the engine resumes the drop unfrozen and
 * releases the empty chunks as usual.
 */

/**
 * struct pmidx_txn - one link store of a committed-mode engine (DRAM)
 * @slot:   the intent record it holds, -1 before pmidx_txn_begin()
 * @nalloc: objects the store publishes (pmidx_txn_alloc())
 * @nfree:  objects the store unlinks (pmidx_txn_free())
 * @obj:    allocs first, then frees
 */
struct pmidx_txn {
	int	slot;
	u8	nalloc;
	u8	nfree;
	u64	alloc[PMIDX_INTENT_OBJS];
	u64	free[PMIDX_INTENT_OBJS];
};

/* A block of objects whose DRAM free a drop deferred (alloc.c). */
#define PMIDX_DEFER_OBJS	510	/* a 4 KiB block on 64-bit */
struct pmidx_defer {
	struct pmidx_defer	*next;
	unsigned long		n;
	u64			off[PMIDX_DEFER_OBJS];
};

struct pmidx_alloc_stats {
	u64	used_bytes;
	u64	objects;
	u64	free_chunks;
	u64	total_chunks;
};

/**
 * struct pmidx_alloc - allocator of one pool
 * @pm:         the pool's pmem mapping
 * @hdrs:       persistent chunk headers
 * @data_off:   pool offset of chunk 0
 * @nr_chunks:  data chunks
 * @chunks:     DRAM state, one per chunk
 * @free_lock:  protects @free_map and @free_chunks
 * @free_map:   bit set = chunk in use (slab, run)
 * @classes:    per size class partial lists
 * @pcpu:       per-CPU active chunks
 * @used_bytes, @objects: accounting of live objects
 * @tracing:    recovery trace in progress: marks accepted, allocs refused
 * @trace_all:  the trace covers committed-mode chunks too (a checker)
 * @mark_committed: which mode's objects pmidx_alloc_mark() accepts now:
 *              the mode of the index whose engine is marking (pool.c
 *              sets it around each open(); see "Traced and committed
 *              indexes in one pool" below)
 * @resuming:   a drop resumed at attach: pmidx_free_committed_now()
 *              skips objects already free (cleared before the crash)
 * @committed_frozen: committed-mode space frozen for this attach (see
 *              "A drop that waits for its engine" below)
 * @frozen_warned: the refusal of a committed allocation was reported
 * @frozen_why: what froze it, for that report
 * @defer_lock: protects @defer
 * @defer:      objects pmidx_free_committed_now() cleared on media whose
 *              DRAM free waits for pmidx_alloc_defer_end(); NULL when no
 *              deferral is open
 * @deferring:  a deferral is open (pmidx_alloc_defer_begin())
 * @intents:    the intent records (the INTENT chunk), NULL until enabled
 * @intent_lock: protects @intent_map
 * @intent_map: records in use
 * @intent_hint: where the next record search starts
 * @intent_used: records in use now
 * @intent_peak: most records in use at once since attach (the bound of
 *              "Records in flight" below, checked by the tests)
 * @snap:       committed-mode state saved for pmidx_alloc_verify_end()
 * @claimed:    objects an engine claimed during a clean attach, one bit
 *              per slot of every chunk (pmidx_alloc_claim()); NULL
 *              outside one
 */
struct pmidx_alloc {
	struct pmidx_pmem		*pm;
	struct pmidx_chunk_hdr		*hdrs;
	u64				data_off;
	u32				nr_chunks;
	struct pmidx_chunk		*chunks;
	spinlock_t			free_lock;
	unsigned long			*free_map;
	u32				free_chunks;
	struct pmidx_alloc_class	classes[PMIDX_NR_MODES][PMIDX_NR_CLASSES];
	struct pmidx_alloc_cpu __percpu	*pcpu;
	atomic64_t			used_bytes;
	atomic64_t			objects;
	bool				tracing;
	bool				trace_all;
	bool				mark_committed;
	bool				resuming;
	bool				committed_frozen;
	bool				frozen_warned;
	char				frozen_why[128];
	struct mutex			defer_lock;
	struct pmidx_defer		*defer;
	bool				deferring;
	struct pmidx_intent		*intents;
	spinlock_t			intent_lock;
	unsigned long			*intent_map;
	u32				intent_hint;
	u32				intent_used;
	u32				intent_peak;
	unsigned long			*snap;
	unsigned long			*claimed;
};

#define PMIDX_NR_INTENTS	(PMIDX_CHUNK_SIZE / PMIDX_INTENT_SIZE)

int pmidx_alloc_init(struct pmidx_alloc *a, struct pmidx_pmem *pm,
		     u64 hdr_off, u64 data_off, u32 nr_chunks);
void pmidx_alloc_destroy(struct pmidx_alloc *a);

void pmidx_alloc_freeze_committed(struct pmidx_alloc *a, const char *why);
int pmidx_alloc_load_clean(struct pmidx_alloc *a, const char **why);
int pmidx_alloc_trace_begin(struct pmidx_alloc *a, const char **why);
int pmidx_alloc_mark(struct pmidx_alloc *a, u64 off);
int pmidx_alloc_mark_named(struct pmidx_alloc *a, u64 off);
void pmidx_alloc_trace_end(struct pmidx_alloc *a);
int pmidx_alloc_claim_begin(struct pmidx_alloc *a);
int pmidx_alloc_claim(struct pmidx_alloc *a, u64 off);
int pmidx_alloc_claim_committed(struct pmidx_alloc *a, u64 off);
void pmidx_alloc_claim_end(struct pmidx_alloc *a);
void pmidx_alloc_writeback(struct pmidx_alloc *a);
void pmidx_alloc_format(struct pmidx_pmem *pm, u64 hdr_off, u32 nr_chunks);

u64 pmidx_alloc(struct pmidx_alloc *a, size_t size);
u64 pmidx_alloc_committed(struct pmidx_alloc *a, size_t size);
bool pmidx_alloc_is_committed(struct pmidx_alloc *a, u64 off);
bool pmidx_alloc_media_committed(struct pmidx_alloc *a, u64 off);
u64 pmidx_alloc_media_count(struct pmidx_alloc *a);
int pmidx_alloc_intents_enable(struct pmidx_alloc *a);

/*
 * Records in flight. An engine holds a record from pmidx_txn_begin() to
 * pmidx_txn_end() or pmidx_txn_cancel() inside one section with
 * preemption off (an epoch section), so a CPU holds only the records of
 * the one section it runs:
 *  - one in a data operation (b3: a leaf's link store);
 *  - up to PMIDX_TXN_SMO_MAX in a structure modification, which takes
 *    every record it needs before its first store, so that none fails
 *    halfway (b3: a split holds two, a redistribution three); an index
 *    runs one at a time (b3: t->smo).
 * So at most nr_cpu_ids + (PMIDX_TXN_SMO_MAX - 1) * PMIDX_MAX_INDEXES
 * records are held at once. The intent chunk holds PMIDX_NR_INTENTS
 * (one chunk is the format: a module that finds two refuses the pool),
 * enough for PMIDX_TXN_CPUS_MAX CPUs. Above that, committed mode is
 * refused (pmidx_txn_cpus_ok()): attaching a pool that has a committed
 * index (pool.c check_mode(), before the attach writes anything), and
 * creating one.
 *
 * So pmidx_txn_begin() fails with -EBUSY only when a bug leaks records.
 * The engine must not wait for a record there (it holds a spinlock): it
 * does
 *	if (WARN_ON_ONCE(pmidx_txn_begin(a, &txn)))
 *		goto unwind;	(free its pending objects with pmidx_free())
 * and fails the operation with -EBUSY before any store, so nothing
 * reached media and the index is unchanged.
 */
#define PMIDX_TXN_SMO_MAX	3
#define PMIDX_TXN_CPUS_MAX	(PMIDX_NR_INTENTS - \
				 (PMIDX_TXN_SMO_MAX - 1) * PMIDX_MAX_INDEXES)
#ifdef PMIDX_TEST_ENGINES
extern unsigned int pmidx_test_nr_cpus;	/* the CPUs it checks, 0: nr_cpu_ids */
#endif
bool pmidx_txn_cpus_ok(void);
int pmidx_txn_begin(struct pmidx_alloc *a, struct pmidx_txn *txn);
void pmidx_txn_alloc(struct pmidx_txn *txn, u64 off);
void pmidx_txn_free(struct pmidx_txn *txn, u64 off);
int pmidx_txn_check(struct pmidx_alloc *a, struct pmidx_txn *const *x,
		    unsigned int n, u64 *bad);
void pmidx_txn_arm(struct pmidx_alloc *a, struct pmidx_txn *txn,
		   const void *word, unsigned int width, u64 val);
void pmidx_txn_end(struct pmidx_alloc *a, struct pmidx_txn *txn);
void pmidx_txn_cancel(struct pmidx_alloc *a, struct pmidx_txn *txn);

int pmidx_alloc_verify_begin(struct pmidx_alloc *a);
int pmidx_alloc_verify_end(struct pmidx_alloc *a, u64 *bad_off);
void pmidx_free(struct pmidx_alloc *a, u64 off);
void pmidx_free_committed_now(struct pmidx_alloc *a, u64 off);
void pmidx_alloc_defer_begin(struct pmidx_alloc *a);
void pmidx_alloc_defer_end(struct pmidx_alloc *a);
size_t pmidx_alloc_size(struct pmidx_alloc *a, u64 off);
bool pmidx_alloc_valid(struct pmidx_alloc *a, u64 off, size_t len);
void pmidx_alloc_get_stats(struct pmidx_alloc *a, struct pmidx_alloc_stats *s);

#endif /* _PMIDX_ALLOC_H */
