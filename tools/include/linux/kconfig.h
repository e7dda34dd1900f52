/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Userspace shim: IS_ENABLED(), which the kernel's build includes in
 * every file (here through <linux/compiler.h>). The ASan build stands for
 * a KASAN kernel: CONFIG_KASAN is set there.
 */
#ifndef _SHIM_LINUX_KCONFIG_H
#define _SHIM_LINUX_KCONFIG_H

#if defined(__SANITIZE_ADDRESS__) && !defined(CONFIG_KASAN)
#define CONFIG_KASAN 1
#endif

/* 1 if @option is defined to 1, else 0 (the kernel's trick, no =m here) */
#define __ARG_PLACEHOLDER_1 0,
#define __take_second_arg(__ignored, val, ...) val
#define __is_defined(x)			___is_defined(x)
#define ___is_defined(val)		____is_defined(__ARG_PLACEHOLDER_##val)
#define ____is_defined(arg1_or_junk)	__take_second_arg(arg1_or_junk 1, 0)
#define IS_ENABLED(option)		__is_defined(option)

#endif /* _SHIM_LINUX_KCONFIG_H */
