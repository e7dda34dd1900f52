// SPDX-License-Identifier: GPL-2.0
/* Pool files for userspace: see pool_file.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <shim/pmem.h>
#include "core/dispatch.h"
#include "pool_file.h"

#ifndef BLKGETSIZE64
#define BLKGETSIZE64	_IOR(0x12, 114, size_t)
#endif
#ifndef MAP_SHARED_VALIDATE
#define MAP_SHARED_VALIDATE	0x03
#endif
#ifndef MAP_SYNC
#define MAP_SYNC		0x80000
#endif

u64 pmidx_parse_size(const char *s)
{
	char *end;
	double v = strtod(s, &end);
	u64 mult = 1;

	if (end == s || v < 0)
		return 0;
	switch (*end) {
	case 'k': case 'K':
		mult = 1ULL << 10;
		end++;
		break;
	case 'm': case 'M':
		mult = 1ULL << 20;
		end++;
		break;
	case 'g': case 'G':
		mult = 1ULL << 30;
		end++;
		break;
	case 't': case 'T':
		mult = 1ULL << 40;
		end++;
		break;
	}
	if (mult > 1 && *end == 'i')
		end++;			/* "MiB" */
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end)
		return 0;
	return (u64)(v * mult);
}

int pmidx_pool_file_map(const char *path, u64 size, unsigned int flags,
			struct pmidx_pool_file **out, const char **why)
{
	bool priv = flags & PMIDX_PF_PRIVATE;
	struct pmidx_pool_file *pf;
	struct stat st;
	u64 have;
	int ret, oflags = priv ? O_RDONLY : O_RDWR;

	pf = calloc(1, sizeof(*pf));
	if (!pf)
		return -ENOMEM;
	pf->fd = -1;
	pf->flags = flags;
	pf->path = strdup(path);
	if (!pf->path) {
		ret = -ENOMEM;
		goto err;
	}
	if ((flags & PMIDX_PF_CREATE) && !priv)
		oflags |= O_CREAT;
	pf->fd = open(path, oflags | O_CLOEXEC, 0644);
	if (pf->fd < 0) {
		ret = -errno;
		*why = "cannot open the pool file";
		goto err;
	}
	if (fstat(pf->fd, &st)) {
		ret = -errno;
		*why = "cannot stat the pool file";
		goto err;
	}
	if (S_ISBLK(st.st_mode)) {
		pf->blockdev = true;
		if (ioctl(pf->fd, BLKGETSIZE64, &have)) {
			ret = -errno;
			*why = "cannot read the block device size";
			goto err;
		}
	} else if (S_ISREG(st.st_mode)) {
		have = st.st_size;
	} else {
		ret = -EINVAL;
		*why = "not a regular file or block device";
		goto err;
	}
	if (!priv && flock(pf->fd, LOCK_EX | LOCK_NB)) {
		ret = errno == EWOULDBLOCK ? -EBUSY : -errno;
		*why = "pool file is in use by another process";
		goto err;
	}
	if (!size)
		size = have;
	if (size > have) {
		if (pf->blockdev || !(flags & PMIDX_PF_CREATE)) {
			ret = -ENOSPC;
			*why = "pool larger than the file or device";
			goto err;
		}
		if (ftruncate(pf->fd, size)) {
			ret = -errno;
			*why = "cannot size the pool file";
			goto err;
		}
	}
	if (size < PMIDX_MIN_POOL_SIZE) {
		ret = -ENOSPC;
		*why = "file too small for a pool (16 MiB at least)";
		goto err;
	}
	pf->size = size;
	if (priv) {
		pf->base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE,
				pf->fd, 0);
	} else {
		pf->base = mmap(NULL, size, PROT_READ | PROT_WRITE,
				MAP_SHARED_VALIDATE | MAP_SYNC, pf->fd, 0);
		if (pf->base != MAP_FAILED)
			pf->dax = true;
		else
			pf->base = mmap(NULL, size, PROT_READ | PROT_WRITE,
					MAP_SHARED, pf->fd, 0);
	}
	if (pf->base == MAP_FAILED) {
		pf->base = NULL;
		ret = -errno;
		*why = "cannot map the pool file";
		goto err;
	}
	shim_pmem_set_hw(pf->dax ? SHIM_PMEM_HW_AUTO : SHIM_PMEM_HW_NONE);
	*out = pf;
	return 0;
err:
	pmidx_pool_file_unmap(pf);
	return ret;
}

int pmidx_pool_file_sync(struct pmidx_pool_file *pf)
{
	if (pf->flags & PMIDX_PF_PRIVATE)
		return 0;
	if (msync(pf->base, pf->size, MS_SYNC))
		return -errno;
	return 0;
}

void pmidx_pool_file_unmap(struct pmidx_pool_file *pf)
{
	if (!pf)
		return;
	if (pf->base)
		munmap(pf->base, pf->size);
	if (pf->fd >= 0)
		close(pf->fd);		/* drops the flock */
	free(pf->path);
	free(pf);
}

int pmidx_pool_file_format(const char *path, u64 size, unsigned int flags,
			   const char **why)
{
	struct pmidx_pool_file *pf;
	int ret;

	ret = pmidx_pool_file_map(path, size, flags & ~PMIDX_PF_PRIVATE, &pf, why);
	if (ret)
		return ret;
	ret = pmidx_pool_format(pf->base, pf->size, flags & PMIDX_PF_FORCE, why);
	if (!ret) {
		ret = pmidx_pool_file_sync(pf);
		if (ret)
			*why = "msync failed";
	}
	pmidx_pool_file_unmap(pf);
	return ret;
}

int pmidx_pool_file_open(const char *path, unsigned int flags,
			 struct pmidx_pool_file **out, const char **why)
{
	struct pmidx_pool_file *pf;
	struct pmidx_pool *pool;
	int ret;

	ret = pmidx_pool_file_map(path, 0, flags & ~PMIDX_PF_CREATE, &pf, why);
	if (ret)
		return ret;
	pool = pmidx_pool_open(pf->base, pf->size, flags & PMIDX_PF_EADR, why);
	if (IS_ERR(pool)) {
		pmidx_pool_file_unmap(pf);
		return PTR_ERR(pool);
	}
	pf->pool = pool;
	*out = pf;
	return 0;
}

void pmidx_pool_file_close(struct pmidx_pool_file *pf)
{
	if (!pf)
		return;
	if (pf->pool)
		pmidx_pool_close(pf->pool);
	pmidx_pool_file_sync(pf);
	pmidx_pool_file_unmap(pf);
}

/* ---- the dispatcher's user access, in process ---------------------------- */

static int mem_check(const struct pmidx_useg *seg, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (seg[i].len && (!seg[i].uptr || !seg[i].kbuf))
			return -EFAULT;
	return 0;
}

static int mem_from(const struct pmidx_useg *seg, unsigned int n)
{
	unsigned int i;

	if (mem_check(seg, n))
		return -EFAULT;
	for (i = 0; i < n; i++)
		if (seg[i].len)
			memcpy(seg[i].kbuf, (const void *)(uintptr_t)seg[i].uptr,
			       seg[i].len);
	return 0;
}

static int mem_to(const struct pmidx_useg *seg, unsigned int n)
{
	unsigned int i;

	if (mem_check(seg, n))
		return -EFAULT;
	for (i = 0; i < n; i++)
		if (seg[i].len)
			memcpy((void *)(uintptr_t)seg[i].uptr, seg[i].kbuf,
			       seg[i].len);
	return 0;
}

static int mem_batch_out(u64 dst, const struct pmidx_cmd *ents, u32 n)
{
	struct pmidx_cmd *u = (void *)(uintptr_t)dst;
	u32 i;

	if (!u)
		return -EFAULT;
	for (i = 0; i < n; i++) {
		u[i].flags = ents[i].flags;
		u[i].val_len = ents[i].val_len;
		u[i].count = ents[i].count;
		u[i].result = ents[i].result;
	}
	return 0;
}

const struct pmidx_uaccess pmidx_pool_file_uaccess = {
	.from		= mem_from,
	.to		= mem_to,
	.batch_out	= mem_batch_out,
};
