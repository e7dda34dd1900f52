/* SPDX-License-Identifier: GPL-2.0 */
/* Userspace shim: the grab bag of <linux/kernel.h>. */
#ifndef _SHIM_LINUX_KERNEL_H
#define _SHIM_LINUX_KERNEL_H

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>		/* snprintf() and friends, as the kernel has them */
#include <linux/types.h>
#include <linux/compiler.h>
#include <linux/stddef.h>
#include <linux/build_bug.h>
#include <linux/minmax.h>
#include <linux/err.h>
#include <linux/bug.h>
#include <linux/printk.h>
#include <linux/log2.h>

#define U8_MAX		((u8)~0U)
#define S8_MAX		((s8)(U8_MAX >> 1))
#define S8_MIN		((s8)(-S8_MAX - 1))
#define U16_MAX		((u16)~0U)
#define S16_MAX		((s16)(U16_MAX >> 1))
#define S16_MIN		((s16)(-S16_MAX - 1))
#define U32_MAX		((u32)~0U)
#define S32_MAX		((s32)(U32_MAX >> 1))
#define S32_MIN		((s32)(-S32_MAX - 1))
#define U64_MAX		((u64)~0ULL)
#define S64_MAX		((s64)(U64_MAX >> 1))
#define S64_MIN		((s64)(-S64_MAX - 1))
#ifndef SIZE_MAX
#define SIZE_MAX	(~(size_t)0)
#endif

#define ARRAY_SIZE(arr)	(sizeof(arr) / sizeof((arr)[0]) + __must_be_array(arr))

#define __ALIGN_KERNEL_MASK(x, mask)	(((x) + (mask)) & ~(mask))
#define __ALIGN_KERNEL(x, a)	__ALIGN_KERNEL_MASK(x, (__typeof__(x))(a) - 1)
#define __ALIGN_MASK(x, mask)	__ALIGN_KERNEL_MASK((x), (mask))
#define ALIGN(x, a)		__ALIGN_KERNEL((x), (a))
#define ALIGN_DOWN(x, a)	__ALIGN_KERNEL((x) - ((a) - 1), (a))
#define PTR_ALIGN(p, a)		((__typeof__(p))ALIGN((unsigned long)(p), (a)))
#define PTR_ALIGN_DOWN(p, a)	((__typeof__(p))ALIGN_DOWN((unsigned long)(p), (a)))
#define IS_ALIGNED(x, a)	(((x) & ((__typeof__(x))(a) - 1)) == 0)

#define DIV_ROUND_UP(n, d)	(((n) + (d) - 1) / (d))
#define DIV_ROUND_UP_ULL(ll, d)	((unsigned long long)DIV_ROUND_UP((unsigned long long)(ll), (d)))
#define DIV_ROUND_DOWN_ULL(ll, d) ((unsigned long long)(ll) / (d))
#define DIV_ROUND_CLOSEST(x, d)	(((x) + ((d) / 2)) / (d))
#define roundup(x, y) ({						\
	__typeof__(y) __ru_y = (y);					\
	(((x) + (__ru_y - 1)) / __ru_y) * __ru_y;			\
})
#define rounddown(x, y) ({						\
	__typeof__(x) __rd_x = (x);					\
	__rd_x - (__rd_x % (y));					\
})
#define __round_mask(x, y)	((__typeof__(x))((y) - 1))
#define round_up(x, y)		((((x) - 1) | __round_mask(x, y)) + 1)
#define round_down(x, y)	((x) & ~__round_mask(x, y))

#define upper_32_bits(n)	((u32)(((n) >> 16) >> 16))
#define lower_32_bits(n)	((u32)((n) & 0xffffffff))
#define upper_16_bits(n)	((u16)((n) >> 16))
#define lower_16_bits(n)	((u16)((n) & 0xffff))

#define container_of(ptr, type, member) ({				\
	void *__mptr = (void *)(ptr);					\
	((type *)((char *)__mptr - offsetof(type, member)));		\
})
#define container_of_const(ptr, type, member) container_of(ptr, type, member)

#define abs_diff(a, b) ({						\
	__typeof__(a) __ad_a = (a);					\
	__typeof__(b) __ad_b = (b);					\
	(void)(&__ad_a == &__ad_b);					\
	__ad_a > __ad_b ? __ad_a - __ad_b : __ad_b - __ad_a;		\
})

/* like snprintf(), but returns what was written, not what was wanted */
static inline int vscnprintf(char *buf, size_t size, const char *fmt, va_list args)
{
	int i = vsnprintf(buf, size, fmt, args);

	if (i < (int)size)
		return i;
	return size ? size - 1 : 0;
}

static inline __printf(3, 4) int scnprintf(char *buf, size_t size, const char *fmt, ...)
{
	va_list args;
	int i;

	va_start(args, fmt);
	i = vscnprintf(buf, size, fmt, args);
	va_end(args);
	return i;
}

char *kasprintf(gfp_t gfp, const char *fmt, ...) __printf(2, 3);

#include <linux/sched.h>

#endif
