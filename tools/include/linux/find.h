/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Userspace shim: bit searches (tools/testing/shim/bitmap.c). As in the
 * kernel, a search that finds nothing returns @size, and a search of a
 * bitmap of one word whose size is a compile-time constant is inlined
 * to a mask and a bit scan (the kernel's small_const_nbits() fast path:
 * a leaf's 14-bit slot bitmap, searched on every lookup).
 */
#ifndef _SHIM_LINUX_FIND_H
#define _SHIM_LINUX_FIND_H

#include <linux/types.h>
#include <linux/bits.h>
#include <linux/bitops.h>

#define small_const_nbits(nbits) \
	(__builtin_constant_p(nbits) && (nbits) <= BITS_PER_LONG && (nbits) > 0)

unsigned long _find_next_bit(const unsigned long *addr, unsigned long size,
			     unsigned long offset);
unsigned long _find_next_zero_bit(const unsigned long *addr,
				  unsigned long size, unsigned long offset);
unsigned long find_last_bit(const unsigned long *addr, unsigned long size);

/* One word, @invert: ~0UL to search for a zero bit. */
static inline unsigned long find_next_in_word(const unsigned long *addr,
					      unsigned long size,
					      unsigned long offset,
					      unsigned long invert)
{
	unsigned long val;

	if (offset >= size)
		return size;
	val = (*addr ^ invert) & GENMASK(size - 1, offset);
	return val ? __ffs(val) : size;
}

static inline unsigned long find_next_bit(const unsigned long *addr,
					  unsigned long size,
					  unsigned long offset)
{
	if (small_const_nbits(size))
		return find_next_in_word(addr, size, offset, 0UL);
	return _find_next_bit(addr, size, offset);
}

static inline unsigned long find_next_zero_bit(const unsigned long *addr,
					       unsigned long size,
					       unsigned long offset)
{
	if (small_const_nbits(size))
		return find_next_in_word(addr, size, offset, ~0UL);
	return _find_next_zero_bit(addr, size, offset);
}

static inline unsigned long find_first_bit(const unsigned long *addr,
					   unsigned long size)
{
	return find_next_bit(addr, size, 0);
}

static inline unsigned long find_first_zero_bit(const unsigned long *addr,
						unsigned long size)
{
	return find_next_zero_bit(addr, size, 0);
}

#define for_each_set_bit(bit, addr, size)				\
	for ((bit) = find_first_bit((addr), (size));			\
	     (bit) < (size);						\
	     (bit) = find_next_bit((addr), (size), (bit) + 1))

#define for_each_clear_bit(bit, addr, size)				\
	for ((bit) = find_first_zero_bit((addr), (size));		\
	     (bit) < (size);						\
	     (bit) = find_next_zero_bit((addr), (size), (bit) + 1))

#endif
