// SPDX-License-Identifier: GPL-2.0
/*
 * recovery-time: attach time of a pool file holding one index of N keys
 * (userspace build, the real engines), after a power cut and after a
 * clean close.
 *
 *   recovery-time [--engine all|ccl|utree|b3|lodge|pfart] [--keys N[,N...]] [--dir DIR]
 *                 [--threads T] [--repeat R] [--pool-size BYTES]
 *                 [--rec-threads W] [--json FILE] [--keep]
 *
 * Per engine and key count: format DIR/rt-ENGINE-N.pool, create an index,
 * load N 8-byte keys with 8-byte values (T threads, default 2; upserts of
 * splitmix64(i), big-endian, so the keys land all over the tree), then
 *
 *   crash image  a copy of the attached file, taken while attached: what
 *                an eADR power cut leaves (the CPU caches are persistent,
 *                so the file's page cache is the media). The image is
 *                taken once the engine is quiescent (no writer; ccl's GC
 *                thread idle and held off by its lock for the copy), so
 *                every repeat recovers the same state: DRAM buffer nodes
 *                lost, their KVs in the WAL.
 *   clean close  the original is detached cleanly (close time reported:
 *                ccl flushes its buffers then), then re-attached R times.
 *
 * Each of the R crash repeats attaches a fresh copy of the image (holes
 * kept). Reported: wall time of pmidx_pool_file_open() (map + attach +
 * engine recovery) and the pool's own recovery_ns (attach-time recovery,
 * as `pmidxctl stats` shows it), min and median over R (pfart: also the
 * part of it that rebuilt the leaf arrays' DRAM metadata); the first repeat
 * also checks the structure and the key count (not timed). Recovery runs
 * on the shim's CPUs (PMIDX_SHIM_NR_CPUS, default 16) whatever the host
 * has; --rec-threads W sets lodge's recovery workers
 * (lodge_recovery_threads, default 0: the shim's CPUs), and lodge reports
 * the workers it used and the records it replayed. Set PMIDX_PMEM_HW=1 to issue real clwb/sfence on the page cache as
 * the benchmarks do.
 *
 * Build: make -f tools/testing/user.mk build/user/pmidx-recovery-time
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <shim/shim.h>
#include "pool_file.h"
#include "core/engine.h"
#include "engines/ccl/ccl.h"
#include "engines/lodge/lodge.h"
#include "engines/pfart/pfart.h"

struct cfg {
	const char	*dir;
	unsigned int	threads, repeat, rec_threads;
	u64		pool_size;
	bool		keep;
	FILE		*json;
};

struct loader {
	pthread_t		tid;
	struct pmidx_index	*idx;
	u64			first, count;
	int			err;
};

static u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void item_key(u64 i, u8 *key)
{
	u64 x = i + 0x9e3779b97f4a7c15ULL;
	int b;

	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	x ^= x >> 31;
	for (b = 7; b >= 0; b--, x >>= 8)
		key[b] = x;
}

static void *load_fn(void *arg)
{
	struct loader *l = arg;
	u8 key[8];
	u64 i;

	for (i = l->first; i < l->first + l->count && !l->err; i++) {
		item_key(i, key);
		l->err = l->idx->ops->put(l->idx, key, 8, (u8 *)&i, 8, 0);
	}
	return NULL;
}

/* Copy @len bytes at @src into a new file @path, leaving zero pages as holes. */
static int write_image(const char *path, const u8 *src, u64 len)
{
	static const u8 zero[4096];
	int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0600);
	u64 off;

	if (fd < 0)
		return -errno;
	if (ftruncate(fd, len))
		goto err;
	for (off = 0; off < len; off += 4096) {
		size_t n = len - off < 4096 ? len - off : 4096;

		if (!memcmp(src + off, zero, n))
			continue;
		if (pwrite(fd, src + off, n, off) != (ssize_t)n)
			goto err;
	}
	if (close(fd))
		return -errno;
	return 0;
err:
	close(fd);
	return -EIO;
}

/* A copy of the file @from into @to, holes kept. */
static int copy_file(const char *from, const char *to)
{
	struct pmidx_pool_file *pf;
	const char *why = NULL;
	int ret;

	/* a private read mapping of the image: nothing is attached */
	ret = pmidx_pool_file_map(from, 0, PMIDX_PF_PRIVATE, &pf, &why);
	if (ret)
		return ret;
	ret = write_image(to, pf->base, pf->size);
	pmidx_pool_file_unmap(pf);
	return ret;
}

/* ccl: wait for the GC thread to go idle, then hold it off. */
static void quiesce(struct pmidx_index *idx, bool hold)
{
	struct ccl_tree *t;
	u64 runs;

	if (idx->ops->id != PMIDX_ENGINE_CCL)
		return;
	t = idx->priv;
	if (!hold) {
		mutex_unlock(&t->gc_lock);
		return;
	}
	do {
		runs = atomic64_read(&t->gc.runs);
		usleep(200000);
	} while (runs != atomic64_read(&t->gc.runs) || test_bit(0, &t->gc.kicked));
	mutex_lock(&t->gc_lock);
}

static int cmp_u64(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? -1 : x > y;
}

struct timing {
	u64	wall[64], rec[64], meta[64];	/* meta: pfart's leaf metadata */
};

static void summary(const char *what, struct timing *t, unsigned int r,
		    double *out)
{
	qsort(t->wall, r, sizeof(u64), cmp_u64);
	qsort(t->rec, r, sizeof(u64), cmp_u64);
	qsort(t->meta, r, sizeof(u64), cmp_u64);
	out[0] = t->wall[0] / 1e6;
	out[1] = t->wall[r / 2] / 1e6;
	out[2] = t->rec[0] / 1e6;
	out[3] = t->rec[r / 2] / 1e6;
	out[4] = t->meta[0] / 1e6;
	out[5] = t->meta[r / 2] / 1e6;
	printf("  %-26s attach %9.1f ms (median %9.1f)   recovery_ns %9.1f ms (median %9.1f)",
	       what, out[0], out[1], out[2], out[3]);
	if (t->meta[r / 2])
		printf("   leaf metadata %9.1f ms (median %9.1f)", out[4], out[5]);
	printf("\n");
}

/* Attach @path, time it, optionally check it holds @keys keys, detach. */
static int attach(const char *path, u64 keys, bool check, u64 *wall, u64 *rec,
		  u64 *meta, u64 *replayed, unsigned int *workers)
{
	struct pmidx_pool_file *pf;
	struct pmidx_index *idx;
	const char *why = NULL;
	u64 t0 = now_ns(), n = 0;
	int ret;

	ret = pmidx_pool_file_open(path, 0, &pf, &why);
	*wall = now_ns() - t0;
	if (ret) {
		fprintf(stderr, "recovery-time: %s: %s\n", path, why ?: strerror(-ret));
		return ret;
	}
	*rec = pf->pool->recovery_ns;
	idx = pmidx_index_lookup(pf->pool, "rt");
	if (idx && idx->ops->id == PMIDX_ENGINE_CCL)
		*replayed = ((struct ccl_tree *)idx->priv)->replayed;
	if (idx && idx->ops->id == PMIDX_ENGINE_LODGE) {
		*replayed = ((struct lodge *)idx->priv)->replayed;
		*workers = ((struct lodge *)idx->priv)->recovery_threads;
	}
	*meta = 0;
	if (idx && idx->ops->id == PMIDX_ENGINE_PFART)
		*meta = ((struct pfart *)idx->priv)->meta_ns;
	if (check) {
		ret = !idx ? -ENOENT : idx->ops->check(idx, &n, &why);
		if (!ret && n != keys) {
			why = "key count";
			ret = -EUCLEAN;
		}
		if (ret)
			fprintf(stderr, "recovery-time: %s: check: %s (%llu keys of %llu)\n",
				path, why ?: strerror(-ret), (unsigned long long)n,
				(unsigned long long)keys);
	}
	pmidx_pool_file_close(pf);
	return ret;
}

static int run(const struct cfg *c, u32 engine, u64 keys)
{
	const char *name = pmidx_engine_name(engine), *why = NULL;
	char path[4096], crash[4200], try[4200];
	struct pmidx_pool_file *pf;
	struct pmidx_index *idx;
	struct loader *l;
	struct timing tc, tr;
	double crash_ms[6], restart_ms[6], load_s, close_ms, copy_ms;
	u64 t0, per, size = c->pool_size, replayed = 0, dummy = 0;
	unsigned int i, cw = 0, rw = 0;
	int ret;

	if (!size) {			/* utree: ~150 B a key; sparse anyway */
		size = keys * 320 + (512ULL << 20);
		size = (size + (1ULL << 30) - 1) & ~((1ULL << 30) - 1);
	}
	snprintf(path, sizeof(path), "%s/rt-%s-%llu.pool", c->dir, name,
		 (unsigned long long)keys);
	snprintf(crash, sizeof(crash), "%s.crash", path);
	snprintf(try, sizeof(try), "%s.try", path);
	ret = pmidx_pool_file_format(path, size, PMIDX_PF_CREATE | PMIDX_PF_FORCE, &why);
	if (!ret)
		ret = pmidx_pool_file_open(path, 0, &pf, &why);
	if (ret)
		goto fail;
	ret = pmidx_index_create(pf->pool, "rt", engine, &idx, &why);
	if (ret)
		goto fail;

	l = calloc(c->threads, sizeof(*l));
	per = keys / c->threads;
	t0 = now_ns();
	for (i = 0; i < c->threads; i++) {
		l[i] = (struct loader){ .idx = idx, .first = i * per,
			.count = i == c->threads - 1 ? keys - i * per : per };
		pthread_create(&l[i].tid, NULL, load_fn, &l[i]);
	}
	for (i = 0; i < c->threads; i++) {
		pthread_join(l[i].tid, NULL);
		ret = ret ?: l[i].err;
	}
	load_s = (now_ns() - t0) / 1e9;
	free(l);
	if (ret) {
		why = "load";
		goto fail;
	}

	quiesce(idx, true);
	t0 = now_ns();
	ret = write_image(crash, pf->base, pf->size);
	copy_ms = (now_ns() - t0) / 1e6;
	quiesce(idx, false);
	if (ret) {
		why = "crash image";
		goto fail;
	}
	t0 = now_ns();
	pmidx_pool_file_close(pf);
	close_ms = (now_ns() - t0) / 1e6;

	printf("%s, %llu keys: load %.1f s (%.2f Mops/s, %u threads), pool %llu MiB, "
	       "image copy %.0f ms, clean close %.1f ms\n", name,
	       (unsigned long long)keys, load_s, keys / load_s / 1e6, c->threads,
	       (unsigned long long)(size >> 20), copy_ms, close_ms);
	for (i = 0; i < c->repeat; i++) {
		ret = copy_file(crash, try);
		if (!ret)
			ret = attach(try, keys, i == 0, &tc.wall[i], &tc.rec[i],
				     &tc.meta[i], &replayed, &cw);
		unlink(try);
		if (ret) {
			why = "crash image recovery";
			goto fail;
		}
	}
	for (i = 0; i < c->repeat; i++) {
		ret = attach(path, keys, i == 0, &tr.wall[i], &tr.rec[i],
			     &tr.meta[i], &dummy, &rw);
		if (ret) {
			why = "restart";
			goto fail;
		}
	}
	if (engine == PMIDX_ENGINE_CCL)
		printf("  crash image: %llu log entries replayed\n",
		       (unsigned long long)replayed);
	if (engine == PMIDX_ENGINE_LODGE)
		printf("  crash image: %llu log records replayed, %u recovery threads; restart: %u\n",
		       (unsigned long long)replayed, cw, rw);
	summary("crash image (eADR cut)", &tc, c->repeat, crash_ms);
	summary("restart after clean close", &tr, c->repeat, restart_ms);
	fflush(stdout);
	if (c->json)
		fprintf(c->json, "{\"engine\":\"%s\",\"keys\":%llu,\"threads\":%u,"
			"\"shim_cpus\":%u,\"repeat\":%u,\"load_s\":%.3f,\"close_ms\":%.3f,"
			"\"replayed\":%llu,\"rec_threads\":{\"crash\":%u,\"restart\":%u},"
			"\"crash_attach_ms\":{\"min\":%.3f,\"median\":%.3f},"
			"\"crash_recovery_ms\":{\"min\":%.3f,\"median\":%.3f},"
			"\"restart_attach_ms\":{\"min\":%.3f,\"median\":%.3f},"
			"\"restart_recovery_ms\":{\"min\":%.3f,\"median\":%.3f},"
			"\"crash_meta_ms\":{\"min\":%.3f,\"median\":%.3f},"
			"\"restart_meta_ms\":{\"min\":%.3f,\"median\":%.3f}}\n",
			name, (unsigned long long)keys, c->threads, nr_cpu_ids,
			c->repeat, load_s, close_ms,
			(unsigned long long)replayed, cw, rw, crash_ms[0], crash_ms[1],
			crash_ms[2], crash_ms[3], restart_ms[0], restart_ms[1],
			restart_ms[2], restart_ms[3], crash_ms[4], crash_ms[5],
			restart_ms[4], restart_ms[5]);
	if (!c->keep) {
		unlink(crash);
		unlink(path);
	}
	return 0;
fail:
	fprintf(stderr, "recovery-time: %s %llu keys: %s: %s\n", name,
		(unsigned long long)keys, why ?: "failed", strerror(ret < 0 ? -ret : EIO));
	return 1;
}

static void usage(void)
{
	fprintf(stderr, "usage: recovery-time [--engine all|ccl|utree|b3|lodge|pfart] [--keys N[,N...]] "
		"[--dir DIR] [--threads T]\n"
		"                     [--repeat R] [--pool-size BYTES] [--rec-threads W] [--json FILE] [--keep]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "engine", 1, NULL, 'e' }, { "keys", 1, NULL, 'k' },
		{ "dir", 1, NULL, 'd' }, { "threads", 1, NULL, 't' },
		{ "repeat", 1, NULL, 'r' }, { "pool-size", 1, NULL, 'P' },
		{ "json", 1, NULL, 'j' }, { "keep", 0, NULL, 'K' },
		{ "rec-threads", 1, NULL, 'W' },
		{ NULL, 0, NULL, 0 },
	};
	struct cfg c = { .dir = "/tmp", .threads = 2, .repeat = 3 };
	const char *engine = "all", *keylist = "1000000,10000000", *s;
	int opt, e;

	while ((opt = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (opt) {
		case 'e': engine = optarg; break;
		case 'k': keylist = optarg; break;
		case 'd': c.dir = optarg; break;
		case 't': c.threads = atoi(optarg); break;
		case 'r': c.repeat = atoi(optarg); break;
		case 'P': c.pool_size = pmidx_parse_size(optarg); break;
		case 'j':
			c.json = fopen(optarg, "a");
			if (!c.json) {
				perror(optarg);
				return 1;
			}
			break;
		case 'K': c.keep = true; break;
		case 'W': c.rec_threads = atoi(optarg); break;
		default: usage();
		}
	}
	if (optind < argc || !c.threads || c.threads > 64 || !c.repeat ||
	    c.repeat > 64 || (strcmp(engine, "all") && strcmp(engine, "ccl") &&
			      strcmp(engine, "utree") && strcmp(engine, "b3") &&
			      strcmp(engine, "lodge") && strcmp(engine, "pfart")))
		usage();
	lodge_recovery_threads = c.rec_threads;
	printf("# recovery-time: shim CPUs %u, PMIDX_PMEM_HW=%s, %u repeats, lodge recovery threads %u (0: the CPUs), min (median)\n",
	       nr_cpu_ids, getenv("PMIDX_PMEM_HW") ?: "(unset)", c.repeat,
	       c.rec_threads);
	for (s = keylist; *s; ) {
		char *end;
		u64 keys = strtoull(s, &end, 0);

		if (end == s || !keys || (*end && *end != ','))
			usage();
		s = *end ? end + 1 : end;
		for (e = 0; e < 5; e++) {
			static const u32 ids[] = {
				PMIDX_ENGINE_UTREE, PMIDX_ENGINE_CCL, PMIDX_ENGINE_B3,
				PMIDX_ENGINE_LODGE, PMIDX_ENGINE_PFART,
			};
			u32 engine_id = ids[e];

			if (strcmp(engine, "all") &&
			    strcmp(engine, pmidx_engine_name(engine_id)))
				continue;
			if (run(&c, engine_id, keys))
				return 1;
		}
	}
	return 0;
}
