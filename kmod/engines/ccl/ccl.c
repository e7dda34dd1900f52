// SPDX-License-Identifier: GPL-2.0
/*
 * ccl: CCL-BTree (Li et al., "CCL-BTree: A Crash-Consistent Locality-Aware
 * B+-Tree for Reducing XPBuffer-Induced Write Amplification in Persistent
 * Memory", EuroSys'24), the pmidx engine operations.
 *
 * Structure (files of this folder):
 *   format.h   the PM layout: root, 256-byte leaves, log entry flags
 *   inner.c    DRAM inner nodes (optimistic lock coupling)
 *   buffer.c   DRAM buffer nodes, one per leaf, and the write path
 *   leaf.c     leaf lookup and batch flush
 *   split.c    logless split;  merge.c  merge into the left sibling
 *   gc.c       locality-aware log GC (core/wal.c logs, core/gc.c thread)
 *   recovery.c rebuild + log replay at attach; check.c  the checker
 *   kv.c       key/value words, blobs, fingerprints
 *
 * Timestamps. Replay needs them to order the versions of each key, and
 * every log entry of a leaf against the leaf's timestamp (the batch
 * timestamp is taken after every entry in the batch). All writes of a
 * key happen under the lock of the one buffer node whose range holds it,
 * and a range changes hands only by a split (the new nodes take over part
 * of it) or a merge (the left node takes the right one's), both under the
 * nodes' locks. So each node keeps its own clock (b->clock, Lamport
 * style): ccl_next_ts() is ++b->clock under the lock; a split's new nodes
 * start at the old node's clock, a merge takes the larger of the two, and
 * at attach every node starts at the newest timestamp on media. Then a
 * node's clock is at least every timestamp ever given to a key of its
 * range, which is all replay compares (recovery sorts a leaf's entries by
 * key, then by time). Timestamps of different ranges are unrelated and
 * never compared. The paper reads the TSC, with ORDO bounding the skew
 * between sockets; a clock in the node's own locked cache line costs no
 * shared line at all and needs no uncertainty window (one counter per
 * index, the first design, moved one line between all writers). Log
 * entries hold 48 bits; at attach the clocks resume
 * above every timestamp found on media, so leaf timestamps need not be
 * reset (the paper resets them because the TSC restarts at boot); a node
 * whose clock nears 2^48 refuses writes (-EOVERFLOW) until the next
 * clean attach resets them (recovery.c, ts_reset()).
 *
 * Deletes and recovery. Recovery re-derives the leaf ranges from each
 * leaf's smallest key (the runtime separators are DRAM only), which moves
 * the boundary between two leaves somewhere into the gap between the left
 * leaf's largest key and the right leaf's smallest. For a key present in
 * a leaf that changes nothing (it routes to that leaf). For an absent key
 * it would be unsafe to compare a log entry with the timestamp of a leaf
 * that may not have been the key's leaf. So recovery decides absent keys
 * without timestamps: the newest entry wins if it is a put and is dropped
 * if it is a tombstone. That is right only if a put entry is never stale
 * while its key is absent, i.e. if whatever deleted the key left a newer
 * entry in the log. Buffered deletes are logged anyway; so the one change
 * to the paper's write-conservative logging is that a trigger *delete* is
 * logged too (a trigger put is not). Entries only leave the log together
 * with everything older (a GC recycles a whole side), so the tombstone
 * outlives the put it overrides.
 *
 * Out-of-line keys and values: see format.h and kv.c. A put of a key that
 * is not 8 bytes writes a new key blob unless the key sits unflushed in
 * the buffer (then that slot's blob is reused), so the newest entry of a
 * key never names a blob a leaf slot owns: recovery marks each winner's
 * blobs as owned, exactly once. Older entries keep naming blobs that were
 * replaced or deleted since; those blobs are retired through the log
 * (core/wal.h, "Lifetime rule"), never freed while an entry names them,
 * so a stale entry always decodes as what was really written. After a
 * crash, recovery marks them as named-only and the log holds them again.
 */
#include <linux/errno.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>
#include "core/blob.h"
#include "ccl.h"

unsigned int ccl_nbatch = 2;
module_param(ccl_nbatch, uint, 0644);
MODULE_PARM_DESC(ccl_nbatch, "ccl: buffer slots per leaf, 1..7 (default 2; read when an index opens)");

unsigned int ccl_log_chunk_kb = 4096;
module_param(ccl_log_chunk_kb, uint, 0644);
MODULE_PARM_DESC(ccl_log_chunk_kb, "ccl: log chunk size in KiB, 256..1048576 (default 4096)");

unsigned int ccl_th_log = 20;
module_param(ccl_th_log, uint, 0644);
MODULE_PARM_DESC(ccl_th_log, "ccl: GC when log bytes exceed this percentage of leaf bytes (default 20)");

bool ccl_gc_naive;
module_param(ccl_gc_naive, bool, 0644);
MODULE_PARM_DESC(ccl_gc_naive, "ccl: naive GC (flush buffers to leaves) instead of locality-aware");

unsigned int ccl_gc_interval_ms = 1000;
module_param(ccl_gc_interval_ms, uint, 0644);
MODULE_PARM_DESC(ccl_gc_interval_ms, "ccl: GC thread poll interval (default 1000 ms; read when an index opens)");

/* ---- reclamation ------------------------------------------------------- */

/* Objects retired in t->epoch: DRAM (bit 0), a leaf (bit 1), or a blob. */
static void ccl_epoch_free(void *ctx, u64 obj)
{
	struct ccl_tree *t = ctx;

	if (obj & 1) {
		kfree((void *)(uintptr_t)(obj & ~1ULL));
		return;
	}
	if (!(obj & 2))
		atomic64_sub(pmidx_alloc_size(&t->pool->alloc, obj),
			     &t->blob_bytes);
	pmidx_free(&t->pool->alloc, obj & ~3ULL);
}

/* ---- resources ---------------------------------------------------------- */

bool ccl_stash_fill(struct ccl_tree *t, struct ccl_stash *st, unsigned int n)
{
	struct ccl_inode *x;

	n = min_t(unsigned int, n, CCL_STASH_MAX);
	spin_lock(&t->spare_lock);
	while (st->cnt < n && t->nspare)
		st->n[st->cnt++] = t->spare[--t->nspare];
	spin_unlock(&t->spare_lock);
	while (st->cnt < n) {
		x = ccl_inode_alloc(GFP_ATOMIC);
		if (!x)
			return false;
		st->n[st->cnt++] = x;
	}
	return true;
}

void ccl_stash_return(struct ccl_tree *t, struct ccl_stash *st)
{
	spin_lock(&t->spare_lock);
	while (st->cnt && t->nspare < CCL_SPARE_INODES)
		t->spare[t->nspare++] = st->n[--st->cnt];
	spin_unlock(&t->spare_lock);
	while (st->cnt)
		kfree(st->n[--st->cnt]);
}

/**
 * ccl_res_fill - allocate, sleeping, what a split could not get atomically
 *
 * Context: process context, outside epoch sections.
 */
int ccl_res_fill(struct ccl_tree *t, struct ccl_res *res)
{
	struct ccl_stash st = { .cnt = 0 };
	unsigned int want = res->want_in;
	int ret;

	pmidx_wal_prepare(t->wal);
	if (res->want_room) {
		/*
		 * Everything retired so far is freed: the lists have room.
		 * That always makes progress: not a try that counts.
		 */
		pmidx_epoch_barrier(&t->epoch);
		res->want_room = false;
		if (!res->want_bn && !res->want_fence && !res->want_in &&
		    !res->want_log)
			return 0;
	}
	if (++res->tries > 16)
		return -ENOMEM;
	if (res->want_log) {
		/* -ENOSPC: the pool is full after all (write_kv() collects) */
		ret = pmidx_wal_reserve(t->wal, 1);
		if (ret)
			return ret;
		res->want_log = false;
	}
	if (res->want_bn && !res->bn)
		res->bn = ccl_bnode_alloc(t, GFP_KERNEL);
	if (res->want_fence && !res->fence)
		res->fence = kmalloc(sizeof(*res->fence) + PMIDX_KEY_MAX,
				     GFP_KERNEL);
	if ((res->want_bn && !res->bn) || (res->want_fence && !res->fence))
		return -ENOMEM;
	want = min_t(unsigned int, want, CCL_STASH_MAX);
	while (st.cnt < want) {
		st.n[st.cnt] = ccl_inode_alloc(GFP_KERNEL);
		if (!st.n[st.cnt])
			break;
		st.cnt++;
	}
	ccl_stash_return(t, &st);
	res->want_bn = false;
	res->want_fence = false;
	res->want_in = 0;
	return 0;
}

void ccl_res_release(struct ccl_tree *t, struct ccl_res *res)
{
	kfree(res->bn);
	kfree(res->fence);
	res->bn = NULL;
	res->fence = NULL;
}

/* ---- walking the buffer nodes ------------------------------------------ */

/* Buffer nodes a walk visits in one epoch section, from one descent. */
#define CCL_WALK_RUN	8

/**
 * ccl_walk - call @fn on every buffer node, locked, in key order
 *
 * @fn may flush, split or merge the node; the walk resumes at the key
 * that was the node's high fence. It reaches that key through the node's
 * right link while in the same epoch section (a node seen linked there
 * is not freed before the section ends; one merged away meanwhile is
 * obsolete and sends the walk back to the root), and descends from the
 * root once every CCL_WALK_RUN nodes, when it leaves the section (sooner
 * when the CPU is wanted: the section keeps preemption off).
 * Return values of @fn: 0 go on, CCL_NEEDRES fill @res and call again on
 * the same key, < 0 stop.
 *
 * Context: process context; each call runs inside an epoch section.
 */
int ccl_walk(struct ccl_tree *t, ccl_walk_fn fn, void *ctx,
	     struct ccl_res *res)
{
	u8 key[PMIDX_KEY_MAX];
	struct ccl_bnode *b, *nx;
	unsigned int run;
	u32 klen = 0;
	u64 h;
	int ret;

	for (;;) {
		/* the run's flushes retire without memory */
		pmidx_wal_prepare(t->wal);
		pmidx_epoch_enter(&t->epoch);
		nx = NULL;
		for (run = 0; run < CCL_WALK_RUN; run++) {
			b = ccl_find_lock(t, nx, key, klen, &h);
			ret = fn(t, b, &h, ctx);
			nx = b->next;
			if (nx && ret != CCL_NEEDRES) {
				klen = nx->low->len;
				memcpy(key, nx->low->key, klen);
			}
			ccl_bn_unlock(b, h);
			if (ret || !nx || need_resched())
				break;
		}
		pmidx_epoch_exit(&t->epoch);
		if (ret == CCL_NEEDRES) {
			ret = ccl_res_fill(t, res);
			if (ret)
				return ret;
			continue;
		}
		if (ret)
			return ret;
		if (!nx)
			return 0;
		cond_resched();
	}
}

/* ---- open / close -------------------------------------------------------- */

static struct ccl_tree *tree_alloc(struct pmidx_index *idx)
{
	struct ccl_tree *t = kzalloc(sizeof(*t), GFP_KERNEL);

	if (!t)
		return NULL;
	t->idx = idx;
	t->pool = idx->pool;
	t->pm = &idx->pool->pm;
	t->root = pmidx_ptr(t->pm, idx->root);
	t->nbatch = clamp(READ_ONCE(ccl_nbatch), 1U, (unsigned int)CCL_NBATCH_MAX);
	/* chunks of at most 1/64 of the pool: small pools are not eaten */
	t->wal_chunk = clamp(READ_ONCE(ccl_log_chunk_kb), 256U, 1U << 20) << 10;
	t->wal_chunk = min_t(u64, t->wal_chunk,
			     max_t(u64, t->pm->size / 64, PMIDX_WAL_MIN_CHUNK));
	t->wal_chunk = round_down(t->wal_chunk, PMIDX_WAL_MIN_CHUNK);
	mutex_init(&t->init_lock);
	mutex_init(&t->gc_lock);
	spin_lock_init(&t->spare_lock);
	atomic_set(&t->height, 0);
	t->ts_base = 0;
	atomic64_set(&t->gc_runs, 0);
	atomic64_set(&t->nleaves, 0);
	atomic64_set(&t->ninodes, 0);
	atomic64_set(&t->blob_bytes, 0);
	atomic_set(&t->ovf_nodes, 0);
	t->st = alloc_percpu(struct ccl_pcpu);
	if (!t->st || pmidx_epoch_init(&t->epoch, ccl_epoch_free, t)) {
		free_percpu(t->st);
		kfree(t);
		return NULL;
	}
	return t;
}

/* Free every DRAM structure (the media is left as it is). */
static void tree_free(struct ccl_tree *t)
{
	struct ccl_bnode *b, *nx;

	pmidx_gc_stop(&t->gc);
	for (b = t->bhead; b; b = nx) {
		nx = b->next;
		ccl_bnode_free(t, b);
	}
	ccl_inner_free_all(t);
	while (t->nspare)
		kfree(t->spare[--t->nspare]);
	pmidx_wal_close(t->wal);
	/*
	 * Nothing is abandoned: DRAM and leaves are retired in sections
	 * only with room (pmidx_epoch_room()), blobs outside sections.
	 * Should one be, the next attach's trace frees it.
	 */
	if (WARN_ON_ONCE(atomic_long_read(&t->epoch.abandoned)))
		t->pool->needs_trace = true;
	pmidx_epoch_destroy(&t->epoch);
	free_percpu(t->st);
	kvfree(t->sbuf);
	kfree(t);
}

/* The DRAM levels of a new, empty index. */
static int tree_empty(struct ccl_tree *t, u64 head)
{
	struct ccl_bnode *b = ccl_bnode_alloc(t, GFP_KERNEL);
	struct ccl_fence *f = ccl_fence_alloc(NULL, 0, GFP_KERNEL);
	int ret = -ENOMEM;

	if (!b || !f)
		goto err;
	ccl_bnode_make(t, b, f, head, t->ts_base);
	ret = ccl_inner_build(t, &b, 1);
	if (ret)
		goto err;
	t->bhead = b;
	t->head = head;
	atomic64_set(&t->nleaves, 1);
	return 0;
err:
	kfree(b);
	kfree(f);
	return ret;
}

/*
 * Initialise an all-zero root: a head leaf and a log directory, durable,
 * then the magic word. A power cut before the magic leaves an empty index
 * whose objects the next recovery trace frees.
 */
static int tree_init(struct ccl_tree *t)
{
	struct pmidx_wal_cfg cfg = ccl_wal_cfg(t, false);
	struct pmidx_alloc *a = &t->pool->alloc;
	struct ccl_leaf *l;
	u64 head, dir;
	int ret;

	head = pmidx_alloc(a, sizeof(*l));
	dir = head ? pmidx_wal_format(t->pool) : 0;
	if (!dir) {
		if (head)
			pmidx_free(a, head);
		return -ENOSPC;
	}
	l = ccl_ptr(t, head);
	pmidx_memset_persist(t->pm, l, 0, sizeof(*l));
	t->root->version = cpu_to_le32(CCL_FORMAT_VERSION);
	t->root->flags = 0;
	t->root->head = cpu_to_le64(head);
	t->root->wal_dir = cpu_to_le64(dir);
	pmidx_persist(t->pm, t->root, sizeof(*t->root));
	ret = pmidx_wal_open(t->pool, dir, &cfg, &t->wal);
	if (!ret)
		ret = tree_empty(t, head);
	if (ret) {
		pmidx_wal_close(t->wal);
		t->wal = NULL;
		pmidx_free(a, dir);
		pmidx_free(a, head);
		return ret;
	}
	pmidx_store64_persist(t->pm, &t->root->magic, CCL_ROOT_MAGIC);
	/* the DRAM tree is complete before anyone sees ready */
	smp_store_release(&t->ready, true);
	return 0;
}

/* The first write to an index whose root a crash left uninitialised. */
static int ccl_lazy_init(struct ccl_tree *t)
{
	int ret = 0;

	mutex_lock(&t->init_lock);
	if (!t->ready)
		ret = tree_init(t);
	mutex_unlock(&t->init_lock);
	return ret;
}

static int ccl_open(struct pmidx_index *idx, const struct pmidx_recover *rc)
{
	struct ccl_tree *t;
	struct ccl_root root;
	char name[16];
	int ret;

	ccl_format_checks();
	t = tree_alloc(idx);
	if (!t)
		return -ENOMEM;
	ret = pmidx_read_media(&root, t->root, sizeof(root));
	if (ret)
		goto err;
	if (!root.magic) {
		/* new index (or one whose first open a crash cut short) */
		if (rc->clean)
			ret = tree_init(t);
	} else if (le64_to_cpu(root.magic) != CCL_ROOT_MAGIC ||
		   le32_to_cpu(root.version) != CCL_FORMAT_VERSION) {
		pr_err("pmidx: index %s (ccl): bad root magic or version\n",
		       idx->name);
		ret = -EUCLEAN;
	} else {
		ret = ccl_recover(t, rc);
		if (!ret)
			t->ready = true;
	}
	if (ret)
		goto err;
	snprintf(name, sizeof(name), "ccl-gc/%s", idx->name);
	ret = pmidx_gc_start(&t->gc, name, ccl_gc_work, t,
			     READ_ONCE(ccl_gc_interval_ms));
	if (ret)
		goto err;
	idx->priv = t;
	if (!rc->clean || t->replayed)
		pr_info("pmidx: index %s (ccl): %lld leaves, %llu log entries replayed in %llu us\n",
			idx->name, (long long)atomic64_read(&t->nleaves),
			t->replayed, t->recovery_ns / 1000);
	return 0;
err:
	tree_free(t);
	return ret;
}

static void ccl_close(struct pmidx_index *idx, bool clean)
{
	struct ccl_tree *t = idx->priv;

	pmidx_gc_stop(&t->gc);
	if (clean && t->ready) {
		int ret = ccl_flush_all(t);

		if (ret)
			pr_warn("pmidx: index %s (ccl): flush at detach failed (%d); the log keeps the data\n",
				idx->name, ret);
	}
	tree_free(t);
	idx->priv = NULL;
}

static void free_words(struct ccl_tree *t, u64 key, u64 val, u8 flags)
{
	if (flags & CCL_F_KIND)
		ccl_free_word(t, key);
	if (flags & CCL_F_VIND)
		ccl_free_word(t, val);
}

/* drop-index: free every object but the root (nothing else runs). */
static void ccl_destroy(struct pmidx_index *idx)
{
	struct ccl_tree *t = idx->priv;
	struct ccl_bnode *b;
	unsigned int i;

	pmidx_gc_stop(&t->gc);
	if (!t->ready)
		goto out;
	for (b = t->bhead; b; b = b->next) {
		u64 h = atomic64_read(&b->hdr);
		struct ccl_leaf *l = ccl_bn_leaf(t, h);
		unsigned long bits = ccl_meta_bitmap(le64_to_cpu(l->meta));
		u16 vind = le16_to_cpu(l->vind);

		for (i = 0; i < bn_pos(h); i++)
			free_words(t, b->slot[i].key, b->slot[i].val,
				   b->sflag[i]);
		for (i = 0; b->ovf && i < b->ovf->n; i++)
			free_words(t, b->ovf->e[i].key, b->ovf->e[i].val,
				   b->ovf->e[i].flags);
		for_each_set_bit(i, &bits, CCL_LEAF_SLOTS)
			free_words(t, (__force u64)l->slot[i].key,
				   (__force u64)l->slot[i].val,
				   (l->fp[i] & CCL_FP_IND ? CCL_F_KIND : 0) |
				   (vind & BIT(i) ? CCL_F_VIND : 0));
		pmidx_free(&t->pool->alloc, bn_leaf(h));
	}
	pmidx_wal_destroy(t->wal);
	t->wal = NULL;
out:
	tree_free(t);
	idx->priv = NULL;
}

/* ---- get ---------------------------------------------------------------- */

/*
 * What a reader copies from a buffer node and its leaf under the version.
 * Read only up to what snap_node() filled (pos, nbatch, ncand), so it is
 * declared __uninitialized: under CONFIG_INIT_STACK_ALL_ZERO the 392
 * bytes would be cleared on every get.
 */
struct rsnap {
	unsigned int	pos;
	u8		cache;
	u8		sflag[CCL_NBATCH_MAX];
	u8		sfp[CCL_NBATCH_MAX];
	struct ccl_kv	slot[CCL_NBATCH_MAX];
	struct ccl_ovf	*ovf;
	unsigned int	ncand;
	u8		cflag[CCL_LEAF_SLOTS];
	struct ccl_kv	cand[CCL_LEAF_SLOTS];
};

static void snap_node(struct ccl_tree *t, struct ccl_bnode *b, u64 h,
		      struct rsnap *s, u8 fp)
{
	struct ccl_leaf *l = ccl_bn_leaf(t, h);
	unsigned long bits;
	unsigned int i;
	u16 vind;

	s->pos = bn_pos(h);
	s->cache = READ_ONCE(b->cache);
	for (i = 0; i < t->nbatch; i++) {
		s->sflag[i] = READ_ONCE(b->sflag[i]);
		s->sfp[i] = READ_ONCE(b->sfp[i]);
		s->slot[i].key = READ_ONCE(b->slot[i].key);
		s->slot[i].val = READ_ONCE(b->slot[i].val);
	}
	s->ovf = READ_ONCE(b->ovf);
	bits = ccl_meta_bitmap(le64_to_cpu(READ_ONCE(l->meta))) &
	       ccl_fp_match(l, fp);
	vind = le16_to_cpu(READ_ONCE(l->vind));
	s->ncand = 0;
	for_each_set_bit(i, &bits, CCL_LEAF_SLOTS) {
		s->cflag[s->ncand] = (fp & CCL_FP_IND ? CCL_F_KIND : 0) |
				     (vind & BIT(i) ? CCL_F_VIND : 0);
		s->cand[s->ncand].key = (__force u64)READ_ONCE(l->slot[i].key);
		s->cand[s->ncand].val = (__force u64)READ_ONCE(l->slot[i].val);
		s->ncand++;
	}
}

/* Find the key in a validated snapshot: 1 found, 0 absent; *hit: buffer. */
static int snap_lookup(struct ccl_tree *t, struct rsnap *s, const u8 *k,
		       u32 klen, u8 fp, u64 *val, u8 *flags, bool *hit)
{
	unsigned int i;

	*hit = true;
	for (i = 0; i < s->pos; i++)
		if (s->sfp[i] == fp && ccl_key_eq(t, s->slot[i].key,
						  s->sflag[i] & CCL_F_KIND, k, klen))
			goto slot;
	for (i = s->pos; i < t->nbatch; i++)
		if ((s->cache & BIT(i)) && s->sfp[i] == fp &&
		    ccl_key_eq(t, s->slot[i].key, s->sflag[i] & CCL_F_KIND,
			       k, klen))
			goto slot;
	*hit = false;
	for (i = 0; s->ovf && i < s->ovf->n; i++) {
		struct ccl_ent *e = &s->ovf->e[i];

		if (e->fp == fp && ccl_key_eq(t, e->key, e->flags & CCL_F_KIND,
					      k, klen)) {
			*val = e->val;
			*flags = e->flags;
			return !(e->flags & CCL_F_TOMB);
		}
	}
	for (i = 0; i < s->ncand; i++) {
		if (ccl_key_eq(t, s->cand[i].key, s->cflag[i] & CCL_F_KIND,
			       k, klen)) {
			*val = s->cand[i].val;
			*flags = s->cflag[i];
			return 1;
		}
	}
	return 0;
slot:
	*val = s->slot[i].val;
	*flags = s->sflag[i];
	return !(s->sflag[i] & CCL_F_TOMB);
}

static int ccl_get(struct pmidx_index *idx, const u8 *key, u32 klen,
		   u8 *val, u32 *vlen)
{
	struct ccl_tree *t = idx->priv;
	u8 fp = ccl_fp(key, klen), flags = 0;
	u64 h, vw = 0, kpfx = ccl_pfx(key, klen);
	struct rsnap s __uninitialized;
	struct ccl_bnode *b, *nx;
	bool hit;
	int found, ret = -ENOENT;

	ccl_stat_inc(t, get);
	if (!ccl_ready(t))
		return -ENOENT;
	pmidx_epoch_enter(&t->epoch);
retry:
	b = ccl_inner_find(t, key, klen);
again:
	h = ccl_bn_read_begin(b);
	if (!h)
		goto retry;
	ccl_leaf_prefetch(t, h);
	nx = ccl_load_link(&b->next);
	if (ccl_bn_past(nx, READ_ONCE(b->npfx), kpfx, key, klen)) {
		if (ccl_bn_read_retry(b, h))
			goto again;
		b = nx;
		goto again;
	}
	snap_node(t, b, h, &s, fp);
	if (ccl_bn_read_retry(b, h))
		goto again;
	/* consistent: words may now be followed to blobs */
	found = snap_lookup(t, &s, key, klen, fp, &vw, &flags, &hit);
	if (found) {
		/* the value's one copy, machine-check safe, into @val */
		ret = ccl_word_read(t, vw, flags & CCL_F_VIND, val, *vlen, vlen);
		if (hit)
			ccl_stat_inc(t, buffer_hits);
	}
	pmidx_epoch_exit(&t->epoch);
	return ret;
}

/* ---- put / del ---------------------------------------------------------- */

static int do_write(struct ccl_tree *t, struct ccl_wreq *r)
{
	struct ccl_res res = {};
	int ret;

	for (;;) {
		pmidx_epoch_enter(&t->epoch);
		ret = ccl_buf_write(t, r, &res);
		pmidx_epoch_exit(&t->epoch);
		if (ret == CCL_RETRY)
			continue;
		/* atomic memory short (the log's chunk, a split's arrays) */
		if (ret == -ENOMEM) {
			res.want_log = true;
			ret = CCL_NEEDRES;
		}
		if (ret != CCL_NEEDRES)
			break;
		ret = -EAGAIN;		/* nothing changed yet (ccl_buf_write) */
		if (r->nowait)
			break;
		ret = ccl_res_fill(t, &res);
		if (ret)
			break;
	}
	ccl_res_release(t, &res);
	if (!r->kw_used && (r->flags & CCL_F_KIND))
		ccl_free_word(t, r->kw);
	if (!r->vw_used && (r->flags & CCL_F_VIND))
		ccl_free_word(t, r->vw);
	ccl_gc_maybe_kick(t);
	return ret;
}

/*
 * One put or delete (@val NULL): encode the key and value into fresh
 * blobs where needed, then write through the buffer.
 */
static int write_once(struct ccl_tree *t, const u8 *key, u32 klen,
		      const u8 *val, u32 vlen, u32 flags)
{
	struct ccl_wreq r = { .key = key, .klen = klen,
			      .insert = flags & PMIDX_PUT_INSERT,
			      .nowait = flags & PMIDX_WRITE_NOWAIT,
			      .fp = ccl_fp(key, klen) };
	bool ind;
	int ret;

	ret = ccl_encode(t, key, klen, &r.kw, &ind);
	if (ret)
		return ret;
	r.flags = (ind ? CCL_F_KIND : 0) | (val ? 0 : CCL_F_TOMB);
	if (val) {
		ret = ccl_encode(t, val, vlen, &r.vw, &ind);
		if (ret) {
			if (r.flags & CCL_F_KIND)
				ccl_free_word(t, r.kw);
			return ret;
		}
		r.flags |= ind ? CCL_F_VIND : 0;
	}
	return do_write(t, &r);
}

/*
 * A write, with the log's held blobs given back when the GC thread falls
 * behind or the pool is full (gc.c, ccl_gc_throttle/ccl_gc_reclaim). A
 * write that fails with -ENOSPC changed nothing, so it may be retried.
 * A no-wait write (@flags PMIDX_WRITE_NOWAIT, core/engine.h) cannot
 * collect: it answers -EAGAIN instead, having changed nothing.
 */
static int write_kv(struct ccl_tree *t, const u8 *key, u32 klen,
		    const u8 *val, u32 vlen, u32 flags)
{
	bool nowait = flags & PMIDX_WRITE_NOWAIT;
	int ret;

	if (!nowait)
		ccl_gc_throttle(t);
	else if (ccl_gc_behind(t))
		return -EAGAIN;
	ret = write_once(t, key, klen, val, vlen, flags);
	if (ret == -ENOSPC && nowait)
		return -EAGAIN;
	if (ret == -ENOSPC && ccl_gc_reclaim(t))
		ret = write_once(t, key, klen, val, vlen, flags);
	return ret;
}

static int ccl_put(struct pmidx_index *idx, const u8 *key, u32 klen,
		   const u8 *val, u32 vlen, u32 flags)
{
	struct ccl_tree *t = idx->priv;
	static const u8 empty;
	int ret;

	if (!ccl_ready(t)) {
		if (flags & PMIDX_WRITE_NOWAIT)
			return -EAGAIN;		/* the first put: a mutex */
		ret = ccl_lazy_init(t);
		if (ret)
			goto out;
	}
	/* a NULL value means a delete to write_once(): empty values are not */
	ret = write_kv(t, key, klen, val ? val : &empty, vlen, flags);
out:
	if (ret != -EAGAIN)
		ccl_stat_inc(t, put);	/* a refused one runs again */
	return ret;
}

static int ccl_del(struct pmidx_index *idx, const u8 *key, u32 klen,
		   u32 flags)
{
	struct ccl_tree *t = idx->priv;

	int ret = -ENOENT;

	if (ccl_ready(t))
		ret = write_kv(t, key, klen, NULL, 0,
			       flags & PMIDX_WRITE_NOWAIT);
	if (ret != -EAGAIN)
		ccl_stat_inc(t, del);	/* a refused one runs again */
	return ret;
}

/* ---- scan ---------------------------------------------------------------- */

/*
 * Scans. A node is read optimistically (the leaf's live slots, the
 * unflushed buffer slots, the leaf's sorted permutation) and validated by
 * its version; then its records go to the sink at once, inside the epoch
 * section (core/engine.h: emit does not sleep), in one merge pass of two
 * ordered runs:
 *  - the leaf's live slots in key order: the node's sorted permutation
 *    (ccl.h) when it matches the leaf, else the scan sorts the slots of
 *    its snapshot (at most 14, on the stack) and installs that order for
 *    the next scans when the node is still as it saw it (perm_install());
 *  - the buffer's records in key order: the unflushed slots (at most
 *    N_batch, sorted on the stack), or a recovered overflow, which
 *    recovery stores sorted.
 * On equal keys the buffer wins: its value replaces the leaf's, its
 * tombstone hides the leaf's record. Each node is one consistent view;
 * the scan as a whole is not a snapshot (kapi.c, pmidx_scan()).
 *
 * Keys and values are copied out machine-check safe into a buffer on the
 * stack, or, for a record that does not fit, into a larger one taken
 * outside the section (the scan resumes at that record); the tree keeps
 * one such buffer for the next scan (t->sbuf). Nothing else is allocated
 * and nothing is staged. The scan stays in one epoch section for up to
 * SCAN_NODES nodes, following the validated right-neighbour pointer, then
 * lets the CPU go and finds its place again from the root.
 */
#define SCAN_RBUF	320	/* record bytes on the stack: a key and more */
#define SCAN_NODES	16	/* nodes per epoch section */
#define SCAN_DONE	3	/* past the end, or the sink said stop */
#define SCAN_GROW	CCL_NEEDRES	/* a record needs st->need bytes */
#define SCAN_YIELD	CCL_RETRY	/* go on after cond_resched() */

struct ccl_sbuf {
	u32	cap;
	u8	data[];
};

/* One node, as read and validated. */
struct scan_snap {
	u64			lkey[CCL_LEAF_SLOTS], lval[CCL_LEAF_SLOTS];
	u8			lflag[CCL_LEAF_SLOTS];
	u8			lord[CCL_LEAF_SLOTS];	/* leaf slots, key order */
	unsigned int		nl;
	struct ccl_kv		bslot[CCL_NBATCH_MAX];
	u8			bflag[CCL_NBATCH_MAX];
	u8			bord[CCL_NBATCH_MAX];	/* buffer slots, key order */
	unsigned int		nb;
	struct ccl_ovf		*ovf;
	struct ccl_bnode	*next;
	u64			meta, perm;
	u32			ptag;
};

struct scan_state {
	u8		cur[PMIDX_KEY_MAX];	/* resume key */
	u32		curlen;
	bool		excl;			/* strictly after cur */
	bool		past;			/* records now are past cur */
	/*
	 * Reached by pointer: the resume key is this node's low fence, copied
	 * into cur only when needed (a restart, a yield), not per node
	 */
	struct ccl_bnode *from;
	u8		*buf;			/* record buffer: rbuf or big */
	u32		cap;
	u32		need;
	struct ccl_sbuf	*big;
	struct scan_snap s;
	u8		rbuf[SCAN_RBUF];
};

/* Key order of two words; 8-byte keys compare as big-endian integers. */
static int scan_cmp(struct ccl_tree *t, u64 a, u8 af, u64 b, u8 bf)
{
	u64 x, y;

	if ((af | bf) & CCL_F_KIND)
		return ccl_word_cmp(t, a, af & CCL_F_KIND, b, bf & CCL_F_KIND);
	x = be64_to_cpu((__force __be64)a);
	y = be64_to_cpu((__force __be64)b);
	return x < y ? -1 : x > y;
}

/* Insertion sort of @n indices into @key/@flag (n <= 14: no more needed). */
static void scan_sort(struct ccl_tree *t, u8 *ord, unsigned int n,
		      const u64 *key, const u8 *flag)
{
	unsigned int i, j;
	u8 x;

	for (i = 1; i < n; i++) {
		x = ord[i];
		for (j = i; j && scan_cmp(t, key[ord[j - 1]], flag[ord[j - 1]],
					  key[x], flag[x]) > 0; j--)
			ord[j] = ord[j - 1];
		ord[j] = x;
	}
}

/* Read node @b (header @h); return: false when it must be read again. */
static bool scan_snap(struct ccl_tree *t, struct ccl_bnode *b, u64 h,
		      struct scan_snap *s)
{
	struct ccl_leaf *l = ccl_bn_leaf(t, h);
	unsigned int i, pos = bn_pos(h);
	unsigned long bits;
	u16 vind;

	for (i = 0; i < pos; i++) {
		s->bslot[i].key = READ_ONCE(b->slot[i].key);
		s->bslot[i].val = READ_ONCE(b->slot[i].val);
		s->bflag[i] = READ_ONCE(b->sflag[i]);
		s->bord[i] = i;
	}
	s->nb = pos;
	s->ovf = READ_ONCE(b->ovf);
	s->next = ccl_load_link(&b->next);
	s->perm = READ_ONCE(b->perm);
	s->ptag = READ_ONCE(b->ptag);
	s->meta = le64_to_cpu(READ_ONCE(l->meta));
	vind = le16_to_cpu(READ_ONCE(l->vind));
	bits = ccl_meta_bitmap(s->meta);
	s->nl = 0;
	for_each_set_bit(i, &bits, CCL_LEAF_SLOTS) {
		u8 fp = READ_ONCE(l->fp[i]);

		s->lkey[i] = (__force u64)READ_ONCE(l->slot[i].key);
		s->lval[i] = (__force u64)READ_ONCE(l->slot[i].val);
		s->lflag[i] = (fp & CCL_FP_IND ? CCL_F_KIND : 0) |
			      (vind & BIT(i) ? CCL_F_VIND : 0);
		s->lord[s->nl++] = i;
	}
	return !ccl_bn_read_retry(b, h);
}

/*
 * Install the order a scan sorted from its snapshot at header @h, when
 * the node still has that header: locked with one compare-and-swap (a
 * reader never waits for a lock), unlocked with a new version so readers
 * that read the old permutation retry (ccl.h, "sorted permutation").
 */
static void perm_install(struct ccl_bnode *b, u64 h, const struct scan_snap *s)
{
	s64 v = h;
	u64 perm = 0;
	unsigned int i;

	for (i = 0; i < s->nl; i++)
		perm |= (u64)s->lord[i] << (4 * i);
	if (!atomic64_try_cmpxchg(&b->hdr, &v, h | BN_LOCKED))
		return;
	WRITE_ONCE(b->perm, perm);
	WRITE_ONCE(b->ptag, ccl_perm_tag(s->meta));
	ccl_bn_unlock(b, h | BN_LOCKED);
}

/* Put the validated snapshot's leaf and buffer slots in key order. */
static void scan_order(struct ccl_tree *t, struct ccl_bnode *b, u64 h,
		       struct scan_snap *s)
{
	u8 ord[CCL_LEAF_SLOTS];
	u32 seen = 0;
	unsigned int i;

	if (s->ptag == ccl_perm_tag(s->meta)) {
		for (i = 0; i < s->nl; i++) {
			ord[i] = ccl_perm_at(s->perm, i);
			seen |= BIT(ord[i]);
		}
		/* the same slots (never otherwise): else sort them below */
		if (!WARN_ON_ONCE(seen != ccl_meta_bitmap(s->meta))) {
			memcpy(s->lord, ord, s->nl);
			goto buffer;
		}
		scan_sort(t, s->lord, s->nl, s->lkey, s->lflag);
	} else {
		scan_sort(t, s->lord, s->nl, s->lkey, s->lflag);
		perm_install(b, h, s);
	}
buffer:
	if (!s->ovf) {
		u64 key[CCL_NBATCH_MAX];

		for (i = 0; i < s->nb; i++)
			key[i] = s->bslot[i].key;
		scan_sort(t, s->bord, s->nb, key, s->bflag);
	}
}

/*
 * Hand one record to the sink if it lies in [cur, end). Return: 0 (go
 * on), SCAN_DONE, SCAN_GROW (cur set to the record, st->need its size),
 * or -EIO / -EUCLEAN for a record that cannot be read (README: media
 * errors), or the sink's error.
 */
static int scan_rec(struct ccl_tree *t, struct scan_state *st, u64 key,
		    u64 val, u8 flags, const u8 *end, u32 end_len,
		    struct pmidx_scan_sink *sink)
{
	const u8 *k = NULL;
	u32 klen = 0, vlen;
	int c, ret;

	if (!st->past || end_len)
		/* compared where it lies, as by the sort (README: media errors) */
		k = ccl_word_bytes(t, &key, flags & CCL_F_KIND, &klen);
	if (!st->past) {
		c = pmidx_key_cmp(k, klen, st->cur, st->curlen);
		if (c < 0 || (!c && st->excl))
			return 0;
		st->past = true;
	}
	if (end_len && pmidx_key_cmp(k, klen, end, end_len) >= 0)
		return SCAN_DONE;
	/* key, then value, copied machine-check safe */
	ret = ccl_word_read(t, key, flags & CCL_F_KIND, st->buf, PMIDX_KEY_MAX,
			    &klen);
	if (ret)
		return ret;
	if (klen > PMIDX_KEY_MAX)
		return -EUCLEAN;
	ret = ccl_word_read(t, val, flags & CCL_F_VIND, st->buf + klen,
			    st->cap - klen, &vlen);
	if (ret)
		return ret;
	if (vlen > st->cap - klen) {
		memcpy(st->cur, st->buf, klen);
		st->curlen = klen;
		st->excl = false;
		st->past = false;
		st->from = NULL;
		st->need = klen + vlen;
		return SCAN_GROW;
	}
	ret = sink->emit(sink, st->buf, klen, st->buf + klen, vlen);
	return ret > 0 ? SCAN_DONE : ret;
}

/* The node's records in key order: leaf and buffer merged in one pass. */
static int scan_merge(struct ccl_tree *t, struct scan_state *st,
		      const u8 *end, u32 end_len, struct pmidx_scan_sink *sink)
{
	const struct scan_snap *s = &st->s;
	unsigned int i = 0, j = 0, nb = s->ovf ? s->ovf->n : s->nb, ls = 0;
	u64 bk = 0, bv = 0, key, val;
	u8 bf = 0, flags;
	int c, ret;

	while (i < s->nl || j < nb) {
		if (i < s->nl)
			ls = s->lord[i];
		if (j < nb) {
			if (s->ovf) {
				bk = s->ovf->e[j].key;
				bv = s->ovf->e[j].val;
				bf = s->ovf->e[j].flags;
			} else {
				bk = s->bslot[s->bord[j]].key;
				bv = s->bslot[s->bord[j]].val;
				bf = s->bflag[s->bord[j]];
			}
		}
		if (j >= nb)
			c = -1;
		else if (i >= s->nl)
			c = 1;
		else
			c = scan_cmp(t, s->lkey[ls], s->lflag[ls], bk, bf);
		if (c < 0) {
			key = s->lkey[ls];
			val = s->lval[ls];
			flags = s->lflag[ls];
			i++;
		} else {
			/* the buffer's version wins; a tombstone hides the key */
			key = bk;
			val = bv;
			flags = bf;
			j++;
			i += !c;
			if (flags & CCL_F_TOMB)
				continue;
		}
		ret = scan_rec(t, st, key, val, flags, end, end_len, sink);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * The walk's next node and leaf, while this one is merged: the next leaf
 * is the one the snapshot's meta word links (a hint; an empty leaf not
 * yet unlinked only wastes it).
 */
static void scan_prefetch(struct ccl_tree *t, const struct scan_snap *s)
{
	u64 next = ccl_meta_next(s->meta);

	if (s->next)
		pmidx_prefetch_node(s->next, ccl_bnode_size(t));
	if (next)
		pmidx_prefetch_node(ccl_ptr(t, next), sizeof(struct ccl_leaf));
}

/* Resume at @st->from's low fence: a copy that outlives the epoch. */
static void scan_resume_key(struct scan_state *st)
{
	const struct ccl_fence *f = st->from->low;

	st->curlen = f->len;
	memcpy(st->cur, f->key, f->len);
	st->excl = false;
	st->from = NULL;
}

/*
 * From st->cur on, node after node, inside an epoch section. Return:
 * SCAN_DONE, SCAN_YIELD after SCAN_NODES nodes, SCAN_GROW, or an error.
 */
static int scan_run(struct ccl_tree *t, struct scan_state *st,
		    const u8 *end, u32 end_len, struct pmidx_scan_sink *sink)
{
	unsigned int nodes = 0;
	struct ccl_bnode *b, *nx;
	u64 h;
	int ret;

retry:
	/*
	 * From the root the node found may hold keys below cur (a merge
	 * since): they are skipped by comparison with cur again.
	 */
	if (st->from)
		scan_resume_key(st);
	st->past = false;
	b = ccl_inner_find(t, st->cur, st->curlen);
	for (;;) {
		h = ccl_bn_read_begin(b);
		if (!h)
			goto retry;
		/* a node reached by pointer holds its own low: not past it */
		nx = ccl_load_link(&b->next);
		if (!st->from &&
		    ccl_bn_past(nx, READ_ONCE(b->npfx),
				ccl_pfx(st->cur, st->curlen), st->cur,
				st->curlen)) {
			if (!ccl_bn_read_retry(b, h))
				b = nx;
			continue;
		}
		if (!scan_snap(t, b, h, &st->s))
			continue;
		scan_prefetch(t, &st->s);
		/* consistent: words may now be followed to blobs */
		scan_order(t, b, h, &st->s);
		ret = scan_merge(t, st, end, end_len, sink);
		if (ret)
			return ret;
		/* the neighbour seen with the records; the epoch keeps it */
		nx = st->s.next;
		if (!nx || (end_len && ccl_fence_cmp(nx->low, end, end_len) >= 0))
			return SCAN_DONE;
		st->from = nx;
		/* reached by its pointer: a live node's keys are >= its low */
		st->past = true;
		if (++nodes == SCAN_NODES) {
			scan_resume_key(st);
			return SCAN_YIELD;
		}
		b = nx;
	}
}

/* A record buffer of at least st->need bytes: the tree's spare or new. */
static int scan_grow(struct ccl_tree *t, struct scan_state *st)
{
	struct ccl_sbuf *p = st->big;
	u32 cap;

	if (!p)
		p = xchg(&t->sbuf, NULL);
	if (!p || p->cap < st->need) {
		kvfree(p);
		cap = max_t(u32, roundup_pow_of_two(st->need), 4096);
		p = kvmalloc(sizeof(*p) + cap, GFP_KERNEL);
		st->big = p;
		st->buf = st->rbuf;
		st->cap = sizeof(st->rbuf);
		if (!p)
			return -ENOMEM;
		p->cap = cap;
	}
	st->big = p;
	st->buf = p->data;
	st->cap = p->cap;
	return 0;
}

static int ccl_scan(struct pmidx_index *idx, const u8 *start, u32 start_len,
		    bool after, const u8 *end, u32 end_len,
		    struct pmidx_scan_sink *sink)
{
	struct ccl_tree *t = idx->priv;
	struct scan_state st;
	int ret;

	BUILD_BUG_ON(SCAN_RBUF < PMIDX_KEY_MAX + 8);
	ccl_stat_inc(t, scan);
	if (!ccl_ready(t))
		return 0;
	if (start_len)
		memcpy(st.cur, start, start_len);
	st.curlen = start_len;
	st.excl = after;
	st.from = NULL;
	st.buf = st.rbuf;
	st.cap = sizeof(st.rbuf);
	st.big = NULL;
	for (;;) {
		pmidx_epoch_enter(&t->epoch);
		ret = scan_run(t, &st, end, end_len, sink);
		pmidx_epoch_exit(&t->epoch);
		if (ret == SCAN_YIELD) {
			cond_resched();
			continue;
		}
		if (ret != SCAN_GROW)
			break;
		ret = scan_grow(t, &st);
		if (ret)
			break;
	}
	/* keep the larger buffer for the next scan, if none is kept */
	if (st.big && cmpxchg(&t->sbuf, NULL, st.big))
		kvfree(st.big);
	return ret < 0 ? ret : 0;
}

/* ---- check and stats ----------------------------------------------------- */

static int ccl_check_op(struct pmidx_index *idx, u64 *keys, const char **why)
{
	struct ccl_tree *t = idx->priv;

	*keys = 0;
	if (!ccl_ready(t))
		return 0;
	return ccl_check(t, keys, why);
}

static void ccl_stats(struct pmidx_index *idx, struct pmidx_stats *s)
{
	struct ccl_tree *t = idx->priv;
	struct ccl_pcpu sum = {};
	u64 leaves = atomic64_read(&t->nleaves), pm, dram;
	int cpu;

	for_each_possible_cpu(cpu) {
		struct ccl_pcpu *c = per_cpu_ptr(t->st, cpu);

		sum.get += READ_ONCE(c->get);
		sum.put += READ_ONCE(c->put);
		sum.del += READ_ONCE(c->del);
		sum.scan += READ_ONCE(c->scan);
		sum.buffer_hits += READ_ONCE(c->buffer_hits);
		sum.leaf_flushes += READ_ONCE(c->leaf_flushes);
	}
	pmidx_stat_set(s, PMIDX_STAT_OPS_GET, sum.get);
	pmidx_stat_set(s, PMIDX_STAT_OPS_PUT, sum.put);
	pmidx_stat_set(s, PMIDX_STAT_OPS_DEL, sum.del);
	pmidx_stat_set(s, PMIDX_STAT_OPS_SCAN, sum.scan);
	pmidx_stat_set(s, PMIDX_STAT_BUFFER_HITS, sum.buffer_hits);
	pmidx_stat_set(s, PMIDX_STAT_LEAF_FLUSHES, sum.leaf_flushes);
	pmidx_stat_set(s, PMIDX_STAT_GC_RUNS, atomic64_read(&t->gc_runs));
	pmidx_stat_set(s, PMIDX_STAT_RECOVERY_NS, t->recovery_ns);
	/* the live counter: no walk, no lock (a sum read while it moves) */
	pmidx_stat_set(s, PMIDX_STAT_KEYS, max_t(s64, ccl_sum_keys(t), 0));
	pm = PMIDX_INDEX_ROOT_SIZE;
	dram = sizeof(*t);
	if (t->wal) {
		pmidx_stat_set(s, PMIDX_STAT_LOG_BYTES,
			       pmidx_wal_bytes_exact(t->wal));
		pm += PMIDX_WAL_DIR_SIZE + atomic64_read(&t->wal->chunk_bytes);
	}
	pm += leaves * sizeof(struct ccl_leaf) + atomic64_read(&t->blob_bytes);
	dram += leaves * (ccl_bnode_size(t) + 16) +
		atomic64_read(&t->ninodes) * sizeof(struct ccl_inode);
	pmidx_stat_set(s, PMIDX_STAT_PM_BYTES, pm);
	pmidx_stat_set(s, PMIDX_STAT_DRAM_BYTES, dram);
}

const struct pmidx_engine_ops pmidx_ccl_ops = {
	.id		= PMIDX_ENGINE_CCL,
	.name		= "ccl",
	.flags		= PMIDX_ENGINE_F_NOWAIT,
	.open		= ccl_open,
	.close		= ccl_close,
	.destroy	= ccl_destroy,
	.get		= ccl_get,
	.put		= ccl_put,
	.del		= ccl_del,
	.scan		= ccl_scan,
	.check		= ccl_check_op,
	.stats		= ccl_stats,
};
