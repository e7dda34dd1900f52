// SPDX-License-Identifier: GPL-2.0
/*
 * One phase: its threads, the live progress line, the result.
 *
 * The progress line goes to stderr when it is a terminal: operations
 * done out of the phase's total and the rate over the last interval,
 * redrawn in place every 200 ms and erased at the end.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

#define PROGRESS_NS	200000000ULL

uint64_t bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void *thread_main(void *arg)
{
	struct bench_thread *t = arg;

	t->start_ns = bench_now_ns();
	t->run->ops->thread(t);
	t->end_ns = bench_now_ns();
	return NULL;
}

/* From the first thread's start to the last one's end. */
static uint64_t phase_ns(const struct bench_thread *th, unsigned int n)
{
	uint64_t start = UINT64_MAX, end = 0;
	unsigned int i;

	for (i = 0; i < n; i++) {
		if (th[i].start_ns < start)
			start = th[i].start_ns;
		if (th[i].end_ns > end)
			end = th[i].end_ns;
	}
	return end > start ? end - start : 0;
}

static uint64_t done_ops(struct bench_thread *th, unsigned int n)
{
	uint64_t sum = 0;
	unsigned int i;

	for (i = 0; i < n; i++)
		sum += atomic_load_explicit(&th[i].done, memory_order_relaxed);
	return sum;
}

/* Wait for the threads, redrawing the progress line while they run. */
static void watch(struct bench_thread *th, unsigned int n, uint64_t total,
		  const char *phase, _Atomic unsigned int *running)
{
	/* PMIDX_BENCH_PROGRESS=1: draw it anyway (a VM console relays it) */
	bool tty = isatty(STDERR_FILENO) || getenv("PMIDX_BENCH_PROGRESS");
	uint64_t last = 0, last_ns = bench_now_ns(), now, d;
	struct timespec nap = { 0, 20000000 };

	while (atomic_load(running)) {
		nanosleep(&nap, NULL);
		now = bench_now_ns();
		if (!tty || now - last_ns < PROGRESS_NS)
			continue;
		d = done_ops(th, n);
		fprintf(stderr, "\r\033[K  %s: %" PRIu64 "/%" PRIu64 " ops  %.0f ops/s",
			phase, d, total, (d - last) * 1e9 / (now - last_ns));
		last = d;
		last_ns = now;
	}
	if (tty)
		fprintf(stderr, "\r\033[K");
}

/* Set up and start @n threads; *@started := how many run. */
static int start_threads(struct bench_run *run, struct bench_thread *th,
			 pthread_t *tid, unsigned int n, uint64_t ops,
			 unsigned int *started)
{
	unsigned int i;
	int ret;

	*started = 0;
	for (i = 0; i < n; i++) {
		th[i].run = run;
		th[i].t = i;
		wl_gen_init(&th[i].gen, run->cfg, &run->proto, run->wl, i, n,
			    ops, &run->next_insert);
		th[i].ops = th[i].gen.count;
		th[i].hist = calloc(1, sizeof(*th[i].hist));
		if (!th[i].hist)
			return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		ret = pthread_create(&tid[i], NULL, thread_main, &th[i]);
		if (ret)
			return -ret;
		*started = i + 1;
	}
	return 0;
}

static void fill_result(struct bench_run *run, struct bench_thread *th,
			unsigned int n, struct bench_result *res)
{
	uint64_t ns = phase_ns(th, n);
	struct hist all = { 0 };
	uint64_t kernel_ns = 0;
	unsigned int i;

	memset(res, 0, sizeof(*res));
	res->phase = wl_name(run->wl);
	for (i = 0; i < n; i++) {
		hist_merge(&all, th[i].hist);
		res->errors += th[i].errors;
		kernel_ns += th[i].kernel_ns;
	}
	res->ops = done_ops(th, n);
	res->secs = ns / 1e9;
	res->ops_per_s = res->secs > 0 ? res->ops / res->secs : 0;
	res->has_pct = run->ops->has_pct;
	if (res->has_pct) {
		res->mean_ns = all.n ? (double)all.sum / all.n : 0;
		res->p50 = hist_quantile(&all, 0.50);
		res->p99 = hist_quantile(&all, 0.99);
		res->p999 = hist_quantile(&all, 0.999);
		res->max = all.max;
	} else {
		res->mean_ns = res->ops ? (double)kernel_ns / res->ops : 0;
	}
}

/* The first thread error, reported; 0 if none failed. */
static int thread_errors(struct bench_thread *th, unsigned int n)
{
	unsigned int i;
	int err;

	for (i = 0; i < n; i++) {
		err = th[i].err;
		if (err) {
			/* lmdb: why holds LMDB's message, err its errno */
			fprintf(stderr, "pmidx-bench: thread %u: %s%s%s\n", i,
				th[i].why, th[i].why[0] ? ": " : "",
				th[i].run->cfg->path == PATH_LMDB ? strerror(-err) :
								    pmidx_strerror(err));
			return err;
		}
	}
	return 0;
}

/* Joins the threads as they end; the last one stops the watcher. */
struct joiner {
	pthread_t		*tid;
	unsigned int		n;
	_Atomic unsigned int	*running;
};

static void *join_all(void *arg)
{
	struct joiner *j = arg;
	unsigned int i;

	for (i = 0; i < j->n; i++)
		pthread_join(j->tid[i], NULL);
	atomic_store(j->running, 0);
	return NULL;
}

int bench_phase(struct bench_run *run, enum bench_wl wl,
		struct bench_result *res)
{
	unsigned int i, n = run->cfg->threads;
	uint64_t ops = wl_phase_ops(run->cfg, wl);
	_Atomic unsigned int running = 1;
	struct joiner j = { .n = n, .running = &running };
	struct bench_thread *th;
	pthread_t *tid, jt;
	int ret;

	run->wl = wl;
	th = calloc(n, sizeof(*th));
	tid = calloc(n, sizeof(*tid));
	j.tid = tid;
	ret = th && tid ? 0 : -ENOMEM;
	if (!ret)
		ret = start_threads(run, th, tid, n, ops, &j.n);
	if (!ret)
		ret = -pthread_create(&jt, NULL, join_all, &j);
	if (!ret) {
		watch(th, n, ops, wl_name(wl), &running);
		pthread_join(jt, NULL);
		fill_result(run, th, n, res);
		ret = thread_errors(th, n);
	} else {
		join_all(&j);
		fprintf(stderr, "pmidx-bench: cannot start threads: %s\n",
			pmidx_strerror(ret));
	}
	for (i = 0; th && i < n; i++)
		free(th[i].hist);
	free(th);
	free(tid);
	return ret;
}
