/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Data-path helpers for the selftests: one struct pmidx_cmd per
 * operation, sent through a struct path_ops so the same tests run over
 * the ioctl and (later) io_uring passthrough. Raw commands, no libpmidx:
 * the tests must be able to send what a library never would.
 */
#ifndef PMIDX_SELFTEST_DATA_H
#define PMIDX_SELFTEST_DATA_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/ioctl.h>
#include <linux/pmidx.h>

/* How a command reaches the kernel. Return: 0 or a negative errno. */
struct path_ops {
	const char *name;
	int (*cmd)(int fd, struct pmidx_cmd *c);
};

static inline int ioctl_cmd(int fd, struct pmidx_cmd *c)
{
	return ioctl(fd, PMIDX_IOC_CMD, c) ? -errno : 0;
}

static const struct path_ops ioctl_path = {
	.name	= "ioctl",
	.cmd	= ioctl_cmd,
};

/* An open index: the pool's char device, the index id, the path. */
struct ctx {
	int			fd;
	uint32_t		index;
	const struct path_ops	*path;
};

static inline uint64_t uptr(const void *p)
{
	return (uint64_t)(uintptr_t)p;
}

static inline int op_lookup(const struct ctx *c, const char *name,
			    uint32_t *index, uint64_t *engine)
{
	struct pmidx_cmd cmd = {
		.op = PMIDX_OP_LOOKUP, .key = uptr(name), .key_len = strlen(name),
	};
	int ret = c->path->cmd(c->fd, &cmd);

	if (!ret) {
		*index = cmd.index;
		*engine = cmd.result;
	}
	return ret;
}

static inline int op_put(const struct ctx *c, const void *k, uint32_t kl,
			 const void *v, uint32_t vl, uint16_t flags)
{
	struct pmidx_cmd cmd = {
		.op = PMIDX_OP_PUT, .flags = flags, .index = c->index,
		.key = uptr(k), .key_len = kl, .val = uptr(v), .val_len = vl,
	};

	return c->path->cmd(c->fd, &cmd);
}

/* *vl: buffer size in; value length (or the length needed) out. */
static inline int op_get(const struct ctx *c, const void *k, uint32_t kl,
			 void *v, uint32_t *vl)
{
	struct pmidx_cmd cmd = {
		.op = PMIDX_OP_GET, .index = c->index,
		.key = uptr(k), .key_len = kl, .val = uptr(v), .val_len = *vl,
	};
	int ret = c->path->cmd(c->fd, &cmd);

	if (!ret || ret == -ENOSPC)
		*vl = cmd.val_len;
	return ret;
}

static inline int op_del(const struct ctx *c, const void *k, uint32_t kl)
{
	struct pmidx_cmd cmd = {
		.op = PMIDX_OP_DEL, .index = c->index, .key = uptr(k), .key_len = kl,
	};

	return c->path->cmd(c->fd, &cmd);
}

static inline int op_check(const struct ctx *c, uint64_t *keys)
{
	struct pmidx_cmd cmd = { .op = PMIDX_OP_CHECK, .index = c->index };
	int ret = c->path->cmd(c->fd, &cmd);

	*keys = cmd.result;
	return ret;
}

struct scan_req {
	const void	*start, *end;
	uint32_t	start_len, end_len;
	uint16_t	flags;		/* in: PMIDX_SCAN_AFTER; out: + MORE */
	uint32_t	count;		/* in: max records; out: returned */
	void		*buf;
	uint32_t	len;		/* in: buffer size; out: used or needed */
};

static inline int op_scan(const struct ctx *c, struct scan_req *r)
{
	struct pmidx_cmd cmd = {
		.op = PMIDX_OP_SCAN, .index = c->index, .flags = r->flags,
		.key = uptr(r->start), .key_len = r->start_len,
		.end_key = uptr(r->end), .end_key_len = r->end_len,
		.count = r->count, .val = uptr(r->buf), .val_len = r->len,
	};
	int ret = c->path->cmd(c->fd, &cmd);

	if (!ret) {
		r->count = cmd.count;
		r->flags = cmd.flags;
	}
	if (!ret || ret == -ENOSPC)
		r->len = cmd.val_len;
	return ret;
}

static inline uint32_t rec_size(uint32_t kl, uint32_t vl)
{
	return (sizeof(struct pmidx_rec) + kl + vl + 7) & ~7U;
}

/*
 * Next record of a SCAN buffer at *off (< used). Return: 0, or -1 when
 * the record is malformed or its padding is not zeroed.
 */
static inline int rec_next(const uint8_t *buf, uint32_t used, uint32_t *off,
			   const uint8_t **k, uint32_t *kl,
			   const uint8_t **v, uint32_t *vl)
{
	struct pmidx_rec r;
	uint32_t size, i;

	if (used - *off < sizeof(r))
		return -1;
	memcpy(&r, buf + *off, sizeof(r));
	if (!r.key_len || r.key_len > PMIDX_KEY_MAX || r.val_len > PMIDX_VALUE_MAX)
		return -1;
	size = rec_size(r.key_len, r.val_len);
	if (size > used - *off)
		return -1;
	for (i = sizeof(r) + r.key_len + r.val_len; i < size; i++)
		if (buf[*off + i])
			return -1;
	*k = buf + *off + sizeof(r);
	*kl = r.key_len;
	*v = *k + r.key_len;
	*vl = r.val_len;
	*off += size;
	return 0;
}

/* memcmp order, shorter first on a common prefix */
static inline int key_cmp(const void *a, uint32_t al, const void *b, uint32_t bl)
{
	int c = memcmp(a, b, al < bl ? al : bl);

	if (c)
		return c;
	return al < bl ? -1 : al > bl;
}

/* xorshift64*: deterministic from a printed seed */
static inline uint64_t rng_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dULL;
}

static inline uint32_t rng_below(uint64_t *s, uint32_t n)
{
	return n ? (uint32_t)(rng_next(s) % n) : 0;
}

/* The seed of a randomized test: PMIDX_SEED=N, else from the time. */
static inline uint64_t test_seed(void)
{
	const char *s = getenv("PMIDX_SEED");

	return s ? strtoull(s, NULL, 0) : (uint64_t)time(NULL) * 2654435761ULL;
}

/*
 * PMIDX_VARIANTS="ccl pfart ccl_uring": run only the fixture variants
 * named, skip the others (the debug tier's share: the io_uring and
 * sync-fallback paths do not depend on the engine); unset: every one.
 */
static inline bool variant_wanted(const char *name)
{
	const char *list = getenv("PMIDX_VARIANTS"), *p;
	size_t n = strlen(name);

	if (!list || !*list)
		return true;
	for (p = list; (p = strstr(p, name)); p += n)
		if ((p == list || p[-1] == ' ') && (!p[n] || p[n] == ' '))
			return true;
	return false;
}

#endif /* PMIDX_SELFTEST_DATA_H */
