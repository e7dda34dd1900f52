/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Minimal test runner for libpmidx's unit tests: "N passed, N failed". */
#ifndef LIBPMIDX_UNIT_H
#define LIBPMIDX_UNIT_H

#include <stdio.h>

struct unit_test {
	const char *name;
	int (*fn)(void);	/* 0: pass */
};

/* Fail the current test with a message naming the expression. */
#define EXPECT(cond) do {						\
	if (!(cond)) {							\
		printf("#   %s:%d: expected %s\n", __FILE__, __LINE__, #cond); \
		return 1;						\
	}								\
} while (0)

#define EXPECT_EQ(a, b) do {						\
	long long __a = (long long)(a), __b = (long long)(b);		\
	if (__a != __b) {						\
		printf("#   %s:%d: %s == %s: %lld != %lld\n", __FILE__,	\
		       __LINE__, #a, #b, __a, __b);			\
		return 1;						\
	}								\
} while (0)

/*
 * The mock backend (mock.c): a pool whose commands run on an in-memory
 * map with the kernel's checks; mock_index() empties it and opens its
 * one index, "mock". Counters: commands seen (a BATCH is one), BATCHes.
 */
struct pmidx_pool;
extern struct pmidx_pool mock_pool;
struct pmidx_index *mock_index(void);
int mock_cmds(void);
int mock_batches(void);

extern const struct unit_test mock_tests[];
extern const struct unit_test ring_tests[];

#endif /* LIBPMIDX_UNIT_H */
