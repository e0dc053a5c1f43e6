// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * Waiting for readiness: poll, ppoll, select and pselect over a mix of
 * rsockets and ordinary descriptors, each one rpoll() call, which takes
 * both kinds; and the pieces epoll.c waits with.
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
bool rsp_poll_maps(int fd)
{
	/* Another process's connection: its owner relays it if asked. */
	rsp_share_claim(fd);
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
		if (rsp_poll_maps(fds[i].fd))
			return true;
	return false;
}

/*
 * What rpoll watches for the program's @p: two slots (the second unused,
 * fd -1, but for a pending handshake), so that each descriptor's own
 * stay at 2 * i and 2 * i + 1.
 */
void rsp_poll_watch(const struct pollfd *p, struct pollfd out[2])
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
short rsp_poll_heard(const struct pollfd *p, const struct pollfd got[2],
		     bool *poked)
{
	if (rsp_get(p->fd) || !rsp_fk_pending(rsp_lazy_get(p->fd)))
		return got[0].revents;
	if (!(got[0].revents | got[1].revents))
		return 0;
	*poked = true;
	return rsp_fk_poke(p->fd) ? 0 : ready_now(p->fd, p->events);
}

uint64_t rsp_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000ULL + ts.tv_nsec / 1000;
}

/* When a wait of @timeout ms that starts now ends, in microseconds. */
uint64_t rsp_deadline_us(int timeout)
{
	return rsp_now_us() + (timeout > 0 ? timeout * 1000ULL : 0);
}

/*
 * What is left, in milliseconds rounded up, of a wait of @timeout that
 * ends at @deadline (rsp_deadline_us); -1 (for ever) and 0 stay.
 */
int rsp_left_ms(uint64_t deadline, int timeout)
{
	uint64_t now;

	if (timeout <= 0)
		return timeout;
	now = rsp_now_us();
	return now < deadline ? (int)((deadline - now + 999) / 1000) : 0;
}

/*
 * The files whose rsocket this poll waits to read, in @held (NULL where
 * none): a relay (share.c) reads an rsocket only when no call waits on it,
 * or the bytes it took would wake nobody.  One the relay took meanwhile is
 * watched on its descriptor, the relay's kernel socket now.
 */
static void enter_readers(const struct pollfd *fds, nfds_t n,
			  struct pollfd *copy, struct rsp_file **held)
{
	struct rsp_file *f;
	nfds_t i;

	for (i = 0; i < n; i++) {
		held[i] = NULL;
		f = rsp_get(fds[i].fd);
		if (!f || !(fds[i].events & POLLIN) || copy[2 * i].fd != f->rs)
			continue;
		if (rsp_read_enter(f))
			held[i] = f;
		else
			copy[2 * i] = fds[i];
	}
}

static void leave_readers(struct rsp_file **held, nfds_t n)
{
	nfds_t i;

	for (i = 0; i < n; i++)
		if (held[i])
			rsp_read_leave(held[i]);
}

/*
 * rpoll over fds, each mapped descriptor replaced by what it waits on;
 * again, for what is left of the timeout, while only handshakes moved.
 */
static int poll_rs(struct pollfd *fds, nfds_t n, int timeout)
{
	struct pollfd small[32], *copy = small;
	struct rsp_file *held_small[16], **held = held_small;
	uint64_t deadline = rsp_deadline_us(timeout);
	bool poked;
	nfds_t i;
	int ret, ready;

	if (n > 16) {
		copy = malloc(2 * n * sizeof(*copy));
		held = malloc(n * sizeof(*held));
		if (!copy || !held) {
			free(copy);
			free(held);
			errno = ENOMEM;
			return -1;
		}
	}
	do {
		for (i = 0; i < n; i++)
			rsp_poll_watch(&fds[i], &copy[2 * i]);
		enter_readers(fds, n, copy, held);
		ret = rsp_rpoll(copy, 2 * n, timeout);
		leave_readers(held, n);
		poked = false;
		ready = 0;
		for (i = 0; i < n; i++) {
			fds[i].revents =
				ret < 0 ? 0
					: rsp_poll_heard(&fds[i], &copy[2 * i],
							 &poked);
			ready += fds[i].revents != 0;
		}
		timeout = rsp_left_ms(deadline, timeout);
	} while (ret >= 0 && !ready && poked && timeout);
	if (copy != small) {
		free(copy);
		free(held);
	}
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
int rsp_ts_to_ms(const struct timespec *ts)
{
	long long ms;

	if (!ts)
		return -1;
	ms = ts->tv_sec * 1000LL + (ts->tv_nsec + 999999) / 1000000;
	return ms > 0x7fffffff ? 0x7fffffff : (int)ms;
}

/* @fn (poll_rs, or rsp_rpoll) with the signal mask swapped in for the wait. */
int rsp_poll_masked(int (*fn)(struct pollfd *, nfds_t, int), struct pollfd *fds,
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
	return rsp_poll_masked(poll_rs, fds, n, timeout, mask);
}

RSP_EXPORT int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *ts,
		     const sigset_t *mask)
{
	rsp_init();
	if (!has_rsocket(fds, n))
		return rsp_real.ppoll(fds, n, ts, mask);
	return poll_rs_masked(fds, n, rsp_ts_to_ms(ts), mask);
}

/* What a program built with _FORTIFY_SOURCE calls for ppoll. */
RSP_EXPORT int __ppoll_chk(struct pollfd *fds, nfds_t n,
			   const struct timespec *ts, const sigset_t *mask,
			   size_t fdslen)
{
	if (n > fdslen / sizeof(*fds))
		abort();
	return ppoll(fds, n, ts, mask);
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
		    rsp_poll_maps(fd))
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
	start = rsp_now_us();
	ret = select_rs(nfds, r, w, e, ms, NULL);
	if (tv) {
		/* Linux tells the caller how much of the timeout is left. */
		uint64_t used = rsp_now_us() - start;
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
	return select_rs(nfds, r, w, e, rsp_ts_to_ms(ts), mask);
}
