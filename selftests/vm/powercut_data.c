// SPDX-License-Identifier: GPL-2.0
/*
 * Guest side of selftests/vm/powercut_data.sh (not a test on its own):
 * writers whose acknowledged operations are logged where the host can
 * read them, and a verifier that checks an index against those logs
 * after a power cut.
 *
 *   powercut_data probe DEV INDEX
 *	exit 0 if the index takes data commands, 4 if its engine is not
 *	built into the module (-EOPNOTSUPP), 1 on any other failure
 *   powercut_data write DEV LOGDIR ROUND SEED INDEX...
 *	PC_WRITERS threads per index put and delete until killed; with
 *	PC_URING_BATCH=N in the environment each writer sends its ops N at
 *	a time in one BATCH command over io_uring (distinct keys per batch)
 *	and an op counts as acknowledged once the batch's CQE is seen
 *   powercut_data verify DEV LOGDIR INDEX [ROUND]
 *	replay the logs of rounds 1..ROUND (ROUND: the one just cut; a
 *	writer that had not started when its round was cut has no log
 *	there), or without ROUND of rounds 1.. while writer 0 has one;
 *	exit 0 if the index holds exactly the acknowledged state (an op in
 *	flight at the last cut may be either)
 *
 * Logs: LOGDIR/INDEX.rROUND.wWRITER.log, one line per event, each
 * written with one write() and fsync()ed before the writer goes on:
 *	I SEQ P KEY VLEN FLAGS	intent to put (value from PC_VALUE)
 *	I SEQ D KEY		intent to delete
 *	A SEQ RET		the kernel's answer
 * An intent without its answer is an op in flight at the cut (up to a
 * batch of them, on distinct keys). The verifier settles each by looking
 * at the index and records the outcomes in LOG.res ("SEQ APPLIED" lines),
 * so later rounds replay a known history.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/stat.h>
#include <liburing.h>
#include "pmidx_data.h"

#define PC_WRITERS	2	/* per index, each with its own keys */
#define PC_KEYS		400	/* per writer */
#define PC_MAX_ROUNDS	64
#define PC_BATCH_MAX	64	/* ops per BATCH (PC_URING_BATCH) */

static uint32_t pc_key(uint32_t w, uint32_t k, char *key)
{
	uint32_t n = snprintf(key, PMIDX_KEY_MAX + 1, "p%u-%05u", w, k), i;
	uint32_t len = k % 37 == 0 ? PMIDX_KEY_MAX : k % 5 == 0 ? 100 : n;

	for (i = n; i < len; i++)
		key[i] = 'a' + (k + i) % 26;
	return len;
}

static void pc_value(uint32_t w, uint32_t round, uint32_t seq, uint32_t len,
		     uint8_t *buf)
{
	uint64_t s = (((uint64_t)w << 48) ^ ((uint64_t)round << 32) ^ seq) *
		     0x9e3779b97f4a7c15ULL | 1, x;
	uint32_t i;

	for (i = 0; i < len; i += 8) {
		x = rng_next(&s);
		memcpy(buf + i, &x, len - i < 8 ? len - i : 8);
	}
}

static uint32_t pc_vlen(uint64_t *s)
{
	uint32_t x = rng_below(s, 100);

	if (x < 25)
		return 8;
	if (x < 50)
		return rng_below(s, 17);
	if (x < 85)
		return 17 + rng_below(s, 1008);
	if (x < 99)
		return 1025 + rng_below(s, 7168);
	return PMIDX_VALUE_MAX;
}

static int open_ctx(const char *dev, const char *index, struct ctx *c)
{
	uint64_t engine;
	int ret;

	c->path = &ioctl_path;
	c->fd = open(dev, O_RDWR | O_CLOEXEC);
	if (c->fd < 0)
		return -errno;
	ret = op_lookup(c, index, &c->index, &engine);
	if (ret)
		close(c->fd);
	return ret;
}

/* ---- probe ---------------------------------------------------------- */

static int cmd_probe(int argc, char **argv)
{
	struct ctx c;
	int ret;

	if (argc != 4)
		return 2;
	ret = open_ctx(argv[2], argv[3], &c);
	if (!ret)
		ret = op_put(&c, "\0probe", 6, "", 0, 0);
	if (ret == -EOPNOTSUPP)
		return 4;
	if (!ret)
		ret = op_del(&c, "\0probe", 6);
	if (ret)
		fprintf(stderr, "probe %s: %s\n", argv[3], strerror(-ret));
	return ret ? 1 : 0;
}

/* ---- write ---------------------------------------------------------- */

struct writer {
	struct ctx	c;
	char		log[512];
	uint32_t	w, round;
	uint64_t	seed;
};

static int log_line(int fd, const char *fmt, ...)
{
	char line[128];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (write(fd, line, n) != n || fsync(fd))
		return -errno;
	return 0;
}

/* One generated op: its intent line is logged before it is sent. */
struct pc_op {
	uint32_t	seq, k, kl, vl;
	uint16_t	flags;
	bool		del;
	char		key[PMIDX_KEY_MAX + 1];
	uint8_t		*val;
};

static void gen_op(struct writer *wr, uint64_t *s, uint32_t seq,
		   struct pc_op *op)
{
	uint32_t x;

	op->seq = seq;
	op->k = rng_below(s, PC_KEYS);
	op->kl = pc_key(wr->w, op->k, op->key);
	x = rng_below(s, 100);
	op->del = x < 20;
	op->flags = !op->del && x < 30 ? PMIDX_PUT_INSERT : 0;
	op->vl = op->del ? 0 : pc_vlen(s);
	if (!op->del)
		pc_value(wr->w, wr->round, seq, op->vl, op->val);
}

static int log_intent(int fd, const struct pc_op *op)
{
	if (op->del)
		return log_line(fd, "I %u D %u\n", op->seq, op->k);
	return log_line(fd, "I %u P %u %u %u\n", op->seq, op->k, op->vl,
			op->flags);
}

static bool expected(int ret)
{
	return !ret || ret == -EEXIST || ret == -ENOENT;
}

/* One op at a time through the ioctl. */
static void write_single(struct writer *wr, int fd, uint64_t *s)
{
	static __thread uint8_t val[PMIDX_VALUE_MAX];
	struct pc_op op = { .val = val };
	uint32_t seq;
	int ret;

	for (seq = 1;; seq++) {
		gen_op(wr, s, seq, &op);
		if (log_intent(fd, &op))
			return;
		ret = op.del ? op_del(&wr->c, op.key, op.kl) :
		      op_put(&wr->c, op.key, op.kl, op.val, op.vl, op.flags);
		if (log_line(fd, "A %u %d\n", seq, ret))
			return;
		if (!expected(ret)) {
			fprintf(stderr, "writer %u: op %u: %s\n", wr->w, seq,
				strerror(-ret));
			return;
		}
	}
}

/* Send @n ops as one BATCH SQE and wait for its CQE. */
static int batch_submit(struct io_uring *ring, int devfd, uint32_t index,
			struct pc_op *ops, struct pmidx_cmd *ents, uint32_t n)
{
	struct pmidx_cmd b = {
		.op = PMIDX_OP_BATCH, .val = uptr(ents),
		.val_len = n * sizeof(*ents), .count = n,
	};
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	struct io_uring_cqe *cqe;
	uint32_t i;
	int ret;

	for (i = 0; i < n; i++)
		ents[i] = (struct pmidx_cmd){
			.op = ops[i].del ? PMIDX_OP_DEL : PMIDX_OP_PUT,
			.flags = ops[i].flags, .index = index,
			.key = uptr(ops[i].key), .key_len = ops[i].kl,
			.val = ops[i].del ? 0 : uptr(ops[i].val),
			.val_len = ops[i].vl,
		};
	memset(sqe, 0, 128);
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = devfd;
	sqe->cmd_op = PMIDX_IOC_CMD;
	memcpy(sqe->cmd, &b, sizeof(b));
	ret = io_uring_submit(ring);
	if (ret != 1)
		return ret < 0 ? ret : -EIO;
	ret = io_uring_wait_cqe(ring, &cqe);
	if (ret)
		return ret;
	ret = cqe->res;
	io_uring_cqe_seen(ring, cqe);
	return ret;
}

/*
 * Batches of @n ops on distinct keys through io_uring: all intents are
 * logged, the batch is sent, and once its CQE is seen every answer is.
 */
static void write_batched(struct writer *wr, int fd, uint64_t *s, uint32_t n)
{
	static __thread uint8_t vals[PC_BATCH_MAX][PMIDX_VALUE_MAX];
	static __thread struct pc_op ops[PC_BATCH_MAX];
	static __thread struct pmidx_cmd ents[PC_BATCH_MAX];
	struct io_uring ring;
	uint32_t seq = 1, i, j;
	int ret;

	if (io_uring_queue_init(4, &ring, IORING_SETUP_SQE128)) {
		fprintf(stderr, "writer %u: no io_uring\n", wr->w);
		return;
	}
	for (;;) {
		for (i = 0; i < n; i++) {
			ops[i].val = vals[i];
			do {	/* distinct keys: each in-flight op settles alone */
				gen_op(wr, s, seq, &ops[i]);
				for (j = 0; j < i && ops[j].k != ops[i].k; j++)
					;
			} while (j < i);
			seq++;
			if (log_intent(fd, &ops[i]))
				goto out;
		}
		ret = batch_submit(&ring, wr->c.fd, wr->c.index, ops, ents, n);
		if (ret) {
			fprintf(stderr, "writer %u: BATCH: %s\n", wr->w,
				strerror(-ret));
			goto out;
		}
		for (i = 0; i < n; i++) {
			ret = (int)(int64_t)ents[i].result;
			if (log_line(fd, "A %u %d\n", ops[i].seq, ret))
				goto out;
			if (!expected(ret)) {
				fprintf(stderr, "writer %u: op %u: %s\n", wr->w,
					ops[i].seq, strerror(-ret));
				goto out;
			}
		}
	}
out:
	io_uring_queue_exit(&ring);
}

static void *writer_main(void *p)
{
	struct writer *wr = p;
	uint64_t s = wr->seed * 0x2545f4914f6cdd1dULL + wr->w * 7919 + wr->round;
	const char *b = getenv("PC_URING_BATCH");
	uint32_t batch = b ? atoi(b) : 0;
	int fd;

	fd = open(wr->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0) {
		perror(wr->log);
		return NULL;
	}
	if (batch)
		write_batched(wr, fd, &s, batch > PC_BATCH_MAX ? PC_BATCH_MAX : batch);
	else
		write_single(wr, fd, &s);
	close(fd);
	return NULL;
}

static int cmd_write(int argc, char **argv)
{
	int nidx = argc - 6, i, j, n = 0;
	struct writer *wr;
	pthread_t *tid;

	if (nidx < 1)
		return 2;
	wr = calloc(nidx * PC_WRITERS, sizeof(*wr));
	tid = calloc(nidx * PC_WRITERS, sizeof(*tid));
	for (i = 0; i < nidx; i++) {
		for (j = 0; j < PC_WRITERS; j++, n++) {
			if (open_ctx(argv[2], argv[6 + i], &wr[n].c)) {
				fprintf(stderr, "write: no index %s\n", argv[6 + i]);
				return 1;
			}
			wr[n].w = j;
			wr[n].round = atoi(argv[4]);
			wr[n].seed = strtoull(argv[5], NULL, 0);
			snprintf(wr[n].log, sizeof(wr[n].log), "%s/%s.r%u.w%u.log",
				 argv[3], argv[6 + i], wr[n].round, j);
		}
	}
	for (i = 0; i < n; i++)
		pthread_create(&tid[i], NULL, writer_main, &wr[i]);
	printf("# %d writers started\n", n);
	fflush(stdout);
	for (i = 0; i < n; i++)
		pthread_join(tid[i], NULL);
	return 1;	/* writers only stop on errors */
}

/* ---- verify --------------------------------------------------------- */

struct kstate {
	bool		present;
	uint32_t	round, seq, vlen;
};

struct op {
	uint32_t	seq, k, vlen, flags;
	char		type;		/* 'P', 'D' */
};

struct verify {
	struct ctx	c;
	const char	*logdir, *index;
	uint32_t	rounds;
	uint64_t	acked, inflight_applied, inflight_not, keys;
	int		errors;
};

static void verr(struct verify *v, const char *fmt, ...)
{
	va_list ap;

	if (v->errors++ >= 20)
		return;
	printf("# %s: ", v->index);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

/* Does the index hold @st for key @k of writer @w? */
static int state_is(struct verify *v, uint32_t w, uint32_t k,
		    const struct kstate *st, bool *same)
{
	static uint8_t want[PMIDX_VALUE_MAX], got[PMIDX_VALUE_MAX];
	char key[PMIDX_KEY_MAX + 1];
	uint32_t kl = pc_key(w, k, key), len = sizeof(got);
	int ret = op_get(&v->c, key, kl, got, &len);

	if (ret && ret != -ENOENT)
		return ret;
	if (!st->present) {
		*same = ret == -ENOENT;
		return 0;
	}
	pc_value(w, st->round, st->seq, st->vlen, want);
	*same = !ret && len == st->vlen && !memcmp(got, want, len);
	return 0;
}

/* The state after @op, acknowledged with @ret. */
static bool apply(struct kstate *st, uint32_t round,
		  const struct op *op, int ret, bool check)
{
	bool ok;

	if (op->type == 'D') {
		ok = ret == (st->present ? 0 : -ENOENT);
		st->present = false;
	} else if ((op->flags & PMIDX_PUT_INSERT) && st->present) {
		ok = ret == -EEXIST;
	} else {
		ok = ret == 0;
		*st = (struct kstate){ true, round, op->seq, op->vlen };
	}
	return ok || !check;
}

/* The outcome LOG.res recorded for op @seq: 1, 0, or -1 if none. */
static int recorded(const char *res, uint32_t seq)
{
	uint32_t s, applied;
	int found = -1;
	FILE *f = fopen(res, "r");

	if (!f)
		return -1;
	while (fscanf(f, "%u %u", &s, &applied) == 2)
		if (s == seq)
			found = !!applied;
	fclose(f);
	return found;
}

/* Settle an op in flight at the end of a log: read LOG.res or look. */
static int settle(struct verify *v, const char *log, bool last, uint32_t w,
		  uint32_t round, struct kstate *st, const struct op *op)
{
	struct kstate before = *st, after = *st;
	bool is_old, is_new;
	char res[600];
	int applied;
	FILE *f;

	snprintf(res, sizeof(res), "%s.res", log);
	applied = recorded(res, op->seq);
	if (applied >= 0) {
		if (applied)
			apply(st, round, op, 0, false);
		return 0;
	}
	if (!last) {
		verr(v, "%s: op %u in flight was never settled", log, op->seq);
		return -1;
	}
	apply(&after, round, op, 0, false);
	if (state_is(v, w, op->k, &before, &is_old) ||
	    state_is(v, w, op->k, &after, &is_new)) {
		verr(v, "%s: cannot read key %u", log, op->k);
		return -1;
	}
	if (!is_old && !is_new) {
		verr(v, "%s: op %u in flight (%c key %u) left neither the old nor the new state",
		     log, op->seq, op->type, op->k);
		return -1;
	}
	applied = is_new && !is_old;
	if (applied) {
		*st = after;
		v->inflight_applied++;
	} else {
		v->inflight_not++;
	}
	f = fopen(res, "a");
	if (!f || fprintf(f, "%u %u\n", op->seq, applied) < 0 || fflush(f) ||
	    fsync(fileno(f)) || fclose(f)) {
		verr(v, "%s: cannot record the outcome", res);
		return -1;
	}
	return 0;
}

static int parse_intent(const char *line, struct op *op)
{
	*op = (struct op){ 0 };
	if (sscanf(line, "I %u P %u %u %u", &op->seq, &op->k, &op->vlen,
		   &op->flags) == 4)
		op->type = 'P';
	else if (sscanf(line, "I %u D %u", &op->seq, &op->k) == 2)
		op->type = 'D';
	return op->type && op->k < PC_KEYS && op->vlen <= PMIDX_VALUE_MAX ? 0 : -1;
}

/*
 * Replay one log into @keys; return -1 when it contradicts itself.
 * Intents may run ahead of answers by up to a batch; answers come in
 * intent order, and a batch's pending ops have distinct keys.
 */
static int replay(struct verify *v, const char *log, bool last, uint32_t w,
		  uint32_t round, struct kstate *keys)
{
	struct op pend[PC_BATCH_MAX];
	uint32_t head = 0, npend = 0, i, seq;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int ret, err = 0;
	FILE *f = fopen(log, "r");

	if (!f)
		return -1;
	while ((n = getline(&line, &cap, f)) > 0 && !err) {
		if (line[n - 1] != '\n')
			break;		/* torn last line: never acted on */
		if (line[0] == 'I') {
			if (head + npend == PC_BATCH_MAX) {
				verr(v, "%s: more than %u ops in flight", log,
				     PC_BATCH_MAX);
				err = -1;
				break;
			}
			if (!npend)
				head = 0;
			if (parse_intent(line, &pend[head + npend])) {
				verr(v, "%s: bad intent line: %s", log, line);
				err = -1;
			}
			npend++;
		} else if (line[0] == 'A') {
			struct op *op = &pend[head];

			if (!npend || sscanf(line, "A %u %d", &seq, &ret) != 2 ||
			    seq != op->seq) {
				verr(v, "%s: bad answer line: %s", log, line);
				err = -1;
				break;
			}
			if (!apply(&keys[op->k], round, op, ret, true)) {
				verr(v, "%s: op %u (%c key %u) answered %d, against the acknowledged history",
				     log, op->seq, op->type, op->k, ret);
				err = -1;
			}
			v->acked++;
			head++;
			npend--;
		}
	}
	free(line);
	fclose(f);
	for (i = 0; !err && i < npend; i++)
		err = settle(v, log, last, w, round, &keys[pend[head + i].k],
			     &pend[head + i]);
	return err;
}

static bool log_exists(const struct verify *v, uint32_t round, uint32_t w,
		       char *path, size_t len)
{
	struct stat st;

	snprintf(path, len, "%s/%s.r%u.w%u.log", v->logdir, v->index, round, w);
	return !stat(path, &st);
}

/* Every key of writer @w holds its replayed state. */
static void compare(struct verify *v, uint32_t w, const struct kstate *keys)
{
	uint32_t k;
	bool same;

	for (k = 0; k < PC_KEYS; k++) {
		if (state_is(v, w, k, &keys[k], &same) || !same)
			verr(v, "writer %u key %u: want %s (round %u op %u, %u bytes)",
			     w, k, keys[k].present ? "value" : "no key",
			     keys[k].round, keys[k].seq, keys[k].vlen);
		v->keys += keys[k].present;
	}
}

/* Nothing but the writers' keys, in order; the checker agrees. */
static void whole_index(struct verify *v)
{
	static uint8_t buf[1 << 20];
	uint8_t last[PMIDX_KEY_MAX];
	uint32_t last_len = 0, off, i, kl, vl;
	const uint8_t *k, *val;
	struct scan_req r;
	uint64_t n = 0, keys;
	int ret;

	do {
		r = (struct scan_req){ .start = last, .start_len = last_len,
			.flags = last_len ? PMIDX_SCAN_AFTER : 0, .count = 4096,
			.buf = buf, .len = sizeof(buf) };
		ret = op_scan(&v->c, &r);
		if (ret) {
			verr(v, "scan: %s", strerror(-ret));
			return;
		}
		for (off = 0, i = 0; i < r.count; i++, n++) {
			if (rec_next(buf, r.len, &off, &k, &kl, &val, &vl) ||
			    (last_len && key_cmp(last, last_len, k, kl) >= 0)) {
				verr(v, "scan: malformed or unordered record");
				return;
			}
			memcpy(last, k, kl);
			last_len = kl;
		}
	} while (r.flags & PMIDX_SCAN_MORE);
	if (n != v->keys)
		verr(v, "scan returns %llu keys, want %llu", (unsigned long long)n,
		     (unsigned long long)v->keys);
	ret = op_check(&v->c, &keys);
	if (ret)
		verr(v, "CHECK: %s", strerror(-ret));
	else if (keys != v->keys)
		verr(v, "CHECK counts %llu keys, want %llu",
		     (unsigned long long)keys, (unsigned long long)v->keys);
}

static int cmd_verify(int argc, char **argv)
{
	struct kstate *keys = calloc(PC_KEYS, sizeof(*keys));
	struct verify v = { .logdir = argv[3], .index = argv[4] };
	char log[512];
	uint32_t w, r, last;
	int ret;

	if (argc != 5 && argc != 6)
		return 2;
	ret = open_ctx(argv[2], v.index, &v.c);
	if (ret) {
		printf("# %s: %s\n", v.index, strerror(-ret));
		return 1;
	}
	if (argc == 6)
		last = strtoul(argv[5], NULL, 10);
	else
		for (last = 0; log_exists(&v, last + 1, 0, log, sizeof(log));
		     last++)
			;
	for (w = 0; w < PC_WRITERS; w++) {
		memset(keys, 0, PC_KEYS * sizeof(*keys));
		for (r = 1; r <= last; r++)
			if (log_exists(&v, r, w, log, sizeof(log)) &&
			    replay(&v, log, r == last, w, r, keys))
				break;
		compare(&v, w, keys);
	}
	whole_index(&v);
	printf("# %s: %u rounds, %llu acknowledged ops, ops in flight at the last cut: %llu applied, %llu not; %llu keys; %d errors\n",
	       v.index, last, (unsigned long long)v.acked,
	       (unsigned long long)v.inflight_applied,
	       (unsigned long long)v.inflight_not, (unsigned long long)v.keys,
	       v.errors);
	free(keys);
	return v.errors ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "probe"))
		return cmd_probe(argc, argv);
	if (argc >= 2 && !strcmp(argv[1], "write"))
		return cmd_write(argc, argv);
	if (argc >= 2 && !strcmp(argv[1], "verify"))
		return cmd_verify(argc, argv);
	fprintf(stderr, "usage: powercut_data probe DEV INDEX | write DEV LOGDIR ROUND SEED INDEX... | verify DEV LOGDIR INDEX\n");
	return 2;
}
