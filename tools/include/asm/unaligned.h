/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _SHIM_ASM_UNALIGNED_H
#define _SHIM_ASM_UNALIGNED_H

#include <linux/string.h>
#include <linux/types.h>

#define __SHIM_GET_UNALIGNED(bits, conv)				\
static inline u##bits get_unaligned_##conv##bits(const void *p)	\
{ u##bits v; memcpy(&v, p, sizeof(v)); return conv##bits##_to_cpu(v); } \
static inline void put_unaligned_##conv##bits(u##bits v, void *p)	\
{ v = cpu_to_##conv##bits(v); memcpy(p, &v, sizeof(v)); }

__SHIM_GET_UNALIGNED(16, le)
__SHIM_GET_UNALIGNED(32, le)
__SHIM_GET_UNALIGNED(64, le)
__SHIM_GET_UNALIGNED(16, be)
__SHIM_GET_UNALIGNED(32, be)
__SHIM_GET_UNALIGNED(64, be)

#define get_unaligned(p) ({						\
	__typeof__(*(p)) __gu_v;					\
	memcpy(&__gu_v, (p), sizeof(__gu_v));				\
	__gu_v;								\
})
#define put_unaligned(v, p) do {					\
	__typeof__(*(p)) __pu_v = (v);					\
	memcpy((p), &__pu_v, sizeof(__pu_v));				\
} while (0)

#endif
