// SPDX-License-Identifier: GPL-2.0
/*
 * Latency histograms, the final table and the JSON report.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"

#define HIST_SUB	(1U << HIST_SUB_BITS)

static unsigned int hist_index(uint64_t v)
{
	unsigned int shift;

	if (v < HIST_SUB)
		return v;
	shift = 63 - __builtin_clzll(v) - HIST_SUB_BITS;
	return ((shift + 1) << HIST_SUB_BITS) + ((v >> shift) & (HIST_SUB - 1));
}

/* The largest value that falls into bucket @i. */
static uint64_t hist_upper(unsigned int i)
{
	unsigned int shift;

	if (i < HIST_SUB)
		return i;
	shift = (i >> HIST_SUB_BITS) - 1;
	return (((uint64_t)HIST_SUB + (i & (HIST_SUB - 1))) << shift) +
	       ((1ULL << shift) - 1);
}

void hist_add_n(struct hist *h, uint64_t ns, uint64_t n)
{
	h->count[hist_index(ns)] += n;
	h->n += n;
	h->sum += ns * n;
	if (ns > h->max)
		h->max = ns;
}

void hist_add(struct hist *h, uint64_t ns)
{
	hist_add_n(h, ns, 1);
}

void hist_merge(struct hist *dst, const struct hist *src)
{
	unsigned int i;

	for (i = 0; i < HIST_BUCKETS; i++)
		dst->count[i] += src->count[i];
	dst->n += src->n;
	dst->sum += src->sum;
	if (src->max > dst->max)
		dst->max = src->max;
}

uint64_t hist_quantile(const struct hist *h, double q)
{
	uint64_t rank, seen = 0;
	unsigned int i;

	if (!h->n)
		return 0;
	rank = (uint64_t)(q * (h->n - 1)) + 1;
	for (i = 0; i < HIST_BUCKETS; i++) {
		seen += h->count[i];
		if (seen >= rank)
			break;
	}
	return i < HIST_BUCKETS && hist_upper(i) < h->max ? hist_upper(i) :
							    h->max;
}

/* ---- the table ----------------------------------------------------------- */

const char *bench_path_name(enum bench_path p)
{
	static const char *const names[] = {
		[PATH_IOCTL] = "ioctl", [PATH_URING] = "uring",
		[PATH_INPROC] = "inproc", [PATH_KERNEL] = "kernel",
		[PATH_LMDB] = "lmdb", [PATH_KAPI] = "kapi",
	};

	return names[p];
}

/* What to call a configuration in the table. */
static void cfg_label(const struct bench_cfg *c, char *buf, size_t len)
{
	if (c->label[0]) {
		snprintf(buf, len, "%s", c->label);
		return;
	}
	snprintf(buf, len, "%s", bench_path_name(c->path));
	if (c->path == PATH_URING)
		snprintf(buf + strlen(buf), len - strlen(buf), " qd=%u batch=%u%s",
			 c->qd, c->batch, c->sqpoll ? " sqpoll" : "");
	else if (c->batch > 1)
		snprintf(buf + strlen(buf), len - strlen(buf), " batch=%u",
			 c->batch);
	else if (c->sample > 1)
		snprintf(buf + strlen(buf), len - strlen(buf), " sample=%u",
			 c->sample);
}

/* The same phase in the first configuration, for ratios. */
static const struct bench_result *baseline(const struct bench_report *r,
					   const char *phase)
{
	unsigned int i;

	for (i = 0; i < r[0].nres; i++)
		if (!strcmp(r[0].res[i].phase, phase))
			return &r[0].res[i];
	return NULL;
}

static double ratio_of(const struct bench_report *r, unsigned int n,
		       const struct bench_result *res)
{
	const struct bench_result *base = n > 1 ? baseline(r, res->phase) : NULL;

	return base && base->ops_per_s > 0 ? res->ops_per_s / base->ops_per_s : 0;
}

static void print_us(uint64_t ns, bool known)
{
	if (known)
		printf(" %9.2f", ns / 1e3);
	else
		printf(" %9s", "-");
}

static void print_row(int w, const char *label, const struct bench_result *res,
		      double ratio, bool compare)
{
	printf("%-*s %-7s %10" PRIu64 " %8.3f %12.0f", w, label, res->phase,
	       res->ops, res->secs, res->ops_per_s);
	if (compare) {
		if (ratio > 0)
			printf(" %6.2fx", ratio);
		else
			printf(" %7s", "-");
	}
	printf(" %9.2f", res->mean_ns / 1e3);
	print_us(res->p50, res->has_pct);
	print_us(res->p99, res->has_pct);
	print_us(res->p999, res->has_pct);
	print_us(res->max, res->has_pct);
	printf(" %7" PRIu64 "\n", res->errors);
}

/* Width of the config column: the longest label. */
static int label_width(const struct bench_report *r, unsigned int n)
{
	char label[160];
	unsigned int i;
	int w = 8;

	for (i = 0; i < n; i++) {
		cfg_label(&r[i].cfg, label, sizeof(label));
		if ((int)strlen(label) > w)
			w = strlen(label);
	}
	return w;
}

/* persistent ops/s over the volatile twin's, same phase; 0 if unknown */
static double volatile_ratio(const struct bench_report *r, unsigned int i)
{
	if (i >= r->nvres || r->vres[i].ops_per_s <= 0)
		return 0;
	return r->res[i].ops_per_s / r->vres[i].ops_per_s;
}

/* inproc: pmem counters per op, and the volatile twin's ratios */
static void print_pm(int w, const struct bench_report *r)
{
	unsigned int i;
	bool any = false;

	for (i = 0; i < r->nres; i++)
		any |= r->res[i].has_pm;
	if (any) {
		printf("%-*s pmem %s, per op:", w, "", r->pmem_hw ? r->pmem_hw : "?");
		for (i = 0; i < r->nres; i++)
			if (r->res[i].has_pm)
				printf("%s %s %.3f clwb %.3f sfence", i ? " |" : "",
				       r->res[i].phase, r->res[i].flushes_per_op,
				       r->res[i].fences_per_op);
		printf("\n");
	}
	if (!r->nvres)
		return;
	printf("%-*s persistent/volatile ops/s:", w, "");
	for (i = 0; i < r->nres; i++) {
		if (volatile_ratio(r, i) > 0)
			printf("%s %s %.3f (%.0f)", i ? " |" : "", r->res[i].phase,
			       volatile_ratio(r, i), r->vres[i].ops_per_s);
		else
			printf("%s %s -", i ? " |" : "", r->res[i].phase);
	}
	printf("\n");
}

void bench_print_table(const struct bench_report *r, unsigned int n)
{
	const struct bench_cfg *c = &r[0].cfg;
	bool compare = n > 1, kernel = false, lmdb = false;
	int w = label_width(r, n);
	char label[160];
	unsigned int i, j;

	printf("pmidx-bench: engine %s, %u thread(s), %" PRIu64 " keys, %u-byte keys, "
	       "%u-byte values, %s", c->engine, c->threads, c->keys, c->key_size,
	       c->value_size, dist_name(c->dist));
	if (c->dist == DIST_ZIPF)
		printf(" theta %.2f", c->theta);
	printf("\n%-*s %-7s %10s %8s %12s%s %9s %9s %9s %9s %9s %7s\n", w, "config",
	       "phase", "ops", "secs", "ops/s", compare ? "   ratio" : "",
	       "mean us", "p50 us", "p99 us", "p99.9 us", "max us", "errors");
	for (i = 0; i < n; i++) {
		cfg_label(&r[i].cfg, label, sizeof(label));
		kernel |= r[i].cfg.path == PATH_KERNEL;
		lmdb |= r[i].cfg.path == PATH_LMDB;
		for (j = 0; j < r[i].nres; j++)
			print_row(w, label, &r[i].res[j],
				  ratio_of(r, n, &r[i].res[j]), compare);
		print_pm(w, &r[i]);
		if (PATH_ON_FILE(r[i].cfg.path) && r[i].restart_ms >= 0)
			printf("%-*s restart after clean close %.1f ms, recovery of a crash image %.1f ms\n",
			       w, "", r[i].restart_ms, r[i].recovery_ms);
	}
	if (compare)
		printf("ratio: ops/s against the first configuration's same phase\n");
	for (i = 0; i < n; i++)
		if (r[i].nvres) {
			printf("persistent/volatile: ops/s over the same run's with the pmem backend volatile "
			       "(no write-back, no fence; its ops/s in parentheses)\n");
			break;
		}
	if (kernel)
		printf("kernel: ops run by the in-kernel API (sample client), sequential keys; "
		       "latency is the mean in-kernel time per op, no percentiles\n");
	if (lmdb)
		printf("lmdb: LMDB (MDB_WRITEMAP, synced at commit), one transaction per batch of ops; "
		       "its ops share its latency\n");
	for (i = 0; i < n; i++)
		if (r[i].cfg.path == PATH_URING) {
			printf("uring: latency is queue-to-completion per op; a BATCH's ops share its latency\n");
			break;
		}
}

/* ---- JSON ------------------------------------------------------------------ */

static void json_result(FILE *f, const struct bench_result *res, double ratio,
			double vratio)
{
	fprintf(f, "{\"workload\":\"%s\",\"ops\":%" PRIu64 ",\"errors\":%" PRIu64
		",\"secs\":%.6f,\"ops_per_s\":%.1f,\"mops\":%.6f,\"mean_ns\":%.1f",
		res->phase, res->ops, res->errors, res->secs, res->ops_per_s,
		res->ops_per_s / 1e6, res->mean_ns);
	if (res->has_pct)
		fprintf(f, ",\"p50_ns\":%" PRIu64 ",\"p99_ns\":%" PRIu64
			",\"p999_ns\":%" PRIu64 ",\"max_ns\":%" PRIu64,
			res->p50, res->p99, res->p999, res->max);
	if (ratio > 0)
		fprintf(f, ",\"ratio\":%.4f", ratio);
	if (res->has_pm)
		fprintf(f, ",\"flushes_per_op\":%.4f,\"fences_per_op\":%.4f",
			res->flushes_per_op, res->fences_per_op);
	if (vratio > 0)
		fprintf(f, ",\"volatile_ratio\":%.4f", vratio);
	fputc('}', f);
}

static void json_run(FILE *f, const struct bench_report *all, unsigned int n,
		     const struct bench_report *r)
{
	const struct bench_cfg *c = &r->cfg;
	char label[160];
	unsigned int i;

	cfg_label(c, label, sizeof(label));
	fprintf(f, "{\"label\":\"%s\",\"path\":\"%s\",\"target\":\"%s\","
		"\"engine\":\"%s\",\"workload\":\"%s\",\"dist\":\"%s\","
		"\"theta\":%.3f,\"threads\":%u,\"qd\":%u,\"batch\":%u,\"sqpoll\":%s,"
		"\"sample\":%u,"
		"\"keys\":%" PRIu64 ",\"key_size\":%u,\"value_size\":%u,"
		"\"restart_ms\":%.3f,\"recovery_ms\":%.3f,",
		label, bench_path_name(c->path), c->target, c->engine,
		wl_name(c->wl), dist_name(c->dist),
		c->dist == DIST_ZIPF ? c->theta : 0, c->threads, c->qd,
		c->batch, c->sqpoll ? "true" : "false", c->sample, c->keys,
		c->key_size, c->value_size, r->restart_ms, r->recovery_ms);
	if (r->pmem_hw)
		fprintf(f, "\"pmem_hw\":\"%s\",\"prefault\":%s,", r->pmem_hw,
			c->prefault ? "true" : "false");
	fprintf(f, "\"results\":[");
	for (i = 0; i < r->nres; i++) {
		if (i)
			fputc(',', f);
		json_result(f, &r->res[i], ratio_of(all, n, &r->res[i]),
			    volatile_ratio(r, i));
	}
	fputc(']', f);
	if (r->nvres) {
		fprintf(f, ",\"volatile_results\":[");
		for (i = 0; i < r->nvres; i++) {
			if (i)
				fputc(',', f);
			json_result(f, &r->vres[i], 0, 0);
		}
		fputc(']', f);
	}
	fputc('}', f);
}

int bench_write_json(const char *file, const struct bench_report *r,
		     unsigned int n, bool compare)
{
	FILE *f = fopen(file, "w");
	unsigned int i;

	if (!f)
		return -errno;
	if (compare)
		fprintf(f, "{\"runs\":[");
	for (i = 0; i < n; i++) {
		if (i)
			fputc(',', f);
		json_run(f, r, n, &r[i]);
	}
	fprintf(f, compare ? "]}\n" : "\n");
	return fclose(f) ? -errno : 0;
}
