/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libpmidx internals: the backend interface and the handle layouts.
 *
 * Every operation is a struct pmidx_cmd (uapi/linux/pmidx.h) handed to
 * the pool's backend, which runs it and writes the outputs back into the
 * same struct (even on failure: -ENOSPC reports the needed length). The
 * device backend issues PMIDX_IOC_CMD on /dev/pmidxN; an in-process
 * backend on a pool file would call the kernel's dispatcher
 * (kmod/core/dispatch.c: pmidx_dispatch) with a memcpy uaccess. Nothing
 * above the backend knows which one it talks to.
 */
#ifndef LIBPMIDX_INTERNAL_H
#define LIBPMIDX_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include <linux/pmidx.h>

#include "pmidx.h"

#define PMIDX_ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

struct pmidx_backend {
	const char *name;
	/* Does this backend serve @path (already stat()ed into @st)? */
	bool (*probe)(const char *path, const struct stat *st);
	/* Set pool->priv (and pool->fd if there is one); 0 or -errno. */
	int (*open)(struct pmidx_pool *pool, const char *path);
	/* Run one command; outputs go back into @cmd. 0 or -errno. */
	int (*cmd)(struct pmidx_pool *pool, struct pmidx_cmd *cmd);
	void (*close)(struct pmidx_pool *pool);
};

struct pmidx_pool {
	const struct pmidx_backend *be;
	void *priv;		/* backend state */
	int fd;			/* -1 when the backend has none */
	char *path;
};

struct pmidx_index {
	struct pmidx_pool *pool;
	uint32_t id;
	uint32_t engine;
	char name[PMIDX_NAME_MAX + 1];
	/* a closed scan iterator kept for the next one (scan.c); atomic */
	struct pmidx_scan *scan_cache;
};

/* Free the iterator cached in @idx (pmidx_index_close()). */
void pmidx_scan_cache_free(struct pmidx_index *idx);

/* backends, probed in this order (backend.c) */
extern const struct pmidx_backend pmidx_backend_dev;

static inline int pmidx_cmd_run(struct pmidx_pool *pool, struct pmidx_cmd *c)
{
	return pool->be->cmd(pool, c);
}

static inline uint64_t pmidx_ptr(const void *p)
{
	return (uint64_t)(uintptr_t)p;
}

/*
 * Requests (req.c): a struct pmidx_req as the struct pmidx_cmd the kernel
 * takes (0, or -EINVAL/-E2BIG/-EXDEV for what the ABI cannot carry or an
 * index of another pool), and the outputs of a BATCH entry back into its
 * request. pmidx_reqs_refused() marks the requests of a refused BATCH:
 * the one at @bad (if < @n) gets @err, the others -ECANCELED.
 */
int pmidx_req_to_cmd(const struct pmidx_req *q, const struct pmidx_pool *pool,
		     struct pmidx_cmd *c);
void pmidx_req_outputs(struct pmidx_req *q, const struct pmidx_cmd *c);
void pmidx_reqs_refused(struct pmidx_req *q, unsigned int n, int err,
			uint64_t bad);
/* The BATCH command over the entry array @ents of @n commands. */
void pmidx_batch_cmd(struct pmidx_cmd *c, struct pmidx_cmd *ents,
		     unsigned int n);

/*
 * Packed SCAN records (rec.c): struct pmidx_rec + key + value, padded to
 * 8 bytes. pmidx_rec_next() reads the record at *@off of @buf[0..@used)
 * and advances *@off. Return: 1 and *@kv set, 0 at the end, -EPROTO for
 * a record that is truncated or out of the ABI's limits.
 */
int pmidx_rec_next(const void *buf, uint32_t used, uint32_t *off,
		   struct pmidx_kv *kv);
/* Size of one record in the buffer (header + key + value, padded). */
uint32_t pmidx_rec_size(uint32_t key_len, uint32_t val_len);

#endif /* LIBPMIDX_INTERNAL_H */
