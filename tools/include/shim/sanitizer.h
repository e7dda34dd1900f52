/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Userspace shim: which sanitizer this translation unit is built with.
 * SHIM_TSAN: ThreadSanitizer (gcc says __SANITIZE_THREAD__, clang answers
 * __has_feature(thread_sanitizer)).
 */
#ifndef _SHIM_SANITIZER_H
#define _SHIM_SANITIZER_H

#if defined(__SANITIZE_THREAD__)
#define SHIM_TSAN	1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SHIM_TSAN	1
#endif
#endif

#if defined(__SANITIZE_ADDRESS__)
#define SHIM_ASAN	1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SHIM_ASAN	1
#endif
#endif

/*
 * Objects this thread allocates between the two calls are not reported
 * by LeakSanitizer at exit: for a test that leaks a counted number on
 * purpose (the harness's own check, ut_allow_leaks(), still bounds it).
 */
#ifdef SHIM_ASAN
/* weak: the prefix build's kernel-address mode has no LeakSanitizer */
void __lsan_disable(void) __attribute__((weak));
void __lsan_enable(void) __attribute__((weak));
#define shim_lsan_disable()	do { if (__lsan_disable) __lsan_disable(); } while (0)
#define shim_lsan_enable()	do { if (__lsan_enable) __lsan_enable(); } while (0)
#else
#define shim_lsan_disable()	do { } while (0)
#define shim_lsan_enable()	do { } while (0)
#endif

#endif /* _SHIM_SANITIZER_H */
