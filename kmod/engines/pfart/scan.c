// SPDX-License-Identifier: GPL-2.0
/*
 * Range scans: leaf array by leaf array in key order, without a lock.
 *
 * seek() is an optimistic descent (lock.h) to the first leaf array that
 * may hold a key at or after the cursor, keeping the path's key bytes.
 * Where every key of a subtree is below the cursor it does not backtrack:
 * the cursor moves past the subtree (the smallest key above every key
 * starting with its path) and the descent starts again from the root;
 * the cursor only moves forward, so this ends. A leaf array's records at
 * or after the cursor are taken in key order (its order array), then its
 * version is checked; records never change but for their valid bit and
 * are not freed before the section ends, so each one emitted after the
 * check is a committed record. Then the cursor moves past the array's
 * path for the next descent. A version that moved sends the scan back to
 * the root with the same cursor.
 */
#include <linux/errno.h>
#include <linux/processor.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/vmalloc.h>
#include "lock.h"
#include "pfart.h"

struct scan_state {
	u8	cur[PMIDX_KEY_MAX + 1];
	u32	curlen;
	bool	incl;			/* the cursor's key itself is wanted */
	u8	path[PMIDX_KEY_MAX + 1];
	u32	pathlen;
	bool	via_end;		/* the leaf array is an end child */
	u8	kbuf[PMIDX_KEY_MAX];
	u16	pos[PFART_MAX_ENTRIES];
	u8	*val;
	u32	vcap, need;
	u8	vinit[512];
};

/* cursor := the smallest key above every key starting with path[0, len) */
static bool past(struct scan_state *st, u32 len)
{
	while (len && st->path[len - 1] == 0xff)
		len--;
	if (!len)
		return false;
	memcpy(st->cur, st->path, len);
	st->cur[len - 1]++;
	st->curlen = len;
	st->incl = true;
	return true;
}

/* cursor := the smallest key above the key path[0, len) itself */
static bool past_key(struct scan_state *st, u32 len)
{
	if (len >= PMIDX_KEY_MAX)
		return past(st, len);
	memcpy(st->cur, st->path, len);
	st->cur[len] = 0;
	st->curlen = len + 1;
	st->incl = true;
	return true;
}

enum { SCAN_LEAF, SCAN_MOVED, SCAN_END };

/*
 * Return: SCAN_LEAF (*@lp, *@ver; st->path, st->pathlen, st->via_end),
 * SCAN_MOVED (the cursor moved past a subtree: seek again), SCAN_END,
 * -EAGAIN (a version moved: seek again, same cursor), -EUCLEAN.
 */
static int seek(struct pfart *t, struct scan_state *st,
		struct pfart_leaf **lp, u64 *ver)
{
	struct pfart_inner *n;
	void *node, *child;
	u32 depth = 0, plen, i;
	bool exact = true;
	u64 off, v, cv;
	int b;
	u8 kb;

	off = pfart_top(t);
	if (!off)
		return SCAN_END;
	if (!pfart_off_ok(t, off, PFART_LEAF_MIN))
		return -EUCLEAN;
	node = pfart_ptr(t, off);
	if (!pfart_read_begin(t, pfart_lk(node), &v))
		return -EAGAIN;
	st->via_end = false;
	for (;;) {
		u8 type = READ_ONCE(*(u8 *)node);

		if (type == PFART_LEAF) {
			if (READ_ONCE(((struct pfart_leaf *)node)->depth) != depth)
				goto damaged;
			*lp = node;
			*ver = v;
			st->pathlen = depth;
			return SCAN_LEAF;
		}
		n = node;
		if (type < PFART_N4 || type > PFART_N256 ||
		    READ_ONCE(n->depth) != depth)
			goto damaged;
		plen = min_t(u32, READ_ONCE(n->plen), PFART_PREFIX_MAX);
		memcpy(st->path + depth, n->prefix, plen);
		for (i = 0; exact && i < plen; i++) {
			if (depth + i == st->curlen ||
			    st->cur[depth + i] < n->prefix[i]) {
				exact = false;	/* all keys here are above */
			} else if (st->cur[depth + i] > n->prefix[i]) {
				/*
				 * All keys here are below: on past the path
				 * that led here (the cursor starts with it).
				 */
				if (!pfart_read_check(pfart_lk(node), v))
					return -EAGAIN;
				return past(st, depth) ? SCAN_MOVED : SCAN_END;
			}
		}
		depth += plen;
		b = -1;
		off = 0;
		st->via_end = false;
		/* the end child holds the shortest key: only when it is wanted */
		if (!exact || depth == st->curlen) {
			off = pfart_ld(&n->end);
			st->via_end = !!off;
		} else {
			b = st->cur[depth];
			off = pfart_child(n, b);
			kb = b;
		}
		if (!off) {
			off = pfart_child_after(n, b, &kb);
			exact = false;
		}
		if (!off) {
			if (!pfart_read_check(pfart_lk(node), v))
				return -EAGAIN;
			return past(st, depth) ? SCAN_MOVED : SCAN_END;
		}
		if (!st->via_end)
			st->path[depth++] = kb;
		if (!pfart_off_ok(t, off, PFART_LEAF_MIN))
			goto damaged;
		child = pfart_ptr(t, off);
		if (!pfart_read_begin(t, pfart_lk(child), &cv) ||
		    !pfart_read_check(pfart_lk(node), v))
			return -EAGAIN;
		node = child;
		v = cv;
	}
damaged:
	return pfart_read_check(pfart_lk(node), v) ? -EUCLEAN : -EAGAIN;
}

/*
 * Emit the records of @l from the cursor on. Return: 0 (the array is
 * done), 1 (the sink or @end stopped the scan), 2 (st->need: a bigger
 * value buffer, then again from the cursor), -EAGAIN, < 0 an error.
 */
static int scan_leaf(struct pfart *t, struct scan_state *st,
		     struct pfart_leaf *l, u64 ver, const u8 *end, u32 end_len,
		     struct pmidx_scan_sink *sink)
{
	struct pfart_meta *m = pfart_meta_of(t, pfart_off(t, l));
	u32 size, n, cnt = 0, i, vlen;
	struct pfart_view v;
	int c, ret;

	if (!m)
		return pfart_read_check(pfart_lk(l), ver) ? -EUCLEAN : -EAGAIN;
	size = pfart_leaf_size(min_t(u8, READ_ONCE(l->klass),
				     PFART_NR_CLASSES - 1));
	/* acquire: pairs with the release of @n in leaf.c */
	n = min_t(u32, smp_load_acquire(&m->n), m->cap);
	for (i = 0; i < n; i++) {
		u32 e = pfart_order(m, i);

		if (e >= m->cap || pfart_leaf_view(l, m, size, e, &v))
			return -EAGAIN;
		c = pmidx_key_cmp(v.key, v.klen, st->cur, st->curlen);
		if (c < 0 || (!c && !st->incl))
			continue;
		st->pos[cnt++] = v.key - 2 - l->data;
	}
	if (!pfart_read_check(pfart_lk(l), ver))
		return -EAGAIN;
	for (i = 0; i < cnt; i++) {
		if (pfart_leaf_view_pos(l, st->pos[i], &v))
			return -EUCLEAN;
		/* the key's one copy (a media error ends the scan) */
		ret = pmidx_read_data(t->pm, st->kbuf, v.key, v.klen);
		if (ret) {
			WRITE_ONCE(m->media_bad, true);	/* see pfart_get() */
			return ret;
		}
		if (end_len && pmidx_key_cmp(st->kbuf, v.klen, end, end_len) >= 0)
			return 1;
		ret = pfart_read_value(t, &v, st->val, st->vcap, &vlen);
		if (ret == -EIO && v.vfield != PFART_VBLOB)
			WRITE_ONCE(m->media_bad, true);
		if (ret)
			return ret;
		memcpy(st->cur, st->kbuf, v.klen);
		st->curlen = v.klen;
		if (vlen > st->vcap) {
			st->need = vlen;
			st->incl = true;
			return 2;
		}
		st->incl = false;
		ret = sink->emit(sink, st->kbuf, v.klen, st->val, vlen);
		if (ret)
			return ret < 0 ? ret : 1;
	}
	return 0;
}

static int scan_grow(struct scan_state *st, u32 need)
{
	u8 *p = kvmalloc(need, GFP_KERNEL);

	if (!p)
		return -ENOMEM;
	if (st->val != st->vinit)
		kvfree(st->val);
	st->val = p;
	st->vcap = need;
	return 0;
}

int pfart_scan(struct pfart *t, const u8 *start, u32 start_len, bool after,
	       const u8 *end, u32 end_len, struct pmidx_scan_sink *sink)
{
	struct scan_state *st;
	unsigned int tries = 0;
	struct pfart_leaf *l;
	u64 ver;
	int ret;

	st = kzalloc(sizeof(*st), GFP_KERNEL);
	if (!st)
		return -ENOMEM;
	st->val = st->vinit;
	st->vcap = sizeof(st->vinit);
	if (start_len)	/* @start may be NULL then */
		memcpy(st->cur, start, start_len);
	st->curlen = start_len;
	st->incl = !after;
	pmidx_epoch_enter(&t->pool->epoch);
	for (;;) {
		if (end_len && pmidx_key_cmp(st->cur, st->curlen, end, end_len) >= 0) {
			ret = 0;
			break;
		}
		ret = seek(t, st, &l, &ver);
		if (ret == SCAN_LEAF)
			ret = scan_leaf(t, st, l, ver, end, end_len, sink);
		else if (ret == SCAN_MOVED)
			continue;
		else if (ret == SCAN_END)
			break;
		if (ret == -EAGAIN) {
			if (pfart_retry(t, &tries, false))
				continue;
			ret = -EUCLEAN;
			break;
		}
		if (ret == 2) {
			pmidx_epoch_exit(&t->pool->epoch);
			ret = scan_grow(st, st->need);
			pmidx_epoch_enter(&t->pool->epoch);
			if (ret)
				break;
			continue;
		}
		if (ret)
			break;
		/* this array is done: on past its path */
		if (!(st->via_end ? past_key(st, st->pathlen) :
				    past(st, st->pathlen)))
			break;
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
