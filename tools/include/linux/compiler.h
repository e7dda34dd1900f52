/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Userspace shim: compiler attributes and the access-once helpers.
 *
 * READ_ONCE()/WRITE_ONCE() are relaxed atomic accesses here, so that
 * ThreadSanitizer sees the same "marked access" the kernel's KCSAN does;
 * on x86 they compile to the same plain loads and stores.
 */
#ifndef _SHIM_LINUX_COMPILER_H
#define _SHIM_LINUX_COMPILER_H

#include <linux/kconfig.h>

#ifndef __always_inline
#define __always_inline		inline __attribute__((__always_inline__))
#endif
#define noinline		__attribute__((__noinline__))
#define __maybe_unused		__attribute__((__unused__))
#define __always_unused		__attribute__((__unused__))
#define __must_check		__attribute__((__warn_unused_result__))
#define __packed		__attribute__((__packed__))
#define __aligned(x)		__attribute__((__aligned__(x)))
#define __printf(a, b)		__attribute__((__format__(printf, a, b)))
#define __cold			__attribute__((__cold__))
#define __pure			__attribute__((__pure__))
#define __weak			__attribute__((__weak__))
#define __noreturn		__attribute__((__noreturn__))
#define __section(s)		__attribute__((__section__(s)))
#define __used			__attribute__((__used__))
#if __has_attribute(__uninitialized__)
#define __uninitialized		__attribute__((__uninitialized__))
#else
#define __uninitialized
#endif
#define __init
#define __exit
#define __read_mostly
#define __cacheline_aligned	__aligned(64)
#define ____cacheline_aligned	__aligned(64)
#define ____cacheline_aligned_in_smp __aligned(64)
#define fallthrough		__attribute__((__fallthrough__))

/* sparse annotations: nothing to check in userspace */
#define __user
#define __kernel
#define __iomem
#define __percpu
#define __rcu
#define __force
#define __must_hold(x)
#define __acquires(x)
#define __releases(x)

#define likely(x)		__builtin_expect(!!(x), 1)
#define unlikely(x)		__builtin_expect(!!(x), 0)
#define barrier()		__asm__ __volatile__("" ::: "memory")

#ifndef typeof
#define typeof(x)		__typeof__(x)
#endif

/* The type of @x with qualifiers dropped (controlling expressions of
 * _Generic undergo lvalue conversion). */
#define __shim_unqual_cases(t)	unsigned t: (unsigned t)0, signed t: (signed t)0
#define __unqual_scalar_typeof(x) __typeof__(_Generic((x),		\
		char: (char)0,						\
		__shim_unqual_cases(char),				\
		__shim_unqual_cases(short),				\
		__shim_unqual_cases(int),				\
		__shim_unqual_cases(long),				\
		__shim_unqual_cases(long long),				\
		_Bool: (_Bool)0,					\
		default: (x)))

#define READ_ONCE(x) ({							\
	__unqual_scalar_typeof(x) __ro_v =				\
		__atomic_load_n(&(x), __ATOMIC_RELAXED);		\
	__ro_v;								\
})

#define WRITE_ONCE(x, val) do {						\
	__atomic_store_n(&(x), (val), __ATOMIC_RELAXED);		\
} while (0)

#define data_race(expr)		(expr)

#define __stringify_1(x...)	#x
#define __stringify(x...)	__stringify_1(x)
#define ___PASTE(a, b)		a##b
#define __PASTE(a, b)		___PASTE(a, b)
#define __UNIQUE_ID(prefix)	__PASTE(__PASTE(__UNIQUE_ID_, prefix), __COUNTER__)

#define __same_type(a, b)	__builtin_types_compatible_p(typeof(a), typeof(b))
#define __must_be_array(a)	(0 * (int)sizeof(char[1 - 2 * __same_type((a), &(a)[0])]))

#include <asm/barrier.h>

#endif /* _SHIM_LINUX_COMPILER_H */
