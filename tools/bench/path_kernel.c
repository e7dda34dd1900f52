// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel path: operations run inside the kernel through the exported
 * in-kernel API, driven by the sample client samples/pmidx_dentry
 * (insmod it first). Each thread opens /dev/pmidx_dentry, a session of
 * text commands, one per write(2); read(2) returns the last command's
 * output:
 *
 *   open POOL INDEX                      POOL: pmidxN (or a device path)
 *   bench put|get|del FIRST COUNT VSIZE  COUNT ops on the 8-byte
 *                                        big-endian keys FIRST..
 *   -> "ops=N failed=N ns=NS"
 *
 * The client runs the operations back to back on consecutive keys, so
 * only load, insert, update, C and delete are possible, always on
 * sequential keys (the distribution does not apply), with 8-byte keys
 * and values of 8..4096 bytes (the client's limits). Throughput is
 * measured around the commands; latency is only the mean in-kernel time
 * per operation (NS / N).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

#define DENTRY_DEV	"/dev/pmidx_dentry"
#define KERNEL_VAL_MAX	4096	/* the client's BENCH_VAL_MAX */
#define KERNEL_CHUNK	100000	/* keys per bench command (progress) */

/* One command; its output line into @out (may be NULL). */
static int session_cmd(int fd, const char *cmd, char *out, size_t len)
{
	ssize_t n;

	if (write(fd, cmd, strlen(cmd)) < 0)
		return -errno;
	if (!out)
		return 0;
	n = read(fd, out, len - 1);
	if (n < 0)
		return -errno;
	out[n] = 0;
	return 0;
}

/* "bench OP FIRST COUNT VSIZE": add its outcome to @t. */
static int kernel_bench(struct bench_thread *t, int fd, const char *op,
			uint64_t first, uint64_t count, unsigned int vsize)
{
	uint64_t ops, failed, ns;
	char cmd[128], out[256];
	int ret;

	snprintf(cmd, sizeof(cmd), "bench %s %" PRIu64 " %" PRIu64 " %u\n",
		 op, first, count, vsize);
	ret = session_cmd(fd, cmd, out, sizeof(out));
	if (ret) {
		snprintf(t->why, sizeof(t->why), "%.*s", (int)strlen(cmd) - 1, cmd);
		return ret;
	}
	if (sscanf(out, "ops=%" SCNu64 " failed=%" SCNu64 " ns=%" SCNu64,
		   &ops, &failed, &ns) != 3 || ops != count) {
		snprintf(t->why, sizeof(t->why), "unexpected reply \"%.60s\"", out);
		return -EPROTO;
	}
	t->kernel_ns += ns;
	t->errors += failed;
	atomic_fetch_add_explicit(&t->done, ops, memory_order_relaxed);
	return 0;
}

/* The phase's op and key range for thread @t: [*first, +t->ops). */
static int kernel_plan(const struct bench_thread *t, const char **op,
		       uint64_t *first, unsigned int *vsize)
{
	const struct bench_cfg *c = t->run->cfg;

	*vsize = 0;
	*first = t->gen.first;
	switch (t->run->wl) {
	case WL_LOAD:
	case WL_UPDATE:
		*op = "put";
		*vsize = c->value_size;
		return 0;
	case WL_INSERT:
		*op = "put";
		*vsize = c->value_size;
		*first += c->keys;
		return 0;
	case WL_C:
		*op = "get";
		return 0;
	case WL_DELETE:
		*op = "del";
		return 0;
	default:
		return -EOPNOTSUPP;
	}
}

static bool wraps(enum bench_wl wl)
{
	return wl == WL_C || wl == WL_UPDATE;
}

static void kernel_thread(struct bench_thread *t)
{
	const struct bench_cfg *c = t->run->cfg;
	uint64_t first, done = 0, n, k;
	unsigned int vsize;
	const char *op;
	char cmd[160];
	int fd;

	t->err = kernel_plan(t, &op, &first, &vsize);
	if (t->err) {
		snprintf(t->why, sizeof(t->why), "workload %s on the kernel path",
			 wl_name(t->run->wl));
		return;
	}
	fd = open(DENTRY_DEV, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		t->err = -errno;
		snprintf(t->why, sizeof(t->why), "%s (insmod pmidx_dentry.ko?)",
			 DENTRY_DEV);
		return;
	}
	snprintf(cmd, sizeof(cmd), "open %s %s\n", t->run->pool_name, c->index);
	t->err = session_cmd(fd, cmd, NULL, 0);
	if (t->err)
		snprintf(t->why, sizeof(t->why), "%.*s", (int)strlen(cmd) - 1, cmd);
	while (!t->err && done < t->ops) {
		k = first;
		n = t->ops - done < KERNEL_CHUNK ? t->ops - done : KERNEL_CHUNK;
		if (wraps(t->run->wl)) {
			/* reads and updates wrap around the loaded keys */
			k = first % c->keys;
			if (c->keys - k < n)
				n = c->keys - k;
		}
		t->err = kernel_bench(t, fd, op, k, n, vsize);
		first += n;
		done += n;
	}
	close(fd);
}

/* The client names the pool: pmidxN, from the char device's path. */
static int kernel_open(struct bench_run *run)
{
	const struct bench_cfg *c = run->cfg;
	const char *base = strrchr(c->target, '/');

	if (c->key_size != PMIDX_U64_KEY_LEN || c->value_size < 8 ||
	    c->value_size > KERNEL_VAL_MAX) {
		fprintf(stderr, "pmidx-bench: the kernel path takes 8-byte keys and 8..%u-byte values\n",
			KERNEL_VAL_MAX);
		return -EINVAL;
	}
	snprintf(run->pool_name, sizeof(run->pool_name), "%s",
		 base ? base + 1 : c->target);
	return 0;
}

static void kernel_close(struct bench_run *run)
{
}

const struct bench_path_ops bench_path_kernel = {
	.name	= "kernel",
	.open	= kernel_open,
	.close	= kernel_close,
	.thread	= kernel_thread,
	.has_pct = false,
};
