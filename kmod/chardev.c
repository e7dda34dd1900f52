// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/pmidxN: one misc char device per attached pool. An open handle
 * pins the pool: detach fails with -EBUSY until every handle is closed.
 */
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include "chardev.h"
#include "pool_dev.h"

static int pmidx_chardev_open(struct inode *inode, struct file *file)
{
	struct miscdevice *misc = file->private_data;
	struct pmidx_pool_dev *d = container_of(misc, struct pmidx_pool_dev, misc);
	int ret = 0;

	spin_lock(&d->open_lock);
	if (d->dying)
		ret = -ENODEV;
	else
		d->open_count++;
	spin_unlock(&d->open_lock);
	if (!ret)
		file->private_data = d;
	return ret;
}

static int pmidx_chardev_release(struct inode *inode, struct file *file)
{
	struct pmidx_pool_dev *d = file->private_data;

	spin_lock(&d->open_lock);
	d->open_count--;
	spin_unlock(&d->open_lock);
	return 0;
}

static const struct file_operations pmidx_chardev_fops = {
	.owner		= THIS_MODULE,
	.open		= pmidx_chardev_open,
	.release	= pmidx_chardev_release,
	.llseek		= noop_llseek,
};

int pmidx_chardev_register(struct pmidx_pool_dev *d)
{
	d->misc.minor = MISC_DYNAMIC_MINOR;
	d->misc.name = d->name;
	d->misc.fops = &pmidx_chardev_fops;
	d->misc.mode = 0600;
	return misc_register(&d->misc);
}

void pmidx_chardev_unregister(struct pmidx_pool_dev *d)
{
	misc_deregister(&d->misc);
}
