/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Zipfian key ranks for benchmarks: Gray et al.'s generator ("Quickly
 * generating billion-record synthetic databases", SIGMOD '94), the one
 * YCSB's ZipfianGenerator uses, plus a scrambled variant that spreads the
 * hot ranks over the keyspace.
 *
 *   struct zipf_gen z;
 *   zipf_init(&z, n, 0.99, seed);        O(n) once: zeta(n, theta)
 *   r = zipf_next(&z);                   0..n-1, rank 0 the most popular
 *   k = zipf_next_scrambled(&z);         0..n-1, hot items spread out
 *
 * Scrambling: YCSB's ScrambledZipfianGenerator hashes the rank (FNV-64)
 * modulo n, which merges ranks that collide. Here the rank goes through a
 * seeded bijection of [0, n) instead (an invertible mix on the smallest
 * power-of-two domain covering n, cycle-walked back into range), so the
 * item frequencies are exactly zipfian and every item keeps its own rank.
 *
 * theta in [0, 1): 0 is uniform; YCSB's default is 0.99. One generator
 * per thread (the state is the PRNG); zipf_init_from() copies the
 * constants of another generator so threads do not recompute zeta.
 *
 * Plain C99 + libm: usable by the userspace tools and by pmidx-bench
 * (link with -lm).
 */
#ifndef _PMIDX_ZIPF_H
#define _PMIDX_ZIPF_H

#include <stdint.h>

struct zipf_gen {
	uint64_t	n;
	double		theta;
	double		alpha;		/* 1 / (1 - theta) */
	double		zetan;		/* zeta(n, theta) */
	double		eta;
	double		half_pow;	/* 1 + 0.5^theta */
	uint64_t	rng;		/* splitmix64 state */
	/* the scrambling bijection */
	unsigned int	bits;
	uint64_t	mask;
	uint64_t	k[3];
};

/* sum_{i=1..n} 1 / i^theta */
double zipf_zeta(uint64_t n, double theta);

/* 0, or -1 when n is 0 or theta is outside [0, 1) */
int zipf_init(struct zipf_gen *z, uint64_t n, double theta, uint64_t seed);
/* same n, theta and scrambling as @proto, own PRNG stream from @seed */
void zipf_init_from(struct zipf_gen *z, const struct zipf_gen *proto,
		    uint64_t seed);

/* a zipfian rank in [0, n): 0 the most frequent */
uint64_t zipf_next(struct zipf_gen *z);
/* zipf_scramble(zipf_next()) */
uint64_t zipf_next_scrambled(struct zipf_gen *z);
/* the bijection of [0, n) used for scrambling (fixed by the seed) */
uint64_t zipf_scramble(const struct zipf_gen *z, uint64_t rank);

/* the underlying PRNG: 64 random bits, and a uniform item in [0, n) */
uint64_t zipf_rand64(struct zipf_gen *z);
uint64_t zipf_uniform(struct zipf_gen *z);

#endif /* _PMIDX_ZIPF_H */
