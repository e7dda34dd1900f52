/* SPDX-License-Identifier: GPL-2.0 */
/*
 * pmidxctl: what the admin replies decode to, and how it is printed
 * (human-readable tables or JSON). Nothing here depends on netlink, so
 * the formatting can be tested on its own (see tests/).
 */
#ifndef PMIDXCTL_PRINT_H
#define PMIDXCTL_PRINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <linux/pmidx.h>
#include <linux/pmidx_test.h>

struct pm_stat {
	uint32_t type;		/* enum pmidx_stat, or newer */
	uint64_t value;
};

struct pm_stats {
	bool present;		/* a STATS nest was in the reply */
	size_t n;
	struct pm_stat *v;
};

struct pm_index {
	uint32_t pool_id;
	uint32_t id;
	uint32_t engine;	/* enum pmidx_engine_id; 0 if not reported */
	char *name;
	char *engine_name;	/* NULL if not reported */
	struct pm_stats stats;
};

struct pm_pool {
	uint32_t id;
	char *name;		/* NULL: derived as "pmidx<id>" */
	char *dev;		/* NULL if not reported */
	bool has_uuid, has_size;
	uint8_t uuid[16];
	uint64_t size;
	uint32_t flags;		/* PMIDX_POOL_F_* */
	size_t nindexes;
	struct pm_index *indexes;	/* list: indexes inside the pool */
	struct pm_stats stats;
};

/* Everything one command collected from its replies. */
struct pm_view {
	size_t npools;
	struct pm_pool *pools;
	size_t nindexes;
	struct pm_index *indexes;	/* stats/create-index: top-level ones */
};

/* Parameters of an allocator test, echoed in its output. */
struct pm_test_params {
	uint32_t mode;		/* enum pmidx_alloc_test_mode */
	uint32_t threads;
	uint32_t ops;
	uint32_t size;
	uint64_t seed;
};

/* ---- model --------------------------------------------------------- */

/* Append a zeroed element; NULL on allocation failure. */
struct pm_pool *pm_view_add_pool(struct pm_view *v);
struct pm_index *pm_view_add_index(struct pm_view *v);
struct pm_index *pm_pool_add_index(struct pm_pool *p);
int pm_stats_add(struct pm_stats *st, uint32_t type, uint64_t value);
/*
 * Moves top-level indexes into the pool with their pool_id (LIST sends
 * them as separate messages); indexes of unknown pools stay. 0 or -1.
 */
int pm_view_adopt_indexes(struct pm_view *v);
void pm_view_free(struct pm_view *v);

/* ---- names --------------------------------------------------------- */

const char *pm_engine_name(uint32_t id);	/* NULL if unknown */
int pm_engine_lookup(const char *name);		/* -1 if unknown */
const char *pm_test_mode_name(uint32_t mode);	/* NULL if unknown */
int pm_test_mode_lookup(const char *name);	/* -1 if unknown */
/* Stat name: the enum name in lower case, or "stat_<n>". */
const char *pm_stat_name(uint32_t type, char *buf, size_t len);
/* "pmidx<id>" unless the kernel reported a name. */
const char *pm_pool_name(const struct pm_pool *p, char *buf, size_t len);
/* Canonical 36-character form, lower-case hex. */
void pm_uuid_str(const uint8_t uuid[16], char out[37]);

/* ---- JSON ---------------------------------------------------------- */

#define PM_JSON_MAX_DEPTH	16

struct pm_json {
	FILE *f;
	unsigned int depth;
	bool first[PM_JSON_MAX_DEPTH + 1];
};

/*
 * Writes s as a quoted JSON string: escapes '"', '\\' and control
 * characters, passes valid UTF-8 through and replaces invalid bytes
 * with U+FFFD, so the output is always valid JSON.
 */
void pm_json_escape(FILE *f, const char *s);

void pm_json_init(struct pm_json *j, FILE *f);
/* key is NULL inside arrays and for the top-level value. */
void pm_json_obj_open(struct pm_json *j, const char *key);
void pm_json_obj_close(struct pm_json *j);
void pm_json_arr_open(struct pm_json *j, const char *key);
void pm_json_arr_close(struct pm_json *j);
void pm_json_str(struct pm_json *j, const char *key, const char *val);
void pm_json_u64(struct pm_json *j, const char *key, uint64_t val);
void pm_json_null(struct pm_json *j, const char *key);

/* ---- command output ------------------------------------------------ */

void pm_print_list(FILE *f, const struct pm_view *v, bool json);
void pm_print_stats(FILE *f, const struct pm_view *v, bool json);
/* "index NAME (id N, engine E) created in pmidxN" */
void pm_print_created_index(FILE *f, const struct pm_index *ix);
void pm_print_alloc_test(FILE *f, const struct pm_pool *p,
			 const struct pm_test_params *t, bool json);

#endif /* PMIDXCTL_PRINT_H */
