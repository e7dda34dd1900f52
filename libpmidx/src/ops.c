// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Point operations and the checker: each one builds a struct pmidx_cmd
 * on the caller's stack and hands it to the backend. Limits are the
 * kernel's to enforce; only what would not fit the ABI's u32 lengths is
 * refused here.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static int key_cmd(struct pmidx_cmd *c, struct pmidx_index *idx, uint8_t op,
		   const void *key, size_t key_len)
{
	memset(c, 0, sizeof(*c));
	if (key_len > UINT32_MAX)
		return -EINVAL;
	c->op = op;
	c->index = idx->id;
	c->key = pmidx_ptr(key);
	c->key_len = key_len;
	return 0;
}

int pmidx_get(struct pmidx_index *idx, const void *key, size_t key_len,
	      void *val, size_t *val_len)
{
	struct pmidx_cmd c;
	int ret;

	ret = key_cmd(&c, idx, PMIDX_OP_GET, key, key_len);
	if (ret)
		return ret;
	c.val = pmidx_ptr(val);
	c.val_len = *val_len > UINT32_MAX ? UINT32_MAX : *val_len;
	ret = pmidx_cmd_run(idx->pool, &c);
	if (!ret || ret == -ENOSPC)
		*val_len = c.val_len;
	return ret;
}

int pmidx_get_alloc(struct pmidx_index *idx, const void *key, size_t key_len,
		    void **valp, size_t *val_len)
{
	size_t cap = 256, len;
	void *val = NULL, *p;
	int ret, tries;

	/* the value may grow between the two calls: retry a few times */
	for (tries = 0; tries < 8; tries++) {
		p = realloc(val, cap ? cap : 1);
		if (!p) {
			ret = -ENOMEM;
			break;
		}
		val = p;
		len = cap;
		ret = pmidx_get(idx, key, key_len, val, &len);
		if (ret != -ENOSPC)
			break;
		cap = len;
	}
	if (ret) {
		free(val);
		return ret == -ENOSPC ? -EAGAIN : ret;
	}
	*valp = val;
	*val_len = len;
	return 0;
}

int pmidx_put(struct pmidx_index *idx, const void *key, size_t key_len,
	      const void *val, size_t val_len, unsigned int flags)
{
	struct pmidx_cmd c;
	int ret;

	ret = key_cmd(&c, idx, PMIDX_OP_PUT, key, key_len);
	if (ret)
		return ret;
	if (val_len > UINT32_MAX)
		return -E2BIG;
	if (flags > UINT16_MAX)
		return -EINVAL;
	c.val = pmidx_ptr(val);
	c.val_len = val_len;
	c.flags = flags;
	return pmidx_cmd_run(idx->pool, &c);
}

int pmidx_del(struct pmidx_index *idx, const void *key, size_t key_len)
{
	struct pmidx_cmd c;
	int ret;

	ret = key_cmd(&c, idx, PMIDX_OP_DEL, key, key_len);
	if (ret)
		return ret;
	return pmidx_cmd_run(idx->pool, &c);
}

int pmidx_check(struct pmidx_index *idx, uint64_t *keys)
{
	struct pmidx_cmd c;
	int ret;

	key_cmd(&c, idx, PMIDX_OP_CHECK, NULL, 0);
	ret = pmidx_cmd_run(idx->pool, &c);
	if (keys)
		*keys = c.result;
	return ret;
}
