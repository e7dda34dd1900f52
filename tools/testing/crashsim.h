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
 * and checks recovery on each. Two ADR models:
 *
 * line (the default): the unit is a 64-byte line; every line written
 * since it was last durable arrives whole or not at all:
 *   variant 0   media only: nothing in flight arrived;
 *   variant 1   every written line arrived (as eADR would have it);
 *   variant 2+  a random subset of the written-but-not-durable lines
 *               arrived, each with its current or its flushed value.
 *
 * prefix (cfg.prefix; the "prefix" build of user.mk only): a dirty line
 * can be evicted at any moment, so it may persist as any prefix, in
 * program order, of the stores made to it since it was last durable (an
 * aligned store of up to 8 bytes is not torn; wider ones and mem* calls
 * are split at 8-byte boundaries, in ascending order). The build traces
 * every store into the working image (<shim/store_trace.h>); per line
 * the simulator keeps the stores since its content was durable, a flush
 * remembers how many of them its snapshot holds and the fence drops
 * those. Images: variant 0 = no store arrived, 1 = all did, then every
 * combination of per-line prefixes when there are at most prefix_images,
 * else random per-line prefixes up to prefix_images images. A line whose
 * media plus its recorded stores is not its working copy was written by
 * something not traced (a test writing into the image, another thread's
 * store not reported yet): it arrives as in the line model and is counted
 * (untraced_lines). A store that changes nothing is not recorded; past 64
 * pending stores a line's two oldest are merged into one (merged_stores).
 *
 * eADR (cfg.eadr): caches are persistent, so every store that reached the
 * cache is durable, in program order (x86-TSO: stores reach the cache in
 * that order, so per line a prefix of its stores, and across lines the
 * stores before the crash). One image per point. Without store tracing
 * (the plain build) the points are the fences (smp_wmb() included: an
 * eADR protocol's ordering points) and, with at_flushes, the flushes; the
 * image is the working copy. With cfg.prefix (the prefix build: the eADR
 * store model) there is a crash point after every store word into the
 * pool that changes it, and the image holds exactly the words reported
 * before it; lines written by untraced code arrive as they are
 * (untraced_lines). So an eADR protocol that relies on store order
 * without a fence between two stores is checked at that very gap.
 *
 * Each
 * image is attached (recovery), checked by the workload's checker,
 * detached cleanly, attached and checked again, then attached with a
 * forced recovery trace that must reach every object the clean attach
 * had allocated (a leak detector for any engine).
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
 * Limitations: the line model does not generate line values between two
 * observed points (a store landing halfway through a memcpy into a line);
 * crash points at flushes (at_flushes) narrow that gap, the prefix model
 * closes it. The prefix model does not reorder stores within a line: not
 * the out-of-order stores of fast string copies, not non-temporal stores
 * (a write-combining buffer may drain any subset of its words). With
 * several threads storing to one line, their order is the order in which
 * the stores were reported (each at its thread's next store, mem* call,
 * lock release, flush or fence, under one lock), not necessarily the
 * order they reached the cache. Workloads that use several threads are
 * serialised at the hooks but lose determinism.
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
	bool		prefix;		/* ADR store-prefix model, or with @eadr the
					 * eADR store model (prefix build) */
	unsigned int	prefix_images;	/* prefix: images per point (default 16) */
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
	u64		partial_lines;	/* prefix: of those, with only some stores */
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
	/* prefix model */
	u64		exhaustive_points; /* points with every combination tried */
	u64		max_line_stores; /* most stores pending on one line */
	u64		untraced_lines;	/* lines written by untraced code */
	u64		merged_stores;	/* stores merged past the per-line cap */
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

/* Whether this build traces stores (can run the prefix model). */
bool crashsim_prefix_supported(void);
/*
 * The model a test runs unless it asks for one: "--model line|prefix"
 * (taken out of argv by crashsim_parse_model(), before ut_main()), else
 * PMIDX_CRASH_MODEL=line|prefix, else prefix in the prefix build.
 */
bool crashsim_prefix_default(void);
int crashsim_parse_model(int *argc, char **argv);
/*
 * What a test's run takes from the environment into @cfg: the replay of
 * one failure (PMIDX_CRASH_POINT=P PMIDX_CRASH_VARIANT=V, each -1, all,
 * when unset), where failing images are saved (PMIDX_CRASH_SAVE=DIR) and
 * the model (crashsim_prefix_default()).
 */
void crashsim_config_env(struct crashsim_config *cfg);

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

/*
 * Index create and drop as ops of the model, keyed by the index's name:
 * "create" puts @engine, "drop" deletes; acknowledged when they succeed.
 * Return: what pmidx_index_create() / pmidx_index_drop() returned.
 */
int crashsim_index_create(struct crashsim *cs, struct pmidx_pool *pool,
			  const char *name, u32 engine);
int crashsim_index_drop(struct crashsim *cs, struct pmidx_pool *pool,
			const char *name);

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
