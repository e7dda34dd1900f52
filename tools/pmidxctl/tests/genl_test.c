// SPDX-License-Identifier: GPL-2.0
/*
 * Self-check of pmidxctl's netlink plumbing (genl.c) against the
 * always-present "nlctrl" family, so it runs without the pmidx module:
 * plain request + reply + ack, kernel errors with and without
 * NETLINK_CAP_ACK (extack message, offending attribute, policy bounds),
 * and a dump ended by NLMSG_DONE.
 *
 *   gcc -I uapi $(pkg-config --cflags libnl-genl-3.0) \
 *	tools/pmidxctl/tests/genl_test.c -o genl_test \
 *	$(pkg-config --libs libnl-genl-3.0)
 */
#include <stdlib.h>

#include "../genl.c"

static int failures;

#define CHECK(cond, ...) do {						\
	if (!(cond)) {							\
		failures++;						\
		fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
		fprintf(stderr, __VA_ARGS__);				\
		fputc('\n', stderr);					\
	}								\
} while (0)

static int count_cb(struct pm_genl *g, uint8_t cmd, struct nlattr **tb,
		    void *arg)
{
	(void)g;
	(void)cmd;
	if (tb[CTRL_ATTR_FAMILY_NAME])
		(*(int *)arg)++;
	return 0;
}

static int getfamily(struct pm_genl *g, const char *name, bool dump,
		     pm_genl_cb cb, void *arg)
{
	struct nl_msg *msg = new_msg(g, GENL_ID_CTRL, CTRL_CMD_GETFAMILY, 1,
				     dump ? NLM_F_DUMP : NLM_F_ACK);

	if (name)
		pm_put_str(g, msg, CTRL_ATTR_FAMILY_NAME, name);
	return xfer_run(g, msg, CTRL_ATTR_MAX, ctrl_policy, cb, arg);
}

static void test_errors(struct pm_genl *g, bool capped)
{
	char longname[100];
	int ret;

	ret = getfamily(g, "pmidx-nosuch", false, NULL, NULL);
	CHECK(ret == -ENOENT, "ret %d", ret);

	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	ret = getfamily(g, longname, false, NULL, NULL);
	CHECK(ret == -ERANGE || ret == -EINVAL, "ret %d", ret);
	CHECK(g->err.msg[0], "no extack message (capped %d)", capped);
	CHECK(g->err.bad_attr == CTRL_ATTR_FAMILY_NAME, "bad_attr %d (capped %d)",
	      g->err.bad_attr, capped);
	CHECK(g->err.has_len && g->err.max_len == GENL_NAMSIZ - 1,
	      "policy max length %u", g->err.max_len);
	pm_genl_perror(g, "expected error, capped %d", capped);
}

int main(void)
{
	struct pm_genl g;
	int ret, n = 0, one = 0;
	char *huge;

	memset(&g, 0, sizeof(g));
	g.sk = nl_socket_alloc();
	if (!g.sk || genl_connect(g.sk) < 0) {
		fprintf(stderr, "SKIP: no generic netlink socket\n");
		return 77;
	}
	nl_socket_enable_msg_peek(g.sk);
	set_sockopt(&g, NETLINK_EXT_ACK);

	ret = getfamily(&g, "nlctrl", false, family_cb, NULL);
	CHECK(ret == 0 && g.family == GENL_ID_CTRL, "ret %d family %d",
	      ret, g.family);

	test_errors(&g, false);		/* request echoed in the error */
	set_sockopt(&g, NETLINK_CAP_ACK);
	test_errors(&g, true);

	ret = getfamily(&g, NULL, true, count_cb, &n);
	CHECK(ret == 0 && n > 0, "dump ret %d, %d families", ret, n);

	/* the socket is still in sync after all that */
	ret = getfamily(&g, "nlctrl", false, count_cb, &one);
	CHECK(ret == 0 && one == 1, "ret %d replies %d", ret, one);

	/* an attribute too big for nla_len is refused before sending */
	huge = malloc(70000);
	if (huge) {
		memset(huge, 'y', 69999);
		huge[69999] = '\0';
		ret = getfamily(&g, huge, false, NULL, NULL);
		CHECK(ret == -EMSGSIZE, "ret %d", ret);
		free(huge);
	}
	ret = getfamily(&g, "nlctrl", false, NULL, NULL);
	CHECK(ret == 0, "after a build failure: ret %d", ret);

	pm_genl_close(&g);
	printf("genl_test: %d families dumped, %s\n", n,
	       failures ? "FAILED" : "ok");
	return failures ? 1 : 0;
}
