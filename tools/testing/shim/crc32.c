// SPDX-License-Identifier: GPL-2.0
/*
 * Userspace shim: table-driven, bit-reflected CRC-32 and CRC-32C with the
 * kernel's conventions (no implicit inversion; see <linux/crc32.h>).
 * Slicing-by-8 so that checksumming chunk headers stays cheap in the fuzzer.
 */
#include <pthread.h>
#include <linux/types.h>
#include <linux/crc32.h>

#define CRC32_POLY_LE	0xedb88320U
#define CRC32C_POLY_LE	0x82f63b78U
#define CRC32_POLY_BE	0x04c11db7U

static u32 tab_le[8][256], tab_c[8][256], tab_be[256];
static pthread_once_t tab_once = PTHREAD_ONCE_INIT;

static void make_table(u32 t[8][256], u32 poly)
{
	unsigned int i, j;

	for (i = 0; i < 256; i++) {
		u32 c = i;

		for (j = 0; j < 8; j++)
			c = (c >> 1) ^ ((c & 1) ? poly : 0);
		t[0][i] = c;
	}
	for (i = 0; i < 256; i++)
		for (j = 1; j < 8; j++)
			t[j][i] = (t[j - 1][i] >> 8) ^ t[0][t[j - 1][i] & 0xff];
}

static void make_tables(void)
{
	unsigned int i, j;

	make_table(tab_le, CRC32_POLY_LE);
	make_table(tab_c, CRC32C_POLY_LE);
	for (i = 0; i < 256; i++) {
		u32 c = i << 24;

		for (j = 0; j < 8; j++)
			c = (c << 1) ^ ((c & 0x80000000U) ? CRC32_POLY_BE : 0);
		tab_be[i] = c;
	}
}

static u32 crc_reflected(u32 t[8][256], u32 crc, const unsigned char *p,
			 size_t len)
{
	pthread_once(&tab_once, make_tables);
	while (len && ((uintptr_t)p & 7)) {
		crc = (crc >> 8) ^ t[0][(crc ^ *p++) & 0xff];
		len--;
	}
	while (len >= 8) {
		u32 lo = crc ^ ((u32)p[0] | (u32)p[1] << 8 | (u32)p[2] << 16 |
				(u32)p[3] << 24);
		u32 hi = (u32)p[4] | (u32)p[5] << 8 | (u32)p[6] << 16 |
			 (u32)p[7] << 24;

		crc = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^
		      t[5][(lo >> 16) & 0xff] ^ t[4][lo >> 24] ^
		      t[3][hi & 0xff] ^ t[2][(hi >> 8) & 0xff] ^
		      t[1][(hi >> 16) & 0xff] ^ t[0][hi >> 24];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = (crc >> 8) ^ t[0][(crc ^ *p++) & 0xff];
	return crc;
}

u32 crc32_le(u32 crc, unsigned char const *p, size_t len)
{
	return crc_reflected(tab_le, crc, p, len);
}

u32 __crc32c_le(u32 crc, unsigned char const *p, size_t len)
{
	return crc_reflected(tab_c, crc, p, len);
}

u32 crc32_be(u32 crc, unsigned char const *p, size_t len)
{
	pthread_once(&tab_once, make_tables);
	while (len--)
		crc = (crc << 8) ^ tab_be[(crc >> 24) ^ *p++];
	return crc;
}
