/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A deliberately small raw generic-netlink client for the selftests.
 * No libnl: the tests must be able to send what a well-behaved library
 * never would (unknown attributes, output-only attributes, bogus
 * commands) and to read the kernel's extack message verbatim.
 */
#ifndef PMIDX_SELFTEST_NL_H
#define PMIDX_SELFTEST_NL_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/pmidx.h>
#include <linux/pmidx_test.h>

#ifndef NETLINK_EXT_ACK
#define NETLINK_EXT_ACK 11
#endif

#define NLBUF 65536

struct nl {
	int		fd;
	uint16_t	family;
	uint32_t	seq;
	char		msg[256];	/* extack message of the last error */
	char		buf[NLBUF];	/* last reply */
	int		len;
};

struct req {
	struct nlmsghdr		nh;
	struct genlmsghdr	gh;
	char			attrs[4096];
};

static inline struct nlattr *req_put(struct req *r, uint16_t type,
				     const void *data, size_t len)
{
	struct nlattr *a = (struct nlattr *)((char *)r + NLMSG_ALIGN(r->nh.nlmsg_len));

	a->nla_type = type;
	a->nla_len = NLA_HDRLEN + len;
	if (len)
		memcpy((char *)a + NLA_HDRLEN, data, len);
	r->nh.nlmsg_len = NLMSG_ALIGN(r->nh.nlmsg_len) + NLA_ALIGN(a->nla_len);
	return a;
}

static inline void req_str(struct req *r, uint16_t type, const char *s)
{
	req_put(r, type, s, strlen(s) + 1);
}

static inline void req_u32(struct req *r, uint16_t type, uint32_t v)
{
	req_put(r, type, &v, sizeof(v));
}

static inline void req_u64(struct req *r, uint16_t type, uint64_t v)
{
	req_put(r, type, &v, sizeof(v));
}

static inline void req_init(struct req *r, uint16_t family, uint8_t cmd,
			    uint16_t flags)
{
	memset(r, 0, sizeof(*r));
	r->nh.nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN);
	r->nh.nlmsg_type = family;
	r->nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | flags;
	r->gh.cmd = cmd;
	r->gh.version = PMIDX_GENL_VERSION;
}

/* Walk attributes [start, start+len). */
#define nla_for_each(a, start, len)					\
	for (a = (struct nlattr *)(start);				\
	     (char *)a + NLA_HDRLEN <= (char *)(start) + (len) &&	\
	     a->nla_len >= NLA_HDRLEN &&				\
	     (char *)a + a->nla_len <= (char *)(start) + (len);	\
	     a = (struct nlattr *)((char *)a + NLA_ALIGN(a->nla_len)))

#define nla_data_of(a)	((void *)((char *)(a) + NLA_HDRLEN))
#define nla_plen(a)	((a)->nla_len - NLA_HDRLEN)

static inline void extack_msg(struct nl *nl, struct nlmsghdr *h)
{
	struct nlmsgerr *e = NLMSG_DATA(h);
	struct nlattr *a;
	size_t off = sizeof(*e);

	nl->msg[0] = 0;
	if (!(h->nlmsg_flags & NLM_F_ACK_TLVS))
		return;
	if (!(h->nlmsg_flags & NLM_F_CAPPED))
		off += e->msg.nlmsg_len - sizeof(e->msg);
	nla_for_each(a, (char *)e + off, h->nlmsg_len - NLMSG_HDRLEN - off)
		if (a->nla_type == NLMSGERR_ATTR_MSG)
			snprintf(nl->msg, sizeof(nl->msg), "%s",
				 (char *)nla_data_of(a));
}

/*
 * Send @r; collect replies until the ack. For each data message call
 * @cb (may be NULL). Return: 0 or the negative errno of the ack.
 */
static inline int nl_call(struct nl *nl, struct req *r,
			  void (*cb)(struct nlmsghdr *h, void *arg), void *arg)
{
	int ret = 0, done = 0;

	r->nh.nlmsg_seq = ++nl->seq;
	if (send(nl->fd, r, r->nh.nlmsg_len, 0) < 0)
		return -errno;
	nl->msg[0] = 0;
	while (!done) {
		struct nlmsghdr *h;
		int len = recv(nl->fd, nl->buf, sizeof(nl->buf), 0);

		if (len < 0)
			return -errno;
		for (h = (struct nlmsghdr *)nl->buf; NLMSG_OK(h, len);
		     h = NLMSG_NEXT(h, len)) {
			if (h->nlmsg_seq != nl->seq)
				continue;
			if (h->nlmsg_type == NLMSG_ERROR) {
				ret = ((struct nlmsgerr *)NLMSG_DATA(h))->error;
				if (ret)
					extack_msg(nl, h);
				done = 1;
				break;
			}
			if (h->nlmsg_type == NLMSG_DONE) {
				done = 1;
				break;
			}
			if (cb)
				cb(h, arg);
		}
	}
	return ret;
}

static inline int nl_open(struct nl *nl)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	struct req r;
	struct nlattr *a, *attrs;
	struct nlmsghdr *h;
	int one = 1, len;

	memset(nl, 0, sizeof(*nl));
	nl->fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
	if (nl->fd < 0)
		return -errno;
	setsockopt(nl->fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	if (bind(nl->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -errno;
	req_init(&r, GENL_ID_CTRL, CTRL_CMD_GETFAMILY, 0);
	r.gh.version = 2;
	req_str(&r, CTRL_ATTR_FAMILY_NAME, PMIDX_GENL_NAME);
	r.nh.nlmsg_flags = NLM_F_REQUEST;
	r.nh.nlmsg_seq = ++nl->seq;
	if (send(nl->fd, &r, r.nh.nlmsg_len, 0) < 0)
		return -errno;
	len = recv(nl->fd, nl->buf, sizeof(nl->buf), 0);
	if (len < 0)
		return -errno;
	h = (struct nlmsghdr *)nl->buf;
	if (h->nlmsg_type == NLMSG_ERROR)
		return ((struct nlmsgerr *)NLMSG_DATA(h))->error;
	attrs = (struct nlattr *)((char *)NLMSG_DATA(h) + GENL_HDRLEN);
	nla_for_each(a, attrs, h->nlmsg_len - NLMSG_LENGTH(GENL_HDRLEN))
		if (a->nla_type == CTRL_ATTR_FAMILY_ID)
			nl->family = *(uint16_t *)nla_data_of(a);
	return nl->family ? 0 : -ENOENT;
}

static inline void nl_close(struct nl *nl)
{
	close(nl->fd);
}

/* Find attribute @type directly inside [start, start+len). */
static inline struct nlattr *nla_find_in(void *start, int len, uint16_t type)
{
	struct nlattr *a;

	nla_for_each(a, start, len)
		if ((a->nla_type & NLA_TYPE_MASK) == type)
			return a;
	return NULL;
}

static inline struct nlattr *msg_attr(struct nlmsghdr *h, uint16_t type)
{
	return nla_find_in((char *)NLMSG_DATA(h) + GENL_HDRLEN,
			   h->nlmsg_len - NLMSG_LENGTH(GENL_HDRLEN), type);
}

static inline struct nlattr *nest_attr(struct nlattr *nest, uint16_t type)
{
	return nest ? nla_find_in(nla_data_of(nest), nla_plen(nest), type) : NULL;
}

/* ---- convenience wrappers ------------------------------------------- */

static inline int pm_format(struct nl *nl, const char *dev, int force)
{
	struct req r;

	req_init(&r, nl->family, PMIDX_CMD_FORMAT, 0);
	req_str(&r, PMIDX_ATTR_DEV_PATH, dev);
	if (force)
		req_put(&r, PMIDX_ATTR_FORCE, NULL, 0);
	return nl_call(nl, &r, NULL, NULL);
}

struct pool_info {
	int	 id;
	char	 name[32];
	uint32_t flags;
	uint64_t size;
	uint64_t stats[PMIDX_STAT_MAX + 1];
	int	 nr_indexes;
};

static inline void parse_stats(struct nlattr *st, uint64_t *vals)
{
	struct nlattr *a;

	if (!st)
		return;
	nla_for_each(a, nla_data_of(st), nla_plen(st))
		if (a->nla_type <= PMIDX_STAT_MAX)
			memcpy(&vals[a->nla_type], nla_data_of(a), 8);
}

static inline void pool_cb(struct nlmsghdr *h, void *arg)
{
	struct pool_info *p = arg;
	struct nlattr *pool = msg_attr(h, PMIDX_ATTR_POOL), *a;

	if (msg_attr(h, PMIDX_ATTR_INDEX))
		p->nr_indexes++;
	if (!pool)
		return;
	if ((a = nest_attr(pool, PMIDX_ATTR_POOL_ID)))
		p->id = *(uint32_t *)nla_data_of(a);
	if ((a = nest_attr(pool, PMIDX_ATTR_POOL_NAME)))
		snprintf(p->name, sizeof(p->name), "%s", (char *)nla_data_of(a));
	if ((a = nest_attr(pool, PMIDX_ATTR_POOL_FLAGS)))
		p->flags = *(uint32_t *)nla_data_of(a);
	if ((a = nest_attr(pool, PMIDX_ATTR_POOL_SIZE)))
		memcpy(&p->size, nla_data_of(a), 8);
	parse_stats(nest_attr(pool, PMIDX_ATTR_STATS), p->stats);
}

static inline int pm_attach(struct nl *nl, const char *dev, struct pool_info *p)
{
	struct req r;

	memset(p, 0, sizeof(*p));
	p->id = -1;
	req_init(&r, nl->family, PMIDX_CMD_ATTACH, 0);
	req_str(&r, PMIDX_ATTR_DEV_PATH, dev);
	return nl_call(nl, &r, pool_cb, p);
}

static inline int pm_detach(struct nl *nl, const char *pool)
{
	struct req r;

	req_init(&r, nl->family, PMIDX_CMD_DETACH, 0);
	req_str(&r, pool[0] == '/' ? PMIDX_ATTR_DEV_PATH : PMIDX_ATTR_POOL_NAME,
		pool);
	return nl_call(nl, &r, NULL, NULL);
}

/* Pool-level stats of the only (or named) pool, plus the index count. */
static inline int pm_stats(struct nl *nl, const char *pool, struct pool_info *p)
{
	struct req r;

	memset(p, 0, sizeof(*p));
	p->id = -1;
	req_init(&r, nl->family, PMIDX_CMD_STATS, NLM_F_DUMP);
	if (pool)
		req_str(&r, PMIDX_ATTR_POOL_NAME, pool);
	return nl_call(nl, &r, pool_cb, p);
}

static inline int pm_create(struct nl *nl, const char *name, uint32_t engine)
{
	struct req r;

	req_init(&r, nl->family, PMIDX_CMD_CREATE_INDEX, 0);
	req_str(&r, PMIDX_ATTR_INDEX_NAME, name);
	if (engine)
		req_u32(&r, PMIDX_ATTR_ENGINE, engine);
	return nl_call(nl, &r, NULL, NULL);
}

static inline int pm_drop(struct nl *nl, const char *name)
{
	struct req r;

	req_init(&r, nl->family, PMIDX_CMD_DROP_INDEX, 0);
	req_str(&r, PMIDX_ATTR_INDEX_NAME, name);
	return nl_call(nl, &r, NULL, NULL);
}

static inline int pm_alloc_test(struct nl *nl, uint32_t mode, uint32_t threads,
				uint32_t ops, uint32_t size, uint64_t seed,
				struct pool_info *p)
{
	struct req r;

	memset(p, 0, sizeof(*p));
	req_init(&r, nl->family, PMIDX_CMD_ALLOC_TEST, 0);
	req_u32(&r, PMIDX_ATTR_TEST_MODE, mode);
	req_u32(&r, PMIDX_ATTR_TEST_THREADS, threads);
	req_u32(&r, PMIDX_ATTR_TEST_OPS, ops);
	req_u32(&r, PMIDX_ATTR_TEST_SIZE, size);
	req_u64(&r, PMIDX_ATTR_TEST_SEED, seed);
	return nl_call(nl, &r, pool_cb, p);
}

#endif /* PMIDX_SELFTEST_NL_H */
