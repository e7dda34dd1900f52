/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmidx-embedded.h - hooks of the embedded libpmidx archive
 * (build/lib/libpmidx-embedded.a, libpmidx/src/backend_file.c) for
 * pmidx-bench. Not libpmidx's API: not in libpmidx.so, not installed.
 * Each answers -EOPNOTSUPP for a pool that is not a pool file.
 */
#ifndef PMIDX_EMBEDDED_H
#define PMIDX_EMBEDDED_H

#include <stddef.h>
#include <stdint.h>

struct pmidx_pool;

/* The pool's flush and fence counters, its mapping prefaulted. */
int pmidx_embedded_pmem_counters(struct pmidx_pool *pool, uint64_t *flushes,
				 uint64_t *fences);
int pmidx_embedded_prefault(struct pmidx_pool *pool);
/* The pmem backend's mode; forced to "volatile", "none", "clwb", ...
 * (NULL: back to the usual choice). */
const char *pmidx_embedded_pmem_hw(void);
int pmidx_embedded_force_pmem_hw(const char *name);

/*
 * The in-kernel API's calls (kmod/core/direct.c) on index @index of a
 * pool file, held until pmidx_embedded_direct_close(), which comes before
 * the pool's close. For pmidx-bench's kapi path.
 */
struct pmidx_embedded_direct;
int pmidx_embedded_direct_open(struct pmidx_pool *pool, const char *index,
			       struct pmidx_embedded_direct **out);
void pmidx_embedded_direct_close(struct pmidx_embedded_direct *d);
int pmidx_embedded_direct_get(struct pmidx_embedded_direct *d,
			      const void *key, uint32_t key_len, void *val,
			      uint32_t *val_len);
int pmidx_embedded_direct_put(struct pmidx_embedded_direct *d,
			      const void *key, uint32_t key_len,
			      const void *val, uint32_t val_len, uint32_t flags);
int pmidx_embedded_direct_del(struct pmidx_embedded_direct *d,
			      const void *key, uint32_t key_len);
/* Return: records copied into @buf (at most @count, fewer when @buf
 * fills), or -errno (-ENOSPC: not even one fits). */
int pmidx_embedded_direct_scan(struct pmidx_embedded_direct *d,
			       const void *start, uint32_t start_len,
			       uint32_t count, void *buf, size_t cap);

#endif /* PMIDX_EMBEDDED_H */
