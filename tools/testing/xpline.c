// SPDX-License-Identifier: GPL-2.0
/* XPLine write-amplification model: see xpline.h. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <shim/pmem.h>
#include "xpline.h"

#define LINE	64

struct xp_entry {
	u64	tag;		/* XPLine number */
	u64	stamp;		/* LRU clock */
	u32	mask;		/* lines written */
	u32	cls[XPLINE_CLASSES];	/* line flushes merged, per source */
};

struct xpline_model {
	struct xpline_config		cfg;
	struct shim_pmem_ops		ops;
	const struct shim_pmem_ops	*prev;
	pthread_mutex_t			lock;
	struct xp_entry			*buf;
	unsigned int			nbuf, cap, lines_per_xp;
	u64				clock;
	struct xpline_stats		st;
	unsigned int			cur_cls;	/* of the flush call */
};

/* The XPLine's media bytes, shared by its line flushes' sources. */
static void share(struct xpline_model *m, const struct xp_entry *e)
{
	u64 n = 0, given = 0, b;
	unsigned int c, top = 0;

	for (c = 0; c < XPLINE_CLASSES; c++) {
		n += e->cls[c];
		if (e->cls[c] > e->cls[top])
			top = c;
	}
	for (c = 0; c < XPLINE_CLASSES; c++) {
		b = m->cfg.xpline_bytes * (u64)e->cls[c] / n;
		m->st.cls_media_bytes[c] += b;
		given += b;
	}
	m->st.cls_media_bytes[top] += m->cfg.xpline_bytes - given;
}

static void evict(struct xpline_model *m, unsigned int i)
{
	struct xp_entry *e = &m->buf[i];

	share(m, e);
	m->st.xpline_writes++;
	m->st.media_write_bytes += m->cfg.xpline_bytes;
	if (e->mask != (1U << m->lines_per_xp) - 1) {
		m->st.partial_writes++;
		m->st.media_read_bytes += m->cfg.xpline_bytes;
	}
	m->buf[i] = m->buf[--m->nbuf];
}

static void line_flushed(struct xpline_model *m, u64 line)
{
	u64 tag = line / m->lines_per_xp;
	u32 bit = 1U << (line % m->lines_per_xp);
	unsigned int i, lru = 0;

	m->st.lines++;
	m->st.cls_lines[m->cur_cls]++;
	m->clock++;
	for (i = 0; i < m->nbuf; i++) {
		if (m->buf[i].tag == tag) {
			m->st.hits++;
			m->buf[i].cls[m->cur_cls]++;
			m->buf[i].mask |= bit;
			m->buf[i].stamp = m->clock;
			return;
		}
		if (m->buf[i].stamp < m->buf[lru].stamp)
			lru = i;
	}
	m->st.misses++;
	if (m->nbuf == m->cap)
		evict(m, lru);
	memset(&m->buf[m->nbuf], 0, sizeof(m->buf[0]));
	m->buf[m->nbuf].tag = tag;
	m->buf[m->nbuf].mask = bit;
	m->buf[m->nbuf].stamp = m->clock;
	m->buf[m->nbuf].cls[m->cur_cls] = 1;
	m->nbuf++;
}

static void xp_flush(void *priv, const void *addr, size_t len)
{
	struct xpline_model *m = priv;
	uintptr_t a = (uintptr_t)addr, base = (uintptr_t)m->cfg.base;
	u64 first, last, l;

	if (m->prev && !m->cfg.no_chain)
		m->prev->flush(m->prev->priv, addr, len);
	if (!len || (m->cfg.size && (a < base || a >= base + m->cfg.size)))
		return;
	first = (a - base) / LINE;
	last = (a - base + len - 1) / LINE;
	pthread_mutex_lock(&m->lock);
	m->st.flush_calls++;
	m->cur_cls = 0;
	if (m->cfg.classify) {
		m->cur_cls = m->cfg.classify(m->cfg.classify_priv, a - base, len);
		if (m->cur_cls >= XPLINE_CLASSES)
			m->cur_cls = XPLINE_CLASSES - 1;
	}
	for (l = first; l <= last; l++)
		line_flushed(m, l);
	pthread_mutex_unlock(&m->lock);
}

static void xp_fence(void *priv, bool persist)
{
	struct xpline_model *m = priv;

	if (m->prev && !m->cfg.no_chain)
		m->prev->fence(m->prev->priv, persist);
	pthread_mutex_lock(&m->lock);
	if (persist)
		m->st.fences++;
	else
		m->st.order_fences++;
	pthread_mutex_unlock(&m->lock);
}

struct xpline_model *xpline_new(const struct xpline_config *cfg)
{
	struct xpline_model *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->cfg = *cfg;
	if (!m->cfg.buffer_bytes)
		m->cfg.buffer_bytes = 16384;
	if (!m->cfg.xpline_bytes)
		m->cfg.xpline_bytes = 256;
	if (m->cfg.xpline_bytes % LINE || m->cfg.xpline_bytes / LINE > 32 ||
	    m->cfg.buffer_bytes < m->cfg.xpline_bytes) {
		free(m);
		return NULL;
	}
	m->lines_per_xp = m->cfg.xpline_bytes / LINE;
	m->cap = m->cfg.buffer_bytes / m->cfg.xpline_bytes;
	m->buf = calloc(m->cap, sizeof(*m->buf));
	if (!m->buf) {
		free(m);
		return NULL;
	}
	pthread_mutex_init(&m->lock, NULL);
	m->ops.flush = xp_flush;
	m->ops.fence = xp_fence;
	m->ops.priv = m;
	return m;
}

void xpline_free(struct xpline_model *m)
{
	if (!m)
		return;
	free(m->buf);
	free(m);
}

void xpline_attach(struct xpline_model *m)
{
	m->prev = shim_pmem_set_ops(&m->ops);
}

void xpline_detach(struct xpline_model *m)
{
	shim_pmem_set_ops(m->prev);
	m->prev = NULL;
}

void xpline_account(struct xpline_model *m, u64 ops, u64 user_bytes)
{
	pthread_mutex_lock(&m->lock);
	m->st.ops += ops;
	m->st.user_bytes += user_bytes;
	pthread_mutex_unlock(&m->lock);
}

void xpline_drain(struct xpline_model *m)
{
	pthread_mutex_lock(&m->lock);
	while (m->nbuf) {
		unsigned int i, lru = 0;

		for (i = 1; i < m->nbuf; i++)
			if (m->buf[i].stamp < m->buf[lru].stamp)
				lru = i;
		evict(m, lru);
	}
	pthread_mutex_unlock(&m->lock);
}

void xpline_reset(struct xpline_model *m)
{
	pthread_mutex_lock(&m->lock);
	memset(&m->st, 0, sizeof(m->st));
	m->nbuf = 0;
	pthread_mutex_unlock(&m->lock);
}

void xpline_get(struct xpline_model *m, struct xpline_stats *s)
{
	pthread_mutex_lock(&m->lock);
	*s = m->st;
	pthread_mutex_unlock(&m->lock);
}

static double ratio(u64 a, u64 b)
{
	return b ? (double)a / b : 0;
}

void xpline_json(FILE *f, const char *label, const struct xpline_stats *s)
{
	fprintf(f, "{\"label\":\"%s\",\"ops\":%llu,\"user_bytes\":%llu,"
		"\"flush_calls\":%llu,\"lines_flushed\":%llu,\"fences\":%llu,"
		"\"order_fences\":%llu,\"xpbuffer_hits\":%llu,\"xpbuffer_misses\":%llu,"
		"\"xpline_writes\":%llu,\"partial_xpline_writes\":%llu,"
		"\"media_write_bytes\":%llu,\"media_read_bytes\":%llu,"
		"\"per_op\":{\"lines\":%.3f,\"fences\":%.3f,\"xpline_writes\":%.3f,"
		"\"media_write_bytes\":%.1f},"
		"\"per_user_byte\":{\"cacheline_bytes\":%.4f,\"media_write_bytes\":%.4f}}",
		label, (unsigned long long)s->ops, (unsigned long long)s->user_bytes,
		(unsigned long long)s->flush_calls, (unsigned long long)s->lines,
		(unsigned long long)s->fences, (unsigned long long)s->order_fences,
		(unsigned long long)s->hits, (unsigned long long)s->misses,
		(unsigned long long)s->xpline_writes,
		(unsigned long long)s->partial_writes,
		(unsigned long long)s->media_write_bytes,
		(unsigned long long)s->media_read_bytes,
		ratio(s->lines, s->ops), ratio(s->fences, s->ops),
		ratio(s->xpline_writes, s->ops), ratio(s->media_write_bytes, s->ops),
		ratio(s->lines * LINE, s->user_bytes),
		ratio(s->media_write_bytes, s->user_bytes));
}
