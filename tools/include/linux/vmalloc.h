/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _SHIM_LINUX_VMALLOC_H
#define _SHIM_LINUX_VMALLOC_H

#include <linux/types.h>
#include <linux/slab.h>

static inline void *vmalloc(unsigned long size)
{
	return kvmalloc(size, GFP_KERNEL);
}

static inline void *vzalloc(unsigned long size)
{
	return kvmalloc(size, GFP_KERNEL | __GFP_ZERO);
}

static inline void *vmalloc_array(size_t n, size_t size)
{
	return kvmalloc_array(n, size, GFP_KERNEL);
}

static inline void *vcalloc(size_t n, size_t size)
{
	return kvcalloc(n, size, GFP_KERNEL);
}

static inline void vfree(const void *addr)
{
	kvfree(addr);
}

#endif
