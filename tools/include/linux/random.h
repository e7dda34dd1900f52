/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Userspace shim: get_random_*() read getrandom(2), or, after
 * shim_random_seed(), a deterministic stream (so a test run, and the
 * UUIDs it formats, can be replayed from its seed).
 */
#ifndef _SHIM_LINUX_RANDOM_H
#define _SHIM_LINUX_RANDOM_H

#include <linux/types.h>

void get_random_bytes(void *buf, size_t len);
u32 get_random_u32(void);
u64 get_random_u64(void);

static inline u32 get_random_u32_below(u32 ceil)
{
	return ceil ? (u32)(((u64)get_random_u32() * ceil) >> 32) : 0;
}

static inline unsigned long get_random_long(void)
{
	return (unsigned long)get_random_u64();
}

/* RFC 4122 version 4 UUID, as the kernel's lib/uuid.c makes it. */
static inline void generate_random_uuid(unsigned char uuid[16])
{
	get_random_bytes(uuid, 16);
	uuid[6] = (uuid[6] & 0x0f) | 0x40;
	uuid[8] = (uuid[8] & 0x3f) | 0x80;
}

#endif
