// SPDX-License-Identifier: GPL-2.0
/* Userspace shim: bit searches and bitmap operations (see <linux/bitmap.h>). */
#include <linux/types.h>
#include <linux/bitmap.h>
#include <linux/kernel.h>

static unsigned long find_bit(const unsigned long *addr, unsigned long size,
			      unsigned long start, unsigned long invert)
{
	unsigned long tmp;

	if (start >= size)
		return size;
	tmp = addr[start / BITS_PER_LONG] ^ invert;
	tmp &= BITMAP_FIRST_WORD_MASK(start);
	start = round_down(start, BITS_PER_LONG);
	while (!tmp) {
		start += BITS_PER_LONG;
		if (start >= size)
			return size;
		tmp = addr[start / BITS_PER_LONG] ^ invert;
	}
	return min(start + __ffs(tmp), size);
}

unsigned long _find_next_bit(const unsigned long *addr, unsigned long size,
			     unsigned long offset)
{
	return find_bit(addr, size, offset, 0UL);
}

unsigned long _find_next_zero_bit(const unsigned long *addr,
				  unsigned long size, unsigned long offset)
{
	return find_bit(addr, size, offset, ~0UL);
}

unsigned long find_last_bit(const unsigned long *addr, unsigned long size)
{
	unsigned long idx, val;

	if (!size)
		return 0;
	val = BITMAP_LAST_WORD_MASK(size);
	idx = (size - 1) / BITS_PER_LONG;
	do {
		val &= addr[idx];
		if (val)
			return idx * BITS_PER_LONG + __fls(val);
		val = ~0UL;
	} while (idx--);
	return size;
}

void bitmap_set(unsigned long *map, unsigned int start, unsigned int len)
{
	unsigned int i;

	for (i = start; i < start + len && (i % BITS_PER_LONG); i++)
		__set_bit(i, map);
	for (; i + BITS_PER_LONG <= start + len; i += BITS_PER_LONG)
		map[i / BITS_PER_LONG] = ~0UL;
	for (; i < start + len; i++)
		__set_bit(i, map);
}

void bitmap_clear(unsigned long *map, unsigned int start, unsigned int len)
{
	unsigned int i;

	for (i = start; i < start + len && (i % BITS_PER_LONG); i++)
		__clear_bit(i, map);
	for (; i + BITS_PER_LONG <= start + len; i += BITS_PER_LONG)
		map[i / BITS_PER_LONG] = 0;
	for (; i < start + len; i++)
		__clear_bit(i, map);
}

/*
 * The first run of @nr zero bits at or after @start whose index plus
 * @align_offset is aligned to @align_mask + 1. Not found: a value > @size
 * (the end of the run that did not fit), as in the kernel.
 */
unsigned long bitmap_find_next_zero_area_off(unsigned long *map,
					     unsigned long size,
					     unsigned long start,
					     unsigned int nr,
					     unsigned long align_mask,
					     unsigned long align_offset)
{
	unsigned long index, end, i;

	for (;;) {
		index = find_next_zero_bit(map, size, start);
		index = __ALIGN_MASK(index + align_offset, align_mask) -
			align_offset;
		end = index + nr;
		if (end > size)
			return end;
		i = find_next_bit(map, end, index);
		if (i >= end)
			return index;
		start = i + 1;
	}
}

unsigned int bitmap_weight(const unsigned long *src, unsigned int nbits)
{
	unsigned int k, w = 0, lim = nbits / BITS_PER_LONG;

	for (k = 0; k < lim; k++)
		w += hweight_long(src[k]);
	if (nbits % BITS_PER_LONG)
		w += hweight_long(src[k] & BITMAP_LAST_WORD_MASK(nbits));
	return w;
}

bool bitmap_equal(const unsigned long *a, const unsigned long *b,
		  unsigned int nbits)
{
	unsigned int k, lim = nbits / BITS_PER_LONG;

	for (k = 0; k < lim; k++)
		if (a[k] != b[k])
			return false;
	if (nbits % BITS_PER_LONG)
		return !((a[k] ^ b[k]) & BITMAP_LAST_WORD_MASK(nbits));
	return true;
}

bool bitmap_empty(const unsigned long *src, unsigned int nbits)
{
	return find_first_bit(src, nbits) == nbits;
}

bool bitmap_full(const unsigned long *src, unsigned int nbits)
{
	return find_first_zero_bit(src, nbits) == nbits;
}

bool bitmap_intersects(const unsigned long *a, const unsigned long *b,
		       unsigned int nbits)
{
	unsigned int k, lim = nbits / BITS_PER_LONG;

	for (k = 0; k < lim; k++)
		if (a[k] & b[k])
			return true;
	if (nbits % BITS_PER_LONG)
		return (a[k] & b[k]) & BITMAP_LAST_WORD_MASK(nbits);
	return false;
}

void bitmap_or(unsigned long *dst, const unsigned long *a,
	       const unsigned long *b, unsigned int nbits)
{
	unsigned int k;

	for (k = 0; k < BITS_TO_LONGS(nbits); k++)
		dst[k] = a[k] | b[k];
}

bool bitmap_and(unsigned long *dst, const unsigned long *a,
		const unsigned long *b, unsigned int nbits)
{
	unsigned int k, lim = nbits / BITS_PER_LONG;
	unsigned long r = 0;

	for (k = 0; k < lim; k++)
		r |= (dst[k] = a[k] & b[k]);
	if (nbits % BITS_PER_LONG)
		r |= (dst[k] = a[k] & b[k] & BITMAP_LAST_WORD_MASK(nbits));
	return r != 0;
}

bool bitmap_andnot(unsigned long *dst, const unsigned long *a,
		   const unsigned long *b, unsigned int nbits)
{
	unsigned int k, lim = nbits / BITS_PER_LONG;
	unsigned long r = 0;

	for (k = 0; k < lim; k++)
		r |= (dst[k] = a[k] & ~b[k]);
	if (nbits % BITS_PER_LONG)
		r |= (dst[k] = a[k] & ~b[k] & BITMAP_LAST_WORD_MASK(nbits));
	return r != 0;
}

/* u64 array <-> bitmap; bits past @nbits are cleared in the destination. */
void bitmap_from_arr64(unsigned long *bitmap, const u64 *buf, unsigned int nbits)
{
	unsigned int i, n = BITS_TO_U64(nbits);

	for (i = 0; i < n; i++) {
		if (BITS_PER_LONG == 64) {
			bitmap[i] = (unsigned long)buf[i];
		} else {
			bitmap[2 * i] = (unsigned long)buf[i];
			if (2 * i + 1 < BITS_TO_LONGS(nbits))
				bitmap[2 * i + 1] = (unsigned long)(buf[i] >> 32);
		}
	}
	if (nbits % BITS_PER_LONG)
		bitmap[BITS_TO_LONGS(nbits) - 1] &= BITMAP_LAST_WORD_MASK(nbits);
}

void bitmap_to_arr64(u64 *buf, const unsigned long *bitmap, unsigned int nbits)
{
	unsigned int i, n = BITS_TO_U64(nbits);

	for (i = 0; i < n; i++) {
		if (BITS_PER_LONG == 64) {
			buf[i] = bitmap[i];
		} else {
			buf[i] = bitmap[2 * i];
			if (2 * i + 1 < BITS_TO_LONGS(nbits))
				buf[i] |= (u64)bitmap[2 * i + 1] << 32;
		}
	}
	if (nbits % 64)
		buf[n - 1] &= GENMASK_ULL((nbits - 1) % 64, 0);
}

void bitmap_from_arr32(unsigned long *bitmap, const u32 *buf, unsigned int nbits)
{
	unsigned int i;

	bitmap_zero(bitmap, nbits);
	for (i = 0; i < nbits; i++)
		if (buf[i / 32] & (1U << (i % 32)))
			__set_bit(i, bitmap);
}

void bitmap_to_arr32(u32 *buf, const unsigned long *bitmap, unsigned int nbits)
{
	unsigned int i;

	memset(buf, 0, BITS_TO_U32(nbits) * sizeof(u32));
	for (i = 0; i < nbits; i++)
		if (test_bit(i, bitmap))
			buf[i / 32] |= 1U << (i % 32);
}
