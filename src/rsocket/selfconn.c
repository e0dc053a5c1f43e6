// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * One thread connecting a stream rsocket to its own listener.
 *
 * A blocking rconnect waits for the connection to be accepted, and an
 * rsocket listener answers a connection request only inside raccept.  A
 * program that calls rlisten, rconnect and then raccept from one thread
 * (test suites, programs making themselves a socket pair) would wait for
 * ever.  rdma-core answers requests in a service thread; here the waiting
 * connect does it: while it waits, it looks at the process's listener on
 * the destination's port (if there is one) every RS_SELF_SLICE_MS, and
 * when a request waits there and no thread is inside raccept on that
 * listener or sleeping on it (rpoll, repoll_wait: they would not wake for
 * a request taken from under them), it accepts it on the listener's
 * behalf.  The new socket
 * waits in the listener's queue, which raccept (and rpoll's POLLIN) take
 * first.  Programs that connect elsewhere, or accept in another thread,
 * see no change: the connect only looks, and a listener another thread
 * waits on is left to that thread.
 *
 * All queue state is under one mutex (rs_self_mut): listeners, their
 * queues, and how many threads are inside raccept.  It is held across an
 * accept (CM calls, the table's lock), so a fork cannot hold it: a forked
 * child makes it afresh (rs_self_forked), and every change keeps the list
 * whole at any instant a holder can stop at.
 */
#include <stdlib.h>
#include <string.h>

#include "rs.h"

/* How often a waiting connect looks at its own process's listener. */
#define RS_SELF_SLICE_MS 10

static pthread_mutex_t rs_self_mut = PTHREAD_MUTEX_INITIALIZER;
static struct rsocket *rs_listeners; /* through listen_next */

void rs_listener_add(struct rsocket *rs)
{
	pthread_mutex_lock(&rs_self_mut);
	rs->listen_next = rs_listeners;
	__atomic_store_n(&rs_listeners, rs, __ATOMIC_RELEASE);
	rs->listen_added = true;
	pthread_mutex_unlock(&rs_self_mut);
}

void rs_listener_remove(struct rsocket *rs)
{
	struct rsocket **p;
	uint32_t i, n;
	int *q;

	/* Set once, before the listener could be found: no lock to read. */
	if (!rs->listen_added)
		return;
	pthread_mutex_lock(&rs_self_mut);
	for (p = &rs_listeners; *p; p = &(*p)->listen_next) {
		if (*p == rs) {
			*p = rs->listen_next;
			break;
		}
	}
	q = rs->acceptq;
	n = rs->acceptq_n;
	rs->acceptq = NULL;
	rs->acceptq_n = 0;
	pthread_mutex_unlock(&rs_self_mut);
	/* Accepted for it, never taken: closed as a kernel backlog is. */
	for (i = 0; i < n; i++)
		rclose(q[i]);
	free(q);
}

static uint16_t rs_port_of(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ((const struct sockaddr_in *)sa)->sin_port;
	if (sa->sa_family == AF_INET6)
		return ((const struct sockaddr_in6 *)sa)->sin6_port;
	return 0;
}

/* Whether listener address @l takes a connection to @dst. */
static bool rs_addr_takes(const struct sockaddr *l, const struct sockaddr *dst)
{
	const struct sockaddr_in *l4 = (const void *)l, *d4 = (const void *)dst;
	const struct sockaddr_in6 *l6 = (const void *)l,
				  *d6 = (const void *)dst;

	if (!rs_port_of(l) || rs_port_of(l) != rs_port_of(dst))
		return false;
	if (l->sa_family == AF_INET6 && IN6_IS_ADDR_UNSPECIFIED(&l6->sin6_addr))
		return true;
	if (l->sa_family != dst->sa_family)
		return false;
	if (l->sa_family == AF_INET)
		return l4->sin_addr.s_addr == htonl(INADDR_ANY) ||
		       l4->sin_addr.s_addr == d4->sin_addr.s_addr;
	return !memcmp(&l6->sin6_addr, &d6->sin6_addr, sizeof(l6->sin6_addr));
}

/* This process's open listener that @rs's connection goes to, referenced. */
static struct rsocket *rs_self_listener(struct rsocket *rs)
{
	const struct sockaddr *dst = &rs->cm_id->route.addr.dst_addr;
	struct rsocket *l;

	pthread_mutex_lock(&rs_self_mut);
	for (l = rs_listeners; l; l = l->listen_next) {
		if (l->closing || rs_state(l) != RS_LISTENING ||
		    !rs_addr_takes(&l->cm_id->route.addr.src_addr, dst))
			continue;
		rs_ref(l);
		break;
	}
	pthread_mutex_unlock(&rs_self_mut);
	return l;
}

/* Grown by copy, the old array freed once replaced: never dangling. */
static int rs_acceptq_push(struct rsocket *l, int index)
{
	if (l->acceptq_n == l->acceptq_cap) {
		uint32_t cap = l->acceptq_cap ? 2 * l->acceptq_cap : 4;
		int *q = malloc(cap * sizeof(*q)), *old = l->acceptq;

		if (!q)
			return -1;
		if (l->acceptq_n)
			memcpy(q, old, l->acceptq_n * sizeof(*q));
		__atomic_store_n(&l->acceptq, q, __ATOMIC_RELEASE);
		l->acceptq_cap = cap;
		free(old);
	}
	l->acceptq[l->acceptq_n++] = index;
	return 0;
}

/*
 * Accept what waits on @l if no thread is inside raccept on it.  The
 * accepted socket is not a listener: freeing it on failure does not come
 * back for the mutex (rs_listener_remove returns at once).
 */
static void rs_self_serve(struct rsocket *l)
{
	int index = -1;
	bool lost = false;

	pthread_mutex_lock(&rs_self_mut);
	if (!l->accept_waiters && rs_wake_idle(l) && !l->closing &&
	    rs_cm_event_ready(l)) {
		index = rs_accept_one(l, true);
		lost = index >= 0 && rs_acceptq_push(l, index);
	}
	pthread_mutex_unlock(&rs_self_mut);
	if (lost)
		rclose(index); /* no memory: refused, as by a full backlog */
}

int rs_self_wait(struct rsocket *rs)
{
	struct rsocket *l = NULL;
	int ret;

	if (rs_state(rs) & RS_CONNECTING)
		l = rs_self_listener(rs);
	if (!l)
		return rs_sleep_fd_or_close(rs, rs->channel->fd, POLLIN, -1);
	do {
		rs_self_serve(l);
		ret = rs_sleep_fd_or_close(rs, rs->channel->fd, POLLIN,
					   RS_SELF_SLICE_MS);
	} while (!ret);
	rs_put(l);
	return ret;
}

int rs_accept_enter(struct rsocket *l)
{
	int index = -1;

	pthread_mutex_lock(&rs_self_mut);
	if (l->acceptq_n) {
		index = l->acceptq[0];
		memmove(l->acceptq, l->acceptq + 1,
			--l->acceptq_n * sizeof(*l->acceptq));
	} else {
		l->accept_waiters++;
	}
	pthread_mutex_unlock(&rs_self_mut);
	return index;
}

void rs_accept_leave(struct rsocket *l)
{
	pthread_mutex_lock(&rs_self_mut);
	l->accept_waiters--;
	pthread_mutex_unlock(&rs_self_mut);
}

bool rs_acceptq_ready(struct rsocket *l)
{
	bool ready;

	pthread_mutex_lock(&rs_self_mut);
	ready = l->acceptq_n > 0;
	pthread_mutex_unlock(&rs_self_mut);
	return ready;
}

/*
 * A forked child has no thread inside raccept, and what was accepted for
 * its parent's own connects belongs to the parent (whose connecting
 * thread takes it there): every queue starts empty.  Its sockets stay in
 * the child's table, as any connection the parent made.
 */
static void rs_self_forked(void)
{
	struct rsocket *l;

	pthread_mutex_init(&rs_self_mut, NULL);
	for (l = rs_listeners; l; l = l->listen_next) {
		l->accept_waiters = 0;
		free(l->acceptq);
		l->acceptq = NULL;
		l->acceptq_n = 0;
		l->acceptq_cap = 0;
	}
}

__attribute__((constructor)) static void rs_self_watch_forks(void)
{
	pthread_atfork(NULL, NULL, rs_self_forked);
}
