// SPDX-License-Identifier: GPL-2.0
/*
 * B^3-tree engine (Cha et al., "B^3-Tree: Byte-Addressable Binary B-Tree
 * for Persistent Memory", ACM TOS 16(3), 2020): operations.
 *
 * Get (Algorithm 2): lock-free descent to the leaf, BST search, the
 * value read under no lock (a value word changes by one 8-byte store).
 *
 * Put (Algorithm 1), under the leaf's write lock:
 *   new key: fill the next free slot (node with nil children), flush it
 *     (flush 1), then store its index into the parent node's child word
 *     (or the page's root word) and flush that (flush 2): the commit;
 *   existing key, value that can change in place (blob to blob, or an
 *     inline value of the same length): one 8-byte store of the value
 *     word, flushed;
 *   existing key otherwise: a copy of the node with the new value and
 *     the same children in a free slot, flushed, then the parent's child
 *     word repointed to it (2 flushes).
 *   A value over 8 bytes is a blob written and persisted before, out of
 *   the epoch section (§3.4.2); a key over 8 bytes too, when it is new.
 *   A full page sends the writer to smo.c (defragmentation or split) and
 *   back.
 * Delete (§3.2.3 for leaves): a node with at most one child: its parent's
 *   child word := that child (one store). A node with two children would
 *   need its successor moved up, which no single store does without a
 *   lock-free reader already below the node missing the successor's key;
 *   so the successor's key goes into a new node over a copy of the path
 *   down to it, and one store links that in (succ_copy()). A page with
 *   no free slots for the copy is copied without the node instead (smo.c
 *   b3_del_cow(), the copy-on-write of §3.2.4 swapped in by the SMO
 *   protocol).
 * Scan: leaf by leaf, each page's live nodes in key order (an in-order
 *   walk of its BST), then on at the low key of the sibling through a new
 *   descent, so a page replaced meanwhile is never followed.
 */
#include <linux/errno.h>
#include <linux/log2.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>
#include "core/blob.h"
#include "b3.h"

/* ---- sections ---------------------------------------------------------- */

/*
 * Enter a writer section, once the checker lets writers in. A no-wait
 * writer retires the blobs it replaced inside it, where a full epoch list
 * would abandon them until the next attach: it needs room for them first
 * (a deleted node's key and value blobs at most).
 * Return: 0 inside it; -EAGAIN (outside) when @nowait and the checker
 * holds writers off, or there is no room.
 */
static int writer_enter(struct b3 *t, bool nowait)
{
	for (;;) {
		pmidx_epoch_enter(&t->pool->epoch);
		/* pairs with b3_thaw(): the checker's walk is over */
		if (likely(!smp_load_acquire(&t->frozen)) &&
		    (!nowait || pmidx_epoch_room(&t->pool->epoch, 2)))
			return 0;
		pmidx_epoch_exit(&t->pool->epoch);
		if (nowait)
			return -EAGAIN;
		mutex_lock(&t->gate);
		mutex_unlock(&t->gate);
	}
}

/*
 * After an SMO returned @ret: was it short of room on the epoch list for
 * a step's retirees (B3_NO_ROOM, smo.c)? Then free every list with a
 * barrier, where we may sleep, and say to run it again, once, with no
 * room asked (@smo_emptied, which the caller clears when done).
 * Context: under @smo, in a writer section (left and entered again).
 */
static bool smo_again(struct b3 *t, int ret)
{
	if (ret != B3_NO_ROOM || t->smo_emptied)
		return false;
	pmidx_epoch_exit(&t->pool->epoch);
	pmidx_epoch_barrier(&t->pool->epoch);
	t->smo_emptied = true;
	writer_enter(t, false);
	return true;
}

/*
 * Run @fn under the SMO mutex. Called and returns inside a writer
 * section; leaves it meanwhile (the mutex sleeps), holding no page lock.
 */
static int smo_call(struct b3 *t, const struct b3_key *k,
		    int (*fn)(struct b3 *t, const struct b3_key *k))
{
	int ret;

	pmidx_epoch_exit(&t->pool->epoch);
	mutex_lock(&t->smo);
	writer_enter(t, false);
	do {
		ret = fn(t, k);
	} while (smo_again(t, ret));
	t->smo_emptied = false;
	pmidx_epoch_exit(&t->pool->epoch);
	mutex_unlock(&t->smo);
	cond_resched();
	writer_enter(t, false);
	return ret;
}

/*
 * An operation failed for want of a lock-table leaf (page.c lk_word(): a
 * GFP_ATOMIC allocation inside the section): allocate it outside the
 * section and try again, a few times. A page allocation that found the
 * pool full says -ENOSPC too: the round was short of a leaf only if a
 * leaf was missed since it began (@seen: t->lt_misses then; ours, or a
 * writer's beside us, which may be the one we wait for). Context:
 * inside a writer section, left and entered again.
 * Return: true to try again; false to return *@ret (-ENOMEM then, not
 * the -ENOSPC a page allocation reports).
 */
static bool lt_want(struct b3 *t, int ret, u64 seen)
{
	return (ret == -ENOMEM || ret == -ENOSPC) &&
	       atomic64_read(&t->lt_misses) != seen;
}

/*
 * What a no-wait writer answers for @ret instead of lt_retry(), which
 * sleeps: -EAGAIN for a lock-table leaf to allocate (-ENOMEM, or a leaf
 * some writer wants: the blocking run fills it), else @ret.
 */
static int lt_refuse(struct b3 *t, int ret, u64 seen)
{
	return ret == -ENOMEM || lt_want(t, ret, seen) ? -EAGAIN : ret;
}

static bool lt_retry(struct b3 *t, int *ret, unsigned int *tries, u64 *seen)
{
	int r;

	if (!lt_want(t, *ret, *seen))
		return false;
	*seen = atomic64_read(&t->lt_misses);
	pmidx_epoch_exit(&t->pool->epoch);
	r = b3_lt_fill(t);
	writer_enter(t, false);
	if (r < 0 || ++*tries > 3) {
		*ret = -ENOMEM;
		return false;
	}
	return true;
}

/* Is @k still below the sibling's low key (the locked page is its page)? */
static bool in_page(struct b3 *t, struct b3_page *p, const struct b3_key *k)
{
	u64 sib = b3_ld(&p->sibling);
	struct b3_key lk;

	if (!sib)
		return true;
	lk = b3_low(b3_pg(t, sib));
	return b3_cmp(k, &lk) < 0;
}

/*
 * The locked leaf of @k for a writer.
 *
 * A descent that reaches a replaced (DEAD) page, or a page @k is not in,
 * raced an SMO: the SMO's last store comes before its kill, so a fresh
 * descent gets past it. One that keeps doing so is on a damaged tree (a
 * word naming a retired page): spinning there with preemption off would
 * stop the pool's epochs for good. So every B3_RETRY_SPIN retries the
 * writer leaves its section (smo_call() sleeps on @smo and reschedules)
 * and repairs the path of @k; after B3_RETRY_MAX it gives up.
 *
 * A no-wait writer (@nowait, core/engine.h) answers -EAGAIN instead of
 * leaving its section, and when the descent moved right past a half-done
 * SMO (*@moved), whose repair (b3_fix()) would follow its change.
 *
 * Return: the page, or NULL with *ret: 1 (empty index), < 0 an error.
 */
static struct b3_page *writer_leaf(struct b3 *t, const struct b3_key *k,
				   bool *moved, int *ret, bool nowait)
{
	unsigned int tries = 0;
	struct b3_page *p;

	for (;;) {
		p = b3_find_leaf(t, k, ret, moved);
		if (!p) {
			if (!*ret)
				*ret = 1;
			return NULL;
		}
		*ret = b3_lock(t, p);
		if (!*ret) {
			if (in_page(t, p, k) && !(nowait && *moved))
				return p;
			b3_unlock(t, p);
			if (nowait && *moved) {
				*ret = -EAGAIN;
				return NULL;
			}
			/* split meanwhile: move on */
		} else if (*ret != -EAGAIN) {
			return NULL;
		}
		/* replaced meanwhile */
		if (++tries >= B3_RETRY_MAX) {
			*ret = -EUCLEAN;
			return NULL;
		}
		if (tries % B3_RETRY_SPIN) {
			cpu_relax();
			continue;
		}
		if (nowait) {
			*ret = -EAGAIN;
			return NULL;
		}
		*ret = smo_call(t, k, b3_fix);
		if (*ret)
			return NULL;
	}
}

/* ---- get ----------------------------------------------------------------- */

/* The value of @n into @dst (its one copy, machine-check safe for blobs) */
static int read_val(struct b3 *t, const struct b3_lnode *n, u8 *dst, u32 cap,
		    u32 *len)
{
	u32 meta = le32_to_cpu(READ_ONCE(n->meta));
	__le64 vw = READ_ONCE(n->val);

	if (meta & B3_M_VBLOB)
		return b3_blob_read(t, le64_to_cpu(vw), dst, cap, len);
	*len = b3_meta_vlen(meta);
	if (*len > B3_INLINE_MAX)
		return -EUCLEAN;
	memcpy(dst, &vw, min(cap, *len));
	return 0;
}

static int b3_get(struct pmidx_index *idx, const u8 *key, u32 klen, u8 *val,
		  u32 *vlen)
{
	struct b3 *t = idx->priv;
	struct b3_key k = { key, klen };
	struct b3_lpos pos;
	struct b3_page *p;
	int ret;

	this_cpu_inc(t->pcpu->ops_get);
	pmidx_epoch_enter(&t->pool->epoch);
	p = b3_find_leaf(t, &k, &ret, NULL);
	if (!p) {
		ret = ret ?: -ENOENT;
		goto out;
	}
	ret = b3_leaf_find(t, p, &k, &pos);
	if (!ret && pos.slot < 0)
		ret = -ENOENT;
	if (!ret)
		ret = read_val(t, &p->l[pos.slot], val, *vlen, vlen);
out:
	pmidx_epoch_exit(&t->pool->epoch);
	return ret;
}

/* ---- put ----------------------------------------------------------------- */

struct put_ctx {
	__le64	vword;		/* the value word to store */
	u32	vlen;
	u64	vblob;		/* our value blob, not linked yet */
	u64	kblob;		/* our key blob, not linked yet */
	u64	old_blob;	/* to retire once the put is done */
};

static void node_fill(struct b3_lnode *n, __le64 kw, __le64 vw, u32 meta,
		      __le32 left, __le32 right)
{
	n->key = kw;
	n->val = vw;
	n->left = left;
	n->right = right;
	n->meta = cpu_to_le32(meta);
	n->check = cpu_to_le32(b3_node_check(le64_to_cpu(kw), meta));
}

/*
 * Put into locked leaf @p.
 * Return: 0, -EEXIST, 1 when the page has no free slot, < 0 an error.
 */
static int leaf_put(struct b3 *t, struct b3_page *p, const struct b3_key *k,
		    struct put_ctx *pc, u32 flags)
{
	u32 u = b3_used(t, p), live = b3_live(t, p), meta;
	bool vblob = pc->vlen > B3_INLINE_MAX;
	struct pmidx_txn txn, *x = NULL;
	struct b3_lnode *n, *nn;
	struct b3_lpos pos;
	__le64 kw = 0;
	s64 bytes;
	int ret;

	ret = b3_leaf_find(t, p, k, &pos);
	if (ret)
		return ret;
	if (pos.slot >= 0) {
		if (flags & PMIDX_PUT_INSERT)
			return -EEXIST;
		n = &p->l[pos.slot];
		meta = le32_to_cpu(n->meta);
		if ((meta & B3_M_VBLOB) ? vblob :
		    !vblob && b3_meta_vlen(meta) == pc->vlen) {
			/* in place: one 8-byte store, after the blob's bytes */
			if (meta & B3_M_VBLOB) {
				/* txn: the new blob in, the old one out */
				bytes = this_cpu_read(t->pcpu->blob_bytes);
				if (b3_txn_begin(t, &txn))
					return -EBUSY;
				pc->old_blob = le64_to_cpu(n->val);
				b3_txn_blob_in(t, &txn, pc->vblob);
				b3_txn_blob_out(t, &txn, pc->old_blob);
				x = &txn;
				if (b3_txn_check(t, &x, 1, bytes)) {
					pc->old_blob = 0;
					return -EUCLEAN;
				}
			}
			/* release: pairs with the reader's load of the word */
			b3_commit_txn(t, x, &n->val, le64_to_cpu(pc->vword));
			pc->vblob = 0;
			return 0;
		}
		if (u >= B3_CAP)
			return 1;
		if (vblob || (meta & B3_M_VBLOB)) {
			bytes = this_cpu_read(t->pcpu->blob_bytes);
			if (b3_txn_begin(t, &txn))
				return -EBUSY;
			if (vblob)
				b3_txn_blob_in(t, &txn, pc->vblob);
			x = &txn;
			if (meta & B3_M_VBLOB) {
				b3_txn_blob_out(t, &txn, le64_to_cpu(n->val));
				if (b3_txn_check(t, &x, 1, bytes))
					return -EUCLEAN;
			}
		}
		nn = &p->l[u];
		node_fill(nn, n->key, pc->vword,
			  b3_meta_make(k->len, pc->vlen, meta & B3_M_KBLOB, vblob),
			  cpu_to_le32(b3_ld32(&n->left)),
			  cpu_to_le32(b3_ld32(&n->right)));
		pmidx_persist(t->pm, nn, sizeof(*nn));
		b3_set_cnt(t, p, u + 1, live);
		/* the key blob stays: the copy names it, the dead node did */
		b3_leaf_link(t, p, pos.parent, pos.right, u + 1, x);
		if (meta & B3_M_VBLOB)
			pc->old_blob = le64_to_cpu(n->val);
		pc->vblob = 0;
		return 0;
	}
	if (u >= B3_CAP)
		return 1;
	if (k->len > B3_INLINE_MAX) {
		if (!pc->kblob)
			pc->kblob = b3_blob_write(t, k->p, k->len);
		if (!pc->kblob)
			return -ENOSPC;
		kw = cpu_to_le64(pc->kblob);
	} else {
		memcpy(&kw, k->p, k->len);
	}
	if (pc->kblob || vblob) {
		/* txn: the node's blobs are linked by the same store */
		if (b3_txn_begin(t, &txn))
			return -EBUSY;
		if (pc->kblob)
			b3_txn_blob_in(t, &txn, pc->kblob);
		if (vblob)
			b3_txn_blob_in(t, &txn, pc->vblob);
		x = &txn;
	}
	nn = &p->l[u];
	node_fill(nn, kw, pc->vword,
		  b3_meta_make(k->len, pc->vlen, k->len > B3_INLINE_MAX, vblob),
		  0, 0);
	pmidx_persist(t->pm, nn, sizeof(*nn));			/* flush 1 */
	b3_set_cnt(t, p, u + 1, live + 1);
	b3_leaf_link(t, p, pos.parent, pos.right, u + 1, x);	/* flush 2 */
	this_cpu_inc(t->pcpu->keys);
	pc->kblob = 0;
	pc->vblob = 0;
	return 0;
}

/*
 * A no-wait put (core/engine.h) answers -EAGAIN, before its change, where
 * it would sleep: the checker's freeze, a page to split or a first leaf
 * (b3_make_room()), a lock-table leaf to allocate, a path to repair
 * (writer_leaf()). It retires the replaced blob inside its section,
 * where a retire never waits for the epochs.
 */
static int b3_put(struct pmidx_index *idx, const u8 *key, u32 klen,
		  const u8 *val, u32 vlen, u32 flags)
{
	struct b3 *t = idx->priv;
	struct b3_key k = { key, klen };
	struct put_ctx pc = { .vlen = vlen };
	bool nowait = flags & PMIDX_WRITE_NOWAIT;
	u64 lt_seen = atomic64_read(&t->lt_misses);
	unsigned int lt_tries = 0;
	bool moved = false;
	struct b3_page *p;
	int ret;

	if (unlikely(!READ_ONCE(t->reserve)))
		b3_reserve_fill(t, false);
	if (vlen > B3_INLINE_MAX) {
		/* the big copy and its flushes happen outside the section */
		pc.vblob = b3_blob_write(t, val, vlen);
		ret = -ENOSPC;
		if (!pc.vblob)
			goto out;
		pc.vword = cpu_to_le64(pc.vblob);
	} else {
		memcpy(&pc.vword, val, vlen);
	}
	ret = writer_enter(t, nowait);
	if (ret)
		goto out;
	for (;;) {
		p = writer_leaf(t, &k, &moved, &ret, nowait);
		if (p) {
			ret = leaf_put(t, p, &k, &pc, flags);
			b3_unlock(t, p);
		}
		if (ret == 1) {
			ret = -EAGAIN;
			if (nowait)
				break;
			ret = smo_call(t, &k, b3_make_room);
			if (!ret)
				continue;
		}
		if (nowait) {
			ret = lt_refuse(t, ret, lt_seen);
			break;
		}
		if (!lt_retry(t, &ret, &lt_tries, &lt_seen))
			break;
	}
	if (moved && !nowait)	/* a half-done SMO was on our way: finish it */
		smo_call(t, &k, b3_fix);
	if (nowait && pc.old_blob) {
		b3_blob_retire(t, pc.old_blob);
		pc.old_blob = 0;
	}
	pmidx_epoch_exit(&t->pool->epoch);
	if (pc.old_blob)
		b3_blob_retire(t, pc.old_blob);
out:
	if (pc.kblob)
		b3_blob_free(t, pc.kblob);
	if (pc.vblob)
		b3_blob_free(t, pc.vblob);
	if (ret != -EAGAIN)
		this_cpu_inc(t->pcpu->ops_put);	/* a refused one runs again */
	return ret;
}

/* ---- delete -------------------------------------------------------------- */

struct del_ctx {
	__le64	kw, vw;		/* the deleted node's words */
	u32	meta;
	u32	live;		/* nodes left in the page */
};

/*
 * Node @d of locked leaf @p has two children, @r the right one. Its
 * successor s, the leftmost node of d's right subtree, takes d's place:
 * a new node holds s's key and value, d's left child and a copy of the
 * path from @r down to s, whose last copy's left word names s's right
 * child (path copying). The copies and the new node fill the free slots
 * from @used on and are persisted; the caller's one link store then
 * swings d's parent word to the new node. A lock-free reader sees the
 * old subtree or the new one, and no node it may stand on changes (the
 * textbook move of s into d stores twice in the live tree, and a reader
 * below d between the stores misses s's key). s keeps naming its blobs
 * until the swing unlinks it, the new node names them from then on: they
 * never change hands. d, s and the copied path become dead slots,
 * reclaimed by the page's next copy (defragmentation or split). A crash
 * before the swing leaves the new nodes unreachable above the slots in
 * use, where the next writer of the page overwrites them.
 *
 * Return: the new node's slot word (slot + 1, also the page's new used
 * count); 0 when the page has no free slots for it (the caller copies
 * the page instead); -EUCLEAN on a corrupt page.
 */
static int succ_copy(struct b3 *t, struct b3_page *p, const struct b3_lnode *d,
		     u32 r, u32 used)
{
	u8 path[B3_SLOTS] __uninitialized;	/* path[0..m) written first */
	struct b3_lnode *c;
	u32 m = 0, w = r, below, i;

	/* the left spine from @r: path[m - 1] is the successor */
	do {
		if (!b3_w_is_slot(w) || m == B3_SLOTS)
			return -EUCLEAN;
		path[m++] = w - 1;
		w = b3_ld32(&p->l[w - 1].left);
	} while (w);
	if (used + m > B3_CAP)
		return 0;
	/* copies of path[0..m - 2] in slots used.., the new node last */
	below = b3_ld32(&p->l[path[m - 1]].right);
	for (i = m - 1; i-- > 0;) {
		c = &p->l[used + i];
		*c = p->l[path[i]];
		c->left = cpu_to_le32(below);
		below = used + i + 1;
	}
	c = &p->l[used + m - 1];
	node_fill(c, p->l[path[m - 1]].key, p->l[path[m - 1]].val,
		  le32_to_cpu(p->l[path[m - 1]].meta), d->left,
		  cpu_to_le32(below));
	pmidx_persist(t->pm, &p->l[used], m * sizeof(*c));	/* flush 1 */
	return used + m;
}

/*
 * Try a merge (or redistribution, smo.c) after a delete that left @live
 * keys in leaf @p (NULL: a new copy of it)? Whenever @live is under
 * B3_MERGE_UNDER (review L5), with hysteresis: a leaf whose merge was
 * refused (the shape, a neighbour under another parent that would not
 * merge either) is marked with its live count r (page.c b3_set_tried())
 * and tried again only once it has halved (at most log2(r) + 2 more
 * attempts while it drains) or is empty. A leaf copy or any SMO on the
 * page clears the mark. A merge or a redistribution leaves no page
 * under the threshold, so a leaf that was not refused is tried once
 * per descent below it.
 */
static bool merge_due(struct b3 *t, struct b3_page *p, u32 live)
{
	u32 r;

	if (live >= B3_MERGE_UNDER)
		return false;
	r = p ? b3_tried(t, p) : 0;
	return !r || !live || live <= (r - 1) / 2;
}

/*
 * Delete from locked leaf @p (the root leaf when @root).
 * Return: 0, -ENOENT, 2 when the node has two children and the page no
 * room for succ_copy(); with @nowait -EAGAIN, before any change, when a
 * merge would follow the delete (b3_del()).
 */
static int leaf_del(struct b3 *t, struct b3_page *p, const struct b3_key *k,
		    struct del_ctx *dc, bool root, bool nowait)
{
	u32 live = b3_live(t, p), used = b3_used(t, p), l, r, w, meta;
	struct pmidx_txn txn, *x = NULL;
	struct b3_lnode *d;
	struct b3_lpos pos;
	s64 bytes;
	int ret;

	ret = b3_leaf_find(t, p, k, &pos);
	if (ret)
		return ret;
	if (pos.slot < 0)
		return -ENOENT;
	if (nowait && !root && merge_due(t, p, live - 1))
		return -EAGAIN;
	d = &p->l[pos.slot];
	l = b3_ld32(&d->left);
	r = b3_ld32(&d->right);
	w = l ?: r;
	if (l && r) {
		ret = succ_copy(t, p, d, r, used);
		if (ret <= 0)
			return ret ?: 2;	/* no room: b3_del_cow() */
		w = used = ret;
	}
	meta = le32_to_cpu(d->meta);
	if (meta & (B3_M_KBLOB | B3_M_VBLOB)) {
		/* txn: the node's blobs are unlinked with it */
		bytes = this_cpu_read(t->pcpu->blob_bytes);
		if (b3_txn_begin(t, &txn))
			return -EBUSY;
		if (meta & B3_M_KBLOB)
			b3_txn_blob_out(t, &txn, le64_to_cpu(d->key));
		if (meta & B3_M_VBLOB)
			b3_txn_blob_out(t, &txn, le64_to_cpu(d->val));
		x = &txn;
		if (b3_txn_check(t, &x, 1, bytes))
			return -EUCLEAN;
	}
	b3_leaf_link(t, p, pos.parent, pos.right, w, x);	/* flush 2 */
	live--;
	b3_set_cnt(t, p, used, live);
	dc->kw = d->key;
	dc->vw = d->val;
	dc->meta = meta;
	dc->live = live;
	this_cpu_dec(t->pcpu->keys);
	return 0;
}

static void del_retire(struct b3 *t, const struct del_ctx *dc)
{
	if (dc->meta & B3_M_KBLOB)
		b3_blob_retire(t, le64_to_cpu(dc->kw));
	if (dc->meta & B3_M_VBLOB)
		b3_blob_retire(t, le64_to_cpu(dc->vw));
}

/*
 * A no-wait delete (core/engine.h) answers -EAGAIN, before its change,
 * where it would sleep: as a put (b3_put()), and for a page copy
 * (b3_del_cow()), a merge after it, or no reserve page. It retires the
 * node's blobs inside its section, where a retire never waits.
 */
static int b3_del(struct pmidx_index *idx, const u8 *key, u32 klen,
		  u32 flags)
{
	struct b3 *t = idx->priv;
	struct b3_key k = { key, klen };
	struct del_ctx dc = {};
	bool nowait = flags & PMIDX_WRITE_NOWAIT;
	u64 lt_seen = atomic64_read(&t->lt_misses);
	unsigned int lt_tries = 0;
	bool moved = false, root = false, cow = false;
	struct b3_page *p = NULL;
	int ret;

	if (unlikely(!READ_ONCE(t->reserve))) {
		b3_reserve_fill(t, false);
		/* without it a page copy could not run: none on this path */
		if (nowait && !READ_ONCE(t->reserve))
			return -EAGAIN;
	}
	if (writer_enter(t, nowait))
		return -EAGAIN;
	for (;;) {
		cow = false;
		p = writer_leaf(t, &k, &moved, &ret, nowait);
		if (!p) {
			if (ret == 1)
				ret = -ENOENT;
		} else {
			root = b3_pgoff(t, p) == b3_ld(&t->root->top);
			ret = leaf_del(t, p, &k, &dc, root, nowait);
			b3_unlock(t, p);
		}
		if (ret == 2 && nowait)
			ret = -EAGAIN;
		if (ret == 2) {
			/* copy-on-write of the page without the node */
			pmidx_epoch_exit(&t->pool->epoch);
			mutex_lock(&t->smo);
			writer_enter(t, false);
			do {
				ret = b3_del_cow(t, &k, &dc.kw, &dc.vw, &dc.meta,
						 &dc.live);
			} while (smo_again(t, ret));
			t->smo_emptied = false;
			cow = true;
			pmidx_epoch_exit(&t->pool->epoch);
			mutex_unlock(&t->smo);
			writer_enter(t, false);
			if (ret == -EAGAIN)
				continue;
		}
		if (nowait) {
			ret = lt_refuse(t, ret, lt_seen);
			break;
		}
		if (!lt_retry(t, &ret, &lt_tries, &lt_seen))
			break;
	}
	if (nowait) {
		/* refused before any change, or done without an SMO */
		if (!ret)
			del_retire(t, &dc);
		pmidx_epoch_exit(&t->pool->epoch);
		goto out;
	}
	if (!ret && !root && merge_due(t, cow ? NULL : p, dc.live))
		smo_call(t, &k, b3_try_merge);
	else if (moved)
		smo_call(t, &k, b3_fix);
	pmidx_epoch_exit(&t->pool->epoch);
	if (!ret)
		del_retire(t, &dc);
	/* the reserve went into a page copy: another one for the next */
	if (unlikely(!READ_ONCE(t->reserve)))
		b3_reserve_fill(t, true);
out:
	if (ret != -EAGAIN)
		this_cpu_inc(t->pcpu->ops_del);	/* a refused one runs again */
	return ret;
}

/* ---- scan ---------------------------------------------------------------- */

/*
 * Where the scan goes on (@cur, inclusive with @incl), the record handed
 * to the sink (key and value copied out of pmem machine-check safe), and
 * the page's nodes in order.
 */
struct b3_scan_state {
	u8	cur[PMIDX_KEY_MAX + 1];
	u32	curlen;
	bool	incl;
	u8	kbuf[PMIDX_KEY_MAX + 1];
	u8	*val;
	u32	vcap;
	u32	need;		/* value length that did not fit */
	u8	slots[B3_SLOTS];
	u8	vinit[512];
};

static int scan_grow(struct b3_scan_state *st, u32 len)
{
	u32 cap = roundup_pow_of_two(len);
	u8 *p = kvmalloc(cap, GFP_KERNEL);

	if (!p)
		return -ENOMEM;
	if (st->val != st->vinit)
		kvfree(st->val);
	st->val = p;
	st->vcap = cap;
	return 0;
}

static int scan_key(struct b3 *t, const struct b3_lnode *n, u8 *buf, u32 *len)
{
	u32 meta = le32_to_cpu(READ_ONCE(n->meta));
	__le64 kw = READ_ONCE(n->key);
	u32 bl;
	int ret;

	*len = b3_meta_klen(meta);
	if (!(meta & B3_M_KBLOB)) {
		if (*len > B3_INLINE_MAX)
			return -EUCLEAN;
		memcpy(buf, &kw, *len);
		return 0;
	}
	ret = b3_blob_read(t, le64_to_cpu(kw), buf, PMIDX_KEY_MAX, &bl);
	if (ret)
		return ret;
	return bl == *len ? 0 : -EUCLEAN;
}

/*
 * Emit the records of leaf @p from st->cur on. Return: 0 go on with the
 * next page, 1 done (the sink, the end key), 2 value too big (st->cur is
 * the key to resume at), < 0 an error.
 */
static int scan_page(struct b3 *t, struct b3_page *p, struct b3_scan_state *st,
		     const u8 *end, u32 end_len, struct pmidx_scan_sink *sink)
{
	struct b3_key cur = { st->cur, st->curlen }, nk;
	const struct b3_lnode *n;
	u32 klen, vlen;
	int i, cnt, c, ret;

	cnt = b3_leaf_inorder(t, p, st->slots);
	if (cnt < 0)
		return cnt;
	for (i = 0; i < cnt; i++) {
		n = &p->l[st->slots[i]];
		nk = b3_node_key(t, &n->key, le32_to_cpu(READ_ONCE(n->meta)));
		c = b3_cmp(&nk, &cur);
		if (c < 0 || (!c && !st->incl))
			continue;
		/* the key's one copy (a media error ends the scan, README) */
		ret = scan_key(t, n, st->kbuf, &klen);
		if (ret)
			return ret;
		if (end_len && pmidx_key_cmp(st->kbuf, klen, end, end_len) >= 0)
			return 1;
		ret = read_val(t, n, st->val, st->vcap, &vlen);
		if (ret)
			return ret;
		memcpy(st->cur, st->kbuf, klen);
		st->curlen = klen;
		cur.len = klen;		/* @cur is st->cur: the key just read */
		if (vlen > st->vcap) {
			st->need = vlen;
			st->incl = true;
			return 2;
		}
		st->incl = false;
		ret = sink->emit(sink, st->kbuf, klen, st->val, vlen);
		if (ret)
			return ret < 0 ? ret : 1;
	}
	return 0;
}

static int b3_scan(struct pmidx_index *idx, const u8 *start, u32 start_len,
		   bool after, const u8 *end, u32 end_len,
		   struct pmidx_scan_sink *sink)
{
	struct b3 *t = idx->priv;
	struct b3_scan_state *st;
	struct b3_key cur, lk;
	struct b3_page *p;
	u64 sib;
	int ret;

	this_cpu_inc(t->pcpu->ops_scan);
	st = kzalloc(sizeof(*st), GFP_KERNEL);
	if (!st)
		return -ENOMEM;
	st->val = st->vinit;
	st->vcap = sizeof(st->vinit);
	if (start_len)
		memcpy(st->cur, start, start_len);
	st->curlen = start_len;
	st->incl = !after;
	pmidx_epoch_enter(&t->pool->epoch);
	for (;;) {
		cur.p = st->cur;
		cur.len = st->curlen;
		p = b3_find_leaf(t, &cur, &ret, NULL);
		if (!p)
			break;
		ret = scan_page(t, p, st, end, end_len, sink);
		if (ret == 2) {
			/* a bigger buffer, then back to this key */
			pmidx_epoch_exit(&t->pool->epoch);
			ret = scan_grow(st, st->need);
			pmidx_epoch_enter(&t->pool->epoch);
			if (ret)
				break;
			continue;
		}
		if (ret)
			break;
		/* on at the sibling's low key, through a new descent */
		sib = b3_ld(&p->sibling);
		if (!sib)
			break;
		lk = b3_low(b3_pg(t, sib));
		cur.len = st->curlen;
		if (b3_cmp(&lk, &cur) < 0 || (!st->incl && !b3_cmp(&lk, &cur))) {
			ret = -EUCLEAN;
			break;
		}
		memcpy(st->cur, lk.p, lk.len);
		st->curlen = lk.len;
		st->incl = true;
		pmidx_epoch_exit(&t->pool->epoch);
		cond_resched();
		pmidx_epoch_enter(&t->pool->epoch);
	}
	pmidx_epoch_exit(&t->pool->epoch);
	if (st->val != st->vinit)
		kvfree(st->val);
	kfree(st);
	return min(ret, 0);
}

/* ---- check / stats ------------------------------------------------------- */

static int b3_check_op(struct pmidx_index *idx, u64 *keys, const char **why)
{
	return b3_check(idx->priv, keys, why);
}

static void b3_stats(struct pmidx_index *idx, struct pmidx_stats *s)
{
	struct b3 *t = idx->priv;
	struct b3_pcpu sum = {};
	int cpu;

	for_each_possible_cpu(cpu) {
		struct b3_pcpu *c = per_cpu_ptr(t->pcpu, cpu);

		sum.ops_get += READ_ONCE(c->ops_get);
		sum.ops_put += READ_ONCE(c->ops_put);
		sum.ops_del += READ_ONCE(c->ops_del);
		sum.ops_scan += READ_ONCE(c->ops_scan);
		sum.keys += READ_ONCE(c->keys);
		sum.pages += READ_ONCE(c->pages);
		sum.blob_bytes += READ_ONCE(c->blob_bytes);
	}
	/* unknown after a crash attach until CHECK counts them (b3.h) */
	if (!READ_ONCE(t->approx))
		pmidx_stat_set(s, PMIDX_STAT_KEYS, max_t(s64, sum.keys, 0));
	pmidx_stat_set(s, PMIDX_STAT_OPS_GET, sum.ops_get);
	pmidx_stat_set(s, PMIDX_STAT_OPS_PUT, sum.ops_put);
	pmidx_stat_set(s, PMIDX_STAT_OPS_DEL, sum.ops_del);
	pmidx_stat_set(s, PMIDX_STAT_OPS_SCAN, sum.ops_scan);
	if (READ_ONCE(t->approx))	/* not the core's root-only figure */
		s->have &= ~BIT_ULL(PMIDX_STAT_PM_BYTES);
	else
		pmidx_stat_set(s, PMIDX_STAT_PM_BYTES, PMIDX_INDEX_ROOT_SIZE +
			       max_t(s64, sum.pages, 0) * B3_PAGE_SIZE +
			       max_t(s64, sum.blob_bytes, 0));
	pmidx_stat_set(s, PMIDX_STAT_DRAM_BYTES, sizeof(*idx) + sizeof(*t) +
		       sizeof(struct b3_scratch) + atomic64_read(&t->dram_bytes) +
		       num_possible_cpus() * sizeof(struct b3_pcpu));
}

/*
 * Set the index's counters to @keys, @pages, @bytes. Context: writers
 * frozen (b3_freeze()): none changes a per-CPU counter meanwhile; STATS
 * may read them (READ_ONCE in b3_stats()).
 */
void b3_counters_set(struct b3 *t, u64 keys, u64 pages, u64 bytes)
{
	struct b3_pcpu *c;
	int cpu;

	for_each_possible_cpu(cpu) {
		c = per_cpu_ptr(t->pcpu, cpu);
		WRITE_ONCE(c->keys, 0);
		WRITE_ONCE(c->pages, 0);
		WRITE_ONCE(c->blob_bytes, 0);
	}
	c = per_cpu_ptr(t->pcpu, 0);
	WRITE_ONCE(c->keys, keys);
	WRITE_ONCE(c->pages, pages);
	WRITE_ONCE(c->blob_bytes, bytes);
}

s64 b3_sum_keys(struct b3 *t)
{
	s64 keys = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		keys += READ_ONCE(per_cpu_ptr(t->pcpu, cpu)->keys);
	return keys;
}

/* ---- lifecycle ----------------------------------------------------------- */

static void b3_teardown(struct b3 *t)
{
	/* pending: nothing on media names it (a written-back bitmap would) */
	if (t->reserve)
		pmidx_free(&t->pool->alloc, t->reserve);
	b3_locks_free(t);
	free_percpu(t->pcpu);
	kvfree(t->scr);
	mutex_destroy(&t->smo);
	mutex_destroy(&t->gate);
	kfree(t);
}

static int b3_open(struct pmidx_index *idx, const struct pmidx_recover *rc)
{
	struct pmidx_pool *pool = idx->pool;
	struct b3 *t;
	int ret;

	b3_format_static_checks();
	t = kzalloc(sizeof(*t), GFP_KERNEL);
	if (!t)
		return -ENOMEM;
	t->idx = idx;
	t->pool = pool;
	t->pm = &pool->pm;
	t->root_off = idx->root;
	t->root = pmidx_ptr(t->pm, idx->root);
	mutex_init(&t->smo);
	mutex_init(&t->gate);
	t->pcpu = alloc_percpu(struct b3_pcpu);
	t->scr = kvzalloc(sizeof(*t->scr), GFP_KERNEL);
	atomic64_set(&t->dram_bytes, 0);
	ret = t->pcpu && t->scr ? b3_locks_init(t) : -ENOMEM;
	if (!ret)
		ret = b3_recover(t, rc);
	if (ret) {
		b3_teardown(t);
		return ret;
	}
	idx->priv = t;
	return 0;
}

/*
 * Detach: nothing to save but the counters (every page is already where
 * it belongs, §3.1: no rebuild at the next attach). Our retired pages and
 * blobs come back first: their epoch callbacks are the pool's.
 */
static void b3_close(struct pmidx_index *idx, bool clean)
{
	struct b3 *t = idx->priv;
	struct b3_pcpu sum = {};
	int cpu;

	if (!t)
		return;
	pmidx_epoch_barrier(&t->pool->epoch);
	/* counters not known (a crash attach, no CHECK since): not saved */
	if (clean && !t->approx) {
		for_each_possible_cpu(cpu) {
			struct b3_pcpu *c = per_cpu_ptr(t->pcpu, cpu);

			sum.keys += c->keys;
			sum.pages += c->pages;
			sum.blob_bytes += c->blob_bytes;
		}
		t->root->keys = cpu_to_le64(max_t(s64, sum.keys, 0));
		t->root->pages = cpu_to_le64(max_t(s64, sum.pages, 0));
		t->root->blob_bytes = cpu_to_le64(max_t(s64, sum.blob_bytes, 0));
		pmidx_persist(t->pm, t->root, sizeof(*t->root));
		/* only once the counters are durable */
		pmidx_store64_persist(t->pm, &t->root->saved, 1);
	}
	b3_teardown(t);
	idx->priv = NULL;
}

/* committed objects of a dropped index: the commit bit goes at once */
static int free_cb(struct b3 *t, struct b3_walk *w, u64 off)
{
	pmidx_free_committed_now(&t->pool->alloc, off);
	return 0;
}

/*
 * Drop-index: free every page and every blob a live node owns, each with
 * pmidx_free_committed_now() (not the epochs: the core's drop protocol,
 * core/index_table.c). Resumed after a crash during a drop, the structure
 * is whole (the DRAM frees were deferred, so nothing was reused) but some
 * objects are free on media already: the walk reads pages, never the
 * allocator (no validation), and the allocator skips what is free.
 */
static void b3_destroy(struct pmidx_index *idx)
{
	struct b3 *t = idx->priv;
	struct b3_walk w = { .page = free_cb, .blob = free_cb };

	pmidx_epoch_barrier(&t->pool->epoch);
	if (b3_walk(t, &w))
		pr_warn("pmidx: index %s: b3 drop stopped at a corrupt page (%s); the rest leaks\n",
			idx->name, w.why ?: "?");
	b3_teardown(t);
	idx->priv = NULL;
}

const struct pmidx_engine_ops pmidx_b3_ops = {
	.id		= PMIDX_ENGINE_B3,
	.name		= "b3",
	.flags		= PMIDX_ENGINE_F_COMMITTED | PMIDX_ENGINE_F_NOWAIT,
	.open		= b3_open,
	.close		= b3_close,
	.destroy	= b3_destroy,
	.get		= b3_get,
	.put		= b3_put,
	.del		= b3_del,
	.scan		= b3_scan,
	.check		= b3_check_op,
	.stats		= b3_stats,
};
