/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Userspace shim: kernel types on top of the uapi <linux/types.h>.
 *
 * Like the kernel's tools/include, every shim header may pull in what the
 * kernel gets transitively (compiler.h, barriers), so that kmod/core
 * compiles unchanged; the kernel build still catches missing includes.
 */
#ifndef _SHIM_LINUX_TYPES_H
#define _SHIM_LINUX_TYPES_H

#include_next <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef __u8	u8;
typedef __s8	s8;
typedef __u16	u16;
typedef __s16	s16;
typedef __u32	u32;
typedef __s32	s32;
typedef __u64	u64;
typedef __s64	s64;

typedef unsigned int	gfp_t;
typedef u64		phys_addr_t;
typedef u64		dma_addr_t;
typedef u64		sector_t;
typedef s64		ktime_t;

typedef struct {
	int counter;
} atomic_t;

typedef struct {
	s64 counter;
} atomic64_t;

typedef struct {
	long counter;
} atomic_long_t;

struct list_head {
	struct list_head *next, *prev;
};

struct hlist_head {
	struct hlist_node *first;
};

struct hlist_node {
	struct hlist_node *next, **pprev;
};

#include <linux/compiler.h>
#include <shim/byteorder.h>

#endif /* _SHIM_LINUX_TYPES_H */
