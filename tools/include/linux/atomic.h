/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Userspace shim: atomic_t, atomic64_t, atomic_long_t and the generic
 * cmpxchg()/xchg() on GCC/Clang __atomic builtins. Ordering follows
 * Documentation/atomic_t.txt: void and plain read/set ops are relaxed,
 * value-returning RMW ops are fully ordered.
 */
#ifndef _SHIM_LINUX_ATOMIC_H
#define _SHIM_LINUX_ATOMIC_H

#include <linux/types.h>
#include <linux/compiler.h>

#define __SHIM_ATOMIC_OPS(pfx, atype, ctype)				\
static inline ctype pfx##_read(const atype *v)				\
{ return __atomic_load_n(&v->counter, __ATOMIC_RELAXED); }		\
static inline ctype pfx##_read_acquire(const atype *v)			\
{ return __atomic_load_n(&v->counter, __ATOMIC_ACQUIRE); }		\
static inline void pfx##_set(atype *v, ctype i)				\
{ __atomic_store_n(&v->counter, i, __ATOMIC_RELAXED); }		\
static inline void pfx##_set_release(atype *v, ctype i)		\
{ __atomic_store_n(&v->counter, i, __ATOMIC_RELEASE); }		\
static inline void pfx##_add(ctype i, atype *v)				\
{ __atomic_fetch_add(&v->counter, i, __ATOMIC_RELAXED); }		\
static inline void pfx##_sub(ctype i, atype *v)				\
{ __atomic_fetch_sub(&v->counter, i, __ATOMIC_RELAXED); }		\
static inline void pfx##_inc(atype *v)					\
{ __atomic_fetch_add(&v->counter, 1, __ATOMIC_RELAXED); }		\
static inline void pfx##_dec(atype *v)					\
{ __atomic_fetch_sub(&v->counter, 1, __ATOMIC_RELAXED); }		\
static inline void pfx##_and(ctype i, atype *v)				\
{ __atomic_fetch_and(&v->counter, i, __ATOMIC_RELAXED); }		\
static inline void pfx##_or(ctype i, atype *v)				\
{ __atomic_fetch_or(&v->counter, i, __ATOMIC_RELAXED); }		\
static inline void pfx##_xor(ctype i, atype *v)				\
{ __atomic_fetch_xor(&v->counter, i, __ATOMIC_RELAXED); }		\
static inline ctype pfx##_add_return(ctype i, atype *v)			\
{ return __atomic_add_fetch(&v->counter, i, __ATOMIC_SEQ_CST); }	\
static inline ctype pfx##_sub_return(ctype i, atype *v)			\
{ return __atomic_sub_fetch(&v->counter, i, __ATOMIC_SEQ_CST); }	\
static inline ctype pfx##_inc_return(atype *v)				\
{ return __atomic_add_fetch(&v->counter, 1, __ATOMIC_SEQ_CST); }	\
static inline ctype pfx##_dec_return(atype *v)				\
{ return __atomic_sub_fetch(&v->counter, 1, __ATOMIC_SEQ_CST); }	\
static inline ctype pfx##_dec_return_release(atype *v)			\
{ return __atomic_sub_fetch(&v->counter, 1, __ATOMIC_RELEASE); }	\
static inline ctype pfx##_fetch_add(ctype i, atype *v)			\
{ return __atomic_fetch_add(&v->counter, i, __ATOMIC_SEQ_CST); }	\
static inline ctype pfx##_fetch_sub(ctype i, atype *v)			\
{ return __atomic_fetch_sub(&v->counter, i, __ATOMIC_SEQ_CST); }	\
static inline ctype pfx##_fetch_inc(atype *v)				\
{ return __atomic_fetch_add(&v->counter, 1, __ATOMIC_SEQ_CST); }	\
static inline ctype pfx##_fetch_dec(atype *v)				\
{ return __atomic_fetch_sub(&v->counter, 1, __ATOMIC_SEQ_CST); }	\
static inline ctype pfx##_fetch_and(ctype i, atype *v)			\
{ return __atomic_fetch_and(&v->counter, i, __ATOMIC_SEQ_CST); }	\
static inline ctype pfx##_fetch_or(ctype i, atype *v)			\
{ return __atomic_fetch_or(&v->counter, i, __ATOMIC_SEQ_CST); }	\
static inline ctype pfx##_fetch_xor(ctype i, atype *v)			\
{ return __atomic_fetch_xor(&v->counter, i, __ATOMIC_SEQ_CST); }	\
static inline bool pfx##_inc_and_test(atype *v)				\
{ return pfx##_inc_return(v) == 0; }					\
static inline bool pfx##_dec_and_test(atype *v)				\
{ return pfx##_dec_return(v) == 0; }					\
static inline bool pfx##_sub_and_test(ctype i, atype *v)		\
{ return pfx##_sub_return(i, v) == 0; }				\
static inline ctype pfx##_xchg(atype *v, ctype i)			\
{ return __atomic_exchange_n(&v->counter, i, __ATOMIC_SEQ_CST); }	\
static inline ctype pfx##_cmpxchg(atype *v, ctype old, ctype new)	\
{									\
	__atomic_compare_exchange_n(&v->counter, &old, new, false,	\
				    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); \
	return old;							\
}									\
static inline bool pfx##_try_cmpxchg(atype *v, ctype *old, ctype new)	\
{									\
	return __atomic_compare_exchange_n(&v->counter, old, new, false, \
					   __ATOMIC_SEQ_CST,		\
					   __ATOMIC_SEQ_CST);		\
}									\
static inline bool pfx##_add_unless(atype *v, ctype a, ctype u)	\
{									\
	ctype c = pfx##_read(v);					\
	do {								\
		if (c == u)						\
			return false;					\
	} while (!pfx##_try_cmpxchg(v, &c, c + a));			\
	return true;							\
}									\
static inline bool pfx##_inc_not_zero(atype *v)				\
{ return pfx##_add_unless(v, 1, 0); }

__SHIM_ATOMIC_OPS(atomic, atomic_t, int)
__SHIM_ATOMIC_OPS(atomic64, atomic64_t, s64)
__SHIM_ATOMIC_OPS(atomic_long, atomic_long_t, long)

#define ATOMIC_INIT(i)		{ (i) }
#define ATOMIC64_INIT(i)	{ (i) }
#define ATOMIC_LONG_INIT(i)	{ (i) }

#define xchg(ptr, v)	__atomic_exchange_n((ptr), (v), __ATOMIC_SEQ_CST)
#define cmpxchg(ptr, o, n) ({						\
	__typeof__(*(ptr)) __cx_old = (o);				\
	__atomic_compare_exchange_n((ptr), &__cx_old, (n), false,	\
				    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); \
	__cx_old;							\
})
#define cmpxchg64(ptr, o, n)		cmpxchg(ptr, o, n)
#define cmpxchg_relaxed(ptr, o, n)	cmpxchg(ptr, o, n)
#define try_cmpxchg(ptr, po, n)						\
	__atomic_compare_exchange_n((ptr), (po), (n), false,		\
				    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)

/* what the kernel header brings in transitively */
#include <linux/kernel.h>
#include <linux/string.h>

#endif
