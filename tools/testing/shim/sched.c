// SPDX-License-Identifier: GPL-2.0
/*
 * Userspace shim: tasks, kthreads, wait queues, sleeping. See
 * <linux/kthread.h> and <linux/wait.h>.
 *
 * Lock order: a task's lock and a wait queue's lock are never nested.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <linux/types.h>
#include <linux/bug.h>
#include <linux/delay.h>
#include <linux/kernel.h>
#include <linux/kthread.h>
#include <linux/sched.h>
#include <linux/wait.h>
#include <shim/shim.h>

struct shim_task {
	struct task_struct	task;		/* what kernel code sees */
	pthread_t		thread;
	int			(*fn)(void *data);
	void			*data;
	int			ret;
	bool			kthread;
	pthread_mutex_t		lock;		/* the fields below */
	pthread_cond_t		cond;		/* start gate, schedule_timeout() */
	bool			started;
	bool			should_stop;
	wait_queue_head_t	*waiting_on;
};

static __thread struct shim_task *self;
static pthread_key_t self_key;
static pthread_once_t self_once = PTHREAD_ONCE_INIT;
static int next_pid = 1000;

static void self_free(void *arg)
{
	struct shim_task *t = arg;

	if (!t->kthread)
		free(t);
}

static void self_key_init(void)
{
	pthread_key_create(&self_key, self_free);
}

static struct shim_task *task_new(void)
{
	struct shim_task *t = calloc(1, sizeof(*t));

	BUG_ON(!t);
	pthread_mutex_init(&t->lock, NULL);
	pthread_cond_init(&t->cond, NULL);
	t->task.pid = __atomic_fetch_add(&next_pid, 1, __ATOMIC_RELAXED);
	return t;
}

struct task_struct *shim_current(void)
{
	if (!self) {
		pthread_once(&self_once, self_key_init);
		self = task_new();
		snprintf(self->task.comm, TASK_COMM_LEN, "user/%d", self->task.pid);
		pthread_setspecific(self_key, self);
	}
	return &self->task;
}

s64 shim_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (s64)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* wait on @cond (with @lock held) until woken or the monotonic @deadline_ms */
static void cond_wait_until(pthread_cond_t *cond, pthread_mutex_t *lock,
			    s64 deadline_ms)
{
	struct timespec ts;
	s64 left;

	if (!deadline_ms) {
		pthread_cond_wait(cond, lock);
		return;
	}
	left = deadline_ms - shim_now_ms();
	if (left <= 0)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += left / 1000;
	ts.tv_nsec += (left % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_cond_timedwait(cond, lock, &ts);
}

static bool stop_requested(struct shim_task *t)
{
	return t && t->kthread && __atomic_load_n(&t->should_stop, __ATOMIC_SEQ_CST);
}

/* ---- wait queues ------------------------------------------------------------ */

void __wake_up(wait_queue_head_t *wq)
{
	pthread_mutex_lock(&wq->lock);
	wq->wakeups++;
	pthread_cond_broadcast(&wq->cond);
	pthread_mutex_unlock(&wq->lock);
}

unsigned long shim_wait_prepare(wait_queue_head_t *wq)
{
	unsigned long seen;

	shim_current();
	pthread_mutex_lock(&self->lock);
	self->waiting_on = wq;
	pthread_mutex_unlock(&self->lock);
	pthread_mutex_lock(&wq->lock);
	seen = wq->wakeups;
	pthread_mutex_unlock(&wq->lock);
	return seen;
}

/* ---- freezing (shim.h) --------------------------------------------------------- */

/*
 * Kernel threads and work items run holding run_lock for reading and let
 * it go only where they sleep; shim_freeze() takes it for writing. Writers
 * first: a thread that wakes while a freeze waits stays asleep.
 */
static pthread_rwlock_t run_lock = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;

static __thread bool running;	/* this thread holds run_lock */

void shim_run_begin(void)
{
	pthread_rwlock_rdlock(&run_lock);
	running = true;
}

void shim_run_end(void)
{
	running = false;
	pthread_rwlock_unlock(&run_lock);
}

/* Around a sleep of the calling thread, if it runs under run_lock. */
bool shim_sleep_begin(void)
{
	bool k = running;

	if (k)
		shim_run_end();
	return k;
}

void shim_sleep_end(bool k)
{
	if (k)
		shim_run_begin();
}

void shim_freeze(void)
{
	pthread_rwlock_wrlock(&run_lock);
}

void shim_thaw(void)
{
	pthread_rwlock_unlock(&run_lock);
}

void shim_wait_sleep(wait_queue_head_t *wq, unsigned long seen, s64 deadline_ms)
{
	bool k = shim_sleep_begin();

	pthread_mutex_lock(&wq->lock);
	while (wq->wakeups == seen && !stop_requested(self) &&
	       (!deadline_ms || shim_now_ms() < deadline_ms))
		cond_wait_until(&wq->cond, &wq->lock, deadline_ms);
	pthread_mutex_unlock(&wq->lock);
	shim_sleep_end(k);
}

long schedule_timeout(long timeout)
{
	s64 deadline;
	bool k;

	might_sleep();
	shim_current();
	if (timeout == MAX_SCHEDULE_TIMEOUT)
		deadline = 0;
	else
		deadline = shim_now_ms() + (timeout > 0 ? timeout : 0);
	k = shim_sleep_begin();
	pthread_mutex_lock(&self->lock);
	if (!stop_requested(self) && timeout > 0)
		cond_wait_until(&self->cond, &self->lock, deadline);
	pthread_mutex_unlock(&self->lock);
	shim_sleep_end(k);
	if (!deadline)
		return MAX_SCHEDULE_TIMEOUT;
	return max_t(s64, deadline - shim_now_ms(), 0);
}

void msleep(unsigned int msecs)
{
	struct timespec ts = { msecs / 1000, (msecs % 1000) * 1000000L };
	bool k;

	might_sleep();
	k = shim_sleep_begin();
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
	shim_sleep_end(k);
}

void usleep_range(unsigned long min, unsigned long max)
{
	struct timespec ts = { min / 1000000, (min % 1000000) * 1000L };

	might_sleep();
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

void udelay(unsigned long usecs)
{
	struct timespec ts = { usecs / 1000000, (usecs % 1000000) * 1000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* ---- kthreads ----------------------------------------------------------------- */

static void *kthread_main(void *arg)
{
	struct shim_task *t = arg;
	bool run;

	self = t;
	pthread_mutex_lock(&t->lock);
	while (!t->started && !stop_requested(t))
		pthread_cond_wait(&t->cond, &t->lock);
	run = t->started && !stop_requested(t);
	pthread_mutex_unlock(&t->lock);
	shim_run_begin();
	t->ret = run ? t->fn(t->data) : -EINTR;
	shim_run_end();
	return NULL;
}

struct task_struct *kthread_create(int (*threadfn)(void *data), void *data,
				   const char namefmt[], ...)
{
	struct shim_task *t = task_new();
	va_list ap;

	might_sleep();
	t->kthread = true;
	t->fn = threadfn;
	t->data = data;
	va_start(ap, namefmt);
	vsnprintf(t->task.comm, TASK_COMM_LEN, namefmt, ap);
	va_end(ap);
	if (pthread_create(&t->thread, NULL, kthread_main, t)) {
		free(t);
		return ERR_PTR(-EAGAIN);
	}
	return &t->task;
}

int wake_up_process(struct task_struct *task)
{
	struct shim_task *t = container_of(task, struct shim_task, task);

	pthread_mutex_lock(&t->lock);
	t->started = true;
	pthread_cond_broadcast(&t->cond);
	pthread_mutex_unlock(&t->lock);
	return 1;
}

bool kthread_should_stop(void)
{
	return stop_requested(self);
}

int kthread_stop(struct task_struct *task)
{
	struct shim_task *t = container_of(task, struct shim_task, task);
	wait_queue_head_t *wq;
	bool k;
	int ret;

	might_sleep();
	__atomic_store_n(&t->should_stop, true, __ATOMIC_SEQ_CST);
	pthread_mutex_lock(&t->lock);
	wq = t->waiting_on;
	pthread_cond_broadcast(&t->cond);
	pthread_mutex_unlock(&t->lock);
	if (wq)
		__wake_up(wq);
	k = shim_sleep_begin();
	pthread_join(t->thread, NULL);
	shim_sleep_end(k);
	ret = t->ret;
	free(t);
	return ret;
}
