// SPDX-License-Identifier: GPL-2.0
/*
 * uTree engine (Chen et al., "uTree: a Persistent B+-Tree with Low Tail
 * Latency", PVLDB 13(11), 2020): operations.
 *
 * Put (paper Algorithm 1):
 *   1. optimistic_get: the key's node and its predecessor from the tree;
 *   2. existing key with an in-place-updatable value (same-length inline
 *      value, or blob to blob): Version odd, store the 8-byte value word,
 *      persist, Version even - one flush;
 *   3. new key: fill and persist a new node (flush 1), CAS it into the
 *      predecessor's next word, persist that word (flush 2), then insert
 *      it into the tree leaf under the leaf's lock;
 *   4. existing key otherwise: mark the old node Deleted, persist a new
 *      node (sharing the old key blob) behind it, swing the predecessor
 *      to it, repoint the tree entry, retire the old node.
 *   Any CAS failure or layer disagreement restarts from the tree.
 * Delete (Algorithm 3): mark, swing the predecessor past the node,
 * persist, drop the tree entry, retire the node and its blobs. The mark
 * is not written back (nor in step 4 of a put): it only fences other
 * writers, and the media never needs it: once the predecessor's new word
 * is durable the node is unreachable, and before that only a power cut
 * ends the removal, after which the list walk clears the marks it finds
 * (recovery.c, clear_traces()). A removal that loses its
 * race clears the mark and writes that back (ut_unmark()): the mark may
 * have reached the media by an eviction, and a clean open takes a mark
 * on a live node for corruption. One flush per delete, as the paper's.
 * Marks and releases left unwritten are declared so (pmidx_lose_ok()):
 * the crash simulator counts every other line a clean detach leaves
 * unwritten as a missing flush.
 * Get (Algorithm 2): tree lookup, then the value under the node's
 * embedded Version; a node marked Deleted sends the reader back to the
 * tree (a removal or replacement in flight) rather than reporting it
 * absent, so a key that exists throughout is never missed.
 * Scan: over the tree leaves in key order, reading each node's value
 * under its Version. (The paper walks the list; the tree-leaf walk sees
 * the same records but only ones already published, which keeps scans
 * consistent with gets and never returns a node whose link is not yet
 * persistent. The values still come from the list nodes.)
 */
#include <linux/errno.h>
#include <linux/log2.h>
#include <linux/prefetch.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>
#include "core/blob.h"
#include "utree.h"

/* ---- sections --------------------------------------------------------- */

/*
 * Enter a writer section, once the checker lets writers in. A no-wait
 * writer retires what it replaced inside it (put_retire()), where a full
 * epoch list would abandon the retirees until the next attach: it needs
 * room for them first (at most a node and its two blobs).
 * Return: 0 inside it; -EAGAIN (outside) when @nowait and the checker
 * holds writers off, or there is no room.
 */
static int writer_enter(struct utree *t, bool nowait)
{
	for (;;) {
		pmidx_epoch_enter(&t->pool->epoch);
		/* pairs with ut_thaw(): the checker's walk is over */
		if (likely(!smp_load_acquire(&t->frozen)) &&
		    (!nowait || pmidx_epoch_room(&t->pool->epoch, 3)))
			return 0;
		pmidx_epoch_exit(&t->pool->epoch);
		if (nowait)
			return -EAGAIN;
		mutex_lock(&t->gate);
		mutex_unlock(&t->gate);
	}
}

/*
 * Restart pause. Whoever we wait for runs with preemption off and will
 * be done shortly, but every UT_BACKOFF_TRIES rounds we leave the section
 * to let the CPU go (only ever before our own change is committed).
 *
 * A corrupt structure (a Version left odd, a Deleted bit, a next word
 * the tree disagrees with) would send us round for ever, so every
 * UT_STUCK_TRIES rounds we also wait for every section running now to
 * end, and for the stragglers: whoever made what stopped us has then
 * finished. If every round since the last such wait failed on the very
 * same word, and that word is still the one seen before the wait, no
 * writer holds it: after UT_STUCK_ROUNDS of these, give up.
 *
 * A no-wait writer (@r->nowait, core/engine.h) cannot let the CPU go: it
 * answers -EAGAIN there instead, before its change, as every round is.
 *
 * Return: 0, -EUCLEAN or -EAGAIN; the caller is still or again in a
 * section.
 */
static int backoff(struct utree *t, struct ut_retry *r, bool writer)
{
	int ret = 0;

	cpu_relax();
	if (++r->tries % UT_BACKOFF_TRIES)
		return 0;
	if (r->nowait)
		return -EAGAIN;
	pmidx_epoch_exit(&t->pool->epoch);
	if (!(r->tries % UT_STUCK_TRIES)) {
		if (!r->changed && r->off == r->seen_off && r->w == r->seen_w)
			r->stuck++;
		else
			r->stuck = 0;
		if (r->stuck >= UT_STUCK_ROUNDS)
			ret = -EUCLEAN;
		r->seen_off = r->off;
		r->seen_w = r->w;
		r->changed = false;
		pmidx_epoch_barrier(&t->pool->epoch);
		/* acquire: pairs with the straggler's release of its count */
		while (atomic_read_acquire(&t->stragglers))
			cond_resched();
	}
	cond_resched();
	if (writer)
		writer_enter(t, false);
	else
		pmidx_epoch_enter(&t->pool->epoch);
	if (ret)
		pr_err_ratelimited("pmidx: index %s: uTree node %llx stuck at %llx, giving up\n",
				   t->idx->name, r->off, r->w);
	return ret;
}

/*
 * A list node's new chunk found atomic memory short: leave the section
 * to reserve it where we may sleep (before our change, like backoff()),
 * or refuse a no-wait writer.
 * Return: 0 (go round again, in a section), -EAGAIN or -ENOMEM.
 */
static int alloc_wait(struct utree *t, struct ut_retry *r)
{
	int ret;

	if (r->nowait)
		return -EAGAIN;
	pmidx_epoch_exit(&t->pool->epoch);
	ret = ut_alloc_reserve(t);
	writer_enter(t, false);
	return ret;
}

/*
 * Publish a committed node in the tree. Without atomic memory for a
 * split, leave the section to refill the stash; the node is safe
 * meanwhile (only we can reach it through the tree, and nobody unlinks a
 * node it cannot find there).
 */
static void tree_publish(struct utree *t, const struct ut_skey *k, u64 node,
			 bool *straggler)
{
	while (ut_tree_insert(t, k, node) == -ENOMEM) {
		if (!*straggler)
			atomic_inc(&t->stragglers);
		*straggler = true;
		pmidx_epoch_exit(&t->pool->epoch);
		ut_tree_reserve(t);
		cond_resched();
		pmidx_epoch_enter(&t->pool->epoch);
	}
}

static void tracker_tick(struct utree *t, u64 node)
{
	struct ut_trackers *tr;
	u32 slot;

	if (this_cpu_add_return(t->pcpu->inserts, 1) < UT_TRACKER_INTERVAL)
		return;
	this_cpu_write(t->pcpu->inserts, 0);
	/* pairs with the release in root_init() */
	tr = smp_load_acquire(&t->trackers);
	if (!tr)
		return;
	slot = UT_TRACK_FIXED + (u32)atomic_inc_return(&t->tracker_seq) %
				(UT_TRACKERS - UT_TRACK_FIXED);
	pmidx_store64_persist(t->pm, &tr->node[slot], node);
}

s64 ut_sum_keys(struct utree *t)
{
	s64 keys = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		keys += READ_ONCE(per_cpu_ptr(t->pcpu, cpu)->keys);
	return keys;
}

/* ---- get --------------------------------------------------------------- */

static int ut_get(struct pmidx_index *idx, const u8 *key, u32 klen, u8 *val,
		  u32 *vlen)
{
	struct utree *t = idx->priv;
	struct ut_retry r = {};
	struct ut_skey k;
	struct ut_val v;
	u64 node, w;
	int ret;

	this_cpu_inc(t->pcpu->ops_get);
	ut_skey_init(&k, key, klen);
	pmidx_epoch_enter(&t->pool->epoch);
	for (;;) {
		node = ut_tree_get(t, &k);
		if (!node) {
			ret = -ENOENT;
			break;
		}
		ret = ut_read_val(t, ut_node(t, node), &v, true, &w);
		if (ret != -EAGAIN)
			break;
		ut_retry_note(&r, node, w);
		ret = backoff(t, &r, false);
		if (ret)
			break;
	}
	/* the value's one copy, machine-check safe, into @val */
	if (!ret)
		ret = ut_val_copy(t, &v, val, *vlen, vlen);
	pmidx_epoch_exit(&t->pool->epoch);
	return ret;
}

/* ---- put --------------------------------------------------------------- */

/* Can the value of a node with @meta become @vlen bytes in place? */
static bool inplace_ok(u32 meta, u32 vlen)
{
	if (meta & UT_M_VBLOB)
		return vlen > UT_INLINE_MAX;
	return vlen <= UT_INLINE_MAX && ut_meta_vlen(meta) == vlen;
}

struct put_ctx {
	u64	node;		/* our new node, not yet published */
	u64	kblob;		/* our key blob, not yet published */
	u64	vblob;		/* our value blob, not yet published */
	__le64	vword;		/* the value word to store */
	u64	old_node;	/* to retire once out of the section */
	u64	old_blob;
	bool	straggler;
	struct ut_retry	retry;
};

/* In-place value update of @c (whose next word was @w). */
static int put_inplace(struct utree *t, struct ut_lnode *c, u64 w,
		       struct put_ctx *p)
{
	u32 meta = le32_to_cpu(c->meta);
	__le64 old;

	if (!ut_cas(&c->next, w, ut_w_bump(w))) {
		p->retry.changed = true;	/* lost to another writer */
		return -EAGAIN;
	}
	old = c->val;
	smp_store_release(&c->val, p->vword);	/* after the new blob's bytes */
	pmidx_persist(t->pm, c, sizeof(*c));
	ut_ver_release(t, c);
	if (meta & UT_M_VBLOB)
		p->old_blob = le64_to_cpu(old);
	p->vblob = 0;
	return 0;
}

/* Replace node @cur (next word @w) behind @pred by a new node. */
static int put_replace(struct utree *t, const struct ut_skey *k, u64 pred,
		       u64 cur, u64 w, u32 vlen, struct put_ctx *p)
{
	struct ut_lnode *c = ut_node(t, cur);
	u32 meta = le32_to_cpu(c->meta);
	__le64 *pw = ut_nextw(t, pred);
	u64 pwv;
	int ret;

	if (!ut_cas(&c->next, w, w | UT_NEXT_DEL)) {
		p->retry.changed = true;
		return -EAGAIN;
	}
	pmidx_lose_ok(t->pm, &c->next, sizeof(c->next));	/* see Delete */
	ret = p->node ? 0 : ut_node_alloc(t, &p->node);
	if (ret) {
		ut_unmark(t, c);
		return ret;
	}
	ut_node_init(t, p->node, c->key, p->vword,
		     ut_meta_make(ut_meta_klen(meta), vlen,
				  meta & UT_M_KBLOB, vlen > UT_INLINE_MAX),
		     ut_w_ptr(w));
	pwv = ut_ld(pw);
	if (ut_w_del(pwv) || ut_w_ptr(pwv) != cur || !ut_link(pw, pwv, p->node)) {
		ut_unmark(t, c);
		ut_retry_note(&p->retry, pred, pwv);
		return -EAGAIN;
	}
	pmidx_persist(t->pm, pw, sizeof(*pw));
	ut_tree_replace(t, k, cur, p->node);
	p->old_node = cur;
	if (meta & UT_M_VBLOB)
		p->old_blob = le64_to_cpu(c->val);
	p->node = 0;
	p->vblob = 0;
	return 0;
}

/* Insert a new node for @k behind @pred. */
static int put_insert(struct utree *t, const struct ut_skey *k, u64 pred,
		      u32 vlen, struct put_ctx *p)
{
	__le64 *pw = ut_nextw(t, pred), kword = 0;
	u64 pwv, succ;
	u32 slot;

	pwv = ut_ld(pw);
	ut_retry_note(&p->retry, pred, pwv);
	if (ut_w_del(pwv))
		return -EAGAIN;		/* predecessor on its way out */
	succ = ut_w_ptr(pwv);
	if (succ && !ut_chunk_of(t, succ, &slot))
		return -EUCLEAN;	/* not a list node of ours */
	/* adjacency: a node the tree does not show yet sits between */
	if (succ && ut_node_cmp(t, succ, k) <= 0)
		return -EAGAIN;
	if (k->len > UT_INLINE_MAX) {
		if (!p->kblob)
			p->kblob = ut_blob_write(t, k->key, k->len);
		if (!p->kblob)
			return -ENOSPC;
		kword = cpu_to_le64(p->kblob);
	} else {
		memcpy(&kword, k->key, k->len);
	}
	if (!p->node) {
		int ret = ut_node_alloc(t, &p->node);

		if (ret)
			return ret;
	}
	ut_node_init(t, p->node, kword, p->vword,
		     ut_meta_make(k->len, vlen, k->len > UT_INLINE_MAX,
				  vlen > UT_INLINE_MAX), succ);
	if (!ut_link(pw, pwv, p->node))
		return -EAGAIN;
	pmidx_persist(t->pm, pw, sizeof(*pw));
	tree_publish(t, k, p->node, &p->straggler);
	tracker_tick(t, p->node);
	this_cpu_inc(t->pcpu->keys);
	p->node = 0;
	p->kblob = 0;
	p->vblob = 0;
	return 0;
}

/*
 * Retire what the put replaced. Outside a section a retire may wait for
 * the epochs (pmidx_epoch_retire_fn(), when memory is short); inside one
 * it never does.
 */
static void put_retire(struct utree *t, struct put_ctx *p)
{
	if (p->old_node)
		ut_node_retire(t, p->old_node);
	if (p->old_blob)
		ut_blob_retire(t, p->old_blob);
	p->old_node = 0;
	p->old_blob = 0;
}

static int ut_put(struct pmidx_index *idx, const u8 *key, u32 klen,
		  const u8 *val, u32 vlen, u32 flags)
{
	struct utree *t = idx->priv;
	struct put_ctx p = { .retry.nowait = flags & PMIDX_WRITE_NOWAIT };
	struct ut_skey k;
	u64 cur, pred, w;
	int ret;

	/*
	 * An insert's publish may split tree nodes after the commit: with
	 * atomic memory short it takes the stash, and sleeps to refill it
	 * only when that is empty. A no-wait put starts only with a full
	 * stash; a put that may sleep fills it first.
	 */
	if (unlikely(!ut_tree_stash_full(t))) {
		if (p.retry.nowait)
			return -EAGAIN;
		ut_tree_reserve(t);
	}
	this_cpu_inc(t->pcpu->ops_put);
	ut_skey_init(&k, key, klen);
	if (vlen > UT_INLINE_MAX) {
		/* the big copy and its flushes happen outside the section */
		p.vblob = ut_blob_write(t, val, vlen);
		if (!p.vblob)
			return -ENOSPC;
		p.vword = cpu_to_le64(p.vblob);
	} else {
		memcpy(&p.vword, val, vlen);
	}

	ret = writer_enter(t, p.retry.nowait);
	if (ret)
		goto out;
	for (;;) {
		cur = ut_tree_find(t, &k, &pred);
		if (!cur) {
			ret = put_insert(t, &k, pred, vlen, &p);
		} else if (flags & PMIDX_PUT_INSERT) {
			ret = -EEXIST;
		} else {
			struct ut_lnode *c = ut_node(t, cur);

			w = ut_ld(&c->next);
			if (ut_w_del(w) || ut_w_odd(w)) {
				ut_retry_note(&p.retry, cur, w);
				ret = -EAGAIN;	/* someone else is on it */
			} else if (inplace_ok(le32_to_cpu(c->meta), vlen))
				ret = put_inplace(t, c, w, &p);
			else
				ret = put_replace(t, &k, pred, cur, w, vlen, &p);
		}
		/* one ut_retry_note() per failed round, by the failing step */
		if (ret == -EAGAIN)
			ret = backoff(t, &p.retry, true);
		else if (ret == -ENOMEM)
			ret = alloc_wait(t, &p.retry);
		else
			break;
		if (ret)
			break;
	}
	/* no-wait: retire in the section, where a retire never waits */
	if (p.retry.nowait)
		put_retire(t, &p);
	pmidx_epoch_exit(&t->pool->epoch);
	/* release: its tree insert before a freeze that sees the count */
	if (p.straggler)
		atomic_dec_return_release(&t->stragglers);
	put_retire(t, &p);
out:
	if (p.node)
		ut_node_free(t, p.node);
	if (p.kblob)
		ut_blob_free(t, p.kblob);
	if (p.vblob)
		ut_blob_free(t, p.vblob);
	if (ret == -EAGAIN)
		this_cpu_dec(t->pcpu->ops_put);	/* counted when run again */
	return ret;
}

/* ---- delete ------------------------------------------------------------ */

static int ut_del(struct pmidx_index *idx, const u8 *key, u32 klen,
		  u32 flags)
{
	struct utree *t = idx->priv;
	struct ut_retry r = { .nowait = flags & PMIDX_WRITE_NOWAIT };
	u64 cur, pred, w, pwv;
	struct ut_lnode *c;
	struct ut_skey k;
	__le64 *pw;
	u32 meta = 0;
	int ret;

	if (writer_enter(t, r.nowait))
		return -EAGAIN;
	this_cpu_inc(t->pcpu->ops_del);
	ut_skey_init(&k, key, klen);
	for (;;) {
		cur = ut_tree_find(t, &k, &pred);
		if (!cur) {
			ret = -ENOENT;
			break;
		}
		c = ut_node(t, cur);
		w = ut_ld(&c->next);
		if (ut_w_del(w) || ut_w_odd(w) ||
		    !ut_cas(&c->next, w, w | UT_NEXT_DEL)) {
			ut_retry_note(&r, cur, w);
			goto retry;
		}
		pmidx_lose_ok(t->pm, &c->next, sizeof(c->next));
		pw = ut_nextw(t, pred);
		pwv = ut_ld(pw);
		if (ut_w_del(pwv) || ut_w_ptr(pwv) != cur ||
		    !ut_link(pw, pwv, ut_w_ptr(w))) {
			ut_unmark(t, c);
			ut_retry_note(&r, pred, pwv);
			goto retry;
		}
		pmidx_persist(t->pm, pw, sizeof(*pw));
		ut_tree_remove(t, &k, cur);
		this_cpu_dec(t->pcpu->keys);
		meta = le32_to_cpu(c->meta);
		ret = 0;
		break;
retry:
		ret = backoff(t, &r, true);
		if (ret)
			break;
	}
	/* no-wait: retire in the section (put_retire()) */
	if (!r.nowait)
		pmidx_epoch_exit(&t->pool->epoch);
	if (!ret) {
		if (meta & UT_M_KBLOB)
			ut_blob_retire(t, le64_to_cpu(c->key));
		if (meta & UT_M_VBLOB)
			ut_blob_retire(t, le64_to_cpu(c->val));
		ut_node_retire(t, cur);
	}
	if (r.nowait)
		pmidx_epoch_exit(&t->pool->epoch);
	if (ret == -EAGAIN)
		this_cpu_dec(t->pcpu->ops_del);	/* counted when run again */
	return ret;
}

/* ---- scan -------------------------------------------------------------- */

/*
 * The scan's leaf copy, the key to seek back to after a restart, and the
 * record handed to the sink: key and value copied out of pmem machine-
 * check safe (the sink gets no pointer into pmem). @val starts as @vinit
 * and grows, outside the epoch section, when a value does not fit.
 */
struct ut_scan_state {
	struct ut_iter	it;
	struct ut_retry	retry;
	u8		key[PMIDX_KEY_MAX];
	u8		kbuf[PMIDX_KEY_MAX];
	u8		*val;
	u32		vcap;
	u8		vinit[512];
};

/* The key of @n into @buf; a blob key is read machine-check safe. */
static int scan_key(const struct utree *t, const struct ut_lnode *n, u8 *buf,
		    u32 *klen)
{
	u32 meta = le32_to_cpu(READ_ONCE(n->meta)), bl;
	__le64 kw = READ_ONCE(n->key);
	int ret;

	*klen = ut_meta_klen(meta);
	if (!(meta & UT_M_KBLOB)) {
		if (*klen > UT_INLINE_MAX)
			return -EUCLEAN;
		memcpy(buf, &kw, *klen);
		return 0;
	}
	ret = ut_blob_read(t, le64_to_cpu(kw), buf, PMIDX_KEY_MAX, &bl);
	if (ret)
		return ret;
	return bl == *klen ? 0 : -EUCLEAN;
}

/*
 * List nodes lie anywhere in the pool, a miss each, but the leaf copy
 * names them all: keep the next UT_SCAN_AHEAD on their way. *@pf: the
 * first entry not prefetched yet (0 after a new copy).
 */
static void scan_prefetch(const struct utree *t, const struct ut_iter *it,
			  int *pf)
{
	int end = min(it->i + UT_SCAN_AHEAD, it->n);

	for (*pf = max(*pf, it->i); *pf < end; (*pf)++)
		prefetch(ut_node(t, ut_ent_node(it->ent[*pf])));
}

static int scan_grow(struct ut_scan_state *st, u32 len)
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

static int ut_scan(struct pmidx_index *idx, const u8 *start, u32 start_len,
		   bool after, const u8 *end, u32 end_len,
		   struct pmidx_scan_sink *sink)
{
	struct utree *t = idx->priv;
	struct ut_scan_state *st;
	struct ut_iter *it;
	struct ut_lnode *n;
	struct ut_skey k;
	struct ut_val v;
	u32 klen, vlen;
	u64 w;
	int ret = 0, pf = 0;

	this_cpu_inc(t->pcpu->ops_scan);
	st = kzalloc(sizeof(*st), GFP_KERNEL);
	if (!st)
		return -ENOMEM;
	st->val = st->vinit;
	st->vcap = sizeof(st->vinit);
	it = &st->it;
	ut_skey_init(&k, start, start_len);
	pmidx_epoch_enter(&t->pool->epoch);
	ut_iter_seek(t, it, &k, after);
	for (;;) {
		for (; it->i < it->n; it->i++) {
			scan_prefetch(t, it, &pf);
			n = ut_node(t, ut_ent_node(it->ent[it->i]));
			/*
			 * Key and value are copied machine-check safe: a
			 * media error under either ends the scan with -EIO,
			 * after the records before it (README).
			 */
			ret = scan_key(t, n, st->kbuf, &klen);
			if (ret)
				goto out;
			if (end_len && pmidx_key_cmp(st->kbuf, klen, end, end_len) >= 0)
				goto out;
			/* a marked node still holds the last committed value */
			ret = ut_read_val(t, n, &v, false, &w);
			if (!ret)
				ret = ut_val_copy(t, &v, st->val, st->vcap, &vlen);
			if (!ret && vlen > st->vcap) {
				/* a bigger buffer, then seek back to this key */
				memcpy(st->key, st->kbuf, klen);
				pmidx_epoch_exit(&t->pool->epoch);
				ret = scan_grow(st, vlen);
				pmidx_epoch_enter(&t->pool->epoch);
				if (ret)
					goto out;
				goto reseek;
			}
			if (ret == -EAGAIN) {
				/* the copy may be stale after backoff(): seek again */
				memcpy(st->key, st->kbuf, klen);
				ut_retry_note(&st->retry, ut_ent_node(it->ent[it->i]), w);
				ret = backoff(t, &st->retry, false);
				if (ret)
					goto out;
				goto reseek;
			}
			if (!ret)
				ret = sink->emit(sink, st->kbuf, klen, st->val, vlen);
			if (ret) {
				ret = min(ret, 0);
				goto out;
			}
			continue;
reseek:
			ut_skey_init(&k, st->key, klen);
			ut_iter_seek(t, it, &k, false);
			pf = 0;
			it->i--;	/* the loop steps to it->i = 0 */
		}
		/* leaves stay allocated: let the CPU go between them */
		pmidx_epoch_exit(&t->pool->epoch);
		cond_resched();
		pmidx_epoch_enter(&t->pool->epoch);
		if (!ut_iter_next_leaf(t, it))
			break;
		pf = 0;
	}
out:
	pmidx_epoch_exit(&t->pool->epoch);
	if (st->val != st->vinit)
		kvfree(st->val);
	kfree(st);
	return ret;
}

/* ---- check / stats ------------------------------------------------------ */

static int ut_check_op(struct pmidx_index *idx, u64 *keys, const char **why)
{
	return ut_check(idx->priv, keys, why);
}

static void ut_stats(struct pmidx_index *idx, struct pmidx_stats *s)
{
	struct utree *t = idx->priv;
	struct ut_pcpu sum = {};
	u64 pm;
	int cpu;

	for_each_possible_cpu(cpu) {
		struct ut_pcpu *c = per_cpu_ptr(t->pcpu, cpu);

		sum.ops_get += READ_ONCE(c->ops_get);
		sum.ops_put += READ_ONCE(c->ops_put);
		sum.ops_del += READ_ONCE(c->ops_del);
		sum.ops_scan += READ_ONCE(c->ops_scan);
		sum.keys += READ_ONCE(c->keys);
		sum.blob_bytes += READ_ONCE(c->blob_bytes);
	}
	pm = PMIDX_INDEX_ROOT_SIZE + (u64)READ_ONCE(t->live_chunks) * UT_CHUNK_SIZE +
	     max_t(s64, sum.blob_bytes, 0);
	if (READ_ONCE(t->trackers))
		pm += sizeof(struct ut_trackers);
	pmidx_stat_set(s, PMIDX_STAT_KEYS, max_t(s64, sum.keys, 0));
	pmidx_stat_set(s, PMIDX_STAT_OPS_GET, sum.ops_get);
	pmidx_stat_set(s, PMIDX_STAT_OPS_PUT, sum.ops_put);
	pmidx_stat_set(s, PMIDX_STAT_OPS_DEL, sum.ops_del);
	pmidx_stat_set(s, PMIDX_STAT_OPS_SCAN, sum.ops_scan);
	pmidx_stat_set(s, PMIDX_STAT_PM_BYTES, pm);
	pmidx_stat_set(s, PMIDX_STAT_DRAM_BYTES, sizeof(*idx) + sizeof(*t) +
		       atomic64_read(&t->dram_bytes) +
		       num_possible_cpus() * (sizeof(struct ut_pcpu) +
					      sizeof(struct ut_mag)));
}

/* ---- lifecycle --------------------------------------------------------- */

static void ut_teardown(struct utree *t)
{
	ut_tree_free(t);
	ut_alloc_free(t);
	free_percpu(t->pcpu);
	mutex_destroy(&t->gate);
	kfree(t);
}

static int ut_open(struct pmidx_index *idx, const struct pmidx_recover *rc)
{
	struct pmidx_pool *pool = idx->pool;
	struct utree *t;
	int ret;

	ut_format_static_checks();
	t = kzalloc(sizeof(*t), GFP_KERNEL);
	if (!t)
		return -ENOMEM;
	t->idx = idx;
	t->pool = pool;
	t->pm = &pool->pm;
	t->root_off = idx->root;
	t->root = pmidx_ptr(t->pm, idx->root);
	mutex_init(&t->gate);
	atomic_set(&t->stragglers, 0);
	atomic_set(&t->tracker_seq, 0);
	atomic64_set(&t->dram_bytes, 0);
	t->pcpu = alloc_percpu(struct ut_pcpu);
	ret = t->pcpu ? ut_alloc_init(t) : -ENOMEM;
	if (!ret)
		ret = ut_tree_init(t);
	if (!ret)
		ret = ut_recover(t, rc);
	if (ret) {
		ut_teardown(t);
		return ret;
	}
	idx->priv = t;
	return 0;
}

/*
 * Clean detach: save the tree for an instant restart (see recovery.c).
 * Either way, wait for our retired nodes to come back first: their
 * epoch callbacks use @t.
 */
static void ut_close(struct pmidx_index *idx, bool clean)
{
	struct utree *t = idx->priv;

	if (!t)
		return;
	pmidx_epoch_barrier(&t->pool->epoch);
	if (clean) {
		ut_chunks_trim(t);
		ut_save_image(t);
	}
	ut_teardown(t);
	idx->priv = NULL;
}

/* Drop-index: free the blobs of live nodes, the chunks, the tables. */
static void ut_destroy(struct pmidx_index *idx)
{
	struct utree *t = idx->priv;
	struct pmidx_alloc *a = &t->pool->alloc;
	struct ut_lnode *n;
	struct ut_chunk *c;
	struct ut_leaf *l;
	unsigned int k;
	u32 meta, id;
	u64 off;

	pmidx_epoch_barrier(&t->pool->epoch);
	for (l = ut_leaf_first(t); l; l = l->next) {
		for (k = 0; k < l->h.count; k++) {
			n = ut_node(t, ut_ent_node(l->ent[k]));
			meta = le32_to_cpu(n->meta);
			if (meta & UT_M_KBLOB)
				pmidx_free(a, le64_to_cpu(n->key));
			if (meta & UT_M_VBLOB)
				pmidx_free(a, le64_to_cpu(n->val));
		}
		cond_resched();
	}
	off = le64_to_cpu(t->root->image);
	if (off)
		pmidx_free(a, off);
	if (t->trackers)
		pmidx_free(a, le64_to_cpu(t->root->trackers));
	for (id = 0; id < t->nr_chunks; id++) {
		c = ut_chunk_get(t, id);
		if (c)
			pmidx_free(a, c->off);
	}
	ut_teardown(t);
	idx->priv = NULL;
}

const struct pmidx_engine_ops pmidx_utree_ops = {
	.id		= PMIDX_ENGINE_UTREE,
	.name		= "utree",
	.flags		= PMIDX_ENGINE_F_NOWAIT,
	.global_init	= ut_tree_global_init,
	.global_exit	= ut_tree_global_exit,
	.open		= ut_open,
	.close		= ut_close,
	.destroy	= ut_destroy,
	.get		= ut_get,
	.put		= ut_put,
	.del		= ut_del,
	.scan		= ut_scan,
	.check		= ut_check_op,
	.stats		= ut_stats,
};
