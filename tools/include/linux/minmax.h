/* SPDX-License-Identifier: GPL-2.0 */
/* Userspace shim: type-checked min/max (distinct types warn, as in the kernel). */
#ifndef _SHIM_LINUX_MINMAX_H
#define _SHIM_LINUX_MINMAX_H

#include <linux/compiler.h>

#define __shim_cmp(x, y, op) ({						\
	__typeof__(x) __x = (x);					\
	__typeof__(y) __y = (y);					\
	(void)(&__x == &__y);						\
	__x op __y ? __x : __y;						\
})

#define min(x, y)		__shim_cmp(x, y, <)
#define max(x, y)		__shim_cmp(x, y, >)
#define min3(x, y, z)		min((typeof(x))min(x, y), z)
#define max3(x, y, z)		max((typeof(x))max(x, y), z)
#define min_t(type, x, y)	__shim_cmp((type)(x), (type)(y), <)
#define max_t(type, x, y)	__shim_cmp((type)(x), (type)(y), >)
#define min_not_zero(x, y) ({						\
	__typeof__(x) __mx = (x);					\
	__typeof__(y) __my = (y);					\
	__mx == 0 ? __my : ((__my == 0) ? __mx : min(__mx, __my));	\
})
#define clamp(val, lo, hi)	min((typeof(val))max(val, lo), hi)
#define clamp_t(type, val, lo, hi) min_t(type, max_t(type, val, lo), hi)
#define clamp_val(val, lo, hi)	clamp_t(typeof(val), val, lo, hi)
#define swap(a, b) do {							\
	__typeof__(a) __tmp = (a);					\
	(a) = (b);							\
	(b) = __tmp;							\
} while (0)

#endif
