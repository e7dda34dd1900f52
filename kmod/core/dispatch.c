// SPDX-License-Identifier: GPL-2.0
/*
 * The data-path dispatcher: validates a struct pmidx_cmd, brings keys and
 * values into kernel memory, runs the engine operation and reports back
 * in the same struct. Shared by the ioctl and io_uring paths and by
 * libpmidx's in-process mode, so every path has one set of semantics.
 *
 * Validation never changes anything: every check runs before the engine
 * is called.
 *
 * PMIDX_DISPATCH_NOWAIT (io_uring's first, non-blocking issue): only what
 * never waits for other work runs: LOOKUP when pool->lock is free, GET
 * with an atomic buffer, PUT and DEL as no-wait writes of an engine that
 * has them (core/engine.h, "No-wait writes": the engine answers -EAGAIN
 * before changing anything where it would sleep), a short BATCH of
 * these. SCAN and CHECK walk far, long batches hold the ring's
 * submission: they, and whatever else would sleep, answer -EAGAIN and
 * io_uring issues them again from a worker, where they may sleep.
 *
 * Buffers: nothing on the per-operation path allocates. Keys (at most
 * PMIDX_KEY_MAX bytes) and values of up to OP_STACK_MAX bytes live on the
 * stack; larger values, SCAN's bounce buffer and BATCH's entry array use
 * a scratch buffer of SCRATCH_SIZE bytes taken from the pool's per-CPU
 * cache and given back after the op (scratch_get()/scratch_put()). Only
 * what does not fit one (a SCAN buffer over SCRATCH_SIZE, a BATCH of more
 * than SCRATCH_SIZE / 80 entries) or a cache found empty allocates. A
 * short BATCH keeps its keys and values there too ("staged BATCH" below):
 * one user-access window for all its inputs and one for all its outputs.
 *
 * The stack buffers filled from the caller (keys, a PUT's value) are
 * __uninitialized: only the bytes copied in are ever read, and a kernel
 * built with CONFIG_INIT_STACK_ALL_ZERO (distribution kernels) would
 * otherwise clear 255 + 256 bytes per operation and per BATCH entry. A
 * GET's value buffer, whose bytes go back to user memory, keeps the
 * clearing: an engine that reported more bytes than it wrote would leak
 * zeros, not old stack.
 */
#include <linux/errno.h>
#include <linux/percpu.h>
#include <linux/poison.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/string.h>
#include "dispatch.h"
#include "engine.h"

#define SCAN_BUF_MAX	(1U << 20)	/* bounce buffer cap per SCAN */
#define OP_STACK_MAX	256		/* values up to this: on the stack */
#define SCRATCH_SIZE	PMIDX_VALUE_MAX	/* a cached scratch buffer */
/* The most a BATCH runs under PMIDX_DISPATCH_NOWAIT: entries, output bytes */
#define NOWAIT_BATCH_MAX	64
#define NOWAIT_BATCH_OUT	(256U << 10)

/*
 * Two cached buffers per CPU: a BATCH holds one for its entry array while
 * an entry takes the other. A buffer taken on one CPU may go back on
 * another; a put that finds both slots full frees it.
 */
struct pmidx_scratch_cpu {
	void	*slot[2];
};

int pmidx_dispatch_init(struct pmidx_pool *pool)
{
	pool->scratch = alloc_percpu(struct pmidx_scratch_cpu);
	return pool->scratch ? 0 : -ENOMEM;
}

void pmidx_dispatch_exit(struct pmidx_pool *pool)
{
	struct pmidx_scratch_cpu *sc;
	unsigned int i;
	int cpu;

	if (!pool->scratch)
		return;
	for_each_possible_cpu(cpu) {
		sc = per_cpu_ptr(pool->scratch, cpu);
		for (i = 0; i < ARRAY_SIZE(sc->slot); i++)
			kvfree(sc->slot[i]);
	}
	free_percpu(pool->scratch);
	pool->scratch = NULL;
}

/*
 * A buffer of @len bytes for one op: a cached scratch buffer when @len
 * fits one (*@cache: give it back to the cache), else an allocation of
 * its own. Under PMIDX_DISPATCH_NOWAIT only the cache or GFP_NOWAIT.
 */
static void *scratch_get(struct pmidx_pool *pool, u32 len, unsigned int flags,
			 bool *cache)
{
	bool nowait = flags & PMIDX_DISPATCH_NOWAIT;
	unsigned int i;
	void *buf;

	*cache = len <= SCRATCH_SIZE && pool->scratch;
	if (*cache) {
		for (i = 0; i < ARRAY_SIZE(pool->scratch->slot); i++) {
			buf = this_cpu_xchg(pool->scratch->slot[i], NULL);
			if (buf)
				return buf;
		}
		/*
		 * The cache is empty: a new buffer for it. In a hurry too,
		 * or a ring whose every command runs on io_uring's first
		 * issue would allocate (and, with init_on_alloc, clear) one
		 * per BATCH forever.
		 */
		if (!nowait)
			return kvmalloc(SCRATCH_SIZE, GFP_KERNEL);
		buf = kmalloc(SCRATCH_SIZE, GFP_NOWAIT | __GFP_NOWARN);
		if (buf)
			return buf;
		*cache = false;
	}
	if (nowait)
		return kmalloc(max(len, 1U), GFP_NOWAIT | __GFP_NOWARN);
	return kvmalloc(max(len, 1U), GFP_KERNEL);
}

static void scratch_put(struct pmidx_pool *pool, void *buf, bool cache)
{
	unsigned int i;

	for (i = 0; cache && i < ARRAY_SIZE(pool->scratch->slot); i++)
		if (!this_cpu_cmpxchg(pool->scratch->slot[i], NULL, buf))
			return;
	kvfree(buf);
}

/* One stretch of the caller's memory in or out (struct pmidx_uaccess). */
static int copy_in(const struct pmidx_uaccess *ua, void *dst, u64 src, u32 len)
{
	struct pmidx_useg seg = { .kbuf = dst, .uptr = src, .len = len };

	return ua->from(&seg, 1);
}

static int copy_out(const struct pmidx_uaccess *ua, u64 dst, const void *src,
		    u32 len)
{
	struct pmidx_useg seg = { .kbuf = (void *)src, .uptr = dst, .len = len };

	return ua->to(&seg, 1);
}

static bool is_write(u8 op)
{
	return op == PMIDX_OP_PUT || op == PMIDX_OP_DEL;
}

/* What may run under PMIDX_DISPATCH_NOWAIT (see the file comment). */
static bool nowait_op(u8 op)
{
	return op == PMIDX_OP_GET || op == PMIDX_OP_LOOKUP || is_write(op);
}

static const u16 op_flags[__PMIDX_OP_MAX] = {
	[PMIDX_OP_PUT]	= PMIDX_PUT_INSERT,
	[PMIDX_OP_SCAN]	= PMIDX_SCAN_AFTER,
};

/* A BATCH names its array and nothing else: each entry has its own index. */
static int check_batch_shape(const struct pmidx_cmd *c)
{
	if (c->index || c->key || c->key_len || c->end_key || c->end_key_len)
		return -EINVAL;
	if (!c->count || c->count > PMIDX_BATCH_MAX ||
	    c->val_len != c->count * sizeof(struct pmidx_cmd))
		return -EINVAL;
	return c->val ? 0 : -EFAULT;
}

/* Reserved fields, and fields the op does not use, must be zero. */
static int check_shape(const struct pmidx_cmd *c)
{
	bool scan = c->op == PMIDX_OP_SCAN;

	if (!c->op || c->op >= __PMIDX_OP_MAX)
		return -EOPNOTSUPP;
	if (c->reserved0 || c->reserved[0] || c->reserved[1] || c->reserved[2] ||
	    c->result || (c->flags & ~op_flags[c->op]))
		return -EINVAL;
	if (c->op == PMIDX_OP_BATCH)
		return check_batch_shape(c);
	if (!scan && (c->end_key || c->end_key_len || c->count))
		return -EINVAL;
	if (c->op == PMIDX_OP_CHECK && (c->key || c->key_len || c->val ||
					 c->val_len))
		return -EINVAL;
	if ((c->op == PMIDX_OP_DEL || c->op == PMIDX_OP_LOOKUP) &&
	    (c->val || c->val_len))
		return -EINVAL;
	if (c->op == PMIDX_OP_LOOKUP && c->index)
		return -EINVAL;
	if (scan && !c->count)
		return -EINVAL;
	/* lengths */
	if (c->op == PMIDX_OP_LOOKUP) {
		if (!c->key_len || c->key_len > PMIDX_NAME_MAX)
			return -EINVAL;
	} else if (c->op != PMIDX_OP_CHECK &&
		   (c->key_len > PMIDX_KEY_MAX || (!c->key_len && !scan))) {
		return -EINVAL;
	}
	if (c->end_key_len > PMIDX_KEY_MAX)
		return -EINVAL;
	if (c->op == PMIDX_OP_PUT && c->val_len > PMIDX_VALUE_MAX)
		return -E2BIG;
	/* a length needs a pointer */
	if ((c->key_len && !c->key) || (c->end_key_len && !c->end_key) ||
	    (c->val_len && !c->val))
		return -EFAULT;
	return 0;
}

struct scan_out {
	struct pmidx_scan_sink	sink;
	u8			*buf;
	u32			cap, used, need;
	u32			count, max;
	bool			more;
};

static u32 rec_size(u32 klen, u32 vlen)
{
	return ALIGN(sizeof(struct pmidx_rec) + klen + vlen, 8);
}

static int scan_emit(struct pmidx_scan_sink *sink, const u8 *key, u32 klen,
		     const u8 *val, u32 vlen)
{
	struct scan_out *o = container_of(sink, struct scan_out, sink);
	u32 size = rec_size(klen, vlen);
	struct pmidx_rec rec = { .key_len = klen, .val_len = vlen };

	if (o->count == o->max || o->used + size > o->cap) {
		o->more = true;
		if (!o->count)
			o->need = size;
		return 1;
	}
	memcpy(o->buf + o->used, &rec, sizeof(rec));
	memcpy(o->buf + o->used + sizeof(rec), key, klen);
	memcpy(o->buf + o->used + sizeof(rec) + klen, val, vlen);
	memset(o->buf + o->used + sizeof(rec) + klen + vlen, 0,
	       size - sizeof(rec) - klen - vlen);
	o->used += size;
	o->count++;
	return 0;
}

static int do_scan(struct pmidx_index *idx, struct pmidx_cmd *c, const u8 *key,
		   const struct pmidx_uaccess *ua)
{
	struct scan_out o = { .sink.emit = scan_emit, .max = c->count };
	u8 end[PMIDX_KEY_MAX] __uninitialized;	/* end_key_len bytes read */
	bool cache;
	int ret;

	if (c->end_key_len) {
		ret = copy_in(ua, end, c->end_key, c->end_key_len);
		if (ret)
			return ret;
	}
	o.cap = min(c->val_len, SCAN_BUF_MAX);
	o.buf = scratch_get(idx->pool, o.cap, 0, &cache);
	if (!o.buf)
		return -ENOMEM;
	ret = idx->ops->scan(idx, key, c->key_len, c->flags & PMIDX_SCAN_AFTER,
			     end, c->end_key_len, &o.sink);
	if (ret < 0)
		goto out;
	if (!o.count && o.more) {
		c->val_len = o.need;
		ret = -ENOSPC;
		goto out;
	}
	ret = copy_out(ua, c->val, o.buf, o.used);
	if (ret)
		goto out;
	c->count = o.count;
	c->val_len = o.used;
	if (o.more)
		c->flags |= PMIDX_SCAN_MORE;
out:
	scratch_put(idx->pool, o.buf, cache);
	return ret;
}

/*
 * The engine's get into @buf, room for @cap bytes; *@len := the value's
 * length. A value over @cap is -ENOSPC with c->val_len := its length.
 */
static int get_into(struct pmidx_index *idx, struct pmidx_cmd *c,
		    const u8 *key, u8 *buf, u32 cap, u32 *len)
{
	int ret;

	*len = cap;
	ret = idx->ops->get(idx, key, c->key_len, buf, len);
	if (!ret && *len > cap) {
		c->val_len = *len;
		ret = -ENOSPC;
	}
	return ret;
}

/* GET through a bounce buffer to the caller's buffer. */
static int do_get(struct pmidx_index *idx, struct pmidx_cmd *c, const u8 *key,
		  const struct pmidx_uaccess *ua, unsigned int flags)
{
	u32 cap = min_t(u32, c->val_len, PMIDX_VALUE_MAX), len;
	u8 small[OP_STACK_MAX], *val = small;
	bool cache = false;
	int ret;

	if (cap > sizeof(small)) {
		val = scratch_get(idx->pool, cap, flags, &cache);
		if (!val)
			return flags & PMIDX_DISPATCH_NOWAIT ? -EAGAIN : -ENOMEM;
	}
	ret = get_into(idx, c, key, val, cap, &len);
	if (!ret)
		ret = copy_out(ua, c->val, val, len);
	if (!ret)
		c->val_len = len;
	if (val != small)
		scratch_put(idx->pool, val, cache);
	return ret;
}

static int do_lookup(struct pmidx_pool *pool, struct pmidx_cmd *c,
		     const u8 *key, unsigned int flags)
{
	char name[PMIDX_NAME_MAX + 1];
	u32 engine;
	int ret;

	memcpy(name, key, c->key_len);
	name[c->key_len] = 0;
	if (strlen(name) != c->key_len)
		return -EINVAL;
	ret = pmidx_index_find_id(pool, name, !(flags & PMIDX_DISPATCH_NOWAIT),
				  &c->index, &engine);
	if (!ret)
		c->result = engine;
	return ret;
}

/*
 * @val: a PUT's value; for a GET, the room a staged BATCH keeps for its
 * value (val_len bytes, written back after the batch), or NULL.
 */
static int run_index_op(struct pmidx_index *idx, struct pmidx_cmd *cmd,
			const u8 *key, u8 *val,
			const struct pmidx_uaccess *ua, unsigned int flags)
{
	u32 wflags = 0, len;
	int ret;

	if (flags & PMIDX_DISPATCH_NOWAIT) {
		if (is_write(cmd->op) &&
		    !(idx->ops->flags & PMIDX_ENGINE_F_NOWAIT))
			return -EAGAIN;
		wflags = PMIDX_WRITE_NOWAIT;
	}
	switch (cmd->op) {
	case PMIDX_OP_GET:
		if (!val)
			return do_get(idx, cmd, key, ua, flags);
		ret = get_into(idx, cmd, key, val, cmd->val_len, &len);
		if (!ret)
			cmd->val_len = len;
		return ret;
	case PMIDX_OP_PUT:
		return idx->ops->put(idx, key, cmd->key_len, val, cmd->val_len,
				     cmd->flags | wflags);
	case PMIDX_OP_DEL:
		return idx->ops->del(idx, key, cmd->key_len, wflags);
	case PMIDX_OP_SCAN:
		return do_scan(idx, cmd, key, ua);
	case PMIDX_OP_CHECK: {
		const char *why = NULL;
		u64 keys = 0;

		ret = idx->ops->check(idx, &keys, &why);
		if (ret && why)
			pr_err("pmidx: index %s: check failed: %s\n", idx->name, why);
		cmd->result = keys;
		return ret;
	}
	}
	return -EOPNOTSUPP;
}

/*
 * Run @cmd on its index, pinned (struct pmidx_index, "Lifetime") for the
 * engine call, with its key and a PUT's value in kernel memory.
 *
 * @pin: NULL for a single command. A BATCH passes the pin its previous
 * entry left in *@pin (NULL at first): an entry naming the same index
 * keeps it, one naming another index trades it, and the batch gives the
 * last one back. A drop-index waits for the batch then, as for one op.
 */
static int run_on_index(struct pmidx_pool *pool, struct pmidx_cmd *cmd,
			const u8 *key, u8 *val, const struct pmidx_uaccess *ua,
			unsigned int flags, struct pmidx_index **pin)
{
	struct pmidx_index *idx = pin ? *pin : NULL;
	int ret;

	/* a pin kept from the entry before: not once drop-index killed it */
	if (!idx || idx->id != cmd->index ||
	    percpu_ref_is_dying(&idx->users)) {
		if (idx)
			pmidx_index_put(idx);
		idx = pmidx_index_get(pool, cmd->index);
		if (pin)
			*pin = idx;
	}
	if (!idx)
		return -ENXIO;
	ret = -EOPNOTSUPP;	/* an index of an engine this module lacks */
	if (idx->opened)
		ret = run_index_op(idx, cmd, key, val, ua, flags);
	if (!pin)
		pmidx_index_put(idx);
	return ret;
}

/*
 * Run a command whose shape has been checked. The key, and a PUT's value,
 * are copied in together (struct pmidx_uaccess.from). @pin: as for
 * run_on_index().
 */
static int run_cmd(struct pmidx_pool *pool, struct pmidx_cmd *cmd,
		   const struct pmidx_uaccess *ua, unsigned int flags,
		   struct pmidx_index **pin)
{
	u8 key[PMIDX_KEY_MAX] __uninitialized;	/* key_len bytes copied in */
	u8 small[OP_STACK_MAX] __uninitialized;	/* val_len bytes copied in */
	struct pmidx_useg in[2];
	unsigned int n = 0;
	bool cache = false;
	u8 *val = NULL;
	int ret;

	if (is_write(cmd->op) && (flags & PMIDX_DISPATCH_RDONLY))
		return -EBADF;
	if ((flags & PMIDX_DISPATCH_NOWAIT) && !nowait_op(cmd->op))
		return -EAGAIN;
	if (cmd->key_len)
		in[n++] = (struct pmidx_useg){ key, cmd->key, cmd->key_len };
	if (cmd->op == PMIDX_OP_PUT) {
		val = small;
		if (cmd->val_len > sizeof(small)) {
			val = scratch_get(pool, cmd->val_len, flags, &cache);
			if (!val)
				return flags & PMIDX_DISPATCH_NOWAIT ? -EAGAIN :
								       -ENOMEM;
		}
		in[n++] = (struct pmidx_useg){ val, cmd->val, cmd->val_len };
	}
	ret = ua->from(in, n);
	if (ret)
		goto out;
	if (cmd->op == PMIDX_OP_LOOKUP)
		return do_lookup(pool, cmd, key, flags);

	ret = run_on_index(pool, cmd, key, val, ua, flags, pin);
out:
	if (val && val != small)
		scratch_put(pool, val, cache);
	return ret;
}

static bool batchable(u8 op)
{
	return op == PMIDX_OP_GET || op == PMIDX_OP_PUT || op == PMIDX_OP_DEL ||
	       op == PMIDX_OP_SCAN;
}

/* Output bytes an entry may produce (see PMIDX_BATCH_OUT_MAX). */
static u64 out_bytes(const struct pmidx_cmd *c)
{
	if (c->op == PMIDX_OP_GET)
		return min_t(u32, c->val_len, PMIDX_VALUE_MAX);
	if (c->op == PMIDX_OP_SCAN)
		return min(c->val_len, SCAN_BUF_MAX);
	return 0;
}

/*
 * A staged BATCH reads every entry's key and PUT value in one call of
 * ua->from before the first entry runs, keeps each GET's value in the
 * scratch buffer, and writes those back in one call of ua->to after the
 * last: two user-access windows for the batch where entry by entry there
 * were two per entry. The caller sees what running the entries one by one
 * would have left, because nothing the batch writes is read by a later
 * entry: a batch in which a GET's value buffer overlaps a later entry's
 * key or value runs entry by entry instead (stage_bytes()). So does one
 * with a SCAN, a value over OP_STACK_MAX bytes, more than STAGE_MAX
 * entries, or no room in its scratch buffer.
 *
 * The scratch buffer holds, after the entry array: the struct staged of
 * each entry, the segments of the two calls, then each entry's key and
 * value, 8-byte aligned.
 */
#define STAGE_MAX	NOWAIT_BATCH_MAX

struct staged {
	u8	*key;	/* key_len bytes read in */
	u8	*val;	/* a PUT's value read in; room for a GET's value */
	u32	cap;	/* a GET's val_len as the caller gave it */
	int	err;	/* the entry's inputs could not be read: -EFAULT */
};

/* Do [a, a + alen) and [b, b + blen) share a byte? (no overflow) */
static bool overlaps(u64 a, u64 alen, u64 b, u64 blen)
{
	return alen && blen && (a - b < blen || b - a < alen);
}

/* A staged key or value's room: at least a word, so none is empty */
static u32 stage_room(u32 len)
{
	return max_t(u32, ALIGN(len, 8), 8);
}

/* [lo, hi): the bytes of buffers added so far; empty while lo == hi */
struct span {
	u64	lo, hi;
};

/* Add [a, a + len) to @s; false if it wraps (it could only fault) */
static bool span_add(struct span *s, u64 a, u32 len)
{
	if (!len)
		return true;
	if (a + len < a)
		return false;
	if (s->lo == s->hi) {
		*s = (struct span){ a, a + len };
	} else {
		s->lo = min(s->lo, a);
		s->hi = max(s->hi, a + len);
	}
	return true;
}

/* Does entry @i's value buffer overlap a later entry's key or PUT value? */
static bool feeds_later(const struct pmidx_cmd *ents, u32 i, u32 n)
{
	const struct pmidx_cmd *e = &ents[i], *l;

	for (l = e + 1; l < ents + n; l++)
		if (overlaps(e->val, e->val_len, l->key, l->key_len) ||
		    (l->op == PMIDX_OP_PUT &&
		     overlaps(e->val, e->val_len, l->val, l->val_len)))
			return true;
	return false;
}

/*
 * Bytes of scratch a staged run of @ents needs after them; 0: unstaged.
 * Walking back from the last entry, each GET's value buffer is checked
 * against the span of the later entries' inputs, and against those
 * inputs one by one only when it lies within that span: requests laid
 * out in an array, in either order, cost one comparison per GET.
 */
static size_t stage_bytes(const struct pmidx_cmd *ents, u32 n)
{
	size_t size = n * (sizeof(struct staged) + 2 * sizeof(struct pmidx_useg));
	struct span later = {};	/* the inputs of the entries after @e */
	const struct pmidx_cmd *e;
	u32 i;

	if (n > STAGE_MAX)
		return 0;
	for (i = n; i-- > 0;) {
		e = &ents[i];
		if (e->op == PMIDX_OP_SCAN || e->val_len > OP_STACK_MAX)
			return 0;
		size += stage_room(e->key_len) + stage_room(e->val_len);
		if (e->op == PMIDX_OP_GET &&
		    overlaps(e->val, e->val_len, later.lo, later.hi - later.lo) &&
		    feeds_later(ents, i, n))
			return 0;
		if (!span_add(&later, e->key, e->key_len) ||
		    (e->op == PMIDX_OP_PUT &&
		     !span_add(&later, e->val, e->val_len)))
			return 0;
	}
	return size;
}

/* An entry's inputs as segments: its key, a PUT's value. Return: how many */
static unsigned int stage_in_segs(const struct pmidx_cmd *e,
				  const struct staged *st,
				  struct pmidx_useg *seg)
{
	unsigned int n = 0;

	seg[n++] = (struct pmidx_useg){ st->key, e->key, e->key_len };
	if (e->op == PMIDX_OP_PUT && e->val_len)
		seg[n++] = (struct pmidx_useg){ st->val, e->val, e->val_len };
	return n;
}

/*
 * Lay out the staged entries in @buf (after @n entries) and read their
 * inputs: all at once, or, when that faults, entry by entry to find the
 * ones that fault (st->err).
 */
static struct staged *stage_in(struct pmidx_cmd *ents, u32 n, void *buf,
			       const struct pmidx_uaccess *ua)
{
	struct staged *st = buf + n * sizeof(*ents);
	struct pmidx_useg *seg = (void *)(st + n);
	u8 *data = (u8 *)(seg + 2 * n);
	unsigned int nseg = 0;
	u32 i;

	for (i = 0; i < n; i++) {
		st[i].key = data;
		data += stage_room(ents[i].key_len);
		st[i].val = data;
		st[i].cap = ents[i].val_len;
		st[i].err = 0;
		/*
		 * A GET writes back the val_len bytes its engine filled
		 * (engine.h, ->get); the debug kernel's poison shows one
		 * that reports bytes it did not fill.
		 */
		if (IS_ENABLED(CONFIG_KASAN) && ents[i].op == PMIDX_OP_GET)
			memset(st[i].val, POISON_INUSE, st[i].cap);
		data += stage_room(ents[i].val_len);
		nseg += stage_in_segs(&ents[i], &st[i], seg + nseg);
	}
	if (!ua->from(seg, nseg))
		return st;
	for (i = 0; i < n; i++) {
		nseg = stage_in_segs(&ents[i], &st[i], seg);
		st[i].err = ua->from(seg, nseg);
	}
	return st;
}

/*
 * Write back the values of the GETs that succeeded: all at once, or, when
 * that faults, entry by entry, failing the ones that fault with -EFAULT
 * and val_len as the caller gave it (as an unstaged GET would). Return:
 * how many entries failed here.
 */
static u32 stage_out(struct pmidx_cmd *ents, u32 n, struct staged *st,
		     const struct pmidx_uaccess *ua)
{
	struct pmidx_useg *seg = (void *)(st + n), *one;
	unsigned int nseg = 0;
	u32 i, failed = 0;

	for (i = 0; i < n; i++)
		if (ents[i].op == PMIDX_OP_GET && !ents[i].result)
			seg[nseg++] = (struct pmidx_useg){ st[i].val,
							   ents[i].val,
							   ents[i].val_len };
	if (!nseg || !ua->to(seg, nseg))
		return 0;
	for (i = 0, one = seg; i < n; i++) {
		if (ents[i].op != PMIDX_OP_GET || ents[i].result)
			continue;
		if (ua->to(one++, 1)) {
			ents[i].result = (u64)(s64)-EFAULT;
			ents[i].val_len = st[i].cap;
			failed++;
		}
	}
	return failed;
}

/* Entry @e of a BATCH, staged (@st) or not (NULL); @pin: run_on_index(). */
static int run_entry(struct pmidx_pool *pool, struct pmidx_cmd *e,
		     const struct staged *st, const struct pmidx_uaccess *ua,
		     unsigned int flags, struct pmidx_index **pin)
{
	if (fatal_signal_pending(current))
		return -EINTR;
	if (!st)
		return run_cmd(pool, e, ua, flags, pin);
	return st->err ?: run_on_index(pool, e, st->key, st->val, ua, flags,
				       pin);
}

/*
 * BATCH: check every entry before running any, so a malformed batch
 * changes nothing; then run them in order and write every entry's outputs
 * back. A failing entry does not stop the others: its errno is its result.
 * A fatal signal does: the entries not run yet report -EINTR.
 *
 * Under PMIDX_DISPATCH_NOWAIT only a short batch of GETs, PUTs and DELs
 * runs (at most NOWAIT_BATCH_MAX entries and NOWAIT_BATCH_OUT output
 * bytes: the ring's submission waits for it), each entry no-wait. When
 * one answers -EAGAIN before any write has run, the whole batch answers
 * -EAGAIN, to be run again from the start where it may sleep: GETs and
 * refused writes changed nothing, and no entry of the array was written
 * (nor, staged, any GET's value; entry by entry, the value buffers of the
 * GETs that ran are filled again then). After a write has run the batch
 * must not run again (that write would be made twice), so the entry that
 * answered -EAGAIN and those after it run here, where they may sleep: the
 * submission waits for them, once.
 */
static int do_batch(struct pmidx_pool *pool, struct pmidx_cmd *c,
		    const struct pmidx_uaccess *ua, unsigned int flags)
{
	bool nowait = flags & PMIDX_DISPATCH_NOWAIT, wrote = false, cache;
	struct pmidx_index *pin = NULL;	/* run_on_index() */
	struct staged *st = NULL;
	struct pmidx_cmd *ents;
	size_t stage;
	u64 out = 0;
	u32 i, failed = 0;
	int ret;

	if (nowait && c->count > NOWAIT_BATCH_MAX)
		return -EAGAIN;
	/* c->val_len is c->count entries (check_batch_shape()) */
	ents = scratch_get(pool, c->val_len, flags, &cache);
	if (!ents)
		return nowait ? -EAGAIN : -ENOMEM;
	ret = copy_in(ua, ents, c->val, c->val_len);
	if (ret)
		goto out;
	for (i = 0; i < c->count; i++) {
		ret = check_shape(&ents[i]);
		if (!ret && !batchable(ents[i].op))
			ret = -EINVAL;
		if (!ret && is_write(ents[i].op) &&
		    (flags & PMIDX_DISPATCH_RDONLY))
			ret = -EBADF;
		out += out_bytes(&ents[i]);
		if (!ret && out > PMIDX_BATCH_OUT_MAX)
			ret = -E2BIG;
		if (ret) {
			c->result = i;
			goto out;
		}
	}
	for (i = 0; nowait && i < c->count; i++) {
		if (!nowait_op(ents[i].op) || out > NOWAIT_BATCH_OUT) {
			ret = -EAGAIN;
			goto out;
		}
	}
	stage = stage_bytes(ents, c->count);
	if (stage && cache && c->val_len + stage <= SCRATCH_SIZE)
		st = stage_in(ents, c->count, ents, ua);
	for (i = 0; i < c->count; i++) {
		ret = run_entry(pool, &ents[i], st ? &st[i] : NULL, ua, flags,
				&pin);
		if (ret == -EAGAIN && (flags & PMIDX_DISPATCH_NOWAIT)) {
			if (!wrote)
				goto out;
			flags &= ~PMIDX_DISPATCH_NOWAIT;
			ret = run_entry(pool, &ents[i], st ? &st[i] : NULL, ua,
					flags, &pin);
		}
		wrote |= is_write(ents[i].op);
		ents[i].result = (u64)(s64)ret;
		failed += ret != 0;
		cond_resched();
	}
	if (st)
		failed += stage_out(ents, c->count, st, ua);
	ret = ua->batch_out(c->val, ents, c->count);
	if (!ret)
		c->result = failed;
out:
	if (pin)
		pmidx_index_put(pin);
	scratch_put(pool, ents, cache);
	return ret;
}

/**
 * pmidx_dispatch - run one data-path command
 * @cmd: the command; on return it carries the op's outputs (val_len,
 *       count, flags, result, index) and must be copied back even when
 *       an error is returned (-ENOSPC reports the needed length).
 *
 * @flags: PMIDX_DISPATCH_*
 *
 * Context: process context; may sleep unless PMIDX_DISPATCH_NOWAIT.
 * Return: 0 or a negative errno (see uapi/linux/pmidx.h); -EAGAIN under
 * PMIDX_DISPATCH_NOWAIT when the command must be issued again, blocking.
 */
int pmidx_dispatch(struct pmidx_pool *pool, struct pmidx_cmd *cmd,
		   const struct pmidx_uaccess *ua, unsigned int flags)
{
	int ret;

	ret = check_shape(cmd);
	if (ret)
		return ret;
	if (cmd->op == PMIDX_OP_BATCH)
		return do_batch(pool, cmd, ua, flags);
	return run_cmd(pool, cmd, ua, flags, NULL);
}
