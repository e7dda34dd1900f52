// SPDX-License-Identifier: GPL-2.0
/*
 * uTree engine smoke tests over the raw data-path ioctl, run in the VM
 * as root with pmidx.ko loaded:
 *
 *   tools/pmidx-vm -- build/bin/selftests/utree_smoke
 *
 * The pool and the index "t" (engine utree) are made on the first pmem
 * namespace if they do not exist yet (PMIDX_DEV overrides the device):
 *   pmidxctl format /dev/pmem0 && pmidxctl attach /dev/pmem0 &&
 *   pmidxctl create-index t --engine utree
 * Every test works in its own key namespace (first key byte), so they
 * share the index.
 *
 * Reboot round trip (two boots on one backing file; see utree_reboot.sh):
 *   PMIDX_UTREE_PHASE=fill    write a deterministic data set
 *   PMIDX_UTREE_PHASE=verify  check it, after a clean reboot or a power cut
 * In a phase only that test runs; without one, those two skip.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <linux/pmidx.h>
#include "kselftest_harness.h"

#define IDX_NAME	"t"
#define VMAX		PMIDX_VALUE_MAX

/* ---- raw ioctl -------------------------------------------------------- */

struct ix {
	int		fd;
	uint32_t	id;
};

static int ioc(int fd, struct pmidx_cmd *c)
{
	return ioctl(fd, PMIDX_IOC_CMD, c) ? -errno : 0;
}

static int ix_lookup(int fd, const char *name, uint32_t *id, uint64_t *engine)
{
	struct pmidx_cmd c = {
		.op = PMIDX_OP_LOOKUP,
		.key = (uintptr_t)name,
		.key_len = strlen(name),
	};
	int ret = ioc(fd, &c);

	*id = c.index;
	if (engine)
		*engine = c.result;
	return ret;
}

static int ix_put(const struct ix *x, const void *k, uint32_t kl,
		  const void *v, uint32_t vl, uint16_t flags)
{
	struct pmidx_cmd c = {
		.op = PMIDX_OP_PUT, .flags = flags, .index = x->id,
		.key = (uintptr_t)k, .key_len = kl,
		.val = (uintptr_t)v, .val_len = vl,
	};

	return ioc(x->fd, &c);
}

/* *vl: buffer size in, value length out */
static int ix_get(const struct ix *x, const void *k, uint32_t kl, void *v,
		  uint32_t *vl)
{
	struct pmidx_cmd c = {
		.op = PMIDX_OP_GET, .index = x->id,
		.key = (uintptr_t)k, .key_len = kl,
		.val = (uintptr_t)v, .val_len = *vl,
	};
	int ret = ioc(x->fd, &c);

	*vl = c.val_len;
	return ret;
}

static int ix_del(const struct ix *x, const void *k, uint32_t kl)
{
	struct pmidx_cmd c = {
		.op = PMIDX_OP_DEL, .index = x->id,
		.key = (uintptr_t)k, .key_len = kl,
	};

	return ioc(x->fd, &c);
}

static int ix_check(const struct ix *x, uint64_t *keys)
{
	struct pmidx_cmd c = { .op = PMIDX_OP_CHECK, .index = x->id };
	int ret = ioc(x->fd, &c);

	*keys = c.result;
	return ret;
}

struct scan_res {
	uint32_t	count;
	uint32_t	used;
	int		more;
};

static int ix_scan(const struct ix *x, const void *start, uint32_t sl, int after,
		   const void *end, uint32_t el, uint32_t max, void *buf,
		   uint32_t cap, struct scan_res *r)
{
	struct pmidx_cmd c = {
		.op = PMIDX_OP_SCAN, .index = x->id,
		.flags = after ? PMIDX_SCAN_AFTER : 0,
		.key = (uintptr_t)start, .key_len = sl,
		.end_key = (uintptr_t)end, .end_key_len = el,
		.count = max, .val = (uintptr_t)buf, .val_len = cap,
	};
	int ret = ioc(x->fd, &c);

	r->count = c.count;
	r->used = c.val_len;
	r->more = !!(c.flags & PMIDX_SCAN_MORE);
	return ret;
}

/* Walk the records of a SCAN reply. */
struct rec_it {
	const uint8_t	*p, *end;
};

static int rec_next(struct rec_it *it, const uint8_t **k, uint32_t *kl,
		    const uint8_t **v, uint32_t *vl)
{
	struct pmidx_rec r;

	if (it->p >= it->end)
		return 0;
	memcpy(&r, it->p, sizeof(r));
	*k = it->p + sizeof(r);
	*kl = r.key_len;
	*v = *k + r.key_len;
	*vl = r.val_len;
	it->p += (sizeof(r) + r.key_len + r.val_len + 7) & ~7UL;
	return 1;
}

static int key_cmp(const uint8_t *a, uint32_t al, const uint8_t *b, uint32_t bl)
{
	int c = memcmp(a, b, al < bl ? al : bl);

	return c ? c : (al > bl) - (al < bl);
}

/* ---- the pool and the index ------------------------------------------- */

static const char *pmem_dev(void)
{
	return getenv("PMIDX_DEV") ?: "/dev/pmem0";
}

static int open_dev(char *name, size_t len)
{
	struct dirent *d;
	DIR *dir = opendir("/dev");
	int fd = -1;

	if (!dir)
		return -1;
	while ((d = readdir(dir))) {
		if (strncmp(d->d_name, "pmidx", 5) || !d->d_name[5])
			continue;
		snprintf(name, len, "/dev/%s", d->d_name);
		fd = open(name, O_RDWR);
		if (fd >= 0)
			break;
	}
	closedir(dir);
	return fd;
}

static int run(const char *fmt, ...)
{
	char cmd[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

static char pool_name[300];	/* "pmidxN" of the pool in use */

/* Open the index, making pool and index first when they are missing. */
static int ix_open(struct ix *x)
{
	char name[300];
	uint64_t engine;

	x->fd = open_dev(name, sizeof(name));
	if (x->fd < 0) {
		if (run("pmidxctl format --force %s >/dev/null && pmidxctl attach %s >/dev/null",
			pmem_dev(), pmem_dev()))
			return -1;
		x->fd = open_dev(name, sizeof(name));
		if (x->fd < 0)
			return -1;
	}
	if (ix_lookup(x->fd, IDX_NAME, &x->id, &engine) == -ENOENT) {
		if (run("pmidxctl create-index %s --engine utree >/dev/null", IDX_NAME))
			return -1;
		if (ix_lookup(x->fd, IDX_NAME, &x->id, &engine))
			return -1;
	}
	snprintf(pool_name, sizeof(pool_name), "%s", name + strlen("/dev/"));
	return engine == PMIDX_ENGINE_UTREE ? 0 : -1;
}

/* ---- deterministic keys and values ------------------------------------ */

/*
 * Key @id of namespace @ns: 8-byte, short, long (shared 26-byte prefix)
 * and near-maximal (200..255 bytes) keys; all start with @ns.
 */
static uint32_t key_of(uint8_t ns, uint32_t id, uint8_t *b)
{
	uint32_t n, i;

	switch (id % 4) {
	case 0:
		b[0] = ns;
		for (i = 1; i < 8; i++)
			b[i] = id >> (8 * (7 - i));
		return 8;
	case 1:
		return sprintf((char *)b, "%c%u", ns, id);
	case 2:
		return sprintf((char *)b, "%ccommonprefix_commonprefix_%010u", ns, id);
	default:
		n = 200 + id % 56;
		memset(b, 'z', n);
		b[0] = ns;
		sprintf((char *)b + n - 11, "%010u", id);
		b[n - 1] = 'e';
		return n;
	}
}

/* Value of (@id, @ver): 0..8 bytes inline, 9..300, up to 64 KiB. */
static uint32_t val_of(uint32_t id, uint32_t ver, uint8_t *b)
{
	uint32_t sel = (id * 7 + ver) % 16, n, i;

	if (sel < 5)
		n = sel * 2;
	else if (sel < 11)
		n = 8;
	else if (sel < 15)
		n = 9 + (id + ver) % 300;
	else
		n = 1000 + (ver * 131 + id) % (VMAX - 999);
	for (i = 0; i < n; i++)
		b[i] = (uint8_t)(id * 31 + ver * 7 + i);
	if (n >= 8) {
		memcpy(b, &id, 4);
		memcpy(b + 4, &ver, 4);
	}
	return n;
}

/* A value read back for @id: is it (@id, some version) intact? */
static int val_ok(uint32_t id, const uint8_t *v, uint32_t len)
{
	static __thread uint8_t w[VMAX];
	uint32_t kid, ver;

	if (len < 8)
		return 1;	/* short values carry no tag */
	memcpy(&kid, v, 4);
	memcpy(&ver, v + 4, 4);
	return kid == id && val_of(id, ver, w) == len && !memcmp(w, v, len);
}

/* Scan namespace @ns: number of records, sorted, no duplicates. */
static int scan_ns(const struct ix *x, uint8_t ns, uint32_t batch,
		   uint64_t *count)
{
	uint8_t start[256], end = ns + 1, prev[256], *buf;
	uint32_t sl = 1, pl = 0, kl, vl, cap = 1 << 20;
	const uint8_t *k, *v;
	struct scan_res r;
	int after = 0, ret;

	buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	start[0] = ns;
	*count = 0;
	for (;;) {
		struct rec_it it;

		ret = ix_scan(x, start, sl, after, &end, 1, batch, buf, cap, &r);
		if (ret)
			break;
		it.p = buf;
		it.end = buf + r.used;
		while (!ret && rec_next(&it, &k, &kl, &v, &vl)) {
			if (pl && key_cmp(prev, pl, k, kl) >= 0)
				ret = -EILSEQ;
			else if (k[0] != ns)
				ret = -ERANGE;
			memcpy(prev, k, kl);
			pl = kl;
			(*count)++;
		}
		if (ret || !r.more)
			break;
		memcpy(start, prev, pl);
		sl = pl;
		after = 1;
	}
	free(buf);
	return ret;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static const char *phase(void)
{
	return getenv("PMIDX_UTREE_PHASE") ?: "";
}

FIXTURE(ut) {
	struct ix x;
	uint8_t v[VMAX + 8], w[VMAX + 8];
};

FIXTURE_SETUP(ut)
{
	ASSERT_EQ(0, ix_open(&self->x));
}

FIXTURE_TEARDOWN(ut)
{
	if (self->x.fd >= 0)
		close(self->x.fd);
}

/* ---- basic semantics --------------------------------------------------- */

TEST_F(ut, lookup_and_errors)
{
	uint8_t k[PMIDX_KEY_MAX + 1] = "a", v[8];
	uint32_t id, vl = sizeof(v);
	uint64_t engine;

	if (*phase())
		SKIP(return, "phase %s", phase());
	ASSERT_EQ(0, ix_lookup(self->x.fd, IDX_NAME, &id, &engine));
	ASSERT_EQ(self->x.id, id);
	ASSERT_EQ(PMIDX_ENGINE_UTREE, engine);
	ASSERT_EQ(-ENOENT, ix_lookup(self->x.fd, "no-such-index", &id, NULL));
	ASSERT_EQ(-ENOENT, ix_get(&self->x, "\x01missing", 8, v, &vl));
	ASSERT_EQ(-ENOENT, ix_del(&self->x, "\x01missing", 8));
	ASSERT_EQ(-EINVAL, ix_put(&self->x, k, 0, v, 1, 0));
	memset(k, 1, sizeof(k));
	ASSERT_EQ(-EINVAL, ix_put(&self->x, k, PMIDX_KEY_MAX + 1, v, 1, 0));
	ASSERT_EQ(-E2BIG, ix_put(&self->x, k, 4, self->v, VMAX + 1, 0));
}

TEST_F(ut, key_and_value_limits)
{
	static const uint32_t klens[] = { 1, 7, 8, 9, 100, PMIDX_KEY_MAX };
	static const uint32_t vlens[] = { 0, 1, 8, 9, 4096, VMAX, 8, 3, 0, VMAX };
	uint8_t k[PMIDX_KEY_MAX];
	uint32_t i, j, vl, n;
	uint64_t keys, cnt;

	if (*phase())
		SKIP(return, "phase %s", phase());
	for (i = 0; i < sizeof(klens) / sizeof(klens[0]); i++) {
		memset(k, 0xa0 + i, sizeof(k));
		k[0] = 0x02;
		/* every value size, upserted in turn over one key */
		for (j = 0; j < sizeof(vlens) / sizeof(vlens[0]); j++) {
			n = vlens[j];
			memset(self->v, 0x30 + j, n);
			ASSERT_EQ(0, ix_put(&self->x, k, klens[i], self->v, n, 0));
			vl = sizeof(self->w);
			ASSERT_EQ(0, ix_get(&self->x, k, klens[i], self->w, &vl));
			ASSERT_EQ(n, vl);
			ASSERT_EQ(0, memcmp(self->v, self->w, n));
		}
		/* too small a buffer: -ENOSPC and the length needed */
		vl = 10;
		ASSERT_EQ(-ENOSPC, ix_get(&self->x, k, klens[i], self->w, &vl));
		ASSERT_EQ(VMAX, vl);
		ASSERT_EQ(-EEXIST, ix_put(&self->x, k, klens[i], "x", 1,
					  PMIDX_PUT_INSERT));
	}
	ASSERT_EQ(0, scan_ns(&self->x, 0x02, 3, &cnt));
	ASSERT_EQ(sizeof(klens) / sizeof(klens[0]), cnt);
	/* keys that are prefixes of each other stay distinct and ordered */
	ASSERT_EQ(0, ix_put(&self->x, "\x02\x00", 2, "p2", 2, PMIDX_PUT_INSERT));
	ASSERT_EQ(-EEXIST, ix_put(&self->x, "\x02\x00", 2, "p2", 2, PMIDX_PUT_INSERT));
	ASSERT_EQ(0, ix_put(&self->x, "\x02\x00\x00", 3, "p3", 2, PMIDX_PUT_INSERT));
	vl = sizeof(self->w);
	ASSERT_EQ(0, ix_get(&self->x, "\x02", 1, self->w, &vl));
	ASSERT_EQ(VMAX, vl);
	vl = 8;
	ASSERT_EQ(0, ix_get(&self->x, "\x02\x00", 2, self->w, &vl));
	ASSERT_EQ(2, vl);
	ASSERT_EQ(0, memcmp(self->w, "p2", 2));
	ASSERT_EQ(0, scan_ns(&self->x, 0x02, 1, &cnt));
	ASSERT_EQ(sizeof(klens) / sizeof(klens[0]) + 2, cnt);
	ASSERT_EQ(0, ix_check(&self->x, &keys));
	for (i = 0; i < sizeof(klens) / sizeof(klens[0]); i++) {
		memset(k, 0xa0 + i, sizeof(k));
		k[0] = 0x02;
		ASSERT_EQ(0, ix_del(&self->x, k, klens[i]));
		ASSERT_EQ(-ENOENT, ix_del(&self->x, k, klens[i]));
		vl = sizeof(self->w);
		ASSERT_EQ(-ENOENT, ix_get(&self->x, k, klens[i], self->w, &vl));
	}
	ASSERT_EQ(0, scan_ns(&self->x, 0x02, 100, &cnt));
	ASSERT_EQ(2, cnt);
	ASSERT_EQ(0, ix_del(&self->x, "\x02\x00", 2));
	ASSERT_EQ(0, ix_del(&self->x, "\x02\x00\x00", 3));
	ASSERT_EQ(0, ix_check(&self->x, &keys));
}

TEST_F(ut, scan_bounds_and_resume)
{
	static uint8_t buf[1 << 16];
	uint8_t k[256], start[256], end[256];
	uint32_t i, kl, vl, sl, el, n = 300;
	const uint8_t *rk, *rv;
	struct scan_res r;
	struct rec_it it;
	uint64_t cnt;

	if (*phase())
		SKIP(return, "phase %s", phase());
	for (i = 0; i < n; i++) {
		kl = key_of(0x03, i, k);
		vl = val_of(i, 1, self->v);
		ASSERT_EQ(0, ix_put(&self->x, k, kl, self->v, vl, PMIDX_PUT_INSERT));
	}
	/* batches of every size see every key once, in order */
	ASSERT_EQ(0, scan_ns(&self->x, 0x03, 1, &cnt));
	ASSERT_EQ(n, cnt);
	ASSERT_EQ(0, scan_ns(&self->x, 0x03, 7, &cnt));
	ASSERT_EQ(n, cnt);
	ASSERT_EQ(0, scan_ns(&self->x, 0x03, 1000, &cnt));
	ASSERT_EQ(n, cnt);
	/* start at an existing key: inclusive; with AFTER: exclusive */
	kl = key_of(0x03, 5, k);
	ASSERT_EQ(0, ix_scan(&self->x, k, kl, 0, NULL, 0, 1, buf, sizeof(buf), &r));
	ASSERT_EQ(1, r.count);
	it.p = buf;
	it.end = buf + r.used;
	ASSERT_EQ(1, rec_next(&it, &rk, &sl, &rv, &vl));
	ASSERT_EQ(kl, sl);
	ASSERT_EQ(0, memcmp(rk, k, kl));
	ASSERT_TRUE(val_ok(5, rv, vl));
	ASSERT_EQ(0, ix_scan(&self->x, k, kl, 1, NULL, 0, 1, buf, sizeof(buf), &r));
	ASSERT_EQ(1, r.count);
	it.p = buf;
	it.end = buf + r.used;
	ASSERT_EQ(1, rec_next(&it, &rk, &sl, &rv, &vl));
	ASSERT_GT(key_cmp(rk, sl, k, kl), 0);
	/* end is exclusive */
	sl = key_of(0x03, 8, start);
	el = key_of(0x03, 8, end);
	ASSERT_EQ(0, ix_scan(&self->x, start, sl, 0, end, el, 100, buf,
			     sizeof(buf), &r));
	ASSERT_EQ(0, r.count);
	ASSERT_EQ(0, r.more);
	/* a buffer too small for one record: -ENOSPC, length needed */
	kl = key_of(0x03, 3, k);	/* a 200+ byte key */
	ASSERT_EQ(-ENOSPC, ix_scan(&self->x, k, kl, 0, NULL, 0, 10, buf, 16, &r));
	ASSERT_GE(r.used, sizeof(struct pmidx_rec) + kl);
	for (i = 0; i < n; i++) {
		kl = key_of(0x03, i, k);
		ASSERT_EQ(0, ix_del(&self->x, k, kl));
	}
	ASSERT_EQ(0, scan_ns(&self->x, 0x03, 50, &cnt));
	ASSERT_EQ(0, cnt);
}

/* ---- randomized against a reference ------------------------------------ */

#define RND_KEYS	1500
#define RND_OPS		12000

TEST_F_TIMEOUT(ut, random_ops_vs_reference, 300)
{
	static uint32_t ver[RND_KEYS];
	static uint8_t present[RND_KEYS];
	uint8_t k[256];
	uint32_t i, id, kl, vl, op, want = 0;
	uint64_t cnt, keys, seed = 0x12345678;
	int ret;

	if (*phase())
		SKIP(return, "phase %s", phase());
	memset(ver, 0, sizeof(ver));
	memset(present, 0, sizeof(present));
	for (i = 0; i < RND_OPS; i++) {
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		id = (seed >> 33) % RND_KEYS;
		op = (seed >> 20) % 10;
		kl = key_of(0x04, id, k);
		if (op < 5) {			/* upsert */
			vl = val_of(id, ++ver[id], self->v);
			ASSERT_EQ(0, ix_put(&self->x, k, kl, self->v, vl, 0));
			present[id] = 1;
		} else if (op < 7) {		/* insert-only */
			vl = val_of(id, ver[id] + 1, self->v);
			ret = ix_put(&self->x, k, kl, self->v, vl, PMIDX_PUT_INSERT);
			if (present[id]) {
				ASSERT_EQ(-EEXIST, ret);
			} else {
				ASSERT_EQ(0, ret);
				present[id] = 1;
				ver[id]++;
			}
		} else if (op < 9) {		/* delete */
			ASSERT_EQ(present[id] ? 0 : -ENOENT, ix_del(&self->x, k, kl));
			present[id] = 0;
		} else {			/* get */
			vl = sizeof(self->w);
			ret = ix_get(&self->x, k, kl, self->w, &vl);
			if (!present[id]) {
				ASSERT_EQ(-ENOENT, ret);
				continue;
			}
			ASSERT_EQ(0, ret);
			ASSERT_EQ(val_of(id, ver[id], self->v), vl);
			ASSERT_EQ(0, memcmp(self->v, self->w, vl));
		}
	}
	for (id = 0; id < RND_KEYS; id++) {
		kl = key_of(0x04, id, k);
		vl = sizeof(self->w);
		ret = ix_get(&self->x, k, kl, self->w, &vl);
		if (!present[id]) {
			ASSERT_EQ(-ENOENT, ret);
			continue;
		}
		want++;
		ASSERT_EQ(0, ret);
		ASSERT_EQ(val_of(id, ver[id], self->v), vl);
		ASSERT_EQ(0, memcmp(self->v, self->w, vl));
	}
	ASSERT_EQ(0, scan_ns(&self->x, 0x04, 64, &cnt));
	ASSERT_EQ(want, cnt);
	ASSERT_EQ(0, ix_check(&self->x, &keys));
	ASSERT_GE(keys, want);
}

/* ---- concurrency -------------------------------------------------------- */

#define MT_KEYS		2000
#define MT_OPS		15000

struct mt {
	const struct ix	*x;
	int		tid, writers;
	volatile int	*stop;
	uint32_t	ver[MT_KEYS];
	uint8_t		present[MT_KEYS];
	uint64_t	seed;
	int		err;
	char		msg[128];
};

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Writer @tid owns the keys with id % writers == tid; also shares key 0..15. */
static void *writer_fn(void *arg)
{
	struct mt *m = arg;
	static __thread uint8_t v[VMAX];
	uint8_t k[256];
	uint32_t i, id, kl, vl;
	int ret;

	for (i = 0; i < MT_OPS && !m->err; i++) {
		id = rnd(&m->seed) % MT_KEYS;
		if (id >= 16 && id % m->writers != (uint32_t)m->tid)
			continue;
		kl = key_of(0x05, id, k);
		if (rnd(&m->seed) % 10 < 7) {
			vl = val_of(id, ++m->ver[id], v);
			ret = ix_put(m->x, k, kl, v, vl, 0);
			if (ret)
				snprintf(m->msg, sizeof(m->msg), "put %u: %d", id, ret);
			m->present[id] = 1;
		} else {
			ret = ix_del(m->x, k, kl);
			if (ret == -ENOENT && (id < 16 || !m->present[id]))
				ret = 0;
			if (ret)
				snprintf(m->msg, sizeof(m->msg), "del %u: %d", id, ret);
			m->present[id] = 0;
		}
		m->err = ret;
	}
	return NULL;
}

static void *reader_fn(void *arg)
{
	struct mt *m = arg;
	static __thread uint8_t v[VMAX + 8];
	uint8_t k[256];
	uint32_t id, kl, vl;
	uint64_t cnt;
	int ret;

	while (!*m->stop && !m->err) {
		id = rnd(&m->seed) % MT_KEYS;
		if (rnd(&m->seed) % 64 == 0) {
			ret = scan_ns(m->x, 0x05, 1 + rnd(&m->seed) % 200, &cnt);
			if (ret)
				snprintf(m->msg, sizeof(m->msg), "scan: %d", ret);
			m->err = ret;
			continue;
		}
		kl = key_of(0x05, id, k);
		vl = sizeof(v);
		ret = ix_get(m->x, k, kl, v, &vl);
		if (ret == -ENOENT)
			continue;
		if (ret || !val_ok(id, v, vl)) {
			snprintf(m->msg, sizeof(m->msg), "get %u: %d len %u", id, ret, vl);
			m->err = ret ?: -EBADMSG;
		}
	}
	return NULL;
}

TEST_F_TIMEOUT(ut, threads_writers_and_readers, 300)
{
	enum { W = 3, R = 2 };
	static struct mt m[W + R];
	volatile int stop = 0;
	pthread_t th[W + R];
	uint8_t k[256];
	uint32_t id, kl, vl, want = 0;
	uint64_t cnt, keys;
	int i, ret;

	if (*phase())
		SKIP(return, "phase %s", phase());
	memset(m, 0, sizeof(m));
	for (i = 0; i < W + R; i++) {
		m[i].x = &self->x;
		m[i].tid = i;
		m[i].writers = W;
		m[i].stop = &stop;
		m[i].seed = 0x9e3779b97f4a7c15ULL * (i + 1);
		ASSERT_EQ(0, pthread_create(&th[i], NULL, i < W ? writer_fn : reader_fn,
					    &m[i]));
	}
	for (i = 0; i < W; i++)
		pthread_join(th[i], NULL);
	stop = 1;
	for (i = W; i < W + R; i++)
		pthread_join(th[i], NULL);
	for (i = 0; i < W + R; i++)
		EXPECT_EQ(0, m[i].err) TH_LOG("thread %d: %s", i, m[i].msg);
	/* the owned keys hold exactly what their writer did last */
	for (id = 16; id < MT_KEYS; id++) {
		struct mt *o = &m[id % W];

		kl = key_of(0x05, id, k);
		vl = sizeof(self->w);
		ret = ix_get(&self->x, k, kl, self->w, &vl);
		if (!o->present[id]) {
			ASSERT_EQ(-ENOENT, ret);
			continue;
		}
		want++;
		ASSERT_EQ(0, ret);
		ASSERT_EQ(val_of(id, o->ver[id], self->v), vl);
		ASSERT_EQ(0, memcmp(self->v, self->w, vl));
	}
	ASSERT_EQ(0, scan_ns(&self->x, 0x05, 128, &cnt));
	ASSERT_GE(cnt, want);
	ASSERT_LE(cnt, want + 16);
	ASSERT_EQ(0, ix_check(&self->x, &keys));
}

/* ---- detach / attach ---------------------------------------------------- */

#define DA_KEYS		3000

TEST_F_TIMEOUT(ut, detach_attach_round_trip, 300)
{
	uint8_t k[256];
	uint32_t id, kl, vl;
	uint64_t cnt, keys, keys2;

	if (*phase())
		SKIP(return, "phase %s", phase());
	for (id = 0; id < DA_KEYS; id++) {
		kl = key_of(0x06, id, k);
		vl = val_of(id, 3, self->v);
		ASSERT_EQ(0, ix_put(&self->x, k, kl, self->v, vl, 0));
	}
	for (id = 0; id < DA_KEYS; id += 3) {
		kl = key_of(0x06, id, k);
		ASSERT_EQ(0, ix_del(&self->x, k, kl));
	}
	ASSERT_EQ(0, ix_check(&self->x, &keys));
	close(self->x.fd);
	self->x.fd = -1;
	ASSERT_EQ(0, run("pmidxctl detach %s >/dev/null && pmidxctl attach %s >/dev/null",
			 pool_name, pmem_dev()));
	ASSERT_EQ(0, ix_open(&self->x));
	ASSERT_EQ(0, ix_check(&self->x, &keys2));
	ASSERT_EQ(keys, keys2);
	for (id = 0; id < DA_KEYS; id++) {
		kl = key_of(0x06, id, k);
		vl = sizeof(self->w);
		if (id % 3 == 0) {
			ASSERT_EQ(-ENOENT, ix_get(&self->x, k, kl, self->w, &vl));
			continue;
		}
		ASSERT_EQ(0, ix_get(&self->x, k, kl, self->w, &vl));
		ASSERT_EQ(val_of(id, 3, self->v), vl);
		ASSERT_EQ(0, memcmp(self->v, self->w, vl));
	}
	ASSERT_EQ(0, scan_ns(&self->x, 0x06, 500, &cnt));
	ASSERT_EQ(DA_KEYS - (DA_KEYS + 2) / 3, cnt);
	/* and it keeps working */
	for (id = 0; id < DA_KEYS; id += 3) {
		kl = key_of(0x06, id, k);
		vl = val_of(id, 4, self->v);
		ASSERT_EQ(0, ix_put(&self->x, k, kl, self->v, vl, PMIDX_PUT_INSERT));
	}
	ASSERT_EQ(0, ix_check(&self->x, &keys2));
	ASSERT_EQ(keys + (DA_KEYS + 2) / 3, keys2);
}

/* ---- reboot round trip (two boots, see the file comment) --------------- */

#define RB_KEYS		20000

/* Expected final state of reboot key @id: version, or 0 when deleted. */
static uint32_t rb_state(uint32_t id)
{
	if (id % 7 == 3)
		return 0;		/* deleted */
	return id % 5 == 1 ? 2 : 1;	/* updated once */
}

TEST_F_TIMEOUT(ut, reboot_fill, 300)
{
	uint8_t k[256];
	uint32_t id, kl, vl;
	uint64_t keys;

	if (strcmp(phase(), "fill"))
		SKIP(return, "not the fill phase");
	for (id = 0; id < RB_KEYS; id++) {
		kl = key_of(0x07, id, k);
		vl = val_of(id, 1, self->v);
		ASSERT_EQ(0, ix_put(&self->x, k, kl, self->v, vl, 0));
	}
	for (id = 0; id < RB_KEYS; id++) {
		kl = key_of(0x07, id, k);
		if (!rb_state(id)) {
			ASSERT_EQ(0, ix_del(&self->x, k, kl));
		} else if (rb_state(id) == 2) {
			vl = val_of(id, 2, self->v);
			ASSERT_EQ(0, ix_put(&self->x, k, kl, self->v, vl, 0));
		}
	}
	ASSERT_EQ(0, ix_check(&self->x, &keys));
	printf("# reboot_fill: %llu keys written and acknowledged\n",
	       (unsigned long long)keys);
}

TEST_F_TIMEOUT(ut, reboot_verify, 300)
{
	uint8_t k[256];
	uint32_t id, kl, vl, want = 0;
	uint64_t cnt, keys;

	if (strcmp(phase(), "verify"))
		SKIP(return, "not the verify phase");
	for (id = 0; id < RB_KEYS; id++) {
		kl = key_of(0x07, id, k);
		vl = sizeof(self->w);
		if (!rb_state(id)) {
			ASSERT_EQ(-ENOENT, ix_get(&self->x, k, kl, self->w, &vl));
			continue;
		}
		want++;
		ASSERT_EQ(0, ix_get(&self->x, k, kl, self->w, &vl)) TH_LOG("key %u", id);
		ASSERT_EQ(val_of(id, rb_state(id), self->v), vl);
		ASSERT_EQ(0, memcmp(self->v, self->w, vl));
	}
	ASSERT_EQ(0, scan_ns(&self->x, 0x07, 777, &cnt));
	ASSERT_EQ(want, cnt);
	ASSERT_EQ(0, ix_check(&self->x, &keys));
	ASSERT_EQ(want, keys);
}

/* ---- throughput over the ioctl ------------------------------------------ */

#define PERF_OPS	100000

struct perf {
	const struct ix	*x;
	uint32_t	first, n;
	int		op;	/* 0 put, 1 get, 2 get an absent key */
	int		err;
};

static void perf_key(uint32_t i, uint8_t *k)
{
	uint32_t j;

	k[0] = 0x08;
	for (j = 1; j < 8; j++)
		k[j] = i >> (8 * (7 - j));
}

static void *perf_fn(void *arg)
{
	struct perf *p = arg;
	uint8_t k[8], v[8];
	uint32_t i, vl;

	for (i = p->first; i < p->first + p->n && !p->err; i++) {
		perf_key(i, k);
		if (!p->op) {
			memcpy(v, &i, 4);
			memcpy(v + 4, &i, 4);
			p->err = ix_put(p->x, k, 8, v, 8, 0);
		} else if (p->op == 1) {
			vl = 8;
			p->err = ix_get(p->x, k, 8, v, &vl);
			if (!p->err && (vl != 8 || memcmp(v, &i, 4)))
				p->err = -EBADMSG;
		} else {
			vl = 8;
			p->err = ix_get(p->x, k, 8, v, &vl);
			p->err = p->err == -ENOENT ? 0 : p->err ?: -EEXIST;
		}
	}
	return NULL;
}

/* @threads threads share PERF_OPS operations; returns ops/s */
static double perf_run(const struct ix *x, int threads, int op, uint32_t base,
		       int *err)
{
	struct perf p[8];
	pthread_t th[8];
	double t0, t1;
	int i;

	for (i = 0; i < threads; i++) {
		p[i].x = x;
		p[i].n = PERF_OPS / threads;
		p[i].first = base + i * p[i].n;
		p[i].op = op;
		p[i].err = 0;
	}
	t0 = now();
	for (i = 0; i < threads; i++)
		pthread_create(&th[i], NULL, perf_fn, &p[i]);
	for (i = 0; i < threads; i++)
		pthread_join(th[i], NULL);
	t1 = now();
	*err = 0;
	for (i = 0; i < threads; i++)
		if (p[i].err)
			*err = p[i].err;
	return PERF_OPS / (t1 - t0);
}

TEST_F_TIMEOUT(ut, throughput_8byte, 300)
{
	double ins1, get1, upd1, ins2, get2, upd2, miss1, miss2;
	uint8_t k[8];
	uint64_t keys;
	uint32_t i;
	int err;

	if (*phase() && strcmp(phase(), "perf"))
		SKIP(return, "phase %s", phase());
	/* baseline: ioctl + dispatch + tree descent, no key found */
	miss1 = perf_run(&self->x, 1, 2, 0, &err);
	ASSERT_EQ(0, err);
	miss2 = perf_run(&self->x, 2, 2, 0, &err);
	ASSERT_EQ(0, err);
	ins1 = perf_run(&self->x, 1, 0, 0, &err);
	ASSERT_EQ(0, err);
	get1 = perf_run(&self->x, 1, 1, 0, &err);
	ASSERT_EQ(0, err);
	upd1 = perf_run(&self->x, 1, 0, 0, &err);	/* in-place updates */
	ASSERT_EQ(0, err);
	ins2 = perf_run(&self->x, 2, 0, PERF_OPS, &err);
	ASSERT_EQ(0, err);
	get2 = perf_run(&self->x, 2, 1, PERF_OPS, &err);
	ASSERT_EQ(0, err);
	upd2 = perf_run(&self->x, 2, 0, PERF_OPS, &err);
	ASSERT_EQ(0, err);
	printf("# perf: 100k 8-byte ops over ioctl, %ld CPUs\n",
	       sysconf(_SC_NPROCESSORS_ONLN));
	printf("# perf: 1 thread : insert %.0f ops/s, get %.0f ops/s, update %.0f ops/s\n",
	       ins1, get1, upd1);
	printf("# perf: 2 threads: insert %.0f ops/s, get %.0f ops/s, update %.0f ops/s\n",
	       ins2, get2, upd2);
	printf("# perf: baseline get of absent keys: 1 thread %.0f ops/s, 2 threads %.0f ops/s\n",
	       miss1, miss2);
	ASSERT_EQ(0, ix_check(&self->x, &keys));
	for (i = 0; i < 2 * PERF_OPS; i++) {
		perf_key(i, k);
		ASSERT_EQ(0, ix_del(&self->x, k, 8));
	}
}

TEST_HARNESS_MAIN
