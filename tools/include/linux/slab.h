/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Userspace shim: kmalloc family on malloc, so ASan/LSan see every
 * allocation. Blocking allocations (GFP_KERNEL) in atomic context WARN.
 * Tests can make the Nth allocation from now fail (shim_fail_alloc_nth())
 * and count live allocations (shim_kmalloc_live()).
 */
#ifndef _SHIM_LINUX_SLAB_H
#define _SHIM_LINUX_SLAB_H

#include <linux/types.h>
#include <linux/gfp.h>
#include <linux/compiler.h>
#include <linux/overflow.h>

#define ZERO_SIZE_PTR		((void *)16)
#define ZERO_OR_NULL_PTR(x)	((unsigned long)(x) <= (unsigned long)ZERO_SIZE_PTR)
#define ARCH_KMALLOC_MINALIGN	16
#define KMALLOC_MAX_SIZE	(1UL << 30)

void *kmalloc(size_t size, gfp_t flags) __attribute__((__malloc__));
void *krealloc(const void *p, size_t new_size, gfp_t flags);
void kfree(const void *p);
void *kvmalloc(size_t size, gfp_t flags) __attribute__((__malloc__));
void kvfree(const void *p);
void *kmemdup(const void *src, size_t len, gfp_t gfp);
char *kstrdup(const char *s, gfp_t gfp);
char *kstrndup(const char *s, size_t max, gfp_t gfp);

static inline void *kzalloc(size_t size, gfp_t flags)
{
	return kmalloc(size, flags | __GFP_ZERO);
}

static inline void *kmalloc_array(size_t n, size_t size, gfp_t flags)
{
	size_t bytes;

	if (unlikely(check_mul_overflow(n, size, &bytes)))
		return NULL;
	return kmalloc(bytes, flags);
}

static inline void *krealloc_array(void *p, size_t n, size_t size,
				   gfp_t flags)
{
	size_t bytes;

	if (unlikely(check_mul_overflow(n, size, &bytes)))
		return NULL;
	return krealloc(p, bytes, flags);
}

static inline void *kcalloc(size_t n, size_t size, gfp_t flags)
{
	return kmalloc_array(n, size, flags | __GFP_ZERO);
}

static inline void *kvzalloc(size_t size, gfp_t flags)
{
	return kvmalloc(size, flags | __GFP_ZERO);
}

static inline void *kvmalloc_array(size_t n, size_t size, gfp_t flags)
{
	size_t bytes;

	if (unlikely(check_mul_overflow(n, size, &bytes)))
		return NULL;
	return kvmalloc(bytes, flags);
}

static inline void *kvcalloc(size_t n, size_t size, gfp_t flags)
{
	return kvmalloc_array(n, size, flags | __GFP_ZERO);
}

#define kfree_sensitive(p)	kfree(p)

struct kmem_cache;

#define SLAB_HWCACHE_ALIGN	0x2000u
#define SLAB_PANIC		0x40000u
#define SLAB_ACCOUNT		0x4000000u
#define SLAB_RECLAIM_ACCOUNT	0x20000u

struct kmem_cache *kmem_cache_create(const char *name, unsigned int size,
				     unsigned int align, unsigned int flags,
				     void (*ctor)(void *));
void kmem_cache_destroy(struct kmem_cache *s);
void *kmem_cache_alloc(struct kmem_cache *s, gfp_t flags);
void kmem_cache_free(struct kmem_cache *s, void *p);

static inline void *kmem_cache_zalloc(struct kmem_cache *s, gfp_t flags)
{
	return kmem_cache_alloc(s, flags | __GFP_ZERO);
}

#define KMEM_CACHE(__struct, __flags)					\
	kmem_cache_create(#__struct, sizeof(struct __struct),		\
			  __alignof__(struct __struct), (__flags), NULL)

/* what the kernel header brings in transitively */
#include <linux/kernel.h>
#include <linux/string.h>

#endif
