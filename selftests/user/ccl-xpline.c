// SPDX-License-Identifier: GPL-2.0
/*
 * ccl-xpline: the real engines in-process (userspace build) under the
 * XPLine write-amplification model (tools/testing/xpline.h), as in
 * CCL-BTree's sections 2.3 and 5.2: warm an index up with W 8-byte keys
 * (8-byte values), then measure N 16-byte writes. Per configuration it
 * prints 64-byte lines flushed per write, XPLines written to the media
 * per write, XBI amplification (media bytes written / 16 user bytes per
 * write) and CLI amplification (64 * lines / user bytes). Only the
 * measured phase is observed; the XPBuffer is drained at its end. The
 * ccl GC thread runs as in the kernel (ccl_th_log, default 20 %).
 *
 *   ccl-xpline [--engine all|ccl|utree|b3|lodge|pfart] [--nbatch LIST] [--naive]
 *              [--dist LIST] [--theta T] [--warm W] [--ops N]
 *              [--keyspace K] [--seed S] [--pool-size BYTES] [--th-log PCT]
 *              [--eadr] [--json FILE]
 *   ccl-xpline W [N]                  (the earlier form: --dist new)
 *
 *   --engine all   utree, b3, lodge, pfart, ccl with each --nbatch (default 1,2,3,4,5), and
 *                  ccl with the naive GC at the default N_batch (2)
 *   --engine ccl   ccl with each --nbatch (default 2); --naive: naive GC
 *   --dist         comma list of: uniform (upserts, items uniform over
 *                  the keyspace), zipf (upserts, scrambled zipfian over
 *                  the keyspace, --theta default 0.99), new (inserts of
 *                  fresh random keys: the earlier behaviour); default
 *                  uniform,zipf
 *   --warm W       keys inserted first, items 0..W-1 (default 1000000)
 *   --ops N        measured writes (default 1000000)
 *   --keyspace K   items the writes draw from (default W: every write
 *                  updates a warm key; K > W mixes in inserts)
 *   --th-log PCT   ccl's GC threshold (ccl_th_log: log bytes in % of leaf
 *                  bytes; default 20); a large value keeps GC out of the
 *                  measured phase, to see what GC costs
 *   --multi-split 0|1  lodge's hotness-aware multiple split (default on)
 *   --hot-t T      lodge's hotness factor t of Formula 1 (default 2)
 *   --eadr         attach the pools as eADR (flushes elided, the fence an
 *                  ordering barrier; pfart's adaptive flush: writes of up
 *                  to 256 bytes left to the cache, larger written back
 *                  without a fence); the XPLine model then sees only the
 *                  write-backs that remain
 *   --json FILE    one JSON object per configuration (xpline_json() plus
 *                  the configuration and engine counters), a line each
 *
 * Item i is the 8-byte key splitmix64(i) (a bijection of the u64s), so
 * keys land all over the tree whatever the distribution; the zipfian
 * ranks are scrambled besides (tools/bench/zipf.h), as YCSB does.
 *
 * Build: make -f tools/testing/user.mk build/user/pmidx-xpline-engines
 * (or make build/user/pmidx-xpline-engines from the top directory).
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <shim/shim.h>
#include "xpline.h"
#include "engines/ccl/ccl.h"
#include "engines/lodge/lodge.h"
#include "engines/pfart/pfart.h"
#include "../../tools/bench/zipf.h"

enum dist { D_UNIFORM, D_ZIPF, D_NEW };
static const char *const dist_name[] = { "uniform", "zipf", "new" };

struct cfg {
	u64		warm, ops, keyspace, seed, pool_size;
	double		theta;
	unsigned int	th_log;		/* ccl_th_log, 0: the default */
	int		multi;		/* lodge_multi_split, -1: the default */
	bool		eadr;		/* attach as eADR */
	FILE		*json;
};

static u64 item_key(u64 i)
{
	u64 x = i + 0x9e3779b97f4a7c15ULL;

	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static double secs_since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (t1.tv_sec - t0->tv_sec) + (t1.tv_nsec - t0->tv_nsec) / 1e9;
}

static u64 stat_of(struct pmidx_index *idx, unsigned int key)
{
	struct pmidx_stats s = {};

	if (idx->ops->stats)
		idx->ops->stats(idx, &s);
	return s.have & (1ULL << key) ? s.val[key] : 0;
}

/* pfart's adaptive flush: writes left to the cache, written back unfenced */
static void pfart_eadr_counts(struct pmidx_index *idx, u64 *skips, u64 *wbs)
{
	struct pfart *t = idx->priv;
	int cpu;

	*skips = 0;
	*wbs = 0;
	for_each_possible_cpu(cpu) {
		*skips += READ_ONCE(per_cpu_ptr(t->pcpu, cpu)->eadr_skips);
		*wbs += READ_ONCE(per_cpu_ptr(t->pcpu, cpu)->nofence_wbs);
	}
}

/* lodge's node splits; *multi: those into more than 2 pieces */
static u64 lodge_lin_splits(struct pmidx_index *idx, u64 *multi)
{
	struct lodge *t = idx->priv;
	u64 sum = 0;
	int cpu, i;

	*multi = 0;
	for_each_possible_cpu(cpu) {
		struct lodge_pcpu *c = per_cpu_ptr(t->st, cpu);

		sum += READ_ONCE(c->lin_splits);
		for (i = 3; i <= LODGE_MSPLIT_MAX; i++)
			*multi += READ_ONCE(c->pieces[i]);
	}
	return sum;
}

static u64 ccl_log_appends(struct pmidx_index *idx)
{
	struct ccl_tree *t = idx->priv;
	u64 sum = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		sum += READ_ONCE(per_cpu_ptr(t->st, cpu)->log_appends);
	return sum;
}

static int run(const struct cfg *c, enum dist d, u32 engine,
	       unsigned int nbatch, bool naive)
{
	struct xpline_config xc = { .no_chain = false };
	bool ccl = engine == PMIDX_ENGINE_CCL;
	bool lodge = engine == PMIDX_ENGINE_LODGE;
	bool pfart = engine == PMIDX_ENGINE_PFART;
	u64 sk0 = 0, wb0 = 0, sk, wb;
	u64 i, k, gc0 = 0, lf0 = 0, la0 = 0, gc, lf, la, lb0 = 0, ls0 = 0;
	u64 lm0 = 0, lm;
	struct pmidx_pmem_stats ps0, ps1;
	struct xpline_model *m;
	struct pmidx_index *idx;
	struct pmidx_pool *pool;
	struct xpline_stats st;
	struct zipf_gen z;
	struct timespec t0;
	const char *why = NULL;
	char label[64];
	double secs;
	void *img;

	if (zipf_init(&z, c->keyspace, d == D_ZIPF ? c->theta : 0, c->seed))
		return 1;
	img = mmap(NULL, c->pool_size, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (img == MAP_FAILED)
		return 1;
	if (ccl) {
		ccl_nbatch = nbatch;
		ccl_gc_naive = naive;
		ccl_log_chunk_kb = 4096;
		if (c->th_log)
			ccl_th_log = c->th_log;
	}
	if (lodge && c->multi >= 0)
		lodge_multi_split = c->multi;
	if (pmidx_pool_format(img, c->pool_size, true, &why))
		goto fail;
	pool = pmidx_pool_open(img, c->pool_size, c->eadr, &why);
	if (IS_ERR(pool)) {
		why = why ?: "pool open";
		goto fail;
	}
	if (pmidx_index_create(pool, "x", engine, &idx, &why))
		goto fail;
	for (i = 0; i < c->warm; i++) {
		k = item_key(i);
		if (idx->ops->put(idx, (u8 *)&k, 8, (u8 *)&i, 8, 0)) {
			why = "warm-up put";
			goto fail;
		}
	}
	if (ccl) {
		gc0 = stat_of(idx, PMIDX_STAT_GC_RUNS);
		lf0 = stat_of(idx, PMIDX_STAT_LEAF_FLUSHES);
		la0 = ccl_log_appends(idx);
	}
	if (lodge) {
		lf0 = stat_of(idx, PMIDX_STAT_LEAF_FLUSHES);
		lb0 = stat_of(idx, PMIDX_STAT_LOG_BYTES);
		ls0 = lodge_lin_splits(idx, &lm0);
	}
	if (pfart)
		pfart_eadr_counts(idx, &sk0, &wb0);
	pmidx_pmem_sum_stats(&pool->pm, &ps0);
	xc.base = img;
	xc.size = c->pool_size;
	m = xpline_new(&xc);
	if (!m)
		return 1;
	xpline_attach(m);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < c->ops; i++) {
		u64 it = d == D_ZIPF ? zipf_next_scrambled(&z) :
			 d == D_UNIFORM ? zipf_uniform(&z) : c->warm + i;

		k = item_key(it);
		if (idx->ops->put(idx, (u8 *)&k, 8, (u8 *)&i, 8, 0)) {
			why = "measured put";
			goto fail;
		}
	}
	secs = secs_since(&t0);
	pmidx_pmem_sum_stats(&pool->pm, &ps1);
	xpline_account(m, c->ops, 16 * c->ops);
	xpline_drain(m);
	xpline_get(m, &st);
	xpline_detach(m);
	gc = ccl ? stat_of(idx, PMIDX_STAT_GC_RUNS) - gc0 : 0;
	lf = ccl ? stat_of(idx, PMIDX_STAT_LEAF_FLUSHES) - lf0 : 0;
	la = ccl ? ccl_log_appends(idx) - la0 : 0;
	if (ccl)
		snprintf(label, sizeof(label), "ccl nbatch %u%s", nbatch,
			 naive ? " naive-gc" : "");
	else
		snprintf(label, sizeof(label), "%s", pmidx_engine_name(engine));
	printf("%-7s %-22s %s lines/op %6.3f  xplines/op %6.3f  XBI %6.2f  CLI %5.2f",
	       dist_name[d], label, c->eadr ? "eADR" : "ADR ", (double)st.lines / c->ops,
	       (double)st.xpline_writes / c->ops,
	       (double)st.media_write_bytes / (16.0 * c->ops),
	       64.0 * st.lines / (16.0 * c->ops));
	printf("  flushes/op %.3f  fences/op %.3f",
	       (double)(ps1.flushes - ps0.flushes) / c->ops,
	       (double)(ps1.fences - ps0.fences) / c->ops);
	if (ccl)
		printf("  log/op %.3f  leaf-flush/op %.3f  gc %llu",
		       (double)la / c->ops, (double)lf / c->ops,
		       (unsigned long long)gc);
	if (lodge) {
		u64 ls = lodge_lin_splits(idx, &lm) - ls0;

		printf("  multi %d t %u  log-bytes/op %.1f  leaf-writes/op %.3f  node-splits %llu (%llu multi-way)",
		       lodge_multi_split, lodge_hot_t,
		       (double)(stat_of(idx, PMIDX_STAT_LOG_BYTES) - lb0) / c->ops,
		       (double)(stat_of(idx, PMIDX_STAT_LEAF_FLUSHES) - lf0) / c->ops,
		       (unsigned long long)ls, (unsigned long long)(lm - lm0));
	}
	if (pfart) {
		pfart_eadr_counts(idx, &sk, &wb);
		printf("  left-to-cache/op %.3f  unfenced-writebacks/op %.3f",
		       (double)(sk - sk0) / c->ops, (double)(wb - wb0) / c->ops);
	}
	printf("  (%.1f s, %.2f Mops/s)\n", secs, c->ops / secs / 1e6);
	fflush(stdout);
	if (c->json) {
		fprintf(c->json, "{\"persist\":\"%s\",\"flushes\":%llu,\"fences\":%llu,",
			c->eadr ? "eadr" : "adr",
			(unsigned long long)(ps1.flushes - ps0.flushes),
			(unsigned long long)(ps1.fences - ps0.fences));
		fprintf(c->json, "\"dist\":\"%s\",\"theta\":%.3f,\"warm\":%llu,"
			"\"keyspace\":%llu,\"engine\":\"%s\",\"nbatch\":%u,"
			"\"naive_gc\":%s,\"log_appends\":%llu,\"leaf_flushes\":%llu,"
			"\"gc_runs\":%llu,\"model\":",
			dist_name[d], d == D_ZIPF ? c->theta : 0,
			(unsigned long long)c->warm,
			(unsigned long long)c->keyspace, ccl ? "ccl" : pmidx_engine_name(engine),
			ccl ? nbatch : 0, naive ? "true" : "false",
			(unsigned long long)la, (unsigned long long)lf,
			(unsigned long long)gc);
		xpline_json(c->json, label, &st);
		fprintf(c->json, "}\n");
		fflush(c->json);
	}
	xpline_free(m);
	pmidx_pool_close(pool);
	munmap(img, c->pool_size);
	return 0;
fail:
	fprintf(stderr, "ccl-xpline: %s\n", why ?: "failed");
	return 1;
}

static void usage(void)
{
	fprintf(stderr, "usage: ccl-xpline [--engine all|ccl|utree|b3|lodge|pfart] [--nbatch LIST] [--naive]\n"
		"                  [--dist uniform,zipf,new] [--theta T] [--warm W] [--ops N]\n"
		"                  [--keyspace K] [--seed S] [--pool-size BYTES] [--th-log PCT]\n"
		"                  [--multi-split 0|1] [--hot-t T] [--eadr] [--json FILE]\n"
		"       ccl-xpline W [N]\n");
	exit(2);
}

/* "1,2,5" or "1-5" into a bitmask of 1..CCL_NBATCH_MAX */
static unsigned int parse_nbatch(const char *s)
{
	unsigned int mask = 0;
	char *end;

	while (*s) {
		unsigned long a = strtoul(s, &end, 10), b = a;

		if (end == s)
			usage();
		if (*end == '-')
			b = strtoul(end + 1, &end, 10);
		if (!a || b < a || b > CCL_NBATCH_MAX)
			usage();
		for (; a <= b; a++)
			mask |= 1U << a;
		s = *end == ',' ? end + 1 : end;
		if (*end && *end != ',')
			usage();
	}
	return mask;
}

static unsigned int parse_dists(const char *s)
{
	unsigned int mask = 0, d;

	while (*s) {
		size_t n = strcspn(s, ",");

		for (d = 0; d < 3; d++)
			if (strlen(dist_name[d]) == n && !strncmp(s, dist_name[d], n))
				break;
		if (d == 3)
			usage();
		mask |= 1U << d;
		s += n + (s[n] == ',');
	}
	return mask;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "engine", 1, NULL, 'e' }, { "nbatch", 1, NULL, 'b' },
		{ "naive", 0, NULL, 'N' }, { "dist", 1, NULL, 'd' },
		{ "theta", 1, NULL, 't' }, { "warm", 1, NULL, 'w' },
		{ "ops", 1, NULL, 'n' }, { "keyspace", 1, NULL, 'k' },
		{ "seed", 1, NULL, 's' }, { "pool-size", 1, NULL, 'P' },
		{ "json", 1, NULL, 'j' }, { "th-log", 1, NULL, 'L' },
		{ "multi-split", 1, NULL, 'M' }, { "hot-t", 1, NULL, 'T' },
		{ "eadr", 0, NULL, 'E' },
		{ "help", 0, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct cfg c = { .warm = 1000000, .ops = 1000000, .theta = 0.99,
			 .seed = 1, .multi = -1 };
	const char *engine = "all";
	unsigned int nbmask = 0, dmask = 1U << D_UNIFORM | 1U << D_ZIPF;
	unsigned int d, nb;
	bool naive = false;
	int opt;

	while ((opt = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (opt) {
		case 'e': engine = optarg; break;
		case 'b': nbmask = parse_nbatch(optarg); break;
		case 'N': naive = true; break;
		case 'd': dmask = parse_dists(optarg); break;
		case 't': c.theta = strtod(optarg, NULL); break;
		case 'w': c.warm = strtoull(optarg, NULL, 0); break;
		case 'n': c.ops = strtoull(optarg, NULL, 0); break;
		case 'k': c.keyspace = strtoull(optarg, NULL, 0); break;
		case 's': c.seed = strtoull(optarg, NULL, 0); break;
		case 'P': c.pool_size = strtoull(optarg, NULL, 0); break;
		case 'L': c.th_log = strtoul(optarg, NULL, 0); break;
		case 'M': c.multi = !!atoi(optarg); break;
		case 'T': lodge_hot_t = strtoul(optarg, NULL, 0); break;
		case 'E': c.eadr = true; break;
		case 'j':
			c.json = fopen(optarg, "a");
			if (!c.json) {
				perror(optarg);
				return 1;
			}
			break;
		default: usage();
		}
	}
	if (optind < argc) {		/* ccl-xpline W [N]: random inserts */
		c.warm = strtoull(argv[optind], NULL, 0);
		c.ops = optind + 1 < argc ? strtoull(argv[optind + 1], NULL, 0) : 100000;
		dmask = 1U << D_NEW;
	}
	if (!c.keyspace)
		c.keyspace = c.warm;
	if (!c.ops || !c.keyspace || !(c.theta >= 0 && c.theta < 1) ||
	    (strcmp(engine, "all") && strcmp(engine, "ccl") && strcmp(engine, "utree") &&
	     strcmp(engine, "b3") && strcmp(engine, "lodge") && strcmp(engine, "pfart")))
		usage();
	if (!c.pool_size) {		/* generous: utree needs ~150 B a key */
		c.pool_size = (c.warm + c.ops) * 1024;
		if (c.pool_size < (1ULL << 30))
			c.pool_size = 1ULL << 30;
	}
	printf("# ccl-xpline: warm %llu, ops %llu, keyspace %llu, theta %.2f, ccl_th_log %u, "
	       "16-byte writes; XBI = media bytes / user bytes\n", (unsigned long long)c.warm,
	       (unsigned long long)c.ops, (unsigned long long)c.keyspace, c.theta,
	       c.th_log ?: ccl_th_log);
	for (d = 0; d < 3; d++) {
		if (!(dmask & 1U << d))
			continue;
		if (!strcmp(engine, "all") || !strcmp(engine, "utree"))
			if (run(&c, d, PMIDX_ENGINE_UTREE, 0, false))
				return 1;
		if (!strcmp(engine, "all") || !strcmp(engine, "b3"))
			if (run(&c, d, PMIDX_ENGINE_B3, 0, false))
				return 1;
		if (!strcmp(engine, "all") || !strcmp(engine, "lodge"))
			if (run(&c, d, PMIDX_ENGINE_LODGE, 0, false))
				return 1;
		if (!strcmp(engine, "all") || !strcmp(engine, "pfart"))
			if (run(&c, d, PMIDX_ENGINE_PFART, 0, false))
				return 1;
		if (!strcmp(engine, "utree") || !strcmp(engine, "b3") ||
		    !strcmp(engine, "lodge") || !strcmp(engine, "pfart"))
			continue;
		if (!nbmask)
			nbmask = !strcmp(engine, "all") ? 0x3e : 1U << 2;
		for (nb = 1; nb <= CCL_NBATCH_MAX; nb++)
			if (nbmask & 1U << nb)
				if (run(&c, d, PMIDX_ENGINE_CCL, nb,
					!strcmp(engine, "ccl") && naive))
					return 1;
		/* the paper's comparison: naive GC at the default N_batch */
		if (!strcmp(engine, "all") &&
		    run(&c, d, PMIDX_ENGINE_CCL, 2, true))
			return 1;
	}
	return 0;
}
