// SPDX-License-Identifier: GPL-2.0
/*
 * Userspace shim: kmalloc family, kmem_cache, and dynamic per-CPU memory.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <linux/types.h>
#include <linux/bitmap.h>
#include <linux/bug.h>
#include <linux/cache.h>
#include <linux/kernel.h>
#include <linux/lockdep.h>
#include <linux/percpu.h>
#include <linux/slab.h>
#include <shim/sanitizer.h>
#include <shim/shim.h>

#ifdef SHIM_ASAN
#include <sanitizer/asan_interface.h>
#define shim_poison(p, n)	ASAN_POISON_MEMORY_REGION(p, n)
#define shim_unpoison(p, n)	ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define shim_poison(p, n)	((void)(p), (void)(n))
#define shim_unpoison(p, n)	((void)(p), (void)(n))
#endif

/* ---- failure injection and accounting ------------------------------------ */

static unsigned long fail_nth;
static const char *fail_owner;	/* NULL: every thread's allocations count */
static __thread char fail_self_token;
static unsigned long alloc_calls;
static bool fail_atomic;
static bool fail_all;
static bool fail_fired;
static long kmalloc_live;
static long percpu_live;

/*
 * Arm (n > 0: resets "fired") or disarm (0: keeps "fired" readable), for
 * the allocations of @owner's thread only (or, NULL, of every thread).
 * Release: a thread that sees @n armed sees its owner.
 */
static void fail_arm(unsigned long n, const char *owner)
{
	if (n)
		__atomic_store_n(&fail_fired, false, __ATOMIC_RELAXED);
	__atomic_store_n(&fail_owner, owner, __ATOMIC_RELAXED);
	__atomic_store_n(&fail_nth, n, __ATOMIC_RELEASE);
}

void shim_fail_alloc_nth(unsigned long n)
{
	fail_arm(n, NULL);
}

void shim_fail_alloc_nth_self(unsigned long n)
{
	fail_arm(n, &fail_self_token);
}

/* While @on, every allocation that may not sleep fails. */
void shim_fail_atomic(bool on)
{
	__atomic_store_n(&fail_atomic, on, __ATOMIC_RELAXED);
}

/* While @on, every allocation fails. */
void shim_fail_all(bool on)
{
	__atomic_store_n(&fail_all, on, __ATOMIC_RELAXED);
}

bool shim_fail_alloc_fired(void)
{
	return __atomic_load_n(&fail_fired, __ATOMIC_RELAXED);
}

long shim_kmalloc_live(void)
{
	return __atomic_load_n(&kmalloc_live, __ATOMIC_RELAXED);
}

long shim_percpu_live(void)
{
	return __atomic_load_n(&percpu_live, __ATOMIC_RELAXED);
}

unsigned long shim_alloc_calls(void)
{
	return __atomic_load_n(&alloc_calls, __ATOMIC_RELAXED);
}

/* Should this allocation fail? Also the might_sleep() check. */
static bool alloc_should_fail(gfp_t flags)
{
	unsigned long n = __atomic_load_n(&fail_nth, __ATOMIC_ACQUIRE);
	const char *owner = __atomic_load_n(&fail_owner, __ATOMIC_RELAXED);

	__atomic_fetch_add(&alloc_calls, 1, __ATOMIC_RELAXED);
	if (gfpflags_allow_blocking(flags))
		might_sleep();
	/* as in the kernel, a __GFP_NOFAIL allocation never fails */
	if (flags & __GFP_NOFAIL)
		return false;
	if (__atomic_load_n(&fail_all, __ATOMIC_RELAXED) ||
	    (!gfpflags_allow_blocking(flags) &&
	     __atomic_load_n(&fail_atomic, __ATOMIC_RELAXED))) {
		__atomic_store_n(&fail_fired, true, __ATOMIC_RELAXED);
		return true;
	}
	if (owner && owner != &fail_self_token)
		return false;	/* armed for another thread */
	while (n) {
		if (__atomic_compare_exchange_n(&fail_nth, &n, n - 1, false,
						__ATOMIC_RELAXED,
						__ATOMIC_RELAXED)) {
			if (n == 1) {
				__atomic_store_n(&fail_fired, true,
						 __ATOMIC_RELAXED);
				return true;
			}
			break;
		}
	}
	return false;
}

/* ---- kmalloc --------------------------------------------------------------- */

void *kmalloc(size_t size, gfp_t flags)
{
	void *p;

	if (alloc_should_fail(flags))
		return NULL;
	if (!size)
		return ZERO_SIZE_PTR;
	if (size > KMALLOC_MAX_SIZE)
		return NULL;
	p = (flags & __GFP_ZERO) ? calloc(1, size) : malloc(size);
	if (p)
		__atomic_fetch_add(&kmalloc_live, 1, __ATOMIC_RELAXED);
	return p;
}

void kfree(const void *p)
{
	if (ZERO_OR_NULL_PTR(p))
		return;
	__atomic_fetch_sub(&kmalloc_live, 1, __ATOMIC_RELAXED);
	free((void *)p);
}

void *krealloc(const void *p, size_t new_size, gfp_t flags)
{
	void *n;

	if (ZERO_OR_NULL_PTR(p))
		return kmalloc(new_size, flags);
	if (!new_size) {
		kfree(p);
		return ZERO_SIZE_PTR;
	}
	if (alloc_should_fail(flags))
		return NULL;
	n = realloc((void *)p, new_size);
	return n;
}

void *kvmalloc(size_t size, gfp_t flags)
{
	return kmalloc(size, flags);
}

void kvfree(const void *p)
{
	kfree(p);
}

void *kmemdup(const void *src, size_t len, gfp_t gfp)
{
	void *p = kmalloc(len, gfp);

	if (p && len)
		memcpy(p, src, len);
	return p;
}

char *kstrndup(const char *s, size_t max, gfp_t gfp)
{
	size_t len;
	char *p;

	if (!s)
		return NULL;
	len = strnlen(s, max);
	p = kmalloc(len + 1, gfp);
	if (p) {
		memcpy(p, s, len);
		p[len] = 0;
	}
	return p;
}

char *kstrdup(const char *s, gfp_t gfp)
{
	return s ? kstrndup(s, strlen(s), gfp) : NULL;
}

char *kasprintf(gfp_t gfp, const char *fmt, ...)
{
	va_list ap;
	char *p;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	p = kmalloc(n + 1, gfp);
	if (!p)
		return NULL;
	va_start(ap, fmt);
	vsnprintf(p, n + 1, fmt, ap);
	va_end(ap);
	return p;
}

unsigned long *bitmap_alloc(unsigned int nbits, gfp_t flags)
{
	return kmalloc_array(BITS_TO_LONGS(nbits), sizeof(unsigned long), flags);
}

unsigned long *bitmap_zalloc(unsigned int nbits, gfp_t flags)
{
	return bitmap_alloc(nbits, flags | __GFP_ZERO);
}

void bitmap_free(const unsigned long *bitmap)
{
	kfree(bitmap);
}

/* ---- kmem_cache -------------------------------------------------------------- */

/*
 * Objects are aligned as the kernel's slab aligns them (SLAB_HWCACHE_ALIGN:
 * a cache line), and each is preceded by a word naming its cache, so that
 * freeing one into another cache WARNs and a kfree() of one (which the
 * engines must not rely on) fails in free().
 */
struct kmem_cache {
	const char	*name;
	unsigned int	size;
	unsigned int	align;		/* also the header before each object */
	void		(*ctor)(void *);
	long		live;
};

struct kmem_cache *kmem_cache_create(const char *name, unsigned int size,
				     unsigned int align, unsigned int flags,
				     void (*ctor)(void *))
{
	struct kmem_cache *s = kzalloc(sizeof(*s), GFP_KERNEL);

	if (!s)
		return NULL;
	if (flags & SLAB_HWCACHE_ALIGN)
		align = max(align, (unsigned int)L1_CACHE_BYTES);
	s->name = name;
	s->size = size;
	s->align = max_t(unsigned int, align, 2 * sizeof(void *));
	s->ctor = ctor;
	return s;
}

void kmem_cache_destroy(struct kmem_cache *s)
{
	if (!s)
		return;
	WARN(__atomic_load_n(&s->live, __ATOMIC_RELAXED),
	     "kmem_cache_destroy %s: %ld objects remaining", s->name, s->live);
	kfree(s);
}

static struct kmem_cache **obj_owner(void *p)
{
	return (struct kmem_cache **)p - 1;
}

void *kmem_cache_alloc(struct kmem_cache *s, gfp_t flags)
{
	void *raw, *p;

	if (alloc_should_fail(flags))
		return NULL;
	if (posix_memalign(&raw, s->align, s->align + s->size))
		return NULL;
	p = (u8 *)raw + s->align;
	*obj_owner(p) = s;
	if (flags & __GFP_ZERO)
		memset(p, 0, s->size);
	__atomic_fetch_add(&kmalloc_live, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&s->live, 1, __ATOMIC_RELAXED);
	if (s->ctor)
		s->ctor(p);
	return p;
}

void kmem_cache_free(struct kmem_cache *s, void *p)
{
	if (!p)
		return;
	if (WARN(*obj_owner(p) != s, "%s %s: object of %s", __func__,
		 s->name, (*obj_owner(p))->name))
		return;
	__atomic_fetch_sub(&kmalloc_live, 1, __ATOMIC_RELAXED);
	__atomic_fetch_sub(&s->live, 1, __ATOMIC_RELAXED);
	free((u8 *)p - s->align);
}

/* ---- per-CPU memory ------------------------------------------------------------ */

#define PCPU_BLOCK	64
#define PCPU_BLOCKS	(SHIM_PCPU_UNIT / PCPU_BLOCK)

static pthread_mutex_t pcpu_lock = PTHREAD_MUTEX_INITIALIZER;
static char *pcpu_base;
static unsigned long pcpu_map[BITS_TO_LONGS(PCPU_BLOCKS)];
static u32 pcpu_len[PCPU_BLOCKS];	/* blocks, at the first block */
static size_t pcpu_size[PCPU_BLOCKS];	/* bytes asked for */

static bool pcpu_init_locked(void)
{
	size_t total = SHIM_PCPU_UNIT * SHIM_NR_CPUS_MAX;
	void *p;

	if (pcpu_base)
		return true;
	p = mmap(NULL, total, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return false;
	pcpu_base = p;
	shim_poison(pcpu_base, total);
	return true;
}

void *shim_alloc_percpu(size_t size, size_t align, gfp_t gfp)
{
	unsigned long blk, n, mask;
	unsigned int cpu;
	char *p;

	if (alloc_should_fail(gfp))
		return NULL;
	if (!size || size > SHIM_PCPU_UNIT / 4 || align > 4096)
		return NULL;
	n = DIV_ROUND_UP(size, PCPU_BLOCK);
	mask = align > PCPU_BLOCK ? align / PCPU_BLOCK - 1 : 0;
	pthread_mutex_lock(&pcpu_lock);
	if (!pcpu_init_locked()) {
		pthread_mutex_unlock(&pcpu_lock);
		return NULL;
	}
	blk = bitmap_find_next_zero_area(pcpu_map, PCPU_BLOCKS, 0, n, mask);
	if (blk >= PCPU_BLOCKS) {
		pthread_mutex_unlock(&pcpu_lock);
		return NULL;
	}
	bitmap_set(pcpu_map, blk, n);
	pcpu_len[blk] = n;
	pcpu_size[blk] = size;
	p = pcpu_base + blk * PCPU_BLOCK;
	for (cpu = 0; cpu < SHIM_NR_CPUS_MAX; cpu++) {
		shim_unpoison(p + cpu * SHIM_PCPU_UNIT, size);
		memset(p + cpu * SHIM_PCPU_UNIT, 0, size);
	}
	pthread_mutex_unlock(&pcpu_lock);
	__atomic_fetch_add(&percpu_live, 1, __ATOMIC_RELAXED);
	return p;
}

void free_percpu(void __percpu *ptr)
{
	unsigned long blk;
	unsigned int cpu;
	char *p = ptr;

	if (!p)
		return;
	pthread_mutex_lock(&pcpu_lock);
	BUG_ON(p < pcpu_base || p >= pcpu_base + SHIM_PCPU_UNIT ||
	       (p - pcpu_base) % PCPU_BLOCK);
	blk = (p - pcpu_base) / PCPU_BLOCK;
	/* double free or a pointer that never came from alloc_percpu() */
	BUG_ON(!pcpu_len[blk] || !test_bit(blk, pcpu_map));
	bitmap_clear(pcpu_map, blk, pcpu_len[blk]);
	for (cpu = 0; cpu < SHIM_NR_CPUS_MAX; cpu++)
		shim_poison(p + cpu * SHIM_PCPU_UNIT, pcpu_size[blk]);
	pcpu_len[blk] = 0;
	pcpu_size[blk] = 0;
	pthread_mutex_unlock(&pcpu_lock);
	__atomic_fetch_sub(&percpu_live, 1, __ATOMIC_RELAXED);
}
