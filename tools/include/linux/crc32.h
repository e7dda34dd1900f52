/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Userspace shim: software CRC-32 (IEEE 802.3, 0xedb88320) and CRC-32C
 * (Castagnoli, 0x82f63b78), bit-reflected, with the kernel's semantics:
 * no pre- or post-inversion, the caller passes the seed (usually ~0) and
 * inverts the result itself.
 */
#ifndef _SHIM_LINUX_CRC32_H
#define _SHIM_LINUX_CRC32_H

#include <linux/types.h>
#include <linux/compiler.h>

u32 __pure crc32_le(u32 crc, unsigned char const *p, size_t len);
u32 __pure __crc32c_le(u32 crc, unsigned char const *p, size_t len);
u32 __pure crc32_be(u32 crc, unsigned char const *p, size_t len);

#define crc32(seed, data, length)  crc32_le(seed, (unsigned char const *)(data), length)

#endif
