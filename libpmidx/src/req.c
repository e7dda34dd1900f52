// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Requests and synchronous batches. A struct pmidx_req is the library's
 * form of one GET/PUT/DEL/SCAN; a batch is an array of them sent as
 * BATCH commands (uapi/linux/pmidx.h): the kernel checks every entry
 * before running any, runs them in order and writes each entry's outputs
 * and result (0 or -errno as a signed 64-bit number) back into the array.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

_Static_assert((int)PMIDX_REQ_GET == (int)PMIDX_OP_GET, "req type = op");
_Static_assert((int)PMIDX_REQ_PUT == (int)PMIDX_OP_PUT, "req type = op");
_Static_assert((int)PMIDX_REQ_DEL == (int)PMIDX_OP_DEL, "req type = op");
_Static_assert((int)PMIDX_REQ_SCAN == (int)PMIDX_OP_SCAN, "req type = op");
_Static_assert((int)PMIDX_REQ_BATCH == (int)PMIDX_OP_BATCH, "req type = op");
_Static_assert(PMIDX_SCAN_MORE == (1U << 15), "same flag as the uapi");

/* Entries of a batch built on the stack; larger ones are malloc()ed. */
#define BATCH_STACK	32

static bool req_type_ok(unsigned int type)
{
	return type == PMIDX_REQ_GET || type == PMIDX_REQ_PUT ||
	       type == PMIDX_REQ_DEL || type == PMIDX_REQ_SCAN;
}

int pmidx_req_to_cmd(const struct pmidx_req *q, const struct pmidx_pool *pool,
		     struct pmidx_cmd *c)
{
	memset(c, 0, sizeof(*c));
	if (!q->idx || !req_type_ok(q->type) || q->flags > UINT16_MAX ||
	    q->key_len > UINT32_MAX || q->end_key_len > UINT32_MAX)
		return -EINVAL;
	if (q->val_len > UINT32_MAX)
		return q->type == PMIDX_REQ_PUT ? -E2BIG : -EINVAL;
	if (q->idx->pool != pool)
		return -EXDEV;
	c->op = q->type;
	c->flags = q->flags;
	c->index = q->idx->id;
	c->key = pmidx_ptr(q->key);
	c->key_len = q->key_len;
	c->val = pmidx_ptr(q->val);
	c->val_len = q->val_len;
	c->end_key = pmidx_ptr(q->end_key);
	c->end_key_len = q->end_key_len;
	c->count = q->count;
	return 0;
}

void pmidx_req_outputs(struct pmidx_req *q, const struct pmidx_cmd *c)
{
	int ret = (int)(int64_t)c->result;

	q->res = ret;
	if (q->type == PMIDX_REQ_GET && (!ret || ret == -ENOSPC)) {
		q->val_len = c->val_len;
	} else if (q->type == PMIDX_REQ_SCAN) {
		if (ret == -ENOSPC)
			q->val_len = c->val_len;
		if (ret)
			return;
		q->val_len = c->val_len;
		q->count = c->count;
		q->flags = (q->flags & ~PMIDX_SCAN_MORE) |
			   (c->flags & PMIDX_SCAN_MORE);
	}
}

void pmidx_reqs_refused(struct pmidx_req *q, unsigned int n, int err,
			uint64_t bad)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		q[i].res = i == bad ? err : -ECANCELED;
}

void pmidx_batch_cmd(struct pmidx_cmd *c, struct pmidx_cmd *ents,
		     unsigned int n)
{
	memset(c, 0, sizeof(*c));
	c->op = PMIDX_OP_BATCH;
	c->val = pmidx_ptr(ents);
	c->val_len = n * sizeof(*ents);
	c->count = n;
}

/*
 * One BATCH command of @n <= PMIDX_BATCH_MAX requests through @ents.
 * Return: requests that failed, or the error that refused the command.
 */
static int batch_one(struct pmidx_pool *pool, struct pmidx_req *q,
		     unsigned int n, struct pmidx_cmd *ents)
{
	struct pmidx_cmd c;
	unsigned int i, failed = 0;
	int ret;

	for (i = 0; i < n; i++) {
		ret = pmidx_req_to_cmd(&q[i], pool, &ents[i]);
		if (ret) {
			pmidx_reqs_refused(q, n, ret, i);
			return ret;
		}
	}
	pmidx_batch_cmd(&c, ents, n);
	ret = pmidx_cmd_run(pool, &c);
	if (ret) {
		pmidx_reqs_refused(q, n, ret, c.result);
		return ret;
	}
	for (i = 0; i < n; i++) {
		pmidx_req_outputs(&q[i], &ents[i]);
		failed += q[i].res != 0;
	}
	return failed;
}

int pmidx_batch(struct pmidx_pool *pool, struct pmidx_req *reqs,
		unsigned int n)
{
	struct pmidx_cmd stack[BATCH_STACK], *ents = stack;
	unsigned int done, chunk = 0;
	int ret = 0, failed = 0;

	if (!pool || (n && !reqs))
		return -EINVAL;
	if (n > BATCH_STACK) {
		chunk = n < PMIDX_BATCH_MAX ? n : PMIDX_BATCH_MAX;
		ents = malloc(chunk * sizeof(*ents));
		if (!ents)
			return -ENOMEM;
	}
	for (done = 0; done < n; done += chunk) {
		chunk = n - done < PMIDX_BATCH_MAX ? n - done : PMIDX_BATCH_MAX;
		ret = batch_one(pool, reqs + done, chunk, ents);
		if (ret < 0)
			break;
		failed += ret;
	}
	if (ret < 0 && done + chunk < n)
		pmidx_reqs_refused(reqs + done + chunk, n - done - chunk,
				   -ECANCELED, n);
	if (ents != stack)
		free(ents);
	return ret < 0 ? ret : failed;
}
