// SPDX-License-Identifier: GPL-2.0
/*
 * The kapi path: the in-kernel API's calls (kmod/core/direct.c) on a pool
 * file in this process, through the embedded libpmidx's hooks
 * (libpmidx/src/backend_file.c). The index is held for the run, as a
 * kernel client's pmidx_index_open() holds it; each operation is one
 * call into the engine on the thread's own buffers: no command, no copy,
 * no per-call pin. What the kernel path measures in a guest, natively and
 * with every workload and key distribution; and how the papers' drivers
 * call their trees, so the engines compare with them here.
 *
 * The pool file is set up and opened with libpmidx as on the inproc path
 * (its pmem counters, --prefault and --volatile-baseline apply).
 */
#include <errno.h>
#include <stdlib.h>

#include "bench.h"

static int kapi_open(struct bench_run *run)
{
	struct pmidx_embedded_direct *d;
	int ret;

	ret = bench_open_index(run);
	if (ret)
		return ret;
	ret = pmidx_embedded_direct_open(run->pool, run->cfg->index, &d);
	if (ret) {
		bench_close_index(run);
		return ret;
	}
	run->priv = d;
	return 0;
}

static void kapi_close(struct bench_run *run)
{
	pmidx_embedded_direct_close(run->priv);
	run->priv = NULL;
	bench_close_index(run);
}

static int kapi_op(struct bench_thread *t, const struct bench_op *op,
		   struct op_buf *b, uint64_t stamp)
{
	const struct bench_cfg *c = t->run->cfg;
	struct pmidx_embedded_direct *d = t->run->priv;
	uint32_t len;
	int ret;

	bench_key(c, op->key, b->key);
	switch (op->kind) {
	case OP_READ:
		len = b->out_len;
		return pmidx_embedded_direct_get(d, b->key, c->key_size, b->out,
						 &len);
	case OP_INSERT:
	case OP_UPDATE:
		bench_value(c, stamp, b->val);
		return pmidx_embedded_direct_put(d, b->key, c->key_size, b->val,
						 c->value_size,
						 op->kind == OP_INSERT ?
						 PMIDX_PUT_INSERT : 0);
	case OP_DELETE:
		return pmidx_embedded_direct_del(d, b->key, c->key_size);
	case OP_SCAN:
		ret = pmidx_embedded_direct_scan(d, b->key, c->key_size,
						 op->scan_len, b->out,
						 b->out_len);
		return ret < 0 ? ret : 0;
	}
	return -EINVAL;
}

static void kapi_thread(struct bench_thread *t)
{
	struct op_buf b;

	t->err = op_buf_alloc(&b, t->run->cfg);
	if (t->err)
		return;
	bench_singles(t, &b, kapi_op);
	op_buf_free(&b);
}

const struct bench_path_ops bench_path_kapi = {
	.name	= "kapi",
	.open	= kapi_open,
	.close	= kapi_close,
	.thread	= kapi_thread,
	.has_pct = true,
};
