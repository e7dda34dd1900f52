/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Process helpers for the selftests that run checks in forked children
 * (races.c, privileges.c): who the child is (uid, groups, capabilities,
 * without libcap), a LIST dump, and CK(), the child's assertion (the
 * harness's ASSERT would longjmp into the parent's test body and run its
 * teardown in the child).
 */
#ifndef PMIDX_SELFTEST_PROC_UTIL_H
#define PMIDX_SELFTEST_PROC_UTIL_H

#include <errno.h>
#include <grp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/capability.h>
#include "pmidx_nl.h"

/* In a child: fail with a message naming the line, exit status 1. */
#define CK(cond, fmt, ...) do {						\
	if (!(cond)) {							\
		fprintf(stderr, "# child %d: %s:%d: %s: " fmt "\n",	\
			(int)getpid(), __FILE__, __LINE__, #cond,	\
			##__VA_ARGS__);					\
		fflush(stderr);						\
		_exit(1);						\
	}								\
} while (0)

#define CAP_BIT(c)	(1ULL << (c))

/* The whole capability sets of this thread: effective = permitted = @caps. */
static inline int caps_set(uint64_t caps)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct d[2] = {};

	d[0].effective = d[0].permitted = (uint32_t)caps;
	d[1].effective = d[1].permitted = (uint32_t)(caps >> 32);
	return syscall(SYS_capset, &h, d) ? -errno : 0;
}

static inline int caps_get(uint64_t *eff)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct d[2] = {};

	if (syscall(SYS_capget, &h, d))
		return -errno;
	*eff = d[0].effective | (uint64_t)d[1].effective << 32;
	return 0;
}

/*
 * Become @uid/@gid with supplementary groups @groups[@ngroups] and exactly
 * the capabilities @caps (effective and permitted). Called by root, in a
 * child that is about to run its checks. Return: 0 or a negative errno.
 */
static __attribute__((noinline)) int become(uid_t uid, gid_t gid, const gid_t *groups,
			 int ngroups, uint64_t caps)
{
	uint64_t eff = ~0ULL;

	if (setgroups(ngroups, groups) || setresgid(gid, gid, gid))
		return -errno;
	/* keep the permitted set across the uid change, then trim it */
	if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) || setresuid(uid, uid, uid))
		return -errno;
	if (caps_set(caps) || caps_get(&eff))
		return -EPERM;
	return eff == caps ? 0 : -EPERM;
}

/* Run @fn(@arg) in a child; its exit status (0 = passed), or -1 on a signal. */
static inline int in_child(int (*fn)(void *), void *arg)
{
	int status;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (!pid)
		_exit(fn(arg));
	if (waitpid(pid, &status, 0) != pid)
		return -errno;
	if (WIFSIGNALED(status)) {
		fprintf(stderr, "# child %d: killed by signal %d\n", (int)pid,
			WTERMSIG(status));
		return -1;
	}
	return WEXITSTATUS(status);
}

/* LIST dump: pools and indexes counted into @p (see pool_cb). */
static inline int pm_list(struct nl *nl, struct pool_info *p)
{
	struct req r;

	memset(p, 0, sizeof(*p));
	p->id = -1;
	req_init(&r, nl->family, PMIDX_CMD_LIST, NLM_F_DUMP);
	return nl_call(nl, &r, pool_cb, p);
}

/* STATS dump of one index by name (-ENOENT when it matches nothing). */
static inline int pm_stats_index(struct nl *nl, const char *name,
				 struct pool_info *p)
{
	struct req r;

	memset(p, 0, sizeof(*p));
	p->id = -1;
	req_init(&r, nl->family, PMIDX_CMD_STATS, NLM_F_DUMP);
	req_str(&r, PMIDX_ATTR_INDEX_NAME, name);
	return nl_call(nl, &r, pool_cb, p);
}

#endif /* PMIDX_SELFTEST_PROC_UTIL_H */
