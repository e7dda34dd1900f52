// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * SCAN output records: struct pmidx_rec { key_len, val_len } followed by
 * the key and the value, the whole padded to 8 bytes. The buffer comes
 * from the kernel, but it is parsed as untrusted anyway: a record that
 * runs past the bytes used or breaks the key/value limits is -EPROTO.
 */
#include <errno.h>
#include <string.h>

#include "internal.h"

uint32_t pmidx_rec_size(uint32_t key_len, uint32_t val_len)
{
	uint64_t n = sizeof(struct pmidx_rec) + (uint64_t)key_len + val_len;

	n = (n + 7) & ~7ULL;
	return n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}

int pmidx_rec_next(const void *buf, uint32_t used, uint32_t *off,
		   struct pmidx_kv *kv)
{
	const uint8_t *p = (const uint8_t *)buf + *off;
	struct pmidx_rec rec;
	uint32_t size;

	if (*off >= used)
		return 0;
	if (*off & 7 || used - *off < sizeof(rec))
		return -EPROTO;
	memcpy(&rec, p, sizeof(rec));
	if (!rec.key_len || rec.key_len > PMIDX_KEY_MAX ||
	    rec.val_len > PMIDX_VALUE_MAX)
		return -EPROTO;
	size = pmidx_rec_size(rec.key_len, rec.val_len);
	if (size > used - *off)
		return -EPROTO;
	kv->key = p + sizeof(rec);
	kv->key_len = rec.key_len;
	kv->val = p + sizeof(rec) + rec.key_len;
	kv->val_len = rec.val_len;
	*off += size;
	return 1;
}

int pmidx_rec_parse(const void *buf, size_t used, size_t *off,
		    struct pmidx_kv *kv)
{
	uint32_t o;
	int ret;

	if (used > UINT32_MAX || *off > used)
		return -EPROTO;
	o = *off;
	ret = pmidx_rec_next(buf, used, &o, kv);
	if (ret > 0)
		*off = o;
	return ret;
}
