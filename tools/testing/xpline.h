/* SPDX-License-Identifier: GPL-2.0 */
/*
 * XPLine write-amplification model (Optane DCPMM, as in CCL-BTree §2).
 *
 * Cache-line flushes (64 B) reach the DIMM's write-combining buffer
 * (XPBuffer, 16 KiB = 64 XPLines of 256 B, LRU). A flushed line whose
 * XPLine is buffered merges into it; otherwise the least recently used
 * XPLine is evicted, which writes 256 bytes to the media (and, if not all
 * four of its lines were written, first reads them: read-modify-write).
 * Whatever is still buffered at the end is drained the same way.
 *
 *   CLI amplification = 64 * lines flushed / user bytes
 *   XBI amplification = media bytes written / user bytes
 *
 * The model installs itself as the pmem backend (<shim/pmem.h>) and, by
 * default, passes every flush and fence on to the previous backend, so it
 * can sit under a real run (pmidx-bench's in-process mode) unchanged.
 * Addresses are taken relative to @base, so XPLine boundaries are those
 * of the pool (the pool is mapped page aligned). Thread safe.
 *
 * Attribution (optional): @classify names the source (0..XPLINE_CLASSES-1)
 * of each flush call, from its pool offset and length; the model counts
 * lines per source and shares each XPLine written to the media among the
 * sources whose line flushes merged into it, in proportion to them (so
 * the per-source media bytes add up to media_write_bytes). It is called
 * under the model's lock, in flush order. Without it, everything is
 * source 0.
 */
#ifndef _PMIDX_XPLINE_H
#define _PMIDX_XPLINE_H

#include <stdio.h>
#include <linux/types.h>

#define XPLINE_CLASSES	8

struct xpline_config {
	const void	*base;		/* only flushes in [base, base + size) */
	u64		size;		/* 0: every flush counts, base 0 */
	unsigned int	buffer_bytes;	/* default 16384 */
	unsigned int	xpline_bytes;	/* default 256 */
	bool		no_chain;	/* do not call the previous backend */
	unsigned int	(*classify)(void *priv, u64 off, size_t len);
	void		*classify_priv;
};

struct xpline_stats {
	u64	flush_calls;		/* arch_wb_cache_pmem()/memcpy_flushcache() */
	u64	lines;			/* 64-byte lines flushed */
	u64	fences;			/* persist fences (sfence) */
	u64	order_fences;		/* ordering-only fences (eADR) */
	u64	hits;			/* lines merged into a buffered XPLine */
	u64	misses;
	u64	xpline_writes;		/* XPLines written to media */
	u64	partial_writes;		/* of which read-modify-write */
	u64	media_write_bytes;
	u64	media_read_bytes;
	u64	ops;			/* as accounted by the workload */
	u64	user_bytes;
	/* per source (@classify): lines flushed, media bytes written */
	u64	cls_lines[XPLINE_CLASSES];
	u64	cls_media_bytes[XPLINE_CLASSES];
};

struct xpline_model;

struct xpline_model *xpline_new(const struct xpline_config *cfg);
void xpline_free(struct xpline_model *m);
void xpline_attach(struct xpline_model *m);	/* start observing */
void xpline_detach(struct xpline_model *m);	/* restore the previous backend */
void xpline_account(struct xpline_model *m, u64 ops, u64 user_bytes);
void xpline_drain(struct xpline_model *m);	/* evict everything buffered */
void xpline_reset(struct xpline_model *m);	/* drop counters and buffer */
void xpline_get(struct xpline_model *m, struct xpline_stats *s);
/* one JSON object (no newline) with the counters and the ratios */
void xpline_json(FILE *f, const char *label, const struct xpline_stats *s);

#endif
