// SPDX-License-Identifier: GPL-2.0
/*
 * Keys and values as 8-byte words (see format.h): encoding, comparison,
 * fingerprints, blob ownership and reclamation, and a small sort.
 *
 * Blob ownership: a blob is owned by exactly one live place: a leaf slot,
 * an unflushed buffer slot, or a recovered overflow entry. Read caches
 * (flushed buffer slots) and log entries only refer to blobs. A blob that
 * was never published (never in a slot, never in a log entry) is freed at
 * once (ccl_free_word). One that was published may be named by a log
 * entry that recovery still replays, so it is retired through the log
 * (ccl_retire_word: pmidx_wal_retire(), core/wal.h "Lifetime rule"): the
 * log holds it until both sides have been recycled, then hands it to the
 * index's epochs (ccl_release_word) for the DRAM readers.
 */
#include <linux/errno.h>
#include <linux/slab.h>
#include <linux/string.h>
#include "core/blob.h"
#include "core/unaligned.h"
#include "ccl.h"

/*
 * Fingerprint: 7 hash bits, bit 7 set for keys kept out of line. An 8-byte
 * key is hashed as one little-endian load. Leaves store fingerprints, so
 * the number must stay the one the byte loop before it gave: it does.
 */
u8 ccl_fp(const u8 *k, u32 len)
{
	u64 h;
	u32 i;

	if (len == 8)
		return (get_unaligned_le64(k) * 0x9e3779b97f4a7c15ULL) >> 57;
	h = 0xcbf29ce484222325ULL ^ len;
	for (i = 0; i < len; i++) {
		h ^= k[i];
		h *= 0x100000001b3ULL;
	}
	h *= 0x9e3779b97f4a7c15ULL;
	return CCL_FP_IND | (h >> 57);
}

/* The first 8 bytes of a key, big-endian, zero padded: memcmp order. */
u64 ccl_pfx(const u8 *k, u32 len)
{
	u64 p = 0;
	u32 i;

	if (len >= 8)
		return get_unaligned_be64(k);
	for (i = 0; i < len; i++)
		p |= (u64)k[i] << (56 - 8 * i);
	return p;
}

/* The bytes a word stands for; @w must stay put while they are used. */
const u8 *ccl_word_bytes(const struct ccl_tree *t, const u64 *w, bool ind,
			 u32 *len)
{
	if (!ind) {
		*len = 8;
		return (const u8 *)w;
	}
	return pmidx_blob_data(t->pool, ccl_w2off(*w), len);
}

/**
 * ccl_word_read - the bytes word @w stands for, into @dst when they fit in
 *                 @cap (*len: their length either way)
 *
 * For readers handing keys and values out: a blob's header and bytes are
 * copied machine-check safe, straight into @dst (pmidx_blob_read()); an
 * inline word is already in DRAM.
 *
 * Return: 0, -EIO on a media error, -EUCLEAN for a bad blob header.
 */
int ccl_word_read(struct ccl_tree *t, u64 w, bool ind, void *dst, u32 cap,
		  u32 *len)
{
	if (!ind) {
		*len = 8;
		if (cap >= 8)
			memcpy(dst, &w, 8);
		return 0;
	}
	return pmidx_blob_read(t->pool, ccl_w2off(w), dst, cap, len);
}

bool ccl_key_eq(struct ccl_tree *t, u64 w, bool ind, const u8 *k, u32 klen)
{
	const u8 *p;
	u32 len;

	if (!ind)
		return klen == 8 && !memcmp(&w, k, 8);
	if (klen == 8)
		return false;
	p = ccl_word_bytes(t, &w, true, &len);
	return len == klen && !memcmp(p, k, klen);
}

/* Compare the key of word @w with @k (pmidx_key_cmp order). */
int ccl_key_cmp_word(const struct ccl_tree *t, u64 w, bool ind, const u8 *k,
		     u32 klen)
{
	const u8 *p;
	u32 len;

	p = ccl_word_bytes(t, &w, ind, &len);
	return pmidx_key_cmp(p, len, k, klen);
}

/* Two words' keys in key order; inline keys compare as big-endian numbers. */
int ccl_word_cmp(const struct ccl_tree *t, u64 a, bool aind, u64 b, bool bind)
{
	const u8 *p;
	u32 len;
	u64 x, y;

	if (!aind && !bind) {
		x = be64_to_cpu((__force __be64)a);
		y = be64_to_cpu((__force __be64)b);
		return x < y ? -1 : x > y;
	}
	p = ccl_word_bytes(t, &b, bind, &len);
	return ccl_key_cmp_word(t, a, aind, p, len);
}

int ccl_fence_cmp(const struct ccl_fence *f, const u8 *k, u32 klen)
{
	return pmidx_key_cmp(f->key, f->len, k, klen);
}

/**
 * ccl_encode - the word for @len bytes at @p: inline when exactly 8 bytes,
 *              else a new (durable) blob owned by the caller
 *
 * Context: process context, outside epoch sections.
 * Return: 0 or -ENOSPC.
 */
int ccl_encode(struct ccl_tree *t, const u8 *p, u32 len, u64 *w, bool *ind)
{
	u64 off;

	if (len == 8) {
		memcpy(w, p, 8);
		*ind = false;
		return 0;
	}
	off = pmidx_blob_write(t->pool, p, len);
	if (!off)
		return -ENOSPC;
	atomic64_add(pmidx_alloc_size(&t->pool->alloc, off), &t->blob_bytes);
	*w = ccl_off2w(off);
	*ind = true;
	return 0;
}

/* Free a blob nobody else has seen. */
void ccl_free_word(struct ccl_tree *t, u64 w)
{
	u64 off = ccl_w2off(w);

	atomic64_sub(pmidx_alloc_size(&t->pool->alloc, off), &t->blob_bytes);
	pmidx_free(&t->pool->alloc, off);
}

/* Free a published blob once no log entry and no reader can name it. */
void ccl_retire_word(struct ccl_tree *t, u64 w)
{
	pmidx_wal_retire(t->wal, ccl_w2off(w));
}

/* The log released a retired blob: the epochs free it (ccl_epoch_free). */
void ccl_release_word(void *ctx, u64 off)
{
	struct ccl_tree *t = ctx;

	pmidx_epoch_retire(&t->epoch, off);
}

/* The same for DRAM (tagged with bit 0; see ccl.c ccl_epoch_free). */
void ccl_retire_dram(struct ccl_tree *t, void *p)
{
	pmidx_epoch_retire(&t->epoch, (u64)(uintptr_t)p | 1);
}
