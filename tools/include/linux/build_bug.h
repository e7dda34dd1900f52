/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Userspace shim: compile-time assertions. Stricter than the kernel's:
 * the condition must be an integer constant expression.
 */
#ifndef _SHIM_LINUX_BUILD_BUG_H
#define _SHIM_LINUX_BUILD_BUG_H

#include <linux/compiler.h>

#define BUILD_BUG_ON_MSG(cond, msg) \
	do { _Static_assert(!(cond), msg); } while (0)
#define BUILD_BUG_ON(cond) \
	BUILD_BUG_ON_MSG(cond, "BUILD_BUG_ON failed: " #cond)
#define BUILD_BUG_ON_ZERO(e)	((int)(sizeof(struct { int:(-!!(e)); })))
#define BUILD_BUG()		BUILD_BUG_ON(1)

#ifndef static_assert
#define static_assert(expr, ...) __static_assert(expr, ##__VA_ARGS__, #expr)
#define __static_assert(expr, msg, ...) _Static_assert(expr, msg)
#endif

#endif
