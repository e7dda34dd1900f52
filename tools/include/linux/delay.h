/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _SHIM_LINUX_DELAY_H
#define _SHIM_LINUX_DELAY_H

#include <linux/types.h>
#include <linux/sched.h>

void msleep(unsigned int msecs);
void usleep_range(unsigned long min, unsigned long max);
void udelay(unsigned long usecs);
#define ndelay(n)	udelay(((n) + 999) / 1000)
#define mdelay(n)	udelay((n) * 1000UL)
#define msleep_interruptible(m)	({ msleep(m); 0UL; })

#endif
