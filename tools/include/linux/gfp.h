/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _SHIM_LINUX_GFP_H
#define _SHIM_LINUX_GFP_H

#include <linux/types.h>

#define __GFP_HIGH		0x20u
#define __GFP_IO		0x40u
#define __GFP_FS		0x80u
#define __GFP_ZERO		0x100u
#define __GFP_NOWARN		0x200u
#define __GFP_RETRY_MAYFAIL	0x400u
#define __GFP_NOFAIL		0x800u
#define __GFP_NORETRY		0x1000u
#define __GFP_DIRECT_RECLAIM	0x2000u
#define __GFP_KSWAPD_RECLAIM	0x4000u
#define __GFP_ACCOUNT		0x8000u
#define __GFP_RECLAIM		(__GFP_DIRECT_RECLAIM | __GFP_KSWAPD_RECLAIM)

#define GFP_ATOMIC	(__GFP_HIGH | __GFP_KSWAPD_RECLAIM)
#define GFP_NOWAIT	(__GFP_KSWAPD_RECLAIM)
#define GFP_NOIO	(__GFP_RECLAIM)
#define GFP_NOFS	(__GFP_RECLAIM | __GFP_IO)
#define GFP_KERNEL	(__GFP_RECLAIM | __GFP_IO | __GFP_FS)
#define GFP_KERNEL_ACCOUNT (GFP_KERNEL | __GFP_ACCOUNT)
#define GFP_USER	GFP_KERNEL

static inline bool gfpflags_allow_blocking(const gfp_t gfp_flags)
{
	return !!(gfp_flags & __GFP_DIRECT_RECLAIM);
}

#endif
