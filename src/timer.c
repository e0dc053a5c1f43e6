// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Library timers (peer-to-peer hold checks, give-ups, iWARP retries).
 *
 * They run in one service thread per process, not in the application's
 * rdma_get_cm_event(): a timer that finds nothing to report must not make
 * the application's channel fd readable (rdma-core's contract is that a
 * readable fd has an event; programs poll it and then block in
 * rdma_get_cm_event).  A timer that has something to report posts an
 * event, which wakes the channel as any event does.
 *
 * The thread starts with the first timer armed (programs that never use
 * peer-to-peer mode never have one), blocks every signal, sleeps on a
 * condition variable until the earliest deadline, and is stopped when the
 * library is unloaded.  After fork() the child starts its own on its
 * first timer.
 */
#include <config.h>

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <time.h>

#include "cma.h"

/* Everything below, and every timer's fields, are under timer_lock. */
static pthread_mutex_t timer_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t timer_wake; /* CLOCK_MONOTONIC: the list changed */
static pthread_cond_t timer_done = PTHREAD_COND_INITIALIZER;
static pthread_once_t timer_once = PTHREAD_ONCE_INIT;
static struct cma_timer *timers; /* armed, earliest first */
static pthread_t timer_thread;
static bool timer_thread_up, timer_quit;

uint64_t cma_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void cma_timer_init_wake(void)
{
	pthread_condattr_t attr;

	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&timer_wake, &attr);
	pthread_condattr_destroy(&attr);
}

/*
 * The child of a fork() has no service thread: it starts its own.  The
 * parent's thread may have been waiting on the condition variables, a
 * waiter the child does not have: they are made anew.
 */
static void cma_timer_atfork_child(void)
{
	pthread_mutex_init(&timer_lock, NULL);
	pthread_cond_init(&timer_done, NULL);
	cma_timer_init_wake();
	timer_thread_up = false;
	timer_quit = false;
}

static void cma_timer_init_once(void)
{
	cma_timer_init_wake();
	pthread_atfork(NULL, NULL, cma_timer_atfork_child);
}

static void cma_timer_unlink(struct cma_timer *timer)
{
	struct cma_timer **pp;

	for (pp = &timers; *pp; pp = &(*pp)->next) {
		if (*pp == timer) {
			*pp = timer->next;
			break;
		}
	}
	timer->next = NULL;
	timer->armed = false;
}

/* Sleep until the earliest deadline or a change of the list. */
static void cma_timer_sleep(void)
{
	struct timespec until;
	uint64_t when;

	if (!timers) {
		pthread_cond_wait(&timer_wake, &timer_lock);
		return;
	}
	when = timers->deadline_ns;
	until.tv_sec = (time_t)(when / 1000000000ull);
	until.tv_nsec = (long)(when % 1000000000ull);
	pthread_cond_timedwait(&timer_wake, &timer_lock, &until);
}

/*
 * Run due timers one at a time, without the lock (they take p2p_lock, make
 * kernel calls and post events).  A running timer is marked so that
 * cma_timer_sync() can wait for it before its owner is freed.
 */
static void *cma_timer_main(void *arg)
{
	void (*expire)(struct cma_timer * timer);
	struct cma_timer *timer;

	(void)arg;
	pthread_mutex_lock(&timer_lock);
	while (!timer_quit) {
		timer = timers;
		if (!timer || timer->deadline_ns > cma_now_ns()) {
			cma_timer_sleep();
			continue;
		}
		timers = timer->next;
		timer->next = NULL;
		timer->armed = false;
		timer->running = true;
		timer->runner = pthread_self();
		expire = timer->expire;
		pthread_mutex_unlock(&timer_lock);
		expire(timer);
		pthread_mutex_lock(&timer_lock);
		timer->running = false;
		pthread_cond_broadcast(&timer_done);
	}
	pthread_mutex_unlock(&timer_lock);
	return NULL;
}

/* Start the service thread (lock held); signals stay with the program. */
static void cma_timer_thread_start(void)
{
	sigset_t all, old;

	if (timer_thread_up)
		return;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	/* On failure timers wait for the next start to try again. */
	timer_thread_up =
		!pthread_create(&timer_thread, NULL, cma_timer_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void cma_timer_start(struct rdma_event_channel *channel,
		     struct cma_timer *timer, unsigned int ms)
{
	struct cma_timer **pp;

	/* Its events come from another thread: the channel must wake. */
	cma_channel_expect_posts(channel);
	pthread_once(&timer_once, cma_timer_init_once);
	pthread_mutex_lock(&timer_lock);
	if (timer->armed)
		cma_timer_unlink(timer);
	timer->deadline_ns = cma_now_ns() + (uint64_t)ms * 1000000ull;
	for (pp = &timers; *pp; pp = &(*pp)->next)
		if ((*pp)->deadline_ns > timer->deadline_ns)
			break;
	timer->next = *pp;
	*pp = timer;
	timer->armed = true;
	cma_timer_thread_start();
	pthread_cond_signal(&timer_wake);
	pthread_mutex_unlock(&timer_lock);
}

void cma_timer_stop(struct cma_timer *timer)
{
	pthread_mutex_lock(&timer_lock);
	if (timer->armed)
		cma_timer_unlink(timer);
	pthread_mutex_unlock(&timer_lock);
}

void cma_timer_sync(struct cma_timer *timer)
{
	pthread_mutex_lock(&timer_lock);
	for (;;) {
		/* Also when the expire() waited for re-armed it. */
		if (timer->armed)
			cma_timer_unlink(timer);
		/* From inside its own expire() there is nothing to wait for. */
		if (!timer->running ||
		    pthread_equal(timer->runner, pthread_self()))
			break;
		pthread_cond_wait(&timer_done, &timer_lock);
	}
	pthread_mutex_unlock(&timer_lock);
}

/* Unloading the library (dlclose) must not leave the thread in its code. */
static void __attribute__((destructor)) cma_timer_fini(void)
{
	bool up;

	pthread_mutex_lock(&timer_lock);
	up = timer_thread_up;
	timer_quit = true;
	if (up)
		pthread_cond_signal(&timer_wake);
	pthread_mutex_unlock(&timer_lock);
	if (up && !pthread_equal(timer_thread, pthread_self()))
		pthread_join(timer_thread, NULL);
}
