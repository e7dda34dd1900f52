/* SPDX-License-Identifier: GPL-2.0 */
/* Userspace shim: signals live in linux/sched.h here. */
#ifndef _SHIM_LINUX_SCHED_SIGNAL_H
#define _SHIM_LINUX_SCHED_SIGNAL_H

#include <linux/sched.h>

#endif /* _SHIM_LINUX_SCHED_SIGNAL_H */
