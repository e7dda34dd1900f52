// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Batches and rings over the mock backend (mock.c). A mock pool has no
 * file descriptor, so its rings run synchronously: these tests pin down
 * the API's semantics in that mode (when operations run, when callbacks
 * are called, slots, ordering, batch outputs and refusals). The io_uring
 * machinery is driven on the host through /dev/null, whose uring_cmd
 * completes every command with 0 (Linux >= 6.0; skipped elsewhere), and
 * the fallback through a pipe, which has no uring_cmd at all. The real
 * kernel path is tested in the VM (selftests/vm/async_api.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "unit.h"

static void key_of(uint64_t v, uint8_t k[8])
{
	pmidx_key_from_u64(v, k);
}

/* ---- synchronous batches ------------------------------------------------ */

static int test_batch_sync(void)
{
	struct pmidx_index *idx = mock_index();
	static struct pmidx_req q[2500];
	static uint8_t keys[2500][8], vals[2500][8];
	uint64_t v;
	int i;

	EXPECT(idx);
	for (i = 0; i < 2500; i++) {
		key_of(i, keys[i]);
		memcpy(vals[i], keys[i], 8);
		q[i] = (struct pmidx_req){ .idx = idx, .type = PMIDX_REQ_PUT,
			.key = keys[i], .key_len = 8, .val = vals[i],
			.val_len = 1 + i % 8 };
	}
	EXPECT_EQ(0, pmidx_batch(&mock_pool, q, 2500));
	EXPECT_EQ(3, mock_batches());		/* 1024 + 1024 + 452 */
	for (i = 0; i < 2500; i++) {
		memset(vals[i], 0, 8);
		q[i] = (struct pmidx_req){ .idx = idx, .type = PMIDX_REQ_GET,
			.key = keys[i], .key_len = 8, .val = vals[i],
			.val_len = i == 7 ? 2 : 8 };
	}
	key_of(99999, keys[9]);			/* absent */
	EXPECT_EQ(2, pmidx_batch(&mock_pool, q, 2500));
	EXPECT_EQ(-ENOSPC, q[7].res);
	EXPECT_EQ(8, q[7].val_len);		/* the length needed */
	EXPECT_EQ(-ENOENT, q[9].res);
	for (i = 10; i < 2500; i++) {
		EXPECT_EQ(0, q[i].res);
		EXPECT_EQ(1 + i % 8, q[i].val_len);
		EXPECT(!memcmp(vals[i], keys[i], q[i].val_len));
	}
	q[0] = (struct pmidx_req){ .idx = idx, .type = PMIDX_REQ_DEL,
		.key = keys[1], .key_len = 8 };
	q[1] = (struct pmidx_req){ .idx = idx, .type = PMIDX_REQ_DEL,
		.key = keys[1], .key_len = 8 };
	q[2] = (struct pmidx_req){ .idx = idx, .type = PMIDX_REQ_PUT,
		.flags = PMIDX_PUT_INSERT, .key = keys[2], .key_len = 8,
		.val = vals[2], .val_len = 1 };
	EXPECT_EQ(2, pmidx_batch(&mock_pool, q, 3));
	EXPECT(!q[0].res && q[1].res == -ENOENT && q[2].res == -EEXIST);
	EXPECT_EQ(0, pmidx_key_to_u64(keys[3], 8, &v));
	EXPECT_EQ(0, pmidx_batch(&mock_pool, q, 0));
	pmidx_index_close(idx);
	return 0;
}

static int test_batch_refused(void)
{
	struct pmidx_index *idx = mock_index();
	struct pmidx_pool other = mock_pool;
	struct pmidx_index alien = { .pool = &other, .id = 7 };
	static struct pmidx_req q[1500];
	static uint8_t keys[1500][8];
	int i, cmds;

	EXPECT(idx);
	for (i = 0; i < 1500; i++) {
		key_of(i, keys[i]);
		q[i] = (struct pmidx_req){ .idx = idx, .type = PMIDX_REQ_PUT,
			.key = keys[i], .key_len = 8, .val = "v", .val_len = 1 };
	}
	/* the kernel refuses the second command: the first one ran */
	q[1100].key_len = 0;
	EXPECT_EQ(-EINVAL, pmidx_batch(&mock_pool, q, 1500));
	EXPECT_EQ(0, q[0].res);
	EXPECT_EQ(0, q[1023].res);
	EXPECT_EQ(-ECANCELED, q[1024].res);
	EXPECT_EQ(-EINVAL, q[1100].res);
	EXPECT_EQ(-ECANCELED, q[1499].res);
	EXPECT_EQ(2, mock_batches());
	/* what the ABI cannot carry never reaches the pool */
	q[1100].key_len = 8;
	q[5].idx = &alien;
	cmds = mock_cmds();
	EXPECT_EQ(-EXDEV, pmidx_batch(&mock_pool, q, 10));
	EXPECT_EQ(-EXDEV, q[5].res);
	EXPECT_EQ(-ECANCELED, q[4].res);
	q[5].idx = idx;
	q[6].type = PMIDX_REQ_BATCH;
	EXPECT_EQ(-EINVAL, pmidx_batch(&mock_pool, q, 10));
	q[6].type = PMIDX_REQ_PUT;
	q[7].val_len = (size_t)UINT32_MAX + 1;
	EXPECT_EQ(-E2BIG, pmidx_batch(&mock_pool, q, 10));
	EXPECT_EQ(cmds, mock_cmds());
	EXPECT_EQ(-EINVAL, pmidx_batch(&mock_pool, NULL, 1));
	pmidx_index_close(idx);
	return 0;
}

/* ---- rings, synchronous mode -------------------------------------------- */

struct log {
	int n;
	struct pmidx_completion c[64];
};

static void log_done(struct pmidx_ring *r, const struct pmidx_completion *c)
{
	struct log *l = c->user_data;

	(void)r;
	if (l->n < 64)
		l->c[l->n] = *c;
	l->n++;
}

static int test_ring_sync_callbacks(void)
{
	struct pmidx_index *idx = mock_index();
	struct pmidx_ring *r;
	struct log l = { 0 };
	char small[2], big[16];
	int why = 1, cmds;

	EXPECT(idx);
	EXPECT_EQ(0, pmidx_ring_open(&mock_pool, 8, 0, &r));
	EXPECT_EQ(PMIDX_RING_MODE_SYNC, pmidx_ring_mode(r, &why));
	EXPECT_EQ(-EOPNOTSUPP, why);		/* no char device */
	cmds = mock_cmds();
	EXPECT_EQ(0, pmidx_ring_put(r, idx, "a", 1, "hello", 5, 0, log_done, &l));
	EXPECT_EQ(0, pmidx_ring_get(r, idx, "a", 1, small, sizeof(small), log_done, &l));
	EXPECT_EQ(0, pmidx_ring_get(r, idx, "a", 1, big, sizeof(big), log_done, &l));
	EXPECT_EQ(0, pmidx_ring_del(r, idx, "b", 1, log_done, &l));
	EXPECT_EQ(0, pmidx_ring_put(r, idx, "a", 1, "x", 1, PMIDX_PUT_INSERT,
				    log_done, &l));
	/* queued, not run, no callback yet */
	EXPECT_EQ(cmds, mock_cmds());
	EXPECT_EQ(5, pmidx_ring_busy(r));
	EXPECT_EQ(0, l.n);
	EXPECT_EQ(5, pmidx_ring_submit(r));
	EXPECT_EQ(cmds + 5, mock_cmds());
	EXPECT_EQ(0, l.n);			/* callbacks run in wait/poll */
	EXPECT_EQ(0, pmidx_ring_busy(r));
	EXPECT_EQ(5, pmidx_ring_wait(r, 1));	/* everything ready is delivered */
	EXPECT_EQ(5, l.n);
	EXPECT(!l.c[0].res && l.c[0].type == PMIDX_REQ_PUT);
	EXPECT(l.c[1].res == -ENOSPC && l.c[1].len == 5);
	EXPECT(!l.c[2].res && l.c[2].len == 5 && !memcmp(big, "hello", 5));
	EXPECT(l.c[3].res == -ENOENT && l.c[3].type == PMIDX_REQ_DEL);
	EXPECT_EQ(-EEXIST, l.c[4].res);
	EXPECT_EQ(0, pmidx_ring_wait(r, UINT_MAX));	/* nothing left */
	/* argument errors come back at once, with no completion */
	EXPECT_EQ(-EINVAL, pmidx_ring_put(r, idx, "a", 1, "x", 1, 1U << 16,
					  log_done, &l));
	EXPECT_EQ(-EINVAL, pmidx_ring_get(r, NULL, "a", 1, big, 1, log_done, &l));
	EXPECT_EQ(0, pmidx_ring_busy(r));
	pmidx_ring_close(r);
	pmidx_index_close(idx);
	return 0;
}

static int test_ring_poll(void)
{
	struct pmidx_index *idx = mock_index();
	struct pmidx_completion out[8];
	struct pmidx_ring *r;
	uint8_t keys[4][8];
	uintptr_t i;

	EXPECT(idx);
	EXPECT_EQ(0, pmidx_ring_open(&mock_pool, 4, 0, &r));
	for (i = 0; i < 4; i++) {
		key_of(i, keys[i]);
		EXPECT_EQ(0, pmidx_ring_put(r, idx, keys[i], 8, "v", 1, 0,
					    NULL, (void *)i));
	}
	/* every slot is taken until its completion is polled */
	EXPECT_EQ(-EBUSY, pmidx_ring_del(r, idx, keys[0], 8, NULL, NULL));
	EXPECT_EQ(4, pmidx_ring_wait(r, UINT_MAX));
	EXPECT_EQ(-EBUSY, pmidx_ring_del(r, idx, keys[0], 8, NULL, NULL));
	EXPECT_EQ(3, pmidx_ring_poll(r, out, 3));
	for (i = 0; i < 3; i++)
		EXPECT(!out[i].res && out[i].user_data == (void *)i);
	EXPECT_EQ(0, pmidx_ring_del(r, idx, keys[0], 8, NULL, (void *)9));
	EXPECT_EQ(2, pmidx_ring_poll(r, out, 8));
	EXPECT(out[0].user_data == (void *)3 && out[1].user_data == (void *)9);
	EXPECT_EQ(0, pmidx_ring_poll(r, out, 8));
	EXPECT_EQ(0, pmidx_ring_busy(r));
	pmidx_ring_close(r);
	pmidx_index_close(idx);
	return 0;
}

static int test_ring_scan(void)
{
	struct pmidx_index *idx = mock_index();
	struct pmidx_completion c;
	struct pmidx_ring *r;
	struct pmidx_kv kv;
	uint8_t k[8], buf[4096];
	size_t off = 0;
	uint64_t v;
	int i, n = 0, ret;

	EXPECT(idx);
	for (i = 0; i < 50; i++) {
		key_of(i, k);
		EXPECT_EQ(0, pmidx_put(idx, k, 8, "val", 3, 0));
	}
	EXPECT_EQ(0, pmidx_ring_open(&mock_pool, 2, 0, &r));
	key_of(10, k);
	EXPECT_EQ(0, pmidx_ring_scan(r, idx, k, 8, NULL, 0, 20,
				     PMIDX_SCAN_AFTER, buf, sizeof(buf), NULL, NULL));
	EXPECT_EQ(1, pmidx_ring_wait(r, 1));
	EXPECT_EQ(1, pmidx_ring_poll(r, &c, 1));
	EXPECT(!c.res && c.type == PMIDX_REQ_SCAN && c.count == 20);
	EXPECT_EQ(PMIDX_SCAN_MORE, c.flags);
	while ((ret = pmidx_rec_parse(buf, c.len, &off, &kv)) == 1) {
		EXPECT_EQ(0, pmidx_key_to_u64(kv.key, kv.key_len, &v));
		EXPECT_EQ(11 + n, v);
		EXPECT(kv.val_len == 3 && !memcmp(kv.val, "val", 3));
		n++;
	}
	EXPECT_EQ(0, ret);
	EXPECT_EQ(20, n);
	EXPECT_EQ(c.len, off);
	off = 1;
	EXPECT_EQ(-EPROTO, pmidx_rec_parse(buf, c.len, &off, &kv));
	/* a buffer too small for one record: the length needed */
	EXPECT_EQ(0, pmidx_ring_scan(r, idx, NULL, 0, NULL, 0, 5, 0, buf, 8,
				     NULL, NULL));
	EXPECT_EQ(1, pmidx_ring_wait(r, 1));
	EXPECT_EQ(1, pmidx_ring_poll(r, &c, 1));
	EXPECT(c.res == -ENOSPC && c.len == 24);
	pmidx_ring_close(r);
	pmidx_index_close(idx);
	return 0;
}

static int test_ring_batch(void)
{
	struct pmidx_index *idx = mock_index();
	struct pmidx_req q[3], bad[2];
	struct pmidx_ring *r;
	struct log l = { 0 };
	char out[8];
	int batches;

	EXPECT(idx);
	EXPECT_EQ(0, pmidx_ring_open(&mock_pool, 4, 0, &r));
	q[0] = (struct pmidx_req){ .idx = idx, .type = PMIDX_REQ_PUT,
		.key = "k", .key_len = 1, .val = "val", .val_len = 3 };
	q[1] = (struct pmidx_req){ .idx = idx, .type = PMIDX_REQ_GET,
		.key = "k", .key_len = 1, .val = out, .val_len = sizeof(out) };
	q[2] = (struct pmidx_req){ .idx = idx, .type = PMIDX_REQ_DEL,
		.key = "nope", .key_len = 4 };
	bad[0] = q[0];
	bad[1] = (struct pmidx_req){ .idx = idx, .type = PMIDX_REQ_DEL };
	batches = mock_batches();
	EXPECT_EQ(0, pmidx_ring_batch(r, q, 3, log_done, &l));
	EXPECT_EQ(0, pmidx_ring_batch(r, bad, 2, log_done, &l));
	EXPECT_EQ(-EINVAL, pmidx_ring_batch(r, q, 0, log_done, &l));
	EXPECT_EQ(-EINVAL, pmidx_ring_batch(r, q, PMIDX_BATCH_MAX + 1, log_done, &l));
	EXPECT_EQ(2, pmidx_ring_wait(r, 2));
	EXPECT_EQ(batches + 2, mock_batches());
	EXPECT(!l.c[0].res && l.c[0].type == PMIDX_REQ_BATCH && l.c[0].count == 1);
	EXPECT(!q[0].res && !q[1].res && q[1].val_len == 3 && !memcmp(out, "val", 3));
	EXPECT_EQ(-ENOENT, q[2].res);
	/* refused as a whole: the synchronous ring knows which request */
	EXPECT_EQ(-EINVAL, l.c[1].res);
	EXPECT(bad[0].res == -ECANCELED && bad[1].res == -EINVAL);
	pmidx_ring_close(r);
	pmidx_index_close(idx);
	return 0;
}

/* A chain: each completion submits the next put until @left runs out. */
struct chain {
	struct pmidx_index *idx;
	int left, done, wait_ret, poll_ret;
	uint8_t key[8];
};

static void chain_done(struct pmidx_ring *r, const struct pmidx_completion *c)
{
	struct chain *ch = c->user_data;

	ch->done++;
	ch->wait_ret = pmidx_ring_wait(r, 1);
	ch->poll_ret = pmidx_ring_poll(r, NULL, 0);
	if (c->res || !ch->left--)
		return;
	key_of(ch->left, ch->key);
	pmidx_ring_put(r, ch->idx, ch->key, 8, "c", 1, 0, chain_done, ch);
}

static int test_ring_callback_resubmits(void)
{
	struct pmidx_index *idx = mock_index();
	struct chain ch = { .idx = idx, .left = 100 };
	struct pmidx_ring *r;
	uint64_t keys;

	EXPECT(idx);
	EXPECT_EQ(0, pmidx_ring_open(&mock_pool, 1, 0, &r));
	EXPECT_EQ(0, pmidx_ring_put(r, idx, "first", 5, "c", 1, 0, chain_done, &ch));
	EXPECT_EQ(101, pmidx_ring_wait(r, UINT_MAX));
	EXPECT_EQ(101, ch.done);
	EXPECT_EQ(-EDEADLK, ch.wait_ret);
	EXPECT_EQ(-EDEADLK, ch.poll_ret);
	EXPECT_EQ(0, pmidx_check(idx, &keys));
	EXPECT_EQ(101, keys);
	pmidx_ring_close(r);
	pmidx_index_close(idx);
	return 0;
}

static int test_ring_close_queued(void)
{
	struct pmidx_index *idx = mock_index();
	struct pmidx_ring *r;
	struct log l = { 0 };
	int cmds;

	EXPECT(idx);
	EXPECT_EQ(0, pmidx_ring_open(&mock_pool, 8, 0, &r));
	cmds = mock_cmds();
	EXPECT_EQ(0, pmidx_ring_put(r, idx, "a", 1, "v", 1, 0, log_done, &l));
	EXPECT_EQ(0, pmidx_ring_put(r, idx, "b", 1, "v", 1, 0, NULL, NULL));
	pmidx_ring_close(r);			/* queued: never run */
	EXPECT_EQ(cmds, mock_cmds());
	EXPECT_EQ(0, l.n);
	EXPECT_EQ(0, pmidx_ring_open(&mock_pool, 8, 0, &r));
	EXPECT_EQ(0, pmidx_ring_put(r, idx, "a", 1, "v", 1, 0, log_done, &l));
	EXPECT_EQ(1, pmidx_ring_submit(r));
	pmidx_ring_close(r);			/* ran; callback dropped */
	EXPECT_EQ(cmds + 1, mock_cmds());
	EXPECT_EQ(0, l.n);
	pmidx_ring_close(NULL);
	pmidx_index_close(idx);
	return 0;
}

static int test_ring_open_args(void)
{
	struct pmidx_ring *r = (void *)1;

	EXPECT_EQ(-EINVAL, pmidx_ring_open(&mock_pool, 0, 0, &r));
	EXPECT(!r);
	EXPECT_EQ(-EINVAL, pmidx_ring_open(&mock_pool, PMIDX_RING_DEPTH_MAX + 1, 0, &r));
	EXPECT_EQ(-EINVAL, pmidx_ring_open(&mock_pool, 1, 1U << 7, &r));
	EXPECT_EQ(-EINVAL, pmidx_ring_open(NULL, 1, 0, &r));
	EXPECT_EQ(-EOPNOTSUPP, pmidx_ring_open(&mock_pool, 1,
					       PMIDX_RING_NO_FALLBACK, &r));
	EXPECT_EQ(-EINVAL, pmidx_ring_open(&mock_pool, 1, PMIDX_RING_SYNC |
					   PMIDX_RING_NO_FALLBACK, &r));
	return 0;
}

/* ---- io_uring machinery on the host ------------------------------------- */

/* The mock pool with @fd as its char device (for io_uring). */
static struct pmidx_pool pool_on(int fd)
{
	struct pmidx_pool p = mock_pool;

	p.fd = fd;
	return p;
}

static int test_ring_fallback(void)
{
	struct pmidx_index *idx = mock_index();
	struct pmidx_ring *r;
	struct pmidx_pool p;
	struct log l = { 0 };
	int fds[2], why = 0;
	char v[4];

	EXPECT(idx);
	EXPECT_EQ(0, pipe(fds));
	p = pool_on(fds[0]);
	idx->pool = &p;
	/* a pipe has no uring_cmd: the ring falls back to plain commands */
	EXPECT_EQ(0, pmidx_ring_open(&p, 4, 0, &r));
	EXPECT_EQ(PMIDX_RING_MODE_SYNC, pmidx_ring_mode(r, &why));
	EXPECT(why < 0);
	printf("#   pipe: fallback because %s\n", pmidx_strerror(why));
	EXPECT_EQ(0, pmidx_ring_put(r, idx, "k", 1, "v", 1, 0, log_done, &l));
	EXPECT_EQ(0, pmidx_ring_get(r, idx, "k", 1, v, 4, log_done, &l));
	EXPECT_EQ(2, pmidx_ring_wait(r, 2));
	EXPECT(!l.c[0].res && !l.c[1].res && l.c[1].len == 1 && v[0] == 'v');
	pmidx_ring_close(r);
	EXPECT_EQ(why, pmidx_ring_open(&p, 4, PMIDX_RING_NO_FALLBACK, &r));
	/* forced by the environment: no reason to report */
	setenv("PMIDX_RING_SYNC", "1", 1);
	EXPECT_EQ(0, pmidx_ring_open(&p, 4, 0, &r));
	EXPECT_EQ(PMIDX_RING_MODE_SYNC, pmidx_ring_mode(r, &why));
	EXPECT_EQ(0, why);
	pmidx_ring_close(r);
	unsetenv("PMIDX_RING_SYNC");
	close(fds[0]);
	close(fds[1]);
	pmidx_index_close(idx);
	return 0;
}

struct count {
	int n, bad;
};

static void count_done(struct pmidx_ring *r, const struct pmidx_completion *c)
{
	struct count *cnt = c->user_data;

	(void)r;
	cnt->n++;
	cnt->bad += c->res != 0;
}

/*
 * /dev/null completes every uring_cmd with res 0: deep queues, callbacks
 * and polling, slot reuse and teardown run through real io_uring rings.
 */
static int test_ring_uring_null(void)
{
	struct pmidx_index *idx = mock_index();
	struct pmidx_completion out[64];
	struct count cnt = { 0 };
	struct pmidx_ring *r;
	struct pmidx_pool p;
	struct pmidx_req q[16];
	int fd, i, polled = 0, ret;

	EXPECT(idx);
	fd = open("/dev/null", O_RDWR);
	EXPECT(fd >= 0);
	p = pool_on(fd);
	idx->pool = &p;
	ret = pmidx_ring_open(&p, 64, PMIDX_RING_NO_FALLBACK, &r);
	if (ret) {
		printf("#   SKIP: no uring_cmd on /dev/null here (%s)\n",
		       pmidx_strerror(ret));
		close(fd);
		pmidx_index_close(idx);
		return 0;
	}
	EXPECT_EQ(PMIDX_RING_MODE_URING, pmidx_ring_mode(r, NULL));
	for (i = 0; i < 10000; i++) {
		ret = i & 1 ? pmidx_ring_put(r, idx, "k", 1, "v", 1, 0, count_done, &cnt) :
			      pmidx_ring_get(r, idx, "k", 1, out, 1, NULL, &cnt);
		if (ret == -EBUSY) {
			EXPECT(pmidx_ring_wait(r, 1) >= 0);
			ret = pmidx_ring_poll(r, out, 64);
			EXPECT(ret >= 0);
			polled += ret;
			i--;
			continue;
		}
		EXPECT_EQ(0, ret);
	}
	EXPECT(pmidx_ring_wait(r, UINT_MAX) >= 0);
	while ((ret = pmidx_ring_poll(r, out, 64)) > 0)
		polled += ret;
	EXPECT_EQ(5000, cnt.n);
	EXPECT_EQ(0, cnt.bad);
	EXPECT_EQ(5000, polled);
	for (i = 0; i < 16; i++)
		q[i] = (struct pmidx_req){ .idx = idx, .type = PMIDX_REQ_DEL,
					   .key = "k", .key_len = 1, .res = 1 };
	EXPECT_EQ(0, pmidx_ring_batch(r, q, 16, count_done, &cnt));
	EXPECT_EQ(1, pmidx_ring_wait(r, 1));
	EXPECT_EQ(0, q[15].res);
	/* close with operations in flight and queued */
	for (i = 0; i < 32; i++)
		EXPECT_EQ(0, pmidx_ring_put(r, idx, "k", 1, "v", 1, 0, count_done, &cnt));
	EXPECT_EQ(32, pmidx_ring_submit(r));
	for (i = 0; i < 32; i++)
		EXPECT_EQ(0, pmidx_ring_put(r, idx, "k", 1, "v", 1, 0, count_done, &cnt));
	EXPECT_EQ(64, pmidx_ring_busy(r));
	pmidx_ring_close(r);
	EXPECT_EQ(5001, cnt.n);
	close(fd);
	pmidx_index_close(idx);
	return 0;
}

const struct unit_test ring_tests[] = {
	{ "batch: requests in BATCH commands of 1024, outputs and results", test_batch_sync },
	{ "batch: refused commands, -ECANCELED, nothing the ABI cannot carry", test_batch_refused },
	{ "ring (sync): ops run at submit, callbacks in wait, outputs", test_ring_sync_callbacks },
	{ "ring (sync): polling, -EBUSY until completions are taken", test_ring_poll },
	{ "ring (sync): raw SCAN into a buffer, pmidx_rec_parse", test_ring_scan },
	{ "ring (sync): async BATCH, refused BATCH", test_ring_batch },
	{ "ring (sync): callbacks resubmit, cannot wait or poll", test_ring_callback_resubmits },
	{ "ring (sync): close drops queued ops and completions", test_ring_close_queued },
	{ "ring: open arguments, NO_FALLBACK", test_ring_open_args },
	{ "ring: fallback when the file has no uring_cmd, PMIDX_RING_SYNC", test_ring_fallback },
	{ "ring (io_uring on /dev/null): deep queue, callbacks + poll, teardown", test_ring_uring_null },
	{ NULL, NULL },
};
