// SPDX-License-Identifier: GPL-2.0
/*
 * libpmidx's asynchronous API (rings) and BATCH through the real kernel,
 * run inside the VM as root with pmidx.ko loaded, once per engine and
 * per ring mode (fixture variants):
 *
 *   ccl, utree, b3,       rings over io_uring passthrough (opened with
 *   lodge, pfart          PMIDX_RING_NO_FALLBACK: no silent fallback)
 *   ccl_sync, ...,        the same tests with PMIDX_RING_SYNC=1 in the
 *   pfart_sync            environment: every ring falls back to ioctls
 *   ccl_sqpoll,           rings opened with PMIDX_RING_SQPOLL: a kernel
 *   utree_sqpoll          thread takes the SQEs (the library's path is
 *                         the engine's own only below the dispatcher)
 *
 * A variant whose engine the module does not build is skipped (creating
 * its index answers -EOPNOTSUPP).
 *
 * Deep queues with callbacks and polling, synchronous and asynchronous
 * batches, refused batches, raw SQEs the library would never send
 * (reserved bits, unknown ops, bad pointers, in the SQE and inside a
 * BATCH), callbacks that resubmit, rings closed or processes exiting
 * with operations queued and in flight (an SQPOLL ring too), after
 * which the pool must still detach, and eight threads with a ring each.
 * Every test starts from a freshly formatted pool with one index and
 * ends with the engine's checker passing.
 *
 *   PMIDX_DEV=/dev/pmemN  the namespace to use (default: the largest)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <pmidx.h>
#include "kselftest_harness.h"
#include "pmidx_nl.h"
#include "pmidx_data.h"
#include "uring_path.h"
#include "pmem_dev.h"

#define INDEX_NAME	"async"

/*
 * PMIDX_OPS_PCT=N: run N % of the operations (1..100, default 100); the
 * debug kernel's tier runs a lighter load (tools/run-suites).
 */
static unsigned int scaled(unsigned int n)
{
	static int pct;

	if (!pct) {
		const char *s = getenv("PMIDX_OPS_PCT");

		pct = s ? atoi(s) : 100;
		if (pct < 1 || pct > 100)
			pct = 100;
	}
	return n * pct / 100 ?: 1;
}
#define VAL_LEN		16

/* Key @i: big-endian u64; its value: 16 bytes that name it. */
static void key_of(uint64_t i, uint8_t k[8])
{
	pmidx_key_from_u64(i, k);
}

static void val_of(uint64_t i, uint8_t v[VAL_LEN])
{
	memset(v, 'v', VAL_LEN);
	memcpy(v, &i, sizeof(i));
}

/* ---- fixture -------------------------------------------------------------- */

FIXTURE(async) {
	struct nl		nl;
	struct pool_info	p;
	char			devpath[48];
	struct pmidx_pool	*pool;
	struct pmidx_index	*idx;
	int			fd;	/* raw access to the char device */
	uint32_t		index;
	char			skip[96];	/* why its tests skip, "": they run */
};

FIXTURE_VARIANT(async) {
	const char	*engine;
	uint32_t	engine_id;
	bool		sync;		/* PMIDX_RING_SYNC=1: ioctl fallback */
	bool		sqpoll;		/* PMIDX_RING_SQPOLL */
};

FIXTURE_VARIANT_ADD(async, ccl) {
	.engine = "ccl", .engine_id = PMIDX_ENGINE_CCL,
};

FIXTURE_VARIANT_ADD(async, utree) {
	.engine = "utree", .engine_id = PMIDX_ENGINE_UTREE,
};

FIXTURE_VARIANT_ADD(async, b3) {
	.engine = "b3", .engine_id = PMIDX_ENGINE_B3,
};

FIXTURE_VARIANT_ADD(async, lodge) {
	.engine = "lodge", .engine_id = PMIDX_ENGINE_LODGE,
};

FIXTURE_VARIANT_ADD(async, pfart) {
	.engine = "pfart", .engine_id = PMIDX_ENGINE_PFART,
};

FIXTURE_VARIANT_ADD(async, ccl_sync) {
	.engine = "ccl", .engine_id = PMIDX_ENGINE_CCL, .sync = true,
};

FIXTURE_VARIANT_ADD(async, utree_sync) {
	.engine = "utree", .engine_id = PMIDX_ENGINE_UTREE, .sync = true,
};

FIXTURE_VARIANT_ADD(async, b3_sync) {
	.engine = "b3", .engine_id = PMIDX_ENGINE_B3, .sync = true,
};

FIXTURE_VARIANT_ADD(async, lodge_sync) {
	.engine = "lodge", .engine_id = PMIDX_ENGINE_LODGE, .sync = true,
};

FIXTURE_VARIANT_ADD(async, pfart_sync) {
	.engine = "pfart", .engine_id = PMIDX_ENGINE_PFART, .sync = true,
};

FIXTURE_VARIANT_ADD(async, ccl_sqpoll) {
	.engine = "ccl", .engine_id = PMIDX_ENGINE_CCL, .sqpoll = true,
};

FIXTURE_VARIANT_ADD(async, utree_sqpoll) {
	.engine = "utree", .engine_id = PMIDX_ENGINE_UTREE, .sqpoll = true,
};

static int open_handles(FIXTURE_DATA(async) *self)
{
	int ret;

	snprintf(self->devpath, sizeof(self->devpath), "/dev/%s", self->p.name);
	ret = pmidx_pool_open(self->devpath, 0, &self->pool);
	if (!ret)
		ret = pmidx_index_open(self->pool, INDEX_NAME, &self->idx);
	if (ret)
		return ret;
	self->index = pmidx_index_id(self->idx);
	self->fd = open(self->devpath, O_RDWR | O_CLOEXEC);
	return self->fd < 0 ? -errno : 0;
}

static void close_handles(FIXTURE_DATA(async) *self)
{
	if (self->fd >= 0)
		close(self->fd);
	self->fd = -1;
	pmidx_index_close(self->idx);
	self->idx = NULL;
	pmidx_pool_close(self->pool);
	self->pool = NULL;
}

FIXTURE_SETUP(async)
{
	char label[48];
	int ret;

	self->fd = -1;
	if (variant->sync)
		setenv("PMIDX_RING_SYNC", "1", 1);
	else
		unsetenv("PMIDX_RING_SYNC");
	ASSERT_EQ(0, nl_open(&self->nl));
	detach_all(&self->nl);
	ASSERT_EQ(0, pm_format(&self->nl, dev(), 1)) TH_LOG("%s", self->nl.msg);
	ASSERT_EQ(0, pm_attach(&self->nl, dev(), &self->p)) TH_LOG("%s", self->nl.msg);
	snprintf(label, sizeof(label), "%s%s", variant->engine,
		 variant->sync ? "_sync" : variant->sqpoll ? "_sqpoll" : "");
	if (!variant_wanted(label)) {
		snprintf(self->skip, sizeof(self->skip),
			 "variant %s not in PMIDX_VARIANTS", label);
		return;
	}
	ret = pm_create(&self->nl, INDEX_NAME, variant->engine_id);
	/* an engine the module does not build is refused, nothing persisted */
	if (ret == -EOPNOTSUPP) {
		snprintf(self->skip, sizeof(self->skip),
			 "engine %s is not built into pmidx.ko", variant->engine);
		return;
	}
	ASSERT_EQ(0, ret) TH_LOG("%s", self->nl.msg);
	ASSERT_EQ(0, open_handles(self));
}

FIXTURE_TEARDOWN(async)
{
	uint64_t keys;

	if (self->idx && !self->skip[0])
		EXPECT_EQ(0, pmidx_check(self->idx, &keys));
	close_handles(self);
	detach_all(&self->nl);
	nl_close(&self->nl);
}

#define REQUIRE_ENGINE() do {						\
	if (self->skip[0])						\
		SKIP(return, "%s", self->skip);				\
} while (0)

#define REQUIRE_URING() do {						\
	if (variant->sync)						\
		SKIP(return, "raw io_uring test: not a fallback variant"); \
} while (0)

/* A ring in the variant's mode: io_uring, no silent fallback, or sync. */
static int ring_open(FIXTURE_DATA(async) *self,
		     const FIXTURE_VARIANT(async) *variant, unsigned int depth,
		     struct pmidx_ring **r)
{
	int ret, why = 0, want;

	ret = pmidx_ring_open(self->pool, depth,
			      (variant->sync ? 0 : PMIDX_RING_NO_FALLBACK) |
			      (variant->sqpoll ? PMIDX_RING_SQPOLL : 0), r);
	if (ret)
		return ret;
	want = variant->sync ? PMIDX_RING_MODE_SYNC : PMIDX_RING_MODE_URING;
	if (pmidx_ring_mode(*r, &why) != want || why) {
		pmidx_ring_close(*r);
		return -EPROTO;
	}
	return 0;
}

static uint64_t count_keys(FIXTURE_DATA(async) *self)
{
	uint64_t keys = UINT64_MAX;

	pmidx_check(self->idx, &keys);
	return keys;
}

/* 0 if key @i holds val_of(i), else the error or -EBADMSG. */
static int get_is(struct pmidx_index *idx, uint64_t i)
{
	uint8_t k[8], want[VAL_LEN], got[VAL_LEN];
	size_t len = sizeof(got);
	int ret;

	key_of(i, k);
	val_of(i, want);
	ret = pmidx_get(idx, k, 8, got, &len);
	if (ret)
		return ret;
	return len == VAL_LEN && !memcmp(got, want, VAL_LEN) ? 0 : -EBADMSG;
}

/* ---- deep queues ---------------------------------------------------------- */

struct tally {
	unsigned int n, bad;
	int first_err;
};

static void tally_done(struct pmidx_ring *r, const struct pmidx_completion *c)
{
	struct tally *t = c->user_data;

	t->n++;
	if (c->res) {
		if (!t->bad++)
			t->first_err = c->res;
	}
}

/* Queue with @submit; on -EBUSY deliver completions and retry. */
#define RING_QUEUE(r, submit) ({					\
	int __ret;							\
	while ((__ret = (submit)) == -EBUSY)				\
		if (pmidx_ring_wait((r), 1) < 0)			\
			break;						\
	__ret;								\
})

#define NDEEP_MAX	20000
#define NDEEP		scaled(NDEEP_MAX)

TEST_F_TIMEOUT(async, deep_queue, 300)
{
	static uint8_t keys[NDEEP_MAX][8], vals[NDEEP_MAX][VAL_LEN], out[NDEEP_MAX][VAL_LEN];
	struct pmidx_completion c[64];
	struct tally puts = { 0 }, dels = { 0 };
	struct pmidx_ring *r;
	unsigned int got = 0, ok = 0;
	uintptr_t i;
	int n, ret;

	REQUIRE_ENGINE();
	ASSERT_EQ(0, ring_open(self, variant, 256, &r));
	/* puts with callbacks, in a scattered order */
	for (i = 0; i < NDEEP; i++) {
		uint64_t k = i * 7919 % NDEEP;

		key_of(k, keys[k]);
		val_of(k, vals[k]);
		ret = RING_QUEUE(r, pmidx_ring_put(r, self->idx, keys[k], 8, vals[k],
						   VAL_LEN, PMIDX_PUT_INSERT,
						   tally_done, &puts));
		ASSERT_EQ(0, ret);
	}
	ASSERT_LE(0, pmidx_ring_wait(r, UINT_MAX));
	ASSERT_EQ(0, pmidx_ring_busy(r));
	ASSERT_EQ(NDEEP, puts.n);
	ASSERT_EQ(0, puts.bad) TH_LOG("first error %d", puts.first_err);
	/* gets polled without callbacks; user_data is the key */
	for (i = 0; i < NDEEP; i++) {
		while ((ret = pmidx_ring_get(r, self->idx, keys[i], 8, out[i],
					     VAL_LEN, NULL, (void *)i)) == -EBUSY) {
			n = pmidx_ring_poll(r, c, 64);
			ASSERT_LE(0, n);
			for (; n > 0; n--, got++) {
				uintptr_t k = (uintptr_t)c[n - 1].user_data;

				ok += !c[n - 1].res && c[n - 1].len == VAL_LEN &&
				      !memcmp(out[k], vals[k], VAL_LEN);
			}
			if (!n)
				ASSERT_LE(0, pmidx_ring_wait(r, 1));
		}
		ASSERT_EQ(0, ret);
	}
	ASSERT_LE(0, pmidx_ring_wait(r, UINT_MAX));
	while ((n = pmidx_ring_poll(r, c, 64)) > 0)
		for (; n > 0; n--, got++) {
			uintptr_t k = (uintptr_t)c[n - 1].user_data;

			ok += !c[n - 1].res && !memcmp(out[k], vals[k], VAL_LEN);
		}
	ASSERT_EQ(NDEEP, got);
	ASSERT_EQ(NDEEP, ok);
	/* every other key deleted, each completion checked */
	for (i = 0; i < NDEEP; i += 2)
		ASSERT_EQ(0, RING_QUEUE(r, pmidx_ring_del(r, self->idx, keys[i], 8,
							  tally_done, &dels)));
	ASSERT_LE(0, pmidx_ring_wait(r, UINT_MAX));
	ASSERT_EQ(NDEEP / 2, dels.n);
	ASSERT_EQ(0, dels.bad);
	pmidx_ring_close(r);
	ASSERT_EQ(NDEEP / 2, count_keys(self));
	ASSERT_EQ(-ENOENT, get_is(self->idx, 0));
	ASSERT_EQ(0, get_is(self->idx, 1));
}

/* ---- batches ------------------------------------------------------------ */

#define NBATCH_MAX	3000
#define NBATCH		scaled(NBATCH_MAX)

TEST_F_TIMEOUT(async, batches, 300)
{
	static uint8_t keys[NBATCH_MAX][8], vals[NBATCH_MAX][VAL_LEN], out[NBATCH_MAX][VAL_LEN];
	static struct pmidx_req q[NBATCH_MAX];
	struct tally t = { 0 };
	struct pmidx_ring *r;
	uint8_t scanbuf[4096], small[4];
	struct pmidx_kv kv;
	size_t off = 0;
	uint64_t v;
	int i, n;

	REQUIRE_ENGINE();
	for (i = 0; i < NBATCH; i++) {
		key_of(i, keys[i]);
		val_of(i, vals[i]);
		q[i] = (struct pmidx_req){ .idx = self->idx, .type = PMIDX_REQ_PUT,
			.key = keys[i], .key_len = 8, .val = vals[i],
			.val_len = VAL_LEN, .res = 1 };
	}
	/* synchronous: three BATCH commands (1024 + 1024 + 952) */
	ASSERT_EQ(0, pmidx_batch(self->pool, q, NBATCH));
	for (i = 0; i < NBATCH; i++)
		ASSERT_EQ(0, q[i].res);
	ASSERT_EQ(NBATCH, count_keys(self));
	/* asynchronous: many batches of 64 gets in flight */
	ASSERT_EQ(0, ring_open(self, variant, 16, &r));
	for (i = 0; i < NBATCH; i++)
		q[i] = (struct pmidx_req){ .idx = self->idx, .type = PMIDX_REQ_GET,
			.key = keys[i], .key_len = 8, .val = out[i],
			.val_len = VAL_LEN, .res = 1 };
	for (i = 0; i < NBATCH; i += 64) {
		n = NBATCH - i < 64 ? NBATCH - i : 64;
		ASSERT_EQ(0, RING_QUEUE(r, pmidx_ring_batch(r, q + i, n,
							    tally_done, &t)));
	}
	ASSERT_LE(0, pmidx_ring_wait(r, UINT_MAX));
	ASSERT_EQ((NBATCH + 63) / 64, t.n);
	ASSERT_EQ(0, t.bad);
	for (i = 0; i < NBATCH; i++) {
		ASSERT_EQ(0, q[i].res);
		ASSERT_EQ(VAL_LEN, q[i].val_len);
		ASSERT_EQ(0, memcmp(out[i], vals[i], VAL_LEN));
	}
	/* per-request errors and outputs in one batch */
	key_of(NBATCH + 1, keys[0]);
	q[0] = (struct pmidx_req){ .idx = self->idx, .type = PMIDX_REQ_GET,
		.key = keys[0], .key_len = 8, .val = out[0], .val_len = VAL_LEN };
	q[1] = (struct pmidx_req){ .idx = self->idx, .type = PMIDX_REQ_PUT,
		.flags = PMIDX_PUT_INSERT, .key = keys[1], .key_len = 8,
		.val = vals[2], .val_len = VAL_LEN };
	q[2] = (struct pmidx_req){ .idx = self->idx, .type = PMIDX_REQ_GET,
		.key = keys[2], .key_len = 8, .val = small, .val_len = sizeof(small) };
	q[3] = (struct pmidx_req){ .idx = self->idx, .type = PMIDX_REQ_SCAN,
		.key = keys[10], .key_len = 8, .end_key = keys[20],
		.end_key_len = 8, .count = 100, .val = scanbuf,
		.val_len = sizeof(scanbuf) };
	q[4] = (struct pmidx_req){ .idx = self->idx, .type = PMIDX_REQ_DEL,
		.key = keys[3], .key_len = 8 };
	q[5] = (struct pmidx_req){ .idx = self->idx, .type = PMIDX_REQ_DEL,
		.key = keys[3], .key_len = 8 };
	t = (struct tally){ 0 };
	ASSERT_EQ(0, pmidx_ring_batch(r, q, 6, tally_done, &t));
	ASSERT_EQ(1, pmidx_ring_wait(r, 1));
	ASSERT_EQ(1, t.n);
	ASSERT_EQ(-ENOENT, q[0].res);
	ASSERT_EQ(-EEXIST, q[1].res);
	ASSERT_EQ(-ENOSPC, q[2].res);
	ASSERT_EQ(VAL_LEN, q[2].val_len);
	ASSERT_EQ(0, q[3].res);
	ASSERT_EQ(10, q[3].count);
	ASSERT_EQ(0, q[3].flags & PMIDX_SCAN_MORE);
	for (i = 10; pmidx_rec_parse(scanbuf, q[3].val_len, &off, &kv) == 1; i++) {
		ASSERT_EQ(0, pmidx_key_to_u64(kv.key, kv.key_len, &v));
		ASSERT_EQ(i, v);
	}
	ASSERT_EQ(20, i);
	ASSERT_EQ(0, q[4].res);
	ASSERT_EQ(-ENOENT, q[5].res);
	pmidx_ring_close(r);
	ASSERT_EQ(NBATCH - 1, count_keys(self));
}

/*
 * A batch the kernel refuses as a whole (the library cannot tell: a GET
 * with an empty key): nothing in it runs, not even the PUT before it.
 */
TEST_F(async, batch_refused)
{
	struct pmidx_completion c;
	struct pmidx_req q[3];
	struct pmidx_ring *r;
	uint8_t k[8], v[VAL_LEN], out[VAL_LEN];

	REQUIRE_ENGINE();
	key_of(5, k);
	val_of(5, v);
	q[0] = (struct pmidx_req){ .idx = self->idx, .type = PMIDX_REQ_PUT,
		.key = k, .key_len = 8, .val = v, .val_len = VAL_LEN };
	q[1] = (struct pmidx_req){ .idx = self->idx, .type = PMIDX_REQ_GET,
		.key = k, .key_len = 0, .val = out, .val_len = VAL_LEN };
	q[2] = q[0];
	ASSERT_EQ(-EINVAL, pmidx_batch(self->pool, q, 3));
	EXPECT_EQ(-ECANCELED, q[0].res);
	EXPECT_EQ(-EINVAL, q[1].res);		/* the ioctl says which */
	ASSERT_EQ(-ENOENT, get_is(self->idx, 5));

	ASSERT_EQ(0, ring_open(self, variant, 4, &r));
	ASSERT_EQ(0, pmidx_ring_batch(r, q, 3, NULL, NULL));
	ASSERT_EQ(1, pmidx_ring_wait(r, 1));
	ASSERT_EQ(1, pmidx_ring_poll(r, &c, 1));
	ASSERT_EQ(-EINVAL, c.res);
	ASSERT_EQ(PMIDX_REQ_BATCH, c.type);
	EXPECT_EQ(-ECANCELED, q[0].res);
	EXPECT_EQ(-ECANCELED, q[2].res);
	/* both paths report which entry was malformed */
	EXPECT_EQ(-EINVAL, q[1].res);
	pmidx_ring_close(r);
	ASSERT_EQ(-ENOENT, get_is(self->idx, 5));
	ASSERT_EQ(0, count_keys(self));
}

/* ---- raw SQEs ------------------------------------------------------------ */

struct raw_ring {
	struct io_uring	ring;
	int		fd;
};

/* One SQE with @c (cmd_op @op) on @fd; the CQE's res and big_cqe[0]. */
static int raw_cmd(struct raw_ring *rr, uint32_t op, const struct pmidx_cmd *c,
		   uint64_t rw_flags, uint64_t *big)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&rr->ring);
	struct io_uring_cqe *cqe;
	int ret;

	if (!sqe)
		return -EBUSY;
	memset(sqe, 0, (rr->ring.flags & IORING_SETUP_SQE128) ? 128 : 64);
	io_uring_prep_rw(IORING_OP_URING_CMD, sqe, rr->fd, NULL, 0, 0);
	sqe->cmd_op = op;
	sqe->rw_flags = rw_flags;
	memcpy(sqe->cmd, c, (rr->ring.flags & IORING_SETUP_SQE128) ?
	       sizeof(*c) : 16);
	ret = io_uring_submit(&rr->ring);
	if (ret != 1)
		return ret < 0 ? ret : -EIO;
	ret = io_uring_wait_cqe(&rr->ring, &cqe);
	if (ret)
		return ret;
	ret = cqe->res;
	if (big)
		*big = (rr->ring.flags & IORING_SETUP_CQE32) ? cqe->big_cqe[0] : 0;
	io_uring_cqe_seen(&rr->ring, cqe);
	return ret;
}

/* @c with one change, sent as a raw SQE: expect @err */
#define RAW(err, base, change) do {					\
	struct pmidx_cmd __c = (base);					\
	__c.change;							\
	EXPECT_EQ((err), raw_cmd(&rr, PMIDX_IOC_CMD, &__c, 0, NULL))	\
		TH_LOG("%s", #change);					\
} while (0)

TEST_F(async, bad_sqes)
{
	static uint8_t out[4096];
	static struct pmidx_cmd ents[PMIDX_BATCH_MAX + 1];
	struct pmidx_cmd put, get, scan, batch, good;
	struct raw_ring rr = { .fd = self->fd };
	struct bad_mem m;
	uint64_t big;
	uint8_t k[8];
	int i;

	REQUIRE_ENGINE();
	REQUIRE_URING();
	key_of(1, k);
	ASSERT_EQ(0, pmidx_put(self->idx, k, 8, "present", 7, 0));
	put = (struct pmidx_cmd){ .op = PMIDX_OP_PUT, .index = self->index,
		.key = uptr("bad-key"), .key_len = 7, .val = uptr("v"), .val_len = 1 };
	get = (struct pmidx_cmd){ .op = PMIDX_OP_GET, .index = self->index,
		.key = uptr(k), .key_len = 8, .val = uptr(out), .val_len = 64 };
	scan = (struct pmidx_cmd){ .op = PMIDX_OP_SCAN, .index = self->index,
		.count = 10, .val = uptr(out), .val_len = sizeof(out) };

	/* a 64-byte SQE has no room for the command */
	ASSERT_EQ(0, io_uring_queue_init(4, &rr.ring, 0));
	EXPECT_EQ(-EINVAL, raw_cmd(&rr, PMIDX_IOC_CMD, &put, 0, NULL));
	io_uring_queue_exit(&rr.ring);

	ASSERT_EQ(0, io_uring_queue_init(8, &rr.ring,
					 IORING_SETUP_SQE128 | IORING_SETUP_CQE32));
	/* after the ring: its mmap() must not land in the hole */
	ASSERT_EQ(0, bad_mem_map(&m));
	/* the good commands work, outputs in the CQE */
	EXPECT_EQ(7, raw_cmd(&rr, PMIDX_IOC_CMD, &get, 0, &big));
	EXPECT_EQ(7, big);
	EXPECT_EQ(1, raw_cmd(&rr, PMIDX_IOC_CMD, &scan, 0, &big));
	/* the SQE: wrong cmd_op, io_uring's own reserved fields */
	EXPECT_EQ(-ENOTTY, raw_cmd(&rr, PMIDX_IOC_CMD + 1, &put, 0, NULL));
	EXPECT_EQ(-ENOTTY, raw_cmd(&rr, 0, &put, 0, NULL));
	EXPECT_EQ(-EINVAL, raw_cmd(&rr, PMIDX_IOC_CMD, &put, 1U << 31, NULL));
	/* the command: reserved bits, unknown ops and flags */
	RAW(-EINVAL, put, reserved0 = 1);
	RAW(-EINVAL, put, reserved[0] = 1);
	RAW(-EINVAL, put, reserved[2] = 1ULL << 63);
	RAW(-EINVAL, put, result = 1);
	RAW(-EINVAL, put, flags = 1U << 5);
	RAW(-EINVAL, get, flags = PMIDX_PUT_INSERT);
	RAW(-EINVAL, put, count = 1);
	RAW(-EOPNOTSUPP, put, op = 0);
	RAW(-EOPNOTSUPP, put, op = __PMIDX_OP_MAX);
	RAW(-EOPNOTSUPP, put, op = 0xff);
	RAW(-ENXIO, put, index = 63);
	/* bad pointers */
	RAW(-EFAULT, put, key = uptr(m.hole));
	RAW(-EFAULT, put, key = 0);
	RAW(-EFAULT, put, val = uptr(m.hole));
	RAW(-EFAULT, put, val = uptr(m.hole - 8); __c.val_len = 16);
	RAW(-EFAULT, get, val = uptr(m.hole));
	RAW(-EFAULT, get, val = uptr(m.ro));
	RAW(-EFAULT, scan, val = uptr(m.ro); __c.val_len = m.page);
	RAW(-EFAULT, scan, end_key = uptr(m.hole); __c.end_key_len = 1);
	RAW(-EFAULT, put, key = 0xffff800000000000ULL);

	/* BATCH in the SQE: the command itself */
	for (i = 0; i <= PMIDX_BATCH_MAX; i++)
		ents[i] = get;
	batch = (struct pmidx_cmd){ .op = PMIDX_OP_BATCH, .val = uptr(ents),
		.val_len = 2 * sizeof(*ents), .count = 2 };
	EXPECT_EQ(0, raw_cmd(&rr, PMIDX_IOC_CMD, &batch, 0, &big));
	EXPECT_EQ(0, big);
	EXPECT_EQ(0, (int64_t)ents[1].result);
	EXPECT_EQ(7, ents[1].val_len);
	for (i = 0; i < 2; i++)
		ents[i].result = 0;
	RAW(-EINVAL, batch, count = 0);
	RAW(-EINVAL, batch, count = 3);
	RAW(-EINVAL, batch, count = PMIDX_BATCH_MAX + 1;
	    __c.val_len = (PMIDX_BATCH_MAX + 1) * sizeof(*ents));
	RAW(-EINVAL, batch, index = self->index + 1);
	RAW(-EINVAL, batch, key = uptr(k); __c.key_len = 8);
	RAW(-EINVAL, batch, flags = PMIDX_PUT_INSERT);
	RAW(-EINVAL, batch, reserved[1] = 1);
	RAW(-EFAULT, batch, val = 0);
	RAW(-EFAULT, batch, val = uptr(m.hole));
	RAW(-EFAULT, batch, val = uptr(m.hole - sizeof(*ents)));
	/* ... and its entries: each refuses the whole batch */
	good = put;
	good.key = uptr("batch-put");
	good.key_len = 9;
	{
		static const struct {
			const char *what;
			int err;
		} bad[] = {
			{ "unknown op", -EOPNOTSUPP }, { "op 0", -EOPNOTSUPP },
			{ "reserved", -EINVAL }, { "nested batch", -EINVAL },
			{ "lookup", -EINVAL }, { "check", -EINVAL },
			{ "unknown flag", -EINVAL }, { "null key", -EFAULT },
		};
		struct pmidx_cmd e[3];
		unsigned int j;
		int ret;

		for (j = 0; j < ARRAY_SIZE(bad); j++) {
			e[0] = good;
			e[1] = good;
			e[2] = good;
			switch (j) {
			case 0: e[1].op = 0x42; break;
			case 1: e[1].op = 0; break;
			case 2: e[1].reserved[2] = 1; break;
			case 3: e[1] = batch; break;
			case 4: e[1] = (struct pmidx_cmd){ .op = PMIDX_OP_LOOKUP,
					.key = uptr(INDEX_NAME), .key_len = 5 }; break;
			case 5: e[1] = (struct pmidx_cmd){ .op = PMIDX_OP_CHECK,
					.index = self->index }; break;
			case 6: e[1].flags = 1U << 9; break;
			case 7: e[1].key = 0; break;
			}
			batch.val = uptr(e);
			batch.count = 3;
			batch.val_len = sizeof(e);
			ret = raw_cmd(&rr, PMIDX_IOC_CMD, &batch, 0, &big);
			EXPECT_EQ(bad[j].err, ret) TH_LOG("entry: %s", bad[j].what);
			EXPECT_EQ(0, e[0].result) TH_LOG("entry: %s", bad[j].what);
		}
		/* a bad pointer is found when the entry runs: it fails alone */
		e[0] = good;
		e[1] = get;
		e[1].val = uptr(m.hole);
		e[2] = get;
		ret = raw_cmd(&rr, PMIDX_IOC_CMD, &batch, 0, &big);
		EXPECT_EQ(0, ret);
		EXPECT_EQ(1, big);
		EXPECT_EQ(0, (int64_t)e[0].result);
		EXPECT_EQ(-EFAULT, (int64_t)e[1].result);
		EXPECT_EQ(0, (int64_t)e[2].result);
		EXPECT_EQ(0, pmidx_del(self->idx, "batch-put", 9));
	}
	io_uring_queue_exit(&rr.ring);
	/* nothing else changed */
	EXPECT_EQ(1, count_keys(self));
	EXPECT_EQ(-ENOENT, pmidx_del(self->idx, "bad-key", 7));
	munmap(m.rw, m.page);
	munmap(m.ro, m.page);
}

/* ---- callbacks that resubmit ------------------------------------------------ */

struct chain {
	struct pmidx_index	*idx;
	uint64_t		base, step, left;
	uint8_t			key[8], val[VAL_LEN], out[VAL_LEN];
	bool			getting;
	unsigned int		done, bad;
};

/* put key, then get it back and compare, then the next key ... */
static void chain_done(struct pmidx_ring *r, const struct pmidx_completion *c)
{
	struct chain *ch = c->user_data;
	uint64_t k = ch->base + ch->step;
	int ret;

	ch->done++;
	if (c->res || (ch->getting && memcmp(ch->out, ch->val, VAL_LEN)))
		ch->bad++;
	if (!ch->getting) {
		ch->getting = true;
		ret = pmidx_ring_get(r, ch->idx, ch->key, 8, ch->out, VAL_LEN,
				     chain_done, ch);
	} else if (ch->left--) {
		ch->getting = false;
		ch->step++;
		key_of(k + 1, ch->key);
		val_of(k + 1, ch->val);
		ret = pmidx_ring_put(r, ch->idx, ch->key, 8, ch->val, VAL_LEN, 0,
				     chain_done, ch);
	} else {
		return;
	}
	if (ret)
		ch->bad++;
}

TEST_F_TIMEOUT(async, callback_chains, 300)
{
	struct chain ch[8];
	struct pmidx_ring *r;
	int i, n;

	REQUIRE_ENGINE();
	ASSERT_EQ(0, ring_open(self, variant, 8, &r));
	for (i = 0; i < 8; i++) {
		ch[i] = (struct chain){ .idx = self->idx, .base = i * 100000ULL,
					.left = 999 };
		key_of(ch[i].base, ch[i].key);
		val_of(ch[i].base, ch[i].val);
		ASSERT_EQ(0, pmidx_ring_put(r, self->idx, ch[i].key, 8, ch[i].val,
					    VAL_LEN, 0, chain_done, &ch[i]));
	}
	n = pmidx_ring_wait(r, UINT_MAX);
	ASSERT_EQ(8 * 2000, n);
	for (i = 0; i < 8; i++) {
		EXPECT_EQ(2000, ch[i].done);
		EXPECT_EQ(0, ch[i].bad);
	}
	pmidx_ring_close(r);
	ASSERT_EQ(8000, count_keys(self));
	ASSERT_EQ(0, get_is(self->idx, 700000 + 999));
}

/* ---- teardown with operations queued and in flight ------------------------ */

/* Queue puts of keys [from, to) on @r; submit those before @submit_to. */
static int queue_puts(struct pmidx_ring *r, struct pmidx_index *idx,
		      uint64_t from, uint64_t submit_to, uint64_t to,
		      uint8_t (*keys)[8], uint8_t (*vals)[VAL_LEN])
{
	uint64_t i;
	int ret;

	for (i = from; i < to; i++) {
		if (i == submit_to && pmidx_ring_submit(r) < 0)
			return -EIO;
		key_of(i, keys[i]);
		val_of(i, vals[i]);
		ret = pmidx_ring_put(r, idx, keys[i], 8, vals[i], VAL_LEN, 0,
				     tally_done, NULL);
		if (ret)
			return ret;
	}
	return 0;
}

/* How many of keys [from, to) are there; *@gap: not a prefix of them. */
/* Keys of [from, to) present with a wrong value (a torn put). */
static uint64_t torn(struct pmidx_index *idx, uint64_t from, uint64_t to)
{
	uint64_t i, bad = 0;

	for (i = from; i < to; i++)
		bad += get_is(idx, i) == -EBADMSG;
	return bad;
}

static uint64_t present(struct pmidx_index *idx, uint64_t from, uint64_t to,
			bool *gap)
{
	uint64_t i, have = 0;

	*gap = false;
	for (i = from; i < to; i++) {
		if (!get_is(idx, i)) {
			*gap |= have != i - from;
			have++;
		}
	}
	return have;
}

/*
 * In a child: an SQPOLL ring with puts of keys [from, to) handed to the
 * kernel's poller thread, then exit as soon as the first one completed,
 * while the poller is still consuming them. Return: the exit status.
 */
static int sqpoll_exit(int fd, uint32_t index, uint64_t from, uint64_t to)
{
	static uint8_t keys[4096][8], vals[4096][VAL_LEN];
	struct io_uring_params p = {
		.flags = IORING_SETUP_SQPOLL | IORING_SETUP_SQE128 |
			 IORING_SETUP_CQE32,
		.sq_thread_idle = 1000,
	};
	struct io_uring ring;
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	struct pmidx_cmd c;
	uint64_t i;

	if (io_uring_queue_init_params(to - from, &ring, &p))
		return 2;
	for (i = from; i < to; i++) {
		key_of(i, keys[i - from]);
		val_of(i, vals[i - from]);
		c = (struct pmidx_cmd){ .op = PMIDX_OP_PUT, .index = index,
			.key = uptr(keys[i - from]), .key_len = 8,
			.val = uptr(vals[i - from]), .val_len = VAL_LEN };
		sqe = io_uring_get_sqe(&ring);
		if (!sqe)
			return 3;
		memset(sqe, 0, 128);
		io_uring_prep_rw(IORING_OP_URING_CMD, sqe, fd, NULL, 0, 0);
		sqe->cmd_op = PMIDX_IOC_CMD;
		memcpy(sqe->cmd, &c, sizeof(c));
	}
	if (io_uring_submit(&ring) < 0)
		return 4;
	return io_uring_wait_cqe(&ring, &cqe) ? 5 : 0;
}

/* Detach, retrying while an exiting ring still holds the device. */
static int detach_eventually(struct nl *nl, const char *name)
{
	int i, ret;

	for (i = 0; i < 100; i++) {
		ret = pm_detach(nl, name);
		if (ret != -EBUSY)
			return ret;
		usleep(50000);
	}
	return ret;
}

TEST_F_TIMEOUT(async, teardown_inflight, 300)
{
	static uint8_t keys[4096][8], vals[4096][VAL_LEN];
	struct pmidx_ring *r;
	struct pmidx_pool *pool;
	struct pmidx_index *idx;
	int status;
	bool gap;
	pid_t pid;

	REQUIRE_ENGINE();
	/* close: the submitted 128 ran, the queued 128 never did */
	ASSERT_EQ(0, ring_open(self, variant, 256, &r));
	ASSERT_EQ(0, queue_puts(r, self->idx, 0, 128, 256, keys, vals));
	/* synchronously, the submitted ones are done already */
	ASSERT_EQ(variant->sync ? 128 : 256, pmidx_ring_busy(r));
	pmidx_ring_close(r);
	ASSERT_EQ(128, present(self->idx, 0, 256, &gap));
	ASSERT_FALSE(gap);

	/* a process exits with its ring and pool open, ops queued */
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		if (pmidx_pool_open(self->devpath, 0, &pool) ||
		    pmidx_index_open(pool, INDEX_NAME, &idx) ||
		    pmidx_ring_open(pool, 512, 0, &r) ||
		    queue_puts(r, idx, 1000, 1300, 1400, keys, vals))
			_exit(1);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, status);
	ASSERT_EQ(300, present(self->idx, 1000, 1400, &gap));
	ASSERT_FALSE(gap);

	/* the same, through a bare SQPOLL ring the kernel drains by itself */
	if (!variant->sync) {
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid)
			_exit(sqpoll_exit(self->fd, self->index, 2000, 3000));
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		ASSERT_EQ(0, status);
		TH_LOG("SQPOLL ring: %llu of 1000 puts ran before the exit%s",
		       (unsigned long long)present(self->idx, 2000, 3000, &gap),
		       gap ? " (not a prefix: some puts went to io_uring workers)" : "");
		/*
		 * Each complete; not in order: a put the engine cannot make
		 * without sleeping (a split, the first one of some engines)
		 * answers -EAGAIN on its non-blocking issue and is handed to
		 * io_uring's workers, which run and are cancelled in any order
		 * (libpmidx: "through io_uring order is not guaranteed").
		 */
		ASSERT_EQ(0, torn(self->idx, 2000, 3000));
	}

	/* nothing holds the pool: it detaches and comes back */
	close_handles(self);
	ASSERT_EQ(0, detach_eventually(&self->nl, self->p.name));
	ASSERT_EQ(0, pm_attach(&self->nl, dev(), &self->p)) TH_LOG("%s", self->nl.msg);
	ASSERT_EQ(0, open_handles(self));
	ASSERT_EQ(428, present(self->idx, 0, 1400, &gap));
	ASSERT_EQ(0, torn(self->idx, 2000, 3000));
}

/* ---- many rings ------------------------------------------------------------- */

#define NTHREADS	8
#define PER_THREAD_MAX	4000
#define PER_THREAD	scaled(PER_THREAD_MAX)

struct worker {
	pthread_t		tid;
	struct pmidx_pool	*pool;
	struct pmidx_index	*idx;
	bool			sync;
	unsigned int		t;
	int			err;
	struct tally		tally;
	uint8_t			keys[PER_THREAD_MAX][8];
	uint8_t			vals[PER_THREAD_MAX][VAL_LEN];
	uint8_t			out[PER_THREAD_MAX][VAL_LEN];
	struct pmidx_req	q[PER_THREAD_MAX];
};

/*
 * Puts in batches of 16 (the last one shorter when PMIDX_OPS_PCT leaves a
 * count that 16 does not divide), then single gets, on the thread's own ring.
 */
static int worker_run(struct worker *w, struct pmidx_ring *r)
{
	uint64_t base = (uint64_t)w->t << 32;
	unsigned int i;
	int ret;

	for (i = 0; i < PER_THREAD; i++) {
		key_of(base + i, w->keys[i]);
		val_of(base + i, w->vals[i]);
		w->q[i] = (struct pmidx_req){ .idx = w->idx, .type = PMIDX_REQ_PUT,
			.key = w->keys[i], .key_len = 8, .val = w->vals[i],
			.val_len = VAL_LEN, .res = 1 };
	}
	for (i = 0; i < PER_THREAD; i += 16) {
		unsigned int n = PER_THREAD - i < 16 ? PER_THREAD - i : 16;

		ret = RING_QUEUE(r, pmidx_ring_batch(r, w->q + i, n, tally_done,
						     &w->tally));
		if (ret)
			return ret;
	}
	/*
	 * Operations in flight on one ring are not ordered: a put BATCH
	 * may go to io_uring's workers while a GET completes inline, so
	 * the puts complete before their keys are read back.
	 */
	ret = pmidx_ring_wait(r, UINT_MAX);
	if (ret < 0)
		return ret;
	for (i = 0; i < PER_THREAD; i++) {
		ret = RING_QUEUE(r, pmidx_ring_get(r, w->idx, w->keys[i], 8,
						   w->out[i], VAL_LEN, tally_done,
						   &w->tally));
		if (ret)
			return ret;
	}
	ret = pmidx_ring_wait(r, UINT_MAX);
	if (ret < 0)
		return ret;
	for (i = 0; i < PER_THREAD; i++)
		if (w->q[i].res || memcmp(w->out[i], w->vals[i], VAL_LEN))
			return -EBADMSG;
	return w->tally.n == (PER_THREAD + 15) / 16 + PER_THREAD &&
	       !w->tally.bad ?
	       0 : -EIO;
}

static void *worker_fn(void *arg)
{
	struct worker *w = arg;
	struct pmidx_ring *r;

	w->err = pmidx_ring_open(w->pool, 64,
				 w->sync ? 0 : PMIDX_RING_NO_FALLBACK, &r);
	if (w->err)
		return NULL;
	w->err = worker_run(w, r);
	pmidx_ring_close(r);
	return NULL;
}

TEST_F_TIMEOUT(async, many_rings, 300)
{
	struct worker *w = calloc(NTHREADS, sizeof(*w));
	unsigned int t;

	REQUIRE_ENGINE();
	ASSERT_TRUE(w != NULL);
	for (t = 0; t < NTHREADS; t++) {
		w[t].pool = self->pool;
		w[t].idx = self->idx;
		w[t].sync = variant->sync;
		w[t].t = t;
		ASSERT_EQ(0, pthread_create(&w[t].tid, NULL, worker_fn, &w[t]));
	}
	for (t = 0; t < NTHREADS; t++) {
		pthread_join(w[t].tid, NULL);
		EXPECT_EQ(0, w[t].err) TH_LOG("thread %u", t);
	}
	free(w);
	ASSERT_EQ(NTHREADS * PER_THREAD, count_keys(self));
}

/* ---- the fallback switch ------------------------------------------------------ */

TEST_F(async, fallback_switch)
{
	struct pmidx_completion c;
	struct pmidx_ring *r;
	uint8_t k[8], v[VAL_LEN], out[VAL_LEN];
	int why = 1;

	REQUIRE_ENGINE();
	key_of(42, k);
	val_of(42, v);
	/* the environment variable forces the ioctl path, with no error */
	setenv("PMIDX_RING_SYNC", "1", 1);
	ASSERT_EQ(0, pmidx_ring_open(self->pool, 4, 0, &r));
	ASSERT_EQ(PMIDX_RING_MODE_SYNC, pmidx_ring_mode(r, &why));
	ASSERT_EQ(0, why);
	ASSERT_EQ(0, pmidx_ring_put(r, self->idx, k, 8, v, VAL_LEN, 0, NULL, NULL));
	ASSERT_EQ(0, pmidx_ring_get(r, self->idx, k, 8, out, VAL_LEN, NULL, NULL));
	ASSERT_EQ(2, pmidx_ring_wait(r, 2));
	ASSERT_EQ(1, pmidx_ring_poll(r, &c, 1));
	ASSERT_EQ(0, c.res);
	ASSERT_EQ(1, pmidx_ring_poll(r, &c, 1));
	ASSERT_TRUE(!c.res && c.len == VAL_LEN && !memcmp(out, v, VAL_LEN));
	pmidx_ring_close(r);
	ASSERT_EQ(-EINVAL, pmidx_ring_open(self->pool, 4, PMIDX_RING_NO_FALLBACK, &r));
	/* "0" or empty leaves io_uring on; so does no variable at all */
	setenv("PMIDX_RING_SYNC", "0", 1);
	ASSERT_EQ(0, pmidx_ring_open(self->pool, 4, 0, &r));
	EXPECT_EQ(PMIDX_RING_MODE_URING, pmidx_ring_mode(r, &why));
	pmidx_ring_close(r);
	unsetenv("PMIDX_RING_SYNC");
	ASSERT_EQ(0, pmidx_ring_open(self->pool, 4, PMIDX_RING_NO_FALLBACK, &r));
	EXPECT_EQ(PMIDX_RING_MODE_URING, pmidx_ring_mode(r, &why));
	pmidx_ring_close(r);
	/* the flag forces it per ring */
	ASSERT_EQ(0, pmidx_ring_open(self->pool, 4, PMIDX_RING_SYNC, &r));
	EXPECT_EQ(PMIDX_RING_MODE_SYNC, pmidx_ring_mode(r, &why));
	EXPECT_EQ(0, why);
	ASSERT_EQ(0, pmidx_ring_del(r, self->idx, k, 8, NULL, NULL));
	ASSERT_EQ(1, pmidx_ring_wait(r, 1));
	ASSERT_EQ(1, pmidx_ring_poll(r, &c, 1));
	ASSERT_EQ(0, c.res);
	pmidx_ring_close(r);
	ASSERT_EQ(0, count_keys(self));
}

TEST_HARNESS_MAIN
