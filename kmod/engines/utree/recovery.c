// SPDX-License-Identifier: GPL-2.0
/*
 * uTree open and close: rebuilding the DRAM tree (paper §3.3).
 *
 * Clean detach -> instant restart: close() saves the tree-leaf entries
 * (prefix, node offset, key length) in key order as one pmem object,
 * "persisting the volatile tree to a reserved position"; the next open
 * after a clean detach loads it straight into leaves and builds the
 * inner levels from them, reading no list node at all. An image is only
 * trusted by an open after a clean detach, which only follows the clean
 * close that wrote it: once the pool is attached, a power cut makes the
 * next open non-clean, and that one ignores the image. The image stays
 * referenced until the next clean close replaces it (see ut_recover()
 * for why it is not freed at open).
 *
 * Otherwise (a crash, or an unusable image) the tree is rebuilt from the
 * list, in parallel: the valid trackers are sorted by key and cut the
 * list into segments, one worker per segment (phase A). A tracker may be
 * stale: its node deleted, perhaps reused. So a segment only counts once
 * the walk of the segment before it, which starts at a reachable node,
 * arrives exactly at its first node; a walk that passes a tracker's key
 * without meeting its node proves that tracker stale and carries on past
 * it (phase B). Only the segments so proven are kept; then their nodes
 * claim their slots, blobs and (after a crash) allocator marks, in
 * parallel again (phase C), and the leaves are joined under new inner
 * nodes.
 *
 * Every pointer read from media is checked before it is followed: chunk
 * pointers against the pool allocator, node pointers against this
 * index's chunks plus each node's check word, blob pointers against the
 * pool bounds and their own headers, and keys must rise strictly along
 * the list (which also rules out cycles). A bad image fails with
 * -EUCLEAN. What a trace marks (chunks, tracker table, image, blobs) a
 * clean attach claims (core/alloc.c, "Claims"): an open from the image
 * reads no node to build the tree, but then reads each node it names
 * once, chunk by chunk, for its check word and blobs (and clears an odd
 * Version an update left on the media). So an object named
 * twice, by this index or another, refuses either attach, and a node
 * corrupted since the clean close refuses it too.
 */
#include <linux/bitmap.h>
#include <linux/crc32.h>
#include <linux/errno.h>
#include <linux/ktime.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include "core/alloc.h"
#include "core/blob.h"
#include "core/parallel.h"
#include "utree.h"

struct ut_trk {
	u64		off;
	const u8	*key;
	u32		len;
};

enum { WALK_END, WALK_REACHED, WALK_MISS, WALK_BAD };

/**
 * struct ut_seg - one segment of the list walk
 * @status:  how the walk stopped (WALK_*)
 * @at:      WALK_MISS: the node where it stopped (not yet taken)
 * @reached: WALK_REACHED: the tracker whose node it arrived at
 * @last:    key of the last node taken (on pmem)
 * @valid:   proven to start at a reachable node
 */
struct ut_seg {
	struct ut_builder	b;
	int			status;
	int			err;
	const char		*why;
	u64			at;
	unsigned int		reached;
	const u8		*last;
	u32			last_len;
	bool			valid;
	s64			blob_bytes;
};

/* trk[0] stands for the list head; trk[1..ntrk] are sorted by key. */
struct ut_rec {
	struct utree		*t;
	bool			tracing;
	u64			max_nodes;
	unsigned int		ntrk;
	struct ut_trk		trk[UT_TRACKERS + 1];
	struct ut_seg		*seg;
};

/* ---- media validation ------------------------------------------------ */

/*
 * The bytes of a blob read from media, or NULL if it cannot be one: it
 * must start an allocator object (a pointer into the middle of one, say
 * of a node chunk, is corrupt) big enough for its length.
 */
static const u8 *blob_peek(const struct utree *t, u64 off, u32 *len)
{
	const struct pmidx_blob *b;
	u32 l;

	if (!ut_in_data(t, off, sizeof(*b)) || off & (PMIDX_MIN_OBJ - 1))
		return NULL;
	b = pmidx_ptr(t->pm, off);
	l = le32_to_cpu(b->len);
	if (le32_to_cpu(b->len_check) != ~l || l > PMIDX_VALUE_MAX ||
	    !ut_in_data(t, off, sizeof(*b) + l) ||
	    pmidx_alloc_size(&t->pool->alloc, off) < sizeof(*b) + l)
		return NULL;
	*len = l;
	return b->data;
}

/* The node at @off read from media, checked; NULL and @why if bad. */
static struct ut_lnode *node_load(const struct utree *t, u64 off,
				  const u8 **key, u32 *len, const char **why)
{
	struct ut_lnode *n;
	u32 meta, klen, slot, bl;
	u64 kw;

	if (!ut_chunk_of(t, off, &slot)) {
		*why = "list pointer outside the index's node chunks";
		return NULL;
	}
	n = ut_node(t, off);
	meta = le32_to_cpu(n->meta);
	kw = le64_to_cpu(n->key);
	klen = ut_meta_klen(meta);
	if (le32_to_cpu(n->check) != ut_node_check(off, kw, meta) ||
	    (meta & UT_M_RESERVED) || !klen ||
	    (klen > UT_INLINE_MAX) != !!(meta & UT_M_KBLOB) ||
	    (!(meta & UT_M_VBLOB) && ut_meta_vlen(meta) > UT_INLINE_MAX)) {
		*why = "list node corrupt";
		return NULL;
	}
	if (meta & UT_M_KBLOB) {
		*key = blob_peek(t, kw, &bl);
		if (!*key || bl != klen) {
			*why = "list node key blob corrupt";
			return NULL;
		}
	} else {
		*key = (const u8 *)&n->key;
	}
	*len = klen;
	return n;
}

/* ---- root, chunks, trackers ------------------------------------------ */

static int root_check(struct utree *t, const char **why)
{
	struct ut_root r;

	if (pmidx_read_media(&r, t->root, sizeof(r))) {
		*why = "media error in the index root";
		return -EIO;
	}
	if (!r.magic) {
		if (r.head || r.chunks || r.trackers || r.image) {
			*why = "uTree root holds pointers but no magic";
			return -EUCLEAN;
		}
		return 0;
	}
	if (le64_to_cpu(r.magic) != UT_ROOT_MAGIC) {
		*why = "index root is not a uTree root";
		return -EUCLEAN;
	}
	return 0;
}

/*
 * Claim an allocator object referenced from the root or a chunk. A
 * clean attach claims it too (core/alloc.c, "Claims"): the tracker
 * table has no owner word, so another index's root naming it (a root
 * copied over ours) is only seen as a second claim.
 */
static int claim_object(struct utree *t, u64 off, size_t size, bool tracing)
{
	struct pmidx_alloc *a = &t->pool->alloc;

	if (!ut_in_data(t, off, size))
		return -EUCLEAN;
	if (tracing ? pmidx_alloc_mark(a, off) : pmidx_alloc_claim(a, off))
		return -EUCLEAN;
	if (!tracing && !pmidx_alloc_valid(a, off, size))
		return -EUCLEAN;
	return pmidx_alloc_size(a, off) >= size ? 0 : -EUCLEAN;
}

static int load_chunks(struct utree *t, bool tracing, const char **why)
{
	struct pmidx_alloc *a = &t->pool->alloc;
	u64 span = (u64)a->nr_chunks << PMIDX_CHUNK_SHIFT;
	u64 off = le64_to_cpu(t->root->chunks), n = 0;
	struct ut_chunk_hdr h;
	int ret;

	while (off) {
		if (++n > span / UT_CHUNK_SIZE) {
			*why = "node chunk list loops";
			return -EUCLEAN;
		}
		if (off < a->data_off || off - a->data_off >= span ||
		    (off - a->data_off) % UT_CHUNK_SIZE ||
		    claim_object(t, off, UT_CHUNK_SIZE, tracing)) {
			*why = "node chunk pointer is not a node chunk object, or named twice";
			return -EUCLEAN;
		}
		if (pmidx_read_media(&h, pmidx_ptr(t->pm, off), sizeof(h))) {
			*why = "media error in a node chunk header";
			return -EIO;
		}
		if (le64_to_cpu(h.magic) != UT_CHUNK_MAGIC ||
		    le32_to_cpu(h.crc) != ut_chunk_hdr_crc(&h) ||
		    le64_to_cpu(h.owner) != t->root_off) {
			*why = "node chunk header corrupt";
			return -EUCLEAN;
		}
		ret = ut_chunk_register(t, off, le32_to_cpu(h.id));
		if (ret) {
			*why = "node chunk number repeated";
			return ret;
		}
		off = le64_to_cpu(h.prev);
		cond_resched();
	}
	return 0;
}

static int load_trackers(struct utree *t, bool tracing, const char **why)
{
	u64 off = le64_to_cpu(t->root->trackers);

	if (!off)
		return 0;
	if (claim_object(t, off, sizeof(struct ut_trackers), tracing)) {
		*why = "tracker table pointer is not an object, or named twice";
		return -EUCLEAN;
	}
	t->trackers = pmidx_ptr(t->pm, off);
	return 0;
}

/* Usable trackers, sorted by key, equal keys dropped. */
static void trackers_pick(struct ut_rec *r, unsigned int threads)
{
	struct utree *t = r->t;
	const char *why;
	unsigned int i, j;
	struct ut_trk x;
	int c = 1;

	r->ntrk = 0;
	if (!t->trackers || threads < 2)
		return;
	for (i = 0; i < UT_TRACKERS; i++) {
		x.off = le64_to_cpu(READ_ONCE(t->trackers->node[i]));
		if (!x.off || !node_load(t, x.off, &x.key, &x.len, &why))
			continue;
		for (j = r->ntrk; j; j--) {
			c = pmidx_key_cmp(r->trk[j].key, r->trk[j].len, x.key, x.len);
			if (c <= 0)
				break;
		}
		if (j && !c)
			continue;
		memmove(&r->trk[j + 2], &r->trk[j + 1],
			(r->ntrk - j) * sizeof(x));
		r->trk[j + 1] = x;
		r->ntrk++;
	}
}

/* ---- the walk -------------------------------------------------------- */

static void walk_bad(struct ut_seg *s, int err, const char *why)
{
	s->status = WALK_BAD;
	s->err = err;
	if (why)
		s->why = why;
}

/*
 * Walk from @node taking nodes into @s until arriving at the node of
 * tracker @j..@end-1. A tracker whose key is passed without meeting its
 * node is stale: stop there when @strict, skip it otherwise.
 */
static void walk(struct ut_rec *r, struct ut_seg *s, u64 node,
		 unsigned int j, unsigned int end, bool strict)
{
	struct utree *t = r->t;
	struct ut_lnode *n;
	const u8 *key;
	u64 steps = 0;
	u32 len;

	while (node) {
		n = node_load(t, node, &key, &len, &s->why);
		if (!n) {
			walk_bad(s, -EUCLEAN, NULL);
			return;
		}
		for (; j < end && node != r->trk[j].off; j++) {
			if (pmidx_key_cmp(key, len, r->trk[j].key, r->trk[j].len) < 0)
				break;
			if (strict) {
				s->status = WALK_MISS;
				s->at = node;
				return;
			}
		}
		if (j < end && node == r->trk[j].off) {
			s->status = WALK_REACHED;
			s->reached = j;
			return;
		}
		if (s->last && pmidx_key_cmp(s->last, s->last_len, key, len) >= 0) {
			walk_bad(s, -EUCLEAN, "list keys out of order");
			return;
		}
		if (ut_build_add(t, &s->b, ut_pfx(key, len), ut_ent_make(node, len))) {
			walk_bad(s, -ENOMEM, "out of memory");
			return;
		}
		s->last = key;
		s->last_len = len;
		if (++steps > r->max_nodes) {
			walk_bad(s, -EUCLEAN, "list longer than its chunks");
			return;
		}
		if (!(steps & 4095))
			cond_resched();
		node = ut_w_ptr(le64_to_cpu(READ_ONCE(n->next)));
	}
	s->status = WALK_END;
}

/* Phase A: segment @i from its tracker to the next one. */
static int seg_walk_fn(void *arg, unsigned int i)
{
	struct ut_rec *r = arg;
	u64 start = i ? r->trk[i].off :
			ut_w_ptr(le64_to_cpu(READ_ONCE(r->t->root->head)));

	walk(r, &r->seg[i], start, i + 1, min(i + 2, r->ntrk + 1), true);
	return 0;
}

/* Phase B: keep the segments proven reachable, bridging stale trackers. */
static int stitch(struct ut_rec *r, const char **why)
{
	unsigned int i = 0, nseg = r->ntrk + 1;
	struct ut_seg *s;

	while (i < nseg) {
		s = &r->seg[i];
		s->valid = true;
		if (s->status == WALK_MISS)
			walk(r, s, s->at, i + 2, nseg, false);
		if (s->status == WALK_BAD) {
			*why = s->why;
			return s->err;
		}
		if (s->status != WALK_REACHED)
			break;
		i = s->reached;
	}
	return 0;
}

/*
 * A blob a list node names: a trace marks it, a clean attach claims it.
 * Either refuses a blob named twice, by this index or another. Adds its
 * allocation to @bytes.
 */
static int claim_blob(struct utree *t, bool tracing, u64 off, bool key,
		      u32 klen, s64 *bytes)
{
	struct pmidx_pool *pool = t->pool;
	u32 len;

	if (!blob_peek(t, off, &len) || (key && len != klen))
		return -EUCLEAN;
	if (tracing) {
		if (pmidx_blob_mark(pool, off))
			return -EUCLEAN;
	} else if (pmidx_alloc_claim(&pool->alloc, off) ||
		   !pmidx_alloc_valid(&pool->alloc, off,
				      sizeof(struct pmidx_blob) + len)) {
		return -EUCLEAN;
	}
	*bytes += pmidx_alloc_size(&pool->alloc, off);
	return 0;
}

/* The blobs of node @n; @why says which one is bad. */
static int claim_node_blobs(struct utree *t, bool tracing,
			    const struct ut_lnode *n, s64 *bytes,
			    const char **why)
{
	u32 meta = le32_to_cpu(n->meta);

	if ((meta & UT_M_KBLOB) &&
	    claim_blob(t, tracing, le64_to_cpu(n->key), true,
		       ut_meta_klen(meta), bytes)) {
		*why = "list node key blob invalid or shared";
		return -EUCLEAN;
	}
	if ((meta & UT_M_VBLOB) &&
	    claim_blob(t, tracing, le64_to_cpu(n->val), false, 0, bytes)) {
		*why = "list node value blob invalid or shared";
		return -EUCLEAN;
	}
	return 0;
}

/*
 * Clear the @bits (UT_NEXT_DEL, UT_VER_MASK) left on a live node read at
 * open: after a crash, the traces of a removal that did not commit or of
 * an update; after a clean detach, only a Version whose release was never
 * written back (list.c, ut_ver_release()) - a Deleted bit there is
 * corruption, left for readers and CHECK to report. Either would stall
 * every writer of the key. The worker fences its clears at its end: a
 * mark cleared only in the caches would be back after the next clean
 * detach, where the clean open takes it for corruption.
 */
static void clear_traces(struct utree *t, struct ut_lnode *n, u64 bits)
{
	u64 w = le64_to_cpu(READ_ONCE(n->next));

	if (w & bits) {
		WRITE_ONCE(n->next, cpu_to_le64(w & ~bits));
		pmidx_flush(t->pm, &n->next, sizeof(n->next));
	}
}

/* Phase C: a node of a proven segment takes its slot, blobs, marks. */
static int claim_node(struct ut_rec *r, struct ut_seg *s, u64 off)
{
	struct utree *t = r->t;
	struct ut_lnode *n = ut_node(t, off);
	struct ut_chunk *c;
	u32 slot;

	c = ut_chunk_of(t, off, &slot);
	if (!c || test_and_set_bit(slot, c->used)) {
		s->why = "list node reached twice";
		return -EUCLEAN;
	}
	if (claim_node_blobs(t, r->tracing, n, &s->blob_bytes, &s->why))
		return -EUCLEAN;
	clear_traces(t, n, UT_NEXT_DEL | UT_VER_MASK);
	return 0;
}

static int seg_claim_fn(void *arg, unsigned int i)
{
	struct ut_rec *r = arg;
	struct ut_seg *s = &r->seg[i];
	struct ut_leaf *l;
	unsigned int k;
	int ret = 0;

	if (!s->valid)
		return 0;
	for (l = s->b.first; l && !ret; l = l->next) {
		for (k = 0; k < l->h.count && !ret; k++)
			ret = claim_node(r, s, ut_ent_node(l->ent[k]));
		cond_resched();
	}
	pmidx_fence(r->t->pm);
	s->err = ret;
	return ret;
}

static int run(struct ut_rec *r, unsigned int n,
	       int (*fn)(void *arg, unsigned int i))
{
	return n > 1 ? pmidx_run_parallel(n, fn, r) : fn(r, 0);
}

/* Rebuild the tree by walking the list. */
static int list_rebuild(struct utree *t, const struct pmidx_recover *rc,
			s64 *keys, s64 *blob_bytes, const char **why)
{
	struct ut_builder all = {};
	unsigned int i, nseg;
	struct ut_rec *r;
	int ret;

	r = kvzalloc(sizeof(*r), GFP_KERNEL);
	if (!r)
		return -ENOMEM;
	r->t = t;
	r->tracing = !rc->clean;
	r->max_nodes = (u64)t->live_chunks * UT_CHUNK_NODES;
	trackers_pick(r, rc->threads);
	nseg = r->ntrk + 1;
	r->seg = kvcalloc(nseg, sizeof(*r->seg), GFP_KERNEL);
	ret = -ENOMEM;
	if (!r->seg)
		goto out;

	ret = run(r, nseg, seg_walk_fn);
	if (!ret)
		ret = stitch(r, why);
	if (!ret) {
		ret = run(r, nseg, seg_claim_fn);
		for (i = 0; ret && i < nseg; i++)
			if (r->seg[i].err)
				*why = r->seg[i].why;
	}
	for (i = 0; i < nseg; i++) {
		if (!ret && r->seg[i].valid) {
			*blob_bytes += r->seg[i].blob_bytes;
			ut_build_append(&all, &r->seg[i].b);
		} else {
			ut_build_discard(t, &r->seg[i].b);
		}
	}
	if (!ret) {
		*keys = all.count;
		ret = ut_tree_build(t, &all);
	}
	ut_build_discard(t, &all);
	if (!ret)
		t->open_segments = nseg;
out:
	kvfree(r->seg);
	kvfree(r);
	return ret;
}

/* ---- saved tree image ------------------------------------------------ */

static u32 image_hdr_crc(const struct ut_image_hdr *h)
{
	return ~__crc32c_le(~0U, (const u8 *)h,
			    offsetof(struct ut_image_hdr, hdr_crc));
}

static void clear_used(struct utree *t)
{
	struct ut_chunk *c;
	u32 id;

	for (id = 0; id < t->nr_chunks; id++) {
		c = ut_chunk_get(t, id);
		if (c)
			bitmap_zero(c->used, UT_CHUNK_NODES);
	}
}

/*
 * The image pointer @off if it names an image of ours (header checks),
 * claimed; else 0, leaving the object alone: it may be another index's.
 */
static u64 image_claim(struct utree *t, u64 off, bool tracing)
{
	struct ut_image_hdr h;

	if (!ut_in_data(t, off, sizeof(h)) || off & (PMIDX_MIN_OBJ - 1) ||
	    pmidx_read_media(&h, pmidx_ptr(t->pm, off), sizeof(h)) ||
	    le64_to_cpu(h.magic) != UT_IMAGE_MAGIC ||
	    le32_to_cpu(h.hdr_crc) != image_hdr_crc(&h) ||
	    le64_to_cpu(h.owner) != t->root_off ||
	    claim_object(t, off, sizeof(h), tracing))
		return 0;
	return off;
}

/* Load the image of a clean close into @b; nothing on pmem is read but it. */
static int image_load(struct utree *t, u64 off, struct ut_builder *b)
{
	struct pmidx_alloc *a = &t->pool->alloc;
	const struct ut_image_hdr *h = pmidx_ptr(t->pm, off);
	u64 count, i, pfx, ent, prev = 0, node;
	struct ut_chunk *c;
	u32 slot;

	/* @off is a live object: the caller claimed it */
	if (le64_to_cpu(h->magic) != UT_IMAGE_MAGIC ||
	    le32_to_cpu(h->hdr_crc) != image_hdr_crc(h) ||
	    le64_to_cpu(h->owner) != t->root_off)
		return -EUCLEAN;
	count = le64_to_cpu(h->count);
	if (count > (pmidx_alloc_size(a, off) - sizeof(*h)) / sizeof(h->e[0]) ||
	    le32_to_cpu(h->crc) != ~__crc32c_le(~0U, (const u8 *)h->e,
						count * sizeof(h->e[0])))
		return -EUCLEAN;
	for (i = 0; i < count; i++) {
		pfx = le64_to_cpu(h->e[i].pfx);
		ent = le64_to_cpu(h->e[i].ent);
		node = ut_ent_node(ent);
		if (!ut_ent_len(ent) || ent >> (UT_ENT_LEN_SHIFT + 8) ||
		    pfx < prev)
			return -EUCLEAN;
		c = ut_chunk_of(t, node, &slot);
		if (!c || test_and_set_bit(slot, c->used))
			return -EUCLEAN;
		if (ut_build_add(t, b, pfx, ent))
			return -ENOMEM;
		prev = pfx;
		if (!(i & 4095))
			cond_resched();
	}
	return 0;
}

/*
 * The nodes an image names, read after it is loaded: each must pass its
 * check word and claims its blobs, as a list walk's would, and loses a
 * Version an update left (clear_traces()). Workers take
 * chunks round robin so each streams through whole chunks.
 */
struct ut_image_worker {
	s64		blob_bytes;
	const char	*why;
};

struct ut_image_claims {
	struct utree		*t;
	unsigned int		n;
	struct ut_image_worker	w[];
};

static int image_nodes_fn(void *arg, unsigned int i)
{
	struct ut_image_claims *ic = arg;
	struct ut_image_worker *w = &ic->w[i];
	struct utree *t = ic->t;
	struct ut_lnode *n;
	struct ut_chunk *c;
	unsigned int slot;
	const u8 *key;
	u32 id, len;

	for (id = i; id < t->nr_chunks; id += ic->n) {
		c = ut_chunk_get(t, id);
		if (!c)
			continue;
		for_each_set_bit(slot, c->used, UT_CHUNK_NODES) {
			n = node_load(t, c->off + UT_CHUNK_HDR +
					 (u64)slot * UT_NODE_SIZE,
				      &key, &len, &w->why);
			if (!n || claim_node_blobs(t, false, n, &w->blob_bytes,
						   &w->why))
				return -EUCLEAN;
			clear_traces(t, n, UT_VER_MASK);
		}
		cond_resched();
	}
	/* this worker's clears durable before the index is used */
	pmidx_fence(t->pm);
	return 0;
}

static int image_claim_nodes(struct utree *t, unsigned int threads,
			     s64 *blob_bytes, const char **why)
{
	struct ut_image_claims *ic;
	unsigned int i, n;
	int ret;

	n = clamp_t(unsigned int, t->nr_chunks, 1, max(threads, 1U));
	ic = kvzalloc(struct_size(ic, w, n), GFP_KERNEL);
	if (!ic)
		return -ENOMEM;
	ic->t = t;
	ic->n = n;
	ret = n > 1 ? pmidx_run_parallel(n, image_nodes_fn, ic) :
		      image_nodes_fn(ic, 0);
	for (i = 0; i < n; i++) {
		*blob_bytes += ic->w[i].blob_bytes;
		if (ic->w[i].why && ret)
			*why = ic->w[i].why;
	}
	kvfree(ic);
	return ret;
}

/**
 * ut_save_image - save the tree-leaf entries for an instant restart
 *
 * Context: clean close, no user left. Without room for the image the
 * next open walks the list instead. The image loaded at open (still
 * referenced from the root until now) is replaced and freed.
 */
void ut_save_image(struct utree *t)
{
	struct ut_image_hdr *h;
	struct ut_leaf *l;
	u64 n = 0, i = 0, off;
	unsigned int k;
	s64 bytes = 0;
	int cpu;

	if (!t->root->magic)
		return;		/* never used: an all-zero root says it all */
	for (l = ut_leaf_first(t); l; l = l->next)
		n += l->h.count;
	off = pmidx_alloc(&t->pool->alloc, sizeof(*h) + n * sizeof(h->e[0]));
	if (!off) {
		pr_warn("pmidx: index %s: no room for the uTree image, next open walks the list\n",
			t->idx->name);
		goto drop_old;
	}
	h = pmidx_ptr(t->pm, off);
	for (l = ut_leaf_first(t); l; l = l->next) {
		for (k = 0; k < l->h.count; k++, i++) {
			h->e[i].pfx = cpu_to_le64(l->pfx[k]);
			h->e[i].ent = cpu_to_le64(l->ent[k]);
		}
		cond_resched();
	}
	pmidx_flush(t->pm, h->e, n * sizeof(h->e[0]));
	for_each_possible_cpu(cpu)
		bytes += per_cpu_ptr(t->pcpu, cpu)->blob_bytes;
	memset(h, 0, sizeof(*h));
	h->magic = cpu_to_le64(UT_IMAGE_MAGIC);
	h->count = cpu_to_le64(n);
	h->blob_bytes = cpu_to_le64(bytes);
	h->owner = cpu_to_le64(t->root_off);
	h->crc = cpu_to_le32(~__crc32c_le(~0U, (const u8 *)h->e,
					  n * sizeof(h->e[0])));
	h->hdr_crc = cpu_to_le32(image_hdr_crc(h));
	pmidx_persist(t->pm, h, sizeof(*h));
drop_old:
	/* the image this session was opened from is stale by now */
	pmidx_store64_persist(t->pm, &t->root->image, off);
	if (t->old_image)
		pmidx_free(&t->pool->alloc, t->old_image);
	t->old_image = 0;
}

/**
 * ut_trackers_refresh - point the fixed trackers evenly over the keys
 *
 * Context: open, no concurrent user.
 */
void ut_trackers_refresh(struct utree *t)
{
	struct ut_trackers *tr = t->trackers;
	u64 total = 0, pos = 0, step, next;
	u64 node[UT_TRACKERS] = {};
	unsigned int k, slot = 0;
	struct ut_leaf *l;

	if (!tr)
		return;
	for (l = ut_leaf_first(t); l; l = l->next)
		total += l->h.count;
	if (total >= 2 * UT_TRACK_FIXED) {
		step = total / (UT_TRACK_FIXED + 1);
		next = step;
		for (l = ut_leaf_first(t); l && slot < UT_TRACK_FIXED; l = l->next) {
			for (k = 0; k < l->h.count && slot < UT_TRACK_FIXED; k++, pos++) {
				if (pos != next)
					continue;
				node[slot++] = ut_ent_node(l->ent[k]);
				next += step;
			}
		}
	}
	for (k = 0; k < UT_TRACKERS; k++)
		WRITE_ONCE(tr->node[k], cpu_to_le64(node[k]));
	pmidx_persist(t->pm, tr, sizeof(*tr));
}

/* ---- open ------------------------------------------------------------ */

/*
 * The head word must name the first tree entry, with no Deleted bit or
 * Version: an open from the image reads no node, and a writer that
 * inserts in front would otherwise never find the head it expects.
 */
static int head_check(struct utree *t, const char **why)
{
	u64 head = le64_to_cpu(t->root->head), first = 0;
	struct ut_leaf *l;
	const u8 *key;
	u32 len;

	for (l = ut_leaf_first(t); l && !l->h.count; l = l->next)
		;
	if (l)
		first = ut_ent_node(l->ent[0]);
	if (head != first) {
		*why = "list head disagrees with the first key";
		return -EUCLEAN;
	}
	if (head && !node_load(t, head, &key, &len, why))
		return -EUCLEAN;
	return 0;
}

/**
 * ut_recover - build the DRAM state of an index at open
 *
 * Context: open(); during a trace (!@rc->clean) no allocation is allowed
 * and every referenced allocator object is marked exactly once.
 */
int ut_recover(struct utree *t, const struct pmidx_recover *rc)
{
	s64 keys = 0, blob_bytes = 0;
	u64 image, start = ktime_get_ns();
	struct ut_builder b = {};
	const char *why = NULL;
	int ret;

	ret = root_check(t, &why);
	if (ret || !t->root->magic)
		goto out;
	ret = load_chunks(t, !rc->clean, &why);
	if (!ret)
		ret = load_trackers(t, !rc->clean, &why);
	if (ret)
		goto out;

	/*
	 * A saved image is loaded only after a clean detach, and is neither
	 * freed nor unlinked at open: until the pool has durably left its
	 * clean state, a power cut would make the next attach trust
	 * allocator bitmaps that still hold it. It stays referenced (and a
	 * trace marks it) until the next clean close replaces it.
	 */
	image = le64_to_cpu(t->root->image);
	if (image && !image_claim(t, image, !rc->clean)) {
		pmidx_store64_persist(t->pm, &t->root->image, 0);
		image = 0;
	}
	t->old_image = image;
	if (image && rc->clean) {
		ret = image_load(t, image, &b);
		if (!ret) {
			/* claims taken: a list walk now would claim twice */
			ret = image_claim_nodes(t, rc->threads, &blob_bytes,
						&why);
			if (ret)
				goto out;
			keys = b.count;
			ret = ut_tree_build(t, &b);
			if (ret)
				goto out;
		} else {
			pr_warn("pmidx: index %s: uTree image unusable (%d), walking the list\n",
				t->idx->name, ret);
			ut_build_discard(t, &b);
			clear_used(t);
		}
	}
	if (!image || !rc->clean || ret) {
		ret = list_rebuild(t, rc, &keys, &blob_bytes, &why);
		if (ret)
			goto out;
	}
	ret = head_check(t, &why);
	if (ret)
		goto out;
	ut_alloc_rebuild(t);
	per_cpu_ptr(t->pcpu, 0)->keys = keys;
	per_cpu_ptr(t->pcpu, 0)->blob_bytes = blob_bytes;
	ut_trackers_refresh(t);
	pr_info("pmidx: index %s: uTree open: %lld keys, %s, %llu us\n",
		t->idx->name, keys, !t->open_segments ? "saved tree image" :
		t->open_segments == 1 ? "list walk" : "parallel list walk",
		(ktime_get_ns() - start) / 1000);
out:
	ut_build_discard(t, &b);
	if (ret && why)
		pr_err("pmidx: index %s: uTree open failed: %s\n", t->idx->name, why);
	return ret;
}
