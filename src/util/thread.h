/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * The library's background threads: detached, and blind to the
 * application's signals (a signal meant for the program must reach one
 * of its own threads).
 */
#ifndef CMA_THREAD_H
#define CMA_THREAD_H

#include <pthread.h>
#include <signal.h>

/* Start @fn(NULL) so: 0, or pthread_create's error number. */
static inline int cma_thread_detached(void *(*fn)(void *))
{
	pthread_attr_t attr;
	sigset_t all, old;
	pthread_t tid;
	int ret;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = pthread_create(&tid, &attr, fn, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	return ret;
}

#endif
