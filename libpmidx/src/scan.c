// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Scan iterator over the SCAN op's resume cursor. Each batch is one
 * SCAN command into the iterator's buffer; the next batch starts after
 * the last key of the previous one (PMIDX_SCAN_AFTER), so no key is seen
 * twice or skipped. When not even one record fits, the kernel answers
 * -ENOSPC with the size needed and the buffer grows to it.
 *
 * The buffer is sized to the request: SCAN_REC_GUESS bytes per record
 * the caller asked for (SCAN_BUF_MIN..SCAN_BUF_INIT), all of SCAN_BUF_INIT
 * without a limit, and doubled (up to SCAN_BUF_INIT) for the next batch
 * when a batch stopped short for space. A closed iterator, buffer and
 * all, stays cached in its index handle (one per handle, taken and given
 * back with atomic exchanges) for the next pmidx_scan_open(): scans in a
 * loop allocate nothing, and the heap is not trimmed and grown again
 * every other scan.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define SCAN_BUF_INIT	(64U << 10)	/* without a limit; growth cap */
#define SCAN_BUF_MIN	(4U << 10)
#define SCAN_REC_GUESS	64U		/* bytes per record, for sizing */
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
	bool shortfall;		/* the last batch stopped short for space */
	struct pmidx_kv last;	/* last record returned (points into buf) */
	uint8_t cur[PMIDX_KEY_MAX];	/* start key of the next batch */
	uint32_t cur_len;
	uint8_t end[PMIDX_KEY_MAX];
	uint32_t end_len;
};

/* The buffer a scan of @limit records (0: all) starts with. */
static uint32_t scan_buf_size(uint64_t limit)
{
	uint64_t want;

	if (!limit || limit >= SCAN_BUF_INIT / SCAN_REC_GUESS)
		return SCAN_BUF_INIT;
	want = (limit * SCAN_REC_GUESS + 4095) & ~4095ULL;
	return want < SCAN_BUF_MIN ? SCAN_BUF_MIN : (uint32_t)want;
}

/* A buffer of at least @need bytes whose contents do not matter. */
static int scan_buf_fresh(struct pmidx_scan *s, uint32_t need)
{
	uint8_t *p;

	if (s->buf && s->cap >= need)
		return 0;
	p = malloc(need);
	if (!p)
		return -ENOMEM;
	free(s->buf);
	s->buf = p;
	s->cap = need;
	return 0;
}

static void scan_free(struct pmidx_scan *s)
{
	free(s->buf);
	free(s);
}

/* at pmidx_index_close(): the iterator cached in the handle */
void pmidx_scan_cache_free(struct pmidx_index *idx)
{
	struct pmidx_scan *s = __atomic_exchange_n(&idx->scan_cache, NULL,
						   __ATOMIC_ACQUIRE);

	if (s)
		scan_free(s);
}

int pmidx_scan_open(struct pmidx_index *idx, const void *start,
		    size_t start_len, const void *end, size_t end_len,
		    uint64_t limit, unsigned int flags, struct pmidx_scan **scanp)
{
	struct pmidx_scan *s;
	uint8_t *buf = NULL;
	uint32_t cap = 0;

	*scanp = NULL;
	if (flags & ~PMIDX_SCAN_AFTER)
		return -EINVAL;
	if ((flags & PMIDX_SCAN_AFTER) && !start_len)
		return -EINVAL;
	if (start_len > PMIDX_KEY_MAX || end_len > PMIDX_KEY_MAX)
		return -EINVAL;
	s = __atomic_exchange_n(&idx->scan_cache, NULL, __ATOMIC_ACQUIRE);
	if (s) {
		buf = s->buf;
		cap = s->cap;
		/* only what a fresh one would have: the rest is set below */
		memset(s, 0, offsetof(struct pmidx_scan, cur));
		s->buf = buf;
		s->cap = cap;
	} else {
		s = calloc(1, sizeof(*s));
		if (!s)
			return -ENOMEM;
	}
	if (scan_buf_fresh(s, scan_buf_size(limit))) {
		scan_free(s);
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
	/* nothing in the buffer is needed any more: it may be replaced */
	if (s->shortfall && s->cap < SCAN_BUF_INIT) {
		ret = scan_buf_fresh(s, s->cap * 2 < SCAN_BUF_INIT ?
					s->cap * 2 : SCAN_BUF_INIT);
		if (ret)
			return ret;
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
	/* the SCAN ended for space, not for the count asked */
	s->shortfall = s->more && c.count < (s->left < SCAN_BATCH_MAX ?
					     s->left : SCAN_BATCH_MAX);
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
	struct pmidx_scan *none = NULL;

	if (!s)
		return;
	/* kept in the handle for the next scan, unless one is there */
	if (!__atomic_compare_exchange_n(&s->idx->scan_cache, &none, s, false,
					 __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		scan_free(s);
}
