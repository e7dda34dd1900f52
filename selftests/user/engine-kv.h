/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Keys and values made from numbers, for the tests of the real engines
 * (selftests/user/engine-kv.c): a test keeps its model as numbers, and
 * key n and value id always have the same bytes. Two families:
 *
 *  - a test's own scheme (struct ekv_scheme, chosen with ekv_use()): key
 *    n of a length from the scheme's table, unique by its first 2 or 3
 *    bytes; value id of a length from the other table, pseudo-random
 *    bytes from id. On it: put, get and delete by number, full scans
 *    (resumed in pieces) and the check of a whole model (ekv_verify());
 *  - hashed keys and values that decode back to their number, the same
 *    in every test that uses them (ekv_hkey(), ekv_hval()).
 */
#ifndef _PMIDX_ENGINE_KV_H
#define _PMIDX_ENGINE_KV_H

#include "core/engine.h"

/* The buffers of ekv_put() and ekv_get_is(): the largest value. */
#define EKV_VMAX	65536

struct ekv_scheme {
	const u8	*klens;		/* key n: klens[n % nklens] bytes */
	unsigned int	nklens;
	const u32	*vlens;		/* value id: vlens[id % nvlens] bytes */
	unsigned int	nvlens;
	/*
	 * Key n's first bytes, the rest (ekv_key()) derived from n:
	 * 3: n >> 16, n >> 8, n (ordered by n, for n < 2^24);
	 * 2: 'a' + n / 26, 'a' + n % 26.
	 * A key is never shorter than its prefix.
	 */
	unsigned int	prefix;
	u64		scan_piece;	/* ekv_verify()'s resumed scan: records a piece */
};

/* The length tables of a scheme, two arrays: EKV_LENS(klens, vlens). */
#define EKV_LENS(k, v)	.klens = (k), .nklens = ARRAY_SIZE(k),		\
			.vlens = (v), .nvlens = ARRAY_SIZE(v)

/* The scheme of this test (set once, before the keys are used). */
void ekv_use(const struct ekv_scheme *s);

/* Key n and value id; @k and @v hold the longest of klens and vlens. */
u32 ekv_key(u64 n, u8 *k);
u32 ekv_val(u64 id, u8 *v);

/* @len bytes from @id: xorshift64 from id * 2^64 / phi + @salt. */
u32 ekv_bytes(u64 id, u64 salt, u8 *v, u32 len);

int ekv_put(struct pmidx_index *idx, u64 n, u64 id);
/* 0: key n holds value id; -EBADMSG: another value; else get's error */
int ekv_get_is(struct pmidx_index *idx, u64 n, u64 id);
int ekv_del(struct pmidx_index *idx, u64 n);

/* A scan sink that counts records and checks their order. */
struct ekv_counter {
	struct pmidx_scan_sink	sink;
	u64			n;
	u64			limit;	/* stop the scan every @limit records */
	u8			last[PMIDX_KEY_MAX];
	u32			last_len;
	bool			bad;	/* a key not above the one before */
};

int ekv_count_emit(struct pmidx_scan_sink *sink, const u8 *key, u32 klen,
		   const u8 *val, u32 vlen);

/* A full scan, in pieces of @limit records resumed after the last key. */
u64 ekv_scan_all(struct pmidx_index *idx, u64 limit);

/*
 * Keys 0..@n-1 against @state (state[i]: 0 absent, else value id + 1),
 * the engine's check and its key count, a full scan and a resumed one.
 */
void ekv_verify(struct pmidx_index *idx, const u64 *state, u64 n,
		const char *when);

/*
 * Threads against an index whose even keys below @keys hold their number
 * (8 bytes) and stay, while a test's writers churn the odd ones.
 */
struct ekv_thread {
	struct pmidx_index	*idx;
	unsigned int		id;
	u64			keys;
	_Atomic int		*stop;
	unsigned long		errors, checks;
};

/* The stable keys: every even n below @keys, value n. */
void ekv_put_stable(struct pmidx_index *idx, u64 keys);
/* Until *stop: gets of the stable keys, from key @id on. */
void *ekv_stable_reader(void *arg);
/* Until *stop: full scans, in order, the stable keys at least. */
void *ekv_stable_scanner(void *arg);

/* Hashed key i: 8 bytes, or 40 for every 7th (a blob); @k: 40 bytes. */
u32 ekv_hkey(u64 i, u8 *k);
/* Value v: 8 bytes, or 100 for every 5th (a blob), decoding back to v. */
u32 ekv_hval(u64 v, u8 *b);

/* The module builds engine @e (else a note: skipped). */
bool ekv_engine_available(u32 e);

#endif /* _PMIDX_ENGINE_KV_H */
