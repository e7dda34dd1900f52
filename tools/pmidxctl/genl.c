// SPDX-License-Identifier: GPL-2.0
/*
 * pmidxctl: generic netlink plumbing.
 *
 * One socket per invocation. Requests are synchronous: send, then
 * receive until the kernel's ack (plain requests carry NLM_F_ACK) or
 * NLMSG_DONE (dumps). Errors are taken from the NLMSG_ERROR ack or from
 * the NLMSG_DONE of a dump, including the extended-ack TLVs (message,
 * offending attribute, missing attribute, policy bounds).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <linux/genetlink.h>
#include <linux/netlink.h>

#include "genl.h"
#include "pmidxctl.h"

#ifndef SOL_NETLINK
#define SOL_NETLINK	270
#endif

/* Big enough for any single command-line argument as an attribute. */
#define PM_MSG_SIZE		(128 * 1024)
#define PM_ATTR_PAYLOAD_MAX	(0xffff - NLA_HDRLEN)
#define PM_TB_SIZE		32

_Static_assert(PMIDX_ATTR_MAX < PM_TB_SIZE, "reply tb[] too small");
_Static_assert(CTRL_ATTR_MAX < PM_TB_SIZE, "ctrl tb[] too small");

/* What the kernel may send us; anything failing this is malformed. */
static const struct nla_policy pm_policy[PMIDX_ATTR_MAX + 1] = {
	[PMIDX_ATTR_DEV_PATH]		= { .type = NLA_STRING },
	[PMIDX_ATTR_FORCE]		= { .type = NLA_FLAG },
	[PMIDX_ATTR_POOL_ID]		= { .type = NLA_U32 },
	[PMIDX_ATTR_POOL_NAME]		= { .type = NLA_STRING },
	[PMIDX_ATTR_POOL_UUID]		= { .minlen = 16, .maxlen = 16 },
	[PMIDX_ATTR_POOL_SIZE]		= { .type = NLA_U64 },
	[PMIDX_ATTR_POOL_FLAGS]		= { .type = NLA_U32 },
	[PMIDX_ATTR_POOL]		= { .type = NLA_NESTED },
	[PMIDX_ATTR_INDEX]		= { .type = NLA_NESTED },
	[PMIDX_ATTR_INDEX_NAME]		= { .type = NLA_STRING },
	[PMIDX_ATTR_INDEX_ID]		= { .type = NLA_U32 },
	[PMIDX_ATTR_ENGINE]		= { .type = NLA_U32 },
	[PMIDX_ATTR_ENGINE_NAME]	= { .type = NLA_STRING },
	[PMIDX_ATTR_STATS]		= { .type = NLA_NESTED },
	[PMIDX_ATTR_TEST_THREADS]	= { .type = NLA_U32 },
	[PMIDX_ATTR_TEST_OPS]		= { .type = NLA_U32 },
	[PMIDX_ATTR_TEST_SIZE]		= { .type = NLA_U32 },
	[PMIDX_ATTR_TEST_MODE]		= { .type = NLA_U32 },
	[PMIDX_ATTR_TEST_SEED]		= { .type = NLA_U64 },
};

static const struct nla_policy ctrl_policy[CTRL_ATTR_MAX + 1] = {
	[CTRL_ATTR_FAMILY_ID]		= { .type = NLA_U16 },
	[CTRL_ATTR_FAMILY_NAME]		= { .type = NLA_STRING },
	[CTRL_ATTR_VERSION]		= { .type = NLA_U32 },
};

static const char *const attr_names[PMIDX_ATTR_MAX + 1] = {
	[PMIDX_ATTR_DEV_PATH]		= "DEV_PATH",
	[PMIDX_ATTR_FORCE]		= "FORCE",
	[PMIDX_ATTR_POOL_ID]		= "POOL_ID",
	[PMIDX_ATTR_POOL_NAME]		= "POOL_NAME",
	[PMIDX_ATTR_POOL_UUID]		= "POOL_UUID",
	[PMIDX_ATTR_POOL_SIZE]		= "POOL_SIZE",
	[PMIDX_ATTR_POOL_FLAGS]		= "POOL_FLAGS",
	[PMIDX_ATTR_POOL]		= "POOL",
	[PMIDX_ATTR_INDEX]		= "INDEX",
	[PMIDX_ATTR_INDEX_NAME]		= "INDEX_NAME",
	[PMIDX_ATTR_INDEX_ID]		= "INDEX_ID",
	[PMIDX_ATTR_ENGINE]		= "ENGINE",
	[PMIDX_ATTR_ENGINE_NAME]	= "ENGINE_NAME",
	[PMIDX_ATTR_STATS]		= "STATS",
	[PMIDX_ATTR_TEST_THREADS]	= "TEST_THREADS",
	[PMIDX_ATTR_TEST_OPS]		= "TEST_OPS",
	[PMIDX_ATTR_TEST_SIZE]		= "TEST_SIZE",
	[PMIDX_ATTR_TEST_MODE]		= "TEST_MODE",
	[PMIDX_ATTR_TEST_SEED]		= "TEST_SEED",
	[PMIDX_ATTR_PAD]		= "PAD",
};

const char *pm_attr_name(int type)
{
	if (type <= 0 || type > PMIDX_ATTR_MAX)
		return NULL;
	return attr_names[type];
}

/* State of one request while its answers come in. */
struct xfer {
	struct pm_genl *g;
	struct nl_msg *req;
	int maxattr;
	const struct nla_policy *policy;
	pm_genl_cb cb;
	void *arg;
	bool done;		/* ack, error or NLMSG_DONE seen */
	bool intr;		/* a dump message had NLM_F_DUMP_INTR */
	int ret;		/* 0 or negative errno */
};

static void reset_err(struct pm_nlerr *e)
{
	memset(e, 0, sizeof(*e));
	e->bad_attr = -1;
	e->miss_attr = -1;
}

static void xfer_fail(struct xfer *x, int error, const char *why)
{
	struct pm_nlerr *e = &x->g->err;

	if (x->ret)
		return;		/* keep the first error */
	x->ret = -error;
	e->error = error;
	if (why && !e->msg[0])
		snprintf(e->msg, sizeof(e->msg), "%s", why);
}

static void xfer_libnl_fail(struct xfer *x, int nlerr)
{
	if (x->ret)
		return;
	x->g->err.nl_error = nlerr < 0 ? -nlerr : nlerr;
	xfer_fail(x, EIO, NULL);
}

/* ---- extended ack -------------------------------------------------- */

/* Type of the request attribute that contains byte offset off. */
static int attr_at_offset(struct nl_msg *req, uint32_t off)
{
	struct nlmsghdr *nlh = nlmsg_hdr(req);
	uint32_t start = NLMSG_HDRLEN + GENL_HDRLEN;
	struct nlattr *a;
	int rem;

	if (off < start || off >= nlh->nlmsg_len)
		return -1;
	nla_for_each_attr(a, (struct nlattr *)((char *)nlh + start),
			  (int)(nlh->nlmsg_len - start), rem) {
		uint32_t a_off = (uint32_t)((char *)a - (char *)nlh);

		if (off >= a_off && off < a_off + NLA_ALIGN(a->nla_len))
			return nla_type(a);
	}
	return -1;
}

static void parse_policy(struct pm_nlerr *e, struct nlattr *nest)
{
	struct nlattr *tb[NL_POLICY_TYPE_ATTR_MAX + 1];
	struct nlattr *lo, *hi;

	if (nla_parse_nested(tb, NL_POLICY_TYPE_ATTR_MAX, nest, NULL) < 0)
		return;
	lo = tb[NL_POLICY_TYPE_ATTR_MIN_LENGTH];
	hi = tb[NL_POLICY_TYPE_ATTR_MAX_LENGTH];
	if (hi && nla_len(hi) >= 4) {
		e->has_len = true;
		e->max_len = nla_get_u32(hi);
		e->min_len = lo && nla_len(lo) >= 4 ? nla_get_u32(lo) : 0;
	}
	e->has_policy = true;
	lo = tb[NL_POLICY_TYPE_ATTR_MIN_VALUE_U];
	hi = tb[NL_POLICY_TYPE_ATTR_MAX_VALUE_U];
	if (lo && hi && nla_len(lo) >= 8 && nla_len(hi) >= 8) {
		e->has_range = true;
		e->min_val = nla_get_u64(lo);
		e->max_val = nla_get_u64(hi);
	}
}

/* Copies a string attribute that may lack its NUL, truncating. */
static void copy_attr_str(char *dst, size_t size, const struct nlattr *a)
{
	size_t len = strnlen(nla_data(a), (size_t)nla_len(a));

	if (len >= size)
		len = size - 1;
	memcpy(dst, nla_data(a), len);
	dst[len] = '\0';
}

/* Parses the extack TLVs starting at byte off of an ack/error/done. */
static void parse_extack(struct xfer *x, struct nlmsghdr *nlh, size_t off)
{
	struct nlattr *tb[NLMSGERR_ATTR_MAX + 1];
	struct pm_nlerr *e = &x->g->err;
	struct nlattr *a;

	if (!(nlh->nlmsg_flags & NLM_F_ACK_TLVS) || off >= nlh->nlmsg_len)
		return;
	if (nla_parse(tb, NLMSGERR_ATTR_MAX, (struct nlattr *)((char *)nlh + off),
		      (int)(nlh->nlmsg_len - off), NULL) < 0)
		return;
	a = tb[NLMSGERR_ATTR_MSG];
	if (a && nla_len(a) > 0)
		copy_attr_str(e->msg, sizeof(e->msg), a);
	a = tb[NLMSGERR_ATTR_OFFS];
	if (a && nla_len(a) >= 4)
		e->bad_attr = attr_at_offset(x->req, nla_get_u32(a));
	a = tb[NLMSGERR_ATTR_MISS_TYPE];
	if (a && nla_len(a) >= 4)
		e->miss_attr = (int)nla_get_u32(a);
	if (tb[NLMSGERR_ATTR_POLICY])
		parse_policy(e, tb[NLMSGERR_ATTR_POLICY]);
}

/* ---- receive callbacks --------------------------------------------- */

static int valid_handler(struct nl_msg *msg, void *arg)
{
	struct xfer *x = arg;
	struct nlmsghdr *nlh = nlmsg_hdr(msg);
	struct nlattr *tb[PM_TB_SIZE];
	struct genlmsghdr *gh;
	int ret;

	if (!genlmsg_valid_hdr(nlh, 0)) {
		xfer_fail(x, EPROTO, "malformed reply: short message");
		return NL_STOP;
	}
	if (nlh->nlmsg_flags & NLM_F_DUMP_INTR)
		x->intr = true;
	gh = nlmsg_data(nlh);
	if (genlmsg_parse(nlh, 0, tb, x->maxattr, x->policy) < 0) {
		xfer_fail(x, EPROTO,
			  "malformed reply: attribute of unexpected size");
		return NL_STOP;
	}
	if (!x->cb)
		return NL_OK;
	ret = x->cb(x->g, gh->cmd, tb, x->arg);
	if (ret < 0) {
		xfer_fail(x, -ret, NULL);
		return NL_STOP;
	}
	return NL_OK;
}

/* Plain request acknowledged; the TLVs may carry a warning message. */
static int ack_handler(struct nl_msg *msg, void *arg)
{
	struct xfer *x = arg;
	struct nlmsghdr *nlh = nlmsg_hdr(msg);
	struct nlmsgerr *e = nlmsg_data(nlh);
	size_t off = NLMSG_HDRLEN + sizeof(*e);

	if (!(nlh->nlmsg_flags & NLM_F_CAPPED) &&
	    e->msg.nlmsg_len > NLMSG_HDRLEN)
		off += e->msg.nlmsg_len - NLMSG_HDRLEN;
	parse_extack(x, nlh, NLMSG_ALIGN(off));
	x->done = true;
	return NL_STOP;
}

/* End of a dump: the payload is an int error, then optional TLVs. */
static int finish_handler(struct nl_msg *msg, void *arg)
{
	struct xfer *x = arg;
	struct nlmsghdr *nlh = nlmsg_hdr(msg);
	int err = 0;

	x->done = true;
	if (nlh->nlmsg_len >= NLMSG_HDRLEN + sizeof(err))
		memcpy(&err, nlmsg_data(nlh), sizeof(err));
	if (err < 0) {
		parse_extack(x, nlh, NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(err)));
		xfer_fail(x, -err, NULL);
	}
	return NL_STOP;
}

static int error_handler(struct sockaddr_nl *nla, struct nlmsgerr *e,
			 void *arg)
{
	struct xfer *x = arg;
	/* libnl hands us nlmsg_data() of the NLMSG_ERROR message */
	struct nlmsghdr *nlh = (struct nlmsghdr *)((char *)e - NLMSG_HDRLEN);
	size_t off = NLMSG_HDRLEN + sizeof(*e);

	(void)nla;
	if (!(nlh->nlmsg_flags & NLM_F_CAPPED) &&
	    e->msg.nlmsg_len > NLMSG_HDRLEN)
		off += e->msg.nlmsg_len - NLMSG_HDRLEN;
	parse_extack(x, nlh, NLMSG_ALIGN(off));
	xfer_fail(x, e->error < 0 ? -e->error : e->error, NULL);
	x->done = true;
	return NL_STOP;
}

static struct nl_cb *xfer_cb(struct xfer *x)
{
	struct nl_cb *cb = nl_cb_alloc(NL_CB_DEFAULT);

	if (!cb)
		return NULL;
	nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, valid_handler, x);
	nl_cb_set(cb, NL_CB_ACK, NL_CB_CUSTOM, ack_handler, x);
	nl_cb_set(cb, NL_CB_FINISH, NL_CB_CUSTOM, finish_handler, x);
	nl_cb_err(cb, NL_CB_CUSTOM, error_handler, x);
	return cb;
}

/* ---- requests ------------------------------------------------------ */

static int xfer_run(struct pm_genl *g, struct nl_msg *req, int maxattr,
		    const struct nla_policy *policy, pm_genl_cb cb, void *arg)
{
	struct xfer x = {
		.g = g, .req = req, .maxattr = maxattr, .policy = policy,
		.cb = cb, .arg = arg,
	};
	struct nl_cb *nlcb;
	int ret;

	reset_err(&g->err);
	g->err.foreign = policy != pm_policy;
	if (!req || g->build_err) {
		xfer_fail(&x, g->build_err ? g->build_err : ENOMEM,
			  g->build_err == EMSGSIZE ?
			  "argument too long for a netlink attribute" : NULL);
		goto out;
	}
	nlcb = xfer_cb(&x);
	if (!nlcb) {
		xfer_fail(&x, ENOMEM, NULL);
		goto out;
	}
	ret = nl_send_auto(g->sk, req);
	if (ret < 0)
		xfer_libnl_fail(&x, ret);
	while (!x.done && !x.ret) {
		ret = nl_recvmsgs(g->sk, nlcb);
		if (ret < 0)
			xfer_libnl_fail(&x, ret);
	}
	nl_cb_put(nlcb);
	if (x.intr && !x.ret)
		fprintf(stderr, "%s: warning: the kernel's state changed during the dump; output may be inconsistent\n",
			PMIDXCTL_PROG);
out:
	nlmsg_free(req);
	return x.ret;
}

int pm_genl_request(struct pm_genl *g, struct nl_msg *req, pm_genl_cb cb,
		    void *arg)
{
	int ret = xfer_run(g, req, PMIDX_ATTR_MAX, pm_policy, cb, arg);

	if (!ret && g->err.msg[0])
		fprintf(stderr, "%s: warning: %s\n", PMIDXCTL_PROG,
			g->err.msg);
	return ret;
}

int pm_genl_parse_nested(struct nlattr **tb, struct nlattr *nest)
{
	return nla_parse_nested(tb, PMIDX_ATTR_MAX, nest, pm_policy);
}

int pm_genl_bad_reply(struct pm_genl *g, const char *why)
{
	g->err.error = EPROTO;
	snprintf(g->err.msg, sizeof(g->err.msg), "malformed reply: %s", why);
	return -EPROTO;
}

int pm_genl_fail(struct pm_genl *g, int error, const char *msg)
{
	reset_err(&g->err);
	g->err.error = error;
	snprintf(g->err.msg, sizeof(g->err.msg), "%s", msg);
	return -error;
}

static struct nl_msg *new_msg(struct pm_genl *g, int family, uint8_t cmd,
			      uint8_t version, int flags)
{
	struct nl_msg *msg;

	g->build_err = 0;
	msg = nlmsg_alloc_size(PM_MSG_SIZE);
	if (!msg) {
		g->build_err = ENOMEM;
		return NULL;
	}
	if (!genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, family, 0, flags,
			 cmd, version)) {
		nlmsg_free(msg);
		g->build_err = ENOMEM;
		return NULL;
	}
	return msg;
}

struct nl_msg *pm_genl_msg(struct pm_genl *g, uint8_t cmd, bool dump)
{
	return new_msg(g, g->family, cmd, PMIDX_GENL_VERSION,
		       dump ? NLM_F_DUMP : NLM_F_ACK);
}

static void put_attr(struct pm_genl *g, struct nl_msg *msg, int type,
		     size_t len, const void *data)
{
	int ret;

	if (!msg || g->build_err)
		return;
	if (len > PM_ATTR_PAYLOAD_MAX) {
		g->build_err = EMSGSIZE;
		return;
	}
	ret = nla_put(msg, type, (int)len, data);
	if (ret < 0)
		g->build_err = ret == -NLE_NOMEM ? EMSGSIZE : EINVAL;
}

void pm_put_str(struct pm_genl *g, struct nl_msg *msg, int type,
		const char *s)
{
	put_attr(g, msg, type, strlen(s) + 1, s);
}

void pm_put_u32(struct pm_genl *g, struct nl_msg *msg, int type, uint32_t v)
{
	put_attr(g, msg, type, sizeof(v), &v);
}

void pm_put_u64(struct pm_genl *g, struct nl_msg *msg, int type, uint64_t v)
{
	put_attr(g, msg, type, sizeof(v), &v);
}

void pm_put_flag(struct pm_genl *g, struct nl_msg *msg, int type)
{
	put_attr(g, msg, type, 0, NULL);
}

/* ---- error reporting ----------------------------------------------- */

static void print_attr(FILE *f, const struct pm_nlerr *e, int type)
{
	const char *name = e->foreign ? NULL : pm_attr_name(type);

	if (name)
		fprintf(f, "%s", name);
	else
		fprintf(f, "#%d", type);
}

/*
 * The offending attribute is named when it adds something: the kernel
 * gave no message of its own, or the policy rejected the attribute.
 */
static void print_attr_detail(FILE *f, const struct pm_nlerr *e)
{
	if (e->bad_attr >= 0 && (!e->msg[0] || e->has_policy)) {
		fprintf(f, " (attribute ");
		print_attr(f, e, e->bad_attr);
		if (e->has_len && e->min_len)
			fprintf(f, ", length %u..%u", e->min_len, e->max_len);
		else if (e->has_len)
			fprintf(f, ", max length %u", e->max_len);
		if (e->has_range)
			fprintf(f, ", range %llu..%llu",
				(unsigned long long)e->min_val,
				(unsigned long long)e->max_val);
		fputc(')', f);
	} else if (e->miss_attr >= 0) {
		fprintf(f, " (missing attribute ");
		print_attr(f, e, e->miss_attr);
		fputc(')', f);
	}
}

void pm_genl_perror(const struct pm_genl *g, const char *fmt, ...)
{
	const struct pm_nlerr *e = &g->err;
	va_list ap;

	fprintf(stderr, "%s: ", PMIDXCTL_PROG);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, ": %s", e->nl_error ? nl_geterror(e->nl_error) :
		strerror(e->error));
	if (e->msg[0])
		fprintf(stderr, ": %s", e->msg);
	print_attr_detail(stderr, e);
	fputc('\n', stderr);
}

/* ---- socket and family --------------------------------------------- */

static int family_cb(struct pm_genl *g, uint8_t cmd, struct nlattr **tb,
		     void *arg)
{
	(void)cmd;
	(void)arg;
	if (!tb[CTRL_ATTR_FAMILY_ID])
		return pm_genl_bad_reply(g, "no CTRL_ATTR_FAMILY_ID");
	g->family = nla_get_u16(tb[CTRL_ATTR_FAMILY_ID]);
	if (tb[CTRL_ATTR_VERSION])
		g->version = nla_get_u32(tb[CTRL_ATTR_VERSION]);
	return 0;
}

static int resolve_family(struct pm_genl *g)
{
	struct nl_msg *msg;
	int ret;

	msg = new_msg(g, GENL_ID_CTRL, CTRL_CMD_GETFAMILY, 1, NLM_F_ACK);
	pm_put_str(g, msg, CTRL_ATTR_FAMILY_NAME, PMIDX_GENL_NAME);
	ret = xfer_run(g, msg, CTRL_ATTR_MAX, ctrl_policy, family_cb, NULL);
	if (ret == -ENOENT) {
		fprintf(stderr,
			"%s: pmidx module not loaded (generic netlink family \"%s\" not found)\n",
			PMIDXCTL_PROG, PMIDX_GENL_NAME);
		return ret;
	}
	if (!ret && !g->family)
		ret = pm_genl_bad_reply(g, "no family id");
	if (ret) {
		pm_genl_perror(g, "cannot resolve generic netlink family \"%s\"",
			       PMIDX_GENL_NAME);
		return ret;
	}
	if (g->version < PMIDX_GENL_VERSION)
		fprintf(stderr,
			"%s: warning: kernel family \"%s\" is version %u, expected %d\n",
			PMIDXCTL_PROG, PMIDX_GENL_NAME, g->version,
			PMIDX_GENL_VERSION);
	return 0;
}

static void set_sockopt(struct pm_genl *g, int opt)
{
	int one = 1;

	/* Older kernels lack these; errors then just lack the details. */
	(void)setsockopt(nl_socket_get_fd(g->sk), SOL_NETLINK, opt, &one,
			 sizeof(one));
}

int pm_genl_open(struct pm_genl *g)
{
	int ret;

	memset(g, 0, sizeof(*g));
	reset_err(&g->err);
	g->sk = nl_socket_alloc();
	if (!g->sk) {
		fprintf(stderr, "%s: out of memory\n", PMIDXCTL_PROG);
		return -ENOMEM;
	}
	ret = genl_connect(g->sk);
	if (ret < 0) {
		fprintf(stderr, "%s: cannot open a generic netlink socket: %s\n",
			PMIDXCTL_PROG, nl_geterror(ret));
		pm_genl_close(g);
		return -EIO;
	}
	nl_socket_enable_msg_peek(g->sk);
	set_sockopt(g, NETLINK_EXT_ACK);
	set_sockopt(g, NETLINK_CAP_ACK);
	ret = resolve_family(g);
	if (ret) {
		pm_genl_close(g);
		return ret;
	}
	return 0;
}

void pm_genl_close(struct pm_genl *g)
{
	if (g->sk)
		nl_socket_free(g->sk);
	g->sk = NULL;
}
