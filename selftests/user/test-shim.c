// SPDX-License-Identifier: GPL-2.0
/*
 * The userspace shim itself: the kernel semantics kmod/core relies on
 * (crc32c, bitmaps, prandom, ctype, per-CPU memory, workqueues, locks,
 * media errors) must hold here, or the other tests prove nothing.
 */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/bitmap.h>
#include <linux/cache.h>
#include <linux/crc32.h>
#include <linux/ctype.h>
#include <linux/err.h>
#include <linux/list.h>
#include <linux/log2.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/prandom.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/uaccess.h>
#include <linux/workqueue.h>
#include <shim/pmem.h>
#include <shim/shim.h>
#include <linux/completion.h>
#include <linux/delay.h>
#include <linux/kthread.h>
#include "core/gc.h"
#include "core/parallel.h"
#include "core/pmem.h"
#include "harness.h"

static void crc32c_vectors(void)
{
	static const u8 zeros[32], ones[32] = {
		[0 ... 31] = 0xff,
	};
	u8 inc[32];
	unsigned int i;

	for (i = 0; i < 32; i++)
		inc[i] = i;
	/* check value and the iSCSI (RFC 3720 B.4) vectors */
	UT_EQ(~__crc32c_le(~0U, (const u8 *)"123456789", 9), 0xe3069283);
	UT_EQ(~__crc32c_le(~0U, zeros, 32), 0x8a9136aa);
	UT_EQ(~__crc32c_le(~0U, ones, 32), 0x62a8ab43);
	UT_EQ(~__crc32c_le(~0U, inc, 32), 0x46dd794e);
	/* CRC-32 (IEEE) check value */
	UT_EQ(~crc32_le(~0U, (const u8 *)"123456789", 9), 0xcbf43926);
	/* incremental == one shot, at every split and alignment */
	for (i = 0; i <= 32; i++) {
		u32 c = __crc32c_le(~0U, inc, i);

		UT_EQ(__crc32c_le(c, inc + i, 32 - i), __crc32c_le(~0U, inc, 32));
	}
	UT_EQ(__crc32c_le(0x1234, NULL, 0), 0x1234);
}

static void bitmap_ops(void)
{
	DECLARE_BITMAP(map, 300);
	u64 arr[5], back[5];
	unsigned long pos;
	unsigned int i;

	bitmap_zero(map, 300);
	UT_EQ(find_first_bit(map, 300), 300);
	UT_EQ(find_first_zero_bit(map, 300), 0);
	bitmap_set(map, 3, 130);
	UT_EQ(bitmap_weight(map, 300), 130);
	UT_EQ(find_first_bit(map, 300), 3);
	UT_EQ(find_next_zero_bit(map, 300, 3), 133);
	UT_EQ(find_next_zero_bit(map, 100, 3), 100);
	UT_EQ(find_last_bit(map, 300), 132);
	bitmap_clear(map, 64, 10);
	UT_EQ(bitmap_weight(map, 300), 120);
	UT_ASSERT(!test_bit(70, map) && test_bit(63, map) && test_bit(74, map));
	/* zero areas: first fit, alignment, not found > size */
	UT_EQ(bitmap_find_next_zero_area(map, 300, 0, 3, 0), 0);
	UT_EQ(bitmap_find_next_zero_area(map, 300, 0, 4, 0), 64);
	UT_EQ(bitmap_find_next_zero_area(map, 300, 0, 11, 0), 133);
	UT_EQ(bitmap_find_next_zero_area(map, 300, 0, 8, 7), 64);
	UT_EQ(bitmap_find_next_zero_area(map, 300, 65, 8, 7), 136);
	pos = bitmap_find_next_zero_area(map, 300, 0, 200, 0);
	UT_ASSERT(pos > 300);
	pos = bitmap_find_next_zero_area(map, 300, 290, 11, 0);
	UT_ASSERT(pos > 300);
	UT_EQ(bitmap_find_next_zero_area(map, 300, 290, 10, 0), 290);
	/* arr64 round trip clears the tail */
	bitmap_fill(map, 300);
	bitmap_to_arr64(arr, map, 300);
	UT_EQ(arr[4], (1ULL << 44) - 1);
	for (i = 0; i < 5; i++)
		arr[i] = ut_rand64();
	bitmap_from_arr64(map, arr, 300);
	bitmap_to_arr64(back, map, 300);
	for (i = 0; i < 4; i++)
		UT_EQ(back[i], arr[i]);
	UT_EQ(back[4], arr[4] & ((1ULL << 44) - 1));
	UT_EQ(bitmap_weight(map, 300), hweight64(arr[0]) + hweight64(arr[1]) +
	      hweight64(arr[2]) + hweight64(arr[3]) +
	      hweight64(arr[4] & ((1ULL << 44) - 1)));
	UT_ASSERT(__test_and_set_bit(299, map) == !!(arr[4] & (1ULL << 43)));
	UT_ASSERT(__test_and_clear_bit(299, map));
	UT_ASSERT(!test_bit(299, map));
}

static void bitmap_random(void)
{
	unsigned long map[4], ref[256];
	unsigned int round, i;

	for (round = 0; round < 2000; round++) {
		unsigned int start = ut_rand(256), len = ut_rand(257 - start);
		unsigned int nr = 1 + ut_rand(20), from = ut_rand(256);
		unsigned long got, want = ~0UL;

		if (ut_rand(2))
			bitmap_set(map, start, len);
		else
			bitmap_clear(map, start, len);
		for (i = start; i < start + len; i++)
			ref[i] = test_bit(i, map);
		for (i = 0; i < 256; i++)
			ref[i] = test_bit(i, map);
		/* reference first-fit search */
		for (i = from; i + nr <= 256 && want == ~0UL; i++) {
			unsigned int j;

			for (j = 0; j < nr && !ref[i + j]; j++)
				;
			if (j == nr)
				want = i;
		}
		got = bitmap_find_next_zero_area(map, 256, from, nr, 0);
		if (want == ~0UL)
			UT_ASSERT(got > 256 - 0 || got + nr > 256);
		else
			UT_EQ(got, want);
	}
}

static void prandom_stream(void)
{
	struct rnd_state a, b;
	u32 first[4];
	unsigned int i;

	prandom_seed_state(&a, 42);
	prandom_seed_state(&b, 42);
	for (i = 0; i < 1000; i++)
		UT_EQ(prandom_u32_state(&a), prandom_u32_state(&b));
	prandom_seed_state(&a, 0);
	for (i = 0; i < 4; i++)
		first[i] = prandom_u32_state(&a);
	/* regression values of the lib/random32.c algorithm for seed 0 */
	ut_note("prandom seed 0: %#x %#x %#x %#x", first[0], first[1],
		first[2], first[3]);
	prandom_seed_state(&b, 0);
	UT_EQ(prandom_u32_state(&b), first[0]);
	prandom_seed_state(&a, 1);
	UT_ASSERT(prandom_u32_state(&a) != first[0]);
}

static void ctype_kernel(void)
{
	UT_ASSERT(isalnum('a') && isalnum('Z') && isalnum('0'));
	UT_ASSERT(!isalnum('.') && !isalnum(' ') && !isalnum('\0'));
	/* the kernel's ctype is Latin-1 */
	UT_ASSERT(isalnum('\xc0') && isalpha('\xe9') && !isalnum('\xd7'));
	UT_ASSERT(!isalnum('\xa9') && !isalnum('\x80'));
	UT_ASSERT(isascii('a') && !isascii('\xc0'));
	UT_EQ(tolower('Q'), 'q');
}

static void math_helpers(void)
{
	UT_EQ(ilog2(1U), 0);
	UT_EQ(ilog2(256U), 8);
	UT_EQ(ilog2((u64)1 << 40), 40);
	UT_EQ(roundup_pow_of_two(257UL), 512);
	UT_EQ(roundup_pow_of_two(256UL), 256);
	UT_EQ(roundup_pow_of_two(1UL), 1);
	UT_EQ(ALIGN(4097ULL, 4096ULL), 8192);
	UT_EQ(DIV_ROUND_UP(262145, 262144), 2);
	UT_ASSERT(IS_ERR(ERR_PTR(-EUCLEAN)) && PTR_ERR(ERR_PTR(-EUCLEAN)) == -EUCLEAN);
	UT_ASSERT(!IS_ERR(NULL) && IS_ERR_OR_NULL(NULL));
	UT_EQ(min(3u, 4u), 3);
	UT_EQ(max_t(u64, 3, 1ULL << 40), 1ULL << 40);
	UT_EQ(le64_to_cpu(cpu_to_le64(0x0102030405060708ULL)), 0x0102030405060708ULL);
	UT_EQ(be32_to_cpu(cpu_to_be32(0x01020304)), 0x01020304);
}

struct pc_stat {
	u64	hits;
	u64	pad[7];
};

struct pc_ctx {
	struct pc_stat __percpu	*stats;
	atomic_t		cpus_seen[SHIM_NR_CPUS_MAX];
	atomic_t		arrived;
};

static int pc_worker(void *arg, unsigned int w)
{
	struct pc_ctx *ctx = arg;
	unsigned int i;

	atomic_inc(&ctx->cpus_seen[raw_smp_processor_id()]);
	for (i = 0; i < 10000; i++)
		this_cpu_inc(ctx->stats->hits);
	/* stay alive until every worker has its CPU */
	atomic_inc(&ctx->arrived);
	while (atomic_read(&ctx->arrived) < 8)
		sched_yield();
	return 0;
}

static void percpu_ops(void)
{
	struct pc_ctx ctx = {};
	u64 sum = 0;
	int cpu, used = 0;

	ctx.stats = alloc_percpu(struct pc_stat);
	UT_ASSERT(ctx.stats);
	for_each_possible_cpu(cpu) {
		UT_EQ(per_cpu_ptr(ctx.stats, cpu)->hits, 0);
		if (cpu)
			UT_ASSERT(per_cpu_ptr(ctx.stats, cpu) !=
				  per_cpu_ptr(ctx.stats, cpu - 1));
	}
	UT_EQ(pmidx_run_parallel(8, pc_worker, &ctx), 0);
	for_each_possible_cpu(cpu) {
		sum += per_cpu_ptr(ctx.stats, cpu)->hits;
		used += atomic_read(&ctx.cpus_seen[cpu]) > 0;
	}
	UT_EQ(sum, 80000);
	/* live workers never share a CPU while there are enough */
	UT_EQ(used, 8);
	free_percpu(ctx.stats);
	UT_EQ(raw_smp_processor_id(), raw_smp_processor_id());
	UT_ASSERT(raw_smp_processor_id() < (int)nr_cpu_ids);
}

/*
 * More threads than CPUs, binding and unbinding all the time, so CPUs go
 * from shared (sections take the CPU's lock) to one thread (sections run
 * without it) and back: no two sections ever run on one CPU at once, and
 * no this_cpu_inc() (plain inside a lone thread's section) is lost.
 */
struct share_ctx {
	unsigned long __percpu	*owner;
	u64 __percpu		*count;
	atomic_t		overlaps;
};

#define SHARE_ITERS	200000

static int share_worker(void *arg, unsigned int w)
{
	struct share_ctx *ctx = arg;
	unsigned long *owner;
	unsigned int i, j;

	for (i = 0; i < SHARE_ITERS; i++) {
		if (i % (200 + 37 * w) == 0)
			shim_cpu_unbind();	/* the next section binds again */
		preempt_disable();
		owner = this_cpu_ptr(ctx->owner);
		if (READ_ONCE(*owner))
			atomic_inc(&ctx->overlaps);
		WRITE_ONCE(*owner, w + 1);
		this_cpu_inc(*ctx->count);
		for (j = 0; j < i % 8; j++)
			cpu_relax();
		if (READ_ONCE(*owner) != w + 1)
			atomic_inc(&ctx->overlaps);
		WRITE_ONCE(*owner, 0);
		preempt_enable();
	}
	shim_cpu_unbind();
	return 0;
}

static void percpu_sections_shared(void)
{
	unsigned int saved = nr_cpu_ids;
	struct share_ctx ctx = {};
	u64 sum = 0;
	int cpu;

	ctx.owner = alloc_percpu(unsigned long);
	ctx.count = alloc_percpu(u64);
	UT_ASSERT(ctx.owner && ctx.count);
	shim_cpu_unbind();
	nr_cpu_ids = 2;
	UT_EQ(pmidx_run_parallel(3, share_worker, &ctx), 0);
	nr_cpu_ids = saved;
	for_each_possible_cpu(cpu)
		sum += *per_cpu_ptr(ctx.count, cpu);
	UT_EQ(atomic_read(&ctx.overlaps), 0);
	UT_EQ(sum, 3 * SHARE_ITERS);
	free_percpu(ctx.owner);
	free_percpu(ctx.count);
}

struct wq_item {
	struct work_struct	work;
	atomic_t		*count;
};

static void wq_fn(struct work_struct *work)
{
	struct wq_item *it = container_of(work, struct wq_item, work);

	atomic_inc(it->count);
	kfree(it);		/* a work item may free itself */
}

static void workqueue_ops(void)
{
	struct workqueue_struct *wq = alloc_workqueue("ut%d", WQ_UNBOUND, 0, 1);
	atomic_t count = ATOMIC_INIT(0);
	unsigned int i;

	UT_ASSERT(wq);
	for (i = 0; i < 20; i++) {
		struct wq_item *it = kzalloc(sizeof(*it), GFP_KERNEL);

		UT_ASSERT(it);
		it->count = &count;
		INIT_WORK(&it->work, wq_fn);
		UT_ASSERT(queue_work(i & 1 ? wq : system_unbound_wq, &it->work));
	}
	flush_workqueue(wq);
	shim_workqueue_drain();
	UT_EQ(atomic_read(&count), 20);
	destroy_workqueue(wq);
}

static void locks_lockdep(void)
{
	DEFINE_SPINLOCK(sl);
	struct mutex m;
	unsigned long w;

	mutex_init(&m);
	mutex_lock(&m);
	lockdep_assert_held(&m);
	UT_ASSERT(mutex_is_locked(&m));
	mutex_unlock(&m);
	UT_ASSERT(!mutex_is_locked(&m));

	shim_set_warn_fatal(false);
	ut_expect_warns(2);
	w = shim_warn_count();
	lockdep_assert_held(&sl);		/* not held: WARN */
	UT_EQ(shim_warn_count(), w + 1);
	spin_lock(&sl);
	lockdep_assert_held(&sl);
	UT_EQ(shim_warn_count(), w + 1);
	kfree(kmalloc(8, GFP_KERNEL));		/* sleeping alloc in atomic: WARN */
	UT_EQ(shim_warn_count(), w + 2);
	kfree(kmalloc(8, GFP_ATOMIC));
	UT_EQ(shim_warn_count(), w + 2);
	spin_unlock(&sl);
	shim_set_warn_fatal(true);
}

/* ---- pmidx_flush_nofence(): the write-back without fence ----------------- */

struct pmem_rec {
	unsigned int	flush_lines;	/* lines the backend was asked to write back */
	unsigned int	fences, orders;	/* sfence-class, smp_wmb() */
};

static void rec_flush(void *priv, const void *addr, size_t len)
{
	struct pmem_rec *r = priv;

	r->flush_lines += (((uintptr_t)addr & 63) + len + 63) / 64;
}

static void rec_fence(void *priv, bool persist)
{
	struct pmem_rec *r = priv;

	if (persist)
		r->fences++;
	else
		r->orders++;
}

/*
 * Under ADR the helper is a full persist (lines written back, one
 * sfence); under eADR the lines are written back and nothing fences.
 * The counters the engines' figures come from say the same.
 */
static void pmem_flush_nofence(void)
{
	struct pmem_rec r;
	const struct shim_pmem_ops ops = {
		.flush = rec_flush, .fence = rec_fence, .priv = &r,
	};
	const struct shim_pmem_ops *prev;
	struct pmidx_pmem_stats sum, before;
	struct pmidx_pmem pm = {};
	static u8 buf[1024] __aligned(64);
	int eadr;

	pm.base = buf;
	pm.size = sizeof(buf);
	pm.stats = alloc_percpu(struct pmidx_pmem_stats);
	UT_ASSERT(pm.stats);
	prev = shim_pmem_set_ops(&ops);
	for (eadr = 0; eadr < 2; eadr++) {
		memset(&r, 0, sizeof(r));
		pm.eadr = eadr;
		pmidx_pmem_sum_stats(&pm, &before);
		pmidx_flush_nofence(&pm, buf + 8, 300);	/* lines 0..4 */
		pmidx_pmem_sum_stats(&pm, &sum);
		UT_EQ(r.flush_lines, 5);
		UT_EQ(sum.flushes - before.flushes, 5);
		UT_EQ(r.fences, eadr ? 0 : 1);
		UT_EQ(sum.fences - before.fences, eadr ? 0 : 1);
		UT_EQ(r.orders, 0);
	}
	shim_pmem_set_ops(prev);
	free_percpu(pm.stats);
}

static void media_errors(void)
{
	u8 src[512], dst[512];
	unsigned int i;

	for (i = 0; i < sizeof(src); i++)
		src[i] = i;
	UT_EQ(copy_mc_to_kernel(dst, src, sizeof(src)), 0);
	UT_ASSERT(!memcmp(dst, src, sizeof(src)));
	UT_EQ(shim_pmem_poison(src + 130, 1), 0);
	memset(dst, 0, sizeof(dst));
	/* stops at the poisoned line (128..191, relative to a 64-aligned src) */
	i = copy_mc_to_kernel(dst, src, sizeof(src));
	UT_ASSERT(i > 0 && i <= sizeof(src) - 64);
	UT_ASSERT(!memcmp(dst, src, sizeof(src) - i));
	UT_EQ(copy_mc_to_kernel(dst, src + 256, 256), 0);
	shim_pmem_clear_poison();
	UT_EQ(copy_mc_to_kernel(dst, src, sizeof(src)), 0);
}

/* A forked child loads @p in place: true when that faulted. */
static bool load_faults(const volatile u8 *p)
{
	int status;
	pid_t pid = fork();

	if (!pid) {
		signal(SIGSEGV, SIG_DFL);	/* no sanitizer report */
		(void)*p;
		_exit(0);
	}
	UT_ASSERT(pid > 0);
	UT_ASSERT(waitpid(pid, &status, 0) == pid);
	return WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV;
}

static void media_errors_trap(void)
{
	size_t pg = sysconf(_SC_PAGESIZE), i;
	u8 *m = mmap(NULL, 4 * pg, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	u8 *dst = malloc(4 * pg);

	UT_ASSERT(m != MAP_FAILED && dst);
	for (i = 0; i < 4 * pg; i++)
		m[i] = i * 7;
	/* line 2 of page 1 poisoned: page 1 traps, copies stop at the line */
	UT_EQ(shim_pmem_poison_trap(m + pg + 130, 10), 0);
	UT_EQ(shim_pmem_poison_trap(m + pg + 1000, 10), -EEXIST);
	UT_ASSERT(load_faults(m + pg + 130));
	UT_ASSERT(load_faults(m + pg));		/* the page, not only the line */
	UT_ASSERT(!load_faults(m + 2 * pg));
	UT_EQ(copy_mc_to_kernel(dst, m, 4 * pg), 3 * pg - 128);
	for (i = 0; i < pg + 128; i++)
		UT_ASSERT(dst[i] == (u8)(i * 7));
	UT_EQ(copy_mc_to_kernel(dst, m + pg + 192, 2 * pg), 0);
	for (i = 0; i < 2 * pg; i++)
		UT_ASSERT(dst[i] == (u8)((pg + 192 + i) * 7));
	shim_pmem_clear_poison();
	UT_ASSERT(!load_faults(m + pg + 130));
	m[pg] = 1;
	UT_EQ(copy_mc_to_kernel(dst, m, 4 * pg), 0);
	munmap(m, 4 * pg);
	free(dst);
}

static void alloc_failure_injection(void)
{
	void *a, *b;

	shim_fail_alloc_nth(2);
	a = kmalloc(16, GFP_KERNEL);
	b = kmalloc(16, GFP_KERNEL);
	UT_ASSERT(a && !b && shim_fail_alloc_fired());
	kfree(a);
	a = kmalloc(16, GFP_KERNEL);
	UT_ASSERT(a);
	kfree(a);
	shim_fail_alloc_nth(1);
	UT_ASSERT(!alloc_percpu(u64));
}

/*
 * kmem_cache as the engines use it: objects aligned as SLAB_HWCACHE_ALIGN
 * asks, zeroed by kmem_cache_zalloc(), failing under injection, and a
 * free into the wrong cache WARNs (and frees nothing).
 */
static void kmem_cache_ops(void)
{
	struct kmem_cache *a = kmem_cache_create("shim_a", 1072, 0,
						 SLAB_HWCACHE_ALIGN, NULL);
	struct kmem_cache *b = kmem_cache_create("shim_b", 24, 0, 0, NULL);
	unsigned long w;
	u8 *p, *q;
	int i;

	UT_ASSERT(a && b);
	p = kmem_cache_zalloc(a, GFP_KERNEL);
	q = kmem_cache_alloc(b, GFP_KERNEL);
	UT_ASSERT(p && q);
	UT_EQ((uintptr_t)p % L1_CACHE_BYTES, 0);
	UT_EQ((uintptr_t)q % sizeof(void *), 0);
	for (i = 0; i < 1072; i++)
		UT_EQ(p[i], 0);
	memset(q, 0xa5, 24);
	shim_set_warn_fatal(false);
	ut_expect_warns(1);
	w = shim_warn_count();
	kmem_cache_free(b, p);
	UT_EQ(shim_warn_count(), w + 1);
	shim_set_warn_fatal(true);
	kmem_cache_free(a, p);
	kmem_cache_free(b, q);
	shim_fail_alloc_nth(1);
	UT_ASSERT(!kmem_cache_alloc(a, GFP_ATOMIC));
	kmem_cache_destroy(b);
	kmem_cache_destroy(a);
}

static void list_ops(void)
{
	struct item { int v; struct list_head node; } it[4], *pos;
	LIST_HEAD(head);
	int i, sum = 0;

	for (i = 0; i < 4; i++) {
		it[i].v = i + 1;
		list_add_tail(&it[i].node, &head);
	}
	list_del_init(&it[1].node);
	list_for_each_entry(pos, &head, node)
		sum = sum * 10 + pos->v;
	UT_EQ(sum, 134);
	UT_ASSERT(list_first_entry_or_null(&head, struct item, node) == &it[0]);
	UT_ASSERT(list_empty(&it[1].node));
}

static void gc_work(void *arg)
{
	atomic_inc(arg);
}

/* kthreads, wait queues and stopping, through the core's GC framework */
static void kthread_gc(void)
{
	struct pmidx_gc gc = {};
	atomic_t runs = ATOMIC_INIT(0);
	int i;

	UT_EQ(pmidx_gc_start(&gc, "ut-gc", gc_work, &runs, 60000), 0);
	for (i = 0; i < 5; i++) {
		int before = atomic_read(&runs);
		s64 t0 = shim_now_ms();

		pmidx_gc_kick(&gc);
		while (atomic_read(&runs) == before && shim_now_ms() - t0 < 5000)
			msleep(1);
		UT_ASSERT_MSG(atomic_read(&runs) > before, "kick %d lost", i);
	}
	/* stop wakes the sleeper long before its 60 s interval */
	{
		s64 t0 = shim_now_ms();

		pmidx_gc_stop(&gc);
		UT_ASSERT(shim_now_ms() - t0 < 2000);
	}
	/*
	 * The interval alone runs it too: no kick, a 5 ms interval, two runs
	 * within 10 s (a CI machine running guests beside us once gave the
	 * thread less than two slots in 60 ms).
	 */
	atomic_set(&runs, 0);
	UT_EQ(pmidx_gc_start(&gc, "ut-gc2", gc_work, &runs, 5), 0);
	{
		s64 t0 = shim_now_ms();

		while (atomic_read(&runs) < 2 && shim_now_ms() - t0 < 10000)
			msleep(5);
	}
	pmidx_gc_stop(&gc);
	UT_ASSERT(atomic_read(&runs) >= 2);
}

static int never_run(void *data)
{
	return 7;
}

static struct completion ut_done;

static int completes(void *data)
{
	complete(&ut_done);
	while (!kthread_should_stop())
		schedule_timeout(100000);
	return 42;
}

static void kthread_lifecycle(void)
{
	struct task_struct *t = kthread_create(never_run, NULL, "ut-%d", 1);

	UT_ASSERT(!IS_ERR(t));
	UT_EQ(kthread_stop(t), -EINTR);		/* never woken: never ran */
	init_completion(&ut_done);
	t = kthread_run(completes, NULL, "ut-c");
	UT_ASSERT(!IS_ERR(t));
	wait_for_completion(&ut_done);
	UT_EQ(kthread_stop(t), 42);		/* schedule_timeout() cut short */
	UT_ASSERT(current && current->comm[0]);
}

static const struct ut_test tests[] = {
	UT_TEST(kthread_gc),
	UT_TEST(kthread_lifecycle),
	UT_TEST(crc32c_vectors),
	UT_TEST(bitmap_ops),
	UT_TEST(bitmap_random),
	UT_TEST(prandom_stream),
	UT_TEST(ctype_kernel),
	UT_TEST(math_helpers),
	UT_TEST(percpu_ops),
	UT_TEST(percpu_sections_shared),
	UT_TEST(workqueue_ops),
	UT_TEST(locks_lockdep),
	UT_TEST(pmem_flush_nofence),
	UT_TEST(media_errors),
	UT_TEST(media_errors_trap),
	UT_TEST(alloc_failure_injection),
	UT_TEST(kmem_cache_ops),
	UT_TEST(list_ops),
};

int main(int argc, char **argv)
{
	return ut_main(argc, argv, "shim", tests, ARRAY_SIZE(tests));
}
