/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Toy engines for the core's tests (selftests/user/toy-engine.c): a hash
 * table of persistent nodes, in committed mode or traced mode, served
 * under engine ids the build does not use (core/engine.h,
 * pmidx_test_engines[]).
 */
#ifndef _PMIDX_TOY_ENGINE_H
#define _PMIDX_TOY_ENGINE_H

#include "core/engine.h"

#define TOY_COMMITTED_ID	PMIDX_ENGINE_PFART
#define TOY_TRACED_ID		PMIDX_ENGINE_LODGE

extern const struct pmidx_engine_ops toy_committed_ops;
extern const struct pmidx_engine_ops toy_traced_ops;

/*
 * Serve TOY_COMMITTED_ID and TOY_TRACED_ID with the toys, or with no engine
 * at all (not even the real engines of those ids: "not built in").
 */
void toy_engines_register(bool on);

/* Live nodes of a toy index (walks its root). */
u64 toy_nodes(struct pmidx_index *idx);

/*
 * What a crash during drop-index leaves, made on purpose: the entry is
 * DROPPING and the commit bits of the first @n nodes are cleared; the
 * index is unpublished. The caller then abandons the pool
 * (toy_abandon()).
 */
void toy_half_drop(struct pmidx_pool *pool, const char *name, u64 n);

/* Detach without a clean state, as a crash would leave it (no writeback). */
void toy_abandon(struct pmidx_pool *pool);

#endif /* _PMIDX_TOY_ENGINE_H */
