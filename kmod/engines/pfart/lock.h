/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Version locks in the node headers (§3.1: "Lock" and "Generation").
 *
 * The @lock word of every node is generation | version | obsolete |
 * locked (format.h). It lives in pmem and is never flushed (declared so
 * to the crash simulator: pmidx_lose_ok()): under ADR it may reach the
 * media or not, under eADR it always does. Either way its
 * bits mean something only under the generation that wrote them: pfart.gen
 * is above every generation found in the pool at attach (recovery.c), so
 * a word of an earlier open (left locked by a crash) reads as unlocked and
 * the first locker of this open takes it over with one CAS; nothing is
 * written at restart.
 *
 * Readers (optimistic lock coupling): pfart_read_begin() gives a version
 * (false: locked or obsolete now, restart), the node is read, then
 * pfart_read_check() says whether the version held. Writers lock with
 * pfart_lock_at() from a version a descent validated (so the node is
 * still where the descent found it), or pfart_lock() (an SMO, spinning);
 * pfart_unlock() moves the version on, pfart_obsolete() marks a node an
 * SMO replaced (it stays locked: writers waiting on it restart).
 */
#ifndef _PMIDX_PFART_LOCK_H
#define _PMIDX_PFART_LOCK_H

#include <linux/atomic.h>
#include <linux/processor.h>
#include "core/pmem.h"
#include "pfart.h"

static inline u64 pfart_lk_raw(const __le64 *lk)
{
	return le64_to_cpu(READ_ONCE(*lk));
}

/* locked or obsolete in this generation */
static inline bool pfart_lk_busy(const struct pfart *t, u64 w)
{
	return pfart_lk_gen(w) == t->gen &&
	       (w & (PFART_LK_LOCKED | PFART_LK_OBSOLETE));
}

static inline bool pfart_read_begin(const struct pfart *t, const __le64 *lk,
				    u64 *v)
{
	/* acquire: the node is read after its version */
	u64 w = le64_to_cpu(smp_load_acquire(lk));

	if (pfart_lk_busy(t, w))
		return false;
	*v = w;
	return true;
}

static inline bool pfart_read_check(const __le64 *lk, u64 v)
{
	/* the node's reads happen before the version is read again */
	smp_rmb();
	return pfart_lk_raw(lk) == v;
}

/* the word this open's locker writes over @w */
static inline u64 pfart_lk_next(const struct pfart *t, u64 w, u64 bits)
{
	u64 ver = pfart_lk_gen(w) == t->gen ? w & PFART_LK_VER_MASK : 0;

	return (u64)t->gen << PFART_LK_GEN_SHIFT | ver | bits;
}

/* Lock from version @v. Return: false when the word moved (restart). */
static inline bool pfart_lock_at(const struct pfart *t, __le64 *lk, u64 v)
{
	__le64 old = cpu_to_le64(v);

	if (pfart_lk_busy(t, v))
		return false;
	return cmpxchg(lk, old,
		       cpu_to_le64(pfart_lk_next(t, v, PFART_LK_LOCKED))) == old;
}

/*
 * Lock, spinning while a leaf writer holds it. Return: false for an
 * obsolete node (an SMO never meets one on its path: a bug, or a
 * damaged tree).
 */
static inline bool pfart_lock(const struct pfart *t, __le64 *lk)
{
	for (;;) {
		u64 w = pfart_lk_raw(lk);

		if (pfart_lk_gen(w) == t->gen && (w & PFART_LK_OBSOLETE))
			return false;
		if (pfart_lock_at(t, lk, w))
			return true;
		cpu_relax();
	}
}

static inline void pfart_unlock(const struct pfart *t, __le64 *lk)
{
	u64 w = pfart_lk_raw(lk);
	u64 ver = ((w & PFART_LK_VER_MASK) + PFART_LK_VER_ONE) &
		  PFART_LK_VER_MASK;

	/* release: the node's stores happen before the version moves */
	smp_store_release(lk, cpu_to_le64((w & ~(PFART_LK_VER_MASK |
						 PFART_LK_LOCKED)) | ver));
	pmidx_lose_ok(t->pm, lk, sizeof(*lk));
}

/* a locked node an SMO replaced: locked for good, readers restart */
static inline void pfart_obsolete(const struct pfart *t, __le64 *lk)
{
	u64 w = pfart_lk_raw(lk);

	/* release: the commit store happens before readers see this */
	smp_store_release(lk, cpu_to_le64(w | PFART_LK_OBSOLETE |
					  PFART_LK_LOCKED));
	pmidx_lose_ok(t->pm, lk, sizeof(*lk));
}

static inline __le64 *pfart_lk(void *node)
{
	/* the same offset in inner nodes and leaf arrays (format.h) */
	return &((struct pfart_leaf *)node)->lock;
}

#endif /* _PMIDX_PFART_LOCK_H */
