/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Pool files: a pmidx pool in a regular file (or a block device) mapped
 * into the process, driven by the very kmod/core code the module runs, so
 * an image formatted or written here attaches in the kernel and back.
 *
 * Mapping: MAP_SHARED_VALIDATE | MAP_SYNC first (a DAX file: stores reach
 * pmem, the shim's pmem backend issues real clwb/sfence); otherwise plain
 * MAP_SHARED (page cache: cache flushes are pointless, the backend does
 * nothing and durability comes from msync() at sync/close). An attached
 * file is held with an exclusive flock(): one process attaches it at a
 * time, as the kernel's exclusive block-device open does.
 *
 * The hardware mode of the pmem backend is process-wide: the last file
 * mapped decides it (PMIDX_PMEM_HW overrides).
 */
#ifndef _PMIDX_POOL_FILE_H
#define _PMIDX_POOL_FILE_H

#include "core/pool.h"

#define PMIDX_PF_CREATE		(1U << 0)	/* create / size the file */
#define PMIDX_PF_FORCE		(1U << 1)	/* format over an existing pool */
#define PMIDX_PF_EADR		(1U << 2)	/* attach in eADR mode (no flushes) */
#define PMIDX_PF_PRIVATE	(1U << 3)	/* copy-on-write: the file is never written */

struct pmidx_pool_file {
	char			*path;
	int			fd;
	void			*base;
	u64			size;		/* bytes mapped */
	bool			dax;		/* MAP_SYNC worked */
	bool			blockdev;
	unsigned int		flags;
	struct pmidx_pool	*pool;		/* after pmidx_pool_file_open() */
};

/* Map @path (@size 0: the whole file/device). Return: 0 or -errno. */
int pmidx_pool_file_map(const char *path, u64 size, unsigned int flags,
			struct pmidx_pool_file **out, const char **why);
/* msync() what was written (no-op for PMIDX_PF_PRIVATE). */
int pmidx_pool_file_sync(struct pmidx_pool_file *pf);
void pmidx_pool_file_unmap(struct pmidx_pool_file *pf);

/* Create (PMIDX_PF_CREATE) and format a pool of @size bytes in @path. */
int pmidx_pool_file_format(const char *path, u64 size, unsigned int flags,
			   const char **why);

/* Map and attach (recovery included); close detaches, syncs, unmaps. */
int pmidx_pool_file_open(const char *path, unsigned int flags,
			 struct pmidx_pool_file **out, const char **why);
void pmidx_pool_file_close(struct pmidx_pool_file *pf);

/*
 * pmidx_dispatch()'s user access for a caller in this process, whose
 * "user" pointers are its own: memcpy, a NULL pointer is -EFAULT.
 */
struct pmidx_uaccess;
extern const struct pmidx_uaccess pmidx_pool_file_uaccess;

/* "16M", "1G", "4096", "1.5G" -> bytes; 0 on a malformed size */
u64 pmidx_parse_size(const char *s);

#endif
