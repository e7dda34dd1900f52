// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The embedded backend: a pool image in a regular file, attached in this
 * process with the userspace build of kmod/core (tools/testing/pool_file.h)
 * and driven through the kernel's own dispatcher, pmidx_dispatch(), with a
 * memcpy uaccess (pmidx_pool_file_uaccess). Same commands, same semantics
 * as the device backend.
 *
 * Built only into build/lib/libpmidx-embedded.a (libpmidx/embedded.mk),
 * with the shim include flags; pool.c registers it under PMIDX_EMBEDDED.
 *
 * The core and libpmidx both name a "struct pmidx_pool"/"struct
 * pmidx_index" and a few functions (pmidx_pool_open/close,
 * pmidx_engine_name, the inline pmidx_ptr): the core's headers are included with those names
 * mapped to pmidx_core_*, and embedded.mk renames the same symbols in the
 * core's objects (objcopy --redefine-sym) so both halves link together.
 *
 * libpmidx.mk compiles every .c of libpmidx/src into libpmidx.so/.a: there
 * (no PMIDX_EMBEDDED) this file is empty, so the default build neither
 * needs the shim headers nor links the core.
 */
#ifdef PMIDX_EMBEDDED
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define pmidx_pool		pmidx_core_pool
#define pmidx_index		pmidx_core_index
#define pmidx_pool_open		pmidx_core_pool_open
#define pmidx_pool_close	pmidx_core_pool_close
#define pmidx_engine_name	pmidx_core_engine_name
#define pmidx_ptr		pmidx_core_ptr
#include "pool_file.h"
#include "core/direct.h"
#include "core/dispatch.h"
#include <shim/pmem.h>
#undef pmidx_pool
#undef pmidx_index
#undef pmidx_pool_open
#undef pmidx_pool_close
#undef pmidx_engine_name
#undef pmidx_ptr

#include "internal.h"
#include <pmidx-embedded.h>

static bool file_probe(const char *path, const struct stat *st)
{
	(void)path;
	return S_ISREG(st->st_mode);
}

/*
 * PMIDX_POOL_PERSIST=eadr attaches pool files as on an eADR platform (the
 * module's persist=eadr): flushes elided, engines with an adaptive flush
 * (pfart) leave small writes to the cache. Anything else: ADR.
 */
static unsigned int file_flags(void)
{
	const char *p = getenv("PMIDX_POOL_PERSIST");

	return p && !strcmp(p, "eadr") ? PMIDX_PF_EADR : 0;
}

static int file_open(struct pmidx_pool *pool, const char *path)
{
	struct pmidx_pool_file *pf = NULL;
	const char *why = NULL;
	int ret;

	ret = pmidx_pool_file_open(path, file_flags(), &pf, &why);
	if (ret)
		return ret < 0 ? ret : -EIO;
	pool->priv = pf;
	pool->fd = -1;
	return 0;
}

static int file_cmd(struct pmidx_pool *pool, struct pmidx_cmd *c)
{
	struct pmidx_pool_file *pf = pool->priv;

	return pmidx_dispatch(pf->pool, c, &pmidx_pool_file_uaccess, 0);
}

static void file_close(struct pmidx_pool *pool)
{
	pmidx_pool_file_close(pool->priv);
	pool->priv = NULL;
}

const struct pmidx_backend pmidx_backend_file = {
	.name	= "file",
	.probe	= file_probe,
	.open	= file_open,
	.cmd	= file_cmd,
	.close	= file_close,
};

/*
 * For pmidx-bench, in this archive only (<pmidx-embedded.h>): the pool's
 * flush and fence counters, its mapping prefaulted, and the pmem
 * backend's mode (tools/include/shim/pmem.h).
 */
int pmidx_embedded_pmem_counters(struct pmidx_pool *pool, uint64_t *flushes,
				 uint64_t *fences)
{
	struct pmidx_pool_file *pf = pool->priv;
	struct pmidx_pmem_stats sum;

	if (pool->be != &pmidx_backend_file)
		return -EOPNOTSUPP;
	pmidx_pmem_sum_stats(&pf->pool->pm, &sum);
	*flushes = sum.flushes;
	*fences = sum.fences;
	return 0;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE	23
#endif

/*
 * Every page of the mapping present and writable, so the first touches
 * of a timed run take no page fault. The contents do not change: where
 * MADV_POPULATE_WRITE is missing, each page gets an atomic add of zero.
 */
int pmidx_embedded_prefault(struct pmidx_pool *pool)
{
	struct pmidx_pool_file *pf = pool->priv;
	long pg = sysconf(_SC_PAGESIZE);
	u64 off;

	if (pool->be != &pmidx_backend_file)
		return -EOPNOTSUPP;
	if (!madvise(pf->base, pf->size, MADV_POPULATE_WRITE))
		return 0;
	for (off = 0; off + sizeof(u64) <= pf->size; off += pg)
		__atomic_fetch_add((u64 *)((char *)pf->base + off), 0,
				   __ATOMIC_RELAXED);
	return 0;
}

const char *pmidx_embedded_pmem_hw(void)
{
	return shim_pmem_hw_name(shim_pmem_get_hw());
}

/* "volatile", "none", "clwb", ...; NULL: back to the usual choice */
int pmidx_embedded_force_pmem_hw(const char *name)
{
	enum shim_pmem_hw hw;

	for (hw = SHIM_PMEM_HW_AUTO; hw <= SHIM_PMEM_HW_VOLATILE; hw++)
		if (!name || !strcmp(name, shim_pmem_hw_name(hw)))
			break;
	if (hw > SHIM_PMEM_HW_VOLATILE)
		return -EINVAL;
	shim_pmem_force_hw(name ? hw : SHIM_PMEM_HW_AUTO);
	return 0;
}

/*
 * pmidx-bench's kapi path, in this archive only: the in-kernel API's
 * calls (core/direct.c) on an index of a pool file, held for the run as
 * pmidx_index_open() holds it in the kernel (drop-index: -EBUSY). The
 * engines run as a kernel client calls them, and as the papers' drivers
 * call their trees: no command, no copy, no per-call pin.
 */
struct pmidx_embedded_direct {
	struct pmidx_core_index	*idx;
};

int pmidx_embedded_direct_open(struct pmidx_pool *pool, const char *index,
			       struct pmidx_embedded_direct **out)
{
	struct pmidx_pool_file *pf = pool->priv;
	struct pmidx_embedded_direct *d;

	if (pool->be != &pmidx_backend_file)
		return -EOPNOTSUPP;
	if (!index || !*index || strlen(index) > PMIDX_NAME_MAX)
		return -EINVAL;
	d = malloc(sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->idx = pmidx_index_hold(pf->pool, index);
	if (IS_ERR(d->idx)) {
		int ret = PTR_ERR(d->idx);

		free(d);
		return ret;
	}
	*out = d;
	return 0;
}

/* Before the pool's own close, as a kernel client closes its handles. */
void pmidx_embedded_direct_close(struct pmidx_embedded_direct *d)
{
	if (!d)
		return;
	pmidx_index_release(d->idx);
	free(d);
}

int pmidx_embedded_direct_get(struct pmidx_embedded_direct *d,
			      const void *key, uint32_t key_len, void *val,
			      uint32_t *val_len)
{
	return pmidx_direct_get(d->idx, key, key_len, val, val_len);
}

int pmidx_embedded_direct_put(struct pmidx_embedded_direct *d,
			      const void *key, uint32_t key_len,
			      const void *val, uint32_t val_len, uint32_t flags)
{
	return pmidx_direct_put(d->idx, key, key_len, val, val_len, flags);
}

int pmidx_embedded_direct_del(struct pmidx_embedded_direct *d,
			      const void *key, uint32_t key_len)
{
	return pmidx_direct_del(d->idx, key, key_len);
}

/* A scan's records, each copied out as a kernel client would keep it. */
struct direct_scan {
	u8	*buf;
	size_t	cap, used;
	u32	count, max;
};

static int direct_record(void *priv, const void *key, u32 klen,
			 const void *val, u32 vlen)
{
	struct direct_scan *s = priv;

	/* what fits, as the dispatcher's scan returns it; -ENOSPC if none */
	if (s->used + klen + vlen > s->cap)
		return s->count ? 1 : -ENOSPC;
	memcpy(s->buf + s->used, key, klen);
	memcpy(s->buf + s->used + klen, val, vlen);
	s->used += klen + vlen;
	return ++s->count == s->max;
}

/*
 * Up to @count records from @start on into @buf (keys and values back to
 * back, @cap bytes), fewer when @buf fills. Return: the number of
 * records, or a negative errno (-ENOSPC when not even one fits).
 */
int pmidx_embedded_direct_scan(struct pmidx_embedded_direct *d,
			       const void *start, uint32_t start_len,
			       uint32_t count, void *buf, size_t cap)
{
	struct direct_scan s = { .buf = buf, .cap = cap, .max = count };
	int ret;

	if (!count)
		return -EINVAL;
	ret = pmidx_direct_scan(d->idx, start, start_len, NULL, 0, 0,
				direct_record, &s);
	return ret < 0 ? ret : (int)s.count;
}

#endif /* PMIDX_EMBEDDED */
