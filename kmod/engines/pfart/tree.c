// SPDX-License-Identifier: GPL-2.0
/*
 * Descents from root->top.
 *
 * pfart_find_leaf(): readers and leaf writers, with optimistic lock
 * coupling (lock.h): the child's version is read before the parent's is
 * checked again, so the leaf array returned was the parent's child at a
 * point where its version held; a writer then locks it at that version
 * (pfart_lock_at()): any SMO that replaced it since locked it first, and
 * the CAS fails. A node at another depth than the path's, or a word
 * outside the data area, is a damaged tree (-EUCLEAN); a version that
 * moved is -EAGAIN: the caller starts again (pfart_retry(): it leaves
 * its section now and then, so that a lock holder is never waited for
 * with preemption off).
 *
 * pfart_path_to(): an SMO's descent under @smo, when inner nodes cannot
 * change: every step with the word that names it.
 */
#include <linux/errno.h>
#include "lock.h"
#include "pfart.h"

/**
 * pfart_find_leaf - the leaf array that may hold @key, optimistically
 * @lp:  the array
 * @ver: its version, valid when the array was the child of its parent
 *
 * Context: inside an epoch section.
 * Return: 0; -ENOENT when no leaf array can hold @key (checked against
 * the versions); -EAGAIN when a version moved; -EUCLEAN for a damaged
 * tree.
 */
int pfart_find_leaf(struct pfart *t, const u8 *key, u32 klen,
		    struct pfart_leaf **lp, u64 *ver)
{
	struct pfart_inner *n;
	u32 depth, plen, i;
	void *node, *child;
	u64 off, v, cv;

	off = pfart_top(t);
	if (!off)
		return -ENOENT;
	if (!pfart_off_ok(t, off, PFART_LEAF_MIN))
		return -EUCLEAN;
	node = pfart_ptr(t, off);
	if (!pfart_read_begin(t, pfart_lk(node), &v))
		return -EAGAIN;
	depth = 0;
	for (;;) {
		u8 type = READ_ONCE(*(u8 *)node);

		if (type == PFART_LEAF) {
			if (READ_ONCE(((struct pfart_leaf *)node)->depth) != depth)
				goto damaged;
			*lp = node;
			*ver = v;
			return 0;
		}
		n = node;
		if (type < PFART_N4 || type > PFART_N256 ||
		    READ_ONCE(n->depth) != depth)
			goto damaged;
		plen = min_t(u32, READ_ONCE(n->plen), PFART_PREFIX_MAX);
		for (i = 0; i < plen; i++)
			if (depth + i >= klen || key[depth + i] != n->prefix[i])
				goto miss;
		depth += plen;
		if (depth == klen) {
			off = pfart_ld(&n->end);
		} else {
			off = pfart_child(n, key[depth]);
			depth++;
		}
		if (!off)
			goto miss;
		if (!pfart_off_ok(t, off, PFART_LEAF_MIN))
			goto damaged;
		child = pfart_ptr(t, off);
		if (!pfart_read_begin(t, pfart_lk(child), &cv) ||
		    !pfart_read_check(pfart_lk(node), v))
			return -EAGAIN;
		node = child;
		v = cv;
	}
miss:
	return pfart_read_check(pfart_lk(node), v) ? -ENOENT : -EAGAIN;
damaged:
	return pfart_read_check(pfart_lk(node), v) ? -EUCLEAN : -EAGAIN;
}

/**
 * pfart_path_to - an SMO's descent to @key
 * @p:        the steps (p->s[p->n - 1] is where it stopped; p->depth the
 *            key bytes consumed before it)
 * @mismatch: PFART_MISMATCH: the index in the last node's prefix where
 *            @key leaves it (or ends)
 *
 * Context: under @smo (inner nodes are stable), inside a section.
 * Return: PFART_AT_EMPTY (no top), PFART_AT_LEAF, PFART_NO_CHILD (the last
 * node has no child for p->byte, or no end child with p->end),
 * PFART_MISMATCH; -EUCLEAN for a damaged tree.
 */
int pfart_path_to(struct pfart *t, const u8 *key, u32 klen,
		  struct pfart_path *p, u32 *mismatch)
{
	__le64 *word = &t->root->top;
	struct pfart_step *s;
	struct pfart_inner *n;
	u64 parent = 0, off;
	u32 depth = 0, i;
	bool end = false;
	u8 byte = 0;

	p->n = 0;
	off = pfart_ld(word);
	if (!off)
		return PFART_AT_EMPTY;
	for (;;) {
		if (p->n >= PFART_PATH_MAX || !pfart_off_ok(t, off, PFART_LEAF_MIN))
			return -EUCLEAN;
		s = &p->s[p->n++];
		s->off = off;
		s->word = word;
		s->parent = parent;
		s->byte = byte;
		s->end = end;
		p->depth = depth;
		n = pfart_ptr(t, off);
		if (n->type == PFART_LEAF)
			return ((struct pfart_leaf *)n)->depth == depth ?
			       PFART_AT_LEAF : -EUCLEAN;
		if (!pfart_inner_ok(t, n) || n->depth != depth)
			return -EUCLEAN;
		for (i = 0; i < n->plen; i++) {
			if (depth + i >= klen || key[depth + i] != n->prefix[i]) {
				*mismatch = i;
				return PFART_MISMATCH;
			}
		}
		depth += n->plen;
		parent = off;
		end = depth == klen;
		if (end) {
			word = &n->end;
		} else {
			byte = key[depth++];
			word = pfart_child_word(n, byte);
		}
		off = word ? pfart_ld(word) : 0;
		if (!off) {
			p->byte = byte;
			p->end = end;
			return PFART_NO_CHILD;
		}
	}
}
