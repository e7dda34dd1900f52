/* SPDX-License-Identifier: GPL-2.0 */
/*
 * pmidx in-kernel API: what kernel clients (file-system metadata
 * prototypes and the like) call to use a pmidx index without a syscall.
 *
 * A client opens an index by pool and index name and gets a handle. The
 * handle pins the pool: detach and drop-index fail with -EBUSY until it
 * is closed, exactly as for an open /dev/pmidxN. Operations have the
 * semantics of the data path in uapi/linux/pmidx.h (keys 1..PMIDX_KEY_MAX
 * bytes in memcmp order, values 0..PMIDX_VALUE_MAX bytes, put and del
 * durable on return) but take kernel buffers and never copy through a
 * bounce buffer.
 *
 * Context: every call may sleep (process context, no spinlocks held).
 * A handle may be used by any number of threads at once; closing it
 * while calls are running on it is a bug.
 */
#ifndef _LINUX_PMIDX_KAPI_H
#define _LINUX_PMIDX_KAPI_H

#include <linux/types.h>
#include <linux/pmidx.h>

struct pmidx_handle;

/*
 * Called per record of pmidx_scan() in ascending key order. Return 0 to
 * go on, 1 to stop, or a negative errno to stop and fail the scan with it.
 */
typedef int (*pmidx_scan_fn)(void *priv, const void *key, u32 key_len,
			     const void *val, u32 val_len);

struct pmidx_handle *pmidx_index_open(const char *pool, const char *index);
void pmidx_index_close(struct pmidx_handle *h);
u32 pmidx_index_engine(const struct pmidx_handle *h);

int pmidx_get(struct pmidx_handle *h, const void *key, u32 key_len,
	      void *val, u32 *val_len);
int pmidx_put(struct pmidx_handle *h, const void *key, u32 key_len,
	      const void *val, u32 val_len, u32 flags);
int pmidx_del(struct pmidx_handle *h, const void *key, u32 key_len);
int pmidx_scan(struct pmidx_handle *h, const void *start, u32 start_len,
	       const void *end, u32 end_len, u32 flags,
	       pmidx_scan_fn fn, void *priv);

#endif /* _LINUX_PMIDX_KAPI_H */
