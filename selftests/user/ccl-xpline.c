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
 *   --node-slots S, --t-node N, --t-split T, --leaf-bytes B, --log-kb K
 *                  lodge's lodge_node_slots (8..250), lodge_t_node (1..8),
 *                  lodge_t_split, lodge_leaf_bytes, lodge_log_kb (module
 *                  parameters, read at open; defaults 29, 2, 26, 512, 8)
 *   --burst L      keys per burst of seqburst and cluster (default 10000)
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
 * ranks are scrambled besides (tools/bench/zipf.h), as YCSB does. Keys
 * compare as bytes (memcmp), so the distributions with key locality
 * write their keys big-endian:
 *
 *   seqburst  inserts of fresh keys in ascending runs of --burst keys
 *             (a fixed step apart), each run from a random point of the
 *             key space: a write burst into one key range that advances,
 *             the case the multiple split (§III-C of LodgeTree) is for
 *   cluster   the same bursts, the keys of a burst drawn at random from
 *             its range (as wide as the seqburst run) instead of in order
 *   hot       inserts of fresh random keys, 80 % of them into one fifth
 *             of the key space (the LodgeTree paper's "insert with strong
 *             locality": 80 % of the insertions for 20 % of the data)
 *
 * lodge (every run) also gets its media bytes broken down by where they
 * were written (xpline_config.classify, lodge_src() below): log records,
 * log management (log headers, directory, the root's vhwm), leaf merges
 * (slot lines, the commit line), leaf splits (the new leaves, and the
 * split leaf's lines and commit), blobs; and its flush counters: KVs per
 * leaf write, buffer KVs per flush, writes absorbed by the buffer, the
 * buffer parts at the end.
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
#include "core/blob.h"
#include "engines/lodge/lodge.h"
#include "engines/pfart/pfart.h"
#include "../../tools/bench/zipf.h"

enum dist { D_UNIFORM, D_ZIPF, D_NEW, D_SEQBURST, D_CLUSTER, D_HOT, D_NR };
static const char *const dist_name[] = { "uniform", "zipf", "new", "seqburst",
					 "cluster", "hot" };

struct cfg {
	u64		warm, ops, keyspace, seed, pool_size, burst;
	double		theta;
	unsigned int	th_log;		/* ccl_th_log, 0: the default */
	int		multi;		/* lodge_multi_split, -1: the default */
	bool		eadr;		/* attach as eADR */
	FILE		*json;
};

#define BURST_STEP	(1ULL << 16)	/* between the keys of a seqburst */

static u64 item_key(u64 i)
{
	u64 x = i + 0x9e3779b97f4a7c15ULL;

	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* The key of measured write @i (@it: its item, for uniform/zipf/new). */
static u64 op_key(const struct cfg *c, enum dist d, u64 i, u64 it)
{
	u64 b = i / c->burst, base, r;

	switch (d) {
	case D_SEQBURST:
	case D_CLUSTER:
		/* a random start, room for the run below 2^64 */
		base = item_key((1ULL << 62) + b) >> 1;
		r = d == D_SEQBURST ? i % c->burst :
		    item_key((1ULL << 61) + i) % c->burst;
		return __builtin_bswap64(base + r * BURST_STEP +
					 (d == D_CLUSTER ?
					  item_key((1ULL << 60) + i) % BURST_STEP : 0));
	case D_HOT:
		/* 80 %: [0, 2^64 / 5); else the rest */
		r = item_key((1ULL << 59) + i);
		base = UINT64_MAX / 5;
		return __builtin_bswap64(item_key((1ULL << 58) + i) % 100 < 80 ?
					 r % base : base + r % (UINT64_MAX - base));
	default:
		return item_key(it);
	}
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

/* lodge's counters that STATS does not carry (struct lodge_pcpu) */
struct lodge_ctr {
	u64	leaf_writes, leaf_splits, kvs_flushed, rounds, round_buf;
	u64	absorbed, capped, drains, log_frees;
};

static void lodge_ctrs(struct pmidx_index *idx, struct lodge_ctr *r)
{
	struct lodge *t = idx->priv;
	int cpu;

	memset(r, 0, sizeof(*r));
	for_each_possible_cpu(cpu) {
		struct lodge_pcpu *c = per_cpu_ptr(t->st, cpu);

		r->leaf_writes += READ_ONCE(c->leaf_writes);
		r->leaf_splits += READ_ONCE(c->leaf_splits);
		r->kvs_flushed += READ_ONCE(c->kvs_flushed);
		r->rounds += READ_ONCE(c->rounds);
		r->round_buf += READ_ONCE(c->round_buf);
		r->absorbed += READ_ONCE(c->absorbed);
		r->capped += READ_ONCE(c->capped);
		r->drains += READ_ONCE(c->drains);
		r->log_frees += READ_ONCE(c->log_frees);
	}
}

static void lodge_ctr_sub(struct lodge_ctr *a, const struct lodge_ctr *b)
{
	u64 *x = (u64 *)a;
	const u64 *y = (const u64 *)b;
	size_t i;

	for (i = 0; i < sizeof(*a) / sizeof(u64); i++)
		x[i] -= y[i];
}

/* The last-level nodes at the end: how full their buffer parts are. */
struct lodge_occ {
	u64	lins, idx, buf, room;	/* room: buffer part slots */
};

static int lodge_occ_visit(struct lodge *t, struct lodge_lin *x, void *ctx)
{
	struct lodge_occ *o = ctx;

	o->lins++;
	o->idx += x->nidx;
	o->buf += x->nbuf;
	o->room += x->cap - x->nidx;
	return 0;
}

/*
 * Where lodge's flushes go (xpline_config.classify): by the allocator
 * object the flushed range lies in (its size class says leaf, log or
 * directory; a blob has its header's length check) and, for a leaf, by
 * whether the index names it yet: a leaf the DRAM index does not name at
 * its fence is a split's new leaf, and the split lasts until the commit
 * line of a leaf it names (the split leaf's). Else slot lines are a
 * merge's data and the header its commit (a direct delete and an unlink
 * write the header alone: none here).
 */
enum {
	SRC_LOGREC, SRC_LOGMETA, SRC_MERGE_DATA, SRC_MERGE_COMMIT, SRC_SPLIT,
	SRC_BLOB, SRC_OTHER, SRC_NR
};
static const char *const src_name[SRC_NR] = {
	"log-rec", "log-meta", "merge-data", "merge-commit", "split", "blob",
	"other"
};

struct lodge_src_ctx {
	struct pmidx_index	*idx;
	bool			in_split;
};

/* Does the DRAM index name leaf @off (at its fence)? */
static bool lodge_named(struct lodge *t, u64 off)
{
	struct lodge_leaf *l = lodge_leaf_ptr(t, off);
	struct lodge_lin *x;
	const u8 *k;
	u32 len;

	k = lodge_leaf_fence(t, l, &len);
	x = lodge_find(t, k, len);
	return x->slot[lodge_lin_leaf(x, k, len)].w == off;
}

static unsigned int lodge_src(void *priv, u64 off, size_t len)
{
	struct lodge_src_ctx *cx = priv;
	struct lodge *t = cx->idx->priv;
	struct pmidx_alloc *a = &cx->idx->pool->alloc;
	const struct pmidx_blob *bl;
	struct pmidx_chunk *ch;
	u64 coff, sz, obj, in;
	u32 ci;

	if (off >= cx->idx->root && off < cx->idx->root + PMIDX_INDEX_ROOT_SIZE)
		return SRC_LOGMETA;		/* vhwm */
	if (off < a->data_off)
		return SRC_OTHER;
	ci = (off - a->data_off) >> PMIDX_CHUNK_SHIFT;
	if (ci >= a->nr_chunks)
		return SRC_OTHER;
	ch = &a->chunks[ci];
	if (ch->type != PMIDX_CHUNK_SLAB)
		return SRC_OTHER;
	coff = a->data_off + ((u64)ci << PMIDX_CHUNK_SHIFT);
	sz = (u64)PMIDX_MIN_OBJ << ch->class;
	obj = coff + ((off - coff) & ~(sz - 1));
	in = off - obj;
	bl = pmidx_ptr(&cx->idx->pool->pm, obj);
	if (le32_to_cpu(bl->len_check) == ~le32_to_cpu(bl->len) &&
	    le32_to_cpu(bl->len) + sizeof(*bl) <= sz)
		return SRC_BLOB;
	if (t->dir && obj == pmidx_off(&cx->idx->pool->pm, t->dir))
		return SRC_LOGMETA;
	if (sz == t->log_size)
		return in < LODGE_LOG_HDR ? SRC_LOGMETA : SRC_LOGREC;
	if (sz != t->leaf_size || !t->top)
		return SRC_OTHER;
	if (!lodge_named(t, obj)) {
		cx->in_split = true;
		return SRC_SPLIT;
	}
	if (cx->in_split) {
		if (in < LODGE_LEAF_HDR)
			cx->in_split = false;	/* the split leaf's commit */
		return SRC_SPLIT;
	}
	return in < LODGE_LEAF_HDR ? SRC_MERGE_COMMIT : SRC_MERGE_DATA;
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
	u64 lm0 = 0, lm = 0, ls = 0, lb = 0, dram;
	struct lodge_src_ctx sx = {};
	struct lodge_ctr lc0 = {}, lc = {};
	struct lodge_occ occ = {};
	struct pmidx_pmem_stats ps0, ps1;
	struct xpline_model *m;
	struct pmidx_index *idx;
	struct pmidx_pool *pool;
	struct xpline_stats st;
	struct zipf_gen z;
	struct timespec t0;
	const char *why = NULL;
	char label[64];
	double secs, ops = c->ops;
	unsigned int s;
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
		lodge_ctrs(idx, &lc0);
		sx.idx = idx;
		xc.classify = lodge_src;
		xc.classify_priv = &sx;
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

		k = op_key(c, d, i, it);
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
	dram = stat_of(idx, PMIDX_STAT_DRAM_BYTES);
	if (ccl)
		snprintf(label, sizeof(label), "ccl nbatch %u%s", nbatch,
			 naive ? " naive-gc" : "");
	else if (lodge)
		snprintf(label, sizeof(label), "lodge S%u tn%u", lodge_node_slots,
			 lodge_t_node);
	else
		snprintf(label, sizeof(label), "%s", pmidx_engine_name(engine));
	printf("%-8s %-22s %s lines/op %6.3f  xplines/op %6.3f  XBI %6.2f  CLI %5.2f",
	       dist_name[d], label, c->eadr ? "eADR" : "ADR ", st.lines / ops,
	       st.xpline_writes / ops, st.media_write_bytes / (16.0 * ops),
	       64.0 * st.lines / (16.0 * ops));
	printf("  flushes/op %.3f  fences/op %.3f  dram %.1f MB",
	       (ps1.flushes - ps0.flushes) / ops, (ps1.fences - ps0.fences) / ops,
	       dram / 1e6);
	if (ccl)
		printf("  log/op %.3f  leaf-flush/op %.3f  gc %llu",
		       la / ops, lf / ops, (unsigned long long)gc);
	if (lodge) {
		struct lodge *t = idx->priv;

		ls = lodge_lin_splits(idx, &lm) - ls0;
		lm -= lm0;
		lb = stat_of(idx, PMIDX_STAT_LOG_BYTES) - lb0;
		lodge_ctrs(idx, &lc);
		lodge_ctr_sub(&lc, &lc0);
		percpu_down_read(&t->tree);
		lodge_walk_lins(t, lodge_occ_visit, &occ);
		percpu_up_read(&t->tree);
		printf("  multi %d t %u  log-bytes/op %.1f  leaf-writes/op %.3f  node-splits %llu (%llu multi-way, %llu capped)",
		       lodge_multi_split, lodge_hot_t, lb / ops,
		       lc.leaf_writes / ops, (unsigned long long)ls,
		       (unsigned long long)lm, (unsigned long long)lc.capped);
	}
	if (pfart) {
		pfart_eadr_counts(idx, &sk, &wb);
		printf("  left-to-cache/op %.3f  unfenced-writebacks/op %.3f",
		       (sk - sk0) / ops, (wb - wb0) / ops);
	}
	printf("  (%.1f s)\n", secs);
	if (lodge) {
		printf("         by source (lines/op, XBI):");
		for (s = 0; s < SRC_NR; s++)
			if (st.cls_lines[s] || st.cls_media_bytes[s])
				printf("  %s %.3f %.2f", src_name[s],
				       st.cls_lines[s] / ops,
				       st.cls_media_bytes[s] / (16.0 * ops));
		printf("\n         flush: KVs/leaf-write %.2f  buffer KVs/flush %.1f  leaves/flush %.2f  absorbed/op %.3f  leaf-splits/op %.4f  drains %llu  logs freed %llu\n",
		       lc.leaf_writes ? (double)lc.kvs_flushed / lc.leaf_writes : 0,
		       lc.rounds ? (double)lc.round_buf / lc.rounds : 0,
		       lc.rounds ? (double)lc.leaf_writes / lc.rounds : 0,
		       lc.absorbed / ops, lc.leaf_splits / ops,
		       (unsigned long long)lc.drains,
		       (unsigned long long)lc.log_frees);
		printf("         end: %llu nodes, index part %.1f, buffer part %.1f slots holding %.1f KVs\n",
		       (unsigned long long)occ.lins,
		       occ.lins ? (double)occ.idx / occ.lins : 0,
		       occ.lins ? (double)occ.room / occ.lins : 0,
		       occ.lins ? (double)occ.buf / occ.lins : 0);
	}
	fflush(stdout);
	if (c->json) {
		fprintf(c->json, "{\"persist\":\"%s\",\"flushes\":%llu,\"fences\":%llu,",
			c->eadr ? "eadr" : "adr",
			(unsigned long long)(ps1.flushes - ps0.flushes),
			(unsigned long long)(ps1.fences - ps0.fences));
		fprintf(c->json, "\"dist\":\"%s\",\"theta\":%.3f,\"warm\":%llu,"
			"\"keyspace\":%llu,\"burst\":%llu,\"engine\":\"%s\",\"nbatch\":%u,"
			"\"naive_gc\":%s,\"log_appends\":%llu,\"leaf_flushes\":%llu,"
			"\"gc_runs\":%llu,\"dram_bytes\":%llu,",
			dist_name[d], d == D_ZIPF ? c->theta : 0,
			(unsigned long long)c->warm,
			(unsigned long long)c->keyspace, (unsigned long long)c->burst,
			ccl ? "ccl" : pmidx_engine_name(engine),
			ccl ? nbatch : 0, naive ? "true" : "false",
			(unsigned long long)la, (unsigned long long)lf,
			(unsigned long long)gc, (unsigned long long)dram);
		if (lodge) {
			fprintf(c->json, "\"lodge\":{\"node_slots\":%u,\"t_node\":%u,"
				"\"t_split\":%u,\"leaf_bytes\":%u,\"log_kb\":%u,"
				"\"multi_split\":%d,\"hot_t\":%u,\"log_bytes\":%llu,"
				"\"node_splits\":%llu,\"multi_way\":%llu,",
				lodge_node_slots, lodge_t_node, lodge_t_split,
				lodge_leaf_bytes, lodge_log_kb, lodge_multi_split,
				lodge_hot_t, (unsigned long long)lb,
				(unsigned long long)ls, (unsigned long long)lm);
			fprintf(c->json, "\"leaf_writes\":%llu,\"leaf_splits\":%llu,"
				"\"kvs_flushed\":%llu,\"flush_rounds\":%llu,"
				"\"round_buf\":%llu,\"absorbed\":%llu,\"capped\":%llu,"
				"\"drains\":%llu,\"log_frees\":%llu,\"end_nodes\":%llu,"
				"\"end_index\":%llu,\"end_room\":%llu,\"end_buf\":%llu,"
				"\"by_source\":{",
				(unsigned long long)lc.leaf_writes,
				(unsigned long long)lc.leaf_splits,
				(unsigned long long)lc.kvs_flushed,
				(unsigned long long)lc.rounds,
				(unsigned long long)lc.round_buf,
				(unsigned long long)lc.absorbed,
				(unsigned long long)lc.capped,
				(unsigned long long)lc.drains,
				(unsigned long long)lc.log_frees,
				(unsigned long long)occ.lins,
				(unsigned long long)occ.idx,
				(unsigned long long)occ.room,
				(unsigned long long)occ.buf);
			for (s = 0; s < SRC_NR; s++)
				fprintf(c->json, "%s\"%s\":{\"lines\":%llu,\"media_write_bytes\":%llu}",
					s ? "," : "", src_name[s],
					(unsigned long long)st.cls_lines[s],
					(unsigned long long)st.cls_media_bytes[s]);
			fprintf(c->json, "}},");
		}
		fprintf(c->json, "\"secs\":%.2f,\"model\":", secs);
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
		"                  [--dist uniform,zipf,new,seqburst,cluster,hot] [--theta T]\n"
		"                  [--warm W] [--ops N]\n"
		"                  [--keyspace K] [--seed S] [--pool-size BYTES] [--th-log PCT]\n"
		"                  [--multi-split 0|1] [--hot-t T] [--node-slots S] [--t-node N]\n"
		"                  [--t-split T] [--leaf-bytes B] [--log-kb K] [--burst L]\n"
		"                  [--eadr] [--json FILE]\n"
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

		for (d = 0; d < D_NR; d++)
			if (strlen(dist_name[d]) == n && !strncmp(s, dist_name[d], n))
				break;
		if (d == D_NR)
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
		{ "node-slots", 1, NULL, 'S' }, { "t-node", 1, NULL, 'O' },
		{ "t-split", 1, NULL, 'X' }, { "leaf-bytes", 1, NULL, 'F' },
		{ "log-kb", 1, NULL, 'K' }, { "burst", 1, NULL, 'u' },
		{ "eadr", 0, NULL, 'E' },
		{ "help", 0, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct cfg c = { .warm = 1000000, .ops = 1000000, .theta = 0.99,
			 .seed = 1, .multi = -1, .burst = 10000 };
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
		case 'S': lodge_node_slots = strtoul(optarg, NULL, 0); break;
		case 'O': lodge_t_node = strtoul(optarg, NULL, 0); break;
		case 'X': lodge_t_split = strtoul(optarg, NULL, 0); break;
		case 'F': lodge_leaf_bytes = strtoul(optarg, NULL, 0); break;
		case 'K': lodge_log_kb = strtoul(optarg, NULL, 0); break;
		case 'u': c.burst = strtoull(optarg, NULL, 0); break;
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
	if (!c.ops || !c.keyspace || !c.burst || !(c.theta >= 0 && c.theta < 1) ||
	    (strcmp(engine, "all") && strcmp(engine, "ccl") && strcmp(engine, "utree") &&
	     strcmp(engine, "b3") && strcmp(engine, "lodge") && strcmp(engine, "pfart")))
		usage();
	if (!c.pool_size) {		/* generous: utree needs ~150 B a key */
		c.pool_size = (c.warm + c.ops) * 1024;
		if (c.pool_size < (1ULL << 30))
			c.pool_size = 1ULL << 30;
	}
	printf("# ccl-xpline: warm %llu, ops %llu, keyspace %llu, theta %.2f, burst %llu, ccl_th_log %u, "
	       "16-byte writes; XBI = media bytes / user bytes\n", (unsigned long long)c.warm,
	       (unsigned long long)c.ops, (unsigned long long)c.keyspace, c.theta,
	       (unsigned long long)c.burst,
	       c.th_log ?: ccl_th_log);
	for (d = 0; d < D_NR; d++) {
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
