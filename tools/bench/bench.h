/* SPDX-License-Identifier: GPL-2.0 */
/*
 * pmidx-bench internals: one configuration (struct bench_cfg) runs one
 * or two phases (load, then the workload), or the --phases list, through
 * one path; each phase
 * runs its threads (run.c), each thread draws operations from its
 * workload generator (workload.c) and issues them through the path
 * (path_sync.c, path_uring.c, path_kernel.c, or path_lmdb.c: LMDB as the
 * baseline), recording latencies in a histogram (stats.c).
 */
#ifndef PMIDX_BENCH_H
#define PMIDX_BENCH_H

#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <pmidx.h>
#include <pmidx-embedded.h>

#include "zipf.h"

#define BENCH_INDEX	"bench"
#define BENCH_SCAN_MAX	100		/* records per scan (E: 1..100) */
#define BENCH_VAL_MAX	65536
#define BENCH_MAX_PHASES 8		/* --phases */

enum bench_path {
	PATH_IOCTL,	/* libpmidx sync API on /dev/pmidxN */
	PATH_URING,	/* libpmidx rings: io_uring passthrough */
	PATH_INPROC,	/* libpmidx sync API on a pool file, in-process */
	PATH_KERNEL,	/* the in-kernel API through /dev/pmidx_dentry */
	PATH_LMDB,	/* LMDB in a directory: the baseline, no pmidx */
	PATH_KAPI,	/* the in-kernel API's calls on a pool file, in-process */
};

/* A pool file in this process: the inproc and kapi paths. */
#define PATH_ON_FILE(p)	((p) == PATH_INPROC || (p) == PATH_KAPI)

enum bench_dist {
	DIST_UNIFORM,
	DIST_ZIPF,	/* scrambled zipfian (hot keys spread out) */
	DIST_SEQUENTIAL, /* in key order, as the kernel path runs */
};

enum bench_wl {
	WL_LOAD,	/* insert keys 0..keys-1, scattered order */
	WL_A,		/* 50% read, 50% update */
	WL_B,		/* 95% read, 5% update */
	WL_C,		/* read only */
	WL_E,		/* 95% scan of 1..100, 5% insert of new keys */
	WL_INSERT,	/* insert new keys only */
	WL_UPDATE,	/* update existing keys only */
	WL_DELETE,	/* delete existing keys, each once */
	WL_SCAN,	/* scans of 100 only (first-cut "scan") */
	__WL_MAX,
};

enum bench_op_kind {
	OP_READ,
	OP_UPDATE,
	OP_INSERT,
	OP_SCAN,
	OP_DELETE,
};

struct bench_op {
	enum bench_op_kind	kind;
	uint64_t		key;		/* key number, see bench_key() */
	uint32_t		scan_len;	/* OP_SCAN: records wanted */
};

struct bench_cfg {
	char			label[160];	/* compare: the spec; else "" */
	enum bench_path		path;
	const char		*target;	/* char device, pool file, lmdb DIR */
	const char		*engine;
	const char		*index;
	enum bench_wl		wl;
	enum bench_dist		dist;
	double			theta;
	uint64_t		keys, ops, seed;
	unsigned int		threads, qd, batch;
	unsigned int		sample;		/* sync: time one op in this many */
	unsigned int		key_size, value_size;
	bool			create, load;	/* set the index up; load it */
	/* --phases: these in order instead of load + wl (nphases > 0) */
	enum bench_wl		phases[BENCH_MAX_PHASES];
	unsigned int		nphases;
	bool			prefault;	/* inproc: the pool's pages */
	bool			sqpoll;		/* uring: PMIDX_RING_SQPOLL */
	bool			twin;		/* volatile twin: no restart times */
};

/* One phase's outcome. */
struct bench_result {
	const char	*phase;		/* workload name */
	uint64_t	ops, errors;
	double		secs, ops_per_s, mean_ns;
	bool		has_pct;	/* percentiles known (not kernel) */
	uint64_t	p50, p99, p999, max;
	bool		has_pm;		/* inproc: the pool's pmem counters */
	double		flushes_per_op, fences_per_op;
};

/* ---- latency histogram (stats.c) ------------------------------------------ */

#define HIST_SUB_BITS	5
#define HIST_BUCKETS	((64 - HIST_SUB_BITS + 1) << HIST_SUB_BITS)

/* Log-linear buckets: 32 per power of two, relative error < 3.2%. */
struct hist {
	uint64_t	count[HIST_BUCKETS];
	uint64_t	n, sum, max;
};

void hist_add(struct hist *h, uint64_t ns);
void hist_add_n(struct hist *h, uint64_t ns, uint64_t n);
void hist_merge(struct hist *dst, const struct hist *src);
/* The value at quantile @q (0..1): the upper bound of its bucket. */
uint64_t hist_quantile(const struct hist *h, double q);

/* ---- workloads (workload.c) ----------------------------------------------- */

struct wl_gen {
	const struct bench_cfg	*cfg;
	struct zipf_gen		z;
	uint64_t		first, count, i;	/* load/delete slice */
	_Atomic uint64_t	*next_insert;		/* shared */
};

const char *wl_name(enum bench_wl wl);
const char *dist_name(enum bench_dist dist);
int wl_parse(const char *s, enum bench_wl *wl);
/* Operations a phase of @wl runs: loads and deletes touch each key once. */
uint64_t wl_phase_ops(const struct bench_cfg *c, enum bench_wl wl);
/* The key distribution shared by all threads (zeta is O(keys)). */
int wl_proto(const struct bench_cfg *c, struct zipf_gen *proto);
/* Thread @t of @n: its share of the phase's @ops. */
void wl_gen_init(struct wl_gen *g, const struct bench_cfg *c,
		 const struct zipf_gen *proto, enum bench_wl wl,
		 unsigned int t, unsigned int n, uint64_t ops,
		 _Atomic uint64_t *next_insert);
void wl_next(struct wl_gen *g, enum bench_wl wl, struct bench_op *op);
/* Key number @id as cfg->key_size bytes: big-endian u64, then padding. */
void bench_key(const struct bench_cfg *c, uint64_t id, uint8_t *key);
/* Stamp a value buffer (its first 8 bytes) with @stamp; fill it once. */
void bench_value(const struct bench_cfg *c, uint64_t stamp, uint8_t *val);

/* ---- phases and paths (run.c, path_*.c) ----------------------------------- */

struct bench_run;

struct bench_thread {
	struct bench_run	*run;
	unsigned int		t;
	struct wl_gen		gen;
	uint64_t		ops;		/* this thread's share */
	_Atomic uint64_t	done;		/* progress */
	uint64_t		errors;
	uint64_t		kernel_ns;	/* kernel path: in-kernel time */
	uint64_t		start_ns, end_ns;
	struct hist		*hist;
	int			err;		/* fatal: the phase failed */
	char			why[128];
};

struct bench_path_ops {
	const char *name;
	/* Open what the threads share (pool, index). 0 or -errno. */
	int (*open)(struct bench_run *run);
	void (*close)(struct bench_run *run);
	/* One thread's share of the phase; sets t->err on failure. */
	void (*thread)(struct bench_thread *t);
	bool has_pct;		/* per-op latencies, or only a mean */
};

struct bench_run {
	const struct bench_cfg		*cfg;
	const struct bench_path_ops	*ops;
	enum bench_wl			wl;		/* this phase */
	struct zipf_gen			proto;
	_Atomic uint64_t		next_insert;
	struct pmidx_pool		*pool;
	struct pmidx_index		*idx;
	char				pool_name[64];	/* kernel path */
	void				*priv;		/* lmdb: its env; kapi: the held index */
};

/* The buffers of one operation in flight. */
struct op_buf {
	uint8_t		*key;		/* key_size bytes */
	uint8_t		*val;		/* value_size bytes, filled once */
	uint8_t		*out;		/* GET value or SCAN records */
	size_t		out_len;
};

/* Size of op_buf.out for @c's workloads; 0 on overflow. */
size_t bench_out_len(const struct bench_cfg *c);
int op_buf_alloc(struct op_buf *b, const struct bench_cfg *c);
void op_buf_free(struct op_buf *b);
/* @op as a request on @b's buffers; @stamp goes into PUT values. */
void bench_req(const struct bench_run *run, const struct bench_op *op,
	       struct op_buf *b, uint64_t stamp, struct pmidx_req *q);
/* Errors a workload can meet (a key gone, already there): counted, not fatal. */
static inline bool bench_err_expected(int err)
{
	return !err || err == -ENOENT || err == -EEXIST;
}

/* The pool at cfg->target and its index cfg->index, in run->pool/idx. */
int bench_open_index(struct bench_run *run);
void bench_close_index(struct bench_run *run);

extern const struct bench_path_ops bench_path_sync;
extern const struct bench_path_ops bench_path_uring;
extern const struct bench_path_ops bench_path_kernel;
extern const struct bench_path_ops bench_path_lmdb;
extern const struct bench_path_ops bench_path_kapi;

/*
 * Run phase @wl of @run's configuration and fill @res. Return: 0, or a
 * negative errno with a message printed.
 */
int bench_phase(struct bench_run *run, enum bench_wl wl,
		struct bench_result *res);

uint64_t bench_now_ns(void);
/* Record one completed operation of @t: latency, error, progress. */
static inline void bench_done(struct bench_thread *t, uint64_t ns,
			      uint64_t n, uint64_t errors)
{
	hist_add_n(t->hist, ns, n);
	t->errors += errors;
	atomic_fetch_add_explicit(&t->done, n, memory_order_relaxed);
}

/* Record one completed operation of @t whose latency was not taken. */
static inline void bench_count(struct bench_thread *t, uint64_t errors)
{
	t->errors += errors;
	atomic_fetch_add_explicit(&t->done, 1, memory_order_relaxed);
}

typedef int (*bench_op_fn)(struct bench_thread *t, const struct bench_op *op,
			   struct op_buf *b, uint64_t stamp);

/*
 * One call of @fn per op, the latency of one op in --sample (the clock
 * costs); inline, so that each path's @fn is a direct call.
 */
static inline void bench_singles(struct bench_thread *t, struct op_buf *b,
				 bench_op_fn fn)
{
	unsigned int sample = t->run->cfg->sample, left = 0;
	struct bench_op op;
	uint64_t i, t0;
	int ret;

	for (i = 0; i < t->ops; i++) {
		wl_next(&t->gen, t->run->wl, &op);
		if (left--) {
			ret = fn(t, &op, b, i);
			bench_count(t, ret != 0);
		} else {
			left = sample - 1;
			t0 = bench_now_ns();
			ret = fn(t, &op, b, i);
			bench_done(t, bench_now_ns() - t0, 1, ret != 0);
		}
		if (!bench_err_expected(ret)) {
			t->err = ret;
			return;
		}
	}
}

/* ---- output (stats.c) ------------------------------------------------------- */

struct bench_report {
	struct bench_cfg	cfg;
	struct bench_result	res[BENCH_MAX_PHASES];
	unsigned int		nres;
	double			restart_ms, recovery_ms;	/* inproc */
	const char		*pmem_hw;	/* inproc: the pmem backend's mode */
	/* --volatile-baseline: the same phases with PMIDX_PMEM_HW=volatile */
	struct bench_result	vres[BENCH_MAX_PHASES];
	unsigned int		nvres;
};

const char *bench_path_name(enum bench_path p);
void bench_print_table(const struct bench_report *r, unsigned int n);
int bench_write_json(const char *file, const struct bench_report *r,
		     unsigned int n, bool compare);

#endif /* PMIDX_BENCH_H */
