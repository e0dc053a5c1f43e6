/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * Bells: waking the threads that wait on a set of descriptors when
 * another thread changes the set.
 *
 * The kernel's epoll watches a descriptor from the moment another thread
 * adds it to a set somebody waits on.  Our epoll-style sets (repoll_*,
 * and the preload's epoll over rsockets) wait by polling a snapshot of
 * their members, so a member added or changed meanwhile must wake the
 * waiter to take a new one.  A waiter polls its thread's bell (an
 * eventfd) with the snapshot and joins the set's list of waiters while it
 * waits; a change rings every bell on the list.  A bell belongs to one
 * thread, so no waiter can drain another's wake-up.  The list lives under
 * the set's lock; so do cma_bell_join, cma_bell_leave and cma_bells_ring.
 *
 * The descriptor calls go through @ops: the preload passes the C
 * library's real functions, which it otherwise stands in front of.
 */
#ifndef CMA_BELL_H
#define CMA_BELL_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <sys/types.h>

#include "util/fd_high.h"

struct cma_bell_ops {
	ssize_t (*read)(int, void *, size_t);
	ssize_t (*write)(int, const void *, size_t);
	cma_fcntl_fn fcntl;
	cma_close_fn close;
};

/* A waiter on a set's list: its thread's bell. */
struct cma_bell {
	struct cma_bell *next;
	int fd;
};

static inline void cma_bell_join(struct cma_bell **list, struct cma_bell *me)
{
	if (me->fd < 0)
		return;
	me->next = *list;
	*list = me;
}

static inline void cma_bell_leave(struct cma_bell **list, struct cma_bell *me)
{
	for (; *list; list = &(*list)->next) {
		if (*list == me) {
			*list = me->next;
			return;
		}
	}
}

/* The set changed: every waiter on @list takes a new snapshot. */
static inline void cma_bells_ring(const struct cma_bell *list,
				  const struct cma_bell_ops *ops)
{
	const uint64_t one = 1;

	/* A full counter (EAGAIN) is rung already. */
	for (; list; list = list->next)
		(void)ops->write(list->fd, &one, sizeof(one));
}

/* After a wait whose poll saw the bell: silent again. */
static inline void cma_bell_drain(int fd, const struct cma_bell_ops *ops)
{
	uint64_t v;

	if (fd >= 0)
		(void)ops->read(fd, &v, sizeof(v));
}

static inline int cma_bell_new(const struct cma_bell_ops *ops)
{
	return cma_fd_move_high(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK),
				ops->fcntl, ops->close);
}

/*
 * The calling thread's bell, made on its first wait and closed when the
 * thread ends; -1 if none can be made (the thread then waits as before,
 * woken only by its members and its timeout).  One per thread and per
 * file that includes this header; @ops the same at every call.
 */
static __thread int cma_bell_fd = -1;
static const struct cma_bell_ops *cma_bell_fd_ops;
static pthread_key_t cma_bell_key;
static pthread_once_t cma_bell_once = PTHREAD_ONCE_INIT;
static bool cma_bell_keyed;

static inline void cma_bell_at_thread_exit(void *fd)
{
	__atomic_load_n(&cma_bell_fd_ops, __ATOMIC_ACQUIRE)
		->close((int)(intptr_t)fd - 1);
}

/*
 * fork() runs this in the child's only thread, the one that forked: the
 * bell it inherited is shared with that thread in the parent.
 */
static inline void cma_bell_in_child(void)
{
	if (cma_bell_fd < 0)
		return;
	__atomic_load_n(&cma_bell_fd_ops, __ATOMIC_ACQUIRE)->close(cma_bell_fd);
	cma_bell_fd = -1;
	/* nor may the thread's end close that number, now free for reuse */
	if (cma_bell_keyed)
		pthread_setspecific(cma_bell_key, NULL);
}

static inline void cma_bell_setup(void)
{
	cma_bell_keyed =
		!pthread_key_create(&cma_bell_key, cma_bell_at_thread_exit);
	pthread_atfork(NULL, NULL, cma_bell_in_child);
}

static inline int cma_bell_of_thread(const struct cma_bell_ops *ops)
{
	if (cma_bell_fd >= 0)
		return cma_bell_fd;
	__atomic_store_n(&cma_bell_fd_ops, ops, __ATOMIC_RELEASE);
	pthread_once(&cma_bell_once, cma_bell_setup);
	cma_bell_fd = cma_bell_new(ops);
	/* the key holds fd + 1: a value of 0 runs no destructor */
	if (cma_bell_fd >= 0 && cma_bell_keyed)
		pthread_setspecific(cma_bell_key,
				    (void *)(intptr_t)(cma_bell_fd + 1));
	return cma_bell_fd;
}

#endif
