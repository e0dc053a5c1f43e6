// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * epoll over a mix of rsockets and ordinary descriptors.
 *
 * A set keeps its ordinary members in the kernel; its rsocket members
 * live in a record here, and epoll_wait rpolls the kernel set (it is a
 * descriptor like any other) together with those rsockets.  rsocket
 * members are level-triggered: EPOLLET is accepted and treated as level,
 * EPOLLONESHOT disarms the member after one report as usual.
 *
 * The kernel wakes a thread in epoll_wait when another thread adds a
 * ready descriptor to its set.  A waiter here polls a snapshot of the
 * rsocket members, so a member added or changed meanwhile wakes it to
 * take a new one (Apache's event MPM: a worker adds a connection that
 * could not take more bytes while the listener thread waits): see
 * "Waking waiters" below.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "preload.h"
#include "util/bell.h"
#include "util/fork_fresh.h"

struct ep_member {
	int fd;
	struct epoll_event ev;
};

struct ep_set {
	struct ep_set *next;
	int epfd;
	int n, cap;
	struct ep_member *m;
	struct cma_bell *waiters; /* the threads waiting on it (bell.h) */
};

static struct ep_set *sets;
/*
 * Made afresh in a forked child (util/fork_fresh.h), not held across the
 * fork: the library's close() under its own locks comes here.  Every
 * change below leaves the sets whole at any instant (a new member array
 * is filled before it replaces the old, a removed member is overwritten
 * before the count drops), so a child finds them usable.
 */
CMA_FRESH_MUTEX(ep_lock)

/*
 * Waking waiters.  A thread that waits on a set with a record here rings
 * a bell (util/bell.h) when another thread changes the set's rsocket
 * members.
 *
 * A thread may already wait in the kernel's epoll_wait on a set that had
 * no record when it began (no rsocket member yet).  When a first member
 * creates the record, the kernel set gets a one-shot member of ours, the
 * knock: an eventfd that is always readable, its event marked with
 * &knock_mark.  Whoever collects that event drops it and its membership
 * (drop_knocks) and waits again, now here.
 */
static int knock_fd = -1;
static const char knock_mark;

static struct cma_bell_ops bell_ops;
static pthread_once_t bell_ops_once = PTHREAD_ONCE_INIT;

static void bell_ops_fill(void)
{
	bell_ops = (struct cma_bell_ops){.read = rsp_real.read,
					 .write = rsp_real.write,
					 .fcntl = rsp_real.fcntl,
					 .close = rsp_real.close};
}

/* Bells go through the C library's calls, not ours. */
static const struct cma_bell_ops *real_ops(void)
{
	pthread_once(&bell_ops_once, bell_ops_fill);
	return &bell_ops;
}

/*
 * Out of the set's waiters; the bell drained if @rung (a ring that comes
 * later makes the thread's next round return at once and take a new
 * snapshot, which costs nothing but that round).
 */
static void waiter_remove(int epfd, struct cma_bell *me, bool rung)
{
	struct ep_set *s;

	pthread_mutex_lock(&ep_lock);
	for (s = sets; s && s->epfd != epfd; s = s->next)
		;
	if (s)
		cma_bell_leave(&s->waiters, me);
	pthread_mutex_unlock(&ep_lock);
	if (rung)
		cma_bell_drain(me->fd, real_ops());
}

/* A new record for @epfd: a thread already in the kernel's wait leaves it. */
static void knock(int epfd)
{
	struct epoll_event ev = {.events = EPOLLIN | EPOLLONESHOT,
				 .data.ptr = (void *)&knock_mark};
	const uint64_t one = 1;
	int fd;

	if (knock_fd < 0) {
		fd = cma_bell_new(real_ops());
		if (fd < 0)
			return;
		if (rsp_real.write(fd, &one, sizeof(one)) < 0) {
			rsp_real.close(fd);
			return;
		}
		__atomic_store_n(&knock_fd, fd, __ATOMIC_RELAXED);
	}
	if (rsp_real.epoll_ctl(epfd, EPOLL_CTL_ADD, knock_fd, &ev) &&
	    errno != EEXIST)
		rsp_log("epoll set %d: cannot wake its waiters: %s", epfd,
			strerror(errno));
}

/* Removes knocks from @n events of @epfd; what is left. */
static int drop_knocks(int epfd, struct epoll_event *events, int n)
{
	int i, out = 0;

	for (i = 0; i < n; i++) {
		if (events[i].data.ptr == (void *)&knock_mark) {
			rsp_real.epoll_ctl(
				epfd, EPOLL_CTL_DEL,
				__atomic_load_n(&knock_fd, __ATOMIC_RELAXED),
				NULL);
			continue;
		}
		events[out++] = events[i];
	}
	return out;
}

static struct ep_set *find_set(int epfd, bool create)
{
	struct ep_set *s;

	for (s = sets; s; s = s->next)
		if (s->epfd == epfd)
			return s;
	if (!create)
		return NULL;
	s = calloc(1, sizeof(*s));
	if (s) {
		s->epfd = epfd;
		s->next = sets;
		__atomic_store_n(&sets, s, __ATOMIC_RELEASE);
		knock(epfd);
	}
	return s;
}

static int find_member(const struct ep_set *s, int fd)
{
	int i;

	for (i = 0; s && i < s->n; i++)
		if (s->m[i].fd == fd)
			return i;
	return -1;
}

static int add_member(struct ep_set *s, int fd, const struct epoll_event *ev)
{
	if (s->n == s->cap) {
		int cap = s->cap ? 2 * s->cap : 8;
		struct ep_member *m = malloc(cap * sizeof(*m)), *old = s->m;

		if (!m) {
			errno = ENOMEM;
			return -1;
		}
		if (s->n)
			memcpy(m, old, s->n * sizeof(*m));
		__atomic_store_n(&s->m, m, __ATOMIC_RELEASE);
		s->cap = cap;
		free(old);
	}
	s->m[s->n].fd = fd;
	s->m[s->n].ev = *ev;
	__atomic_store_n(&s->n, s->n + 1, __ATOMIC_RELEASE);
	return 0;
}

/* Overwritten before the count drops: whole at any instant. */
static void drop_member(struct ep_set *s, int i)
{
	s->m[i] = s->m[s->n - 1];
	__atomic_store_n(&s->n, s->n - 1, __ATOMIC_RELEASE);
}

static int ctl_rs(int epfd, int op, int fd, struct epoll_event *ev)
{
	struct ep_set *s;
	int i, ret = 0;

	pthread_mutex_lock(&ep_lock);
	s = find_set(epfd, op == EPOLL_CTL_ADD);
	i = find_member(s, fd);
	if (op == EPOLL_CTL_ADD && !s) {
		errno = ENOMEM;
		ret = -1;
	} else if (op == EPOLL_CTL_ADD && i >= 0) {
		errno = EEXIST;
		ret = -1;
	} else if (op != EPOLL_CTL_ADD && i < 0) {
		errno = ENOENT;
		ret = -1;
	} else if ((op == EPOLL_CTL_ADD || op == EPOLL_CTL_MOD) && !ev) {
		errno = EFAULT;
		ret = -1;
	} else if (op == EPOLL_CTL_ADD) {
		ret = add_member(s, fd, ev);
		cma_bells_ring(s->waiters, real_ops());
	} else if (op == EPOLL_CTL_MOD) {
		s->m[i].ev = *ev;
		cma_bells_ring(s->waiters, real_ops());
	} else if (op == EPOLL_CTL_DEL) {
		drop_member(s, i);
	} else {
		errno = EINVAL;
		ret = -1;
	}
	pthread_mutex_unlock(&ep_lock);
	return ret;
}

static bool is_lazy(int fd)
{
	enum rsp_lazy state = rsp_lazy_get(fd);

	return state == RSP_LAZY_ACTIVE || state == RSP_LAZY_PASSIVE;
}

/*
 * A RDMAV_FORK_SAFE connection not yet used: a kernel member for now,
 * remembered here too, so that when its first read or write moves it to
 * an rsocket the set hears of the rsocket (rsp_epoll_converted).
 */
static int ctl_lazy(int epfd, int op, int fd, struct epoll_event *ev)
{
	int ret = rsp_real.epoll_ctl(epfd, op, fd, ev);

	if (!ret && ctl_rs(epfd, op, fd, ev))
		rsp_log("fd %d: epoll set %d will not follow it to RDMA: %s",
			fd, epfd, strerror(errno));
	return ret;
}

RSP_EXPORT int epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	bool ours = false;

	rsp_init();
	/*
	 * An rsocket's (another process's connection is asked for first:
	 * share.c), or a pending handshake's: its kernel memberships are gone.
	 */
	if (rsp_poll_maps(fd))
		return ctl_rs(epfd, op, fd, ev);
	if (is_lazy(fd))
		return ctl_lazy(epfd, op, fd, ev);
	/* A member that fell back to TCP since it was added. */
	if (op != EPOLL_CTL_ADD && __atomic_load_n(&sets, __ATOMIC_RELAXED)) {
		pthread_mutex_lock(&ep_lock);
		ours = find_member(find_set(epfd, false), fd) >= 0;
		pthread_mutex_unlock(&ep_lock);
	}
	if (ours)
		ctl_rs(epfd, EPOLL_CTL_DEL, fd, NULL);
	return rsp_real.epoll_ctl(epfd, op, fd, ev);
}

/*
 * A new epoll instance: its number may be one the program closed behind
 * our back (a raw syscall), so it starts with no rsocket members.
 */
static int new_set(int epfd)
{
	if (epfd >= 0)
		rsp_epoll_forget(epfd);
	return epfd;
}

RSP_EXPORT int epoll_create1(int flags)
{
	rsp_init();
	return new_set(rsp_real.epoll_create1(flags));
}

RSP_EXPORT int epoll_create(int size)
{
	rsp_init();
	return new_set(rsp_real.epoll_create(size));
}

/* Forgets fd in every set, or the set epfd itself (close() calls this). */
void rsp_epoll_forget(int fd)
{
	struct ep_set **p, *s;
	int i;

	if (!__atomic_load_n(&sets, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&ep_lock);
	for (p = &sets; (s = *p);) {
		if (s->epfd == fd) {
			*p = s->next;
			free(s->m);
			free(s);
			continue;
		}
		i = find_member(s, fd);
		if (i >= 0)
			drop_member(s, i);
		p = &s->next;
	}
	pthread_mutex_unlock(&ep_lock);
}

/*
 * fd fell back to its kernel socket: where it was an rsocket member, it
 * becomes a member of the kernel set, with the same events and data, so
 * a program that added it before its first connect or sendto still hears
 * of it.
 */
void rsp_epoll_fell_back(int fd)
{
	struct ep_set *s;
	int i;

	if (!__atomic_load_n(&sets, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&ep_lock);
	for (s = sets; s; s = s->next) {
		i = find_member(s, fd);
		if (i < 0)
			continue;
		if (rsp_real.epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &s->m[i].ev))
			rsp_log("fd %d: cannot move it to epoll set %d: %s", fd,
				s->epfd, strerror(errno));
		drop_member(s, i);
	}
	pthread_mutex_unlock(&ep_lock);
}

/*
 * A lazy connection is now an rsocket: its kernel memberships end (the
 * shut-down TCP socket would report an end forever), the ones remembered
 * here take over.
 */
void rsp_epoll_converted(int fd)
{
	struct ep_set *s;

	if (!__atomic_load_n(&sets, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&ep_lock);
	for (s = sets; s; s = s->next) {
		if (find_member(s, fd) < 0)
			continue;
		if (rsp_real.epoll_ctl(s->epfd, EPOLL_CTL_DEL, fd, NULL))
			rsp_log("fd %d: cannot leave epoll set %d: %s", fd,
				s->epfd, strerror(errno));
		cma_bells_ring(s->waiters, real_ops());
	}
	pthread_mutex_unlock(&ep_lock);
}

/*
 * A snapshot of a set's armed members that are mapped (rsp_poll_maps()):
 * each as two pollfds (rsp_poll_watch()) at 2 * k + 1 and 2 * k + 2,
 * after slot 0; the last slot is this thread's bell, @me registered with
 * the set (-1 there without one).  The count of members; -ENOENT if the
 * set has no record (the kernel's epoll_wait does it all), -ENOMEM (errno
 * set).
 */
static int snapshot(int epfd, struct pollfd **fds, struct ep_member **mem,
		    struct cma_bell *me)
{
	struct ep_set *s;
	struct pollfd p;
	int i, n = 0;

	*fds = NULL;
	*mem = NULL;
	pthread_mutex_lock(&ep_lock);
	s = find_set(epfd, false);
	if (s) {
		*fds = calloc(2 * s->n + 2, sizeof(**fds));
		*mem = calloc(s->n + 1, sizeof(**mem));
	}
	if (!s) {
		n = -ENOENT;
	} else if (!*fds || !*mem) {
		free(*fds);
		free(*mem);
		*fds = NULL;
		*mem = NULL;
		n = -ENOMEM;
	} else {
		for (i = 0; i < s->n; i++) {
			if (!rsp_poll_maps(s->m[i].fd) || !s->m[i].ev.events)
				continue;
			(*mem)[n] = s->m[i];
			p.fd = s->m[i].fd;
			p.events = s->m[i].ev.events &
				   (EPOLLIN | EPOLLOUT | EPOLLPRI);
			rsp_poll_watch(&p, &(*fds)[2 * n + 1]);
			n++;
		}
		(*fds)[2 * n + 1] =
			(struct pollfd){.fd = me->fd, .events = POLLIN};
		cma_bell_join(&s->waiters, me);
	}
	pthread_mutex_unlock(&ep_lock);
	return n;
}

/* After a report, a one-shot member stays in the set but disarmed. */
static void disarm(int epfd, int fd)
{
	struct ep_set *s;
	int i;

	pthread_mutex_lock(&ep_lock);
	s = find_set(epfd, false);
	i = find_member(s, fd);
	if (i >= 0)
		s->m[i].ev.events = 0;
	pthread_mutex_unlock(&ep_lock);
}

/*
 * One round of epoll_wait over a set with a record (@n mapped members,
 * snapshot()): rpoll them, the kernel set and this thread's bell for
 * @timeout, then collect what the program hears, at most @max events.
 * *@poked: a handshake went on or the members changed, so the snapshot
 * is out of date.
 */
static int wait_round(int epfd, struct pollfd *fds, struct ep_member *mem,
		      int n, struct epoll_event *events, int max, int timeout,
		      const sigset_t *mask, bool *poked)
{
	int i, out = 0, r;

	fds[0].fd = epfd;
	fds[0].events = POLLIN;
	/* the slots are mapped already: rpoll them as they are */
	r = rsp_poll_masked(rsp_rpoll, fds, 2 * n + 2, timeout, mask);
	if (r < 0)
		return -1;
	if (fds[2 * n + 1].revents)
		*poked = true;
	for (i = 0; i < n && out < max; i++) {
		struct pollfd p = {.fd = mem[i].fd, .events = mem[i].ev.events};
		short rev = rsp_poll_heard(&p, &fds[2 * i + 1], poked);

		if (!rev)
			continue;
		events[out].events = rev;
		events[out++].data = mem[i].ev.data;
		if (mem[i].ev.events & EPOLLONESHOT)
			disarm(epfd, mem[i].fd);
	}
	if ((fds[0].revents & POLLIN) && out < max) {
		r = rsp_real.epoll_wait(epfd, events + out, max - out, 0);
		if (r > 0) {
			i = drop_knocks(epfd, events + out, r);
			/* a knock is no event: wait on */
			*poked |= i < r;
			out += i;
		}
	}
	return out;
}

/*
 * epoll_wait over a set with a record; *@handled false when it has none
 * (the kernel's epoll_wait does it all).  Rounds go on, for what is left
 * of the timeout, while nothing was heard and the wait is for ever or the
 * snapshot went out of date (it is taken again: its watches follow a
 * handshake, a member added meanwhile is polled, and a member that fell
 * back to TCP is the kernel set's again).
 */
static int wait_rs(int epfd, struct epoll_event *events, int max, int timeout,
		   const sigset_t *mask, bool *handled)
{
	uint64_t deadline = rsp_deadline_us(timeout);
	struct cma_bell me = {.fd = cma_bell_of_thread(real_ops())};
	struct pollfd *fds;
	struct ep_member *mem;
	int n, out;
	bool poked;

	*handled = false;
	do {
		n = snapshot(epfd, &fds, &mem, &me);
		if (n == -ENOMEM)
			return -1;
		if (n < 0) {
			/* the record is gone: the kernel's for the rest */
			*handled = false;
			return 0;
		}
		*handled = true;
		poked = false;
		out = wait_round(epfd, fds, mem, n, events, max, timeout, mask,
				 &poked);
		waiter_remove(epfd, &me, fds[2 * n + 1].revents != 0);
		free(fds);
		free(mem);
		timeout = rsp_left_ms(deadline, timeout);
	} while (!out && (timeout < 0 || (poked && timeout)));
	return out;
}

/*
 * A set without a record waits in the kernel; a knock (a first rsocket
 * member arrived meanwhile) sends it round again, for what is left.
 */
RSP_EXPORT int epoll_pwait(int epfd, struct epoll_event *events, int max,
			   int timeout, const sigset_t *mask)
{
	uint64_t deadline = rsp_deadline_us(timeout);
	bool handled;
	int ret;

	rsp_init();
	for (;;) {
		if (__atomic_load_n(&sets, __ATOMIC_RELAXED) && max > 0) {
			ret = wait_rs(epfd, events, max, timeout, mask,
				      &handled);
			if (handled || ret < 0)
				return ret;
			timeout = rsp_left_ms(deadline, timeout);
		}
		ret = rsp_real.epoll_pwait(epfd, events, max, timeout, mask);
		if (ret <= 0)
			return ret;
		ret = drop_knocks(epfd, events, ret);
		timeout = rsp_left_ms(deadline, timeout);
		if (ret || !timeout)
			return ret;
	}
}

RSP_EXPORT int epoll_wait(int epfd, struct epoll_event *events, int max,
			  int timeout)
{
	return epoll_pwait(epfd, events, max, timeout, NULL);
}

/*
 * epoll_pwait2 (glibc 2.35): a set with rsocket members waits as
 * epoll_pwait does, its timeout rounded up to the millisecond; while the
 * process has none in any set, the kernel's wait keeps its nanoseconds
 * (a knock sends it round, as in epoll_pwait).
 */
RSP_EXPORT int epoll_pwait2(int epfd, struct epoll_event *events, int max,
			    const struct timespec *timeout,
			    const sigset_t *mask)
{
	int ms = rsp_ts_to_ms(timeout), ret;
	uint64_t deadline = rsp_deadline_us(ms);

	rsp_init();
	if (!__atomic_load_n(&sets, __ATOMIC_RELAXED) &&
	    rsp_real.epoll_pwait2) {
		ret = rsp_real.epoll_pwait2(epfd, events, max, timeout, mask);
		if (ret <= 0)
			return ret;
		ret = drop_knocks(epfd, events, ret);
		ms = rsp_left_ms(deadline, ms);
		if (ret || !ms)
			return ret;
	}
	return epoll_pwait(epfd, events, max, ms, mask);
}
