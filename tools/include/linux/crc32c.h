/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _SHIM_LINUX_CRC32C_H
#define _SHIM_LINUX_CRC32C_H

#include <linux/crc32.h>

static inline u32 crc32c(u32 crc, const void *address, unsigned int length)
{
	return __crc32c_le(crc, address, length);
}

#endif
