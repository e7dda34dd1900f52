/* SPDX-License-Identifier: GPL-2.0 */
/* Userspace shim: the poison bytes of <linux/poison.h> that pmidx uses. */
#ifndef _SHIM_LINUX_POISON_H
#define _SHIM_LINUX_POISON_H

#define POISON_INUSE	0x5a	/* for use-uninitialised poisoning */

#endif /* _SHIM_LINUX_POISON_H */
