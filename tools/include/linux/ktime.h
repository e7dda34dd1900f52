/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _SHIM_LINUX_KTIME_H
#define _SHIM_LINUX_KTIME_H

#include <time.h>
#include <linux/types.h>
#include <linux/time64.h>

static inline s64 shim_clock_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (s64)ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

static inline ktime_t ktime_get(void)
{
	return shim_clock_ns(CLOCK_MONOTONIC);
}

static inline ktime_t ktime_get_real(void)
{
	return shim_clock_ns(CLOCK_REALTIME);
}

static inline ktime_t ktime_get_boottime(void)
{
	return shim_clock_ns(CLOCK_BOOTTIME);
}

#define ktime_sub(a, b)		((a) - (b))
#define ktime_add(a, b)		((a) + (b))
#define ktime_add_ns(kt, ns)	((kt) + (ns))
#define ktime_compare(a, b)	((a) < (b) ? -1 : (a) > (b))
#define ktime_before(a, b)	((a) < (b))
#define ktime_after(a, b)	((a) > (b))
#define ns_to_ktime(ns)		((ktime_t)(ns))
#define ms_to_ktime(ms)		((ktime_t)(ms) * NSEC_PER_MSEC)

static inline s64 ktime_to_ns(const ktime_t kt)
{
	return kt;
}

static inline s64 ktime_to_us(const ktime_t kt)
{
	return kt / NSEC_PER_USEC;
}

static inline s64 ktime_to_ms(const ktime_t kt)
{
	return kt / NSEC_PER_MSEC;
}

static inline s64 ktime_us_delta(const ktime_t later, const ktime_t earlier)
{
	return ktime_to_us(later - earlier);
}

static inline s64 ktime_ms_delta(const ktime_t later, const ktime_t earlier)
{
	return ktime_to_ms(later - earlier);
}

#include <linux/timekeeping.h>

#endif
