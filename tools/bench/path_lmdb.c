// SPDX-License-Identifier: GPL-2.0
/*
 * The lmdb path: the same workloads on LMDB (Debian's liblmdb), the store
 * a user would otherwise run, as the baseline. No pmidx is involved: an
 * environment in the directory DIR of --path lmdb:DIR (on ext4 mounted
 * -o dax, LMDB's map is the persistent memory itself), opened with
 *
 *   MDB_WRITEMAP  writes go straight into the shared map, no write(2);
 *   and LMDB's default durability: every write transaction is synced at
 *   its commit (msync of the map, then of the meta page). pmidx answers a
 *   write once it is durable, so MDB_NOSYNC, MDB_NOMETASYNC or
 *   MDB_MAPASYNC would measure something else.
 *
 * One database (the unnamed main one); keys and values exactly as the
 * other paths make them (bench_key(), bench_value()). LMDB's default key
 * order is memcmp's, which is the order of the big-endian key numbers,
 * so scans see the records the pmidx paths see.
 *
 * Each thread runs its share in groups of --batch operations (default 1),
 * one transaction per group: a write transaction (begin ... commit) when
 * the group holds a put or a delete, else a read transaction, from one
 * read-only handle per thread (mdb_txn_renew() ... mdb_txn_reset(): the
 * way LMDB recommends to reuse a reader slot). So --batch 1 is one
 * transaction per operation, and one sync per write. Gets copy the value
 * out; scans walk a cursor from the start key (MDB_SET_RANGE, then
 * MDB_NEXT), copying each record out in the layout of a pmidx SCAN's
 * output. Latency is per group, from the transaction's begin to its
 * commit (or reset), shared by its operations like a BATCH's. LMDB runs
 * one write transaction at a time: the writers of several threads queue
 * on its lock.
 *
 * Unless --no-create, DIR's data.mdb and lock.mdb are removed first. The
 * map is sized from the keys a run can reach times what one record takes
 * in LMDB's pages, with headroom (lmdb_map_size()).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"

#ifndef STATX_ATTR_DAX
#define STATX_ATTR_DAX		0x00200000
#endif

#define LMDB_PAGE		4096ULL
#define LMDB_NODE_MAX		2040	/* larger records go to overflow pages */
#define LMDB_HEADROOM		(32ULL << 20)
#define LMDB_READERS_MIN	126	/* LMDB's default */

struct lmdb_env {
	MDB_env		*env;
	MDB_dbi		dbi;
};

struct lmdb_thread {
	struct bench_thread	*t;
	struct lmdb_env		*db;
	MDB_txn			*rtxn;	/* read handle, reset between groups */
	struct bench_op		*ops;	/* one group */
	struct op_buf		b;
};

/* An LMDB return code as a negative errno (LMDB's own codes are < 0). */
static int lmdb_errno(int rc)
{
	switch (rc) {
	case MDB_SUCCESS:
		return 0;
	case MDB_NOTFOUND:
		return -ENOENT;
	case MDB_KEYEXIST:
		return -EEXIST;
	case MDB_MAP_FULL:
	case MDB_TXN_FULL:
	case MDB_CURSOR_FULL:
	case MDB_PAGE_FULL:
		return -ENOSPC;
	case MDB_READERS_FULL:
	case MDB_TLS_FULL:
	case MDB_DBS_FULL:
		return -EMFILE;
	case MDB_MAP_RESIZED:
		return -EAGAIN;
	case MDB_BAD_VALSIZE:
		return -EMSGSIZE;
	case MDB_INVALID:
	case MDB_VERSION_MISMATCH:
	case MDB_INCOMPATIBLE:
		return -EPROTO;
	case MDB_CORRUPTED:
	case MDB_PAGE_NOTFOUND:
	case MDB_PANIC:
		return -EUCLEAN;
	case MDB_BAD_TXN:
	case MDB_BAD_RSLOT:
	case MDB_BAD_DBI:
		return -EINVAL;
	default:
		return rc > 0 ? -rc : -EIO;
	}
}

/* A fatal error of thread @t: its errno, and what failed in t->why. */
static int lmdb_fail(struct bench_thread *t, const char *what, int rc)
{
	snprintf(t->why, sizeof(t->why), "%s: %s", what, mdb_strerror(rc));
	return lmdb_errno(rc);
}

/*
 * The map: every key a run can reach (loaded, then inserted by insert or
 * E), each a leaf node (8-byte header, 2-byte slot, key, value) or, when
 * larger than a node may be, a node pointing to overflow pages; times 4
 * for half-full pages, branch pages and the copies a commit leaves to
 * the free list; plus LMDB_HEADROOM. The file is sparse until written.
 */
static uint64_t lmdb_map_size(const struct bench_cfg *c)
{
	uint64_t n = c->keys, rec = 8 + c->key_size + c->value_size;
	unsigned int i;

	if (c->wl == WL_INSERT || c->wl == WL_E)
		n += c->ops;
	for (i = 0; i < c->nphases; i++)
		if (c->phases[i] == WL_INSERT || c->phases[i] == WL_E)
			n += c->ops;
	if (rec > LMDB_NODE_MAX)
		rec = 8 + c->key_size + 8 +
		      (16 + c->value_size + LMDB_PAGE - 1) / LMDB_PAGE * LMDB_PAGE;
	return ((n * (rec + 2) * 4 + LMDB_HEADROOM) | (LMDB_PAGE - 1)) + 1;
}

/* ---- one group of operations in one transaction ------------------------- */

/*
 * Copy one scan record out as a SCAN returns it (struct pmidx_rec: key
 * and value lengths, then key and value, padded to 8); its size, 0 when
 * the buffer is full.
 */
static size_t scan_rec(struct op_buf *b, size_t off, const MDB_val *k,
		       const MDB_val *v)
{
	uint32_t rec[2] = { k->mv_size, v->mv_size };
	size_t len = (sizeof(rec) + k->mv_size + v->mv_size + 7) & ~7UL;

	if (len > b->out_len - off)
		return 0;
	memcpy(b->out + off, &rec, sizeof(rec));
	memcpy(b->out + off + sizeof(rec), k->mv_data, k->mv_size);
	memcpy(b->out + off + sizeof(rec) + k->mv_size, v->mv_data, v->mv_size);
	return len;
}

/* Up to @n records from @key on (a key past the last: none, no error). */
static int lmdb_scan(MDB_txn *txn, MDB_dbi dbi, MDB_val *key, uint32_t n,
		     struct op_buf *b)
{
	MDB_cursor *cur;
	size_t off = 0, len;
	MDB_val val;
	uint32_t i;
	int rc;

	rc = mdb_cursor_open(txn, dbi, &cur);
	if (rc)
		return rc;
	rc = mdb_cursor_get(cur, key, &val, MDB_SET_RANGE);
	for (i = 0; !rc && i < n; i++) {
		len = scan_rec(b, off, key, &val);
		if (!len)
			break;
		off += len;
		if (i + 1 < n)
			rc = mdb_cursor_get(cur, key, &val, MDB_NEXT);
	}
	mdb_cursor_close(cur);
	return rc == MDB_NOTFOUND ? 0 : rc;
}

/* Operation @op in @txn; LMDB's return code. */
static int lmdb_op(struct lmdb_thread *lt, MDB_txn *txn,
		   const struct bench_op *op, uint64_t stamp)
{
	const struct bench_cfg *c = lt->t->run->cfg;
	MDB_val key = { c->key_size, lt->b.key }, val;
	MDB_dbi dbi = lt->db->dbi;
	int rc;

	bench_key(c, op->key, lt->b.key);
	switch (op->kind) {
	case OP_READ:
		rc = mdb_get(txn, dbi, &key, &val);
		if (!rc)
			memcpy(lt->b.out, val.mv_data, val.mv_size < lt->b.out_len ?
			       val.mv_size : lt->b.out_len);
		return rc;
	case OP_INSERT:
	case OP_UPDATE:
		bench_value(c, stamp, lt->b.val);
		val = (MDB_val){ c->value_size, lt->b.val };
		return mdb_put(txn, dbi, &key, &val,
			       op->kind == OP_INSERT ? MDB_NOOVERWRITE : 0);
	case OP_DELETE:
		return mdb_del(txn, dbi, &key, NULL);
	default:
		return lmdb_scan(txn, dbi, &key, op->scan_len, &lt->b);
	}
}

static bool group_writes(const struct bench_op *ops, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (ops[i].kind != OP_READ && ops[i].kind != OP_SCAN)
			return true;
	return false;
}

static int txn_start(struct lmdb_thread *lt, bool write, MDB_txn **txn)
{
	struct bench_thread *t = lt->t;
	int rc;

	if (write) {
		rc = mdb_txn_begin(lt->db->env, NULL, 0, txn);
		return rc ? lmdb_fail(t, "mdb_txn_begin", rc) : 0;
	}
	if (lt->rtxn)
		rc = mdb_txn_renew(lt->rtxn);
	else
		rc = mdb_txn_begin(lt->db->env, NULL, MDB_RDONLY, &lt->rtxn);
	*txn = lt->rtxn;
	return rc ? lmdb_fail(t, "read transaction", rc) : 0;
}

/*
 * The group lt->ops[0..n) in one transaction; the operations that met
 * an expected error (a key gone, already there) into *@failed. 0, or the
 * negative errno of a fatal error (t->why says which).
 */
static int lmdb_group(struct lmdb_thread *lt, unsigned int n, uint64_t stamp,
		      uint64_t *failed)
{
	bool write = group_writes(lt->ops, n);
	static const char *const calls[] = {
		[OP_READ] = "mdb_get", [OP_UPDATE] = "mdb_put",
		[OP_INSERT] = "mdb_put", [OP_SCAN] = "mdb_cursor_get",
		[OP_DELETE] = "mdb_del",
	};
	struct bench_thread *t = lt->t;
	unsigned int i;
	MDB_txn *txn;
	int rc, err;

	err = txn_start(lt, write, &txn);
	if (err)
		return err;
	for (i = 0; i < n && !err; i++) {
		rc = lmdb_op(lt, txn, &lt->ops[i], stamp + i);
		err = lmdb_errno(rc);
		*failed += err != 0;
		if (bench_err_expected(err))
			err = 0;
		else
			err = lmdb_fail(t, calls[lt->ops[i].kind], rc);
	}
	if (!write) {
		mdb_txn_reset(txn);
		return err;
	}
	if (err) {
		mdb_txn_abort(txn);
		return err;
	}
	rc = mdb_txn_commit(txn);
	return rc ? lmdb_fail(t, "mdb_txn_commit", rc) : 0;
}

static void lmdb_thread(struct bench_thread *t)
{
	const struct bench_cfg *c = t->run->cfg;
	struct lmdb_thread lt = { .t = t, .db = t->run->priv };
	uint64_t i = 0, t0, failed;
	unsigned int j, n;

	lt.ops = calloc(c->batch, sizeof(*lt.ops));
	t->err = lt.ops ? op_buf_alloc(&lt.b, c) : -ENOMEM;
	while (!t->err && i < t->ops) {
		n = t->ops - i < c->batch ? t->ops - i : c->batch;
		for (j = 0; j < n; j++)
			wl_next(&t->gen, t->run->wl, &lt.ops[j]);
		failed = 0;
		t0 = bench_now_ns();
		t->err = lmdb_group(&lt, n, i, &failed);
		if (t->err)
			break;
		bench_done(t, bench_now_ns() - t0, n, failed);
		i += n;
	}
	if (lt.rtxn)
		mdb_txn_abort(lt.rtxn);
	if (lt.ops)
		op_buf_free(&lt.b);
	free(lt.ops);
}

/* ---- the environment ------------------------------------------------------ */

/* A fresh environment: DIR made if missing, its files removed. */
static int lmdb_fresh(const char *dir)
{
	static const char *const files[] = { "data.mdb", "lock.mdb" };
	char path[PATH_MAX];
	unsigned int i;

	if (mkdir(dir, 0755) && errno != EEXIST)
		return -errno;
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		if (unlink(path) && errno != ENOENT)
			return -errno;
	}
	return 0;
}

/* Say so (once) when the map is in the page cache, not on DAX. */
static void lmdb_dax_note(const char *dir)
{
	static bool said;
	char path[PATH_MAX];
	struct statx sx;

	snprintf(path, sizeof(path), "%s/data.mdb", dir);
	if (said || statx(AT_FDCWD, path, 0, 0, &sx) ||
	    !(sx.stx_attributes_mask & STATX_ATTR_DAX))
		return;
	said = !(sx.stx_attributes & STATX_ATTR_DAX);
	if (said)
		fprintf(stderr, "pmidx-bench: lmdb: %s is not DAX (the page cache): "
			"ext4 or xfs on a pmem device, mounted -o dax, is the baseline\n",
			path);
}

static int lmdb_open_env(const struct bench_cfg *c, struct lmdb_env *db)
{
	unsigned int readers = c->threads + 2;
	MDB_txn *txn;
	int rc;

	rc = mdb_env_create(&db->env);
	if (rc)
		return rc;
	rc = mdb_env_set_mapsize(db->env, lmdb_map_size(c));
	if (!rc)
		rc = mdb_env_set_maxreaders(db->env, readers > LMDB_READERS_MIN ?
					    readers : LMDB_READERS_MIN);
	if (!rc)
		rc = mdb_env_open(db->env, c->target, MDB_WRITEMAP, 0644);
	if (!rc)
		rc = mdb_txn_begin(db->env, NULL, 0, &txn);
	if (!rc) {
		rc = mdb_dbi_open(txn, NULL, 0, &db->dbi);
		if (rc)
			mdb_txn_abort(txn);
		else
			rc = mdb_txn_commit(txn);
	}
	if (rc) {
		mdb_env_close(db->env);
		db->env = NULL;
	}
	return rc;
}

static int lmdb_open(struct bench_run *run)
{
	const struct bench_cfg *c = run->cfg;
	struct lmdb_env *db;
	int rc;

	if (c->create) {
		rc = lmdb_fresh(c->target);
		if (rc) {
			fprintf(stderr, "pmidx-bench: lmdb: cannot make %s afresh: %s\n",
				c->target, strerror(-rc));
			return rc;
		}
	}
	db = calloc(1, sizeof(*db));
	if (!db) {
		fprintf(stderr, "pmidx-bench: lmdb: out of memory\n");
		return -ENOMEM;
	}
	rc = lmdb_open_env(c, db);
	if (rc) {
		fprintf(stderr, "pmidx-bench: lmdb: environment %s: %s\n",
			c->target, mdb_strerror(rc));
		free(db);
		return lmdb_errno(rc);
	}
	lmdb_dax_note(c->target);
	run->priv = db;
	return 0;
}

static void lmdb_close(struct bench_run *run)
{
	struct lmdb_env *db = run->priv;

	mdb_env_close(db->env);
	free(db);
	run->priv = NULL;
}

const struct bench_path_ops bench_path_lmdb = {
	.name	= "lmdb",
	.open	= lmdb_open,
	.close	= lmdb_close,
	.thread	= lmdb_thread,
	.has_pct = true,
};
