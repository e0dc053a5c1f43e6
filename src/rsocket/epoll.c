// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * repoll_create / repoll_ctl / repoll_wait: an epoll-style interface over
 * rsockets and ordinary descriptors.
 *
 * An instance is a real epoll descriptor (its number, and where ordinary
 * descriptors are registered) plus a list of registered rsockets.  A wait
 * is one rpoll over the rsockets and the epoll descriptor itself; ready
 * ordinary descriptors are then collected with a zero-timeout epoll_wait.
 * Events are level-triggered; EPOLLONESHOT disables an rsocket after it
 * is reported, and EPOLLET is treated as level-triggered.  An rsocket
 * that another thread adds or changes while a thread waits rings that
 * thread's bell (util/bell.h), which polls it with the rsockets: the wait
 * takes a new snapshot, as the kernel's epoll watches a new member at
 * once.
 *
 * The application closes an instance with close(2), which this library
 * never sees, so an instance's record is never freed (rep_find may hand
 * it out after dropping rep_mut); the next instance given the same number
 * takes the record over (rep_reuse).
 */
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "rs.h"
#include "util/bell.h"

struct rep_entry {
	int fd;
	struct epoll_event event;
	bool disabled; /* EPOLLONESHOT fired */
};

struct repoll {
	struct repoll *next;
	int epfd;
	pthread_mutex_t lock;
	struct rep_entry *entries;
	int count, size;
	struct cma_bell *waiters; /* the threads in repoll_wait on it */
};

static const struct cma_bell_ops rep_bell_ops = {
	.read = read, .write = write, .fcntl = fcntl, .close = close};

static struct repoll *rep_list;
static pthread_mutex_t rep_mut = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t rep_fork_once = PTHREAD_ONCE_INIT;

/*
 * fork() holds rep_mut and every instance's lock across (a child would
 * otherwise inherit one held by a thread it does not have, and hang on
 * its first repoll call): they are leaves (their holders take only the
 * table's stripes, malloc and a bell's write), so waiting for them never
 * waits on another prepare handler's lock, and the child's lists are
 * whole.  Records are never freed, so the list only grows.
 */
static void rep_forking(void)
{
	struct repoll *rep;

	pthread_mutex_lock(&rep_mut);
	for (rep = rep_list; rep; rep = rep->next)
		pthread_mutex_lock(&rep->lock);
}

static void rep_forked(void)
{
	struct repoll *rep;

	for (rep = rep_list; rep; rep = rep->next)
		pthread_mutex_unlock(&rep->lock);
	pthread_mutex_unlock(&rep_mut);
}

static void rep_watch_forks(void)
{
	pthread_atfork(rep_forking, rep_forked, rep_forked);
}

static struct repoll *rep_find(int epfd)
{
	struct repoll *rep;

	pthread_mutex_lock(&rep_mut);
	for (rep = rep_list; rep && rep->epfd != epfd; rep = rep->next)
		;
	pthread_mutex_unlock(&rep_mut);
	return rep;
}

/*
 * The kernel just handed out @epfd, so a record still naming that number
 * belongs to an instance the application closed: empty it for the new
 * one.  Memory therefore stays bounded by the descriptor numbers in use.
 */
static bool rep_reuse(int epfd)
{
	struct repoll *rep = rep_find(epfd);

	if (!rep)
		return false;
	pthread_mutex_lock(&rep->lock);
	free(rep->entries);
	rep->entries = NULL;
	rep->count = 0;
	rep->size = 0;
	pthread_mutex_unlock(&rep->lock);
	return true;
}

CMA_EXPORT int repoll_create(int flags)
{
	struct repoll *rep;
	int epfd;

	if (flags & ~EPOLL_CLOEXEC)
		return cma_err(EINVAL);
	rs_configure();
	pthread_once(&rep_fork_once, rep_watch_forks);
	epfd = epoll_create1(flags);
	if (epfd < 0)
		return -1;
	if (rep_reuse(epfd))
		return epfd;
	rep = calloc(1, sizeof(*rep));
	if (!rep) {
		close(epfd);
		return cma_err(ENOMEM);
	}
	rep->epfd = epfd;
	pthread_mutex_init(&rep->lock, NULL);
	pthread_mutex_lock(&rep_mut);
	rep->next = rep_list;
	rep_list = rep;
	pthread_mutex_unlock(&rep_mut);
	return epfd;
}

static int rep_index(struct repoll *rep, int fd)
{
	int i;

	for (i = 0; i < rep->count; i++) {
		if (rep->entries[i].fd == fd)
			return i;
	}
	return -1;
}

static int rep_ctl_rsocket(struct repoll *rep, int op, int fd,
			   struct epoll_event *event)
{
	int i = rep_index(rep, fd);

	switch (op) {
	case EPOLL_CTL_ADD:
		if (i >= 0)
			return cma_err(EEXIST);
		if (rep->count == rep->size) {
			int size = rep->size ? rep->size * 2 : 8;
			struct rep_entry *e = realloc(
				rep->entries, sizeof(*e) * (size_t)size);

			if (!e)
				return cma_err(ENOMEM);
			rep->entries = e;
			rep->size = size;
		}
		rep->entries[rep->count].fd = fd;
		rep->entries[rep->count].event = *event;
		rep->entries[rep->count].disabled = false;
		rep->count++;
		return 0;
	case EPOLL_CTL_MOD:
		if (i < 0)
			return cma_err(ENOENT);
		rep->entries[i].event = *event;
		rep->entries[i].disabled = false;
		return 0;
	case EPOLL_CTL_DEL:
		if (i < 0)
			return cma_err(ENOENT);
		rep->entries[i] = rep->entries[--rep->count];
		return 0;
	default:
		return cma_err(EINVAL);
	}
}

CMA_EXPORT int repoll_ctl(int epfd, int op, int fd, struct epoll_event *event)
{
	struct repoll *rep = rep_find(epfd);
	struct rsocket *rs;
	int ret;

	if (!rep)
		return cma_err(EBADF);
	if (op != EPOLL_CTL_DEL && !event)
		return cma_err(EFAULT);
	if (fd == epfd)
		return cma_err(EINVAL);
	rs = rs_get(fd);
	if (!rs)
		return epoll_ctl(rep->epfd, op, fd, event);
	pthread_mutex_lock(&rep->lock);
	ret = rep_ctl_rsocket(rep, op, fd, event);
	if (!ret && op != EPOLL_CTL_DEL)
		cma_bells_ring(rep->waiters, &rep_bell_ops);
	pthread_mutex_unlock(&rep->lock);
	rs_put(rs);
	return ret;
}

static short rep_to_poll(uint32_t events)
{
	short p = 0;

	if (events & EPOLLIN)
		p |= POLLIN;
	if (events & EPOLLOUT)
		p |= POLLOUT;
	if (events & EPOLLPRI)
		p |= POLLPRI;
	return p;
}

static uint32_t rep_from_poll(short revents)
{
	uint32_t e = 0;

	if (revents & POLLIN)
		e |= EPOLLIN;
	if (revents & POLLOUT)
		e |= EPOLLOUT;
	if (revents & POLLERR)
		e |= EPOLLERR;
	if (revents & POLLHUP)
		e |= EPOLLHUP;
	if (revents & POLLPRI)
		e |= EPOLLPRI;
	return e;
}

/*
 * Forget an rsocket that was closed, as epoll forgets a closed file (its
 * number may be reused: the new socket is not in the set).  rep->lock held.
 */
static void rep_forget(struct repoll *rep, int i)
{
	rep->entries[i] = rep->entries[--rep->count];
}

/*
 * The poll set of a wait: the enabled entries, then the epoll fd itself,
 * then the waiter's bell, which joins the instance's waiters.
 */
static int rep_collect(struct repoll *rep, struct pollfd **pfds, int **pmap,
		       struct cma_bell *me)
{
	struct pollfd *fds;
	struct rsocket *rs;
	int *map, n = 0, i;

	pthread_mutex_lock(&rep->lock);
	fds = calloc((size_t)rep->count + 2, sizeof(*fds));
	map = calloc((size_t)rep->count + 1, sizeof(*map));
	if (!fds || !map) {
		pthread_mutex_unlock(&rep->lock);
		free(fds);
		free(map);
		return cma_err(ENOMEM);
	}
	for (i = 0; i < rep->count; i++) {
		if (rep->entries[i].disabled)
			continue;
		rs = rs_get(rep->entries[i].fd);
		if (!rs) {
			rep_forget(rep, i--);
			continue;
		}
		rs_put(rs);
		fds[n].fd = rep->entries[i].fd;
		fds[n].events = rep_to_poll(rep->entries[i].event.events);
		map[n++] = i;
	}
	fds[n].fd = rep->epfd;
	fds[n].events = POLLIN;
	fds[n + 1].fd = me->fd;
	fds[n + 1].events = POLLIN;
	cma_bell_join(&rep->waiters, me);
	pthread_mutex_unlock(&rep->lock);
	*pfds = fds;
	*pmap = map;
	return n;
}

/* Report what rpoll found; entries closed meanwhile are forgotten. */
static int rep_report(struct repoll *rep, struct pollfd *fds, const int *map,
		      int n, struct epoll_event *events, int maxevents)
{
	int i, cnt = 0;

	pthread_mutex_lock(&rep->lock);
	for (i = 0; i < n && cnt < maxevents; i++) {
		struct rep_entry *e;

		if (!fds[i].revents || map[i] >= rep->count)
			continue;
		e = &rep->entries[map[i]];
		if (e->fd != fds[i].fd)
			continue; /* removed meanwhile */
		if (fds[i].revents & POLLNVAL) {
			rep_forget(rep, map[i]);
			continue;
		}
		events[cnt].events = rep_from_poll(fds[i].revents);
		events[cnt].data = e->event.data;
		cnt++;
		if (e->event.events & EPOLLONESHOT)
			e->disabled = true;
	}
	pthread_mutex_unlock(&rep->lock);
	return cnt;
}

CMA_EXPORT int repoll_wait(int epfd, struct epoll_event *events, int maxevents,
			   int timeout)
{
	struct repoll *rep = rep_find(epfd);
	int64_t deadline = timeout > 0 ? (int64_t)rs_now_ms() + timeout : 0;
	struct cma_bell me = {.fd = cma_bell_of_thread(&rep_bell_ops)};
	struct pollfd *fds;
	int *map, n, ret, cnt;

	if (!rep)
		return cma_err(EBADF);
	if (!events || maxevents <= 0)
		return cma_err(EINVAL);
	for (;;) {
		n = rep_collect(rep, &fds, &map, &me);
		if (n < 0)
			return -1;
		ret = rpoll(fds, (nfds_t)n + 2, timeout);
		pthread_mutex_lock(&rep->lock);
		cma_bell_leave(&rep->waiters, &me);
		pthread_mutex_unlock(&rep->lock);
		if (ret > 0 && fds[n + 1].revents)
			cma_bell_drain(me.fd, &rep_bell_ops);
		cnt = ret > 0 ? rep_report(rep, fds, map, n, events, maxevents)
			      : ret;
		if (ret > 0 && fds[n].revents && cnt < maxevents) {
			ret = epoll_wait(rep->epfd, events + cnt,
					 maxevents - cnt, 0);
			if (ret > 0)
				cnt += ret;
		}
		free(fds);
		free(map);
		/*
		 * Woken only by a close or a change of the set: wait on, for
		 * the rest of the time, with a new snapshot.
		 */
		if (cnt || ret < 0 || !timeout)
			return cnt;
		if (timeout > 0) {
			timeout = (int)(deadline - (int64_t)rs_now_ms());
			if (timeout <= 0)
				return 0;
		}
	}
}
