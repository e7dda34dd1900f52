// SPDX-License-Identifier: GPL-2.0
/*
 * Userspace pmem backend (see <shim/pmem.h>): the cache-maintenance and
 * fence entry points of kmod/core, dispatched to the installed ops.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/types.h>
#include <linux/bug.h>
#include <linux/kernel.h>
#include <linux/libnvdimm.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <shim/pmem.h>

#define LINE	64

/* ---- hardware ---------------------------------------------------------------- */

static enum shim_pmem_hw hw_mode = SHIM_PMEM_HW_AUTO;
static enum shim_pmem_hw hw_resolved;	/* AUTO until resolved */
static enum shim_pmem_hw hw_forced;	/* shim_pmem_force_hw(); AUTO: none */
static pthread_once_t hw_once = PTHREAD_ONCE_INIT;

#if defined(__x86_64__)
#include <cpuid.h>

static enum shim_pmem_hw hw_detect(void)
{
	unsigned int a, b, c, d;

	if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
		return SHIM_PMEM_HW_CLFLUSH;
	if (b & (1U << 24))
		return SHIM_PMEM_HW_CLWB;
	if (b & (1U << 23))
		return SHIM_PMEM_HW_CLFLUSHOPT;
	return SHIM_PMEM_HW_CLFLUSH;
}

static void hw_line(enum shim_pmem_hw hw, const void *p)
{
	switch (hw) {
	case SHIM_PMEM_HW_CLWB:
		/* clwb (%reg), spelled out for old assemblers */
		__asm__ __volatile__(".byte 0x66, 0x0f, 0xae, 0x30"
				     :: "a"(p) : "memory");
		break;
	case SHIM_PMEM_HW_CLFLUSHOPT:
		__asm__ __volatile__(".byte 0x66, 0x0f, 0xae, 0x38"
				     :: "a"(p) : "memory");
		break;
	case SHIM_PMEM_HW_CLFLUSH:
		__asm__ __volatile__("clflush (%0)" :: "r"(p) : "memory");
		break;
	default:
		break;
	}
}

void shim_pmem_hw_fence(void)
{
	enum shim_pmem_hw hw = shim_pmem_get_hw();

	if (hw == SHIM_PMEM_HW_VOLATILE)
		__atomic_signal_fence(__ATOMIC_SEQ_CST);	/* compiler only */
	else if (hw != SHIM_PMEM_HW_NONE)
		__asm__ __volatile__("sfence" ::: "memory");
	else
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
}
#else
static enum shim_pmem_hw hw_detect(void)
{
	return SHIM_PMEM_HW_NONE;
}

static void hw_line(enum shim_pmem_hw hw, const void *p)
{
}

void shim_pmem_hw_fence(void)
{
	if (shim_pmem_get_hw() == SHIM_PMEM_HW_VOLATILE)
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
	else
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
}
#endif

static void hw_init(void)
{
	const char *e = getenv("PMIDX_PMEM_HW");
	enum shim_pmem_hw hw = __atomic_load_n(&hw_mode, __ATOMIC_RELAXED);

	if (e && !strcmp(e, "none"))
		hw = SHIM_PMEM_HW_NONE;
	else if (e && !strcmp(e, "volatile"))
		hw = SHIM_PMEM_HW_VOLATILE;
	else if (e && !strcmp(e, "clwb"))
		hw = SHIM_PMEM_HW_CLWB;
	else if (e && !strcmp(e, "clflushopt"))
		hw = SHIM_PMEM_HW_CLFLUSHOPT;
	else if (e && !strcmp(e, "clflush"))
		hw = SHIM_PMEM_HW_CLFLUSH;
	if (hw == SHIM_PMEM_HW_AUTO)
		hw = hw_detect();
	__atomic_store_n(&hw_resolved, hw, __ATOMIC_RELAXED);
}

void shim_pmem_force_hw(enum shim_pmem_hw hw)
{
	pthread_once(&hw_once, hw_init);
	__atomic_store_n(&hw_forced, hw, __ATOMIC_RELAXED);
}

void shim_pmem_set_hw(enum shim_pmem_hw hw)
{
	pthread_once(&hw_once, hw_init);
	if (getenv("PMIDX_PMEM_HW"))
		return;			/* the environment wins */
	__atomic_store_n(&hw_mode, hw, __ATOMIC_RELAXED);
	__atomic_store_n(&hw_resolved, hw == SHIM_PMEM_HW_AUTO ? hw_detect() : hw,
			 __ATOMIC_RELAXED);
}

enum shim_pmem_hw shim_pmem_get_hw(void)
{
	enum shim_pmem_hw forced;

	pthread_once(&hw_once, hw_init);
	forced = __atomic_load_n(&hw_forced, __ATOMIC_RELAXED);
	if (forced != SHIM_PMEM_HW_AUTO)
		return forced;
	return __atomic_load_n(&hw_resolved, __ATOMIC_RELAXED);
}

const char *shim_pmem_hw_name(enum shim_pmem_hw hw)
{
	static const char *const names[] = {
		[SHIM_PMEM_HW_AUTO] = "auto",
		[SHIM_PMEM_HW_CLWB] = "clwb",
		[SHIM_PMEM_HW_CLFLUSHOPT] = "clflushopt",
		[SHIM_PMEM_HW_CLFLUSH] = "clflush",
		[SHIM_PMEM_HW_NONE] = "none",
		[SHIM_PMEM_HW_VOLATILE] = "volatile",
	};

	return hw < ARRAY_SIZE(names) ? names[hw] : "?";
}

void shim_pmem_hw_flush(const void *addr, size_t len)
{
	enum shim_pmem_hw hw = shim_pmem_get_hw();
	uintptr_t p, end;

	if (hw == SHIM_PMEM_HW_NONE || hw == SHIM_PMEM_HW_VOLATILE || !len)
		return;
	p = (uintptr_t)addr & ~(uintptr_t)(LINE - 1);
	end = (uintptr_t)addr + len;
	for (; p < end; p += LINE)
		hw_line(hw, (const void *)p);
}

/* ---- ops --------------------------------------------------------------------- */

static void hw_ops_flush(void *priv, const void *addr, size_t len)
{
	shim_pmem_hw_flush(addr, len);
}

static void hw_ops_fence(void *priv, bool persist)
{
	if (persist)
		shim_pmem_hw_fence();
	else
		__atomic_thread_fence(__ATOMIC_RELEASE);	/* x86: compiler */
}

static const struct shim_pmem_ops hw_ops = {
	.flush = hw_ops_flush,
	.fence = hw_ops_fence,
};

static const struct shim_pmem_ops *cur_ops = &hw_ops;

const struct shim_pmem_ops *shim_pmem_default_ops(void)
{
	return &hw_ops;
}

const struct shim_pmem_ops *shim_pmem_set_ops(const struct shim_pmem_ops *ops)
{
	return __atomic_exchange_n(&cur_ops, ops ? ops : &hw_ops,
				   __ATOMIC_ACQ_REL);
}

static const struct shim_pmem_ops *ops_get(void)
{
	return __atomic_load_n(&cur_ops, __ATOMIC_ACQUIRE);
}

void arch_wb_cache_pmem(void *addr, size_t size)
{
	const struct shim_pmem_ops *ops = ops_get();

	ops->flush(ops->priv, addr, size);
}

void shim_pmem_expendable(const void *addr, size_t size)
{
	const struct shim_pmem_ops *ops = ops_get();

	if (ops->expendable)
		ops->expendable(ops->priv, addr, size);
}

void arch_invalidate_pmem(void *addr, size_t size)
{
	shim_pmem_hw_flush(addr, size);
}

void shim_pmem_fence(int persist)
{
	const struct shim_pmem_ops *ops = ops_get();

	ops->fence(ops->priv, persist);
}

void memcpy_flushcache(void *dst, const void *src, size_t cnt)
{
	const struct shim_pmem_ops *ops = ops_get();

	memcpy(dst, src, cnt);
	ops->flush(ops->priv, dst, cnt);
}

/* ---- media errors -------------------------------------------------------------- */

/*
 * Poison is per cache line, as on the hardware: copy_mc_to_kernel() stops
 * at the first poisoned line of its source. A trapped range (see
 * shim_pmem_poison_trap()) also makes any other access to its pages fault,
 * the way a load of a poisoned line machine-checks: the pages are
 * PROT_NONE and copy_mc_to_kernel() reads their other bytes from a copy
 * taken when the trap was set.
 */
#define MAX_POISON	16

static pthread_mutex_t poison_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	uintptr_t start, end;
} poison[MAX_POISON];
static unsigned int nr_poison;

static struct {
	uintptr_t start, end;		/* whole pages */
	u8 *shadow;			/* their bytes when trapped */
} trap[MAX_POISON];
static unsigned int nr_trap;

static int poison_add(const void *addr, size_t len)
{
	if (nr_poison == MAX_POISON)
		return -ENOSPC;
	poison[nr_poison].start = (uintptr_t)addr;
	poison[nr_poison].end = (uintptr_t)addr + len;
	__atomic_store_n(&nr_poison, nr_poison + 1, __ATOMIC_RELEASE);
	return 0;
}

int shim_pmem_poison(const void *addr, size_t len)
{
	int ret;

	pthread_mutex_lock(&poison_lock);
	ret = poison_add(addr, len);
	pthread_mutex_unlock(&poison_lock);
	return ret;
}

int shim_pmem_poison_trap(const void *addr, size_t len)
{
	uintptr_t pg = sysconf(_SC_PAGESIZE);
	uintptr_t ps = (uintptr_t)addr & ~(pg - 1);
	uintptr_t pe = ALIGN((uintptr_t)addr + len, pg);
	unsigned int i;
	int ret = -ENOSPC;
	u8 *shadow;

	pthread_mutex_lock(&poison_lock);
	for (i = 0; i < nr_trap; i++) {
		if (trap[i].start < pe && trap[i].end > ps) {
			ret = -EEXIST;
			goto out;
		}
	}
	if (nr_trap == MAX_POISON)
		goto out;
	shadow = malloc(pe - ps);
	if (!shadow)
		goto out;
	memcpy(shadow, (void *)ps, pe - ps);
	ret = poison_add(addr, len);
	if (!ret && mprotect((void *)ps, pe - ps, PROT_NONE))
		ret = -errno;
	if (ret) {
		free(shadow);
		goto out;
	}
	trap[nr_trap].start = ps;
	trap[nr_trap].end = pe;
	trap[nr_trap].shadow = shadow;
	nr_trap++;
out:
	pthread_mutex_unlock(&poison_lock);
	return ret;
}

void shim_pmem_clear_poison(void)
{
	unsigned int i;

	pthread_mutex_lock(&poison_lock);
	for (i = 0; i < nr_trap; i++) {
		/* the pages may be gone (image unmapped): then nothing to do */
		mprotect((void *)trap[i].start, trap[i].end - trap[i].start,
			 PROT_READ | PROT_WRITE);
		free(trap[i].shadow);
	}
	nr_trap = 0;
	__atomic_store_n(&nr_poison, 0, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&poison_lock);
}

/* memcpy, reading trapped pages from their shadow; poison_lock held */
static void copy_untrapped(u8 *dst, uintptr_t s, size_t n)
{
	while (n) {
		size_t chunk = n;
		const u8 *from = (const u8 *)s;
		unsigned int i;

		for (i = 0; i < nr_trap; i++) {
			if (s >= trap[i].start && s < trap[i].end) {
				chunk = min(n, (size_t)(trap[i].end - s));
				from = trap[i].shadow + (s - trap[i].start);
				break;
			}
			if (trap[i].start > s)
				chunk = min(chunk, (size_t)(trap[i].start - s));
		}
		memcpy(dst, from, chunk);
		dst += chunk;
		s += chunk;
		n -= chunk;
	}
}

unsigned long copy_mc_to_kernel(void *dst, const void *src, size_t cnt)
{
	uintptr_t s = (uintptr_t)src, first = s + cnt;
	unsigned int i;

	if (!__atomic_load_n(&nr_poison, __ATOMIC_ACQUIRE)) {
		memcpy(dst, src, cnt);
		return 0;
	}
	pthread_mutex_lock(&poison_lock);
	for (i = 0; i < nr_poison; i++) {
		uintptr_t ps = poison[i].start & ~(uintptr_t)(LINE - 1);
		uintptr_t pe = ALIGN(poison[i].end, (uintptr_t)LINE);

		if (ps < s + cnt && pe > s)
			first = min(first, max(ps, s));
	}
	copy_untrapped(dst, s, first - s);
	pthread_mutex_unlock(&poison_lock);
	return s + cnt - first;
}
