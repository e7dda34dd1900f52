/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Userspace shim: sort() and sort_r() as lib/sort.c has them, over qsort()
 * and qsort_r(). None is stable; @swap_func is not used (qsort() moves
 * the elements itself).
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

typedef int (*cmp_r_func_t)(const void *a, const void *b, const void *priv);
typedef void (*swap_r_func_t)(void *a, void *b, int size, const void *priv);

struct shim_sort_r {
	cmp_r_func_t	cmp;
	const void	*priv;
};

static inline int shim_sort_r_cmp(const void *a, const void *b, void *arg)
{
	const struct shim_sort_r *s = arg;

	return s->cmp(a, b, s->priv);
}

/* sort_r(): qsort_r() with the kernel's comparator (const @priv) */
static inline void sort_r(void *base, size_t num, size_t size,
			  cmp_r_func_t cmp_func, swap_r_func_t swap_func,
			  const void *priv)
{
	struct shim_sort_r s = { cmp_func, priv };

	qsort_r(base, num, size, shim_sort_r_cmp, &s);
}

#endif
