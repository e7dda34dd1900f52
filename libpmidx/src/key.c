// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Key helpers. Keys compare by memcmp, shorter first on a common prefix;
 * u64 keys are stored big-endian so that this order is numeric order.
 */
#include <endian.h>
#include <errno.h>
#include <string.h>

#include "internal.h"

_Static_assert(PMIDX_U64_KEY_LEN == sizeof(uint64_t), "a u64 key is one word");

/* One byte swap and one unaligned store (a byte loop is 50 instructions). */
void pmidx_key_from_u64(uint64_t v, void *key)
{
	uint64_t be = htobe64(v);

	memcpy(key, &be, sizeof(be));
}

int pmidx_key_to_u64(const void *key, size_t key_len, uint64_t *v)
{
	uint64_t be;

	if (key_len != PMIDX_U64_KEY_LEN)
		return -EINVAL;
	memcpy(&be, key, sizeof(be));
	*v = be64toh(be);
	return 0;
}

int pmidx_key_cmp(const void *a, size_t a_len, const void *b, size_t b_len)
{
	int c = memcmp(a, b, a_len < b_len ? a_len : b_len);

	if (c)
		return c;
	return a_len < b_len ? -1 : a_len > b_len;
}
