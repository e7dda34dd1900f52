/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _PMIDX_USER_ACCESS_H
#define _PMIDX_USER_ACCESS_H

struct pmidx_uaccess;

/* The calling task's memory, for the ioctl and io_uring paths. */
extern const struct pmidx_uaccess pmidx_user_access;

#endif /* _PMIDX_USER_ACCESS_H */
