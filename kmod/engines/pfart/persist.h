/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The adaptive flush (paper §3.2-3.3, Algorithm 1), the only way the
 * engine makes its pmem stores durable.
 *
 *  ADR:  every write is flushed and fenced (pmidx_flush + pmidx_fence):
 *        nothing is durable before its fence. No shortcut is ever taken
 *        here: pfart.eadr is the pool's mode, read at open.
 *  eADR: the cache is in the persistence domain. A write of at most
 *        PFART_EADR_FLUSH_MIN bytes is left to it; a larger one is
 *        written back without a fence (pmidx_flush_nofence(): bandwidth,
 *        not durability). What orders two writes for a crash is their
 *        store order (x86-TSO: stores reach the cache in program order),
 *        so the fence becomes a store barrier (smp_wmb(): a compiler
 *        barrier on x86).
 *
 * pfart_wb() writes back one range of a batch, pfart_fence() ends the
 * batch, pfart_persist() is both for one range.
 */
#ifndef _PMIDX_PFART_PERSIST_H
#define _PMIDX_PFART_PERSIST_H

#include "core/pmem.h"
#include "pfart.h"

#define PFART_EADR_FLUSH_MIN	256

static inline void pfart_wb(struct pfart *t, const void *p, size_t len)
{
	if (!t->eadr) {
		pmidx_flush(t->pm, p, len);
	} else if (len > PFART_EADR_FLUSH_MIN) {
		pmidx_flush_nofence(t->pm, p, len);
		pfart_stat_inc(t, nofence_wbs);
	} else {
		pfart_stat_inc(t, eadr_skips);
	}
}

static inline void pfart_fence(struct pfart *t)
{
	if (!t->eadr)
		pmidx_fence(t->pm);
	else
		smp_wmb();	/* store order is persistence order */
}

static inline void pfart_persist(struct pfart *t, const void *p, size_t len)
{
	pfart_wb(t, p, len);
	pfart_fence(t);
}

#endif /* _PMIDX_PFART_PERSIST_H */
