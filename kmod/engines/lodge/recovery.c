// SPDX-License-Identifier: GPL-2.0
/*
 * Open (the paper has no recovery; this is ours, README "Recovery"):
 *  1. walk the leaf list from the head (next[use]), checking every offset
 *     before it is read; with a trace, mark each leaf and its blobs. The
 *     fence of a leaf is the one it stores (its split key: the exact
 *     range its ts speaks for);
 *  2. read every log the directory names, record by record until one
 *     fails its version or crc;
 *  3. sort the records by key, then sequence; per key only the newest
 *     matters, and only when it is newer than the ts of the leaf whose
 *     range holds the key: it goes back into the buffer part and counts
 *     as valid in its log;
 *  4. group the leaves into last-level nodes (half full, the buffered
 *     KVs beside them), build the upper levels;
 *  5. logs left with no valid record are unnamed (directory slot
 *     cleared) and freed (by the trace when there is one); the others
 *     stay sealed. Sequences go on above everything seen.
 * Nothing is allocated from the pool here.
 */
#include <linux/errno.h>
#include <linux/crc32c.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include "core/blob.h"
#include "core/pmem.h"
#include "lodge.h"

struct rrec {
	u64			seq;
	u64			off;
	const u8		*k;
	u32			klen, vlen;
	u8			flags;
	struct lodge_vlog	*v;
};

struct rleaf {
	u64			off;
	u64			ts;
	u32			cnt;
	struct lodge_key	*fence;
};

struct rstate {
	struct lodge		*t;
	bool			trace;
	struct rleaf		*lv;
	size_t			nl, capl;
	struct rrec		*rv;
	size_t			nr, capr;
	s64			keys;
	u64			maxseq;
	const char		*why;
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

/*
 * Claim the object at @off (with a trace: mark it, which also checks it
 * starts an object; a second claim fails) and check [off, off + len) is
 * inside it: marked objects are the live ones while a trace runs.
 */
static bool claim(struct rstate *rs, u64 off, size_t len)
{
	struct lodge *t = rs->t;

	if (off & 255)
		return false;
	if (rs->trace && pmidx_alloc_mark(&t->pool->alloc, off))
		return false;
	return pmidx_alloc_valid(&t->pool->alloc, off, len);
}

static bool blob_ok(struct rstate *rs, u64 off)
{
	struct lodge *t = rs->t;
	u32 len;

	if (off & 15)
		return false;
	if (rs->trace && pmidx_alloc_mark(&t->pool->alloc, off))
		return false;
	if (!pmidx_alloc_valid(&t->pool->alloc, off, sizeof(struct pmidx_blob)))
		return false;
	if (pmidx_blob_read_len(t->pool, off, &len))
		return false;
	return pmidx_alloc_valid(&t->pool->alloc, off,
				 sizeof(struct pmidx_blob) + len);
}

static int walk_leaves(struct rstate *rs)
{
	struct lodge *t = rs->t;
	u64 off = t->head, max = t->pm->size / t->leaf_size, bits, kind, vind;
	struct lodge_leaf *l;
	const u8 *mk, *k;
	u32 mlen, len;
	int s, ret;

	while (off) {
		if (rs->nl >= max || !claim(rs, off, t->leaf_size))
			return bad(rs, "bad leaf offset (or named twice)");
		l = lodge_leaf_ptr(t, off);
		bits = le64_to_cpu(l->bitmap);
		if (bits & ~(lodge_bitmap_mask(t) | LODGE_USE_BIT))
			return bad(rs, "leaf bitmap beyond its slots");
		bits &= lodge_bitmap_mask(t);
		kind = le64_to_cpu(l->kind);
		vind = le64_to_cpu(l->vind);
		mk = NULL;
		mlen = 0;
		for (; bits; bits &= bits - 1) {
			s = __ffs64(bits);
			if (kind & BIT_ULL(s)) {
				u64 b = le64_to_cpu(l->slot[s].key);

				if (!blob_ok(rs, b))
					return bad(rs, "bad key blob");
			}
			if (vind & BIT_ULL(s)) {
				u64 b = le64_to_cpu(l->slot[s].val);

				if (!blob_ok(rs, b))
					return bad(rs, "bad value blob");
			}
			k = lodge_slot_key(t, l, s, &len);
			if (!len || len > PMIDX_KEY_MAX)
				return bad(rs, "bad key length");
			if (!mk || pmidx_key_cmp(k, len, mk, mlen) < 0) {
				mk = k;
				mlen = len;
			}
		}
		ret = grow((void **)&rs->lv, &rs->capl, rs->nl, sizeof(*rs->lv));
		if (ret)
			return ret;
		rs->lv[rs->nl] = (struct rleaf){ .off = off,
			.ts = le64_to_cpu(l->ts) & LODGE_TS_MASK,
			.cnt = hweight64(le64_to_cpu(l->bitmap) &
					 lodge_bitmap_mask(t)) };
		len = le64_to_cpu(l->flen);
		if (len > 8 && !blob_ok(rs, le64_to_cpu(l->fence)))
			return bad(rs, "bad fence blob");
		k = lodge_leaf_fence(t, l, &len);
		if (!rs->nl != !k || len > PMIDX_KEY_MAX ||
		    (mk && k && pmidx_key_cmp(k, len, mk, mlen) > 0))
			return bad(rs, "bad leaf fence");
		if (k) {
			rs->lv[rs->nl].fence = lodge_key_new(k, len, GFP_KERNEL);
			if (!rs->lv[rs->nl].fence)
				return -ENOMEM;
		}
		rs->keys += rs->lv[rs->nl].cnt;
		rs->maxseq = max(rs->maxseq, rs->lv[rs->nl].ts);
		rs->nl++;
		off = lodge_leaf_next(l);
	}
	return 0;
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

static int read_log(struct rstate *rs, u32 slot, u64 off)
{
	struct lodge *t = rs->t;
	struct lodge_vlog *v;
	struct lodge_log *l;
	u32 size, pos, rsz, crc, c0;
	struct lodge_rec *r, h;
	int ret;

	if (!claim(rs, off, LODGE_LOG_HDR))
		return bad(rs, "bad log offset (or named twice)");
	l = pmidx_ptr(t->pm, off);
	size = le32_to_cpu(l->size);
	if (le64_to_cpu(l->magic) != LODGE_LOG_MAGIC || size < LODGE_LOG_HDR ||
	    !pmidx_alloc_valid(&t->pool->alloc, off, size) ||
	    le64_to_cpu(l->version) > le64_to_cpu(t->root->vhwm))
		return bad(rs, "bad log header");
	v = kzalloc(sizeof(*v), GFP_KERNEL);
	if (!v)
		return -ENOMEM;
	v->off = off;
	v->version = le64_to_cpu(l->version);
	v->size = size;
	v->slot = slot;
	list_add_tail(&v->node, &t->logs);
	t->nlogs++;
	atomic64_add(size, &t->log_bytes_live);
	set_bit(slot, t->dir_map);
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
		ret = grow((void **)&rs->rv, &rs->capr, rs->nr, sizeof(*rs->rv));
		if (ret)
			return ret;
		rs->rv[rs->nr++] = (struct rrec){
			.seq = le64_to_cpu(h.seqfl) & LODGE_TS_MASK,
			.off = off + pos, .k = r->data, .klen = h.klen,
			.vlen = le32_to_cpu(h.vlen), .v = v,
			.flags = le64_to_cpu(h.seqfl) >> LODGE_R_FLAGS_SHIFT };
		rs->maxseq = max(rs->maxseq, rs->rv[rs->nr - 1].seq);
	}
	v->used = pos;
	return 0;
}

static int rrec_cmp(const void *a, const void *b)
{
	const struct rrec *x = a, *y = b;
	int c = pmidx_key_cmp(x->k, x->klen, y->k, y->klen);

	if (c)
		return c;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* heap sort: no recursion, no allocation */
static void rsort(struct rrec *v, size_t n)
{
	size_t i, c, r, end;
	struct rrec tmp;

	for (i = n / 2; i-- > 0;) {
		for (r = i; (c = 2 * r + 1) < n; r = c) {
			if (c + 1 < n && rrec_cmp(&v[c], &v[c + 1]) < 0)
				c++;
			if (rrec_cmp(&v[r], &v[c]) >= 0)
				break;
			tmp = v[r]; v[r] = v[c]; v[c] = tmp;
		}
	}
	for (end = n; end-- > 1;) {
		tmp = v[0]; v[0] = v[end]; v[end] = tmp;
		for (r = 0; (c = 2 * r + 1) < end; r = c) {
			if (c + 1 < end && rrec_cmp(&v[c], &v[c + 1]) < 0)
				c++;
			if (rrec_cmp(&v[r], &v[c]) >= 0)
				break;
			tmp = v[r]; v[r] = v[c]; v[c] = tmp;
		}
	}
}

/* The leaf whose range holds @k. */
static size_t leaf_of(struct rstate *rs, const u8 *k, u32 klen)
{
	size_t lo = 1, hi = rs->nl, mid, r = 0;

	while (lo < hi) {
		mid = (lo + hi) / 2;
		if (lodge_kcmp(rs->lv[mid].fence, k, klen) <= 0) {
			r = mid;
			lo = mid + 1;
		} else {
			hi = mid;
		}
	}
	return r;
}

/* Steps 3 and 4: the live records into nodes built over the leaves. */
static int build(struct rstate *rs)
{
	struct lodge *t = rs->t;
	struct lodge_lin **lins;
	size_t i, j, k, r = 0, nlin = 0, *pend, np = 0;
	int ret = -ENOMEM;

	/* the newest record per key, when newer than its leaf */
	pend = kvmalloc_array(rs->nr + 1, sizeof(*pend), GFP_KERNEL);
	lins = kvcalloc(rs->nl, sizeof(*lins), GFP_KERNEL);
	if (!pend || !lins)
		goto out;
	for (i = 0; i < rs->nr; i++) {
		if (i + 1 < rs->nr && !pmidx_key_cmp(rs->rv[i].k, rs->rv[i].klen,
						     rs->rv[i + 1].k,
						     rs->rv[i + 1].klen))
			continue;
		if (rs->rv[i].seq <= rs->lv[leaf_of(rs, rs->rv[i].k,
						    rs->rv[i].klen)].ts)
			continue;
		pend[np++] = i;
	}
	t->replayed = np;
	for (i = 0; i < rs->nl; i = j) {
		struct lodge_lin *x;
		size_t nb = 0, cap, want = max_t(u32, 1, t->cap / 2);

		/* leaves [i, j) and their records [r, r + nb) */
		for (j = i; j < rs->nl && j - i < want; j++) {
			size_t e = r + nb;

			while (e < np && leaf_of(rs, rs->rv[pend[e]].k,
						 rs->rv[pend[e]].klen) == j)
				e++;
			if (j > i && (j - i) + 1 + (e - r) + 1 > LODGE_CAP_MAX)
				break;
			nb = e - r;
		}
		cap = max_t(size_t, t->cap, (j - i) + nb + 1);
		if (cap > LODGE_CAP_MAX) {
			ret = bad(rs, "too many buffered writes for one leaf");
			goto out;
		}
		x = lodge_lin_alloc(t, cap, GFP_KERNEL);
		if (!x)
			goto out;
		lins[nlin++] = x;
		x->nidx = j - i;
		for (k = 0; k < x->nidx; k++) {
			struct lodge_key *f = rs->lv[i + k].fence, *c = NULL;

			x->slot[k].w = rs->lv[i + k].off;
			x->leaf_count[k] = rs->lv[i + k].cnt;
			if (f) {
				c = lodge_key_new(f->b, f->len, GFP_KERNEL);
				if (!c)
					goto out;
			}
			if (k)
				x->slot[k].key = c;
			else
				x->lo = c;
		}
		for (; nb; nb--, r++) {
			struct rrec *rr = &rs->rv[pend[r]];
			unsigned int li = leaf_of(rs, rr->k, rr->klen) - i;
			struct lodge_slot *b = &x->slot[x->nidx + x->nbuf];
			struct lodge_leaf *l = lodge_leaf_ptr(t, x->slot[li].w);
			bool in = lodge_leaf_find(t, l, rr->k, rr->klen) >= 0;

			b->key = lodge_key_new(rr->k, rr->klen, GFP_KERNEL);
			if (!b->key)
				goto out;
			b->w = 0;
			if (rr->vlen <= 8)
				memcpy(&b->w, rr->k + rr->klen, rr->vlen);
			b->rec = rr->off;
			b->seq = rr->seq;
			b->vlen = rr->vlen;
			b->flags = rr->flags & LODGE_R_TOMB ? LODGE_B_TOMB : 0;
			x->buf_ver[x->nidx + x->nbuf] = rr->v;
			x->leaf_count[x->nidx + x->nbuf] = li;
			x->nbuf++;
			atomic_inc(&rr->v->valid);
			if (b->flags)
				rs->keys -= in;
			else
				rs->keys += !in;
		}
	}
	for (i = 1; i < nlin; i++) {
		lins[i - 1]->hi = lodge_key_new(lins[i]->lo->b, lins[i]->lo->len,
						GFP_KERNEL);
		if (!lins[i - 1]->hi)
			goto out;
	}
	ret = lodge_build(t, lins, nlin);
out:
	if (ret) {
		for (i = 0; i < nlin; i++)
			lodge_lin_free(lins[i], true);
	}
	kvfree(lins);
	kvfree(pend);
	return ret;
}

/* Step 5: with a trace, only the logs kept are marked (the rest go) */
static int settle_logs(struct rstate *rs)
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
	return 0;
}

int lodge_recover(struct lodge *t, const struct pmidx_recover *rc)
{
	struct lodge_root *r = t->root;
	struct rstate rs = { .t = t, .trace = !rc->clean };
	u64 dir;
	u32 i, ls;
	int ret;

	if (!r->magic)
		return 0;
	ls = le32_to_cpu(r->leaf_size);
	/*
	 * The magic is stored after the head leaf is durable and the head is
	 * never unlinked (lodge.c tree_init()), so a root without a head is
	 * corrupt. Let through, it would leave no leaf: build() judges each
	 * replayed record against the ts of leaf 0 that rs.lv does not hold,
	 * and lodge_build() takes the top node from an empty level.
	 */
	if (le64_to_cpu(r->magic) != LODGE_ROOT_MAGIC ||
	    le32_to_cpu(r->version) != LODGE_FORMAT_VERSION ||
	    (ls != 256 && ls != 512 && ls != 1024) || !r->head)
		return bad(&rs, "bad root");
	t->leaf_size = ls;
	t->slots = (ls - LODGE_LEAF_HDR) / 16;
	t->head = le64_to_cpu(r->head);
	dir = le64_to_cpu(r->dir);
	if (!claim(&rs, dir, LODGE_DIR_SIZE))
		return bad(&rs, "bad log directory offset");
	t->dir = pmidx_ptr(t->pm, dir);
	if (le64_to_cpu(t->dir->magic) != LODGE_DIR_MAGIC ||
	    le32_to_cpu(t->dir->nslots) != LODGE_DIR_SLOTS)
		return bad(&rs, "bad log directory");
	ret = walk_leaves(&rs);
	if (!ret)
		ret = fix_fences(&rs);
	for (i = 0; !ret && i < LODGE_DIR_SLOTS; i++) {
		u64 off = le64_to_cpu(t->dir->slot[i]);

		if (off)
			ret = read_log(&rs, i, off);
	}
	if (!ret) {
		rsort(rs.rv, rs.nr);
		ret = build(&rs);
	}
	if (!ret)
		ret = settle_logs(&rs);
	if (!ret) {
		atomic64_set(&t->seq, rs.maxseq);
		t->next_ver = le64_to_cpu(r->vhwm) + 1;
		atomic64_set(&t->nleaves, rs.nl);
		this_cpu_add(t->st->keys, rs.keys);
		t->ready = true;
	}
	for (i = 0; i < rs.nl; i++)
		kfree(rs.lv[i].fence);
	kvfree(rs.lv);
	kvfree(rs.rv);
	return ret;
}
