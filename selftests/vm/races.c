// SPDX-License-Identifier: GPL-2.0
/*
 * Races against pmidx.ko's lifetimes and locking, run inside the VM as
 * root with the production pmidx.ko loaded. Every test starts from a
 * freshly formatted, attached pool holding one index per engine the module
 * builds: ccl ("rc"), utree ("ru"), b3 ("rb"), lodge ("rl") and pfart
 * ("rp"; a module that does not serve an engine of the table has the test
 * all_engines skipped, naming it, and the races run on the others); the
 * racing ones spread
 * their work over those indexes and run for PMIDX_RACE_SECS seconds (default
 * 10; the debug-kernel tier runs 60, so lockdep, KASAN and kmemleak watch
 * them for longer). A racing thread that reports an error outside the
 * documented set fails its test; one that does not finish within a grace
 * period after the deadline is reported as a hang.
 *
 *  data_vs_drop        threads open /dev/pmidxN, LOOKUP an index and run
 *                      PUT/GET/SCAN/DEL through ioctl and io_uring while
 *                      two threads drop and re-create the same names: the
 *                      data path answers 0 or -ENXIO (a dropped id, also
 *                      once a new index took its slot; never the new
 *                      index), LOOKUP 0 or -ENOENT; CHECK passes after.
 *                      A BATCH's entries answer as one by one up to some
 *                      entry and -ENXIO from there on.
 *  attach_detach       threads attach and detach the device (and try
 *                      formats without --force), others open /dev/pmidxN
 *                      and read, one dumps LIST and STATS: only 0, -EBUSY,
 *                      -ENODEV, -EEXIST; the pool is usable afterwards.
 *  exit_inflight       forked processes queue io_uring PUT/GET/SCAN/BATCH
 *                      (1 MiB scans; SQPOLL rings too) and _exit() at once
 *                      while the parent drops and creates the index; every
 *                      child exits cleanly, CHECK passes, the pool detaches.
 *  kapi_vs_drop        sample client sessions (/dev/pmidx_dentry) hold an
 *                      index while drop-index loops: -EBUSY while held, 0
 *                      otherwise (skipped when the sample module is missing).
 *  stats_unprivileged  a child as uid/gid 65534 without groups dumps LIST
 *                      and STATS in a loop while writers PUT: phases with
 *                      and without it interleave; writer throughput with it
 *                      must stay above a quarter of the quiet phases'.
 *  check_under_writes  CHECK in a loop while writers PUT and DEL: 0 or
 *                      -EAGAIN, never -EUCLEAN; exact key counts after.
 *  uring_nowait_order  a SCAN over 40k keys (1 MiB buffer) or a CHECK,
 *                      then a GET, in one io_uring_submit(): the GET
 *                      completes first (the long op went to a worker).
 *  batch_out_cap       BATCHes whose GET/SCAN buffers total more than
 *                      PMIDX_BATCH_OUT_MAX: -E2BIG, nothing run; exactly
 *                      the cap runs.
 *
 *   PMIDX_DEV=/dev/pmemN    the namespace to use (default: the largest)
 *   PMIDX_RACE_SECS=N       seconds per race (default 10)
 *   PMIDX_RACE_ONLY=a,b     run only these tests (development)
 *   PMIDX_DENTRY_KO=PATH    the sample client (default
 *                           samples/pmidx_dentry/pmidx_dentry.ko)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include "kselftest_harness.h"
#include "pmidx_nl.h"
#include "pmidx_data.h"
#include "uring_path.h"
#include "pmem_dev.h"
#include "proc_util.h"

/*
 * One index per engine. FIXTURE_SETUP (in each test's own process) moves
 * those of the engines the module builds to the front: ixs[0..nix).
 */
static struct ix {
	const char	*name;
	const char	*engine_name;
	uint32_t	engine;
} ixs[] = {
	{ "rc", "ccl", PMIDX_ENGINE_CCL },
	{ "ru", "utree", PMIDX_ENGINE_UTREE },
	{ "rb", "b3", PMIDX_ENGINE_B3 },
	{ "rl", "lodge", PMIDX_ENGINE_LODGE },
	{ "rp", "pfart", PMIDX_ENGINE_PFART },
};
#define MAX_IX	ARRAY_SIZE(ixs)
static unsigned int nix;
static char ix_missing[64];	/* " lodge pfart": the engines left out */

/* (not inlined: gcc's format checks lose track of ixs[] in ASSERT loops) */
static __attribute__((noinline)) const char *ixname(int i)
{
	return ixs[i % nix].name;
}

static const struct path_ops *const paths[2] = { &ioctl_path, &uring_path };

static unsigned int race_secs(void)
{
	const char *s = getenv("PMIDX_RACE_SECS");
	int n = s ? atoi(s) : 10;

	return n > 0 ? n : 1;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* ---- what the threads of one race share ------------------------------------ */

struct race {
	atomic_bool	stop;
	pthread_mutex_t	lock;
	unsigned int	fails;
	char		first[512];
};

static void race_init(struct race *r)
{
	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->lock, NULL);
}

/* A racing thread saw something outside the documented set: stop the race. */
static void __attribute__((format(printf, 2, 3)))
race_fail(struct race *r, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&r->lock);
	if (!r->fails)
		snprintf(r->first, sizeof(r->first), "%s", msg);
	if (r->fails++ < 5)
		fprintf(stderr, "# race: %s\n", msg);
	pthread_mutex_unlock(&r->lock);
	atomic_store(&r->stop, true);
}

static bool stopped(struct race *r)
{
	return atomic_load_explicit(&r->stop, memory_order_relaxed);
}

/* Let the race run for @secs seconds (less when a thread failed). */
static void race_wait(struct race *r, unsigned int secs)
{
	uint64_t end = now_ns() + secs * 1000000000ULL;

	while (!stopped(r) && now_ns() < end)
		usleep(20000);
	atomic_store(&r->stop, true);
}

/* One racing thread: its body, and what it is doing (for a hang report). */
struct thr {
	pthread_t		tid;
	bool			started;
	const char		*role;
	const char *volatile	doing;
};

static int thr_start(struct thr *t, const char *role, void *(*fn)(void *),
		     void *arg)
{
	t->role = role;
	t->doing = "starting";
	t->started = !pthread_create(&t->tid, NULL, fn, arg);
	return t->started ? 0 : -1;
}

/*
 * Join @n threads, giving them @grace seconds after the race ended.
 * Return: how many did not finish (each reported with what it was doing).
 */
static int thr_join(struct thr *t, int n, unsigned int grace)
{
	struct timespec ts;
	int i, stuck = 0;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += grace;
	for (i = 0; i < n; i++) {
		if (!t[i].started)
			continue;
		if (pthread_timedjoin_np(t[i].tid, NULL, &ts)) {
			fprintf(stderr, "# HANG: %s thread still in \"%s\" %u s after the race ended\n",
				t[i].role, t[i].doing, grace);
			stuck++;
		}
	}
	return stuck;
}

static unsigned int grace_secs(unsigned int secs)
{
	return 60 + secs;
}

/* ---- small helpers ----------------------------------------------------------- */

static const char *ename(int ret)
{
	static __thread char buf[48];

	if (ret >= 0) {
		snprintf(buf, sizeof(buf), "%d", ret);
		return buf;
	}
	snprintf(buf, sizeof(buf), "-%s", strerrorname_np(-ret) ?: "?");
	return buf;
}

/* Open the pool's char device and LOOKUP @name (ioctl). */
static int ix_open(const char *devpath, const char *name, int flags,
		   struct ctx *c)
{
	uint64_t engine;
	int ret;

	c->path = &ioctl_path;
	c->fd = open(devpath, flags | O_CLOEXEC);
	if (c->fd < 0)
		return -errno;
	ret = op_lookup(c, name, &c->index, &engine);
	if (ret) {
		close(c->fd);
		c->fd = -1;
	}
	return ret;
}

/* CHECK @name; *keys := its keys. */
static int ix_check(const char *devpath, const char *name, uint64_t *keys)
{
	struct ctx c;
	int ret;

	ret = ix_open(devpath, name, O_RDWR, &c);
	if (ret)
		return ret;
	ret = op_check(&c, keys);
	close(c.fd);
	return ret;
}

static int detach_eventually(struct nl *nl, const char *pool)
{
	int i, ret;

	for (i = 0; i < 200; i++) {
		ret = pm_detach(nl, pool);
		if (ret != -EBUSY)
			return ret;
		usleep(50000);
	}
	return ret;
}

static void key_be(uint64_t i, uint8_t k[8])
{
	int b;

	for (b = 7; b >= 0; b--, i >>= 8)
		k[b] = i & 0xff;
}

/* PUT keys [@from, @to) (8-byte big-endian, @vlen-byte values) by BATCHes. */
static int fill(const struct ctx *c, uint64_t from, uint64_t to, uint32_t vlen)
{
	static struct pmidx_cmd ents[PMIDX_BATCH_MAX];
	static uint8_t keys[PMIDX_BATCH_MAX][8], vals[PMIDX_BATCH_MAX][64];
	struct pmidx_cmd b;
	uint64_t i;
	uint32_t n;
	int ret;

	while (from < to) {
		n = to - from < PMIDX_BATCH_MAX ? to - from : PMIDX_BATCH_MAX;
		for (i = 0; i < n; i++) {
			key_be(from + i, keys[i]);
			memset(vals[i], 'f', vlen);
			memcpy(vals[i], keys[i], 8);
			ents[i] = (struct pmidx_cmd){
				.op = PMIDX_OP_PUT, .index = c->index,
				.key = uptr(keys[i]), .key_len = 8,
				.val = uptr(vals[i]), .val_len = vlen,
			};
		}
		b = (struct pmidx_cmd){
			.op = PMIDX_OP_BATCH, .val = uptr(ents),
			.val_len = n * sizeof(ents[0]), .count = n,
		};
		ret = c->path->cmd(c->fd, &b);
		if (ret)
			return ret;
		if (b.result)
			return -EIO;
		from += n;
	}
	return 0;
}

/* ---- fixture ---------------------------------------------------------------------- */

#define MAX_KIDS	8
#define DENTRY_MOD	"pmidx_dentry"

FIXTURE(races) {
	struct nl		nl;
	struct pool_info	p;
	char			devpath[48];	/* /dev/pmidxN */
	unsigned int		secs;
	pid_t			kids[MAX_KIDS];	/* forked, not reaped yet */
	int			hold;		/* kapi_vs_drop's holding session */
	bool			dentry_loaded;
};

static void attached(FIXTURE_DATA(races) *self)
{
	snprintf(self->devpath, sizeof(self->devpath), "/dev/%s", self->p.name);
}

FIXTURE_SETUP(races)
{
	unsigned int i;
	int ret;

	self->secs = race_secs();
	ASSERT_EQ(0, nl_open(&self->nl));
	detach_all(&self->nl);
	ASSERT_EQ(0, pm_format(&self->nl, dev(), 1)) TH_LOG("%s", self->nl.msg);
	ASSERT_EQ(0, pm_attach(&self->nl, dev(), &self->p)) TH_LOG("%s", self->nl.msg);
	attached(self);
	nix = 0;
	for (i = 0; i < MAX_IX; i++) {
		struct ix ix = ixs[i];

		ret = pm_create(&self->nl, ix.name, ix.engine);
		/* an engine the module does not build is refused */
		if (ret == -EOPNOTSUPP) {
			snprintf(ix_missing + strlen(ix_missing),
				 sizeof(ix_missing) - strlen(ix_missing), " %s",
				 ix.engine_name);
			continue;
		}
		ASSERT_EQ(0, ret) TH_LOG("%s: %s", ix.name, self->nl.msg);
		ixs[i] = ixs[nix];
		ixs[nix++] = ix;
	}
	ASSERT_LT(0, nix);
}

FIXTURE_TEARDOWN(races)
{
	int i;

	/* a test that failed early may leave children holding the pool */
	for (i = 0; i < MAX_KIDS; i++) {
		if (self->kids[i] > 0) {
			kill(self->kids[i], SIGKILL);
			waitpid(self->kids[i], NULL, 0);
		}
	}
	/* and the sample client loaded, with a session open */
	if (self->dentry_loaded) {
		if (self->hold > 0)
			close(self->hold);
		syscall(SYS_delete_module, DENTRY_MOD, O_NONBLOCK);
	}
	detach_all(&self->nl);
	nl_close(&self->nl);
}

static void kid_add(FIXTURE_DATA(races) *self, pid_t pid)
{
	int i;

	for (i = 0; i < MAX_KIDS; i++) {
		if (self->kids[i] <= 0) {
			self->kids[i] = pid;
			return;
		}
	}
}

static void kid_del(FIXTURE_DATA(races) *self, pid_t pid)
{
	int i;

	for (i = 0; i < MAX_KIDS; i++)
		if (self->kids[i] == pid)
			self->kids[i] = 0;
}

/* ---- 0: every engine is in the races ---------------------------------------- */

TEST_F(races, all_engines)
{
	if (nix < MAX_IX)
		SKIP(return, "engine%s not built into pmidx.ko: the races run without it",
		     ix_missing);
}

#define RACE_ASSERT_CLEAN(r) \
	ASSERT_EQ(0, (r)->fails) TH_LOG("%u failures, the first: %s", (r)->fails, (r)->first)

/* ---- 1: data path against drop/create of the same names ----------------------- */

#define DV_WORKERS	4
#define DV_DROPPERS	2
#define DV_KEYS		16

struct dv_worker {
	struct race	*r;
	struct thr	*thr;
	const char	*devpath;
	int		t;
	unsigned long	sessions, ops, enxio, lookup_enoent;
	unsigned long	batches, batch_cut;	/* cut: -ENXIO after entry 0 */
};

/* 0 goes on, -ENXIO ends the session (the index is gone); else a failure. */
static bool dv_step(struct dv_worker *w, const struct ix *ix,
		    const struct ctx *c, const char *op, int ret, bool *gone)
{
	if (ret == -ENXIO) {
		w->enxio++;
		*gone = true;
		return false;
	}
	if (ret) {
		race_fail(w->r, "worker %d: %s %s via %s (id %u): %s", w->t, op,
			  ix->name, c->path->name, c->index, ename(ret));
		return false;
	}
	w->ops++;
	return true;
}

/*
 * A BATCH on the session's id that puts two keys, reads them, deletes
 * them and reads them gone. The batch keeps its index pinned from one
 * entry to the next (dispatch.c, run_on_index()) and must let go once a
 * drop has begun: its results are the expected ones up to some entry and
 * -ENXIO from there on, never a mix, and a GET that ran finds the value
 * of the PUT before it. Return: whether the session goes on.
 */
#define DV_BATCH	8

static bool dv_batch(struct dv_worker *w, const struct ix *ix,
		     const struct ctx *c, unsigned long it, bool *gone)
{
	static const uint8_t op[DV_BATCH] = {
		PMIDX_OP_PUT, PMIDX_OP_PUT, PMIDX_OP_GET, PMIDX_OP_GET,
		PMIDX_OP_DEL, PMIDX_OP_DEL, PMIDX_OP_GET, PMIDX_OP_GET,
	};
	static const int want[DV_BATCH] = { 0, 0, 0, 0, 0, 0, -ENOENT, -ENOENT };
	struct pmidx_cmd e[DV_BATCH], b;
	char key[2][32], val[2][64], got[2][64];
	int i, k, ret, res;
	uint32_t kl[2], vl[2];

	for (k = 0; k < 2; k++) {
		kl[k] = snprintf(key[k], sizeof(key[k]), "w%d-b%d", w->t, k);
		vl[k] = snprintf(val[k], sizeof(val[k]), "%s batch id %u it %lu",
				 key[k], c->index, it);
	}
	for (i = 0; i < DV_BATCH; i++) {
		k = i & 1;
		e[i] = (struct pmidx_cmd){ .op = op[i], .index = c->index,
			.key = uptr(key[k]), .key_len = kl[k] };
		if (op[i] == PMIDX_OP_PUT) {
			e[i].val = uptr(val[k]);
			e[i].val_len = vl[k];
		} else if (op[i] == PMIDX_OP_GET) {
			e[i].val = uptr(got[k]);
			e[i].val_len = sizeof(got[k]);
		}
	}
	b = (struct pmidx_cmd){ .op = PMIDX_OP_BATCH, .val = uptr(e),
				.val_len = sizeof(e), .count = DV_BATCH };
	w->thr->doing = "BATCH";
	ret = c->path->cmd(c->fd, &b);
	if (ret) {
		race_fail(w->r, "worker %d: BATCH %s via %s (id %u): %s", w->t,
			  ix->name, c->path->name, c->index, ename(ret));
		return false;
	}
	for (i = 0; i < DV_BATCH; i++) {
		res = (int)(int64_t)e[i].result;
		if (res == -ENXIO)
			break;
		if (res != want[i]) {
			race_fail(w->r, "worker %d: BATCH %s (id %u) entry %d: %s, not %s",
				  w->t, ix->name, c->index, i, ename(res),
				  ename(want[i]));
			return false;
		}
		k = i & 1;
		if (op[i] == PMIDX_OP_GET && !res &&
		    (e[i].val_len != vl[k] || memcmp(got[k], val[k], vl[k]))) {
			race_fail(w->r, "worker %d: BATCH %s (id %u) entry %d: wrong value",
				  w->t, ix->name, c->index, i);
			return false;
		}
	}
	w->ops += i;
	w->batches++;
	w->batch_cut += i && i < DV_BATCH;
	for (k = i; k < DV_BATCH; k++) {
		if ((int64_t)e[k].result != -ENXIO) {
			race_fail(w->r, "worker %d: BATCH %s (id %u) entry %d: %s after -ENXIO at %d",
				  w->t, ix->name, c->index, k,
				  ename((int)(int64_t)e[k].result), i);
			return false;
		}
	}
	if (i < DV_BATCH) {
		w->enxio++;
		*gone = true;
		return false;
	}
	/* the batch's result: how many entries failed */
	if (b.result != 2) {
		race_fail(w->r, "worker %d: BATCH %s: %llu failed, not 2", w->t,
			  ix->name, (unsigned long long)b.result);
		return false;
	}
	return true;
}

/* A session's ops on its id; the index may be dropped at any point. */
static void dv_session(struct dv_worker *w, const struct ix *ix, struct ctx *c,
		       unsigned long it)
{
	uint8_t buf[8192], got[96];
	char key[32], val[96], lo[16], hi[16];
	uint32_t kl, vl, gl, off;
	bool gone = false, seen;
	struct scan_req s;
	int j, ret;

	snprintf(lo, sizeof(lo), "w%d-", w->t);
	snprintf(hi, sizeof(hi), "w%d.", w->t);
	for (j = 0; j < 6 && !gone && !stopped(w->r); j++) {
		kl = snprintf(key, sizeof(key), "w%d-%02lu", w->t, (it + j) % DV_KEYS);
		vl = snprintf(val, sizeof(val), "%s in %s id %u it %lu", key,
			      ix->name, c->index, it);
		c->path = paths[(it + j) & 1];
		w->thr->doing = "PUT";
		if (!dv_step(w, ix, c, "PUT", op_put(c, key, kl, val, vl, 0), &gone))
			break;
		/* the id still names the index we wrote to: the value is there */
		c->path = paths[(it + j + 1) & 1];
		gl = sizeof(got);
		w->thr->doing = "GET";
		if (!dv_step(w, ix, c, "GET", op_get(c, key, kl, got, &gl), &gone))
			break;
		if (gl != vl || memcmp(got, val, vl)) {
			race_fail(w->r, "worker %d: GET %s (id %u) after PUT: wrong value '%.*s'",
				  w->t, ix->name, c->index, (int)gl, got);
			break;
		}
		c->path = paths[(it + j) & 1];
		s = (struct scan_req){
			.start = lo, .start_len = strlen(lo),
			.end = hi, .end_len = strlen(hi),
			.count = 64, .buf = buf, .len = sizeof(buf),
		};
		w->thr->doing = "SCAN";
		if (!dv_step(w, ix, c, "SCAN", op_scan(c, &s), &gone))
			break;
		for (off = 0, seen = false; off < s.len;) {
			const uint8_t *k, *v;
			uint32_t rkl, rvl;

			if (rec_next(buf, s.len, &off, &k, &rkl, &v, &rvl)) {
				race_fail(w->r, "worker %d: SCAN %s: malformed record", w->t, ix->name);
				return;
			}
			seen |= rkl == kl && !memcmp(k, key, kl);
		}
		if (!seen) {
			race_fail(w->r, "worker %d: SCAN %s (id %u): the key just put is missing",
				  w->t, ix->name, c->index);
			break;
		}
		c->path = paths[(it + j + 1) & 1];
		w->thr->doing = "DEL";
		if (!dv_step(w, ix, c, "DEL", op_del(c, key, kl), &gone))
			break;
		gl = sizeof(got);
		w->thr->doing = "GET deleted";
		ret = op_get(c, key, kl, got, &gl);
		if (ret == -ENOENT)
			ret = 0;
		else if (!ret)
			ret = -EEXIST;	/* reported as a failure below */
		if (!dv_step(w, ix, c, "GET after DEL", ret, &gone))
			break;
		if (!dv_batch(w, ix, c, it + j, &gone))
			break;
	}
	if (gone) {
		/* a dropped id never comes back, whatever took its slot */
		c->path = paths[it & 1];
		gl = sizeof(got);
		w->thr->doing = "GET stale";
		ret = op_get(c, "w", 1, got, &gl);
		if (ret != -ENXIO)
			race_fail(w->r, "worker %d: stale id %u of %s via %s answered %s, not -ENXIO",
				  w->t, c->index, ix->name, c->path->name, ename(ret));
	}
}

static void *dv_worker_fn(void *arg)
{
	struct dv_worker *w = arg;
	unsigned long it;
	uint64_t engine;
	struct ctx c;
	int ret;

	for (it = 0; !stopped(w->r); it++) {
		const struct ix *ix = &ixs[(w->t + it) % nix];

		w->thr->doing = "open";
		c.fd = open(w->devpath, O_RDWR | O_CLOEXEC);
		if (c.fd < 0) {
			race_fail(w->r, "worker %d: open %s: %s", w->t, w->devpath, strerror(errno));
			break;
		}
		c.path = paths[(it >> 1) & 1];
		c.index = 0;
		w->thr->doing = "LOOKUP";
		ret = op_lookup(&c, ix->name, &c.index, &engine);
		if (ret == -ENOENT) {
			w->lookup_enoent++;
		} else if (ret) {
			race_fail(w->r, "worker %d: LOOKUP %s via %s: %s", w->t,
				  ix->name, c.path->name, ename(ret));
		} else if (engine != ix->engine) {
			race_fail(w->r, "worker %d: LOOKUP %s: engine %llu", w->t,
				  ix->name, (unsigned long long)engine);
		} else {
			w->sessions++;
			dv_session(w, ix, &c, it);
		}
		w->thr->doing = "close";
		close(c.fd);
	}
	w->thr->doing = "done";
	return NULL;
}

struct dropper {
	struct race	*r;
	struct thr	*thr;
	int		t;
	unsigned long	drops, drop_enoent, creates, create_eexist;
};

static void *dv_dropper_fn(void *arg)
{
	struct dropper *d = arg;
	struct nl *nl = malloc(sizeof(*nl));
	unsigned long it;
	int ret;

	if (!nl || nl_open(nl)) {
		race_fail(d->r, "dropper %d: netlink socket", d->t);
		free(nl);
		return NULL;
	}
	for (it = 0; !stopped(d->r); it++) {
		const struct ix *ix = &ixs[(d->t + it) % nix];

		d->thr->doing = "DROP_INDEX";
		ret = pm_drop(nl, ix->name);
		if (!ret)
			d->drops++;
		else if (ret == -ENOENT)
			d->drop_enoent++;
		else
			race_fail(d->r, "dropper %d: drop %s: %s (%s)", d->t,
				  ix->name, ename(ret), nl->msg);
		d->thr->doing = "CREATE_INDEX";
		ret = pm_create(nl, ix->name, ix->engine);
		if (!ret)
			d->creates++;
		else if (ret == -EEXIST)
			d->create_eexist++;
		else
			race_fail(d->r, "dropper %d: create %s: %s (%s)", d->t,
				  ix->name, ename(ret), nl->msg);
		if (it % 4 == 3)
			usleep(1000);
	}
	d->thr->doing = "done";
	nl_close(nl);
	free(nl);
	return NULL;
}

TEST_F_TIMEOUT(races, data_vs_drop, 3600)
{
	struct dv_worker w[DV_WORKERS] = {};
	struct dropper d[DV_DROPPERS] = {};
	struct thr thr[DV_WORKERS + DV_DROPPERS] = {};
	unsigned long sessions = 0, ops = 0, enxio = 0, noent = 0, drops = 0;
	unsigned long batches = 0, cut = 0;
	uint32_t old_id[MAX_IX];
	uint64_t engine, keys;
	struct ctx c;
	struct race r;
	int i, ret;

	race_init(&r);
	/* ids from before the race, to be stale after it */
	for (i = 0; i < nix; i++) {
		ASSERT_EQ(0, ix_open(self->devpath, ixs[i].name, O_RDWR, &c));
		old_id[i] = c.index;
		close(c.fd);
	}
	for (i = 0; i < DV_WORKERS; i++) {
		w[i] = (struct dv_worker){ .r = &r, .thr = &thr[i],
					   .devpath = self->devpath, .t = i };
		ASSERT_EQ(0, thr_start(&thr[i], "data", dv_worker_fn, &w[i]));
	}
	for (i = 0; i < DV_DROPPERS; i++) {
		d[i] = (struct dropper){ .r = &r, .thr = &thr[DV_WORKERS + i], .t = i };
		ASSERT_EQ(0, thr_start(&thr[DV_WORKERS + i], "drop/create",
				       dv_dropper_fn, &d[i]));
	}
	race_wait(&r, self->secs);
	ASSERT_EQ(0, thr_join(thr, DV_WORKERS + DV_DROPPERS, grace_secs(self->secs)));
	for (i = 0; i < DV_WORKERS; i++) {
		sessions += w[i].sessions;
		ops += w[i].ops;
		enxio += w[i].enxio;
		noent += w[i].lookup_enoent;
		batches += w[i].batches;
		cut += w[i].batch_cut;
	}
	for (i = 0; i < DV_DROPPERS; i++)
		drops += d[i].drops;
	TH_LOG("%lu sessions, %lu ops, %lu ended by -ENXIO, %lu LOOKUPs -ENOENT; %lu drops",
	       sessions, ops, enxio, noent, drops);
	TH_LOG("%lu BATCHes, %lu of them cut short by a drop", batches, cut);
	RACE_ASSERT_CLEAN(&r);

	/* a dropper may have stopped between drop and create */
	for (i = 0; i < nix; i++) {
		ret = pm_create(&self->nl, ixs[i].name, ixs[i].engine);
		ASSERT_TRUE(!ret || ret == -EEXIST) TH_LOG("%s", self->nl.msg);
		ASSERT_EQ(0, ix_check(self->devpath, ixs[i].name, &keys))
			TH_LOG("CHECK %s", ixname(i));
		/* every session deleted what it put */
		ASSERT_EQ(0, keys) TH_LOG("%s", ixs[i].name);
		ASSERT_EQ(0, ix_open(self->devpath, ixs[i].name, O_RDWR, &c));
		if (c.index != old_id[i]) {
			uint8_t v[8];
			uint32_t vl = sizeof(v);
			struct ctx old = c;

			old.index = old_id[i];
			EXPECT_EQ(-ENXIO, op_get(&old, "k", 1, v, &vl));
			old.path = &uring_path;
			EXPECT_EQ(-ENXIO, op_get(&old, "k", 1, v, &vl));
		}
		ASSERT_EQ(0, op_lookup(&c, ixs[i].name, &c.index, &engine));
		close(c.fd);
	}
	ASSERT_LT(0, drops);
}

/* ---- 2: attach/detach of one device against opens and dumps ----------------- */

#define AD_ADMINS	2
#define AD_OPENERS	2
#define ANCHOR		"anchor"
#define ANCHOR_VAL	"the anchor's value"

struct ad_arg {
	struct race	*r;
	struct thr	*thr;
	const char	*pmem;
	int		t;
	atomic_ulong	*attaches, *detaches, *opens;
	unsigned long	busy, nodev, dumps;
};

static void *ad_admin_fn(void *arg)
{
	struct ad_arg *a = arg;
	struct nl *nl = malloc(sizeof(*nl));
	uint64_t seed = 0x9e3779b97f4a7c15ULL * (a->t + 1);
	struct pool_info p;
	char name[16];
	int ret;

	if (!nl || nl_open(nl)) {
		race_fail(a->r, "admin %d: netlink socket", a->t);
		free(nl);
		return NULL;
	}
	while (!stopped(a->r)) {
		switch (rng_below(&seed, 5)) {
		case 0:
		case 1:
			a->thr->doing = "DETACH by path";
			ret = pm_detach(nl, a->pmem);
			goto detach;
		case 2:
			snprintf(name, sizeof(name), "pmidx%u", rng_below(&seed, 2));
			a->thr->doing = "DETACH by name";
			ret = pm_detach(nl, name);
detach:
			if (!ret)
				atomic_fetch_add(a->detaches, 1);
			else if (ret == -EBUSY)
				a->busy++;
			else if (ret == -ENODEV)
				a->nodev++;
			else
				race_fail(a->r, "admin %d: detach: %s (%s)", a->t,
					  ename(ret), nl->msg);
			break;
		case 3:
			a->thr->doing = "ATTACH";
			ret = pm_attach(nl, a->pmem, &p);
			if (!ret)
				atomic_fetch_add(a->attaches, 1);
			else if (ret == -EBUSY)
				a->busy++;
			else
				race_fail(a->r, "admin %d: attach: %s (%s)", a->t,
					  ename(ret), nl->msg);
			if (!ret && (p.id < 0 || p.id > 1))
				race_fail(a->r, "admin %d: attach reported pool %d", a->t, p.id);
			break;
		case 4:
			/* never destroys: the device holds a pool */
			a->thr->doing = "FORMAT";
			ret = pm_format(nl, a->pmem, 0);
			if (ret != -EBUSY && ret != -EEXIST)
				race_fail(a->r, "admin %d: format without force: %s (%s)",
					  a->t, ename(ret), nl->msg);
			break;
		}
	}
	a->thr->doing = "done";
	nl_close(nl);
	free(nl);
	return NULL;
}

static void *ad_opener_fn(void *arg)
{
	struct ad_arg *a = arg;
	uint64_t seed = 0x2545f4914f6cdd1dULL * (a->t + 1), engine;
	char path[32], got[64];
	uint32_t gl;
	struct ctx c;
	int ret;

	while (!stopped(a->r)) {
		snprintf(path, sizeof(path), "/dev/pmidx%u", rng_below(&seed, 2));
		a->thr->doing = "open";
		c.fd = open(path, O_RDWR | O_CLOEXEC);
		if (c.fd < 0) {
			if (errno != ENOENT && errno != ENODEV && errno != ENXIO)
				race_fail(a->r, "opener %d: open %s: %s", a->t, path,
					  strerror(errno));
			usleep(500);
			continue;
		}
		atomic_fetch_add(a->opens, 1);
		c.path = paths[rng_below(&seed, 2)];
		a->thr->doing = "LOOKUP";
		ret = op_lookup(&c, ixs[0].name, &c.index, &engine);
		if (ret) {
			race_fail(a->r, "opener %d: LOOKUP via %s on an open %s: %s",
				  a->t, c.path->name, path, ename(ret));
		} else {
			gl = sizeof(got);
			a->thr->doing = "GET";
			ret = op_get(&c, ANCHOR, strlen(ANCHOR), got, &gl);
			if (ret || gl != strlen(ANCHOR_VAL) || memcmp(got, ANCHOR_VAL, gl))
				race_fail(a->r, "opener %d: GET via %s on an open %s: %s",
					  a->t, c.path->name, path, ename(ret));
		}
		close(c.fd);
		usleep(rng_below(&seed, 2000));
	}
	a->thr->doing = "done";
	return NULL;
}

static void *ad_dumper_fn(void *arg)
{
	struct ad_arg *a = arg;
	struct nl *nl = malloc(sizeof(*nl));
	struct pool_info p;
	int ret;

	if (!nl || nl_open(nl)) {
		race_fail(a->r, "dumper: netlink socket");
		free(nl);
		return NULL;
	}
	while (!stopped(a->r)) {
		a->thr->doing = "LIST";
		ret = pm_list(nl, &p);
		if (!ret && p.nr_indexes > nix)
			ret = -EBADMSG;
		if (ret) {
			race_fail(a->r, "dumper: LIST: %s (%s)", ename(ret), nl->msg);
			break;
		}
		a->thr->doing = "STATS";
		ret = pm_stats(nl, NULL, &p);
		if (!ret && p.nr_indexes > nix)
			ret = -EBADMSG;
		if (ret) {
			race_fail(a->r, "dumper: STATS: %s (%s)", ename(ret), nl->msg);
			break;
		}
		a->dumps++;
	}
	a->thr->doing = "done";
	nl_close(nl);
	free(nl);
	return NULL;
}

TEST_F_TIMEOUT(races, attach_detach, 3600)
{
	struct ad_arg a[AD_ADMINS + AD_OPENERS + 1] = {};
	struct thr thr[AD_ADMINS + AD_OPENERS + 1] = {};
	atomic_ulong attaches = 0, detaches = 0, opens = 0;
	unsigned long busy = 0, nodev = 0;
	const int n = AD_ADMINS + AD_OPENERS + 1;
	char got[64];
	uint32_t gl;
	struct ctx c;
	struct race r;
	uint64_t keys;
	int i, ret;

	race_init(&r);
	ASSERT_EQ(0, ix_open(self->devpath, ixs[0].name, O_RDWR, &c));
	ASSERT_EQ(0, op_put(&c, ANCHOR, strlen(ANCHOR), ANCHOR_VAL, strlen(ANCHOR_VAL), 0));
	close(c.fd);
	for (i = 0; i < n; i++) {
		a[i] = (struct ad_arg){ .r = &r, .thr = &thr[i], .pmem = dev(), .t = i,
					.attaches = &attaches, .detaches = &detaches,
					.opens = &opens };
		if (i < AD_ADMINS)
			ret = thr_start(&thr[i], "attach/detach", ad_admin_fn, &a[i]);
		else if (i < AD_ADMINS + AD_OPENERS)
			ret = thr_start(&thr[i], "open", ad_opener_fn, &a[i]);
		else
			ret = thr_start(&thr[i], "dump", ad_dumper_fn, &a[i]);
		ASSERT_EQ(0, ret);
	}
	race_wait(&r, self->secs);
	ASSERT_EQ(0, thr_join(thr, n, grace_secs(self->secs)));
	for (i = 0; i < AD_ADMINS; i++) {
		busy += a[i].busy;
		nodev += a[i].nodev;
	}
	TH_LOG("%lu attaches, %lu detaches, %lu -EBUSY, %lu -ENODEV; %lu opens; %lu dump pairs",
	       (unsigned long)attaches, (unsigned long)detaches, busy, nodev,
	       (unsigned long)opens, a[n - 1].dumps);
	RACE_ASSERT_CLEAN(&r);

	/* attached or not, the device attaches and serves what it held */
	ret = pm_attach(&self->nl, dev(), &self->p);
	ASSERT_TRUE(!ret || ret == -EBUSY) TH_LOG("%s", self->nl.msg);
	ASSERT_EQ(0, pm_stats(&self->nl, NULL, &self->p));
	ASSERT_LE(0, self->p.id);
	ASSERT_EQ(nix, self->p.nr_indexes);
	attached(self);
	ASSERT_EQ(0, ix_open(self->devpath, ixs[0].name, O_RDWR, &c));
	gl = sizeof(got);
	ASSERT_EQ(0, op_get(&c, ANCHOR, strlen(ANCHOR), got, &gl));
	ASSERT_EQ(strlen(ANCHOR_VAL), gl);
	ASSERT_EQ(0, op_put(&c, "after", 5, "race", 4, 0));
	close(c.fd);
	for (i = 0; i < nix; i++)
		ASSERT_EQ(0, ix_check(self->devpath, ixs[i].name, &keys));
	ASSERT_LT(0, (unsigned long)detaches);
	ASSERT_LT(0, (unsigned long)attaches);
}

/* ---- 3: processes exiting with io_uring ops in flight ------------------------ */

#define EX_DEPTH	64
#define EX_BATCH	48
#define EX_SCAN_BUF	(1U << 20)
#define EX_CHILDREN	3

enum { EX_RAN = 0, EX_NO_INDEX = 1, EX_NO_SQPOLL = 77 };

static void ex_sqe(struct io_uring *ring, int fd, const struct pmidx_cmd *c)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	if (!sqe)
		_exit(20);
	memset(sqe, 0, 128);
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = fd;
	sqe->cmd_op = PMIDX_IOC_CMD;
	memcpy(sqe->cmd, c, sizeof(*c));
}

/* A child: queue a ring full of ops on @name and exit without waiting. */
static int ex_child(const char *devpath, const char *name, bool sqpoll,
		    unsigned int seq)
{
	struct io_uring_params p = {
		.flags = IORING_SETUP_SQE128 | IORING_SETUP_CQE32 |
			 (sqpoll ? IORING_SETUP_SQPOLL : 0),
		.sq_thread_idle = 50,
	};
	static uint8_t keys[EX_DEPTH][8], vals[EX_DEPTH][32];
	static struct pmidx_cmd batch[8][EX_BATCH];
	struct io_uring ring;
	struct io_uring_cqe *cqe;
	struct pmidx_cmd c;
	uint8_t *scan;
	unsigned int i, j, nb = 0;
	struct ctx x;

	if (ix_open(devpath, name, O_RDWR, &x))
		return EX_NO_INDEX;	/* dropped just now */
	if (io_uring_queue_init_params(EX_DEPTH, &ring, &p))
		return sqpoll ? EX_NO_SQPOLL : 10;
	scan = malloc(4 * EX_SCAN_BUF);
	if (!scan)
		return 11;
	for (i = 0; i < EX_DEPTH; i++) {
		key_be((seq * EX_DEPTH + i) % 4096, keys[i]);
		memset(vals[i], 'x', sizeof(vals[i]));
		c = (struct pmidx_cmd){ .index = x.index, .key = uptr(keys[i]), .key_len = 8 };
		switch (i % 8) {
		case 0: case 1: case 2:
			c.op = PMIDX_OP_PUT;
			c.val = uptr(vals[i]);
			c.val_len = sizeof(vals[i]);
			break;
		case 3:
			c.op = PMIDX_OP_GET;
			c.val = uptr(vals[i]);
			c.val_len = sizeof(vals[i]);
			break;
		case 4:
			c.op = PMIDX_OP_DEL;
			break;
		case 5:	/* a big scan from the first key */
			c.op = PMIDX_OP_SCAN;
			c.key = c.key_len = 0;
			c.count = 1 << 20;
			c.val = uptr(scan + (i / 8 % 4) * EX_SCAN_BUF);
			c.val_len = EX_SCAN_BUF;
			break;
		case 6:
		case 7:	/* PUTs, GETs and 256 KiB SCANs in one BATCH */
			if (nb == 8)
				continue;
			for (j = 0; j < EX_BATCH; j++) {
				struct pmidx_cmd *e = &batch[nb][j];

				*e = (struct pmidx_cmd){ .index = x.index,
					.key = uptr(keys[j % EX_DEPTH]), .key_len = 8,
					.val = uptr(vals[j % EX_DEPTH]), .val_len = 32 };
				e->op = j % 3 == 0 ? PMIDX_OP_PUT : j % 3 == 1 ?
					PMIDX_OP_GET : PMIDX_OP_SCAN;
				if (e->op == PMIDX_OP_SCAN) {
					e->count = 4096;
					e->val = uptr(scan + (j % 4) * EX_SCAN_BUF);
					e->val_len = EX_SCAN_BUF / 4;
				}
			}
			c = (struct pmidx_cmd){ .op = PMIDX_OP_BATCH,
				.val = uptr(batch[nb]), .count = EX_BATCH,
				.val_len = sizeof(batch[nb]) };
			nb++;
			break;
		}
		ex_sqe(&ring, x.fd, &c);
	}
	if (io_uring_submit(&ring) < 0)
		return 12;
	/* sometimes after the first completion, mostly at once */
	if (seq % 4 == 0 && io_uring_wait_cqe(&ring, &cqe))
		return 13;
	return EX_RAN;
}

TEST_F_TIMEOUT(races, exit_inflight, 3600)
{
	unsigned long spawned = 0, ran = 0, missed = 0, drops = 0, sq = 0;
	uint64_t end = now_ns() + self->secs * 1000000000ULL, keys;
	bool sqpoll_ok = true;
	int alive = 0, status, i, ret;
	pid_t pid;

	while (now_ns() < end || alive) {
		while (now_ns() < end && alive < EX_CHILDREN) {
			const struct ix *ix = &ixs[spawned % nix];
			bool sqpoll = sqpoll_ok && spawned % 3 == 2;

			fflush(NULL);
			pid = fork();
			ASSERT_LE(0, pid);
			if (!pid)
				_exit(ex_child(self->devpath, ix->name, sqpoll, spawned));
			kid_add(self, pid);
			spawned++;
			sq += sqpoll;
			alive++;
		}
		if (now_ns() < end) {
			const struct ix *ix = &ixs[drops % nix];

			ret = pm_drop(&self->nl, ix->name);
			ASSERT_EQ(0, ret) TH_LOG("drop %s: %s", ix->name, self->nl.msg);
			ret = pm_create(&self->nl, ix->name, ix->engine);
			ASSERT_EQ(0, ret) TH_LOG("create %s: %s", ix->name, self->nl.msg);
			drops++;
		}
		while ((pid = waitpid(-1, &status, now_ns() < end ? WNOHANG : 0)) > 0) {
			kid_del(self, pid);
			alive--;
			ASSERT_TRUE(WIFEXITED(status)) TH_LOG("child %d: status %#x", pid, status);
			ret = WEXITSTATUS(status);
			if (ret == EX_NO_SQPOLL) {
				TH_LOG("SQPOLL rings refused: going on without them");
				sqpoll_ok = false;
				continue;
			}
			ASSERT_TRUE(ret == EX_RAN || ret == EX_NO_INDEX)
				TH_LOG("child %d: exit status %d", pid, ret);
			ran += ret == EX_RAN;
			missed += ret == EX_NO_INDEX;
		}
		ASSERT_TRUE(pid >= 0 || errno == ECHILD);
		if (pid < 0)
			alive = 0;
		usleep(2000);
	}
	TH_LOG("%lu children (%lu SQPOLL) queued ops and exited, %lu found no index; %lu drop+create",
	       ran, sq, missed, drops);
	ASSERT_LT(0, ran);
	for (i = 0; i < nix; i++)
		ASSERT_EQ(0, ix_check(self->devpath, ixs[i].name, &keys))
			TH_LOG("CHECK %s", ixname(i));
	/* nothing leaked a pin: the pool detaches (rings tear down async) */
	ASSERT_EQ(0, detach_eventually(&self->nl, self->p.name)) TH_LOG("%s", self->nl.msg);
	ASSERT_EQ(0, pm_attach(&self->nl, dev(), &self->p)) TH_LOG("%s", self->nl.msg);
	attached(self);
	for (i = 0; i < nix; i++)
		ASSERT_EQ(0, ix_check(self->devpath, ixs[i].name, &keys));
}

/* ---- 4: in-kernel handles (sample client) against drop-index ----------------- */

#define KX_SESSIONS	3
#define KX_NAME		"kx"
#define KX_HELD		"kheld"
#define DENTRY_DEV	"/dev/pmidx_dentry"

static int __attribute__((format(printf, 2, 3))) dcmd(int fd, const char *fmt, ...)
{
	char line[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	return write(fd, line, n) == n ? 0 : -errno;
}

/* The last command's output, NUL-terminated. */
static const char *dout(int fd, char *buf, size_t size)
{
	ssize_t n = read(fd, buf, size - 1);

	buf[n > 0 ? n : 0] = 0;
	return buf;
}

struct kx_arg {
	struct race	*r;
	struct thr	*thr;
	const char	*pool;
	int		t;
	unsigned long	sessions, enoent, drops, busy;
};

static void *kx_session_fn(void *arg)
{
	struct kx_arg *a = arg;
	uint64_t seed = 77 + a->t;
	unsigned long it;
	char out[256], want[64];
	int fd, ret;

	for (it = 0; !stopped(a->r); it++) {
		a->thr->doing = "open " DENTRY_DEV;
		fd = open(DENTRY_DEV, O_RDWR | O_CLOEXEC);
		if (fd < 0) {
			race_fail(a->r, "session %d: open: %s", a->t, strerror(errno));
			break;
		}
		a->thr->doing = "open the index";
		ret = dcmd(fd, "open %s %s", a->pool, KX_NAME);
		if (ret == -ENOENT) {	/* dropped, not created again yet */
			a->enoent++;
			close(fd);
			usleep(200);
			continue;
		}
		if (ret) {
			race_fail(a->r, "session %d: open %s: %s", a->t, KX_NAME, ename(ret));
			close(fd);
			break;
		}
		a->sessions++;
		/* the session holds the index: nothing it does can fail */
		a->thr->doing = "create/lookup/list/unlink";
		ret = dcmd(fd, "create %d n%lu %lu", a->t + 1, it, it + 1000);
		if (!ret)
			ret = dcmd(fd, "lookup %d n%lu", a->t + 1, it);
		snprintf(want, sizeof(want), "ino=%lu\n", it + 1000);
		if (!ret && strcmp(dout(fd, out, sizeof(out)), want))
			ret = -EBADMSG;
		if (!ret)
			ret = dcmd(fd, "list %d", a->t + 1);
		snprintf(want, sizeof(want), "n%lu %lu\n", it, it + 1000);
		if (!ret && strcmp(dout(fd, out, sizeof(out)), want))
			ret = -EBADMSG;
		if (!ret)
			ret = dcmd(fd, "unlink %d n%lu", a->t + 1, it);
		if (!ret && it % 4 == 0) {
			a->thr->doing = "bench";
			ret = dcmd(fd, "bench put %d000000 50 16", a->t + 1);
			if (!ret && !strstr(dout(fd, out, sizeof(out)), "failed=0"))
				ret = -EBADMSG;
			if (!ret)
				ret = dcmd(fd, "bench del %d000000 50 0", a->t + 1);
		}
		if (ret)
			race_fail(a->r, "session %d: while holding %s: %s (output '%s')",
				  a->t, KX_NAME, ename(ret), out);
		/* half the sessions end by close(2) alone */
		if (it % 2) {
			a->thr->doing = "close the index";
			ret = dcmd(fd, "close");
			if (ret)
				race_fail(a->r, "session %d: close: %s", a->t, ename(ret));
		}
		close(fd);
		usleep(rng_below(&seed, 1500));
	}
	a->thr->doing = "done";
	return NULL;
}

static void *kx_dropper_fn(void *arg)
{
	struct kx_arg *a = arg;
	struct nl *nl = malloc(sizeof(*nl));
	int ret;

	if (!nl || nl_open(nl)) {
		race_fail(a->r, "dropper: netlink socket");
		free(nl);
		return NULL;
	}
	while (!stopped(a->r)) {
		a->thr->doing = "drop the held index";
		ret = pm_drop(nl, KX_HELD);
		if (ret != -EBUSY)
			race_fail(a->r, "drop of %s, held all along: %s (%s)", KX_HELD,
				  ename(ret), nl->msg);
		a->thr->doing = "drop";
		ret = pm_drop(nl, KX_NAME);
		if (ret == -EBUSY) {
			a->busy++;
		} else if (ret) {
			race_fail(a->r, "drop %s: %s (%s)", KX_NAME, ename(ret), nl->msg);
		} else {
			a->drops++;
			a->thr->doing = "create";
			ret = pm_create(nl, KX_NAME, PMIDX_ENGINE_CCL);
			if (ret)
				race_fail(a->r, "create %s after its drop: %s (%s)",
					  KX_NAME, ename(ret), nl->msg);
		}
		usleep(300);
	}
	a->thr->doing = "done";
	nl_close(nl);
	free(nl);
	return NULL;
}

TEST_F_TIMEOUT(races, kapi_vs_drop, 3600)
{
	const char *ko = getenv("PMIDX_DENTRY_KO") ?: "samples/pmidx_dentry/pmidx_dentry.ko";
	struct kx_arg a[KX_SESSIONS + 1] = {};
	struct thr thr[KX_SESSIONS + 1] = {};
	unsigned long sessions = 0, enoent = 0;
	char out[64];
	int fd, hold, i, ret;
	struct race r;

	fd = open(ko, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		SKIP(return, "sample client %s: %s (built by make module)", ko, strerror(errno));
	ret = syscall(SYS_finit_module, fd, "", 0) ? -errno : 0;
	close(fd);
	ASSERT_TRUE(!ret || ret == -EEXIST) TH_LOG("loading %s: %s", ko, ename(ret));
	self->dentry_loaded = true;

	race_init(&r);
	ASSERT_EQ(0, pm_create(&self->nl, KX_NAME, PMIDX_ENGINE_CCL));
	ASSERT_EQ(0, pm_create(&self->nl, KX_HELD, PMIDX_ENGINE_UTREE));
	hold = open(DENTRY_DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, hold) TH_LOG("%s: %s", DENTRY_DEV, strerror(errno));
	self->hold = hold;
	ASSERT_EQ(0, dcmd(hold, "open %s %s", self->p.name, KX_HELD));
	ASSERT_EQ(0, dcmd(hold, "create 7 held 7"));
	ASSERT_EQ(-EBUSY, pm_drop(&self->nl, KX_HELD));

	for (i = 0; i <= KX_SESSIONS; i++) {
		a[i] = (struct kx_arg){ .r = &r, .thr = &thr[i], .pool = self->p.name, .t = i };
		ret = i < KX_SESSIONS ?
			thr_start(&thr[i], "session", kx_session_fn, &a[i]) :
			thr_start(&thr[i], "drop", kx_dropper_fn, &a[i]);
		ASSERT_EQ(0, ret);
	}
	race_wait(&r, self->secs);
	ASSERT_EQ(0, thr_join(thr, KX_SESSIONS + 1, grace_secs(self->secs)));
	for (i = 0; i < KX_SESSIONS; i++) {
		sessions += a[i].sessions;
		enoent += a[i].enoent;
	}
	TH_LOG("%lu sessions, %lu opens found no index; drops: %lu done, %lu -EBUSY",
	       sessions, enoent, a[KX_SESSIONS].drops, a[KX_SESSIONS].busy);
	RACE_ASSERT_CLEAN(&r);

	/* the held index kept its entry; closed, it drops */
	ASSERT_EQ(0, dcmd(hold, "lookup 7 held"));
	ASSERT_STREQ("ino=7\n", dout(hold, out, sizeof(out)));
	ASSERT_EQ(-EBUSY, pm_drop(&self->nl, KX_HELD));
	ASSERT_EQ(0, dcmd(hold, "close"));
	ASSERT_EQ(0, pm_drop(&self->nl, KX_HELD)) TH_LOG("%s", self->nl.msg);
	close(hold);
	self->hold = -1;
	/* no session left: the racing index drops at once */
	ASSERT_EQ(0, pm_drop(&self->nl, KX_NAME)) TH_LOG("%s", self->nl.msg);
	ASSERT_EQ(0, syscall(SYS_delete_module, DENTRY_MOD, O_NONBLOCK))
		TH_LOG("rmmod %s: %s", DENTRY_MOD, strerror(errno));
	self->dentry_loaded = false;
	ASSERT_LT(0, sessions);
	ASSERT_LT(0, a[KX_SESSIONS].drops);
}

/* ---- 5: unprivileged STATS against writers' throughput ----------------------- */

#define ST_WRITERS	2
#define NOBODY		65534

struct st_shared {
	atomic_int	phase;		/* 0 quiet, 1 dump, 2 exit */
	atomic_ulong	dumps;
	atomic_int	ready;
};

static int st_child(struct st_shared *sh)
{
	struct nl *nl = malloc(sizeof(*nl));
	struct pool_info p;
	int ret, phase;

	CK(!become(NOBODY, NOBODY, NULL, 0, 0), "cannot become uid %d", NOBODY);
	CK(nl && !nl_open(nl), "netlink socket as uid %d", NOBODY);
	/* not an admin */
	ret = pm_create(nl, "nobody", PMIDX_ENGINE_CCL);
	CK(ret == -EPERM, "CREATE_INDEX as nobody: %s", ename(ret));
	atomic_store(&sh->ready, 1);
	while ((phase = atomic_load(&sh->phase)) != 2) {
		if (!phase) {
			usleep(1000);
			continue;
		}
		ret = pm_stats(nl, NULL, &p);
		CK(!ret && p.nr_indexes == nix, "STATS as nobody: %s, %d indexes (%s)",
		   ename(ret), p.nr_indexes, nl->msg);
		ret = pm_list(nl, &p);
		CK(!ret && p.nr_indexes == nix, "LIST as nobody: %s (%s)", ename(ret), nl->msg);
		ret = pm_stats_index(nl, ixs[atomic_load(&sh->dumps) % nix].name, &p);
		CK(!ret && p.nr_indexes == 1, "STATS of one index as nobody: %s (%s)",
		   ename(ret), nl->msg);
		atomic_fetch_add(&sh->dumps, 1);
	}
	return 0;
}

struct st_writer {
	struct race	*r;
	struct thr	*thr;
	const char	*devpath;
	int		t;
	atomic_ulong	*ops;
};

static void *st_writer_fn(void *arg)
{
	struct st_writer *w = arg;
	struct ctx c[MAX_IX];
	uint8_t key[8], val[64];
	unsigned long i;
	int ret, x;

	for (x = 0; x < nix; x++)
		if (ix_open(w->devpath, ixs[x].name, O_RDWR, &c[x])) {
			race_fail(w->r, "writer %d: open %s", w->t, ixs[x].name);
			return NULL;
		}
	memset(val, 'w', sizeof(val));
	for (i = 0; !stopped(w->r); i++) {
		x = i % nix;
		key_be((uint64_t)w->t << 32 | (i / nix % 2048), key);
		ret = op_put(&c[x], key, 8, val, sizeof(val), 0);
		if (ret) {
			race_fail(w->r, "writer %d: PUT %s: %s", w->t, ixs[x].name, ename(ret));
			break;
		}
		atomic_fetch_add_explicit(w->ops, 1, memory_order_relaxed);
	}
	for (x = 0; x < nix; x++)
		close(c[x].fd);
	w->thr->doing = "done";
	return NULL;
}

TEST_F_TIMEOUT(races, stats_unprivileged, 3600)
{
	struct st_shared *sh;
	struct st_writer w[ST_WRITERS] = {};
	struct thr thr[ST_WRITERS] = {};
	atomic_ulong ops = 0;
	uint64_t t_q = 0, t_s = 0, t0, n_q = 0, n_s = 0, n0;
	unsigned long dumps0, dumps = 0;
	double quiet, busy;
	int phases = 6, ph, i, status;
	uint64_t phase_ns;
	struct race r;
	pid_t pid;

	phase_ns = self->secs * 1000000000ULL / phases;
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, sh);
	memset(sh, 0, sizeof(*sh));
	fflush(NULL);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(st_child(sh));
	kid_add(self, pid);
	for (i = 0; i < 500 && !atomic_load(&sh->ready); i++)
		usleep(10000);
	if (!atomic_load(&sh->ready)) {
		atomic_store(&sh->phase, 2);
		waitpid(pid, &status, 0);
		ASSERT_TRUE(0) TH_LOG("the unprivileged child did not start (status %#x)", status);
	}

	race_init(&r);
	for (i = 0; i < ST_WRITERS; i++) {
		w[i] = (struct st_writer){ .r = &r, .thr = &thr[i],
					   .devpath = self->devpath, .t = i, .ops = &ops };
		ASSERT_EQ(0, thr_start(&thr[i], "writer", st_writer_fn, &w[i]));
	}
	usleep(200000);		/* warm up */
	/* quiet, dump, quiet, dump...: drifts of the machine hit both */
	for (ph = 0; ph < phases && !stopped(&r); ph++) {
		atomic_store(&sh->phase, ph % 2);
		dumps0 = atomic_load(&sh->dumps);
		n0 = atomic_load(&ops);
		t0 = now_ns();
		while (now_ns() - t0 < phase_ns && !stopped(&r))
			usleep(10000);
		if (ph % 2) {
			t_s += now_ns() - t0;
			n_s += atomic_load(&ops) - n0;
			dumps += atomic_load(&sh->dumps) - dumps0;
		} else {
			t_q += now_ns() - t0;
			n_q += atomic_load(&ops) - n0;
		}
	}
	atomic_store(&r.stop, true);
	atomic_store(&sh->phase, 2);
	ASSERT_EQ(0, thr_join(thr, ST_WRITERS, grace_secs(self->secs)));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	kid_del(self, pid);
	RACE_ASSERT_CLEAN(&r);
	ASSERT_EQ(0, status) TH_LOG("the unprivileged LIST/STATS child failed");
	quiet = n_q * 1e9 / (t_q ?: 1);
	busy = n_s * 1e9 / (t_s ?: 1);
	TH_LOG("writers: %.0f PUT/s quiet, %.0f PUT/s with %lu LIST+STATS dumps by uid %d (%.0f%%)",
	       quiet, busy, dumps, NOBODY, quiet ? 100 * busy / quiet : 0);
	ASSERT_LT(0, dumps);
	ASSERT_LT(0, n_q);
	ASSERT_GE(busy, quiet / 4) TH_LOG("throughput collapsed under unprivileged STATS");
	munmap(sh, sizeof(*sh));
}

/* ---- 6: CHECK under writes ----------------------------------------------------- */

#define CW_WRITERS	2
#define CW_KEYS		1000

struct cw_writer {
	struct race	*r;
	struct thr	*thr;
	const char	*devpath;
	int		t;
	uint8_t		present[MAX_IX][CW_KEYS];
	unsigned long	ops;
};

static void *cw_writer_fn(void *arg)
{
	struct cw_writer *w = arg;
	uint64_t seed = 0x1234567ULL + w->t;
	uint8_t key[8], val[40];
	struct ctx c[MAX_IX];
	uint32_t k;
	int ret, x;

	for (x = 0; x < nix; x++)
		if (ix_open(w->devpath, ixs[x].name, O_RDWR, &c[x])) {
			race_fail(w->r, "writer %d: open %s", w->t, ixs[x].name);
			return NULL;
		}
	memset(val, 'c', sizeof(val));
	while (!stopped(w->r)) {
		x = rng_below(&seed, nix);
		k = rng_below(&seed, CW_KEYS);
		key_be((uint64_t)(w->t + 1) << 32 | k, key);
		if (rng_below(&seed, 3)) {
			w->thr->doing = "PUT";
			ret = op_put(&c[x], key, 8, val, 1 + rng_below(&seed, sizeof(val)), 0);
			if (!ret)
				w->present[x][k] = 1;
		} else {
			w->thr->doing = "DEL";
			ret = op_del(&c[x], key, 8);
			if (ret == -ENOENT && !w->present[x][k])
				ret = 0;
			if (!ret)
				w->present[x][k] = 0;
		}
		if (ret) {
			race_fail(w->r, "writer %d: %s: %s", w->t, w->thr->doing, ename(ret));
			break;
		}
		w->ops++;
	}
	for (x = 0; x < nix; x++)
		close(c[x].fd);
	w->thr->doing = "done";
	return NULL;
}

TEST_F_TIMEOUT(races, check_under_writes, 3600)
{
	struct cw_writer *w = calloc(CW_WRITERS, sizeof(*w));
	struct thr thr[CW_WRITERS] = {};
	unsigned long ok[MAX_IX] = {}, again[MAX_IX] = {}, it, ops = 0;
	uint64_t keys, want;
	struct ctx c[MAX_IX];
	struct race r;
	int i, x, k, ret;

	ASSERT_NE(NULL, w);
	race_init(&r);
	for (x = 0; x < nix; x++) {
		ASSERT_EQ(0, ix_open(self->devpath, ixs[x].name, O_RDWR, &c[x]));
		/* a base of keys the checker walks every time */
		ASSERT_EQ(0, fill(&c[x], 0, 2000, 24));
	}
	for (i = 0; i < CW_WRITERS; i++) {
		w[i].r = &r;
		w[i].thr = &thr[i];
		w[i].devpath = self->devpath;
		w[i].t = i;
		ASSERT_EQ(0, thr_start(&thr[i], "writer", cw_writer_fn, &w[i]));
	}
	{
		uint64_t end = now_ns() + self->secs * 1000000000ULL;

		for (it = 0; now_ns() < end && !stopped(&r); it++) {
			x = it % nix;
			c[x].path = paths[(it / nix) % 2];
			ret = op_check(&c[x], &keys);
			if (!ret)
				ok[x]++;
			else if (ret == -EAGAIN)
				again[x]++;
			else
				race_fail(&r, "CHECK of %s (%s) via %s under writes: %s",
					  ixs[x].name, ixs[x].engine_name,
					  c[x].path->name, ename(ret));
		}
		atomic_store(&r.stop, true);
	}
	ASSERT_EQ(0, thr_join(thr, CW_WRITERS, grace_secs(self->secs)));
	for (i = 0; i < CW_WRITERS; i++)
		ops += w[i].ops;
	TH_LOG("%lu writes", ops);
	for (x = 0; x < nix; x++)
		TH_LOG("CHECK of %s (%s): %lu passed, %lu -EAGAIN", ixs[x].name,
		       ixs[x].engine_name, ok[x], again[x]);
	RACE_ASSERT_CLEAN(&r);
	for (x = 0; x < nix; x++) {
		want = 2000;
		for (i = 0; i < CW_WRITERS; i++)
			for (k = 0; k < CW_KEYS; k++)
				want += w[i].present[x][k];
		c[x].path = &ioctl_path;
		ASSERT_EQ(0, op_check(&c[x], &keys)) TH_LOG("%s", ixs[x].name);
		ASSERT_EQ(want, keys) TH_LOG("%s", ixs[x].name);
		ASSERT_LT(0, ok[x] + again[x]);
		close(c[x].fd);
	}
	free(w);
}

/* ---- 7: a long op does not stall the submit batch ------------------------------ */

#define NW_KEYS		40000
#define NW_VLEN		16
#define NW_SCAN_BUF	(1U << 20)

/* Submit @first then a GET in one io_uring_submit(); 0 when the GET completes first. */
static int nw_round(struct io_uring *ring, int fd, const struct pmidx_cmd *first,
		    uint32_t index, int *first_res, uint64_t *first_big,
		    const char **why)
{
	static uint8_t key[8], got[NW_VLEN];
	struct pmidx_cmd get;
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	uint64_t order[2];
	int i, ret, get_res = 0;

	key_be(NW_KEYS / 2, key);
	get = (struct pmidx_cmd){ .op = PMIDX_OP_GET, .index = index,
		.key = uptr(key), .key_len = 8, .val = uptr(got), .val_len = sizeof(got) };
	sqe = io_uring_get_sqe(ring);
	if (!sqe)
		return -EBUSY;
	memset(sqe, 0, 128);
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = fd;
	sqe->cmd_op = PMIDX_IOC_CMD;
	sqe->user_data = 1;
	memcpy(sqe->cmd, first, sizeof(*first));
	sqe = io_uring_get_sqe(ring);
	if (!sqe)
		return -EBUSY;
	memset(sqe, 0, 128);
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = fd;
	sqe->cmd_op = PMIDX_IOC_CMD;
	sqe->user_data = 2;
	memcpy(sqe->cmd, &get, sizeof(get));
	ret = io_uring_submit(ring);
	if (ret != 2) {
		*why = "io_uring_submit did not take both";
		return -EIO;
	}
	for (i = 0; i < 2; i++) {
		ret = io_uring_wait_cqe(ring, &cqe);
		if (ret) {
			*why = "io_uring_wait_cqe";
			return ret;
		}
		order[i] = cqe->user_data;
		if (cqe->user_data == 1) {
			*first_res = cqe->res;
			*first_big = cqe->big_cqe[0];
		} else {
			get_res = cqe->res;
		}
		io_uring_cqe_seen(ring, cqe);
	}
	if (get_res != NW_VLEN) {
		*why = "the GET failed";
		return -EIO;
	}
	if (order[0] != 2) {
		*why = "the long op completed before the GET queued after it";
		return -EAGAIN;
	}
	return 0;
}

/*
 * Before the non-blocking issue (9b16c1b) every command ran inline in
 * io_uring_submit(), in SQE order, so the long op's completion always came
 * first. Now it is punted to a worker and the GET after it completes
 * inline. A submitter descheduled for the long op's whole run (a loaded
 * host) could still see it first: a majority of rounds must show the GET
 * first, which the old behaviour never does.
 */
#define NW_ROUNDS	3

TEST_F_TIMEOUT(races, uring_nowait_order, 3600)
{
	static const char *const what[2] = { "SCAN (1 MiB buffer)", "CHECK" };
	struct io_uring ring;
	struct pmidx_cmd op;
	uint8_t *buf;
	const char *why = "";
	static uint64_t big;	/* static: not clobbered by the harness's longjmp */
	static int res;
	uint64_t t0;
	int round, ret, kind, first;
	struct ctx c;

	ASSERT_EQ(0, ix_open(self->devpath, ixs[0].name, O_RDWR, &c));
	t0 = now_ns();
	ASSERT_EQ(0, fill(&c, 0, NW_KEYS, NW_VLEN));
	TH_LOG("%d keys put in %.1f s", NW_KEYS, (now_ns() - t0) / 1e9);
	buf = malloc(NW_SCAN_BUF);
	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, io_uring_queue_init(8, &ring, IORING_SETUP_SQE128 | IORING_SETUP_CQE32));
	for (kind = 0; kind < 2; kind++) {
		for (round = first = 0; round < NW_ROUNDS; round++) {
			if (!kind)
				op = (struct pmidx_cmd){ .op = PMIDX_OP_SCAN, .index = c.index,
					.count = NW_KEYS, .val = uptr(buf), .val_len = NW_SCAN_BUF };
			else
				op = (struct pmidx_cmd){ .op = PMIDX_OP_CHECK, .index = c.index };
			t0 = now_ns();
			ret = nw_round(&ring, c.fd, &op, c.index, &res, &big, &why);
			if (ret == -EAGAIN)
				TH_LOG("%s then GET, round %d: %s", what[kind], round, why);
			else
				ASSERT_EQ(0, ret) TH_LOG("%s then GET, round %d: %s", what[kind], round, why);
			first += !ret;
			if (!kind) {
				/* 32-byte records: the 1 MiB buffer fills first */
				ASSERT_EQ(NW_SCAN_BUF / 32, res);
				ASSERT_EQ(NW_SCAN_BUF | PMIDX_URING_SCAN_MORE, big);
			} else {
				ASSERT_EQ(0, res);
				ASSERT_EQ(NW_KEYS, big);
			}
			if (!round)
				TH_LOG("%s over %d keys + GET: %.1f ms", what[kind], NW_KEYS,
				       (now_ns() - t0) / 1e6);
		}
		ASSERT_LT(NW_ROUNDS / 2, first)
			TH_LOG("%s: the GET queued after it completed first in %d of %d rounds",
			       what[kind], first, NW_ROUNDS);
	}
	io_uring_queue_exit(&ring);
	free(buf);
	close(c.fd);
}

/* ---- 8: BATCH output cap ----------------------------------------------------------- */

#define OC_MIB		(1U << 20)

/* [0] PUT @key, then @n entries of @op with @len-byte buffers at @buf. */
static uint32_t oc_batch(struct pmidx_cmd *ents, uint32_t index, const char *key,
			 uint8_t op, uint32_t n, uint8_t *buf, uint32_t len)
{
	uint32_t i;

	ents[0] = (struct pmidx_cmd){ .op = PMIDX_OP_PUT, .index = index,
		.key = uptr(key), .key_len = strlen(key),
		.val = uptr("v"), .val_len = 1 };
	for (i = 1; i <= n; i++) {
		ents[i] = (struct pmidx_cmd){ .op = op, .index = index,
			.key = uptr(ANCHOR), .key_len = strlen(ANCHOR),
			.val = uptr(buf), .val_len = len };
		if (op == PMIDX_OP_SCAN)
			ents[i].count = 1;
	}
	return n + 1;
}

static int oc_run(const struct ctx *c, struct pmidx_cmd *ents, uint32_t n,
		  uint64_t *result)
{
	struct pmidx_cmd b = { .op = PMIDX_OP_BATCH, .val = uptr(ents),
			       .val_len = n * sizeof(*ents), .count = n };
	int ret = c->path->cmd(c->fd, &b);

	*result = b.result;
	return ret;
}

TEST_F_TIMEOUT(races, batch_out_cap, 600)
{
	static struct pmidx_cmd ents[PMIDX_BATCH_MAX];
	uint8_t *buf = malloc(2 * OC_MIB);
	const uint32_t max_mib = PMIDX_BATCH_OUT_MAX / OC_MIB;
	const uint32_t max_gets = PMIDX_BATCH_OUT_MAX / PMIDX_VALUE_MAX;
	char key[32], got[8];
	uint64_t result;
	uint32_t n, gl;
	struct ctx c;
	int p;

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, ix_open(self->devpath, ixs[0].name, O_RDWR, &c));
	ASSERT_EQ(0, op_put(&c, ANCHOR, strlen(ANCHOR), ANCHOR_VAL, strlen(ANCHOR_VAL), 0));
	for (p = 0; p < 2; p++) {
		c.path = paths[p];

		/* one 1 MiB SCAN too many: -E2BIG at that entry, the PUT never ran */
		snprintf(key, sizeof(key), "e2big-scan-%s", c.path->name);
		n = oc_batch(ents, c.index, key, PMIDX_OP_SCAN, max_mib + 1, buf, OC_MIB);
		ASSERT_EQ(-E2BIG, oc_run(&c, ents, n, &result)) TH_LOG("%s", c.path->name);
		ASSERT_EQ(max_mib + 1, result);
		gl = sizeof(got);
		ASSERT_EQ(-ENOENT, op_get(&c, key, strlen(key), got, &gl)) TH_LOG("%s", key);

		/* a SCAN buffer counts up to its 1 MiB cap: 16 of 2 MiB fit */
		snprintf(key, sizeof(key), "fits-scan-%s", c.path->name);
		n = oc_batch(ents, c.index, key, PMIDX_OP_SCAN, max_mib, buf, 2 * OC_MIB);
		ASSERT_EQ(0, oc_run(&c, ents, n, &result)) TH_LOG("%s", c.path->name);
		ASSERT_EQ(0, result);
		gl = sizeof(got);
		ASSERT_EQ(0, op_get(&c, key, strlen(key), got, &gl));

		/* GETs count up to PMIDX_VALUE_MAX each: exactly the cap runs */
		snprintf(key, sizeof(key), "fits-get-%s", c.path->name);
		n = oc_batch(ents, c.index, key, PMIDX_OP_GET, max_gets, buf, OC_MIB);
		ASSERT_EQ(0, oc_run(&c, ents, n, &result)) TH_LOG("%s", c.path->name);
		ASSERT_EQ(0, result);
		ASSERT_EQ(0, (int64_t)ents[1].result);
		ASSERT_EQ(strlen(ANCHOR_VAL), ents[1].val_len);
		gl = sizeof(got);
		ASSERT_EQ(0, op_get(&c, key, strlen(key), got, &gl));

		/* one GET more: -E2BIG, nothing ran */
		snprintf(key, sizeof(key), "e2big-get-%s", c.path->name);
		n = oc_batch(ents, c.index, key, PMIDX_OP_GET, max_gets + 1, buf, PMIDX_VALUE_MAX);
		ASSERT_EQ(-E2BIG, oc_run(&c, ents, n, &result)) TH_LOG("%s", c.path->name);
		ASSERT_EQ(max_gets + 1, result);
		gl = sizeof(got);
		ASSERT_EQ(-ENOENT, op_get(&c, key, strlen(key), got, &gl)) TH_LOG("%s", key);
	}
	close(c.fd);
	free(buf);
}

/* ---- main: PMIDX_RACE_ONLY, timeouts that follow PMIDX_RACE_SECS ------------------- */

int main(int argc, char **argv)
{
	const char *only = getenv("PMIDX_RACE_ONLY");
	unsigned int secs = race_secs();
	struct __test_metadata *t, *next, *tail;
	struct __fixture_metadata *f;
	char list[512], pat[80];

	snprintf(list, sizeof(list), ",%s,", only ?: "");
	for (f = __fixture_list; f; f = f->next) {
		tail = NULL;
		for (t = f->tests; t; t = next) {
			next = t->next;
			/* a race, its grace period and a slow setup, with room */
			if (t->timeout > 600)
				t->timeout = 300 + 3 * secs;
			snprintf(pat, sizeof(pat), ",%s,", t->name);
			if (only && !strstr(list, pat))
				continue;
			t->next = NULL;
			if (tail)
				tail->next = t;
			else
				f->tests = t;
			tail = t;
			f->tests->prev = t;
		}
		if (!tail)
			f->tests = NULL;
	}
	return test_harness_run(argc, argv);
}
