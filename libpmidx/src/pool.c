// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Pool and index handles. A pool handle is a backend plus its state; an
 * index handle is the pool plus the id and engine LOOKUP returned. Both
 * are immutable after open, so threads share them without locking (an
 * index handle's one cached scan iterator is taken and given back with
 * atomic exchanges, scan.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#ifdef PMIDX_EMBEDDED
/* backend_file.c: pool files in-process (build/lib/libpmidx-embedded.a) */
extern const struct pmidx_backend pmidx_backend_file;
#endif

/* Probed in order; the in-process pool-file backend goes here too. */
static const struct pmidx_backend *const backends[] = {
	&pmidx_backend_dev,
#ifdef PMIDX_EMBEDDED
	&pmidx_backend_file,
#endif
	NULL,
};

int pmidx_pool_open(const char *path, unsigned int flags,
		    struct pmidx_pool **poolp)
{
	const struct pmidx_backend *const *be;
	struct pmidx_pool *pool;
	struct stat st;
	int ret;

	*poolp = NULL;
	if (!path || flags)
		return -EINVAL;
	if (stat(path, &st))
		return -errno;
	for (be = backends; *be; be++)
		if ((*be)->probe(path, &st))
			break;
	if (!*be)
		return S_ISDIR(st.st_mode) ? -EISDIR : -EOPNOTSUPP;
	pool = calloc(1, sizeof(*pool));
	if (!pool)
		return -ENOMEM;
	pool->be = *be;
	pool->fd = -1;
	pool->path = strdup(path);
	if (!pool->path) {
		free(pool);
		return -ENOMEM;
	}
	ret = pool->be->open(pool, path);
	if (ret) {
		free(pool->path);
		free(pool);
		return ret;
	}
	*poolp = pool;
	return 0;
}

void pmidx_pool_close(struct pmidx_pool *pool)
{
	if (!pool)
		return;
	pool->be->close(pool);
	free(pool->path);
	free(pool);
}

const char *pmidx_pool_path(const struct pmidx_pool *pool)
{
	return pool->path;
}

int pmidx_pool_fd(const struct pmidx_pool *pool)
{
	return pool->fd >= 0 ? pool->fd : -EOPNOTSUPP;
}

int pmidx_index_open(struct pmidx_pool *pool, const char *name,
		     struct pmidx_index **idxp)
{
	struct pmidx_index *idx;
	struct pmidx_cmd c;
	size_t len;
	int ret;

	*idxp = NULL;
	if (!name)
		return -EINVAL;
	len = strlen(name);
	if (!len || len > PMIDX_NAME_MAX)
		return -EINVAL;
	memset(&c, 0, sizeof(c));
	c.op = PMIDX_OP_LOOKUP;
	c.key = pmidx_ptr(name);
	c.key_len = len;
	ret = pmidx_cmd_run(pool, &c);
	if (ret)
		return ret;
	idx = calloc(1, sizeof(*idx));
	if (!idx)
		return -ENOMEM;
	idx->pool = pool;
	idx->id = c.index;
	idx->engine = c.result;
	memcpy(idx->name, name, len + 1);
	*idxp = idx;
	return 0;
}

void pmidx_index_close(struct pmidx_index *idx)
{
	if (!idx)
		return;
	pmidx_scan_cache_free(idx);
	free(idx);
}

const char *pmidx_index_name(const struct pmidx_index *idx)
{
	return idx->name;
}

uint32_t pmidx_index_id(const struct pmidx_index *idx)
{
	return idx->id;
}

uint32_t pmidx_index_engine(const struct pmidx_index *idx)
{
	return idx->engine;
}

const char *pmidx_engine_name(uint32_t engine)
{
	static const char *const names[__PMIDX_ENGINE_MAX] = {
		[PMIDX_ENGINE_CCL]	= "ccl",
		[PMIDX_ENGINE_UTREE]	= "utree",
		[PMIDX_ENGINE_B3]	= "b3",
		[PMIDX_ENGINE_LODGE]	= "lodge",
		[PMIDX_ENGINE_PFART]	= "pfart",
	};

	return engine < __PMIDX_ENGINE_MAX ? names[engine] : NULL;
}
