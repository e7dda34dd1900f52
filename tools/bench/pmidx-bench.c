// SPDX-License-Identifier: GPL-2.0
/*
 * pmidx-bench: throughput and latency of pmidx indexes through every
 * path: libpmidx's sync API over ioctls, its rings over io_uring
 * passthrough (queue depth, BATCH commands), in-process on a pool file,
 * and the in-kernel API through the sample client; and, as the baseline,
 * the same workloads on LMDB. YCSB-style workloads on uniform or zipfian
 * keys; a table of ops/s and latency percentiles, JSON, and a compare
 * mode that runs several configurations in one invocation and gives
 * their ratios against the first. See usage().
 *
 * Files: run.c (phases, threads, progress), workload.c (operation mixes
 * and keys), path_sync.c, path_uring.c, path_kernel.c, path_lmdb.c (the
 * paths), stats.c (histograms, table, JSON), zipf.c (zipfian generator).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

#define MAX_CONFIGS	16
#define DEFAULT_DEV	"/dev/pmidx0"
#define POOLFILE_SIZE	"4G"

extern char **environ;

static void usage(FILE *f)
{
	fprintf(f,
"usage: pmidx-bench [OPTION]... [--compare SPEC...]\n"
"\n"
"Load an index, then run a workload on it, and print ops/s and latency.\n"
"\n"
"  --path P          ioctl[:DEV]   libpmidx sync API over PMIDX_IOC_CMD\n"
"                    uring[:DEV]   libpmidx rings over io_uring passthrough\n"
"                    inproc:FILE   a pool file in this process (formatted\n"
"                                  with pmidx-poolfile, " POOLFILE_SIZE ")\n"
"                    kapi:FILE     the in-kernel API's calls on a pool file\n"
"                                  in this process (as inproc): the index\n"
"                                  held for the run, one engine call per\n"
"                                  op on this thread's buffers\n"
"                    kernel[:DEV]  the in-kernel API through the sample\n"
"                                  client /dev/pmidx_dentry (insmod\n"
"                                  samples/pmidx_dentry/pmidx_dentry.ko):\n"
"                                  load, insert, update, C, delete only,\n"
"                                  sequential keys, mean latency only\n"
"                    lmdb:DIR      the baseline: LMDB in directory DIR\n"
"                                  (ext4 -o dax on pmem), MDB_WRITEMAP,\n"
"                                  synced at every commit, one transaction\n"
"                                  per --batch ops; --engine is ignored\n"
"                    DEV defaults to " DEFAULT_DEV "\n"
"  --engine E        ccl (default), utree, b3, ...: engine of the index\n"
"  --workload W      load         insert keys 0..N-1 (always run first)\n"
"                    A            50%% reads, 50%% updates\n"
"                    B            95%% reads, 5%% updates\n"
"                    C            reads only (default)\n"
"                    E            95%% scans of 1..100 records, 5%% inserts\n"
"                    insert       inserts of new keys only\n"
"                    update       updates only\n"
"                    delete       deletes of loaded keys, each once\n"
"                    scan         scans of 100 records only\n"
"  --keys N          keys loaded (default 100000)\n"
"  --ops N           operations of the workload (default: --keys)\n"
"  --threads T       threads, each with its own ring on the uring path\n"
"  --dist D          uniform (default), zipfian or sequential: keys\n"
"                    of reads, updates and scans (sequential: each\n"
"                    thread walks its share of 0..keys-1 in order and\n"
"                    wraps, as the kernel path does)\n"
"  --theta X         zipfian constant in [0, 1) (default 0.99)\n"
"  --key-size B      8..255 (default 8): big-endian number, then padding\n"
"  --value-size B    0..65536 (default 8)\n"
"  --qd N            uring: ring entries in flight per thread (default 16)\n"
"  --batch N         ops per BATCH command, 1..1024 (default 1: one op per\n"
"                    SQE or ioctl); uring and ioctl paths; lmdb: ops per\n"
"                    transaction\n"
"  --sqpoll          uring: a kernel thread polls the submission queue\n"
"                    (PMIDX_RING_SQPOLL)\n"
"  --sample N        sync paths, one op per call: take the latency of one\n"
"                    operation in N (default 1: every one); ops/s counts\n"
"                    them all. Two clock reads per op are ~4 %% of an\n"
"                    in-process get (the papers' own drivers time phases\n"
"                    only)\n"
"  --index NAME      index to use (default \"" BENCH_INDEX "\")\n"
"  --no-create       use the existing index (pool file, lmdb DIR) as it\n"
"                    is; otherwise the index is dropped and created again\n"
"  --no-load         skip the load phase\n"
"  --phases LIST     run these phases in order on one index instead of\n"
"                    load + --workload: LIST is comma-separated workload\n"
"                    names (get = C), e.g. load,update,get,scan,delete;\n"
"                    each is reported (at most %d)\n"
"  --prefault        inproc, kapi: make every page of the pool file's\n"
"                    mapping present and writable before the first phase,\n"
"                    so no timed operation takes a page fault (commits the\n"
"                    whole pool's memory on tmpfs)\n"
"  --volatile-baseline\n"
"                    inproc, kapi: run each configuration again with\n"
"                    the pmem backend in volatile mode (no write-back, no\n"
"                    fence: PMIDX_PMEM_HW=volatile) on a fresh pool, and\n"
"                    print persistent/volatile ops/s per phase\n"
"  --seed S          seed of the key generators\n"
"  --json FILE       write the results as JSON\n"
"  --compare SPEC... run one configuration per SPEC, each the options\n"
"                    above changed by SPEC = KEY=VALUE[,KEY=VALUE]... with\n"
"                    KEY one of path, engine, workload, keys, ops, threads,\n"
"                    dist, theta, key-size, value-size, qd, batch,\n"
"                    sample, sqpoll (0 or 1), phases\n"
"                    (its LIST separated by +: phases=load+get); ratios\n"
"                    of ops/s are against the first SPEC, phase by phase\n"
"                    (at most %d SPECs, anywhere on the command line)\n"
"\n"
"Latency: per operation around the call (sync paths) or from queueing to\n"
"completion (uring; the ops of one BATCH share its latency). A progress\n"
"line is drawn on stderr when it is a terminal. The inproc and kapi paths\n"
"also print the cache lines written back (clwb) and the fences (sfence) per\n"
"operation of each phase, from the pool's counters (counted in every\n"
"pmem mode, background work such as ccl's GC included).\n"
"\n"
"Example:\n"
"  pmidx-bench --workload C --keys 200000 --compare path=ioctl \\\n"
"      path=uring,qd=1 path=uring,qd=16 path=uring,qd=64,batch=16\n"
"  pmidx-bench --workload A --keys 20000 --compare path=ioctl \\\n"
"      path=uring,qd=64,batch=16 path=lmdb:/mnt/dax/lmdb \\\n"
"      path=lmdb:/mnt/dax/lmdb,batch=16\n"
"  PMIDX_PMEM_HW=clwb pmidx-bench --path inproc:/dev/shm/p --keys 1000000 \\\n"
"      --prefault --phases load,update,get,scan,delete --ops 100000 \\\n"
"      --volatile-baseline\n",
		BENCH_MAX_PHASES, MAX_CONFIGS);
}

/* ---- options ------------------------------------------------------------ */

static int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 0);
	if (errno || end == s || *end || *v < min || *v > max)
		return -EINVAL;
	return 0;
}

static int parse_uint(const char *s, unsigned int min, unsigned int max,
		      unsigned int *v)
{
	uint64_t x;
	int ret = parse_u64(s, min, max, &x);

	*v = x;
	return ret;
}

static int parse_path(struct bench_cfg *c, const char *s)
{
	static const struct {
		const char *name;
		enum bench_path path;
	} paths[] = {
		{ "ioctl", PATH_IOCTL }, { "uring", PATH_URING },
		{ "inproc", PATH_INPROC }, { "kernel", PATH_KERNEL },
		{ "lmdb", PATH_LMDB }, { "kapi", PATH_KAPI },
	};
	const char *colon = strchr(s, ':');
	size_t len = colon ? (size_t)(colon - s) : strlen(s);
	unsigned int i;

	for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		if (strlen(paths[i].name) != len || strncmp(s, paths[i].name, len))
			continue;
		c->path = paths[i].path;
		c->target = colon ? colon + 1 : DEFAULT_DEV;
		if ((PATH_ON_FILE(c->path) || c->path == PATH_LMDB) &&
		    (!colon || !colon[1]))
			return -EINVAL;
		return 0;
	}
	return -EINVAL;
}

static int parse_dist(struct bench_cfg *c, const char *s)
{
	if (!strcmp(s, "uniform"))
		c->dist = DIST_UNIFORM;
	else if (!strcmp(s, "zipfian") || !strcmp(s, "zipf"))
		c->dist = DIST_ZIPF;
	else if (!strcmp(s, "sequential") || !strcmp(s, "seq"))
		c->dist = DIST_SEQUENTIAL;
	else
		return -EINVAL;
	return 0;
}

/* "load,update,get": workload names separated by @sep */
static int parse_phases(struct bench_cfg *c, const char *s, const char *sep)
{
	char buf[256], *save, *w;

	if (strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	c->nphases = 0;
	for (w = strtok_r(buf, sep, &save); w; w = strtok_r(NULL, sep, &save)) {
		if (c->nphases == BENCH_MAX_PHASES ||
		    wl_parse(w, &c->phases[c->nphases]))
			return -EINVAL;
		c->nphases++;
	}
	return c->nphases ? 0 : -EINVAL;
}

static int parse_theta(struct bench_cfg *c, const char *s)
{
	char *end;

	c->theta = strtod(s, &end);
	return end == s || *end || c->theta < 0 || c->theta >= 1 ? -EINVAL : 0;
}

/* Set option @name (a long option or a compare KEY) to @v. */
static int set_opt(struct bench_cfg *c, const char *name, const char *v)
{
	if (!strcmp(name, "path"))
		return parse_path(c, v);
	if (!strcmp(name, "engine"))
		return (c->engine = v) && *v ? 0 : -EINVAL;
	if (!strcmp(name, "workload"))
		return wl_parse(v, &c->wl);
	if (!strcmp(name, "keys"))
		return parse_u64(v, 1, UINT32_MAX, &c->keys);
	if (!strcmp(name, "ops"))
		return parse_u64(v, 1, UINT64_MAX / 2, &c->ops);
	if (!strcmp(name, "threads"))
		return parse_uint(v, 1, 1024, &c->threads);
	if (!strcmp(name, "dist"))
		return parse_dist(c, v);
	if (!strcmp(name, "theta"))
		return parse_theta(c, v);
	if (!strcmp(name, "key-size"))
		return parse_uint(v, PMIDX_U64_KEY_LEN, PMIDX_KEY_MAX, &c->key_size);
	if (!strcmp(name, "value-size"))
		return parse_uint(v, 0, PMIDX_VALUE_MAX, &c->value_size);
	if (!strcmp(name, "qd"))
		return parse_uint(v, 1, PMIDX_RING_DEPTH_MAX, &c->qd);
	if (!strcmp(name, "batch"))
		return parse_uint(v, 1, PMIDX_BATCH_MAX, &c->batch);
	if (!strcmp(name, "sample"))
		return parse_uint(v, 1, 1U << 20, &c->sample);
	if (!strcmp(name, "sqpoll")) {
		unsigned int on;

		if (parse_uint(v, 0, 1, &on))
			return -EINVAL;
		c->sqpoll = on;
		return 0;
	}
	if (!strcmp(name, "index"))
		return (c->index = v) && *v ? 0 : -EINVAL;
	if (!strcmp(name, "seed"))
		return parse_u64(v, 0, UINT64_MAX, &c->seed);
	if (!strcmp(name, "phases"))
		return parse_phases(c, v, ",+");
	return -ENOENT;
}

/* A compare SPEC applied to a copy of the base configuration. */
static int apply_spec(struct bench_cfg *c, char *spec)
{
	char *save, *kv, *eq;
	int ret;

	snprintf(c->label, sizeof(c->label), "%s", spec);
	for (kv = strtok_r(spec, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
		eq = strchr(kv, '=');
		if (!eq)
			return -EINVAL;
		*eq = 0;
		ret = set_opt(c, kv, eq + 1);
		if (ret) {
			fprintf(stderr, "pmidx-bench: --compare: bad %s=%s\n", kv, eq + 1);
			return ret;
		}
	}
	return 0;
}

struct options {
	struct bench_cfg	base;
	const char		*json;
	bool			compare;
	bool			volatile_baseline;
	char			**specs;
	int			nspecs;
};

static int parse_options(int argc, char **argv, struct options *o)
{
	static const struct option lo[] = {
		{ "path", 1, NULL, 0 }, { "engine", 1, NULL, 0 },
		{ "workload", 1, NULL, 0 }, { "keys", 1, NULL, 0 },
		{ "ops", 1, NULL, 0 }, { "threads", 1, NULL, 0 },
		{ "dist", 1, NULL, 0 }, { "theta", 1, NULL, 0 },
		{ "key-size", 1, NULL, 0 }, { "value-size", 1, NULL, 0 },
		{ "qd", 1, NULL, 0 }, { "batch", 1, NULL, 0 },
		{ "sample", 1, NULL, 0 },
		{ "index", 1, NULL, 0 }, { "seed", 1, NULL, 0 },
		{ "phases", 1, NULL, 0 }, { "prefault", 0, NULL, 'P' },
		{ "sqpoll", 0, NULL, 'S' },
		{ "volatile-baseline", 0, NULL, 'V' },
		{ "json", 1, NULL, 'j' }, { "no-create", 0, NULL, 'C' },
		{ "no-load", 0, NULL, 'L' }, { "compare", 0, NULL, 'c' },
		{ "help", 0, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	int c, li;

	while ((c = getopt_long(argc, argv, "h", lo, &li)) != -1) {
		switch (c) {
		case 0:
			if (set_opt(&o->base, lo[li].name, optarg)) {
				fprintf(stderr, "pmidx-bench: bad --%s %s\n",
					lo[li].name, optarg);
				return -EINVAL;
			}
			break;
		case 'j': o->json = optarg; break;
		case 'C': o->base.create = false; break;
		case 'L': o->base.load = false; break;
		case 'c': o->compare = true; break;
		case 'P': o->base.prefault = true; break;
		case 'S': o->base.sqpoll = true; break;
		case 'V': o->volatile_baseline = true; break;
		case 'h': usage(stdout); exit(0);
		default: return -EINVAL;
		}
	}
	/* the SPECs: every argument that is not an option */
	o->specs = argv + optind;
	o->nspecs = argc - optind;
	if (o->compare != (o->nspecs > 0) || o->nspecs > MAX_CONFIGS)
		return -EINVAL;
	return 0;
}

/* ---- setting the index up ------------------------------------------------ */

/*
 * Run a helper tool quietly: @rel if absolute, else @rel next to our own
 * binary, unless the environment variable @env names another.
 */
static int tool(const char *env, const char *rel, const char *const *args,
		bool quiet)
{
	char self[PATH_MAX], exe[PATH_MAX + 32], *argv[16];
	posix_spawn_file_actions_t fa;
	ssize_t n;
	int i, status;
	pid_t pid;

	if (env && getenv(env)) {
		snprintf(exe, sizeof(exe), "%s", getenv(env));
	} else if (rel[0] == '/') {
		snprintf(exe, sizeof(exe), "%s", rel);
	} else {
		n = readlink("/proc/self/exe", self, sizeof(self) - 1);
		if (n < 0)
			return -errno;
		self[n] = 0;
		snprintf(exe, sizeof(exe), "%s/%s", dirname(self), rel);
	}
	argv[0] = exe;
	for (i = 0; args[i] && i < 14; i++)
		argv[i + 1] = (char *)args[i];
	argv[i + 1] = NULL;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
	if (quiet)
		posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null",
						 O_WRONLY, 0);
	i = posix_spawn(&pid, exe, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (i)
		return -i;
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	return WIFEXITED(status) && !WEXITSTATUS(status) ? 0 : -EIO;
}

static int ctl(const char *const *args, bool quiet)
{
	return tool("PMIDX_CTL", "pmidxctl", args, quiet);
}

/* A fresh, empty index: a new pool file, or the index dropped and made. */
static int setup_index(const struct bench_cfg *c)
{
	const char *base = strrchr(c->target, '/');
	const char *pool = base ? base + 1 : c->target;

	if (PATH_ON_FILE(c->path)) {
		const char *fmt[] = { "format", c->target, POOLFILE_SIZE, "--force", NULL };
		const char *mk[] = { "create-index", c->target, c->index,
				     "--engine", c->engine, NULL };

		if (tool("PMIDX_POOLFILE", "../user/pmidx-poolfile", fmt, false))
			return -EIO;
		return tool("PMIDX_POOLFILE", "../user/pmidx-poolfile", mk, false);
	} else {
		const char *drop[] = { "drop-index", c->index, "--pool", pool, NULL };
		const char *mk[] = { "create-index", c->index, "--engine",
				     c->engine, "--pool", pool, NULL };

		ctl(drop, true);	/* there may be none yet */
		return ctl(mk, false);
	}
}

/* ---- one configuration ----------------------------------------------------- */

static const struct bench_path_ops *path_ops(enum bench_path p)
{
	switch (p) {
	case PATH_URING:
		return &bench_path_uring;
	case PATH_KERNEL:
		return &bench_path_kernel;
	case PATH_LMDB:
		return &bench_path_lmdb;
	case PATH_KAPI:
		return &bench_path_kapi;
	default:
		return &bench_path_sync;
	}
}

static double open_ms(const char *path)
{
	struct pmidx_pool *pool;
	uint64_t t0 = bench_now_ns();
	int ret;

	ret = pmidx_pool_open(path, 0, &pool);
	if (ret) {
		fprintf(stderr, "pmidx-bench: %s: %s\n", path, pmidx_strerror(ret));
		return -1;
	}
	t0 = bench_now_ns() - t0;
	pmidx_pool_close(pool);
	return t0 / 1e6;
}

/*
 * inproc: restart time after a clean close, and recovery time of a crash
 * image (a copy of the file taken while the pool was open).
 */
static void inproc_copy(const struct bench_cfg *c, char *crash, size_t len)
{
	const char *cp[] = { "--sparse=always", c->target, crash, NULL };

	snprintf(crash, len, "%s.crash", c->target);
	if (tool(NULL, "/bin/cp", cp, false)) {
		fprintf(stderr, "pmidx-bench: cannot copy %s\n", c->target);
		crash[0] = 0;
	}
}

static void inproc_times(struct bench_report *rep, const char *crash)
{
	rep->restart_ms = open_ms(rep->cfg.target);
	rep->recovery_ms = crash[0] ? open_ms(crash) : -1;
	if (crash[0])
		unlink(crash);
}

/* One phase; on a pool file, its flushes and fences per op too. */
static int run_phase(struct bench_run *run, struct bench_report *rep,
		     enum bench_wl wl)
{
	struct bench_result *res = &rep->res[rep->nres++];
	uint64_t f0, s0, f1, s1;
	bool pm;
	int ret;

	pm = PATH_ON_FILE(run->cfg->path) && run->pool &&
	     !pmidx_embedded_pmem_counters(run->pool, &f0, &s0);
	ret = bench_phase(run, wl, res);
	if (!ret && pm && res->ops &&
	    !pmidx_embedded_pmem_counters(run->pool, &f1, &s1)) {
		res->has_pm = true;
		res->flushes_per_op = (double)(f1 - f0) / res->ops;
		res->fences_per_op = (double)(s1 - s0) / res->ops;
	}
	return ret;
}

static int run_phases(struct bench_run *run, struct bench_report *rep)
{
	const struct bench_cfg *c = run->cfg;
	unsigned int i;
	int ret = 0;

	for (i = 0; !ret && i < c->nphases; i++)
		ret = run_phase(run, rep, c->phases[i]);
	if (c->nphases)
		return ret;
	if (c->load || c->wl == WL_LOAD)
		ret = run_phase(run, rep, WL_LOAD);
	if (!ret && c->wl != WL_LOAD)
		ret = run_phase(run, rep, c->wl);
	return ret;
}

static int run_config(struct bench_report *rep)
{
	const struct bench_cfg *c = &rep->cfg;
	struct bench_run run = { .cfg = c, .ops = path_ops(c->path) };
	char crash[PATH_MAX + 8] = "";
	int ret;

	rep->restart_ms = rep->recovery_ms = -1;
	/* lmdb: its path makes the environment afresh itself */
	if (c->create && c->path != PATH_LMDB && setup_index(c)) {
		fprintf(stderr, "pmidx-bench: cannot create index %s (engine %s) on %s\n",
			c->index, c->engine, c->target);
		return -EIO;
	}
	ret = wl_proto(c, &run.proto);
	if (!ret)
		ret = run.ops->open(&run);
	if (ret) {
		/* the lmdb path has said what failed, in LMDB's words */
		if (c->path != PATH_LMDB)
			fprintf(stderr, "pmidx-bench: %s: %s\n", c->target,
				pmidx_strerror(ret));
		return ret;
	}
	if (PATH_ON_FILE(c->path))
		rep->pmem_hw = pmidx_embedded_pmem_hw();
	if (c->prefault) {
		ret = pmidx_embedded_prefault(run.pool);
		if (ret)
			fprintf(stderr, "pmidx-bench: --prefault: %s\n",
				pmidx_strerror(ret));
	}
	if (!ret)
		ret = run_phases(&run, rep);
	if (!ret && PATH_ON_FILE(c->path) && !c->twin)
		inproc_copy(c, crash, sizeof(crash));
	run.ops->close(&run);
	if (!ret && PATH_ON_FILE(c->path) && !c->twin)
		inproc_times(rep, crash);
	return ret;
}

static bool kernel_can(enum bench_wl wl)
{
	return wl == WL_LOAD || wl == WL_INSERT || wl == WL_UPDATE ||
	       wl == WL_C || wl == WL_DELETE;
}

static int check_cfg(const struct bench_cfg *c, bool volatile_baseline)
{
	unsigned int i;

	if ((c->prefault || volatile_baseline) && !PATH_ON_FILE(c->path)) {
		fprintf(stderr, "pmidx-bench: --prefault and --volatile-baseline need a pool file (inproc, kapi)\n");
		return -EINVAL;
	}
	if (volatile_baseline && !c->create) {
		fprintf(stderr, "pmidx-bench: --volatile-baseline runs on a fresh pool: not with --no-create\n");
		return -EINVAL;
	}
	for (i = 0; c->path == PATH_KERNEL && i < c->nphases; i++) {
		if (!kernel_can(c->phases[i])) {
			fprintf(stderr, "pmidx-bench: the kernel path runs load, insert, update, C and delete only\n");
			return -EINVAL;
		}
	}
	if (c->batch > 1 && c->path != PATH_URING && c->path != PATH_IOCTL &&
	    c->path != PATH_LMDB) {
		fprintf(stderr, "pmidx-bench: --batch needs the uring, ioctl or lmdb path\n");
		return -EINVAL;
	}
	if (c->path == PATH_KERNEL && !kernel_can(c->wl)) {
		fprintf(stderr, "pmidx-bench: the kernel path runs load, insert, update, C and delete only\n");
		return -EINVAL;
	}
	return 0;
}

/*
 * --volatile-baseline: @rep's configuration again, on a fresh pool, with
 * the pmem backend forced to volatile; its results go to @rep->vres.
 */
static int run_twin(struct bench_report *rep)
{
	static struct bench_report twin;
	int ret;

	memset(&twin, 0, sizeof(twin));
	twin.cfg = rep->cfg;
	twin.cfg.twin = true;
	ret = pmidx_embedded_force_pmem_hw("volatile");
	if (!ret)
		ret = run_config(&twin);
	pmidx_embedded_force_pmem_hw(NULL);
	if (ret)
		return ret;
	memcpy(rep->vres, twin.res, sizeof(twin.res));
	rep->nvres = twin.nres;
	return 0;
}

int main(int argc, char **argv)
{
	static struct bench_report rep[MAX_CONFIGS];
	struct options o = { .base = {
		.path = PATH_IOCTL, .target = DEFAULT_DEV, .engine = "ccl",
		.index = BENCH_INDEX, .wl = WL_C, .theta = 0.99,
		.keys = 100000, .threads = 1, .qd = 16, .batch = 1, .sample = 1,
		.key_size = PMIDX_U64_KEY_LEN, .value_size = 8, .seed = 1,
		.create = true, .load = true,
	} };
	int i, n, ret;

	if (parse_options(argc, argv, &o)) {
		usage(stderr);
		return 2;
	}
	n = o.nspecs ? o.nspecs : 1;
	for (i = 0; i < n; i++) {
		rep[i].cfg = o.base;
		if (o.nspecs && apply_spec(&rep[i].cfg, o.specs[i]))
			return 2;
		if (!rep[i].cfg.ops)
			rep[i].cfg.ops = rep[i].cfg.keys;
		if (rep[i].cfg.path == PATH_LMDB)
			rep[i].cfg.engine = "lmdb";
		if (check_cfg(&rep[i].cfg, o.volatile_baseline))
			return 2;
	}
	for (i = 0; i < n; i++) {
		if (o.nspecs && isatty(STDERR_FILENO))
			fprintf(stderr, "[%d/%d] %s\n", i + 1, n, rep[i].cfg.label);
		ret = run_config(&rep[i]);
		if (!ret && o.volatile_baseline)
			ret = run_twin(&rep[i]);
		if (ret)
			return 1;
	}
	bench_print_table(rep, n);
	if (o.json) {
		ret = bench_write_json(o.json, rep, n, o.nspecs > 0);
		if (ret) {
			fprintf(stderr, "pmidx-bench: %s: %s\n", o.json, strerror(-ret));
			return 1;
		}
	}
	return 0;
}
