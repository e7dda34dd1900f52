// SPDX-License-Identifier: GPL-2.0
/*
 * pmidxctl: admin subcommands - pools (format, attach, detach, list),
 * indexes (create-index, drop-index), statistics and the allocator
 * test, all over the "pmidx" generic netlink family.
 *
 * Every subcommand parses and checks its command line completely before
 * it opens the netlink socket, so usage errors never reach the kernel.
 * Values are only checked for syntax: limits (name length, thread
 * count, ...) are the kernel's to enforce, and its extack message is
 * what the user sees.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "genl.h"
#include "pmidxctl.h"
#include "print.h"

enum {
	OPT_FORCE = 1,
	OPT_JSON,
	OPT_ENGINE,
	OPT_POOL,
	OPT_MODE,
	OPT_THREADS,
	OPT_OPS,
	OPT_SIZE,
	OPT_SEED,
};

/* Defaults of alloc-test, the same as the kernel's. */
#define TEST_DEF_THREADS	4
#define TEST_DEF_OPS		10000
#define TEST_DEF_SIZE		0	/* random */
#define TEST_DEF_SEED		1

/* ---- reply decoding ------------------------------------------------ */

static int dup_str(struct nlattr *a, char **out)
{
	if (!a)
		return 0;
	*out = strdup(nla_get_string(a));
	return *out ? 0 : -ENOMEM;
}

/* u64 values keyed by enum pmidx_stat; type 0 is alignment padding. */
static int parse_stats(struct nlattr *nest, struct pm_stats *st)
{
	struct nlattr *a;
	uint64_t val;
	int rem;

	st->present = true;
	nla_for_each_nested(a, nest, rem) {
		if (nla_type(a) == PMIDX_STAT_UNSPEC)
			continue;
		if (nla_len(a) == sizeof(uint64_t))
			val = nla_get_u64(a);
		else if (nla_len(a) == sizeof(uint32_t))
			val = nla_get_u32(a);
		else
			continue;
		if (pm_stats_add(st, nla_type(a), val))
			return -ENOMEM;
	}
	return 0;
}

/* An INDEX nest; parent_id is the enclosing pool's id, if any. */
static int parse_index(struct pm_genl *g, struct nlattr *nest,
		       const uint32_t *parent_id, struct pm_index *ix)
{
	struct nlattr *tb[PMIDX_ATTR_MAX + 1];

	if (pm_genl_parse_nested(tb, nest) < 0)
		return pm_genl_bad_reply(g, "INDEX nest failed validation");
	if (!tb[PMIDX_ATTR_INDEX_ID] || !tb[PMIDX_ATTR_INDEX_NAME])
		return pm_genl_bad_reply(g, "INDEX nest without INDEX_ID or INDEX_NAME");
	if (tb[PMIDX_ATTR_POOL_ID])
		ix->pool_id = nla_get_u32(tb[PMIDX_ATTR_POOL_ID]);
	else if (parent_id)
		ix->pool_id = *parent_id;
	else
		return pm_genl_bad_reply(g, "INDEX nest without POOL_ID");
	ix->id = nla_get_u32(tb[PMIDX_ATTR_INDEX_ID]);
	if (tb[PMIDX_ATTR_ENGINE])
		ix->engine = nla_get_u32(tb[PMIDX_ATTR_ENGINE]);
	if (dup_str(tb[PMIDX_ATTR_INDEX_NAME], &ix->name) ||
	    dup_str(tb[PMIDX_ATTR_ENGINE_NAME], &ix->engine_name))
		return -ENOMEM;
	if (tb[PMIDX_ATTR_STATS])
		return parse_stats(tb[PMIDX_ATTR_STATS], &ix->stats);
	return 0;
}

static void parse_pool_scalars(struct nlattr **tb, struct pm_pool *p)
{
	p->id = nla_get_u32(tb[PMIDX_ATTR_POOL_ID]);
	if (tb[PMIDX_ATTR_POOL_UUID]) {
		memcpy(p->uuid, nla_data(tb[PMIDX_ATTR_POOL_UUID]),
		       sizeof(p->uuid));
		p->has_uuid = true;
	}
	if (tb[PMIDX_ATTR_POOL_SIZE]) {
		p->size = nla_get_u64(tb[PMIDX_ATTR_POOL_SIZE]);
		p->has_size = true;
	}
	if (tb[PMIDX_ATTR_POOL_FLAGS])
		p->flags = nla_get_u32(tb[PMIDX_ATTR_POOL_FLAGS]);
}

/* A POOL nest, with any INDEX nests inside it. */
static int parse_pool(struct pm_genl *g, struct nlattr *nest,
		      struct pm_pool *p)
{
	struct nlattr *tb[PMIDX_ATTR_MAX + 1];
	struct pm_index *ix;
	struct nlattr *a;
	int rem, ret;

	if (pm_genl_parse_nested(tb, nest) < 0)
		return pm_genl_bad_reply(g, "POOL nest failed validation");
	if (!tb[PMIDX_ATTR_POOL_ID])
		return pm_genl_bad_reply(g, "POOL nest without POOL_ID");
	parse_pool_scalars(tb, p);
	if (dup_str(tb[PMIDX_ATTR_POOL_NAME], &p->name) ||
	    dup_str(tb[PMIDX_ATTR_DEV_PATH], &p->dev))
		return -ENOMEM;
	if (tb[PMIDX_ATTR_STATS]) {
		ret = parse_stats(tb[PMIDX_ATTR_STATS], &p->stats);
		if (ret)
			return ret;
	}
	nla_for_each_nested(a, nest, rem) {
		if (nla_type(a) != PMIDX_ATTR_INDEX)
			continue;
		ix = pm_pool_add_index(p);
		if (!ix)
			return -ENOMEM;
		ret = parse_index(g, a, &p->id, ix);
		if (ret)
			return ret;
	}
	return 0;
}

/* Reply callback: every POOL and INDEX nest goes into a struct pm_view. */
static int collect_cb(struct pm_genl *g, uint8_t cmd, struct nlattr **tb,
		      void *arg)
{
	struct pm_view *v = arg;
	struct pm_index *ix;
	struct pm_pool *p;
	int ret;

	(void)cmd;
	if (tb[PMIDX_ATTR_POOL]) {
		p = pm_view_add_pool(v);
		if (!p)
			return -ENOMEM;
		ret = parse_pool(g, tb[PMIDX_ATTR_POOL], p);
		if (ret)
			return ret;
	}
	if (tb[PMIDX_ATTR_INDEX]) {
		ix = pm_view_add_index(v);
		if (!ix)
			return -ENOMEM;
		return parse_index(g, tb[PMIDX_ATTR_INDEX], NULL, ix);
	}
	return 0;
}

/* ---- pool selectors ------------------------------------------------ */

static bool same_dev(const char *attached, const char *wanted)
{
	char a[PATH_MAX], w[PATH_MAX];

	if (!attached)
		return false;
	if (!strcmp(attached, wanted))
		return true;
	return realpath(attached, a) && realpath(wanted, w) && !strcmp(a, w);
}

/*
 * Only DETACH takes DEV_PATH as a pool selector; for the others a
 * device path is turned into the POOL_ID of the pool attached there.
 * Errors are left in g->err for the caller's pm_genl_perror().
 */
static int resolve_dev(struct pm_genl *g, struct pm_pool_sel *sel)
{
	struct pm_view v = { 0 };
	struct nl_msg *msg;
	char why[PATH_MAX + 32];
	size_t i;
	int ret;

	if (sel->kind != PM_SEL_DEV)
		return 0;
	msg = pm_genl_msg(g, PMIDX_CMD_LIST, true);
	ret = pm_genl_request(g, msg, collect_cb, &v);
	if (ret)
		goto out;
	for (i = 0; i < v.npools; i++)
		if (same_dev(v.pools[i].dev, sel->str))
			break;
	if (i == v.npools) {
		snprintf(why, sizeof(why), "no pool attached on %s", sel->str);
		ret = pm_genl_fail(g, ENODEV, why);
		goto out;
	}
	sel->kind = PM_SEL_ID;
	sel->id = v.pools[i].id;
out:
	pm_view_free(&v);
	return ret;
}

static void put_pool_sel(struct pm_genl *g, struct nl_msg *msg,
			 const struct pm_pool_sel *sel)
{
	switch (sel->kind) {
	case PM_SEL_ID:
		pm_put_u32(g, msg, PMIDX_ATTR_POOL_ID, sel->id);
		break;
	case PM_SEL_NAME:
		pm_put_str(g, msg, PMIDX_ATTR_POOL_NAME, sel->str);
		break;
	case PM_SEL_DEV:
		pm_put_str(g, msg, PMIDX_ATTR_DEV_PATH, sel->str);
		break;
	case PM_SEL_NONE:
		break;
	}
}

/*
 * Parses a command line without options of its own. Like the other
 * parse_*() helpers: -1 to go on, else the exit status to return.
 */
static int parse_plain(struct pm_optparse *p, const struct pm_cmd *cmd,
		       int argc, char **argv, int min, int max)
{
	int ret;

	pm_opt_init(p, cmd, argc, argv);
	while ((ret = pm_opt_next(p)) > 0)
		;
	if (ret < 0)
		return pm_opt_exit(ret);
	return pm_opt_want(p, min, max) ? -1 : PM_EXIT_USAGE;
}

static int exit_status(int ret)
{
	return ret ? PM_EXIT_FAIL : PM_EXIT_OK;
}

/* ---- format, attach, detach, list ---------------------------------- */

static int cmd_format(const struct pm_cmd *cmd, int argc, char **argv)
{
	struct pm_optparse p;
	struct pm_genl g;
	struct nl_msg *msg;
	bool force = false;
	int ret;

	pm_opt_init(&p, cmd, argc, argv);
	while ((ret = pm_opt_next(&p)) > 0)
		if (ret == OPT_FORCE)
			force = true;
	if (ret < 0)
		return pm_opt_exit(ret);
	if (!pm_opt_want(&p, 1, 1))
		return PM_EXIT_USAGE;
	if (pm_genl_open(&g))
		return PM_EXIT_FAIL;
	msg = pm_genl_msg(&g, PMIDX_CMD_FORMAT, false);
	pm_put_str(&g, msg, PMIDX_ATTR_DEV_PATH, p.pos[0]);
	if (force)
		pm_put_flag(&g, msg, PMIDX_ATTR_FORCE);
	ret = pm_genl_request(&g, msg, NULL, NULL);
	if (ret)
		pm_genl_perror(&g, "format %s", p.pos[0]);
	pm_genl_close(&g);
	return exit_status(ret);
}

static int cmd_attach(const struct pm_cmd *cmd, int argc, char **argv)
{
	struct pm_view v = { 0 };
	struct pm_optparse p;
	struct pm_genl g;
	struct nl_msg *msg;
	char buf[32];
	int ret;

	ret = parse_plain(&p, cmd, argc, argv, 1, 1);
	if (ret >= 0)
		return ret;
	if (pm_genl_open(&g))
		return PM_EXIT_FAIL;
	msg = pm_genl_msg(&g, PMIDX_CMD_ATTACH, false);
	pm_put_str(&g, msg, PMIDX_ATTR_DEV_PATH, p.pos[0]);
	ret = pm_genl_request(&g, msg, collect_cb, &v);
	if (!ret && !v.npools)
		ret = pm_genl_bad_reply(&g, "no POOL nest in the reply");
	if (ret)
		pm_genl_perror(&g, "attach %s", p.pos[0]);
	else
		printf("%s\n", pm_pool_name(&v.pools[0], buf, sizeof(buf)));
	pm_view_free(&v);
	pm_genl_close(&g);
	return exit_status(ret);
}

static int cmd_detach(const struct pm_cmd *cmd, int argc, char **argv)
{
	struct pm_pool_sel sel;
	struct pm_optparse p;
	struct pm_genl g;
	struct nl_msg *msg;
	int ret;

	ret = parse_plain(&p, cmd, argc, argv, 1, 1);
	if (ret >= 0)
		return ret;
	if (!pm_opt_pool(&p, p.pos[0], &sel))
		return PM_EXIT_USAGE;
	if (pm_genl_open(&g))
		return PM_EXIT_FAIL;
	msg = pm_genl_msg(&g, PMIDX_CMD_DETACH, false);
	put_pool_sel(&g, msg, &sel);
	ret = pm_genl_request(&g, msg, NULL, NULL);
	if (ret)
		pm_genl_perror(&g, "detach %s", sel.arg);
	pm_genl_close(&g);
	return exit_status(ret);
}

static int cmd_list(const struct pm_cmd *cmd, int argc, char **argv)
{
	struct pm_view v = { 0 };
	struct pm_optparse p;
	struct pm_genl g;
	struct nl_msg *msg;
	bool json = false;
	int ret;

	pm_opt_init(&p, cmd, argc, argv);
	while ((ret = pm_opt_next(&p)) > 0)
		if (ret == OPT_JSON)
			json = true;
	if (ret < 0)
		return pm_opt_exit(ret);
	if (!pm_opt_want(&p, 0, 0))
		return PM_EXIT_USAGE;
	if (pm_genl_open(&g))
		return PM_EXIT_FAIL;
	msg = pm_genl_msg(&g, PMIDX_CMD_LIST, true);
	ret = pm_genl_request(&g, msg, collect_cb, &v);
	if (!ret && pm_view_adopt_indexes(&v))
		ret = -ENOMEM;
	if (ret)
		pm_genl_perror(&g, "list");
	else
		pm_print_list(stdout, &v, json);
	pm_view_free(&v);
	pm_genl_close(&g);
	return exit_status(ret);
}

/* ---- indexes ------------------------------------------------------- */

struct index_args {
	const char *name;
	int engine;		/* 0: let the kernel choose (CCL) */
	struct pm_pool_sel pool;
};

/* -1 to go on, else the exit status to return. */
static int parse_index_args(const struct pm_cmd *cmd, int argc, char **argv,
			    struct index_args *a)
{
	struct pm_optparse p;
	int ret;

	memset(a, 0, sizeof(*a));
	pm_opt_init(&p, cmd, argc, argv);
	while ((ret = pm_opt_next(&p)) > 0) {
		if (ret == OPT_POOL && !pm_opt_pool(&p, p.val, &a->pool))
			return PM_EXIT_USAGE;
		if (ret == OPT_ENGINE) {
			a->engine = pm_engine_lookup(p.val);
			if (a->engine <= 0)
				return pm_usage_error(cmd, "unknown engine '%s'",
						      p.val);
		}
	}
	if (ret < 0)
		return pm_opt_exit(ret);
	if (!pm_opt_want(&p, 1, 1))
		return PM_EXIT_USAGE;
	a->name = p.pos[0];
	return -1;
}

static int cmd_create_index(const struct pm_cmd *cmd, int argc, char **argv)
{
	struct pm_view v = { 0 };
	struct index_args a;
	struct pm_genl g;
	struct nl_msg *msg;
	int ret;

	ret = parse_index_args(cmd, argc, argv, &a);
	if (ret >= 0)
		return ret;
	if (pm_genl_open(&g))
		return PM_EXIT_FAIL;
	ret = resolve_dev(&g, &a.pool);
	if (ret)
		goto out;
	msg = pm_genl_msg(&g, PMIDX_CMD_CREATE_INDEX, false);
	pm_put_str(&g, msg, PMIDX_ATTR_INDEX_NAME, a.name);
	if (a.engine)
		pm_put_u32(&g, msg, PMIDX_ATTR_ENGINE, (uint32_t)a.engine);
	put_pool_sel(&g, msg, &a.pool);
	ret = pm_genl_request(&g, msg, collect_cb, &v);
	if (!ret && !v.nindexes)
		ret = pm_genl_bad_reply(&g, "no INDEX nest in the reply");
out:
	if (ret)
		pm_genl_perror(&g, "create-index %s", a.name);
	else
		pm_print_created_index(stdout, &v.indexes[0]);
	pm_view_free(&v);
	pm_genl_close(&g);
	return exit_status(ret);
}

static int cmd_drop_index(const struct pm_cmd *cmd, int argc, char **argv)
{
	struct index_args a;
	struct pm_genl g;
	struct nl_msg *msg;
	int ret;

	ret = parse_index_args(cmd, argc, argv, &a);
	if (ret >= 0)
		return ret;
	if (pm_genl_open(&g))
		return PM_EXIT_FAIL;
	ret = resolve_dev(&g, &a.pool);
	if (ret)
		goto out;
	msg = pm_genl_msg(&g, PMIDX_CMD_DROP_INDEX, false);
	pm_put_str(&g, msg, PMIDX_ATTR_INDEX_NAME, a.name);
	put_pool_sel(&g, msg, &a.pool);
	ret = pm_genl_request(&g, msg, NULL, NULL);
out:
	if (ret)
		pm_genl_perror(&g, "drop-index %s", a.name);
	pm_genl_close(&g);
	return exit_status(ret);
}

/* ---- stats --------------------------------------------------------- */

static int cmd_stats(const struct pm_cmd *cmd, int argc, char **argv)
{
	struct pm_pool_sel sel = { 0 };
	struct pm_view v = { 0 };
	struct pm_optparse p;
	const char *name;
	struct pm_genl g;
	struct nl_msg *msg;
	bool json = false;
	int ret;

	pm_opt_init(&p, cmd, argc, argv);
	while ((ret = pm_opt_next(&p)) > 0) {
		if (ret == OPT_JSON)
			json = true;
		if (ret == OPT_POOL && !pm_opt_pool(&p, p.val, &sel))
			return PM_EXIT_USAGE;
	}
	if (ret < 0)
		return pm_opt_exit(ret);
	if (!pm_opt_want(&p, 0, 1))
		return PM_EXIT_USAGE;
	name = p.npos ? p.pos[0] : NULL;
	if (pm_genl_open(&g))
		return PM_EXIT_FAIL;
	ret = resolve_dev(&g, &sel);
	if (ret)
		goto out;
	msg = pm_genl_msg(&g, PMIDX_CMD_STATS, true);
	if (name)
		pm_put_str(&g, msg, PMIDX_ATTR_INDEX_NAME, name);
	put_pool_sel(&g, msg, &sel);
	ret = pm_genl_request(&g, msg, collect_cb, &v);
	/* the dump filters silently: nothing matched */
	if (!ret && name && !v.nindexes)
		ret = pm_genl_fail(&g, ENOENT, "no such index");
out:
	if (ret)
		pm_genl_perror(&g, "stats%s%s", name ? " " : "",
			       name ? name : "");
	else
		pm_print_stats(stdout, &v, json);
	pm_view_free(&v);
	pm_genl_close(&g);
	return exit_status(ret);
}

/* ---- alloc-test ---------------------------------------------------- */

struct test_args {
	struct pm_test_params t;
	struct pm_pool_sel pool;
	bool json;
};

static bool test_opt(struct pm_optparse *p, int id, struct test_args *a)
{
	int mode;

	switch (id) {
	case OPT_MODE:
		mode = pm_test_mode_lookup(p->val);
		if (mode > 0) {
			a->t.mode = (uint32_t)mode;
			return true;
		}
		pm_usage_error(p->cmd, "unknown mode '%s'", p->val);
		return false;
	case OPT_THREADS:
		return pm_opt_u32(p, &a->t.threads);
	case OPT_OPS:
		return pm_opt_u32(p, &a->t.ops);
	case OPT_SIZE:
		return pm_opt_u32(p, &a->t.size);
	case OPT_SEED:
		return pm_opt_u64(p, &a->t.seed);
	case OPT_POOL:
		return pm_opt_pool(p, p->val, &a->pool);
	case OPT_JSON:
		a->json = true;
		return true;
	}
	return true;
}

/* -1 to go on, else the exit status to return. */
static int parse_test_args(const struct pm_cmd *cmd, int argc, char **argv,
			   struct test_args *a)
{
	struct pm_optparse p;
	int ret;

	memset(a, 0, sizeof(*a));
	a->t.mode = PMIDX_ALLOC_TEST_STORM;
	a->t.threads = TEST_DEF_THREADS;
	a->t.ops = TEST_DEF_OPS;
	a->t.size = TEST_DEF_SIZE;
	a->t.seed = TEST_DEF_SEED;
	pm_opt_init(&p, cmd, argc, argv);
	while ((ret = pm_opt_next(&p)) > 0)
		if (!test_opt(&p, ret, a))
			return PM_EXIT_USAGE;
	if (ret < 0)
		return pm_opt_exit(ret);
	return pm_opt_want(&p, 0, 0) ? -1 : PM_EXIT_USAGE;
}

static int cmd_alloc_test(const struct pm_cmd *cmd, int argc, char **argv)
{
	struct pm_view v = { 0 };
	struct test_args a;
	struct pm_genl g;
	struct nl_msg *msg;
	int ret;

	ret = parse_test_args(cmd, argc, argv, &a);
	if (ret >= 0)
		return ret;
	if (pm_genl_open(&g))
		return PM_EXIT_FAIL;
	ret = resolve_dev(&g, &a.pool);
	if (ret)
		goto out;
	msg = pm_genl_msg(&g, PMIDX_CMD_ALLOC_TEST, false);
	pm_put_u32(&g, msg, PMIDX_ATTR_TEST_MODE, a.t.mode);
	pm_put_u32(&g, msg, PMIDX_ATTR_TEST_THREADS, a.t.threads);
	pm_put_u32(&g, msg, PMIDX_ATTR_TEST_OPS, a.t.ops);
	pm_put_u32(&g, msg, PMIDX_ATTR_TEST_SIZE, a.t.size);
	pm_put_u64(&g, msg, PMIDX_ATTR_TEST_SEED, a.t.seed);
	put_pool_sel(&g, msg, &a.pool);
	ret = pm_genl_request(&g, msg, collect_cb, &v);
	if (!ret && !v.npools)
		ret = pm_genl_bad_reply(&g, "no POOL nest in the reply");
out:
	if (ret)
		pm_genl_perror(&g, "alloc-test");
	else
		pm_print_alloc_test(stdout, &v.pools[0], &a.t, a.json);
	pm_view_free(&v);
	pm_genl_close(&g);
	return exit_status(ret);
}

/* ---- table --------------------------------------------------------- */

static const struct pm_opt format_opts[] = {
	{ .name = "force", .id = OPT_FORCE },
	{ .name = NULL },
};

static const struct pm_opt list_opts[] = {
	{ .name = "json", .id = OPT_JSON },
	{ .name = NULL },
};

static const struct pm_opt index_opts[] = {
	{ .name = "engine", .has_arg = true, .id = OPT_ENGINE },
	{ .name = "pool", .has_arg = true, .id = OPT_POOL },
	{ .name = NULL },
};

static const struct pm_opt drop_opts[] = {
	{ .name = "pool", .has_arg = true, .id = OPT_POOL },
	{ .name = NULL },
};

static const struct pm_opt stats_opts[] = {
	{ .name = "json", .id = OPT_JSON },
	{ .name = "pool", .has_arg = true, .id = OPT_POOL },
	{ .name = NULL },
};

static const struct pm_opt test_opts[] = {
	{ .name = "mode", .has_arg = true, .id = OPT_MODE },
	{ .name = "threads", .has_arg = true, .id = OPT_THREADS },
	{ .name = "ops", .has_arg = true, .id = OPT_OPS },
	{ .name = "size", .has_arg = true, .id = OPT_SIZE },
	{ .name = "seed", .has_arg = true, .id = OPT_SEED },
	{ .name = "pool", .has_arg = true, .id = OPT_POOL },
	{ .name = "json", .id = OPT_JSON },
	{ .name = NULL },
};

const struct pm_cmd pm_admin_cmds[] = {
	{
		.name = "format",
		.fn = cmd_format,
		.args = "/dev/pmemN [--force]",
		.summary = "Write an empty pool onto a pmem device (--force: even over a valid pool).",
		.opts = format_opts,
	}, {
		.name = "attach",
		.fn = cmd_attach,
		.args = "/dev/pmemN",
		.summary = "Attach (and recover) the pool on a device; prints its name, e.g. pmidx0.",
	}, {
		.name = "detach",
		.fn = cmd_detach,
		.args = "POOL",
		.summary = "Detach a pool (fails while its char device is open).",
	}, {
		.name = "list",
		.fn = cmd_list,
		.args = "[--json]",
		.summary = "List attached pools and their indexes.",
		.opts = list_opts,
	}, {
		.name = "create-index",
		.fn = cmd_create_index,
		.args = "NAME [--engine ccl|utree|b3|lodge|pfart] [--pool POOL]",
		.summary = "Create an index (default engine ccl).",
		.opts = index_opts,
	}, {
		.name = "drop-index",
		.fn = cmd_drop_index,
		.args = "NAME [--pool POOL]",
		.summary = "Drop an index and free its space.",
		.opts = drop_opts,
	}, {
		.name = "stats",
		.fn = cmd_stats,
		.args = "[NAME] [--json] [--pool POOL]",
		.summary = "Show pool and index statistics (of one index with NAME).",
		.opts = stats_opts,
	}, {
		.name = "alloc-test",
		.fn = cmd_alloc_test,
		.args = "[--mode storm|leak] [--threads T] [--ops N] [--size B] [--seed S] [--pool POOL] [--json]",
		.summary = "Exercise the pool allocator (admin/debug); defaults: storm, 4 threads, 10000 ops, random size, seed 1.",
		.opts = test_opts,
	},
	{ .name = NULL },
};
