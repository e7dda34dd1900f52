/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _PMIDX_CHARDEV_H
#define _PMIDX_CHARDEV_H

struct file;
struct pmidx_pool_dev;

unsigned int pmidx_file_dispatch_flags(const struct file *file);

int pmidx_chardev_register(struct pmidx_pool_dev *d);
void pmidx_chardev_unregister(struct pmidx_pool_dev *d);

#endif /* _PMIDX_CHARDEV_H */
