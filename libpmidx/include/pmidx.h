/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libpmidx: userspace access to pmidx persistent-memory indexes.
 *
 * A pool is opened by path: /dev/pmidxN reaches an attached pool in the
 * kernel through PMIDX_IOC_CMD ioctls. Inside a pool, indexes are opened
 * by name. Every operation has the semantics of the kernel's data path
 * (see uapi/linux/pmidx.h):
 *
 *  - keys are 1..PMIDX_KEY_MAX bytes, ordered by memcmp (shorter first on
 *    a common prefix); values are 0..PMIDX_VALUE_MAX bytes;
 *  - put is an upsert (PMIDX_PUT_INSERT: -EEXIST if the key exists);
 *    put and del are durable when they return;
 *  - errors are negative errno values; pmidx_strerror() explains them.
 *
 * Threads: pool and index handles may be shared by any number of threads
 * (the kernel serialises what needs it; the library takes no lock). A
 * scan iterator belongs to one thread at a time. Handles must be closed
 * in reverse order: scans, then indexes, then the pool.
 */
#ifndef PMIDX_H
#define PMIDX_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Limits and flags: the same names and values as <linux/pmidx.h>, so
 * either header (or both) may be included.
 */
#define PMIDX_NAME_MAX		63	/* index name, without the NUL */
#define PMIDX_KEY_MAX		255	/* key bytes (keys are 1..255 bytes) */
#define PMIDX_VALUE_MAX		65536	/* value bytes (0..65536) */
#define PMIDX_PUT_INSERT	(1U << 0)	/* PUT: fail with -EEXIST if present */
#define PMIDX_SCAN_AFTER	(1U << 1)	/* SCAN: start strictly after key */

/* Length of a key made by pmidx_key_from_u64(). */
#define PMIDX_U64_KEY_LEN	8

struct pmidx_pool;
struct pmidx_index;
struct pmidx_scan;

/* One record of a scan; the pointers live until the next call on it. */
struct pmidx_kv {
	const void	*key;
	size_t		key_len;
	const void	*val;
	size_t		val_len;
};

/* ---- pools and indexes ----------------------------------------------- */

/*
 * Open the pool at @path (/dev/pmidxN). @flags must be 0.
 * Return: 0 and *@pool set, or a negative errno (-ENOTTY: not a pmidx
 * device; -EOPNOTSUPP: no backend for this kind of file).
 */
int pmidx_pool_open(const char *path, unsigned int flags,
		    struct pmidx_pool **pool);
void pmidx_pool_close(struct pmidx_pool *pool);
const char *pmidx_pool_path(const struct pmidx_pool *pool);
/* The char device's file descriptor (for io_uring), or -EOPNOTSUPP. */
int pmidx_pool_fd(const struct pmidx_pool *pool);

/* Return: 0 and *@idx set; -ENOENT if the pool has no such index. */
int pmidx_index_open(struct pmidx_pool *pool, const char *name,
		     struct pmidx_index **idx);
void pmidx_index_close(struct pmidx_index *idx);
const char *pmidx_index_name(const struct pmidx_index *idx);
uint32_t pmidx_index_id(const struct pmidx_index *idx);
/* enum pmidx_engine_id; pmidx_engine_name() turns it into "ccl", ... */
uint32_t pmidx_index_engine(const struct pmidx_index *idx);
const char *pmidx_engine_name(uint32_t engine);	/* NULL if unknown */

/* ---- point operations ------------------------------------------------ */

/*
 * Copy the value of @key into @val. *@val_len is the buffer size on
 * input and the value length on output. -ENOENT if absent; -ENOSPC if
 * the buffer is too small, with *@val_len := the length needed.
 */
int pmidx_get(struct pmidx_index *idx, const void *key, size_t key_len,
	      void *val, size_t *val_len);
/* As pmidx_get() into a malloc()ed buffer the caller frees. */
int pmidx_get_alloc(struct pmidx_index *idx, const void *key, size_t key_len,
		    void **val, size_t *val_len);
/* @flags: 0 (upsert) or PMIDX_PUT_INSERT (-EEXIST if present). */
int pmidx_put(struct pmidx_index *idx, const void *key, size_t key_len,
	      const void *val, size_t val_len, unsigned int flags);
/* -ENOENT if absent. */
int pmidx_del(struct pmidx_index *idx, const void *key, size_t key_len);
/*
 * Run the engine's structural checker. -EUCLEAN if it finds damage
 * (details in the kernel log). @keys (may be NULL) := live keys.
 */
int pmidx_check(struct pmidx_index *idx, uint64_t *keys);

/* ---- scans ----------------------------------------------------------- */

/*
 * Iterate in ascending key order from @start (@start_len 0: from the
 * first key; after it with PMIDX_SCAN_AFTER) to @end, exclusive
 * (@end_len 0: unbounded), at most @limit records (0: no limit).
 * Records are fetched in batches; no key is returned twice or skipped,
 * and each is a committed version (the scan is not a snapshot).
 */
int pmidx_scan_open(struct pmidx_index *idx, const void *start,
		    size_t start_len, const void *end, size_t end_len,
		    uint64_t limit, unsigned int flags, struct pmidx_scan **scan);
/* Return: 1 with *@kv filled, 0 at the end, or a negative errno. */
int pmidx_scan_next(struct pmidx_scan *scan, struct pmidx_kv *kv);
void pmidx_scan_close(struct pmidx_scan *scan);

/* ---- keys and errors ------------------------------------------------- */

/* Big-endian encoding: numeric order of u64s = memcmp order of keys. */
void pmidx_key_from_u64(uint64_t v, void *key);
/* Return: 0, or -EINVAL if @key_len is not PMIDX_U64_KEY_LEN. */
int pmidx_key_to_u64(const void *key, size_t key_len, uint64_t *v);
/* memcmp order, shorter first on a common prefix: < 0, 0 or > 0. */
int pmidx_key_cmp(const void *a, size_t a_len, const void *b, size_t b_len);

/*
 * Describe an error returned by this library (negative errno; a positive
 * one is accepted too). The string is static: thread-safe, never freed.
 */
const char *pmidx_strerror(int err);

#ifdef __cplusplus
}
#endif

#endif /* PMIDX_H */
