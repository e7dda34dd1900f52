/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The engine interface: every index engine (kmod/engines/<name>/)
 * implements these operations over the pool's core services.
 *
 * Keys (1..PMIDX_KEY_MAX bytes, memcmp order, shorter first on a common
 * prefix) and values (0..PMIDX_VALUE_MAX bytes) arrive in kernel memory,
 * already validated by the dispatcher (dispatch.c).
 *
 * Durability: put/del return only after the change is persistent (flushed
 * and fenced under ADR) and visible to every later get.
 *
 * No-wait writes (PMIDX_WRITE_NOWAIT in put/del @flags; io_uring's
 * non-blocking first issue, dispatch.c): the engine must not sleep (no
 * mutex, no sleeping allocation, no wait for a checker's freeze, a GC or
 * another writer's sleeping section, no cond_resched()). Where it would,
 * it returns -EAGAIN (an atomic allocation that failed, too: the blocking
 * run may find memory), and only before the operation has changed anything
 * another thread or a recovery could see: the caller runs the whole
 * operation again where it may sleep, so a change made before -EAGAIN
 * would be made twice. (Work that keeps every key's value, such as
 * flushing a buffer, may have been done.) Past its change it may sleep
 * only where memory has run out and it cannot refuse any more (utree's
 * publish refilling its split stash, its README): the submission then
 * waits, nothing else goes wrong. The fast path, a write that needs no
 * structure modification, should not need -EAGAIN. An engine
 * that does not honour the flag leaves PMIDX_ENGINE_F_NOWAIT unset and
 * the dispatcher never passes it.
 *
 * Recovery: open() runs at attach. With @rc->clean the engine may trust
 * what it saved at close(clean = true). Otherwise the allocator is tracing
 * (alloc.c) and the engine must not allocate until open() returns. With
 * @rc->mark it must call pmidx_alloc_mark() exactly once for every
 * allocator object it still references (its root is marked by the pool).
 * The pool sets @rc->mark per index: !@rc->clean for a traced engine.
 *
 * Committed mode (PMIDX_ENGINE_F_COMMITTED): the engine allocates every
 * object but its root with pmidx_alloc_committed() (blobs:
 * pmidx_blob_write_committed()) and makes every store that links or
 * unlinks an object inside a struct pmidx_txn (alloc.c: arm, link store,
 * end), each held inside one section with preemption off, at most one in
 * a data operation and PMIDX_TXN_SMO_MAX in a structure modification, of
 * which an index runs one at a time (alloc.h, "Records in flight"). The
 * core does the rest:
 *  - index creation enables the pool's intent records and flags the
 *    index committed on media (PMIDX_INDEX_F_COMMITTED) before open();
 *    the engine never calls pmidx_pool_enable_intents() itself (open()
 *    also runs inside a crash attach's trace, where it cannot);
 *  - attach refuses the pool (-EUCLEAN) when a committed index has no
 *    intent chunk or its mode differs from its engine's, and
 *    (-EOPNOTSUPP) on more CPUs than the intents cover;
 *  - a crash needs no trace: open() gets !@rc->mark (nothing to trace)
 *    unless @rc->trace, the checker, asks it to mark every object as
 *    above (pool.c compares that trace with what the allocator
 *    recovered from its own metadata);
 *  - destroy() frees each object with pmidx_free_committed_now(), never
 *    through the epochs, and may then meet a structure a crashed drop
 *    left half-freed (the core resumes it at attach): it must free what
 *    it reaches and tolerate nothing else (alloc.c).
 */
#ifndef _PMIDX_ENGINE_H
#define _PMIDX_ENGINE_H

#include <linux/types.h>
#include "pool.h"

struct pmidx_recover {
	bool		clean;		/* previous detach was clean */
	bool		trace;		/* the checker runs (committed mode) */
	bool		mark;		/* mark every object (see Recovery) */
	unsigned int	threads;	/* parallelism allowed for rebuilds */
};

#define PMIDX_ENGINE_F_COMMITTED	(1U << 0)	/* see Recovery above */
#define PMIDX_ENGINE_F_NOWAIT		(1U << 1)	/* see No-wait writes */

/*
 * put/del @flags, beside the uapi's PMIDX_PUT_* (16 bits in a command, so
 * never from userspace): see No-wait writes above.
 */
#define PMIDX_WRITE_NOWAIT		(1U << 31)

/**
 * struct pmidx_scan_sink - where a scan delivers records
 * @emit: called per record in ascending key order; returns 0 to go on,
 *        1 to stop (the caller's limits are reached), < 0 on error.
 */
struct pmidx_scan_sink {
	int (*emit)(struct pmidx_scan_sink *sink, const u8 *key, u32 klen,
		    const u8 *val, u32 vlen);
};

struct pmidx_engine_ops {
	u32		id;		/* enum pmidx_engine_id */
	const char	*name;
	u32		flags;		/* PMIDX_ENGINE_F_* */

	/*
	 * Optional module-wide state (slab caches): global_init() runs once
	 * at module load, before any pool can attach, and global_exit() at
	 * unload, after every pool has detached. Context: may sleep.
	 */
	int	(*global_init)(void);
	void	(*global_exit)(void);

	int	(*open)(struct pmidx_index *idx, const struct pmidx_recover *rc);
	/* @clean: a clean detach; the engine may save state for open() */
	void	(*close)(struct pmidx_index *idx, bool clean);
	/* drop-index: free every object (the root excepted), then close */
	void	(*destroy)(struct pmidx_index *idx);

	/*
	 * *vlen: buffer size in, value length out (even if it did not fit);
	 * a value that fits fills the first *vlen bytes of @val, all of
	 * which go back to the caller.
	 */
	int	(*get)(struct pmidx_index *idx, const u8 *key, u32 klen,
		       u8 *val, u32 *vlen);
	/* @flags: PMIDX_PUT_INSERT, PMIDX_WRITE_NOWAIT */
	int	(*put)(struct pmidx_index *idx, const u8 *key, u32 klen,
		       const u8 *val, u32 vlen, u32 flags);
	/* @flags: 0 or PMIDX_WRITE_NOWAIT */
	int	(*del)(struct pmidx_index *idx, const u8 *key, u32 klen,
		       u32 flags);
	/* from @start (after it when @after), below @end when @end_len */
	int	(*scan)(struct pmidx_index *idx, const u8 *start, u32 start_len,
			bool after, const u8 *end, u32 end_len,
			struct pmidx_scan_sink *sink);
	/* structural checker; *keys := number of live keys */
	int	(*check)(struct pmidx_index *idx, u64 *keys, const char **why);
	void	(*stats)(struct pmidx_index *idx, struct pmidx_stats *s);
};

const struct pmidx_engine_ops *pmidx_engine_ops(u32 engine);
int pmidx_engines_init(void);
void pmidx_engines_exit(void);
#ifdef PMIDX_TEST_ENGINES
extern const struct pmidx_engine_ops *pmidx_test_engines[__PMIDX_ENGINE_MAX];
/* in pmidx_test_engines[]: the id is served by no engine, not even a real one */
extern const struct pmidx_engine_ops pmidx_test_engine_absent;
#endif

/* Engines built in (kmod/engines/<name>/) */
extern const struct pmidx_engine_ops pmidx_ccl_ops;
extern const struct pmidx_engine_ops pmidx_utree_ops;
extern const struct pmidx_engine_ops pmidx_b3_ops;
extern const struct pmidx_engine_ops pmidx_lodge_ops;
extern const struct pmidx_engine_ops pmidx_pfart_ops;

/* memcmp order, shorter first on a common prefix */
static inline int pmidx_key_cmp(const u8 *a, u32 alen, const u8 *b, u32 blen)
{
	int c = memcmp(a, b, min(alen, blen));

	if (c)
		return c;
	return alen < blen ? -1 : alen > blen;
}

#endif /* _PMIDX_ENGINE_H */
