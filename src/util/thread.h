/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * The library's background threads: detached, and blind to the
 * application's signals (a signal meant for the program must reach one
 * of its own threads); and the clock their timed waits keep.
 */
#ifndef CMA_THREAD_H
#define CMA_THREAD_H

#include <pthread.h>
#include <signal.h>
#include <time.h>

/* Start @fn(@arg) so: 0, or pthread_create's error number. */
static inline int cma_thread_detached_arg(void *(*fn)(void *), void *arg)
{
	pthread_attr_t attr;
	sigset_t all, old;
	pthread_t tid;
	int ret;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = pthread_create(&tid, &attr, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	return ret;
}

/* The same for a thread that serves the whole library: @fn(NULL). */
static inline int cma_thread_detached(void *(*fn)(void *))
{
	return cma_thread_detached_arg(fn, NULL);
}

/*
 * A condition variable whose timed waits take CLOCK_MONOTONIC deadlines
 * (a change of the wall clock moves none of them).
 */
static inline void cma_cond_init_monotonic(pthread_cond_t *cond)
{
	pthread_condattr_t attr;

	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(cond, &attr);
	pthread_condattr_destroy(&attr);
}

#endif
