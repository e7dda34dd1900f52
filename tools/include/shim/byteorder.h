/* SPDX-License-Identifier: GPL-2.0 */
/* Userspace shim: cpu <-> little/big-endian conversions. */
#ifndef _SHIM_BYTEORDER_H
#define _SHIM_BYTEORDER_H

#include <linux/types.h>

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define __SHIM_LE(bits, x)	((u##bits)(x))
#define __SHIM_BE(bits, x)	((u##bits)__builtin_bswap##bits(x))
#else
#define __SHIM_LE(bits, x)	((u##bits)__builtin_bswap##bits(x))
#define __SHIM_BE(bits, x)	((u##bits)(x))
#endif

#define cpu_to_le16(x)	((__le16)__SHIM_LE(16, (x)))
#define cpu_to_le32(x)	((__le32)__SHIM_LE(32, (x)))
#define cpu_to_le64(x)	((__le64)__SHIM_LE(64, (x)))
#define le16_to_cpu(x)	__SHIM_LE(16, (x))
#define le32_to_cpu(x)	__SHIM_LE(32, (x))
#define le64_to_cpu(x)	__SHIM_LE(64, (x))
#define cpu_to_be16(x)	((__be16)__SHIM_BE(16, (x)))
#define cpu_to_be32(x)	((__be32)__SHIM_BE(32, (x)))
#define cpu_to_be64(x)	((__be64)__SHIM_BE(64, (x)))
#define be16_to_cpu(x)	__SHIM_BE(16, (x))
#define be32_to_cpu(x)	__SHIM_BE(32, (x))
#define be64_to_cpu(x)	__SHIM_BE(64, (x))
#define le16_to_cpup(p)	le16_to_cpu(*(p))
#define le32_to_cpup(p)	le32_to_cpu(*(p))
#define le64_to_cpup(p)	le64_to_cpu(*(p))
#define swab16(x)	((u16)__builtin_bswap16(x))
#define swab32(x)	((u32)__builtin_bswap32(x))
#define swab64(x)	((u64)__builtin_bswap64(x))

static inline void le16_add_cpu(__le16 *var, u16 val)
{
	*var = cpu_to_le16(le16_to_cpu(*var) + val);
}

static inline void le32_add_cpu(__le32 *var, u32 val)
{
	*var = cpu_to_le32(le32_to_cpu(*var) + val);
}

static inline void le64_add_cpu(__le64 *var, u64 val)
{
	*var = cpu_to_le64(le64_to_cpu(*var) + val);
}

#endif
