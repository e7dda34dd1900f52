// SPDX-License-Identifier: GPL-2.0
/*
 * pmidxctl: reply model, names, human-readable and JSON output.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "print.h"

/* ---- model --------------------------------------------------------- */

static void *grow(void *arr, size_t *n, size_t size)
{
	char *p = realloc(arr, (*n + 1) * size);

	if (!p)
		return NULL;
	memset(p + *n * size, 0, size);
	(*n)++;
	return p;
}

struct pm_pool *pm_view_add_pool(struct pm_view *v)
{
	struct pm_pool *p = grow(v->pools, &v->npools, sizeof(*p));

	if (!p)
		return NULL;
	v->pools = p;
	return &p[v->npools - 1];
}

struct pm_index *pm_view_add_index(struct pm_view *v)
{
	struct pm_index *ix = grow(v->indexes, &v->nindexes, sizeof(*ix));

	if (!ix)
		return NULL;
	v->indexes = ix;
	return &ix[v->nindexes - 1];
}

struct pm_index *pm_pool_add_index(struct pm_pool *p)
{
	struct pm_index *ix = grow(p->indexes, &p->nindexes, sizeof(*ix));

	if (!ix)
		return NULL;
	p->indexes = ix;
	return &ix[p->nindexes - 1];
}

int pm_stats_add(struct pm_stats *st, uint32_t type, uint64_t value)
{
	struct pm_stat *s = grow(st->v, &st->n, sizeof(*s));

	if (!s)
		return -1;
	st->v = s;
	s[st->n - 1].type = type;
	s[st->n - 1].value = value;
	return 0;
}

static struct pm_pool *find_pool(struct pm_view *v, uint32_t id)
{
	size_t i;

	for (i = 0; i < v->npools; i++)
		if (v->pools[i].id == id)
			return &v->pools[i];
	return NULL;
}

int pm_view_adopt_indexes(struct pm_view *v)
{
	size_t i, kept = 0;

	for (i = 0; i < v->nindexes; i++) {
		struct pm_pool *p = find_pool(v, v->indexes[i].pool_id);
		struct pm_index *dst;

		if (!p) {
			v->indexes[kept++] = v->indexes[i];
			continue;
		}
		dst = pm_pool_add_index(p);
		if (!dst) {
			memmove(&v->indexes[kept], &v->indexes[i],
				(v->nindexes - i) * sizeof(*dst));
			v->nindexes = kept + v->nindexes - i;
			return -1;
		}
		*dst = v->indexes[i];
	}
	v->nindexes = kept;
	return 0;
}

static void index_free(struct pm_index *ix)
{
	free(ix->name);
	free(ix->engine_name);
	free(ix->stats.v);
}

static void pool_free(struct pm_pool *p)
{
	size_t i;

	for (i = 0; i < p->nindexes; i++)
		index_free(&p->indexes[i]);
	free(p->indexes);
	free(p->name);
	free(p->dev);
	free(p->stats.v);
}

void pm_view_free(struct pm_view *v)
{
	size_t i;

	for (i = 0; i < v->npools; i++)
		pool_free(&v->pools[i]);
	for (i = 0; i < v->nindexes; i++)
		index_free(&v->indexes[i]);
	free(v->pools);
	free(v->indexes);
	memset(v, 0, sizeof(*v));
}

/* ---- names --------------------------------------------------------- */

static const char *const engine_names[__PMIDX_ENGINE_MAX] = {
	[PMIDX_ENGINE_CCL]	= "ccl",
	[PMIDX_ENGINE_UTREE]	= "utree",
	[PMIDX_ENGINE_B3]	= "b3",
	[PMIDX_ENGINE_LODGE]	= "lodge",
	[PMIDX_ENGINE_PFART]	= "pfart",
};

static const char *const test_mode_names[__PMIDX_ALLOC_TEST_MAX] = {
	[PMIDX_ALLOC_TEST_STORM]	= "storm",
	[PMIDX_ALLOC_TEST_LEAK]		= "leak",
};

static const char *const stat_names[__PMIDX_STAT_MAX] = {
	[PMIDX_STAT_ALLOC_USED_BYTES]	= "alloc_used_bytes",
	[PMIDX_STAT_ALLOC_OBJECTS]	= "alloc_objects",
	[PMIDX_STAT_ALLOC_FREE_CHUNKS]	= "alloc_free_chunks",
	[PMIDX_STAT_ALLOC_TOTAL_CHUNKS]	= "alloc_total_chunks",
	[PMIDX_STAT_CHUNK_SIZE]		= "chunk_size",
	[PMIDX_STAT_RECOVERY_NS]	= "recovery_ns",
	[PMIDX_STAT_RECOVERED_OBJECTS]	= "recovered_objects",
	[PMIDX_STAT_FLUSHES]		= "flushes",
	[PMIDX_STAT_FENCES]		= "fences",
	[PMIDX_STAT_PM_BYTES]		= "pm_bytes",
	[PMIDX_STAT_DRAM_BYTES]		= "dram_bytes",
	[PMIDX_STAT_OPS_GET]		= "ops_get",
	[PMIDX_STAT_OPS_PUT]		= "ops_put",
	[PMIDX_STAT_OPS_DEL]		= "ops_del",
	[PMIDX_STAT_OPS_SCAN]		= "ops_scan",
	[PMIDX_STAT_KEYS]		= "keys",
	[PMIDX_STAT_LOG_BYTES]		= "log_bytes",
	[PMIDX_STAT_GC_RUNS]		= "gc_runs",
	[PMIDX_STAT_BUFFER_HITS]	= "buffer_hits",
	[PMIDX_STAT_LEAF_FLUSHES]	= "leaf_flushes",
	[PMIDX_STAT_MEDIA_ERRORS]	= "media_errors",
};

static const char *const pool_flag_names[] = {
	"recovered",		/* PMIDX_POOL_F_RECOVERED */
	"eadr",			/* PMIDX_POOL_F_EADR */
};

_Static_assert(PMIDX_POOL_F_RECOVERED == 1 << 0, "pool_flag_names");
_Static_assert(PMIDX_POOL_F_EADR == 1 << 1, "pool_flag_names");

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

static int lookup(const char *const *names, size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (names[i] && !strcmp(names[i], name))
			return (int)i;
	return -1;
}

const char *pm_engine_name(uint32_t id)
{
	return id < ARRAY_SIZE(engine_names) ? engine_names[id] : NULL;
}

int pm_engine_lookup(const char *name)
{
	return lookup(engine_names, ARRAY_SIZE(engine_names), name);
}

const char *pm_test_mode_name(uint32_t mode)
{
	return mode < ARRAY_SIZE(test_mode_names) ? test_mode_names[mode] :
		NULL;
}

int pm_test_mode_lookup(const char *name)
{
	return lookup(test_mode_names, ARRAY_SIZE(test_mode_names), name);
}

const char *pm_stat_name(uint32_t type, char *buf, size_t len)
{
	if (type < ARRAY_SIZE(stat_names) && stat_names[type])
		return stat_names[type];
	snprintf(buf, len, "stat_%" PRIu32, type);
	return buf;
}

const char *pm_pool_name(const struct pm_pool *p, char *buf, size_t len)
{
	if (p->name)
		return p->name;
	snprintf(buf, len, "pmidx%" PRIu32, p->id);
	return buf;
}

static const char *flag_name(unsigned int bit, char *buf, size_t len)
{
	if (bit < ARRAY_SIZE(pool_flag_names))
		return pool_flag_names[bit];
	snprintf(buf, len, "flag_%u", bit);
	return buf;
}

static const char *index_engine(const struct pm_index *ix, char *buf,
				size_t len)
{
	const char *name = ix->engine_name;

	if (!name)
		name = pm_engine_name(ix->engine);
	if (name)
		return name;
	snprintf(buf, len, "engine_%" PRIu32, ix->engine);
	return buf;
}

void pm_uuid_str(const uint8_t u[16], char out[37])
{
	static const char hex[] = "0123456789abcdef";
	unsigned int i;
	char *o = out;

	for (i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			*o++ = '-';
		*o++ = hex[u[i] >> 4];
		*o++ = hex[u[i] & 15];
	}
	*o = '\0';
}

/* ---- JSON ---------------------------------------------------------- */

/* Length of the well-formed UTF-8 sequence at s (RFC 3629), 0 if none. */
static size_t utf8_len(const unsigned char *s)
{
	uint32_t cp;
	size_t n, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		n = 2;
		cp = s[0] & 0x1f;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		n = 3;
		cp = s[0] & 0x0f;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		n = 4;
		cp = s[0] & 0x07;
	} else {
		return 0;
	}
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)	/* also stops at the NUL */
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;		/* overlong, out of range, surrogate */
	return n;
}

static const char *json_short_escape(unsigned char c)
{
	switch (c) {
	case '"':
		return "\\\"";
	case '\\':
		return "\\\\";
	case '\b':
		return "\\b";
	case '\f':
		return "\\f";
	case '\n':
		return "\\n";
	case '\r':
		return "\\r";
	case '\t':
		return "\\t";
	}
	return NULL;
}

void pm_json_escape(FILE *f, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	const char *esc;
	size_t n;

	fputc('"', f);
	while (*s) {
		esc = json_short_escape(*s);
		n = utf8_len(s);
		if (esc)
			fputs(esc, f);
		else if (*s < 0x20 || *s == 0x7f)
			fprintf(f, "\\u%04x", *s);
		else if (n)
			fwrite(s, 1, n, f);
		else
			fputs("\\ufffd", f);	/* invalid UTF-8 byte */
		s += esc || !n ? 1 : n;
	}
	fputc('"', f);
}

void pm_json_init(struct pm_json *j, FILE *f)
{
	memset(j, 0, sizeof(*j));
	j->f = f;
	j->first[0] = true;
}

static void json_key(struct pm_json *j, const char *key)
{
	if (!j->first[j->depth])
		fputc(',', j->f);
	j->first[j->depth] = false;
	if (key) {
		pm_json_escape(j->f, key);
		fputc(':', j->f);
	}
}

static void json_open(struct pm_json *j, const char *key, char c)
{
	json_key(j, key);
	fputc(c, j->f);
	if (j->depth < PM_JSON_MAX_DEPTH)
		j->depth++;
	j->first[j->depth] = true;
}

static void json_close(struct pm_json *j, char c)
{
	fputc(c, j->f);
	if (j->depth)
		j->depth--;
	if (!j->depth)
		fputc('\n', j->f);	/* the document is complete */
}

void pm_json_obj_open(struct pm_json *j, const char *key)
{
	json_open(j, key, '{');
}

void pm_json_obj_close(struct pm_json *j)
{
	json_close(j, '}');
}

void pm_json_arr_open(struct pm_json *j, const char *key)
{
	json_open(j, key, '[');
}

void pm_json_arr_close(struct pm_json *j)
{
	json_close(j, ']');
}

void pm_json_str(struct pm_json *j, const char *key, const char *val)
{
	json_key(j, key);
	if (val)
		pm_json_escape(j->f, val);
	else
		fputs("null", j->f);
}

void pm_json_u64(struct pm_json *j, const char *key, uint64_t val)
{
	json_key(j, key);
	fprintf(j->f, "%" PRIu64, val);
}

void pm_json_null(struct pm_json *j, const char *key)
{
	json_key(j, key);
	fputs("null", j->f);
}

static void stats_json(struct pm_json *j, const struct pm_stats *st)
{
	char buf[32];
	size_t i;

	pm_json_obj_open(j, "stats");
	for (i = 0; i < st->n; i++)
		pm_json_u64(j, pm_stat_name(st->v[i].type, buf, sizeof(buf)),
			    st->v[i].value);
	pm_json_obj_close(j);
}

/* ---- list ---------------------------------------------------------- */

static void pool_json(struct pm_json *j, const struct pm_pool *p)
{
	char buf[48];
	unsigned int bit;

	pm_json_u64(j, "id", p->id);
	pm_json_str(j, "name", pm_pool_name(p, buf, sizeof(buf)));
	pm_json_str(j, "device", p->dev);
	if (p->has_uuid) {
		pm_uuid_str(p->uuid, buf);
		pm_json_str(j, "uuid", buf);
	} else {
		pm_json_null(j, "uuid");
	}
	if (p->has_size)
		pm_json_u64(j, "size", p->size);
	else
		pm_json_null(j, "size");
	pm_json_arr_open(j, "flags");
	for (bit = 0; bit < 32; bit++)
		if (p->flags & (1U << bit))
			pm_json_str(j, NULL, flag_name(bit, buf, sizeof(buf)));
	pm_json_arr_close(j);
}

static void list_json(FILE *f, const struct pm_view *v)
{
	struct pm_json j;
	char buf[32];
	size_t i, k;

	pm_json_init(&j, f);
	pm_json_obj_open(&j, NULL);
	pm_json_arr_open(&j, "pools");
	for (i = 0; i < v->npools; i++) {
		const struct pm_pool *p = &v->pools[i];

		pm_json_obj_open(&j, NULL);
		pool_json(&j, p);
		pm_json_arr_open(&j, "indexes");
		for (k = 0; k < p->nindexes; k++) {
			const struct pm_index *ix = &p->indexes[k];

			pm_json_obj_open(&j, NULL);
			pm_json_u64(&j, "id", ix->id);
			pm_json_str(&j, "name", ix->name);
			pm_json_str(&j, "engine",
				    index_engine(ix, buf, sizeof(buf)));
			pm_json_obj_close(&j);
		}
		pm_json_arr_close(&j);
		pm_json_obj_close(&j);
	}
	pm_json_arr_close(&j);
	pm_json_obj_close(&j);
}

static void flags_human(FILE *f, uint32_t flags)
{
	const char *sep = "";
	unsigned int bit;
	char buf[16];

	if (!flags) {
		fputs("-", f);
		return;
	}
	for (bit = 0; bit < 32; bit++) {
		if (flags & (1U << bit)) {
			fprintf(f, "%s%s", sep, flag_name(bit, buf, sizeof(buf)));
			sep = ",";
		}
	}
}

static size_t max_sz(size_t a, size_t b)
{
	return a > b ? a : b;
}

static void indexes_human(FILE *f, const struct pm_pool *p)
{
	size_t k, w = strlen("INDEX");
	char buf[32];

	if (!p->nindexes) {
		fprintf(f, "    (no indexes)\n");
		return;
	}
	for (k = 0; k < p->nindexes; k++)
		w = max_sz(w, strlen(p->indexes[k].name));
	fprintf(f, "    %4s  %-*s  %s\n", "ID", (int)w, "INDEX", "ENGINE");
	for (k = 0; k < p->nindexes; k++) {
		const struct pm_index *ix = &p->indexes[k];

		fprintf(f, "    %4" PRIu32 "  %-*s  %s\n", ix->id, (int)w,
			ix->name, index_engine(ix, buf, sizeof(buf)));
	}
}

static void pool_row(FILE *f, const struct pm_pool *p, int wname, int wdev)
{
	char name[32], size[24], uuid[37];

	if (p->has_size)
		snprintf(size, sizeof(size), "%" PRIu64, p->size >> 20);
	else
		snprintf(size, sizeof(size), "-");
	if (p->has_uuid)
		pm_uuid_str(p->uuid, uuid);
	else
		snprintf(uuid, sizeof(uuid), "-");
	fprintf(f, "%-*s  %-*s  %9s  %-36s  ", wname,
		pm_pool_name(p, name, sizeof(name)), wdev,
		p->dev ? p->dev : "-", size, uuid);
	flags_human(f, p->flags);
	fputc('\n', f);
}

static void list_human(FILE *f, const struct pm_view *v)
{
	size_t i, wname = strlen("POOL"), wdev = strlen("DEVICE");
	char buf[32];

	if (!v->npools) {
		fprintf(f, "no pools attached\n");
		return;
	}
	for (i = 0; i < v->npools; i++) {
		const struct pm_pool *p = &v->pools[i];

		wname = max_sz(wname, strlen(pm_pool_name(p, buf, sizeof(buf))));
		wdev = max_sz(wdev, p->dev ? strlen(p->dev) : 1);
	}
	fprintf(f, "%-*s  %-*s  %9s  %-36s  %s\n", (int)wname, "POOL",
		(int)wdev, "DEVICE", "SIZE(MiB)", "UUID", "FLAGS");
	for (i = 0; i < v->npools; i++) {
		pool_row(f, &v->pools[i], (int)wname, (int)wdev);
		indexes_human(f, &v->pools[i]);
	}
}

void pm_print_list(FILE *f, const struct pm_view *v, bool json)
{
	if (json)
		list_json(f, v);
	else
		list_human(f, v);
}

/* ---- stats --------------------------------------------------------- */

static void stats_human(FILE *f, const struct pm_stats *st)
{
	char buf[32];
	size_t i, w = 0;

	if (!st->n) {
		fprintf(f, "  (no statistics)\n");
		return;
	}
	for (i = 0; i < st->n; i++)
		w = max_sz(w, strlen(pm_stat_name(st->v[i].type, buf,
						   sizeof(buf))));
	for (i = 0; i < st->n; i++)
		fprintf(f, "  %-*s  %" PRIu64 "\n", (int)w,
			pm_stat_name(st->v[i].type, buf, sizeof(buf)),
			st->v[i].value);
}

static void index_stats_human(FILE *f, const struct pm_index *ix)
{
	char buf[32];

	fprintf(f, "index %s (pool pmidx%" PRIu32 ", id %" PRIu32
		", engine %s)\n", ix->name, ix->pool_id, ix->id,
		index_engine(ix, buf, sizeof(buf)));
	stats_human(f, &ix->stats);
}

static bool pool_listed(const struct pm_view *v, uint32_t id)
{
	size_t i;

	for (i = 0; i < v->npools; i++)
		if (v->pools[i].id == id)
			return true;
	return false;
}

/* Each pool followed by its indexes, then indexes of unlisted pools. */
static void stats_all_human(FILE *f, const struct pm_view *v)
{
	const char *sep = "";
	char buf[32];
	size_t i, k;

	if (!v->npools && !v->nindexes) {
		fprintf(f, "no pools attached\n");
		return;
	}
	for (i = 0; i < v->npools; i++) {
		const struct pm_pool *p = &v->pools[i];

		fprintf(f, "%spool %s\n", sep, pm_pool_name(p, buf, sizeof(buf)));
		stats_human(f, &p->stats);
		sep = "\n";
		for (k = 0; k < v->nindexes; k++) {
			if (v->indexes[k].pool_id != p->id)
				continue;
			fputs(sep, f);
			index_stats_human(f, &v->indexes[k]);
		}
	}
	for (k = 0; k < v->nindexes; k++) {
		if (pool_listed(v, v->indexes[k].pool_id))
			continue;
		fputs(sep, f);
		index_stats_human(f, &v->indexes[k]);
		sep = "\n";
	}
}

static void stats_all_json(FILE *f, const struct pm_view *v)
{
	struct pm_json j;
	char buf[32];
	size_t i;

	pm_json_init(&j, f);
	pm_json_obj_open(&j, NULL);
	pm_json_arr_open(&j, "pools");
	for (i = 0; i < v->npools; i++) {
		const struct pm_pool *p = &v->pools[i];

		pm_json_obj_open(&j, NULL);
		pm_json_u64(&j, "id", p->id);
		pm_json_str(&j, "name", pm_pool_name(p, buf, sizeof(buf)));
		stats_json(&j, &p->stats);
		pm_json_obj_close(&j);
	}
	pm_json_arr_close(&j);
	pm_json_arr_open(&j, "indexes");
	for (i = 0; i < v->nindexes; i++) {
		const struct pm_index *ix = &v->indexes[i];

		pm_json_obj_open(&j, NULL);
		pm_json_u64(&j, "pool", ix->pool_id);
		pm_json_u64(&j, "id", ix->id);
		pm_json_str(&j, "name", ix->name);
		pm_json_str(&j, "engine", index_engine(ix, buf, sizeof(buf)));
		stats_json(&j, &ix->stats);
		pm_json_obj_close(&j);
	}
	pm_json_arr_close(&j);
	pm_json_obj_close(&j);
}

void pm_print_stats(FILE *f, const struct pm_view *v, bool json)
{
	if (json)
		stats_all_json(f, v);
	else
		stats_all_human(f, v);
}

/* ---- create-index ------------------------------------------------ */

void pm_print_created_index(FILE *f, const struct pm_index *ix)
{
	char buf[32];

	fprintf(f, "index %s (id %" PRIu32 ", engine %s) created in pmidx%"
		PRIu32 "\n", ix->name, ix->id,
		index_engine(ix, buf, sizeof(buf)), ix->pool_id);
}

/* ---- alloc-test ---------------------------------------------------- */

void pm_print_alloc_test(FILE *f, const struct pm_pool *p,
			 const struct pm_test_params *t, bool json)
{
	const char *mode = pm_test_mode_name(t->mode);
	struct pm_json j;
	char buf[32];

	if (!mode)
		mode = "unknown";
	if (!json) {
		fprintf(f, "alloc-test %s on %s: %" PRIu32 " threads x %"
			PRIu32 " ops, size ", mode,
			pm_pool_name(p, buf, sizeof(buf)), t->threads, t->ops);
		if (t->size)
			fprintf(f, "%" PRIu32 " bytes", t->size);
		else
			fputs("random", f);
		fprintf(f, ", seed %" PRIu64 "\n", t->seed);
		stats_human(f, &p->stats);
		return;
	}
	pm_json_init(&j, f);
	pm_json_obj_open(&j, NULL);
	pm_json_obj_open(&j, "pool");
	pm_json_u64(&j, "id", p->id);
	pm_json_str(&j, "name", pm_pool_name(p, buf, sizeof(buf)));
	stats_json(&j, &p->stats);
	pm_json_obj_close(&j);
	pm_json_obj_open(&j, "test");
	pm_json_str(&j, "mode", mode);
	pm_json_u64(&j, "threads", t->threads);
	pm_json_u64(&j, "ops", t->ops);
	pm_json_u64(&j, "size", t->size);
	pm_json_u64(&j, "seed", t->seed);
	pm_json_obj_close(&j);
	pm_json_obj_close(&j);
}
