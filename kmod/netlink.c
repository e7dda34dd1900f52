// SPDX-License-Identifier: GPL-2.0
/*
 * The "pmidx" generic netlink family: the admin plane.
 *
 * Validation is strict: every request attribute has a policy entry,
 * output-only attributes have none and so are rejected in requests, and
 * unknown attributes fail. Every error carries an extack message.
 * Privileges: FORMAT, ATTACH and DETACH hand a block device to the module
 * or destroy its contents: CAP_SYS_ADMIN. Index-level commands need
 * CAP_NET_ADMIN (GENL_ADMIN_PERM). LIST and STATS are open to everybody
 * and cost O(pools + indexes): engines keep live counters.
 *
 * Locking: handlers run in parallel (parallel_ops). They hold
 * pmidx_devs_lock only to find a pool, then pin it (pool_dev.c) for the
 * rest of their work, so no command waits behind another's slow part.
 * Dumps hold the lock while they fill a message, pinning each index they
 * report, and re-find their position on every call.
 */
#include <linux/module.h>
#include <net/genetlink.h>
#include <linux/pmidx.h>
#include "compat.h"
#include "netlink.h"
#include "pool_dev.h"
#if IS_ENABLED(CONFIG_PMIDX_TEST)
#include <linux/pmidx_test.h>
#include "core/alloc_test.h"
#endif

#if IS_ENABLED(CONFIG_PMIDX_TEST)
static struct netlink_range_validation test_ops_range = {
	.min = 1, .max = 10000000,
};

static struct netlink_range_validation test_size_range = {
	.min = 0, .max = 1 << 24,
};
#endif

static const struct nla_policy pmidx_policy[PMIDX_ATTR_MAX + 1] = {
	[PMIDX_ATTR_DEV_PATH]	  = { .type = NLA_NUL_STRING, .len = PMIDX_PATH_MAX },
	[PMIDX_ATTR_FORCE]	  = { .type = NLA_FLAG },
	[PMIDX_ATTR_POOL_ID]	  = { .type = NLA_U32 },
	[PMIDX_ATTR_POOL_NAME]	  = { .type = NLA_NUL_STRING, .len = 15 },
	/* longer than allowed on purpose: pmidx_name_check() says why */
	[PMIDX_ATTR_INDEX_NAME]	  = { .type = NLA_NUL_STRING, .len = 255 },
	[PMIDX_ATTR_ENGINE]	  = NLA_POLICY_RANGE(NLA_U32, 1, __PMIDX_ENGINE_MAX - 1),
#if IS_ENABLED(CONFIG_PMIDX_TEST)
	[PMIDX_ATTR_TEST_THREADS] = NLA_POLICY_RANGE(NLA_U32, 1, 64),
	[PMIDX_ATTR_TEST_OPS]	  = NLA_POLICY_FULL_RANGE(NLA_U32, &test_ops_range),
	[PMIDX_ATTR_TEST_SIZE]	  = NLA_POLICY_FULL_RANGE(NLA_U32, &test_size_range),
	[PMIDX_ATTR_TEST_MODE]	  = NLA_POLICY_RANGE(NLA_U32, 1, __PMIDX_ALLOC_TEST_MAX - 1),
	[PMIDX_ATTR_TEST_SEED]	  = { .type = NLA_U64 },
#endif
};

static struct genl_family pmidx_genl_family;

enum { PMIDX_MCGRP_EVENTS };

static const struct genl_multicast_group pmidx_mcgrps[] = {
	[PMIDX_MCGRP_EVENTS] = { .name = PMIDX_GENL_MCGRP_EVENTS },
};

/*
 * The core reports failures as static strings (@why); extack keeps the
 * pointer, which NL_SET_ERR_MSG() only allows for literals.
 */
static void set_err_msg(struct netlink_ext_ack *extack, const char *why)
{
	if (extack)
		extack->_msg = why;
}

/* FORMAT, ATTACH and DETACH: see the file comment. */
static bool sys_admin(struct sk_buff *skb, struct genl_info *info)
{
	if (netlink_capable(skb, CAP_SYS_ADMIN))
		return true;
	NL_SET_ERR_MSG(info->extack, "needs CAP_SYS_ADMIN");
	return false;
}

/* ---- message builders -------------------------------------------------- */

static int put_stats(struct sk_buff *skb, const struct pmidx_stats *s)
{
	struct nlattr *nest = nla_nest_start(skb, PMIDX_ATTR_STATS);
	int i;

	if (!nest)
		return -EMSGSIZE;
	for (i = 1; i <= PMIDX_STAT_MAX; i++)
		if ((s->have & (1ULL << i)) &&
		    nla_put_u64_64bit(skb, i, s->val[i], PMIDX_STAT_UNSPEC))
			goto cancel;
	nla_nest_end(skb, nest);
	return 0;
cancel:
	nla_nest_cancel(skb, nest);
	return -EMSGSIZE;
}

static int put_pool(struct sk_buff *skb, struct pmidx_pool_dev *d,
		    bool with_stats)
{
	struct pmidx_pool *pool = d->pool;
	struct nlattr *nest = nla_nest_start(skb, PMIDX_ATTR_POOL);
	struct pmidx_stats stats = {};

	if (!nest)
		return -EMSGSIZE;
	if (nla_put_u32(skb, PMIDX_ATTR_POOL_ID, d->id) ||
	    nla_put_string(skb, PMIDX_ATTR_POOL_NAME, d->name) ||
	    nla_put_string(skb, PMIDX_ATTR_DEV_PATH, d->path) ||
	    nla_put(skb, PMIDX_ATTR_POOL_UUID, 16, pool->sb.uuid) ||
	    nla_put_u64_64bit(skb, PMIDX_ATTR_POOL_SIZE,
			      le64_to_cpu(pool->sb.size), PMIDX_ATTR_PAD) ||
	    nla_put_u32(skb, PMIDX_ATTR_POOL_FLAGS, pool->flags))
		goto cancel;
	if (with_stats) {
		pmidx_pool_stats(pool, &stats);
		if (put_stats(skb, &stats))
			goto cancel;
	}
	nla_nest_end(skb, nest);
	return 0;
cancel:
	nla_nest_cancel(skb, nest);
	return -EMSGSIZE;
}

/* An INDEX nest; with the statistics of @stats_of when it is not NULL. */
static int put_index(struct sk_buff *skb, struct pmidx_pool_dev *d, u32 id,
		     const char *name, u32 engine, struct pmidx_index *stats_of)
{
	struct nlattr *nest = nla_nest_start(skb, PMIDX_ATTR_INDEX);
	struct pmidx_stats stats = {};

	if (!nest)
		return -EMSGSIZE;
	if (nla_put_u32(skb, PMIDX_ATTR_POOL_ID, d->id) ||
	    nla_put_u32(skb, PMIDX_ATTR_INDEX_ID, id) ||
	    nla_put_string(skb, PMIDX_ATTR_INDEX_NAME, name) ||
	    nla_put_u32(skb, PMIDX_ATTR_ENGINE, engine) ||
	    nla_put_string(skb, PMIDX_ATTR_ENGINE_NAME,
			   pmidx_engine_name(engine)))
		goto cancel;
	if (stats_of) {
		pmidx_index_stats(stats_of, &stats);
		if (put_stats(skb, &stats))
			goto cancel;
	}
	nla_nest_end(skb, nest);
	return 0;
cancel:
	nla_nest_cancel(skb, nest);
	return -EMSGSIZE;
}

/* Reply to @info with one nest built by @fill. */
static int reply_with(struct genl_info *info, u8 cmd,
		      int (*fill)(struct sk_buff *skb, void *arg), void *arg)
{
	struct sk_buff *skb;
	void *hdr;

	skb = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!skb)
		return -ENOMEM;
	hdr = genlmsg_put_reply(skb, info, &pmidx_genl_family, 0, cmd);
	if (!hdr || fill(skb, arg)) {
		nlmsg_free(skb);
		return -EMSGSIZE;
	}
	genlmsg_end(skb, hdr);
	return genlmsg_reply(skb, info);
}

/* Build an event about @d now; send it later, once the change happened. */
static struct sk_buff *event_new(u8 cmd, struct pmidx_pool_dev *d)
{
	struct sk_buff *skb;
	void *hdr;

	skb = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!skb)
		return NULL;
	hdr = genlmsg_put(skb, 0, 0, &pmidx_genl_family, 0, cmd);
	if (!hdr || put_pool(skb, d, false)) {
		nlmsg_free(skb);
		return NULL;
	}
	genlmsg_end(skb, hdr);
	return skb;
}

static void event_send(struct sk_buff *skb)
{
	if (skb)
		genlmsg_multicast(&pmidx_genl_family, skb, 0,
				  PMIDX_MCGRP_EVENTS, GFP_KERNEL);
}

/* ---- pool selection ---------------------------------------------------- */

/*
 * Find the pool named by POOL_ID / POOL_NAME (/ DEV_PATH if @by_path),
 * or the only attached pool when none is named and @implicit.
 * Context: pmidx_devs_lock held.
 */
static struct pmidx_pool_dev *select_pool(struct nlattr **attrs,
					  struct netlink_ext_ack *extack,
					  bool by_path, bool implicit)
{
	struct nlattr *id = attrs[PMIDX_ATTR_POOL_ID];
	struct nlattr *name = attrs[PMIDX_ATTR_POOL_NAME];
	struct nlattr *path = by_path ? attrs[PMIDX_ATTR_DEV_PATH] : NULL;
	struct pmidx_pool_dev *d;

	if (!by_path && attrs[PMIDX_ATTR_DEV_PATH]) {
		NL_SET_BAD_ATTR(extack, attrs[PMIDX_ATTR_DEV_PATH]);
		NL_SET_ERR_MSG(extack, "name the pool by id or name here");
		return ERR_PTR(-EINVAL);
	}

	if (!!id + !!name + !!path > 1) {
		NL_SET_ERR_MSG(extack, "name the pool one way only");
		return ERR_PTR(-EINVAL);
	}
	if (id || name || path) {
		d = pmidx_dev_find(id ? nla_get_u32(id) : -1,
				   name ? nla_data(name) : NULL,
				   path ? nla_data(path) : NULL);
		if (!d) {
			NL_SET_BAD_ATTR(extack, id ?: name ?: path);
			NL_SET_ERR_MSG(extack, "no such pool attached");
			return ERR_PTR(-ENODEV);
		}
		return d;
	}
	if (!implicit) {
		NL_SET_ERR_MSG(extack, "a pool must be named");
		return ERR_PTR(-EINVAL);
	}
	if (list_empty(&pmidx_devs)) {
		NL_SET_ERR_MSG(extack, "no pool attached");
		return ERR_PTR(-ENODEV);
	}
	if (!list_is_singular(&pmidx_devs)) {
		NL_SET_ERR_MSG(extack, "several pools attached: name one");
		return ERR_PTR(-EINVAL);
	}
	return list_first_entry(&pmidx_devs, struct pmidx_pool_dev, node);
}

/* select_pool() and pin the result, for commands that work past the lock */
static struct pmidx_pool_dev *select_pinned(struct nlattr **attrs,
					    struct netlink_ext_ack *extack)
{
	struct pmidx_pool_dev *d;
	int ret;

	mutex_lock(&pmidx_devs_lock);
	d = select_pool(attrs, extack, false, true);
	if (!IS_ERR(d)) {
		ret = pmidx_dev_pin(d);
		if (ret)
			d = ERR_PTR(ret);
	}
	mutex_unlock(&pmidx_devs_lock);
	return d;
}

/* ---- commands ---------------------------------------------------------- */

static int pmidx_nl_format(struct sk_buff *skb, struct genl_info *info)
{
	const char *why = "format failed";
	int ret;

	if (!sys_admin(skb, info))
		return -EPERM;
	if (GENL_REQ_ATTR_CHECK(info, PMIDX_ATTR_DEV_PATH))
		return -EINVAL;
	ret = pmidx_dev_format(nla_data(info->attrs[PMIDX_ATTR_DEV_PATH]),
			       nla_get_flag(info->attrs[PMIDX_ATTR_FORCE]), &why);
	if (ret)
		set_err_msg(info->extack, why);
	return ret;
}

static int fill_pool(struct sk_buff *skb, void *arg)
{
	return put_pool(skb, arg, false);
}

static int pmidx_nl_attach(struct sk_buff *skb, struct genl_info *info)
{
	const char *why = "attach failed";
	struct pmidx_pool_dev *d;
	int ret;

	if (!sys_admin(skb, info))
		return -EPERM;
	if (GENL_REQ_ATTR_CHECK(info, PMIDX_ATTR_DEV_PATH))
		return -EINVAL;
	d = pmidx_dev_attach(nla_data(info->attrs[PMIDX_ATTR_DEV_PATH]), &why);
	if (IS_ERR(d)) {
		NL_SET_BAD_ATTR(info->extack, info->attrs[PMIDX_ATTR_DEV_PATH]);
		set_err_msg(info->extack, why);
		return PTR_ERR(d);
	}
	/* attach returned it pinned: no detach until it is reported */
	ret = reply_with(info, PMIDX_CMD_ATTACH, fill_pool, d);
	event_send(event_new(PMIDX_CMD_EVENT_ATTACHED, d));
	pmidx_dev_unpin(d);
	return ret;
}

static int pmidx_nl_detach(struct sk_buff *skb, struct genl_info *info)
{
	const char *why = "detach failed";
	struct sk_buff *event = NULL;
	struct pmidx_pool_dev *d;
	int ret;

	if (!sys_admin(skb, info))
		return -EPERM;
	mutex_lock(&pmidx_devs_lock);
	d = select_pool(info->attrs, info->extack, true, false);
	if (IS_ERR(d)) {
		mutex_unlock(&pmidx_devs_lock);
		return PTR_ERR(d);
	}
	event = event_new(PMIDX_CMD_EVENT_DETACHED, d);
	ret = pmidx_dev_unlist(d, &why);
	mutex_unlock(&pmidx_devs_lock);
	if (ret) {
		set_err_msg(info->extack, why);
		nlmsg_free(event);
		return ret;
	}
	pmidx_dev_teardown(d);
	event_send(event);
	return 0;
}

/* What CREATE_INDEX reports, copied: the index may be dropped meanwhile. */
struct index_reply {
	struct pmidx_pool_dev	*d;
	u32			id, engine;
	char			name[PMIDX_NAME_MAX + 1];
};

static int fill_index(struct sk_buff *skb, void *arg)
{
	struct index_reply *r = arg;

	return put_index(skb, r->d, r->id, r->name, r->engine, NULL);
}

static int pmidx_nl_create_index(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr *eng = info->attrs[PMIDX_ATTR_ENGINE];
	const char *why = "create-index failed";
	struct index_reply r;
	int ret;

	if (GENL_REQ_ATTR_CHECK(info, PMIDX_ATTR_INDEX_NAME))
		return -EINVAL;
	r.d = select_pinned(info->attrs, info->extack);
	if (IS_ERR(r.d))
		return PTR_ERR(r.d);
	ret = pmidx_index_create_id(r.d->pool,
				 nla_data(info->attrs[PMIDX_ATTR_INDEX_NAME]),
				 eng ? nla_get_u32(eng) : PMIDX_ENGINE_CCL,
				 &r.id, &why);
	if (ret) {
		if (ret == -EOPNOTSUPP)
			NL_SET_BAD_ATTR(info->extack, eng);
		else
			NL_SET_BAD_ATTR(info->extack,
					info->attrs[PMIDX_ATTR_INDEX_NAME]);
		set_err_msg(info->extack, why);
		goto out;
	}
	r.engine = eng ? nla_get_u32(eng) : PMIDX_ENGINE_CCL;
	strscpy(r.name, nla_data(info->attrs[PMIDX_ATTR_INDEX_NAME]),
		sizeof(r.name));
	ret = reply_with(info, PMIDX_CMD_CREATE_INDEX, fill_index, &r);
out:
	pmidx_dev_unpin(r.d);
	return ret;
}

static int pmidx_nl_drop_index(struct sk_buff *skb, struct genl_info *info)
{
	const char *why = "drop-index failed";
	struct pmidx_pool_dev *d;
	int ret;

	if (GENL_REQ_ATTR_CHECK(info, PMIDX_ATTR_INDEX_NAME))
		return -EINVAL;
	d = select_pinned(info->attrs, info->extack);
	if (IS_ERR(d))
		return PTR_ERR(d);
	ret = pmidx_index_drop(d->pool,
			       nla_data(info->attrs[PMIDX_ATTR_INDEX_NAME]), &why);
	if (ret) {
		NL_SET_BAD_ATTR(info->extack, info->attrs[PMIDX_ATTR_INDEX_NAME]);
		set_err_msg(info->extack, why);
	}
	pmidx_dev_unpin(d);
	return ret;
}

#if IS_ENABLED(CONFIG_PMIDX_TEST)
static int fill_pool_stats(struct sk_buff *skb, void *arg)
{
	return put_pool(skb, arg, true);
}

static int pmidx_nl_alloc_test(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr **a = info->attrs;
	struct pmidx_alloc_test t = {
		.mode = a[PMIDX_ATTR_TEST_MODE] ?
			nla_get_u32(a[PMIDX_ATTR_TEST_MODE]) : PMIDX_ALLOC_TEST_STORM,
		.threads = a[PMIDX_ATTR_TEST_THREADS] ?
			nla_get_u32(a[PMIDX_ATTR_TEST_THREADS]) : 4,
		.ops = a[PMIDX_ATTR_TEST_OPS] ?
			nla_get_u32(a[PMIDX_ATTR_TEST_OPS]) : 10000,
		.size = a[PMIDX_ATTR_TEST_SIZE] ?
			nla_get_u32(a[PMIDX_ATTR_TEST_SIZE]) : 0,
		.seed = a[PMIDX_ATTR_TEST_SEED] ?
			nla_get_u64(a[PMIDX_ATTR_TEST_SEED]) : 1,
	};
	const char *why = "allocator test failed";
	struct pmidx_pool_dev *d;
	int ret;

	d = select_pinned(a, info->extack);
	if (IS_ERR(d))
		return PTR_ERR(d);
	ret = pmidx_alloc_test_run(d->pool, &t, &why);
	if (ret) {
		set_err_msg(info->extack, why);
		goto out;
	}
	ret = reply_with(info, PMIDX_CMD_ALLOC_TEST, fill_pool_stats, d);
out:
	pmidx_dev_unpin(d);
	return ret;
}
#endif

/* ---- dumps ------------------------------------------------------------- */

/*
 * LIST and STATS dumps emit one message per pool, then one per index of
 * that pool. cb->args[0] counts pools done, cb->args[1] is the next
 * index slot (0 = the pool message itself still to send), cb->args[2]
 * counts index messages sent (a named index that matched nothing is
 * -ENOENT).
 */
/* One LIST/STATS message: @idx's, or @d's when @idx is NULL. */
static bool put_dump_msg(struct sk_buff *skb, struct netlink_callback *cb,
			 u8 cmd, struct pmidx_pool_dev *d,
			 struct pmidx_index *idx, bool stats)
{
	void *hdr;

	hdr = genlmsg_put(skb, NETLINK_CB(cb->skb).portid, cb->nlh->nlmsg_seq,
			  &pmidx_genl_family, NLM_F_MULTI, cmd);
	if (!hdr)
		return true;
	if (idx ? put_index(skb, d, idx->id, idx->name, idx->engine,
			    stats ? idx : NULL) :
		  put_pool(skb, d, stats)) {
		genlmsg_cancel(skb, hdr);
		return true;
	}
	genlmsg_end(skb, hdr);
	return false;
}

static int dump_pools(struct sk_buff *skb, struct netlink_callback *cb,
		      u8 cmd, bool stats)
{
	struct nlattr **attrs = pmidx_dump_attrs(cb);
	struct nlattr *want_name = attrs[PMIDX_ATTR_INDEX_NAME];
	struct pmidx_pool_dev *d, *only = NULL;
	long pos = 0;
	int err = 0;

	mutex_lock(&pmidx_devs_lock);
	if (attrs[PMIDX_ATTR_POOL_ID] || attrs[PMIDX_ATTR_POOL_NAME]) {
		only = select_pool(attrs, cb->extack, false, false);
		if (IS_ERR(only)) {
			err = PTR_ERR(only);
			goto out;
		}
	}
	list_for_each_entry(d, &pmidx_devs, node) {
		long slot;

		if ((only && d != only) || pos++ < cb->args[0])
			continue;
		for (slot = cb->args[1]; slot <= PMIDX_MAX_INDEXES; slot++) {
			struct pmidx_index *idx = NULL;

			bool full;

			if (slot) {
				idx = pmidx_index_get_slot(d->pool, slot - 1);
				if (idx && want_name &&
				    strcmp(idx->name, nla_data(want_name))) {
					pmidx_index_put(idx);
					idx = NULL;
				}
				if (!idx)
					continue;
			} else if (want_name) {
				continue;
			}
			full = put_dump_msg(skb, cb, cmd, d, idx, stats);
			if (idx)
				pmidx_index_put(idx);
			if (full)
				goto full;
			cb->args[1] = slot + 1;
			cb->args[2] += !!idx;
		}
		cb->args[0] = pos;
		cb->args[1] = 0;
	}
	if (want_name && !cb->args[2]) {
		NL_SET_ERR_MSG(cb->extack, "no such index");
		err = -ENOENT;
		goto out;
	}
full:
	err = skb->len;
out:
	mutex_unlock(&pmidx_devs_lock);
	return err;
}

static int pmidx_nl_list(struct sk_buff *skb, struct netlink_callback *cb)
{
	return dump_pools(skb, cb, PMIDX_CMD_LIST, false);
}

static int pmidx_nl_stats(struct sk_buff *skb, struct netlink_callback *cb)
{
	return dump_pools(skb, cb, PMIDX_CMD_STATS, true);
}

static const struct genl_ops pmidx_genl_ops[] = {
	{
		.cmd	= PMIDX_CMD_FORMAT,
		.doit	= pmidx_nl_format,	/* CAP_SYS_ADMIN, checked inside */
	}, {
		.cmd	= PMIDX_CMD_ATTACH,
		.doit	= pmidx_nl_attach,	/* CAP_SYS_ADMIN */
	}, {
		.cmd	= PMIDX_CMD_DETACH,
		.doit	= pmidx_nl_detach,	/* CAP_SYS_ADMIN */
	}, {
		.cmd	= PMIDX_CMD_LIST,
		.dumpit	= pmidx_nl_list,
	}, {
		.cmd	= PMIDX_CMD_CREATE_INDEX,
		.doit	= pmidx_nl_create_index,
		.flags	= GENL_ADMIN_PERM,
	}, {
		.cmd	= PMIDX_CMD_DROP_INDEX,
		.doit	= pmidx_nl_drop_index,
		.flags	= GENL_ADMIN_PERM,
	}, {
		.cmd	= PMIDX_CMD_STATS,
		.dumpit	= pmidx_nl_stats,
	},
#if IS_ENABLED(CONFIG_PMIDX_TEST)
	{
		.cmd	= PMIDX_CMD_ALLOC_TEST,
		.doit	= pmidx_nl_alloc_test,
		.flags	= GENL_ADMIN_PERM,
	},
#endif
};

static struct genl_family pmidx_genl_family __ro_after_init = {
	.name		= PMIDX_GENL_NAME,
	.version	= PMIDX_GENL_VERSION,
	.maxattr	= PMIDX_ATTR_MAX,
	.policy		= pmidx_policy,
	.parallel_ops	= true,
	.module		= THIS_MODULE,
	.ops		= pmidx_genl_ops,
	.n_ops		= ARRAY_SIZE(pmidx_genl_ops),
	.resv_start_op	= 0,
	.mcgrps		= pmidx_mcgrps,
	.n_mcgrps	= ARRAY_SIZE(pmidx_mcgrps),
};

int __init pmidx_genl_init(void)
{
	return genl_register_family(&pmidx_genl_family);
}

void pmidx_genl_exit(void)
{
	genl_unregister_family(&pmidx_genl_family);
}
