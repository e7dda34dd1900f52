// SPDX-License-Identifier: GPL-2.0
/*
 * pmidxctl: data subcommands - put, get, del, scan and check - through
 * libpmidx on the pool's char device (/dev/pmidxN).
 *
 * Keys and values are taken literally from the command line; --hex reads
 * and prints them as hex digits, --u64 reads and prints keys as unsigned
 * numbers (stored big-endian, so they scan in numeric order). Printed
 * text escapes what is not printable UTF-8 (\xNN, \t, \n, \\); JSON
 * carries "key"/"value" strings, or "key_hex"/"value_hex" for bytes
 * that are not text.
 *
 * An empty START scans from the first key, an empty END has no bound.
 *
 * The pool: --pool POOL, else the only attached pool, else the one pool
 * that has an index of that name (found over netlink).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <pmidx.h>

#include "genl.h"
#include "pmidxctl.h"
#include "print.h"

enum {
	OPT_POOL = 1,
	OPT_HEX,
	OPT_U64,
	OPT_JSON,
	OPT_LIMIT,
	OPT_INSERT,
};

struct blob {
	uint8_t *p;
	size_t len;
	bool owned;
};

struct data_args {
	const struct pm_cmd *cmd;
	struct pm_pool_sel pool;
	bool hex, u64, json, insert;
	uint64_t limit;
	const char *name;
	struct blob arg[3];	/* key/value or start/end, after the name */
	int nargs;
};

/* ---- keys and values on the command line --------------------------- */

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static int parse_hex(const char *s, struct blob *b)
{
	size_t n = strlen(s), i;
	int hi, lo;

	if (n % 2)
		return -1;
	b->len = n / 2;
	b->p = malloc(b->len ? b->len : 1);
	if (!b->p)
		return -1;
	b->owned = true;
	for (i = 0; i < b->len; i++) {
		hi = hex_digit(s[2 * i]);
		lo = hex_digit(s[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -1;
		b->p[i] = hi << 4 | lo;
	}
	return 0;
}

/* Usage error (exit status) or -1 when @s parsed into @b. */
static int parse_blob(const struct data_args *a, const char *s, bool key,
		      struct blob *b)
{
	uint64_t v;

	memset(b, 0, sizeof(*b));
	if (key && a->u64) {
		if (pm_parse_u64(s, &v))
			return pm_usage_error(a->cmd, "invalid key '%s' (expected an unsigned number)", s);
		b->p = malloc(PMIDX_U64_KEY_LEN);
		if (!b->p)
			return PM_EXIT_FAIL;
		b->owned = true;
		b->len = PMIDX_U64_KEY_LEN;
		pmidx_key_from_u64(v, b->p);
		return -1;
	}
	if (a->hex) {
		if (parse_hex(s, b))
			return pm_usage_error(a->cmd, "invalid hex %s '%s'",
					      key ? "key" : "value", s);
		return -1;
	}
	b->p = (uint8_t *)s;
	b->len = strlen(s);
	return -1;
}

static void free_args(struct data_args *a)
{
	int i;

	for (i = 0; i < 3; i++)
		if (a->arg[i].owned)
			free(a->arg[i].p);
}

/*
 * The command line: NAME then @min..@max arguments, the first @nkeys of
 * them keys. Return -1 to go on, else the exit status.
 */
static int parse_args(const struct pm_cmd *cmd, int argc, char **argv,
		      int min, int max, int nkeys, struct data_args *a)
{
	struct pm_optparse p;
	int ret, i;

	memset(a, 0, sizeof(*a));
	a->cmd = cmd;
	pm_opt_init(&p, cmd, argc, argv);
	while ((ret = pm_opt_next(&p)) > 0) {
		switch (ret) {
		case OPT_POOL:
			if (!pm_opt_pool(&p, p.val, &a->pool))
				return PM_EXIT_USAGE;
			break;
		case OPT_HEX:
			a->hex = true;
			break;
		case OPT_U64:
			a->u64 = true;
			break;
		case OPT_JSON:
			a->json = true;
			break;
		case OPT_INSERT:
			a->insert = true;
			break;
		case OPT_LIMIT:
			if (!pm_opt_u64(&p, &a->limit))
				return PM_EXIT_USAGE;
			if (!a->limit)
				return pm_usage_error(cmd, "--limit must be at least 1");
			break;
		}
	}
	if (ret < 0)
		return pm_opt_exit(ret);
	if (!pm_opt_want(&p, min + 1, max + 1))
		return PM_EXIT_USAGE;
	a->name = p.pos[0];
	a->nargs = p.npos - 1;
	for (i = 0; i < a->nargs; i++) {
		ret = parse_blob(a, p.pos[i + 1], i < nkeys, &a->arg[i]);
		if (ret >= 0)
			return ret;
	}
	return -1;
}

/* ---- output -------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at s (n bytes left), 0 if invalid. */
static size_t utf8_seq(const uint8_t *s, size_t n)
{
	uint32_t cp;
	size_t len, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		len = 2;
		cp = s[0] & 0x1f;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		len = 3;
		cp = s[0] & 0x0f;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		len = 4;
		cp = s[0] & 0x07;
	} else {
		return 0;
	}
	if (len > n)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
	    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

/* Text JSON can carry as a string: valid UTF-8 without NUL bytes. */
static bool is_text(const uint8_t *p, size_t n)
{
	size_t i = 0, k;

	while (i < n) {
		k = utf8_seq(p + i, n - i);
		if (!k || !p[i])
			return false;
		i += k;
	}
	return true;
}

static void print_hex(FILE *f, const uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		fprintf(f, "%02x", p[i]);
}

/* Printable UTF-8 as is; \\, \t, \n, \r and \xNN for everything else. */
static void print_text(FILE *f, const uint8_t *p, size_t n)
{
	size_t i = 0, k;

	while (i < n) {
		k = utf8_seq(p + i, n - i);
		if (k > 1) {
			fwrite(p + i, 1, k, f);
			i += k;
			continue;
		}
		switch (p[i]) {
		case '\\':
			fputs("\\\\", f);
			break;
		case '\t':
			fputs("\\t", f);
			break;
		case '\n':
			fputs("\\n", f);
			break;
		case '\r':
			fputs("\\r", f);
			break;
		default:
			if (p[i] < 0x20 || p[i] >= 0x7f)
				fprintf(f, "\\x%02x", p[i]);
			else
				fputc(p[i], f);
		}
		i++;
	}
}

static void print_bytes(FILE *f, const struct data_args *a, bool key,
			const void *p, size_t n)
{
	uint64_t v;

	if (key && a->u64 && !pmidx_key_to_u64(p, n, &v))
		fprintf(f, "%" PRIu64, v);
	else if (a->hex)
		print_hex(f, p, n);
	else
		print_text(f, p, n);
}

static void json_bytes(struct pm_json *j, const struct data_args *a,
		       bool key, const void *p, size_t n)
{
	const char *name = key ? "key" : "value";
	char tag[16], *s;
	FILE *mem;
	size_t len;
	uint64_t v;

	if (key && a->u64 && !pmidx_key_to_u64(p, n, &v)) {
		pm_json_u64(j, name, v);
		return;
	}
	s = NULL;
	mem = open_memstream(&s, &len);
	if (!mem) {
		pm_json_null(j, name);
		return;
	}
	if (a->hex || !is_text(p, n)) {
		if (!a->hex) {
			snprintf(tag, sizeof(tag), "%s_hex", name);
			name = tag;
		}
		print_hex(mem, p, n);
	} else {
		fwrite(p, 1, n, mem);
	}
	fclose(mem);
	pm_json_str(j, name, s);
	free(s);
}

/* ---- pool and index ------------------------------------------------ */

struct pool_ref {
	uint32_t id;
	char dev[PATH_MAX];
	bool has_index;		/* holds an index named like the one wanted */
};

#define MAX_POOLS	64

struct pool_list {
	const char *index;
	struct pool_ref pools[MAX_POOLS];
	int n;
};

static struct pool_ref *pool_by_id(struct pool_list *l, uint32_t id)
{
	int i;

	for (i = 0; i < l->n; i++)
		if (l->pools[i].id == id)
			return &l->pools[i];
	return NULL;
}

/* LIST dump: POOL messages, then INDEX messages naming their pool. */
static int list_cb(struct pm_genl *g, uint8_t cmd, struct nlattr **tb,
		   void *arg)
{
	struct nlattr *nt[PMIDX_ATTR_MAX + 1];
	struct pool_list *l = arg;
	struct pool_ref *p;

	(void)cmd;
	if (tb[PMIDX_ATTR_POOL]) {
		if (pm_genl_parse_nested(nt, tb[PMIDX_ATTR_POOL]) < 0 ||
		    !nt[PMIDX_ATTR_POOL_ID])
			return pm_genl_bad_reply(g, "POOL nest without POOL_ID");
		if (l->n == MAX_POOLS)
			return 0;
		p = &l->pools[l->n++];
		memset(p, 0, sizeof(*p));
		p->id = nla_get_u32(nt[PMIDX_ATTR_POOL_ID]);
		if (nt[PMIDX_ATTR_DEV_PATH])
			snprintf(p->dev, sizeof(p->dev), "%s",
				 nla_get_string(nt[PMIDX_ATTR_DEV_PATH]));
	}
	if (tb[PMIDX_ATTR_INDEX]) {
		if (pm_genl_parse_nested(nt, tb[PMIDX_ATTR_INDEX]) < 0 ||
		    !nt[PMIDX_ATTR_POOL_ID] || !nt[PMIDX_ATTR_INDEX_NAME])
			return pm_genl_bad_reply(g, "INDEX nest without POOL_ID or INDEX_NAME");
		p = pool_by_id(l, nla_get_u32(nt[PMIDX_ATTR_POOL_ID]));
		if (p && !strcmp(nla_get_string(nt[PMIDX_ATTR_INDEX_NAME]),
				 l->index))
			p->has_index = true;
	}
	return 0;
}

static bool same_dev(const char *attached, const char *wanted)
{
	char a[PATH_MAX], w[PATH_MAX];

	if (!attached[0])
		return false;
	if (!strcmp(attached, wanted))
		return true;
	return realpath(attached, a) && realpath(wanted, w) && !strcmp(a, w);
}

static int pick_pool(struct pm_genl *g, struct pool_list *l,
		     const struct data_args *a, uint32_t *id)
{
	char why[PATH_MAX + 96];
	int i, found = -1, n = 0;

	if (a->pool.kind == PM_SEL_DEV) {
		for (i = 0; i < l->n; i++)
			if (same_dev(l->pools[i].dev, a->pool.str))
				found = i;
		snprintf(why, sizeof(why), "no pool attached on %s", a->pool.str);
		if (found < 0)
			return pm_genl_fail(g, ENODEV, why);
	} else if (l->n == 0) {
		return pm_genl_fail(g, ENODEV, "no pools attached");
	} else if (l->n == 1) {
		found = 0;
	} else {
		for (i = 0; i < l->n; i++)
			if (l->pools[i].has_index && n++ == 0)
				found = i;
		if (n > 1) {
			snprintf(why, sizeof(why), "index %s exists in several pools; choose one with --pool",
				 a->name);
			return pm_genl_fail(g, EINVAL, why);
		}
		if (!n) {
			snprintf(why, sizeof(why), "no index %s in any attached pool",
				 a->name);
			return pm_genl_fail(g, ENOENT, why);
		}
	}
	*id = l->pools[found].id;
	return 0;
}

/* The char device of the pool the command is for; 0 or exit status. */
static int pool_path(const struct data_args *a, char *path, size_t len)
{
	struct pool_list *l;
	struct pm_genl g;
	struct nl_msg *msg;
	uint32_t id = 0;
	int ret;

	if (a->pool.kind == PM_SEL_ID) {
		snprintf(path, len, "/dev/pmidx%u", a->pool.id);
		return 0;
	}
	if (a->pool.kind == PM_SEL_NAME) {
		snprintf(path, len, "/dev/%s", a->pool.str);
		return 0;
	}
	l = calloc(1, sizeof(*l));
	if (!l)
		return PM_EXIT_FAIL;
	l->index = a->name;
	if (pm_genl_open(&g)) {
		free(l);
		return PM_EXIT_FAIL;
	}
	msg = pm_genl_msg(&g, PMIDX_CMD_LIST, true);
	ret = pm_genl_request(&g, msg, list_cb, l);
	if (!ret)
		ret = pick_pool(&g, l, a, &id);
	if (ret)
		pm_genl_perror(&g, "%s %s", a->cmd->name, a->name);
	else
		snprintf(path, len, "/dev/pmidx%u", id);
	pm_genl_close(&g);
	free(l);
	return ret ? PM_EXIT_FAIL : 0;
}

static int data_error(const struct data_args *a, int err, const char *what)
{
	fprintf(stderr, "%s: %s %s: %s\n", PMIDXCTL_PROG, a->cmd->name,
		a->name, what ? what : pmidx_strerror(err));
	return PM_EXIT_FAIL;
}

/* Open the pool and the index; 0 or the exit status. */
static int open_index(const struct data_args *a, struct pmidx_pool **pool,
		      struct pmidx_index **idx)
{
	char path[PATH_MAX], why[PATH_MAX + 64];
	int ret;

	ret = pool_path(a, path, sizeof(path));
	if (ret)
		return ret;
	ret = pmidx_pool_open(path, 0, pool);
	if (ret) {
		snprintf(why, sizeof(why), "%s: %s", path, ret == -ENOENT ?
			 "no such pool device" : pmidx_strerror(ret));
		return data_error(a, ret, why);
	}
	ret = pmidx_index_open(*pool, a->name, idx);
	if (ret) {
		snprintf(why, sizeof(why), ret == -ENOENT ?
			 "no such index in %s" : "%s: %s", path,
			 pmidx_strerror(ret));
		pmidx_pool_close(*pool);
		return data_error(a, ret, why);
	}
	return 0;
}

static void close_index(struct pmidx_pool *pool, struct pmidx_index *idx)
{
	pmidx_index_close(idx);
	pmidx_pool_close(pool);
}

/*
 * Parse the command line, open the pool and the index: -1 to go on,
 * else the exit status (--help, usage error, no such pool or index).
 */
static int start(const struct pm_cmd *cmd, int argc, char **argv, int min,
		 int max, int nkeys, struct data_args *a,
		 struct pmidx_pool **pool, struct pmidx_index **idx)
{
	int ret = parse_args(cmd, argc, argv, min, max, nkeys, a);

	if (ret < 0) {
		ret = open_index(a, pool, idx);
		if (!ret)
			return -1;
	}
	free_args(a);
	return ret;
}

/* Explain an operation's error in the terms of its arguments. */
static int op_error(const struct data_args *a, int err, size_t key_len)
{
	char why[96];

	if (err == -ENOENT)
		return data_error(a, err, "no such key");
	if (err == -EEXIST)
		return data_error(a, err, "key exists (--insert)");
	if (err == -EINVAL && (key_len < 1 || key_len > PMIDX_KEY_MAX)) {
		snprintf(why, sizeof(why), "keys are 1..%d bytes, not %zu",
			 PMIDX_KEY_MAX, key_len);
		return data_error(a, err, why);
	}
	return data_error(a, err, NULL);
}

/* ---- subcommands --------------------------------------------------- */

static int cmd_put(const struct pm_cmd *cmd, int argc, char **argv)
{
	struct pmidx_index *idx;
	struct pmidx_pool *pool;
	struct data_args a;
	int ret;

	ret = start(cmd, argc, argv, 2, 2, 1, &a, &pool, &idx);
	if (ret >= 0)
		return ret;
	ret = pmidx_put(idx, a.arg[0].p, a.arg[0].len, a.arg[1].p,
			a.arg[1].len, a.insert ? PMIDX_PUT_INSERT : 0);
	if (ret)
		ret = op_error(&a, ret, a.arg[0].len);
	close_index(pool, idx);
	free_args(&a);
	return ret;
}

static int cmd_get(const struct pm_cmd *cmd, int argc, char **argv)
{
	struct pmidx_index *idx;
	struct pmidx_pool *pool;
	struct data_args a;
	struct pm_json j;
	size_t len;
	void *val;
	int ret;

	ret = start(cmd, argc, argv, 1, 1, 1, &a, &pool, &idx);
	if (ret >= 0)
		return ret;
	ret = pmidx_get_alloc(idx, a.arg[0].p, a.arg[0].len, &val, &len);
	if (ret) {
		ret = op_error(&a, ret, a.arg[0].len);
	} else if (a.json) {
		pm_json_init(&j, stdout);
		pm_json_obj_open(&j, NULL);
		json_bytes(&j, &a, true, a.arg[0].p, a.arg[0].len);
		json_bytes(&j, &a, false, val, len);
		pm_json_obj_close(&j);
		free(val);
	} else {
		print_bytes(stdout, &a, false, val, len);
		putchar('\n');
		free(val);
	}
	close_index(pool, idx);
	free_args(&a);
	return ret;
}

static int cmd_del(const struct pm_cmd *cmd, int argc, char **argv)
{
	struct pmidx_index *idx;
	struct pmidx_pool *pool;
	struct data_args a;
	int ret;

	ret = start(cmd, argc, argv, 1, 1, 1, &a, &pool, &idx);
	if (ret >= 0)
		return ret;
	ret = pmidx_del(idx, a.arg[0].p, a.arg[0].len);
	if (ret)
		ret = op_error(&a, ret, a.arg[0].len);
	close_index(pool, idx);
	free_args(&a);
	return ret;
}

static int do_scan(const struct data_args *a, struct pmidx_index *idx)
{
	const struct blob *start = &a->arg[0], *end = &a->arg[1];
	struct pmidx_scan *s;
	struct pmidx_kv kv;
	struct pm_json j;
	int ret;

	ret = pmidx_scan_open(idx, start->p, start->len, end->p, end->len,
			      a->limit, 0, &s);
	if (ret == -EINVAL)
		return data_error(a, ret, "START and END are at most 255 bytes");
	if (ret)
		return data_error(a, ret, NULL);
	if (a->json) {
		pm_json_init(&j, stdout);
		pm_json_obj_open(&j, NULL);
		pm_json_arr_open(&j, "records");
	}
	while ((ret = pmidx_scan_next(s, &kv)) == 1) {
		if (a->json) {
			pm_json_obj_open(&j, NULL);
			json_bytes(&j, a, true, kv.key, kv.key_len);
			json_bytes(&j, a, false, kv.val, kv.val_len);
			pm_json_obj_close(&j);
			continue;
		}
		print_bytes(stdout, a, true, kv.key, kv.key_len);
		putchar('\t');
		print_bytes(stdout, a, false, kv.val, kv.val_len);
		putchar('\n');
	}
	if (a->json && !ret) {
		pm_json_arr_close(&j);
		pm_json_obj_close(&j);
	}
	pmidx_scan_close(s);
	if (ret) {
		fflush(stdout);
		return data_error(a, ret, NULL);
	}
	return 0;
}

static int cmd_scan(const struct pm_cmd *cmd, int argc, char **argv)
{
	struct pmidx_index *idx;
	struct pmidx_pool *pool;
	struct data_args a;
	int ret;

	ret = start(cmd, argc, argv, 0, 2, 2, &a, &pool, &idx);
	if (ret >= 0)
		return ret;
	ret = do_scan(&a, idx);
	close_index(pool, idx);
	free_args(&a);
	return ret;
}

static int cmd_check(const struct pm_cmd *cmd, int argc, char **argv)
{
	struct pmidx_index *idx;
	struct pmidx_pool *pool;
	struct data_args a;
	struct pm_json j;
	uint64_t keys;
	int ret;

	ret = start(cmd, argc, argv, 0, 0, 0, &a, &pool, &idx);
	if (ret >= 0)
		return ret;
	ret = pmidx_check(idx, &keys);
	if (ret) {
		ret = data_error(&a, ret, NULL);
	} else if (a.json) {
		pm_json_init(&j, stdout);
		pm_json_obj_open(&j, NULL);
		pm_json_str(&j, "index", a.name);
		pm_json_str(&j, "engine",
			    pmidx_engine_name(pmidx_index_engine(idx)));
		pm_json_u64(&j, "keys", keys);
		pm_json_obj_close(&j);
	} else {
		printf("index %s (%s): ok, %" PRIu64 " keys\n", a.name,
		       pmidx_engine_name(pmidx_index_engine(idx)) ?: "?", keys);
	}
	close_index(pool, idx);
	return ret;
}

/* ---- table --------------------------------------------------------- */

static const struct pm_opt put_opts[] = {
	{ .name = "pool", .has_arg = true, .id = OPT_POOL },
	{ .name = "hex", .id = OPT_HEX },
	{ .name = "u64", .id = OPT_U64 },
	{ .name = "insert", .id = OPT_INSERT },
	{ .name = NULL },
};

static const struct pm_opt get_opts[] = {
	{ .name = "pool", .has_arg = true, .id = OPT_POOL },
	{ .name = "hex", .id = OPT_HEX },
	{ .name = "u64", .id = OPT_U64 },
	{ .name = "json", .id = OPT_JSON },
	{ .name = NULL },
};

static const struct pm_opt del_opts[] = {
	{ .name = "pool", .has_arg = true, .id = OPT_POOL },
	{ .name = "hex", .id = OPT_HEX },
	{ .name = "u64", .id = OPT_U64 },
	{ .name = NULL },
};

static const struct pm_opt scan_opts[] = {
	{ .name = "pool", .has_arg = true, .id = OPT_POOL },
	{ .name = "hex", .id = OPT_HEX },
	{ .name = "u64", .id = OPT_U64 },
	{ .name = "json", .id = OPT_JSON },
	{ .name = "limit", .has_arg = true, .id = OPT_LIMIT },
	{ .name = NULL },
};

static const struct pm_opt check_opts[] = {
	{ .name = "pool", .has_arg = true, .id = OPT_POOL },
	{ .name = "json", .id = OPT_JSON },
	{ .name = NULL },
};

const struct pm_cmd pm_data_cmds[] = {
	{
		.name = "put",
		.fn = cmd_put,
		.args = "NAME KEY VALUE [--insert] [--hex] [--u64] [--pool POOL]",
		.summary = "Store VALUE under KEY (--insert: fail if KEY exists); durable when it returns.",
		.opts = put_opts,
	}, {
		.name = "get",
		.fn = cmd_get,
		.args = "NAME KEY [--json] [--hex] [--u64] [--pool POOL]",
		.summary = "Print the value stored under KEY.",
		.opts = get_opts,
	}, {
		.name = "del",
		.fn = cmd_del,
		.args = "NAME KEY [--hex] [--u64] [--pool POOL]",
		.summary = "Delete KEY.",
		.opts = del_opts,
	}, {
		.name = "scan",
		.fn = cmd_scan,
		.args = "NAME [START [END]] [--limit N] [--json] [--hex] [--u64] [--pool POOL]",
		.summary = "Print KEY<tab>VALUE lines in key order from START (\"\": the first key) up to END (exclusive).",
		.opts = scan_opts,
	}, {
		.name = "check",
		.fn = cmd_check,
		.args = "NAME [--json] [--pool POOL]",
		.summary = "Run the index's structural checker; prints the number of keys.",
		.opts = check_opts,
	},
	{ .name = NULL },
};
