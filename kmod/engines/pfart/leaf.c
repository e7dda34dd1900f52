// SPDX-License-Identifier: GPL-2.0
/*
 * One leaf array (§3.1): records inline behind a 2-byte header, and the
 * DRAM metadata that finds them (struct pfart_meta).
 *
 * Append (a put that fits, under the array's lock; README "Crash
 * protocol"): the body (key, then the value or the blob word) and a zero
 * u16 behind the record are written and persisted, then the header is
 * stored (one aligned 2-byte store) and persisted: the commit. The zero
 * u16 makes the scan stop right behind the new record even when an
 * earlier append crashed before its commit and left longer bytes there.
 * An update appends the new record first, then clears the old one's valid
 * bit in the cache only: the new record is durable by then, and offsets
 * only grow inside one array, so every open keeps the last record of a
 * key and drops any valid one before it (pfart_leaf_parse()). That rule
 * also covers a later delete: it invalidates the last record durably,
 * and a valid one before it is dropped too. A delete's own invalidation
 * is its commit, and so is persisted.
 *
 * Readers find records through the metadata without the lock: @pos is
 * published with a release store after the record's bytes and @n after
 * the entry, so the bytes an entry names are there; the rest (a moved
 * entry, a shifted order array) is caught by the array's version.
 */
#include <linux/bitops.h>
#include <linux/errno.h>
#include <linux/string.h>
#include "core/blob.h"
#include "lock.h"
#include "persist.h"
#include "pfart.h"

u32 pfart_rec_bytes(const struct pfart_rec *r)
{
	return pfart_r_size(r->klen, r->vfield);
}

/* records are packed: the blob word is unaligned */
static u64 get_le64(const u8 *p)
{
	__le64 w;

	memcpy(&w, p, sizeof(w));
	return le64_to_cpu(w);
}

static void put_le64(u8 *p, u64 v)
{
	__le64 w = cpu_to_le64(v);

	memcpy(p, &w, sizeof(w));
}

static u16 hdr_load(const u8 *rec)
{
	return le16_to_cpu(READ_ONCE(*(const __le16 *)rec));
}

static void hdr_store(u8 *rec, u16 h)
{
	WRITE_ONCE(*(__le16 *)rec, cpu_to_le16(h));
}

/* decode the record at data offset @pos; false: it is not one */
static bool view_at(const struct pfart_leaf *l, u32 ds, u32 pos,
		    struct pfart_view *v)
{
	const u8 *rec;
	u16 h;

	if (pos & 1 || pos + 2 > ds)
		return false;
	rec = l->data + pos;
	h = hdr_load(rec);
	v->klen = pfart_r_klen(h);
	v->vfield = pfart_r_vfield(h);
	if (!v->klen || v->klen > PMIDX_KEY_MAX ||
	    pos + pfart_r_size(v->klen, v->vfield) > ds)
		return false;
	v->key = rec + 2;
	v->val = rec + 2 + v->klen;
	return true;
}

/*
 * Entry @e of @m, decoded. Safe without the lock (bounds-checked);
 * Return: 0, or -EAGAIN when the metadata moved under a reader.
 */
int pfart_leaf_view(const struct pfart_leaf *l, const struct pfart_meta *m,
		    u32 leaf_size, int e, struct pfart_view *v)
{
	/* acquire: pairs with the release in set_pos() */
	u32 pos = smp_load_acquire(&m->pos[e]);

	return view_at(l, leaf_size - PFART_HDR_SIZE, pos, v) ? 0 : -EAGAIN;
}

/* The record at data offset @pos. Return: 0, -EAGAIN when it is not one. */
int pfart_leaf_view_pos(const struct pfart_leaf *l, u32 pos,
			struct pfart_view *v)
{
	return view_at(l, pfart_data_size(min_t(u8, READ_ONCE(l->klass),
						PFART_NR_CLASSES - 1)),
		       pos, v) ? 0 : -EAGAIN;
}

static u32 leaf_bytes(const struct pfart_leaf *l)
{
	return pfart_leaf_size(min_t(u8, READ_ONCE(l->klass),
				     PFART_NR_CLASSES - 1));
}

static int key_cmp(const struct pfart_view *v, const u8 *key, u32 klen)
{
	return pmidx_key_cmp(v->key, v->klen, key, klen);
}

#define FP_ONES		0x0101010101010101ULL
#define FP_LOW7		0x7f7f7f7f7f7f7f7fULL

/* The high bit of every zero byte of @x, and of no other byte. */
static u64 zero_bytes(u64 x)
{
	return ~(((x & FP_LOW7) + FP_LOW7) | x | FP_LOW7);
}

/*
 * Return: the entry holding @key, or -1. Safe without the lock. The
 * fingerprints are compared eight entries a word (struct pfart_meta):
 * an array above leaf_max holds hundreds of entries.
 */
int pfart_leaf_find(const struct pfart *t, const struct pfart_leaf *l,
		    const struct pfart_meta *m, const u8 *key, u32 klen)
{
	/* acquire: pairs with the release of @n in add_entry() */
	u32 n = min_t(u32, smp_load_acquire(&m->n), m->cap), base, e;
	u64 want = FP_ONES * pfart_fp(key, klen), hits;
	const __le64 *fpw = (const __le64 *)m->fp;
	u32 size = leaf_bytes(l);
	struct pfart_view v;

	for (base = 0; base < n; base += 8) {
		/* torn by a writer: the caller's version check catches it */
		hits = zero_bytes(le64_to_cpu(READ_ONCE(fpw[base / 8])) ^ want);
		for (; hits; hits &= hits - 1) {
			e = base + __ffs64(hits) / 8;
			if (e >= n || READ_ONCE(m->klen[e]) != klen ||
			    pfart_leaf_view(l, m, size, e, &v))
				continue;
			if (!key_cmp(&v, key, klen))
				return e;
		}
	}
	return -1;
}

/* Room for a record of @bytes (and, with @entry, one more entry)? */
bool pfart_leaf_fits(const struct pfart_leaf *l, const struct pfart_meta *m,
		     u32 bytes, bool entry)
{
	return m->tail + bytes <= pfart_data_size(l->klass) &&
	       (!entry || m->n < m->cap);
}

/* ---- metadata under the lock ------------------------------------------------ */

static void set_pos(struct pfart_meta *m, u32 e, u32 pos)
{
	/* release: the record's bytes are written before a reader finds them */
	smp_store_release(&m->pos[e], pos);
}

/* Where @key goes in the order array (binary search over the records). */
static u32 order_slot(const struct pfart_leaf *l, const struct pfart_meta *m,
		      u32 n, const u8 *key, u32 klen)
{
	u32 lo = 0, hi = n, size = leaf_bytes(l);
	struct pfart_view v;

	/* appends in key order (a rebuild's, a parse's) cost one compare */
	if (n && !pfart_leaf_view(l, m, size, pfart_order(m, n - 1), &v) &&
	    key_cmp(&v, key, klen) < 0)
		return n;
	while (lo < hi) {
		u32 mid = (lo + hi) / 2;

		if (!pfart_leaf_view(l, m, size, pfart_order(m, mid), &v) &&
		    key_cmp(&v, key, klen) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* A new entry for the record at @pos holding @key. */
static void add_entry(struct pfart_leaf *l, struct pfart_meta *m, u32 pos,
		      const u8 *key, u32 klen)
{
	u32 n = m->n, slot = order_slot(l, m, n, key, klen), i;

	set_pos(m, n, pos);
	WRITE_ONCE(m->klen[n], klen);
	WRITE_ONCE(m->fp[n], pfart_fp(key, klen));
	for (i = n; i > slot; i--)
		pfart_order_set(m, i, pfart_order(m, i - 1));
	pfart_order_set(m, slot, n);
	/* release: the entry is complete before a reader counts it */
	smp_store_release(&m->n, n + 1);
}

/*
 * Entry @e goes; the last entry takes its index. Only the order slots
 * from @e's on are stored (an array above leaf_max has hundreds).
 */
static void del_entry(struct pfart_meta *m, u32 e)
{
	u32 last = m->n - 1, slot = 0, i, o;

	while (slot < last && pfart_order(m, slot) != e)
		slot++;
	for (i = slot; i < last; i++) {
		o = pfart_order(m, i + 1);
		pfart_order_set(m, i, o == last ? e : o);
	}
	/* the last entry's slot, when it comes before @e's: renamed */
	for (i = 0; e != last && i < slot; i++) {
		if (pfart_order(m, i) == last) {
			pfart_order_set(m, i, e);
			break;
		}
	}
	if (e != last) {
		set_pos(m, e, m->pos[last]);
		WRITE_ONCE(m->klen[e], m->klen[last]);
		WRITE_ONCE(m->fp[e], m->fp[last]);
	}
	/* release: pairs with the acquire of @n in pfart_leaf_find() */
	smp_store_release(&m->n, last);
}

/* @live is read without the lock (smo.c collapse()) */
static void live_add(struct pfart_meta *m, int bytes)
{
	WRITE_ONCE(m->live, m->live + bytes);
}

static u32 view_bytes(const struct pfart_view *v)
{
	return pfart_r_size(v->klen, v->vfield);
}

u64 pfart_view_blob(const struct pfart_view *v)
{
	return v->vfield == PFART_VBLOB ? get_le64(v->val) : 0;
}

/* ---- append, invalidate ----------------------------------------------------- */

/* Write the record's body at @rec (its hdr slot stays as it is). */
static void body_write(u8 *rec, const struct pfart_rec *r)
{
	u32 size = pfart_rec_bytes(r);

	memcpy(rec + 2, r->key, r->klen);
	if (r->vfield == PFART_VBLOB)
		put_le64(rec + 2 + r->klen, r->blob);
	else if (r->vfield)
		memcpy(rec + 2 + r->klen, r->val, r->vfield);
	if ((2 + r->klen + (r->vfield == PFART_VBLOB ? 8 : r->vfield)) & 1)
		rec[size - 1] = 0;
}

/*
 * Clear the valid bit of the record at @pos, in the cache: the caller
 * persists it (a delete's commit), writes it back (a repair), or leaves
 * it (an update's). Return: its blob.
 */
static u64 clear_valid(struct pfart_leaf *l, u32 pos)
{
	u8 *rec = l->data + pos;
	struct pfart_view v;

	view_at(l, pfart_data_size(l->klass), pos, &v);
	hdr_store(rec, hdr_load(rec) & ~PFART_R_VALID);
	return pfart_view_blob(&v);
}

/**
 * pfart_leaf_append - commit record @r at the tail of locked array @l
 * @old: the entry of the same key (an update), or -1
 *
 * Context: @l locked, pfart_leaf_fits() said yes.
 * Return: the blob of the record an update replaced (to retire), or 0.
 */
u64 pfart_leaf_append(struct pfart *t, struct pfart_leaf *l,
		      struct pfart_meta *m, const struct pfart_rec *r, int old)
{
	u32 size = pfart_rec_bytes(r), pos = m->tail, end = pos + size;
	u32 ds = pfart_data_size(l->klass), zero = end + 2 <= ds ? 2 : 0;
	u8 *rec = l->data + pos;
	struct pfart_view v;
	u64 blob = 0;

	/* 1. the body, and a zero hdr slot behind it */
	body_write(rec, r);
	if (zero)
		hdr_store(l->data + end, 0);
	pfart_persist(t, rec + 2, size - 2 + zero);
	/* 2. the commit */
	hdr_store(rec, pfart_r_make(r->klen, r->vfield));
	pfart_persist(t, rec, 2);
	m->tail = end;
	live_add(m, size);
	pfart_stat_inc(t, appends);
	if (old < 0) {
		add_entry(l, m, pos, r->key, r->klen);
		return 0;
	}
	/* 3. an update: the old record goes, in the cache (see the top) */
	if (!pfart_leaf_view(l, m, pfart_leaf_size(l->klass), old, &v))
		live_add(m, -(int)view_bytes(&v));
	blob = clear_valid(l, m->pos[old]);
	/* no open needs it on media, nor a clean detach */
	pmidx_lose_ok(t->pm, l->data + m->pos[old], 2);
	set_pos(m, old, pos);
	return blob;
}

/*
 * The live record bytes of locked array @l once pfart_leaf_invalidate()
 * has deleted entry @e (nothing changes here).
 */
u32 pfart_leaf_live_after(struct pfart_leaf *l, struct pfart_meta *m, int e)
{
	struct pfart_view v;

	if (pfart_leaf_view(l, m, pfart_leaf_size(l->klass), e, &v))
		return m->live;
	return m->live - view_bytes(&v);
}

/*
 * pfart_leaf_invalidate - delete entry @e of locked array @l, durably
 * Return: the record's blob (to retire once this returns), or 0.
 */
u64 pfart_leaf_invalidate(struct pfart *t, struct pfart_leaf *l,
			  struct pfart_meta *m, int e)
{
	struct pfart_view v;
	u64 blob;

	if (!pfart_leaf_view(l, m, pfart_leaf_size(l->klass), e, &v))
		live_add(m, -(int)view_bytes(&v));
	blob = clear_valid(l, m->pos[e]);
	pfart_persist(t, l->data + m->pos[e], 2);
	del_entry(m, e);
	return blob;
}

/* ---- building ------------------------------------------------------------- */

/*
 * Header of a new leaf array (zeroed, unpublished): its place in the tree
 * is @depth bytes of @path. The check word comes with pfart_leaf_fill().
 */
void pfart_leaf_init(struct pfart *t, struct pfart_leaf *l, u8 klass,
		     u32 depth, const u8 *path)
{
	l->type = PFART_LEAF;
	l->depth = depth;
	l->plen = min_t(u32, depth, PFART_LPREFIX_MAX);
	l->klass = klass;
	l->owner = cpu_to_le64(t->root_off);
	memcpy(l->prefix, path, l->plen);
}

/*
 * Fill a new leaf array with @n records in key order, its metadata with
 * them; write it back (the caller's batch fences). Context: unpublished.
 */
void pfart_leaf_fill(struct pfart *t, struct pfart_leaf *l,
		     struct pfart_meta *m, const struct pfart_rec *r, u32 n)
{
	u32 pos = 0, i;

	for (i = 0; i < n; i++) {
		u8 *rec = l->data + pos;

		body_write(rec, &r[i]);
		hdr_store(rec, pfart_r_make(r[i].klen, r[i].vfield));
		m->pos[i] = pos;
		m->klen[i] = r[i].klen;
		m->fp[i] = pfart_fp(r[i].key, r[i].klen);
		pfart_order_set(m, i, i);
		pos += pfart_rec_bytes(&r[i]);
	}
	m->n = n;
	m->tail = pos;
	WRITE_ONCE(m->live, pos);
	l->count = cpu_to_le16(n);
	l->check = cpu_to_le32(pfart_check_word(l, t->root_off));
	/* the bytes behind @pos are zero since the reserve */
	pfart_wb(t, l, PFART_HDR_SIZE + pos);
}

void pfart_rec_of_view(const struct pfart_view *v, struct pfart_rec *r)
{
	r->key = v->key;
	r->klen = v->klen;
	r->vfield = v->vfield;
	r->val = v->val;
	r->blob = pfart_view_blob(v);
}

/*
 * The value of record @v into @dst when it fits in @cap (its one copy,
 * machine-check safe); *@vlen its length either way.
 */
int pfart_read_value(struct pfart *t, const struct pfart_view *v, u8 *dst,
		     u32 cap, u32 *vlen)
{
	if (v->vfield == PFART_VBLOB) {
		u64 b = pfart_view_blob(v);

		if (!pfart_off_ok(t, b, sizeof(struct pmidx_blob)))
			return -EUCLEAN;
		return pmidx_blob_read(t->pool, b, dst, cap, vlen);
	}
	*vlen = v->vfield;
	if (!*vlen || *vlen > cap)
		return 0;
	return pmidx_read_data(t->pm, dst, v->val, *vlen);
}

/* ---- parse (recovery, check) ---------------------------------------------- */

static int parse_bad(struct pfart_parse *p, const char *why)
{
	p->why = why;
	return -EUCLEAN;
}

/*
 * Drop entry @e, a valid record that a later record of its key follows:
 * its update's invalidation never reached the media. With @fix it is
 * invalidated and written back (recovery; pfart_leaf_parse() fences
 * once for the array: only a later attach reads it, and the rule holds
 * either way), else it is an error (check).
 */
static int parse_superseded(struct pfart *t, struct pfart_leaf *l,
			    struct pfart_meta *m, int e, bool fix,
			    struct pfart_parse *p)
{
	struct pfart_view w;

	if (!fix)
		return parse_bad(p, "a valid record before a later one of its key");
	if (!pfart_leaf_view(l, m, pfart_leaf_size(l->klass), e, &w))
		live_add(m, -(int)view_bytes(&w));
	clear_valid(l, m->pos[e]);
	pfart_wb(t, l->data + m->pos[e], 2);
	del_entry(m, e);
	p->dups++;
	return 0;
}

/*
 * Rebuild @m from the records of @l: records up to the first zero hdr,
 * the last record of each key deciding it (valid: the key's; invalid:
 * deleted), every valid key sharing the array's path (its first @depth
 * bytes: the first key's, checked by the walk; the stored prefix).
 * Blobs are not looked at (recovery.c does, per entry).
 */
int pfart_leaf_parse(struct pfart *t, struct pfart_leaf *l,
		     struct pfart_meta *m, bool fix, struct pfart_parse *p)
{
	u32 ds = pfart_data_size(l->klass), pos = 0, found = 0, depth = l->depth;
	u32 dups = p->dups;
	const u8 *first = NULL;
	struct pfart_view v;

	m->n = 0;
	WRITE_ONCE(m->live, 0);
	while (pos + 2 <= ds) {
		u16 h = hdr_load(l->data + pos);
		int e;

		if (!h)
			break;
		if (!view_at(l, ds, pos, &v))
			return parse_bad(p, "record beyond its leaf array");
		found++;
		e = pfart_leaf_find(t, l, m, v.key, v.klen);
		if (e >= 0 && parse_superseded(t, l, m, e, fix, p))
			return -EUCLEAN;
		if (!(h & PFART_R_VALID)) {
			pos += view_bytes(&v);
			continue;
		}
		if (v.klen < depth ||
		    memcmp(v.key, l->prefix, min_t(u32, l->plen, depth)))
			return parse_bad(p, "key off its leaf array's path");
		if (first && memcmp(v.key, first, depth))
			return parse_bad(p, "keys of a leaf array differ in its path");
		first = first ?: v.key;
		if (m->n >= m->cap)
			return parse_bad(p, "too many records in a leaf array");
		add_entry(l, m, pos, v.key, v.klen);
		live_add(m, view_bytes(&v));
		pos += view_bytes(&v);
	}
	if (p->dups != dups)
		pfart_fence(t);
	if (found < le16_to_cpu(l->count))
		return parse_bad(p, "fewer records than the leaf array was built with");
	m->tail = pos;
	p->records = m->n;
	return 0;
}
