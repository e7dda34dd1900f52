// SPDX-License-Identifier: GPL-2.0
/*
 * Block device + DAX plumbing for pools, and the list of attached pools.
 *
 * Locking: pmidx_devs_lock (mutex) guards the list and is only ever held
 * for moments: the slow parts of format, attach (recovery) and detach
 * (clean close) run outside it, made exclusive by the block device's
 * exclusive open, and a command that works on a pool past the lock pins
 * it. A pool's open_lock is taken inside pmidx_devs_lock (and alone by the
 * char device's open, which runs under misc_mtx: so misc_register may be
 * called with pmidx_devs_lock held, never with open_lock held).
 *
 * Lifetime: a struct pmidx_pool_dev is freed by pmidx_dev_teardown()
 * after pmidx_dev_unlist() took it off the list, which it only does while
 * nothing pins it; so it lives while listed (under pmidx_devs_lock) or
 * pinned.
 */
#include <linux/dax.h>
#include <linux/fs.h>
#include <linux/idr.h>
#include <linux/module.h>
#include <linux/slab.h>
#include "badblocks.h"
#include "pool_dev.h"
#include "chardev.h"

DEFINE_MUTEX(pmidx_devs_lock);
LIST_HEAD(pmidx_devs);
static DEFINE_IDA(pmidx_ida);

struct dax_map {
	struct pmidx_bdev	bdev;
	struct dax_device	*dax;
	void			*kaddr;
	u64			size;
	bool			eadr;
};

/* Open @path exclusively and map all of it. */
static int dax_map_open(struct dax_map *m, const char *path, void *holder,
			const char **why)
{
	long pages, got;
	u64 start_off = 0;
	int ret, id;

	ret = pmidx_bdev_open(&m->bdev, path, holder);
	if (ret) {
		*why = ret == -EBUSY ? "device is busy (already attached or in use)"
				     : "cannot open the block device";
		return ret;
	}
	m->dax = fs_dax_get_by_bdev(m->bdev.bdev, &start_off, holder, NULL);
	if (!m->dax) {
		*why = "device is not DAX-capable (is the namespace in fsdax mode?)";
		ret = -EOPNOTSUPP;
		goto err_bdev;
	}
	m->size = bdev_nr_bytes(m->bdev.bdev);
	if (m->size < PMIDX_MIN_POOL_SIZE) {
		*why = "device too small for a pool (16 MiB at least)";
		ret = -ENOSPC;
		goto err_dax;
	}
	/* bad blocks: refused, listed in the log (badblocks.c says why) */
	ret = pmidx_badblocks_check(m->bdev.bdev, start_off, m->size, path, why);
	if (ret)
		goto err_dax;
	pages = m->size >> PAGE_SHIFT;
	id = dax_read_lock();
	got = dax_direct_access(m->dax, start_off >> PAGE_SHIFT, pages,
				DAX_ACCESS, &m->kaddr, NULL);
	dax_read_unlock(id);
	if (got < pages) {
		/*
		 * A short or failed mapping means bad blocks or a namespace
		 * that is not one linear range; pmidx wants one linear
		 * mapping and does not vmap() fragments (dm-writecache does).
		 */
		pr_err("pmidx: %s: dax_direct_access mapped %ld of %ld pages\n",
		       path, got, pages);
		*why = "device cannot be mapped linearly (bad blocks?)";
		ret = got < 0 ? got : -EIO;
		goto err_dax;
	}
	switch (pmidx_persist_param) {
	case PMIDX_PERSIST_ADR:
		m->eadr = false;
		break;
	case PMIDX_PERSIST_EADR:
		m->eadr = true;
		break;
	default:
		/* pmem sets a write cache exactly when flushes are needed */
		m->eadr = !dax_write_cache_enabled(m->dax);
	}
	return 0;

err_dax:
	fs_put_dax(m->dax, holder);
err_bdev:
	pmidx_bdev_close(&m->bdev, holder);
	return ret;
}

static void dax_map_close(struct dax_map *m, void *holder)
{
	fs_put_dax(m->dax, holder);
	pmidx_bdev_close(&m->bdev, holder);
}

static bool path_attached(const char *path)
{
	bool ret;

	mutex_lock(&pmidx_devs_lock);
	ret = pmidx_dev_find(-1, NULL, path);
	mutex_unlock(&pmidx_devs_lock);
	return ret;
}

/**
 * pmidx_dev_format - format the (not attached) device at @path
 *
 * The exclusive open (this call's own holder) keeps attach and other
 * formats of the device out while it runs.
 *
 * Context: process context; may sleep for long.
 */
int pmidx_dev_format(const char *path, bool force, const char **why)
{
	struct dax_map m;
	int ret;

	if (path_attached(path)) {
		*why = "device is attached; detach it first";
		return -EBUSY;
	}
	ret = dax_map_open(&m, path, &m, why);
	if (ret)
		return ret;
	ret = pmidx_pool_format(m.kaddr, m.size, force, why);
	dax_map_close(&m, &m);
	return ret;
}

/**
 * pmidx_dev_attach - attach the pool on @path and create its char device
 *
 * Recovery runs before pmidx_devs_lock is taken; the exclusive open makes
 * concurrent attaches of one device fail with -EBUSY.
 *
 * Context: process context; may sleep for long.
 * Return: the attached pool, pinned (the caller unpins it once it has
 * reported it), or an ERR_PTR with *why set.
 */
struct pmidx_pool_dev *pmidx_dev_attach(const char *path, const char **why)
{
	struct pmidx_pool_dev *d;
	struct dax_map m;
	int ret;

	if (path_attached(path)) {
		*why = "device is already attached";
		return ERR_PTR(-EBUSY);
	}
	d = kzalloc(sizeof(*d), GFP_KERNEL);
	if (!d)
		return ERR_PTR(-ENOMEM);
	spin_lock_init(&d->open_lock);
	strscpy(d->path, path, sizeof(d->path));
	d->open_count = 1;	/* the caller's pin */

	ret = dax_map_open(&m, path, d, why);
	if (ret)
		goto err_free;
	d->bdev = m.bdev;
	d->dax = m.dax;
	d->pool = pmidx_pool_open(m.kaddr, m.size, m.eadr, why);
	if (IS_ERR(d->pool)) {
		ret = PTR_ERR(d->pool);
		goto err_map;
	}

	mutex_lock(&pmidx_devs_lock);
	if (pmidx_dev_find(-1, NULL, path)) {
		/* the same device under another name is caught by the open */
		*why = "device is already attached";
		ret = -EBUSY;
		goto err_unlock;
	}
	ret = ida_alloc(&pmidx_ida, GFP_KERNEL);
	if (ret < 0)
		goto err_unlock;
	d->id = ret;
	snprintf(d->name, sizeof(d->name), "pmidx%d", d->id);
	ret = pmidx_chardev_register(d);
	if (ret) {
		*why = "cannot register the char device";
		goto err_ida;
	}
	list_add_tail(&d->node, &pmidx_devs);
	mutex_unlock(&pmidx_devs_lock);
	pr_info("pmidx: attached %s as %s (%llu MiB, %s%s)\n", path, d->name,
		m.size >> 20, m.eadr ? "eadr" : "adr",
		d->pool->flags & PMIDX_POOL_F_RECOVERED ? ", recovered" : "");
	return d;

err_ida:
	ida_free(&pmidx_ida, d->id);
err_unlock:
	mutex_unlock(&pmidx_devs_lock);
	pmidx_pool_close(d->pool);
err_map:
	dax_map_close(&m, d);
err_free:
	kfree(d);
	return ERR_PTR(ret);
}

/**
 * pmidx_dev_teardown - free a pool taken off the list by pmidx_dev_unlist()
 *
 * Context: process context, without pmidx_devs_lock; may sleep for long.
 */
void pmidx_dev_teardown(struct pmidx_pool_dev *d)
{
	struct dax_map m = { .bdev = d->bdev, .dax = d->dax };

	pmidx_chardev_unregister(d);
	pmidx_pool_close(d->pool);
	dax_map_close(&m, d);
	ida_free(&pmidx_ida, d->id);
	pr_info("pmidx: detached %s (%s)\n", d->name, d->path);
	kfree(d);
}

/**
 * pmidx_dev_pin - take a reference that keeps @d attached
 *
 * Char-device opens, in-kernel handles and admin commands working on the
 * pool hold one each; detach fails with -EBUSY while any is held.
 *
 * Return: 0, or -ENODEV once detach has begun.
 */
int pmidx_dev_pin(struct pmidx_pool_dev *d)
{
	int ret = 0;

	spin_lock(&d->open_lock);
	if (d->dying)
		ret = -ENODEV;
	else
		d->open_count++;
	spin_unlock(&d->open_lock);
	return ret;
}

void pmidx_dev_unpin(struct pmidx_pool_dev *d)
{
	spin_lock(&d->open_lock);
	WARN_ON_ONCE(!d->open_count);
	d->open_count--;
	spin_unlock(&d->open_lock);
}

/**
 * pmidx_dev_unlist - begin detaching @d: no pin may be held
 *
 * On success @d is off the list, later pins fail, and the caller owes
 * pmidx_dev_teardown() (outside the lock).
 *
 * Context: caller holds pmidx_devs_lock.
 * Return: 0, or -EBUSY while @d is pinned.
 */
int pmidx_dev_unlist(struct pmidx_pool_dev *d, const char **why)
{
	lockdep_assert_held(&pmidx_devs_lock);
	spin_lock(&d->open_lock);
	if (d->open_count) {
		spin_unlock(&d->open_lock);
		*why = "pool is in use (its char device is open, a kernel client holds it or an admin command runs on it)";
		return -EBUSY;
	}
	d->dying = true;
	spin_unlock(&d->open_lock);
	list_del(&d->node);
	return 0;
}

/* Module unload: nothing can be open then (the char devices pin us). */
void pmidx_dev_detach_all(void)
{
	struct pmidx_pool_dev *d;
	const char *why;

	for (;;) {
		mutex_lock(&pmidx_devs_lock);
		d = list_first_entry_or_null(&pmidx_devs,
					     struct pmidx_pool_dev, node);
		if (d && WARN_ON(pmidx_dev_unlist(d, &why)))
			d = NULL;
		mutex_unlock(&pmidx_devs_lock);
		if (!d)
			break;
		pmidx_dev_teardown(d);
	}
}

/**
 * pmidx_dev_find - look a pool up by id (>= 0), name or device path
 *
 * Context: caller holds pmidx_devs_lock.
 */
struct pmidx_pool_dev *pmidx_dev_find(int id, const char *name,
				      const char *path)
{
	struct pmidx_pool_dev *d;

	lockdep_assert_held(&pmidx_devs_lock);
	list_for_each_entry(d, &pmidx_devs, node) {
		if ((id >= 0 && d->id == id) ||
		    (name && !strcmp(d->name, name)) ||
		    (path && !strcmp(d->path, path)))
			return d;
	}
	return NULL;
}
