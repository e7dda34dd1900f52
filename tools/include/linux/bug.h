/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Userspace shim: WARN and BUG.
 *
 * Every WARN whose condition holds is counted (shim_warn_count()) and
 * reported on stderr (the _ONCE variants report once per site, as in the
 * kernel, but still count every hit). Tests run with WARNs fatal: the
 * process aborts, which is what a WARN would mean to the VM test harness.
 * A test that provokes a WARN on purpose turns that off around it with
 * shim_set_warn_fatal(false). BUG() always aborts.
 */
#ifndef _SHIM_LINUX_BUG_H
#define _SHIM_LINUX_BUG_H

#include <linux/types.h>
#include <linux/compiler.h>
#include <linux/build_bug.h>

void shim_warn(const char *file, int line, const char *func, bool print,
	       const char *fmt, ...) __printf(5, 6);
void __noreturn shim_bug(const char *file, int line, const char *func,
			 const char *cond);

#define __WARN_printf(cond, once, fmt...) ({				\
	static bool __warned;						\
	bool __ret_warn = !!(cond);					\
	if (unlikely(__ret_warn)) {					\
		bool __print = !(once) ||				\
			!__atomic_exchange_n(&__warned, true,		\
					     __ATOMIC_RELAXED);		\
		shim_warn(__FILE__, __LINE__, __func__, __print, fmt);	\
	}								\
	unlikely(__ret_warn);						\
})

#define WARN_ON(cond)		__WARN_printf(cond, 0, "%s", #cond)
#define WARN_ON_ONCE(cond)	__WARN_printf(cond, 1, "%s", #cond)
#define WARN(cond, fmt...)	__WARN_printf(cond, 0, fmt)
#define WARN_ONCE(cond, fmt...)	__WARN_printf(cond, 1, fmt)

#define BUG()			shim_bug(__FILE__, __LINE__, __func__, "BUG()")
#define BUG_ON(cond) do {						\
	if (unlikely(cond))						\
		shim_bug(__FILE__, __LINE__, __func__, #cond);		\
} while (0)

#define VM_BUG_ON(cond)		BUG_ON(cond)
#define VM_WARN_ON(cond)	WARN_ON(cond)
#define VM_WARN_ON_ONCE(cond)	WARN_ON_ONCE(cond)

#endif
