// SPDX-License-Identifier: GPL-2.0
/*
 * The synchronous paths, ioctl (/dev/pmidxN) and inproc (a pool file in
 * this process): libpmidx's sync API, one call per operation and its
 * latency around the call; scans go through the scan iterator. With
 * --batch B > 1, B operations go in one pmidx_batch() call (one BATCH
 * command) and each of them gets the call's latency.
 *
 * Also here: what every path shares, the buffers of an operation and an
 * operation as a struct pmidx_req.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define SCAN_OUT_CAP	(1U << 20)	/* the kernel's bounce buffer cap */

static bool scans(enum bench_wl wl)
{
	return wl == WL_E || wl == WL_SCAN;
}

size_t bench_out_len(const struct bench_cfg *c)
{
	size_t rec = (8 + c->key_size + c->value_size + 7) & ~7UL;
	size_t scan = rec * BENCH_SCAN_MAX;
	bool any = scans(c->wl);
	unsigned int i;

	for (i = 0; i < c->nphases; i++)
		any |= scans(c->phases[i]);
	if (scan > SCAN_OUT_CAP)
		scan = SCAN_OUT_CAP > rec ? SCAN_OUT_CAP : rec;
	if (!any)
		scan = 0;
	return scan > c->value_size ? scan : c->value_size ? c->value_size : 1;
}

int op_buf_alloc(struct op_buf *b, const struct bench_cfg *c)
{
	b->out_len = bench_out_len(c);
	b->key = malloc(c->key_size);
	b->val = malloc(c->value_size ? c->value_size : 1);
	b->out = malloc(b->out_len);
	if (!b->key || !b->val || !b->out) {
		op_buf_free(b);
		return -ENOMEM;
	}
	memset(b->val, 0x5a, c->value_size);
	return 0;
}

void op_buf_free(struct op_buf *b)
{
	free(b->key);
	free(b->val);
	free(b->out);
	memset(b, 0, sizeof(*b));
}

void bench_req(const struct bench_run *run, const struct bench_op *op,
	       struct op_buf *b, uint64_t stamp, struct pmidx_req *q)
{
	const struct bench_cfg *c = run->cfg;

	bench_key(c, op->key, b->key);
	*q = (struct pmidx_req){ .idx = run->idx, .key = b->key,
				 .key_len = c->key_size };
	switch (op->kind) {
	case OP_READ:
		q->type = PMIDX_REQ_GET;
		q->val = b->out;
		q->val_len = b->out_len;
		break;
	case OP_INSERT:
	case OP_UPDATE:
		bench_value(c, stamp, b->val);
		q->type = PMIDX_REQ_PUT;
		q->flags = op->kind == OP_INSERT ? PMIDX_PUT_INSERT : 0;
		q->val = b->val;
		q->val_len = c->value_size;
		break;
	case OP_DELETE:
		q->type = PMIDX_REQ_DEL;
		break;
	case OP_SCAN:
		q->type = PMIDX_REQ_SCAN;
		q->count = op->scan_len;
		q->val = b->out;
		q->val_len = b->out_len;
		break;
	}
}

/* ---- one call per operation ---------------------------------------------- */

static int sync_scan(struct pmidx_index *idx, const struct op_buf *b,
		     size_t key_len, uint32_t n)
{
	struct pmidx_scan *s;
	struct pmidx_kv kv;
	int ret;

	ret = pmidx_scan_open(idx, b->key, key_len, NULL, 0, n, 0, &s);
	if (ret)
		return ret;
	while ((ret = pmidx_scan_next(s, &kv)) > 0)
		;
	pmidx_scan_close(s);
	return ret;
}

static int sync_op(struct bench_thread *t, const struct bench_op *op,
		   struct op_buf *b, uint64_t stamp)
{
	struct pmidx_req q;
	size_t len;

	bench_req(t->run, op, b, stamp, &q);
	switch (q.type) {
	case PMIDX_REQ_GET:
		len = q.val_len;
		return pmidx_get(q.idx, q.key, q.key_len, q.val, &len);
	case PMIDX_REQ_PUT:
		return pmidx_put(q.idx, q.key, q.key_len, q.val, q.val_len,
				 q.flags);
	case PMIDX_REQ_DEL:
		return pmidx_del(q.idx, q.key, q.key_len);
	default:
		return sync_scan(q.idx, b, q.key_len, q.count);
	}
}

/* ---- pmidx_batch() of --batch operations ------------------------------------ */

struct sync_batch {
	struct op_buf		*bufs;
	struct pmidx_req	*reqs;
	unsigned int		n;
};

static void sync_batch_free(struct sync_batch *sb)
{
	unsigned int i;

	for (i = 0; sb->bufs && i < sb->n; i++)
		op_buf_free(&sb->bufs[i]);
	free(sb->bufs);
	free(sb->reqs);
}

static int sync_batch_alloc(struct sync_batch *sb, const struct bench_cfg *c)
{
	unsigned int i;
	int ret = 0;

	sb->n = c->batch;
	sb->bufs = calloc(sb->n, sizeof(*sb->bufs));
	sb->reqs = calloc(sb->n, sizeof(*sb->reqs));
	if (!sb->bufs || !sb->reqs)
		ret = -ENOMEM;
	for (i = 0; !ret && i < sb->n; i++)
		ret = op_buf_alloc(&sb->bufs[i], c);
	return ret;
}

static void sync_batches(struct bench_thread *t)
{
	struct sync_batch sb = { 0 };
	struct bench_op op;
	uint64_t i = 0, t0, failed;
	unsigned int j, n;
	int ret;

	t->err = sync_batch_alloc(&sb, t->run->cfg);
	while (!t->err && i < t->ops) {
		n = t->ops - i < sb.n ? t->ops - i : sb.n;
		for (j = 0; j < n; j++, i++) {
			wl_next(&t->gen, t->run->wl, &op);
			bench_req(t->run, &op, &sb.bufs[j], i, &sb.reqs[j]);
		}
		t0 = bench_now_ns();
		ret = pmidx_batch(t->run->pool, sb.reqs, n);
		t0 = bench_now_ns() - t0;
		for (j = 0, failed = 0; ret >= 0 && j < n; j++) {
			failed += sb.reqs[j].res != 0;
			if (!bench_err_expected(sb.reqs[j].res))
				ret = sb.reqs[j].res;
		}
		if (ret < 0) {
			t->err = ret;
			break;
		}
		bench_done(t, t0, n, failed);
	}
	sync_batch_free(&sb);
}

static void sync_thread(struct bench_thread *t)
{
	struct op_buf b;

	if (t->run->cfg->batch > 1) {
		sync_batches(t);
		return;
	}
	t->err = op_buf_alloc(&b, t->run->cfg);
	if (t->err)
		return;
	bench_singles(t, &b, sync_op);
	op_buf_free(&b);
}

int bench_open_index(struct bench_run *run)
{
	int ret;

	ret = pmidx_pool_open(run->cfg->target, 0, &run->pool);
	if (ret)
		return ret;
	ret = pmidx_index_open(run->pool, run->cfg->index, &run->idx);
	if (ret) {
		pmidx_pool_close(run->pool);
		run->pool = NULL;
	}
	return ret;
}

void bench_close_index(struct bench_run *run)
{
	pmidx_index_close(run->idx);
	pmidx_pool_close(run->pool);
	run->idx = NULL;
	run->pool = NULL;
}

const struct bench_path_ops bench_path_sync = {
	.name	= "sync",
	.open	= bench_open_index,
	.close	= bench_close_index,
	.thread	= sync_thread,
	.has_pct = true,
};
