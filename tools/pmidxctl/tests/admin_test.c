// SPDX-License-Identifier: GPL-2.0
/*
 * Self-check of pmidxctl's admin side without the kernel: command-line
 * parsing of the subcommands, and decoding of replies built the way
 * kmod/netlink.c builds them (LIST: a pool message, then one message
 * per index; STATS nests with 64-bit padding attributes).
 *
 *   gcc -Dmain=pmidxctl_main -I uapi $(pkg-config --cflags libnl-genl-3.0) \
 *	tools/pmidxctl/tests/admin_test.c tools/pmidxctl/main.c \
 *	tools/pmidxctl/genl.c tools/pmidxctl/print.c -o admin_test \
 *	$(pkg-config --libs libnl-genl-3.0)
 */
#undef main
#define _GNU_SOURCE
#include "../admin.c"

static int failures;

#define CHECK(cond, ...) do {						\
	if (!(cond)) {							\
		failures++;						\
		fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
		fprintf(stderr, __VA_ARGS__);				\
		fputc('\n', stderr);					\
	}								\
} while (0)

static const struct pm_cmd *cmd_named(const char *name)
{
	const struct pm_cmd *c;

	for (c = pm_admin_cmds; c->name; c++)
		if (!strcmp(c->name, name))
			return c;
	return NULL;
}

static void test_args(void)
{
	char *a1[] = { "create-index", "--pool", "pmidx1", "myidx",
		       "--engine=utree", NULL };
	char *a2[] = { "drop-index", "--", "--odd", NULL };
	char *a3[] = { "alloc-test", "--seed", "0x10", "--mode", "leak",
		       "--size=64", "--pool", "/dev/pmem1", NULL };
	struct index_args ia;
	struct test_args ta;
	struct pm_pool_sel s;
	int ret;

	ret = parse_index_args(cmd_named("create-index"), 5, a1, &ia);
	CHECK(ret == -1 && !strcmp(ia.name, "myidx") &&
	      ia.engine == PMIDX_ENGINE_UTREE && ia.pool.kind == PM_SEL_NAME &&
	      !strcmp(ia.pool.str, "pmidx1"), "ret %d", ret);
	ret = parse_index_args(cmd_named("drop-index"), 3, a2, &ia);
	CHECK(ret == -1 && !strcmp(ia.name, "--odd"), "ret %d", ret);
	ret = parse_test_args(cmd_named("alloc-test"), 8, a3, &ta);
	CHECK(ret == -1 && ta.t.seed == 16 && ta.t.size == 64 &&
	      ta.t.mode == PMIDX_ALLOC_TEST_LEAK && ta.t.threads == 4 &&
	      ta.t.ops == 10000 && ta.pool.kind == PM_SEL_DEV, "ret %d", ret);

	CHECK(!pm_parse_pool("3", &s) && s.kind == PM_SEL_ID && s.id == 3, "3");
	CHECK(!pm_parse_pool("/dev/pmidx12", &s) && s.kind == PM_SEL_NAME &&
	      !strcmp(s.str, "pmidx12"), "/dev/pmidx12");
	CHECK(!pm_parse_pool("pmidx0", &s) && s.kind == PM_SEL_NAME, "pmidx0");
	CHECK(!pm_parse_pool("/dev/pmem0", &s) && s.kind == PM_SEL_DEV, "pmem");
	CHECK(pm_parse_pool("pmidx", &s) && pm_parse_pool("pmem0", &s) &&
	      pm_parse_pool("", &s) && pm_parse_pool("-1", &s) &&
	      pm_parse_pool("99999999999", &s), "bad pools accepted");
}

/* ---- replies as the kernel builds them ----------------------------- */

static struct nl_msg *reply_msg(uint8_t cmd)
{
	struct nl_msg *m = nlmsg_alloc();

	genlmsg_put(m, 0, 1, 0x20, 0, NLM_F_MULTI, cmd, PMIDX_GENL_VERSION);
	return m;
}

static void put_stats(struct nl_msg *m)
{
	struct nlattr *n = nla_nest_start(m, PMIDX_ATTR_STATS);

	nla_put(m, PMIDX_STAT_UNSPEC, 0, NULL);	/* padding */
	nla_put_u64(m, PMIDX_STAT_ALLOC_OBJECTS, 5);
	nla_put(m, PMIDX_STAT_UNSPEC, 0, NULL);
	nla_put_u64(m, PMIDX_STAT_MAX + 7, 9);	/* from a newer kernel */
	nla_nest_end(m, n);
}

static void put_pool_msg(struct nl_msg *m, bool stats, bool with_id)
{
	static const uint8_t uuid[16] = { 0xde, 0xad, 0xbe, 0xef };
	struct nlattr *n = nla_nest_start(m, PMIDX_ATTR_POOL);

	if (with_id)
		nla_put_u32(m, PMIDX_ATTR_POOL_ID, 2);
	nla_put_string(m, PMIDX_ATTR_POOL_NAME, "pmidx2");
	nla_put_string(m, PMIDX_ATTR_DEV_PATH, "/dev/pmem1");
	nla_put(m, PMIDX_ATTR_POOL_UUID, 16, uuid);
	nla_put(m, PMIDX_ATTR_PAD, 0, NULL);
	nla_put_u64(m, PMIDX_ATTR_POOL_SIZE, 3ULL << 20);
	nla_put_u32(m, PMIDX_ATTR_POOL_FLAGS, PMIDX_POOL_F_EADR);
	if (stats)
		put_stats(m);
	nla_nest_end(m, n);
}

static void put_index_msg(struct nl_msg *m, bool stats)
{
	struct nlattr *n = nla_nest_start(m, PMIDX_ATTR_INDEX);

	nla_put_u32(m, PMIDX_ATTR_POOL_ID, 2);
	nla_put_u32(m, PMIDX_ATTR_INDEX_ID, 4);
	nla_put_string(m, PMIDX_ATTR_INDEX_NAME, "names");
	nla_put_u32(m, PMIDX_ATTR_ENGINE, PMIDX_ENGINE_LODGE);
	nla_put_string(m, PMIDX_ATTR_ENGINE_NAME, "lodge");
	if (stats)
		put_stats(m);
	nla_nest_end(m, n);
}

/* Feeds one message through the same parse path as valid_handler(). */
static int feed(struct pm_genl *g, struct nl_msg *m, struct pm_view *v)
{
	struct nlattr *tb[PMIDX_ATTR_MAX + 1];
	struct nlmsghdr *nlh = nlmsg_hdr(m);
	int ret;

	ret = genlmsg_parse(nlh, 0, tb, PMIDX_ATTR_MAX, NULL);
	if (!ret)
		ret = collect_cb(g, ((struct genlmsghdr *)nlmsg_data(nlh))->cmd,
				 tb, v);
	nlmsg_free(m);
	return ret;
}

static char *render(const struct pm_view *v, bool stats)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (stats)
		pm_print_stats(f, v, true);
	else
		pm_print_list(f, v, true);
	fclose(f);
	return buf;
}

static void test_replies(void)
{
	struct pm_view v = { 0 };
	struct pm_genl g = { 0 };
	struct nl_msg *m;
	char want[512];
	char *out;
	int ret;

	/* LIST */
	m = reply_msg(PMIDX_CMD_LIST);
	put_pool_msg(m, false, true);
	CHECK(feed(&g, m, &v) == 0, "list pool");
	m = reply_msg(PMIDX_CMD_LIST);
	put_index_msg(m, false);
	CHECK(feed(&g, m, &v) == 0, "list index");
	CHECK(!pm_view_adopt_indexes(&v) && v.nindexes == 0 &&
	      v.pools[0].nindexes == 1, "adopt");
	out = render(&v, false);
	CHECK(!strcmp(out, "{\"pools\":[{\"id\":2,\"name\":\"pmidx2\","
		      "\"device\":\"/dev/pmem1\",\"uuid\":"
		      "\"deadbeef-0000-0000-0000-000000000000\",\"size\":3145728,"
		      "\"flags\":[\"eadr\"],\"indexes\":[{\"id\":4,\"name\":"
		      "\"names\",\"engine\":\"lodge\"}]}]}\n"), "%s", out);
	free(out);
	pm_view_free(&v);

	/* STATS */
	m = reply_msg(PMIDX_CMD_STATS);
	put_pool_msg(m, true, true);
	CHECK(feed(&g, m, &v) == 0, "stats pool");
	m = reply_msg(PMIDX_CMD_STATS);
	put_index_msg(m, true);
	CHECK(feed(&g, m, &v) == 0, "stats index");
	out = render(&v, true);
	snprintf(want, sizeof(want),
		 "{\"pools\":[{\"id\":2,\"name\":\"pmidx2\",\"stats\":"
		 "{\"alloc_objects\":5,\"stat_%d\":9}}],\"indexes\":"
		 "[{\"pool\":2,\"id\":4,\"name\":\"names\",\"engine\":"
		 "\"lodge\",\"stats\":{\"alloc_objects\":5,\"stat_%d\":9}}]}\n",
		 PMIDX_STAT_MAX + 7, PMIDX_STAT_MAX + 7);
	CHECK(!strcmp(out, want), "%s", out);
	free(out);
	pm_view_free(&v);

	/* malformed: pool without POOL_ID */
	m = reply_msg(PMIDX_CMD_LIST);
	put_pool_msg(m, false, false);
	ret = feed(&g, m, &v);
	CHECK(ret == -EPROTO && strstr(g.err.msg, "POOL_ID"), "ret %d msg %s",
	      ret, g.err.msg);
	pm_view_free(&v);

	/* malformed: a 4-byte POOL_SIZE fails the reply policy */
	m = reply_msg(PMIDX_CMD_LIST);
	{
		struct nlattr *n = nla_nest_start(m, PMIDX_ATTR_POOL);

		nla_put_u32(m, PMIDX_ATTR_POOL_ID, 1);
		nla_put_u32(m, PMIDX_ATTR_POOL_SIZE, 1);
		nla_nest_end(m, n);
	}
	ret = feed(&g, m, &v);
	CHECK(ret == -EPROTO, "ret %d", ret);
	pm_view_free(&v);
}

int main(void)
{
	test_args();
	test_replies();
	printf("admin_test: %s\n", failures ? "FAILED" : "ok");
	return failures ? 1 : 0;
}
