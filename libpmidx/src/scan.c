// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Scan iterator over the SCAN op's resume cursor. Each batch is one
 * SCAN command into the iterator's buffer; the next batch starts after
 * the last key of the previous one (PMIDX_SCAN_AFTER), so no key is seen
 * twice or skipped. When not even one record fits, the kernel answers
 * -ENOSPC with the size needed and the buffer grows to it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define SCAN_BUF_INIT	(64U << 10)
#define SCAN_BATCH_MAX	4096U		/* records per SCAN command */

struct pmidx_scan {
	struct pmidx_index *idx;
	uint8_t *buf;
	uint32_t cap;		/* buffer size */
	uint32_t used, off;	/* bytes of the current batch, parsed so far */
	uint32_t nrec, seen;	/* records in the batch, returned so far */
	uint64_t left;		/* records the caller still wants */
	bool more;		/* the kernel has more after this batch */
	uint16_t flags;		/* SCAN flags of the next batch */
	int err;		/* sticky error */
	struct pmidx_kv last;	/* last record returned (points into buf) */
	uint8_t cur[PMIDX_KEY_MAX];	/* start key of the next batch */
	uint32_t cur_len;
	uint8_t end[PMIDX_KEY_MAX];
	uint32_t end_len;
};

int pmidx_scan_open(struct pmidx_index *idx, const void *start,
		    size_t start_len, const void *end, size_t end_len,
		    uint64_t limit, unsigned int flags, struct pmidx_scan **scanp)
{
	struct pmidx_scan *s;

	*scanp = NULL;
	if (flags & ~PMIDX_SCAN_AFTER)
		return -EINVAL;
	if ((flags & PMIDX_SCAN_AFTER) && !start_len)
		return -EINVAL;
	if (start_len > PMIDX_KEY_MAX || end_len > PMIDX_KEY_MAX)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->cap = SCAN_BUF_INIT;
	s->buf = malloc(s->cap);
	if (!s->buf) {
		free(s);
		return -ENOMEM;
	}
	s->idx = idx;
	s->left = limit ? limit : UINT64_MAX;
	s->more = true;		/* nothing fetched yet */
	s->flags = flags;
	if (start_len)
		memcpy(s->cur, start, start_len);
	s->cur_len = start_len;
	if (end_len)
		memcpy(s->end, end, end_len);
	s->end_len = end_len;
	*scanp = s;
	return 0;
}

static int grow(struct pmidx_scan *s, uint32_t need)
{
	uint8_t *p;

	need = (need + 4095) & ~4095U;
	p = realloc(s->buf, need);
	if (!p)
		return -ENOMEM;
	s->buf = p;
	s->cap = need;
	return 0;
}

/* The next batch, after the last key returned. */
static int fetch(struct pmidx_scan *s)
{
	struct pmidx_cmd c;
	int ret;

	if (s->last.key) {
		memcpy(s->cur, s->last.key, s->last.key_len);
		s->cur_len = s->last.key_len;
		s->flags |= PMIDX_SCAN_AFTER;
		s->last.key = NULL;
	}
	for (;;) {
		memset(&c, 0, sizeof(c));
		c.op = PMIDX_OP_SCAN;
		c.index = s->idx->id;
		c.flags = s->flags;
		c.key = s->cur_len ? pmidx_ptr(s->cur) : 0;
		c.key_len = s->cur_len;
		c.end_key = s->end_len ? pmidx_ptr(s->end) : 0;
		c.end_key_len = s->end_len;
		c.count = s->left < SCAN_BATCH_MAX ? s->left : SCAN_BATCH_MAX;
		c.val = pmidx_ptr(s->buf);
		c.val_len = s->cap;
		ret = pmidx_cmd_run(s->idx->pool, &c);
		if (ret != -ENOSPC)
			break;
		/* not even one record fits: the kernel says how much would */
		if (c.val_len <= s->cap)
			return -EPROTO;
		ret = grow(s, c.val_len);
		if (ret)
			return ret;
	}
	if (ret)
		return ret;
	if (c.val_len > s->cap || (c.flags & PMIDX_SCAN_MORE && !c.count))
		return -EPROTO;
	s->used = c.val_len;
	s->off = 0;
	s->nrec = c.count;
	s->seen = 0;
	s->more = c.flags & PMIDX_SCAN_MORE;
	return 0;
}

int pmidx_scan_next(struct pmidx_scan *s, struct pmidx_kv *kv)
{
	int ret;

	if (s->err)
		return s->err;
	while (s->seen == s->nrec) {
		if (s->off != s->used) {
			ret = -EPROTO;	/* bytes beyond the records counted */
			goto fail;
		}
		if (!s->more || !s->left)
			return 0;
		ret = fetch(s);
		if (ret)
			goto fail;
	}
	ret = pmidx_rec_next(s->buf, s->used, &s->off, kv);
	if (ret <= 0) {
		ret = ret ? ret : -EPROTO;	/* fewer records than counted */
		goto fail;
	}
	s->seen++;
	s->left--;
	s->last = *kv;
	return 1;
fail:
	s->err = ret;
	return ret;
}

void pmidx_scan_close(struct pmidx_scan *s)
{
	if (!s)
		return;
	free(s->buf);
	free(s);
}
