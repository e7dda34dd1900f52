// SPDX-License-Identifier: GPL-2.0
/*
 * ADR/eADR crash simulator: see crashsim.h for the model.
 *
 * Bookkeeping: media[] mirrors what is durable; pending[] holds the lines
 * flushed since their thread's last fence, as they were when flushed.
 * Crash images are built in scratch[] from media[] plus the lines of
 * work[] that differ from media[] ("dirty lines"), chosen per variant.
 * The prefix model adds a log per line: the stores made to it since its
 * content was last durable, reported by the store tracer. The eADR store
 * model applies each reported store word to media[] at once.
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

#include <linux/bitmap.h>
#include <linux/crc32.h>
#include <shim/pmem.h>
#include <shim/sanitizer.h>
#include <shim/shim.h>
#include <shim/store_trace.h>
#include "core/super.h"
#include "crashsim.h"
#include "crashsim-model.h"

#define LINE		64
#define LINE_SHIFT	6

struct cs_pending {
	u64		line;
	pthread_t	owner;
	u8		data[LINE];
};

/*
 * Prefix model: the stores made to a line since its content was last
 * durable, in the order they were reported, as records of an offset, a
 * length (the two oldest merged may be up to a line) and the bytes.
 */
#define LOG_MAX		64	/* records per line, then the oldest merge */

struct cs_log {
	u64		line;
	u32		n;		/* records */
	u32		covered;	/* of which the flushed snapshot holds */
	u32		used, cap;	/* bytes of rec[] */
	u8		cur[LINE];	/* media plus all n records (kept) */
	u8		*rec;
};

/*
 * Bytes the engine said need not reach the media (pmidx_lose_ok()), as
 * they were then: a line differing from the media only there, and there
 * still as they were, does not count as written but never made durable.
 */
struct cs_exp {
	u64		line;
	u64		mask;		/* bit i: byte i of the line */
	u8		bytes[LINE];
};

/* a line that may arrive differently in the images of a prefix point */
struct cs_cand {
	u64		line;
	u32		choices;	/* traced: records + 1; else 2 or 3 */
	bool		traced;
	u8		pick;		/* this image's choice */
};

struct crashsim {
	struct crashsim_config		cfg;
	const struct crashsim_workload	*wl;
	struct crashsim_result		*res;
	u8				*work, *media, *scratch;
	int				media_fd;	/* media[]'s memfd */
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
	u32				*exp_slot;	/* line -> exps index + 1 */
	struct cs_exp			*exps;
	u32				nexps, exps_cap;

	bool				prefix;		/* the prefix model */
	bool				estore;		/* eADR, a point per store */
	u64				inflight_lo;	/* estore: the part of the */
	u64				inflight_hi;	/* store being reported not */
							/* applied to media[] yet */
	u32				*log_slot;	/* line -> log index + 1 */
	struct cs_log			*logs;
	u32				nlogs, logs_cap;
	struct cs_cand			*cand;		/* at a prefix point */
	u64				ncand, cand_cap;
	u64				combos;		/* of the cands' choices */
	unsigned long			*untraced;	/* lines ever untraced */

	struct cs_model			*model;

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
#ifdef SHIM_TSAN
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

/* Whether work[] differs from @ref in @len bytes at @off: see above. */
static bool work_differs(struct crashsim *cs, u64 off, const u8 *ref, size_t len)
{
	bool differs;

	work_racy_begin();
	differs = memcmp(cs->work + off, ref, len);
	work_racy_end();
	return differs;
}

static bool work_dirty(struct crashsim *cs, u64 off, size_t len)
{
	return work_differs(cs, off, cs->media + off, len);
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
	unsigned int id;

	pthread_mutex_lock(&cs->lock);
	id = cs_model_begin(cs->model, type, tag, key, klen, value);
	pthread_mutex_unlock(&cs->lock);
	return id;
}

void crashsim_op_ack(struct crashsim *cs, unsigned int id)
{
	pthread_mutex_lock(&cs->lock);
	cs_model_ack(cs->model, id);
	pthread_mutex_unlock(&cs->lock);
}

int crashsim_index_create(struct crashsim *cs, struct pmidx_pool *pool,
			  const char *name, u32 engine)
{
	unsigned int op = crashsim_op_begin(cs, CRASHSIM_OP_PUT, "create", name,
					    strlen(name), engine);
	struct pmidx_index *idx;
	const char *why = NULL;
	int ret = pmidx_index_create(pool, name, engine, &idx, &why);

	if (!ret)
		crashsim_op_ack(cs, op);
	return ret;
}

int crashsim_index_drop(struct crashsim *cs, struct pmidx_pool *pool,
			const char *name)
{
	unsigned int op = crashsim_op_begin(cs, CRASHSIM_OP_DEL, "drop", name,
					    strlen(name), 0);
	const char *why = NULL;
	int ret = pmidx_index_drop(pool, name, &why);

	if (!ret)
		crashsim_op_ack(cs, op);
	return ret;
}

/* Called with cs->lock held (from a check) or from the workload thread. */
void crashsim_expect(struct crashsim *cs, const void *key, u32 klen,
		     struct crashsim_expect *e)
{
	cs_model_expect(cs->model, key, klen, e);
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
	return cs_model_key(cs->model, n, klen);
}

bool crashsim_note_acked(struct crashsim *cs, const char *tag)
{
	return cs_model_note(cs->model, tag) > 0;
}

bool crashsim_note_started(struct crashsim *cs, const char *tag)
{
	return cs_model_note(cs->model, tag) >= 0;
}

static void print_partial(struct crashsim *cs);

void crashsim_fail(struct crashsim *cs, const char *fmt, ...)
{
	va_list ap;

	bool first = !cs->cur_failed;

	cs->cur_failed = true;
	if (cs->res->failures++ >= cs->cfg.max_failures)
		return;
	printf("# crashsim %s: FAIL at point %llu/%llu%s variant %u "
	       "(%llu dirty lines, %llu arrived", cs->wl->name,
	       (unsigned long long)cs->cur.index,
	       (unsigned long long)cs->cur.total, cs->cur.end ? " (end)" : "",
	       cs->cur.variant, (unsigned long long)cs->cur.dirty_lines,
	       (unsigned long long)cs->cur.arrived_lines);
	if (cs->prefix)
		printf(", %llu of them partly, prefix model",
		       (unsigned long long)cs->cur.partial_lines);
	printf(", seed %#llx): ", (unsigned long long)cs->cfg.seed);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (cs->prefix && first)
		print_partial(cs);
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
		 cs->wl->name, cs->cfg.eadr ? "eadr" : cs->prefix ? "adr-prefix" : "adr",
		 (unsigned long long)cs->cur.index, cs->cur.variant);
	f = fopen(path, "w");
	if (!f)
		return;
	if (fwrite(cs->scratch, 1, cs->size, f) == cs->size)
		printf("# crashsim: crash image saved as %s\n", path);
	fclose(f);
}

static void build_prefix_image(struct crashsim *cs, unsigned int v);
static void build_estore_image(struct crashsim *cs);

/*
 * scratch[] := media[]. media[] is a shared mapping of a memfd and
 * scratch[] a private one of the same file, mapped anew over the old:
 * pages recovery never touches are never copied, so an image costs what
 * recovery reads and writes, not the pool size. media[] does not change
 * while an image is checked (commits happen under cs->lock, which the
 * check holds), so the pages scratch[] has not copied yet stay right.
 */
static void scratch_from_media(struct crashsim *cs)
{
	void *p = mmap(cs->scratch, cs->size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_FIXED, cs->media_fd, 0);

	BUG_ON(p != cs->scratch);
}

/* Build variant @v of the current point into scratch[]. */
static void build_image(struct crashsim *cs, unsigned int v)
{
	u64 i, arrived = 0;
	unsigned int pct = 50;

	/* variant seeds depend on the point only: replayable one by one */
	cs->rng = cs->cfg.seed ^ (cs->cur.index * 0x100000001b3ULL) ^ v;
	if (cs->estore) {
		build_estore_image(cs);
		return;
	}
	if (cs->cfg.eadr) {
		work_read(cs, cs->scratch, 0, cs->size);
		cs->cur.arrived_lines = 0;
		return;
	}
	if (cs->prefix) {
		build_prefix_image(cs, v);
		return;
	}
	scratch_from_media(cs);
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
 * attach again (the clean path) and check again; detach, attach once
 * more and count the objects; then force a recovery trace of that clean
 * image: it must find every object the clean attach had allocated, or
 * something allocated is not reachable (a leak). Counted on an attach
 * that runs nothing: an engine may hold pending objects while it runs
 * (a committed-mode reserve, never linked) that its detach gives back.
 */
static void check_image(struct crashsim *cs)
{
	const struct crashsim_workload *wl = cs->wl;
	struct pmidx_pool *pool;
	const char *why = NULL;
	u64 clean_objects = 0;
	int err = 0, round;

	cs->cur_failed = false;
	for (round = 0; round < 4; round++) {
		if (round == 3)
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
		if (round == 1 && pool->flags & PMIDX_POOL_F_RECOVERED)
			crashsim_fail(cs, "clean detach of a recovered pool did not stick");
		if (round == 2)
			clean_objects = pool_objects(pool);
		if (round == 3 && pool_objects(pool) != clean_objects)
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
	if (cs->cfg.eadr && !cs->estore)
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

/* ---- prefix model ------------------------------------------------------------------ */

static struct cs_log *log_of(struct crashsim *cs, u64 line)
{
	u32 slot = cs->log_slot[line];

	return slot ? &cs->logs[slot - 1] : NULL;
}

static struct cs_log *log_new(struct crashsim *cs, u64 line)
{
	struct cs_log *lg;

	if (cs->nlogs == cs->logs_cap) {
		cs->logs_cap = cs->logs_cap ? 2 * cs->logs_cap : 256;
		cs->logs = realloc(cs->logs, cs->logs_cap * sizeof(*cs->logs));
		BUG_ON(!cs->logs);
	}
	lg = &cs->logs[cs->nlogs++];
	memset(lg, 0, sizeof(*lg));
	lg->line = line;
	memcpy(lg->cur, cs->media + (line << LINE_SHIFT), LINE);
	cs->log_slot[line] = cs->nlogs;
	return lg;
}

static void log_free(struct crashsim *cs, struct cs_log *lg)
{
	u32 i = lg - cs->logs;

	cs->log_slot[lg->line] = 0;
	free(lg->rec);
	if (i != --cs->nlogs) {
		*lg = cs->logs[cs->nlogs];
		cs->log_slot[lg->line] = i + 1;
	}
}

static void log_reserve(struct cs_log *lg, u32 bytes)
{
	if (lg->used + bytes <= lg->cap)
		return;
	lg->cap = max(2 * lg->cap, lg->used + bytes + 64);
	lg->rec = realloc(lg->rec, lg->cap);
	BUG_ON(!lg->rec);
}

/* where record @k starts in rec[]: records are offset, length, bytes */
static u32 log_pos(const struct cs_log *lg, u32 k)
{
	u32 pos = 0;

	while (k--)
		pos += 2 + lg->rec[pos + 1];
	return pos;
}

/* Apply the first @k records to @dst, a copy of the line's media. */
static void log_apply(const struct cs_log *lg, u32 k, u8 *dst)
{
	u32 pos = 0;

	while (k--) {
		memcpy(dst + lg->rec[pos], lg->rec + pos + 2, lg->rec[pos + 1]);
		pos += 2 + lg->rec[pos + 1];
	}
}

/*
 * Too many records: merge the two oldest on one side of the flushed
 * snapshot into one covering both, the bytes between them as they were
 * (so applying it where they applied changes nothing else).
 */
static void log_merge(struct crashsim *cs, struct cs_log *lg)
{
	u32 i = lg->covered == 1 ? 1 : 0;
	u32 a = log_pos(lg, i), b = a + 2 + lg->rec[a + 1];
	u32 c = b + 2 + lg->rec[b + 1], lo, hi;
	u8 line[LINE];

	memcpy(line, cs->media + (lg->line << LINE_SHIFT), LINE);
	log_apply(lg, i + 2, line);
	lo = min(lg->rec[a], lg->rec[b]);
	hi = max(lg->rec[a] + lg->rec[a + 1], lg->rec[b] + lg->rec[b + 1]);
	log_reserve(lg, 2 + LINE);
	memmove(lg->rec + a + 2 + hi - lo, lg->rec + c, lg->used - c);
	lg->used = a + 2 + hi - lo + lg->used - c;
	lg->rec[a] = lo;
	lg->rec[a + 1] = hi - lo;
	memcpy(lg->rec + a + 2, line + lo, hi - lo);
	lg->n--;
	if (!i && lg->covered)
		lg->covered--;
	cs->res->merged_stores++;
}

/* Record a store of @len bytes (within one 8-byte word) into @line. */
static void log_store(struct crashsim *cs, u64 line, u32 off, u32 len, const u8 *b)
{
	struct cs_log *lg = log_of(cs, line);
	const u8 *now = lg ? lg->cur : cs->media + (line << LINE_SHIFT);

	if (!memcmp(now + off, b, len))
		return;		/* stores what is there: no image differs */
	if (!lg)
		lg = log_new(cs, line);
	log_reserve(lg, 2 + len);
	lg->rec[lg->used] = off;
	lg->rec[lg->used + 1] = len;
	memcpy(lg->rec + lg->used + 2, b, len);
	lg->used += 2 + len;
	memcpy(lg->cur + off, b, len);
	if (++lg->n > LOG_MAX)
		log_merge(cs, lg);
}

/* The line's flushed snapshot became media: drop the records it holds. */
static void log_commit(struct crashsim *cs, u64 line)
{
	struct cs_log *lg = log_of(cs, line);
	u32 pos;

	if (!lg)
		return;
	pos = log_pos(lg, lg->covered);
	memmove(lg->rec, lg->rec + pos, lg->used - pos);
	lg->used -= pos;
	lg->n -= lg->covered;
	lg->covered = 0;
	if (!lg->n) {
		log_free(cs, lg);
		return;
	}
	memcpy(lg->cur, cs->media + (line << LINE_SHIFT), LINE);
	log_apply(lg, lg->n, lg->cur);
}

static void log_reset(struct crashsim *cs)
{
	while (cs->nlogs)
		log_free(cs, &cs->logs[cs->nlogs - 1]);
}

/* ---- eADR store model ------------------------------------------------------------ */

/*
 * Every reported store word is media at once (the cache is persistent),
 * and a crash point follows each word that changed something: the image
 * is media[], i.e. every word reported before the point, in report order.
 * A dirty line (work[] differs from media[]) was written by something not
 * traced, or by another thread not reported yet: its stores did reach
 * the cache, so it arrives as it is, counted as untraced; except the
 * lines of the store being reported, whose later words did not arrive.
 */
static void build_estore_image(struct crashsim *cs)
{
	u64 i, arrived = 0;

	scratch_from_media(cs);
	for (i = 0; i < cs->ndirty; i++) {
		u64 lo = cs->dirty[i] << LINE_SHIFT;

		if (lo + LINE > cs->inflight_lo && lo < cs->inflight_hi)
			continue;
		work_read(cs, cs->scratch + lo, lo, LINE);
		arrived++;
		if (!__test_and_set_bit(cs->dirty[i], cs->untraced))
			cs->res->untraced_lines++;
	}
	cs->cur.arrived_lines = arrived;
}

static void point_event(struct crashsim *cs);

/* A reported store, word by word: media, then a crash point after each. */
static void estore_words(struct crashsim *cs, u64 off, u64 end)
{
	u64 next;
	u8 b[8];

	for (; off < end; off = next) {
		next = min(end, (off | 7) + 1);
		work_read(cs, b, off, next - off);
		if (!memcmp(cs->media + off, b, next - off))
			continue;	/* no image differs */
		memcpy(cs->media + off, b, next - off);
		cs->inflight_lo = next;
		cs->inflight_hi = end;
		point_event(cs);
	}
	cs->inflight_lo = 0;
	cs->inflight_hi = 0;
}

/*
 * The store tracer's report (prefix build): split into 8-byte words, in
 * ascending order.
 */
static void __maybe_unused cs_stored(void *priv, void *addr, size_t len)
{
	struct crashsim *cs = priv;
	u64 off = (uintptr_t)addr - (uintptr_t)cs->work, end = off + len, next;
	u8 b[8];

	if (cs_ignored(cs))
		return;
	pthread_mutex_lock(&cs->lock);
	if (cs->estore) {
		estore_words(cs, off, end);
		pthread_mutex_unlock(&cs->lock);
		return;
	}
	for (; off < end; off = next) {
		next = min(end, (off | 7) + 1);
		work_read(cs, b, off, next - off);
		log_store(cs, off >> LINE_SHIFT, off & (LINE - 1), next - off, b);
	}
	pthread_mutex_unlock(&cs->lock);
}

static int cand_cmp(const void *a, const void *b)
{
	u64 x = ((const struct cs_cand *)a)->line, y = ((const struct cs_cand *)b)->line;

	return x < y ? -1 : x > y;
}

/*
 * The lines that may differ between the images of this point: those with
 * records, and the dirty ones without (untraced). A line is traced when
 * media plus its records is what work[] holds.
 */
static void collect_cands(struct crashsim *cs)
{
	u64 i, n = 0, need = cs->ndirty + cs->nlogs, limit = cs->cfg.prefix_images;

	if (need > cs->cand_cap) {
		cs->cand_cap = max(need, 2 * cs->cand_cap);
		cs->cand = realloc(cs->cand, cs->cand_cap * sizeof(*cs->cand));
		BUG_ON(!cs->cand);
	}
	for (i = 0; i < cs->ndirty; i++)
		if (!cs->log_slot[cs->dirty[i]])
			cs->cand[n++] = (struct cs_cand){ .line = cs->dirty[i] };
	for (i = 0; i < cs->nlogs; i++) {
		const struct cs_log *lg = &cs->logs[i];
		u8 all[LINE];

		/* from the records themselves: a bad merge shows here too */
		memcpy(all, cs->media + (lg->line << LINE_SHIFT), LINE);
		log_apply(lg, lg->n, all);
		cs->cand[n++] = (struct cs_cand){
			.line = lg->line,
			.traced = !work_differs(cs, lg->line << LINE_SHIFT, all, LINE),
		};
	}
	qsort(cs->cand, n, sizeof(*cs->cand), cand_cmp);
	cs->ncand = n;
	cs->combos = 1;
	for (i = 0; i < n; i++) {
		struct cs_cand *c = &cs->cand[i];
		u32 slot = cs->pend_slot[c->line];

		if (c->traced) {
			c->choices = log_of(cs, c->line)->n + 1;
			cs->res->max_line_stores = max_t(u64, cs->res->max_line_stores,
							 c->choices - 1);
		} else {
			/* media, the flushed snapshot when it is a third value, work */
			c->choices = 2;
			if (slot &&
			    memcmp(cs->pend[slot - 1].data, cs->media + (c->line << LINE_SHIFT),
				   LINE) &&
			    work_differs(cs, c->line << LINE_SHIFT, cs->pend[slot - 1].data,
					 LINE))
				c->choices = 3;
			if (!__test_and_set_bit(c->line, cs->untraced))
				cs->res->untraced_lines++;
		}
		/* saturates just past the limit: only "more than" matters */
		cs->combos = min(cs->combos * c->choices, limit + 1);
	}
}

/*
 * Each line's choice for image @v: none, all, then every combination in
 * mixed radix (0 and combos - 1 being variants 0 and 1) when they fit in
 * prefix_images, else random prefixes, biased towards none or all in two
 * of three images.
 */
static void pick_prefixes(struct crashsim *cs, unsigned int v)
{
	u64 i, c = v - 1;

	for (i = 0; i < cs->ncand; i++) {
		struct cs_cand *p = &cs->cand[i];
		u64 r;

		if (v < 2) {
			p->pick = v ? p->choices - 1 : 0;
		} else if (cs->combos <= cs->cfg.prefix_images) {
			p->pick = c % p->choices;
			c /= p->choices;
		} else {
			r = cs_rand(cs);
			if (v % 3 == 1 && r % 8)
				p->pick = p->choices - 1;
			else if (v % 3 == 2 && r % 8)
				p->pick = 0;
			else
				p->pick = (r >> 8) % p->choices;
		}
	}
}

static void build_prefix_image(struct crashsim *cs, unsigned int v)
{
	u64 i, arrived = 0, partial = 0;

	scratch_from_media(cs);
	pick_prefixes(cs, v);
	for (i = 0; i < cs->ncand; i++) {
		const struct cs_cand *p = &cs->cand[i];
		u8 *dst = cs->scratch + (p->line << LINE_SHIFT);
		u32 slot = cs->pend_slot[p->line];

		if (!p->pick)
			continue;
		arrived++;
		if (p->traced) {
			log_apply(log_of(cs, p->line), p->pick, dst);
			partial += p->pick < p->choices - 1;
		} else if (p->pick == p->choices - 1) {
			work_read(cs, dst, p->line << LINE_SHIFT, LINE);
		} else {
			memcpy(dst, cs->pend[slot - 1].data, LINE);
		}
	}
	cs->cur.arrived_lines = arrived;
	cs->cur.partial_lines = partial;
}

/*
 * After a failure: which lines arrived with only some of their stores,
 * and where the first store that did not arrive went (line offset+bytes).
 */
static void print_partial(struct crashsim *cs)
{
	unsigned int shown = 0;
	const u8 *r;
	u64 i;

	for (i = 0; i < cs->ncand && shown < 8; i++) {
		const struct cs_cand *p = &cs->cand[i];

		if (!p->traced || !p->pick || p->pick == p->choices - 1)
			continue;
		r = log_of(cs, p->line)->rec;
		r += log_pos(log_of(cs, p->line), p->pick);
		printf("%s line %#llx: %u of %u stores, not +%u:%u",
		       shown++ ? "," : "#   partly:",
		       (unsigned long long)(p->line << LINE_SHIFT), p->pick,
		       p->choices - 1, r[0], r[1]);
	}
	if (shown)
		printf("\n");
}

static void *crash_point_thread(void *arg)
{
	struct crashsim *cs = arg;
	u64 v, nv = cs->cfg.eadr ? 1 : 2 + cs->cfg.variants;

	shim_set_thread_ctx(&cs->checker_tag);
	collect_dirty(cs);
	cs->cur.dirty_lines = cs->ndirty;
	if (cs->prefix) {
		collect_cands(cs);
		cs->cur.dirty_lines = cs->ncand;
		nv = min_t(u64, cs->combos, cs->cfg.prefix_images);
		cs->res->exhaustive_points += cs->combos <= cs->cfg.prefix_images;
	}
	cs->res->points++;
	cs->res->max_dirty_lines = max(cs->res->max_dirty_lines, cs->cur.dirty_lines);
	for (v = 0; v < nv; v++) {
		if (cs->cfg.only_variant >= 0 && v != (unsigned int)cs->cfg.only_variant)
			continue;
		if (!cs->cur.dirty_lines && v > 0)
			break;		/* all variants are the same image */
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
	if (cs->prefix && cs->log_slot[line])
		log_of(cs, line)->covered = log_of(cs, line)->n;
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
			if (cs->prefix)
				log_commit(cs, p->line);
			continue;
		}
		if (kept != i)
			cs->pend[kept] = *p;
		cs->pend_slot[p->line] = ++kept;
	}
	cs->npend = kept;
}

static void cs_expendable(void *priv, const void *addr, size_t len)
{
	struct crashsim *cs = priv;
	uintptr_t a = (uintptr_t)addr, w = (uintptr_t)cs->work;
	u64 off, end, line;
	struct cs_exp *x;
	u32 slot;

	store_trace_sync();	/* the stores before the hint */
	if (!len || a < w || a >= w + cs->size || cs_ignored(cs))
		return;
	end = min_t(u64, a + len, w + cs->size) - w;
	pthread_mutex_lock(&cs->lock);
	for (off = a - w; off < end; off++) {
		line = off >> LINE_SHIFT;
		slot = cs->exp_slot[line];
		if (!slot) {
			if (cs->nexps == cs->exps_cap) {
				cs->exps_cap = cs->exps_cap ? 2 * cs->exps_cap : 256;
				cs->exps = realloc(cs->exps,
						   cs->exps_cap * sizeof(*cs->exps));
				BUG_ON(!cs->exps);
			}
			slot = ++cs->nexps;
			cs->exp_slot[line] = slot;
			cs->exps[slot - 1] = (struct cs_exp){ .line = line };
		}
		x = &cs->exps[slot - 1];
		x->mask |= 1ULL << (off & (LINE - 1));
		work_read(cs, &x->bytes[off & (LINE - 1)], off, 1);
	}
	pthread_mutex_unlock(&cs->lock);
}

/*
 * Dirty line @line differs from the media only in expendable bytes that
 * still hold what they held when last declared so.
 */
static bool line_expended(struct crashsim *cs, u64 line)
{
	const u8 *media = cs->media + (line << LINE_SHIFT);
	u32 slot = cs->exp_slot[line];
	const struct cs_exp *x;
	u8 cur[LINE];
	unsigned int i;

	if (!slot)
		return false;
	x = &cs->exps[slot - 1];
	work_read(cs, cur, line << LINE_SHIFT, LINE);
	for (i = 0; i < LINE; i++)
		if (cur[i] != media[i] &&
		    (!(x->mask & (1ULL << i)) || cur[i] != x->bytes[i]))
			return false;
	return true;
}

static u64 count_unflushed(struct crashsim *cs)
{
	u64 i, n = 0;

	for (i = 0; i < cs->ndirty; i++)
		n += !line_expended(cs, cs->dirty[i]);
	return n;
}

static void cs_flush(void *priv, const void *addr, size_t len)
{
	struct crashsim *cs = priv;
	uintptr_t a = (uintptr_t)addr, w = (uintptr_t)cs->work;
	u64 line, last;

	store_trace_sync();	/* the stores before the flush */
	if (!len || a < w || a >= w + cs->size || cs_ignored(cs))
		return;
	pthread_mutex_lock(&cs->lock);
	if (cs->cfg.at_flushes)
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

	store_trace_sync();
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

/* media[] shared and scratch[] private on one memfd (scratch_from_media()) */
static int map_media(struct crashsim *cs)
{
	int fd = memfd_create("crashsim-media", MFD_CLOEXEC);
	void *m, *sc;

	if (fd < 0)
		return -1;
	if (ftruncate(fd, cs->size))
		goto err;
	m = mmap(NULL, cs->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		goto err;
	sc = mmap(NULL, cs->size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	if (sc == MAP_FAILED) {
		munmap(m, cs->size);
		goto err;
	}
	cs->media = m;
	cs->scratch = sc;
	return fd;
err:
	close(fd);
	return -1;
}

static void reset_images(struct crashsim *cs)
{
	memset(cs->work, 0, cs->size);
	memset(cs->media, 0, cs->size);
	memset(cs->pend_slot, 0, cs->nlines * sizeof(*cs->pend_slot));
	cs->npend = 0;
	memset(cs->exp_slot, 0, cs->nlines * sizeof(*cs->exp_slot));
	cs->nexps = 0;
	if (cs->prefix)
		log_reset(cs);
	if (cs->untraced)
		bitmap_zero(cs->untraced, cs->nlines);
	cs->events = 0;
	cs->next = 0;
	cs_model_reset(cs->model);
}

static int model = -1;		/* --model: 1 prefix, 0 line; -1 not given */

bool crashsim_prefix_supported(void)
{
#ifdef PMIDX_STORE_TRACE
	return true;
#else
	return false;
#endif
}

#ifdef PMIDX_STORE_TRACE
/*
 * The prefix model's stores, in the crash pass only; the eADR store
 * model's in both passes (its crash points are stores).
 */
static void trace_start(struct crashsim *cs)
{
	static struct store_trace_ops ops = { .stored = cs_stored };

	ops.priv = cs;
	if ((cs->prefix && !cs->counting) || cs->estore)
		store_trace_start(cs->work, cs->size, &ops);
}

static void trace_stop(struct crashsim *cs)
{
	store_trace_stop();
}
#else
static void trace_start(struct crashsim *cs)
{
}

static void trace_stop(struct crashsim *cs)
{
}
#endif

bool crashsim_prefix_default(void)
{
	const char *e = getenv("PMIDX_CRASH_MODEL");

	if (model >= 0)
		return model;
	if (e)
		return !strcmp(e, "prefix");
	return crashsim_prefix_supported();
}

int crashsim_parse_model(int *argc, char **argv)
{
	int i, skip;

	for (i = 1; i < *argc; i++) {
		const char *m;

		if (!strcmp(argv[i], "--model") && i + 1 < *argc) {
			m = argv[i + 1];
			skip = 2;
		} else if (!strncmp(argv[i], "--model=", 8)) {
			m = argv[i] + 8;
			skip = 1;
		} else {
			continue;
		}
		if (strcmp(m, "line") && strcmp(m, "prefix")) {
			fprintf(stderr, "--model: line or prefix, not %s\n", m);
			return -EINVAL;
		}
		model = !strcmp(m, "prefix");
		memmove(argv + i, argv + i + skip, (*argc - i - skip + 1) * sizeof(*argv));
		*argc -= skip;
		i--;
	}
	return 0;
}

void crashsim_config_env(struct crashsim_config *cfg)
{
	const char *e = getenv("PMIDX_CRASH_POINT");

	cfg->only_point = e ? strtol(e, NULL, 0) : -1;
	e = getenv("PMIDX_CRASH_VARIANT");
	cfg->only_variant = e ? strtol(e, NULL, 0) : -1;
	cfg->save_dir = getenv("PMIDX_CRASH_SAVE");
	cfg->prefix = crashsim_prefix_default();
}

/* images per prefix point: the config's, else PMIDX_CRASH_PREFIX_IMAGES, else 16 */
static unsigned int prefix_images(const struct crashsim_config *cfg)
{
	const char *e = getenv("PMIDX_CRASH_PREFIX_IMAGES");
	unsigned int n = cfg->prefix_images;

	if (!n && e)
		n = strtoul(e, NULL, 0);
	return n ? max(n, 2U) : 16;
}

static int run_pass(struct crashsim *cs)
{
	struct shim_pmem_ops ops = {
		.flush = cs_flush, .fence = cs_fence,
		.expendable = cs_expendable, .priv = cs,
	};
	const struct shim_pmem_ops *prev;
	int ret;

	reset_images(cs);
	shim_random_seed(cs->cfg.seed);
	prev = shim_pmem_set_ops(&ops);
	trace_start(cs);
	ret = cs->wl->run(cs, cs->work, cs->size, cs->wl->arg);
	shim_workqueue_drain();
	trace_stop(cs);
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
	u64 total;
	int ret = -ENOMEM;

	memset(res, 0, sizeof(*res));
	if (!cs)
		return -ENOMEM;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	cs->media_fd = -1;
	cs->cfg = *cfg;
	if (!cs->cfg.pool_size)
		cs->cfg.pool_size = PMIDX_MIN_POOL_SIZE;
	if (!cs->cfg.exhaustive_max)
		cs->cfg.exhaustive_max = 3000;
	if (!cs->cfg.samples)
		cs->cfg.samples = 400;
	if (!cs->cfg.max_failures)
		cs->cfg.max_failures = 5;
	cs->cfg.prefix_images = prefix_images(cfg);
	cs->prefix = cs->cfg.prefix && !cs->cfg.eadr;
	cs->estore = cs->cfg.prefix && cs->cfg.eadr;
	cs->wl = wl;
	cs->res = res;
	cs->size = cs->cfg.pool_size;
	cs->nlines = cs->size >> LINE_SHIFT;
	if ((cs->prefix || cs->estore) && !crashsim_prefix_supported()) {
		printf("# crashsim %s: the %s model needs the prefix build "
		       "(build/user/prefix/)\n", wl->name,
		       cs->estore ? "eADR store" : "prefix");
		ret = -EOPNOTSUPP;
		goto out;
	}
	pthread_mutex_init(&cs->lock, NULL);
	cs->model = cs_model_new();
	cs->work = map_zero(cs->size);
	cs->media_fd = map_media(cs);
	cs->pend_slot = calloc(cs->nlines, sizeof(*cs->pend_slot));
	cs->exp_slot = calloc(cs->nlines, sizeof(*cs->exp_slot));
	if (!cs->work || cs->media_fd < 0 || !cs->pend_slot || !cs->exp_slot)
		goto out;
	if (cs->prefix || cs->estore) {
		cs->log_slot = calloc(cs->nlines, sizeof(*cs->log_slot));
		cs->untraced = calloc(BITS_TO_LONGS(cs->nlines), sizeof(long));
		if (!cs->log_slot || !cs->untraced)
			goto out;
	}

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
	res->acked = cs_model_acked(cs->model);
	res->ops = cs_model_ops(cs->model);

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
	/* eADR: nothing is unflushed (what differs is untraced, counted apart) */
	res->unflushed_at_end = cs->cfg.eadr ? 0 : count_unflushed(cs);
	signal(SIGABRT, old_abrt);
	cs_active = NULL;
	ret = 0;
out:
	clock_gettime(CLOCK_MONOTONIC, &t1);
	res->seconds = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	cs_model_free(cs->model);
	free(cs->points);
	free(cs->pend);
	free(cs->pend_slot);
	free(cs->exp_slot);
	free(cs->exps);
	free(cs->dirty);
	if (cs->log_slot)
		log_reset(cs);
	free(cs->logs);
	free(cs->log_slot);
	free(cs->cand);
	free(cs->untraced);
	if (cs->work)
		munmap(cs->work, cs->size);
	if (cs->media)
		munmap(cs->media, cs->size);
	if (cs->scratch)
		munmap(cs->scratch, cs->size);
	if (cs->media_fd >= 0)
		close(cs->media_fd);
	free(cs);
	return ret;
}

void crashsim_print_result(const char *name, const struct crashsim_config *cfg,
			   const struct crashsim_result *res)
{
	bool prefix = cfg->prefix && !cfg->eadr;
	bool estore = cfg->prefix && cfg->eadr;

	printf("# crashsim %s [%s%s, seed %#llx]: %llu crash points, %llu tried, "
	       "%llu images recovered and checked (%llu refused as allowed), "
	       "%llu ops (%llu acked), max %llu dirty lines, %llu unflushed at end, "
	       "%llu failures, %.1fs\n",
	       name, estore ? "eADR stores" : cfg->eadr ? "eADR" :
	       prefix ? "ADR prefix" : "ADR",
	       cfg->at_flushes ? "+flushes" : "",
	       (unsigned long long)cfg->seed, (unsigned long long)res->events,
	       (unsigned long long)res->points, (unsigned long long)res->images,
	       (unsigned long long)res->refused, (unsigned long long)res->ops,
	       (unsigned long long)res->acked,
	       (unsigned long long)res->max_dirty_lines,
	       (unsigned long long)res->unflushed_at_end,
	       (unsigned long long)res->failures, res->seconds);
	if (prefix)
		printf("# crashsim %s [ADR prefix]: %llu of %llu points with every "
		       "combination of prefixes (up to %u images), max %llu stores "
		       "pending on a line, %llu stores merged, %llu untraced lines\n",
		       name, (unsigned long long)res->exhaustive_points,
		       (unsigned long long)res->points,
		       prefix_images(cfg),
		       (unsigned long long)res->max_line_stores,
		       (unsigned long long)res->merged_stores,
		       (unsigned long long)res->untraced_lines);
	if (estore)
		printf("# crashsim %s [eADR stores]: a crash point after every store "
		       "word, %llu untraced lines\n", name,
		       (unsigned long long)res->untraced_lines);
}
