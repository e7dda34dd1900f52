/* SPDX-License-Identifier: GPL-2.0 */
/*
 * pmidxctl: generic netlink plumbing for the "pmidx" family - socket
 * setup, family lookup, request building, synchronous request/ack and
 * dump helpers, and extack-aware error reporting.
 */
#ifndef PMIDXCTL_GENL_H
#define PMIDXCTL_GENL_H

#include <stdbool.h>
#include <stdint.h>

#include <netlink/attr.h>
#include <netlink/genl/genl.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>

#include <linux/pmidx.h>
#include <linux/pmidx_test.h>

/* What went wrong with the last request. */
struct pm_nlerr {
	int error;		/* positive errno; 0: no error */
	int nl_error;		/* libnl error code (NLE_*) when not the kernel's */
	char msg[256];		/* extack message, or a local explanation */
	int bad_attr;		/* type of the attribute at NLMSGERR_ATTR_OFFS */
	int miss_attr;		/* NLMSGERR_ATTR_MISS_TYPE */
	bool foreign;		/* request of another family (nlctrl) */
	bool has_policy;	/* NLMSGERR_ATTR_POLICY was present */
	bool has_len, has_range;	/* ... and carried these bounds */
	uint32_t min_len, max_len;
	uint64_t min_val, max_val;
};

struct pm_genl {
	struct nl_sock *sk;
	int family;		/* resolved id of PMIDX_GENL_NAME */
	uint32_t version;	/* family version the kernel reports */
	int build_err;		/* first failure while building a request */
	struct pm_nlerr err;
};

/*
 * Replies: tb[] holds the top-level attributes of one message, already
 * checked against the pmidx reply policy. Return 0 or a negative errno
 * (use pm_genl_bad_reply() to explain a malformed reply).
 */
typedef int (*pm_genl_cb)(struct pm_genl *g, uint8_t cmd,
			  struct nlattr **tb, void *arg);

/*
 * Connects and resolves the family. On failure prints why (e.g. the
 * module is not loaded) and returns a negative value.
 */
int pm_genl_open(struct pm_genl *g);
void pm_genl_close(struct pm_genl *g);

/* New request for the pmidx family; dump: NLM_F_DUMP, else NLM_F_ACK. */
struct nl_msg *pm_genl_msg(struct pm_genl *g, uint8_t cmd, bool dump);

/*
 * Attribute helpers. They record the first failure in g->build_err and
 * do nothing when msg is NULL, so a request is built without checks and
 * pm_genl_request() reports the failure.
 */
void pm_put_str(struct pm_genl *g, struct nl_msg *msg, int type,
		const char *s);
void pm_put_u32(struct pm_genl *g, struct nl_msg *msg, int type, uint32_t v);
void pm_put_u64(struct pm_genl *g, struct nl_msg *msg, int type, uint64_t v);
void pm_put_flag(struct pm_genl *g, struct nl_msg *msg, int type);

/*
 * Sends req (and frees it), then receives until the ack (plain request)
 * or NLMSG_DONE (dump), handing every reply message to cb (may be NULL).
 * Returns 0 or a negative errno; details are in g->err.
 */
int pm_genl_request(struct pm_genl *g, struct nl_msg *req, pm_genl_cb cb,
		    void *arg);

/* Parses a nest of pmidx attributes with the reply policy. */
int pm_genl_parse_nested(struct nlattr **tb, struct nlattr *nest);

/* For callbacks: records "malformed reply: <why>", returns -EPROTO. */
int pm_genl_bad_reply(struct pm_genl *g, const char *why);

/* Records a local failure for pm_genl_perror(); returns -error. */
int pm_genl_fail(struct pm_genl *g, int error, const char *msg);

/*
 * Prints "pmidxctl: <what>: <strerror>[: <extack message>]
 * [ (attribute X, ...)]" for the last failed request.
 */
void pm_genl_perror(const struct pm_genl *g, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* "DEV_PATH", "INDEX_NAME", ... or NULL for unknown types. */
const char *pm_attr_name(int type);

#endif /* PMIDXCTL_GENL_H */
