// SPDX-License-Identifier: GPL-2.0
/*
 * Userspace shim: workqueues that run each queued item on a thread of its
 * own (see <linux/workqueue.h>): an idle pooled worker when there is one,
 * else a new one, which joins the pool when its item is done (up to
 * POOL_IDLE_MAX idle workers; thread creation dominated the crash
 * simulator's attaches). A record per started item outlives the item, so
 * flushing never dereferences a work_struct that its function freed.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include <linux/types.h>
#include <linux/bug.h>
#include <linux/list.h>
#include <linux/slab.h>
#include <linux/workqueue.h>
#include <shim/shim.h>

struct workqueue_struct {
	char			name[32];
};

struct work_run {
	struct list_head	node;		/* in runs, protected by wq_lock */
	struct workqueue_struct	*wq;
	struct work_struct	*work;		/* identity only, never dereferenced after start */
	work_func_t		func;
	void			*ctx;		/* shim_thread_ctx() of the queuer */
	bool			done;		/* the function returned */
};

/* A pooled thread: runs one item at a time, then waits for the next. */
struct worker {
	struct list_head	node;		/* in idle, protected by wq_lock */
	pthread_cond_t		cond;
	struct work_run		*run;		/* handed over under wq_lock */
};

#define POOL_IDLE_MAX	64

static pthread_mutex_t wq_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wq_cond = PTHREAD_COND_INITIALIZER;	/* a run is done */
static LIST_HEAD(runs);
static LIST_HEAD(idle);
static unsigned int nidle;
static unsigned long threads_started;

static struct workqueue_struct wq_system = { "events" };
static struct workqueue_struct wq_unbound = { "events_unbound" };
static struct workqueue_struct wq_long = { "events_long" };
static struct workqueue_struct wq_highpri = { "events_highpri" };

struct workqueue_struct *system_wq = &wq_system;
struct workqueue_struct *system_unbound_wq = &wq_unbound;
struct workqueue_struct *system_long_wq = &wq_long;
struct workqueue_struct *system_highpri_wq = &wq_highpri;

static __thread void *thread_ctx;

void *shim_thread_ctx(void)
{
	return thread_ctx;
}

void shim_set_thread_ctx(void *ctx)
{
	thread_ctx = ctx;
}

static void *work_thread(void *arg)
{
	struct worker *w = arg;
	struct work_run *run;

	pthread_mutex_lock(&wq_lock);
	for (;;) {
		while (!(run = w->run))
			pthread_cond_wait(&w->cond, &wq_lock);
		w->run = NULL;
		pthread_mutex_unlock(&wq_lock);

		thread_ctx = run->ctx;
		__atomic_store_n(&run->work->pending, 0, __ATOMIC_RELEASE);
		shim_run_begin();	/* shim_freeze() */
		run->func(run->work);
		shim_run_end();
		thread_ctx = NULL;
		/* an idle worker holds no CPU: new threads spread as before */
		shim_cpu_unbind();

		pthread_mutex_lock(&wq_lock);
		run->done = true;
		pthread_cond_broadcast(&wq_cond);
		if (nidle >= POOL_IDLE_MAX)
			break;
		list_add(&w->node, &idle);
		nidle++;
	}
	pthread_mutex_unlock(&wq_lock);
	pthread_cond_destroy(&w->cond);
	free(w);
	return NULL;
}

/* Hand @run to a worker; wq_lock held. Return: false when none can run it. */
static bool start_run(struct work_run *run)
{
	struct worker *w;
	pthread_t t;

	if (nidle) {
		w = list_first_entry(&idle, struct worker, node);
		list_del(&w->node);
		nidle--;
		w->run = run;
		pthread_cond_signal(&w->cond);
		return true;
	}
	w = calloc(1, sizeof(*w));
	BUG_ON(!w);
	pthread_cond_init(&w->cond, NULL);
	w->run = run;
	if (pthread_create(&t, NULL, work_thread, w)) {
		pthread_cond_destroy(&w->cond);
		free(w);
		return false;
	}
	pthread_detach(t);
	threads_started++;
	return true;
}

bool queue_work(struct workqueue_struct *wq, struct work_struct *work)
{
	struct work_run *run;
	int expected = 0;

	if (!__atomic_compare_exchange_n(&work->pending, &expected, 1, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return false;
	/* Bookkeeping the kernel keeps inside the work item: never fails. */
	run = calloc(1, sizeof(*run));
	BUG_ON(!run);
	run->wq = wq;
	run->work = work;
	run->func = work->func;
	run->ctx = thread_ctx;
	pthread_mutex_lock(&wq_lock);
	if (!start_run(run)) {
		pthread_mutex_unlock(&wq_lock);
		free(run);
		/* No thread to be had: run it here, still "asynchronously done". */
		__atomic_store_n(&work->pending, 0, __ATOMIC_RELEASE);
		work->func(work);
		return true;
	}
	list_add_tail(&run->node, &runs);
	pthread_mutex_unlock(&wq_lock);
	return true;
}

static bool run_matches(struct work_run *run, struct workqueue_struct *wq,
			struct work_struct *work)
{
	return (!wq || run->wq == wq) && (!work || run->work == work);
}

/* Wait for every run on @wq (any queue if NULL) of @work (any if NULL). */
static bool join_runs(struct workqueue_struct *wq, struct work_struct *work)
{
	struct work_run *run, *tmp;
	bool joined = false, busy, k = shim_sleep_begin();

	pthread_mutex_lock(&wq_lock);
	for (;;) {
		busy = false;
		list_for_each_entry_safe(run, tmp, &runs, node) {
			if (!run_matches(run, wq, work))
				continue;
			if (!run->done) {
				busy = true;
				continue;
			}
			list_del(&run->node);
			free(run);
			joined = true;
		}
		if (!busy)
			break;
		pthread_cond_wait(&wq_cond, &wq_lock);
	}
	pthread_mutex_unlock(&wq_lock);
	shim_sleep_end(k);
	return joined;
}

bool flush_work(struct work_struct *work)
{
	might_sleep();
	return join_runs(NULL, work);
}

bool cancel_work_sync(struct work_struct *work)
{
	/* Started threads cannot be cancelled: wait for them instead. */
	return flush_work(work);
}

void flush_workqueue(struct workqueue_struct *wq)
{
	might_sleep();
	join_runs(wq, NULL);
}

struct workqueue_struct *alloc_workqueue(const char *fmt, unsigned int flags,
					 int max_active, ...)
{
	struct workqueue_struct *wq = kzalloc(sizeof(*wq), GFP_KERNEL);
	va_list ap;

	if (!wq)
		return NULL;
	va_start(ap, max_active);
	vsnprintf(wq->name, sizeof(wq->name), fmt, ap);
	va_end(ap);
	return wq;
}

void destroy_workqueue(struct workqueue_struct *wq)
{
	flush_workqueue(wq);
	kfree(wq);
}

void shim_workqueue_drain(void)
{
	join_runs(NULL, NULL);
}

unsigned long shim_work_threads(void)
{
	unsigned long n;

	pthread_mutex_lock(&wq_lock);
	n = threads_started;
	pthread_mutex_unlock(&wq_lock);
	return n;
}

static void __attribute__((destructor)) shim_workqueue_exit(void)
{
	shim_workqueue_drain();
}
