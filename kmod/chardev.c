// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/pmidxN: one misc char device per attached pool. An open handle
 * pins the pool: detach fails with -EBUSY until every handle is closed.
 * It does not pin indexes: drop-index proceeds, and the dropped id then
 * answers -ENXIO (uapi). The data path is one ioctl, PMIDX_IOC_CMD,
 * carrying a struct pmidx_cmd (core/dispatch.c does the rest).
 */
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/uaccess.h>
#include "chardev.h"
#include "core/dispatch.h"
#include "pool_dev.h"
#include "uring.h"
#include "user_access.h"

/* A file opened without write access serves reads only (uapi). */
unsigned int pmidx_file_dispatch_flags(const struct file *file)
{
	return file->f_mode & FMODE_WRITE ? 0 : PMIDX_DISPATCH_RDONLY;
}

static long pmidx_chardev_ioctl(struct file *file, unsigned int op,
				unsigned long arg)
{
	struct pmidx_pool_dev *d = file->private_data;
	struct pmidx_cmd __user *ucmd = (void __user *)arg;
	struct pmidx_cmd cmd __uninitialized;	/* all 80 bytes copied in */
	int ret;

	BUILD_BUG_ON(sizeof(struct pmidx_cmd) != 80);
	BUILD_BUG_ON(sizeof(struct pmidx_rec) != 8);
	if (op != PMIDX_IOC_CMD)
		return -ENOTTY;
	if (copy_from_user(&cmd, ucmd, sizeof(cmd)))
		return -EFAULT;
	ret = pmidx_dispatch(d->pool, &cmd, &pmidx_user_access,
			     pmidx_file_dispatch_flags(file));
	/* outputs (needed lengths included) go back even on failure */
	if (copy_to_user(ucmd, &cmd, sizeof(cmd)))
		return -EFAULT;
	return ret;
}

static int pmidx_chardev_open(struct inode *inode, struct file *file)
{
	struct miscdevice *misc = file->private_data;
	struct pmidx_pool_dev *d = container_of(misc, struct pmidx_pool_dev, misc);
	int ret;

	ret = pmidx_dev_pin(d);
	if (!ret)
		file->private_data = d;
	return ret;
}

static int pmidx_chardev_release(struct inode *inode, struct file *file)
{
	pmidx_dev_unpin(file->private_data);
	return 0;
}

static const struct file_operations pmidx_chardev_fops = {
	.owner		= THIS_MODULE,
	.open		= pmidx_chardev_open,
	.release	= pmidx_chardev_release,
	.unlocked_ioctl	= pmidx_chardev_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.uring_cmd	= pmidx_uring_cmd,
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
