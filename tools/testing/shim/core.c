// SPDX-License-Identifier: GPL-2.0
/*
 * Userspace shim runtime: printk, WARN/BUG, CPUs, randomness, scheduling
 * points. See tools/include/shim/shim.h for the test-control interface.
 */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/membarrier.h>
#include <sys/random.h>
#include <sys/syscall.h>

#include <linux/types.h>
#include <linux/bug.h>
#include <linux/ktime.h>
#include <linux/printk.h>
#include <linux/prandom.h>
#include <linux/random.h>
#include <linux/sched.h>
#include <linux/smp.h>
#include <shim/sanitizer.h>
#include <shim/shim.h>

/* ---- printk ----------------------------------------------------------- */

static int loglevel = -2;		/* -2: not read from the environment yet */
static unsigned long printk_counts[8];
static char printk_last[256];
static pthread_mutex_t printk_lock = PTHREAD_MUTEX_INITIALIZER;

static int shim_loglevel(void)
{
	int l = __atomic_load_n(&loglevel, __ATOMIC_RELAXED);

	if (l == -2) {
		const char *e = getenv("PMIDX_SHIM_LOG");

		l = e ? atoi(e) : -1;
		__atomic_store_n(&loglevel, l, __ATOMIC_RELAXED);
	}
	return l;
}

void shim_set_loglevel(int level)
{
	__atomic_store_n(&loglevel, level, __ATOMIC_RELAXED);
}

unsigned long shim_printk_count(int level)
{
	if (level < 0 || level > 7)
		return 0;
	return __atomic_load_n(&printk_counts[level], __ATOMIC_RELAXED);
}

const char *shim_printk_last(void)
{
	return printk_last;
}

int shim_printk(const char *fmt, ...)
{
	int level = 4;		/* default message loglevel: warning */
	va_list ap;
	int n;

	if (fmt[0] == KERN_SOH[0] && fmt[1]) {
		if (fmt[1] >= '0' && fmt[1] <= '7')
			level = fmt[1] - '0';
		fmt += 2;
	}
	__atomic_fetch_add(&printk_counts[level], 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&printk_lock);
	va_start(ap, fmt);
	n = vsnprintf(printk_last, sizeof(printk_last), fmt, ap);
	va_end(ap);
	if (level <= shim_loglevel())
		fprintf(stderr, "<%d>%s", level, printk_last);
	pthread_mutex_unlock(&printk_lock);
	return n;
}

/* ---- WARN / BUG --------------------------------------------------------- */

static bool warn_fatal = true;
static unsigned long warn_count;

void shim_set_warn_fatal(bool fatal)
{
	__atomic_store_n(&warn_fatal, fatal, __ATOMIC_RELAXED);
}

bool shim_warn_fatal(void)
{
	return __atomic_load_n(&warn_fatal, __ATOMIC_RELAXED);
}

unsigned long shim_warn_count(void)
{
	return __atomic_load_n(&warn_count, __ATOMIC_RELAXED);
}

void shim_warn(const char *file, int line, const char *func, bool print,
	       const char *fmt, ...)
{
	bool fatal = shim_warn_fatal();
	va_list ap;

	__atomic_fetch_add(&warn_count, 1, __ATOMIC_RELAXED);
	if (print || fatal) {
		fprintf(stderr, "WARNING%s: %s:%d %s(): ",
			fatal ? "" : " (non-fatal, counted)", file, line, func);
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fputc('\n', stderr);
	}
	if (fatal) {
		fprintf(stderr, "WARN is fatal in tests (shim_set_warn_fatal)\n");
		abort();
	}
}

void shim_bug(const char *file, int line, const char *func, const char *cond)
{
	fprintf(stderr, "kernel BUG at %s:%d %s(): %s\n", file, line, func, cond);
	abort();
}

/* ---- atomic context ----------------------------------------------------- */

__thread int shim_atomic_depth;

void shim_might_sleep(const char *file, int line)
{
	WARN(shim_atomic_depth > 0,
	     "BUG: sleeping function called from invalid context at %s:%d",
	     file, line);
}

static unsigned int yield_every = ~0U;	/* ~0: not read yet; 0: never */
static __thread unsigned int yield_count;

void shim_cond_resched(const char *file, int line)
{
	unsigned int every = __atomic_load_n(&yield_every, __ATOMIC_RELAXED);

	shim_might_sleep(file, line);
	if (every == ~0U) {
		const char *e = getenv("PMIDX_SHIM_YIELD");

		every = e ? (unsigned int)atoi(e) : 0;
		__atomic_store_n(&yield_every, every, __ATOMIC_RELAXED);
	}
	if (every && ++yield_count % every == 0)
		sched_yield();
}

/* ---- CPUs ---------------------------------------------------------------- */

unsigned int nr_cpu_ids = 16;
__thread int shim_this_cpu = -1;
__thread bool shim_cpu_excl;
__thread int shim_preempt_depth;
__thread struct shim_cpu *shim_cpu_fast;
__thread bool shim_section_slow;

/*
 * @bound counts the live threads bound to the CPU. A thread that joins a
 * CPU others are bound to raises it inside that CPU's section lock, and
 * then waits for a section running without the lock (@alone) to end, so
 * a section that read 1 at its start (shim_cpu_excl) keeps the CPU to
 * itself to its end: nobody else reaches the CPU's per-CPU data then, and
 * this_cpu_add() may be a plain load and store (<linux/percpu.h>). Such a
 * section takes no lock at all, as preempt_disable() costs a per-CPU
 * increment in the kernel: it sets @alone, then reads @bound; the joiner
 * raises @bound, then reads @alone, with a full fence between each pair,
 * so that one of the two sees the other. The fence is asymmetric, as
 * liburcu's memb flavour's: the section has a compiler barrier only, and
 * the joiner (rare: more threads than CPUs) runs membarrier(2), a full
 * fence in every running thread of the process (a thread not running
 * passed one when it was switched out). Without membarrier both sides
 * fence. A thread that leaves lowers @bound after its last access
 * (release; read with acquire). ThreadSanitizer does not model fences:
 * its build always takes the lock.
 *
 * The unlocked section with the light fence is inline in <linux/preempt.h>
 * (shim_cpu_fast: set at bind where it applies); what it cannot do starts
 * here (shim_section_begin_slow()) and ends here too (shim_section_slow).
 *
 * @lock is held by a shared CPU's sections; @bound changes under
 * cpus_lock and is read atomically.
 */
static struct shim_cpu cpus[SHIM_NR_CPUS_MAX];
static __thread bool section_locked;
static pthread_mutex_t cpus_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t cpu_key;
static bool cpus_membarrier;	/* registered: sections fence lightly */

/*
 * The joiner's side of the fence (struct cpus above). Once registered,
 * sections fence lightly, so a failed membarrier (a seccomp filter
 * installed since, no memory for its CPU mask) cannot be made up for
 * here: stop, as liburcu does.
 */
static void cpus_fence_heavy(void)
{
	long ret;

	if (!cpus_membarrier) {
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		return;
	}
	ret = syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
	BUG_ON(ret);
}

#ifndef SHIM_TSAN
/* A section's side: a full fence only without membarrier. */
static inline void cpus_fence_light(void)
{
	if (cpus_membarrier)
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
	else
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
}
#endif

static void cpu_unbind(void *arg)
{
	int cpu = (int)(uintptr_t)arg - 1;

	pthread_mutex_lock(&cpus_lock);
	__atomic_fetch_sub(&cpus[cpu].bound, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&cpus_lock);
}

static void __attribute__((constructor)) shim_cpus_init(void)
{
	const char *e = getenv("PMIDX_SHIM_NR_CPUS");
	int n = e ? atoi(e) : 0;
	unsigned int i;

	if (n > 0 && n <= SHIM_NR_CPUS_MAX)
		nr_cpu_ids = n;
	for (i = 0; i < SHIM_NR_CPUS_MAX; i++)
		pthread_mutex_init(&cpus[i].lock, NULL);
	pthread_key_create(&cpu_key, cpu_unbind);
	/* before any thread binds: no section has run yet */
	cpus_membarrier = !syscall(SYS_membarrier,
				   MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0);
}

/* Context: cpus_lock held (one hold from the choice of @cpu to here). */
static void cpu_bind_locked(int cpu)
{
	if (shim_this_cpu >= 0)
		__atomic_fetch_sub(&cpus[shim_this_cpu].bound, 1,
				   __ATOMIC_RELEASE);
	/* outside the CPU's section: see struct cpus above */
	if (cpus[cpu].bound) {
		pthread_mutex_lock(&cpus[cpu].lock);
		__atomic_fetch_add(&cpus[cpu].bound, 1, __ATOMIC_SEQ_CST);
		cpus_fence_heavy();
		while (__atomic_load_n(&cpus[cpu].alone, __ATOMIC_SEQ_CST))
			sched_yield();
		pthread_mutex_unlock(&cpus[cpu].lock);
	} else {
		__atomic_fetch_add(&cpus[cpu].bound, 1, __ATOMIC_RELAXED);
	}
	shim_this_cpu = cpu;
#ifndef SHIM_TSAN
	shim_cpu_fast = cpus_membarrier ? &cpus[cpu] : NULL;
#endif
	pthread_setspecific(cpu_key, (void *)(uintptr_t)(cpu + 1));
}

static void cpu_bind(int cpu)
{
	pthread_mutex_lock(&cpus_lock);
	cpu_bind_locked(cpu);
	pthread_mutex_unlock(&cpus_lock);
}

#define BIND_WAIT_NS	(100 * 1000 * 1000ULL)

/*
 * Bind the calling thread to the least used CPU (lowest id on a tie)
 * that no section holds: a thread started by one that stopped inside a
 * section (the crash simulator's checker and its workers) must not wait
 * for it. When every CPU is in a section, wait a while for one to leave
 * it, whichever, and choose again: a choice made then among busy CPUs
 * could fall on the stopped one (crash-long's two CPUs, the checker in a
 * short section of its own, hung a replay worker). Only sections that
 * never pause for BIND_WAIT_NS on any CPU get the old choice. Joining a
 * CPU others
 * are bound to waits for its section (cpu_bind()), as the joiner's first
 * section would. The choice and the bind are one hold of cpus_lock: two
 * threads binding at once took one CPU (a TSan run of test-shim
 * percpu_ops saw 7 CPUs for 8 live workers).
 */
int shim_cpu_bind(void)
{
	u64 until = shim_clock_ns(CLOCK_MONOTONIC) + BIND_WAIT_NS;
	unsigned int i, best;

	for (;;) {
		pthread_mutex_lock(&cpus_lock);
		best = 0;
		for (i = 1; i < nr_cpu_ids; i++) {
			bool ib = __atomic_load_n(&cpus[i].busy, __ATOMIC_RELAXED);
			bool bb = __atomic_load_n(&cpus[best].busy, __ATOMIC_RELAXED);

			if (ib != bb ? !ib : cpus[i].bound < cpus[best].bound)
				best = i;
		}
		if (!__atomic_load_n(&cpus[best].busy, __ATOMIC_RELAXED) ||
		    shim_clock_ns(CLOCK_MONOTONIC) > until)
			break;
		pthread_mutex_unlock(&cpus_lock);
		sched_yield();
	}
	cpu_bind_locked(best);
	pthread_mutex_unlock(&cpus_lock);
	return best;
}

/* The calling thread gives its CPU up; its next use binds it again. */
void shim_cpu_unbind(void)
{
	BUG_ON(shim_preempt_depth);
	if (shim_this_cpu < 0)
		return;
	shim_cpu_fast = NULL;
	pthread_setspecific(cpu_key, NULL);
	cpu_unbind((void *)(uintptr_t)(shim_this_cpu + 1));
	shim_this_cpu = -1;
}

void shim_set_cpu(int cpu)
{
	BUG_ON(cpu < 0 || (unsigned int)cpu >= nr_cpu_ids);
	BUG_ON(shim_preempt_depth);
	cpu_bind(cpu);
}

/*
 * The start of a section that the inline one (<linux/preempt.h>) could
 * not run: a thread not bound yet, a CPU shared with another thread, no
 * membarrier, or a ThreadSanitizer build. Context: the section's depth
 * already counts it.
 */
void shim_section_begin_slow(void)
{
	int cpu = raw_smp_processor_id();

	shim_section_slow = true;
	section_locked = true;
#ifndef SHIM_TSAN
	/* alone on the CPU: no lock (struct cpus above) */
	__atomic_store_n(&cpus[cpu].alone, true, __ATOMIC_RELAXED);
	cpus_fence_light();
	if (__atomic_load_n(&cpus[cpu].bound, __ATOMIC_ACQUIRE) == 1)
		section_locked = false;
	else
		__atomic_store_n(&cpus[cpu].alone, false, __ATOMIC_RELEASE);
#endif
	if (section_locked)
		pthread_mutex_lock(&cpus[cpu].lock);
	__atomic_store_n(&cpus[cpu].busy, true, __ATOMIC_RELAXED);
	shim_cpu_excl = __atomic_load_n(&cpus[cpu].bound, __ATOMIC_ACQUIRE) == 1;
}

/* The end of a section begun by shim_section_begin_slow(). */
void shim_section_end_slow(void)
{
	shim_section_slow = false;
	shim_cpu_excl = false;
	__atomic_store_n(&cpus[shim_this_cpu].busy, false, __ATOMIC_RELAXED);
	if (section_locked)
		pthread_mutex_unlock(&cpus[shim_this_cpu].lock);
	else
		__atomic_store_n(&cpus[shim_this_cpu].alone, false,
				 __ATOMIC_RELEASE);
}

/* ---- randomness ---------------------------------------------------------- */

static pthread_mutex_t rnd_lock = PTHREAD_MUTEX_INITIALIZER;
static bool rnd_seeded;
static u64 rnd_state;

void shim_random_seed(u64 seed)
{
	pthread_mutex_lock(&rnd_lock);
	rnd_seeded = true;
	rnd_state = seed;
	pthread_mutex_unlock(&rnd_lock);
}

/* splitmix64 */
static u64 rnd_next(void)
{
	u64 z = (rnd_state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void get_random_bytes(void *buf, size_t len)
{
	u8 *p = buf;

	pthread_mutex_lock(&rnd_lock);
	if (rnd_seeded) {
		while (len) {
			u64 v = rnd_next();
			size_t n = len < 8 ? len : 8;

			memcpy(p, &v, n);
			p += n;
			len -= n;
		}
	} else {
		while (len) {
			ssize_t n = getrandom(p, len, 0);

			if (n <= 0)
				shim_bug(__FILE__, __LINE__, __func__, "getrandom");
			p += n;
			len -= n;
		}
	}
	pthread_mutex_unlock(&rnd_lock);
}

u32 get_random_u32(void)
{
	u32 v;

	get_random_bytes(&v, sizeof(v));
	return v;
}

u64 get_random_u64(void)
{
	u64 v;

	get_random_bytes(&v, sizeof(v));
	return v;
}

#define TAUSWORTHE(s, a, b, c, d) ((((s) & (c)) << (d)) ^ ((((s) << (a)) ^ (s)) >> (b)))

u32 prandom_u32_state(struct rnd_state *state)
{
	state->s1 = TAUSWORTHE(state->s1,  6U, 13U, 4294967294U, 18U);
	state->s2 = TAUSWORTHE(state->s2,  2U, 27U, 4294967288U,  2U);
	state->s3 = TAUSWORTHE(state->s3, 13U, 21U, 4294967280U,  7U);
	state->s4 = TAUSWORTHE(state->s4,  3U, 12U, 4294967168U, 13U);
	return state->s1 ^ state->s2 ^ state->s3 ^ state->s4;
}

void prandom_bytes_state(struct rnd_state *state, void *buf, size_t bytes)
{
	u8 *ptr = buf;

	while (bytes >= sizeof(u32)) {
		u32 v = prandom_u32_state(state);

		memcpy(ptr, &v, sizeof(v));
		ptr += sizeof(u32);
		bytes -= sizeof(u32);
	}
	if (bytes > 0) {
		u32 rem = prandom_u32_state(state);

		do {
			*ptr++ = (u8)rem;
			bytes--;
			rem >>= 8;
		} while (bytes > 0);
	}
}
