// SPDX-License-Identifier: GPL-2.0
/*
 * Open (the paper has no recovery; this is ours, README "Recovery"):
 *  1. walk the leaf list from the head (next[use]), checking every offset
 *     before it is read; with a trace, mark each leaf, on a clean attach
 *     claim it (own()). A pointer chase, so one CPU: it only collects
 *     the offsets;
 *  2. parse the leaves (parallel, runs of the list): bitmap, key
 *     lengths, their blobs and fence blobs marked or claimed. The fence
 *     of a leaf is the one it stores (its split key: the exact range its
 *     ts speaks for); fences must ascend along the list;
 *  3. read every log the directory names (parallel, runs of directory
 *     slots), record by record until one fails its version or crc, and
 *     find the leaf whose range holds each record's key; list the logs
 *     by version;
 *  4. gather the records by leaf (a counting sort); per leaf (parallel,
 *     runs of leaves holding equal shares of the records) sort them by
 *     key, then sequence: per key only the newest matters, and only when
 *     it is newer than the leaf's ts: it goes back into the buffer part
 *     and counts as valid in its log;
 *  5. group the leaves into last-level nodes (half full, the buffered
 *     KVs beside them; the grouping is one pass, filling the nodes is
 *     parallel), build the upper levels;
 *  6. logs left with no valid record are unnamed (directory slot
 *     cleared) and freed (by the trace when there is one); the others
 *     stay sealed. Sequences go on above everything seen.
 * Nothing is allocated from the pool here.
 *
 * Workers: as ccl and pfart, one per CPU the attach allows (rc->threads,
 * at most RWORKERS_MAX), fewer when a step has little to do (STEP_*: a
 * hand-off costs more than a few items); lodge_recovery_threads, when
 * set, replaces that rule (capped only by the items), so that the tests
 * split every step. The result does not depend on the workers or on
 * their timing: each step's items are cut into runs in their serial
 * order, a worker writes only its own items and its own struct rwork,
 * sums are added up afterwards, the records of a leaf are sorted by
 * (key, sequence, offset), a total order, so which record wins a key is
 * decided by the records alone, and a failure is reported as the serial
 * code would have met it first (the lowest item that failed). The
 * allocator's marks and claims may run concurrently (pmidx_alloc_mark(),
 * pmidx_alloc_claim()); two of one object fail one of them whatever the
 * order, which is all the trace and the claims need.
 */
#include <linux/cache.h>
#include <linux/crc32c.h>
#include <linux/errno.h>
#include <linux/ktime.h>
#include <linux/prefetch.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/vmalloc.h>
#include "core/blob.h"
#include "core/parallel.h"
#include "core/pmem.h"
#include "lodge.h"

#define RWORKERS_MAX	64

/* Fewest items per worker in each step (unless lodge_recovery_threads) */
#define STEP_LEAVES	128
#define STEP_LOGS	4
#define STEP_RECS	1024
#define STEP_NODES	32

struct rrec {
	u64			seq;
	u64			off;
	const u8		*k;	/* in the log; the value follows */
	struct lodge_vlog	*v;
	struct lodge_key	*key;	/* a winner's copy, until a node has it */
	u32			klen, vlen;
	u32			leaf;	/* the leaf whose range holds the key */
	u8			flags;
	bool			in;	/* a winner: its key is in the leaf */
};

struct rleaf {
	u64			off;
	u64			ts;
	u32			cnt;
	u32			nbuf;	/* winners: its first records (step 4) */
	struct lodge_key	*fence;	/* until its node takes it over */
};

/*
 * One worker's share of a step: what it found (records, logs, sums) and
 * its first failure, by item (leaf, directory slot or node).
 */
struct rwork {
	struct rrec		*rv;
	size_t			nr, capr;
	struct list_head	logs;
	s64			keys;
	u64			maxseq, replayed;
	size_t			fail_at;
	int			err;
	const char		*why;
	/* written per item: a line apart from the next worker's fields */
	u8			gap[SMP_CACHE_BYTES];
};

struct rstate {
	struct lodge		*t;
	bool			trace;
	bool			forced;		/* lodge_recovery_threads set */
	unsigned int		workers;	/* allowed */
	unsigned int		used;		/* the most one step ran */
	unsigned int		nw;		/* this step's */
	struct rleaf		*lv;
	size_t			nl, capl;
	u64			*fpfx;		/* leaf i's fence's key_pfx() */
	u32			*named;		/* directory slots naming a log */
	size_t			nnamed;
	struct rrec		*rv;		/* every record, by leaf */
	size_t			nr;
	size_t			*lstart;	/* leaf i: rv[lstart[i]..lstart[i+1]) */
	size_t			*gfirst;	/* node g: leaves gfirst[g]..gfirst[g+1]-1 */
	struct lodge_lin	**lins;
	size_t			nlin;
	const char		*why;
	struct rwork		wk[RWORKERS_MAX];
};

static int grow(void **p, size_t *cap, size_t n, size_t sz)
{
	void *q;

	if (n < *cap)
		return 0;
	q = kvmalloc_array(*cap ? *cap * 2 : 1024, sz, GFP_KERNEL);
	if (!q)
		return -ENOMEM;
	if (*p)
		memcpy(q, *p, n * sz);
	kvfree(*p);
	*p = q;
	*cap = *cap ? *cap * 2 : 1024;
	return 0;
}

static int bad(struct rstate *rs, const char *why)
{
	rs->why = why;
	pr_warn("pmidx: lodge index %s: %s\n", rs->t->idx->name, why);
	return -EUCLEAN;
}

/* A worker's failure at item @at; @why for a corrupt image only. */
static int wfail(struct rwork *wk, size_t at, int err, const char *why)
{
	wk->fail_at = at;
	wk->err = err;
	wk->why = why;
	return err;
}

/* The workers for a step of @items (see the top of this file). */
static unsigned int step_workers(struct rstate *rs, size_t items, size_t per)
{
	if (rs->forced)
		return clamp_t(size_t, items, 1, rs->workers);
	return clamp_t(size_t, items / per, 1, rs->workers);
}

/* Worker @w's run of @n items: [*lo, *hi). */
static void step_run(struct rstate *rs, unsigned int w, size_t n, size_t *lo,
		     size_t *hi)
{
	*lo = n * w / rs->nw;
	*hi = n * (w + 1) / rs->nw;
}

/*
 * Run @fn on the step's workers. Return: the failure the serial order
 * meets first, whichever worker found it and whenever.
 */
static int run_step(struct rstate *rs, size_t items, size_t per,
		    int (*fn)(void *arg, unsigned int w))
{
	struct rwork *f = NULL;
	unsigned int w;
	int ret;

	rs->nw = step_workers(rs, items, per);
	rs->used = max(rs->used, rs->nw);
	for (w = 0; w < rs->nw; w++) {
		rs->wk[w].fail_at = SIZE_MAX;
		rs->wk[w].err = 0;
		rs->wk[w].why = NULL;
	}
	ret = pmidx_run_parallel(rs->nw, fn, rs);
	for (w = 0; w < rs->nw; w++)
		if (rs->wk[w].err && (!f || rs->wk[w].fail_at < f->fail_at))
			f = &rs->wk[w];
	if (!f)
		return ret;	/* 0, or no worker could start */
	return f->why ? bad(rs, f->why) : f->err;
}

/*
 * Mark (with a trace) or claim (a clean attach, core/alloc.c "Claims")
 * an object this index owns: either checks it starts an object, and a
 * second one fails, whether this index or another names it again. The
 * trace must see every object; the claims cost a clean attach nothing
 * it does not read anyway.
 */
static int own(struct rstate *rs, u64 off)
{
	struct pmidx_alloc *a = &rs->t->pool->alloc;

	return rs->trace ? pmidx_alloc_mark(a, off) : pmidx_alloc_claim(a, off);
}

/*
 * Own the object at @off and check [off, off + len) is inside it: marked
 * objects are the live ones while a trace runs.
 */
static bool claim(struct rstate *rs, u64 off, size_t len)
{
	struct lodge *t = rs->t;

	if (off & 255)
		return false;
	if (own(rs, off))
		return false;
	return pmidx_alloc_valid(&t->pool->alloc, off, len);
}

static bool blob_ok(struct rstate *rs, u64 off)
{
	struct lodge *t = rs->t;
	u32 len;

	if (off & 15)
		return false;
	if (own(rs, off))
		return false;
	if (!pmidx_alloc_valid(&t->pool->alloc, off, sizeof(struct pmidx_blob)))
		return false;
	if (pmidx_blob_read_len(t->pool, off, &len))
		return false;
	return pmidx_alloc_valid(&t->pool->alloc, off,
				 sizeof(struct pmidx_blob) + len);
}

/* Step 1: the offsets, in list order. */
static int walk_list(struct rstate *rs)
{
	struct lodge *t = rs->t;
	u64 off = t->head, max = t->pm->size / t->leaf_size;
	int ret;

	while (off) {
		if (rs->nl >= max || !claim(rs, off, t->leaf_size))
			return bad(rs, "bad leaf offset (or named twice)");
		ret = grow((void **)&rs->lv, &rs->capl, rs->nl, sizeof(*rs->lv));
		if (ret)
			return ret;
		rs->lv[rs->nl++] = (struct rleaf){ .off = off };
		off = lodge_leaf_next(lodge_leaf_ptr(t, off));
		if (!(rs->nl % 1024))
			cond_resched();
	}
	/* the root names its head leaf only once it is durable */
	if (!rs->nl)
		return bad(rs, "no head leaf");
	return 0;
}

/*
 * A key's first 8 bytes, zero padded, big-endian: a lower prefix is a
 * lower key (a padding zero sorts as a shorter key does), an equal one
 * decides nothing. Routing a record compares these, not the fences'
 * bytes behind one pointer each (step 3's cost was those misses).
 */
static u64 key_pfx(const u8 *k, u32 len)
{
	__be64 b = 0;

	memcpy(&b, k, min_t(u32, len, 8));
	return be64_to_cpu(b);
}

/* Step 2 for leaf @i. */
static int parse_leaf(struct rstate *rs, struct rwork *wk, size_t i)
{
	struct lodge *t = rs->t;
	struct rleaf *lf = &rs->lv[i];
	struct lodge_leaf *l = lodge_leaf_ptr(t, lf->off);
	u64 bits = le64_to_cpu(l->bitmap), kind, vind;
	const u8 *mk = NULL, *k;
	u32 mlen = 0, len;
	int s;

	if (bits & ~(lodge_bitmap_mask(t) | LODGE_USE_BIT))
		return wfail(wk, i, -EUCLEAN, "leaf bitmap beyond its slots");
	bits &= lodge_bitmap_mask(t);
	lf->cnt = hweight64(bits);
	lf->ts = le64_to_cpu(l->ts) & LODGE_TS_MASK;
	kind = le64_to_cpu(l->kind);
	vind = le64_to_cpu(l->vind);
	for (; bits; bits &= bits - 1) {
		s = __ffs64(bits);
		if ((kind & BIT_ULL(s)) &&
		    !blob_ok(rs, le64_to_cpu(l->slot[s].key)))
			return wfail(wk, i, -EUCLEAN, "bad key blob");
		if ((vind & BIT_ULL(s)) &&
		    !blob_ok(rs, le64_to_cpu(l->slot[s].val)))
			return wfail(wk, i, -EUCLEAN, "bad value blob");
		k = lodge_slot_key(t, l, s, &len);
		if (!len || len > PMIDX_KEY_MAX)
			return wfail(wk, i, -EUCLEAN, "bad key length");
		if (!mk || pmidx_key_cmp(k, len, mk, mlen) < 0) {
			mk = k;
			mlen = len;
		}
	}
	len = le64_to_cpu(l->flen);
	if (len > 8 && !blob_ok(rs, le64_to_cpu(l->fence)))
		return wfail(wk, i, -EUCLEAN, "bad fence blob");
	k = lodge_leaf_fence(t, l, &len);
	if (!i != !k || len > PMIDX_KEY_MAX ||
	    (mk && k && pmidx_key_cmp(k, len, mk, mlen) > 0))
		return wfail(wk, i, -EUCLEAN, "bad leaf fence");
	if (k) {
		lf->fence = lodge_key_new(k, len, GFP_KERNEL);
		if (!lf->fence)
			return wfail(wk, i, -ENOMEM, NULL);
		rs->fpfx[i] = key_pfx(k, len);
	}
	wk->keys += lf->cnt;
	wk->maxseq = max(wk->maxseq, lf->ts);
	return 0;
}

/*
 * Step 2 reads each leaf whole, long after the walk read its first line:
 * ask for the leaves a few places ahead, so that their misses overlap
 * the parse of this one instead of following it.
 */
#define LEAF_AHEAD	4

static int leaves_worker(void *arg, unsigned int w)
{
	struct rstate *rs = arg;
	struct lodge *t = rs->t;
	size_t i, hi;
	int ret = 0;

	for (step_run(rs, w, rs->nl, &i, &hi); i < hi && !ret; i++) {
		if (i + LEAF_AHEAD < hi)
			prefetch_range(lodge_leaf_ptr(t, rs->lv[i + LEAF_AHEAD].off),
				       t->leaf_size);
		ret = parse_leaf(rs, &rs->wk[w], i);
		if (!(i % 256))
			cond_resched();
	}
	return ret;
}

/* Fences strictly ascending along the list. */
static int fix_fences(struct rstate *rs)
{
	size_t i;

	for (i = 2; i < rs->nl; i++)
		if (lodge_kcmp(rs->lv[i - 1].fence, rs->lv[i].fence->b,
			       rs->lv[i].fence->len) >= 0)
			return bad(rs, "leaf list out of key order");
	return 0;
}

/* The leaf whose range holds @k (fences only: safe in parallel). */
static u32 leaf_of(struct rstate *rs, const u8 *k, u32 klen)
{
	size_t lo = 1, hi = rs->nl, mid, r = 0;
	u64 p = key_pfx(k, klen);

	while (lo < hi) {
		mid = (lo + hi) / 2;
		if (rs->fpfx[mid] != p ? rs->fpfx[mid] < p :
		    lodge_kcmp(rs->lv[mid].fence, k, klen) <= 0) {
			r = mid;
			lo = mid + 1;
		} else {
			hi = mid;
		}
	}
	return r;
}

/* Step 3 for the log in directory slot @slot. */
static int read_log(struct rstate *rs, struct rwork *wk, u32 slot, u64 off)
{
	struct lodge *t = rs->t;
	struct lodge_vlog *v;
	struct lodge_log *l;
	u32 size, pos, rsz, crc, c0;
	struct lodge_rec *r, h;
	struct rrec *rr;
	int ret;

	if (!claim(rs, off, LODGE_LOG_HDR))
		return wfail(wk, slot, -EUCLEAN, "bad log offset (or named twice)");
	l = pmidx_ptr(t->pm, off);
	size = le32_to_cpu(l->size);
	if (le64_to_cpu(l->magic) != LODGE_LOG_MAGIC || size < LODGE_LOG_HDR ||
	    !pmidx_alloc_valid(&t->pool->alloc, off, size) ||
	    le64_to_cpu(l->version) > le64_to_cpu(t->root->vhwm))
		return wfail(wk, slot, -EUCLEAN, "bad log header");
	v = kzalloc(sizeof(*v), GFP_KERNEL);
	if (!v)
		return wfail(wk, slot, -ENOMEM, NULL);
	v->off = off;
	v->version = le64_to_cpu(l->version);
	v->size = size;
	v->slot = slot;
	list_add_tail(&v->node, &wk->logs);
	for (pos = LODGE_LOG_HDR; pos + sizeof(h) <= size; pos += rsz) {
		r = pmidx_ptr(t->pm, off + pos);
		memcpy(&h, r, sizeof(h));
		if (le64_to_cpu(h.version) != v->version || !h.klen ||
		    le32_to_cpu(h.vlen) > PMIDX_VALUE_MAX)
			break;
		rsz = lodge_rec_size(h.klen, le32_to_cpu(h.vlen));
		if (pos + rsz > size)
			break;
		c0 = le32_to_cpu(h.crc);
		h.crc = 0;
		crc = crc32c(~0U, &h, sizeof(h));
		crc = crc32c(crc, r->data, h.klen + le32_to_cpu(h.vlen));
		if (crc != c0)
			break;
		ret = grow((void **)&wk->rv, &wk->capr, wk->nr, sizeof(*wk->rv));
		if (ret)
			return wfail(wk, slot, ret, NULL);
		rr = &wk->rv[wk->nr++];
		*rr = (struct rrec){
			.seq = le64_to_cpu(h.seqfl) & LODGE_TS_MASK,
			.off = off + pos, .k = r->data, .klen = h.klen,
			.vlen = le32_to_cpu(h.vlen), .v = v,
			.leaf = leaf_of(rs, r->data, h.klen),
			.flags = le64_to_cpu(h.seqfl) >> LODGE_R_FLAGS_SHIFT };
		wk->maxseq = max(wk->maxseq, rr->seq);
	}
	v->used = pos;
	return 0;
}

/* Step 3's items: the directory slots that name a log, in order. */
static int named_logs(struct rstate *rs)
{
	u32 i;

	rs->named = kvmalloc_array(LODGE_DIR_SLOTS, sizeof(*rs->named),
				   GFP_KERNEL);
	if (!rs->named)
		return -ENOMEM;
	for (i = 0; i < LODGE_DIR_SLOTS; i++)
		if (rs->t->dir->slot[i])
			rs->named[rs->nnamed++] = i;
	return 0;
}

static int logs_worker(void *arg, unsigned int w)
{
	struct rstate *rs = arg;
	size_t i, hi;
	u32 slot;
	int ret = 0;

	for (step_run(rs, w, rs->nnamed, &i, &hi); i < hi && !ret; i++) {
		slot = rs->named[i];
		ret = read_log(rs, &rs->wk[w], slot,
			       le64_to_cpu(rs->t->dir->slot[slot]));
		if (!(i % 64))
			cond_resched();
	}
	return ret;
}

static int vlog_cmp(const void *a, const void *b)
{
	const struct lodge_vlog *x = *(struct lodge_vlog * const *)a;
	const struct lodge_vlog *y = *(struct lodge_vlog * const *)b;

	return x->version < y->version ? -1 : x->version > y->version;
}

/*
 * The logs the workers read go to t->logs, failed or not (teardown frees
 * what it holds), and are then listed by version as log_new() lists
 * them: a drain's cut (lodge_log_cut()) counts from the oldest, and the
 * directory slots, reused lowest first, are in no such order.
 */
static int take_logs(struct rstate *rs)
{
	struct lodge *t = rs->t;
	struct lodge_vlog *v, **vs;
	unsigned int w;
	size_t n = 0, i;

	for (w = 0; w < rs->nw; w++) {
		list_for_each_entry(v, &rs->wk[w].logs, node) {
			set_bit(v->slot, t->dir_map);
			t->nlogs++;
			atomic64_add(v->size, &t->log_bytes_live);
		}
		list_splice_tail_init(&rs->wk[w].logs, &t->logs);
	}
	vs = kvmalloc_array(max_t(u32, t->nlogs, 1), sizeof(*vs), GFP_KERNEL);
	if (!vs)
		return -ENOMEM;
	list_for_each_entry(v, &t->logs, node)
		vs[n++] = v;
	sort(vs, n, sizeof(*vs), vlog_cmp, NULL);
	INIT_LIST_HEAD(&t->logs);
	for (i = 0; i < n; i++)
		list_add_tail(&vs[i]->node, &t->logs);
	kvfree(vs);
	return 0;
}

/* Step 4: the workers' records gathered by leaf (counting sort). */
static int bucket(struct rstate *rs)
{
	size_t i, j, n = 0, *cnt;
	unsigned int w;

	for (w = 0; w < rs->nw; w++)
		n += rs->wk[w].nr;
	cnt = kvcalloc(rs->nl + 1, sizeof(*cnt), GFP_KERNEL);
	rs->rv = kvmalloc_array(max_t(size_t, n, 1), sizeof(*rs->rv),
				GFP_KERNEL);
	if (!cnt || !rs->rv) {
		kvfree(cnt);
		return -ENOMEM;
	}
	for (w = 0; w < rs->nw; w++)
		for (j = 0; j < rs->wk[w].nr; j++)
			cnt[rs->wk[w].rv[j].leaf + 1]++;
	for (i = 0; i < rs->nl; i++)
		cnt[i + 1] += cnt[i];
	/* cnt[i]: the next free place of leaf i */
	for (w = 0; w < rs->nw; w++) {
		for (j = 0; j < rs->wk[w].nr; j++)
			rs->rv[cnt[rs->wk[w].rv[j].leaf]++] = rs->wk[w].rv[j];
		kvfree(rs->wk[w].rv);
		rs->wk[w].rv = NULL;
		rs->wk[w].nr = 0;
		rs->wk[w].capr = 0;
	}
	/* shift back: cnt[i] = the first record of leaf i */
	for (i = rs->nl; i > 0; i--)
		cnt[i] = cnt[i - 1];
	cnt[0] = 0;
	rs->lstart = cnt;
	rs->nr = n;
	return 0;
}

/* Key, then sequence, then place: a total order, so a sort decides alone. */
static int rrec_cmp(const void *a, const void *b)
{
	const struct rrec *x = a, *y = b;
	int c = pmidx_key_cmp(x->k, x->klen, y->k, y->klen);

	if (c)
		return c;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

/*
 * Step 4 for leaf @i: the newest record per key, when newer than the
 * leaf, moved to the front of the leaf's records (key order), with its
 * key copied and counted in its log.
 */
static int pick_leaf(struct rstate *rs, struct rwork *wk, size_t i)
{
	struct lodge *t = rs->t;
	struct rleaf *lf = &rs->lv[i];
	struct lodge_leaf *l = lodge_leaf_ptr(t, lf->off);
	struct rrec *r = rs->rv + rs->lstart[i], *b;
	size_t n = rs->lstart[i + 1] - rs->lstart[i], j;

	sort(r, n, sizeof(*r), rrec_cmp, NULL);
	for (j = 0; j < n; j++) {
		if (j + 1 < n && !pmidx_key_cmp(r[j].k, r[j].klen,
						r[j + 1].k, r[j + 1].klen))
			continue;
		if (r[j].seq <= lf->ts)
			continue;
		/* only records before j are overwritten: all looked at */
		b = &r[lf->nbuf++];
		*b = r[j];
		b->in = lodge_leaf_find(t, l, b->k, b->klen) >= 0;
		b->key = lodge_key_new(b->k, b->klen, GFP_KERNEL);
		if (!b->key)
			return wfail(wk, i, -ENOMEM, NULL);
		atomic_inc(&b->v->valid);
		if (b->flags & LODGE_R_TOMB)
			wk->keys -= b->in;
		else
			wk->keys += !b->in;
		wk->replayed++;
	}
	return 0;
}

/* Runs of leaves holding equal shares of the records, not of the leaves. */
static size_t leaf_at(struct rstate *rs, size_t rec)
{
	size_t lo = 0, hi = rs->nl, mid;

	while (lo < hi) {
		mid = (lo + hi) / 2;
		if (rs->lstart[mid] < rec)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int pick_worker(void *arg, unsigned int w)
{
	struct rstate *rs = arg;
	size_t i, hi, rlo, rhi;
	int ret = 0;

	step_run(rs, w, rs->nr, &rlo, &rhi);
	i = w ? leaf_at(rs, rlo) : 0;
	hi = w + 1 < rs->nw ? leaf_at(rs, rhi) : rs->nl;
	for (; i < hi && !ret; i++) {
		ret = pick_leaf(rs, &rs->wk[w], i);
		if (!(i % 256))
			cond_resched();
	}
	return ret;
}

/*
 * Step 5, serial: which leaves each node gets. A node holds at most
 * LODGE_CAP_MAX leaves and buffered writes together, as at run time: a
 * put fills a node up to its cap before it flushes, so one leaf may come
 * back with LODGE_CAP_MAX - 1 winners, and that is not damage.
 */
static int group(struct rstate *rs)
{
	struct lodge *t = rs->t;
	size_t i, j, nb, want = max_t(u32, 1, t->cap / 2);

	rs->gfirst = kvmalloc_array(rs->nl + 1, sizeof(*rs->gfirst),
				    GFP_KERNEL);
	if (!rs->gfirst)
		return -ENOMEM;
	for (i = 0; i < rs->nl; i = j) {
		for (nb = 0, j = i; j < rs->nl && j - i < want; j++) {
			if (j > i && (j - i) + 1 + nb + rs->lv[j].nbuf >
				     LODGE_CAP_MAX)
				break;
			nb += rs->lv[j].nbuf;
		}
		if ((j - i) + nb > LODGE_CAP_MAX)
			return bad(rs, "too many buffered writes for one leaf");
		rs->gfirst[rs->nlin++] = i;
	}
	rs->gfirst[rs->nlin] = rs->nl;
	rs->lins = kvcalloc(rs->nlin, sizeof(*rs->lins), GFP_KERNEL);
	return rs->lins ? 0 : -ENOMEM;
}

/* Step 5 for node @g: its leaves' fences and their winners. */
static int fill_node(struct rstate *rs, struct rwork *wk, size_t g)
{
	struct lodge *t = rs->t;
	size_t i = rs->gfirst[g], e = rs->gfirst[g + 1], nb = 0, k, j;
	struct lodge_lin *x;
	struct rrec *rr;

	for (k = i; k < e; k++)
		nb += rs->lv[k].nbuf;
	/* no spare slot: a node full at the crash comes back as it was */
	x = lodge_lin_alloc(t, max_t(size_t, t->cap, (e - i) + nb), GFP_KERNEL);
	if (!x)
		return wfail(wk, g, -ENOMEM, NULL);
	rs->lins[g] = x;
	x->nidx = e - i;
	for (k = 0; k < x->nidx; k++) {
		struct rleaf *lf = &rs->lv[i + k];

		x->slot[k].w = lf->off;
		x->leaf_count[k] = lf->cnt;
		/* the node owns the fence from here on */
		if (k)
			x->slot[k].key = lf->fence;
		else
			x->lo = lf->fence;
		lf->fence = NULL;
	}
	for (k = 0; k < x->nidx; k++) {
		rr = rs->rv + rs->lstart[i + k];
		for (j = 0; j < rs->lv[i + k].nbuf; j++, rr++) {
			unsigned int s = x->nidx + x->nbuf++;
			struct lodge_slot *b = &x->slot[s];

			b->key = rr->key;
			rr->key = NULL;
			b->w = 0;
			if (rr->vlen <= 8)
				memcpy(&b->w, rr->k + rr->klen, rr->vlen);
			b->rec = rr->off;
			b->seq = rr->seq;
			b->vlen = rr->vlen;
			b->flags = rr->flags & LODGE_R_TOMB ? LODGE_B_TOMB : 0;
			x->buf_ver[s] = rr->v;
			x->leaf_count[s] = k;
		}
	}
	return 0;
}

static int nodes_worker(void *arg, unsigned int w)
{
	struct rstate *rs = arg;
	size_t g, hi;
	int ret = 0;

	for (step_run(rs, w, rs->nlin, &g, &hi); g < hi && !ret; g++) {
		ret = fill_node(rs, &rs->wk[w], g);
		if (!(g % 64))
			cond_resched();
	}
	return ret;
}

/* Step 5: the nodes, then the levels above them. */
static int build(struct rstate *rs)
{
	struct lodge *t = rs->t;
	size_t g;
	int ret;

	ret = group(rs);
	if (!ret)
		ret = run_step(rs, rs->nlin, STEP_NODES, nodes_worker);
	for (g = 1; !ret && g < rs->nlin; g++) {
		rs->lins[g - 1]->hi = lodge_key_new(rs->lins[g]->lo->b,
						    rs->lins[g]->lo->len,
						    GFP_KERNEL);
		if (!rs->lins[g - 1]->hi)
			ret = -ENOMEM;
	}
	if (!ret)
		ret = lodge_build(t, rs->lins, rs->nlin);
	if (ret && rs->lins) {
		for (g = 0; g < rs->nlin; g++)
			if (rs->lins[g])
				lodge_lin_free(rs->lins[g], true);
	}
	return ret;
}

/* Step 6: with a trace, only the logs kept are marked (the rest go) */
static void settle_logs(struct rstate *rs)
{
	struct lodge *t = rs->t;
	struct lodge_vlog *v, *n;

	list_for_each_entry_safe(v, n, &t->logs, node) {
		if (atomic_read(&v->valid))
			continue;
		pmidx_store64_persist(t->pm, &t->dir->slot[v->slot], 0);
		clear_bit(v->slot, t->dir_map);
		list_del(&v->node);
		t->nlogs--;
		atomic64_sub(v->size, &t->log_bytes_live);
		/* marked by a trace: freed after open (lodge.c enter_ready) */
		if (rs->trace) {
			list_add_tail(&v->node, &t->dead);
			continue;
		}
		pmidx_free(&t->pool->alloc, v->off);
		kfree(v);
	}
}

static int recover(struct rstate *rs)
{
	u64 ns[7];
	int ret, err;

	ns[0] = ktime_get_ns();
	ret = walk_list(rs);
	if (ret)
		return ret;
	ns[1] = ktime_get_ns();
	rs->fpfx = kvmalloc_array(rs->nl, sizeof(*rs->fpfx), GFP_KERNEL);
	if (!rs->fpfx)
		return -ENOMEM;
	ret = run_step(rs, rs->nl, STEP_LEAVES, leaves_worker) ?:
	      fix_fences(rs) ?: named_logs(rs);
	if (ret)
		return ret;
	ns[2] = ktime_get_ns();
	ret = run_step(rs, rs->nnamed, STEP_LOGS, logs_worker);
	/* even after a failure: teardown frees what t->logs holds */
	err = take_logs(rs);
	ret = ret ?: err;
	if (ret)
		return ret;
	ns[3] = ktime_get_ns();
	ret = bucket(rs) ?: run_step(rs, rs->nr, STEP_RECS, pick_worker);
	if (ret)
		return ret;
	ns[4] = ktime_get_ns();
	ret = build(rs);
	if (ret)
		return ret;
	ns[5] = ktime_get_ns();
	settle_logs(rs);
	ns[6] = ktime_get_ns();
	/* where the time goes, step by step (README "Recovery") */
	pr_debug("pmidx: lodge index %s: recovery steps 1-6: %llu %llu %llu %llu %llu %llu us; %zu leaves, %zu logs, %zu records, %u workers\n",
		 rs->t->idx->name, (ns[1] - ns[0]) / 1000,
		 (ns[2] - ns[1]) / 1000, (ns[3] - ns[2]) / 1000,
		 (ns[4] - ns[3]) / 1000, (ns[5] - ns[4]) / 1000,
		 (ns[6] - ns[5]) / 1000, rs->nl, rs->nnamed, rs->nr, rs->used);
	return 0;
}

static void rstate_free(struct rstate *rs)
{
	size_t i, j;

	for (i = 0; i < rs->nl; i++) {
		kfree(rs->lv[i].fence);
		for (j = 0; rs->lstart && j < rs->lv[i].nbuf; j++)
			kfree(rs->rv[rs->lstart[i] + j].key);
	}
	for (i = 0; i < RWORKERS_MAX; i++)
		kvfree(rs->wk[i].rv);
	kvfree(rs->lv);
	kvfree(rs->fpfx);
	kvfree(rs->named);
	kvfree(rs->rv);
	kvfree(rs->lstart);
	kvfree(rs->gfirst);
	kvfree(rs->lins);
	kvfree(rs);
}

int lodge_recover(struct lodge *t, const struct pmidx_recover *rc)
{
	struct lodge_root *r = t->root;
	unsigned int i, forced = READ_ONCE(lodge_recovery_threads);
	struct rstate *rs;
	s64 keys = 0;
	u64 maxseq = 0, dir;
	u32 ls;
	int ret;

	if (!r->magic)
		return 0;
	rs = kvzalloc(sizeof(*rs), GFP_KERNEL);
	if (!rs)
		return -ENOMEM;
	rs->t = t;
	rs->trace = !rc->clean;
	rs->forced = forced;
	rs->workers = clamp_t(unsigned int, forced ?: rc->threads, 1,
			      RWORKERS_MAX);
	for (i = 0; i < RWORKERS_MAX; i++)
		INIT_LIST_HEAD(&rs->wk[i].logs);
	ls = le32_to_cpu(r->leaf_size);
	/*
	 * The magic is stored after the head leaf is durable and the head is
	 * never unlinked (lodge.c tree_init()), so a root without a head is
	 * corrupt (let through, the walk would find no leaf and
	 * lodge_build() would take the top node from an empty level).
	 */
	if (le64_to_cpu(r->magic) != LODGE_ROOT_MAGIC ||
	    le32_to_cpu(r->version) != LODGE_FORMAT_VERSION ||
	    (ls != 256 && ls != 512 && ls != 1024) || !r->head) {
		ret = bad(rs, "bad root");
		goto out;
	}
	t->leaf_size = ls;
	t->slots = (ls - LODGE_LEAF_HDR) / 16;
	t->head = le64_to_cpu(r->head);
	dir = le64_to_cpu(r->dir);
	if (!claim(rs, dir, LODGE_DIR_SIZE)) {
		ret = bad(rs, "bad log directory offset (or named twice)");
		goto out;
	}
	t->dir = pmidx_ptr(t->pm, dir);
	if (le64_to_cpu(t->dir->magic) != LODGE_DIR_MAGIC ||
	    le32_to_cpu(t->dir->nslots) != LODGE_DIR_SLOTS) {
		ret = bad(rs, "bad log directory");
		goto out;
	}
	ret = recover(rs);
	if (ret)
		goto out;
	for (i = 0; i < RWORKERS_MAX; i++) {
		keys += rs->wk[i].keys;
		maxseq = max(maxseq, rs->wk[i].maxseq);
		t->replayed += rs->wk[i].replayed;
	}
	atomic64_set(&t->seq, maxseq);
	t->next_ver = le64_to_cpu(r->vhwm) + 1;
	atomic64_set(&t->nleaves, rs->nl);
	this_cpu_add(t->st->keys, keys);
	t->recovery_threads = rs->used;
	t->ready = true;
out:
	rstate_free(rs);
	return ret;
}
