// SPDX-License-Identifier: GPL-2.0
/*
 * Who may do what with pmidx, run inside the VM as root with the
 * production pmidx.ko; every check runs in a forked child that first
 * drops to the uid, groups and capabilities under test (capset(2), no
 * libcap):
 *
 *  - FORMAT, ATTACH, DETACH need CAP_SYS_ADMIN (-EPERM, extack "needs
 *    CAP_SYS_ADMIN"); CREATE_INDEX and DROP_INDEX need CAP_NET_ADMIN;
 *    LIST and STATS are open to everybody, uid 65534 without groups too.
 *  - the allocator exercise (PMIDX_CMD_ALLOC_TEST, linux/pmidx_test.h)
 *    exists only in the test build: the production module answers
 *    -EOPNOTSUPP, to root and to anybody else.
 *  - /dev/pmidxN as packaging/udev/60-pmidx.rules sets it up (the guest
 *    has no udevd: the test applies the rule's MODE itself, with gid
 *    PRIV_GID standing for the group "pmidx"): others cannot open it,
 *    group members read and write; an fd opened O_RDONLY serves LOOKUP,
 *    GET, SCAN and CHECK, and PUT, DEL and a BATCH holding one fail with
 *    -EBADF, through ioctl and io_uring; with MODE 0640 the group reads
 *    only.
 *
 *   PMIDX_DEV=/dev/pmemN      the namespace to use (default: the largest)
 *   PMIDX_UDEV_RULES=PATH     the rule file (default
 *                             packaging/udev/60-pmidx.rules)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/stat.h>
#include "kselftest_harness.h"
#include "pmidx_nl.h"
#include "pmidx_data.h"
#include "uring_path.h"
#include "pmem_dev.h"
#include "proc_util.h"

#define INDEX		"p"
#define NOBODY		65534
#define PRIV_GID	4242	/* the "pmidx" group of the rule */
#define RULES		"packaging/udev/60-pmidx.rules"

FIXTURE(priv) {
	struct nl		nl;
	struct pool_info	p;
	char			devpath[48];
};

FIXTURE_SETUP(priv)
{
	struct ctx c = { .path = &ioctl_path };
	uint64_t engine;

	ASSERT_EQ(0, nl_open(&self->nl));
	detach_all(&self->nl);
	ASSERT_EQ(0, pm_format(&self->nl, dev(), 1)) TH_LOG("%s", self->nl.msg);
	ASSERT_EQ(0, pm_attach(&self->nl, dev(), &self->p)) TH_LOG("%s", self->nl.msg);
	snprintf(self->devpath, sizeof(self->devpath), "/dev/%s", self->p.name);
	ASSERT_EQ(0, pm_create(&self->nl, INDEX, PMIDX_ENGINE_CCL)) TH_LOG("%s", self->nl.msg);
	c.fd = open(self->devpath, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, c.fd);
	ASSERT_EQ(0, op_lookup(&c, INDEX, &c.index, &engine));
	ASSERT_EQ(0, op_put(&c, "k", 1, "root's", 6, 0));
	close(c.fd);
}

FIXTURE_TEARDOWN(priv)
{
	detach_all(&self->nl);
	nl_close(&self->nl);
}

/* The pool is as the setup left it: attached, index INDEX holding "k". */
static int pool_intact(FIXTURE_DATA(priv) *self)
{
	struct ctx c = { .path = &ioctl_path };
	struct pool_info p;
	uint64_t engine;
	char v[16];
	uint32_t vl = sizeof(v);
	int ret;

	ret = pm_stats(&self->nl, NULL, &p);
	if (ret || p.id != self->p.id || p.nr_indexes != 1)
		return ret ?: -ENODEV;
	c.fd = open(self->devpath, O_RDWR | O_CLOEXEC);
	if (c.fd < 0)
		return -errno;
	ret = op_lookup(&c, INDEX, &c.index, &engine);
	if (!ret)
		ret = op_get(&c, "k", 1, v, &vl);
	if (!ret && (vl != 6 || memcmp(v, "root's", 6)))
		ret = -EBADMSG;
	close(c.fd);
	return ret;
}

static const char *ename(int ret)
{
	static char buf[48];

	snprintf(buf, sizeof(buf), "%d (%s)", ret, ret < 0 ? strerrorname_np(-ret) ?: "?" : "-");
	return buf;
}

/* ---- the admin plane ------------------------------------------------------------ */

struct who {
	const char	*desc;
	uid_t		uid;
	uint64_t	caps;
	const char	*pool;		/* the pool's name */
};

#define HAS(w, cap)	(!!((w)->caps & CAP_BIT(cap)))
/* in who.caps: every capability root has, less the others given */
#define ALL_BUT		(1ULL << 63)

static int admin_child(void *arg)
{
	const struct who *w = arg;
	bool sys = HAS(w, CAP_SYS_ADMIN), net = HAS(w, CAP_NET_ADMIN);
	struct nl *nl = malloc(sizeof(*nl));
	uint64_t caps = w->caps;
	struct pool_info p;
	int ret;

	if (caps & ALL_BUT) {
		CK(!caps_get(&caps), "capget");
		caps &= ~w->caps;
		sys = !HAS(w, CAP_SYS_ADMIN);
		net = !HAS(w, CAP_NET_ADMIN);
	}
	CK(!become(w->uid, w->uid, NULL, 0, caps), "cannot become %s", w->desc);
	CK(nl && !nl_open(nl), "%s: netlink socket", w->desc);

	/* CAP_SYS_ADMIN; past the check, the device is busy (attached) */
	ret = pm_format(nl, dev(), 1);
	CK(ret == (sys ? -EBUSY : -EPERM), "%s: FORMAT --force: %s (%s)", w->desc, ename(ret), nl->msg);
	CK(sys || strstr(nl->msg, "needs CAP_SYS_ADMIN"), "%s: FORMAT extack '%s'", w->desc, nl->msg);
	ret = pm_format(nl, dev(), 0);
	CK(ret == (sys ? -EBUSY : -EPERM), "%s: FORMAT: %s (%s)", w->desc, ename(ret), nl->msg);
	ret = pm_attach(nl, dev(), &p);
	CK(ret == (sys ? -EBUSY : -EPERM), "%s: ATTACH: %s (%s)", w->desc, ename(ret), nl->msg);
	CK(sys || strstr(nl->msg, "needs CAP_SYS_ADMIN"), "%s: ATTACH extack '%s'", w->desc, nl->msg);
	ret = pm_detach(nl, "pmidx9");
	CK(ret == (sys ? -ENODEV : -EPERM), "%s: DETACH of no pool: %s (%s)", w->desc, ename(ret), nl->msg);
	if (!sys) {
		ret = pm_detach(nl, w->pool);
		CK(ret == -EPERM, "%s: DETACH %s: %s (%s)", w->desc, w->pool, ename(ret), nl->msg);
		CK(strstr(nl->msg, "needs CAP_SYS_ADMIN"), "%s: DETACH extack '%s'", w->desc, nl->msg);
		ret = pm_detach(nl, dev());
		CK(ret == -EPERM, "%s: DETACH %s: %s (%s)", w->desc, dev(), ename(ret), nl->msg);
	}

	/* CAP_NET_ADMIN */
	ret = pm_create(nl, "np", PMIDX_ENGINE_UTREE);
	CK(ret == (net ? 0 : -EPERM), "%s: CREATE_INDEX: %s (%s)", w->desc, ename(ret), nl->msg);
	ret = pm_drop(nl, net ? "np" : INDEX);
	CK(ret == (net ? 0 : -EPERM), "%s: DROP_INDEX: %s (%s)", w->desc, ename(ret), nl->msg);

	/* everybody */
	ret = pm_list(nl, &p);
	CK(!ret && p.nr_indexes == 1 && !strcmp(p.name, w->pool), "%s: LIST: %s, %d indexes, pool '%s' (%s)",
	   w->desc, ename(ret), p.nr_indexes, p.name, nl->msg);
	ret = pm_stats(nl, NULL, &p);
	CK(!ret && p.nr_indexes == 1 && p.stats[PMIDX_STAT_ALLOC_TOTAL_CHUNKS],
	   "%s: STATS: %s, %d indexes (%s)", w->desc, ename(ret), p.nr_indexes, nl->msg);
	ret = pm_stats_index(nl, INDEX, &p);
	CK(!ret && p.nr_indexes == 1, "%s: STATS of %s: %s (%s)", w->desc, INDEX, ename(ret), nl->msg);

	/* the test build's command does not exist here */
	ret = pm_alloc_test(nl, PMIDX_ALLOC_TEST_STORM, 1, 10, 64, 1, &p);
	CK(ret == -EOPNOTSUPP, "%s: ALLOC_TEST: %s (%s)", w->desc, ename(ret), nl->msg);
	nl_close(nl);
	return 0;
}

static void run_admin(struct __test_metadata *_metadata, FIXTURE_DATA(priv) *self,
		      const struct who *w, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		struct who x = w[i];

		x.pool = self->p.name;
		EXPECT_EQ(0, in_child(admin_child, &x)) TH_LOG("%s", w[i].desc);
		ASSERT_EQ(0, pool_intact(self)) TH_LOG("after %s", w[i].desc);
	}
}

TEST_F(priv, net_admin_without_sys_admin)
{
	static const struct who w[] = {
		{ "uid 0 with CAP_NET_ADMIN only", 0, CAP_BIT(CAP_NET_ADMIN) },
		{ "uid 65534 with CAP_NET_ADMIN only", NOBODY, CAP_BIT(CAP_NET_ADMIN) },
	};

	run_admin(_metadata, self, w, 2);
}

TEST_F(priv, without_net_admin)
{
	static const struct who w[] = {
		{ "uid 0 without capabilities", 0, 0 },
		{ "uid 65534 without capabilities", NOBODY, 0 },
		/* every capability of root but the two */
		{ "uid 0 without CAP_SYS_ADMIN and CAP_NET_ADMIN", 0,
		  ALL_BUT | CAP_BIT(CAP_SYS_ADMIN) | CAP_BIT(CAP_NET_ADMIN) },
	};

	run_admin(_metadata, self, w, 3);
}

/* CAP_SYS_ADMIN does not imply the index commands' CAP_NET_ADMIN */
TEST_F(priv, sys_admin_without_net_admin)
{
	static const struct who w[] = {
		{ "uid 0 with CAP_SYS_ADMIN only", 0, CAP_BIT(CAP_SYS_ADMIN) },
	};

	run_admin(_metadata, self, w, 1);
}

TEST_F(priv, alloc_test_not_in_production_module)
{
	static const struct who w[] = { { "uid 0 with CAP_NET_ADMIN only", 0, CAP_BIT(CAP_NET_ADMIN) } };
	struct pool_info p;

	/* root, all capabilities */
	ASSERT_EQ(-EOPNOTSUPP, pm_alloc_test(&self->nl, PMIDX_ALLOC_TEST_STORM, 1, 10,
					     64, 1, &p)) TH_LOG("%s", self->nl.msg);
	ASSERT_EQ(-EOPNOTSUPP, pm_alloc_test(&self->nl, PMIDX_ALLOC_TEST_LEAK, 1, 10,
					     64, 1, &p)) TH_LOG("%s", self->nl.msg);
	run_admin(_metadata, self, w, 1);
}

/* ---- the device node ---------------------------------------------------------------- */

/*
 * MODE and GROUP of the rule for pmidx[0-9]* in @path. Return: 0, or -1
 * when the file or such a rule is missing.
 */
static int rule_of(const char *path, mode_t *mode, char *group, size_t len)
{
	char line[512], *m, *g;
	FILE *f = fopen(path, "r");
	int ret = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (line[0] == '#' || !strstr(line, "SUBSYSTEM==\"misc\"") ||
		    !strstr(line, "KERNEL==\"pmidx[0-9]*\""))
			continue;
		m = strstr(line, "MODE=\"");
		g = strstr(line, "GROUP=\"");
		if (!m || !g)
			continue;
		*mode = strtoul(m + 6, NULL, 8);
		snprintf(group, len, "%.*s", (int)strcspn(g + 7, "\""), g + 7);
		ret = 0;
		break;
	}
	fclose(f);
	return ret;
}

struct node_case {
	const char	*devpath;
	bool		member;		/* in group PRIV_GID */
	bool		can_write;	/* the mode lets the group write */
};

/* BATCH through @c: [0] GET "k", [1] @second (PUT or SCAN); *result := entry result out. */
static int batch2(const struct ctx *c, uint8_t second, uint64_t *result,
		  int64_t *res1)
{
	static uint8_t buf[4096], v[16];
	struct pmidx_cmd e[2] = {
		{ .op = PMIDX_OP_GET, .index = c->index, .key = uptr("k"), .key_len = 1,
		  .val = uptr(v), .val_len = sizeof(v) },
		{ .op = second, .index = c->index, .key = uptr("batch"), .key_len = 5,
		  .val = uptr("b"), .val_len = 1 },
	};
	struct pmidx_cmd b = { .op = PMIDX_OP_BATCH, .val = uptr(e),
			       .val_len = sizeof(e), .count = 2 };
	int ret;

	if (second == PMIDX_OP_SCAN) {
		e[1].key_len = 0;
		e[1].key = 0;
		e[1].count = 8;
		e[1].val = uptr(buf);
		e[1].val_len = sizeof(buf);
	}
	ret = c->path->cmd(c->fd, &b);
	*result = b.result;
	*res1 = (int64_t)e[1].result;
	return ret;
}

static int node_child(void *arg)
{
	const struct node_case *nc = arg;
	const gid_t groups[] = { PRIV_GID };
	const struct path_ops *paths[2] = { &ioctl_path, &uring_path };
	uint8_t scan[4096];
	uint64_t engine, result, keys;
	int64_t res1;
	char v[16];
	uint32_t vl;
	struct ctx c;
	int p, ret;

	CK(!become(NOBODY, NOBODY, groups, nc->member, 0), "cannot become uid %d", NOBODY);
	if (!nc->member) {
		CK(open(nc->devpath, O_RDWR) < 0 && errno == EACCES,
		   "O_RDWR open by a non-member: %s", strerror(errno));
		CK(open(nc->devpath, O_RDONLY) < 0 && errno == EACCES,
		   "O_RDONLY open by a non-member: %s", strerror(errno));
		return 0;
	}
	if (!nc->can_write) {
		CK(open(nc->devpath, O_RDWR) < 0 && errno == EACCES,
		   "O_RDWR open of a read-only group's node: %s", strerror(errno));
	} else {
		c.fd = open(nc->devpath, O_RDWR | O_CLOEXEC);
		CK(c.fd >= 0, "O_RDWR open by a group member: %s", strerror(errno));
		for (p = 0; p < 2; p++) {
			c.path = paths[p];
			ret = op_lookup(&c, INDEX, &c.index, &engine);
			CK(!ret, "%s: LOOKUP: %s", c.path->name, ename(ret));
			ret = op_put(&c, "mine", 4, c.path->name, strlen(c.path->name), 0);
			CK(!ret, "%s: PUT on a read-write fd: %s", c.path->name, ename(ret));
			vl = sizeof(v);
			ret = op_get(&c, "mine", 4, v, &vl);
			CK(!ret && vl == strlen(c.path->name), "%s: GET: %s", c.path->name, ename(ret));
			ret = batch2(&c, PMIDX_OP_PUT, &result, &res1);
			CK(!ret && !result, "%s: BATCH with a PUT on a read-write fd: %s",
			   c.path->name, ename(ret));
			ret = op_del(&c, "batch", 5);
			CK(!ret, "%s: DEL: %s", c.path->name, ename(ret));
		}
		ret = op_del(&c, "mine", 4);
		CK(!ret, "DEL: %s", ename(ret));
		close(c.fd);
	}

	c.fd = open(nc->devpath, O_RDONLY | O_CLOEXEC);
	CK(c.fd >= 0, "O_RDONLY open by a group member: %s", strerror(errno));
	for (p = 0; p < 2; p++) {
		struct scan_req s = { .count = 8, .buf = scan, .len = sizeof(scan) };

		c.path = paths[p];
		/* reads */
		ret = op_lookup(&c, INDEX, &c.index, &engine);
		CK(!ret, "%s: LOOKUP on O_RDONLY: %s", c.path->name, ename(ret));
		vl = sizeof(v);
		ret = op_get(&c, "k", 1, v, &vl);
		CK(!ret && vl == 6 && !memcmp(v, "root's", 6), "%s: GET on O_RDONLY: %s",
		   c.path->name, ename(ret));
		ret = op_scan(&c, &s);
		CK(!ret && s.count == 1, "%s: SCAN on O_RDONLY: %s, %u records",
		   c.path->name, ename(ret), s.count);
		ret = op_check(&c, &keys);
		CK(!ret && keys == 1, "%s: CHECK on O_RDONLY: %s", c.path->name, ename(ret));
		ret = batch2(&c, PMIDX_OP_SCAN, &result, &res1);
		CK(!ret && !result && res1 == 0, "%s: BATCH of reads on O_RDONLY: %s",
		   c.path->name, ename(ret));
		/* writes */
		ret = op_put(&c, "ro", 2, "x", 1, 0);
		CK(ret == -EBADF, "%s: PUT on O_RDONLY: %s", c.path->name, ename(ret));
		ret = op_put(&c, "k", 1, "x", 1, 0);
		CK(ret == -EBADF, "%s: PUT over a key on O_RDONLY: %s", c.path->name, ename(ret));
		ret = op_del(&c, "k", 1);
		CK(ret == -EBADF, "%s: DEL on O_RDONLY: %s", c.path->name, ename(ret));
		ret = batch2(&c, PMIDX_OP_PUT, &result, &res1);
		CK(ret == -EBADF && result == 1, "%s: BATCH with a PUT on O_RDONLY: %s, result %llu",
		   c.path->name, ename(ret), (unsigned long long)result);
		/* nothing changed */
		vl = sizeof(v);
		ret = op_get(&c, "batch", 5, v, &vl);
		CK(ret == -ENOENT, "%s: the refused BATCH's PUT: %s", c.path->name, ename(ret));
		ret = op_get(&c, "ro", 2, v, &vl);
		CK(ret == -ENOENT, "%s: the refused PUT: %s", c.path->name, ename(ret));
		vl = sizeof(v);
		ret = op_get(&c, "k", 1, v, &vl);
		CK(!ret && vl == 6 && !memcmp(v, "root's", 6), "%s: k after refused writes: %s",
		   c.path->name, ename(ret));
	}
	close(c.fd);
	return 0;
}

static void apply_rule(struct __test_metadata *_metadata, FIXTURE_DATA(priv) *self,
		       mode_t *mode)
{
	const char *rules = getenv("PMIDX_UDEV_RULES") ?: RULES;
	char group[32];
	struct stat st;

	ASSERT_EQ(0, rule_of(rules, mode, group, sizeof(group)))
		TH_LOG("%s: no SUBSYSTEM==\"misc\", KERNEL==\"pmidx[0-9]*\" rule with MODE and GROUP", rules);
	ASSERT_STREQ("pmidx", group);
	ASSERT_EQ(0660, *mode);
	/* what udevd would do, with a number for the group */
	ASSERT_EQ(0, chown(self->devpath, 0, PRIV_GID)) TH_LOG("%s", strerror(errno));
	ASSERT_EQ(0, chmod(self->devpath, *mode)) TH_LOG("%s", strerror(errno));
	ASSERT_EQ(0, stat(self->devpath, &st));
	ASSERT_EQ(PRIV_GID, st.st_gid);
	ASSERT_EQ(*mode, st.st_mode & 07777);
}

TEST_F(priv, device_node_group)
{
	struct node_case nc = { .devpath = self->devpath };
	mode_t mode;

	apply_rule(_metadata, self, &mode);
	/* others: no access at all */
	ASSERT_EQ(0, in_child(node_child, &nc));
	/* members: read and write; an O_RDONLY fd reads only */
	nc.member = nc.can_write = true;
	ASSERT_EQ(0, in_child(node_child, &nc));
	ASSERT_EQ(0, pool_intact(self));
}

/* README, "Permissions": MODE 0640 makes the group a read-only one */
TEST_F(priv, device_node_read_only_group)
{
	struct node_case nc = { .devpath = self->devpath, .member = true };
	mode_t mode;

	apply_rule(_metadata, self, &mode);
	ASSERT_EQ(0, chmod(self->devpath, 0640));
	ASSERT_EQ(0, in_child(node_child, &nc));
	nc.member = false;
	ASSERT_EQ(0, in_child(node_child, &nc));
	ASSERT_EQ(0, pool_intact(self));
}

TEST_HARNESS_MAIN
