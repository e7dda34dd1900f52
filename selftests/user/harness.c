// SPDX-License-Identifier: GPL-2.0
/* KTAP-style harness for the userspace tests; see harness.h. */
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "harness.h"
#include <shim/shim.h>
#include <shim/pmem.h>

u64 ut_seed;
unsigned int ut_threads = 4;
bool ut_verbose;

static jmp_buf ut_jmp;
static unsigned long ut_warns_expected;
static bool ut_in_test;
static unsigned int ut_failures;	/* of the current test */
static __thread u64 ut_rs;
static pthread_mutex_t ut_lock = PTHREAD_MUTEX_INITIALIZER;

u64 ut_rand64(void)
{
	u64 x = ut_rs ? ut_rs : (ut_seed | 1);

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	ut_rs = x;
	return x * 0x2545f4914f6cdd1dULL;
}

void ut_expect_warns(unsigned long n)
{
	__atomic_fetch_add(&ut_warns_expected, n, __ATOMIC_RELAXED);
}

void ut_note(const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&ut_lock);
	fputs("# ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	fflush(stdout);
	pthread_mutex_unlock(&ut_lock);
}

void ut_fail(const char *file, int line, bool fatal, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&ut_lock);
	ut_failures++;
	printf("# FAIL %s:%d: ", file, line);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf(" (seed %#llx)\n", (unsigned long long)ut_seed);
	fflush(stdout);
	pthread_mutex_unlock(&ut_lock);
	if (fatal && ut_in_test)
		longjmp(ut_jmp, 1);
}

/* setjmp() lives here, away from ut_main()'s locals */
static noinline void run_one(void (*fn)(void))
{
	ut_in_test = true;
	if (!setjmp(ut_jmp))
		fn();
	ut_in_test = false;
}

static void usage(const char *prog)
{
	fprintf(stderr, "usage: %s [--seed N] [--only NAME] [--threads N] [--verbose] [--list]\n",
		prog);
	exit(2);
}

int ut_main(int argc, char **argv, const char *suite,
	    const struct ut_test *tests, unsigned int n)
{
	static const struct option opts[] = {
		{ "seed", required_argument, NULL, 's' },
		{ "only", required_argument, NULL, 'o' },
		{ "threads", required_argument, NULL, 't' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "list", no_argument, NULL, 'l' },
		{ NULL, 0, NULL, 0 },
	};
	const char *only = NULL, *env = getenv("PMIDX_TEST_SEED");
	u64 base = env ? strtoull(env, NULL, 0) : 0x9e3779b9ULL;
	unsigned int i, pass = 0, fail = 0, run = 0;
	int c;

	while ((c = getopt_long(argc, argv, "s:o:t:vl", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			base = strtoull(optarg, NULL, 0);
			break;
		case 'o':
			only = optarg;
			break;
		case 't':
			ut_threads = strtoul(optarg, NULL, 0);
			break;
		case 'v':
			ut_verbose = true;
			shim_set_loglevel(7);
			break;
		case 'l':
			for (i = 0; i < n; i++)
				printf("%s\n", tests[i].name);
			return 0;
		default:
			usage(argv[0]);
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* Tests do not depend on the cache instructions; keep them cheap. */
	shim_pmem_set_hw(SHIM_PMEM_HW_NONE);
	printf("KTAP version 1\n");
	printf("# %s: seed %#llx, %u threads, %u CPUs\n", suite,
	       (unsigned long long)base, ut_threads, nr_cpu_ids);
	for (i = 0; i < n; i++)
		if (!only || !strcmp(only, tests[i].name))
			run++;
	printf("1..%u\n", run);
	run = 0;
	for (i = 0; i < n; i++) {
		long km, pc;
		unsigned long warns;
		struct timespec t0, t1;

		if (only && strcmp(only, tests[i].name))
			continue;
		run++;
		ut_seed = base + i;
		ut_rs = 0;
		shim_random_seed(ut_seed);
		ut_failures = 0;
		km = shim_kmalloc_live();
		pc = shim_percpu_live();
		warns = shim_warn_count();
		ut_warns_expected = 0;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		run_one(tests[i].fn);
		shim_set_warn_fatal(true);
		shim_fail_alloc_nth(0);
		shim_fail_atomic(false);
		shim_pmem_clear_poison();
		shim_workqueue_drain();
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (!ut_failures && shim_warn_count() != warns + ut_warns_expected)
			ut_fail(__FILE__, __LINE__, false,
				"%lu WARN(s), %lu expected",
				shim_warn_count() - warns, ut_warns_expected);
		if (!ut_failures &&
		    (shim_kmalloc_live() != km ||
		     shim_percpu_live() != pc))
			ut_fail(__FILE__, __LINE__, false,
				"leak: %ld kmalloc, %ld percpu objects",
				shim_kmalloc_live() - km,
				shim_percpu_live() - pc);
		if (ut_failures) {
			printf("not ok %u - %s # seed %#llx\n", run,
			       tests[i].name, (unsigned long long)ut_seed);
			fail++;
		} else {
			printf("ok %u - %s # %.2fs\n", run, tests[i].name,
			       (t1.tv_sec - t0.tv_sec) +
			       (t1.tv_nsec - t0.tv_nsec) / 1e9);
			pass++;
		}
	}
	printf("%u passed, %u failed\n", pass, fail);
	return fail ? 1 : 0;
}

/* ---- pool images ------------------------------------------------------------ */

void *ut_img_alloc(u64 size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	UT_ASSERT(p != MAP_FAILED);
	return p;
}

void ut_img_free(void *img, u64 size)
{
	if (img)
		munmap(img, size);
}

/*
 * The pool's own threads (a GC thread, work items) are frozen where they
 * sleep while the image is copied (shim_freeze()): a copy taken while one
 * of them writes is no crash image, as a later store of its could be in
 * the copy without an earlier one at a lower address. Frozen anywhere
 * they sleep, even mid-collection, the copy is a state the pool passed
 * through with every store in it: an eADR power cut. Not instrumented
 * by ThreadSanitizer: a word-by-word read of memory other threads own.
 */
__attribute__((no_sanitize("thread")))
static void img_snapshot(u64 *dst, const u64 *src, u64 size)
{
	u64 i;

	for (i = 0; i < size / sizeof(u64); i++)
		dst[i] = ((const volatile u64 *)src)[i];
}

void *ut_img_dup(const void *img, u64 size)
{
	void *p = ut_img_alloc(size);

	shim_freeze();
	img_snapshot(p, img, size);
	shim_thaw();
	return p;
}

struct pmidx_pool *ut_pool_open(void *img, u64 size)
{
	const char *why = NULL;
	struct pmidx_pool *pool = pmidx_pool_open(img, size, false, &why);

	UT_ASSERT_MSG(!IS_ERR(pool), "open: %ld (%s)", PTR_ERR(pool),
		      why ? why : "?");
	return pool;
}

int ut_pool_open_err(void *img, u64 size, const char **why)
{
	struct pmidx_pool *pool = pmidx_pool_open(img, size, false, why);

	if (!IS_ERR(pool)) {
		pmidx_pool_close(pool);
		UT_ASSERT_MSG(0, "open succeeded where it must fail");
	}
	return PTR_ERR(pool);
}

struct pmidx_pool *ut_pool_new(void *img, u64 size)
{
	const char *why = NULL;
	int ret = pmidx_pool_format(img, size, true, &why);

	UT_ASSERT_MSG(!ret, "format: %d (%s)", ret, why ? why : "?");
	return ut_pool_open(img, size);
}

u64 ut_stat(struct pmidx_pool *pool, unsigned int key)
{
	struct pmidx_stats s = {};

	pmidx_pool_stats(pool, &s);
	return s.val[key];
}
