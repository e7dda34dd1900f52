/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Direct calls: an index's data operations on the caller's own buffers,
 * with the checks the dispatcher (dispatch.c) makes for the user paths,
 * and nothing else: no copy, no per-call pin. For callers that hold the
 * index (pmidx_index_hold()) for as long as they call: the in-kernel API
 * (kmod/kapi.c) and, in the userspace build, pmidx-bench's kapi path.
 *
 * Context: process context; the engine's own rules (engine.h) apply.
 */
#ifndef _PMIDX_CORE_DIRECT_H
#define _PMIDX_CORE_DIRECT_H

#include <linux/types.h>

struct pmidx_index;

/*
 * A scan's record, in ascending key order; the buffers are valid only
 * during the call. Return 0 to go on, 1 to stop, or a negative errno.
 */
typedef int (*pmidx_direct_scan_fn)(void *priv, const void *key, u32 key_len,
				    const void *val, u32 val_len);

int pmidx_direct_get(struct pmidx_index *idx, const void *key, u32 key_len,
		     void *val, u32 *val_len);
int pmidx_direct_put(struct pmidx_index *idx, const void *key, u32 key_len,
		     const void *val, u32 val_len, u32 flags);
int pmidx_direct_del(struct pmidx_index *idx, const void *key, u32 key_len);
int pmidx_direct_scan(struct pmidx_index *idx, const void *start,
		      u32 start_len, const void *end, u32 end_len, u32 flags,
		      pmidx_direct_scan_fn fn, void *priv);

#endif /* _PMIDX_CORE_DIRECT_H */
