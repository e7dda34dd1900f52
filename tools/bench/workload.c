// SPDX-License-Identifier: GPL-2.0
/*
 * Workloads: which operation comes next, on which key. YCSB's core mixes
 * (A, B, C, E) plus single-op workloads. Keys are numbers 0..keys-1
 * (made into key_size bytes by bench_key()); reads, updates and scan
 * starts follow the configured distribution, uniform, scrambled zipfian
 * (tools/bench/zipf.h) or sequential (thread t's ops visit its share of
 * the op numbers, modulo keys: the kernel path's order); inserts take fresh numbers from keys up,
 * shared by all threads; load and delete visit each of 0..keys-1 once,
 * in a scattered order, split between the threads.
 */
#include <errno.h>
#include <string.h>
#include <strings.h>

#include "bench.h"

static const char *const wl_names[__WL_MAX] = {
	[WL_LOAD]	= "load",
	[WL_A]		= "A",
	[WL_B]		= "B",
	[WL_C]		= "C",
	[WL_E]		= "E",
	[WL_INSERT]	= "insert",
	[WL_UPDATE]	= "update",
	[WL_DELETE]	= "delete",
	[WL_SCAN]	= "scan",
};

const char *wl_name(enum bench_wl wl)
{
	return wl < __WL_MAX ? wl_names[wl] : "?";
}

const char *dist_name(enum bench_dist dist)
{
	if (dist == DIST_ZIPF)
		return "zipfian";
	return dist == DIST_SEQUENTIAL ? "sequential" : "uniform";
}

int wl_parse(const char *s, enum bench_wl *wl)
{
	unsigned int i;

	for (i = 0; i < __WL_MAX; i++) {
		if (!strcasecmp(s, wl_names[i])) {
			*wl = i;
			return 0;
		}
	}
	if (!strcmp(s, "insert-only") || !strcmp(s, "update-only")) {
		*wl = s[0] == 'i' ? WL_INSERT : WL_UPDATE;
		return 0;
	}
	if (!strcmp(s, "get") || !strcmp(s, "read")) {
		*wl = WL_C;	/* reads only */
		return 0;
	}
	return -EINVAL;
}

uint64_t wl_phase_ops(const struct bench_cfg *c, enum bench_wl wl)
{
	if (wl == WL_LOAD)
		return c->keys;
	if (wl == WL_DELETE)
		return c->ops < c->keys ? c->ops : c->keys;
	return c->ops;
}

int wl_proto(const struct bench_cfg *c, struct zipf_gen *proto)
{
	double theta = c->dist == DIST_ZIPF ? c->theta : 0;

	return zipf_init(proto, c->keys, theta, c->seed) ? -EINVAL : 0;
}

void wl_gen_init(struct wl_gen *g, const struct bench_cfg *c,
		 const struct zipf_gen *proto, enum bench_wl wl,
		 unsigned int t, unsigned int n, uint64_t ops,
		 _Atomic uint64_t *next_insert)
{
	uint64_t per = ops / n;

	memset(g, 0, sizeof(*g));
	g->cfg = c;
	zipf_init_from(&g->z, proto, c->seed * 1000003 + t * 7919 + wl);
	g->first = t * per;
	g->count = t == n - 1 ? ops - t * per : per;
	g->next_insert = next_insert;
}

/*
 * A fixed permutation of 0..n-1 so loads and deletes visit keys in a
 * scattered order: multiplying by a prime that does not divide n is a
 * bijection modulo n.
 */
static uint64_t permute(uint64_t i, uint64_t n)
{
	const uint64_t p = 2654435761u;

	if (!(n % p))
		return i;
	return (unsigned __int128)i * p % n;
}

/* The key of the @i-th read, update or scan start. */
static uint64_t pick(struct wl_gen *g, uint64_t i)
{
	if (g->cfg->dist == DIST_ZIPF)
		return zipf_next_scrambled(&g->z);
	if (g->cfg->dist == DIST_SEQUENTIAL)
		return i % g->cfg->keys;
	return zipf_uniform(&g->z);
}

/* Read with probability @pct percent, else update. */
static enum bench_op_kind read_or(struct wl_gen *g, unsigned int pct,
				  enum bench_op_kind other)
{
	return zipf_rand64(&g->z) % 100 < pct ? OP_READ : other;
}

static void fresh_key(struct wl_gen *g, struct bench_op *op)
{
	op->kind = OP_INSERT;
	op->key = g->cfg->keys +
		  atomic_fetch_add_explicit(g->next_insert, 1,
					    memory_order_relaxed);
}

void wl_next(struct wl_gen *g, enum bench_wl wl, struct bench_op *op)
{
	uint64_t i = g->first + g->i++;

	op->scan_len = 0;
	switch (wl) {
	case WL_LOAD:
	case WL_DELETE:
		op->kind = wl == WL_LOAD ? OP_INSERT : OP_DELETE;
		op->key = permute(i, g->cfg->keys);
		return;
	case WL_INSERT:
		fresh_key(g, op);
		return;
	case WL_E:
		if (zipf_rand64(&g->z) % 100 < 5) {
			fresh_key(g, op);
			return;
		}
		op->kind = OP_SCAN;
		op->scan_len = 1 + zipf_rand64(&g->z) % BENCH_SCAN_MAX;
		break;
	case WL_SCAN:
		op->kind = OP_SCAN;
		op->scan_len = BENCH_SCAN_MAX;
		break;
	case WL_A:
		op->kind = read_or(g, 50, OP_UPDATE);
		break;
	case WL_B:
		op->kind = read_or(g, 95, OP_UPDATE);
		break;
	case WL_UPDATE:
		op->kind = OP_UPDATE;
		break;
	default:
		op->kind = OP_READ;
		break;
	}
	op->key = pick(g, i);
}

void bench_key(const struct bench_cfg *c, uint64_t id, uint8_t *key)
{
	pmidx_key_from_u64(id, key);
	if (c->key_size > PMIDX_U64_KEY_LEN)
		memset(key + PMIDX_U64_KEY_LEN, 'k',
		       c->key_size - PMIDX_U64_KEY_LEN);
}

void bench_value(const struct bench_cfg *c, uint64_t stamp, uint8_t *val)
{
	unsigned int n = c->value_size < sizeof(stamp) ? c->value_size :
							 sizeof(stamp);

	memcpy(val, &stamp, n);
}
