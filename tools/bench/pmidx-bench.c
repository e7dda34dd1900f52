// SPDX-License-Identifier: GPL-2.0
/*
 * pmidx-bench (first cut): throughput and latency of one workload on one
 * index through libpmidx, either in-process on a pool file (embedded
 * backend) or through a kernel pool's char device (ioctl backend).
 *
 *   pmidx-bench --path inproc:FILE|ioctl[:/dev/pmidxN] --engine E
 *               --workload load|C|update|scan --keys N [--ops N]
 *               [--threads T] [--value-size B] [--json FILE]
 *
 * load inserts keys 0..N-1 (big-endian u64, shuffled) and is always run
 * first; the named workload then runs on the loaded index. For inproc the
 * pool file is formatted and the index created with pmidx-poolfile; for
 * ioctl the pool must be attached and the index is created with pmidxctl.
 * Also reported for inproc: restart time after a clean close, and
 * recovery time of a crash image (a copy of the file taken while open).
 * io_uring, zipfian keys and --compare come with the full tool.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <pmidx.h>

struct opts {
	const char	*path;		/* pool file or device */
	bool		inproc;
	const char	*engine;
	const char	*workload;
	uint64_t	keys, ops;
	unsigned int	threads;
	unsigned int	vsize;
	const char	*json;
};

struct worker {
	pthread_t		tid;
	struct pmidx_index	*idx;
	const struct opts	*o;
	const char		*what;
	uint64_t		first, count;	/* op range */
	uint64_t		*lat;		/* ns per op */
	uint64_t		seed;
	int			err;
};

struct result {
	const char	*what;
	double		secs, mops;
	uint64_t	ops, p50, p99, p999, max;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/*
 * A fixed permutation of 0..n-1 so loads insert in scattered order:
 * multiplying by a prime that does not divide n is a bijection mod n.
 */
static uint64_t permute(uint64_t i, uint64_t n)
{
	return (unsigned __int128)i * 2654435761u % n;
}

static void *worker_fn(void *arg)
{
	struct worker *w = arg;
	unsigned char key[8], val[65536], out[65536];
	uint64_t i, k;

	memset(val, 0x5a, w->o->vsize);
	for (i = 0; i < w->count && !w->err; i++) {
		uint64_t t0 = now_ns(), op = w->first + i;
		size_t len = sizeof(out);

		if (!strcmp(w->what, "load"))
			k = permute(op, w->o->keys);
		else
			k = xorshift(&w->seed) % w->o->keys;
		pmidx_key_from_u64(k, key);
		memcpy(val, &op, w->o->vsize < 8 ? w->o->vsize : 8);
		if (!strcmp(w->what, "load")) {
			w->err = pmidx_put(w->idx, key, 8, val, w->o->vsize,
					   PMIDX_PUT_INSERT);
		} else if (!strcmp(w->what, "update")) {
			w->err = pmidx_put(w->idx, key, 8, val, w->o->vsize, 0);
		} else if (!strcmp(w->what, "C")) {
			w->err = pmidx_get(w->idx, key, 8, out, &len);
		} else {	/* scan: 100 records from a random key */
			struct pmidx_scan *s;
			struct pmidx_kv kv;
			int n = 0, r;

			w->err = pmidx_scan_open(w->idx, key, 8, NULL, 0, 100, 0, &s);
			while (!w->err && (r = pmidx_scan_next(s, &kv)) > 0)
				n++;
			if (!w->err) {
				w->err = r < 0 ? r : 0;
				pmidx_scan_close(s);
			}
			(void)n;
		}
		w->lat[i] = now_ns() - t0;
	}
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int run(struct pmidx_index *idx, const struct opts *o, const char *what,
	       uint64_t ops, struct result *r)
{
	struct worker *w = calloc(o->threads, sizeof(*w));
	uint64_t *all = malloc(ops * sizeof(*all)), t0, per;
	unsigned int t;
	int err = 0;

	if (!w || !all)
		return -ENOMEM;
	per = ops / o->threads;
	t0 = now_ns();
	for (t = 0; t < o->threads; t++) {
		w[t] = (struct worker){ .idx = idx, .o = o, .what = what,
			.first = t * per, .lat = all + t * per,
			.count = t == o->threads - 1 ? ops - t * per : per,
			.seed = 0x1234567ull * (t + 1) };
		pthread_create(&w[t].tid, NULL, worker_fn, &w[t]);
	}
	for (t = 0; t < o->threads; t++) {
		pthread_join(w[t].tid, NULL);
		if (w[t].err && !err)
			err = w[t].err;
	}
	r->secs = (now_ns() - t0) / 1e9;
	qsort(all, ops, sizeof(*all), cmp_u64);
	r->what = what;
	r->ops = ops;
	r->mops = ops / r->secs / 1e6;
	r->p50 = all[ops / 2];
	r->p99 = all[ops * 99 / 100];
	r->p999 = all[ops * 999 / 1000];
	r->max = all[ops - 1];
	free(all);
	free(w);
	return err;
}

static void print_result(const struct result *r)
{
	printf("%-8s %10" PRIu64 " ops %8.3f s %8.3f Mops/s  p50 %7.2f us  p99 %7.2f us  p99.9 %8.2f us  max %9.2f us\n",
	       r->what, r->ops, r->secs, r->mops, r->p50 / 1e3, r->p99 / 1e3,
	       r->p999 / 1e3, r->max / 1e3);
}

static int sh(const char *fmt, const char *a, const char *b, const char *c)
{
	char cmd[1024];

	snprintf(cmd, sizeof(cmd), fmt, a, b, c);
	return system(cmd) ? -EIO : 0;
}

static double open_time(const char *path)
{
	struct pmidx_pool *pool;
	uint64_t t0 = now_ns();

	if (pmidx_pool_open(path, 0, &pool))
		return -1;
	t0 = now_ns() - t0;
	pmidx_pool_close(pool);
	return t0 / 1e6;
}

static void usage(void)
{
	fprintf(stderr, "usage: pmidx-bench --path inproc:FILE|ioctl[:DEV] --engine E "
		"--workload load|C|update|scan --keys N [--ops N] [--threads T] "
		"[--value-size B] [--json FILE]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "path", 1, NULL, 'p' }, { "engine", 1, NULL, 'e' },
		{ "workload", 1, NULL, 'w' }, { "keys", 1, NULL, 'k' },
		{ "ops", 1, NULL, 'o' }, { "threads", 1, NULL, 't' },
		{ "value-size", 1, NULL, 'v' }, { "json", 1, NULL, 'j' },
		{ NULL, 0, NULL, 0 },
	};
	struct opts o = { .engine = "ccl", .workload = "C", .keys = 100000,
			  .threads = 1, .vsize = 8 };
	struct result res[2];
	struct pmidx_pool *pool;
	struct pmidx_index *idx;
	double restart = -1, recovery = -1;
	char crash[4200];
	int c, ret, nres = 0, i;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'p':
			o.inproc = !strncmp(optarg, "inproc:", 7);
			o.path = o.inproc ? optarg + 7 :
				 !strncmp(optarg, "ioctl:", 6) ? optarg + 6 :
				 "/dev/pmidx0";
			if (!o.inproc && strncmp(optarg, "ioctl", 5))
				usage();
			break;
		case 'e': o.engine = optarg; break;
		case 'w': o.workload = optarg; break;
		case 'k': o.keys = strtoull(optarg, NULL, 0); break;
		case 'o': o.ops = strtoull(optarg, NULL, 0); break;
		case 't': o.threads = atoi(optarg); break;
		case 'v': o.vsize = atoi(optarg); break;
		case 'j': o.json = optarg; break;
		default: usage();
		}
	}
	if (!o.path || !o.keys || !o.threads || o.vsize > 65536)
		usage();
	if (!o.ops)
		o.ops = o.keys;

	/* setup: a fresh index named bench-ENGINE */
	if (o.inproc) {
		if (sh("build/user/pmidx-poolfile format %s 4G --force >/dev/null && "
		       "build/user/pmidx-poolfile create-index %s bench --engine %s >/dev/null",
		       o.path, o.path, o.engine))
			return 1;
	} else {
		sh("build/bin/pmidxctl drop-index bench >/dev/null 2>&1%s%s%s", "", "", "");
		if (sh("build/bin/pmidxctl create-index bench --engine %s >/dev/null%s%s",
		       o.engine, "", ""))
			return 1;
	}
	ret = pmidx_pool_open(o.path, 0, &pool);
	if (!ret)
		ret = pmidx_index_open(pool, "bench", &idx);
	if (ret) {
		fprintf(stderr, "pmidx-bench: %s: %s\n", o.path, pmidx_strerror(ret));
		return 1;
	}
	ret = run(idx, &o, "load", o.keys, &res[nres++]);
	if (!ret && strcmp(o.workload, "load"))
		ret = run(idx, &o, o.workload, o.ops, &res[nres++]);
	if (ret) {
		fprintf(stderr, "pmidx-bench: %s\n", pmidx_strerror(ret));
		return 1;
	}
	if (o.inproc) {
		/* a copy of the attached file is what a power cut leaves */
		snprintf(crash, sizeof(crash), "%s.crash", o.path);
		sh("cp --sparse=always %s %s%s", o.path, crash, "");
	}
	pmidx_index_close(idx);
	pmidx_pool_close(pool);
	if (o.inproc) {
		restart = open_time(o.path);
		recovery = open_time(crash);
		unlink(crash);
	}

	printf("pmidx-bench: %s engine %s, %u thread(s), %" PRIu64 " keys, %u-byte values\n",
	       o.inproc ? "inproc" : "ioctl", o.engine, o.threads, o.keys, o.vsize);
	for (i = 0; i < nres; i++)
		print_result(&res[i]);
	if (o.inproc)
		printf("restart after clean close %.1f ms, recovery of a crash image %.1f ms\n",
		       restart, recovery);
	if (o.json) {
		FILE *f = fopen(o.json, "w");

		if (!f)
			return 1;
		fprintf(f, "{\"path\":\"%s\",\"engine\":\"%s\",\"threads\":%u,\"keys\":%" PRIu64
			",\"value_size\":%u,\"restart_ms\":%.3f,\"recovery_ms\":%.3f,\"results\":[",
			o.inproc ? "inproc" : "ioctl", o.engine, o.threads, o.keys,
			o.vsize, restart, recovery);
		for (i = 0; i < nres; i++)
			fprintf(f, "%s{\"workload\":\"%s\",\"ops\":%" PRIu64 ",\"secs\":%.6f,"
				"\"mops\":%.6f,\"p50_ns\":%" PRIu64 ",\"p99_ns\":%" PRIu64
				",\"p999_ns\":%" PRIu64 ",\"max_ns\":%" PRIu64 "}",
				i ? "," : "", res[i].what, res[i].ops, res[i].secs,
				res[i].mops, res[i].p50, res[i].p99, res[i].p999, res[i].max);
		fprintf(f, "]}\n");
		fclose(f);
	}
	return 0;
}
