// SPDX-License-Identifier: GPL-2.0
/*
 * pmidx: crash-consistent ordered key-value indexes served from a
 * persistent-memory (fsdax) namespace.
 *
 * Module entry: parameters, the netlink admin family. Pools come and go
 * through netlink (pool_dev.c); the on-media pool lives in core/.
 */
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/string.h>
#include "core/engine.h"
#include "netlink.h"
#include "pool_dev.h"

int pmidx_persist_param = PMIDX_PERSIST_AUTO;

static const char *const persist_names[] = {
	[PMIDX_PERSIST_AUTO] = "auto",
	[PMIDX_PERSIST_ADR] = "adr",
	[PMIDX_PERSIST_EADR] = "eadr",
};

static int persist_set(const char *val, const struct kernel_param *kp)
{
	int i = sysfs_match_string(persist_names, val);

	if (i < 0)
		return -EINVAL;
	WRITE_ONCE(pmidx_persist_param, i);
	return 0;
}

static int persist_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%s\n", persist_names[pmidx_persist_param]);
}

static const struct kernel_param_ops persist_ops = {
	.set = persist_set,
	.get = persist_get,
};
module_param_cb(persist, &persist_ops, NULL, 0644);
MODULE_PARM_DESC(persist,
		 "persistence domain: adr (flush+fence), eadr (no flush), auto (ask the region; applies at attach)");

static int __init pmidx_init(void)
{
	int ret;

	ret = pmidx_engines_init();
	if (ret)
		return ret;
	ret = pmidx_genl_init();
	if (ret)
		goto err_engines;
	return 0;

err_engines:
	pmidx_engines_exit();
	return ret;
}

/* The engines' state goes last: detaching a pool frees into it. */
static void __exit pmidx_exit(void)
{
	pmidx_genl_exit();
	pmidx_dev_detach_all();
	pmidx_engines_exit();
}

module_init(pmidx_init);
module_exit(pmidx_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("pmidx: crash-consistent key-value indexes on persistent memory");
MODULE_AUTHOR("The pmidx developers");
