/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Userspace shim: bit operations. set_bit() and friends are atomic (as in
 * the kernel), the __ variants are not; test_bit() is a relaxed atomic read.
 */
#ifndef _SHIM_LINUX_BITOPS_H
#define _SHIM_LINUX_BITOPS_H

#include <linux/types.h>
#include <linux/bits.h>
#include <linux/compiler.h>

#define BITS_TO_LONGS(nr)	(((nr) + BITS_PER_LONG - 1) / BITS_PER_LONG)
#define BITS_TO_U64(nr)		(((nr) + 63) / 64)
#define BITS_TO_U32(nr)		(((nr) + 31) / 32)
#define BITS_TO_BYTES(nr)	(((nr) + 7) / 8)

static inline void set_bit(long nr, volatile unsigned long *addr)
{
	__atomic_fetch_or(&addr[BIT_WORD(nr)], BIT_MASK(nr), __ATOMIC_RELAXED);
}

static inline void clear_bit(long nr, volatile unsigned long *addr)
{
	__atomic_fetch_and(&addr[BIT_WORD(nr)], ~BIT_MASK(nr), __ATOMIC_RELAXED);
}

static inline void change_bit(long nr, volatile unsigned long *addr)
{
	__atomic_fetch_xor(&addr[BIT_WORD(nr)], BIT_MASK(nr), __ATOMIC_RELAXED);
}

static inline bool test_and_set_bit(long nr, volatile unsigned long *addr)
{
	return __atomic_fetch_or(&addr[BIT_WORD(nr)], BIT_MASK(nr),
				 __ATOMIC_SEQ_CST) & BIT_MASK(nr);
}

static inline bool test_and_clear_bit(long nr, volatile unsigned long *addr)
{
	return __atomic_fetch_and(&addr[BIT_WORD(nr)], ~BIT_MASK(nr),
				  __ATOMIC_SEQ_CST) & BIT_MASK(nr);
}

static inline bool test_and_change_bit(long nr, volatile unsigned long *addr)
{
	return __atomic_fetch_xor(&addr[BIT_WORD(nr)], BIT_MASK(nr),
				  __ATOMIC_SEQ_CST) & BIT_MASK(nr);
}

static inline void __set_bit(unsigned long nr, volatile unsigned long *addr)
{
	addr[BIT_WORD(nr)] |= BIT_MASK(nr);
}

static inline void __clear_bit(unsigned long nr, volatile unsigned long *addr)
{
	addr[BIT_WORD(nr)] &= ~BIT_MASK(nr);
}

static inline void __change_bit(unsigned long nr, volatile unsigned long *addr)
{
	addr[BIT_WORD(nr)] ^= BIT_MASK(nr);
}

static inline bool __test_and_set_bit(unsigned long nr, volatile unsigned long *addr)
{
	unsigned long old = addr[BIT_WORD(nr)];

	addr[BIT_WORD(nr)] = old | BIT_MASK(nr);
	return old & BIT_MASK(nr);
}

static inline bool __test_and_clear_bit(unsigned long nr, volatile unsigned long *addr)
{
	unsigned long old = addr[BIT_WORD(nr)];

	addr[BIT_WORD(nr)] = old & ~BIT_MASK(nr);
	return old & BIT_MASK(nr);
}

/* a marked (atomic) read, as KCSAN treats the kernel's test_bit() */
static inline bool test_bit(unsigned long nr, const volatile unsigned long *addr)
{
	return 1UL & (__atomic_load_n(&addr[BIT_WORD(nr)], __ATOMIC_RELAXED) >>
		      (nr & (BITS_PER_LONG - 1)));
}

/* Find-first/last-set helpers; the unsigned long ones are undefined for 0. */
static inline unsigned long __ffs(unsigned long word)
{
	return __builtin_ctzl(word);
}

static inline unsigned long __fls(unsigned long word)
{
	return BITS_PER_LONG - 1 - __builtin_clzl(word);
}

static inline unsigned long ffz(unsigned long word)
{
	return __ffs(~word);
}

/* libc declares ffs() too: keep the builtin */
#define ffs(x)	__builtin_ffs(x)

static inline int fls(unsigned int x)
{
	return x ? 32 - __builtin_clz(x) : 0;
}

static inline int fls64(u64 x)
{
	return x ? 64 - __builtin_clzll(x) : 0;
}

static inline unsigned int fls_long(unsigned long l)
{
	return l ? BITS_PER_LONG - __builtin_clzl(l) : 0;
}

static inline unsigned int __ffs64(u64 word)
{
	return __builtin_ctzll(word);
}

static inline unsigned int hweight8(unsigned int w)
{
	return __builtin_popcount(w & 0xff);
}

static inline unsigned int hweight16(unsigned int w)
{
	return __builtin_popcount(w & 0xffff);
}

static inline unsigned int hweight32(unsigned int w)
{
	return __builtin_popcount(w);
}

static inline unsigned int hweight64(u64 w)
{
	return __builtin_popcountll(w);
}

static inline unsigned long hweight_long(unsigned long w)
{
	return __builtin_popcountl(w);
}

static inline u32 rol32(u32 word, unsigned int shift)
{
	return (word << (shift & 31)) | (word >> ((-shift) & 31));
}

static inline u32 ror32(u32 word, unsigned int shift)
{
	return (word >> (shift & 31)) | (word << ((-shift) & 31));
}

static inline u64 rol64(u64 word, unsigned int shift)
{
	return (word << (shift & 63)) | (word >> ((-shift) & 63));
}

static inline u64 ror64(u64 word, unsigned int shift)
{
	return (word >> (shift & 63)) | (word << ((-shift) & 63));
}

#include <linux/find.h>

#endif
