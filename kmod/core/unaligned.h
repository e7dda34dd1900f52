/* SPDX-License-Identifier: GPL-2.0 */
/*
 * get_unaligned_*() and put_unaligned_*(): <linux/unaligned.h> since 6.12,
 * <asm/unaligned.h> before (Debian's 6.1). One place for the switch, so
 * that no engine spells it again (compat.h holds the heavier differences).
 */
#ifndef _PMIDX_UNALIGNED_H
#define _PMIDX_UNALIGNED_H

#include <linux/version.h>
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 12, 0)
#include <linux/unaligned.h>
#else
#include <asm/unaligned.h>
#endif

#endif /* _PMIDX_UNALIGNED_H */
