/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Attached pools as the kernel sees them: an exclusively opened fsdax
 * block device, its direct kernel mapping, the pool on top and a char
 * device. All attached pools sit on one list under pmidx_devs_lock.
 */
#ifndef _PMIDX_POOL_DEV_H
#define _PMIDX_POOL_DEV_H

#include <linux/list.h>
#include <linux/miscdevice.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/pmidx.h>
#include "compat.h"
#include "core/pool.h"

/**
 * struct pmidx_pool_dev - one attached pool
 * @node:       entry in pmidx_devs (under pmidx_devs_lock)
 * @id:         N of /dev/pmidxN
 * @name:       "pmidxN"
 * @path:       device path given at attach
 * @bdev:       the exclusively opened block device
 * @dax:        its DAX device, held with this struct as holder
 * @pool:       the pool
 * @misc:       the char device
 * @open_lock:  protects @open_count and @dying
 * @open_count: pins: open files of the char device, in-kernel handles
 *              and admin commands working on the pool
 * @dying:      detach has begun: opens fail
 */
struct pmidx_pool_dev {
	struct list_head	node;
	int			id;
	char			name[16];
	char			path[PMIDX_PATH_MAX + 1];
	struct pmidx_bdev	bdev;
	struct dax_device	*dax;
	struct pmidx_pool	*pool;
	struct miscdevice	misc;
	spinlock_t		open_lock;
	unsigned int		open_count;
	bool			dying;
};

extern struct mutex pmidx_devs_lock;
extern struct list_head pmidx_devs;

int pmidx_dev_format(const char *path, bool force, const char **why);
struct pmidx_pool_dev *pmidx_dev_attach(const char *path, const char **why);
int pmidx_dev_pin(struct pmidx_pool_dev *d);
void pmidx_dev_unpin(struct pmidx_pool_dev *d);
int pmidx_dev_unlist(struct pmidx_pool_dev *d, const char **why);
void pmidx_dev_teardown(struct pmidx_pool_dev *d);
void pmidx_dev_detach_all(void);
struct pmidx_pool_dev *pmidx_dev_find(int id, const char *name,
				      const char *path);

extern int pmidx_persist_param;	/* enum pmidx_persist_mode */

#endif /* _PMIDX_POOL_DEV_H */
