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

#endif /* _SHIM_SANITIZER_H */
