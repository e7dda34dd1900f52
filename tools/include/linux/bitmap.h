/* SPDX-License-Identifier: GPL-2.0 */
/* Userspace shim: bitmaps of unsigned long words (tools/testing/shim/bitmap.c). */
#ifndef _SHIM_LINUX_BITMAP_H
#define _SHIM_LINUX_BITMAP_H

#include <linux/string.h>
#include <linux/types.h>
#include <linux/bitops.h>
#include <linux/find.h>
#include <linux/gfp.h>

#define BITMAP_FIRST_WORD_MASK(start)	(~0UL << ((start) & (BITS_PER_LONG - 1)))
#define BITMAP_LAST_WORD_MASK(nbits)	(~0UL >> (-(nbits) & (BITS_PER_LONG - 1)))
#define DECLARE_BITMAP(name, bits)	unsigned long name[BITS_TO_LONGS(bits)]

unsigned long *bitmap_alloc(unsigned int nbits, gfp_t flags);
unsigned long *bitmap_zalloc(unsigned int nbits, gfp_t flags);
void bitmap_free(const unsigned long *bitmap);

void bitmap_set(unsigned long *map, unsigned int start, unsigned int len);
void bitmap_clear(unsigned long *map, unsigned int start, unsigned int len);
unsigned long bitmap_find_next_zero_area_off(unsigned long *map,
					     unsigned long size,
					     unsigned long start,
					     unsigned int nr,
					     unsigned long align_mask,
					     unsigned long align_offset);
unsigned int bitmap_weight(const unsigned long *src, unsigned int nbits);
bool bitmap_equal(const unsigned long *a, const unsigned long *b,
		  unsigned int nbits);
bool bitmap_empty(const unsigned long *src, unsigned int nbits);
bool bitmap_full(const unsigned long *src, unsigned int nbits);
bool bitmap_intersects(const unsigned long *a, const unsigned long *b,
		       unsigned int nbits);
void bitmap_or(unsigned long *dst, const unsigned long *a,
	       const unsigned long *b, unsigned int nbits);
bool bitmap_and(unsigned long *dst, const unsigned long *a,
		const unsigned long *b, unsigned int nbits);
bool bitmap_andnot(unsigned long *dst, const unsigned long *a,
		   const unsigned long *b, unsigned int nbits);
void bitmap_from_arr64(unsigned long *bitmap, const u64 *buf,
		       unsigned int nbits);
void bitmap_to_arr64(u64 *buf, const unsigned long *bitmap,
		     unsigned int nbits);
void bitmap_from_arr32(unsigned long *bitmap, const u32 *buf,
		       unsigned int nbits);
void bitmap_to_arr32(u32 *buf, const unsigned long *bitmap,
		     unsigned int nbits);

static inline unsigned long bitmap_find_next_zero_area(unsigned long *map,
						       unsigned long size,
						       unsigned long start,
						       unsigned int nr,
						       unsigned long align_mask)
{
	return bitmap_find_next_zero_area_off(map, size, start, nr,
					      align_mask, 0);
}

static inline void bitmap_zero(unsigned long *dst, unsigned int nbits)
{
	memset(dst, 0, BITS_TO_LONGS(nbits) * sizeof(unsigned long));
}

static inline void bitmap_fill(unsigned long *dst, unsigned int nbits)
{
	memset(dst, 0xff, BITS_TO_LONGS(nbits) * sizeof(unsigned long));
}

static inline void bitmap_copy(unsigned long *dst, const unsigned long *src,
			       unsigned int nbits)
{
	memcpy(dst, src, BITS_TO_LONGS(nbits) * sizeof(unsigned long));
}

/* what the kernel header brings in transitively */
#include <linux/kernel.h>
#include <linux/string.h>

#endif
