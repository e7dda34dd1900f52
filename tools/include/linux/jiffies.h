/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _SHIM_LINUX_JIFFIES_H
#define _SHIM_LINUX_JIFFIES_H

#include <linux/kernel.h>
#include <linux/ktime.h>

#define HZ		1000
#define jiffies		((unsigned long)(ktime_get() / NSEC_PER_MSEC))
#define msecs_to_jiffies(m)	((unsigned long)(m))
#define jiffies_to_msecs(j)	((unsigned int)(j))
#define usecs_to_jiffies(u)	((unsigned long)DIV_ROUND_UP((u), 1000))
#define time_after(a, b)	((long)((b) - (a)) < 0)
#define time_before(a, b)	time_after(b, a)
#define time_after_eq(a, b)	((long)((a) - (b)) >= 0)
#define time_before_eq(a, b)	time_after_eq(b, a)

#endif
