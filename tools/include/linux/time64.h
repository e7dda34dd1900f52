/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _SHIM_LINUX_TIME64_H
#define _SHIM_LINUX_TIME64_H

#include <linux/types.h>

typedef s64 time64_t;

struct timespec64 {
	time64_t	tv_sec;
	long		tv_nsec;
};

#define MSEC_PER_SEC	1000L
#define USEC_PER_MSEC	1000L
#define NSEC_PER_USEC	1000L
#define NSEC_PER_MSEC	1000000L
#define USEC_PER_SEC	1000000L
#define NSEC_PER_SEC	1000000000L

#endif
