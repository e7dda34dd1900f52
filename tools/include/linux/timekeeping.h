/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _SHIM_LINUX_TIMEKEEPING_H
#define _SHIM_LINUX_TIMEKEEPING_H

#include <linux/ktime.h>

static inline u64 ktime_get_ns(void)
{
	return ktime_get();
}

static inline u64 ktime_get_real_ns(void)
{
	return ktime_get_real();
}

static inline u64 ktime_get_boottime_ns(void)
{
	return ktime_get_boottime();
}

static inline time64_t ktime_get_real_seconds(void)
{
	return ktime_get_real() / NSEC_PER_SEC;
}

static inline time64_t ktime_get_seconds(void)
{
	return ktime_get() / NSEC_PER_SEC;
}

static inline void ktime_get_real_ts64(struct timespec64 *ts)
{
	s64 ns = ktime_get_real();

	ts->tv_sec = ns / NSEC_PER_SEC;
	ts->tv_nsec = ns % NSEC_PER_SEC;
}

#endif
