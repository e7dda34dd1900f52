/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Userspace shim: sort() as lib/sort.c has it, over qsort(). Neither is
 * stable; @swap_func is not used (qsort() moves the elements itself).
 */
#ifndef _SHIM_LINUX_SORT_H
#define _SHIM_LINUX_SORT_H

#include <stdlib.h>
#include <linux/types.h>

typedef int (*cmp_func_t)(const void *a, const void *b);
typedef void (*swap_func_t)(void *a, void *b, int size);

static inline void sort(void *base, size_t num, size_t size,
			cmp_func_t cmp_func, swap_func_t swap_func)
{
	qsort(base, num, size, cmp_func);
}

#endif
