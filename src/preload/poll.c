// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Waiting for readiness: poll, ppoll, select, pselect and epoll over a mix
 * of rsockets and ordinary descriptors.
 *
 * poll and select become one rpoll() call, which takes both kinds.  epoll
 * sets keep their ordinary members in the kernel; their rsocket members
 * live in a list here, and epoll_wait polls the kernel set (it is a
 * descriptor like any other) together with those rsockets.  rsocket
 * members are level-triggered: EPOLLET is accepted and treated as level,
 * EPOLLONESHOT disarms the member after one report as usual.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdma/rsocket.h>

#include "preload.h"

/* poll */

/*
 * Whether poll must look past fd's kernel socket: it carries an rsocket,
 * or a handshake under way waits for something else (fork.c).
 */
static bool poll_maps(int fd)
{
	return rsp_get(fd) || rsp_fk_pending(rsp_lazy_get(fd));
}

/*
 * Set while this thread is in rpoll for us: its own poll() of the kernel
 * descriptors comes back here, and a pending handshake's TCP socket there
 * is to be polled as it is, not mapped again.
 */
static __thread bool in_rpoll;

/* Whether any descriptor is mapped at all (none inside our rpoll). */
static bool any_mapped(void)
{
	return !in_rpoll && (rsp_any() || rsp_fk_any());
}

int rsp_rpoll(struct pollfd *fds, nfds_t n, int timeout)
{
	bool outer = in_rpoll;
	int ret, err;

	in_rpoll = true;
	ret = rpoll(fds, n, timeout);
	err = errno;
	in_rpoll = outer;
	errno = err;
	return ret;
}

/* Whether any of the descriptors is mapped. */
static bool has_rsocket(const struct pollfd *fds, nfds_t n)
{
	nfds_t i;

	if (!any_mapped())
		return false;
	for (i = 0; i < n; i++)
		if (poll_maps(fds[i].fd))
			return true;
	return false;
}

/*
 * What rpoll watches for the program's @p: two slots (the second unused,
 * fd -1, but for a pending handshake), so that each descriptor's own
 * stay at 2 * i and 2 * i + 1.
 */
static void watch(const struct pollfd *p, struct pollfd out[2])
{
	struct rsp_file *f = rsp_use(p->fd);

	out[0] = *p;
	out[1] = (struct pollfd){.fd = -1};
	if (f)
		out[0].fd = f->rs;
	else
		rsp_fk_watch_fds(p->fd, p->events, out);
}

/* What @events find on fd now, an rsocket or a kernel socket. */
static short ready_now(int fd, short events)
{
	struct rsp_file *f = rsp_use(fd);
	struct pollfd p = {.fd = f ? f->rs : fd, .events = events};
	int n = f ? rsp_rpoll(&p, 1, 0) : rsp_real.poll(&p, 1, 0);

	return n > 0 ? p.revents : 0;
}

/*
 * What the program hears for @p from its two slots.  A pending
 * handshake's slots say only that it can go on: it goes on here
 * (rsp_fk_poke; *@poked set), and the program hears of the descriptor
 * once the handshake is over and the connection is ready for what it
 * asked: never a readiness its next call would answer with EAGAIN.
 */
static short heard(const struct pollfd *p, const struct pollfd got[2],
		   bool *poked)
{
	if (rsp_get(p->fd) || !rsp_fk_pending(rsp_lazy_get(p->fd)))
		return got[0].revents;
	if (!(got[0].revents | got[1].revents))
		return 0;
	*poked = true;
	return rsp_fk_poke(p->fd) ? 0 : ready_now(p->fd, p->events);
}

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000ULL + ts.tv_nsec / 1000;
}

/*
 * What is left, in milliseconds rounded up, of a wait of @timeout that
 * ends at @deadline (in microseconds); -1 (for ever) and 0 stay.
 */
static int left_ms(uint64_t deadline, int timeout)
{
	uint64_t now;

	if (timeout <= 0)
		return timeout;
	now = now_us();
	return now < deadline ? (int)((deadline - now + 999) / 1000) : 0;
}

/*
 * rpoll over fds, each mapped descriptor replaced by what it waits on;
 * again, for what is left of the timeout, while only handshakes moved.
 */
static int poll_rs(struct pollfd *fds, nfds_t n, int timeout)
{
	struct pollfd small[32], *copy = small;
	uint64_t deadline = now_us() + (timeout > 0 ? timeout * 1000ULL : 0);
	bool poked;
	nfds_t i;
	int ret, ready;

	if (n > 16) {
		copy = malloc(2 * n * sizeof(*copy));
		if (!copy) {
			errno = ENOMEM;
			return -1;
		}
	}
	do {
		for (i = 0; i < n; i++)
			watch(&fds[i], &copy[2 * i]);
		ret = rsp_rpoll(copy, 2 * n, timeout);
		poked = false;
		ready = 0;
		for (i = 0; i < n; i++) {
			fds[i].revents =
				ret < 0 ? 0
					: heard(&fds[i], &copy[2 * i], &poked);
			ready += fds[i].revents != 0;
		}
		timeout = left_ms(deadline, timeout);
	} while (ret >= 0 && !ready && poked && timeout);
	if (copy != small)
		free(copy);
	return ret < 0 ? ret : ready;
}

RSP_EXPORT int poll(struct pollfd *fds, nfds_t n, int timeout)
{
	rsp_init();
	if (!has_rsocket(fds, n))
		return rsp_real.poll(fds, n, timeout);
	return poll_rs(fds, n, timeout);
}

RSP_EXPORT int __poll_chk(struct pollfd *fds, nfds_t n, int timeout,
			  size_t fdslen)
{
	if (n > fdslen / sizeof(*fds))
		abort();
	return poll(fds, n, timeout);
}

/* Milliseconds, rounded up, for a timespec timeout (NULL: forever). */
static int ts_to_ms(const struct timespec *ts)
{
	long long ms;

	if (!ts)
		return -1;
	ms = ts->tv_sec * 1000LL + (ts->tv_nsec + 999999) / 1000000;
	return ms > 0x7fffffff ? 0x7fffffff : (int)ms;
}

/* @fn (poll_rs, or rsp_rpoll) with the signal mask swapped in for the wait. */
static int masked(int (*fn)(struct pollfd *, nfds_t, int), struct pollfd *fds,
		  nfds_t n, int timeout, const sigset_t *mask)
{
	sigset_t old;
	int ret, err;

	if (mask)
		pthread_sigmask(SIG_SETMASK, mask, &old);
	ret = fn(fds, n, timeout);
	err = errno;
	if (mask)
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	errno = err;
	return ret;
}

static int poll_rs_masked(struct pollfd *fds, nfds_t n, int timeout,
			  const sigset_t *mask)
{
	return masked(poll_rs, fds, n, timeout, mask);
}

RSP_EXPORT int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *ts,
		     const sigset_t *mask)
{
	rsp_init();
	if (!has_rsocket(fds, n))
		return rsp_real.ppoll(fds, n, ts, mask);
	return poll_rs_masked(fds, n, ts_to_ms(ts), mask);
}

/* select */

static bool set_has_rsocket(int nfds, fd_set *r, fd_set *w, fd_set *e)
{
	int fd;

	if (!any_mapped())
		return false;
	for (fd = 0; fd < nfds && fd < FD_SETSIZE; fd++)
		if (((r && FD_ISSET(fd, r)) || (w && FD_ISSET(fd, w)) ||
		     (e && FD_ISSET(fd, e))) &&
		    poll_maps(fd))
			return true;
	return false;
}

/* select's readiness classes, as Linux defines them for poll bits. */
#define SEL_IN (POLLIN | POLLRDNORM | POLLRDBAND | POLLHUP | POLLERR)
#define SEL_OUT (POLLOUT | POLLWRNORM | POLLWRBAND | POLLERR)
#define SEL_EX (POLLPRI)

static int select_rs(int nfds, fd_set *r, fd_set *w, fd_set *e, int timeout,
		     const sigset_t *mask)
{
	struct pollfd *fds;
	int fd, n = 0, i, ret, bits = 0;

	if (nfds > FD_SETSIZE)
		nfds = FD_SETSIZE;
	fds = calloc(nfds ? nfds : 1, sizeof(*fds));
	if (!fds) {
		errno = ENOMEM;
		return -1;
	}
	for (fd = 0; fd < nfds; fd++) {
		short ev = (r && FD_ISSET(fd, r) ? POLLIN : 0) |
			   (w && FD_ISSET(fd, w) ? POLLOUT : 0) |
			   (e && FD_ISSET(fd, e) ? POLLPRI : 0);

		if (ev)
			fds[n++] = (struct pollfd){.fd = fd, .events = ev};
	}
	ret = poll_rs_masked(fds, n, timeout, mask);
	if (ret >= 0) {
		for (i = 0; i < n; i++)
			if (fds[i].revents & POLLNVAL) {
				free(fds);
				errno = EBADF;
				return -1;
			}
		if (r)
			FD_ZERO(r);
		if (w)
			FD_ZERO(w);
		if (e)
			FD_ZERO(e);
		for (i = 0; i < n; i++) {
			short rev = fds[i].revents;

			if (r && (fds[i].events & POLLIN) && (rev & SEL_IN)) {
				FD_SET(fds[i].fd, r);
				bits++;
			}
			if (w && (fds[i].events & POLLOUT) && (rev & SEL_OUT)) {
				FD_SET(fds[i].fd, w);
				bits++;
			}
			if (e && (fds[i].events & POLLPRI) && (rev & SEL_EX)) {
				FD_SET(fds[i].fd, e);
				bits++;
			}
		}
	}
	free(fds);
	return ret < 0 ? -1 : bits;
}

RSP_EXPORT int select(int nfds, fd_set *r, fd_set *w, fd_set *e,
		      struct timeval *tv)
{
	uint64_t start, left;
	int ret, ms = -1;

	rsp_init();
	if (!set_has_rsocket(nfds, r, w, e))
		return rsp_real.select(nfds, r, w, e, tv);
	if (tv) {
		long long t = tv->tv_sec * 1000LL + (tv->tv_usec + 999) / 1000;

		ms = t > 0x7fffffff ? 0x7fffffff : (int)t;
	}
	start = now_us();
	ret = select_rs(nfds, r, w, e, ms, NULL);
	if (tv) {
		/* Linux tells the caller how much of the timeout is left. */
		uint64_t used = now_us() - start;
		uint64_t all = tv->tv_sec * 1000000ULL + tv->tv_usec;

		left = used < all ? all - used : 0;
		tv->tv_sec = left / 1000000;
		tv->tv_usec = left % 1000000;
	}
	return ret;
}

RSP_EXPORT int pselect(int nfds, fd_set *r, fd_set *w, fd_set *e,
		       const struct timespec *ts, const sigset_t *mask)
{
	rsp_init();
	if (!set_has_rsocket(nfds, r, w, e))
		return rsp_real.pselect(nfds, r, w, e, ts, mask);
	return select_rs(nfds, r, w, e, ts_to_ms(ts), mask);
}

/* epoll */

struct ep_member {
	int fd;
	struct epoll_event ev;
};

struct ep_set {
	struct ep_set *next;
	int epfd;
	int n, cap;
	struct ep_member *m;
};

static struct ep_set *sets;
static pthread_mutex_t ep_lock = PTHREAD_MUTEX_INITIALIZER;

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
		sets = s;
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
		struct ep_member *m = realloc(s->m, cap * sizeof(*m));

		if (!m) {
			errno = ENOMEM;
			return -1;
		}
		s->m = m;
		s->cap = cap;
	}
	s->m[s->n].fd = fd;
	s->m[s->n++].ev = *ev;
	return 0;
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
	} else if (op == EPOLL_CTL_MOD) {
		s->m[i].ev = *ev;
	} else if (op == EPOLL_CTL_DEL) {
		s->m[i] = s->m[--s->n];
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
	/* a pending handshake's too: its kernel memberships are gone */
	if (poll_maps(fd))
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
RSP_EXPORT int epoll_create1(int flags)
{
	int epfd;

	rsp_init();
	epfd = rsp_real.epoll_create1(flags);
	if (epfd >= 0)
		rsp_epoll_forget(epfd);
	return epfd;
}

RSP_EXPORT int epoll_create(int size)
{
	int epfd;

	rsp_init();
	epfd = rsp_real.epoll_create(size);
	if (epfd >= 0)
		rsp_epoll_forget(epfd);
	return epfd;
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
			s->m[i] = s->m[--s->n];
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
		s->m[i] = s->m[--s->n];
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
	for (s = sets; s; s = s->next)
		if (find_member(s, fd) >= 0 &&
		    rsp_real.epoll_ctl(s->epfd, EPOLL_CTL_DEL, fd, NULL))
			rsp_log("fd %d: cannot leave epoll set %d: %s", fd,
				s->epfd, strerror(errno));
	pthread_mutex_unlock(&ep_lock);
}

/*
 * A snapshot of a set's armed members that are mapped (poll_maps()): each
 * as two pollfds (watch()) at 2 * k + 1 and 2 * k + 2, after slot 0.
 */
static int snapshot(int epfd, struct pollfd **fds, struct ep_member **mem)
{
	struct ep_set *s;
	struct pollfd p;
	int i, n = 0;

	*fds = NULL;
	*mem = NULL;
	pthread_mutex_lock(&ep_lock);
	s = find_set(epfd, false);
	if (s && s->n) {
		*fds = calloc(2 * s->n + 1, sizeof(**fds));
		*mem = calloc(s->n, sizeof(**mem));
		if (!*fds || !*mem) {
			free(*fds);
			free(*mem);
			*fds = NULL;
			*mem = NULL;
			n = -1;
		} else {
			for (i = 0; i < s->n; i++) {
				if (!poll_maps(s->m[i].fd) ||
				    !s->m[i].ev.events)
					continue;
				(*mem)[n] = s->m[i];
				p.fd = s->m[i].fd;
				p.events = s->m[i].ev.events &
					   (EPOLLIN | EPOLLOUT | EPOLLPRI);
				watch(&p, &(*fds)[2 * n + 1]);
				n++;
			}
		}
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
 * One round of epoll_wait over a set with mapped members (@n of them,
 * snapshot()): rpoll them with the kernel set for @timeout, then collect
 * what the program hears, at most @max events.  *@poked: a handshake went
 * on, so its watches may have changed.
 */
static int wait_round(int epfd, struct pollfd *fds, struct ep_member *mem,
		      int n, struct epoll_event *events, int max, int timeout,
		      const sigset_t *mask, bool *poked)
{
	int i, out = 0, r;

	fds[0].fd = epfd;
	fds[0].events = POLLIN;
	/* the slots are mapped already: rpoll them as they are */
	r = masked(rsp_rpoll, fds, 2 * n + 1, timeout, mask);
	if (r < 0)
		return -1;
	for (i = 0; i < n && out < max; i++) {
		struct pollfd p = {.fd = mem[i].fd, .events = mem[i].ev.events};
		short rev = heard(&p, &fds[2 * i + 1], poked);

		if (!rev)
			continue;
		events[out].events = rev;
		events[out++].data = mem[i].ev.data;
		if (mem[i].ev.events & EPOLLONESHOT)
			disarm(epfd, mem[i].fd);
	}
	if ((fds[0].revents & POLLIN) && out < max) {
		r = rsp_real.epoll_wait(epfd, events + out, max - out, 0);
		if (r > 0)
			out += r;
	}
	return out;
}

/*
 * epoll_wait over a set with mapped members; *@handled false when it has
 * none (the kernel's epoll_wait does it all).  Rounds go on, for what is
 * left of the timeout, while nothing was heard and the wait is for ever
 * or a handshake went on (the snapshot then is taken again: its watches
 * follow the handshake, and a member that fell back to TCP is the kernel
 * set's again).
 */
static int wait_rs(int epfd, struct epoll_event *events, int max, int timeout,
		   const sigset_t *mask, bool *handled)
{
	uint64_t deadline = now_us() + (timeout > 0 ? timeout * 1000ULL : 0);
	struct pollfd *fds;
	struct ep_member *mem;
	int n, out;
	bool poked;

	*handled = false;
	do {
		n = snapshot(epfd, &fds, &mem);
		if (n <= 0) {
			free(fds);
			free(mem);
			if (n < 0 || !*handled)
				return n;
			/* no mapped member left: the kernel's, for the rest */
			return rsp_real.epoll_pwait(epfd, events, max, timeout,
						    mask);
		}
		*handled = true;
		poked = false;
		out = wait_round(epfd, fds, mem, n, events, max, timeout, mask,
				 &poked);
		free(fds);
		free(mem);
		timeout = left_ms(deadline, timeout);
	} while (!out && (timeout < 0 || (poked && timeout)));
	return out;
}

RSP_EXPORT int epoll_pwait(int epfd, struct epoll_event *events, int max,
			   int timeout, const sigset_t *mask)
{
	bool handled;
	int ret;

	rsp_init();
	if (__atomic_load_n(&sets, __ATOMIC_RELAXED) && max > 0) {
		ret = wait_rs(epfd, events, max, timeout, mask, &handled);
		if (handled || ret < 0)
			return ret;
	}
	return rsp_real.epoll_pwait(epfd, events, max, timeout, mask);
}

RSP_EXPORT int epoll_wait(int epfd, struct epoll_event *events, int max,
			  int timeout)
{
	return epoll_pwait(epfd, events, max, timeout, NULL);
}
