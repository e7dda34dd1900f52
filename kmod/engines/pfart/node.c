// SPDX-License-Identifier: GPL-2.0
/*
 * One inner node (ART §2.2): Node4/16/48/256 in pmem.
 *
 * In place, only under @smo with the node locked (README "Crash
 * protocol"), a child is added or removed with stores a reader and a
 * crash see whole:
 *   N4/N16  add: key[i] := b, persisted; child[i] := c, persisted (the
 *           commit: a slot is in use iff its child word is not 0).
 *           remove: child[i] := 0.
 *   N48     add: child[s] := c in a free slot, persisted; index[b] :=
 *           s + 1, persisted (the commit). remove: index[b] := 0,
 *           persisted; child[s] := 0. A crash between leaves a child no
 *           index byte names: recovery clears it (the trace frees what
 *           it named).
 *   N256    child[b] := c or 0, one store.
 * Everything else (a type, a prefix, a depth) changes by building a new
 * node and swapping the one word that names it (smo.c).
 *
 * Child words are published with a release store, read with acquire
 * (pfart_ld()); key bytes and index bytes with READ_ONCE.
 */
#include <linux/errno.h>
#include <linux/string.h>
#include "lock.h"
#include "persist.h"
#include "pfart.h"

u32 pfart_inner_obj(u8 type)
{
	switch (type) {
	case PFART_N4:
		return PFART_N4_OBJ;
	case PFART_N16:
		return PFART_N16_OBJ;
	case PFART_N48:
		return PFART_N48_OBJ;
	default:
		return PFART_N256_OBJ;
	}
}

u32 pfart_inner_cap(u8 type)
{
	switch (type) {
	case PFART_N4:
		return 4;
	case PFART_N16:
		return 16;
	case PFART_N48:
		return 48;
	default:
		return 256;
	}
}

u8 pfart_inner_type_for(u32 n)
{
	if (n <= 4)
		return PFART_N4;
	if (n <= 16)
		return PFART_N16;
	if (n <= 48)
		return PFART_N48;
	return PFART_N256;
}

/* N4 and N16 share their layout: keys, then child words */
static u8 *small_keys(struct pfart_inner *n)
{
	return n->type == PFART_N4 ? ((struct pfart_n4 *)n)->key :
				     ((struct pfart_n16 *)n)->key;
}

static __le64 *small_child(struct pfart_inner *n)
{
	return n->type == PFART_N4 ? ((struct pfart_n4 *)n)->child :
				     ((struct pfart_n16 *)n)->child;
}

/* The word naming the child of byte @b, NULL when there is none. */
__le64 *pfart_child_word(struct pfart_inner *n, u8 b)
{
	u32 i, cap;
	u8 s;

	switch (n->type) {
	case PFART_N4:
	case PFART_N16:
		cap = pfart_inner_cap(n->type);
		for (i = 0; i < cap; i++)
			if (pfart_ld(&small_child(n)[i]) &&
			    READ_ONCE(small_keys(n)[i]) == b)
				return &small_child(n)[i];
		return NULL;
	case PFART_N48:
		s = READ_ONCE(((struct pfart_n48 *)n)->index[b]);
		if (!s || s > 48)
			return NULL;
		return &((struct pfart_n48 *)n)->child[s - 1];
	case PFART_N256:
		return &((struct pfart_n256 *)n)->child[b];
	}
	return NULL;
}

/* The child of byte @b, 0 when none. Safe without the lock. */
u64 pfart_child(const struct pfart_inner *n, u8 b)
{
	__le64 *w = pfart_child_word((struct pfart_inner *)n, b);

	return w ? pfart_ld(w) : 0;
}

/*
 * The child with the smallest byte above @b (-1: the first child), its
 * byte in *@kb; 0 when none. Safe without the lock.
 */
u64 pfart_child_after(const struct pfart_inner *n, int b, u8 *kb)
{
	struct pfart_inner *x = (struct pfart_inner *)n;
	u64 c, best = 0;
	u32 i, cap;
	int bb = 256;

	switch (READ_ONCE(n->type)) {
	case PFART_N4:
	case PFART_N16:
		cap = pfart_inner_cap(n->type);
		for (i = 0; i < cap; i++) {
			int k = READ_ONCE(small_keys(x)[i]);

			c = pfart_ld(&small_child(x)[i]);
			if (c && k > b && k < bb) {
				bb = k;
				best = c;
			}
		}
		break;
	case PFART_N48:
		for (i = b + 1; i < 256 && !best; i++) {
			u8 s = READ_ONCE(((struct pfart_n48 *)n)->index[i]);

			if (s && s <= 48) {
				best = pfart_ld(&((struct pfart_n48 *)n)->child[s - 1]);
				bb = i;
			}
		}
		break;
	case PFART_N256:
		for (i = b + 1; i < 256 && !best; i++) {
			best = pfart_ld(&((struct pfart_n256 *)n)->child[i]);
			bb = i;
		}
		break;
	}
	*kb = bb;
	return best;
}

/*
 * The children in byte order: @keys and @child get them. Safe without
 * the lock (a reader validates the node's version after).
 * Return: how many (@end not counted).
 */
u32 pfart_inner_entries(const struct pfart_inner *n, u8 *keys, u64 *child)
{
	struct pfart_inner *x = (struct pfart_inner *)n;
	u32 cnt = 0, i, j, cap;
	u64 c;
	u8 k;

	switch (READ_ONCE(n->type)) {
	case PFART_N4:
	case PFART_N16:
		cap = pfart_inner_cap(n->type);
		for (i = 0; i < cap; i++) {
			c = pfart_ld(&small_child(x)[i]);
			if (!c)
				continue;
			k = READ_ONCE(small_keys(x)[i]);
			/* insertion into the sorted prefix */
			for (j = cnt; j && keys[j - 1] > k; j--) {
				keys[j] = keys[j - 1];
				child[j] = child[j - 1];
			}
			keys[j] = k;
			child[j] = c;
			cnt++;
		}
		break;
	case PFART_N48:
		for (i = 0; i < 256; i++) {
			u8 s = READ_ONCE(((struct pfart_n48 *)n)->index[i]);

			if (!s || s > 48)
				continue;
			c = pfart_ld(&((struct pfart_n48 *)n)->child[s - 1]);
			if (!c)
				continue;
			keys[cnt] = i;
			child[cnt++] = c;
		}
		break;
	case PFART_N256:
		for (i = 0; i < 256; i++) {
			c = pfart_ld(&((struct pfart_n256 *)n)->child[i]);
			if (!c)
				continue;
			keys[cnt] = i;
			child[cnt++] = c;
		}
		break;
	}
	return cnt;
}

/* Children (the end child not counted). Context: stable node (@smo). */
u32 pfart_inner_count(const struct pfart_inner *n)
{
	u32 cnt = 0, i;

	switch (n->type) {
	case PFART_N4:
	case PFART_N16:
		for (i = 0; i < pfart_inner_cap(n->type); i++)
			cnt += !!small_child((struct pfart_inner *)n)[i];
		break;
	case PFART_N48:
		for (i = 0; i < 256; i++)
			cnt += !!((struct pfart_n48 *)n)->index[i];
		break;
	case PFART_N256:
		for (i = 0; i < 256; i++)
			cnt += !!((struct pfart_n256 *)n)->child[i];
		break;
	}
	return cnt;
}

/* One child word, durably (the commit store of every structure change). */
void pfart_publish(struct pfart *t, __le64 *word, u64 val)
{
	/* release: what @val names is written before a reader gets it */
	smp_store_release(word, cpu_to_le64(val));
	pfart_persist(t, word, sizeof(*word));
	/*
	 * A child word is read only while its node's version is checked,
	 * and the node stays locked until the word is durable. root->top
	 * has no lock: readers take @t->top, which names a top only once
	 * root->top is durable, so no get or scan returns a put that a
	 * crash could still lose.
	 */
	if (word == &t->root->top)
		smp_store_release(&t->top, val);
}

/*
 * Add child @c of byte @b in place. Context: under @smo, @n locked, @c
 * durable. Return: 0, -ENOSPC when the node is full (grow it).
 */
int pfart_inner_add(struct pfart *t, struct pfart_inner *n, u8 b, u64 c)
{
	struct pfart_n48 *n48 = (struct pfart_n48 *)n;
	u32 i, cap = pfart_inner_cap(n->type);

	switch (n->type) {
	case PFART_N4:
	case PFART_N16:
		for (i = 0; i < cap; i++) {
			if (small_child(n)[i])
				continue;
			WRITE_ONCE(small_keys(n)[i], b);
			pfart_persist(t, &small_keys(n)[i], 1);
			pfart_publish(t, &small_child(n)[i], c);
			return 0;
		}
		return -ENOSPC;
	case PFART_N48:
		for (i = 0; i < 48; i++) {
			if (n48->child[i])
				continue;
			pfart_publish(t, &n48->child[i], c);
			WRITE_ONCE(n48->index[b], i + 1);
			pfart_persist(t, &n48->index[b], 1);
			return 0;
		}
		return -ENOSPC;
	case PFART_N256:
		pfart_publish(t, &((struct pfart_n256 *)n)->child[b], c);
		return 0;
	}
	return -EUCLEAN;
}

/* Remove the child of byte @b in place. Context: as pfart_inner_add(). */
void pfart_inner_remove(struct pfart *t, struct pfart_inner *n, u8 b)
{
	struct pfart_n48 *n48 = (struct pfart_n48 *)n;
	__le64 *w = pfart_child_word(n, b);
	u8 s;

	if (!w)
		return;
	if (n->type == PFART_N48) {
		s = n48->index[b];
		WRITE_ONCE(n48->index[b], 0);
		pfart_persist(t, &n48->index[b], 1);
		w = &n48->child[s - 1];
	}
	pfart_publish(t, w, 0);
}

/* ---- building (unpublished nodes) ---------------------------------------------- */

/* A zeroed node with its fixed fields; NULL when the pool is full. */
struct pfart_inner *pfart_inner_new(struct pfart *t, u8 type, u32 depth,
				    const u8 *prefix, u32 plen)
{
	u32 size = pfart_inner_obj(type);
	u64 off = pmidx_alloc(&t->pool->alloc, size);
	struct pfart_inner *n;

	if (!off)
		return NULL;
	n = pfart_ptr(t, off);
	memset(n, 0, size);
	n->type = type;
	n->depth = depth;
	n->plen = plen;
	n->owner = cpu_to_le64(t->root_off);
	memcpy(n->prefix, prefix, plen);
	pfart_stat_inc(t, inners);
	pfart_stat_add(t, inner_bytes, size);
	return n;
}

/*
 * The word of the @i-th child (byte @b) of an unpublished node, children
 * set in any order but each @i once: the builder fills it later.
 */
__le64 *pfart_inner_slot(struct pfart_inner *n, u32 i, u8 b)
{
	struct pfart_n48 *n48 = (struct pfart_n48 *)n;

	switch (n->type) {
	case PFART_N4:
	case PFART_N16:
		small_keys(n)[i] = b;
		return &small_child(n)[i];
	case PFART_N48:
		n48->index[b] = i + 1;
		return &n48->child[i];
	default:
		return &((struct pfart_n256 *)n)->child[b];
	}
}

/* A built node: its check word, then the write-back (the batch fences). */
void pfart_inner_seal(struct pfart *t, struct pfart_inner *n)
{
	n->check = cpu_to_le32(pfart_check_word(n, t->root_off));
	pfart_wb(t, n, pfart_inner_obj(n->type));
}

/* A node built and never published: straight back. */
void pfart_inner_drop(struct pfart *t, struct pfart_inner *n)
{
	pfart_stat_add(t, inners, -1);
	pfart_stat_add(t, inner_bytes, -(s64)pfart_inner_obj(n->type));
	pmidx_free(&t->pool->alloc, pfart_off(t, n));
}

/* Header checks of a node this index may follow (no allocator look-up). */
bool pfart_inner_ok(const struct pfart *t, const struct pfart_inner *n)
{
	return n->type >= PFART_N4 && n->type <= PFART_N256 &&
	       n->plen <= PFART_PREFIX_MAX &&
	       le64_to_cpu(n->owner) == t->root_off &&
	       le32_to_cpu(n->check) == pfart_check_word(n, t->root_off);
}

bool pfart_leaf_hdr_ok(const struct pfart *t, const struct pfart_leaf *l)
{
	return l->type == PFART_LEAF && l->klass <= t->top_class &&
	       l->plen == min_t(u32, l->depth, PFART_LPREFIX_MAX) &&
	       le64_to_cpu(l->owner) == t->root_off &&
	       le32_to_cpu(l->check) == pfart_check_word(l, t->root_off);
}
