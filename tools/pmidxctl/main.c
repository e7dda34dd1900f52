// SPDX-License-Identifier: GPL-2.0
/*
 * pmidxctl: administration tool for pmidx persistent-memory indexes.
 *
 * This file holds the subcommand dispatch, usage output and the
 * command-line parsing helpers shared by all subcommand files.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <linux/pmidx.h>

#include "pmidxctl.h"

/* Every subcommand table; add new files of subcommands here. */
static const struct pm_cmd *const cmd_tables[] = {
	pm_admin_cmds,
	pm_data_cmds,
	NULL,
};

static const struct pm_cmd *find_cmd(const char *name)
{
	const struct pm_cmd *const *t;
	const struct pm_cmd *c;

	for (t = cmd_tables; *t; t++)
		for (c = *t; c->name; c++)
			if (!strcmp(c->name, name))
				return c;
	return NULL;
}

void pm_cmd_usage(const struct pm_cmd *cmd, FILE *f)
{
	fprintf(f, "usage: %s %s%s%s\n", PMIDXCTL_PROG, cmd->name,
		cmd->args[0] ? " " : "", cmd->args);
}

static void print_usage(FILE *f)
{
	const struct pm_cmd *const *t;
	const struct pm_cmd *c;

	fprintf(f, "usage: %s COMMAND [ARGS...]\n\ncommands:\n",
		PMIDXCTL_PROG);
	for (t = cmd_tables; *t; t++) {
		for (c = *t; c->name; c++) {
			fprintf(f, "  %s %s%s%s\n", PMIDXCTL_PROG, c->name,
				c->args[0] ? " " : "", c->args);
			fprintf(f, "      %s\n", c->summary);
		}
	}
	fprintf(f, "  %s help [COMMAND] | --help | --version\n\n",
		PMIDXCTL_PROG);
	fprintf(f,
		"POOL is pmidxN, /dev/pmidxN, N, or the pool's pmem device (/dev/pmemN).\n"
		"Options may come before or after the positional arguments.\n"
		"Exit status: 0 success, 1 error reported by the kernel, 2 usage error.\n");
}

int pm_usage_error(const struct pm_cmd *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: %s: ", PMIDXCTL_PROG, cmd->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	pm_cmd_usage(cmd, stderr);
	return PM_EXIT_USAGE;
}

/* ---- number and pool parsing --------------------------------------- */

int pm_parse_u64(const char *s, uint64_t *v)
{
	unsigned long long x;
	char *end;
	int base = 10;

	/* strtoull() would accept leading blanks, a sign, and wrap "-1" */
	if (!isdigit((unsigned char)s[0]))
		return -1;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		if (!isxdigit((unsigned char)s[2]))
			return -1;
		base = 16;
	}
	errno = 0;
	x = strtoull(s, &end, base);
	if (errno || *end)
		return -1;
	*v = x;
	return 0;
}

int pm_parse_u32(const char *s, uint32_t *v)
{
	uint64_t x;

	if (pm_parse_u64(s, &x) || x > UINT32_MAX)
		return -1;
	*v = (uint32_t)x;
	return 0;
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

int pm_parse_pool(const char *s, struct pm_pool_sel *sel)
{
	const char *name = s;

	memset(sel, 0, sizeof(*sel));
	sel->arg = s;
	if (all_digits(s)) {
		if (pm_parse_u32(s, &sel->id))
			return -1;
		sel->kind = PM_SEL_ID;
		return 0;
	}
	if (!strncmp(name, "/dev/", 5))
		name += 5;
	if (!strncmp(name, "pmidx", 5) && all_digits(name + 5)) {
		sel->kind = PM_SEL_NAME;
		sel->str = name;
		return 0;
	}
	if (s[0] == '/') {
		sel->kind = PM_SEL_DEV;
		sel->str = s;
		return 0;
	}
	return -1;
}

/* ---- option parsing ------------------------------------------------ */

void pm_opt_init(struct pm_optparse *p, const struct pm_cmd *cmd,
		 int argc, char **argv)
{
	memset(p, 0, sizeof(*p));
	p->cmd = cmd;
	p->argc = argc;
	p->argv = argv;
	p->next = 1;
	p->pos = argv + 1;
}

static const struct pm_opt *find_opt(const struct pm_cmd *cmd,
				     const char *name, size_t len)
{
	const struct pm_opt *o;

	for (o = cmd->opts; o && o->name; o++)
		if (strlen(o->name) == len && !strncmp(o->name, name, len))
			return o;
	return NULL;
}

/* Handles one "--name[=value]" argument at argv[p->next - 1]. */
static int parse_long(struct pm_optparse *p, const char *arg)
{
	const char *name = arg + 2;
	const char *eq = strchr(name, '=');
	size_t len = eq ? (size_t)(eq - name) : strlen(name);

	if (len == 4 && !strncmp(name, "help", 4) && !eq) {
		pm_cmd_usage(p->cmd, stdout);
		return PM_OPT_HELP;
	}
	p->opt = find_opt(p->cmd, name, len);
	if (!p->opt) {
		pm_usage_error(p->cmd, "unknown option '%.*s'",
			       (int)(len + 2), arg);
		return PM_OPT_BAD;
	}
	p->val = NULL;
	if (!p->opt->has_arg) {
		if (eq) {
			pm_usage_error(p->cmd, "option '--%s' takes no value",
				       p->opt->name);
			return PM_OPT_BAD;
		}
		return p->opt->id;
	}
	if (eq) {
		p->val = eq + 1;
	} else if (p->next < p->argc) {
		p->val = p->argv[p->next++];
	} else {
		pm_usage_error(p->cmd, "option '--%s' needs a value",
			       p->opt->name);
		return PM_OPT_BAD;
	}
	return p->opt->id;
}

int pm_opt_next(struct pm_optparse *p)
{
	while (p->next < p->argc) {
		char *arg = p->argv[p->next++];

		if (p->opts_done || arg[0] != '-' || !arg[1]) {
			p->pos[p->npos++] = arg;	/* "-" is positional */
			continue;
		}
		if (!strcmp(arg, "--")) {
			p->opts_done = true;
			continue;
		}
		if (!strcmp(arg, "-h")) {
			pm_cmd_usage(p->cmd, stdout);
			return PM_OPT_HELP;
		}
		if (arg[1] != '-') {
			pm_usage_error(p->cmd, "unknown option '%s'", arg);
			return PM_OPT_BAD;
		}
		return parse_long(p, arg);
	}
	return PM_OPT_END;
}

int pm_opt_exit(int ret)
{
	return ret == PM_OPT_HELP ? PM_EXIT_OK : PM_EXIT_USAGE;
}

bool pm_opt_want(const struct pm_optparse *p, int min, int max)
{
	if (p->npos < min) {
		pm_usage_error(p->cmd, "missing argument");
		return false;
	}
	if (p->npos > max) {
		pm_usage_error(p->cmd, "unexpected argument '%s'",
			       p->pos[max]);
		return false;
	}
	return true;
}

bool pm_opt_u32(const struct pm_optparse *p, uint32_t *v)
{
	if (!pm_parse_u32(p->val, v))
		return true;
	pm_usage_error(p->cmd, "invalid value '%s' for --%s (expected 0..%u)",
		       p->val, p->opt->name, UINT32_MAX);
	return false;
}

bool pm_opt_u64(const struct pm_optparse *p, uint64_t *v)
{
	if (!pm_parse_u64(p->val, v))
		return true;
	pm_usage_error(p->cmd, "invalid value '%s' for --%s (expected an unsigned number)",
		       p->val, p->opt->name);
	return false;
}

bool pm_opt_pool(const struct pm_optparse *p, const char *s,
		 struct pm_pool_sel *sel)
{
	if (!pm_parse_pool(s, sel))
		return true;
	pm_usage_error(p->cmd, "invalid pool '%s' (expected pmidxN, /dev/pmidxN, N or a device path)",
		       s);
	return false;
}

/* ---- main ---------------------------------------------------------- */

static int cmd_help(int argc, char **argv)
{
	const struct pm_cmd *cmd;

	if (argc < 2) {
		print_usage(stdout);
		return PM_EXIT_OK;
	}
	cmd = find_cmd(argv[1]);
	if (!cmd || argc > 2) {
		fprintf(stderr, "%s: help: unknown command '%s'\n",
			PMIDXCTL_PROG, argv[1]);
		return PM_EXIT_USAGE;
	}
	pm_cmd_usage(cmd, stdout);
	printf("%s\n", cmd->summary);
	return PM_EXIT_OK;
}

static int finish(int ret)
{
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "%s: write error on stdout: %s\n",
			PMIDXCTL_PROG, strerror(errno));
		return ret ? ret : PM_EXIT_FAIL;
	}
	return ret;
}

int main(int argc, char **argv)
{
	const struct pm_cmd *cmd;
	const char *name;

	if (argc < 2) {
		print_usage(stderr);
		return PM_EXIT_USAGE;
	}
	name = argv[1];
	if (!strcmp(name, "help") || !strcmp(name, "--help") ||
	    !strcmp(name, "-h"))
		return finish(cmd_help(argc - 1, argv + 1));
	if (!strcmp(name, "--version") || !strcmp(name, "-V")) {
		printf("%s %s (generic netlink family \"%s\" version %d)\n",
		       PMIDXCTL_PROG, PMIDXCTL_VERSION, PMIDX_GENL_NAME,
		       PMIDX_GENL_VERSION);
		return finish(PM_EXIT_OK);
	}
	cmd = find_cmd(name);
	if (!cmd) {
		fprintf(stderr, "%s: unknown command '%s'\n"
			"Try '%s --help' for the list of commands.\n",
			PMIDXCTL_PROG, name, PMIDXCTL_PROG);
		return PM_EXIT_USAGE;
	}
	return finish(cmd->fn(cmd, argc - 1, argv + 1));
}
