/* SPDX-License-Identifier: GPL-2.0 */
/*
 * pmidxctl: shared declarations - the subcommand table, the option
 * parser and the argument helpers every subcommand file uses.
 */
#ifndef PMIDXCTL_H
#define PMIDXCTL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define PMIDXCTL_PROG		"pmidxctl"
#ifndef PMIDXCTL_VERSION
#define PMIDXCTL_VERSION	"0.1.0"
#endif

/* Exit status of the program (and return value of every handler). */
enum pm_exit {
	PM_EXIT_OK = 0,		/* success */
	PM_EXIT_FAIL = 1,	/* the kernel (or the system) reported an error */
	PM_EXIT_USAGE = 2,	/* bad command line */
};

/* A long option of a subcommand ("--NAME" or "--NAME VALUE"). */
struct pm_opt {
	const char *name;	/* without the leading "--" */
	bool has_arg;
	int id;			/* > 0, returned by pm_opt_next() */
};

struct pm_cmd {
	const char *name;
	/* argv[0] is the subcommand name; returns an enum pm_exit value */
	int (*fn)(const struct pm_cmd *cmd, int argc, char **argv);
	const char *args;	/* synopsis after the name, for usage lines */
	const char *summary;	/* one-line description */
	const struct pm_opt *opts;	/* ends with a NULL name; may be NULL */
};

/*
 * Subcommand tables, each terminated by an entry with a NULL name.
 * main.c walks all of them; a new file of subcommands adds its table
 * here and to the list in main.c.
 */
extern const struct pm_cmd pm_admin_cmds[];
extern const struct pm_cmd pm_data_cmds[];	/* data.c, over libpmidx */

/*
 * Option parser. Options (only long ones, plus -h) may appear anywhere
 * among the positional arguments; "--" ends option processing.
 * Positional arguments are collected in order into pos[0..npos-1]
 * (compacted in place inside argv).
 */
enum {
	PM_OPT_END = 0,		/* all arguments consumed */
	PM_OPT_HELP = -1,	/* --help/-h: usage was printed to stdout */
	PM_OPT_BAD = -2,	/* usage error: message was printed to stderr */
};

struct pm_optparse {
	const struct pm_cmd *cmd;
	int argc;
	char **argv;
	int next;		/* next argv index to examine */
	bool opts_done;		/* "--" seen */
	const struct pm_opt *opt;	/* option just returned */
	const char *val;	/* its argument, NULL for flags */
	char **pos;
	int npos;
};

void pm_opt_init(struct pm_optparse *p, const struct pm_cmd *cmd,
		 int argc, char **argv);
/* Returns an option id (> 0) or one of PM_OPT_END/HELP/BAD. */
int pm_opt_next(struct pm_optparse *p);
/* Exit status for a negative pm_opt_next() result. */
int pm_opt_exit(int ret);
/* Checks min <= npos <= max; prints a usage error otherwise. */
bool pm_opt_want(const struct pm_optparse *p, int min, int max);
/* Parse the current option's value; print a usage error on failure. */
bool pm_opt_u32(const struct pm_optparse *p, uint32_t *v);
bool pm_opt_u64(const struct pm_optparse *p, uint64_t *v);

void pm_cmd_usage(const struct pm_cmd *cmd, FILE *f);
/* Prints "pmidxctl: CMD: <msg>" and the usage line; returns PM_EXIT_USAGE. */
int pm_usage_error(const struct pm_cmd *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Decimal or 0x-hex, no sign, no trailing garbage. 0 on success. */
int pm_parse_u64(const char *s, uint64_t *v);
int pm_parse_u32(const char *s, uint32_t *v);

/* How a POOL argument selects a pool. */
enum pm_sel_kind {
	PM_SEL_NONE = 0,	/* no selector given */
	PM_SEL_ID,		/* "N" */
	PM_SEL_NAME,		/* "pmidxN" or "/dev/pmidxN" (str = "pmidxN") */
	PM_SEL_DEV,		/* "/dev/pmemN" or any other absolute path */
};

struct pm_pool_sel {
	enum pm_sel_kind kind;
	uint32_t id;		/* PM_SEL_ID */
	const char *str;	/* PM_SEL_NAME, PM_SEL_DEV (points into argv) */
	const char *arg;	/* the argument as the user typed it */
};

/* 0 on success, -1 if s is none of the accepted forms. */
int pm_parse_pool(const char *s, struct pm_pool_sel *sel);
/* pm_parse_pool() for an argument of p's command; usage error if bad. */
bool pm_opt_pool(const struct pm_optparse *p, const char *s,
		 struct pm_pool_sel *sel);

#endif /* PMIDXCTL_H */
