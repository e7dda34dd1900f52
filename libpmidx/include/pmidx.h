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
#define PMIDX_SCAN_MORE		(1U << 15)	/* SCAN out: more records follow */
#define PMIDX_BATCH_MAX		1024	/* requests in one BATCH command */

/* Length of a key made by pmidx_key_from_u64(). */
#define PMIDX_U64_KEY_LEN	8

struct pmidx_pool;
struct pmidx_index;
struct pmidx_scan;
struct pmidx_ring;

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

/*
 * Walk the packed records of a raw SCAN output buffer (a SCAN request of
 * a batch or a ring): *@off starts at 0, @used is the byte count the
 * SCAN reported. Return: 1 with *@kv pointing into @buf, 0 at the end,
 * or -EPROTO for a malformed record.
 */
int pmidx_rec_parse(const void *buf, size_t used, size_t *off,
		    struct pmidx_kv *kv);

/* ---- requests and batches (PMIDX_1.1) --------------------------------- */

/* Request types: the values of the kernel's PMIDX_OP_* for the same ops. */
enum pmidx_req_type {
	PMIDX_REQ_GET	= 2,
	PMIDX_REQ_PUT	= 3,
	PMIDX_REQ_DEL	= 4,
	PMIDX_REQ_SCAN	= 5,
	PMIDX_REQ_BATCH	= 7,	/* completions of pmidx_ring_batch() only */
};

/*
 * One operation of a batch. Fields the type does not use must be zero
 * (a designated initializer does it). Outputs are written back into the
 * request when the batch completes.
 *
 *  GET   key -> value copied into val (val_len = buffer size in, value
 *        length out; on -ENOSPC the length needed). -ENOENT if absent.
 *  PUT   key, val/val_len (read only); flags 0 or PMIDX_PUT_INSERT.
 *  DEL   key. -ENOENT if absent.
 *  SCAN  key = start (key_len 0: from the first key; PMIDX_SCAN_AFTER:
 *        strictly after it), end_key (exclusive; end_key_len 0: none),
 *        count = max records in, records returned out; val = buffer of
 *        val_len bytes, bytes used out (parse with pmidx_rec_parse());
 *        flags |= PMIDX_SCAN_MORE when more records follow.
 *
 * Every request has its own index; all of a batch's indexes must be in
 * the same pool.
 */
struct pmidx_req {
	struct pmidx_index	*idx;
	unsigned int		type;		/* enum pmidx_req_type */
	unsigned int		flags;
	const void		*key;
	size_t			key_len;
	const void		*end_key;	/* SCAN only */
	size_t			end_key_len;
	void			*val;
	size_t			val_len;
	uint32_t		count;		/* SCAN only */
	int			res;		/* out: 0 or a negative errno */
};

/*
 * Run @n requests as BATCH commands of up to PMIDX_BATCH_MAX requests:
 * one syscall per command instead of one per request. They run in order;
 * each PUT/DEL is durable once it has run (a crash keeps a prefix), all
 * of them when this returns. Return: the number of requests whose res is
 * not 0, or a negative errno when a command was refused as a whole (a
 * malformed request: that request's res holds the error, the requests
 * of that command and after it are -ECANCELED and did not run).
 */
int pmidx_batch(struct pmidx_pool *pool, struct pmidx_req *reqs,
		unsigned int n);

/* ---- asynchronous rings (PMIDX_1.1) ------------------------------------ */

/*
 * A ring submits operations without waiting for them and delivers their
 * completions later. On a kernel pool it is an io_uring instance
 * (IORING_OP_URING_CMD, SQE128 + CQE32) on the pool's char device: up to
 * @depth operations in flight, many submitted with one syscall. Where
 * io_uring cannot be used -- io_uring_setup() fails, the kernel refuses
 * the pool's uring_cmd (checked once at open with a harmless LOOKUP), the
 * pool is an in-process pool file, PMIDX_RING_SYNC is given, or the
 * environment variable PMIDX_RING_SYNC is set to anything but "" or "0"
 * -- the ring runs each operation synchronously through the pool's
 * ordinary path (ioctl or in-process) when it is submitted, with exactly
 * the same API and completion semantics. pmidx_ring_mode() tells which.
 *
 * Life of an operation:
 *   pmidx_ring_get() etc.  queue it (arguments are checked here: an error
 *                          returned here means no completion follows);
 *                          -EBUSY when @depth operations are undelivered
 *   pmidx_ring_submit()    hand queued operations to the kernel (also
 *                          done by wait and poll)
 *   pmidx_ring_wait() /    deliver completions: an operation submitted
 *   pmidx_ring_poll()      with a callback has it called (from inside
 *                          these two functions only, never from a
 *                          submission call); the others are returned by
 *                          pmidx_ring_poll()
 *
 * Buffers (keys, values, outputs, batch requests) must stay valid until
 * the completion is delivered. Completions are delivered in submission
 * order in synchronous mode; through io_uring order is not guaranteed.
 *
 * Threads: a ring belongs to one thread at a time and is not inherited
 * across fork(); use one ring per thread (the pool and index handles
 * are shared). Callbacks may submit new operations on their ring, but
 * must not wait, poll or close it (-EDEADLK).
 */

/* pmidx_ring_open() flags */
#define PMIDX_RING_SYNC		(1U << 0)	/* never use io_uring */
#define PMIDX_RING_NO_FALLBACK	(1U << 1)	/* fail instead of running sync */
/*
 * io_uring with a kernel thread polling the submission queue
 * (IORING_SETUP_SQPOLL, 50 ms idle): submitting takes no syscall while it
 * polls, at the cost of a CPU it keeps busy meanwhile. Where the kernel
 * refuses SQPOLL the ring is an ordinary io_uring ring.
 */
#define PMIDX_RING_SQPOLL	(1U << 2)

#define PMIDX_RING_DEPTH_MAX	4096

enum pmidx_ring_mode {
	PMIDX_RING_MODE_URING	= 1,	/* io_uring passthrough */
	PMIDX_RING_MODE_SYNC	= 2,	/* each op runs when submitted */
};

/* What an operation did; the outputs are those of its type. */
struct pmidx_completion {
	void		*user_data;
	int		res;	/* 0 or a negative errno */
	unsigned int	type;	/* enum pmidx_req_type */
	unsigned int	flags;	/* SCAN: PMIDX_SCAN_MORE */
	uint32_t	count;	/* SCAN: records returned; BATCH: requests failed */
	size_t		len;	/* GET: value length, SCAN: bytes used; on
				 * -ENOSPC: the length needed */
};

typedef void (*pmidx_done_fn)(struct pmidx_ring *ring,
			      const struct pmidx_completion *c);

/*
 * Open a ring of @depth (1..PMIDX_RING_DEPTH_MAX) operations on @pool.
 * @flags: PMIDX_RING_SYNC, PMIDX_RING_NO_FALLBACK (then the reason
 * io_uring cannot be used is returned instead), PMIDX_RING_SQPOLL.
 */
int pmidx_ring_open(struct pmidx_pool *pool, unsigned int depth,
		    unsigned int flags, struct pmidx_ring **ring);
/*
 * Close @ring. Operations queued but not submitted never run; submitted
 * ones are waited for (their effects stay) without calling callbacks, so
 * buffers may be freed once this returns. Undelivered completions are
 * dropped.
 */
void pmidx_ring_close(struct pmidx_ring *ring);
/* enum pmidx_ring_mode; @why (may be NULL) := why it is not io_uring:
 * 0 (io_uring, or forced by flag/environment) or a negative errno. */
int pmidx_ring_mode(const struct pmidx_ring *ring, int *why);
/*
 * Operations queued or in flight: not yet seen to complete (through
 * io_uring, an operation is in flight until its CQE is reaped by wait or
 * poll; synchronously, submitting completes it).
 */
unsigned int pmidx_ring_busy(const struct pmidx_ring *ring);

/*
 * Queue one operation; outputs come in its completion. @done may be NULL
 * (the completion is then returned by pmidx_ring_poll()).
 */
int pmidx_ring_get(struct pmidx_ring *ring, struct pmidx_index *idx,
		   const void *key, size_t key_len, void *val, size_t val_cap,
		   pmidx_done_fn done, void *user_data);
int pmidx_ring_put(struct pmidx_ring *ring, struct pmidx_index *idx,
		   const void *key, size_t key_len, const void *val,
		   size_t val_len, unsigned int flags, pmidx_done_fn done,
		   void *user_data);
int pmidx_ring_del(struct pmidx_ring *ring, struct pmidx_index *idx,
		   const void *key, size_t key_len, pmidx_done_fn done,
		   void *user_data);
/* One SCAN command: up to @count records into @buf (see struct pmidx_req). */
int pmidx_ring_scan(struct pmidx_ring *ring, struct pmidx_index *idx,
		    const void *start, size_t start_len, const void *end,
		    size_t end_len, uint32_t count, unsigned int flags,
		    void *buf, size_t buf_len, pmidx_done_fn done,
		    void *user_data);
/*
 * Queue @n (1..PMIDX_BATCH_MAX) requests as one BATCH command: one
 * submission queue entry. Outputs are written into @reqs before the
 * completion is delivered; its count := requests that failed, its res
 * is 0 unless the kernel refused the whole batch (then no request ran:
 * each res is -ECANCELED, except the malformed request's, which holds
 * the error; the kernel reports its position on both paths).
 */
int pmidx_ring_batch(struct pmidx_ring *ring, struct pmidx_req *reqs,
		     unsigned int n, pmidx_done_fn done, void *user_data);

/* Submit queued operations. Return: how many, or a negative errno. */
int pmidx_ring_submit(struct pmidx_ring *ring);
/*
 * Submit queued operations, then wait until at least @min operations
 * have completed in this call or none is queued or in flight (UINT_MAX:
 * all of them), calling callbacks as they complete. Return: operations
 * completed (callbacks called + completions kept for pmidx_ring_poll()),
 * or a negative errno if none could be.
 */
int pmidx_ring_wait(struct pmidx_ring *ring, unsigned int min);
/*
 * Submit queued operations and take what has completed without waiting
 * (calling callbacks as pmidx_ring_wait() does), then copy up to @max
 * completions of callback-less operations into @out. Return: entries
 * written, or a negative errno.
 */
int pmidx_ring_poll(struct pmidx_ring *ring, struct pmidx_completion *out,
		    unsigned int max);

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
