// SPDX-License-Identifier: GPL-2.0
/*
 * pmidx_dentry: a sample in-kernel client of pmidx, the kind of directory
 * entry table a file-system metadata prototype would keep in a pmidx
 * index. It uses only include/linux/pmidx_kapi.h.
 *
 * Entries are keyed by (parent inode, name): an 8-byte big-endian parent
 * number followed by the name bytes, so all entries of one directory are
 * adjacent in key order and a directory listing is one range scan from
 * (parent, "") to (parent + 1, ""). The value is struct dentry_val.
 *
 * /dev/pmidx_dentry takes one text command per write(2); read(2) returns
 * the last command's output from offset 0 (each write rewinds the file).
 * Every open file is a session with its own index handle:
 *
 *   open POOL INDEX                 POOL is pmidx0 or the attached device path
 *   close
 *   create PARENT NAME INO          -EEXIST if PARENT already has NAME
 *   lookup PARENT NAME              -> "ino=INO"
 *   unlink PARENT NAME              -ENOENT if absent
 *   rename PARENT NAME NPARENT NNAME  -EEXIST if the target exists
 *   list PARENT                     -> "NAME INO" lines in name order
 *   bench put|get|del FIRST COUNT VSIZE
 *       COUNT ops on 8-byte big-endian keys FIRST..FIRST+COUNT-1 (put:
 *       values of VSIZE bytes) -> "ops=N failed=N ns=N"; measures the
 *       in-kernel API for pmidx-bench --path kernel.
 *
 * A failed command makes write(2) return its negative errno.
 */
#include <linux/fs.h>
#include <linux/kernel.h>
#include <linux/ktime.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/pmidx_kapi.h>

#define CMD_MAX		512		/* one command line */
#define OUT_MAX		(64 << 10)	/* one command's output */
#define BENCH_VAL_MAX	4096

/* keys start with a big-endian u64 so that memcmp order is numeric order */
static void put_be64(u64 v, void *p)
{
	__be64 be = cpu_to_be64(v);

	memcpy(p, &be, sizeof(be));
}

struct dentry_val {
	__le64	ino;
};

/*
 * struct dentry_session - one open file
 * @lock: serialises this session's commands (the handle itself may be
 *        shared; the output buffer may not)
 * @h:    the index handle, NULL until "open"
 */
struct dentry_session {
	struct mutex		lock;
	struct pmidx_handle	*h;
	char			*out;
	size_t			out_len;
};

struct dentry_key {
	u8	bytes[PMIDX_KEY_MAX];
	u32	len;
};

static __printf(2, 3) void out_printf(struct dentry_session *s,
				      const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(s->out + s->out_len, OUT_MAX - s->out_len, fmt, ap);
	va_end(ap);
	s->out_len = min_t(size_t, s->out_len + n, OUT_MAX - 1);
}

static int make_key(struct dentry_key *k, u64 parent, const char *name)
{
	size_t nlen = strlen(name);

	if (nlen > PMIDX_KEY_MAX - 8)
		return -ENAMETOOLONG;
	put_be64(parent, k->bytes);
	memcpy(k->bytes + 8, name, nlen);
	k->len = 8 + nlen;
	return 0;
}

static int do_create(struct dentry_session *s, u64 parent, const char *name,
		     u64 ino)
{
	struct dentry_val v = { .ino = cpu_to_le64(ino) };
	struct dentry_key k;
	int ret;

	if (!*name)
		return -EINVAL;
	ret = make_key(&k, parent, name);
	if (ret)
		return ret;
	return pmidx_put(s->h, k.bytes, k.len, &v, sizeof(v), PMIDX_PUT_INSERT);
}

static int lookup_ino(struct dentry_session *s, u64 parent, const char *name,
		      u64 *ino)
{
	struct dentry_val v;
	u32 vlen = sizeof(v);
	struct dentry_key k;
	int ret;

	ret = make_key(&k, parent, name);
	if (ret)
		return ret;
	ret = pmidx_get(s->h, k.bytes, k.len, &v, &vlen);
	if (ret)
		return ret;
	if (vlen != sizeof(v))
		return -EUCLEAN;	/* not written by this client */
	*ino = le64_to_cpu(v.ino);
	return 0;
}

static int do_unlink(struct dentry_session *s, u64 parent, const char *name)
{
	struct dentry_key k;
	int ret;

	ret = make_key(&k, parent, name);
	return ret ?: pmidx_del(s->h, k.bytes, k.len);
}

/*
 * Insert the new name, then delete the old one: each step is durable on
 * its own, so a crash in between leaves both names (a hard-link-like
 * state an fsck would repair), never neither.
 */
static int do_rename(struct dentry_session *s, u64 parent, const char *name,
		     u64 nparent, const char *nname)
{
	u64 ino;
	int ret;

	ret = lookup_ino(s, parent, name, &ino);
	if (ret)
		return ret;
	ret = do_create(s, nparent, nname, ino);
	if (ret)
		return ret;
	return do_unlink(s, parent, name);
}

static int list_one(void *priv, const void *key, u32 key_len,
		    const void *val, u32 val_len)
{
	struct dentry_session *s = priv;
	struct dentry_val v;

	if (key_len <= 8 || val_len != sizeof(v))
		return -EUCLEAN;
	memcpy(&v, val, sizeof(v));
	out_printf(s, "%.*s %llu\n", (int)(key_len - 8), (const char *)key + 8,
		   le64_to_cpu(v.ino));
	return s->out_len + PMIDX_KEY_MAX + 24 >= OUT_MAX ? 1 : 0;
}

static int do_list(struct dentry_session *s, u64 parent)
{
	u8 lo[8], hi[8];

	put_be64(parent, lo);
	put_be64(parent + 1, hi);
	return pmidx_scan(s->h, lo, sizeof(lo), hi,
			  parent == U64_MAX ? 0 : sizeof(hi), 0, list_one, s);
}

static int bench_op(struct dentry_session *s, const char *op, u64 key,
		    u8 *val, u32 vsize)
{
	u8 k[8];
	u32 vlen = BENCH_VAL_MAX;

	put_be64(key, k);
	if (!strcmp(op, "put")) {
		put_be64(key, val);
		return pmidx_put(s->h, k, sizeof(k), val, vsize, 0);
	}
	if (!strcmp(op, "get"))
		return pmidx_get(s->h, k, sizeof(k), val, &vlen);
	return pmidx_del(s->h, k, sizeof(k));
}

static int do_bench(struct dentry_session *s, const char *op, u64 first,
		    u64 count, u32 vsize)
{
	u64 i, failed = 0, t0;
	u8 *val;

	if (strcmp(op, "put") && strcmp(op, "get") && strcmp(op, "del"))
		return -EINVAL;
	if (vsize > BENCH_VAL_MAX || (!strcmp(op, "put") && vsize < 8))
		return -EINVAL;
	val = kzalloc(BENCH_VAL_MAX, GFP_KERNEL);
	if (!val)
		return -ENOMEM;
	t0 = ktime_get_ns();
	for (i = 0; i < count; i++) {
		failed += bench_op(s, op, first + i, val, vsize) != 0;
		if (fatal_signal_pending(current))
			break;
		cond_resched();
	}
	out_printf(s, "ops=%llu failed=%llu ns=%llu\n", i, failed,
		   ktime_get_ns() - t0);
	kfree(val);
	return 0;
}

/* Split @line into at most @max words; returns how many. */
static int split_words(char *line, char **w, int max)
{
	int n = 0;
	char *tok;

	while ((tok = strsep(&line, " \t\n")) != NULL) {
		if (!*tok)
			continue;
		if (n == max)
			return -E2BIG;
		w[n++] = tok;
	}
	return n;
}

static int run_command(struct dentry_session *s, char *line)
{
	u64 a, b, c;
	char *w[6];
	int n;

	n = split_words(line, w, ARRAY_SIZE(w));
	if (n <= 0)
		return n ?: -EINVAL;
	if (!strcmp(w[0], "open") && n == 3) {
		struct pmidx_handle *h;

		if (s->h)
			return -EBUSY;
		h = pmidx_index_open(w[1], w[2]);
		if (IS_ERR(h))
			return PTR_ERR(h);
		s->h = h;
		return 0;
	}
	if (!strcmp(w[0], "close") && n == 1) {
		if (!s->h)
			return -EBADF;
		pmidx_index_close(s->h);
		s->h = NULL;
		return 0;
	}
	if (!s->h)
		return -EBADF;
	if (!strcmp(w[0], "bench") && n == 5 && !kstrtou64(w[2], 0, &a) &&
	    !kstrtou64(w[3], 0, &b) && !kstrtou64(w[4], 0, &c) &&
	    c <= BENCH_VAL_MAX)
		return do_bench(s, w[1], a, b, c);
	/* the rest name a directory first */
	if (n < 2 || kstrtou64(w[1], 0, &a))
		return -EINVAL;
	if (!strcmp(w[0], "create") && n == 4 && !kstrtou64(w[3], 0, &b))
		return do_create(s, a, w[2], b);
	if (!strcmp(w[0], "lookup") && n == 3) {
		int ret = lookup_ino(s, a, w[2], &b);

		if (!ret)
			out_printf(s, "ino=%llu\n", b);
		return ret;
	}
	if (!strcmp(w[0], "unlink") && n == 3)
		return do_unlink(s, a, w[2]);
	if (!strcmp(w[0], "rename") && n == 5 && !kstrtou64(w[3], 0, &b))
		return do_rename(s, a, w[2], b, w[4]);
	if (!strcmp(w[0], "list") && n == 2)
		return do_list(s, a);
	return -EINVAL;
}

static ssize_t pmidx_dentry_write(struct file *file, const char __user *buf,
			    size_t len, loff_t *ppos)
{
	struct dentry_session *s = file->private_data;
	char *line;
	int ret;

	if (!len || len >= CMD_MAX)
		return -EINVAL;
	line = memdup_user_nul(buf, len);
	if (IS_ERR(line))
		return PTR_ERR(line);
	mutex_lock(&s->lock);
	s->out_len = 0;
	s->out[0] = 0;
	ret = run_command(s, line);
	*ppos = 0;		/* the next read starts at the new output */
	mutex_unlock(&s->lock);
	kfree(line);
	return ret ?: len;
}

static ssize_t pmidx_dentry_read(struct file *file, char __user *buf, size_t len,
			   loff_t *ppos)
{
	struct dentry_session *s = file->private_data;
	ssize_t ret;

	mutex_lock(&s->lock);
	ret = simple_read_from_buffer(buf, len, ppos, s->out, s->out_len);
	mutex_unlock(&s->lock);
	return ret;
}

static int pmidx_dentry_open(struct inode *inode, struct file *file)
{
	struct dentry_session *s;

	s = kzalloc(sizeof(*s), GFP_KERNEL);
	if (!s)
		return -ENOMEM;
	s->out = kvzalloc(OUT_MAX, GFP_KERNEL);
	if (!s->out) {
		kfree(s);
		return -ENOMEM;
	}
	mutex_init(&s->lock);
	file->private_data = s;
	return 0;
}

static int pmidx_dentry_release(struct inode *inode, struct file *file)
{
	struct dentry_session *s = file->private_data;

	pmidx_index_close(s->h);
	kvfree(s->out);
	mutex_destroy(&s->lock);
	kfree(s);
	return 0;
}

static const struct file_operations dentry_fops = {
	.owner		= THIS_MODULE,
	.open		= pmidx_dentry_open,
	.release	= pmidx_dentry_release,
	.read		= pmidx_dentry_read,
	.write		= pmidx_dentry_write,
	.llseek		= default_llseek,
};

static struct miscdevice dentry_misc = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= "pmidx_dentry",
	.fops	= &dentry_fops,
	.mode	= 0600,
};

module_misc_device(dentry_misc);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("pmidx sample client: a directory-entry table");
MODULE_AUTHOR("The pmidx developers");
