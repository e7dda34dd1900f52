/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _PMIDX_PARALLEL_H
#define _PMIDX_PARALLEL_H

/*
 * Run fn(arg, 0) .. fn(arg, n - 1) concurrently on unbound workers and
 * wait for all of them. Return: 0, or the first non-zero fn() result.
 */
int pmidx_run_parallel(unsigned int n, int (*fn)(void *arg, unsigned int i),
		       void *arg);

#endif /* _PMIDX_PARALLEL_H */
