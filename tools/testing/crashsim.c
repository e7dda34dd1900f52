// SPDX-License-Identifier: GPL-2.0
/*
 * ADR/eADR crash simulator: see crashsim.h for the model.
 *
 * Bookkeeping: media[] mirrors what is durable; pending[] holds the lines
 * flushed since their thread's last fence, as they were when flushed.
 * Crash images are built in scratch[] from media[] plus the lines of
 * work[] that differ from media[] ("dirty lines"), chosen per variant.
 *
 * Checks run synchronously inside the hook that reached the crash point,
 * with the simulator's lock held, so other workload threads wait at their
 * next flush or fence. The checking thread (and any work item it queues)
 * carries a thread context that makes the hooks ignore it.
 */
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>

#include <linux/crc32.h>
#include <shim/pmem.h>
#include <shim/shim.h>
#include "core/super.h"
#include "crashsim.h"

#define LINE		64
#define LINE_SHIFT	6

struct cs_op {
	u32		type;
	u32		klen;
	u8		*key;
	u64		value;
	const char	*tag;
	bool		acked;
};

struct cs_pending {
	u64		line;
	pthread_t	owner;
	u8		data[LINE];
};

struct crashsim {
	struct crashsim_config		cfg;
	const struct crashsim_workload	*wl;
	struct crashsim_result		*res;
	u8				*work, *media, *scratch;
	u64				size, nlines;

	pthread_mutex_t			lock;	/* hooks and everything below */
	bool				counting;
	u64				events;
	u64				*points;	/* sorted crash points */
	u64				npoints, next;

	u32				*pend_slot;	/* line -> pending index + 1 */
	struct cs_pending		*pend;
	u32				npend, pend_cap;
	u64				*dirty;		/* dirty lines at a point */
	u64				ndirty, dirty_cap;

	struct cs_op			*ops;
	u32				nops, ops_cap;

	u64				rng;
	struct crashsim_point		cur;
	bool				cur_failed;
	char				checker_tag;	/* &checker_tag: thread ctx */
};

static struct crashsim *cs_active;	/* for the SIGABRT note */

/*
 * Reads of the working image race with the workload, by design. A crash
 * point holds only the thread that reached it (and the others at their
 * next flush or fence): another workload thread (a second writer, an
 * engine's GC kthread) may be storing to work[] while the checker reads
 * it, as a CPU may be storing when the power goes. Such a store is not
 * durable yet (its thread has not fenced it), so the image may or may not
 * hold it, which is what the crash images explore. The race is the model,
 * not a bug, and no lock can stop it: the stores are plain ones, between
 * hooks, possibly under kernel locks the stopped thread holds.
 *
 * So these helpers, and only they, read work[] with ThreadSanitizer's
 * reads ignored: the workload's own accesses, to work[] and everything
 * else, are still checked against each other.
 */
#if defined(__SANITIZE_THREAD__)
#define CS_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CS_TSAN 1
#endif
#endif

#ifdef CS_TSAN
/* ThreadSanitizer's dynamic annotations (no public header declares them) */
void AnnotateIgnoreReadsBegin(const char *file, int line);
void AnnotateIgnoreReadsEnd(const char *file, int line);
#define work_racy_begin()	AnnotateIgnoreReadsBegin(__FILE__, __LINE__)
#define work_racy_end()		AnnotateIgnoreReadsEnd(__FILE__, __LINE__)
#else
#define work_racy_begin()	do { } while (0)
#define work_racy_end()		do { } while (0)
#endif

/* Copy @len bytes of work[] at @off: see above. */
static void work_read(struct crashsim *cs, void *dst, u64 off, size_t len)
{
	work_racy_begin();
	memcpy(dst, cs->work + off, len);
	work_racy_end();
}

/* Whether work[] differs from media[] in @len bytes at @off: see above. */
static bool work_dirty(struct crashsim *cs, u64 off, size_t len)
{
	bool dirty;

	work_racy_begin();
	dirty = memcmp(cs->work + off, cs->media + off, len);
	work_racy_end();
	return dirty;
}

static u64 cs_rand(struct crashsim *cs)
{
	u64 z = (cs->rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static bool cs_ignored(struct crashsim *cs)
{
	return shim_thread_ctx() == &cs->checker_tag;
}

/* ---- the model ---------------------------------------------------------------- */

unsigned int crashsim_op_begin(struct crashsim *cs, u32 type, const char *tag,
			       const void *key, u32 klen, u64 value)
{
	struct cs_op *op;
	unsigned int id;

	pthread_mutex_lock(&cs->lock);
	if (cs->nops == cs->ops_cap) {
		cs->ops_cap = cs->ops_cap ? 2 * cs->ops_cap : 64;
		cs->ops = realloc(cs->ops, cs->ops_cap * sizeof(*cs->ops));
		BUG_ON(!cs->ops);
	}
	id = cs->nops++;
	op = &cs->ops[id];
	memset(op, 0, sizeof(*op));
	op->type = type;
	op->tag = tag;
	op->value = value;
	op->klen = klen;
	if (klen) {
		op->key = malloc(klen);
		BUG_ON(!op->key);
		memcpy(op->key, key, klen);
	}
	pthread_mutex_unlock(&cs->lock);
	return id;
}

void crashsim_op_ack(struct crashsim *cs, unsigned int id)
{
	pthread_mutex_lock(&cs->lock);
	BUG_ON(id >= cs->nops);
	cs->ops[id].acked = true;
	pthread_mutex_unlock(&cs->lock);
}

static bool op_is(const struct cs_op *op, const void *key, u32 klen)
{
	return op->type != CRASHSIM_OP_NOTE && op->klen == klen &&
	       !memcmp(op->key, key, klen);
}

/* Called with cs->lock held (from a check) or from the workload thread. */
void crashsim_expect(struct crashsim *cs, const void *key, u32 klen,
		     struct crashsim_expect *e)
{
	bool present = false;
	u64 value = 0;
	unsigned int i, k;

	e->n = 0;
	for (i = 0; i < cs->nops; i++) {
		const struct cs_op *op = &cs->ops[i];

		if (!op_is(op, key, klen))
			continue;
		if (op->acked) {
			present = op->type == CRASHSIM_OP_PUT;
			value = present ? op->value : 0;
		} else if (e->n < CRASHSIM_MAX_ALT - 1) {
			/* in flight: its outcome is allowed too */
			e->present[e->n] = op->type == CRASHSIM_OP_PUT;
			e->value[e->n] = e->present[e->n] ? op->value : 0;
			e->n++;
		}
	}
	/* the definite state goes first */
	for (k = e->n; k > 0; k--) {
		e->present[k] = e->present[k - 1];
		e->value[k] = e->value[k - 1];
	}
	e->present[0] = present;
	e->value[0] = value;
	e->n++;
}

bool crashsim_expect_ok(const struct crashsim_expect *e, bool present, u64 value)
{
	unsigned int i;

	for (i = 0; i < e->n; i++)
		if (e->present[i] == present && (!present || e->value[i] == value))
			return true;
	return false;
}

const u8 *crashsim_key(struct crashsim *cs, unsigned int n, u32 *klen)
{
	unsigned int i, j;

	for (i = 0; i < cs->nops; i++) {
		const struct cs_op *op = &cs->ops[i];

		if (op->type == CRASHSIM_OP_NOTE)
			continue;
		for (j = 0; j < i; j++)
			if (op_is(&cs->ops[j], op->key, op->klen))
				break;
		if (j < i)
			continue;		/* seen before */
		if (!n--) {
			*klen = op->klen;
			return op->key;
		}
	}
	return NULL;
}

static const struct cs_op *note(struct crashsim *cs, const char *tag)
{
	unsigned int i;

	for (i = 0; i < cs->nops; i++)
		if (cs->ops[i].type == CRASHSIM_OP_NOTE && !strcmp(cs->ops[i].tag, tag))
			return &cs->ops[i];
	return NULL;
}

bool crashsim_note_acked(struct crashsim *cs, const char *tag)
{
	const struct cs_op *op = note(cs, tag);

	return op && op->acked;
}

bool crashsim_note_started(struct crashsim *cs, const char *tag)
{
	return note(cs, tag);
}

void crashsim_fail(struct crashsim *cs, const char *fmt, ...)
{
	va_list ap;

	cs->cur_failed = true;
	if (cs->res->failures++ >= cs->cfg.max_failures)
		return;
	printf("# crashsim %s: FAIL at point %llu/%llu%s variant %u "
	       "(%llu dirty lines, %llu arrived, seed %#llx): ",
	       cs->wl->name, (unsigned long long)cs->cur.index,
	       (unsigned long long)cs->cur.total, cs->cur.end ? " (end)" : "",
	       cs->cur.variant, (unsigned long long)cs->cur.dirty_lines,
	       (unsigned long long)cs->cur.arrived_lines,
	       (unsigned long long)cs->cfg.seed);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

/* ---- generic pool checks -------------------------------------------------------- */

int crashsim_check_pool(struct crashsim *cs, struct pmidx_pool *pool,
			s64 extra_objects)
{
	static const size_t sizes[] = { 256, 300, 4096, 70000, 300000 };
	struct pmidx_stats st = {};
	u64 roots[PMIDX_MAX_INDEXES], fresh[ARRAY_SIZE(sizes) * 4];
	unsigned int nroots = 0, nfresh = 0, i, j;
	int bad = 0;

	for (i = 0; i < PMIDX_MAX_INDEXES; i++) {
		struct pmidx_index *idx = pool->indexes[i];

		if (!idx)
			continue;
		if (pmidx_alloc_size(&pool->alloc, idx->root) < PMIDX_INDEX_ROOT_SIZE ||
		    !pmidx_alloc_valid(&pool->alloc, idx->root, PMIDX_INDEX_ROOT_SIZE)) {
			crashsim_fail(cs, "index %s: root %#llx is not a live object",
				      idx->name, (unsigned long long)idx->root);
			bad++;
		}
		for (j = 0; j < nroots; j++) {
			if (roots[j] == idx->root) {
				crashsim_fail(cs, "index %s shares its root", idx->name);
				bad++;
			}
		}
		roots[nroots++] = idx->root;
	}
	pmidx_pool_stats(pool, &st);
	if (extra_objects >= 0 &&
	    st.val[PMIDX_STAT_ALLOC_OBJECTS] != nroots + extra_objects) {
		crashsim_fail(cs, "allocator holds %llu objects, %llu reachable (leak)",
			      (unsigned long long)st.val[PMIDX_STAT_ALLOC_OBJECTS],
			      (unsigned long long)(nroots + extra_objects));
		bad++;
	}
	/* new objects never overlap a live one */
	for (i = 0; i < ARRAY_SIZE(fresh); i++) {
		size_t sz = sizes[i % ARRAY_SIZE(sizes)];
		u64 off = pmidx_alloc(&pool->alloc, sz);

		if (!off)
			continue;
		for (j = 0; j < nroots; j++) {
			if (off < roots[j] + PMIDX_INDEX_ROOT_SIZE &&
			    roots[j] < off + pmidx_alloc_size(&pool->alloc, off)) {
				crashsim_fail(cs, "fresh object %#llx overlaps root %#llx",
					      (unsigned long long)off,
					      (unsigned long long)roots[j]);
				bad++;
			}
		}
		fresh[nfresh++] = off;
	}
	while (nfresh)
		pmidx_free(&pool->alloc, fresh[--nfresh]);
	return bad;
}

/* ---- crash images ----------------------------------------------------------------- */

static void save_image(struct crashsim *cs)
{
	char path[512];
	FILE *f;

	if (!cs->cfg.save_dir)
		return;
	snprintf(path, sizeof(path), "%s/crash-%s-%s-p%llu-v%u.img", cs->cfg.save_dir,
		 cs->wl->name, cs->cfg.eadr ? "eadr" : "adr",
		 (unsigned long long)cs->cur.index, cs->cur.variant);
	f = fopen(path, "w");
	if (!f)
		return;
	if (fwrite(cs->scratch, 1, cs->size, f) == cs->size)
		printf("# crashsim: crash image saved as %s\n", path);
	fclose(f);
}

/* Build variant @v of the current point into scratch[]. */
static void build_image(struct crashsim *cs, unsigned int v)
{
	u64 i, arrived = 0;
	unsigned int pct = 50;

	if (cs->cfg.eadr) {
		work_read(cs, cs->scratch, 0, cs->size);
		cs->cur.arrived_lines = 0;
		return;
	}
	memcpy(cs->scratch, cs->media, cs->size);
	if (v >= 2)
		pct = (unsigned int[]){ 10, 50, 90 }[v % 3];
	for (i = 0; i < cs->ndirty; i++) {
		u64 line = cs->dirty[i];
		u32 slot = cs->pend_slot[line];
		u8 *dst = cs->scratch + (line << LINE_SHIFT);

		if (v == 0)
			break;
		if (v >= 2) {
			if (cs_rand(cs) % 100 >= pct)
				continue;
			/* a line flushed and written again: either value */
			if (slot && cs_rand(cs) % 2) {
				memcpy(dst, cs->pend[slot - 1].data, LINE);
				arrived++;
				continue;
			}
		}
		work_read(cs, dst, line << LINE_SHIFT, LINE);
		arrived++;
	}
	cs->cur.arrived_lines = arrived;
}

/* Make the (cleanly detached) scratch image look crashed: attach traces. */
static void force_trace(struct crashsim *cs)
{
	struct pmidx_pmem pm = { .base = cs->scratch, .size = cs->size };
	const char *why = NULL;
	struct pmidx_sb sb, *dst;
	unsigned int slot;

	if (pmidx_sb_read(&pm, &sb, &slot, &why))
		return;
	dst = (struct pmidx_sb *)(cs->scratch + slot * PMIDX_SB_STRIDE);
	dst->clean = 0;
	dst->crc = cpu_to_le32(~__crc32c_le(~0U, (const u8 *)dst,
					    offsetof(struct pmidx_sb, crc)));
}

static u64 pool_objects(struct pmidx_pool *pool)
{
	struct pmidx_stats st = {};

	pmidx_pool_stats(pool, &st);
	return st.val[PMIDX_STAT_ALLOC_OBJECTS];
}

/*
 * Attach the crash image (recovery) and check it; detach cleanly and
 * attach again (the clean path) and check again; then force a recovery
 * trace of that clean image: it must find every object the clean attach
 * had allocated, or something allocated is not reachable (a leak).
 */
static void check_image(struct crashsim *cs)
{
	const struct crashsim_workload *wl = cs->wl;
	struct pmidx_pool *pool;
	const char *why = NULL;
	u64 clean_objects = 0;
	int err = 0, round;

	cs->cur_failed = false;
	for (round = 0; round < 3; round++) {
		if (round == 2)
			force_trace(cs);
		pool = pmidx_pool_open(cs->scratch, cs->size, cs->cfg.eadr, &why);
		if (IS_ERR(pool)) {
			err = PTR_ERR(pool);
			pool = NULL;
			if (round) {
				crashsim_fail(cs, "attach #%d (after a clean detach) failed: %d (%s)",
					      round + 1, err, why);
				break;
			}
		}
		if (round < 2)
			wl->check(cs, &cs->cur, pool, err, why, wl->arg);
		if (!pool) {
			cs->res->refused++;
			break;
		}
		if (round == 1) {
			if (pool->flags & PMIDX_POOL_F_RECOVERED)
				crashsim_fail(cs, "clean detach of a recovered pool did not stick");
			clean_objects = pool_objects(pool);
		}
		if (round == 2 && pool_objects(pool) != clean_objects)
			crashsim_fail(cs, "allocator leak: %llu objects allocated, a recovery "
				      "trace reaches %llu",
				      (unsigned long long)clean_objects,
				      (unsigned long long)pool_objects(pool));
		pmidx_pool_close(pool);
	}
	cs->res->images++;
	if (cs->cur_failed && cs->cfg.save_dir) {
		build_image(cs, cs->cur.variant);	/* as it was before recovery */
		save_image(cs);
	}
}

static void collect_dirty(struct crashsim *cs)
{
	u64 page, i;

	cs->ndirty = 0;
	if (cs->cfg.eadr)
		return;
	for (page = 0; page < cs->size; page += 4096) {
		if (!work_dirty(cs, page, 4096))
			continue;
		for (i = page; i < page + 4096; i += LINE) {
			if (!work_dirty(cs, i, LINE))
				continue;
			if (cs->ndirty == cs->dirty_cap) {
				cs->dirty_cap = cs->dirty_cap ? 2 * cs->dirty_cap : 1024;
				cs->dirty = realloc(cs->dirty,
						    cs->dirty_cap * sizeof(*cs->dirty));
				BUG_ON(!cs->dirty);
			}
			cs->dirty[cs->ndirty++] = i >> LINE_SHIFT;
		}
	}
}

static void *crash_point_thread(void *arg)
{
	struct crashsim *cs = arg;
	unsigned int v, nv = cs->cfg.eadr ? 1 : 2 + cs->cfg.variants;

	shim_set_thread_ctx(&cs->checker_tag);
	collect_dirty(cs);
	cs->cur.dirty_lines = cs->ndirty;
	cs->res->points++;
	cs->res->max_dirty_lines = max(cs->res->max_dirty_lines, cs->ndirty);
	/* variant seeds depend on the point only: replayable one by one */
	for (v = 0; v < nv; v++) {
		if (cs->cfg.only_variant >= 0 && v != (unsigned int)cs->cfg.only_variant)
			continue;
		if (!cs->ndirty && v > 0)
			break;		/* all variants are the same image */
		cs->rng = cs->cfg.seed ^ (cs->events * 0x100000001b3ULL) ^ v;
		cs->cur.variant = v;
		build_image(cs, v);
		check_image(cs);
	}
	return NULL;
}

/*
 * Check the crash images of this point. On a thread of its own: the hook
 * that got here may run with spinlocks held or in a preempt-off section,
 * and recovery must run like a fresh attach would.
 */
static void crash_point(struct crashsim *cs, bool end)
{
	pthread_t t;

	cs->cur.index = cs->events;
	cs->cur.end = end;
	if (pthread_create(&t, NULL, crash_point_thread, cs))
		BUG();
	pthread_join(t, NULL);
}

/* ---- hooks ---------------------------------------------------------------------------- */

static void point_event(struct crashsim *cs)
{
	if (!cs->counting) {
		while (cs->next < cs->npoints && cs->points[cs->next] < cs->events)
			cs->next++;
		if (cs->next < cs->npoints && cs->points[cs->next] == cs->events)
			crash_point(cs, false);
	}
	cs->events++;
}

static void pend_add(struct crashsim *cs, u64 line)
{
	u32 slot = cs->pend_slot[line];
	struct cs_pending *p;

	if (!slot) {
		if (cs->npend == cs->pend_cap) {
			cs->pend_cap = cs->pend_cap ? 2 * cs->pend_cap : 256;
			cs->pend = realloc(cs->pend, cs->pend_cap * sizeof(*cs->pend));
			BUG_ON(!cs->pend);
		}
		slot = ++cs->npend;
		cs->pend_slot[line] = slot;
	}
	p = &cs->pend[slot - 1];
	p->line = line;
	p->owner = pthread_self();
	/* other threads may be storing to the line: the clwb's own race */
	work_read(cs, p->data, line << LINE_SHIFT, LINE);
}

/* sfence: this thread's flushed lines are durable */
static void pend_commit(struct crashsim *cs)
{
	pthread_t self = pthread_self();
	u32 i, kept = 0;

	for (i = 0; i < cs->npend; i++) {
		struct cs_pending *p = &cs->pend[i];

		if (pthread_equal(p->owner, self)) {
			memcpy(cs->media + (p->line << LINE_SHIFT), p->data, LINE);
			cs->pend_slot[p->line] = 0;
			continue;
		}
		if (kept != i)
			cs->pend[kept] = *p;
		cs->pend_slot[p->line] = ++kept;
	}
	cs->npend = kept;
}

static void cs_flush(void *priv, const void *addr, size_t len)
{
	struct crashsim *cs = priv;
	uintptr_t a = (uintptr_t)addr, w = (uintptr_t)cs->work;
	u64 line, last;

	if (!len || a < w || a >= w + cs->size || cs_ignored(cs))
		return;
	pthread_mutex_lock(&cs->lock);
	if (cs->cfg.at_flushes && !cs->cfg.eadr)
		point_event(cs);
	if (!cs->cfg.eadr) {
		last = (min_t(u64, a + len, w + cs->size) - 1 - w) >> LINE_SHIFT;
		for (line = (a - w) >> LINE_SHIFT; line <= last; line++)
			pend_add(cs, line);
	}
	pthread_mutex_unlock(&cs->lock);
}

static void cs_fence(void *priv, bool persist)
{
	struct crashsim *cs = priv;

	if (cs_ignored(cs))
		return;
	pthread_mutex_lock(&cs->lock);
	if (cs->cfg.eadr || persist)
		point_event(cs);
	if (persist && !cs->cfg.eadr)
		pend_commit(cs);
	pthread_mutex_unlock(&cs->lock);
}

/* ---- driver ---------------------------------------------------------------------------- */

static void *map_zero(u64 size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static void reset_images(struct crashsim *cs)
{
	memset(cs->work, 0, cs->size);
	memset(cs->media, 0, cs->size);
	memset(cs->pend_slot, 0, cs->nlines * sizeof(*cs->pend_slot));
	cs->npend = 0;
	cs->events = 0;
	cs->next = 0;
	while (cs->nops)
		free(cs->ops[--cs->nops].key);
}

static int run_pass(struct crashsim *cs)
{
	struct shim_pmem_ops ops = {
		.flush = cs_flush, .fence = cs_fence, .priv = cs,
	};
	const struct shim_pmem_ops *prev;
	int ret;

	reset_images(cs);
	shim_random_seed(cs->cfg.seed);
	prev = shim_pmem_set_ops(&ops);
	ret = cs->wl->run(cs, cs->work, cs->size, cs->wl->arg);
	shim_workqueue_drain();
	shim_pmem_set_ops(prev);
	return ret;
}

static int u64_cmp(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? -1 : x > y;
}

static void choose_points(struct crashsim *cs, u64 total)
{
	u64 n, i;

	if (cs->cfg.only_point >= 0) {
		cs->points[0] = cs->cfg.only_point;
		cs->npoints = 1;
		return;
	}
	if (total + 1 <= cs->cfg.exhaustive_max) {
		for (i = 0; i < total; i++)
			cs->points[i] = i;
		cs->npoints = total;
		return;
	}
	n = min((u64)cs->cfg.samples, total);
	cs->rng = cs->cfg.seed ^ 0x5eed;
	for (i = 0; i < n; i++)
		cs->points[i] = cs_rand(cs) % total;
	qsort(cs->points, n, sizeof(u64), u64_cmp);
	cs->npoints = 0;
	for (i = 0; i < n; i++)
		if (!cs->npoints || cs->points[cs->npoints - 1] != cs->points[i])
			cs->points[cs->npoints++] = cs->points[i];
}

static void abort_note(int sig)
{
	struct crashsim *cs = cs_active;

	if (cs)
		fprintf(stderr, "crashsim %s: aborted while checking point %llu "
			"variant %u (seed %#llx)\n",
			cs->wl->name, (unsigned long long)cs->cur.index, cs->cur.variant,
			(unsigned long long)cs->cfg.seed);
	signal(sig, SIG_DFL);
	raise(sig);
}

int crashsim_run(const struct crashsim_config *cfg,
		 const struct crashsim_workload *wl, struct crashsim_result *res)
{
	struct crashsim *cs = calloc(1, sizeof(*cs));
	struct timespec t0, t1;
	void (*old_abrt)(int);
	u64 total, i;
	int ret = -ENOMEM;

	memset(res, 0, sizeof(*res));
	if (!cs)
		return -ENOMEM;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	cs->cfg = *cfg;
	if (!cs->cfg.pool_size)
		cs->cfg.pool_size = PMIDX_MIN_POOL_SIZE;
	if (!cs->cfg.exhaustive_max)
		cs->cfg.exhaustive_max = 3000;
	if (!cs->cfg.samples)
		cs->cfg.samples = 400;
	if (!cs->cfg.max_failures)
		cs->cfg.max_failures = 5;
	cs->wl = wl;
	cs->res = res;
	cs->size = cs->cfg.pool_size;
	cs->nlines = cs->size >> LINE_SHIFT;
	pthread_mutex_init(&cs->lock, NULL);
	cs->work = map_zero(cs->size);
	cs->media = map_zero(cs->size);
	cs->scratch = map_zero(cs->size);
	cs->pend_slot = calloc(cs->nlines, sizeof(*cs->pend_slot));
	if (!cs->work || !cs->media || !cs->scratch || !cs->pend_slot)
		goto out;

	/* pass 1: count the crash points */
	cs->counting = true;
	ret = run_pass(cs);
	if (ret) {
		printf("# crashsim %s: workload failed: %d\n", wl->name, ret);
		res->failures++;
		goto out;
	}
	total = cs->events;
	res->events = total + 1;
	for (i = 0; i < cs->nops; i++)
		res->acked += cs->ops[i].acked;
	res->ops = cs->nops;

	/* pass 2: crash at the chosen points */
	cs->points = calloc(total + 1, sizeof(u64));
	if (!cs->points) {
		ret = -ENOMEM;
		goto out;
	}
	choose_points(cs, total);
	cs->cur.total = total + 1;
	cs->counting = false;
	cs_active = cs;
	old_abrt = signal(SIGABRT, abort_note);
	ret = run_pass(cs);
	if (ret) {
		printf("# crashsim %s: workload failed in the crash pass: %d\n",
		       wl->name, ret);
		res->failures++;
	}
	if (cs->events != total)
		printf("# crashsim %s: note: %llu crash points in pass 1, %llu in "
		       "pass 2 (workload not deterministic)\n", wl->name,
		       (unsigned long long)total, (unsigned long long)cs->events);
	/* the end state: after the workload returned */
	if (cs->cfg.only_point < 0 || (u64)cs->cfg.only_point >= total)
		crash_point(cs, true);
	collect_dirty(cs);
	res->unflushed_at_end = cs->ndirty;
	signal(SIGABRT, old_abrt);
	cs_active = NULL;
	ret = 0;
out:
	clock_gettime(CLOCK_MONOTONIC, &t1);
	res->seconds = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	while (cs->nops)
		free(cs->ops[--cs->nops].key);
	free(cs->ops);
	free(cs->points);
	free(cs->pend);
	free(cs->pend_slot);
	free(cs->dirty);
	if (cs->work)
		munmap(cs->work, cs->size);
	if (cs->media)
		munmap(cs->media, cs->size);
	if (cs->scratch)
		munmap(cs->scratch, cs->size);
	free(cs);
	return ret;
}

void crashsim_print_result(const char *name, const struct crashsim_config *cfg,
			   const struct crashsim_result *res)
{
	printf("# crashsim %s [%s%s, seed %#llx]: %llu crash points, %llu tried, "
	       "%llu images recovered and checked (%llu refused as allowed), "
	       "%llu ops (%llu acked), max %llu dirty lines, %llu unflushed at end, "
	       "%llu failures, %.1fs\n",
	       name, cfg->eadr ? "eADR" : "ADR", cfg->at_flushes ? "+flushes" : "",
	       (unsigned long long)cfg->seed, (unsigned long long)res->events,
	       (unsigned long long)res->points, (unsigned long long)res->images,
	       (unsigned long long)res->refused, (unsigned long long)res->ops,
	       (unsigned long long)res->acked,
	       (unsigned long long)res->max_dirty_lines,
	       (unsigned long long)res->unflushed_at_end,
	       (unsigned long long)res->failures, res->seconds);
}
