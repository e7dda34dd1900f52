// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Key helpers. Keys compare by memcmp, shorter first on a common prefix;
 * u64 keys are stored big-endian so that this order is numeric order.
 */
#include <errno.h>
#include <string.h>

#include "internal.h"

void pmidx_key_from_u64(uint64_t v, void *key)
{
	uint8_t *k = key;
	int i;

	for (i = PMIDX_U64_KEY_LEN - 1; i >= 0; i--) {
		k[i] = v & 0xff;
		v >>= 8;
	}
}

int pmidx_key_to_u64(const void *key, size_t key_len, uint64_t *v)
{
	const uint8_t *k = key;
	uint64_t x = 0;
	int i;

	if (key_len != PMIDX_U64_KEY_LEN)
		return -EINVAL;
	for (i = 0; i < PMIDX_U64_KEY_LEN; i++)
		x = x << 8 | k[i];
	*v = x;
	return 0;
}

int pmidx_key_cmp(const void *a, size_t a_len, const void *b, size_t b_len)
{
	int c = memcmp(a, b, a_len < b_len ? a_len : b_len);

	if (c)
		return c;
	return a_len < b_len ? -1 : a_len > b_len;
}
