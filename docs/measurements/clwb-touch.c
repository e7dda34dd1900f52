// SPDX-License-Identifier: GPL-2.0
/*
 * What touching a cache line costs right after it was written back.
 *
 *   gcc -O2 -mclwb -mclflushopt docs/measurements/clwb-touch.c -o /tmp/ct
 *   /tmp/ct
 *
 * Each round stores to one of 4096 lines, optionally writes it back
 * (clwb or clflushopt) and fences, then times one read, store or locked
 * add of the same line, in TSC ticks. uTree's in-place update releases
 * its Version (an atomic add on the list node's next word) right after
 * the node's line was written back and fenced, so it pays this once per
 * update; the papers' code, which skips the Version, does not.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <x86intrin.h>

#define LINES	4096
#define ROUNDS	(1 << 21)

static uint64_t ticks(void)
{
	unsigned int aux;

	return __rdtscp(&aux);
}

int main(void)
{
	static const char *const wb[] = {
		"no write-back", "clwb + sfence", "clflushopt + sfence"
	};
	static const char *const op[] = { "read", "store", "locked add" };
	char *buf = aligned_alloc(64, 64 * LINES);
	double sum[3][3] = { { 0 } };
	unsigned int r, i, j;

	if (!buf)
		return 1;
	for (i = 0; i < 64 * LINES; i++)
		buf[i] = 1;
	for (r = 0; r < ROUNDS; r++) {
		volatile uint64_t *p = (uint64_t *)(buf + 64 * (r % LINES));
		unsigned int w = r % 3, o = (r / 3) % 3;
		uint64_t t0, v;

		*p = r;
		if (w == 1)
			_mm_clwb((void *)p);
		if (w == 2)
			_mm_clflushopt((void *)p);
		_mm_sfence();
		_mm_lfence();
		t0 = ticks();
		if (o == 0)
			v = *p;
		else if (o == 1)
			*p = 5;
		else
			__atomic_fetch_add(p, 1, __ATOMIC_SEQ_CST);
		_mm_mfence();
		sum[w][o] += ticks() - t0;
		(void)v;
	}
	for (i = 0; i < 3; i++) {
		printf("%-20s", wb[i]);
		for (j = 0; j < 3; j++)
			printf("  %s %.0f", op[j], sum[i][j] / (ROUNDS / 9.0));
		printf("  (TSC ticks)\n");
	}
	free(buf);
	return 0;
}
