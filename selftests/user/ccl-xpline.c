// SPDX-License-Identifier: GPL-2.0
/*
 * ccl-xpline: the ccl engine in-process (userspace build) under the XPLine
 * write-amplification model (tools/testing/xpline.h), as in CCL-BTree's
 * section 2/5.2: warm an index with W random 8-byte keys, then measure N
 * more random inserts (8-byte values), for N_batch 1..5, and for the
 * naive GC. Prints per configuration: 64-byte lines flushed per insert,
 * XPLines written to media per insert, and XBI amplification (media bytes
 * written / 16 user bytes per insert). The GC thread runs as in the
 * kernel (threshold ccl_th_log, default 20 %).
 *
 *   ccl-xpline [W [N]]        (defaults 200000 100000)
 *
 * Build: like selftests/user/ccl-crash.c (the real engines, this main),
 * e.g. make -f tools/testing/user.mk build/user/plain/obj/selftests/user/ccl-xpline.o
 * build/user/plain/libpmidx-user.a, then link the two with -pthread.
 */
#include <stdlib.h>
#include <sys/mman.h>
#include <linux/prandom.h>
#include <shim/shim.h>
#include "xpline.h"
#include "engines/ccl/ccl.h"

#define POOL_SIZE	(1ULL << 30)

static u64 key_seq(u64 *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dULL;
}

static int run(u32 engine, unsigned int nbatch, bool naive, u64 warm, u64 n)
{
	struct xpline_config xc = { .no_chain = false };
	struct xpline_model *m;
	struct pmidx_index *idx;
	struct pmidx_pool *pool;
	struct xpline_stats st;
	const char *why = NULL;
	u64 i, k, s = 12345, gc0;
	void *img;

	img = mmap(NULL, POOL_SIZE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (img == MAP_FAILED)
		return 1;
	ccl_nbatch = nbatch;
	ccl_gc_naive = naive;
	ccl_log_chunk_kb = 4096;
	if (pmidx_pool_format(img, POOL_SIZE, true, &why))
		return 1;
	pool = pmidx_pool_open(img, POOL_SIZE, false, &why);
	if (IS_ERR(pool) ||
	    pmidx_index_create(pool, "x", engine, &idx, &why))
		return 1;
	for (i = 0; i < warm; i++) {
		k = key_seq(&s);
		if (idx->ops->put(idx, (u8 *)&k, 8, (u8 *)&i, 8, 0))
			return 1;
	}
	gc0 = engine == PMIDX_ENGINE_CCL ?
	      atomic64_read(&((struct ccl_tree *)idx->priv)->gc_runs) : 0;
	xc.base = img;
	xc.size = POOL_SIZE;
	m = xpline_new(&xc);
	xpline_attach(m);
	for (i = 0; i < n; i++) {
		k = key_seq(&s);
		if (idx->ops->put(idx, (u8 *)&k, 8, (u8 *)&i, 8, 0))
			return 1;
	}
	xpline_account(m, n, 16 * n);
	xpline_drain(m);
	xpline_get(m, &st);
	xpline_detach(m);
	printf("%s nbatch %u%s: lines/insert %.3f  xplines/insert %.3f  XBI %.2f  CLI %.2f  gc runs %lld\n",
	       engine == PMIDX_ENGINE_CCL ? "ccl" : "utree",
	       nbatch, naive ? " naive-gc" : "", (double)st.lines / n,
	       (double)st.xpline_writes / n,
	       (double)st.media_write_bytes / (16.0 * n),
	       64.0 * st.lines / (16.0 * n),
	       engine == PMIDX_ENGINE_CCL ? (long long)(atomic64_read(
			&((struct ccl_tree *)idx->priv)->gc_runs) - gc0) : 0LL);
	xpline_free(m);
	pmidx_pool_close(pool);
	munmap(img, POOL_SIZE);
	return 0;
}

int main(int argc, char **argv)
{
	u64 warm = argc > 1 ? strtoull(argv[1], NULL, 0) : 200000;
	u64 n = argc > 2 ? strtoull(argv[2], NULL, 0) : 100000;
	unsigned int nb;

	/* the paper's comparison: a per-key persistent list (utree) */
	if (run(PMIDX_ENGINE_UTREE, 2, false, warm, n))
		return 1;
	for (nb = 1; nb <= 5; nb++)
		if (run(PMIDX_ENGINE_CCL, nb, false, warm, n))
			return 1;
	return run(PMIDX_ENGINE_CCL, 2, true, warm, n);
}
