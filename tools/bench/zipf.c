// SPDX-License-Identifier: GPL-2.0
/* Zipfian key ranks (Gray et al. / YCSB), scrambled or not: see zipf.h. */
#include <math.h>
#include "zipf.h"

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t x = (*s += 0x9e3779b97f4a7c15ULL);

	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

uint64_t zipf_rand64(struct zipf_gen *z)
{
	return splitmix64(&z->rng);
}

uint64_t zipf_uniform(struct zipf_gen *z)
{
	return (uint64_t)(((unsigned __int128)zipf_rand64(z) * z->n) >> 64);
}

/* [0, 1) with 53 random bits */
static double unit(struct zipf_gen *z)
{
	return (zipf_rand64(z) >> 11) * (1.0 / 9007199254740992.0);
}

double zipf_zeta(uint64_t n, double theta)
{
	double sum = 0;
	uint64_t i;

	for (i = 1; i <= n; i++)
		sum += 1.0 / pow((double)i, theta);
	return sum;
}

int zipf_init(struct zipf_gen *z, uint64_t n, double theta, uint64_t seed)
{
	uint64_t s = seed ^ 0x5a1f5eedULL;
	double zeta2;

	if (!n || !(theta >= 0 && theta < 1))
		return -1;
	z->n = n;
	z->theta = theta;
	z->alpha = 1.0 / (1.0 - theta);
	z->zetan = zipf_zeta(n, theta);
	zeta2 = zipf_zeta(2, theta);
	z->eta = n > 2 ? (1.0 - pow(2.0 / n, 1.0 - theta)) / (1.0 - zeta2 / z->zetan) : 0;
	z->half_pow = 1.0 + pow(0.5, theta);
	for (z->bits = 0; z->bits < 64 && (1ULL << z->bits) < n; z->bits++)
		;
	z->mask = z->bits == 64 ? ~0ULL : (1ULL << z->bits) - 1;
	z->k[0] = splitmix64(&s);
	z->k[1] = splitmix64(&s) | 1;	/* odd: invertible mod 2^bits */
	z->k[2] = splitmix64(&s) | 1;
	z->rng = splitmix64(&s);
	return 0;
}

void zipf_init_from(struct zipf_gen *z, const struct zipf_gen *proto,
		    uint64_t seed)
{
	uint64_t s = seed ^ 0x5eed5eedULL;

	*z = *proto;
	z->rng = splitmix64(&s);
}

/*
 * Gray et al., figure 6 (and YCSB's ZipfianGenerator.nextLong): invert
 * the approximate CDF; ranks 0 and 1 exactly, the tail by a power law.
 */
uint64_t zipf_next(struct zipf_gen *z)
{
	double u = unit(z), uz = u * z->zetan;
	uint64_t r;

	if (uz < 1.0)
		return 0;
	if (uz < z->half_pow)
		return z->n > 1;
	r = (uint64_t)(z->n * pow(z->eta * u - z->eta + 1.0, z->alpha));
	return r < z->n ? r : z->n - 1;
}

/*
 * A bijection of [0, 2^bits): each step (xor with a right shift, multiply
 * by an odd constant, add) is invertible modulo 2^bits.
 */
static uint64_t mix(const struct zipf_gen *z, uint64_t x)
{
	unsigned int s = z->bits / 2 + 1;

	x = (x + z->k[0]) & z->mask;
	x ^= x >> s;
	x = (x * z->k[1]) & z->mask;
	x ^= x >> s;
	x = (x * z->k[2]) & z->mask;
	x ^= x >> s;
	return x;
}

/* cycle-walking keeps the bijection inside [0, n): < 2 steps on average */
uint64_t zipf_scramble(const struct zipf_gen *z, uint64_t rank)
{
	uint64_t x = mix(z, rank);

	while (x >= z->n)
		x = mix(z, x);
	return x;
}

uint64_t zipf_next_scrambled(struct zipf_gen *z)
{
	return zipf_scramble(z, zipf_next(z));
}
