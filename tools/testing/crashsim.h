/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ADR/eADR crash simulator for kmod/core and the engines (userspace build).
 *
 * The workload runs on a "working" image (what the CPU sees). The
 * simulator keeps a shadow "media" image (what would survive a power cut)
 * by watching the pmem backend (<shim/pmem.h>):
 *   ADR:  a flush (clwb) snapshots the flushed lines into a pending set;
 *         a fence (sfence) commits the pending lines to media.
 *   eADR: caches are persistent: every store is media at once.
 * A crash point is a fence (optionally also a flush): the state just
 * before it executes. At a crash point the simulator builds crash images
 * and checks recovery on each:
 *   variant 0   media only: nothing in flight arrived;
 *   variant 1   every written line arrived (as eADR would have it);
 *   variant 2+  a random subset of the written-but-not-durable lines
 *               arrived, each with its current or its flushed value.
 * (In eADR mode there is one image per point: the working copy.) Each

 *
 * Crash points: every one when the history is short (<= exhaustive_max),
 * else a deterministic random sample plus the end state. Workloads must
 * be deterministic (same seed, same fences): a counting pass checks it.
 *
 * Model (what "acknowledged" means): the workload brackets operations
 * with crashsim_op_begin() / crashsim_op_ack(). An operation acknowledged
 * before the crash point must be visible with its latest value; one in
 * flight may be either before or after, never anything else; nothing
 * unacknowledged may show. Keys are byte strings, values u64 (an index's
 * engine, later a value hash); crashsim_expect() answers per key.
 *
 * Limitations: line values between two observed points (a store landing
 * halfway through a memcpy into a line) are not generated; crash points
 * at flushes (at_flushes) narrow that gap. Workloads that use several
 * threads are serialised at the hooks but lose determinism.
 */
#ifndef _PMIDX_CRASHSIM_H
#define _PMIDX_CRASHSIM_H

#include "core/pool.h"

struct crashsim;

struct crashsim_config {
	u64		pool_size;	/* default 16 MiB */
	bool		eadr;		/* eADR persistence model, eADR attach */
	bool		at_flushes;	/* crash points at flushes too (ADR) */
	u64		seed;
	unsigned int	exhaustive_max;	/* all points up to this (default 3000) */
	unsigned int	samples;	/* else this many random points (default 400) */
	unsigned int	variants;	/* random subsets per point (default 2) */
	long		only_point;	/* >= 0: just this point (replay) */
	int		only_variant;	/* >= 0: just this variant (replay) */
	unsigned int	max_failures;	/* stop reporting after (default 5) */
	const char	*save_dir;	/* failing crash images are saved here */
	bool		verbose;
};

struct crashsim_point {
	u64		index;		/* crash point number (fence/flush count) */
	u64		total;		/* points in the history, end state included */
	bool		end;		/* after the workload returned */
	unsigned int	variant;
	u64		dirty_lines;	/* written, not durable, at this point */
	u64		arrived_lines;	/* of which this variant let arrive */
};

struct crashsim_result {
	u64		events;		/* crash points in the history */
	u64		points;		/* crash points tried */
	u64		images;		/* crash images recovered and checked */
	u64		refused;	/* attach refused (allowed by the checker) */
	u64		failures;
	u64		max_dirty_lines;
	u64		unflushed_at_end; /* lines written but never made durable */
	u64		ops, acked;
	double		seconds;
};

struct crashsim_workload {
	const char	*name;
	/* Perform the workload on @img (zeroed, @size bytes). Return 0 or -errno. */
	int		(*run)(struct crashsim *cs, void *img, u64 size, void *arg);
	/*
	 * Check one recovered crash image: @pool attached, or NULL when the
	 * attach failed with @err (@why). Report problems with
	 * crashsim_fail(); return 0 when the image is acceptable.
	 */
	int		(*check)(struct crashsim *cs, const struct crashsim_point *pt,
				 struct pmidx_pool *pool, int err, const char *why,
				 void *arg);
	void		*arg;
};

int crashsim_run(const struct crashsim_config *cfg,
		 const struct crashsim_workload *wl, struct crashsim_result *res);

/* ---- for run() ------------------------------------------------------------ */

enum crashsim_op_type {
	CRASHSIM_OP_PUT = 1,	/* key := value */
	CRASHSIM_OP_DEL,	/* key gone */
	CRASHSIM_OP_NOTE,	/* no effect on keys (format, attach, ...) */
};

/* Returns the op's handle. */
unsigned int crashsim_op_begin(struct crashsim *cs, u32 type, const char *tag,
			       const void *key, u32 klen, u64 value);
void crashsim_op_ack(struct crashsim *cs, unsigned int op);

/* ---- for check() ---------------------------------------------------------- */

#define CRASHSIM_MAX_ALT	4

struct crashsim_expect {
	unsigned int	n;			/* acceptable states */
	bool		present[CRASHSIM_MAX_ALT];
	u64		value[CRASHSIM_MAX_ALT];
};

/* What may be found for @key after this crash. */
void crashsim_expect(struct crashsim *cs, const void *key, u32 klen,
		     struct crashsim_expect *e);
bool crashsim_expect_ok(const struct crashsim_expect *e, bool present, u64 value);
/* Every key the model has seen: 0..n-1, NULL past the end. */
const u8 *crashsim_key(struct crashsim *cs, unsigned int i, u32 *klen);
/* Was the first NOTE op tagged @tag acknowledged / started at this crash? */
bool crashsim_note_acked(struct crashsim *cs, const char *tag);
bool crashsim_note_started(struct crashsim *cs, const char *tag);

void crashsim_fail(struct crashsim *cs, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * Generic pool checks every checker wants: roots are distinct live
 * objects, fresh allocations never overlap a root, and (when
 * @extra_objects >= 0, i.e. the checker knows) allocated objects ==
 * roots + @extra_objects. Returns the number of problems reported.
 * (Whatever the engines, check_image() also compares a clean attach's
 * object count with what a forced recovery trace reaches: leaks.)
 */
int crashsim_check_pool(struct crashsim *cs, struct pmidx_pool *pool,
			s64 extra_objects);

void crashsim_print_result(const char *name, const struct crashsim_config *cfg,
			   const struct crashsim_result *res);

#endif
