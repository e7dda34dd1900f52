/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Minimal KTAP-style harness for the userspace tests of kmod/core.
 *
 * Output:  KTAP version 1 / 1..N / "ok N - name" | "not ok N - name"
 *          and, last, exactly "P passed, F failed".
 * Seeds:   one per run (--seed S, or PMIDX_TEST_SEED, or a fixed default);
 *          test N uses ut_seed + N, printed with every failure, so
 *          "--seed S --only NAME" replays it.
 * Checks:  UT_ASSERT() ends the test (longjmp); UT_CHECK() only records,
 *          and is the one to use off the main thread. After each test the
 *          harness checks that kmalloc and per-CPU memory went back to
 *          where they were (leaks fail the test) and that no WARN fired.
 */
#ifndef _PMIDX_UT_HARNESS_H
#define _PMIDX_UT_HARNESS_H

#include <setjmp.h>
#include <stdio.h>
#include "core/pool.h"

struct ut_test {
	const char	*name;
	void		(*fn)(void);
};

#define UT_TEST(fn)	{ #fn, fn }

extern u64 ut_seed;		/* this test's seed */
extern unsigned int ut_threads;	/* --threads, default 4 */
extern bool ut_verbose;

int ut_main(int argc, char **argv, const char *suite,
	    const struct ut_test *tests, unsigned int n);

void ut_fail(const char *file, int line, bool fatal, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void ut_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* the current test provokes @n WARNs on purpose (with them non-fatal) */
void ut_expect_warns(unsigned long n);

#define UT_CHECK(cond) ({						\
	bool __c = !!(cond);						\
	if (!__c)							\
		ut_fail(__FILE__, __LINE__, false, "%s", #cond);	\
	__c;								\
})
#define UT_ASSERT(cond) do {						\
	if (!(cond))							\
		ut_fail(__FILE__, __LINE__, true, "%s", #cond);		\
} while (0)
#define UT_ASSERT_MSG(cond, fmt, ...) do {				\
	if (!(cond))							\
		ut_fail(__FILE__, __LINE__, true, "%s: " fmt, #cond,	\
			##__VA_ARGS__);					\
} while (0)
#define UT_EQ(a, b) do {						\
	long long __a = (long long)(a), __b = (long long)(b);		\
	if (__a != __b)							\
		ut_fail(__FILE__, __LINE__, true, "%s == %s: %lld != %lld", \
			#a, #b, __a, __b);				\
} while (0)

/*
 * A crash simulator run (tools/testing/crashsim.h, struct crashsim_result
 * @res) tried crash points and no image failed; with @flushed, every line
 * written was durable by the end (one that never was: a missing flush).
 */
#define UT_CRASH_OK(res, flushed) do {					\
	UT_ASSERT((res).points > 0 && (res).images >= (res).points);	\
	UT_ASSERT_MSG(!(res).failures, "%llu failing crash images",	\
		      (unsigned long long)(res).failures);		\
	UT_ASSERT_MSG(!(flushed) || !(res).unflushed_at_end,		\
		      "%llu lines written but never made durable",	\
		      (unsigned long long)(res).unflushed_at_end);	\
} while (0)

/* deterministic per-test randomness (xorshift64*) */
u64 ut_rand64(void);
static inline u32 ut_rand(u32 n)
{
	return n ? (u32)(((ut_rand64() >> 32) * (u64)n) >> 32) : 0;
}

/* ---- pool images ---------------------------------------------------------- */

#define UT_POOL_SIZE	(16ULL << 20)

void *ut_img_alloc(u64 size);		/* zeroed, page aligned */
void ut_img_free(void *img, u64 size);
void *ut_img_dup(const void *img, u64 size);	/* a crash: the image as is */

/* format @img and open it; fails the test on error */
struct pmidx_pool *ut_pool_new(void *img, u64 size);
struct pmidx_pool *ut_pool_open(void *img, u64 size);	/* must succeed */
int ut_pool_open_err(void *img, u64 size, const char **why);	/* must fail */

u64 ut_stat(struct pmidx_pool *pool, unsigned int key);

#endif
